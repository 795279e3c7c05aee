/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-1 from FIPS 180-4: the message schedule of 6.1.2 kept as a 16-word
 * circular buffer (the alternative method of 6.1.3), the functions and
 * constants of 4.1.1 and 4.2.1, the padding of 5.1.1.
 */
#include "lib/sha1.h"

#include <string.h>

enum {
	SHA1_ROUNDS = 80,
	SHA1_LENGTH_FIELD = 8,          /* the bit length ending the padding */
	SHA1_PAD_BYTE = 0x80,
};

static const uint32_t sha1_h0[5] = {
	0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u,
};

static inline uint32_t
rotl(uint32_t x, unsigned n)
{
	return x << n | x >> (32 - n);
}

static inline uint32_t
load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* f_t and K_t of FIPS 180-4 4.1.1 and 4.2.1, by round. */
static inline uint32_t
round_f(unsigned t, uint32_t b, uint32_t c, uint32_t d)
{
	if (t < 20)
		return (b & c) | (~b & d);              /* Ch */
	if (t < 40 || t >= 60)
		return b ^ c ^ d;                       /* Parity */
	return (b & c) | (b & d) | (c & d);             /* Maj */
}

static inline uint32_t
round_k(unsigned t)
{
	static const uint32_t k[4] = {
		0x5a827999u, 0x6ed9eba1u, 0x8f1bbcdcu, 0xca62c1d6u,
	};

	return k[t / 20];
}

static void
sha1_block(uint32_t h[5], const uint8_t block[SHA1_BLOCK_LEN])
{
	uint32_t w[16], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (unsigned t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (unsigned t = 0; t < SHA1_ROUNDS; t++) {
		uint32_t temp;

		if (t >= 16) {
			unsigned s = t & 15;

			w[s] = rotl(w[(s + 13) & 15] ^ w[(s + 8) & 15] ^ w[(s + 2) & 15] ^ w[s], 1);
		}
		temp = rotl(a, 5) + round_f(t, b, c, d) + e + round_k(t) + w[t & 15];
		e = d;
		d = c;
		c = rotl(b, 30);
		b = a;
		a = temp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void
sha1_init(struct sha1_ctx *ctx)
{
	memcpy(ctx->h, sha1_h0, sizeof(ctx->h));
	ctx->len = 0;
}

void
sha1_update(struct sha1_ctx *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t used = (size_t)(ctx->len % SHA1_BLOCK_LEN);

	if (len == 0)
		return;
	ctx->len += len;
	if (used > 0) {
		size_t take = SHA1_BLOCK_LEN - used < len ? SHA1_BLOCK_LEN - used : len;

		memcpy(ctx->block + used, p, take);
		p += take;
		len -= take;
		if (used + take < SHA1_BLOCK_LEN)
			return;
		sha1_block(ctx->h, ctx->block);
	}
	for (; len >= SHA1_BLOCK_LEN; p += SHA1_BLOCK_LEN, len -= SHA1_BLOCK_LEN)
		sha1_block(ctx->h, p);
	if (len > 0)
		memcpy(ctx->block, p, len);
}

void
sha1_final(struct sha1_ctx *ctx, uint8_t out[SHA1_DIGEST_LEN])
{
	uint64_t bits = ctx->len * 8;
	size_t used = (size_t)(ctx->len % SHA1_BLOCK_LEN);

	ctx->block[used++] = SHA1_PAD_BYTE;
	if (used > SHA1_BLOCK_LEN - SHA1_LENGTH_FIELD) {
		memset(ctx->block + used, 0, SHA1_BLOCK_LEN - used);
		sha1_block(ctx->h, ctx->block);
		used = 0;
	}
	memset(ctx->block + used, 0, SHA1_BLOCK_LEN - SHA1_LENGTH_FIELD - used);
	for (unsigned i = 0; i < SHA1_LENGTH_FIELD; i++)
		ctx->block[SHA1_BLOCK_LEN - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha1_block(ctx->h, ctx->block);
	for (unsigned i = 0; i < 5; i++) {
		out[4 * i] = (uint8_t)(ctx->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(ctx->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(ctx->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)ctx->h[i];
	}
}

void
sha1(const void *data, size_t len, uint8_t out[SHA1_DIGEST_LEN])
{
	struct sha1_ctx ctx;

	sha1_init(&ctx);
	sha1_update(&ctx, data, len);
	sha1_final(&ctx, out);
}
