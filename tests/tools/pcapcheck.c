/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcapcheck: checks what the dataplane wrote to its tx pcap against what
 * pcapgen fed it and expects (tests/e2e/check_pcap.sh).
 *
 *   pcapcheck EXPECT IN.pcap OUT.pcap
 *
 * EXPECT is pcapgen's (its header comment has the format). Every output
 * frame must be one of:
 *   - a GRE packet (outer IPv4 or IPv6) from the node to a backend of the
 *     VIP of the input packet it carries, byte for byte, through the
 *     gateway MAC: outer checksum, lengths, TTL 64, DF and TOS / traffic
 *     class copied, ID 0 with DF and an ID no other output without DF has
 *     (RFC 6864) without, a flow label, GRE without flags;
 *   - a GRE packet as above carrying one fragment of an input packet whose
 *     fate is "frag K" (IPv4 without DF, over the MTU once in its tunnel),
 *     matched to it by source, destination, protocol and ID (and, among
 *     pieces of one datagram, by offset);
 *   - an input frame with only its MACs rewritten to a backend of its
 *     (l2) VIP;
 *   - an ICMPv4 fragmentation-needed / ICMPv6 packet-too-big reply from
 *     the VIP to the client about an input packet whose fate is "reply",
 *     with the expected MTU, valid checksums, back to the router's MAC,
 *     quoting the packet's start (up to 576 / 1280 bytes of reply);
 *   - an ARP reply (RFC 826) or a neighbour advertisement (RFC 4861) from
 *     the port's MAC answering an ARP request or solicitation whose fate
 *     is "slow SLOW_ANSWERED": the requested address at the port's MAC, to
 *     the requester (a solicitation from :: to all-nodes, solicited flag
 *     clear), hop limit 255, override set, checksum right;
 *   - an ARP request or a solicitation from the port's MAC and the node's
 *     address for a gateway of a "neigh" line or a peer of a "bfd peer"
 *     line (broadcast; solicited-node multicast with a source link-layer
 *     option);
 *   - a BFD control packet (RFC 5880, 5881) to a peer of a "bfd peer"
 *     line, at its MAC, from the port's MAC and the node's address: TTL /
 *     hop limit 255, IPv4 header and UDP checksums right, one source port
 *     of 49152..65535 per session, to port 3784; version 1, 24 bytes, no
 *     flags, Down with diag 6 (Concatenated Path Down: the node is not
 *     serving), the config's multiplier, my discriminator the session's
 *     ("bfd local", from maglbctl bfd), your discriminator 0 or the one
 *     the peer sent ("bfd session"), desired min TX 1 s (RFC 5880 6.8.3:
 *     not Up), required min RX the config's interval, echo 0; with a "bfd
 *     auth" line 52 bytes, the A flag only, a Meticulous Keyed SHA-1
 *     section under the config's key id whose sequence numbers go up by
 *     one (its digest unchecked); every peer gets one at least.
 * With a "vlan VID" line every output frame carries exactly one 802.1Q tag,
 * VID and priority 0 (checked, then set aside with the inputs' tags).
 * Every "fwd" input comes out exactly once, every "reply" input is answered
 * exactly once and not forwarded, every "slow SLOW_ANSWERED" input is
 * answered exactly once and no other input is, every "frag K" input comes
 * out as exactly K fragments (RFC 791) in consecutive output frames, first
 * piece first, all to one backend, each in a tunnel packet within the port
 * MTU ("mtu" line) and, as an inner packet:
 *   - version, TOS, ID, TTL, protocol, addresses of the original; DF and
 *     the reserved flag clear; total length and header checksum right;
 *   - offset the original's plus the payload before it / 8; MF on all but
 *     the last, which keeps the original's;
 *   - the first keeps every option of the original, byte for byte; the
 *     later ones the copied options (type bit 0x80) only, zero-padded to
 *     4 bytes;
 *   - all but the last carry a multiple of 8 payload bytes, as many as fit
 *     (MTU - tunnel overhead - header), and the payloads in order are the
 *     original's payload exactly (the L4 header and checksum untouched).
 * Nothing else comes out. Packets of one
 * flow key (the dataplane's: the 5-tuple, the 3-tuple for fragments, the
 * quoted flow for an ICMP error) come out in their input order and go to
 * one backend, and so do all packets of one client to a VIP that hashes
 * the client only. So:
 *   frags*   all fragments of a datagram, and of its 3-tuple, share one
 *            backend; on "client" VIPs the unfragmented datagrams too;
 *   icmp     each error went where its flow's packets went (for the error
 *            about an unseen flow: where that flow's later SYN, a Maglev
 *            pick, went), and every forwarded error has such packets;
 *   toobig   replies as above; the small and exactly-fitting packets
 *            forwarded; IPv4 without DF over the MTU fragmented;
 *   malformed  only the good packet came out;
 *   neigh*   only the answers to the frames for the node's addresses, and
 *            solicitations for the gateways, came out;
 *   bfd*     only the dataplane's own BFD packets and solicitations for
 *            the peers came out (bfd_off: nothing);
 *   martian  only the good packets came out;
 *   vlan     the tagged packets as above, each tagged;
 *   jumbo    replies quoting the jumbo frames' start, l2 frames whole.
 * Each VIP with 4 groups or more must use 2 backends or more (the flow
 * keys really vary).
 *
 * Exits 0 when all holds, 1 with a message per mismatch, 2 on bad usage
 * or unreadable input.
 */
#include <arpa/inet.h>
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
	IP4_LEN = 20,
	IP6_LEN = 40,
	GRE_LEN = 4,
	ICMP_LEN = 8,
	PROTO_ICMP = 1,
	PROTO_TCP = 6,
	PROTO_UDP = 17,
	PROTO_GRE = 47,
	PROTO_ICMP6 = 58,
	VLAN_LEN = 4,
	ARP_LEN = 28,
	ND_NS = 135,
	ND_NA = 136,
	ND_MSG_LEN = 32,            /* NS / NA with one link-layer option */
	ND_HOP_LIMIT = 255,
	NEIGH_MAX = 8,
	REPLY4_MAX = 576,           /* RFC 1812: an ICMPv4 error's IP length */
	REPLY6_MAX = 1280,          /* RFC 4443 */
	FRAMES_MAX = 4096,
	PIECES_MAX = 16,            /* fragments of one "frag" input */
	IP4_OPT_MAX = 40,
	VIPS_MAX = 64,
	BACKENDS_MAX = 16,
	NAME_MAX_LEN = 32,
	TEXT_MAX = 192,
	KEY_MAX = 128,
	ERRORS_SHOWN = 40,
};

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_IPV6 0x86dd

struct addr {
	int family;                 /* AF_INET, AF_INET6; 0: none */
	uint8_t b[16];
};

struct backend {
	struct addr addr;
	uint8_t mac[6];
};

struct vip {
	char name[NAME_MAX_LEN];
	struct addr addr;
	uint8_t proto;
	uint16_t port;
	bool l2;
	bool client_hash;
	struct backend backends[BACKENDS_MAX];
	unsigned n_backends;
};

enum fate {
	FATE_NONE = 0,
	FATE_FWD,
	FATE_REPLY,
	FATE_DROP,
	FATE_FRAG,
	FATE_SLOW,
};

struct frame {
	uint8_t *b;
	uint32_t len;
};

/* What pcapcheck understands of a well-formed input packet. */
struct pkt {
	bool ok;
	int family;
	const uint8_t *ip;
	uint32_t ip_len;
	struct addr src, dst;
	uint8_t proto;              /* after the IPv6 extension headers */
	bool frag;
	bool icmp_error;
	uint8_t df, tos;
	char key[KEY_MAX];          /* the dataplane's flow key */
	const struct vip *vip;
};

struct input {
	struct frame f;
	enum fate fate;
	char reason[NAME_MAX_LEN];  /* drop counter; slow: control counter */
	unsigned mtu;               /* reply */
	unsigned n_frags;           /* frag: the fragments expected */
	char desc[TEXT_MAX];
	struct pkt p;
	int out;                    /* output frame that carries it, -1 */
	int reply;                  /* output frame that answers it, -1 */
	int answer;                 /* slow: the ARP reply or NA to it, -1 */
	char backend[KEY_MAX];      /* "gre ADDR" / "l2 MAC" */
	int pieces[PIECES_MAX];     /* frag: output frames of its fragments */
	unsigned n_pieces;          /* frag: fragments seen (may pass PIECES_MAX) */
};

/* A BFD peer of the config ("bfd peer" lines) and its packets out. */
struct bfd_peer {
	struct addr addr;
	uint8_t mac[6];
	uint32_t remote;            /* "bfd session": the discriminator it sent */
	uint32_t local;             /* "bfd local": the session's own */
	bool has_local;
	unsigned seen;              /* packets out to it */
	uint16_t sport;             /* their source port */
	uint32_t seq;               /* with auth: the last one's sequence number */
};

struct check {
	char scenario[NAME_MAX_LEN];
	uint8_t port_mac[6], router_mac[6], gateway_mac[6];
	struct addr node4, node6;
	unsigned mtu;               /* the port's; 0: no "mtu" line */
	unsigned vlan;              /* the port's VLAN; 0: untagged */
	struct addr neigh[NEIGH_MAX];   /* gateways the dataplane resolves */
	unsigned n_neigh;
	struct bfd_peer bfd[NEIGH_MAX];
	unsigned n_bfd;
	unsigned bfd_interval_ms, bfd_mult;
	bool bfd_auth;              /* "bfd auth": Meticulous Keyed SHA-1 */
	unsigned bfd_key_id;
	uint8_t ids[65536 / 8];     /* outer IPv4 IDs seen without DF */
	struct vip vips[VIPS_MAX];
	unsigned n_vips;
	struct input in[FRAMES_MAX];
	unsigned n_in;
	struct frame out[FRAMES_MAX];
	unsigned n_out;
	unsigned errors;
	unsigned gre, l2, replies, pieces;
	unsigned arp_replies, nd_adverts, solicits, bfd_out;
};

