/* SPDX-License-Identifier: BSD-3-Clause */
/* The dataplane's answers to syncd and maglbctl, on the control thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <qb/qblog.h>
#include <rte_ethdev.h>

#include "config/config.h"
#include "dataplane/control_private.h"
#include "dataplane/core/maglev.h"
#include "dataplane/core/neigh.h"
#include "dataplane/core/packet.h"
#include "dataplane/core/viptab.h"
#include "lib/ipc_server.h"
#include "dataplane/synced.h"
#include "dataplane/worker.h"

static uint8_t
family_of_af(uint8_t af)
{
	return af == AF_INET ? FLOW_FAMILY_IPV4 : FLOW_FAMILY_IPV6;
}

static uint8_t
af_of_family(uint8_t family)
{
	return family == FLOW_FAMILY_IPV4 ? AF_INET : AF_INET6;
}

static int
status(struct control *c, struct wire_ctl_msg *resp)
{
	const struct dp_state *s = control_state(c);
	struct wire_ctl_status *st = &resp->status;

	resp->kind = WIRE_CTL_STATUS_RESPONSE;
	st->node_id = c->cfg->node_id;
	st->workers = c->p.n_workers;
	st->ports = 1;
	st->vips = s->n_vips;
	for (uint32_t i = 0; i < s->n_vips; i++)
		st->vips_owned += s->vips[i].owned;
	st->uptime_ms = control_now_ms(c) - c->start_ms;
	for (unsigned i = 0; i < c->p.n_workers; i++)
		st->flows_local += flowtab_count(c->p.workers[i].flows);
	st->flows_synced = synced_count(c->sh->synced);
	st->maglev_digest = s->maglev_digest;
	st->serving = control_serving(c);
	if (st->serving && c->serving_end_ms != 0 && c->serving_end_ms > control_clock_ms(c))
		st->serving_lease_remaining_ms = (uint32_t)(c->serving_end_ms - control_clock_ms(c));
	return 0;
}

/* ------------------------------------------------------------ counters */

/* Per worker and summed: events, drops (non-zero drops only per worker). */
static void
counters_workers(struct control *c, struct ipc_counter_list *l)
{
	struct dp_counters total = { 0 };
	char scope[WIRE_NAME_MAX];

	for (unsigned i = 0; i < c->p.n_workers; i++) {
		const struct dp_counters *wc = &c->p.workers[i].counters;
		const uint64_t *fs = flowtab_stats(c->p.workers[i].flows);

		snprintf(scope, sizeof(scope), "worker%u", i);
		for (int e = 0; e < DP_EVENT_MAX; e++) {
			ipc_counter_add(l, scope, dp_event_names[e], wc->event[e]);
			total.event[e] += wc->event[e];
		}
		for (int d = 0; d < DP_DROP_MAX; d++) {
			if (wc->drop[d] != 0)
				ipc_counter_add(l, scope, dp_drop_names[d], wc->drop[d]);
			total.drop[d] += wc->drop[d];
		}
		ipc_counter_add(l, scope, "FLOWS", flowtab_count(c->p.workers[i].flows));
		for (int f = 0; f < FLOWTAB_STAT_MAX; f++)
			ipc_counter_add(l, scope, flowtab_stat_names[f], fs[f]);
	}
	for (int e = 0; e < DP_EVENT_MAX; e++)
		ipc_counter_add(l, "total", dp_event_names[e], total.event[e]);
	for (int d = 0; d < DP_DROP_MAX; d++)
		ipc_counter_add(l, "total", dp_drop_names[d], total.drop[d]);
}

/* Destination id's per-worker counter k, summed over the workers. */
static uint64_t
dest_sum(const struct control *c, uint32_t id, int k)
{
	uint64_t sum = 0;

	for (unsigned w = 0; w < c->p.n_workers; w++)
		sum += c->p.workers[w].dest_counters[id][k];
	return sum;
}

