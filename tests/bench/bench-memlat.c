/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-memlat: the machine's memory, as the flow table meets it.
 *
 * For working sets from 1 MiB to 1 GiB (transparent huge pages asked for, as
 * flowtab_create() does), one cache line per node of a random cyclic
 * permutation:
 *   chase_ns     one load at a time, each address from the previous load:
 *                the latency of a random access at that size;
 *   parallel_ns  16 such chains interleaved: the cost per access when the
 *                core keeps many misses in flight (a burst lookup's case).
 * A new flow in a table of millions costs at least one such random access
 * (its bucket); tests/bench/README.md uses these figures. Prints one JSON
 * line; a benchmark: it asserts nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "tests/bench/bench.h"

enum { LINE = 64, CHAINS = 16, STEPS = 1 << 23 };

struct node {
	struct node *next;
	char pad[LINE - sizeof(struct node *)];
};

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Link the n nodes at a into one random cycle; the first node of it. */
static struct node *
link_random(struct node *a, size_t n, uint64_t *seed)
{
	uint32_t *order = malloc(n * sizeof(*order));

	if (order == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = rnd(seed) % (i + 1);
		uint32_t x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (size_t i = 0; i < n; i++)
		a[order[i]].next = &a[order[(i + 1) % n]];
	free(order);
	return &a[0];
}

static double
chase(struct node *p)
{
	double t0 = bench_now_ns();

	for (uint32_t i = 0; i < STEPS; i++)
		p = p->next;
	__asm__ volatile("" : : "r"(p));
	return (bench_now_ns() - t0) / STEPS;
}

/* CHAINS walkers on the same cycle, spaced apart: independent misses. */
static double
chase_parallel(struct node *start)
{
	struct node *q[CHAINS];
	double t0;

	q[0] = start;
	for (unsigned c = 1; c < CHAINS; c++) {
		q[c] = q[c - 1];
		for (unsigned k = 0; k < 4099; k++)
			q[c] = q[c]->next;
	}
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < STEPS / CHAINS; i++)
		for (unsigned c = 0; c < CHAINS; c++)
			q[c] = q[c]->next;
	for (unsigned c = 0; c < CHAINS; c++)
		__asm__ volatile("" : : "r"(q[c]));
	return (bench_now_ns() - t0) / STEPS;
}

int
main(void)
{
	static const unsigned mib[] = { 1, 4, 16, 64, 256, 1024 };
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	const char *sep = "";

	printf("{\"sizes\":[");
	for (size_t s = 0; s < sizeof(mib) / sizeof(mib[0]); s++) {
		size_t bytes = (size_t)mib[s] << 20;
		struct node *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *start;

		if (a == MAP_FAILED) {
			perror("bench-memlat: mmap");
			return 1;
		}
#ifdef MADV_HUGEPAGE
		(void)madvise(a, bytes, MADV_HUGEPAGE);
#endif
		start = link_random(a, bytes / LINE, &seed);
		if (start == NULL) {
			perror("bench-memlat: malloc");
			return 1;
		}
		printf("%s{\"mib\":%u,\"chase_ns\":%.1f,\"parallel_ns\":%.1f}", sep, mib[s],
		       chase(start), chase_parallel(start));
		sep = ",";
		munmap(a, bytes);
	}
	printf("]}\n");
	return 0;
}
