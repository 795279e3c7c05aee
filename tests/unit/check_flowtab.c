/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check suite of dataplane/core/flowtab: a worker's connection table.
 */
#include "dataplane/core/flowtab.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#define SYN_MS 10000u
#define EST_MS 900000u
#define CLOSING_MS 5000u
#define UDP_MS 30000u
#define REFRESH_MS 30000u

static struct flowtab_params
params(uint32_t capacity)
{
	return (struct flowtab_params){
		.capacity = capacity,
		.seed = 0x5eed5eed12345678ull,
		.tcp_syn_ms = SYN_MS,
		.tcp_established_ms = EST_MS,
		.tcp_closing_ms = CLOSING_MS,
		.udp_ms = UDP_MS,
		.refresh_ms = REFRESH_MS,
		.insert_rate = 0,
	};
}

static struct flowtab *
table(uint32_t capacity)
{
	struct flowtab_params p = params(capacity);
	struct flowtab *t = flowtab_create(&p);

	ck_assert_ptr_nonnull(t);
	return t;
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A deterministic key: IPv4 VIP 198.18.1.1:80, client from n. */
static struct flow_key
key4(uint32_t n, uint8_t proto)
{
	struct flow_key k;

	memset(&k, 0, sizeof(k));
	k.vip[0] = 198, k.vip[1] = 18, k.vip[2] = 1, k.vip[3] = 1;
	k.client[0] = 198, k.client[1] = 19;
	k.client[2] = (uint8_t)(n >> 8), k.client[3] = (uint8_t)n;
	k.vip_port = 80;
	k.client_port = (uint16_t)(1024 + (n >> 16));
	k.proto = proto;
	k.family = FLOW_FAMILY_IPV4;
	return k;
}

/* A random key, IPv4 or IPv6, TCP or UDP, pad 0. */
static struct flow_key
key_random(uint64_t *s)
{
	struct flow_key k;
	uint64_t r = rnd(s);

	memset(&k, 0, sizeof(k));
	k.family = (r & 1) ? FLOW_FAMILY_IPV6 : FLOW_FAMILY_IPV4;
	k.proto = (r & 2) ? IPPROTO_UDP : IPPROTO_TCP;
	k.vip_port = (uint16_t)(r >> 8);
	k.client_port = (uint16_t)(r >> 24);
	for (unsigned i = 0; i < (k.family == FLOW_FAMILY_IPV6 ? 16u : 4u); i += 8) {
		uint64_t a = rnd(s), c = rnd(s);

		memcpy(k.vip + i, &a, k.family == FLOW_FAMILY_IPV6 ? 8 : 4);
		memcpy(k.client + i, &c, k.family == FLOW_FAMILY_IPV6 ? 8 : 4);
	}
	return k;
}

START_TEST(test_create_bad_params)
{
	struct flowtab_params p = params(0);

	errno = 0;
	ck_assert_ptr_null(flowtab_create(&p));
	ck_assert_int_eq(errno, EINVAL);
	p = params(FLOWTAB_CAPACITY_MAX + 1);
	ck_assert_ptr_null(flowtab_create(&p));
	p = params(1024);
	p.tcp_syn_ms = 0;
	ck_assert_ptr_null(flowtab_create(&p));
	p = params(1024);
	p.udp_ms = FLOWTAB_TIMEOUT_MAX + 1;
	ck_assert_ptr_null(flowtab_create(&p));
	p = params(1024);
	p.refresh_ms = FLOWTAB_TIMEOUT_MAX + 1;
	ck_assert_ptr_null(flowtab_create(&p));
	ck_assert_ptr_null(flowtab_create(NULL));
	flowtab_destroy(NULL);
}
END_TEST

START_TEST(test_insert_lookup_remove)
{
	struct flowtab *t = table(1024);
	struct flow_key k = key4(1, IPPROTO_TCP), other = key4(2, IPPROTO_TCP);
	enum flowtab_refuse why = FLOWTAB_REFUSE_MAX;
	struct flowtab_entry *e = flowtab_insert(t, &k, 7, FLOWTAB_TCP_SYN, 1000, &why);

	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(why, FLOWTAB_REFUSE_MAX);   /* untouched on success */
	ck_assert_mem_eq(&e->key, &k, sizeof(k));
	ck_assert_uint_eq(e->backend, 7);
	ck_assert_uint_eq(e->state, FLOWTAB_SYN);
	ck_assert_uint_eq(e->last_ms, 1000);
	ck_assert_uint_eq(e->exported_ms, 1000);
	ck_assert_uint_eq(e->created_ms, 1000);
	ck_assert_uint_eq(e->packets, 1);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);
	ck_assert_uint_eq(flowtab_count(t), 1);
	ck_assert_ptr_eq(flowtab_lookup(t, &k), e);
	ck_assert_ptr_null(flowtab_lookup(t, &other));

	flowtab_remove(t, e);
	ck_assert_ptr_null(flowtab_lookup(t, &k));
	ck_assert_uint_eq(flowtab_count(t), 0);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_REMOVED], 1);

	e = flowtab_insert(t, &k, 9, 0, 2000, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->backend, 9);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	ck_assert_ptr_eq(flowtab_lookup(t, &k), e);
	ck_assert_uint_eq(flowtab_capacity(t), 1024);
	flowtab_destroy(t);
}
END_TEST

/*
 * Hinted inserts, the worker's new-flow path: a burst of missing keys looked
 * up together, then inserted one by one with their hints, even as earlier
 * inserts of the burst fill the same buckets (a table of 64 entries takes
 * 100 keys: some go to their other bucket, some are refused), give exactly
 * what plain inserts give in a twin table: the same entries, refusals and
 * stats.
 */
START_TEST(test_insert_hint_equals_insert)
{
	enum { N = 100 };
	struct flowtab *a = table(64), *b = table(64);
	struct flow_key k[N];
	const struct flow_key *q[N];
	struct flowtab_entry *out[N];
	struct flowtab_hint hint[N];
	uint64_t s = 7;
	uint32_t inserted = 0;

	for (uint32_t i = 0; i < N; i++) {
		k[i] = key_random(&s);
		q[i] = &k[i];
	}
	flowtab_lookup_burst_hint(a, q, N, out, hint);
	for (uint32_t i = 0; i < N; i++) {
		enum flowtab_refuse wa = FLOWTAB_REFUSE_NONE, wb = FLOWTAB_REFUSE_NONE;
		struct flowtab_entry *ea, *eb;

		ck_assert_ptr_null(out[i]);
		ea = flowtab_insert_hint(a, &k[i], hint[i], i, FLOWTAB_TCP_SYN, 0, &wa);
		eb = flowtab_insert(b, &k[i], i, FLOWTAB_TCP_SYN, 0, &wb);
		ck_assert_int_eq(ea == NULL, eb == NULL);
		ck_assert_int_eq(wa, wb);
		inserted += ea != NULL;
		if (ea != NULL) {
			ck_assert_ptr_eq(flowtab_lookup(a, &k[i]), ea);
			ck_assert_ptr_eq(flowtab_lookup(b, &k[i]), eb);
			ck_assert_uint_eq(ea->backend, i);
		}
	}
	ck_assert_uint_gt(inserted, 50);
	ck_assert_uint_lt(inserted, N);           /* some refused: both buckets full */
	ck_assert_mem_eq(flowtab_stats(a), flowtab_stats(b), FLOWTAB_STAT_MAX * sizeof(uint64_t));
	ck_assert(flowtab_audit(a));
	flowtab_destroy(a);
	flowtab_destroy(b);
}
END_TEST