static void
counters_dests(struct control *c, struct ipc_counter_list *l)
{
	static const char *const names[FWD_DEST_MAX] = {
		[FWD_DEST_PACKETS] = "PACKETS",
		[FWD_DEST_BYTES] = "BYTES",
		[FWD_DEST_NEW] = "NEW_FLOWS",
		[FWD_DEST_FLOWS] = "FLOWS",
		[FWD_DEST_UNTRACKED] = "UNTRACKED",
		[FWD_DEST_SYNCED_HITS] = "SYNCED_HITS",
		[FWD_DEST_MAGLEV_PICKS] = "MAGLEV_PICKS",
	};
	const struct dp_state *s = control_state(c);
	char scope[WIRE_NAME_MAX], addr[INET6_ADDRSTRLEN];

	for (uint32_t v = 0; v < s->n_vips; v++) {
		uint64_t vip_sum[FWD_DEST_MAX] = { 0 };

		for (uint32_t b = 0; b < s->vips[v].n_dests; b++) {
			uint32_t id = s->vips[v].dests[b];
			uint64_t sum[FWD_DEST_MAX];

			for (int k = 0; k < FWD_DEST_MAX; k++)
				sum[k] = dest_sum(c, id, k);
			inet_ntop(af_of_family(s->dests[id].family), s->dests[id].addr,
				  addr, sizeof(addr));
			snprintf(scope, sizeof(scope), "backend:%s", s->vips[v].name);
			for (int k = 0; k < FWD_DEST_MAX; k++) {
				char name[WIRE_NAME_MAX];

				snprintf(name, sizeof(name), "%s %s", addr, names[k]);
				ipc_counter_add(l, scope, name, sum[k]);
				vip_sum[k] += sum[k];
			}
		}
		snprintf(scope, sizeof(scope), "vip:%s", s->vips[v].name);
		for (int k = 0; k < FWD_DEST_MAX; k++)
			ipc_counter_add(l, scope, names[k], vip_sum[k]);
	}
}

static void
counters_port(struct control *c, struct ipc_counter_list *l)
{
	struct rte_eth_stats st;
	char scope[WIRE_NAME_MAX];

	if (rte_eth_stats_get(c->sh->port.id, &st) != 0)
		return;
	snprintf(scope, sizeof(scope), "port:%s", c->sh->port.name);
	ipc_counter_add(l, scope, "IPACKETS", st.ipackets);
	ipc_counter_add(l, scope, "OPACKETS", st.opackets);
	ipc_counter_add(l, scope, "IBYTES", st.ibytes);
	ipc_counter_add(l, scope, "OBYTES", st.obytes);
	ipc_counter_add(l, scope, "IMISSED", st.imissed);
	ipc_counter_add(l, scope, "IERRORS", st.ierrors);
	ipc_counter_add(l, scope, "OERRORS", st.oerrors);
	ipc_counter_add(l, scope, "RX_NOMBUF", st.rx_nombuf);
}

static int
counters(struct control *c, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	struct ipc_counter_list l = { .prefix = req->counters_request.scope };
	const struct ipc_server_counters *ic = ipc_server_counters(c->ipc);
	uint64_t bfd_dropped[BFD_DROP_MAX];

	/* The per-backend counters cost most: only when asked for. */
	if (ipc_counter_scope_wanted(&l, "port:"))
		counters_port(c, &l);
	if (ipc_counter_scope_wanted(&l, "worker") || ipc_counter_scope_wanted(&l, "total"))
		counters_workers(c, &l);
	if (ipc_counter_scope_wanted(&l, "backend:") || ipc_counter_scope_wanted(&l, "vip:"))
		counters_dests(c, &l);
	ipc_counter_add_array(&l, "control", control_counter_names, c->counters,
			      CONTROL_COUNTER_MAX);
	ipc_counter_add_array(&l, "control", ndisc_refusal_names, c->refused, NDISC_REFUSAL_MAX);
	ipc_counter_add_array(&l, "ipc", ipc_counter_names, ic->counts, IPC_COUNTER_MAX);
	ipc_counter_add_array(&l, "ipc", wire_drop_names, ic->wire.drops, WIRE_DROP_MAX);
	ipc_counter_add(&l, "control", "NEIGHBOURS", neigh_count(c->neigh));
	control_bfd_drops(c, bfd_dropped);
	ipc_counter_add_array(&l, "bfd", bfd_drop_names, bfd_dropped, BFD_DROP_MAX);
	ipc_counter_add(&l, "synced", "ENTRIES", synced_count(c->sh->synced));
	resp->kind = WIRE_CTL_COUNTERS_RESPONSE;
	resp->counters.counters = l.v;
	resp->counters.count = l.n;
	return 0;
}

/* ---------------------------------------------------------- VIPs, backends */

