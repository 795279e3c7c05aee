/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet path's decisions for a burst, pure: for each IP packet a worker
 * parsed, which table carries its flow (the worker's own, the synced one,
 * Maglev), what the flow table learns from it, what syncd is told, and where
 * the packet goes. Packet metadata and table state in, one action a packet
 * out; the worker then carries the actions out (tunnel headers, TX, the
 * export ring, the control thread's ring). dataplane/README.md's "Lookup
 * order", "Provisional entries" and "What the workers export to syncd" are
 * the rules; check_forward tests each of them without EAL.
 *
 * The synced table (rte_hash) is an op of the context, called once a burst
 * for the packets no live entry carries; the rest is plain memory: the
 * worker's flow table (flowtab.h), the forwarding state (dataplane/state.h,
 * pure as well) and the worker's counters.
 */
#ifndef MAGLB_DATAPLANE_FORWARD_H
#define MAGLB_DATAPLANE_FORWARD_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataplane/core/counters.h"
#include "dataplane/core/flow_key.h"
#include "dataplane/core/flowtab.h"
#include "dataplane/core/packet.h"

struct dp_state;

enum { FWD_BURST_MAX = 64 };    /* a burst's packets: one synced lookup, a 64-bit hit mask */

/* A worker's counters per destination: a row of FWD_DEST_ROW each. */
enum { FWD_DEST_PACKETS = 0, FWD_DEST_BYTES, FWD_DEST_NEW, FWD_DEST_FLOWS,
       FWD_DEST_UNTRACKED, FWD_DEST_SYNCED_HITS, FWD_DEST_MAGLEV_PICKS,
       FWD_DEST_MAX,
       FWD_DEST_ROW = 8 };      /* one cache line per destination */

static_assert(FWD_DEST_MAX <= FWD_DEST_ROW, "a destination's counters fit its row");

/* What a record for syncd says happened to the flow. */
enum export_event {
	EXPORT_NEW = 0,             /* the worker made or took over the entry */
	EXPORT_REFRESH,             /* still alive after the refresh interval */
	EXPORT_CLOSE,               /* the client sent FIN or RST */
	EXPORT_EVENT_MAX
};

/* A synced-table hit: the destination id and when the entry expires (ms). */
struct synced_value {
	uint32_t dest;
	uint32_t expires_ms;
};

/* The node's own addresses, [0] IPv4 [1] IPv6: BFD goes to them, and no
 * client has them. */
struct fwd_node {
	uint8_t addr[2][16];
	bool has_addr[2];
};

/* A worker's part: its table and counters, and how to read the synced one. */
struct fwd_ctx {
	struct flowtab *flows;
	struct dp_counters *counters;
	uint64_t (*dest)[FWD_DEST_ROW];     /* [destination id] */
	const struct fwd_node *node;
	/* The synced table: bit j of the result set, with out[j], when keys[j]
	 * has an entry alive at now_ms; n <= FWD_BURST_MAX. */
	uint64_t (*synced_lookup)(void *arg, const struct flow_key *keys[], uint32_t n,
				  uint32_t now_ms, struct synced_value out[]);
	void *synced_arg;
};

/*
 * What becomes of a packet, one word: a destination id (forward it there),
 * FWD_ACT_DROP + an enum dp_drop (drop it for that reason), or
 * FWD_ACT_CONTROL (BFD to this node: the control thread's). One word a
 * packet: the worker tests one compare for the common case.
 */
enum {
	FWD_ACT_DROP = 0xffffff00u,
	FWD_ACT_CONTROL = 0xffffffffu,
};

static_assert(DP_DROP_MAX < 0xff, "a drop action holds every reason");

static inline bool
fwd_act_forwards(uint32_t act)
{
	return act < FWD_ACT_DROP;
}

/* A record for syncd about packet's flow, which goes to the destination of
 * its action: the event and the entry's state when it happened. */
struct fwd_export {
	uint8_t packet;             /* index in the burst */
	uint8_t event;              /* enum export_event */
	uint8_t state;              /* enum flowtab_state */
};

enum { FWD_EXPORTS_MAX = 2 };   /* a packet's: a rescheduled flow's NEW, then its CLOSE */

/* What a burst's decisions come to. */
struct fwd_out {
	uint32_t act[FWD_BURST_MAX];
	uint32_t n_exports;
	struct fwd_export exports[FWD_EXPORTS_MAX * FWD_BURST_MAX];    /* in order made */
};

/*
 * Decide for meta[0..n) (n <= FWD_BURST_MAX), the burst's IP packets for
 * this port in order, under state st at now_ms: out->act[i] for meta[i],
 * and the records for syncd, a packet's in the order made. The
 * flow table changes as the rules say, and the context's counters count
 * what the decisions see: FLOW_HITS, SYNCED_HITS, PROVISIONAL_REPLACED,
 * MAGLEV_PICKS, NEW_FLOWS, UNTRACKED, FRAGMENTS, ICMP_ERRORS and the
 * destinations' NEW, FLOWS, UNTRACKED, SYNCED_HITS, MAGLEV_PICKS. What
 * happens when the worker acts (FORWARDED, the drops, the exports, the
 * destinations' PACKETS and BYTES) is the worker's to count.
 */
void fwd_burst(const struct fwd_ctx *c, const struct dp_state *st,
	       const struct pkt_meta meta[], uint32_t n, uint32_t now_ms,
	       struct fwd_out *out);

/* The flow table frees entry e (expiry, eviction, removal): the FLOWS gauge
 * of its destination, in the rows dest (a worker's fwd_ctx.dest). */
void fwd_entry_freed(void *dest, const struct flowtab_entry *e);

#endif /* MAGLB_DATAPLANE_FORWARD_H */