static void
fail(struct check *c, const char *fmt, ...)
{
	va_list ap;

	if (++c->errors > ERRORS_SHOWN)
		return;
	fprintf(stderr, "pcapcheck: %s: ", c->scenario);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

_Noreturn static void
die(const char *fmt, ...)
{
	va_list ap;

	fputs("pcapcheck: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static bool
icmp6_csum_ok(const uint8_t *src, const uint8_t *dst, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = sum16(sum16(0, src, 16), dst, 16);

	return csum_ok(sum16(sum + PROTO_ICMP6 + (len >> 16) + (len & 0xffff), icmp, len));
}

static const char *
addr_str(const struct addr *a, char *buf, size_t len)
{
	if (a->family == 0 || inet_ntop(a->family, a->b, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

static const char *
mac_str(const uint8_t *m, char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return buf;
}

static bool
addr_parse(const char *s, struct addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->b) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, s, a->b) == 1)
		a->family = AF_INET6;
	return a->family != 0;
}

static bool
addr_eq(const struct addr *a, const struct addr *b)
{
	return a->family == b->family &&
	       memcmp(a->b, b->b, a->family == AF_INET ? 4 : 16) == 0;
}

static struct addr
addr_at(int family, const uint8_t *p)
{
	struct addr a = { .family = family };

	memcpy(a.b, p, family == AF_INET ? 4 : 16);
	return a;
}

/* ------------------------------------------------------------ expect */

/* "vip NAME ADDR PROTO PORT ENCAP HASH BACKEND..." after "vip ". */
static void
parse_vip(struct check *c, char *line, unsigned lineno)
{
	struct vip *v = &c->vips[c->n_vips];
	char *save = NULL, *tok[6];
	unsigned port = 0;

	if (c->n_vips == VIPS_MAX)
		die("expect:%u: too many vips", lineno);
	for (int i = 0; i < 6; i++)
		if ((tok[i] = strtok_r(i == 0 ? line : NULL, " \t", &save)) == NULL)
			die("expect:%u: short vip line", lineno);
	snprintf(v->name, sizeof(v->name), "%s", tok[0]);
	if (!addr_parse(tok[1], &v->addr) || sscanf(tok[3], "%u", &port) != 1 || port > 65535)
		die("expect:%u: bad vip", lineno);
	v->proto = strcmp(tok[2], "tcp") == 0 ? PROTO_TCP : PROTO_UDP;
	v->port = (uint16_t)port;
	v->l2 = strcmp(tok[4], "l2") == 0;
	v->client_hash = strcmp(tok[5], "client") == 0;
	for (char *b; (b = strtok_r(NULL, " \t", &save)) != NULL;) {
		struct backend *be = &v->backends[v->n_backends];
		char *eq = strchr(b, '=');

		if (v->n_backends == BACKENDS_MAX)
			die("expect:%u: too many backends", lineno);
		if (eq != NULL)
			*eq = '\0';
		if (!addr_parse(b, &be->addr) || (eq != NULL && !mac_parse(eq + 1, be->mac)))
			die("expect:%u: bad backend '%s'", lineno, b);
		v->n_backends++;
	}
	c->n_vips++;
}

/* --------------------------------------------------------------- BFD */

/* "bfd peer|interval|multiplier|session|local ..." after "bfd ". */
static void
parse_bfd(struct check *c, const char *line, unsigned lineno)
{
	char what[16] = "", a[64] = "", b[64] = "", state[16] = "";
	unsigned n = 0, pin = 0, remote = 0, rmult = 0;
	struct addr addr;
	struct bfd_peer *peer = NULL;

	if (sscanf(line, "%15s %63s %63s", what, a, b) < 2)
		die("expect:%u: bad bfd line", lineno);
	if (strcmp(what, "auth") == 0) {
		if (sscanf(a, "%u", &c->bfd_key_id) != 1 || c->bfd_key_id > 255)
			die("expect:%u: bad bfd auth line", lineno);
		c->bfd_auth = true;
		return;
	}
	if (strcmp(what, "interval") == 0 || strcmp(what, "multiplier") == 0) {
		if (sscanf(a, "%u", &n) != 1 || n == 0)
			die("expect:%u: bad bfd %s", lineno, what);
		*(what[0] == 'i' ? &c->bfd_interval_ms : &c->bfd_mult) = n;
		return;
	}
	if (!addr_parse(a, &addr))
		die("expect:%u: bad bfd peer address", lineno);
	for (unsigned i = 0; i < c->n_bfd; i++)
		if (addr_eq(&c->bfd[i].addr, &addr))
			peer = &c->bfd[i];
	if (strcmp(what, "peer") == 0) {
		if (peer != NULL || c->n_bfd == NEIGH_MAX || c->n_neigh == NEIGH_MAX ||
		    !mac_parse(b, c->bfd[c->n_bfd].mac))
			die("expect:%u: bad bfd peer line", lineno);
		c->bfd[c->n_bfd++].addr = addr;
		c->neigh[c->n_neigh++] = addr;      /* a wanted neighbour: solicited */
	} else if (peer == NULL) {
		die("expect:%u: bfd %s of no peer", lineno, what);
	} else if (strcmp(what, "session") == 0) {
		if (sscanf(line, "%*s %*s %15s %u %u %u", state, &pin, &remote, &rmult) != 4)
			die("expect:%u: bad bfd session line", lineno);
		peer->remote = remote;
	} else if (strcmp(what, "local") == 0) {
		if (sscanf(b, "%u", &peer->local) != 1 || peer->local == 0)
			die("expect:%u: bad bfd local line", lineno);
		peer->has_local = true;
	} else {
		die("expect:%u: bad bfd line '%s'", lineno, what);
	}
}

/* "pkt N FATE [ARG] # desc" after "pkt ". */
static void
parse_pkt(struct check *c, char *line, const char *desc, unsigned lineno)
{
	char fate[16] = "", arg[NAME_MAX_LEN] = "";
	unsigned n;
	struct input *in;

	if (sscanf(line, "%u %15s %31s", &n, fate, arg) < 2 || n == 0 || n > FRAMES_MAX)
		die("expect:%u: bad pkt line", lineno);
	in = &c->in[n - 1];
	if (in->fate != FATE_NONE)
		die("expect:%u: packet %u twice", lineno, n);
	snprintf(in->desc, sizeof(in->desc), "%s", desc);
	if (strcmp(fate, "fwd") == 0) {
		in->fate = FATE_FWD;
	} else if (strcmp(fate, "reply") == 0 && sscanf(arg, "%u", &in->mtu) == 1) {
		in->fate = FATE_REPLY;
	} else if (strcmp(fate, "drop") == 0 && arg[0] != '\0') {
		in->fate = FATE_DROP;
		snprintf(in->reason, sizeof(in->reason), "%s", arg);
	} else if (strcmp(fate, "frag") == 0 && sscanf(arg, "%u", &in->n_frags) == 1 &&
		   in->n_frags >= 2 && in->n_frags <= PIECES_MAX) {
		in->fate = FATE_FRAG;
	} else if (strcmp(fate, "slow") == 0 && arg[0] != '\0') {
		in->fate = FATE_SLOW;
		snprintf(in->reason, sizeof(in->reason), "%s", arg);
	} else {
		die("expect:%u: bad fate '%s'", lineno, fate);
	}
}

static void
parse_line(struct check *c, char *line, unsigned lineno)
{
	char *hash = strchr(line, '#'), desc[TEXT_MAX] = "", a[64], b[64];

	if (hash != NULL) {
		snprintf(desc, sizeof(desc), "%s", hash + 1 + (hash[1] == ' '));
		*hash = '\0';
	}
	line[strcspn(line, "\n")] = '\0';
	desc[strcspn(desc, "\n")] = '\0';
	if (strncmp(line, "scenario ", 9) == 0) {
		sscanf(line + 9, "%31s", c->scenario);
	} else if (strncmp(line, "mac ", 4) == 0) {
		if (sscanf(line + 4, "%63s %63s", a, b) != 2)
			die("expect:%u: bad mac line", lineno);
		if (!mac_parse(b, strcmp(a, "port") == 0 ? c->port_mac :
				  strcmp(a, "router") == 0 ? c->router_mac : c->gateway_mac))
			die("expect:%u: bad mac", lineno);
	} else if (strncmp(line, "node ", 5) == 0) {
		if (sscanf(line + 5, "%63s %63s", a, b) != 2 || !addr_parse(a, &c->node4) ||
		    !addr_parse(b, &c->node6))
			die("expect:%u: bad node line", lineno);
	} else if (strncmp(line, "mtu ", 4) == 0) {
		if (sscanf(line + 4, "%u", &c->mtu) != 1 || c->mtu < 68 || c->mtu > 65535)
			die("expect:%u: bad mtu line", lineno);
	} else if (strncmp(line, "vlan ", 5) == 0) {
		if (sscanf(line + 5, "%u", &c->vlan) != 1 || c->vlan == 0 || c->vlan > 4094)
			die("expect:%u: bad vlan line", lineno);
	} else if (strncmp(line, "neigh ", 6) == 0) {
		if (c->n_neigh == NEIGH_MAX || sscanf(line + 6, "%63s", a) != 1 ||
		    !addr_parse(a, &c->neigh[c->n_neigh++]))
			die("expect:%u: bad neigh line", lineno);
	} else if (strncmp(line, "vip ", 4) == 0) {
		parse_vip(c, line + 4, lineno);
	} else if (strncmp(line, "pkt ", 4) == 0) {
		parse_pkt(c, line + 4, desc, lineno);
	} else if (strncmp(line, "bfd ", 4) == 0) {
		parse_bfd(c, line + 4, lineno);
	}
	/* counter and control lines are check_pcap.sh's */
}

static void
read_expect(struct check *c, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned lineno = 0;

	if (f == NULL)
		die("%s: cannot open", path);
	while (fgets(line, sizeof(line), f) != NULL)
		parse_line(c, line, ++lineno);
	fclose(f);
	if (c->scenario[0] == '\0')
		die("%s: no scenario line", path);
}

/* ------------------------------------------------------------- pcaps */

static unsigned
read_pcap(const char *path, struct frame *frames, unsigned max)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned n = 0;
	int rc;

	if (p == NULL)
		die("%s: %s", path, err);
	while ((rc = pcap_next_ex(p, &h, &data)) == 1) {
		if (n == max)
			die("%s: more than %u frames", path, max);
		if (h->caplen != h->len)
			die("%s: frame %u captured short (%u of %u bytes)", path, n + 1,
			    h->caplen, h->len);
		frames[n].b = malloc(h->caplen + 1);
		if (frames[n].b == NULL)
			die("out of memory");
		memcpy(frames[n].b, data, h->caplen);
		frames[n].len = h->caplen;
		n++;
	}
	if (rc != PCAP_ERROR_BREAK)
		die("%s: %s", path, pcap_geterr(p));
	pcap_close(p);
	return n;
}

/* ----------------------------------------------------- input packets */

static void
key_make(struct pkt *p, const struct addr *client, uint16_t cport,
	 const struct addr *vip, uint16_t vport, uint8_t proto)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	snprintf(p->key, sizeof(p->key), "%u %s %u %s %u", proto,
		 addr_str(client, a, sizeof(a)), cport, addr_str(vip, b, sizeof(b)), vport);
}

/* IPv6 extension headers from *off: the final protocol, a fragment's facts. */
static bool
walk6(const uint8_t *ip, uint32_t len, uint32_t *off, uint8_t *proto, bool *frag)
{
	uint8_t next = ip[6];

	*off = IP6_LEN;
	*frag = false;
	while (!*frag && (next == 0 || next == 43 || next == 60 || next == 44)) {
		uint32_t hlen = next == 44 ? 8 : (ip[*off + 1] + 1u) * 8;

		if (*off + 8 > len)
			return false;
		/* a fragment header with offset or M set: a real fragment */
		*frag = next == 44 && (get16(ip + *off + 2) & 0xfff9) != 0;
		next = ip[*off];
		*off += hlen;
	}
	*proto = next;
	return *off <= len;
}

/* The key of an ICMP error: its quoted packet (VIP -> client), reversed. */
static bool
parse_icmp_error(struct pkt *p, const uint8_t *icmp, uint32_t len)
{
	const uint8_t *inner = icmp + ICMP_LEN;
	uint32_t ilen = len - ICMP_LEN, off;
	struct addr isrc, idst;
	uint8_t proto;
	bool frag;

	if (len < ICMP_LEN)
		return false;
	if (p->family == AF_INET) {
		if (icmp[0] != 3 && icmp[0] != 11 && icmp[0] != 12)
			return false;
		if (ilen < IP4_LEN + 8)
			return false;
		off = (inner[0] & 0xfu) * 4u;
		proto = inner[9];
		isrc = addr_at(AF_INET, inner + 12);
		idst = addr_at(AF_INET, inner + 16);
	} else {
		if (icmp[0] < 1 || icmp[0] > 4 || ilen < IP6_LEN + 8 ||
		    !walk6(inner, ilen, &off, &proto, &frag))
			return false;
		isrc = addr_at(AF_INET6, inner + 8);
		idst = addr_at(AF_INET6, inner + 24);
	}
	if (off + 4 > ilen)
		return false;
	p->icmp_error = true;
	p->proto = proto;
	key_make(p, &idst, get16(inner + off + 2), &isrc, get16(inner + off), proto);
	return true;
}

/* Facts of the well-formed IP packet in frame f (untagged Ethernet). */
static struct pkt
parse_packet(const struct frame *f)
{
	struct pkt p = { 0 };
	const uint8_t *ip = f->b + ETH_LEN;
	uint32_t off, avail = f->len > ETH_LEN ? f->len - ETH_LEN : 0;
	uint16_t type = f->len >= ETH_LEN ? get16(f->b + 12) : 0;

	if (type == ETHERTYPE_IPV4 && avail >= IP4_LEN && ip[0] >> 4 == 4) {
		p.family = AF_INET;
		p.ip_len = get16(ip + 2);
		off = (ip[0] & 0xfu) * 4u;
		p.proto = ip[9];
		p.frag = (get16(ip + 6) & 0x3fff) != 0;
		p.df = (ip[6] & 0x40) != 0;
		p.tos = ip[1];
		p.src = addr_at(AF_INET, ip + 12);
		p.dst = addr_at(AF_INET, ip + 16);
	} else if (type == ETHERTYPE_IPV6 && avail >= IP6_LEN && ip[0] >> 4 == 6) {
		p.family = AF_INET6;
		p.ip_len = IP6_LEN + get16(ip + 4);
		if (p.ip_len > avail || !walk6(ip, p.ip_len, &off, &p.proto, &p.frag))
			return p;
		p.df = 1;
		p.tos = (uint8_t)((ip[0] & 0xfu) << 4 | ip[1] >> 4);
		p.src = addr_at(AF_INET6, ip + 8);
		p.dst = addr_at(AF_INET6, ip + 24);
	} else {
		return p;
	}
	if (p.ip_len > avail || off > p.ip_len)
		return p;
	p.ip = ip;
	if (p.frag) {
		key_make(&p, &p.src, 0, &p.dst, 0, p.proto);
		p.ok = true;
	} else if ((p.proto == PROTO_TCP || p.proto == PROTO_UDP) && off + 4 <= p.ip_len) {
		key_make(&p, &p.src, get16(ip + off), &p.dst, get16(ip + off + 2), p.proto);
		p.ok = true;
	} else if (p.proto == PROTO_ICMP || p.proto == PROTO_ICMP6) {
		p.ok = parse_icmp_error(&p, ip + off, p.ip_len - off);
	}
	return p;
}

/* The VIP of a packet, as the dataplane's VIP table finds it. */
static const struct vip *
vip_of(const struct check *c, const struct pkt *p)
{
	struct addr vip;
	unsigned proto, vport, cport;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	const struct vip *exact = NULL, *all = NULL;
	unsigned n_exact = 0;

	if (sscanf(p->key, "%u %45s %u %45s %u", &proto, a, &cport, b, &vport) != 5 ||
	    !addr_parse(b, &vip))
		return NULL;
	for (unsigned i = 0; i < c->n_vips; i++) {
		const struct vip *v = &c->vips[i];

		if (!addr_eq(&v->addr, &vip) || v->proto != proto)
			continue;
		if (v->port == 0)
			all = v;
		else if (p->frag)
			exact = v, n_exact++;
		else if (v->port == vport)
			exact = v, n_exact = 1;
	}
	if (p->frag)
		return all != NULL ? all : n_exact == 1 ? exact : NULL;
	return exact != NULL ? exact : all;
}

/*
 * Take the 802.1Q tag out of frame f if it has exactly one and its TCI
 * passes mask against want; false (f untouched) if not.
 */
static bool
untag(struct frame *f, uint16_t want, uint16_t mask)
{
	if (f->len < ETH_LEN + VLAN_LEN || get16(f->b + 12) != ETHERTYPE_VLAN ||
	    (get16(f->b + 14) & mask) != want || get16(f->b + 16) == ETHERTYPE_VLAN)
		return false;
	memmove(f->b + 12, f->b + 16, f->len - 16);
	f->len -= VLAN_LEN;
	return true;
}

static void
parse_inputs(struct check *c)
{
	for (unsigned i = 0; i < c->n_in; i++) {
		struct input *in = &c->in[i];

		in->out = in->reply = in->answer = -1;
		if (in->fate == FATE_NONE)
			die("no expectation for input frame %u", i + 1);
		if (in->fate == FATE_DROP)
			continue;
		/* the port's tag, any priority: set aside as the outputs' are */
		if (c->vlan != 0 && !untag(&in->f, (uint16_t)c->vlan, 0x0fff))
			die("input frame %u (%s): expected to pass, yet not tagged with the "
			    "port's VLAN %u", i + 1, in->desc, c->vlan);
		if (in->fate == FATE_SLOW)
			continue;
		in->p = parse_packet(&in->f);
		in->p.vip = in->p.ok ? vip_of(c, &in->p) : NULL;
		if (in->p.vip == NULL)
			die("input frame %u (%s): not a well-formed packet to a VIP, yet "
			    "expected to pass", i + 1, in->desc);
		if (in->fate == FATE_FRAG && (in->p.family != AF_INET || in->p.df || c->mtu == 0))
			die("input frame %u (%s): expected fragmented, yet not IPv4 without DF "
			    "or no mtu line", i + 1, in->desc);
		for (unsigned j = 0; j < i; j++)
			if (c->in[j].fate != FATE_DROP && c->in[j].f.len == in->f.len &&
			    memcmp(c->in[j].f.b, in->f.b, in->f.len) == 0)
				die("input frames %u and %u are identical", j + 1, i + 1);
	}
}

/* ------------------------------------------------------ output frames */

/* The input whose IP packet is ip[0..len) and whose fate is fwd, or -1. */
static int
find_forwarded(const struct check *c, const uint8_t *ip, uint32_t len)
{
	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *in = &c->in[i];

		if (in->fate == FATE_FWD && in->p.ip_len == len && memcmp(in->p.ip, ip, len) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * The "frag" input that the inner IPv4 packet ip[0..len) is a fragment of:
 * same source, destination, protocol and ID; among pieces of one datagram,
 * the input whose payload holds the fragment's offset. -1: none.
 */
static int
find_fragmented(const struct check *c, const uint8_t *ip, uint32_t len)
{
	uint32_t off;
	int first = -1;

	if (len < IP4_LEN || ip[0] >> 4 != 4)
		return -1;
	off = (get16(ip + 6) & 0x1fffu) * 8u;
	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *in = &c->in[i];
		const uint8_t *o = in->p.ip;
		uint32_t start;

		if (in->fate != FATE_FRAG || memcmp(o + 12, ip + 12, 8) != 0 || o[9] != ip[9] ||
		    get16(o + 4) != get16(ip + 4))
			continue;
		start = (get16(o + 6) & 0x1fffu) * 8u;
		if (off >= start && off < start + in->p.ip_len - (o[0] & 0xfu) * 4u)
			return (int)i;
		if (first < 0)
			first = (int)i;
	}
	return first;
}

/* Record that output frame k carries a fragment of input i to backend. */
static void
piece(struct check *c, unsigned k, int i, const char *backend)
{
	struct input *in = &c->in[i];

	c->pieces++;
	if (in->n_pieces < PIECES_MAX)
		in->pieces[in->n_pieces] = (int)k;
	in->n_pieces++;
	if (in->out < 0) {
		in->out = (int)k;
		snprintf(in->backend, sizeof(in->backend), "%s", backend);
	} else if (strcmp(in->backend, backend) != 0) {
		fail(c, "input %d (%s): the fragment in output frame %u went to %s, the one "
		     "in output frame %d to %s", i + 1, in->desc, k + 1, backend, in->out + 1,
		     in->backend);
	}
}

/* Record that output frame k carries input i to backend. */
static void
carried(struct check *c, unsigned k, int i, const char *backend)
{
	struct input *in = &c->in[i];

	if (in->out >= 0) {
		fail(c, "input %d (%s) came out twice: output frames %d and %u", i + 1,
		     in->desc, in->out + 1, k + 1);
		return;
	}
	in->out = (int)k;
	snprintf(in->backend, sizeof(in->backend), "%s", backend);
}

static bool
is_backend_addr(const struct vip *v, const struct addr *a)
{
	for (unsigned i = 0; i < v->n_backends; i++)
		if (addr_eq(&v->backends[i].addr, a))
			return true;
	return false;
}

/* The outer IPv4 header of GRE output k for inner packet in; false if wrong. */
static bool
check_outer4(struct check *c, unsigned k, const uint8_t *ip, uint32_t total,
	     const struct pkt *inner)
{
	struct addr src = addr_at(AF_INET, ip + 12);
	const char *why = NULL;

	if (ip[0] != 0x45)
		why = "outer IPv4 version/IHL not 0x45";
	else if (get16(ip + 2) != total)
		why = "outer IPv4 total length wrong";
	else if (!csum_ok(sum16(0, ip, IP4_LEN)))
		why = "outer IPv4 header checksum wrong";
	else if (ip[8] != 64)
		why = "outer TTL not 64";
	else if (!addr_eq(&src, &c->node4))
		why = "outer source is not the node's address";
	else if (((ip[6] & 0x40) != 0) != (inner->df != 0) || (get16(ip + 6) & 0xbfff) != 0)
		why = "outer DF not the inner packet's (or MF/offset set)";
	else if (inner->df && get16(ip + 4) != 0)
		why = "outer ID not 0 with DF";
	else if (!inner->df && (c->ids[get16(ip + 4) / 8] >> (get16(ip + 4) % 8) & 1))
		why = "outer ID without DF repeats an earlier output's";
	else if (ip[1] != inner->tos)
		why = "outer TOS not the inner packet's";
	if (!inner->df)
		c->ids[get16(ip + 4) / 8] |= (uint8_t)(1u << (get16(ip + 4) % 8));
	if (why != NULL)
		fail(c, "output frame %u: %s", k + 1, why);
	return why == NULL;
}

static bool
check_outer6(struct check *c, unsigned k, const uint8_t *ip, uint32_t total,
	     const struct pkt *inner)
{
	struct addr src = addr_at(AF_INET6, ip + 8);
	uint32_t first = get32(ip);
	const char *why = NULL;

	if (IP6_LEN + (uint32_t)get16(ip + 4) != total)
		why = "outer IPv6 payload length wrong";
	else if (ip[7] != 64)
		why = "outer hop limit not 64";
	else if (!addr_eq(&src, &c->node6))
		why = "outer source is not the node's address";
	else if ((first & 0xfffff) == 0)
		why = "outer flow label 0";
	else if ((uint8_t)(first >> 20) != inner->tos)
		why = "outer traffic class not the inner packet's";
	if (why != NULL)
		fail(c, "output frame %u: %s", k + 1, why);
	return why == NULL;
}

/* Output frame k is GRE (ip: its outer IP header, family fam): check, match. */
static void
output_gre(struct check *c, unsigned k, int fam, const uint8_t *ip, uint32_t avail)
{
	const struct frame *f = &c->out[k];
	uint32_t hlen = fam == AF_INET ? IP4_LEN : IP6_LEN;
	uint32_t total = fam == AF_INET ? get16(ip + 2) : IP6_LEN + (uint32_t)get16(ip + 4);
	const uint8_t *gre = ip + hlen, *inner = gre + GRE_LEN;
	struct addr dst = addr_at(fam, ip + (fam == AF_INET ? 16 : 24));
	char backend[KEY_MAX], a[INET6_ADDRSTRLEN];
	const struct input *in;
	bool outer_ok;
	int i;

	if (total != avail || total < hlen + GRE_LEN + IP4_LEN) {
		fail(c, "output frame %u: GRE packet of %u bytes in %u bytes after Ethernet "
		     "(the input's padding must go)", k + 1, total, avail);
		return;
	}
	i = find_forwarded(c, inner, total - hlen - GRE_LEN);
	if (i < 0)
		i = find_fragmented(c, inner, total - hlen - GRE_LEN);
	if (i < 0) {
		fail(c, "output frame %u: GRE to %s carries no input packet expected forwarded "
		     "or fragmented", k + 1, addr_str(&dst, a, sizeof(a)));
		return;
	}
	in = &c->in[i];
	c->gre++;
	if (memcmp(f->b, c->gateway_mac, 6) != 0 || memcmp(f->b + 6, c->port_mac, 6) != 0)
		fail(c, "output frame %u: GRE not from the port's MAC to the gateway's", k + 1);
	if (get16(gre) != 0 || get16(gre + 2) != (in->p.family == AF_INET ? 0x0800 : 0x86dd))
		fail(c, "output frame %u: GRE header %08x wrong", k + 1, get32(gre));
	if (c->mtu != 0 && total > c->mtu)
		fail(c, "output frame %u: %u bytes of IP over the port MTU %u", k + 1, total,
		     c->mtu);
	outer_ok = fam == AF_INET ? check_outer4(c, k, ip, total, &in->p)
				  : check_outer6(c, k, ip, total, &in->p);
	/* a fragment still counts: its number and bytes are checked apart */
	if (!outer_ok && in->fate != FATE_FRAG)
		return;
	if (in->p.vip->l2)
		fail(c, "input %d (%s) to l2 VIP %s came out in GRE", i + 1, in->desc,
		     in->p.vip->name);
	else if (!is_backend_addr(in->p.vip, &dst))
		fail(c, "input %d (%s) went to %s, no backend of VIP %s", i + 1, in->desc,
		     addr_str(&dst, a, sizeof(a)), in->p.vip->name);
	snprintf(backend, sizeof(backend), "gre %s", addr_str(&dst, a, sizeof(a)));
	if (in->fate == FATE_FRAG)
		piece(c, k, i, backend);
	else
		carried(c, k, i, backend);
}

/* Output frame k is the input frame i with new MACs (L2 direct routing)? */
static int
find_l2(const struct check *c, unsigned k)
{
	const struct frame *f = &c->out[k];

	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *in = &c->in[i];

		if (in->fate == FATE_FWD && in->f.len == f->len &&
		    memcmp(in->f.b + 12, f->b + 12, f->len - 12) == 0)
			return (int)i;
	}
	return -1;
}

static void
output_l2(struct check *c, unsigned k, int i)
{
	const struct frame *f = &c->out[k];
	const struct input *in = &c->in[i];
	const struct vip *v = in->p.vip;
	char backend[KEY_MAX], m[32];
	bool known = false;

	c->l2++;
	mac_str(f->b, m, sizeof(m));
	for (unsigned b = 0; b < v->n_backends; b++)
		known |= memcmp(v->backends[b].mac, f->b, 6) == 0;
	if (!v->l2)
		fail(c, "input %d (%s) to GRE VIP %s came out as an L2 rewrite", i + 1,
		     in->desc, v->name);
	else if (!known)
		fail(c, "input %d (%s) went to MAC %s, no backend of VIP %s", i + 1,
		     in->desc, m, v->name);
	if (memcmp(f->b + 6, c->port_mac, 6) != 0)
		fail(c, "output frame %u: L2 source MAC is not the port's", k + 1);
	snprintf(backend, sizeof(backend), "l2 %s", m);
	carried(c, k, i, backend);
}

/* ----------------------------------------------------------- replies */

/* The reply's header is right for input in? NULL, or what is wrong. */
static const char *
reply_wrong4(const uint8_t *ip, uint32_t total, const struct input *in, uint32_t body)
{
	const uint8_t *icmp = ip + IP4_LEN;

	if (ip[0] != 0x45 || total != IP4_LEN + ICMP_LEN + body)
		return "IPv4 header or length wrong";
	if (!csum_ok(sum16(0, ip, IP4_LEN)))
		return "IPv4 header checksum wrong";
	if ((ip[6] & 0x40) == 0 || ip[8] != 64 || ip[9] != PROTO_ICMP)
		return "not DF, TTL 64, ICMP";
	if (memcmp(ip + 12, in->p.ip + 16, 4) != 0 || memcmp(ip + 16, in->p.ip + 12, 4) != 0)
		return "not from the VIP to the client";
	if (icmp[0] != 3 || icmp[1] != 4 || get16(icmp + 4) != 0)
		return "not ICMP type 3 code 4";
	if (get16(icmp + 6) != in->mtu)
		return "next-hop MTU wrong";
	if (!csum_ok(sum16(0, icmp, ICMP_LEN + body)))
		return "ICMP checksum wrong";
	return NULL;
}

static const char *
reply_wrong6(const uint8_t *ip, uint32_t total, const struct input *in, uint32_t body)
{
	const uint8_t *icmp = ip + IP6_LEN;

	if (ip[0] >> 4 != 6 || total != IP6_LEN + ICMP_LEN + body)
		return "IPv6 header or length wrong";
	if (ip[6] != PROTO_ICMP6 || ip[7] != 64)
		return "not ICMPv6 with hop limit 64";
	if (memcmp(ip + 8, in->p.ip + 24, 16) != 0 || memcmp(ip + 24, in->p.ip + 8, 16) != 0)
		return "not from the VIP to the client";
	if (icmp[0] != 2 || icmp[1] != 0)
		return "not ICMPv6 type 2 code 0";
	if (get32(icmp + 4) != in->mtu)
		return "MTU wrong";
	if (!icmp6_csum_ok(ip + 8, ip + 24, icmp, ICMP_LEN + body))
		return "ICMPv6 checksum wrong";
	return NULL;
}

/* Output frame k answers a "reply" input? Checks it and returns true if so. */
static bool
output_reply(struct check *c, unsigned k, int fam, const uint8_t *ip, uint32_t avail)
{
	const struct frame *f = &c->out[k];
	uint32_t hdr = (fam == AF_INET ? IP4_LEN : IP6_LEN) + ICMP_LEN;
	uint32_t max = fam == AF_INET ? REPLY4_MAX : REPLY6_MAX;
	uint32_t total = fam == AF_INET ? get16(ip + 2) : IP6_LEN + (uint32_t)get16(ip + 4);
	const char *why;

	if (total > avail || total < hdr)
		return false;
	for (unsigned i = 0; i < c->n_in; i++) {
		struct input *in = &c->in[i];
		uint32_t body = in->p.ip_len < max - hdr ? in->p.ip_len : max - hdr;

		if (in->fate != FATE_REPLY || in->p.family != fam || total - hdr != body ||
		    memcmp(ip + hdr, in->p.ip, body) != 0)
			continue;
		c->replies++;
		why = fam == AF_INET ? reply_wrong4(ip, total, in, body)
				     : reply_wrong6(ip, total, in, body);
		if (why != NULL)
			fail(c, "output frame %u, the reply to input %u (%s): %s", k + 1, i + 1,
			     in->desc, why);
		if (memcmp(f->b, in->f.b + 6, 6) != 0 || memcmp(f->b + 6, c->port_mac, 6) != 0)
			fail(c, "output frame %u: the reply is not from the port's MAC to the "
			     "frame's source", k + 1);
		if (in->reply >= 0)
			fail(c, "input %u (%s) answered twice", i + 1, in->desc);
		in->reply = (int)k;
		return true;
	}
	return false;
}

/* An output frame nothing explains: say what it looks like. */
static void
output_unexpected(struct check *c, unsigned k)
{
	const struct frame *f = &c->out[k];
	char m[32];

	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *in = &c->in[i];

		if (in->f.len == f->len && f->len > 12 &&
		    memcmp(in->f.b + 12, f->b + 12, f->len - 12) == 0) {
			fail(c, "output frame %u is input %u (%s), whose fate is %s %s", k + 1,
			     i + 1, in->desc, in->fate == FATE_DROP ? "drop" :
			     in->fate == FATE_SLOW ? "slow" : "not fwd", in->reason);
			return;
		}
	}
	fail(c, "output frame %u (%u bytes, ethertype 0x%04x, to %s) is no expected "
	     "packet", k + 1, f->len, f->len >= ETH_LEN ? get16(f->b + 12) : 0,
	     f->len >= 6 ? mac_str(f->b, m, sizeof(m)) : "?");
}

