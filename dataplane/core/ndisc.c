/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/ndisc.h"

#include <string.h>

const char *const ndisc_refusal_names[NDISC_REFUSAL_MAX] = {
#define NDISC_REFUSAL_NAME(name, desc) [NDISC_##name] = #name,
	NDISC_REFUSALS(NDISC_REFUSAL_NAME)
#undef NDISC_REFUSAL_NAME
};

enum {
	ND_TYPE_NS = 135,
	ND_TYPE_NA = 136,
	ND_HOP_LIMIT = 255,
	ND_FLAGS = 4,           /* NA: R 0x80, S 0x40, O 0x20 */
	ND_FLAG_SOLICITED = 0x40,
	ND_OPTIONS = 24,        /* type, code, checksum, flags, target */
	ND_OPT_SOURCE_LLADDR = 1,
	ND_OPT_TARGET_LLADDR = 2,
	ND_OPT_LLADDR_LEN = 8,  /* type, length, 6-byte MAC */
};

static inline bool
refuse(enum ndisc_refusal *why, enum ndisc_refusal reason)
{
	*why = reason;
	return false;
}

/* Multicast (broadcast included) or all zeros: no host's address. */
static bool
mac_bad(const uint8_t mac[6])
{
	static const uint8_t zero[6];

	return (mac[0] & 1) != 0 || memcmp(mac, zero, 6) == 0;
}

/* 0.0.0.0/8, 127/8, 224/4 (multicast) and 240/4 (reserved, broadcast). */
static bool
ipv4_bad_source(const uint8_t ip[4])
{
	return ip[0] == 0 || ip[0] == 127 || ip[0] >= 224;
}

