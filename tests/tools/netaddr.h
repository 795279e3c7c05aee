/*
 * What the socket test tools share (lbserver, lbclient, lbhold, encapsend):
 * address and argument parsing, the file descriptor limit.
 */
#ifndef MAGLB_TESTS_TOOLS_NETADDR_H
#define MAGLB_TESTS_TOOLS_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * Parse an IPv4 or IPv6 literal ("198.18.1.1", "2001:db8:1::1") and a port
 * (host order) into *addr. Returns 0, or -EINVAL if text is not an address.
 */
int netaddr_parse(const char *text, uint16_t port,
                  struct sockaddr_storage *addr, socklen_t *len);

/* Parse a port number 1..65535; returns 0 or -EINVAL. */
int netaddr_parse_port(const char *text, uint16_t *port);

/* Parse a decimal number min..max into *value; returns 0 or -EINVAL. */
int netaddr_parse_unsigned(const char *text, unsigned min, unsigned max, unsigned *value);

/*
 * "--connect ADDR PORT" in getopt: ADDR is optarg, PORT the next word,
 * which this consumes (optind++). Returns 0 or -EINVAL.
 */
int netaddr_parse_connect(int argc, char **argv, struct sockaddr_storage *addr,
                          socklen_t *len);

/* Lift the soft file descriptor limit to the hard one (hundreds of sockets). */
void netaddr_raise_fd_limit(void);

/* Format addr as "ADDR" (no port) into buf; returns buf. */
const char *netaddr_format(const struct sockaddr_storage *addr,
                           char *buf, size_t size);

#endif
