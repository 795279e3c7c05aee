/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: a users file's text through auth_users_parse(), what
 * maglb-monitor runs on its users file at start and on reload, and through
 * auth_users_text_set(), what `maglbctl monitor passwd` rewrites it with.
 * No crypt(3): a hash costs tens of milliseconds.
 *
 * Besides "no crash, no leak, no sanitizer report", it checks the
 * contracts: a refusal names the file and line; a file that parses holds
 * at most AUTH_USERS_MAX users; setting a user gives a file that parses,
 * with that user added or replaced, and setting it again changes nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/auth.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* yescrypt of "secret", at libxcrypt's default cost. */
#define HASH_Y "$y$j9T$/6k.2IU/5UE08g.1Bsk1E.$1cIavp90FtjE50fx3PJ4rSg/nwG7L5UTOTrJfHHDM06"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_set(const char *text, size_t size, size_t count)
{
	char err[512] = "", *out, *again;
	struct auth_users *u;
	size_t outlen, againlen;
	int rc;

	rc = auth_users_text_set(text, size, "fuzz.users", "alice", HASH_Y,
				 AUTH_ROLE_ADMIN, &out, &outlen, err, sizeof(err));
	if (rc == -ENOSPC) {
		CHECK(count == AUTH_USERS_MAX);
		return;
	}
	CHECK(rc == 0);
	CHECK(strlen(out) == outlen);
	CHECK(auth_users_parse(out, outlen, "fuzz.users", &u, err, sizeof(err)) == 0);
	CHECK(auth_users_count(u) == count || auth_users_count(u) == count + 1);
	auth_users_free(u);
	CHECK(auth_users_text_set(out, outlen, "fuzz.users", "alice", HASH_Y,
				  AUTH_ROLE_ADMIN, &again, &againlen, err,
				  sizeof(err)) == 0);
	CHECK(againlen == outlen && memcmp(again, out, outlen) == 0);
	free(again);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char err[512] = "";
	struct auth_users *u;
	size_t count;

	if (size > AUTH_USERS_FILE_MAX)
		return 0;
	if (auth_users_parse(text, size, "fuzz.users", &u, err, sizeof(err)) < 0) {
		CHECK(u == NULL);
		CHECK(strncmp(err, "fuzz.users:", 11) == 0);
		CHECK(err[11] >= '1' && err[11] <= '9');
		return 0;
	}
	count = auth_users_count(u);
	CHECK(count <= AUTH_USERS_MAX);
	auth_users_free(u);
	check_set(text, size, count);
	return 0;
}
