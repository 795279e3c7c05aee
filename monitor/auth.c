/* SPDX-License-Identifier: BSD-3-Clause */
/* maglb-monitor's users, passwords, login throttle and sessions. See auth.h. */
#include "monitor/auth.h"

#include <assert.h>
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/file.h"

static_assert(AUTH_HASH_SIZE == CRYPT_OUTPUT_SIZE, "a hash is crypt(3)'s output");
static_assert(AUTH_NAME_MAX + AUTH_HASH_SIZE + 8 <= AUTH_LINE_MAX,
	      "any entry auth_users_text_set() writes fits in a line");

/*
 * What an unknown name is hashed against when the file has no user: a
 * yescrypt setting at libxcrypt's default cost, as auth_hash_password()
 * makes.
 */
static const char auth_dummy_setting[] = "$y$j9T$5Qk/5Qk/5Qk/5Qk/5Qk/5.";

/* The accepted methods: prefix, '$'s in a whole hash, checksum length. */
static const struct auth_method {
	const char *prefix;
	int dollars_min, dollars_max;   /* "$6$rounds=N$salt$sum" has one more */
	size_t checksum_len;
} auth_methods[] = {
	{ "$y$", 4, 4, 43 },
	{ "$6$", 3, 4, 86 },
};

const char *const auth_role_names[AUTH_ROLE_MAX] = {
	[AUTH_ROLE_VIEWER] = "viewer",
	[AUTH_ROLE_ADMIN] = "admin",
};

struct auth_user {
	char name[AUTH_NAME_MAX + 1];
	char hash[AUTH_HASH_SIZE];      /* NUL-padded: compared whole */
	enum auth_role role;
	size_t line;
};

struct auth_users {
	struct auth_user *users;
	size_t count, cap;
};

static void
auth_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
auth_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Compare n bytes in a time that does not depend on where they differ. */
static bool
auth_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/* Up to AUTH_NAME_MAX bytes of src for a message, non-printables as '?'. */
static const char *
auth_quote(char dst[AUTH_NAME_MAX + 1], const char *src, size_t len)
{
	size_t n = len < AUTH_NAME_MAX ? len : AUTH_NAME_MAX;

	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] > 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[n] = '\0';
	return dst;
}

bool
auth_role_parse(const char *name, enum auth_role *role)
{
	for (int r = 0; r < AUTH_ROLE_MAX; r++)
		if (strcmp(name, auth_role_names[r]) == 0) {
			*role = (enum auth_role)r;
			return true;
		}
	return false;
}

static bool
auth_name_valid(const char *name, size_t len)
{
	if (len == 0 || len > AUTH_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool
auth_user_name_valid(const char *name)
{
	return auth_name_valid(name, strnlen(name, AUTH_NAME_MAX + 1));
}

/* Why hash (len bytes) is no hash of ours; NULL when it is one. */
static const char *
auth_hash_problem(const char *hash, size_t len)
{
	const struct auth_method *m = NULL;
	char copy[AUTH_HASH_SIZE];
	const char *sum;
	int dollars = 0;

	for (size_t i = 0; i < sizeof(auth_methods) / sizeof(auth_methods[0]); i++)
		if (len >= 3 && memcmp(hash, auth_methods[i].prefix, 3) == 0)
			m = &auth_methods[i];
	if (m == NULL)
		return "hash is not yescrypt ($y$) or SHA-512 ($6$), the only "
		       "methods accepted (make one with maglbctl monitor passwd)";
	if (len >= AUTH_HASH_SIZE)
		return "hash too long";
	for (size_t i = 0; i < len; i++) {
		char c = hash[i];

		dollars += c == '$';
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '/' || c == '$' ||
		      c == '='))
			return "malformed hash (a character crypt(3) never writes)";
	}
	sum = memrchr(hash, '$', len);
	if (dollars < m->dollars_min || dollars > m->dollars_max ||
	    (size_t)(hash + len - sum - 1) != m->checksum_len)
		return "malformed hash (not a whole crypt(3) hash)";
	memcpy(copy, hash, len);
	copy[len] = '\0';
	if (crypt_checksalt(copy) != CRYPT_SALT_OK)
		return "malformed hash (libxcrypt refuses its settings)";
	return NULL;
}

/* ---------------------------------------------------------- users file */

