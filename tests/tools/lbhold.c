/*
 * lbhold: long-lived TCP connections that notice every interruption, for the
 * failover tests (tests/e2e/failover.sh).
 *
 *   lbhold --connect ADDR PORT --conns N [--interval-ms T] [--dead-after-ms D]
 *          [--ready-file F] [--snapshot-file S] [--timeout-s S] [--json]
 *
 * Opens N connections at once (epoll, non-blocking) and keeps them open. Each
 * sends a line "c<conn> s<seq>" every T ms (default 100), one at a time: the
 * next line waits for the reply to the last. A backend (lbserver) answers
 * line L with "NAME L"; the reply must carry exactly the line sent, and NAME
 * must stay the one of the connection's first reply (its backend). After the
 * first reply, connection i's lines are offset by i * T / N so that they do
 * not leave in bursts.
 *
 * A connection stays alive until it fails, for one reason: reset (RST, or a
 * send refused), eof (the peer closed), timeout (no reply D ms after a line
 * was sent, default 5000; or no handshake within D ms), wrong_reply (a reply
 * that is not its line), backend_changed (its line, from another backend),
 * connect (refused or unreachable at start). Its gap is the longest silence
 * between two correct replies, counting the silence since the last one while
 * a reply is awaited (or until it failed).
 *
 * F is created once all N have had their first reply; if one fails before,
 * lbhold prints the summary and exits 1 at once. SIGUSR1 writes the summary
 * to S (through S.tmp and a rename, so S is never seen half written).
 * SIGTERM, SIGINT or the end of --timeout-s (default 3600) stop it and print
 * the summary on stdout (JSON with --json):
 *   {"conns":N,"alive":M,"failed":K,"backend_changed":..,"max_gap_ms":G,
 *    "t_us":..,"oldest_reply_t_us":..,
 *    "errors":{"connect":..,"reset":..,"eof":..,"timeout":..,"wrong_reply":..},
 *    "per_backend":{"b1":{"conns":..,"alive":..,"max_gap_ms":..},...}}
 * t_us is when it was written and oldest_reply_t_us the least recent last
 * reply of a live connection (0: none), both CLOCK_REALTIME: a test awaits
 * "every live connection answered since T". per_backend groups connections
 * by their first reply's backend. Each failure
 * is told on stderr with its CLOCK_REALTIME time (t_us). Exit 0 iff
 * alive == N; 1 otherwise; 2 for bad usage.
 */
#include "netaddr.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
	LBHOLD_NAME_MAX = 64,
	LBHOLD_LINE_MAX = 48,
	LBHOLD_REPLY_MAX = LBHOLD_NAME_MAX + LBHOLD_LINE_MAX + 2,
	LBHOLD_BACKENDS_MAX = 64,
	LBHOLD_EVENTS = 256,
	LBHOLD_PATH_MAX = 4096,
	LBHOLD_SLACK_MAX_US = 10000,   /* timers this close together fire at once */
};

static const uint32_t LBHOLD_SIGNAL_TAG = UINT32_MAX;

#define LBHOLD_ERRORS(X) \
	X(none)          \
	X(connect)       \
	X(reset)         \
	X(eof)           \
	X(timeout)       \
	X(wrong_reply)   \
	X(backend_changed)

enum lbhold_error {
#define LBHOLD_ERROR_ENUM(name) LBHOLD_ERROR_##name,
	LBHOLD_ERRORS(LBHOLD_ERROR_ENUM)
	LBHOLD_ERROR_MAX
};

static const char *const lbhold_error_names[] = {
#define LBHOLD_ERROR_NAME(name) #name,
	LBHOLD_ERRORS(LBHOLD_ERROR_NAME)
};

enum conn_state {
	CONN_CONNECTING = 0,  /* handshake in progress */
	CONN_WAITING,         /* line (being) sent, its reply awaited */
	CONN_IDLE,            /* until due_us */
	CONN_FAILED,
	CONN_STATE_MAX
};

struct conn {
	int fd;
	unsigned index;
	enum conn_state state;
	enum lbhold_error error;
	char backend[LBHOLD_NAME_MAX];  /* "" until the first reply */
	uint64_t seq;                   /* lines answered */
	char line[LBHOLD_LINE_MAX];     /* the outstanding line and its '\n' */
	size_t line_len;                /* without the '\n' */
	size_t sent;
	char in[LBHOLD_REPLY_MAX];      /* received, not yet a whole line */
	size_t in_len;
	uint64_t since_us;              /* CONNECTING: start; WAITING: line sent */
	uint64_t due_us;                /* IDLE: when the next line goes */
	uint64_t last_reply_us;         /* 0 before the first reply */
	uint64_t max_gap_us;
	uint32_t events;                /* what epoll watches for it */
};

