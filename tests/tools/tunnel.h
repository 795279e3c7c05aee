/*
 * What decap and encapsend share: the TUN device, their event loop's set-up
 * and counter report, and the eight kinds of tunnelled packet they count (outer IPv4 or IPv6; GRE or IP-in-IP; inner
 * IPv4 or IPv6). GRE is the 4-byte header of RFC 2784 without options:
 *
 *    0                   1                   2                   3
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |C|       Reserved0       | Ver |         Protocol Type         |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *    flags and version all 0; protocol 0x0800 (IPv4) or 0x86DD (IPv6)
 *
 * IP-in-IP is the inner packet right after the outer header: IP protocol 4
 * for inner IPv4, 41 for inner IPv6, over IPv4 or IPv6 alike.
 */
#ifndef MAGLB_TESTS_TOOLS_TUNNEL_H
#define MAGLB_TESTS_TOOLS_TUNNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	TUNNEL_GRE_HEADER_LEN = 4,
	TUNNEL_GRE_PROTO_IPV4 = 0x0800,
	TUNNEL_GRE_PROTO_IPV6 = 0x86DD,
};

/* Order: outer family, then encapsulation, then inner family. */
#define TUNNEL_KINDS(X) \
	X(gre4_inner4)  \
	X(gre4_inner6)  \
	X(ipip4_inner4) \
	X(ipip4_inner6) \
	X(gre6_inner4)  \
	X(gre6_inner6)  \
	X(ipip6_inner4) \
	X(ipip6_inner6)

enum tunnel_kind {
#define TUNNEL_KIND_ENUM(name) TUNNEL_KIND_##name,
	TUNNEL_KINDS(TUNNEL_KIND_ENUM)
	TUNNEL_KIND_MAX
};

extern const char *const tunnel_kind_names[TUNNEL_KIND_MAX];

/* The kind of a packet with the given outer family (AF_INET or AF_INET6),
 * encapsulation and inner IP version (4 or 6). */
enum tunnel_kind tunnel_kind_of(int outer_family, bool gre, unsigned inner_version);

/*
 * Length of the IPv4 or IPv6 packet at the start of data (from its own
 * header), checked against len; 0 if data does not hold a whole packet of
 * that version.
 */
size_t tunnel_inner_length(const uint8_t *data, size_t len, unsigned version);

/*
 * Create TUN device name (IFF_TUN | IFF_NO_PI: bare IP packets, version taken
 * from the first nibble) and bring it up. The device lives as long as the
 * returned non-blocking fd stays open. Returns the fd or -errno.
 */
int tunnel_tun_open(const char *name);

/*
 * Block SIGTERM, SIGINT and SIGUSR1 and deliver them through a non-blocking
 * signalfd (*signal_fd) in a new epoll set (*epoll_fd), its events tagged
 * tag (data.u32). Returns 0 or -errno.
 */
int tunnel_events_open(int *epoll_fd, int *signal_fd, uint32_t tag);

/* The counters on one line of stderr (SIGUSR1 and exit):
 * "prog name: <kind>=N... <drop>=N...". */
void tunnel_report(const char *prog, const char *name,
                   const unsigned long kinds[TUNNEL_KIND_MAX],
                   const char *const drop_names[], const unsigned long drops[],
                   unsigned n_drops);

#endif
