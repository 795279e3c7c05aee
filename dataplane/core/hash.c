/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/core/hash.h"

static uint64_t
load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

struct hash_key
hash_key_from_bytes(const uint8_t bytes[16])
{
	return (struct hash_key){ load_le64(bytes), load_le64(bytes + 8) };
}

uint64_t
hash_sip24(const struct hash_key *key, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t whole = len & ~(size_t)7;
	uint64_t v[4], m, b = (uint64_t)len << 56;

	hash_sipinit(v, key);
	for (size_t i = 0; i < whole; i += 8) {
		m = load_le64(p + i);
		v[3] ^= m;
		hash_sipround(v);
		hash_sipround(v);
		v[0] ^= m;
	}
	for (size_t i = whole; i < len; i++)
		b |= (uint64_t)p[i] << (8 * (i - whole));
	v[3] ^= b;
	hash_sipround(v);
	hash_sipround(v);
	v[0] ^= b;
	v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		hash_sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}
