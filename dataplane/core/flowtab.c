/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/flowtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <sys/mman.h>
#if defined(__SSE2__) && !defined(FLOWTAB_NO_SIMD)
#include <emmintrin.h>
#endif

/*
 * GCC and Clang builtins (both compilers we build with): prefetch has no
 * portable spelling, and ctz is one instruction instead of a loop.
 */
#define flowtab_prefetch(p) __builtin_prefetch((p), 0, 3)
#define flowtab_ctz(x) ((unsigned)__builtin_ctzll(x))

enum {
	FLOWTAB_WAYS = 8,             /* slots per bucket */
	FLOWTAB_BFS_NODES = 512,      /* buckets a cuckoo search may visit */
	FLOWTAB_HUGE = 2u << 20,      /* transparent huge page size */
	FLOWTAB_LINE = 64,
};

#define FLOWTAB_NONE UINT32_MAX       /* end of the free list */
#define FLOWTAB_MILLI 1000u           /* token bucket: milli-tokens per token */
#define FLOWTAB_IDX_ALT 0x80000000u   /* slot index flag: in the alternative bucket */
#define FLOWTAB_IDX_MASK 0x7fffffffu
#define FLOWTAB_LANES 0x0001000100010001ull
#define FLOWTAB_LOW15 0x7fff7fff7fff7fffull

/*
 * A bucket. Signatures are 16 bits, eight in 16 bytes, so that a bucket is
 * matched in one vector compare (flowtab_match()). An index carries
 * FLOWTAB_IDX_ALT when the slot is in the key's alternative bucket. overflow
 * counts the keys whose primary bucket this is but which live in their
 * alternative bucket: while it is 0, a key absent from its primary bucket is
 * absent, and a lookup reads one bucket line instead of two.
 */
struct flowtab_bucket {
	uint64_t sig[2];              /* slot s: sig[s / 4] bits 16 * (s % 4); 0: empty */
	uint32_t idx[FLOWTAB_WAYS];   /* entry index | FLOWTAB_IDX_ALT */
	uint32_t overflow;
	uint32_t scratch;             /* flowtab_audit()'s tally */
	uint32_t pad[2];
};

static_assert(sizeof(struct flowtab_bucket) == FLOWTAB_LINE, "bucket is one cache line");
static_assert(FLOWTAB_CAPACITY_MAX <= FLOWTAB_IDX_MASK, "entry index fits beside the flag");

struct flowtab {
	struct flowtab_head head;     /* first: the inline functions read it */
	struct flowtab_bucket *buckets;
	uint64_t *overflowed;         /* bit b: buckets[b].overflow != 0 */
	uint32_t bucket_mask;         /* bucket count - 1 */
	uint32_t bucket_shift;        /* 32 - log2(bucket count) */
	uint32_t capacity;
	uint32_t count;               /* entries in use */
	uint32_t high;                /* entries[high..] never used yet */
	uint32_t free_head;           /* freed entries, linked through backend */
	uint32_t expire_cursor;
	uint32_t scan_all;            /* slots the scan visits whatever their due time */
	uint32_t hash_key[10];        /* NH keys, one per 32-bit key word */
	uint64_t hash_key_final;
	uint32_t rate;                /* tokens per second; 0: no cap */
	uint32_t refill_ms;           /* time of the last refill */
	bool refill_started;
	uint64_t tokens;              /* milli-tokens */
	uint64_t tokens_max;
	void (*on_free)(void *arg, const struct flowtab_entry *e);
	void *on_free_arg;
	size_t bucket_bytes, entry_bytes, bitmap_bytes, due_bytes;
	uint64_t stat[FLOWTAB_STAT_MAX];
};

/* BFS node of a cuckoo search: the item in slot of the parent's bucket
 * would move into bucket. */
struct flowtab_bfs {
	uint32_t bucket;
	int16_t parent;               /* -1: one of the key's own buckets */
	uint8_t slot;
};

const char *const flowtab_state_names[FLOWTAB_STATE_MAX] = {
	[FLOWTAB_SYN] = "SYN",
	[FLOWTAB_ESTABLISHED] = "ESTABLISHED",
	[FLOWTAB_CLOSING] = "CLOSING",
	[FLOWTAB_UDP] = "UDP",
};

const char *const flowtab_export_names[FLOWTAB_EXPORT_MAX] = {
	[FLOWTAB_EXPORT_NONE] = "NONE",
	[FLOWTAB_EXPORT_REFRESH] = "REFRESH",
	[FLOWTAB_EXPORT_CLOSE] = "CLOSE",
	[FLOWTAB_EXPORT_NEW] = "NEW",
};

const char *const flowtab_refuse_names[FLOWTAB_REFUSE_MAX] = {
#define FLOWTAB_REFUSE_NAME(name, desc) [FLOWTAB_REFUSE_##name] = #name,
	FLOWTAB_REFUSALS(FLOWTAB_REFUSE_NAME)
#undef FLOWTAB_REFUSE_NAME
};

const char *const flowtab_refuse_descriptions[FLOWTAB_REFUSE_MAX] = {
#define FLOWTAB_REFUSE_DESC(name, desc) [FLOWTAB_REFUSE_##name] = desc,
	FLOWTAB_REFUSALS(FLOWTAB_REFUSE_DESC)
#undef FLOWTAB_REFUSE_DESC
};

const char *const flowtab_stat_names[FLOWTAB_STAT_MAX] = {
#define FLOWTAB_STAT_NAME(name, desc) [FLOWTAB_STAT_##name] = #name,
	FLOWTAB_STATS(FLOWTAB_STAT_NAME)
#undef FLOWTAB_STAT_NAME
};

const char *const flowtab_stat_descriptions[FLOWTAB_STAT_MAX] = {
#define FLOWTAB_STAT_DESC(name, desc) [FLOWTAB_STAT_##name] = desc,
	FLOWTAB_STATS(FLOWTAB_STAT_DESC)
#undef FLOWTAB_STAT_DESC
};

