/* SPDX-License-Identifier: BSD-3-Clause */
/* maglb-monitor's users, passwords, login throttle and sessions (monitor/auth.h). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor/auth.h"

/* yescrypt of "secret" and SHA-512 of "hunter2", at libxcrypt's default cost. */
#define HASH_Y "$y$j9T$/6k.2IU/5UE08g.1Bsk1E.$1cIavp90FtjE50fx3PJ4rSg/nwG7L5UTOTrJfHHDM06"
#define HASH_6 "$6$/6k.2IU/5UE08g.1$LSSkR2i/4HQoJm4ED847dHK/AUfQ717PUhpS5GgvbBHPfLPv7" \
	       "DInU9oonrQNMpNUUvbnBS9XgQY3KVpfrxP2t0"
#define HASH_6_ROUNDS "$6$rounds=5000$abcdefgh$M/eYsB4rVXAm3ZNc88J.UD9rCKAT6FB1rahiwJCHt" \
		      "EndQNORCub5qhjxn50qbqVVthkM.9HpEwtf0t.iV9uH0/"

static struct auth_users *
parse_ok(const char *text)
{
	struct auth_users *u;
	char err[256] = "";

	ck_assert_msg(auth_users_parse(text, strlen(text), "t.users", &u, err,
				       sizeof(err)) == 0, "%s", err);
	return u;
}

