/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check suite of dataplane/core/forward.c, without EAL: every rule of
 * dataplane/README.md's lookup order, provisional entries and exports, on
 * real forwarding states (state.c, configs through the real parser), a real
 * flow table, and a synced table kept in the suite (the op fwd_burst()
 * calls), bursts of one packet or several as a worker hands them over.
 */
#include "dataplane/core/forward.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "addr_parse.h"

#include "config/config.h"
#include "dataplane/core/bfd.h"
#include "dataplane/state.h"

#define HEAD \
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n" \
	"node = { id = 1; address = \"198.18.0.10\"; address6 = \"2001:db8::10\"; };\n" \
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
#define WEB(backends) \
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";" \
	" encap = \"gre\"; table_size = 101; backends = ( " backends " ); }"
#define WEB_123 WEB("{ address = \"198.18.2.1\"; }, { address = \"198.18.2.2\"; }, " \
		    "{ address = \"198.18.2.3\"; }")
#define DNS \
	"  { name = \"dns\"; address = \"198.18.1.2\"; port = 53; protocol = \"udp\";" \
	" encap = \"gre\"; table_size = 101;" \
	" backends = ( { address = \"198.18.2.5\"; }, { address = \"198.18.2.6\"; } ); }"
#define LATE \
	"  { name = \"late\"; address = \"198.18.1.3\"; port = 80; protocol = \"tcp\";" \
	" encap = \"gre\"; table_size = 101; sync_after_packets = 5;" \
	" backends = ( { address = \"198.18.2.7\"; } ); }"
#define OTHER \
	"  { name = \"other\"; address = \"198.18.1.4\"; port = 80; protocol = \"tcp\";" \
	" encap = \"gre\"; table_size = 101; backends = ( { address = \"198.18.2.8\"; } ); }"
#define CONF(web) HEAD "vips = (\n" web ",\n" DNS ",\n" LATE ",\n" OTHER "\n);\n"

enum { VIP_WEB = 0, VIP_DNS, VIP_LATE, VIP_OTHER };

enum {
	SYN_MS = 5000, ESTABLISHED_MS = 900000, CLOSING_MS = 10000, UDP_MS = 30000,
	REFRESH_MS = 20000, CAPACITY = 4096,
	T0 = 100000,                /* the clock of the first packet, ms */
};

static const uint8_t port_mac[6] = { 0x02, 0xaa, 0, 0, 0, 0x01 };

/* The suite's synced table: what syncd imported, looked up by the op. */
struct peer_entry {
	struct flow_key key;
	struct synced_value v;
};

static struct {
	struct state_ctx *sctx;
	struct dp_state *st;
	struct flowtab *flows;
	struct dp_counters counters;
	uint64_t (*dest)[FWD_DEST_ROW];
	struct fwd_node node;
	struct fwd_ctx ctx;
	struct peer_entry peers[16];
	unsigned n_peers;
	unsigned synced_calls, synced_keys;     /* op calls, keys looked up */
} t;

static uint64_t
synced_op(void *arg, const struct flow_key *keys[], uint32_t n, uint32_t now_ms,
	  struct synced_value out[])
{
	uint64_t hits = 0;

	ck_assert_ptr_eq(arg, &t);
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_le(n, FWD_BURST_MAX);
	t.synced_calls++;
	t.synced_keys += n;
	for (uint32_t j = 0; j < n; j++)
		for (unsigned p = 0; p < t.n_peers; p++)
			if (memcmp(&t.peers[p].key, keys[j], sizeof(*keys[j])) == 0 &&
			    (int32_t)(t.peers[p].v.expires_ms - now_ms) > 0) {
				out[j] = t.peers[p].v;
				hits |= 1ull << j;
			}
	return hits;
}

static struct dp_state *
build(const char *text, const struct dp_state *prev)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg = config_load_string(text, "t.conf", err, sizeof(err));
	struct dp_state *s;

	ck_assert_msg(cfg != NULL, "config refused: %s", err);
	if (t.sctx == NULL) {
		struct state_port port = { .mtu = 1500 };
		uint32_t max = state_dests_max(cfg);

		memcpy(port.mac, port_mac, 6);
		t.sctx = state_ctx_create(max, &port);
		ck_assert_ptr_nonnull(t.sctx);
		t.dest = calloc(max, sizeof(*t.dest));
		ck_assert_ptr_nonnull(t.dest);
	}
	s = state_build(t.sctx, cfg, prev, err, sizeof(err));
	ck_assert_msg(s != NULL, "state refused: %s", err);
	config_free(cfg);
	return s;
}

/* Make s the state in force (the previous one is freed). */
static void
publish(struct dp_state *s)
{
	if (t.st != NULL)
		state_free(t.st);
	t.st = s;
}

static struct flowtab *
table_new(uint32_t capacity, uint32_t insert_rate)
{
	struct flowtab_params p = {
		.capacity = capacity, .seed = 42, .tcp_syn_ms = SYN_MS,
		.tcp_established_ms = ESTABLISHED_MS, .tcp_closing_ms = CLOSING_MS,
		.udp_ms = UDP_MS, .refresh_ms = REFRESH_MS, .insert_rate = insert_rate,
		.on_free = fwd_entry_freed, .on_free_arg = t.dest,
	};
	struct flowtab *f = flowtab_create(&p);

	ck_assert_ptr_nonnull(f);
	return f;
}

