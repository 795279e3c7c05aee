/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The membership group's messages (syncd/cluster_msg.h): what passes to
 * cluster.c, and every message that does not, counted by reason.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "syncd/cluster_msg.h"

static uint64_t counters[CLUSTER_COUNTER_MAX];
static struct cluster_msg *msgs;
static const struct roles_member members[] = { { .id = 1 }, { .id = 2 } };

/* What reached the ops. */
static struct {
	size_t states, reports;
	uint32_t sender;
	size_t n;
	struct health_key first;
	int health_rc;                  /* what the next reports answer */
} seen;

static void
fake_state(void *arg, uint32_t sender, const struct wire_node_state *st)
{
	(void)arg;
	(void)st;
	seen.states++;
	seen.sender = sender;
}

static int
fake_health(void *arg, uint32_t sender, const struct health_key *down, size_t n)
{
	(void)arg;
	seen.reports++;
	seen.sender = sender;
	seen.n = n;
	if (n > 0)
		seen.first = down[0];
	return seen.health_rc;
}

static void
setup(void)
{
	static const struct cluster_msg_ops ops = { .state = fake_state,
						    .health = fake_health };

	memset(counters, 0, sizeof(counters));
	memset(&seen, 0, sizeof(seen));
	msgs = cluster_msg_create(&ops, NULL, counters);
	ck_assert_ptr_nonnull(msgs);
}

static void
teardown(void)
{
	cluster_msg_destroy(msgs);
	msgs = NULL;
}

/* Every counter but those in ids[0..n) is still 0. */
static void
others_zero(const enum cluster_counter *ids, size_t n)
{
	for (int i = 0; i < CLUSTER_COUNTER_MAX; i++) {
		bool listed = false;

		for (size_t k = 0; k < n; k++)
			listed |= ids[k] == (enum cluster_counter)i;
		if (!listed)
			ck_assert_msg(counters[i] == 0, "counter %d moved", i);
	}
}

static size_t
encode(const struct wire_sync_msg *m, uint8_t *buf, size_t cap)
{
	size_t len;

	ck_assert_int_eq(wire_sync_encode(m, buf, cap, &len), 0);
	return len;
}

static void
deliver_state(uint32_t sender, uint32_t says)
{
	struct wire_sync_msg m = {
		.kind = WIRE_SYNC_NODE_STATE, .node_id = says, .seq = 1,
		.state = { .role = WIRE_ROLE_PASSIVE, .mode = WIRE_CLUSTER_MODE_ACTIVE_PASSIVE },
	};
	uint8_t buf[128];
	size_t len = encode(&m, buf, sizeof(buf));

	cluster_msg_deliver(msgs, sender, buf, len, members, 2);
}

/* A backend down: VIP 198.18.1.1:port/tcp, backend 2001:db8::i. */
static void
ref(struct wire_flow *f, uint16_t port, uint32_t i)
{
	static const uint8_t vip[4] = { 198, 18, 1, 1 };

	memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->proto = IPPROTO_TCP;
	f->vip_port = port;
	memcpy(f->vip, vip, sizeof(vip));
	f->backend_family = AF_INET6;
	f->backend[0] = 0x20;
	f->backend[1] = 0x01;
	f->backend[2] = 0x0d;
	f->backend[3] = 0xb8;
	memcpy(&f->backend[12], &i, sizeof(i));
}

static void
deliver_health(uint32_t sender, size_t n)
{
	static struct wire_flow down[4];
	static uint8_t buf[1024];
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH, .node_id = sender, .seq = 1,
				   .generation = 1, .entries = down, .count = n };

	ck_assert_uint_le(n, 4);
	for (size_t i = 0; i < n; i++)
		ref(&down[i], 80, (uint32_t)i + 1);
	cluster_msg_deliver(msgs, sender, buf, encode(&m, buf, sizeof(buf)), members, 2);
}

START_TEST(test_state_of_a_member_passes)
{
	static const enum cluster_counter moved[] = { CLUSTER_STATES_RECEIVED };

	deliver_state(2, 2);
	ck_assert_uint_eq(seen.states, 1);
	ck_assert_uint_eq(seen.sender, 2);
	ck_assert_uint_eq(counters[CLUSTER_STATES_RECEIVED], 1);
	others_zero(moved, 1);
}
END_TEST

/* It left before its message was delivered. */
START_TEST(test_state_of_a_non_member_counted)
{
	static const enum cluster_counter moved[] = { CLUSTER_STATES_RECEIVED,
						      CLUSTER_STATES_NOT_MEMBER };

	deliver_state(3, 3);
	ck_assert_uint_eq(seen.states, 0);
	ck_assert_uint_eq(counters[CLUSTER_STATES_RECEIVED], 1);
	ck_assert_uint_eq(counters[CLUSTER_STATES_NOT_MEMBER], 1);
	others_zero(moved, 2);
}
END_TEST

START_TEST(test_health_of_a_member_passes)
{
	static const enum cluster_counter moved[] = { CLUSTER_HEALTH_RECEIVED };
	struct wire_flow f;

	deliver_health(1, 3);
	ck_assert_uint_eq(seen.reports, 1);
	ck_assert_uint_eq(seen.sender, 1);
	ck_assert_uint_eq(seen.n, 3);
	ref(&f, 80, 1);
	ck_assert_uint_eq(seen.first.vip_len, 4);
	ck_assert_uint_eq(seen.first.backend_len, 16);
	ck_assert_mem_eq(seen.first.vip, f.vip, 4);
	ck_assert_mem_eq(seen.first.backend, f.backend, 16);
	ck_assert_uint_eq(seen.first.vip_port, 80);
	ck_assert_uint_eq(seen.first.protocol, IPPROTO_TCP);
	deliver_health(2, 0);                   /* nothing down is a report too */
	ck_assert_uint_eq(seen.reports, 2);
	ck_assert_uint_eq(seen.n, 0);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_RECEIVED], 2);
	others_zero(moved, 1);
}
END_TEST

