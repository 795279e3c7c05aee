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
 *   SYN or ESTABLISHED + FIN or RST ...... CLOSING
 *   CLOSING     + SYN without ACK/FIN/RST  SYN: a new connection (the client
 *                                          reuses the 5-tuple), an entry made
 *                                          from a SYN again, not exported
 *
 * CLOSING is the linger after FIN or RST: late packets still reach the same
 * backend until tcp_closing_ms of silence.
 *
 * What a packet asks the caller to export to syncd (flowtab_touch()), so
 * that the peers hold the entries worth holding and no others:
 *
 *   NEW      once per connection, when the entry becomes worth replicating:
 *            TCP once established (the client's first packet after its SYN,
 *            never at the SYN: a flood of spoofed SYNs exports nothing), UDP
 *            at its first packet; in both cases not while provisional
 *            (below: a UDP entry always starts so), and not before the entry
 *            has seen sync_after packets (the VIP's sync_after_packets). The
 *            entry is then EXPORTED.
 *   REFRESH  an EXPORTED entry live past refresh_ms since its last export
 *            (and an imported SYN entry becoming established: the peers'
 *            copy has the SYN state's short timeout).
 *   CLOSE    an EXPORTED entry's first FIN or RST.
 *
 * The peers never heard of an entry that was not exported: it is neither
 * refreshed nor closed (a SYN that a RST ends exports nothing). An insert
 * exports nothing: no entry is worth replicating at its first packet (a SYN
 * is not established; any other first packet makes a provisional entry).
 *
 * Provisional entries. An entry inserted in any state but SYN may be a
 * peer's flow whose entry has not reached this node yet (a takeover, an
 * ECMP reshuffle): TCP picked up mid-flow or at its FIN or RST, and every
 * UDP flow, which has no handshake to tell its first packet from a packet
 * of a flow a peer carried. Its backend is Maglev's guess. It is
 * PROVISIONAL for FLOWTAB_PROVISIONAL_MS after its insert: the caller also
 * looks its packets up in the synced table, where a peer's entry replaces
 * the guess (flowtab_adopt()); it is not exported (its guess would reach
 * the peers after the true entry, in CPG's agreed order, and overwrite it
 * there). Its first packet past the window clears the flag (the entry is
 * this node's: PROVISIONAL_KEPT) and may export it as NEW by the rule above.
 * An entry made from a SYN here is never provisional: it is this node's
 * connection, and a peer's entry never replaces it.
 */
enum flowtab_state {
	FLOWTAB_SYN = 0,
	FLOWTAB_ESTABLISHED,
	FLOWTAB_CLOSING,
	FLOWTAB_UDP,              /* UDP and every protocol but TCP */
	FLOWTAB_STATE_MAX
};

extern const char *const flowtab_state_names[FLOWTAB_STATE_MAX];

/* What a packet of a known flow asks the caller to export to syncd (see
 * above). */
enum flowtab_export {
	FLOWTAB_EXPORT_NONE = 0,
	FLOWTAB_EXPORT_REFRESH,   /* EXPORTED, live past refresh_ms since the last export */
	FLOWTAB_EXPORT_CLOSE,     /* EXPORTED, the first FIN or RST */
	FLOWTAB_EXPORT_NEW,       /* now worth replicating: EXPORTED from here on */
	FLOWTAB_EXPORT_MAX
};

/*
 * How long an entry inserted in any state but SYN stays provisional, ms: a
 * peer's entry for its flow may replace it meanwhile. It covers the sync lag
 * (syncd's batching and CPG's delivery, milliseconds) and a late resync
 * after a takeover (the new active node's peers send their tables; the
 * import of a held flow measured half a second behind its traffic), with
 * room for TCP's retransmissions (200 ms, 600 ms, 1.4 s after a lost
 * segment). Longer would delay the export of flows that are this node's.
 */
#define FLOWTAB_PROVISIONAL_MS 3000u

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
	X(MOVED, "entries moved to their other bucket to make room")	\
	X(PROVISIONAL_KEPT, "provisional entries past their window: Maglev's pick kept")

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
	FLOWTAB_FLAG_LIVE = 0x01,        /* in use (set on every entry handed out) */
	FLOWTAB_FLAG_SYNCED = 0x02,      /* a peer's: flowtab_insert_synced(),
					  * flowtab_adopt() */
	FLOWTAB_FLAG_EXPORTED = 0x04,    /* the peers hold it (NEW exported, or a
					  * peer's): refreshed and closed */
	FLOWTAB_FLAG_PROVISIONAL = 0x08, /* inserted in any state but SYN, under
					  * FLOWTAB_PROVISIONAL_MS ago: a peer's
					  * entry may replace it */
};

/*
 * One flow. The caller may read every field of an entry it got from a lookup
 * or an insert, and write backend, sync_after and user; the table owns the
 * rest (change them through flowtab_touch(), flowtab_reuse(), flowtab_adopt()
 * and flowtab_remove()).
 */
struct flowtab_entry {
	struct flow_key key;      /* 40 B */
	uint32_t backend;         /* backend id, stable for the process */
	uint32_t last_ms;         /* last packet (idle timeouts count from it) */
	uint32_t exported_ms;     /* last NEW / REFRESH / synced import (EXPORTED) */
	uint32_t created_ms;      /* insert, reuse, import, or a SYN's restart */
	uint16_t packets;         /* packets seen, the first included; saturates */
	uint16_t sync_after;      /* no NEW before packets reaches it (a VIP's
				   * sync_after_packets); 0 on insert */
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
 * enum flowtab_state; last_ms = exported_ms = created_ms = now_ms,
 * packets = 1, sync_after = 0, flags LIVE, and PROVISIONAL unless the state
 * is SYN. Nothing is exported yet (flowtab_touch() says when).
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
 * exported_ms = now_ms, packets = 0, flags LIVE | SYNCED | EXPORTED (the
 * peers hold it: this node refreshes and closes it).
 * Returns the entry, or NULL with *why = FULL.
 */
struct flowtab_entry *flowtab_insert_synced(struct flowtab *t, const struct flow_key *k,
					    uint32_t backend, enum flowtab_state state,
					    uint32_t remaining_ms, uint32_t now_ms,
					    enum flowtab_refuse *why);

/*
 * Import a peer's entry over e, a PROVISIONAL entry of the same flow (the
 * caller found it in the synced table): its backend replaces Maglev's guess.
 * flags LIVE | SYNCED | EXPORTED (as flowtab_insert_synced() sets them: the
 * peers hold it, this node refreshes and closes it), exported_ms = now_ms;
 * the state, times and packets stay (the flow is live here).
 */
void flowtab_adopt(struct flowtab *t, struct flowtab_entry *e, uint32_t backend,
		   uint32_t now_ms);

/* What a packet did to an entry's state (flowtab_step()). */
enum flowtab_step {
	FLOWTAB_STEP_SAME = 0,      /* ESTABLISHED, UDP: no change */
	FLOWTAB_STEP_SYN_AGAIN,     /* SYN: another SYN (retransmitted) */
	FLOWTAB_STEP_ESTABLISHED,   /* SYN -> ESTABLISHED */
	FLOWTAB_STEP_CLOSED,        /* SYN or ESTABLISHED -> CLOSING: FIN or RST */
	FLOWTAB_STEP_LINGER,        /* CLOSING: a late packet, or a SYN that
				     * restarted it as a new connection */
};

/*
 * The state machine of enum flowtab_state, for flowtab_touch(): e's new
 * state after a packet with tcp_flags. A SYN on a CLOSING entry (without
 * ACK, FIN or RST: the client reuses the 5-tuple) restarts it as a new
 * connection made from a SYN: SYN state, created_ms = now_ms, packets = 1,
 * flags LIVE only (not provisional, not exported), the same backend.
 */
static inline enum flowtab_step
flowtab_step(struct flowtab *t, struct flowtab_entry *e, uint8_t tcp_flags, uint32_t now_ms)
{
	const uint8_t end = FLOWTAB_TCP_FIN | FLOWTAB_TCP_RST;
	uint8_t next;

	switch (e->state) {
	case FLOWTAB_SYN:
	case FLOWTAB_ESTABLISHED:
		if (tcp_flags & end)
			next = FLOWTAB_CLOSING;
		else if (e->state == FLOWTAB_SYN && !(tcp_flags & FLOWTAB_TCP_SYN))
			next = FLOWTAB_ESTABLISHED;
		else
			return e->state == FLOWTAB_SYN ? FLOWTAB_STEP_SYN_AGAIN : FLOWTAB_STEP_SAME;
		e->state = next;
		flowtab_due_lower(t, e, now_ms + flowtab_head(t)->timeout_ms[next]);
		return next == FLOWTAB_CLOSING ? FLOWTAB_STEP_CLOSED : FLOWTAB_STEP_ESTABLISHED;
	case FLOWTAB_CLOSING:
		if ((tcp_flags & (end | FLOWTAB_TCP_SYN | FLOWTAB_TCP_ACK)) == FLOWTAB_TCP_SYN) {
			e->state = FLOWTAB_SYN;
			e->created_ms = now_ms;
			e->packets = 1;
			e->flags = FLOWTAB_FLAG_LIVE;
			flowtab_due_lower(t, e, now_ms + flowtab_head(t)->timeout_ms[FLOWTAB_SYN]);
		}
		return FLOWTAB_STEP_LINGER;
	default:
		return FLOWTAB_STEP_SAME;
	}
}

/* flowtab_touch() of an entry not EXPORTED (the SYN's handshake, a
 * provisional entry, one short of sync_after packets): out of line, off the
 * path of established flows. */
enum flowtab_export flowtab_touch_unexported(struct flowtab *t, struct flowtab_entry *e,
					     uint8_t tcp_flags, uint32_t now_ms);

/* flowtab_touch() of an entry the caller knows is EXPORTED (it tested the
 * flag already): the packet path of established flows. */
static inline enum flowtab_export
flowtab_touch_exported(struct flowtab *t, struct flowtab_entry *e, uint8_t tcp_flags,
		       uint32_t now_ms)
{
	e->last_ms = now_ms;
	e->packets += e->packets != UINT16_MAX;
	switch (flowtab_step(t, e, tcp_flags, now_ms)) {
	case FLOWTAB_STEP_CLOSED:
		e->exported_ms = now_ms;
		return FLOWTAB_EXPORT_CLOSE;
	case FLOWTAB_STEP_ESTABLISHED:
		e->exported_ms = now_ms;        /* an import's SYN entry: the peers */
		return FLOWTAB_EXPORT_REFRESH;  /* hold it with the SYN's timeout */
	case FLOWTAB_STEP_LINGER:
		return FLOWTAB_EXPORT_NONE;
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
 * A packet of the flow of e: last_ms = now_ms, packets + 1 (saturating),
 * state per enum flowtab_state (flowtab_step()). Returns what to export
 * (see the table above):
 *   - an entry not EXPORTED: NEW once it is worth replicating (TCP
 *     ESTABLISHED or UDP, not PROVISIONAL, packets >= sync_after; a
 *     PROVISIONAL entry's first packet FLOWTAB_PROVISIONAL_MS or more after
 *     its insert clears the flag), else NONE;
 *   - an EXPORTED entry: CLOSE on the first FIN or RST (never twice: the
 *     entry is then CLOSING), REFRESH when a SYN entry becomes ESTABLISHED,
 *     REFRESH when the entry is not CLOSING, refresh_ms is not 0 and
 *     now_ms - exported_ms >= refresh_ms, else NONE.
 * Every export but NONE sets exported_ms = now_ms. For an EXPORTED entry the
 * cost over the state machine is one predictable branch (none with
 * flowtab_touch_exported()).
 */
static inline enum flowtab_export
flowtab_touch(struct flowtab *t, struct flowtab_entry *e, uint8_t tcp_flags, uint32_t now_ms)
{
	if (__builtin_expect(!(e->flags & FLOWTAB_FLAG_EXPORTED), 0))
		return flowtab_touch_unexported(t, e, tcp_flags, now_ms);
	return flowtab_touch_exported(t, e, tcp_flags, now_ms);
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
