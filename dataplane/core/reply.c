/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/reply.h"

#include <stdbool.h>
#include <string.h>

#include "dataplane/core/be.h"

enum {
	REPLY_ETH_LEN = 14,
	REPLY_VLAN_LEN = 4,
	REPLY_IP4_LEN = 20,
	REPLY_IP6_LEN = 40,
	REPLY_ICMP_LEN = 8,          /* ICMP / ICMPv6 error header */
	REPLY_ARP_LEN = 28,
	REPLY_ND_LEN = 32,           /* NS / NA with one link-layer option */
	REPLY_ETHERTYPE_IPV4 = 0x0800,
	REPLY_ETHERTYPE_ARP = 0x0806,
	REPLY_ETHERTYPE_VLAN = 0x8100,
	REPLY_ETHERTYPE_IPV6 = 0x86dd,
	REPLY_UDP_LEN = 8,
	REPLY_PROTO_ICMP = 1,
	REPLY_PROTO_UDP = 17,
	REPLY_PROTO_FRAG6 = 44,
	REPLY_PROTO_ICMPV6 = 58,
	REPLY_ICMP4_UNREACH = 3,
	REPLY_ICMP4_FRAG_NEEDED = 4, /* code of type 3 */
	REPLY_ICMP6_TOO_BIG = 2,
	REPLY_ND_NS = 135,
	REPLY_ND_NA = 136,
	REPLY_ND_OPT_SLLA = 1,
	REPLY_ND_OPT_TLLA = 2,
	REPLY_NA_SOLICITED = 0x40,
	REPLY_NA_OVERRIDE = 0x20,
	REPLY_ARP_REQUEST = 1,
	REPLY_ARP_REPLY = 2,
};

static const uint8_t reply_broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t reply_zero_mac[6];
static const uint8_t reply_all_nodes[16] = { 0xff, 0x02, [15] = 0x01 };
static const uint8_t reply_all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 0x01 };

/* The ICMPv6 checksum of icmp[0..len) between src and dst (RFC 8200 8.1). */
static uint16_t
reply_icmp6_csum(const uint8_t *src, const uint8_t *dst, const uint8_t *icmp,
		 uint32_t len)
{
	uint32_t sum = csum_add(0, src, 16);

	sum = csum_add(sum, dst, 16);
	sum += (len >> 16) + (len & 0xffff) + REPLY_PROTO_ICMPV6;
	return csum_fold(csum_add(sum, icmp, len));
}

/* The L2 header length of an Ethernet frame: 14, 18 with one 802.1Q tag, 0 if too short. */
static uint16_t
reply_l2_len(const uint8_t *frame, uint32_t len)
{
	if (len < REPLY_ETH_LEN)
		return 0;
	if (be16_get(frame + 12) != REPLY_ETHERTYPE_VLAN)
		return REPLY_ETH_LEN;
	return len < REPLY_ETH_LEN + REPLY_VLAN_LEN ? 0 : REPLY_ETH_LEN + REPLY_VLAN_LEN;
}

/* out's L2 header: frame's (l2_len bytes) with new MACs. */
static void
reply_l2_copy(uint8_t *out, const uint8_t *frame, uint16_t l2_len,
	      const uint8_t *dst, const uint8_t *src)
{
	memmove(out + 12, frame + 12, l2_len - 12u);
	memmove(out, dst, 6);
	memmove(out + 6, src, 6);
}

static void
reply_eth(uint8_t *out, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memcpy(out, dst, 6);
	memcpy(out + 6, src, 6);
	be16_put(out + 12, type);
}

static bool
reply_unicast4(const uint8_t *a)
{
	return a[0] != 0 && a[0] != 127 && a[0] < 224;
}

static bool
reply_unicast6(const uint8_t *a)
{
	static const uint8_t loopback[16] = { [15] = 1 };
	static const uint8_t any[16];

	return a[0] != 0xff && memcmp(a, any, 16) != 0 && memcmp(a, loopback, 16) != 0;
}

