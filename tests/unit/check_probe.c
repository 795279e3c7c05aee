/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The health-probe engine against real sockets on the loopback: listeners
 * the tests open and close, and a small HTTP server that answers from a
 * script, driven from the same poll() loop as the engine. The loop waits
 * for the engine's descriptor or a server socket, calls probe_dispatch()
 * when the engine's is readable, and stops at a condition or a deadline.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "membership/probe.h"

enum {
	WAIT_MS = 4000,             /* the longest any condition may take */
	SLACK_MS = 150,             /* late timers on a loaded machine */
	SERVERS_MAX = 12,
	CONNS_MAX = 32,
	CHANGES_MAX = 32,
	REQUEST_MAX = 512,
};

/* ------------------------------------------------------------- servers */

/*
 * A listener. Without answers, it accepts and closes (a TCP port that is
 * up). With them, it reads each request and answers connection i with
 * answers[i] (past the end: the entries from `repeat` on, in a cycle);
 * an answer NULL says nothing, "" closes at once. dribble: one byte per
 * dispatch of the engine, so that the engine's reads come in pieces.
 */
struct server {
	int fd;
	uint16_t port;
	const char *const *answers;
	size_t n_answers;
	size_t repeat;
	bool dribble;
	size_t accepted;
	char request[REQUEST_MAX];  /* the last one read */
};

struct conn {
	int fd;                     /* -1: free */
	struct server *srv;
	size_t index;               /* the server's count of connections before it */
	char req[REQUEST_MAX];
	size_t got;
	const char *answer;         /* once the request is in */
	size_t sent;
	unsigned long dispatch;     /* the engine's dispatch count at the last byte */
};

struct changes {
	unsigned n;
	uint32_t id[CHANGES_MAX];
	bool up[CHANGES_MAX];
	uint64_t at_ms[CHANGES_MAX];
	struct probe_stats stats[CHANGES_MAX]; /* as changed() saw them */
	int reload_rc;              /* of a probe_set_targets() from changed() */
};

struct ctx {
	struct probe *p;
	struct changes ch;
	struct server *srv[SERVERS_MAX];
	size_t n_srv;
	struct conn conn[CONNS_MAX];
	unsigned long dispatches;
	uint64_t dispatch_max_ns;
	/* what the conditions wait for */
	uint32_t want_id;
	uint64_t want_probes;
	unsigned want_changes;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
now_ms(void)
{
	return now_ns() / 1000000u;
}

static void
on_changed(void *arg, uint32_t id, bool up)
{
	struct ctx *c = arg;
	struct changes *ch = &c->ch;

	ck_assert_uint_lt(ch->n, CHANGES_MAX);
	ch->id[ch->n] = id;
	ch->up[ch->n] = up;
	ch->at_ms[ch->n] = now_ms();
	ck_assert_int_eq(probe_stats(c->p, id, &ch->stats[ch->n]), 0);
	ck_assert(probe_up(c->p, id) == up);
	ch->reload_rc = probe_set_targets(c->p, NULL, 0);
	ch->n++;
}

static const struct probe_ops ops = { .changed = on_changed };

static void
ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < CONNS_MAX; i++)
		c->conn[i].fd = -1;
	c->p = probe_create(&ops, c);
	ck_assert_ptr_nonnull(c->p);
}

static void
ctx_fini(struct ctx *c)
{
	probe_destroy(c->p);
	for (size_t i = 0; i < CONNS_MAX; i++)
		if (c->conn[i].fd >= 0)
			close(c->conn[i].fd);
	for (size_t i = 0; i < c->n_srv; i++)
		if (c->srv[i]->fd >= 0)
			close(c->srv[i]->fd);
}

static struct config_addr
loopback(int family)
{
	struct config_addr a = { .family = family };

	if (family == AF_INET)
		a.v4.s_addr = htonl(INADDR_LOOPBACK);
	else
		a.v6 = in6addr_loopback;
	return a;
}

static socklen_t
sockaddr_of(int family, uint16_t port, struct sockaddr_storage *ss)
{
	struct config_addr a = loopback(family);

	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		*sin = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port),
					     .sin_addr = a.v4 };
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	*sin6 = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(port),
				       .sin6_addr = a.v6 };
	return sizeof(*sin6);
}