START_TEST(test_health_of_a_non_member_counted)
{
	static const enum cluster_counter moved[] = { CLUSTER_HEALTH_RECEIVED,
						      CLUSTER_HEALTH_NOT_MEMBER };

	deliver_health(3, 2);
	deliver_health(4, 0);
	ck_assert_uint_eq(seen.reports, 0);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_RECEIVED], 2);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_NOT_MEMBER], 2);
	others_zero(moved, 2);
}
END_TEST

/* cluster.c had no memory to keep the report: lost, counted apart. */
START_TEST(test_health_without_memory_counted)
{
	static const enum cluster_counter moved[] = { CLUSTER_HEALTH_RECEIVED,
						      CLUSTER_HEALTH_NO_MEMORY };

	seen.health_rc = -ENOMEM;
	deliver_health(1, 2);
	ck_assert_uint_eq(seen.reports, 1);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_NO_MEMORY], 1);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_NOT_MEMBER], 0);
	seen.health_rc = 0;
	deliver_health(1, 2);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_RECEIVED], 2);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_NO_MEMORY], 1);
	others_zero(moved, 2);
}
END_TEST

/*
 * The longest message a node sends, a HEALTH report of the smallest
 * entries, fits the buffers made at create; one byte more is dropped.
 */
START_TEST(test_longest_message_fits_longer_dropped)
{
	static const enum cluster_counter moved[] = { CLUSTER_HEALTH_RECEIVED,
						      CLUSTER_DROP_TOO_LONG };
	size_t n = (CLUSTER_MSG_MAX - WIRE_SYNC_HEADER_MAX) / WIRE_BACKEND_REF_ENCODED_MIN;
	struct wire_flow *down = calloc(n, sizeof(*down));
	uint8_t *buf = calloc(1, CLUSTER_MSG_MAX + 1);
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH, .node_id = 1, .seq = 1,
				   .generation = 1, .entries = down };
	size_t len;

	ck_assert_ptr_nonnull(down);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < n; i++) {
		ref(&down[i], 0, (uint32_t)i);
		down[i].backend_family = AF_INET;       /* the smallest entry */
		memset(down[i].backend, 0, sizeof(down[i].backend));
		memcpy(down[i].backend, &i, 4);
	}
	for (m.count = n; wire_sync_encoded_size(&m) > CLUSTER_MSG_MAX; m.count--)
		;
	ck_assert_uint_gt(m.count, n - 8);
	len = encode(&m, buf, CLUSTER_MSG_MAX);
	cluster_msg_deliver(msgs, 1, buf, len, members, 2);
	ck_assert_uint_eq(seen.reports, 1);
	ck_assert_uint_eq(seen.n, m.count);

	cluster_msg_deliver(msgs, 1, buf, CLUSTER_MSG_MAX + 1, members, 2);
	ck_assert_uint_eq(seen.reports, 1);
	ck_assert_uint_eq(counters[CLUSTER_DROP_TOO_LONG], 1);
	ck_assert_uint_eq(counters[CLUSTER_HEALTH_RECEIVED], 1);
	others_zero(moved, 2);
	free(down);
	free(buf);
}
END_TEST

START_TEST(test_garbage_spoofed_and_sync_kinds_counted)
{
	static const uint8_t junk[] = { 0xff, 0x13, 0x00, 0x42, 0x99 };
	static const enum cluster_counter moved[] = { CLUSTER_DROP_DECODE,
						      CLUSTER_DROP_SENDER, CLUSTER_DROP_KIND };
	struct wire_flow f;
	struct wire_sync_msg m = { .kind = WIRE_SYNC_CLOSE, .node_id = 1, .seq = 1,
				   .entries = &f, .count = 1 };
	uint8_t buf[256];
	size_t len;

	cluster_msg_deliver(msgs, 1, junk, sizeof(junk), members, 2);
	deliver_state(2, 1);                    /* CPG says 2, the message 1 */
	memset(&f, 0, sizeof(f));
	ref(&f, 80, 1);
	f.client[0] = 10;
	f.client_port = 1000;
	f.lifetime_ms = 1000;
	len = encode(&m, buf, sizeof(buf));
	cluster_msg_deliver(msgs, 1, buf, len, members, 2);
	ck_assert_uint_eq(seen.states + seen.reports, 0);
	ck_assert_uint_eq(counters[CLUSTER_DROP_DECODE], 1);
	ck_assert_uint_eq(counters[CLUSTER_DROP_SENDER], 1);
	ck_assert_uint_eq(counters[CLUSTER_DROP_KIND], 1);
	others_zero(moved, 3);
}
END_TEST

static Suite *
cluster_msg_suite(void)
{
	Suite *s = suite_create("cluster_msg");
	TCase *tc = tcase_create("cluster_msg");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_state_of_a_member_passes);
	tcase_add_test(tc, test_state_of_a_non_member_counted);
	tcase_add_test(tc, test_health_of_a_member_passes);
	tcase_add_test(tc, test_health_of_a_non_member_counted);
	tcase_add_test(tc, test_health_without_memory_counted);
	tcase_add_test(tc, test_longest_message_fits_longer_dropped);
	tcase_add_test(tc, test_garbage_spoofed_and_sync_kinds_counted);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cluster_msg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
