/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's connection table: flow key -> backend, TCP state, timestamps.
 *
 * Each worker lcore owns one table (shared nothing: single thread, no
 * atomics, no locks). Every function below is for the owning thread only,
 * unless it says otherwise; none allocates except flowtab_create().
 *
 * Layout (bucketized cuckoo hashing, two choices, eight ways):
 *
 *   buckets[nb]     nb = the power of two >= capacity / 8 (at least 2)
 *     +-------------------+--------------------------+----------+-------+
 *     | sig: 8 x u16      | index: 8 x u32           | overflow | spare |  64 B,
 *     +-------------------+--------------------------+----------+-------+  one line
 *   overflowed[nb / 64]  one bit per bucket: overflow != 0 (16 KiB for 1M flows)
 *   entries[capacity]    struct flowtab_entry, 64 B, one line each
 *   due[capacity / 64]   per chunk of 64 entries, a time before which none
 *                        of its live entries expires (the expiry scan
 *                        passes over a chunk not yet due)
 *
 * A key's 64-bit table hash h (NH universal hashing of the 40 key bytes
 * under keys drawn from the table's seed, then the murmur3 finaliser) gives
 * its primary bucket b1 = h mod nb and its 16-bit signature sig = h >> 48
 * (0 marks an empty slot, so a zero signature becomes 1); its alternative
 * bucket is b2 = b1 ^ f(sig), so that a slot's bucket and signature give the
 * other bucket and an item moves between its two buckets without reading its
 * key. A slot holds the signature and the entry index (flagged when in the
 * alternative bucket). A bucket's overflow counts its keys that live in
 * their alternative bucket: while it is 0 (two buckets in three at 86% load)
 * a lookup reads one bucket, not two. Entries never move: an entry pointer
 * stays valid until the entry is removed, expired or recycled (below).
 *
 * Memory: 64 B per entry + 64 B per 8 index slots + 1 bit per 8 slots + 4 B
 * per 64 entries + a header: 72.08 B per flow when capacity is a power of
 * two (random keys fill 98.8% of the slots before the first refusal), 72.47 B
 * for a capacity of 10^6 or 4 * 10^6 (290 MB), up to 80 B just above a power
 * of two (flowtab_memory(), flowtab_bytes_per_flow()). The whole table is
 * allocated and written by flowtab_create() (no page faults on the packet
 * path); on Linux it asks for transparent huge pages (fewer TLB misses).
 *
 * Lookup: the burst lookup hashes all keys and prefetches their buckets,
 * then matches signatures and prefetches the candidate entries, then
 * compares keys, so that the misses of a burst overlap (the
 * rte_hash_lookup_bulk pattern): two misses deep, a bucket then an entry.
 *
 * Insert takes a free slot in the primary bucket, else in the alternative
 * one; when both are full it frees an expired entry of the two buckets, or
 * else moves items to their other bucket (a bounded breadth-first search,
 * as in libcuckoo) to free a slot. It never evicts a live entry: a SYN flood
 * cannot push out established flows. New entries are also bounded by a
 * token bucket (insert_rate).
 *
 * Entry pointers. An entry pointer stays valid (same flow, same key) until
 * that entry is removed or expired, or until an insert recycles it, which
 * can happen to an expired entry only. Hence the burst pattern of a worker:
 *
 *   flowtab_lookup_burst_hint(t, keys, n, hit, hint);
 *   for each i with hit[i] live (!flowtab_expired()): flowtab_touch(hit[i])
 *   for each other i, in order:
 *       e = flowtab_lookup(t, keys[i])      again: an earlier insert of this
 *                                           burst may have added keys[i] or
 *                                           recycled the expired hit[i]
 *       live e: flowtab_touch(); expired e: flowtab_reuse();
 *       NULL: flowtab_insert_hint(..., hint[i], ...)
 *
 * The second lookup finds its buckets in cache: it costs a few ns. (The
 * worker skips it for keys it knows the burst has not inserted.)
 *
 * Times are uint32 milliseconds that wrap; they compare as (int32_t)(a - b),
 * so every timeout is below 2^31 ms and the caller must run flowtab_expire()
 * often enough that each slot is visited well within 2^31 ms (24.8 days).
 */
