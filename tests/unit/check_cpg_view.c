/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What syncd takes from CPG's callbacks (syncd/cpg_view.h): the member
 * view with its cap, which callbacks reach a group, each refusal
 * counted, and the one trusted process of each node.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cpg_view.h"

static uint64_t counters[SYNCD_CPG_COUNTER_MAX];

static void
setup(void)
{
	memset(counters, 0, sizeof(counters));
}

/* Every counter but id is still 0 (SYNCD_CPG_COUNTER_MAX: every one). */
static void
others_zero(int id)
{
	for (int i = 0; i < SYNCD_CPG_COUNTER_MAX; i++)
		if (i != id)
			ck_assert_uint_eq(counters[i], 0);
}

START_TEST(test_view_each_node_once_ascending)
{
	uint32_t nodes[] = { 7, 3, 7, 1, 3 };   /* two processes of 7 and of 3 */
	uint32_t view[REPL_MEMBERS_MAX];
	size_t n = cpg_view_build(nodes, 5, view, counters);

	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(view[0], 1);
	ck_assert_uint_eq(view[1], 3);
	ck_assert_uint_eq(view[2], 7);
	ck_assert_uint_eq(counters[SYNCD_CPG_MEMBERS_DROPPED], 0);
	ck_assert_uint_eq(cpg_view_build(nodes, 0, view, counters), 0);
	others_zero(SYNCD_CPG_COUNTER_MAX);
}
END_TEST

/*
 * More nodes than a view holds, in any order and twice each: the lowest
 * REPL_MEMBERS_MAX are the view, each of the rest is counted once, at
 * every change that lists them.
 */
START_TEST(test_view_cap_drops_highest_counted)
{
	enum { EXTRA = 6, NODES = REPL_MEMBERS_MAX + EXTRA };
	uint32_t nodes[2 * NODES], again[2 * NODES], view[REPL_MEMBERS_MAX];
	size_t n;

	/* a shuffle that visits every node: 17 is prime to NODES */
	ck_assert_uint_ne(NODES % 17, 0);
	for (uint32_t i = 0; i < NODES; i++) {
		nodes[i] = 100 + (i * 17) % NODES;
		nodes[NODES + i] = 100 + i;
	}
	memcpy(again, nodes, sizeof(nodes));
	n = cpg_view_build(nodes, 2 * NODES, view, counters);
	ck_assert_uint_eq(n, REPL_MEMBERS_MAX);
	for (uint32_t i = 0; i < REPL_MEMBERS_MAX; i++)
		ck_assert_uint_eq(view[i], 100 + i);
	ck_assert_uint_eq(counters[SYNCD_CPG_MEMBERS_DROPPED], EXTRA);
	others_zero(SYNCD_CPG_MEMBERS_DROPPED);

	n = cpg_view_build(again, 2 * NODES, view, counters);
	ck_assert_uint_eq(n, REPL_MEMBERS_MAX);
	ck_assert_uint_eq(counters[SYNCD_CPG_MEMBERS_DROPPED], 2 * EXTRA);

	/* exactly the cap: nothing left out */
	for (uint32_t i = 0; i < REPL_MEMBERS_MAX; i++)
		nodes[i] = REPL_MEMBERS_MAX - i;
	n = cpg_view_build(nodes, REPL_MEMBERS_MAX, view, counters);
	ck_assert_uint_eq(n, REPL_MEMBERS_MAX);
	ck_assert_uint_eq(counters[SYNCD_CPG_MEMBERS_DROPPED], 2 * EXTRA);
}
END_TEST

START_TEST(test_route_counts_what_goes_nowhere)
{
	ck_assert(cpg_view_route(true, true, counters));
	others_zero(SYNCD_CPG_COUNTER_MAX);

	ck_assert(!cpg_view_route(false, false, counters));    /* a handle given up */
	ck_assert_uint_eq(counters[SYNCD_CPG_UNKNOWN_HANDLE], 1);
	others_zero(SYNCD_CPG_UNKNOWN_HANDLE);

	ck_assert(!cpg_view_route(true, false, counters));     /* another group */
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_GROUP], 1);
	ck_assert_uint_eq(counters[SYNCD_CPG_UNKNOWN_HANDLE], 1);
}
END_TEST

static struct cpg_view_trust trust;

/* Shorthand: the process pid of node. */
#define P(node, pid) ((struct cpg_view_proc){ (node), (pid) })

/*
 * A change of trust seen by self: members and joined as CPG lists them.
 * Returns the view's nodes (ascending), how many in *n.
 */
