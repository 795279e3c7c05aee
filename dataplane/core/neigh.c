/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/neigh.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"

const char *const neigh_state_names[NEIGH_STATE_MAX] = {
	[NEIGH_INCOMPLETE] = "incomplete",
	[NEIGH_REACHABLE] = "reachable",
	[NEIGH_STALE] = "stale",
	[NEIGH_FAILED] = "failed",
};

/* The table's own hash key: "maglb/neigh/v1.." (not part of any contract). */
static const uint8_t neigh_key_bytes[16] = "maglb/neigh/v1..";

#define NEIGH_NONE UINT32_MAX

/* One slot of an open-addressing table with linear probing; family 0: empty. */
struct neigh_entry {
	uint8_t addr[16];
	uint8_t mac[6];
	uint8_t family;
	uint8_t state;          /* enum neigh_state */
	uint8_t has_mac;        /* answered once: FAILED entries keep it, unused */
	uint8_t probes;         /* solicitations since the last answer */
	uint16_t pad;
	uint32_t hash;
	uint32_t reach_ms;      /* this entry's reachable time */
	uint64_t confirmed_ms;  /* last answer */
	uint64_t next_ms;       /* next solicitation (INCOMPLETE, STALE, FAILED) */
};

struct neigh {
	struct neigh_params params;
	struct hash_key key;
	uint32_t capacity;
	uint32_t count;
	uint32_t mask;          /* slots - 1; slots = power of two >= 2 * capacity */
	uint64_t generation;
	struct neigh_stats stats;
	struct neigh_entry slot[];
};

void
neigh_params_default(struct neigh_params *p)
{
	p->reachable_ms = NEIGH_REACHABLE_MS_DEFAULT;
	p->retrans_ms = NEIGH_RETRANS_MS_DEFAULT;
	p->max_probes = NEIGH_MAX_PROBES_DEFAULT;
	p->failed_retry_ms = NEIGH_FAILED_RETRY_MS_DEFAULT;
}

