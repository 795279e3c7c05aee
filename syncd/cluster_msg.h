/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The messages of the membership group as CPG delivers them, in plain C (no
 * corosync, no IPC): decode, check the sender and its membership, hand a
 * NODE_STATE or a HEALTH report on to cluster.c. Every message that goes
 * no further is counted, by reason, in the membership engine's counters
 * (CLUSTER_COUNTERS, membership/engine.h).
 *
 * No allocation per message: the decode buffers are sized once, at
 * create, for the longest membership message, CLUSTER_MSG_MAX. CPG itself
 * delivers messages of any length (it reassembles them); no node sends a
 * longer one, so a longer one is dropped (drop_too_long).
 *
 * Single-threaded: the loop's thread, like cluster.c.
 */
#ifndef MAGLB_SYNCD_CLUSTER_MSG_H
#define MAGLB_SYNCD_CLUSTER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "membership/engine.h"
#include "membership/health.h"
#include "membership/roles.h"
#include "proto/wire.h"

enum {
	CLUSTER_MSG_MAX = 64 << 10,     /* bytes of a membership message, at most */
};

/* Where a message that passed goes; arg as given to cluster_msg_create(). */
struct cluster_msg_ops {
	/* NODE_STATE of member sender. */
	void (*state)(void *arg, uint32_t sender, const struct wire_node_state *st);
	/*
	 * HEALTH of member sender: the backends it sees down, down[0..n)
	 * (valid during the call). 0, or -ENOMEM: the report is lost
	 * (counted: health_no_memory).
	 */
	int (*health)(void *arg, uint32_t sender, const struct health_key *down, size_t n);
};

struct cluster_msg;

/*
 * Buffers for the longest message; counts into counters (CLUSTER_COUNTER_MAX
 * of them, the caller's, outliving it). NULL when memory ran out.
 */
struct cluster_msg *cluster_msg_create(const struct cluster_msg_ops *ops, void *arg,
				       uint64_t *counters);

/* NULL is a no-op. */
void cluster_msg_destroy(struct cluster_msg *in);

/*
 * A message CPG delivered from node sender, len bytes at buf; members[0..n)
 * the group's view. Calls ops->state or ops->health, or counts why not.
 */
void cluster_msg_deliver(struct cluster_msg *in, uint32_t sender, const void *buf,
			 size_t len, const struct roles_member *members, size_t n);

#endif /* MAGLB_SYNCD_CLUSTER_MSG_H */
