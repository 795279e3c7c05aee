/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-monitor's authentication, apart from HTTP: the users file, password
 * hashes (crypt(3), libxcrypt), the login throttle and the sessions with
 * their CSRF tokens. maglbctl's `monitor passwd` writes the users file with
 * the same code the daemon reads it with, so the two cannot disagree.
 *
 * Pure: no logging, no clock (time comes in as now_ms, a monotonic clock
 * in milliseconds), randomness through struct auth_random_ops so tests are
 * deterministic. Functions return 0 or -errno; where they take err and
 * errlen they also write why there. None is thread safe: maglb-monitor
 * holds one mutex around the throttle and the sessions.
 */
#ifndef MAGLB_MONITOR_AUTH_H
#define MAGLB_MONITOR_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where maglb-monitor and `maglbctl monitor passwd` look by default. */
#define AUTH_USERS_PATH_DEFAULT "/etc/maglb/monitor-users"

enum {
	AUTH_NAME_MAX = 32,             /* user name length, [A-Za-z0-9._-] */
	AUTH_USERS_MAX = 1024,          /* users in a file */
	AUTH_LINE_MAX = 1024,           /* bytes in a line, without its newline */
	AUTH_USERS_FILE_MAX = 1 << 20,  /* bytes in a file, comments included */
	AUTH_PASSWORD_MAX = 1024,       /* bytes; crypt(3) time grows with it */
	AUTH_HASH_SIZE = 384,           /* a hash with its NUL: CRYPT_OUTPUT_SIZE */
	AUTH_SALT_BYTES = 16,           /* entropy for a new salt */
	AUTH_TOKEN_BYTES = 32,          /* session id, CSRF token: random bytes */
	AUTH_TOKEN_SIZE = 2 * AUTH_TOKEN_BYTES + 1,  /* as hex, with NUL */
	AUTH_FILE_MODE = 0640,          /* root's, readable by the monitor's group */
};

enum auth_role {
	AUTH_ROLE_VIEWER = 0,           /* reads */
	AUTH_ROLE_ADMIN,                /* reads and acts (drain, reload...) */
	AUTH_ROLE_MAX,
};

/* "viewer", "admin": the users file's spelling. */
extern const char *const auth_role_names[AUTH_ROLE_MAX];

/* A role by its name; false for anything else. */
bool auth_role_parse(const char *name, enum auth_role *role);

/* 1..AUTH_NAME_MAX characters of [A-Za-z0-9._-]. */
bool auth_user_name_valid(const char *name);

/*
 * A users file may hold password hashes, so none but its owner and group
 * may read it: nothing for others. (The daemon runs in the file's group.)
 */
static inline bool
auth_file_private(mode_t mode)
{
	return (mode & 0007) == 0;
}

/* ---------------------------------------------------------- users file */

/*
 * The users file, lines of NAME:HASH:ROLE; '#' starts a comment line,
 * blank lines are allowed. HASH is a crypt(3) hash of yescrypt ($y$) or
 * SHA-512 ($6$): the older methods ($1$, DES, plain text) are refused, as
 * they are cheap to crack. Names are unique.
 */
struct auth_users;

/*
 * Parse len bytes of text (no NUL needed). On success *out is the caller's
 * (auth_users_free()); on failure -EINVAL (or -ENOMEM) and err holds
 * "filename:line: reason".
 */
int auth_users_parse(const char *text, size_t len, const char *filename,
		     struct auth_users **out, char *err, size_t errlen);

/*
 * Read and parse the file at path. Refused, with a message naming path:
 * a symbolic link (-ELOOP), anything but a regular file (-EINVAL), a file
 * others may read, write or execute (-EPERM; the message gives its mode
 * and says to chmod it to AUTH_FILE_MODE), one over AUTH_USERS_FILE_MAX
 * bytes (-EFBIG).
 */
int auth_users_load(const char *path, struct auth_users **out, char *err,
		    size_t errlen);

void auth_users_free(struct auth_users *u);   /* NULL: no-op */
size_t auth_users_count(const struct auth_users *u);

/*
 * Check name's password: 0 and *role (if role is not NULL), or -EACCES
 * for a wrong password or an unknown name (or -ENOMEM). An unknown name
 * costs the same crypt(3) as a known one (it hashes against the first
 * user's hash, or a yescrypt dummy), so timing does not say which names
 * exist; the hashes compare in constant time. Takes a crypt(3) run:
 * tens of milliseconds with yescrypt.
 */
int auth_users_verify(const struct auth_users *u, const char *name,
		      const char *password, enum auth_role *role);

/*
 * Put name's line (NAME:HASH:ROLE) into text, a users file of len bytes
 * that must parse (else its error, as auth_users_parse()): it replaces the
 * user's line, or is appended. Every other byte stays as it was. *out
 * (malloc'd, NUL-terminated, the caller's) and *outlen on success; -EINVAL
 * for a bad name or hash (said in err), -ENOSPC past AUTH_USERS_MAX.
 */
int auth_users_text_set(const char *text, size_t len, const char *filename,
			const char *name, const char *hash, enum auth_role role,
			char **out, size_t *outlen, char *err, size_t errlen);

/*
 * auth_users_text_set() on the file at path (none yet: an empty one),
 * written whole to a temporary file in the same directory, fsync'd and
 * renamed over path, so a reader sees the old file or the new one. The new
 * file has mode AUTH_FILE_MODE and, when path existed, its owner and group
 * (when we may: EPERM is ignored). 0, or -errno with err saying why.
 */
