/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BFD sessions (dataplane/core/bfd.h): RFC 5880 6.8.6's state table, the
 * timers, Poll Sequences, jitter, every drop reason, keyed SHA-1 with
 * meticulous sequence numbers, serving(false).
 *
 * A test plays the router: it writes the router's packets with
 * bfd_packet_build() and reads what the sessions sent, caught by the send
 * op, with bfd_packet_parse(). Two sets of sessions also talk to each
 * other through a queue (pair tests). Time is a number the test moves.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/core/bfd.h"
#include "dataplane/core/flow_key.h"

#define MS 1000u
#define SEC 1000000u
#define INTERVAL (100 * MS)
#define MULT 3
#define REMOTE_DISCR 0xabcd0001u
#define LOCAL_DISCR4 0x1001u
#define LOCAL_DISCR6 0x1002u
#define SENT_MAX 64
#define CHANGES_MAX 32
#define QUEUE_MAX 64
#define SOURCE_PORT 49152
#define NO_EDIT 0xffffu            /* built(): no byte changed */

static const uint8_t PEER4[16] = { 198, 18, 0, 1 };
static const uint8_t PEER6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t STRANGER4[16] = { 198, 18, 0, 99 };
static const struct bfd_key KEY = { .id = 1, .len = 6, .secret = "secret" };

/* What one set of sessions did, seen through its ops. */
struct endpoint {
	struct bfd *b;
	uint8_t family;
	uint8_t addr[16];
	uint32_t rnd;                   /* what random() returns next */
	bool lcg;                       /* random() steps an LCG instead */
	unsigned n_sent;
	uint32_t sent_to[SENT_MAX];
	size_t sent_len[SENT_MAX];
	uint8_t sent[SENT_MAX][BFD_PACKET_MAX];
	unsigned n_changes;
	struct { uint32_t i; enum bfd_state old, state; enum bfd_diag diag; } changes[CHANGES_MAX];
	struct endpoint *wire;          /* pair tests: sends are queued to it */
};

/* Packets in flight between the two ends of a pair. */
static struct {
	unsigned n;
	struct endpoint *to[QUEUE_MAX];
	const struct endpoint *from[QUEUE_MAX];
	size_t len[QUEUE_MAX];
	uint8_t data[QUEUE_MAX][BFD_PACKET_MAX];
} queue;

static struct endpoint ep;

static void
op_send(void *arg, uint32_t i, const uint8_t *payload, size_t len)
{
	struct endpoint *e = arg;
	unsigned k = e->n_sent++ % SENT_MAX;

	ck_assert_uint_le(len, BFD_PACKET_MAX);
	e->sent_to[k] = i;
	e->sent_len[k] = len;
	memcpy(e->sent[k], payload, len);
	if (e->wire != NULL && queue.n < QUEUE_MAX) {
		queue.to[queue.n] = e->wire;
		queue.from[queue.n] = e;
		queue.len[queue.n] = len;
		memcpy(queue.data[queue.n], payload, len);
		queue.n++;
	}
}

static void
op_state_change(void *arg, uint32_t i, enum bfd_state old, enum bfd_state state,
		enum bfd_diag diag)
{
	struct endpoint *e = arg;
	unsigned k = e->n_changes++ % CHANGES_MAX;

	e->changes[k].i = i;
	e->changes[k].old = old;
	e->changes[k].state = state;
	e->changes[k].diag = diag;
}

static uint32_t
op_random(void *arg)
{
	struct endpoint *e = arg;

	if (e->lcg)
		e->rnd = e->rnd * 1664525u + 1013904223u;
	return e->rnd;
}

static const struct bfd_ops OPS = {
	.send = op_send, .state_change = op_state_change, .random = op_random,
};

/* Sessions to PEER4 (0) and PEER6 (1). */
static struct bfd *
make_with(struct endpoint *e, bool auth, bool serving, uint8_t mult, uint32_t n)
{
	struct bfd_peer peers[2] = {
		{ .family = FLOW_FAMILY_IPV4, .local_discr = LOCAL_DISCR4 },
		{ .family = FLOW_FAMILY_IPV6, .local_discr = LOCAL_DISCR6 },
	};
	struct bfd_params p = {
		.n_peers = n, .peers = peers, .desired_min_tx_us = INTERVAL,
		.required_min_rx_us = INTERVAL, .detect_mult = mult, .auth = auth,
		.key = KEY, .serving = serving,
	};

	memcpy(peers[0].addr, PEER4, 16);
	memcpy(peers[1].addr, PEER6, 16);
	e->b = bfd_create(&p, &OPS, e, 0);
	ck_assert_ptr_nonnull(e->b);
	return e->b;
}

static struct bfd *
make(bool auth, bool serving)
{
	memset(&ep, 0, sizeof(ep));
	return make_with(&ep, auth, serving, MULT, 2);
}

static void
teardown(void)
{
	bfd_destroy(ep.b);
	ep.b = NULL;
}

/* The router's packet: from REMOTE_DISCR, 100 ms both ways, mult 3. */
static struct bfd_packet
remote(uint8_t state, uint32_t your_discr, uint8_t flags)
{
	return (struct bfd_packet){
		.state = state, .flags = flags, .detect_mult = MULT,
		.my_discr = REMOTE_DISCR, .your_discr = your_discr,
		.desired_min_tx_us = INTERVAL, .required_min_rx_us = INTERVAL,
	};
}

/* Feed len raw bytes as if from src (family of src by size), with ttl, port. */
static int
feed_raw(const uint8_t *payload, size_t len, uint8_t family, const uint8_t src[16],
	 uint8_t ttl, uint16_t port, uint64_t now, enum bfd_drop *why)
{
	struct bfd_rx rx = {
		.payload = payload, .len = (uint32_t)len, .ttl = ttl,
		.source_port = port, .family = family,
	};

	memcpy(rx.source, src, 16);
	return bfd_input(ep.b, now, &rx, why);
}

/* The router at PEER4 sends pkt (signed with key if not NULL). */
static int
feed(const struct bfd_packet *pkt, const struct bfd_key *key, uint64_t now)
{
	uint8_t out[BFD_PACKET_MAX];
	size_t len = bfd_packet_build(out, pkt, key);
	enum bfd_drop why = BFD_DROP_MAX;
	int rc = feed_raw(out, len, FLOW_FAMILY_IPV4, PEER4, BFD_TTL, SOURCE_PORT, now, &why);

	ck_assert_msg(rc == 0, "dropped as %s", why < BFD_DROP_MAX ? bfd_drop_names[why] : "?");
	return rc;
}

