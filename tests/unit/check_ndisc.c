/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ARP and neighbour discovery validation (dataplane/core/ndisc.h), applied
 * to the neighbour table as the control thread applies it: a refused frame
 * changes nothing, a valid one still teaches. Also the parser's martian
 * sources and chained frames (packet.h).
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "dataplane/core/ndisc.h"
#include "dataplane/core/neigh.h"
#include "dataplane/core/packet.h"

static const uint8_t PORT_MAC[6] = { 0x02, 0x70, 0x63, 0x61, 0x70, 0x00 };
static const uint8_t GOOD_MAC[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t EVIL_MAC[6] = { 0x02, 0xee, 0xee, 0xee, 0xee, 0xee };
/* 2001:db8::1, the gateway; 2001:db8::10, the node */
static const uint8_t GW6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x01 };
static const uint8_t NODE6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x10 };
static const uint8_t ALL_NODES[16] = { 0xff, 0x02, [15] = 0x01 };
static const uint8_t GW4[4] = { 198, 18, 0, 1 };
static const uint8_t NODE4[4] = { 198, 18, 0, 10 };

/* An NS or NA as a frame; every field a test may spoil. */
struct nd {
	uint8_t type;           /* 135 NS, 136 NA */
	uint8_t code, hop_limit, flags;
	uint8_t src[16], dst[16], target[16];
	uint8_t opt_type, opt_len;  /* opt_len 0: no option */
	const uint8_t *mac;
	bool bad_checksum;
	uint8_t eth_dst[6];
};

static struct nd
na_valid(void)
{
	struct nd n = { .type = 136, .hop_limit = 255, .flags = 0x60,
			.opt_type = 2, .opt_len = 1, .mac = GOOD_MAC };

	memcpy(n.src, GW6, 16);
	memcpy(n.dst, NODE6, 16);
	memcpy(n.target, GW6, 16);
	memcpy(n.eth_dst, PORT_MAC, 6);
	return n;
}

static struct nd
ns_valid(void)
{
	struct nd n = na_valid();

	n.type = 135;
	n.flags = 0;
	n.opt_type = 1;
	memcpy(n.target, NODE6, 16);
	return n;
}

static uint32_t
sum16(const uint8_t *p, uint32_t n, uint32_t sum)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	return sum;
}

