/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/synced.h"

#include <errno.h>
#include <string.h>

#include <qb/qblog.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

struct synced {
	struct rte_hash *hash;
	uint32_t cursor;            /* rte_hash_iterate position of the sweep */
	uint32_t sweep_ms;          /* when the sweep last started from 0 */
	bool swept;                 /* sweep_ms is set */
	uint32_t count;             /* keys in the hash: the writer's, atomic.
				     * (rte_hash_count() still counts deleted
				     * keys until RCU reclaims their slots.) */
};

static void
count_add(struct synced *s, int32_t delta)
{
	__atomic_store_n(&s->count, s->count + (uint32_t)delta, __ATOMIC_RELAXED);
}

/* The value lives in the hash's 64-bit data word: no separate allocation. */
static inline void *
value_pack(uint32_t dest, uint32_t expires_ms)
{
	return (void *)(uintptr_t)((uint64_t)expires_ms << 32 | dest);
}

static inline struct synced_value
value_unpack(const void *data)
{
	uint64_t v = (uint64_t)(uintptr_t)data;

	return (struct synced_value){ (uint32_t)v, (uint32_t)(v >> 32) };
}

struct synced *
synced_create(const char *name, uint32_t capacity, struct rte_rcu_qsbr *rcu,
	      int socket)
{
	struct rte_hash_parameters params = {
		.name = name,
		.entries = capacity,
		.key_len = sizeof(struct flow_key),
		.hash_func = rte_hash_crc,
		.hash_func_init_val = (uint32_t)rte_rdtsc(),
		.socket_id = socket,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};
	struct rte_hash_rcu_config rcu_cfg = {
		.v = rcu,
		.mode = RTE_HASH_QSBR_MODE_DQ,
	};
	struct synced *s;

	_Static_assert(sizeof(void *) == sizeof(uint64_t), "value packing needs 64-bit pointers");
	s = rte_zmalloc_socket("synced", sizeof(*s), 0, socket);
	if (s == NULL) {
		qb_log(LOG_ERR, "synced table: out of memory");
		return NULL;
	}
	s->hash = rte_hash_create(&params);
	if (s->hash == NULL) {
		qb_log(LOG_ERR, "synced table: cannot create %u entries: %s",
		       capacity, rte_strerror(rte_errno));
		goto fail;
	}
	if (rte_hash_rcu_qsbr_add(s->hash, &rcu_cfg) != 0) {
		qb_log(LOG_ERR, "synced table: cannot attach RCU: %s",
		       rte_strerror(rte_errno));
		goto fail;
	}
	return s;
fail:
	synced_destroy(s);
	return NULL;
}

void
synced_destroy(struct synced *s)
{
	if (s == NULL)
		return;
	rte_hash_free(s->hash);
	rte_free(s);
}

int
synced_upsert(struct synced *s, const struct flow_key *k, uint32_t dest,
	      uint32_t expires_ms)
{
	hash_sig_t sig = rte_hash_hash(s->hash, k);      /* once for both calls */
	bool known = rte_hash_lookup_with_hash(s->hash, k, sig) >= 0;
	/* An existing key has its data word replaced atomically (LF mode). */
	int rc = rte_hash_add_key_with_hash_data(s->hash, k, sig,
						 value_pack(dest, expires_ms));

	if (rc < 0)
		return -ENOSPC;
	if (!known)
		count_add(s, 1);
	return 0;
}

int
synced_remove(struct synced *s, const struct flow_key *k)
{
	if (rte_hash_del_key(s->hash, k) < 0)
		return -ENOENT;
	count_add(s, -1);
	return 0;
}

uint32_t
synced_expire(struct synced *s, uint32_t now_ms, uint32_t budget,
	      bool (*dest_valid)(void *arg, uint32_t dest), void *arg)
{
	uint32_t freed = 0;

	if (__atomic_load_n(&s->count, __ATOMIC_RELAXED) == 0) {
		s->cursor = 0;
		return 0;
	}
	if (s->cursor == 0) {
		if (s->swept && (int32_t)(now_ms - s->sweep_ms) < SYNCED_SWEEP_MS)
			return 0;
		s->sweep_ms = now_ms;
		s->swept = true;
	}
	while (budget-- > 0) {
		const void *key;
		void *data;
		struct synced_value v;

		if (rte_hash_iterate(s->hash, &key, &data, &s->cursor) < 0) {
			s->cursor = 0;
			break;
		}
		v = value_unpack(data);
		if ((int32_t)(v.expires_ms - now_ms) <= 0 ||
		    (dest_valid != NULL && !dest_valid(arg, v.dest))) {
			/* Deleting behind the cursor is safe for the iterator. */
			if (rte_hash_del_key(s->hash, key) >= 0)
				freed++;
		}
	}
	count_add(s, -(int32_t)freed);
	return freed;
}

uint64_t
synced_lookup_burst(const struct synced *s, const struct flow_key *keys[],
		    uint32_t n, uint32_t now_ms, struct synced_value out[])
{
	void *data[SYNCED_BURST_MAX];
	uint64_t hits = 0, live = 0;

	if (n == 0 || __atomic_load_n(&s->count, __ATOMIC_RELAXED) == 0)
		return 0;
	if (rte_hash_lookup_bulk_data(s->hash, (const void **)keys, n, &hits, data) <= 0)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!(hits >> i & 1))
			continue;
		out[i] = value_unpack(data[i]);
		if ((int32_t)(out[i].expires_ms - now_ms) > 0)
			live |= 1ull << i;
	}
	return live;
}

bool
synced_next(const struct synced *s, uint32_t *cursor, struct flow_key *k,
	     struct synced_value *v)
{
	const void *key;
	void *data;

	if (rte_hash_iterate(s->hash, &key, &data, cursor) < 0)
		return false;
	memcpy(k, key, sizeof(*k));
	*v = value_unpack(data);
	return true;
}

uint32_t
synced_count(const struct synced *s)
{
	return __atomic_load_n(&s->count, __ATOMIC_RELAXED);
}
