/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encapsulation (encap.h), frames the dataplane originates (reply.h: ICMP,
 * ARP, ND and UDP), the neighbour table (neigh.h) and IPv4 fragmentation
 * (ipfrag.h). Written bytes are parsed back here with code of the test's
 * own, checksums included.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/core/encap.h"
#include "dataplane/core/ipfrag.h"
#include "dataplane/core/neigh.h"
#include "dataplane/core/reply.h"

static const uint8_t mac_next[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b };
static const uint8_t mac_ours[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t mac_client[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0xc1 };
static const uint8_t node4[16] = { 198, 18, 0, 1 };
static const uint8_t backend4[16] = { 198, 18, 1, 10 };
static const uint8_t node6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x01 };
static const uint8_t backend6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 0x0a };
static const uint8_t vip4[4] = { 198, 19, 0, 80 };
static const uint8_t client4[4] = { 198, 18, 200, 7 };
static const uint8_t vip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x80, [15] = 0x80 };
static const uint8_t client6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0xc0, [14] = 0x12, 0x34 };
static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 0x01 };
static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 0x01 };
static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t zero6[6];

static unsigned
be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}

/* The test's own RFC 1071 sum: 64-bit accumulator, byte pairs, odd byte high. */
static uint64_t
t_sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i < len; i++)
		s += (i & 1) ? p[i] : (uint64_t)p[i] << 8;
	return s;
}