/* Destination id's traffic, summed over the workers. */
static void
dest_traffic(const struct control *c, uint32_t id, struct wire_ctl_traffic *t)
{
	*t = (struct wire_ctl_traffic){
		.packets = dest_sum(c, id, FWD_DEST_PACKETS),
		.bytes = dest_sum(c, id, FWD_DEST_BYTES),
		.new_flows = dest_sum(c, id, FWD_DEST_NEW),
		.untracked = dest_sum(c, id, FWD_DEST_UNTRACKED),
		.synced_hits = dest_sum(c, id, FWD_DEST_SYNCED_HITS),
		.maglev_picks = dest_sum(c, id, FWD_DEST_MAGLEV_PICKS),
	};
}

static void
traffic_add(struct wire_ctl_traffic *sum, const struct wire_ctl_traffic *t)
{
	sum->packets += t->packets;
	sum->bytes += t->bytes;
	sum->new_flows += t->new_flows;
	sum->untracked += t->untracked;
	sum->synced_hits += t->synced_hits;
	sum->maglev_picks += t->maglev_picks;
}

/*
 * The end of the page from first: whole VIPs while their backends stay
 * within VIP_LIST_PAGE_BACKENDS, and always the first.
 */
static uint32_t
vip_list_page_end(const struct dp_state *s, uint32_t first, size_t *n_backends)
{
	uint32_t v = first;

	*n_backends = 0;
	while (v < s->n_vips && (v == first || *n_backends + s->vips[v].n_dests <=
				 VIP_LIST_PAGE_BACKENDS))
		*n_backends += s->vips[v++].n_dests;
	return v;
}

/* The b-th backend of dv, with its flows and traffic t (zero if not asked). */
static void
vip_list_backend(const struct control *c, const struct dp_vip *dv, uint32_t b,
		 uint64_t flows, const struct wire_ctl_traffic *t,
		 struct wire_ctl_backend *wb)
{
	const struct dp_state *s = control_state(c);
	const struct dp_dest *d = &s->dests[dv->dests[b]];

	snprintf(wb->vip, sizeof(wb->vip), "%s", dv->name);
	wb->family = af_of_family(d->family);
	memcpy(wb->address, d->addr, sizeof(wb->address));
	wb->weight = d->weight;
	wb->config_weight = d->config_weight;
	wb->state = d->status == DEST_DOWN ? WIRE_BACKEND_DOWN :
		    d->status == DEST_DRAINING ? WIRE_BACKEND_DRAINING :
		    WIRE_BACKEND_UP;
	wb->next_hop_resolved = d->resolved;
	if (d->resolved)
		memcpy(wb->next_hop_mac, d->tunnel.eth_dst, sizeof(wb->next_hop_mac));
	wb->maglev_slots = dv->maglev->dest_slots[b];
	wb->flows = flows;
	wb->traffic = *t;
}

static int
vip_list(struct control *c, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	const struct dp_state *s = control_state(c);
	const struct wire_ctl_vip_list_request *q = &req->vip_list_request;
	struct wire_ctl_vip_list *out = &resp->vip_list;
	uint32_t first = q->cursor, end;
	size_t nb;

	if (q->name[0] != '\0') {
		int only = state_vip_find(s, q->name);

		if (only < 0)
			return -ENOENT;
		first = (uint32_t)only;
		end = first + 1;
		nb = s->vips[first].n_dests;
	} else {
		if (first > s->n_vips)
			return -EINVAL;     /* a cursor past a reload's shrink */
		end = vip_list_page_end(s, first, &nb);
	}
	out->vips = calloc(end > first ? end - first : 1, sizeof(*out->vips));
	out->backends = calloc(q->backends && nb ? nb : 1, sizeof(*out->backends));
	resp->kind = WIRE_CTL_VIP_LIST_RESPONSE;
	if (out->vips == NULL || out->backends == NULL)
		return -ENOMEM;
	for (uint32_t v = first; v < end; v++) {
		const struct dp_vip *dv = &s->vips[v];
		struct wire_ctl_vip *w = &out->vips[out->n_vips++];

		snprintf(w->name, sizeof(w->name), "%s", dv->name);
		w->family = af_of_family(dv->family);
		w->proto = dv->proto;
		w->port = dv->port;
		memcpy(w->address, dv->addr, sizeof(w->address));
		w->owned = dv->owned;
		w->maglev_digest = dv->maglev->digest;
		w->table_size = dv->maglev->size;
		w->backends = dv->n_dests;
		for (uint32_t b = 0; b < dv->n_dests; b++) {
			const struct dp_dest *d = &s->dests[dv->dests[b]];
			uint64_t flows = dest_sum(c, dv->dests[b], FWD_DEST_FLOWS);
			struct wire_ctl_traffic t = { 0 };

			w->backends_up += d->status != DEST_DOWN && d->resolved;
			w->flows += flows;
			if (q->stats) {
				dest_traffic(c, dv->dests[b], &t);
				traffic_add(&w->traffic, &t);
			}
			if (q->backends)
				vip_list_backend(c, dv, b, q->stats ? flows : 0, &t,
						 &out->backends[out->n_backends++]);
		}
	}
	if (q->name[0] == '\0' && end < s->n_vips)
		out->next_cursor = end;
	return 0;
}

