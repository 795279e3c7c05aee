/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The membership engine (membership/engine.h), several nodes in one
 * process: their messages go through the real encoder and syncd's intake
 * (cluster_msg.h) over an in-process total-order CPG (fake_cpg.h); a fake
 * dataplane acknowledges ownership, pings and backend sets, late or never
 * when a test says so. Time is a variable the test advances: no sleeps.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "config/config.h"
#include "fake_cpg.h"
#include "membership/engine.h"
#include "syncd/cluster_msg.h"

enum { NODES_MAX = 3, REQS_MAX = 512, LOGS_MAX = 512 };

/* How the fake dataplane answers a kind of request. */
enum answer { ANSWER_ACK = 0, ANSWER_REFUSE, ANSWER_NEVER };

enum req_kind { REQ_OWN, REQ_PING, REQ_BACKEND };

struct req {
	enum req_kind kind;
	bool own, announce;
	uint32_t lease_ms;
};

struct node {
	uint32_t id;
	struct config *cfg;
	struct membership *e;
	struct cluster_msg *msgs;
	size_t msg_max;                 /* the multicast bound: CLUSTER_MSG_MAX */
	/* the fake dataplane */
	bool linked;
	enum answer own_answer, ping_answer;
	struct req reqs[REQS_MAX];
	size_t n_reqs;
	bool dp_owns;
	unsigned own_requests, announces, releases_sent;
	/* what the engine reads and says */
	bool synced;
	uint64_t import_queue;
	bool probe_down[8];
	bool serving;
	unsigned serving_changes;
	enum roles_role hooked;
	char logs[LOGS_MAX][MEMBERSHIP_LOG_LINE_MAX];
	size_t n_logs;
};

static struct node nodes[NODES_MAX];
static struct fake_cpg *cpg;
static uint32_t now = 100000;

static const char *const config_fmt =
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; mode = \"%s\";\n"
	"  preempt = %s; lease_ms = 1000; };\n"
	"node = { id = %u; priority = %u; address = \"198.18.0.1%u\"; };\n"
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
	"health = { type = \"tcp\"; interval_ms = 1000; timeout_ms = 500; };\n"
	"vips = (\n"
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";\n"
	"    encap = \"l2\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; },\n"
	"      { address = \"198.18.0.22\"; mac = \"02:00:00:00:00:22\"; },\n"
	"      { address = \"198.18.0.23\"; mac = \"02:00:00:00:00:23\"; } ); }\n"
	");\n";

/* ------------------------------------------------------------ the ops */

static void
req_push(struct node *n, struct req r)
{
	ck_assert_uint_lt(n->n_reqs, REQS_MAX);
	n->reqs[n->n_reqs++] = r;
}

static int
op_multicast(void *arg, const struct wire_sync_msg *m)
{
	static uint8_t buf[CLUSTER_MSG_MAX];
	struct node *n = arg;
	size_t len;
	int rc = wire_sync_encode(m, buf, n->msg_max, &len);

	if (rc == -ENOSPC)
		return -EMSGSIZE;
	ck_assert_int_eq(rc, 0);
	return fake_cpg_send(cpg, n->id, 0, buf, len);
}

static int
op_ownership_set(void *arg, bool own, bool announce, uint32_t lease_ms)
{
	struct node *n = arg;

	if (!n->linked)
		return -ENOTCONN;
	req_push(n, (struct req){ .kind = REQ_OWN, .own = own, .announce = announce,
				  .lease_ms = lease_ms });
	return 0;
}

static int
op_backend_set(void *arg, uint32_t v, uint32_t b, bool down)
{
	struct node *n = arg;

	(void)v;
	(void)b;
	(void)down;
	if (!n->linked)
		return -ENOTCONN;
	req_push(n, (struct req){ .kind = REQ_BACKEND });
	return 0;
}

static int
op_ping(void *arg)
{
	struct node *n = arg;

	if (!n->linked)
		return -ENOTCONN;
	req_push(n, (struct req){ .kind = REQ_PING });
	return 0;
}

static int
op_run_hooks(void *arg, enum roles_role role, const char *const *env)
{
	struct node *n = arg;

	ck_assert_ptr_nonnull(env[0]);
	n->hooked = role;
	return 0;
}

static void
op_log(void *arg, int priority, const char *line)
{
	struct node *n = arg;

	(void)priority;
	if (getenv("CHECK_CLUSTER_VERBOSE") != NULL)
		fprintf(stderr, "%u node %u: %s\n", now, n->id, line);
	if (n->n_logs < LOGS_MAX)
		snprintf(n->logs[n->n_logs++], MEMBERSHIP_LOG_LINE_MAX, "%s", line);
}

static bool
op_synced(void *arg)
{
	return ((struct node *)arg)->synced;
}

static uint64_t
op_import_queue(void *arg)
{
	return ((struct node *)arg)->import_queue;
}

static int
op_probe_targets(void *arg, const struct probe_target *t, size_t count)
{
	(void)arg;
	(void)t;
	ck_assert_uint_le(count, 8);
	return 0;
}

static bool
op_probe_up(void *arg, uint32_t id)
{
	return !((struct node *)arg)->probe_down[id];
}