/* ---- hashing ---- */

static uint64_t
flowtab_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Word i of a key (8 bytes, native order: the hash is per process). */
static inline uint64_t
flowtab_word(const struct flow_key *k, unsigned i)
{
	uint64_t w;

	memcpy(&w, (const unsigned char *)k + 8 * i, sizeof(w));
	return w;
}

static inline uint64_t
flowtab_nh(uint64_t w, const uint32_t *key)
{
	return (uint64_t)(uint32_t)((uint32_t)w + key[0]) *
	       (uint32_t)((uint32_t)(w >> 32) + key[1]);
}

/*
 * The table hash: NH (the universal hash of UMAC) over the ten 32-bit words
 * of the key, whose collision probability for two distinct keys is at most
 * 2^-32 over the random keys drawn from the seed, then the murmur3
 * finaliser to spread it. Five independent multiplies: a few ns, against
 * SipHash's dozens. Every byte of the key counts, pad included, as in
 * flowtab_key_equal().
 */
static inline uint64_t
flowtab_hash(const struct flowtab *t, const struct flow_key *k)
{
	static_assert(sizeof(*k) == 40, "five words");
	/* Words 1 and 3 hold only the upper bytes of IPv6 addresses: an IPv4
	 * key skips them (they are 0; were they not, keys still compare whole). */
	uint64_t h = t->hash_key_final + flowtab_nh(flowtab_word(k, 0), &t->hash_key[0]) +
		     flowtab_nh(flowtab_word(k, 2), &t->hash_key[4]) +
		     flowtab_nh(flowtab_word(k, 4), &t->hash_key[8]);

	if (k->family != FLOW_FAMILY_IPV4)
		h += flowtab_nh(flowtab_word(k, 1), &t->hash_key[2]) +
		     flowtab_nh(flowtab_word(k, 3), &t->hash_key[6]);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static inline struct flowtab_hint
flowtab_locate(const struct flowtab *t, const struct flow_key *k)
{
	uint64_t h = flowtab_hash(t, k);
	uint16_t sig = (uint16_t)(h >> 48);

	return (struct flowtab_hint){ (uint32_t)h & t->bucket_mask, (uint16_t)(sig + (sig == 0)) };
}

/* The other bucket of a signature: an involution, never b itself. */
static inline uint32_t
flowtab_alt(const struct flowtab *t, uint32_t b, uint16_t sig)
{
	return (b ^ ((((uint32_t)sig * 0x9e3779b1u) >> t->bucket_shift) | 1u)) & t->bucket_mask;
}

static inline bool
flowtab_key_equal(const struct flow_key *a, const struct flow_key *b)
{
	return ((flowtab_word(a, 0) ^ flowtab_word(b, 0)) |
		(flowtab_word(a, 1) ^ flowtab_word(b, 1)) |
		(flowtab_word(a, 2) ^ flowtab_word(b, 2)) |
		(flowtab_word(a, 3) ^ flowtab_word(b, 3)) |
		(flowtab_word(a, 4) ^ flowtab_word(b, 4))) == 0;
}

static inline uint16_t
flowtab_slot_sig(const struct flowtab_bucket *b, unsigned s)
{
	return (uint16_t)(b->sig[s / 4] >> (16 * (s % 4)));
}

static inline void
flowtab_slot_set(struct flowtab_bucket *b, unsigned s, uint16_t sig, uint32_t idx)
{
	unsigned shift = 16 * (s % 4);

	b->sig[s / 4] = (b->sig[s / 4] & ~(0xffffull << shift)) | (uint64_t)sig << shift;
	b->idx[s] = idx;
}

/*
 * flowtab_match(b, sig): the slots of b holding sig (sig 0: the empty slots)
 * as a mask with one bit per slot, FLOWTAB_MATCH_ALL when all match;
 * flowtab_slot() turns its lowest bit into a slot number and m &= m - 1
 * steps to the next. The eight signatures are 16 bytes: one SSE2 compare
 * where there is SSE2 (little-endian: lane s is slot s), else a dozen word
 * operations.
 */
#if defined(__SSE2__) && !defined(FLOWTAB_NO_SIMD)   /* the latter: tests */
#define FLOWTAB_MATCH_ALL 0x5555ull   /* bit 2 s for slot s */

static inline uint64_t
flowtab_match(const struct flowtab_bucket *b, uint16_t sig)
{
	__m128i lanes = _mm_load_si128((const __m128i *)(const void *)b->sig);

	return (uint64_t)(unsigned)_mm_movemask_epi8(
		       _mm_cmpeq_epi16(lanes, _mm_set1_epi16((short)sig))) & FLOWTAB_MATCH_ALL;
}

static inline unsigned
flowtab_slot(uint64_t m)
{
	return flowtab_ctz(m) >> 1;
}
#else
#define FLOWTAB_MATCH_ALL (FLOWTAB_LANES * 3)   /* bit 16 j: slot j, 16 j + 1: slot 4 + j */

/* Bit 16 j set where 16-bit lane j of x is 0 (exact: no carry crosses lanes). */
static inline uint64_t
flowtab_zero_lanes(uint64_t x)
{
	uint64_t y = ((x & FLOWTAB_LOW15) + FLOWTAB_LOW15) | x;

	return (~y >> 15) & FLOWTAB_LANES;
}

static inline uint64_t
flowtab_match(const struct flowtab_bucket *b, uint16_t sig)
{
	uint64_t sig4 = sig * FLOWTAB_LANES;

	return flowtab_zero_lanes(b->sig[0] ^ sig4) | flowtab_zero_lanes(b->sig[1] ^ sig4) << 1;
}

static inline unsigned
flowtab_slot(uint64_t m)
{
	unsigned bit = flowtab_ctz(m);

	return (bit >> 4) + ((bit & 1) << 2);
}
#endif

static inline bool
flowtab_overflowed(const struct flowtab *t, uint32_t b)
{
	return (t->overflowed[b / 64] >> (b % 64)) & 1;
}

/* Count a key of primary bucket b going to (+1) or leaving (-1) its
 * alternative bucket. */
static inline void
flowtab_overflow_add(struct flowtab *t, uint32_t b, int delta)
{
	uint32_t n = t->buckets[b].overflow += (uint32_t)delta;
	uint64_t bit = 1ull << (b % 64);

	t->overflowed[b / 64] = n != 0 ? t->overflowed[b / 64] | bit
				       : t->overflowed[b / 64] & ~bit;
}

/* ---- create, destroy ---- */

/*
 * Zeroed (so every page is touched now, not on the packet path), cache-line
 * aligned, and on 2 MiB boundaries with a transparent huge page hint when
 * large: a lookup then misses the TLB far less often.
 */
static void *
flowtab_alloc(size_t size)
{
	size_t align = size >= FLOWTAB_HUGE ? FLOWTAB_HUGE : FLOWTAB_LINE;
	void *p;

	if (posix_memalign(&p, align, size) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	if (align == FLOWTAB_HUGE)
		(void)madvise(p, size / FLOWTAB_HUGE * FLOWTAB_HUGE, MADV_HUGEPAGE);
#endif
	memset(p, 0, size);
	return p;
}

/* The timeouts and refresh period, which a reload may change. */
static bool
flowtab_limits_ok(const struct flowtab_params *p)
{
	const uint32_t timeouts[] = { p->tcp_syn_ms, p->tcp_established_ms,
				      p->tcp_closing_ms, p->udp_ms };

	for (unsigned i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++)
		if (timeouts[i] == 0 || timeouts[i] > FLOWTAB_TIMEOUT_MAX)
			return false;
	return p->refresh_ms <= FLOWTAB_TIMEOUT_MAX;
}

static bool
flowtab_params_ok(const struct flowtab_params *p)
{
	return p->capacity > 0 && p->capacity <= FLOWTAB_CAPACITY_MAX && flowtab_limits_ok(p);
}

/* Timeouts, refresh period and insert rate; the token bucket keeps what it
 * holds, up to its new size (a new cap starts full). */
static void
flowtab_set_limits(struct flowtab *t, const struct flowtab_params *p)
{
	uint32_t burst = p->insert_rate / 10 < 64 ? 64 : p->insert_rate / 10;

	t->head.timeout_ms[FLOWTAB_SYN] = p->tcp_syn_ms;
	t->head.timeout_ms[FLOWTAB_ESTABLISHED] = p->tcp_established_ms;
	t->head.timeout_ms[FLOWTAB_CLOSING] = p->tcp_closing_ms;
	t->head.timeout_ms[FLOWTAB_UDP] = p->udp_ms;
	t->head.refresh_ms = p->refresh_ms;
	t->tokens_max = (uint64_t)burst * FLOWTAB_MILLI;
	if (t->rate == 0 || t->tokens > t->tokens_max)
		t->tokens = t->tokens_max;
	t->rate = p->insert_rate;
}

int
flowtab_tune(struct flowtab *t, const struct flowtab_params *p)
{
	if (!flowtab_limits_ok(p))
		return -EINVAL;
	flowtab_set_limits(t, p);
	t->scan_all = t->high;          /* due times may be late for shorter timeouts */
	return 0;
}

static void
flowtab_init(struct flowtab *t, const struct flowtab_params *p, uint32_t buckets)
{
	uint64_t seed = p->seed;
	unsigned bits = 0;

	while ((1u << bits) < buckets)
		bits++;
	t->bucket_mask = buckets - 1;
	t->bucket_shift = 32 - bits;
	t->capacity = p->capacity;
	t->free_head = FLOWTAB_NONE;
	for (unsigned i = 0; i < 10; i++)
		t->hash_key[i] = (uint32_t)flowtab_splitmix(&seed);
	t->hash_key_final = flowtab_splitmix(&seed);
	t->on_free = p->on_free;
	t->on_free_arg = p->on_free_arg;
	flowtab_set_limits(t, p);
}

struct flowtab *
flowtab_create(const struct flowtab_params *p)
{
	struct flowtab *t;
	uint32_t buckets = 2;

	if (p == NULL || !flowtab_params_ok(p)) {
		errno = EINVAL;
		return NULL;
	}
	while ((uint64_t)buckets * FLOWTAB_WAYS < p->capacity)
		buckets *= 2;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto fail;
	flowtab_init(t, p, buckets);
	t->bucket_bytes = (size_t)buckets * sizeof(*t->buckets);
	t->entry_bytes = (size_t)p->capacity * sizeof(*t->head.entries);
	t->bitmap_bytes = ((size_t)buckets + 511) / 512 * FLOWTAB_LINE;
	t->due_bytes = ((size_t)p->capacity + FLOWTAB_CHUNK - 1) / FLOWTAB_CHUNK * sizeof(uint32_t);
	t->buckets = flowtab_alloc(t->bucket_bytes);
	if (t->buckets == NULL)
		goto fail_table;
	t->head.entries = flowtab_alloc(t->entry_bytes);
	if (t->head.entries == NULL)
		goto fail_buckets;
	t->overflowed = flowtab_alloc(t->bitmap_bytes);
	if (t->overflowed == NULL)
		goto fail_entries;
	t->head.due = flowtab_alloc(t->due_bytes);    /* set by a chunk's first entry */
	if (t->head.due == NULL)
		goto fail_bitmap;
	return t;

fail_bitmap:
	free(t->overflowed);
fail_entries:
	free(t->head.entries);
fail_buckets:
	free(t->buckets);
fail_table:
	free(t);
fail:
	errno = ENOMEM;
	return NULL;
}

void
flowtab_destroy(struct flowtab *t)
{
	if (t == NULL)
		return;
	free(t->head.due);
	free(t->overflowed);
	free(t->head.entries);
	free(t->buckets);
	free(t);
}

/* ---- lookup ---- */

/* The entry of k among the slots m of bucket b, or NULL. */
static inline struct flowtab_entry *
flowtab_find(struct flowtab *t, const struct flowtab_bucket *b, uint64_t m,
	     const struct flow_key *k)
{
	for (; m != 0; m &= m - 1) {
		struct flowtab_entry *e = &t->head.entries[b->idx[flowtab_slot(m)] & FLOWTAB_IDX_MASK];

		if (flowtab_key_equal(&e->key, k))
			return e;
	}
	return NULL;
}

/* The second half of a lookup: the alternative bucket, when the primary
 * one has overflowed. */
static inline struct flowtab_entry *
flowtab_find_alt(struct flowtab *t, struct flowtab_hint pos, const struct flow_key *k)
{
	const struct flowtab_bucket *b;

	if (t->buckets[pos.bucket].overflow == 0)
		return NULL;
	b = &t->buckets[flowtab_alt(t, pos.bucket, pos.sig)];
	return flowtab_find(t, b, flowtab_match(b, pos.sig), k);
}

struct flowtab_entry *
flowtab_lookup(struct flowtab *t, const struct flow_key *k)
{
	struct flowtab_hint pos = flowtab_locate(t, k);
	const struct flowtab_bucket *b = &t->buckets[pos.bucket];
	struct flowtab_entry *e = flowtab_find(t, b, flowtab_match(b, pos.sig), k);

	return e != NULL ? e : flowtab_find_alt(t, pos, k);
}

/* The entry of the first slot in m. (Prefetch it at the call site: GCC
 * deletes the calls of an inline function that does nothing but prefetch.) */
static inline const struct flowtab_entry *
flowtab_first(const struct flowtab *t, const struct flowtab_bucket *b, uint64_t m)
{
	return &t->head.entries[b->idx[flowtab_slot(m)] & FLOWTAB_IDX_MASK];
}

/*
 * Three passes over n <= FLOWTAB_BURST_MAX keys, each prefetching what the
 * next one reads (the rte_hash_lookup_bulk pattern):
 *  1. hash; prefetch the primary bucket, and the alternative one if the
 *     primary has overflowed (a bit map small enough to stay in cache says
 *     so; the branch predicts well: few buckets overflow below 86 % load);
 *  2. match the primary bucket, or the alternative one when the primary has
 *     no candidate and has overflowed; prefetch the first candidate entry
 *     (branches here measured faster than selects: the prediction lets the
 *     core run ahead of the bucket misses);
 *  3. compare keys with the first candidate; a mismatch (a signature
 *     collision, about 1 in 8000 lookups) falls back to flowtab_lookup().
 * The chain of misses of a burst is two long: a bucket, then an entry.
 */
static inline __attribute__((always_inline)) void
flowtab_lookup_stage(struct flowtab *t, const struct flow_key *const keys[],
		     uint32_t n, struct flowtab_entry *out[], struct flowtab_hint *pos)
{
	struct flowtab_entry *first[FLOWTAB_BURST_MAX];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t b = (pos[i] = flowtab_locate(t, keys[i])).bucket;

		flowtab_prefetch(&t->buckets[b]);
		if (flowtab_overflowed(t, b))
			flowtab_prefetch(&t->buckets[flowtab_alt(t, b, pos[i].sig)]);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t b = pos[i].bucket;
		const struct flowtab_bucket *p = &t->buckets[b];
		uint64_t m = flowtab_match(p, pos[i].sig);

		if (m == 0 && p->overflow != 0) {
			p = &t->buckets[flowtab_alt(t, b, pos[i].sig)];
			m = flowtab_match(p, pos[i].sig);
		}
		first[i] = NULL;
		if (m != 0) {
			first[i] = &t->head.entries[p->idx[flowtab_slot(m)] & FLOWTAB_IDX_MASK];
			flowtab_prefetch(first[i]);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (first[i] == NULL || flowtab_key_equal(&first[i]->key, keys[i]))
			out[i] = first[i];
		else                            /* a signature collision: rare */
			out[i] = flowtab_lookup(t, keys[i]);
	}
}

void
flowtab_lookup_burst_hint(struct flowtab *t, const struct flow_key *const keys[],
			  uint32_t n, struct flowtab_entry *out[], struct flowtab_hint hint[])
{
	while (n > 0) {
		uint32_t c = n < FLOWTAB_BURST_MAX ? n : FLOWTAB_BURST_MAX;

		flowtab_lookup_stage(t, keys, c, out, hint);
		keys += c;
		out += c;
		hint += c;
		n -= c;
	}
}

void
flowtab_lookup_burst(struct flowtab *t, const struct flow_key *const keys[],
		     uint32_t n, struct flowtab_entry *out[])
{
	struct flowtab_hint scratch[FLOWTAB_BURST_MAX];

	for (uint32_t i = 0; i < n; i += FLOWTAB_BURST_MAX)
		flowtab_lookup_stage(t, keys + i, n - i < FLOWTAB_BURST_MAX ? n - i :
				     FLOWTAB_BURST_MAX, out + i, scratch);
}

/* ---- entries, expiry ---- */

static inline uint32_t
flowtab_entry_alloc(struct flowtab *t)
{
	uint32_t i = t->free_head;

	if (i == FLOWTAB_NONE) {
		assert(t->high < t->capacity);
		i = t->high++;
		/* a new table fills in order: fetch a few lines ahead */
		flowtab_prefetch(&t->head.entries[i + 16 < t->capacity ? i + 16 : i]);
	} else {
		t->free_head = t->head.entries[i].backend;
		if (t->free_head != FLOWTAB_NONE)
			flowtab_prefetch(&t->head.entries[t->free_head]);
	}
	t->count++;
	return i;
}

static inline bool
flowtab_entry_available(const struct flowtab *t)
{
	return t->free_head != FLOWTAB_NONE || t->high < t->capacity;
}

/* Put entry i on the free list. */
static void
flowtab_entry_release(struct flowtab *t, uint32_t i)
{
	struct flowtab_entry *e = &t->head.entries[i];

	if (t->on_free != NULL)
		t->on_free(t->on_free_arg, e);
	e->flags = 0;
	e->backend = t->free_head;
	t->free_head = i;
	t->count--;
}

/* Empty slot s of bucket b (index bi), keeping overflow counts right. */
static void
flowtab_unlink(struct flowtab *t, uint32_t bi, unsigned s)
{
	struct flowtab_bucket *b = &t->buckets[bi];
	uint16_t sig = flowtab_slot_sig(b, s);

	if (b->idx[s] & FLOWTAB_IDX_ALT)
		flowtab_overflow_add(t, flowtab_alt(t, bi, sig), -1);
	flowtab_slot_set(b, s, 0, 0);
}

/* Unlink entry i from its bucket and free it. */
static void
flowtab_entry_free(struct flowtab *t, uint32_t i)
{
	struct flowtab_hint pos = flowtab_locate(t, &t->head.entries[i].key);
	uint32_t bi = pos.bucket;

	for (unsigned pass = 0; pass < 2; pass++) {
		const struct flowtab_bucket *b = &t->buckets[bi];

		for (uint64_t m = flowtab_match(b, pos.sig); m != 0; m &= m - 1) {
			unsigned s = flowtab_slot(m);

			if ((b->idx[s] & FLOWTAB_IDX_MASK) == i) {
				flowtab_unlink(t, bi, s);
				flowtab_entry_release(t, i);
				return;
			}
		}
		bi = flowtab_alt(t, bi, pos.sig);
	}
	assert(!"flowtab entry not in its buckets");
}

void
flowtab_remove(struct flowtab *t, struct flowtab_entry *e)
{
	assert(e >= t->head.entries && e < t->head.entries + t->high);
	assert(e->flags & FLOWTAB_FLAG_LIVE);
	flowtab_entry_free(t, (uint32_t)(e - t->head.entries));
	t->stat[FLOWTAB_STAT_REMOVED]++;
}

uint32_t
flowtab_expire(struct flowtab *t, uint32_t now_ms, uint32_t budget)
{
	uint32_t freed = 0, *due = t->head.due;

	if (budget > t->high)
		budget = t->high;
	for (uint32_t v = 0; v < budget; v++) {
		uint32_t i = t->expire_cursor;
		struct flowtab_entry *e = &t->head.entries[i];

		if (i % FLOWTAB_CHUNK == 0) {
			uint32_t c = i / FLOWTAB_CHUNK, end;

			if (t->scan_all == 0 && (int32_t)(now_ms - due[c]) < 0) {
				/* not due: no entry of the chunk can have expired */
				end = i + FLOWTAB_CHUNK < t->high ? i + FLOWTAB_CHUNK : t->high;
				v += end - i - 1;
				t->expire_cursor = end < t->high ? end : 0;
				continue;
			}
			/* the visit sets it afresh from the entries that stay */
			due[c] = now_ms + FLOWTAB_TIMEOUT_MAX;
		}
		t->expire_cursor = i + 1 < t->high ? i + 1 : 0;
		t->scan_all -= t->scan_all > 0;
		if (!(e->flags & FLOWTAB_FLAG_LIVE))
			continue;
		if (flowtab_expired(t, e, now_ms)) {
			flowtab_entry_free(t, i);
			freed++;
		} else {
			flowtab_due_lower(t, e, e->last_ms + t->head.timeout_ms[e->state]);
		}
	}
	t->stat[FLOWTAB_STAT_EXPIRED] += freed;
	return freed;
}

/* ---- insert ---- */

static enum flowtab_state
flowtab_initial_state(const struct flow_key *k, uint8_t tcp_flags)
{
	if (k->proto != IPPROTO_TCP)
		return FLOWTAB_UDP;
	if (tcp_flags & (FLOWTAB_TCP_FIN | FLOWTAB_TCP_RST))
		return FLOWTAB_CLOSING;
	if (tcp_flags & FLOWTAB_TCP_SYN)
		return FLOWTAB_SYN;
	return FLOWTAB_ESTABLISHED;
}

static void
flowtab_entry_start(struct flowtab *t, struct flowtab_entry *e, uint32_t backend,
		    enum flowtab_state state, uint32_t now_ms)
{
	uint32_t i = (uint32_t)(e - t->head.entries), at = now_ms + t->head.timeout_ms[state];

	if (i % FLOWTAB_CHUNK == 0 && i + 1 == t->high)
		t->head.due[i / FLOWTAB_CHUNK] = at;    /* the chunk's only entry */
	else
		flowtab_due_lower(t, e, at);
	e->backend = backend;
	e->last_ms = now_ms;
	e->exported_ms = now_ms;
	e->created_ms = now_ms;
	e->packets = 1;
	e->sync_after = 0;
	e->state = (uint8_t)state;
	/* made from anything but a SYN: perhaps a peer's flow (flowtab.h) */
	e->flags = state == FLOWTAB_SYN ? FLOWTAB_FLAG_LIVE
					: FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_PROVISIONAL;
	e->user = 0;
}

/* Take a token, refilling first; always true without a rate. */
static bool
flowtab_token_take(struct flowtab *t, uint32_t now_ms)
{
	int32_t elapsed = (int32_t)(now_ms - t->refill_ms);

	if (t->rate == 0)
		return true;
	if (!t->refill_started) {
		t->refill_started = true;
		t->refill_ms = now_ms;
	} else if (elapsed > 0) {
		t->tokens += (uint64_t)elapsed * t->rate;   /* ms * tokens/s = milli-tokens */
		if (t->tokens > t->tokens_max)
			t->tokens = t->tokens_max;
		t->refill_ms = now_ms;
	}
	if (t->tokens < FLOWTAB_MILLI)
		return false;
	t->tokens -= FLOWTAB_MILLI;
	return true;
}

/* Free the first expired entry of the key's two buckets; whether one was. */
static bool
flowtab_evict(struct flowtab *t, struct flowtab_hint pos, uint32_t now_ms)
{
	uint32_t pair[2] = { pos.bucket, flowtab_alt(t, pos.bucket, pos.sig) };

	for (unsigned p = 0; p < 2; p++)
		for (uint64_t m = ~flowtab_match(&t->buckets[pair[p]], 0) & FLOWTAB_MATCH_ALL;
		     m != 0; m &= m - 1)
			flowtab_prefetch(flowtab_first(t, &t->buckets[pair[p]], m));
	for (unsigned p = 0; p < 2; p++) {
		const struct flowtab_bucket *b = &t->buckets[pair[p]];

		for (uint64_t m = ~flowtab_match(b, 0) & FLOWTAB_MATCH_ALL; m != 0; m &= m - 1) {
			unsigned s = flowtab_slot(m);
			uint32_t i = b->idx[s] & FLOWTAB_IDX_MASK;

			if (!flowtab_expired(t, &t->head.entries[i], now_ms))
				continue;
			flowtab_unlink(t, pair[p], s);
			flowtab_entry_release(t, i);
			t->stat[FLOWTAB_STAT_EVICTED]++;
			return true;
		}
	}
	return false;
}

/* Move the item in slot s of bucket from into its other bucket, to (the
 * caller checked it has a free slot). */
static void
flowtab_move(struct flowtab *t, uint32_t from, unsigned s, uint32_t to)
{
	struct flowtab_bucket *src = &t->buckets[from], *dst = &t->buckets[to];
	uint16_t sig = flowtab_slot_sig(src, s);
	uint32_t idx = src->idx[s];

	if (idx & FLOWTAB_IDX_ALT)
		flowtab_overflow_add(t, to, -1);     /* back home */
	else
		flowtab_overflow_add(t, from, 1);    /* away from home */
	flowtab_slot_set(dst, flowtab_slot(flowtab_match(dst, 0)), sig, idx ^ FLOWTAB_IDX_ALT);
	flowtab_slot_set(src, s, 0, 0);
	t->stat[FLOWTAB_STAT_MOVED]++;
}

/* Make the moves of the BFS path ending at node leaf, from the leaf up, so
 * that the root bucket gets a free slot. Each move is checked first, and
 * any prefix of the moves leaves the table consistent. */
static bool
flowtab_cuckoo_shift(struct flowtab *t, const struct flowtab_bfs *q, int leaf)
{
	for (int x = leaf; q[x].parent >= 0; x = q[x].parent) {
		uint32_t from = q[q[x].parent].bucket, to = q[x].bucket;
		uint16_t sig = flowtab_slot_sig(&t->buckets[from], q[x].slot);

		if (flowtab_match(&t->buckets[to], 0) == 0 || sig == 0 ||
		    flowtab_alt(t, from, sig) != to)
			return false;
		flowtab_move(t, from, q[x].slot, to);
	}
	return true;
}

/* Breadth-first search from the key's two full buckets for a chain of
 * moves that ends in a bucket with a free slot; make the moves. */
static bool
flowtab_cuckoo(struct flowtab *t, struct flowtab_hint pos)
{
	struct flowtab_bfs q[FLOWTAB_BFS_NODES];
	int head = 0, tail = 2;

	q[0] = (struct flowtab_bfs){ pos.bucket, -1, 0 };
	q[1] = (struct flowtab_bfs){ flowtab_alt(t, pos.bucket, pos.sig), -1, 0 };
	for (; head < tail && tail + FLOWTAB_WAYS <= FLOWTAB_BFS_NODES; head++) {
		const struct flowtab_bucket *b = &t->buckets[q[head].bucket];

		for (unsigned s = 0; s < FLOWTAB_WAYS; s++) {
			uint32_t alt = flowtab_alt(t, q[head].bucket, flowtab_slot_sig(b, s));

			q[tail + (int)s] = (struct flowtab_bfs){ alt, (int16_t)head, (uint8_t)s };
			flowtab_prefetch(&t->buckets[alt]);
		}
		for (unsigned s = 0; s < FLOWTAB_WAYS; s++, tail++)
			if (flowtab_match(&t->buckets[q[tail].bucket], 0) != 0)
				return flowtab_cuckoo_shift(t, q, tail);
	}
	return false;
}

/* A free slot of the key's primary bucket and a free entry; the entry's
 * index, or NONE. */
static inline __attribute__((always_inline)) uint32_t
flowtab_claim_primary(struct flowtab *t, struct flowtab_hint pos)
{
	struct flowtab_bucket *b = &t->buckets[pos.bucket];
	uint64_t m = flowtab_match(b, 0);
	uint32_t i;

	if (m == 0 || !flowtab_entry_available(t))
		return FLOWTAB_NONE;
	i = flowtab_entry_alloc(t);
	flowtab_slot_set(b, flowtab_slot(m), pos.sig, i);
	return i;
}

/* Claim a free slot for the key at pos, in its primary bucket if it can,
 * and a free entry (there must be one); the entry's index, or NONE. */
static uint32_t
flowtab_claim(struct flowtab *t, struct flowtab_hint pos)
{
	struct flowtab_bucket *alt;
	uint64_t m;
	uint32_t i = flowtab_claim_primary(t, pos);

	if (i != FLOWTAB_NONE)
		return i;
	alt = &t->buckets[flowtab_alt(t, pos.bucket, pos.sig)];
	m = flowtab_match(alt, 0);
	if (m == 0)
		return FLOWTAB_NONE;
	i = flowtab_entry_alloc(t);
	flowtab_slot_set(alt, flowtab_slot(m), pos.sig, i | FLOWTAB_IDX_ALT);
	flowtab_overflow_add(t, pos.bucket, 1);
	return i;
}

/* Entry i, holding k (key bytes copied, pad included). */
static inline struct flowtab_entry *
flowtab_entry_key(struct flowtab *t, uint32_t i, const struct flow_key *k)
{
	struct flowtab_entry *e = &t->head.entries[i];

	memcpy(&e->key, k, sizeof(e->key));
	return e;
}

/* flowtab_place() past the primary bucket: a free slot of either bucket,
 * else the slot of an expired entry of the two, else a free slot made by
 * cuckoo moves; or NULL. */
static __attribute__((noinline, cold)) struct flowtab_entry *
flowtab_place_slow(struct flowtab *t, const struct flow_key *k, struct flowtab_hint pos,
		   uint32_t now_ms)
{
	uint32_t i = FLOWTAB_NONE;

	if (flowtab_entry_available(t))
		i = flowtab_claim(t, pos);
	if (i == FLOWTAB_NONE && flowtab_evict(t, pos, now_ms))
		i = flowtab_claim(t, pos);
	if (i == FLOWTAB_NONE && flowtab_entry_available(t) && flowtab_cuckoo(t, pos))
		i = flowtab_claim(t, pos);
	return i == FLOWTAB_NONE ? NULL : flowtab_entry_key(t, i, k);
}

/* Find room for k and copy it in: a free slot of its primary bucket inline,
 * as for most inserts below ~60 % load (149 -> 113 instructions an insert
 * without the calls), else flowtab_place_slow(); or NULL. */
static inline __attribute__((always_inline)) struct flowtab_entry *
flowtab_place(struct flowtab *t, const struct flow_key *k, struct flowtab_hint pos,
	      uint32_t now_ms)
{
	uint32_t i = flowtab_claim_primary(t, pos);

	if (__builtin_expect(i != FLOWTAB_NONE, 1))
		return flowtab_entry_key(t, i, k);
	return flowtab_place_slow(t, k, pos, now_ms);
}

static struct flowtab_entry *
flowtab_refuse(struct flowtab *t, enum flowtab_refuse reason, enum flowtab_refuse *why)
{
	t->stat[reason == FLOWTAB_REFUSE_RATE ? FLOWTAB_STAT_REFUSED_RATE
					      : FLOWTAB_STAT_REFUSED_FULL]++;
	if (why != NULL)
		*why = reason;
	return NULL;
}

struct flowtab_entry *
flowtab_insert_hint(struct flowtab *t, const struct flow_key *k, struct flowtab_hint hint,
		    uint32_t backend, uint8_t tcp_flags, uint32_t now_ms,
		    enum flowtab_refuse *why)
{
	struct flowtab_entry *e;

	assert(hint.bucket == flowtab_locate(t, k).bucket && hint.sig == flowtab_locate(t, k).sig);
	if (!flowtab_token_take(t, now_ms))
		return flowtab_refuse(t, FLOWTAB_REFUSE_RATE, why);
	e = flowtab_place(t, k, hint, now_ms);
	if (e == NULL) {
		if (t->rate != 0)
			t->tokens += FLOWTAB_MILLI;
		return flowtab_refuse(t, FLOWTAB_REFUSE_FULL, why);
	}
	flowtab_entry_start(t, e, backend, flowtab_initial_state(k, tcp_flags), now_ms);
	t->stat[FLOWTAB_STAT_INSERTED]++;
	return e;
}

struct flowtab_entry *
flowtab_insert(struct flowtab *t, const struct flow_key *k, uint32_t backend,
	       uint8_t tcp_flags, uint32_t now_ms, enum flowtab_refuse *why)
{
	return flowtab_insert_hint(t, k, flowtab_locate(t, k), backend, tcp_flags, now_ms, why);
}

struct flowtab_entry *
flowtab_reuse(struct flowtab *t, struct flowtab_entry *e, uint32_t backend,
	      uint8_t tcp_flags, uint32_t now_ms, enum flowtab_refuse *why)
{
	assert(e->flags & FLOWTAB_FLAG_LIVE);
	if (!flowtab_token_take(t, now_ms))
		return flowtab_refuse(t, FLOWTAB_REFUSE_RATE, why);
	flowtab_entry_start(t, e, backend, flowtab_initial_state(&e->key, tcp_flags), now_ms);
	t->stat[FLOWTAB_STAT_REUSED]++;
	return e;
}

struct flowtab_entry *
flowtab_insert_synced(struct flowtab *t, const struct flow_key *k, uint32_t backend,
		      enum flowtab_state state, uint32_t remaining_ms, uint32_t now_ms,
		      enum flowtab_refuse *why)
{
	struct flowtab_entry *e;
	uint32_t timeout;

	assert(state < FLOWTAB_STATE_MAX);
	timeout = t->head.timeout_ms[state];
	if (remaining_ms > timeout)
		remaining_ms = timeout;
	e = flowtab_place(t, k, flowtab_locate(t, k), now_ms);
	if (e == NULL)
		return flowtab_refuse(t, FLOWTAB_REFUSE_FULL, why);
	flowtab_entry_start(t, e, backend, state, now_ms);
	e->last_ms = now_ms - (timeout - remaining_ms);
	flowtab_due_lower(t, e, now_ms + remaining_ms);
	e->packets = 0;
	e->flags = FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_SYNCED | FLOWTAB_FLAG_EXPORTED;
	t->stat[FLOWTAB_STAT_SYNCED]++;
	return e;
}

void
flowtab_adopt(struct flowtab *t, struct flowtab_entry *e, uint32_t backend, uint32_t now_ms)
{
	(void)t;
	assert(e->flags & FLOWTAB_FLAG_PROVISIONAL);
	e->backend = backend;
	e->exported_ms = now_ms;
	e->flags = FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_SYNCED | FLOWTAB_FLAG_EXPORTED;
}

/* ---- packets of known flows ---- */

enum flowtab_export
flowtab_touch_unexported(struct flowtab *t, struct flowtab_entry *e, uint8_t tcp_flags,
			 uint32_t now_ms)
{
	e->last_ms = now_ms;
	e->packets += e->packets != UINT16_MAX;
	if ((e->flags & FLOWTAB_FLAG_PROVISIONAL) &&
	    (int32_t)(now_ms - e->created_ms) >= (int32_t)FLOWTAB_PROVISIONAL_MS) {
		e->flags &= (uint8_t)~FLOWTAB_FLAG_PROVISIONAL;   /* no peer claimed it */
		t->stat[FLOWTAB_STAT_PROVISIONAL_KEPT]++;
	}
	switch (flowtab_step(t, e, tcp_flags, now_ms)) {
	case FLOWTAB_STEP_SAME:             /* ESTABLISHED or UDP */
	case FLOWTAB_STEP_ESTABLISHED:
		break;
	default:                            /* SYN, or closing: the peers never */
		return FLOWTAB_EXPORT_NONE; /* heard of it, no CLOSE */
	}
	if ((e->flags & FLOWTAB_FLAG_PROVISIONAL) || e->packets < e->sync_after)
		return FLOWTAB_EXPORT_NONE;
	e->flags |= FLOWTAB_FLAG_EXPORTED;
	e->exported_ms = now_ms;
	return FLOWTAB_EXPORT_NEW;
}

/* ---- walk, status ---- */

uint32_t
flowtab_walk(const struct flowtab *t, uint64_t *cursor, uint32_t max,
	     void (*fn)(const struct flowtab_entry *e, void *arg), void *arg)
{
	uint64_t i = *cursor, scan = (uint64_t)max * 16 + 64;
	uint32_t passed = 0;

	if (i == FLOWTAB_WALK_END)
		return 0;
	for (; i < t->high && passed < max && scan > 0; i++, scan--) {
		const struct flowtab_entry *e = &t->head.entries[i];

		if (e->flags & FLOWTAB_FLAG_LIVE) {
			fn(e, arg);
			passed++;
		}
	}
	*cursor = i >= t->high ? FLOWTAB_WALK_END : i;
	return passed;
}

/* Every occupied slot holds a live entry whose key hashes here, flagged
 * right; counts the slots, and tallies the overflow counts in scratch. */
static bool
flowtab_audit_slots(struct flowtab *t, uint32_t *slots)
{
	for (uint32_t bi = 0; bi <= t->bucket_mask; bi++) {
		const struct flowtab_bucket *b = &t->buckets[bi];

		for (uint64_t m = ~flowtab_match(b, 0) & FLOWTAB_MATCH_ALL; m != 0; m &= m - 1) {
			unsigned s = flowtab_slot(m);
			uint32_t i = b->idx[s] & FLOWTAB_IDX_MASK;
			struct flowtab_hint pos;

			if (i >= t->high || !(t->head.entries[i].flags & FLOWTAB_FLAG_LIVE))
				return false;
			pos = flowtab_locate(t, &t->head.entries[i].key);
			if (pos.sig != flowtab_slot_sig(b, s))
				return false;
			if (!(b->idx[s] & FLOWTAB_IDX_ALT) ? pos.bucket != bi
			    : flowtab_alt(t, pos.bucket, pos.sig) != bi)
				return false;
			if (b->idx[s] & FLOWTAB_IDX_ALT)
				t->buckets[pos.bucket].scratch++;
			(*slots)++;
		}
	}
	return true;
}

bool
flowtab_audit(struct flowtab *t)
{
	uint32_t slots = 0, live = 0, freed = 0;
	bool ok;

	for (uint32_t bi = 0; bi <= t->bucket_mask; bi++)
		t->buckets[bi].scratch = 0;
	ok = flowtab_audit_slots(t, &slots);
	for (uint32_t bi = 0; bi <= t->bucket_mask; bi++) {
		ok = ok && t->buckets[bi].scratch == t->buckets[bi].overflow &&
		     flowtab_overflowed(t, bi) == (t->buckets[bi].overflow != 0);
		t->buckets[bi].scratch = 0;
	}
	for (uint32_t i = 0; ok && i < t->high; i++) {
		const struct flowtab_entry *e = &t->head.entries[i];

		if (!(e->flags & FLOWTAB_FLAG_LIVE))
			continue;
		live++;
		ok = flowtab_lookup(t, &e->key) == e;   /* found, so in a slot */
		/* and its chunk is due no later than it expires (but while a sweep
		 * after shorter timeouts runs, and in the chunk the scan is in the
		 * middle of: it sets the chunk's due time afresh as it goes) */
		ok = ok && (t->scan_all > 0 || (i / FLOWTAB_CHUNK == t->expire_cursor / FLOWTAB_CHUNK &&
						t->expire_cursor % FLOWTAB_CHUNK != 0) ||
			    (int32_t)(e->last_ms + t->head.timeout_ms[e->state] -
				      t->head.due[i / FLOWTAB_CHUNK]) >= 0);
	}
	for (uint32_t i = t->free_head; ok && i != FLOWTAB_NONE; i = t->head.entries[i].backend)
		ok = i < t->high && t->head.entries[i].flags == 0 && ++freed <= t->high;
	/* as many slots as live entries, each found: each in exactly one slot */
	return ok && slots == live && live == t->count && live + freed == t->high;
}

uint32_t
flowtab_count(const struct flowtab *t)
{
	return t->count;
}

uint32_t
flowtab_used(const struct flowtab *t)
{
	return t->high;
}

uint32_t
flowtab_capacity(const struct flowtab *t)
{
	return t->capacity;
}

size_t
flowtab_memory(const struct flowtab *t)
{
	return sizeof(*t) + t->bucket_bytes + t->entry_bytes + t->bitmap_bytes + t->due_bytes;
}

size_t
flowtab_bytes_per_flow(const struct flowtab *t)
{
	return (flowtab_memory(t) + t->capacity - 1) / t->capacity;
}

const uint64_t *
flowtab_stats(const struct flowtab *t)
{
	return t->stat;
}
