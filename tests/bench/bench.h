/* SPDX-License-Identifier: BSD-3-Clause */
/* What the C benchmarks share: a clock and the median of their runs. */
#ifndef MAGLB_TESTS_BENCH_H
#define MAGLB_TESTS_BENCH_H

#include <stdlib.h>
#include <time.h>

/* Monotonic time, ns. */
static inline double
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n-1], n >= 1 (sorts v). */
static inline double
bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

#endif /* MAGLB_TESTS_BENCH_H */
