/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto/wire: round trips of every sync and control kind, sizes, and the
 * decoders against truncated, unknown-kind, wrong-version and garbage
 * input, asserting the drop counter that moved.
 *
 * Malformed input is built by hand with a tiny protobuf writer (pbw_*),
 * independent of protobuf-c, so these tests also pin the schema's field
 * numbers: a message written from sync.proto's numbers must decode.
 */
#include "proto/wire.h"
#include "config/config.h"
#include "lib/ipc.h"

#include <assert.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state;

static void
rng_seed(uint64_t seed)
{
	rng_state = seed != 0 ? seed : 1;
}

static uint64_t
rng_next(void)
{
	/* xorshift64*: fixed seeds, same sequence everywhere */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t
rng_below(uint32_t n)
{
	return (uint32_t)(rng_next() % n);
}

static void
addr_fill(uint8_t family, uint8_t addr[WIRE_ADDR_MAX])
{
	size_t len = family == AF_INET ? 4 : 16;

	memset(addr, 0, WIRE_ADDR_MAX);
	for (size_t i = 0; i < len; i++)
		addr[i] = (uint8_t)rng_next();
}

static void
flow_random(struct wire_flow *f, uint8_t family,
	    uint8_t backend_family)
{
	memset(f, 0, sizeof(*f));
	f->family = family;
	f->proto = rng_below(2) ? IPPROTO_TCP : IPPROTO_UDP;
	f->vip_port = (uint16_t)rng_next();
	f->client_port = (uint16_t)rng_next();
	f->backend_family = backend_family;
	f->lifetime_ms = rng_below(3600 * 1000);
	f->flags = (uint32_t)rng_next() & WIRE_FLOW_FLAGS_ALL;
	addr_fill(family, f->vip);
	addr_fill(family, f->client);
	addr_fill(backend_family, f->backend);
}

/* 198.18.0.10:443 <- 198.18.1.20:51000, backend 198.19.0.5 */
static void
flow_v4(struct wire_flow *f)
{
	static const uint8_t vip[4] = { 198, 18, 0, 10 };
	static const uint8_t client[4] = { 198, 18, 1, 20 };
	static const uint8_t backend[4] = { 198, 19, 0, 5 };

	memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->proto = IPPROTO_TCP;
	f->vip_port = 443;
	f->client_port = 51000;
	f->backend_family = AF_INET;
	f->lifetime_ms = 300000;
	f->flags = WIRE_FLOW_ESTABLISHED;
	memcpy(f->vip, vip, 4);
	memcpy(f->client, client, 4);
	memcpy(f->backend, backend, 4);
}

/* The same in 2001:db8::/32. */
static void
flow_v6(struct wire_flow *f)
{
	flow_v4(f);
	f->family = f->backend_family = AF_INET6;
	memset(f->vip, 0, WIRE_ADDR_MAX);
	memset(f->client, 0, WIRE_ADDR_MAX);
	memset(f->backend, 0, WIRE_ADDR_MAX);
	f->vip[0] = f->client[0] = f->backend[0] = 0x20;
	f->vip[1] = f->client[1] = f->backend[1] = 0x01;
	f->vip[2] = f->client[2] = f->backend[2] = 0x0d;
	f->vip[3] = f->client[3] = f->backend[3] = 0xb8;
	f->vip[15] = 10;
	f->client[15] = 20;
	f->backend[14] = 1;
	f->backend[15] = 5;
}

/* Every field at its largest: the worst case for sizes. */
static void
flow_max(struct wire_flow *f, uint8_t family, uint8_t backend_family)
{
	flow_v6(f);
	f->family = family;
	f->backend_family = backend_family;
	f->proto = IPPROTO_UDP;
	f->vip_port = f->client_port = UINT16_MAX;
	f->lifetime_ms = UINT32_MAX;
	f->flags = WIRE_FLOW_FLAGS_ALL;
	f->origin = UINT32_MAX;
	if (family == AF_INET) {
		memset(f->vip + 4, 0, 12);
		memset(f->client + 4, 0, 12);
	}
	if (backend_family == AF_INET)
		memset(f->backend + 4, 0, 12);
}

static void
flow_assert_eq(const struct wire_flow *a, const struct wire_flow *b)
{
	ck_assert_uint_eq(a->family, b->family);
	ck_assert_uint_eq(a->proto, b->proto);
	ck_assert_uint_eq(a->vip_port, b->vip_port);
	ck_assert_uint_eq(a->client_port, b->client_port);
	ck_assert_uint_eq(a->backend_family, b->backend_family);
	ck_assert_uint_eq(a->lifetime_ms, b->lifetime_ms);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_uint_eq(a->origin, b->origin);
	ck_assert_mem_eq(a->vip, b->vip, WIRE_ADDR_MAX);
	ck_assert_mem_eq(a->client, b->client, WIRE_ADDR_MAX);
	ck_assert_mem_eq(a->backend, b->backend, WIRE_ADDR_MAX);
}

static uint64_t
drops_total(const struct wire_counters *c)
{
	uint64_t n = 0;

	for (int i = 0; i < WIRE_DROP_MAX; i++)
		n += c->drops[i];
	return n;
}

/* Exactly one counter moved, by one, and it is why. */
static void
assert_one_drop(const struct wire_counters *c, enum wire_drop why)
{
	ck_assert_msg(c->drops[why] == 1, "drop %s not counted",
		      wire_drop_names[why]);
	ck_assert_uint_eq(drops_total(c), 1);
}

/* ------------------------------------------- a tiny protobuf writer */

struct pbw {
	uint8_t buf[8192];
	size_t len;
};

static void
pbw_varint(struct pbw *w, uint64_t v)
{
	do {
		ck_assert_uint_lt(w->len, sizeof(w->buf));
		w->buf[w->len++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
}

static void
pbw_uint(struct pbw *w, unsigned int field, uint64_t v)
{
	pbw_varint(w, (uint64_t)field << 3 | 0);
	pbw_varint(w, v);
}

static void
pbw_bytes(struct pbw *w, unsigned int field, const void *p,
	  size_t n)
{
	pbw_varint(w, (uint64_t)field << 3 | 2);
	pbw_varint(w, n);
	ck_assert_uint_le(w->len + n, sizeof(w->buf));
	if (n > 0)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void
pbw_message(struct pbw *w, unsigned int field, const struct pbw *m)
{
	pbw_bytes(w, field, m->buf, m->len);
}

static void
pbw_fixed64(struct pbw *w, unsigned int field, uint64_t v)
{
	pbw_varint(w, (uint64_t)field << 3 | 1);
	ck_assert_uint_le(w->len + 8, sizeof(w->buf));
	for (int i = 0; i < 8; i++)
		w->buf[w->len++] = (uint8_t)(v >> (8 * i));
}

/*
 * An entry by sync.proto's field numbers, with lengths and values to
 * taste: as a version 1 Flow message, or as one row of version 2's
 * Entries columns (families from the lengths, or family_bits if set).
 */
struct raw_flow {
	size_t vip_len, client_len, backend_len;
	uint64_t vip_port, client_port, proto, lifetime_ms, flags;
	int family_bits;            /* > 0: Entries.families' byte, as is */
};

static const struct raw_flow raw_flow_ok = {
	.vip_len = 4, .client_len = 4, .backend_len = 4,
	.vip_port = 80, .client_port = 40000, .proto = IPPROTO_TCP,
	.lifetime_ms = 1000, .flags = WIRE_FLOW_ESTABLISHED,
};

/* A version 1 Flow message: how entries travelled before columns. */
static void
pbw_flow(struct pbw *w, unsigned int field, const struct raw_flow *f)
{
	static const uint8_t addr[32] = { 198, 18, 0, 1, 0, 0, 0, 0,
					  0, 0, 0, 0, 0, 0, 0, 0, 0, 9 };
	struct pbw m = { .len = 0 };

	pbw_bytes(&m, 1, addr, f->vip_len);
	pbw_uint(&m, 2, f->vip_port);
	pbw_uint(&m, 3, f->proto);
	pbw_bytes(&m, 4, addr, f->client_len);
	pbw_uint(&m, 5, f->client_port);
	if (f->backend_len > 0)
		pbw_bytes(&m, 6, addr, f->backend_len);
	pbw_uint(&m, 7, f->lifetime_ms);
	pbw_uint(&m, 8, f->flags);
	pbw_message(w, field, &m);
}

/* A packed repeated varint field of n values. */
static void
pbw_packed(struct pbw *w, unsigned int field, const uint64_t *v, size_t n)
{
	struct pbw m = { .len = 0 };

	for (size_t i = 0; i < n; i++)
		pbw_varint(&m, v[i]);
	pbw_bytes(w, field, m.buf, m.len);
}

enum { RAW_MAX = 8 };

/* An Entries message of f[0..n) claiming count entries, as sync.proto's columns. */
static void
pbw_entries(struct pbw *w, unsigned int field, const struct raw_flow *f, size_t n,
	    uint64_t count)
{
	static const uint8_t addr[16] = { 198, 18, 0, 1, 0, 0, 0, 0,
					  0, 0, 0, 0, 0, 0, 0, 9 };
	uint8_t fam[RAW_MAX], vips[RAW_MAX * 32], clients[RAW_MAX * 32];
	uint8_t backends[RAW_MAX * 32], ports[RAW_MAX * 2];
	uint64_t vp[RAW_MAX], pr[RAW_MAX], lt[RAW_MAX], fl[RAW_MAX];
	size_t nv = 0, nc = 0, nb = 0;
	struct pbw m = { .len = 0 };

	ck_assert_uint_le(n, RAW_MAX);
	for (size_t i = 0; i < n; i++) {
		fam[i] = (uint8_t)(f[i].family_bits > 0 ? f[i].family_bits :
				   (f[i].vip_len == 16 ? 1 : 0) | (f[i].backend_len == 16 ? 2 : 0));
		memcpy(vips + nv, addr, f[i].vip_len);
		memcpy(clients + nc, addr, f[i].client_len);
		memcpy(backends + nb, addr, f[i].backend_len);
		nv += f[i].vip_len;
		nc += f[i].client_len;
		nb += f[i].backend_len;
		ports[2 * i] = (uint8_t)(f[i].client_port >> 8);
		ports[2 * i + 1] = (uint8_t)f[i].client_port;
		vp[i] = f[i].vip_port;
		pr[i] = f[i].proto;
		lt[i] = f[i].lifetime_ms;
		fl[i] = f[i].flags;
	}
	pbw_uint(&m, 1, count);
	pbw_bytes(&m, 2, fam, n);
	pbw_bytes(&m, 3, vips, nv);
	pbw_packed(&m, 4, vp, n);
	pbw_packed(&m, 5, pr, n);
	pbw_bytes(&m, 6, clients, nc);
	pbw_bytes(&m, 7, ports, 2 * n);
	pbw_bytes(&m, 8, backends, nb);
	pbw_packed(&m, 9, lt, n);
	pbw_packed(&m, 10, fl, n);
	pbw_message(w, field, &m);
}

enum {
	SYNC_BATCH_ENTRIES = 3,     /* Batch.entries */
	SYNC_BODY_NEW = 4,          /* Envelope field numbers in sync.proto */
	SYNC_BODY_RESYNC_BEGIN = 8,
	SYNC_BODY_RESYNC_END = 10,
	SYNC_BODY_DIGEST = 12,
	SYNC_BODY_NODE_STATE = 13,
	SYNC_BODY_HEALTH = 14,
	SYNC_BODY_UNKNOWN = 15,
};

/* An Envelope (version, sender, seq 7) with one body. */
static void
pbw_sync(struct pbw *w, uint64_t version, uint64_t sender,
	 unsigned int body_field, const struct pbw *body)
{
	w->len = 0;
	pbw_uint(w, 1, version);
	pbw_uint(w, 2, sender);
	pbw_uint(w, 3, 7);
	if (body != NULL)
		pbw_message(w, body_field, body);
}

/* A NEW batch of one raw entry from node 1. */
static void
pbw_sync_new(struct pbw *w, const struct raw_flow *f)
{
	struct pbw batch = { .len = 0 };

	pbw_entries(&batch, SYNC_BATCH_ENTRIES, f, 1, 1);
	pbw_sync(w, WIRE_SYNC_VERSION, 1, SYNC_BODY_NEW, &batch);
}

/*
 * Decode w and expect a drop for why, with m and entries untouched and
 * exactly one counter moved.
 */
static void
sync_expect_drop(const struct pbw *w, enum wire_drop why, int err)
{
	struct wire_flow entries[4], entries_before[4];
	struct wire_sync_msg m, m_before;
	struct wire_counters c = { { 0 } };

	memset(&m, 0xa5, sizeof(m));
	memset(entries, 0xa5, sizeof(entries));
	memcpy(&m_before, &m, sizeof(m));
	memcpy(entries_before, entries, sizeof(entries));
	ck_assert_int_eq(wire_sync_decode(w->buf, w->len, &m, entries, 4, &c), err);
	assert_one_drop(&c, why);
	ck_assert_mem_eq(&m, &m_before, sizeof(m));
	ck_assert_mem_eq(entries, entries_before, sizeof(entries));
}

/* ------------------------------------------------------- sync: kinds */

/* What a HEALTH entry carries of a flow: the VIP's key and the backend. */
static void
backend_ref_of(struct wire_flow *f)
{
	memset(f->client, 0, WIRE_ADDR_MAX);
	f->client_port = 0;
	f->lifetime_ms = f->origin = 0;
	f->flags = 0;
}

static void
node_state_assert_eq(const struct wire_node_state *a,
		     const struct wire_node_state *b)
{
	ck_assert_uint_eq(a->priority, b->priority);
	ck_assert_int_eq(a->dataplane, b->dataplane);
	ck_assert_int_eq(a->synced, b->synced);
	ck_assert_int_eq(a->quorate, b->quorate);
	ck_assert_int_eq(a->standby, b->standby);
	ck_assert_int_eq(a->preempt, b->preempt);
	ck_assert_int_eq(a->role, b->role);
	ck_assert_int_eq(a->mode, b->mode);
	ck_assert_uint_eq(a->incarnation, b->incarnation);
}

#define BATCH_MAX 512

static struct wire_flow src[BATCH_MAX], dst[BATCH_MAX];

/* A message of kind with n entries of mixed families from one seed. */
static void
sync_sample(enum wire_sync_kind kind, size_t n,
	    struct wire_sync_msg *m)
{
	static const uint8_t families[3] = { AF_INET, AF_INET6, AF_INET };

	rng_seed(0x5eed0000 + kind);
	for (size_t i = 0; i < n; i++)
		flow_random(&src[i], families[i % 3], families[(i / 3) % 2]);
	*m = (struct wire_sync_msg){
		.kind = kind,
		.node_id = 2,
		.seq = 0x0123456789abcdefull,
	};
	switch (kind) {
	case WIRE_SYNC_RESYNC_REQUEST:
		m->epoch = 41;
		m->peer = 0;            /* any donor */
		break;
	case WIRE_SYNC_RESYNC_BEGIN:
		m->epoch = 42;
		m->peer = 3;
		break;
	case WIRE_SYNC_RESYNC_ENTRIES:
		m->epoch = 42;
		m->peer = 3;
		m->entries = src;
		m->count = n;
		break;
	case WIRE_SYNC_RESYNC_END:
		m->epoch = 42;
		m->peer = 3;
		m->entry_count = 123456789;
		break;
	case WIRE_SYNC_DIGEST_REQUEST:
		m->epoch = 7;
		break;
	case WIRE_SYNC_DIGEST:
		m->epoch = 7;
		m->peer = 3;
		m->entry_count = 1000000;
		m->digest = 0xfedcba9876543210ull;
		m->maglev_digest = 0x0123456789abcdefull;
		break;
	case WIRE_SYNC_NODE_STATE:
		m->state = (struct wire_node_state){
			.priority = 200, .dataplane = true, .synced = true,
			.quorate = true, .standby = false, .preempt = true,
			.role = WIRE_ROLE_ACTIVE,
			.mode = WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
			.incarnation = 1764547200123456ull,
		};
		break;
	case WIRE_SYNC_HEALTH:
		for (size_t i = 0; i < n; i++)
			backend_ref_of(&src[i]);
		m->entries = src;
		m->count = n;
		m->generation = 0x100000001ull;
		break;
	default:
		m->entries = src;
		m->count = n;
		m->stamp_us = 1764547200123456ull;
		break;
	}
}

static void
sync_roundtrip(const struct wire_sync_msg *m, size_t cap)
{
	static uint8_t buf[BATCH_MAX * WIRE_FLOW_ENCODED_MAX + WIRE_SYNC_HEADER_MAX];
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg out;
	size_t len = 0;

	memset(dst, 0, sizeof(dst));
	ck_assert_int_eq(wire_sync_encode(m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, wire_sync_encoded_size(m));
	ck_assert_int_eq(wire_sync_decode(buf, len, &out, dst, cap, &c), 0);
	ck_assert_uint_eq(drops_total(&c), 0);

	ck_assert_uint_eq(out.version, WIRE_SYNC_VERSION);
	ck_assert_int_eq(out.kind, m->kind);
	ck_assert_uint_eq(out.node_id, m->node_id);
	ck_assert_uint_eq(out.seq, m->seq);
	ck_assert_uint_eq(out.epoch, m->epoch);
	ck_assert_uint_eq(out.peer, m->peer);
	ck_assert_uint_eq(out.entry_count, m->entry_count);
	ck_assert_uint_eq(out.stamp_us, m->stamp_us);
	ck_assert_uint_eq(out.digest, m->digest);
	ck_assert_uint_eq(out.maglev_digest, m->maglev_digest);
	ck_assert_uint_eq(out.generation, m->generation);
	node_state_assert_eq(&out.state, &m->state);
	ck_assert_uint_eq(out.count, m->count);
	ck_assert(out.count == 0 ? out.entries == NULL : out.entries == dst);
	for (size_t i = 0; i < m->count; i++) {
		struct wire_flow want = m->entries[i];

		/* a live batch's origin is its sender: not carried */
		if (m->kind != WIRE_SYNC_RESYNC_ENTRIES && m->kind != WIRE_SYNC_HEALTH)
			want.origin = 0;
		flow_assert_eq(&want, &out.entries[i]);
	}
}

START_TEST(test_sync_roundtrip_kind)
{
	struct wire_sync_msg m;

	sync_sample((enum wire_sync_kind)_i, 30, &m);
	sync_roundtrip(&m, BATCH_MAX);
}
END_TEST

START_TEST(test_sync_roundtrip_v4)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_NEW, .node_id = 1,
				   .entries = src, .count = 1 };

	flow_v4(&src[0]);
	sync_roundtrip(&m, 1);
}
END_TEST

START_TEST(test_sync_roundtrip_v6)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_REFRESH, .node_id = 1,
				   .entries = src, .count = 1 };

	flow_v6(&src[0]);
	sync_roundtrip(&m, 1);
}
END_TEST

/* IPv4 VIP through an IPv6 tunnel and the other way round. */
START_TEST(test_sync_roundtrip_mixed_families)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_CLOSE, .node_id = 9,
				   .entries = src, .count = 2 };

	flow_max(&src[0], AF_INET, AF_INET6);
	flow_max(&src[1], AF_INET6, AF_INET);
	sync_roundtrip(&m, 2);
}
END_TEST

