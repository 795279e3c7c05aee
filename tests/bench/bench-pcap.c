/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-pcap: write the capture that tests/bench/dataplane-vs-testpmd replays.
 *
 *   bench-pcap --out FILE --flows N [--vips K] [--proto udp|tcp]
 *              [--tcp-flags ack|syn] [--vip-base ADDR] [--vip-port P]
 *              [--client-base ADDR] [--dst-mac MAC] [--src-mac MAC]
 *              [--frame-len L]
 *
 * One frame per flow, N frames in all, flow i going to VIP i mod K (the K
 * VIPs are vip-base, vip-base + 1, ...; default 198.18.1.1, port 80, K 4).
 * Flow i's client is client-base + (i / K mod 65536) (default 198.19.0.0,
 * so clients span a /16) with source port 1024 + (i / K / 65536) mod 64512,
 * so every frame is a distinct 5-tuple for N up to K * 65536 * 64512.
 *
 * Frames are Ethernet II / IPv4 (DF, TTL 64, valid header checksum) / UDP
 * or TCP (a bare ACK by default, or a SYN) with valid L4 checksums, padded
 * with zeros to frame-len bytes (default 60: the minimum, FCS excluded).
 * dst-mac is the receiving port's MAC (default 02:70:63:61:70:00, DPDK
 * net_pcap's port 0), src-mac the router's (default 02:00:00:00:00:01).
 *
 * Prints one JSON line to stdout: {"file":..,"frames":N,"flows":N,...}.
 * A test helper: it sends nothing anywhere, it writes a file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <pcap/pcap.h>

#include "tests/tools/bytes.h"

enum {
	ETH_LEN = 14,
	IPV4_LEN = 20,
	UDP_LEN = 8,
	TCP_LEN = 20,
	FRAME_MIN = 60,
	FRAME_MAX = 1514,
	CLIENTS_PER_PORT = 65536,
	PORT_FIRST = 1024,
	PORTS = 65536 - PORT_FIRST,
	TCP_FLAG_SYN = 0x02,
	TCP_FLAG_ACK = 0x10,
};

struct bench_pcap {
	const char *out;
	uint64_t flows;
	uint32_t vips;
	uint8_t proto;
	uint8_t tcp_flags;
	uint32_t vip_base;      /* host order */
	uint16_t vip_port;
	uint32_t client_base;   /* host order */
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint32_t frame_len;
};

static void
usage(FILE *out)
{
	fprintf(out,
		"usage: bench-pcap --out FILE --flows N [--vips K] [--proto udp|tcp]\n"
		"                  [--tcp-flags ack|syn] [--vip-base ADDR] [--vip-port P]\n"
		"                  [--client-base ADDR] [--dst-mac MAC] [--src-mac MAC]\n"
		"                  [--frame-len L]\n");
}

static bool
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool
parse_ipv4(const char *s, uint32_t *addr)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return false;
	*addr = ntohl(a.s_addr);
	return true;
}

/* 0 go on, 1 exit 0 (help), -1 exit 2 (usage error). */
static int
parse_args(int argc, char **argv, struct bench_pcap *b)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "flows", required_argument, NULL, 'n' },
		{ "vips", required_argument, NULL, 'k' },
		{ "proto", required_argument, NULL, 'p' },
		{ "tcp-flags", required_argument, NULL, 'F' },
		{ "vip-base", required_argument, NULL, 'v' },
		{ "vip-port", required_argument, NULL, 'P' },
		{ "client-base", required_argument, NULL, 'c' },
		{ "dst-mac", required_argument, NULL, 'd' },
		{ "src-mac", required_argument, NULL, 's' },
		{ "frame-len", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	bool ok;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': b->out = optarg; ok = true; break;
		case 'n': ok = parse_u64(optarg, 1, UINT32_MAX, &b->flows); break;
		case 'k':
			ok = parse_u64(optarg, 1, 256, &v);
			b->vips = (uint32_t)v;
			break;
		case 'p':
			ok = strcmp(optarg, "udp") == 0 || strcmp(optarg, "tcp") == 0;
			b->proto = optarg[0] == 'u' ? IPPROTO_UDP : IPPROTO_TCP;
			break;
		case 'F':
			ok = strcmp(optarg, "ack") == 0 || strcmp(optarg, "syn") == 0;
			b->tcp_flags = optarg[0] == 'a' ? TCP_FLAG_ACK : TCP_FLAG_SYN;
			break;
		case 'v': ok = parse_ipv4(optarg, &b->vip_base); break;
		case 'P':
			ok = parse_u64(optarg, 1, UINT16_MAX, &v);
			b->vip_port = (uint16_t)v;
			break;
		case 'c': ok = parse_ipv4(optarg, &b->client_base); break;
		case 'd': ok = mac_parse(optarg, b->dst_mac); break;
		case 's': ok = mac_parse(optarg, b->src_mac); break;
		case 'l':
			ok = parse_u64(optarg, FRAME_MIN, FRAME_MAX, &v);
			b->frame_len = (uint32_t)v;
			break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
		if (!ok) {
			fprintf(stderr, "bench-pcap: bad value '%s'\n", optarg);
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || b->out == NULL || b->flows == 0) {
		usage(stderr);
		return -1;
	}
	if (b->flows / b->vips / CLIENTS_PER_PORT >= PORTS) {
		fprintf(stderr, "bench-pcap: too many flows for distinct 5-tuples\n");
		return -1;
	}
	return 0;
}

