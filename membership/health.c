/* SPDX-License-Identifier: BSD-3-Clause */
/* The agreed backend down set. See health.h. */
#include "membership/health.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One member's report: its down set, sorted. */
struct report {
	uint32_t node;
	size_t n;
	struct health_key *keys;
};

struct health {
	struct report *reports;
	size_t n_reports;
	struct health_key *down;    /* agreed, sorted */
	size_t n_down;
};

int
health_key_compare(const struct health_key *a, const struct health_key *b)
{
	return memcmp(a, b, sizeof(*a));
}

static int
key_cmp(const void *a, const void *b)
{
	return health_key_compare(a, b);
}

struct health *
health_create(void)
{
	return calloc(1, sizeof(struct health));
}

void
health_destroy(struct health *h)
{
	if (h == NULL)
		return;
	for (size_t i = 0; i < h->n_reports; i++)
		free(h->reports[i].keys);
	free(h->reports);
	free(h->down);
	free(h);
}

static struct report *
report_find(const struct health *h, uint32_t node)
{
	for (size_t i = 0; i < h->n_reports; i++)
		if (h->reports[i].node == node)
			return &h->reports[i];
	return NULL;
}

int
health_report(struct health *h, uint32_t node, const struct health_key *down, size_t n)
{
	struct report *r = report_find(h, node);
	struct health_key *keys = NULL;
	size_t kept = 0;

	if (n > 0) {
		keys = malloc(n * sizeof(*keys));
		if (keys == NULL)
			return -ENOMEM;
		memcpy(keys, down, n * sizeof(*keys));
		qsort(keys, n, sizeof(*keys), key_cmp);
		/* a sender may repeat a key; count it once */
		for (size_t i = 0; i < n; i++)
			if (kept == 0 || health_key_compare(&keys[kept - 1], &keys[i]) != 0)
				keys[kept++] = keys[i];
	}
	if (r == NULL) {
		struct report *grown = realloc(h->reports, (h->n_reports + 1) * sizeof(*grown));

		if (grown == NULL) {
			free(keys);
			return -ENOMEM;
		}
		h->reports = grown;
		r = &h->reports[h->n_reports++];
		*r = (struct report){ .node = node };
	}
	free(r->keys);
	r->keys = keys;
	r->n = kept;
	return 0;
}

void
health_forget(struct health *h, uint32_t node)
{
	struct report *r = report_find(h, node);

	if (r == NULL)
		return;
	free(r->keys);
	*r = h->reports[--h->n_reports];
}

int
health_agree(struct health *h, const uint32_t *voters, size_t n)
{
	struct health_key *all = NULL, *down;
	size_t total = 0, n_down = 0;
	int changed;

	for (size_t v = 0; v < n; v++) {
		const struct report *r = report_find(h, voters[v]);

		total += r != NULL ? r->n : 0;
	}
	if (total > 0 && (all = malloc(total * sizeof(*all))) == NULL)
		return -ENOMEM;
	total = 0;
	for (size_t v = 0; v < n; v++) {
		const struct report *r = report_find(h, voters[v]);

		if (r != NULL && r->n > 0) {
			memcpy(all + total, r->keys, r->n * sizeof(*all));
			total += r->n;
		}
	}
	if (total > 0)
		qsort(all, total, sizeof(*all), key_cmp);
	/* runs of equal keys: one per voter that reports it (reports hold a key once) */
	down = all;
	for (size_t i = 0, j; i < total; i = j) {
		for (j = i + 1; j < total && health_key_compare(&all[i], &all[j]) == 0; j++)
			;
		if ((j - i) * 2 > n)
			down[n_down++] = all[i];
	}
	changed = n_down != h->n_down ||
		  (n_down > 0 && memcmp(down, h->down, n_down * sizeof(*down)) != 0);
	free(h->down);
	h->down = down;
	h->n_down = n_down;
	return changed;
}

const struct health_key *
health_down(const struct health *h, size_t *n)
{
	*n = h->n_down;
	return h->down;
}

bool
health_is_down(const struct health *h, const struct health_key *k)
{
	return h->n_down > 0 &&
	       bsearch(k, h->down, h->n_down, sizeof(*k), key_cmp) != NULL;
}

size_t
health_reporters(const struct health *h, const struct health_key *k, uint32_t *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n_reports; i++) {
		const struct report *r = &h->reports[i];
		uint32_t node = r->node;
		size_t at;

		if (r->n == 0 || bsearch(k, r->keys, r->n, sizeof(*k), key_cmp) == NULL)
			continue;
		/* insert in order among the first cap: reports are few (members) */
		for (at = n < cap ? n : cap; at > 0 && out[at - 1] > node; at--)
			if (at < cap)
				out[at] = out[at - 1];
		if (at < cap)
			out[at] = node;
		n++;
	}
	return n;
}

long
health_reported(const struct health *h, uint32_t node)
{
	const struct report *r = report_find(h, node);

	return r != NULL ? (long)r->n : -1;
}
