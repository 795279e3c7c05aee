/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Big-endian fields, the Internet checksum and MAC strings, for the test
 * tools that write and read frames (pcapgen, pcapcheck, bench-pcap). Written
 * apart from the dataplane's code on purpose: the tools check it.
 */
#ifndef MAGLB_TESTS_TOOLS_BYTES_H
#define MAGLB_TESTS_TOOLS_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static inline void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* Add len bytes at p to a one's complement sum (big-endian words). */
static inline uint32_t
sum16(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (i < len)
		sum += (uint32_t)p[i] << 8;
	return sum;
}

/* The checksum field for a sum: folded and complemented. */
static inline uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Whether what sum covers, checksum included, verifies. */
static inline bool
csum_ok(uint32_t sum)
{
	return fold(sum) == 0;
}

/* "xx:xx:xx:xx:xx:xx" into mac. */
static inline bool
mac_parse(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

#endif /* MAGLB_TESTS_TOOLS_BYTES_H */
