/*
 * l2watch: what a router sees of a takeover on its link: who claims the
 * watched addresses, and when.
 *
 *   l2watch --iface IF --ip ADDR [--ip ADDR]... [--ready-file F]
 *
 * Reads the frames IF receives (a packet socket; frames the host sends are
 * left out) that are ARP, or ICMPv6 neighbour advertisements (a socket
 * filter keeps the rest in the kernel), and prints one line per frame about
 * a watched address, flushed at once:
 *
 *   t_us=<CLOCK_REALTIME us> kind=<kind> ip=<addr> mac=<sender MAC>
 *
 * ARP frames whose sender IP is watched: kind garp (sender IP = target IP,
 * or a reply broadcast unasked), arp-reply, arp-request; the MAC is the
 * sender hardware address. Neighbour advertisements whose target is
 * watched: kind na (unsolicited: S flag clear) or na-reply (S set); the MAC
 * is the target link-layer address option, else the frame's source. t_us is
 * the kernel's receive time (SO_TIMESTAMPNS), comparable with
 * `date +%s%6N`. "ready" on stdout (and F created) once the socket is bound
 * and filtered. SIGTERM or SIGINT: exit 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
	L2WATCH_IPS_MAX = 16,
	L2WATCH_FRAME_MAX = 2048,
	ARP_OFF = ETH_HLEN,             /* htype ptype hlen plen op sha spa tha tpa */
	ARP_LEN = 28,
	IP6_OFF = ETH_HLEN,
	ICMP6_OFF = IP6_OFF + 40,
	NA_TARGET_OFF = ICMP6_OFF + 8,
	NA_OPTIONS_OFF = NA_TARGET_OFF + 16,
	ICMP6_NA = 136,
	ND_OPT_TARGET_LLADDR = 2,
	ARP_REQUEST = 1,
	ARP_REPLY = 2,
};

struct watched {
	int family;
	uint8_t addr[16];
};

struct options {
	const char *iface;
	const char *ready_file;
	struct watched ips[L2WATCH_IPS_MAX];
	unsigned n_ips;
};

static void
usage(FILE *out)
{
	fprintf(out, "usage: l2watch --iface IF --ip ADDR [--ip ADDR]... [--ready-file F]\n");
}

static int
options_parse(int argc, char **argv, struct options *opts)
{
	static const struct option longopts[] = {
		{"iface", required_argument, NULL, 'i'},
		{"ip", required_argument, NULL, 'a'},
		{"ready-file", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct watched *w;
	int c;

	memset(opts, 0, sizeof(*opts));
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			opts->iface = optarg;
			break;
		case 'a':
			if (opts->n_ips == L2WATCH_IPS_MAX)
				return -EINVAL;
			w = &opts->ips[opts->n_ips++];
			w->family = strchr(optarg, ':') ? AF_INET6 : AF_INET;
			if (inet_pton(w->family, optarg, w->addr) != 1)
				return -EINVAL;
			break;
		case 'r':
			opts->ready_file = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	return optind == argc && opts->iface && opts->n_ips > 0 ? 0 : -EINVAL;
}

static bool
watched(const struct options *opts, int family, const uint8_t *addr)
{
	size_t len = family == AF_INET ? 4 : 16;
	unsigned i;

	for (i = 0; i < opts->n_ips; i++)
		if (opts->ips[i].family == family && memcmp(opts->ips[i].addr, addr, len) == 0)
			return true;
	return false;
}

static void
print_event(uint64_t t_us, const char *kind, int family, const uint8_t *addr,
	    const uint8_t *mac)
{
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(family, addr, ip, sizeof(ip));
	printf("t_us=%llu kind=%s ip=%s mac=%02x:%02x:%02x:%02x:%02x:%02x\n",
	       (unsigned long long)t_us, kind, ip, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	fflush(stdout);
}

static void
on_arp(const struct options *opts, const uint8_t *f, size_t len, uint64_t t_us)
{
	static const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	const uint8_t *arp = f + ARP_OFF, *sha = arp + 8, *spa = arp + 14, *tpa = arp + 24;
	unsigned op;
	const char *kind;

	if (len < ARP_OFF + ARP_LEN || arp[4] != 6 || arp[5] != 4 ||
	    !watched(opts, AF_INET, spa))
		return;
	op = (unsigned)arp[6] << 8 | arp[7];
	if (memcmp(spa, tpa, 4) == 0 || (op == ARP_REPLY && memcmp(f, broadcast, 6) == 0))
		kind = "garp";
	else if (op == ARP_REPLY)
		kind = "arp-reply";
	else if (op == ARP_REQUEST)
		kind = "arp-request";
	else
		return;
	print_event(t_us, kind, AF_INET, spa, sha);
}

static void
on_na(const struct options *opts, const uint8_t *f, size_t len, uint64_t t_us)
{
	const uint8_t *mac = f + 6, *opt = f + NA_OPTIONS_OFF;
	bool solicited;

	if (len < NA_OPTIONS_OFF || f[ICMP6_OFF] != ICMP6_NA ||
	    !watched(opts, AF_INET6, f + NA_TARGET_OFF))
		return;
	solicited = (f[ICMP6_OFF + 4] & 0x40) != 0;
	/* Options: type, length in units of 8 bytes, value. */
	while (opt + 2 <= f + len && opt[1] != 0 && opt + opt[1] * 8 <= f + len) {
		if (opt[0] == ND_OPT_TARGET_LLADDR && opt[1] == 1) {
			mac = opt + 2;
			break;
		}
		opt += opt[1] * 8;
	}
	print_event(t_us, solicited ? "na-reply" : "na", AF_INET6, f + NA_TARGET_OFF, mac);
}

/* ARP, or IPv6 whose next header is ICMPv6 and whose type is NA: the rest
 * never leaves the kernel. No extension headers: ND carries none. */
static int
attach_filter(int fd)
{
	static struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 5),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, IP6_OFF + 6),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMPV6, 0, 3),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ICMP6_OFF),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP6_NA, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, L2WATCH_FRAME_MAX),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

