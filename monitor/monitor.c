/* SPDX-License-Identifier: BSD-3-Clause */
/* maglb-monitor's daemon: see monitor.h. */
#include "monitor/monitor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <qb/qblog.h>

#include "config/config.h"
#include "lib/daemon.h"
#include "lib/file.h"
#include "lib/ipc.h"
#include "lib/ipc_client.h"
#include "lib/json.h"
#include "monitor/api.h"
#include "monitor/auth.h"
#include "monitor/metrics.h"
#include "monitor/route.h"
#include "monitor/snapshot.h"

enum {
	IPC_TIMEOUT_MS = 2000,          /* a daemon slower than this is down */
	PEM_MAX = 1 << 20,
	ASSET_MAX = 4 << 20,
	THREADS_PER_LISTENER = 2,
	CONNECTIONS_PER_CLIENT = 32,
	CONNECTION_MEMORY = 32 * 1024,  /* request line and headers: 431 past it */
	NODE_NAME_MAX = 64,
};

#define SESSION_COOKIE "maglb_session"
#define CSP "default-src 'self'; script-src 'self'; style-src 'self'; " \
	"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; " \
	"base-uri 'none'; form-action 'self'"
#define HSTS "max-age=31536000"
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

static const char *const asset_files[] = {
	"index.html", "login.html", "console.js", "console.css",
};
#define N_ASSETS (sizeof(asset_files) / sizeof(asset_files[0]))

struct asset {
	char *data;
	size_t len;
};

struct monitor {
	qb_loop_t *loop;
	struct monitor_options o;
	struct config *cfg;
	char node_name[NODE_NAME_MAX];
	int timer_fd;
	struct ipc_client *clients[MON_SERVICE_MAX];    /* the loop's thread only */
	const char *services[MON_SERVICE_MAX];
	bool was_up[MON_SERVICE_MAX];
	struct MHD_Daemon *daemons[CONFIG_MONITOR_LISTEN_MAX];
	char *tls_cert, *tls_key;
	size_t tls_key_len;

	pthread_rwlock_t users_lock;    /* users: crypt(3) runs under it, read */
	struct auth_users *users;

	pthread_mutex_t lock;           /* everything below */
	struct mon_snapshot *snap;
	struct mon_history *history;
	struct auth_sessions *sessions;
	struct auth_throttle *throttle;
	struct mon_stats stats;
	struct asset assets[N_ASSETS];
};

/* One request's state between libmicrohttpd's calls. */
struct request {
	size_t len;
	bool too_big;
	bool answered;                  /* too big by its Content-Length: answered
					 * at once */
	char body[MON_BODY_MAX];
};

static uint64_t
real_ms(void)
{
	return daemon_real_us() / 1000;
}

static uint64_t
mono_ms(void)
{
	return daemon_mono_us() / 1000;
}

#define STAT(m, field)                                  \
	do {                                            \
		pthread_mutex_lock(&(m)->lock);         \
		(m)->stats.field++;                     \
		pthread_mutex_unlock(&(m)->lock);       \
	} while (0)

/* ------------------------------------------------------------- files */

/* The whole of path (a regular file of at most max bytes), NUL-terminated;
 * NULL with errno. */
static char *
read_file(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *text = NULL;
	int rc;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		rc = -EINVAL;
	else
		rc = file_read_fd(fd, max, &text, len);
	close(fd);
	errno = -rc;
	return rc == 0 ? text : NULL;
}