static int
backend_set(struct control *c, const struct wire_ctl_msg *req, char *errmsg, size_t errlen)
{
	const struct wire_ctl_backend_set *b = &req->backend_set;
	const struct dp_state *s = control_state(c);
	int vip = state_vip_find(s, b->vip);
	int64_t dest;
	uint8_t status;
	uint32_t weight;
	struct dp_state *n;
	int rc;

	if (vip < 0) {
		snprintf(errmsg, errlen, "no vip '%s'", b->vip);
		return -ENOENT;
	}
	dest = state_dest_find(s, (uint32_t)vip, family_of_af(b->family), b->backend);
	if (dest < 0) {
		snprintf(errmsg, errlen, "vip '%s' has no such backend", b->vip);
		return -ENOENT;
	}
	status = s->dests[dest].status;
	weight = s->dests[dest].weight;
	switch (b->action) {
	case WIRE_BACKEND_SET_WEIGHT:
		if (b->weight > MAGLEV_WEIGHT_MAX) {
			snprintf(errmsg, errlen, "weight %u out of range 0..%u", b->weight,
				 MAGLEV_WEIGHT_MAX);
			return -ERANGE;
		}
		weight = b->weight;
		if (status != DEST_DOWN)
			status = weight > 0 ? DEST_UP : DEST_DRAINING;
		break;
	case WIRE_BACKEND_DRAIN:
		weight = 0;
		if (status != DEST_DOWN)
			status = DEST_DRAINING;
		break;
	case WIRE_BACKEND_MARK_DOWN:
		status = DEST_DOWN;
		break;
	default:
		status = weight > 0 ? DEST_UP : DEST_DRAINING;
		break;
	}
	n = state_with_backend(c->sctx, s, (uint32_t)vip, (uint32_t)dest, status, weight, &rc);
	if (n == NULL)
		return rc;
	control_publish(c, n);
	return 0;
}

static int
reload(struct control *c, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	struct wire_ctl_reload_result *r = &resp->reload_result;

	resp->kind = WIRE_CTL_RELOAD_RESULT;
	r->ok = control_reload(c, req->reload_request.check_only, r->error,
			       sizeof(r->error)) == 0;
	if (r->ok)
		r->error[0] = '\0';
	return 0;
}

/* ---------------------------------------------------------- flow tables */

static void
entry_to_wire(const struct dp_state *s, const struct flowtab_entry *e, uint32_t now_ms,
	      uint32_t timeout_ms, struct wire_flow *f)
{
	uint32_t idle = now_ms - e->last_ms;

	control_wire_flow(s, &e->key, e->backend, idle < timeout_ms ? timeout_ms - idle : 0,
			  e->state, f);
	if (e->flags & FLOWTAB_FLAG_SYNCED)
		f->flags |= WIRE_FLOW_FROM_PEER;
	if (e->flags & FLOWTAB_FLAG_PROVISIONAL)
		f->flags |= WIRE_FLOW_PROVISIONAL;
}

