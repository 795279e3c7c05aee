/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/forward.h"

#include <string.h>

#include "dataplane/core/bfd.h"
#include "dataplane/core/viptab.h"
#include "dataplane/state.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

static_assert(FWD_BURST_MAX <= 64, "a burst's synced hits fit a 64-bit mask");
static_assert((uint32_t)STATE_DESTS_LIMIT < (uint32_t)FWD_ACT_DROP,
	      "an action tells a destination from a drop");

static const uint8_t touch_event[FLOWTAB_EXPORT_MAX] = {
	[FLOWTAB_EXPORT_REFRESH] = EXPORT_REFRESH,
	[FLOWTAB_EXPORT_CLOSE] = EXPORT_CLOSE,
	[FLOWTAB_EXPORT_NEW] = EXPORT_NEW,
};

/* Whether a destination still carries its flows (up or draining). */
static inline bool
dest_carries(const struct dp_state *st, uint32_t dest)
{
	return dest < st->n_dests && st->dests[dest].status <= DEST_DRAINING;
}

/* The same, and it belongs to the packet's VIP. */
static inline bool
dest_usable(const struct dp_state *st, uint32_t dest, uint32_t vip)
{
	return dest_carries(st, dest) && st->dests[dest].vip == vip;
}

/* The FLOWS gauge: an entry of this worker now carries dest (or no longer).
 * Entries hold registry ids only, all below the rows' count. */
static inline void
flows_add(const struct fwd_ctx *c, uint32_t dest, int64_t n)
{
	c->dest[dest][FWD_DEST_FLOWS] += (uint64_t)n;
}

void
fwd_entry_freed(void *dest, const struct flowtab_entry *e)
{
	uint64_t (*rows)[FWD_DEST_ROW] = dest;

	rows[e->backend][FWD_DEST_FLOWS]--;
}

static inline void
export_add(struct fwd_out *o, uint32_t i, enum export_event event, uint8_t state)
{
	o->exports[o->n_exports].packet = (uint8_t)i;
	o->exports[o->n_exports].event = (uint8_t)event;
	o->exports[o->n_exports++].state = state;
}

/* Fragments and ICMP errors of VIP flows, for the counters. */
static inline void
count_kind(const struct fwd_ctx *c, const struct pkt_meta *m)
{
	if (likely(m->kind == PKT_KIND_FLOW))
		return;
	c->counters->event[DP_EVENT_FRAGMENTS] += m->kind == PKT_KIND_FRAGMENT;
	c->counters->event[DP_EVENT_ICMP_ERRORS] += m->kind == PKT_KIND_ICMP_ERROR;
}

/* Packet i, of a flow entry e carries (live, destination usable); exported:
 * the caller knows e is EXPORTED (a constant: the fast path's one flag
 * test). An ICMP error follows the flow and changes nothing. */
static inline __attribute__((always_inline)) void
carry_as(const struct fwd_ctx *c, const struct pkt_meta *m, struct flowtab_entry *e,
	 uint32_t now_ms, bool exported, struct fwd_out *o, uint32_t i)
{
	if (m->kind != PKT_KIND_ICMP_ERROR) {
		enum flowtab_export ev =
			exported ? flowtab_touch_exported(c->flows, e, m->tcp_flags, now_ms)
				 : flowtab_touch(c->flows, e, m->tcp_flags, now_ms);

		if (ev != FLOWTAB_EXPORT_NONE)
			export_add(o, i, (enum export_event)touch_event[ev], e->state);
	}
	o->act[i] = e->backend;
}

static inline __attribute__((always_inline)) void
carry(const struct fwd_ctx *c, const struct pkt_meta *m, struct flowtab_entry *e,
      uint32_t now_ms, struct fwd_out *o, uint32_t i)
{
	carry_as(c, m, e, now_ms, false, o, i);
}

/*
 * A live entry the fast path could not take: the VIPs changed since it was
 * checked (a reload), or its destination is down or gone. Check it against
 * the packet's VIP; reschedule the flow by Maglev if its destination no
 * longer carries it, and tell the peers if they held it.
 */
static void
revalidate(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta *m,
	   uint32_t vip, struct flowtab_entry *e, uint32_t now_ms, struct fwd_out *o,
	   uint32_t i)
{
	c->counters->event[DP_EVENT_FLOW_HITS]++;
	if (!dest_usable(st, e->backend, vip)) {
		int64_t pick = state_maglev_pick(st, vip, &m->key);

		if (pick < 0) {
			o->act[i] = FWD_ACT_DROP + DP_DROP_NO_BACKEND;
			return;
		}
		flows_add(c, e->backend, -1);
		flows_add(c, (uint32_t)pick, 1);
		e->backend = (uint32_t)pick;
		if (e->flags & FLOWTAB_FLAG_EXPORTED)
			export_add(o, i, EXPORT_NEW, e->state);
	}
	e->user = st->vip_gen;
	e->sync_after = st->vips[vip].sync_after_packets;   /* a reload may change it */
	carry(c, m, e, now_ms, o, i);
}