static void
setup_with(uint32_t capacity, uint32_t insert_rate)
{
	memset(&t, 0, sizeof(t));
	publish(build(CONF(WEB_123), NULL));
	t.flows = table_new(capacity, insert_rate);
	addr_parse("198.18.0.10", t.node.addr[0]);
	addr_parse("2001:db8::10", t.node.addr[1]);
	t.node.has_addr[0] = t.node.has_addr[1] = true;
	t.ctx = (struct fwd_ctx){
		.flows = t.flows, .counters = &t.counters, .dest = t.dest, .node = &t.node,
		.synced_lookup = synced_op, .synced_arg = &t,
	};
}

static void
setup(void)
{
	setup_with(CAPACITY, 0);
}

static void
teardown(void)
{
	flowtab_destroy(t.flows);
	state_free(t.st);
	state_ctx_destroy(t.sctx);
	free(t.dest);
	memset(&t, 0, sizeof(t));
}

/* A packet from client:cport to vip:vport. */
static struct pkt_meta
packet(const char *client, uint16_t cport, const char *vip, uint16_t vport, uint8_t proto,
       uint8_t flags)
{
	struct pkt_meta m = { .kind = PKT_KIND_FLOW, .df = 1, .ttl = 64 };

	m.family = addr_parse(vip, m.key.vip);
	ck_assert_uint_eq(addr_parse(client, m.key.client), m.family);
	m.key.family = m.family;
	m.key.vip_port = vport;
	m.key.client_port = cport;
	m.key.proto = proto;
	m.tcp_flags = proto == IPPROTO_TCP ? flags : 0;
	m.l2_len = 14;
	m.ip_len = 40;
	return m;
}

/* A TCP packet of client port cport to web. */
static struct pkt_meta
web(uint16_t cport, uint8_t flags)
{
	return packet("198.18.0.50", cport, "198.18.1.1", 80, IPPROTO_TCP, flags);
}

static struct pkt_meta
dns(uint16_t cport)
{
	return packet("198.18.0.50", cport, "198.18.1.2", 53, IPPROTO_UDP, 0);
}

/* A packet's action as the suite checks it: fwd_out's word decoded, and
 * the packet's records for syncd in order. */
enum verdict { FORWARD, DROP, CONTROL };

struct action {
	enum verdict verdict;
	uint32_t dest;              /* FORWARD */
	enum dp_drop drop;          /* DROP */
	unsigned n_exports;
	struct fwd_export exports[FWD_EXPORTS_MAX];
};

/* Decide a burst; the output starts as garbage. Records go only with
 * forwarded packets, at most FWD_EXPORTS_MAX a packet. */
static void
burst(const struct pkt_meta *m, uint32_t n, uint32_t now, struct action *act)
{
	static struct fwd_out out;

	memset(&out, 0xa5, sizeof(out));
	fwd_burst(&t.ctx, t.st, m, n, now, &out);
	ck_assert_uint_le(out.n_exports, FWD_EXPORTS_MAX * n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = out.act[i];

		memset(&act[i], 0, sizeof(act[i]));
		if (fwd_act_forwards(a)) {
			ck_assert_uint_lt(a, t.st->n_dests);
			act[i].verdict = FORWARD;
			act[i].dest = a;
		} else if (a == FWD_ACT_CONTROL) {
			act[i].verdict = CONTROL;
		} else {
			ck_assert_uint_lt(a - FWD_ACT_DROP, DP_DROP_MAX);
			act[i].verdict = DROP;
			act[i].drop = (enum dp_drop)(a - FWD_ACT_DROP);
		}
	}
	for (uint32_t k = 0; k < out.n_exports; k++) {
		struct action *a;

		ck_assert_uint_lt(out.exports[k].packet, n);
		a = &act[out.exports[k].packet];
		ck_assert_int_eq(a->verdict, FORWARD);
		ck_assert_uint_lt(a->n_exports, FWD_EXPORTS_MAX);
		ck_assert_uint_lt(out.exports[k].event, EXPORT_EVENT_MAX);
		ck_assert_uint_lt(out.exports[k].state, FLOWTAB_STATE_MAX);
		a->exports[a->n_exports++] = out.exports[k];
	}
}

static struct action
step(struct pkt_meta m, uint32_t now)
{
	struct action a;

	burst(&m, 1, now, &a);
	return a;
}

/* a forwards to dest with no export. */
static void
assert_quiet(struct action a, uint32_t dest)
{
	ck_assert_int_eq(a.verdict, FORWARD);
	ck_assert_uint_eq(a.dest, dest);
	ck_assert_uint_eq(a.n_exports, 0);
}

/* a forwards to dest with one export, event in state. */
static void
assert_export(struct action a, uint32_t dest, enum export_event event,
	      enum flowtab_state state)
{
	ck_assert_int_eq(a.verdict, FORWARD);
	ck_assert_uint_eq(a.dest, dest);
	ck_assert_uint_eq(a.n_exports, 1);
	ck_assert_uint_eq(a.exports[0].event, event);
	ck_assert_uint_eq(a.exports[0].state, state);
}

static void
assert_drop(struct action a, enum dp_drop why)
{
	ck_assert_int_eq(a.verdict, DROP);
	ck_assert_str_eq(dp_drop_names[a.drop], dp_drop_names[why]);
}

static uint64_t
event(enum dp_event e)
{
	return t.counters.event[e];
}

static uint32_t
dest_of(uint32_t vip, const char *addr)
{
	uint8_t a[16], family = addr_parse(addr, a);
	int64_t d = state_dest_find(t.st, vip, family, a);

	ck_assert_int_ge(d, 0);
	return (uint32_t)d;
}

static uint32_t
maglev(const struct pkt_meta *m, uint32_t vip)
{
	int64_t d = state_maglev_pick(t.st, vip, &m->key);

	ck_assert_int_ge(d, 0);
	return (uint32_t)d;
}

static struct flowtab_entry *
entry(const struct pkt_meta *m)
{
	return flowtab_lookup(t.flows, &m->key);
}

