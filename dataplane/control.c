/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/control.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <qb/qblog.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include "config/config.h"
#include "dataplane/control_private.h"
#include "dataplane/core/encap.h"
#include "dataplane/core/ndisc.h"
#include "dataplane/core/neigh.h"
#include "dataplane/core/packet.h"
#include "dataplane/core/reply.h"
#include "dataplane/core/viptab.h"
#include "lib/daemon.h"
#include "lib/ipc_server.h"
#include "dataplane/synced.h"
#include "dataplane/worker.h"

const char *const control_counter_names[CONTROL_COUNTER_MAX] = {
#define CONTROL_COUNTER_NAME(name, desc) [CONTROL_##name] = #name,
	CONTROL_COUNTERS(CONTROL_COUNTER_NAME)
#undef CONTROL_COUNTER_NAME
};

enum {
	TICK_MS = 1,                    /* daemon_timer_create(): no busy loop */
	SLOW_BURST = 64,
	SOLICIT_MAX = 64,
	SYNCED_EXPIRE_BUDGET = 1024,
	NEIGH_CAPACITY = 4096,
};

uint64_t
control_clock_ms(const struct control *c)
{
	return rte_rdtsc() / c->sh->tsc_per_ms;
}

uint32_t
control_now_ms(const struct control *c)
{
	return (uint32_t)control_clock_ms(c);
}

void
control_key_from_wire(const struct wire_flow *f, struct flow_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = f->family == AF_INET ? FLOW_FAMILY_IPV4 : FLOW_FAMILY_IPV6;
	memcpy(k->vip, f->vip, sizeof(k->vip));
	memcpy(k->client, f->client, sizeof(k->client));
	k->vip_port = f->vip_port;
	k->client_port = f->client_port;
	k->proto = f->proto;
}

void
control_wire_flow(const struct dp_state *s, const struct flow_key *k, uint32_t dest,
		  uint32_t lifetime_ms, uint8_t state, struct wire_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->family = k->family == FLOW_FAMILY_IPV4 ? AF_INET : AF_INET6;
	memcpy(f->vip, k->vip, sizeof(f->vip));
	memcpy(f->client, k->client, sizeof(f->client));
	f->vip_port = k->vip_port;
	f->client_port = k->client_port;
	f->proto = k->proto;
	if (dest < s->n_dests) {
		f->backend_family = s->dests[dest].family == FLOW_FAMILY_IPV4 ? AF_INET : AF_INET6;
		memcpy(f->backend, s->dests[dest].addr, sizeof(f->backend));
	}
	f->lifetime_ms = lifetime_ms;
	f->flags = state == FLOWTAB_ESTABLISHED ? WIRE_FLOW_ESTABLISHED :
		   state == FLOWTAB_CLOSING ? WIRE_FLOW_CLOSING : 0;
}

/* ------------------------------------------------------------ states */

static void
retire_ready(struct control *c, bool wait)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < c->n_retired; i++) {
		if (rte_rcu_qsbr_check(c->sh->rcu, c->retired[i].token, wait) == 1)
			state_free(c->retired[i].state);
		else
			c->retired[kept++] = c->retired[i];
	}
	c->n_retired = kept;
}

void
control_publish(struct control *c, struct dp_state *s)
{
	struct dp_state *old = c->sh->state;

	__atomic_store_n(&c->sh->state, s, __ATOMIC_RELEASE);
	c->counters[CONTROL_STATES]++;
	if (old == NULL)
		return;
	if (c->n_retired == CONTROL_RETIRED_MAX)
		retire_ready(c, true);
	c->retired[c->n_retired].state = old;
	c->retired[c->n_retired].token = rte_rcu_qsbr_start(c->sh->rcu);
	c->n_retired++;
}

/* The address whose MAC destination dest needs resolved (16 bytes, an IPv4
 * one zero-padded), or NULL: L2 backends and static gateway MACs need none. */
static const uint8_t *
dest_hop(const struct state_port *sp, const struct dp_dest *dest)
{
	if (dest->status == DEST_GONE || dest->tunnel.kind == ENCAP_L2)
		return NULL;
	return state_next_hop_addr(sp, dest->family, dest->addr);
}