static const uint32_t *
change(struct cpg_view_proc self, const struct cpg_view_proc *members, size_t n_members,
       const struct cpg_view_proc *joined, size_t n_joined, size_t *n)
{
	static uint32_t view[REPL_MEMBERS_MAX];
	uint32_t nodes[CPG_VIEW_PROCS_MAX];
	struct cpg_view_proc last = { 0 };
	size_t listed = cpg_view_trust_update(&trust, self, members, n_members, joined,
					      n_joined, nodes, &last, counters);

	*n = cpg_view_build(nodes, listed, view, counters);
	return view;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void
view_is(const uint32_t *view, size_t n, uint32_t a, uint32_t b)
{
	ck_assert_uint_eq(n, b == 0 ? 1 : 2);
	ck_assert_uint_eq(view[0], a);
	if (b != 0)
		ck_assert_uint_eq(view[1], b);
}

/*
 * A syncd restart, a peer's then our own: the old process leaves, then the
 * new one joins. Neither is foreign; the old one's late messages are.
 */
START_TEST(test_trust_restart_not_foreign)
{
	struct cpg_view_proc self = P(1, 100);
	struct cpg_view_proc m0[] = { P(2, 200), P(1, 100) }, j0[] = { P(1, 100) };
	struct cpg_view_proc m1[] = { P(1, 100) };
	struct cpg_view_proc m2[] = { P(1, 100), P(2, 201) }, j2[] = { P(2, 201) };
	struct cpg_view_proc m3[] = { P(2, 201), P(1, 101) }, j3[] = { P(1, 101) };
	const uint32_t *v;
	size_t n;

	memset(&trust, 0, sizeof(trust));
	v = change(self, m0, N(m0), j0, N(j0), &n);
	view_is(v, n, 1, 2);
	ck_assert(cpg_view_trust_check(&trust, P(2, 200), counters));
	ck_assert(cpg_view_trust_check(&trust, P(1, 100), counters));

	v = change(self, m1, N(m1), NULL, 0, &n);      /* node 2's syncd stops */
	view_is(v, n, 1, 0);
	v = change(self, m2, N(m2), j2, N(j2), &n);              /* and starts again */
	view_is(v, n, 1, 2);
	ck_assert(cpg_view_trust_check(&trust, P(2, 201), counters));
	others_zero(SYNCD_CPG_COUNTER_MAX);
	ck_assert(!cpg_view_trust_check(&trust, P(2, 200), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MESSAGES], 1);

	/* this node's syncd restarted: a new process, a table afresh */
	cpg_view_trust_reset(&trust);
	v = change(P(1, 101), m3, N(m3), j3, N(j3), &n);
	view_is(v, n, 1, 2);
	ck_assert(cpg_view_trust_check(&trust, P(1, 101), counters));
	ck_assert(cpg_view_trust_check(&trust, P(2, 201), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 0);
	others_zero(SYNCD_CPG_FOREIGN_MESSAGES);
}
END_TEST

/*
 * A second process joins under node 1's id: foreign, counted once while
 * it stays, its messages dropped. When node 1's syncd leaves, node 1 is
 * out of the view though the intruder stays; the next syncd is trusted.
 */
START_TEST(test_trust_second_process_foreign)
{
	struct cpg_view_proc self = P(2, 200), last = { 0 };
	struct cpg_view_proc m0[] = { P(1, 100), P(2, 200) }, j0[] = { P(2, 200) };
	struct cpg_view_proc m1[] = { P(1, 100), P(2, 200), P(1, 999) }, j1[] = { P(1, 999) };
	struct cpg_view_proc m2[] = { P(1, 100), P(2, 200), P(1, 999), P(3, 300) };
	struct cpg_view_proc j2[] = { P(3, 300) };
	struct cpg_view_proc m3[] = { P(2, 200), P(1, 999), P(3, 300) };
	struct cpg_view_proc m4[] = { P(2, 200), P(1, 999), P(3, 300), P(1, 101) };
	struct cpg_view_proc j4[] = { P(1, 101) };
	struct cpg_view_proc m5[] = { P(2, 200), P(3, 300), P(1, 101) };
	struct cpg_view_proc m6[] = { P(2, 200), P(3, 300), P(1, 101), P(1, 999) };
	struct cpg_view_proc j6[] = { P(1, 999) };
	uint32_t nodes[CPG_VIEW_PROCS_MAX];
	const uint32_t *v;
	size_t n;

	memset(&trust, 0, sizeof(trust));
	v = change(self, m0, N(m0), j0, N(j0), &n);
	view_is(v, n, 1, 2);
	ck_assert_uint_eq(cpg_view_trust_update(&trust, self, m1, 3, j1, 1, nodes, &last,
						counters), 2);
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 1);
	ck_assert_uint_eq(last.node, 1);
	ck_assert_uint_eq(last.pid, 999);
	ck_assert(!cpg_view_trust_check(&trust, P(1, 999), counters));
	ck_assert(cpg_view_trust_check(&trust, P(1, 100), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MESSAGES], 1);

	v = change(self, m2, N(m2), j2, N(j2), &n);              /* still there: not again */
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 1);

	v = change(self, m3, N(m3), NULL, 0, &n);      /* node 1's syncd leaves */
	view_is(v, n, 2, 3);
	ck_assert(!cpg_view_trust_check(&trust, P(1, 999), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 1);

	v = change(self, m4, N(m4), j4, N(j4), &n);              /* and comes back */
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(v[0], 1);
	ck_assert(cpg_view_trust_check(&trust, P(1, 101), counters));
	ck_assert(!cpg_view_trust_check(&trust, P(1, 999), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MESSAGES], 3);

	v = change(self, m5, N(m5), NULL, 0, &n);  /* the intruder leaves */
	ck_assert_uint_eq(n, 3);
	v = change(self, m6, N(m6), j6, N(j6), &n);  /* and joins anew: counted again */
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 2);
	ck_assert_uint_eq(counters[SYNCD_CPG_MEMBERS_DROPPED], 0);
}
END_TEST