/* The last packet sent to session i, parsed. */
static struct bfd_packet
last_sent(uint32_t i)
{
	struct bfd_packet pkt;
	enum bfd_drop why;

	for (unsigned n = ep.n_sent; n > 0 && n + SENT_MAX > ep.n_sent; n--) {
		unsigned k = (n - 1) % SENT_MAX;

		if (ep.sent_to[k] != i)
			continue;
		ck_assert(bfd_packet_parse(ep.sent[k], (uint32_t)ep.sent_len[k], &pkt, &why));
		return pkt;
	}
	ck_abort_msg("nothing sent to session %u", i);
	return pkt;
}

static struct bfd_session_status
status(uint32_t i)
{
	struct bfd_session_status st;

	ck_assert_int_eq(bfd_session_status(ep.b, i, &st), 0);
	return st;
}

static uint8_t
state(uint32_t i)
{
	return status(i).state;
}

/* Run by the deadlines until session i sends, and that packet. */
static struct bfd_packet
next_sent(uint32_t i)
{
	uint64_t mark = status(i).packets_out;

	for (unsigned k = 0; k < 10 && status(i).packets_out == mark; k++)
		bfd_run(ep.b, bfd_next_deadline(ep.b));
	ck_assert_uint_gt(status(i).packets_out, mark);
	return last_sent(i);
}

/* bring_up: the router's Init (its answer to session 0's Down) brings
 * session 0 Up; the packet is fed at test clock now. */
static void
bring_up(bool auth, bool serving, uint64_t now)
{
	struct bfd_packet pkt = remote(BFD_STATE_INIT, LOCAL_DISCR4, 0);

	make(auth, serving);
	bfd_run(ep.b, 0);
	feed(&pkt, auth ? &KEY : NULL, now);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
}

