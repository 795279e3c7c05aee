#include "tunnel.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

const char *const tunnel_kind_names[TUNNEL_KIND_MAX] = {
#define TUNNEL_KIND_NAME(name) #name,
	TUNNEL_KINDS(TUNNEL_KIND_NAME)
};

enum tunnel_kind
tunnel_kind_of(int outer_family, bool gre, unsigned inner_version)
{
	unsigned kind = 0;

	if (outer_family == AF_INET6)
		kind += 4;
	if (!gre)
		kind += 2;
	if (inner_version == 6)
		kind += 1;
	return (enum tunnel_kind)kind;
}

size_t
tunnel_inner_length(const uint8_t *data, size_t len, unsigned version)
{
	size_t total;

	if (len < 1 || data[0] >> 4 != version)
		return 0;
	if (version == 4) {
		if (len < 20 || (data[0] & 0x0f) < 5)
			return 0;
		total = (size_t)data[2] << 8 | data[3];
		if (total < (size_t)(data[0] & 0x0f) * 4)
			return 0;
	} else {
		if (len < 40)
			return 0;
		total = 40 + ((size_t)data[4] << 8 | data[5]);
	}
	return total <= len ? total : 0;
}

static int
tun_set_up(const char *name)
{
	struct ifreq ifr;
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		err = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (err == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -errno;
	close(fd);
	return err;
}

int
tunnel_tun_open(const char *name)
{
	struct ifreq ifr;
	int fd, err;

	if (strlen(name) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	err = tun_set_up(name);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

int
tunnel_events_open(int *epoll_fd, int *signal_fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	*epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	*signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (*epoll_fd < 0 || *signal_fd < 0 ||
	    epoll_ctl(*epoll_fd, EPOLL_CTL_ADD, *signal_fd, &ev) < 0)
		return -errno;
	return 0;
}

void
tunnel_report(const char *prog, const char *name,
	      const unsigned long kinds[TUNNEL_KIND_MAX],
	      const char *const drop_names[], const unsigned long drops[],
	      unsigned n_drops)
{
	unsigned i;

	fprintf(stderr, "%s %s:", prog, name);
	for (i = 0; i < TUNNEL_KIND_MAX; i++)
		fprintf(stderr, " %s=%lu", tunnel_kind_names[i], kinds[i]);
	for (i = 0; i < n_drops; i++)
		fprintf(stderr, " %s=%lu", drop_names[i], drops[i]);
	fprintf(stderr, "\n");
}