int auth_users_file_set(const char *path, const char *name, const char *hash,
			enum auth_role role, char *err, size_t errlen);

/* ------------------------------------------------------------ hashing */

/* Where random bytes come from: fill len bytes of buf, 0 or -errno. */
struct auth_random_ops {
	int (*fill)(void *ctx, void *buf, size_t len);
	void *ctx;
};

/* getrandom(2), blocking until the kernel's pool is ready. */
extern const struct auth_random_ops auth_random_getrandom;

/*
 * Hash password (1..AUTH_PASSWORD_MAX bytes, else -EINVAL) with yescrypt
 * at libxcrypt's default cost and a salt from rnd, into out (outlen >=
 * AUTH_HASH_SIZE is always enough; else -ENOSPC).
 */
int auth_hash_password(const char *password, const struct auth_random_ops *rnd,
		       char *out, size_t outlen);

/* ------------------------------------------------------- login throttle */

/*
 * Failed logins per client (its address as text): the first
 * AUTH_THROTTLE_FREE failures cost nothing, each further one makes the
 * client wait AUTH_THROTTLE_FIRST_MS, doubling per failure up to
 * AUTH_THROTTLE_MAX_MS. A client without a failure for
 * AUTH_THROTTLE_FORGET_MS is forgotten; a success forgets it at once.
 * When the table is full the client with the oldest last failure goes, so
 * the table's memory is bounded whatever the number of addresses.
 */
enum {
	AUTH_THROTTLE_CLIENTS = 4096,
	AUTH_THROTTLE_FREE = 3,
	AUTH_THROTTLE_FIRST_MS = 1000,
	AUTH_THROTTLE_MAX_MS = 60 * 1000,
	AUTH_THROTTLE_FORGET_MS = 15 * 60 * 1000,
	AUTH_CLIENT_MAX = 64,           /* bytes of a client key kept, NUL included */
};

struct auth_throttle;

struct auth_throttle_stats {
	uint64_t failures;              /* auth_throttle_failure() calls */
	uint64_t throttled;             /* auth_throttle_wait_ms() answers > 0 */
	uint64_t evicted;               /* clients dropped because the table was full */
	size_t clients;                 /* tracked now */
};

/* cap clients at most (AUTH_THROTTLE_CLIENTS); NULL with errno. */
struct auth_throttle *auth_throttle_create(size_t cap);
void auth_throttle_free(struct auth_throttle *t);   /* NULL: no-op */

/*
 * How long client must still wait before its next attempt, in ms; 0: go
 * ahead. A non-zero answer counts as a refused attempt (stats.throttled).
 * A key longer than AUTH_CLIENT_MAX - 1 bytes is cut there.
 */
uint32_t auth_throttle_wait_ms(struct auth_throttle *t, const char *client,
			       uint64_t now_ms);
void auth_throttle_failure(struct auth_throttle *t, const char *client,
			   uint64_t now_ms);
void auth_throttle_success(struct auth_throttle *t, const char *client);
void auth_throttle_stats(const struct auth_throttle *t,
			 struct auth_throttle_stats *stats);

/* ------------------------------------------------------------ sessions */

/*
 * Logged-in browsers. A session has a random id (the cookie) and a random
 * CSRF token (sent back by forms and API writes), each AUTH_TOKEN_BYTES
 * as hex. It ends when unused for idle_ms, lifetime_ms after login
 * whatever its use, on logout, or when the table is full and it is the
 * least recently used.
 */
enum {
	AUTH_SESSION_IDLE_MS = 30 * 60 * 1000,
	AUTH_SESSION_LIFETIME_MS = 12 * 60 * 60 * 1000,
	AUTH_SESSIONS_MAX = 1024,
};

struct auth_sessions;
struct auth_session;

/*
 * rnd must outlive the table. NULL with errno: EINVAL for a 0 cap, idle
 * or lifetime, ENOMEM.
 */
struct auth_sessions *auth_sessions_create(const struct auth_random_ops *rnd,
					   uint64_t idle_ms, uint64_t lifetime_ms,
					   size_t cap);
void auth_sessions_free(struct auth_sessions *s);   /* NULL: no-op */

/*
 * A new session for user (a valid name, else -EINVAL) with role: its id
 * and CSRF token written to id and csrf. 0, or rnd's error.
 */
int auth_session_new(struct auth_sessions *s, const char *user, enum auth_role role,
		     uint64_t now_ms, char id[AUTH_TOKEN_SIZE],
		     char csrf[AUTH_TOKEN_SIZE]);

/*
 * The session of id, its last use now; NULL when there is none or it has
 * expired (then it is removed). Ids compare in constant time. The pointer
 * is valid until the next call on s.
 */
const struct auth_session *auth_session_find(struct auth_sessions *s, const char *id,
					     uint64_t now_ms);

const char *auth_session_user(const struct auth_session *session);
enum auth_role auth_session_role(const struct auth_session *session);
const char *auth_session_csrf(const struct auth_session *session);

/* Whether token is the session's CSRF token (constant time; NULL: false). */
bool auth_session_csrf_ok(const struct auth_session *session, const char *token);

/* Log out: forget id's session, if any. */
void auth_session_end(struct auth_sessions *s, const char *id);

/* Sessions held, expired ones not yet removed included. */
size_t auth_sessions_count(const struct auth_sessions *s);

#endif /* MAGLB_MONITOR_AUTH_H */
