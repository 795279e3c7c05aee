/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What this node's config says a flow entry may name: its VIPs (address,
 * protocol, port) with their sync groups, and each VIP's backends. syncd
 * keeps entries by index into the catalog (a few bytes) instead of by
 * address (up to 32), and accepts a peer's entry only when the catalog has
 * its VIP and backend, as the dataplane does.
 *
 * Indices are this node's: peers may order their configs differently, so
 * they never go on the wire. A reload builds a new catalog; the cache is
 * carried over by converting each entry back to its addresses.
 *
 * Immutable once built; any thread may read it.
 */
#ifndef MAGLB_SYNCD_CATALOG_H
#define MAGLB_SYNCD_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

struct config;

enum {
	CATALOG_GROUP_NAME_MAX = 32,    /* CONFIG_NAME_MAX */
	CATALOG_INDEX_NONE = 0xffff,
};

struct catalog_backend {
	uint8_t family;                 /* AF_INET or AF_INET6 */
	uint8_t addr[WIRE_ADDR_MAX];
	uint64_t hash;                  /* of family and address, for digests */
};

struct catalog_vip {
	char name[CATALOG_GROUP_NAME_MAX];
	uint8_t family;                 /* AF_INET or AF_INET6 */
	uint8_t proto;                  /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port;                  /* 0: every port */
	uint8_t addr[WIRE_ADDR_MAX];
	uint16_t group;                 /* index into catalog_group_name() */
	uint16_t n_backends;
	struct catalog_backend *backends; /* sorted by (family, addr) */
	uint64_t hash;                  /* of family, address, protocol */
};

struct catalog;

/*
 * Build the catalog of cfg (VIPs, their backends and sync groups). Returns
 * NULL on no memory, or when cfg has more VIPs or backends than 16-bit
 * indices hold (the config parser's own limits are below that).
 */
struct catalog *catalog_create(const struct config *cfg);

/* NULL is a no-op. */
void catalog_destroy(struct catalog *c);

const struct catalog_vip *catalog_vip(const struct catalog *c, uint16_t vip);

/* Sync groups, in order of first appearance in the config. */
uint16_t catalog_groups(const struct catalog *c);
const char *catalog_group_name(const struct catalog *c, uint16_t group);
int catalog_group_find(const struct catalog *c, const char *name);

/* The VIP named name: its index, or -ENOENT. */
int catalog_vip_find(const struct catalog *c, const char *name);

/*
 * The VIP and backend indices of entry f: 0, -ENOENT when no VIP of this
 * node matches f's key (an exact port first, then an every-port VIP), or
 * -ESRCH when the VIP has no such backend. *vip is set whenever the VIP
 * was found.
 */
int catalog_find(const struct catalog *c, const struct wire_flow *f,
		 uint16_t *vip, uint16_t *backend);

/*
 * Fill the key of out from vip (and vip_port, client, client_port), and
 * its backend from backend (CATALOG_INDEX_NONE: none). Lifetime and flags
 * are left as they are.
 */
void catalog_flow(const struct catalog *c, uint16_t vip, uint16_t vip_port,
		  const uint8_t client[WIRE_ADDR_MAX], uint16_t client_port,
		  uint16_t backend, struct wire_flow *out);

/* A hash of bytes that every node computes alike (SipHash, fixed key). */
uint64_t catalog_hash(const void *data, size_t len);

#endif /* MAGLB_SYNCD_CATALOG_H */