static uint16_t
t_fold(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* A header or ICMP message with its checksum in place sums to 0xffff. */
static bool
t_csum_ok(const uint8_t *p, size_t len)
{
	return t_fold(t_sum(p, len)) == 0xffff;
}

/* The ICMPv6 (or any upper layer) checksum check with the pseudo-header. */
static bool
t_csum6_ok(const uint8_t *ip6, uint8_t next, const uint8_t *l4, uint32_t len)
{
	uint64_t s = t_sum(ip6 + 8, 32) + (len >> 16) + (len & 0xffff) + next;

	return t_fold(s + t_sum(l4, len)) == 0xffff;
}

/* The IPv4 header checksum of h computed from scratch, field at 10 taken as 0. */
static unsigned
t_ip4_csum(const uint8_t *h)
{
	uint8_t c[20];

	memcpy(c, h, 20);
	c[10] = c[11] = 0;
	return (uint16_t)~t_fold(t_sum(c, 20));
}

static void
tunnel(struct encap_tunnel *t, enum encap_kind kind, uint8_t family)
{
	ck_assert_int_eq(encap_tunnel_init(t, kind, family, mac_next, mac_ours,
					   family == 4 ? node4 : node6,
					   family == 4 ? backend4 : backend6), 0);
}

static void
check_eth(const uint8_t *h, unsigned type)
{
	ck_assert_mem_eq(h, mac_next, 6);
	ck_assert_mem_eq(h + 6, mac_ours, 6);
	ck_assert_uint_eq(be16(h + 12), type);
}

/* Outer IPv4 at ip: every field. */
static void
check_ip4(const uint8_t *ip, unsigned proto, unsigned tot, uint8_t tos,
	  bool df, uint16_t id)
{
	ck_assert_uint_eq(ip[0], 0x45);
	ck_assert_uint_eq(ip[1], tos);
	ck_assert_uint_eq(be16(ip + 2), tot);
	ck_assert_uint_eq(be16(ip + 4), id);
	ck_assert_uint_eq(be16(ip + 6), df ? 0x4000 : 0);
	ck_assert_uint_eq(ip[8], 64);
	ck_assert_uint_eq(ip[9], proto);
	ck_assert_mem_eq(ip + 12, node4, 4);
	ck_assert_mem_eq(ip + 16, backend4, 4);
	ck_assert(t_csum_ok(ip, 20));
	ck_assert_uint_eq(be16(ip + 10), t_ip4_csum(ip));
}

/* Outer IPv6 at ip: every field. */
static void
check_ip6(const uint8_t *ip, unsigned next, unsigned plen, uint8_t tclass,
	  uint32_t hash)
{
	uint32_t label = (hash ^ hash >> 20) & 0xfffff;

	ck_assert_uint_eq(ip[0] >> 4, 6);
	ck_assert_uint_eq(be32(ip) >> 20 & 0xff, tclass);
	ck_assert_uint_eq(be32(ip) & 0xfffff, label == 0 ? 1 : label);
	ck_assert_uint_eq(be16(ip + 4), plen);
	ck_assert_uint_eq(ip[6], next);
	ck_assert_uint_eq(ip[7], 64);
	ck_assert_mem_eq(ip + 8, node6, 16);
	ck_assert_mem_eq(ip + 24, backend6, 16);
}

/* encap_write into a guarded buffer: exactly 14 + overhead bytes written. */
static void
write_guarded(uint8_t *buf, const struct encap_tunnel *t, uint8_t family,
	      uint16_t len, uint8_t tos, bool df, uint16_t id, uint32_t hash)
{
	size_t n = 14u + encap_overhead(t);

	memset(buf, 0xa5, 128);
	encap_write(buf, t, family, len, tos, df, id, hash);
	for (size_t i = n; i < 128; i++)
		ck_assert_uint_eq(buf[i], 0xa5);
}

START_TEST(test_gre_over_ipv4)
{
	struct encap_tunnel t;
	uint8_t h[128];

	tunnel(&t, ENCAP_GRE, 4);
	ck_assert_uint_eq(encap_overhead(&t), 24);

	write_guarded(h, &t, 4, 1000, 0x2e, true, 0x1234, 0);
	check_eth(h, 0x0800);
	check_ip4(h + 14, 47, 20 + 4 + 1000, 0x2e, true, 0x1234);
	ck_assert_uint_eq(be16(h + 34), 0);          /* C = 0, version 0 */
	ck_assert_uint_eq(be16(h + 36), 0x0800);

	write_guarded(h, &t, 6, 1280, 0xb8, false, 7, 0);
	check_eth(h, 0x0800);
	check_ip4(h + 14, 47, 20 + 4 + 1280, 0xb8, false, 7);
	ck_assert_uint_eq(be16(h + 34), 0);
	ck_assert_uint_eq(be16(h + 36), 0x86dd);
}
END_TEST

START_TEST(test_gre_over_ipv6)
{
	struct encap_tunnel t;
	uint8_t h[128];

	tunnel(&t, ENCAP_GRE, 6);
	ck_assert_uint_eq(encap_overhead(&t), 44);

	write_guarded(h, &t, 4, 1000, 0x2e, true, 1, 0xdeadbeef);
	check_eth(h, 0x86dd);
	check_ip6(h + 14, 47, 4 + 1000, 0x2e, 0xdeadbeef);
	ck_assert_uint_eq(be16(h + 54), 0);
	ck_assert_uint_eq(be16(h + 56), 0x0800);

	write_guarded(h, &t, 6, 1400, 0x03, true, 1, 0x12345678);
	check_ip6(h + 14, 47, 4 + 1400, 0x03, 0x12345678);
	ck_assert_uint_eq(be16(h + 56), 0x86dd);
}
END_TEST

START_TEST(test_ipip_4in4)
{
	struct encap_tunnel t;
	uint8_t h[128];

	tunnel(&t, ENCAP_IPIP, 4);
	ck_assert_uint_eq(encap_overhead(&t), 20);
	write_guarded(h, &t, 4, 60, 0x10, true, 0xffff, 0);
	check_eth(h, 0x0800);
	check_ip4(h + 14, 4, 20 + 60, 0x10, true, 0xffff);
}
END_TEST

START_TEST(test_ipip_6in4)
{
	struct encap_tunnel t;
	uint8_t h[128];

	tunnel(&t, ENCAP_IPIP, 4);
	write_guarded(h, &t, 6, 1480, 0xff, false, 0, 0);
	check_eth(h, 0x0800);
	check_ip4(h + 14, 41, 20 + 1480, 0xff, false, 0);
}
END_TEST

START_TEST(test_ipip_6in6)
{
	struct encap_tunnel t;
	uint8_t h[128];

	tunnel(&t, ENCAP_IPIP, 6);
	ck_assert_uint_eq(encap_overhead(&t), 40);
	write_guarded(h, &t, 6, 1460, 0x20, true, 0, 0xffffffff);
	check_eth(h, 0x86dd);
	check_ip6(h + 14, 41, 1460, 0x20, 0xffffffff);
}
END_TEST

START_TEST(test_ipip_4in6)
{
	struct encap_tunnel t;
	uint8_t h[128];

	tunnel(&t, ENCAP_IPIP, 6);
	write_guarded(h, &t, 4, 576, 0x01, false, 0, 42);
	check_eth(h, 0x86dd);
	check_ip6(h + 14, 4, 576, 0x01, 42);
}
END_TEST

/* Random TOS, lengths, IDs and DF: the outer IPv4 checksum always verifies. */
START_TEST(test_ipv4_checksum_and_tos)
{
	struct encap_tunnel t;
	uint8_t h[128];
	uint32_t x = 2463534242u;

	for (int kind = ENCAP_GRE; kind <= ENCAP_IPIP; kind++) {
		tunnel(&t, (enum encap_kind)kind, 4);
		for (int i = 0; i < 100000; i++) {
			uint16_t len = (uint16_t)(x % 9000 + 20), id;
			uint8_t tos, fam = (x >> 20) & 1 ? 6 : 4;
			bool df = (x >> 21) & 1;

			x ^= x << 13; x ^= x >> 17; x ^= x << 5;
			id = (uint16_t)x;
			tos = (uint8_t)(x >> 16);
			encap_write(h, &t, fam, len, tos, df, id, 0);
			ck_assert_uint_eq(h[15], tos);
			ck_assert_uint_eq(be16(h + 16), encap_overhead(&t) + len);
			ck_assert(t_csum_ok(h + 14, 20));
			ck_assert_uint_eq(be16(h + 24), t_ip4_csum(h + 14));
		}
	}
}
END_TEST

START_TEST(test_flow_label_from_hash)
{
	struct encap_tunnel t;
	static uint8_t seen[1 << 20];
	uint8_t h[128];
	uint32_t x = 88172645u, distinct = 0;

	tunnel(&t, ENCAP_GRE, 6);
	/* 0 and hashes that fold to 0 are labelled 1: 0 means "no label" */
	encap_write(h, &t, 4, 100, 0xfc, true, 0, 0);
	ck_assert_uint_eq(be32(h + 14) & 0xfffff, 1);
	encap_write(h, &t, 4, 100, 0xfc, true, 0, 0x00100001);
	ck_assert_uint_eq(be32(h + 14) & 0xfffff, 1);
	encap_write(h, &t, 4, 100, 0xfc, true, 0, 0xabcde);
	ck_assert_uint_eq(be32(h + 14), 0x6fc00000u | 0xabcde);
	/* the high bits matter too: hashes equal in their low 20 bits differ */
	encap_write(h, &t, 4, 100, 0, true, 0, 0x12345 | 0x7ff00000u);
	ck_assert_uint_eq(be32(h + 14) & 0xfffff, 0x12345 ^ 0x7ff);
	/* spread: 4096 random hashes land on nearly as many labels */
	for (int i = 0; i < 4096; i++) {
		uint32_t label;

		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		encap_write(h, &t, 6, 100, 0, true, 0, x);
		label = be32(h + 14) & 0xfffff;
		ck_assert_uint_eq(be32(h + 14) >> 28, 6);
		if (!seen[label]++)
			distinct++;
	}
	ck_assert_uint_gt(distinct, 4000);
}
END_TEST

START_TEST(test_l2_rewrite_only_macs)
{
	struct encap_tunnel t;
	uint8_t frame[200], orig[200], h[128];

	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(i * 7 + 3);
	memcpy(orig, frame, sizeof(frame));
	tunnel(&t, ENCAP_L2, 4);
	ck_assert_uint_eq(encap_overhead(&t), 0);
	encap_l2_rewrite(frame, &t);
	ck_assert_mem_eq(frame, mac_next, 6);
	ck_assert_mem_eq(frame + 6, mac_ours, 6);
	ck_assert_mem_eq(frame + 12, orig + 12, sizeof(frame) - 12);

	/* encap_write of an L2 tunnel: just the Ethernet header of the inner family */
	write_guarded(h, &t, 6, 1500, 0, true, 0, 0);
	check_eth(h, 0x86dd);
	write_guarded(h, &t, 4, 1500, 0, true, 0, 0);
	check_eth(h, 0x0800);
}
END_TEST

START_TEST(test_encap_init_rejects)
{
	struct encap_tunnel t;

	ck_assert_int_eq(encap_tunnel_init(&t, ENCAP_KIND_MAX, 4, mac_next, mac_ours,
					   node4, backend4), -EINVAL);
	ck_assert_int_eq(encap_tunnel_init(&t, ENCAP_GRE, 5, mac_next, mac_ours,
					   node4, backend4), -EINVAL);
	ck_assert_int_eq(encap_tunnel_init(&t, ENCAP_IPIP, 0, mac_next, mac_ours,
					   node4, backend4), -EINVAL);
	ck_assert_str_eq(encap_kind_names[ENCAP_GRE], "gre");
	ck_assert_str_eq(encap_kind_names[ENCAP_L2], "l2");
}
END_TEST

/* A benchmark, not an assertion: ns per encap_write, GRE over IPv4. */
START_TEST(test_bench_gre4)
{
	enum { N = 10000000 };
	struct encap_tunnel t;
	struct timespec a, b;
	uint8_t h[64];
	unsigned sink = 0;
	double ns;

	tunnel(&t, ENCAP_GRE, 4);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (uint32_t i = 0; i < N; i++) {
		encap_write(h, &t, 4, (uint16_t)(64 + (i & 1023)), (uint8_t)i, true,
			    (uint16_t)i, i);
		sink += h[24];
		__asm__ volatile("" : : "r"(h) : "memory");
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / N;
	printf("bench encap_write gre/ipv4: %.2f ns per call over %d calls (sink %u)\n",
	       ns, N, sink & 1);
	fflush(stdout);
}
END_TEST

/* ---- reply.h ---- */

/* [Ethernet][IPv4 tot bytes, TCP] from client4 to vip4; returns the frame length. */
static uint32_t
frame4(uint8_t *f, uint16_t tot, uint8_t proto)
{
	uint8_t *ip = f + 14;

	memcpy(f, mac_ours, 6);
	memcpy(f + 6, mac_client, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	for (uint32_t i = 20; i < tot; i++)
		ip[i] = (uint8_t)(i * 13 + 1);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[1] = 0xb9;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[6] = 0x40;
	ip[8] = 57;
	ip[9] = proto;
	memcpy(ip + 12, client4, 4);
	memcpy(ip + 16, vip4, 4);
	return 14u + tot;
}

/* [Ethernet][IPv6 40 + plen bytes] from client6 to vip6. */
static uint32_t
frame6(uint8_t *f, uint16_t plen, uint8_t next)
{
	uint8_t *ip = f + 14;

	memcpy(f, mac_ours, 6);
	memcpy(f + 6, mac_client, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	for (uint32_t i = 40; i < 40u + plen; i++)
		ip[i] = (uint8_t)(i * 11 + 5);
	memset(ip, 0, 40);
	ip[0] = 0x60;
	ip[4] = (uint8_t)(plen >> 8);
	ip[5] = (uint8_t)plen;
	ip[6] = next;
	ip[7] = 61;
	memcpy(ip + 8, client6, 16);
	memcpy(ip + 24, vip6, 16);
	return 14u + 40 + plen;
}

static void
check_too_big4(const uint8_t *r, size_t n, const uint8_t *f, uint32_t orig_len,
	       uint16_t mtu)
{
	const uint8_t *ip = r + 14, *icmp = ip + 20;
	uint32_t body = orig_len < 548 ? orig_len : 548;

	ck_assert_uint_eq(n, 14 + 28 + body);
	ck_assert_mem_eq(r, mac_client, 6);
	ck_assert_mem_eq(r + 6, mac_ours, 6);
	ck_assert_uint_eq(be16(r + 12), 0x0800);
	ck_assert_uint_eq(ip[0], 0x45);
	ck_assert_uint_eq(ip[1], 0xc0 | (f[15] & 0x1e));  /* as Linux: precedence 6 */
	ck_assert_uint_eq(be16(ip + 2), 28 + body);
	ck_assert_uint_eq(be16(ip + 4), 0);
	ck_assert_uint_eq(be16(ip + 6), 0x4000);     /* DF, atomic (RFC 6864) */
	ck_assert_uint_le(be16(ip + 2), 576);
	ck_assert_uint_eq(ip[8], 64);
	ck_assert_uint_eq(ip[9], 1);
	ck_assert_mem_eq(ip + 12, vip4, 4);
	ck_assert_mem_eq(ip + 16, client4, 4);
	ck_assert(t_csum_ok(ip, 20));
	ck_assert_uint_eq(icmp[0], 3);
	ck_assert_uint_eq(icmp[1], 4);
	ck_assert_uint_eq(be16(icmp + 4), 0);
	ck_assert_uint_eq(be16(icmp + 6), mtu);
	ck_assert(t_csum_ok(icmp, 8 + body));
	ck_assert_mem_eq(icmp + 8, f + 14, body);
}

START_TEST(test_too_big_ipv4)
{
	static uint8_t f[2048], r[2048];
	uint32_t len = frame4(f, 1500, 6);
	size_t n = reply_too_big(r, sizeof(r), f, len, 14, 4, 1476);

	check_too_big4(r, n, f, 1500, 1476);
	ck_assert_uint_eq(n, 14 + 576);              /* cut to 576 bytes of IP */

	len = frame4(f, 100, 17);                    /* small: all of it */
	n = reply_too_big(r, sizeof(r), f, len + 6, 14, 4, 1400); /* Ethernet padding */
	check_too_big4(r, n, f, 100, 1400);
}
END_TEST

START_TEST(test_too_big_ipv6)
{
	static uint8_t f[2048], r[2048];
	uint32_t len = frame6(f, 1460, 6);
	size_t n = reply_too_big(r, sizeof(r), f, len, 14, 6, 1456);
	const uint8_t *ip = r + 14, *icmp = ip + 40;

	ck_assert_uint_eq(n, 14 + 1280);             /* cut to 1280 bytes of IPv6 */
	ck_assert_mem_eq(r, mac_client, 6);
	ck_assert_mem_eq(r + 6, mac_ours, 6);
	ck_assert_uint_eq(be16(r + 12), 0x86dd);
	ck_assert_uint_eq(ip[0] >> 4, 6);
	ck_assert_uint_eq(be16(ip + 4), 1240);
	ck_assert_uint_eq(ip[6], 58);
	ck_assert_uint_eq(ip[7], 64);
	ck_assert_mem_eq(ip + 8, vip6, 16);
	ck_assert_mem_eq(ip + 24, client6, 16);
	ck_assert_uint_eq(icmp[0], 2);
	ck_assert_uint_eq(icmp[1], 0);
	ck_assert_uint_eq(be32(icmp + 4), 1456);
	ck_assert(t_csum6_ok(ip, 58, icmp, 1240));
	ck_assert_mem_eq(icmp + 8, f + 14, 1232);

	len = frame6(f, 200, 17);
	n = reply_too_big(r, sizeof(r), f, len, 14, 6, 1280);
	ck_assert_uint_eq(n, 14 + 40 + 8 + 240);
	ck_assert_uint_eq(be16(ip + 4), 248);
	ck_assert(t_csum6_ok(ip, 58, icmp, 248));
	ck_assert_mem_eq(icmp + 8, f + 14, 240);
}
END_TEST

START_TEST(test_too_big_cap_too_small)
{
	static uint8_t f[2048], r[2048];
	uint32_t len = frame4(f, 1500, 6);

	ck_assert_uint_eq(reply_too_big(r, 14 + 576 - 1, f, len, 14, 4, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, 14 + 576, f, len, 14, 4, 1400), 14 + 576);
	len = frame6(f, 1460, 6);
	ck_assert_uint_eq(reply_too_big(r, 14 + 1280 - 1, f, len, 14, 6, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, 14 + 1280, f, len, 14, 6, 1400), 14 + 1280);
}
END_TEST

START_TEST(test_too_big_malformed)
{
	static uint8_t f[2048], r[2048];
	uint32_t len = frame4(f, 1500, 6);

	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len - 1, 14, 4, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 6, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 5, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 10, 4, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, 30, 14, 4, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, 10, 14, 4, 1400), 0);
	f[14] = 0x44;                                /* IHL 4 */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	f[14] = 0x55;                                /* version 5 */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	len = frame6(f, 1000, 6);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len - 1, 14, 6, 1400), 0);
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, 50, 14, 6, 1400), 0);
}
END_TEST