static int
lookup(struct control *c, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	const struct dp_state *s = control_state(c);
	struct wire_ctl_lookup *out = &resp->lookup;
	struct flow_key k;
	struct flowtab_entry e;
	struct worker_req wr = { .kind = WORKER_REQ_LOOKUP, .out = &e };
	const struct flow_key *keys[1] = { &k };
	struct synced_value sv;
	enum dp_drop why;
	int64_t vip, pick;
	uint32_t now = control_now_ms(c);

	control_key_from_wire(&req->lookup_key, &k);
	resp->kind = WIRE_CTL_FLOW_LOOKUP_RESPONSE;
	out->flow = req->lookup_key;
	vip = viptab_lookup(s->viptab, &k, &why);
	if (vip < 0) {
		out->table = WIRE_FLOW_TABLE_NONE;
		return 0;
	}
	wr.key = k;
	for (unsigned w = 0; w < c->p.n_workers; w++) {
		worker_request(&c->p.workers[w], &wr);
		if (wr.count == 1) {
			out->table = WIRE_FLOW_TABLE_WORKER;
			out->worker = w;
			entry_to_wire(s, &e, now, flowtab_timeout(c->p.workers[w].flows,
								  (enum flowtab_state)e.state),
				      &out->flow);
			return 0;
		}
	}
	if (synced_lookup_burst(c->sh->synced, keys, 1, now, &sv) & 1) {
		out->table = WIRE_FLOW_TABLE_SYNCED;
		e = (struct flowtab_entry){ .key = k, .backend = sv.dest, .last_ms = now };
		entry_to_wire(s, &e, now, sv.expires_ms - now, &out->flow);
		out->flow.flags |= WIRE_FLOW_FROM_PEER;
		return 0;
	}
	out->table = WIRE_FLOW_TABLE_MAGLEV;
	pick = state_maglev_pick(s, (uint32_t)vip, &k);
	if (pick >= 0) {
		e = (struct flowtab_entry){ .key = k, .backend = (uint32_t)pick, .last_ms = now };
		entry_to_wire(s, &e, now, 0, &out->flow);
	}
	return 0;
}

/* A dump page of the synced table (after the workers' tables) from pos. */
static int
dump_synced(struct control *c, const struct dp_state *s, int vip, uint32_t limit,
	    uint64_t pos, struct wire_ctl_msg *resp)
{
	uint32_t cursor = (uint32_t)pos, now = control_now_ms(c);
	struct flowtab_entry e = { .last_ms = now };
	struct synced_value v;
	bool more = true;

	while (resp->dump.count < limit &&
	       (more = synced_next(c->sh->synced, &cursor, &e.key, &v))) {
		struct wire_flow *f = &c->flows[resp->dump.count];

		if ((int32_t)(v.expires_ms - now) <= 0 ||
		    (vip >= 0 && (v.dest >= s->n_dests || s->dests[v.dest].vip != vip)))
			continue;
		e.backend = v.dest;
		entry_to_wire(s, &e, now, v.expires_ms - now, f);
		f->flags |= WIRE_FLOW_FROM_PEER;
		resp->dump.count++;
	}
	resp->dump.entries = c->flows;
	if (more)
		resp->dump.next_cursor = 1 + ((uint64_t)c->p.n_workers << 48 | cursor);
	return 0;
}

/*
 * Dump cursors: 0 starts; otherwise 1 + (worker << 48 | the worker's flowtab
 * cursor), the flowtab cursor below 2^48 (it counts slots); worker n_workers
 * is the synced table (its rte_hash_iterate position).
 */
static int
dump(struct control *c, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	const struct dp_state *s = control_state(c);
	const struct wire_ctl_dump_request *q = &req->dump_request;
	uint32_t limit = q->limit == 0 || q->limit > IPC_FLOWS_PER_MSG_MAX ?
			 IPC_FLOWS_PER_MSG_MAX : q->limit;
	int vip = q->vip[0] != '\0' ? state_vip_find(s, q->vip) : -1;
	uint64_t cur = q->cursor == 0 ? 0 : q->cursor - 1;
	unsigned w = (unsigned)(cur >> 48);
	struct worker_req wr = { .kind = WORKER_REQ_DUMP, .max = limit,
				 .cursor = cur & ((1ull << 48) - 1) };
	uint32_t now = control_now_ms(c);
	struct flowtab_entry *ents;

	resp->kind = WIRE_CTL_DUMP_RESPONSE;
	if (q->vip[0] != '\0' && vip < 0)
		return -ENOENT;
	if (w == c->p.n_workers)
		return dump_synced(c, s, vip, limit, wr.cursor, resp);
	if (w > c->p.n_workers)
		return -EINVAL;
	ents = wr.out = calloc(limit, sizeof(*ents));
	if (ents == NULL)
		return -ENOMEM;
	worker_request(&c->p.workers[w], &wr);
	for (uint32_t i = 0; i < wr.count; i++) {
		const struct flowtab_entry *e = &ents[i];

		if (vip >= 0 && (e->backend >= s->n_dests || s->dests[e->backend].vip != vip))
			continue;
		entry_to_wire(s, e, now, flowtab_timeout(c->p.workers[w].flows,
							 (enum flowtab_state)e->state),
			      &c->flows[resp->dump.count++]);
	}
	free(ents);
	resp->dump.entries = c->flows;
	if (wr.cursor != FLOWTAB_WALK_END)
		resp->dump.next_cursor = 1 + ((uint64_t)w << 48 | wr.cursor);
	else if (w + 1 < c->p.n_workers || synced_count(c->sh->synced) > 0)
		resp->dump.next_cursor = 1 + ((uint64_t)(w + 1) << 48);
	return 0;
}