struct neigh *
neigh_create(uint32_t capacity, const struct neigh_params *params)
{
	struct neigh_params p;
	struct neigh *n;
	uint32_t slots = 1;

	if (params != NULL)
		p = *params;
	else
		neigh_params_default(&p);
	if (capacity == 0 || capacity > NEIGH_CAPACITY_MAX || p.reachable_ms == 0 ||
	    p.retrans_ms == 0 || p.max_probes == 0 || p.max_probes > NEIGH_PROBES_MAX ||
	    p.failed_retry_ms == 0) {
		errno = EINVAL;
		return NULL;
	}
	while (slots < 2 * capacity)
		slots <<= 1;
	n = calloc(1, sizeof(*n) + (size_t)slots * sizeof(n->slot[0]));
	if (n == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	n->params = p;
	n->key = hash_key_from_bytes(neigh_key_bytes);
	n->capacity = capacity;
	n->mask = slots - 1;
	return n;
}

void
neigh_destroy(struct neigh *n)
{
	free(n);
}

/* The 16-byte key of an address: IPv4 in the first 4 bytes, the rest 0. */
static void
neigh_key(uint8_t family, const uint8_t *addr, uint8_t key[16])
{
	memset(key, 0, 16);
	memcpy(key, addr, family == 4 ? 4 : 16);
}

static uint32_t
neigh_hash(const struct neigh *n, uint8_t family, const uint8_t key[16])
{
	uint8_t buf[17];

	memcpy(buf, key, 16);
	buf[16] = family;
	return (uint32_t)hash_sip24(&n->key, buf, sizeof(buf));
}

/* The slot holding (family, key), or the empty slot where it would go. */
static uint32_t
neigh_find(const struct neigh *n, uint8_t family, const uint8_t key[16],
	   uint32_t hash)
{
	uint32_t i = hash & n->mask;

	while (n->slot[i].family != 0 &&
	       (n->slot[i].family != family || memcmp(n->slot[i].addr, key, 16) != 0))
		i = (i + 1) & n->mask;
	return i;
}

/* The slot index of a wanted address, or NEIGH_NONE. */
static uint32_t
neigh_index(const struct neigh *n, uint8_t family, const uint8_t *addr)
{
	uint8_t key[16];
	uint32_t i;

	if (family != 4 && family != 6)
		return NEIGH_NONE;
	neigh_key(family, addr, key);
	i = neigh_find(n, family, key, neigh_hash(n, family, key));
	return n->slot[i].family == 0 ? NEIGH_NONE : i;
}

static bool
neigh_usable(const struct neigh_entry *e)
{
	return e->state == NEIGH_REACHABLE || e->state == NEIGH_STALE;
}

int
neigh_want(struct neigh *n, uint8_t family, const uint8_t addr[16], uint64_t now_ms)
{
	struct neigh_entry *e;
	uint8_t key[16];
	uint32_t hash, i;

	if (family != 4 && family != 6)
		return -EINVAL;
	neigh_key(family, addr, key);
	hash = neigh_hash(n, family, key);
	i = neigh_find(n, family, key, hash);
	if (n->slot[i].family != 0)
		return 0;
	if (n->count == n->capacity)
		return -ENOSPC;

	/* commit */
	e = &n->slot[i];
	memset(e, 0, sizeof(*e));
	memcpy(e->addr, key, 16);
	e->family = family;
	e->state = NEIGH_INCOMPLETE;
	e->hash = hash;
	e->reach_ms = n->params.reachable_ms / 2 +
		      (uint32_t)((uint64_t)(hash >> 8) * n->params.reachable_ms >> 24);
	e->next_ms = now_ms;
	n->count++;
	return 0;
}

int
neigh_forget(struct neigh *n, uint8_t family, const uint8_t addr[16])
{
	uint32_t hole = neigh_index(n, family, addr), i;

	if (hole == NEIGH_NONE)
		return -ENOENT;
	if (neigh_usable(&n->slot[hole]))
		n->generation++;
	/* Backward-shift deletion: pull up every later entry of the run whose
	 * home slot is not between the hole and it. */
	for (i = (hole + 1) & n->mask; n->slot[i].family != 0; i = (i + 1) & n->mask) {
		uint32_t home = n->slot[i].hash & n->mask;

		if (((i - home) & n->mask) >= ((i - hole) & n->mask)) {
			n->slot[hole] = n->slot[i];
			hole = i;
		}
	}
	memset(&n->slot[hole], 0, sizeof(n->slot[hole]));
	n->count--;
	return 0;
}

int
neigh_update(struct neigh *n, uint8_t family, const uint8_t addr[16],
	     const uint8_t mac[6], uint64_t now_ms)
{
	struct neigh_entry *e;
	uint32_t i;
	bool changed;

	if (family != 4 && family != 6)
		return -EINVAL;
	i = neigh_index(n, family, addr);
	if (i == NEIGH_NONE) {
		n->stats.ignored++;
		return -ENOENT;
	}
	e = &n->slot[i];
	changed = !neigh_usable(e) || memcmp(e->mac, mac, 6) != 0;

	/* commit */
	memcpy(e->mac, mac, 6);
	e->has_mac = 1;
	e->state = NEIGH_REACHABLE;
	e->probes = 0;
	e->confirmed_ms = now_ms;
	if (changed) {
		n->generation++;
		n->stats.changed++;
	}
	return changed ? 1 : 0;
}

const uint8_t *
neigh_lookup(const struct neigh *n, uint8_t family, const uint8_t addr[16])
{
	uint32_t i = neigh_index(n, family, addr);

	return i != NEIGH_NONE && neigh_usable(&n->slot[i]) ? n->slot[i].mac : NULL;
}

int
neigh_state(const struct neigh *n, uint8_t family, const uint8_t addr[16])
{
	uint32_t i = neigh_index(n, family, addr);

	return i == NEIGH_NONE ? -ENOENT : n->slot[i].state;
}

/* Advance e to now; whether it is due for a solicitation. */
static bool
neigh_advance(struct neigh *n, struct neigh_entry *e, uint64_t now_ms)
{
	if (e->state == NEIGH_REACHABLE) {
		if (now_ms < e->confirmed_ms + e->reach_ms)
			return false;
		e->state = NEIGH_STALE;
		e->probes = 0;
		e->next_ms = now_ms;
	}
	if (now_ms < e->next_ms)
		return false;
	if (e->state != NEIGH_FAILED && e->probes >= n->params.max_probes) {
		if (neigh_usable(e))
			n->generation++;
		e->state = NEIGH_FAILED;
		e->next_ms = now_ms + n->params.failed_retry_ms;
		n->stats.failed++;
		return false;
	}
	return true;
}

uint32_t
neigh_due(struct neigh *n, uint64_t now_ms, struct neigh_addr *out, uint32_t max)
{
	uint32_t count = 0;

	for (uint32_t i = 0; i <= n->mask && count < max; i++) {
		struct neigh_entry *e = &n->slot[i];

		if (e->family == 0 || !neigh_advance(n, e, now_ms))
			continue;
		out[count].family = e->family;
		memcpy(out[count].addr, e->addr, 16);
		count++;
		if (e->state == NEIGH_FAILED) {
			e->next_ms = now_ms + n->params.failed_retry_ms;
		} else {
			e->probes++;
			e->next_ms = now_ms + n->params.retrans_ms;
		}
	}
	n->stats.solicited += count;
	return count;
}

uint64_t
neigh_generation(const struct neigh *n)
{
	return n->generation;
}

uint32_t
neigh_count(const struct neigh *n)
{
	return n->count;
}

void
neigh_stats_get(const struct neigh *n, struct neigh_stats *out)
{
	*out = n->stats;
}
