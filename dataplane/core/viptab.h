/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The VIP table: which VIP a packet is for.
 *
 * A VIP is (family, address, protocol, port), port 0 meaning every port. The
 * control thread builds a table from the config's VIPs with viptab_create();
 * the table is immutable from then on, so any number of workers look it up
 * concurrently without locks. A new config builds a new table, published by
 * pointer swap; the old one is destroyed after an RCU grace period.
 *
 * Layout: an open-addressing hash (linear probing, at most half full) of the
 * distinct (family, address) pairs, each slot holding, per protocol, its
 * all-ports VIP and how many exact-port VIPs it has; and a second such hash
 * of the exact-port VIPs keyed by their whole destination (address,
 * family, protocol, port), which a lookup tries first: a packet to an
 * exact-port VIP costs one probe sequence, any other two, whatever the
 * number of VIPs.
 *
 * Protocols: TCP and UDP (the VIPs a config can declare). A packet of any
 * other protocol to a VIP address gets VIP_PROTO.
 */
#ifndef MAGLB_DATAPLANE_VIPTAB_H
#define MAGLB_DATAPLANE_VIPTAB_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/core/counters.h"
#include "dataplane/core/flow_key.h"

#define VIPTAB_VIPS_MAX (1u << 20)

struct viptab;  /* opaque, immutable after viptab_create() */

struct viptab_vip {
	uint8_t family;         /* FLOW_FAMILY_IPV4 or FLOW_FAMILY_IPV6 */
	uint8_t proto;          /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port;          /* host order; 0: all ports */
	uint8_t addr[16];       /* network order; IPv4: first 4 bytes, rest 0 */
	uint32_t id;            /* the caller's VIP index, returned by lookups */
};

/*
 * Build a table of the n VIPs at vips (n may be 0: every lookup then says
 * NOT_VIP). vips is only read; the table keeps no pointer into it.
 * Returns the table, or NULL with errno set: EINVAL for a bad family or
 * protocol, nonzero bytes past an IPv4 address, n over VIPTAB_VIPS_MAX or
 * vips NULL with n > 0; EEXIST when two VIPs share family, address,
 * protocol and port; ENOMEM. Allocates: control thread.
 */
struct viptab *viptab_create(const struct viptab_vip *vips, uint32_t n);

/* Free a table no thread reads any more. NULL is a no-op. */
void viptab_destroy(struct viptab *t);

/* Private, for the inline viptab_lookup(): a slot of the exact-port hash,
 * and the head of every table. */
struct viptab_exact {
	uint64_t w[3];                          /* vip[0..7], vip[8..15], tail */
	uint32_t id;
	uint32_t used;
};

struct viptab_head {
	uint32_t exact_mask;                    /* slots - 1, a power of 2 */
	struct viptab_exact *exact;             /* written by viptab_create() only */
};

/* Private: a destination as viptab_exact's words (the address, IPv4 in its
 * first 4 bytes and the rest 0, then family, protocol and port), and their
 * hash. */
static inline void
viptab_exact_words(uint64_t w[3], uint8_t family, const uint8_t addr[16], uint8_t proto,
		   uint16_t port)
{
	memcpy(&w[0], addr, 8);
	memcpy(&w[1], addr + 8, 8);
	w[2] = (uint64_t)family | (uint64_t)proto << 8 | (uint64_t)port << 16;
}

static inline uint32_t
viptab_exact_hash(const uint64_t w[3])
{
	uint64_t h = w[0] * 0x9e3779b97f4a7c15ull ^ w[1] * 0xc2b2ae3d27d4eb4full ^
		     w[2] * 0x165667b19e3779f9ull;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h >> 32);
}

/* Private: the slot of the words w, or of the free slot where they would
 * go. */
static inline uint32_t
viptab_exact_probe(const struct viptab_head *h, const uint64_t w[3])
{
	uint32_t i = viptab_exact_hash(w) & h->exact_mask;

	for (;; i = (i + 1) & h->exact_mask) {
		const struct viptab_exact *e = &h->exact[i];

		if (!e->used || ((e->w[0] ^ w[0]) | (e->w[1] ^ w[1]) | (e->w[2] ^ w[2])) == 0)
			return i;
	}
}

/* Private: viptab_lookup() of a destination no exact-port VIP has. */
int64_t viptab_lookup_other(const struct viptab *t, const struct flow_key *k,
			    enum dp_drop *why);

/*
 * The VIP of k's destination (k->family, k->vip, k->proto, k->vip_port): a
 * VIP of that exact port wins over an all-ports VIP. Returns its id, or -1
 * with *why = DP_DROP_NOT_VIP (no VIP has this address) or DP_DROP_VIP_PROTO
 * (the address is a VIP's, but not for this protocol and port). Any thread;
 * packet path. Inline: the exact-port probe, which most packets end with,
 * costs a third less without the call.
 */
static inline int64_t
viptab_lookup(const struct viptab *t, const struct flow_key *k, enum dp_drop *why)
{
	const struct viptab_head *h = (const struct viptab_head *)(const void *)t;
	const struct viptab_exact *x;
	uint64_t w[3];

	viptab_exact_words(w, k->family, k->vip, k->proto, k->vip_port);
	x = &h->exact[viptab_exact_probe(h, w)];
	return x->used ? x->id : viptab_lookup_other(t, k, why);   /* an exact port wins */
}

/*
 * The VIP of a fragment, which carries no port: the all-ports VIP of
 * k->vip and k->proto if there is one (so fragments of a flow to an
 * exact-port VIP at that address go to the all-ports VIP too), else the one
 * exact-port VIP of that address and protocol. Returns its id, or -1 with
 * *why = DP_DROP_FRAG_AMBIGUOUS (several exact-port VIPs and none for all
 * ports), DP_DROP_NOT_VIP or DP_DROP_VIP_PROTO. Any thread; packet path.
 */
int64_t viptab_lookup_fragment(const struct viptab *t, const struct flow_key *k,
			       enum dp_drop *why);

/*
 * Whether (family, addr) is the address of some VIP, for ARP and ND answers.
 * addr as in struct viptab_vip (IPv4: 12 zero bytes after the address, as
 * pkt_parse() leaves them in a key). Any thread; packet path.
 */
bool viptab_has_address(const struct viptab *t, uint8_t family,
			const uint8_t addr[16]);

#endif /* MAGLB_DATAPLANE_VIPTAB_H */
