/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/worker.h"

#include <errno.h>
#include <string.h>

#include <qb/qblog.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_random.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "config/config.h"
#include "dataplane/core/encap.h"
#include "dataplane/core/ipfrag.h"
#include "dataplane/core/packet.h"
#include "dataplane/core/reply.h"
#include "dataplane/export_batch.h"
#include "dataplane/state.h"
#include "dataplane/synced.h"

const char *const worker_poll_names[WORKER_POLL_MAX] = {
	[WORKER_POLL_BUSY] = "busy",
	[WORKER_POLL_ADAPTIVE] = "adaptive",
};

enum {
	BURST = 64,                 /* new flows: +5 % over 32 (more bucket
				     * fetches in flight); established: even */
	FRAG_MAX = 32,              /* fragments of one packet; 2 suffice for a
				     * packet that came within the port MTU */
	EXPIRE_SWEEP_MS = 1024,     /* the expiry scan visits the used part of */
	EXPIRE_PER_MS_MIN = 64,     /* the table once per */
	IDLE_POLLS = 64,            /* empty polls before adaptive sleeping */
	SLEEP_MAX_US = 1000,
};

static_assert((int)BURST <= (int)SYNCED_BURST_MAX && (int)BURST <= (int)FWD_BURST_MAX,
	      "a burst's misses fit one synced lookup and its 64-bit hit mask");

/* One burst: the packets that made it past parsing, and what becomes of them. */
struct burst {
	uint32_t n;
	struct rte_mbuf *pkts[BURST];
	struct pkt_meta meta[BURST];
	struct fwd_out out;             /* what fwd_burst() decided */
	uint32_t n_tx;
	uint32_t n_made;                /* of tx[0..n_tx), made here */
	uint64_t tx_bytes;              /* of tx[0..n_tx) */
	struct rte_mbuf *tx[2 * BURST];
	uint8_t made[2 * BURST];        /* tx[i] was made here, not received */
	/* At most two records a packet: a rescheduled flow's NEW, then its
	 * CLOSE. */
	struct export_batch exp;
};

static inline void
drop(struct worker *w, struct rte_mbuf *m, enum dp_drop why)
{
	w->counters.drop[why]++;
	rte_pktmbuf_free(m);
}

static_assert(DP_EVENT_EXPORT_NEW + EXPORT_REFRESH == DP_EVENT_EXPORT_REFRESH &&
	      DP_EVENT_EXPORT_NEW + EXPORT_CLOSE == DP_EVENT_EXPORT_CLOSE,
	      "an export event's counter is DP_EVENT_EXPORT_NEW + the event");

/* Export a record of the burst's decisions. The key comes from the
 * packet's meta (the same key, written long before), not from the entry,
 * which an insert may have just written. */
static inline void
export(struct worker *w, struct burst *b, const struct fwd_export *x)
{
	w->counters.event[DP_EVENT_EXPORT_NEW + x->event]++;
	if (!export_batch_put(&b->exp, &b->meta[x->packet].key, b->out.act[x->packet],
			      flowtab_timeout(w->flows, (enum flowtab_state)x->state),
			      x->event, x->state))      /* the ring is full: never wait */
		w->counters.event[DP_EVENT_EXPORT_DROPPED]++;
}

static inline uint32_t
label_hash(const struct flow_key *k)
{
	uint64_t x = (uint64_t)k->client_port << 16 ^ k->vip_port;

	for (int i = 0; i < 16; i += 4)
		x = (x ^ ((uint64_t)k->client[i] << 24 | (uint64_t)k->client[i + 1] << 16 |
			  (uint64_t)k->client[i + 2] << 8 | k->client[i + 3])) *
		    0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 32);
}

/*
 * Send tx[0..n), bytes in all. made[i] says tx[i] was made here (a reply, a
 * fragment past the first, a control frame), n_made of them; made NULL with
 * n_made = n: all were. Every frame is counted once: a received one sent is
 * FORWARDED, refused TX_FULL (a drop); a made one refused TX_MADE_LOST.
 */
