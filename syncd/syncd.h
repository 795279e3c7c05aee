/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-syncd, the daemon: one qb_loop carrying the CPG groups
 * (syncd/cpg.h), the dataplane's IPC (lib/ipc_client.h, non-blocking), its
 * own IPC endpoint for maglbctl (lib/ipc_server.h) and a tick timer, around
 * the replication engine (syncd/repl.h). syncd/README.md draws it.
 */
#ifndef MAGLB_SYNCD_SYNCD_H
#define MAGLB_SYNCD_SYNCD_H

#include <stdbool.h>

#include <qb/qbloop.h>

struct syncd_options {
	const char *config;             /* -c */
	const char *service;            /* its own IPC service (maglbctl sync) */
	const char *dataplane_service;  /* the local dataplane's */
};

struct syncd;

/*
 * Load the config, build the engine, start connecting to corosync and to
 * the dataplane, publish the service. NULL after logging why (a bad config
 * says file:line: reason).
 */
struct syncd *syncd_create(qb_loop_t *loop, const struct syncd_options *o);

/* Leave the groups, disconnect, free. NULL is a no-op. */
void syncd_destroy(struct syncd *s);

/*
 * Reload the config file (SIGHUP): groups joined and left as the VIPs
 * moved, entries of VIPs and backends still configured kept. A bad file is
 * logged (file:line: reason) and the running config stays. 0 or -errno.
 */
int syncd_reload(struct syncd *s);

#endif /* MAGLB_SYNCD_SYNCD_H */
