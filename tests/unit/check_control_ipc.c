/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's IPC handlers on the control thread (control_ipc.c,
 * control_ownership.c): the export stream's ownership, and VIP ownership
 * with leases and repeated announcements.
 *
 * Export stream: one connection owns it; a second one asking for it, or
 * asking to end it, gets EBUSY naming the owner; the owner's unsubscribe or
 * disconnect frees it.
 *
 * VIP ownership runs the control thread's own code on a state built from a
 * config, on an EAL without hugepages or devices (as DPDK's app/test): the
 * frames it sends are taken from the TX ring they are queued to, and time
 * is what each call says it is.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "config/config.h"
#include "dataplane/control_private.h"
#include "dataplane/core/neigh.h"
#include "dataplane/core/reply.h"

static struct control ctl;

/* EXPORT_SUBSCRIBE from conn; the handler's rc, its text in err. */
static int
subscribe(uint64_t conn, bool enable, char *err, size_t errlen)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_EXPORT_SUBSCRIBE };
	struct wire_ctl_msg resp = { .kind = WIRE_CTL_ERROR };

	req.export_subscribe.enable = enable;
	err[0] = '\0';
	return control_ipc_request(&ctl, conn, &req, &resp, err, errlen);
}

START_TEST(test_one_owner)
{
	char err[WIRE_TEXT_MAX];

	memset(&ctl, 0, sizeof(ctl));
	ck_assert_int_eq(subscribe(1, true, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 1);
	ck_assert_int_eq(subscribe(1, true, err, sizeof(err)), 0);   /* again */
	/* a second subscriber is refused, told who owns the stream */
	ck_assert_int_eq(subscribe(2, true, err, sizeof(err)), -EBUSY);
	ck_assert_str_eq(err, "another client (IPC connection 1) owns the export stream");
	ck_assert_uint_eq(ctl.export_conn, 1);
	/* and cannot end the owner's subscription */
	ck_assert_int_eq(subscribe(2, false, err, sizeof(err)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "only it can unsubscribe"));
	ck_assert_uint_eq(ctl.export_conn, 1);
	/* another connection's disconnect changes nothing */
	control_ipc_disconnected(&ctl, 2);
	ck_assert_uint_eq(ctl.export_conn, 1);
	/* the owner ends it; then anyone may take it */
	ck_assert_int_eq(subscribe(1, false, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 0);
	ck_assert_int_eq(subscribe(2, false, err, sizeof(err)), 0); /* no-op */
	ck_assert_int_eq(subscribe(2, true, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 2);
	/* the owner's disconnect frees the stream */
	control_ipc_disconnected(&ctl, 2);
	ck_assert_uint_eq(ctl.export_conn, 0);
	ck_assert_int_eq(subscribe(3, true, err, sizeof(err)), 0);
	ck_assert_uint_eq(ctl.export_conn, 3);
}
END_TEST

/* ------------------------------------------------------ VIP ownership */

#define CONF_HEAD \
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n" \
	"node = { id = 1; address = \"198.18.0.10\"; address6 = \"2001:db8::10\"; };\n" \
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
#define VIP_WEB \
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";" \
	"    encap = \"gre\"; table_size = 101;" \
	"    backends = ( { address = \"198.18.2.1\"; } ); }"
#define VIP_DNS6 \
	"  { name = \"dns6\"; address = \"2001:db8:1::1\"; port = 53;" \
	"    protocol = \"udp\"; encap = \"ipip\"; table_size = 101;" \
	"    backends = ( { address = \"2001:db8:2::1\"; } ); }"
#define CONF CONF_HEAD "vips = (\n" VIP_WEB ",\n" VIP_DNS6 "\n);\n"
#define CONF_WEB CONF_HEAD "vips = (\n" VIP_WEB "\n);\n"

static const uint8_t web_addr[4] = { 198, 18, 1, 1 };
static const uint8_t dns6_addr[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 1 };

/* What the EAL gives once for the whole suite. */
static struct rte_mempool *pool;
static struct rte_ring *tx;
static struct rte_rcu_qsbr *rcu;

static struct dp_shared shared;
static struct worker worker0;
static struct state_ctx *sctx;
static const uint64_t t0 = 1000000;     /* ms: any time will do */

/* A control thread, not running, with the state of conf published; room
 * for max_dests destination ids. */
static void
setup_with_dests(const char *conf, uint32_t max_dests)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct state_port port = { .mac = { 0x02, 0xaa, 0, 0, 0, 1 }, .mtu = 1500 };
	struct dp_state *s;

	memset(&ctl, 0, sizeof(ctl));
	memset(&shared, 0, sizeof(shared));
	memset(&worker0, 0, sizeof(worker0));
	ctl.cfg = config_load_string(conf, "t.conf", err, sizeof(err));
	ck_assert_msg(ctl.cfg != NULL, "config refused: %s", err);
	sctx = state_ctx_create(max_dests, &port);
	ck_assert_ptr_nonnull(sctx);
	s = state_build(sctx, ctl.cfg, NULL, err, sizeof(err));
	ck_assert_msg(s != NULL, "state refused: %s", err);
	memcpy(shared.port.mac, port.mac, 6);
	shared.rcu = rcu;
	worker0.tx_ring = tx;
	ctl.sh = &shared;
	ctl.sctx = sctx;
	ctl.p.pool = pool;
	ctl.p.workers = &worker0;
	ctl.p.n_workers = 1;
	control_publish(&ctl, s);
}

static void
setup_with(const char *conf)
{
	setup_with_dests(conf, 64);
}

static void
ownership_setup(void)
{
	setup_with(CONF);
}

static void
ownership_teardown(void)
{
	struct rte_mbuf *m;

	while (rte_ring_dequeue(tx, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	for (unsigned i = 0; i < ctl.n_retired; i++)
		state_free(ctl.retired[i].state);
	state_free(shared.state);
	state_ctx_destroy(sctx);
	config_free(ctl.cfg);
}

/* OWNERSHIP_SET of one VIP at now; the handler's rc. */
static int
own(const char *vip, bool owned, bool announce, uint32_t lease_ms, uint64_t now)
{
	struct wire_ctl_ownership_entry e = { .owned = owned };
	struct wire_ctl_ownership o = { .vips = &e, .count = 1, .announce = announce,
					.lease_ms = lease_ms };
	char err[WIRE_TEXT_MAX] = "";

	snprintf(e.vip, sizeof(e.vip), "%s", vip);
	return control_ownership_set(&ctl, &o, now, err, sizeof(err));
}

static bool
owned(const char *vip)
{
	const struct dp_state *s = control_state(&ctl);
	int i = state_vip_find(s, vip);

	ck_assert_int_ge(i, 0);
	return s->vips[i].owned;
}

/*
 * The frames queued since the last call, taken off the TX ring: each must
 * announce web (a gratuitous ARP) or dns6 (an unsolicited NA); their counts
 * go to *web and *dns6.
 */
static void
sent(unsigned *web, unsigned *dns6)
{
	struct rte_mbuf *m;

	*web = *dns6 = 0;
	while (rte_ring_dequeue(tx, (void **)&m) == 0) {
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

		if (type == 0x0806 && rte_pktmbuf_data_len(m) >= 42 &&
		    memcmp(f + 38, web_addr, 4) == 0)
			(*web)++;
		else if (type == 0x86dd && rte_pktmbuf_data_len(m) >= 78 && f[54] == 136 &&
			 memcmp(f + 62, dns6_addr, 16) == 0)
			(*dns6)++;
		else
			ck_abort_msg("a frame that announces neither VIP");
		rte_pktmbuf_free(m);
	}
}

/* Announcements of web only since the last call. */
static unsigned
sent_web(void)
{
	unsigned web, dns6;

	sent(&web, &dns6);
	ck_assert_uint_eq(dns6, 0);
	return web;
}

START_TEST(test_lease_ends)
{
	ck_assert_int_eq(own("web", true, false, 1000, t0), 0);
	ck_assert(owned("web"));
	control_ownership_due(&ctl, t0 + 999);
	ck_assert(owned("web"));
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 0);
	control_ownership_due(&ctl, t0 + 1000);
	ck_assert(!owned("web"));
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 1);
	ck_assert_uint_eq(ctl.n_timers, 0);
	/* ended once: counted once */
	control_ownership_due(&ctl, t0 + 5000);
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 1);
	ck_assert_uint_eq(sent_web(), 0);
	ck_assert(!owned("dns6"));
}
END_TEST

/* A renewal before the deadline moves it, and makes no new state. */
START_TEST(test_lease_renewed)
{
	uint64_t states;

	ck_assert_int_eq(own("web", true, false, 1000, t0), 0);
	states = ctl.counters[CONTROL_STATES];
	ck_assert_int_eq(own("web", true, false, 1000, t0 + 900), 0);
	ck_assert_uint_eq(ctl.counters[CONTROL_STATES], states);
	control_ownership_due(&ctl, t0 + 1000);
	control_ownership_due(&ctl, t0 + 1899);
	ck_assert(owned("web"));
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 0);
	control_ownership_due(&ctl, t0 + 1900);
	ck_assert(!owned("web"));
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 1);
}
END_TEST

