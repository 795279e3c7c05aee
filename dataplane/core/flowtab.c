/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/flowtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <sys/mman.h>

/*
 * GCC and Clang builtins (both compilers we build with): prefetch has no
 * portable spelling, and ctz is one instruction instead of a loop.
 */
#define flowtab_prefetch(p) __builtin_prefetch((p), 0, 3)
#define flowtab_ctz(x) ((unsigned)__builtin_ctz(x))

enum {
	FLOWTAB_WAYS = 8,             /* slots per bucket */
	FLOWTAB_BFS_NODES = 512,      /* buckets a cuckoo search may visit */
	FLOWTAB_HUGE = 2u << 20,      /* transparent huge page size */
	FLOWTAB_LINE = 64,
};

#define FLOWTAB_NONE UINT32_MAX       /* end of the free list */
#define FLOWTAB_MILLI 1000u           /* token bucket: milli-tokens per token */

struct flowtab_bucket {
	uint32_t sig[FLOWTAB_WAYS];   /* 0: empty slot */
	uint32_t idx[FLOWTAB_WAYS];   /* index into entries[] */
};

static_assert(sizeof(struct flowtab_bucket) == FLOWTAB_LINE, "bucket is one cache line");

struct flowtab {
	struct flowtab_bucket *buckets;
	struct flowtab_entry *entries;
	uint32_t bucket_mask;         /* bucket count - 1 */
	uint32_t bucket_shift;        /* 32 - log2(bucket count) */
	uint32_t capacity;
	uint32_t count;               /* entries in use */
	uint32_t high;                /* entries[high..] never used yet */
	uint32_t free_head;           /* freed entries, linked through backend */
	uint32_t expire_cursor;
	uint32_t hash_key[10];        /* NH keys, one per 32-bit key word */
	uint64_t hash_key_final;
	uint32_t timeout_ms[FLOWTAB_STATE_MAX];
	uint32_t refresh_ms;
	uint32_t rate;                /* tokens per second; 0: no cap */
	uint32_t refill_ms;           /* time of the last refill */
	bool refill_started;
	uint64_t tokens;              /* milli-tokens */
	uint64_t tokens_max;
	size_t bucket_bytes, entry_bytes;
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

/*
 * The table hash: NH (the universal hash of UMAC) over the ten 32-bit words
 * of the key, whose collision probability for two distinct keys is at most
 * 2^-32 over the random keys, then the murmur3 finaliser to spread it. Five
 * independent multiplies: a few nanoseconds, against SipHash's dozens.
 */
static inline uint64_t
flowtab_hash(const struct flowtab *t, const struct flow_key *k)
{
	uint32_t w[10];
	uint64_t h = t->hash_key_final;

	memcpy(w, k, sizeof(w));
	for (unsigned i = 0; i < 10; i += 2)
		h += (uint64_t)(uint32_t)(w[i] + t->hash_key[i]) *
		     (uint32_t)(w[i + 1] + t->hash_key[i + 1]);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static inline uint32_t
flowtab_sig(uint64_t h)
{
	uint32_t sig = (uint32_t)(h >> 32);

	return sig + (sig == 0);
}

/* The other bucket of a signature: an involution, never b itself. */
static inline uint32_t
flowtab_alt(const struct flowtab *t, uint32_t b, uint32_t sig)
{
	return (b ^ (((sig * 0x9e3779b1u) >> t->bucket_shift) | 1u)) & t->bucket_mask;
}

static inline bool
flowtab_key_equal(const struct flow_key *a, const struct flow_key *b)
{
	uint64_t x[5], y[5];

	memcpy(x, a, sizeof(x));
	memcpy(y, b, sizeof(y));
	return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]) |
		(x[4] ^ y[4])) == 0;
}

/* Bit i set when slot i of b holds sig (sig 0: when slot i is empty). */
static inline uint32_t
flowtab_match(const struct flowtab_bucket *b, uint32_t sig)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < FLOWTAB_WAYS; i++)
		m |= (uint32_t)(b->sig[i] == sig) << i;
	return m;
}