static void
op_serving(void *arg, bool on)
{
	struct node *n = arg;

	ck_assert(on != n->serving);    /* told at a change only */
	n->serving = on;
	n->serving_changes++;
}

static const struct membership_ops ops = {
	.multicast = op_multicast,
	.ownership_set = op_ownership_set,
	.backend_set = op_backend_set,
	.ping = op_ping,
	.run_hooks = op_run_hooks,
	.log = op_log,
	.synced = op_synced,
	.import_queue = op_import_queue,
	.probe_targets = op_probe_targets,
	.probe_up = op_probe_up,
	.serving = op_serving,
};

/* ------------------------------------------------- CPG and the intake */

static void
on_state(void *arg, uint32_t sender, const struct wire_node_state *st)
{
	membership_on_state(((struct node *)arg)->e, sender, st, now);
}

static int
on_health(void *arg, uint32_t sender, const struct health_key *down, size_t n)
{
	return membership_on_health(((struct node *)arg)->e, sender, down, n, now);
}

static void
cpg_deliver(void *arg, uint16_t group, uint32_t sender, const void *buf, size_t len)
{
	struct node *n = arg;
	const struct roles_member *members;
	size_t count;

	ck_assert_uint_eq(group, 0);
	members = membership_members(n->e, &count);
	cluster_msg_deliver(n->msgs, sender, buf, len, members, count);
}

static void
cpg_members(void *arg, const uint32_t *ids, size_t count, bool self_in, bool merged)
{
	membership_on_members(((struct node *)arg)->e, ids, count, self_in, merged, now);
}

static const struct fake_cpg_ops cpg_ops = { .deliver = cpg_deliver, .members = cpg_members };

/* ------------------------------------------------------- the dataplane */

/* Answer one request as the dataplane is told to; false: keep it waiting. */
static bool
dp_answer_one(struct node *n, const struct req *r)
{
	switch (r->kind) {
	case REQ_OWN:
		if (n->own_answer == ANSWER_NEVER)
			return false;
		if (n->own_answer == ANSWER_REFUSE) {
			membership_ownership_done(n->e, -EPROTO, "refused", now);
			return true;
		}
		n->dp_owns = r->own;
		n->own_requests += r->own;
		n->announces += r->announce;
		n->releases_sent += !r->own;
		membership_ownership_done(n->e, 0, NULL, now);
		return true;
	case REQ_PING:
		if (n->ping_answer == ANSWER_NEVER)
			return false;
		membership_pong(n->e, n->ping_answer == ANSWER_ACK, 42, now);
		return true;
	default:
		membership_backend_done(n->e, 0, NULL, now);
		return true;
	}
}

/* Answer what waits; answers may ask for more (answered the next time). */
static size_t
dp_answer(struct node *n)
{
	struct req batch[REQS_MAX];
	size_t count = n->n_reqs, answered = 0;

	memcpy(batch, n->reqs, count * sizeof(batch[0]));
	n->n_reqs = 0;
	for (size_t i = 0; i < count; i++) {
		if (dp_answer_one(n, &batch[i]))
			answered++;
		else
			req_push(n, batch[i]);
	}
	return answered;
}

static void
dp_up(int i)
{
	nodes[i].linked = true;
	membership_dataplane_up(nodes[i].e, now);
}

/* The link goes: what is in flight fails first, as ipc_async does it. */
static void
dp_down(int i)
{
	struct node *n = &nodes[i];
	size_t count = n->n_reqs;

	n->linked = false;
	n->n_reqs = 0;
	n->dp_owns = false;
	for (size_t k = 0; k < count; k++) {
		if (n->reqs[k].kind == REQ_OWN)
			membership_ownership_done(n->e, -ENOTCONN, NULL, now);
		else if (n->reqs[k].kind == REQ_PING)
			membership_pong(n->e, false, 0, now);
		else
			membership_backend_done(n->e, -ENOTCONN, NULL, now);
	}
	membership_dataplane_down(n->e, now);
}

/* ---------------------------------------------------------- the cluster */

static void
node_start(int i, const char *mode, bool preempt, uint32_t priority)
{
	static const struct cluster_msg_ops mops = { .state = on_state, .health = on_health };
	const struct membership_params p = { .incarnation = 1, .dataplane = "dp" };
	struct node *n = &nodes[i];
	char text[4096], err[CONFIG_ERROR_MAX];

	memset(n, 0, sizeof(*n));
	n->id = (uint32_t)i + 1;
	n->msg_max = CLUSTER_MSG_MAX;
	n->synced = true;
	snprintf(text, sizeof(text), config_fmt, mode, preempt ? "true" : "false", n->id,
		 priority, n->id);
	n->cfg = config_load_string(text, "t.conf", err, sizeof(err));
	ck_assert_msg(n->cfg != NULL, "%s", err);
	n->e = membership_create(&p, n->cfg, &ops, n, now);
	ck_assert_ptr_nonnull(n->e);
	n->msgs = cluster_msg_create(&mops, n, membership_counters_mut(n->e));
	ck_assert_ptr_nonnull(n->msgs);
	fake_cpg_attach(cpg, n->id, &cpg_ops, n);
}