/* A bound socket on the loopback (port 0: any), its port in *port; -1 if none. */
static int
bound_socket(int family, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(family, *port, &ss);
	int one = 1;
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		close(fd);
		return -1;
	}
	len = sizeof(ss);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					: ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static bool
ipv6_available(void)
{
	uint16_t port = 0;
	int fd = bound_socket(AF_INET6, &port);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* A port on the loopback where nothing listens: connects are refused. */
static uint16_t
closed_port(int family)
{
	uint16_t port = 0;
	int fd = bound_socket(family, &port);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return port;
}

/* Listen with srv on port (0: any) of the loopback; srv joins c's loop. */
static void
server_listen(struct ctx *c, struct server *srv, int family, uint16_t port, int backlog)
{
	srv->port = port;
	srv->fd = bound_socket(family, &srv->port);
	ck_assert_int_ge(srv->fd, 0);
	ck_assert_int_eq(listen(srv->fd, backlog), 0);
	for (size_t i = 0; i < c->n_srv; i++)
		if (c->srv[i] == srv)
			return;
	ck_assert_uint_lt(c->n_srv, SERVERS_MAX);
	c->srv[c->n_srv++] = srv;
}

static const char *
server_answer(struct server *srv, size_t i)
{
	if (i >= srv->n_answers)
		i = srv->repeat + (i - srv->repeat) % (srv->n_answers - srv->repeat);
	return srv->answers[i];
}

static void
server_accept(struct ctx *c, struct server *srv)
{
	int fd;

	while ((fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		size_t i = 0;

		if (srv->answers == NULL) {
			close(fd);
			continue;
		}
		while (i < CONNS_MAX && c->conn[i].fd >= 0)
			i++;
		ck_assert_uint_lt(i, CONNS_MAX);
		c->conn[i] = (struct conn){ .fd = fd, .srv = srv, .index = srv->accepted++ };
	}
}

static void
conn_close(struct conn *k)
{
	close(k->fd);
	k->fd = -1;
}

static void
conn_read(struct conn *k)
{
	ssize_t n = read(k->fd, k->req + k->got, sizeof(k->req) - 1 - k->got);

	if (n <= 0) {
		conn_close(k);
		return;
	}
	k->got += (size_t)n;
	k->req[k->got] = '\0';
	if (k->answer == NULL && strstr(k->req, "\r\n\r\n") != NULL) {
		strcpy(k->srv->request, k->req);
		k->answer = server_answer(k->srv, k->index);
		if (k->answer == NULL)
			k->answer = "";         /* silent: never written */
		else if (k->answer[0] == '\0')
			conn_close(k);
	}
}

static void
conn_write(struct ctx *c, struct conn *k)
{
	size_t len = strlen(k->answer) - k->sent;
	ssize_t n;

	if (k->srv->dribble) {
		if (k->dispatch == c->dispatches)
			return;
		len = 1;
		k->dispatch = c->dispatches;
	}
	n = write(k->fd, k->answer + k->sent, len);
	if (n > 0)
		k->sent += (size_t)n;
	if (n <= 0 || k->answer[k->sent] == '\0')
		conn_close(k);
}

/* ---------------------------------------------------------------- loop */

static size_t
poll_set(struct ctx *c, struct pollfd *fds, int *what)
{
	size_t n = 0;

	fds[n++] = (struct pollfd){ .fd = probe_fd(c->p), .events = POLLIN };
	for (size_t i = 0; i < c->n_srv; i++) {
		what[n] = -1 - (int)i;
		fds[n++] = (struct pollfd){ .fd = c->srv[i]->fd, .events = POLLIN };
	}
	for (size_t i = 0; i < CONNS_MAX; i++) {
		struct conn *k = &c->conn[i];
		bool answering = k->answer != NULL && k->answer[0] != '\0';

		if (k->fd < 0)
			continue;
		what[n] = (int)i;
		fds[n++] = (struct pollfd){ .fd = k->fd, .events = answering ? POLLOUT : POLLIN };
	}
	return n;
}

static void
dispatch_timed(struct ctx *c)
{
	uint64_t t0 = now_ns(), d;

	probe_dispatch(c->p);
	d = now_ns() - t0;
	c->dispatches++;
	if (d > c->dispatch_max_ns)
		c->dispatch_max_ns = d;
}

/* One turn: wait up to ms for anything, then serve what is ready. */
static void
turn(struct ctx *c, int ms)
{
	struct pollfd fds[1 + SERVERS_MAX + CONNS_MAX];
	int what[1 + SERVERS_MAX + CONNS_MAX];
	size_t n = poll_set(c, fds, what);

	if (poll(fds, n, ms) <= 0)
		return;
	if (fds[0].revents & POLLIN)
		dispatch_timed(c);
	for (size_t i = 1; i < n; i++) {
		struct conn *k = what[i] >= 0 ? &c->conn[what[i]] : NULL;

		if (fds[i].revents == 0)
			continue;
		if (k == NULL)
			server_accept(c, c->srv[-1 - what[i]]);
		else if (k->fd >= 0 && (fds[i].revents & POLLOUT))
			conn_write(c, k);
		else if (k->fd >= 0)
			conn_read(k);
	}
}

/* Turn until done(c) or ms have passed: whether done(c). */
static bool
run(struct ctx *c, bool (*done)(struct ctx *), unsigned ms)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		uint64_t t = now_ms();

		if (done != NULL && done(c))
			return true;
		if (t >= end)
			return false;
		turn(c, (int)(end - t));
	}
}

