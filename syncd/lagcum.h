/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A lag's histogram since syncd started, for SYNC_STATUS's cumulative
 * ones (struct wire_lag_histogram): a count per bucket of
 * wire_lag_bucket_us[] and one above the last bound, and the sum. Fed
 * where lathist.h's windows are, sample for sample; never reset: it sits
 * in a group's carried state, so a reload keeps it. Adding is a few
 * compares and two increments, no allocation.
 */
#ifndef MAGLB_SYNCD_LAGCUM_H
#define MAGLB_SYNCD_LAGCUM_H

#include <stdint.h>

#include "proto/wire.h"

struct lagcum {
	uint64_t buckets[WIRE_LAG_BUCKETS + 1]; /* not cumulative: [i] above bound
						 * i - 1, at most bound i */
	uint64_t sum_us;
};

static inline void
lagcum_add(struct lagcum *h, uint64_t us)
{
	h->buckets[wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, us)]++;
	h->sum_us += us;
}

/* The Prometheus view: counts cumulated along the ladder, the total as +Inf. */
static inline void
lagcum_to_wire(const struct lagcum *h, struct wire_lag_histogram *out)
{
	uint64_t run = 0;

	for (unsigned int i = 0; i < WIRE_LAG_BUCKETS; i++) {
		run += h->buckets[i];
		out->cumulative[i] = run;
	}
	out->count = run + h->buckets[WIRE_LAG_BUCKETS];
	out->sum_us = h->sum_us;
}

#endif /* MAGLB_SYNCD_LAGCUM_H */
