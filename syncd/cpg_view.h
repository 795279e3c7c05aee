/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What syncd takes from CPG's callbacks, decided in plain C (no corosync):
 * cpg.c hands over what corosync reports, unit tests hand over lists.
 *
 * The member view, for every group (the sync groups and the membership
 * group alike): a member is a node, listed once however many processes it
 * has in the group, and a view holds at most REPL_MEMBERS_MAX nodes, the
 * lowest node ids. Nodes past the cap are left out: every node gets the
 * same member list from CPG, so every node leaves out the same ones and
 * elections, donors and health votes still agree. They are counted
 * (members_dropped) and logged at most once a minute; a node left out of
 * its own view holds no role and no vote. This is the one place that
 * decides it: the engines (repl.h, cluster.h) get views of at most
 * REPL_MEMBERS_MAX nodes and rely on it.
 *
 * One process per node: CPG names a member by node id and process id, and
 * any process of a node may join a group under that node's id. The trusted
 * member of a node id is the process that joined first with it (this
 * node's own: our own process); any other process of that node id is
 * foreign: counted once per join (foreign_members), left out of the view,
 * and every message it sends dropped (foreign_messages). When the trusted
 * process leaves, the node is out of the view until a process of its id
 * joins again (a restarted syncd: CPG delivers the old process's leave
 * before the new one's join), however many foreign ones stay. Members
 * listed at this process's own join, or several of one node id joining at
 * once (a partition healing), have no join order to read: the first CPG
 * lists is trusted (every member gets the same lists, so every peer picks
 * the same one).
 *
 * A delivery or a membership change reaches a group only through a handle
 * syncd still holds, for the group that handle joined; the rest is counted
 * (unknown_handle, foreign_group).
 *
 * No state: any thread, as long as one thread at a time owns counters.
 */
#ifndef MAGLB_SYNCD_CPG_VIEW_H
#define MAGLB_SYNCD_CPG_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "syncd/repl.h"

/* Counters of a CPG link (cpg.h): X(ENUM, name, description). */
#define SYNCD_CPG_COUNTERS(X) \
	X(CONNECTS, connects, "connections to corosync") \
	X(CONNECT_FAILURES, connect_failures, "attempts that failed") \
	X(DISCONNECTS, disconnects, "connections lost") \
	X(SEND_TRY_AGAIN, send_try_again, "multicasts refused with CS_ERR_TRY_AGAIN") \
	X(SEND_ERRORS, send_errors, "multicasts refused otherwise") \
	X(FOREIGN_GROUP, foreign_group, \
	  "deliveries and membership changes for a group this node did not join") \
	X(UNKNOWN_HANDLE, unknown_handle, \
	  "deliveries and membership changes on a handle syncd no longer holds") \
	X(MEMBERS_DROPPED, members_dropped, \
	  "nodes left out of a group's view: past REPL_MEMBERS_MAX") \
	X(FOREIGN_MEMBERS, foreign_members, \
	  "processes that joined under a node id another process of it holds") \
	X(FOREIGN_MESSAGES, foreign_messages, \
	  "messages of foreign members, dropped")

enum syncd_cpg_counter {
#define SYNCD_CPG_ENUM_(id, name, text) SYNCD_CPG_##id,
	SYNCD_CPG_COUNTERS(SYNCD_CPG_ENUM_)
#undef SYNCD_CPG_ENUM_
	SYNCD_CPG_COUNTER_MAX
};

/*
 * The view from the node ids of CPG's member list (n of them, any order,
 * a node once per process; sorted in place): the distinct nodes, ascending,
 * the lowest REPL_MEMBERS_MAX of them, into view. Returns how many. Adds
 * the nodes left out to counters[SYNCD_CPG_MEMBERS_DROPPED].
 */
size_t cpg_view_build(uint32_t *nodes, size_t n, uint32_t view[REPL_MEMBERS_MAX],
		      uint64_t counters[SYNCD_CPG_COUNTER_MAX]);

/*
 * Whether a callback goes on to its group. known: its handle is a group's
 * that syncd holds (false: the handle was given up while corosync still
 * had callbacks for it); same_group: CPG names the group that handle
 * joined. Counts what does not go on.
 */
bool cpg_view_route(bool known, bool same_group, uint64_t counters[SYNCD_CPG_COUNTER_MAX]);

enum {
	CPG_VIEW_PROCS_MAX = 128,       /* corosync's CPG_MEMBERS_MAX */
};

/* A CPG member: a process of a node. */
struct cpg_view_proc {
	uint32_t node;
	uint32_t pid;
};

/*
 * Which process of each node id a group trusts, across its membership
 * changes. Zeroed (or cpg_view_trust_reset()) before this process's join.
 */
struct cpg_view_trust {
	struct cpg_view_proc trusted[CPG_VIEW_PROCS_MAX]; /* pid 0: none now */
	struct cpg_view_proc foreign[CPG_VIEW_PROCS_MAX];
	uint32_t n_trusted, n_foreign;
};

/* Forget every member: the handle lost its group, or joins again. */
void cpg_view_trust_reset(struct cpg_view_trust *t);

/*
 * A membership change of CPG (members: the group now, n of them; joined:
 * who joined with it, nj; both as CPG lists them, at most
 * CPG_VIEW_PROCS_MAX), seen by process self. Updates t, writes the node id
 * of each node with a trusted member into nodes (for cpg_view_build()) and
 * returns how many. Adds the members newly foreign to
 * counters[SYNCD_CPG_FOREIGN_MEMBERS]; *last is the last of them, when
 * any.
 */
size_t cpg_view_trust_update(struct cpg_view_trust *t, struct cpg_view_proc self,
			     const struct cpg_view_proc *members, size_t n,
			     const struct cpg_view_proc *joined, size_t nj,
			     uint32_t nodes[CPG_VIEW_PROCS_MAX], struct cpg_view_proc *last,
			     uint64_t counters[SYNCD_CPG_COUNTER_MAX]);

/*
 * Whether a message from process p goes on to the group: p is its node's
 * trusted member. Counts the rest (foreign_messages).
 */
bool cpg_view_trust_check(const struct cpg_view_trust *t, struct cpg_view_proc p,
			  uint64_t counters[SYNCD_CPG_COUNTER_MAX]);

#endif /* MAGLB_SYNCD_CPG_VIEW_H */
