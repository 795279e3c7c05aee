/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-monitor's daemon: a collection of the node every
 * MON_COLLECT_INTERVAL_MS on the qb_loop's thread (blocking IPC requests
 * to the dataplane and syncd, as maglbctl makes them), and libmicrohttpd
 * serving its listeners from a thread pool of its own. The two share the
 * latest snapshot (by reference), the history, the users, the sessions,
 * the login throttle and the counters under one mutex, held only to take
 * or swap them; rendering and crypt(3) run outside it.
 */
#ifndef MAGLB_MONITOR_MONITOR_H
#define MAGLB_MONITOR_MONITOR_H

#include <qb/qbloop.h>

struct monitor_options {
	const char *config;             /* maglb.conf */
	const char *www_dir;            /* the console's files */
	const char *dataplane_service;  /* IPC service names */
	const char *syncd_service;
	const char *node_name;          /* NULL: the host's name */
};

struct monitor;

/* Load the config, users and certificates, start listening. NULL: logged. */
struct monitor *monitor_create(qb_loop_t *loop, const struct monitor_options *o);

/* SIGHUP: read the users file and the console's files again. */
void monitor_reload(struct monitor *m);

void monitor_destroy(struct monitor *m);

#endif /* MAGLB_MONITOR_MONITOR_H */
