/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * BFD on the control thread: the sessions of core/bfd.h with the routers
 * the config names, answered on the data port so that they share fate
 * with forwarding. Workers hand over what reaches this node's address on
 * UDP BFD_PORT (the slow-path ring, like ARP and ND); the 1 ms tick runs
 * the timers and tells the sessions whether the node is serving
 * (control_serving(): syncd says it should get traffic, and the lease of
 * that word runs). Frames go out through worker 0's TX ring, to the
 * peer's MAC from the neighbour table (each peer is a wanted neighbour).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qb/qblog.h>
#include <rte_cycles.h>
#include <rte_random.h>

#include "dataplane/control_private.h"
#include "dataplane/core/be.h"
#include "dataplane/core/neigh.h"
#include "dataplane/core/reply.h"

enum {
	BFD_TOS = 0xc0,                 /* network control (CS6), as routers send it */
	US_PER_MS = 1000,
	DISCR_INDEX_MASK = 0xff,        /* > BFD_SESSIONS_MAX */
};

/* The control thread's clock in microseconds (the TSC, as control_clock_ms()). */
uint64_t
control_clock_us(const struct control *c)
{
	uint64_t tsc = rte_rdtsc(), per_ms = c->sh->tsc_per_ms;

	return tsc / per_ms * US_PER_MS + tsc % per_ms * US_PER_MS / per_ms;
}

static uint8_t
family_of(const struct config_addr *a)
{
	return a->family == AF_INET ? FLOW_FAMILY_IPV4 : FLOW_FAMILY_IPV6;
}

/* ---------------------------------------------------------- sending */

struct bfd_frame {
	struct control *c;
	uint32_t session;
	const uint8_t *mac;
	const uint8_t *payload;
	size_t len;
};

static size_t
fill_bfd(uint8_t *out, size_t cap, void *arg)
{
	const struct bfd_frame *f = arg;
	const struct control *c = f->c;
	const struct config_addr *peer = &c->bfd.peers[f->session];
	int v6 = peer->family == AF_INET6;
	struct reply_udp u = {
		.src_mac = c->sh->port.mac,
		.dst_mac = f->mac,
		.family = v6 ? 6 : 4,
		.ttl = BFD_TTL,
		.tos = BFD_TOS,
		.src = c->sh->node.addr[v6],
		.dst = peer->bytes,
		.sport = (uint16_t)(BFD_SOURCE_PORT_MIN + f->session),
		.dport = BFD_PORT,
		.payload = f->payload,
		.len = (uint16_t)f->len,
	};

	return reply_udp(out, cap, &u);
}

/* ops->send: one control packet to session i's peer, when its MAC is known. */
static void
bfd_send(void *arg, uint32_t i, const uint8_t *payload, size_t len)
{
	struct control *c = arg;
	const struct config_addr *peer = &c->bfd.peers[i];
	struct bfd_frame f = { c, i, NULL, payload, len };

	f.mac = neigh_lookup(c->neigh, family_of(peer), peer->bytes);
	if (f.mac == NULL) {
		c->counters[CONTROL_BFD_NO_NEIGHBOUR]++;
		return;
	}
	control_send_frame(c, fill_bfd, &f, CONTROL_BFD_SENT);
}

static void
bfd_state_change(void *arg, uint32_t i, enum bfd_state old, enum bfd_state state,
		 enum bfd_diag diag)
{
	struct control *c = arg;
	char buf[INET6_ADDRSTRLEN];

	if (state == BFD_STATE_UP)
		c->counters[CONTROL_BFD_UPS]++;
	else if (old == BFD_STATE_UP)
		c->counters[CONTROL_BFD_DOWNS]++;
	qb_log(state == BFD_STATE_UP || old != BFD_STATE_UP ? LOG_INFO : LOG_WARNING,
	       "bfd %s: %s -> %s (%s)", config_addr_str(&c->bfd.peers[i], buf, sizeof(buf)),
	       bfd_state_names[old], bfd_state_names[state], bfd_diag_name(diag));
}

static uint32_t
bfd_random(void *arg)
{
	(void)arg;
	return (uint32_t)rte_rand();
}

/* ---------------------------------------------------------- sessions */

/* Each peer a neighbour to resolve: its MAC is where the packets go. */
void
control_bfd_want_peers(struct control *c)
{
	for (uint32_t i = 0; i < c->bfd.n_peers; i++)
		neigh_want(c->neigh, family_of(&c->bfd.peers[i]), c->bfd.peers[i].bytes,
			   control_clock_ms(c));
}