static struct auth_user *
auth_users_find(const struct auth_users *u, const char *name, size_t len)
{
	for (size_t i = 0; i < u->count; i++)
		if (strlen(u->users[i].name) == len &&
		    memcmp(u->users[i].name, name, len) == 0)
			return &u->users[i];
	return NULL;
}

static int
auth_users_add(struct auth_users *u, const struct auth_user *user)
{
	if (u->count == u->cap) {
		size_t cap = u->cap == 0 ? 16 : u->cap * 2;
		struct auth_user *grown = realloc(u->users, cap * sizeof(*grown));

		if (grown == NULL)
			return -ENOMEM;
		u->users = grown;
		u->cap = cap;
	}
	u->users[u->count++] = *user;
	return 0;
}

/* An entry, NAME:HASH:ROLE, of len bytes on line lineno. */
static int
auth_users_entry(struct auth_users *u, const char *line, size_t len, size_t lineno,
		 const char *filename, char *err, size_t errlen)
{
	const char *c1 = memchr(line, ':', len), *c2 = NULL, *why;
	struct auth_user user = { .line = lineno };
	const struct auth_user *dup;
	char q[AUTH_NAME_MAX + 1];
	size_t name_len, hash_len, role_len;
	int r;

	if (c1 != NULL)
		c2 = memchr(c1 + 1, ':', (size_t)(line + len - c1 - 1));
	if (c2 == NULL || memchr(c2 + 1, ':', (size_t)(line + len - c2 - 1)) != NULL) {
		auth_error(err, errlen, "%s:%zu: want NAME:HASH:ROLE", filename, lineno);
		return -EINVAL;
	}
	name_len = (size_t)(c1 - line);
	hash_len = (size_t)(c2 - c1 - 1);
	role_len = (size_t)(line + len - c2 - 1);
	if (!auth_name_valid(line, name_len)) {
		auth_error(err, errlen, "%s:%zu: bad user name '%s' (1..%d of A-Z a-z "
			   "0-9 . _ -)", filename, lineno, auth_quote(q, line, name_len),
			   AUTH_NAME_MAX);
		return -EINVAL;
	}
	memcpy(user.name, line, name_len);
	if ((why = auth_hash_problem(c1 + 1, hash_len)) != NULL) {
		auth_error(err, errlen, "%s:%zu: user '%s': %s", filename, lineno,
			   user.name, why);
		return -EINVAL;
	}
	memcpy(user.hash, c1 + 1, hash_len);
	for (r = 0; r < AUTH_ROLE_MAX; r++)
		if (strlen(auth_role_names[r]) == role_len &&
		    memcmp(auth_role_names[r], c2 + 1, role_len) == 0)
			break;
	if (r == AUTH_ROLE_MAX) {
		auth_error(err, errlen, "%s:%zu: user '%s': unknown role '%s' (admin or "
			   "viewer)", filename, lineno, user.name,
			   auth_quote(q, c2 + 1, role_len));
		return -EINVAL;
	}
	user.role = (enum auth_role)r;
	if ((dup = auth_users_find(u, user.name, name_len)) != NULL) {
		auth_error(err, errlen, "%s:%zu: duplicate user '%s' (first on line %zu)",
			   filename, lineno, user.name, dup->line);
		return -EINVAL;
	}
	if (u->count >= AUTH_USERS_MAX) {
		auth_error(err, errlen, "%s:%zu: more than %d users", filename, lineno,
			   AUTH_USERS_MAX);
		return -EINVAL;
	}
	if (auth_users_add(u, &user) < 0) {
		auth_error(err, errlen, "%s: out of memory", filename);
		return -ENOMEM;
	}
	return 0;
}

/* One line of len bytes (its newline cut): skipped, or an entry. */
static int
auth_users_line(struct auth_users *u, const char *line, size_t len, size_t lineno,
		const char *filename, char *err, size_t errlen)
{
	size_t i = 0;

	if (len > AUTH_LINE_MAX) {
		auth_error(err, errlen, "%s:%zu: line longer than %d bytes", filename,
			   lineno, AUTH_LINE_MAX);
		return -EINVAL;
	}
	if (memchr(line, '\0', len) != NULL) {
		auth_error(err, errlen, "%s:%zu: NUL byte", filename, lineno);
		return -EINVAL;
	}
	if (len > 0 && line[len - 1] == '\r')   /* written on Windows */
		len--;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len || line[i] == '#')
		return 0;
	return auth_users_entry(u, line, len, lineno, filename, err, errlen);
}