static void
transmit(struct worker *w, struct rte_mbuf **tx, const uint8_t *made, uint32_t n_made,
	 uint32_t n, uint64_t bytes)
{
	uint32_t made_sent = 0;
	uint16_t sent;

	if (n == 0)
		return;
	sent = rte_eth_tx_burst(w->shared->port.id, w->queue, tx, (uint16_t)n);
	if (n_made != 0)
		for (uint32_t i = 0; i < sent; i++)
			made_sent += made == NULL || made[i];
	for (uint32_t i = sent; i < n; i++) {
		bytes -= rte_pktmbuf_pkt_len(tx[i]);
		if (n_made != 0 && (made == NULL || made[i])) {
			w->counters.event[DP_EVENT_TX_MADE_LOST]++;
			rte_pktmbuf_free(tx[i]);
		} else {
			drop(w, tx[i], DP_DROP_TX_FULL);
		}
	}
	w->counters.event[DP_EVENT_TX_PACKETS] += sent;
	w->counters.event[DP_EVENT_FORWARDED] += sent - made_sent;
	w->counters.event[DP_EVENT_TX_BYTES] += bytes;
}

/* Queue a frame made here (a reply, a fragment past the first). */
static inline void
queue_made(struct worker *w, struct burst *b, struct rte_mbuf *m)
{
	w->counters.event[DP_EVENT_TX_MADE]++;
	b->tx_bytes += rte_pktmbuf_pkt_len(m);
	b->made[b->n_tx] = 1;
	b->n_made++;
	b->tx[b->n_tx++] = m;
}

/* Send what b queued. */
static inline void
transmit_burst(struct worker *w, struct burst *b)
{
	transmit(w, b->tx, b->made, b->n_made, b->n_tx, b->tx_bytes);
	b->n_tx = b->n_made = 0;
	b->tx_bytes = 0;
}

/* Tag the frame m starts with, data_off >= ENCAP_VLAN_LEN. */
static inline void
vlan_tag(struct rte_mbuf *m, uint16_t vlan)
{
	encap_vlan_push(rte_pktmbuf_mtod(m, uint8_t *), vlan);
	m->data_off -= ENCAP_VLAN_LEN;
	m->data_len += ENCAP_VLAN_LEN;
	m->pkt_len += ENCAP_VLAN_LEN;
}

static void
send_too_big(struct worker *w, struct burst *b, struct rte_mbuf *m,
	     const struct pkt_meta *meta, uint16_t overhead)
{
	struct rte_mbuf *r = rte_pktmbuf_alloc(w->pool);
	uint16_t mtu = reply_too_big_mtu((uint16_t)w->mtu, overhead,
					 meta->family);
	size_t len;

	if (r == NULL) {
		drop(w, m, DP_DROP_NO_MBUF);
		return;
	}
	/* The reply quotes at most 1280 bytes: in a chained frame's first
	 * buffer, which is then taken for the whole frame. */
	if (m->nb_segs > 1 && rte_pktmbuf_data_len(m) < meta->l2_len + REPLY_ICMP6_MAX_IP) {
		rte_pktmbuf_free(r);
		drop(w, m, DP_DROP_CHAINED);
		return;
	}
	len = reply_too_big(rte_pktmbuf_mtod(r, uint8_t *), rte_pktmbuf_tailroom(r),
			    rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_pkt_len(m),
			    meta->l2_len, meta->family, mtu);
	if (len == 0) {
		rte_pktmbuf_free(r);
	} else {
		r->data_len = (uint16_t)len;
		r->pkt_len = (uint32_t)len;
		queue_made(w, b, r);
		w->counters.event[DP_EVENT_TOO_BIG_SENT]++;
	}
	drop(w, m, DP_DROP_TOO_BIG);
}

/* Queue m for TX to destination dest. */
static inline __attribute__((always_inline)) void
queue_tx(struct worker *w, struct burst *b, struct rte_mbuf *m, uint32_t dest)
{
	w->dest_counters[dest][FWD_DEST_PACKETS]++;
	w->dest_counters[dest][FWD_DEST_BYTES] += rte_pktmbuf_pkt_len(m);
	b->tx_bytes += rte_pktmbuf_pkt_len(m);
	b->made[b->n_tx] = 0;
	b->tx[b->n_tx++] = m;
}

