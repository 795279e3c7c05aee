/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sending a packet to its backend: GRE, IP-in-IP or L2 direct routing.
 *
 * The worker strips the client's Ethernet header, prepends
 * 14 + encap_overhead(t) bytes and has encap_write() fill them:
 *
 *   GRE over IPv4 (38 bytes)        GRE over IPv6 (58 bytes)
 *   +-----------------------+       +-----------------------+
 *   | Ethernet (14)         |       | Ethernet (14)         |
 *   | IPv4, proto 47 (20)   |       | IPv6, next 47 (40)    |
 *   | GRE (4)               |       | GRE (4)               |
 *   +-----------------------+       +-----------------------+
 *   | inner IP packet       |       | inner IP packet       |
 *
 *   IP-in-IP: the same without GRE; the outer protocol is 4 (IPv4 inner) or
 *   41 (IPv6 inner): 4in4, 6in4 (34 bytes), 6in6, 4in6 (54 bytes).
 *   L2: the frame keeps its IP packet; only the MACs change (14 bytes).
 *
 * GRE (RFC 2784), no checksum, key or sequence number:
 *    0                   1                   2                   3
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |C|       Reserved0       | Ver |         Protocol Type         |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   C = 0, Ver = 0, Protocol Type = 0x0800 (IPv4 inner) or 0x86DD (IPv6).
 *
 * Outer IPv4: TTL 64, TOS copied from the inner packet, DF and ID as given,
 * no options; the header checksum is finished from a partial sum over the
 * constant fields computed once per tunnel. Outer IPv6: hop limit 64, traffic
 * class copied, flow label from the flow's hash (RFC 6438), so that ECMP
 * between the load balancer and the backends spreads one tunnel's flows.
 * ECN bits are copied with the TOS (RFC 6040 normal mode).
 *
 * Frames are untagged Ethernet. struct encap_tunnel is built by the control
 * thread (encap_tunnel_init()) and published to workers, which only read it.
 */
#ifndef MAGLB_DATAPLANE_ENCAP_H
#define MAGLB_DATAPLANE_ENCAP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/core/be.h"
#include "dataplane/core/flow_key.h"

enum encap_kind {
	ENCAP_GRE = 0,
	ENCAP_IPIP,
	ENCAP_L2,
	ENCAP_KIND_MAX
};

extern const char *const encap_kind_names[ENCAP_KIND_MAX];

#define ENCAP_ETH_LEN 14u
#define ENCAP_GRE_LEN 4u
#define ENCAP_VLAN_LEN 4u   /* an 802.1Q tag */
#define ENCAP_HDR_MAX 58u   /* Ethernet + IPv6 + GRE: the most encap_write() writes */
#define ENCAP_TTL 64u

/*
 * Everything a worker needs to send to one backend. Public fields are for
 * the control thread and for display; the worker's code reads the private
 * ones (layout, overhead, csum, tmpl), which encap_tunnel_init() derives.
 */
struct encap_tunnel {
	uint8_t kind;             /* enum encap_kind */
	uint8_t outer_family;     /* 4 or 6 (FLOW_FAMILY_*): the backend's family */
	uint8_t layout;           /* private: which writer (kind x outer family) */
	uint8_t overhead;         /* private: encap_overhead() */
	uint32_t csum[2];         /* private: outer IPv4 partial checksum, per inner family */
	/* private: the header as written, per inner family (0: IPv4, 1: IPv6),
	 * with length, TOS/traffic class, ID, DF, flow label and checksum 0 */
	uint8_t tmpl[2][ENCAP_HDR_MAX];
	uint8_t eth_dst[6];       /* next hop MAC: backend (on-link) or gateway; L2: the backend's */
	uint8_t eth_src[6];       /* our port's MAC */
	uint8_t src[16];          /* outer source: the node's address of outer_family */
	uint8_t dst[16];          /* the backend's address */
};