static void
node_stop(int i)
{
	struct node *n = &nodes[i];

	if (n->e == NULL)
		return;
	fake_cpg_detach(cpg, n->id);
	cluster_msg_destroy(n->msgs);
	membership_destroy(n->e);
	config_free(n->cfg);
	memset(n, 0, sizeof(*n));
}

static void
setup(void)
{
	cpg = fake_cpg_create();
	ck_assert_ptr_nonnull(cpg);
}

static void
teardown(void)
{
	for (int i = 0; i < NODES_MAX; i++)
		node_stop(i);
	fake_cpg_destroy(cpg);
	cpg = NULL;
}

/* Deliver and answer until nothing moves (time stands still). */
static void
settle(void)
{
	for (int round = 0; round < 1000; round++) {
		size_t moved = fake_cpg_run(cpg, SIZE_MAX);

		for (int i = 0; i < NODES_MAX; i++)
			if (nodes[i].e != NULL)
				moved += dp_answer(&nodes[i]);
		if (moved == 0)
			return;
	}
	ck_abort_msg("the cluster did not settle");
}

/* ms pass, a tick every MEMBERSHIP_TICK_MS, everything answered between. */
static void
run_for(uint32_t ms)
{
	for (uint32_t t = 0; t < ms; t += MEMBERSHIP_TICK_MS) {
		now += MEMBERSHIP_TICK_MS;
		for (int i = 0; i < NODES_MAX; i++)
			if (nodes[i].e != NULL)
				membership_tick(nodes[i].e, now);
		settle();
	}
}

/* Node i joins with its dataplane up and answering. */
static void
node_join(int i)
{
	membership_quorum(nodes[i].e, true, now);
	dp_up(i);
	fake_cpg_join(cpg, nodes[i].id);
	settle();
}

static uint64_t
counter(int i, enum cluster_counter c)
{
	return membership_counters(nodes[i].e)[c];
}

static struct membership_summary
summary(int i)
{
	struct membership_summary s;

	membership_summary(nodes[i].e, &s);
	return s;
}

static bool
active(int i)
{
	return summary(i).role == ROLES_ACTIVE;
}

static unsigned
logged(int i, const char *text)
{
	unsigned count = 0;

	for (size_t k = 0; k < nodes[i].n_logs; k++)
		count += strstr(nodes[i].logs[k], text) != NULL;
	return count;
}

/* Nodes 0..count-1 up, active-passive, node 0 of the highest priority. */
static void
pair_up(int count, bool preempt)
{
	for (int i = 0; i < count; i++)
		node_start(i, "active-passive", preempt, 200 - 10 * (uint32_t)i);
	for (int i = 0; i < count; i++)
		node_join(i);
	run_for(100);
}

/* --------------------------------------------------------------- tests */

/* The active one, owning, serving; the other passive. */
START_TEST(test_pair_roles)
{
	pair_up(2, false);
	ck_assert(active(0));
	ck_assert(!active(1));
	ck_assert(summary(0).owning);
	ck_assert(nodes[0].dp_owns);
	ck_assert(!nodes[1].dp_owns);
	ck_assert_uint_eq(nodes[0].announces, 1);
	ck_assert_uint_eq(counter(0, CLUSTER_TAKEOVERS), 1);
	ck_assert_uint_eq(summary(1).active_id, 1);
	ck_assert_int_eq(nodes[0].hooked, ROLES_ACTIVE);
	ck_assert_int_eq(nodes[1].hooked, ROLES_PASSIVE);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 0);
	ck_assert_uint_eq(counter(1, CLUSTER_IMPOSSIBLE_TRANSITIONS), 0);
}
END_TEST

/* A takeover waits while imports are queued, and owns once they drain. */
START_TEST(test_takeover_waits_for_imports)
{
	pair_up(2, false);
	nodes[1].import_queue = 5;
	dp_down(0);
	settle();
	ck_assert(active(1));
	ck_assert_int_eq(summary(1).ownership, MEMBERSHIP_OWN_WAITING);
	run_for(MEMBERSHIP_TAKEOVER_WAIT_MS / 2);
	ck_assert_int_eq(summary(1).ownership, MEMBERSHIP_OWN_WAITING);
	ck_assert(!nodes[1].dp_owns);
	ck_assert(!nodes[1].serving);
	nodes[1].import_queue = 0;
	run_for(MEMBERSHIP_TICK_MS);
	ck_assert_int_eq(summary(1).ownership, MEMBERSHIP_OWN_OWNED);
	ck_assert(nodes[1].dp_owns);
	ck_assert(nodes[1].serving);
	ck_assert_uint_eq(counter(1, CLUSTER_TAKEOVERS), 1);
	ck_assert_uint_eq(counter(1, CLUSTER_TAKEOVER_UNSYNCED), 0);
}
END_TEST

/* Imports that never drain hold it TAKEOVER_WAIT_MS, then it owns, counted. */
START_TEST(test_takeover_unsynced)
{
	pair_up(2, false);
	nodes[1].import_queue = 7;
	dp_down(0);
	settle();
	run_for(MEMBERSHIP_TAKEOVER_WAIT_MS - 2 * MEMBERSHIP_TICK_MS);
	ck_assert(!nodes[1].dp_owns);
	run_for(2 * MEMBERSHIP_TICK_MS);
	ck_assert(nodes[1].dp_owns);
	ck_assert_uint_eq(counter(1, CLUSTER_TAKEOVER_UNSYNCED), 1);
	ck_assert_uint_eq(logged(1, "taking over with 7 entries not yet imported"), 1);
	run_for(500);
	ck_assert_uint_eq(counter(1, CLUSTER_TAKEOVER_UNSYNCED), 1);
}
END_TEST

