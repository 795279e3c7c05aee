/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/maglev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const uint8_t maglev_key_offset[16] = "maglb/offset/v1.";
const uint8_t maglev_key_skip[16] = "maglb/skip/v1...";

/*
 * Probing. The populate loop is bound by random probes of the table: about
 * M * ln(M) of them, most when the table is nearly full. Three things keep
 * it fast, none of which changes the result:
 *  - taken slots are a byte map (64 KiB for M = 65537), not the table;
 *  - a backend tests its next 2, 4 or 8 candidates at once (more as the
 *    table fills): independent loads instead of a chain of dependent ones,
 *    and a loop exit that is well predicted;
 *  - once F <= endgame slots are left, a backend's next slot is found the
 *    other way round: the free slot s with the smallest permutation index
 *    j = (s - offset) * skip^-1 mod M. Every slot it passed is taken and
 *    stays taken, so that is the slot probing would reach, in F steps
 *    instead of about M / F probes.
 */
enum { MAGLEV_LANES = 8 };

struct maglev_probe {
	uint32_t pos;                  /* next candidate slot */
	uint32_t lane[MAGLEV_LANES];   /* k * skip mod m */
	uint32_t stride[4];            /* 2^i * skip mod m: the step of 2^i lanes */
};

struct maglev_name {
	const char *name;
	uint32_t index;
};

bool
maglev_is_prime(uint32_t m)
{
	if (m < 2)
		return false;
	if (m % 2 == 0)
		return m == 2;
	for (uint32_t d = 3; (uint64_t)d * d <= m; d += 2)
		if (m % d == 0)
			return false;
	return true;
}

static void
maglev_permute(const struct hash_key key[2], const char *name, uint32_t m,
	       uint32_t *offset, uint32_t *skip)
{
	size_t len = strlen(name);

	*offset = (uint32_t)(hash_sip24(&key[0], name, len) % m);
	*skip = (uint32_t)(hash_sip24(&key[1], name, len) % (m - 1)) + 1;
}

static void
maglev_keys(struct hash_key key[2])
{
	key[0] = hash_key_from_bytes(maglev_key_offset);
	key[1] = hash_key_from_bytes(maglev_key_skip);
}

void
maglev_permutation(const char *name, uint32_t m, uint32_t *offset, uint32_t *skip)
{
	struct hash_key key[2];

	maglev_keys(key);
	maglev_permute(key, name, m, offset, skip);
}

static int
maglev_name_cmp(const void *a, const void *b)
{
	const struct maglev_name *x = a, *y = b;

	return strcmp(x->name, y->name);
}