/* The original IPv4 packet's length if it may be answered, else 0. */
static uint32_t
reply_too_big_check4(const uint8_t *ip, uint32_t avail)
{
	uint32_t ihl, tot;

	if (avail < REPLY_IP4_LEN || ip[0] >> 4 != 4)
		return 0;
	ihl = (ip[0] & 0xfu) * 4;
	tot = be16_get(ip + 2);
	if (ihl < REPLY_IP4_LEN || tot < ihl || tot > avail)
		return 0;
	if (!reply_unicast4(ip + 12) || (be16_get(ip + 6) & 0x1fff) != 0)
		return 0;
	/* not about an ICMP error: only echo, timestamp, info, mask types are queries */
	if (ip[9] == REPLY_PROTO_ICMP && tot > ihl) {
		uint8_t type = ip[ihl];
		if (type == 3 || type == 4 || type == 5 || type == 11 || type == 12)
			return 0;
	}
	return tot;
}

/* The original IPv6 packet's length if it may be answered, else 0. */
static uint32_t
reply_too_big_check6(const uint8_t *ip, uint32_t avail)
{
	uint32_t tot;

	if (avail < REPLY_IP6_LEN || ip[0] >> 4 != 6)
		return 0;
	tot = REPLY_IP6_LEN + (uint32_t)be16_get(ip + 4);
	if (tot > avail || !reply_unicast6(ip + 8))
		return 0;
	if (ip[6] == REPLY_PROTO_ICMPV6 && tot > REPLY_IP6_LEN && ip[REPLY_IP6_LEN] < 128)
		return 0;
	if (ip[6] == REPLY_PROTO_FRAG6 && tot >= REPLY_IP6_LEN + 8 &&
	    (be16_get(ip + REPLY_IP6_LEN + 2) & 0xfff8) != 0)
		return 0;
	return tot;
}

/*
 * The IPv4 reply at ip. orig is the original header (saved: ip may hold it),
 * and the original packet's first body bytes are already at ip + 28.
 */
static void
reply_too_big4(uint8_t *ip, const uint8_t *orig, uint32_t body, uint16_t mtu)
{
	uint8_t *icmp = ip + REPLY_IP4_LEN;

	ip[0] = 0x45;
	ip[1] = (uint8_t)(0xc0 | (orig[1] & 0x1e));
	be16_put(ip + 2, REPLY_IP4_LEN + REPLY_ICMP_LEN + body);
	be32_put(ip + 4, 0x4000);           /* ID 0, DF */
	ip[8] = REPLY_TTL;
	ip[9] = REPLY_PROTO_ICMP;
	be16_put(ip + 10, 0);
	memcpy(ip + 12, orig + 16, 4);         /* the VIP */
	memcpy(ip + 16, orig + 12, 4);         /* the client */
	be16_put(ip + 10, csum_fold(csum_add(0, ip, REPLY_IP4_LEN)));

	icmp[0] = REPLY_ICMP4_UNREACH;
	icmp[1] = REPLY_ICMP4_FRAG_NEEDED;
	be32_put(icmp + 2, 0);
	be16_put(icmp + 6, mtu);
	be16_put(icmp + 2, csum_fold(csum_add(0, icmp, REPLY_ICMP_LEN + body)));
}

/* The IPv6 reply at ip, as reply_too_big4(); the body is at ip + 48. */
static void
reply_too_big6(uint8_t *ip, const uint8_t *orig, uint32_t body, uint16_t mtu)
{
	uint8_t *icmp = ip + REPLY_IP6_LEN;
	uint32_t len = REPLY_ICMP_LEN + body;

	be32_put(ip, 0x60000000u);
	be16_put(ip + 4, len);
	ip[6] = REPLY_PROTO_ICMPV6;
	ip[7] = REPLY_TTL;
	memcpy(ip + 8, orig + 24, 16);         /* the VIP */
	memcpy(ip + 24, orig + 8, 16);         /* the client */

	icmp[0] = REPLY_ICMP6_TOO_BIG;
	icmp[1] = 0;
	be16_put(icmp + 2, 0);
	be32_put(icmp + 4, mtu);
	be16_put(icmp + 2, reply_icmp6_csum(ip + 8, ip + 24, icmp, len));
}