#ifndef MAGLB_DATAPLANE_FLOWTAB_H
#define MAGLB_DATAPLANE_FLOWTAB_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/core/flow_key.h"

#define FLOWTAB_CAPACITY_MAX (1u << 26)   /* entries per table */
#define FLOWTAB_TIMEOUT_MAX 0x7fffffffu   /* ms; every timeout is below 2^31 */
#define FLOWTAB_BURST_MAX 64u             /* keys per pipelined lookup stage */
#define FLOWTAB_WALK_END UINT64_MAX       /* flowtab_walk() cursor: done */

/* TCP header flag bits, as on the wire (byte 13 of the TCP header). */
enum {
	FLOWTAB_TCP_FIN = 0x01,
	FLOWTAB_TCP_SYN = 0x02,
	FLOWTAB_TCP_RST = 0x04,
	FLOWTAB_TCP_ACK = 0x10,
};

/*
 * The state of a flow, which selects its idle timeout. The node sees only
 * client -> VIP packets:
 *
 *   insert, TCP, SYN without FIN/RST ..... SYN
 *   insert, TCP, no SYN, no FIN/RST ...... ESTABLISHED (picked up mid-flow)
 *   insert, TCP, FIN or RST .............. CLOSING
 *   insert, any other protocol ........... UDP (stays UDP)
 *   SYN         + packet without SYN ..... ESTABLISHED
 *   SYN or ESTABLISHED + FIN or RST ...... CLOSING, export CLOSE (once)
 *   CLOSING     + SYN without ACK/FIN/RST  SYN, export NEW (the client reuses
 *                                          the 5-tuple for a new connection)
 *
 * CLOSING is the linger after FIN or RST: late packets still reach the same
 * backend until tcp_closing_ms of silence.
 */
enum flowtab_state {
	FLOWTAB_SYN = 0,
	FLOWTAB_ESTABLISHED,
	FLOWTAB_CLOSING,
	FLOWTAB_UDP,              /* UDP and every protocol but TCP */
	FLOWTAB_STATE_MAX
};

extern const char *const flowtab_state_names[FLOWTAB_STATE_MAX];

/* What a packet of a known flow asks the caller to export to syncd. */
enum flowtab_export {
	FLOWTAB_EXPORT_NONE = 0,
	FLOWTAB_EXPORT_REFRESH,   /* live past refresh_ms since the last export */
	FLOWTAB_EXPORT_CLOSE,     /* the first FIN or RST */
	FLOWTAB_EXPORT_NEW,       /* a new connection on a CLOSING entry */
	FLOWTAB_EXPORT_MAX
};

extern const char *const flowtab_export_names[FLOWTAB_EXPORT_MAX];

/* Why an insert returned NULL: X(NAME, "description"). */
#define FLOWTAB_REFUSALS(X)						\
	X(NONE, "not refused")						\
	X(RATE, "insert rate exhausted")				\
	X(FULL, "no free or expired slot in the key's two buckets")

enum flowtab_refuse {
#define FLOWTAB_REFUSE_ENUM(name, desc) FLOWTAB_REFUSE_##name,
	FLOWTAB_REFUSALS(FLOWTAB_REFUSE_ENUM)
#undef FLOWTAB_REFUSE_ENUM
	FLOWTAB_REFUSE_MAX
};

extern const char *const flowtab_refuse_names[FLOWTAB_REFUSE_MAX];
extern const char *const flowtab_refuse_descriptions[FLOWTAB_REFUSE_MAX];