static uint32_t
build_nd(uint8_t *f, const struct nd *n)
{
	uint8_t *ip = f + 14, *icmp = ip + 40;
	uint32_t len = 24 + n->opt_len * 8u, sum;

	memset(f, 0, 14 + 40 + len);
	memcpy(f, n->eth_dst, 6);
	memcpy(f + 6, GOOD_MAC, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip[0] = 0x60;
	ip[4] = (uint8_t)(len >> 8);
	ip[5] = (uint8_t)len;
	ip[6] = 58;
	ip[7] = n->hop_limit;
	memcpy(ip + 8, n->src, 16);
	memcpy(ip + 24, n->dst, 16);
	icmp[0] = n->type;
	icmp[1] = n->code;
	icmp[4] = n->flags;
	memcpy(icmp + 8, n->target, 16);
	if (n->opt_len != 0) {
		icmp[24] = n->opt_type;
		icmp[25] = n->opt_len;
		memcpy(icmp + 26, n->mac, 6);
	}
	sum = sum16(ip + 8, 32, len + 58);
	sum = sum16(icmp, len, sum);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	if (n->bad_checksum)
		sum ^= 0x1234;
	icmp[2] = (uint8_t)(sum >> 8);
	icmp[3] = (uint8_t)sum;
	return 14 + 40 + len;
}

static uint32_t
build_arp(uint8_t *f, uint16_t oper, const uint8_t *mac, const uint8_t *sender,
	  const uint8_t *target)
{
	uint8_t *a = f + 14;

	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	memset(a, 0, 28);
	a[1] = 1;
	a[2] = 0x08;
	a[4] = 6;
	a[5] = 4;
	a[6] = (uint8_t)(oper >> 8);
	a[7] = (uint8_t)oper;
	memcpy(a + 8, mac, 6);
	memcpy(a + 14, sender, 4);
	memcpy(a + 24, target, 4);
	return 42;
}

/* Run f through the parser and the check; true when believed. */
static bool
check(const uint8_t *f, uint32_t len, struct ndisc_info *info, enum ndisc_refusal *why)
{
	struct pkt_meta m;
	enum dp_drop drop;

	ck_assert(pkt_parse(f, len, &m, &drop));
	ck_assert(m.kind == PKT_KIND_ARP || m.kind == PKT_KIND_ND);
	return ndisc_check(f, len, &m, PORT_MAC, info, why);
}

static void
nd_refused(const struct nd *n, enum ndisc_refusal want)
{
	uint8_t f[256];
	uint32_t len = build_nd(f, n);
	struct ndisc_info info;
	enum ndisc_refusal why = NDISC_REFUSAL_MAX;

	ck_assert_msg(!check(f, len, &info, &why), "%s: believed", ndisc_refusal_names[want]);
	ck_assert_msg(why == want, "want %s, got %s", ndisc_refusal_names[want],
		      why < NDISC_REFUSAL_MAX ? ndisc_refusal_names[why] : "none");
}

/* What the control thread does with a frame: learn from a believed one. */
static bool
apply(struct neigh *t, const uint8_t *f, uint32_t len)
{
	struct ndisc_info info;
	enum ndisc_refusal why;

	if (!check(f, len, &info, &why) || info.lladdr == NULL)
		return false;
	return neigh_update(t, info.family, info.addr, info.lladdr, 1000) >= 0;
}

START_TEST(test_na_valid)
{
	uint8_t f[256];
	struct nd n = na_valid();
	uint32_t len = build_nd(f, &n);
	struct ndisc_info info;
	enum ndisc_refusal why;

	ck_assert(check(f, len, &info, &why));
	ck_assert_uint_eq(info.kind, NDISC_NA);
	ck_assert_mem_eq(info.addr, GW6, 16);
	ck_assert_ptr_nonnull(info.lladdr);
	ck_assert_mem_eq(info.lladdr, GOOD_MAC, 6);
}
END_TEST

START_TEST(test_ns_valid)
{
	uint8_t f[256];
	struct nd n = ns_valid();
	uint32_t len = build_nd(f, &n);
	struct ndisc_info info;
	enum ndisc_refusal why;

	ck_assert(check(f, len, &info, &why));
	ck_assert_uint_eq(info.kind, NDISC_NS);
	ck_assert_mem_eq(info.addr, GW6, 16);          /* its source teaches */
	ck_assert_mem_eq(info.target, NODE6, 16);
	ck_assert_mem_eq(info.lladdr, GOOD_MAC, 6);
	/* duplicate address detection: from ::, to the solicited-node group */
	memset(n.src, 0, 16);
	memcpy(n.dst, (uint8_t[16]){ 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 0x10 }, 16);
	n.opt_len = 0;
	len = build_nd(f, &n);
	ck_assert(check(f, len, &info, &why));
	ck_assert_ptr_null(info.lladdr);
}
END_TEST

/* The spoof: every field wrong at once, from a foreign source. */
START_TEST(test_spoofed_na_changes_nothing)
{
	struct neigh_params p;
	struct neigh *t;
	uint8_t f[256];
	struct nd n = na_valid();
	uint32_t len;

	neigh_params_default(&p);
	t = neigh_create(16, &p);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(neigh_want(t, 6, GW6, 0), 0);
	len = build_nd(f, &n);
	ck_assert(apply(t, f, len));
	ck_assert_mem_eq(neigh_lookup(t, 6, GW6), GOOD_MAC, 6);

	n.hop_limit = 63;
	n.code = 7;
	n.bad_checksum = true;
	n.src[15] = 0x99;
	n.mac = EVIL_MAC;
	len = build_nd(f, &n);
	ck_assert(!apply(t, f, len));
	ck_assert_mem_eq(neigh_lookup(t, 6, GW6), GOOD_MAC, 6);
	/* each defect alone is enough */
	n = na_valid();
	n.mac = EVIL_MAC;
	n.hop_limit = 254;
	ck_assert(!apply(t, f, build_nd(f, &n)));
	n.hop_limit = 255;
	n.bad_checksum = true;
	ck_assert(!apply(t, f, build_nd(f, &n)));
	ck_assert_mem_eq(neigh_lookup(t, 6, GW6), GOOD_MAC, 6);
	/* and a valid one still moves it */
	n.bad_checksum = false;
	ck_assert(apply(t, f, build_nd(f, &n)));
	ck_assert_mem_eq(neigh_lookup(t, 6, GW6), EVIL_MAC, 6);
	neigh_destroy(t);
}
END_TEST

START_TEST(test_nd_refusals)
{
	struct nd n;

	n = na_valid(), n.hop_limit = 63, nd_refused(&n, NDISC_ND_BAD_HOP_LIMIT);
	n = na_valid(), n.code = 7, nd_refused(&n, NDISC_ND_BAD_CODE);
	n = na_valid(), n.bad_checksum = true, nd_refused(&n, NDISC_ND_BAD_CHECKSUM);
	n = na_valid(), n.target[0] = 0xff, nd_refused(&n, NDISC_ND_TARGET_MULTICAST);
	n = na_valid(), n.src[0] = 0xff, nd_refused(&n, NDISC_ND_BAD_SOURCE);
	n = na_valid(), n.opt_len = 0, n.opt_type = 0;
	{   /* an option of length 0: a zero byte where its length goes */
		uint8_t f[256];
		uint32_t len;
		struct ndisc_info info;
		enum ndisc_refusal why;

		n.opt_len = 1;
		n.opt_type = 2;
		len = build_nd(f, &n);
		f[14 + 40 + 25] = 0;            /* length 0 */
		f[14 + 40 + 2] = f[14 + 40 + 3] = 0;
		{
			uint8_t *ip = f + 14, *icmp = ip + 40;
			uint32_t sum = sum16(ip + 8, 32, 32 + 58);

			sum = sum16(icmp, 32, sum);
			while (sum >> 16)
				sum = (sum & 0xffff) + (sum >> 16);
			sum = ~sum & 0xffff;
			icmp[2] = (uint8_t)(sum >> 8);
			icmp[3] = (uint8_t)sum;
		}
		ck_assert(!check(f, len, &info, &why));
		ck_assert_uint_eq(why, NDISC_ND_BAD_OPTION);
	}
	n = na_valid(), n.mac = (const uint8_t[6]){ 0x33, 0x33, 0, 0, 0, 1 };
	nd_refused(&n, NDISC_ND_BAD_OPTION);
	n = na_valid(), memcpy(n.dst, ALL_NODES, 16), nd_refused(&n, NDISC_ND_SOLICITED_MULTICAST);
	n = ns_valid(), memset(n.src, 0, 16), nd_refused(&n, NDISC_ND_DAD_NOT_SOLICITED_NODE);
	n = ns_valid(), memset(n.src, 0, 16);
	memcpy(n.dst, (uint8_t[16]){ 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 0x10 }, 16);
	nd_refused(&n, NDISC_ND_DAD_WITH_SLLAO);
	n = na_valid(), n.eth_dst[5] = 0x42, nd_refused(&n, NDISC_SLOW_OTHER_HOST);
}
END_TEST

START_TEST(test_unsolicited_na_to_all_nodes)
{
	uint8_t f[256];
	struct nd n = na_valid();
	struct ndisc_info info;
	enum ndisc_refusal why;

	n.flags = 0x20;                         /* override, not solicited */
	memcpy(n.dst, ALL_NODES, 16);
	memcpy(n.eth_dst, (uint8_t[6]){ 0x33, 0x33, 0, 0, 0, 1 }, 6);
	ck_assert(check(f, build_nd(f, &n), &info, &why));
}
END_TEST

START_TEST(test_arp)
{
	static const uint8_t zero[4], bcast[4] = { 255, 255, 255, 255 };
	static const uint8_t mcast[4] = { 224, 0, 0, 1 }, loop[4] = { 127, 0, 0, 1 };
	struct neigh_params p;
	struct neigh *t;
	uint8_t f[64];
	struct ndisc_info info;
	enum ndisc_refusal why;
	uint32_t len;

	neigh_params_default(&p);
	t = neigh_create(16, &p);
	ck_assert_int_eq(neigh_want(t, 4, (uint8_t[16]){ 198, 18, 0, 1 }, 0), 0);
	len = build_arp(f, 2, GOOD_MAC, GW4, NODE4);
	ck_assert(check(f, len, &info, &why));
	ck_assert_uint_eq(info.kind, NDISC_ARP_REPLY);
	ck_assert(apply(t, f, len));
	len = build_arp(f, 1, GOOD_MAC, GW4, NODE4);
	ck_assert(check(f, len, &info, &why));
	ck_assert_uint_eq(info.kind, NDISC_ARP_REQUEST);
	ck_assert_mem_eq(info.target, NODE4, 4);

	len = build_arp(f, 3, EVIL_MAC, GW4, NODE4);
	ck_assert(!check(f, len, &info, &why));
	ck_assert_uint_eq(why, NDISC_ARP_BAD_OPER);
	len = build_arp(f, 2, (uint8_t[6]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, GW4, NODE4);
	ck_assert(!check(f, len, &info, &why));
	ck_assert_uint_eq(why, NDISC_ARP_BAD_SENDER_MAC);
	len = build_arp(f, 2, (uint8_t[6]){ 0 }, GW4, NODE4);
	ck_assert(!check(f, len, &info, &why));
	ck_assert_uint_eq(why, NDISC_ARP_BAD_SENDER_MAC);
	len = build_arp(f, 2, (uint8_t[6]){ 0x01, 0, 0x5e, 0, 0, 1 }, GW4, NODE4);
	ck_assert(!check(f, len, &info, &why));
	ck_assert_uint_eq(why, NDISC_ARP_BAD_SENDER_MAC);
	for (const uint8_t *const *ip = (const uint8_t *const[]){ zero, bcast, mcast, loop, NULL };
	     *ip != NULL; ip++) {
		len = build_arp(f, 2, EVIL_MAC, *ip, NODE4);
		ck_assert(!check(f, len, &info, &why));
		ck_assert_uint_eq(why, NDISC_ARP_BAD_SENDER_IP);
	}
	ck_assert_mem_eq(neigh_lookup(t, 4, (uint8_t[16]){ 198, 18, 0, 1 }), GOOD_MAC, 6);
	neigh_destroy(t);
}
END_TEST

START_TEST(test_martian)
{
	ck_assert(pkt_source_martian(4, (uint8_t[16]){ 0, 1, 2, 3 }));
	ck_assert(pkt_source_martian(4, (uint8_t[16]){ 127, 0, 0, 1 }));
	ck_assert(pkt_source_martian(4, (uint8_t[16]){ 224, 0, 0, 5 }));
	ck_assert(pkt_source_martian(4, (uint8_t[16]){ 255, 255, 255, 255 }));
	ck_assert(!pkt_source_martian(4, (uint8_t[16]){ 198, 18, 0, 1 }));
	ck_assert(pkt_source_martian(6, (uint8_t[16]){ 0 }));
	ck_assert(pkt_source_martian(6, (uint8_t[16]){ [15] = 1 }));
	ck_assert(pkt_source_martian(6, ALL_NODES));
	ck_assert(!pkt_source_martian(6, GW6));
	ck_assert(!pkt_source_martian(6, (uint8_t[16]){ [15] = 2 }));
}
END_TEST

/* A 9,054-byte frame of which only the first buffer is contiguous. */
START_TEST(test_chained_frame)
{
	static uint8_t f[9054];
	uint8_t *ip = f + 14;
	uint32_t total = sizeof(f) - 14, sum;
	struct pkt_meta m;
	enum dp_drop why;

	memset(f, 0, sizeof(f));
	memcpy(f, PORT_MAC, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(total >> 8);
	ip[3] = (uint8_t)total;
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, (uint8_t[4]){ 198, 18, 5, 5 }, 4);
	memcpy(ip + 16, (uint8_t[4]){ 198, 18, 1, 1 }, 4);
	sum = sum16(ip, 20, 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
	ip[20 + 1] = 9;
	ip[20 + 3] = 53;
	ip[20 + 4] = (uint8_t)((total - 20) >> 8);
	ip[20 + 5] = (uint8_t)(total - 20);
	/* the first buffer alone is no frame */
	ck_assert(!pkt_parse_full(f, 2048, &m, &why));
	ck_assert_uint_eq(why, DP_DROP_BAD_IP_LENGTH);
	/* as a chain: one frame */
	ck_assert(pkt_parse_head(f, 2048, sizeof(f), &m, &why));
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.ip_len, total);
	ck_assert_uint_eq(m.key.vip_port, 53);
	/* headers past a tiny first buffer */
	ck_assert(!pkt_parse_head(f, 40, sizeof(f), &m, &why));
	ck_assert_uint_eq(why, DP_DROP_CHAINED);
}
END_TEST

static Suite *
ndisc_suite(void)
{
	Suite *s = suite_create("ndisc");
	TCase *tc = tcase_create("ndisc");

	tcase_add_test(tc, test_na_valid);
	tcase_add_test(tc, test_ns_valid);
	tcase_add_test(tc, test_spoofed_na_changes_nothing);
	tcase_add_test(tc, test_nd_refusals);
	tcase_add_test(tc, test_unsolicited_na_to_all_nodes);
	tcase_add_test(tc, test_arp);
	tcase_add_test(tc, test_martian);
	tcase_add_test(tc, test_chained_frame);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ndisc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
