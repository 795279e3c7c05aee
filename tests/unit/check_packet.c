/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The frame parser (packet.h) and the VIP table (viptab.h).
 *
 * Frames are built here, field by field, with correct checksums; every parse
 * runs on a heap copy of exactly the frame's length, so that valgrind or
 * AddressSanitizer catch any read past it.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>

#include "dataplane/core/counters.h"
#include "dataplane/core/flow_key.h"
#include "dataplane/core/packet.h"
#include "dataplane/core/viptab.h"

#define FRAME_MAX 2048
#define BENCH_ITERATIONS 10000000u

static const uint8_t MAC_LB[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t MAC_ROUTER[6] = { 0x02, 0, 0, 0, 0, 0xfe };
static const uint8_t VIP4[16] = { 198, 18, 0, 10 };
static const uint8_t CLIENT4[16] = { 198, 19, 7, 2 };
static const uint8_t ROUTER4[16] = { 198, 18, 0, 254 };
static const uint8_t OTHER4[16] = { 198, 18, 0, 11 };
static const uint8_t VIP6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				  0, 0, 0, 0, 0, 0, 0, 0x10 };
static const uint8_t CLIENT6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0x07, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 0x02 };
static const uint8_t ROUTER6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 0xfe };
static const uint8_t OTHER6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				    0, 0, 0, 0, 0, 0, 0, 0x11 };
static const uint8_t SOLICITED6[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0,
					0, 0, 0, 0x01, 0xff, 0, 0, 0x10 };

enum { EXT_HOP = 0, EXT_ROUTING = 43, EXT_FRAGMENT = 44, EXT_DEST = 60 };

/* What to build: an IP packet (and its frame). */
struct spec {
	uint8_t family;         /* 4 or 6 */
	bool vlan;
	uint8_t proto;
	const uint8_t *src, *dst;
	uint16_t sport, dport;
	uint8_t tcp_flags;
	uint8_t ttl, tos;
	uint16_t frag;          /* IPv4 flags + offset; IPv6 fragment header word */
	uint8_t ihl;            /* IPv4; 0 means 5 */
	uint8_t n_ext;          /* IPv6 extension headers */
	uint8_t ext[6];
	uint8_t ext_units;      /* their length field: 8 * (1 + units) bytes
				 * each, fragment headers aside */
	uint32_t data;          /* payload bytes after a TCP/UDP header */
	const uint8_t *raw;     /* L4 bytes instead of TCP/UDP (ICMP) */
	uint32_t raw_len;
};

static void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static uint32_t
sum16(uint32_t sum, const uint8_t *p, uint32_t n)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static struct spec
spec_make(uint8_t family, uint8_t proto)
{
	return (struct spec){
		.family = family, .proto = proto,
		.src = family == 4 ? CLIENT4 : CLIENT6,
		.dst = family == 4 ? VIP4 : VIP6,
		.sport = 40000, .dport = 80, .tcp_flags = PKT_TCP_SYN,
		.ttl = 64, .tos = 0x28,
	};
}

static uint32_t
l4_header_len(const struct spec *s)
{
	if (s->raw != NULL)
		return s->raw_len;
	if (s->proto == IPPROTO_TCP)
		return 20 + s->data;
	if (s->proto == IPPROTO_UDP)
		return 8 + s->data;
	return s->data;
}

/* The L4 checksum field, or 0 for none. */
static uint32_t
l4_checksum_off(const struct spec *s)
{
	switch (s->proto) {
	case IPPROTO_TCP:
		return s->raw == NULL ? 16 : 0;
	case IPPROTO_UDP:
		return s->raw == NULL ? 6 : 0;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return 2;
	default:
		return 0;
	}
}

static void
build_l4(uint8_t *l4, uint32_t l4_len, const struct spec *s, uint32_t pseudo)
{
	uint32_t off = l4_checksum_off(s);

	if (s->raw != NULL) {
		memcpy(l4, s->raw, s->raw_len);
	} else if (s->proto == IPPROTO_TCP || s->proto == IPPROTO_UDP) {
		memset(l4, 0, l4_len - s->data);
		put16(l4, s->sport);
		put16(l4 + 2, s->dport);
		if (s->proto == IPPROTO_TCP) {
			put32(l4 + 4, 1000);
			l4[12] = 5 << 4;
			l4[13] = s->tcp_flags;
			put16(l4 + 14, 65535);
		} else {
			put16(l4 + 4, l4_len);
		}
	}
	for (uint32_t i = l4_len - s->data; i < l4_len && s->raw == NULL; i++)
		l4[i] = (uint8_t)i;
	if (off != 0) {
		l4[off] = l4[off + 1] = 0;
		put16(l4 + off, fold(sum16(pseudo, l4, l4_len)));
	}
}

/* The IP packet of s at p; returns its length. */
static uint32_t
build_ip(uint8_t *p, const struct spec *s)
{
	uint32_t l4_len = l4_header_len(s), hlen, pseudo;

	if (s->family == 4) {
		hlen = (s->ihl != 0 ? s->ihl : 5) * 4u;
		memset(p, 0, hlen);
		p[0] = (uint8_t)(0x40 | hlen / 4);
		p[1] = s->tos;
		put16(p + 2, hlen + l4_len);
		put16(p + 4, 0x1234);
		put16(p + 6, s->frag);
		p[8] = s->ttl;
		p[9] = s->proto;
		memcpy(p + 12, s->src, 4);
		memcpy(p + 16, s->dst, 4);
		put16(p + 10, fold(sum16(0, p, hlen)));
		pseudo = s->proto == IPPROTO_ICMP ? 0 :
			 sum16(sum16(s->proto + l4_len, p + 12, 4), p + 16, 4);
	} else {
		hlen = 40;
		for (uint32_t i = 0; i < s->n_ext; i++)
			hlen += s->ext[i] == EXT_FRAGMENT ? 8 : 8 * (1u + s->ext_units);
		memset(p, 0, hlen);
		p[0] = (uint8_t)(0x60 | s->tos >> 4);
		p[1] = (uint8_t)(s->tos << 4);
		put16(p + 4, hlen - 40 + l4_len);
		p[6] = s->n_ext != 0 ? s->ext[0] : s->proto;
		p[7] = s->ttl;
		memcpy(p + 8, s->src, 16);
		memcpy(p + 24, s->dst, 16);
		for (uint32_t i = 0, off = 40; i < s->n_ext; i++) {
			uint8_t *h = p + off;

			h[0] = i + 1 < s->n_ext ? s->ext[i + 1] : s->proto;
			if (s->ext[i] == EXT_FRAGMENT) {
				put16(h + 2, s->frag);
				put32(h + 4, 0xabcd);
				off += 8;
			} else {
				h[1] = s->ext_units;
				off += 8 * (1u + s->ext_units);
			}
		}
		pseudo = sum16(sum16(s->proto + l4_len, p + 8, 16), p + 24, 16);
	}
	build_l4(p + hlen, l4_len, s, pseudo);
	return hlen + l4_len;
}

static uint32_t
build_eth(uint8_t *f, uint16_t type, bool vlan)
{
	memcpy(f, MAC_LB, 6);
	memcpy(f + 6, MAC_ROUTER, 6);
	if (!vlan) {
		put16(f + 12, type);
		return 14;
	}
	put16(f + 12, 0x8100);
	put16(f + 14, 100);
	put16(f + 16, type);
	return 18;
}

