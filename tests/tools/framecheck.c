/*
 * framecheck: what a dataplane's net_af_packet port on an interface would
 * receive. Proves the topology's contract for the LB node's port: frames no
 * larger than the wire allows (no TSO/GSO/GRO super-frames) and complete
 * TCP/UDP checksums (no checksum-offload leftovers).
 *
 *   framecheck --iface IF [--max-frame BYTES]
 *
 * Reads IF through a packet socket set up as DPDK 22.11's af_packet PMD sets
 * up its own: ETH_P_ALL, and PACKET_FANOUT with PACKET_FANOUT_FLAG_DEFRAG, so
 * the kernel hands over IPv4 datagrams reassembled, never their fragments;
 * and no PACKET_IGNORE_OUTGOING, so frames the node's own kernel sends on IF
 * (ARP and ND answers, its management traffic) are read too ("outgoing").
 * Verifies the TCP and UDP checksums of unfragmented IPv4 and IPv6 packets,
 * and on SIGTERM or SIGINT prints
 *   {"frames":..,"outgoing":..,"max_frame":..,"oversize":..,"tcp":..,"udp":..,
 *    "bad_checksum":..}
 * on stdout and exits 0 (1 if any frame was oversize or had a bad checksum).
 * --max-frame defaults to 1514 (Ethernet header + 1500). "ready" on stdout
 * once the socket is bound.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
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
#include <unistd.h>

#define FRAMECHECK_COUNTERS(X) \
	X(frames)                  \
	X(outgoing)                \
	X(max_frame)               \
	X(oversize)                \
	X(tcp)                     \
	X(udp)                     \
	X(bad_checksum)

enum framecheck_counter {
#define FRAMECHECK_ENUM(name) FRAMECHECK_##name,
	FRAMECHECK_COUNTERS(FRAMECHECK_ENUM)
	FRAMECHECK_COUNTER_MAX
};

static const char *const framecheck_names[] = {
#define FRAMECHECK_NAME(name) #name,
	FRAMECHECK_COUNTERS(FRAMECHECK_NAME)
};

struct framecheck {
	unsigned long counters[FRAMECHECK_COUNTER_MAX];
	size_t max_frame;
};

static uint32_t
sum16(uint32_t sum, const uint8_t *data, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)data[i] << 8 | data[i + 1];
	if (len & 1)
		sum += (uint32_t)data[len - 1] << 8;
	return sum;
}

/* True if the one's-complement sum over pseudo header and segment is 0xffff. */
static bool
l4_checksum_ok(const uint8_t *addrs, size_t addrs_len,
	       uint8_t protocol, const uint8_t *seg, size_t len)
{
	uint32_t sum = sum16(0, addrs, addrs_len);

	sum += protocol;
	sum += (uint32_t)len;
	sum = sum16(sum, seg, len);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static void
check_l4(struct framecheck *fc, const uint8_t *addrs, size_t addrs_len,
	 uint8_t protocol, const uint8_t *seg, size_t len)
{
	if (protocol == IPPROTO_TCP)
		fc->counters[FRAMECHECK_tcp]++;
	else if (protocol == IPPROTO_UDP)
		fc->counters[FRAMECHECK_udp]++;
	else
		return;
	/* A UDP checksum of 0 over IPv4 means "none". */
	if (protocol == IPPROTO_UDP && addrs_len == 8 && len >= 8 &&
	    seg[6] == 0 && seg[7] == 0)
		return;
	if (!l4_checksum_ok(addrs, addrs_len, protocol, seg, len))
		fc->counters[FRAMECHECK_bad_checksum]++;
}

static void
check_frame(struct framecheck *fc, const uint8_t *frame, size_t len)
{
	const uint8_t *ip = frame + ETH_HLEN;
	size_t iplen = len - ETH_HLEN, header, total;
	uint16_t type;

	fc->counters[FRAMECHECK_frames]++;
	if (len > fc->counters[FRAMECHECK_max_frame])
		fc->counters[FRAMECHECK_max_frame] = len;
	if (len > fc->max_frame)
		fc->counters[FRAMECHECK_oversize]++;
	if (len < ETH_HLEN + 20)
		return;
	type = (uint16_t)(frame[12] << 8 | frame[13]);
	if (type == ETH_P_IP && ip[0] >> 4 == 4) {
		header = (size_t)(ip[0] & 0x0f) * 4;
		total = (size_t)ip[2] << 8 | ip[3];
		if (header < 20 || total < header || total > iplen ||
		    ((ip[6] & 0x3f) | ip[7]) != 0)   /* fragments: not checked */
			return;
		check_l4(fc, ip + 12, 8, ip[9], ip + header, total - header);
	} else if (type == ETH_P_IPV6 && iplen >= 40 && ip[0] >> 4 == 6) {
		total = 40 + ((size_t)ip[4] << 8 | ip[5]);
		if (total > iplen)
			return;
		check_l4(fc, ip + 8, 32, ip[6], ip + 40, total - 40);
	}
}

static int
open_socket(const char *iface)
{
	struct sockaddr_ll addr = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
	};
	int fd, fanout;

	addr.sll_ifindex = (int)if_nametoindex(iface);
	if (addr.sll_ifindex == 0)
		return -errno;
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0)
		return -errno;
	/* As the PMD: fanout (hash, defragment, rollover) after bind. */
	fanout = (int)(((unsigned)getpid() ^ (unsigned)addr.sll_ifindex) & 0xffff);
	fanout |= (int)((unsigned)(PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG |
	                           PACKET_FANOUT_FLAG_ROLLOVER) << 16);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