/* Want every next hop of the state's tunnels resolved. */
static void
want_neighbours(struct control *c, const struct dp_state *s)
{
	uint64_t now = control_now_ms(c);
	const struct state_port *sp = state_ctx_port(c->sctx);

	for (uint32_t d = 0; d < s->n_dests; d++) {
		const uint8_t *hop = dest_hop(sp, &s->dests[d]);

		if (hop != NULL)
			neigh_want(c->neigh, s->dests[d].family, hop, now);
	}
}

/* A reload: the next hops the old state (old_sp its port) resolved and the
 * new one does not are forgotten, so that a removed backend is not probed
 * for ever. */
static void
forget_neighbours(struct control *c, const struct state_port *old_sp,
		  const struct dp_state *old, const struct dp_state *s)
{
	const struct state_port *sp = state_ctx_port(c->sctx);

	for (uint32_t d = 0; d < old->n_dests; d++) {
		const uint8_t *hop = dest_hop(old_sp, &old->dests[d]);
		bool kept = false;

		for (uint32_t e = 0; hop != NULL && e < s->n_dests && !kept; e++) {
			const uint8_t *h = dest_hop(sp, &s->dests[e]);

			kept = h != NULL && s->dests[e].family == old->dests[d].family &&
			       memcmp(h, hop, 16) == 0;
		}
		if (hop != NULL && !kept)
			neigh_forget(c->neigh, old->dests[d].family, hop);
	}
}

/* What tunnels need from the config's port: MTU, gateways, static MACs. */
static void
port_facts(struct state_port *sp, const struct config *cfg, const uint8_t mac[6])
{
	const struct config_port *port = &cfg->ports[0];

	memcpy(sp->mac, mac, sizeof(sp->mac));
	sp->mtu = port->mtu;
	sp->has_gateway[0] = port->has_gateway4;
	sp->has_gateway[1] = port->has_gateway6;
	memset(sp->gateway, 0, sizeof(sp->gateway));
	memcpy(sp->gateway[0], &port->gateway4.v4, 4);
	memcpy(sp->gateway[1], &port->gateway6.v6, 16);
	sp->has_gateway_mac[0] = port->has_gateway4_mac;
	sp->has_gateway_mac[1] = port->has_gateway6_mac;
	memcpy(sp->gateway_mac[0], port->gateway4_mac, 6);
	memcpy(sp->gateway_mac[1], port->gateway6_mac, 6);
}

/* What a running dataplane cannot change (its port, its tables' sizes):
 * each change is logged and waits for a restart. */
static void
warn_restart_keys(const struct config *old, const struct config *cfg)
{
	const char *keys[8];
	unsigned n = 0;

	if (old->flows.capacity != cfg->flows.capacity)
		keys[n++] = "flows.capacity";
	if (old->flows.shared_capacity != cfg->flows.shared_capacity)
		keys[n++] = "flows.shared_capacity";
	if (old->sync.queue_entries != cfg->sync.queue_entries)
		keys[n++] = "sync.queue_entries";
	if (old->n_ports != cfg->n_ports)
		keys[n++] = "ports";
	for (unsigned i = 0; i < old->n_ports && i < cfg->n_ports; i++) {
		const struct config_port *a = &old->ports[i], *b = &cfg->ports[i];

		if (strcmp(a->name, b->name) != 0 || strcmp(a->device, b->device) != 0 ||
		    a->mtu != b->mtu || a->mbufs != b->mbufs || a->vlan != b->vlan) {
			keys[n++] = "ports (name, device, mtu, mbufs or vlan)";
			break;
		}
	}
	for (unsigned i = 0; i < n; i++)
		qb_log(LOG_WARNING, "reload: %s changed: the running value stays until a restart",
		       keys[i]);
}

/* The workers' tables take the new timeouts, refresh interval and insert
 * rate, as ipvsadm --set does. */
static void
tune_workers(struct control *c, const struct config *cfg)
{
	struct worker_req wr = { .kind = WORKER_REQ_TUNE,
				 .params = worker_flow_params(&cfg->flows) };

	for (unsigned i = 0; i < c->p.n_workers; i++) {
		worker_request(&c->p.workers[i], &wr);
		if (wr.rc != 0)         /* the config parser bounds every value */
			qb_log(LOG_ERR, "reload: worker %u refused the flow timeouts (%d)", i,
			       wr.rc);
	}
}

