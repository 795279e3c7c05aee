/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of flow entries synced from peers: one per node, one writer (the
 * control thread, applying IMPORT batches from syncd), lock-free readers (the
 * workers), reclaimed through RCU (rte_hash with RW_CONCURRENCY_LF and a
 * QSBR defer queue). A worker that hits here promotes the entry into its own
 * table and from then on carries the flow.
 */
#ifndef MAGLB_DATAPLANE_SYNCED_H
#define MAGLB_DATAPLANE_SYNCED_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/core/flow_key.h"
#include "dataplane/core/forward.h"   /* struct synced_value: a hit */

struct rte_rcu_qsbr;
struct synced;

enum {
	SYNCED_BURST_MAX = 64,          /* RTE_HASH_LOOKUP_BULK_MAX */
	SYNCED_SWEEP_MS = 1000,         /* synced_expire(): a sweep per second at most */
};

/*
 * Create a table of capacity entries whose readers report quiescent states
 * on rcu. Returns NULL after logging why. Main lcore, at start-up.
 */
struct synced *synced_create(const char *name, uint32_t capacity,
			     struct rte_rcu_qsbr *rcu, int socket);

/* NULL is a no-op. No reader may run. */
void synced_destroy(struct synced *s);

/* Control thread: add or refresh an entry. 0, or -ENOSPC when full. */
int synced_upsert(struct synced *s, const struct flow_key *k, uint32_t dest,
		  uint32_t expires_ms);

/* Control thread: forget an entry (a CLOSE from a peer). 0 or -ENOENT. */
int synced_remove(struct synced *s, const struct flow_key *k);

/*
 * Control thread: visit at most budget entries, deleting the expired and
 * those whose destination is no longer valid; returns how many went. A sweep
 * of the table (calls from its first entry to its end) starts at most once
 * per SYNCED_SWEEP_MS, and none while the table is empty: rte_hash_iterate()
 * walks every empty slot, so each call that reaches the end of a sparse
 * table costs a scan of its whole capacity (10 ms for the default 4 M slots:
 * a control tick of 1 ms ran every 12 ms). Expired entries are dead to
 * lookups before the sweep frees them.
 */
uint32_t synced_expire(struct synced *s, uint32_t now_ms, uint32_t budget,
		       bool (*dest_valid)(void *arg, uint32_t dest), void *arg);

/*
 * Workers: look up n <= SYNCED_BURST_MAX keys. Bit i of the result is set
 * when keys[i] is present and not expired, with its value in out[i].
 */
uint64_t synced_lookup_burst(const struct synced *s, const struct flow_key *keys[],
			     uint32_t n, uint32_t now_ms, struct synced_value out[]);

/*
 * Control thread: the next entry from *cursor (0 starts), its key into *k
 * and value into *v; false at the end. Entries added or removed meanwhile
 * may be missed or seen; each other one is seen once.
 */
bool synced_next(const struct synced *s, uint32_t *cursor, struct flow_key *k,
		 struct synced_value *v);

/* Entries held (any thread; exact for the writer, a moment old for others). */
uint32_t synced_count(const struct synced *s);

#endif /* MAGLB_DATAPLANE_SYNCED_H */