/* A peer's entry for m's flow: dest, alive until expires_ms. */
static void
peer_add(const struct pkt_meta *m, uint32_t dest, uint32_t expires_ms)
{
	ck_assert_uint_lt(t.n_peers, 16);
	t.peers[t.n_peers].key = m->key;
	t.peers[t.n_peers].v = (struct synced_value){ dest, expires_ms };
	t.n_peers++;
}

/* A client port whose flow Maglev sends elsewhere than to dest. */
static uint16_t
port_not_to(uint32_t dest)
{
	for (uint16_t p = 1000; p < 2000; p++) {
		struct pkt_meta m = web(p, PKT_TCP_SYN);

		if (maglev(&m, VIP_WEB) != dest)
			return p;
	}
	ck_abort_msg("no port avoids the destination");
	return 0;
}

/* Mark web's backend addr down (or another status). */
static void
backend_status(const char *addr, enum dest_status status, uint32_t weight)
{
	int rc = 0;
	struct dp_state *s = state_with_backend(t.sctx, t.st, VIP_WEB, dest_of(VIP_WEB, addr),
						(uint8_t)status, weight, &rc);

	ck_assert_msg(s != NULL, "state_with_backend: %d", rc);
	publish(s);
}

/* Lookup order 3: a flow no table knows gets Maglev's pick and a new entry,
 * not exported; a SYN's entry is not provisional. */
START_TEST(test_new_flow_maglev)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB);
	struct flowtab_entry *e;

	assert_quiet(step(m, T0), d);
	e = entry(&m);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->backend, d);
	ck_assert_uint_eq(e->state, FLOWTAB_SYN);
	ck_assert_uint_eq(e->flags & (FLOWTAB_FLAG_PROVISIONAL | FLOWTAB_FLAG_EXPORTED), 0);
	ck_assert_uint_eq(event(DP_EVENT_MAGLEV_PICKS), 1);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 1);
	ck_assert_uint_eq(event(DP_EVENT_FLOW_HITS), 0);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_NEW], 1);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_MAGLEV_PICKS], 1);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 1);
	/* The synced table was asked once, for that miss. */
	ck_assert_uint_eq(t.synced_calls, 1);
	ck_assert_uint_eq(t.synced_keys, 1);
}
END_TEST

/* Exports: NEW once established (the client's first packet after its SYN),
 * REFRESH after the interval, CLOSE at the first FIN or RST only. The
 * entry's own table carries it: no synced lookup. */
START_TEST(test_connection_exports)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB);

	step(m, T0);
	assert_quiet(step(web(1000, PKT_TCP_SYN), T0 + 1), d);     /* a retransmitted SYN */
	assert_export(step(web(1000, PKT_TCP_ACK), T0 + 2), d, EXPORT_NEW,
		      FLOWTAB_ESTABLISHED);
	assert_quiet(step(web(1000, PKT_TCP_ACK), T0 + 3), d);
	assert_quiet(step(web(1000, PKT_TCP_ACK), T0 + 2 + REFRESH_MS - 1), d);
	assert_export(step(web(1000, PKT_TCP_ACK), T0 + 2 + REFRESH_MS), d, EXPORT_REFRESH,
		      FLOWTAB_ESTABLISHED);
	assert_export(step(web(1000, PKT_TCP_ACK | PKT_TCP_FIN), T0 + REFRESH_MS + 10), d,
		      EXPORT_CLOSE, FLOWTAB_CLOSING);
	assert_quiet(step(web(1000, PKT_TCP_ACK | PKT_TCP_FIN), T0 + REFRESH_MS + 11), d);
	assert_quiet(step(web(1000, PKT_TCP_RST), T0 + REFRESH_MS + 12), d);
	ck_assert_uint_eq(t.synced_calls, 1);
	ck_assert_uint_eq(event(DP_EVENT_FLOW_HITS), 8);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 1);
}
END_TEST

/* A SYN that a RST ends exports nothing: a flood of spoofed SYNs exports
 * nothing at all. */
START_TEST(test_syn_rst_exports_nothing)
{
	for (uint16_t p = 1000; p < 1100; p++) {
		struct pkt_meta m = web(p, PKT_TCP_SYN);

		assert_quiet(step(m, T0), maglev(&m, VIP_WEB));
		ck_assert_uint_eq(step(web(p, PKT_TCP_RST), T0 + 1).n_exports, 0);
	}
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 100);
}
END_TEST

/* A SYN and its ACK in one burst make one entry, and the ACK exports it. */
START_TEST(test_syn_and_ack_in_one_burst)
{
	struct pkt_meta m[3] = { web(1000, PKT_TCP_SYN), web(1000, PKT_TCP_ACK),
				 web(1001, PKT_TCP_SYN) };
	struct action a[3];
	uint32_t d = maglev(&m[0], VIP_WEB);

	burst(m, 3, T0, a);
	assert_quiet(a[0], d);
	assert_export(a[1], d, EXPORT_NEW, FLOWTAB_ESTABLISHED);
	assert_quiet(a[2], maglev(&m[2], VIP_WEB));
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 2);
	ck_assert_uint_eq(flowtab_count(t.flows), 2);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 1 + (maglev(&m[2], VIP_WEB) == d));
	ck_assert_uint_eq(t.synced_calls, 1);
	ck_assert_uint_eq(t.synced_keys, 3);
}
END_TEST

/* A peer's flow whose SYN and ACK share a burst: the SYN takes the peer's
 * entry, the ACK finds it (this burst's) and is carried by it, no second
 * import and no replacement. */