struct options {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	unsigned conns;
	unsigned interval_ms;
	unsigned dead_after_ms;
	unsigned timeout_s;
	const char *ready_file;
	const char *snapshot_file;
	bool json;
};

struct hold {
	struct options opts;
	struct conn *conns;
	int epoll_fd;
	int signal_fd;
	unsigned answered;              /* connections past their first reply */
	unsigned failed;
	bool ready;
	bool stop;
	uint64_t deadline_us;
	uint64_t slack_us;
};

struct backend_stats {
	char name[LBHOLD_NAME_MAX];
	unsigned conns;
	unsigned alive;
	uint64_t max_gap_us;
};

static uint64_t
clock_us(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_us(void) { return clock_us(CLOCK_MONOTONIC); }

static void
usage(FILE *out)
{
	fprintf(out,
	        "usage: lbhold --connect ADDR PORT --conns N [--interval-ms T]\n"
	        "              [--dead-after-ms D] [--ready-file F] [--snapshot-file S]\n"
	        "              [--timeout-s S] [--json]\n");
}

static int
options_parse(int argc, char **argv, struct options *opts)
{
	static const struct option longopts[] = {
		{"connect", required_argument, NULL, 'c'},
		{"conns", required_argument, NULL, 'n'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"dead-after-ms", required_argument, NULL, 'd'},
		{"ready-file", required_argument, NULL, 'r'},
		{"snapshot-file", required_argument, NULL, 's'},
		{"timeout-s", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, err = 0;

	*opts = (struct options){.interval_ms = 100, .dead_after_ms = 5000, .timeout_s = 3600};
	while (err == 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			err = netaddr_parse_connect(argc, argv, &opts->addr, &opts->addr_len);
			break;
		case 'n': err = netaddr_parse_unsigned(optarg, 1, 100000, &opts->conns); break;
		case 'i': err = netaddr_parse_unsigned(optarg, 1, 3600000, &opts->interval_ms); break;
		case 'd': err = netaddr_parse_unsigned(optarg, 1, 3600000, &opts->dead_after_ms); break;
		case 'r': opts->ready_file = optarg; break;
		case 's': opts->snapshot_file = optarg; break;
		case 't': err = netaddr_parse_unsigned(optarg, 1, 86400 * 7, &opts->timeout_s); break;
		case 'j': opts->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: err = -EINVAL; break;
		}
	}
	if (err == 0 && (optind != argc || opts->conns == 0 || opts->addr_len == 0))
		err = -EINVAL;
	return err;
}

/* Changes only: at 10 lines a second per connection, a call per state
 * change would be most of lbhold's system time. */
static void
conn_watch(struct hold *hold, struct conn *conn)
{
	struct epoll_event ev = {.data.u32 = conn->index};

	if (conn->state == CONN_CONNECTING ||
	    (conn->state == CONN_WAITING && conn->sent < conn->line_len + 1))
		ev.events = EPOLLOUT;
	else
		ev.events = EPOLLIN;
	if (ev.events == conn->events)
		return;
	conn->events = ev.events;
	epoll_ctl(hold->epoll_fd, EPOLL_CTL_MOD, conn->fd, &ev);
}

static void
conn_gap(struct conn *conn, uint64_t now)
{
	if (conn->last_reply_us != 0 && now - conn->last_reply_us > conn->max_gap_us)
		conn->max_gap_us = now - conn->last_reply_us;
}

static void
conn_fail(struct hold *hold, struct conn *conn, enum lbhold_error error)
{
	if (conn->state == CONN_FAILED)
		return;
	conn_gap(conn, now_us());
	conn->state = CONN_FAILED;
	conn->error = error;
	close(conn->fd);
	conn->fd = -1;
	hold->failed++;
	fprintf(stderr, "lbhold: t_us=%llu conn %u (backend %s) failed after %llu replies: %s\n",
	        (unsigned long long)clock_us(CLOCK_REALTIME), conn->index,
	        conn->backend[0] ? conn->backend : "-", (unsigned long long)conn->seq,
	        lbhold_error_names[error]);
}

static enum lbhold_error
error_from_errno(int err)
{
	switch (err) {
	case ECONNRESET:
	case EPIPE:
		return LBHOLD_ERROR_reset;
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return LBHOLD_ERROR_timeout;
	default:
		return LBHOLD_ERROR_connect;
	}
}

/* Send what is left of the outstanding line. */
static void
conn_flush(struct hold *hold, struct conn *conn)
{
	size_t total = conn->line_len + 1;
	ssize_t n;

	while (conn->sent < total) {
		n = send(conn->fd, conn->line + conn->sent, total - conn->sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			conn_fail(hold, conn, error_from_errno(errno));
			return;
		}
		conn->sent += (size_t)n;
	}
	conn_watch(hold, conn);
}

static void
conn_send(struct hold *hold, struct conn *conn, uint64_t now)
{
	int n = snprintf(conn->line, sizeof(conn->line), "c%u s%llu\n", conn->index,
	                 (unsigned long long)conn->seq);

	conn->line_len = (size_t)n - 1;
	conn->sent = 0;
	conn->state = CONN_WAITING;
	conn->since_us = now;
	conn_flush(hold, conn);
}

/* A correct reply: schedule the next line on the connection's cadence. */
static void
conn_answered(struct hold *hold, struct conn *conn, uint64_t now)
{
	uint64_t interval = (uint64_t)hold->opts.interval_ms * 1000;

	conn_gap(conn, now);
	if (conn->seq++ == 0) {
		hold->answered++;
		conn->due_us = now + interval * conn->index / hold->opts.conns;
	} else {
		conn->due_us += interval;
	}
	if (conn->due_us < now)
		conn->due_us = now;
	conn->last_reply_us = now;
	conn->state = CONN_IDLE;
	conn_watch(hold, conn);
}

/* One reply line "NAME LINE", without its newline. */
static void
conn_check_reply(struct hold *hold, struct conn *conn, const char *reply,
		 size_t len, uint64_t now)
{
	const char *space = memchr(reply, ' ', len);
	size_t name_len = space ? (size_t)(space - reply) : 0;

	if (conn->state != CONN_WAITING || space == NULL || name_len == 0 ||
	    name_len >= LBHOLD_NAME_MAX || len - name_len - 1 != conn->line_len ||
	    memcmp(space + 1, conn->line, conn->line_len) != 0) {
		conn_fail(hold, conn, LBHOLD_ERROR_wrong_reply);
		return;
	}
	if (conn->backend[0] == '\0') {
		memcpy(conn->backend, reply, name_len);
	} else if (strlen(conn->backend) != name_len ||
	           memcmp(conn->backend, reply, name_len) != 0) {
		conn_fail(hold, conn, LBHOLD_ERROR_backend_changed);
		return;
	}
	conn_answered(hold, conn, now);
}

static void
conn_read(struct hold *hold, struct conn *conn)
{
	size_t room = sizeof(conn->in) - conn->in_len, len;
	char *newline;
	ssize_t n;

	n = recv(conn->fd, conn->in + conn->in_len, room, 0);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) {
		conn_fail(hold, conn, error_from_errno(errno));
		return;
	}
	if (n == 0) {
		conn_fail(hold, conn, LBHOLD_ERROR_eof);
		return;
	}
	conn->in_len += (size_t)n;
	while (conn->state != CONN_FAILED &&
	       (newline = memchr(conn->in, '\n', conn->in_len)) != NULL) {
		len = (size_t)(newline - conn->in);
		conn_check_reply(hold, conn, conn->in, len, now_us());
		conn->in_len -= len + 1;
		memmove(conn->in, newline + 1, conn->in_len);
	}
	if (conn->state != CONN_FAILED && conn->in_len == sizeof(conn->in))
		conn_fail(hold, conn, LBHOLD_ERROR_wrong_reply);
}

static void
conn_connected(struct hold *hold, struct conn *conn)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err != 0) {
		conn_fail(hold, conn, LBHOLD_ERROR_connect);
		return;
	}
	setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	conn_send(hold, conn, now_us());
}

