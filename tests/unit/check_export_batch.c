/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker's export batches (dataplane/export_batch.h) on a real DPDK ring
 * of 63 records, without EAL (rte_ring_init on memory of the test's own):
 * records written in place come out of the consumer's side whole and in
 * order, also when a batch wraps past the ring's end; a full ring refuses
 * the records it has no room for and keeps what it holds; a batch without
 * records leaves the ring as it was.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/export_batch.h"

enum { COUNT = 64, CAPACITY = COUNT - 1 };

static struct rte_ring *
ring_new(void)
{
	ssize_t size = rte_ring_get_memsize_elem(sizeof(struct export_rec), COUNT);
	struct rte_ring *r;

	ck_assert_int_gt(size, 0);
	r = aligned_alloc(RTE_CACHE_LINE_SIZE,
			  ((size_t)size + RTE_CACHE_LINE_SIZE - 1) & ~(size_t)(RTE_CACHE_LINE_SIZE - 1));
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rte_ring_init(r, "check_export", COUNT,
				       RING_F_SP_ENQ | RING_F_SC_DEQ), 0);
	return r;
}

/* Record number i: every field derived from i. */
static void
rec_fill(struct export_rec *r, uint32_t i)
{
	memset(r, 0, sizeof(*r));
	r->key.family = FLOW_FAMILY_IPV4;
	r->key.proto = 6;
	r->key.client_port = (uint16_t)(1000 + i);
	r->key.vip_port = 80;
	memcpy(r->key.client, &i, sizeof(i));
	r->dest = i * 7;
	r->lifetime_ms = 1000 + i;
	r->event = (uint8_t)(i % EXPORT_EVENT_MAX);
	r->state = (uint8_t)(i % FLOWTAB_STATE_MAX);
}

/* Write records first..first+n-1 in one batch, as the worker does (the
 * fields passed, streamed into their slots); how many the ring took. */
static uint32_t
batch_write(struct rte_ring *r, uint32_t first, uint32_t n)
{
	struct export_batch x;
	uint32_t written = 0;

	export_batch_begin(&x, r, n);
	for (uint32_t i = 0; i < n; i++) {
		struct export_rec rec;

		rec_fill(&rec, first + written);
		written += export_batch_put(&x, &rec.key, rec.dest, rec.lifetime_ms,
					    rec.event, rec.state);
	}
	export_batch_end(&x);
	return written;
}

/* Take n records off the ring: they must be first.. in order. */
static void
drain_expect(struct rte_ring *r, uint32_t first, uint32_t n)
{
	struct export_rec got[COUNT], want;

	ck_assert_uint_le(n, COUNT);
	ck_assert_uint_eq(rte_ring_sc_dequeue_burst_elem(r, got, sizeof(got[0]), COUNT, NULL), n);
	for (uint32_t i = 0; i < n; i++) {
		rec_fill(&want, first + i);
		ck_assert_mem_eq(&got[i], &want, sizeof(want));
	}
}

START_TEST(test_in_order)
{
	struct rte_ring *r = ring_new();

	ck_assert_uint_eq(batch_write(r, 0, 10), 10);
	ck_assert_uint_eq(batch_write(r, 10, 5), 5);
	drain_expect(r, 0, 15);
	free(r);
}
END_TEST

/* Every start position: a batch of 20 wraps past the end from 44 on. */
START_TEST(test_wraps)
{
	struct rte_ring *r = ring_new();
	uint32_t next = 0;

	for (uint32_t pos = 0; pos < COUNT; pos++) {
		ck_assert_uint_eq(batch_write(r, next, 20), 20);
		drain_expect(r, next, 20);
		next += 20;
		ck_assert_uint_eq(batch_write(r, next, 1), 1);   /* moves the start by 21 */
		drain_expect(r, next, 1);
		next += 1;
	}
	ck_assert(rte_ring_empty(r));
	free(r);
}
END_TEST

START_TEST(test_full_ring)
{
	struct rte_ring *r = ring_new();

	ck_assert_uint_eq(batch_write(r, 0, 50), 50);
	/* 13 slots left: the batch gets those, the rest are refused */
	ck_assert_uint_eq(batch_write(r, 50, 20), CAPACITY - 50);
	ck_assert(rte_ring_full(r));
	ck_assert_uint_eq(batch_write(r, 100, 5), 0);
	drain_expect(r, 0, CAPACITY);
	ck_assert_uint_eq(batch_write(r, 200, 3), 3);
	drain_expect(r, 200, 3);
	free(r);
}
END_TEST

/* A batch without records leaves the ring as it was. */
START_TEST(test_empty_batch)
{
	struct rte_ring *r = ring_new();
	struct export_batch x;

	ck_assert_uint_eq(batch_write(r, 0, 7), 7);
	export_batch_begin(&x, r, 32);
	export_batch_end(&x);                   /* nothing reserved */
	ck_assert_uint_eq(rte_ring_count(r), 7);
	ck_assert_uint_eq(batch_write(r, 7, CAPACITY - 7), CAPACITY - 7);
	drain_expect(r, 0, CAPACITY);
	free(r);
}
END_TEST

static Suite *
export_batch_suite(void)
{
	Suite *s = suite_create("export_batch");
	TCase *tc = tcase_create("ring");

	tcase_add_test(tc, test_in_order);
	tcase_add_test(tc, test_wraps);
	tcase_add_test(tc, test_full_ring);
	tcase_add_test(tc, test_empty_batch);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(export_batch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