static uint32_t
build(uint8_t *f, const struct spec *s)
{
	uint32_t l2 = build_eth(f, s->family == 4 ? 0x0800 : 0x86dd, s->vlan);

	return l2 + build_ip(f + l2, s);
}

/*
 * A router's ICMP error about inner (a packet the backend sent from the VIP
 * to the client), addressed to outer_dst, quoting at most quote bytes.
 */
static uint32_t
build_icmp_error(uint8_t *f, const struct spec *inner, uint8_t type,
		 uint8_t code, uint32_t mtu, uint32_t quote, const uint8_t *outer_dst)
{
	uint8_t in[FRAME_MAX], raw[FRAME_MAX] = { type, code };
	uint32_t in_len = build_ip(in, inner);
	struct spec o = spec_make(inner->family, inner->family == 4 ?
				  IPPROTO_ICMP : IPPROTO_ICMPV6);

	if (in_len > quote)
		in_len = quote;
	if (inner->family == 4)
		put16(raw + 6, mtu);
	else
		put32(raw + 4, mtu);
	memcpy(raw + 8, in, in_len);
	o.src = inner->family == 4 ? ROUTER4 : ROUTER6;
	o.dst = outer_dst;
	o.raw = raw;
	o.raw_len = 8 + in_len;
	return build(f, &o);
}

/* What the backend sends back for the default client flow. */
static struct spec
spec_reply(uint8_t family, uint8_t proto)
{
	struct spec s = spec_make(family, proto);

	s.src = family == 4 ? VIP4 : VIP6;
	s.dst = family == 4 ? CLIENT4 : CLIENT6;
	s.sport = 80;
	s.dport = 40000;
	s.tcp_flags = PKT_TCP_ACK;
	s.data = 1400;
	s.frag = family == 4 ? 0x4000 : 0;
	return s;
}

static uint32_t
build_arp(uint8_t *f, uint16_t oper, const uint8_t *sender, const uint8_t *target)
{
	uint32_t l2 = build_eth(f, 0x0806, false);
	uint8_t *a = f + l2;

	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, oper);
	memcpy(a + 8, MAC_ROUTER, 6);
	memcpy(a + 14, sender, 4);
	memset(a + 18, 0, 6);
	memcpy(a + 24, target, 4);
	return l2 + 28;
}

/* A neighbour solicitation (135) or advertisement (136) for target. */
static uint32_t
build_nd(uint8_t *f, uint8_t type, const uint8_t *target)
{
	uint8_t raw[32] = { type };
	struct spec s = spec_make(6, IPPROTO_ICMPV6);

	memcpy(raw + 8, target, 16);
	raw[24] = type == 135 ? 1 : 2;  /* source / target link-layer address */
	raw[25] = 1;
	memcpy(raw + 26, MAC_ROUTER, 6);
	s.dst = SOLICITED6;
	s.ttl = 255;
	s.raw = raw;
	s.raw_len = sizeof(raw);
	return build(f, &s);
}

static struct flow_key
key_make(uint8_t family, const uint8_t *vip, const uint8_t *client,
	 uint16_t vip_port, uint16_t client_port, uint8_t proto)
{
	struct flow_key k;

	memset(&k, 0, sizeof(k));
	memcpy(k.vip, vip, family == 4 ? 4 : 16);
	memcpy(k.client, client, family == 4 ? 4 : 16);
	k.vip_port = vip_port;
	k.client_port = client_port;
	k.proto = proto;
	k.family = family;
	return k;
}

/*
 * pkt_parse() takes the inline pkt_parse_simple() path for plain IPv4 TCP and
 * UDP: whatever it decides must be what the full parser decides, byte for
 * byte. Every frame parsed in this suite goes through this check.
 */
static void
same_as_full(const uint8_t *f, uint32_t len, bool ok, const struct pkt_meta *m,
	     enum dp_drop why)
{
	struct pkt_meta full;
	enum dp_drop full_why = DP_DROP_MAX;
	bool full_ok = pkt_parse_full(f, len, &full, &full_why);

	ck_assert_int_eq(ok, full_ok);
	if (ok)
		ck_assert_mem_eq(m, &full, sizeof(full));
	else
		ck_assert_uint_eq(why, full_why);
}

/* Parse a heap copy of exactly len bytes. */
static bool
parse(const uint8_t *f, uint32_t len, struct pkt_meta *m, enum dp_drop *why)
{
	uint8_t *copy = malloc(len != 0 ? len : 1);
	bool ok;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, f, len);
	*why = DP_DROP_MAX;
	ok = pkt_parse(copy, len, m, why);
	same_as_full(copy, len, ok, m, *why);
	free(copy);
	return ok;
}

static void
parse_ok(const uint8_t *f, uint32_t len, struct pkt_meta *m)
{
	enum dp_drop why;
	bool ok = parse(f, len, m, &why);

	ck_assert_msg(ok, "dropped: %s", why < DP_DROP_MAX ? dp_drop_names[why] : "?");
}

static void
parse_drops(const uint8_t *f, uint32_t len, enum dp_drop want)
{
	struct pkt_meta m;
	enum dp_drop why;

	ck_assert_msg(!parse(f, len, &m, &why), "len %u parsed, wanted %s",
		      len, dp_drop_names[want]);
	ck_assert_msg(why == want, "len %u: %s, wanted %s", len,
		      why < DP_DROP_MAX ? dp_drop_names[why] : "?",
		      dp_drop_names[want]);
}

static void
assert_key(const struct pkt_meta *m, struct flow_key want)
{
	ck_assert_mem_eq(&m->key, &want, sizeof(want));
}

/* Rewrite the IPv4 header checksum after an edit of the header at ip. */
static void
ipv4_fix_checksum(uint8_t *ip)
{
	uint32_t hlen = (ip[0] & 0xfu) * 4;

	ip[10] = ip[11] = 0;
	put16(ip + 10, fold(sum16(0, ip, hlen)));
}

/* --- well-formed frames ------------------------------------------------- */

START_TEST(test_ipv4_tcp)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	struct pkt_meta m;
	uint32_t len;

	s.data = 100;
	len = build(f, &s);
	parse_ok(f, len, &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.family, FLOW_FAMILY_IPV4);
	ck_assert_uint_eq(m.l2_len, 14);
	ck_assert_uint_eq(m.l3_len, 20);
	ck_assert_uint_eq(m.ip_len, 140);
	ck_assert_uint_eq(m.l4_off, 34);
	ck_assert_uint_eq(m.tcp_flags, PKT_TCP_SYN);
	ck_assert_uint_eq(m.df, 0);
	ck_assert_uint_eq(m.ttl, 64);
	ck_assert_uint_eq(m.tos, 0x28);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 80, 40000, IPPROTO_TCP));
}
END_TEST

START_TEST(test_ipv4_udp)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_UDP);
	struct pkt_meta m;

	s.dport = 53;
	s.sport = 5353;
	s.frag = 0x4000;
	s.data = 30;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.ip_len, 58);
	ck_assert_uint_eq(m.l4_off, 34);
	ck_assert_uint_eq(m.tcp_flags, 0);
	ck_assert_uint_eq(m.df, 1);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 53, 5353, IPPROTO_UDP));
}
END_TEST