START_TEST(test_burst_equals_single)
{
	enum { N = 3000, Q = 1000 };
	struct flowtab *t = table(4096);
	struct flow_key *k = calloc(2 * N, sizeof(*k));
	struct flowtab_entry **ins = calloc(N, sizeof(*ins)), **out = calloc(Q, sizeof(*out));
	const struct flow_key **q = calloc(Q, sizeof(*q));
	uint64_t s = 1;
	uint32_t hits = 0;

	ck_assert(k && ins && out && q);
	for (uint32_t i = 0; i < 2 * N; i++)
		k[i] = key_random(&s);
	for (uint32_t i = 0; i < N; i++) {
		ins[i] = flowtab_insert(t, &k[i], i, FLOWTAB_TCP_SYN, 0, NULL);
		ck_assert_ptr_nonnull(ins[i]);
	}
	for (uint32_t i = 0; i < Q; i++)
		q[i] = &k[rnd(&s) % (2 * N)];
	/* odd sizes cross the pipeline's stages of FLOWTAB_BURST_MAX */
	for (uint32_t off = 0, n = 1; off < Q; off += n, n = n * 2 + 3) {
		uint32_t len = n < Q - off ? n : Q - off;

		flowtab_lookup_burst(t, q + off, len, out + off);
	}
	for (uint32_t i = 0; i < Q; i++) {
		uint32_t idx = (uint32_t)(q[i] - k);

		ck_assert_ptr_eq(out[i], flowtab_lookup(t, q[i]));
		ck_assert_ptr_eq(out[i], idx < N ? ins[idx] : NULL);
		hits += out[i] != NULL;
	}
	ck_assert_uint_gt(hits, Q / 4);
	ck_assert_uint_lt(hits, Q * 3 / 4);
	flowtab_destroy(t);
	free(k), free(ins), free(out), free(q);
}
END_TEST

static uint32_t fill(struct flowtab *t, uint32_t capacity, struct flow_key *k, uint64_t *s);

/* Dense: 16-bit signatures collide in about 1 lookup in 8000, and many keys
 * live in their alternative bucket; the burst must still agree. */
START_TEST(test_burst_equals_single_dense)
{
	enum { CAP = 65536, Q = 1u << 18 };
	struct flowtab *t = table(CAP);
	struct flow_key *k = calloc(CAP + 1, sizeof(*k)), *miss = calloc(Q, sizeof(*miss));
	const struct flow_key **q = calloc(Q, sizeof(*q));
	struct flowtab_entry **out = calloc(Q, sizeof(*out));
	uint64_t s = 5;
	uint32_t n, hits = 0;

	ck_assert(k && miss && q && out);
	n = fill(t, CAP, k, &s);
	ck_assert_uint_gt(flowtab_stats(t)[FLOWTAB_STAT_MOVED], 0);
	for (uint32_t i = 0; i < Q; i++) {
		miss[i] = key_random(&s);
		q[i] = (i & 1) ? &miss[i] : &k[rnd(&s) % n];
	}
	flowtab_lookup_burst(t, q, Q, out);
	for (uint32_t i = 0; i < Q; i++) {
		ck_assert_ptr_eq(out[i], flowtab_lookup(t, q[i]));
		if (out[i] != NULL)
			ck_assert_mem_eq(&out[i]->key, q[i], sizeof(*q[i]));
		hits += out[i] != NULL;
	}
	ck_assert_uint_eq(hits, Q / 2);
	flowtab_destroy(t);
	free(k), free(miss), free(q), free(out);
}
END_TEST

/* Insert random keys until capacity or 1000 refusals in a row; check that
 * at least 95% went in and that every one is still there. */
static uint32_t
fill(struct flowtab *t, uint32_t capacity, struct flow_key *k, uint64_t *s)
{
	uint32_t n = 0, misses = 0;
	enum flowtab_refuse why;

	while (n < capacity && misses < 1000) {
		k[n] = key_random(s);
		if (flowtab_insert(t, &k[n], n, 0, 0, &why) != NULL) {
			n++;
			misses = 0;
		} else {
			ck_assert_int_eq(why, FLOWTAB_REFUSE_FULL);
			misses++;
		}
	}
	ck_assert_uint_ge(n, capacity / 100 * 95);
	ck_assert_uint_eq(flowtab_count(t), n);
	ck_assert(flowtab_audit(t));
	for (uint32_t i = 0; i < n; i++) {
		struct flowtab_entry *e = flowtab_lookup(t, &k[i]);

		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->backend, i);
	}
	return n;
}

START_TEST(test_fill_to_capacity)
{
	/* 65536: as many index slots as entries, the hardest case; 1000: slack */
	static const uint32_t caps[] = { 65536, 1000, 100000 };
	uint64_t s = 7;

	for (unsigned c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		struct flowtab *t = table(caps[c]);
		struct flow_key *k = calloc(caps[c] + 1, sizeof(*k));
		uint32_t n, refused = 0;

		ck_assert_ptr_nonnull(k);
		n = fill(t, caps[c], k, &s);
		/* full of live entries: new flows are refused, none evicted */
		for (uint32_t i = 0; i < 5000; i++) {
			struct flow_key x = key_random(&s);
			enum flowtab_refuse why = FLOWTAB_REFUSE_NONE;

			if (flowtab_insert(t, &x, 0, 0, 1000, &why) == NULL) {
				ck_assert_int_eq(why, FLOWTAB_REFUSE_FULL);
				refused++;
			} else {
				ck_assert_uint_lt(flowtab_count(t), caps[c] + 1);
			}
		}
		ck_assert_uint_ge(refused, 5000 - (caps[c] - n));
		ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_EVICTED], 0);
		ck_assert(flowtab_audit(t));
		for (uint32_t i = 0; i < n; i++) {
			struct flowtab_entry *e = flowtab_lookup(t, &k[i]);

			ck_assert_ptr_nonnull(e);
			ck_assert_uint_eq(e->backend, i);
		}
		ck_assert_uint_le(flowtab_bytes_per_flow(t), 81);
		flowtab_destroy(t);
		free(k);
	}
}
END_TEST

START_TEST(test_bytes_per_flow)
{
	struct flowtab *t = table(65536);

	/* 64 B entry + 8 B of index (64 B bucket per 8 entries) + the header */
	ck_assert_uint_eq(flowtab_bytes_per_flow(t), 73);
	ck_assert_uint_ge(flowtab_memory(t), 65536 * 72);
	flowtab_destroy(t);
}
END_TEST

START_TEST(test_expired_entries_reused)
{
	enum { CAP = 4096 };
	struct flowtab *t = table(CAP);
	struct flow_key *k = calloc(CAP + 1, sizeof(*k)), x;
	uint64_t s = 11;
	uint32_t n, inserted = 0;
	struct flowtab_entry *e;

	ck_assert_ptr_nonnull(k);
	n = fill(t, CAP, k, &s);
	/* at 1000 s the even ones are alive (a packet at 990 s: UDP lives
	 * 30 s, TCP 900 s), the odd ones idle since 0 are expired */
	for (uint32_t i = 0; i < n; i += 2)
		flowtab_touch(t, flowtab_lookup(t, &k[i]), 0, 990000);
	ck_assert(!flowtab_expired(t, flowtab_lookup(t, &k[1]), 0));
	ck_assert(flowtab_expired(t, flowtab_lookup(t, &k[1]), 1000000));
	for (uint32_t i = 0; i < n / 4; i++) {       /* half of the expired */
		x = key_random(&s);
		inserted += flowtab_insert(t, &x, 0, 0, 1000000, NULL) != NULL;
	}
	ck_assert_uint_ge(inserted, n / 4 * 95 / 100);
	ck_assert_uint_le(flowtab_count(t), CAP);
	ck_assert_uint_gt(flowtab_stats(t)[FLOWTAB_STAT_EVICTED], 0);
	ck_assert(flowtab_audit(t));
	for (uint32_t i = 0; i < n; i += 2) {         /* no live one lost */
		e = flowtab_lookup(t, &k[i]);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->backend, i);
	}

	/* an expired hit is restarted in place by flowtab_reuse */
	e = NULL;
	for (uint32_t i = 1; i < n && e == NULL; i += 2)
		e = flowtab_lookup(t, &k[i]);
	ck_assert_ptr_nonnull(e);
	ck_assert(flowtab_expired(t, e, 1000000));
	ck_assert_ptr_eq(flowtab_reuse(t, e, 42, FLOWTAB_TCP_SYN, 1000000, NULL), e);
	ck_assert(!flowtab_expired(t, e, 1000000));
	ck_assert_uint_eq(e->backend, 42);
	ck_assert_uint_eq(e->created_ms, 1000000);
	ck_assert_uint_eq(e->packets, 1);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_REUSED], 1);
	flowtab_destroy(t);
	free(k);
}
END_TEST