int
auth_users_parse(const char *text, size_t len, const char *filename,
		 struct auth_users **out, char *err, size_t errlen)
{
	struct auth_users *u = calloc(1, sizeof(*u));
	size_t pos = 0, lineno = 1;
	int rc = 0;

	*out = NULL;
	if (u == NULL) {
		auth_error(err, errlen, "%s: out of memory", filename);
		return -ENOMEM;
	}
	while (rc == 0 && pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl != NULL ? (size_t)(nl - text) : len;

		rc = auth_users_line(u, text + pos, end - pos, lineno++, filename,
				     err, errlen);
		pos = end + 1;
	}
	if (rc < 0) {
		auth_users_free(u);
		return rc;
	}
	*out = u;
	return 0;
}

void
auth_users_free(struct auth_users *u)
{
	if (u == NULL)
		return;
	free(u->users);
	free(u);
}

size_t
auth_users_count(const struct auth_users *u)
{
	return u->count;
}

/* Open path (not a symbolic link) for reading; it must be a regular file. */
static int
auth_file_open(const char *path, int *fd, struct stat *st, char *err, size_t errlen)
{
	int rc;

	*fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (*fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			auth_error(err, errlen, "%s: a symbolic link, refused: name the "
				   "file itself", path);
		else
			auth_error(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(*fd, st) < 0) {
		rc = -errno;
		auth_error(err, errlen, "%s: %s", path, strerror(-rc));
	} else if (!S_ISREG(st->st_mode)) {
		rc = -EINVAL;
		auth_error(err, errlen, "%s: not a regular file", path);
	} else {
		return 0;
	}
	close(*fd);
	*fd = -1;
	return rc;
}

/* The whole of fd (at most AUTH_USERS_FILE_MAX bytes), NUL-terminated. */
static int
auth_file_read(int fd, const char *path, char **text, size_t *len, char *err,
	       size_t errlen)
{
	int rc = file_read_fd(fd, AUTH_USERS_FILE_MAX, text, len);

	if (rc == -EFBIG)
		auth_error(err, errlen, "%s: longer than %d bytes", path, AUTH_USERS_FILE_MAX);
	else if (rc == -ENOMEM)
		auth_error(err, errlen, "%s: out of memory", path);
	else if (rc < 0)
		auth_error(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

int
auth_users_load(const char *path, struct auth_users **out, char *err, size_t errlen)
{
	struct stat st;
	size_t len;
	char *text;
	int fd, rc;

	*out = NULL;
	rc = auth_file_open(path, &fd, &st, err, errlen);
	if (rc < 0)
		return rc;
	if (!auth_file_private(st.st_mode)) {
		close(fd);
		auth_error(err, errlen, "%s: mode %04o lets others read, write or run "
			   "it; chmod %04o %s", path, (unsigned)(st.st_mode & 07777),
			   AUTH_FILE_MODE, path);
		return -EPERM;
	}
	rc = auth_file_read(fd, path, &text, &len, err, errlen);
	close(fd);
	if (rc < 0)
		return rc;
	rc = auth_users_parse(text, len, path, out, err, errlen);
	free(text);
	return rc;
}

int
auth_users_verify(const struct auth_users *u, const char *name, const char *password,
		  enum auth_role *role)
{
	static const char nobody[AUTH_HASH_SIZE];
	const struct auth_user *user = NULL;
	char got[AUTH_HASH_SIZE] = "";
	struct crypt_data *cd;
	const char *setting, *hash;
	size_t len;
	bool ok;

	if (password == NULL)
		return -EACCES;
	len = strnlen(password, AUTH_PASSWORD_MAX + 1);
	if (len == 0 || len > AUTH_PASSWORD_MAX)
		return -EACCES;
	if (name != NULL)
		user = auth_users_find(u, name, strnlen(name, AUTH_NAME_MAX + 1));
	/* an unknown name costs what a user of the file costs */
	setting = user != NULL ? user->hash :
		  u->count > 0 ? u->users[0].hash : auth_dummy_setting;
	cd = calloc(1, sizeof(*cd));
	if (cd == NULL)
		return -ENOMEM;
	hash = crypt_rn(password, setting, cd, sizeof(*cd));
	if (hash != NULL)
		memcpy(got, hash, strnlen(hash, sizeof(got) - 1));
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	ok = auth_equal(got, user != NULL ? user->hash : nobody, sizeof(got)) &&
	     user != NULL && hash != NULL;
	explicit_bzero(got, sizeof(got));
	if (!ok)
		return -EACCES;
	if (role != NULL)
		*role = user->role;
	return 0;
}

/* Bytes [*start, *end) of line lineno (from 1) of text, its newline out. */
static void
auth_line_span(const char *text, size_t len, size_t lineno, size_t *start,
	       size_t *end)
{
	size_t pos = 0;

	for (size_t l = 1; l < lineno; l++)
		pos = (size_t)((const char *)memchr(text + pos, '\n', len - pos) - text) + 1;
	*start = pos;
	*end = pos;
	while (*end < len && text[*end] != '\n')
		(*end)++;
	if (*end > *start && text[*end - 1] == '\r')
		(*end)--;
}

static int
auth_entry_check(const char *name, const char *hash, enum auth_role role,
		 char *err, size_t errlen)
{
	const char *why;

	if (!auth_user_name_valid(name)) {
		auth_error(err, errlen, "bad user name (1..%d of A-Z a-z 0-9 . _ -)",
			   AUTH_NAME_MAX);
		return -EINVAL;
	}
	if ((why = auth_hash_problem(hash, strnlen(hash, AUTH_HASH_SIZE))) != NULL) {
		auth_error(err, errlen, "user '%s': %s", name, why);
		return -EINVAL;
	}
	if ((unsigned)role >= AUTH_ROLE_MAX) {
		auth_error(err, errlen, "user '%s': bad role %d", name, (int)role);
		return -EINVAL;
	}
	return 0;
}

int
auth_users_text_set(const char *text, size_t len, const char *filename,
		    const char *name, const char *hash, enum auth_role role,
		    char **out, size_t *outlen, char *err, size_t errlen)
{
	const struct auth_user *user;
	struct auth_users *u;
	size_t start, end, entry_len, n;
	char entry[AUTH_LINE_MAX + 2];
	bool append;
	char *buf;
	int rc;

	*out = NULL;
	rc = auth_entry_check(name, hash, role, err, errlen);
	if (rc < 0)
		return rc;
	entry_len = (size_t)snprintf(entry, sizeof(entry), "%s:%s:%s\n", name, hash,
				     auth_role_names[role]);
	assert(entry_len < sizeof(entry));
	rc = auth_users_parse(text, len, filename, &u, err, errlen);
	if (rc < 0)
		return rc;
	user = auth_users_find(u, name, strlen(name));
	if (user == NULL && u->count >= AUTH_USERS_MAX) {
		auth_users_free(u);
		auth_error(err, errlen, "%s: already %d users", filename, AUTH_USERS_MAX);
		return -ENOSPC;
	}
	append = user == NULL;
	if (!append) {
		auth_line_span(text, len, user->line, &start, &end);
		entry_len--;                    /* the line keeps its own end */
	} else {
		start = end = len;
	}
	auth_users_free(u);
	buf = malloc(len + entry_len + 2);
	if (buf == NULL) {
		auth_error(err, errlen, "%s: out of memory", filename);
		return -ENOMEM;
	}
	memcpy(buf, text, start);
	n = start;
	if (append && len > 0 && text[len - 1] != '\n')
		buf[n++] = '\n';
	memcpy(buf + n, entry, entry_len);
	n += entry_len;
	memcpy(buf + n, text + end, len - end);
	n += len - end;
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

/* The folder of path, for its fsync after a rename. */
static int
auth_dir_sync(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
			 path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = -errno;
	close(fd);
	return rc;
}

static int
auth_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write text to a temporary file beside path, then rename it over path. */
static int
auth_file_replace(const char *path, const char *text, size_t len,
		  const struct stat *old, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	const char *what = "";
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		auth_error(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		auth_error(err, errlen, "%s: cannot create a temporary file beside it: %s",
			   path, strerror(-rc));
		return rc;
	}
	if (old != NULL && fchown(fd, old->st_uid, old->st_gid) < 0 && errno != EPERM)
		rc = -errno, what = "chown";
	else if (fchmod(fd, AUTH_FILE_MODE) < 0)
		rc = -errno, what = "chmod";
	else if ((rc = auth_write_all(fd, text, len)) < 0)
		what = "write";
	else if (fsync(fd) < 0)
		rc = -errno, what = "fsync";
	if (close(fd) < 0 && rc == 0)
		rc = -errno, what = "close";
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno, what = "rename";
	if (rc < 0) {
		auth_error(err, errlen, "%s: %s: %s", tmp, what, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	rc = auth_dir_sync(path);
	if (rc < 0)
		auth_error(err, errlen, "%s: fsync of its folder: %s", path, strerror(-rc));
	return rc;
}

int
auth_users_file_set(const char *path, const char *name, const char *hash,
		    enum auth_role role, char *err, size_t errlen)
{
	char *text = NULL, *updated;
	size_t len = 0, updated_len;
	struct stat st;
	bool existed;
	int fd, rc;

	rc = auth_entry_check(name, hash, role, err, errlen);
	if (rc < 0)
		return rc;
	rc = auth_file_open(path, &fd, &st, err, errlen);
	existed = rc == 0;
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (existed) {
		rc = auth_file_read(fd, path, &text, &len, err, errlen);
		close(fd);
		if (rc < 0)
			return rc;
	}
	rc = auth_users_text_set(text != NULL ? text : "", len, path, name, hash, role,
				 &updated, &updated_len, err, errlen);
	free(text);
	if (rc < 0)
		return rc;
	rc = auth_file_replace(path, updated, updated_len, existed ? &st : NULL, err,
			       errlen);
	free(updated);
	return rc;
}

/* ------------------------------------------------------------ hashing */

static int
auth_random_getrandom_fill(void *ctx, void *buf, size_t len)
{
	char *p = buf;

	(void)ctx;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

const struct auth_random_ops auth_random_getrandom = {
	.fill = auth_random_getrandom_fill,
};

int
auth_hash_password(const char *password, const struct auth_random_ops *rnd,
		   char *out, size_t outlen)
{
	char entropy[AUTH_SALT_BYTES], setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *cd;
	const char *hash;
	size_t len = strnlen(password, AUTH_PASSWORD_MAX + 1);
	int rc;

	if (len == 0 || len > AUTH_PASSWORD_MAX)
		return -EINVAL;
	rc = rnd->fill(rnd->ctx, entropy, sizeof(entropy));
	if (rc < 0)
		return rc;
	/* count 0: libxcrypt's default cost, which it raises as machines do */
	errno = 0;
	if (crypt_gensalt_rn("$y$", 0, entropy, sizeof(entropy), setting,
			     sizeof(setting)) == NULL)
		return errno != 0 ? -errno : -EINVAL;
	explicit_bzero(entropy, sizeof(entropy));
	cd = calloc(1, sizeof(*cd));
	if (cd == NULL)
		return -ENOMEM;
	errno = 0;
	hash = crypt_rn(password, setting, cd, sizeof(*cd));
	if (hash == NULL)
		rc = errno != 0 ? -errno : -EINVAL;
	else if (strlen(hash) >= outlen)
		rc = -ENOSPC;
	else
		memcpy(out, hash, strlen(hash) + 1);
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return rc;
}

/* ------------------------------------------------------- login throttle */

struct throttle_entry {
	char client[AUTH_CLIENT_MAX];
	uint32_t failures;              /* since it was last forgotten */
	uint64_t last_failure_ms;
	uint64_t until_ms;              /* no attempt before */
};

struct auth_throttle {
	struct throttle_entry *entries;
	size_t n, cap;
	struct auth_throttle_stats stats;
};

struct auth_throttle *
auth_throttle_create(size_t cap)
{
	struct auth_throttle *t;

	if (cap == 0) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->entries = calloc(cap, sizeof(*t->entries));
	if (t->entries == NULL) {
		free(t);
		return NULL;
	}
	t->cap = cap;
	return t;
}

void
auth_throttle_free(struct auth_throttle *t)
{
	if (t == NULL)
		return;
	free(t->entries);
	free(t);
}

static void
throttle_remove(struct auth_throttle *t, size_t i)
{
	t->entries[i] = t->entries[--t->n];
}

static bool
throttle_forgotten(const struct throttle_entry *e, uint64_t now_ms)
{
	return now_ms >= e->last_failure_ms &&
	       now_ms - e->last_failure_ms >= AUTH_THROTTLE_FORGET_MS;
}

/*
 * client's entry, or NULL; with purge, forgets on the way the clients
 * whose last failure is old enough.
 */
static struct throttle_entry *
throttle_find(struct auth_throttle *t, const char *client, bool purge, uint64_t now_ms)
{
	struct throttle_entry *found = NULL;
	char key[AUTH_CLIENT_MAX];

	snprintf(key, sizeof(key), "%s", client);
	for (size_t i = 0; i < t->n;) {
		if (purge && throttle_forgotten(&t->entries[i], now_ms)) {
			if (found == &t->entries[t->n - 1])
				found = &t->entries[i];
			throttle_remove(t, i);
			continue;
		}
		if (found == NULL && strcmp(t->entries[i].client, key) == 0)
			found = &t->entries[i];
		i++;
	}
	return found;
}

/* The wait after failure number AUTH_THROTTLE_FREE + k (k >= 1). */
static uint64_t
throttle_delay_ms(uint32_t k)
{
	uint64_t d = AUTH_THROTTLE_FIRST_MS;

	for (uint32_t i = 1; i < k && d < AUTH_THROTTLE_MAX_MS; i++)
		d *= 2;
	return d < AUTH_THROTTLE_MAX_MS ? d : AUTH_THROTTLE_MAX_MS;
}

uint32_t
auth_throttle_wait_ms(struct auth_throttle *t, const char *client, uint64_t now_ms)
{
	const struct throttle_entry *e = throttle_find(t, client, true, now_ms);

	if (e == NULL || now_ms >= e->until_ms)
		return 0;
	t->stats.throttled++;
	return (uint32_t)(e->until_ms - now_ms);
}

void
auth_throttle_failure(struct auth_throttle *t, const char *client, uint64_t now_ms)
{
	struct throttle_entry *e = throttle_find(t, client, true, now_ms);

	t->stats.failures++;
	if (e == NULL) {
		if (t->n == t->cap) {
			size_t oldest = 0;

			for (size_t i = 1; i < t->n; i++)
				if (t->entries[i].last_failure_ms <
				    t->entries[oldest].last_failure_ms)
					oldest = i;
			throttle_remove(t, oldest);
			t->stats.evicted++;
		}
		e = &t->entries[t->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->client, sizeof(e->client), "%s", client);
	}
	if (e->failures < UINT32_MAX)
		e->failures++;
	e->last_failure_ms = now_ms;
	if (e->failures > AUTH_THROTTLE_FREE)
		e->until_ms = now_ms + throttle_delay_ms(e->failures - AUTH_THROTTLE_FREE);
}

void
auth_throttle_success(struct auth_throttle *t, const char *client)
{
	struct throttle_entry *e = throttle_find(t, client, false, 0);

	if (e != NULL)
		throttle_remove(t, (size_t)(e - t->entries));
}

void
auth_throttle_stats(const struct auth_throttle *t, struct auth_throttle_stats *stats)
{
	*stats = t->stats;
	stats->clients = t->n;
}

/* ------------------------------------------------------------ sessions */

struct auth_session {
	char id[AUTH_TOKEN_SIZE];
	char csrf[AUTH_TOKEN_SIZE];
	char user[AUTH_NAME_MAX + 1];
	enum auth_role role;
	uint64_t created_ms;
	uint64_t last_used_ms;
};

struct auth_sessions {
	const struct auth_random_ops *rnd;
	uint64_t idle_ms, lifetime_ms;
	struct auth_session *sessions;
	size_t n, cap;
};

struct auth_sessions *
auth_sessions_create(const struct auth_random_ops *rnd, uint64_t idle_ms,
		     uint64_t lifetime_ms, size_t cap)
{
	struct auth_sessions *s;

	if (rnd == NULL || idle_ms == 0 || lifetime_ms == 0 || cap == 0) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->sessions = calloc(cap, sizeof(*s->sessions));
	if (s->sessions == NULL) {
		free(s);
		return NULL;
	}
	s->rnd = rnd;
	s->idle_ms = idle_ms;
	s->lifetime_ms = lifetime_ms;
	s->cap = cap;
	return s;
}

void
auth_sessions_free(struct auth_sessions *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s->sessions, s->cap * sizeof(*s->sessions));
	free(s->sessions);
	free(s);
}

static void
session_remove(struct auth_sessions *s, size_t i)
{
	s->sessions[i] = s->sessions[--s->n];
	explicit_bzero(&s->sessions[s->n], sizeof(s->sessions[s->n]));
}

static bool
session_expired(const struct auth_sessions *s, const struct auth_session *x,
		uint64_t now_ms)
{
	return (now_ms >= x->last_used_ms && now_ms - x->last_used_ms >= s->idle_ms) ||
	       (now_ms >= x->created_ms && now_ms - x->created_ms >= s->lifetime_ms);
}

static void
sessions_expire(struct auth_sessions *s, uint64_t now_ms)
{
	for (size_t i = 0; i < s->n;)
		if (session_expired(s, &s->sessions[i], now_ms))
			session_remove(s, i);
		else
			i++;
}

/* AUTH_TOKEN_BYTES from rnd, as hex. */
static int
session_token(const struct auth_random_ops *rnd, char out[AUTH_TOKEN_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char bytes[AUTH_TOKEN_BYTES];
	int rc = rnd->fill(rnd->ctx, bytes, sizeof(bytes));

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < sizeof(bytes); i++) {
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 0xf];
	}
	out[2 * AUTH_TOKEN_BYTES] = '\0';
	explicit_bzero(bytes, sizeof(bytes));
	return 0;
}

int
auth_session_new(struct auth_sessions *s, const char *user, enum auth_role role,
		 uint64_t now_ms, char id[AUTH_TOKEN_SIZE], char csrf[AUTH_TOKEN_SIZE])
{
	struct auth_session x = { .role = role, .created_ms = now_ms,
				  .last_used_ms = now_ms };
	int rc;

	if (!auth_user_name_valid(user) || (unsigned)role >= AUTH_ROLE_MAX)
		return -EINVAL;
	snprintf(x.user, sizeof(x.user), "%s", user);
	if ((rc = session_token(s->rnd, x.id)) < 0 ||
	    (rc = session_token(s->rnd, x.csrf)) < 0) {
		explicit_bzero(&x, sizeof(x));
		return rc;
	}
	sessions_expire(s, now_ms);
	if (s->n == s->cap) {
		size_t lru = 0;

		for (size_t i = 1; i < s->n; i++)
			if (s->sessions[i].last_used_ms < s->sessions[lru].last_used_ms)
				lru = i;
		session_remove(s, lru);
	}
	s->sessions[s->n++] = x;
	memcpy(id, x.id, AUTH_TOKEN_SIZE);
	memcpy(csrf, x.csrf, AUTH_TOKEN_SIZE);
	explicit_bzero(&x, sizeof(x));
	return 0;
}

static bool
token_well_formed(const char *token)
{
	return token != NULL && strnlen(token, AUTH_TOKEN_SIZE) == AUTH_TOKEN_SIZE - 1;
}

/* The index of id's session, or s->n; every id is compared whole. */
static size_t
session_index(const struct auth_sessions *s, const char *id)
{
	size_t found = s->n;

	if (!token_well_formed(id))
		return s->n;
	for (size_t i = 0; i < s->n; i++)
		if (auth_equal(s->sessions[i].id, id, AUTH_TOKEN_SIZE - 1))
			found = i;
	return found;
}

const struct auth_session *
auth_session_find(struct auth_sessions *s, const char *id, uint64_t now_ms)
{
	size_t i;

	sessions_expire(s, now_ms);
	i = session_index(s, id);
	if (i == s->n)
		return NULL;
	s->sessions[i].last_used_ms = now_ms;
	return &s->sessions[i];
}

const char *
auth_session_user(const struct auth_session *session)
{
	return session->user;
}

enum auth_role
auth_session_role(const struct auth_session *session)
{
	return session->role;
}

const char *
auth_session_csrf(const struct auth_session *session)
{
	return session->csrf;
}

bool
auth_session_csrf_ok(const struct auth_session *session, const char *token)
{
	return token_well_formed(token) &&
	       auth_equal(session->csrf, token, AUTH_TOKEN_SIZE - 1);
}

void
auth_session_end(struct auth_sessions *s, const char *id)
{
	size_t i = session_index(s, id);

	if (i < s->n)
		session_remove(s, i);
}

size_t
auth_sessions_count(const struct auth_sessions *s)
{
	return s->n;
}
