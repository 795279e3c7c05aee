/* SPDX-License-Identifier: BSD-3-Clause */
/* The election (membership/roles.h): deterministic over the agreed view. */
#include <check.h>
#include <stdlib.h>

#include "membership/roles.h"

#define AP CONFIG_CLUSTER_ACTIVE_PASSIVE
#define AA CONFIG_CLUSTER_ACTIVE_ACTIVE

/* An eligible member that holds no role yet. */
static struct roles_member
member(uint32_t id, uint32_t priority)
{
	return (struct roles_member){
		.id = id, .known = true, .priority = priority, .dataplane = true,
		.synced = true, .quorate = true, .holds = ROLES_PASSIVE,
	};
}

START_TEST(test_eligible)
{
	struct roles_member m = member(1, 100);

	ck_assert(roles_eligible(&m));
	m.known = false;
	ck_assert(!roles_eligible(&m));
	m = member(1, 100), m.dataplane = false;
	ck_assert(!roles_eligible(&m));
	m = member(1, 100), m.synced = false;
	ck_assert(!roles_eligible(&m));
	m = member(1, 100), m.quorate = false;
	ck_assert(!roles_eligible(&m));
	m = member(1, 100), m.standby = true;
	ck_assert(!roles_eligible(&m));
	/* synced is needed to take the role, not to keep it */
	m = member(1, 100), m.synced = false, m.holds = ROLES_ACTIVE;
	ck_assert(roles_eligible(&m));
	m.quorate = false;
	ck_assert(!roles_eligible(&m));
}
END_TEST

START_TEST(test_ap_holder_keeps_through_a_resync)
{
	/* a healed partition: both sides' actives resync from each other; the
	 * best holder keeps the role, the other gives it up, nobody takes it
	 * in between */
	struct roles_member m[2] = { member(1, 200), member(2, 100) };
	enum roles_role out[2];

	m[0].holds = m[1].holds = ROLES_ACTIVE;
	m[0].synced = m[1].synced = false;
	ck_assert_uint_eq(roles_elect(AP, false, m, 2, out), 1);
	ck_assert_int_eq(out[0], ROLES_ACTIVE);
	ck_assert_int_eq(out[1], ROLES_PASSIVE);
	/* the loser, now passive and still resyncing, is not eligible */
	m[1].holds = ROLES_PASSIVE;
	ck_assert(!roles_eligible(&m[1]));
	ck_assert_uint_eq(roles_elect(AP, true, m, 2, out), 1);
}
END_TEST

START_TEST(test_ap_highest_priority_then_id)
{
	struct roles_member m[3] = { member(1, 100), member(2, 200), member(3, 100) };
	enum roles_role out[3];

	ck_assert_uint_eq(roles_elect(AP, false, m, 3, out), 2);
	ck_assert_int_eq(out[0], ROLES_PASSIVE);
	ck_assert_int_eq(out[1], ROLES_ACTIVE);
	ck_assert_int_eq(out[2], ROLES_PASSIVE);
	m[1].priority = 100;    /* a tie: the highest id */
	ck_assert_uint_eq(roles_elect(AP, false, m, 3, out), 3);
	ck_assert_int_eq(out[2], ROLES_ACTIVE);
}
END_TEST

START_TEST(test_ap_order_of_members_irrelevant)
{
	struct roles_member a[3] = { member(1, 50), member(2, 200), member(3, 100) };
	struct roles_member b[3] = { a[2], a[0], a[1] };
	enum roles_role out[3];

	ck_assert_uint_eq(roles_elect(AP, false, a, 3, out), roles_elect(AP, false, b, 3, out));
}
END_TEST