/* m's data starts with hdr_len bytes for d's tunnel header, then an inner
 * packet of inner_len bytes of packet meta: write the header. An outer IPv4
 * header without DF (the inner had none) may be fragmented on the way: it
 * gets an ID of the worker's sequence (RFC 6864); with DF, ID 0. */
static inline __attribute__((always_inline)) void
tunnel_write(struct worker *w, struct rte_mbuf *m, const struct pkt_meta *meta,
	     const struct dp_dest *d, uint16_t hdr_len, uint16_t inner_len)
{
	uint8_t *hdr = rte_pktmbuf_mtod(m, uint8_t *);

	m->data_len = (uint16_t)(hdr_len + inner_len);
	m->pkt_len = m->data_len;
	encap_write(hdr, &d->tunnel, meta->family, inner_len, meta->tos, meta->df != 0, 0,
		    d->tunnel.outer_family == FLOW_FAMILY_IPV6 ? label_hash(&meta->key) : 0);
	if (unlikely(!meta->df))
		encap_set_id(hdr, &d->tunnel, w->ip_id++);
}

/*
 * Packet i is IPv4 without DF and over the MTU once encapsulated: split it
 * (ipfrag.h) and send every fragment through d's tunnel, the first in the
 * packet's own buffer (its data start moved as forward() does), the others
 * in buffers from the pool, as replies are.
 */
static __attribute__((noinline)) void
forward_fragments(struct worker *w, struct burst *b, uint32_t i, const struct dp_dest *d,
		  uint32_t dest)
{
	const struct pkt_meta *meta = &b->meta[i];
	struct rte_mbuf *m = b->pkts[i], *f[FRAG_MAX];
	uint16_t overhead = encap_overhead(&d->tunnel), vlan = w->shared->port.vlan;
	uint16_t hdr_len = (uint16_t)(ENCAP_ETH_LEN + overhead);
	int off = (int)m->data_off + meta->l2_len - hdr_len - (vlan != 0 ? ENCAP_VLAN_LEN : 0);
	uint8_t *ip = rte_pktmbuf_mtod_offset(m, uint8_t *, meta->l2_len);
	struct ipfrag_plan plan;
	unsigned n;

	if (m->nb_segs > 1) {           /* its pieces are in other buffers */
		drop(w, m, DP_DROP_CHAINED);
		return;
	}
	n = ipfrag_plan(&plan, ip, meta->ip_len, (uint16_t)(w->mtu - overhead));
	if (off < 0) {
		drop(w, m, DP_DROP_NO_HEADROOM);
		return;
	}
	if (n < 2 || n > FRAG_MAX) {
		drop(w, m, DP_DROP_CANNOT_FRAGMENT);
		return;
	}
	if (rte_pktmbuf_alloc_bulk(w->pool, f + 1, n - 1) != 0) {
		drop(w, m, DP_DROP_NO_MBUF);
		return;
	}
	for (unsigned k = 1; k < n; k++) {
		uint16_t room = rte_pktmbuf_tailroom(f[k]);
		size_t len = room < hdr_len ? 0 :
			     ipfrag_write(rte_pktmbuf_mtod_offset(f[k], uint8_t *, hdr_len),
					  room - hdr_len, &plan, ip, k);

		if (len == 0) {         /* not with buffers that hold the MTU */
			rte_pktmbuf_free_bulk(f + 1, n - 1);
			drop(w, m, DP_DROP_CANNOT_FRAGMENT);
			return;
		}
		tunnel_write(w, f[k], meta, d, hdr_len, (uint16_t)len);
		if (vlan != 0)
			vlan_tag(f[k], vlan);
	}
	ipfrag_first(ip, &plan);
	m->data_off = (uint16_t)(off + (vlan != 0 ? ENCAP_VLAN_LEN : 0));
	tunnel_write(w, m, meta, d, hdr_len, ipfrag_len(&plan, 0));
	if (vlan != 0)
		vlan_tag(m, vlan);
	if (b->n_tx + n > RTE_DIM(b->tx))       /* make room: send what is queued */
		transmit_burst(w, b);
	queue_tx(w, b, m, dest);
	for (unsigned k = 1; k < n; k++) {
		w->dest_counters[dest][FWD_DEST_PACKETS]++;
		w->dest_counters[dest][FWD_DEST_BYTES] += rte_pktmbuf_pkt_len(f[k]);
		queue_made(w, b, f[k]);
	}
	w->counters.event[DP_EVENT_FRAGMENTED]++;
}