START_TEST(test_create_refuses)
{
	struct bfd_peer peers[2] = {
		{ .family = FLOW_FAMILY_IPV4, .addr = { 198, 18, 0, 1 }, .local_discr = 1 },
		{ .family = FLOW_FAMILY_IPV4, .addr = { 198, 18, 0, 2 }, .local_discr = 2 },
	};
	struct bfd_params p = {
		.n_peers = 2, .peers = peers, .desired_min_tx_us = INTERVAL,
		.required_min_rx_us = INTERVAL, .detect_mult = MULT,
	};
	struct bfd_ops no_random = { .send = op_send };
	struct bfd *b;

	b = bfd_create(&p, &OPS, &ep, 0);
	ck_assert_ptr_nonnull(b);
	bfd_destroy(b);
	bfd_destroy(NULL);
	errno = 0;
	ck_assert_ptr_null(bfd_create(&p, &no_random, &ep, 0));
	ck_assert_int_eq(errno, EINVAL);
	peers[1].local_discr = 1;               /* duplicate discriminator */
	ck_assert_ptr_null(bfd_create(&p, &OPS, &ep, 0));
	peers[1].local_discr = 0;               /* zero */
	ck_assert_ptr_null(bfd_create(&p, &OPS, &ep, 0));
	peers[1].local_discr = 2;
	peers[1].addr[3] = 1;                   /* duplicate peer */
	ck_assert_ptr_null(bfd_create(&p, &OPS, &ep, 0));
	peers[1].addr[3] = 2;
	p.detect_mult = 0;
	ck_assert_ptr_null(bfd_create(&p, &OPS, &ep, 0));
	p.detect_mult = MULT;
	p.auth = true;                          /* an empty key */
	ck_assert_ptr_null(bfd_create(&p, &OPS, &ep, 0));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* Down at first, sending at the slow rate: 1 s desired TX, ours required. */
START_TEST(test_first_packets)
{
	struct bfd_packet pkt;
	uint64_t next;

	make(false, true);
	ck_assert_uint_eq(bfd_sessions(ep.b), 2);
	ck_assert_uint_eq(bfd_next_deadline(ep.b), 0);
	next = bfd_run(ep.b, 0);
	ck_assert_uint_eq(ep.n_sent, 2);
	pkt = last_sent(1);
	ck_assert_uint_eq(pkt.version, 1);
	ck_assert_uint_eq(pkt.state, BFD_STATE_DOWN);
	ck_assert_uint_eq(pkt.diag, BFD_DIAG_NONE);
	ck_assert_uint_eq(pkt.length, BFD_HEADER_LEN);
	ck_assert_uint_eq(pkt.flags, 0);
	ck_assert_uint_eq(pkt.detect_mult, MULT);
	ck_assert_uint_eq(pkt.my_discr, LOCAL_DISCR6);
	ck_assert_uint_eq(pkt.your_discr, 0);
	ck_assert_uint_eq(pkt.desired_min_tx_us, BFD_SLOW_TX_US);
	ck_assert_uint_eq(pkt.required_min_rx_us, INTERVAL);
	ck_assert_uint_eq(pkt.required_min_echo_rx_us, 0);
	ck_assert_uint_eq(next, BFD_SLOW_TX_US);        /* random 0: no jitter */
	ck_assert_uint_eq(bfd_run(ep.b, next - 1), next);
	ck_assert_uint_eq(ep.n_sent, 2);
	bfd_run(ep.b, next);
	ck_assert_uint_eq(ep.n_sent, 4);
	ck_assert_uint_eq(status(0).packets_out, 2);
	ck_assert_str_eq(bfd_state_names[status(0).state], "Down");
	ck_assert_str_eq(bfd_diag_name(BFD_DIAG_NEIGHBOR_DOWN), "Neighbor Signaled Session Down");
	ck_assert_str_eq(bfd_diag_name(31), "Reserved");
}
END_TEST

START_TEST(test_down_to_init)
{
	struct bfd_packet pkt = remote(BFD_STATE_DOWN, 0, 0);

	make(false, true);
	bfd_run(ep.b, 0);
	feed(&pkt, NULL, 10 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
	ck_assert_uint_eq(state(1), BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.n_changes, 1);
	ck_assert_uint_eq(ep.changes[0].old, BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.changes[0].state, BFD_STATE_INIT);
	ck_assert_uint_eq(status(0).remote_discr, REMOTE_DISCR);
	ck_assert_uint_eq(status(0).state_since_us, 10 * MS);
	ck_assert_uint_eq(status(0).state_changes, 1);
	ck_assert_uint_eq(status(0).packets_in, 1);
	feed(&pkt, NULL, 900 * MS);             /* Init stays on Down */
	bfd_run(ep.b, SEC);
	pkt = last_sent(0);
	ck_assert_uint_eq(status(0).packets_out, 2);
	ck_assert_uint_eq(pkt.state, BFD_STATE_INIT);
	ck_assert_uint_eq(pkt.your_discr, REMOTE_DISCR);
}
END_TEST

START_TEST(test_down_to_up)
{
	bring_up(false, true, 10 * MS);
	ck_assert_uint_eq(ep.n_changes, 1);
	ck_assert_uint_eq(ep.changes[0].old, BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.changes[0].state, BFD_STATE_UP);
	ck_assert_uint_eq(ep.changes[0].diag, BFD_DIAG_NONE);
}
END_TEST

START_TEST(test_init_to_up)
{
	struct bfd_packet down = remote(BFD_STATE_DOWN, 0, 0);
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	struct bfd_packet init = remote(BFD_STATE_INIT, LOCAL_DISCR4, 0);

	make(false, true);
	feed(&down, NULL, 0);
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
	feed(&down, NULL, 1 * MS);              /* Init stays on Down */
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
	feed(&up, NULL, 2 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	teardown();

	make(false, true);
	feed(&down, NULL, 0);
	feed(&init, NULL, 1 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	feed(&up, NULL, 2 * MS);                /* Up stays on Init and Up */
	feed(&init, NULL, 3 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	ck_assert_uint_eq(status(0).state_changes, 2);
}
END_TEST

START_TEST(test_up_to_down_neighbor)
{
	struct bfd_packet down = remote(BFD_STATE_DOWN, LOCAL_DISCR4, 0);
	struct bfd_packet pkt;

	bring_up(false, true, 0);
	feed(&down, NULL, 50 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(0).local_diag, BFD_DIAG_NEIGHBOR_DOWN);
	ck_assert_uint_eq(ep.changes[1].state, BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.changes[1].diag, BFD_DIAG_NEIGHBOR_DOWN);
	pkt = next_sent(0);
	ck_assert_uint_eq(pkt.state, BFD_STATE_DOWN);
	ck_assert_uint_eq(pkt.diag, BFD_DIAG_NEIGHBOR_DOWN);
	ck_assert_uint_eq(pkt.desired_min_tx_us, BFD_SLOW_TX_US);
	/* Down again follows the table: the router's Down takes it to Init. */
	feed(&down, NULL, 60 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
}
END_TEST

/* Detect mult x max(our RX, their TX): 3 x 100 ms after the last packet. */
START_TEST(test_detection_timeout)
{
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	uint64_t t = 40 * MS;

	bring_up(false, true, 0);
	feed(&up, NULL, t);
	ck_assert_uint_eq(status(0).detect_time_us, 3 * INTERVAL);
	ck_assert_uint_le(bfd_next_deadline(ep.b), t + 3 * INTERVAL);
	bfd_run(ep.b, t + 3 * INTERVAL - 1);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	bfd_run(ep.b, t + 3 * INTERVAL);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(0).local_diag, BFD_DIAG_DETECT_EXPIRED);
	ck_assert_uint_eq(ep.changes[1].diag, BFD_DIAG_DETECT_EXPIRED);
	ck_assert_uint_eq(status(0).remote_discr, 0);
	ck_assert_uint_eq(status(0).remote_detect_mult, 0);
	ck_assert_uint_eq(status(0).remote_min_rx_us, 1);
	ck_assert_uint_eq(next_sent(0).your_discr, 0);

	/* Init times out too. */
	teardown();
	make(false, true);
	up = remote(BFD_STATE_DOWN, 0, 0);
	feed(&up, NULL, 0);
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
	bfd_run(ep.b, 3 * INTERVAL);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(0).local_diag, BFD_DIAG_DETECT_EXPIRED);
}
END_TEST

/* The router says AdminDown: Up and Init go Down (diag 3), Down stays. */
START_TEST(test_remote_admin_down)
{
	struct bfd_packet admin = remote(BFD_STATE_ADMIN_DOWN, LOCAL_DISCR4, 0);
	struct bfd_packet down = remote(BFD_STATE_DOWN, 0, 0);

	bring_up(false, true, 0);
	feed(&admin, NULL, 10 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(0).local_diag, BFD_DIAG_NEIGHBOR_DOWN);
	ck_assert_uint_eq(status(0).remote_state, BFD_STATE_ADMIN_DOWN);
	feed(&admin, NULL, 20 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(0).state_changes, 2);
	teardown();

	make(false, true);
	feed(&down, NULL, 0);
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
	feed(&admin, NULL, 1 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(0).local_diag, BFD_DIAG_NEIGHBOR_DOWN);
}
END_TEST

/* We go AdminDown: say so, stay there whatever comes, answer no Poll. */
START_TEST(test_local_admin_down)
{
	struct bfd_packet init = remote(BFD_STATE_INIT, LOCAL_DISCR4, BFD_FLAG_POLL);
	struct bfd_packet pkt;
	unsigned sent;

	bring_up(false, true, 0);
	sent = ep.n_sent;
	bfd_set_admin_down(ep.b, 10 * MS, true);
	ck_assert_uint_eq(ep.n_sent, sent + 2);         /* both sessions, at once */
	ck_assert_uint_eq(state(0), BFD_STATE_ADMIN_DOWN);
	ck_assert_uint_eq(state(1), BFD_STATE_ADMIN_DOWN);
	pkt = last_sent(1);
	ck_assert_uint_eq(pkt.state, BFD_STATE_ADMIN_DOWN);
	ck_assert_uint_eq(pkt.diag, BFD_DIAG_ADMIN_DOWN);
	sent = ep.n_sent;
	feed(&init, NULL, 20 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_ADMIN_DOWN);
	ck_assert_uint_eq(ep.n_sent, sent);             /* no Final in AdminDown */
	ck_assert_uint_eq(status(0).remote_state, BFD_STATE_INIT);
	bfd_run(ep.b, 5 * SEC);                         /* timeouts change nothing */
	ck_assert_uint_eq(state(0), BFD_STATE_ADMIN_DOWN);
	bfd_set_admin_down(ep.b, 6 * SEC, false);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(last_sent(1).state, BFD_STATE_DOWN);
	init.flags = 0;
	feed(&init, NULL, 6 * SEC + MS);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
}
END_TEST

/* Up: the fast rate, announced with a Poll; the Final ends it. */
START_TEST(test_slow_start_then_poll)
{
	struct bfd_packet fin = remote(BFD_STATE_UP, LOCAL_DISCR4, BFD_FLAG_FINAL);
	struct bfd_packet pkt;
	uint64_t next;

	bring_up(false, true, 10 * MS);
	ck_assert(status(0).poll_active);
	ck_assert_uint_eq(bfd_next_deadline(ep.b), 10 * MS);   /* the Poll goes at once */
	bfd_run(ep.b, 10 * MS);
	pkt = last_sent(0);
	ck_assert_uint_eq(pkt.state, BFD_STATE_UP);
	ck_assert_uint_eq(pkt.flags, BFD_FLAG_POLL);
	ck_assert_uint_eq(pkt.desired_min_tx_us, INTERVAL);
	/* a shorter interval needs no Poll sequence (RFC 5880 6.8.3) */
	ck_assert_uint_eq(status(0).tx_interval_us, INTERVAL);
	feed(&fin, NULL, 11 * MS);
	ck_assert(!status(0).poll_active);
	next = bfd_next_deadline(ep.b);
	ck_assert_uint_le(next, 10 * MS + INTERVAL);
	pkt = next_sent(0);
	ck_assert_uint_eq(pkt.flags, 0);
	/* Session 1 is not Up: it sends at the slow rate. */
	ck_assert_uint_eq(status(1).desired_min_tx_us, BFD_SLOW_TX_US);
}
END_TEST

/* TX: max(our desired TX, their required RX); RX: max(ours, their TX). */
START_TEST(test_negotiated_intervals)
{
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	struct bfd_session_status st;

	bring_up(false, true, 0);
	up.required_min_rx_us = 300 * MS;
	up.desired_min_tx_us = 50 * MS;
	feed(&up, NULL, 1 * MS);
	st = status(0);
	ck_assert_uint_eq(st.tx_interval_us, 300 * MS);
	ck_assert_uint_eq(st.rx_interval_us, INTERVAL);
	ck_assert_uint_eq(st.detect_time_us, 3 * INTERVAL);
	ck_assert_uint_eq(st.remote_min_rx_us, 300 * MS);
	ck_assert_uint_eq(st.remote_min_tx_us, 50 * MS);

	up.required_min_rx_us = 20 * MS;
	up.desired_min_tx_us = 500 * MS;
	up.detect_mult = 5;
	feed(&up, NULL, 2 * MS);
	st = status(0);
	ck_assert_uint_eq(st.tx_interval_us, INTERVAL);
	ck_assert_uint_eq(st.rx_interval_us, 500 * MS);
	ck_assert_uint_eq(st.remote_detect_mult, 5);
	ck_assert_uint_eq(st.detect_time_us, 5 * 500 * MS);

	/* RemoteMinRx 0: no periodic packets at all (6.8.7). */
	up.required_min_rx_us = 0;
	feed(&up, NULL, 3 * MS);
	st = status(0);
	for (uint64_t t = 3 * MS; t < 2 * SEC; t += 10 * MS)
		bfd_run(ep.b, t);
	ck_assert_uint_eq(status(0).packets_out, st.packets_out);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
}
END_TEST

/* New intervals while Up: a Poll; longer TX and shorter RX wait for the Final. */
START_TEST(test_poll_on_interval_change)
{
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, BFD_FLAG_FINAL);
	struct bfd_packet pkt;
	struct bfd_session_status st;

	bring_up(false, true, 0);
	feed(&up, NULL, 1 * MS);                        /* the Up Poll answered */
	up.flags = 0;
	up.desired_min_tx_us = 10 * MS;
	feed(&up, NULL, 2 * MS);
	ck_assert_uint_eq(status(0).detect_time_us, 3 * INTERVAL);
	ck_assert_int_eq(bfd_set_intervals(ep.b, 3 * MS, 200 * MS, 50 * MS), 0);
	ck_assert_int_eq(bfd_set_intervals(ep.b, 3 * MS, 0, 50 * MS), -EINVAL);
	st = status(0);
	ck_assert(st.poll_active);
	ck_assert_uint_eq(st.desired_min_tx_us, 200 * MS);
	ck_assert_uint_eq(st.required_min_rx_us, 50 * MS);
	ck_assert_uint_eq(st.tx_interval_us, INTERVAL);         /* old until the Final */
	ck_assert_uint_eq(st.detect_time_us, 3 * INTERVAL);
	bfd_run(ep.b, 3 * MS);
	pkt = last_sent(0);
	ck_assert_uint_eq(pkt.flags, BFD_FLAG_POLL);
	ck_assert_uint_eq(pkt.desired_min_tx_us, 200 * MS);
	ck_assert_uint_eq(pkt.required_min_rx_us, 50 * MS);
	up.flags = BFD_FLAG_FINAL;
	feed(&up, NULL, 4 * MS);
	st = status(0);
	ck_assert(!st.poll_active);
	ck_assert_uint_eq(st.tx_interval_us, 200 * MS);
	ck_assert_uint_eq(st.detect_time_us, 3 * 50 * MS);
	/* The other session, Down: new values at once, no Poll. */
	ck_assert(!status(1).poll_active);
	ck_assert_uint_eq(status(1).required_min_rx_us, 50 * MS);
	ck_assert_uint_eq(status(1).desired_min_tx_us, BFD_SLOW_TX_US);
}
END_TEST

/* A Final before our first Poll went out answers nothing: the Poll stays. */
START_TEST(test_final_before_poll_ignored)
{
	struct bfd_packet fin = remote(BFD_STATE_UP, LOCAL_DISCR4, BFD_FLAG_FINAL);

	bring_up(false, true, 0);               /* the Poll is due, not sent */
	ck_assert(status(0).poll_active);
	feed(&fin, NULL, 0);
	ck_assert(status(0).poll_active);
	bfd_run(ep.b, 0);
	ck_assert_uint_eq(last_sent(0).flags, BFD_FLAG_POLL);
	feed(&fin, NULL, 1 * MS);
	ck_assert(!status(0).poll_active);
}
END_TEST

/* The router polls: a Final at once, without the Poll bit. */
START_TEST(test_poll_answered)
{
	struct bfd_packet poll = remote(BFD_STATE_UP, LOCAL_DISCR4, BFD_FLAG_POLL);
	struct bfd_packet pkt;
	unsigned sent;

	bring_up(false, true, 0);
	sent = ep.n_sent;
	feed(&poll, NULL, 1 * MS);
	ck_assert_uint_eq(ep.n_sent, sent + 1);
	pkt = last_sent(0);
	ck_assert_uint_eq(pkt.flags, BFD_FLAG_FINAL);
	ck_assert_uint_eq(pkt.state, BFD_STATE_UP);
}
END_TEST

/* 0..25 % less than the interval, 10..25 % with detect mult 1. */
static void
check_jitter(uint8_t mult, uint64_t least, uint64_t most)
{
	uint64_t now = 0, lo = UINT64_MAX, hi = 0;

	memset(&ep, 0, sizeof(ep));
	ep.lcg = true;
	ep.rnd = 12345;
	make_with(&ep, false, true, mult, 1);
	for (unsigned k = 0; k < 2000; k++) {
		uint64_t next = bfd_run(ep.b, now);

		ck_assert_uint_ge(next - now, least);
		ck_assert_uint_le(next - now, most);
		lo = next - now < lo ? next - now : lo;
		hi = next - now > hi ? next - now : hi;
		now = next;
	}
	/* Spread over the range, not stuck at one end. */
	ck_assert_uint_lt(lo, least + (most - least) / 10);
	ck_assert_uint_gt(hi, most - (most - least) / 10);
	teardown();
}

START_TEST(test_jitter_bounds)
{
	check_jitter(MULT, BFD_SLOW_TX_US * 3 / 4, BFD_SLOW_TX_US);
	check_jitter(1, BFD_SLOW_TX_US * 3 / 4, BFD_SLOW_TX_US * 9 / 10);
	memset(&ep, 0, sizeof(ep));
	ep.rnd = UINT32_MAX;
	make_with(&ep, false, true, MULT, 2);
	ck_assert_uint_eq(bfd_run(ep.b, 0), BFD_SLOW_TX_US - BFD_SLOW_TX_US / 4 + 1);
}
END_TEST

/* Every session's status, to compare before and after a drop. */
struct snapshot {
	struct bfd_session_status st[2];
	uint64_t drops[BFD_DROP_MAX];
	unsigned n_sent, n_changes;
};

static void
snap(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(bfd_session_status(ep.b, 0, &s->st[0]), 0);
	ck_assert_int_eq(bfd_session_status(ep.b, 1, &s->st[1]), 0);
	bfd_drops(ep.b, s->drops);
	s->n_sent = ep.n_sent;
	s->n_changes = ep.n_changes;
}

/* The bytes are dropped as reason, one counter moved, nothing else. */
static void
expect_drop_from(const uint8_t *p, size_t len, uint8_t family, const uint8_t src[16],
		 uint8_t ttl, uint16_t port, enum bfd_drop reason)
{
	struct snapshot before, after;
	enum bfd_drop why = BFD_DROP_MAX;

	snap(&before);
	ck_assert_int_eq(feed_raw(p, len, family, src, ttl, port, 77 * MS, &why), -1);
	ck_assert_msg(why == reason, "want %s, got %s", bfd_drop_names[reason],
		      why < BFD_DROP_MAX ? bfd_drop_names[why] : "?");
	snap(&after);
	before.drops[reason]++;
	ck_assert_mem_eq(&before, &after, sizeof(before));
}

static void
expect_drop(const uint8_t *p, size_t len, enum bfd_drop reason)
{
	expect_drop_from(p, len, FLOW_FAMILY_IPV4, PEER4, BFD_TTL, SOURCE_PORT, reason);
}

/* A packet built from pkt (and key), then one byte set. */
static size_t
built(uint8_t out[BFD_PACKET_MAX], struct bfd_packet pkt, const struct bfd_key *key,
      unsigned at, uint8_t value)
{
	size_t len = bfd_packet_build(out, &pkt, key);

	if (at < BFD_PACKET_MAX && at < len)
		out[at] = value;
	return len;
}

START_TEST(test_drops_plain)
{
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	uint8_t p[BFD_PACKET_MAX], big[BFD_PACKET_MAX + 8] = { 0 };
	size_t len;

	bring_up(false, true, 0);
	len = built(p, up, NULL, NO_EDIT, 0);
	expect_drop_from(p, len, FLOW_FAMILY_IPV4, PEER4, 254, SOURCE_PORT, BFD_DROP_BAD_TTL);
	expect_drop(p, BFD_HEADER_LEN - 1, BFD_DROP_TRUNCATED);
	len = built(p, up, NULL, 0, 2 << 5);
	expect_drop(p, len, BFD_DROP_BAD_VERSION);
	len = built(p, up, NULL, 3, BFD_HEADER_LEN - 1);
	expect_drop(p, len, BFD_DROP_BAD_LENGTH);
	len = built(p, up, NULL, 3, BFD_HEADER_LEN + 1);        /* past the payload */
	expect_drop(p, len, BFD_DROP_BAD_LENGTH);
	len = built(p, up, NULL, 1, BFD_STATE_UP << 6 | BFD_FLAG_AUTH);     /* A, 24 bytes */
	expect_drop(p, len, BFD_DROP_BAD_LENGTH);
	memcpy(big, p, len);                                    /* A, auth len past it */
	big[3] = 30;
	big[25] = 20;
	expect_drop(big, 30, BFD_DROP_BAD_LENGTH);
	len = built(p, up, NULL, 2, 0);
	expect_drop(p, len, BFD_DROP_BAD_DETECT_MULT);
	len = built(p, up, NULL, 1, BFD_STATE_UP << 6 | BFD_FLAG_MULTIPOINT);
	expect_drop(p, len, BFD_DROP_MULTIPOINT);
	len = built(p, up, NULL, 1, BFD_STATE_UP << 6 | BFD_FLAG_POLL | BFD_FLAG_FINAL);
	expect_drop(p, len, BFD_DROP_POLL_AND_FINAL);
	up.my_discr = 0;
	len = built(p, up, NULL, NO_EDIT, 0);
	expect_drop(p, len, BFD_DROP_BAD_MY_DISCR);
	up.my_discr = REMOTE_DISCR;
	up.your_discr = 0x9999;
	len = built(p, up, NULL, NO_EDIT, 0);
	expect_drop(p, len, BFD_DROP_UNKNOWN_YOUR_DISCR);
	up.your_discr = LOCAL_DISCR4;
	len = built(p, up, NULL, NO_EDIT, 0);
	expect_drop_from(p, len, FLOW_FAMILY_IPV6, PEER6, BFD_TTL, SOURCE_PORT,
			 BFD_DROP_WRONG_PEER);
	expect_drop_from(p, len, FLOW_FAMILY_IPV4, STRANGER4, BFD_TTL, SOURCE_PORT,
			 BFD_DROP_WRONG_PEER);
	up.your_discr = 0;
	len = built(p, up, NULL, NO_EDIT, 0);            /* your 0 in Up */
	expect_drop(p, len, BFD_DROP_BAD_YOUR_DISCR);
	/* ... before any session is looked for (RFC 5880 6.8.6) */
	expect_drop_from(p, len, FLOW_FAMILY_IPV4, STRANGER4, BFD_TTL, SOURCE_PORT,
			 BFD_DROP_BAD_YOUR_DISCR);
	up.state = BFD_STATE_INIT;
	len = built(p, up, NULL, NO_EDIT, 0);            /* ... and in Init */
	expect_drop(p, len, BFD_DROP_BAD_YOUR_DISCR);
	up.state = BFD_STATE_DOWN;
	len = built(p, up, NULL, NO_EDIT, 0);
	expect_drop_from(p, len, FLOW_FAMILY_IPV4, STRANGER4, BFD_TTL, SOURCE_PORT,
			 BFD_DROP_UNKNOWN_PEER);
	up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	len = bfd_packet_build(p, &up, &KEY);
	expect_drop(p, len, BFD_DROP_AUTH_UNEXPECTED);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	/* What is dropped only once: the counters add up to the calls. */
	{
		uint64_t drops[BFD_DROP_MAX], total = 0;

		bfd_drops(ep.b, drops);
		for (unsigned k = 0; k < BFD_DROP_MAX; k++)
			total += drops[k];
		ck_assert_uint_eq(total, 19);
	}
	/* Any source port is taken: BIRD 2 sends from an ephemeral one. */
	len = bfd_packet_build(p, &up, NULL);
	ck_assert_int_eq(feed_raw(p, len, FLOW_FAMILY_IPV4, PEER4, BFD_TTL, 45704, 78 * MS,
				  NULL), 0);
}
END_TEST

START_TEST(test_drops_auth)
{
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	struct bfd_key other = KEY;
	uint8_t p[BFD_PACKET_MAX];
	size_t len;

	bring_up(true, true, 0);
	up.auth_seq = 5;
	len = bfd_packet_build(p, &up, NULL);
	expect_drop(p, len, BFD_DROP_AUTH_MISSING);
	/* Type 4 (Keyed SHA-1, not meticulous) is not what is configured. */
	len = built(p, up, &KEY, 24, 4);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_TYPE);
	len = built(p, up, &KEY, 25, 24);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_LENGTH);
	other.id = 2;
	len = bfd_packet_build(p, &up, &other);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_KEY_ID);
	other = KEY;
	other.secret[0] ^= 1;
	len = bfd_packet_build(p, &up, &other);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_DIGEST);
	len = bfd_packet_build(p, &up, &KEY);
	p[BFD_PACKET_MAX - 1] ^= 0x80;
	expect_drop(p, len, BFD_DROP_AUTH_BAD_DIGEST);
	len = built(p, up, &KEY, 20, 1);                /* a header byte after signing */
	expect_drop(p, len, BFD_DROP_AUTH_BAD_DIGEST);
	up.auth_seq = 0;                                /* bring_up's was 0: a replay */
	len = bfd_packet_build(p, &up, &KEY);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_SEQUENCE);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
}
END_TEST

