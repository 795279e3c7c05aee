/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Worker lcores: one RX and one TX queue each, a flow table each (shared
 * nothing), the packet path of docs/design.md. What they share with the
 * control thread goes through rings (export records, ARP/ND frames up,
 * frames to send down), RCU-published pointers (the forwarding state) and a
 * mailbox for the few requests only the worker may serve (dumps and lookups
 * of its table).
 */
#ifndef MAGLB_DATAPLANE_WORKER_H
#define MAGLB_DATAPLANE_WORKER_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "dataplane/core/counters.h"
#include "dataplane/core/flow_key.h"
#include "dataplane/core/flowtab.h"
#include "dataplane/core/forward.h"
#include "dataplane/port.h"

struct dp_state;
struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;
struct synced;

enum worker_poll {
	WORKER_POLL_BUSY = 0,       /* production: the lcore spins */
	WORKER_POLL_ADAPTIVE,       /* sleeps after empty polls: tests, demos */
	WORKER_POLL_MAX
};

extern const char *const worker_poll_names[WORKER_POLL_MAX];

/* A flow event for syncd, worker -> control thread. */
struct export_rec {
	struct flow_key key;
	uint32_t dest;              /* destination id */
	uint32_t lifetime_ms;       /* idle lifetime left */
	uint8_t event;              /* enum export_event */
	uint8_t state;              /* enum flowtab_state */
	uint8_t pad[14];            /* 0; one cache line a record: written
				     * whole, around the cache (export_batch_put()) */
};

static_assert(sizeof(struct export_rec) == 64, "an export record is one cache line");

/* What every worker and the control thread share. */
struct dp_shared {
	struct dp_state *state;     /* RCU: load once per burst */
	struct synced *synced;
	struct rte_rcu_qsbr *rcu;
	struct dp_port port;
	struct fwd_node node;       /* answered for in ARP/ND */
	enum worker_poll poll;
	volatile bool stop;
	uint64_t tsc_per_ms;
	uint32_t max_dests;         /* destination ids the process hands out: the
				     * rows of each worker's dest_counters */
};

/* A request the control thread leaves in a worker's mailbox. */
enum worker_req_kind {
	WORKER_REQ_NONE = 0,
	WORKER_REQ_LOOKUP,          /* key -> entry */
	WORKER_REQ_DUMP,            /* from cursor, up to max entries */
	WORKER_REQ_TUNE,            /* flowtab_tune(params): a reload */
	WORKER_REQ_MAX
};

struct worker_req {
	uint8_t kind;
	struct flow_key key;        /* LOOKUP */
	uint64_t cursor;            /* DUMP: in and out (FLOWTAB_WALK_END: done) */
	uint32_t max;               /* DUMP */
	uint32_t count;             /* out: entries written */
	struct flowtab_entry *out;  /* room for max (DUMP) or 1 (LOOKUP) */
	struct flowtab_params params;   /* TUNE */
	int32_t rc;
};

struct worker {
	unsigned id;
	unsigned lcore;
	uint16_t queue;
	struct dp_shared *shared;
	struct flowtab *flows;
	struct rte_ring *export_ring;   /* struct export_rec, worker -> control */
	struct rte_ring *slow_ring;     /* ARP/ND mbufs, worker -> control */
	struct rte_ring *tx_ring;       /* mbufs to send, control -> worker */
	struct rte_mempool *pool;
	struct worker_req *req;         /* mailbox: control sets, worker clears */
	uint64_t req_seq, done_seq;     /* atomics */
	/* [dest id]: packets, bytes, new flows, and the gauge of this worker's
	 * entries that carry it (FLOWS: expired ones until freed) */
	uint64_t (*dest_counters)[FWD_DEST_ROW];
	uint32_t expire_ms;             /* when the expiry scan last ran */
	uint32_t mtu;                   /* the port's, cached: fixed until restart */
	uint16_t ip_id;                 /* next outer IPv4 ID without DF */
	uint64_t mac, mac_mask;         /* the port's MAC as the first 8 bytes of a
					 * frame read whole, masked (for_this_port) */
	struct dp_counters counters;
} __attribute__((aligned(64)));


struct config_flows;

/* The flow table parameters of the config's flows section (no seed). */
struct flowtab_params worker_flow_params(const struct config_flows *fl);

/*
 * Set up worker id for lcore: its rings and its counters (a row for each of
 * shared->max_dests destinations) on socket, its flow table made on lcore
 * itself, so that the table's pages are first touched there and sit on the
 * lcore's NUMA node. Main lcore, before launch (lcore must be idle). Returns
 * 0 or -errno after logging why.
 */
int worker_init(struct worker *w, unsigned id, unsigned lcore, int socket,
		struct dp_shared *shared, const struct flowtab_params *fp,
		uint32_t ring_entries, struct rte_mempool *pool);

/* Free what worker_init() allocated; the worker must have stopped. */
void worker_fini(struct worker *w);

/* The lcore entry point (rte_eal_remote_launch); returns when shared->stop. */
int worker_main(void *arg);

/*
 * Control thread, while the workers run: post req to the worker and wait
 * until it is served, between two bursts (within a millisecond even from an
 * adaptive sleep). No timeout: the worker writes into req and its out
 * buffer, which must outlive the request; a wait of over a second is
 * logged (a starved worker lcore).
 */
void worker_request(struct worker *w, struct worker_req *req);

#endif /* MAGLB_DATAPLANE_WORKER_H */
