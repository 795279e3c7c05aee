/*
 * encapsend: a kernel stand-in for the load balancer's encapsulation, used to
 * prove the tunnel topology and decap before the dataplane exists.
 *
 *   encapsend --tun NAME --encap gre|ipip --to ADDR [--to ADDR]...
 *             [--gre-flags HEX]
 *
 * Creates TUN device NAME (brought up; see tunnel.h) and reads the packets
 * the kernel routes into it (the script routes the VIPs there, with
 * forwarding on). Each inner IPv4 or IPv6 packet goes, unchanged, to one of
 * the --to backends, picked by a hash of its addresses, protocol and ports (so
 * a flow stays on one backend), wrapped in GRE (4-byte header, tunnel.h) or
 * IP-in-IP (protocol 4 for IPv4 inside, 41 for IPv6 inside) and sent through
 * a raw socket of the backend's family: the kernel adds the outer header with
 * this host's address as source. Outer IPv4 is sent with DF off
 * (IP_PMTUDISC_DONT) and outer IPv6 may be fragmented by this host, so full
 * size inner packets cross a 1500-byte path as fragments.
 *
 * --gre-flags sets the first 16 bits of the GRE header (flags and version,
 * normally 0) to build packets a decapsulator must refuse.
 *
 * "ready" on stdout once the device is up. Counters per tunnel kind and per
 * drop reason: one line on stderr on SIGUSR1 and at exit. SIGTERM: exit 0.
 */
#include "netaddr.h"
#include "tunnel.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum { ENCAPSEND_TARGETS_MAX = 16 };

#define ENCAPSEND_DROPS(X) \
	X(drop_not_ip)         \
	X(drop_send)

enum encapsend_drop {
#define ENCAPSEND_DROP_ENUM(name) ENCAPSEND_##name,
	ENCAPSEND_DROPS(ENCAPSEND_DROP_ENUM)
	ENCAPSEND_DROP_MAX
};

static const char *const encapsend_drop_names[] = {
#define ENCAPSEND_DROP_NAME(name) #name,
	ENCAPSEND_DROPS(ENCAPSEND_DROP_NAME)
};

struct target {
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

struct encapsend {
	const char *tun_name;
	bool gre;
	uint16_t gre_flags;
	struct target targets[ENCAPSEND_TARGETS_MAX];
	unsigned target_count;
	int tun_fd;
	int epoll_fd;
	int signal_fd;
	int sockets[2][3];        /* [outer IPv6][GRE, IPv4 inside, IPv6 inside] */
	unsigned long kinds[TUNNEL_KIND_MAX];
	unsigned long drops[ENCAPSEND_DROP_MAX];
};

enum { ENCAPSEND_TAG_TUN = 0, ENCAPSEND_TAG_SIGNAL = 1 };

static void
usage(FILE *out)
{
	fprintf(out, "usage: encapsend --tun NAME --encap gre|ipip --to ADDR [--to ADDR]...\n"
	             "                 [--gre-flags HEX]\n");
}

static void
encapsend_report(const struct encapsend *encap)
{
	tunnel_report("encapsend", encap->tun_name, encap->kinds, encapsend_drop_names,
	              encap->drops, ENCAPSEND_DROP_MAX);
}

static uint32_t
fnv1a(uint32_t hash, const uint8_t *data, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		hash = (hash ^ data[i]) * 16777619u;
	return hash;
}

/* Hash of addresses, protocol and (first fragment, TCP/UDP) ports. */
static uint32_t
flow_hash(const uint8_t *pkt, size_t len, unsigned version)
{
	uint32_t hash = 2166136261u;
	size_t header;
	uint8_t protocol;
	bool first = true;

	if (version == 4) {
		header = (size_t)(pkt[0] & 0x0f) * 4;
		protocol = pkt[9];
		first = ((pkt[6] & 0x1f) | pkt[7]) == 0;
		hash = fnv1a(hash, pkt + 12, 8);
	} else {
		header = 40;
		protocol = pkt[6];
		hash = fnv1a(hash, pkt + 8, 32);
	}
	hash = fnv1a(hash, &protocol, 1);
	if (first && (protocol == IPPROTO_TCP || protocol == IPPROTO_UDP) &&
	    len >= header + 4)
		hash = fnv1a(hash, pkt + header, 4);
	return hash;
}

static void
encapsend_packet(struct encapsend *encap, uint8_t *frame, size_t len)
{
	uint8_t *pkt = frame + TUNNEL_GRE_HEADER_LEN;
	unsigned version = len ? pkt[0] >> 4 : 0;
	const struct target *target;
	int outer6, fd;
	size_t inner = tunnel_inner_length(pkt, len, version);

	if (inner == 0) {
		encap->drops[ENCAPSEND_drop_not_ip]++;
		return;
	}
	target = &encap->targets[flow_hash(pkt, inner, version) % encap->target_count];
	outer6 = target->addr.ss_family == AF_INET6;
	fd = encap->sockets[outer6][encap->gre ? 0 : version == 4 ? 1 : 2];
	if (encap->gre) {
		frame[0] = (uint8_t)(encap->gre_flags >> 8);
		frame[1] = (uint8_t)(encap->gre_flags & 0xff);
		frame[2] = version == 4 ? TUNNEL_GRE_PROTO_IPV4 >> 8 : TUNNEL_GRE_PROTO_IPV6 >> 8;
		frame[3] = version == 4 ? TUNNEL_GRE_PROTO_IPV4 & 0xff : TUNNEL_GRE_PROTO_IPV6 & 0xff;
		pkt = frame;
		inner += TUNNEL_GRE_HEADER_LEN;
	}
	if (sendto(fd, pkt, inner, 0, (const struct sockaddr *)&target->addr,
	           target->addr_len) != (ssize_t)inner) {
		encap->drops[ENCAPSEND_drop_send]++;
		return;
	}
	encap->kinds[tunnel_kind_of(target->addr.ss_family, encap->gre, version)]++;
}

static void
encapsend_drain(struct encapsend *encap)
{
	static uint8_t frame[TUNNEL_GRE_HEADER_LEN + 65536];
	ssize_t n;

	for (;;) {
		n = read(encap->tun_fd, frame + TUNNEL_GRE_HEADER_LEN,
		         sizeof(frame) - TUNNEL_GRE_HEADER_LEN);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		encapsend_packet(encap, frame, (size_t)n);
	}
}

static int
encapsend_open_sockets(struct encapsend *encap)
{
	static const int protocols[] = {IPPROTO_GRE, IPPROTO_IPIP, IPPROTO_IPV6};
	int dont = IP_PMTUDISC_DONT, zero = 0, outer6, p, fd;

	for (outer6 = 0; outer6 < 2; outer6++) {
		for (p = 0; p < 3; p++) {
			fd = socket(outer6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_CLOEXEC,
			            protocols[p]);
			if (fd < 0) {
				fprintf(stderr, "encapsend: raw socket: %s\n", strerror(errno));
				return -errno;
			}
			/* Send-only: keep nothing that arrives for this protocol. */
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &zero, sizeof(zero));
			if (!outer6)
				setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &dont, sizeof(dont));
			encap->sockets[outer6][p] = fd;
		}
	}
	return 0;
}

