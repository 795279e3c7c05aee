/*
 * decap: the test-only tunnel decapsulator of backends (this machine's kernel
 * has no GRE or IP-in-IP).
 *
 *   decap --tun NAME
 *
 * Six raw sockets receive the tunnelled packets addressed to this host: IP
 * protocols 47 (GRE), 4 (IPv4 inside) and 41 (IPv6 inside), over IPv4 and
 * over IPv6. decap strips the outer header (the raw IPv4 socket hands it over,
 * the IPv6 one does not) and the GRE header (see tunnel.h: flags and version
 * must be 0, protocol 0x0800 or 0x86DD), checks that an inner packet of the
 * announced version is whole, and writes it to TUN device NAME, which decap
 * creates and brings up: the kernel receives the inner packet as if it had
 * arrived directly. The device needs no address and no route; a VIP on lo is
 * delivered locally. Inner packets arrive on NAME while their source (the
 * client) is routed elsewhere: the script turns rp_filter off (conf/all and
 * conf/default, before decap starts) so IPv4 accepts them.
 *
 * "ready" on stdout once the TUN device is up and the sockets are open.
 * Counters per tunnel kind and per drop reason: one line on stderr on
 * SIGUSR1 and at exit ("decap NAME: gre4_inner4=3 ... drop_short=0 ...").
 * SIGTERM or SIGINT: exit 0.
 */
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

#define DECAP_DROPS(X)    \
	X(drop_short)         \
	X(drop_gre_flags)     \
	X(drop_gre_protocol)  \
	X(drop_inner)         \
	X(drop_tun_write)

enum decap_drop {
#define DECAP_DROP_ENUM(name) DECAP_##name,
	DECAP_DROPS(DECAP_DROP_ENUM)
	DECAP_DROP_MAX
};

static const char *const decap_drop_names[] = {
#define DECAP_DROP_NAME(name) #name,
	DECAP_DROPS(DECAP_DROP_NAME)
};

struct decap_socket {
	int family;
	int protocol;
	int fd;
};

struct decap {
	const char *tun_name;
	int tun_fd;
	int epoll_fd;
	int signal_fd;
	struct decap_socket sockets[6];
	unsigned long kinds[TUNNEL_KIND_MAX];
	unsigned long drops[DECAP_DROP_MAX];
};

enum { DECAP_SIGNAL_TAG = 6 };

static void
usage(FILE *out)
{
	fprintf(out, "usage: decap --tun NAME\n"
	             "  GRE / IP-in-IP over IPv4 and IPv6 in, inner packets out to TUN NAME;\n"
	             "  prints \"ready\"; SIGUSR1 prints counters to stderr\n");
}

static void
decap_report(const struct decap *decap)
{
	tunnel_report("decap", decap->tun_name, decap->kinds, decap_drop_names,
	              decap->drops, DECAP_DROP_MAX);
}

/* Strip the outer IPv4 header that raw IPv4 sockets deliver; the payload
 * is left in *data, *len. Returns false if the header does not fit. */
static bool
strip_outer_ipv4(const uint8_t **data, size_t *len)
{
	size_t header, total;

	if (*len < 20 || (*data)[0] >> 4 != 4)
		return false;
	header = (size_t)((*data)[0] & 0x0f) * 4;
	total = (size_t)(*data)[2] << 8 | (*data)[3];
	if (header < 20 || total < header || total > *len)
		return false;
	*data += header;
	*len = total - header;
	return true;
}

