/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine: batches, what is in flight for verify, the CPG backlog. */
#include "syncd/repl_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cache.h"

static const enum wire_sync_kind kind_wire[KINDS] = {
	WIRE_SYNC_NEW, WIRE_SYNC_REFRESH, WIRE_SYNC_CLOSE,
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
struct verify_delta
repl_delta_since(const struct repl *r, uint16_t gi, struct cache_group_stats before)
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
void
repl_inflight_delivered(struct group *g, uint64_t seq)
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
void
repl_inflight_clear(struct group *g)
{
	g->carried.if_head = g->carried.if_len = 0;
	g->carried.if_sum = (struct verify_delta){ 0 };
	for (int k = 0; k < KINDS; k++)
		g->out[k].delta = (struct verify_delta){ 0 };
}

/* What this node holds of gi ahead of the agreed order: batched or in flight. */
struct verify_delta
repl_inflight_pending(const struct group *g)
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
void
repl_send_or_queue(struct repl *r, uint16_t gi, const uint8_t *buf, size_t len, uint32_t entries)
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

/*
 * Send what waits for CPG, oldest first, until it is busy again or
 * QUEUE_SENDS_PER_CALL went: each send is a round trip to corosync, and a
 * full backlog drained in one call would keep the loop from everything
 * else for seconds. The tick calls again within a millisecond while any
 * is left.
 */
void
repl_queue_retry(struct repl *r, uint16_t gi)
{
	struct group *g = &r->groups[gi];

	for (unsigned n = 0; g->carried.q_head != NULL && n < QUEUE_SENDS_PER_CALL; n++) {
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

void
repl_queue_clear(struct group *g)
{
	while (g->carried.q_head != NULL) {
		struct queued_msg *q = g->carried.q_head;

		g->carried.q_head = q->next;
		free(q);
	}
	g->carried.q_tail = NULL;
	g->carried.q_bytes = 0;
	g->carried.q_len = 0;
	repl_inflight_clear(g);
}

/* Encode m (its node id and seq set here) into r->buf. Length or 0. */
size_t
repl_encode(struct repl *r, struct group *g, struct wire_sync_msg *m)
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
void
repl_flush(struct repl *r, uint16_t gi, int upto)
{
	struct group *g = &r->groups[gi];

	for (int k = 0; k <= upto; k++) {
		struct batch *b = &g->out[k];
		struct wire_sync_msg m = {
			.kind = kind_wire[k], .entries = b->e, .count = b->n,
			.stamp_us = b->stamp_us,
		};
		size_t len;

		if (b->n == 0)
			continue;
		len = repl_encode(r, g, &m);
		if (len > 0) {
			inflight_push(g, g->carried.seq, b->delta);
			repl_send_or_queue(r, gi, r->buf, len, (uint32_t)b->n);
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
 * Send the batches that waited max_batch_delay_ms since their first entry,
 * each with those of earlier kinds (a flow's events keep their order).
 */
void
repl_flush_due(struct repl *r, uint16_t gi, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];

	if (!g->pending)
		return;
	for (int k = KINDS - 1; k >= 0; k--) {
		const struct batch *b = &g->out[k];

		if (b->n > 0 &&
		    (int32_t)(now_ms - b->first_ms) >= (int32_t)r->p.max_batch_delay_ms) {
			repl_flush(r, gi, k);
			return;
		}
	}
}

/*
 * Add one of this node's entries to the group's outgoing batch of kind k;
 * d: what applying it here changed in the group's digest and count.
 */
void
repl_batch_add(struct repl *r, uint16_t gi, int k, const struct wire_flow *f,
	       struct verify_delta d, uint32_t now_ms, uint64_t now_us)
{
	struct group *g = &r->groups[gi];
	struct batch *b = &g->out[k];
	size_t size = wire_sync_entry_size(kind_wire[k], f);
	uint64_t h = flow_hash(f);

	/* a later event of a flow must not overtake an earlier one */
	for (int later = k + 1; later < KINDS; later++)
		if (g->out[later].n > 0 && keyset_has(&g->later[later], h)) {
			repl_flush(r, gi, KINDS - 1);
			break;
		}
	if (b->n == b->cap || b->bytes + size + WIRE_SYNC_HEADER_MAX > r->p.max_batch_bytes)
		repl_flush(r, gi, k);
	if (b->n == 0) {
		b->first_ms = now_ms;
		b->stamp_us = now_us;
	}
	g->pending = true;
	b->e[b->n++] = *f;
	b->bytes += size;
	delta_add(&b->delta, d);
	if (k > KIND_NEW)
		keyset_add(&g->later[k], h);
}
