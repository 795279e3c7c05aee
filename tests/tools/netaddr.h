/* Address parsing shared by the test tools (lbserver, lbclient, encapsend). */
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

/* Format addr as "ADDR" (no port) into buf; returns buf. */
const char *netaddr_format(const struct sockaddr_storage *addr,
                           char *buf, size_t size);

#endif
