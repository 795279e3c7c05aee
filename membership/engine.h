/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The membership engine: every rule of syncd's membership (roles.h's
 * election over the members' announcements, the VIP ownership lease, the
 * dataplane's liveness, the agreed health of health.h, the hooks' role)
 * with no corosync, no IPC, no timer and no clock in it. syncd/cluster.c
 * feeds it events (what the membership group delivers, its member views,
 * quorum, the dataplane link, IPC completions, probes, ticks, standby,
 * reloads) and carries out its actions through struct membership_ops, as
 * syncd/repl.h is driven; tests/unit/check_cluster.c runs several engines
 * over an in-process CPG. Time is passed in: ms of CLOCK_MONOTONIC, as a
 * uint32_t that may wrap.
 *
 * Two named state machines (membership/README.md draws them):
 *
 *  - ownership: of the VIPs with a lease (active-passive), or of the
 *    serving word alone with the same lease (active-active: no VIP is
 *    owned, the router routes them to every active node); the dataplane's
 *    BFD sessions are Up only while it holds. At most one ownership request
 *    is in flight, so a completion always answers the request its state
 *    names. A role change while one is in flight is acted on when it
 *    completes.
 *
 *  - liveness of the dataplane: DOWN without an IPC link, then pings every
 *    MEMBERSHIP_PING_MS, one at a time; a ping unanswered for
 *    MEMBERSHIP_PING_DEAD_MS, the dataplane answering nothing else
 *    meanwhile (membership_dataplane_answered(): a ping waits in order
 *    behind imports), makes it DEAD (not on a tick that comes
 *    MEMBERSHIP_STALL_MS late: the answer may be waiting, unread).
 *
 * Each machine moves through one function that checks a table of allowed
 * transitions; one outside it is refused, counted (impossible_transitions)
 * and logged with both states' names, and the machine stays where it was.
 * A completion that no request waits for is refused the same way.
 *
 * serving: whether this node should get traffic now: active, and the
 * ownership (of the VIPs, or of serving alone) acknowledged, the lease
 * running. Told through ops->serving at every change.
 *
 * Single-threaded: every function on the caller's one thread. Ops are
 * called only from inside the engine's functions and must not call back
 * into the engine (completions are reported later, by the caller).
 */
#ifndef MAGLB_MEMBERSHIP_ENGINE_H
#define MAGLB_MEMBERSHIP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "membership/health.h"
#include "membership/probe.h"
#include "membership/roles.h"
#include "proto/wire.h"

enum {
	MEMBERSHIP_MEMBERS_MAX = 64,            /* members held: REPL_MEMBERS_MAX */
	MEMBERSHIP_TICK_MS = 10,                /* call membership_tick() this often */
	MEMBERSHIP_PING_MS = 40,                /* a ping to the dataplane this often */
	MEMBERSHIP_PING_DEAD_MS = 120,          /* unanswered this long: DEAD */
	MEMBERSHIP_STALL_MS = 3 * MEMBERSHIP_TICK_MS, /* a tick this late: we stalled */
	MEMBERSHIP_ANNOUNCE_MS = 1000,          /* state announced at least this often */
	MEMBERSHIP_HEALTH_REPORT_MS = 5000,     /* health report at least this often */
	MEMBERSHIP_TAKEOVER_WAIT_MS = 200,      /* longest wait for imports before owning */
	MEMBERSHIP_NO_MEMORY_LOG_MS = 60000,    /* health_no_memory logged this often */
	MEMBERSHIP_LOG_LINE_MAX = 512,          /* bytes of a line given to ops->log */
};

/*
 * syncd's membership counters (scope "cluster"), the intake's
 * (syncd/cluster_msg.h) among them: X(ENUM, name, description).
 */