/* The state a flow imported from a peer starts in. */
static enum flowtab_state
synced_state(const struct pkt_meta *m)
{
	if (m->key.proto != IPPROTO_TCP)
		return FLOWTAB_UDP;
	return m->tcp_flags & (PKT_TCP_FIN | PKT_TCP_RST) ? FLOWTAB_CLOSING :
	       FLOWTAB_ESTABLISHED;
}

/* A packet whose flow a peer made (v): take it over. e: an expired entry
 * of the same key, or NULL. */
static void
take_synced(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta *m,
	    struct flowtab_entry *e, const struct synced_value *v, uint32_t now_ms,
	    struct fwd_out *o, uint32_t i)
{
	enum flowtab_refuse why;

	c->counters->event[DP_EVENT_SYNCED_HITS]++;
	c->dest[v->dest][FWD_DEST_SYNCED_HITS]++;
	if (e != NULL)
		flowtab_remove(c->flows, e);
	e = flowtab_insert_synced(c->flows, &m->key, v->dest, synced_state(m),
				  v->expires_ms - now_ms, now_ms, &why);
	if (e == NULL) {
		c->counters->event[DP_EVENT_UNTRACKED]++;
		c->dest[v->dest][FWD_DEST_UNTRACKED]++;
		o->act[i] = v->dest;
		return;
	}
	flows_add(c, v->dest, 1);
	/* This node carries the flow now: it refreshes and closes it. */
	e->user = st->vip_gen;
	carry(c, m, e, now_ms, o, i);
}

/*
 * A packet of a provisional entry e (Maglev's guess for a flow picked up
 * mid-stream) whose flow a peer has (v): the peer's entry wins, and e
 * becomes a synced entry, as take_synced() would have made it. Rare: out of
 * line.
 */
static __attribute__((noinline)) void
adopt(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta *m,
      struct flowtab_entry *e, const struct synced_value *v, uint32_t now_ms,
      struct fwd_out *o, uint32_t i)
{
	c->counters->event[DP_EVENT_SYNCED_HITS]++;
	c->counters->event[DP_EVENT_PROVISIONAL_REPLACED]++;
	c->dest[v->dest][FWD_DEST_SYNCED_HITS]++;
	flows_add(c, e->backend, -1);
	flows_add(c, v->dest, 1);
	flowtab_adopt(c->flows, e, v->dest, now_ms);
	e->user = st->vip_gen;
	carry(c, m, e, now_ms, o, i);
}

/* A packet of a flow no table knows: Maglev picks (hash: the flow's), the
 * worker's table records, unless the insert cap or a full table refuse (the
 * flow is then UNTRACKED). e: an expired entry of the same key, restarted in
 * place, or NULL (hint says where the key goes). An ICMP error never makes
 * a flow. Inline: a new flow's path, as the rest of fwd_burst(). */
static inline __attribute__((always_inline)) void
make_new(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta *m,
	 uint32_t vip, struct flowtab_entry *e, struct flowtab_hint hint, uint64_t hash,
	 uint32_t now_ms, struct fwd_out *o, uint32_t i)
{
	enum flowtab_refuse why;
	int64_t pick = state_maglev_pick_hash(st, vip, hash);

	if (pick < 0) {
		o->act[i] = FWD_ACT_DROP + DP_DROP_NO_BACKEND;
		return;
	}
	c->counters->event[DP_EVENT_MAGLEV_PICKS]++;
	c->dest[pick][FWD_DEST_MAGLEV_PICKS]++;
	o->act[i] = (uint32_t)pick;
	if (m->kind == PKT_KIND_ICMP_ERROR)
		return;
	if (e != NULL) {
		uint32_t old = e->backend;

		e = flowtab_reuse(c->flows, e, (uint32_t)pick, m->tcp_flags, now_ms, &why);
		if (e != NULL)
			flows_add(c, old, -1);
	} else {
		e = flowtab_insert_hint(c->flows, &m->key, hint, (uint32_t)pick, m->tcp_flags,
					now_ms, &why);
	}
	if (e == NULL) {
		c->counters->event[DP_EVENT_UNTRACKED]++;
		c->dest[pick][FWD_DEST_UNTRACKED]++;
		return;
	}
	/* Not exported yet: flowtab_touch() says when it is worth it. */
	flows_add(c, (uint32_t)pick, 1);
	e->user = st->vip_gen;
	e->sync_after = st->vips[vip].sync_after_packets;
	c->counters->event[DP_EVENT_NEW_FLOWS]++;
	c->dest[pick][FWD_DEST_NEW]++;
}