/* RFC 1122 3.2.2, RFC 4443 2.4(e): no error about these. */
START_TEST(test_too_big_refused)
{
	static uint8_t f[2048], r[2048];
	uint32_t len;

	len = frame4(f, 1500, 6);
	f[14 + 12] = 224;                            /* multicast source */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	f[14 + 12] = 0;                              /* 0.0.0.0/8 */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	f[14 + 12] = 127;
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	len = frame4(f, 1500, 6);
	f[14 + 7] = 0xb9;                            /* non-initial fragment */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	len = frame4(f, 1500, 1);
	f[14 + 20] = 3;                              /* an ICMP error */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 0);
	f[14 + 20] = 8;                              /* an echo request: answered */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 4, 1400), 14 + 576);

	len = frame6(f, 1460, 58);
	f[14 + 40] = 1;                              /* ICMPv6 unreachable */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 6, 1400), 0);
	f[14 + 40] = 128;                            /* echo request */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 6, 1400), 14 + 1280);
	len = frame6(f, 1460, 44);
	f[14 + 42] = 0x05;                           /* fragment offset 1280 */
	f[14 + 43] = 0x00;
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 6, 1400), 0);
	len = frame6(f, 1460, 6);
	f[14 + 8] = 0xff;                            /* multicast source */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 6, 1400), 0);
	memset(f + 14 + 8, 0, 16);                   /* :: */
	ck_assert_uint_eq(reply_too_big(r, sizeof(r), f, len, 14, 6, 1400), 0);
}
END_TEST

/* A VLAN-tagged frame answered in place gives what an out-of-place build gives. */
START_TEST(test_too_big_vlan_in_place)
{
	static uint8_t f[2048], g[2048], r[2048];
	uint32_t len = frame4(f + 4, 1500, 6) + 4;
	size_t n, m;

	memcpy(f, mac_ours, 6);
	memcpy(f + 6, mac_client, 6);
	f[12] = 0x81;
	f[13] = 0x00;
	f[14] = 0x00;
	f[15] = 0x2a;                                /* VLAN 42 */
	f[16] = 0x08;
	f[17] = 0x00;
	memcpy(g, f, len);
	n = reply_too_big(r, sizeof(r), f, len, 18, 4, 1476);
	ck_assert_uint_eq(n, 18 + 576);
	ck_assert_mem_eq(r, mac_client, 6);
	ck_assert_mem_eq(r + 12, f + 12, 6);         /* tag and ethertype kept */
	m = reply_too_big(g, sizeof(g), g, len, 18, 4, 1476);
	ck_assert_uint_eq(m, n);
	ck_assert_mem_eq(g, r, n);

	len = frame6(f, 1460, 17);
	memcpy(g, f, len);
	n = reply_too_big(r, sizeof(r), f, len, 14, 6, 1456);
	m = reply_too_big(g, sizeof(g), g, len, 14, 6, 1456);
	ck_assert_uint_eq(m, n);
	ck_assert_mem_eq(g, r, n);
}
END_TEST

START_TEST(test_too_big_mtu)
{
	ck_assert_uint_eq(reply_too_big_mtu(1500, 24, 4), 1476);
	ck_assert_uint_eq(reply_too_big_mtu(1500, 20, 4), 1480);
	ck_assert_uint_eq(reply_too_big_mtu(1500, 0, 4), 1500);
	ck_assert_uint_eq(reply_too_big_mtu(600, 44, 4), 556);
	ck_assert_uint_eq(reply_too_big_mtu(80, 24, 4), 68);
	ck_assert_uint_eq(reply_too_big_mtu(20, 24, 4), 68);
	ck_assert_uint_eq(reply_too_big_mtu(1500, 44, 6), 1456);
	ck_assert_uint_eq(reply_too_big_mtu(9000, 40, 6), 8960);
	ck_assert_uint_eq(reply_too_big_mtu(1300, 44, 6), 1280);
}
END_TEST

