/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal to syncd's replication engine: the structs and functions that
 * its pieces share. repl.c (set-up, reloads, ticks, status), repl_send.c
 * (batches, what is in flight, the CPG backlog), repl_import.c (the import
 * queue), repl_export.c (exports and reconciliation), repl_deliver.c
 * (deliveries, apply, verify) and repl_resync.c (bulk resync, memberships).
 * No other module includes this header.
 */
#ifndef MAGLB_SYNCD_REPL_PRIVATE_H
#define MAGLB_SYNCD_REPL_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"
#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/lagcum.h"
#include "syncd/lathist.h"
#include "syncd/repl.h"

enum {
	KIND_NEW = 0, KIND_REFRESH, KIND_CLOSE, KINDS,  /* flush order */
	RESYNC_MSG_BYTES = 65536,       /* a donor's RESYNC_ENTRIES */
	STREAMS_MAX = 8,                /* donors' streams at once, per group */
	REPL_LOG_LINE_MAX = 256,
	LOOKUP_BATCH = 32,              /* entries whose cache lookups overlap */
	QUEUE_SENDS_PER_CALL = 32,      /* backlog sent a call (a tick), at most */
	IMPORT_WALK_PER_CALL = 16384,   /* cache entries a dataplane walk takes a tick */
};

/*
 * The requester's side of a bulk resync, per group. The MERGE_ states take
 * the same steps after a partition healed, from a group synced before it:
 * it holds every flow of its side meanwhile (repl_holds_flows()).
 */
enum resync_state {
	RESYNC_S_JOINING = 0,           /* not a member of the group */
	RESYNC_S_REQUESTING,            /* a donor picked, the request not multicast yet */
	RESYNC_S_REQUESTED,             /* the request multicast (or refused), no BEGIN yet */
	RESYNC_S_RECEIVING,             /* BEGIN delivered: entries counted until END */
	RESYNC_S_MERGE_REQUESTING,
	RESYNC_S_MERGE_REQUESTED,
	RESYNC_S_MERGE_RECEIVING,
	RESYNC_S_SYNCED,
	RESYNC_S_MAX
};

/* Hashes of the flows in a pending batch (0 is never stored). */
struct keyset {
	uint64_t *v;
	uint32_t mask;
};

/*
 * What own entries changed in their group's digest and entry count when
 * they went into the cache, ahead of CPG's agreed order (sync verify).
 */
struct verify_delta {
	uint64_t digest;                /* a sum: wraps, as the digest does */
	int64_t entries;
};

struct batch {
	struct wire_flow *e;
	size_t n, cap;
	size_t bytes;                   /* encoded size of the entries */
	struct verify_delta delta;      /* of its entries */
	uint32_t first_ms;              /* its first entry came (n > 0) */
	uint64_t stamp_us;              /* the same, wall clock: the message's stamp */
};

/* An own message with a delta, multicast or queued, not delivered back yet. */
struct inflight {
	uint64_t seq;
	struct verify_delta delta;
};

struct queued_msg {
	struct queued_msg *next;
	size_t len;
	uint64_t seq;
	uint32_t entries;
	uint8_t data[];
};

/* A donor's stream: what it multicasts next. */
enum stream_phase {
	STREAM_BEGIN = 0,
	STREAM_ENTRIES,                 /* from the cursor on, until the cache ends */
	STREAM_END,                     /* with the count sent */
	STREAM_PHASE_MAX
};

struct stream {                         /* a resync this node sends */
	uint32_t requester, epoch;
	uint32_t cursor;
	uint64_t sent;
	enum stream_phase phase;
	bool announce;                  /* own entries as NEW, no BEGIN nor END sent */
};

struct peer_seq {
	uint32_t node;
	uint64_t seq;
};

/* A resync this node asks for. */
struct resync_requester {
	enum resync_state state;
	uint32_t donor, epoch;          /* asked of; the stream's epoch */
	uint32_t start_ms;
	uint64_t got;                   /* entries since BEGIN */
	uint64_t import_barrier;        /* the last import of the last resync */
	bool refused_logged;            /* a refusal was logged at refused_ms */
	uint32_t refused_ms;
};