START_TEST(test_tcp_state_machine)
{
	struct flowtab *t = table(1024);
	struct flow_key k;
	struct flowtab_entry *e;

	k = key4(1, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	ck_assert_uint_eq(e->state, FLOWTAB_SYN);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_SYN, 1), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->state, FLOWTAB_SYN);      /* retransmitted SYN */
	/* established: now worth replicating, exported NEW; once */
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 2), FLOWTAB_EXPORT_NEW);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	ck_assert_uint_eq(e->exported_ms, 2);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_EXPORTED);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 2), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->packets, 4);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_FIN | FLOWTAB_TCP_ACK, 3),
			 FLOWTAB_EXPORT_CLOSE);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);
	ck_assert_uint_eq(e->last_ms, 3);
	/* a new connection on the same 5-tuple during the linger: made from a
	 * SYN again, exported when established */
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_SYN, 4), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->state, FLOWTAB_SYN);
	ck_assert_uint_eq(e->created_ms, 4);
	ck_assert_uint_eq(e->packets, 1);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 5), FLOWTAB_EXPORT_NEW);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_RST, 6), FLOWTAB_EXPORT_CLOSE);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);
	/* restarted again, and reset before it is established: nothing */
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_SYN, 7), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_RST, 8), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);

	k = key4(2, IPPROTO_TCP);                      /* picked up mid-flow */
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_ACK, 0, NULL);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_PROVISIONAL);
	k = key4(3, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_RST, 0, NULL);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_RST, 1), FLOWTAB_EXPORT_NONE);
	k = key4(4, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN | FLOWTAB_TCP_FIN, 0, NULL);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);

	k = key4(5, IPPROTO_UDP);                      /* flags mean nothing */
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	ck_assert_uint_eq(e->state, FLOWTAB_UDP);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_FIN, 1), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->state, FLOWTAB_UDP);
	k = key4(6, 0);                                /* client-persistent VIP */
	e = flowtab_insert(t, &k, 1, 0, 0, NULL);
	ck_assert_uint_eq(e->state, FLOWTAB_UDP);

	ck_assert_str_eq(flowtab_state_names[FLOWTAB_CLOSING], "CLOSING");
	ck_assert_str_eq(flowtab_export_names[FLOWTAB_EXPORT_CLOSE], "CLOSE");
	ck_assert_str_eq(flowtab_refuse_names[FLOWTAB_REFUSE_RATE], "RATE");
	ck_assert_str_eq(flowtab_stat_names[FLOWTAB_STAT_EVICTED], "EVICTED");
	flowtab_destroy(t);
}
END_TEST

/* The entry lives through timeout - 1 ms of silence and is expired at
 * timeout; a packet restarts the count. */
static void
check_timeout(struct flowtab *t, struct flowtab_entry *e, uint32_t timeout)
{
	uint32_t t0 = e->last_ms;

	ck_assert_uint_eq(flowtab_timeout(t, e->state), timeout);
	ck_assert(!flowtab_expired(t, e, t0));
	ck_assert(!flowtab_expired(t, e, t0 + timeout - 1));
	ck_assert(flowtab_expired(t, e, t0 + timeout));
	ck_assert(flowtab_expired(t, e, t0 + timeout + 1000));
}

START_TEST(test_timeouts_per_state)
{
	struct flowtab *t = table(1024);
	struct flow_key k;
	struct flowtab_entry *e;

	k = key4(1, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 100, NULL);
	check_timeout(t, e, SYN_MS);                   /* SYN: 10 s */
	ck_assert_uint_eq(SYN_MS, 10000);
	flowtab_touch(t, e, FLOWTAB_TCP_SYN, 9000);    /* a retransmission */
	check_timeout(t, e, SYN_MS);
	flowtab_touch(t, e, FLOWTAB_TCP_ACK, 12000);
	check_timeout(t, e, EST_MS);
	ck_assert(!flowtab_expired(t, e, 12000 + SYN_MS));
	flowtab_touch(t, e, FLOWTAB_TCP_FIN, 20000);
	check_timeout(t, e, CLOSING_MS);               /* the linger */
	flowtab_touch(t, e, FLOWTAB_TCP_ACK, 24000);   /* late packet: still lingers */
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);
	check_timeout(t, e, CLOSING_MS);

	k = key4(2, IPPROTO_UDP);
	e = flowtab_insert(t, &k, 1, 0, 100, NULL);
	check_timeout(t, e, UDP_MS);
	flowtab_destroy(t);
}
END_TEST

START_TEST(test_refresh_once_per_interval)
{
	struct flowtab *t = table(1024);
	struct flow_key k = key4(1, IPPROTO_TCP);
	struct flowtab_entry *e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	uint32_t refreshes = 0;
	struct flowtab_params p = params(1024);
	struct flowtab *never;

	for (uint32_t now = 100; now <= 100000; now += 100) {
		enum flowtab_export x = flowtab_touch(t, e, FLOWTAB_TCP_ACK, now);

		ck_assert_int_ne(x, FLOWTAB_EXPORT_CLOSE);
		if (now == 100)                        /* the first ACK: established */
			ck_assert_int_eq(x, FLOWTAB_EXPORT_NEW);
		if (x == FLOWTAB_EXPORT_REFRESH) {
			/* every REFRESH_MS since the NEW */
			ck_assert_uint_eq(now % REFRESH_MS, 100);
			ck_assert_uint_eq(e->exported_ms, now);
			refreshes++;
		}
	}
	ck_assert_uint_eq(refreshes, 3);               /* at 30.1, 60.1, 90.1 s */

	p.refresh_ms = 0;
	never = flowtab_create(&p);
	ck_assert_ptr_nonnull(never);
	e = flowtab_insert(never, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	/* no periodic refresh; the entry is still exported once established */
	ck_assert_int_eq(flowtab_touch(never, e, FLOWTAB_TCP_ACK, 500), FLOWTAB_EXPORT_NEW);
	for (uint32_t now = 1000; now <= 200000; now += 1000)
		ck_assert_int_eq(flowtab_touch(never, e, FLOWTAB_TCP_ACK, now),
				 FLOWTAB_EXPORT_NONE);
	flowtab_destroy(never);
	flowtab_destroy(t);
}
END_TEST

START_TEST(test_close_exported_once)
{
	static const uint8_t flags[] = {
		FLOWTAB_TCP_FIN | FLOWTAB_TCP_ACK, FLOWTAB_TCP_ACK, FLOWTAB_TCP_FIN,
		FLOWTAB_TCP_RST, FLOWTAB_TCP_RST | FLOWTAB_TCP_ACK, FLOWTAB_TCP_ACK,
	};
	struct flowtab *t = table(1024);
	struct flow_key k = key4(1, IPPROTO_TCP);
	struct flowtab_entry *e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	uint32_t closes = 0, now = 1000;

	flowtab_touch(t, e, FLOWTAB_TCP_ACK, 500);
	/* also past the refresh interval: a closing flow is not refreshed */
	for (unsigned r = 0; r < 10; r++) {
		for (unsigned i = 0; i < sizeof(flags); i++, now += 1000) {
			enum flowtab_export x = flowtab_touch(t, e, flags[i], now);

			ck_assert_int_ne(x, FLOWTAB_EXPORT_REFRESH);
			closes += x == FLOWTAB_EXPORT_CLOSE;
		}
	}
	ck_assert_uint_eq(closes, 1);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);
	flowtab_destroy(t);
}
END_TEST

