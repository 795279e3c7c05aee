/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/encap.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "dataplane/core/flow_key.h"

const char *const encap_kind_names[ENCAP_KIND_MAX] = {
	[ENCAP_GRE] = "gre",
	[ENCAP_IPIP] = "ipip",
	[ENCAP_L2] = "l2",
};

static_assert(ENCAP_HDR_MAX == ENCAP_ETH_LEN + ENCAP_IP6_LEN + ENCAP_GRE_LEN,
	      "encap header room");

/* Unfolded one's complement sum of the 16-bit big-endian words of p[0..len). */
static uint32_t
encap_sum16(const uint8_t *p, unsigned len)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	return sum;
}

/* The template for inner family index i (0: IPv4, 1: IPv6). */
static void
encap_template(struct encap_tunnel *t, unsigned i)
{
	static const uint16_t ethertype[2] = { ENCAP_ETHERTYPE_IPV4, ENCAP_ETHERTYPE_IPV6 };
	static const uint8_t ipip_proto[2] = { ENCAP_PROTO_IPIP, ENCAP_PROTO_IPV6 };
	uint8_t *h = t->tmpl[i], *ip = h + ENCAP_ETH_LEN;
	bool gre = t->kind == ENCAP_GRE;
	uint8_t proto = gre ? ENCAP_PROTO_GRE : ipip_proto[i];
	unsigned ip_len = t->outer_family == FLOW_FAMILY_IPV4 ? ENCAP_IP4_LEN : ENCAP_IP6_LEN;

	memcpy(h, t->eth_dst, 6);
	memcpy(h + 6, t->eth_src, 6);
	if (t->kind == ENCAP_L2) {
		be16_put(h + 12, ethertype[i]);
		return;
	}
	if (t->outer_family == FLOW_FAMILY_IPV4) {
		be16_put(h + 12, ENCAP_ETHERTYPE_IPV4);
		ip[0] = 0x45;
		ip[8] = ENCAP_TTL;
		ip[9] = proto;
		memcpy(ip + 12, t->src, 4);
		memcpy(ip + 16, t->dst, 4);
		t->csum[i] = encap_sum16(ip, ENCAP_IP4_LEN);
	} else {
		be16_put(h + 12, ENCAP_ETHERTYPE_IPV6);
		ip[0] = 0x60;
		ip[6] = proto;
		ip[7] = ENCAP_TTL;
		memcpy(ip + 8, t->src, 16);
		memcpy(ip + 24, t->dst, 16);
	}
	if (gre)
		be16_put(ip + ip_len + 2, ethertype[i]);
}

int
encap_tunnel_init(struct encap_tunnel *t, enum encap_kind kind,
		  uint8_t outer_family, const uint8_t eth_dst[6],
		  const uint8_t eth_src[6], const uint8_t src[16],
		  const uint8_t dst[16])
{
	bool v4 = outer_family == FLOW_FAMILY_IPV4;

	memset(t, 0, sizeof(*t));
	if ((unsigned)kind >= ENCAP_KIND_MAX ||
	    (outer_family != FLOW_FAMILY_IPV4 && outer_family != FLOW_FAMILY_IPV6))
		return -EINVAL;

	/* commit */
	t->kind = (uint8_t)kind;
	t->outer_family = outer_family;
	memcpy(t->eth_dst, eth_dst, 6);
	memcpy(t->eth_src, eth_src, 6);
	memcpy(t->src, src, v4 ? 4 : 16);
	memcpy(t->dst, dst, v4 ? 4 : 16);
	switch (kind) {
	case ENCAP_GRE:
		t->layout = v4 ? ENCAP_LAYOUT_GRE4 : ENCAP_LAYOUT_GRE6;
		t->overhead = (uint8_t)((v4 ? ENCAP_IP4_LEN : ENCAP_IP6_LEN) + ENCAP_GRE_LEN);
		break;
	case ENCAP_IPIP:
		t->layout = v4 ? ENCAP_LAYOUT_IPIP4 : ENCAP_LAYOUT_IPIP6;
		t->overhead = v4 ? ENCAP_IP4_LEN : ENCAP_IP6_LEN;
		break;
	default:
		t->layout = ENCAP_LAYOUT_L2;
		t->overhead = 0;
		break;
	}
	encap_template(t, 0);
	encap_template(t, 1);
	return 0;
}

