/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frame parser: one Ethernet frame in, its flow key and offsets out.
 *
 * pkt_parse() validates every header it reads, never reads past len, keeps no
 * state and allocates nothing: a pure function for the packet path, safe on
 * any thread. It accepts
 *
 *   Ethernet [802.1Q tag 0x8100, one] then
 *     IPv4 (options allowed) | IPv6 (at most PKT_IPV6_EXT_MAX extension
 *     headers among hop-by-hop 0, routing 43, fragment 44, dest options 60)
 *       then TCP | UDP | ICMP / ICMPv6 | any other protocol
 *     ARP (Ethernet / IPv4 only)
 *
 * and sorts the frame into a kind (enum pkt_kind). What a kind means for the
 * flow key:
 *
 *   FLOW        TCP or UDP, not a fragment: the 5-tuple, client -> VIP.
 *   FRAGMENT    any fragment, the first included: ports 0 (the 3-tuple, as
 *               Maglev does), proto from the IPv4 header or from the IPv6
 *               fragment header's next header, so that every fragment of a
 *               datagram gets the same key. l4_off is 0. An IPv6 "atomic
 *               fragment" (offset 0, M 0; RFC 6946) is no fragment: the walk
 *               goes on past its header.
 *   ICMP_ERROR  ICMPv4 3/11/12, ICMPv6 1/2/3/4 about a flow the backend sent
 *               from the VIP to the client (direct server return) and a router
 *               bounced back to the VIP. The key is the inner header reversed:
 *               vip = inner source (must equal the outer destination), client
 *               = inner destination, vip_port = inner source port, and so on,
 *               i.e. the key of the client's flow. Inner TCP or UDP only, not
 *               a non-first fragment. Neither the inner checksums nor the ICMP
 *               checksum are verified (the backend's stack does that).
 *   ICMP_OTHER  other ICMP (echo, ...): vip = destination, client = source,
 *               proto 1 or 58, ports 0.
 *   ARP         key.vip = target IPv4 address, key.client = sender IPv4
 *               address, family 0 in meta and key; see the pkt_arp_*()
 *               accessors for the rest.
 *   ND          ICMPv6 133..137: for NS (135) and NA (136) key.vip = the
 *               target address (the destination when the message is too
 *               short to hold one), else the destination; key.client =
 *               source.
 *               The hop limit (RFC 4861 wants 255) is left to the responder.
 *   OTHER_L4    an IP protocol that is none of the above (GRE, SCTP, ...):
 *               addresses and proto set, ports 0; the caller drops it after
 *               the VIP lookup (NOT_VIP or VIP_PROTO).
 *
 * Drop reasons, in the order they are checked:
 *   TRUNCATED        frame shorter than Ethernet (+ tag), the 20-byte IPv4,
 *                    40-byte IPv6 or 28-byte ARP header;
 *   BAD_ETHERTYPE    not IPv4, IPv6, ARP, or a second tag;
 *   BAD_IP_VERSION   version nibble not that of the ethertype;
 *   BAD_IHL          IPv4 IHL < 5, or IHL * 4 > total length;
 *   BAD_IP_LENGTH    IP total length (IPv6: payload length + 40) past the
 *                    frame, which is what a frame cut inside its IP packet
 *                    gets; trailer padding after the packet is fine;
 *   BAD_IP_CHECKSUM  IPv4 header checksum;
 *   TTL_EXCEEDED     TTL / hop limit 0. Not 1: the load balancer encapsulates
 *                    or rewrites MACs and leaves the inner TTL alone, so a
 *                    packet that arrives with TTL 1 still reaches the backend;
 *   BAD_EXT_HEADER   IPv6 extension header past the payload, hop-by-hop not
 *                    first, or more than PKT_IPV6_EXT_MAX of them;
 *   BAD_L4           TCP < 20 bytes or data offset < 5 or past the IP packet;
 *                    UDP < 8 bytes or its length < 8 or past the IP packet;
 *                    ICMP < 8 bytes (a shorter NS/NA is ND, for the
 *                    control thread to refuse, see ndisc.h);
 *   ICMP_BAD_INNER   ICMP error whose inner packet is not IP of the same
 *                    family with its header and 8 bytes of TCP/UDP, a non-first
 *                    fragment, or whose source is not the outer destination;
 *   ARP_IGNORED      ARP not for Ethernet (htype 1, hlen 6) and IPv4 (ptype
 *                    0x0800, plen 4);
 *   CHAINED          (pkt_parse_head() only) a header, or an ICMP message,
 *                    past the frame's first buffer.
 */
#ifndef MAGLB_DATAPLANE_PACKET_H
#define MAGLB_DATAPLANE_PACKET_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>

#include "dataplane/core/be.h"
#include "dataplane/core/counters.h"
#include "dataplane/core/flow_key.h"

#define PKT_IPV6_EXT_MAX 4u     /* extension headers walked, at most */

/* Wire offsets and sizes (the layouts are drawn in packet.c). */
enum pkt_layout {
	PKT_ETHER_LEN = 14,
	PKT_ETHER_TYPE = 12,
	PKT_VLAN_LEN = 4,

	PKT_ETHERTYPE_IPV4 = 0x0800,
	PKT_ETHERTYPE_ARP = 0x0806,
	PKT_ETHERTYPE_VLAN = 0x8100,
	PKT_ETHERTYPE_QINQ = 0x88a8,        /* an 802.1ad service tag */
	PKT_ETHERTYPE_IPV6 = 0x86dd,

	PKT_IPV4_LEN = 20,
	PKT_IPV4_TOS = 1,
	PKT_IPV4_TOTAL_LEN = 2,
	PKT_IPV4_FRAG = 6,
	PKT_IPV4_TTL = 8,
	PKT_IPV4_PROTO = 9,
	PKT_IPV4_SRC = 12,
	PKT_IPV4_DST = 16,
	PKT_IPV4_DF = 0x4000,
	PKT_IPV4_FRAG_MASK = 0x3fff,        /* MF and offset */
	PKT_IPV4_OFFSET_MASK = 0x1fff,

	PKT_IPV6_LEN = 40,
	PKT_IPV6_PAYLOAD_LEN = 4,
	PKT_IPV6_NEXT = 6,
	PKT_IPV6_HOP_LIMIT = 7,
	PKT_IPV6_SRC = 8,
	PKT_IPV6_DST = 24,
	PKT_IPV6_FRAG_HDR_LEN = 8,
	PKT_IPV6_FRAG_MASK = 0xfff9,        /* offset and M: not an atomic fragment */
	PKT_IPV6_OFFSET_MASK = 0xfff8,

	PKT_TCP_LEN = 20,
	PKT_TCP_DATA_OFF = 12,
	PKT_TCP_FLAGS = 13,
	PKT_UDP_LEN = 8,
	PKT_UDP_LENGTH = 4,
	PKT_ICMP_LEN = 8,                   /* every ICMP / ICMPv6 message */
	PKT_L4_PORTS_LEN = 8,               /* what an ICMP error must quote */
	PKT_ND_TARGET = 8,
	PKT_ND_NS_LEN = 24,

	PKT_ARP_HTYPE_ETHER = 1,
};

enum pkt_kind {
	PKT_KIND_FLOW = 0,
	PKT_KIND_FRAGMENT,
	PKT_KIND_ICMP_ERROR,
	PKT_KIND_ICMP_OTHER,
	PKT_KIND_ARP,
	PKT_KIND_ND,
	PKT_KIND_OTHER_L4,
	PKT_KIND_MAX
};

extern const char *const pkt_kind_names[PKT_KIND_MAX];

struct pkt_meta {
	uint16_t l2_len;        /* 14, or 18 with an 802.1Q tag */
	uint16_t l3_len;        /* IPv4 IHL * 4; IPv6 40 + extension headers
				 * (up to and including a fragment header);
				 * ARP 28 */
	uint16_t ip_len;        /* IPv4 total length; IPv6 40 + payload length;
				 * ARP 0. The frame may carry padding past it. */
	uint16_t l4_off;        /* L4 (TCP, UDP, ICMP, other) header offset from
				 * the frame start; 0 for fragments and ARP */
	uint8_t kind;           /* enum pkt_kind */
	uint8_t family;         /* FLOW_FAMILY_IPV4 / _IPV6; 0 for ARP */
	uint8_t tcp_flags;      /* TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04,
				 * ACK 0x10) for FLOW; 0 otherwise */
	uint8_t df;             /* IPv4 DF bit; 1 for IPv6 */
	uint8_t icmp_type;      /* ICMP_ERROR, ICMP_OTHER, ND; 0 otherwise */
	uint8_t icmp_code;
	uint8_t ttl;            /* IPv4 TTL / IPv6 hop limit */
	uint8_t tos;            /* IPv4 TOS / IPv6 traffic class */
	struct flow_key key;    /* vip = destination, client = source (but see
				 * ICMP_ERROR and ND); ports host order; pad 0 */
};

static_assert(sizeof(struct pkt_meta) == 56, "pkt_meta layout");

enum pkt_tcp_flag {
	PKT_TCP_FIN = 0x01,
	PKT_TCP_SYN = 0x02,
	PKT_TCP_RST = 0x04,
	PKT_TCP_ACK = 0x10,
};

/* The full parser: every kind above, every check. */
bool pkt_parse_full(const uint8_t *frame, uint32_t len, struct pkt_meta *m,
		    enum dp_drop *why);

/*
 * The same for a frame of len bytes of which only the first head (<= len)
 * are contiguous at frame: a chained frame (jumbo frames in several
 * buffers). Every length is checked against len; what must be read past
 * head (headers, ICMP and ND messages whole) makes it drop as CHAINED.
 */
bool pkt_parse_head(const uint8_t *frame, uint32_t head, uint32_t len,
		    struct pkt_meta *m, enum dp_drop *why);

static inline uint32_t
pkt_word32(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/*
 * The IPv4 header checksum holds when the one's complement sum of the header
 * is 0xffff. Summing native 32-bit words and folding gives that sum in native
 * byte order, and 0xffff reads the same in both.
 */
static inline bool
pkt_ipv4_checksum_ok(const uint8_t *ip, uint32_t hlen)
{
	uint64_t sum = (uint64_t)pkt_word32(ip) + pkt_word32(ip + 4) +
		       pkt_word32(ip + 8) + pkt_word32(ip + 12) +
		       pkt_word32(ip + 16);

	for (uint32_t off = PKT_IPV4_LEN; off < hlen; off += 4)
		sum += pkt_word32(ip + off);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffu) + (sum >> 16);
	sum = (sum & 0xffffu) + (sum >> 16);
	return sum == 0xffffu;
}

/*
 * The frame nearly all traffic is, inline: untagged IPv4 without options, TCP
 * or UDP, not a fragment, every check of pkt_parse_full() passing. Fills *m
 * exactly as pkt_parse_full() would and returns true, or returns false for
 * any other frame (then *m holds no meaning) without deciding why. Saves the
 * call, the generic walk and the byte-wise stores: a few ns a packet.
 */
static inline bool
pkt_parse_simple(const uint8_t *frame, uint32_t len, struct pkt_meta *m)
{
	const uint8_t *ip = frame + PKT_ETHER_LEN, *l4 = ip + PKT_IPV4_LEN;
	uint32_t total, l4_len;
	uint16_t frag;
	uint8_t proto, flags = 0;

	if (len < PKT_ETHER_LEN + PKT_IPV4_LEN + PKT_UDP_LEN ||
	    be16_get(frame + PKT_ETHER_TYPE) != PKT_ETHERTYPE_IPV4 || ip[0] != 0x45)
		return false;
	total = be16_get(ip + PKT_IPV4_TOTAL_LEN);
	frag = be16_get(ip + PKT_IPV4_FRAG);
	proto = ip[PKT_IPV4_PROTO];
	if (total > len - PKT_ETHER_LEN || total < PKT_IPV4_LEN + PKT_UDP_LEN ||
	    (frag & PKT_IPV4_FRAG_MASK) != 0 || ip[PKT_IPV4_TTL] == 0 ||
	    !pkt_ipv4_checksum_ok(ip, PKT_IPV4_LEN))
		return false;
	l4_len = total - PKT_IPV4_LEN;
	if (proto == IPPROTO_TCP) {
		uint32_t data_off;

		if (l4_len < PKT_TCP_LEN)
			return false;
		data_off = (uint32_t)(l4[PKT_TCP_DATA_OFF] >> 4) * 4;
		if (data_off < PKT_TCP_LEN || data_off > l4_len)
			return false;
		flags = l4[PKT_TCP_FLAGS];
	} else if (proto == IPPROTO_UDP) {
		uint32_t udp_len = be16_get(l4 + PKT_UDP_LENGTH);

		if (udp_len < PKT_UDP_LEN || udp_len > l4_len)
			return false;
	} else {
		return false;
	}
	/* Every byte of *m written once, no memset first. */
	m->l2_len = PKT_ETHER_LEN;
	m->l3_len = PKT_IPV4_LEN;
	m->ip_len = (uint16_t)total;
	m->l4_off = PKT_ETHER_LEN + PKT_IPV4_LEN;
	m->kind = PKT_KIND_FLOW;
	m->family = FLOW_FAMILY_IPV4;
	m->tcp_flags = flags;
	m->df = (frag & PKT_IPV4_DF) != 0;
	m->icmp_type = 0;
	m->icmp_code = 0;
	m->ttl = ip[PKT_IPV4_TTL];
	m->tos = ip[PKT_IPV4_TOS];
	memcpy(m->key.vip, ip + PKT_IPV4_DST, 4);
	memset(m->key.vip + 4, 0, 12);
	memcpy(m->key.client, ip + PKT_IPV4_SRC, 4);
	memset(m->key.client + 4, 0, 12);
	m->key.vip_port = be16_get(l4 + 2);
	m->key.client_port = be16_get(l4);
	m->key.proto = proto;
	m->key.family = FLOW_FAMILY_IPV4;
	m->key.pad[0] = m->key.pad[1] = 0;
	return true;
}

/*
 * Parse the len bytes at frame. Returns true and fills *m, or false with
 * *why set to one DP_DROP_* reason (then *m holds no meaning). Reads nothing
 * at or past frame + len. Pure and thread-safe; packet path.
 */
static inline bool
pkt_parse(const uint8_t *frame, uint32_t len, struct pkt_meta *m, enum dp_drop *why)
{
	return pkt_parse_simple(frame, len, m) || pkt_parse_full(frame, len, m, why);
}

/*
 * A source no client can have (RFC 1122 3.2.1.3, RFC 4291): IPv4 0.0.0.0/8,
 * 127/8, 224/4 multicast and 240/4 (255.255.255.255 included); IPv6 ::,
 * ::1 and ff00::/8. The caller also refuses its own and its VIPs'
 * addresses. family FLOW_FAMILY_IPV4 (address in the first 4 bytes) or _IPV6.
 */
static inline bool
pkt_source_martian(uint8_t family, const uint8_t addr[16])
{
	static const uint8_t zero[15];

	if (family == FLOW_FAMILY_IPV4)
		return addr[0] == 0 || addr[0] == 127 || addr[0] >= 224;
	return addr[0] == 0xff || (memcmp(addr, zero, 15) == 0 && addr[15] <= 1);
}

/*
 * ARP for Ethernet and IPv4 (RFC 826), at frame + l2_len, 28 bytes:
 *
 *    0      2      4    5    6      8                14        18            24       28
 *   +------+------+----+----+------+-----------------+---------+-------------+---------+
 *   |htype |ptype |hlen|plen| oper | sender MAC      |sender IP| target MAC  |target IP|
 *   +------+------+----+----+------+-----------------+---------+-------------+---------+
 *
 * The accessors take a frame that pkt_parse() sorted as PKT_KIND_ARP.
 */
enum pkt_arp_layout {
	PKT_ARP_OPER = 6,
	PKT_ARP_SENDER_MAC = 8,
	PKT_ARP_SENDER_IP = 14,
	PKT_ARP_TARGET_MAC = 18,
	PKT_ARP_TARGET_IP = 24,
	PKT_ARP_LEN = 28,
};

enum pkt_arp_oper {
	PKT_ARP_REQUEST = 1,
	PKT_ARP_REPLY = 2,
};

static inline uint16_t
pkt_arp_oper(const uint8_t *frame, const struct pkt_meta *m)
{
	return be16_get(frame + m->l2_len + PKT_ARP_OPER);
}

static inline const uint8_t *
pkt_arp_sender_mac(const uint8_t *frame, const struct pkt_meta *m)
{
	return frame + m->l2_len + PKT_ARP_SENDER_MAC;
}

static inline const uint8_t *
pkt_arp_sender_ip(const uint8_t *frame, const struct pkt_meta *m)
{
	return frame + m->l2_len + PKT_ARP_SENDER_IP;
}

static inline const uint8_t *
pkt_arp_target_mac(const uint8_t *frame, const struct pkt_meta *m)
{
	return frame + m->l2_len + PKT_ARP_TARGET_MAC;
}

static inline const uint8_t *
pkt_arp_target_ip(const uint8_t *frame, const struct pkt_meta *m)
{
	return frame + m->l2_len + PKT_ARP_TARGET_IP;
}

/*
 * The MTU an ICMP_ERROR reports: ICMPv4 type 3 code 4 (fragmentation needed,
 * RFC 1191: 16 bits at offset 6) or ICMPv6 type 2 (packet too big: 32 bits
 * at offset 4); 0 for any other error.
 */
static inline uint32_t
pkt_icmp_mtu(const uint8_t *frame, const struct pkt_meta *m)
{
	const uint8_t *icmp = frame + m->l4_off;

	if (m->kind != PKT_KIND_ICMP_ERROR)
		return 0;
	if (m->family == FLOW_FAMILY_IPV4 && m->icmp_type == 3 && m->icmp_code == 4)
		return be16_get(icmp + 6);
	if (m->family == FLOW_FAMILY_IPV6 && m->icmp_type == 2)
		return (uint32_t)be16_get(icmp + 4) << 16 | be16_get(icmp + 6);
	return 0;
}

#endif /* MAGLB_DATAPLANE_PACKET_H */