/* text is refused with exactly want. */
static void
parse_refused(const char *text, size_t len, const char *want)
{
	struct auth_users *u = (struct auth_users *)&u;
	char err[512] = "";

	ck_assert_int_eq(auth_users_parse(text, len, "t.users", &u, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(u);
	ck_assert_str_eq(err, want);
}

/* A deterministic source: bytes counting up from its seed. */
struct counter {
	unsigned char next;
	int fail;                       /* returned when not 0 */
};

static int
counter_fill(void *ctx, void *buf, size_t len)
{
	struct counter *c = ctx;

	if (c->fail != 0)
		return c->fail;
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = c->next++;
	return 0;
}

/* A folder of our own for the file tests, removed with its files by rm_dir(). */
static void
make_dir(char dir[PATH_MAX])
{
	snprintf(dir, PATH_MAX, "%s/check_monitor_auth.XXXXXX",
		 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(unlink(p), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(dir), 0);
}

static int
dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n - 2;
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static char *
read_file(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* ---------------------------------------------------------- users file */

START_TEST(test_parse_good)
{
	struct auth_users *u = parse_ok(
		"# maglb-monitor users\n"
		"\n"
		"alice:" HASH_Y ":admin\n"
		"   \t\n"
		"  # indented comment\n"
		"bob.b_-9:" HASH_6 ":viewer\r\n"
		"carol:" HASH_6_ROUNDS ":viewer");       /* no newline at the end */

	ck_assert_uint_eq(auth_users_count(u), 3);
	auth_users_free(u);
	u = parse_ok("");
	ck_assert_uint_eq(auth_users_count(u), 0);
	auth_users_free(u);
	auth_users_free(NULL);
}
END_TEST

START_TEST(test_parse_weak_hashes_refused)
{
	static const char *const weak[] = {
		"$1$abcdefgh$cHJi5PXp/ki/ktXzqlk6I1",   /* MD5 */
		"abNANd1rDfiNc",                        /* DES */
		"secret",                               /* plain text */
		"$2b$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui",  /* bcrypt */
		"",
	};
	char text[256], want[256];

	for (size_t i = 0; i < sizeof(weak) / sizeof(weak[0]); i++) {
		snprintf(text, sizeof(text), "# users\nalice:%s:admin\n", weak[i]);
		snprintf(want, sizeof(want), "t.users:2: user 'alice': hash is not "
			 "yescrypt ($y$) or SHA-512 ($6$), the only methods accepted "
			 "(make one with maglbctl monitor passwd)");
		parse_refused(text, strlen(text), want);
	}
}
END_TEST

START_TEST(test_parse_malformed_hash)
{
	parse_refused("alice:$y$j9T$abc:admin\n", 23,
		      "t.users:1: user 'alice': malformed hash (not a whole crypt(3) hash)");
	parse_refused("alice:$y$j9T$" "x!y" "$abc:admin\n", 27,
		      "t.users:1: user 'alice': malformed hash (a character crypt(3) "
		      "never writes)");
	/* SHA-512's checksum is longer */
	parse_refused("alice:$6$" "/6k.2IU/5UE08g.1$1cIavp90FtjE50fx3PJ4rSg/nwG7L5UTOTrJfHHDM06"
		      ":admin", 75,
		      "t.users:1: user 'alice': malformed hash (not a whole crypt(3) hash)");
}
END_TEST

START_TEST(test_parse_duplicate_refused)
{
	const char *text = "alice:" HASH_Y ":admin\n"
			   "bob:" HASH_6 ":viewer\n"
			   "alice:" HASH_6 ":viewer\n";

	parse_refused(text, strlen(text),
		      "t.users:3: duplicate user 'alice' (first on line 1)");
}
END_TEST

START_TEST(test_parse_bad_role)
{
	const char *text = "\nalice:" HASH_Y ":root\n";
	const char *upper = "alice:" HASH_Y ":Admin\n";

	parse_refused(text, strlen(text),
		      "t.users:2: user 'alice': unknown role 'root' (admin or viewer)");
	parse_refused(upper, strlen(upper),
		      "t.users:1: user 'alice': unknown role 'Admin' (admin or viewer)");
}
END_TEST

START_TEST(test_parse_bad_lines)
{
	const char *space = "al ice:" HASH_Y ":admin\n";
	const char *fields = "alice:" HASH_Y ":admin:x\n";
	const char *nul = "alice:" HASH_Y "\0:admin\n";

	parse_refused(space, strlen(space),
		      "t.users:1: bad user name 'al?ice' (1..32 of A-Z a-z 0-9 . _ -)");
	parse_refused(":" HASH_Y ":admin", strlen(HASH_Y) + 7,
		      "t.users:1: bad user name '' (1..32 of A-Z a-z 0-9 . _ -)");
	parse_refused("abcdefghijklmnopqrstuvwxyz0123456:" HASH_Y ":admin",
		      strlen(HASH_Y) + 40, "t.users:1: bad user name "
		      "'abcdefghijklmnopqrstuvwxyz012345' (1..32 of A-Z a-z 0-9 . _ -)");
	parse_refused("alice:" HASH_Y "\n", strlen(HASH_Y) + 7,
		      "t.users:1: want NAME:HASH:ROLE");
	parse_refused(fields, strlen(fields), "t.users:1: want NAME:HASH:ROLE");
	parse_refused(nul, strlen(HASH_Y) + 14, "t.users:1: NUL byte");
}
END_TEST

START_TEST(test_parse_limits)
{
	const char *entry = ":" HASH_6 ":viewer\n";
	size_t entry_len = strlen(entry), len = 0;
	char *text = malloc((AUTH_USERS_MAX + 1) * (entry_len + 8) + AUTH_LINE_MAX + 8);
	struct auth_users *u;
	char err[256], want[64];

	ck_assert_ptr_nonnull(text);
	/* a comment of exactly AUTH_LINE_MAX bytes passes, one more does not */
	memset(text, '#', AUTH_LINE_MAX);
	text[AUTH_LINE_MAX] = '\n';
	ck_assert_int_eq(auth_users_parse(text, AUTH_LINE_MAX + 1, "t.users", &u, err,
					  sizeof(err)), 0);
	auth_users_free(u);
	memset(text, '#', AUTH_LINE_MAX + 1);
	text[AUTH_LINE_MAX + 1] = '\n';
	snprintf(want, sizeof(want), "t.users:1: line longer than %d bytes", AUTH_LINE_MAX);
	parse_refused(text, AUTH_LINE_MAX + 2, want);
	/* AUTH_USERS_MAX users pass, one more does not */
	for (int i = 0; i < AUTH_USERS_MAX; i++)
		len += (size_t)sprintf(text + len, "u%d%s", i, entry);
	ck_assert_int_eq(auth_users_parse(text, len, "t.users", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(auth_users_count(u), AUTH_USERS_MAX);
	auth_users_free(u);
	len += (size_t)sprintf(text + len, "extra%s", entry);
	snprintf(want, sizeof(want), "t.users:%d: more than %d users", AUTH_USERS_MAX + 1,
		 AUTH_USERS_MAX);
	parse_refused(text, len, want);
	free(text);
}
END_TEST

START_TEST(test_verify)
{
	struct auth_users *u = parse_ok("alice:" HASH_Y ":admin\n"
					"bob:" HASH_6 ":viewer\n");
	enum auth_role role = AUTH_ROLE_MAX;

	ck_assert_int_eq(auth_users_verify(u, "alice", "secret", &role), 0);
	ck_assert_int_eq(role, AUTH_ROLE_ADMIN);
	ck_assert_int_eq(auth_users_verify(u, "bob", "hunter2", &role), 0);
	ck_assert_int_eq(role, AUTH_ROLE_VIEWER);
	role = AUTH_ROLE_MAX;
	ck_assert_int_eq(auth_users_verify(u, "alice", "hunter2", &role), -EACCES);
	ck_assert_int_eq(auth_users_verify(u, "bob", "secret", &role), -EACCES);
	ck_assert_int_eq(auth_users_verify(u, "bob", "", &role), -EACCES);
	ck_assert_int_eq(auth_users_verify(u, "bob", NULL, &role), -EACCES);
	/* another's password, and a name nobody has */
	ck_assert_int_eq(auth_users_verify(u, "carol", "secret", &role), -EACCES);
	ck_assert_int_eq(auth_users_verify(u, NULL, "secret", &role), -EACCES);
	ck_assert_int_eq(role, AUTH_ROLE_MAX);
	auth_users_free(u);
	/* no users: the dummy setting */
	u = parse_ok("# nobody yet\n");
	ck_assert_int_eq(auth_users_verify(u, "alice", "secret", NULL), -EACCES);
	auth_users_free(u);
}
END_TEST

START_TEST(test_load_modes)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], link[PATH_MAX + 16], want[PATH_MAX * 3];
	static const mode_t refused[] = { 0644, 0642, 0641, 0604, 0777 };
	struct auth_users *u;
	char err[PATH_MAX * 2];

	make_dir(dir);
	snprintf(path, sizeof(path), "%s/users", dir);
	ck_assert_int_eq(auth_users_load(path, &u, err, sizeof(err)), -ENOENT);
	write_file(path, "alice:" HASH_Y ":admin\n", 0640);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ck_assert_int_eq(chmod(path, refused[i]), 0);
		ck_assert_int_eq(auth_users_load(path, &u, err, sizeof(err)), -EPERM);
		ck_assert_ptr_null(u);
		snprintf(want, sizeof(want), "%s: mode %04o lets others read, write or run "
			 "it; chmod 0640 %s", path, (unsigned)refused[i], path);
		ck_assert_str_eq(err, want);
	}
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(auth_users_load(path, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(auth_users_count(u), 1);
	auth_users_free(u);
	ck_assert_int_eq(chmod(path, 0600), 0);
	ck_assert_int_eq(auth_users_load(path, &u, err, sizeof(err)), 0);
	auth_users_free(u);
	/* a symbolic link, even to a good file; a folder */
	snprintf(link, sizeof(link), "%s/link", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_eq(auth_users_load(link, &u, err, sizeof(err)), -ELOOP);
	ck_assert_ptr_nonnull(strstr(err, "a symbolic link, refused"));
	ck_assert_int_eq(strncmp(err, link, strlen(link)), 0);
	ck_assert_int_eq(auth_users_load(dir, &u, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file", dir);
	ck_assert_str_eq(err, want);
	/* a parse error names the file */
	write_file(path, "\nalice:x:admin\n", 0600);
	ck_assert_int_eq(auth_users_load(path, &u, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: user 'alice': hash is not", path);
	ck_assert_int_eq(strncmp(err, want, strlen(want)), 0);
	rm_dir(dir);
}
END_TEST

/* ------------------------------------------------------------ hashing */

START_TEST(test_hash_fixed_random)
{
	struct counter c = { .next = 1 };
	const struct auth_random_ops rnd = { counter_fill, &c };
	char a[AUTH_HASH_SIZE], b[AUTH_HASH_SIZE], text[AUTH_HASH_SIZE + 32];
	struct auth_users *u;

	ck_assert_int_eq(auth_hash_password("secret", &rnd, a, sizeof(a)), 0);
	/* the same salt bytes as HASH_Y's: the same hash */
	ck_assert_str_eq(a, HASH_Y);
	c.next = 1;
	ck_assert_int_eq(auth_hash_password("secret", &rnd, b, sizeof(b)), 0);
	ck_assert_str_eq(a, b);
	snprintf(text, sizeof(text), "alice:%s:viewer\n", a);
	u = parse_ok(text);
	ck_assert_int_eq(auth_users_verify(u, "alice", "secret", NULL), 0);
	auth_users_free(u);
	/* refused: empty, too long, no room, the source failing */
	ck_assert_int_eq(auth_hash_password("", &rnd, a, sizeof(a)), -EINVAL);
	ck_assert_int_eq(auth_hash_password("secret", &rnd, a, 20), -ENOSPC);
	c.fail = -EIO;
	ck_assert_int_eq(auth_hash_password("secret", &rnd, a, sizeof(a)), -EIO);
}
END_TEST

START_TEST(test_hash_too_long)
{
	char password[AUTH_PASSWORD_MAX + 2], out[AUTH_HASH_SIZE];

	memset(password, 'p', sizeof(password));
	password[AUTH_PASSWORD_MAX + 1] = '\0';
	ck_assert_int_eq(auth_hash_password(password, &auth_random_getrandom, out,
					    sizeof(out)), -EINVAL);
}
END_TEST

START_TEST(test_hash_getrandom)
{
	char a[AUTH_HASH_SIZE], b[AUTH_HASH_SIZE], text[2 * AUTH_HASH_SIZE + 32];
	struct auth_users *u;

	ck_assert_int_eq(auth_hash_password("pw", &auth_random_getrandom, a, sizeof(a)), 0);
	ck_assert_int_eq(auth_hash_password("pw", &auth_random_getrandom, b, sizeof(b)), 0);
	ck_assert_int_eq(strncmp(a, "$y$", 3), 0);
	ck_assert_str_ne(a, b);
	snprintf(text, sizeof(text), "a:%s:viewer\nb:%s:admin\n", a, b);
	u = parse_ok(text);
	ck_assert_int_eq(auth_users_verify(u, "b", "pw", NULL), 0);
	auth_users_free(u);
}
END_TEST

/* ---------------------------------------------------------- file_set */

START_TEST(test_file_set_create)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[PATH_MAX * 2] = "";
	struct stat st;

	make_dir(dir);
	snprintf(path, sizeof(path), "%s/users", dir);
	umask(022);
	ck_assert_msg(auth_users_file_set(path, "alice", HASH_Y, AUTH_ROLE_ADMIN, err,
					  sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(read_file(path), "alice:" HASH_Y ":admin\n");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, AUTH_FILE_MODE);
	ck_assert_int_eq(dir_entries(dir), 1);              /* no temporary left */
	rm_dir(dir);
}
END_TEST

START_TEST(test_file_set_keeps_lines)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[PATH_MAX * 2] = "";
	const char *before = "# maglb-monitor users\n"
			     "\n"
			     "alice:" HASH_Y ":admin\n"
			     "  # bob is on call\n"
			     "bob:" HASH_6 ":viewer\n"
			     "carol:" HASH_6_ROUNDS ":viewer";   /* no newline */
	struct stat st;

	make_dir(dir);
	snprintf(path, sizeof(path), "%s/users", dir);
	write_file(path, before, 0600);
	/* replace bob: the other lines stay byte for byte */
	ck_assert_msg(auth_users_file_set(path, "bob", HASH_Y, AUTH_ROLE_ADMIN, err,
					  sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(read_file(path), "# maglb-monitor users\n"
			 "\n"
			 "alice:" HASH_Y ":admin\n"
			 "  # bob is on call\n"
			 "bob:" HASH_Y ":admin\n"
			 "carol:" HASH_6_ROUNDS ":viewer");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, AUTH_FILE_MODE);
	ck_assert_uint_eq(st.st_uid, getuid());
	/* add dave: after a newline the last line lacked */
	ck_assert_int_eq(auth_users_file_set(path, "dave", HASH_6, AUTH_ROLE_VIEWER, err,
					     sizeof(err)), 0);
	ck_assert_str_eq(read_file(path), "# maglb-monitor users\n"
			 "\n"
			 "alice:" HASH_Y ":admin\n"
			 "  # bob is on call\n"
			 "bob:" HASH_Y ":admin\n"
			 "carol:" HASH_6_ROUNDS ":viewer\n"
			 "dave:" HASH_6 ":viewer\n");
	/* replace the last, which has no newline of its own now: carol */
	ck_assert_int_eq(auth_users_file_set(path, "carol", HASH_Y, AUTH_ROLE_ADMIN, err,
					     sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(read_file(path), "\ncarol:" HASH_Y ":admin\ndave:"));
	ck_assert_int_eq(dir_entries(dir), 1);
	rm_dir(dir);
}
END_TEST

START_TEST(test_file_set_refusals)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], err[PATH_MAX * 2] = "", want[PATH_MAX * 2];
	const char *broken = "alice:" HASH_Y ":admin\nbob:" HASH_6 ":root\n";

	make_dir(dir);
	snprintf(path, sizeof(path), "%s/users", dir);
	/* a file that does not parse stays as it is */
	write_file(path, broken, 0640);
	ck_assert_int_eq(auth_users_file_set(path, "carol", HASH_Y, AUTH_ROLE_ADMIN, err,
					     sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: user 'bob': unknown role 'root' (admin or "
		 "viewer)", path);
	ck_assert_str_eq(err, want);
	ck_assert_str_eq(read_file(path), broken);
	/* a bad name, hash or role writes nothing */
	ck_assert_int_eq(auth_users_file_set(path, "a:b", HASH_Y, AUTH_ROLE_ADMIN, err,
					     sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "bad user name (1..32 of A-Z a-z 0-9 . _ -)");
	ck_assert_int_eq(auth_users_file_set(path, "carol", "$1$abcdefgh$cHJi5PXp/ki/ktXzqlk6I1",
					     AUTH_ROLE_ADMIN, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "only methods accepted"));
	ck_assert_int_eq(auth_users_file_set(path, "carol", HASH_Y, AUTH_ROLE_MAX, err,
					     sizeof(err)), -EINVAL);
	ck_assert_int_eq(dir_entries(dir), 1);
	rm_dir(dir);
}
END_TEST

START_TEST(test_text_set_full)
{
	const char *entry = ":" HASH_6 ":viewer\n";
	char *text = malloc(AUTH_USERS_MAX * (strlen(entry) + 8)), *out;
	size_t len = 0, outlen;
	char err[256];

	ck_assert_ptr_nonnull(text);
	for (int i = 0; i < AUTH_USERS_MAX; i++)
		len += (size_t)sprintf(text + len, "u%d%s", i, entry);
	ck_assert_int_eq(auth_users_text_set(text, len, "t.users", "extra", HASH_Y,
					     AUTH_ROLE_ADMIN, &out, &outlen, err,
					     sizeof(err)), -ENOSPC);
	ck_assert_str_eq(err, "t.users: already 1024 users");
	/* replacing one still works */
	ck_assert_int_eq(auth_users_text_set(text, len, "t.users", "u7", HASH_Y,
					     AUTH_ROLE_ADMIN, &out, &outlen, err,
					     sizeof(err)), 0);
	ck_assert_uint_eq(outlen, len + strlen(HASH_Y) - strlen(HASH_6) - 1);
	ck_assert_ptr_nonnull(strstr(out, "\nu7:" HASH_Y ":admin\nu8:"));
	free(out);
	free(text);
}
END_TEST

/* ------------------------------------------------------- login throttle */

START_TEST(test_throttle_backoff)
{
	static const uint32_t waits[] = { 1000, 2000, 4000, 8000, 16000, 32000,
					  AUTH_THROTTLE_MAX_MS, AUTH_THROTTLE_MAX_MS };
	struct auth_throttle *t = auth_throttle_create(AUTH_THROTTLE_CLIENTS);
	const char *c = "198.51.100.7";
	struct auth_throttle_stats st;
	uint64_t now = 1000000;

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), 0);
	for (int i = 0; i < AUTH_THROTTLE_FREE; i++) {
		auth_throttle_failure(t, c, now);
		ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), 0);
	}
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		auth_throttle_failure(t, c, now);
		ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), waits[i]);
		ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now + waits[i] - 1), 1);
		now += waits[i];
		ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), 0);
	}
	/* another client is not slowed */
	ck_assert_uint_eq(auth_throttle_wait_ms(t, "2001:db8::7", now), 0);
	auth_throttle_stats(t, &st);
	ck_assert_uint_eq(st.failures, AUTH_THROTTLE_FREE + 8);
	ck_assert_uint_eq(st.throttled, 2 * 8);
	ck_assert_uint_eq(st.clients, 1);
	ck_assert_uint_eq(st.evicted, 0);
	/* a success forgets it: three free failures again */
	auth_throttle_failure(t, c, now);
	ck_assert_uint_gt(auth_throttle_wait_ms(t, c, now), 0);
	auth_throttle_success(t, c);
	for (int i = 0; i < AUTH_THROTTLE_FREE; i++)
		auth_throttle_failure(t, c, now);
	ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), 0);
	auth_throttle_free(t);
	auth_throttle_free(NULL);
}
END_TEST