/* Meticulous: RcvAuthSeq+1 .. +3*DetectMult, circular; lapses after 2 x
 * detection time without a packet (RFC 5880 6.7.4, 6.8.1). */
START_TEST(test_meticulous_sequence)
{
	struct bfd_packet up = remote(BFD_STATE_UP, LOCAL_DISCR4, 0);
	uint8_t p[BFD_PACKET_MAX];
	size_t len;

	make(true, true);
	up.state = BFD_STATE_INIT;
	up.auth_seq = UINT32_MAX - 1;
	feed(&up, &KEY, 0);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	up.state = BFD_STATE_UP;
	len = bfd_packet_build(p, &up, &KEY);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_SEQUENCE);        /* the same again */
	up.auth_seq = 3;                                /* wraps: +5 of 9 */
	feed(&up, &KEY, 1 * MS);
	up.auth_seq = 2;                                /* backwards */
	len = bfd_packet_build(p, &up, &KEY);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_SEQUENCE);
	up.auth_seq = 3 + 3 * MULT;                     /* the last of the window */
	feed(&up, &KEY, 2 * MS);
	up.auth_seq += 3 * MULT + 1;                    /* one past */
	len = bfd_packet_build(p, &up, &KEY);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_SEQUENCE);
	/* Silence for 2 x 300 ms: any number resynchronises. */
	up.auth_seq = 7;
	len = bfd_packet_build(p, &up, &KEY);
	expect_drop(p, len, BFD_DROP_AUTH_BAD_SEQUENCE);
	ck_assert_int_eq(feed_raw(p, len, FLOW_FAMILY_IPV4, PEER4, BFD_TTL, SOURCE_PORT,
				  2 * MS + 2 * 3 * INTERVAL, NULL), 0);
}
END_TEST