START_TEST(test_ap_incumbent_kept_without_preempt)
{
	/* node 1 holds the role; node 2, better, recovers */
	struct roles_member m[2] = { member(1, 100), member(2, 200) };
	enum roles_role out[2];

	m[0].holds = ROLES_ACTIVE;
	ck_assert_uint_eq(roles_elect(AP, false, m, 2, out), 1);
	ck_assert_int_eq(out[0], ROLES_ACTIVE);
	ck_assert_int_eq(out[1], ROLES_PASSIVE);
	/* with preempt it takes the role back, but only once eligible */
	m[1].synced = false;
	ck_assert_uint_eq(roles_elect(AP, true, m, 2, out), 1);
	m[1].synced = true;
	ck_assert_uint_eq(roles_elect(AP, true, m, 2, out), 2);
	ck_assert_int_eq(out[0], ROLES_PASSIVE);
	ck_assert_int_eq(out[1], ROLES_ACTIVE);
}
END_TEST

START_TEST(test_ap_ineligible_holder_replaced)
{
	struct roles_member m[2] = { member(1, 200), member(2, 100) };
	enum roles_role out[2];

	m[0].holds = ROLES_ACTIVE;
	m[0].dataplane = false;     /* its dataplane died */
	ck_assert_uint_eq(roles_elect(AP, false, m, 2, out), 2);
	ck_assert_int_eq(out[0], ROLES_PASSIVE);
	ck_assert_int_eq(out[1], ROLES_ACTIVE);
	m[0].dataplane = true;      /* back: node 2 keeps it (no preempt) */
	m[1].holds = ROLES_ACTIVE;
	m[0].holds = ROLES_PASSIVE;
	ck_assert_uint_eq(roles_elect(AP, false, m, 2, out), 2);
}
END_TEST

START_TEST(test_ap_two_holders_after_a_partition)
{
	/* each side of a healed partition had its own active: the best keeps it */
	struct roles_member m[3] = { member(1, 100), member(2, 150), member(3, 120) };
	enum roles_role out[3];

	m[0].holds = ROLES_ACTIVE;
	m[2].holds = ROLES_ACTIVE;
	ck_assert_uint_eq(roles_elect(AP, false, m, 3, out), 3);
	ck_assert_int_eq(out[0], ROLES_PASSIVE);
	ck_assert_int_eq(out[1], ROLES_PASSIVE);
	ck_assert_int_eq(out[2], ROLES_ACTIVE);
}
END_TEST

START_TEST(test_ap_none_eligible)
{
	struct roles_member m[2] = { member(1, 100), member(2, 100) };
	enum roles_role out[2];

	m[0].quorate = false;
	m[1].standby = true;
	ck_assert_uint_eq(roles_elect(AP, true, m, 2, out), 0);
	ck_assert_int_eq(out[0], ROLES_PASSIVE);
	ck_assert_int_eq(out[1], ROLES_PASSIVE);
	ck_assert_uint_eq(roles_elect(AP, false, m, 0, out), 0);
}
END_TEST

START_TEST(test_aa_every_eligible_active)
{
	struct roles_member m[3] = { member(1, 100), member(2, 200), member(3, 100) };
	enum roles_role out[3];

	m[1].synced = false;        /* still resyncing */
	ck_assert_uint_eq(roles_elect(AA, false, m, 3, out), 0);
	ck_assert_int_eq(out[0], ROLES_ACTIVE);
	ck_assert_int_eq(out[1], ROLES_PASSIVE);
	ck_assert_int_eq(out[2], ROLES_ACTIVE);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("roles");
	TCase *tc = tcase_create("elect");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_eligible);
	tcase_add_test(tc, test_ap_highest_priority_then_id);
	tcase_add_test(tc, test_ap_order_of_members_irrelevant);
	tcase_add_test(tc, test_ap_incumbent_kept_without_preempt);
	tcase_add_test(tc, test_ap_ineligible_holder_replaced);
	tcase_add_test(tc, test_ap_two_holders_after_a_partition);
	tcase_add_test(tc, test_ap_holder_keeps_through_a_resync);
	tcase_add_test(tc, test_ap_none_eligible);
	tcase_add_test(tc, test_aa_every_eligible_active);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