/*
 * A chained frame (a jumbo frame in several buffers) within the MTU once
 * encapsulated: the tunnel header replaces the Ethernet header at the start
 * of its first buffer; the rest stays where it is. Trailer padding past the
 * IP packet is trimmed from the last buffer.
 */
static __attribute__((noinline)) void
forward_chained(struct worker *w, struct burst *b, struct rte_mbuf *m,
		const struct pkt_meta *meta, const struct dp_dest *d, uint32_t dest)
{
	uint16_t overhead = encap_overhead(&d->tunnel), vlan = w->shared->port.vlan;
	uint16_t hdr_len = (uint16_t)(ENCAP_ETH_LEN + overhead);
	uint16_t tag = vlan != 0 ? ENCAP_VLAN_LEN : 0;
	uint32_t pad = rte_pktmbuf_pkt_len(m) - meta->l2_len - meta->ip_len;
	int off = (int)m->data_off + meta->l2_len - hdr_len - tag;

	if (off < 0) {
		drop(w, m, DP_DROP_NO_HEADROOM);
		return;
	}
	if (pad != 0 && rte_pktmbuf_trim(m, (uint16_t)RTE_MIN(pad, (uint32_t)UINT16_MAX)) != 0) {
		drop(w, m, DP_DROP_CHAINED);    /* padding over more than one buffer */
		return;
	}
	m->data_off = (uint16_t)(off + tag);
	m->data_len = (uint16_t)(m->data_len - meta->l2_len + hdr_len);
	m->pkt_len = m->pkt_len - meta->l2_len + hdr_len;
	encap_write(rte_pktmbuf_mtod(m, uint8_t *), &d->tunnel, meta->family, meta->ip_len,
		    meta->tos, meta->df != 0, 0,
		    d->tunnel.outer_family == FLOW_FAMILY_IPV6 ? label_hash(&meta->key) : 0);
	if (!meta->df)
		encap_set_id(rte_pktmbuf_mtod(m, uint8_t *), &d->tunnel, w->ip_id++);
	if (vlan != 0)
		vlan_tag(m, vlan);
	queue_tx(w, b, m, dest);
}

/* Encapsulate packet i for destination dest and queue it for TX. Inlined
 * into the fast path: the call cost a tenth of it. */
static inline __attribute__((always_inline)) void
forward(struct worker *w, struct burst *b, const struct dp_state *st, uint32_t i,
	uint32_t dest)
{
	const struct dp_dest *d = &st->dests[dest];
	const struct pkt_meta *meta = &b->meta[i];
	struct rte_mbuf *m = b->pkts[i];
	uint16_t overhead = encap_overhead(&d->tunnel);

	if (!d->resolved) {
		drop(w, m, DP_DROP_NO_NEIGHBOUR);
		return;
	}
	if (d->tunnel.kind == ENCAP_L2) {
		encap_l2_rewrite(rte_pktmbuf_mtod(m, uint8_t *), &d->tunnel);
	} else {
		if ((uint32_t)meta->ip_len + overhead > w->mtu) {
			if (meta->df)
				send_too_big(w, b, m, meta, overhead);
			else
				forward_fragments(w, b, i, d, dest);
			return;
		}
		/* One move of the data start replaces the client's Ethernet header
		 * with the tunnel's and drops any trailer padding (one segment). */
		uint16_t hdr_len = (uint16_t)(ENCAP_ETH_LEN + overhead), vlan;
		int off = (int)m->data_off + meta->l2_len - hdr_len;

		if (unlikely(m->nb_segs > 1)) {
			forward_chained(w, b, m, meta, d, dest);
			return;
		}
		vlan = w->shared->port.vlan;
		off -= vlan != 0 ? ENCAP_VLAN_LEN : 0;
		if (off < 0) {
			drop(w, m, DP_DROP_NO_HEADROOM);
			return;
		}
		m->data_off = (uint16_t)(off + (vlan != 0 ? ENCAP_VLAN_LEN : 0));
		tunnel_write(w, m, meta, d, hdr_len, meta->ip_len);
		if (unlikely(vlan != 0))
			vlan_tag(m, vlan);
	}
	queue_tx(w, b, m, dest);
}