size_t
reply_too_big(uint8_t *out, size_t cap, const uint8_t *frame, uint32_t frame_len,
	      uint16_t l2_len, uint8_t family, uint16_t mtu)
{
	bool v4 = family == 4;
	const uint8_t *orig = frame + l2_len;
	uint8_t mac[12], saved[REPLY_IP6_LEN];
	uint32_t tot, hdr, max, body;

	if (l2_len < REPLY_ETH_LEN || l2_len > frame_len || (family != 4 && family != 6))
		return 0;
	tot = v4 ? reply_too_big_check4(orig, frame_len - l2_len)
		 : reply_too_big_check6(orig, frame_len - l2_len);
	if (tot == 0)
		return 0;
	hdr = (v4 ? REPLY_IP4_LEN : REPLY_IP6_LEN) + REPLY_ICMP_LEN;
	max = v4 ? REPLY_ICMP4_MAX_IP : REPLY_ICMP6_MAX_IP;
	body = tot < max - hdr ? tot : max - hdr;
	if (cap < (size_t)l2_len + hdr + body)
		return 0;

	/* commit; out may be frame itself: save what is overwritten before use */
	memcpy(mac, frame, sizeof(mac));
	memcpy(saved, orig, v4 ? REPLY_IP4_LEN : REPLY_IP6_LEN);
	memmove(out + l2_len + hdr, orig, body);
	reply_l2_copy(out, frame, l2_len, mac + 6, mac);
	if (v4)
		reply_too_big4(out + l2_len, saved, body, mtu);
	else
		reply_too_big6(out + l2_len, saved, body, mtu);
	return l2_len + hdr + body;
}

uint16_t
reply_too_big_mtu(uint16_t port_mtu, uint16_t overhead, uint8_t family)
{
	uint32_t floor = family == 6 ? REPLY_MTU6_MIN : REPLY_MTU4_MIN;
	uint32_t mtu = port_mtu > overhead ? (uint32_t)port_mtu - overhead : 0;

	return (uint16_t)(mtu > floor ? mtu : floor);
}

/* An ARP packet for IPv4 over Ethernet at p; returns its length. */
static size_t
reply_arp_body(uint8_t *p, uint16_t oper, const uint8_t *sha, const uint8_t *spa,
	       const uint8_t *tha, const uint8_t *tpa)
{
	be16_put(p, 1);
	be16_put(p + 2, REPLY_ETHERTYPE_IPV4);
	p[4] = 6;
	p[5] = 4;
	be16_put(p + 6, oper);
	memmove(p + 8, sha, 6);
	memmove(p + 14, spa, 4);
	memmove(p + 18, tha, 6);
	memmove(p + 24, tpa, 4);
	return REPLY_ARP_LEN;
}

/* Zero-pad a frame of len bytes to the Ethernet minimum; cap is known to allow it. */
static size_t
reply_pad(uint8_t *out, size_t len)
{
	if (len >= REPLY_ARP_FRAME_LEN)
		return len;
	memset(out + len, 0, REPLY_ARP_FRAME_LEN - len);
	return REPLY_ARP_FRAME_LEN;
}

size_t
reply_arp(uint8_t *out, size_t cap, const uint8_t *req, uint32_t len,
	  const uint8_t our_mac[6])
{
	uint16_t l2 = reply_l2_len(req, len);
	const uint8_t *arp = req + l2;
	uint8_t sha[6], spa[4], tpa[4];
	size_t n;

	if (l2 == 0 || len < l2 + (uint32_t)REPLY_ARP_LEN ||
	    be16_get(arp - 2) != REPLY_ETHERTYPE_ARP ||
	    be16_get(arp) != 1 || be16_get(arp + 2) != REPLY_ETHERTYPE_IPV4 ||
	    arp[4] != 6 || arp[5] != 4 || be16_get(arp + 6) != REPLY_ARP_REQUEST)
		return 0;
	if (cap < (size_t)l2 + REPLY_ARP_LEN || cap < REPLY_ARP_FRAME_LEN)
		return 0;

	/* commit; out may be req */
	memcpy(sha, arp + 8, 6);
	memcpy(spa, arp + 14, 4);
	memcpy(tpa, arp + 24, 4);
	reply_l2_copy(out, req, l2, sha, our_mac);
	n = l2 + reply_arp_body(out + l2, REPLY_ARP_REPLY, our_mac, tpa, sha, spa);
	return reply_pad(out, n);
}