START_TEST(test_ipv6_tcp)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(6, IPPROTO_TCP);
	struct pkt_meta m;

	s.sport = 65535;
	s.dport = 443;
	s.tos = 0xb8;
	s.ttl = 1;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.family, FLOW_FAMILY_IPV6);
	ck_assert_uint_eq(m.l3_len, 40);
	ck_assert_uint_eq(m.ip_len, 60);
	ck_assert_uint_eq(m.l4_off, 54);
	ck_assert_uint_eq(m.df, 1);
	ck_assert_uint_eq(m.ttl, 1);
	ck_assert_uint_eq(m.tos, 0xb8);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 443, 65535, IPPROTO_TCP));
}
END_TEST

START_TEST(test_ipv6_udp)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(6, IPPROTO_UDP);
	struct pkt_meta m;

	s.data = 1200;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.ip_len, 1248);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_UDP));
}
END_TEST

START_TEST(test_vlan)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	struct pkt_meta m;

	s.vlan = true;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.l2_len, 18);
	ck_assert_uint_eq(m.l4_off, 38);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 80, 40000, IPPROTO_TCP));

	s = spec_make(6, IPPROTO_UDP);
	s.vlan = true;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.l2_len, 18);
	ck_assert_uint_eq(m.l4_off, 58);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_UDP));
}
END_TEST

START_TEST(test_tcp_flags)
{
	static const uint8_t flags[] = {
		PKT_TCP_SYN, PKT_TCP_SYN | PKT_TCP_ACK, PKT_TCP_ACK,
		PKT_TCP_FIN | PKT_TCP_ACK, PKT_TCP_RST, 0x18, 0xc2,
	};
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	struct pkt_meta m;

	for (size_t i = 0; i < sizeof(flags); i++) {
		s.tcp_flags = flags[i];
		parse_ok(f, build(f, &s), &m);
		ck_assert_uint_eq(m.tcp_flags, flags[i]);
	}
}
END_TEST

START_TEST(test_ipv4_options)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	struct pkt_meta m;

	s.ihl = 15;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.l3_len, 60);
	ck_assert_uint_eq(m.l4_off, 74);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 80, 40000, IPPROTO_TCP));
}
END_TEST

/* A minimum-size frame carries padding past the IP packet. */
START_TEST(test_trailer_padding)
{
	uint8_t f[FRAME_MAX] = { 0 };
	struct spec s = spec_make(4, IPPROTO_UDP);
	struct pkt_meta m;
	uint32_t len = build(f, &s);

	ck_assert_uint_eq(len, 42);
	memset(f + len, 0xee, 60 - len);
	parse_ok(f, 60, &m);
	ck_assert_uint_eq(m.ip_len, 28);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
}
END_TEST

START_TEST(test_ipv4_first_fragment)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_UDP);
	struct pkt_meta m;

	s.frag = 0x2000;        /* MF, offset 0 */
	s.data = 1000;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FRAGMENT);
	ck_assert_uint_eq(m.l4_off, 0);
	ck_assert_uint_eq(m.l3_len, 20);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 0, 0, IPPROTO_UDP));
}
END_TEST

START_TEST(test_ipv4_middle_fragment)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_UDP);
	struct pkt_meta m;
	uint32_t len;

	s.frag = 0x2000 | 185;  /* MF, offset 1480 */
	len = build(f, &s);
	parse_ok(f, len, &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FRAGMENT);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 0, 0, IPPROTO_UDP));

	/* the last fragment: offset, no MF; even 3 bytes of "L4" are fine */
	s.frag = 370;
	s.raw = (const uint8_t *)"abc";
	s.raw_len = 3;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FRAGMENT);
	ck_assert_uint_eq(m.ip_len, 23);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 0, 0, IPPROTO_UDP));
}
END_TEST

/* Every fragment of a datagram gets the same key; atomic ones are no fragment. */
START_TEST(test_ipv6_fragment)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(6, IPPROTO_TCP);
	struct pkt_meta m;

	s.n_ext = 1;
	s.ext[0] = EXT_FRAGMENT;
	s.frag = 0x0001;        /* offset 0, M */
	s.data = 1000;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FRAGMENT);
	ck_assert_uint_eq(m.l3_len, 48);
	ck_assert_uint_eq(m.l4_off, 0);
	ck_assert_uint_eq(m.df, 1);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_TCP));

	s.frag = 1020 << 3;     /* last fragment at offset 1020 * 8 */
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FRAGMENT);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_TCP));

	/* behind hop-by-hop and routing headers */
	s.n_ext = 3;
	s.ext[0] = EXT_HOP;
	s.ext[1] = EXT_ROUTING;
	s.ext[2] = EXT_FRAGMENT;
	s.frag = 8 << 3 | 1;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FRAGMENT);
	ck_assert_uint_eq(m.l3_len, 64);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_TCP));

	/* atomic fragment (RFC 6946): the whole datagram, a flow */
	s.n_ext = 1;
	s.ext[0] = EXT_FRAGMENT;
	s.frag = 0;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.l3_len, 48);
	ck_assert_uint_eq(m.l4_off, 14 + 48);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_TCP));
}
END_TEST

START_TEST(test_icmp4_frag_needed)
{
	uint8_t f[FRAME_MAX];
	struct spec inner = spec_reply(4, IPPROTO_TCP);
	struct pkt_meta m;

	/* RFC 792 quoting: the IP header and 8 bytes */
	parse_ok(f, build_icmp_error(f, &inner, 3, 4, 1400, 28, VIP4), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
	ck_assert_uint_eq(m.icmp_type, 3);
	ck_assert_uint_eq(m.icmp_code, 4);
	ck_assert_uint_eq(m.l4_off, 34);
	ck_assert_uint_eq(m.ip_len, 20 + 8 + 28);
	ck_assert_uint_eq(m.tcp_flags, 0);
	ck_assert_uint_eq(pkt_icmp_mtu(f, &m), 1400);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 80, 40000, IPPROTO_TCP));

	/* Linux quotes up to 576 bytes; a UDP flow; time exceeded */
	inner = spec_reply(4, IPPROTO_UDP);
	parse_ok(f, build_icmp_error(f, &inner, 11, 0, 0, 548, VIP4), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
	ck_assert_uint_eq(pkt_icmp_mtu(f, &m), 0);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 80, 40000, IPPROTO_UDP));

	/* parameter problem is an error too; redirect (5) is not */
	parse_ok(f, build_icmp_error(f, &inner, 12, 0, 0, 28, VIP4), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
	parse_ok(f, build_icmp_error(f, &inner, 5, 1, 0, 28, VIP4), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_OTHER);
	ck_assert_uint_eq(m.icmp_type, 5);
	assert_key(&m, key_make(4, VIP4, ROUTER4, 0, 0, IPPROTO_ICMP));
}
END_TEST

START_TEST(test_icmp6_packet_too_big)
{
	uint8_t f[FRAME_MAX];
	struct spec inner = spec_reply(6, IPPROTO_TCP);
	struct pkt_meta m;

	parse_ok(f, build_icmp_error(f, &inner, 2, 0, 1280, 1232, VIP6), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
	ck_assert_uint_eq(m.icmp_type, 2);
	ck_assert_uint_eq(m.l4_off, 54);
	ck_assert_uint_eq(m.ip_len, 1280);
	ck_assert_uint_eq(pkt_icmp_mtu(f, &m), 1280);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_TCP));

	/* unreachable about a UDP packet behind a destination options header */
	inner = spec_reply(6, IPPROTO_UDP);
	inner.n_ext = 1;
	inner.ext[0] = EXT_DEST;
	parse_ok(f, build_icmp_error(f, &inner, 1, 4, 0, 56, VIP6), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
	ck_assert_uint_eq(pkt_icmp_mtu(f, &m), 0);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_UDP));

	/* parameter problem (4) is the last error type */
	parse_ok(f, build_icmp_error(f, &inner, 4, 0, 0, 56, VIP6), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
	parse_ok(f, build_icmp_error(f, &inner, 0, 0, 0, 56, VIP6), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_OTHER);
}
END_TEST