static uint32_t
arp_frame(uint8_t *f, unsigned oper)
{
	static const uint8_t target[4] = { 198, 19, 0, 80 };

	memset(f, 0, 60);
	memcpy(f, broadcast, 6);
	memcpy(f + 6, mac_client, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	f[15] = 1;
	f[16] = 0x08;
	f[18] = 6;
	f[19] = 4;
	f[21] = (uint8_t)oper;
	memcpy(f + 22, mac_client, 6);
	memcpy(f + 28, client4, 4);
	memcpy(f + 38, target, 4);
	return 60;
}

static void
check_arp(const uint8_t *a, unsigned oper, const uint8_t *sha, const uint8_t *spa,
	  const uint8_t *tha, const uint8_t *tpa)
{
	ck_assert_uint_eq(be16(a), 1);
	ck_assert_uint_eq(be16(a + 2), 0x0800);
	ck_assert_uint_eq(a[4], 6);
	ck_assert_uint_eq(a[5], 4);
	ck_assert_uint_eq(be16(a + 6), oper);
	ck_assert_mem_eq(a + 8, sha, 6);
	ck_assert_mem_eq(a + 14, spa, 4);
	ck_assert_mem_eq(a + 18, tha, 6);
	ck_assert_mem_eq(a + 24, tpa, 4);
	for (int i = 28; i < 46; i++)                /* padding to 60 bytes */
		ck_assert_uint_eq(a[i], 0);
}

START_TEST(test_arp_reply)
{
	uint8_t f[64], r[64];
	uint32_t len = arp_frame(f, 1);

	memset(r, 0xa5, sizeof(r));
	ck_assert_uint_eq(reply_arp(r, sizeof(r), f, len, mac_ours), 60);
	ck_assert_mem_eq(r, mac_client, 6);
	ck_assert_mem_eq(r + 6, mac_ours, 6);
	ck_assert_uint_eq(be16(r + 12), 0x0806);
	check_arp(r + 14, 2, mac_ours, vip4, mac_client, client4);

	ck_assert_uint_eq(reply_arp(r, 59, f, len, mac_ours), 0);
	ck_assert_uint_eq(reply_arp(r, sizeof(r), f, 41, mac_ours), 0);
	ck_assert_uint_eq(reply_arp(r, sizeof(r), f, 42, mac_ours), 60);
	len = arp_frame(f, 2);                       /* a reply is not answered */
	ck_assert_uint_eq(reply_arp(r, sizeof(r), f, len, mac_ours), 0);
	len = arp_frame(f, 1);
	f[19] = 16;                                  /* not IPv4 */
	ck_assert_uint_eq(reply_arp(r, sizeof(r), f, len, mac_ours), 0);
	len = arp_frame(f, 1);
	f[13] = 0x00;                                /* not ARP */
	ck_assert_uint_eq(reply_arp(r, sizeof(r), f, len, mac_ours), 0);
}
END_TEST

START_TEST(test_arp_request)
{
	uint8_t r[64];

	memset(r, 0xa5, sizeof(r));
	ck_assert_uint_eq(reply_arp_request(r, 59, mac_ours, node4, backend4), 0);
	ck_assert_uint_eq(reply_arp_request(r, sizeof(r), mac_ours, node4, backend4), 60);
	ck_assert_mem_eq(r, broadcast, 6);
	ck_assert_mem_eq(r + 6, mac_ours, 6);
	ck_assert_uint_eq(be16(r + 12), 0x0806);
	check_arp(r + 14, 1, mac_ours, node4, zero6, backend4);
}
END_TEST

START_TEST(test_arp_gratuitous)
{
	uint8_t r[64];

	memset(r, 0xa5, sizeof(r));
	ck_assert_uint_eq(reply_arp_gratuitous(r, sizeof(r), mac_ours, vip4), 60);
	ck_assert_mem_eq(r, broadcast, 6);
	ck_assert_mem_eq(r + 6, mac_ours, 6);
	ck_assert_uint_eq(be16(r + 12), 0x0806);
	check_arp(r + 14, 1, mac_ours, vip4, zero6, vip4);
}
END_TEST

/* A neighbour solicitation for vip6 from src (:: for DAD). */
static uint32_t
ns_frame(uint8_t *f, const uint8_t *src)
{
	uint8_t *ip = f + 14, *icmp = ip + 40;
	uint8_t dst[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff };
	uint16_t c;

	memcpy(dst + 13, vip6 + 13, 3);
	memset(f, 0, 14 + 40 + 32);
	f[0] = 0x33;
	f[1] = 0x33;
	memcpy(f + 2, dst + 12, 4);
	memcpy(f + 6, mac_client, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip[0] = 0x60;
	ip[5] = 32;
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	icmp[0] = 135;
	memcpy(icmp + 8, vip6, 16);
	icmp[24] = 1;
	icmp[25] = 1;
	memcpy(icmp + 26, mac_client, 6);
	c = (uint16_t)~t_fold(t_sum(ip + 8, 32) + 32 + 58 + t_sum(icmp, 32));
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	ck_assert(t_csum6_ok(ip, 58, icmp, 32));
	return 14 + 40 + 32;
}

/* An ND packet (86 bytes): Ethernet, IPv6 with hop limit 255, ICMPv6, one option. */
static void
check_nd(const uint8_t *r, const uint8_t *eth_dst, const uint8_t *src,
	 const uint8_t *dst, unsigned type, unsigned flags, const uint8_t *target,
	 unsigned opt, const uint8_t *mac)
{
	const uint8_t *ip = r + 14, *icmp = ip + 40;

	ck_assert_mem_eq(r, eth_dst, 6);
	ck_assert_mem_eq(r + 6, mac, 6);
	ck_assert_uint_eq(be16(r + 12), 0x86dd);
	ck_assert_uint_eq(be32(ip), 0x60000000u);
	ck_assert_uint_eq(be16(ip + 4), 32);
	ck_assert_uint_eq(ip[6], 58);
	ck_assert_uint_eq(ip[7], 255);
	ck_assert_mem_eq(ip + 8, src, 16);
	ck_assert_mem_eq(ip + 24, dst, 16);
	ck_assert_uint_eq(icmp[0], type);
	ck_assert_uint_eq(icmp[1], 0);
	ck_assert_uint_eq(be32(icmp + 4), (uint32_t)flags << 24);
	ck_assert_mem_eq(icmp + 8, target, 16);
	ck_assert_uint_eq(icmp[24], opt);
	ck_assert_uint_eq(icmp[25], 1);
	ck_assert_mem_eq(icmp + 26, mac, 6);
	ck_assert(t_csum6_ok(ip, 58, icmp, 32));
}

START_TEST(test_nd_na)
{
	uint8_t f[128], r[128];
	uint32_t len = ns_frame(f, client6);

	ck_assert_uint_eq(reply_nd_na(r, sizeof(r), f, len, mac_ours), 86);
	check_nd(r, mac_client, vip6, client6, 136, 0x40 | 0x20, vip6, 2, mac_ours);
	ck_assert_uint_eq(reply_nd_na(r, 85, f, len, mac_ours), 0);

	/* in place */
	ck_assert_uint_eq(reply_nd_na(f, sizeof(f), f, len, mac_ours), 86);
	ck_assert_mem_eq(f, r, 86);

	len = ns_frame(f, client6);
	f[14 + 7] = 64;                              /* hop limit not 255 */
	ck_assert_uint_eq(reply_nd_na(r, sizeof(r), f, len, mac_ours), 0);
	len = ns_frame(f, client6);
	f[14 + 40] = 128;                            /* not an NS */
	ck_assert_uint_eq(reply_nd_na(r, sizeof(r), f, len, mac_ours), 0);
	len = ns_frame(f, client6);
	ck_assert_uint_eq(reply_nd_na(r, sizeof(r), f, 14 + 40 + 23, mac_ours), 0);
	f[14 + 40 + 8] = 0xff;                       /* multicast target */
	ck_assert_uint_eq(reply_nd_na(r, sizeof(r), f, len, mac_ours), 0);
}
END_TEST

START_TEST(test_nd_na_to_dad)
{
	static const uint8_t any[16];
	uint8_t f[128], r[128];
	uint32_t len = ns_frame(f, any);

	ck_assert_uint_eq(reply_nd_na(r, sizeof(r), f, len, mac_ours), 86);
	/* all-nodes, override set, solicited clear (RFC 4861 7.2.4) */
	check_nd(r, all_nodes_mac, vip6, all_nodes, 136, 0x20, vip6, 2, mac_ours);
}
END_TEST

START_TEST(test_nd_ns)
{
	static const uint8_t target[16] = { 0x20, 0x01, 0x0d, 0xb8, [13] = 0xab, 0xcd, 0xef };
	static const uint8_t snm[16] = { 0xff, 0x02, [11] = 1, 0xff, 0xab, 0xcd, 0xef };
	static const uint8_t snm_mac[6] = { 0x33, 0x33, 0xff, 0xab, 0xcd, 0xef };
	uint8_t r[128];

	ck_assert_uint_eq(reply_nd_ns(r, 85, mac_ours, node6, target), 0);
	ck_assert_uint_eq(reply_nd_ns(r, sizeof(r), mac_ours, node6, target), 86);
	check_nd(r, snm_mac, node6, snm, 135, 0, target, 1, mac_ours);
}
END_TEST

START_TEST(test_nd_unsolicited_na)
{
	uint8_t r[128];

	ck_assert_uint_eq(reply_nd_unsolicited_na(r, 85, mac_ours, vip6), 0);
	ck_assert_uint_eq(reply_nd_unsolicited_na(r, sizeof(r), mac_ours, vip6), 86);
	check_nd(r, all_nodes_mac, vip6, all_nodes, 136, 0x20, vip6, 2, mac_ours);
}
END_TEST

/* The one's complement sum of p[0..len), folded (the test's own RFC 1071). */
static unsigned
sum16(unsigned sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 2)
		sum += (unsigned)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* A UDP datagram of len payload bytes in frame r: addresses, ports, TTL,
 * lengths and checksums as the test computes them. */
static void
check_udp(const uint8_t *r, size_t frame_len, uint8_t family, const uint8_t *src,
	  const uint8_t *dst, uint8_t ttl, const uint8_t *payload, unsigned len)
{
	bool v4 = family == 4;
	unsigned alen = v4 ? 4 : 16, ip_hdr = v4 ? 20 : 40, sum;
	const uint8_t *ip = r + 14, *udp = ip + ip_hdr;

	ck_assert_uint_ge(frame_len, 60);
	ck_assert_uint_ge(frame_len, 14 + ip_hdr + 8 + len);
	ck_assert(memcmp(r, mac_next, 6) == 0 && memcmp(r + 6, mac_ours, 6) == 0);
	ck_assert_uint_eq(be16(r + 12), v4 ? 0x0800 : 0x86dd);
	if (v4) {
		ck_assert_uint_eq(ip[0], 0x45);
		ck_assert_uint_eq(be16(ip + 2), 20 + 8 + len);
		ck_assert_uint_eq(be16(ip + 6), 0x4000);
		ck_assert_uint_eq(ip[8], ttl);
		ck_assert_uint_eq(ip[9], 17);
		ck_assert_uint_eq(sum16(0, ip, 20), 0xffff);
	} else {
		ck_assert_uint_eq(ip[0] >> 4, 6);
		ck_assert_uint_eq(be16(ip + 4), 8 + len);
		ck_assert_uint_eq(ip[6], 17);
		ck_assert_uint_eq(ip[7], ttl);
	}
	ck_assert(memcmp(ip + (v4 ? 12 : 8), src, alen) == 0);
	ck_assert(memcmp(ip + (v4 ? 16 : 24), dst, alen) == 0);
	ck_assert_uint_eq(be16(udp), 49152);
	ck_assert_uint_eq(be16(udp + 2), 3784);
	ck_assert_uint_eq(be16(udp + 4), 8 + len);
	ck_assert(memcmp(udp + 8, payload, len) == 0);
	ck_assert_uint_ne(be16(udp + 6), 0);
	sum = sum16(0, src, alen);
	sum = sum16(sum, dst, alen);
	sum = sum16(sum + 17 + 8 + len, udp, 8 + len);
	ck_assert_uint_eq(sum, 0xffff);
	ck_assert(reply_udp_csum_ok(ip, udp, family));
}

START_TEST(test_udp_both_families)
{
	static const uint8_t payload[24] = { 0x20, 0xc0, 3, 24, 1, 2, 3, 4 };
	struct reply_udp u = {
		.src_mac = mac_ours, .dst_mac = mac_next, .family = 4, .ttl = 255,
		.tos = 0xc0, .src = node4, .dst = backend4, .sport = 49152, .dport = 3784,
		.payload = payload, .len = sizeof(payload),
	};
	uint8_t r[128];
	size_t n;

	ck_assert_uint_eq(reply_udp(r, 59, &u), 0);
	n = reply_udp(r, sizeof(r), &u);
	ck_assert_uint_eq(n, 66);
	ck_assert_uint_eq(r[15], 0xc0);
	check_udp(r, n, 4, node4, backend4, 255, payload, sizeof(payload));
	u.family = 6;
	u.src = node6;
	u.dst = backend6;
	ck_assert_uint_eq(reply_udp(r, 85, &u), 0);
	n = reply_udp(r, sizeof(r), &u);
	ck_assert_uint_eq(n, 86);
	ck_assert_uint_eq((be16(r + 14) >> 4) & 0xff, 0xc0);    /* traffic class */
	check_udp(r, n, 6, node6, backend6, 255, payload, sizeof(payload));
	u.family = 5;
	ck_assert_uint_eq(reply_udp(r, sizeof(r), &u), 0);
}
END_TEST

/* A short payload is padded to the Ethernet minimum, the lengths say the truth. */
START_TEST(test_udp_padded)
{
	static const uint8_t payload[2] = { 0xab, 0xcd };
	struct reply_udp u = {
		.src_mac = mac_ours, .dst_mac = mac_next, .family = 4, .ttl = 1,
		.src = node4, .dst = backend4, .sport = 49152, .dport = 3784,
		.payload = payload, .len = sizeof(payload),
	};
	uint8_t r[128];

	memset(r, 0x55, sizeof(r));
	ck_assert_uint_eq(reply_udp(r, sizeof(r), &u), 60);
	check_udp(r, 60, 4, node4, backend4, 1, payload, sizeof(payload));
	for (size_t i = 14 + 20 + 8 + 2; i < 60; i++)
		ck_assert_uint_eq(r[i], 0);
}
END_TEST

/* A flipped bit fails the checksum; 0 is "none" in IPv4 only. */
START_TEST(test_udp_csum_checked)
{
	static const uint8_t payload[24] = { 0x20 };
	struct reply_udp u = {
		.src_mac = mac_ours, .dst_mac = mac_next, .family = 4, .ttl = 255,
		.src = node4, .dst = backend4, .sport = 49152, .dport = 3784,
		.payload = payload, .len = sizeof(payload),
	};
	uint8_t r[128];

	for (int f = 4; f <= 6; f += 2) {
		uint8_t *ip = r + 14, *udp = ip + (f == 4 ? 20 : 40);

		u.family = (uint8_t)f;
		u.src = f == 4 ? node4 : node6;
		u.dst = f == 4 ? backend4 : backend6;
		ck_assert_uint_ne(reply_udp(r, sizeof(r), &u), 0);
		ck_assert(reply_udp_csum_ok(ip, udp, u.family));
		udp[8 + 5] ^= 0x10;
		ck_assert(!reply_udp_csum_ok(ip, udp, u.family));
		udp[6] = udp[7] = 0;
		ck_assert(reply_udp_csum_ok(ip, udp, u.family) == (f == 4));
	}
}
END_TEST

/* ---- neigh.h ---- */

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0xaa };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0xbb };