/* One tunnelled packet (outer header present for IPv4 only) to the TUN. */
static void
decap_packet(struct decap *decap, const struct decap_socket *sock,
	     const uint8_t *data, size_t len)
{
	bool gre = sock->protocol == IPPROTO_GRE;
	unsigned version = sock->protocol == IPPROTO_IPIP ? 4 : 6;
	size_t inner;

	if (sock->family == AF_INET && !strip_outer_ipv4(&data, &len)) {
		decap->drops[DECAP_drop_short]++;
		return;
	}
	if (gre) {
		if (len < TUNNEL_GRE_HEADER_LEN) {
			decap->drops[DECAP_drop_short]++;
			return;
		}
		if (data[0] != 0 || data[1] != 0) {
			decap->drops[DECAP_drop_gre_flags]++;
			return;
		}
		switch ((unsigned)data[2] << 8 | data[3]) {
		case TUNNEL_GRE_PROTO_IPV4: version = 4; break;
		case TUNNEL_GRE_PROTO_IPV6: version = 6; break;
		default:
			decap->drops[DECAP_drop_gre_protocol]++;
			return;
		}
		data += TUNNEL_GRE_HEADER_LEN;
		len -= TUNNEL_GRE_HEADER_LEN;
	}
	inner = tunnel_inner_length(data, len, version);
	if (inner == 0) {
		decap->drops[DECAP_drop_inner]++;
		return;
	}
	if (write(decap->tun_fd, data, inner) != (ssize_t)inner) {
		decap->drops[DECAP_drop_tun_write]++;
		return;
	}
	decap->kinds[tunnel_kind_of(sock->family, gre, version)]++;
}

static void
decap_receive(struct decap *decap, const struct decap_socket *sock)
{
	static uint8_t buf[65536];
	ssize_t n;

	for (;;) {
		n = recv(sock->fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		decap_packet(decap, sock, buf, (size_t)n);
	}
}

static int
decap_open_sockets(struct decap *decap)
{
	static const int families[] = {AF_INET, AF_INET6};
	static const int protocols[] = {IPPROTO_GRE, IPPROTO_IPIP, IPPROTO_IPV6};
	struct epoll_event ev = {.events = EPOLLIN};
	int rcvbuf = 4 << 20;
	unsigned f, p, i = 0;
	struct decap_socket *sock;

	for (f = 0; f < 2; f++) {
		for (p = 0; p < 3; p++, i++) {
			sock = &decap->sockets[i];
			sock->family = families[f];
			sock->protocol = protocols[p];
			sock->fd = socket(sock->family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
			                  sock->protocol);
			if (sock->fd < 0) {
				fprintf(stderr, "decap: raw socket family %d protocol %d: %s\n",
				        sock->family, sock->protocol, strerror(errno));
				return -errno;
			}
			setsockopt(sock->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
			ev.data.u32 = i;
			if (epoll_ctl(decap->epoll_fd, EPOLL_CTL_ADD, sock->fd, &ev) < 0)
				return -errno;
		}
	}
	return 0;
}

static int
decap_open(struct decap *decap)
{
	int err = tunnel_events_open(&decap->epoll_fd, &decap->signal_fd, DECAP_SIGNAL_TAG);

	if (err < 0)
		return err;
	decap->tun_fd = tunnel_tun_open(decap->tun_name);
	if (decap->tun_fd < 0) {
		fprintf(stderr, "decap: tun %s: %s\n", decap->tun_name,
		        strerror(-decap->tun_fd));
		return decap->tun_fd;
	}
	return decap_open_sockets(decap);
}

/* Returns true when asked to stop. */
static bool
decap_signals(struct decap *decap)
{
	struct signalfd_siginfo info;
	bool stop = false;

	while (read(decap->signal_fd, &info, sizeof(info)) == sizeof(info)) {
		if (info.ssi_signo == SIGUSR1)
			decap_report(decap);
		else
			stop = true;
	}
	return stop;
}

static int
decap_run(struct decap *decap)
{
	struct epoll_event events[8];
	int i, n;

	for (;;) {
		n = epoll_wait(decap->epoll_fd, events, 8, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++) {
			if (events[i].data.u32 == DECAP_SIGNAL_TAG) {
				if (decap_signals(decap))
					return 0;
				continue;
			}
			decap_receive(decap, &decap->sockets[events[i].data.u32]);
		}
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"tun", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct decap decap;
	int c, err;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 't') {
			decap.tun_name = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (decap.tun_name == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (decap_open(&decap) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	err = decap_run(&decap);
	decap_report(&decap);
	return err < 0 ? 1 : 0;
}