/* The exports of a run of packets, counted by kind. */
struct exports {
	uint32_t n[FLOWTAB_EXPORT_MAX];
};

static enum flowtab_export
touch_count(struct flowtab *t, struct flowtab_entry *e, uint8_t flags, uint32_t now,
	    struct exports *x)
{
	enum flowtab_export ev = flowtab_touch(t, e, flags, now);

	x->n[ev]++;
	return ev;
}

/*
 * What is worth replicating: a TCP entry once established, never at its
 * SYN. A SYN alone, a flood of spoofed SYNs (retransmitted too), a SYN that
 * a RST or FIN ends before it is established: nothing. A connection: one
 * NEW (at the client's first packet after its SYN), then a CLOSE.
 */
START_TEST(test_export_established_only)
{
	enum { FLOOD = 1000 };
	struct flowtab *t = table(4096);
	struct exports x = { { 0 } };
	struct flowtab_entry *e;
	struct flow_key k;

	for (uint32_t i = 0; i < FLOOD; i++) {         /* spoofed SYNs */
		k = key4(i, IPPROTO_TCP);
		e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, i, NULL);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);   /* not provisional */
		/* retransmitted, within SYN_MS of each other, and past the
		 * refresh interval: nothing to refresh either */
		for (uint32_t r = 1; r <= 4; r++)
			touch_count(t, e, FLOWTAB_TCP_SYN, i + r * 8000, &x);
	}
	ck_assert_uint_eq(4 * 8000, REFRESH_MS + 2000);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_NONE], 4 * FLOOD);

	/* SYN then RST, SYN then FIN: closed before established */
	k = key4(FLOOD + 1, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	ck_assert_int_eq(touch_count(t, e, FLOWTAB_TCP_RST, 1, &x), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);
	ck_assert_int_eq(touch_count(t, e, FLOWTAB_TCP_RST | FLOWTAB_TCP_ACK, 2, &x),
			 FLOWTAB_EXPORT_NONE);
	k = key4(FLOOD + 2, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	ck_assert_int_eq(touch_count(t, e, FLOWTAB_TCP_FIN, 1, &x), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_NONE], 4 * FLOOD + 3);

	/* a connection: SYN, SYN again, ACK (NEW), data past two refresh
	 * intervals (two REFRESHes), FIN (CLOSE), late packets (nothing) */
	memset(&x, 0, sizeof(x));
	k = key4(FLOOD + 3, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	ck_assert_int_eq(touch_count(t, e, FLOWTAB_TCP_SYN, 1000, &x), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(touch_count(t, e, FLOWTAB_TCP_ACK, 1001, &x), FLOWTAB_EXPORT_NEW);
	ck_assert(e->flags & FLOWTAB_FLAG_EXPORTED);
	for (uint32_t now = 1100; now < 1001 + 2 * REFRESH_MS + 500; now += 100)
		touch_count(t, e, FLOWTAB_TCP_ACK, now, &x);
	ck_assert_int_eq(touch_count(t, e, FLOWTAB_TCP_FIN | FLOWTAB_TCP_ACK, 70000, &x),
			 FLOWTAB_EXPORT_CLOSE);
	touch_count(t, e, FLOWTAB_TCP_ACK, 70001, &x);
	touch_count(t, e, FLOWTAB_TCP_FIN | FLOWTAB_TCP_ACK, 70002, &x);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_NEW], 1);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_REFRESH], 2);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_CLOSE], 1);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_PROVISIONAL_KEPT], 0);
	flowtab_destroy(t);
}
END_TEST

/*
 * sync_after: a VIP's sync_after_packets delays the NEW until the entry
 * has seen that many packets (the first included), on top of the rule:
 * 0, 1 and 2 change nothing for TCP (established takes two packets); N
 * exports at packet N; a retransmitted SYN counts; an entry closed before
 * packet N exports nothing, neither NEW nor CLOSE. UDP (past its
 * provisional window) likewise. A count past 65535 saturates and still
 * reaches the largest threshold.
 */
START_TEST(test_export_sync_after_packets)
{
	struct flowtab *t = table(1024);
	struct flowtab_entry *e;
	struct flow_key k;

	for (uint16_t n = 0; n <= 2; n++) {
		k = key4(n, IPPROTO_TCP);
		e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
		ck_assert_uint_eq(e->sync_after, 0);     /* the caller sets it */
		e->sync_after = n;
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 1), FLOWTAB_EXPORT_NEW);
	}
	for (uint16_t n = 3; n <= 10; n++) {
		k = key4(n, IPPROTO_TCP);
		e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
		e->sync_after = n;
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_SYN, 1), FLOWTAB_EXPORT_NONE);
		for (uint32_t p = 3; p < n; p++)
			ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, p), FLOWTAB_EXPORT_NONE);
		ck_assert_uint_eq(e->packets, n - 1);
		ck_assert(!(e->flags & FLOWTAB_FLAG_EXPORTED));
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, n), FLOWTAB_EXPORT_NEW);
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, n + 1), FLOWTAB_EXPORT_NONE);
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_FIN, n + 2), FLOWTAB_EXPORT_CLOSE);
	}
	/* established, closed at packet 4 of 5: the peers never hear of it */
	k = key4(11, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	e->sync_after = 5;
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 1), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 2), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_FIN, 3), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 4), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->state, FLOWTAB_CLOSING);

	/* UDP, 4 packets: the first three inside its provisional window */
	k = key4(12, IPPROTO_UDP);
	e = flowtab_insert(t, &k, 1, 0, 0, NULL);
	e->sync_after = 6;
	ck_assert_int_eq(flowtab_touch(t, e, 0, 10), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, 0, 20), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, 0, FLOWTAB_PROVISIONAL_MS), FLOWTAB_EXPORT_NONE);
	ck_assert(!(e->flags & FLOWTAB_FLAG_PROVISIONAL));
	ck_assert_int_eq(flowtab_touch(t, e, 0, FLOWTAB_PROVISIONAL_MS + 1),
			 FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, 0, FLOWTAB_PROVISIONAL_MS + 2), FLOWTAB_EXPORT_NEW);
	ck_assert_uint_eq(e->packets, 6);

	/* the largest threshold: the count saturates there */
	k = key4(13, IPPROTO_TCP);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL);
	e->sync_after = UINT16_MAX;
	for (uint32_t p = 2; p < UINT16_MAX; p++)
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 1), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 1), FLOWTAB_EXPORT_NEW);
	for (uint32_t p = 0; p < 10; p++)
		flowtab_touch(t, e, FLOWTAB_TCP_ACK, 1);
	ck_assert_uint_eq(e->packets, UINT16_MAX);
	flowtab_destroy(t);
}
END_TEST

/*
 * Provisional entries: whatever is inserted but a SYN (TCP mid-flow, a FIN
 * or RST first, UDP), reused likewise, is PROVISIONAL and exports nothing
 * for FLOWTAB_PROVISIONAL_MS; its first packet past that clears the flag
 * (PROVISIONAL_KEPT) and exports NEW if the entry is worth it. One closed
 * meanwhile never exports. A SYN restarting a provisional CLOSING entry
 * makes it this node's connection: not provisional.
 */
