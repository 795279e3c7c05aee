/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The forwarding state workers read: VIPs, their Maglev tables, and the
 * destinations (VIP, backend pairs) that flow entries point at.
 *
 * A state is immutable once published. The control thread builds a new one
 * for every change (reload, backend weight/drain/down/up, VIP ownership, a
 * neighbour's MAC), publishes it by pointer swap and frees the old one after
 * an RCU grace period. Maglev tables are shared between states that did not
 * change them (refcounted by the control thread only).
 *
 * Destination ids are stable for the life of the process: the same (VIP
 * name, backend address) keeps its id across reloads, so the entries in the
 * workers' tables keep pointing at the right backend. A destination that a
 * reload removed stays in the array with status DEST_GONE.
 */
#ifndef MAGLB_DATAPLANE_STATE_H
#define MAGLB_DATAPLANE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "dataplane/core/encap.h"
#include "dataplane/core/flow_key.h"
#include "lib/hash.h"
#include "dataplane/core/maglev.h"

struct viptab;

enum dest_status {
	DEST_UP = 0,        /* takes new flows (weight > 0) */
	DEST_DRAINING,      /* weight 0: keeps its flows, takes no new ones */
	DEST_DOWN,          /* its flows are rescheduled */
	DEST_GONE,          /* removed by a reload */
	DEST_STATUS_MAX
};

extern const char *const dest_status_names[DEST_STATUS_MAX];

struct dp_dest {
	struct encap_tunnel tunnel;
	uint8_t status;     /* enum dest_status */
	bool resolved;      /* tunnel.eth_dst is a known next-hop MAC */
	uint8_t family;     /* the backend's */
	uint8_t addr[16];
	uint16_t vip;       /* index in state->vips */
	uint32_t weight;    /* as set now (config or maglbctl) */
	uint32_t config_weight;
};

/* A VIP's Maglev table, shared by the states that did not rebuild it. */
struct dp_maglev {
	uint32_t refs;          /* control thread only */
	uint32_t size;
	uint16_t *slots;        /* slot -> rank, MAGLEV_SLOT_NONE: no backend */
	uint32_t *rank_dest;    /* rank -> destination id */
	uint32_t *dest_slots;   /* the slots each of the VIP's destinations
				 * holds, in dp_vip.dests order (its share) */
	uint64_t digest;        /* see STATE_DIGEST_KEY */
};

/*
 * A Maglev table's digest: SipHash-1-3 keyed by STATE_DIGEST_KEY of the
 * words (table size, then for each slot the SipHash-2-4, same key, of its
 * backend's family (FLOW_FAMILY_) byte and 16 address bytes, 0 for a slot
 * without backend). Addresses, not ranks or ids, which are local: nodes
 * with the same config and the same backends down build the same tables,
 * so the same digests. Computed once per table build, never per request.
 */
#define STATE_DIGEST_KEY HASH_DIGEST_KEY


struct dp_vip {
	char name[CONFIG_NAME_MAX];
	uint8_t family;
	uint8_t proto;          /* IPPROTO_TCP / IPPROTO_UDP */
	uint16_t port;          /* 0: all ports */
	uint8_t addr[16];
	uint8_t encap;          /* enum encap_kind */
	uint8_t hash;           /* enum config_hash_mode */
	bool owned;             /* answer ARP/ND for the address */
	uint16_t sync_after_packets;    /* config: a flow's entry is exported
				 * (NEW) from its Nth packet on, once worth
				 * replicating; 0: at once. Capped at
				 * STATE_SYNC_AFTER_MAX, what an entry counts */
	uint32_t n_dests;
	uint32_t *dests;        /* the VIP's destination ids, config order */
	struct dp_maglev *maglev;
};

enum { STATE_SYNC_AFTER_MAX = UINT16_MAX };  /* flowtab_entry.packets saturates there */

struct dp_state {
	uint64_t generation;
	uint16_t vip_gen;           /* changes with the VIP set (reloads), never 0;
				     * flow entries checked against it skip the
				     * VIP lookup */
	struct hash_key seed;       /* the cluster's flow-hash seed */
	struct viptab *viptab;      /* ids are indexes in vips */
	uint32_t n_vips;
	struct dp_vip *vips;
	uint32_t n_dests;           /* ids below this are valid indexes */
	struct dp_dest *dests;
	uint64_t maglev_digest;     /* every VIP's table: the sum over VIPs of
				     * SipHash-2-4 (STATE_DIGEST_KEY) of its
				     * name, a NUL and its table's digest (8
				     * bytes, little-endian): the VIPs' order
				     * does not matter */
};

struct state_ctx;   /* the control thread's registry of ids and neighbours */

/*
 * What a state needs from the port and the neighbour table to build tunnels.
 * Tunnelled backends are reached through the port's gateway of their family
 * when one is configured, else directly (on-link); lookup_mac returns the
 * MAC of such a next hop, or NULL while it is unresolved.
 */
struct state_port {
	uint8_t mac[6];
	uint32_t mtu;
	bool has_gateway[2];            /* [0] IPv4, [1] IPv6 */
	uint8_t gateway[2][16];
	bool has_gateway_mac[2];        /* a static gateway MAC: no resolution */
	uint8_t gateway_mac[2][6];
	const uint8_t *(*lookup_mac)(void *arg, uint8_t family, const uint8_t addr[16]);
	void *arg;
};

/* The address to resolve for a tunnelled backend at addr: its gateway, or
 * itself; NULL when the gateway's MAC is static. */
const uint8_t *state_next_hop_addr(const struct state_port *port, uint8_t family,
				   const uint8_t addr[16]);

/* The next-hop MAC of a tunnelled backend at addr, or NULL while unresolved. */
const uint8_t *state_next_hop(const struct state_port *port, uint8_t family,
			      const uint8_t addr[16]);

/*
 * The destination ids a process started with cfg hands out for its life:
 * STATE_DESTS_HEADROOM times cfg's (VIP, backend) pairs, for reloads that
 * add backends, at least STATE_DESTS_MIN, at most STATE_DESTS_LIMIT (every
 * pair a config may name). Each is a row of every worker's counters (64 B).
 */
enum {
	STATE_DESTS_MIN = 16384,        /* 1 MiB of counters a worker */
	STATE_DESTS_HEADROOM = 4,
	STATE_DESTS_LIMIT = CONFIG_VIPS_MAX * CONFIG_BACKENDS_MAX,
};

uint32_t state_dests_max(const struct config *cfg);

/*
 * The registry of destination ids, up to max_dests (1..STATE_DESTS_LIMIT,
 * else NULL) for the life of the process: a config that needs more is
 * refused by state_build(). NULL when out of memory.
 */
struct state_ctx *state_ctx_create(uint32_t max_dests, const struct state_port *port);

/* The port facts states are built with; set them anew on a reload. */
const struct state_port *state_ctx_port(const struct state_ctx *ctx);
void state_ctx_set_port(struct state_ctx *ctx, const struct state_port *port);
void state_ctx_destroy(struct state_ctx *ctx);

/*
 * Build a state from cfg. prev (may be NULL) carries over what the config
 * does not say, for the VIPs and backends that remain: backends marked down
 * and VIP ownership. Weights and drains come from cfg again, as a reload of
 * keepalived's or ipvsadm's rules resets them. Returns NULL and fills err on failure, among them
 * more new destinations than ids left (none is then handed out).
 */
struct dp_state *state_build(struct state_ctx *ctx, const struct config *cfg,
			     const struct dp_state *prev, char *err, size_t errlen);

/*
 * A copy of s with one VIP's backend changed (status/weight) and its Maglev
 * table rebuilt, or with new ownership, or with a neighbour's MAC. Returns
 * NULL (errno-style code in *rc) on failure; s is unchanged.
 */
struct dp_state *state_with_backend(struct state_ctx *ctx, const struct dp_state *s,
				    uint32_t vip, uint32_t dest, uint8_t status,
				    uint32_t weight, int *rc);
struct dp_state *state_with_owned(struct state_ctx *ctx, const struct dp_state *s,
				  uint32_t vip, bool owned, int *rc);

/* A copy of s with every tunnel's next-hop MAC looked up again; NULL with
 * *rc = 0 when nothing changed. */
struct dp_state *state_with_neighbours(struct state_ctx *ctx, const struct dp_state *s,
				       int *rc);

/*
 * What the Maglev hash of the flow k of VIP vip hashes: k, or for a
 * client-persistent VIP the client address alone, written into *scratch.
 */
static inline const struct flow_key *
state_hash_input(const struct dp_state *s, uint32_t vip, const struct flow_key *k,
		 struct flow_key *scratch)
{
	if (s->vips[vip].hash != CONFIG_HASH_CLIENT)
		return k;
	*scratch = *k;                  /* persistence: the client address alone */
	scratch->vip_port = 0;
	scratch->client_port = 0;
	scratch->proto = 0;
	return scratch;
}

/* The Maglev hash of the flow k of VIP vip. Any thread; the packet path. */
static inline uint64_t
state_flow_hash(const struct dp_state *s, uint32_t vip, const struct flow_key *k)
{
	struct flow_key client;

	return flow_key_hash(state_hash_input(s, vip, k, &client), &s->seed);
}

/* Fetch the Maglev slot of flow hash h ahead of state_maglev_pick_hash(). */
static inline void
state_maglev_prefetch(const struct dp_state *s, uint32_t vip, uint64_t h)
{
	const struct dp_maglev *m = s->vips[vip].maglev;

	__builtin_prefetch(&m->slots[maglev_slot(h, m->size)]);
}

/* Maglev's destination for flow hash h of VIP vip; -1 when the VIP has no
 * backend for new flows. */
static inline int64_t
state_maglev_pick_hash(const struct dp_state *s, uint32_t vip, uint64_t h)
{
	const struct dp_maglev *m = s->vips[vip].maglev;
	uint16_t rank = maglev_lookup(m->slots, m->size, h);

	return rank == MAGLEV_SLOT_NONE ? -1 : (int64_t)m->rank_dest[rank];
}

/* Maglev's destination for the flow k of VIP vip, as above. */
static inline int64_t
state_maglev_pick(const struct dp_state *s, uint32_t vip, const struct flow_key *k)
{
	return state_maglev_pick_hash(s, vip, state_flow_hash(s, vip, k));
}

/* Free s and drop its Maglev table references. No worker may read it. */
void state_free(struct dp_state *s);

/* The index of the VIP named name, or -1. */
int state_vip_find(const struct dp_state *s, const char *name);

/* The destination of (vip, family, addr), or -1. */
int64_t state_dest_find(const struct dp_state *s, uint32_t vip, uint8_t family,
			const uint8_t addr[16]);

#endif /* MAGLB_DATAPLANE_STATE_H */