/* Our packets carry a meticulous sequence: +1 each, and the key's digest. */
START_TEST(test_auth_transmit)
{
	struct bfd_packet a, b;
	unsigned k;

	memset(&ep, 0, sizeof(ep));
	ep.rnd = 41;
	make_with(&ep, true, true, MULT, 2);
	bfd_run(ep.b, 0);
	a = last_sent(1);
	k = (ep.n_sent - 1) % SENT_MAX;
	ck_assert_uint_eq(ep.sent_len[k], BFD_PACKET_MAX);
	ck_assert(a.flags & BFD_FLAG_AUTH);
	ck_assert_uint_eq(a.auth_type, BFD_AUTH_METICULOUS_SHA1);
	ck_assert_uint_eq(a.auth_len, BFD_AUTH_SHA1_LEN);
	ck_assert_uint_eq(a.auth_key_id, KEY.id);
	ck_assert_uint_eq(a.auth_seq, 41);
	bfd_run(ep.b, bfd_next_deadline(ep.b));
	b = last_sent(1);
	ck_assert_uint_eq(b.auth_seq, 42);
	{
		uint8_t again[BFD_PACKET_MAX];

		ck_assert_uint_eq(bfd_packet_build(again, &b, &KEY), BFD_PACKET_MAX);
		ck_assert_mem_eq(again, ep.sent[(ep.n_sent - 1) % SENT_MAX], BFD_PACKET_MAX);
	}
}
END_TEST

