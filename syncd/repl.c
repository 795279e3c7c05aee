/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine. See repl.h for the rules. */
#include "syncd/repl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <qb/qblog.h>

#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/lathist.h"

const char *const repl_counter_names[REPL_COUNTER_MAX] = {
#define REPL_NAME_(id, name, text) [REPL_##id] = #name,
	REPL_GROUP_COUNTERS(REPL_NAME_)
#undef REPL_NAME_
};

const char *const repl_counter_descriptions[REPL_COUNTER_MAX] = {
#define REPL_TEXT_(id, name, text) [REPL_##id] = text,
	REPL_GROUP_COUNTERS(REPL_TEXT_)
#undef REPL_TEXT_
};

const char *const repl_node_counter_names[REPL_NODE_COUNTER_MAX] = {
#define REPL_NODE_NAME_(id, name, text) [REPL_NODE_##id] = #name,
	REPL_NODE_COUNTERS(REPL_NODE_NAME_)
#undef REPL_NODE_NAME_
};

const char *const repl_node_counter_descriptions[REPL_NODE_COUNTER_MAX] = {
#define REPL_NODE_TEXT_(id, name, text) [REPL_NODE_##id] = text,
	REPL_NODE_COUNTERS(REPL_NODE_TEXT_)
#undef REPL_NODE_TEXT_
};