START_TEST(test_throttle_forgets)
{
	struct auth_throttle *t = auth_throttle_create(AUTH_THROTTLE_CLIENTS);
	const char *c = "198.51.100.7";
	struct auth_throttle_stats st;
	uint64_t now = 5;

	for (int i = 0; i < AUTH_THROTTLE_FREE + 7; i++)
		auth_throttle_failure(t, c, now);
	ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), AUTH_THROTTLE_MAX_MS);
	/* still known just before the end: the next failure waits the most */
	auth_throttle_failure(t, c, now + AUTH_THROTTLE_FORGET_MS - 1);
	now += AUTH_THROTTLE_FORGET_MS - 1;
	ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), AUTH_THROTTLE_MAX_MS);
	now += AUTH_THROTTLE_FORGET_MS;
	ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), 0);
	auth_throttle_stats(t, &st);
	ck_assert_uint_eq(st.clients, 0);
	for (int i = 0; i < AUTH_THROTTLE_FREE; i++)
		auth_throttle_failure(t, c, now);
	ck_assert_uint_eq(auth_throttle_wait_ms(t, c, now), 0);
	auth_throttle_free(t);
}
END_TEST

START_TEST(test_throttle_eviction)
{
	struct auth_throttle *t = auth_throttle_create(4);
	struct auth_throttle_stats st;
	char c[16];

	ck_assert_ptr_nonnull(t);
	/* client 0 throttled first, then 1..3 fail once each, later */
	for (int i = 0; i <= AUTH_THROTTLE_FREE; i++)
		auth_throttle_failure(t, "c0", 0);
	for (int i = 1; i < 4; i++) {
		snprintf(c, sizeof(c), "c%d", i);
		auth_throttle_failure(t, c, 10 + (uint64_t)i);
	}
	ck_assert_uint_eq(auth_throttle_wait_ms(t, "c0", 100), 900);
	/* the table is full: a fifth client evicts c0, the oldest failure */
	auth_throttle_failure(t, "c4", 200);
	auth_throttle_stats(t, &st);
	ck_assert_uint_eq(st.clients, 4);
	ck_assert_uint_eq(st.evicted, 1);
	ck_assert_uint_eq(auth_throttle_wait_ms(t, "c0", 200), 0);
	/* then c1, now the oldest */
	auth_throttle_failure(t, "c0", 300);
	for (int i = 0; i < AUTH_THROTTLE_FREE; i++)
		auth_throttle_failure(t, "c2", 300);
	ck_assert_uint_eq(auth_throttle_wait_ms(t, "c2", 300), 1000);
	auth_throttle_stats(t, &st);
	ck_assert_uint_eq(st.evicted, 2);
	ck_assert_ptr_null(auth_throttle_create(0));
	auth_throttle_free(t);
}
END_TEST