START_TEST(test_provisional_window)
{
	struct flowtab *t = table(1024);
	struct flowtab_entry *e;
	struct flow_key k;
	const uint32_t t0 = 5000;

	k = key4(1, IPPROTO_TCP);                      /* mid-flow */
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_ACK, t0, NULL);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_PROVISIONAL);
	for (uint32_t now = t0; now < t0 + FLOWTAB_PROVISIONAL_MS; now += 100)
		ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, now), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + FLOWTAB_PROVISIONAL_MS - 1),
			 FLOWTAB_EXPORT_NONE);
	ck_assert(e->flags & FLOWTAB_FLAG_PROVISIONAL);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + FLOWTAB_PROVISIONAL_MS),
			 FLOWTAB_EXPORT_NEW);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_EXPORTED);
	ck_assert_uint_eq(e->exported_ms, t0 + FLOWTAB_PROVISIONAL_MS);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_PROVISIONAL_KEPT], 1);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_RST, t0 + 4000), FLOWTAB_EXPORT_CLOSE);

	k = key4(2, IPPROTO_UDP);                      /* UDP: no handshake */
	e = flowtab_insert(t, &k, 1, 0, t0, NULL);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_PROVISIONAL);
	ck_assert_int_eq(flowtab_touch(t, e, 0, t0 + 1), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, 0, t0 + FLOWTAB_PROVISIONAL_MS + 500),
			 FLOWTAB_EXPORT_NEW);
	ck_assert_int_eq(flowtab_touch(t, e, 0, t0 + FLOWTAB_PROVISIONAL_MS + 501),
			 FLOWTAB_EXPORT_NONE);

	k = key4(3, IPPROTO_TCP);                      /* closed while provisional */
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_ACK, t0, NULL);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_FIN, t0 + 10), FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + FLOWTAB_PROVISIONAL_MS),
			 FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);
	k = key4(4, IPPROTO_TCP);                      /* a RST first */
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_RST, t0, NULL);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_PROVISIONAL);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + 2 * FLOWTAB_PROVISIONAL_MS),
			 FLOWTAB_EXPORT_NONE);
	/* ... then a new connection on its 5-tuple: this node's, from its SYN */
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_SYN, t0 + 7000), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + 7001), FLOWTAB_EXPORT_NEW);
	k = key4(5, IPPROTO_TCP);                      /* restarted within the window */
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_FIN | FLOWTAB_TCP_ACK, t0, NULL);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_SYN, t0 + 5), FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + 6), FLOWTAB_EXPORT_NEW);

	/* an expired entry reused by a mid-flow packet: provisional too; by a
	 * SYN: not */
	ck_assert_ptr_eq(flowtab_reuse(t, e, 2, FLOWTAB_TCP_ACK, t0 + EST_MS + 10000, NULL), e);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_PROVISIONAL);
	ck_assert_ptr_eq(flowtab_reuse(t, e, 2, FLOWTAB_TCP_SYN, t0 + 2 * EST_MS, NULL), e);
	ck_assert_uint_eq(e->flags, FLOWTAB_FLAG_LIVE);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_PROVISIONAL_KEPT], 4);
	ck_assert(flowtab_audit(t));
	flowtab_destroy(t);
}
END_TEST

/*
 * A peer's entry replaces a provisional one (flowtab_adopt()): its backend,
 * flags as an import's (SYNCED, EXPORTED: refreshed and closed here, never
 * exported NEW), the state and times kept.
 */
START_TEST(test_adopt)
{
	struct flowtab *t = table(1024);
	struct flow_key k = key4(1, IPPROTO_TCP);
	struct flowtab_entry *e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_ACK, 1000, NULL);
	struct exports x = { { 0 } };

	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 1200), FLOWTAB_EXPORT_NONE);
	flowtab_adopt(t, e, 7, 1500);
	ck_assert_uint_eq(e->backend, 7);
	ck_assert_uint_eq(e->flags,
			  FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_SYNCED | FLOWTAB_FLAG_EXPORTED);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	ck_assert_uint_eq(e->created_ms, 1000);
	ck_assert_uint_eq(e->last_ms, 1200);
	ck_assert_uint_eq(e->exported_ms, 1500);
	ck_assert_uint_eq(e->packets, 2);
	ck_assert_ptr_eq(flowtab_lookup(t, &k), e);
	/* the worker's fast path touches it as EXPORTED: the same answers */
	for (uint32_t now = 1500; now < 1500 + REFRESH_MS + 1000; now += 100)
		x.n[flowtab_touch_exported(t, e, FLOWTAB_TCP_ACK, now)]++;
	touch_count(t, e, FLOWTAB_TCP_FIN, 40000, &x);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_NEW], 0);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_REFRESH], 1);
	ck_assert_uint_eq(x.n[FLOWTAB_EXPORT_CLOSE], 1);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_PROVISIONAL_KEPT], 0);
	ck_assert(flowtab_audit(t));
	flowtab_destroy(t);
}
END_TEST

/* Attempts every ms over [start, start + 1000) at per_ms a ms: successes. */
static uint32_t
attempt_inserts(struct flowtab *t, uint32_t start, uint32_t per_ms, uint32_t *next)
{
	uint32_t ok = 0;

	for (uint32_t ms = 0; ms < 1000; ms++) {
		for (uint32_t j = 0; j < per_ms; j++) {
			struct flow_key k = key4((*next)++, IPPROTO_TCP);
			enum flowtab_refuse why = FLOWTAB_REFUSE_NONE;

			if (flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, start + ms, &why) != NULL)
				ok++;
			else
				ck_assert_int_eq(why, FLOWTAB_REFUSE_RATE);
		}
	}
	return ok;
}

START_TEST(test_insert_rate_limit)
{
	struct flowtab_params p = params(65536);
	struct flowtab *t;
	uint32_t next = 0, ok;

	/* R = 10000/s, burst 1000: R + burst in the first second, R after */
	p.insert_rate = 10000;
	t = flowtab_create(&p);
	ck_assert_ptr_nonnull(t);
	ok = attempt_inserts(t, 5000, 30, &next);
	ck_assert_uint_ge(ok, 10900);
	ck_assert_uint_le(ok, 11100);
	ok = attempt_inserts(t, 6000, 30, &next);
	ck_assert_uint_ge(ok, 9900);
	ck_assert_uint_le(ok, 10100);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_REFUSED_RATE], 60000 - flowtab_count(t));
	/* synced imports bypass the rate */
	for (uint32_t i = 0; i < 100; i++) {
		struct flow_key k = key4(next++, IPPROTO_TCP);

		ck_assert_ptr_nonnull(flowtab_insert_synced(t, &k, 1, FLOWTAB_ESTABLISHED,
							    1000, 6999, NULL));
	}
	flowtab_destroy(t);

	/* the smallest burst is 64 */
	p.insert_rate = 100;
	t = flowtab_create(&p);
	ck_assert_ptr_nonnull(t);
	ok = 0;
	for (uint32_t i = 0; i < 200; i++) {
		struct flow_key k = key4(i, IPPROTO_TCP);

		ok += flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, 0, NULL) != NULL;
	}
	ck_assert_uint_eq(ok, 64);
	flowtab_destroy(t);

	p.insert_rate = 0;                             /* no cap */
	t = flowtab_create(&p);
	ck_assert_ptr_nonnull(t);
	next = 0;
	ck_assert_uint_eq(attempt_inserts(t, 0, 50, &next), 50000);
	flowtab_destroy(t);
}
END_TEST