static int
open_socket(const char *iface)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	uint8_t drain[L2WATCH_FRAME_MAX];
	int fd;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sll.sll_ifindex = (int)if_nametoindex(iface);
	/* Filter before binding; then drop what the unfiltered socket caught. */
	if (sll.sll_ifindex == 0 || attach_filter(fd) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){1}, sizeof(int)) < 0 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		int err = errno ? errno : ENODEV;

		close(fd);
		return -err;
	}
	while (recv(fd, drain, sizeof(drain), MSG_DONTWAIT) >= 0)
		;
	return fd;
}

static uint64_t
frame_time_us(struct msghdr *msg)
{
	struct cmsghdr *c;
	struct timespec ts;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
		}
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Every frame queued on fd. */
static int
read_frames(const struct options *opts, int fd)
{
	uint8_t frame[L2WATCH_FRAME_MAX];
	char control[CMSG_SPACE(sizeof(struct timespec))];
	struct sockaddr_ll from;
	struct iovec iov = {.iov_base = frame, .iov_len = sizeof(frame)};
	struct msghdr msg;
	uint16_t proto;
	ssize_t n;

	for (;;) {
		msg = (struct msghdr){.msg_name = &from, .msg_namelen = sizeof(from),
		                      .msg_iov = &iov, .msg_iovlen = 1,
		                      .msg_control = control, .msg_controllen = sizeof(control)};
		n = recvmsg(fd, &msg, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		if (n < ETH_HLEN || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		proto = (uint16_t)(frame[12] << 8 | frame[13]);
		if (proto == ETH_P_ARP)
			on_arp(opts, frame, (size_t)n, frame_time_us(&msg));
		else if (proto == ETH_P_IPV6)
			on_na(opts, frame, (size_t)n, frame_time_us(&msg));
	}
}

/* A signalfd for SIGTERM and SIGINT, or -errno. */
static int
signals_open(void)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	fd = signalfd(-1, &mask, SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int
mark_ready(const char *path)
{
	FILE *file;

	printf("ready\n");
	fflush(stdout);
	if (path == NULL)
		return 0;
	file = fopen(path, "w");
	if (file == NULL || fclose(file) != 0)
		return -errno;
	return 0;
}

int
main(int argc, char **argv)
{
	struct options opts;
	struct pollfd fds[2];
	int rc;

	if (options_parse(argc, argv, &opts) < 0) {
		usage(stderr);
		return 2;
	}
	fds[0] = (struct pollfd){.fd = signals_open(), .events = POLLIN};
	if (fds[0].fd < 0) {
		fprintf(stderr, "l2watch: signalfd: %s\n", strerror(-fds[0].fd));
		return 1;
	}
	fds[1] = (struct pollfd){.fd = open_socket(opts.iface), .events = POLLIN};
	if (fds[1].fd < 0) {
		fprintf(stderr, "l2watch: %s: %s\n", opts.iface, strerror(-fds[1].fd));
		return 1;
	}
	if (mark_ready(opts.ready_file) < 0) {
		fprintf(stderr, "l2watch: %s: %s\n", opts.ready_file, strerror(errno));
		return 1;
	}
	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[0].revents & POLLIN)
			return 0;
		if ((fds[1].revents & POLLIN) && (rc = read_frames(&opts, fds[1].fd)) < 0) {
			fprintf(stderr, "l2watch: %s\n", strerror(-rc));
			return 1;
		}
	}
	fprintf(stderr, "l2watch: poll: %s\n", strerror(errno));
	return 1;
}
