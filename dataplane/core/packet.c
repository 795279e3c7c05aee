/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frame parser. The wire layouts it reads (offsets in bytes):
 *
 * Ethernet   0 dst MAC | 6 src MAC | 12 ethertype | 14 ...
 *   802.1Q               12 0x8100 | 14 TCI | 16 ethertype | 18 ...
 *
 * IPv4       0 version:4 IHL:4 | 1 TOS | 2 total length | 4 id
 *            6 flags:3 (DF 0x4000, MF 0x2000) offset:13 | 8 TTL | 9 proto
 *            10 checksum | 12 source | 16 destination | 20 options, IHL * 4
 *
 * IPv6       0 version:4 class:8 label:20 | 4 payload length | 6 next header
 *            7 hop limit | 8 source | 24 destination | 40 ...
 *   extension headers (0, 43, 60): 0 next header | 1 length in 8 bytes - 1
 *   fragment header (44):          0 next header | 2 offset:13 res:2 M:1 | 4 id
 *
 * TCP        0 source port | 2 dest port | 12 data offset:4 | 13 flags
 * UDP        0 source port | 2 dest port | 4 length | 6 checksum
 * ICMP(v6)   0 type | 1 code | 2 checksum | 4 rest | 8 body (errors: the
 *            offending packet's IP header and at least 8 bytes beyond it)
 * ND NS/NA   ICMPv6 | 8 target address | 24 options
 */
#include "dataplane/core/packet.h"

#include <string.h>
#include <netinet/in.h>


/* Extension headers the IPv6 walk follows, as a bit set over next header. */
#define PKT_IPV6_EXT_SET ((1ull << 0) | (1ull << 43) | (1ull << 44) | (1ull << 60))
#define PKT_IPV6_EXT_FRAGMENT 44
#define PKT_HEAD_MIN 128u       /* a chained frame's first buffer, at least */
/* ICMPv4 errors about a packet: unreachable 3, time exceeded 11, parameter 12. */
#define PKT_ICMP4_ERROR_SET ((1u << 3) | (1u << 11) | (1u << 12))

const char *const pkt_kind_names[PKT_KIND_MAX] = {
	[PKT_KIND_FLOW] = "flow",
	[PKT_KIND_FRAGMENT] = "fragment",
	[PKT_KIND_ICMP_ERROR] = "icmp-error",
	[PKT_KIND_ICMP_OTHER] = "icmp-other",
	[PKT_KIND_ARP] = "arp",
	[PKT_KIND_ND] = "nd",
	[PKT_KIND_OTHER_L4] = "other-l4",
};

/* The IPv6 header chain as far as the walk went. */
struct pkt_ipv6_chain {
	uint32_t off;           /* past the last header walked */
	uint16_t frag;          /* a fragment header's offset and flags */
	uint8_t proto;          /* the next header after the walk */
	bool fragment;          /* stopped at a (non-atomic) fragment header */
};

static inline bool
pkt_drop(enum dp_drop *why, enum dp_drop reason)
{
	*why = reason;
	return false;
}

static inline bool
pkt_is_tcp_udp(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

/*
 * Walk the extension headers of the IPv6 packet at ip, whose first len bytes
 * (len >= 40) may be read. Stops at the first header that is no extension
 * header, or at a fragment header that is not atomic. False when a header
 * runs past len, hop-by-hop is not first, or there are more than
 * PKT_IPV6_EXT_MAX of them.
 */
static bool
pkt_ipv6_walk(const uint8_t *ip, uint32_t len, struct pkt_ipv6_chain *c)
{
	uint32_t off = PKT_IPV6_LEN;
	uint8_t next = ip[PKT_IPV6_NEXT];

	for (uint32_t n = 0; next < 64 && (PKT_IPV6_EXT_SET >> next & 1); n++) {
		uint32_t hlen = PKT_IPV6_FRAG_HDR_LEN;

		if (n == PKT_IPV6_EXT_MAX || len - off < 8 || (next == 0 && n != 0))
			return false;
		if (next == PKT_IPV6_EXT_FRAGMENT) {
			uint16_t frag = be16_get(ip + off + 2);

			if (frag & PKT_IPV6_FRAG_MASK) {
				c->off = off + PKT_IPV6_FRAG_HDR_LEN;
				c->frag = frag;
				c->proto = ip[off];
				c->fragment = true;
				return true;
			}
		} else {
			hlen = (ip[off + 1] + 1u) * 8;
			if (hlen > len - off)
				return false;
		}
		next = ip[off];
		off += hlen;
	}
	c->off = off;
	c->frag = 0;
	c->proto = next;
	c->fragment = false;
	return true;
}

/* TCP or UDP (m->key.proto) at l4, l4_len bytes to the end of the IP packet,
 * head of them readable (the rest in later buffers of a chained frame). */
static bool
pkt_parse_tcp_udp(const uint8_t *l4, uint32_t l4_len, uint32_t head, struct pkt_meta *m,
		  enum dp_drop *why)
{
	if (m->key.proto == IPPROTO_TCP) {
		uint32_t data_off;

		if (l4_len < PKT_TCP_LEN)
			return pkt_drop(why, DP_DROP_BAD_L4);
		if (head < PKT_TCP_LEN)
			return pkt_drop(why, DP_DROP_CHAINED);
		data_off = (uint32_t)(l4[PKT_TCP_DATA_OFF] >> 4) * 4;
		if (data_off < PKT_TCP_LEN || data_off > l4_len)
			return pkt_drop(why, DP_DROP_BAD_L4);
		m->tcp_flags = l4[PKT_TCP_FLAGS];
	} else {
		uint32_t udp_len;

		if (l4_len < PKT_UDP_LEN)
			return pkt_drop(why, DP_DROP_BAD_L4);
		if (head < PKT_UDP_LEN)
			return pkt_drop(why, DP_DROP_CHAINED);
		udp_len = be16_get(l4 + PKT_UDP_LENGTH);
		if (udp_len < PKT_UDP_LEN || udp_len > l4_len)
			return pkt_drop(why, DP_DROP_BAD_L4);
	}
	m->key.client_port = be16_get(l4);
	m->key.vip_port = be16_get(l4 + 2);
	m->kind = PKT_KIND_FLOW;
	return true;
}

/*
 * The key of an ICMP error from its inner packet, sent VIP -> client: the
 * VIP (inner source) already equals key.vip; the client is the inner
 * destination, the ports are swapped back.
 */
static bool
pkt_icmp_error_key(const uint8_t *client, uint32_t addr_len,
		   const uint8_t *l4, uint8_t proto, struct pkt_meta *m)
{
	memcpy(m->key.client, client, addr_len);
	m->key.vip_port = be16_get(l4);
	m->key.client_port = be16_get(l4 + 2);
	m->key.proto = proto;
	m->kind = PKT_KIND_ICMP_ERROR;
	return true;
}

/* ICMPv4 at icmp, icmp_len bytes to the end of the IP packet at ip. */
static bool
pkt_parse_icmp4(const uint8_t *ip, const uint8_t *icmp, uint32_t icmp_len,
		struct pkt_meta *m, enum dp_drop *why)
{
	const uint8_t *inner = icmp + PKT_ICMP_LEN;
	uint32_t inner_len, inner_hlen;

	if (icmp_len < PKT_ICMP_LEN)
		return pkt_drop(why, DP_DROP_BAD_L4);
	m->icmp_type = icmp[0];
	m->icmp_code = icmp[1];
	if (icmp[0] >= 32 || !(PKT_ICMP4_ERROR_SET >> icmp[0] & 1)) {
		m->kind = PKT_KIND_ICMP_OTHER;
		return true;
	}
	inner_len = icmp_len - PKT_ICMP_LEN;
	if (inner_len < PKT_IPV4_LEN || inner[0] >> 4 != 4)
		return pkt_drop(why, DP_DROP_ICMP_BAD_INNER);
	inner_hlen = (inner[0] & 0xfu) * 4;
	if (inner_hlen < PKT_IPV4_LEN || inner_hlen + PKT_L4_PORTS_LEN > inner_len ||
	    (be16_get(inner + PKT_IPV4_FRAG) & PKT_IPV4_OFFSET_MASK) != 0 ||
	    !pkt_is_tcp_udp(inner[PKT_IPV4_PROTO]) ||
	    memcmp(inner + PKT_IPV4_SRC, ip + PKT_IPV4_DST, 4) != 0)
		return pkt_drop(why, DP_DROP_ICMP_BAD_INNER);
	return pkt_icmp_error_key(inner + PKT_IPV4_DST, 4, inner + inner_hlen,
				  inner[PKT_IPV4_PROTO], m);
}

static bool
pkt_parse_icmp6_error(const uint8_t *ip, const uint8_t *inner,
		      uint32_t inner_len, struct pkt_meta *m, enum dp_drop *why)
{
	struct pkt_ipv6_chain c;

	if (inner_len < PKT_IPV6_LEN || inner[0] >> 4 != 6 ||
	    !pkt_ipv6_walk(inner, inner_len, &c) ||
	    (c.frag & PKT_IPV6_OFFSET_MASK) != 0 || !pkt_is_tcp_udp(c.proto) ||
	    c.off + PKT_L4_PORTS_LEN > inner_len ||
	    memcmp(inner + PKT_IPV6_SRC, ip + PKT_IPV6_DST, 16) != 0)
		return pkt_drop(why, DP_DROP_ICMP_BAD_INNER);
	return pkt_icmp_error_key(inner + PKT_IPV6_DST, 16, inner + c.off, c.proto, m);
}

/* ICMPv6 at icmp, icmp_len bytes to the end of the IP packet at ip. */
static bool
pkt_parse_icmp6(const uint8_t *ip, const uint8_t *icmp, uint32_t icmp_len,
		struct pkt_meta *m, enum dp_drop *why)
{
	uint8_t type;

	if (icmp_len < PKT_ICMP_LEN)
		return pkt_drop(why, DP_DROP_BAD_L4);
	type = icmp[0];
	m->icmp_type = type;
	m->icmp_code = icmp[1];
	if ((uint8_t)(type - 1) < 4)            /* 1..4: errors */
		return pkt_parse_icmp6_error(ip, icmp + PKT_ICMP_LEN,
					     icmp_len - PKT_ICMP_LEN, m, why);
	if ((uint8_t)(type - 133) >= 5) {       /* not 133..137: ND */
		m->kind = PKT_KIND_ICMP_OTHER;
		return true;
	}
	/* A short NS/NA has no target: key.vip stays the destination, and
	 * the control thread refuses it by its own reason (ndisc.h). */
	if ((type == 135 || type == 136) && icmp_len >= PKT_ND_NS_LEN)
		memcpy(m->key.vip, icmp + PKT_ND_TARGET, 16);
	m->kind = PKT_KIND_ND;
	return true;
}

/* avail: bytes of the frame after L2; head of them readable. */
static bool
pkt_parse_ipv4(const uint8_t *frame, uint32_t avail, uint32_t head, struct pkt_meta *m,
	       enum dp_drop *why)
{
	const uint8_t *ip = frame + m->l2_len;
	uint32_t hlen, total;
	uint16_t frag;

	if (avail < PKT_IPV4_LEN)
		return pkt_drop(why, DP_DROP_TRUNCATED);
	if (ip[0] >> 4 != 4)
		return pkt_drop(why, DP_DROP_BAD_IP_VERSION);
	hlen = (ip[0] & 0xfu) * 4;
	total = be16_get(ip + PKT_IPV4_TOTAL_LEN);
	if (hlen < PKT_IPV4_LEN || hlen > total)
		return pkt_drop(why, DP_DROP_BAD_IHL);
	if (total > avail)
		return pkt_drop(why, DP_DROP_BAD_IP_LENGTH);
	if (hlen > head)
		return pkt_drop(why, DP_DROP_CHAINED);
	if (!pkt_ipv4_checksum_ok(ip, hlen))
		return pkt_drop(why, DP_DROP_BAD_IP_CHECKSUM);
	if (ip[PKT_IPV4_TTL] == 0)
		return pkt_drop(why, DP_DROP_TTL_EXCEEDED);

	frag = be16_get(ip + PKT_IPV4_FRAG);
	m->l3_len = (uint16_t)hlen;
	m->ip_len = (uint16_t)total;
	m->family = FLOW_FAMILY_IPV4;
	m->df = (frag & PKT_IPV4_DF) != 0;
	m->ttl = ip[PKT_IPV4_TTL];
	m->tos = ip[PKT_IPV4_TOS];
	memcpy(m->key.vip, ip + PKT_IPV4_DST, 4);
	memcpy(m->key.client, ip + PKT_IPV4_SRC, 4);
	m->key.proto = ip[PKT_IPV4_PROTO];
	m->key.family = FLOW_FAMILY_IPV4;
	if (frag & PKT_IPV4_FRAG_MASK) {
		m->kind = PKT_KIND_FRAGMENT;
		return true;
	}
	m->l4_off = (uint16_t)(m->l2_len + hlen);
	switch (ip[PKT_IPV4_PROTO]) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		return pkt_parse_tcp_udp(ip + hlen, total - hlen, head - hlen, m, why);
	case IPPROTO_ICMP:
		if (total > head)       /* ICMP is small: never chained */
			return pkt_drop(why, DP_DROP_CHAINED);
		return pkt_parse_icmp4(ip, ip + hlen, total - hlen, m, why);
	default:
		m->kind = PKT_KIND_OTHER_L4;
		return true;
	}
}

static bool
pkt_parse_ipv6(const uint8_t *frame, uint32_t avail, uint32_t head, struct pkt_meta *m,
	       enum dp_drop *why)
{
	const uint8_t *ip = frame + m->l2_len;
	struct pkt_ipv6_chain c;
	uint32_t total;

	if (avail < PKT_IPV6_LEN)
		return pkt_drop(why, DP_DROP_TRUNCATED);
	if (ip[0] >> 4 != 6)
		return pkt_drop(why, DP_DROP_BAD_IP_VERSION);
	total = be16_get(ip + PKT_IPV6_PAYLOAD_LEN) + (uint32_t)PKT_IPV6_LEN;
	if (total > avail || total > UINT16_MAX)
		return pkt_drop(why, DP_DROP_BAD_IP_LENGTH);
	if (ip[PKT_IPV6_HOP_LIMIT] == 0)
		return pkt_drop(why, DP_DROP_TTL_EXCEEDED);
	if (!pkt_ipv6_walk(ip, total < head ? total : head, &c))
		return pkt_drop(why, total > head ? DP_DROP_CHAINED : DP_DROP_BAD_EXT_HEADER);

	m->l3_len = (uint16_t)c.off;
	m->ip_len = (uint16_t)total;
	m->family = FLOW_FAMILY_IPV6;
	m->df = 1;
	m->ttl = ip[PKT_IPV6_HOP_LIMIT];
	m->tos = (uint8_t)((ip[0] & 0xfu) << 4 | ip[1] >> 4);
	memcpy(m->key.vip, ip + PKT_IPV6_DST, 16);
	memcpy(m->key.client, ip + PKT_IPV6_SRC, 16);
	m->key.proto = c.proto;
	m->key.family = FLOW_FAMILY_IPV6;
	if (c.fragment) {
		m->kind = PKT_KIND_FRAGMENT;
		return true;
	}
	m->l4_off = (uint16_t)(m->l2_len + c.off);
	switch (c.proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		return pkt_parse_tcp_udp(ip + c.off, total - c.off, head - c.off, m, why);
	case IPPROTO_ICMPV6:
		if (total > head)       /* ICMPv6 and ND are small: never chained */
			return pkt_drop(why, DP_DROP_CHAINED);
		return pkt_parse_icmp6(ip, ip + c.off, total - c.off, m, why);
	default:
		m->kind = PKT_KIND_OTHER_L4;
		return true;
	}
}

static bool
pkt_parse_arp(const uint8_t *frame, uint32_t avail, uint32_t head, struct pkt_meta *m,
	      enum dp_drop *why)
{
	const uint8_t *arp = frame + m->l2_len;

	if (avail < PKT_ARP_LEN)
		return pkt_drop(why, DP_DROP_TRUNCATED);
	if (head < PKT_ARP_LEN)
		return pkt_drop(why, DP_DROP_CHAINED);
	if (be16_get(arp) != PKT_ARP_HTYPE_ETHER || be16_get(arp + 2) != PKT_ETHERTYPE_IPV4 ||
	    arp[4] != 6 || arp[5] != 4)
		return pkt_drop(why, DP_DROP_ARP_IGNORED);
	m->l3_len = PKT_ARP_LEN;
	memcpy(m->key.vip, arp + PKT_ARP_TARGET_IP, 4);
	memcpy(m->key.client, arp + PKT_ARP_SENDER_IP, 4);
	m->kind = PKT_KIND_ARP;
	return true;
}

bool
pkt_parse_head(const uint8_t *frame, uint32_t head, uint32_t len, struct pkt_meta *m,
	       enum dp_drop *why)
{
	uint32_t l2 = PKT_ETHER_LEN;
	uint16_t type;

	memset(m, 0, sizeof(*m));
	if (len < PKT_ETHER_LEN)
		return pkt_drop(why, DP_DROP_TRUNCATED);
	/* Every fixed header (Ethernet, tag, IPv6's 40 bytes) in the first
	 * buffer; NICs fill it far beyond this. */
	if (head < len && head < PKT_HEAD_MIN)
		return pkt_drop(why, DP_DROP_CHAINED);
	type = be16_get(frame + PKT_ETHER_TYPE);
	if (type == PKT_ETHERTYPE_VLAN) {
		l2 += PKT_VLAN_LEN;
		if (len < l2)
			return pkt_drop(why, DP_DROP_TRUNCATED);
		type = be16_get(frame + PKT_ETHER_TYPE + PKT_VLAN_LEN);
	}
	m->l2_len = (uint16_t)l2;
	switch (type) {
	case PKT_ETHERTYPE_IPV4:
		return pkt_parse_ipv4(frame, len - l2, head - l2, m, why);
	case PKT_ETHERTYPE_IPV6:
		return pkt_parse_ipv6(frame, len - l2, head - l2, m, why);
	case PKT_ETHERTYPE_ARP:
		return pkt_parse_arp(frame, len - l2, head - l2, m, why);
	default:
		return pkt_drop(why, DP_DROP_BAD_ETHERTYPE);
	}
}

bool
pkt_parse_full(const uint8_t *frame, uint32_t len, struct pkt_meta *m,
	       enum dp_drop *why)
{
	return pkt_parse_head(frame, len, len, m, why);
}