/* cap entries exactly fill the buffer: accepted. */
START_TEST(test_sync_roundtrip_max_entries)
{
	struct wire_sync_msg m;

	sync_sample(WIRE_SYNC_RESYNC_ENTRIES, BATCH_MAX, &m);
	sync_roundtrip(&m, BATCH_MAX);
}
END_TEST

START_TEST(test_sync_roundtrip_empty_batch)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_NEW, .node_id = 1 };

	sync_roundtrip(&m, 0);
}
END_TEST

/* ------------------------------------------------------- sync: sizes */

START_TEST(test_sync_entry_size_v4)
{
	struct wire_flow f;

	/* an IPv4 entry: 22 bytes (port 443), at most 36 on the wire */
	flow_v4(&f);
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_NEW, &f), 22);
	flow_max(&f, AF_INET, AF_INET);
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_RESYNC_ENTRIES, &f),
			  WIRE_SYNC_ENTRY_MAX_V4);
	ck_assert_uint_le(WIRE_SYNC_ENTRY_MAX_V4, 36);
	/* the origin travels in a resync only */
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_CLOSE, &f), WIRE_SYNC_ENTRY_MAX_V4 - 5);
}
END_TEST

START_TEST(test_sync_entry_size_bounds)
{
	struct wire_flow f;

	flow_max(&f, AF_INET6, AF_INET6);
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_RESYNC_ENTRIES, &f),
			  WIRE_SYNC_ENTRY_MAX);
	/* The smallest valid entry: IPv4, no ports, no lifetime, no flags. */
	flow_v4(&f);
	f.vip_port = f.client_port = 0;
	f.lifetime_ms = f.flags = 0;
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_NEW, &f), WIRE_SYNC_ENTRY_MIN);
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_HEALTH, &f), 0);
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_DIGEST, &f), 0);
	f.proto = IPPROTO_ICMP;
	ck_assert_uint_eq(wire_sync_entry_size(WIRE_SYNC_NEW, &f), 0);
}
END_TEST

/* Header + sum of entries bounds every message, entries or not. */
START_TEST(test_sync_batch_size_bound)
{
	static const enum wire_sync_kind kinds[] = { WIRE_SYNC_NEW, WIRE_SYNC_RESYNC_ENTRIES };
	struct wire_sync_msg m;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t sum = 0, size;

		sync_sample(kinds[k], BATCH_MAX, &m);
		m.node_id = m.peer = m.epoch = UINT32_MAX;
		m.seq = m.stamp_us = UINT64_MAX;
		for (size_t i = 0; i < m.count; i++) {
			src[i].origin = UINT32_MAX;
			sum += wire_sync_entry_size(m.kind, &m.entries[i]);
		}
		size = wire_sync_encoded_size(&m);
		ck_assert_uint_ge(size, sum);
		ck_assert_uint_le(size, sum + WIRE_SYNC_HEADER_MAX);
	}
	m.kind = WIRE_SYNC_RESYNC_END;
	m.entry_count = UINT64_MAX;
	ck_assert_uint_le(wire_sync_encoded_size(&m), WIRE_SYNC_HEADER_MAX);
}
END_TEST

/* Each entry adds its size, but where a column's length takes a byte more. */
START_TEST(test_sync_entry_size_exact)
{
	struct wire_sync_msg m;
	size_t sum = 0, empty;

	sync_sample(WIRE_SYNC_NEW, 100, &m);
	m.count = 0;
	empty = wire_sync_encoded_size(&m);
	for (size_t n = 1; n <= 100; n++) {
		m.count = n;
		sum += wire_sync_entry_size(m.kind, &m.entries[n - 1]);
		ck_assert_uint_ge(wire_sync_encoded_size(&m), empty + sum);
		ck_assert_uint_le(wire_sync_encoded_size(&m), WIRE_SYNC_HEADER_MAX + sum);
	}
}
END_TEST

START_TEST(test_sync_enospc)
{
	uint8_t buf[256], before[256];
	struct wire_sync_msg m;
	size_t need, len = 0;

	sync_sample(WIRE_SYNC_NEW, 3, &m);
	need = wire_sync_encoded_size(&m);
	ck_assert_uint_lt(need, sizeof(buf));
	memset(buf, 0x5a, sizeof(buf));
	memcpy(before, buf, sizeof(buf));
	ck_assert_int_eq(wire_sync_encode(&m, buf, need - 1, &len), -ENOSPC);
	ck_assert_uint_eq(len, need);
	ck_assert_mem_eq(buf, before, sizeof(buf));
	ck_assert_int_eq(wire_sync_encode(&m, buf, 0, &len), -ENOSPC);
	ck_assert_int_eq(wire_sync_encode(&m, buf, need, &len), 0);
	ck_assert_uint_eq(len, need);
}
END_TEST

/* The encoder never sends what a peer would drop. */
START_TEST(test_sync_encode_invalid)
{
	struct wire_sync_msg m, bad;
	uint8_t buf[1024];
	size_t len;

	sync_sample(WIRE_SYNC_NEW, 2, &m);
	bad = m;
	bad.node_id = 0;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	bad = m;
	bad.kind = WIRE_SYNC_KIND_MAX;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	bad = m;
	bad.entries = NULL;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	src[1].proto = IPPROTO_ICMP;
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	src[1].proto = IPPROTO_UDP;
	src[1].backend_family = 0;
	ck_assert(!wire_flow_is_valid(&src[1]));
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	src[1].backend_family = AF_INET;
	src[1].family = AF_UNIX;
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_uint_eq(wire_sync_encoded_size(&m), 0);

	sync_sample(WIRE_SYNC_RESYNC_BEGIN, 0, &m);
	bad = m;
	bad.epoch = 0;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	bad = m;
	bad.peer = 0;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
}
END_TEST

/* -------------------------------------------------- sync: bad input */

/* A hand-written message decodes: the field numbers are sync.proto's. */
START_TEST(test_sync_raw_valid)
{
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg m;
	struct wire_flow f;
	struct pbw w;

	pbw_sync_new(&w, &raw_flow_ok);
	ck_assert_int_eq(wire_sync_decode(w.buf, w.len, &m, &f, 1, &c), 0);
	ck_assert_int_eq(m.kind, WIRE_SYNC_NEW);
	ck_assert_uint_eq(m.node_id, 1);
	ck_assert_uint_eq(m.seq, 7);
	ck_assert_uint_eq(m.count, 1);
	ck_assert_uint_eq(f.family, AF_INET);
	ck_assert_uint_eq(f.vip_port, 80);
	ck_assert_uint_eq(f.client_port, 40000);
	ck_assert_uint_eq(f.proto, IPPROTO_TCP);
	ck_assert_uint_eq(f.lifetime_ms, 1000);
	ck_assert_uint_eq(f.vip[0], 198);
	ck_assert_uint_eq(f.vip[4], 0);
}
END_TEST

START_TEST(test_sync_bad_version)
{
	struct pbw batch = { .len = 0 }, w;

	pbw_entries(&batch, SYNC_BATCH_ENTRIES, &raw_flow_ok, 1, 1);
	pbw_sync(&w, WIRE_SYNC_VERSION + 1, 1, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_BAD_VERSION, -EPROTONOSUPPORT);
	pbw_sync(&w, 0, 1, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_BAD_VERSION, -EPROTONOSUPPORT);
	/* version 1, entries as Flow messages: dropped, never misread */
	batch.len = 0;
	pbw_flow(&batch, 1, &raw_flow_ok);
	pbw_sync(&w, 1, 1, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_BAD_VERSION, -EPROTONOSUPPORT);
}
END_TEST

START_TEST(test_sync_unknown_kind)
{
	struct pbw body = { .len = 0 }, w;

	pbw_uint(&body, 1, 42);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_UNKNOWN, &body);
	sync_expect_drop(&w, WIRE_DROP_UNKNOWN_KIND, -EBADMSG);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, 0, NULL);
	sync_expect_drop(&w, WIRE_DROP_UNKNOWN_KIND, -EBADMSG);
}
END_TEST

START_TEST(test_sync_bad_sender)
{
	struct pbw batch = { .len = 0 }, body = { .len = 0 }, w;

	pbw_entries(&batch, SYNC_BATCH_ENTRIES, &raw_flow_ok, 1, 1);
	pbw_sync(&w, WIRE_SYNC_VERSION, 0, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_BAD_SENDER, -EBADMSG);
	/* a resync BEGIN serving requester 0 */
	pbw_uint(&body, 1, 5);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_RESYNC_BEGIN, &body);
	sync_expect_drop(&w, WIRE_DROP_BAD_SENDER, -EBADMSG);
}
END_TEST

START_TEST(test_sync_bad_epoch)
{
	struct pbw body = { .len = 0 }, w;

	pbw_uint(&body, 2, 3);      /* requester 3, epoch left at 0 */
	pbw_uint(&body, 3, 10);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_RESYNC_END, &body);
	sync_expect_drop(&w, WIRE_DROP_BAD_EPOCH, -EBADMSG);
}
END_TEST

/* A digest names its round (>= 1) and the node that asked (>= 1). */
START_TEST(test_sync_bad_digest)
{
	struct pbw body = { .len = 0 }, w;

	pbw_uint(&body, 2, 3);      /* requester 3, round left at 0 */
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_DIGEST, &body);
	sync_expect_drop(&w, WIRE_DROP_BAD_EPOCH, -EBADMSG);
	body.len = 0;
	pbw_uint(&body, 1, 5);      /* round 5, requester left at 0 */
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_DIGEST, &body);
	sync_expect_drop(&w, WIRE_DROP_BAD_SENDER, -EBADMSG);
}
END_TEST

START_TEST(test_sync_bad_address)
{
	struct raw_flow f = raw_flow_ok;
	struct pbw w;

	f.vip_len = f.client_len = 5;
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	f = raw_flow_ok;
	f.client_len = 16;          /* families differ */
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	f = raw_flow_ok;
	f.backend_len = 5;
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	f = raw_flow_ok;
	f.backend_len = 0;          /* no backend */
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	f = raw_flow_ok;
	f.vip_len = f.client_len = 0;
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	f = raw_flow_ok;
	f.family_bits = 4;          /* a family bit no version has */
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	f = raw_flow_ok;
	f.family_bits = 1;          /* says IPv6, carries IPv4 */
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
}
END_TEST

START_TEST(test_sync_bad_protocol)
{
	struct raw_flow f = raw_flow_ok;
	struct pbw w;

	f.proto = IPPROTO_ICMP;
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_PROTOCOL, -EBADMSG);
	f.proto = 0;
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_PROTOCOL, -EBADMSG);
}
END_TEST

START_TEST(test_sync_bad_port)
{
	struct raw_flow f = raw_flow_ok;
	struct pbw w;

	f.vip_port = 65536;         /* a client port is two bytes: always in range */
	pbw_sync_new(&w, &f);
	sync_expect_drop(&w, WIRE_DROP_BAD_PORT, -EBADMSG);
}
END_TEST

/* A column shorter or longer than the count: the message is cut or forged. */
START_TEST(test_sync_bad_columns)
{
	struct raw_flow f[2] = { raw_flow_ok, raw_flow_ok };
	struct pbw batch = { .len = 0 }, w;

	pbw_entries(&batch, SYNC_BATCH_ENTRIES, f, 2, 3);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_TRUNCATED, -EBADMSG);
	batch.len = 0;
	pbw_entries(&batch, SYNC_BATCH_ENTRIES, f, 2, 1);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_TRUNCATED, -EBADMSG);
}
END_TEST

/* One entry past cap: dropped whole, the caller's buffer untouched. */
START_TEST(test_sync_too_many_entries)
{
	struct raw_flow f[5];
	struct pbw batch = { .len = 0 }, w;

	for (int i = 0; i < 5; i++)
		f[i] = raw_flow_ok;
	pbw_entries(&batch, SYNC_BATCH_ENTRIES, f, 5, 5);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_NEW, &batch);
	sync_expect_drop(&w, WIRE_DROP_TOO_MANY_ENTRIES, -EMSGSIZE);
}
END_TEST

/* Later senders may add flag bits and fields: ignored, not dropped. */
START_TEST(test_sync_unknown_flags_and_fields)
{
	struct raw_flow f = raw_flow_ok;
	struct wire_counters c = { { 0 } };
	struct pbw batch = { .len = 0 }, w;
	struct wire_sync_msg m;
	struct wire_flow out;

	f.flags = 0xffffffff;
	pbw_entries(&batch, SYNC_BATCH_ENTRIES, &f, 1, 1);
	pbw_uint(&batch, 9, 1);     /* unknown Batch field */
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_NEW, &batch);
	pbw_uint(&w, 20, 77);       /* unknown Envelope field */
	ck_assert_int_eq(wire_sync_decode(w.buf, w.len, &m, &out, 1, &c), 0);
	ck_assert_uint_eq(out.flags, WIRE_FLOW_FLAGS_ALL);
	ck_assert_uint_eq(drops_total(&c), 0);
}
END_TEST

/* Every prefix of a valid message: rejected, one counter each, no crash. */
START_TEST(test_sync_truncated)
{
	static uint8_t buf[4096];
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg m, out;
	size_t len, rejected = 0;

	sync_sample(WIRE_SYNC_NEW, 20, &m);
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	for (size_t n = 0; n < len; n++) {
		/* each prefix in a buffer of its own, so valgrind sees overreads */
		uint8_t *p = malloc(n > 0 ? n : 1);

		ck_assert_ptr_nonnull(p);
		memcpy(p, buf, n);
		if (wire_sync_decode(p, n, &out, dst, BATCH_MAX, &c) < 0)
			rejected++;
		free(p);
	}
	ck_assert_uint_eq(rejected, len);
	ck_assert_uint_eq(drops_total(&c), rejected);
	ck_assert_uint_ge(c.drops[WIRE_DROP_TRUNCATED], len * 9 / 10);
}
END_TEST

START_TEST(test_sync_garbage)
{
	static uint8_t valid[4096];
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg m, out;
	size_t vlen, rejected = 0;
	uint8_t buf[600];
	int n;

	rng_seed(0xbad5eed);
	for (n = 0; n < 3000; n++) {
		size_t len = rng_below(sizeof(buf));

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rng_next();
		if (wire_sync_decode(buf, len, &out, dst, BATCH_MAX, &c) < 0)
			rejected++;
	}
	/* valid messages with a few random bytes changed */
	sync_sample(WIRE_SYNC_RESYNC_ENTRIES, 8, &m);
	ck_assert_int_eq(wire_sync_encode(&m, valid, sizeof(valid), &vlen), 0);
	ck_assert_uint_le(vlen, sizeof(buf));
	for (; n < 6000; n++) {
		memcpy(buf, valid, vlen);
		for (int k = 1 + rng_below(3); k > 0; k--)
			buf[rng_below((uint32_t)vlen)] = (uint8_t)rng_next();
		if (wire_sync_decode(buf, vlen, &out, dst, BATCH_MAX, &c) < 0)
			rejected++;
	}
	ck_assert_uint_gt(rejected, 3000);
	ck_assert_uint_eq(drops_total(&c), rejected);
	ck_assert_uint_gt(c.drops[WIRE_DROP_TRUNCATED], 0);
}
END_TEST

/* ------------------------------------------- sync: membership kinds */

/* A VIP and its backend of different families, both ways. */
START_TEST(test_sync_health_mixed_families)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH, .node_id = 4,
				   .entries = src, .count = 2, .generation = 1 };

	flow_max(&src[0], AF_INET, AF_INET6);
	flow_max(&src[1], AF_INET6, AF_INET);
	src[1].vip_port = 0;
	backend_ref_of(&src[0]);
	backend_ref_of(&src[1]);
	sync_roundtrip(&m, 2);
}
END_TEST

/* Nothing down is a report too: it clears the sender's previous one. */
START_TEST(test_sync_health_empty)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH, .node_id = 4,
				   .generation = 2 };

	sync_roundtrip(&m, 0);
}
END_TEST

/* A BackendRef by sync.proto's field numbers. */
struct raw_ref {
	size_t vip_len, backend_len;
	uint64_t vip_port, proto;
};

static const struct raw_ref raw_ref_ok = {
	.vip_len = 4, .backend_len = 16, .vip_port = 443, .proto = IPPROTO_TCP,
};

static void
pbw_ref(struct pbw *w, const struct raw_ref *r)
{
	static const uint8_t addr[16] = { 198, 18, 0, 1, 0, 0, 0, 0,
					  0, 0, 0, 0, 0, 0, 0, 9 };
	struct pbw m = { .len = 0 };

	pbw_bytes(&m, 1, addr, r->vip_len);
	pbw_uint(&m, 2, r->vip_port);
	pbw_uint(&m, 3, r->proto);
	if (r->backend_len > 0)
		pbw_bytes(&m, 4, addr, r->backend_len);
	pbw_message(w, 1, &m);
}

/* A HealthReport of n copies of r, generation 9, from node 1. */
static void
pbw_health(struct pbw *w, const struct raw_ref *r, int n)
{
	struct pbw body = { .len = 0 };

	for (int i = 0; i < n; i++)
		pbw_ref(&body, r);
	pbw_uint(&body, 2, 9);
	pbw_sync(w, WIRE_SYNC_VERSION, 1, SYNC_BODY_HEALTH, &body);
}

START_TEST(test_sync_health_raw)
{
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg m;
	struct wire_flow f[2];
	struct pbw w;

	pbw_health(&w, &raw_ref_ok, 2);
	memset(f, 0xa5, sizeof(f));
	ck_assert_int_eq(wire_sync_decode(w.buf, w.len, &m, f, 2, &c), 0);
	ck_assert_int_eq(m.kind, WIRE_SYNC_HEALTH);
	ck_assert_uint_eq(m.generation, 9);
	ck_assert_uint_eq(m.count, 2);
	ck_assert_ptr_eq(m.entries, f);
	ck_assert_uint_eq(f[1].family, AF_INET);
	ck_assert_uint_eq(f[1].backend_family, AF_INET6);
	ck_assert_uint_eq(f[1].proto, IPPROTO_TCP);
	ck_assert_uint_eq(f[1].vip_port, 443);
	ck_assert_uint_eq(f[1].vip[0], 198);
	ck_assert_uint_eq(f[1].vip[4], 0);
	ck_assert_uint_eq(f[1].backend[15], 9);
	ck_assert_uint_eq(f[1].client_port, 0);
	ck_assert_uint_eq(f[1].lifetime_ms, 0);
	ck_assert_uint_eq(f[1].flags, 0);
	ck_assert_uint_eq(f[1].origin, 0);
	for (int i = 0; i < WIRE_ADDR_MAX; i++)
		ck_assert_uint_eq(f[1].client[i], 0);
	ck_assert_uint_eq(drops_total(&c), 0);
}
END_TEST

