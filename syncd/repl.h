/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The replication engine of maglb-syncd: what goes to the peers and what
 * comes back, with no corosync and no IPC in it. The daemon feeds it the
 * dataplane's export batches, the messages CPG delivers and the groups'
 * memberships; it calls back to multicast a message and to import entries
 * into the dataplane. Unit tests drive several engines through an
 * in-process transport that delivers in one total order, as CPG does.
 *
 * Rules (syncd/README.md tells them at length):
 *  - Every node applies every message, its own included, in CPG's agreed
 *    order: the last NEW, REFRESH or CLOSE delivered for a flow wins on
 *    every node alike. Own exports also go into the cache at once, so a
 *    message lost to backpressure does not lose the entry here; what each
 *    changed in its group's digest and count stays beside, with its batch
 *    and then its message, until CPG delivers that message back (or it is
 *    dropped), so that a verify answer leaves out what the others have not
 *    been delivered yet.
 *  - Entries are batched per group and kind, bounded by bytes and delay;
 *    a flow's events never overtake each other (a pending REFRESH or CLOSE
 *    of the same flow flushes the batches first).
 *  - A peer's entry is accepted only for a VIP of this node's config, a
 *    backend of that VIP, and a VIP of the group it came on.
 *  - Bulk resync: a member that joins asks one donor (the lowest other
 *    node id, then the next when that one leaves) for everything; the
 *    donor builds each RESYNC_ENTRIES message from its cache at the moment
 *    it multicasts it, so that message is ordered after every update the
 *    donor had applied: entries closed meanwhile are not resurrected, and
 *    entries created meanwhile arrive live. A group is synced when a
 *    stream ended with the count announced, or when this node is alone.
 *    A BEGIN, ENTRIES or END addressed to this node that is not of the
 *    stream it asked for, or that the requester's state cannot take, is
 *    refused: counted (impossible_transitions), logged, nothing applied.
 *  - Each sender's messages carry a sequence number per group. One not
 *    newer than the sender's last is dropped, counted (drop_seq_stale):
 *    CPG delivers a process's messages once and in order, so it is a
 *    replay or another process's, never news. A jump forward counts once
 *    in seq_gaps however many numbers it skips: no message moves a
 *    counter by more than one. A sender that leaves the view is forgotten
 *    (a restarted syncd starts its sequence again).
 *  - Imports go to the dataplane in order, from one bounded queue; when
 *    the dataplane (re)connects, every live entry held is imported again
 *    before the dataplane counts as synced.
 *
 * Single-threaded; time is passed in (ms and µs of CLOCK_REALTIME for the
 * lag stamps, which only compare between nodes sharing a clock).
 */
#ifndef MAGLB_SYNCD_REPL_H
#define MAGLB_SYNCD_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

struct catalog;
struct cache;

/* Per group: X(ENUM, name, description). */
#define REPL_GROUP_COUNTERS(X) \
	X(MSGS_SENT, msgs_sent, "messages multicast") \
	X(BYTES_SENT, bytes_sent, "bytes multicast") \
	X(ENTRIES_SENT, entries_sent, "entries multicast (NEW, REFRESH, CLOSE)") \
	X(MSGS_RECEIVED, msgs_received, "messages delivered from peers") \
	X(ENTRIES_RECEIVED, entries_received, "entries delivered from peers") \
	X(ENTRIES_APPLIED, entries_applied, "peers' entries applied to the cache") \
	X(IMPORTED, imported, "entries the dataplane acknowledged") \
	X(REJECTED_VIP, rejected_vip, "peers' entries for a VIP not configured here") \
	X(REJECTED_BACKEND, rejected_backend, "peers' entries naming a backend the VIP lacks") \
	X(REJECTED_GROUP, rejected_group, "peers' entries for a VIP of another group") \
	X(DROP_DECODE, drop_decode, "messages that did not decode (see wire drops)") \
	X(DROP_SENDER, drop_sender, "messages whose sender is not the CPG member") \
	X(DROP_KIND, drop_kind, "membership messages sent to a sync group") \
	X(DROP_CPG_BACKLOG, drop_cpg_backlog, "entries lost: CPG busy and the send queue full") \
	X(DROP_SEND_ERROR, drop_send_error, "entries lost: CPG refused the message") \
	X(DROP_IMPORT_QUEUE, drop_import_queue, "entries lost: the import queue was full") \
	X(DROP_SEQ_STALE, drop_seq_stale, "messages whose seq is not newer than the peer's last") \
	X(SEQ_GAPS, seq_gaps, "jumps in a peer's sequence (messages missing), once each") \
	X(CPG_RETRIES, cpg_retries, "multicasts CPG asked to retry (TRY_AGAIN)") \
	X(RESYNC_REQUESTS, resync_requests, "resyncs this node asked for") \
	X(RESYNC_SERVED, resync_served, "resync streams this node sent as donor") \
	X(RESYNC_ENTRIES_SENT, resync_entries_sent, "entries sent as donor") \
	X(RESYNC_ENTRIES_RECEIVED, resync_entries_received, "entries received in resyncs") \
	X(RESYNC_COMPLETE, resync_complete, "resyncs that ended with the right count") \
	X(RESYNC_INCOMPLETE, resync_incomplete, "resyncs that ended short or lost their donor") \
	X(RESYNC_LAST_MS, resync_last_ms, "duration of the last complete resync, ms") \
	X(RESYNC_MERGES, resync_merges, "partitions healed: resyncs asked of a returning member") \
	X(IMPOSSIBLE_TRANSITIONS, impossible_transitions, \
	  "resync events the requester refused: a bug, logged with its state")