#define CLUSTER_COUNTERS(X) \
	X(ROLE_CHANGES, role_changes, "changes of this node's role") \
	X(TAKEOVERS, takeovers, \
	  "VIP ownership taken (active-passive), serving acknowledged (active-active)") \
	X(TAKEOVER_UNSYNCED, takeover_unsynced, \
	  "takeovers that did not wait for every import (TAKEOVER_WAIT_MS)") \
	X(RELEASES, releases, "VIP ownership given up") \
	X(RENEWALS, renewals, "lease renewals sent") \
	X(OWNERSHIP_ERRORS, ownership_errors, "ownership requests the dataplane refused or lost") \
	X(LEASE_LAPSES, lease_lapses, \
	  "leases that ran out with no renewal acknowledged: the VIPs taken again") \
	X(ANNOUNCES_SENT, announces_sent, "NODE_STATE messages sent") \
	X(STATES_RECEIVED, states_received, "NODE_STATE messages delivered") \
	X(STATES_NOT_MEMBER, states_not_member, \
	  "NODE_STATE messages of a node no longer in the view (it left first)") \
	X(HEALTH_SENT, health_sent, "HEALTH reports sent") \
	X(HEALTH_RECEIVED, health_received, "HEALTH reports delivered") \
	X(HEALTH_NOT_MEMBER, health_not_member, \
	  "HEALTH reports of a node no longer in the view (it left first)") \
	X(HEALTH_NO_MEMORY, health_no_memory, "HEALTH reports lost: no memory to keep them") \
	X(HEALTH_CHANGES, health_changes, "changes of the agreed down set") \
	X(BACKEND_SETS, backend_sets, "backend down/up sent to the dataplane") \
	X(BACKEND_SET_ERRORS, backend_set_errors, "backend down/up refused or lost") \
	X(HEALTH_UNKNOWN, health_unknown, "reported backends not in this node's config") \
	X(SEND_AGAIN, send_again, "multicasts deferred (CPG busy)") \
	X(SEND_TOO_LONG, send_too_long, \
	  "multicasts dropped: longer than CLUSTER_MSG_MAX (EMSGSIZE)") \
	X(DROP_DECODE, drop_decode, "membership messages that did not decode") \
	X(DROP_TOO_LONG, drop_too_long, "membership messages longer than CLUSTER_MSG_MAX") \
	X(DROP_KIND, drop_kind, "messages of a sync kind on the membership group") \
	X(DROP_SENDER, drop_sender, "messages whose sender is not the CPG sender") \
	X(CONFIG_MISMATCH, config_mismatch, "announcements with another mode or preempt") \
	X(DP_TIMEOUTS, dp_timeouts, "dataplane pings unanswered past PING_DEAD_MS") \
	X(HOOK_RUNS, hook_runs, "hook runs asked for") \
	X(VIEW_OVERFLOW, view_overflow, \
	  "members past MEMBERSHIP_MEMBERS_MAX in a view: left out (the highest ids)") \
	X(IMPOSSIBLE_TRANSITIONS, impossible_transitions, \
	  "state machine transitions refused (a bug: logged with both states)")

enum cluster_counter {
#define CLUSTER_ENUM_(id, name, text) CLUSTER_##id,
	CLUSTER_COUNTERS(CLUSTER_ENUM_)
#undef CLUSTER_ENUM_
	CLUSTER_COUNTER_MAX
};

extern const char *const membership_counter_names[CLUSTER_COUNTER_MAX];
extern const char *const membership_counter_descriptions[CLUSTER_COUNTER_MAX];

/* The VIP ownership machine (active-passive). */
enum membership_ownership {
	MEMBERSHIP_OWN_RELEASED = 0,    /* nothing owned, nothing in flight */
	MEMBERSHIP_OWN_RELEASING,       /* a release in flight */
	MEMBERSHIP_OWN_WAITING,         /* active: waiting for imports, a live dataplane */
	MEMBERSHIP_OWN_REQUESTED,       /* active: own + announce in flight */
	MEMBERSHIP_OWN_OWNED,           /* acknowledged; the lease runs */
	MEMBERSHIP_OWN_RENEWING,        /* owned, a renewal in flight */
	MEMBERSHIP_OWN_LAPSED,          /* the lease ran out, a renewal still in flight */
	MEMBERSHIP_OWN_MAX
};

extern const char *const membership_ownership_names[MEMBERSHIP_OWN_MAX];

/* The dataplane's liveness machine. */
enum membership_liveness {
	MEMBERSHIP_DP_DOWN = 0,         /* no IPC link */
	MEMBERSHIP_DP_PROBING,          /* linked, not answering (yet), no ping in flight */
	MEMBERSHIP_DP_PROBE_SENT,       /* linked, not answering, a ping in flight */
	MEMBERSHIP_DP_ALIVE,            /* answered, no ping in flight */
	MEMBERSHIP_DP_PING_SENT,        /* answered, a ping in flight */
	MEMBERSHIP_DP_DEAD,             /* a ping unanswered for PING_DEAD_MS, still in flight */
	MEMBERSHIP_DP_MAX
};

