/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-flowtab: a worker's connection table, per operation.
 *
 *   bench-flowtab --capacity N --flows F [--runs R] [--seed S] [--ipv4]
 *
 * Inserts F random keys (IPv4 and IPv6, TCP and UDP; --ipv4: IPv4 only, as
 * the dataplane benchmark's, whose hash then never mispredicts on the
 * family) into a new table of
 * capacity N, then looks the F keys up in a random order, one at a time
 * (lookup_hit_ns) and 32 at a time (lookup_burst32_ns), then looks up F keys
 * that are not in the table (lookup_miss_ns one at a time,
 * lookup_miss_burst32_ns 32 at a time). insert_ns is an insert whose
 * buckets are not in L1/L2; new_flow_burst32_ns is the packet path of new
 * flows on a second new table: a burst lookup of 32 new keys, then an insert
 * of each (whose buckets the lookup brought in). Keys to look up sit in an
 * array in lookup order, as a worker has them in its packets (in cache).
 * Each new table first gets one untimed pass of lookups (see warm()).
 * Each figure is the median of R runs (default 3), each on new tables.
 * Prints one JSON line; a benchmark: it asserts nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netinet/in.h>

#include "dataplane/core/flowtab.h"
#include "tests/bench/bench.h"

enum { BURST = 32, RUNS_MAX = 15 };

struct bench {
	uint32_t capacity, flows, runs;
	bool ipv4;
	uint64_t seed;
	struct flow_key *keys;          /* insert order */
	struct flow_key *hits;          /* the same keys, shuffled */
	struct flow_key *misses;        /* keys never inserted */
	const struct flow_key **ptrs;   /* burst input */
	uint32_t inserted;
	size_t bytes_per_flow, memory;
	uint64_t moved;
};

enum { INSERT, HIT, HIT_BURST, MISS, MISS_BURST, NEW_FLOW, FIGURES };

static volatile uint64_t sink;

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void
key_random(struct flow_key *k, uint64_t *s, bool ipv4)
{
	uint64_t r = rnd(s), a = rnd(s), c = rnd(s);

	memset(k, 0, sizeof(*k));
	k->family = (r & 1) && !ipv4 ? FLOW_FAMILY_IPV6 : FLOW_FAMILY_IPV4;
	k->proto = (r & 2) ? IPPROTO_UDP : IPPROTO_TCP;
	k->vip_port = (uint16_t)(r >> 8);
	k->client_port = (uint16_t)(r >> 24);
	memcpy(k->vip, &a, k->family == FLOW_FAMILY_IPV6 ? 8 : 4);
	memcpy(k->client, &c, k->family == FLOW_FAMILY_IPV6 ? 8 : 4);
	if (k->family == FLOW_FAMILY_IPV6) {
		a = rnd(s), c = rnd(s);
		memcpy(k->vip + 8, &a, 8);
		memcpy(k->client + 8, &c, 8);
	}
}

static int
parse_args(int argc, char **argv, struct bench *b)
{
	static const struct option opts[] = {
		{ "capacity", required_argument, NULL, 'c' },
		{ "flows", required_argument, NULL, 'f' },
		{ "runs", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "ipv4", no_argument, NULL, '4' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	b->capacity = 1u << 20;
	b->flows = 900000;
	b->runs = 3;
	b->seed = 0x243f6a8885a308d3ull;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		unsigned long long v;

		if (c == '4') {
			b->ipv4 = true;
			continue;
		}
		if (c == '?' || optarg == NULL)
			return -EINVAL;
		v = strtoull(optarg, NULL, 0);
		if (c == 'c')
			b->capacity = (uint32_t)v;
		else if (c == 'f')
			b->flows = (uint32_t)v;
		else if (c == 'r')
			b->runs = (uint32_t)v;
		else
			b->seed = v | 1;
	}
	if (b->capacity == 0 || b->capacity > FLOWTAB_CAPACITY_MAX || b->flows == 0 ||
	    b->flows > b->capacity || b->runs == 0 || b->runs > RUNS_MAX)
		return -EINVAL;
	return 0;
}

static int
keys_make(struct bench *b)
{
	uint64_t s = b->seed;
	uint32_t n = b->flows;

	b->keys = malloc((size_t)n * sizeof(*b->keys));
	b->hits = malloc((size_t)n * sizeof(*b->hits));
	b->misses = malloc((size_t)n * sizeof(*b->misses));
	b->ptrs = malloc((size_t)n * sizeof(*b->ptrs));
	if (!b->keys || !b->hits || !b->misses || !b->ptrs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		key_random(&b->keys[i], &s, b->ipv4);
		key_random(&b->misses[i], &s, b->ipv4);   /* a clash: 2^-90 odds or less */
	}
	memcpy(b->hits, b->keys, (size_t)n * sizeof(*b->hits));
	for (uint32_t i = n - 1; i > 0; i--) {   /* Fisher-Yates */
		uint32_t j = (uint32_t)(rnd(&s) % (i + 1));
		struct flow_key k = b->hits[i];

		b->hits[i] = b->hits[j];
		b->hits[j] = k;
	}
	return 0;
}

static double
time_single(struct flowtab *t, const struct flow_key *k, uint32_t n)
{
	uint64_t sum = 0;
	double t0 = bench_now_ns();

	for (uint32_t i = 0; i < n; i++) {
		struct flowtab_entry *e = flowtab_lookup(t, &k[i]);

		sum += e != NULL ? e->backend : 1;
	}
	sink += sum;
	return (bench_now_ns() - t0) / n;
}

static double
time_burst(struct flowtab *t, const struct flow_key *k, const struct flow_key **ptrs,
	   uint32_t n)
{
	struct flowtab_entry *out[BURST];
	uint64_t sum = 0;
	double t0;

	for (uint32_t i = 0; i < n; i++)
		ptrs[i] = &k[i];
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < n; i += BURST) {
		uint32_t c = n - i < BURST ? n - i : BURST;

		flowtab_lookup_burst(t, ptrs + i, c, out);
		for (uint32_t j = 0; j < c; j++)
			sum += out[j] != NULL ? out[j]->backend : 1;
	}
	sink += sum;
	return (bench_now_ns() - t0) / n;
}