static void
conn_event(struct hold *hold, struct conn *conn, uint32_t events)
{
	switch (conn->state) {
	case CONN_CONNECTING:
		conn_connected(hold, conn);
		break;
	case CONN_WAITING:
		if (events & EPOLLOUT)
			conn_flush(hold, conn);
		else
			conn_read(hold, conn);
		break;
	case CONN_IDLE:
		conn_read(hold, conn);   /* nothing is due: data or an error */
		break;
	default:
		break;
	}
}

static int
conn_open(struct hold *hold, struct conn *conn)
{
	const struct options *opts = &hold->opts;
	struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = conn->index};

	conn->fd = socket(opts->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (conn->fd < 0)
		return -errno;
	conn->state = CONN_CONNECTING;
	conn->since_us = now_us();
	conn->events = ev.events;
	if (epoll_ctl(hold->epoll_fd, EPOLL_CTL_ADD, conn->fd, &ev) < 0)
		return -errno;
	if (connect(conn->fd, (const struct sockaddr *)&opts->addr, opts->addr_len) < 0 &&
	    errno != EINPROGRESS)
		conn_fail(hold, conn, LBHOLD_ERROR_connect);
	return 0;
}

/* Due lines (with the slack, so that close timers share a wake-up) and dead
 * connections. */