static struct probe_stats
stats_of(struct ctx *c, uint32_t id)
{
	struct probe_stats st;

	ck_assert_int_eq(probe_stats(c->p, id, &st), 0);
	return st;
}

static bool
until_probes(struct ctx *c)
{
	return stats_of(c, c->want_id).probes >= c->want_probes;
}

static bool
until_changes(struct ctx *c)
{
	return c->ch.n >= c->want_changes;
}

static void
run_probes(struct ctx *c, uint32_t id, uint64_t probes)
{
	c->want_id = id;
	c->want_probes = probes;
	ck_assert_msg(run(c, until_probes, WAIT_MS), "target %u: %" PRIu64 " of %" PRIu64 " probes",
		      id, stats_of(c, id).probes, probes);
}

static void
run_changes(struct ctx *c, unsigned n)
{
	c->want_changes = n;
	ck_assert_msg(run(c, until_changes, WAIT_MS), "%u of %u changes", c->ch.n, n);
}

static struct probe_target
target(uint32_t id, int family, uint16_t port, enum config_health_type type)
{
	struct probe_target t = {
		.id = id, .addr = loopback(family), .port = port, .type = type,
		.http_path = "/health", .interval_ms = 30, .timeout_ms = 200,
		.rise = 2, .fall = 2,
	};

	return t;
}

/* ---------------------------------------------------------------- TCP */

START_TEST(test_tcp_up)
{
	struct ctx c;
	struct server s4 = { 0 }, s6 = { 0 };
	struct probe_target t[3];
	size_t n = 0;
	bool v6 = ipv6_available();

	ctx_init(&c);
	server_listen(&c, &s4, AF_INET, 0, 16);
	t[n++] = target(1, AF_INET, s4.port, CONFIG_HEALTH_TCP);
	t[n++] = target(3, AF_INET, 1, CONFIG_HEALTH_NONE);
	if (v6) {
		server_listen(&c, &s6, AF_INET6, 0, 16);
		t[n++] = target(2, AF_INET6, s6.port, CONFIG_HEALTH_TCP);
	}
	ck_assert_int_eq(probe_set_targets(c.p, t, n), 0);
	run_probes(&c, 1, 6);
	if (v6)
		run_probes(&c, 2, 6);

	ck_assert_uint_eq(c.ch.n, 0);
	for (size_t i = 0; i < n; i++) {
		struct probe_stats st = stats_of(&c, t[i].id);

		ck_assert(probe_up(c.p, t[i].id));
		ck_assert(st.up);
		ck_assert_uint_eq(st.failures, 0);
		ck_assert_uint_eq(st.local_errors, 0);
		ck_assert_uint_eq(st.successes, st.probes);
		if (t[i].type == CONFIG_HEALTH_NONE)
			ck_assert_uint_eq(st.probes, 0);
		else
			ck_assert_uint_eq(st.successes_in_row, st.probes);
	}
	ck_assert_uint_eq(probe_counters(c.p)->targets, n);
	ck_assert_uint_eq(probe_counters(c.p)->down, 0);
	ck_assert_uint_ge(probe_counters(c.p)->counts[PROBE_SUCCESSES], v6 ? 12 : 6);
	ck_assert(probe_up(c.p, 99));           /* not in the set */
	ctx_fini(&c);
}
END_TEST