/* ------------------------------------------------------------ sessions */

enum { IDLE = 1000, LIFETIME = 5000 };

START_TEST(test_session_new_find)
{
	struct counter c = { .next = 0 };
	const struct auth_random_ops rnd = { counter_fill, &c };
	struct auth_sessions *s = auth_sessions_create(&rnd, IDLE, LIFETIME, 8);
	char id[AUTH_TOKEN_SIZE], csrf[AUTH_TOKEN_SIZE], id2[AUTH_TOKEN_SIZE];
	char wrong[AUTH_TOKEN_SIZE];
	const struct auth_session *x;

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(auth_session_new(s, "alice", AUTH_ROLE_ADMIN, 0, id, csrf), 0);
	ck_assert_str_eq(id, "000102030405060708090a0b0c0d0e0f"
			     "101112131415161718191a1b1c1d1e1f");
	ck_assert_str_eq(csrf, "202122232425262728292a2b2c2d2e2f"
			       "303132333435363738393a3b3c3d3e3f");
	ck_assert_int_eq(auth_session_new(s, "bob", AUTH_ROLE_VIEWER, 0, id2, wrong), 0);
	ck_assert_uint_eq(auth_sessions_count(s), 2);
	x = auth_session_find(s, id, 10);
	ck_assert_ptr_nonnull(x);
	ck_assert_str_eq(auth_session_user(x), "alice");
	ck_assert_int_eq(auth_session_role(x), AUTH_ROLE_ADMIN);
	ck_assert_str_eq(auth_session_csrf(x), csrf);
	x = auth_session_find(s, id2, 10);
	ck_assert_str_eq(auth_session_user(x), "bob");
	/* ids that are not quite it */
	memcpy(wrong, id, sizeof(wrong));
	wrong[63] ^= 1;
	ck_assert_ptr_null(auth_session_find(s, wrong, 10));
	wrong[63] = '\0';
	ck_assert_ptr_null(auth_session_find(s, wrong, 10));
	ck_assert_ptr_null(auth_session_find(s, "", 10));
	ck_assert_ptr_null(auth_session_find(s, NULL, 10));
	/* refused: a bad name, the source failing */
	ck_assert_int_eq(auth_session_new(s, "a b", AUTH_ROLE_ADMIN, 0, id2, wrong), -EINVAL);
	c.fail = -EIO;
	ck_assert_int_eq(auth_session_new(s, "carol", AUTH_ROLE_ADMIN, 0, id2, wrong), -EIO);
	ck_assert_uint_eq(auth_sessions_count(s), 2);
	auth_sessions_free(s);
	auth_sessions_free(NULL);
	ck_assert_ptr_null(auth_sessions_create(&rnd, 0, LIFETIME, 8));
	ck_assert_ptr_null(auth_sessions_create(&rnd, IDLE, LIFETIME, 0));
}
END_TEST

