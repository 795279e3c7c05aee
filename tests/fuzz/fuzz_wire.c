/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the bytes a peer (over CPG) or a local IPC client sends,
 * through both decoders, wire_sync_decode() and wire_ctl_decode().
 *
 * Besides "no crash, no leak, no sanitizer report", it checks the decoders'
 * contract: a refusal bumps exactly one drop counter, a success none; what
 * decodes encodes again, and that encoding is a fixed point (decoding and
 * encoding it once more gives the same bytes), so what a node relays is what
 * it understood.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

enum { ENTRIES_MAX = 1024 };

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static uint64_t
drops(const struct wire_counters *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < WIRE_DROP_MAX; i++)
		n += c->drops[i];
	return n;
}

/* Encode m with wire_KIND_encode() into a new buffer buf of len bytes,
 * exactly the size wire_KIND_encoded_size() announced. */
#define ENCODE(kind, m, buf, len) do {						\
	size_t need_ = wire_##kind##_encoded_size(m);				\
										\
	(buf) = malloc(need_ + 1);						\
	CHECK(need_ > 0 && (buf) != NULL);					\
	CHECK(wire_##kind##_encode(m, buf, need_, &(len)) == 0 && (len) == need_); \
} while (0)

static void
sync_round_trip(const uint8_t *data, size_t size)
{
	static struct wire_flow e1[ENTRIES_MAX], e2[ENTRIES_MAX];
	struct wire_sync_msg m1, m2;
	struct wire_counters c = { { 0 } };
	uint8_t *b1, *b2;
	size_t l1, l2;
	int rc = wire_sync_decode(data, size, &m1, e1, ENTRIES_MAX, &c);

	CHECK(drops(&c) == (rc == 0 ? 0u : 1u));
	if (rc != 0)
		return;
	CHECK(m1.count <= ENTRIES_MAX);
	ENCODE(sync, &m1, b1, l1);
	CHECK(wire_sync_decode(b1, l1, &m2, e2, ENTRIES_MAX, &c) == 0);
	ENCODE(sync, &m2, b2, l2);
	CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
	free(b1);
	free(b2);
}

static void
ctl_round_trip(const uint8_t *data, size_t size)
{
	struct wire_ctl_msg m1, m2;
	struct wire_counters c = { { 0 } };
	uint8_t *b1, *b2;
	size_t l1, l2;
	int rc = wire_ctl_decode(data, size, &m1, &c);

	CHECK(drops(&c) == (rc == 0 ? 0u : 1u));
	if (rc != 0)
		return;
	ENCODE(ctl, &m1, b1, l1);
	CHECK(wire_ctl_decode(b1, l1, &m2, &c) == 0);
	ENCODE(ctl, &m2, b2, l2);
	CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
	wire_ctl_msg_free(&m1);
	wire_ctl_msg_free(&m2);
	free(b1);
	free(b2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: a read past it is a report. */
	uint8_t *buf = malloc(size + (size == 0));

	CHECK(buf != NULL);
	if (size > 0)
		memcpy(buf, data, size);
	sync_round_trip(buf, size);
	ctl_round_trip(buf, size);
	free(buf);
	return 0;
}