static uint32_t
sum16(const uint8_t *p, uint32_t len, uint32_t sum)
{
	for (; len >= 2; p += 2, len -= 2)
		sum += (uint32_t)p[0] << 8 | p[1];
	if (len == 1)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

bool
ndisc_icmp6_checksum_ok(const uint8_t *ip, uint32_t ip_len, uint32_t l4_off)
{
	uint32_t l4_len = ip_len - l4_off;
	uint32_t sum = sum16(ip + PKT_IPV6_SRC, 32, 0);

	sum += (l4_len >> 16) + (l4_len & 0xffffu) + IPPROTO_ICMPV6;
	sum = sum16(ip + l4_off, l4_len, sum);
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return sum == 0xffffu;
}

static bool
check_arp(const uint8_t *frame, const struct pkt_meta *m, struct ndisc_info *info,
	  enum ndisc_refusal *why)
{
	uint16_t oper = pkt_arp_oper(frame, m);

	if (oper != PKT_ARP_REQUEST && oper != PKT_ARP_REPLY)
		return refuse(why, NDISC_ARP_BAD_OPER);
	if (mac_bad(pkt_arp_sender_mac(frame, m)))
		return refuse(why, NDISC_ARP_BAD_SENDER_MAC);
	if (ipv4_bad_source(pkt_arp_sender_ip(frame, m)))
		return refuse(why, NDISC_ARP_BAD_SENDER_IP);
	info->kind = oper == PKT_ARP_REQUEST ? NDISC_ARP_REQUEST : NDISC_ARP_REPLY;
	info->family = FLOW_FAMILY_IPV4;
	memcpy(info->addr, pkt_arp_sender_ip(frame, m), 4);
	info->lladdr = pkt_arp_sender_mac(frame, m);
	memcpy(info->target, pkt_arp_target_ip(frame, m), 4);
	return true;
}

/*
 * The options of the NS/NA at icmp (len bytes): each of non-zero length and
 * inside the message. *lladdr: the MAC of the first option of type want
 * (ND_OPT_*_LLADDR), or NULL.
 */
static bool
nd_options(const uint8_t *icmp, uint32_t len, uint8_t want, const uint8_t **lladdr,
	   enum ndisc_refusal *why)
{
	*lladdr = NULL;
	for (uint32_t off = ND_OPTIONS; off < len;) {
		uint32_t olen;

		if (len - off < 2 || icmp[off + 1] == 0)
			return refuse(why, NDISC_ND_BAD_OPTION);
		olen = icmp[off + 1] * 8u;
		if (olen > len - off)
			return refuse(why, NDISC_ND_BAD_OPTION);
		if (icmp[off] == want && *lladdr == NULL) {
			if (olen < ND_OPT_LLADDR_LEN || mac_bad(icmp + off + 2))
				return refuse(why, NDISC_ND_BAD_OPTION);
			*lladdr = icmp + off + 2;
		}
		off += olen;
	}
	return true;
}

/* ff02::1:ffXX:XXXX */
static bool
solicited_node(const uint8_t a[16])
{
	static const uint8_t prefix[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff };

	return memcmp(a, prefix, sizeof(prefix)) == 0;
}

static bool
unspecified(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

static bool
check_nd(const uint8_t *frame, const struct pkt_meta *m, struct ndisc_info *info,
	 enum ndisc_refusal *why)
{
	const uint8_t *ip = frame + m->l2_len, *icmp = frame + m->l4_off;
	const uint8_t *src = ip + PKT_IPV6_SRC, *dst = ip + PKT_IPV6_DST;
	uint32_t l4_off = m->l4_off - m->l2_len, icmp_len = m->ip_len - l4_off;
	bool ns = m->icmp_type == ND_TYPE_NS;

	info->family = FLOW_FAMILY_IPV6;
	if (m->icmp_type != ND_TYPE_NS && m->icmp_type != ND_TYPE_NA) {
		info->kind = NDISC_OTHER;
		info->lladdr = NULL;
		return true;
	}
	if (ip[PKT_IPV6_HOP_LIMIT] != ND_HOP_LIMIT)
		return refuse(why, NDISC_ND_BAD_HOP_LIMIT);
	if (m->icmp_code != 0)
		return refuse(why, NDISC_ND_BAD_CODE);
	if (icmp_len < ND_OPTIONS)
		return refuse(why, NDISC_ND_BAD_LENGTH);
	if (!ndisc_icmp6_checksum_ok(ip, m->ip_len, l4_off))
		return refuse(why, NDISC_ND_BAD_CHECKSUM);
	if (icmp[PKT_ND_TARGET] == 0xff)
		return refuse(why, NDISC_ND_TARGET_MULTICAST);
	if (src[0] == 0xff)
		return refuse(why, NDISC_ND_BAD_SOURCE);
	if (!nd_options(icmp, icmp_len, ns ? ND_OPT_SOURCE_LLADDR : ND_OPT_TARGET_LLADDR,
			&info->lladdr, why))
		return false;
	if (ns && unspecified(src)) {
		if (!solicited_node(dst))
			return refuse(why, NDISC_ND_DAD_NOT_SOLICITED_NODE);
		if (info->lladdr != NULL)
			return refuse(why, NDISC_ND_DAD_WITH_SLLAO);
	}
	if (!ns && (icmp[ND_FLAGS] & ND_FLAG_SOLICITED) && dst[0] == 0xff)
		return refuse(why, NDISC_ND_SOLICITED_MULTICAST);
	info->kind = ns ? NDISC_NS : NDISC_NA;
	/* An NS teaches its source's MAC, an NA its target's. */
	memcpy(info->addr, ns ? src : icmp + PKT_ND_TARGET, 16);
	memcpy(info->target, icmp + PKT_ND_TARGET, 16);
	return true;
}

bool
ndisc_check(const uint8_t *frame, uint32_t len, const struct pkt_meta *m,
	    const uint8_t port_mac[6], struct ndisc_info *info, enum ndisc_refusal *why)
{
	(void)len;      /* the parser bounded every offset read here by the
			 * IP length, itself within len */
	memset(info, 0, sizeof(*info));
	if ((frame[0] & 1) == 0 && memcmp(frame, port_mac, 6) != 0)
		return refuse(why, NDISC_SLOW_OTHER_HOST);
	if (m->kind == PKT_KIND_ARP)
		return check_arp(frame, m, info, why);
	return check_nd(frame, m, info, why);
}
