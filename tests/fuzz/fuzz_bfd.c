/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: BFD sessions (dataplane/core/bfd.h) fed what a router,
 * a spoofer and the control thread can do, as records:
 *
 *   op a b len payload[len]
 *
 *   op % 8 0..3  a packet: the payload, to the sessions without auth
 *                (a bit 0 clear) or with (set); a bit 1: TTL 255, else
 *                b; a bit 2: source port 49152 + b, else b; a bits 3-4:
 *                from peer 0 (IPv4), 1 (IPv6), a stranger, or peer 0's
 *                address as IPv6; a bit 5: your discriminator set to the
 *                session's; a bit 6: signed with the key as a router
 *                would (a bit 7: and its length set to 52); time moves
 *                on b x 100 us first
 *          4     time moves on (a << 8 | b) x 100 us; both sets run
 *          5, 6  serving (a bit 0), admin down (a bit 1), on set b & 1
 *          7     new intervals: (a + 1) ms TX, (b + 1) ms RX
 *
 * so that libFuzzer gets past the digest and the discriminators to the
 * state machine. Checks, besides "no crash, no sanitizer report": a
 * dropped packet changes no session and moves exactly one drop counter, a
 * taken one none; a state is one of the four; Init and Up know their
 * remote; a set not serving has no session Init or Up; intervals are
 * never 0; every packet sent parses, never has P and F, carries the auth
 * section exactly when the set has a key; bfd_run()'s deadline is later
 * than now.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/core/bfd.h"
#include "dataplane/core/flow_key.h"
#include "lib/sha1.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

enum {
	SETS = 2,
	PEERS = 2,
	RECORD_HEADER = 4,
	TIME_UNIT_US = 100,
	MS_US = 1000,
	SIGNED_LEN = BFD_PACKET_MAX,
	PAYLOAD_MAX = 255,
};

static const struct bfd_key KEY = { .id = 1, .len = 6, .secret = "secret" };
static const uint8_t PEER4[16] = { 198, 18, 0, 1 };
static const uint8_t PEER6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t STRANGER4[16] = { 198, 18, 0, 99 };

static struct bfd *sets[SETS];
static bool set_auth[SETS] = { false, true };
static uint32_t rnd;

static void
op_send(void *arg, uint32_t i, const uint8_t *payload, size_t len)
{
	bool auth = *(const bool *)arg;
	struct bfd_packet pkt;
	enum bfd_drop why;

	CHECK(i < PEERS);
	CHECK(bfd_packet_parse(payload, (uint32_t)len, &pkt, &why));
	CHECK((pkt.flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) !=
	      (BFD_FLAG_POLL | BFD_FLAG_FINAL));
	CHECK(((pkt.flags & BFD_FLAG_AUTH) != 0) == auth);
	CHECK(len == (auth ? BFD_PACKET_MAX : BFD_HEADER_LEN));
	CHECK(pkt.state < BFD_STATE_MAX && pkt.my_discr != 0);
}

static uint32_t
op_random(void *arg)
{
	(void)arg;
	rnd = rnd * 1664525u + 1013904223u;
	return rnd;
}

static const struct bfd_ops OPS = { .send = op_send, .random = op_random };

static struct bfd *
make(unsigned k)
{
	struct bfd_peer peers[PEERS] = {
		{ .family = FLOW_FAMILY_IPV4, .local_discr = 2 * k + 1 },
		{ .family = FLOW_FAMILY_IPV6, .local_discr = 2 * k + 2 },
	};
	struct bfd_params p = {
		.n_peers = PEERS, .peers = peers, .desired_min_tx_us = 100 * MS_US,
		.required_min_rx_us = 100 * MS_US, .detect_mult = 3, .auth = set_auth[k],
		.key = KEY, .serving = true,
	};
	struct bfd *b;

	memcpy(peers[0].addr, PEER4, 16);
	memcpy(peers[1].addr, PEER6, 16);
	b = bfd_create(&p, &OPS, &set_auth[k], 0);
	CHECK(b != NULL);
	return b;
}

/* Every session of b is in a state that can be. */
static void
check_sessions(const struct bfd *b)
{
	for (uint32_t i = 0; i < bfd_sessions(b); i++) {
		struct bfd_session_status st;

		CHECK(bfd_session_status(b, i, &st) == 0);
		CHECK(st.state < BFD_STATE_MAX && st.remote_state < BFD_STATE_MAX);
		CHECK(st.local_diag < BFD_DIAG_MAX && st.remote_diag <= 31);
		CHECK(st.desired_min_tx_us > 0 && st.required_min_rx_us > 0);
		CHECK(st.tx_interval_us > 0 && st.rx_interval_us > 0);
		if (st.state == BFD_STATE_INIT || st.state == BFD_STATE_UP)
			CHECK(st.remote_discr != 0 && st.remote_detect_mult != 0 && st.serving);
	}
	CHECK(bfd_session_status(b, bfd_sessions(b), &(struct bfd_session_status){ 0 }) < 0);
}

