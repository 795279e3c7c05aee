/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * syncd's entry store (syncd/cache.h) against a plain model: lookups,
 * overwrites, removals, expiry and walks while the buckets double step by
 * step, and the batched (hashed, prefetched) operations beside the single
 * ones.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "syncd/cache.h"
#include "syncd/catalog.h"

enum {
	KEYS = 200000,          /* past several doublings of the buckets */
	ORIGIN_SELF = 1,
	ORIGIN_PEER = 2,
	LIFETIME_MS = 60000,
	BATCH = 32,
};

static const char *const config_text =
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n"
	"node = { id = 1; address = \"198.18.0.11\"; };\n"
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
	"vips = (\n"
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";\n"
	"    encap = \"l2\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; },\n"
	"      { address = \"198.18.0.22\"; mac = \"02:00:00:00:00:22\"; } ); }\n"
	");\n";

static struct config *cfg;
static struct catalog *cat;
static struct cache *c;

/* The model: what key i holds (backend + 1; 0 absent). */
static uint8_t model[KEYS];

static void
setup(void)
{
	char err[CONFIG_ERROR_MAX];

	cfg = config_load_string(config_text, "t.conf", err, sizeof(err));
	ck_assert_msg(cfg != NULL, "%s", err);
	cat = catalog_create(cfg);
	ck_assert_ptr_nonnull(cat);
	c = cache_create(cat, ORIGIN_SELF);
	ck_assert_ptr_nonnull(c);
	memset(model, 0, sizeof(model));
}

static void
teardown(void)
{
	cache_destroy(c);
	catalog_destroy(cat);
	config_free(cfg);
}

/* Key i: a client of 198.18.128.0/17-ish addresses and ports, all distinct. */
static struct cache_key
key(uint32_t i)
{
	struct cache_key k = { .client_port = (uint16_t)(1024 + i % 60000), .vip_port = 80 };
	uint32_t a = 0xc6128000u + i / 60000;

	k.client[0] = (uint8_t)(a >> 24);
	k.client[1] = (uint8_t)(a >> 16);
	k.client[2] = (uint8_t)(a >> 8);
	k.client[3] = (uint8_t)a;
	return k;
}

/* The i of key(i). */
static uint32_t
key_index(const struct cache_key *k)
{
	uint32_t a = (uint32_t)k->client[0] << 24 | (uint32_t)k->client[1] << 16 |
		     (uint32_t)k->client[2] << 8 | k->client[3];

	return (a - 0xc6128000u) * 60000 + (k->client_port - 1024u);
}

static struct cache_value
value(uint16_t backend, uint32_t origin, uint32_t now_ms)
{
	return (struct cache_value){ .backend = backend, .origin = origin,
				     .expires_ms = now_ms + LIFETIME_MS };
}

/* Every key agrees with the model, and the count with the model's. */
static void
check_model(uint32_t now_ms)
{
	uint32_t held = 0;

	for (uint32_t i = 0; i < KEYS; i++) {
		struct cache_key k = key(i);
		struct cache_value v;
		bool got = cache_get(c, &k, now_ms, &v);

		ck_assert_msg(got == (model[i] != 0), "key %u: %d, model %u", i, got, model[i]);
		if (got)
			ck_assert_uint_eq(v.backend + 1u, model[i]);
		held += model[i] != 0;
	}
	ck_assert_uint_eq(cache_count(c), held);
}

START_TEST(test_grow_insert_remove)
{
	uint32_t now = 1000;
	uint64_t rnd = 88172645463325252ull;

	/* insert every key, removing and overwriting some on the way */
	for (uint32_t i = 0; i < KEYS; i++) {
		struct cache_key k = key(i);
		struct cache_value v = value((uint16_t)(i & 1), ORIGIN_PEER, now);

		ck_assert_int_eq(cache_upsert(c, &k, &v, now), 1);
		model[i] = (uint8_t)((i & 1) + 1);
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		if (rnd % 4 == 0) {     /* an earlier key goes */
			uint32_t j = (uint32_t)(rnd >> 8) % (i + 1);
			struct cache_key kj = key(j);

			ck_assert(cache_remove(c, &kj) == (model[j] != 0));
			model[j] = 0;
		} else if (rnd % 4 == 1) {      /* an earlier key changes backend */
			uint32_t j = (uint32_t)(rnd >> 8) % (i + 1);
			struct cache_key kj = key(j);
			struct cache_value vj = value(1, ORIGIN_PEER, now);

			ck_assert_int_eq(cache_upsert(c, &kj, &vj, now), model[j] == 0);
			model[j] = 2;
		}
		/* mid-growth now and then: everything is still found */
		if (i % 50021 == 0)
			check_model(now);
	}
	check_model(now);
	ck_assert_uint_eq(cache_group_stats(c, 0).peers, cache_count(c));
}
END_TEST

