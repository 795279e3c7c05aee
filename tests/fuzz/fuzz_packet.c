/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: one Ethernet frame through the dataplane's pure core, as
 * a worker and the control thread take it: the parser, then by kind the VIP
 * match, the ICMP error's MTU, the too-big reply, IPv4 fragmentation, the
 * tunnel header, the ARP and ND answers. The frame sits in a buffer of
 * exactly its size, so that AddressSanitizer sees any read past it. Frames
 * go up to a jumbo port's (FRAME_MAX); the port's MTU is 1500 or 9000, the
 * tunnel one of four, each picked by a byte of the frame (its middle one).
 *
 * A frame is parsed twice more: inline (pkt_parse_simple()), and chained as
 * a jumbo frame in several buffers (pkt_parse_head()), its first buffer
 * again of exactly its size, head bytes: the last byte of the frame times
 * 64 (0: not chained; 32: a 2 KiB buffer).
 *
 * A packet of a VIP flow then goes through the worker's decisions
 * (fwd_burst()) in three bursts, on a flow table of its own and a real
 * forwarding state, with a synced entry the frame's bytes make up (any
 * destination id, any lifetime), the backends up or one down, the insert
 * cap on or off, and times that cross the provisional window: every packet
 * goes to a destination of its own VIP that carries flows, is dropped for
 * a reason, or is BFD to this node; records for syncd go with forwarded
 * packets only, at most two a packet; the table's invariants hold, and its
 * destinations' FLOWS gauges add up to its entries.
 *
 * Besides "no crash, no sanitizer report", it checks what the worker relies
 * on: the inline fast parser agrees with the full one byte for byte, and so
 * does the chained one where it parses, and it refuses only as CHAINED
 * what the full one takes; a parsed packet's offsets lie inside the frame;
 * the key's pad is zero.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "dataplane/core/bfd.h"
#include "dataplane/core/encap.h"
#include "dataplane/core/forward.h"
#include "dataplane/core/ipfrag.h"
#include "dataplane/core/packet.h"
#include "dataplane/core/reply.h"
#include "dataplane/core/viptab.h"
#include "dataplane/state.h"

enum { FRAME_MAX = 9216 + 18, OUT_MAX = 16384, MTU = 1500, MTU_JUMBO = 9000 };

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static struct viptab *vips;
static struct encap_tunnel tunnels[4];
static const uint8_t our_mac[6] = { 0x02, 0, 0, 0, 0, 0x10 };

/* VIPs on the addresses the seeds use: exact ports, all ports, both
 * families, both protocols. */
static void
setup(void)
{
	static const uint8_t next_hop[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	struct viptab_vip v[4] = {
		{ .family = FLOW_FAMILY_IPV4, .proto = IPPROTO_TCP, .port = 80,
		  .addr = { 198, 18, 1, 1 }, .id = 0 },
		{ .family = FLOW_FAMILY_IPV4, .proto = IPPROTO_UDP, .port = 0,
		  .addr = { 198, 18, 1, 1 }, .id = 1 },
		{ .family = FLOW_FAMILY_IPV6, .proto = IPPROTO_TCP, .port = 80,
		  .addr = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 1 }, .id = 2 },
		{ .family = FLOW_FAMILY_IPV6, .proto = IPPROTO_UDP, .port = 0,
		  .addr = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 1 }, .id = 3 },
	};
	uint8_t src4[16] = { 198, 18, 0, 10 }, dst4[16] = { 198, 18, 20, 21 };
	uint8_t src6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x10 };
	uint8_t dst6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x20, [15] = 0x21 };

	vips = viptab_create(v, 4);
	CHECK(vips != NULL);
	CHECK(encap_tunnel_init(&tunnels[0], ENCAP_GRE, FLOW_FAMILY_IPV4, next_hop, our_mac,
				src4, dst4) == 0);
	CHECK(encap_tunnel_init(&tunnels[1], ENCAP_GRE, FLOW_FAMILY_IPV6, next_hop, our_mac,
				src6, dst6) == 0);
	CHECK(encap_tunnel_init(&tunnels[2], ENCAP_IPIP, FLOW_FAMILY_IPV4, next_hop, our_mac,
				src4, dst4) == 0);
	CHECK(encap_tunnel_init(&tunnels[3], ENCAP_IPIP, FLOW_FAMILY_IPV6, next_hop, our_mac,
				src6, dst6) == 0);
}

/* The same VIPs for the decisions, in a forwarding state; the node's
 * addresses are no seed's client. */
