/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread, on the main lcore: a qb_loop serving the local IPC
 * (syncd, maglbctl), and a 1 ms tick that answers ARP/ND, resolves next hops,
 * drains the workers' export rings to syncd, applies config reloads and
 * backend changes by publishing new forwarding states, and frees old ones
 * after an RCU grace period. It never touches a packet on the fast path.
 */
#ifndef MAGLB_DATAPLANE_CONTROL_H
#define MAGLB_DATAPLANE_CONTROL_H

#include <sys/types.h>

struct config;
struct dp_shared;
struct rte_mempool;
struct worker;

struct control_params {
	const char *config_path;
	struct config *cfg;             /* loaded; the control thread owns it now */
	struct dp_shared *shared;       /* state already published */
	struct worker *workers;
	unsigned n_workers;
	struct rte_mempool *pool;
	const char *service;            /* IPC service name */
	gid_t group;                    /* IPC access besides root; -1: root only */
};

/*
 * Run the control loop until SIGTERM/SIGINT (SIGHUP reloads the config).
 * Sets shared->stop before it returns. Returns 0, or -errno when it could not
 * start (logged). Main lcore.
 */
int control_run(struct control_params *p);

#endif /* MAGLB_DATAPLANE_CONTROL_H */