START_TEST(test_icmp_error_wrong_inner_source)
{
	uint8_t f[FRAME_MAX];
	struct spec inner = spec_reply(4, IPPROTO_TCP);

	/* sent to another address than the inner packet's source */
	parse_drops(f, build_icmp_error(f, &inner, 3, 4, 1400, 28, OTHER4),
		    DP_DROP_ICMP_BAD_INNER);
	inner = spec_reply(6, IPPROTO_TCP);
	parse_drops(f, build_icmp_error(f, &inner, 2, 0, 1280, 48, OTHER6),
		    DP_DROP_ICMP_BAD_INNER);
}
END_TEST

START_TEST(test_icmp_error_bad_inner)
{
	uint8_t f[FRAME_MAX], in[FRAME_MAX], raw[8 + 100] = { 3, 4 };
	struct spec inner = spec_reply(4, IPPROTO_TCP);
	struct spec outer = spec_make(4, IPPROTO_ICMP);
	struct pkt_meta m;

	/* 7 bytes of L4 quoted: no room for the ports */
	parse_drops(f, build_icmp_error(f, &inner, 3, 4, 1400, 27, VIP4),
		    DP_DROP_ICMP_BAD_INNER);
	inner = spec_reply(6, IPPROTO_TCP);
	parse_drops(f, build_icmp_error(f, &inner, 2, 0, 1280, 47, VIP6),
		    DP_DROP_ICMP_BAD_INNER);

	/* not TCP or UDP */
	inner = spec_reply(4, 132);
	parse_drops(f, build_icmp_error(f, &inner, 3, 3, 0, 100, VIP4),
		    DP_DROP_ICMP_BAD_INNER);

	/* a non-first fragment has no ports; a first one has */
	inner = spec_reply(4, IPPROTO_UDP);
	inner.frag = 185;
	parse_drops(f, build_icmp_error(f, &inner, 11, 1, 0, 100, VIP4),
		    DP_DROP_ICMP_BAD_INNER);
	inner.frag = 0x2000;
	parse_ok(f, build_icmp_error(f, &inner, 11, 1, 0, 100, VIP4), &m);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 80, 40000, IPPROTO_UDP));

	inner = spec_reply(6, IPPROTO_UDP);
	inner.n_ext = 1;
	inner.ext[0] = EXT_FRAGMENT;
	inner.frag = 100 << 3;
	parse_drops(f, build_icmp_error(f, &inner, 3, 0, 0, 100, VIP6),
		    DP_DROP_ICMP_BAD_INNER);
	inner.frag = 1;
	parse_ok(f, build_icmp_error(f, &inner, 3, 0, 0, 100, VIP6), &m);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_UDP));

	/* an IPv6 packet inside ICMPv4 */
	inner = spec_reply(6, IPPROTO_TCP);
	build_ip(in, &inner);
	memcpy(raw + 8, in, 100);
	outer.src = ROUTER4;
	outer.raw = raw;
	outer.raw_len = sizeof(raw);
	parse_drops(f, build(f, &outer), DP_DROP_ICMP_BAD_INNER);
}
END_TEST

START_TEST(test_icmp_other)
{
	uint8_t f[FRAME_MAX];
	uint8_t echo[16] = { 8, 0, 0, 0, 0x12, 0x34, 0, 1 };
	struct spec s = spec_make(4, IPPROTO_ICMP);
	struct pkt_meta m;

	s.raw = echo;
	s.raw_len = sizeof(echo);
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_OTHER);
	ck_assert_uint_eq(m.icmp_type, 8);
	ck_assert_uint_eq(m.l4_off, 34);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 0, 0, IPPROTO_ICMP));

	echo[0] = 128;
	s = spec_make(6, IPPROTO_ICMPV6);
	s.raw = echo;
	s.raw_len = sizeof(echo);
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_OTHER);
	ck_assert_uint_eq(m.icmp_type, 128);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_ICMPV6));

	/* shorter than an ICMP header */
	s = spec_make(4, IPPROTO_ICMP);
	s.raw = echo;
	s.raw_len = 7;
	parse_drops(f, build(f, &s), DP_DROP_BAD_L4);
}
END_TEST

START_TEST(test_other_l4)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, 47);       /* GRE */
	struct pkt_meta m;

	s.data = 24;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_OTHER_L4);
	ck_assert_uint_eq(m.l4_off, 34);
	assert_key(&m, key_make(4, VIP4, CLIENT4, 0, 0, 47));

	s = spec_make(6, 132);                  /* SCTP */
	s.data = 12;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_OTHER_L4);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, 132));
}
END_TEST

START_TEST(test_arp_request)
{
	uint8_t f[FRAME_MAX];
	struct pkt_meta m;
	uint32_t len = build_arp(f, PKT_ARP_REQUEST, ROUTER4, VIP4);
	struct flow_key want;

	parse_ok(f, len, &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ARP);
	ck_assert_uint_eq(m.family, 0);
	ck_assert_uint_eq(m.l2_len, 14);
	ck_assert_uint_eq(m.l3_len, 28);
	ck_assert_uint_eq(m.l4_off, 0);
	want = key_make(4, VIP4, ROUTER4, 0, 0, 0);
	want.family = 0;
	assert_key(&m, want);
	ck_assert_uint_eq(pkt_arp_oper(f, &m), PKT_ARP_REQUEST);
	ck_assert_mem_eq(pkt_arp_sender_mac(f, &m), MAC_ROUTER, 6);
	ck_assert_mem_eq(pkt_arp_sender_ip(f, &m), ROUTER4, 4);
	ck_assert_mem_eq(pkt_arp_target_ip(f, &m), VIP4, 4);
	ck_assert_mem_eq(pkt_arp_target_mac(f, &m), "\0\0\0\0\0\0", 6);
}
END_TEST

START_TEST(test_arp_not_ethernet_ipv4)
{
	uint8_t f[FRAME_MAX];
	uint32_t len = build_arp(f, PKT_ARP_REQUEST, ROUTER4, VIP4);

	f[15] = 6;                      /* htype IEEE 802 */
	parse_drops(f, len, DP_DROP_ARP_IGNORED);
	f[15] = 1;
	f[16] = 0x86;                   /* ptype IPv6 */
	f[17] = 0xdd;
	parse_drops(f, len, DP_DROP_ARP_IGNORED);
	f[16] = 0x08;
	f[17] = 0x00;
	f[18] = 8;                      /* hlen */
	parse_drops(f, len, DP_DROP_ARP_IGNORED);
	f[18] = 6;
	f[19] = 16;                     /* plen */
	parse_drops(f, len, DP_DROP_ARP_IGNORED);
}
END_TEST

