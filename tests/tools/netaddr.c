#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int
netaddr_parse(const char *text, uint16_t port,
	      struct sockaddr_storage *addr, socklen_t *len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)addr;

	memset(addr, 0, sizeof(*addr));
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

int
netaddr_parse_port(const char *text, uint16_t *port)
{
	char *end;
	unsigned long value;

	errno = 0;
	value = strtoul(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || value == 0 ||
	    value > 65535)
		return -EINVAL;
	*port = (uint16_t)value;
	return 0;
}

int
netaddr_parse_unsigned(const char *text, unsigned min, unsigned max, unsigned *value)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
		return -EINVAL;
	*value = (unsigned)v;
	return 0;
}

int
netaddr_parse_connect(int argc, char **argv, struct sockaddr_storage *addr,
		      socklen_t *len)
{
	uint16_t port;

	if (optind >= argc || netaddr_parse_port(argv[optind], &port) < 0 ||
	    netaddr_parse(optarg, port, addr, len) < 0)
		return -EINVAL;
	optind++;
	return 0;
}

void
netaddr_raise_fd_limit(void)
{
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
	}
}

const char *
netaddr_format(const struct sockaddr_storage *addr,
	       char *buf, size_t size)
{
	const void *raw;

	if (addr->ss_family == AF_INET)
		raw = &((const struct sockaddr_in *)addr)->sin_addr;
	else
		raw = &((const struct sockaddr_in6 *)addr)->sin6_addr;
	if (inet_ntop(addr->ss_family, raw, buf, (socklen_t)size) == NULL)
		strncpy(buf, "?", size);
	return buf;
}