int
control_reload(struct control *c, bool check_only, char *err, size_t errlen)
{
	struct config *cfg = config_load(c->p.config_path, err, errlen);
	struct state_port old = *state_ctx_port(c->sctx), sp = old;
	struct dp_state *s;

	if (cfg == NULL)
		goto fail;
	if (check_only) {
		config_free(cfg);
		return 0;
	}
	/* A reload changes VIPs, backends, gateways, flow timeouts and the
	 * insert rate; ports and table sizes keep their start-up values until a
	 * restart. */
	port_facts(&sp, cfg, c->sh->port.mac);
	state_ctx_set_port(c->sctx, &sp);
	s = state_build(c->sctx, cfg, control_state(c), err, errlen);
	if (s != NULL && control_bfd_reload(c, cfg) < 0) {
		snprintf(err, errlen, "%s: out of memory for the BFD sessions",
			 c->p.config_path);
		state_free(s);
		s = NULL;
	}
	if (s == NULL) {
		state_ctx_set_port(c->sctx, &old);
		config_free(cfg);
		goto fail;
	}
	want_neighbours(c, s);
	forget_neighbours(c, &old, control_state(c), s);
	control_bfd_want_peers(c);      /* a peer may be a gateway just forgotten */
	control_publish(c, s);
	control_ownership_reloaded(c);
	tune_workers(c, cfg);
	warn_restart_keys(c->cfg, cfg);
	config_free(c->cfg);
	c->cfg = cfg;
	c->counters[CONTROL_RELOADS]++;
	qb_log(LOG_INFO, "reloaded %s: %u vip(s)", c->p.config_path, cfg->n_vips);
	return 0;
fail:
	c->counters[CONTROL_RELOAD_ERRORS]++;
	qb_log(LOG_ERR, "reload refused, running config kept: %s", err);
	return -EINVAL;
}

/* ------------------------------------------------------- sending frames */

void
control_send_frame(struct control *c, size_t (*fill)(uint8_t *out, size_t cap, void *arg),
		   void *arg, enum control_counter counter)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(c->p.pool);
	uint16_t vlan = c->sh->port.vlan;
	uint8_t *out;
	size_t len;

	if (m == NULL) {
		c->counters[CONTROL_SEND_FAILED]++;
		return;
	}
	/* Built ENCAP_VLAN_LEN bytes in, the room a tag takes. */
	out = rte_pktmbuf_mtod_offset(m, uint8_t *, ENCAP_VLAN_LEN);
	len = fill(out, rte_pktmbuf_tailroom(m) - ENCAP_VLAN_LEN, arg);
	if (len == 0) {
		rte_pktmbuf_free(m);
		c->counters[CONTROL_SEND_FAILED]++;
		return;
	}
	/* Whole before it is queued: the worker may send it at once. */
	m->data_len = (uint16_t)(len + ENCAP_VLAN_LEN);
	m->pkt_len = (uint32_t)(len + ENCAP_VLAN_LEN);
	if (vlan != 0 && be16_get(out + PKT_ETHER_TYPE) != PKT_ETHERTYPE_VLAN)
		encap_vlan_push(out, vlan);
	else
		rte_pktmbuf_adj(m, ENCAP_VLAN_LEN);
	if (rte_ring_sp_enqueue(c->p.workers[0].tx_ring, m) != 0) {
		rte_pktmbuf_free(m);
		c->counters[CONTROL_SEND_FAILED]++;
		return;
	}
	c->counters[counter]++;
}

struct frame_arg {
	struct control *c;
	const uint8_t *frame;
	uint32_t len;
	uint8_t family;
	const uint8_t *addr;
};

static size_t
fill_arp_reply(uint8_t *out, size_t cap, void *arg)
{
	struct frame_arg *a = arg;

	return reply_arp(out, cap, a->frame, a->len, a->c->sh->port.mac);
}

static size_t
fill_na(uint8_t *out, size_t cap, void *arg)
{
	struct frame_arg *a = arg;

	return reply_nd_na(out, cap, a->frame, a->len, a->c->sh->port.mac);
}