/* The console's files into m (under the lock): all or none. */
static int
load_assets(struct monitor *m)
{
	struct asset fresh[N_ASSETS] = { { 0 } };

	for (size_t i = 0; i < N_ASSETS; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", m->o.www_dir, asset_files[i]);
		fresh[i].data = read_file(path, ASSET_MAX, &fresh[i].len);
		if (fresh[i].data == NULL) {
			qb_log(LOG_ERR, "cannot read the console's %s: %s", path, strerror(errno));
			for (size_t j = 0; j < i; j++)
				free(fresh[j].data);
			return -1;
		}
	}
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < N_ASSETS; i++) {
		free(m->assets[i].data);
		m->assets[i] = fresh[i];
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
load_users(struct monitor *m)
{
	char err[CONFIG_ERROR_MAX];
	struct auth_users *u, *old;
	int rc = auth_users_load(m->cfg->monitor.users_file, &u, err, sizeof(err));

	if (rc < 0) {
		qb_log(LOG_ERR, "users: %s", err);
		return rc;
	}
	if (auth_users_count(u) == 0)
		qb_log(LOG_WARNING, "users: %s has no user: nobody can log in "
		       "(maglbctl monitor passwd USER)", m->cfg->monitor.users_file);
	pthread_rwlock_wrlock(&m->users_lock);
	old = m->users;
	m->users = u;
	pthread_rwlock_unlock(&m->users_lock);
	auth_users_free(old);
	qb_log(LOG_INFO, "users: %zu from %s", auth_users_count(u), m->cfg->monitor.users_file);
	return 0;
}

/* ---------------------------------------------------------- collecting */

static int
source_request(void *ctx, enum mon_service svc, const struct wire_ctl_msg *req,
	       struct wire_ctl_msg *resp)
{
	struct monitor *m = ctx;
	int rc;

	if (m->clients[svc] == NULL) {
		rc = ipc_client_connect(m->services[svc], &m->clients[svc]);
		if (rc < 0)
			return rc;
	}
	rc = ipc_client_request(m->clients[svc], req, resp, IPC_TIMEOUT_MS);
	if (rc < 0 && rc != -EMSGSIZE && rc != -EINVAL) {
		/* A late answer would confuse the next request: start afresh. */
		ipc_client_close(m->clients[svc]);
		m->clients[svc] = NULL;
	}
	return rc;
}

static void
collect(struct monitor *m)
{
	const struct mon_source_ops ops = { .request = source_request, .ctx = m };
	struct mon_snapshot *s = mon_snapshot_collect(&ops, real_ms()), *prev;

	if (s == NULL) {
		qb_log(LOG_ERR, "collect: out of memory");
		return;
	}
	for (int i = 0; i < MON_SERVICE_MAX; i++) {
		if (s->up[i] != m->was_up[i])
			qb_log(s->up[i] ? LOG_INFO : LOG_WARNING, "%s: %s", mon_service_names[i],
			       s->up[i] ? "answering" : "not answering");
		m->was_up[i] = s->up[i];
	}
	pthread_mutex_lock(&m->lock);
	prev = m->snap;
	m->snap = s;
	mon_history_add(m->history, prev, s);
	m->stats.collect_errors += s->n_errors;
	pthread_mutex_unlock(&m->lock);
	mon_snapshot_put(prev);
}

static int
on_timer(int fd, int revents, void *arg)
{
	(void)revents;
	if (daemon_timer_fired(fd))
		collect(arg);
	return 0;
}

static struct mon_snapshot *
snapshot(struct monitor *m)
{
	struct mon_snapshot *s;

	pthread_mutex_lock(&m->lock);
	s = mon_snapshot_get(m->snap);
	pthread_mutex_unlock(&m->lock);
	return s;
}

/* ------------------------------------------------------------ answers */

static bool
tls(const struct monitor *m)
{
	return m->cfg->monitor.tls;
}

static void
headers(const struct monitor *m, struct MHD_Response *r, const char *type)
{
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Content-Security-Policy", CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (tls(m))
		MHD_add_response_header(r, "Strict-Transport-Security", HSTS);
}

/*
 * Queue status with body (malloc'd, libmicrohttpd frees it) of type; extra
 * headers name, value pairs, NULL-terminated.
 */
static enum MHD_Result
answer_owned(struct monitor *m, struct MHD_Connection *c, unsigned status, const char *type,
	     char *body, size_t len, const char *const *extra)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body,
								 MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	headers(m, r, type);
	for (size_t i = 0; extra != NULL && extra[i] != NULL; i += 2)
		MHD_add_response_header(r, extra[i], extra[i + 1]);
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* The same with a body of the caller's (copied). */
static enum MHD_Result
answer(struct monitor *m, struct MHD_Connection *c, unsigned status, const char *type,
       const char *body, size_t len, const char *const *extra)
{
	char *copy = malloc(len + 1);

	if (copy == NULL)
		return MHD_NO;
	memcpy(copy, body, len);
	return answer_owned(m, c, status, type, copy, len, extra);
}

static enum MHD_Result
answer_json_error(struct monitor *m, struct MHD_Connection *c, unsigned status,
		  const char *error, const char *const *extra)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (f == NULL)
		return MHD_NO;
	fputs("{\"error\": ", f);
	json_write_string(f, error);
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(body);
		return MHD_NO;
	}
	return answer_owned(m, c, status, "application/json", body, len, extra);
}