START_TEST(test_synced_twice_in_one_burst)
{
	uint32_t peer = dest_of(VIP_WEB, "198.18.2.1");
	struct pkt_meta m[2] = { web(port_not_to(peer), PKT_TCP_SYN), m[0] };
	struct action a[2];

	m[1].tcp_flags = PKT_TCP_ACK;
	peer_add(&m[0], peer, T0 + 60000);
	burst(m, 2, T0, a);
	assert_quiet(a[0], peer);
	assert_quiet(a[1], peer);
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 1);
	ck_assert_uint_eq(event(DP_EVENT_PROVISIONAL_REPLACED), 0);
	ck_assert_uint_eq(event(DP_EVENT_FLOW_HITS), 1);
	ck_assert_uint_eq(t.dest[peer][FWD_DEST_FLOWS], 1);
}
END_TEST

/* A packet mid-flow makes a provisional entry: not exported within its
 * window (its packets look the synced table up, at most once a
 * millisecond), then NEW at its first packet past the window. */
START_TEST(test_provisional_kept)
{
	struct pkt_meta m = web(1000, PKT_TCP_ACK);
	uint32_t d = maglev(&m, VIP_WEB);
	struct flowtab_entry *e;

	assert_quiet(step(m, T0), d);
	e = entry(&m);
	ck_assert_uint_ne(e->flags & FLOWTAB_FLAG_PROVISIONAL, 0);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	assert_quiet(step(m, T0), d);                   /* same ms: no lookup */
	ck_assert_uint_eq(t.synced_calls, 1);
	assert_quiet(step(m, T0 + 1), d);
	ck_assert_uint_eq(t.synced_calls, 2);
	assert_quiet(step(m, T0 + FLOWTAB_PROVISIONAL_MS - 1), d);
	ck_assert_uint_eq(t.synced_calls, 3);
	assert_export(step(m, T0 + FLOWTAB_PROVISIONAL_MS), d, EXPORT_NEW,
		      FLOWTAB_ESTABLISHED);
	ck_assert_uint_eq(e->flags & FLOWTAB_FLAG_PROVISIONAL, 0);
	ck_assert_uint_eq(flowtab_stats(t.flows)[FLOWTAB_STAT_PROVISIONAL_KEPT], 1);
	assert_quiet(step(m, T0 + FLOWTAB_PROVISIONAL_MS + 1), d);
	ck_assert_uint_eq(event(DP_EVENT_PROVISIONAL_REPLACED), 0);
}
END_TEST

/* A peer's entry that lands within the window replaces the provisional
 * guess: its destination, the gauges moved, and the entry is this node's
 * to close (a peer's counts as exported). */
START_TEST(test_provisional_replaced)
{
	struct pkt_meta m = web(port_not_to(dest_of(VIP_WEB, "198.18.2.2")), PKT_TCP_ACK);
	uint32_t guess = maglev(&m, VIP_WEB), peer = dest_of(VIP_WEB, "198.18.2.2");
	struct flowtab_entry *e;

	assert_quiet(step(m, T0), guess);
	ck_assert_uint_eq(t.dest[guess][FWD_DEST_FLOWS], 1);
	peer_add(&m, peer, T0 + ESTABLISHED_MS);
	assert_quiet(step(m, T0 + 500), peer);
	e = entry(&m);
	ck_assert_uint_eq(e->backend, peer);
	ck_assert_uint_eq(e->flags & FLOWTAB_FLAG_PROVISIONAL, 0);
	ck_assert_uint_ne(e->flags & FLOWTAB_FLAG_EXPORTED, 0);
	ck_assert_uint_eq(event(DP_EVENT_PROVISIONAL_REPLACED), 1);
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 1);
	ck_assert_uint_eq(t.dest[peer][FWD_DEST_SYNCED_HITS], 1);
	ck_assert_uint_eq(t.dest[guess][FWD_DEST_FLOWS], 0);
	ck_assert_uint_eq(t.dest[peer][FWD_DEST_FLOWS], 1);
	/* From here the own table carries it, without the synced table. */
	assert_quiet(step(m, T0 + 501), peer);
	ck_assert_uint_eq(t.synced_calls, 2);
	assert_export(step(web(m.key.client_port, PKT_TCP_FIN), T0 + 502), peer, EXPORT_CLOSE,
		      FLOWTAB_CLOSING);
}
END_TEST

/* A peer's entry for a destination that no longer carries flows, or that
 * is another VIP's, is not taken: Maglev's guess stays. */
START_TEST(test_peer_entry_unusable)
{
	uint32_t down = dest_of(VIP_WEB, "198.18.2.2");
	struct pkt_meta m = web(port_not_to(down), PKT_TCP_ACK);
	struct pkt_meta n = web(m.key.client_port + 1000, PKT_TCP_ACK);
	uint32_t other = dest_of(VIP_OTHER, "198.18.2.8");

	peer_add(&m, down, T0 + ESTABLISHED_MS);
	peer_add(&n, other, T0 + ESTABLISHED_MS);
	backend_status("198.18.2.2", DEST_DOWN, 1);
	assert_quiet(step(m, T0), maglev(&m, VIP_WEB));
	ck_assert_uint_ne(entry(&m)->flags & FLOWTAB_FLAG_PROVISIONAL, 0);
	assert_quiet(step(n, T0), maglev(&n, VIP_WEB));
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 0);
	/* An expired peer entry is no hit either. */
	t.n_peers = 0;
	peer_add(&m, dest_of(VIP_WEB, "198.18.2.3"), T0 + 5);
	assert_quiet(step(m, T0 + 5), maglev(&m, VIP_WEB));
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 0);
}
END_TEST

/* Lookup order 2: a miss the synced table holds is taken over with the
 * peer's destination, the state from the packet, the lifetime left; this
 * node refreshes and closes it from then on. */
