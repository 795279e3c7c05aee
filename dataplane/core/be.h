/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Big-endian (network order) fields at any alignment, for the parser and the
 * frame writers. Byte by byte: the compiler turns each into one load or
 * store and a byte swap. And the Internet checksum (RFC 1071) over them.
 */
#ifndef MAGLB_DATAPLANE_BE_H
#define MAGLB_DATAPLANE_BE_H

#include <stddef.h>
#include <stdint.h>

static inline uint16_t
be16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void
be16_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Add the 16-bit big-endian words of p[0..len) to sum (an odd tail is
 * padded with 0). For headers written off the fast path: byte by byte. */
static inline uint32_t
csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < len)
		sum += (uint32_t)p[i] << 8;
	return sum;
}

/* The checksum field's value for a sum of csum_add(): folded, complemented. */
static inline uint16_t
csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

#endif /* MAGLB_DATAPLANE_BE_H */