/* Lease 0 never ends, and clears a lease taken before. */
START_TEST(test_lease_zero)
{
	ck_assert_int_eq(own("web", true, false, 0, t0), 0);
	ck_assert_int_eq(own("dns6", true, false, 1000, t0), 0);
	ck_assert_int_eq(own("dns6", true, false, 0, t0 + 500), 0);
	ck_assert_uint_eq(ctl.n_timers, 0);
	control_ownership_due(&ctl, t0 + 1000);
	control_ownership_due(&ctl, t0 + 86400000ull * 365);
	ck_assert(owned("web"));
	ck_assert(owned("dns6"));
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 0);
}
END_TEST

/* Disowned: at once, and its lease with it (nothing ends later). */
START_TEST(test_disown_drops_lease)
{
	ck_assert_int_eq(own("web", true, false, 1000, t0), 0);
	ck_assert_int_eq(own("web", false, false, 0, t0 + 10), 0);
	ck_assert(!owned("web"));
	ck_assert_uint_eq(ctl.n_timers, 0);
	control_ownership_due(&ctl, t0 + 2000);
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 0);
	/* taken again without a lease: the old deadline does not come back */
	ck_assert_int_eq(own("web", true, false, 0, t0 + 20), 0);
	control_ownership_due(&ctl, t0 + 2000);
	ck_assert(owned("web"));
}
END_TEST