size_t
reply_arp_request(uint8_t *out, size_t cap, const uint8_t src_mac[6],
		  const uint8_t src_ip[4], const uint8_t target_ip[4])
{
	if (cap < REPLY_ARP_FRAME_LEN)
		return 0;
	reply_eth(out, reply_broadcast, src_mac, REPLY_ETHERTYPE_ARP);
	reply_arp_body(out + REPLY_ETH_LEN, REPLY_ARP_REQUEST, src_mac, src_ip,
		       reply_zero_mac, target_ip);
	return reply_pad(out, REPLY_ETH_LEN + REPLY_ARP_LEN);
}

size_t
reply_arp_gratuitous(uint8_t *out, size_t cap, const uint8_t mac[6],
		     const uint8_t ip[4])
{
	return reply_arp_request(out, cap, mac, ip, ip);
}

/*
 * An NS or NA with one link-layer address option at l3 (the IPv6 header;
 * the Ethernet header is the caller's). Returns the IPv6 packet's length.
 */
static size_t
reply_nd(uint8_t *l3, const uint8_t *src, const uint8_t *dst, uint8_t type,
	 uint8_t flags, const uint8_t *target, const uint8_t *mac)
{
	uint8_t *icmp = l3 + REPLY_IP6_LEN;

	be32_put(l3, 0x60000000u);
	be16_put(l3 + 4, REPLY_ND_LEN);
	l3[6] = REPLY_PROTO_ICMPV6;
	l3[7] = REPLY_ND_HOP_LIMIT;
	memmove(l3 + 8, src, 16);
	memmove(l3 + 24, dst, 16);
	icmp[0] = type;
	icmp[1] = 0;
	be16_put(icmp + 2, 0);
	be32_put(icmp + 4, (uint32_t)flags << 24);
	memmove(icmp + 8, target, 16);
	icmp[24] = type == REPLY_ND_NS ? REPLY_ND_OPT_SLLA : REPLY_ND_OPT_TLLA;
	icmp[25] = 1;                          /* in units of 8 bytes */
	memmove(icmp + 26, mac, 6);
	be16_put(icmp + 2, reply_icmp6_csum(l3 + 8, l3 + 24, icmp, REPLY_ND_LEN));
	return REPLY_IP6_LEN + REPLY_ND_LEN;
}

size_t
reply_nd_na(uint8_t *out, size_t cap, const uint8_t *ns, uint32_t len,
	    const uint8_t our_mac[6])
{
	static const uint8_t any[16];
	uint16_t l2 = reply_l2_len(ns, len);
	const uint8_t *ip = ns + l2, *icmp = ip + REPLY_IP6_LEN;
	uint8_t src[16], target[16], eth_dst[6], flags;
	bool dad;

	if (l2 == 0 || len < l2 + (uint32_t)REPLY_IP6_LEN + 24 ||
	    be16_get(ip - 2) != REPLY_ETHERTYPE_IPV6 || ip[0] >> 4 != 6 ||
	    ip[6] != REPLY_PROTO_ICMPV6 || ip[7] != REPLY_ND_HOP_LIMIT ||
	    be16_get(ip + 4) < 24 ||
	    REPLY_IP6_LEN + (uint32_t)be16_get(ip + 4) > len - l2 ||
	    icmp[0] != REPLY_ND_NS || icmp[1] != 0 || icmp[8] == 0xff)
		return 0;
	if (cap < (size_t)l2 + REPLY_IP6_LEN + REPLY_ND_LEN)
		return 0;

	/* commit; out may be ns */
	dad = memcmp(ip + 8, any, 16) == 0;
	memcpy(src, dad ? reply_all_nodes : ip + 8, 16);
	memcpy(target, icmp + 8, 16);
	memcpy(eth_dst, dad ? reply_all_nodes_mac : ns + 6, 6);
	flags = REPLY_NA_OVERRIDE | (dad ? 0 : REPLY_NA_SOLICITED);
	reply_l2_copy(out, ns, l2, eth_dst, our_mac);
	return l2 + reply_nd(out + l2, target, src, REPLY_ND_NA, flags, target, our_mac);
}

