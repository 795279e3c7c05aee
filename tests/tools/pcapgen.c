/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcapgen: the input of one pcap test scenario (tests/e2e/check_pcap.sh),
 * and what the dataplane must do with each of its frames.
 *
 *   pcapgen [--dst-mac MAC] SCENARIO IN.pcap > EXPECT
 *
 * Scenarios (the functions scenario_*() below say frame by frame):
 *   frags4     IPv4 UDP datagrams in 3 fragments each, interleaved, from
 *              several clients, plus unfragmented datagrams of the same
 *              3-tuples; fragments to an ambiguous VIP address, a non-VIP
 *              and a VIP address of another protocol
 *   frags6     the same over IPv6 fragment headers (one behind a hop-by-hop
 *              header), plus an atomic fragment (RFC 6946: no fragment)
 *   icmp       TCP flows (SYN, ACK), then ICMPv4 3/4 and 11 and ICMPv6 2
 *              and 1 errors quoting the backends' replies VIP -> client;
 *              errors about flows never seen (each followed by that flow's
 *              SYN, so the check sees Maglev's pick); errors with a wrong
 *              inner source or port; an echo request
 *   toobig     TCP to GRE VIPs on a port of MTU 1500: over the MTU once
 *              encapsulated (IPv4 with DF, IPv6, an IPv6 first fragment),
 *              exactly at it, small, an IPv6 non-first fragment (no reply
 *              allowed about it); IPv4 without DF over it, fragmented: plain,
 *              with options (copied and not), both pieces of a datagram
 *              already fragmented (offsets and MF kept), one that
 *              exactly fits (not fragmented), and a piece whose fragments
 *              would pass the 13-bit offset (dropped: CANNOT_FRAGMENT)
 *   mutated    the frames of frags4, frags6, icmp, toobig, malformed,
 *              martian, jumbo and bfd (its peers configured) with 1 to 4
 *              random bytes each (fixed seed): fate "any", every frame
 *              counted exactly once
 *   malformed  truncated and malformed frames of every kind the parser
 *              knows (and tags on a port without a VLAN), then one good
 *              packet
 *   neigh      ARP and ND frames to the port, for the control thread: valid
 *              ones (requests and solicitations for the node's address,
 *              answered; for other addresses, ignored), one refused frame
 *              per refusal reason, most of them claiming the gateway's
 *              address at an attacker's MAC, and last the gateways' valid
 *              ARP reply and NA (learnt); the config gives no gateway MAC,
 *              so the dataplane resolves the gateways itself
 *   neigh_after  the same frames with the gateways' valid answers first:
 *              every refused frame comes after them, and the gateways'
 *              MAC must still be the valid one at the end
 *   martian    TCP and UDP to VIPs from sources no packet may come from (a
 *              VIP, the node, multicast, broadcast, 0/8, loopback; ::, ::1,
 *              ff00::/8), and a fragment from one; then good packets
 *   vlan       the port on VLAN 100: frames tagged 100 (forwarded, answered,
 *              fragmented, an ARP request and a solicitation answered, all
 *              tagged 100 on the way out), untagged, tagged 200, two tags
 *   jumbo      frames over the port's mbuf data room (9054 bytes; 3000),
 *              which arrive as mbuf chains: too big for GRE (IPv4 with DF,
 *              IPv6: a reply; IPv4 without DF: dropped CHAINED), whole to
 *              l2 VIPs (no MTU there), an IPv6 packet whose extension
 *              header runs past the first segment (dropped CHAINED)
 *   export     what the workers export to syncd (counted: EXPORT_NEW,
 *              EXPORT_REFRESH, EXPORT_CLOSE): a flood of spoofed SYNs, each
 *              sent twice (nothing); connections (SYN, ACK, data, FIN: a NEW
 *              once established, a CLOSE); SYNs reset before an ACK
 *              (nothing); connections whose client reuses the 5-tuple after
 *              a FIN (each connection a NEW and a CLOSE); TCP picked up
 *              mid-flow and UDP (provisional for 3 s, the whole run:
 *              nothing, not even a CLOSE); to a VIP with sync_after_packets
 *              4, connections of 5 packets (a NEW at the 4th) and of 3
 *              (nothing)
 *   bfd        BFD (RFC 5880, 5881) with two peers of the config's bfd
 *              section, on a node that is not serving (sessions Down): the
 *              peers' ARP reply and NA (learnt: the dataplane's own BFD
 *              packets go out to them), one valid Down packet from the
 *              IPv4 peer (taken), then one packet per drop reason a frame
 *              can cause without auth (all but WRONG_PEER, whose
 *              discriminator is random at each start, and the AUTH_* ones
 *              past AUTH_UNEXPECTED), IPv6 ones, UDP checksums wrong
 *              (BFD_BAD_UDP), BFD to an address neither the node's nor a
 *              VIP's and to the multihop port (NOT_VIP); the sessions must
 *              end as the valid packet left them
 *   bfd_off    BFD to the node with no bfd section (BFD_NO_SESSION, also
 *              with a UDP checksum wrong: no session is checked first)
 *   bfd_auth   the bfd peers with Meticulous Keyed SHA-1 (SHA-1 written
 *              here): a signed Down packet taken, then one packet per auth
 *              drop reason (missing, type, length, key id, a replayed and
 *              a too-far sequence number, a digest with another key and
 *              one of noise); the session as the signed packet left it
 *
 * Every frame goes from ROUTER_MAC to the dataplane's port (ARP and ND
 * frames: from their sender, to broadcast or multicast as the case may be):
 * DPDK's net_pcap port 0, whose MAC the PMD derives from the port id
 * (02:70:63:61:70:00), or --dst-mac. Frames are padded to the 60-byte
 * Ethernet minimum, as a NIC delivers them. Addresses: 198.18.0.0/15 and
 * 2001:db8::/32 only (martian sources, link-local and multicast aside).
 *
 * EXPECT, one item per line ('#' starts a comment), read by pcapcheck and
 * check_pcap.sh:
 *   scenario NAME
 *   mac port|router|gateway MAC     the dataplane's port, the frames' source,
 *                                   the tunnels' next hop (config gateway_mac)
 *   node ADDR4 ADDR6                the tunnels' outer source (config node)
 *   mtu MTU                         the port's MTU (config ports.mtu)
 *   vlan VID                        the port's VLAN (config ports.vlan): every
 *                                   frame out must carry one 802.1Q tag VID
 *                                   (priority 0); none: untagged
 *   neigh ADDR MAC                  gateway ADDR has no MAC in the config: the
 *                                   dataplane solicits it (ARP requests, NS
 *                                   from the port) and must end up with MAC
 *                                   as the next hop of every backend behind it
 *   vip NAME ADDR PROTO PORT ENCAP HASH BACKEND...   the config's VIPs;
 *                                   an l2 backend is ADDR=MAC
 *   pkt N FATE [ARG]                frame N (from 1):
 *       fwd                         to a backend of its VIP
 *       any                         a mutated frame: counted exactly once,
 *                                   its fate not predicted
 *       reply MTU                   answered with ICMPv4 fragmentation needed
 *                                   / ICMPv6 packet too big giving MTU, not
 *                                   forwarded (drop TOO_BIG, TOO_BIG_SENT)
 *       drop REASON                 dropped, counted as drop REASON
 *       frag K                      IPv4 without DF over the MTU once in its
 *                                   tunnel: split into K fragments (RFC 791),
 *                                   each in its own tunnel packet to the flow's
 *                                   backend (FRAGMENTED 1, FORWARDED 1,
 *                                   TX_MADE K - 1, TX_PACKETS K)
 *       slow OUTCOME                an ARP or ND frame handed to the control
 *                                   thread (SLOW_PATH), which counts it once
 *                                   as OUTCOME: SLOW_ANSWERED (an ARP reply
 *                                   or NA goes back), SLOW_LEARNT,
 *                                   SLOW_IGNORED, or a refusal; a BFD
 *                                   frame BFD_ACCEPTED, BFD_NO_SESSION,
 *                                   BFD_BAD_UDP or bfd:DROP (the BFD drop
 *                                   reason DROP, counters scope "bfd")
 *   bfd peer ADDR MAC               the config's bfd section has peer ADDR;
 *                                   the dataplane solicits it, learns MAC
 *                                   and sends it its BFD packets
 *   bfd interval MS                 the section's interval_ms
 *   bfd multiplier N                its multiplier
 *   bfd auth KEY_ID KEY             its auth section (Meticulous Keyed SHA-1)
 *   bfd session ADDR STATE IN REMOTE RMULT   at the end, maglbctl bfd shows
 *                                   ADDR's session in STATE with IN packets
 *                                   taken, remote discriminator REMOTE and
 *                                   remote multiplier RMULT
 *   counter NAME VALUE              an event counter's expected total
 *   control NAME VALUE              a control counter's (scope "control")
 *
 * Exits 0, 1 on an I/O error, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "bytes.h"

enum {
	ETH_LEN = 14,
	FRAME_MIN = 60,                 /* Ethernet minimum without FCS */
	FRAME_MAX = 9216,               /* a 9054-byte jumbo frame and a tag */
	VLAN_LEN = 4,
	IP4_LEN = 20,
	IP6_LEN = 40,
	FRAG6_LEN = 8,
	TCP_LEN = 20,
	UDP_LEN = 8,
	ICMP_LEN = 8,
	PROTO_ICMP = 1,
	PROTO_TCP = 6,
	PROTO_UDP = 17,
	PROTO_GRE = 47,
	PROTO_ICMP6 = 58,
	EXT_HOP = 0,
	EXT_ROUTING = 43,
	EXT_FRAGMENT = 44,
	EXT_DEST = 60,
	TCP_FIN = 0x01,
	TCP_SYN = 0x02,
	TCP_RST = 0x04,
	TCP_PSH = 0x08,
	TCP_ACK = 0x10,
	KEYS_MAX = 1024,
	PORT_MTU = 1500,
};

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_LLDP 0x88cc

static const char PORT_MAC[] = "02:70:63:61:70:00";
static const char ROUTER_MAC[] = "02:00:00:00:00:fe";
static const char GATEWAY_MAC[] = "02:00:00:00:00:01";
static const char NODE4[] = "198.18.0.10";
static const char NODE6[] = "2001:db8::10";
static const char GATEWAY4[] = "198.18.0.1";
static const char GATEWAY6[] = "2001:db8::1";

/* The VIPs of check_pcap.sh's config, which must say the same. */
static const char *const vip_plan[] = {
	"udp4 198.18.1.1 udp 53 gre client 198.18.2.11 198.18.2.12 198.18.2.13 198.18.2.14",
	"udp4l2 198.18.1.2 udp 0 l2 5tuple 198.18.0.21=02:00:00:00:00:21 "
	"198.18.0.22=02:00:00:00:00:22 198.18.0.23=02:00:00:00:00:23",
	"amb53 198.18.1.3 udp 53 gre 5tuple 198.18.2.11",
	"amb54 198.18.1.3 udp 54 gre 5tuple 198.18.2.12",
	"amb6-53 2001:db8:1::3 udp 53 gre 5tuple 2001:db8:2::11",
	"amb6-54 2001:db8:1::3 udp 54 gre 5tuple 2001:db8:2::12",
	"udp6 2001:db8:1::1 udp 53 gre client 2001:db8:2::11 2001:db8:2::12 "
	"2001:db8:2::13 2001:db8:2::14",
	"udp6l2 2001:db8:1::2 udp 0 l2 client 2001:db8::21=02:00:00:00:00:21 "
	"2001:db8::22=02:00:00:00:00:22 2001:db8::23=02:00:00:00:00:23",
	"tcp4 198.18.1.1 tcp 80 gre 5tuple 198.18.2.11 198.18.2.12 198.18.2.13 198.18.2.14",
	"tcp6 2001:db8:1::1 tcp 80 gre 5tuple 2001:db8:2::11 2001:db8:2::12 "
	"2001:db8:2::13 2001:db8:2::14",
	/* sync_after_packets = 4 in check_pcap.sh's config */
	"tcp4after 198.18.1.4 tcp 80 gre 5tuple 198.18.2.11 198.18.2.12 198.18.2.13 "
	"198.18.2.14",
};

struct addr {
	int family;             /* AF_INET, AF_INET6 */
	uint8_t b[16];
};

/* Everything about an IP header that a scenario varies. */
struct ipopt {
	uint8_t ttl;            /* 0: 64 */
	uint8_t tos;
	uint16_t id;            /* IPv4 ID; IPv6 fragment ID */
	bool df;
	bool frag;              /* IPv4 offset/MF set; IPv6 fragment header */
	bool mf;
	uint16_t frag_off;      /* bytes, a multiple of 8 */
	const uint8_t *opt4;    /* IPv4 options, a multiple of 4 bytes */
	size_t opt4_len;
	const uint8_t *ext6;    /* IPv6 extension headers before any fragment
				 * header, chained by the caller */
	size_t ext6_len;
	uint8_t ext6_first;     /* next header of the IPv6 header then */
};

/* The fate of a frame: what the dataplane does with it. */
enum fate {
	FATE_FWD,
	FATE_REPLY,
	FATE_DROP,
	FATE_FRAG,
	FATE_SLOW,
	FATE_ANY,       /* a mutated frame: only that it is counted once */
};

/* How far a frame gets: which event counters it moves. */
enum {
	F_FRAG = 0x1,           /* a fragment that reaches the flow stage */
	F_ICMP = 0x2,           /* an ICMP error that reaches the flow stage */
};

struct gen {
	pcap_t *pcap;
	pcap_dumper_t *dump;
	unsigned n;
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	char *keys[KEYS_MAX];   /* distinct flow keys: NEW_FLOWS */
	unsigned n_keys;
	unsigned fragments, icmp_errors, replies, fragmented;
	unsigned arp_replies, nd_adverts;   /* answers the control thread sends */
	uint16_t tci;           /* 802.1Q tag on frames to the port; 0: none */
	uint64_t mutate;        /* non-zero: flip bytes of every frame, from
				 * this xorshift state; fates then unknown */
};

_Noreturn static void
die(const char *fmt, ...)
{
	va_list ap;

	fputs("pcapgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static struct addr
addr_of(const char *s)
{
	struct addr a = { 0 };

	if (inet_pton(AF_INET, s, a.b) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, s, a.b) == 1)
		a.family = AF_INET6;
	else
		die("bad address '%s'", s);
	return a;
}

/* The TCP / UDP / ICMPv6 checksum of l4[0..len) between src and dst. */
static uint16_t
l4_csum(const struct addr *src, const struct addr *dst, uint8_t proto,
	const uint8_t *l4, size_t len)
{
	size_t alen = src->family == AF_INET ? 4 : 16;
	uint32_t sum = sum16(0, src->b, alen);

	sum = sum16(sum, dst->b, alen);
	sum += proto + (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff);
	return fold(sum16(sum, l4, len));
}

/* Payload bytes that differ from packet to packet. */
static void
fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 12345;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345;
		p[i] = (uint8_t)(x >> 16);
	}
}

static size_t
udp_make(uint8_t *p, const struct addr *src, const struct addr *dst,
	 uint16_t sport, uint16_t dport, size_t data_len, uint32_t seed)
{
	size_t len = UDP_LEN + data_len;

	put16(p, sport);
	put16(p + 2, dport);
	put16(p + 4, (uint32_t)len);
	put16(p + 6, 0);
	fill(p + UDP_LEN, data_len, seed);
	put16(p + 6, l4_csum(src, dst, PROTO_UDP, p, len));
	return len;
}