static struct neigh *
table(uint32_t capacity)
{
	struct neigh *n = neigh_create(capacity, NULL);

	ck_assert_ptr_nonnull(n);
	return n;
}

START_TEST(test_neigh_want_due)
{
	struct neigh *n = table(8);
	struct neigh_addr out[8];

	ck_assert_int_eq(neigh_want(n, 4, backend4, 1000), 0);
	ck_assert_int_eq(neigh_want(n, 6, backend6, 1000), 0);
	ck_assert_int_eq(neigh_want(n, 4, backend4, 1000), 0);   /* idempotent */
	ck_assert_uint_eq(neigh_count(n), 2);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_INCOMPLETE);
	ck_assert_ptr_null(neigh_lookup(n, 4, backend4));

	ck_assert_uint_eq(neigh_due(n, 1000, out, 8), 2);
	ck_assert(out[0].family != out[1].family);
	for (int i = 0; i < 2; i++)
		ck_assert_mem_eq(out[i].addr, out[i].family == 4 ? backend4 : backend6, 16);
	ck_assert_uint_eq(neigh_due(n, 1999, out, 8), 0);        /* retrans 1 s */
	ck_assert_int_eq(neigh_want(n, 4, backend4, 1500), 0);   /* no reset */
	ck_assert_uint_eq(neigh_due(n, 1500, out, 8), 0);
	ck_assert_uint_eq(neigh_due(n, 2000, out, 8), 2);
	ck_assert_int_eq(neigh_want(n, 5, backend4, 0), -EINVAL);
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_update_lookup)
{
	struct neigh *n = table(8);
	struct neigh_addr out[8];
	uint8_t garbage[16];
	uint64_t gen;

	neigh_want(n, 4, backend4, 0);
	gen = neigh_generation(n);
	ck_assert_int_eq(neigh_update(n, 4, backend4, mac_a, 10), 1);
	ck_assert_uint_ne(neigh_generation(n), gen);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_REACHABLE);
	ck_assert_mem_eq(neigh_lookup(n, 4, backend4), mac_a, 6);
	/* IPv4: only the first 4 bytes count */
	memset(garbage, 0x77, sizeof(garbage));
	memcpy(garbage, backend4, 4);
	ck_assert_mem_eq(neigh_lookup(n, 4, garbage), mac_a, 6);
	ck_assert_ptr_null(neigh_lookup(n, 6, garbage));
	gen = neigh_generation(n);
	ck_assert_int_eq(neigh_update(n, 4, garbage, mac_a, 20), 0); /* same MAC */
	ck_assert_uint_eq(neigh_generation(n), gen);
	ck_assert_uint_eq(neigh_due(n, 14000, out, 8), 0);
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_mac_change)
{
	struct neigh *n = table(8);
	struct neigh_stats st;
	uint64_t gen;

	neigh_want(n, 6, backend6, 0);
	ck_assert_int_eq(neigh_update(n, 6, backend6, mac_a, 0), 1);
	gen = neigh_generation(n);
	ck_assert_int_eq(neigh_update(n, 6, backend6, mac_b, 5), 1);
	ck_assert_uint_ne(neigh_generation(n), gen);
	ck_assert_mem_eq(neigh_lookup(n, 6, backend6), mac_b, 6);
	ck_assert_int_eq(neigh_update(n, 6, backend6, mac_b, 6), 0);
	neigh_stats_get(n, &st);
	ck_assert_uint_eq(st.changed, 2);
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_unknown_ignored)
{
	struct neigh *n = table(8);
	struct neigh_stats st;

	neigh_want(n, 4, backend4, 0);
	ck_assert_int_eq(neigh_update(n, 4, node4, mac_a, 0), -ENOENT);
	ck_assert_int_eq(neigh_update(n, 6, backend4, mac_a, 0), -ENOENT);
	ck_assert_int_eq(neigh_update(n, 9, backend4, mac_a, 0), -EINVAL);
	ck_assert_ptr_null(neigh_lookup(n, 4, node4));
	ck_assert_int_eq(neigh_state(n, 4, node4), -ENOENT);
	ck_assert_uint_eq(neigh_count(n), 1);
	neigh_stats_get(n, &st);
	ck_assert_uint_eq(st.ignored, 2);
	neigh_destroy(n);
}
END_TEST