/* Renewals every lease / 4, each acknowledged: the lease never lapses. */
START_TEST(test_lease_renewal)
{
	uint64_t before;

	pair_up(1, false);
	before = counter(0, CLUSTER_RENEWALS);
	run_for(2000);
	/* 1000 ms lease: one every 250 ms */
	ck_assert_uint_ge(counter(0, CLUSTER_RENEWALS) - before, 7);
	ck_assert_uint_le(counter(0, CLUSTER_RENEWALS) - before, 8);
	ck_assert_uint_eq(counter(0, CLUSTER_LEASE_LAPSES), 0);
	ck_assert_uint_eq(nodes[0].announces, 1);       /* renewals do not announce */
	ck_assert(nodes[0].serving);
}
END_TEST

/* Renewals unanswered: the lease lapses, then the VIPs are taken again. */
START_TEST(test_lease_lapse_unanswered)
{
	pair_up(1, false);
	nodes[0].own_answer = ANSWER_NEVER;
	/* the last acknowledged renewal went at most lease / 4 ago */
	run_for(1000 - 250 - MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_LEASE_LAPSES), 0);
	ck_assert(nodes[0].serving);
	run_for(250 + MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_LEASE_LAPSES), 1);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_LAPSED);
	ck_assert(!nodes[0].serving);
	ck_assert(active(0));
	/* the renewal's late answer: owned again, announced */
	nodes[0].own_answer = ANSWER_ACK;
	run_for(2 * MEMBERSHIP_TICK_MS);
	ck_assert_int_ge(summary(0).ownership, MEMBERSHIP_OWN_OWNED);
	ck_assert(nodes[0].serving);
	ck_assert_uint_eq(nodes[0].announces, 2);
	ck_assert_uint_eq(counter(0, CLUSTER_TAKEOVERS), 2);
	ck_assert_uint_eq(counter(0, CLUSTER_LEASE_LAPSES), 1);
	ck_assert_uint_eq(logged(0, "VIP lease lapsed"), 1);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 0);
}
END_TEST

/* Renewals refused: counted, the lease lapses, taken again once accepted. */
START_TEST(test_lease_lapse_refused)
{
	pair_up(1, false);
	nodes[0].own_answer = ANSWER_REFUSE;
	run_for(1100);
	ck_assert_uint_eq(counter(0, CLUSTER_LEASE_LAPSES), 1);
	ck_assert_uint_ge(counter(0, CLUSTER_OWNERSHIP_ERRORS), 3);
	ck_assert(!nodes[0].serving);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_WAITING);
	nodes[0].own_answer = ANSWER_ACK;
	run_for(2 * MEMBERSHIP_TICK_MS);
	ck_assert_int_ge(summary(0).ownership, MEMBERSHIP_OWN_OWNED);
	ck_assert(nodes[0].serving);
	ck_assert_uint_eq(nodes[0].announces, 2);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 0);
}
END_TEST

/* A ping unanswered for PING_DEAD_MS: DEAD, ineligible, withdrawn. */
START_TEST(test_ping_dead)
{
	pair_up(2, false);
	nodes[0].ping_answer = ANSWER_NEVER;
	/* the next ping goes within PING_MS; dead PING_DEAD_MS after it */
	run_for(MEMBERSHIP_PING_DEAD_MS - MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 0);
	ck_assert(active(0));
	run_for(MEMBERSHIP_PING_MS + 2 * MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 1);
	ck_assert_int_eq(summary(0).liveness, MEMBERSHIP_DP_DEAD);
	ck_assert(!active(0));
	ck_assert(active(1));
	ck_assert_uint_eq(logged(0, "dataplane dp: no answer for 120 ms: withdrawing"), 1);
	/* the late answer: alive again, and eligible (no preempt: stays passive) */
	nodes[0].ping_answer = ANSWER_ACK;
	run_for(MEMBERSHIP_TICK_MS);
	ck_assert(summary(0).dataplane_alive);
	ck_assert(!active(0));
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 1);
}
END_TEST

/*
 * A ping waiting behind imports: every other answer shows the dataplane
 * alive, and the deadline runs from the last of them; once nothing
 * answers, DEAD PING_DEAD_MS after the last answer.
 */
START_TEST(test_ping_behind_imports)
{
	uint32_t last;

	pair_up(1, false);
	nodes[0].ping_answer = ANSWER_NEVER;
	run_for(MEMBERSHIP_PING_MS);
	ck_assert_int_eq(summary(0).liveness, MEMBERSHIP_DP_PING_SENT);
	for (int i = 0; i < 5; i++) {
		run_for(MEMBERSHIP_PING_DEAD_MS / 2);
		membership_dataplane_answered(nodes[0].e, now);
	}
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 0);
	ck_assert(active(0));
	last = now;
	run_for(MEMBERSHIP_PING_DEAD_MS - 2 * MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 0);
	run_for(3 * MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 1);
	ck_assert(now - last <= MEMBERSHIP_PING_DEAD_MS + 2 * MEMBERSHIP_TICK_MS);
	ck_assert(!active(0));
	/* an answer while no ping waits changes nothing */
	membership_dataplane_answered(nodes[0].e, now);
	ck_assert_int_eq(summary(0).liveness, MEMBERSHIP_DP_DEAD);
}
END_TEST