static size_t
tcp_make(uint8_t *p, const struct addr *src, const struct addr *dst,
	 uint16_t sport, uint16_t dport, uint8_t flags, size_t data_len, uint32_t seed)
{
	size_t len = TCP_LEN + data_len;

	memset(p, 0, TCP_LEN);
	put16(p, sport);
	put16(p + 2, dport);
	put32(p + 4, seed * 7919u);                     /* seq */
	put32(p + 8, flags & TCP_ACK ? seed * 104729u : 0);
	p[12] = 5 << 4;
	p[13] = flags;
	put16(p + 14, 64240);
	fill(p + TCP_LEN, data_len, seed);
	put16(p + 16, l4_csum(src, dst, PROTO_TCP, p, len));
	return len;
}

static void
ip4_csum(uint8_t *ip)
{
	size_t hlen = (ip[0] & 0xfu) * 4u;

	put16(ip + 10, 0);
	put16(ip + 10, fold(sum16(0, ip, hlen)));
}

/*
 * The IP packet carrying payload[0..plen) of protocol proto from src to dst,
 * written at out; returns its length.
 */
static size_t
ip_make(uint8_t *out, const struct addr *src, const struct addr *dst, uint8_t proto,
	const struct ipopt *o, const uint8_t *payload, size_t plen)
{
	uint8_t ttl = o->ttl != 0 ? o->ttl : 64;
	size_t off;

	if (src->family == AF_INET) {
		uint16_t frag = (uint16_t)((o->df ? 0x4000 : 0) | (o->mf ? 0x2000 : 0) |
					   (o->frag ? o->frag_off / 8 : 0));
		size_t hlen = IP4_LEN + o->opt4_len;

		if (o->opt4_len % 4 != 0 || hlen > 60)
			die("bad IPv4 options length %zu", o->opt4_len);
		out[0] = (uint8_t)(0x40 | hlen / 4);
		out[1] = o->tos;
		put16(out + 2, (uint32_t)(hlen + plen));
		put16(out + 4, o->id);
		put16(out + 6, frag);
		out[8] = ttl;
		out[9] = proto;
		memcpy(out + 12, src->b, 4);
		memcpy(out + 16, dst->b, 4);
		if (o->opt4_len != 0)
			memcpy(out + IP4_LEN, o->opt4, o->opt4_len);
		ip4_csum(out);
		memcpy(out + hlen, payload, plen);
		return hlen + plen;
	}
	put32(out, 0x60000000u | (uint32_t)o->tos << 20 | 0x12345);
	out[6] = o->ext6 != NULL ? o->ext6_first : o->frag ? EXT_FRAGMENT : proto;
	out[7] = ttl;
	memcpy(out + 8, src->b, 16);
	memcpy(out + 24, dst->b, 16);
	off = IP6_LEN;
	if (o->ext6 != NULL) {
		memcpy(out + off, o->ext6, o->ext6_len);
		off += o->ext6_len;
	}
	if (o->frag) {
		out[off] = proto;
		out[off + 1] = 0;
		put16(out + off + 2, (uint32_t)(o->frag_off | (o->mf ? 1 : 0)));
		put32(out + off + 4, 0x10000u + o->id);
		off += FRAG6_LEN;
	}
	memcpy(out + off, payload, plen);
	put16(out + 4, (uint32_t)(off - IP6_LEN + plen));
	return off + plen;
}

/* ------------------------------------------------------------ output */

static void
expect_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void
key_add(struct gen *g, const char *key)
{
	for (unsigned i = 0; i < g->n_keys; i++)
		if (strcmp(g->keys[i], key) == 0)
			return;
	if (g->n_keys == KEYS_MAX)
		die("too many flow keys");
	g->keys[g->n_keys] = strdup(key);
	if (g->keys[g->n_keys] == NULL)
		die("out of memory");
	g->n_keys++;
}

static const char *
addr_str(const struct addr *a, char *buf, size_t len)
{
	return inet_ntop(a->family, a->b, buf, (socklen_t)len);
}

/* A flow key as the dataplane's table knows it (fragments: ports 0). */
static const char *
key_str(char *buf, size_t len, const struct addr *client, uint16_t cport,
	const struct addr *vip, uint16_t vport, uint8_t proto)
{
	char c[INET6_ADDRSTRLEN], v[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%u %s %u %s %u", proto, addr_str(client, c, sizeof(c)),
		 cport, addr_str(vip, v, sizeof(v)), vport);
	return buf;
}

/*
 * Write one frame (len bytes, zero-padded to 60) and its expectation.
 * key: the flow key whose entry the frame creates or finds, NULL when it
 * never reaches the flow table (dropped before, or an ICMP error). reason:
 * the drop counter (FATE_DROP), the MTU (FATE_REPLY) or the number of
 * fragments (FATE_FRAG), as a string.
 */
/* xorshift64: the mutations repeat from run to run */
static uint64_t
mutate_next(struct gen *g)
{
	g->mutate ^= g->mutate << 13;
	g->mutate ^= g->mutate >> 7;
	g->mutate ^= g->mutate << 17;
	return g->mutate;
}

static void
emit_frame(struct gen *g, const uint8_t *frame, size_t len, enum fate fate,
	   const char *reason, unsigned flags, const char *key, const char *desc)
{
	uint8_t buf[FRAME_MAX];
	struct pcap_pkthdr h = { 0 };

	if (len > sizeof(buf))
		die("frame too long");
	memcpy(buf, frame, len);
	g->n++;
	if (g->mutate != 0 && len != 0) {
		/* 1 to 4 bytes anywhere in the frame get a random value */
		unsigned k = 1 + (unsigned)(mutate_next(g) % 4);

		while (k-- > 0)
			buf[mutate_next(g) % len] = (uint8_t)mutate_next(g);
	}
	if (g->mutate != 0) {
		fate = FATE_ANY;
		key = NULL;
	}
	h.ts.tv_sec = 1700000000;
	h.ts.tv_usec = (suseconds_t)g->n;
	h.caplen = h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)g->dump, &h, buf);
	switch (fate) {
	case FATE_FWD:
		expect_line("pkt %u fwd # %s", g->n, desc);
		break;
	case FATE_REPLY:
		expect_line("pkt %u reply %s # %s", g->n, reason, desc);
		g->replies++;
		break;
	case FATE_DROP:
		expect_line("pkt %u drop %s # %s", g->n, reason, desc);
		break;
	case FATE_FRAG:
		expect_line("pkt %u frag %s # %s", g->n, reason, desc);
		g->fragmented++;
		break;
	case FATE_SLOW:
		expect_line("pkt %u slow %s # %s", g->n, reason, desc);
		break;
	case FATE_ANY:
		expect_line("pkt %u any # mutated: %s", g->n, desc);
		break;
	}
	if (key != NULL)
		key_add(g, key);
	g->fragments += (flags & F_FRAG) != 0;
	g->icmp_errors += (flags & F_ICMP) != 0;
}

/*
 * The Ethernet header of a frame from src to dst, with the 802.1Q tag g->tci
 * unless it is 0; returns its length.
 */
static size_t
eth_make_to(const struct gen *g, uint8_t *frame, const uint8_t dst[6],
	    const uint8_t src[6], uint16_t type)
{
	size_t l2 = ETH_LEN;

	memcpy(frame, dst, 6);
	memcpy(frame + 6, src, 6);
	if (g->tci != 0) {
		put16(frame + 12, ETHERTYPE_VLAN);
		put16(frame + 14, g->tci);
		l2 += VLAN_LEN;
	}
	put16(frame + l2 - 2, type);
	return l2;
}

/* The Ethernet header of a frame from the router to the port. */
static size_t
eth_make(const struct gen *g, uint8_t *frame, uint16_t type)
{
	return eth_make_to(g, frame, g->dst_mac, g->src_mac, type);
}

/* Frame the IP packet ip[0..len), zero-padded to 60 bytes, and emit it. */
static void
emit_ip(struct gen *g, const uint8_t *ip, size_t len, enum fate fate,
	const char *reason, unsigned flags, const char *key, const char *desc)
{
	uint8_t frame[FRAME_MAX] = { 0 };
	size_t l2 = eth_make(g, frame, (ip[0] >> 4) == 6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4);

	if (l2 + len > sizeof(frame))
		die("packet too long");
	memcpy(frame + l2, ip, len);
	emit_frame(g, frame, l2 + len < FRAME_MIN ? FRAME_MIN : l2 + len, fate, reason,
		   flags, key, desc);
}

/*
 * The header: vlan, the port's VLAN (0: untagged); resolve, gateways without
 * a MAC in the config, which the dataplane must learn as GATEWAY_MAC.
 */
static void
emit_header(const char *scenario, const char *port_mac, uint16_t vlan, bool resolve)
{
	expect_line("scenario %s", scenario);
	expect_line("mac port %s", port_mac);
	expect_line("mac router %s", ROUTER_MAC);
	expect_line("mac gateway %s", GATEWAY_MAC);
	expect_line("node %s %s", NODE4, NODE6);
	expect_line("mtu %u", PORT_MTU);
	if (vlan != 0)
		expect_line("vlan %u", vlan);
	if (resolve) {
		expect_line("neigh %s %s", GATEWAY4, GATEWAY_MAC);
		expect_line("neigh %s %s", GATEWAY6, GATEWAY_MAC);
	}
	for (size_t i = 0; i < sizeof(vip_plan) / sizeof(vip_plan[0]); i++)
		expect_line("vip %s", vip_plan[i]);
}

static void
emit_counters(const struct gen *g)
{
	expect_line("counter NEW_FLOWS %u", g->n_keys);
	expect_line("counter FRAGMENTS %u", g->fragments);
	expect_line("counter ICMP_ERRORS %u", g->icmp_errors);
	expect_line("counter TOO_BIG_SENT %u", g->replies);
	expect_line("counter FRAGMENTED %u", g->fragmented);
	expect_line("control ARP_REPLIES %u", g->arp_replies);
	expect_line("control ND_ADVERTS %u", g->nd_adverts);
}

/* ------------------------------------------------------------ frags */

enum {
	FRAG_DATA = 1500,           /* UDP data of a fragmented datagram */
	FRAG_SIZE = 600,            /* payload bytes of the first fragments */
	FRAG_COUNT = 3,
	FRAG_CLIENTS = 6,           /* per VIP */
	FRAG_DATAGRAMS = 2,         /* per client */
};

struct datagram {
	struct addr client, vip;
	uint8_t proto;
	uint16_t id;
	uint8_t l4[FRAG_DATA + UDP_LEN];
	size_t l4_len;
	bool hop_by_hop;            /* IPv6: a hop-by-hop header before the fragment header */
};

/* Fragment f of d (payload offset f * FRAG_SIZE) into out. */
static size_t
fragment_make(uint8_t *out, const struct datagram *d, unsigned f)
{
	static const uint8_t hbh[8] = { EXT_FRAGMENT, 0, 1, 4, 0, 0, 0, 0 };  /* PadN */
	size_t off = (size_t)f * FRAG_SIZE;
	size_t len = d->l4_len - off < FRAG_SIZE ? d->l4_len - off : FRAG_SIZE;
	struct ipopt o = {
		.id = d->id, .frag = true, .mf = f + 1 < FRAG_COUNT,
		.frag_off = (uint16_t)off,
	};

	if (d->hop_by_hop) {
		o.ext6 = hbh;
		o.ext6_len = sizeof(hbh);
		o.ext6_first = EXT_HOP;
	}
	return ip_make(out, &d->client, &d->vip, d->proto, &o, d->l4 + off, len);
}

/* An unfragmented UDP datagram client:cport -> vip:vport. */
static void
emit_udp(struct gen *g, const struct addr *client, uint16_t cport,
	 const struct addr *vip, uint16_t vport, size_t data_len, uint32_t seed,
	 const struct ipopt *o, const char *desc)
{
	uint8_t l4[FRAME_MAX], ip[FRAME_MAX];
	char key[128];
	size_t n = udp_make(l4, client, vip, cport, vport, data_len, seed);

	n = ip_make(ip, client, vip, PROTO_UDP, o, l4, n);
	emit_ip(g, ip, n, FATE_FWD, NULL, 0,
		key_str(key, sizeof(key), client, cport, vip, vport, PROTO_UDP), desc);
}

/*
 * Datagrams from FRAG_CLIENTS clients to vip (port vport), FRAG_DATAGRAMS
 * each, fragmented. Fills ds from *n on.
 */
static void
frags_datagrams(struct datagram *ds, unsigned *n, const char *client_fmt,
		unsigned first_client, const char *vip, uint16_t vport, bool hbh_first)
{
	for (unsigned c = 0; c < FRAG_CLIENTS; c++) {
		char client[64];

		snprintf(client, sizeof(client), client_fmt, first_client + c);
		for (unsigned k = 0; k < FRAG_DATAGRAMS; k++) {
			struct datagram *d = &ds[(*n)++];

			d->client = addr_of(client);
			d->vip = addr_of(vip);
			d->proto = PROTO_UDP;
			d->id = (uint16_t)(1000 + *n);
			d->hop_by_hop = hbh_first && c == 0 && k == 0;
			d->l4_len = udp_make(d->l4, &d->client, &d->vip,
					     (uint16_t)(30000 + 10 * c + k), vport,
					     FRAG_DATA, d->id);
		}
	}
}

/*
 * Fragments of every datagram, interleaved: round r sends, of each datagram
 * in turn, its fragment r (even datagrams) or FRAG_COUNT - 1 - r (odd ones:
 * the last fragment first).
 */
static void
frags_interleaved(struct gen *g, const struct datagram *ds, unsigned n)
{
	for (unsigned r = 0; r < FRAG_COUNT; r++) {
		for (unsigned i = 0; i < n; i++) {
			const struct datagram *d = &ds[i];
			unsigned f = i % 2 == 0 ? r : FRAG_COUNT - 1 - r;
			uint8_t ip[FRAME_MAX];
			char key[128], c[INET6_ADDRSTRLEN], desc[160];
			size_t len = fragment_make(ip, d, f);

			snprintf(desc, sizeof(desc), "fragment %u/%u of datagram id %u from %s%s",
				 f + 1, FRAG_COUNT, d->id, addr_str(&d->client, c, sizeof(c)),
				 d->hop_by_hop ? " (behind a hop-by-hop header)" : "");
			emit_ip(g, ip, len, FATE_FWD, NULL, F_FRAG,
				key_str(key, sizeof(key), &d->client, 0, &d->vip, 0, d->proto),
				desc);
		}
	}
}

/* Unfragmented datagrams of the datagrams' 3-tuples (two ports each). */
static void
frags_whole(struct gen *g, const struct datagram *ds, unsigned n, uint16_t vport,
	    uint16_t base, const char *when)
{
	struct ipopt o = { .df = true };

	for (unsigned i = 0; i < n; i += FRAG_DATAGRAMS) {
		char desc[160], c[INET6_ADDRSTRLEN];

		snprintf(desc, sizeof(desc), "unfragmented, same 3-tuple as %s's fragments (%s)",
			 addr_str(&ds[i].client, c, sizeof(c)), when);
		o.id = (uint16_t)(base + i);
		emit_udp(g, &ds[i].client, (uint16_t)(base + i), &ds[i].vip, vport, 32 + i,
			 base + i, &o, desc);
	}
}

