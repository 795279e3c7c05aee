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
 * Besides "no crash, no sanitizer report", it checks what the worker relies
 * on: the inline fast parser agrees with the full one byte for byte, and so
 * does the chained one where it parses, and it refuses only as CHAINED
 * what the full one takes; a parsed packet's offsets lie inside the frame;
 * the key's pad is zero.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/core/encap.h"
#include "dataplane/core/ipfrag.h"
#include "dataplane/core/packet.h"
#include "dataplane/core/reply.h"
#include "dataplane/core/viptab.h"

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
		}
	}
	free(frame);
	return 0;
}