/*
 * What a group keeps across a reload (group_carry() copies it whole): its
 * counters, its membership, its resync, its sequences, its lags (the
 * windows and the histograms since start) and its CPG backlog with what
 * that backlog carries for verify.
 */
struct group_carried {
	uint64_t counters[REPL_COUNTER_MAX];
	bool member;
	uint32_t members[REPL_MEMBERS_MAX];
	uint32_t n_members;
	struct resync_requester rq;     /* its import barrier too: the import queue is kept */
	uint64_t seq;                   /* of own messages */
	struct peer_seq peers[REPL_MEMBERS_MAX];
	struct lathist self_lag, import_lag;
	struct lagcum self_lag_cum, import_lag_cum;     /* the same samples, since start */
	/* the CPG backlog: the new group takes it over */
	struct queued_msg *q_head, *q_tail;
	size_t q_bytes;
	uint32_t q_len;
	/* own messages in flight, oldest first: where in the ring (its slots are copied) */
	uint32_t if_head, if_len;
	struct verify_delta if_sum;     /* of the ring */
};

/*
 * A sync group. Outside carried, what a reload does not keep: the name
 * (the new config's), the batches and their keysets (flushed before the
 * reload), the ring's slots (allocated per group, copied into the new
 * one), the donor's streams (their cursors are the old cache's: a stream
 * under way is dropped) and a verify round (its answers describe the old
 * config's entries).
 */
struct group {
	char name[CATALOG_GROUP_NAME_MAX];
	struct group_carried carried;
	/* outgoing */
	struct batch out[KINDS];
	struct keyset later[KINDS];     /* REFRESH and CLOSE: flows pending */
	bool pending;                   /* a batch has entries */
	uint64_t maglev_digest;         /* of its VIPs' tables, 0 unknown */
	struct inflight *inflight;      /* the ring: if_mask + 1 slots */
	uint32_t if_mask;
	struct stream streams[STREAMS_MAX];
	uint32_t n_streams;
	/* sync verify, as requester */
	uint32_t verify_round;
	struct repl_digest answers[REPL_MEMBERS_MAX];
	uint32_t n_answers;
};

struct import_batch {
	struct import_batch *next;
	enum wire_flow_event ev;
	uint16_t group;
	bool sent;
	uint64_t token;
	uint64_t stamp_us;              /* oldest stamped entry in it; 0 none */
	size_t n, cap;
	struct wire_flow *e;            /* grows to IMPORT_BATCH_MAX */
};

struct repl {
	struct repl_params p;
	struct repl_vip_digest *vip_digests;    /* the dataplane's VIP list */
	size_t n_vip_digests;
	struct repl_ops ops;
	void *arg;
	const struct catalog *cat;
	struct cache *cache;
	struct group *groups;
	uint16_t n_groups;
	/* imports */
	struct import_batch *i_head, *i_tail;
	uint64_t i_entries;             /* queued, sent or not */
	uint64_t next_token;
	bool dp_up, dp_walking, dp_synced;
	bool reconciling, want_reconcile;
	uint32_t dp_cursor;
	uint64_t dp_last_token;         /* of the full import's last batch */
	uint64_t node[REPL_NODE_COUNTER_MAX];
	struct wire_counters wire;
	struct wire_flow *scratch;      /* decoding and streaming; grows */
	size_t scratch_cap;
	uint8_t *buf;                   /* encode buffer */
	size_t buf_len;
};

static inline uint16_t
repl_group_of_vip(const struct repl *r, uint16_t vip)
{
	return catalog_vip(r->cat, vip)->group;
}

/*
 * Up to LOOKUP_BATCH wire entries as cache keys and values, hashed, their
 * cache memory fetched ahead (cache_prefetch()): rc[i] is cache_from_wire()'s.
 */