/* Sessions for cfg's peers into *out (NULL: none configured). 0 or -errno. */
static int
sessions_create(struct control *c, const struct config *cfg, struct bfd **out)
{
	static const struct bfd_ops ops = {
		.send = bfd_send, .state_change = bfd_state_change, .random = bfd_random,
	};
	const struct config_bfd *cb = &cfg->bfd;
	struct bfd_peer peers[BFD_SESSIONS_MAX];
	struct bfd_params p = {
		.n_peers = cb->n_peers,
		.peers = peers,
		.desired_min_tx_us = cb->interval_ms * US_PER_MS,
		.required_min_rx_us = cb->interval_ms * US_PER_MS,
		.detect_mult = (uint8_t)cb->multiplier,
		.auth = cb->has_auth,
		.serving = control_serving(c),
	};

	*out = NULL;
	if (cb->n_peers == 0)
		return 0;
	if (cb->has_auth) {
		p.key.id = cb->key_id;
		p.key.len = (uint8_t)cb->key_len;
		memcpy(p.key.secret, cb->key, cb->key_len);
	}
	for (uint32_t i = 0; i < cb->n_peers; i++) {
		peers[i] = (struct bfd_peer){ .family = family_of(&cb->peers[i]) };
		memcpy(peers[i].addr, cb->peers[i].bytes, sizeof(peers[i].addr));
		/* random above the low byte, so a restarted dataplane's sessions
		 * are new ones to the router (RFC 5880 6.3); the session's number
		 * plus one below it, so they are distinct and nonzero */
		peers[i].local_discr = ((uint32_t)rte_rand() & ~DISCR_INDEX_MASK) | (i + 1);
	}
	*out = bfd_create(&p, &ops, c, control_clock_us(c));
	return *out != NULL ? 0 : -errno;
}

/* Whether the sessions must start again for cfg: peers or key changed. */
static bool
sessions_differ(const struct config_bfd *a, const struct config_bfd *b)
{
	return a->n_peers != b->n_peers || a->has_auth != b->has_auth ||
	       a->multiplier != b->multiplier || a->key_id != b->key_id ||
	       a->key_len != b->key_len || memcmp(a->key, b->key, a->key_len) != 0 ||
	       memcmp(a->peers, b->peers, a->n_peers * sizeof(a->peers[0])) != 0;
}

int
control_bfd_start(struct control *c)
{
	int rc = sessions_create(c, c->cfg, &c->bfd_sessions);

	if (rc < 0) {
		qb_log(LOG_ERR, "bfd: cannot start %u session(s): %s", c->cfg->bfd.n_peers,
		       strerror(-rc));
		return rc;
	}
	c->bfd = c->cfg->bfd;
	c->bfd_serving = control_serving(c);
	c->bfd_next_us = 0;
	control_bfd_want_peers(c);
	if (c->bfd.n_peers > 0)
		qb_log(LOG_INFO, "bfd: %u session(s), %u ms x %u%s", c->bfd.n_peers,
		       c->bfd.interval_ms, c->bfd.multiplier,
		       c->bfd.has_auth ? ", meticulous keyed SHA-1" : "");
	return 0;
}

int
control_bfd_reload(struct control *c, const struct config *cfg)
{
	struct bfd *n;
	int rc;

	if (!sessions_differ(&c->bfd, &cfg->bfd)) {
		if (c->bfd_sessions != NULL && c->bfd.interval_ms != cfg->bfd.interval_ms &&
		    bfd_set_intervals(c->bfd_sessions, control_clock_us(c),
				      cfg->bfd.interval_ms * US_PER_MS,
				      cfg->bfd.interval_ms * US_PER_MS) < 0)
			return -EINVAL;
		c->bfd = cfg->bfd;
		control_bfd_want_peers(c);
		return 0;
	}
	rc = sessions_create(c, cfg, &n);
	if (rc < 0)
		return rc;
	control_bfd_drops(c, c->bfd_dropped);   /* the counters outlive the sessions */
	bfd_destroy(c->bfd_sessions);
	c->bfd_sessions = n;
	c->bfd = cfg->bfd;
	c->bfd_next_us = 0;
	control_bfd_want_peers(c);
	qb_log(LOG_NOTICE, "bfd: peers or key changed: %u session(s) start again",
	       c->bfd.n_peers);
	return 0;
}

void
control_bfd_drops(const struct control *c, uint64_t out[BFD_DROP_MAX])
{
	uint64_t now[BFD_DROP_MAX] = { 0 };

	if (c->bfd_sessions != NULL)
		bfd_drops(c->bfd_sessions, now);
	for (int i = 0; i < BFD_DROP_MAX; i++)
		out[i] = c->bfd_dropped[i] + now[i];
}

void
control_bfd_stop(struct control *c)
{
	bfd_destroy(c->bfd_sessions);
	c->bfd_sessions = NULL;
}

/* --------------------------------------------------------- receiving */

/*
 * A frame a worker handed over as BFD (UDP to BFD_PORT at this node's
 * address; m is its parse): checked down to UDP, then the sessions'.
 * False when it is not BFD after all (the caller counts it ignored).
 */
