/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * syncd's link to the local corosync: one CPG group per sync group
 * ("maglb:" + the name), each on a CPG handle of its own (corosync lets a
 * handle join one group), polled on the qb_loop. Each connects and
 * reconnects with backoff (corosync may start later, or die and come
 * back), joins its group again, and reports deliveries and memberships by
 * group index.
 *
 * A member is a node id; the CPG node id must be the config's node.id
 * (checked at connect: a mismatch is logged and the link stays down).
 * One process per node id is trusted (cpg_view.h): another process under
 * that id is a foreign member, out of every view, its messages dropped
 * and counted before they reach ops.deliver.
 *
 * Runs on the loop's thread, as do the callbacks.
 */
#ifndef MAGLB_SYNCD_CPG_H
#define MAGLB_SYNCD_CPG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <qb/qbloop.h>

#include "syncd/cpg_view.h"     /* the member view, the link's counters */

struct syncd_cpg_ops {
	void (*deliver)(void *arg, uint16_t group, uint32_t sender, const void *msg,
			size_t len);
	/*
	 * members: the group's view (cpg_view.h: each node once, ascending,
	 * at most REPL_MEMBERS_MAX); self_in false when the group was lost
	 * (this process left CPG's list); merged: a node came back from
	 * another partition (CPG_REASON_NODEUP)
	 */
	void (*members)(void *arg, uint16_t group, const uint32_t *members, size_t n,
			bool self_in, bool merged);
	/* after one wake-up's deliveries (optional) */
	void (*dispatched)(void *arg);
};

extern const char *const syncd_cpg_counter_names[SYNCD_CPG_COUNTER_MAX];

struct syncd_cpg;

/*
 * Start connecting (now, then with backoff) for node_id; groups are set
 * with syncd_cpg_set_groups(). NULL on no memory.
 */
struct syncd_cpg *syncd_cpg_create(qb_loop_t *loop, uint32_t node_id,
				   const struct syncd_cpg_ops *ops, void *arg);

/* Leave every group, disconnect, free. NULL is a no-op. */
void syncd_cpg_destroy(struct syncd_cpg *c);

/*
 * The groups wanted, by index (names of sync groups). Groups no longer
 * named are left, new ones joined (now, or once connected). 0 or -ENOMEM.
 */
int syncd_cpg_set_groups(struct syncd_cpg *c, const char *const *names, uint16_t n);

/*
 * Multicast len bytes to group (agreed order). 0; -EAGAIN (corosync's
 * queue is full: try again later); -ENOTCONN (not connected, or not a
 * member of the group yet); -EIO.
 */
int syncd_cpg_send(struct syncd_cpg *c, uint16_t group, const void *buf, size_t len);

const uint64_t *syncd_cpg_counters(const struct syncd_cpg *c);

#endif /* MAGLB_SYNCD_CPG_H */
