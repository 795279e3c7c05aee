/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A local IPC endpoint: libqb shared-memory IPC on a qb_loop. See
 * ipc_server.h, and ipc.h for the contract.
 *
 * A request goes: libqb header check -> copy out of the shared ring (the
 * client could rewrite the ring while we decode) -> wire_ctl_decode() ->
 * request kind check -> handler -> wire_ctl_encode() -> one response. Any
 * step that fails answers WIRE_CTL_ERROR and bumps one counter; nothing is
 * logged per message.
 */
#include "lib/ipc_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qb/qbipcs.h>
#include <qb/qblog.h>

const char *const ipc_counter_names[IPC_COUNTER_MAX] = {
#define IPC_COUNTER_NAME_(id, name, text) [IPC_COUNTER_##id] = #name,
	IPC_SERVER_COUNTERS(IPC_COUNTER_NAME_)
#undef IPC_COUNTER_NAME_
};

const char *const ipc_counter_descriptions[IPC_COUNTER_MAX] = {
#define IPC_COUNTER_TEXT_(id, name, text) [IPC_COUNTER_##id] = text,
	IPC_SERVER_COUNTERS(IPC_COUNTER_TEXT_)
#undef IPC_COUNTER_TEXT_
};

/* One client connection; qb_ipcs_context of its libqb connection. */
struct ipc_conn {
	uint64_t id;
	qb_ipcs_connection_t *qb;
	struct ipc_server *server;
	struct ipc_conn *prev, *next;  /* on server->conns while open */
	bool open;
};

struct ipc_server {
	qb_ipcs_service_t *service;
	char name[WIRE_NAME_MAX];
	gid_t group;
	struct ipc_handlers h;
	void *ctx;
	struct ipc_conn *conns;
	unsigned n_conns;
	uint64_t next_id;
	struct ipc_server_counters counters;
	uint8_t *rx;   /* IPC_REQUEST_PAYLOAD_MAX: a request copied out */
	uint8_t *tx;   /* IPC_MSG_MAX: response header + encoded reply */
};

/*
 * libqb's poll callbacks carry no context, so the loop they act on is the
 * process's one IPC loop, set by the first ipc_server_create() and cleared
 * by the last destroy.
 */
static pthread_mutex_t ipc_loop_lock = PTHREAD_MUTEX_INITIALIZER;
static qb_loop_t *ipc_loop;
static unsigned ipc_loop_users;

static int32_t
ipc_poll_job_add(enum qb_loop_priority p, void *data,
		 qb_loop_job_dispatch_fn fn)
{
	return qb_loop_job_add(ipc_loop, p, data, fn);
}

static int32_t
ipc_poll_add(enum qb_loop_priority p, int32_t fd, int32_t events, void *data,
	     qb_ipcs_dispatch_fn_t fn)
{
	return qb_loop_poll_add(ipc_loop, p, fd, events, data, fn);
}

static int32_t
ipc_poll_mod(enum qb_loop_priority p, int32_t fd, int32_t events, void *data,
	     qb_ipcs_dispatch_fn_t fn)
{
	return qb_loop_poll_mod(ipc_loop, p, fd, events, data, fn);
}

static int32_t
ipc_poll_del(int32_t fd)
{
	return qb_loop_poll_del(ipc_loop, fd);
}

static int
ipc_loop_get(qb_loop_t *loop)
{
	int rc = 0;

	pthread_mutex_lock(&ipc_loop_lock);
	if (ipc_loop_users > 0 && ipc_loop != loop)
		rc = -EBUSY;
	else {
		ipc_loop = loop;
		ipc_loop_users++;
	}
	pthread_mutex_unlock(&ipc_loop_lock);
	return rc;
}

static void
ipc_loop_put(void)
{
	pthread_mutex_lock(&ipc_loop_lock);
	if (--ipc_loop_users == 0)
		ipc_loop = NULL;
	pthread_mutex_unlock(&ipc_loop_lock);
}

/* ------------------------------------------------------------- access */

/* True if the process pid has gid among its supplementary groups. */
static bool
ipc_pid_has_group(pid_t pid, gid_t gid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		char *p, *end;

		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (p = line + 7;; p = end) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			if ((gid_t)g == gid) {
				found = true;
				break;
			}
		}
		break;
	}
	free(line);
	fclose(f);
	return found;
}