static enum MHD_Result
answer_ok(struct monitor *m, struct MHD_Connection *c, const char *const *extra)
{
	static const char ok[] = "{\"ok\": true}\n";

	return answer(m, c, MHD_HTTP_OK, "application/json", ok, sizeof(ok) - 1, extra);
}

static enum MHD_Result
redirect(struct monitor *m, struct MHD_Connection *c, const char *to, const char *cookie)
{
	const char *extra[] = { "Location", to, cookie != NULL ? "Set-Cookie" : NULL, cookie,
				NULL };

	return answer(m, c, MHD_HTTP_SEE_OTHER, "text/plain; charset=utf-8", "", 0, extra);
}

/* ------------------------------------------------------------- who */

struct who {
	struct mon_credentials cred;
	char user[AUTH_NAME_MAX + 1];
	enum auth_role role;
	char session[AUTH_TOKEN_SIZE];
	char csrf[AUTH_TOKEN_SIZE];
	char client[INET6_ADDRSTRLEN];
	bool authorization;             /* came with an Authorization header */
};

static void
client_of(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = i != NULL ? i->client_addr : NULL;

	snprintf(buf, len, "?");
	if (sa != NULL && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
			  buf, (socklen_t)len);
	else if (sa != NULL && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
			  buf, (socklen_t)len);
}

static bool
verify(struct monitor *m, const char *user, const char *password, enum auth_role *role)
{
	int rc;

	pthread_rwlock_rdlock(&m->users_lock);
	rc = auth_users_verify(m->users, user, password, role);
	pthread_rwlock_unlock(&m->users_lock);
	return rc == 0;
}

/* How long client must still wait to try a password (0: go ahead). */
static uint32_t
throttle_wait(struct monitor *m, const char *client)
{
	uint32_t wait_ms;

	pthread_mutex_lock(&m->lock);
	wait_ms = auth_throttle_wait_ms(m->throttle, client, mono_ms());
	if (wait_ms > 0)
		m->stats.logins_throttled++;
	pthread_mutex_unlock(&m->lock);
	return wait_ms;
}

static void
throttle_failed(struct monitor *m, const char *client)
{
	pthread_mutex_lock(&m->lock);
	auth_throttle_failure(m->throttle, client, mono_ms());
	m->stats.auth_failures++;
	pthread_mutex_unlock(&m->lock);
}

/*
 * The session cookie, then HTTP Basic. A wrong password counts toward the
 * client's throttle; a throttled client is not even checked (-EAGAIN).
 */
static int
identify(struct monitor *m, struct MHD_Connection *c, struct who *w)
{
	const char *cookie = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Cookie");
	const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token");
	char *user, *password = NULL;
	int rc = 0;

	client_of(c, w->client, sizeof(w->client));
	w->cred.metrics_auth = m->cfg->monitor.metrics_auth;
	if (cookie != NULL && mon_cookie(cookie, SESSION_COOKIE, w->session, sizeof(w->session))) {
		const struct auth_session *s;

		pthread_mutex_lock(&m->lock);
		s = auth_session_find(m->sessions, w->session, mono_ms());
		if (s != NULL) {
			w->cred.session = true;
			w->role = auth_session_role(s);
			w->cred.csrf_ok = auth_session_csrf_ok(s, token);
			snprintf(w->user, sizeof(w->user), "%s", auth_session_user(s));
			snprintf(w->csrf, sizeof(w->csrf), "%s", auth_session_csrf(s));
		}
		pthread_mutex_unlock(&m->lock);
	}
	w->authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization") != NULL;
	if (w->cred.session || !w->authorization)
		goto out;
	user = MHD_basic_auth_get_username_password(c, &password);
	if (user == NULL) {
		rc = -EINVAL;
	} else {
		enum auth_role role;

		if (throttle_wait(m, w->client) > 0) {
			rc = -EAGAIN;
		} else if (password != NULL && verify(m, user, password, &role)) {
			w->cred.basic = true;
			w->role = role;
			snprintf(w->user, sizeof(w->user), "%s", user);
			pthread_mutex_lock(&m->lock);
			auth_throttle_success(m->throttle, w->client);
			pthread_mutex_unlock(&m->lock);
		} else {
			rc = -EACCES;
			throttle_failed(m, w->client);
			qb_log(LOG_NOTICE, "auth: %s: wrong password for '%.32s' (HTTP Basic)",
			       w->client, user);
		}
		MHD_free(user);
		if (password != NULL) {
			explicit_bzero(password, strlen(password));
			MHD_free(password);
		}
	}
out:
	w->cred.admin = (w->cred.session || w->cred.basic) && w->role == AUTH_ROLE_ADMIN;
	return rc;
}