START_TEST(test_synced_taken_over)
{
	uint32_t peer = dest_of(VIP_WEB, "198.18.2.3");
	struct pkt_meta m = web(port_not_to(peer), PKT_TCP_ACK);
	struct flowtab_entry *e;

	peer_add(&m, peer, T0 + 60000);
	assert_quiet(step(m, T0), peer);
	e = entry(&m);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->backend, peer);
	ck_assert_uint_eq(e->state, FLOWTAB_ESTABLISHED);
	ck_assert_uint_ne(e->flags & FLOWTAB_FLAG_EXPORTED, 0);
	ck_assert_uint_ne(e->flags & FLOWTAB_FLAG_SYNCED, 0);
	ck_assert_uint_eq(e->flags & FLOWTAB_FLAG_PROVISIONAL, 0);
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 1);
	ck_assert_uint_eq(event(DP_EVENT_MAGLEV_PICKS), 0);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 0);
	ck_assert_uint_eq(t.dest[peer][FWD_DEST_SYNCED_HITS], 1);
	ck_assert_uint_eq(t.dest[peer][FWD_DEST_FLOWS], 1);
	/* Its packet is here: this node's timeouts from now on. */
	ck_assert(!flowtab_expired(t.flows, e, T0 + ESTABLISHED_MS - 1));
	assert_quiet(step(m, T0 + 1), peer);
	ck_assert_uint_eq(t.synced_calls, 1);
	assert_export(step(m, T0 + REFRESH_MS), peer, EXPORT_REFRESH, FLOWTAB_ESTABLISHED);
	assert_export(step(web(m.key.client_port, PKT_TCP_RST), T0 + REFRESH_MS + 1), peer,
		      EXPORT_CLOSE, FLOWTAB_CLOSING);
}
END_TEST

/* A peer's flow whose first packet here is its FIN starts CLOSING; a UDP
 * one in UDP. */
START_TEST(test_synced_state)
{
	struct pkt_meta f = web(1000, PKT_TCP_FIN | PKT_TCP_ACK), u = dns(2000);

	peer_add(&f, dest_of(VIP_WEB, "198.18.2.1"), T0 + 60000);
	peer_add(&u, dest_of(VIP_DNS, "198.18.2.6"), T0 + 60000);
	assert_quiet(step(f, T0), dest_of(VIP_WEB, "198.18.2.1"));
	ck_assert_uint_eq(entry(&f)->state, FLOWTAB_CLOSING);
	assert_quiet(step(u, T0), dest_of(VIP_DNS, "198.18.2.6"));
	ck_assert_uint_eq(entry(&u)->state, FLOWTAB_UDP);
}
END_TEST

/* An entry made from a SYN here is this node's: a peer's entry for the
 * same flow never replaces it, and its packets never ask. */
START_TEST(test_syn_entry_not_replaced)
{
	uint32_t peer = dest_of(VIP_WEB, "198.18.2.1");
	struct pkt_meta m = web(port_not_to(peer), PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB);

	step(m, T0);
	peer_add(&m, peer, T0 + 60000);
	assert_export(step(web(m.key.client_port, PKT_TCP_ACK), T0 + 1), d, EXPORT_NEW,
		      FLOWTAB_ESTABLISHED);
	assert_quiet(step(web(m.key.client_port, PKT_TCP_ACK), T0 + 2), d);
	ck_assert_uint_eq(t.synced_calls, 1);
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 0);
}
END_TEST

/* Down: the flows of a destination down are rescheduled by Maglev on
 * their next packet, exported as NEW if they had been; the gauges move. */
START_TEST(test_down_rescheduled)
{
	uint32_t d;
	struct pkt_meta m = web(1000, PKT_TCP_SYN), n;
	const char *addr;

	step(m, T0);
	d = maglev(&m, VIP_WEB);
	step(web(1000, PKT_TCP_ACK), T0 + 1);                   /* exported */
	addr = d == dest_of(VIP_WEB, "198.18.2.1") ? "198.18.2.1" :
	       d == dest_of(VIP_WEB, "198.18.2.2") ? "198.18.2.2" : "198.18.2.3";
	/* An unexported flow to the same destination. */
	for (uint16_t p = 3000;; p++) {
		n = web(p, PKT_TCP_SYN);
		if (maglev(&n, VIP_WEB) == d)
			break;
	}
	step(n, T0 + 1);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 2);
	backend_status(addr, DEST_DOWN, 1);
	{
		uint32_t now = maglev(&m, VIP_WEB);
		struct action a = step(web(1000, PKT_TCP_ACK), T0 + 2);

		ck_assert_uint_ne(now, d);
		assert_export(a, now, EXPORT_NEW, FLOWTAB_ESTABLISHED);
		ck_assert_uint_eq(entry(&m)->backend, now);
		assert_quiet(step(web(1000, PKT_TCP_ACK), T0 + 3), now);
		assert_quiet(step(web(n.key.client_port, PKT_TCP_ACK | PKT_TCP_SYN), T0 + 3),
			     maglev(&n, VIP_WEB));
	}
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 0);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 2);
}
END_TEST