START_TEST(test_sync_health_bad)
{
	struct raw_ref r = raw_ref_ok;
	struct pbw w;

	r.vip_len = 5;
	pbw_health(&w, &r, 1);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	r = raw_ref_ok;
	r.backend_len = 0;
	pbw_health(&w, &r, 1);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	r.backend_len = 6;
	pbw_health(&w, &r, 1);
	sync_expect_drop(&w, WIRE_DROP_BAD_ADDRESS, -EBADMSG);
	r = raw_ref_ok;
	r.proto = IPPROTO_ICMP;
	pbw_health(&w, &r, 1);
	sync_expect_drop(&w, WIRE_DROP_BAD_PROTOCOL, -EBADMSG);
	r.proto = 0;
	pbw_health(&w, &r, 1);
	sync_expect_drop(&w, WIRE_DROP_BAD_PROTOCOL, -EBADMSG);
	r = raw_ref_ok;
	r.vip_port = 65536;
	pbw_health(&w, &r, 1);
	sync_expect_drop(&w, WIRE_DROP_BAD_PORT, -EBADMSG);
	/* one more than sync_expect_drop's 4 entries of room */
	pbw_health(&w, &raw_ref_ok, 5);
	sync_expect_drop(&w, WIRE_DROP_TOO_MANY_ENTRIES, -EMSGSIZE);
}
END_TEST

/* A NodeState by sync.proto's field numbers. */
static void
pbw_node_state(struct pbw *w, uint64_t role, uint64_t mode)
{
	struct pbw body = { .len = 0 };

	pbw_uint(&body, 1, 150);
	pbw_uint(&body, 2, 1);
	pbw_uint(&body, 3, 1);
	pbw_uint(&body, 4, 0);
	pbw_uint(&body, 5, 1);
	pbw_uint(&body, 6, role);
	pbw_uint(&body, 7, 1764547200000001ull);
	pbw_uint(&body, 8, mode);
	pbw_uint(&body, 9, 1);
	pbw_sync(w, WIRE_SYNC_VERSION, 1, SYNC_BODY_NODE_STATE, &body);
}

START_TEST(test_sync_node_state_raw)
{
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg m;
	struct pbw w;

	pbw_node_state(&w, 2, 2);
	ck_assert_int_eq(wire_sync_decode(w.buf, w.len, &m, NULL, 0, &c), 0);
	ck_assert_int_eq(m.kind, WIRE_SYNC_NODE_STATE);
	ck_assert_uint_eq(m.node_id, 1);
	ck_assert_uint_eq(m.state.priority, 150);
	ck_assert(m.state.dataplane);
	ck_assert(m.state.synced);
	ck_assert(!m.state.quorate);
	ck_assert(m.state.standby);
	ck_assert_int_eq(m.state.role, WIRE_ROLE_ACTIVE);
	ck_assert_uint_eq(m.state.incarnation, 1764547200000001ull);
	ck_assert_int_eq(m.state.mode, WIRE_CLUSTER_MODE_ACTIVE_ACTIVE);
	ck_assert(m.state.preempt);
	ck_assert_uint_eq(m.count, 0);
	ck_assert_uint_eq(m.epoch, 0);
	ck_assert_uint_eq(drops_total(&c), 0);
}
END_TEST

/* A role or a mode unspecified or unknown: dropped, as BAD_ENUM. */
START_TEST(test_sync_node_state_bad_enum)
{
	static const uint64_t bad[][2] = {
		{ 0, 1 }, { 3, 1 }, { 1, 0 }, { 1, 3 }, { 0xffffffff, 1 },
	};
	struct pbw body = { .len = 0 }, w;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pbw_node_state(&w, bad[i][0], bad[i][1]);
		sync_expect_drop(&w, WIRE_DROP_BAD_ENUM, -EBADMSG);
	}
	pbw_uint(&body, 6, 1);
	pbw_uint(&body, 8, 1);
	pbw_sync(&w, WIRE_SYNC_VERSION, 0, SYNC_BODY_NODE_STATE, &body);
	sync_expect_drop(&w, WIRE_DROP_BAD_SENDER, -EBADMSG);
}
END_TEST

/* Digest.maglev_digest is field 5, a fixed64. */
START_TEST(test_sync_digest_maglev_raw)
{
	struct wire_counters c = { { 0 } };
	struct pbw body = { .len = 0 }, w;
	struct wire_sync_msg m;

	pbw_uint(&body, 1, 5);
	pbw_uint(&body, 2, 3);
	pbw_fixed64(&body, 4, 0x1111111111111111ull);
	pbw_fixed64(&body, 5, 0x8000000000000001ull);
	pbw_sync(&w, WIRE_SYNC_VERSION, 1, SYNC_BODY_DIGEST, &body);
	ck_assert_int_eq(wire_sync_decode(w.buf, w.len, &m, NULL, 0, &c), 0);
	ck_assert_uint_eq(m.digest, 0x1111111111111111ull);
	ck_assert_uint_eq(m.maglev_digest, 0x8000000000000001ull);
}
END_TEST

/* The messages without entries, every field at its largest, fit the header. */
START_TEST(test_sync_header_bound_new_kinds)
{
	struct wire_sync_msg m;

	sync_sample(WIRE_SYNC_DIGEST, 0, &m);
	m.node_id = m.peer = m.epoch = UINT32_MAX;
	m.seq = m.entry_count = m.digest = m.maglev_digest = UINT64_MAX;
	ck_assert_uint_le(wire_sync_encoded_size(&m), WIRE_SYNC_HEADER_MAX);
	sync_sample(WIRE_SYNC_NODE_STATE, 0, &m);
	m.node_id = m.state.priority = UINT32_MAX;
	m.seq = m.state.incarnation = UINT64_MAX;
	m.state.dataplane = m.state.synced = m.state.quorate = true;
	m.state.standby = m.state.preempt = true;
	ck_assert_uint_le(wire_sync_encoded_size(&m), WIRE_SYNC_HEADER_MAX);
}
END_TEST

/* A HEALTH entry adds REF_MIN..REF_MAX bytes, fewer than as a flow. */
START_TEST(test_sync_health_sizes)
{
	struct wire_counters c = { { 0 } };
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH, .node_id = 1,
				   .entries = src };
	static uint8_t buf[BATCH_MAX * WIRE_BACKEND_REF_ENCODED_MAX +
			   WIRE_SYNC_HEADER_MAX];
	struct wire_sync_msg out;
	size_t empty, size, sum = 0, len;

	empty = wire_sync_encoded_size(&m);
	flow_max(&src[0], AF_INET6, AF_INET6);
	backend_ref_of(&src[0]);
	m.count = 1;
	ck_assert_uint_eq(wire_sync_encoded_size(&m) - empty,
			  WIRE_BACKEND_REF_ENCODED_MAX);
	flow_v4(&src[0]);
	src[0].vip_port = 0;
	backend_ref_of(&src[0]);
	ck_assert_uint_eq(wire_sync_encoded_size(&m) - empty,
			  WIRE_BACKEND_REF_ENCODED_MIN);

	/* a full report, every field at its largest */
	for (size_t i = 0; i < BATCH_MAX; i++) {
		flow_max(&src[i], AF_INET6, AF_INET6);
		backend_ref_of(&src[i]);
		sum += wire_flow_encoded_size(&src[i]);
	}
	m.count = BATCH_MAX;
	m.node_id = UINT32_MAX;
	m.seq = m.generation = UINT64_MAX;
	size = wire_sync_encoded_size(&m);
	ck_assert_uint_le(size, WIRE_SYNC_HEADER_MAX +
			  BATCH_MAX * WIRE_BACKEND_REF_ENCODED_MAX);
	ck_assert_uint_le(size, WIRE_SYNC_HEADER_MAX + sum);

	/* the smallest entries: len / REF_MIN entries of room suffice */
	for (size_t i = 0; i < BATCH_MAX; i++) {
		flow_v4(&src[i]);
		src[i].vip_port = 0;
		backend_ref_of(&src[i]);
	}
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_uint_ge(len, BATCH_MAX * WIRE_BACKEND_REF_ENCODED_MIN);
	ck_assert_int_eq(wire_sync_decode(buf, len, &out, dst,
					  len / WIRE_BACKEND_REF_ENCODED_MIN, &c), 0);
	ck_assert_uint_eq(out.count, BATCH_MAX);
}
END_TEST

START_TEST(test_sync_encode_invalid_new_kinds)
{
	struct wire_sync_msg m, bad;
	uint8_t buf[1024];
	size_t len;

	sync_sample(WIRE_SYNC_NODE_STATE, 0, &m);
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	bad = m;
	bad.state.role = WIRE_ROLE_UNSPECIFIED;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	bad = m;
	bad.state.role = WIRE_ROLE_MAX;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	bad = m;
	bad.state.mode = WIRE_CLUSTER_MODE_UNSPECIFIED;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);

	sync_sample(WIRE_SYNC_HEALTH, 3, &m);
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	bad = m;
	bad.entries = NULL;
	ck_assert_int_eq(wire_sync_encode(&bad, buf, sizeof(buf), &len), -EINVAL);
	src[2].backend_family = 0;
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	src[2].backend_family = AF_INET;
	src[2].proto = IPPROTO_ICMP;
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_uint_eq(wire_sync_encoded_size(&m), 0);
}
END_TEST

/* ---------------------------------------------------- control: kinds */

static struct wire_ctl_counter sample_counters[3];
static struct wire_ctl_vip sample_vips[2];
static struct wire_ctl_backend sample_backends[3];
static struct wire_ctl_ownership_entry sample_owned[2];

static void
ctl_sample_vip_list(struct wire_ctl_msg *m)
{
	memset(sample_vips, 0, sizeof(sample_vips));
	memset(sample_backends, 0, sizeof(sample_backends));
	strcpy(sample_vips[0].name, "web");
	sample_vips[0].family = AF_INET;
	sample_vips[0].proto = IPPROTO_TCP;
	sample_vips[0].port = 443;
	addr_fill(AF_INET, sample_vips[0].address);
	sample_vips[0].owned = true;
	sample_vips[0].backends = 3;
	sample_vips[0].backends_up = 2;
	sample_vips[0].flows = 1u << 20;
	sample_vips[0].maglev_digest = 0x8000000000000001ull;
	sample_vips[0].table_size = 65537;
	sample_vips[0].traffic = (struct wire_ctl_traffic){
		.packets = UINT64_MAX, .bytes = 1ull << 40, .new_flows = 3,
		.untracked = 4, .synced_hits = 5, .maglev_picks = 6,
	};
	strcpy(sample_vips[1].name, "dns6");
	sample_vips[1].family = AF_INET6;
	sample_vips[1].proto = IPPROTO_UDP;
	addr_fill(AF_INET6, sample_vips[1].address);
	for (int i = 0; i < 3; i++) {
		strcpy(sample_backends[i].vip, "web");
		sample_backends[i].family = i == 2 ? AF_INET6 : AF_INET;
		addr_fill(sample_backends[i].family, sample_backends[i].address);
		sample_backends[i].weight = 100 * (uint32_t)i;
		sample_backends[i].state = (enum wire_backend_state)i;
		sample_backends[i].config_weight = 7 + (uint32_t)i;
		sample_backends[i].maglev_slots = 21845 + (uint32_t)i;
		sample_backends[i].flows = 1000 + (uint64_t)i;
		sample_backends[i].traffic = (struct wire_ctl_traffic){
			.packets = 10 + (uint64_t)i, .bytes = UINT64_MAX - (uint64_t)i,
			.new_flows = 12, .untracked = 13, .synced_hits = 14,
			.maglev_picks = 15 + (uint64_t)i,
		};
		/* the first unresolved, the others at 02:00:00:00:00:0i */
		sample_backends[i].next_hop_resolved = i > 0;
		if (i > 0)
			memcpy(sample_backends[i].next_hop_mac,
			       (const uint8_t[WIRE_MAC_LEN]){ 2, 0, 0, 0, 0, (uint8_t)i },
			       WIRE_MAC_LEN);
	}
	m->vip_list = (struct wire_ctl_vip_list){
		.vips = sample_vips, .n_vips = 2,
		.backends = sample_backends, .n_backends = 3,
		.next_cursor = 17,
	};
}

/* Bodies with arrays or entries. */
static struct wire_ctl_sync_digest sample_digests[3];
static struct wire_ctl_cluster_member sample_members[3];

/* Node 2 of three: 1 active, 2 (itself) passive, 3 never heard. */
static void
ctl_sample_cluster(struct wire_ctl_msg *m)
{
	memset(sample_members, 0, sizeof(sample_members));
	sample_members[0] = (struct wire_ctl_cluster_member){
		.id = 1, .role = WIRE_ROLE_ACTIVE, .priority = 200, .known = true,
		.eligible = true, .dataplane = true, .synced = true,
		.quorate = true,
	};
	sample_members[1] = (struct wire_ctl_cluster_member){
		.id = 2, .role = WIRE_ROLE_PASSIVE, .priority = 100, .known = true,
		.dataplane = true, .quorate = true, .standby = true,
	};
	sample_members[2] = (struct wire_ctl_cluster_member){ .id = 3 };
	m->cluster = (struct wire_ctl_cluster){
		.node_id = 2, .mode = WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
		.preempt = true, .quorate = true, .role = WIRE_ROLE_PASSIVE,
		.eligible = false, .standby = true, .role_changes = 7,
		.last_change_unix_ms = 1764547200123ull, .lease_ms = 3000,
		.members = sample_members, .count = 3,
	};
}

static struct wire_ctl_sync_group sample_groups[2];
static struct wire_ctl_sync_drop sample_drops[2];

/* Node 3: group default synced with 3 members, group edge resyncing. */
static void
ctl_sample_sync_status(struct wire_ctl_msg *m)
{
	memset(sample_groups, 0, sizeof(sample_groups));
	memset(sample_drops, 0, sizeof(sample_drops));
	sample_groups[0] = (struct wire_ctl_sync_group){
		.name = "default", .state = "synced", .members = { 1, 2, 3 },
		.n_members = 3, .entries_own = 1000, .entries_peers = 2000,
		.digest = 0xfedcba9876543210ull, .send_queue = 4,
		.entries_sent = 5000, .entries_received = 6000, .imported = 5999,
		.rejected = 7, .dropped = 8, .resyncs = 1, .resync_last_ms = 1234,
		.resync_entries_received = 2000,
		.self_lag_p50_us = 100, .self_lag_p99_us = 900,
		.import_lag_p50_us = 200, .import_lag_p99_us = UINT32_MAX,
	};
	/* lags since start: 3 at 1 ms, 2 at 40 ms, 1 past 60 s; 5 imports at 2 ms */
	for (int i = 0; i < WIRE_LAG_BUCKETS; i++) {
		uint32_t top = wire_lag_bucket_us[i];

		sample_groups[0].self_lag.cumulative[i] = (top >= 1000) * 3 + (top >= 40000) * 2;
		sample_groups[0].import_lag.cumulative[i] = (top >= 2000) * 5;
	}
	sample_groups[0].self_lag.count = 6;
	sample_groups[0].self_lag.sum_us = 3 * 1000 + 2 * 40000 + UINT32_MAX;
	sample_groups[0].import_lag.count = 5;
	sample_groups[0].import_lag.sum_us = 10000;
	for (uint32_t i = 0; i < WIRE_SYNC_MEMBERS_MAX; i++)
		sample_groups[1].members[i] = i + 1;
	sample_groups[1].n_members = WIRE_SYNC_MEMBERS_MAX;
	memset(sample_groups[1].name, 'g', WIRE_NAME_MAX - 1);
	strcpy(sample_groups[1].state, "resyncing");
	sample_groups[1].donor = 1;
	strcpy(sample_drops[0].group, "default");
	strcpy(sample_drops[0].reason, "rejected_vip");
	sample_drops[0].count = 7;
	strcpy(sample_drops[1].reason, "TRUNCATED");
	sample_drops[1].count = UINT64_MAX;
	m->sync_status = (struct wire_ctl_sync_status){
		.node_id = 3, .synced = false, .dataplane_connected = true,
		.dataplane_synced = true, .entries = 3000, .cache_bytes = 1 << 20,
		.import_queue = 12, .export_entries = 1001, .groups = sample_groups, .n_groups = 2,
		.drops = sample_drops, .n_drops = 2,
	};
}

/* Serving: an IPv4 session Up with keyed SHA-1, an IPv6 one Down, timed out. */
static const struct wire_ctl_bfd_session sample_bfd_init[2] = {
	{ .family = AF_INET, .state = WIRE_BFD_STATE_UP, .local_discriminator = 1,
	  .remote_discriminator = UINT32_MAX, .tx_interval_us = 300000,
	  .detect_time_us = 900000, .multiplier = 3, .remote_multiplier = 5,
	  .state_age_ms = UINT64_MAX, .packets_in = 1u << 20, .packets_out = 12345,
	  .state_changes = 1, .authenticated = true },
	{ .family = AF_INET6, .state = WIRE_BFD_STATE_DOWN,
	  .local_diag = WIRE_BFD_DIAG_DETECT_EXPIRED,
	  .remote_diag = WIRE_BFD_DIAG_REVERSE_CONCAT_PATH_DOWN, .local_discriminator = 2,
	  .tx_interval_us = 1000000, .detect_time_us = 3000000, .multiplier = 3,
	  .state_age_ms = 12000, .packets_in = 10, .packets_out = 40, .state_changes = 2 },
};
/* A zero is sent too; the last gets the longest reason. */
static const struct wire_ctl_bfd_drop sample_bfd_drops_init[3] = {
	{ "BAD_TTL", 3 }, { "AUTH_BAD_DIGEST", 0 }, { "", UINT64_MAX },
};
static struct wire_ctl_bfd_session sample_bfd_sessions[2];
static struct wire_ctl_bfd_drop sample_bfd_drops[3];

static void
ctl_sample_bfd_status(struct wire_ctl_msg *m)
{
	memcpy(sample_bfd_sessions, sample_bfd_init, sizeof(sample_bfd_sessions));
	memcpy(sample_bfd_drops, sample_bfd_drops_init, sizeof(sample_bfd_drops));
	for (int i = 0; i < 2; i++) {
		addr_fill(sample_bfd_sessions[i].family, sample_bfd_sessions[i].peer);
		addr_fill(sample_bfd_sessions[i].family, sample_bfd_sessions[i].local);
	}
	memset(sample_bfd_drops[2].reason, 'r', WIRE_NAME_MAX - 1);
	m->bfd_status = (struct wire_ctl_bfd_status){
		.serving = true, .sessions = sample_bfd_sessions, .n_sessions = 2,
		.drops = sample_bfd_drops, .n_drops = 3,
	};
}

static struct wire_ctl_health_target sample_targets[3];

/*
 * Node 2, page 2 of 3: an IPv4 backend up, an IPv6 one down here and
 * agreed down by all 64 nodes, one down here alone; 50 probes at 1-2 ms,
 * 7 timeouts at 10 s.
 */