/* Hand ARP, ND and BFD to the control thread, which answers, learns or
 * refuses and counts each. */
static void
to_slow_path(struct worker *w, struct rte_mbuf *m)
{
	if (m->nb_segs > 1)
		drop(w, m, DP_DROP_CHAINED);
	else if (rte_ring_sp_enqueue(w->slow_ring, m) != 0)
		drop(w, m, DP_DROP_SLOW_PATH_FULL);
	else
		w->counters.event[DP_EVENT_SLOW_PATH]++;
}

/*
 * The frame's 802.1Q tagging is the port's: no tag on an untagged port
 * (vlan 0), else exactly one tag of VID vlan. Frames too short to tell are
 * the parser's to drop.
 */
static inline bool
vlan_ok(const uint8_t *frame, uint32_t len, uint16_t vlan)
{
	uint16_t type;

	if (len < PKT_ETHER_LEN + PKT_VLAN_LEN + 2)
		return true;
	type = be16_get(frame + PKT_ETHER_TYPE);
	if (vlan == 0)
		return type != PKT_ETHERTYPE_VLAN && type != PKT_ETHERTYPE_QINQ;
	type = be16_get(frame + PKT_ETHER_TYPE + PKT_VLAN_LEN);
	return be16_get(frame + PKT_ETHER_TYPE) == PKT_ETHERTYPE_VLAN &&
	       (be16_get(frame + PKT_ETHER_TYPE + 2) & 0xfff) == vlan &&
	       type != PKT_ETHERTYPE_VLAN && type != PKT_ETHERTYPE_QINQ;
}

/* Parse a frame the inline parser did not take: tagged, chained, or of any
 * other kind. */
static __attribute__((noinline)) bool
parse_other(const struct worker *w, const struct rte_mbuf *m, struct pkt_meta *meta,
	    enum dp_drop *why)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);

	if (!vlan_ok(frame, rte_pktmbuf_data_len(m), w->shared->port.vlan)) {
		*why = DP_DROP_WRONG_VLAN;
		return false;
	}
	return pkt_parse_head(frame, rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m), meta, why);
}

/* A parsed frame has at least 14 bytes: its first 8 can be read whole. */
static inline bool
for_this_port(const struct worker *w, const uint8_t *frame)
{
	uint64_t head;

	memcpy(&head, frame, sizeof(head));
	return (head & w->mac_mask) == w->mac;
}

/* Parse and classify; keep the IP packets for this port in b. Inline into
 * worker_burst(): the call cost a new flow 2 % more instructions
 * (dataplane-callgrind). */
static inline __attribute__((always_inline)) void
parse_burst(struct worker *w, struct burst *b, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t bytes = 0;     /* counted once: a counter in memory is a
				 * store the parser's byte stores may alias */

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct pkt_meta *meta = &b->meta[b->n];
		const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
		enum dp_drop why;

		rte_prefetch0(i + 1 < n ? rte_pktmbuf_mtod(pkts[i + 1], void *) : frame);
		bytes += rte_pktmbuf_pkt_len(m);
		/* The inline parser takes untagged frames in one buffer; on a
		 * tagged port or for a chain, parse_other() decides. */
		if (!(likely(pkt_parse_simple(frame, rte_pktmbuf_data_len(m), meta)) &&
		      likely((w->shared->port.vlan | (m->nb_segs - 1)) == 0)) &&
		    !parse_other(w, m, meta, &why)) {
			drop(w, m, why);
			continue;
		}
		if (meta->kind == PKT_KIND_ARP || meta->kind == PKT_KIND_ND) {
			to_slow_path(w, m);
			continue;
		}
		if (!for_this_port(w, frame)) {
			drop(w, m, DP_DROP_OTHER_HOST);
			continue;
		}
		if (meta->kind == PKT_KIND_ICMP_OTHER) {
			drop(w, m, DP_DROP_ICMP_UNHANDLED);
			continue;
		}
		b->pkts[b->n++] = m;
	}
	w->counters.event[DP_EVENT_RX_BYTES] += bytes;
}

