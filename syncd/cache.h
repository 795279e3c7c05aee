/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cluster's connection entries as syncd holds them: its own node's
 * (from the dataplane's export stream) and its peers' (from CPG), each with
 * the node that wrote it last and when it expires. A dataplane that
 * restarts gets them all back; a joining peer gets them in a bulk resync.
 *
 * An entry is 40 bytes: the key by catalog index (VIP, ports, client
 * address), the backend by index into its VIP, the expiry, the origin node.
 * Entries live in a pool of fixed chunks and never move, so a walk by
 * cursor (resync, dataplane reload) sees every entry that stays in the
 * cache for the whole walk exactly once, whatever is added or removed
 * meanwhile. Buckets chain entries by pool index; the chain hash is keyed
 * at random per cache (clients choose their ports). The buckets double
 * a step at a time as the cache grows: no call walks the whole cache
 * except the walks named so.
 *
 * A caller with many keys hashes them first (cache_hash()), lets
 * cache_prefetch() fetch their buckets and entries from memory all at
 * once, then calls the *_hashed operations: at millions of entries each
 * lookup is a few cache misses, and this way they overlap.
 *
 * Each entry also adds a hash of its addresses (not indices, not lifetime)
 * to its sync group's digest, a sum, so that two nodes holding the same
 * entries have the same digest whatever the order they learnt them in.
 *
 * Time is a uint32 millisecond clock that may wrap; an entry whose expiry
 * has passed is dead to lookups and walks before the sweep frees it.
 *
 * Single-threaded: one owner (syncd's loop).
 */
#ifndef MAGLB_SYNCD_CACHE_H
#define MAGLB_SYNCD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

struct catalog;

struct cache_key {
	uint8_t client[WIRE_ADDR_MAX];  /* IPv4: first 4 bytes, the rest 0 */
	uint16_t client_port;
	uint16_t vip_port;
	uint16_t vip;                   /* catalog index */
	uint16_t pad;                   /* 0: keys compare with memcmp */
};

/*
 * A flag of the cache's own, beside the WIRE_FLOW_* bits: the entry was
 * seen in the dataplane (or made by it) since the last reconciliation
 * began. An upsert keeps it; the wire never carries it.
 */
enum {
	CACHE_FLAG_SEEN = 1u << 7,
};

struct cache_value {
	uint16_t backend;               /* index into the VIP's backends */
	uint8_t flags;                  /* WIRE_FLOW_* and CACHE_FLAG_SEEN */
	uint32_t expires_ms;
	uint32_t origin;                /* node that wrote it last */
};

/* Per sync group. */
struct cache_group_stats {
	uint64_t own;                   /* entries whose origin is this node */
	uint64_t peers;
	uint64_t digest;                /* sum of the entries' hashes */
};

struct cache;

/*
 * An empty cache over cat (which must outlive it) for node self. NULL
 * when memory ran out.
 */
struct cache *cache_create(const struct catalog *cat, uint32_t self);

/* NULL is a no-op. */
void cache_destroy(struct cache *c);

/*
 * Key and value of wire entry f as of now_ms (expiry = now_ms + lifetime),
 * from origin. -ENOENT / -ESRCH as catalog_find() when the catalog has no
 * such VIP or backend.
 */
int cache_from_wire(const struct cache *c, const struct wire_flow *f, uint32_t origin,
		    uint32_t now_ms, struct cache_key *k, struct cache_value *v);

/* Entry k, v as a wire entry with the lifetime left at now_ms. */
void cache_to_wire(const struct cache *c, const struct cache_key *k,
		   const struct cache_value *v, uint32_t now_ms, struct wire_flow *f);

/* The chain hash of k, for the *_hashed operations. */
uint32_t cache_hash(const struct cache *c, const struct cache_key *k);

/*
 * Fetch ahead the buckets of hashes h[0..n) and the first entry of each
 * chain (a hint: the operations stay correct whatever changes meanwhile).
 * A few dozen at a time: more evicts what was fetched first.
 */
void cache_prefetch(const struct cache *c, const uint32_t *h, size_t n);

/*
 * Insert or overwrite the entry of k (h = cache_hash(c, k)). Returns 1
 * when it was new (or had expired), 0 when an entry was updated, -ENOMEM.
 */
int cache_upsert_hashed(struct cache *c, const struct cache_key *k, uint32_t h,
			const struct cache_value *v, uint32_t now_ms);

/* Set CACHE_FLAG_SEEN on the entry of k: whether there is one. */
bool cache_mark_seen_hashed(struct cache *c, const struct cache_key *k, uint32_t h);

/* Clear CACHE_FLAG_SEEN on every entry whose origin is this node. */
void cache_unmark_own(struct cache *c);

/* Remove the entry of k: true if there was one (live or not). */
bool cache_remove_hashed(struct cache *c, const struct cache_key *k, uint32_t h);

/* The live entry of k into *v (may be NULL): whether there is one. */
bool cache_get_hashed(const struct cache *c, const struct cache_key *k, uint32_t h,
		      uint32_t now_ms, struct cache_value *v);

/* The same, one key at a time. */
static inline int
cache_upsert(struct cache *c, const struct cache_key *k, const struct cache_value *v,
	     uint32_t now_ms)
{
	return cache_upsert_hashed(c, k, cache_hash(c, k), v, now_ms);
}

static inline bool
cache_mark_seen(struct cache *c, const struct cache_key *k)
{
	return cache_mark_seen_hashed(c, k, cache_hash(c, k));
}

static inline bool
cache_remove(struct cache *c, const struct cache_key *k)
{
	return cache_remove_hashed(c, k, cache_hash(c, k));
}

static inline bool
cache_get(const struct cache *c, const struct cache_key *k, uint32_t now_ms,
	  struct cache_value *v)
{
	return cache_get_hashed(c, k, cache_hash(c, k), now_ms, v);
}

/*
 * The next live entry at or after *cursor (0 starts): true and the entry,
 * *cursor moved past it; false at the end. See above for what a walk sees.
 */
bool cache_next(const struct cache *c, uint32_t *cursor, uint32_t now_ms,
		struct cache_key *k, struct cache_value *v);

/*
 * Free expired entries: visit at most budget pool slots from where the
 * last call stopped (wrapping). Returns how many were freed.
 */
uint32_t cache_expire(struct cache *c, uint32_t now_ms, uint32_t budget);

/* Entries held, live or not yet swept. */
uint32_t cache_count(const struct cache *c);

/* Bytes allocated: pool chunks, buckets (both arrays while growing), the struct. */
size_t cache_bytes(const struct cache *c);

/* The group's counts and digest (zero for a group with no entry). */
struct cache_group_stats cache_group_stats(const struct cache *c, uint16_t group);

/*
 * Walk the group's live entries, leaving out those expiring within
 * margin_ms (their expiry differs between nodes by the sync lag): their
 * count and the sum of their hashes. For sync verify; O(entries).
 */
struct cache_group_stats cache_group_digest(const struct cache *c, uint16_t group,
					    uint32_t now_ms, uint32_t margin_ms);

#endif /* MAGLB_SYNCD_CACHE_H */