static void
ctl_sample_health_status(struct wire_ctl_msg *m)
{
	struct wire_probe_histogram *h = &m->health_status.probe_duration;

	memset(sample_targets, 0, sizeof(sample_targets));
	strcpy(sample_targets[0].vip, "web");
	sample_targets[0].family = AF_INET;
	sample_targets[0].local_up = sample_targets[0].agreed_up = true;
	sample_targets[0].probes = 25;
	sample_targets[0].last_duration_us = 1234;
	memset(sample_targets[1].vip, 'v', WIRE_NAME_MAX - 1);
	sample_targets[1].family = AF_INET6;
	for (uint32_t i = 0; i < WIRE_SYNC_MEMBERS_MAX; i++)
		sample_targets[1].down_by[i] = UINT32_MAX - WIRE_SYNC_MEMBERS_MAX + i + 1;
	sample_targets[1].n_down_by = WIRE_SYNC_MEMBERS_MAX;
	sample_targets[1].probes = sample_targets[1].failures = 25;
	sample_targets[1].last_duration_us = UINT32_MAX;
	strcpy(sample_targets[2].vip, "dns");
	sample_targets[2].family = AF_INET;
	sample_targets[2].agreed_up = true;
	sample_targets[2].down_by[0] = 2;
	sample_targets[2].n_down_by = 1;
	sample_targets[2].probes = 7;
	sample_targets[2].failures = 7;
	for (int i = 0; i < 3; i++)
		addr_fill(sample_targets[i].family, sample_targets[i].backend);
	m->health_status = (struct wire_ctl_health_status){
		.node_id = 2, .targets_total = 2500, .next_cursor = 2048,
		.targets = sample_targets, .n_targets = 3, .probes = 57, .failures = 32,
	};
	for (int i = 0; i < WIRE_PROBE_BUCKETS; i++)
		h->cumulative[i] = (wire_probe_bucket_us[i] >= 1000) * 20 +
				   (wire_probe_bucket_us[i] >= 2500) * 30 +
				   (wire_probe_bucket_us[i] >= 10000000) * 7;
	h->count = 57;
	h->sum_us = 20 * 1000 + 30 * 2000 + 7 * 10000000ull;
}

static void
ctl_sample_arrays(struct wire_ctl_msg *m)
{
	switch (m->kind) {
	case WIRE_CTL_COUNTERS_RESPONSE:
		memset(sample_counters, 0, sizeof(sample_counters));
		strcpy(sample_counters[0].scope, "worker0");
		strcpy(sample_counters[0].name, "rx_packets");
		sample_counters[0].value = UINT64_MAX;
		strcpy(sample_counters[1].scope, "sync");
		strcpy(sample_counters[1].name, "drop_truncated");
		memset(sample_counters[2].scope, 's', WIRE_NAME_MAX - 1);
		memset(sample_counters[2].name, 'n', WIRE_NAME_MAX - 1);
		m->counters.counters = sample_counters;
		m->counters.count = 3;
		break;
	case WIRE_CTL_VIP_LIST_RESPONSE:
		ctl_sample_vip_list(m);
		break;
	case WIRE_CTL_OWNERSHIP_SET:
		memset(sample_owned, 0, sizeof(sample_owned));
		strcpy(sample_owned[0].vip, "web");
		sample_owned[0].owned = true;
		strcpy(sample_owned[1].vip, "dns6");
		m->ownership = (struct wire_ctl_ownership){
			.vips = sample_owned, .count = 2, .announce = true,
			.lease_ms = 3600000,
		};
		break;
	case WIRE_CTL_DUMP_RESPONSE:
		for (int i = 0; i < 50; i++)
			flow_random(&src[i], i % 2 ? AF_INET : AF_INET6, AF_INET);
		m->dump = (struct wire_ctl_dump){
			.entries = src, .count = 50, .next_cursor = 0x1234,
		};
		break;
	case WIRE_CTL_EXPORT_BATCH:
	case WIRE_CTL_IMPORT_BATCH:
		for (int i = 0; i < 10; i++)
			flow_random(&src[i], AF_INET, AF_INET6);
		m->flows = (struct wire_ctl_flows){
			.event = m->kind == WIRE_CTL_EXPORT_BATCH ?
				WIRE_FLOW_EVENT_CLOSE : WIRE_FLOW_EVENT_NEW,
			.entries = src, .count = 10,
			.dropped = m->kind == WIRE_CTL_EXPORT_BATCH ? 5 : 0,
			.peer = m->kind == WIRE_CTL_IMPORT_BATCH ? 2 : 0,
		};
		break;
	case WIRE_CTL_SYNC_VERIFY_RESULT:
		for (uint32_t i = 0; i < 3; i++)
			sample_digests[i] = (struct wire_ctl_sync_digest){
				.node = i + 1, .entry_count = 1000000 + i,
				.digest = 0xfedcba9876543210ull - i,
				.maglev_digest = 0x0123456789abcdefull + i,
			};
		strcpy(m->sync_verify.group, "default");
		m->sync_verify.round = 9;
		m->sync_verify.members = 3;
		m->sync_verify.digests = sample_digests;
		m->sync_verify.count = 3;
		break;
	case WIRE_CTL_CLUSTER_STATUS:
		ctl_sample_cluster(m);
		break;
	case WIRE_CTL_SYNC_STATUS:
		ctl_sample_sync_status(m);
		break;
	case WIRE_CTL_BFD_STATUS:
		ctl_sample_bfd_status(m);
		break;
	case WIRE_CTL_HEALTH_STATUS:
		ctl_sample_health_status(m);
		break;
	default:
		break;
	}
}

/* Bodies of plain fields. */
static void
ctl_sample_body(struct wire_ctl_msg *m)
{
	switch (m->kind) {
	case WIRE_CTL_STATUS_RESPONSE:
		m->status = (struct wire_ctl_status){
			.node_id = 3, .workers = 2, .ports = 1, .vips = 5,
			.vips_owned = 2, .uptime_ms = 123456789012ull,
			.flows_local = 1000000, .flows_synced = 2000000,
			.maglev_digest = 0xfedcba9876543210ull,
			.serving = true, .serving_lease_remaining_ms = 750,
		};
		break;
	case WIRE_CTL_COUNTERS_REQUEST:
		strcpy(m->counters_request.scope, "worker");
		break;
	case WIRE_CTL_VIP_LIST_REQUEST:
		strcpy(m->vip_list_request.name, "web");
		m->vip_list_request.backends = true;
		m->vip_list_request.stats = true;
		m->vip_list_request.cursor = 1000;
		break;
	case WIRE_CTL_BACKEND_SET:
		strcpy(m->backend_set.vip, "web");
		m->backend_set.family = AF_INET6;
		addr_fill(AF_INET6, m->backend_set.backend);
		m->backend_set.action = WIRE_BACKEND_SET_WEIGHT;
		m->backend_set.weight = 250;
		break;
	case WIRE_CTL_RELOAD_REQUEST:
		m->reload_request.check_only = true;
		break;
	case WIRE_CTL_RELOAD_RESULT:
		strcpy(m->reload_result.error, "maglb.conf:12: unknown key 'foo'");
		break;
	case WIRE_CTL_FLOW_LOOKUP_REQUEST:
		flow_v4(&m->lookup_key);
		m->lookup_key.backend_family = 0;
		memset(m->lookup_key.backend, 0, WIRE_ADDR_MAX);
		m->lookup_key.lifetime_ms = m->lookup_key.flags = 0;
		break;
	case WIRE_CTL_FLOW_LOOKUP_RESPONSE:
		m->lookup.table = WIRE_FLOW_TABLE_WORKER;
		m->lookup.worker = 1;
		flow_v6(&m->lookup.flow);
		break;
	case WIRE_CTL_DUMP_REQUEST:
		m->dump_request.cursor = 77;
		m->dump_request.limit = 100;
		break;
	case WIRE_CTL_EXPORT_SUBSCRIBE:
		m->export_subscribe.enable = true;
		break;
	case WIRE_CTL_CLUSTER_STANDBY:
		m->cluster_standby.on = true;
		break;
	case WIRE_CTL_HEALTH_STATUS_REQUEST:
		m->health_status_request.cursor = 1024;
		break;
	case WIRE_CTL_ERROR:
		m->error.code = ENOENT;
		strcpy(m->error.message, "no such vip");
		break;
	default:
		ctl_sample_arrays(m);
		break;
	}
}

static void
ctl_sample(enum wire_ctl_kind kind, struct wire_ctl_msg *m)
{
	rng_seed(0xc0de0000 + kind);
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->request_id = 1000 + kind;
	ctl_sample_body(m);
}

static void
sync_group_assert_eq(const struct wire_ctl_sync_group *x,
		     const struct wire_ctl_sync_group *y)
{
	ck_assert_str_eq(x->name, y->name);
	ck_assert_str_eq(x->state, y->state);
	ck_assert_uint_eq(x->n_members, y->n_members);
	ck_assert_mem_eq(x->members, y->members, x->n_members * sizeof(x->members[0]));
	ck_assert_uint_eq(x->donor, y->donor);
	ck_assert_uint_eq(x->entries_own, y->entries_own);
	ck_assert_uint_eq(x->entries_peers, y->entries_peers);
	ck_assert_uint_eq(x->digest, y->digest);
	ck_assert_uint_eq(x->send_queue, y->send_queue);
	ck_assert_uint_eq(x->entries_sent, y->entries_sent);
	ck_assert_uint_eq(x->entries_received, y->entries_received);
	ck_assert_uint_eq(x->imported, y->imported);
	ck_assert_uint_eq(x->rejected, y->rejected);
	ck_assert_uint_eq(x->dropped, y->dropped);
	ck_assert_uint_eq(x->resyncs, y->resyncs);
	ck_assert_uint_eq(x->resync_last_ms, y->resync_last_ms);
	ck_assert_uint_eq(x->resync_entries_received, y->resync_entries_received);
	ck_assert_uint_eq(x->self_lag_p50_us, y->self_lag_p50_us);
	ck_assert_uint_eq(x->self_lag_p99_us, y->self_lag_p99_us);
	ck_assert_uint_eq(x->import_lag_p50_us, y->import_lag_p50_us);
	ck_assert_uint_eq(x->import_lag_p99_us, y->import_lag_p99_us);
	ck_assert_mem_eq(&x->self_lag, &y->self_lag, sizeof(x->self_lag));
	ck_assert_mem_eq(&x->import_lag, &y->import_lag, sizeof(x->import_lag));
}

static void
health_status_assert_eq(const struct wire_ctl_health_status *a,
			const struct wire_ctl_health_status *b)
{
	ck_assert_uint_eq(a->node_id, b->node_id);
	ck_assert_uint_eq(a->targets_total, b->targets_total);
	ck_assert_uint_eq(a->next_cursor, b->next_cursor);
	ck_assert_uint_eq(a->probes, b->probes);
	ck_assert_uint_eq(a->failures, b->failures);
	ck_assert_mem_eq(&a->probe_duration, &b->probe_duration, sizeof(a->probe_duration));
	ck_assert_uint_eq(a->n_targets, b->n_targets);
	for (size_t i = 0; i < a->n_targets; i++) {
		const struct wire_ctl_health_target *x = &a->targets[i], *y = &b->targets[i];

		ck_assert_str_eq(x->vip, y->vip);
		ck_assert_uint_eq(x->family, y->family);
		ck_assert_mem_eq(x->backend, y->backend, WIRE_ADDR_MAX);
		ck_assert_int_eq(x->local_up, y->local_up);
		ck_assert_int_eq(x->agreed_up, y->agreed_up);
		ck_assert_uint_eq(x->n_down_by, y->n_down_by);
		ck_assert_mem_eq(x->down_by, y->down_by, x->n_down_by * sizeof(x->down_by[0]));
		ck_assert_uint_eq(x->probes, y->probes);
		ck_assert_uint_eq(x->failures, y->failures);
		ck_assert_uint_eq(x->last_duration_us, y->last_duration_us);
	}
}

static void
sync_status_assert_eq(const struct wire_ctl_sync_status *a,
		      const struct wire_ctl_sync_status *b)
{
	ck_assert_uint_eq(a->node_id, b->node_id);
	ck_assert_int_eq(a->synced, b->synced);
	ck_assert_int_eq(a->dataplane_connected, b->dataplane_connected);
	ck_assert_int_eq(a->dataplane_synced, b->dataplane_synced);
	ck_assert_uint_eq(a->entries, b->entries);
	ck_assert_uint_eq(a->cache_bytes, b->cache_bytes);
	ck_assert_uint_eq(a->import_queue, b->import_queue);
	ck_assert_uint_eq(a->export_entries, b->export_entries);
	ck_assert_uint_eq(a->n_groups, b->n_groups);
	for (size_t i = 0; i < a->n_groups; i++)
		sync_group_assert_eq(&a->groups[i], &b->groups[i]);
	ck_assert_uint_eq(a->n_drops, b->n_drops);
	for (size_t i = 0; i < a->n_drops; i++) {
		ck_assert_str_eq(a->drops[i].group, b->drops[i].group);
		ck_assert_str_eq(a->drops[i].reason, b->drops[i].reason);
		ck_assert_uint_eq(a->drops[i].count, b->drops[i].count);
	}
}

/* A session's fields but its addresses, compared as numbers. */
#define BFD_SESSION_NUMBERS(X) \
	X(family) X(state) X(local_diag) X(remote_diag) X(local_discriminator) \
	X(remote_discriminator) X(tx_interval_us) X(detect_time_us) X(multiplier) \
	X(remote_multiplier) X(state_age_ms) X(packets_in) X(packets_out) \
	X(state_changes) X(authenticated)
#define BFD_SESSION_ASSERT_EQ_(field) ck_assert_uint_eq(x->field, y->field);

static void
bfd_session_assert_eq(const struct wire_ctl_bfd_session *x,
		      const struct wire_ctl_bfd_session *y)
{
	ck_assert_mem_eq(x->peer, y->peer, WIRE_ADDR_MAX);
	ck_assert_mem_eq(x->local, y->local, WIRE_ADDR_MAX);
	BFD_SESSION_NUMBERS(BFD_SESSION_ASSERT_EQ_)
}

#undef BFD_SESSION_ASSERT_EQ_
#undef BFD_SESSION_NUMBERS

static void
bfd_status_assert_eq(const struct wire_ctl_bfd_status *a,
		     const struct wire_ctl_bfd_status *b)
{
	ck_assert_int_eq(a->serving, b->serving);
	ck_assert_uint_eq(a->n_sessions, b->n_sessions);
	for (size_t i = 0; i < a->n_sessions; i++)
		bfd_session_assert_eq(&a->sessions[i], &b->sessions[i]);
	ck_assert_uint_eq(a->n_drops, b->n_drops);
	/* A reason NUL-padded (wire_string_copy() and the samples) and a count. */
	static_assert(sizeof(*a->drops) == WIRE_NAME_MAX + sizeof(uint64_t), "no padding");
	if (a->n_drops > 0)
		ck_assert_mem_eq(a->drops, b->drops, a->n_drops * sizeof(*a->drops));
}

static void
cluster_assert_eq(const struct wire_ctl_cluster *a,
		  const struct wire_ctl_cluster *b)
{
	ck_assert_uint_eq(a->node_id, b->node_id);
	ck_assert_int_eq(a->mode, b->mode);
	ck_assert_int_eq(a->preempt, b->preempt);
	ck_assert_int_eq(a->quorate, b->quorate);
	ck_assert_int_eq(a->role, b->role);
	ck_assert_int_eq(a->eligible, b->eligible);
	ck_assert_int_eq(a->standby, b->standby);
	ck_assert_uint_eq(a->role_changes, b->role_changes);
	ck_assert_uint_eq(a->last_change_unix_ms, b->last_change_unix_ms);
	ck_assert_uint_eq(a->lease_ms, b->lease_ms);
	ck_assert_uint_eq(a->count, b->count);
	for (size_t i = 0; i < a->count; i++) {
		const struct wire_ctl_cluster_member *x = &a->members[i];
		const struct wire_ctl_cluster_member *y = &b->members[i];

		ck_assert_uint_eq(x->id, y->id);
		ck_assert_int_eq(x->role, y->role);
		ck_assert_uint_eq(x->priority, y->priority);
		ck_assert_int_eq(x->known, y->known);
		ck_assert_int_eq(x->eligible, y->eligible);
		ck_assert_int_eq(x->dataplane, y->dataplane);
		ck_assert_int_eq(x->synced, y->synced);
		ck_assert_int_eq(x->quorate, y->quorate);
		ck_assert_int_eq(x->standby, y->standby);
	}
}

static void
vip_list_assert_eq(const struct wire_ctl_vip_list *a, const struct wire_ctl_vip_list *b)
{
	ck_assert_uint_eq(a->n_vips, b->n_vips);
	ck_assert_uint_eq(a->n_backends, b->n_backends);
	ck_assert_uint_eq(a->next_cursor, b->next_cursor);
	for (size_t i = 0; i < a->n_vips; i++) {
		const struct wire_ctl_vip *x = &a->vips[i];
		const struct wire_ctl_vip *y = &b->vips[i];

		ck_assert_str_eq(x->name, y->name);
		ck_assert_uint_eq(x->family, y->family);
		ck_assert_uint_eq(x->proto, y->proto);
		ck_assert_uint_eq(x->port, y->port);
		ck_assert_mem_eq(x->address, y->address, WIRE_ADDR_MAX);
		ck_assert_int_eq(x->owned, y->owned);
		ck_assert_uint_eq(x->backends_up, y->backends_up);
		ck_assert_uint_eq(x->flows, y->flows);
		ck_assert_uint_eq(x->maglev_digest, y->maglev_digest);
		ck_assert_uint_eq(x->table_size, y->table_size);
		ck_assert_mem_eq(&x->traffic, &y->traffic, sizeof(x->traffic));
	}
	for (size_t i = 0; i < a->n_backends; i++) {
		const struct wire_ctl_backend *x = &a->backends[i];
		const struct wire_ctl_backend *y = &b->backends[i];

		ck_assert_str_eq(x->vip, y->vip);
		ck_assert_uint_eq(x->family, y->family);
		ck_assert_mem_eq(x->address, y->address, WIRE_ADDR_MAX);
		ck_assert_uint_eq(x->weight, y->weight);
		ck_assert_int_eq(x->state, y->state);
		ck_assert_int_eq(x->next_hop_resolved, y->next_hop_resolved);
		ck_assert_mem_eq(x->next_hop_mac, y->next_hop_mac, WIRE_MAC_LEN);
		ck_assert_uint_eq(x->config_weight, y->config_weight);
		ck_assert_uint_eq(x->maglev_slots, y->maglev_slots);
		ck_assert_uint_eq(x->flows, y->flows);
		ck_assert_mem_eq(&x->traffic, &y->traffic, sizeof(x->traffic));
	}
}