/* The table's own counters: X(NAME, "description"). */
#define FLOWTAB_STATS(X)						\
	X(INSERTED, "entries created by flowtab_insert")		\
	X(REUSED, "expired entries restarted by flowtab_reuse")	\
	X(SYNCED, "entries imported by flowtab_insert_synced")	\
	X(REFUSED_RATE, "inserts refused: insert rate exhausted")	\
	X(REFUSED_FULL, "inserts refused: no free or expired slot")	\
	X(EVICTED, "expired entries replaced by an insert")		\
	X(EXPIRED, "expired entries freed by flowtab_expire")		\
	X(REMOVED, "entries removed by flowtab_remove")			\
	X(MOVED, "entries moved to their other bucket to make room")

enum flowtab_stat {
#define FLOWTAB_STAT_ENUM(name, desc) FLOWTAB_STAT_##name,
	FLOWTAB_STATS(FLOWTAB_STAT_ENUM)
#undef FLOWTAB_STAT_ENUM
	FLOWTAB_STAT_MAX
};

extern const char *const flowtab_stat_names[FLOWTAB_STAT_MAX];
extern const char *const flowtab_stat_descriptions[FLOWTAB_STAT_MAX];

/* Bits of flowtab_entry.flags. */
enum {
	FLOWTAB_FLAG_LIVE = 0x01,     /* in use (set on every entry handed out) */
	FLOWTAB_FLAG_SYNCED = 0x02,   /* imported by flowtab_insert_synced */
};

/*
 * One flow. The caller may read every field of an entry it got from a lookup
 * or an insert, and write backend and user; the table owns the rest (change
 * them through flowtab_touch(), flowtab_reuse() and flowtab_remove()).
 */
struct flowtab_entry {
	struct flow_key key;      /* 40 B */
	uint32_t backend;         /* backend id, stable for the process */
	uint32_t last_ms;         /* last packet (idle timeouts count from it) */
	uint32_t exported_ms;     /* last NEW / REFRESH / synced import */
	uint32_t created_ms;      /* insert, reuse or import */
	uint32_t packets;         /* packets seen, the first included; saturates */
	uint8_t state;            /* enum flowtab_state */
	uint8_t flags;            /* FLOWTAB_FLAG_* */
	uint16_t user;            /* the caller's; 0 on insert, never read here */
};

static_assert(sizeof(struct flowtab_entry) == 64, "flowtab_entry is one cache line");

struct flowtab_params {
	uint32_t capacity;            /* entries, 1 .. FLOWTAB_CAPACITY_MAX */
	uint64_t seed;                /* table hash seed: random per table */
	uint32_t tcp_syn_ms;          /* idle timeouts per state, ms, */
	uint32_t tcp_established_ms;  /* 1 .. FLOWTAB_TIMEOUT_MAX */
	uint32_t tcp_closing_ms;
	uint32_t udp_ms;
	uint32_t refresh_ms;          /* REFRESH period of a live flow; 0: never */
	uint32_t insert_rate;         /* new entries per second; 0: no cap. A token
				       * bucket holding max(rate / 10, 64) tokens,
				       * full at the start */
	/* Optional: called with each entry the table frees (expiry, the
	 * eviction of an expired entry by an insert, flowtab_remove()), before
	 * it is freed, so that the owner can keep gauges by backend. Not for
	 * flowtab_reuse(), whose caller sees the entry. Must not change the
	 * table. */
	void (*on_free)(void *arg, const struct flowtab_entry *e);
	void *on_free_arg;
};

struct flowtab;

/*
 * The head of every table: what the inline packet-path functions below
 * read. Private: set by flowtab_create(), read through them.
 */
struct flowtab_head {
	uint32_t timeout_ms[FLOWTAB_STATE_MAX];
	uint32_t refresh_ms;
	struct flowtab_entry *entries;
	uint32_t *due;                /* per FLOWTAB_CHUNK entries: none of the
				       * chunk's live entries expires before */
};

enum { FLOWTAB_CHUNK = 64 };    /* entries per due time of the expiry scan */