/* A table in use has its buckets in cache as far as the cache allows; a new
 * one has just had its entries written over them: one pass of lookups (all
 * misses) puts them back. */
static void
warm(struct flowtab *t, const struct bench *b)
{
	time_burst(t, b->misses, b->ptrs, b->flows);
}

static struct flowtab *
table_new(const struct bench *b)
{
	struct flowtab_params p = {
		.capacity = b->capacity,
		.seed = b->seed * 0x9e3779b97f4a7c15ull + (uint64_t)bench_now_ns(),
		.tcp_syn_ms = FLOWTAB_TIMEOUT_MAX, .tcp_established_ms = FLOWTAB_TIMEOUT_MAX,
		.tcp_closing_ms = FLOWTAB_TIMEOUT_MAX, .udp_ms = FLOWTAB_TIMEOUT_MAX,
	};

	return flowtab_create(&p);
}

/* New flows as a worker meets them: a burst lookup that misses, then an
 * insert per key. */
static int
time_new_flows(const struct bench *b, double *ns)
{
	struct flowtab *t = table_new(b);
	struct flowtab_entry *out[BURST];
	uint32_t n = b->flows, ok = 0;
	double t0;

	if (t == NULL)
		return -errno;
	warm(t, b);
	for (uint32_t i = 0; i < n; i++)
		b->ptrs[i] = &b->keys[i];
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < n; i += BURST) {
		uint32_t c = n - i < BURST ? n - i : BURST;

		flowtab_lookup_burst(t, b->ptrs + i, c, out);
		for (uint32_t j = 0; j < c; j++)
			if (out[j] == NULL)
				ok += flowtab_insert(t, &b->keys[i + j], i + j, FLOWTAB_TCP_SYN,
						     0, NULL) != NULL;
	}
	*ns = (bench_now_ns() - t0) / n;
	sink += ok;
	flowtab_destroy(t);
	return 0;
}

/* One run on new tables: the figures in ns per operation. */
static int
run(struct bench *b, double fig[FIGURES])
{
	struct flowtab *t = table_new(b);
	uint32_t n = b->flows, ok = 0;
	double t0;

	if (t == NULL)
		return -errno;
	warm(t, b);
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < n; i++)
		ok += flowtab_insert(t, &b->keys[i], i, FLOWTAB_TCP_SYN, 0, NULL) != NULL;
	fig[INSERT] = (bench_now_ns() - t0) / n;
	fig[HIT] = time_single(t, b->hits, n);
	fig[HIT_BURST] = time_burst(t, b->hits, b->ptrs, n);
	fig[MISS] = time_single(t, b->misses, n);
	fig[MISS_BURST] = time_burst(t, b->misses, b->ptrs, n);
	b->inserted = ok;
	b->bytes_per_flow = flowtab_bytes_per_flow(t);
	b->memory = flowtab_memory(t);
	b->moved = flowtab_stats(t)[FLOWTAB_STAT_MOVED];
	flowtab_destroy(t);
	return time_new_flows(b, &fig[NEW_FLOW]);
}

int
main(int argc, char **argv)
{
	struct bench b;
	double fig[FIGURES][RUNS_MAX], med[FIGURES];
	int rc;

	memset(&b, 0, sizeof(b));
	if (parse_args(argc, argv, &b) != 0) {
		fprintf(stderr, "usage: bench-flowtab --capacity N --flows F (F <= N <= %u) "
			"[--runs R (1..%d)] [--seed S] [--ipv4]\n", FLOWTAB_CAPACITY_MAX, RUNS_MAX);
		return 2;
	}
	rc = keys_make(&b);
	for (uint32_t r = 0; rc == 0 && r < b.runs; r++) {
		double one[FIGURES] = { 0 };

		rc = run(&b, one);
		for (int f = 0; f < FIGURES; f++)
			fig[f][r] = one[f];
	}
	if (rc != 0) {
		fprintf(stderr, "bench-flowtab: %s\n", strerror(-rc));
		return 1;
	}
	for (int f = 0; f < FIGURES; f++) {
		med[f] = bench_median(fig[f], b.runs);
	}
	printf("{\"capacity\":%u,\"flows\":%u,\"inserted\":%u,\"bytes_per_flow\":%zu,"
	       "\"memory_bytes\":%zu,"
	       "\"insert_ns\":%.1f,\"lookup_hit_ns\":%.1f,\"lookup_burst32_ns\":%.1f,"
	       "\"lookup_miss_ns\":%.1f,\"lookup_miss_burst32_ns\":%.1f,"
	       "\"new_flow_burst32_ns\":%.1f,\"moved\":%llu}\n",
	       b.capacity, b.flows, b.inserted, b.bytes_per_flow, b.memory, med[INSERT], med[HIT],
	       med[HIT_BURST], med[MISS], med[MISS_BURST], med[NEW_FLOW],
	       (unsigned long long)b.moved);
	free(b.keys);
	free(b.hits);
	free(b.misses);
	free(b.ptrs);
	return 0;
}
