/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IPv4 fragmentation (RFC 791 3.2) of a packet without DF that would be over
 * the port MTU once encapsulated. As Linux tunnels and routers do for such
 * packets, the dataplane splits the inner packet and encapsulates each
 * fragment on its own: every tunnel packet then fits, the backend
 * decapsulates them as usual and its stack reassembles the datagram. (With
 * DF set, or for IPv6, the client is told the MTU instead: reply.h.)
 *
 * A packet of payload P bytes after a header of hl bytes becomes:
 *
 *   fragment 0      header with all its options, payload [0, first)
 *   fragment k > 0  header with only the options whose copied flag (type
 *                   bit 0x80) is set, zero-padded to 4 bytes (hl_rest);
 *                   payload [first + (k - 1) * rest, + rest), the last
 *                   one what is left
 *
 * first and rest are the largest multiples of 8 that fit max_len with their
 * header. Each fragment keeps the packet's ID, TOS, TTL, protocol and
 * addresses; its offset is the packet's plus its payload start / 8; MF is
 * set on all but the last, which keeps the packet's own MF (the packet may
 * itself be a fragment); the header checksum is recomputed. The transport
 * header and payload are not touched.
 *
 * Pure functions on bytes; thread-safe.
 */
#ifndef MAGLB_DATAPLANE_IPFRAG_H
#define MAGLB_DATAPLANE_IPFRAG_H

#include <stddef.h>
#include <stdint.h>

#define IPFRAG_OPTS_MAX 40u       /* IPv4 options: at most 40 bytes */

struct ipfrag_plan {
	uint16_t hl;              /* the packet's header length */
	uint16_t hl_rest;         /* fragment k > 0's header length */
	uint16_t payload;         /* the packet's payload bytes */
	uint16_t first;           /* fragment 0's payload bytes */
	uint16_t rest;            /* the other fragments' (the last: what is left) */
	uint16_t count;           /* fragments */
	uint8_t opts[IPFRAG_OPTS_MAX];   /* fragment k > 0's options, padded */
};

/*
 * Plan the split of the IPv4 packet ip[0..ip_len) (header valid: IHL within
 * it) into fragments of at most max_len bytes. Returns the number of
 * fragments: 1 when it fits as it is; 0 when it cannot be split: DF set,
 * max_len too small for a header and 8 bytes of payload, or a fragment
 * offset past the 13-bit field.
 */
unsigned ipfrag_plan(struct ipfrag_plan *p, const uint8_t *ip, uint16_t ip_len,
		     uint16_t max_len);

/* The length of fragment k (k < p->count). */
uint16_t ipfrag_len(const struct ipfrag_plan *p, unsigned k);

/*
 * Write fragment k >= 1 of the planned packet ip into out (cap bytes):
 * ipfrag_len(p, k) bytes, or 0 when cap is too small. Reads ip's header and
 * payload: write every k >= 1 before ipfrag_first() rewrites ip.
 */
size_t ipfrag_write(uint8_t *out, size_t cap, const struct ipfrag_plan *p, const uint8_t *ip,
		    unsigned k);

/* Make ip, in place, fragment 0 of its plan: header fields and checksum;
 * the caller truncates the packet to ipfrag_len(p, 0). */
void ipfrag_first(uint8_t *ip, const struct ipfrag_plan *p);

#endif /* MAGLB_DATAPLANE_IPFRAG_H */