size_t
reply_nd_ns(uint8_t *out, size_t cap, const uint8_t src_mac[6],
	    const uint8_t src_ip[16], const uint8_t target[16])
{
	uint8_t dst[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	uint8_t mac[6] = { 0x33, 0x33, 0xff };

	if (cap < REPLY_ND_FRAME_LEN)
		return 0;
	memcpy(dst + 13, target + 13, 3);
	memcpy(mac + 3, target + 13, 3);
	reply_eth(out, mac, src_mac, REPLY_ETHERTYPE_IPV6);
	return REPLY_ETH_LEN + reply_nd(out + REPLY_ETH_LEN, src_ip, dst, REPLY_ND_NS,
				       0, target, src_mac);
}

size_t
reply_nd_unsolicited_na(uint8_t *out, size_t cap, const uint8_t mac[6],
			const uint8_t addr[16])
{
	if (cap < REPLY_ND_FRAME_LEN)
		return 0;
	reply_eth(out, reply_all_nodes_mac, mac, REPLY_ETHERTYPE_IPV6);
	return REPLY_ETH_LEN + reply_nd(out + REPLY_ETH_LEN, addr, reply_all_nodes,
				       REPLY_ND_NA, REPLY_NA_OVERRIDE, addr, mac);
}

/* The pseudo-header sum of an upper-layer packet of len bytes (RFC 768, RFC 8200 8.1). */
static uint32_t
reply_pseudo_sum(const uint8_t *src, const uint8_t *dst, uint8_t alen, uint32_t len,
		 uint8_t proto)
{
	uint32_t sum = csum_add(csum_add(0, src, alen), dst, alen);

	return sum + (len >> 16) + (len & 0xffff) + proto;
}

size_t
reply_udp(uint8_t *out, size_t cap, const struct reply_udp *u)
{
	bool v4 = u->family == 4;
	uint8_t alen = v4 ? 4 : 16;
	uint32_t ip_hdr = v4 ? REPLY_IP4_LEN : REPLY_IP6_LEN;
	uint32_t udp_len = REPLY_UDP_LEN + (uint32_t)u->len;
	uint8_t *ip = out + REPLY_ETH_LEN, *udp = ip + ip_hdr;
	size_t frame = REPLY_ETH_LEN + ip_hdr + udp_len;
	uint16_t csum;

	if ((u->family != 4 && u->family != 6) || cap < frame || cap < REPLY_ARP_FRAME_LEN)
		return 0;
	reply_eth(out, u->dst_mac, u->src_mac, v4 ? REPLY_ETHERTYPE_IPV4 : REPLY_ETHERTYPE_IPV6);
	if (v4) {
		ip[0] = 0x45;
		ip[1] = u->tos;
		be16_put(ip + 2, ip_hdr + udp_len);
		be32_put(ip + 4, 0x4000);       /* ID 0, DF */
		ip[8] = u->ttl;
		ip[9] = REPLY_PROTO_UDP;
		be16_put(ip + 10, 0);
		memcpy(ip + 12, u->src, 4);
		memcpy(ip + 16, u->dst, 4);
		be16_put(ip + 10, csum_fold(csum_add(0, ip, REPLY_IP4_LEN)));
	} else {
		be32_put(ip, 0x60000000u | (uint32_t)u->tos << 20);
		be16_put(ip + 4, udp_len);
		ip[6] = REPLY_PROTO_UDP;
		ip[7] = u->ttl;
		memcpy(ip + 8, u->src, 16);
		memcpy(ip + 24, u->dst, 16);
	}
	be16_put(udp, u->sport);
	be16_put(udp + 2, u->dport);
	be16_put(udp + 4, udp_len);
	be16_put(udp + 6, 0);
	memcpy(udp + REPLY_UDP_LEN, u->payload, u->len);
	csum = csum_fold(csum_add(reply_pseudo_sum(u->src, u->dst, alen, udp_len,
						   REPLY_PROTO_UDP), udp, udp_len));
	be16_put(udp + 6, csum == 0 ? 0xffff : csum);   /* 0 would mean none */
	return reply_pad(out, frame);
}

bool
reply_udp_csum_ok(const uint8_t *ip, const uint8_t *l4, uint8_t family)
{
	bool v4 = family == 4;
	uint32_t len = be16_get(l4 + 4);
	uint32_t sum;

	if (be16_get(l4 + 6) == 0)
		return v4;
	sum = reply_pseudo_sum(ip + (v4 ? 12 : 8), ip + (v4 ? 16 : 24), v4 ? 4 : 16, len,
			       REPLY_PROTO_UDP);
	return csum_fold(csum_add(sum, l4, len)) == 0;
}