/* OWNERSHIP_SET with serving and no VIP (active-active): serving holds for
 * the lease, a renewal moves its end, an ending is counted once, and a set
 * without serving ends it at once. */
START_TEST(test_serving_lease)
{
	struct wire_ctl_ownership o = { .serving = true, .lease_ms = 1000 };
	char err[WIRE_TEXT_MAX];

	ck_assert(!control_serving(&ctl));
	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0, err, sizeof(err)), 0);
	ck_assert(control_serving(&ctl));
	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0 + 600, err, sizeof(err)), 0);
	control_ownership_due(&ctl, t0 + 1599);
	ck_assert(control_serving(&ctl));
	control_ownership_due(&ctl, t0 + 1600);
	ck_assert(!control_serving(&ctl));
	control_ownership_due(&ctl, t0 + 9000);
	ck_assert_uint_eq(ctl.counters[CONTROL_SERVING_EXPIRED], 1);
	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0 + 9000, err, sizeof(err)), 0);
	o.serving = false;
	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0 + 9100, err, sizeof(err)), 0);
	ck_assert(!control_serving(&ctl));
	ck_assert_uint_eq(ctl.counters[CONTROL_SERVING_EXPIRED], 1);
	/* lease 0: serving until told otherwise */
	o = (struct wire_ctl_ownership){ .serving = true };
	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0, err, sizeof(err)), 0);
	control_ownership_due(&ctl, t0 + 86400000ull * 365);
	ck_assert(control_serving(&ctl));
	ck_assert_uint_eq(sent_web(), 0);
}
END_TEST

/* At once, then +100, +200, +400 and +800 ms: 5 for each VIP taken. */
START_TEST(test_announce_five)
{
	static const uint64_t at[] = { 99, 100, 199, 200, 399, 400, 799, 800, 5000 };
	static const unsigned want[] = { 0, 1, 0, 1, 0, 1, 0, 1, 0 };
	struct wire_ctl_ownership_entry e[2] = { { "web", true }, { "dns6", true } };
	struct wire_ctl_ownership o = { .vips = e, .count = 2, .announce = true };
	char err[WIRE_TEXT_MAX];
	unsigned web, dns6;

	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0, err, sizeof(err)), 0);
	sent(&web, &dns6);
	ck_assert_uint_eq(web, 1);
	ck_assert_uint_eq(dns6, 1);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		control_ownership_due(&ctl, t0 + at[i]);
		sent(&web, &dns6);
		ck_assert_msg(web == want[i] && dns6 == want[i],
			      "at +%llu ms: %u and %u sent, want %u",
			      (unsigned long long)at[i], web, dns6, want[i]);
	}
	ck_assert_uint_eq(ctl.counters[CONTROL_ANNOUNCES], 10);
	ck_assert_uint_eq(ctl.n_timers, 0);
}
END_TEST

/* A late tick sends one, and the gaps after it keep their length. */
START_TEST(test_announce_late_tick)
{
	ck_assert_int_eq(own("web", true, true, 0, t0), 0);
	control_ownership_due(&ctl, t0 + 450);
	ck_assert_uint_eq(sent_web(), 2);
	control_ownership_due(&ctl, t0 + 549);
	ck_assert_uint_eq(sent_web(), 0);
	control_ownership_due(&ctl, t0 + 550);
	ck_assert_uint_eq(sent_web(), 1);
	control_ownership_due(&ctl, t0 + 749);
	ck_assert_uint_eq(sent_web(), 0);
	control_ownership_due(&ctl, t0 + 750);
	control_ownership_due(&ctl, t0 + 1150);
	control_ownership_due(&ctl, t0 + 9000);
	ck_assert_uint_eq(sent_web(), 2);
	ck_assert_uint_eq(ctl.counters[CONTROL_ANNOUNCES], 5);
}
END_TEST

/* The ticks of every millisecond from t0 + from to t0 + to. */
static void
ticks(uint64_t from, uint64_t to)
{
	for (uint64_t now = t0 + from; now <= t0 + to; now++)
		control_ownership_due(&ctl, now);
}

