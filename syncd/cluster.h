/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * syncd's membership: the daemon side of membership/. Every rule below is
 * membership/engine.h's (pure, unit tested by check_cluster); this is its
 * glue: a CPG group of its own ("maglb:/membership": no sync group can
 * take that name), a votequorum link, a 10 ms timer, the probes' and
 * hooks' descriptors, and the local dataplane through syncd's IPC link:
 *
 *  - every node announces its state (NODE_STATE) on each change and every
 *    second; every node elects over the announcements in agreed order
 *    (roles.h) and so agrees on the roles without another round;
 *  - the dataplane is pinged (a STATUS request) every PING_MS; no answer
 *    within PING_DEAD_MS, or a lost connection, makes the node ineligible
 *    at once (both constants in membership/engine.h);
 *  - an active-passive node taking over waits until every entry it holds
 *    is imported (acknowledged), then owns the VIPs with a lease, announced
 *    by gratuitous ARP / unsolicited NA, and renews it every lease / 4;
 *  - hooks run on every role change (active-passive: once the VIPs are
 *    owned, or at once when giving them up);
 *  - probes' results are multicast (HEALTH); the agreed down set
 *    (health.h) goes to the dataplane as backend down / up.
 *
 * What the group delivers is checked by cluster_msg.h (counted drops, no
 * allocation per message); its member view is cpg_view.h's.
 *
 * Runs on the loop's thread.
 */
#ifndef MAGLB_SYNCD_CLUSTER_H
#define MAGLB_SYNCD_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include <qb/qbloop.h>

#include "config/config.h"
#include "lib/ipc.h"
#include "lib/ipc_client.h"
#include "proto/wire.h"
#include "syncd/repl.h"

struct syncd_cluster;

/*
 * Start for cfg (kept by pointer: the caller keeps it alive and calls
 * syncd_cluster_set_config() when it changes). repl tells whether the node
 * is synced and what waits for import; dp is the dataplane link. NULL
 * after logging why.
 */
struct syncd_cluster *syncd_cluster_create(qb_loop_t *loop, const struct config *cfg,
					   struct repl *repl, struct ipc_async *dp);
void syncd_cluster_destroy(struct syncd_cluster *c);

/* A reloaded config (same node id). 0 or -ENOMEM (the old one stays). */
int syncd_cluster_set_config(struct syncd_cluster *c, const struct config *cfg);

/* The dataplane link came up / went down (syncd's ipc_async callbacks). */
void syncd_cluster_dp_up(struct syncd_cluster *c);
void syncd_cluster_dp_down(struct syncd_cluster *c);

/* maglbctl cluster: members allocated (free out->members). 0 or -ENOMEM. */
int syncd_cluster_status(const struct syncd_cluster *c, struct wire_ctl_cluster *out);

/* maglbctl cluster standby on|off. */
void syncd_cluster_standby(struct syncd_cluster *c, bool on);

/*
 * HEALTH_STATUS: the page of probe targets from cursor (at most
 * WIRE_HEALTH_PAGE_TARGETS; past the end: none, next_cursor 0) with this
 * node's probe figures, and the probes' node-wide totals and duration
 * histogram. out->targets allocated (free it, also on error). 0 or
 * -ENOMEM.
 */
int syncd_cluster_health_status(const struct syncd_cluster *c, uint32_t cursor,
				struct wire_ctl_health_status *out);

/* The counters of membership, probes and hooks. */
void syncd_cluster_counters(const struct syncd_cluster *c, struct ipc_counter_list *l);

/* The dataplane's Maglev digest from its last answer (0: none yet). */
uint64_t syncd_cluster_maglev_digest(const struct syncd_cluster *c);

#endif /* MAGLB_SYNCD_CLUSTER_H */
