/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SipHash (Aumasson and Bernstein), the hash every node of a cluster must
 * compute alike, shared by the dataplane and syncd (neither owns it).
 *
 * These are fixed functions with documented keys, not whatever the
 * platform offers:
 *  - SipHash-2-4 names a Maglev backend (offset and skip, see
 *    dataplane/core/maglev.h);
 *  - SipHash-1-3 hashes a packet's flow (see dataplane/core/flow_key.h),
 *    keyed by the cluster's hash seed so that outsiders cannot aim flows at
 *    a backend;
 *  - syncd's catalog digests use SipHash-2-4 too, its cache's chains
 *    SipHash-1-3 (keyed at random per process).
 * Tables local to one process may key a hash of their own (a worker's flow
 * table does: dataplane/core/flowtab.c).
 * Words are read little-endian, as the reference implementation does, so the
 * results are the reference SipHash values on every architecture.
 */
#ifndef MAGLB_LIB_HASH_H
#define MAGLB_LIB_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 128-bit SipHash key: k0 is bytes 0..7 read little-endian, k1 bytes 8..15. */
struct hash_key {
	uint64_t k0;
	uint64_t k1;
};

/* Load a key from 16 bytes (the reference key layout). */
struct hash_key hash_key_from_bytes(const uint8_t bytes[16]);

/* SipHash-2-4 of len bytes at data. Thread-safe. */
uint64_t hash_sip24(const struct hash_key *key, const void *data, size_t len);

/*
 * The key of Maglev digests (dataplane/state.h), and one VIP's share of a
 * digest of several: SipHash-2-4 of its name (NUL included, at most
 * HASH_VIP_NAME_MAX bytes of it) and its table's digest, little-endian.
 * The shares of a set of VIPs add up to the set's digest, in any order:
 * a node's (every VIP) or a sync group's (its VIPs).
 */
#define HASH_DIGEST_KEY "maglb/digest/v1."
enum { HASH_VIP_NAME_MAX = 64 };
uint64_t hash_vip_digest(const char *name, uint64_t maglev_digest);

static inline uint64_t
hash_rotl(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

/* One SipRound on the state v[0..3]. */
static inline void
hash_sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = hash_rotl(v[1], 13); v[1] ^= v[0];
	v[0] = hash_rotl(v[0], 32);
	v[2] += v[3]; v[3] = hash_rotl(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = hash_rotl(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = hash_rotl(v[1], 17); v[1] ^= v[2];
	v[2] = hash_rotl(v[2], 32);
}

/* The SipHash initial state for key. */
static inline void
hash_sipinit(uint64_t v[4], const struct hash_key *key)
{
	v[0] = key->k0 ^ 0x736f6d6570736575ull;
	v[1] = key->k1 ^ 0x646f72616e646f6dull;
	v[2] = key->k0 ^ 0x6c7967656e657261ull;
	v[3] = key->k1 ^ 0x7465646279746573ull;
}

/*
 * SipHash-1-3 streamed a 64-bit word at a time (a string too long to hold
 * whole): hash_sipinit(), hash_sip13_absorb() for each word in order, then
 * hash_sip13_finish() with the count of words absorbed.
 */
static inline void
hash_sip13_absorb(uint64_t v[4], uint64_t w)
{
	v[3] ^= w;
	hash_sipround(v);
	v[0] ^= w;
}

static inline uint64_t
hash_sip13_finish(uint64_t v[4], uint64_t n)
{
	uint64_t b = (n * 8) << 56;

	v[3] ^= b;
	hash_sipround(v);
	v[0] ^= b;
	v[2] ^= 0xff;
	hash_sipround(v);
	hash_sipround(v);
	hash_sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/*
 * SipHash-1-3 of n 64-bit words, i.e. of the 8n-byte string whose words are
 * w[0..n-1] in little-endian order. Inline: it is on the new-flow path.
 */
static inline uint64_t
hash_sip13_words(const struct hash_key *key, const uint64_t *w, unsigned n)
{
	uint64_t v[4];

	hash_sipinit(v, key);
	for (unsigned i = 0; i < n; i++)
		hash_sip13_absorb(v, w[i]);
	return hash_sip13_finish(v, n);
}

/*
 * SipHash-1-3 of n 16-byte strings, string i being the words w0[i], w1[i]:
 * out[i] = hash_sip13_words(key, (uint64_t[]){ w0[i], w1[i] }, 2), the flow
 * hash of an IPv4 key. Four strings at a time in AVX2 lanes where the CPU has
 * AVX2 (checked at run time), the rest one by one: scalar SipHash is a chain
 * of dependent rounds that the new-flow path waited on (the lanes: +4 % new
 * flows in tests/bench's dataplane-vs-testpmd). Thread-safe; the packet path.
 */
void hash_sip13_2w_burst(const struct hash_key *key, const uint64_t *w0, const uint64_t *w1,
			 uint32_t n, uint64_t *out);

#endif /* MAGLB_LIB_HASH_H */