/* A tick after syncd stalled does not judge the ping; the next one does. */
START_TEST(test_ping_stall)
{
	pair_up(1, false);
	nodes[0].ping_answer = ANSWER_NEVER;
	run_for(MEMBERSHIP_PING_MS);
	ck_assert_int_eq(summary(0).liveness, MEMBERSHIP_DP_PING_SENT);
	now += 500;                     /* the loop held up: a late tick */
	membership_tick(nodes[0].e, now);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 0);
	ck_assert(active(0));
	/* its answer was waiting behind the tick */
	nodes[0].ping_answer = ANSWER_ACK;
	settle();
	run_for(MEMBERSHIP_PING_DEAD_MS * 2);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 0);
	ck_assert(active(0));
	/* stalled again, and still no answer at the next tick: dead */
	nodes[0].ping_answer = ANSWER_NEVER;
	run_for(MEMBERSHIP_PING_MS);
	now += 500;
	membership_tick(nodes[0].e, now);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 0);
	run_for(MEMBERSHIP_TICK_MS);
	ck_assert_uint_eq(counter(0, CLUSTER_DP_TIMEOUTS), 1);
	ck_assert(!active(0));
}
END_TEST

/* A node of higher priority rejoins: takes the role once synced, with preempt. */
static void
rejoin(bool preempt)
{
	node_start(1, "active-passive", preempt, 100);
	node_join(1);
	run_for(100);
	ck_assert(active(1));
	node_start(0, "active-passive", preempt, 200);
	nodes[0].synced = false;
	node_join(0);
	run_for(500);
	ck_assert(active(1));
	ck_assert(!active(0));
	nodes[0].synced = true;
	run_for(100);
}

START_TEST(test_preempt_after_resync)
{
	rejoin(true);
	ck_assert(active(0));
	ck_assert(!active(1));
	ck_assert(nodes[0].dp_owns);
	ck_assert(!nodes[1].dp_owns);
	ck_assert(nodes[0].serving && !nodes[1].serving);
	ck_assert_uint_eq(counter(1, CLUSTER_RELEASES), 1);
	ck_assert_uint_eq(counter(1, CLUSTER_ROLE_CHANGES), 2);
}
END_TEST

START_TEST(test_no_preempt_keeps_role)
{
	rejoin(false);
	ck_assert(!active(0));
	ck_assert(active(1));
	ck_assert(nodes[1].dp_owns && !nodes[0].dp_owns);
	ck_assert_uint_eq(counter(1, CLUSTER_RELEASES), 0);
}
END_TEST

/* Quorum lost: withdrawn in the same call, before any message. */
START_TEST(test_quorum_loss)
{
	pair_up(2, false);
	membership_quorum(nodes[0].e, false, now);
	ck_assert(!active(0));
	ck_assert(!nodes[0].serving);
	ck_assert_uint_eq(counter(0, CLUSTER_RELEASES), 1);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_RELEASING);
	ck_assert_int_eq(nodes[0].hooked, ROLES_PASSIVE);
	settle();
	ck_assert(!nodes[0].dp_owns);
	ck_assert(active(1));
	run_for(100);
	ck_assert(nodes[1].dp_owns);
}
END_TEST

/*
 * With a quorum device (timeout 500 ms): the side of a split that the
 * device denies still looks quorate for a while. Its passive node takes
 * no role within the device's timeout of the view change, so the quorum
 * loss that follows finds it passive: no role change, nothing owned.
 * Without the loss it takes over once the timeout passed. The same after
 * a quorum gain.
 */
START_TEST(test_quorum_device_hold)
{
	const uint32_t side[] = { 2 };

	pair_up(2, false);
	membership_set_quorum_device(nodes[1].e, 500);
	fake_cpg_split(cpg, side, 1);
	settle();
	run_for(100);
	ck_assert(active(0) && !active(1));
	membership_quorum(nodes[1].e, false, now);      /* the device said no */
	run_for(1000);
	ck_assert(!active(1) && !nodes[1].dp_owns);
	ck_assert_uint_eq(counter(1, CLUSTER_ROLE_CHANGES), 0);
	/* quorum back before the view: held again, then the view: passive */
	membership_quorum(nodes[1].e, true, now);
	run_for(100);
	ck_assert(!active(1));
	fake_cpg_heal(cpg);
	run_for(1000);
	ck_assert(active(0) && !active(1));
	ck_assert_uint_eq(counter(1, CLUSTER_ROLE_CHANGES), 0);
	/* node 0 gone for good: node 1 takes over, once the hold passed */
	node_stop(0);
	settle();
	run_for(400);
	ck_assert(!active(1));
	run_for(200);
	ck_assert(active(1));
}
END_TEST

