/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/viptab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

enum viptab_proto {
	VIPTAB_PROTO_TCP = 0,
	VIPTAB_PROTO_UDP,
	VIPTAB_PROTO_MAX
};

/* One VIP address and what it serves, per protocol. */
struct viptab_addr {
	uint8_t addr[16];
	uint8_t family;                         /* 0: free slot */
	uint8_t has_all[VIPTAB_PROTO_MAX];      /* an all-ports VIP exists */
	uint8_t pad;
	uint32_t all_id[VIPTAB_PROTO_MAX];      /* its id */
	uint32_t n_exact[VIPTAB_PROTO_MAX];     /* exact-port VIPs */
	uint32_t one_id[VIPTAB_PROTO_MAX];      /* the last one's id: the only
						 * one when n_exact is 1 */
};

/*
 * Exact-port VIPs (struct viptab_exact, viptab.h) are keyed by their whole
 * destination (address, family, protocol, port) as three words of a flow
 * key: a packet to an exact-port VIP, the usual case, is one hash and one
 * probe, inline in the caller.
 */
struct viptab {
	struct viptab_head head;                /* first: viptab_lookup() reads it */
	uint32_t addr_mask;                     /* slots - 1, a power of 2 */
	struct viptab_addr *addrs;
};

static inline int
viptab_proto_index(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return VIPTAB_PROTO_TCP;
	case IPPROTO_UDP:
		return VIPTAB_PROTO_UDP;
	default:
		return -1;
	}
}

/* A local hash (never leaves this node): multiply-xorshift of the address. */
static inline uint32_t
viptab_addr_hash(uint8_t family, const uint8_t addr[16])
{
	uint64_t lo, hi, h;

	memcpy(&lo, addr, sizeof(lo));
	memcpy(&hi, addr + 8, sizeof(hi));
	h = lo * 0x9e3779b97f4a7c15ull ^ (hi ^ family) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 31;
	h *= 0x165667b19e3779f9ull;
	return (uint32_t)(h >> 32);
}

/* The slot of (family, addr), or of the free slot where it would go. */
static inline uint32_t
viptab_addr_probe(const struct viptab *t, uint8_t family, const uint8_t addr[16])
{
	uint32_t i = viptab_addr_hash(family, addr) & t->addr_mask;

	for (;; i = (i + 1) & t->addr_mask) {
		const struct viptab_addr *a = &t->addrs[i];

		if (a->family == 0 ||
		    (a->family == family && memcmp(a->addr, addr, 16) == 0))
			return i;
	}
}

static inline const struct viptab_addr *
viptab_addr_find(const struct viptab *t, uint8_t family, const uint8_t addr[16])
{
	const struct viptab_addr *a = &t->addrs[viptab_addr_probe(t, family, addr)];

	return a->family != 0 ? a : NULL;
}

/* Slots for n entries at most half full: a power of 2, at least 8. */
static uint32_t
viptab_slots(uint32_t n)
{
	uint32_t slots = 8;

	while (slots < 2 * n)
		slots *= 2;
	return slots;
}

static bool
viptab_vip_valid(const struct viptab_vip *v)
{
	static const uint8_t zero[12];

	if (viptab_proto_index(v->proto) < 0)
		return false;
	if (v->family == FLOW_FAMILY_IPV4)
		return memcmp(v->addr + 4, zero, sizeof(zero)) == 0;
	return v->family == FLOW_FAMILY_IPV6;
}

/* Index an exact-port VIP by its whole destination. Returns 0 or -EEXIST. */
static int
viptab_exact_add(struct viptab *t, const struct viptab_vip *v)
{
	uint64_t w[3];
	struct viptab_exact *x;

	viptab_exact_words(w, v->family, v->addr, v->proto, v->port);
	x = &t->head.exact[viptab_exact_probe(&t->head, w)];
	if (x->used)
		return -EEXIST;
	memcpy(x->w, w, sizeof(w));
	x->id = v->id;
	x->used = 1;
	return 0;
}

/* Add one valid VIP. Returns 0 or -EEXIST. */
static int
viptab_insert(struct viptab *t, const struct viptab_vip *v)
{
	struct viptab_addr *a = &t->addrs[viptab_addr_probe(t, v->family, v->addr)];
	int p = viptab_proto_index(v->proto);

	if (a->family == 0) {
		memcpy(a->addr, v->addr, 16);
		a->family = v->family;
	}
	if (v->port == 0) {
		if (a->has_all[p])
			return -EEXIST;
		a->has_all[p] = 1;
		a->all_id[p] = v->id;
		return 0;
	}
	if (viptab_exact_add(t, v) < 0)
		return -EEXIST;
	a->n_exact[p]++;
	a->one_id[p] = v->id;
	return 0;
}

struct viptab *
viptab_create(const struct viptab_vip *vips, uint32_t n)
{
	struct viptab *t = NULL;
	int err = EINVAL;

	if (n > VIPTAB_VIPS_MAX || (vips == NULL && n > 0))
		goto fail;
	for (uint32_t i = 0; i < n; i++)
		if (!viptab_vip_valid(&vips[i]))
			goto fail;

	err = ENOMEM;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto fail;
	t->addr_mask = viptab_slots(n) - 1;
	t->addrs = calloc(t->addr_mask + 1, sizeof(*t->addrs));
	t->head.exact_mask = viptab_slots(n) - 1;
	t->head.exact = calloc(t->head.exact_mask + 1, sizeof(*t->head.exact));
	if (t->addrs == NULL || t->head.exact == NULL)
		goto fail;

	for (uint32_t i = 0; i < n; i++) {
		int rc = viptab_insert(t, &vips[i]);

		if (rc < 0) {
			err = -rc;
			goto fail;
		}
	}
	return t;

fail:
	viptab_destroy(t);
	errno = err;
	return NULL;
}

void
viptab_destroy(struct viptab *t)
{
	if (t == NULL)
		return;
	free(t->addrs);
	free(t->head.exact);
	free(t);
}

static inline int64_t
viptab_miss(enum dp_drop *why, enum dp_drop reason)
{
	*why = reason;
	return -1;
}

int64_t
viptab_lookup_other(const struct viptab *t, const struct flow_key *k, enum dp_drop *why)
{
	const struct viptab_addr *a;
	int p = viptab_proto_index(k->proto);

	a = &t->addrs[viptab_addr_probe(t, k->family, k->vip)];
	if (a->family == 0)
		return viptab_miss(why, DP_DROP_NOT_VIP);
	if (p >= 0 && a->has_all[p])
		return a->all_id[p];
	return viptab_miss(why, DP_DROP_VIP_PROTO);
}

int64_t
viptab_lookup_fragment(const struct viptab *t, const struct flow_key *k,
		       enum dp_drop *why)
{
	const struct viptab_addr *a = viptab_addr_find(t, k->family, k->vip);
	int p = viptab_proto_index(k->proto);

	if (a == NULL)
		return viptab_miss(why, DP_DROP_NOT_VIP);
	if (p < 0)
		return viptab_miss(why, DP_DROP_VIP_PROTO);
	if (a->has_all[p])
		return a->all_id[p];
	if (a->n_exact[p] == 1)
		return a->one_id[p];
	return viptab_miss(why, a->n_exact[p] == 0 ? DP_DROP_VIP_PROTO
						   : DP_DROP_FRAG_AMBIGUOUS);
}

bool
viptab_has_address(const struct viptab *t, uint8_t family, const uint8_t addr[16])
{
	return viptab_addr_find(t, family, addr) != NULL;
}