/* A disown before the repeats cancels the rest. */
START_TEST(test_announce_cancelled)
{
	ck_assert_int_eq(own("web", true, true, 0, t0), 0);
	control_ownership_due(&ctl, t0 + 100);
	ck_assert_uint_eq(sent_web(), 2);
	ck_assert_int_eq(own("web", false, false, 0, t0 + 150), 0);
	control_ownership_due(&ctl, t0 + 200);
	control_ownership_due(&ctl, t0 + 5000);
	ck_assert_uint_eq(sent_web(), 0);
	ck_assert_uint_eq(ctl.counters[CONTROL_ANNOUNCES], 2);
}
END_TEST

/* Renewed without announce: nothing sent; with announce: a new series. */
START_TEST(test_renewal_not_announced)
{
	ck_assert_int_eq(own("web", true, true, 3000, t0), 0);
	ticks(0, 999);
	ck_assert_uint_eq(sent_web(), 5);
	ck_assert_int_eq(own("web", true, false, 3000, t0 + 1000), 0);
	ck_assert_uint_eq(sent_web(), 0);
	ck_assert_int_eq(own("web", true, true, 3000, t0 + 1000), 0);
	ck_assert_uint_eq(sent_web(), 1);
	ticks(1000, 3000);
	ck_assert_uint_eq(sent_web(), 4);
	ck_assert_uint_eq(ctl.counters[CONTROL_ANNOUNCES], 10);
	ck_assert(owned("web"));
}
END_TEST

/* One unknown name refuses the whole request: nothing taken, no timer. */
START_TEST(test_unknown_vip_refused)
{
	struct wire_ctl_ownership_entry e[2] = { { "web", true }, { "nosuch", true } };
	struct wire_ctl_ownership o = { .vips = e, .count = 2, .announce = true,
					.lease_ms = 1000 };
	char err[WIRE_TEXT_MAX] = "";

	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "no vip 'nosuch'");
	ck_assert(!owned("web"));
	ck_assert_uint_eq(ctl.n_timers, 0);
	ck_assert_uint_eq(sent_web(), 0);
}
END_TEST