/* Another mode or preempt: counted at each announcement, logged once. */
START_TEST(test_config_mismatch)
{
	node_start(0, "active-passive", false, 200);
	node_start(1, "active-passive", true, 100);
	node_join(0);
	node_join(1);
	run_for(3 * MEMBERSHIP_ANNOUNCE_MS);
	ck_assert_uint_ge(counter(0, CLUSTER_CONFIG_MISMATCH), 3);
	ck_assert_uint_ge(counter(1, CLUSTER_CONFIG_MISMATCH), 3);
	ck_assert_uint_eq(logged(0, "must be the same"), 1);
	ck_assert_uint_eq(logged(1, "must be the same"), 1);
}
END_TEST

/*
 * A view past MEMBERSHIP_MEMBERS_MAX keeps the lowest ids, counts the
 * rest, logs once; a node left out of its own view holds no role.
 */
START_TEST(test_view_overflow)
{
	uint32_t ids[MEMBERSHIP_MEMBERS_MAX + 6];
	size_t n = sizeof(ids) / sizeof(ids[0]);
	uint64_t sent;

	pair_up(1, false);
	sent = counter(0, CLUSTER_ANNOUNCES_SENT);
	for (size_t i = 0; i < n; i++)
		ids[i] = (uint32_t)(n - i);     /* descending: any order */
	membership_on_members(nodes[0].e, ids, n, true, false, now);
	membership_on_members(nodes[0].e, ids, n, true, false, now);
	ck_assert_uint_eq(summary(0).members, MEMBERSHIP_MEMBERS_MAX);
	ck_assert_uint_eq(counter(0, CLUSTER_VIEW_OVERFLOW), 12);
	ck_assert_uint_eq(logged(0, "left out"), 1);
	/* newcomers: announced once; the unknown are not eligible, it stays */
	ck_assert_uint_eq(counter(0, CLUSTER_ANNOUNCES_SENT), sent + 1);
	ck_assert(active(0));
	/* this node (id 1) kept; now one where it is among the highest */
	for (size_t i = 0; i < n; i++)
		ids[i] = i == 0 ? 1 : (uint32_t)(1000 + i);
	ids[0] = 5000;
	membership_on_members(nodes[0].e, ids, n, true, false, now);
	ck_assert_uint_eq(summary(0).members, MEMBERSHIP_MEMBERS_MAX);
	ck_assert(!active(0));
	ck_assert(!nodes[0].serving);
	ck_assert_uint_eq(counter(0, CLUSTER_ANNOUNCES_SENT), sent + 1);
	ck_assert_uint_eq(logged(0, "membership group: lost"), 1);
}
END_TEST

/* serving follows role and ownership: active-passive. */
START_TEST(test_serving_active_passive)
{
	node_start(0, "active-passive", false, 200);
	membership_standby(nodes[0].e, true, now);
	node_join(0);
	run_for(100);
	ck_assert(!active(0));
	nodes[0].own_answer = ANSWER_NEVER;
	membership_standby(nodes[0].e, false, now);
	run_for(100);
	ck_assert(active(0));
	ck_assert(!nodes[0].serving);   /* active, not owning yet */
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_REQUESTED);
	nodes[0].own_answer = ANSWER_ACK;
	settle();
	ck_assert(nodes[0].serving);
	membership_standby(nodes[0].e, true, now);
	ck_assert(!nodes[0].serving);
	settle();
	membership_standby(nodes[0].e, false, now);
	run_for(100);
	ck_assert(nodes[0].serving);
	ck_assert_uint_eq(nodes[0].serving_changes, 3);
}
END_TEST

/*
 * Active-active: every active node serves once its dataplane acknowledged
 * the serving lease (an OWNERSHIP_SET the fake sees as own; syncd sends
 * it with no VIP), renewed like the VIPs' lease; a lease unrenewed lapses
 * and serving ends; standby ends it at once, and the lease is given up.
 */
START_TEST(test_serving_active_active)
{
	node_start(0, "active-active", false, 200);
	node_start(1, "active-active", false, 100);
	node_join(0);
	node_join(1);
	run_for(100);
	ck_assert(active(0) && active(1));
	ck_assert(nodes[0].serving && nodes[0].dp_owns);
	ck_assert(nodes[1].serving && nodes[1].dp_owns);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_OWNED);
	ck_assert_uint_eq(nodes[0].announces, 0);
	run_for(2000);          /* two leases: renewed every lease / 4 */
	ck_assert_uint_ge(counter(0, CLUSTER_RENEWALS), 7);
	ck_assert(nodes[0].serving);
	/* renewals unanswered: the lease lapses, serving ends until acked */
	nodes[0].own_answer = ANSWER_NEVER;
	run_for(1100);
	ck_assert_uint_eq(counter(0, CLUSTER_LEASE_LAPSES), 1);
	ck_assert(!nodes[0].serving);
	ck_assert(active(0));
	nodes[0].own_answer = ANSWER_ACK;
	run_for(100);
	ck_assert(nodes[0].serving);
	membership_standby(nodes[1].e, true, now);
	ck_assert(!nodes[1].serving);
	run_for(100);
	ck_assert(!nodes[1].dp_owns);
	ck_assert(nodes[0].serving);
	ck_assert_uint_eq(nodes[1].serving_changes, 2);
}
END_TEST