/* A rescheduled flow whose packet is its FIN exports NEW, then CLOSE. */
START_TEST(test_rescheduled_and_closed)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB), now;
	struct action a;
	const char *addrs[3] = { "198.18.2.1", "198.18.2.2", "198.18.2.3" };

	step(m, T0);
	step(web(1000, PKT_TCP_ACK), T0 + 1);
	for (int i = 0; i < 3; i++)
		if (dest_of(VIP_WEB, addrs[i]) == d)
			backend_status(addrs[i], DEST_DOWN, 1);
	now = maglev(&m, VIP_WEB);
	a = step(web(1000, PKT_TCP_ACK | PKT_TCP_FIN), T0 + 2);
	ck_assert_int_eq(a.verdict, FORWARD);
	ck_assert_uint_eq(a.dest, now);
	ck_assert_uint_eq(a.n_exports, 2);
	ck_assert_uint_eq(a.exports[0].event, EXPORT_NEW);
	ck_assert_uint_eq(a.exports[0].state, FLOWTAB_ESTABLISHED);
	ck_assert_uint_eq(a.exports[1].event, EXPORT_CLOSE);
	ck_assert_uint_eq(a.exports[1].state, FLOWTAB_CLOSING);
}
END_TEST

/* Draining (weight 0): existing flows stay, new flows go elsewhere. */
START_TEST(test_draining_keeps_flows)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB);
	const char *addrs[3] = { "198.18.2.1", "198.18.2.2", "198.18.2.3" };

	step(m, T0);
	step(web(1000, PKT_TCP_ACK), T0 + 1);
	for (int i = 0; i < 3; i++)
		if (dest_of(VIP_WEB, addrs[i]) == d)
			backend_status(addrs[i], DEST_DRAINING, 0);
	assert_quiet(step(web(1000, PKT_TCP_ACK), T0 + 2), d);
	for (uint16_t p = 2000; p < 2100; p++)
		ck_assert_uint_ne(step(web(p, PKT_TCP_SYN), T0 + 3).dest, d);
}
END_TEST

/* Gone: a reload that removes a backend reschedules its flows; one that
 * keeps it keeps them (the entry is checked against the new VIPs). */
START_TEST(test_reload)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d, kept = 0, moved = 0;

	for (uint16_t p = 1000; p < 1060; p++) {
		step(web(p, PKT_TCP_SYN), T0);
		step(web(p, PKT_TCP_ACK), T0 + 1);
	}
	publish(build(CONF(WEB("{ address = \"198.18.2.1\"; }, { address = \"198.18.2.2\"; }")),
		      t.st));
	for (uint16_t p = 1000; p < 1060; p++) {
		struct flowtab_entry *e;
		struct action a;

		m = web(p, PKT_TCP_ACK);
		d = entry(&m)->backend;
		a = step(m, T0 + 2);
		e = entry(&m);
		ck_assert_uint_eq(e->user, t.st->vip_gen);
		if (d == dest_of(VIP_WEB, "198.18.2.1") || d == dest_of(VIP_WEB, "198.18.2.2")) {
			assert_quiet(a, d);
			kept++;
		} else {
			ck_assert_uint_eq(t.st->dests[d].status, DEST_GONE);
			assert_export(a, maglev(&m, VIP_WEB), EXPORT_NEW, FLOWTAB_ESTABLISHED);
			moved++;
		}
	}
	ck_assert_uint_gt(kept, 0);
	ck_assert_uint_gt(moved, 0);
	/* Checked once: the fast path takes them again. */
	ck_assert_uint_eq(event(DP_EVENT_FLOW_HITS), 120);
	ck_assert_uint_eq(t.synced_calls, 60);
}
END_TEST

/* No backend takes new flows: new flows and flows whose destination went
 * down drop as NO_BACKEND; a draining VIP's flows stay. */
START_TEST(test_no_backend)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);

	step(m, T0);
	step(web(1000, PKT_TCP_ACK), T0 + 1);
	backend_status("198.18.2.1", DEST_DOWN, 1);
	backend_status("198.18.2.2", DEST_DOWN, 1);
	backend_status("198.18.2.3", DEST_DOWN, 1);
	assert_drop(step(web(1000, PKT_TCP_ACK), T0 + 2), DP_DROP_NO_BACKEND);
	assert_drop(step(web(1001, PKT_TCP_SYN), T0 + 2), DP_DROP_NO_BACKEND);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 1);
}
END_TEST

/* Past the insert rate, or with both of a key's buckets full, the flow is
 * forwarded by Maglev alone and counted UNTRACKED: live flows stay. */
START_TEST(test_untracked)
{
	uint32_t untracked = 0;

	teardown();
	setup_with(CAPACITY, 1);        /* a bucket of 64 tokens */
	for (uint16_t p = 1000; p < 1100; p++) {
		struct pkt_meta m = web(p, PKT_TCP_SYN);
		struct action a = step(m, T0);

		assert_quiet(a, maglev(&m, VIP_WEB));
		untracked += entry(&m) == NULL;
	}
	ck_assert_uint_eq(untracked, 100 - 64);
	ck_assert_uint_eq(event(DP_EVENT_UNTRACKED), untracked);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 64);
	ck_assert_uint_eq(flowtab_count(t.flows), 64);
}
END_TEST

/* A full table: new flows and a peer's flow are forwarded untracked (the
 * peer's to its destination). */
START_TEST(test_untracked_full)
{
	struct pkt_meta m = web(60000, PKT_TCP_ACK);
	uint32_t peer = dest_of(VIP_WEB, "198.18.2.2");
	uint64_t untracked, before;

	teardown();
	setup_with(64, 0);
	for (uint16_t p = 1000; p < 3000; p++)
		step(web(p, PKT_TCP_SYN), T0);
	untracked = event(DP_EVENT_UNTRACKED);
	ck_assert_uint_ge(untracked, 2000 - 64);
	ck_assert_uint_eq(untracked + event(DP_EVENT_NEW_FLOWS), 2000);
	before = t.dest[peer][FWD_DEST_UNTRACKED];
	peer_add(&m, peer, T0 + 60000);
	assert_quiet(step(m, T0 + 1), peer);
	ck_assert_ptr_null(entry(&m));
	ck_assert_uint_eq(event(DP_EVENT_UNTRACKED), untracked + 1);
	ck_assert_uint_eq(event(DP_EVENT_SYNCED_HITS), 1);
	ck_assert_uint_eq(t.dest[peer][FWD_DEST_UNTRACKED], before + 1);
}
END_TEST