extern const char *const membership_liveness_names[MEMBERSHIP_DP_MAX];

/*
 * The caller's side; arg as given to membership_create(). All but
 * role_changed are required.
 */
struct membership_ops {
	/*
	 * Multicast m (node_id and seq set) to the membership group, encoded
	 * into a buffer the caller sized once. 0 sent; -EAGAIN CPG busy
	 * (counted send_again, sent again from a tick); -EMSGSIZE longer than
	 * CLUSTER_MSG_MAX (counted send_too_long, dropped); another -errno:
	 * not sent, tried again from a tick.
	 */
	int (*multicast)(void *arg, const struct wire_sync_msg *m);
	/*
	 * Own (lease_ms, announced when announce) or give up (lease_ms 0)
	 * every VIP of the config (active-passive), or only serving
	 * (active-active): the caller's OWNERSHIP_SET carries serving = own.
	 * 0 sent: membership_ownership_done() follows exactly once; -errno
	 * not sent.
	 */
	int (*ownership_set)(void *arg, bool own, bool announce, uint32_t lease_ms);
	/*
	 * Mark backend b of VIP v (config indexes) down or up. 0 sent:
	 * membership_backend_done() follows exactly once; -errno not sent.
	 */
	int (*backend_set)(void *arg, uint32_t v, uint32_t b, bool down);
	/* A STATUS request. 0 sent: membership_pong() follows exactly once. */
	int (*ping)(void *arg);
	/*
	 * Run the hooks for role with env ("KEY=VALUE", NULL-terminated,
	 * valid during the call). 0 asked; -ENODEV no hook runner (nothing
	 * asked, asked again at the next change); another -errno: failed.
	 */
	int (*run_hooks)(void *arg, enum roles_role role, const char *const *env);
	/* One line (no newline) at a syslog priority. */
	void (*log)(void *arg, int priority, const char *line);
	/* Whether this node holds every flow of its side (repl_holds_flows). */
	bool (*synced)(void *arg);
	/* Entries waiting for the dataplane's import (repl_import_queue). */
	uint64_t (*import_queue)(void *arg);
	/*
	 * The probe targets of a config being loaded, ids 0..n (valid during
	 * the call). 0 or -errno: the config is refused.
	 */
	int (*probe_targets)(void *arg, const struct probe_target *t, size_t n);
	/* Whether target id is up in this node's probes. */
	bool (*probe_up)(void *arg, uint32_t id);
	/* This node should get traffic now, or not: at every change. */
	void (*serving)(void *arg, bool on);
	/* The role changed (after its log line); may be NULL. */
	void (*role_changed)(void *arg, enum roles_role from, enum roles_role to);
};

struct membership_params {
	uint64_t incarnation;           /* this run's start (CLOCK_REALTIME µs) */
	const char *dataplane;          /* the dataplane's name in log lines (copied) */
};

/* What maglbctl counters shows beside the counters. */
struct membership_summary {
	enum roles_role role;
	size_t members;
	uint32_t active_id;             /* active-passive: the elected; 0 none */
	bool quorate;
	bool dataplane_alive;
	bool owning;                    /* OWNED or RENEWING */
	bool serving;
	size_t down_agreed;
	enum membership_ownership ownership;
	enum membership_liveness liveness;
};

struct membership;

/*
 * An engine for cfg (kept by pointer: the caller keeps it alive until the
 * next membership_set_config()). Starts passive, and runs the hooks for
 * it (an earlier run's routes are withdrawn); not a member, not quorate,
 * the dataplane DOWN. NULL after logging why (no memory, probe targets
 * refused).
 */
struct membership *membership_create(const struct membership_params *p,
				     const struct config *cfg,
				     const struct membership_ops *ops, void *arg, uint32_t now);

/* NULL is a no-op. Calls no op. */
void membership_destroy(struct membership *e);

/*
 * A reloaded config (same node id): the backend tables, the probe
 * targets and the report buffer are built first; 0, or -ENOMEM / the
 * probe_targets op's error, and the old config stays.
 */
int membership_set_config(struct membership *e, const struct config *cfg, uint32_t now);