static size_t
fill_solicit(uint8_t *out, size_t cap, void *arg)
{
	struct frame_arg *a = arg;
	const struct dp_shared *sh = a->c->sh;

	if (a->family == FLOW_FAMILY_IPV4)
		return sh->node.has_addr[0] ?
		       reply_arp_request(out, cap, sh->port.mac, sh->node.addr[0], a->addr) : 0;
	return sh->node.has_addr[1] ?
	       reply_nd_ns(out, cap, sh->port.mac, sh->node.addr[1], a->addr) : 0;
}

static size_t
fill_announce(uint8_t *out, size_t cap, void *arg)
{
	struct frame_arg *a = arg;

	if (a->family == FLOW_FAMILY_IPV4)
		return reply_arp_gratuitous(out, cap, a->c->sh->port.mac, a->addr);
	return reply_nd_unsolicited_na(out, cap, a->c->sh->port.mac, a->addr);
}

void
control_announce(struct control *c, const struct dp_vip *v)
{
	struct frame_arg a = { c, NULL, 0, v->family, v->addr };

	control_send_frame(c, fill_announce, &a, CONTROL_ANNOUNCES);
}

/* --------------------------------------------------------- ARP and ND */

/* Whether this node answers for addr: its own address or an owned VIP. */
static bool
answers_for(const struct control *c, uint8_t family, const uint8_t *addr)
{
	const struct dp_state *s = control_state(c);
	int f = family == FLOW_FAMILY_IPV6;
	size_t len = f ? 16 : 4;

	if (c->sh->node.has_addr[f] && memcmp(c->sh->node.addr[f], addr, len) == 0)
		return true;
	for (uint32_t i = 0; i < s->n_vips; i++)
		if (s->vips[i].owned && s->vips[i].family == family &&
		    memcmp(s->vips[i].addr, addr, len) == 0)
			return true;
	return false;
}

static bool
learn(struct control *c, const struct ndisc_info *info)
{
	if (info->lladdr == NULL)
		return false;
	return neigh_update(c->neigh, info->family, info->addr, info->lladdr,
			    control_now_ms(c)) >= 0;
}

/*
 * One ARP or ND frame from a worker, counted once: refused by reason (not
 * believed: nothing learnt, nothing answered), answered, learnt (it
 * confirmed a wanted neighbour and asked nothing of this node), or ignored.
 */
static void
slow_path(struct control *c, struct rte_mbuf *mb)
{
	const uint8_t *frame = rte_pktmbuf_mtod(mb, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(mb);
	struct frame_arg a = { c, frame, len, 0, NULL };
	struct ndisc_info info;
	enum ndisc_refusal refusal;
	struct pkt_meta m;
	enum dp_drop why;
	bool learnt;

	if (!pkt_parse(frame, len, &m, &why)) {
		c->counters[CONTROL_SLOW_IGNORED]++;    /* the worker parsed it */
		return;
	}
	if (m.kind != PKT_KIND_ARP && m.kind != PKT_KIND_ND) {
		if (!control_bfd_input(c, frame, len, &m, control_clock_us(c)))
			c->counters[CONTROL_SLOW_IGNORED]++;
		return;
	}
	if (!ndisc_check(frame, len, &m, c->sh->port.mac, &info, &refusal)) {
		c->refused[refusal]++;
		return;
	}
	learnt = learn(c, &info);
	if (info.kind == NDISC_ARP_REQUEST && answers_for(c, info.family, info.target)) {
		control_send_frame(c, fill_arp_reply, &a, CONTROL_ARP_REPLIES);
		c->counters[CONTROL_SLOW_ANSWERED]++;
	} else if (info.kind == NDISC_NS && answers_for(c, info.family, info.target)) {
		control_send_frame(c, fill_na, &a, CONTROL_ND_ADVERTS);
		c->counters[CONTROL_SLOW_ANSWERED]++;
	} else {
		c->counters[learnt ? CONTROL_SLOW_LEARNT : CONTROL_SLOW_IGNORED]++;
	}
}

static void
neighbours(struct control *c)
{
	struct neigh_addr due[SOLICIT_MAX];
	uint32_t n = neigh_due(c->neigh, control_now_ms(c), due, SOLICIT_MAX);
	struct dp_state *s;
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		struct frame_arg a = { c, NULL, 0, due[i].family, due[i].addr };

		control_send_frame(c, fill_solicit, &a, CONTROL_SOLICITS);
	}
	if (neigh_generation(c->neigh) == c->neigh_generation)
		return;
	c->neigh_generation = neigh_generation(c->neigh);
	s = state_with_neighbours(c->sctx, control_state(c), &rc);
	if (s != NULL)
		control_publish(c, s);
}

