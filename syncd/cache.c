/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's entry store. See cache.h. */
#include "syncd/cache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "lib/hash.h"
#include "syncd/catalog.h"

enum {
	CHUNK_SHIFT = 14,               /* 16384 entries, 640 KiB a chunk */
	CHUNK_SLOTS = 1u << CHUNK_SHIFT,
	CHUNKS_MAX = 1u << (32 - CHUNK_SHIFT),
	SLOT_NONE = UINT32_MAX,
	BUCKETS_MIN = 1024,
};

struct slot {
	struct cache_key key;
	uint32_t next;                  /* bucket chain, or the free list */
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
	uint32_t free_list;
	uint32_t count;
	uint32_t *buckets;
	uint32_t mask;                  /* buckets - 1 */
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
bucket_of(const struct cache *c, const struct cache_key *k)
{
	return (uint32_t)hash_sip24(&c->seed, k, sizeof(*k)) & c->mask;
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
	c->free_list = SLOT_NONE;
	c->buckets = malloc(BUCKETS_MIN * sizeof(*c->buckets));
	c->groups = calloc(catalog_groups(cat) ? catalog_groups(cat) : 1, sizeof(*c->groups));
	if (c->buckets == NULL || c->groups == NULL) {
		cache_destroy(c);
		return NULL;
	}
	memset(c->buckets, 0xff, BUCKETS_MIN * sizeof(*c->buckets));
	c->mask = BUCKETS_MIN - 1;
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
	free(c->buckets);
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

/* The slot index of k, and the link that points at it (for unlinking). */
static uint32_t
find(const struct cache *c, const struct cache_key *k, uint32_t **link)
{
	uint32_t *l = &c->buckets[bucket_of(c, k)];

	for (uint32_t i = *l; i != SLOT_NONE; i = *l) {
		struct slot *s = slot_at(c, i);

		if (memcmp(&s->key, k, sizeof(*k)) == 0) {
			if (link != NULL)
				*link = l;
			return i;
		}
		l = &s->next;
	}
	return SLOT_NONE;
}

/* Double the buckets (at most one bucket per slot) and rechain every entry. */
static void
grow_buckets(struct cache *c)
{
	uint32_t n = (c->mask + 1) * 2;
	uint32_t *b;

	if (n == 0 || (b = malloc((size_t)n * sizeof(*b))) == NULL)
		return;         /* longer chains, still correct */
	memset(b, 0xff, (size_t)n * sizeof(*b));
	free(c->buckets);
	c->buckets = b;
	c->mask = n - 1;
	for (uint32_t i = 0; i < c->n_slots; i++) {
		struct slot *s = slot_at(c, i);
		uint32_t h;

		if (!s->used)
			continue;
		h = bucket_of(c, &s->key);
		s->next = b[h];
		b[h] = i;
	}
}

static uint32_t
slot_alloc(struct cache *c)
{
	uint32_t i = c->free_list;

	if (i != SLOT_NONE) {
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
cache_upsert(struct cache *c, const struct cache_key *k, const struct cache_value *v,
	     uint32_t now_ms)
{
	uint32_t i = find(c, k, NULL);
	struct slot *s;
	int fresh = 1;

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
		uint32_t h;

		i = slot_alloc(c);
		if (i == SLOT_NONE)
			return -ENOMEM;
		s = slot_at(c, i);
		s->key = *k;
		s->used = 1;
		h = bucket_of(c, k);
		s->next = c->buckets[h];
		c->buckets[h] = i;
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

static void
unlink_slot(struct cache *c, uint32_t i, uint32_t *link)
{
	struct slot *s = slot_at(c, i);

	account(c, s, -1);
	*link = s->next;
	memset(s, 0, sizeof(*s));
	s->next = c->free_list;
	c->free_list = i;
	c->count--;
}

bool
cache_mark_seen(struct cache *c, const struct cache_key *k)
{
	uint32_t i = find(c, k, NULL);

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
cache_remove(struct cache *c, const struct cache_key *k)
{
	uint32_t *link = NULL;
	uint32_t i = find(c, k, &link);

	if (i == SLOT_NONE)
		return false;
	unlink_slot(c, i, link);
	return true;
}

bool
cache_get(const struct cache *c, const struct cache_key *k, uint32_t now_ms,
	  struct cache_value *v)
{
	uint32_t i = find(c, k, NULL);
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

	for (; budget > 0 && c->n_slots > 0; budget--) {
		uint32_t i = c->sweep++ % c->n_slots;
		struct slot *s = slot_at(c, i);
		uint32_t *link = NULL;

		if (c->sweep >= c->n_slots)
			c->sweep = 0;
		if (!s->used || !expired(s->expires_ms, now_ms))
			continue;
		if (find(c, &s->key, &link) == i) {
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