/* A completion nobody waits for is refused: counted, logged with both states. */
START_TEST(test_impossible_transition)
{
	pair_up(1, false);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_OWNED);
	membership_ownership_done(nodes[0].e, 0, NULL, now);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 1);
	ck_assert_uint_eq(logged(0, "ownership: owned -> owned refused"), 1);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_OWNED);
	ck_assert_int_eq(summary(0).liveness, MEMBERSHIP_DP_ALIVE);
	membership_pong(nodes[0].e, true, 1, now);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 2);
	ck_assert_uint_eq(logged(0, "liveness: alive -> alive refused"), 1);
	ck_assert(nodes[0].serving);
	run_for(1000);
	ck_assert(nodes[0].serving);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 2);
}
END_TEST

/*
 * A partition heals with an active node on each side, both resyncing from
 * each other: the best holder keeps the role through its resync (no flap),
 * the other gives up once, and only the one that keeps it announces the
 * VIPs again (the routers may have followed the other half).
 */
START_TEST(test_partition_heal)
{
	const uint32_t side[] = { 2 };
	uint64_t changes;
	unsigned announces[2];

	pair_up(2, false);
	fake_cpg_split(cpg, side, 1);
	settle();
	run_for(100);
	ck_assert(active(0) && active(1));
	ck_assert(nodes[0].dp_owns && nodes[1].dp_owns);
	changes = counter(1, CLUSTER_ROLE_CHANGES);
	announces[0] = nodes[0].announces;
	announces[1] = nodes[1].announces;
	nodes[0].synced = nodes[1].synced = false;      /* the merge's resync */
	fake_cpg_heal(cpg);
	run_for(100);
	ck_assert(active(0));
	ck_assert_uint_eq(nodes[0].announces, announces[0] + 1);
	ck_assert_uint_eq(nodes[1].announces, announces[1]);
	nodes[0].synced = nodes[1].synced = true;
	run_for(100);
	ck_assert(active(0));
	ck_assert(!active(1));
	ck_assert(nodes[0].dp_owns && !nodes[1].dp_owns);
	ck_assert_uint_eq(counter(1, CLUSTER_ROLE_CHANGES), changes + 1);
	ck_assert_uint_eq(counter(1, CLUSTER_RELEASES), 1);
	run_for(2000);
	ck_assert(active(0) && !active(1));
	ck_assert_uint_eq(counter(1, CLUSTER_ROLE_CHANGES), changes + 1);
	ck_assert_uint_eq(counter(0, CLUSTER_ROLE_CHANGES), 1);
}
END_TEST

/* A multicast longer than the group takes: counted, no retry every tick. */
START_TEST(test_send_too_long)
{
	pair_up(2, false);
	nodes[0].msg_max = 60;          /* a NODE_STATE fits, a HEALTH of 3 does not */
	for (int b = 0; b < 3; b++)
		nodes[0].probe_down[b] = true;
	membership_probe_changed(nodes[0].e, 0, false, now);
	membership_health_flush(nodes[0].e, now);
	ck_assert_uint_eq(counter(0, CLUSTER_SEND_TOO_LONG), 1);
	run_for(1000);
	ck_assert_uint_eq(counter(0, CLUSTER_SEND_TOO_LONG), 1);
	ck_assert_uint_eq(logged(0, "too long"), 1);
	ck_assert(active(0));
	nodes[0].msg_max = CLUSTER_MSG_MAX;
	membership_probe_changed(nodes[0].e, 0, false, now);
	membership_health_flush(nodes[0].e, now);
	settle();
	ck_assert_uint_eq(counter(1, CLUSTER_HEALTH_RECEIVED) > 0, 1);
}
END_TEST

/* Both nodes see a backend down: agreed, set in both dataplanes. */
START_TEST(test_health_agreed)
{
	pair_up(2, false);
	nodes[0].probe_down[1] = true;
	membership_probe_changed(nodes[0].e, 1, false, now);
	membership_health_flush(nodes[0].e, now);
	settle();
	ck_assert_uint_eq(summary(0).down_agreed, 0);   /* one of two: no majority */
	nodes[1].probe_down[1] = true;
	membership_probe_changed(nodes[1].e, 1, false, now);
	membership_health_flush(nodes[1].e, now);
	settle();
	ck_assert_uint_eq(summary(0).down_agreed, 1);
	ck_assert_uint_eq(summary(1).down_agreed, 1);
	ck_assert_uint_eq(counter(0, CLUSTER_BACKEND_SETS), 1);
	ck_assert_uint_eq(counter(1, CLUSTER_BACKEND_SETS), 1);
	ck_assert_uint_eq(counter(0, CLUSTER_HEALTH_CHANGES), 1);
}
END_TEST

/*
 * The exporter's view (HEALTH_STATUS): each probe target with this node's
 * verdict, the agreed one and who reports it down, a page at a time.
 */
