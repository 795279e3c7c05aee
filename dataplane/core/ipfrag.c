/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/ipfrag.h"

#include <string.h>

#include "dataplane/core/be.h"

enum {
	IP4_LEN = 20,
	FLAG_DF = 0x4000,
	FLAG_MF = 0x2000,
	OFFSET_MASK = 0x1fff,
	OPT_EOL = 0,
	OPT_NOP = 1,
	OPT_COPIED = 0x80,
};

/* The options of header ip (hl bytes) that every fragment carries, into
 * out, zero-padded to 4 bytes; their length. A malformed option ends the
 * list (the rest is not copied: it cannot be parsed). */
static uint16_t
copied_options(uint8_t *out, const uint8_t *ip, uint16_t hl)
{
	uint16_t n = 0;

	for (uint16_t i = IP4_LEN; i < hl;) {
		uint8_t type = ip[i], len;

		if (type == OPT_EOL)
			break;
		if (type == OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= hl || (len = ip[i + 1]) < 2 || i + len > hl)
			break;
		if (type & OPT_COPIED) {
			memcpy(out + n, ip + i, len);
			n = (uint16_t)(n + len);
		}
		i = (uint16_t)(i + len);
	}
	while (n % 4 != 0)
		out[n++] = OPT_EOL;
	return n;
}

unsigned
ipfrag_plan(struct ipfrag_plan *p, const uint8_t *ip, uint16_t ip_len, uint16_t max_len)
{
	uint16_t flags = be16_get(ip + 6);
	uint32_t end;

	memset(p, 0, sizeof(*p));
	p->hl = (uint16_t)((ip[0] & 0x0f) * 4);
	p->payload = (uint16_t)(ip_len - p->hl);
	if (ip_len <= max_len) {
		p->first = p->payload;
		return p->count = 1;
	}
	if (flags & FLAG_DF)
		return 0;
	p->hl_rest = (uint16_t)(IP4_LEN + copied_options(p->opts, ip, p->hl));
	if (max_len < p->hl + 8)
		return 0;
	p->first = (uint16_t)((max_len - p->hl) & ~7u);
	p->rest = (uint16_t)((max_len - p->hl_rest) & ~7u);   /* >= first */
	/* the last fragment's offset must fit the 13-bit field */
	end = (uint32_t)(flags & OFFSET_MASK) * 8 + p->payload - 1;
	if (end / 8 > OFFSET_MASK)
		return 0;
	p->count = (uint16_t)(1 + (p->payload - p->first + p->rest - 1) / p->rest);
	return p->count;
}

/* Payload start and length of fragment k. */
static void
span(const struct ipfrag_plan *p, unsigned k, uint32_t *start, uint16_t *len)
{
	if (k == 0) {
		*start = 0;
		*len = p->first;
		return;
	}
	*start = p->first + (uint32_t)(k - 1) * p->rest;
	*len = (uint16_t)(p->payload - *start < p->rest ? p->payload - *start : p->rest);
}

uint16_t
ipfrag_len(const struct ipfrag_plan *p, unsigned k)
{
	uint32_t start;
	uint16_t len;

	span(p, k, &start, &len);
	return (uint16_t)((k == 0 ? p->hl : p->hl_rest) + len);
}

/* Fragment k's length, flags and offset, and checksum, into header h (hl
 * bytes, its other fields already the packet's). */
static void
finish(uint8_t *h, uint16_t hl, const struct ipfrag_plan *p, const uint8_t *ip, unsigned k)
{
	uint16_t flags = be16_get(ip + 6);
	uint32_t start;
	uint16_t len, mf = k + 1 < p->count ? FLAG_MF : (uint16_t)(flags & FLAG_MF);

	span(p, k, &start, &len);
	h[0] = (uint8_t)(0x40 | hl / 4);
	be16_put(h + 2, (uint32_t)hl + len);
	be16_put(h + 6, (flags & ~(FLAG_MF | OFFSET_MASK)) | mf |
			((flags & OFFSET_MASK) + start / 8));
	be16_put(h + 10, 0);
	be16_put(h + 10, csum_fold(csum_add(0, h, hl)));
}

size_t
ipfrag_write(uint8_t *out, size_t cap, const struct ipfrag_plan *p, const uint8_t *ip,
	     unsigned k)
{
	uint32_t start;
	uint16_t len;

	if (k == 0 || k >= p->count || cap < ipfrag_len(p, k))
		return 0;
	span(p, k, &start, &len);
	memcpy(out, ip, IP4_LEN);
	memcpy(out + IP4_LEN, p->opts, p->hl_rest - IP4_LEN);
	finish(out, p->hl_rest, p, ip, k);
	memcpy(out + p->hl_rest, ip + p->hl + start, len);
	return (size_t)p->hl_rest + len;
}

void
ipfrag_first(uint8_t *ip, const struct ipfrag_plan *p)
{
	uint8_t h[IP4_LEN + IPFRAG_OPTS_MAX];

	/* finish() reads the packet's flags from ip: work on a copy */
	memcpy(h, ip, p->hl);
	finish(h, p->hl, p, ip, 0);
	memcpy(ip, h, p->hl);
}