/*
 * Build t for a tunnel of the given kind to the backend dst (outer_family
 * 4 or 6; IPv4 addresses in the first 4 bytes of src and dst, the rest
 * ignored), sent from eth_src to the next hop eth_dst. For ENCAP_L2, src and
 * dst are only recorded. Precomputes the header templates. Control thread;
 * t is then read-only. Returns 0, or -EINVAL for a bad kind or family (t is
 * left zeroed).
 */
int encap_tunnel_init(struct encap_tunnel *t, enum encap_kind kind,
		      uint8_t outer_family, const uint8_t eth_dst[6],
		      const uint8_t eth_src[6], const uint8_t src[16],
		      const uint8_t dst[16]);

/* Private, for the inline writers below. What encap_write() switches on:
 * kind and outer family in one. */
enum encap_layout {
	ENCAP_LAYOUT_GRE4 = 0,
	ENCAP_LAYOUT_GRE6,
	ENCAP_LAYOUT_IPIP4,
	ENCAP_LAYOUT_IPIP6,
	ENCAP_LAYOUT_L2,
	ENCAP_LAYOUT_MAX
};

enum {
	ENCAP_IP4_LEN = 20,
	ENCAP_IP6_LEN = 40,
	ENCAP_PROTO_IPIP = 4,     /* IPv4 in IP */
	ENCAP_PROTO_IPV6 = 41,    /* IPv6 in IP */
	ENCAP_PROTO_GRE = 47,
	ENCAP_ETHERTYPE_IPV4 = 0x0800,
	ENCAP_ETHERTYPE_IPV6 = 0x86dd,
	ENCAP_ETHERTYPE_VLAN = 0x8100,
};

/*
 * Outer IPv4. gre is a constant at each call, so the copy has a fixed size.
 * The checksum: the template's sum plus the variable words (TOS, total
 * length, ID, flags), folded and complemented (RFC 1071).
 */
static inline void
encap_write_ip4(uint8_t *hdr, const struct encap_tunnel *t, unsigned i,
		unsigned gre, uint16_t inner_len, uint8_t tos, bool df, uint16_t id)
{
	uint8_t *ip = hdr + ENCAP_ETH_LEN;
	uint16_t len = (uint16_t)(ENCAP_IP4_LEN + gre + inner_len);
	uint32_t sum = t->csum[i] + tos + len + id + ((uint32_t)df << 14);

	memcpy(hdr, t->tmpl[i], ENCAP_ETH_LEN + ENCAP_IP4_LEN + gre);
	ip[1] = tos;
	be16_put(ip + 2, len);
	be16_put(ip + 4, id);
	ip[6] = (uint8_t)((unsigned)df << 6);
	sum = (sum & 0xffff) + (sum >> 16);
	sum += sum >> 16;
	be16_put(ip + 10, ~sum & 0xffff);
}

static inline void
encap_write_ip6(uint8_t *hdr, const struct encap_tunnel *t, unsigned i,
		unsigned gre, uint16_t inner_len, uint8_t tclass, uint32_t h)
{
	uint8_t *ip = hdr + ENCAP_ETH_LEN;
	uint32_t label = (h ^ h >> 20) & 0xfffff;

	label |= label == 0;
	memcpy(hdr, t->tmpl[i], ENCAP_ETH_LEN + ENCAP_IP6_LEN + gre);
	be32_put(ip, 0x60000000u | (uint32_t)tclass << 20 | label);
	be16_put(ip + 4, (uint16_t)(gre + inner_len));
}

/*
 * Bytes the frame grows by, relative to [Ethernet 14][inner IP packet]:
 * 0 for L2, outer IP (20 or 40) + 4 for GRE, outer IP for IP-in-IP. The
 * same for both inner families. Packet path.
 */
static inline uint16_t
encap_overhead(const struct encap_tunnel *t)
{
	return t->overhead;
}