/* ------------------------------------------------------------ routes */

static enum MHD_Result
serve_asset(struct monitor *m, struct MHD_Connection *c, const struct mon_route_info *r)
{
	enum MHD_Result rc = MHD_NO;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < N_ASSETS; i++)
		if (strcmp(asset_files[i], r->asset) == 0)
			rc = answer(m, c, MHD_HTTP_OK, r->content_type, m->assets[i].data,
				    m->assets[i].len, NULL);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

/* A document written by fn into memory, then sent. */
static enum MHD_Result
serve_written(struct monitor *m, struct MHD_Connection *c, const char *type,
	      int (*fn)(FILE *f, struct monitor *m, const struct who *w), const struct who *w)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	int err;

	if (f == NULL)
		return MHD_NO;
	err = fn(f, m, w);
	if (fclose(f) != 0 || err < 0) {
		free(body);
		return answer_json_error(m, c, MHD_HTTP_SERVICE_UNAVAILABLE,
					 err == -EAGAIN ? "nothing collected yet" :
					 "cannot write the answer", NULL);
	}
	return answer_owned(m, c, MHD_HTTP_OK, type, body, len, NULL);
}

/* /metrics: rendered into a buffer that becomes the answer, not copied. */
static enum MHD_Result
serve_metrics(struct monitor *m, struct MHD_Connection *c)
{
	struct mon_snapshot *s = snapshot(m);
	struct mon_metrics_ctx ctx = {
		.version = MAGLB_VERSION,
		.flows_capacity = m->cfg->flows.capacity,
		.shared_capacity = m->cfg->flows.shared_capacity,
	};
	char *text;
	size_t len;
	int rc;

	if (s == NULL)
		return answer_json_error(m, c, MHD_HTTP_SERVICE_UNAVAILABLE,
					 "nothing collected yet", NULL);
	pthread_mutex_lock(&m->lock);
	ctx.stats = m->stats;
	ctx.sessions = (uint32_t)auth_sessions_count(m->sessions);
	pthread_mutex_unlock(&m->lock);
	rc = mon_metrics_render(s, &ctx, &text, &len);
	mon_snapshot_put(s);
	if (rc < 0)
		return answer_json_error(m, c, MHD_HTTP_SERVICE_UNAVAILABLE,
					 "cannot write the answer", NULL);
	return answer_owned(m, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
			    text, len, NULL);
}

static int
write_state(FILE *f, struct monitor *m, const struct who *w)
{
	struct mon_snapshot *s = snapshot(m);
	struct mon_api_ctx ctx = {
		.node_name = m->node_name,
		.version = MAGLB_VERSION,
		.user = w->user,
		.role = auth_role_names[w->role],
		.csrf = w->cred.session ? w->csrf : NULL,
	};
	int rc;

	if (s == NULL)
		return -EAGAIN;
	rc = mon_api_state(f, s, &ctx);
	mon_snapshot_put(s);
	return rc;
}