int
maglev_rank(const struct maglev_backend *b, uint32_t n, uint32_t *order)
{
	struct maglev_name *names = malloc(sizeof(*names) * (n ? n : 1));
	int rc = 0;

	if (names == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		names[i] = (struct maglev_name){ b[i].name, i };
	qsort(names, n, sizeof(*names), maglev_name_cmp);
	for (uint32_t r = 0; r < n; r++) {
		if (r > 0 && strcmp(names[r - 1].name, names[r].name) == 0)
			rc = -EINVAL;
		order[r] = names[r].index;
	}
	free(names);
	return rc;
}

static inline uint32_t
mod_add(uint32_t a, uint32_t b, uint32_t m)
{
	uint32_t x = a + b;     /* a, b < m < 2^24: no overflow */

	return x >= m ? x - m : x;
}

/* Which of the 2^log2_lanes candidates from base are taken, one bit each. */
static inline __attribute__((always_inline)) uint32_t
maglev_taken_mask(const uint8_t *taken, const struct maglev_probe *p, uint32_t base,
		  uint32_t m, const unsigned log2_lanes)
{
	uint32_t mask = 0;

#pragma GCC unroll 8
	for (unsigned k = 0; k < 1u << log2_lanes; k++)
		mask |= (uint32_t)taken[mod_add(base, p->lane[k], m)] << k;
	return mask;
}

/* The first free slot from p->pos on the backend's permutation. */
static inline __attribute__((always_inline)) uint32_t
maglev_next_free(const uint8_t *taken, const struct maglev_probe *p, uint32_t m,
		 const unsigned log2_lanes)
{
	const uint32_t all = (1u << (1u << log2_lanes)) - 1;
	uint32_t base = p->pos, mask;

	while ((mask = maglev_taken_mask(taken, p, base, m, log2_lanes)) == all)
		base = mod_add(base, p->stride[log2_lanes], m);
	return mod_add(base, p->lane[__builtin_ctz(~mask)], m);
}

static uint32_t
gcd(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * One round's turns, interleaved: for t < max weight, every rank with
 * weight > t. Weights are divided by their gcd first. Returns the number of
 * turns, 0 when every weight is 0, or -1 without memory.
 */
static long
maglev_turns(const struct maglev_backend *b, const uint32_t *order, uint32_t n,
	     uint16_t **turns)
{
	uint32_t g = 0, wmax = 0;
	size_t count = 0, k = 0;

	for (uint32_t r = 0; r < n; r++)
		g = gcd(g, b[order[r]].weight);
	if (g == 0)
		return 0;
	for (uint32_t r = 0; r < n; r++) {
		uint32_t w = b[order[r]].weight / g;

		wmax = w > wmax ? w : wmax;
		count += w;
	}
	*turns = malloc(count * sizeof(**turns));
	if (*turns == NULL)
		return -1;
	for (uint32_t t = 0; t < wmax; t++)
		for (uint32_t r = 0; r < n; r++)
			if (b[order[r]].weight / g > t)
				(*turns)[k++] = (uint16_t)r;
	return (long)count;
}

struct maglev_fill {
	const uint16_t *turns;
	size_t n_turns, t;             /* the round's turns; whose turn it is */
	struct maglev_probe *probe;
	uint8_t *taken;
	uint16_t *table;
	uint32_t m, left;              /* table size; free slots */
};

/* Claim slot s for rank r and pass the turn. */
static inline void
maglev_claim(struct maglev_fill *f, uint16_t r, uint32_t s)
{
	f->taken[s] = 1;
	f->table[s] = r;
	f->probe[r].pos = mod_add(s, f->probe[r].lane[1], f->m);
	f->left--;
	if (++f->t == f->n_turns)
		f->t = 0;
}

/*
 * Claim by probing until only `until` slots are free. The state lives in
 * locals: the byte map's stores may alias anything, and reloading *f after
 * each of them would cost more than the probe.
 */
static inline __attribute__((always_inline)) void
maglev_probe_until(struct maglev_fill *f, uint32_t until, const unsigned log2_lanes)
{
	const uint16_t *turns = f->turns;
	struct maglev_probe *probe = f->probe;
	uint8_t *taken = f->taken;
	uint16_t *table = f->table;
	uint32_t m = f->m, left = f->left;
	size_t t = f->t, n_turns = f->n_turns;

	const uint32_t all = (1u << (1u << log2_lanes)) - 1;
	uint16_t r = turns[t];
	uint32_t base = probe[r].pos;
	uint32_t mask = maglev_taken_mask(taken, &probe[r], base, m, log2_lanes);

	/*
	 * Software-pipelined: the next turn's candidates are loaded before this
	 * turn's branch resolves, so a mispredicted branch does not throw that
	 * work away. This turn's claim may take the slot the next turn picks
	 * (or move the next turn's start, when both are one backend's): the
	 * pick is checked once more and searched again from p->pos if so.
	 */
	while (left > until) {
		struct maglev_probe *p = &probe[r];
		size_t t_next = t + 1 == n_turns ? 0 : t + 1;
		uint16_t r_next = turns[t_next];
		uint32_t base_next = probe[r_next].pos;
		uint32_t mask_next = maglev_taken_mask(taken, &probe[r_next], base_next,
						       m, log2_lanes);
		uint32_t s;

		if (__builtin_expect(mask != all, 1)) {
			s = mod_add(base, p->lane[__builtin_ctz(~mask)], m);
			if (__builtin_expect(taken[s], 0))
				s = maglev_next_free(taken, p, m, log2_lanes);
		} else {
			s = maglev_next_free(taken, p, m, log2_lanes);
		}
		taken[s] = 1;
		table[s] = r;
		p->pos = mod_add(s, p->lane[1], m);
		left--;
		t = t_next;
		r = r_next;
		base = base_next;
		mask = mask_next;
	}
	f->left = left;
	f->t = t;
}

/* x mod m for x < 2^48 without a division; q is off by at most one. */
static inline uint32_t
mod48(uint64_t x, uint32_t m, double minv)
{
	int64_t r = (int64_t)(x - (uint64_t)((double)x * minv) * m);

	r += r < 0 ? m : 0;
	r -= r >= (int64_t)m ? m : 0;
	return (uint32_t)r;
}

/* The inverse of a modulo the prime m (extended Euclid; m < 2^24). */
static uint32_t
mod_inverse(uint32_t a, uint32_t m)
{
	int32_t t = 0, nt = 1, r = (int32_t)m, nr = (int32_t)a;

	while (nr != 0) {
		int32_t q = r / nr, tmp;

		tmp = t - q * nt; t = nt; nt = tmp;
		tmp = r - q * nr; r = nr; nr = tmp;
	}
	return (uint32_t)(t < 0 ? t + (int32_t)m : t);
}

/* The last f->left slots: each turn takes the free slot first on its list. */
static int
maglev_endgame(struct maglev_fill *f, const uint32_t *offset, const uint32_t *skip,
	       uint32_t n)
{
	uint32_t *inv = calloc(n, sizeof(*inv));   /* 0: not computed yet */
	uint32_t *free_slots = malloc(f->left * sizeof(*free_slots));
	double minv = 1.0 / f->m;
	uint32_t k = 0;

	if (inv == NULL || free_slots == NULL) {
		free(free_slots);
		free(inv);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < f->m; s++)
		if (!f->taken[s])
			free_slots[k++] = s;
	while (f->left > 0) {
		uint16_t r = f->turns[f->t];
		uint32_t best = 0, best_j = UINT32_MAX;

		if (inv[r] == 0)
			inv[r] = mod_inverse(skip[r], f->m);
		for (uint32_t i = 0; i < f->left; i++) {
			uint32_t d = mod_add(free_slots[i], f->m - offset[r], f->m);
			uint32_t j = mod48((uint64_t)d * inv[r], f->m, minv);

			if (j < best_j) {
				best_j = j;
				best = i;
			}
		}
		uint32_t s = free_slots[best];

		free_slots[best] = free_slots[f->left - 1];
		maglev_claim(f, r, s);
	}
	free(free_slots);
	free(inv);
	return 0;
}

static int
maglev_check_args(const struct maglev_backend *b, uint32_t n, uint32_t m)
{
	if (m < MAGLEV_SIZE_MIN || m > MAGLEV_SIZE_MAX || !maglev_is_prime(m))
		return -EINVAL;
	if (n == 0 || n > MAGLEV_BACKENDS_MAX || n > m)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (b[i].weight > MAGLEV_WEIGHT_MAX || b[i].name == NULL)
			return -EINVAL;
	return 0;
}

/*
 * Probing stops when about sqrt(M) / 2 slots are left: past that, a probing
 * turn (~M / F probes) costs more than an endgame turn (F evaluations), as
 * measured by bench-maglev for M = 65537 and 655373.
 */
static uint32_t
maglev_endgame_size(uint32_t m)
{
	uint32_t e = 1;

	while ((uint64_t)e * e * 4 < m)
		e++;
	return e;
}

static int
maglev_populate(struct maglev_fill *f, const struct maglev_backend *b,
		const uint32_t *rank, uint32_t n)
{
	uint32_t *offset = malloc(n * sizeof(*offset));
	uint32_t *skip = malloc(n * sizeof(*skip));
	struct hash_key key[2];
	uint32_t m = f->m;
	int rc = -ENOMEM;

	if (offset == NULL || skip == NULL)
		goto out;
	maglev_keys(key);
	for (uint32_t r = 0; r < n; r++) {
		struct maglev_probe *p = &f->probe[r];

		maglev_permute(key, b[rank[r]].name, m, &offset[r], &skip[r]);
		p->pos = offset[r];
		p->lane[0] = 0;
		for (int k = 1; k < MAGLEV_LANES; k++)
			p->lane[k] = mod_add(p->lane[k - 1], skip[r], m);
		p->stride[0] = skip[r];
		for (int i = 1; i < 4; i++)
			p->stride[i] = mod_add(p->stride[i - 1], p->stride[i - 1], m);
	}
	/* Lanes per step grow with the share of taken slots: 1/2, 9/10. */
	maglev_probe_until(f, m / 2, 1);
	maglev_probe_until(f, m / 10, 2);
	maglev_probe_until(f, maglev_endgame_size(m), 3);
	rc = maglev_endgame(f, offset, skip, n);
out:
	free(skip);
	free(offset);
	return rc;
}

int
maglev_build(const struct maglev_backend *b, uint32_t n, uint32_t m,
	     uint16_t *table, uint32_t *order)
{
	struct maglev_fill f = { .table = table, .m = m, .left = m };
	uint32_t *rank = NULL;
	uint16_t *turns = NULL;
	long n_turns;
	int rc;

	rc = maglev_check_args(b, n, m);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	rank = malloc(n * sizeof(*rank));
	f.probe = malloc(n * sizeof(*f.probe));
	f.taken = calloc(m, 1);
	if (rank == NULL || f.probe == NULL || f.taken == NULL)
		goto out;
	rc = maglev_rank(b, n, rank);
	if (rc < 0)
		goto out;
	n_turns = maglev_turns(b, rank, n, &turns);
	if (n_turns <= 0) {
		for (uint32_t s = 0; s < m; s++)
			table[s] = MAGLEV_SLOT_NONE;
		rc = n_turns < 0 ? -ENOMEM : -ENODATA;
		goto out;
	}
	f.turns = turns;
	f.n_turns = (size_t)n_turns;
	rc = maglev_populate(&f, b, rank, n);
	if (rc == 0 && order != NULL)
		memcpy(order, rank, n * sizeof(*order));
out:
	free(turns);
	free(f.taken);
	free(f.probe);
	free(rank);
	return rc;
}
