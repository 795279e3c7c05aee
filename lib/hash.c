/* SPDX-License-Identifier: BSD-3-Clause */
#include "lib/hash.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HASH_AVX2 1
#endif

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

static inline uint64_t
sip13_2w(const struct hash_key *key, uint64_t w0, uint64_t w1)
{
	const uint64_t w[2] = { w0, w1 };

	return hash_sip13_words(key, w, 2);
}

#ifdef HASH_AVX2
#define SIP4_ATTR __attribute__((target("avx2")))
#define SIP4_ROTL(x, r) _mm256_or_si256(_mm256_slli_epi64((x), (r)), _mm256_srli_epi64((x), 64 - (r)))
#define SIP4_ROTL32(x) _mm256_shuffle_epi32((x), 0xb1)   /* swap the 32-bit halves */

/* hash_sipround() in four lanes; rotations by 16 and 32 are byte shuffles. */
static inline SIP4_ATTR void
sip4_round(__m256i v[4], __m256i rotl16)
{
	v[0] = _mm256_add_epi64(v[0], v[1]);
	v[1] = _mm256_xor_si256(SIP4_ROTL(v[1], 13), v[0]);
	v[0] = SIP4_ROTL32(v[0]);
	v[2] = _mm256_add_epi64(v[2], v[3]);
	v[3] = _mm256_xor_si256(_mm256_shuffle_epi8(v[3], rotl16), v[2]);
	v[0] = _mm256_add_epi64(v[0], v[3]);
	v[3] = _mm256_xor_si256(SIP4_ROTL(v[3], 21), v[0]);
	v[2] = _mm256_add_epi64(v[2], v[1]);
	v[1] = _mm256_xor_si256(SIP4_ROTL(v[1], 17), v[2]);
	v[2] = SIP4_ROTL32(v[2]);
}

/* Strings 0 .. n - n % 4 - 1 (hash_sip13_words(), unrolled for two words). */
static SIP4_ATTR uint32_t
sip13_2w_avx2(const struct hash_key *key, const uint64_t *w0, const uint64_t *w1,
	      uint32_t n, uint64_t *out)
{
	/* byte j of each 64-bit lane from byte j - 2: a rotation left by 16 */
	const __m256i rotl16 = _mm256_setr_epi8(6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13,
						6, 7, 0, 1, 2, 3, 4, 5, 14, 15, 8, 9, 10, 11, 12, 13);
	const __m256i len = _mm256_set1_epi64x((long long)(16ull << 56));
	uint64_t init[4];
	uint32_t i;

	hash_sipinit(init, key);
	for (i = 0; i + 4 <= n; i += 4) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(w0 + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(w1 + i));
		__m256i v[4] = { _mm256_set1_epi64x((long long)init[0]),
				 _mm256_set1_epi64x((long long)init[1]),
				 _mm256_set1_epi64x((long long)init[2]),
				 _mm256_set1_epi64x((long long)init[3]) };

		v[3] = _mm256_xor_si256(v[3], a);
		sip4_round(v, rotl16);
		v[0] = _mm256_xor_si256(v[0], a);
		v[3] = _mm256_xor_si256(v[3], b);
		sip4_round(v, rotl16);
		v[0] = _mm256_xor_si256(v[0], b);
		v[3] = _mm256_xor_si256(v[3], len);
		sip4_round(v, rotl16);
		v[0] = _mm256_xor_si256(v[0], len);
		v[2] = _mm256_xor_si256(v[2], _mm256_set1_epi64x(0xff));
		sip4_round(v, rotl16);
		sip4_round(v, rotl16);
		sip4_round(v, rotl16);
		_mm256_storeu_si256((__m256i *)(void *)(out + i),
				    _mm256_xor_si256(_mm256_xor_si256(v[0], v[1]),
						     _mm256_xor_si256(v[2], v[3])));
	}
	return i;
}
#endif

void
hash_sip13_2w_burst(const struct hash_key *key, const uint64_t *w0, const uint64_t *w1,
		    uint32_t n, uint64_t *out)
{
	uint32_t i = 0;

#ifdef HASH_AVX2
	if (__builtin_cpu_supports("avx2"))
		i = sip13_2w_avx2(key, w0, w1, n, out);
#endif
	for (; i < n; i++)
		out[i] = sip13_2w(key, w0[i], w1[i]);
}

uint64_t
hash_vip_digest(const char *name, uint64_t maglev_digest)
{
	const struct hash_key key = hash_key_from_bytes((const uint8_t *)HASH_DIGEST_KEY);
	uint8_t buf[HASH_VIP_NAME_MAX + 8];
	size_t n = strnlen(name, HASH_VIP_NAME_MAX - 1);

	memcpy(buf, name, n);
	buf[n++] = 0;           /* with its NUL */
	for (int b = 0; b < 8; b++)
		buf[n + b] = (uint8_t)(maglev_digest >> (8 * b));
	return hash_sip24(&key, buf, n + 8);
}