/*
 * Target 1 on a closed port of family goes down: exactly one changed(),
 * after exactly `fall` failures, between fall - 1 and fall intervals after
 * the set was loaded (its first probe falls within the first interval).
 */
static void
tcp_down(struct ctx *c, int family, uint16_t port, const struct probe_target *tmpl)
{
	struct probe_target t = *tmpl;
	uint64_t went_down = probe_counters(c->p)->counts[PROBE_WENT_DOWN];
	uint64_t t0 = now_ms(), took;

	t.addr = loopback(family);
	t.port = port;
	ck_assert_int_eq(probe_set_targets(c->p, &t, 1), 0);
	run_changes(c, 1);
	took = c->ch.at_ms[0] - t0;

	ck_assert_uint_eq(c->ch.id[0], t.id);
	ck_assert(!c->ch.up[0]);
	ck_assert_uint_eq(c->ch.stats[0].failures, t.fall);
	ck_assert_uint_eq(c->ch.stats[0].failures_in_row, t.fall);
	ck_assert_uint_eq(c->ch.stats[0].timeouts, 0);
	ck_assert_int_eq(c->ch.stats[0].last_error, ECONNREFUSED);
	ck_assert_uint_ge(took, (t.fall - 1) * t.interval_ms);
	ck_assert_uint_le(took, t.fall * t.interval_ms + SLACK_MS);
	ck_assert(!probe_up(c->p, t.id));
	ck_assert_uint_eq(probe_counters(c->p)->down, 1);
	ck_assert_uint_eq(probe_counters(c->p)->counts[PROBE_WENT_DOWN], went_down + 1);
	ck_assert_int_eq(c->ch.reload_rc, -EBUSY);
}

START_TEST(test_tcp_down)
{
	struct ctx c;
	struct probe_target t = target(1, AF_INET, 0, CONFIG_HEALTH_TCP);

	t.interval_ms = 40;
	t.fall = 3;
	ctx_init(&c);
	tcp_down(&c, AF_INET, closed_port(AF_INET), &t);
	/* it stays down, quietly */
	run_probes(&c, 1, stats_of(&c, 1).probes + 3);
	ck_assert_uint_eq(c.ch.n, 1);
	ck_assert_uint_eq(stats_of(&c, 1).failures_in_row, stats_of(&c, 1).probes);
	if (ipv6_available()) {
		memset(&c.ch, 0, sizeof(c.ch));
		tcp_down(&c, AF_INET6, closed_port(AF_INET6), &t);
	}
	ctx_fini(&c);
}
END_TEST

START_TEST(test_tcp_rise)
{
	struct ctx c;
	struct server srv = { 0 };
	struct probe_target t = target(1, AF_INET, 0, CONFIG_HEALTH_TCP);
	uint16_t port = closed_port(AF_INET);
	uint64_t t0, took;

	t.interval_ms = 40;
	t.rise = 3;
	ctx_init(&c);
	tcp_down(&c, AF_INET, port, &t);
	server_listen(&c, &srv, AF_INET, port, 16);
	t0 = now_ms();
	run_changes(&c, 2);
	took = c.ch.at_ms[1] - t0;

	ck_assert(c.ch.up[1]);
	ck_assert_uint_eq(c.ch.stats[1].successes, t.rise);
	ck_assert_uint_eq(c.ch.stats[1].successes_in_row, t.rise);
	ck_assert_uint_ge(took, (t.rise - 1) * t.interval_ms);
	ck_assert_uint_le(took, t.rise * t.interval_ms + SLACK_MS);
	ck_assert(probe_up(c.p, 1));
	ck_assert_uint_eq(probe_counters(c.p)->down, 0);
	ck_assert_uint_eq(probe_counters(c.p)->counts[PROBE_WENT_UP], 1);
	ctx_fini(&c);
}
END_TEST

/*
 * A port whose listener drops SYNs, as a backend that does not answer:
 * its accept queue holds one connection (*filler's) and nobody accepts.
 * Returns the listener.
 */
static int
syn_dropping_port(uint16_t *port, int *filler)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	*port = 0;
	fd = bound_socket(AF_INET, port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(listen(fd, 0), 0);
	*filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(*filler, 0);
	len = sockaddr_of(AF_INET, *port, &ss);
	ck_assert_int_eq(connect(*filler, (struct sockaddr *)&ss, len), 0);
	return fd;
}