enum repl_counter {
#define REPL_COUNTER_ENUM_(id, name, text) REPL_##id,
	REPL_GROUP_COUNTERS(REPL_COUNTER_ENUM_)
#undef REPL_COUNTER_ENUM_
	REPL_COUNTER_MAX
};

extern const char *const repl_counter_names[REPL_COUNTER_MAX];
extern const char *const repl_counter_descriptions[REPL_COUNTER_MAX];

/* Node-wide: the export stream and the dataplane. */
#define REPL_NODE_COUNTERS(X) \
	X(EXPORT_BATCHES, export_batches, "export batches from the dataplane") \
	X(EXPORT_ENTRIES, export_entries, "entries exported by the dataplane") \
	X(EXPORT_LOST, export_lost, "entries the dataplane could not export (its ring was full)") \
	X(EXPORT_UNKNOWN, export_unknown, "exported entries for a VIP or backend syncd's config lacks") \
	X(DUMP_ADOPTED, dump_adopted, "own flows found in the dataplane's tables, not in the cache") \
	X(RECONCILED_CLOSES, reconciled_closes, "own entries gone from the dataplane: closed at a reconciliation") \
	X(CACHE_FULL, cache_full, "entries not held: no memory") \
	X(IMPORT_BATCHES, import_batches, "IMPORT_BATCH messages acknowledged") \
	X(IMPORT_ERRORS, import_errors, "IMPORT_BATCH messages the dataplane refused or lost") \
	X(IMPORT_UNKNOWN, import_unknown, "acknowledgements of an import no longer waiting (its queue was dropped)") \
	X(DATAPLANE_RELOADS, dataplane_reloads, "full imports into a (re)connected dataplane") \
	X(EXPIRED, expired, "entries expired in the cache") \
	X(RELOAD_DROPPED, reload_dropped, "entries not carried over a reload: their VIP or backend is gone")

enum repl_node_counter {
#define REPL_NODE_COUNTER_ENUM_(id, name, text) REPL_NODE_##id,
	REPL_NODE_COUNTERS(REPL_NODE_COUNTER_ENUM_)
#undef REPL_NODE_COUNTER_ENUM_
	REPL_NODE_COUNTER_MAX
};

extern const char *const repl_node_counter_names[REPL_NODE_COUNTER_MAX];
extern const char *const repl_node_counter_descriptions[REPL_NODE_COUNTER_MAX];

enum repl_sync_state {
	REPL_JOINING = 0,               /* not a member of the group yet */
	REPL_RESYNCING,                 /* asked a donor, stream not ended */
	REPL_SYNCED,
	REPL_SYNC_STATE_MAX
};

extern const char *const repl_sync_state_names[REPL_SYNC_STATE_MAX];

enum {
	REPL_MEMBERS_MAX = 64,
};

struct repl_group_status {
	const char *name;
	enum repl_sync_state state;
	uint32_t members[REPL_MEMBERS_MAX];
	uint32_t n_members;
	uint32_t donor;                 /* RESYNCING: asked of */
	uint64_t counters[REPL_COUNTER_MAX];
	uint32_t send_queue;            /* messages waiting for CPG */
	uint64_t entries_own, entries_peers, digest;
	uint32_t self_lag_p50_us, self_lag_p99_us;    /* export -> own delivery */
	uint32_t import_lag_p50_us, import_lag_p99_us; /* peer's export -> import ack */
	struct wire_lag_histogram self_lag, import_lag; /* the same, since start */
};