#define DECIDE_CONFIG \
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n" \
	"node = { id = 1; address = \"198.18.0.2\"; address6 = \"2001:db8::2\"; };\n" \
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n" \
	"vips = (\n" \
	" { name = \"w4\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\"; encap = \"gre\";" \
	"   table_size = 101; backends = ( { address = \"198.18.20.21\"; }," \
	"   { address = \"198.18.20.22\"; } ); },\n" \
	" { name = \"u4\"; address = \"198.18.1.1\"; port = 0; protocol = \"udp\"; encap = \"gre\";" \
	"   table_size = 101; sync_after_packets = 2; health = { type = \"none\"; };" \
	"   backends = ( { address = \"198.18.20.23\"; } ); },\n" \
	" { name = \"w6\"; address = \"2001:db8:1::1\"; port = 80; protocol = \"tcp\";" \
	"   encap = \"ipip\"; table_size = 101;" \
	"   backends = ( { address = \"2001:db8:20::21\"; } ); },\n" \
	" { name = \"u6\"; address = \"2001:db8:1::1\"; port = 0; protocol = \"udp\";" \
	"   encap = \"ipip\"; table_size = 101; health = { type = \"none\"; };" \
	"   backends = ( { address = \"2001:db8:20::22\"; } ); }\n" \
	");\n"

static struct {
	struct state_ctx *ctx;
	struct dp_state *st[2];         /* every backend up; w4's first down */
	uint64_t (*rows)[FWD_DEST_ROW];
	struct fwd_node node;
	bool peer;                      /* the synced table holds every key: */
	struct synced_value peer_value;
	struct dp_counters counters;
} dec;

static void
decide_setup(void)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg = config_load_string(DECIDE_CONFIG, "fuzz.conf", err, sizeof(err));
	struct state_port port = { .mac = { 0x02, 0, 0, 0, 0, 0x10 }, .mtu = MTU };
	int rc = 0;

	if (cfg == NULL)
		fprintf(stderr, "%s\n", err);
	CHECK(cfg != NULL);
	dec.ctx = state_ctx_create(state_dests_max(cfg), &port);
	CHECK(dec.ctx != NULL);
	dec.st[0] = state_build(dec.ctx, cfg, NULL, err, sizeof(err));
	CHECK(dec.st[0] != NULL);
	dec.st[1] = state_with_backend(dec.ctx, dec.st[0], 0, dec.st[0]->vips[0].dests[0],
				       DEST_DOWN, 1, &rc);
	CHECK(dec.st[1] != NULL);
	dec.rows = calloc(state_dests_max(cfg), sizeof(*dec.rows));
	CHECK(dec.rows != NULL);
	memcpy(dec.node.addr[0], (const uint8_t[]){ 198, 18, 0, 2 }, 4);
	memcpy(dec.node.addr[1], (const uint8_t[]){ 0x20, 0x01, 0x0d, 0xb8, [15] = 2 }, 16);
	dec.node.has_addr[0] = dec.node.has_addr[1] = true;
	config_free(cfg);
}

static uint64_t
decide_synced(void *arg, const struct flow_key *keys[], uint32_t n, uint32_t now_ms,
	      struct synced_value out[])
{
	(void)arg;
	(void)keys;
	(void)now_ms;
	if (!dec.peer)
		return 0;
	for (uint32_t j = 0; j < n; j++)
		out[j] = dec.peer_value;
	return n == 64 ? UINT64_MAX : (1ull << n) - 1;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* What fwd_burst() decided for m[0..n), all of one flow of VIP vip (-1:
 * none) under st, is what the worker may act on. */
static void
decide_check(const struct dp_state *st, const struct pkt_meta *m, uint32_t n, int64_t vip,
	     const struct fwd_out *out)
{
	unsigned per[FWD_BURST_MAX] = { 0 };

	CHECK(out->n_exports <= FWD_EXPORTS_MAX * n);
	for (uint32_t k = 0; k < out->n_exports; k++) {
		const struct fwd_export *x = &out->exports[k];

		CHECK(x->packet < n && fwd_act_forwards(out->act[x->packet]));
		CHECK(x->event < EXPORT_EVENT_MAX && x->state < FLOWTAB_STATE_MAX);
		CHECK(++per[x->packet] <= FWD_EXPORTS_MAX);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = out->act[i];

		if (fwd_act_forwards(a)) {
			CHECK(vip >= 0 && a < st->n_dests);
			CHECK(st->dests[a].vip == vip && st->dests[a].status <= DEST_DRAINING);
		} else if (a == FWD_ACT_CONTROL) {
			CHECK(vip < 0 && m[i].key.proto == IPPROTO_UDP &&
			      m[i].key.vip_port == BFD_PORT);
		} else {
			CHECK(a - FWD_ACT_DROP < DP_DROP_MAX);
		}
	}
}

/* The decisions for packet m, a flow's or a fragment's or an ICMP error's:
 * bursts of it and of variants the frame's bytes pick. */
static void
decide(const struct pkt_meta *m, const uint8_t *data, size_t size)
{
	uint8_t b0 = data[size / 3], b1 = data[2 * size / 3];
	uint32_t now = 1000 + (size >= 4 ? le32(data + size - 4) % 100000 : 0);
	struct flowtab_params p = {
		.capacity = 64, .seed = 1, .tcp_syn_ms = 5000, .tcp_established_ms = 60000,
		.tcp_closing_ms = 2000, .udp_ms = 4000, .refresh_ms = 1000,
		.insert_rate = b0 & 2 ? 1 : 0, .on_free = fwd_entry_freed,
	};
	struct fwd_ctx c = {
		.counters = &dec.counters, .node = &dec.node,
		.synced_lookup = decide_synced,
	};
	struct pkt_meta burst[3] = { *m, *m, *m };
	static struct fwd_out out;
	const struct dp_state *st;
	enum dp_drop why;
	int64_t vip;
	uint64_t flows = 0;

	if (dec.ctx == NULL)
		decide_setup();
	st = dec.st[b0 & 1];
	p.on_free_arg = c.dest = dec.rows;
	c.flows = flowtab_create(&p);
	CHECK(c.flows != NULL);
	if (m->key.proto == IPPROTO_TCP && m->kind == PKT_KIND_FLOW) {
		burst[1].tcp_flags = b1;
		burst[2].tcp_flags = (uint8_t)(b1 >> 3 | PKT_TCP_ACK);
	}
	dec.peer = b0 & 4;
	dec.peer_value.dest = b0 & 8 ? (size >= 8 ? le32(data + size - 8) : 0) : b1 % 8;
	dec.peer_value.expires_ms = now + (uint32_t)b1 * 40;
	vip = m->kind == PKT_KIND_FRAGMENT ? viptab_lookup_fragment(st->viptab, &m->key, &why)
					   : viptab_lookup(st->viptab, &m->key, &why);
	fwd_burst(&c, st, burst, 3, now, &out);
	decide_check(st, burst, 3, vip, &out);
	/* Later, past the provisional window or not; then under the other
	 * state (a backend down or up again). */
	now += (uint32_t)(b0 >> 4) * 250;
	fwd_burst(&c, st, burst + 1, 2, now, &out);
	decide_check(st, burst + 1, 2, vip, &out);
	st = dec.st[!(b0 & 1)];
	vip = m->kind == PKT_KIND_FRAGMENT ? viptab_lookup_fragment(st->viptab, &m->key, &why)
					   : viptab_lookup(st->viptab, &m->key, &why);
	fwd_burst(&c, st, burst, 3, now + 1, &out);
	decide_check(st, burst, 3, vip, &out);
	CHECK(flowtab_audit(c.flows));
	for (uint32_t d = 0; d < st->n_dests; d++)
		flows += dec.rows[d][FWD_DEST_FLOWS];
	CHECK(flows == flowtab_count(c.flows));
	flowtab_destroy(c.flows);
	memset(dec.rows, 0, st->n_dests * sizeof(*dec.rows));
}

/* What the worker does with a packet of a flow: match its VIP, then either
 * answer too-big, fragment it, or write a tunnel header before it. */
static void
forward(uint8_t *frame, uint32_t len, const struct pkt_meta *m, const uint8_t *data)
{
	static uint8_t out[OUT_MAX];
	enum dp_drop why;
	int64_t vip = m->kind == PKT_KIND_FRAGMENT ? viptab_lookup_fragment(vips, &m->key, &why)
						   : viptab_lookup(vips, &m->key, &why);
	const struct encap_tunnel *t = &tunnels[data[len / 2] & 3];
	uint16_t mtu = data[len / 2] & 4 ? MTU_JUMBO : MTU;
	uint16_t overhead = encap_overhead(t), hdr_len = (uint16_t)(ENCAP_ETH_LEN + overhead);

	CHECK(vip < 4);
	(void)pkt_icmp_mtu(frame, m);
	if (m->ip_len + overhead > mtu) {
		if (m->df) {
			size_t n = reply_too_big(out, sizeof(out), frame, len, m->l2_len, m->family,
						 reply_too_big_mtu(mtu, overhead, m->family));

			CHECK(n <= sizeof(out));
			return;
		}
		if (m->family == FLOW_FAMILY_IPV4) {
			struct ipfrag_plan plan;
			uint8_t *ip = frame + m->l2_len;
			unsigned count = ipfrag_plan(&plan, ip, m->ip_len, (uint16_t)(mtu - overhead));

			for (unsigned k = 1; k < count; k++)
				CHECK(ipfrag_write(out, sizeof(out), &plan, ip, k) ==
				      ipfrag_len(&plan, k));
			if (count >= 2)
				ipfrag_first(ip, &plan);
		}
		return;
	}
	/* The tunnel header goes where the worker puts it: over the Ethernet
	 * header and the headroom before the frame. */
	memcpy(out + hdr_len, frame + m->l2_len, m->ip_len);
	encap_write(out, t, m->family, m->ip_len, m->tos, m->df != 0, 7, 0x12345);
}

/*
 * The frame as a chain: only its first head bytes (in a buffer of their
 * own) contiguous. Where the chained parser takes it, it saw what the full
 * one saw; where it refuses what the full one takes, it is as CHAINED.
 */
static void
parse_chained(const uint8_t *data, uint32_t size, bool full_ok, const struct pkt_meta *full)
{
	uint32_t head = (uint32_t)data[size - 1] * 64;
	enum dp_drop why = DP_DROP_MAX;
	struct pkt_meta m;
	uint8_t *first;

	if (head == 0 || head >= size)
		return;
	first = malloc(head);
	CHECK(first != NULL);
	memcpy(first, data, head);
	if (pkt_parse_head(first, head, size, &m, &why)) {
		CHECK(full_ok);
		CHECK(memcmp(&m, full, sizeof(m)) == 0);
	} else {
		CHECK(why < DP_DROP_MAX);
		CHECK(!full_ok || why == DP_DROP_CHAINED);
	}
	free(first);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pkt_meta fast, full;
	enum dp_drop why = DP_DROP_MAX;
	uint8_t *frame;
	bool ok;

	if (size == 0 || size > FRAME_MAX)
		return 0;
	if (vips == NULL)
		setup();
	frame = malloc(size);
	CHECK(frame != NULL);
	memcpy(frame, data, size);

	ok = pkt_parse_full(frame, (uint32_t)size, &full, &why);
	if (pkt_parse_simple(frame, (uint32_t)size, &fast)) {
		CHECK(ok);
		CHECK(memcmp(&fast, &full, sizeof(fast)) == 0);
	}
	parse_chained(data, (uint32_t)size, ok, &full);
	if (!ok) {
		CHECK(why < DP_DROP_MAX);
		free(frame);
		return 0;
	}
	CHECK(full.l2_len == PKT_ETHER_LEN || full.l2_len == PKT_ETHER_LEN + PKT_VLAN_LEN);
	CHECK(full.kind < PKT_KIND_MAX);
	CHECK(full.key.pad[0] == 0 && full.key.pad[1] == 0);
	if (full.kind == PKT_KIND_ARP) {
		uint8_t out[64];

		CHECK(full.l2_len + PKT_ARP_LEN <= size);
		(void)reply_arp(out, sizeof(out), frame, (uint32_t)size, our_mac);
	} else {
		CHECK(full.family == FLOW_FAMILY_IPV4 || full.family == FLOW_FAMILY_IPV6);
		CHECK(full.key.family == full.family);
		CHECK((size_t)full.l2_len + full.ip_len <= size);
		CHECK(full.l3_len <= full.ip_len);
		CHECK(full.l4_off == 0 || full.l4_off >= full.l2_len + full.l3_len);
		CHECK(full.l4_off <= full.l2_len + full.ip_len);
		/* every L4 header the worker reads is whole (OTHER_L4 may have
		 * none: its ports are 0) */
		if (full.kind != PKT_KIND_FRAGMENT && full.kind != PKT_KIND_OTHER_L4)
			CHECK(full.l4_off + 8u <= full.l2_len + full.ip_len);
		if (full.kind == PKT_KIND_ND) {
			uint8_t out[128];

			(void)reply_nd_na(out, sizeof(out), frame, (uint32_t)size, our_mac);
		} else if (full.kind == PKT_KIND_FLOW || full.kind == PKT_KIND_FRAGMENT ||
			   full.kind == PKT_KIND_ICMP_ERROR) {
			forward(frame, (uint32_t)size, &full, data);
			decide(&full, data, size);
		}
	}
	free(frame);
	return 0;
}