START_TEST(test_tcp_timeout)
{
	struct ctx c;
	struct probe_target t = target(1, AF_INET, 0, CONFIG_HEALTH_TCP);
	int filler, listener = syn_dropping_port(&t.port, &filler);
	const struct probe_counters *pc;
	struct probe_stats st;
	uint64_t finished = 0;

	ctx_init(&c);
	t.timeout_ms = 50;
	t.interval_ms = 60;
	ck_assert_int_eq(probe_set_targets(c.p, &t, 1), 0);
	run_changes(&c, 1);

	st = stats_of(&c, 1);
	ck_assert(!st.up);
	ck_assert_uint_eq(st.timeouts, st.failures);
	ck_assert_uint_eq(st.failures, t.fall);
	ck_assert_int_eq(st.last_error, ETIMEDOUT);
	ck_assert_uint_eq(probe_counters(c.p)->counts[PROBE_TIMEOUTS], t.fall);
	/* each took its whole timeout: counted in the durations, none below 50 ms */
	ck_assert_uint_ge(st.last_duration_us, 50000);
	pc = probe_counters(c.p);
	for (int i = 0; i <= WIRE_PROBE_BUCKETS; i++) {
		if (i < WIRE_PROBE_BUCKETS && wire_probe_bucket_us[i] < 50000)
			ck_assert_uint_eq(pc->durations[i], 0);
		finished += pc->durations[i];
	}
	ck_assert_uint_eq(finished, pc->counts[PROBE_SUCCESSES] + pc->counts[PROBE_FAILURES]);
	ck_assert_uint_ge(pc->duration_sum_us, finished * 50000);
	close(filler);
	close(listener);
	ctx_fini(&c);
}
END_TEST

/* --------------------------------------------------------------- HTTP */