START_TEST(test_session_idle)
{
	struct auth_sessions *s = auth_sessions_create(&auth_random_getrandom, IDLE,
							LIFETIME, 8);
	char id[AUTH_TOKEN_SIZE], csrf[AUTH_TOKEN_SIZE];

	ck_assert_int_eq(auth_session_new(s, "alice", AUTH_ROLE_VIEWER, 100, id, csrf), 0);
	/* each use restarts the idle time */
	ck_assert_ptr_nonnull(auth_session_find(s, id, 100 + IDLE - 1));
	ck_assert_ptr_nonnull(auth_session_find(s, id, 100 + 2 * IDLE - 2));
	ck_assert_ptr_null(auth_session_find(s, id, 100 + 3 * IDLE - 2));
	ck_assert_uint_eq(auth_sessions_count(s), 0);
	ck_assert_ptr_null(auth_session_find(s, id, 100 + 2 * IDLE - 2));
	auth_sessions_free(s);
}
END_TEST

START_TEST(test_session_lifetime)
{
	struct auth_sessions *s = auth_sessions_create(&auth_random_getrandom, IDLE,
							LIFETIME, 8);
	char id[AUTH_TOKEN_SIZE], csrf[AUTH_TOKEN_SIZE];
	uint64_t now;

	ck_assert_int_eq(auth_session_new(s, "alice", AUTH_ROLE_VIEWER, 0, id, csrf), 0);
	for (now = IDLE / 2; now < LIFETIME; now += IDLE / 2)
		ck_assert_ptr_nonnull(auth_session_find(s, id, now));
	ck_assert_ptr_null(auth_session_find(s, id, LIFETIME));
	ck_assert_uint_eq(auth_sessions_count(s), 0);
	auth_sessions_free(s);
}
END_TEST