static int
write_history(FILE *f, struct monitor *m, const struct who *w)
{
	int rc;

	(void)w;
	pthread_mutex_lock(&m->lock);
	rc = mon_api_history(f, m->history);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

static enum MHD_Result
login(struct monitor *m, struct MHD_Connection *c, const struct request *q, struct who *w)
{
	struct mon_fields fields;
	char err[128], cookie[AUTH_TOKEN_SIZE + 128], id[AUTH_TOKEN_SIZE], csrf[AUTH_TOKEN_SIZE];
	const char *user, *password;
	enum auth_role role;
	uint32_t wait_ms;
	int rc;

	if (mon_fields_form(q->body, q->len, &fields, err, sizeof(err)) < 0) {
		STAT(m, http_refused);
		return answer_json_error(m, c, MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	user = mon_field(&fields, "user");
	password = mon_field(&fields, "password");
	wait_ms = throttle_wait(m, w->client);
	if (wait_ms > 0) {
		qb_log(LOG_NOTICE, "login: %s: throttled for %u ms more", w->client, wait_ms);
		explicit_bzero(&fields, sizeof(fields));
		return redirect(m, c, "/login.html?throttled=1", NULL);
	}
	if (user == NULL || password == NULL || !verify(m, user, password, &role)) {
		throttle_failed(m, w->client);
		qb_log(LOG_NOTICE, "login: %s: wrong user or password for '%.32s'", w->client,
		       user != NULL ? user : "");
		explicit_bzero(&fields, sizeof(fields));
		return redirect(m, c, "/login.html?failed=1", NULL);
	}
	pthread_mutex_lock(&m->lock);
	auth_throttle_success(m->throttle, w->client);
	rc = auth_session_new(m->sessions, user, role, mono_ms(), id, csrf);
	if (rc == 0)
		m->stats.logins++;
	pthread_mutex_unlock(&m->lock);
	if (rc < 0) {
		explicit_bzero(&fields, sizeof(fields));
		return answer_json_error(m, c, MHD_HTTP_SERVICE_UNAVAILABLE, "cannot open a session",
					 NULL);
	}
	qb_log(LOG_NOTICE, "login: %s: user %s (%s)", w->client, user, auth_role_names[role]);
	snprintf(cookie, sizeof(cookie), SESSION_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict%s",
		 id, tls(m) ? "; Secure" : "");
	explicit_bzero(&fields, sizeof(fields));
	explicit_bzero(id, sizeof(id));
	return redirect(m, c, "/", cookie);
}

static enum MHD_Result
logout(struct monitor *m, struct MHD_Connection *c, const struct who *w)
{
	static const char gone[] = SESSION_COOKIE "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict";
	const char *extra[] = { "Set-Cookie", gone, NULL };

	pthread_mutex_lock(&m->lock);
	auth_session_end(m->sessions, w->session);
	pthread_mutex_unlock(&m->lock);
	qb_log(LOG_NOTICE, "logout: %s: user %s", w->client, w->user);
	return answer_ok(m, c, extra);
}

/* One command to svc, as maglbctl sends it: 0, or -errno and why in err. */
static int
command(struct monitor *m, enum mon_service svc, const struct wire_ctl_msg *req,
	char *err, size_t errlen)
{
	struct ipc_client *client;
	struct wire_ctl_msg resp;
	int rc = ipc_client_connect(m->services[svc], &client);

	if (rc == 0) {
		rc = ipc_client_request(client, req, &resp, IPC_TIMEOUT_MS);
		ipc_client_close(client);
	}
	if (rc < 0) {
		ipc_strerror(rc, m->services[svc], err, errlen);
		return rc;
	}
	if (resp.kind == WIRE_CTL_ERROR && resp.error.code != 0) {
		snprintf(err, errlen, "%s", resp.error.message);
		rc = -resp.error.code;
	} else if (resp.kind != WIRE_CTL_ERROR) {
		snprintf(err, errlen, "%s answered %s", mon_service_names[svc],
			 wire_ctl_kind_names[resp.kind]);
		rc = -EPROTO;
	}
	wire_ctl_msg_free(&resp);
	return rc;
}

/* An admin's change: carried out, logged with the user, an event. */
static enum MHD_Result
act(struct monitor *m, struct MHD_Connection *c, const struct who *w, enum mon_service svc,
    const struct wire_ctl_msg *req, const char *what)
{
	char err[WIRE_TEXT_MAX];
	int rc = command(m, svc, req, err, sizeof(err));

	if (rc < 0) {
		qb_log(LOG_WARNING, "user %s (%s): %s: refused: %s", w->user, w->client, what, err);
		return answer_json_error(m, c, rc == -ENOENT ? MHD_HTTP_NOT_FOUND :
					 rc == -ERANGE || rc == -EINVAL ? MHD_HTTP_BAD_REQUEST :
					 MHD_HTTP_BAD_GATEWAY, err, NULL);
	}
	qb_log(LOG_NOTICE, "user %s (%s): %s", w->user, w->client, what);
	pthread_mutex_lock(&m->lock);
	m->stats.admin_actions++;
	mon_history_event(m->history, real_ms(), MON_EVENT_ADMIN, "%s: %s", w->user, what);
	pthread_mutex_unlock(&m->lock);
	return answer_ok(m, c, NULL);
}

static enum MHD_Result
backend(struct monitor *m, struct MHD_Connection *c, const struct request *q,
	const struct who *w)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_BACKEND_SET };
	struct wire_ctl_backend_set *b = &req.backend_set;
	struct mon_snapshot *s;
	struct mon_fields fields;
	char err[256], what[256], addr[INET6_ADDRSTRLEN];
	int rc = mon_fields_json(q->body, q->len, &fields, err, sizeof(err));

	if (rc == 0) {
		s = snapshot(m);
		rc = mon_backend_action(&fields, s != NULL && s->has_vips ? &s->vips : NULL, b,
					err, sizeof(err));
		mon_snapshot_put(s);
		if (rc == -ENOENT)
			snprintf(err, sizeof(err), "VIP '%.64s' has no backend %.64s",
				 mon_field(&fields, "vip"), mon_field(&fields, "backend"));
	}
	if (rc < 0) {
		STAT(m, http_refused);
		return answer_json_error(m, c, rc == -ENOENT ? MHD_HTTP_NOT_FOUND :
					 MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	inet_ntop(b->family, b->backend, addr, sizeof(addr));
	if (b->action == WIRE_BACKEND_DRAIN)
		snprintf(what, sizeof(what), "backend drain %s %s", b->vip, addr);
	else
		snprintf(what, sizeof(what), "backend set-weight %s %s %u", b->vip, addr, b->weight);
	return act(m, c, w, MON_DATAPLANE, &req, what);
}

static enum MHD_Result
standby(struct monitor *m, struct MHD_Connection *c, const struct request *q,
	const struct who *w)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_CLUSTER_STANDBY };
	struct mon_fields fields;
	char err[256];
	int rc = mon_fields_json(q->body, q->len, &fields, err, sizeof(err));

	if (rc == 0)
		rc = mon_standby_action(&fields, &req.cluster_standby.on, err, sizeof(err));
	if (rc < 0) {
		STAT(m, http_refused);
		return answer_json_error(m, c, MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	return act(m, c, w, MON_SYNCD, &req, req.cluster_standby.on ? "cluster standby on" :
		   "cluster standby off");
}

/* 401: Basic's challenge for scripts; a browser with a cookie gets none,
 * so that fetch() does not open the browser's password dialog. */
static enum MHD_Result
unauthorized(struct monitor *m, struct MHD_Connection *c, const struct who *w, int rc)
{
	const char *extra[] = { "WWW-Authenticate", "Basic realm=\"maglb\", charset=\"UTF-8\"",
				NULL };
	bool cookie = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Cookie") != NULL;

	if (rc == 0 && !w->authorization)
		STAT(m, auth_missing);
	return answer_json_error(m, c, MHD_HTTP_UNAUTHORIZED,
				 rc == -EAGAIN ? "too many failed attempts: wait" :
				 rc == -EACCES ? "wrong user or password" :
				 rc == -EINVAL ? "malformed credentials" : "log in first",
				 cookie && !w->authorization ? NULL : extra);
}

static enum MHD_Result
dispatch(struct monitor *m, struct MHD_Connection *c, const char *method, const char *url,
	 const struct request *q)
{
	struct mon_route_info r;
	struct who w = { .role = AUTH_ROLE_VIEWER };
	int rc;

	mon_route(method, url, &r);
	if (r.route == MON_ROUTE_NOT_FOUND)
		return answer_json_error(m, c, MHD_HTTP_NOT_FOUND, "no such page", NULL);
	if (r.route == MON_ROUTE_BAD_METHOD) {
		const char *extra[] = { "Allow", r.allow, NULL };

		STAT(m, http_refused);
		return answer_json_error(m, c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
					 extra);
	}
	if (q != NULL && q->too_big) {
		STAT(m, http_refused);
		return answer_json_error(m, c, MHD_HTTP_CONTENT_TOO_LARGE, "body too large", NULL);
	}
	rc = identify(m, c, &w);
	switch (mon_authorize(&r, &w.cred)) {
	case MON_ALLOW:
		break;
	case MON_LOGIN_PAGE:
		return redirect(m, c, "/login.html", NULL);
	case MON_UNAUTHORIZED:
		return unauthorized(m, c, &w, rc);
	case MON_CSRF:
		STAT(m, csrf_refused);
		qb_log(LOG_WARNING, "user %s (%s): %s %s without the session's CSRF token: refused",
		       w.user, w.client, method, url);
		return answer_json_error(m, c, MHD_HTTP_FORBIDDEN, "missing or wrong X-CSRF-Token",
					 NULL);
	case MON_FORBIDDEN:
	default:
		STAT(m, forbidden);
		qb_log(LOG_WARNING, "user %s (%s, viewer): %s %s: refused", w.user, w.client,
		       method, url);
		return answer_json_error(m, c, MHD_HTTP_FORBIDDEN, "viewers change nothing", NULL);
	}
	switch (r.route) {
	case MON_ROUTE_ASSET:
		return serve_asset(m, c, &r);
	case MON_ROUTE_METRICS:
		return serve_metrics(m, c);
	case MON_ROUTE_STATE:
		return serve_written(m, c, "application/json", write_state, &w);
	case MON_ROUTE_HISTORY:
		return serve_written(m, c, "application/json", write_history, &w);
	case MON_ROUTE_LOGIN:
		return login(m, c, q, &w);
	case MON_ROUTE_LOGOUT:
		return logout(m, c, &w);
	case MON_ROUTE_BACKEND:
		return backend(m, c, q, &w);
	case MON_ROUTE_STANDBY:
		return standby(m, c, q, &w);
	default:
		return answer_json_error(m, c, MHD_HTTP_NOT_FOUND, "no such page", NULL);
	}
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
	   const char *version, const char *upload_data, size_t *upload_data_size,
	   void **con_cls)
{
	struct monitor *m = cls;
	struct request *q = *con_cls;

	(void)version;
	if (q == NULL) {
		const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
								 "Content-Length");

		q = calloc(1, sizeof(*q));
		if (q == NULL)
			return MHD_NO;
		*con_cls = q;
		STAT(m, http_requests);
		if (length != NULL && strtoull(length, NULL, 10) > MON_BODY_MAX)
			q->too_big = true;
		if (!q->too_big)
			return MHD_YES;     /* the body, if any, comes next */
		q->answered = true;
		return dispatch(m, c, method, url, q);
	}
	if (q->answered) {
		*upload_data_size = 0;      /* the rest of a refused body is dropped */
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		/* A body without its length: refused once it ends (libmicrohttpd
		 * takes an answer only then), what comes past the limit dropped. */
		if (q->too_big || q->len + *upload_data_size > MON_BODY_MAX) {
			q->too_big = true;
			*upload_data_size = 0;
			return MHD_YES;
		}
		memcpy(q->body + q->len, upload_data, *upload_data_size);
		q->len += *upload_data_size;
		*upload_data_size = 0;
		return MHD_YES;
	}
	return dispatch(m, c, method, url, q);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
	     enum MHD_RequestTerminationCode toe)
{
	struct request *q = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (q != NULL)
		explicit_bzero(q, sizeof(*q));
	free(q);
	*con_cls = NULL;
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	qb_log(LOG_INFO, "http: %s", line);
}

/* ----------------------------------------------------------- lifecycle */

static struct MHD_Daemon *
listen_on(struct monitor *m, const struct config_listen *l, unsigned connections)
{
	const struct config_monitor *mc = &m->cfg->monitor;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	struct sockaddr_storage ss = { 0 };
	unsigned per_ip = connections < CONNECTIONS_PER_CLIENT ? connections :
			  CONNECTIONS_PER_CLIENT;
	char buf[INET6_ADDRSTRLEN];
	struct MHD_Daemon *d;

	if (l->addr.family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(l->port);
		sin->sin_addr = l->addr.v4;
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(l->port);
		sin6->sin6_addr = l->addr.v6;
		flags |= MHD_USE_IPv6;
	}
	if (mc->tls)
		flags |= MHD_USE_TLS;
	d = MHD_start_daemon(flags, l->port, NULL, NULL, on_request, m,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, m,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)THREADS_PER_LISTENER,
		MHD_OPTION_CONNECTION_LIMIT, connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)mc->timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, m,
		MHD_OPTION_LISTENING_ADDRESS_REUSE, 1,
		/* Without TLS the options end here. */
		mc->tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, m->tls_cert,
		MHD_OPTION_HTTPS_MEM_KEY, m->tls_key,
		MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES,
		MHD_OPTION_END);
	config_addr_str(&l->addr, buf, sizeof(buf));
	if (d == NULL)
		qb_log(LOG_ERR, "cannot listen on %s port %u (%s)", buf, l->port,
		       mc->tls ? "HTTPS" : "HTTP");
	else if (mc->tls)
		qb_log(LOG_INFO, "listening on %s port %u (HTTPS)", buf, l->port);
	else
		qb_log(LOG_NOTICE, "listening on %s port %u: plain HTTP, loopback only "
		       "(tls = false)", buf, l->port);
	return d;
}

