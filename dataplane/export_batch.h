/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A burst's export records, written straight into the worker's export ring
 * (DPDK's zero-copy enqueue of a single-producer ring): the first record
 * reserves room for a burst's worth, each record takes the next slot, and
 * export_batch_end() publishes the ones written. No copy through a buffer
 * (that copy was ~60 instructions a new flow), and the ring never makes the
 * worker wait: when it is full, export_batch_slot() returns NULL (and
 * export_batch_put() false) and the caller counts the record as dropped.
 *
 *   export_batch_begin(&x, ring);
 *   export_batch_put(&x, key, dest, ...) or count a drop;        (any times)
 *   export_batch_end(&x);
 */
#ifndef MAGLB_DATAPLANE_EXPORT_BATCH_H
#define MAGLB_DATAPLANE_EXPORT_BATCH_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include "dataplane/worker.h"

struct export_batch {
	struct rte_ring *ring;          /* struct export_rec, RING_F_SP_ENQ */
	uint32_t want;                  /* slots reserved at the first record */
	uint32_t n, room;               /* slots written, slots reserved */
	bool reserved;
	struct rte_ring_zc_data zc;     /* the reserved slots: two pieces when
					 * they wrap past the ring's end */
};

/* Start a batch of at most want records on ring (nothing reserved yet). */
static inline void
export_batch_begin(struct export_batch *x, struct rte_ring *ring, uint32_t want)
{
	x->ring = ring;
	x->want = want;
	x->n = 0;
	x->room = 0;
	x->reserved = false;
	x->zc = (struct rte_ring_zc_data){ 0 };   /* set by the reservation */
}

/* The next record's slot, or NULL when the ring has no room for it (or the
 * batch has had its want). */
static inline struct export_rec *
export_batch_slot(struct export_batch *x)
{
	uint32_t k = x->n;

	if (!x->reserved) {
		x->reserved = true;
		x->room = rte_ring_enqueue_zc_burst_elem_start(
			x->ring, sizeof(struct export_rec), x->want, &x->zc, NULL);
	}
	if (k >= x->room)
		return NULL;
	x->n = k + 1;
	return k < x->zc.n1 ? (struct export_rec *)x->zc.ptr1 + k
			    : (struct export_rec *)x->zc.ptr2 + (k - x->zc.n1);
}

#ifdef __SSE2__
static_assert(offsetof(struct export_rec, dest) == 40 &&
	      offsetof(struct export_rec, lifetime_ms) == 44 &&
	      offsetof(struct export_rec, event) == 48 &&
	      offsetof(struct export_rec, state) == 49,
	      "export_batch_put() writes the record as four 16-byte lanes");
#endif

/*
 * Write a record into the next slot with non-temporal stores: the line goes
 * to memory without first being read for ownership (it was the control
 * thread's, which read the record a lap ago): new flows +15 % in the
 * benchmark, with every record delivered. The four 16-byte lanes are made
 * in registers rather than in a record on the stack, whose 16-byte reloads
 * would wait for its field-by-field stores (store forwarding does not
 * combine them; no gain measurable in the benchmark, 3 instructions fewer).
 * Slots are whole, aligned cache lines (a ring's memory is); the pad is
 * zero. Whether there was room.
 */
static inline bool
export_batch_put(struct export_batch *x, const struct flow_key *key, uint32_t dest,
		 uint32_t lifetime_ms, uint8_t event, uint8_t state)
{
	struct export_rec *slot = export_batch_slot(x);

	if (slot == NULL)
		return false;
#ifdef __SSE2__
	{
		__m128i *d = (__m128i *)(void *)slot;
		const __m128i *k = (const __m128i *)(const void *)key;
		uint64_t tail;

		memcpy(&tail, (const uint8_t *)key + 32, sizeof(tail));
		_mm_stream_si128(d, _mm_loadu_si128(k));
		_mm_stream_si128(d + 1, _mm_loadu_si128(k + 1));
		_mm_stream_si128(d + 2, _mm_set_epi64x((long long)((uint64_t)lifetime_ms << 32 | dest),
						       (long long)tail));
		_mm_stream_si128(d + 3, _mm_cvtsi32_si128((int)(event | (uint32_t)state << 8)));
	}
#else
	*slot = (struct export_rec){ .key = *key, .dest = dest, .lifetime_ms = lifetime_ms,
				     .event = event, .state = state };
#endif
	return true;
}

/* Publish the records written (all at once: the consumer sees whole
 * records only) and give back the slots reserved but not used. */
static inline void
export_batch_end(struct export_batch *x)
{
#ifdef __SSE2__
	if (x->n > 0)
		_mm_sfence();           /* the streamed records before the tail */
#endif
	if (x->reserved)
		rte_ring_enqueue_zc_elem_finish(x->ring, x->n);
	x->reserved = false;
}

#endif /* MAGLB_DATAPLANE_EXPORT_BATCH_H */