/* A reload that removes a leased VIP forgets its lease. */
START_TEST(test_reload_forgets_removed_vip)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg;
	struct dp_state *s;

	ck_assert_int_eq(own("web", true, false, 1000, t0), 0);
	ck_assert_int_eq(own("dns6", true, false, 1000, t0), 0);
	cfg = config_load_string(CONF_WEB, "t.conf", err, sizeof(err));
	ck_assert_msg(cfg != NULL, "%s", err);
	s = state_build(sctx, cfg, control_state(&ctl), err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	control_publish(&ctl, s);
	control_ownership_reloaded(&ctl);
	ck_assert_uint_eq(ctl.n_timers, 1);
	ck_assert_str_eq(ctl.timers[0].vip, "web");
	control_ownership_due(&ctl, t0 + 1000);
	ck_assert_uint_eq(ctl.counters[CONTROL_LEASE_EXPIRED], 1);
	ck_assert(!owned("web"));
	config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------- BFD */

#define BFD_PEERS(peers) "bfd = { peers = ( " peers " ); interval_ms = 100; multiplier = 3; };\n"
#define CONF_BFD CONF_HEAD BFD_PEERS("\"198.18.0.1\"") "vips = (\n" VIP_WEB "\n);\n"

static const uint8_t node4[16] = { 198, 18, 0, 10 };
static const uint8_t router4[16] = { 198, 18, 0, 1 };
static const uint8_t router_mac[6] = { 0x02, 0xbb, 0, 0, 0, 1 };
static uint64_t bfd_t0;                 /* us: the sessions' start */

/* CONF_BFD's control thread with its sessions; the router's MAC known. */
static void
bfd_setup(void)
{
	setup_with(CONF_BFD);
	shared.tsc_per_ms = rte_get_tsc_hz() / 1000;
	memcpy(shared.node.addr[0], node4, 4);
	shared.node.has_addr[0] = true;
	ctl.neigh = neigh_create(64, NULL);
	ck_assert_ptr_nonnull(ctl.neigh);
	ck_assert_int_eq(control_bfd_start(&ctl), 0);
	ck_assert_ptr_nonnull(ctl.bfd_sessions);
	bfd_t0 = control_clock_us(&ctl);
	ck_assert_int_ge(neigh_update(ctl.neigh, FLOW_FAMILY_IPV4, router4, router_mac,
				      t0), 0);
}

static void
bfd_teardown(void)
{
	control_bfd_stop(&ctl);
	neigh_destroy(ctl.neigh);
	ownership_teardown();
}

enum router_fault { CLEAN, TTL_254, BAD_CHECKSUM, TO_OTHER };

/* The router's control packet p, as a frame to this node, into the
 * control thread at now_us; control_bfd_input()'s answer. */
static bool
router_sends(const struct bfd_packet *p, enum router_fault fault, uint64_t now_us)
{
	static const uint8_t other4[16] = { 198, 18, 0, 99 };
	uint8_t payload[BFD_PACKET_MAX], frame[128];
	struct reply_udp u = {
		.src_mac = router_mac, .dst_mac = shared.port.mac, .family = 4,
		.ttl = fault == TTL_254 ? 254 : BFD_TTL, .src = router4,
		.dst = fault == TO_OTHER ? other4 : node4, .sport = 50000, .dport = BFD_PORT,
		.payload = payload,
	};
	enum dp_drop why;
	struct pkt_meta m;
	size_t len;

	u.len = (uint16_t)bfd_packet_build(payload, p, NULL);
	len = reply_udp(frame, sizeof(frame), &u);
	ck_assert_uint_ne(len, 0);
	if (fault == BAD_CHECKSUM)
		frame[14 + 20 + 8 + 4] ^= 0x01;
	ck_assert(pkt_parse(frame, (uint32_t)len, &m, &why));
	return control_bfd_input(&ctl, frame, (uint32_t)len, &m, now_us);
}

/* The router's packet in state st to our session (your_discr, 0: none). */
static struct bfd_packet
router_packet(enum bfd_state st, uint32_t your_discr)
{
	return (struct bfd_packet){
		.state = st, .detect_mult = 3, .my_discr = 0x5eed, .your_discr = your_discr,
		.desired_min_tx_us = 100000, .required_min_rx_us = 100000,
	};
}

/*
 * The control packets queued since the last call, taken off the TX ring:
 * each from node4 to the router's 3784, TTL 255, from a port in RFC
 * 5881's range, to the router's MAC. The last one into *last; the count.
 */
static unsigned
bfd_sent(struct bfd_packet *last)
{
	struct rte_mbuf *mb;
	unsigned n = 0;

	while (rte_ring_dequeue(tx, (void **)&mb) == 0) {
		const uint8_t *f = rte_pktmbuf_mtod(mb, const uint8_t *);
		struct pkt_meta m;
		enum dp_drop why, bfd_why;

		ck_assert(pkt_parse(f, rte_pktmbuf_data_len(mb), &m, &why));
		ck_assert(memcmp(f, router_mac, 6) == 0);
		ck_assert(m.key.proto == IPPROTO_UDP && m.key.vip_port == BFD_PORT);
		ck_assert(memcmp(m.key.vip, router4, 4) == 0);
		ck_assert(memcmp(m.key.client, node4, 4) == 0);
		ck_assert_uint_ge(m.key.client_port, BFD_SOURCE_PORT_MIN);
		ck_assert_uint_eq(m.ttl, BFD_TTL);
		ck_assert(reply_udp_csum_ok(f + m.l2_len, f + m.l4_off, 4));
		ck_assert(bfd_packet_parse(f + m.l4_off + 8, m.ip_len - 20u - 8u, last,
					   (enum bfd_drop *)&bfd_why));
		rte_pktmbuf_free(mb);
		n++;
	}
	return n;
}

static enum bfd_state
session_state(void)
{
	struct bfd_session_status st;

	ck_assert_int_eq(bfd_session_status(ctl.bfd_sessions, 0, &st), 0);
	return (enum bfd_state)st.state;
}

static void
serve(bool on)
{
	struct wire_ctl_ownership o = { .serving = on, .lease_ms = 1000 };
	char err[WIRE_TEXT_MAX];

	ck_assert_int_eq(control_ownership_set(&ctl, &o, t0, err, sizeof(err)), 0);
}

/* Up only while serving: the router's Init is answered with Down, diag
 * Concatenated Path Down, until syncd says serve; then Up at once; and
 * Down again at once when serving ends. */
START_TEST(test_bfd_up_only_serving)
{
	struct bfd_packet out, init;
	uint32_t ours;

	control_bfd_tick(&ctl, bfd_t0);
	ck_assert_uint_ge(bfd_sent(&out), 1);
	ck_assert_uint_eq(out.state, BFD_STATE_DOWN);
	ours = out.my_discr;
	ck_assert_uint_ne(ours, 0);
	init = router_packet(BFD_STATE_INIT, ours);
	ck_assert(router_sends(&init, CLEAN, bfd_t0 + 1000));
	ck_assert_uint_eq(ctl.counters[CONTROL_BFD_ACCEPTED], 1);
	control_bfd_tick(&ctl, bfd_t0 + 2000);
	ck_assert_int_eq(session_state(), BFD_STATE_DOWN);
	bfd_sent(&out);
	serve(true);
	control_bfd_tick(&ctl, bfd_t0 + 3000);
	ck_assert_int_eq(session_state(), BFD_STATE_UP);
	ck_assert_uint_ge(bfd_sent(&out), 1);
	ck_assert_uint_eq(out.state, BFD_STATE_UP);
	ck_assert_uint_eq(ctl.counters[CONTROL_BFD_UPS], 1);
	serve(false);
	control_bfd_tick(&ctl, bfd_t0 + 4000);
	ck_assert_int_eq(session_state(), BFD_STATE_DOWN);
	ck_assert_uint_ge(bfd_sent(&out), 1);
	ck_assert_uint_eq(out.state, BFD_STATE_DOWN);
	ck_assert_uint_eq(out.diag, BFD_DIAG_CONCAT_PATH_DOWN);
	ck_assert_uint_eq(ctl.counters[CONTROL_BFD_DOWNS], 1);
}
END_TEST

/* Bad frames are counted where they fail, and change no session. */
START_TEST(test_bfd_bad_frames)
{
	struct bfd_packet init = router_packet(BFD_STATE_INIT, 0);
	uint64_t drops[BFD_DROP_MAX];

	ck_assert(router_sends(&init, TTL_254, bfd_t0));
	ck_assert(router_sends(&init, BAD_CHECKSUM, bfd_t0));
	ck_assert(!router_sends(&init, TO_OTHER, bfd_t0));
	control_bfd_drops(&ctl, drops);
	ck_assert_uint_eq(drops[BFD_DROP_BAD_TTL], 1);
	ck_assert_uint_eq(ctl.counters[CONTROL_BFD_BAD_UDP], 1);
	ck_assert_uint_eq(ctl.counters[CONTROL_BFD_ACCEPTED], 0);
	ck_assert_int_eq(session_state(), BFD_STATE_DOWN);
}
END_TEST

/* A reload with other intervals keeps the sessions; other peers make new
 * ones, and the drop counters go on. */
START_TEST(test_bfd_reload)
{
	struct bfd_packet init = router_packet(BFD_STATE_INIT, 0);
	char err[CONFIG_ERROR_MAX];
	struct config *cfg;
	struct bfd *before = ctl.bfd_sessions;
	uint64_t drops[BFD_DROP_MAX];

	ck_assert(router_sends(&init, TTL_254, bfd_t0));
	cfg = config_load_string(CONF_HEAD "bfd = { peers = ( \"198.18.0.1\" ); "
				 "interval_ms = 200; multiplier = 3; };\nvips = (\n" VIP_WEB
				 "\n);\n", "t.conf", err, sizeof(err));
	ck_assert_msg(cfg != NULL, "%s", err);
	ck_assert_int_eq(control_bfd_reload(&ctl, cfg), 0);
	ck_assert_ptr_eq(ctl.bfd_sessions, before);
	ck_assert_uint_eq(ctl.bfd.interval_ms, 200);
	config_free(cfg);
	cfg = config_load_string(CONF_HEAD BFD_PEERS("\"198.18.0.1\", \"2001:db8::1\"")
				 "vips = (\n" VIP_WEB "\n);\n", "t.conf", err, sizeof(err));
	ck_assert_msg(cfg != NULL, "%s", err);
	ck_assert_int_eq(control_bfd_reload(&ctl, cfg), 0);
	ck_assert_uint_eq(bfd_sessions(ctl.bfd_sessions), 2);
	config_free(cfg);
	control_bfd_drops(&ctl, drops);
	ck_assert_uint_eq(drops[BFD_DROP_BAD_TTL], 1);
}
END_TEST

/* No bfd section: no sessions, and BFD to this node is counted. */
START_TEST(test_bfd_none)
{
	struct bfd_packet init = router_packet(BFD_STATE_INIT, 0);

	control_bfd_stop(&ctl);
	ctl.cfg->bfd.n_peers = 0;
	ck_assert_int_eq(control_bfd_start(&ctl), 0);
	ck_assert_ptr_null(ctl.bfd_sessions);
	ck_assert(router_sends(&init, CLEAN, bfd_t0));
	ck_assert_uint_eq(ctl.counters[CONTROL_BFD_NO_SESSION], 1);
	control_bfd_tick(&ctl, bfd_t0 + 1000000);
	ck_assert_uint_eq(bfd_sent(&init), 0);
}
END_TEST

/* ------------------------------------------------------------ VIP list */

enum { LIST_VIPS = 3, LIST_BACKENDS = 1500, LIST_TABLE = 15013 /* prime */ };

static char *list_conf;

/* Three VIPs of LIST_BACKENDS backends: two fit a page, the third does not. */
static void
list_setup(void)
{
	size_t len = 1 << 20, n;
	char *c = malloc(len);

	ck_assert_ptr_nonnull(c);
	n = (size_t)snprintf(c, len, "%svips = (\n", CONF_HEAD);
	for (int v = 0; v < LIST_VIPS; v++) {
		n += (size_t)snprintf(c + n, len - n,
				      "%s{ name = \"v%d\"; address = \"198.18.1.%d\"; port = 80;"
				      " protocol = \"tcp\"; encap = \"gre\"; table_size = %d;"
				      " backends = (", v ? "," : "", v, v + 1, LIST_TABLE);
		for (int b = 0; b < LIST_BACKENDS; b++)
			n += (size_t)snprintf(c + n, len - n, "%s{ address = \"198.19.%d.%d\"; }",
					      b ? "," : "", v * 8 + b / 250, b % 250 + 1);
		n += (size_t)snprintf(c + n, len - n, "); }\n");
	}
	snprintf(c + n, len - n, ");\n");
	list_conf = c;
	setup_with_dests(list_conf, LIST_VIPS * LIST_BACKENDS + 64);
	worker0.dest_counters = calloc(LIST_VIPS * LIST_BACKENDS + 64,
				       sizeof(*worker0.dest_counters));
	ck_assert_ptr_nonnull(worker0.dest_counters);
}

static void
list_teardown(void)
{
	free(worker0.dest_counters);
	ownership_teardown();
	free(list_conf);
}

/* One VIP_LIST page from cursor, its response in *resp. */
static void
list_page(uint32_t cursor, bool backends, bool stats, struct wire_ctl_msg *resp)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_VIP_LIST_REQUEST };
	char err[WIRE_TEXT_MAX] = "";

	req.vip_list_request.backends = backends;
	req.vip_list_request.stats = stats;
	req.vip_list_request.cursor = cursor;
	memset(resp, 0, sizeof(*resp));
	ck_assert_int_eq(control_ipc_request(&ctl, 1, &req, resp, err, sizeof(err)), 0);
	ck_assert_int_eq(resp->kind, WIRE_CTL_VIP_LIST_RESPONSE);
}