/* The longest idle timeout of this node's config, ms: what an imported
 * entry may live at most (the lifetime is the sender's word; a wrapped or
 * hostile value must not pin an entry, nor wrap its expiry). */
static uint32_t
import_lifetime_max(const struct config *cfg)
{
	const struct flowtab_params p = worker_flow_params(&cfg->flows);   /* in ms */
	uint32_t m = p.tcp_syn_ms;

	m = RTE_MAX(m, p.tcp_established_ms);
	m = RTE_MAX(m, p.tcp_closing_ms);
	return RTE_MAX(m, p.udp_ms);
}

/* A peer's entries this node refused mean the nodes' configs differ, or
 * the synced table is full: say so in the log, at most once per
 * CONTROL_IMPORT_WARN_MS (the counters have every one). */
static void
import_warn(struct control *c, uint32_t peer, uint32_t rejected, uint32_t full, uint32_t now)
{
	char from[32] = "";

	if ((rejected == 0 && full == 0) ||
	    (c->import_warned && (int32_t)(now - c->import_warn_ms) < CONTROL_IMPORT_WARN_MS))
		return;
	c->import_warned = true;
	c->import_warn_ms = now;
	if (peer != 0)
		snprintf(from, sizeof(from), " from node %u", peer);
	if (rejected > 0)
		qb_log(LOG_WARNING, "import%s: %u entries name a VIP or backend not configured "
		       "here (do the nodes' configs differ?); counted in IMPORT_REJECTED",
		       from, rejected);
	if (full > 0)
		qb_log(LOG_WARNING, "import%s: %u entries found the synced table full "
		       "(flows.shared_capacity %u); counted in IMPORT_FULL", from, full,
		       c->cfg->flows.shared_capacity);
}

/* One entry from syncd, its key k: only for VIPs and backends configured
 * here. 0 applied, -EINVAL rejected, -ENOSPC the synced table full. */
static int
import_one(struct control *c, const struct dp_state *s, enum wire_flow_event event,
	   const struct wire_flow *f, const struct flow_key *k, uint32_t now,
	   uint32_t life_max)
{
	enum dp_drop why;
	int64_t vip, dest;

	if (event == WIRE_FLOW_EVENT_CLOSE) {
		/* the flow ended at the peer, whatever backend it names (one
		 * this node no longer has, say) */
		synced_remove(c->sh->synced, k);
		return 0;
	}
	vip = pkt_source_martian(k->family, k->client) ? -1 : viptab_lookup(s->viptab, k, &why);
	dest = vip < 0 ? -1 : state_dest_find(s, (uint32_t)vip, family_of_af(f->backend_family),
					      f->backend);
	if (dest < 0)
		return -EINVAL;
	return synced_upsert(c->sh->synced, k, (uint32_t)dest,
			     now + (f->lifetime_ms < life_max ? f->lifetime_ms : life_max));
}

/*
 * Entries from syncd, SYNCED_BURST_MAX at a time. The synced table is far
 * larger than the caches, and an upsert alone waits for its key's two
 * bucket reads (a new key is looked for in both buckets) one after the
 * other: two thirds of the import's time in a profile. rte_hash has no
 * prefetch of its own, so a burst lookup of the group's keys, whose answer
 * is not needed, fetches their buckets side by side first, and the upserts
 * find them in the cache (tests/bench/README.md, "dataplane-import").
 */