/* Array fields of decoded messages, element by element. */
static void
ctl_assert_arrays_eq(const struct wire_ctl_msg *a,
		     const struct wire_ctl_msg *b)
{
	switch (a->kind) {
	case WIRE_CTL_COUNTERS_RESPONSE:
		ck_assert_uint_eq(a->counters.count, b->counters.count);
		for (size_t i = 0; i < a->counters.count; i++) {
			ck_assert_str_eq(a->counters.counters[i].scope,
					 b->counters.counters[i].scope);
			ck_assert_str_eq(a->counters.counters[i].name,
					 b->counters.counters[i].name);
			ck_assert_uint_eq(a->counters.counters[i].value,
					  b->counters.counters[i].value);
		}
		break;
	case WIRE_CTL_VIP_LIST_RESPONSE:
		vip_list_assert_eq(&a->vip_list, &b->vip_list);
		break;
	case WIRE_CTL_OWNERSHIP_SET:
		ck_assert_uint_eq(a->ownership.count, b->ownership.count);
		ck_assert_int_eq(a->ownership.announce, b->ownership.announce);
		ck_assert_uint_eq(a->ownership.lease_ms, b->ownership.lease_ms);
		for (size_t i = 0; i < a->ownership.count; i++) {
			ck_assert_str_eq(a->ownership.vips[i].vip,
					 b->ownership.vips[i].vip);
			ck_assert_int_eq(a->ownership.vips[i].owned,
					 b->ownership.vips[i].owned);
		}
		break;
	case WIRE_CTL_DUMP_RESPONSE:
		ck_assert_uint_eq(a->dump.count, b->dump.count);
		ck_assert_uint_eq(a->dump.next_cursor, b->dump.next_cursor);
		for (size_t i = 0; i < a->dump.count; i++)
			flow_assert_eq(&a->dump.entries[i], &b->dump.entries[i]);
		break;
	case WIRE_CTL_EXPORT_BATCH:
	case WIRE_CTL_IMPORT_BATCH:
		ck_assert_int_eq(a->flows.event, b->flows.event);
		ck_assert_uint_eq(a->flows.count, b->flows.count);
		ck_assert_uint_eq(a->flows.dropped, b->flows.dropped);
		ck_assert_uint_eq(a->flows.peer, b->flows.peer);
		for (size_t i = 0; i < a->flows.count; i++)
			flow_assert_eq(&a->flows.entries[i], &b->flows.entries[i]);
		break;
	case WIRE_CTL_SYNC_VERIFY_RESULT:
		ck_assert_str_eq(a->sync_verify.group, b->sync_verify.group);
		ck_assert_uint_eq(a->sync_verify.round, b->sync_verify.round);
		ck_assert_uint_eq(a->sync_verify.members, b->sync_verify.members);
		ck_assert_uint_eq(a->sync_verify.count, b->sync_verify.count);
		for (size_t i = 0; i < a->sync_verify.count; i++) {
			ck_assert_uint_eq(a->sync_verify.digests[i].node,
					  b->sync_verify.digests[i].node);
			ck_assert_uint_eq(a->sync_verify.digests[i].entry_count,
					  b->sync_verify.digests[i].entry_count);
			ck_assert_uint_eq(a->sync_verify.digests[i].digest,
					  b->sync_verify.digests[i].digest);
			ck_assert_uint_eq(a->sync_verify.digests[i].maglev_digest,
					  b->sync_verify.digests[i].maglev_digest);
		}
		break;
	case WIRE_CTL_CLUSTER_STATUS:
		cluster_assert_eq(&a->cluster, &b->cluster);
		break;
	case WIRE_CTL_SYNC_STATUS:
		sync_status_assert_eq(&a->sync_status, &b->sync_status);
		break;
	case WIRE_CTL_BFD_STATUS:
		bfd_status_assert_eq(&a->bfd_status, &b->bfd_status);
		break;
	case WIRE_CTL_HEALTH_STATUS:
		health_status_assert_eq(&a->health_status, &b->health_status);
		break;
	default:
		break;
	}
}

/* Bodies without arrays: field by field. */
static void
ctl_assert_eq(const struct wire_ctl_msg *a,
	      const struct wire_ctl_msg *b)
{
	ck_assert_int_eq(a->kind, b->kind);
	ck_assert_uint_eq(a->request_id, b->request_id);
	switch (a->kind) {
	case WIRE_CTL_STATUS_RESPONSE:
		ck_assert_uint_eq(a->status.node_id, b->status.node_id);
		ck_assert_uint_eq(a->status.workers, b->status.workers);
		ck_assert_uint_eq(a->status.ports, b->status.ports);
		ck_assert_uint_eq(a->status.vips, b->status.vips);
		ck_assert_uint_eq(a->status.vips_owned, b->status.vips_owned);
		ck_assert_uint_eq(a->status.uptime_ms, b->status.uptime_ms);
		ck_assert_uint_eq(a->status.flows_local, b->status.flows_local);
		ck_assert_uint_eq(a->status.flows_synced, b->status.flows_synced);
		ck_assert_uint_eq(a->status.maglev_digest, b->status.maglev_digest);
		ck_assert(a->status.serving == b->status.serving);
		ck_assert_uint_eq(a->status.serving_lease_remaining_ms,
				  b->status.serving_lease_remaining_ms);
		break;
	case WIRE_CTL_COUNTERS_REQUEST:
		ck_assert_str_eq(a->counters_request.scope, b->counters_request.scope);
		break;
	case WIRE_CTL_VIP_LIST_REQUEST:
		ck_assert_str_eq(a->vip_list_request.name, b->vip_list_request.name);
		ck_assert_int_eq(a->vip_list_request.backends,
				 b->vip_list_request.backends);
		ck_assert_int_eq(a->vip_list_request.stats, b->vip_list_request.stats);
		ck_assert_uint_eq(a->vip_list_request.cursor, b->vip_list_request.cursor);
		break;
	case WIRE_CTL_BACKEND_SET:
		ck_assert_str_eq(a->backend_set.vip, b->backend_set.vip);
		ck_assert_uint_eq(a->backend_set.family, b->backend_set.family);
		ck_assert_mem_eq(a->backend_set.backend, b->backend_set.backend,
				 WIRE_ADDR_MAX);
		ck_assert_int_eq(a->backend_set.action, b->backend_set.action);
		ck_assert_uint_eq(a->backend_set.weight, b->backend_set.weight);
		break;
	case WIRE_CTL_RELOAD_REQUEST:
		ck_assert_int_eq(a->reload_request.check_only,
				 b->reload_request.check_only);
		break;
	case WIRE_CTL_RELOAD_RESULT:
		ck_assert_int_eq(a->reload_result.ok, b->reload_result.ok);
		ck_assert_str_eq(a->reload_result.error, b->reload_result.error);
		break;
	case WIRE_CTL_FLOW_LOOKUP_REQUEST:
		flow_assert_eq(&a->lookup_key, &b->lookup_key);
		break;
	case WIRE_CTL_FLOW_LOOKUP_RESPONSE:
		ck_assert_int_eq(a->lookup.table, b->lookup.table);
		ck_assert_uint_eq(a->lookup.worker, b->lookup.worker);
		flow_assert_eq(&a->lookup.flow, &b->lookup.flow);
		break;
	case WIRE_CTL_DUMP_REQUEST:
		ck_assert_uint_eq(a->dump_request.cursor, b->dump_request.cursor);
		ck_assert_uint_eq(a->dump_request.limit, b->dump_request.limit);
		ck_assert_str_eq(a->dump_request.vip, b->dump_request.vip);
		break;
	case WIRE_CTL_EXPORT_SUBSCRIBE:
		ck_assert_int_eq(a->export_subscribe.enable,
				 b->export_subscribe.enable);
		break;
	case WIRE_CTL_CLUSTER_STANDBY:
		ck_assert_int_eq(a->cluster_standby.on, b->cluster_standby.on);
		break;
	case WIRE_CTL_HEALTH_STATUS_REQUEST:
		ck_assert_uint_eq(a->health_status_request.cursor,
				  b->health_status_request.cursor);
		break;
	case WIRE_CTL_ERROR:
		ck_assert_int_eq(a->error.code, b->error.code);
		ck_assert_str_eq(a->error.message, b->error.message);
		break;
	default:
		ctl_assert_arrays_eq(a, b);
		break;
	}
}

static size_t
ctl_encode(const struct wire_ctl_msg *m, uint8_t *buf, size_t len)
{
	size_t out = 0;

	ck_assert_int_eq(wire_ctl_encode(m, buf, len, &out), 0);
	ck_assert_uint_eq(out, wire_ctl_encoded_size(m));
	return out;
}

START_TEST(test_ctl_roundtrip_kind)
{
	static uint8_t buf[16384], again[16384];
	struct wire_counters c = { { 0 } };
	struct wire_ctl_msg m, out;
	size_t len;

	ctl_sample((enum wire_ctl_kind)_i, &m);
	len = ctl_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(wire_ctl_decode(buf, len, &out, &c), 0);
	ck_assert_uint_eq(drops_total(&c), 0);
	ck_assert_uint_eq(out.version, WIRE_VERSION);
	ctl_assert_eq(&m, &out);
	/* and what was decoded encodes to the same bytes */
	ck_assert_uint_eq(ctl_encode(&out, again, sizeof(again)), len);
	ck_assert_mem_eq(buf, again, len);
	wire_ctl_msg_free(&out);
	ck_assert_int_eq(out.kind, 0);
	ck_assert_ptr_null(out.counters.counters);
}
END_TEST

START_TEST(test_ctl_empty_arrays)
{
	struct wire_counters c = { { 0 } };
	struct wire_ctl_msg m, out;
	uint8_t buf[64];
	size_t len;

	memset(&m, 0, sizeof(m));
	m.kind = WIRE_CTL_DUMP_RESPONSE;
	len = ctl_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(wire_ctl_decode(buf, len, &out, &c), 0);
	ck_assert_uint_eq(out.dump.count, 0);
	ck_assert_ptr_null(out.dump.entries);
	wire_ctl_msg_free(&out);
	wire_ctl_msg_free(NULL);
}
END_TEST

START_TEST(test_ctl_enospc)
{
	uint8_t buf[16];
	struct wire_ctl_msg m;
	size_t len = 0;

	ctl_sample(WIRE_CTL_RELOAD_RESULT, &m);
	ck_assert_uint_gt(wire_ctl_encoded_size(&m), sizeof(buf));
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -ENOSPC);
	ck_assert_uint_eq(len, wire_ctl_encoded_size(&m));
}
END_TEST

START_TEST(test_ctl_encode_invalid)
{
	struct wire_ctl_msg m;
	uint8_t buf[4096];
	size_t len;

	ctl_sample(WIRE_CTL_COUNTERS_REQUEST, &m);
	memset(m.counters_request.scope, 'x', WIRE_NAME_MAX);  /* no NUL */
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_BACKEND_SET, &m);
	m.backend_set.action = WIRE_BACKEND_ACTION_MAX;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_VIP_LIST_RESPONSE, &m);
	sample_vips[1].proto = IPPROTO_ICMP;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_EXPORT_BATCH, &m);
	m.flows.entries = NULL;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_CLUSTER_STATUS, &m);
	m.cluster.role = WIRE_ROLE_UNSPECIFIED;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_CLUSTER_STATUS, &m);
	m.cluster.mode = WIRE_CLUSTER_MODE_MAX;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_CLUSTER_STATUS, &m);
	sample_members[0].role = WIRE_ROLE_UNSPECIFIED;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_CLUSTER_STATUS, &m);
	m.cluster.members = NULL;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	m.sync_status.node_id = 0;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	sample_groups[1].n_members = WIRE_SYNC_MEMBERS_MAX + 1;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	sample_groups[0].members[1] = 0;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	memset(sample_drops[0].reason, 'r', WIRE_NAME_MAX);      /* no NUL */
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	m.sync_status.groups = NULL;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	sample_groups[0].self_lag.cumulative[WIRE_LAG_BUCKETS - 1] = 2;  /* decreases */
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_SYNC_STATUS, &m);
	sample_groups[0].import_lag.count = 4;          /* below the last bound's */
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ctl_sample(WIRE_CTL_ERROR, &m);
	m.kind = WIRE_CTL_KIND_MAX;
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_uint_eq(wire_ctl_encoded_size(&m), 0);
}
END_TEST

/* Ways to spoil the sample BFD status: the encoder refuses each. */
enum {
	BFD_BAD_FAMILY, BFD_BAD_STATE, BFD_BAD_LOCAL_DIAG, BFD_BAD_REMOTE_DIAG,
	BFD_BAD_REASON, BFD_NO_DROPS, BFD_NO_SESSIONS, BFD_BAD_MAX
};

START_TEST(test_ctl_bfd_encode_invalid)
{
	struct wire_ctl_msg m;
	uint8_t buf[4096];
	size_t len;

	ctl_sample(WIRE_CTL_BFD_STATUS, &m);
	switch (_i) {
	case BFD_BAD_FAMILY: sample_bfd_sessions[1].family = 0; break;
	case BFD_BAD_STATE: sample_bfd_sessions[0].state = WIRE_BFD_STATE_MAX; break;
	case BFD_BAD_LOCAL_DIAG: sample_bfd_sessions[0].local_diag = WIRE_BFD_DIAG_MAX; break;
	case BFD_BAD_REMOTE_DIAG: sample_bfd_sessions[1].remote_diag = WIRE_BFD_DIAG_MAX; break;
	case BFD_BAD_REASON: memset(sample_bfd_drops[0].reason, 'r', WIRE_NAME_MAX); break;
	case BFD_NO_DROPS: m.bfd_status.drops = NULL; break;
	default: m.bfd_status.sessions = NULL; break;
	}
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_uint_eq(wire_ctl_encoded_size(&m), 0);
}
END_TEST

/* ------------------------------------------------ control: bad input */

enum {
	CTL_BODY_COUNTERS_REQUEST = 12,  /* Envelope field numbers */
	CTL_BODY_VIP_LIST_RESPONSE = 15,
	CTL_BODY_BACKEND_SET = 16,
	CTL_BODY_FLOW_LOOKUP_REQUEST = 20,
	CTL_BODY_EXPORT_BATCH = 25,
	CTL_FLOW_BATCH_ENTRIES = 5,     /* FlowBatch.entries */
	CTL_BODY_STATUS_RESPONSE = 11,
	CTL_BODY_OWNERSHIP_SET = 19,
	CTL_BODY_SYNC_VERIFY_RESULT = 29,
	CTL_BODY_CLUSTER_REQUEST = 30,
	CTL_BODY_CLUSTER_STATUS = 31,
	CTL_BODY_CLUSTER_STANDBY = 32,
	CTL_BODY_SYNC_STATUS_REQUEST = 33,
	CTL_BODY_SYNC_STATUS = 34,
	CTL_BODY_BFD_STATUS_REQUEST = 35,
	CTL_BODY_BFD_STATUS = 36,
	CTL_BODY_UNKNOWN = 99,
};

static void
pbw_ctl(struct pbw *w, uint64_t version, unsigned int body_field,
	const struct pbw *body)
{
	w->len = 0;
	pbw_uint(w, 1, version);
	pbw_uint(w, 2, 5);
	pbw_message(w, body_field, body);
}

static void
ctl_expect_drop(const struct pbw *w, enum wire_drop why)
{
	struct wire_counters c = { { 0 } };
	struct wire_ctl_msg m, before;

	memset(&m, 0xa5, sizeof(m));
	memcpy(&before, &m, sizeof(m));
	ck_assert_int_lt(wire_ctl_decode(w->buf, w->len, &m, &c), 0);
	assert_one_drop(&c, why);
	ck_assert_mem_eq(&m, &before, sizeof(m));
}

START_TEST(test_ctl_bad_version)
{
	struct pbw body = { .len = 0 }, w;

	pbw_ctl(&w, WIRE_VERSION + 1, CTL_BODY_COUNTERS_REQUEST, &body);
	ctl_expect_drop(&w, WIRE_DROP_BAD_VERSION);
	pbw_ctl(&w, 1, CTL_BODY_COUNTERS_REQUEST, &body);     /* entries as Flows */
	ctl_expect_drop(&w, WIRE_DROP_BAD_VERSION);
}
END_TEST

START_TEST(test_ctl_unknown_kind)
{
	struct pbw body = { .len = 0 }, w;

	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_UNKNOWN, &body);
	ctl_expect_drop(&w, WIRE_DROP_UNKNOWN_KIND);
}
END_TEST

START_TEST(test_ctl_bad_string)
{
	char scope[WIRE_NAME_MAX];
	struct pbw body = { .len = 0 }, w;

	memset(scope, 'x', sizeof(scope));
	pbw_bytes(&body, 1, scope, sizeof(scope));
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_COUNTERS_REQUEST, &body);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);
}
END_TEST

START_TEST(test_ctl_bad_enum)
{
	static const uint8_t addr[4] = { 198, 18, 0, 7 };
	struct pbw body = { .len = 0 }, w;

	pbw_bytes(&body, 1, "web", 3);
	pbw_bytes(&body, 2, addr, sizeof(addr));
	pbw_uint(&body, 3, 9);      /* no such action */
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_BACKEND_SET, &body);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
	body.len = 0;
	pbw_bytes(&body, 1, "web", 3);
	pbw_bytes(&body, 2, addr, sizeof(addr));  /* action left unspecified */
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_BACKEND_SET, &body);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
}
END_TEST

START_TEST(test_ctl_bad_flows)
{
	struct raw_flow f = raw_flow_ok;
	struct pbw body = { .len = 0 }, w;

	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_FLOW_LOOKUP_REQUEST, &body);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ADDRESS);     /* no key */
	f.vip_len = f.client_len = 5;
	pbw_flow(&body, 1, &f);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_FLOW_LOOKUP_REQUEST, &body);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ADDRESS);
	body.len = 0;
	{
		struct raw_flow two[2] = { raw_flow_ok, raw_flow_ok };

		two[1].proto = IPPROTO_ICMP;
		pbw_uint(&body, 1, 1);      /* event NEW */
		pbw_entries(&body, CTL_FLOW_BATCH_ENTRIES, two, 2, 2);
		pbw_ctl(&w, WIRE_VERSION, CTL_BODY_EXPORT_BATCH, &body);
		ctl_expect_drop(&w, WIRE_DROP_BAD_PROTOCOL);
		body.len = 0;
		pbw_uint(&body, 1, 1);
		pbw_entries(&body, CTL_FLOW_BATCH_ENTRIES, two, 1, 2);   /* columns short */
		pbw_ctl(&w, WIRE_VERSION, CTL_BODY_EXPORT_BATCH, &body);
		ctl_expect_drop(&w, WIRE_DROP_TRUNCATED);
	}
}
END_TEST

/* A VIP list with one backend whose next-hop MAC has mac_len bytes. */
static void
pbw_backend_mac(struct pbw *w, size_t mac_len)
{
	static const uint8_t addr[4] = { 198, 18, 2, 11 };
	static const uint8_t mac[8] = { 2, 0, 0, 0, 0, 1, 0, 0 };
	struct pbw backend = { .len = 0 }, body = { .len = 0 };

	pbw_bytes(&backend, 1, "web", 3);
	pbw_bytes(&backend, 2, addr, sizeof(addr));
	pbw_uint(&backend, 4, 1);   /* up */
	pbw_bytes(&backend, 5, mac, mac_len);
	pbw_message(&body, 2, &backend);
	pbw_ctl(w, WIRE_VERSION, CTL_BODY_VIP_LIST_RESPONSE, &body);
}