/* Fragments no VIP takes: an ambiguous address, a non-VIP, another protocol. */
static void
frags_refused(struct gen *g, const char *client_s, const char *amb, const char *none,
	      const char *udp_only)
{
	struct datagram d = { .client = addr_of(client_s), .vip = addr_of(amb),
			      .proto = PROTO_UDP, .id = 7 };
	uint8_t ip[FRAME_MAX];
	size_t len;

	d.l4_len = udp_make(d.l4, &d.client, &d.vip, 5353, 53, FRAG_DATA, d.id);
	for (unsigned f = 0; f < FRAG_COUNT; f++) {
		len = fragment_make(ip, &d, f);
		emit_ip(g, ip, len, FATE_DROP, "FRAG_AMBIGUOUS", 0, NULL,
			"fragment to an address with two exact-port UDP VIPs");
	}
	d.vip = addr_of(none);
	d.l4_len = udp_make(d.l4, &d.client, &d.vip, 5353, 53, FRAG_DATA, d.id);
	len = fragment_make(ip, &d, 0);
	emit_ip(g, ip, len, FATE_DROP, "NOT_VIP", 0, NULL, "fragment to no VIP");
	d.vip = addr_of(udp_only);
	d.proto = PROTO_TCP;
	len = fragment_make(ip, &d, 1);
	emit_ip(g, ip, len, FATE_DROP, "VIP_PROTO", 0, NULL,
		"TCP fragment to a UDP-only VIP address");
}

static void
scenario_frags4(struct gen *g)
{
	struct datagram ds[2 * FRAG_CLIENTS * FRAG_DATAGRAMS];
	unsigned n = 0;

	frags_datagrams(ds, &n, "198.18.10.%u", 1, "198.18.1.1", 53, false);
	frags_datagrams(ds, &n, "198.18.10.%u", 11, "198.18.1.2", 5000, false);
	frags_whole(g, ds, n / 2, 53, 40000, "before");
	frags_whole(g, ds + n / 2, n / 2, 5000, 40000, "before");
	frags_interleaved(g, ds, n);
	frags_whole(g, ds, n / 2, 53, 41000, "after");
	frags_whole(g, ds + n / 2, n / 2, 5000, 41000, "after");
	frags_refused(g, "198.18.10.21", "198.18.1.3", "198.18.1.200", "198.18.1.2");
}

static void
scenario_frags6(struct gen *g)
{
	struct datagram ds[2 * FRAG_CLIENTS * FRAG_DATAGRAMS];
	struct ipopt atomic = { .frag = true, .id = 99 };
	unsigned n = 0;

	frags_datagrams(ds, &n, "2001:db8:10::%x", 1, "2001:db8:1::1", 53, true);
	frags_datagrams(ds, &n, "2001:db8:10::%x", 0x11, "2001:db8:1::2", 5000, false);
	frags_whole(g, ds, n / 2, 53, 40000, "before");
	frags_whole(g, ds + n / 2, n / 2, 5000, 40000, "before");
	frags_interleaved(g, ds, n);
	frags_whole(g, ds, n / 2, 53, 41000, "after");
	frags_whole(g, ds + n / 2, n / 2, 5000, 41000, "after");
	/* offset 0, M 0: an atomic fragment is a whole datagram (RFC 6946) */
	emit_udp(g, &ds[0].client, 42000, &ds[0].vip, 53, 100, 42000, &atomic,
		 "atomic fragment (offset 0, M 0): a whole datagram, its 5-tuple");
	frags_refused(g, "2001:db8:10::21", "2001:db8:1::3", "2001:db8:1::200",
		      "2001:db8:1::2");
}

/* ------------------------------------------------------------- icmp */

enum {
	ICMP_FLOWS = 6,             /* per family */
	ICMP_QUOTE_DATA = 8,        /* TCP payload bytes quoted after the header */
};

struct flow {
	struct addr client, vip;
	uint16_t cport, vport;
};

/* A TCP segment client -> VIP of flow f. */
static void
emit_tcp(struct gen *g, const struct flow *f, uint8_t flags, size_t data_len,
	 uint32_t seed, const struct ipopt *o, enum fate fate, const char *reason,
	 const char *desc)
{
	uint8_t l4[FRAME_MAX], ip[FRAME_MAX];
	char key[128];
	size_t n = tcp_make(l4, &f->client, &f->vip, f->cport, f->vport, flags, data_len, seed);

	n = ip_make(ip, &f->client, &f->vip, PROTO_TCP, o, l4, n);
	emit_ip(g, ip, n, fate, reason, 0,
		key_str(key, sizeof(key), &f->client, f->cport, &f->vip, f->vport, PROTO_TCP),
		desc);
}

/*
 * An ICMP error from router to the VIP of flow f quoting the backend's
 * reply VIP -> client (a full-size segment of which the router quotes the
 * headers and ICMP_QUOTE_DATA bytes). inner_src: the quoted source, normally
 * the VIP; qport: the quoted source port, normally the VIP's.
 */
static void
emit_icmp_error(struct gen *g, const struct flow *f, const struct addr *router,
		uint8_t type, uint8_t code, uint32_t mtu, const struct addr *inner_src,
		uint16_t qport, enum fate fate, const char *reason, const char *desc)
{
	bool v4 = f->vip.family == AF_INET;
	uint8_t inner_l4[FRAME_MAX], inner[FRAME_MAX], icmp[FRAME_MAX], ip[FRAME_MAX];
	struct ipopt o = { .df = true, .id = 4242 };
	size_t n, quote, icmp_len;

	n = tcp_make(inner_l4, inner_src, &f->client, qport, f->cport, TCP_ACK | TCP_PSH,
		     v4 ? 1460 : 1440, f->cport);
	n = ip_make(inner, inner_src, &f->client, PROTO_TCP, &o, inner_l4, n);
	quote = (v4 ? IP4_LEN : IP6_LEN) + TCP_LEN + ICMP_QUOTE_DATA;
	icmp[0] = type;
	icmp[1] = code;
	put16(icmp + 2, 0);
	if (v4)
		put32(icmp + 4, type == 3 && code == 4 ? mtu & 0xffff : 0);
	else
		put32(icmp + 4, mtu);
	memcpy(icmp + ICMP_LEN, inner, quote);
	icmp_len = ICMP_LEN + quote;
	if (v4)
		put16(icmp + 2, fold(sum16(0, icmp, icmp_len)));
	else
		put16(icmp + 2, l4_csum(router, &f->vip, PROTO_ICMP6, icmp, icmp_len));
	o.id = (uint16_t)(g->n + 1);
	n = ip_make(ip, router, &f->vip, v4 ? PROTO_ICMP : PROTO_ICMP6, &o, icmp, icmp_len);
	emit_ip(g, ip, n, fate, reason, fate == FATE_FWD ? F_ICMP : 0, NULL, desc);
}

static void
icmp_flows(struct flow *fl, const char *client_fmt, const char *vip)
{
	for (unsigned i = 0; i < ICMP_FLOWS; i++) {
		char client[64];

		snprintf(client, sizeof(client), client_fmt, 1 + i);
		fl[i].client = addr_of(client);
		fl[i].vip = addr_of(vip);
		fl[i].cport = (uint16_t)(33000 + 7 * i);
		fl[i].vport = 80;
	}
}

/* The errors of one family about its flows fl, errors of type/code. */
static void
icmp_family(struct gen *g, const struct flow *fl, const char *router_s,
	    uint8_t type, uint8_t code, uint8_t type2, const char *what)
{
	struct addr router = addr_of(router_s);
	char desc[160];

	for (unsigned i = 0; i < ICMP_FLOWS; i++) {
		bool other = i == ICMP_FLOWS - 1;

		snprintf(desc, sizeof(desc), "%s about flow %u", other ? "another error type" : what, i);
		emit_icmp_error(g, &fl[i], &router, other ? type2 : type, other ? 0 : code, 1400,
				&fl[i].vip, fl[i].vport, FATE_FWD, NULL, desc);
	}
}

/* Errors about a flow never seen, then that flow's SYN; bad errors. */
static void
icmp_unknown_and_bad(struct gen *g, const struct flow *known, const char *client_s,
		     const char *router_s, const char *wrong_src, uint8_t type, uint8_t code)
{
	struct addr router = addr_of(router_s), wrong = addr_of(wrong_src);
	struct flow unknown = { .client = addr_of(client_s), .vip = known->vip,
				.cport = 44444, .vport = 80 };
	struct ipopt o = { .df = true, .id = 77 };

	emit_icmp_error(g, &unknown, &router, type, code, 1400, &unknown.vip, 80, FATE_FWD,
			NULL, "error about a flow never seen: Maglev's pick");
	emit_tcp(g, &unknown, TCP_SYN, 0, 77, &o, FATE_FWD, NULL,
		 "SYN of the flow of that error, after it: a new flow, Maglev's pick");
	emit_icmp_error(g, known, &router, type, code, 1400, &wrong, known->vport, FATE_DROP,
			"ICMP_BAD_INNER", "inner source is not the outer destination");
	emit_icmp_error(g, known, &router, type, code, 1400, &known->vip, 81, FATE_DROP,
			"ICMP_BAD_INNER", "inner source port 81: no VIP");
}

static void
scenario_icmp(struct gen *g)
{
	struct flow f4[ICMP_FLOWS], f6[ICMP_FLOWS];
	struct ipopt syn = { .df = true }, ack = { .df = true };
	uint8_t echo[64], ip[128];
	struct addr client, vip;
	size_t n;

	icmp_flows(f4, "198.18.10.%u", "198.18.1.1");
	icmp_flows(f6, "2001:db8:10::%x", "2001:db8:1::1");
	for (unsigned i = 0; i < ICMP_FLOWS; i++) {
		syn.id = (uint16_t)(100 + i);
		emit_tcp(g, &f4[i], TCP_SYN, 0, 100 + i, &syn, FATE_FWD, NULL, "SYN");
		emit_tcp(g, &f6[i], TCP_SYN, 0, 200 + i, &syn, FATE_FWD, NULL, "SYN");
	}
	for (unsigned i = 0; i < ICMP_FLOWS; i++) {
		ack.id = (uint16_t)(300 + i);
		emit_tcp(g, &f4[i], TCP_ACK, 100, 300 + i, &ack, FATE_FWD, NULL, "ACK with data");
		emit_tcp(g, &f6[i], TCP_ACK, 100, 400 + i, &ack, FATE_FWD, NULL, "ACK with data");
	}
	icmp_family(g, f4, "198.18.0.1", 3, 4, 11, "ICMPv4 fragmentation needed");
	icmp_family(g, f6, "2001:db8::1", 2, 0, 1, "ICMPv6 packet too big");
	icmp_unknown_and_bad(g, &f4[0], "198.18.10.99", "198.18.0.1", "198.18.1.9", 3, 4);
	icmp_unknown_and_bad(g, &f6[0], "2001:db8:10::99", "2001:db8::1", "2001:db8:1::9", 2, 0);

	/* An echo request to the VIP: no error about a flow. */
	client = addr_of("198.18.10.1");
	vip = addr_of("198.18.1.1");
	memset(echo, 0, sizeof(echo));
	echo[0] = 8;
	put16(echo + 4, 1);
	put16(echo + 6, 1);
	fill(echo + ICMP_LEN, sizeof(echo) - ICMP_LEN, 8);
	put16(echo + 2, fold(sum16(0, echo, sizeof(echo))));
	n = ip_make(ip, &client, &vip, PROTO_ICMP, &syn, echo, sizeof(echo));
	emit_ip(g, ip, n, FATE_DROP, "ICMP_UNHANDLED", 0, NULL, "echo request to the VIP");
}

/* ----------------------------------------------------------- toobig */

/* The MTU a client learns: the port's minus the backend's GRE overhead. */
static const char *
too_big_mtu(const struct addr *vip)
{
	return vip->family == AF_INET ? "1476" : "1456";
}

static void
toobig_family(struct gen *g, const char *client_s, const char *vip_s, uint16_t base)
{
	struct flow f = { .client = addr_of(client_s), .vip = addr_of(vip_s), .vport = 80 };
	bool v4 = f.vip.family == AF_INET;
	size_t hdr = (v4 ? IP4_LEN : IP6_LEN) + TCP_LEN;
	size_t limit = PORT_MTU - (v4 ? 24 : 44);          /* largest that fits */
	const char *mtu = too_big_mtu(&f.vip);
	struct ipopt o = { .df = true };
	char desc[160];
	static const size_t sizes[] = { PORT_MTU, 0, 1, 120 };  /* 0: limit, 1: limit + 1 */

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i] == 0 ? limit : sizes[i] == 1 ? limit + 1 : sizes[i];
		bool big = size > limit;

		f.cport = (uint16_t)(base + i);
		o.id = (uint16_t)(base + i);
		snprintf(desc, sizeof(desc), "%s %zu bytes of IP%s: %s", v4 ? "IPv4 DF" : "IPv6",
			 size, size == limit ? " (exactly the MTU once in GRE)" : "",
			 big ? "too big once in GRE" : "fits");
		emit_tcp(g, &f, TCP_ACK, size - hdr, base + i, &o, big ? FATE_REPLY : FATE_FWD,
			 big ? mtu : NULL, desc);
	}
}

/* IPv6 fragments of 1496 bytes: the first gets a reply, a later one none. */
static void
toobig_fragments6(struct gen *g)
{
	struct datagram d = { .client = addr_of("2001:db8:10::7"), .vip = addr_of("2001:db8:1::1"),
			      .proto = PROTO_TCP, .id = 9 };
	struct ipopt o = { .id = 9, .frag = true, .mf = true };
	uint8_t ip[FRAME_MAX], l4[FRAME_MAX];
	char key[128];
	size_t n, chunk = 1448;     /* a multiple of 8: 1496-byte fragments */

	n = tcp_make(l4, &d.client, &d.vip, 5555, 80, TCP_ACK, 2 * chunk - TCP_LEN, 9);
	key_str(key, sizeof(key), &d.client, 0, &d.vip, 0, PROTO_TCP);
	n = ip_make(ip, &d.client, &d.vip, PROTO_TCP, &o, l4, chunk);
	emit_ip(g, ip, n, FATE_REPLY, "1456", F_FRAG, key,
		"IPv6 first fragment, 1496 bytes: too big, a reply");
	o.mf = false;
	o.frag_off = (uint16_t)chunk;
	n = ip_make(ip, &d.client, &d.vip, PROTO_TCP, &o, l4 + chunk, chunk);
	emit_ip(g, ip, n, FATE_DROP, "TOO_BIG", F_FRAG, key,
		"IPv6 non-first fragment, 1496 bytes: too big, no reply may quote it");
}

/*
 * IPv4 options of 16 bytes: record route (7, not copied), NOP (not copied),
 * router alert (0x94, copied), basic security (0x82, copied, 3 bytes: the
 * later fragments' 7 bytes of options need padding), EOL.
 */
static const uint8_t toobig_opts4[16] = {
	0x07, 7, 4, 0, 0, 0, 0,
	0x01,
	0x94, 4, 0, 0,
	0x82, 3, 0x66,
	0x00,
};

/*
 * IPv4 without DF over the MTU once in GRE: fragmented (RFC 791), each
 * piece in its own GRE packet to the flow's backend; with options, the
 * first piece keeps them all, the later ones the copied ones only.
 */
static void
toobig_nodf4(struct gen *g)
{
	struct flow f = { .client = addr_of("198.18.10.8"), .vip = addr_of("198.18.1.1"),
			  .cport = 6000, .vport = 80 };
	struct ipopt o = { .id = 6000 };
	size_t limit = PORT_MTU - 24;

	emit_tcp(g, &f, TCP_ACK, PORT_MTU - IP4_LEN - TCP_LEN, 6000, &o, FATE_FRAG, "2",
		 "IPv4 without DF, 1500 bytes: 2 fragments");
	f.cport = 6001;
	o.id = 6001;
	o.opt4 = toobig_opts4;
	o.opt4_len = sizeof(toobig_opts4);
	emit_tcp(g, &f, TCP_ACK, PORT_MTU - IP4_LEN - sizeof(toobig_opts4) - TCP_LEN, 6001,
		 &o, FATE_FRAG, "2", "IPv4 without DF, 1500 bytes with 16 of options "
		 "(RR, NOP, RA, BSO): 2 fragments, the second with RA and BSO only");
	f.cport = 6002;
	o.id = 6002;
	o.opt4 = NULL;
	o.opt4_len = 0;
	emit_tcp(g, &f, TCP_ACK, limit - IP4_LEN - TCP_LEN, 6002, &o, FATE_FWD, NULL,
		 "IPv4 without DF, 1476 bytes (exactly the MTU once in GRE): fits");
}