/* ------------------------------------------------------------ exports */

/* Send one batch of flows of one event to syncd. */
static void
export_send(struct control *c, enum wire_flow_event event, size_t count)
{
	struct wire_ctl_msg m = { .kind = WIRE_CTL_EXPORT_BATCH };
	int rc;

	m.request_id = ++c->export_seq;
	m.flows.event = event;
	m.flows.entries = c->flows;
	m.flows.count = count;
	m.flows.dropped = c->export_lost;
	rc = ipc_server_send_event(c->ipc, c->export_conn, &m);
	if (rc == 0) {
		c->export_lost = 0;
		c->counters[CONTROL_EXPORTED] += count;
	} else {
		c->export_lost += count;
		c->counters[CONTROL_EXPORT_LOST] += count;
	}
}

static const uint8_t wire_event_of[EXPORT_EVENT_MAX] = {
	[EXPORT_NEW] = WIRE_FLOW_EVENT_NEW,
	[EXPORT_REFRESH] = WIRE_FLOW_EVENT_REFRESH,
	[EXPORT_CLOSE] = WIRE_FLOW_EVENT_CLOSE,
};

/*
 * Take up to CONTROL_EXPORT_BURST records from a worker's export ring into
 * batches, one event kind per batch. Returns how many it took.
 */
static unsigned
exports(struct control *c, struct worker *w)
{
	struct export_rec *recs = c->recs;
	const struct dp_state *s = control_state(c);
	unsigned n;

	if (c->export_conn == 0) {
		/* Nobody listens: free every record without reading it (the
		 * worker streamed them to DRAM; a read would fetch them back),
		 * with no budget, as it costs the same for one or all. */
		struct rte_ring_zc_data zcd;

		n = rte_ring_dequeue_zc_burst_elem_start(w->export_ring, sizeof(*recs),
							 rte_ring_get_capacity(w->export_ring),
							 &zcd, NULL);
		rte_ring_dequeue_zc_elem_finish(w->export_ring, n);
		c->counters[CONTROL_EXPORT_NO_SUBSCRIBER] += n;
		return n;
	}
	n = rte_ring_sc_dequeue_burst_elem(w->export_ring, recs, sizeof(recs[0]),
					   CONTROL_EXPORT_BURST, NULL);
	for (int ev = 0; ev < EXPORT_EVENT_MAX; ev++) {
		size_t k = 0;

		for (unsigned i = 0; i < n; i++) {
			if (recs[i].event != ev || recs[i].dest >= s->n_dests)
				continue;
			control_wire_flow(s, &recs[i].key, recs[i].dest, recs[i].lifetime_ms,
					  recs[i].state, &c->flows[k++]);
		}
		if (k > 0)
			export_send(c, (enum wire_flow_event)wire_event_of[ev], k);
	}
	return n;
}

/* ----------------------------------------------------------- the loop */

static bool
dest_valid(void *arg, uint32_t dest)
{
	const struct dp_state *s = control_state(arg);

	return dest < s->n_dests && s->dests[dest].status != DEST_GONE;
}

static int32_t
tick(int32_t fd, int32_t revents, void *arg)
{
	struct control *c = arg;

	(void)revents;
	if (!daemon_timer_fired(fd))
		return 0;
	c->counters[CONTROL_TICKS]++;
	for (unsigned i = 0; i < c->p.n_workers; i++) {
		struct worker *w = &c->p.workers[i];
		struct rte_mbuf *m[SLOW_BURST];
		unsigned n = rte_ring_sc_dequeue_burst(w->slow_ring, (void **)m, SLOW_BURST, NULL);

		for (unsigned j = 0; j < n; j++) {
			slow_path(c, m[j]);
			rte_pktmbuf_free(m[j]);
		}
		/* Bounded: a flood of new flows must not starve the rest of the tick. */
		for (int k = 0; k < 8 && exports(c, w) == CONTROL_EXPORT_BURST; k++)
			;
	}
	neighbours(c);
	control_ownership_due(c, control_clock_ms(c));
	control_bfd_tick(c, control_clock_us(c));
	synced_expire(c->sh->synced, control_now_ms(c), SYNCED_EXPIRE_BUDGET, dest_valid, c);
	retire_ready(c, false);
	return 0;
}

