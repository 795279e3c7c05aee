/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-1 (lib/sha1.h) against the vectors of FIPS 180-4's examples and
 * RFC 3174 section 7.3, one-shot and fed in pieces of every size.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sha1.h"

#define MILLION 1000000u
#define RFC3174_TEST4_REPEAT 10u

static void
hex(const uint8_t d[SHA1_DIGEST_LEN], char out[2 * SHA1_DIGEST_LEN + 1])
{
	for (unsigned i = 0; i < SHA1_DIGEST_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void
check_digest(const void *data, size_t len, const char *want)
{
	uint8_t d[SHA1_DIGEST_LEN];
	char got[2 * SHA1_DIGEST_LEN + 1];

	sha1(data, len, d);
	hex(d, got);
	ck_assert_str_eq(got, want);
}

START_TEST(test_empty)
{
	check_digest(NULL, 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}
END_TEST

START_TEST(test_abc)
{
	check_digest("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
}
END_TEST

/* 448 bits: the padding needs a second block. */
START_TEST(test_two_blocks)
{
	static const char m[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	check_digest(m, strlen(m), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}
END_TEST

START_TEST(test_896_bits)
{
	static const char m[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
				"hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

	check_digest(m, strlen(m), "a49b2446a02c645bf419f995b67091253a04a259");
}
END_TEST

START_TEST(test_million_a)
{
	char *m = malloc(MILLION);

	ck_assert_ptr_nonnull(m);
	memset(m, 'a', MILLION);
	check_digest(m, MILLION, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(m);
}
END_TEST

/* RFC 3174 TEST4: 8 digits 80 times, 640 bytes. */
START_TEST(test_rfc3174_test4)
{
	static const char unit[] = "0123456701234567012345670123456701234567012345670123456701234567";
	struct sha1_ctx ctx;
	uint8_t d[SHA1_DIGEST_LEN];
	char got[2 * SHA1_DIGEST_LEN + 1];

	sha1_init(&ctx);
	for (unsigned i = 0; i < RFC3174_TEST4_REPEAT; i++)
		sha1_update(&ctx, unit, strlen(unit));
	sha1_final(&ctx, d);
	hex(d, got);
	ck_assert_str_eq(got, "dea356a2cddd90c7a7ecedc5ebb563934f460452");
}
END_TEST

/* Every split of a message over two block boundaries gives the same digest. */
START_TEST(test_pieces)
{
	uint8_t m[150], whole[SHA1_DIGEST_LEN], part[SHA1_DIGEST_LEN];

	for (unsigned i = 0; i < sizeof(m); i++)
		m[i] = (uint8_t)(i * 7 + 1);
	for (size_t len = 0; len <= sizeof(m); len++) {
		sha1(m, len, whole);
		for (size_t cut = 0; cut <= len; cut++) {
			struct sha1_ctx ctx;

			sha1_init(&ctx);
			sha1_update(&ctx, m, cut);
			sha1_update(&ctx, m + cut, len - cut);
			sha1_final(&ctx, part);
			ck_assert_mem_eq(whole, part, SHA1_DIGEST_LEN);
		}
	}
}
END_TEST

static Suite *
sha1_suite(void)
{
	Suite *s = suite_create("sha1");
	TCase *tc = tcase_create("vectors");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_abc);
	tcase_add_test(tc, test_two_blocks);
	tcase_add_test(tc, test_896_bits);
	tcase_add_test(tc, test_million_a);
	tcase_add_test(tc, test_rfc3174_test4);
	tcase_add_test(tc, test_pieces);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sha1_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