static void
hold_timers(struct hold *hold, uint64_t now)
{
	uint64_t dead = (uint64_t)hold->opts.dead_after_ms * 1000;
	struct conn *conn;
	unsigned i;

	for (i = 0; i < hold->opts.conns; i++) {
		conn = &hold->conns[i];
		if (conn->state == CONN_IDLE && conn->due_us <= now + hold->slack_us)
			conn_send(hold, conn, now);
		else if ((conn->state == CONN_WAITING || conn->state == CONN_CONNECTING) &&
		         now - conn->since_us >= dead)
			conn_fail(hold, conn, LBHOLD_ERROR_timeout);
	}
}

static int
hold_wait_ms(const struct hold *hold, uint64_t now)
{
	uint64_t dead = (uint64_t)hold->opts.dead_after_ms * 1000, next = hold->deadline_us, t;
	const struct conn *conn;
	unsigned i;

	for (i = 0; i < hold->opts.conns; i++) {
		conn = &hold->conns[i];
		if (conn->state == CONN_IDLE)
			t = conn->due_us;
		else if (conn->state == CONN_WAITING || conn->state == CONN_CONNECTING)
			t = conn->since_us + dead;
		else
			continue;
		if (t < next)
			next = t;
	}
	return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

static int
backend_index(struct backend_stats *stats, unsigned *n, const char *name)
{
	unsigned i;

	for (i = 0; i < *n; i++)
		if (strcmp(stats[i].name, name) == 0)
			return (int)i;
	if (*n == LBHOLD_BACKENDS_MAX)
		return -1;
	snprintf(stats[*n].name, sizeof(stats[*n].name), "%s", name);
	return (int)(*n)++;
}

/* Names come from the wire: written as JSON strings, escaped. */
static void
json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static unsigned ms(uint64_t us) { return (unsigned)((us + 500) / 1000); }

static void
hold_report(const struct hold *hold, FILE *out, bool json)
{
	static struct backend_stats stats[LBHOLD_BACKENDS_MAX];
	unsigned errors[LBHOLD_ERROR_MAX] = {0}, i, nstats = 0, alive = 0;
	uint64_t now = now_us(), now_real = clock_us(CLOCK_REALTIME), gap, max_gap = 0;
	uint64_t oldest = UINT64_MAX;
	const struct conn *conn;
	int b;

	memset(stats, 0, sizeof(stats));
	for (i = 0; i < hold->opts.conns; i++) {
		conn = &hold->conns[i];
		gap = conn->max_gap_us;
		if (conn->state == CONN_WAITING && conn->last_reply_us != 0 &&
		    now - conn->last_reply_us > gap)
			gap = now - conn->last_reply_us;
		if (gap > max_gap)
			max_gap = gap;
		errors[conn->error]++;
		alive += conn->state != CONN_FAILED;
		if (conn->state != CONN_FAILED && conn->last_reply_us < oldest)
			oldest = conn->last_reply_us;
		b = conn->backend[0] ? backend_index(stats, &nstats, conn->backend) : -1;
		if (b < 0)
			continue;
		stats[b].conns++;
		stats[b].alive += conn->state != CONN_FAILED;
		if (gap > stats[b].max_gap_us)
			stats[b].max_gap_us = gap;
	}
	/* The least recent last reply of a live connection, on the wall clock. */
	oldest = oldest == UINT64_MAX || oldest == 0 ? 0 : now_real - (now - oldest);
	fprintf(out, json ? "{\"conns\":%u,\"alive\":%u,\"failed\":%u,\"backend_changed\":%u,"
	                    "\"max_gap_ms\":%u,\"t_us\":%llu,\"oldest_reply_t_us\":%llu,"
	                    "\"errors\":{" :
	                    "conns=%u alive=%u failed=%u backend_changed=%u max_gap_ms=%u"
	                    " t_us=%llu oldest_reply_t_us=%llu errors:",
	        hold->opts.conns, alive, hold->opts.conns - alive,
	        errors[LBHOLD_ERROR_backend_changed], ms(max_gap),
	        (unsigned long long)now_real, (unsigned long long)oldest);
	for (i = LBHOLD_ERROR_connect; i < LBHOLD_ERROR_backend_changed; i++)
		fprintf(out, json ? "%s\"%s\":%u" : "%s%s=%u",
		        json ? (i > LBHOLD_ERROR_connect ? "," : "") : " ",
		        lbhold_error_names[i], errors[i]);
	fputs(json ? "},\"per_backend\":{" : " per_backend:", out);
	for (i = 0; i < nstats; i++) {
		if (json) {
			fputs(i ? "," : "", out);
			json_string(out, stats[i].name);
			fprintf(out, ":{\"conns\":%u,\"alive\":%u,\"max_gap_ms\":%u}",
			        stats[i].conns, stats[i].alive, ms(stats[i].max_gap_us));
		} else {
			fprintf(out, " %s=%u/%u/%ums", stats[i].name, stats[i].alive,
			        stats[i].conns, ms(stats[i].max_gap_us));
		}
	}
	fputs(json ? "}}\n" : "\n", out);
}

/* Write path through path.tmp and a rename: readers see it whole or not at
 * all. With report, the summary goes in; else the file is a marker. */
static void
write_atomic(const struct hold *hold, const char *path, bool report)
{
	char tmp[LBHOLD_PATH_MAX];
	FILE *file;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	file = fopen(tmp, "w");
	if (file == NULL) {
		fprintf(stderr, "lbhold: %s: %s\n", tmp, strerror(errno));
		return;
	}
	if (report)
		hold_report(hold, file, true);
	else
		fprintf(file, "%u\n", hold->opts.conns);
	if (fclose(file) != 0 || rename(tmp, path) != 0)
		fprintf(stderr, "lbhold: %s: %s\n", path, strerror(errno));
}

static void
hold_signal(struct hold *hold)
{
	struct signalfd_siginfo info;

	while (read(hold->signal_fd, &info, sizeof(info)) == sizeof(info)) {
		if (info.ssi_signo != SIGUSR1)
			hold->stop = true;
		else if (hold->opts.snapshot_file)
			write_atomic(hold, hold->opts.snapshot_file, true);
	}
}

static void
hold_check_ready(struct hold *hold)
{
	if (hold->ready)
		return;
	if (hold->failed > 0) {
		fprintf(stderr, "lbhold: %u connections failed before all were answered\n",
		        hold->failed);
		hold->stop = true;
		return;
	}
	if (hold->answered < hold->opts.conns)
		return;
	hold->ready = true;
	if (hold->opts.ready_file)
		write_atomic(hold, hold->opts.ready_file, false);
}

static int
hold_run(struct hold *hold)
{
	struct epoll_event events[LBHOLD_EVENTS];
	uint64_t now;
	int i, n;

	while (!hold->stop) {
		now = now_us();
		if (now >= hold->deadline_us)
			break;
		n = epoll_wait(hold->epoll_fd, events, LBHOLD_EVENTS, hold_wait_ms(hold, now));
		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n; i++) {
			if (events[i].data.u32 == LBHOLD_SIGNAL_TAG)
				hold_signal(hold);
			else
				conn_event(hold, &hold->conns[events[i].data.u32], events[i].events);
		}
		hold_timers(hold, now_us());
		hold_check_ready(hold);
	}
	return 0;
}

