/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-maglev: Maglev table build time, balance and disruption.
 *
 *   bench-maglev --backends N --table M [--runs R]
 *
 * Prints one JSON line: build_ms is the median of R builds (default 21),
 * max_over_mean the largest backend share over the mean, moved_on_remove the
 * fraction of slots that change backend when one backend leaves (ideal 1/N).
 * A benchmark: it prints figures and asserts nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/core/maglev.h"
#include "tests/bench/bench.h"

#define NAME_LEN 16

struct bench {
	uint32_t n, m, runs;
	char (*names)[NAME_LEN];
	struct maglev_backend *backends;
	uint16_t *table, *table2;
	uint32_t *order, *order2;
};

static int
parse_args(int argc, char **argv, struct bench *b)
{
	static const struct option opts[] = {
		{ "backends", required_argument, NULL, 'n' },
		{ "table", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	b->n = 1000;
	b->m = MAGLEV_SIZE_DEFAULT;
	b->runs = 21;
	while ((c = getopt_long(argc, argv, "n:m:r:", opts, NULL)) != -1) {
		unsigned long v;
		char *end;

		errno = 0;
		v = optarg ? strtoul(optarg, &end, 10) : 0;
		if (c == '?' || errno || *end != '\0' || v == 0 || v > UINT32_MAX)
			return -EINVAL;
		if (c == 'n')
			b->n = (uint32_t)v;
		else if (c == 'm')
			b->m = (uint32_t)v;
		else
			b->runs = (uint32_t)v;
	}
	if (b->n < 2 || b->n > MAGLEV_BACKENDS_MAX || !maglev_is_prime(b->m))
		return -EINVAL;
	return 0;
}

/* Slots whose backend name differs between the two builds. */
static double
moved_fraction(const struct bench *b)
{
	uint32_t moved = 0;

	for (uint32_t s = 0; s < b->m; s++) {
		const char *before = b->backends[b->order[b->table[s]]].name;
		const char *after = b->backends[b->order2[b->table2[s]]].name;

		moved += strcmp(before, after) != 0;
	}
	return (double)moved / b->m;
}

static int
run(struct bench *b)
{
	double *ms = calloc(b->runs, sizeof(*ms));
	uint32_t *count = calloc(b->n, sizeof(*count)), max = 0;
	int rc = -ENOMEM;

	if (ms == NULL || count == NULL)
		goto out;
	for (uint32_t r = 0; r < b->runs; r++) {
		double t0 = bench_now_ns();

		rc = maglev_build(b->backends, b->n, b->m, b->table, b->order);
		ms[r] = (bench_now_ns() - t0) / 1e6;
		if (rc < 0)
			goto out;
	}
	for (uint32_t s = 0; s < b->m; s++)
		count[b->table[s]]++;
	for (uint32_t i = 0; i < b->n; i++)
		max = count[i] > max ? count[i] : max;
	/* Remove the backend listed in the middle; rebuild with the rest. */
	rc = maglev_build(b->backends, b->n - 1, b->m, b->table2, b->order2);
	if (rc < 0)
		goto out;
	printf("{\"backends\":%u,\"table\":%u,\"build_ms\":%.3f,"
	       "\"max_over_mean\":%.4f,\"moved_on_remove\":%.4f}\n",
	       b->n, b->m, bench_median(ms, b->runs), max / ((double)b->m / b->n),
	       moved_fraction(b));
out:
	free(count);
	free(ms);
	return rc;
}

int
main(int argc, char **argv)
{
	struct bench b = { 0 };
	int rc;

	if (parse_args(argc, argv, &b) < 0) {
		fprintf(stderr, "usage: %s --backends N (2..%u) --table M (prime) "
			"[--runs R]\n", argv[0], MAGLEV_BACKENDS_MAX);
		return 2;
	}
	b.names = calloc(b.n, sizeof(*b.names));
	b.backends = calloc(b.n, sizeof(*b.backends));
	b.table = calloc(b.m, sizeof(*b.table));
	b.table2 = calloc(b.m, sizeof(*b.table2));
	b.order = calloc(b.n, sizeof(*b.order));
	b.order2 = calloc(b.n, sizeof(*b.order2));
	if (!b.names || !b.backends || !b.table || !b.table2 || !b.order || !b.order2) {
		fprintf(stderr, "bench-maglev: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < b.n; i++) {
		/* 198.18.0.0/15, the benchmarking range; any distinct names do. */
		snprintf(b.names[i], NAME_LEN, "198.%u.%u.%u", (18 + (i + 1) / 65536) % 256,
			 (i + 1) / 256 % 256, (i + 1) % 256);
		b.backends[i] = (struct maglev_backend){ b.names[i], 1 };
	}
	/* The removed backend is the last in b.backends: move the middle one there. */
	struct maglev_backend mid = b.backends[b.n / 2];
	b.backends[b.n / 2] = b.backends[b.n - 1];
	b.backends[b.n - 1] = mid;
	rc = run(&b);
	if (rc < 0)
		fprintf(stderr, "bench-maglev: build failed: %s\n", strerror(-rc));
	free(b.order2);
	free(b.order);
	free(b.table2);
	free(b.table);
	free(b.backends);
	free(b.names);
	return rc < 0 ? 1 : 0;
}