START_TEST(test_vip_list_pages)
{
	const struct dp_state *s = control_state(&ctl);
	struct wire_ctl_msg r;
	uint32_t id;

	/* traffic of v2's 8th backend, as a worker counts it */
	id = s->vips[2].dests[7];
	worker0.dest_counters[id][FWD_DEST_PACKETS] = 11;
	worker0.dest_counters[id][FWD_DEST_BYTES] = 2200;
	worker0.dest_counters[id][FWD_DEST_NEW] = 3;
	worker0.dest_counters[id][FWD_DEST_FLOWS] = 2;
	worker0.dest_counters[id][FWD_DEST_UNTRACKED] = 1;

	list_page(0, true, true, &r);
	ck_assert_uint_eq(r.vip_list.n_vips, 2);          /* v2 would pass the bound */
	ck_assert_uint_eq(r.vip_list.n_backends, 2 * LIST_BACKENDS);
	ck_assert_uint_eq(r.vip_list.next_cursor, 2);
	ck_assert_str_eq(r.vip_list.vips[1].name, "v1");
	wire_ctl_msg_free(&r);

	list_page(2, true, true, &r);
	ck_assert_uint_eq(r.vip_list.n_vips, 1);
	ck_assert_uint_eq(r.vip_list.next_cursor, 0);     /* complete */
	ck_assert_str_eq(r.vip_list.vips[0].name, "v2");
	ck_assert_uint_eq(r.vip_list.vips[0].table_size, LIST_TABLE);
	ck_assert_uint_eq(r.vip_list.vips[0].traffic.packets, 11);
	ck_assert_uint_eq(r.vip_list.vips[0].traffic.bytes, 2200);
	ck_assert_uint_eq(r.vip_list.vips[0].flows, 2);
	ck_assert_uint_eq(r.vip_list.backends[7].traffic.new_flows, 3);
	ck_assert_uint_eq(r.vip_list.backends[7].traffic.untracked, 1);
	ck_assert_uint_eq(r.vip_list.backends[7].flows, 2);
	ck_assert_uint_eq(r.vip_list.backends[6].traffic.packets, 0);
	/* the shares: every slot held by one backend, each near M / n */
	uint64_t slots = 0;
	for (size_t b = 0; b < r.vip_list.n_backends; b++) {
		ck_assert_uint_ge(r.vip_list.backends[b].maglev_slots, LIST_TABLE / LIST_BACKENDS - 2);
		ck_assert_uint_le(r.vip_list.backends[b].maglev_slots, LIST_TABLE / LIST_BACKENDS + 2);
		slots += r.vip_list.backends[b].maglev_slots;
	}
	ck_assert_uint_eq(slots, LIST_TABLE);
	wire_ctl_msg_free(&r);

	/* without stats, no traffic; without backends, none listed */
	list_page(2, false, false, &r);
	ck_assert_uint_eq(r.vip_list.n_backends, 0);
	ck_assert_uint_eq(r.vip_list.vips[0].traffic.packets, 0);
	ck_assert_uint_eq(r.vip_list.vips[0].flows, 2);   /* flows are always there */
	wire_ctl_msg_free(&r);
}
END_TEST