static int
load_tls(struct monitor *m)
{
	const struct config_monitor *mc = &m->cfg->monitor;
	size_t len;

	if (!mc->tls)
		return 0;
	m->tls_cert = read_file(mc->tls_cert, PEM_MAX, &len);
	if (m->tls_cert == NULL) {
		qb_log(LOG_ERR, "tls_cert %s: %s", mc->tls_cert, strerror(errno));
		return -1;
	}
	m->tls_key = read_file(mc->tls_key, PEM_MAX, &m->tls_key_len);
	if (m->tls_key == NULL) {
		qb_log(LOG_ERR, "tls_key %s: %s", mc->tls_key, strerror(errno));
		return -1;
	}
	return 0;
}

struct monitor *
monitor_create(qb_loop_t *loop, const struct monitor_options *o)
{
	struct monitor *m = calloc(1, sizeof(*m));
	char err[CONFIG_ERROR_MAX];
	unsigned per_listener;

	if (m == NULL)
		return NULL;
	m->loop = loop;
	m->o = *o;
	m->timer_fd = -1;
	m->services[MON_DATAPLANE] = o->dataplane_service;
	m->services[MON_SYNCD] = o->syncd_service;
	pthread_mutex_init(&m->lock, NULL);
	pthread_rwlock_init(&m->users_lock, NULL);
	if (o->node_name != NULL)
		snprintf(m->node_name, sizeof(m->node_name), "%s", o->node_name);
	else if (gethostname(m->node_name, sizeof(m->node_name) - 1) != 0)
		snprintf(m->node_name, sizeof(m->node_name), "?");
	m->cfg = config_load(o->config, err, sizeof(err));
	if (m->cfg == NULL) {
		qb_log(LOG_ERR, "%s", err);
		goto fail;
	}
	if (!m->cfg->monitor.present) {
		qb_log(LOG_ERR, "%s: no monitor section: nothing to serve", o->config);
		goto fail;
	}
	m->history = mon_history_create();
	m->sessions = auth_sessions_create(&auth_random_getrandom, AUTH_SESSION_IDLE_MS,
					   AUTH_SESSION_LIFETIME_MS, AUTH_SESSIONS_MAX);
	m->throttle = auth_throttle_create(AUTH_THROTTLE_CLIENTS);
	if (m->history == NULL || m->sessions == NULL || m->throttle == NULL)
		goto fail;
	if (load_users(m) < 0 || load_assets(m) < 0 || load_tls(m) < 0)
		goto fail;
	collect(m);
	m->timer_fd = daemon_timer_create(loop, QB_LOOP_MED, MON_COLLECT_INTERVAL_MS, on_timer, m);
	if (m->timer_fd < 0) {
		qb_log(LOG_ERR, "cannot set up the collection timer: %s", strerror(-m->timer_fd));
		goto fail;
	}
	per_listener = m->cfg->monitor.max_connections / m->cfg->monitor.n_listen;
	for (uint32_t i = 0; i < m->cfg->monitor.n_listen; i++) {
		m->daemons[i] = listen_on(m, &m->cfg->monitor.listen[i],
					  per_listener > 0 ? per_listener : 1);
		if (m->daemons[i] == NULL)
			goto fail;
	}
	return m;
fail:
	monitor_destroy(m);
	return NULL;
}

void
monitor_reload(struct monitor *m)
{
	/* Listeners and TLS stay as started: a restart changes them. */
	if (load_users(m) == 0 && load_assets(m) == 0)
		qb_log(LOG_INFO, "reloaded the users and the console's files");
}

void
monitor_destroy(struct monitor *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < CONFIG_MONITOR_LISTEN_MAX; i++)
		if (m->daemons[i] != NULL)
			MHD_stop_daemon(m->daemons[i]);
	daemon_timer_destroy(m->loop, m->timer_fd);
	for (int i = 0; i < MON_SERVICE_MAX; i++)
		ipc_client_close(m->clients[i]);
	mon_snapshot_put(m->snap);
	mon_history_free(m->history);
	auth_users_free(m->users);
	auth_sessions_free(m->sessions);
	auth_throttle_free(m->throttle);
	for (size_t i = 0; i < N_ASSETS; i++)
		free(m->assets[i].data);
	free(m->tls_cert);
	if (m->tls_key != NULL)
		explicit_bzero(m->tls_key, m->tls_key_len);
	free(m->tls_key);
	config_free(m->cfg);
	pthread_rwlock_destroy(&m->users_lock);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