/* A walk sees each entry held for the whole walk once, while keys come and go. */
START_TEST(test_walk_while_growing)
{
	uint32_t now = 1000, cursor = 0, next_new = KEYS / 2;
	struct cache_key k;
	struct cache_value v;
	static uint8_t seen[KEYS];

	memset(seen, 0, sizeof(seen));
	for (uint32_t i = 0; i < KEYS / 2; i++) {
		k = key(i);
		v = value(0, ORIGIN_SELF, now);
		ck_assert_int_eq(cache_upsert(c, &k, &v, now), 1);
	}
	while (cache_next(c, &cursor, now, &k, &v)) {
		struct cache_key nk;
		struct cache_value nv = value(1, ORIGIN_PEER, now);
		uint32_t i = key_index(&k);

		ck_assert_uint_lt(i, KEYS);
		if (i >= KEYS / 2)
			continue;       /* added during the walk: it may or may not show */
		ck_assert_uint_eq(seen[i], 0);
		seen[i] = 1;
		/* two new keys for each one walked: the buckets double meanwhile */
		for (int j = 0; j < 2 && next_new < KEYS; j++, next_new++) {
			nk = key(next_new);
			ck_assert_int_eq(cache_upsert(c, &nk, &nv, now), 1);
		}
	}
	for (uint32_t i = 0; i < KEYS / 2; i++)
		ck_assert_msg(seen[i], "key %u not walked", i);
	ck_assert_uint_eq(cache_count(c), KEYS);
}
END_TEST

START_TEST(test_expire_while_growing)
{
	uint32_t now = 1000, freed = 0;

	for (uint32_t i = 0; i < KEYS; i++) {
		struct cache_key k = key(i);
		struct cache_value v = value(0, ORIGIN_PEER, now);

		/* every other key short-lived */
		if (i & 1)
			v.expires_ms = now + 10;
		ck_assert_int_eq(cache_upsert(c, &k, &v, now), 1);
		model[i] = (i & 1) ? 0 : 1;
	}
	now += 11;
	while (cache_count(c) > KEYS / 2 && freed < KEYS)
		freed += cache_expire(c, now, 4096);
	ck_assert_uint_eq(freed, KEYS / 2);
	check_model(now);
}
END_TEST

/* The hashed operations after cache_prefetch() do what the single ones do. */
START_TEST(test_batched_ops)
{
	uint32_t now = 1000;

	for (uint32_t base = 0; base < KEYS; base += BATCH) {
		struct cache_key k[BATCH];
		uint32_t h[BATCH];
		uint32_t n = KEYS - base < BATCH ? KEYS - base : BATCH;

		for (uint32_t j = 0; j < n; j++) {
			k[j] = key(base + j);
			h[j] = cache_hash(c, &k[j]);
		}
		cache_prefetch(c, h, n);
		for (uint32_t j = 0; j < n; j++) {
			struct cache_value v = value(1, ORIGIN_SELF, now);

			ck_assert_int_eq(cache_upsert_hashed(c, &k[j], h[j], &v, now), 1);
			ck_assert(cache_get_hashed(c, &k[j], h[j], now, NULL));
			model[base + j] = 2;
			if (j % 3 == 0) {
				ck_assert(cache_remove_hashed(c, &k[j], h[j]));
				ck_assert(!cache_mark_seen_hashed(c, &k[j], h[j]));
				model[base + j] = 0;
			}
		}
	}
	check_model(now);
	ck_assert_uint_eq(cache_group_stats(c, 0).own, cache_count(c));
}
END_TEST

/* Two caches that hold the same entries, learnt in other orders, agree. */
START_TEST(test_digest_order_free)
{
	struct cache *d = cache_create(cat, ORIGIN_SELF);
	uint32_t now = 1000;

	ck_assert_ptr_nonnull(d);
	for (uint32_t i = 0; i < KEYS; i++) {
		struct cache_key a = key(i), b = key(KEYS - 1 - i);
		struct cache_value v = value(0, ORIGIN_PEER, now);

		ck_assert_int_eq(cache_upsert(c, &a, &v, now), 1);
		ck_assert_int_eq(cache_upsert(d, &b, &v, now), 1);
	}
	ck_assert_uint_eq(cache_group_stats(c, 0).digest, cache_group_stats(d, 0).digest);
	ck_assert_uint_eq(cache_group_digest(c, 0, now, 0).digest,
			  cache_group_stats(d, 0).digest);
	cache_destroy(d);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_grow_insert_remove);
	tcase_add_test(tc, test_walk_while_growing);
	tcase_add_test(tc, test_expire_while_growing);
	tcase_add_test(tc, test_batched_ops);
	tcase_add_test(tc, test_digest_order_free);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
