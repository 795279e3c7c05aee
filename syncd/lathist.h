/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A latency histogram for percentiles over the last 10 to 20 seconds:
 * buckets a quarter of a power of two wide (a figure is at most 19 % above
 * the true one), two windows of LATHIST_WINDOW_US that take turns, so a
 * quantile reads the current window and the one before.
 */
#ifndef MAGLB_SYNCD_LATHIST_H
#define MAGLB_SYNCD_LATHIST_H

#include <stdint.h>
#include <string.h>

enum {
	LATHIST_BUCKETS = 4 * 40,       /* up to 2^40 µs */
};

#define LATHIST_WINDOW_US 10000000ull

struct lathist {
	uint32_t counts[2][LATHIST_BUCKETS];
	uint32_t cur;
	uint64_t window_start_us;
};

static inline uint32_t
lathist_bucket(uint64_t us)
{
	unsigned msb;

	if (us < 4)
		return (uint32_t)us;
	msb = 63u - (unsigned)__builtin_clzll(us);
	if (msb >= 40)
		return LATHIST_BUCKETS - 1;
	return msb * 4 + (uint32_t)((us >> (msb - 2)) & 3);
}

/* The largest value of bucket b. */
static inline uint64_t
lathist_bucket_top(uint32_t b)
{
	unsigned msb = b / 4;

	if (b < 4)
		return b;
	return ((uint64_t)(4 + b % 4 + 1) << (msb - 2)) - 1;
}

static inline void
lathist_add(struct lathist *h, uint64_t us)
{
	h->counts[h->cur][lathist_bucket(us)]++;
}

/* Turn the windows when the current one is LATHIST_WINDOW_US old. */
static inline void
lathist_tick(struct lathist *h, uint64_t now_us)
{
	if (h->window_start_us == 0)
		h->window_start_us = now_us;
	if (now_us - h->window_start_us < LATHIST_WINDOW_US)
		return;
	h->cur ^= 1;
	memset(h->counts[h->cur], 0, sizeof(h->counts[h->cur]));
	h->window_start_us = now_us;
}

/* The q-quantile (0 < q <= 1) in µs, rounded up to its bucket; 0 if empty. */
static inline uint32_t
lathist_quantile(const struct lathist *h, double q)
{
	uint64_t total = 0, seen = 0, want;

	for (uint32_t b = 0; b < LATHIST_BUCKETS; b++)
		total += (uint64_t)h->counts[0][b] + h->counts[1][b];
	if (total == 0)
		return 0;
	want = (uint64_t)(q * (double)total + 0.999999);
	for (uint32_t b = 0; b < LATHIST_BUCKETS; b++) {
		seen += (uint64_t)h->counts[0][b] + h->counts[1][b];
		if (seen >= want) {
			uint64_t top = lathist_bucket_top(b);

			return top > UINT32_MAX ? UINT32_MAX : (uint32_t)top;
		}
	}
	return UINT32_MAX;
}

#endif /* MAGLB_SYNCD_LATHIST_H */