/* ------------------------------------------------------ ARP and ND */

static bool
is_neigh(const struct check *c, int family, const uint8_t *addr)
{
	struct addr a = addr_at(family, addr);

	for (unsigned i = 0; i < c->n_neigh; i++)
		if (addr_eq(&c->neigh[i], &a))
			return true;
	return false;
}

/* The ARP header of input i if it is an ARP request, else NULL. */
static const uint8_t *
input_arp_request(const struct input *in)
{
	const uint8_t *a = in->f.b + ETH_LEN;

	if (in->fate != FATE_SLOW || in->f.len < ETH_LEN + ARP_LEN ||
	    get16(in->f.b + 12) != ETHERTYPE_ARP || get16(a + 6) != 1)
		return NULL;
	return a;
}

/* The IPv6 header of input i if it is a neighbour solicitation, else NULL. */
static const uint8_t *
input_ns(const struct input *in)
{
	const uint8_t *ip = in->f.b + ETH_LEN;

	if (in->fate != FATE_SLOW || in->f.len < ETH_LEN + IP6_LEN + 24 ||
	    get16(in->f.b + 12) != ETHERTYPE_IPV6 || ip[6] != PROTO_ICMP6 ||
	    ip[IP6_LEN] != ND_NS)
		return NULL;
	return ip;
}

