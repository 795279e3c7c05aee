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

#include "dataplane/core/hash.h"

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

/* The flow hash of k under the cluster seed. Thread-safe; packet path. */
static inline uint64_t
flow_key_hash(const struct flow_key *k, const struct hash_key *seed)
{
	uint64_t w[5];
	uint64_t tail = (uint64_t)k->vip_port | (uint64_t)k->client_port << 16 |
			(uint64_t)k->proto << 32 | (uint64_t)k->family << 40;

	if (k->family == FLOW_FAMILY_IPV4) {
		w[0] = flow_key_le32(k->vip) | flow_key_le32(k->client) << 32;
		w[1] = tail;
		return hash_sip13_words(seed, w, 2);
	}
	w[0] = flow_key_le64(k->vip);
	w[1] = flow_key_le64(k->vip + 8);
	w[2] = flow_key_le64(k->client);
	w[3] = flow_key_le64(k->client + 8);
	w[4] = tail;
	return hash_sip13_words(seed, w, 5);
}

#endif /* MAGLB_DATAPLANE_FLOW_KEY_H */