START_TEST(test_nd)
{
	uint8_t f[FRAME_MAX];
	struct pkt_meta m;
	uint8_t rs[8] = { 133 };
	struct spec s = spec_make(6, IPPROTO_ICMPV6);

	parse_ok(f, build_nd(f, 135, VIP6), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ND);
	ck_assert_uint_eq(m.icmp_type, 135);
	ck_assert_uint_eq(m.ttl, 255);
	ck_assert_uint_eq(m.l4_off, 54);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_ICMPV6));

	parse_ok(f, build_nd(f, 136, OTHER6), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ND);
	ck_assert_uint_eq(m.icmp_type, 136);
	assert_key(&m, key_make(6, OTHER6, CLIENT6, 0, 0, IPPROTO_ICMPV6));

	/* router solicitation: no target, the key keeps the destination */
	s.raw = rs;
	s.raw_len = sizeof(rs);
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ND);
	ck_assert_uint_eq(m.icmp_type, 133);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_ICMPV6));

	/* redirect (137) is the last ND type */
	rs[0] = 137;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ND);
	rs[0] = 138;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_OTHER);

	/* an NS too short for its target: ND, for the control thread to
	 * refuse (ND_BAD_LENGTH, check_ndisc); no target in the key */
	rs[0] = 135;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_ND);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 0, 0, IPPROTO_ICMPV6));
}
END_TEST

START_TEST(test_ipv6_ext_chain)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(6, IPPROTO_UDP);
	struct pkt_meta m;

	s.n_ext = 2;
	s.ext[0] = EXT_HOP;
	s.ext[1] = EXT_DEST;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.kind, PKT_KIND_FLOW);
	ck_assert_uint_eq(m.l3_len, 56);
	ck_assert_uint_eq(m.l4_off, 70);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_UDP));

	/* a 24-byte destination options header (length field 2) */
	s.n_ext = 1;
	s.ext[0] = EXT_DEST;
	s.ext_units = 2;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.l3_len, 64);
	assert_key(&m, key_make(6, VIP6, CLIENT6, 80, 40000, IPPROTO_UDP));
	s.ext_units = 0;

	/* four is the most the walk takes */
	s.n_ext = 4;
	s.ext[0] = EXT_HOP;
	s.ext[1] = EXT_DEST;
	s.ext[2] = EXT_ROUTING;
	s.ext[3] = EXT_DEST;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.l3_len, 72);
}
END_TEST

START_TEST(test_ipv6_ext_too_long)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(6, IPPROTO_TCP);
	uint32_t len;

	s.n_ext = 5;
	s.ext[0] = EXT_HOP;
	s.ext[1] = EXT_DEST;
	s.ext[2] = EXT_ROUTING;
	s.ext[3] = EXT_DEST;
	s.ext[4] = EXT_DEST;
	parse_drops(f, build(f, &s), DP_DROP_BAD_EXT_HEADER);

	/* hop-by-hop not first */
	s.n_ext = 2;
	s.ext[0] = EXT_DEST;
	s.ext[1] = EXT_HOP;
	parse_drops(f, build(f, &s), DP_DROP_BAD_EXT_HEADER);

	/* a header that claims to run past the payload */
	s.n_ext = 1;
	s.ext[0] = EXT_DEST;
	len = build(f, &s);
	f[14 + 40 + 1] = 3;             /* 32 bytes; 28 remain */
	parse_drops(f, len, DP_DROP_BAD_EXT_HEADER);

	/* a chain cut by the payload length inside a header */
	s.n_ext = 2;
	s.ext[0] = EXT_HOP;
	s.ext[1] = EXT_DEST;
	s.raw = (const uint8_t *)"";
	s.raw_len = 0;
	s.proto = 59;                   /* no next header */
	len = build(f, &s);
	put16(f + 14 + 4, 12);
	parse_drops(f, len, DP_DROP_BAD_EXT_HEADER);
}
END_TEST

/* --- malformed frames --------------------------------------------------- */

/* One valid frame of each shape, with what a cut of it must give. */
struct sample {
	uint8_t f[FRAME_MAX];
	uint32_t len;
	uint32_t l2;            /* Ethernet (+ tag) */
	uint32_t min;           /* fixed L3 header: 20, 40, or 28 for ARP */
};

#define SAMPLES_MAX 8

static uint32_t
samples_build(struct sample *x)
{
	uint32_t n = 0;
	struct spec s;

#define ADD(expr, l2_len, l3_min) \
	do { x[n].len = (expr); x[n].l2 = (l2_len); x[n].min = (l3_min); n++; } while (0)
	s = spec_make(4, IPPROTO_TCP);
	s.data = 10;
	ADD(build(x[n].f, &s), 14, 20);
	s = spec_make(4, IPPROTO_UDP);
	s.vlan = true;
	s.ihl = 7;
	ADD(build(x[n].f, &s), 18, 20);
	s = spec_make(6, IPPROTO_TCP);
	s.n_ext = 2;
	s.ext[0] = EXT_HOP;
	s.ext[1] = EXT_DEST;
	ADD(build(x[n].f, &s), 14, 40);
	s = spec_make(6, IPPROTO_UDP);
	s.n_ext = 1;
	s.ext[0] = EXT_FRAGMENT;
	s.frag = 1;
	ADD(build(x[n].f, &s), 14, 40);
	s = spec_reply(4, IPPROTO_TCP);
	ADD(build_icmp_error(x[n].f, &s, 3, 4, 1400, 28, VIP4), 14, 20);
	s = spec_reply(6, IPPROTO_UDP);
	ADD(build_icmp_error(x[n].f, &s, 2, 0, 1280, 64, VIP6), 14, 40);
	ADD(build_arp(x[n].f, PKT_ARP_REQUEST, ROUTER4, VIP4), 14, 28);
	ADD(build_nd(x[n].f, 135, VIP6), 14, 40);
#undef ADD
	ck_assert_uint_eq(n, SAMPLES_MAX);
	return n;
}

/* Every valid frame cut at every length: never a read past len. */
START_TEST(test_truncated_every_length)
{
	static struct sample x[SAMPLES_MAX];
	uint32_t n = samples_build(x);

	for (uint32_t i = 0; i < n; i++) {
		struct pkt_meta m;

		parse_ok(x[i].f, x[i].len, &m);
		for (uint32_t cut = 0; cut < x[i].len; cut++)
			parse_drops(x[i].f, cut, cut < x[i].l2 + x[i].min ?
				    DP_DROP_TRUNCATED : DP_DROP_BAD_IP_LENGTH);
	}
}
END_TEST

/*
 * Random bytes of the headers corrupted, at random lengths (deterministic
 * xorshift, so a failure reproduces): whatever parses has consistent offsets.
 */
/*
 * The inline path against the full parser: every value of every header byte
 * of plain IPv4 TCP and UDP frames, the IPv4 checksum made right again (so
 * that the other checks are what decides), each at its full length and cut
 * short. parse() compares the two on every frame.
 */
START_TEST(test_simple_path_every_byte)
{
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP };
	uint32_t simple = 0;

	for (unsigned p = 0; p < 2; p++) {
		uint8_t base[FRAME_MAX];
		struct spec s = spec_make(4, protos[p]);
		uint32_t len = build(base, &s);

		for (uint32_t at = 0; at < 14 + 20 + 20 && at < len; at++) {
			for (unsigned v = 0; v < 256; v++) {
				uint8_t f[FRAME_MAX];
				struct pkt_meta m;
				enum dp_drop why;

				memcpy(f, base, len);
				f[at] = (uint8_t)v;
				if (at >= 14 && at < 34 && (f[14] & 0xf) == 5)
					ipv4_fix_checksum(f + 14);
				if (parse(f, len, &m, &why) && pkt_parse_simple(f, len, &m))
					simple++;
				(void)parse(f, len - 1 - v % 16, &m, &why);
			}
		}
	}
	ck_assert_uint_gt(simple, 1000);        /* the inline path did take most */
}
END_TEST