/* REACHABLE -> STALE (still used, probed) -> FAILED (not used) -> answer. */
START_TEST(test_neigh_aging)
{
	struct neigh *n = table(8);
	struct neigh_addr out[8];
	uint64_t t0 = 100000, gen;

	neigh_want(n, 4, backend4, 0);
	neigh_update(n, 4, backend4, mac_a, t0);
	/* reachable time is in [15 s, 45 s) */
	ck_assert_uint_eq(neigh_due(n, t0 + 14999, out, 8), 0);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_REACHABLE);
	ck_assert_uint_eq(neigh_due(n, t0 + 45000, out, 8), 1);
	ck_assert_mem_eq(out[0].addr, backend4, 4);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_STALE);
	ck_assert_mem_eq(neigh_lookup(n, 4, backend4), mac_a, 6);    /* still used */

	gen = neigh_generation(n);
	ck_assert_uint_eq(neigh_due(n, t0 + 45999, out, 8), 0);
	ck_assert_uint_eq(neigh_due(n, t0 + 46000, out, 8), 1);
	ck_assert_uint_eq(neigh_due(n, t0 + 47000, out, 8), 1);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_STALE);
	ck_assert_uint_eq(neigh_generation(n), gen);
	ck_assert_uint_eq(neigh_due(n, t0 + 48000, out, 8), 0);     /* 3 unanswered */
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_FAILED);
	ck_assert_ptr_null(neigh_lookup(n, 4, backend4));
	ck_assert_uint_ne(neigh_generation(n), gen);

	/* an answer to a FAILED entry is a change; one to a STALE entry is not */
	t0 += 50000;
	ck_assert_int_eq(neigh_update(n, 4, backend4, mac_a, t0), 1);
	ck_assert_mem_eq(neigh_lookup(n, 4, backend4), mac_a, 6);
	ck_assert_uint_eq(neigh_due(n, t0 + 45000, out, 8), 1);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_STALE);
	ck_assert_int_eq(neigh_update(n, 4, backend4, mac_a, t0 + 45100), 0);
	ck_assert_int_eq(neigh_state(n, 4, backend4), NEIGH_REACHABLE);
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_failed_after_probes)
{
	struct neigh_params p;
	struct neigh *n;
	struct neigh_addr out[4];
	struct neigh_stats st;

	neigh_params_default(&p);
	ck_assert_uint_eq(p.reachable_ms, 30000);
	ck_assert_uint_eq(p.retrans_ms, 1000);
	ck_assert_uint_eq(p.max_probes, 3);
	n = neigh_create(4, &p);
	ck_assert_ptr_nonnull(n);
	neigh_want(n, 6, backend6, 0);
	ck_assert_uint_eq(neigh_due(n, 0, out, 4), 1);
	ck_assert_uint_eq(neigh_due(n, 1000, out, 4), 1);
	ck_assert_uint_eq(neigh_due(n, 2000, out, 4), 1);
	ck_assert_int_eq(neigh_state(n, 6, backend6), NEIGH_INCOMPLETE);
	ck_assert_uint_eq(neigh_due(n, 3000, out, 4), 0);
	ck_assert_int_eq(neigh_state(n, 6, backend6), NEIGH_FAILED);
	ck_assert_ptr_null(neigh_lookup(n, 6, backend6));
	/* FAILED is retried slowly */
	ck_assert_uint_eq(neigh_due(n, 7999, out, 4), 0);
	ck_assert_uint_eq(neigh_due(n, 8000, out, 4), 1);
	ck_assert_uint_eq(neigh_due(n, 9000, out, 4), 0);
	ck_assert_uint_eq(neigh_due(n, 13000, out, 4), 1);
	ck_assert_int_eq(neigh_state(n, 6, backend6), NEIGH_FAILED);
	neigh_stats_get(n, &st);
	ck_assert_uint_eq(st.failed, 1);
	ck_assert_uint_eq(st.solicited, 5);
	/* a late answer: usable again, reported as a change */
	ck_assert_int_eq(neigh_update(n, 6, backend6, mac_a, 13500), 1);
	ck_assert_mem_eq(neigh_lookup(n, 6, backend6), mac_a, 6);
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_capacity_full)
{
	struct neigh *n = table(4);
	uint8_t a[16] = { 198, 18, 2 };

	for (int i = 0; i < 4; i++) {
		a[3] = (uint8_t)i;
		ck_assert_int_eq(neigh_want(n, 4, a, 0), 0);
	}
	a[3] = 9;
	ck_assert_int_eq(neigh_want(n, 4, a, 0), -ENOSPC);
	a[3] = 2;
	ck_assert_int_eq(neigh_want(n, 4, a, 0), 0);             /* known: fine */
	ck_assert_int_eq(neigh_forget(n, 4, a), 0);
	ck_assert_int_eq(neigh_forget(n, 4, a), -ENOENT);
	ck_assert_int_eq(neigh_update(n, 4, a, mac_a, 0), -ENOENT);
	a[3] = 9;
	ck_assert_int_eq(neigh_want(n, 4, a, 0), 0);
	ck_assert_uint_eq(neigh_count(n), 4);
	neigh_destroy(n);
}
END_TEST