struct lookup_batch {
	size_t n;
	int rc[LOOKUP_BATCH];
	uint32_t hash[LOOKUP_BATCH];
	struct cache_key key[LOOKUP_BATCH];
	struct cache_value v[LOOKUP_BATCH];
};

/*
 * The first LOOKUP_BATCH (or fewer) of f[0..n) into b, from origin; with
 * keep_origin, an entry's own origin where it names one (a resync's).
 * b->n says how many.
 */
void repl_lookup_batch(const struct repl *r, struct lookup_batch *b, const struct wire_flow *f,
		       size_t n, uint32_t origin, bool keep_origin, uint32_t now_ms);

/* repl_send.c */

/* ops.log, printf-style: a line, cut at REPL_LOG_LINE_MAX. */
void repl_say(const struct repl *r, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What the cache ops since before (cache_group_stats()) changed in group gi. */
struct verify_delta repl_delta_since(const struct repl *r, uint16_t gi,
				     struct cache_group_stats before);
/* CPG delivered own message seq back: it and every earlier one are agreed. */
void repl_inflight_delivered(struct group *g, uint64_t seq);
/* The group left: nothing of it is in flight any more, nor batched. */
void repl_inflight_clear(struct group *g);
/* What this node holds of a group ahead of the agreed order: batched or in flight. */
struct verify_delta repl_inflight_pending(const struct group *g);
/* Multicast one encoded message (the group's last seq), or queue it. */
void repl_send_or_queue(struct repl *r, uint16_t gi, const uint8_t *buf, size_t len,
			uint32_t entries);
/* Send what waits for CPG, oldest first, until it is busy again. */
void repl_queue_retry(struct repl *r, uint16_t gi);
void repl_queue_clear(struct group *g);
/* Encode m (its node id and seq set here) into r->buf. Length or 0. */
size_t repl_encode(struct repl *r, struct group *g, struct wire_sync_msg *m);
/* Send the pending batches of kinds NEW..upto, in that order. */
void repl_flush(struct repl *r, uint16_t gi, int upto);
void repl_flush_due(struct repl *r, uint16_t gi, uint32_t now_ms);
/* Add one of this node's entries to the group's batch of kind k (d: its delta). */
void repl_batch_add(struct repl *r, uint16_t gi, int k, const struct wire_flow *f,
		    struct verify_delta d, uint32_t now_ms, uint64_t now_us);

/* repl_import.c */

void repl_import_free_all(struct repl *r);
/* Queue one entry for the dataplane; false when the queue is full. */
bool repl_import_add(struct repl *r, uint16_t gi, enum wire_flow_event ev,
		     const struct wire_flow *f, uint64_t stamp_us);
/* The next part of a full import, then what waits for the dataplane. */
void repl_import_pump(struct repl *r, uint32_t now_ms);

/* repl_deliver.c */

/* Apply entries delivered on gi from sender in agreed order (k: NEW, REFRESH, CLOSE). */
void repl_apply_entries(struct repl *r, uint16_t gi, uint32_t sender, int k,
			const struct wire_sync_msg *m, uint32_t now_ms);

/* repl_resync.c */

/* A RESYNC_REQUEST, BEGIN, ENTRIES or END delivered on gi from sender. */
void repl_resync_deliver(struct repl *r, uint16_t gi, uint32_t sender,
			 const struct wire_sync_msg *m, uint32_t now_ms);
/* The tick's share: a request CPG did not take yet, the donor's streams. */
void repl_resync_tick(struct repl *r, uint16_t gi, uint32_t now_ms);
/* What the status tells of the group's requester. */
enum repl_sync_state repl_group_state(const struct group *g);
/* A donor picked, the request not multicast yet. */
bool repl_resync_requesting(const struct group *g);
/* Synced before a partition healed, fetching what the other side made. */
bool repl_resync_merging(const struct group *g);

#endif /* MAGLB_SYNCD_REPL_PRIVATE_H */