/* A next-hop MAC of 6 bytes or none is fine; any other length is refused. */
START_TEST(test_ctl_next_hop_mac)
{
	static const size_t bad[] = { 1, 5, 7, 8 };
	struct wire_counters c = { { 0 } };
	struct wire_ctl_msg m;
	struct pbw w;

	pbw_backend_mac(&w, WIRE_MAC_LEN);
	ck_assert_int_eq(wire_ctl_decode(w.buf, w.len, &m, &c), 0);
	ck_assert_uint_eq(m.vip_list.n_backends, 1);
	ck_assert(m.vip_list.backends[0].next_hop_resolved);
	ck_assert_mem_eq(m.vip_list.backends[0].next_hop_mac,
			 ((const uint8_t[WIRE_MAC_LEN]){ 2, 0, 0, 0, 0, 1 }), WIRE_MAC_LEN);
	wire_ctl_msg_free(&m);
	pbw_backend_mac(&w, 0);
	ck_assert_int_eq(wire_ctl_decode(w.buf, w.len, &m, &c), 0);
	ck_assert(!m.vip_list.backends[0].next_hop_resolved);
	wire_ctl_msg_free(&m);
	ck_assert_uint_eq(drops_total(&c), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pbw_backend_mac(&w, bad[i]);
		ctl_expect_drop(&w, WIRE_DROP_BAD_ADDRESS);
	}
}
END_TEST

/* Decode w, expecting success and no drop; wire_ctl_msg_free() m after. */
static void
ctl_decode_ok(const struct pbw *w, struct wire_ctl_msg *m)
{
	struct wire_counters c = { { 0 } };

	ck_assert_int_eq(wire_ctl_decode(w->buf, w->len, m, &c), 0);
	ck_assert_uint_eq(drops_total(&c), 0);
}

/* The new fields by control.proto's numbers. */
START_TEST(test_ctl_raw_lease_and_digests)
{
	struct pbw body = { .len = 0 }, item = { .len = 0 }, w;
	struct wire_ctl_msg m;

	pbw_bytes(&item, 1, "web", 3);
	pbw_uint(&item, 2, 1);
	pbw_message(&body, 1, &item);
	pbw_uint(&body, 2, 1);
	pbw_uint(&body, 3, 2500);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_OWNERSHIP_SET, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_OWNERSHIP_SET);
	ck_assert_uint_eq(m.ownership.lease_ms, 2500);
	ck_assert(m.ownership.announce);
	ck_assert_uint_eq(m.ownership.count, 1);
	wire_ctl_msg_free(&m);

	body.len = 0;
	pbw_uint(&body, 1, 3);
	pbw_fixed64(&body, 9, 0xfeedfacecafebeefull);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_STATUS_RESPONSE, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_uint_eq(m.status.maglev_digest, 0xfeedfacecafebeefull);

	body.len = 0;
	item.len = 0;
	pbw_bytes(&item, 1, "web", 3);
	pbw_bytes(&item, 2, (const uint8_t[4]){ 198, 18, 0, 1 }, 4);
	pbw_uint(&item, 4, IPPROTO_TCP);
	pbw_fixed64(&item, 9, 42);
	pbw_message(&body, 1, &item);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_VIP_LIST_RESPONSE, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_uint_eq(m.vip_list.n_vips, 1);
	ck_assert_uint_eq(m.vip_list.vips[0].maglev_digest, 42);
	wire_ctl_msg_free(&m);

	body.len = 0;
	item.len = 0;
	pbw_uint(&item, 1, 2);
	pbw_fixed64(&item, 4, UINT64_MAX);
	pbw_bytes(&body, 1, "default", 7);
	pbw_uint(&body, 2, 1);
	pbw_message(&body, 4, &item);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_SYNC_VERIFY_RESULT, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_uint_eq(m.sync_verify.count, 1);
	ck_assert_uint_eq(m.sync_verify.digests[0].maglev_digest, UINT64_MAX);
	wire_ctl_msg_free(&m);
}
END_TEST

/* A ClusterMember by control.proto's numbers, the flags all set. */
static void
pbw_member(struct pbw *w, uint64_t id, uint64_t role, bool known)
{
	struct pbw m = { .len = 0 };

	pbw_uint(&m, 1, id);
	pbw_uint(&m, 2, role);
	pbw_uint(&m, 3, 77);
	pbw_uint(&m, 4, known);
	for (unsigned int field = 5; field <= 9; field++)
		pbw_uint(&m, field, 1);
	pbw_message(w, 11, &m);
}

/* A ClusterStatus of node_id, role and mode, with the members in members. */
static void
pbw_cluster(struct pbw *w, uint64_t node_id, uint64_t role,
	    uint64_t mode, const struct pbw *members)
{
	struct pbw body = { .len = 0 };

	pbw_uint(&body, 1, node_id);
	pbw_uint(&body, 2, mode);
	pbw_uint(&body, 3, 1);
	pbw_uint(&body, 4, 1);
	pbw_uint(&body, 5, role);
	pbw_uint(&body, 6, 1);
	pbw_uint(&body, 7, 1);
	pbw_uint(&body, 8, 12);
	pbw_uint(&body, 9, 1764547200123ull);
	pbw_uint(&body, 10, 3000);
	memcpy(body.buf + body.len, members->buf, members->len);
	body.len += members->len;
	pbw_ctl(w, WIRE_VERSION, CTL_BODY_CLUSTER_STATUS, &body);
}

START_TEST(test_ctl_cluster_raw)
{
	struct pbw members = { .len = 0 }, body = { .len = 0 }, w;
	const struct wire_ctl_cluster_member *x;
	struct wire_ctl_msg m;

	pbw_member(&members, 1, WIRE_ROLE_ACTIVE, true);
	pbw_member(&members, 3, 0, false);     /* not heard: no role */
	pbw_cluster(&w, 2, WIRE_ROLE_PASSIVE, WIRE_CLUSTER_MODE_ACTIVE_ACTIVE,
		    &members);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_CLUSTER_STATUS);
	ck_assert_uint_eq(m.cluster.node_id, 2);
	ck_assert_int_eq(m.cluster.mode, WIRE_CLUSTER_MODE_ACTIVE_ACTIVE);
	ck_assert(m.cluster.preempt && m.cluster.quorate);
	ck_assert_int_eq(m.cluster.role, WIRE_ROLE_PASSIVE);
	ck_assert(m.cluster.eligible && m.cluster.standby);
	ck_assert_uint_eq(m.cluster.role_changes, 12);
	ck_assert_uint_eq(m.cluster.last_change_unix_ms, 1764547200123ull);
	ck_assert_uint_eq(m.cluster.lease_ms, 3000);
	ck_assert_uint_eq(m.cluster.count, 2);
	x = &m.cluster.members[0];
	ck_assert_uint_eq(x->id, 1);
	ck_assert_int_eq(x->role, WIRE_ROLE_ACTIVE);
	ck_assert_uint_eq(x->priority, 77);
	ck_assert(x->known && x->eligible && x->dataplane && x->synced &&
		  x->quorate && x->standby);
	ck_assert(!m.cluster.members[1].known);
	ck_assert_int_eq(m.cluster.members[1].role, WIRE_ROLE_UNSPECIFIED);
	wire_ctl_msg_free(&m);

	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_CLUSTER_REQUEST, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_CLUSTER_REQUEST);
	pbw_uint(&body, 1, 1);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_CLUSTER_STANDBY, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_CLUSTER_STANDBY);
	ck_assert(m.cluster_standby.on);
}
END_TEST

START_TEST(test_ctl_cluster_bad)
{
	struct pbw members = { .len = 0 }, w;

	pbw_cluster(&w, 0, WIRE_ROLE_ACTIVE, WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
		    &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_SENDER);
	pbw_cluster(&w, 1, 0, WIRE_CLUSTER_MODE_ACTIVE_PASSIVE, &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
	pbw_cluster(&w, 1, 3, WIRE_CLUSTER_MODE_ACTIVE_PASSIVE, &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
	pbw_cluster(&w, 1, WIRE_ROLE_ACTIVE, 0, &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
	pbw_cluster(&w, 1, WIRE_ROLE_ACTIVE, 3, &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);

	pbw_member(&members, 0, WIRE_ROLE_ACTIVE, true);
	pbw_cluster(&w, 1, WIRE_ROLE_ACTIVE, WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
		    &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_SENDER);
	members.len = 0;
	pbw_member(&members, 2, 0, true);       /* heard, yet no role */
	pbw_cluster(&w, 1, WIRE_ROLE_ACTIVE, WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
		    &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
	members.len = 0;
	pbw_member(&members, 2, 5, false);
	pbw_cluster(&w, 1, WIRE_ROLE_ACTIVE, WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
		    &members);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ENUM);
}
END_TEST

/* The cluster's requests go to syncd from any client; its answer does not. */
START_TEST(test_ctl_cluster_requests)
{
	ck_assert(wire_ctl_kind_is_request(WIRE_CTL_CLUSTER_REQUEST));
	ck_assert(wire_ctl_kind_is_request(WIRE_CTL_CLUSTER_STANDBY));
	ck_assert(!wire_ctl_kind_is_request(WIRE_CTL_CLUSTER_STATUS));
}
END_TEST

/*
 * PROVISIONAL travels in a dump's and a lookup's entries, and nowhere else:
 * an export batch and a sync message drop it.
 */
START_TEST(test_ctl_provisional_flag)
{
	static uint8_t buf[4096];
	struct wire_counters c = { { 0 } };
	struct wire_flow f[2], got;
	struct wire_ctl_msg m, out;
	struct wire_sync_msg sm;
	size_t len;

	flow_v4(&f[0]);
	flow_v6(&f[1]);
	f[0].flags = WIRE_FLOW_PROVISIONAL;
	f[1].flags = WIRE_FLOW_ESTABLISHED | WIRE_FLOW_PROVISIONAL;
	memset(&m, 0, sizeof(m));
	m.kind = WIRE_CTL_DUMP_RESPONSE;
	m.dump = (struct wire_ctl_dump){ .entries = f, .count = 2 };
	len = ctl_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(wire_ctl_decode(buf, len, &out, &c), 0);
	ck_assert_uint_eq(out.dump.entries[0].flags, WIRE_FLOW_PROVISIONAL);
	ck_assert_uint_eq(out.dump.entries[1].flags,
			  WIRE_FLOW_ESTABLISHED | WIRE_FLOW_PROVISIONAL);
	wire_ctl_msg_free(&out);

	memset(&m, 0, sizeof(m));
	m.kind = WIRE_CTL_FLOW_LOOKUP_RESPONSE;
	m.lookup = (struct wire_ctl_lookup){ .table = WIRE_FLOW_TABLE_WORKER, .flow = f[1] };
	len = ctl_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(wire_ctl_decode(buf, len, &out, &c), 0);
	ck_assert_uint_eq(out.lookup.flow.flags, WIRE_FLOW_ESTABLISHED | WIRE_FLOW_PROVISIONAL);

	memset(&m, 0, sizeof(m));
	m.kind = WIRE_CTL_EXPORT_BATCH;
	m.flows = (struct wire_ctl_flows){ .event = WIRE_FLOW_EVENT_NEW, .entries = f, .count = 2 };
	len = ctl_encode(&m, buf, sizeof(buf));
	ck_assert_int_eq(wire_ctl_decode(buf, len, &out, &c), 0);
	ck_assert_uint_eq(out.flows.entries[0].flags, 0);
	ck_assert_uint_eq(out.flows.entries[1].flags, WIRE_FLOW_ESTABLISHED);
	wire_ctl_msg_free(&out);

	memset(&sm, 0, sizeof(sm));
	sm.kind = WIRE_SYNC_NEW;
	sm.node_id = 1;
	sm.entries = &f[1];
	sm.count = 1;
	ck_assert_int_eq(wire_sync_encode(&sm, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(wire_sync_decode(buf, len, &sm, &got, 1, &c), 0);
	ck_assert_uint_eq(got.flags, WIRE_FLOW_ESTABLISHED);
	ck_assert_uint_eq(drops_total(&c), 0);
	ck_assert_str_eq(wire_flow_flag_names[3], "provisional");
}
END_TEST

/*
 * A body of no fields as field decodes as request, which a client may
 * send; its answer may not be sent as one.
 */
static void
ctl_expect_empty_request(unsigned int field, enum wire_ctl_kind request,
			 enum wire_ctl_kind answer)
{
	struct pbw body = { .len = 0 }, w;
	struct wire_ctl_msg m;

	pbw_ctl(&w, WIRE_VERSION, field, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, request);
	ck_assert(wire_ctl_kind_is_request(request));
	ck_assert(!wire_ctl_kind_is_request(answer));
}

/* A SyncGroupStatus by control.proto's numbers: n_members members from 1. */
static void
pbw_sync_group(struct pbw *w, const char *name, const char *state,
	       uint32_t first_member, unsigned int n_members)
{
	struct pbw g = { .len = 0 };

	pbw_bytes(&g, 1, name, strlen(name));
	pbw_bytes(&g, 2, state, strlen(state));
	for (unsigned int i = 0; i < n_members; i++)
		pbw_uint(&g, 3, first_member + i);
	pbw_uint(&g, 4, 2);
	pbw_uint(&g, 5, 10);
	pbw_uint(&g, 6, 20);
	pbw_fixed64(&g, 7, 0x0123456789abcdefull);
	for (unsigned int field = 8; field <= 20; field++)
		pbw_uint(&g, field, 100 + field);
	pbw_message(w, 8, &g);
}

/* A SyncStatus of node_id with the groups and drops in rest. */
static void
pbw_sync_status(struct pbw *w, uint64_t node_id, const struct pbw *rest)
{
	struct pbw body = { .len = 0 };

	pbw_uint(&body, 1, node_id);
	for (unsigned int field = 2; field <= 4; field++)
		pbw_uint(&body, field, 1);
	pbw_uint(&body, 5, 30);
	pbw_uint(&body, 6, 1200);
	pbw_uint(&body, 7, 5);
	pbw_uint(&body, 10, 40);
	memcpy(body.buf + body.len, rest->buf, rest->len);
	body.len += rest->len;
	pbw_ctl(w, WIRE_VERSION, CTL_BODY_SYNC_STATUS, &body);
}

static void
pbw_sync_drop(struct pbw *w, const char *group, const char *reason,
	      uint64_t count)
{
	struct pbw d = { .len = 0 };

	pbw_bytes(&d, 1, group, strlen(group));
	pbw_bytes(&d, 2, reason, strlen(reason));
	pbw_uint(&d, 3, count);
	pbw_message(w, 9, &d);
}

START_TEST(test_ctl_sync_status_raw)
{
	struct pbw rest = { .len = 0 }, w;
	const struct wire_ctl_sync_group *g;
	struct wire_ctl_msg m;

	pbw_sync_group(&rest, "default", "resyncing", 1, 3);
	pbw_sync_group(&rest, "edge", "joining", 0, 0);
	pbw_sync_drop(&rest, "default", "drop_decode", 4);
	pbw_sync_drop(&rest, "", "TRUNCATED", 4);
	pbw_sync_status(&w, 2, &rest);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_SYNC_STATUS);
	ck_assert_uint_eq(m.sync_status.node_id, 2);
	ck_assert(m.sync_status.synced && m.sync_status.dataplane_connected &&
		  m.sync_status.dataplane_synced);
	ck_assert_uint_eq(m.sync_status.entries, 30);
	ck_assert_uint_eq(m.sync_status.cache_bytes, 1200);
	ck_assert_uint_eq(m.sync_status.import_queue, 5);
	ck_assert_uint_eq(m.sync_status.n_groups, 2);
	g = &m.sync_status.groups[0];
	ck_assert_str_eq(g->name, "default");
	ck_assert_str_eq(g->state, "resyncing");
	ck_assert_uint_eq(g->n_members, 3);
	ck_assert_uint_eq(g->members[2], 3);
	ck_assert_uint_eq(g->donor, 2);
	ck_assert_uint_eq(g->entries_own, 10);
	ck_assert_uint_eq(g->entries_peers, 20);
	ck_assert_uint_eq(g->digest, 0x0123456789abcdefull);
	ck_assert_uint_eq(g->send_queue, 108);
	ck_assert_uint_eq(g->entries_sent, 109);
	ck_assert_uint_eq(g->resyncs, 114);
	ck_assert_uint_eq(g->resync_last_ms, 115);
	ck_assert_uint_eq(g->import_lag_p99_us, 119);
	ck_assert_uint_eq(g->resync_entries_received, 120);
	ck_assert_uint_eq(m.sync_status.export_entries, 40);
	ck_assert_uint_eq(m.sync_status.groups[1].n_members, 0);
	ck_assert_uint_eq(m.sync_status.n_drops, 2);
	ck_assert_str_eq(m.sync_status.drops[0].reason, "drop_decode");
	ck_assert_str_eq(m.sync_status.drops[1].group, "");
	wire_ctl_msg_free(&m);
	ctl_expect_empty_request(CTL_BODY_SYNC_STATUS_REQUEST, WIRE_CTL_SYNC_STATUS_REQUEST,
				 WIRE_CTL_SYNC_STATUS);
}
END_TEST

/*
 * A valid message w (from pbw_ctl()) of another version, as a kind this
 * node does not know, and cut at every length: the envelope's version
 * and request id alone (2 and 4 bytes) have no body; any other prefix
 * cuts a field short.
 */
static void
ctl_expect_envelope_drops(const struct pbw *w)
{
	struct pbw body = { .len = 0 }, other = *w;

	other.buf[1] = WIRE_VERSION + 1;                /* Envelope.version */
	ctl_expect_drop(&other, WIRE_DROP_BAD_VERSION);
	memcpy(body.buf, w->buf, w->len);
	body.len = w->len;
	pbw_ctl(&other, WIRE_VERSION, CTL_BODY_UNKNOWN, &body);
	ctl_expect_drop(&other, WIRE_DROP_UNKNOWN_KIND);
	for (size_t n = 1; n < w->len; n++) {
		struct wire_counters c = { { 0 } };
		struct wire_ctl_msg m;

		ck_assert_int_lt(wire_ctl_decode(w->buf, n, &m, &c), 0);
		assert_one_drop(&c, n == 2 || n == 4 ? WIRE_DROP_UNKNOWN_KIND :
				WIRE_DROP_TRUNCATED);
	}
}

START_TEST(test_ctl_sync_status_bad)
{
	char name[WIRE_NAME_MAX + 1];
	struct pbw rest = { .len = 0 }, w;

	memset(name, 'x', WIRE_NAME_MAX);
	name[WIRE_NAME_MAX] = '\0';
	pbw_sync_status(&w, 0, &rest);                  /* no node id */
	ctl_expect_drop(&w, WIRE_DROP_BAD_SENDER);
	pbw_sync_group(&rest, "default", "synced", 0, 2);       /* member 0 */
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_SENDER);
	rest.len = 0;
	pbw_sync_group(&rest, "default", "synced", 1, WIRE_SYNC_MEMBERS_MAX + 1);
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_TOO_MANY_ENTRIES);
	rest.len = 0;
	pbw_sync_group(&rest, name, "synced", 1, 1);
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);
	rest.len = 0;
	pbw_sync_group(&rest, "default", name, 1, 1);
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);
	rest.len = 0;
	pbw_sync_drop(&rest, "", name, 1);
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);
	rest.len = 0;
	pbw_sync_drop(&rest, name, "drop_decode", 1);
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);

	rest.len = 0;
	pbw_sync_group(&rest, "default", "synced", 1, 3);
	pbw_sync_drop(&rest, "default", "rejected_vip", 9);
	pbw_sync_status(&w, 1, &rest);
	ctl_expect_envelope_drops(&w);
}
END_TEST