/*
 * The scan passes over chunks that are not due: whatever shortens an entry's
 * life makes its chunk due sooner. Long-lived entries fill two chunks and a
 * full pass sets their due times an EST_MS away; then, in one chunk, a FIN
 * (CLOSING_MS), an import with 50 ms left, an expired entry reused as a SYN
 * (SYN_MS) and, for the whole table, a shorter timeout by flowtab_tune():
 * each frees its entry on time, and only it.
 */
START_TEST(test_expire_due_times)
{
	enum { N = 2 * FLOWTAB_CHUNK };
	struct flowtab_params p = params(1024);
	struct flowtab *t = flowtab_create(&p);
	struct flow_key k[N + 1];
	struct flowtab_entry *e;

	ck_assert_ptr_nonnull(t);
	for (uint32_t i = 0; i < N; i++) {
		k[i] = key4(i, IPPROTO_TCP);
		ck_assert_ptr_nonnull(flowtab_insert(t, &k[i], 1, FLOWTAB_TCP_ACK, 0, NULL));
	}
	ck_assert_uint_eq(flowtab_expire(t, 1, N), 0);          /* due: EST_MS */
	ck_assert(flowtab_audit(t));
	/* FIN: CLOSING_MS from 10 (picked up mid-flow, never exported: no CLOSE) */
	ck_assert_int_eq(flowtab_touch(t, flowtab_lookup(t, &k[3]), FLOWTAB_TCP_FIN, 10),
			 FLOWTAB_EXPORT_NONE);
	ck_assert_uint_eq(flowtab_lookup(t, &k[3])->state, FLOWTAB_CLOSING);
	ck_assert(flowtab_audit(t));
	ck_assert_uint_eq(flowtab_expire(t, 10 + CLOSING_MS - 1, N), 0);
	/* in small steps that stop inside chunks, the audit between them */
	for (uint32_t step = 0, freed = 0; step <= 2 * N / 7; step++) {
		freed += flowtab_expire(t, 10 + CLOSING_MS, 7);
		ck_assert(flowtab_audit(t));
		ck_assert_uint_le(freed, 1);
		if (step == 2 * N / 7)
			ck_assert_uint_eq(freed, 1);
	}
	ck_assert_ptr_null(flowtab_lookup(t, &k[3]));
	/* an import into the freed slot, 50 ms to live */
	k[N] = key4(N, IPPROTO_TCP);
	e = flowtab_insert_synced(t, &k[N], 2, FLOWTAB_ESTABLISHED, 50, 6000, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert(flowtab_audit(t));
	ck_assert_uint_eq(flowtab_expire(t, 6049, N), 0);
	ck_assert_uint_eq(flowtab_expire(t, 6050, N), 1);
	/* an entry past its time, restarted as a SYN: SYN_MS from 7000 */
	e = flowtab_lookup(t, &k[70]);
	ck_assert_ptr_nonnull(flowtab_reuse(t, e, 3, FLOWTAB_TCP_SYN, EST_MS + 7000, NULL));
	ck_assert(flowtab_audit(t));
	ck_assert_uint_eq(flowtab_expire(t, EST_MS - 1, N), 0);
	ck_assert_uint_eq(flowtab_expire(t, EST_MS, N), N - 2);   /* all but k[70] */
	ck_assert_uint_eq(flowtab_count(t), 1);
	/* a shorter SYN timeout: the next pass frees k[70] at once */
	p.tcp_syn_ms = 1000;
	ck_assert_int_eq(flowtab_tune(t, &p), 0);
	ck_assert_uint_eq(flowtab_expire(t, EST_MS + 7999, N), 0);
	ck_assert_uint_eq(flowtab_expire(t, EST_MS + 8000, N), 1);
	ck_assert_uint_eq(flowtab_count(t), 0);
	ck_assert(flowtab_audit(t));
	flowtab_destroy(t);
}
END_TEST

/* A scan that stops inside a chunk has set the chunk's due time from the
 * entries it has seen only (the long-lived first half here): the audit
 * holds between steps, and the short-lived second half still goes on time. */
START_TEST(test_expire_split_chunk)
{
	struct flowtab *t = table(1024);
	uint32_t freed = 0;

	for (uint32_t i = 0; i < FLOWTAB_CHUNK; i++) {
		struct flow_key k = key4(i, IPPROTO_TCP);

		ck_assert_ptr_nonnull(flowtab_insert(t, &k, 1, i < FLOWTAB_CHUNK / 2 ?
						     FLOWTAB_TCP_ACK : FLOWTAB_TCP_SYN, 0, NULL));
	}
	for (uint32_t step = 0; step < 2 * FLOWTAB_CHUNK / 7; step++) {
		ck_assert_uint_eq(flowtab_expire(t, 1, 7), 0);
		ck_assert(flowtab_audit(t));
	}
	for (uint32_t step = 0; step < 2 * FLOWTAB_CHUNK / 7; step++) {
		freed += flowtab_expire(t, SYN_MS, 7);
		ck_assert(flowtab_audit(t));
	}
	ck_assert_uint_eq(freed, FLOWTAB_CHUNK / 2);
	flowtab_destroy(t);
}
END_TEST

START_TEST(test_expire_budget)
{
	enum { CAP = 8192, N = 6000, LIVE = 1000, BUDGET = 100 };
	struct flowtab *t = table(CAP);
	uint32_t calls = 0, freed = 0, f;

	for (uint32_t i = 0; i < N; i++) {
		struct flow_key k = key4(i, IPPROTO_UDP);

		ck_assert_ptr_nonnull(flowtab_insert(t, &k, 1, 0, 0, NULL));
	}
	for (uint32_t i = 0; i < LIVE; i++) {          /* these stay alive */
		struct flow_key k = key4(i * 5, IPPROTO_UDP);

		flowtab_touch(t, flowtab_lookup(t, &k), 0, 20000);
	}
	ck_assert_uint_eq(flowtab_used(t), N);      /* a pass visits N slots, */
	ck_assert_uint_eq(flowtab_expire(t, UDP_MS - 1, N), 0);
	do {
		f = flowtab_expire(t, UDP_MS + 1000, BUDGET);
		ck_assert_uint_le(f, BUDGET);
		freed += f;
		calls++;
	} while (flowtab_count(t) > LIVE && calls < 1000);
	ck_assert_uint_eq(freed, N - LIVE);
	ck_assert_uint_le(calls, N / BUDGET + 1);
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_EXPIRED], N - LIVE);
	ck_assert(flowtab_audit(t));
	for (uint32_t i = 0; i < N; i++) {
		struct flow_key k = key4(i, IPPROTO_UDP);

		ck_assert_int_eq(flowtab_lookup(t, &k) != NULL, i % 5 == 0 && i / 5 < LIVE);
	}
	/* a whole pass more frees nothing live; later everything goes */
	ck_assert_uint_eq(flowtab_expire(t, UDP_MS + 1000, 2 * N), 0);
	ck_assert_uint_eq(flowtab_expire(t, 20000 + UDP_MS, 2 * N), LIVE);
	ck_assert_uint_eq(flowtab_count(t), 0);
	ck_assert_uint_eq(flowtab_used(t), N);      /* not CAP, freed ones included */
	ck_assert_uint_eq(flowtab_expire(t, 20000 + UDP_MS, 2 * N), 0);
	flowtab_destroy(t);
}
END_TEST

struct walk_seen {
	uint8_t *count;                /* by backend id */
	uint32_t n;
};

static void
walk_count(const struct flowtab_entry *e, void *arg)
{
	struct walk_seen *w = arg;

	ck_assert_uint_lt(e->backend, w->n);
	w->count[e->backend]++;
}

