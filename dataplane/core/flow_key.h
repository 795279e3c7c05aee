/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key of a flow and its hash, identical on every node.
 *
 * Key = (VIP address, VIP port, protocol, client address, client port). The
 * hash is SipHash-1-3 keyed by the cluster's 16-byte hash seed, over these
 * little-endian 64-bit words:
 *
 *   IPv4 (2 words):  w0 = vip[0..3] | client[0..3] << 32
 *                    w1 = vip_port | client_port << 16 | proto << 32 | 4 << 40
 *   IPv6 (5 words):  w0, w1 = vip[0..15]; w2, w3 = client[0..15]
 *                    w4 = vip_port | client_port << 16 | proto << 32 | 6 << 40
 *
 * Addresses are taken as the bytes of the address in network order, ports as
 * host-order integers. Fragments and client-persistent VIPs hash with both
 * ports 0 (their 3-tuple); a client-persistent VIP also uses proto 0.
 */
#ifndef MAGLB_DATAPLANE_FLOW_KEY_H
#define MAGLB_DATAPLANE_FLOW_KEY_H

#include <assert.h>
#include <stdint.h>

#include "lib/hash.h"

enum flow_family {
	FLOW_FAMILY_IPV4 = 4,
	FLOW_FAMILY_IPV6 = 6,
};

struct flow_key {
	uint8_t vip[16];        /* IPv4: first 4 bytes, the rest 0 */
	uint8_t client[16];
	uint16_t vip_port;      /* host order */
	uint16_t client_port;
	uint8_t proto;          /* IPPROTO_TCP or IPPROTO_UDP */
	uint8_t family;         /* enum flow_family */
	uint8_t pad[2];         /* always 0: keys compare with memcmp */
};

static_assert(sizeof(struct flow_key) == 40, "flow_key layout");

static inline uint64_t
flow_key_le32(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24;
}

static inline uint64_t
flow_key_le64(const uint8_t *p)
{
	return flow_key_le32(p) | flow_key_le32(p + 4) << 32;
}

/* The last word of the hash input: ports, protocol, family. */
static inline uint64_t
flow_key_tail(const struct flow_key *k)
{
	return (uint64_t)k->vip_port | (uint64_t)k->client_port << 16 |
	       (uint64_t)k->proto << 32 | (uint64_t)k->family << 40;
}

/* The first word of an IPv4 key's hash input (its second is the tail). */
static inline uint64_t
flow_key_word4(const struct flow_key *k)
{
	return flow_key_le32(k->vip) | flow_key_le32(k->client) << 32;
}

/* The flow hash of k under the cluster seed. Thread-safe; packet path. */
static inline uint64_t
flow_key_hash(const struct flow_key *k, const struct hash_key *seed)
{
	uint64_t w[5];

	if (k->family == FLOW_FAMILY_IPV4) {
		w[0] = flow_key_word4(k);
		w[1] = flow_key_tail(k);
		return hash_sip13_words(seed, w, 2);
	}
	w[0] = flow_key_le64(k->vip);
	w[1] = flow_key_le64(k->vip + 8);
	w[2] = flow_key_le64(k->client);
	w[3] = flow_key_le64(k->client + 8);
	w[4] = flow_key_tail(k);
	return hash_sip13_words(seed, w, 5);
}

/*
 * out[i] = flow_key_hash(keys[i], seed) for i < n (any n): the IPv4 keys
 * together (hash_sip13_2w_burst(), several lanes at once), the others one by
 * one. Thread-safe; the new-flow path.
 */
static inline void
flow_key_hash_burst(const struct flow_key *const keys[], uint32_t n,
		    const struct hash_key *seed, uint64_t out[])
{
	enum { CHUNK = 32 };
	uint64_t w0[CHUNK], w1[CHUNK], h[CHUNK];
	uint32_t at[CHUNK];

	for (uint32_t base = 0; base < n; base += CHUNK) {
		uint32_t c = n - base < CHUNK ? n - base : CHUNK, m = 0;

		for (uint32_t i = 0; i < c; i++) {
			const struct flow_key *k = keys[base + i];

			if (k->family != FLOW_FAMILY_IPV4) {
				out[base + i] = flow_key_hash(k, seed);
				continue;
			}
			w0[m] = flow_key_word4(k);
			w1[m] = flow_key_tail(k);
			at[m++] = base + i;
		}
		hash_sip13_2w_burst(seed, w0, w1, m, h);
		for (uint32_t j = 0; j < m; j++)
			out[at[j]] = h[j];
	}
}

#endif /* MAGLB_DATAPLANE_FLOW_KEY_H */
