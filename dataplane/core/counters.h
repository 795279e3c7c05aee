/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's counters and drop reasons, declared once (X-macros) so that
 * the enums, the names shown by maglbctl and the docs cannot drift.
 *
 * Workers count into their own struct (no atomics, no sharing); the control
 * thread sums them when asked. Never a log line per packet.
 */
#ifndef MAGLB_DATAPLANE_COUNTERS_H
#define MAGLB_DATAPLANE_COUNTERS_H

#include <stdint.h>

/* Why a packet was dropped: X(NAME, "description"). */
#define DP_DROP_REASONS(X)						\
	X(TRUNCATED, "frame shorter than its headers")			\
	X(BAD_ETHERTYPE, "not IPv4, IPv6, ARP or VLAN")			\
	X(OTHER_HOST, "frame to another host's MAC address")		\
	X(BAD_IP_VERSION, "IP version does not match the ethertype")	\
	X(BAD_IHL, "IPv4 header length below 20 bytes or past the packet") \
	X(BAD_IP_LENGTH, "IP total or payload length disagrees with the frame") \
	X(BAD_IP_CHECKSUM, "IPv4 header checksum wrong")		\
	X(BAD_L4, "L4 header (TCP, UDP, ICMP) truncated or malformed")		\
	X(BAD_EXT_HEADER, "IPv6 extension header chain malformed or too long") \
	X(TTL_EXCEEDED, "IPv4 TTL or IPv6 hop limit 0")		\
	X(NOT_VIP, "destination is neither a VIP nor this node")	\
	X(VIP_PROTO, "VIP address, but no VIP for this protocol or port") \
	X(ICMP_UNHANDLED, "ICMP type neither an error about a flow nor ND") \
	X(ICMP_BAD_INNER, "ICMP error whose inner header is not a VIP flow") \
	X(FRAG_AMBIGUOUS, "fragment to an address with several VIPs of its protocol") \
	X(ARP_IGNORED, "ARP that is not Ethernet/IPv4")	\
	X(NO_BACKEND, "VIP has no backend that takes new flows")	\
	X(NO_NEIGHBOUR, "backend or gateway MAC not resolved yet")	\
	X(TOO_BIG, "encapsulated packet over the port MTU")		\
	X(NO_HEADROOM, "no room to prepend the tunnel header")		\
	X(TX_FULL, "transmit queue full")				\
	X(NO_MBUF, "no packet buffer for a reply or a fragment")	\
	X(SLOW_PATH_FULL, "ARP/ND/BFD queue to the control thread full")	\
	X(CANNOT_FRAGMENT, "IPv4 without DF over the MTU once encapsulated, not splittable") \
	X(BAD_SOURCE, "martian source: a VIP, this node, multicast, broadcast, 0/8, loopback") \
	X(WRONG_VLAN, "802.1Q tag other than the port's VLAN, or none where it has one") \
	X(CHAINED, "chained frame with headers past its first buffer, or to fragment")

enum dp_drop {
#define DP_DROP_ENUM(name, desc) DP_DROP_##name,
	DP_DROP_REASONS(DP_DROP_ENUM)
#undef DP_DROP_ENUM
	DP_DROP_MAX
};

/* Events that are not drops: X(NAME, "description"). */
#define DP_EVENTS(X)							\
	X(RX_PACKETS, "packets received")				\
	X(RX_BYTES, "bytes received")					\
	X(TX_PACKETS, "packets sent")					\
	X(TX_BYTES, "bytes sent")					\
	X(FORWARDED, "received frames sent on (a split packet counts once)") \
	X(SLOW_PATH, "ARP, ND and BFD frames handed to the control thread")	\
	X(TX_MADE, "frames made here and queued: fragments past the first, replies, control frames") \
	X(TX_MADE_LOST, "frames made here that the transmit queue refused") \
	X(FLOW_HITS, "packets that hit the worker's flow table")	\
	X(SYNCED_HITS, "packets that hit the table synced from peers")	\
	X(PROVISIONAL_REPLACED, "provisional entries (Maglev's guess for a flow picked up mid-stream) replaced by a peer's entry") \
	X(MAGLEV_PICKS, "new flows given a backend by Maglev")		\
	X(NEW_FLOWS, "flows inserted into the worker's table")		\
	X(UNTRACKED, "new flows over the insert rate or table full: Maglev only") \
	X(FRAGMENTS, "IP fragments forwarded on their 3-tuple")		\
	X(ICMP_ERRORS, "ICMP errors forwarded to a flow's backend")	\
	X(TOO_BIG_SENT, "fragmentation-needed / packet-too-big replies sent") \
	X(FRAGMENTED, "IPv4 packets without DF split to fit the MTU once encapsulated") \
	X(EXPORT_NEW, "flow events for syncd: NEW, an entry now worth replicating") \
	X(EXPORT_REFRESH, "flow events for syncd: REFRESH of an exported entry") \
	X(EXPORT_CLOSE, "flow events for syncd: CLOSE of an exported entry") \
	X(EXPORT_DROPPED, "flow events lost to a full export ring")	\
	X(FLOWS_EXPIRED, "flow entries expired")

enum dp_event {
#define DP_EVENT_ENUM(name, desc) DP_EVENT_##name,
	DP_EVENTS(DP_EVENT_ENUM)
#undef DP_EVENT_ENUM
	DP_EVENT_MAX
};

extern const char *const dp_drop_names[DP_DROP_MAX];
extern const char *const dp_drop_descriptions[DP_DROP_MAX];
extern const char *const dp_event_names[DP_EVENT_MAX];
extern const char *const dp_event_descriptions[DP_EVENT_MAX];

/* One worker's counters: written by that worker only. */
struct dp_counters {
	uint64_t event[DP_EVENT_MAX];
	uint64_t drop[DP_DROP_MAX];
};

#endif /* MAGLB_DATAPLANE_COUNTERS_H */