/*
 * Output frame k answers an input: record it. best: the first matching
 * input to answer (SLOW_ANSWERED) not answered yet; any: the first matching
 * one not answered yet, else the first (a refused frame answered, or one
 * answered twice: a failure); -1: none.
 */
static void
answered(struct check *c, unsigned k, int best, int any, const char *what)
{
	struct input *in;

	if (best < 0 && any < 0) {
		fail(c, "output frame %u: %s answering no input frame", k + 1, what);
		return;
	}
	if (best < 0) {
		in = &c->in[any];
		if (in->answer >= 0)
			fail(c, "output frame %u: %s answering input %d (%s) again (first in "
			     "output frame %d)", k + 1, what, any + 1, in->desc, in->answer + 1);
		else
			fail(c, "output frame %u: %s answering input %d (%s), whose fate is "
			     "slow %s", k + 1, what, any + 1, in->desc, in->reason);
		return;
	}
	c->in[best].answer = (int)k;
}

/* Input i matches an answer: keep it in *best and *any as answered() wants. */
static void
answer_candidate(const struct check *c, unsigned i, int *best, int *any)
{
	const struct input *in = &c->in[i];

	if (*any < 0 || (c->in[*any].answer >= 0 && in->answer < 0))
		*any = (int)i;
	if (*best < 0 && in->answer < 0 && strcmp(in->reason, "SLOW_ANSWERED") == 0)
		*best = (int)i;
}

