/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-1 (FIPS 180-4, section 6.1), for BFD's keyed SHA-1 authentication
 * (RFC 5880 6.7.4), which fixes the algorithm: no other use should pick it,
 * SHA-1 is broken for collisions. Plain C11, no allocation, byte order
 * independent. A context is one caller's: not thread-safe, any thread.
 */
#ifndef MAGLB_LIB_SHA1_H
#define MAGLB_LIB_SHA1_H

#include <stddef.h>
#include <stdint.h>

enum {
	SHA1_DIGEST_LEN = 20,
	SHA1_BLOCK_LEN = 64,
};

struct sha1_ctx {
	uint32_t h[5];                  /* the intermediate hash value */
	uint64_t len;                   /* bytes hashed so far */
	uint8_t block[SHA1_BLOCK_LEN];  /* a partial block, len % 64 bytes */
};

/* Start a hash. */
void sha1_init(struct sha1_ctx *ctx);

/* Hash len more bytes at data (data may be NULL when len is 0). */
void sha1_update(struct sha1_ctx *ctx, const void *data, size_t len);

/* Pad, write the 20-byte digest into out; ctx must be initialised again
 * before reuse. */
void sha1_final(struct sha1_ctx *ctx, uint8_t out[SHA1_DIGEST_LEN]);

/* The digest of len bytes at data in one call. */
void sha1(const void *data, size_t len, uint8_t out[SHA1_DIGEST_LEN]);

#endif /* MAGLB_LIB_SHA1_H */
