/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's entry store. See cache.h. */
#include "syncd/cache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "lib/hash.h"
#include "syncd/catalog.h"

/*
 * Buckets and chains hold links: a slot's index + 1, LINK_NONE ending a
 * chain, so that fresh zero pages are empty buckets (a new bucket array is
 * mapped, not written). Growth doubles the buckets without a pass over
 * the cache: the old array stays beside the new one and every operation
 * moves MIGRATE_STEP old buckets' chains across, lowest first, so the move
 * is done before the count can double again (one bucket per entry at
 * most); a key whose old bucket has not moved yet is still found there.
 */
enum {
	CHUNK_SHIFT = 14,               /* 16384 entries, 640 KiB a chunk */
	CHUNK_SLOTS = 1u << CHUNK_SHIFT,
	CHUNKS_MAX = 1u << (32 - CHUNK_SHIFT),
	SLOT_NONE = UINT32_MAX,
	LINK_NONE = 0,
	BUCKETS_MIN = 1024,
	MIGRATE_STEP = 4,               /* > 1: old buckets moved an operation */
	MIGRATE_AHEAD = 16,             /* buckets: a chain's entry fetched ahead */
};

struct slot {
	struct cache_key key;
	uint32_t next;                  /* link: bucket chain, or the free list */
	uint32_t expires_ms;
	uint32_t origin;
	uint16_t backend;
	uint8_t flags;
	uint8_t used;
};

static_assert(sizeof(struct cache_key) == 24, "cache_key layout");
static_assert(sizeof(struct slot) == 40, "a cache entry is 40 bytes");

struct cache {
	const struct catalog *cat;
	uint32_t self;
	struct hash_key seed;
	struct slot **chunks;           /* grows by doubling, up to CHUNKS_MAX */
	uint32_t n_chunks, cap_chunks;
	uint32_t n_slots;               /* slots handed out so far */
	uint32_t free_list;             /* link */
	uint32_t count;
	uint32_t *buckets;              /* links, mask + 1 of them, mapped */
	uint32_t mask;
	uint32_t *old;                  /* while growing: the half-size array */
	uint32_t migrated;              /* old buckets moved to buckets so far */
	uint32_t sweep;                 /* cache_expire()'s position */
	struct cache_group_stats *groups;
};

static inline struct slot *
slot_at(const struct cache *c, uint32_t i)
{
	return &c->chunks[i >> CHUNK_SHIFT][i & (CHUNK_SLOTS - 1)];
}

static inline bool
expired(uint32_t expires_ms, uint32_t now_ms)
{
	return (int32_t)(expires_ms - now_ms) <= 0;
}

static inline uint32_t
link_of(uint32_t i)
{
	return i + 1;
}

static inline uint32_t
index_of(uint32_t link)
{
	return link - 1;
}

uint32_t
cache_hash(const struct cache *c, const struct cache_key *k)
{
	uint64_t w[sizeof(*k) / sizeof(uint64_t)];

	static_assert(sizeof(*k) % sizeof(uint64_t) == 0, "a key is whole words");
	memcpy(w, k, sizeof(w));
	return (uint32_t)hash_sip13_words(&c->seed, w, sizeof(w) / sizeof(w[0]));
}

/* The bucket of hash h, in the old array while its chain has not moved. */
static inline uint32_t *
bucket_of(const struct cache *c, uint32_t h)
{
	uint32_t half = (c->mask + 1) / 2;

	if (c->old != NULL && (h & (half - 1)) >= c->migrated)
		return &c->old[h & (half - 1)];
	return &c->buckets[h & c->mask];
}