START_TEST(test_walk_exact)
{
	enum { CAP = 4096, N = 3000, CHURN = 1000 };
	struct flowtab *t = table(CAP);
	struct walk_seen w = { calloc(N + 100000, 1), N + 100000 };
	struct flow_key *k = calloc(N, sizeof(*k));
	uint64_t cursor = 0, s = 3;
	uint32_t pages = 0, passed = 0, added = N;

	ck_assert(w.count && k);
	for (uint32_t i = 0; i < N; i++) {
		k[i] = key_random(&s);
		ck_assert_ptr_nonnull(flowtab_insert(t, &k[i], i, 0, 0, NULL));
	}
	for (uint32_t i = 0; i < N; i += 3)            /* holes */
		flowtab_remove(t, flowtab_lookup(t, &k[i]));
	/* entries i % 3 == 1 stay throughout; i % 3 == 2 churn between pages */
	while (cursor != FLOWTAB_WALK_END) {
		uint32_t got = flowtab_walk(t, &cursor, 7, walk_count, &w);
		uint32_t victim = (uint32_t)(rnd(&s) % N);
		struct flowtab_entry *e;

		ck_assert_uint_le(got, 7);
		passed += got;
		pages++;
		if (victim % 3 == 2 && (e = flowtab_lookup(t, &k[victim])) != NULL)
			flowtab_remove(t, e);
		if (added < N + CHURN) {
			struct flow_key x = key_random(&s);

			ck_assert_ptr_nonnull(flowtab_insert(t, &x, added++, 0, 0, NULL));
		}
	}
	for (uint32_t i = 0; i < N; i++)
		ck_assert_uint_le(w.count[i], i % 3 == 1 ? 1 : i % 3 == 2);
	for (uint32_t i = 1; i < N; i += 3)
		ck_assert_uint_eq(w.count[i], 1);
	for (uint32_t i = N; i < added; i++)
		ck_assert_uint_le(w.count[i], 1);
	ck_assert_uint_gt(pages, passed / 7);
	ck_assert_uint_eq(flowtab_walk(t, &cursor, 7, walk_count, &w), 0);
	ck_assert(flowtab_audit(t));

	/* a quiet table: every entry exactly once */
	memset(w.count, 0, w.n);
	cursor = 0;
	passed = 0;
	while (cursor != FLOWTAB_WALK_END)
		passed += flowtab_walk(t, &cursor, 100, walk_count, &w);
	ck_assert_uint_eq(passed, flowtab_count(t));
	for (uint32_t i = 0; i < w.n; i++)
		ck_assert_uint_le(w.count[i], 1);
	flowtab_destroy(t);
	free(w.count);
	free(k);
}
END_TEST

/* Insert TCP SYN keys key4(from .. to - 1) at now: how many went in. */
static uint32_t
insert_many(struct flowtab *t, uint32_t from, uint32_t to, uint32_t now)
{
	uint32_t ok = 0;

	for (uint32_t i = from; i < to; i++) {
		struct flow_key k = key4(i, IPPROTO_TCP);

		ok += flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, now, NULL) != NULL;
	}
	return ok;
}

START_TEST(test_time_wraps)
{
	struct flowtab_params p = params(1024);
	struct flowtab *t;
	struct flow_key k = key4(1, IPPROTO_TCP);
	struct flowtab_entry *e;
	const uint32_t t0 = UINT32_MAX - 4000;     /* 4 s before the wrap */

	p.insert_rate = 1000;                          /* burst 100 */
	t = flowtab_create(&p);
	ck_assert_ptr_nonnull(t);
	e = flowtab_insert(t, &k, 1, FLOWTAB_TCP_SYN, t0, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert(!flowtab_expired(t, e, t0 + SYN_MS - 1));   /* wrapped: 5999 */
	ck_assert(flowtab_expired(t, e, t0 + SYN_MS));
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + 1000),
			 FLOWTAB_EXPORT_NEW);            /* established */
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + 1000 + REFRESH_MS - 1),
			 FLOWTAB_EXPORT_NONE);
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, t0 + 1000 + REFRESH_MS),
			 FLOWTAB_EXPORT_REFRESH);
	ck_assert(!flowtab_expired(t, e, t0 + 1000 + REFRESH_MS + EST_MS - 1));
	ck_assert(flowtab_expired(t, e, t0 + 1000 + REFRESH_MS + EST_MS));
	ck_assert_uint_eq(flowtab_expire(t, t0 + 1000 + REFRESH_MS + 1000, 100), 0);
	ck_assert_uint_eq(flowtab_expire(t, t0 + 1000 + REFRESH_MS + EST_MS, 100), 1);

	/* the token bucket refills across the wrap: 99 tokens left at t0,
	 * a full burst (100) by t0 + 3995, 10 more at t0 + 4005 (wrapped) */
	ck_assert_uint_eq(insert_many(t, 2, 300, t0), 99);
	ck_assert_uint_eq(insert_many(t, 300, 500, t0 + 3995), 100);
	ck_assert_uint_eq(insert_many(t, 500, 600, t0 + 4005), 10);
	flowtab_destroy(t);
}
END_TEST

START_TEST(test_keys_distinct)
{
	struct flowtab *t = table(1024);
	struct flow_key k[5];
	struct flowtab_entry *e[5];

	k[0] = key4(1, IPPROTO_TCP);
	k[1] = k[0], k[1].pad[0] = 1;
	k[2] = k[0], k[2].pad[1] = 0x80;
	k[3] = k[0], k[3].family = FLOW_FAMILY_IPV6;
	k[4] = k[0], k[4].proto = IPPROTO_UDP;
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_ptr_null(flowtab_lookup(t, &k[i]));
		e[i] = flowtab_insert(t, &k[i], i, 0, 0, NULL);
		ck_assert_ptr_nonnull(e[i]);
	}
	ck_assert_uint_eq(flowtab_count(t), 5);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_ptr_eq(flowtab_lookup(t, &k[i]), e[i]);
		ck_assert_uint_eq(e[i]->backend, i);
	}
	flowtab_remove(t, e[0]);
	ck_assert_ptr_null(flowtab_lookup(t, &k[0]));
	for (unsigned i = 1; i < 5; i++)
		ck_assert_ptr_eq(flowtab_lookup(t, &k[i]), e[i]);
	flowtab_destroy(t);
}
END_TEST