/* An ARP reply: for the requested address, from the port, to the requester. */
static void
output_arp_reply(struct check *c, unsigned k, const uint8_t *a)
{
	const struct frame *f = &c->out[k];
	int best = -1, any = -1;

	c->arp_replies++;
	for (unsigned i = 0; i < c->n_in; i++) {
		const uint8_t *q = input_arp_request(&c->in[i]);

		if (q != NULL && memcmp(q + 24, a + 14, 4) == 0 &&
		    memcmp(q + 14, a + 24, 4) == 0 && memcmp(q + 8, a + 18, 6) == 0)
			answer_candidate(c, i, &best, &any);
	}
	if (memcmp(f->b, a + 18, 6) != 0)
		fail(c, "output frame %u: ARP reply not to the requester's MAC", k + 1);
	answered(c, k, best, any, "an ARP reply");
}

/* Output frame k is ARP: a reply, or a request for a gateway. */
static void
output_arp(struct check *c, unsigned k)
{
	static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6] = { 0 };
	const struct frame *f = &c->out[k];
	const uint8_t *a = f->b + ETH_LEN;

	if (f->len < ETH_LEN + ARP_LEN || get16(a) != 1 || get16(a + 2) != ETHERTYPE_IPV4 ||
	    a[4] != 6 || a[5] != 4) {
		fail(c, "output frame %u: ARP, not for IPv4 over Ethernet", k + 1);
		return;
	}
	if (memcmp(f->b + 6, c->port_mac, 6) != 0 || memcmp(a + 8, c->port_mac, 6) != 0)
		fail(c, "output frame %u: ARP not from the port's MAC", k + 1);
	if (get16(a + 6) == 2) {
		output_arp_reply(c, k, a);
		return;
	}
	if (get16(a + 6) != 1 || !is_neigh(c, AF_INET, a + 24)) {
		fail(c, "output frame %u: ARP operation %u, not a reply nor a request for a "
		     "gateway the dataplane resolves", k + 1, get16(a + 6));
		return;
	}
	c->solicits++;
	if (memcmp(f->b, broadcast, 6) != 0 || memcmp(a + 14, c->node4.b, 4) != 0 ||
	    memcmp(a + 18, zero, 6) != 0)
		fail(c, "output frame %u: ARP request for a gateway not broadcast from the "
		     "node's address", k + 1);
}