/* Random want / forget / update against a plain array: deletion keeps every entry findable. */
START_TEST(test_neigh_churn)
{
	enum { CAP = 64, KEYS = 100 };
	struct neigh *n = table(CAP);
	bool in[KEYS] = { false };
	uint32_t x = 12345, count = 0;

	for (int step = 0; step < 200000; step++) {
		uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8 }, mac[6] = { 2 };
		uint32_t k;

		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		k = x % KEYS;
		a[15] = (uint8_t)k;
		mac[5] = (uint8_t)k;
		switch ((x >> 8) % 3) {
		case 0:
			ck_assert_int_eq(neigh_want(n, 6, a, 0),
					 in[k] || count < CAP ? 0 : -ENOSPC);
			if (!in[k] && count < CAP) {
				in[k] = true;
				count++;
			}
			break;
		case 1:
			ck_assert_int_eq(neigh_forget(n, 6, a), in[k] ? 0 : -ENOENT);
			if (in[k]) {
				in[k] = false;
				count--;
			}
			break;
		default:
			ck_assert_int_eq(neigh_update(n, 6, a, mac, 0) >= 0, in[k]);
			if (in[k])
				ck_assert_mem_eq(neigh_lookup(n, 6, a), mac, 6);
			break;
		}
		ck_assert_uint_eq(neigh_count(n), count);
	}
	for (uint32_t k = 0; k < KEYS; k++) {
		uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = (uint8_t)k };

		ck_assert_int_eq(neigh_state(n, 6, a) >= 0, in[k]);
	}
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_due_max)
{
	struct neigh *n = table(16);
	struct neigh_addr out[3];
	uint8_t a[16] = { 198, 18, 3 };

	for (int i = 0; i < 10; i++) {
		a[3] = (uint8_t)i;
		neigh_want(n, 4, a, 0);
	}
	ck_assert_uint_eq(neigh_due(n, 0, out, 3), 3);
	ck_assert_uint_eq(neigh_due(n, 0, out, 3), 3);
	ck_assert_uint_eq(neigh_due(n, 0, out, 3), 3);
	ck_assert_uint_eq(neigh_due(n, 0, out, 3), 1);
	ck_assert_uint_eq(neigh_due(n, 0, out, 3), 0);
	ck_assert_uint_eq(neigh_due(n, 999, out, 3), 0);
	neigh_destroy(n);
}
END_TEST