static int
run(struct framecheck *fc, int fd, int signal_fd)
{
	static uint8_t frame[65536 + ETH_HLEN];
	struct pollfd fds[2] = {{.fd = fd, .events = POLLIN},
	                        {.fd = signal_fd, .events = POLLIN}};
	struct sockaddr_ll from;
	socklen_t fromlen;
	ssize_t n;

	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			return -errno;
		if (fds[1].revents)
			return 0;
		if (!fds[0].revents)
			continue;
		fromlen = sizeof(from);
		/* MSG_TRUNC: the real length, even of a frame larger than the buffer. */
		n = recvfrom(fd, frame, sizeof(frame), MSG_TRUNC | MSG_DONTWAIT,
		             (struct sockaddr *)&from, &fromlen);
		if (n < 0)
			continue;
		if (from.sll_pkttype == PACKET_OUTGOING)
			fc->counters[FRAMECHECK_outgoing]++;
		check_frame(fc, frame, (size_t)n < sizeof(frame) ? (size_t)n : sizeof(frame));
	}
}

static int
usage(void)
{
	fprintf(stderr, "usage: framecheck --iface IF [--max-frame BYTES]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"iface", required_argument, NULL, 'i'},
		{"max-frame", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	struct framecheck fc = {.max_frame = ETH_HLEN + 1500};
	const char *iface = NULL;
	sigset_t mask;
	int c, fd, signal_fd, i;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'i')
			iface = optarg;
		else if (c == 'm')
			fc.max_frame = strtoul(optarg, NULL, 10);
		else
			return usage();
	}
	if (iface == NULL || optind != argc || fc.max_frame == 0)
		return usage();
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	fd = open_socket(iface);
	if (fd < 0 || signal_fd < 0) {
		fprintf(stderr, "framecheck: %s: %s\n", iface, strerror(fd < 0 ? -fd : errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	if (run(&fc, fd, signal_fd) < 0)
		return 1;
	for (i = 0; i < FRAMECHECK_COUNTER_MAX; i++)
		printf("%s\"%s\":%lu", i ? "," : "{", framecheck_names[i], fc.counters[i]);
	printf("}\n");
	return fc.counters[FRAMECHECK_oversize] || fc.counters[FRAMECHECK_bad_checksum];
}