static uint64_t
synced_lookup(void *arg, const struct flow_key *keys[], uint32_t n, uint32_t now_ms,
	      struct synced_value out[])
{
	return synced_lookup_burst(arg, keys, n, now_ms, out);
}

/* Parse the burst, decide (fwd_burst()), then act: the records for syncd,
 * then each packet in order, to TX, a drop or the control thread. */
static void
worker_burst(struct worker *w, const struct dp_state *st, struct rte_mbuf **pkts,
	     uint16_t n, uint32_t now_ms)
{
	struct burst b;
	const struct fwd_ctx c = {
		.flows = w->flows, .counters = &w->counters, .dest = w->dest_counters,
		.node = &w->shared->node, .synced_lookup = synced_lookup,
		.synced_arg = w->shared->synced,
	};

	b.n = b.n_tx = b.n_made = 0;
	export_batch_begin(&b.exp, w->export_ring, 2 * BURST);
	b.tx_bytes = 0;
	w->counters.event[DP_EVENT_RX_PACKETS] += n;
	parse_burst(w, &b, pkts, n);
	fwd_burst(&c, st, b.meta, b.n, now_ms, &b.out);
	for (uint32_t k = 0; k < b.out.n_exports; k++)
		export(w, &b, &b.out.exports[k]);
	for (uint32_t i = 0; i < b.n; i++) {
		uint32_t act = b.out.act[i];

		if (likely(fwd_act_forwards(act)))
			forward(w, &b, st, i, act);
		else if (act == FWD_ACT_CONTROL)
			to_slow_path(w, b.pkts[i]);
		else
			drop(w, b.pkts[i], (enum dp_drop)(act - FWD_ACT_DROP));
	}
	transmit_burst(w, &b);
	export_batch_end(&b.exp);
}

struct dump_arg {
	struct worker_req *req;
	uint32_t now_ms;
	const struct flowtab *flows;
};

static void
dump_one(const struct flowtab_entry *e, void *arg)
{
	struct dump_arg *a = arg;

	if (!flowtab_expired(a->flows, e, a->now_ms))
		a->req->out[a->req->count++] = *e;
}

/* Serve the control thread's request, if one is waiting. */
static void
serve_mailbox(struct worker *w, uint32_t now_ms)
{
	uint64_t seq = __atomic_load_n(&w->req_seq, __ATOMIC_ACQUIRE);
	struct worker_req *req = w->req;

	if (seq == w->done_seq)
		return;
	req->count = 0;
	req->rc = 0;
	if (req->kind == WORKER_REQ_LOOKUP) {
		struct flowtab_entry *e = flowtab_lookup(w->flows, &req->key);

		if (e != NULL && !flowtab_expired(w->flows, e, now_ms))
			req->out[req->count++] = *e;
	} else if (req->kind == WORKER_REQ_DUMP) {
		struct dump_arg a = { req, now_ms, w->flows };

		flowtab_walk(w->flows, &req->cursor, req->max, dump_one, &a);
	} else if (req->kind == WORKER_REQ_TUNE) {
		req->rc = flowtab_tune(w->flows, &req->params);
	} else {
		req->rc = -EINVAL;
	}
	__atomic_store_n(&w->done_seq, seq, __ATOMIC_RELEASE);
}

/*
 * Between bursts: frames from the control thread, requests, and the expiry
 * scan, paced by the clock (a sweep of the table per EXPIRE_SWEEP_MS), not by
 * the burst rate: a busy worker must not spend its cycles on it.
 */