/*
 * Give the outer IPv4 header that encap_write() wrote into hdr with ID 0 the
 * ID id, its checksum updated (RFC 1624: the old field was 0). For outer
 * headers without DF, which may be fragmented on the way and so need IDs
 * that differ (RFC 6864); a no-op for IPv6 and L2 tunnels. Off the fast
 * path: most packets have DF.
 */
static inline void
encap_set_id(uint8_t *hdr, const struct encap_tunnel *t, uint16_t id)
{
	uint8_t *ip = hdr + ENCAP_ETH_LEN;

	if (t->layout != ENCAP_LAYOUT_GRE4 && t->layout != ENCAP_LAYOUT_IPIP4)
		return;
	be16_put(ip + 10, csum_fold((uint16_t)~be16_get(ip + 10) + (uint32_t)id));
	be16_put(ip + 4, id);
}

/*
 * Write [Ethernet][outer IP][GRE if any] into hdr, exactly
 * 14 + encap_overhead(t) bytes, for an inner IP packet of inner_len bytes
 * and family inner_family (4 or 6; anything else is taken as 6). inner_tos
 * is the inner IPv4 TOS or IPv6 traffic class. df and id fill an outer IPv4
 * header (ignored for IPv6). flow_label_hash gives an outer IPv6 flow label:
 * (h ^ h >> 20) & 0xfffff, and 1 if that is 0 (0 means "unlabelled", RFC
 * 6437); pass the flow hash's high 32 bits, as Maglev's slot uses the low
 * ones. For L2, writes the Ethernet header (MACs, inner ethertype) only.
 * The caller keeps inner_len + overhead within the port MTU (so within
 * 65535). Packet path: no branch but the switch on the tunnel's layout.
 */
static inline void
encap_write(uint8_t *hdr, const struct encap_tunnel *t, uint8_t inner_family,
	    uint16_t inner_len, uint8_t inner_tos, bool df, uint16_t id,
	    uint32_t flow_label_hash)
{
	unsigned i = inner_family != FLOW_FAMILY_IPV4;

	switch (t->layout) {
	case ENCAP_LAYOUT_GRE4:
		encap_write_ip4(hdr, t, i, ENCAP_GRE_LEN, inner_len, inner_tos, df, id);
		break;
	case ENCAP_LAYOUT_IPIP4:
		encap_write_ip4(hdr, t, i, 0, inner_len, inner_tos, df, id);
		break;
	case ENCAP_LAYOUT_GRE6:
		encap_write_ip6(hdr, t, i, ENCAP_GRE_LEN, inner_len, inner_tos,
				flow_label_hash);
		break;
	case ENCAP_LAYOUT_IPIP6:
		encap_write_ip6(hdr, t, i, 0, inner_len, inner_tos, flow_label_hash);
		break;
	default:
		memcpy(hdr, t->tmpl[i], ENCAP_ETH_LEN);
		break;
	}
}

/*
 * L2 direct routing, in place: set the frame's destination MAC to t->eth_dst
 * and source MAC to t->eth_src, nothing else. Packet path.
 */
static inline void
encap_l2_rewrite(uint8_t *frame, const struct encap_tunnel *t)
{
	/* Every template starts with eth_dst, eth_src. */
	memcpy(frame, t->tmpl[0], 12);
}

/*
 * Tag the untagged frame at frame with 802.1Q VLAN vid, priority 0: its two
 * MACs move 4 bytes down into room the caller has before frame, and the tag
 * (TPID 0x8100, TCI) takes their place. Returns the tagged frame's start,
 * frame - 4. Packet path, for ports configured with a VLAN.
 */
static inline uint8_t *
encap_vlan_push(uint8_t *frame, uint16_t vid)
{
	uint8_t *tagged = frame - ENCAP_VLAN_LEN;

	memmove(tagged, frame, 12);
	be16_put(tagged + 12, ENCAP_ETHERTYPE_VLAN);
	be16_put(tagged + 14, vid & 0xfff);
	return tagged;
}

#endif /* MAGLB_DATAPLANE_ENCAP_H */