/*
 * Whether the packet of entry e, not EXPORTED, is to look at the synced
 * table: e is provisional (a peer's entry may have landed), at most once a
 * millisecond, so that a fast flow's first seconds do not all take the slow
 * path.
 */
static inline bool
provisional_due(const struct flowtab_entry *e, uint32_t now_ms)
{
	return (e->flags & FLOWTAB_FLAG_PROVISIONAL) && e->last_ms != now_ms;
}

/* This node's address of the key's family, or NULL. */
static inline const uint8_t *
node_addr(const struct fwd_node *n, uint8_t family)
{
	int v6 = family == FLOW_FAMILY_IPV6;

	return n->has_addr[v6] ? n->addr[v6] : NULL;
}

/* BFD to this node's address (RFC 5881): the control thread runs the
 * sessions. Asked of packets that matched no VIP only. */
static bool
is_bfd(const struct fwd_node *n, const struct pkt_meta *m)
{
	const uint8_t *own = node_addr(n, m->key.family);

	return m->kind == PKT_KIND_FLOW && m->key.proto == IPPROTO_UDP &&
	       m->key.vip_port == BFD_PORT && own != NULL &&
	       memcmp(m->key.vip, own, m->key.family == FLOW_FAMILY_IPV6 ? 16 : 4) == 0;
}

/* A client no flow may have: a martian, this node or one of its VIPs. Only
 * packets without a live entry get here, and such a client never gets one. */
static inline bool
source_martian(const struct fwd_node *n, const struct dp_state *st, const struct flow_key *k)
{
	const uint8_t *own = node_addr(n, k->family);

	return pkt_source_martian(k->family, k->client) ||
	       (own != NULL &&
		memcmp(own, k->client, k->family == FLOW_FAMILY_IPV6 ? 16 : 4) == 0) ||
	       viptab_has_address(st->viptab, k->family, k->client);
}

/* Packet i's VIP, or -1 with its action set: a drop, or BFD for the
 * control thread. Other protocols get here too: no VIP has theirs. */
static int64_t
match_vip(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta *m,
	  struct fwd_out *o, uint32_t i)
{
	enum dp_drop why;
	int64_t vip = m->kind == PKT_KIND_FRAGMENT ?
		      viptab_lookup_fragment(st->viptab, &m->key, &why) :
		      viptab_lookup(st->viptab, &m->key, &why);

	if (vip < 0) {
		if (unlikely(why == DP_DROP_NOT_VIP && is_bfd(c->node, m)))
			o->act[i] = FWD_ACT_CONTROL;
		else
			o->act[i] = FWD_ACT_DROP +
				    (m->kind == PKT_KIND_ICMP_ERROR ? DP_DROP_ICMP_BAD_INNER : why);
		return -1;
	}
	if (unlikely(source_martian(c->node, st, &m->key))) {
		o->act[i] = FWD_ACT_DROP + DP_DROP_BAD_SOURCE;
		return -1;
	}
	return vip;
}

/* Flows no live entry carries, and provisional entries (miss[0..n_miss)):
 * the synced table, then Maglev. */