/* Not serving: Down at once with diag 6 and a Poll, held Down whatever
 * the router says; serving again: Up at once from its last state. */
START_TEST(test_serving_false)
{
	struct bfd_packet down = remote(BFD_STATE_DOWN, LOCAL_DISCR4, BFD_FLAG_FINAL);
	struct bfd_packet init = remote(BFD_STATE_INIT, LOCAL_DISCR4, 0);
	struct bfd_packet pkt;
	unsigned sent;

	bring_up(false, true, 0);
	sent = ep.n_sent;
	bfd_set_serving(ep.b, 10 * MS, false);
	ck_assert_uint_eq(ep.n_sent, sent + 2);         /* both sessions, at once */
	pkt = last_sent(1);
	ck_assert_uint_eq(pkt.state, BFD_STATE_DOWN);
	ck_assert_uint_eq(pkt.diag, BFD_DIAG_CONCAT_PATH_DOWN);
	ck_assert_uint_eq(pkt.flags, 0);                /* session 1: remote unknown */
	ck_assert_uint_eq(ep.sent_to[(ep.n_sent - 2) % SENT_MAX], 0);
	ck_assert(ep.sent[(ep.n_sent - 2) % SENT_MAX][1] & BFD_FLAG_POLL);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.changes[1].state, BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.changes[1].diag, BFD_DIAG_CONCAT_PATH_DOWN);
	ck_assert(!status(0).serving);
	/* The router goes Down (Final: it heard), then Init: we stay Down. */
	feed(&down, NULL, 11 * MS);
	ck_assert(!status(0).poll_active);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	feed(&init, NULL, 12 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	bfd_set_serving(ep.b, 13 * MS, false);          /* idempotent */
	/* Serving again: the router said Init last, so Up at once. */
	bfd_set_serving(ep.b, 20 * MS, true);
	ck_assert_uint_eq(state(0), BFD_STATE_UP);
	ck_assert_uint_eq(state(1), BFD_STATE_DOWN);
	ck_assert_uint_eq(status(1).local_diag, BFD_DIAG_NONE);
	pkt = last_sent(1);
	ck_assert_uint_eq(pkt.diag, BFD_DIAG_NONE);
	pkt = last_sent(0);
	ck_assert_uint_eq(pkt.state, BFD_STATE_UP);
	ck_assert_uint_eq(pkt.flags, BFD_FLAG_POLL);
}
END_TEST