static inline const struct flowtab_head *
flowtab_head(const struct flowtab *t)
{
	return (const struct flowtab_head *)(const void *)t;
}

/* e may expire at at (a new state's shorter timeout): keep its chunk's due
 * time at or before it, so that the expiry scan does not skip the chunk. */
static inline void
flowtab_due_lower(struct flowtab *t, const struct flowtab_entry *e, uint32_t at)
{
	const struct flowtab_head *h = flowtab_head(t);
	uint32_t *due = &h->due[(uint32_t)(e - h->entries) / FLOWTAB_CHUNK];

	if ((int32_t)(at - *due) < 0)
		*due = at;
}

/*
 * Allocate a table of p->capacity entries and touch all its memory. Returns
 * it, or NULL with errno set: EINVAL for a capacity of 0 or over
 * FLOWTAB_CAPACITY_MAX, a timeout of 0 or over FLOWTAB_TIMEOUT_MAX, or
 * refresh_ms over FLOWTAB_TIMEOUT_MAX; ENOMEM. The caller owns the table and
 * frees it with flowtab_destroy(). Any thread (it is the only allocation);
 * its pages are first written here, so under the default NUMA policy they
 * sit on the calling thread's node: call it on the thread that owns the table.
 */
struct flowtab *flowtab_create(const struct flowtab_params *p);

/* Free a table and every entry; NULL is a no-op. Entry pointers die with it. */
void flowtab_destroy(struct flowtab *t);

/*
 * Give a live table p's timeouts, refresh_ms and insert_rate (a config
 * reload); its capacity, seed and on_free stay the table's for life. Every
 * entry has the new timeouts from now on (an entry's expiry is computed when
 * it is checked). -EINVAL, the table unchanged, for values that
 * flowtab_create() refuses.
 */
int flowtab_tune(struct flowtab *t, const struct flowtab_params *p);

/*
 * Look up keys[0..n-1]: out[i] = the entry of keys[i], or NULL. Any n; the
 * keys go through the pipeline FLOWTAB_BURST_MAX at a time. A hit may be
 * expired (check flowtab_expired(); such a flow is new: flowtab_reuse()).
 */
void flowtab_lookup_burst(struct flowtab *t, const struct flow_key *const keys[],
			  uint32_t n, struct flowtab_entry *out[]);

/* Where a key goes in a table (its hash, computed once): from
 * flowtab_lookup_burst_hint(), for flowtab_insert_hint(). */
struct flowtab_hint {
	uint32_t bucket;
	uint16_t sig;
};

/* flowtab_lookup_burst(), also giving hint[i], the place of keys[i], so that
 * an insert of a missing key need not hash it again. */
void flowtab_lookup_burst_hint(struct flowtab *t, const struct flow_key *const keys[],
			       uint32_t n, struct flowtab_entry *out[],
			       struct flowtab_hint hint[]);

/* Look up one key: its entry (possibly expired) or NULL. */
struct flowtab_entry *flowtab_lookup(struct flowtab *t, const struct flow_key *k);

/*
 * Insert a new flow for k (key bytes copied, pad included) with this backend.
 * k must not be in the table (the caller looked it up and missed). tcp_flags
 * (ignored unless k->proto is TCP) and k->proto set the state, see
 * enum flowtab_state; last_ms = exported_ms = created_ms = now_ms (the
 * caller exports the entry as NEW), packets = 1.
 *
 * Returns the entry, or NULL with *why (may be NULL) set to
 * FLOWTAB_REFUSE_RATE when the insert rate is exhausted, or
 * FLOWTAB_REFUSE_FULL when both of the key's buckets hold only live entries
 * and no move frees a slot, or when every entry is in use and none of the
 * two buckets is expired. Either way the caller forwards the flow untracked
 * (Maglev only). A FULL refusal gives its token back.
 */
struct flowtab_entry *flowtab_insert(struct flowtab *t, const struct flow_key *k,
				     uint32_t backend, uint8_t tcp_flags,
				     uint32_t now_ms, enum flowtab_refuse *why);

