/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine: the local dataplane's exports and its reconciliation. */
#include "syncd/repl_private.h"

#include "syncd/cache.h"

void
repl_on_export(struct repl *r, const struct wire_ctl_flows *fl, uint32_t now_ms,
	       uint64_t now_us)
{
	int k = fl->event == WIRE_FLOW_EVENT_CLOSE ? KIND_CLOSE :
		fl->event == WIRE_FLOW_EVENT_REFRESH ? KIND_REFRESH : KIND_NEW;
	struct lookup_batch b;

	r->node[REPL_NODE_EXPORT_BATCHES]++;
	r->node[REPL_NODE_EXPORT_ENTRIES] += fl->count;
	r->node[REPL_NODE_EXPORT_LOST] += fl->dropped;

	for (size_t base = 0; base < fl->count; base += b.n) {
		const struct wire_flow *f = &fl->entries[base];

		repl_lookup_batch(r, &b, f, fl->count - base, r->p.self, false, now_ms);
		for (size_t i = 0; i < b.n; i++) {
			struct cache_group_stats before;
			uint16_t gi;

			if (b.rc[i] < 0) {
				r->node[REPL_NODE_EXPORT_UNKNOWN]++;
				continue;
			}
			gi = repl_group_of_vip(r, b.key[i].vip);
			if (r->reconciling)
				b.v[i].flags |= CACHE_FLAG_SEEN;
			before = cache_group_stats(r->cache, gi);
			if (k == KIND_CLOSE)
				cache_remove_hashed(r->cache, &b.key[i], b.hash[i]);
			else if (cache_upsert_hashed(r->cache, &b.key[i], b.hash[i], &b.v[i],
						     now_ms) < 0)
				r->node[REPL_NODE_CACHE_FULL]++;
			if (r->groups[gi].carried.member)
				repl_batch_add(r, gi, k, &f[i], repl_delta_since(r, gi, before),
					       now_ms, now_us);
		}
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
		gi = repl_group_of_vip(r, key.vip);
		before = cache_group_stats(r->cache, gi);
		if (cache_upsert(r->cache, &key, &v, now_ms) < 0) {
			r->node[REPL_NODE_CACHE_FULL]++;
			continue;
		}
		r->node[REPL_NODE_DUMP_ADOPTED]++;
		if (r->groups[gi].carried.member)
			repl_batch_add(r, gi, KIND_NEW, &f[i], repl_delta_since(r, gi, before),
				       now_ms, now_us);
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
		gi = repl_group_of_vip(r, k.vip);
		before = cache_group_stats(r->cache, gi);
		cache_remove(r->cache, &k);
		r->node[REPL_NODE_RECONCILED_CLOSES]++;
		if (r->groups[gi].carried.member)
			repl_batch_add(r, gi, KIND_CLOSE, &f, repl_delta_since(r, gi, before),
				       now_ms, now_us);
		repl_import_add(r, gi, WIRE_FLOW_EVENT_CLOSE, &f, 0);
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