/*
 * Both fragments (1500 bytes each, no DF) of a 2960-byte TCP segment: each
 * splits in 2; the first's pieces keep MF, the second's start at its offset.
 */
static void
toobig_fragments4(struct gen *g)
{
	struct addr client = addr_of("198.18.10.9"), vip = addr_of("198.18.1.1");
	struct ipopt o = { .id = 6100, .frag = true, .mf = true };
	uint8_t ip[FRAME_MAX], l4[FRAME_MAX];
	char key[128];
	size_t n, chunk = PORT_MTU - IP4_LEN;     /* 1480, a multiple of 8 */

	tcp_make(l4, &client, &vip, 6100, 80, TCP_ACK, 2 * chunk - TCP_LEN, 6100);
	key_str(key, sizeof(key), &client, 0, &vip, 0, PROTO_TCP);
	n = ip_make(ip, &client, &vip, PROTO_TCP, &o, l4, chunk);
	emit_ip(g, ip, n, FATE_FRAG, "2", F_FRAG, key,
		"IPv4 first fragment (MF) without DF, 1500 bytes: 2 fragments, both MF");
	o.mf = false;
	o.frag_off = (uint16_t)chunk;
	n = ip_make(ip, &client, &vip, PROTO_TCP, &o, l4 + chunk, chunk);
	emit_ip(g, ip, n, FATE_FRAG, "2", F_FRAG, key,
		"IPv4 last fragment (offset 1480) without DF, 1500 bytes: 2 fragments");
	/* a piece at offset 64800 would end past the 13-bit offset field */
	o.id = 6101;
	o.frag_off = 64800;
	n = ip_make(ip, &client, &vip, PROTO_TCP, &o, l4, chunk);
	emit_ip(g, ip, n, FATE_DROP, "CANNOT_FRAGMENT", F_FRAG, key,
		"IPv4 fragment at offset 64800 without DF, 1500 bytes: cannot be split");
}

static void
scenario_toobig(struct gen *g)
{
	toobig_family(g, "198.18.10.5", "198.18.1.1", 5000);
	toobig_family(g, "2001:db8:10::5", "2001:db8:1::1", 5100);
	toobig_nodf4(g);
	toobig_fragments6(g);
	toobig_fragments4(g);
}

/* -------------------------------------------------------- malformed */

/* A valid TCP SYN packet client -> VIP (IPv4 or IPv6) at ip; returns its length. */
static size_t
good_tcp(uint8_t *ip, int family, uint16_t cport, size_t data_len)
{
	struct addr c = addr_of(family == AF_INET ? "198.18.10.50" : "2001:db8:10::50");
	struct addr v = addr_of(family == AF_INET ? "198.18.1.1" : "2001:db8:1::1");
	struct ipopt o = { .df = true, .id = cport };
	uint8_t l4[FRAME_MAX];
	size_t n = tcp_make(l4, &c, &v, cport, 80, TCP_SYN, data_len, cport);

	return ip_make(ip, &c, &v, PROTO_TCP, &o, l4, n);
}

static size_t
good_udp(uint8_t *ip, uint16_t cport, size_t data_len)
{
	struct addr c = addr_of("198.18.10.50"), v = addr_of("198.18.1.1");
	struct ipopt o = { .id = cport };
	uint8_t l4[FRAME_MAX];
	size_t n = udp_make(l4, &c, &v, cport, 53, data_len, cport);

	return ip_make(ip, &c, &v, PROTO_UDP, &o, l4, n);
}

static void
drop_ip(struct gen *g, const uint8_t *ip, size_t len, const char *reason, const char *desc)
{
	emit_ip(g, ip, len, FATE_DROP, reason, 0, NULL, desc);
}

/* The packet ip[0..len) under the given ethertype, whatever its version. */
static void
drop_under(struct gen *g, uint16_t type, const uint8_t *ip, size_t len,
	   const char *reason, const char *desc)
{
	uint8_t f[FRAME_MAX];
	size_t l2 = eth_make(g, f, type);

	memcpy(f + l2, ip, len);
	emit_frame(g, f, l2 + len, FATE_DROP, reason, 0, NULL, desc);
}

/* Frames cut short, or not IP at all. */
static void
malformed_l2(struct gen *g)
{
	uint8_t f[FRAME_MAX], ip[FRAME_MAX];
	size_t l2, n;

	l2 = eth_make(g, f, ETHERTYPE_IPV4);
	emit_frame(g, f, 10, FATE_DROP, "TRUNCATED", 0, NULL, "10-byte frame: no Ethernet header");
	put16(f + 12, ETHERTYPE_VLAN);
	put16(f + 14, 7);
	emit_frame(g, f, 16, FATE_DROP, "TRUNCATED", 0, NULL, "802.1Q tag cut short");
	n = good_tcp(ip, AF_INET, 1001, 0);
	put16(f + 12, ETHERTYPE_IPV4);
	memcpy(f + l2, ip, n);
	emit_frame(g, f, l2 + 12, FATE_DROP, "TRUNCATED", 0, NULL, "IPv4 header cut at 12 bytes");
	n = good_tcp(ip, AF_INET6, 1002, 0);
	put16(f + 12, ETHERTYPE_IPV6);
	memcpy(f + l2, ip, n);
	emit_frame(g, f, l2 + 30, FATE_DROP, "TRUNCATED", 0, NULL, "IPv6 header cut at 30 bytes");
	put16(f + 12, ETHERTYPE_LLDP);
	memset(f + l2, 0, 46);
	emit_frame(g, f, FRAME_MIN, FATE_DROP, "BAD_ETHERTYPE", 0, NULL, "LLDP ethertype");
	put16(f + 12, ETHERTYPE_VLAN);
	put16(f + 14, 7);
	put16(f + 16, ETHERTYPE_VLAN);
	memcpy(f + 18, ip, n);
	emit_frame(g, f, 18 + n, FATE_DROP, "WRONG_VLAN", 0, NULL,
		   "two 802.1Q tags on an untagged port");
	put16(f + 16, ETHERTYPE_IPV6);
	emit_frame(g, f, 18 + n, FATE_DROP, "WRONG_VLAN", 0, NULL,
		   "802.1Q tag 7 on an untagged port");

	/* ARP: htype 1, ptype IPv4, hlen 6, plen 4, oper 1, then addresses */
	memset(ip, 0, 28);
	put16(ip, 1);
	put16(ip + 2, ETHERTYPE_IPV4);
	ip[4] = 6;
	ip[5] = 4;
	put16(ip + 6, 1);
	drop_under(g, ETHERTYPE_ARP, ip, 20, "TRUNCATED", "ARP cut at 20 bytes");
	put16(ip + 2, ETHERTYPE_IPV6);
	ip[5] = 16;
	drop_under(g, ETHERTYPE_ARP, ip, 28, "ARP_IGNORED", "ARP for IPv6 addresses");
}

/* IPv4 headers that lie. */
static void
malformed_ip4(struct gen *g)
{
	uint8_t ip[FRAME_MAX];
	size_t n;

	emit_frame(g, ip, 0, FATE_DROP, "TRUNCATED", 0, NULL, "empty frame");
	n = good_tcp(ip, AF_INET6, 1101, 0);
	drop_under(g, ETHERTYPE_IPV4, ip, n, "BAD_IP_VERSION",
		   "IPv6 packet under the IPv4 ethertype");
	n = good_tcp(ip, AF_INET, 1102, 0);
	ip[0] = 0x44;
	ip4_csum(ip);
	drop_ip(g, ip, n, "BAD_IHL", "IPv4 IHL 4");
	n = good_tcp(ip, AF_INET, 1103, 0);
	ip[0] = 0x4f;
	drop_ip(g, ip, n, "BAD_IHL", "IPv4 IHL 15 (60 bytes) past its 40-byte packet");
	n = good_tcp(ip, AF_INET, 1104, 0);
	put16(ip + 2, 0);
	ip4_csum(ip);
	drop_ip(g, ip, n, "BAD_IHL", "IPv4 total length 0, below the header");
	n = good_tcp(ip, AF_INET, 1105, 0);
	put16(ip + 2, 1000);
	ip4_csum(ip);
	drop_ip(g, ip, n, "BAD_IP_LENGTH", "IPv4 total length 1000 past the 60-byte frame");
	n = good_tcp(ip, AF_INET, 1106, 200);
	drop_ip(g, ip, n - 100, "BAD_IP_LENGTH", "IPv4 packet cut inside its payload");
	n = good_tcp(ip, AF_INET, 1107, 0);
	ip[10] ^= 0x5a;
	drop_ip(g, ip, n, "BAD_IP_CHECKSUM", "IPv4 header checksum wrong");
	n = good_tcp(ip, AF_INET, 1108, 0);
	ip[8] = 0;
	ip4_csum(ip);
	drop_ip(g, ip, n, "TTL_EXCEEDED", "IPv4 TTL 0");
}

/* IPv6 headers and extension chains that lie. */
static void
malformed_ip6(struct gen *g)
{
	uint8_t ip[FRAME_MAX], l4[FRAME_MAX], ext[64];
	struct addr c = addr_of("2001:db8:10::50"), v = addr_of("2001:db8:1::1");
	struct ipopt o = { 0 };
	size_t n;

	n = good_tcp(ip, AF_INET, 1201, 0);
	drop_under(g, ETHERTYPE_IPV6, ip, n, "BAD_IP_VERSION",
		   "IPv4 packet under the IPv6 ethertype");
	n = good_tcp(ip, AF_INET6, 1202, 0);
	put16(ip + 4, 200);
	drop_ip(g, ip, n, "BAD_IP_LENGTH", "IPv6 payload length 200 past the frame");
	n = good_tcp(ip, AF_INET6, 1203, 0);
	ip[7] = 0;
	drop_ip(g, ip, n, "TTL_EXCEEDED", "IPv6 hop limit 0");

	/* five destination options headers: one more than the walk takes */
	memset(ext, 0, sizeof(ext));
	for (unsigned i = 0; i < 5; i++) {
		ext[8 * i] = i < 4 ? EXT_DEST : PROTO_TCP;
		ext[8 * i + 2] = 1;         /* PadN, 4 bytes */
		ext[8 * i + 3] = 4;
	}
	o.ext6 = ext;
	o.ext6_len = 40;
	o.ext6_first = EXT_DEST;
	n = tcp_make(l4, &c, &v, 1204, 80, TCP_SYN, 0, 1204);
	n = ip_make(ip, &c, &v, PROTO_TCP, &o, l4, n);
	drop_ip(g, ip, n, "BAD_EXT_HEADER", "IPv6 chain of 5 extension headers");

	/* hop-by-hop behind a destination options header */
	ext[0] = EXT_HOP;
	ext[8] = PROTO_TCP;
	o.ext6_len = 16;
	n = tcp_make(l4, &c, &v, 1205, 80, TCP_SYN, 0, 1205);
	n = ip_make(ip, &c, &v, PROTO_TCP, &o, l4, n);
	drop_ip(g, ip, n, "BAD_EXT_HEADER", "IPv6 hop-by-hop header not first");

	/* a routing header whose length runs past the payload */
	ext[0] = PROTO_TCP;
	ext[1] = 20;                        /* 168 bytes */
	o.ext6_len = 8;
	o.ext6_first = EXT_ROUTING;
	n = tcp_make(l4, &c, &v, 1206, 80, TCP_SYN, 0, 1206);
	n = ip_make(ip, &c, &v, PROTO_TCP, &o, l4, n);
	drop_ip(g, ip, n, "BAD_EXT_HEADER", "IPv6 routing header longer than the payload");
}

/* L4 headers that lie. */
static void
malformed_l4(struct gen *g)
{
	struct addr c = addr_of("198.18.10.50"), v = addr_of("198.18.1.1");
	struct addr c6 = addr_of("2001:db8:10::50"), v6 = addr_of("2001:db8:1::1");
	struct ipopt o = { .id = 1300 };
	uint8_t ip[FRAME_MAX], l4[FRAME_MAX];
	size_t n;

	n = tcp_make(l4, &c, &v, 1301, 80, TCP_SYN, 0, 1301);
	n = ip_make(ip, &c, &v, PROTO_TCP, &o, l4, 10);
	drop_ip(g, ip, n, "BAD_L4", "TCP header cut at 10 bytes");
	n = good_tcp(ip, AF_INET, 1302, 0);
	ip[IP4_LEN + 12] = 4 << 4;
	drop_ip(g, ip, n, "BAD_L4", "TCP data offset 4");
	n = good_tcp(ip, AF_INET, 1303, 0);
	ip[IP4_LEN + 12] = 15 << 4;
	drop_ip(g, ip, n, "BAD_L4", "TCP data offset 15 past its 20-byte segment");
	n = tcp_make(l4, &c6, &v6, 1304, 80, TCP_SYN, 0, 1304);
	n = ip_make(ip, &c6, &v6, PROTO_TCP, &o, l4, 12);
	drop_ip(g, ip, n, "BAD_L4", "IPv6: TCP header cut at 12 bytes");
	n = udp_make(l4, &c, &v, 1305, 53, 0, 1305);
	n = ip_make(ip, &c, &v, PROTO_UDP, &o, l4, 4);
	drop_ip(g, ip, n, "BAD_L4", "UDP header cut at 4 bytes");
	n = good_udp(ip, 1306, 10);
	put16(ip + IP4_LEN + 4, 4);
	drop_ip(g, ip, n, "BAD_L4", "UDP length 4");
	n = good_udp(ip, 1307, 10);
	put16(ip + IP4_LEN + 4, 100);
	drop_ip(g, ip, n, "BAD_L4", "UDP length 100 past its 18-byte datagram");
	l4[0] = 8;
	n = ip_make(ip, &c, &v, PROTO_ICMP, &o, l4, 4);
	drop_ip(g, ip, n, "BAD_L4", "ICMP header cut at 4 bytes");
	memset(l4, 0, 32);
	l4[0] = 3;
	l4[1] = 4;
	l4[ICMP_LEN] = 0x45;
	n = ip_make(ip, &c, &v, PROTO_ICMP, &o, l4, ICMP_LEN + 10);
	drop_ip(g, ip, n, "ICMP_BAD_INNER", "ICMP error quoting 10 bytes of IPv4");
	n = good_tcp(l4 + ICMP_LEN, AF_INET, 1308, 0);
	l4[0] = 1;
	l4[1] = 0;
	n = ip_make(ip, &c6, &v6, PROTO_ICMP6, &o, l4, ICMP_LEN + n);
	drop_ip(g, ip, n, "ICMP_BAD_INNER", "ICMPv6 error quoting an IPv4 packet");
}