static inline __attribute__((always_inline)) void
on_misses(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta meta[],
	  const uint32_t vip[], struct flowtab_entry *entries[],
	  const struct flowtab_hint hint[], const uint32_t *miss, uint32_t n_miss,
	  uint32_t now_ms, struct fwd_out *o)
{
	struct synced_value sv[FWD_BURST_MAX];
	const struct flow_key *keys[FWD_BURST_MAX], *input[FWD_BURST_MAX];
	struct flow_key client[FWD_BURST_MAX];
	/* inserted: a 512-bit filter of the hashes this burst inserted; with
	 * 64 new flows a burst, one in 16 is looked up again (64 bits: one in 3) */
	uint64_t hits = 0, hash[FWD_BURST_MAX], inserted[8] = { 0 };

	/* Maglev's slots are random reads: hash every miss (together: the
	 * hashes are independent) and fetch its slot before the first pick. */
	for (uint32_t j = 0; j < n_miss; j++) {
		keys[j] = &meta[miss[j]].key;
		input[j] = state_hash_input(st, vip[miss[j]], keys[j], &client[j]);
	}
	flow_key_hash_burst(input, n_miss, &st->seed, hash);
	for (uint32_t j = 0; j < n_miss; j++)
		state_maglev_prefetch(st, vip[miss[j]], hash[j]);
	if (n_miss > 0)
		hits = c->synced_lookup(c->synced_arg, keys, n_miss, now_ms, sv);
	for (uint32_t j = 0; j < n_miss; j++) {
		uint32_t i = miss[j];
		uint64_t bit = 1ull << (hash[j] & 63), *word = &inserted[hash[j] >> 6 & 7];
		bool peer = (hits >> j & 1) && dest_usable(st, sv[j].dest, vip[i]);
		struct flowtab_entry *e = entries[i];

		/* An earlier miss of this burst may have inserted this key (a SYN
		 * and its ACK in one burst: its filter bit is set) or recycled the
		 * expired entry the burst lookup found: then look again. */
		if (e != NULL || (*word & bit)) {
			e = flowtab_lookup(c->flows, keys[j]);
			if (e != NULL && !flowtab_expired(c->flows, e, now_ms)) {
				/* a peer's entry beats a provisional guess */
				if ((e->flags & FLOWTAB_FLAG_PROVISIONAL) && peer)
					adopt(c, st, &meta[i], e, &sv[j], now_ms, o, i);
				else
					revalidate(c, st, &meta[i], vip[i], e, now_ms, o, i);
				continue;
			}
		}
		*word |= bit;
		if (peer)
			take_synced(c, st, &meta[i], e, &sv[j], now_ms, o, i);
		else
			make_new(c, st, &meta[i], vip[i], e, hint[i], hash[j], now_ms, o, i);
	}
}

/*
 * The fast path takes a live entry checked against the VIPs in force (its
 * user field holds the state's vip_gen) whose destination is up or
 * draining, unless it is provisional and due a synced lookup: no VIP
 * lookup. An EXPORTED entry (every established flow's, in the end) costs
 * one flag test; the others (a SYN's handshake, an entry short of
 * sync_after packets, a provisional one) two. Everything else gets its VIP
 * matched first.
 */
void
fwd_burst(const struct fwd_ctx *c, const struct dp_state *st, const struct pkt_meta meta[],
	  uint32_t n, uint32_t now_ms, struct fwd_out *o)
{
	const struct flow_key *keys[FWD_BURST_MAX];
	struct flowtab_entry *entries[FWD_BURST_MAX];
	struct flowtab_hint hint[FWD_BURST_MAX];   /* where each key goes in the table */
	uint32_t vip[FWD_BURST_MAX], slow[FWD_BURST_MAX], miss[FWD_BURST_MAX];
	uint32_t n_slow = 0, n_miss = 0;
	uint16_t vip_gen = st->vip_gen;

	o->n_exports = 0;
	if (n == 0)
		return;
	for (uint32_t i = 0; i < n; i++)
		keys[i] = &meta[i].key;
	flowtab_lookup_burst_hint(c->flows, keys, n, entries, hint);
	for (uint32_t i = 0; i < n; i++) {
		struct flowtab_entry *e = entries[i];

		if (e != NULL && e->user == vip_gen && dest_carries(st, e->backend) &&
		    !flowtab_expired(c->flows, e, now_ms)) {
			if (likely(e->flags & FLOWTAB_FLAG_EXPORTED)) {
				count_kind(c, &meta[i]);
				carry_as(c, &meta[i], e, now_ms, true, o, i);
				continue;
			}
			if (!provisional_due(e, now_ms)) {
				count_kind(c, &meta[i]);
				carry(c, &meta[i], e, now_ms, o, i);
				continue;
			}
		}
		slow[n_slow++] = i;
	}
	c->counters->event[DP_EVENT_FLOW_HITS] += n - n_slow;
	for (uint32_t j = 0; j < n_slow; j++) {
		uint32_t i = slow[j];
		struct flowtab_entry *e = entries[i];
		int64_t v = match_vip(c, st, &meta[i], o, i);

		if (v < 0)
			continue;
		vip[i] = (uint32_t)v;
		count_kind(c, &meta[i]);
		if (e != NULL && !flowtab_expired(c->flows, e, now_ms) &&
		    !(e->flags & FLOWTAB_FLAG_PROVISIONAL))
			revalidate(c, st, &meta[i], vip[i], e, now_ms, o, i);
		else
			miss[n_miss++] = i;     /* provisional: with the misses */
	}
	on_misses(c, st, meta, vip, entries, hint, miss, n_miss, now_ms, o);
}