static int
encapsend_open(struct encapsend *encap)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int err = tunnel_events_open(&encap->epoll_fd, &encap->signal_fd,
	                             ENCAPSEND_TAG_SIGNAL);

	if (err < 0)
		return err;
	if (encapsend_open_sockets(encap) < 0)
		return -EINVAL;
	encap->tun_fd = tunnel_tun_open(encap->tun_name);
	if (encap->tun_fd < 0) {
		fprintf(stderr, "encapsend: tun %s: %s\n", encap->tun_name,
		        strerror(-encap->tun_fd));
		return encap->tun_fd;
	}
	ev.data.u32 = ENCAPSEND_TAG_TUN;
	if (epoll_ctl(encap->epoll_fd, EPOLL_CTL_ADD, encap->tun_fd, &ev) < 0)
		return -errno;
	return 0;
}

static int
encapsend_run(struct encapsend *encap)
{
	struct signalfd_siginfo info;
	struct epoll_event events[2];
	int i, n;

	for (;;) {
		n = epoll_wait(encap->epoll_fd, events, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++) {
			if (events[i].data.u32 == ENCAPSEND_TAG_TUN) {
				encapsend_drain(encap);
				continue;
			}
			while (read(encap->signal_fd, &info, sizeof(info)) == sizeof(info)) {
				if (info.ssi_signo != SIGUSR1)
					return 0;
				encapsend_report(encap);
			}
		}
	}
}

static int
options_parse(int argc, char **argv, struct encapsend *encap)
{
	static const struct option longopts[] = {
		{"tun", required_argument, NULL, 't'},
		{"encap", required_argument, NULL, 'e'},
		{"to", required_argument, NULL, 'o'},
		{"gre-flags", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *kind = NULL;
	struct target *target;
	unsigned long flags;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't': encap->tun_name = optarg; break;
		case 'e': kind = optarg; break;
		case 'o':
			if (encap->target_count == ENCAPSEND_TARGETS_MAX)
				return -EINVAL;
			target = &encap->targets[encap->target_count++];
			if (netaddr_parse(optarg, 0, &target->addr, &target->addr_len) < 0)
				return -EINVAL;
			break;
		case 'f':
			errno = 0;
			flags = strtoul(optarg, &end, 16);
			if (errno != 0 || *end != '\0' || end == optarg || flags > 0xffff)
				return -EINVAL;
			encap->gre_flags = (uint16_t)flags;
			break;
		case 'h': usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (kind == NULL || (strcmp(kind, "gre") != 0 && strcmp(kind, "ipip") != 0))
		return -EINVAL;
	encap->gre = strcmp(kind, "gre") == 0;
	if (optind != argc || encap->tun_name == NULL || encap->target_count == 0)
		return -EINVAL;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct encapsend encap;
	int err;

	if (options_parse(argc, argv, &encap) < 0) {
		usage(stderr);
		return 2;
	}
	if (encapsend_open(&encap) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	err = encapsend_run(&encap);
	encapsend_report(&encap);
	return err < 0 ? 1 : 0;
}