bool
control_bfd_input(struct control *c, const uint8_t *frame, uint32_t len,
		  const struct pkt_meta *m, uint64_t now_us)
{
	int v6 = m->family == FLOW_FAMILY_IPV6;
	const uint8_t *udp = frame + m->l4_off;
	struct bfd_rx rx;
	uint32_t udp_len;

	if (m->kind != PKT_KIND_FLOW || m->key.proto != IPPROTO_UDP ||
	    m->key.vip_port != BFD_PORT || !c->sh->node.has_addr[v6] ||
	    memcmp(m->key.vip, c->sh->node.addr[v6], v6 ? 16 : 4) != 0)
		return false;
	udp_len = be16_get(udp + PKT_UDP_LENGTH);
	if (c->bfd_sessions == NULL) {
		c->counters[CONTROL_BFD_NO_SESSION]++;
	} else if (udp_len < PKT_UDP_LEN || m->l4_off + udp_len > len ||
		   m->l4_off + udp_len > (uint32_t)m->l2_len + m->ip_len) {
		c->counters[CONTROL_BFD_BAD_UDP]++;
	} else if (!reply_udp_csum_ok(frame + m->l2_len, udp, v6 ? 6 : 4)) {
		c->counters[CONTROL_BFD_BAD_UDP]++;
	} else {
		rx = (struct bfd_rx){
			.payload = udp + PKT_UDP_LEN,
			.len = udp_len - PKT_UDP_LEN,
			.ttl = m->ttl,
			.source_port = m->key.client_port,
			.family = m->family,
		};
		memcpy(rx.source, m->key.client, sizeof(rx.source));
		/* a dropped packet is counted by reason inside */
		if (bfd_input(c->bfd_sessions, now_us, &rx, NULL) >= 0)
			c->counters[CONTROL_BFD_ACCEPTED]++;
		c->bfd_next_us = 0;     /* a Poll or a new remote may move a deadline */
	}
	return true;
}

/* ------------------------------------------------------------- timers */

void
control_bfd_tick(struct control *c, uint64_t now)
{
	bool serving = control_serving(c);

	if (c->bfd_sessions == NULL)
		return;
	if (serving != c->bfd_serving) {
		c->bfd_serving = serving;
		bfd_set_serving(c->bfd_sessions, now, serving);
		c->bfd_next_us = 0;
	}
	if (now >= c->bfd_next_us)
		c->bfd_next_us = bfd_run(c->bfd_sessions, now);
}

/* ---------------------------------------------------------- maglbctl */

static void
session_to_wire(const struct control *c, const struct bfd_session_status *st,
		uint64_t now_us, struct wire_ctl_bfd_session *out)
{
	int v6 = st->family == FLOW_FAMILY_IPV6;

	*out = (struct wire_ctl_bfd_session){
		.family = v6 ? AF_INET6 : AF_INET,
		.state = (enum wire_bfd_state)st->state,
		.local_diag = (enum wire_bfd_diag)st->local_diag,
		/* a diag past the known ones (a newer peer's) shows as none */
		.remote_diag = st->remote_diag < WIRE_BFD_DIAG_MAX ?
			       (enum wire_bfd_diag)st->remote_diag : WIRE_BFD_DIAG_NONE,
		.local_discriminator = st->local_discr,
		.remote_discriminator = st->remote_discr,
		.tx_interval_us = st->tx_interval_us,
		.detect_time_us = st->detect_time_us > UINT32_MAX ? UINT32_MAX :
				  (uint32_t)st->detect_time_us,
		.multiplier = st->detect_mult,
		.remote_multiplier = st->remote_detect_mult,
		.state_age_ms = (now_us - st->state_since_us) / US_PER_MS,
		.packets_in = st->packets_in,
		.packets_out = st->packets_out,
		.state_changes = st->state_changes,
		.authenticated = c->bfd.has_auth,
	};
	memcpy(out->peer, st->peer, v6 ? 16 : 4);
	memcpy(out->local, c->sh->node.addr[v6], v6 ? 16 : 4);
}

int
control_bfd_status(struct control *c, struct wire_ctl_msg *resp)
{
	uint32_t n = c->bfd_sessions != NULL ? bfd_sessions(c->bfd_sessions) : 0;
	struct wire_ctl_bfd_status *out = &resp->bfd_status;
	uint64_t now = control_clock_us(c), dropped[BFD_DROP_MAX];
	struct bfd_session_status st;

	resp->kind = WIRE_CTL_BFD_STATUS;
	*out = (struct wire_ctl_bfd_status){ .serving = control_serving(c) };
	out->sessions = calloc(n ? n : 1, sizeof(*out->sessions));
	out->drops = calloc(BFD_DROP_MAX, sizeof(*out->drops));
	if (out->sessions == NULL || out->drops == NULL) {
		free(out->sessions);
		free(out->drops);
		*out = (struct wire_ctl_bfd_status){ 0 };
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		if (bfd_session_status(c->bfd_sessions, i, &st) == 0)
			session_to_wire(c, &st, now, &out->sessions[out->n_sessions++]);
	control_bfd_drops(c, dropped);
	for (int i = 0; i < BFD_DROP_MAX; i++) {
		snprintf(out->drops[i].reason, sizeof(out->drops[i].reason), "%s",
			 bfd_drop_names[i]);
		out->drops[i].count = dropped[i];
	}
	out->n_drops = BFD_DROP_MAX;
	return 0;
}