/* UDP: every entry is provisional (any first packet may be mid-stream),
 * exported at its first packet past the window; a flow shorter than the
 * window is never exported. */
START_TEST(test_udp)
{
	struct pkt_meta u = dns(2000);
	uint32_t d = maglev(&u, VIP_DNS);

	assert_quiet(step(u, T0), d);
	ck_assert_uint_ne(entry(&u)->flags & FLOWTAB_FLAG_PROVISIONAL, 0);
	ck_assert_uint_eq(entry(&u)->state, FLOWTAB_UDP);
	assert_quiet(step(u, T0 + 100), d);
	assert_export(step(u, T0 + FLOWTAB_PROVISIONAL_MS), d, EXPORT_NEW, FLOWTAB_UDP);
	assert_quiet(step(u, T0 + FLOWTAB_PROVISIONAL_MS + 1), d);
	assert_export(step(u, T0 + FLOWTAB_PROVISIONAL_MS + REFRESH_MS), d, EXPORT_REFRESH,
		      FLOWTAB_UDP);
}
END_TEST

/* sync_after_packets N: NEW from the Nth packet on, once established. */
START_TEST(test_sync_after_packets)
{
	struct pkt_meta s = packet("198.18.0.50", 1000, "198.18.1.3", 80, IPPROTO_TCP,
				   PKT_TCP_SYN);
	struct pkt_meta a = s;
	uint32_t d = dest_of(VIP_LATE, "198.18.2.7");

	a.tcp_flags = PKT_TCP_ACK;
	assert_quiet(step(s, T0), d);
	for (uint32_t k = 2; k < 5; k++)
		assert_quiet(step(a, T0 + k), d);
	assert_export(step(a, T0 + 5), d, EXPORT_NEW, FLOWTAB_ESTABLISHED);
	assert_quiet(step(a, T0 + 6), d);
}
END_TEST

/* A SYN on a CLOSING entry starts a new connection on it: NEW once
 * established again. An expired entry is restarted in place, the gauges
 * moved. */
START_TEST(test_restart_and_reuse)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB);

	step(m, T0);
	step(web(1000, PKT_TCP_ACK), T0 + 1);
	assert_export(step(web(1000, PKT_TCP_FIN), T0 + 2), d, EXPORT_CLOSE, FLOWTAB_CLOSING);
	assert_quiet(step(m, T0 + 3), d);
	assert_export(step(web(1000, PKT_TCP_ACK), T0 + 4), d, EXPORT_NEW,
		      FLOWTAB_ESTABLISHED);
	/* Expired: the next SYN restarts it, Maglev picks again. */
	assert_quiet(step(m, T0 + 4 + ESTABLISHED_MS), d);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 2);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 1);
	ck_assert_uint_eq(entry(&m)->state, FLOWTAB_SYN);
	ck_assert_uint_eq(entry(&m)->flags & FLOWTAB_FLAG_EXPORTED, 0);
	/* An expired entry whose flow a peer holds: the peer's. */
	{
		uint32_t peer = dest_of(VIP_WEB, "198.18.2.1") == d ?
				dest_of(VIP_WEB, "198.18.2.2") : dest_of(VIP_WEB, "198.18.2.1");
		uint32_t later = T0 + 4 + ESTABLISHED_MS + SYN_MS + 1;

		peer_add(&m, peer, later + 60000);
		assert_quiet(step(web(1000, PKT_TCP_ACK), later), peer);
		ck_assert_uint_eq(entry(&m)->backend, peer);
		ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 0);
		ck_assert_uint_eq(t.dest[peer][FWD_DEST_FLOWS], 1);
	}
}
END_TEST

/* ICMP errors follow their flow without touching it, and never make one. */
START_TEST(test_icmp_error)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN), icmp = web(1000, 0), other = web(1001, 0);
	uint32_t d = maglev(&m, VIP_WEB);

	icmp.kind = other.kind = PKT_KIND_ICMP_ERROR;
	step(m, T0);
	assert_quiet(step(icmp, T0 + 1), d);
	ck_assert_uint_eq(entry(&m)->state, FLOWTAB_SYN);
	ck_assert_uint_eq(entry(&m)->last_ms, T0);
	assert_quiet(step(other, T0 + 1), maglev(&other, VIP_WEB));
	ck_assert_ptr_null(entry(&other));
	ck_assert_uint_eq(event(DP_EVENT_ICMP_ERRORS), 2);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 1);
}
END_TEST

/* Before any table: not a VIP, the wrong protocol or port, an ICMP error
 * about no VIP flow, BFD to this node, martian sources. */
