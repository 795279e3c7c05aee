/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Roles: who is active, decided by every node alone from the same agreed
 * view. Each member announces its state (priority, dataplane answering,
 * synced, quorate, standby, the role it holds) over CPG; every node keeps
 * the latest announcement of each member and runs roles_elect() at every
 * delivery, so all of them reach the same answer at the same point of the
 * agreed order, without another round of messages.
 *
 * Active-passive: among the eligible members, one that already holds the
 * role keeps it (the highest (priority, id) of them, after a partition
 * heals with two actives); when none does, or with preempt on, the
 * highest (priority, id) eligible member is active. A recovering node
 * therefore takes the role back only with preempt, and only once eligible,
 * i.e. after its resync completed.
 *
 * Active-active: every eligible member is active.
 *
 * Pure functions: no corosync, no clock.
 */
#ifndef MAGLB_MEMBERSHIP_ROLES_H
#define MAGLB_MEMBERSHIP_ROLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* The values are the wire's (proto/sync.proto Role). */
enum roles_role {
	ROLES_NONE = 0,             /* not announced yet */
	ROLES_PASSIVE = 1,
	ROLES_ACTIVE = 2,
};

extern const char *const roles_role_names[3];

/* What a member last announced. */
struct roles_member {
	uint32_t id;                /* corosync node id, >= 1 */
	bool known;                 /* an announcement was heard since it joined */
	uint32_t priority;
	bool dataplane;             /* its dataplane answers */
	bool synced;                /* resync complete, imports acknowledged */
	bool quorate;
	bool standby;               /* an admin took it out */
	enum roles_role holds;      /* the role it announced holding */
};

/*
 * Known, dataplane answering, quorate, not in standby, and synced unless
 * it holds the active role: a node must be synced to take the role, not
 * to keep it. The resync that a peer's (re)joining starts takes "synced"
 * away for a while from the node that serves, whose entries are the ones
 * the clients' flows use; without this it would hand the role over and
 * take it back (a flap, and announcements from both) at every merge.
 */
bool roles_eligible(const struct roles_member *m);

/*
 * The role of each of the n members into out[0..n) (members in any
 * order, ids unique). Returns the id of the active member in
 * active-passive mode (0: none), 0 in active-active mode.
 */
uint32_t roles_elect(enum config_cluster_mode mode, bool preempt,
		     const struct roles_member *m, size_t n, enum roles_role *out);

#endif /* MAGLB_MEMBERSHIP_ROLES_H */