/* Build flow i's frame in f (frame_len bytes, zeroed by the caller). */
static void
build(const struct bench_pcap *b, uint64_t i, uint8_t *f)
{
	uint8_t *ip = f + ETH_LEN, *l4 = ip + IPV4_LEN;
	uint32_t l4_len = b->proto == IPPROTO_UDP ? UDP_LEN : TCP_LEN;
	uint32_t payload = b->frame_len - ETH_LEN - IPV4_LEN - l4_len;
	uint64_t c = i / b->vips;
	uint32_t vip = b->vip_base + (uint32_t)(i % b->vips);
	uint32_t client = b->client_base + (uint32_t)(c % CLIENTS_PER_PORT);
	uint16_t sport = (uint16_t)(PORT_FIRST + c / CLIENTS_PER_PORT % PORTS);
	uint32_t sum;
	uint16_t csum;

	memcpy(f, b->dst_mac, 6);
	memcpy(f + 6, b->src_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IPV4_LEN + l4_len + payload));
	put16(ip + 4, (uint16_t)i);         /* identification */
	put16(ip + 6, 0x4000);              /* DF */
	ip[8] = 64;
	ip[9] = b->proto;
	put32(ip + 12, client);
	put32(ip + 16, vip);
	put16(ip + 10, fold(sum16(0, ip, IPV4_LEN)));
	put16(l4, sport);
	put16(l4 + 2, b->vip_port);
	if (b->proto == IPPROTO_UDP) {
		put16(l4 + 4, (uint16_t)(l4_len + payload));
	} else {
		put32(l4 + 4, (uint32_t)(i * 2654435761u));     /* seq */
		put32(l4 + 8, b->tcp_flags & TCP_FLAG_ACK ? 1u : 0u);
		l4[12] = 5 << 4;
		l4[13] = b->tcp_flags;
		put16(l4 + 14, 65535);
	}
	/* Pseudo-header: addresses, protocol, L4 length. */
	sum = sum16(0, ip + 12, 8) + b->proto + l4_len + payload;
	csum = fold(sum16(sum, l4, l4_len + payload));
	if (b->proto == IPPROTO_UDP)
		put16(l4 + 6, csum == 0 ? 0xffff : csum);   /* 0 means "none" */
	else
		put16(l4 + 16, csum);
}

static int
write_pcap(const struct bench_pcap *b)
{
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, FRAME_MAX);
	pcap_dumper_t *d;
	uint8_t frame[FRAME_MAX];
	struct pcap_pkthdr h = { .caplen = b->frame_len, .len = b->frame_len };

	if (dead == NULL) {
		fprintf(stderr, "bench-pcap: pcap_open_dead failed\n");
		return -1;
	}
	d = pcap_dump_open(dead, b->out);
	if (d == NULL) {
		fprintf(stderr, "bench-pcap: %s: %s\n", b->out, pcap_geterr(dead));
		pcap_close(dead);
		return -1;
	}
	for (uint64_t i = 0; i < b->flows; i++) {
		memset(frame, 0, b->frame_len);
		build(b, i, frame);
		h.ts.tv_sec = (time_t)(i / 1000000);
		h.ts.tv_usec = (suseconds_t)(i % 1000000);
		pcap_dump((u_char *)d, &h, frame);
	}
	if (pcap_dump_flush(d) != 0) {
		fprintf(stderr, "bench-pcap: %s: write failed\n", b->out);
		pcap_dump_close(d);
		pcap_close(dead);
		return -1;
	}
	pcap_dump_close(d);
	pcap_close(dead);
	return 0;
}

int
main(int argc, char **argv)
{
	struct bench_pcap b = {
		.vips = 4,
		.proto = IPPROTO_UDP,
		.tcp_flags = TCP_FLAG_ACK,
		.vip_base = 0xc6120101,         /* 198.18.1.1 */
		.vip_port = 80,
		.client_base = 0xc6130000,      /* 198.19.0.0 */
		.dst_mac = { 0x02, 0x70, 0x63, 0x61, 0x70, 0x00 },
		.src_mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },
		.frame_len = FRAME_MIN,
	};
	int rc = parse_args(argc, argv, &b);

	if (rc != 0)
		return rc > 0 ? EXIT_SUCCESS : 2;
	if (write_pcap(&b) != 0)
		return EXIT_FAILURE;
	printf("{\"file\":\"%s\",\"frames\":%" PRIu64 ",\"flows\":%" PRIu64
	       ",\"vips\":%u,\"proto\":\"%s\",\"frame_len\":%u}\n",
	       b.out, b.flows, b.flows, b.vips, b.proto == IPPROTO_UDP ? "udp" : "tcp",
	       b.frame_len);
	return EXIT_SUCCESS;
}