START_TEST(test_vip_match)
{
	struct pkt_meta icmp = packet("198.18.0.50", 1000, "198.18.9.9", 80, IPPROTO_TCP, 0);

	icmp.kind = PKT_KIND_ICMP_ERROR;
	assert_drop(step(packet("198.18.0.50", 1000, "198.18.9.9", 80, IPPROTO_TCP,
				PKT_TCP_SYN), T0), DP_DROP_NOT_VIP);
	assert_drop(step(packet("198.18.0.50", 1000, "198.18.1.1", 81, IPPROTO_TCP,
				PKT_TCP_SYN), T0), DP_DROP_VIP_PROTO);
	assert_drop(step(packet("198.18.0.50", 1000, "198.18.1.1", 80, IPPROTO_UDP, 0), T0),
		    DP_DROP_VIP_PROTO);
	assert_drop(step(icmp, T0), DP_DROP_ICMP_BAD_INNER);
	ck_assert_int_eq(step(packet("198.18.0.1", 49152, "198.18.0.10", BFD_PORT,
				    IPPROTO_UDP, 0), T0).verdict, CONTROL);
	ck_assert_int_eq(step(packet("2001:db8::1", 49152, "2001:db8::10", BFD_PORT,
				    IPPROTO_UDP, 0), T0).verdict, CONTROL);
	assert_drop(step(packet("198.18.0.1", 49152, "198.18.0.11", BFD_PORT, IPPROTO_UDP, 0),
			 T0), DP_DROP_NOT_VIP);
	assert_drop(step(packet("127.0.0.1", 1000, "198.18.1.1", 80, IPPROTO_TCP, PKT_TCP_SYN),
			 T0), DP_DROP_BAD_SOURCE);
	assert_drop(step(packet("198.18.0.10", 1000, "198.18.1.1", 80, IPPROTO_TCP,
				PKT_TCP_SYN), T0), DP_DROP_BAD_SOURCE);
	assert_drop(step(packet("198.18.1.2", 1000, "198.18.1.1", 80, IPPROTO_TCP, PKT_TCP_SYN),
			 T0), DP_DROP_BAD_SOURCE);
	ck_assert_uint_eq(flowtab_count(t.flows), 0);
	ck_assert_uint_eq(t.synced_calls, 0);
	ck_assert_uint_eq(event(DP_EVENT_MAGLEV_PICKS), 0);
}
END_TEST

/* A burst of every kind at once: each packet's action is the one it gets
 * alone, in order. */
START_TEST(test_mixed_burst)
{
	struct pkt_meta m[FWD_BURST_MAX];
	struct action a[FWD_BURST_MAX];
	uint32_t n = 0, forwarded = 0, dropped = 0;

	for (uint16_t p = 0; p < 20; p++)
		step(web(1000 + p, PKT_TCP_SYN), T0);
	for (uint16_t p = 0; p < 20; p++)
		m[n++] = web(1000 + p, PKT_TCP_ACK);                            /* NEW */
	for (uint16_t p = 0; p < 20; p++)
		m[n++] = web(2000 + p, PKT_TCP_SYN);                            /* new */
	for (uint16_t p = 0; p < 20; p++)
		m[n++] = packet("198.18.0.50", p, "198.18.9.9", 80, IPPROTO_TCP, 0);
	m[n++] = dns(53);
	m[n++] = packet("198.18.0.1", 49152, "198.18.0.10", BFD_PORT, IPPROTO_UDP, 0);
	burst(m, n, T0 + 1, a);
	for (uint32_t i = 0; i < n; i++) {
		forwarded += a[i].verdict == FORWARD;
		dropped += a[i].verdict == DROP;
		if (i < 20)
			assert_export(a[i], maglev(&m[i], VIP_WEB), EXPORT_NEW,
				      FLOWTAB_ESTABLISHED);
		else if (i < 40)
			assert_quiet(a[i], maglev(&m[i], VIP_WEB));
		else if (i < 60)
			assert_drop(a[i], DP_DROP_NOT_VIP);
	}
	ck_assert_int_eq(a[60].verdict, FORWARD);
	ck_assert_int_eq(a[61].verdict, CONTROL);
	ck_assert_uint_eq(forwarded, 41);
	ck_assert_uint_eq(dropped, 20);
	ck_assert_uint_eq(event(DP_EVENT_FLOW_HITS), 20);
	ck_assert_uint_eq(event(DP_EVENT_NEW_FLOWS), 41);
}
END_TEST

/* The FLOWS gauge counts the entries of each destination until the table
 * frees them. */
START_TEST(test_flows_gauge_freed)
{
	struct pkt_meta m = web(1000, PKT_TCP_SYN);
	uint32_t d = maglev(&m, VIP_WEB);

	step(m, T0);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 1);
	flowtab_expire(t.flows, T0 + SYN_MS + 1, CAPACITY * 2);
	ck_assert_uint_eq(flowtab_count(t.flows), 0);
	ck_assert_uint_eq(t.dest[d][FWD_DEST_FLOWS], 0);
}
END_TEST

static Suite *
forward_suite(void)
{
	Suite *s = suite_create("forward");
	TCase *tc = tcase_create("rules");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_new_flow_maglev);
	tcase_add_test(tc, test_connection_exports);
	tcase_add_test(tc, test_syn_rst_exports_nothing);
	tcase_add_test(tc, test_syn_and_ack_in_one_burst);
	tcase_add_test(tc, test_synced_twice_in_one_burst);
	tcase_add_test(tc, test_provisional_kept);
	tcase_add_test(tc, test_provisional_replaced);
	tcase_add_test(tc, test_peer_entry_unusable);
	tcase_add_test(tc, test_synced_taken_over);
	tcase_add_test(tc, test_synced_state);
	tcase_add_test(tc, test_syn_entry_not_replaced);
	tcase_add_test(tc, test_down_rescheduled);
	tcase_add_test(tc, test_rescheduled_and_closed);
	tcase_add_test(tc, test_draining_keeps_flows);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_no_backend);
	tcase_add_test(tc, test_untracked);
	tcase_add_test(tc, test_untracked_full);
	tcase_add_test(tc, test_udp);
	tcase_add_test(tc, test_sync_after_packets);
	tcase_add_test(tc, test_restart_and_reuse);
	tcase_add_test(tc, test_icmp_error);
	tcase_add_test(tc, test_vip_match);
	tcase_add_test(tc, test_mixed_burst);
	tcase_add_test(tc, test_flows_gauge_freed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(forward_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