/* A drained backend gives its slots up; its weight and the config's differ. */
START_TEST(test_vip_list_drained_share)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_BACKEND_SET }, r;
	char err[WIRE_TEXT_MAX] = "";

	snprintf(req.backend_set.vip, sizeof(req.backend_set.vip), "v0");
	req.backend_set.family = AF_INET;
	memcpy(req.backend_set.backend, (uint8_t[]){ 198, 19, 0, 1 }, 4);
	req.backend_set.action = WIRE_BACKEND_DRAIN;
	ck_assert_int_eq(control_ipc_request(&ctl, 1, &req, &r, err, sizeof(err)), 0);
	list_page(0, true, false, &r);
	ck_assert_uint_eq(r.vip_list.backends[0].maglev_slots, 0);
	ck_assert_uint_eq(r.vip_list.backends[0].weight, 0);
	ck_assert_uint_eq(r.vip_list.backends[0].config_weight, 1);
	ck_assert_uint_gt(r.vip_list.backends[1].maglev_slots, 0);
	wire_ctl_msg_free(&r);
}
END_TEST

/* A cursor past the list (a reload shrank it meanwhile) is refused. */
START_TEST(test_vip_list_bad_cursor)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_VIP_LIST_REQUEST }, r = { 0 };
	char err[WIRE_TEXT_MAX] = "";

	req.vip_list_request.cursor = LIST_VIPS + 1;
	ck_assert_int_eq(control_ipc_request(&ctl, 1, &req, &r, err, sizeof(err)), -EINVAL);
	wire_ctl_msg_free(&r);
}
END_TEST