START_TEST(test_session_lru)
{
	struct auth_sessions *s = auth_sessions_create(&auth_random_getrandom, IDLE,
							LIFETIME, 2);
	char a[AUTH_TOKEN_SIZE], b[AUTH_TOKEN_SIZE], c[AUTH_TOKEN_SIZE];
	char csrf[AUTH_TOKEN_SIZE];

	ck_assert_int_eq(auth_session_new(s, "a", AUTH_ROLE_VIEWER, 0, a, csrf), 0);
	ck_assert_int_eq(auth_session_new(s, "b", AUTH_ROLE_VIEWER, 1, b, csrf), 0);
	ck_assert_ptr_nonnull(auth_session_find(s, a, 2));
	/* full: b, the least recently used, goes */
	ck_assert_int_eq(auth_session_new(s, "c", AUTH_ROLE_VIEWER, 3, c, csrf), 0);
	ck_assert_uint_eq(auth_sessions_count(s), 2);
	ck_assert_ptr_null(auth_session_find(s, b, 4));
	ck_assert_str_eq(auth_session_user(auth_session_find(s, a, 4)), "a");
	ck_assert_str_eq(auth_session_user(auth_session_find(s, c, 4)), "c");
	auth_sessions_free(s);
}
END_TEST

START_TEST(test_session_csrf_end)
{
	struct auth_sessions *s = auth_sessions_create(&auth_random_getrandom,
							AUTH_SESSION_IDLE_MS,
							AUTH_SESSION_LIFETIME_MS,
							AUTH_SESSIONS_MAX);
	char id[AUTH_TOKEN_SIZE], csrf[AUTH_TOKEN_SIZE], other[AUTH_TOKEN_SIZE];
	char id2[AUTH_TOKEN_SIZE];
	const struct auth_session *x;

	ck_assert_int_eq(auth_session_new(s, "alice", AUTH_ROLE_ADMIN, 0, id, csrf), 0);
	ck_assert_int_eq(auth_session_new(s, "bob", AUTH_ROLE_ADMIN, 0, id2, other), 0);
	ck_assert_str_ne(id, id2);
	ck_assert_str_ne(csrf, other);
	x = auth_session_find(s, id, 1);
	ck_assert(auth_session_csrf_ok(x, csrf));
	ck_assert(!auth_session_csrf_ok(x, other));     /* another session's */
	ck_assert(!auth_session_csrf_ok(x, id));
	ck_assert(!auth_session_csrf_ok(x, NULL));
	ck_assert(!auth_session_csrf_ok(x, ""));
	csrf[AUTH_TOKEN_SIZE - 2] = '\0';
	ck_assert(!auth_session_csrf_ok(x, csrf));
	/* logout: gone, the other stays */
	auth_session_end(s, id);
	auth_session_end(s, id);
	auth_session_end(s, "nonsense");
	ck_assert_ptr_null(auth_session_find(s, id, 2));
	ck_assert_ptr_nonnull(auth_session_find(s, id2, 2));
	ck_assert_uint_eq(auth_sessions_count(s), 1);
	auth_sessions_free(s);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("monitor_auth");
	TCase *users = tcase_create("users");
	TCase *hash = tcase_create("hash");
	TCase *throttle = tcase_create("throttle");
	TCase *sessions = tcase_create("sessions");
	SRunner *sr;
	int failed;

	tcase_add_test(users, test_parse_good);
	tcase_add_test(users, test_parse_weak_hashes_refused);
	tcase_add_test(users, test_parse_malformed_hash);
	tcase_add_test(users, test_parse_duplicate_refused);
	tcase_add_test(users, test_parse_bad_role);
	tcase_add_test(users, test_parse_bad_lines);
	tcase_add_test(users, test_parse_limits);
	tcase_add_test(users, test_verify);
	tcase_add_test(users, test_load_modes);
	tcase_add_test(users, test_file_set_create);
	tcase_add_test(users, test_file_set_keeps_lines);
	tcase_add_test(users, test_file_set_refusals);
	tcase_add_test(users, test_text_set_full);
	tcase_add_test(hash, test_hash_fixed_random);
	tcase_add_test(hash, test_hash_too_long);
	tcase_add_test(hash, test_hash_getrandom);
	tcase_add_test(throttle, test_throttle_backoff);
	tcase_add_test(throttle, test_throttle_forgets);
	tcase_add_test(throttle, test_throttle_eviction);
	tcase_add_test(sessions, test_session_new_find);
	tcase_add_test(sessions, test_session_idle);
	tcase_add_test(sessions, test_session_lifetime);
	tcase_add_test(sessions, test_session_lru);
	tcase_add_test(sessions, test_session_csrf_end);
	suite_add_tcase(s, users);
	suite_add_tcase(s, hash);
	suite_add_tcase(s, throttle);
	suite_add_tcase(s, sessions);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
