/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine: set-up, reloads, ticks, status. See repl.h for the rules. */
#include "syncd/repl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/lagcum.h"
#include "syncd/lathist.h"
#include "lib/hash.h"
#include "syncd/repl_private.h"

enum {
	SWEEP_PER_TICK = 2048,          /* cache slots visited per tick */
	INFLIGHT_SLACK = 1024,          /* own messages in flight beyond a send
					 * queue of full ones: a second of
					 * partial batches at the shortest delay */
	INFLIGHT_MAX = 1 << 16,
};

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

/* ------------------------------------------------------------------ ticks */

void
repl_tick(struct repl *r, uint32_t now_ms, uint64_t now_us)
{
	for (uint16_t gi = 0; gi < r->n_groups; gi++) {
		struct group *g = &r->groups[gi];

		repl_queue_retry(r, gi);
		repl_flush_due(r, gi, now_ms);
		repl_resync_tick(r, gi, now_ms);
		lathist_tick(&g->carried.self_lag, now_us);
		lathist_tick(&g->carried.import_lag, now_us);
	}
	repl_import_pump(r, now_ms);
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
	size_t cap = p->max_batch_bytes / WIRE_SYNC_ENTRY_MIN + 1;
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
	repl_queue_clear(g);
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

void
repl_say(const struct repl *r, int priority, const char *fmt, ...)
{
	char line[REPL_LOG_LINE_MAX];
	va_list ap;

	if (r->ops.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->ops.log(r->arg, priority, line);
}

void
repl_lookup_batch(const struct repl *r, struct lookup_batch *b, const struct wire_flow *f,
		  size_t n, uint32_t origin, bool keep_origin, uint32_t now_ms)
{
	b->n = n < LOOKUP_BATCH ? n : LOOKUP_BATCH;
	for (size_t i = 0; i < b->n; i++) {
		uint32_t o = keep_origin && f[i].origin != 0 ? f[i].origin : origin;

		b->rc[i] = cache_from_wire(r->cache, &f[i], o, now_ms, &b->key[i], &b->v[i]);
		b->hash[i] = b->rc[i] == 0 ? cache_hash(r->cache, &b->key[i]) : 0;
	}
	cache_prefetch(r->cache, b->hash, b->n);
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
	r->scratch_cap = RESYNC_MSG_BYTES / WIRE_SYNC_ENTRY_MIN + 1;
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
	repl_import_free_all(r);
	cache_destroy(r->cache);
	free(r->scratch);
	free(r->buf);
	free(r->vip_digests);
	free(r);
}

static void group_digests(struct repl *r);

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
		repl_flush(r, i, KINDS - 1);
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
	group_digests(r);
	return 0;
}

/* --------------------------------------------------------------- status */

bool
repl_busy(const struct repl *r)
{
	for (uint16_t i = 0; i < r->n_groups; i++) {
		const struct group *g = &r->groups[i];

		if (g->pending || g->carried.q_head != NULL || g->n_streams > 0 ||
		    repl_resync_requesting(g))
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
		    !(merging_counts && repl_resync_merging(g)))
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
	st->state = repl_group_state(g);
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
	lagcum_to_wire(&g->carried.self_lag_cum, &st->self_lag);
	lagcum_to_wire(&g->carried.import_lag_cum, &st->import_lag);
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

/* Each group's Maglev digest from the VIP list, for the catalog in use. */
static void
group_digests(struct repl *r)
{
	for (uint16_t gi = 0; gi < r->n_groups; gi++)
		r->groups[gi].maglev_digest = 0;
	for (size_t i = 0; i < r->n_vip_digests; i++) {
		const struct repl_vip_digest *d = &r->vip_digests[i];
		int v = catalog_vip_find(r->cat, d->name);

		if (v >= 0)     /* a VIP syncd's config lacks says nothing */
			r->groups[catalog_vip(r->cat, (uint16_t)v)->group].maglev_digest +=
				hash_vip_digest(d->name, d->digest);
	}
}

int
repl_set_vip_digests(struct repl *r, const struct repl_vip_digest *v, size_t n)
{
	struct repl_vip_digest *copy = NULL;

	if (n > 0) {
		copy = malloc(n * sizeof(*copy));
		if (copy == NULL)
			return -ENOMEM;
		memcpy(copy, v, n * sizeof(*copy));
		for (size_t i = 0; i < n; i++)
			copy[i].name[sizeof(copy[i].name) - 1] = 0;
	}
	free(r->vip_digests);
	r->vip_digests = copy;
	r->n_vip_digests = n;
	group_digests(r);
	return 0;
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