START_TEST(test_random_corruption)
{
	static struct sample x[SAMPLES_MAX];
	uint32_t n = samples_build(x), parsed = 0;
	uint64_t r = 0x9e3779b97f4a7c15ull;

	for (uint32_t round = 0; round < 40000; round++) {
		const struct sample *sm = &x[round % n];
		uint8_t f[FRAME_MAX];
		uint32_t len = sm->len, flips;
		struct pkt_meta m;
		enum dp_drop why;

		memcpy(f, sm->f, len);
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		flips = 1 + (uint32_t)(r & 3);
		for (uint32_t k = 0; k < flips; k++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			f[(r >> 8) % (len < 110 ? len : 110)] ^= (uint8_t)(1u << (r & 7));
		}
		if ((r >> 40) % 4 == 0)
			len = (uint32_t)((r >> 20) % (len + 1));
		if (!parse(f, len, &m, &why)) {
			ck_assert_uint_lt(why, DP_DROP_MAX);
			continue;
		}
		parsed++;
		ck_assert_uint_lt(m.kind, PKT_KIND_MAX);
		ck_assert_uint_le((uint32_t)m.l2_len + m.l3_len, len);
		if (m.kind == PKT_KIND_ARP)
			continue;
		ck_assert_uint_le((uint32_t)m.l2_len + m.ip_len, len);
		ck_assert_uint_le(m.l3_len, m.ip_len);
		if (m.kind != PKT_KIND_FRAGMENT)
			ck_assert_uint_eq(m.l4_off, m.l2_len + m.l3_len);
		if (m.kind == PKT_KIND_FLOW)
			ck_assert_uint_le(m.l4_off + 8u, m.l2_len + m.ip_len);
	}
	ck_assert_uint_gt(parsed, 0);
}
END_TEST

/* The IP length cut short instead of the frame: checked at each L4 length. */
START_TEST(test_ip_length_cut_short)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len, total;
	struct pkt_meta m;
	enum dp_drop why;

	s.data = 8;
	len = build(f, &s);
	for (total = 0; total < 40; total++) {
		put16(f + 14 + 2, total);
		ipv4_fix_checksum(f + 14);
		parse_drops(f, len, total < 20 ? DP_DROP_BAD_IHL : DP_DROP_BAD_L4);
	}
	put16(f + 14 + 2, 40);          /* TCP without its 8 data bytes */
	ipv4_fix_checksum(f + 14);
	parse_ok(f, len, &m);
	ck_assert_uint_eq(m.ip_len, 40);

	s = spec_make(4, IPPROTO_UDP);
	len = build(f, &s);
	for (total = 20; total < 28; total++) {
		put16(f + 14 + 2, total);
		ipv4_fix_checksum(f + 14);
		parse_drops(f, len, DP_DROP_BAD_L4);
	}

	/* every cut of an ICMPv6 error: no read past the IP packet */
	s = spec_reply(6, IPPROTO_TCP);
	len = build_icmp_error(f, &s, 2, 0, 1280, 200, VIP6);
	for (total = 40; total < len - 14; total++) {
		put16(f + 14 + 4, total - 40);
		if (parse(f, len, &m, &why))
			ck_assert_uint_eq(m.kind, PKT_KIND_ICMP_ERROR);
		else
			ck_assert(why == DP_DROP_BAD_L4 || why == DP_DROP_ICMP_BAD_INNER);
	}
}
END_TEST

START_TEST(test_ihl_4)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len = build(f, &s);

	f[14] = 0x44;
	ipv4_fix_checksum(f + 14);
	parse_drops(f, len, DP_DROP_BAD_IHL);
	f[14] = 0x40;
	parse_drops(f, len, DP_DROP_BAD_IHL);
}
END_TEST

START_TEST(test_ihl_past_packet)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_UDP);
	uint32_t len;

	s.data = 100;
	len = build(f, &s);
	put16(f + 14 + 2, 56);          /* IHL 15 = 60 bytes > total 56 */
	f[14] = 0x4f;
	parse_drops(f, len, DP_DROP_BAD_IHL);
}
END_TEST

START_TEST(test_total_length_past_frame)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len = build(f, &s);

	put16(f + 14 + 2, len - 14 + 1);
	ipv4_fix_checksum(f + 14);
	parse_drops(f, len, DP_DROP_BAD_IP_LENGTH);

	s = spec_make(6, IPPROTO_TCP);
	len = build(f, &s);
	put16(f + 14 + 4, len - 14 - 40 + 1);
	parse_drops(f, len, DP_DROP_BAD_IP_LENGTH);
}
END_TEST

START_TEST(test_bad_checksum)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len;

	s.ihl = 6;
	len = build(f, &s);
	f[14 + 11] ^= 0x01;
	parse_drops(f, len, DP_DROP_BAD_IP_CHECKSUM);
	f[14 + 11] ^= 0x01;
	f[14 + 21] ^= 0x80;             /* an option byte */
	parse_drops(f, len, DP_DROP_BAD_IP_CHECKSUM);
}
END_TEST

START_TEST(test_ttl_zero)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	struct pkt_meta m;

	s.ttl = 0;
	parse_drops(f, build(f, &s), DP_DROP_TTL_EXCEEDED);
	s.ttl = 1;
	parse_ok(f, build(f, &s), &m);
	ck_assert_uint_eq(m.ttl, 1);

	s = spec_make(6, IPPROTO_UDP);
	s.ttl = 0;
	parse_drops(f, build(f, &s), DP_DROP_TTL_EXCEEDED);
}
END_TEST

START_TEST(test_tcp_data_offset_4)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len = build(f, &s);

	f[34 + 12] = 4 << 4;
	parse_drops(f, len, DP_DROP_BAD_L4);
	f[34 + 12] = 6 << 4;            /* 24 bytes, 20 in the packet */
	parse_drops(f, len, DP_DROP_BAD_L4);
}
END_TEST

START_TEST(test_udp_length_wrong)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_UDP);
	uint32_t len;

	s.data = 20;
	len = build(f, &s);
	put16(f + 34 + 4, 29);          /* past the IP packet */
	parse_drops(f, len, DP_DROP_BAD_L4);
	put16(f + 34 + 4, 7);           /* below its own header */
	parse_drops(f, len, DP_DROP_BAD_L4);

	s = spec_make(6, IPPROTO_UDP);
	len = build(f, &s);
	put16(f + 54 + 4, 9);
	parse_drops(f, len, DP_DROP_BAD_L4);
}
END_TEST

START_TEST(test_wrong_ip_version)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len = build(f, &s);

	f[14] = 0x65;                   /* version 6 in a 0x0800 frame */
	parse_drops(f, len, DP_DROP_BAD_IP_VERSION);

	s = spec_make(6, IPPROTO_TCP);
	len = build(f, &s);
	f[14] = 0x45;                   /* version 4 in a 0x86dd frame */
	parse_drops(f, len, DP_DROP_BAD_IP_VERSION);
}
END_TEST

START_TEST(test_bad_ethertype)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len = build(f, &s);

	put16(f + 12, 0x88cc);          /* LLDP */
	parse_drops(f, len, DP_DROP_BAD_ETHERTYPE);

	s.vlan = true;                  /* two tags */
	len = build(f, &s);
	put16(f + 16, 0x8100);
	parse_drops(f, len, DP_DROP_BAD_ETHERTYPE);
	put16(f + 12, 0x88a8);          /* 802.1ad */
	put16(f + 16, 0x0800);
	parse_drops(f, len, DP_DROP_BAD_ETHERTYPE);
}
END_TEST