static int
hold_open(struct hold *hold)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = LBHOLD_SIGNAL_TAG};
	uint64_t interval = (uint64_t)hold->opts.interval_ms * 1000;
	sigset_t mask;
	unsigned i;
	int rc;

	hold->slack_us = interval / 10 < LBHOLD_SLACK_MAX_US ? interval / 10 : LBHOLD_SLACK_MAX_US;
	hold->deadline_us = now_us() + (uint64_t)hold->opts.timeout_s * 1000000;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	hold->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	hold->conns = calloc(hold->opts.conns, sizeof(*hold->conns));
	if (hold->epoll_fd < 0 || hold->conns == NULL || sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -ENOMEM;
	hold->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (hold->signal_fd < 0 || epoll_ctl(hold->epoll_fd, EPOLL_CTL_ADD, hold->signal_fd, &ev) < 0)
		return -errno;
	for (i = 0; i < hold->opts.conns; i++) {
		hold->conns[i].index = i;
		rc = conn_open(hold, &hold->conns[i]);
		if (rc < 0) {
			fprintf(stderr, "lbhold: conn %u: %s\n", i, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct hold hold;
	int rc;

	if (options_parse(argc, argv, &hold.opts) < 0) {
		usage(stderr);
		return 2;
	}
	netaddr_raise_fd_limit();
	rc = hold_open(&hold);
	if (rc == 0)
		rc = hold_run(&hold);
	if (rc < 0) {
		fprintf(stderr, "lbhold: %s\n", strerror(-rc));
		return 1;
	}
	hold_report(&hold, stdout, hold.opts.json);
	return hold.failed == 0 ? 0 : 1;
}