const char *const repl_sync_state_names[REPL_SYNC_STATE_MAX] = {
	[REPL_JOINING] = "joining",
	[REPL_RESYNCING] = "resyncing",
	[REPL_SYNCED] = "synced",
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

static const char *const resync_state_names[RESYNC_S_MAX] = {
	[RESYNC_S_JOINING] = "joining",
	[RESYNC_S_REQUESTING] = "requesting",
	[RESYNC_S_REQUESTED] = "requested",
	[RESYNC_S_RECEIVING] = "receiving",
	[RESYNC_S_MERGE_REQUESTING] = "merge-requesting",
	[RESYNC_S_MERGE_REQUESTED] = "merge-requested",
	[RESYNC_S_MERGE_RECEIVING] = "merge-receiving",
	[RESYNC_S_SYNCED] = "synced",
};

/* What the status tells of each. */
static const enum repl_sync_state resync_public[RESYNC_S_MAX] = {
	[RESYNC_S_JOINING] = REPL_JOINING,
	[RESYNC_S_REQUESTING] = REPL_RESYNCING,
	[RESYNC_S_REQUESTED] = REPL_RESYNCING,
	[RESYNC_S_RECEIVING] = REPL_RESYNCING,
	[RESYNC_S_MERGE_REQUESTING] = REPL_RESYNCING,
	[RESYNC_S_MERGE_REQUESTED] = REPL_RESYNCING,
	[RESYNC_S_MERGE_RECEIVING] = REPL_RESYNCING,
	[RESYNC_S_SYNCED] = REPL_SYNCED,
};

enum resync_event {
	RESYNC_EVT_JOINED = 0,          /* this node became a member */
	RESYNC_EVT_MERGED,              /* a partition healed: a returning member to ask */
	RESYNC_EVT_ALONE,               /* no other member to ask: nothing to fetch */
	RESYNC_EVT_REQUEST_SENT,        /* multicast, or refused by the transport */
	RESYNC_EVT_BEGIN,
	RESYNC_EVT_ENTRIES,
	RESYNC_EVT_END,                 /* with the count received */
	RESYNC_EVT_END_SHORT,           /* with another count: the next donor is asked */
	RESYNC_EVT_DONOR_LEFT,          /* the next donor is asked */
	RESYNC_EVT_LEFT,                /* this node is no longer a member */
	RESYNC_EVT_MAX
};

static const char *const resync_event_names[RESYNC_EVT_MAX] = {
	[RESYNC_EVT_JOINED] = "joined",
	[RESYNC_EVT_MERGED] = "merged",
	[RESYNC_EVT_ALONE] = "alone",
	[RESYNC_EVT_REQUEST_SENT] = "request-sent",
	[RESYNC_EVT_BEGIN] = "begin",
	[RESYNC_EVT_ENTRIES] = "entries",
	[RESYNC_EVT_END] = "end",
	[RESYNC_EVT_END_SHORT] = "end-short",
	[RESYNC_EVT_DONOR_LEFT] = "donor-left",
	[RESYNC_EVT_LEFT] = "left",
};

/* Where each event takes each state; the rest are refused. */
static const struct resync_move {
	bool ok;
	enum resync_state to;
} resync_moves[RESYNC_S_MAX][RESYNC_EVT_MAX] = {
	[RESYNC_S_JOINING] = {
		[RESYNC_EVT_JOINED] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_REQUESTING] = {
		[RESYNC_EVT_REQUEST_SENT] = { true, RESYNC_S_REQUESTED },
		[RESYNC_EVT_ALONE] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_REQUESTED] = {
		[RESYNC_EVT_BEGIN] = { true, RESYNC_S_RECEIVING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_RECEIVING] = {
		[RESYNC_EVT_ENTRIES] = { true, RESYNC_S_RECEIVING },
		[RESYNC_EVT_END] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_END_SHORT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_MERGE_REQUESTING] = {
		[RESYNC_EVT_REQUEST_SENT] = { true, RESYNC_S_MERGE_REQUESTED },
		[RESYNC_EVT_ALONE] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_MERGE_REQUESTED] = {
		[RESYNC_EVT_BEGIN] = { true, RESYNC_S_MERGE_RECEIVING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_MERGE_RECEIVING] = {
		[RESYNC_EVT_ENTRIES] = { true, RESYNC_S_MERGE_RECEIVING },
		[RESYNC_EVT_END] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_END_SHORT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_SYNCED] = {
		[RESYNC_EVT_MERGED] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
};

enum {
	KIND_NEW = 0, KIND_REFRESH, KIND_CLOSE, KINDS,  /* flush order */
	MSG_MAX = 1 << 20,              /* largest message decoded */
	RESYNC_MSG_BYTES = 65536,       /* a donor's RESYNC_ENTRIES */
	STREAMS_MAX = 8,                /* donors' streams at once, per group */
	STREAM_MSGS_PER_TICK = 64,
	IMPORT_BATCH_MAX = 4096,        /* entries per IMPORT_BATCH */
	SWEEP_PER_TICK = 2048,          /* cache slots visited per tick */
	INFLIGHT_SLACK = 1024,          /* own messages in flight beyond a send
					 * queue of full ones: a second of
					 * partial batches at the shortest delay */
	INFLIGHT_MAX = 1 << 16,
	RESYNC_REFUSED_LOG_MS = 60000,  /* a refused resync event: logged once a minute */
	RESYNC_WHY_MAX = 128,
};

static const enum wire_sync_kind kind_wire[KINDS] = {
	WIRE_SYNC_NEW, WIRE_SYNC_REFRESH, WIRE_SYNC_CLOSE,
};

static const enum wire_flow_event kind_event[KINDS] = {
	WIRE_FLOW_EVENT_NEW, WIRE_FLOW_EVENT_REFRESH, WIRE_FLOW_EVENT_CLOSE,
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

static const char *const stream_phase_names[STREAM_PHASE_MAX] = {
	[STREAM_BEGIN] = "begin",
	[STREAM_ENTRIES] = "entries",
	[STREAM_END] = "end",
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
 * counters, its membership, its resync, its sequences and its CPG backlog
 * with what that backlog carries for verify.
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
	bool pending;
	uint32_t first_ms;
	uint64_t stamp_us;
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
	uint64_t maglev_digest;         /* the dataplane's, for verify rounds */
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

/* ------------------------------------------------------------- keysets */

static uint64_t
flow_hash(const struct wire_flow *f)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)f->vip_port << 16 | f->client_port);
	uint64_t w[4];

	memcpy(w, f->vip, 16);
	memcpy(w + 2, f->client, 16);
	for (int i = 0; i < 4; i++) {
		h ^= w[i] + (h << 6) + (h >> 2);
		h *= 0xff51afd7ed558ccdull;
	}
	h ^= h >> 33;
	return h | 1;
}

static void
keyset_add(struct keyset *s, uint64_t h)
{
	for (uint32_t i = (uint32_t)h & s->mask;; i = (i + 1) & s->mask) {
		if (s->v[i] == h)
			return;
		if (s->v[i] == 0) {
			s->v[i] = h;
			return;
		}
	}
}

static bool
keyset_has(const struct keyset *s, uint64_t h)
{
	for (uint32_t i = (uint32_t)h & s->mask;; i = (i + 1) & s->mask) {
		if (s->v[i] == h)
			return true;
		if (s->v[i] == 0)
			return false;
	}
}

/* ------------------------------------------------------------- helpers */

static uint16_t
group_of_vip(const struct repl *r, uint16_t vip)
{
	return catalog_vip(r->cat, vip)->group;
}

/* ------------------------------------------------------- verify deltas */

static void
delta_add(struct verify_delta *to, struct verify_delta d)
{
	to->digest += d.digest;
	to->entries += d.entries;
}

static void
delta_sub(struct verify_delta *from, struct verify_delta d)
{
	from->digest -= d.digest;
	from->entries -= d.entries;
}

/* What the cache ops since before (cache_group_stats()) changed in group gi. */
static struct verify_delta
delta_since(const struct repl *r, uint16_t gi, struct cache_group_stats before)
{
	struct cache_group_stats after = cache_group_stats(r->cache, gi);

	return (struct verify_delta){
		.digest = after.digest - before.digest,
		.entries = (int64_t)(after.own + after.peers - before.own - before.peers),
	};
}

/* Own message seq carries d: in flight until delivered back or dropped. */
static void
inflight_push(struct group *g, uint64_t seq, struct verify_delta d)
{
	struct inflight *it;

	if (d.digest == 0 && d.entries == 0)
		return;
	if (g->carried.if_len > g->if_mask) {
		/* full: the newest waits for this one too (late, never lost) */
		it = &g->inflight[(g->carried.if_head + g->carried.if_len - 1) & g->if_mask];
		it->seq = seq;
		delta_add(&it->delta, d);
	} else {
		it = &g->inflight[(g->carried.if_head + g->carried.if_len++) & g->if_mask];
		*it = (struct inflight){ .seq = seq, .delta = d };
	}
	delta_add(&g->carried.if_sum, d);
}

/* CPG delivered own message seq back: it and every earlier one are agreed. */
static void
inflight_delivered(struct group *g, uint64_t seq)
{
	while (g->carried.if_len > 0 && g->inflight[g->carried.if_head].seq <= seq) {
		delta_sub(&g->carried.if_sum, g->inflight[g->carried.if_head].delta);
		g->carried.if_head = (g->carried.if_head + 1) & g->if_mask;
		g->carried.if_len--;
	}
}

/* Own message seq was dropped: its entries are on this node only. */
static void
inflight_cancel(struct group *g, uint64_t seq)
{
	for (uint32_t i = g->carried.if_len; i > 0; i--) {
		struct inflight *it = &g->inflight[(g->carried.if_head + i - 1) & g->if_mask];

		if (it->seq < seq)
			return;
		if (it->seq == seq) {
			delta_sub(&g->carried.if_sum, it->delta);
			it->delta = (struct verify_delta){ 0 };
			return;
		}
	}
}

/* The group left: nothing of it is in flight any more, nor batched. */
static void
inflight_clear(struct group *g)
{
	g->carried.if_head = g->carried.if_len = 0;
	g->carried.if_sum = (struct verify_delta){ 0 };
	for (int k = 0; k < KINDS; k++)
		g->out[k].delta = (struct verify_delta){ 0 };
}

/* What this node holds of gi ahead of the agreed order: batched or in flight. */
static struct verify_delta
inflight_pending(const struct group *g)
{
	struct verify_delta d = g->carried.if_sum;

	for (int k = 0; k < KINDS; k++)
		delta_add(&d, g->out[k].delta);
	return d;
}

/* -------------------------------------------------------------- sending */

/*
 * Multicast one encoded message (the group's last seq), or queue it behind
 * the ones waiting.
 */
static void
send_or_queue(struct repl *r, uint16_t gi, const uint8_t *buf, size_t len, uint32_t entries)
{
	struct group *g = &r->groups[gi];
	struct queued_msg *q;
	int rc = -EAGAIN;

	if (g->carried.q_head == NULL)
		rc = r->ops.send(r->arg, gi, buf, len);
	if (rc == 0) {
		g->carried.counters[REPL_MSGS_SENT]++;
		g->carried.counters[REPL_BYTES_SENT] += len;
		g->carried.counters[REPL_ENTRIES_SENT] += entries;
		return;
	}
	if (rc != -EAGAIN) {
		g->carried.counters[REPL_DROP_SEND_ERROR] += entries;
		inflight_cancel(g, g->carried.seq);
		return;
	}
	if (g->carried.q_head == NULL)
		g->carried.counters[REPL_CPG_RETRIES]++;
	if (g->carried.q_bytes + len > r->p.send_queue_bytes ||
	    (q = malloc(sizeof(*q) + len)) == NULL) {
		g->carried.counters[REPL_DROP_CPG_BACKLOG] += entries;
		inflight_cancel(g, g->carried.seq);
		return;
	}
	q->next = NULL;
	q->len = len;
	q->seq = g->carried.seq;
	q->entries = entries;
	memcpy(q->data, buf, len);
	if (g->carried.q_tail != NULL)
		g->carried.q_tail->next = q;
	else
		g->carried.q_head = q;
	g->carried.q_tail = q;
	g->carried.q_bytes += len;
	g->carried.q_len++;
}

/* Send what waits for CPG, oldest first, until it is busy again. */
static void
queue_retry(struct repl *r, uint16_t gi)
{
	struct group *g = &r->groups[gi];

	while (g->carried.q_head != NULL) {
		struct queued_msg *q = g->carried.q_head;
		int rc = r->ops.send(r->arg, gi, q->data, q->len);

		if (rc == -EAGAIN) {
			g->carried.counters[REPL_CPG_RETRIES]++;
			return;
		}
		if (rc == 0) {
			g->carried.counters[REPL_MSGS_SENT]++;
			g->carried.counters[REPL_BYTES_SENT] += q->len;
			g->carried.counters[REPL_ENTRIES_SENT] += q->entries;
		} else {
			g->carried.counters[REPL_DROP_SEND_ERROR] += q->entries;
			inflight_cancel(g, q->seq);
		}
		g->carried.q_head = q->next;
		if (g->carried.q_head == NULL)
			g->carried.q_tail = NULL;
		g->carried.q_bytes -= q->len;
		g->carried.q_len--;
		free(q);
	}
}

static void
queue_clear(struct group *g)
{
	while (g->carried.q_head != NULL) {
		struct queued_msg *q = g->carried.q_head;

		g->carried.q_head = q->next;
		free(q);
	}
	g->carried.q_tail = NULL;
	g->carried.q_bytes = 0;
	g->carried.q_len = 0;
	inflight_clear(g);
}

/* Encode m (its node id and seq set here) into r->buf. Length or 0. */
static size_t
encode(struct repl *r, struct group *g, struct wire_sync_msg *m)
{
	size_t len = 0;

	m->node_id = r->p.self;
	m->seq = ++g->carried.seq;
	if (wire_sync_encode(m, r->buf, r->buf_len, &len) < 0) {
		g->carried.seq--;
		return 0;
	}
	return len;
}

/* Send the pending batches of kinds NEW..upto, in that order. */
static void
flush(struct repl *r, uint16_t gi, int upto)
{
	struct group *g = &r->groups[gi];

	for (int k = 0; k <= upto; k++) {
		struct batch *b = &g->out[k];
		struct wire_sync_msg m = {
			.kind = kind_wire[k], .entries = b->e, .count = b->n,
			.stamp_us = g->stamp_us,
		};
		size_t len;

		if (b->n == 0)
			continue;
		len = encode(r, g, &m);
		if (len > 0) {
			inflight_push(g, g->carried.seq, b->delta);
			send_or_queue(r, gi, r->buf, len, (uint32_t)b->n);
		} else {
			g->carried.counters[REPL_DROP_SEND_ERROR] += b->n;
		}
		b->n = 0;
		b->bytes = 0;
		b->delta = (struct verify_delta){ 0 };
		if (k > KIND_NEW)
			memset(g->later[k].v, 0, (g->later[k].mask + 1) * sizeof(uint64_t));
	}
	g->pending = false;
	for (int k = 0; k < KINDS; k++)
		g->pending |= g->out[k].n > 0;
}

/*
 * Add one of this node's entries to the group's outgoing batch of kind k;
 * d: what applying it here changed in the group's digest and count.
 */
static void
batch_add(struct repl *r, uint16_t gi, int k, const struct wire_flow *f,
	  struct verify_delta d, uint32_t now_ms, uint64_t now_us)
{
	struct group *g = &r->groups[gi];
	struct batch *b = &g->out[k];
	size_t size = wire_flow_encoded_size(f);
	uint64_t h = flow_hash(f);

	/* a later event of a flow must not overtake an earlier one */
	for (int later = k + 1; later < KINDS; later++)
		if (g->out[later].n > 0 && keyset_has(&g->later[later], h)) {
			flush(r, gi, KINDS - 1);
			break;
		}
	if (b->n == b->cap || b->bytes + size + WIRE_SYNC_HEADER_MAX > r->p.max_batch_bytes)
		flush(r, gi, k);
	if (!g->pending) {
		g->pending = true;
		g->first_ms = now_ms;
		g->stamp_us = now_us;
	}
	b->e[b->n++] = *f;
	b->bytes += size;
	delta_add(&b->delta, d);
	if (k > KIND_NEW)
		keyset_add(&g->later[k], h);
}

/* ------------------------------------------------------------- imports */

static void
import_free_all(struct repl *r)
{
	while (r->i_head != NULL) {
		struct import_batch *b = r->i_head;

		r->i_head = b->next;
		free(b->e);
		free(b);
	}
	r->i_tail = NULL;
	r->i_entries = 0;
}

/* Queue one entry for the dataplane; false when the queue is full. */
static bool
import_add(struct repl *r, uint16_t gi, enum wire_flow_event ev, const struct wire_flow *f,
	   uint64_t stamp_us)
{
	struct import_batch *b = r->i_tail;

	if (!r->dp_up)
		return true;    /* the full import at the next connection has it */
	if (r->i_entries >= r->p.import_queue_entries) {
		r->groups[gi].carried.counters[REPL_DROP_IMPORT_QUEUE]++;
		return false;
	}
	if (b == NULL || b->sent || b->ev != ev || b->group != gi || b->n == IMPORT_BATCH_MAX) {
		b = calloc(1, sizeof(*b));
		if (b != NULL && (b->e = malloc(64 * sizeof(*b->e))) == NULL) {
			free(b);
			b = NULL;
		}
		if (b == NULL) {
			r->groups[gi].carried.counters[REPL_DROP_IMPORT_QUEUE]++;
			return false;
		}
		b->cap = 64;
		b->ev = ev;
		b->group = gi;
		b->token = ++r->next_token;
		if (r->i_tail != NULL)
			r->i_tail->next = b;
		else
			r->i_head = b;
		r->i_tail = b;
	}
	if (b->n == b->cap) {
		size_t cap = 4 * b->cap;
		struct wire_flow *e = realloc(b->e, (cap < IMPORT_BATCH_MAX ? cap : IMPORT_BATCH_MAX) *
					      sizeof(*e));

		if (e == NULL) {
			r->groups[gi].carried.counters[REPL_DROP_IMPORT_QUEUE]++;
			return false;
		}
		b->e = e;
		b->cap = cap < IMPORT_BATCH_MAX ? cap : IMPORT_BATCH_MAX;
	}
	b->e[b->n++] = *f;
	if (stamp_us != 0 && (b->stamp_us == 0 || stamp_us < b->stamp_us))
		b->stamp_us = stamp_us;
	r->i_entries++;
	return true;
}

/* The next part of a full import: live entries from the cache. */
static void
import_walk(struct repl *r, uint32_t now_ms)
{
	struct cache_key k;
	struct cache_value v;
	struct wire_flow f;

	while (r->dp_walking && r->i_entries < r->p.import_queue_entries) {
		if (!cache_next(r->cache, &r->dp_cursor, now_ms, &k, &v)) {
			r->dp_walking = false;
			r->dp_last_token = r->i_tail != NULL ? r->i_tail->token : 0;
			if (r->dp_last_token == 0)
				r->dp_synced = true;
			return;
		}
		cache_to_wire(r->cache, &k, &v, now_ms, &f);
		import_add(r, group_of_vip(r, k.vip), WIRE_FLOW_EVENT_NEW, &f, 0);
	}
}

static void
import_pump(struct repl *r, uint32_t now_ms)
{
	struct import_batch *b = r->i_head;

	import_walk(r, now_ms);
	while (b != NULL && r->dp_up) {
		struct import_batch *next = b->next;
		int rc;

		if (!b->sent) {
			rc = r->ops.import(r->arg, b->ev, b->e, b->n, b->token);
			if (rc == -EAGAIN)
				return;
			if (rc == -ENOTCONN) {
				repl_dataplane_down(r);
				return;
			}
			b->sent = true;
			if (rc < 0)
				repl_import_done(r, b->token, false, 0);  /* frees b */
		}
		b = next;
	}
}

void
repl_import_done(struct repl *r, uint64_t token, bool ok, uint64_t now_us)
{
	struct import_batch **link = &r->i_head, *b, *prev = NULL;

	for (b = r->i_head; b != NULL && b->token != token; prev = b, b = b->next)
		link = &b->next;
	if (b == NULL) {
		r->node[REPL_NODE_IMPORT_UNKNOWN]++;
		return;
	}
	*link = b->next;
	if (r->i_tail == b)
		r->i_tail = prev;
	r->i_entries -= b->n;
	if (ok) {
		struct group *g = &r->groups[b->group];

		r->node[REPL_NODE_IMPORT_BATCHES]++;
		g->carried.counters[REPL_IMPORTED] += b->n;
		if (b->stamp_us != 0 && now_us > b->stamp_us)
			lathist_add(&g->carried.import_lag, now_us - b->stamp_us);
	} else {
		r->node[REPL_NODE_IMPORT_ERRORS]++;
	}
	if (!r->dp_walking && !r->dp_synced && token >= r->dp_last_token)
		r->dp_synced = true;
	free(b->e);
	free(b);
}

void
repl_dataplane_up(struct repl *r, uint32_t now_ms)
{
	import_free_all(r);
	r->dp_up = true;
	r->dp_walking = true;
	r->dp_synced = false;
	r->dp_cursor = 0;
	r->node[REPL_NODE_DATAPLANE_RELOADS]++;
	import_pump(r, now_ms);
}

void
repl_dataplane_down(struct repl *r)
{
	r->dp_up = false;
	r->dp_walking = false;
	r->dp_synced = false;
	import_free_all(r);
}

/* ------------------------------------------------------------- exports */

void
repl_on_export(struct repl *r, const struct wire_ctl_flows *fl, uint32_t now_ms,
	       uint64_t now_us)
{
	int k = fl->event == WIRE_FLOW_EVENT_CLOSE ? KIND_CLOSE :
		fl->event == WIRE_FLOW_EVENT_REFRESH ? KIND_REFRESH : KIND_NEW;

	r->node[REPL_NODE_EXPORT_BATCHES]++;
	r->node[REPL_NODE_EXPORT_ENTRIES] += fl->count;
	r->node[REPL_NODE_EXPORT_LOST] += fl->dropped;
	for (size_t i = 0; i < fl->count; i++) {
		struct cache_key key;
		struct cache_value v;
		struct cache_group_stats before;
		uint16_t gi;

		if (cache_from_wire(r->cache, &fl->entries[i], r->p.self, now_ms, &key, &v) < 0) {
			r->node[REPL_NODE_EXPORT_UNKNOWN]++;
			continue;
		}
		gi = group_of_vip(r, key.vip);
		if (r->reconciling)
			v.flags |= CACHE_FLAG_SEEN;
		before = cache_group_stats(r->cache, gi);
		if (k == KIND_CLOSE)
			cache_remove(r->cache, &key);
		else if (cache_upsert(r->cache, &key, &v, now_ms) < 0)
			r->node[REPL_NODE_CACHE_FULL]++;
		if (r->groups[gi].carried.member)
			batch_add(r, gi, k, &fl->entries[i], delta_since(r, gi, before), now_ms,
				  now_us);
	}
}

void
repl_dump_begin(struct repl *r)
{
	cache_unmark_own(r->cache);
	r->reconciling = true;
	r->want_reconcile = false;
}

void
repl_on_dump(struct repl *r, const struct wire_flow *f, size_t n, uint32_t now_ms,
	     uint64_t now_us)
{
	for (size_t i = 0; i < n; i++) {
		struct cache_key key;
		struct cache_value v;
		struct cache_group_stats before;
		uint16_t gi;

		/* a closing flow lingers in the dataplane, it is not live */
		if ((f[i].flags & (WIRE_FLOW_FROM_PEER | WIRE_FLOW_CLOSING)) ||
		    cache_from_wire(r->cache, &f[i], r->p.self, now_ms, &key, &v) < 0)
			continue;
		if (cache_get(r->cache, &key, now_ms, NULL)) {
			cache_mark_seen(r->cache, &key);
			continue;
		}
		v.flags |= CACHE_FLAG_SEEN;
		gi = group_of_vip(r, key.vip);
		before = cache_group_stats(r->cache, gi);
		if (cache_upsert(r->cache, &key, &v, now_ms) < 0) {
			r->node[REPL_NODE_CACHE_FULL]++;
			continue;
		}
		r->node[REPL_NODE_DUMP_ADOPTED]++;
		if (r->groups[gi].carried.member)
			batch_add(r, gi, KIND_NEW, &f[i], delta_since(r, gi, before), now_ms,
				  now_us);
	}
}

/* Own entries the dataplane does not have: gone while we were away. */
void
repl_dump_end(struct repl *r, bool close, uint32_t dp_start_ms, uint32_t now_ms,
	      uint64_t now_us)
{
	uint32_t cursor = 0;
	struct cache_key k;
	struct cache_value v;

	if (!r->reconciling)
		return;
	r->reconciling = false;
	if (!close)
		return;
	while (cache_next(r->cache, &cursor, now_ms, &k, &v)) {
		struct wire_flow f;
		struct cache_group_stats before;
		uint16_t gi;

		if (v.origin != r->p.self || (v.flags & CACHE_FLAG_SEEN))
			continue;
		/* last active before this dataplane started: not its to judge */
		if ((int32_t)(v.expires_ms - r->p.max_idle_ms - dp_start_ms) < 0)
			continue;
		cache_to_wire(r->cache, &k, &v, now_ms, &f);
		gi = group_of_vip(r, k.vip);
		before = cache_group_stats(r->cache, gi);
		cache_remove(r->cache, &k);
		r->node[REPL_NODE_RECONCILED_CLOSES]++;
		if (r->groups[gi].carried.member)
			batch_add(r, gi, KIND_CLOSE, &f, delta_since(r, gi, before), now_ms,
				  now_us);
		import_add(r, gi, WIRE_FLOW_EVENT_CLOSE, &f, 0);
	}
}

void
repl_dump_abort(struct repl *r)
{
	if (r->reconciling)
		r->want_reconcile = true;
	r->reconciling = false;
}

bool
repl_want_reconcile(const struct repl *r)
{
	return r->want_reconcile && !r->reconciling;
}

/* ----------------------------------------------------------- deliveries */

/* Room for n entries in r->scratch (decode and resync buffer). */
static int
scratch_reserve(struct repl *r, size_t n)
{
	struct wire_flow *e;

	if (n <= r->scratch_cap)
		return 0;
	e = realloc(r->scratch, n * sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	r->scratch = e;
	r->scratch_cap = n;
	return 0;
}

/*
 * Check seq against the last one seen from sender. A jump forward (the
 * sender dropped messages: drop_cpg_backlog there) counts once, however
 * far: a gap's size is the sender's word, and a counter moves by no more
 * than one message says. Returns false for a seq not newer than the last
 * (counted: drop_seq_stale): CPG delivers each message of a process once
 * and in order, and a sender's sequence starts again only in a new
 * process, whose predecessor left the group first (repl_on_members()
 * forgot its sequence then). So a stale seq is a replay or another
 * process's: applying it would put an older state over newer ones (a NEW
 * after its CLOSE resurrects the flow), and the agreed order forbids that.
 * The last seq stays, so a replay cannot lower the mark for a gap later.
 */
static bool
seq_check(struct group *g, uint32_t sender, uint64_t seq)
{
	struct peer_seq *free_slot = NULL;

	for (uint32_t i = 0; i < REPL_MEMBERS_MAX; i++) {
		struct peer_seq *p = &g->carried.peers[i];

		if (p->node == sender) {
			if (seq <= p->seq) {
				g->carried.counters[REPL_DROP_SEQ_STALE]++;
				return false;
			}
			if (seq - p->seq > 1)
				g->carried.counters[REPL_SEQ_GAPS]++;
			p->seq = seq;
			return true;
		}
		if (p->node == 0 && free_slot == NULL)
			free_slot = p;
	}
	if (free_slot != NULL)
		*free_slot = (struct peer_seq){ .node = sender, .seq = seq };
	return true;
}

/*
 * Own entries went into the cache at export; when CPG delivers them back,
 * the cache holds this node's latest word on the flow unless a peer's
 * entry for it was delivered in between (agreed order puts ours after).
 * Applying ours again otherwise would undo a later own event still on its
 * way (a CLOSE behind its NEW), and verify answers would count it twice.
 * A peer's CLOSE in between is not told from our own: the flow stays
 * closed here until our dataplane refreshes it.
 */
static bool
own_word_stands(const struct repl *r, const struct cache_key *key, uint32_t now_ms)
{
	struct cache_value v;

	return !cache_get(r->cache, key, now_ms, &v) || v.origin == r->p.self;
}

/*
 * Apply entries delivered on group gi from sender in agreed order. k:
 * NEW, REFRESH or CLOSE; resync entries come as NEW.
 */
static void
apply_entries(struct repl *r, uint16_t gi, uint32_t sender, int k,
	      const struct wire_sync_msg *m, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	bool own = sender == r->p.self;
	bool resync = m->kind == WIRE_SYNC_RESYNC_ENTRIES;

	for (size_t i = 0; i < m->count; i++) {
		const struct wire_flow *f = &m->entries[i];
		struct cache_key key;
		struct cache_value v;
		/* a live batch is its sender's word; a resync keeps each origin */
		uint32_t origin = resync && f->origin != 0 ? f->origin : sender;
		int rc = cache_from_wire(r->cache, f, origin, now_ms, &key, &v);

		if (rc == -ENOENT) {
			g->carried.counters[REPL_REJECTED_VIP]++;
			continue;
		}
		if (rc < 0) {
			g->carried.counters[REPL_REJECTED_BACKEND]++;
			continue;
		}
		if (group_of_vip(r, key.vip) != gi) {
			g->carried.counters[REPL_REJECTED_GROUP]++;
			continue;
		}
		if (own && r->reconciling)
			v.flags |= CACHE_FLAG_SEEN;     /* our dataplane made it */
		if (own && own_word_stands(r, &key, now_ms)) {
			if (r->reconciling && k != KIND_CLOSE)
				cache_mark_seen(r->cache, &key);
			continue;
		}
		if (k == KIND_CLOSE)
			cache_remove(r->cache, &key);
		else if (cache_upsert(r->cache, &key, &v, now_ms) < 0) {
			r->node[REPL_NODE_CACHE_FULL]++;
			continue;
		}
		if (own)
			continue;       /* our dataplane made it */
		g->carried.counters[REPL_ENTRIES_APPLIED]++;
		import_add(r, gi, kind_event[k], f, m->stamp_us);
	}
}

/* ----------------------------------------------------------------- resync */

/* The lowest member above after (0: any) but this node; 0 when alone. */
static uint32_t
pick_donor(const struct repl *r, const struct group *g, uint32_t after)
{
	uint32_t best = 0, lowest = 0;

	for (uint32_t i = 0; i < g->carried.n_members; i++) {
		uint32_t n = g->carried.members[i];

		if (n == r->p.self)
			continue;
		if (lowest == 0 || n < lowest)
			lowest = n;
		if (n > after && (best == 0 || n < best))
			best = n;
	}
	return best != 0 ? best : lowest;
}

/* The lowest member but node (a request naming no donor: that one serves). */
static uint32_t
lowest_but(const struct group *g, uint32_t node)
{
	uint32_t best = 0;

	for (uint32_t i = 0; i < g->carried.n_members; i++)
		if (g->carried.members[i] != node && (best == 0 || g->carried.members[i] < best))
			best = g->carried.members[i];
	return best;
}

/* Count, and log at most once a minute, an event the requester cannot take. */
__attribute__((format(printf, 4, 5)))
static void
resync_refuse(struct group *g, enum resync_event ev, uint32_t now_ms, const char *fmt, ...)
{
	struct resync_requester *rq = &g->carried.rq;
	char why[RESYNC_WHY_MAX];
	va_list ap;

	g->carried.counters[REPL_IMPOSSIBLE_TRANSITIONS]++;
	if (rq->refused_logged && now_ms - rq->refused_ms < RESYNC_REFUSED_LOG_MS)
		return;
	rq->refused_logged = true;
	rq->refused_ms = now_ms;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	qb_log(LOG_ERR, "group %s: resync: %s refused in state %s (donor %u, epoch %u): %s "
	       "(impossible_transitions=%" PRIu64 ")", g->name, resync_event_names[ev],
	       resync_state_names[rq->state], rq->donor, rq->epoch, why,
	       g->carried.counters[REPL_IMPOSSIBLE_TRANSITIONS]);
}

/* The one way the requester moves. 0, or -EPERM: refused, nothing changed. */
static int
resync_move(struct group *g, enum resync_event ev, uint32_t now_ms)
{
	const struct resync_move *m = &resync_moves[g->carried.rq.state][ev];

	if (!m->ok) {
		resync_refuse(g, ev, now_ms, "not a transition of the machine");
		return -EPERM;
	}
	g->carried.rq.state = m->to;
	return 0;
}

/* A donor picked, the request not multicast yet. */
static bool
resync_requesting(const struct group *g)
{
	return g->carried.rq.state == RESYNC_S_REQUESTING ||
	       g->carried.rq.state == RESYNC_S_MERGE_REQUESTING;
}

/* Synced before a partition healed, fetching what the other side made. */
static bool
resync_merging(const struct group *g)
{
	return g->carried.rq.state == RESYNC_S_MERGE_REQUESTING ||
	       g->carried.rq.state == RESYNC_S_MERGE_REQUESTED ||
	       g->carried.rq.state == RESYNC_S_MERGE_RECEIVING;
}

static void
request_send(struct repl *r, uint16_t gi, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct wire_sync_msg m = {
		.kind = WIRE_SYNC_RESYNC_REQUEST, .epoch = g->carried.rq.epoch,
		.peer = g->carried.rq.donor,
	};
	size_t len;
	int rc;

	if (g->carried.q_head != NULL)
		return;         /* after the backlog, from the tick */
	len = encode(r, g, &m);
	rc = len > 0 ? r->ops.send(r->arg, gi, r->buf, len) : -EINVAL;
	if (rc == -EAGAIN) {
		g->carried.seq--;
		g->carried.counters[REPL_CPG_RETRIES]++;
		return;
	}
	resync_move(g, RESYNC_EVT_REQUEST_SENT, now_ms);
	if (rc == 0) {
		g->carried.counters[REPL_MSGS_SENT]++;
		g->carried.counters[REPL_BYTES_SENT] += len;
	}
}

/*
 * Apply ev, which leads to (MERGE_)REQUESTING, and ask the next donor after
 * `after` for everything; synced when alone. 0, or -EPERM: ev refused.
 */
static int
resync_start(struct repl *r, uint16_t gi, enum resync_event ev, uint32_t after,
	     uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct resync_requester *rq = &g->carried.rq;
	uint32_t donor;

	if (resync_move(g, ev, now_ms) < 0)
		return -EPERM;
	donor = pick_donor(r, g, after);
	if (donor == 0)
		return resync_move(g, RESYNC_EVT_ALONE, now_ms) < 0 ? -EPERM : 0;
	rq->donor = donor;
	rq->epoch = rq->epoch + 1 != 0 ? rq->epoch + 1 : 1;
	rq->got = 0;
	rq->start_ms = now_ms;
	g->carried.counters[REPL_RESYNC_REQUESTS]++;
	request_send(r, gi, now_ms);
	return 0;
}

static void
stream_add(struct group *g, uint32_t requester, uint32_t epoch, bool announce)
{
	struct stream *s = NULL;

	for (uint32_t i = 0; i < g->n_streams; i++)
		if (g->streams[i].requester == requester)
			s = &g->streams[i];    /* a newer request replaces it */
	if (s == NULL) {
		if (g->n_streams == STREAMS_MAX)
			return;     /* the requester asks again after a timeout */
		s = &g->streams[g->n_streams++];
	}
	*s = (struct stream){ .requester = requester, .epoch = epoch, .announce = announce,
			      .phase = announce ? STREAM_ENTRIES : STREAM_BEGIN };
	if (!announce)
		g->carried.counters[REPL_RESYNC_SERVED]++;
}

static void
stream_drop(struct group *g, uint32_t i)
{
	g->streams[i] = g->streams[--g->n_streams];
}

static void
stream_enter(const struct group *g, struct stream *s, enum stream_phase phase)
{
	s->phase = phase;
	qb_log(LOG_DEBUG, "group %s: resync stream to node %u, epoch %u: %s (%" PRIu64
	       " entries sent)", g->name, s->requester, s->epoch, stream_phase_names[phase],
	       s->sent);
}

/* Build the stream's next message at the moment it is sent; see repl.h. */
static int
stream_step(struct repl *r, uint16_t gi, struct stream *s, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct wire_sync_msg m = { .epoch = s->epoch, .peer = s->requester };
	struct wire_flow *e = r->scratch;
	uint32_t cursor = s->cursor;
	size_t bytes = WIRE_SYNC_HEADER_MAX, len, n = 0;
	int rc;

	if (s->announce && s->phase != STREAM_ENTRIES) {
		return 1;
	} else if (s->phase == STREAM_BEGIN) {
		m.kind = WIRE_SYNC_RESYNC_BEGIN;
	} else if (s->phase == STREAM_END) {
		m.kind = WIRE_SYNC_RESYNC_END;
		m.entry_count = s->sent;
	} else {
		struct cache_key k;
		struct cache_value v;

		m.kind = s->announce ? WIRE_SYNC_NEW : WIRE_SYNC_RESYNC_ENTRIES;
		for (;;) {
			uint32_t before = cursor;

			if (!cache_next(r->cache, &cursor, now_ms, &k, &v)) {
				break;
			}
			if (group_of_vip(r, k.vip) != gi || (s->announce && v.origin != r->p.self))
				continue;
			cache_to_wire(r->cache, &k, &v, now_ms, &e[n]);
			if (!s->announce)
				e[n].origin = v.origin;
			if (bytes + wire_flow_encoded_size(&e[n]) > RESYNC_MSG_BYTES) {
				cursor = before;
				break;
			}
			bytes += wire_flow_encoded_size(&e[n]);
			n++;
		}
		if (n == 0) {
			stream_enter(g, s, STREAM_END);
			s->cursor = cursor;
			return 0;
		}
		m.entries = e;
		m.count = n;
	}
	len = encode(r, g, &m);
	rc = len > 0 ? r->ops.send(r->arg, gi, r->buf, len) : -EINVAL;
	if (rc == -EAGAIN) {
		g->carried.seq--;
		g->carried.counters[REPL_CPG_RETRIES]++;
		return rc;
	}
	if (rc == 0) {
		g->carried.counters[REPL_MSGS_SENT]++;
		g->carried.counters[REPL_BYTES_SENT] += len;
		g->carried.counters[s->announce ? REPL_ENTRIES_SENT :
				    REPL_RESYNC_ENTRIES_SENT] += n;
	}
	s->cursor = cursor;
	s->sent += n;
	if (s->phase == STREAM_BEGIN)
		stream_enter(g, s, STREAM_ENTRIES);
	else if (s->phase == STREAM_END)
		return 1;       /* done */
	return 0;
}

static void
streams_run(struct repl *r, uint16_t gi, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];

	for (int budget = STREAM_MSGS_PER_TICK; budget > 0 && g->n_streams > 0 &&
	     g->carried.q_head == NULL; budget--) {
		int rc = stream_step(r, gi, &g->streams[0], now_ms);

		if (rc < 0)
			return;
		if (rc == 1)
			stream_drop(g, 0);
	}
}

/*
 * A donor's BEGIN, ENTRIES or END addressed to this node. Every member sees
 * every stream; one addressed here comes from the donor asked, with the
 * epoch asked: CPG delivers nothing of a donor after it left, and a new
 * request is made only once the stream before has ended or its donor left.
 */
static void
on_stream(struct repl *r, uint16_t gi, uint32_t sender, const struct wire_sync_msg *m,
	  uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct resync_requester *rq = &g->carried.rq;
	enum resync_event ev = m->kind == WIRE_SYNC_RESYNC_BEGIN ? RESYNC_EVT_BEGIN :
			       m->kind == WIRE_SYNC_RESYNC_ENTRIES ? RESYNC_EVT_ENTRIES :
			       rq->got == m->entry_count ? RESYNC_EVT_END : RESYNC_EVT_END_SHORT;

	if (sender != rq->donor || m->epoch != rq->epoch) {
		resync_refuse(g, ev, now_ms, "from node %u, epoch %u: not the stream asked",
			      sender, m->epoch);
		return;
	}
	switch (ev) {
	case RESYNC_EVT_BEGIN:
		if (resync_move(g, ev, now_ms) == 0)
			rq->got = 0;
		break;
	case RESYNC_EVT_ENTRIES:
		if (resync_move(g, ev, now_ms) < 0)
			break;
		apply_entries(r, gi, sender, KIND_NEW, m, now_ms);
		rq->got += m->count;
		g->carried.counters[REPL_RESYNC_ENTRIES_RECEIVED] += m->count;
		break;
	case RESYNC_EVT_END:
		if (resync_move(g, ev, now_ms) < 0)
			break;
		rq->import_barrier = r->i_tail != NULL ? r->i_tail->token : 0;
		r->want_reconcile = true;
		g->carried.counters[REPL_RESYNC_COMPLETE]++;
		g->carried.counters[REPL_RESYNC_LAST_MS] = now_ms - rq->start_ms;
		break;
	default:
		if (resync_start(r, gi, ev, rq->donor, now_ms) == 0)
			g->carried.counters[REPL_RESYNC_INCOMPLETE]++;
		break;
	}
}

static void
on_resync(struct repl *r, uint16_t gi, uint32_t sender, const struct wire_sync_msg *m,
	  uint32_t now_ms)
{
	struct group *g = &r->groups[gi];

	switch (m->kind) {
	case WIRE_SYNC_RESYNC_REQUEST:
		if (sender != r->p.self && g->carried.member &&
		    (m->peer == r->p.self || (m->peer == 0 && lowest_but(g, sender) == r->p.self)))
			stream_add(g, sender, m->epoch, false);
		break;
	case WIRE_SYNC_RESYNC_BEGIN:
	case WIRE_SYNC_RESYNC_ENTRIES:
	case WIRE_SYNC_RESYNC_END:
		if (m->peer == r->p.self)
			on_stream(r, gi, sender, m, now_ms);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------- verify */

static void
on_digest(struct repl *r, uint16_t gi, uint32_t sender, const struct wire_sync_msg *m,
	  uint32_t now_ms)
{
	struct group *g = &r->groups[gi];

	if (m->kind == WIRE_SYNC_DIGEST_REQUEST) {
		/*
		 * This point of the agreed order is the same on every member;
		 * own entries applied here ahead of it (batched, or multicast
		 * and not delivered back yet) are not part of it.
		 */
		struct cache_group_stats st = cache_group_digest(r->cache, gi, now_ms,
								 REPL_VERIFY_MARGIN_MS);
		struct verify_delta ahead = inflight_pending(g);
		int64_t entries = (int64_t)(st.own + st.peers) - ahead.entries;
		struct wire_sync_msg d = {
			.kind = WIRE_SYNC_DIGEST, .epoch = m->epoch, .peer = sender,
			.entry_count = entries > 0 ? (uint64_t)entries : 0,
			.digest = st.digest - ahead.digest,
			.maglev_digest = r->maglev_digest,
		};
		size_t len;

		if (!g->carried.member)
			return;
		len = encode(r, g, &d);
		if (len > 0)
			send_or_queue(r, gi, r->buf, len, 0);
		return;
	}
	if (m->peer != r->p.self || m->epoch != g->verify_round ||
	    g->n_answers == REPL_MEMBERS_MAX)
		return;
	for (uint32_t i = 0; i < g->n_answers; i++)
		if (g->answers[i].node == sender)
			return;
	g->answers[g->n_answers++] = (struct repl_digest){
		.node = sender, .entries = m->entry_count, .digest = m->digest,
		.maglev = m->maglev_digest,
	};
}

int
repl_verify_start(struct repl *r, uint16_t gi)
{
	struct group *g;
	struct wire_sync_msg m = { .kind = WIRE_SYNC_DIGEST_REQUEST };
	size_t len;
	int rc;

	if (gi >= r->n_groups || !r->groups[gi].carried.member)
		return -ENOTCONN;
	g = &r->groups[gi];
	m.epoch = g->verify_round + 1 != 0 ? g->verify_round + 1 : 1;
	len = encode(r, g, &m);
	if (len == 0)
		return -EINVAL;
	rc = g->carried.q_head == NULL ? r->ops.send(r->arg, gi, r->buf, len) : -EAGAIN;
	if (rc < 0) {
		g->carried.seq--;
		return rc;
	}
	g->carried.counters[REPL_MSGS_SENT]++;
	g->carried.counters[REPL_BYTES_SENT] += len;
	g->verify_round = m.epoch;
	g->n_answers = 0;
	return (int)m.epoch;
}

size_t
repl_verify_result(const struct repl *r, uint16_t gi, uint32_t round, struct repl_digest *out,
		   size_t cap, uint32_t *members)
{
	const struct group *g;
	size_t n = 0;

	*members = 0;
	if (gi >= r->n_groups)
		return 0;
	g = &r->groups[gi];
	*members = g->carried.n_members;
	if (round != g->verify_round)
		return 0;
	for (uint32_t i = 0; i < g->n_answers && n < cap; i++)
		out[n++] = g->answers[i];
	return n;
}

void
repl_on_deliver(struct repl *r, uint16_t gi, uint32_t sender, const void *buf, size_t len,
		uint32_t now_ms, uint64_t now_us)
{
	struct group *g;
	struct wire_sync_msg m;

	if (gi >= r->n_groups)
		return;
	g = &r->groups[gi];
	if (sender != r->p.self)
		g->carried.counters[REPL_MSGS_RECEIVED]++;
	if (len > MSG_MAX || scratch_reserve(r, len / WIRE_FLOW_ENCODED_MIN + 1) < 0 ||
	    wire_sync_decode(buf, len, &m, r->scratch, r->scratch_cap, &r->wire) < 0) {
		g->carried.counters[REPL_DROP_DECODE]++;
		return;
	}
	if (m.node_id != sender) {
		g->carried.counters[REPL_DROP_SENDER]++;
		return;
	}
	if (m.kind == WIRE_SYNC_NODE_STATE || m.kind == WIRE_SYNC_HEALTH) {
		/* the membership group's, numbered in its sequence, not this one's */
		g->carried.counters[REPL_DROP_KIND]++;
		return;
	}
	if (sender == r->p.self) {
		inflight_delivered(g, m.seq);
	} else {
		if (!seq_check(g, sender, m.seq))
			return;
		if (m.kind <= WIRE_SYNC_CLOSE)
			g->carried.counters[REPL_ENTRIES_RECEIVED] += m.count;
	}
	switch (m.kind) {
	case WIRE_SYNC_NEW:
	case WIRE_SYNC_REFRESH:
	case WIRE_SYNC_CLOSE:
		apply_entries(r, gi, sender, m.kind == WIRE_SYNC_NEW ? KIND_NEW :
			      m.kind == WIRE_SYNC_REFRESH ? KIND_REFRESH : KIND_CLOSE, &m, now_ms);
		if (sender == r->p.self && m.stamp_us != 0 && now_us > m.stamp_us)
			lathist_add(&g->carried.self_lag, now_us - m.stamp_us);
		break;
	case WIRE_SYNC_DIGEST_REQUEST:
	case WIRE_SYNC_DIGEST:
		on_digest(r, gi, sender, &m, now_ms);
		break;
	default:
		on_resync(r, gi, sender, &m, now_ms);
		break;
	}
}

/* ------------------------------------------------------------ membership */

static bool
is_member(const struct group *g, uint32_t node)
{
	for (uint32_t i = 0; i < g->carried.n_members; i++)
		if (g->carried.members[i] == node)
			return true;
	return false;
}

/* The lowest of members[0..n) that was not a member before, but this node. */
static uint32_t
lowest_newcomer(const struct repl *r, const struct group *g, const uint32_t *members, size_t n)
{
	uint32_t best = 0;

	for (size_t i = 0; i < n; i++)
		if (members[i] != r->p.self && !is_member(g, members[i]) &&
		    (best == 0 || members[i] < best))
			best = members[i];
	return best;
}

void
repl_on_members(struct repl *r, uint16_t gi, const uint32_t *members, size_t n, bool self_in,
		bool merged, uint32_t now_ms)
{
	struct group *g;
	uint32_t newcomer;

	if (gi >= r->n_groups)
		return;
	g = &r->groups[gi];
	newcomer = lowest_newcomer(r, g, members, n);
	g->carried.n_members = 0;
	for (size_t i = 0; i < n && g->carried.n_members < REPL_MEMBERS_MAX; i++)
		g->carried.members[g->carried.n_members++] = members[i];
	for (uint32_t i = 0; i < REPL_MEMBERS_MAX; i++)
		if (g->carried.peers[i].node != 0 && !is_member(g, g->carried.peers[i].node))
			g->carried.peers[i] = (struct peer_seq){ 0 };
	for (uint32_t i = 0; i < g->n_streams;)
		if (!g->streams[i].announce && !is_member(g, g->streams[i].requester))
			stream_drop(g, i);
		else
			i++;
	if (!self_in) {
		g->carried.member = false;
		resync_move(g, RESYNC_EVT_LEFT, now_ms);
		g->n_streams = 0;
		queue_clear(g);
		return;
	}
	if (!g->carried.member) {  /* what we made while outside the group */
		stream_add(g, r->p.self, 0, true);
		inflight_clear(g);
	}
	g->carried.member = true;
	if (g->carried.rq.state == RESYNC_S_JOINING) {
		resync_start(r, gi, RESYNC_EVT_JOINED, 0, now_ms);
	} else if (resync_public[g->carried.rq.state] == REPL_RESYNCING &&
		   !is_member(g, g->carried.rq.donor)) {
		if (resync_start(r, gi, RESYNC_EVT_DONOR_LEFT, g->carried.rq.donor, now_ms) == 0)
			g->carried.counters[REPL_RESYNC_INCOMPLETE]++;
	} else if (g->carried.rq.state == RESYNC_S_SYNCED && newcomer != 0 && merged) {
		/* a partition healed: each side lacks what the other made */
		stream_add(g, r->p.self, 0, true);
		if (resync_start(r, gi, RESYNC_EVT_MERGED, newcomer - 1, now_ms) == 0)
			g->carried.counters[REPL_RESYNC_MERGES]++;
	}
}

/* ------------------------------------------------------------------ ticks */

void
repl_tick(struct repl *r, uint32_t now_ms, uint64_t now_us)
{
	for (uint16_t gi = 0; gi < r->n_groups; gi++) {
		struct group *g = &r->groups[gi];

		queue_retry(r, gi);
		if (g->pending && (int32_t)(now_ms - g->first_ms) >= (int32_t)r->p.max_batch_delay_ms)
			flush(r, gi, KINDS - 1);
		if (resync_requesting(g))
			request_send(r, gi, now_ms);
		streams_run(r, gi, now_ms);
		lathist_tick(&g->carried.self_lag, now_us);
		lathist_tick(&g->carried.import_lag, now_us);
	}
	import_pump(r, now_ms);
	r->node[REPL_NODE_EXPIRED] += cache_expire(r->cache, now_ms, SWEEP_PER_TICK);
}

/* --------------------------------------------------------------- set-up */

/* Own messages a group may have in flight: a send queue of full ones, and slack. */
static uint32_t
inflight_cap(const struct repl_params *p)
{
	uint32_t msg = p->max_batch_bytes > 0 ? p->max_batch_bytes : 1;
	uint64_t want = p->send_queue_bytes / msg + INFLIGHT_SLACK;
	uint32_t cap = 64;

	while (cap < want && cap < INFLIGHT_MAX)
		cap *= 2;
	return cap;
}

static int
group_init(struct group *g, const char *name, const struct repl_params *p)
{
	size_t cap = p->max_batch_bytes / WIRE_FLOW_ENCODED_MIN + 1;
	uint32_t set = 64, ring = inflight_cap(p);

	while (set < 2 * cap)
		set *= 2;
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->inflight = calloc(ring, sizeof(*g->inflight));
	g->if_mask = ring - 1;
	if (g->inflight == NULL)
		return -ENOMEM;
	for (int k = 0; k < KINDS; k++) {
		g->out[k].e = calloc(cap, sizeof(struct wire_flow));
		g->out[k].cap = cap;
		if (g->out[k].e == NULL)
			return -ENOMEM;
		if (k == KIND_NEW)
			continue;
		g->later[k].v = calloc(set, sizeof(uint64_t));
		g->later[k].mask = set - 1;
		if (g->later[k].v == NULL)
			return -ENOMEM;
	}
	return 0;
}

static void
group_fini(struct group *g)
{
	for (int k = 0; k < KINDS; k++) {
		free(g->out[k].e);
		free(g->later[k].v);
	}
	queue_clear(g);
	free(g->inflight);
}

static struct group *
groups_create(const struct catalog *cat, const struct repl_params *p)
{
	uint16_t n = catalog_groups(cat);
	struct group *gs = calloc(n ? n : 1, sizeof(*gs));

	if (gs == NULL)
		return NULL;
	for (uint16_t i = 0; i < n; i++)
		if (group_init(&gs[i], catalog_group_name(cat, i), p) < 0) {
			for (uint16_t j = 0; j <= i; j++)
				group_fini(&gs[j]);
			free(gs);
			return NULL;
		}
	return gs;
}

struct repl *
repl_create(const struct catalog *cat, const struct repl_params *p,
	    const struct repl_ops *ops, void *arg)
{
	struct repl *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->p = *p;
	r->ops = *ops;
	r->arg = arg;
	r->cat = cat;
	r->n_groups = catalog_groups(cat);
	r->scratch_cap = RESYNC_MSG_BYTES / WIRE_FLOW_ENCODED_MIN + 1;
	r->scratch = calloc(r->scratch_cap, sizeof(*r->scratch));
	r->buf_len = (p->max_batch_bytes > RESYNC_MSG_BYTES ? p->max_batch_bytes :
		      RESYNC_MSG_BYTES) + WIRE_SYNC_HEADER_MAX;
	r->buf = malloc(r->buf_len);
	r->cache = cache_create(cat, p->self);
	r->groups = groups_create(cat, p);
	if (r->scratch == NULL || r->buf == NULL || r->cache == NULL || r->groups == NULL) {
		repl_destroy(r);
		return NULL;
	}
	return r;
}

void
repl_destroy(struct repl *r)
{
	if (r == NULL)
		return;
	if (r->groups != NULL)
		for (uint16_t i = 0; i < r->n_groups; i++)
			group_fini(&r->groups[i]);
	free(r->groups);
	import_free_all(r);
	cache_destroy(r->cache);
	free(r->scratch);
	free(r->buf);
	free(r);
}

/* Move the state of old group o to new group n (matched by name). */
static void
group_carry(struct group *n, struct group *o)
{
	n->carried = o->carried;
	o->carried.q_head = o->carried.q_tail = NULL;   /* the backlog is n's now */
	/* the ring's slots: the same size, both groups made with one r->p */
	memcpy(n->inflight, o->inflight, (o->if_mask + 1) * sizeof(*n->inflight));
}

int
repl_set_catalog(struct repl *r, const struct catalog *cat, uint32_t now_ms)
{
	struct cache *c = cache_create(cat, r->p.self);
	struct group *gs = groups_create(cat, &r->p);
	uint32_t cursor = 0;
	struct cache_key k;
	struct cache_value v;

	if (c == NULL || gs == NULL) {
		cache_destroy(c);
		if (gs != NULL)
			for (uint16_t i = 0; i < catalog_groups(cat); i++)
				group_fini(&gs[i]);
		free(gs);
		return -ENOMEM;
	}
	/* live entries carry over by address, when the new config has them */
	while (cache_next(r->cache, &cursor, now_ms, &k, &v)) {
		struct wire_flow f;
		struct cache_key nk;
		struct cache_value nv;

		cache_to_wire(r->cache, &k, &v, now_ms, &f);
		if (cache_from_wire(c, &f, v.origin, now_ms, &nk, &nv) < 0)
			r->node[REPL_NODE_RELOAD_DROPPED]++;    /* its VIP or backend is gone */
		else if (cache_upsert(c, &nk, &nv, now_ms) < 0)
			r->node[REPL_NODE_CACHE_FULL]++;
	}
	for (uint16_t i = 0; i < r->n_groups; i++)
		flush(r, i, KINDS - 1);
	for (uint16_t i = 0; i < catalog_groups(cat); i++) {
		int old = catalog_group_find(r->cat, catalog_group_name(cat, i));

		if (old >= 0)
			group_carry(&gs[i], &r->groups[old]);
	}
	for (struct import_batch *b = r->i_head; b != NULL; b = b->next) {
		int n = catalog_group_find(cat, r->groups[b->group].name);

		b->group = n >= 0 ? (uint16_t)n : 0;    /* only counters use it */
	}
	for (uint16_t i = 0; i < r->n_groups; i++)
		group_fini(&r->groups[i]);
	free(r->groups);
	cache_destroy(r->cache);
	r->groups = gs;
	r->n_groups = catalog_groups(cat);
	r->cache = c;
	r->cat = cat;
	return 0;
}

/* --------------------------------------------------------------- status */

bool
repl_busy(const struct repl *r)
{
	for (uint16_t i = 0; i < r->n_groups; i++) {
		const struct group *g = &r->groups[i];

		if (g->pending || g->carried.q_head != NULL || g->n_streams > 0 ||
		    resync_requesting(g))
			return true;
	}
	for (const struct import_batch *b = r->i_head; b != NULL; b = b->next)
		if (!b->sent)
			return true;
	return r->dp_walking;
}

bool
repl_dataplane_synced(const struct repl *r)
{
	return r->dp_synced;
}

/*
 * Every group synced (or, merging_counts, synced before a merge and
 * fetching the rest), the last resync's imports acknowledged, and the
 * dataplane fed with every entry held.
 */
static bool
holds_everything(const struct repl *r, bool merging_counts)
{
	uint64_t head = r->i_head != NULL ? r->i_head->token : UINT64_MAX;

	for (uint16_t i = 0; i < r->n_groups; i++) {
		const struct group *g = &r->groups[i];

		if (g->carried.rq.state != RESYNC_S_SYNCED &&
		    !(merging_counts && resync_merging(g)))
			return false;
		/* imports are acknowledged in order: the head is the oldest */
		if (g->carried.rq.import_barrier != 0 && head <= g->carried.rq.import_barrier)
			return false;
	}
	return r->dp_synced;
}

bool
repl_synced(const struct repl *r)
{
	return holds_everything(r, false);
}

bool
repl_holds_flows(const struct repl *r)
{
	return holds_everything(r, true);
}

uint16_t
repl_groups(const struct repl *r)
{
	return r->n_groups;
}

void
repl_group_status(const struct repl *r, uint16_t gi, struct repl_group_status *st)
{
	const struct group *g = &r->groups[gi];
	struct cache_group_stats cs = cache_group_stats(r->cache, gi);

	memset(st, 0, sizeof(*st));
	st->name = g->name;
	st->state = resync_public[g->carried.rq.state];
	memcpy(st->members, g->carried.members, sizeof(st->members));
	st->n_members = g->carried.n_members;
	st->donor = st->state == REPL_RESYNCING ? g->carried.rq.donor : 0;
	memcpy(st->counters, g->carried.counters, sizeof(st->counters));
	st->send_queue = g->carried.q_len;
	st->entries_own = cs.own;
	st->entries_peers = cs.peers;
	st->digest = cs.digest;
	st->self_lag_p50_us = lathist_quantile(&g->carried.self_lag, 0.50);
	st->self_lag_p99_us = lathist_quantile(&g->carried.self_lag, 0.99);
	st->import_lag_p50_us = lathist_quantile(&g->carried.import_lag, 0.50);
	st->import_lag_p99_us = lathist_quantile(&g->carried.import_lag, 0.99);
}

const uint64_t *
repl_node_counters(const struct repl *r)
{
	return r->node;
}

void
repl_set_max_idle(struct repl *r, uint32_t max_idle_ms)
{
	if (max_idle_ms > r->p.max_idle_ms)
		r->p.max_idle_ms = max_idle_ms;
}

void
repl_set_maglev_digest(struct repl *r, uint64_t digest)
{
	r->maglev_digest = digest;
}

uint64_t
repl_import_queue(const struct repl *r)
{
	return r->i_entries;
}

const struct wire_counters *
repl_wire_counters(const struct repl *r)
{
	return &r->wire;
}

const struct cache *
repl_cache(const struct repl *r)
{
	return r->cache;
}