static uint32_t *
buckets_map(uint32_t n)
{
	void *p = mmap(NULL, (size_t)n * sizeof(uint32_t), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void
buckets_unmap(uint32_t *b, uint32_t n)
{
	if (b != NULL)
		munmap(b, (size_t)n * sizeof(uint32_t));
}

/* The entry's share of its group's digest: its addresses, not indices. */
static uint64_t
entry_hash(const struct cache *c, const struct cache_key *k, uint16_t backend)
{
	const struct catalog_vip *v = catalog_vip(c->cat, k->vip);
	struct {
		uint64_t vip, backend;
		uint8_t client[WIRE_ADDR_MAX];
		uint16_t vip_port, client_port;
		uint32_t pad;
	} in = {
		.vip = v->hash,
		.backend = backend < v->n_backends ? v->backends[backend].hash : 0,
		.vip_port = k->vip_port,
		.client_port = k->client_port,
	};

	memcpy(in.client, k->client, sizeof(in.client));
	return catalog_hash(&in, sizeof(in));
}

/* Add (sign 1) or take away (sign -1) slot s from its group's stats. */
static void
account(struct cache *c, const struct slot *s, int sign)
{
	struct cache_group_stats *g = &c->groups[catalog_vip(c->cat, s->key.vip)->group];
	uint64_t h = entry_hash(c, &s->key, s->backend);

	if (sign > 0) {
		g->digest += h;
		*(s->origin == c->self ? &g->own : &g->peers) += 1;
	} else {
		g->digest -= h;
		*(s->origin == c->self ? &g->own : &g->peers) -= 1;
	}
}

struct cache *
cache_create(const struct catalog *cat, uint32_t self)
{
	struct cache *c = calloc(1, sizeof(*c));
	uint8_t seed[16];

	if (c == NULL)
		return NULL;
	c->cat = cat;
	c->self = self;
	if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
		memset(seed, 0x5a, sizeof(seed));
	c->seed = hash_key_from_bytes(seed);
	c->free_list = LINK_NONE;
	c->buckets = buckets_map(BUCKETS_MIN);
	c->mask = BUCKETS_MIN - 1;
	c->groups = calloc(catalog_groups(cat) ? catalog_groups(cat) : 1, sizeof(*c->groups));
	if (c->buckets == NULL || c->groups == NULL) {
		cache_destroy(c);
		return NULL;
	}
	return c;
}

void
cache_destroy(struct cache *c)
{
	if (c == NULL)
		return;
	if (c->chunks != NULL)
		for (uint32_t i = 0; i < c->n_chunks; i++)
			free(c->chunks[i]);
	free(c->chunks);
	buckets_unmap(c->buckets, c->mask + 1);
	buckets_unmap(c->old, (c->mask + 1) / 2);
	free(c->groups);
	free(c);
}

int
cache_from_wire(const struct cache *c, const struct wire_flow *f, uint32_t origin,
		uint32_t now_ms, struct cache_key *k, struct cache_value *v)
{
	uint16_t vip = 0, backend = 0;
	int rc = catalog_find(c->cat, f, &vip, &backend);

	if (rc < 0)
		return rc;
	memset(k, 0, sizeof(*k));
	memcpy(k->client, f->client, f->family == AF_INET ? 4 : WIRE_ADDR_MAX);
	k->client_port = f->client_port;
	k->vip_port = f->vip_port;
	k->vip = vip;
	*v = (struct cache_value){
		.backend = backend,
		.flags = (uint8_t)(f->flags & WIRE_FLOW_FLAGS_ALL),
		.expires_ms = now_ms + f->lifetime_ms,
		.origin = origin,
	};
	return 0;
}

void
cache_to_wire(const struct cache *c, const struct cache_key *k, const struct cache_value *v,
	      uint32_t now_ms, struct wire_flow *f)
{
	int32_t left = (int32_t)(v->expires_ms - now_ms);

	catalog_flow(c->cat, k->vip, k->vip_port, k->client, k->client_port, v->backend, f);
	f->lifetime_ms = left > 0 ? (uint32_t)left : 0;
	f->flags = v->flags & WIRE_FLOW_FLAGS_ALL;
	f->origin = 0;          /* the resync sets it, live batches need not */
}

/* The slot index of k (hash h), and the link that points at it (for unlinking). */
static uint32_t
find(const struct cache *c, const struct cache_key *k, uint32_t h, uint32_t **link)
{
	uint32_t *l = bucket_of(c, h);

	for (uint32_t i = *l; i != LINK_NONE; i = *l) {
		struct slot *s = slot_at(c, index_of(i));

		if (memcmp(&s->key, k, sizeof(*k)) == 0) {
			if (link != NULL)
				*link = l;
			return index_of(i);
		}
		l = &s->next;
	}
	return SLOT_NONE;
}

/*
 * Move up to n old buckets' chains into the new array; unmap the old one
 * once all have moved. Each entry goes to bucket b or b + half of the new
 * array, where b is its old bucket.
 */
static void
migrate(struct cache *c, uint32_t n)
{
	uint32_t half = (c->mask + 1) / 2;

	if (c->old == NULL)
		return;
	for (; n > 0 && c->migrated < half; n--) {
		uint32_t *ob = &c->old[c->migrated];
		uint32_t ahead = c->migrated + MIGRATE_AHEAD;

		/* the chains are in random places: fetch later ones meanwhile */
		if (ahead < half && c->old[ahead] != LINK_NONE)
			__builtin_prefetch(slot_at(c, index_of(c->old[ahead])));
		while (*ob != LINK_NONE) {
			uint32_t i = index_of(*ob);
			struct slot *s = slot_at(c, i);
			uint32_t *nb = &c->buckets[cache_hash(c, &s->key) & c->mask];

			*ob = s->next;
			s->next = *nb;
			*nb = link_of(i);
		}
		c->migrated++;
	}
	if (c->migrated == half) {
		buckets_unmap(c->old, half);
		c->old = NULL;
	}
}

/* Start doubling the buckets (at most one bucket per slot). */
static void
grow_buckets(struct cache *c)
{
	uint32_t n = (c->mask + 1) * 2;
	uint32_t *b;

	if (c->old != NULL || n == 0 || (b = buckets_map(n)) == NULL)
		return;         /* longer chains, still correct */
	c->old = c->buckets;
	c->buckets = b;
	c->mask = n - 1;
	c->migrated = 0;
}

static uint32_t
slot_alloc(struct cache *c)
{
	if (c->free_list != LINK_NONE) {
		uint32_t i = index_of(c->free_list);

		c->free_list = slot_at(c, i)->next;
		return i;
	}
	if (c->n_slots == c->n_chunks * CHUNK_SLOTS) {
		if (c->n_chunks == CHUNKS_MAX - 1)  /* keep SLOT_NONE out of range */
			return SLOT_NONE;
		if (c->n_chunks == c->cap_chunks) {
			uint32_t cap = c->cap_chunks ? 2 * c->cap_chunks : 8;
			struct slot **v = realloc(c->chunks, cap * sizeof(*v));

			if (v == NULL)
				return SLOT_NONE;
			c->chunks = v;
			c->cap_chunks = cap;
		}
		c->chunks[c->n_chunks] = calloc(CHUNK_SLOTS, sizeof(struct slot));
		if (c->chunks[c->n_chunks] == NULL)
			return SLOT_NONE;
		c->n_chunks++;
	}
	return c->n_slots++;
}

int
cache_upsert_hashed(struct cache *c, const struct cache_key *k, uint32_t h,
		    const struct cache_value *v, uint32_t now_ms)
{
	uint32_t i;
	struct slot *s;
	int fresh = 1;

	migrate(c, MIGRATE_STEP);
	i = find(c, k, h, NULL);
	if (i != SLOT_NONE) {
		s = slot_at(c, i);
		fresh = expired(s->expires_ms, now_ms);
		if (s->backend == v->backend && s->origin == v->origin) {
			/* the same entry again (a refresh, our own message coming
			 * back): its digest and counts stand */
			s->flags = v->flags | (s->flags & CACHE_FLAG_SEEN);
			s->expires_ms = v->expires_ms;
			return fresh;
		}
		account(c, s, -1);
	} else {
		uint32_t *b;

		i = slot_alloc(c);
		if (i == SLOT_NONE)
			return -ENOMEM;
		s = slot_at(c, i);
		s->key = *k;
		s->used = 1;
		b = bucket_of(c, h);
		s->next = *b;
		*b = link_of(i);
		c->count++;
	}
	s->backend = v->backend;
	s->flags = v->flags | (fresh ? 0 : s->flags & CACHE_FLAG_SEEN);
	s->expires_ms = v->expires_ms;
	s->origin = v->origin;
	account(c, s, 1);
	if (c->count > c->mask + 1)
		grow_buckets(c);
	return fresh;
}

void
cache_prefetch(const struct cache *c, const uint32_t *h, size_t n)
{
	for (size_t j = 0; j < n; j++)
		__builtin_prefetch(bucket_of(c, h[j]));
	for (size_t j = 0; j < n; j++) {
		uint32_t l = *bucket_of(c, h[j]);

		if (l != LINK_NONE)
			__builtin_prefetch(slot_at(c, index_of(l)));
	}
}

static void
unlink_slot(struct cache *c, uint32_t i, uint32_t *link)
{
	struct slot *s = slot_at(c, i);

	account(c, s, -1);
	*link = s->next;
	memset(s, 0, sizeof(*s));
	s->next = c->free_list;
	c->free_list = link_of(i);
	c->count--;
}

bool
cache_mark_seen_hashed(struct cache *c, const struct cache_key *k, uint32_t h)
{
	uint32_t i = find(c, k, h, NULL);

	if (i == SLOT_NONE)
		return false;
	slot_at(c, i)->flags |= CACHE_FLAG_SEEN;
	return true;
}

void
cache_unmark_own(struct cache *c)
{
	for (uint32_t i = 0; i < c->n_slots; i++) {
		struct slot *s = slot_at(c, i);

		if (s->used && s->origin == c->self)
			s->flags &= (uint8_t)~CACHE_FLAG_SEEN;
	}
}

bool
cache_remove_hashed(struct cache *c, const struct cache_key *k, uint32_t h)
{
	uint32_t *link = NULL;
	uint32_t i;

	migrate(c, MIGRATE_STEP);
	i = find(c, k, h, &link);
	if (i == SLOT_NONE)
		return false;
	unlink_slot(c, i, link);
	return true;
}

bool
cache_get_hashed(const struct cache *c, const struct cache_key *k, uint32_t h, uint32_t now_ms,
		 struct cache_value *v)
{
	uint32_t i = find(c, k, h, NULL);
	const struct slot *s;

	if (i == SLOT_NONE)
		return false;
	s = slot_at(c, i);
	if (expired(s->expires_ms, now_ms))
		return false;
	if (v != NULL)
		*v = (struct cache_value){ .backend = s->backend, .flags = s->flags,
					   .expires_ms = s->expires_ms, .origin = s->origin };
	return true;
}

bool
cache_next(const struct cache *c, uint32_t *cursor, uint32_t now_ms, struct cache_key *k,
	   struct cache_value *v)
{
	for (uint32_t i = *cursor; i < c->n_slots; i++) {
		const struct slot *s = slot_at(c, i);

		if (!s->used || expired(s->expires_ms, now_ms))
			continue;
		*k = s->key;
		*v = (struct cache_value){ .backend = s->backend, .flags = s->flags,
					   .expires_ms = s->expires_ms, .origin = s->origin };
		*cursor = i + 1;
		return true;
	}
	*cursor = c->n_slots;
	return false;
}

uint32_t
cache_expire(struct cache *c, uint32_t now_ms, uint32_t budget)
{
	uint32_t freed = 0;

	migrate(c, MIGRATE_STEP);
	for (; budget > 0 && c->n_slots > 0; budget--) {
		uint32_t i = c->sweep++ % c->n_slots;
		struct slot *s = slot_at(c, i);
		uint32_t *link = NULL;

		if (c->sweep >= c->n_slots)
			c->sweep = 0;
		if (!s->used || !expired(s->expires_ms, now_ms))
			continue;
		if (find(c, &s->key, cache_hash(c, &s->key), &link) == i) {
			unlink_slot(c, i, link);
			freed++;
		}
	}
	return freed;
}

uint32_t
cache_count(const struct cache *c)
{
	return c->count;
}

size_t
cache_bytes(const struct cache *c)
{
	return sizeof(*c) + c->cap_chunks * sizeof(*c->chunks) +
	       (size_t)c->n_chunks * CHUNK_SLOTS * sizeof(struct slot) +
	       (size_t)(c->mask + 1) * sizeof(*c->buckets) +
	       (c->old != NULL ? (size_t)(c->mask + 1) / 2 * sizeof(*c->old) : 0) +
	       catalog_groups(c->cat) * sizeof(*c->groups);
}

struct cache_group_stats
cache_group_stats(const struct cache *c, uint16_t group)
{
	if (group >= catalog_groups(c->cat))
		return (struct cache_group_stats){ 0 };
	return c->groups[group];
}

struct cache_group_stats
cache_group_digest(const struct cache *c, uint16_t group, uint32_t now_ms, uint32_t margin_ms)
{
	struct cache_group_stats st = { 0 };

	for (uint32_t i = 0; i < c->n_slots; i++) {
		const struct slot *s = slot_at(c, i);

		if (!s->used || expired(s->expires_ms, now_ms + margin_ms) ||
		    catalog_vip(c->cat, s->key.vip)->group != group)
			continue;
		st.digest += entry_hash(c, &s->key, s->backend);
		*(s->origin == c->self ? &st.own : &st.peers) += 1;
	}
	return st;
}
