/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames the dataplane originates: ICMP "fragmentation needed" / "packet too
 * big" replies, ARP replies, requests and gratuitous ARP, and neighbour
 * discovery (NA, NS, unsolicited NA).
 *
 * Each builder writes a whole Ethernet frame into a caller's buffer and
 * returns its length, or 0 when cap is too small or the input is malformed
 * or must not be answered; nothing is allocated. The frame that prompted a
 * reply has been classified by the parser (packet.h); a builder reads only
 * what it needs and checks only what could make it write nonsense. A reply
 * may be built in place (out == the frame it answers); out must not overlap
 * the input otherwise. Slow path; any thread; addresses in network order.
 *
 * Layouts (after a 14-byte Ethernet header, or 18 with one 802.1Q tag,
 * which a reply copies from the frame it answers):
 *
 *   ICMPv4 type 3 code 4 (RFC 792, RFC 1191)   ICMPv6 type 2 (RFC 4443)
 *   +------+------+-------------+              +------+------+-------------+
 *   | 3    | 4    | checksum    |              | 2    | 0    | checksum    |
 *   +------+------+-------------+              +------+------+-------------+
 *   | unused (0)  | next-hop MTU|              | MTU (32 bits)              |
 *   +-------------+-------------+              +----------------------------+
 *   | original IP packet, up to 576 bytes of   | original packet, up to 1280 |
 *   | IP in all (RFC 1812 4.3.2.3)             | bytes of IPv6 in all        |
 *
 *   ARP for IPv4 over Ethernet (RFC 826), 28 bytes, padded to a 60-byte frame:
 *   htype 1 | ptype 0x0800 | hlen 6 | plen 4 | oper (1 request, 2 reply)
 *   sender MAC (6) | sender IP (4) | target MAC (6) | target IP (4)
 *
 *   NS (type 135) / NA (type 136) (RFC 4861), 32 bytes of ICMPv6:
 *   +------+------+-------------+
 *   | type | 0    | checksum    |    NA flags: R 0x80, S 0x40, O 0x20
 *   +------+------+-------------+    (first byte); NS: reserved, 0
 *   | flags / reserved (32 bits) |
 *   | target address (16)        |
 *   | option: type | len 1 | MAC |   NS: 1 (source link-layer address)
 *   +----------------------------+   NA: 2 (target link-layer address)
 *   IPv6 hop limit 255 on every ND packet.
 */
#ifndef MAGLB_DATAPLANE_REPLY_H
#define MAGLB_DATAPLANE_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPLY_ICMP4_MAX_IP 576u    /* RFC 1812: an ICMPv4 error's IP length at most */
#define REPLY_ICMP6_MAX_IP 1280u   /* RFC 4443: an ICMPv6 error's IPv6 length at most */
#define REPLY_MTU4_MIN 68u         /* RFC 791: every IPv4 link carries 68 bytes */
#define REPLY_MTU6_MIN 1280u       /* RFC 8200: every IPv6 link carries 1280 bytes */
#define REPLY_ARP_FRAME_LEN 60u    /* an ARP frame, padded to the Ethernet minimum (no FCS) */
#define REPLY_ND_FRAME_LEN 86u     /* Ethernet 14 + IPv6 40 + NS/NA with one option 32 */
#define REPLY_TTL 64u
#define REPLY_ND_HOP_LIMIT 255u

/*
 * Answer the sender of frame (frame_len bytes: an Ethernet header of l2_len
 * bytes, then an IPv4 or IPv6 packet, per family 4 or 6, sent to a VIP)
 * with ICMPv4 type 3 code 4 (next-hop MTU = mtu) or ICMPv6 type 2 (MTU =
 * mtu). The reply's Ethernet header is the frame's with the MACs swapped;
 * its IP source is the original destination (the VIP), its destination the
 * original source (the client); TTL / hop limit 64, IPv4 TOS 0xc0 | the
 * original's TOS bits (as Linux does), DF set, ID 0 (RFC 6864: atomic).
 * The body is the original IP packet, cut so the reply's IP length is at
 * most 576 (IPv4) or 1280 (IPv6).
 *
 * Returns the frame length, or 0 when cap is too small, the packet is
 * malformed (version, header or total length disagree with the frame), or
 * RFC 1122 / RFC 4443 forbid an error about it: its source is not a unicast
 * address (0/8, 127/8, 224/4 and up; ::, ::1, ff00::/8), it is a non-initial
 * fragment, or it is an ICMP error itself (seen when ICMP follows the
 * IPv4 header or the fixed IPv6 header directly; the parser drops the rest).
 */
size_t reply_too_big(uint8_t *out, size_t cap, const uint8_t *frame,
		     uint32_t frame_len, uint16_t l2_len, uint8_t family,
		     uint16_t mtu);

/*
 * The MTU to announce to a client of the given family (4 or 6) when the
 * port's MTU is port_mtu (IP bytes a frame may carry) and the tunnel adds
 * overhead bytes (encap_overhead()): port_mtu - overhead, the truth.
 *
 * IPv4: floored at 68 (RFC 791); a lower true value cannot occur on a sane
 * port. No 552 floor: Linux clamps what it is told to its min_pmtu (552) on
 * its own, and announcing more than the truth would only make the client
 * send packets that are dropped again.
 *
 * IPv6: floored at 1280. Hosts ignore a smaller MTU (RFC 8201 4), so when
 * port_mtu - overhead < 1280 the tunnel cannot carry every legal IPv6
 * packet: the fix is a bigger MTU on the load balancer -> backend segment
 * (or the tunnel fragmenting its outer packets, RFC 2473 7.1, which maglb
 * does not do). This returns 1280 then; the caller compares port_mtu -
 * overhead with REPLY_MTU6_MIN itself, counts it and warns at config time.
 */
