/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Maglev consistent hashing (Eisenbud et al., NSDI 2016, section 3.4).
 *
 * A VIP's lookup table has M slots (M prime); each slot holds the rank of a
 * backend. Backend i has a preference list, the permutation
 *     p_i(j) = (offset_i + j * skip_i) mod M,   j = 0, 1, ...
 * with
 *     offset_i = SipHash-2-4(MAGLEV_KEY_OFFSET, name_i) mod M
 *     skip_i   = SipHash-2-4(MAGLEV_KEY_SKIP,   name_i) mod (M - 1) + 1
 * where name_i is the backend's canonical address string (inet_ntop form,
 * no NUL). Backends take turns claiming the next free slot of their list
 * until the table is full; a backend of weight w takes w turns per round
 * (weights are first divided by their greatest common divisor, and the turns
 * of a round are interleaved: round r gives one turn to every backend with
 * w > t, for t = 0 .. max(w) - 1). Weight 0 takes no turn.
 *
 * Determinism across nodes: backends are ranked by strcmp() of their names
 * before the build, so the same set in any order gives a byte-identical
 * table, and the table stores ranks, never a caller's local index.
 *
 * Everything here is pure C11, no DPDK. Builds run on the control thread
 * (they allocate); maglev_lookup() is for the packet path.
 */
#ifndef MAGLB_DATAPLANE_MAGLEV_H
#define MAGLB_DATAPLANE_MAGLEV_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/hash.h"

#define MAGLEV_BACKENDS_MAX 4096u
#define MAGLEV_WEIGHT_MAX 1000u
#define MAGLEV_SIZE_MIN 3u
#define MAGLEV_SIZE_MAX 16777213u  /* largest prime below 2^24 */
#define MAGLEV_SIZE_DEFAULT 65537u
#define MAGLEV_SLOT_NONE UINT16_MAX /* every weight is 0 */

/* The fixed SipHash keys of offset and skip: the ASCII strings
 * "maglb/offset/v1." and "maglb/skip/v1..." read as a reference key. */
extern const uint8_t maglev_key_offset[16];
extern const uint8_t maglev_key_skip[16];

struct maglev_backend {
	const char *name;   /* canonical address string; ranks sort by it */
	uint32_t weight;    /* 0..MAGLEV_WEIGHT_MAX */
};

/* Whether m is prime (trial division; m < 2^32). */
bool maglev_is_prime(uint32_t m);

/* The offset and skip of a backend name for table size m. */
void maglev_permutation(const char *name, uint32_t m,
			uint32_t *offset, uint32_t *skip);

/*
 * Rank backends: order[r] = index in b[] of the backend of rank r, for
 * r < n. Returns 0, or -EINVAL on duplicate names.
 */
int maglev_rank(const struct maglev_backend *b, uint32_t n, uint32_t *order);

/*
 * Fill table[0..m-1] with backend ranks. b[] may be in any order; order[]
 * (n entries, may be NULL) receives the ranking as for maglev_rank(), so that
 * table[s] names b[order[table[s]]].
 *
 * Returns 0; -ENODATA when every weight is 0 (the table is filled with
 * MAGLEV_SLOT_NONE); -EINVAL when m is not a prime in
 * [MAGLEV_SIZE_MIN, MAGLEV_SIZE_MAX], n is 0 or over MAGLEV_BACKENDS_MAX,
 * n > m, a weight is over MAGLEV_WEIGHT_MAX or names repeat; -ENOMEM.
 * Allocates scratch memory: control thread only. Thread-safe otherwise.
 */
int maglev_build(const struct maglev_backend *b, uint32_t n, uint32_t m,
		 uint16_t *table, uint32_t *order);

/*
 * The slot of a flow hash in a table of size m: the high half of the product
 * of the hash's low 32 bits and m (Lemire's multiply-shift reduction), which
 * costs a multiply instead of a division. Part of the cross-node contract.
 */
static inline uint32_t
maglev_slot(uint64_t flow_hash, uint32_t m)
{
	return (uint32_t)(((flow_hash & 0xffffffffull) * m) >> 32);
}

static inline uint16_t
maglev_lookup(const uint16_t *table, uint32_t m, uint64_t flow_hash)
{
	return table[maglev_slot(flow_hash, m)];
}

#endif /* MAGLB_DATAPLANE_MAGLEV_H */