/* Well-formed, but not for this node, or not for a VIP. */
static void
malformed_others(struct gen *g)
{
	uint8_t f[FRAME_MAX], ip[FRAME_MAX];
	struct addr c = addr_of("198.18.10.50"), none = addr_of("198.18.1.200");
	struct addr v = addr_of("198.18.1.1");
	struct ipopt o = { .id = 1400 };
	uint8_t l4[64];
	size_t l2, n;

	n = good_tcp(ip, AF_INET, 1401, 0);
	l2 = eth_make(g, f, ETHERTYPE_IPV4);
	f[5] ^= 0x01;                       /* another host's MAC */
	memcpy(f + l2, ip, n);
	emit_frame(g, f, l2 + n, FATE_DROP, "OTHER_HOST", 0, NULL, "to another MAC address");
	n = tcp_make(l4, &c, &none, 1402, 80, TCP_SYN, 0, 1402);
	n = ip_make(ip, &c, &none, PROTO_TCP, &o, l4, n);
	drop_ip(g, ip, n, "NOT_VIP", "TCP to no VIP");
	n = tcp_make(l4, &c, &v, 1403, 81, TCP_SYN, 0, 1403);
	n = ip_make(ip, &c, &v, PROTO_TCP, &o, l4, n);
	drop_ip(g, ip, n, "VIP_PROTO", "TCP to a VIP address, port 81");
	memset(l4, 0, 8);
	put16(l4 + 2, 0x0800);
	n = ip_make(ip, &c, &v, PROTO_GRE, &o, l4, 8);
	drop_ip(g, ip, n, "VIP_PROTO", "GRE to a VIP address");
	n = ip_make(ip, &c, &none, PROTO_GRE, &o, l4, 8);
	drop_ip(g, ip, n, "NOT_VIP", "GRE to no VIP");
}

static void
scenario_malformed(struct gen *g)
{
	uint8_t ip[FRAME_MAX];
	size_t n;

	malformed_l2(g);
	malformed_ip4(g);
	malformed_ip6(g);
	malformed_l4(g);
	malformed_others(g);
	n = good_tcp(ip, AF_INET, 1999, 0);
	emit_ip(g, ip, n, FATE_FWD, NULL, 0, "6 198.18.10.50 1999 198.18.1.1 80",
		"the one good packet, last");
}

/* ------------------------------------------------------------ neigh */

enum {
	ARP_LEN = 28,
	ARP_REQUEST = 1,
	ARP_REPLY = 2,
	ND_RS = 133,
	ND_NS = 135,
	ND_NA = 136,
	ND_LEN = 24,                /* NS and NA before their options */
	ND_OPT_SLLA = 1,            /* source link-layer address */
	ND_OPT_TLLA = 2,            /* target link-layer address */
	NA_SO = 0x60,               /* NA flags: solicited, override */
	NA_O = 0x20,
	VLAN_ID = 100,
};

static const char ATTACKER_MAC[] = "02:00:00:00:00:66";
static const char OTHER_MAC[] = "02:00:00:00:00:99";    /* another host's */
static const char BROADCAST[] = "ff:ff:ff:ff:ff:ff";
static const char PORT[] = "port";                      /* the port's MAC */

/*
 * An ARP frame (RFC 826) and what the control thread makes of it. eth_dst
 * NULL: broadcast (a request) or the port (a reply); eth_src NULL: the
 * sender MAC. A reply's target is the port's MAC.
 */
struct arp_frame {
	const char *eth_dst, *eth_src;
	uint16_t oper;
	const char *sender_mac, *sender_ip, *target_ip;
	const char *outcome, *desc;
};

/*
 * An NS, NA or RS (RFC 4861) and what the control thread makes of it. The
 * checksum is right, the hop limit 255, the Ethernet destination the
 * port's MAC for a unicast destination and 33:33 + its last 4 bytes for a
 * multicast one, the source the option's MAC (or the router's), unless
 * said otherwise.
 */
struct nd_frame {
	uint8_t type, code, flags;  /* flags: NA's first byte */
	uint8_t hop_limit;          /* 0: 255 */
	const char *src, *dst, *target;
	uint8_t opt;                /* ND_OPT_SLLA / _TLLA; 0: no option */
	int8_t opt_units;           /* its length field: 0: 1 (a MAC), -1: 0 */
	const char *opt_mac;
	const char *eth_dst;
	uint8_t icmp_len;           /* 0: the whole message; else cut to it */
	bool bad_checksum;
	const char *outcome, *desc;
};

/* MAC string s (PORT: the port's) into mac. */
static void
mac_of(const struct gen *g, const char *s, uint8_t mac[6])
{
	if (s == PORT)
		memcpy(mac, g->dst_mac, 6);
	else if (!mac_parse(s, mac))
		die("bad MAC '%s'", s);
}

/* The Ethernet frame of payload p[0..len), padded to 60 bytes, into f. */
static size_t
frame_make(const struct gen *g, uint8_t *f, const uint8_t dst[6], const uint8_t src[6],
	   uint16_t type, const uint8_t *p, size_t len)
{
	size_t l2 = eth_make_to(g, f, dst, src, type);

	memset(f + l2, 0, FRAME_MIN);
	memcpy(f + l2, p, len);
	return l2 + len < FRAME_MIN ? FRAME_MIN : l2 + len;
}

/* The frame of a into f; returns its length. */
static size_t
arp_make(const struct gen *g, const struct arp_frame *a, uint8_t *f)
{
	struct addr sip = addr_of(a->sender_ip), tip = addr_of(a->target_ip);
	uint8_t arp[ARP_LEN] = { 0 }, dst[6], src[6];

	mac_of(g, a->eth_dst != NULL ? a->eth_dst : a->oper == ARP_REQUEST ? BROADCAST : PORT,
	       dst);
	mac_of(g, a->eth_src != NULL ? a->eth_src : a->sender_mac, src);
	put16(arp, 1);
	put16(arp + 2, ETHERTYPE_IPV4);
	arp[4] = 6;
	arp[5] = 4;
	put16(arp + 6, a->oper);
	mac_of(g, a->sender_mac, arp + 8);
	memcpy(arp + 14, sip.b, 4);
	if (a->oper == ARP_REPLY)
		memcpy(arp + 18, g->dst_mac, 6);
	memcpy(arp + 24, tip.b, 4);
	return frame_make(g, f, dst, src, ETHERTYPE_ARP, arp, sizeof(arp));
}

/*
 * Emit frame f (len bytes) for the control thread, which counts it as
 * outcome; *answers counts the questions (request) it answers.
 */
static void
emit_slow(struct gen *g, const uint8_t *f, size_t len, bool request, const char *outcome,
	  const char *desc, unsigned *answers)
{
	*answers += request && strcmp(outcome, "SLOW_ANSWERED") == 0;
	emit_frame(g, f, len, FATE_SLOW, outcome, 0, NULL, desc);
}

static void
emit_arp(struct gen *g, const struct arp_frame *a)
{
	uint8_t f[FRAME_MAX];
	size_t len = arp_make(g, a, f);

	emit_slow(g, f, len, a->oper == ARP_REQUEST, a->outcome, a->desc, &g->arp_replies);
}

/* The frame of n into f; returns its length. */
static size_t
nd_make(const struct gen *g, const struct nd_frame *n, uint8_t *f)
{
	struct addr src = addr_of(n->src), dst = addr_of(n->dst);
	struct ipopt o = { .ttl = n->hop_limit != 0 ? n->hop_limit : 255 };
	uint8_t icmp[64] = { 0 }, ip[128], eth_dst[6], eth_src[6];
	size_t len = n->type == ND_RS ? ICMP_LEN : ND_LEN;

	icmp[0] = n->type;
	icmp[1] = n->code;
	icmp[4] = n->flags;
	if (n->target != NULL)
		memcpy(icmp + ICMP_LEN, addr_of(n->target).b, 16);
	if (n->opt != 0) {
		icmp[len] = n->opt;
		icmp[len + 1] = (uint8_t)(n->opt_units < 0 ? 0 : n->opt_units == 0 ? 1 :
					  n->opt_units);
		mac_of(g, n->opt_mac, icmp + len + 2);
		len += 8;
	}
	if (n->icmp_len != 0)
		len = n->icmp_len;
	put16(icmp + 2, l4_csum(&src, &dst, PROTO_ICMP6, icmp, len));
	if (n->bad_checksum)
		icmp[3] ^= 0x55;
	len = ip_make(ip, &src, &dst, PROTO_ICMP6, &o, icmp, len);
	if (n->eth_dst != NULL) {
		mac_of(g, n->eth_dst, eth_dst);
	} else if (dst.b[0] == 0xff) {
		eth_dst[0] = eth_dst[1] = 0x33;
		memcpy(eth_dst + 2, dst.b + 12, 4);
	} else {
		memcpy(eth_dst, g->dst_mac, 6);
	}
	mac_of(g, n->opt_mac != NULL ? n->opt_mac : ROUTER_MAC, eth_src);
	return frame_make(g, f, eth_dst, eth_src, ETHERTYPE_IPV6, ip, len);
}

static void
emit_nd(struct gen *g, const struct nd_frame *n)
{
	uint8_t f[FRAME_MAX];
	size_t len = nd_make(g, n, f);

	emit_slow(g, f, len, n->type == ND_NS, n->outcome, n->desc, &g->nd_adverts);
}

/* Valid frames: answered (the node's addresses) or ignored (the rest). */
static const struct arp_frame arp_valid[] = {
	{ NULL, NULL, ARP_REQUEST, "02:00:00:00:00:50", "198.18.0.50", NODE4, "SLOW_ANSWERED",
	  "ARP request for the node's address, broadcast" },
	{ PORT, NULL, ARP_REQUEST, "02:00:00:00:00:51", "198.18.0.51", NODE4, "SLOW_ANSWERED",
	  "ARP request for the node's address, unicast to the port" },
	{ NULL, NULL, ARP_REQUEST, "02:00:00:00:00:50", "198.18.0.50", "198.18.0.77",
	  "SLOW_IGNORED", "ARP request for another host's address" },
	{ NULL, NULL, ARP_REQUEST, "02:00:00:00:00:50", "198.18.0.50", "198.18.1.1",
	  "SLOW_IGNORED", "ARP request for a VIP this node does not own" },
	{ NULL, NULL, ARP_REQUEST, "02:00:00:00:00:52", "198.18.0.52", "198.18.0.52",
	  "SLOW_IGNORED", "gratuitous ARP from a host no tunnel needs" },
};

static const struct nd_frame nd_valid[] = {
	{ ND_NS, 0, 0, 0, "2001:db8::50", "ff02::1:ff00:10", NODE6, ND_OPT_SLLA, 0,
	  "02:00:00:00:00:50", NULL, 0, false, "SLOW_ANSWERED",
	  "NS for the node's address to its solicited-node address" },
	{ ND_NS, 0, 0, 0, "2001:db8::51", NODE6, NODE6, ND_OPT_SLLA, 0,
	  "02:00:00:00:00:51", NULL, 0, false, "SLOW_ANSWERED",
	  "NS for the node's address, unicast" },
	{ ND_NS, 0, 0, 0, "::", "ff02::1:ff00:10", NODE6, 0, 0, NULL, NULL, 0, false,
	  "SLOW_ANSWERED", "duplicate address detection NS for the node's address: "
	  "answered to all-nodes" },
	{ ND_NS, 0, 0, 0, "2001:db8::50", "ff02::1:ff00:77", "2001:db8::77", ND_OPT_SLLA, 0,
	  "02:00:00:00:00:50", NULL, 0, false, "SLOW_IGNORED", "NS for another host's address" },
	{ ND_NS, 0, 0, 0, "2001:db8::50", "ff02::1:ff00:1", "2001:db8:1::1", ND_OPT_SLLA, 0,
	  "02:00:00:00:00:50", NULL, 0, false, "SLOW_IGNORED",
	  "NS for a VIP this node does not own" },
	{ ND_NA, 0, NA_O, 0, "2001:db8::52", "ff02::1", "2001:db8::52", ND_OPT_TLLA, 0,
	  "02:00:00:00:00:52", NULL, 0, false, "SLOW_IGNORED",
	  "unsolicited NA from a host no tunnel needs" },
	{ ND_RS, 0, 0, 0, "fe80::50", "ff02::2", NULL, ND_OPT_SLLA, 0, "02:00:00:00:00:50",
	  NULL, 0, false, "SLOW_IGNORED", "router solicitation: no router here" },
};

/* The gateways' answers, from their real MAC: learnt. */
static const struct arp_frame arp_gateway = {
	PORT, NULL, ARP_REPLY, GATEWAY_MAC, GATEWAY4, NODE4, "SLOW_LEARNT",
	"ARP reply from the gateway: learnt",
};

static const struct nd_frame nd_gateway = {
	ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, 0, GATEWAY_MAC, NULL, 0,
	false, "SLOW_LEARNT", "NA from the gateway: learnt",
};

/* Refused ARP: most claim the gateway's address at the attacker's MAC. */
static const struct arp_frame arp_refused[] = {
	{ NULL, NULL, 3, ATTACKER_MAC, GATEWAY4, NODE4, "ARP_BAD_OPER",
	  "ARP operation 3 claiming the gateway" },
	{ PORT, ATTACKER_MAC, ARP_REPLY, "01:00:5e:00:00:01", GATEWAY4, NODE4,
	  "ARP_BAD_SENDER_MAC", "ARP reply: the gateway at a multicast MAC" },
	{ PORT, ATTACKER_MAC, ARP_REPLY, BROADCAST, GATEWAY4, NODE4, "ARP_BAD_SENDER_MAC",
	  "ARP reply: the gateway at the broadcast MAC" },
	{ PORT, ATTACKER_MAC, ARP_REPLY, "00:00:00:00:00:00", GATEWAY4, NODE4,
	  "ARP_BAD_SENDER_MAC", "ARP reply: the gateway at MAC zero" },
	{ NULL, NULL, ARP_REQUEST, ATTACKER_MAC, "0.0.0.0", NODE4, "ARP_BAD_SENDER_IP",
	  "ARP probe (sender 0.0.0.0) for the node's address" },
	{ NULL, NULL, ARP_REQUEST, ATTACKER_MAC, "127.0.0.1", NODE4, "ARP_BAD_SENDER_IP",
	  "ARP request from 127.0.0.1 for the node's address" },
	{ NULL, NULL, ARP_REQUEST, ATTACKER_MAC, "224.0.0.1", NODE4, "ARP_BAD_SENDER_IP",
	  "ARP request from 224.0.0.1 for the node's address" },
	{ NULL, NULL, ARP_REQUEST, ATTACKER_MAC, "255.255.255.255", NODE4,
	  "ARP_BAD_SENDER_IP", "ARP request from 255.255.255.255 for the node's address" },
	{ OTHER_MAC, NULL, ARP_REPLY, ATTACKER_MAC, GATEWAY4, NODE4, "SLOW_OTHER_HOST",
	  "ARP reply claiming the gateway, to another host's MAC" },
};