static Suite *
control_ipc_suite(void)
{
	Suite *s = suite_create("control_ipc");
	TCase *tc = tcase_create("export");

	tcase_add_test(tc, test_one_owner);
	suite_add_tcase(s, tc);
	tc = tcase_create("leases");
	tcase_add_checked_fixture(tc, ownership_setup, ownership_teardown);
	tcase_add_test(tc, test_lease_ends);
	tcase_add_test(tc, test_lease_renewed);
	tcase_add_test(tc, test_lease_zero);
	tcase_add_test(tc, test_disown_drops_lease);
	tcase_add_test(tc, test_serving_lease);
	tcase_add_test(tc, test_unknown_vip_refused);
	tcase_add_test(tc, test_reload_forgets_removed_vip);
	suite_add_tcase(s, tc);
	tc = tcase_create("announcements");
	tcase_add_checked_fixture(tc, ownership_setup, ownership_teardown);
	tcase_add_test(tc, test_announce_five);
	tcase_add_test(tc, test_announce_late_tick);
	tcase_add_test(tc, test_announce_cancelled);
	tcase_add_test(tc, test_renewal_not_announced);
	suite_add_tcase(s, tc);
	tc = tcase_create("vip_list");
	tcase_add_checked_fixture(tc, list_setup, list_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_vip_list_pages);
	tcase_add_test(tc, test_vip_list_drained_share);
	tcase_add_test(tc, test_vip_list_bad_cursor);
	suite_add_tcase(s, tc);
	tc = tcase_create("bfd");
	tcase_add_checked_fixture(tc, bfd_setup, bfd_teardown);
	tcase_add_test(tc, test_bfd_up_only_serving);
	tcase_add_test(tc, test_bfd_bad_frames);
	tcase_add_test(tc, test_bfd_reload);
	tcase_add_test(tc, test_bfd_none);
	suite_add_tcase(s, tc);
	return s;
}

/* The EAL without hugepages, devices or shared files; a pool, a TX ring
 * and an RCU variable for the ownership tests. */
static int
eal_start(void)
{
	/* writable copies: rte_eal_init() takes char ** and may permute them */
	static char args[][48] = { "check_control_ipc", "--no-huge", "--no-pci", "--no-shconf",
				   "--no-telemetry", "-m", "64", "-l", "0", "--log-level=*:error",
				   "" };
	enum { ARGS = sizeof(args) / sizeof(args[0]) };
	char *argv[ARGS + 1];
	size_t size;

	snprintf(args[ARGS - 1], sizeof(args[0]), "--file-prefix=check_control_ipc%ld",
		 (long)getpid());
	for (int i = 0; i < ARGS; i++)
		argv[i] = args[i];
	argv[ARGS] = NULL;
	if (rte_eal_init(ARGS, argv) < 0)
		return -1;
	pool = rte_pktmbuf_pool_create("pool", 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	tx = rte_ring_create("tx", 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	size = rte_rcu_qsbr_get_memsize(1);
	rcu = rte_zmalloc("rcu", size, RTE_CACHE_LINE_SIZE);
	if (pool == NULL || tx == NULL || rcu == NULL)
		return -1;
	return rte_rcu_qsbr_init(rcu, 1);
}

int
main(void)
{
	SRunner *sr;
	int failed;

	if (eal_start() < 0) {
		fprintf(stderr, "check_control_ipc: cannot start the EAL (--no-huge)\n");
		return EXIT_FAILURE;
	}
	sr = srunner_create(control_ipc_suite());
	/* One process: the EAL's threads do not follow a fork (LeakSanitizer
	 * in a forked test warns of threads it cannot find). */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rte_ring_free(tx);
	rte_mempool_free(pool);
	rte_free(rcu);
	rte_eal_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