START_TEST(test_kind_names)
{
	for (int k = 0; k < PKT_KIND_MAX; k++)
		ck_assert_ptr_nonnull(pkt_kind_names[k]);
}
END_TEST

/* --- viptab -------------------------------------------------------------- */

static struct viptab_vip
vip_make(uint8_t family, const uint8_t *addr, uint8_t proto, uint16_t port,
	 uint32_t id)
{
	struct viptab_vip v = { .family = family, .proto = proto, .port = port,
				.id = id };

	memcpy(v.addr, addr, family == 4 ? 4 : 16);
	return v;
}

static int64_t
lookup(const struct viptab *t, uint8_t family, const uint8_t *addr,
       uint8_t proto, uint16_t port, enum dp_drop *why)
{
	struct flow_key k = key_make(family, addr, CLIENT4, port, 40000, proto);

	*why = DP_DROP_MAX;
	return viptab_lookup(t, &k, why);
}

static int64_t
lookup_fragment(const struct viptab *t, uint8_t family, const uint8_t *addr,
		uint8_t proto, enum dp_drop *why)
{
	struct flow_key k = key_make(family, addr, CLIENT4, 0, 0, proto);

	*why = DP_DROP_MAX;
	return viptab_lookup_fragment(t, &k, why);
}

START_TEST(test_viptab_exact_before_all_ports)
{
	struct viptab_vip v[] = {
		vip_make(4, VIP4, IPPROTO_TCP, 0, 7),
		vip_make(4, VIP4, IPPROTO_TCP, 443, 8),
		vip_make(4, VIP4, IPPROTO_UDP, 443, 9),
	};
	struct viptab *t = viptab_create(v, 3);
	enum dp_drop why;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_TCP, 443, &why), 8);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_TCP, 80, &why), 7);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_TCP, 444, &why), 7);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_UDP, 443, &why), 9);
	viptab_destroy(t);
}
END_TEST