/*
 * This node's own id: our process is trusted, whichever joined first; a
 * process of our id listed before us is foreign. Out of the group, our
 * node is in no view.
 */
START_TEST(test_trust_own_node_own_pid)
{
	struct cpg_view_proc self = P(1, 100);
	struct cpg_view_proc m0[] = { P(1, 50), P(2, 200), P(1, 100) }, j0[] = { P(1, 100) };
	struct cpg_view_proc m1[] = { P(1, 50), P(2, 200) };
	const uint32_t *v;
	size_t n;

	memset(&trust, 0, sizeof(trust));
	v = change(self, m0, N(m0), j0, N(j0), &n);
	view_is(v, n, 1, 2);
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 1);
	ck_assert(cpg_view_trust_check(&trust, self, counters));
	ck_assert(!cpg_view_trust_check(&trust, P(1, 50), counters));

	v = change(self, m1, N(m1), NULL, 0, &n);  /* we left */
	view_is(v, n, 2, 0);
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 1);
	ck_assert(!cpg_view_trust_check(&trust, self, counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MESSAGES], 2);
}
END_TEST

/*
 * No join order to read: the members listed at our own join, or several
 * processes of a node returning at once (a partition heals). The first
 * CPG lists is trusted, as on every peer.
 */
START_TEST(test_trust_no_join_order_first_listed)
{
	struct cpg_view_proc self = P(2, 200);
	struct cpg_view_proc m0[] = { P(1, 100), P(1, 999), P(2, 200) }, j0[] = { P(2, 200) };
	struct cpg_view_proc m1[] = { P(2, 200) };
	struct cpg_view_proc m2[] = { P(2, 200), P(3, 999), P(3, 300) };
	struct cpg_view_proc j2[] = { P(3, 999), P(3, 300) };
	const uint32_t *v;
	size_t n;

	memset(&trust, 0, sizeof(trust));
	v = change(self, m0, N(m0), j0, N(j0), &n);
	view_is(v, n, 1, 2);
	ck_assert(cpg_view_trust_check(&trust, P(1, 100), counters));
	ck_assert(!cpg_view_trust_check(&trust, P(1, 999), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 1);

	v = change(self, m1, N(m1), NULL, 0, &n);  /* node 1 partitioned away */
	view_is(v, n, 2, 0);
	v = change(self, m2, N(m2), j2, N(j2), &n);        /* node 3 returns */
	view_is(v, n, 2, 3);
	ck_assert(cpg_view_trust_check(&trust, P(3, 999), counters));
	ck_assert(!cpg_view_trust_check(&trust, P(3, 300), counters));
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MEMBERS], 2);
	ck_assert_uint_eq(counters[SYNCD_CPG_FOREIGN_MESSAGES], 2);
}
END_TEST

static Suite *
cpg_view_suite(void)
{
	Suite *s = suite_create("cpg_view");
	TCase *tc = tcase_create("cpg_view");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_view_each_node_once_ascending);
	tcase_add_test(tc, test_view_cap_drops_highest_counted);
	tcase_add_test(tc, test_route_counts_what_goes_nowhere);
	tcase_add_test(tc, test_trust_restart_not_foreign);
	tcase_add_test(tc, test_trust_second_process_foreign);
	tcase_add_test(tc, test_trust_own_node_own_pid);
	tcase_add_test(tc, test_trust_no_join_order_first_listed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cpg_view_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