/* SIGHUP: as maglbctl reload (a bad file is logged and refused). */
static void
on_reload(void *arg)
{
	char err[CONFIG_ERROR_MAX];

	control_reload(arg, false, err, sizeof(err));
}

static int
control_start(struct control *c)
{
	static const struct ipc_handlers handlers = {
		.request = control_ipc_request,
		.release = control_ipc_release,
		.disconnected = control_ipc_disconnected,
	};
	struct neigh_params np;

	neigh_params_default(&np);
	c->neigh = neigh_create(NEIGH_CAPACITY, &np);
	c->flows = calloc(IPC_FLOWS_PER_MSG_MAX, sizeof(*c->flows));
	c->recs = calloc(CONTROL_EXPORT_BURST, sizeof(*c->recs));
	c->loop = qb_loop_create();
	if (c->neigh == NULL || c->flows == NULL || c->recs == NULL || c->loop == NULL)
		return -ENOMEM;
	c->signals = daemon_signals_create(c->loop, on_reload, c);
	if (c->signals == NULL)
		return -ENOMEM;
	c->ipc = ipc_server_create(c->loop, c->p.service, c->p.group, &handlers, c);
	if (c->ipc == NULL)
		return -EADDRINUSE;
	want_neighbours(c, control_state(c));
	if (control_bfd_start(c) < 0)
		return -ENOMEM;
	c->tick_fd = daemon_timer_create(c->loop, QB_LOOP_HIGH, TICK_MS, tick, c);
	if (c->tick_fd < 0)
		qb_log(LOG_ERR, "control: cannot set up the tick: %s", strerror(-c->tick_fd));
	return c->tick_fd < 0 ? c->tick_fd : 0;
}

/* The neighbour table answers the state's next-hop lookups. */
static const uint8_t *
lookup_mac(void *arg, uint8_t family, const uint8_t addr[16])
{
	struct control *c = arg;

	return c->neigh == NULL ? NULL : neigh_lookup(c->neigh, family, addr);
}

int
control_run(struct control_params *p)
{
	struct control c = { .p = *p, .sh = p->shared, .cfg = p->cfg, .tick_fd = -1 };
	char err[CONFIG_ERROR_MAX];
	struct state_port sp = { .lookup_mac = lookup_mac, .arg = &c };
	struct dp_state *s;
	int rc;

	port_facts(&sp, p->cfg, p->shared->port.mac);
	c.start_ms = control_now_ms(&c);
	c.sctx = state_ctx_create(p->shared->max_dests, &sp);
	rc = c.sctx == NULL ? -ENOMEM : 0;
	if (rc < 0)
		qb_log(LOG_ERR, "out of memory for %u destination ids", p->shared->max_dests);
	if (rc == 0) {
		s = state_build(c.sctx, c.cfg, NULL, err, sizeof(err));
		rc = s == NULL ? -EINVAL : 0;
		if (s == NULL)
			qb_log(LOG_ERR, "%s", err);
		else
			control_publish(&c, s);
	}
	if (rc == 0)
		rc = control_start(&c);
	if (rc == 0) {
		qb_log(LOG_INFO, "control: serving IPC as '%s'", p->service);
		qb_loop_run(c.loop);
	}
	__atomic_store_n(&p->shared->stop, true, __ATOMIC_RELEASE);
	ipc_server_destroy(c.ipc);
	daemon_signals_destroy(c.signals);
	if (c.loop != NULL) {
		daemon_timer_destroy(c.loop, c.tick_fd);
		qb_loop_destroy(c.loop);
	}
	control_bfd_stop(&c);
	p->cfg = c.cfg;     /* the caller frees the config in force */
	retire_ready(&c, true);
	free(c.recs);
	free(c.flows);
	neigh_destroy(c.neigh);
	state_ctx_destroy(c.sctx);
	return rc;
}