/* What is wrong with the NS or NA at ip (IPv6, avail bytes); NULL if nothing. */
static const char *
nd_wrong(const struct check *c, const uint8_t *ip, uint32_t avail, uint8_t opt)
{
	const uint8_t *icmp = ip + IP6_LEN;

	if (avail < IP6_LEN + ND_MSG_LEN || get16(ip + 4) != ND_MSG_LEN)
		return "not 32 bytes of ICMPv6";
	if (ip[7] != ND_HOP_LIMIT || icmp[1] != 0)
		return "hop limit not 255 or code not 0";
	if (!icmp6_csum_ok(ip + 8, ip + 24, icmp, ND_MSG_LEN))
		return "ICMPv6 checksum wrong";
	if (icmp[24] != opt || icmp[25] != 1 || memcmp(icmp + 26, c->port_mac, 6) != 0)
		return "no link-layer address option giving the port's MAC";
	return NULL;
}

/* An NA: for the solicited address, from it, to the solicitation's source. */
static void
output_na(struct check *c, unsigned k, const uint8_t *ip)
{
	static const uint8_t all_nodes[16] = { 0xff, 2, [15] = 1 };
	static const uint8_t unspecified[16] = { 0 };
	static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	const struct frame *f = &c->out[k];
	const uint8_t *icmp = ip + IP6_LEN;
	int best = -1, any = -1;
	bool dad = memcmp(ip + 24, all_nodes, 16) == 0;

	c->nd_adverts++;
	for (unsigned i = 0; i < c->n_in; i++) {
		const uint8_t *q = input_ns(&c->in[i]);

		if (q != NULL && memcmp(q + IP6_LEN + 8, icmp + 8, 16) == 0 &&
		    memcmp(q + 8, dad ? unspecified : ip + 24, 16) == 0)
			answer_candidate(c, i, &best, &any);
	}
	if (memcmp(ip + 8, icmp + 8, 16) != 0)
		fail(c, "output frame %u: NA not from its target address", k + 1);
	if ((icmp[4] & 0xe0) != (dad ? 0x20 : 0x60))
		fail(c, "output frame %u: NA flags 0x%02x, expected %s", k + 1, icmp[4],
		     dad ? "override only (to all-nodes)" : "solicited and override");
	if (dad ? memcmp(f->b, all_nodes_mac, 6) != 0 :
	    any >= 0 && memcmp(f->b, c->in[any].f.b + 6, 6) != 0)
		fail(c, "output frame %u: NA not to the solicitation's MAC (all-nodes' for "
		     "one from ::)", k + 1);
	answered(c, k, best, any, "an NA");
}

/* Output frame k is an NS or NA (ICMPv6 after the fixed header). */
static void
output_nd(struct check *c, unsigned k, const uint8_t *ip, uint32_t avail)
{
	const struct frame *f = &c->out[k];
	const uint8_t *icmp = ip + IP6_LEN;
	const char *why = nd_wrong(c, ip, avail, icmp[0] == ND_NS ? 1 : 2);
	uint8_t snm[16] = { 0xff, 2, [11] = 1, [12] = 0xff };

	if (memcmp(f->b + 6, c->port_mac, 6) != 0)
		fail(c, "output frame %u: %s not from the port's MAC", k + 1,
		     icmp[0] == ND_NS ? "NS" : "NA");
	if (why != NULL) {
		fail(c, "output frame %u: %s: %s", k + 1, icmp[0] == ND_NS ? "NS" : "NA", why);
		return;
	}
	if (icmp[0] == ND_NA) {
		output_na(c, k, ip);
		return;
	}
	if (!is_neigh(c, AF_INET6, icmp + 8)) {
		fail(c, "output frame %u: NS for no gateway the dataplane resolves", k + 1);
		return;
	}
	c->solicits++;
	memcpy(snm + 13, icmp + 8 + 13, 3);
	if (memcmp(ip + 8, c->node6.b, 16) != 0 || memcmp(ip + 24, snm, 16) != 0 ||
	    f->b[0] != 0x33 || f->b[1] != 0x33 || memcmp(f->b + 2, snm + 12, 4) != 0)
		fail(c, "output frame %u: NS for a gateway not from the node's address to "
		     "the gateway's solicited-node address", k + 1);
}

/* The peer at address a, or NULL. */
static struct bfd_peer *
bfd_peer_of(struct check *c, const struct addr *a)
{
	for (unsigned i = 0; i < c->n_bfd; i++)
		if (addr_eq(&c->bfd[i].addr, a))
			return &c->bfd[i];
	return NULL;
}

/*
 * With auth, what is wrong with the auth section of p (52 bytes): Meticulous
 * Keyed SHA-1 under the config's key id, each packet's sequence number one
 * past the last's (RFC 5880 6.7.4; one more for each packet the dataplane
 * could not send). The digest is not checked here.
 */
static const char *
bfd_auth_wrong(const struct check *c, struct bfd_peer *peer, const uint8_t *p)
{
	uint32_t seq = get32(p + 28), last = peer->seq;

	peer->seq = seq;
	if (p[24] != 5 || p[25] != 28)
		return "auth section not Meticulous Keyed SHA-1 (type 5, 28 bytes)";
	if (p[26] != c->bfd_key_id || p[27] != 0)
		return "auth key id not the config's, or the reserved byte not 0";
	if (peer->seen > 1 && (seq - last - 1u) >= 16)
		return "sequence number not one past the last packet's";
	return NULL;
}

/* What is wrong with the control packet p[0..len) to peer; NULL if nothing.
 * Not serving, never Up: Down, diag 6, the slow TX (RFC 5880 6.8.3). */
static const char *
bfd_packet_wrong(const struct check *c, struct bfd_peer *peer, const uint8_t *p,
		 uint32_t len)
{
	uint32_t your = get32(p + 8), tx = c->bfd_interval_ms * 1000u;
	uint32_t want = c->bfd_auth ? 52 : 24;

	if (len != want || p[3] != want)
		return c->bfd_auth ? "not 52 bytes, or its length field not 52" :
				     "not 24 bytes, or its length field not 24";
	if (p[0] >> 5 != 1)
		return "version not 1";
	if ((p[0] & 0x1f) != 6)
		return "diag not 6 (Concatenated Path Down: the node is not serving)";
	if (p[1] >> 6 != 1)
		return "state not Down";
	if ((p[1] & 0x3f) != (c->bfd_auth ? 0x04 : 0))
		return c->bfd_auth ? "flags other than A set (P, F, C, D or M)" :
				     "flags set (P, F, C, A, D or M), none expected";
	if (p[2] != c->bfd_mult)
		return "detect multiplier not the config's";
	if (get32(p + 4) == 0 || (peer->has_local && get32(p + 4) != peer->local))
		return "my discriminator 0 or not the session's (maglbctl bfd)";
	if (your != 0 && your != peer->remote)
		return "your discriminator neither 0 nor the one the peer sent";
	if (get32(p + 12) != (tx > 1000000 ? tx : 1000000))
		return "desired min TX not 1 s (or the interval, if longer) while Down";
	if (get32(p + 16) != tx)
		return "required min RX not the config's interval";
	if (get32(p + 20) != 0)
		return "required min echo RX not 0";
	return c->bfd_auth ? bfd_auth_wrong(c, peer, p) : NULL;
}

/*
 * Output frame k is UDP to port 3784: one of the dataplane's BFD packets,
 * to a peer of the bfd lines at its MAC, from the port and the node's
 * address, TTL / hop limit 255 (RFC 5881 5), one source port of
 * 49152..65535 per session (RFC 5881 4), checksums right.
 */