static const char ok_200[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
static const char error_500[] = "HTTP/1.1 500 Internal Server Error\r\n\r\n";
static const char *const answer_200[] = { ok_200 };
static const char *const answer_302[] = { "HTTP/1.0 302 Found\r\nLocation: /\r\n\r\n" };
static const char *const answer_500[] = { error_500 };
static const char *const answer_garbage[] = { "hello there\r\n\r\n" };
static const char *const answer_eof[] = { "" };
static const char *const answer_silent[] = { NULL };
static const char *const answer_short[] = { "HTTP/1.1 200\r\n\r\n" };

enum { HTTP_200 = 1, HTTP_302, HTTP_500, HTTP_GARBAGE, HTTP_EOF, HTTP_SILENT,
       HTTP_DRIBBLE, HTTP_SHORT, HTTP_V6, HTTP_MAX };

struct http_case {
	const char *const *answers;
	bool dribble;
	bool up;
	int error;                      /* last_error when down */
	uint16_t status;                /* last_http_status */
};

static const struct http_case http_cases[HTTP_MAX] = {
	[HTTP_200] = { answer_200, false, true, 0, 200 },
	[HTTP_302] = { answer_302, false, true, 0, 302 },
	[HTTP_500] = { answer_500, false, false, PROBE_ERROR_HTTP_STATUS, 500 },
	[HTTP_GARBAGE] = { answer_garbage, false, false, PROBE_ERROR_HTTP_MALFORMED, 0 },
	[HTTP_EOF] = { answer_eof, false, false, PROBE_ERROR_HTTP_EOF, 0 },
	[HTTP_SILENT] = { answer_silent, false, false, ETIMEDOUT, 0 },
	[HTTP_DRIBBLE] = { answer_200, true, true, 0, 200 },
	[HTTP_SHORT] = { answer_short, false, true, 0, 200 },
	[HTTP_V6] = { answer_200, false, true, 0, 200 },
};

START_TEST(test_http)
{
	struct ctx c;
	struct server srv[HTTP_MAX] = { 0 };
	struct probe_target t[HTTP_MAX];
	size_t n = 0;
	int last = ipv6_available() ? HTTP_V6 : HTTP_V6 - 1;
	const char *want4 = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n"
			    "User-Agent: maglb-syncd\r\nConnection: close\r\n\r\n";
	const char *want6 = "GET /health HTTP/1.0\r\nHost: [::1]\r\n"
			    "User-Agent: maglb-syncd\r\nConnection: close\r\n\r\n";

	ctx_init(&c);
	for (int i = HTTP_200; i <= last; i++) {
		int family = i == HTTP_V6 ? AF_INET6 : AF_INET;

		srv[i].answers = http_cases[i].answers;
		srv[i].n_answers = 1;
		srv[i].dribble = http_cases[i].dribble;
		server_listen(&c, &srv[i], family, 0, 16);
		t[n] = target((uint32_t)i, family, srv[i].port, CONFIG_HEALTH_HTTP);
		t[n].interval_ms = 40;
		t[n].timeout_ms = 150;
		t[n].rise = 1;
		n++;
	}
	ck_assert_int_eq(probe_set_targets(c.p, t, n), 0);
	for (int i = HTTP_200; i <= last; i++)
		run_probes(&c, (uint32_t)i, 3);

	for (int i = HTTP_200; i <= last; i++) {
		const struct http_case *hc = &http_cases[i];
		struct probe_stats st = stats_of(&c, (uint32_t)i);

		ck_assert_msg(st.up == hc->up, "case %d", i);
		ck_assert_uint_eq(probe_up(c.p, (uint32_t)i), hc->up);
		ck_assert_uint_eq(st.last_http_status, hc->status);
		ck_assert_str_eq(srv[i].request, i == HTTP_V6 ? want6 : want4);
		if (hc->up) {
			ck_assert_uint_eq(st.failures, 0);
			continue;
		}
		ck_assert_msg(st.last_error == hc->error, "case %d: %s", i,
			      probe_strerror(st.last_error));
		ck_assert_uint_eq(st.successes, 0);
		ck_assert_uint_eq(st.timeouts, i == HTTP_SILENT ? st.failures : 0);
	}
	/* one changed() per target down, none for the others */
	ck_assert_uint_eq(c.ch.n, 4);
	for (unsigned i = 0; i < c.ch.n; i++) {
		ck_assert(!c.ch.up[i]);
		ck_assert(!http_cases[c.ch.id[i]].up);
	}
	ck_assert_uint_eq(probe_counters(c.p)->counts[PROBE_TIMEOUTS],
			  stats_of(&c, HTTP_SILENT).timeouts);
	ctx_fini(&c);
}
END_TEST

/* ---------------------------------------------------------- the set */

START_TEST(test_set_targets_keeps_state)
{
	struct ctx c;
	struct server srv = { 0 };
	struct probe_target t[2], bad[2];
	struct probe_stats before, after;

	ctx_init(&c);
	server_listen(&c, &srv, AF_INET, 0, 16);
	t[0] = target(1, AF_INET, closed_port(AF_INET), CONFIG_HEALTH_TCP);
	t[1] = target(2, AF_INET, srv.port, CONFIG_HEALTH_TCP);
	ck_assert_int_eq(probe_set_targets(c.p, t, 2), 0);
	run_changes(&c, 1);
	ck_assert_uint_eq(c.ch.id[0], 1);
	before = stats_of(&c, 1);

	/* the same set, renumbered and reordered, with other timings */
	struct probe_target again[2] = { t[1], t[0] };
	again[0].id = 20;
	again[1].id = 10;
	again[1].interval_ms = 25;
	again[1].fall = 3;
	ck_assert_int_eq(probe_set_targets(c.p, again, 2), 0);
	after = stats_of(&c, 10);
	ck_assert(!after.up);
	ck_assert(!probe_up(c.p, 10));
	ck_assert_uint_eq(after.probes, before.probes);
	ck_assert_uint_eq(after.failures, before.failures);
	ck_assert_uint_eq(after.failures_in_row, before.failures_in_row);
	ck_assert_int_eq(probe_stats(c.p, 1, &after), -ENOENT);
	ck_assert(stats_of(&c, 20).up);
	ck_assert_uint_eq(probe_counters(c.p)->down, 1);
	run_probes(&c, 10, before.probes + 3);
	ck_assert(!probe_up(c.p, 10));
	ck_assert_uint_eq(c.ch.n, 1);

	/* refused sets leave it as it was */
	memcpy(bad, again, sizeof(bad));
	bad[1].rise = 0;
	ck_assert_int_eq(probe_set_targets(c.p, bad, 2), -EINVAL);
	memcpy(bad, again, sizeof(bad));
	bad[1].id = bad[0].id;
	ck_assert_int_eq(probe_set_targets(c.p, bad, 2), -EINVAL);
	memcpy(bad, again, sizeof(bad));
	bad[1].type = CONFIG_HEALTH_HTTP;
	strcpy(bad[1].http_path, "/a b");
	ck_assert_int_eq(probe_set_targets(c.p, bad, 2), -EINVAL);
	ck_assert(!probe_up(c.p, 10));

	/* another port is another backend: fresh and up */
	again[1].port = closed_port(AF_INET);
	ck_assert_int_eq(probe_set_targets(c.p, again, 2), 0);
	after = stats_of(&c, 10);
	ck_assert(after.up);
	ck_assert_uint_eq(after.probes, 0);
	ck_assert_uint_eq(probe_counters(c.p)->down, 0);
	ck_assert_uint_eq(c.ch.n, 1);
	ctx_fini(&c);
}
END_TEST

/* ----------------------------------------------------------- flapping */

static const char *const answers_flap[] = { ok_200, error_500 };
static const char *const answers_down_flap[] = {
	error_500, error_500, error_500, ok_200, error_500,
};

START_TEST(test_flapping)
{
	struct ctx c;
	struct server flap = { .answers = answers_flap, .n_answers = 2 };
	struct server down = { .answers = answers_down_flap, .n_answers = 5, .repeat = 3 };
	struct probe_target t[2];

	ctx_init(&c);
	server_listen(&c, &flap, AF_INET, 0, 16);
	server_listen(&c, &down, AF_INET, 0, 16);
	t[0] = target(1, AF_INET, flap.port, CONFIG_HEALTH_HTTP);
	t[1] = target(2, AF_INET, down.port, CONFIG_HEALTH_HTTP);
	for (int i = 0; i < 2; i++) {
		t[i].interval_ms = 20;
		t[i].rise = 2;
		t[i].fall = 3;
	}
	ck_assert_int_eq(probe_set_targets(c.p, t, 2), 0);
	run_probes(&c, 1, 16);
	run_probes(&c, 2, 16);

	/* up while it flaps */
	ck_assert(probe_up(c.p, 1));
	ck_assert_uint_ge(stats_of(&c, 1).failures, 7);
	/* down after three failures, and it stays down while it flaps */
	ck_assert(!probe_up(c.p, 2));
	ck_assert_uint_ge(stats_of(&c, 2).successes, 6);
	ck_assert_uint_eq(c.ch.n, 1);
	ck_assert_uint_eq(c.ch.id[0], 2);
	ck_assert_uint_eq(c.ch.stats[0].probes, 3);
	ctx_fini(&c);
}
END_TEST

/* ------------------------------------------------------ never blocking */

/* Servers that never answer, neither a connect nor a request. */
START_TEST(test_dispatch_never_blocks)
{
	struct ctx c;
	struct server srv = { .answers = answer_silent, .n_answers = 1 };
	struct probe_target t[2];
	int filler, listener;

	ctx_init(&c);
	server_listen(&c, &srv, AF_INET, 0, 16);
	t[0] = target(1, AF_INET, srv.port, CONFIG_HEALTH_HTTP);
	t[1] = target(2, AF_INET, 0, CONFIG_HEALTH_HTTP);
	listener = syn_dropping_port(&t[1].port, &filler);
	for (int i = 0; i < 2; i++) {
		t[i].interval_ms = 50;
		t[i].timeout_ms = 300;
	}
	ck_assert_int_eq(probe_set_targets(c.p, t, 2), 0);
	run_probes(&c, 1, 3);
	run_probes(&c, 2, 3);

	ck_assert_uint_eq(stats_of(&c, 1).timeouts, stats_of(&c, 1).probes);
	ck_assert_uint_eq(stats_of(&c, 2).timeouts, stats_of(&c, 2).probes);
	ck_assert_uint_ge(srv.accepted, 3);
	/*
	 * Nothing answers before the timeout: a dispatch that waited for a
	 * server would take all of it. One that does not takes microseconds;
	 * the bound leaves the rest to a loaded machine's preemptions.
	 */
	ck_assert_uint_lt(c.dispatch_max_ns, t[0].timeout_ms * 1000000ull);
	close(filler);
	close(listener);
	ctx_fini(&c);
}

/*
 * First probes spread over the first interval: the first probe of each of
 * 40 targets (40 closed ports) falls within it, and neither half of it is
 * nearly empty.
 */
START_TEST(test_first_probes_spread)
{
	enum { N = 40, INTERVAL_MS = 200 };
	struct ctx c;
	struct probe_target t[N];
	int fd[N];
	uint64_t first_ms[N] = { 0 }, t0;
	unsigned seen = 0, early = 0;

	ctx_init(&c);
	for (uint32_t i = 0; i < N; i++) {
		t[i] = target(i, AF_INET, 0, CONFIG_HEALTH_TCP);
		fd[i] = bound_socket(AF_INET, &t[i].port);
		ck_assert_int_ge(fd[i], 0);
		t[i].interval_ms = INTERVAL_MS;
		t[i].fall = 100;
	}
	for (uint32_t i = 0; i < N; i++)
		close(fd[i]);
	t0 = now_ms();
	ck_assert_int_eq(probe_set_targets(c.p, t, N), 0);
	while (seen < N && now_ms() < t0 + WAIT_MS) {
		turn(&c, WAIT_MS);
		for (uint32_t i = 0; i < N; i++) {
			if (first_ms[i] != 0 || stats_of(&c, i).probes == 0)
				continue;
			first_ms[i] = now_ms();
			seen++;
			early += first_ms[i] - t0 < INTERVAL_MS / 2;
			ck_assert_uint_le(first_ms[i] - t0, INTERVAL_MS + SLACK_MS);
		}
	}
	ck_assert_uint_eq(seen, N);
	ck_assert_uint_ge(early, 5);
	ck_assert_uint_le(early, N - 5);
	/* At least one each; on a loaded machine an early target's second
	 * probe may start before the last target's first is seen. */
	ck_assert_uint_ge(probe_counters(c.p)->counts[PROBE_STARTED], N);
	ctx_fini(&c);
}
END_TEST

/* Three attempts failed for want of a descriptor. */
static bool
until_local_errors(struct ctx *c)
{
	return stats_of(c, 1).local_errors >= 3;
}

/* A node out of descriptors blames no backend and tries again. */
START_TEST(test_out_of_descriptors)
{
	struct ctx c;
	struct server srv = { 0 };
	struct probe_target t;
	struct rlimit old, low;
	struct probe_stats st;
	int lowest;

	ctx_init(&c);
	server_listen(&c, &srv, AF_INET, 0, 16);
	t = target(1, AF_INET, srv.port, CONFIG_HEALTH_TCP);
	t.interval_ms = 20;
	t.fall = 1;
	ck_assert_int_eq(probe_set_targets(c.p, &t, 1), 0);
	lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(lowest, 0);
	close(lowest);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)lowest;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	/* Three attempts, however long a loaded machine takes for them. */
	run(&c, until_local_errors, WAIT_MS);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);

	st = stats_of(&c, 1);
	ck_assert_uint_ge(st.local_errors, 3);
	ck_assert_uint_eq(st.probes, 0);
	ck_assert_uint_eq(st.failures, 0);
	ck_assert_uint_eq(st.failures_in_row, 0);
	ck_assert_int_eq(st.last_error, EMFILE);
	ck_assert(st.up);
	ck_assert_uint_eq(c.ch.n, 0);
	ck_assert_uint_eq(probe_counters(c.p)->counts[PROBE_LOCAL_ERRORS], st.local_errors);
	run_probes(&c, 1, 2);
	ck_assert_uint_eq(stats_of(&c, 1).successes, stats_of(&c, 1).probes);
	ctx_fini(&c);
}
END_TEST

START_TEST(test_strerror)
{
	ck_assert_str_eq(probe_strerror(PROBE_ERROR_HTTP_STATUS), "http status not 2xx or 3xx");
	ck_assert_str_eq(probe_strerror(ETIMEDOUT), strerror(ETIMEDOUT));
	for (int i = 0; i < PROBE_COUNTER_MAX; i++) {
		ck_assert_ptr_nonnull(probe_counter_names[i]);
		ck_assert_ptr_nonnull(probe_counter_descriptions[i]);
	}
}
END_TEST

static Suite *
probe_suite(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_tcp_up);
	tcase_add_test(tc, test_tcp_down);
	tcase_add_test(tc, test_tcp_rise);
	tcase_add_test(tc, test_tcp_timeout);
	tcase_add_test(tc, test_http);
	tcase_add_test(tc, test_set_targets_keeps_state);
	tcase_add_test(tc, test_flapping);
	tcase_add_test(tc, test_dispatch_never_blocks);
	tcase_add_test(tc, test_first_probes_spread);
	tcase_add_test(tc, test_out_of_descriptors);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(probe_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