/* ---------------------------------------- histograms, health status */

enum {
	CTL_BODY_HEALTH_STATUS_REQUEST = 37,
	CTL_BODY_HEALTH_STATUS = 38,
	SYNC_GROUP_SELF_LAG = 21,       /* SyncGroupStatus */
	SYNC_GROUP_IMPORT_LAG = 22,
	HEALTH_STATUS_PROBE_DURATION = 7,
};

/* A Histogram by control.proto's numbers: cumulative[0..n), count, sum. */
static void
pbw_histogram(struct pbw *w, unsigned int field, const uint64_t *cumulative, size_t n,
	      uint64_t count, uint64_t sum_us)
{
	struct pbw h = { .len = 0 };

	if (n > 0)
		pbw_packed(&h, 1, cumulative, n);
	pbw_uint(&h, 2, count);
	pbw_uint(&h, 3, sum_us);
	pbw_message(w, field, &h);
}

/* Cumulative counts over a ladder: step at every bound from first on. */
static void
ladder_counts(uint64_t *v, size_t n, size_t first)
{
	for (size_t i = 0; i < n; i++)
		v[i] = i >= first ? 10 * (i - first + 1) : 0;
}

START_TEST(test_lag_ladders)
{
	ck_assert_uint_eq(wire_lag_bucket_us[0], 100);
	ck_assert_uint_eq(wire_lag_bucket_us[WIRE_LAG_BUCKETS - 1], 60000000);
	for (int i = 1; i < WIRE_LAG_BUCKETS; i++)
		ck_assert_uint_gt(wire_lag_bucket_us[i], wire_lag_bucket_us[i - 1]);
	ck_assert_uint_eq(wire_probe_bucket_us[0], 250);
	ck_assert_uint_eq(wire_probe_bucket_us[WIRE_PROBE_BUCKETS - 1], 10000000);
	for (int i = 1; i < WIRE_PROBE_BUCKETS; i++)
		ck_assert_uint_gt(wire_probe_bucket_us[i], wire_probe_bucket_us[i - 1]);
	/* a bound belongs to its own bucket (le), one above it to the next */
	ck_assert_uint_eq(wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, 0), 0);
	ck_assert_uint_eq(wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, 100), 0);
	ck_assert_uint_eq(wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, 101), 1);
	ck_assert_uint_eq(wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, 60000000),
			  WIRE_LAG_BUCKETS - 1);
	ck_assert_uint_eq(wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, 60000001),
			  WIRE_LAG_BUCKETS);
	ck_assert_uint_eq(wire_bucket_of(wire_lag_bucket_us, WIRE_LAG_BUCKETS, UINT64_MAX),
			  WIRE_LAG_BUCKETS);
	ck_assert_uint_eq(wire_bucket_of(wire_probe_bucket_us, WIRE_PROBE_BUCKETS, 2500), 3);
}
END_TEST

/* A sync group's histograms by control.proto's numbers; absent ones are empty. */
START_TEST(test_ctl_sync_lag_histograms_raw)
{
	uint64_t v[WIRE_LAG_BUCKETS];
	struct pbw g = { .len = 0 }, rest = { .len = 0 }, w;
	const struct wire_ctl_sync_group *d;
	struct wire_ctl_msg m;

	ladder_counts(v, WIRE_LAG_BUCKETS, 3);
	pbw_bytes(&g, 1, "default", 7);
	pbw_histogram(&g, SYNC_GROUP_SELF_LAG, v, WIRE_LAG_BUCKETS, 1000, 123456789);
	pbw_message(&rest, 8, &g);
	g.len = 0;
	pbw_bytes(&g, 1, "old", 3);                     /* an older syncd's: none */
	pbw_message(&rest, 8, &g);
	pbw_sync_status(&w, 1, &rest);
	ctl_decode_ok(&w, &m);
	ck_assert_uint_eq(m.sync_status.n_groups, 2);
	d = &m.sync_status.groups[0];
	ck_assert_uint_eq(d->self_lag.cumulative[2], 0);
	ck_assert_uint_eq(d->self_lag.cumulative[3], 10);
	ck_assert_uint_eq(d->self_lag.cumulative[WIRE_LAG_BUCKETS - 1],
			  10 * (WIRE_LAG_BUCKETS - 3));
	ck_assert_uint_eq(d->self_lag.count, 1000);
	ck_assert_uint_eq(d->self_lag.sum_us, 123456789);
	ck_assert_uint_eq(d->import_lag.count, 0);
	for (int i = 0; i < WIRE_LAG_BUCKETS; i++) {
		ck_assert_uint_eq(d->import_lag.cumulative[i], 0);
		ck_assert_uint_eq(m.sync_status.groups[1].self_lag.cumulative[i], 0);
	}
	ck_assert_uint_eq(m.sync_status.groups[1].self_lag.sum_us, 0);
	wire_ctl_msg_free(&m);
}
END_TEST

/* A SyncStatus whose one group carries the import lag histogram given. */
static void
pbw_sync_lag(struct pbw *w, const uint64_t *v, size_t n, uint64_t count)
{
	struct pbw g = { .len = 0 }, rest = { .len = 0 };

	pbw_bytes(&g, 1, "default", 7);
	pbw_histogram(&g, SYNC_GROUP_IMPORT_LAG, v, n, count, 1);
	pbw_message(&rest, 8, &g);
	pbw_sync_status(w, 1, &rest);
}

START_TEST(test_ctl_sync_lag_histograms_bad)
{
	uint64_t v[WIRE_LAG_BUCKETS + 1];
	struct wire_ctl_msg m;
	struct pbw w;

	ladder_counts(v, WIRE_LAG_BUCKETS + 1, 0);
	pbw_sync_lag(&w, v, WIRE_LAG_BUCKETS - 1, 1000);        /* a bound short */
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);
	pbw_sync_lag(&w, v, WIRE_LAG_BUCKETS + 1, 1000);        /* one too many */
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);
	pbw_sync_lag(&w, v, 0, 0);                              /* present, no bound */
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);
	pbw_sync_lag(&w, v, WIRE_LAG_BUCKETS, v[WIRE_LAG_BUCKETS - 1] - 1);  /* +Inf below */
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);
	v[5] = v[4] - 1;                                        /* decreases */
	pbw_sync_lag(&w, v, WIRE_LAG_BUCKETS, 1000);
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);
	v[5] = v[4];                                            /* flat is fine */
	pbw_sync_lag(&w, v, WIRE_LAG_BUCKETS, v[WIRE_LAG_BUCKETS - 1]);
	ctl_decode_ok(&w, &m);
	ck_assert_uint_eq(m.sync_status.groups[0].import_lag.cumulative[5], v[4]);
	wire_ctl_msg_free(&m);
	ctl_expect_envelope_drops(&w);
}
END_TEST

/* A HealthTarget by control.proto's numbers: reporters from first, n of them. */
static void
pbw_health_target(struct pbw *w, const char *vip, size_t backend_len, uint32_t first,
		  size_t n_down_by)
{
	static const uint8_t addr[16] = { 198, 18, 0, 21 };
	uint64_t by[WIRE_SYNC_MEMBERS_MAX + 1];
	struct pbw t = { .len = 0 };

	ck_assert_uint_le(n_down_by, WIRE_SYNC_MEMBERS_MAX + 1);
	for (size_t i = 0; i < n_down_by; i++)
		by[i] = first + i;
	pbw_bytes(&t, 1, vip, strlen(vip));
	pbw_bytes(&t, 2, addr, backend_len);
	pbw_uint(&t, 3, 0);
	pbw_uint(&t, 4, 1);
	if (n_down_by > 0)
		pbw_packed(&t, 5, by, n_down_by);
	pbw_uint(&t, 6, 100);
	pbw_uint(&t, 7, 40);
	pbw_uint(&t, 8, 1500);
	pbw_message(w, 2, &t);
}

/* A HealthStatus of node_id with the targets (and histogram) in rest. */
static void
pbw_health_status(struct pbw *w, uint64_t node_id, const struct pbw *rest)
{
	struct pbw body = { .len = 0 };

	pbw_uint(&body, 1, node_id);
	pbw_uint(&body, 3, 1024);
	pbw_uint(&body, 4, 3000);
	pbw_uint(&body, 5, 9000);
	pbw_uint(&body, 6, 900);
	memcpy(body.buf + body.len, rest->buf, rest->len);
	body.len += rest->len;
	pbw_ctl(w, WIRE_VERSION, CTL_BODY_HEALTH_STATUS, &body);
}

START_TEST(test_ctl_health_status_raw)
{
	uint64_t v[WIRE_PROBE_BUCKETS];
	struct pbw rest = { .len = 0 }, body = { .len = 0 }, w;
	const struct wire_ctl_health_target *t;
	struct wire_ctl_msg m;

	ladder_counts(v, WIRE_PROBE_BUCKETS, 2);
	pbw_health_target(&rest, "web", 4, 1, 3);
	pbw_health_target(&rest, "dns6", 16, 0, 0);
	pbw_histogram(&rest, HEALTH_STATUS_PROBE_DURATION, v, WIRE_PROBE_BUCKETS, 9000, 77);
	pbw_health_status(&w, 2, &rest);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_HEALTH_STATUS);
	ck_assert_uint_eq(m.health_status.node_id, 2);
	ck_assert_uint_eq(m.health_status.next_cursor, 1024);
	ck_assert_uint_eq(m.health_status.targets_total, 3000);
	ck_assert_uint_eq(m.health_status.probes, 9000);
	ck_assert_uint_eq(m.health_status.failures, 900);
	ck_assert_uint_eq(m.health_status.probe_duration.cumulative[1], 0);
	ck_assert_uint_eq(m.health_status.probe_duration.cumulative[2], 10);
	ck_assert_uint_eq(m.health_status.probe_duration.count, 9000);
	ck_assert_uint_eq(m.health_status.probe_duration.sum_us, 77);
	ck_assert_uint_eq(m.health_status.n_targets, 2);
	t = &m.health_status.targets[0];
	ck_assert_str_eq(t->vip, "web");
	ck_assert_uint_eq(t->family, AF_INET);
	ck_assert_uint_eq(t->backend[3], 21);
	ck_assert(!t->local_up && t->agreed_up);
	ck_assert_uint_eq(t->n_down_by, 3);
	ck_assert_uint_eq(t->down_by[2], 3);
	ck_assert_uint_eq(t->probes, 100);
	ck_assert_uint_eq(t->failures, 40);
	ck_assert_uint_eq(t->last_duration_us, 1500);
	ck_assert_uint_eq(m.health_status.targets[1].family, AF_INET6);
	ck_assert_uint_eq(m.health_status.targets[1].n_down_by, 0);
	wire_ctl_msg_free(&m);

	/* no histogram (an older syncd): empty */
	rest.len = 0;
	pbw_health_status(&w, 2, &rest);
	ctl_decode_ok(&w, &m);
	ck_assert_uint_eq(m.health_status.n_targets, 0);
	ck_assert_ptr_null(m.health_status.targets);
	ck_assert_uint_eq(m.health_status.probe_duration.count, 0);
	wire_ctl_msg_free(&m);

	/* the request: a cursor, or none (the first page) */
	pbw_uint(&body, 1, 4096);
	pbw_ctl(&w, WIRE_VERSION, CTL_BODY_HEALTH_STATUS_REQUEST, &body);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_HEALTH_STATUS_REQUEST);
	ck_assert_uint_eq(m.health_status_request.cursor, 4096);
	ctl_expect_empty_request(CTL_BODY_HEALTH_STATUS_REQUEST, WIRE_CTL_HEALTH_STATUS_REQUEST,
				 WIRE_CTL_HEALTH_STATUS);
}
END_TEST

START_TEST(test_ctl_health_status_bad)
{
	char name[WIRE_NAME_MAX + 1];
	uint64_t v[WIRE_LAG_BUCKETS];
	struct pbw rest = { .len = 0 }, w;

	memset(name, 'x', WIRE_NAME_MAX);
	name[WIRE_NAME_MAX] = '\0';
	pbw_health_status(&w, 0, &rest);                        /* no node id */
	ctl_expect_drop(&w, WIRE_DROP_BAD_SENDER);
	pbw_health_target(&rest, "web", 4, 0, 2);               /* reporter 0 */
	pbw_health_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_SENDER);
	rest.len = 0;
	pbw_health_target(&rest, "web", 4, 1, WIRE_SYNC_MEMBERS_MAX + 1);
	pbw_health_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_TOO_MANY_ENTRIES);
	rest.len = 0;
	pbw_health_target(&rest, "web", 5, 1, 1);
	pbw_health_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ADDRESS);
	rest.len = 0;
	pbw_health_target(&rest, "web", 0, 1, 1);               /* no backend */
	pbw_health_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ADDRESS);
	rest.len = 0;
	pbw_health_target(&rest, name, 4, 1, 1);
	pbw_health_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);
	ladder_counts(v, WIRE_LAG_BUCKETS, 0);
	rest.len = 0;
	pbw_histogram(&rest, HEALTH_STATUS_PROBE_DURATION, v, WIRE_LAG_BUCKETS, 9000, 1);
	pbw_health_status(&w, 1, &rest);                        /* the lag ladder's length */
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);
	v[1] = v[0] - 1;                                        /* decreases */
	rest.len = 0;
	pbw_histogram(&rest, HEALTH_STATUS_PROBE_DURATION, v, WIRE_PROBE_BUCKETS, 9000, 1);
	pbw_health_status(&w, 1, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_HISTOGRAM);

	rest.len = 0;
	pbw_health_target(&rest, "web", 16, 1, 2);
	pbw_health_status(&w, 1, &rest);
	ctl_expect_envelope_drops(&w);
}
END_TEST

/* Ways to spoil the sample health status: the encoder refuses each. */
enum {
	HEALTH_BAD_NODE, HEALTH_BAD_FAMILY, HEALTH_BAD_REPORTER, HEALTH_TOO_MANY_REPORTERS,
	HEALTH_BAD_VIP, HEALTH_BAD_HISTOGRAM, HEALTH_NO_TARGETS, HEALTH_BAD_MAX
};