/* The daemon's side. Each returns 0 or -errno as described. */
struct repl_ops {
	/*
	 * Multicast len bytes to the group (agreed order). 0 sent; -EAGAIN
	 * the transport is busy (the engine keeps the message and calls again
	 * from repl_tick()); anything else: the message is dropped, counted.
	 */
	int (*send)(void *arg, uint16_t group, const void *buf, size_t len);
	/*
	 * Queue n entries of event ev for import into the dataplane (an
	 * IMPORT_BATCH). 0 queued (the daemon calls repl_import_done() with
	 * the same token later); -EAGAIN the IPC is busy (called again later);
	 * -ENOTCONN no dataplane (the queue is dropped: a full import follows
	 * the next repl_dataplane_up()).
	 */
	int (*import)(void *arg, enum wire_flow_event ev, const struct wire_flow *f,
		      size_t n, uint64_t token);
	/* One line at a syslog priority (refusals, resync phases); may be NULL. */
	void (*log)(void *arg, int priority, const char *line);
};

struct repl_params {
	uint32_t self;                  /* this node's id, >= 1 */
	uint32_t max_batch_bytes;       /* of a multicast message */
	uint32_t max_batch_delay_ms;
	uint32_t import_queue_entries;  /* bound of the import queue */
	uint32_t send_queue_bytes;      /* bound of each group's CPG backlog */
	uint32_t max_idle_ms;           /* the longest flows.timeouts value */
};

struct repl;

/*
 * An engine over cat (outlives it) with ops. NULL when memory ran out.
 * Every group starts JOINING.
 */
struct repl *repl_create(const struct catalog *cat, const struct repl_params *p,
			 const struct repl_ops *ops, void *arg);
void repl_destroy(struct repl *r);

/*
 * A new catalog (reload): entries of VIPs and backends it still has carry
 * over, the others are dropped (counted: reload_dropped); groups are
 * matched by name (counters kept), new groups start JOINING. 0 or -ENOMEM
 * (the old catalog stays in use).
 */
int repl_set_catalog(struct repl *r, const struct catalog *cat, uint32_t now_ms);

/*
 * The longest idle timeout of a reloaded config. Kept if shorter than the
 * one in use: entries made under the longer one still hold its lifetimes,
 * and judging their last activity by the shorter one would date them
 * later than it was (repl_dump_end()).
 */
void repl_set_max_idle(struct repl *r, uint32_t max_idle_ms);

/* An EXPORT_BATCH from the local dataplane (m->kind WIRE_CTL_EXPORT_BATCH). */
void repl_on_export(struct repl *r, const struct wire_ctl_flows *fl, uint32_t now_ms,
		    uint64_t now_us);

/*
 * A message CPG delivered on group from node sender (its CPG node id).
 * Malformed input is counted, never applied.
 */
void repl_on_deliver(struct repl *r, uint16_t group, uint32_t sender, const void *buf,
		     size_t len, uint32_t now_ms, uint64_t now_us);

/*
 * The deliveries of one wake-up are in: the imports they queued go to the
 * dataplane now rather than at the next tick (a millisecond of lag).
 */
void repl_on_dispatched(struct repl *r);

/*
 * The group's membership (node ids, any order); self_in: this node is a
 * member (false after the transport lost the group); merged: members came
 * back from another partition (CPG's NODEUP). May start a resync, restart
 * one whose donor left, or, when a partition heals (merged), ask a
 * returning member for everything and multicast this node's own entries
 * again. (A syncd that restarts joins: JOINING asks a donor anyway.)
 */
void repl_on_members(struct repl *r, uint16_t group, const uint32_t *members, size_t n,
		     bool self_in, bool merged, uint32_t now_ms);

/*
 * Reconciliation with the local dataplane, when it connects and after
 * every resync or merge (repl_want_reconcile()): the daemon reads the
 * dataplane's tables page by page (DUMP_REQUEST) between begin and end.
 * Its own live flows (not FROM_PEER, not CLOSING) that the cache lacks (syncd
 * restarted, or they were made while it was away) are held and multicast
 * as NEW. With close, entries whose origin is this node that the
 * dataplane no longer has (closed while syncd, or this node's corosync,
 * was away, then handed back by a resync) are removed and multicast as
 * CLOSE at the end; but only those last active after dp_start_ms (when
 * the dataplane started, on now_ms's clock; an entry's last activity is
 * its expiry less the longest idle timeout): a flow an earlier dataplane
 * of this node made, which other nodes carry since it died, is not this
 * dataplane's to close. The daemon asks for close only when the dataplane
 * has run since before syncd started: a dataplane that restarted lost its
 * tables, and its flows come back by the full import instead.
 */