/*
 * Credentials first; then the connection's struct, so that a failure here
 * is a clean refusal (libqb calls destroyed() for it, never created()).
 */
static int32_t
ipc_on_accept(qb_ipcs_connection_t *c, uid_t uid, gid_t gid)
{
	struct ipc_server *s = qb_ipcs_connection_service_context_get(c);
	struct qb_ipcs_connection_stats st = { 0 };
	struct ipc_conn *conn;
	bool member = false;

	if (s == NULL)
		return -ESHUTDOWN;  /* ipc_server_destroy() under way */
	qb_ipcs_connection_stats_get(c, &st, 0);
	if (uid != 0 && s->group != (gid_t)-1)
		member = gid == s->group || ipc_pid_has_group(st.client_pid,
							     s->group);
	if (uid != 0 && !member) {
		s->counters.counts[IPC_COUNTER_REFUSED]++;
		qb_log(LOG_NOTICE, "ipc %s: refused pid=%d uid=%u gid=%u: "
		       "neither root nor in group %ld", s->name,
		       (int)st.client_pid, (unsigned)uid, (unsigned)gid,
		       s->group == (gid_t)-1 ? -1L : (long)s->group);
		return -EACCES;
	}
	conn = calloc(1, sizeof(*conn));
	if (conn == NULL) {
		qb_log(LOG_ERR, "ipc %s: no memory for a connection", s->name);
		return -ENOMEM;
	}
	conn->qb = c;
	conn->server = s;
	qb_ipcs_context_set(c, conn);
	if (s->group == (gid_t)-1)
		qb_ipcs_connection_auth_set(c, 0, 0, 0600);
	else
		qb_ipcs_connection_auth_set(c, 0, s->group, 0660);
	return 0;
}

/* ---------------------------------------------------------- connections */

static void
ipc_conn_close(struct ipc_conn *conn)
{
	struct ipc_server *s = conn->server;

	if (!conn->open)
		return;
	conn->open = false;
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		s->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	conn->prev = conn->next = NULL;
	s->n_conns--;
	if (s->h.disconnected != NULL)
		s->h.disconnected(s->ctx, conn->id);
}

/* The connection is up: give it its id and list it. */
static void
ipc_on_created(qb_ipcs_connection_t *c)
{
	struct ipc_conn *conn = qb_ipcs_context_get(c);
	struct ipc_server *s;

	if (conn == NULL)
		return;
	s = conn->server;
	conn->id = ++s->next_id;
	conn->open = true;
	conn->next = s->conns;
	if (s->conns != NULL)
		s->conns->prev = conn;
	s->conns = conn;
	s->n_conns++;
	s->counters.counts[IPC_COUNTER_ACCEPTED]++;
	qb_ipcs_context_set(c, conn);
}

static int32_t
ipc_on_closed(qb_ipcs_connection_t *c)
{
	struct ipc_conn *conn = qb_ipcs_context_get(c);

	if (conn != NULL)
		ipc_conn_close(conn);
	return 0;
}

static void
ipc_on_destroyed(qb_ipcs_connection_t *c)
{
	struct ipc_conn *conn = qb_ipcs_context_get(c);

	if (conn == NULL)
		return;
	ipc_conn_close(conn);
	qb_ipcs_context_set(c, NULL);
	free(conn);
}

static struct ipc_conn *
ipc_conn_find(const struct ipc_server *s, uint64_t id)
{
	for (struct ipc_conn *conn = s->conns; conn != NULL; conn = conn->next)
		if (conn->id == id)
			return conn;
	return NULL;
}

/* ------------------------------------------------------------- messages */

static ssize_t
ipc_frame_error(struct ipc_server *s, uint64_t request_id, int code,
		const char *text)
{
	struct wire_ctl_msg m = {
		.kind = WIRE_CTL_ERROR,
		.request_id = request_id,
		.error.code = code,
	};

	snprintf(m.error.message, sizeof(m.error.message), "%s", text);
	return ipc_frame(IPC_RESPONSE, &m, s->tx);
}