/* Refused ND: most are NAs claiming the gateway at the attacker's MAC. */
static const struct nd_frame nd_refused[] = {
	{ ND_NA, 7, NA_SO, 63, "2001:db8:ff::66", NODE6, GATEWAY6, ND_OPT_TLLA, 0,
	  ATTACKER_MAC, NULL, 0, true, "ND_BAD_HOP_LIMIT", "NA claiming the gateway from "
	  "off the link: hop limit 63, code 7, checksum wrong" },
	{ ND_NA, 0, NA_SO, 254, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, 0, ATTACKER_MAC, NULL,
	  0, false, "ND_BAD_HOP_LIMIT", "NA claiming the gateway, hop limit 254" },
	{ ND_NS, 0, 0, 64, GATEWAY6, "ff02::1:ff00:10", NODE6, ND_OPT_SLLA, 0, ATTACKER_MAC,
	  NULL, 0, false, "ND_BAD_HOP_LIMIT", "NS from the gateway's address, hop limit 64" },
	{ ND_NA, 7, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, 0, ATTACKER_MAC, NULL,
	  0, false, "ND_BAD_CODE", "NA claiming the gateway, code 7" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, 0, ATTACKER_MAC, NULL,
	  0, true, "ND_BAD_CHECKSUM", "NA claiming the gateway, checksum wrong" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, 0, 0, ATTACKER_MAC, NULL, 20, false,
	  "ND_BAD_LENGTH", "NA of 20 bytes" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, "ff02::1", ND_OPT_TLLA, 0, ATTACKER_MAC, NULL,
	  0, false, "ND_TARGET_MULTICAST", "NA for target ff02::1" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, -1, ATTACKER_MAC, NULL,
	  0, false, "ND_BAD_OPTION", "NA claiming the gateway, an option of length 0" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, 2, ATTACKER_MAC, NULL,
	  0, false, "ND_BAD_OPTION", "NA claiming the gateway, an option past the message" },
	{ ND_NA, 0, NA_O, 0, "ff02::1", NODE6, GATEWAY6, ND_OPT_TLLA, 0, ATTACKER_MAC, NULL,
	  0, false, "ND_BAD_SOURCE", "NA claiming the gateway from source ff02::1" },
	{ ND_NS, 0, 0, 0, "::", NODE6, NODE6, 0, 0, NULL, NULL, 0, false,
	  "ND_DAD_NOT_SOLICITED_NODE", "NS from :: to the node's unicast address" },
	{ ND_NS, 0, 0, 0, "::", "ff02::1:ff00:10", NODE6, ND_OPT_SLLA, 0, ATTACKER_MAC, NULL,
	  0, false, "ND_DAD_WITH_SLLAO", "NS from :: with a source link-layer option" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, "ff02::1", GATEWAY6, ND_OPT_TLLA, 0, ATTACKER_MAC,
	  NULL, 0, false, "ND_SOLICITED_MULTICAST",
	  "NA claiming the gateway, solicited flag, to ff02::1" },
	{ ND_NA, 0, NA_SO, 0, GATEWAY6, NODE6, GATEWAY6, ND_OPT_TLLA, 0, ATTACKER_MAC,
	  OTHER_MAC, 0, false, "SLOW_OTHER_HOST",
	  "NA claiming the gateway, to another host's MAC" },
};

/* The ARP frames a[0..n_arp), then the ND frames nd[0..n_nd). */
static void
emit_neigh(struct gen *g, const struct arp_frame *a, size_t n_arp, const struct nd_frame *nd,
	   size_t n_nd)
{
	for (size_t i = 0; i < n_arp; i++)
		emit_arp(g, &a[i]);
	for (size_t i = 0; i < n_nd; i++)
		emit_nd(g, &nd[i]);
}

static void
neigh_valid(struct gen *g)
{
	emit_neigh(g, arp_valid, sizeof(arp_valid) / sizeof(arp_valid[0]), nd_valid,
		   sizeof(nd_valid) / sizeof(nd_valid[0]));
}

static void
neigh_refused(struct gen *g)
{
	emit_neigh(g, arp_refused, sizeof(arp_refused) / sizeof(arp_refused[0]), nd_refused,
		   sizeof(nd_refused) / sizeof(nd_refused[0]));
}

/* Refused frames first, the gateways' answers last. */
static void
scenario_neigh(struct gen *g)
{
	neigh_valid(g);
	neigh_refused(g);
	emit_arp(g, &arp_gateway);
	emit_nd(g, &nd_gateway);
}

/* The gateways' answers first: a refused frame learnt would replace them. */
static void
scenario_neigh_after(struct gen *g)
{
	emit_arp(g, &arp_gateway);
	emit_nd(g, &nd_gateway);
	neigh_valid(g);
	neigh_refused(g);
}

/* ---------------------------------------------------------- martian */

/* Sources no packet may come from (RFC 1122 3.2.1.3, RFC 4291 2.5). */
static const char *const martians[] = {
	"198.18.1.1",           /* a VIP */
	"198.18.1.2",           /* an l2 VIP */
	"198.18.0.10",          /* the node */
	"224.0.0.5",            /* multicast */
	"239.1.2.3",
	"255.255.255.255",
	"0.0.0.0",
	"0.1.2.3",              /* 0.0.0.0/8 */
	"127.0.0.1",
	"127.9.9.9",
	"2001:db8:1::1",        /* a VIP */
	"2001:db8::10",         /* the node */
	"::",
	"::1",
	"ff02::1",
	"ff0e::1234",
};

static void
scenario_martian(struct gen *g)
{
	uint8_t ip[FRAME_MAX], l4[FRAME_MAX];
	struct ipopt o = { .df = true };
	char desc[160];
	size_t n;

	for (size_t i = 0; i < sizeof(martians) / sizeof(martians[0]); i++) {
		struct addr c = addr_of(martians[i]);
		bool v4 = c.family == AF_INET;
		struct addr tcp = addr_of(v4 ? "198.18.1.1" : "2001:db8:1::1");
		struct addr udp = addr_of(v4 ? "198.18.1.2" : "2001:db8:1::2");

		o.id = (uint16_t)(7000 + i);
		n = tcp_make(l4, &c, &tcp, (uint16_t)(7000 + i), 80, TCP_SYN, 0, 7000 + (uint32_t)i);
		n = ip_make(ip, &c, &tcp, PROTO_TCP, &o, l4, n);
		snprintf(desc, sizeof(desc), "TCP SYN to a VIP from %s", martians[i]);
		drop_ip(g, ip, n, "BAD_SOURCE", desc);
		n = udp_make(l4, &c, &udp, (uint16_t)(7100 + i), 5000, 20, 7100 + (uint32_t)i);
		n = ip_make(ip, &c, &udp, PROTO_UDP, &o, l4, n);
		snprintf(desc, sizeof(desc), "UDP to an l2 VIP from %s", martians[i]);
		drop_ip(g, ip, n, "BAD_SOURCE", desc);
	}
	{
		struct datagram d = { .client = addr_of("127.0.0.1"),
				      .vip = addr_of("198.18.1.1"), .proto = PROTO_UDP,
				      .id = 7200 };

		d.l4_len = udp_make(d.l4, &d.client, &d.vip, 7200, 53, FRAG_DATA, d.id);
		n = fragment_make(ip, &d, 0);
		drop_ip(g, ip, n, "BAD_SOURCE", "first fragment to a VIP from 127.0.0.1");
	}
	n = good_tcp(ip, AF_INET, 7300, 0);
	emit_ip(g, ip, n, FATE_FWD, NULL, 0, "6 198.18.10.50 7300 198.18.1.1 80",
		"a good IPv4 packet, last but one");
	n = good_tcp(ip, AF_INET6, 7301, 0);
	emit_ip(g, ip, n, FATE_FWD, NULL, 0, "6 2001:db8:10::50 7301 2001:db8:1::1 80",
		"a good IPv6 packet, last");
}

/* -------------------------------------------------------- vlan, jumbo */

/* A flow to each TCP VIP, and a client for the l2 VIPs. */
struct targets {
	struct flow f4, f6;         /* client .N to tcp4 and tcp6, port cport */
	struct addr c4, c6;         /* client .N + 2 */
	struct addr l2v4, l2v6;     /* udp4l2 and udp6l2 */
};

static struct targets
targets_make(unsigned n, uint16_t cport)
{
	char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN], b4[INET_ADDRSTRLEN],
	     b6[INET6_ADDRSTRLEN];
	struct targets t;

	snprintf(a4, sizeof(a4), "198.18.10.%u", n);
	snprintf(a6, sizeof(a6), "2001:db8:10::%u", n);
	snprintf(b4, sizeof(b4), "198.18.10.%u", n + 2);
	snprintf(b6, sizeof(b6), "2001:db8:10::%u", n + 2);
	t.f4 = (struct flow){ .client = addr_of(a4), .vip = addr_of("198.18.1.1"),
			      .cport = cport, .vport = 80 };
	t.f6 = (struct flow){ .client = addr_of(a6), .vip = addr_of("2001:db8:1::1"),
			      .cport = cport, .vport = 80 };
	t.c4 = addr_of(b4);
	t.c6 = addr_of(b6);
	t.l2v4 = addr_of("198.18.1.2");
	t.l2v6 = addr_of("2001:db8:1::2");
	return t;
}

/* Tagged frames the port takes: forwarded, answered, fragmented. */
static void
vlan_tagged(struct gen *g)
{
	struct targets t = targets_make(60, 8000);
	struct flow f4 = t.f4, f6 = t.f6;
	struct ipopt o = { .df = true, .id = 8000 }, nodf = { .id = 8001 };

	emit_tcp(g, &f4, TCP_SYN, 0, 8000, &o, FATE_FWD, NULL, "tagged 100: IPv4 TCP SYN");
	emit_tcp(g, &f6, TCP_SYN, 0, 8000, &o, FATE_FWD, NULL, "tagged 100: IPv6 TCP SYN");
	emit_udp(g, &t.c4, 8002, &t.l2v4, 5000, 40, 8002, &o, "tagged 100: UDP to an l2 VIP");
	emit_udp(g, &t.c6, 8003, &t.l2v6, 5000, 40, 8003, &o,
		 "tagged 100: IPv6 UDP to an l2 VIP");
	g->tci = 3 << 13 | VLAN_ID;
	f4.cport = 8004;
	emit_tcp(g, &f4, TCP_SYN, 0, 8004, &o, FATE_FWD, NULL,
		 "tagged 100 with priority 3: IPv4 TCP SYN");
	g->tci = VLAN_ID;
	f4.cport = 8005;
	emit_tcp(g, &f4, TCP_ACK, PORT_MTU - IP4_LEN - TCP_LEN, 8005, &o, FATE_REPLY,
		 too_big_mtu(&f4.vip), "tagged 100: IPv4 DF, 1500 bytes: too big, a reply");
	f6.cport = 8006;
	emit_tcp(g, &f6, TCP_ACK, PORT_MTU - IP6_LEN - TCP_LEN, 8006, &o, FATE_REPLY,
		 too_big_mtu(&f6.vip), "tagged 100: IPv6, 1500 bytes: too big, a reply");
	f4.client = t.c4;
	f4.cport = 8007;
	emit_tcp(g, &f4, TCP_ACK, PORT_MTU - IP4_LEN - TCP_LEN, 8007, &nodf, FATE_FRAG, "2",
		 "tagged 100: IPv4 without DF, 1500 bytes: 2 fragments");
	emit_arp(g, &arp_valid[0]);
	emit_nd(g, &nd_valid[0]);
}

/* Frames with the wrong tags, or none. */
static void
vlan_wrong(struct gen *g)
{
	uint8_t f[FRAME_MAX], ip[FRAME_MAX];
	size_t n = good_tcp(ip, AF_INET, 8100, 0), l2;

	g->tci = 0;
	drop_ip(g, ip, n, "WRONG_VLAN", "untagged IPv4 TCP SYN on a port of VLAN 100");
	n = arp_make(g, &arp_valid[0], f);
	emit_frame(g, f, n, FATE_DROP, "WRONG_VLAN", 0, NULL,
		   "untagged ARP request for the node's address");
	g->tci = 200;
	n = good_tcp(ip, AF_INET, 8101, 0);
	drop_ip(g, ip, n, "WRONG_VLAN", "IPv4 TCP SYN tagged 200");
	n = nd_make(g, &nd_valid[0], f);
	emit_frame(g, f, n, FATE_DROP, "WRONG_VLAN", 0, NULL,
		   "NS for the node's address tagged 200");
	g->tci = VLAN_ID;
	for (unsigned inner = 0; inner < 2; inner++) {
		n = good_tcp(ip, AF_INET6, (uint16_t)(8102 + inner), 0);
		l2 = eth_make_to(g, f, g->dst_mac, g->src_mac, ETHERTYPE_VLAN);
		put16(f + l2, inner == 0 ? VLAN_ID : 200);
		put16(f + l2 + 2, ETHERTYPE_IPV6);
		memcpy(f + l2 + VLAN_LEN, ip, n);
		emit_frame(g, f, l2 + VLAN_LEN + n, FATE_DROP, "WRONG_VLAN", 0, NULL,
			   inner == 0 ? "two tags, 100 and 100" : "two tags, 100 and 200");
	}
}

static void
scenario_vlan(struct gen *g)
{
	uint8_t ip[FRAME_MAX];
	size_t n;

	vlan_tagged(g);
	vlan_wrong(g);
	g->tci = VLAN_ID;
	n = good_tcp(ip, AF_INET, 8199, 0);
	emit_ip(g, ip, n, FATE_FWD, NULL, 0, "6 198.18.10.50 8199 198.18.1.1 80",
		"tagged 100: the good packet, last");
}

enum {
	JUMBO_FRAME = 9054,         /* bytes of Ethernet frame */
	JUMBO_IP = JUMBO_FRAME - ETH_LEN,
	EXT_MAX = 2048,             /* the longest IPv6 extension header */
};

/*
 * An IPv6 TCP SYN behind a destination options header of EXT_MAX bytes
 * (PadN options): its TCP header lies past the first mbuf of the chain.
 */
static void
jumbo_long_header(struct gen *g)
{
	static uint8_t ext[EXT_MAX];
	struct addr c = addr_of("2001:db8:10::71"), v = addr_of("2001:db8:1::1");
	struct ipopt o = { .ext6 = ext, .ext6_len = sizeof(ext), .ext6_first = EXT_DEST };
	uint8_t ip[FRAME_MAX], l4[64];
	size_t n, at = 2;

	memset(ext, 0, sizeof(ext));
	ext[0] = PROTO_TCP;
	ext[1] = EXT_MAX / 8 - 1;
	while (at < sizeof(ext)) {
		size_t pad = sizeof(ext) - at < 257 ? sizeof(ext) - at : 257;

		if (sizeof(ext) - at - pad == 1)        /* no room left for one more */
			pad--;
		ext[at] = 1;                            /* PadN */
		ext[at + 1] = (uint8_t)(pad - 2);
		at += pad;
	}
	n = tcp_make(l4, &c, &v, 9100, 80, TCP_SYN, 0, 9100);
	n = ip_make(ip, &c, &v, PROTO_TCP, &o, l4, n);
	drop_ip(g, ip, n, "CHAINED", "IPv6 TCP SYN behind a 2048-byte destination options "
		"header: its TCP header past the first mbuf");
}

static void
scenario_jumbo(struct gen *g)
{
	struct targets t = targets_make(70, 9000);
	struct flow f4 = t.f4, f6 = t.f6;
	struct ipopt df = { .df = true, .id = 9000 }, nodf = { .id = 9001 };
	uint8_t ip[FRAME_MAX];
	size_t n;

	emit_tcp(g, &f4, TCP_ACK, JUMBO_IP - IP4_LEN - TCP_LEN, 9000, &df, FATE_REPLY,
		 too_big_mtu(&f4.vip), "9054-byte frame, IPv4 DF to a GRE VIP: a reply");
	emit_tcp(g, &f6, TCP_ACK, JUMBO_IP - IP6_LEN - TCP_LEN, 9000, &df, FATE_REPLY,
		 too_big_mtu(&f6.vip), "9054-byte frame, IPv6 to a GRE VIP: a reply");
	f4.cport = 9001;
	emit_tcp(g, &f4, TCP_ACK, JUMBO_IP - IP4_LEN - TCP_LEN, 9001, &nodf, FATE_DROP,
		 "CHAINED", "9054-byte frame, IPv4 without DF to a GRE VIP: not fragmented "
		 "from a chain");
	f4.cport = 9002;
	df.id = 9002;
	emit_tcp(g, &f4, TCP_ACK, 3000 - ETH_LEN - IP4_LEN - TCP_LEN, 9002, &df, FATE_REPLY,
		 too_big_mtu(&f4.vip), "3000-byte frame over two mbufs, IPv4 DF: a reply");
	nodf.id = 9003;
	emit_udp(g, &t.c4, 9003, &t.l2v4, 5000, JUMBO_IP - IP4_LEN - UDP_LEN, 9003, &nodf,
		 "9054-byte frame, IPv4 without DF to an l2 VIP: forwarded whole");
	emit_udp(g, &t.c4, 9004, &t.l2v4, 5000, JUMBO_IP - IP4_LEN - UDP_LEN, 9004, &df,
		 "9054-byte frame, IPv4 DF to an l2 VIP: forwarded whole");
	emit_udp(g, &t.c6, 9005, &t.l2v6, 5000, JUMBO_IP - IP6_LEN - UDP_LEN, 9005, &df,
		 "9054-byte frame, IPv6 to an l2 VIP: forwarded whole");
	nodf.id = 9006;
	emit_udp(g, &t.c4, 9006, &t.l2v4, 5000, 1600, 9006, &nodf,
		 "1642-byte frame, IPv4 without DF to an l2 VIP: forwarded whole");
	jumbo_long_header(g);
	n = good_tcp(ip, AF_INET, 9099, 0);
	emit_ip(g, ip, n, FATE_FWD, NULL, 0, "6 198.18.10.50 9099 198.18.1.1 80",
		"a small good packet, last");
}