START_TEST(test_insert_synced)
{
	struct flowtab *t = table(1024);
	struct flow_key k = key4(1, IPPROTO_TCP);
	struct flowtab_entry *e;

	e = flowtab_insert_synced(t, &k, 3, FLOWTAB_ESTABLISHED, 60000, 1000, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_eq(flowtab_lookup(t, &k), e);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	ck_assert_uint_eq(e->flags,
			  FLOWTAB_FLAG_LIVE | FLOWTAB_FLAG_SYNCED | FLOWTAB_FLAG_EXPORTED);
	ck_assert_uint_eq(e->exported_ms, 1000);
	ck_assert_uint_eq(e->packets, 0);
	ck_assert(!flowtab_expired(t, e, 1000 + 60000 - 1));
	ck_assert(flowtab_expired(t, e, 1000 + 60000));
	ck_assert_int_eq(flowtab_touch(t, e, FLOWTAB_TCP_ACK, 2000), FLOWTAB_EXPORT_NONE);
	ck_assert(!flowtab_expired(t, e, 2000 + EST_MS - 1));

	k = key4(2, IPPROTO_TCP);                      /* lifetime capped at the timeout */
	e = flowtab_insert_synced(t, &k, 3, FLOWTAB_CLOSING, 3600000, 1000, NULL);
	ck_assert(flowtab_expired(t, e, 1000 + CLOSING_MS));
	k = key4(3, IPPROTO_UDP);                      /* 0: dead on arrival */
	e = flowtab_insert_synced(t, &k, 3, FLOWTAB_UDP, 0, 1000, NULL);
	ck_assert(flowtab_expired(t, e, 1000));
	ck_assert_uint_eq(flowtab_stats(t)[FLOWTAB_STAT_SYNCED], 3);
	flowtab_destroy(t);
}
END_TEST

/* A per-backend gauge kept through on_free, as a worker keeps its own. */
enum { GAUGE_BACKENDS = 8 };

struct gauge {
	int64_t live[GAUGE_BACKENDS];
	uint64_t calls;
};

static void
gauge_free(void *arg, const struct flowtab_entry *e)
{
	struct gauge *g = arg;

	ck_assert(e->flags & FLOWTAB_FLAG_LIVE);
	g->live[e->backend % GAUGE_BACKENDS]--;
	g->calls++;
}

static void
gauge_walk(const struct flowtab_entry *e, void *arg)
{
	int64_t *live = arg;

	live[e->backend % GAUGE_BACKENDS]++;
}

static uint32_t
gauge_insert(struct flowtab *t, struct gauge *g, const struct flow_key *k,
	     uint32_t backend, uint32_t now)
{
	if (flowtab_insert(t, k, backend, 0, now, NULL) == NULL)
		return 0;
	g->live[backend % GAUGE_BACKENDS]++;
	return 1;
}

/* Every entry freed (removed, evicted by an insert, expired) passes through
 * on_free once, live, with its backend: the gauge equals the table. */
START_TEST(test_on_free_gauge)
{
	enum { CAP = 1024 };
	struct flowtab_params p = params(CAP);
	struct gauge g = { { 0 }, 0 };
	struct flow_key *k = calloc(CAP, sizeof(*k));
	int64_t walked[GAUGE_BACKENDS] = { 0 };
	uint64_t s = 5, cursor = 0, inserted = 0;
	struct flowtab *t;

	ck_assert_ptr_nonnull(k);
	p.on_free = gauge_free;
	p.on_free_arg = &g;
	t = flowtab_create(&p);
	ck_assert_ptr_nonnull(t);
	for (uint32_t i = 0; i < CAP; i++) {
		k[i] = key_random(&s);
		inserted += gauge_insert(t, &g, &k[i], i, 0);
	}
	for (uint32_t i = 0; i < CAP; i += 2) {     /* half stay alive */
		struct flowtab_entry *e = flowtab_lookup(t, &k[i]);

		if (e != NULL)
			flowtab_touch(t, e, FLOWTAB_TCP_ACK, 990000);
	}
	for (uint32_t i = 0; i < CAP / 4; i++) {    /* inserts evict expired ones */
		struct flow_key x = key_random(&s);

		inserted += gauge_insert(t, &g, &x, i, 1000000);
	}
	for (uint32_t i = 0; i < CAP; i += 16) {    /* some removed */
		struct flowtab_entry *e = flowtab_lookup(t, &k[i]);

		if (e != NULL && !flowtab_expired(t, e, 1000000))
			flowtab_remove(t, e);
	}
	flowtab_expire(t, 1000000, 2 * CAP);       /* the rest of the expired */
	ck_assert_uint_gt(flowtab_stats(t)[FLOWTAB_STAT_EVICTED], 0);
	ck_assert_uint_gt(flowtab_stats(t)[FLOWTAB_STAT_EXPIRED], 0);
	ck_assert_uint_gt(flowtab_stats(t)[FLOWTAB_STAT_REMOVED], 0);
	while (cursor != FLOWTAB_WALK_END)
		flowtab_walk(t, &cursor, 64, gauge_walk, walked);
	for (unsigned b = 0; b < GAUGE_BACKENDS; b++)
		ck_assert_int_eq(g.live[b], walked[b]);
	ck_assert_uint_eq(g.calls + flowtab_count(t), inserted);
	flowtab_destroy(t);
	free(k);
}
END_TEST

START_TEST(test_tune)
{
	struct flowtab_params p = params(1024);
	struct flowtab *t = flowtab_create(&p);
	struct flow_key k = key4(1, IPPROTO_UDP);
	struct flowtab_entry *e;
	uint32_t ok = 0;

	ck_assert_ptr_nonnull(t);
	e = flowtab_insert(t, &k, 7, 0, 0, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert(!flowtab_expired(t, e, UDP_MS / 2));
	/* a shorter UDP timeout holds for the entry already there */
	p.udp_ms = UDP_MS / 4;
	ck_assert_int_eq(flowtab_tune(t, &p), 0);
	ck_assert(flowtab_expired(t, e, UDP_MS / 2));
	ck_assert_uint_eq(flowtab_timeout(t, FLOWTAB_UDP), UDP_MS / 4);
	/* out of range: refused, nothing changed */
	p.udp_ms = 0;
	ck_assert_int_eq(flowtab_tune(t, &p), -EINVAL);
	p.udp_ms = UDP_MS / 4;
	p.tcp_syn_ms = FLOWTAB_TIMEOUT_MAX + 1u;
	ck_assert_int_eq(flowtab_tune(t, &p), -EINVAL);
	ck_assert_uint_eq(flowtab_timeout(t, FLOWTAB_UDP), UDP_MS / 4);
	ck_assert_uint_eq(flowtab_timeout(t, FLOWTAB_SYN), SYN_MS);
	/* an insert cap set live: a full bucket of 64 (rate / 10 < 64), then none
	 * within the same millisecond; capacity stays the table's */
	p.tcp_syn_ms = SYN_MS;
	p.insert_rate = 100;
	p.capacity = 1;
	ck_assert_int_eq(flowtab_tune(t, &p), 0);
	for (uint32_t i = 0; i < 100; i++) {
		struct flow_key n = key4(100 + i, IPPROTO_UDP);

		ok += flowtab_insert(t, &n, 1, 0, 1, NULL) != NULL;
	}
	ck_assert_uint_eq(ok, 64);
	ck_assert_uint_eq(flowtab_capacity(t), 1024);
	/* and lifted again */
	p.insert_rate = 0;
	ck_assert_int_eq(flowtab_tune(t, &p), 0);
	for (uint32_t i = 0; i < 100; i++) {
		struct flow_key n = key4(1000 + i, IPPROTO_UDP);

		ck_assert_ptr_nonnull(flowtab_insert(t, &n, 1, 0, 1, NULL));
	}
	ck_assert(flowtab_audit(t));
	flowtab_destroy(t);
}
END_TEST

static Suite *
flowtab_suite(void)
{
	Suite *s = suite_create("flowtab");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_create_bad_params);
	tcase_add_test(tc, test_insert_lookup_remove);
	tcase_add_test(tc, test_insert_hint_equals_insert);
	tcase_add_test(tc, test_burst_equals_single);
	tcase_add_test(tc, test_burst_equals_single_dense);
	tcase_add_test(tc, test_fill_to_capacity);
	tcase_add_test(tc, test_bytes_per_flow);
	tcase_add_test(tc, test_expired_entries_reused);
	tcase_add_test(tc, test_tcp_state_machine);
	tcase_add_test(tc, test_timeouts_per_state);
	tcase_add_test(tc, test_refresh_once_per_interval);
	tcase_add_test(tc, test_close_exported_once);
	tcase_add_test(tc, test_export_established_only);
	tcase_add_test(tc, test_export_sync_after_packets);
	tcase_add_test(tc, test_provisional_window);
	tcase_add_test(tc, test_adopt);
	tcase_add_test(tc, test_insert_rate_limit);
	tcase_add_test(tc, test_tune);
	tcase_add_test(tc, test_expire_budget);
	tcase_add_test(tc, test_expire_due_times);
	tcase_add_test(tc, test_expire_split_chunk);
	tcase_add_test(tc, test_walk_exact);
	tcase_add_test(tc, test_time_wraps);
	tcase_add_test(tc, test_keys_distinct);
	tcase_add_test(tc, test_insert_synced);
	tcase_add_test(tc, test_on_free_gauge);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(flowtab_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
