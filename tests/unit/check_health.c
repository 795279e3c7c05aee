/* SPDX-License-Identifier: BSD-3-Clause */
/* The agreed backend down set (membership/health.h). */
#include <check.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "membership/health.h"

/* Backend 198.18.2.<b> of VIP 198.18.1.1:80/tcp. */
static struct health_key
key(uint8_t b)
{
	struct health_key k;

	memset(&k, 0, sizeof(k));
	k.vip[0] = 198, k.vip[1] = 18, k.vip[2] = 1, k.vip[3] = 1;
	k.backend[0] = 198, k.backend[1] = 18, k.backend[2] = 2, k.backend[3] = b;
	k.vip_len = k.backend_len = 4;
	k.vip_port = 80;
	k.protocol = IPPROTO_TCP;
	return k;
}

START_TEST(test_majority_of_voters)
{
	struct health *h = health_create();
	const uint32_t voters[3] = { 1, 2, 3 };
	struct health_key b1 = key(11), b2 = key(12);
	size_t n;

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(health_agree(h, voters, 3), 0);
	ck_assert_int_eq(health_report(h, 1, &b1, 1), 0);
	ck_assert_int_eq(health_agree(h, voters, 3), 0);       /* 1 of 3 */
	ck_assert(!health_is_down(h, &b1));
	ck_assert_int_eq(health_report(h, 2, (struct health_key[]){ b2, b1 }, 2), 0);
	ck_assert_int_eq(health_agree(h, voters, 3), 1);       /* 2 of 3 */
	ck_assert(health_is_down(h, &b1));
	ck_assert(!health_is_down(h, &b2));
	health_down(h, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(health_agree(h, voters, 3), 0);       /* unchanged */
	/* node 1 sees it up again: 1 of 3 */
	ck_assert_int_eq(health_report(h, 1, NULL, 0), 0);
	ck_assert_int_eq(health_agree(h, voters, 3), 1);
	ck_assert(!health_is_down(h, &b1));
	health_destroy(h);
}
END_TEST

START_TEST(test_pair_needs_both)
{
	struct health *h = health_create();
	const uint32_t pair[2] = { 1, 2 }, alone[1] = { 1 };
	struct health_key b = key(11);

	ck_assert_int_eq(health_report(h, 1, &b, 1), 0);
	ck_assert_int_eq(health_agree(h, pair, 2), 0);
	ck_assert(!health_is_down(h, &b));
	/* node 2 left: node 1 alone decides */
	health_forget(h, 2);
	ck_assert_int_eq(health_agree(h, alone, 1), 1);
	ck_assert(health_is_down(h, &b));
	health_destroy(h);
}
END_TEST

START_TEST(test_only_voters_count)
{
	struct health *h = health_create();
	const uint32_t voters[2] = { 1, 2 };
	struct health_key b = key(11);

	/* node 3 (not a voter: resyncing) reports with node 1 */
	ck_assert_int_eq(health_report(h, 3, &b, 1), 0);
	ck_assert_int_eq(health_report(h, 1, &b, 1), 0);
	ck_assert_int_eq(health_agree(h, voters, 2), 0);
	ck_assert(!health_is_down(h, &b));
	ck_assert_int_eq(health_reported(h, 3), 1);
	health_forget(h, 3);
	ck_assert_int_eq(health_reported(h, 3), -1);
	health_destroy(h);
}
END_TEST

START_TEST(test_repeated_key_counts_once)
{
	struct health *h = health_create();
	const uint32_t voters[3] = { 1, 2, 3 };
	struct health_key b = key(11);

	ck_assert_int_eq(health_report(h, 1, (struct health_key[]){ b, b, b }, 3), 0);
	ck_assert_int_eq(health_reported(h, 1), 1);
	ck_assert_int_eq(health_agree(h, voters, 3), 0);
	ck_assert(!health_is_down(h, &b));
	health_destroy(h);
}
END_TEST

START_TEST(test_same_input_same_set_in_any_order)
{
	struct health *a = health_create(), *b = health_create();
	const uint32_t va[3] = { 1, 2, 3 }, vb[3] = { 3, 1, 2 };
	struct health_key k1 = key(11), k2 = key(12), k3 = key(13);
	const struct health_key *da, *db;
	size_t na, nb;

	health_report(a, 1, (struct health_key[]){ k1, k2 }, 2);
	health_report(a, 2, (struct health_key[]){ k3, k2, k1 }, 3);
	health_report(a, 3, &k3, 1);
	health_report(b, 3, &k3, 1);
	health_report(b, 2, (struct health_key[]){ k1, k2, k3 }, 3);
	health_report(b, 1, (struct health_key[]){ k2, k1 }, 2);
	health_agree(a, va, 3);
	health_agree(b, vb, 3);
	da = health_down(a, &na);
	db = health_down(b, &nb);
	ck_assert_uint_eq(na, 3);
	ck_assert_uint_eq(nb, 3);
	ck_assert_mem_eq(da, db, na * sizeof(*da));
	health_destroy(a);
	health_destroy(b);
}
END_TEST

/* Who reports a key down: every report that holds it, voters or not, ascending. */
START_TEST(test_reporters)
{
	struct health *h = health_create();
	struct health_key b1 = key(11), b2 = key(12), b3 = key(13);
	uint32_t by[4];

	ck_assert_uint_eq(health_reporters(h, &b1, by, 4), 0);
	ck_assert_int_eq(health_report(h, 9, &b1, 1), 0);
	ck_assert_int_eq(health_report(h, 3, (struct health_key[]){ b2, b1 }, 2), 0);
	ck_assert_int_eq(health_report(h, 5, &b2, 1), 0);
	ck_assert_int_eq(health_report(h, 1, (struct health_key[]){ b1, b1 }, 2), 0);
	ck_assert_uint_eq(health_reporters(h, &b1, by, 4), 3);
	ck_assert_uint_eq(by[0], 1);
	ck_assert_uint_eq(by[1], 3);
	ck_assert_uint_eq(by[2], 9);
	ck_assert_uint_eq(health_reporters(h, &b2, by, 4), 2);
	ck_assert_uint_eq(by[0], 3);
	ck_assert_uint_eq(by[1], 5);
	ck_assert_uint_eq(health_reporters(h, &b3, by, 4), 0);
	/* a short room keeps the lowest ids; the count is all of them */
	ck_assert_uint_eq(health_reporters(h, &b1, by, 2), 3);
	ck_assert_uint_eq(by[0], 1);
	ck_assert_uint_eq(by[1], 3);
	ck_assert_uint_eq(health_reporters(h, &b1, NULL, 0), 3);
	/* a newer report replaces the old; a node that left no longer counts */
	ck_assert_int_eq(health_report(h, 3, &b2, 1), 0);
	health_forget(h, 9);
	ck_assert_uint_eq(health_reporters(h, &b1, by, 4), 1);
	ck_assert_uint_eq(by[0], 1);
	health_destroy(h);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("health");
	TCase *tc = tcase_create("agree");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_majority_of_voters);
	tcase_add_test(tc, test_pair_needs_both);
	tcase_add_test(tc, test_only_voters_count);
	tcase_add_test(tc, test_repeated_key_counts_once);
	tcase_add_test(tc, test_same_input_same_set_in_any_order);
	tcase_add_test(tc, test_reporters);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