/* -------------------------------------------------------------- bfd */

/*
 * BFD control packets (RFC 5880 4.1, RFC 5881), written here from the RFC
 * and not with the dataplane's writer: version 1, 24 bytes, then with A an
 * auth section (RFC 5880 4.4: type, length, key id, reserved, sequence,
 * digest).
 */
enum {
	BFD_PORT = 3784,
	BFD_MULTIHOP_PORT = 4784,       /* RFC 5883: not single hop, not ours */
	BFD_LEN = 24,
	BFD_AUTH_SHA1_LEN = 28,
	BFD_SPORT = 49200,              /* RFC 5881 4: 49152..65535 */
	BFD_INTERVAL_MS = 300,          /* the config's interval_ms */
	BFD_MULT = 3,                   /* the config's multiplier */
	BFD_DOWN = 1,                   /* RFC 5880 4.1 states */
	BFD_UP = 3,
	BFD_F_MULTIPOINT = 0x01,
	BFD_F_AUTH = 0x04,
	BFD_F_FINAL = 0x10,
	BFD_F_POLL = 0x20,
	/* the valid packet's My Discriminator: the session must keep it */
	BFD_PEER_DISCR = 0x0bfd0004,
	/* a Your Discriminator with a low byte 0 names no session (the
	 * dataplane's are random above the low byte, session + 1 in it) */
	BFD_NO_DISCR = 0x7fffff00,
	/* the valid packet's Desired Min TX, 60 s: detection takes 3 x 60 s,
	 * so the session remembers the remote for the whole run */
	BFD_PEER_TX_US = 60000000,
	BFD_PEER_RX_US = 1000000,
};

static const char BFD_PEER4[] = "198.18.0.2";
static const char BFD_PEER6[] = "2001:db8::2";
static const char BFD_PEER4_MAC[] = "02:00:00:00:00:b4";
static const char BFD_PEER6_MAC[] = "02:00:00:00:00:b6";

/* Everything of a control packet a frame varies. */
struct bfd_msg {
	uint8_t version;            /* 0: 1 */
	uint8_t state;
	uint8_t flags;
	uint8_t mult;
	int length;                 /* the length field; 0: the packet's, -1: 0 */
	uint32_t my, your;
	size_t cut;                 /* nonzero: the payload cut to cut bytes */
	/* with BFD_F_AUTH: the auth section */
	uint8_t auth_type;          /* 0: 5, Meticulous Keyed SHA-1 */
	uint8_t auth_len;           /* 0: 28 */
	uint8_t key_id;
	uint32_t seq;
	const char *key;            /* signed with it (RFC 5880 6.7.4); NULL:
				 * a digest of noise */
};

/* ---- SHA-1 (FIPS 180-4), for the digests of RFC 5880 6.7.4 */

static uint32_t
rol32(uint32_t x, unsigned n)
{
	return x << n | x >> (32 - n);
}

static void
sha1_block(uint32_t h[5], const uint8_t block[64])
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (unsigned t = 0; t < 80; t++) {
		uint32_t f, k, x;

		w[t] = t < 16 ? get32(block + 4 * t) :
		       rol32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
		if (t < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (t < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (t < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		x = rol32(a, 5) + f + e + k + w[t];
		e = d, d = c, c = rol32(b, 30), b = a, a = x;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static void
sha1(const uint8_t *msg, size_t len, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	size_t blocks = (len + 9 + 63) / 64;        /* 0x80, the 64-bit length */
	uint64_t bits = (uint64_t)len * 8;
	uint8_t block[64];

	for (size_t n = 0; n < blocks; n++) {
		for (size_t i = 0; i < 64; i++) {
			size_t at = n * 64 + i;

			block[i] = at < len ? msg[at] : at == len ? 0x80 : 0;
		}
		if (n + 1 == blocks)
			for (unsigned i = 0; i < 8; i++)
				block[63 - i] = (uint8_t)(bits >> (8 * i));
		sha1_block(h, block);
	}
	for (unsigned i = 0; i < 5; i++)
		put32(out + 4 * i, h[i]);
}

/* The payload of m into p; returns its length. */
static size_t
bfd_make(uint8_t *p, const struct bfd_msg *m)
{
	uint8_t auth_len = m->auth_len != 0 ? m->auth_len : BFD_AUTH_SHA1_LEN;
	size_t len = BFD_LEN + (m->flags & BFD_F_AUTH ? auth_len : 0);

	memset(p, 0, len);
	p[0] = (uint8_t)((m->version != 0 ? m->version : 1) << 5);
	p[1] = (uint8_t)(m->state << 6 | m->flags);
	p[2] = m->mult;
	p[3] = (uint8_t)(m->length > 0 ? m->length : m->length < 0 ? 0 : (int)len);
	put32(p + 4, m->my);
	put32(p + 8, m->your);
	put32(p + 12, BFD_PEER_TX_US);
	put32(p + 16, BFD_PEER_RX_US);
	if (m->flags & BFD_F_AUTH) {
		p[24] = m->auth_type != 0 ? m->auth_type : 5;
		p[25] = auth_len;
		p[26] = m->key_id;
		put32(p + 28, m->seq);
		fill(p + 32, len - 32, 0xbfd);
	}
	if ((m->flags & BFD_F_AUTH) && m->key != NULL) {
		/* the key, zero-padded to 20 bytes, in the digest's place */
		memset(p + 32, 0, 20);
		memcpy(p + 32, m->key, strlen(m->key) < 20 ? strlen(m->key) : 20);
		sha1(p, len, p + 32);
	}
	return m->cut != 0 ? m->cut : len;
}

/* The valid Down packet of a peer that knows nothing of the session yet. */
static struct bfd_msg
bfd_down(void)
{
	return (struct bfd_msg){ .state = BFD_DOWN, .mult = BFD_MULT, .my = BFD_PEER_DISCR };
}

/* The UDP checksum of a BFD frame. */
enum bfd_csum {
	BFD_CSUM_RIGHT,
	BFD_CSUM_WRONG,
	BFD_CSUM_NONE,          /* 0: allowed over IPv4 (RFC 768), not IPv6 (RFC 8200) */
};

/* A frame carrying m from src to dst:dport, TTL / hop limit ttl, for the
 * control thread (outcome) or dropped by a worker (outcome NOT_VIP). */
static void
emit_bfd(struct gen *g, const char *src_s, const char *dst_s, uint16_t dport, uint8_t ttl,
	 const struct bfd_msg *m, enum bfd_csum csum, const char *outcome, const char *desc)
{
	struct addr src = addr_of(src_s), dst = addr_of(dst_s);
	struct ipopt o = { .ttl = ttl, .tos = 0xc0, .id = (uint16_t)(g->n + 1) };
	uint8_t l4[FRAME_MAX], ip[FRAME_MAX];
	size_t n = bfd_make(l4 + UDP_LEN, m) + UDP_LEN;

	put16(l4, BFD_SPORT);
	put16(l4 + 2, dport);
	put16(l4 + 4, (uint32_t)n);
	put16(l4 + 6, 0);
	put16(l4 + 6, l4_csum(&src, &dst, PROTO_UDP, l4, n));
	if (csum == BFD_CSUM_WRONG)
		l4[7] ^= 0x5a;
	else if (csum == BFD_CSUM_NONE)
		put16(l4 + 6, 0);
	n = ip_make(ip, &src, &dst, PROTO_UDP, &o, l4, n);
	if (strcmp(outcome, "NOT_VIP") == 0)
		emit_ip(g, ip, n, FATE_DROP, outcome, 0, NULL, desc);
	else
		emit_ip(g, ip, n, FATE_SLOW, outcome, 0, NULL, desc);
}

/* A packet from PEER4 to the node, TTL 255: the usual case. */
static void
emit_bfd4(struct gen *g, const struct bfd_msg *m, const char *outcome, const char *desc)
{
	emit_bfd(g, BFD_PEER4, NODE4, BFD_PORT, 255, m, BFD_CSUM_RIGHT, outcome, desc);
}

/* The peers' answers to the dataplane's solicitations: learnt, so that
 * its BFD packets go out (to the peers' MACs) and pcapcheck reads them. */
static const struct arp_frame arp_bfd_peer = {
	PORT, NULL, ARP_REPLY, BFD_PEER4_MAC, BFD_PEER4, NODE4, "SLOW_LEARNT",
	"ARP reply from BFD peer 4: learnt",
};

static const struct nd_frame nd_bfd_peer = {
	ND_NA, 0, NA_SO, 0, BFD_PEER6, NODE6, BFD_PEER6, ND_OPT_TLLA, 0, BFD_PEER6_MAC, NULL,
	0, false, "SLOW_LEARNT", "NA from BFD peer 6: learnt",
};

/* A refused packet: from src (to the node's address of its family), TTL or
 * hop limit ttl, counted as outcome. */
struct bfd_case {
	const char *src;
	uint8_t ttl;
	struct bfd_msg m;
	const char *outcome, *desc;
};

/* A valid Down packet but for what the case changes. */
#define BFD_DOWN_MSG .state = BFD_DOWN, .mult = BFD_MULT, .my = BFD_PEER_DISCR

/* One packet per drop reason a frame can cause without auth configured,
 * in the order the dataplane checks them, each valid but for one thing. */
static const struct bfd_case bfd_refused[] = {
	{ BFD_PEER4, 254, { BFD_DOWN_MSG }, "bfd:BAD_TTL", "BFD Down, TTL 254: from off the link" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .cut = 20 }, "bfd:TRUNCATED", "BFD payload of 20 bytes" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .version = 2 }, "bfd:BAD_VERSION", "BFD version 2" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .length = 30 }, "bfd:BAD_LENGTH",
	  "BFD length field 30, past the 24-byte payload" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .length = 20 }, "bfd:BAD_LENGTH",
	  "BFD length field 20, below 24" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .flags = BFD_F_AUTH, .length = 24 }, "bfd:BAD_LENGTH",
	  "BFD A bit, length field 24: no room for its auth section" },
	{ BFD_PEER4, 255, { .state = BFD_DOWN, .my = BFD_PEER_DISCR }, "bfd:BAD_DETECT_MULT",
	  "BFD detect multiplier 0" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .flags = BFD_F_MULTIPOINT }, "bfd:MULTIPOINT",
	  "BFD M bit" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .flags = BFD_F_POLL | BFD_F_FINAL },
	  "bfd:POLL_AND_FINAL", "BFD P and F both" },
	{ BFD_PEER4, 255, { .state = BFD_DOWN, .mult = BFD_MULT }, "bfd:BAD_MY_DISCR",
	  "BFD my discriminator 0" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .your = BFD_NO_DISCR }, "bfd:UNKNOWN_YOUR_DISCR",
	  "BFD your discriminator 0x7fffff00: names no session" },
	{ BFD_PEER4, 255, { .state = BFD_UP, .mult = BFD_MULT, .my = BFD_PEER_DISCR },
	  "bfd:BAD_YOUR_DISCR", "BFD Up with your discriminator 0" },
	{ "198.18.0.99", 255, { BFD_DOWN_MSG }, "bfd:UNKNOWN_PEER",
	  "BFD Down from 198.18.0.99, no peer" },
	/* RFC 5880 6.8.6 discards "Your Discriminator zero and State not Down
	 * or AdminDown" before it selects a session by address, and BFD_DROPS
	 * puts BAD_YOUR_DISCR before UNKNOWN_PEER "in the order checked" */
	{ "198.18.0.99", 255, { .state = BFD_UP, .mult = BFD_MULT, .my = BFD_PEER_DISCR },
	  "bfd:BAD_YOUR_DISCR", "BFD Up with your discriminator 0 from 198.18.0.99, no peer: "
	  "the state is checked before the address" },
	{ BFD_PEER4, 255, { BFD_DOWN_MSG, .flags = BFD_F_AUTH }, "bfd:AUTH_UNEXPECTED",
	  "BFD with a SHA-1 auth section (A bit) to a session without auth" },
	{ BFD_PEER6, 254, { BFD_DOWN_MSG }, "bfd:BAD_TTL",
	  "IPv6 BFD Down from peer 6, hop limit 254" },
	{ "2001:db8::99", 255, { BFD_DOWN_MSG }, "bfd:UNKNOWN_PEER",
	  "IPv6 BFD Down from 2001:db8::99, no peer" },
	{ BFD_PEER6, 255, { .state = BFD_UP, .mult = BFD_MULT, .my = BFD_PEER_DISCR },
	  "bfd:BAD_YOUR_DISCR", "IPv6 BFD Up from peer 6 with your discriminator 0" },
};

#undef BFD_DOWN_MSG

static void
bfd_refused_all(struct gen *g)
{
	for (size_t i = 0; i < sizeof(bfd_refused) / sizeof(bfd_refused[0]); i++) {
		const struct bfd_case *b = &bfd_refused[i];

		emit_bfd(g, b->src, strchr(b->src, ':') != NULL ? NODE6 : NODE4, BFD_PORT, b->ttl,
			 &b->m, BFD_CSUM_RIGHT, b->outcome, b->desc);
	}
}

/* Not BFD for a session: UDP checksums wrong, other addresses and ports. */
static void
bfd_others(struct gen *g, const char *wrong_csum_outcome)
{
	struct bfd_msg m = bfd_down();

	emit_bfd(g, BFD_PEER4, NODE4, BFD_PORT, 255, &m, BFD_CSUM_WRONG, wrong_csum_outcome,
		 "BFD Down from 198.18.0.2, UDP checksum wrong");
	m.my = BFD_PEER_DISCR + 6;
	emit_bfd(g, BFD_PEER6, NODE6, BFD_PORT, 255, &m, BFD_CSUM_WRONG, wrong_csum_outcome,
		 "IPv6 BFD Down from 2001:db8::2, UDP checksum wrong");
	emit_bfd(g, BFD_PEER6, NODE6, BFD_PORT, 255, &m, BFD_CSUM_NONE, wrong_csum_outcome,
		 "IPv6 BFD Down from 2001:db8::2, UDP checksum 0 (none: not allowed over IPv6)");
	m = bfd_down();
	emit_bfd(g, BFD_PEER4, "198.18.0.99", BFD_PORT, 255, &m, BFD_CSUM_RIGHT, "NOT_VIP",
		 "BFD to 198.18.0.99, neither the node nor a VIP");
	emit_bfd(g, BFD_PEER4, NODE4, BFD_MULTIHOP_PORT, 255, &m, BFD_CSUM_RIGHT, "NOT_VIP",
		 "multihop BFD (port 4784) to the node");
}