START_TEST(test_health_targets)
{
	struct wire_ctl_health_target t[4];
	uint32_t total;

	pair_up(2, false);
	nodes[0].probe_down[1] = true;
	membership_probe_changed(nodes[0].e, 1, false, now);
	membership_health_flush(nodes[0].e, now);
	settle();
	ck_assert_uint_eq(membership_health_targets(nodes[1].e, 0, t, 4, &total), 3);
	ck_assert_uint_eq(total, 3);
	ck_assert_str_eq(t[1].vip, "web");
	ck_assert_uint_eq(t[1].family, AF_INET);
	ck_assert_uint_eq(t[1].backend[3], 22);
	ck_assert(t[1].local_up && t[1].agreed_up);     /* node 2 sees it up */
	ck_assert_uint_eq(t[1].n_down_by, 1);
	ck_assert_uint_eq(t[1].down_by[0], 1);
	ck_assert(t[0].local_up && t[0].agreed_up && t[0].n_down_by == 0);
	ck_assert_uint_eq(t[0].probes, 0);              /* the caller's probes' */

	nodes[1].probe_down[1] = true;
	membership_probe_changed(nodes[1].e, 1, false, now);
	membership_health_flush(nodes[1].e, now);
	settle();
	/* a page of one from target 1, and past the end */
	ck_assert_uint_eq(membership_health_targets(nodes[0].e, 1, t, 1, &total), 1);
	ck_assert(!t[0].local_up && !t[0].agreed_up);
	ck_assert_uint_eq(t[0].backend[3], 22);
	ck_assert_uint_eq(t[0].n_down_by, 2);
	ck_assert_uint_eq(t[0].down_by[0], 1);
	ck_assert_uint_eq(t[0].down_by[1], 2);
	ck_assert_uint_eq(membership_health_targets(nodes[0].e, 3, t, 4, &total), 0);
	ck_assert_uint_eq(membership_health_targets(nodes[0].e, 0, NULL, 0, &total), 0);
	ck_assert_uint_eq(total, 3);
}
END_TEST

/* A reload while owning: the VIPs are owned again at once, announced. */
START_TEST(test_reload_reannounces)
{
	struct config *old;
	char text[4096], err[CONFIG_ERROR_MAX];

	pair_up(1, false);
	ck_assert_uint_eq(nodes[0].announces, 1);
	snprintf(text, sizeof(text), config_fmt, "active-passive", "true", 1u, 200u, 1u);
	old = nodes[0].cfg;
	nodes[0].cfg = config_load_string(text, "t.conf", err, sizeof(err));
	ck_assert_msg(nodes[0].cfg != NULL, "%s", err);
	ck_assert_int_eq(membership_set_config(nodes[0].e, nodes[0].cfg, now), 0);
	config_free(old);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_RENEWING);
	ck_assert_uint_eq(logged(0, "reload: cluster mode active-passive, preempt on"), 1);
	settle();
	ck_assert_uint_eq(nodes[0].announces, 2);
	run_for(1000);
	ck_assert_uint_eq(nodes[0].announces, 2);       /* renewals do not */
	ck_assert(nodes[0].serving);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 0);
}
END_TEST

/* The role lost and regained while a renewal is in flight: active again. */
START_TEST(test_role_flap_during_renewal)
{
	pair_up(1, false);
	nodes[0].own_answer = ANSWER_NEVER;
	run_for(300);
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_RENEWING);
	membership_standby(nodes[0].e, true, now);
	ck_assert_int_eq(nodes[0].hooked, ROLES_PASSIVE);
	ck_assert(!nodes[0].serving);
	ck_assert_uint_eq(counter(0, CLUSTER_RELEASES), 1);
	membership_standby(nodes[0].e, false, now);
	ck_assert(active(0));
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_RENEWING);
	nodes[0].own_answer = ANSWER_ACK;
	settle();
	ck_assert_int_eq(summary(0).ownership, MEMBERSHIP_OWN_OWNED);
	ck_assert_int_eq(nodes[0].hooked, ROLES_ACTIVE);
	ck_assert(nodes[0].serving);
	ck_assert(nodes[0].dp_owns);
	ck_assert_uint_eq(counter(0, CLUSTER_IMPOSSIBLE_TRANSITIONS), 0);
}
END_TEST

static Suite *
cluster_suite(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("engine");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_pair_roles);
	tcase_add_test(tc, test_takeover_waits_for_imports);
	tcase_add_test(tc, test_takeover_unsynced);
	tcase_add_test(tc, test_lease_renewal);
	tcase_add_test(tc, test_lease_lapse_unanswered);
	tcase_add_test(tc, test_lease_lapse_refused);
	tcase_add_test(tc, test_ping_dead);
	tcase_add_test(tc, test_ping_stall);
	tcase_add_test(tc, test_ping_behind_imports);
	tcase_add_test(tc, test_preempt_after_resync);
	tcase_add_test(tc, test_no_preempt_keeps_role);
	tcase_add_test(tc, test_quorum_loss);
	tcase_add_test(tc, test_quorum_device_hold);
	tcase_add_test(tc, test_config_mismatch);
	tcase_add_test(tc, test_view_overflow);
	tcase_add_test(tc, test_serving_active_passive);
	tcase_add_test(tc, test_serving_active_active);
	tcase_add_test(tc, test_impossible_transition);
	tcase_add_test(tc, test_partition_heal);
	tcase_add_test(tc, test_send_too_long);
	tcase_add_test(tc, test_health_agreed);
	tcase_add_test(tc, test_health_targets);
	tcase_add_test(tc, test_reload_reannounces);
	tcase_add_test(tc, test_role_flap_during_renewal);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cluster_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