static inline int
flowtab_free_slot(const struct flowtab_bucket *b)
{
	uint32_t m = flowtab_match(b, 0);

	return m ? (int)flowtab_ctz(m) : -1;
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

static bool
flowtab_params_ok(const struct flowtab_params *p)
{
	const uint32_t timeouts[] = { p->tcp_syn_ms, p->tcp_established_ms,
				      p->tcp_closing_ms, p->udp_ms };

	if (p->capacity == 0 || p->capacity > FLOWTAB_CAPACITY_MAX)
		return false;
	for (unsigned i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++)
		if (timeouts[i] == 0 || timeouts[i] > FLOWTAB_TIMEOUT_MAX)
			return false;
	return p->refresh_ms <= FLOWTAB_TIMEOUT_MAX;
}

static void
flowtab_init(struct flowtab *t, const struct flowtab_params *p, uint32_t buckets)
{
	uint64_t seed = p->seed;
	uint32_t burst = p->insert_rate / 10 < 64 ? 64 : p->insert_rate / 10;
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
	t->timeout_ms[FLOWTAB_SYN] = p->tcp_syn_ms;
	t->timeout_ms[FLOWTAB_ESTABLISHED] = p->tcp_established_ms;
	t->timeout_ms[FLOWTAB_CLOSING] = p->tcp_closing_ms;
	t->timeout_ms[FLOWTAB_UDP] = p->udp_ms;
	t->refresh_ms = p->refresh_ms;
	t->rate = p->insert_rate;
	t->tokens_max = (uint64_t)burst * FLOWTAB_MILLI;
	t->tokens = t->tokens_max;
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
	t->entry_bytes = (size_t)p->capacity * sizeof(*t->entries);
	t->buckets = flowtab_alloc(t->bucket_bytes);
	if (t->buckets == NULL)
		goto fail_table;
	t->entries = flowtab_alloc(t->entry_bytes);
	if (t->entries == NULL)
		goto fail_buckets;
	return t;

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
	free(t->entries);
	free(t->buckets);
	free(t);
}

/* ---- lookup ---- */

/* The entry of k among the slots of m (bits 0-7: b1, 8-15: b2), or NULL. */
static inline struct flowtab_entry *
flowtab_resolve(struct flowtab *t, const struct flow_key *k,
		uint32_t b1, uint32_t b2, uint32_t m)
{
	while (m != 0) {
		unsigned bit = flowtab_ctz(m);
		const struct flowtab_bucket *b = &t->buckets[bit < FLOWTAB_WAYS ? b1 : b2];
		struct flowtab_entry *e = &t->entries[b->idx[bit % FLOWTAB_WAYS]];

		if (flowtab_key_equal(&e->key, k))
			return e;
		m &= m - 1;
	}
	return NULL;
}

static inline uint32_t
flowtab_match2(const struct flowtab *t, uint32_t b1, uint32_t b2, uint32_t sig)
{
	return flowtab_match(&t->buckets[b1], sig) |
	       flowtab_match(&t->buckets[b2], sig) << FLOWTAB_WAYS;
}

struct flowtab_entry *
flowtab_lookup(struct flowtab *t, const struct flow_key *k)
{
	uint64_t h = flowtab_hash(t, k);
	uint32_t sig = flowtab_sig(h), b1 = (uint32_t)h & t->bucket_mask;
	uint32_t b2 = flowtab_alt(t, b1, sig);

	return flowtab_resolve(t, k, b1, b2, flowtab_match2(t, b1, b2, sig));
}

/* Three passes over n <= FLOWTAB_BURST_MAX keys, each prefetching what the
 * next one reads: buckets, then the first candidate entry of each key. */
static void
flowtab_lookup_stage(struct flowtab *t, const struct flow_key *const keys[],
		     uint32_t n, struct flowtab_entry *out[])
{
	uint32_t b1[FLOWTAB_BURST_MAX], b2[FLOWTAB_BURST_MAX];
	uint32_t sig[FLOWTAB_BURST_MAX], m[FLOWTAB_BURST_MAX];

	for (uint32_t i = 0; i < n; i++) {
		uint64_t h = flowtab_hash(t, keys[i]);

		sig[i] = flowtab_sig(h);
		b1[i] = (uint32_t)h & t->bucket_mask;
		b2[i] = flowtab_alt(t, b1[i], sig[i]);
		flowtab_prefetch(&t->buckets[b1[i]]);
		flowtab_prefetch(&t->buckets[b2[i]]);
	}
	for (uint32_t i = 0; i < n; i++) {
		m[i] = flowtab_match2(t, b1[i], b2[i], sig[i]);
		if (m[i] != 0) {
			unsigned bit = flowtab_ctz(m[i]);
			const struct flowtab_bucket *b =
				&t->buckets[bit < FLOWTAB_WAYS ? b1[i] : b2[i]];

			flowtab_prefetch(&t->entries[b->idx[bit % FLOWTAB_WAYS]]);
		}
	}
	for (uint32_t i = 0; i < n; i++)
		out[i] = flowtab_resolve(t, keys[i], b1[i], b2[i], m[i]);
}

void
flowtab_lookup_burst(struct flowtab *t, const struct flow_key *const keys[],
		     uint32_t n, struct flowtab_entry *out[])
{
	while (n > 0) {
		uint32_t c = n < FLOWTAB_BURST_MAX ? n : FLOWTAB_BURST_MAX;

		flowtab_lookup_stage(t, keys, c, out);
		keys += c;
		out += c;
		n -= c;
	}
}

/* ---- entries, expiry ---- */

bool
flowtab_expired(const struct flowtab *t, const struct flowtab_entry *e, uint32_t now_ms)
{
	assert(e->state < FLOWTAB_STATE_MAX);
	return (int32_t)(now_ms - e->last_ms) >= (int32_t)t->timeout_ms[e->state];
}

uint32_t
flowtab_timeout(const struct flowtab *t, enum flowtab_state state)
{
	assert(state < FLOWTAB_STATE_MAX);
	return t->timeout_ms[state];
}

static inline uint32_t
flowtab_entry_alloc(struct flowtab *t)
{
	uint32_t i = t->free_head;

	if (i == FLOWTAB_NONE) {
		assert(t->high < t->capacity);
		i = t->high++;
	} else {
		t->free_head = t->entries[i].backend;
		if (t->free_head != FLOWTAB_NONE)
			flowtab_prefetch(&t->entries[t->free_head]);
	}
	t->count++;
	return i;
}

static inline bool
flowtab_entry_available(const struct flowtab *t)
{
	return t->free_head != FLOWTAB_NONE || t->high < t->capacity;
}

/* Unlink entry i from its bucket and put it on the free list. */
static void
flowtab_entry_free(struct flowtab *t, uint32_t i)
{
	struct flowtab_entry *e = &t->entries[i];
	uint64_t h = flowtab_hash(t, &e->key);
	uint32_t sig = flowtab_sig(h), b = (uint32_t)h & t->bucket_mask;
	uint32_t m = flowtab_match(&t->buckets[b], sig);

	for (unsigned pass = 0; pass < 2; pass++) {
		for (; m != 0; m &= m - 1) {
			unsigned s = flowtab_ctz(m);

			if (t->buckets[b].idx[s] == i) {
				t->buckets[b].sig[s] = 0;
				goto unlinked;
			}
		}
		b = flowtab_alt(t, b, sig);
		m = flowtab_match(&t->buckets[b], sig);
	}
	assert(!"flowtab entry not in its buckets");
unlinked:
	e->flags = 0;
	e->backend = t->free_head;
	t->free_head = i;
	t->count--;
}

void
flowtab_remove(struct flowtab *t, struct flowtab_entry *e)
{
	assert(e >= t->entries && e < t->entries + t->high);
	assert(e->flags & FLOWTAB_FLAG_LIVE);
	flowtab_entry_free(t, (uint32_t)(e - t->entries));
	t->stat[FLOWTAB_STAT_REMOVED]++;
}

uint32_t
flowtab_expire(struct flowtab *t, uint32_t now_ms, uint32_t budget)
{
	uint32_t freed = 0;

	if (budget > t->high)
		budget = t->high;
	for (uint32_t v = 0; v < budget; v++) {
		uint32_t i = t->expire_cursor;
		struct flowtab_entry *e = &t->entries[i];

		t->expire_cursor = i + 1 < t->high ? i + 1 : 0;
		if ((e->flags & FLOWTAB_FLAG_LIVE) && flowtab_expired(t, e, now_ms)) {
			flowtab_entry_free(t, i);
			freed++;
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
flowtab_entry_start(struct flowtab_entry *e, uint32_t backend,
		    enum flowtab_state state, uint32_t now_ms)
{
	e->backend = backend;
	e->last_ms = now_ms;
	e->exported_ms = now_ms;
	e->created_ms = now_ms;
	e->packets = 1;
	e->state = (uint8_t)state;
	e->flags = FLOWTAB_FLAG_LIVE;
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

/* An expired entry in b1 or b2 takes the new key's signature; or NULL. */
static struct flowtab_entry *
flowtab_evict(struct flowtab *t, uint32_t b1, uint32_t b2, uint32_t sig, uint32_t now_ms)
{
	struct flowtab_bucket *pair[2] = { &t->buckets[b1], &t->buckets[b2] };

	for (unsigned p = 0; p < 2; p++)
		for (unsigned s = 0; s < FLOWTAB_WAYS; s++)
			if (pair[p]->sig[s] != 0)
				flowtab_prefetch(&t->entries[pair[p]->idx[s]]);
	for (unsigned p = 0; p < 2; p++) {
		for (unsigned s = 0; s < FLOWTAB_WAYS; s++) {
			struct flowtab_entry *e = &t->entries[pair[p]->idx[s]];

			if (pair[p]->sig[s] == 0 || !flowtab_expired(t, e, now_ms))
				continue;
			pair[p]->sig[s] = sig;
			t->stat[FLOWTAB_STAT_EVICTED]++;
			return e;
		}
	}
	return NULL;
}

/* Move the items along the BFS path ending at node leaf, from the leaf up,
 * so that the root bucket gets a free slot. Each move is checked, and any
 * prefix of the moves leaves the table consistent. */
static bool
flowtab_cuckoo_shift(struct flowtab *t, const struct flowtab_bfs *q, int leaf)
{
	for (int x = leaf; q[x].parent >= 0; x = q[x].parent) {
		struct flowtab_bucket *src = &t->buckets[q[q[x].parent].bucket];
		struct flowtab_bucket *dst = &t->buckets[q[x].bucket];
		uint32_t sig = src->sig[q[x].slot];
		int to = flowtab_free_slot(dst);

		if (to < 0 || sig == 0 ||
		    flowtab_alt(t, q[q[x].parent].bucket, sig) != q[x].bucket)
			return false;
		dst->sig[to] = sig;
		dst->idx[to] = src->idx[q[x].slot];
		src->sig[q[x].slot] = 0;
		t->stat[FLOWTAB_STAT_MOVED]++;
	}
	return true;
}

/* Breadth-first search from the full buckets b1 and b2 for a chain of
 * moves that ends in a bucket with a free slot; make the moves. */
static bool
flowtab_cuckoo(struct flowtab *t, uint32_t b1, uint32_t b2)
{
	struct flowtab_bfs q[FLOWTAB_BFS_NODES];
	int head = 0, tail = 2;

	q[0] = (struct flowtab_bfs){ b1, -1, 0 };
	q[1] = (struct flowtab_bfs){ b2, -1, 0 };
	for (; head < tail && tail + FLOWTAB_WAYS <= FLOWTAB_BFS_NODES; head++) {
		const struct flowtab_bucket *b = &t->buckets[q[head].bucket];

		for (unsigned s = 0; s < FLOWTAB_WAYS; s++) {
			uint32_t alt = flowtab_alt(t, q[head].bucket, b->sig[s]);

			q[tail + (int)s] = (struct flowtab_bfs){ alt, (int16_t)head, (uint8_t)s };
			flowtab_prefetch(&t->buckets[alt]);
		}
		for (unsigned s = 0; s < FLOWTAB_WAYS; s++, tail++)
			if (flowtab_free_slot(&t->buckets[q[tail].bucket]) >= 0)
				return flowtab_cuckoo_shift(t, q, tail);
	}
	return false;
}

/* Claim a free slot of b1 or b2 for a new entry; its index or NONE. */
static uint32_t
flowtab_claim(struct flowtab *t, uint32_t b1, uint32_t b2, uint32_t sig)
{
	struct flowtab_bucket *b = &t->buckets[b1];
	int s = flowtab_free_slot(b);

	if (s < 0) {
		b = &t->buckets[b2];
		s = flowtab_free_slot(b);
		if (s < 0)
			return FLOWTAB_NONE;
	}
	b->sig[s] = sig;
	b->idx[s] = flowtab_entry_alloc(t);
	return b->idx[s];
}

/* Find room for k and copy it in: a free slot, else an expired entry of
 * the two buckets, else a free slot made by cuckoo moves; or NULL. */
static struct flowtab_entry *
flowtab_place(struct flowtab *t, const struct flow_key *k, uint32_t now_ms)
{
	uint64_t h = flowtab_hash(t, k);
	uint32_t sig = flowtab_sig(h), b1 = (uint32_t)h & t->bucket_mask;
	uint32_t b2 = flowtab_alt(t, b1, sig), i = FLOWTAB_NONE;
	struct flowtab_entry *e = NULL;

	if (flowtab_entry_available(t))
		i = flowtab_claim(t, b1, b2, sig);
	if (i == FLOWTAB_NONE)
		e = flowtab_evict(t, b1, b2, sig, now_ms);
	if (e == NULL && i == FLOWTAB_NONE && flowtab_entry_available(t) &&
	    flowtab_cuckoo(t, b1, b2))
		i = flowtab_claim(t, b1, b2, sig);
	if (i != FLOWTAB_NONE)
		e = &t->entries[i];
	if (e != NULL)
		memcpy(&e->key, k, sizeof(e->key));
	return e;
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
flowtab_insert(struct flowtab *t, const struct flow_key *k, uint32_t backend,
	       uint8_t tcp_flags, uint32_t now_ms, enum flowtab_refuse *why)
{
	struct flowtab_entry *e;

	if (!flowtab_token_take(t, now_ms))
		return flowtab_refuse(t, FLOWTAB_REFUSE_RATE, why);
	e = flowtab_place(t, k, now_ms);
	if (e == NULL) {
		if (t->rate != 0)
			t->tokens += FLOWTAB_MILLI;
		return flowtab_refuse(t, FLOWTAB_REFUSE_FULL, why);
	}
	flowtab_entry_start(e, backend, flowtab_initial_state(k, tcp_flags), now_ms);
	t->stat[FLOWTAB_STAT_INSERTED]++;
	return e;
}

struct flowtab_entry *
flowtab_reuse(struct flowtab *t, struct flowtab_entry *e, uint32_t backend,
	      uint8_t tcp_flags, uint32_t now_ms, enum flowtab_refuse *why)
{
	assert(e->flags & FLOWTAB_FLAG_LIVE);
	if (!flowtab_token_take(t, now_ms))
		return flowtab_refuse(t, FLOWTAB_REFUSE_RATE, why);
	flowtab_entry_start(e, backend, flowtab_initial_state(&e->key, tcp_flags), now_ms);
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
	timeout = t->timeout_ms[state];
	if (remaining_ms > timeout)
		remaining_ms = timeout;
	e = flowtab_place(t, k, now_ms);
	if (e == NULL)
		return flowtab_refuse(t, FLOWTAB_REFUSE_FULL, why);
	flowtab_entry_start(e, backend, state, now_ms);
	e->last_ms = now_ms - (timeout - remaining_ms);
	e->packets = 0;
	e->flags |= FLOWTAB_FLAG_SYNCED;
	t->stat[FLOWTAB_STAT_SYNCED]++;
	return e;
}

/* ---- packets of known flows ---- */

enum flowtab_export
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
			return FLOWTAB_EXPORT_CLOSE;
		}
		if (!(tcp_flags & FLOWTAB_TCP_SYN))
			e->state = FLOWTAB_ESTABLISHED;
		break;
	case FLOWTAB_CLOSING:
		if ((tcp_flags & (end | FLOWTAB_TCP_SYN | FLOWTAB_TCP_ACK)) != FLOWTAB_TCP_SYN)
			return FLOWTAB_EXPORT_NONE;
		e->state = FLOWTAB_SYN;
		e->exported_ms = e->created_ms = now_ms;
		e->packets = 1;
		return FLOWTAB_EXPORT_NEW;
	default:
		break;
	}
	if (t->refresh_ms == 0 ||
	    (int32_t)(now_ms - e->exported_ms) < (int32_t)t->refresh_ms)
		return FLOWTAB_EXPORT_NONE;
	e->exported_ms = now_ms;
	return FLOWTAB_EXPORT_REFRESH;
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
		const struct flowtab_entry *e = &t->entries[i];

		if (e->flags & FLOWTAB_FLAG_LIVE) {
			fn(e, arg);
			passed++;
		}
	}
	*cursor = i >= t->high ? FLOWTAB_WALK_END : i;
	return passed;
}

uint32_t
flowtab_count(const struct flowtab *t)
{
	return t->count;
}

uint32_t
flowtab_capacity(const struct flowtab *t)
{
	return t->capacity;
}

size_t
flowtab_memory(const struct flowtab *t)
{
	return sizeof(*t) + t->bucket_bytes + t->entry_bytes;
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