static void
housekeeping(struct worker *w, uint32_t now_ms)
{
	struct rte_mbuf *tx[BURST];
	unsigned n = rte_ring_sc_dequeue_burst(w->tx_ring, (void **)tx, BURST, NULL);
	uint32_t elapsed = now_ms - w->expire_ms, per_ms;
	uint64_t bytes = 0;

	for (unsigned i = 0; i < n; i++)
		bytes += rte_pktmbuf_pkt_len(tx[i]);
	w->counters.event[DP_EVENT_TX_MADE] += n;
	transmit(w, tx, NULL, n, n, bytes);
	serve_mailbox(w, now_ms);
	if (elapsed == 0)
		return;
	w->expire_ms = now_ms;
	/* paced by the part in use: a filling table is not swept many times a
	 * period (at 6 M new flows/s that was a DRAM line per packet) */
	per_ms = RTE_MAX(flowtab_used(w->flows) / EXPIRE_SWEEP_MS, (uint32_t)EXPIRE_PER_MS_MIN);
	w->counters.event[DP_EVENT_FLOWS_EXPIRED] +=
		flowtab_expire(w->flows, now_ms, per_ms * RTE_MIN(elapsed, 8u));
}

/* Adaptive polling: sleep after empty polls, 1 us doubling to 1 ms. */
static void
idle_sleep(struct worker *w, unsigned *us)
{
	struct rte_rcu_qsbr *rcu = w->shared->rcu;

	rte_rcu_qsbr_thread_offline(rcu, w->id);
	rte_delay_us_sleep(*us);
	rte_rcu_qsbr_thread_online(rcu, w->id);
	*us = *us * 2 > SLEEP_MAX_US ? SLEEP_MAX_US : *us * 2;
}

int
worker_main(void *arg)
{
	struct worker *w = arg;
	struct dp_shared *sh = w->shared;
	struct rte_mbuf *pkts[BURST];
	unsigned empty = 0, us = 1;

	rte_rcu_qsbr_thread_register(sh->rcu, w->id);
	rte_rcu_qsbr_thread_online(sh->rcu, w->id);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		uint32_t now_ms = (uint32_t)(rte_rdtsc() / sh->tsc_per_ms);
		const struct dp_state *st = __atomic_load_n(&sh->state, __ATOMIC_ACQUIRE);
		uint16_t n;

		if (st == NULL) {           /* the control thread is still building it */
			idle_sleep(w, &us);
			continue;
		}
		n = rte_eth_rx_burst(sh->port.id, w->queue, pkts, BURST);

		if (n > 0)
			worker_burst(w, st, pkts, n, now_ms);
		housekeeping(w, now_ms);
		rte_rcu_qsbr_quiescent(sh->rcu, w->id);
		if (n > 0) {
			empty = 0;
			us = 1;
		} else if (sh->poll == WORKER_POLL_ADAPTIVE && ++empty > IDLE_POLLS) {
			idle_sleep(w, &us);
		}
	}
	rte_rcu_qsbr_thread_offline(sh->rcu, w->id);
	rte_rcu_qsbr_thread_unregister(sh->rcu, w->id);
	return 0;
}

static_assert(CONFIG_FLOWS_CAPACITY_MAX <= FLOWTAB_CAPACITY_MAX,
	      "every capacity the config accepts makes a flow table");

struct flowtab_params
worker_flow_params(const struct config_flows *fl)
{
	return (struct flowtab_params){
		.capacity = fl->capacity,
		.tcp_syn_ms = fl->timeouts.tcp_syn * 1000,
		.tcp_established_ms = fl->timeouts.tcp_established * 1000,
		.tcp_closing_ms = fl->timeouts.tcp_closing * 1000,
		.udp_ms = fl->timeouts.udp * 1000,
		.refresh_ms = fl->refresh_interval * 1000,
		.insert_rate = fl->insert_rate,
	};
}