/* flowtab_insert() of a key whose hint a lookup of this table gave. */
struct flowtab_entry *flowtab_insert_hint(struct flowtab *t, const struct flow_key *k,
					  struct flowtab_hint hint, uint32_t backend,
					  uint8_t tcp_flags, uint32_t now_ms,
					  enum flowtab_refuse *why);

/*
 * Restart entry e (typically a lookup hit that flowtab_expired() calls dead)
 * as a new flow of the same key: as flowtab_insert() but in place, so it can
 * only be refused for the rate. Returns e, or NULL with *why = RATE (e is
 * left as it was).
 */
struct flowtab_entry *flowtab_reuse(struct flowtab *t, struct flowtab_entry *e,
				    uint32_t backend, uint8_t tcp_flags,
				    uint32_t now_ms, enum flowtab_refuse *why);

/*
 * Import a flow with a given state and remaining lifetime (bulk resync, or
 * an entry synced from a peer promoted into this worker's table), bypassing
 * the insert rate. k must not be in the table. The entry expires after
 * min(remaining_ms, the state's timeout) of silence (0: already expired);
 * exported_ms = now_ms, packets = 0, flags LIVE | SYNCED.
 * Returns the entry, or NULL with *why = FULL.
 */
struct flowtab_entry *flowtab_insert_synced(struct flowtab *t, const struct flow_key *k,
					    uint32_t backend, enum flowtab_state state,
					    uint32_t remaining_ms, uint32_t now_ms,
					    enum flowtab_refuse *why);

/*
 * A packet of the flow of e: last_ms = now_ms, packets + 1, state per
 * enum flowtab_state. Returns what to export: CLOSE on the first FIN or RST
 * (never twice: the entry is then CLOSING), NEW when a SYN restarts a
 * CLOSING entry, REFRESH when a SYN entry becomes ESTABLISHED (the peers'
 * copy, exported at the SYN, has the SYN state's short timeout), REFRESH
 * when the entry is not CLOSING, refresh_ms is not 0 and now_ms -
 * exported_ms >= refresh_ms, else NONE. Every export but NONE sets
 * exported_ms = now_ms.
 */
static inline enum flowtab_export
flowtab_touch(struct flowtab *t, struct flowtab_entry *e, uint8_t tcp_flags, uint32_t now_ms)
{
	const uint8_t end = FLOWTAB_TCP_FIN | FLOWTAB_TCP_RST;

	e->last_ms = now_ms;
	e->packets += e->packets != UINT32_MAX;
	switch (e->state) {
	case FLOWTAB_SYN:
	case FLOWTAB_ESTABLISHED:
		if (tcp_flags & end) {
			e->state = FLOWTAB_CLOSING;
			e->exported_ms = now_ms;
			flowtab_due_lower(t, e, now_ms + flowtab_head(t)->timeout_ms[FLOWTAB_CLOSING]);
			return FLOWTAB_EXPORT_CLOSE;
		}
		if (e->state == FLOWTAB_SYN && !(tcp_flags & FLOWTAB_TCP_SYN)) {
			e->state = FLOWTAB_ESTABLISHED;
			e->exported_ms = now_ms;
			flowtab_due_lower(t, e,
					  now_ms + flowtab_head(t)->timeout_ms[FLOWTAB_ESTABLISHED]);
			return FLOWTAB_EXPORT_REFRESH;
		}
		break;
	case FLOWTAB_CLOSING:
		if ((tcp_flags & (end | FLOWTAB_TCP_SYN | FLOWTAB_TCP_ACK)) != FLOWTAB_TCP_SYN)
			return FLOWTAB_EXPORT_NONE;
		e->state = FLOWTAB_SYN;
		e->exported_ms = e->created_ms = now_ms;
		e->packets = 1;
		flowtab_due_lower(t, e, now_ms + flowtab_head(t)->timeout_ms[FLOWTAB_SYN]);
		return FLOWTAB_EXPORT_NEW;
	default:
		break;
	}
	if (flowtab_head(t)->refresh_ms == 0 ||
	    (int32_t)(now_ms - e->exported_ms) < (int32_t)flowtab_head(t)->refresh_ms)
		return FLOWTAB_EXPORT_NONE;
	e->exported_ms = now_ms;
	return FLOWTAB_EXPORT_REFRESH;
}