uint16_t reply_too_big_mtu(uint16_t port_mtu, uint16_t overhead, uint8_t family);

/*
 * The reply to the ARP request req (len bytes, Ethernet, untagged or one
 * 802.1Q tag): to the requester's sender MAC from our_mac, saying that the
 * requested IP (the caller has checked that it is ours) is at our_mac.
 * Returns the frame length (60, or 64 tagged), 0 if cap is too small or req
 * is not an Ethernet/IPv4 ARP request.
 */
size_t reply_arp(uint8_t *out, size_t cap, const uint8_t *req, uint32_t len,
		 const uint8_t our_mac[6]);

/*
 * A broadcast ARP request from src_mac/src_ip asking for target_ip (target
 * MAC all zeros). Returns 60, or 0 if cap is too small.
 */
size_t reply_arp_request(uint8_t *out, size_t cap, const uint8_t src_mac[6],
			 const uint8_t src_ip[4], const uint8_t target_ip[4]);

/*
 * A gratuitous ARP: a broadcast request with sender IP = target IP = ip,
 * sender MAC mac, target MAC zeros, as Linux and keepalived send on takeover.
 * Returns 60, or 0 if cap is too small.
 */
size_t reply_arp_gratuitous(uint8_t *out, size_t cap, const uint8_t mac[6],
			    const uint8_t ip[4]);

/*
 * The neighbour advertisement answering the solicitation ns (len bytes,
 * Ethernet, untagged or one 802.1Q tag; IPv6 hop limit 255, ICMPv6 directly
 * after the fixed header) for a target the caller has checked is ours: from
 * the target address and our_mac, override flag set, with a target
 * link-layer address option. To the solicitation's source and Ethernet
 * source, solicited flag set; if that source is :: (duplicate address
 * detection), to all-nodes ff02::1 (33:33:00:00:00:01) with the solicited
 * flag clear, as RFC 4861 7.2.4 requires. The solicitation's checksum is the
 * parser's to verify. Returns the frame length (86, or 90 tagged), 0 if cap
 * is too small or ns is not a well-formed solicitation.
 */
size_t reply_nd_na(uint8_t *out, size_t cap, const uint8_t *ns, uint32_t len,
		   const uint8_t our_mac[6]);

/*
 * A neighbour solicitation for target, from src_ip (the node's address on
 * the link) and src_mac, to target's solicited-node multicast address
 * ff02::1:ffXX:XXXX (Ethernet 33:33:ff:XX:XX:XX), with a source link-layer
 * address option. Returns 86, or 0 if cap is too small.
 */
size_t reply_nd_ns(uint8_t *out, size_t cap, const uint8_t src_mac[6],
		   const uint8_t src_ip[16], const uint8_t target[16]);

/*
 * An unsolicited neighbour advertisement for addr at mac, from addr to
 * all-nodes ff02::1, override set, solicited clear, with a target
 * link-layer address option (RFC 4861 7.2.6, sent on takeover). Returns 86,
 * or 0 if cap is too small.
 */
size_t reply_nd_unsolicited_na(uint8_t *out, size_t cap, const uint8_t mac[6],
			       const uint8_t addr[16]);

/* A UDP datagram the dataplane originates (BFD, RFC 5881). */
struct reply_udp {
	const uint8_t *src_mac, *dst_mac;
	uint8_t family;             /* 4 or 6 */
	uint8_t ttl;                /* IPv4 TTL / IPv6 hop limit */
	uint8_t tos;                /* IPv4 TOS / IPv6 traffic class */
	const uint8_t *src, *dst;   /* 4 or 16 bytes */
	uint16_t sport, dport;
	const uint8_t *payload;
	uint16_t len;               /* payload bytes */
};

#define REPLY_UDP_HEADROOM 62u     /* Ethernet 14 + IPv6 40 + UDP 8: the most before a payload */

/*
 * The untagged Ethernet frame of u: IPv4 with DF and ID 0 (RFC 6864), or
 * IPv6 without extension headers; the UDP checksum always set (IPv4 may
 * omit it; RFC 8200 requires it); padded to the Ethernet minimum. The
 * payload may not overlap out. Returns the frame length, 0 if cap is too
 * small or u's family is neither.
 */
size_t reply_udp(uint8_t *out, size_t cap, const struct reply_udp *u);

/*
 * Whether the UDP checksum of the datagram at l4 (its UDP header; ip is
 * its IP header, of family 4 or 6) is right: 0 in IPv4 means "none" and is
 * right, 0 in IPv6 is wrong (RFC 8200 8.1). The UDP length field gives
 * the datagram's length; the caller has checked it lies within the frame.
 */
bool reply_udp_csum_ok(const uint8_t *ip, const uint8_t *l4, uint8_t family);

#endif /* MAGLB_DATAPLANE_REPLY_H */