START_TEST(test_ctl_health_encode_invalid)
{
	struct wire_ctl_msg m;
	uint8_t buf[4096];
	size_t len;

	ctl_sample(WIRE_CTL_HEALTH_STATUS, &m);
	switch (_i) {
	case HEALTH_BAD_NODE: m.health_status.node_id = 0; break;
	case HEALTH_BAD_FAMILY: sample_targets[2].family = 0; break;
	case HEALTH_BAD_REPORTER: sample_targets[1].down_by[7] = 0; break;
	case HEALTH_TOO_MANY_REPORTERS:
		sample_targets[2].n_down_by = WIRE_SYNC_MEMBERS_MAX + 1;
		break;
	case HEALTH_BAD_VIP: memset(sample_targets[0].vip, 'v', WIRE_NAME_MAX); break;
	case HEALTH_BAD_HISTOGRAM: m.health_status.probe_duration.count = 56; break;
	default: m.health_status.targets = NULL; break;
	}
	ck_assert_int_eq(wire_ctl_encode(&m, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_uint_eq(wire_ctl_encoded_size(&m), 0);
}
END_TEST

/*
 * The widest health status page: WIRE_HEALTH_PAGE_TARGETS targets of the
 * longest VIP name, IPv6, every node of a group reporting each down with
 * the largest ids, every figure at its largest, fits one IPC answer.
 */
START_TEST(test_ctl_health_status_page_bound)
{
	static struct wire_ctl_health_target targets[WIRE_HEALTH_PAGE_TARGETS];
	struct wire_ctl_msg m = {
		.kind = WIRE_CTL_HEALTH_STATUS,
		.request_id = UINT64_MAX,
		.health_status = {
			.node_id = UINT32_MAX, .targets_total = UINT32_MAX,
			.next_cursor = UINT32_MAX, .targets = targets,
			.n_targets = WIRE_HEALTH_PAGE_TARGETS,
			.probes = UINT64_MAX, .failures = UINT64_MAX,
		},
	};
	struct wire_probe_histogram *h = &m.health_status.probe_duration;
	size_t size;

	for (size_t i = 0; i < WIRE_HEALTH_PAGE_TARGETS; i++) {
		struct wire_ctl_health_target *t = &targets[i];

		memset(t->vip, 'v', WIRE_NAME_MAX - 1);
		t->family = AF_INET6;
		memset(t->backend, 0xff, WIRE_ADDR_MAX);
		t->local_up = t->agreed_up = true;
		for (uint32_t k = 0; k < WIRE_SYNC_MEMBERS_MAX; k++)
			t->down_by[k] = UINT32_MAX - k;
		t->n_down_by = WIRE_SYNC_MEMBERS_MAX;
		t->probes = t->failures = UINT64_MAX;
		t->last_duration_us = UINT32_MAX;
	}
	for (int i = 0; i < WIRE_PROBE_BUCKETS; i++)
		h->cumulative[i] = UINT64_MAX;
	h->count = h->sum_us = UINT64_MAX;
	size = wire_ctl_encoded_size(&m);
	ck_assert_uint_gt(size, 0);
	ck_assert_uint_le(size, IPC_RESPONSE_PAYLOAD_MAX);
}
END_TEST

/* A BfdSession by control.proto's numbers: lengths and enums to taste. */
struct raw_bfd {
	size_t peer_len, local_len;
	uint64_t state, local_diag, remote_diag;
};

static const struct raw_bfd raw_bfd_up = {
	.peer_len = 4, .local_len = 4, .state = 3,     /* Up, diags none */
};

/* Fields 6..15 are 100 + their number; authenticated. */
static void
pbw_bfd_session(struct pbw *w, const struct raw_bfd *b)
{
	static const uint8_t peer[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t local[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 10 };
	struct pbw s = { .len = 0 };

	pbw_bytes(&s, 1, peer, b->peer_len);
	pbw_bytes(&s, 2, local, b->local_len);
	pbw_uint(&s, 3, b->state);
	pbw_uint(&s, 4, b->local_diag);
	pbw_uint(&s, 5, b->remote_diag);
	for (unsigned int field = 6; field <= 15; field++)
		pbw_uint(&s, field, 100 + field);
	pbw_uint(&s, 16, 1);
	pbw_message(w, 2, &s);
}

/* A BfdStatus, serving, of the sessions and drops in rest. */
static void
pbw_bfd_status(struct pbw *w, const struct pbw *rest)
{
	struct pbw body = { .len = 0 };

	pbw_uint(&body, 1, 1);
	memcpy(body.buf + body.len, rest->buf, rest->len);
	body.len += rest->len;
	pbw_ctl(w, WIRE_VERSION, CTL_BODY_BFD_STATUS, &body);
}

/* One raw session in a status, dropped for why. */
static void
bfd_expect_drop(const struct raw_bfd *b, enum wire_drop why)
{
	struct pbw rest = { .len = 0 }, w;

	pbw_bfd_session(&rest, b);
	pbw_bfd_status(&w, &rest);
	ctl_expect_drop(&w, why);
}

/* What pbw_bfd_session() of raw_bfd_up decodes to: field n holds 100 + n. */
static const struct wire_ctl_bfd_session raw_bfd_up_decoded = {
	.family = AF_INET, .peer = { 0x20, 0x01, 0x0d, 0xb8 }, .local = { 0x20, 0x01, 0x0d, 0xb8 },
	.state = WIRE_BFD_STATE_UP, .local_discriminator = 106, .remote_discriminator = 107,
	.tx_interval_us = 108, .detect_time_us = 109, .remote_multiplier = 110,
	.multiplier = 111, .state_age_ms = 112, .packets_in = 113, .packets_out = 114,
	.state_changes = 115, .authenticated = true,
};

START_TEST(test_ctl_bfd_status_raw)
{
	struct pbw rest = { .len = 0 }, drop = { .len = 0 }, w;
	struct wire_ctl_bfd_session want = raw_bfd_up_decoded;
	struct raw_bfd v6 = raw_bfd_up;
	struct wire_ctl_msg m;

	v6.peer_len = v6.local_len = 16;
	v6.state = 1;           /* Down, control detection time expired */
	v6.local_diag = 1;
	v6.remote_diag = 8;
	pbw_bfd_session(&rest, &raw_bfd_up);
	pbw_bfd_session(&rest, &v6);
	pbw_bytes(&drop, 1, "BAD_TTL", 7);
	pbw_uint(&drop, 2, 3);
	pbw_message(&rest, 3, &drop);
	pbw_bfd_status(&w, &rest);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.kind, WIRE_CTL_BFD_STATUS);
	ck_assert(m.bfd_status.serving);
	ck_assert_uint_eq(m.bfd_status.n_sessions, 2);
	bfd_session_assert_eq(&m.bfd_status.sessions[0], &want);
	want.family = AF_INET6;
	want.peer[15] = 1;
	want.local[15] = 10;
	want.state = WIRE_BFD_STATE_DOWN;
	want.local_diag = WIRE_BFD_DIAG_DETECT_EXPIRED;
	want.remote_diag = WIRE_BFD_DIAG_REVERSE_CONCAT_PATH_DOWN;
	bfd_session_assert_eq(&m.bfd_status.sessions[1], &want);
	ck_assert_uint_eq(m.bfd_status.n_drops, 1);
	ck_assert_str_eq(m.bfd_status.drops[0].reason, "BAD_TTL");
	ck_assert_uint_eq(m.bfd_status.drops[0].count, 3);
	wire_ctl_msg_free(&m);

	/* proto3 leaves zeros out: a session never set is AdminDown, diag none */
	rest.len = 0;
	pbw_message(&rest, 2, &(struct pbw){ .len = 0 });
	pbw_bfd_status(&w, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_ADDRESS);     /* but it has no peer */
	v6.state = v6.local_diag = v6.remote_diag = 0;
	rest.len = 0;
	pbw_bfd_session(&rest, &v6);
	pbw_bfd_status(&w, &rest);
	ctl_decode_ok(&w, &m);
	ck_assert_int_eq(m.bfd_status.sessions[0].state, WIRE_BFD_STATE_ADMIN_DOWN);
	ck_assert_int_eq(m.bfd_status.sessions[0].remote_diag, WIRE_BFD_DIAG_NONE);
	wire_ctl_msg_free(&m);
	ctl_expect_empty_request(CTL_BODY_BFD_STATUS_REQUEST, WIRE_CTL_BFD_STATUS_REQUEST,
				 WIRE_CTL_BFD_STATUS);
}
END_TEST

START_TEST(test_ctl_bfd_status_bad)
{
	static const struct {
		struct raw_bfd b;
		enum wire_drop why;
	} cases[] = {
		{ { .peer_len = 5, .local_len = 5, .state = 3 }, WIRE_DROP_BAD_ADDRESS },
		{ { .peer_len = 0, .local_len = 4, .state = 3 }, WIRE_DROP_BAD_ADDRESS },
		{ { .peer_len = 4, .local_len = 0, .state = 3 }, WIRE_DROP_BAD_ADDRESS },
		{ { .peer_len = 4, .local_len = 16, .state = 3 }, WIRE_DROP_BAD_ADDRESS },
		{ { .peer_len = 4, .local_len = 4, .state = 4 }, WIRE_DROP_BAD_ENUM },
		{ { .peer_len = 4, .local_len = 4, .state = UINT64_MAX }, WIRE_DROP_BAD_ENUM },
		{ { .peer_len = 4, .local_len = 4, .local_diag = 9 }, WIRE_DROP_BAD_ENUM },
		/* 9..31 are reserved by RFC 5880: unknown here */
		{ { .peer_len = 4, .local_len = 4, .remote_diag = 31 }, WIRE_DROP_BAD_ENUM },
	};
	char reason[WIRE_NAME_MAX];
	struct pbw rest = { .len = 0 }, drop = { .len = 0 }, w;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bfd_expect_drop(&cases[i].b, cases[i].why);
	memset(reason, 'x', sizeof(reason));
	pbw_bytes(&drop, 1, reason, sizeof(reason));
	pbw_message(&rest, 3, &drop);
	pbw_bfd_status(&w, &rest);
	ctl_expect_drop(&w, WIRE_DROP_BAD_STRING);

	rest.len = drop.len = 0;
	pbw_bfd_session(&rest, &raw_bfd_up);
	pbw_bytes(&drop, 1, "BAD_TTL", 7);
	pbw_uint(&drop, 2, 3);
	pbw_message(&rest, 3, &drop);
	pbw_bfd_status(&w, &rest);
	ctl_expect_envelope_drops(&w);
}
END_TEST

/* Prefixes and mutations of control messages: no crash, nothing leaked. */
START_TEST(test_ctl_truncated_and_garbage)
{
	static uint8_t valid[16384], buf[16384];
	struct wire_counters c = { { 0 } };
	size_t len, rejected = 0, tried = 0;
	struct wire_ctl_msg m, out;

	for (int kind = 0; kind < WIRE_CTL_KIND_MAX; kind++) {
		ctl_sample((enum wire_ctl_kind)kind, &m);
		len = ctl_encode(&m, valid, sizeof(valid));
		for (size_t n = 0; n < len; n += 1 + n / 64, tried++) {
			if (wire_ctl_decode(valid, n, &out, &c) < 0)
				rejected++;
			else
				wire_ctl_msg_free(&out);
		}
		rng_seed(0xf00d + (uint64_t)kind);
		for (int i = 0; i < 200; i++, tried++) {
			memcpy(buf, valid, len);
			for (int k = 1 + rng_below(3); k > 0; k--)
				buf[rng_below((uint32_t)len)] = (uint8_t)rng_next();
			if (wire_ctl_decode(buf, len, &out, &c) < 0)
				rejected++;
			else
				wire_ctl_msg_free(&out);
		}
	}
	ck_assert_uint_gt(rejected, tried / 2);
	ck_assert_uint_eq(drops_total(&c), rejected);
	ck_assert_uint_gt(c.drops[WIRE_DROP_TRUNCATED], 0);
}
END_TEST

/* --------------------------------------------------------- names */

START_TEST(test_names_complete)
{
	for (int i = 0; i < WIRE_DROP_MAX; i++) {
		ck_assert_ptr_nonnull(wire_drop_names[i]);
		ck_assert_ptr_nonnull(wire_drop_descriptions[i]);
	}
	ck_assert_str_eq(wire_drop_names[WIRE_DROP_TRUNCATED], "TRUNCATED");
	ck_assert_str_eq(wire_drop_names[WIRE_DROP_BAD_HISTOGRAM], "BAD_HISTOGRAM");
	ck_assert_str_eq(wire_ctl_kind_names[WIRE_CTL_HEALTH_STATUS], "health-status");
	for (int i = 0; i < WIRE_SYNC_KIND_MAX; i++)
		ck_assert_ptr_nonnull(wire_sync_kind_names[i]);
	for (int i = 0; i < WIRE_CTL_KIND_MAX; i++)
		ck_assert_ptr_nonnull(wire_ctl_kind_names[i]);
	for (int i = 0; i < WIRE_BACKEND_STATE_MAX; i++)
		ck_assert_ptr_nonnull(wire_backend_state_names[i]);
	for (int i = 0; i < WIRE_BACKEND_ACTION_MAX; i++)
		ck_assert_ptr_nonnull(wire_backend_action_names[i]);
	for (int i = 0; i < WIRE_FLOW_TABLE_MAX; i++)
		ck_assert_ptr_nonnull(wire_flow_table_names[i]);
	for (int i = 0; i < WIRE_FLOW_EVENT_MAX; i++)
		ck_assert_ptr_nonnull(wire_flow_event_names[i]);
	for (int i = 0; i < WIRE_ROLE_MAX; i++)
		ck_assert_ptr_nonnull(wire_role_names[i]);
	for (int i = 0; i < WIRE_CLUSTER_MODE_MAX; i++)
		ck_assert_ptr_nonnull(wire_cluster_mode_names[i]);
	ck_assert_str_eq(wire_cluster_mode_names[WIRE_CLUSTER_MODE_ACTIVE_PASSIVE],
			 "active-passive");
	ck_assert_str_eq(wire_role_names[WIRE_ROLE_ACTIVE], "active");
	for (int i = 0; i < WIRE_BFD_STATE_MAX; i++)
		ck_assert_ptr_nonnull(wire_bfd_state_names[i]);
	for (int i = 0; i < WIRE_BFD_DIAG_MAX; i++)
		ck_assert_ptr_nonnull(wire_bfd_diag_names[i]);
	ck_assert_str_eq(wire_bfd_state_names[WIRE_BFD_STATE_ADMIN_DOWN], "AdminDown");
	ck_assert_str_eq(wire_bfd_state_names[WIRE_BFD_STATE_UP], "Up");
	ck_assert_str_eq(wire_bfd_diag_names[WIRE_BFD_DIAG_DETECT_EXPIRED], "detect-expired");
}
END_TEST

/*
 * The worst VIP list page: every VIP of a config and a page's worth of
 * backends, each field at its widest, still fits one IPC answer.
 */
START_TEST(test_ctl_vip_list_page_bound)
{
	static struct wire_ctl_vip vips[CONFIG_VIPS_MAX];
	static struct wire_ctl_backend backends[VIP_LIST_PAGE_BACKENDS];
	const struct wire_ctl_traffic max = {
		UINT64_MAX, UINT64_MAX, UINT64_MAX,
		UINT64_MAX, UINT64_MAX, UINT64_MAX,
	};
	struct wire_ctl_msg m = {
		.kind = WIRE_CTL_VIP_LIST_RESPONSE,
		.request_id = UINT64_MAX,
		.vip_list = {
			.vips = vips, .n_vips = CONFIG_VIPS_MAX,
			.backends = backends, .n_backends = VIP_LIST_PAGE_BACKENDS,
			.next_cursor = UINT32_MAX,
		},
	};

	for (size_t i = 0; i < CONFIG_VIPS_MAX; i++) {
		struct wire_ctl_vip *v = &vips[i];

		memset(v->name, 'v', WIRE_NAME_MAX - 1);
		v->family = AF_INET6;
		v->proto = IPPROTO_UDP;
		v->port = UINT16_MAX;
		memset(v->address, 0xff, WIRE_ADDR_MAX);
		v->owned = true;
		v->backends = v->backends_up = UINT32_MAX;
		v->flows = v->maglev_digest = UINT64_MAX;
		v->table_size = UINT32_MAX;
		v->traffic = max;
	}
	for (size_t i = 0; i < VIP_LIST_PAGE_BACKENDS; i++) {
		struct wire_ctl_backend *b = &backends[i];

		memset(b->vip, 'v', WIRE_NAME_MAX - 1);
		b->family = AF_INET6;
		memset(b->address, 0xff, WIRE_ADDR_MAX);
		b->weight = b->config_weight = b->maglev_slots = UINT32_MAX;
		b->state = WIRE_BACKEND_DOWN;
		b->next_hop_resolved = true;
		memset(b->next_hop_mac, 0xff, WIRE_MAC_LEN);
		b->flows = UINT64_MAX;
		b->traffic = max;
	}
	ck_assert_uint_le(wire_ctl_encoded_size(&m), IPC_RESPONSE_PAYLOAD_MAX);
}
END_TEST

/* ---------------------------------------------------------- suite */

static void
add_case(Suite *s, const char *name, const TTest *test)
{
	TCase *tc = tcase_create(name);

	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

static Suite *
wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;

	tc = tcase_create("sync_roundtrip_every_kind");
	tcase_add_loop_test(tc, test_sync_roundtrip_kind, 0, WIRE_SYNC_KIND_MAX);
	suite_add_tcase(s, tc);
	add_case(s, "sync_roundtrip_v4", test_sync_roundtrip_v4);
	add_case(s, "ctl_vip_list_page_bound", test_ctl_vip_list_page_bound);
	add_case(s, "sync_roundtrip_v6", test_sync_roundtrip_v6);
	add_case(s, "sync_roundtrip_mixed_families",
		 test_sync_roundtrip_mixed_families);
	add_case(s, "sync_roundtrip_max_entries", test_sync_roundtrip_max_entries);
	add_case(s, "sync_roundtrip_empty_batch", test_sync_roundtrip_empty_batch);
	add_case(s, "sync_entry_size_v4", test_sync_entry_size_v4);
	add_case(s, "sync_entry_size_bounds", test_sync_entry_size_bounds);
	add_case(s, "sync_batch_size_bound", test_sync_batch_size_bound);
	add_case(s, "sync_entry_size_exact", test_sync_entry_size_exact);
	add_case(s, "sync_enospc", test_sync_enospc);
	add_case(s, "sync_encode_invalid", test_sync_encode_invalid);
	add_case(s, "sync_raw_valid", test_sync_raw_valid);
	add_case(s, "sync_bad_version", test_sync_bad_version);
	add_case(s, "sync_unknown_kind", test_sync_unknown_kind);
	add_case(s, "sync_bad_sender", test_sync_bad_sender);
	add_case(s, "sync_bad_epoch", test_sync_bad_epoch);
	add_case(s, "sync_bad_digest", test_sync_bad_digest);
	add_case(s, "sync_bad_address", test_sync_bad_address);
	add_case(s, "sync_bad_protocol", test_sync_bad_protocol);
	add_case(s, "sync_bad_port", test_sync_bad_port);
	add_case(s, "sync_too_many_entries", test_sync_too_many_entries);
	add_case(s, "sync_bad_columns", test_sync_bad_columns);
	add_case(s, "sync_unknown_flags_and_fields",
		 test_sync_unknown_flags_and_fields);
	add_case(s, "sync_truncated", test_sync_truncated);
	add_case(s, "sync_garbage", test_sync_garbage);
	add_case(s, "sync_health_mixed_families",
		 test_sync_health_mixed_families);
	add_case(s, "sync_health_empty", test_sync_health_empty);
	add_case(s, "sync_health_raw", test_sync_health_raw);
	add_case(s, "sync_health_bad", test_sync_health_bad);
	add_case(s, "sync_node_state_raw", test_sync_node_state_raw);
	add_case(s, "sync_node_state_bad_enum", test_sync_node_state_bad_enum);
	add_case(s, "sync_digest_maglev_raw", test_sync_digest_maglev_raw);
	add_case(s, "sync_header_bound_new_kinds",
		 test_sync_header_bound_new_kinds);
	add_case(s, "sync_health_sizes", test_sync_health_sizes);
	add_case(s, "sync_encode_invalid_new_kinds",
		 test_sync_encode_invalid_new_kinds);

	tc = tcase_create("ctl_roundtrip_every_kind");
	tcase_add_loop_test(tc, test_ctl_roundtrip_kind, 0, WIRE_CTL_KIND_MAX);
	suite_add_tcase(s, tc);
	add_case(s, "ctl_empty_arrays", test_ctl_empty_arrays);
	add_case(s, "ctl_enospc", test_ctl_enospc);
	add_case(s, "ctl_encode_invalid", test_ctl_encode_invalid);
	add_case(s, "ctl_bad_version", test_ctl_bad_version);
	add_case(s, "ctl_unknown_kind", test_ctl_unknown_kind);
	add_case(s, "ctl_bad_string", test_ctl_bad_string);
	add_case(s, "ctl_bad_enum", test_ctl_bad_enum);
	add_case(s, "ctl_bad_flows", test_ctl_bad_flows);
	add_case(s, "ctl_next_hop_mac", test_ctl_next_hop_mac);
	add_case(s, "ctl_raw_lease_and_digests", test_ctl_raw_lease_and_digests);
	add_case(s, "ctl_cluster_raw", test_ctl_cluster_raw);
	add_case(s, "ctl_cluster_bad", test_ctl_cluster_bad);
	add_case(s, "ctl_cluster_requests", test_ctl_cluster_requests);
	add_case(s, "ctl_provisional_flag", test_ctl_provisional_flag);
	add_case(s, "ctl_sync_status_raw", test_ctl_sync_status_raw);
	add_case(s, "ctl_sync_status_bad", test_ctl_sync_status_bad);
	add_case(s, "lag_ladders", test_lag_ladders);
	add_case(s, "ctl_sync_lag_histograms_raw", test_ctl_sync_lag_histograms_raw);
	add_case(s, "ctl_sync_lag_histograms_bad", test_ctl_sync_lag_histograms_bad);
	add_case(s, "ctl_health_status_raw", test_ctl_health_status_raw);
	add_case(s, "ctl_health_status_bad", test_ctl_health_status_bad);
	tc = tcase_create("ctl_health_encode_invalid");
	tcase_add_loop_test(tc, test_ctl_health_encode_invalid, 0, HEALTH_BAD_MAX);
	suite_add_tcase(s, tc);
	add_case(s, "ctl_health_status_page_bound", test_ctl_health_status_page_bound);
	tc = tcase_create("ctl_bfd_encode_invalid");
	tcase_add_loop_test(tc, test_ctl_bfd_encode_invalid, 0, BFD_BAD_MAX);
	suite_add_tcase(s, tc);
	add_case(s, "ctl_bfd_status_raw", test_ctl_bfd_status_raw);
	add_case(s, "ctl_bfd_status_bad", test_ctl_bfd_status_bad);
	add_case(s, "ctl_truncated_and_garbage", test_ctl_truncated_and_garbage);
	add_case(s, "names_complete", test_names_complete);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