/*
 * Whether e has been idle for at least its state's timeout at now_ms. An
 * expired entry is dead even before flowtab_expire() frees it: a lookup hit
 * on it is a new flow.
 */
static inline bool
flowtab_expired(const struct flowtab *t, const struct flowtab_entry *e, uint32_t now_ms)
{
	return (int32_t)(now_ms - e->last_ms) >= (int32_t)flowtab_head(t)->timeout_ms[e->state];
}

/* The idle timeout of a state, ms. */
static inline uint32_t
flowtab_timeout(const struct flowtab *t, enum flowtab_state state)
{
	assert(state < FLOWTAB_STATE_MAX);
	return flowtab_head(t)->timeout_ms[state];
}

/* Remove e from the table and free it; e is invalid afterwards. */
void flowtab_remove(struct flowtab *t, struct flowtab_entry *e);

/*
 * Incremental expiry, between bursts: visit at most budget entry slots from
 * an internal cursor (which wraps), free the expired entries, and return how
 * many were freed. A full pass visits flowtab_used() slots. The slots come in
 * chunks of FLOWTAB_CHUNK with a due time, before which none of the chunk's
 * live entries can expire: a chunk not yet due is passed over without
 * reading its entries (they count as visited), so that a table of live flows
 * costs the scan a few instructions per chunk, not a DRAM line per entry.
 */
uint32_t flowtab_expire(struct flowtab *t, uint32_t now_ms, uint32_t budget);

/* Entry slots ever handed out (in use or on the free list): what a pass of
 * flowtab_expire() visits. From 0 in a new table up to the capacity. */
uint32_t flowtab_used(const struct flowtab *t);

/*
 * Paged iteration, for dumps served by the worker in bounded slices. Start
 * with *cursor = 0; each call passes up to max entries in use (expired ones
 * included: fn may check flowtab_expired()) to fn(entry, arg), scans at most
 * 16 * max + 64 slots, and advances *cursor; the walk is over when *cursor is
 * FLOWTAB_WALK_END. Returns the number of entries passed to fn, which may be
 * 0 before the end. An entry in the table for the whole walk is passed
 * exactly once, whatever is inserted or removed between calls (entries never
 * move); one inserted or removed meanwhile is passed at most once. fn must
 * not change the table.
 */
uint32_t flowtab_walk(const struct flowtab *t, uint64_t *cursor, uint32_t max,
		      void (*fn)(const struct flowtab_entry *e, void *arg), void *arg);

/* Entries in use, expired ones not yet freed included. */
uint32_t flowtab_count(const struct flowtab *t);

/* The capacity the table was created with. */
uint32_t flowtab_capacity(const struct flowtab *t);

/* Bytes the table holds (entries, buckets, header). */
size_t flowtab_memory(const struct flowtab *t);

/* flowtab_memory() / capacity, rounded up: for the status print. */
size_t flowtab_bytes_per_flow(const struct flowtab *t);

/* The table's counters, indexed by enum flowtab_stat. Any thread may read
 * them racily for a status print; the owner writes them. */
const uint64_t *flowtab_stats(const struct flowtab *t);

/*
 * Check the table's invariants: every entry in use sits in exactly one slot
 * of its two buckets, with the right signature and flag; the overflow counts;
 * the free list; no chunk due later than one of its entries expires. True when they hold. O(capacity); for tests and debugging.
 */
bool flowtab_audit(struct flowtab *t);

#endif /* MAGLB_DATAPLANE_FLOWTAB_H */