static void
output_bfd(struct check *c, unsigned k, int fam, const uint8_t *ip, uint32_t avail)
{
	const struct frame *f = &c->out[k];
	bool v4 = fam == AF_INET;
	uint32_t hl = v4 ? (ip[0] & 0xfu) * 4u : IP6_LEN;
	uint32_t total = v4 ? get16(ip + 2) : IP6_LEN + (uint32_t)get16(ip + 4);
	struct addr src = addr_at(fam, ip + (v4 ? 12 : 8)), dst = addr_at(fam, ip + (v4 ? 16 : 24));
	const struct addr *node = v4 ? &c->node4 : &c->node6;
	struct bfd_peer *peer = bfd_peer_of(c, &dst);
	const uint8_t *udp = ip + hl;
	uint32_t sum, ulen;
	const char *why;
	char a[INET6_ADDRSTRLEN];

	if (peer == NULL) {
		fail(c, "output frame %u: BFD to %s, no peer", k + 1, addr_str(&dst, a, sizeof(a)));
		return;
	}
	c->bfd_out++;
	peer->seen++;
	if (total > avail || total < hl + 8 || (ulen = get16(udp + 4)) != total - hl ||
	    ulen < 8) {
		fail(c, "output frame %u: BFD to %s: IP or UDP length wrong", k + 1,
		     addr_str(&dst, a, sizeof(a)));
		return;
	}
	if (memcmp(f->b, peer->mac, 6) != 0 || memcmp(f->b + 6, c->port_mac, 6) != 0)
		fail(c, "output frame %u: BFD to %s not from the port's MAC to the peer's", k + 1,
		     addr_str(&dst, a, sizeof(a)));
	if (!addr_eq(&src, node))
		fail(c, "output frame %u: BFD not from the node's address", k + 1);
	if (v4 && (hl != IP4_LEN || !csum_ok(sum16(0, ip, hl))))
		fail(c, "output frame %u: BFD: IPv4 header length or checksum wrong", k + 1);
	if (ip[v4 ? 8 : 7] != 255)
		fail(c, "output frame %u: BFD with TTL / hop limit %u, not 255", k + 1,
		     ip[v4 ? 8 : 7]);
	sum = sum16(sum16(0, ip + (v4 ? 12 : 8), v4 ? 4 : 16), ip + (v4 ? 16 : 24), v4 ? 4 : 16);
	if (get16(udp + 6) == 0 || !csum_ok(sum16(sum + PROTO_UDP + ulen, udp, ulen)))
		fail(c, "output frame %u: BFD: UDP checksum wrong or none", k + 1);
	if (get16(udp) < 49152)
		fail(c, "output frame %u: BFD from source port %u, below 49152", k + 1,
		     get16(udp));
	if (peer->seen > 1 && get16(udp) != peer->sport)
		fail(c, "output frame %u: BFD to %s from source port %u, before %u", k + 1,
		     addr_str(&dst, a, sizeof(a)), get16(udp), peer->sport);
	for (unsigned i = 0; i < c->n_bfd; i++)
		if (&c->bfd[i] != peer && c->bfd[i].seen > 0 && c->bfd[i].sport == get16(udp))
			fail(c, "output frame %u: BFD source port %u shared by two sessions",
			     k + 1, get16(udp));
	peer->sport = get16(udp);
	why = bfd_packet_wrong(c, peer, udp + 8, ulen - 8);
	if (why != NULL)
		fail(c, "output frame %u: BFD to %s: %s", k + 1, addr_str(&dst, a, sizeof(a)), why);
}

/* Output frame k (IP of family fam at ip) is UDP to the BFD port. */
static bool
is_bfd_output(int fam, const uint8_t *ip, uint32_t avail)
{
	uint32_t hl = fam == AF_INET ? (ip[0] & 0xfu) * 4u : IP6_LEN;

	return fam != 0 && ip[fam == AF_INET ? 9 : 6] == PROTO_UDP && avail >= hl + 8 &&
	       get16(ip + hl + 2) == 3784;
}

/* Every peer got a packet at least: the checks above ran. */
static void
check_bfd_peers(struct check *c)
{
	char a[INET6_ADDRSTRLEN];

	for (unsigned i = 0; i < c->n_bfd; i++)
		if (c->bfd[i].seen == 0)
			fail(c, "no BFD packet to peer %s came out",
			     addr_str(&c->bfd[i].addr, a, sizeof(a)));
}

/* With a "vlan" line: output frame k carries the port's tag, set aside. */
static bool
output_untag(struct check *c, unsigned k)
{
	struct frame *f = &c->out[k];

	if (c->vlan == 0 || untag(f, (uint16_t)c->vlan, 0xffff))
		return true;
	fail(c, "output frame %u: not one 802.1Q tag VID %u priority 0 (ethertype 0x%04x, "
	     "TCI 0x%04x)", k + 1, c->vlan, f->len >= 14 ? get16(f->b + 12) : 0,
	     f->len >= 16 ? get16(f->b + 14) : 0);
	return false;
}

static void
classify_outputs(struct check *c)
{
	for (unsigned k = 0; k < c->n_out; k++) {
		const struct frame *f = &c->out[k];
		bool tagged = output_untag(c, k);
		uint16_t type = f->len >= ETH_LEN ? get16(f->b + 12) : 0;
		const uint8_t *ip = f->b + ETH_LEN;
		uint32_t avail = f->len >= ETH_LEN ? f->len - ETH_LEN : 0;
		int fam = type == ETHERTYPE_IPV4 && avail >= IP4_LEN ? AF_INET :
			  type == ETHERTYPE_IPV6 && avail >= IP6_LEN ? AF_INET6 : 0;
		int i;

		if (!tagged)
			continue;
		if (type == ETHERTYPE_ARP)
			output_arp(c, k);
		else if (fam == AF_INET6 && ip[6] == PROTO_ICMP6 && avail > IP6_LEN &&
			 (ip[IP6_LEN] == ND_NS || ip[IP6_LEN] == ND_NA))
			output_nd(c, k, ip, avail);
		else if (is_bfd_output(fam, ip, avail))
			output_bfd(c, k, fam, ip, avail);
		else if (fam == AF_INET && ip[9] == PROTO_GRE)
			output_gre(c, k, fam, ip, avail);
		else if (fam == AF_INET6 && ip[6] == PROTO_GRE)
			output_gre(c, k, fam, ip, avail);
		else if (fam != 0 && (i = find_l2(c, k)) >= 0)
			output_l2(c, k, i);
		else if (fam == 0 || !output_reply(c, k, fam, ip, avail))
			output_unexpected(c, k);
	}
}

/* ------------------------------------------------------------ checks */

static void
check_fates(struct check *c)
{
	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *in = &c->in[i];

		if (in->fate == FATE_FWD && in->out < 0)
			fail(c, "input %u (%s) was not forwarded", i + 1, in->desc);
		if (in->fate == FATE_REPLY && in->reply < 0)
			fail(c, "input %u (%s) got no too-big reply (MTU %u)", i + 1, in->desc,
			     in->mtu);
		if (in->fate == FATE_SLOW && strcmp(in->reason, "SLOW_ANSWERED") == 0 &&
		    in->answer < 0)
			fail(c, "input %u (%s) was not answered", i + 1, in->desc);
	}
}

/* ---------------------------------------------------------- fragments */

/* The inner packet of GRE output frame k, its length and the tunnel's overhead. */
static const uint8_t *
gre_inner(const struct check *c, unsigned k, uint32_t *len, uint32_t *overhead)
{
	const uint8_t *ip = c->out[k].b + ETH_LEN;
	bool v4 = get16(c->out[k].b + 12) == ETHERTYPE_IPV4;
	uint32_t total = v4 ? get16(ip + 2) : IP6_LEN + (uint32_t)get16(ip + 4);

	*overhead = (v4 ? IP4_LEN : IP6_LEN) + GRE_LEN;
	*len = total - *overhead;
	return ip + *overhead;
}

/*
 * The options of a later fragment from the original's opt[0..len): the
 * copied ones (type bit 0x80; never NOP or EOL), zero-padded to 4 bytes.
 * Their length in out, or -1 if the original's are malformed.
 */
static int
options_copied(const uint8_t *opt, uint32_t len, uint8_t *out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < len && opt[i] != 0;) {
		if (opt[i] == 1) {
			i++;
			continue;
		}
		if (i + 1 >= len || opt[i + 1] < 2 || i + opt[i + 1] > len)
			return -1;
		if (opt[i] & 0x80) {
			memcpy(out + n, opt + i, opt[i + 1]);
			n += opt[i + 1];
		}
		i += opt[i + 1];
	}
	while (n % 4 != 0)
		out[n++] = 0;
	return (int)n;
}

/* Fragment j's options: all the original's on the first, else the copied. */
static void
check_piece_options(struct check *c, const char *at, const uint8_t *ip, uint32_t hl,
		    const uint8_t *o, unsigned j)
{
	uint32_t ohl = (o[0] & 0xfu) * 4u;
	uint8_t want[IP4_OPT_MAX];
	int n;

	if (j == 0) {
		n = (int)(ohl - IP4_LEN);
		memcpy(want, o + IP4_LEN, (size_t)n);
	} else if ((n = options_copied(o + IP4_LEN, ohl - IP4_LEN, want)) < 0) {
		fail(c, "%s: the original's options are malformed (pcapgen)", at);
		return;
	}
	if (hl - IP4_LEN != (uint32_t)n || memcmp(ip + IP4_LEN, want, (size_t)n) != 0)
		fail(c, "%s: %u bytes of options, expected %d: %s", at, hl - IP4_LEN, n,
		     j == 0 ? "all the original's" :
		     "its copied ones only, zero-padded to 4 bytes");
}

/*
 * Fragment j (of n seen) of "frag" input i, after *pos bytes of the
 * original's payload: RFC 791's rules, and its payload the original's.
 */