/* As a router with the key signs its packet (RFC 5880 6.7.4). */
static void
sign(uint8_t *p, uint32_t len, bool set_length)
{
	uint8_t buf[PAYLOAD_MAX];

	if (len < SIGNED_LEN)
		return;
	p[1] |= BFD_FLAG_AUTH;
	if (set_length)
		p[3] = SIGNED_LEN;
	if (p[3] < SIGNED_LEN || p[3] > len)
		return;
	p[24] = BFD_AUTH_METICULOUS_SHA1;
	p[25] = BFD_AUTH_SHA1_LEN;
	p[26] = KEY.id;
	memcpy(buf, p, p[3]);
	memset(buf + 32, 0, SHA1_DIGEST_LEN);
	memcpy(buf + 32, KEY.secret, KEY.len);
	sha1(buf, p[3], p + 32);
}

static void
packet(uint64_t now, uint8_t a, uint8_t b, const uint8_t *data, uint32_t len)
{
	struct bfd *set = sets[a & 1];
	unsigned from = (a >> 3) & 3;
	struct bfd_session_status before[PEERS], after[PEERS];
	uint64_t drops_before[BFD_DROP_MAX], drops_after[BFD_DROP_MAX];
	struct bfd_rx rx = {
		.ttl = a & 2 ? BFD_TTL : b,
		.source_port = (uint16_t)(a & 4 ? BFD_SOURCE_PORT_MIN + b : b),
		.family = from == 1 || from == 3 ? FLOW_FAMILY_IPV6 : FLOW_FAMILY_IPV4,
	};
	enum bfd_drop why = BFD_DROP_MAX;
	uint8_t *p = malloc(len > 0 ? len : 1);
	int rc;

	CHECK(p != NULL);
	memcpy(p, data, len);
	memcpy(rx.source, from == 1 ? PEER6 : from == 2 ? STRANGER4 : PEER4, 16);
	if ((a & 0x20) && len >= BFD_HEADER_LEN) {
		uint32_t discr = 2 * (a & 1) + (from == 1 ? 2 : 1);

		p[8] = (uint8_t)(discr >> 24);
		p[9] = (uint8_t)(discr >> 16);
		p[10] = (uint8_t)(discr >> 8);
		p[11] = (uint8_t)discr;
	}
	if (a & 0x40)
		sign(p, len, (a & 0x80) != 0);
	rx.payload = p;
	rx.len = len;
	for (uint32_t i = 0; i < PEERS; i++)
		CHECK(bfd_session_status(set, i, &before[i]) == 0);
	bfd_drops(set, drops_before);
	rc = bfd_input(set, now, &rx, &why);
	for (uint32_t i = 0; i < PEERS; i++)
		CHECK(bfd_session_status(set, i, &after[i]) == 0);
	bfd_drops(set, drops_after);
	if (rc < 0) {
		CHECK(why < BFD_DROP_MAX);
		drops_before[why]++;
		CHECK(memcmp(before, after, sizeof(before)) == 0);
	} else {
		CHECK(rc < PEERS);
		CHECK(memcmp(rx.source, rc == 0 ? PEER4 : PEER6, 16) == 0);
		CHECK(after[rc].packets_in == before[rc].packets_in + 1);
	}
	CHECK(memcmp(drops_before, drops_after, sizeof(drops_before)) == 0);
	free(p);
}

static void
run_all(uint64_t now)
{
	for (unsigned k = 0; k < SETS; k++)
		CHECK(bfd_run(sets[k], now) > now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t now = 0;
	size_t off = 0;

	rnd = 1;
	for (unsigned k = 0; k < SETS; k++)
		sets[k] = make(k);
	while (off + RECORD_HEADER <= size) {
		uint8_t op = data[off], a = data[off + 1], b = data[off + 2];
		uint32_t len = data[off + 3];

		off += RECORD_HEADER;
		if (len > size - off)
			len = (uint32_t)(size - off);
		switch (op % 8) {
		case 4:
			now += (uint64_t)(a << 8 | b) * TIME_UNIT_US;
			run_all(now);
			break;
		case 5:
			bfd_set_serving(sets[b & 1], now, (a & 1) != 0);
			break;
		case 6:
			bfd_set_admin_down(sets[b & 1], now, (a & 2) != 0);
			break;
		case 7:
			for (unsigned k = 0; k < SETS; k++)
				CHECK(bfd_set_intervals(sets[k], now, (a + 1u) * MS_US,
							(b + 1u) * MS_US) == 0);
			break;
		default:
			now += (uint64_t)b * TIME_UNIT_US;
			packet(now, a, b, data + off, len);
			off += len;
			break;
		}
		for (unsigned k = 0; k < SETS; k++)
			check_sessions(sets[k]);
	}
	for (unsigned k = 0; k < SETS; k++) {
		bfd_destroy(sets[k]);
		sets[k] = NULL;
	}
	return 0;
}