START_TEST(test_viptab_not_vip_or_proto)
{
	struct viptab_vip v[] = {
		vip_make(4, VIP4, IPPROTO_TCP, 80, 1),
		vip_make(4, VIP4, IPPROTO_TCP, 443, 2),
	};
	struct viptab *t = viptab_create(v, 2);
	enum dp_drop why;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lookup(t, 4, OTHER4, IPPROTO_TCP, 80, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_NOT_VIP);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_TCP, 8080, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_UDP, 80, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
	ck_assert_int_eq(lookup(t, 4, VIP4, 47, 0, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
	/* the same bytes as an IPv6 address are another address */
	ck_assert_int_eq(lookup(t, 6, VIP4, IPPROTO_TCP, 80, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_NOT_VIP);
	viptab_destroy(t);
}
END_TEST

START_TEST(test_viptab_fragment)
{
	struct viptab_vip v[] = {
		vip_make(4, VIP4, IPPROTO_TCP, 80, 1),
		vip_make(4, VIP4, IPPROTO_TCP, 443, 2),
		vip_make(4, VIP4, IPPROTO_UDP, 53, 3),
		vip_make(4, OTHER4, IPPROTO_UDP, 53, 4),
		vip_make(4, OTHER4, IPPROTO_UDP, 0, 5),
		vip_make(4, OTHER4, IPPROTO_UDP, 123, 6),
	};
	struct viptab *t = viptab_create(v, 6);
	enum dp_drop why;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lookup_fragment(t, 4, VIP4, IPPROTO_TCP, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_FRAG_AMBIGUOUS);
	ck_assert_int_eq(lookup_fragment(t, 4, VIP4, IPPROTO_UDP, &why), 3);
	ck_assert_int_eq(lookup_fragment(t, 4, OTHER4, IPPROTO_UDP, &why), 5);
	ck_assert_int_eq(lookup_fragment(t, 4, OTHER4, IPPROTO_TCP, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
	ck_assert_int_eq(lookup_fragment(t, 4, VIP4, IPPROTO_ICMP, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
	ck_assert_int_eq(lookup_fragment(t, 4, ROUTER4, IPPROTO_UDP, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_NOT_VIP);
	viptab_destroy(t);
}
END_TEST

START_TEST(test_viptab_ipv6)
{
	struct viptab_vip v[] = {
		vip_make(6, VIP6, IPPROTO_TCP, 443, 1),
		vip_make(6, VIP6, IPPROTO_UDP, 0, 2),
		vip_make(4, VIP4, IPPROTO_TCP, 443, 3),
	};
	struct viptab *t = viptab_create(v, 3);
	enum dp_drop why;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lookup(t, 6, VIP6, IPPROTO_TCP, 443, &why), 1);
	ck_assert_int_eq(lookup(t, 6, VIP6, IPPROTO_UDP, 4500, &why), 2);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_TCP, 443, &why), 3);
	ck_assert_int_eq(lookup(t, 6, VIP6, IPPROTO_TCP, 80, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
	ck_assert_int_eq(lookup(t, 6, OTHER6, IPPROTO_TCP, 443, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_NOT_VIP);
	ck_assert_int_eq(lookup_fragment(t, 6, VIP6, IPPROTO_TCP, &why), 1);
	viptab_destroy(t);
}
END_TEST

START_TEST(test_viptab_bad_input)
{
	struct viptab_vip v[] = {
		vip_make(4, VIP4, IPPROTO_TCP, 80, 1),
		vip_make(6, VIP6, IPPROTO_TCP, 80, 2),
		vip_make(4, VIP4, IPPROTO_TCP, 80, 3),
	};
	struct viptab *t;
	enum dp_drop why;

	errno = 0;
	ck_assert_ptr_null(viptab_create(v, 3));
	ck_assert_int_eq(errno, EEXIST);
	v[0].port = 0;                  /* two all-ports VIPs */
	v[2].port = 0;
	ck_assert_ptr_null(viptab_create(v, 3));
	ck_assert_int_eq(errno, EEXIST);
	v[2].proto = IPPROTO_UDP;       /* same address, other protocol: fine */
	t = viptab_create(v, 3);
	ck_assert_ptr_nonnull(t);
	viptab_destroy(t);

	v[1] = vip_make(4, OTHER4, IPPROTO_ICMP, 0, 2);
	ck_assert_ptr_null(viptab_create(v, 2));
	ck_assert_int_eq(errno, EINVAL);
	v[1] = vip_make(4, OTHER4, IPPROTO_TCP, 0, 2);
	v[1].family = 5;
	ck_assert_ptr_null(viptab_create(v, 2));
	ck_assert_int_eq(errno, EINVAL);
	v[1].family = 4;
	v[1].addr[15] = 1;              /* bytes past an IPv4 address */
	ck_assert_ptr_null(viptab_create(v, 2));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(viptab_create(NULL, 1));
	ck_assert_int_eq(errno, EINVAL);

	viptab_destroy(NULL);
	t = viptab_create(NULL, 0);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(lookup(t, 4, VIP4, IPPROTO_TCP, 80, &why), -1);
	ck_assert_uint_eq(why, DP_DROP_NOT_VIP);
	ck_assert(!viptab_has_address(t, 4, VIP4));
	viptab_destroy(t);
}
END_TEST

START_TEST(test_viptab_has_address)
{
	struct viptab_vip v[] = {
		vip_make(4, VIP4, IPPROTO_TCP, 80, 1),
		vip_make(6, VIP6, IPPROTO_UDP, 0, 2),
	};
	struct viptab *t = viptab_create(v, 2);
	uint8_t pad4[16] = { 198, 18, 0, 10 };

	ck_assert_ptr_nonnull(t);
	ck_assert(viptab_has_address(t, FLOW_FAMILY_IPV4, pad4));
	ck_assert(viptab_has_address(t, FLOW_FAMILY_IPV6, VIP6));
	ck_assert(!viptab_has_address(t, FLOW_FAMILY_IPV4, OTHER4));
	ck_assert(!viptab_has_address(t, FLOW_FAMILY_IPV6, OTHER6));
	ck_assert(!viptab_has_address(t, FLOW_FAMILY_IPV6, pad4));
	ck_assert(!viptab_has_address(t, 0, pad4));
	viptab_destroy(t);
}
END_TEST

/* 1024 VIPs: 256 IPv4 and 256 IPv6 addresses, TCP 80 and 443 on each. */
START_TEST(test_viptab_1024)
{
	struct viptab_vip *v = calloc(1024, sizeof(*v));
	struct viptab *t;
	enum dp_drop why;
	uint8_t a[16];

	ck_assert_ptr_nonnull(v);
	for (uint32_t i = 0; i < 1024; i++) {
		uint32_t host = i / 4;

		memcpy(a, i & 2 ? VIP6 : VIP4, 16);
		a[i & 2 ? 14 : 2] = (uint8_t)(host >> 8);
		a[i & 2 ? 15 : 3] = (uint8_t)host;
		v[i] = vip_make(i & 2 ? 6 : 4, a, IPPROTO_TCP, i & 1 ? 443 : 80, i);
	}
	t = viptab_create(v, 1024);
	ck_assert_ptr_nonnull(t);
	for (uint32_t i = 0; i < 1024; i++) {
		ck_assert_int_eq(lookup(t, v[i].family, v[i].addr, IPPROTO_TCP,
					v[i].port, &why), i);
		ck_assert(viptab_has_address(t, v[i].family, v[i].addr));
		ck_assert_int_eq(lookup(t, v[i].family, v[i].addr, IPPROTO_TCP,
					8080, &why), -1);
		ck_assert_uint_eq(why, DP_DROP_VIP_PROTO);
		ck_assert_int_eq(lookup_fragment(t, v[i].family, v[i].addr,
						 IPPROTO_TCP, &why), -1);
		ck_assert_uint_eq(why, DP_DROP_FRAG_AMBIGUOUS);
	}
	for (uint32_t i = 0; i < 4096; i++) {
		memcpy(a, i & 1 ? VIP6 : VIP4, 16);
		a[i & 1 ? 13 : 1] = 99;
		a[i & 1 ? 15 : 3] = (uint8_t)i;
		a[i & 1 ? 14 : 2] = (uint8_t)(i >> 8);
		ck_assert_int_eq(lookup(t, i & 1 ? 6 : 4, a, IPPROTO_TCP, 80, &why), -1);
		ck_assert_uint_eq(why, DP_DROP_NOT_VIP);
	}
	viptab_destroy(t);
	free(v);
}
END_TEST

/* --- benchmark (prints, asserts nothing) -------------------------------- */

START_TEST(test_parse_timing)
{
	uint8_t f[FRAME_MAX];
	struct spec s = spec_make(4, IPPROTO_TCP);
	uint32_t len = build(f, &s);
	struct timespec t0, t1;
	uint64_t sink = 0;
	double ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t i = 0; i < BENCH_ITERATIONS; i++) {
		struct pkt_meta m;
		enum dp_drop why;

		f[34 + 1] = (uint8_t)i;         /* vary the client port */
		sink += pkt_parse(f, len, &m, &why) + m.key.client_port;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("pkt_parse: %.2f ns per %u-byte IPv4 TCP frame over %u parses (sink %llu)\n",
	       ns / BENCH_ITERATIONS, len, BENCH_ITERATIONS, (unsigned long long)sink);
	fflush(stdout);
}
END_TEST

static Suite *
packet_suite(void)
{
	Suite *s = suite_create("packet");
	TCase *parse_tc = tcase_create("parse");
	TCase *malformed = tcase_create("malformed");
	TCase *vip = tcase_create("viptab");
	TCase *bench = tcase_create("bench");

	tcase_add_test(parse_tc, test_ipv4_tcp);
	tcase_add_test(parse_tc, test_ipv4_udp);
	tcase_add_test(parse_tc, test_ipv6_tcp);
	tcase_add_test(parse_tc, test_ipv6_udp);
	tcase_add_test(parse_tc, test_vlan);
	tcase_add_test(parse_tc, test_tcp_flags);
	tcase_add_test(parse_tc, test_ipv4_options);
	tcase_add_test(parse_tc, test_trailer_padding);
	tcase_add_test(parse_tc, test_ipv4_first_fragment);
	tcase_add_test(parse_tc, test_ipv4_middle_fragment);
	tcase_add_test(parse_tc, test_ipv6_fragment);
	tcase_add_test(parse_tc, test_icmp4_frag_needed);
	tcase_add_test(parse_tc, test_icmp6_packet_too_big);
	tcase_add_test(parse_tc, test_icmp_error_wrong_inner_source);
	tcase_add_test(parse_tc, test_icmp_error_bad_inner);
	tcase_add_test(parse_tc, test_icmp_other);
	tcase_add_test(parse_tc, test_other_l4);
	tcase_add_test(parse_tc, test_arp_request);
	tcase_add_test(parse_tc, test_arp_not_ethernet_ipv4);
	tcase_add_test(parse_tc, test_nd);
	tcase_add_test(parse_tc, test_ipv6_ext_chain);
	tcase_add_test(parse_tc, test_ipv6_ext_too_long);
	tcase_add_test(parse_tc, test_kind_names);
	suite_add_tcase(s, parse_tc);

	tcase_add_test(malformed, test_truncated_every_length);
	tcase_add_test(malformed, test_random_corruption);
	tcase_add_test(malformed, test_simple_path_every_byte);
	tcase_add_test(malformed, test_ip_length_cut_short);
	tcase_add_test(malformed, test_ihl_4);
	tcase_add_test(malformed, test_ihl_past_packet);
	tcase_add_test(malformed, test_total_length_past_frame);
	tcase_add_test(malformed, test_bad_checksum);
	tcase_add_test(malformed, test_ttl_zero);
	tcase_add_test(malformed, test_tcp_data_offset_4);
	tcase_add_test(malformed, test_udp_length_wrong);
	tcase_add_test(malformed, test_wrong_ip_version);
	tcase_add_test(malformed, test_bad_ethertype);
	suite_add_tcase(s, malformed);

	tcase_add_test(vip, test_viptab_exact_before_all_ports);
	tcase_add_test(vip, test_viptab_not_vip_or_proto);
	tcase_add_test(vip, test_viptab_fragment);
	tcase_add_test(vip, test_viptab_ipv6);
	tcase_add_test(vip, test_viptab_bad_input);
	tcase_add_test(vip, test_viptab_has_address);
	tcase_add_test(vip, test_viptab_1024);
	suite_add_tcase(s, vip);

	/* CK_EXCLUDE_TAGS=bench skips it, e.g. under valgrind */
	tcase_set_tags(bench, "bench");
	tcase_set_timeout(bench, 120);
	tcase_add_test(bench, test_parse_timing);
	suite_add_tcase(s, bench);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(packet_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