START_TEST(test_neigh_create_rejects)
{
	struct neigh_params p;

	errno = 0;
	ck_assert_ptr_null(neigh_create(0, NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(neigh_create(NEIGH_CAPACITY_MAX + 1, NULL));
	neigh_params_default(&p);
	p.max_probes = 0;
	ck_assert_ptr_null(neigh_create(4, &p));
	neigh_params_default(&p);
	p.retrans_ms = 0;
	ck_assert_ptr_null(neigh_create(4, &p));
	neigh_destroy(NULL);
	ck_assert_str_eq(neigh_state_names[NEIGH_STALE], "stale");
}
END_TEST

/* ---- IPv4 fragmentation (ipfrag.h) ---- */

/*
 * An IPv4 packet of tot bytes: header of 20 + opt_len bytes (options opts),
 * flags/offset word frag, ID 0x1234, TOS 0x28, TTL 61, UDP; payload bytes
 * i * 7 + 3 so that every fragment's slice is recognisable.
 */
static void
frag_packet(uint8_t *ip, uint16_t tot, const uint8_t *opts, uint8_t opt_len, uint16_t frag)
{
	uint8_t hl = (uint8_t)(20 + opt_len);

	memset(ip, 0, 20);
	ip[0] = (uint8_t)(0x40 | hl / 4);
	ip[1] = 0x28;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[4] = 0x12;
	ip[5] = 0x34;
	ip[6] = (uint8_t)(frag >> 8);
	ip[7] = (uint8_t)frag;
	ip[8] = 61;
	ip[9] = 17;
	memcpy(ip + 12, client4, 4);
	memcpy(ip + 16, vip4, 4);
	if (opt_len > 0)                /* opts may be NULL then */
		memcpy(ip + 20, opts, opt_len);
	for (unsigned i = hl; i < tot; i++)
		ip[i] = (uint8_t)(i * 7 + 3);
	ip[11] = 0;
	ip[10] = 0;
	{
		uint16_t c = (uint16_t)~t_fold(t_sum(ip, hl));

		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
	}
}

/*
 * Split orig (tot bytes) with max_len into its planned fragments, check each
 * one's header against orig (and the options expected of fragments k > 0),
 * and reassemble: the payloads must tile the original's exactly.
 */
static unsigned
frag_check(const uint8_t *orig, uint16_t tot, uint16_t max_len, const uint8_t *rest_opts,
	   uint8_t rest_opt_len)
{
	static uint8_t ip[65536], out[256][2048], joined[65536];
	struct ipfrag_plan p;
	unsigned n, hl = (orig[0] & 0x0f) * 4u, off0 = be16(orig + 6) & 0x1fff,
		 mf0 = be16(orig + 6) & 0x2000, next = 0;
	size_t len[256];

	memcpy(ip, orig, tot);
	n = ipfrag_plan(&p, ip, tot, max_len);
	ck_assert_uint_ge(n, 2);
	ck_assert_uint_le(n, 256);
	for (unsigned k = 1; k < n; k++) {
		len[k] = ipfrag_write(out[k], sizeof(out[k]), &p, ip, k);
		ck_assert_uint_eq(len[k], ipfrag_len(&p, k));
	}
	ipfrag_first(ip, &p);
	len[0] = ipfrag_len(&p, 0);
	memcpy(out[0], ip, len[0]);
	for (unsigned k = 0; k < n; k++) {
		const uint8_t *f = out[k];
		unsigned fhl = (f[0] & 0x0f) * 4u, flags = be16(f + 6);

		ck_assert_uint_le(len[k], max_len);
		ck_assert_uint_eq(f[0] >> 4, 4);
		ck_assert_uint_eq(be16(f + 2), len[k]);
		ck_assert(t_csum_ok(f, fhl));
		ck_assert_uint_eq(f[1], orig[1]);                   /* TOS */
		ck_assert_mem_eq(f + 4, orig + 4, 2);               /* ID */
		ck_assert_mem_eq(f + 8, orig + 8, 2);               /* TTL, protocol */
		ck_assert_mem_eq(f + 12, orig + 12, 8);             /* addresses */
		ck_assert_uint_eq(flags & 0x4000, 0);               /* DF */
		ck_assert_uint_eq((flags & 0x1fff) - off0, next / 8);
		ck_assert_uint_eq(flags & 0x2000, k + 1 < n ? 0x2000u : mf0);
		if (k == 0) {
			ck_assert_uint_eq(fhl, hl);
			ck_assert_mem_eq(f + 20, orig + 20, hl - 20);
		} else {
			ck_assert_uint_eq(fhl, 20u + rest_opt_len);
			if (rest_opt_len > 0)
				ck_assert_mem_eq(f + 20, rest_opts, rest_opt_len);
		}
		if (k + 1 < n)
			ck_assert_uint_eq((len[k] - fhl) % 8, 0);
		memcpy(joined + next, f + fhl, len[k] - fhl);
		next += (unsigned)len[k] - fhl;
	}
	ck_assert_uint_eq(next, tot - hl);
	ck_assert_mem_eq(joined, orig + hl, next);
	return n;
}

START_TEST(test_ipfrag_fits_or_df)
{
	static uint8_t ip[1500];
	struct ipfrag_plan p;

	frag_packet(ip, 1476, NULL, 0, 0);
	ck_assert_uint_eq(ipfrag_plan(&p, ip, 1476, 1476), 1);     /* fits: as it is */
	ck_assert_uint_eq(ipfrag_len(&p, 0), 1476);
	frag_packet(ip, 1500, NULL, 0, 0x4000);
	ck_assert_uint_eq(ipfrag_plan(&p, ip, 1500, 1476), 0);     /* DF */
	frag_packet(ip, 1500, NULL, 0, 0);
	ck_assert_uint_eq(ipfrag_plan(&p, ip, 1500, 27), 0);       /* no room for 8 bytes */
	ck_assert_uint_eq(ipfrag_plan(&p, ip, 1500, 28), 185);
	frag_packet(ip, 1500, NULL, 0, 0x1fff - 10);               /* offsets past 13 bits */
	ck_assert_uint_eq(ipfrag_plan(&p, ip, 1500, 1476), 0);
}
END_TEST

START_TEST(test_ipfrag_two)
{
	static uint8_t ip[1500];
	struct ipfrag_plan p;

	/* the 1500-byte packet through GRE over IPv4 on a 1500 MTU: 1476 + 44 */
	frag_packet(ip, 1500, NULL, 0, 0);
	ck_assert_uint_eq(frag_check(ip, 1500, 1476, NULL, 0), 2);
	ipfrag_plan(&p, ip, 1500, 1476);
	ck_assert_uint_eq(ipfrag_len(&p, 0), 1476);
	ck_assert_uint_eq(ipfrag_len(&p, 1), 44);
	/* a max_len that is not 20 + a multiple of 8 */
	ck_assert_uint_eq(frag_check(ip, 1500, 1000, NULL, 0), 2);
	ck_assert_uint_eq(frag_check(ip, 1500, 1480 - 1, NULL, 0), 2);
}
END_TEST

START_TEST(test_ipfrag_many)
{
	static uint8_t ip[9000];

	frag_packet(ip, 9000, NULL, 0, 0);
	ck_assert_uint_eq(frag_check(ip, 9000, 556, NULL, 0), 17);   /* 536 bytes each */
	ck_assert_uint_eq(frag_check(ip, 2000, 28, NULL, 0), 248);   /* 8 bytes each */
}
END_TEST

START_TEST(test_ipfrag_of_a_fragment)
{
	static uint8_t ip[1500];

	/* a middle fragment (offset 1480 bytes, MF): the last piece keeps MF */
	frag_packet(ip, 1500, NULL, 0, 0x2000 | 185);
	ck_assert_uint_eq(frag_check(ip, 1500, 1476, NULL, 0), 2);
	/* the last fragment of a datagram: the last piece has no MF */
	frag_packet(ip, 1500, NULL, 0, 370);
	ck_assert_uint_eq(frag_check(ip, 1500, 1476, NULL, 0), 2);
}
END_TEST

START_TEST(test_ipfrag_options)
{
	/* router alert (copied), NOP, timestamp (not copied), NOP, security-like
	 * copied option of 6 bytes, EOL: 20 bytes of options */
	static const uint8_t opts[20] = { 0x94, 4, 0, 0, 1, 0x44, 4, 5, 0, 1,
					  0x85, 6, 1, 2, 3, 4, 0, 0, 0, 0 };
	static const uint8_t copied[12] = { 0x94, 4, 0, 0, 0x85, 6, 1, 2, 3, 4, 0, 0 };
	static const uint8_t bad[4] = { 0x94, 0, 0, 0 };       /* length 0: not parsed */
	static const uint8_t nothing[8] = { 0x44, 4, 5, 0, 1, 1, 1, 0 };
	static uint8_t ip[3000];

	frag_packet(ip, 3000, opts, sizeof(opts), 0);
	ck_assert_uint_eq(frag_check(ip, 3000, 1476, copied, sizeof(copied)), 3);
	frag_packet(ip, 1500, bad, sizeof(bad), 0);
	ck_assert_uint_eq(frag_check(ip, 1500, 1476, NULL, 0), 2);
	frag_packet(ip, 1500, nothing, sizeof(nothing), 0);
	ck_assert_uint_eq(frag_check(ip, 1500, 1476, NULL, 0), 2);
}
END_TEST

/* encap_set_id() on a header written with ID 0 gives the bytes encap_write()
 * writes with that ID; IPv6 outer headers are left alone. */
START_TEST(test_encap_set_id)
{
	static const enum encap_kind kinds[] = { ENCAP_GRE, ENCAP_IPIP };
	static const uint16_t ids[] = { 1, 0x1234, 0x8000, 0xfffe, 0xffff };

	for (unsigned k = 0; k < 2; k++) {
		struct encap_tunnel t4, t6;

		tunnel(&t4, kinds[k], 4);
		tunnel(&t6, kinds[k], 6);
		for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			for (uint16_t len = 40; len < 1500; len = (uint16_t)(len * 3 + 1)) {
				uint8_t a[ENCAP_HDR_MAX], b[ENCAP_HDR_MAX], c[ENCAP_HDR_MAX];

				encap_write(a, &t4, 4, len, 0x28, false, 0, 0);
				encap_set_id(a, &t4, ids[i]);
				encap_write(b, &t4, 4, len, 0x28, false, ids[i], 0);
				ck_assert_mem_eq(a, b, 14u + encap_overhead(&t4));
				ck_assert(t_csum_ok(a + 14, 20));
				encap_write(a, &t6, 4, len, 0x28, false, 0, 77);
				memcpy(c, a, sizeof(c));
				encap_set_id(a, &t6, ids[i]);
				ck_assert_mem_eq(a, c, 14u + encap_overhead(&t6));
			}
		}
	}
}
END_TEST

START_TEST(test_ipfrag_write_bounds)
{
	static uint8_t ip[1500], out[64];
	struct ipfrag_plan p;

	frag_packet(ip, 1500, NULL, 0, 0);
	ck_assert_uint_eq(ipfrag_plan(&p, ip, 1500, 1476), 2);
	ck_assert_uint_eq(ipfrag_write(out, sizeof(out), &p, ip, 0), 0);   /* k = 0: in place */
	ck_assert_uint_eq(ipfrag_write(out, sizeof(out), &p, ip, 2), 0);   /* past the last */
	ck_assert_uint_eq(ipfrag_write(out, 43, &p, ip, 1), 0);            /* 44 needed */
	ck_assert_uint_eq(ipfrag_write(out, 44, &p, ip, 1), 44);
}
END_TEST

static Suite *
encap_suite(void)
{
	Suite *s = suite_create("encap");
	TCase *tc = tcase_create("encap");
	TCase *tr = tcase_create("reply");
	TCase *tn = tcase_create("neigh");
	TCase *tf = tcase_create("ipfrag");

	tcase_add_test(tc, test_gre_over_ipv4);
	tcase_add_test(tc, test_gre_over_ipv6);
	tcase_add_test(tc, test_ipip_4in4);
	tcase_add_test(tc, test_ipip_6in4);
	tcase_add_test(tc, test_ipip_6in6);
	tcase_add_test(tc, test_ipip_4in6);
	tcase_add_test(tc, test_ipv4_checksum_and_tos);
	tcase_add_test(tc, test_flow_label_from_hash);
	tcase_add_test(tc, test_l2_rewrite_only_macs);
	tcase_add_test(tc, test_encap_init_rejects);
	tcase_add_test(tc, test_bench_gre4);
	suite_add_tcase(s, tc);

	tcase_add_test(tr, test_too_big_ipv4);
	tcase_add_test(tr, test_too_big_ipv6);
	tcase_add_test(tr, test_too_big_cap_too_small);
	tcase_add_test(tr, test_too_big_malformed);
	tcase_add_test(tr, test_too_big_refused);
	tcase_add_test(tr, test_too_big_vlan_in_place);
	tcase_add_test(tr, test_too_big_mtu);
	tcase_add_test(tr, test_arp_reply);
	tcase_add_test(tr, test_arp_request);
	tcase_add_test(tr, test_arp_gratuitous);
	tcase_add_test(tr, test_nd_na);
	tcase_add_test(tr, test_nd_na_to_dad);
	tcase_add_test(tr, test_nd_ns);
	tcase_add_test(tr, test_nd_unsolicited_na);
	tcase_add_test(tr, test_udp_both_families);
	tcase_add_test(tr, test_udp_padded);
	tcase_add_test(tr, test_udp_csum_checked);
	suite_add_tcase(s, tr);

	tcase_add_test(tn, test_neigh_want_due);
	tcase_add_test(tn, test_neigh_update_lookup);
	tcase_add_test(tn, test_neigh_mac_change);
	tcase_add_test(tn, test_neigh_unknown_ignored);
	tcase_add_test(tn, test_neigh_aging);
	tcase_add_test(tn, test_neigh_failed_after_probes);
	tcase_add_test(tn, test_neigh_capacity_full);
	tcase_add_test(tn, test_neigh_churn);
	tcase_add_test(tn, test_neigh_due_max);
	tcase_add_test(tn, test_neigh_create_rejects);
	suite_add_tcase(s, tn);

	tcase_add_test(tf, test_ipfrag_fits_or_df);
	tcase_add_test(tf, test_ipfrag_two);
	tcase_add_test(tf, test_ipfrag_many);
	tcase_add_test(tf, test_ipfrag_of_a_fragment);
	tcase_add_test(tf, test_ipfrag_options);
	tcase_add_test(tf, test_ipfrag_write_bounds);
	tcase_add_test(tf, test_encap_set_id);
	suite_add_tcase(s, tf);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(encap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
