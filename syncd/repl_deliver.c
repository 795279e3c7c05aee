/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine: what CPG delivers, applied in agreed order; verify. */
#include "syncd/repl_private.h"

#include <errno.h>
#include <stdlib.h>

#include "syncd/cache.h"
#include "syncd/lagcum.h"
#include "syncd/lathist.h"

enum {
	MSG_MAX = 1 << 20,              /* largest message decoded */
};

static const enum wire_flow_event kind_event[KINDS] = {
	WIRE_FLOW_EVENT_NEW, WIRE_FLOW_EVENT_REFRESH, WIRE_FLOW_EVENT_CLOSE,
};

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
own_word_stands(const struct repl *r, const struct cache_key *key, uint32_t h, uint32_t now_ms)
{
	struct cache_value v;

	return !cache_get_hashed(r->cache, key, h, now_ms, &v) || v.origin == r->p.self;
}

/* Apply entry i of b, f[i] on the wire; see repl_apply_entries(). */
static void
apply_entry(struct repl *r, uint16_t gi, bool own, int k, const struct lookup_batch *b,
	    size_t i, const struct wire_flow *f, uint64_t stamp_us, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	const struct cache_key *key = &b->key[i];
	struct cache_value v = b->v[i];

	if (b->rc[i] == -ENOENT) {
		g->carried.counters[REPL_REJECTED_VIP]++;
		return;
	}
	if (b->rc[i] < 0) {
		g->carried.counters[REPL_REJECTED_BACKEND]++;
		return;
	}
	if (repl_group_of_vip(r, key->vip) != gi) {
		g->carried.counters[REPL_REJECTED_GROUP]++;
		return;
	}
	if (own && r->reconciling)
		v.flags |= CACHE_FLAG_SEEN;     /* our dataplane made it */
	if (own && own_word_stands(r, key, b->hash[i], now_ms)) {
		if (r->reconciling && k != KIND_CLOSE)
			cache_mark_seen_hashed(r->cache, key, b->hash[i]);
		return;
	}
	if (k == KIND_CLOSE)
		cache_remove_hashed(r->cache, key, b->hash[i]);
	else if (cache_upsert_hashed(r->cache, key, b->hash[i], &v, now_ms) < 0) {
		r->node[REPL_NODE_CACHE_FULL]++;
		return;
	}
	if (own)
		return;         /* our dataplane made it */
	g->carried.counters[REPL_ENTRIES_APPLIED]++;
	repl_import_add(r, gi, kind_event[k], f, stamp_us);
}

/*
 * Apply entries delivered on group gi from sender in agreed order. k:
 * NEW, REFRESH or CLOSE; resync entries come as NEW. A live batch is its
 * sender's word; a resync keeps each entry's origin.
 */
void
repl_apply_entries(struct repl *r, uint16_t gi, uint32_t sender, int k,
		   const struct wire_sync_msg *m, uint32_t now_ms)
{
	bool own = sender == r->p.self;
	bool resync = m->kind == WIRE_SYNC_RESYNC_ENTRIES;
	struct lookup_batch b;

	for (size_t base = 0; base < m->count; base += b.n) {
		const struct wire_flow *f = &m->entries[base];

		repl_lookup_batch(r, &b, f, m->count - base, sender, resync, now_ms);
		for (size_t i = 0; i < b.n; i++)
			apply_entry(r, gi, own, k, &b, i, &f[i], m->stamp_us, now_ms);
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
		struct verify_delta ahead = repl_inflight_pending(g);
		int64_t entries = (int64_t)(st.own + st.peers) - ahead.entries;
		struct wire_sync_msg d = {
			.kind = WIRE_SYNC_DIGEST, .epoch = m->epoch, .peer = sender,
			.entry_count = entries > 0 ? (uint64_t)entries : 0,
			.digest = st.digest - ahead.digest,
			.maglev_digest = g->maglev_digest,
		};
		size_t len;

		if (!g->carried.member)
			return;
		len = repl_encode(r, g, &d);
		if (len > 0)
			repl_send_or_queue(r, gi, r->buf, len, 0);
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
	len = repl_encode(r, g, &m);
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
	if (len > MSG_MAX || scratch_reserve(r, len / WIRE_SYNC_ENTRY_MIN + 1) < 0 ||
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
		repl_inflight_delivered(g, m.seq);
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
		repl_apply_entries(r, gi, sender, m.kind == WIRE_SYNC_NEW ? KIND_NEW :
				   m.kind == WIRE_SYNC_REFRESH ? KIND_REFRESH : KIND_CLOSE,
				   &m, now_ms);
		if (sender == r->p.self && m.stamp_us != 0 && now_us > m.stamp_us) {
			lathist_add(&g->carried.self_lag, now_us - m.stamp_us);
			lagcum_add(&g->carried.self_lag_cum, now_us - m.stamp_us);
		}
		break;
	case WIRE_SYNC_DIGEST_REQUEST:
	case WIRE_SYNC_DIGEST:
		on_digest(r, gi, sender, &m, now_ms);
		break;
	default:
		repl_resync_deliver(r, gi, sender, &m, now_ms);
		break;
	}
}