/* The config's bfd section and what pcapcheck checks the output by. */
static void
bfd_config_lines(void)
{
	expect_line("bfd peer %s %s", BFD_PEER4, BFD_PEER4_MAC);
	expect_line("bfd peer %s %s", BFD_PEER6, BFD_PEER6_MAC);
	expect_line("bfd interval %u", BFD_INTERVAL_MS);
	expect_line("bfd multiplier %u", BFD_MULT);
}

/* The frames of scenario bfd (mutated takes them too). */
static void
bfd_frames(struct gen *g)
{
	struct bfd_msg m = bfd_down();

	emit_arp(g, &arp_bfd_peer);
	emit_nd(g, &nd_bfd_peer);
	emit_bfd4(g, &m, "BFD_ACCEPTED", "BFD Down from peer 4, your discriminator 0: taken");
	bfd_refused_all(g);
	bfd_others(g, "BFD_BAD_UDP");
}

/*
 * The config names PEER4 and PEER6 (bfd lines); the node is not serving
 * (no syncd), so every session stays Down. One valid packet from PEER4,
 * then one refused packet per drop reason a frame can cause without auth:
 * WRONG_PEER needs the session's discriminator, random at each start and
 * only learnt from the dataplane's output, which a fixed input cannot
 * know; the AUTH_* ones past AUTH_UNEXPECTED need a session with auth.
 * At the end PEER4's session holds what the valid packet said (its
 * discriminator, multiplier, one packet in), PEER6's nothing.
 */
static void
scenario_bfd(struct gen *g)
{
	bfd_config_lines();
	bfd_frames(g);
	expect_line("bfd session %s Down 1 %u %u", BFD_PEER4, BFD_PEER_DISCR, BFD_MULT);
	expect_line("bfd session %s Down 0 0 0", BFD_PEER6);
}

enum {
	BFD_KEY_ID = 7,
	BFD_SEQ = 1000,             /* the valid packet's sequence number */
};

static const char BFD_KEY[] = "maglb-pcap-key";

/* A Down packet from PEER4 signed with key (NULL: noise) under key_id,
 * sequence seq. */
static struct bfd_msg
bfd_signed(const char *key, uint8_t key_id, uint32_t seq)
{
	struct bfd_msg m = bfd_down();

	m.flags = BFD_F_AUTH;
	m.key = key;
	m.key_id = key_id;
	m.seq = seq;
	return m;
}

/*
 * The sessions with Meticulous Keyed SHA-1 (a "bfd auth" line): one
 * signed Down packet from PEER4 (taken: the sequence number is known from
 * then on), then one packet per auth drop reason, signed right but for
 * what they say. The dataplane's own packets are signed, their sequence
 * numbers going up by one.
 */
static void
scenario_bfd_auth(struct gen *g)
{
	struct bfd_msg m = bfd_signed(BFD_KEY, BFD_KEY_ID, BFD_SEQ);

	bfd_config_lines();
	expect_line("bfd auth %u %s", BFD_KEY_ID, BFD_KEY);
	emit_arp(g, &arp_bfd_peer);
	emit_nd(g, &nd_bfd_peer);
	emit_bfd4(g, &m, "BFD_ACCEPTED", "signed BFD Down from peer 4, sequence 1000: taken");
	m = bfd_down();
	emit_bfd4(g, &m, "bfd:AUTH_MISSING", "BFD Down from peer 4 without auth");
	m = bfd_signed(NULL, BFD_KEY_ID, BFD_SEQ + 1);
	m.auth_type = 2;
	m.auth_len = 24;
	emit_bfd4(g, &m, "bfd:AUTH_BAD_TYPE", "BFD with a Keyed MD5 section (type 2)");
	m.auth_type = 5;
	emit_bfd4(g, &m, "bfd:AUTH_BAD_LENGTH", "BFD with a SHA-1 section of 24 bytes, not 28");
	m = bfd_signed(BFD_KEY, BFD_KEY_ID + 1, BFD_SEQ + 1);
	emit_bfd4(g, &m, "bfd:AUTH_BAD_KEY_ID", "BFD signed under key id 8, not 7");
	m = bfd_signed(BFD_KEY, BFD_KEY_ID, BFD_SEQ);
	emit_bfd4(g, &m, "bfd:AUTH_BAD_SEQUENCE", "BFD signed right, sequence 1000 again: a replay");
	m.seq = BFD_SEQ + 3 * BFD_MULT + 1;
	emit_bfd4(g, &m, "bfd:AUTH_BAD_SEQUENCE",
		  "BFD signed right, sequence 1010: past 3 x detect multiplier ahead");
	m = bfd_signed("another key", BFD_KEY_ID, BFD_SEQ + 1);
	emit_bfd4(g, &m, "bfd:AUTH_BAD_DIGEST", "BFD sequence 1001 signed with another key");
	m = bfd_signed(NULL, BFD_KEY_ID, BFD_SEQ + 1);
	emit_bfd4(g, &m, "bfd:AUTH_BAD_DIGEST", "BFD sequence 1001, digest of noise");
	expect_line("bfd session %s Down 1 %u %u", BFD_PEER4, BFD_PEER_DISCR, BFD_MULT);
	expect_line("bfd session %s Down 0 0 0", BFD_PEER6);
}

/*
 * No bfd section: BFD to the node's address is still the control
 * thread's, which has no session for it (BFD_NO_SESSION, before any UDP
 * check); to another address it is no VIP's.
 */
static void
scenario_bfd_off(struct gen *g)
{
	struct bfd_msg m = bfd_down();

	emit_bfd4(g, &m, "BFD_NO_SESSION", "BFD Down from 198.18.0.2: no session configured");
	m.my = BFD_PEER_DISCR + 6;
	emit_bfd(g, BFD_PEER6, NODE6, BFD_PORT, 255, &m, BFD_CSUM_RIGHT, "BFD_NO_SESSION",
		 "IPv6 BFD Down from 2001:db8::2: no session configured");
	bfd_others(g, "BFD_NO_SESSION");
}

/*
 * The frames of the other untagged, statically routed scenarios, each with
 * 1 to 4 random bytes changed, from a fixed seed: what happens to each is
 * not predicted, only that the dataplane counts every one exactly once
 * (check_pcap.sh asserts the identities alone for "any" fates).
 */
static void
scenario_mutated(struct gen *g)
{
	g->mutate = 0x6d61676c62ull;    /* any fixed non-zero seed */
	scenario_frags4(g);
	scenario_frags6(g);
	scenario_icmp(g);
	scenario_toobig(g);
	scenario_malformed(g);
	scenario_martian(g);
	scenario_jumbo(g);
	bfd_config_lines();
	bfd_frames(g);
}

/* ----------------------------------------------------------- export */

enum {
	EXPORT_FLOOD = 64,          /* spoofed SYNs */
	EXPORT_CONNS = 8,           /* of each kind below */
	EXPORT_AFTER = 4,           /* tcp4after's sync_after_packets */
};

/* Flow n of a kind (a client block of its own) to vip4:vport, or with v6
 * to 2001:db8:1::1:vport. */
static struct flow
export_flow(unsigned kind, unsigned n, bool v6, const char *vip4, uint16_t vport)
{
	char client[64];

	snprintf(client, sizeof(client), v6 ? "2001:db8:%x::%x" : "198.18.%u.%u", 10 + kind,
		 1 + n);
	return (struct flow){ .client = addr_of(client),
			      .vip = addr_of(v6 ? "2001:db8:1::1" : vip4),
			      .cport = (uint16_t)(40000 + 13 * n + kind), .vport = vport };
}

/* Segment k of a flow: its own IP ID and TCP sequence. */
static void
export_tcp(struct gen *g, const struct flow *f, uint8_t flags, size_t data_len,
	   uint32_t seed, const char *desc)
{
	struct ipopt o = { .df = true, .id = (uint16_t)(g->n + 1) };

	emit_tcp(g, f, flags, data_len, seed, &o, FATE_FWD, NULL, desc);
}

/*
 * The whole replay takes milliseconds: no refresh interval (60 s) passes,
 * and no provisional entry (3 s) grows up. Each kind in IPv4 to tcp4 and
 * IPv6 to tcp6 (half of EXPORT_CONNS each), except the flood (IPv4) and
 * tcp4after (IPv4).
 */
static void
scenario_export(struct gen *g)
{
	unsigned new = 0, close = 0;

	for (unsigned i = 0; i < EXPORT_FLOOD; i++) {
		struct flow f = export_flow(0, i, false, "198.18.1.1", 80);

		export_tcp(g, &f, TCP_SYN, 0, 1000 + i, "spoofed SYN: exports nothing");
	}
	for (unsigned i = 0; i < EXPORT_FLOOD; i++) {
		struct flow f = export_flow(0, i, false, "198.18.1.1", 80);

		export_tcp(g, &f, TCP_SYN, 0, 1000 + i, "the spoofed SYN again: nothing");
	}
	for (unsigned i = 0; i < EXPORT_CONNS; i++) {
		struct flow f = export_flow(1, i, i % 2, "198.18.1.1", 80);

		export_tcp(g, &f, TCP_SYN, 0, 2000 + i, "connection: SYN");
		export_tcp(g, &f, TCP_ACK, 0, 2000 + i, "connection: ACK, established: NEW");
		export_tcp(g, &f, TCP_ACK | TCP_PSH, 200, 2000 + i, "connection: data");
		export_tcp(g, &f, TCP_ACK | TCP_FIN, 0, 2000 + i, "connection: FIN: CLOSE");
		export_tcp(g, &f, TCP_ACK, 0, 2001 + i, "connection: last ACK: nothing");
		new++, close++;
	}
	for (unsigned i = 0; i < EXPORT_CONNS; i++) {
		struct flow f = export_flow(2, i, i % 2, "198.18.1.1", 80);

		export_tcp(g, &f, TCP_SYN, 0, 3000 + i, "SYN");
		export_tcp(g, &f, TCP_RST | TCP_ACK, 0, 3000 + i,
			   "RST before established: nothing");
	}
	for (unsigned i = 0; i < EXPORT_CONNS; i++) {
		struct flow f = export_flow(3, i, i % 2, "198.18.1.1", 80);

		export_tcp(g, &f, TCP_SYN, 0, 4000 + i, "reused 5-tuple: SYN");
		export_tcp(g, &f, TCP_ACK, 0, 4000 + i, "ACK: NEW");
		export_tcp(g, &f, TCP_ACK | TCP_FIN, 0, 4000 + i, "FIN: CLOSE");
		export_tcp(g, &f, TCP_SYN, 0, 5000 + i, "SYN again: a new connection, nothing");
		export_tcp(g, &f, TCP_ACK | TCP_PSH, 100, 5000 + i, "its ACK: NEW");
		export_tcp(g, &f, TCP_RST, 0, 5000 + i, "RST: CLOSE");
		new += 2, close += 2;
	}
	for (unsigned i = 0; i < EXPORT_CONNS; i++) {
		struct flow f = export_flow(4, i, i % 2, "198.18.1.1", 80);

		export_tcp(g, &f, TCP_ACK | TCP_PSH, 300, 6000 + i,
			   "mid-flow: a provisional entry, nothing");
		export_tcp(g, &f, TCP_ACK, 0, 6000 + i, "mid-flow, provisional: nothing");
		export_tcp(g, &f, TCP_ACK | TCP_FIN, 0, 6000 + i, "mid-flow FIN: nothing");
	}
	for (unsigned i = 0; i < EXPORT_CONNS; i++) {
		struct flow f = export_flow(5, i, i % 2, "198.18.1.1", 53);
		struct ipopt o = { .df = true };

		for (unsigned k = 0; k < 3; k++) {
			o.id = (uint16_t)(g->n + 1);
			emit_udp(g, &f.client, f.cport, &f.vip, f.vport, 40, 7000 + 100 * k + i, &o,
				 "UDP: provisional, nothing");
		}
	}
	for (unsigned i = 0; i < EXPORT_CONNS; i++) {
		struct flow f = export_flow(6, i, false, "198.18.1.4", 80);
		unsigned last = i % 2 ? EXPORT_AFTER - 1 : EXPORT_AFTER + 1;

		export_tcp(g, &f, TCP_SYN, 0, 8000 + i, "sync_after_packets 4: SYN");
		for (unsigned k = 2; k < last; k++)
			export_tcp(g, &f, TCP_ACK | TCP_PSH, 50, 8000 + i,
				   k == EXPORT_AFTER ? "packet 4: NEW" : "established: nothing yet");
		export_tcp(g, &f, TCP_ACK | TCP_FIN, 0, 8000 + i,
			   last > EXPORT_AFTER ? "FIN: CLOSE" : "FIN at packet 3: nothing");
		new += last > EXPORT_AFTER, close += last > EXPORT_AFTER;
	}
	expect_line("counter EXPORT_NEW %u", new);
	expect_line("counter EXPORT_REFRESH 0");
	expect_line("counter EXPORT_CLOSE %u", close);
	expect_line("counter PROVISIONAL_REPLACED 0");
	expect_line("counter SYNCED_HITS 0");
}

/* --------------------------------------------------------------- main */

static const struct {
	const char *name;
	void (*run)(struct gen *g);
	uint16_t vlan;          /* the port's VLAN; 0: untagged */
	bool resolve;           /* no gateway MACs in the config */
} scenarios[] = {
	{ "frags4", scenario_frags4, 0, false },
	{ "frags6", scenario_frags6, 0, false },
	{ "icmp", scenario_icmp, 0, false },
	{ "toobig", scenario_toobig, 0, false },
	{ "malformed", scenario_malformed, 0, false },
	{ "neigh", scenario_neigh, 0, true },
	{ "neigh_after", scenario_neigh_after, 0, true },
	{ "martian", scenario_martian, 0, false },
	{ "vlan", scenario_vlan, VLAN_ID, false },
	{ "jumbo", scenario_jumbo, 0, false },
	{ "mutated", scenario_mutated, 0, false },
	{ "export", scenario_export, 0, false },
	{ "bfd", scenario_bfd, 0, false },
	{ "bfd_off", scenario_bfd_off, 0, false },
	{ "bfd_auth", scenario_bfd_auth, 0, false },
};

static int
usage(void)
{
	fprintf(stderr, "usage: pcapgen [--dst-mac MAC] SCENARIO OUT.pcap > EXPECT\n"
		"scenarios: frags4 frags6 icmp toobig malformed neigh neigh_after "
		"martian vlan jumbo mutated export bfd bfd_off bfd_auth\n");
	return 2;
}

int
main(int argc, char **argv)
{
	struct gen g = { 0 };
	const char *dst_mac = PORT_MAC;
	int i = 1;

	if (argc > 2 && strcmp(argv[1], "--dst-mac") == 0) {
		dst_mac = argv[2];
		i = 3;
	}
	if (argc - i != 2 || !mac_parse(dst_mac, g.dst_mac))
		return usage();
	mac_parse(ROUTER_MAC, g.src_mac);
	for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
		if (strcmp(argv[i], scenarios[s].name) != 0)
			continue;
		g.pcap = pcap_open_dead(DLT_EN10MB, 65535);
		if (g.pcap == NULL)
			die("pcap_open_dead failed");
		g.dump = pcap_dump_open(g.pcap, argv[i + 1]);
		if (g.dump == NULL)
			die("%s: %s", argv[i + 1], pcap_geterr(g.pcap));
		emit_header(argv[i], dst_mac, scenarios[s].vlan, scenarios[s].resolve);
		g.tci = scenarios[s].vlan;
		scenarios[s].run(&g);
		emit_counters(&g);
		if (pcap_dump_flush(g.dump) != 0 || fflush(stdout) != 0)
			die("write failed: %s", strerror(errno));
		pcap_dump_close(g.dump);
		pcap_close(g.pcap);
		for (unsigned k = 0; k < g.n_keys; k++)
			free(g.keys[k]);
		return 0;
	}
	return usage();
}