/*
 * The membership group's view: ids[0..n) in any order, each once; self_in
 * false when this node lost the group. A view of more than
 * MEMBERSHIP_MEMBERS_MAX keeps the lowest ids (cpg_view.h's rule, so every
 * node keeps the same ones), counts the rest (view_overflow) and logs it;
 * a node left out holds no role and no vote. merged: a node came back
 * from another partition (CPG's NODEUP); an owner announces the VIPs
 * again then, since the other half may have announced them meanwhile.
 */
void membership_on_members(struct membership *e, const uint32_t *ids, size_t n,
			   bool self_in, bool merged, uint32_t now);

/* A member's NODE_STATE, checked by the intake (sender is a member). */
void membership_on_state(struct membership *e, uint32_t sender,
			 const struct wire_node_state *st, uint32_t now);

/*
 * A member's HEALTH report: the backends it sees down, down[0..n) (valid
 * during the call). 0, or -ENOMEM: the report is lost (the intake counts
 * it).
 */
int membership_on_health(struct membership *e, uint32_t sender,
			 const struct health_key *down, size_t n, uint32_t now);

/* The members held, for the intake's membership check. */
const struct roles_member *membership_members(const struct membership *e, size_t *n);

/* The counters, for the intake (cluster_msg.h) to count its drops into. */
uint64_t *membership_counters_mut(struct membership *e);
const uint64_t *membership_counters(const struct membership *e);

/* votequorum's answer changed (or its first). */
void membership_quorum(struct membership *e, bool quorate, uint32_t now);

/*
 * corosync has a quorum device with this timeout (quorum.device.timeout;
 * 0: none). A node then takes the role no sooner than that after a member
 * left or quorum came back: votequorum may count the device's vote of the
 * previous ring until then, so the side of a split the device will deny
 * looks quorate, and quorum may come back before the view with the peers.
 */
void membership_set_quorum_device(struct membership *e, uint32_t timeout_ms);

/* The dataplane's IPC link came up / went down. */
void membership_dataplane_up(struct membership *e, uint32_t now);
void membership_dataplane_down(struct membership *e, uint32_t now);

/*
 * Completions of the ops' requests: rc 0 acknowledged; -ENOTCONN the link
 * went (not counted); another -errno refused or lost, why (may be NULL)
 * says how for the log.
 */
void membership_ownership_done(struct membership *e, int rc, const char *why,
			       uint32_t now);
void membership_backend_done(struct membership *e, int rc, const char *why, uint32_t now);
/* The ping's answer: ok with the dataplane's Maglev digest, or failed. */
void membership_pong(struct membership *e, bool ok, uint64_t maglev_digest, uint32_t now);
/*
 * The dataplane answered something else (an import's acknowledgement): it
 * is alive, and a ping sent since waits behind that work, not for a hung
 * process. The ping's deadline runs from the last such answer.
 */
void membership_dataplane_answered(struct membership *e, uint32_t now);

/*
 * Probe target id changed state (logged; the report is due). Call
 * membership_health_flush() after a batch of them.
 */
void membership_probe_changed(struct membership *e, uint32_t id, bool up, uint32_t now);
void membership_health_flush(struct membership *e, uint32_t now);

/* maglbctl cluster standby on|off. */
void membership_standby(struct membership *e, bool on, uint32_t now);

/* Timers: pings, announcements, reports, takeover, lease. Every TICK_MS. */
void membership_tick(struct membership *e, uint32_t now);

/*
 * maglbctl cluster: members allocated (free out->members); every field
 * but last_change_unix_ms (the caller's clock). 0 or -ENOMEM.
 */
int membership_status(const struct membership *e, struct wire_ctl_cluster *out);

void membership_summary(const struct membership *e, struct membership_summary *out);

/*
 * HEALTH_STATUS: the probe targets from index cursor on (probe ids
 * cursor, cursor + 1, ...: the config's order), at most cap of them, into
 * out: VIP name, backend, local_up (ops->probe_up), agreed_up, and the
 * nodes whose last report has it down (the first WIRE_SYNC_MEMBERS_MAX).
 * The probe figures (probes, failures, last_duration_us) are left zero,
 * for the caller's probe engine. Returns how many were written; *total:
 * every target of the config. out may be NULL when cap is 0.
 */
size_t membership_health_targets(const struct membership *e, uint32_t cursor,
				 struct wire_ctl_health_target *out, size_t cap, uint32_t *total);

/* The dataplane's Maglev digest from its last answer (0: none yet). */
uint64_t membership_maglev_digest(const struct membership *e);

#endif /* MAGLB_MEMBERSHIP_ENGINE_H */