static int
import(struct control *c, const struct wire_ctl_msg *req)
{
	const struct dp_state *s = control_state(c);
	const struct wire_ctl_flows *fl = &req->flows;
	uint32_t now = control_now_ms(c), life_max = import_lifetime_max(c->cfg);
	uint32_t rejected = 0, full = 0;

	for (size_t base = 0; base < fl->count; base += SYNCED_BURST_MAX) {
		uint32_t n = (uint32_t)RTE_MIN((size_t)SYNCED_BURST_MAX, fl->count - base);
		struct flow_key keys[SYNCED_BURST_MAX];
		const struct flow_key *kp[SYNCED_BURST_MAX];
		struct synced_value unused[SYNCED_BURST_MAX];

		for (uint32_t j = 0; j < n; j++) {
			control_key_from_wire(&fl->entries[base + j], &keys[j]);
			kp[j] = &keys[j];
		}
		(void)synced_lookup_burst(c->sh->synced, kp, n, now, unused);
		for (uint32_t j = 0; j < n; j++) {
			int rc = import_one(c, s, fl->event, &fl->entries[base + j], &keys[j], now,
					    life_max);

			if (rc == -EINVAL)
				rejected++;
			else if (rc < 0)
				full++;
			else
				c->counters[CONTROL_IMPORTED]++;
		}
	}
	c->counters[CONTROL_IMPORT_REJECTED] += rejected;
	c->counters[CONTROL_IMPORT_FULL] += full;
	import_warn(c, fl->peer, rejected, full, now);
	return 0;
}

/*
 * The export stream has one owner, the connection that subscribed (syncd):
 * another one asking for it gets EBUSY, and so does one that asks to end a
 * subscription it does not own; the owner ends it, or its disconnect does.
 */
static int
export_subscribe(struct control *c, uint64_t conn_id, bool enable, char *errmsg,
		 size_t errlen)
{
	if (c->export_conn != 0 && c->export_conn != conn_id) {
		snprintf(errmsg, errlen, "another client (IPC connection %llu) owns the "
			 "export stream%s", (unsigned long long)c->export_conn,
			 enable ? "" : "; only it can unsubscribe");
		return -EBUSY;
	}
	if (c->export_conn != (enable ? conn_id : 0))
		qb_log(LOG_INFO, "export stream: IPC connection %llu %s",
		       (unsigned long long)conn_id, enable ? "subscribed" : "unsubscribed");
	c->export_conn = enable ? conn_id : 0;
	return 0;
}

int
control_ipc_request(void *ctx, uint64_t conn_id, const struct wire_ctl_msg *req,
		    struct wire_ctl_msg *resp, char *errmsg, size_t errlen)
{
	struct control *c = ctx;

	switch (req->kind) {
	case WIRE_CTL_STATUS_REQUEST:
		return status(c, resp);
	case WIRE_CTL_BFD_STATUS_REQUEST:
		return control_bfd_status(c, resp);
	case WIRE_CTL_COUNTERS_REQUEST:
		return counters(c, req, resp);
	case WIRE_CTL_VIP_LIST_REQUEST:
		return vip_list(c, req, resp);
	case WIRE_CTL_BACKEND_SET:
		return backend_set(c, req, errmsg, errlen);
	case WIRE_CTL_RELOAD_REQUEST:
		return reload(c, req, resp);
	case WIRE_CTL_OWNERSHIP_SET:
		return control_ownership_set(c, &req->ownership, control_clock_ms(c), errmsg,
					     errlen);
	case WIRE_CTL_FLOW_LOOKUP_REQUEST:
		return lookup(c, req, resp);
	case WIRE_CTL_DUMP_REQUEST:
		return dump(c, req, resp);
	case WIRE_CTL_EXPORT_SUBSCRIBE:
		return export_subscribe(c, conn_id, req->export_subscribe.enable, errmsg,
					errlen);
	case WIRE_CTL_IMPORT_BATCH:
		return import(c, req);
	default:
		return -EOPNOTSUPP;
	}
}

void
control_ipc_release(void *ctx, struct wire_ctl_msg *resp)
{
	(void)ctx;
	if (resp->kind == WIRE_CTL_COUNTERS_RESPONSE)
		free(resp->counters.counters);
	else if (resp->kind == WIRE_CTL_VIP_LIST_RESPONSE) {
		free(resp->vip_list.vips);
		free(resp->vip_list.backends);
	} else if (resp->kind == WIRE_CTL_BFD_STATUS) {
		free(resp->bfd_status.sessions);
		free(resp->bfd_status.drops);
	}
}

void
control_ipc_disconnected(void *ctx, uint64_t conn_id)
{
	struct control *c = ctx;

	if (c->export_conn == conn_id) {
		c->export_conn = 0;     /* the owner went away: the stream is free */
		qb_log(LOG_INFO, "export stream: IPC connection %llu closed, unsubscribed",
		       (unsigned long long)conn_id);
	}
}