/* The description of the one wire counter that moved since before. */
static const char *
ipc_wire_reason(const struct wire_counters *before,
		const struct wire_counters *after)
{
	for (int i = 0; i < WIRE_DROP_MAX; i++)
		if (after->drops[i] != before->drops[i])
			return wire_drop_descriptions[i];
	return "undecodable";
}

/* Run the handler on a decoded request and frame its answer. */
static ssize_t
ipc_answer(struct ipc_server *s, struct ipc_conn *conn,
	   const struct wire_ctl_msg *req)
{
	struct wire_ctl_msg resp = { .kind = WIRE_CTL_ERROR };
	char errmsg[WIRE_TEXT_MAX] = "";
	enum wire_ctl_kind kind;
	ssize_t n;
	int rc;

	s->counters.counts[IPC_COUNTER_REQUESTS]++;
	rc = s->h.request(s->ctx, conn->id, req, &resp, errmsg, sizeof(errmsg));
	if (rc < 0) {
		s->counters.counts[IPC_COUNTER_HANDLER_ERRORS]++;
		n = ipc_frame_error(s, req->request_id, -rc,
				    errmsg[0] != '\0' ? errmsg : strerror(-rc));
	} else {
		resp.version = WIRE_VERSION;
		resp.request_id = req->request_id;
		n = ipc_frame(IPC_RESPONSE, &resp, s->tx);
	}
	kind = resp.kind < WIRE_CTL_KIND_MAX ? resp.kind : WIRE_CTL_ERROR;
	if (s->h.release != NULL)
		s->h.release(s->ctx, &resp);
	if (n == -EMSGSIZE) {
		s->counters.counts[IPC_COUNTER_RESPONSE_TOO_BIG]++;
		snprintf(errmsg, sizeof(errmsg), "%s exceeds the IPC message "
			 "limit of %d bytes", wire_ctl_kind_names[kind],
			 IPC_MSG_MAX);
		n = ipc_frame_error(s, req->request_id, EMSGSIZE, errmsg);
	} else if (n < 0) {
		s->counters.counts[IPC_COUNTER_RESPONSE_INVALID]++;
		snprintf(errmsg, sizeof(errmsg), "%s built an invalid %s",
			 s->name, wire_ctl_kind_names[kind]);
		n = ipc_frame_error(s, req->request_id, EPROTO, errmsg);
	}
	return n;
}

/* Check, decode and answer one request (header + wire bytes, size bytes). */
static ssize_t
ipc_process(struct ipc_server *s, struct ipc_conn *conn, const void *data,
	    size_t size)
{
	struct wire_counters before = s->counters.wire;
	ssize_t len = ipc_frame_check(IPC_REQUEST, data, size);
	struct wire_ctl_msg req;
	char text[WIRE_TEXT_MAX];
	ssize_t n;
	int rc;

	if (len < 0) {
		s->counters.counts[IPC_COUNTER_BAD_HEADER]++;
		return ipc_frame_error(s, 0, EBADMSG, "bad libqb header: "
				       "unknown id or size out of bounds");
	}
	memcpy(s->rx, (const uint8_t *)data + ipc_header_len(IPC_REQUEST),
	       (size_t)len);
	rc = wire_ctl_decode(s->rx, (size_t)len, &req, &s->counters.wire);
	if (rc < 0) {
		s->counters.counts[IPC_COUNTER_BAD_REQUEST]++;
		snprintf(text, sizeof(text), "bad request: %s",
			 ipc_wire_reason(&before, &s->counters.wire));
		return ipc_frame_error(s, 0, -rc, text);
	}
	if (!wire_ctl_kind_is_request(req.kind)) {
		s->counters.counts[IPC_COUNTER_NOT_A_REQUEST]++;
		snprintf(text, sizeof(text), "%s is not a request",
			 wire_ctl_kind_names[req.kind]);
		n = ipc_frame_error(s, req.request_id, EBADRQC, text);
	} else {
		n = ipc_answer(s, conn, &req);
	}
	wire_ctl_msg_free(&req);
	return n;
}

