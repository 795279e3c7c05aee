/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the control thread makes of an ARP or neighbour discovery frame:
 * refused (invalid, counted by reason), or valid with what it teaches (a
 * neighbour's MAC) and asks (an answer for an address).
 *
 * The parser (packet.h) has checked the Ethernet, IP and ARP headers and
 * sorted the frame as PKT_KIND_ARP or PKT_KIND_ND. This module adds the
 * checks a host makes before it believes a frame, since a neighbour entry
 * redirects every packet for a backend:
 *
 *   ARP (RFC 826, RFC 5227)   operation request or reply; sender MAC not
 *                             multicast, broadcast or zero; sender IP not
 *                             0.0.0.0/8, 127/8, multicast or broadcast
 *                             (an RFC 5227 probe, sender 0.0.0.0, is
 *                             refused too: there is nothing to learn)
 *   NS (RFC 4861 7.1.1)       hop limit 255, code 0, ICMPv6 checksum,
 *   NA (RFC 4861 7.1.2)       ICMPv6 length >= 24, target not multicast,
 *                             every option of non-zero length inside the
 *                             message; source not multicast; NS from ::
 *                             only to a solicited-node address and without
 *                             a source link-layer option; NA with the
 *                             solicited flag not to a multicast destination
 *   Ethernet                  a unicast destination must be the port's MAC
 *
 * RS, RA and redirects (133, 134, 137) are valid and ignored: the dataplane
 * is no router and takes its routes from the config.
 *
 * Pure and thread-safe; no allocation. Addresses in network order.
 */
#ifndef MAGLB_DATAPLANE_NDISC_H
#define MAGLB_DATAPLANE_NDISC_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/core/packet.h"

/* Why a frame was refused: X(NAME, "description"). */
#define NDISC_REFUSALS(X)						\
	X(SLOW_OTHER_HOST, "ARP/ND frame to another host's unicast MAC")	\
	X(ARP_BAD_OPER, "ARP operation neither request nor reply")	\
	X(ARP_BAD_SENDER_MAC, "ARP sender MAC multicast, broadcast or zero") \
	X(ARP_BAD_SENDER_IP, "ARP sender IP zero, loopback, multicast or broadcast") \
	X(ND_BAD_HOP_LIMIT, "NS/NA hop limit not 255 (sent from off the link)") \
	X(ND_BAD_CODE, "NS/NA ICMPv6 code not 0")			\
	X(ND_BAD_CHECKSUM, "NS/NA ICMPv6 checksum wrong")		\
	X(ND_BAD_LENGTH, "NS/NA shorter than 24 bytes")			\
	X(ND_TARGET_MULTICAST, "NS/NA target address multicast")	\
	X(ND_BAD_OPTION, "NS/NA option of length 0 or past the message") \
	X(ND_BAD_SOURCE, "NS/NA source address multicast")		\
	X(ND_DAD_NOT_SOLICITED_NODE, "NS from :: not to a solicited-node address") \
	X(ND_DAD_WITH_SLLAO, "NS from :: with a source link-layer address") \
	X(ND_SOLICITED_MULTICAST, "NA with the solicited flag to a multicast address")

enum ndisc_refusal {
#define NDISC_REFUSAL_ENUM(name, desc) NDISC_##name,
	NDISC_REFUSALS(NDISC_REFUSAL_ENUM)
#undef NDISC_REFUSAL_ENUM
	NDISC_REFUSAL_MAX
};

extern const char *const ndisc_refusal_names[NDISC_REFUSAL_MAX];

enum ndisc_kind {
	NDISC_ARP_REQUEST = 0,
	NDISC_ARP_REPLY,
	NDISC_NS,
	NDISC_NA,
	NDISC_OTHER,            /* RS, RA, redirect: valid, ignored */
	NDISC_KIND_MAX
};

/* A valid frame's meaning. */
struct ndisc_info {
	uint8_t kind;           /* enum ndisc_kind */
	uint8_t family;         /* FLOW_FAMILY_IPV4 (ARP) or _IPV6 */
	/* The neighbour it teaches, when lladdr != NULL: ARP sender IP and MAC;
	 * NS source and its source link-layer option; NA target and its target
	 * link-layer option. lladdr points into the frame. */
	uint8_t addr[16];
	const uint8_t *lladdr;
	/* What an answer would be for (ARP request: target IP; NS: target). */
	uint8_t target[16];
};

/*
 * Check frame (len bytes, m from pkt_parse(): PKT_KIND_ARP or PKT_KIND_ND)
 * received on a port whose MAC is port_mac. Returns true and fills *info
 * when the frame is valid, else false with *why set.
 */
bool ndisc_check(const uint8_t *frame, uint32_t len, const struct pkt_meta *m,
		 const uint8_t port_mac[6], struct ndisc_info *info,
		 enum ndisc_refusal *why);

/* The ICMPv6 checksum of the IPv6 packet at ip (ip_len bytes, its upper
 * layer at l4_off from ip) verifies: pseudo-header of RFC 8200 8.1. */
bool ndisc_icmp6_checksum_ok(const uint8_t *ip, uint32_t ip_len, uint32_t l4_off);

#endif /* MAGLB_DATAPLANE_NDISC_H */