/* Created not serving: never leaves Down, says why. */
START_TEST(test_serving_false_from_start)
{
	struct bfd_packet down = remote(BFD_STATE_DOWN, 0, 0);

	make(false, false);
	bfd_run(ep.b, 0);
	ck_assert_uint_eq(last_sent(1).diag, BFD_DIAG_CONCAT_PATH_DOWN);
	feed(&down, NULL, 1 * MS);
	ck_assert_uint_eq(state(0), BFD_STATE_DOWN);
	ck_assert_uint_eq(ep.n_changes, 0);
	bfd_set_serving(ep.b, 2 * MS, true);
	ck_assert_uint_eq(state(0), BFD_STATE_INIT);
}
END_TEST

/* Two sets of sessions, each the other's peer, over a queue. */
static struct endpoint left, right;

static void
pair_make(bool auth_left, bool auth_right, const struct bfd_key *right_key)
{
	struct bfd_peer to_right = { .family = FLOW_FAMILY_IPV4, .addr = { 198, 18, 0, 2 },
				     .local_discr = 7 };
	struct bfd_peer to_left = { .family = FLOW_FAMILY_IPV4, .addr = { 198, 18, 0, 1 },
				    .local_discr = 9 };
	struct bfd_params p = {
		.n_peers = 1, .desired_min_tx_us = INTERVAL, .required_min_rx_us = INTERVAL,
		.detect_mult = MULT, .key = KEY, .serving = true,
	};

	memset(&left, 0, sizeof(left));
	memset(&right, 0, sizeof(right));
	memset(&queue, 0, sizeof(queue));
	left.family = right.family = FLOW_FAMILY_IPV4;
	memcpy(left.addr, to_left.addr, 16);
	memcpy(right.addr, to_right.addr, 16);
	left.lcg = right.lcg = true;
	left.rnd = 1;
	right.rnd = 2;
	left.wire = &right;
	right.wire = &left;
	p.peers = &to_right;
	p.auth = auth_left;
	left.b = bfd_create(&p, &OPS, &left, 0);
	p.peers = &to_left;
	p.auth = auth_right;
	p.key = *right_key;
	right.b = bfd_create(&p, &OPS, &right, 0);
	ck_assert_ptr_nonnull(left.b);
	ck_assert_ptr_nonnull(right.b);
}

/* Deliver what is queued (answers queue more, delivered too). */
static void
pump(uint64_t now)
{
	for (unsigned k = 0; k < queue.n; k++) {
		struct bfd_rx rx = {
			.payload = queue.data[k], .len = (uint32_t)queue.len[k], .ttl = BFD_TTL,
			.source_port = SOURCE_PORT, .family = queue.from[k]->family,
		};

		memcpy(rx.source, queue.from[k]->addr, 16);
		bfd_input(queue.to[k]->b, now, &rx, NULL);
	}
	queue.n = 0;
}

/* Run both ends in 1 ms steps until until_us. */
static void
pair_run(uint64_t from_us, uint64_t until_us)
{
	for (uint64_t t = from_us; t <= until_us; t += MS) {
		bfd_run(left.b, t);
		bfd_run(right.b, t);
		pump(t);
	}
}