static int32_t
ipc_on_msg(qb_ipcs_connection_t *c, void *data, size_t size)
{
	struct ipc_conn *conn = qb_ipcs_context_get(c);
	struct ipc_server *s;
	ssize_t n, sent;

	if (conn == NULL || !conn->open)
		return 0;
	s = conn->server;
	n = ipc_process(s, conn, data, size);
	if (n < 0) {
		/* only an error reply that cannot encode: a bug */
		s->counters.counts[IPC_COUNTER_RESPONSE_LOST]++;
		return 0;
	}
	sent = qb_ipcs_response_send(c, s->tx, (size_t)n);
	if (sent != n)
		s->counters.counts[IPC_COUNTER_RESPONSE_LOST]++;
	return 0;
}

/* ------------------------------------------------------- stale files */

/* Whether process pid is gone (kill(0) also finds another user's). */
static bool
ipc_pid_dead(long pid)
{
	return pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) < 0 &&
	       errno == ESRCH;
}

/*
 * Remove one connection's directory dir (under shm, a descriptor of
 * /dev/shm) if it holds service's rings: the six files libqb names
 * qb-{request,response,event}-SERVICE-{header,data}. Returns the files
 * removed.
 */
static unsigned
ipc_stale_remove(int shm, const char *dir, const char *service)
{
	static const char *const rings[] = { "request", "response", "event" };
	static const char *const parts[] = { "header", "data" };
	char name[NAME_MAX + 1];
	unsigned n = 0;
	int fd = openat(shm, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	snprintf(name, sizeof(name), "qb-request-%s-header", service);
	if (faccessat(fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		for (size_t r = 0; r < 3; r++) {
			for (size_t p = 0; p < 2; p++) {
				snprintf(name, sizeof(name), "qb-%s-%s-%s", rings[r],
					 service, parts[p]);
				n += unlinkat(fd, name, 0) == 0;
			}
		}
		(void)unlinkat(shm, dir, AT_REMOVEDIR);  /* unless others remain */
	}
	close(fd);
	return n;
}

/*
 * libqb puts each connection's rings in /dev/shm/qb-SPID-CPID-FD-XXXXXX/
 * (SPID the server, CPID the client) and removes them when either end
 * closes; when both die by SIGKILL they stay. Remove those of service whose
 * server is gone; a client still alive keeps its mapping and finds them
 * gone at its disconnect, which libqb tolerates. Returns the files removed.
 */
static unsigned
ipc_stale_clean(const char *service)
{
	DIR *d = opendir("/dev/shm");
	unsigned files = 0, dirs = 0;
	struct dirent *e;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		long spid, cpid;
		int fdno, end = 0;
		unsigned n;

		if (sscanf(e->d_name, "qb-%ld-%ld-%d-%*6[A-Za-z0-9]%n", &spid,
			   &cpid, &fdno, &end) != 3 || e->d_name[end] != '\0' ||
		    !ipc_pid_dead(spid))
			continue;
		n = ipc_stale_remove(dirfd(d), e->d_name, service);
		files += n;
		dirs += n > 0;
	}
	closedir(d);
	if (files > 0)
		qb_log(LOG_NOTICE, "ipc %s: removed %u stale shared-memory file(s) "
		       "of %u connection(s) whose server died", service, files,
		       dirs);
	return files;
}

/* -------------------------------------------------------------- server */

struct ipc_server *
ipc_server_create(qb_loop_t *loop, const char *service, gid_t group,
		  const struct ipc_handlers *h, void *ctx)
{
	struct qb_ipcs_service_handlers qh = {
		.connection_accept = ipc_on_accept,
		.connection_created = ipc_on_created,
		.msg_process = ipc_on_msg,
		.connection_closed = ipc_on_closed,
		.connection_destroyed = ipc_on_destroyed,
	};
	struct qb_ipcs_poll_handlers ph = {
		.job_add = ipc_poll_job_add,
		.dispatch_add = ipc_poll_add,
		.dispatch_mod = ipc_poll_mod,
		.dispatch_del = ipc_poll_del,
	};
	struct ipc_server *s;
	int rc;

	if (loop == NULL || service == NULL || h == NULL || h->request == NULL ||
	    strlen(service) >= sizeof(s->name)) {
		qb_log(LOG_ERR, "ipc: bad arguments to ipc_server_create");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto fail_alloc;
	s->rx = malloc(IPC_REQUEST_PAYLOAD_MAX);
	s->tx = malloc(IPC_MSG_MAX);
	if (s->rx == NULL || s->tx == NULL)
		goto fail_alloc;
	snprintf(s->name, sizeof(s->name), "%s", service);
	s->group = group;
	s->h = *h;
	s->ctx = ctx;
	if (ipc_loop_get(loop) < 0) {
		qb_log(LOG_ERR, "ipc %s: another qb_loop already hosts this "
		       "process's IPC servers", service);
		goto fail_free;
	}
	s->counters.counts[IPC_COUNTER_STALE_FILES] = ipc_stale_clean(service);
	s->service = qb_ipcs_create(service, 0, QB_IPC_SHM, &qh);
	if (s->service == NULL) {
		qb_log(LOG_ERR, "ipc %s: qb_ipcs_create: %s", service,
		       strerror(errno));
		goto fail_loop;
	}
	qb_ipcs_service_context_set(s->service, s);
	qb_ipcs_poll_handlers_set(s->service, &ph);
	qb_ipcs_enforce_buffer_size(s->service, IPC_MSG_MAX);
	rc = qb_ipcs_run(s->service);
	if (rc < 0) {
		/* a failed qb_ipcs_run() has released the service */
		qb_log(LOG_ERR, "ipc %s: cannot publish the service: %s%s",
		       service, strerror(-rc), rc == -EADDRINUSE ?
		       " (is another server of it running?)" : "");
		goto fail_loop;
	}
	qb_log(LOG_INFO, "ipc %s: serving, group %ld", service,
	       group == (gid_t)-1 ? -1L : (long)group);
	return s;

fail_loop:
	ipc_loop_put();
	goto fail_free;
fail_alloc:
	qb_log(LOG_ERR, "ipc %s: out of memory", service);
fail_free:
	if (s != NULL) {
		free(s->rx);
		free(s->tx);
	}
	free(s);
	return NULL;
}

void
ipc_server_destroy(struct ipc_server *s)
{
	if (s == NULL)
		return;
	/* no accept() may reach s from now on */
	qb_ipcs_service_context_set(s->service, NULL);
	qb_ipcs_destroy(s->service);
	/*
	 * Connections libqb has not released yet (it holds references of its
	 * own) lose their context; each was closed above.
	 */
	while (s->conns != NULL) {
		struct ipc_conn *conn = s->conns;

		ipc_conn_close(conn);
		qb_ipcs_context_set(conn->qb, NULL);
		free(conn);
	}
	ipc_loop_put();
	free(s->rx);
	free(s->tx);
	free(s);
}

int
ipc_server_send_event(struct ipc_server *s, uint64_t conn_id,
		      const struct wire_ctl_msg *m)
{
	struct ipc_conn *conn = ipc_conn_find(s, conn_id);
	struct qb_ipcs_connection_stats before, after;
	struct wire_ctl_msg copy;
	ssize_t n, sent;

	if (conn == NULL)
		return -ENOENT;
	copy = *m;
	copy.version = WIRE_VERSION;
	n = ipc_frame(IPC_RESPONSE, &copy, s->tx);
	if (n < 0)
		return (int)n;
	qb_ipcs_connection_stats_get(conn->qb, &before, QB_FALSE);
	sent = qb_ipcs_event_send(conn->qb, s->tx, (size_t)n);
	qb_ipcs_connection_stats_get(conn->qb, &after, QB_FALSE);
	/*
	 * libqb answers an error when the event went into the ring but the
	 * client's wake-up did not go (other than EAGAIN): the client reads
	 * it at its next wake-up, so it is sent, not lost. Its count of
	 * events moves only when the ring took one.
	 */
	if (sent == n || after.events != before.events) {
		s->counters.counts[IPC_COUNTER_EVENTS]++;
		return 0;
	}
	s->counters.counts[IPC_COUNTER_EVENT_DROPS]++;
	if (sent == -EAGAIN || sent == -ETIMEDOUT || sent == -ENOBUFS)
		return -EAGAIN;
	return sent < 0 ? -ENOTCONN : -EIO;
}

unsigned
ipc_server_connections(const struct ipc_server *s)
{
	return s->n_conns;
}

const struct ipc_server_counters *
ipc_server_counters(const struct ipc_server *s)
{
	return &s->counters;
}