void repl_dump_begin(struct repl *r);
void repl_on_dump(struct repl *r, const struct wire_flow *f, size_t n, uint32_t now_ms,
		  uint64_t now_us);
void repl_dump_end(struct repl *r, bool close, uint32_t dp_start_ms, uint32_t now_ms,
		   uint64_t now_us);
/* The dump did not complete (the dataplane went away): close nothing; the
 * next connection reconciles again. */
void repl_dump_abort(struct repl *r);

/* Whether a resync or a merge since the last reconciliation asks for one. */
bool repl_want_reconcile(const struct repl *r);

/* The dataplane connected (again): import everything held. */
void repl_dataplane_up(struct repl *r, uint32_t now_ms);

/* The dataplane is gone: drop the import queue. */
void repl_dataplane_down(struct repl *r);

/*
 * The import with token ended: ok or not (counted). A token no longer
 * waiting (the queue was dropped since: the dataplane went away or
 * reconnected) is counted as import_unknown and changes nothing else.
 */
void repl_import_done(struct repl *r, uint64_t token, bool ok, uint64_t now_us);

/*
 * Timers: flush batches older than max_batch_delay_ms, retry the CPG
 * backlog, advance resync streams and imports, expire the cache. Call it
 * every millisecond or so, and after a burst of input.
 */
void repl_tick(struct repl *r, uint32_t now_ms, uint64_t now_us);

/* One member's answer to a verify round. */
struct repl_digest {
	uint32_t node;
	uint64_t entries;
	uint64_t digest;
	uint64_t maglev;            /* its dataplane's Maglev digest; 0 unknown */
};

enum {
	REPL_VERIFY_MARGIN_MS = 2000,   /* entries this close to expiry left out */
};

/*
 * sync verify: ask every member of group gi for a digest of the entries
 * it holds, computed when the request is delivered (one point of the
 * agreed order on every node), less its own exports not delivered by then
 * (batched, queued or multicast). Returns the round (>= 1), -ENOTCONN when
 * this node is not a member, -EAGAIN when CPG is busy.
 */
int repl_verify_start(struct repl *r, uint16_t gi);

/*
 * The answers to round so far, into out (cap of them); returns how many.
 * *members: how many members the group has now.
 */
size_t repl_verify_result(const struct repl *r, uint16_t gi, uint32_t round,
			  struct repl_digest *out, size_t cap, uint32_t *members);

/*
 * Whether repl_tick() has work within a few milliseconds (batches, a CPG
 * backlog, resync streams, imports); when not, ticks can be rare (the
 * expiry sweep is all they do).
 */
bool repl_busy(const struct repl *r);

/*
 * Whether every group is SYNCED, the dataplane has acknowledged the
 * imports of every resync's entries, and it has every entry held.
 */
bool repl_synced(const struct repl *r);
bool repl_dataplane_synced(const struct repl *r);

/*
 * Whether this node holds every flow of its side of the cluster: synced,
 * or synced before a partition healed and now fetching what the other
 * side made. What makes a node eligible for a role: a healed partition (or
 * a peer restarting) must not withdraw every active node.
 */
bool repl_holds_flows(const struct repl *r);

uint16_t repl_groups(const struct repl *r);
void repl_group_status(const struct repl *r, uint16_t group, struct repl_group_status *st);
const uint64_t *repl_node_counters(const struct repl *r);
/* One VIP's Maglev digest, as the dataplane's VIP list gives it. */
struct repl_vip_digest {
	char name[WIRE_NAME_MAX];
	uint64_t digest;
};

/*
 * The dataplane's VIPs and their Maglev digests (copied). Each group's
 * answer to a verify round carries the digest of its own VIPs
 * (hash_vip_digest() summed): nodes that agree on a group's backend
 * health build the same tables for it, whatever other VIPs each has. A
 * group none of whose VIPs is listed answers 0, unknown. 0 or -ENOMEM
 * (the digests known before stay).
 */
int repl_set_vip_digests(struct repl *r, const struct repl_vip_digest *v, size_t n);

/* Entries waiting in the import queue (sent or not, unacknowledged). */
uint64_t repl_import_queue(const struct repl *r);
const struct wire_counters *repl_wire_counters(const struct repl *r);
const struct cache *repl_cache(const struct repl *r);

#endif /* MAGLB_SYNCD_REPL_H */