static uint8_t
pair_state(const struct endpoint *e)
{
	struct bfd_session_status st;

	ck_assert_int_eq(bfd_session_status(e->b, 0, &st), 0);
	return st.state;
}

static void
pair_free(void)
{
	bfd_destroy(left.b);
	bfd_destroy(right.b);
}

START_TEST(test_pair_up_plain_and_auth)
{
	for (int auth = 0; auth < 2; auth++) {
		struct bfd_session_status st;
		uint64_t drops[BFD_DROP_MAX];

		pair_make(auth, auth, &KEY);
		pair_run(0, 3 * SEC);
		ck_assert_uint_eq(pair_state(&left), BFD_STATE_UP);
		ck_assert_uint_eq(pair_state(&right), BFD_STATE_UP);
		ck_assert_int_eq(bfd_session_status(left.b, 0, &st), 0);
		ck_assert_uint_eq(st.tx_interval_us, INTERVAL);
		ck_assert(!st.poll_active);
		ck_assert_uint_gt(st.state_since_us, 0);
		bfd_drops(right.b, drops);
		for (unsigned k = 0; k < BFD_DROP_MAX; k++)
			ck_assert_uint_eq(drops[k], 0);
		/* The left stops serving: the right goes Down at once, diag 3. */
		bfd_set_serving(left.b, 3 * SEC + 1, false);
		pump(3 * SEC + 1);
		ck_assert_uint_eq(pair_state(&right), BFD_STATE_DOWN);
		pair_run(3 * SEC + MS, 6 * SEC);
		ck_assert_uint_eq(pair_state(&left), BFD_STATE_DOWN);
		ck_assert_uint_ne(pair_state(&right), BFD_STATE_UP);
		bfd_set_serving(left.b, 6 * SEC + 1, true);
		pair_run(6 * SEC + MS, 8 * SEC);
		ck_assert_uint_eq(pair_state(&left), BFD_STATE_UP);
		ck_assert_uint_eq(pair_state(&right), BFD_STATE_UP);
		pair_free();
	}
}
END_TEST

START_TEST(test_pair_wrong_key)
{
	struct bfd_key wrong = KEY;
	uint64_t drops[BFD_DROP_MAX];

	wrong.secret[5] = 'T';
	pair_make(true, true, &wrong);
	pair_run(0, 5 * SEC);
	ck_assert_uint_eq(pair_state(&left), BFD_STATE_DOWN);
	ck_assert_uint_eq(pair_state(&right), BFD_STATE_DOWN);
	bfd_drops(right.b, drops);
	ck_assert_uint_gt(drops[BFD_DROP_AUTH_BAD_DIGEST], 0);
	pair_free();
	pair_make(true, false, &KEY);
	pair_run(0, 3 * SEC);
	bfd_drops(right.b, drops);
	ck_assert_uint_gt(drops[BFD_DROP_AUTH_UNEXPECTED], 0);
	ck_assert_uint_eq(pair_state(&right), BFD_STATE_DOWN);
	pair_free();
}
END_TEST

START_TEST(test_parse_build_roundtrip)
{
	struct bfd_packet in = {
		.diag = 31, .state = BFD_STATE_INIT, .flags = BFD_FLAG_POLL | BFD_FLAG_CPI |
		BFD_FLAG_DEMAND, .detect_mult = 255, .my_discr = 0xffffffffu,
		.your_discr = 1, .desired_min_tx_us = 0xfffffffeu, .required_min_rx_us = 7,
		.required_min_echo_rx_us = 9,
	}, out;
	uint8_t p[BFD_PACKET_MAX];
	enum bfd_drop why;

	ck_assert_uint_eq(bfd_packet_build(p, &in, NULL), BFD_HEADER_LEN);
	ck_assert(bfd_packet_parse(p, BFD_HEADER_LEN, &out, &why));
	ck_assert_uint_eq(out.version, 1);
	ck_assert_uint_eq(out.length, BFD_HEADER_LEN);
	in.version = 1;
	in.length = BFD_HEADER_LEN;
	ck_assert_mem_eq(&in, &out, sizeof(in));
	/* Trailing bytes past Length are the UDP payload's, not the packet's. */
	ck_assert(bfd_packet_parse(p, BFD_PACKET_MAX, &out, &why));
	ck_assert_uint_eq(out.length, BFD_HEADER_LEN);
}
END_TEST

static Suite *
bfd_suite(void)
{
	Suite *s = suite_create("bfd");
	TCase *states = tcase_create("states");
	TCase *timers = tcase_create("timers");
	TCase *packets = tcase_create("packets");
	TCase *serving = tcase_create("serving");

	tcase_add_checked_fixture(states, NULL, teardown);
	tcase_add_test(states, test_create_refuses);
	tcase_add_test(states, test_first_packets);
	tcase_add_test(states, test_down_to_init);
	tcase_add_test(states, test_down_to_up);
	tcase_add_test(states, test_init_to_up);
	tcase_add_test(states, test_up_to_down_neighbor);
	tcase_add_test(states, test_detection_timeout);
	tcase_add_test(states, test_remote_admin_down);
	tcase_add_test(states, test_local_admin_down);
	suite_add_tcase(s, states);

	tcase_add_checked_fixture(timers, NULL, teardown);
	tcase_add_test(timers, test_slow_start_then_poll);
	tcase_add_test(timers, test_negotiated_intervals);
	tcase_add_test(timers, test_poll_on_interval_change);
	tcase_add_test(timers, test_final_before_poll_ignored);
	tcase_add_test(timers, test_poll_answered);
	tcase_add_test(timers, test_jitter_bounds);
	suite_add_tcase(s, timers);

	tcase_add_checked_fixture(packets, NULL, teardown);
	tcase_add_test(packets, test_parse_build_roundtrip);
	tcase_add_test(packets, test_drops_plain);
	tcase_add_test(packets, test_drops_auth);
	tcase_add_test(packets, test_meticulous_sequence);
	tcase_add_test(packets, test_auth_transmit);
	suite_add_tcase(s, packets);

	tcase_add_checked_fixture(serving, NULL, teardown);
	tcase_add_test(serving, test_serving_false);
	tcase_add_test(serving, test_serving_false_from_start);
	tcase_add_test(serving, test_pair_up_plain_and_auth);
	tcase_add_test(serving, test_pair_wrong_key);
	suite_add_tcase(s, serving);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(bfd_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