static void
check_piece(struct check *c, unsigned i, unsigned j, unsigned n, uint32_t *pos)
{
	static const struct {
		uint8_t at, len;
		const char *name;
	} same[] = {
		{ 1, 1, "TOS" }, { 4, 2, "ID" }, { 8, 1, "TTL" }, { 9, 1, "protocol" },
		{ 12, 4, "source" }, { 16, 4, "destination" },
	};
	const struct input *in = &c->in[i];
	unsigned k = (unsigned)in->pieces[j];
	const uint8_t *o = in->p.ip, *ip;
	uint32_t ohl = (o[0] & 0xfu) * 4u, oplen = in->p.ip_len - ohl;
	uint32_t want_off = (get16(o + 6) & 0x1fffu) + *pos / 8;
	bool last = j + 1 == n, want_mf = !last || (o[6] & 0x20) != 0;
	uint32_t len, overhead, hl, plen, fit;
	char at[96];

	ip = gre_inner(c, k, &len, &overhead);
	snprintf(at, sizeof(at), "input %u, fragment %u/%u (output frame %u)", i + 1, j + 1,
		 n, k + 1);
	hl = (ip[0] & 0xfu) * 4u;
	if (ip[0] >> 4 != 4 || hl < IP4_LEN || hl > len) {
		fail(c, "%s: not an IPv4 packet", at);
		return;
	}
	plen = len - hl;
	if (get16(ip + 2) != len)
		fail(c, "%s: total length %u, the tunnel carries %u bytes", at, get16(ip + 2), len);
	if (!csum_ok(sum16(0, ip, hl)))
		fail(c, "%s: header checksum wrong", at);
	for (size_t f = 0; f < sizeof(same) / sizeof(same[0]); f++)
		if (memcmp(ip + same[f].at, o + same[f].at, same[f].len) != 0)
			fail(c, "%s: %s not the original's", at, same[f].name);
	if ((ip[6] & 0xc0) != 0)
		fail(c, "%s: DF or the reserved flag set", at);
	if ((get16(ip + 6) & 0x1fffu) != want_off)
		fail(c, "%s: offset %u (x 8 bytes), expected %u", at, get16(ip + 6) & 0x1fffu,
		     want_off);
	if (((ip[6] & 0x20) != 0) != want_mf)
		fail(c, "%s: MF %s, expected %s", at, want_mf ? "clear" : "set",
		     want_mf ? "set" : "clear (the original's)");
	check_piece_options(c, at, ip, hl, o, j);
	/* as many as fit: all but the last are full */
	fit = c->mtu > overhead + hl ? (c->mtu - overhead - hl) / 8 * 8 : 0;
	if (!last && plen % 8 != 0)
		fail(c, "%s: %u payload bytes, not a multiple of 8", at, plen);
	else if (!last && plen != fit)
		fail(c, "%s: %u payload bytes, %u fit (MTU %u - %u of tunnel - %u of header, "
		     "a multiple of 8)", at, plen, fit, c->mtu, overhead, hl);
	if (*pos + plen > oplen)
		fail(c, "%s: payload bytes %u..%u past the original's %u", at, *pos,
		     *pos + plen, oplen);
	else if (memcmp(ip + hl, o + ohl + *pos, plen) != 0)
		fail(c, "%s: payload differs from the original's bytes %u..%u", at, *pos,
		     *pos + plen);
	*pos += plen;
}

/*
 * Every "frag" input: K fragments, consecutive in the output, each right,
 * their payloads the original's whole.
 */
static void
check_fragments(struct check *c)
{
	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *in = &c->in[i];
		unsigned n = in->n_pieces < PIECES_MAX ? in->n_pieces : PIECES_MAX;
		uint32_t pos = 0, oplen;

		if (in->fate != FATE_FRAG)
			continue;
		oplen = in->p.ip_len - (in->p.ip[0] & 0xfu) * 4u;
		if (in->n_pieces != in->n_frags)
			fail(c, "input %u (%s): %u fragment(s) came out, expected %u", i + 1,
			     in->desc, in->n_pieces, in->n_frags);
		for (unsigned j = 0; j < n; j++) {
			if (j > 0 && in->pieces[j] != in->pieces[j - 1] + 1)
				fail(c, "input %u (%s): fragment %u in output frame %d, not right "
				     "after fragment %u (output frame %d)", i + 1, in->desc, j + 1,
				     in->pieces[j] + 1, j, in->pieces[j - 1] + 1);
			check_piece(c, i, j, n, &pos);
		}
		if (n > 0 && pos != oplen)
			fail(c, "input %u (%s): its fragments carry %u payload bytes, the "
			     "original %u", i + 1, in->desc, pos, oplen);
	}
}

/* ------------------------------------------------------------ groups */

/* The group of an input whose members must share a backend. */
static void
group_of(const struct input *in, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], cl[INET6_ADDRSTRLEN];
	unsigned proto, cport, vport;

	if (!in->p.vip->client_hash) {
		snprintf(buf, len, "%s", in->p.key);
		return;
	}
	sscanf(in->p.key, "%u %45s %u %45s %u", &proto, cl, &cport, a, &vport);
	snprintf(buf, len, "client %s of VIP %s", cl, in->p.vip->name);
}

/*
 * One backend per group, input order kept per flow key, and per VIP with
 * 4 groups or more at least 2 backends.
 */
static void
check_groups(struct check *c)
{
	char gi[KEY_MAX], gj[KEY_MAX];

	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *a = &c->in[i];

		if (a->out < 0)
			continue;
		group_of(a, gi, sizeof(gi));
		for (unsigned j = i + 1; j < c->n_in; j++) {
			const struct input *b = &c->in[j];

			if (b->out < 0)
				continue;
			group_of(b, gj, sizeof(gj));
			if (strcmp(gi, gj) == 0 && strcmp(a->backend, b->backend) != 0)
				fail(c, "%s split: input %u (%s) went to %s, input %u (%s) to %s",
				     gi, i + 1, a->desc, a->backend, j + 1, b->desc, b->backend);
			if (strcmp(a->p.key, b->p.key) == 0 && b->out < a->out)
				fail(c, "flow %s reordered: input %u came out after input %u",
				     a->p.key, i + 1, j + 1);
		}
	}
}

static void
check_spread(struct check *c)
{
	static char groups[FRAMES_MAX][KEY_MAX], backends[FRAMES_MAX][KEY_MAX];
	char g[KEY_MAX];

	for (unsigned v = 0; v < c->n_vips; v++) {
		unsigned n_groups = 0, n_backends = 0;

		for (unsigned i = 0; i < c->n_in; i++) {
			const struct input *in = &c->in[i];
			unsigned x;

			if (in->out < 0 || in->p.vip != &c->vips[v])
				continue;
			group_of(in, g, sizeof(g));
			for (x = 0; x < n_groups && strcmp(groups[x], g) != 0; x++)
				;
			if (x == n_groups)
				snprintf(groups[n_groups++], KEY_MAX, "%s", g);
			for (x = 0; x < n_backends && strcmp(backends[x], in->backend) != 0; x++)
				;
			if (x == n_backends)
				snprintf(backends[n_backends++], KEY_MAX, "%s", in->backend);
		}
		if (n_groups >= 4 && n_backends < 2)
			fail(c, "VIP %s: %u groups all on one backend (%s): the flow keys do "
			     "not reach the hash", c->vips[v].name, n_groups, backends[0]);
		if (n_groups > 0)
			printf("  vip %-8s %3u group(s) on %u backend(s)\n", c->vips[v].name,
			       n_groups, n_backends);
	}
}

/* icmp: every forwarded error has packets of its flow to compare with. */
static void
check_icmp_flows(struct check *c)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->n_in; i++) {
		const struct input *e = &c->in[i];
		bool peer = false;

		if (e->out < 0 || !e->p.icmp_error)
			continue;
		n++;
		for (unsigned j = 0; j < c->n_in && !peer; j++)
			peer = c->in[j].out >= 0 && !c->in[j].p.icmp_error &&
			       strcmp(c->in[j].p.key, e->p.key) == 0;
		if (!peer)
			fail(c, "input %u (%s): no packet of flow %s came out to compare with",
			     i + 1, e->desc, e->p.key);
	}
	printf("  %u ICMP error(s) forwarded, each with its flow\n", n);
}

int
main(int argc, char **argv)
{
	static struct check c;
	static struct frame in[FRAMES_MAX];
	unsigned fwd = 0, reply = 0, drop = 0, frag = 0, slow = 0, answer = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: pcapcheck EXPECT IN.pcap OUT.pcap\n");
		return 2;
	}
	read_expect(&c, argv[1]);
	c.n_in = read_pcap(argv[2], in, FRAMES_MAX);
	for (unsigned i = 0; i < c.n_in; i++)
		c.in[i].f = in[i];
	c.n_out = read_pcap(argv[3], c.out, FRAMES_MAX);
	parse_inputs(&c);
	for (unsigned i = 0; i < c.n_in; i++) {
		fwd += c.in[i].fate == FATE_FWD;
		reply += c.in[i].fate == FATE_REPLY;
		drop += c.in[i].fate == FATE_DROP;
		frag += c.in[i].fate == FATE_FRAG;
		slow += c.in[i].fate == FATE_SLOW;
		answer += c.in[i].fate == FATE_SLOW &&
			  strcmp(c.in[i].reason, "SLOW_ANSWERED") == 0;
	}
	printf("pcapcheck: %s: %u input frame(s): %u to forward, %u to fragment, %u to answer, "
	       "%u to drop, %u to the control thread (%u to answer); %u output frame(s)\n",
	       c.scenario, c.n_in, fwd, frag, reply, drop, slow, answer, c.n_out);
	classify_outputs(&c);
	check_fates(&c);
	check_fragments(&c);
	check_groups(&c);
	check_spread(&c);
	check_bfd_peers(&c);
	if (strcmp(c.scenario, "icmp") == 0)
		check_icmp_flows(&c);
	printf("  output: %u GRE (%u fragments), %u L2, %u too-big replies, %u ARP replies, "
	       "%u NAs, %u solicitations, %u BFD\n", c.gre, c.pieces, c.l2, c.replies,
	       c.arp_replies, c.nd_adverts, c.solicits, c.bfd_out);
	if (c.arp_replies + c.nd_adverts != answer)
		fail(&c, "%u ARP replies and NAs, %u frames to answer", c.arp_replies + c.nd_adverts,
		     answer);
	if (c.errors > ERRORS_SHOWN)
		fprintf(stderr, "pcapcheck: %s: ... %u more\n", c.scenario,
			c.errors - ERRORS_SHOWN);
	printf("pcapcheck: %s: %s (%u error(s))\n", c.scenario, c.errors ? "FAIL" : "ok",
	       c.errors);
	return c.errors ? 1 : 0;
}