void
worker_request(struct worker *w, struct worker_req *req)
{
	uint64_t seq = w->req_seq + 1;
	uint64_t warn_at = rte_get_timer_cycles() + rte_get_timer_hz();

	w->req = req;
	__atomic_store_n(&w->req_seq, seq, __ATOMIC_RELEASE);
	while (__atomic_load_n(&w->done_seq, __ATOMIC_ACQUIRE) != seq) {
		if (warn_at != 0 && rte_get_timer_cycles() > warn_at) {
			qb_log(LOG_WARNING, "worker %u: a control request waits over 1 s "
			       "(is its lcore starved?)", w->id);
			warn_at = 0;
		}
		rte_delay_us_sleep(20);
	}
}

/* What the packet path reads of the port, in the worker's own lines. */
static void
cache_port(struct worker *w, const struct dp_port *port)
{
	uint8_t mac[8] = { 0 }, mask[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	memcpy(mac, port->mac, sizeof(port->mac));
	memcpy(&w->mac, mac, sizeof(w->mac));
	memcpy(&w->mac_mask, mask, sizeof(w->mac_mask));
	w->mtu = port->mtu;
}

struct flows_create_arg {
	struct worker *w;
	struct flowtab_params p;
};

/*
 * Launched on the worker's lcore by worker_init(): the flow table of p, made
 * and touched there (the kernel places a page where it is first written: the
 * lcore's NUMA node). 0 or -errno.
 */
static int
flows_create(void *arg)
{
	struct flows_create_arg *a = arg;

	a->w->flows = flowtab_create(&a->p);
	return a->w->flows != NULL ? 0 : -errno;
}

int
worker_init(struct worker *w, unsigned id, unsigned lcore, int socket,
	    struct dp_shared *shared, const struct flowtab_params *fp,
	    uint32_t ring_entries, struct rte_mempool *pool)
{
	struct flows_create_arg fa = { w, *fp };
	char name[RTE_RING_NAMESIZE];
	int rc;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->lcore = lcore;
	w->queue = (uint16_t)id;
	w->shared = shared;
	w->pool = pool;
	cache_port(w, &shared->port);
	w->ip_id = (uint16_t)rte_rand();
	w->dest_counters = rte_zmalloc_socket("dest_counters", (size_t)shared->max_dests *
					      sizeof(*w->dest_counters), 64, socket);
	snprintf(name, sizeof(name), "export%u", id);
	w->export_ring = rte_ring_create_elem(name, sizeof(struct export_rec),
					      rte_align32pow2(ring_entries), socket,
					      RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "slow%u", id);
	w->slow_ring = rte_ring_create(name, 1024, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "tx%u", id);
	w->tx_ring = rte_ring_create(name, 1024, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (w->export_ring == NULL || w->slow_ring == NULL || w->tx_ring == NULL ||
	    w->dest_counters == NULL) {
		qb_log(LOG_ERR, "worker %u: cannot allocate its rings or counters on socket "
		       "%d: %s", id, socket, rte_strerror(rte_errno));
		worker_fini(w);
		return -ENOMEM;
	}
	fa.p.seed = rte_rand();
	fa.p.on_free = fwd_entry_freed;
	fa.p.on_free_arg = w->dest_counters;
	rc = rte_eal_remote_launch(flows_create, &fa, lcore);
	if (rc == 0)
		rc = rte_eal_wait_lcore(lcore);
	if (rc < 0) {
		qb_log(LOG_ERR, "worker %u: cannot allocate its flow table (%u entries) on "
		       "lcore %u: %s", id, fp->capacity, lcore, strerror(-rc));
		worker_fini(w);
		return rc;
	}
	return 0;
}

void
worker_fini(struct worker *w)
{
	struct rte_mbuf *m;

	while (w->slow_ring != NULL && rte_ring_dequeue(w->slow_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (w->tx_ring != NULL && rte_ring_dequeue(w->tx_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(w->slow_ring);
	rte_ring_free(w->tx_ring);
	rte_ring_free(w->export_ring);
	rte_free(w->dest_counters);
	flowtab_destroy(w->flows);
	memset(w, 0, sizeof(*w));
}
