/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Big-endian (network order) fields at any alignment, for the parser and the
 * frame writers. Byte by byte: the compiler turns each into one load or
 * store and a byte swap.
 */
#ifndef MAGLB_DATAPLANE_BE_H
#define MAGLB_DATAPLANE_BE_H

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

#endif /* MAGLB_DATAPLANE_BE_H */
