/*
 * lbclient: the client of the end-to-end tests.
 *
 *   lbclient --connect ADDR PORT --conns N [--rounds R] [--interval-ms T]
 *            [--udp [--no-df]] [--line-bytes B] [--first-line-bytes B1]
 *            [--hold-file F] [--held-file G] [--timeout-s S] [--json]
 *
 * Opens N connections at once (epoll, non-blocking) and sends R lines on each,
 * T ms apart. A backend (lbserver) answers line L with "NAME L": every reply
 * must carry exactly the line sent, and the NAME of the first reply is the
 * connection's backend, which must never change within the connection.
 *
 * Lines are "c<conn> r<round>", padded with a letter pattern to B bytes when
 * --line-bytes is given (large lines exercise MTU and fragmentation paths);
 * --first-line-bytes pads the first round's lines to B1 instead, so that a
 * test can hold connections after small replies and get large ones later.
 * With --udp each connection is a connected UDP socket sending one datagram
 * per round (no newline); a lost datagram is sent again every 250 ms, 8 times
 * at most, and late duplicates of earlier rounds are ignored. --no-df sends
 * IPv4 datagrams without DF, never fragmented here (IP_PMTUDISC_DONT): a
 * router on the way splits the ones over its MTU.
 *
 * --hold-file F: after its first round a connection waits (open, idle) until
 * F exists, then goes on; the wait is event-driven (inotify on F's folder).
 * --held-file G: created once every connection has finished its first round
 * (or failed), so a test awaits G, acts while connections are open, then
 * creates F. --timeout-s S (default 30) bounds the whole run, holds included.
 *
 * Every connection ends in exactly one outcome: ok, failed (an error: see
 * "errors"), or backend_changed (all replies right, but from more than one
 * backend); so conns = ok + failed + backend_changed. per_backend counts the
 * connections by the backend of their first reply. The summary goes to stdout
 * (JSON with --json):
 *   {"conns":N,"ok":..,"failed":..,"backend_changed":..,
 *    "per_backend":{"b1":..,...},"errors":{"connect":..,...}}
 * Details of the first failures go to stderr. Exit 0 only if ok == N;
 * 1 otherwise; 2 for bad usage.
 */
#include "netaddr.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <netinet/in.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
	LBCLIENT_NAME_MAX = 64,
	LBCLIENT_BACKENDS_MAX = 256,
	LBCLIENT_LINE_BYTES_MAX = 60000,
	LBCLIENT_UDP_RETRY_MS = 250,
	LBCLIENT_UDP_TRIES = 8,
	LBCLIENT_EVENTS = 256,
	LBCLIENT_REPORTED_FAILURES = 10,
};

static const uint32_t LBCLIENT_INOTIFY_TAG = UINT32_MAX;

#define LBCLIENT_ERRORS(X) \
	X(none)            \
	X(socket)          \
	X(connect)         \
	X(refused)         \
	X(reset)           \
	X(eof)             \
	X(timeout)         \
	X(bad_reply)

enum lbclient_error {
#define LBCLIENT_ERROR_ENUM(name) LBCLIENT_ERROR_##name,
	LBCLIENT_ERRORS(LBCLIENT_ERROR_ENUM)
	LBCLIENT_ERROR_MAX
};

static const char *const lbclient_error_names[] = {
#define LBCLIENT_ERROR_NAME(name) #name,
	LBCLIENT_ERRORS(LBCLIENT_ERROR_NAME)
};

enum conn_state {
	CONN_CONNECTING = 0, /* TCP handshake in progress */
	CONN_WAITING,        /* request (being) sent, reply awaited */
	CONN_PAUSED,         /* between rounds until due_ms */
	CONN_HOLDING,        /* after round 1, until the hold file exists */
	CONN_DONE,
	CONN_STATE_MAX
};

struct conn {
	int fd;
	unsigned index;
	unsigned round;           /* rounds answered so far */
	enum conn_state state;
	enum lbclient_error error;
	char backend[LBCLIENT_NAME_MAX]; /* "" until the first reply */
	bool changed;
	uint64_t due_ms;          /* PAUSED: next send; UDP WAITING: resend */
	unsigned tries;
	char *request;            /* line + '\n' */
	size_t line_len;
	size_t sent;              /* TCP: bytes of request sent */
	char *reply;              /* TCP: bytes received, not yet a line */
	size_t reply_len;
};

struct options {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	unsigned conns;
	unsigned rounds;
	unsigned interval_ms;
	unsigned line_bytes;
	unsigned first_line_bytes;      /* UINT_MAX: as line_bytes */
	unsigned timeout_s;
	bool udp;
	bool no_df;
	bool json;
	const char *hold_file;
	const char *held_file;
};

struct backend_count {
	char name[LBCLIENT_NAME_MAX];
	unsigned count;
};

struct client {
	struct options opts;
	struct conn *conns;
	int epoll_fd;
	int inotify_fd;
	unsigned active;          /* connections not DONE */
	unsigned past_first;      /* connections past round 1 or DONE */
	bool released;            /* hold file seen */
	bool held_written;
	size_t reply_cap;         /* longest acceptable reply */
	uint64_t deadline_ms;
	unsigned reported;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
usage(FILE *out)
{
	fprintf(out,
	        "usage: lbclient --connect ADDR PORT --conns N [--rounds R]\n"
	        "                [--interval-ms T] [--udp [--no-df]] [--line-bytes B]\n"
	        "                [--first-line-bytes B1] [--hold-file F] [--held-file G]\n"
	        "                [--timeout-s S] [--json]\n");
}

static int
options_parse(int argc, char **argv, struct options *opts)
{
	static const struct option longopts[] = {
		{"connect", required_argument, NULL, 'c'},
		{"conns", required_argument, NULL, 'n'},
		{"rounds", required_argument, NULL, 'r'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"line-bytes", required_argument, NULL, 'l'},
		{"first-line-bytes", required_argument, NULL, 'f'},
		{"timeout-s", required_argument, NULL, 't'},
		{"udp", no_argument, NULL, 'u'},
		{"no-df", no_argument, NULL, 'F'},
		{"json", no_argument, NULL, 'j'},
		{"hold-file", required_argument, NULL, 'H'},
		{"held-file", required_argument, NULL, 'D'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, err = 0;

	*opts = (struct options){.rounds = 1, .timeout_s = 30, .first_line_bytes = UINT_MAX};
	while (err == 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			err = netaddr_parse_connect(argc, argv, &opts->addr, &opts->addr_len);
			break;
		case 'n': err = netaddr_parse_unsigned(optarg, 1, 100000, &opts->conns); break;
		case 'r': err = netaddr_parse_unsigned(optarg, 1, 1000000, &opts->rounds); break;
		case 'i': err = netaddr_parse_unsigned(optarg, 0, 3600000, &opts->interval_ms); break;
		case 'l': err = netaddr_parse_unsigned(optarg, 0, LBCLIENT_LINE_BYTES_MAX,
		                                       &opts->line_bytes); break;
		case 'f': err = netaddr_parse_unsigned(optarg, 0, LBCLIENT_LINE_BYTES_MAX,
		                                       &opts->first_line_bytes); break;
		case 't': err = netaddr_parse_unsigned(optarg, 1, 86400, &opts->timeout_s); break;
		case 'u': opts->udp = true; break;
		case 'F': opts->no_df = true; break;
		case 'j': opts->json = true; break;
		case 'H': opts->hold_file = optarg; break;
		case 'D': opts->held_file = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: err = -EINVAL; break;
		}
	}
	if (err == 0 && (optind != argc || opts->conns == 0 || opts->addr_len == 0 ||
			 (opts->no_df && (!opts->udp || opts->addr.ss_family != AF_INET))))
		err = -EINVAL;
	return err;
}

/* The longest line any round sends. */
static unsigned
line_bytes_max(const struct options *opts)
{
	return opts->first_line_bytes != UINT_MAX && opts->first_line_bytes > opts->line_bytes ?
	       opts->first_line_bytes : opts->line_bytes;
}

/* Write "c<index> r<round>[ pad]\n" into conn->request. */
static void
conn_make_line(const struct client *client, struct conn *conn)
{
	size_t n, want = conn->round == 0 && client->opts.first_line_bytes != UINT_MAX ?
			 client->opts.first_line_bytes : client->opts.line_bytes;

	n = (size_t)sprintf(conn->request, "c%u r%u", conn->index, conn->round);
	if (want > n) {
		conn->request[n++] = ' ';
		for (; n < want; n++)
			conn->request[n] = (char)('a' + (conn->index * 7 + conn->round * 3 + n) % 26);
	}
	conn->request[n] = '\n';
	conn->line_len = n;
	conn->sent = 0;
}

static void
conn_watch(struct client *client, struct conn *conn)
{
	struct epoll_event ev = {.data.u32 = conn->index};

	if (conn->state == CONN_CONNECTING)
		ev.events = EPOLLOUT;
	else
		ev.events = EPOLLIN;
	if (conn->state == CONN_WAITING && !client->opts.udp &&
	    conn->sent < conn->line_len + 1)
		ev.events |= EPOLLOUT;
	epoll_ctl(client->epoll_fd, EPOLL_CTL_MOD, conn->fd, &ev);
}

static void
conn_finish(struct client *client, struct conn *conn,
	    enum lbclient_error error)
{
	if (conn->state == CONN_DONE)
		return;
	if (conn->round == 0)
		client->past_first++;
	conn->error = error;
	conn->state = CONN_DONE;
	close(conn->fd);
	conn->fd = -1;
	client->active--;
	if (error != LBCLIENT_ERROR_none &&
	    client->reported++ < LBCLIENT_REPORTED_FAILURES)
		fprintf(stderr, "lbclient: conn %u failed in round %u (backend %s): %s\n",
		        conn->index, conn->round + 1,
		        conn->backend[0] ? conn->backend : "-",
		        lbclient_error_names[error]);
}

static enum lbclient_error
error_from_errno(int err)
{
	switch (err) {
	case ECONNREFUSED: return LBCLIENT_ERROR_refused;
	case ECONNRESET:
	case EPIPE: return LBCLIENT_ERROR_reset;
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH: return LBCLIENT_ERROR_connect;
	default: return LBCLIENT_ERROR_socket;
	}
}

/* Send the current request (TCP: as much as fits; UDP: one datagram). */
static void
conn_send(struct client *client, struct conn *conn)
{
	size_t total = client->opts.udp ? conn->line_len : conn->line_len + 1;
	ssize_t n;

	conn->state = CONN_WAITING;
	if (client->opts.udp) {
		conn->sent = 0;
		conn->due_ms = now_ms() + LBCLIENT_UDP_RETRY_MS;
	}
	while (conn->sent < total) {
		n = send(conn->fd, conn->request + conn->sent, total - conn->sent,
		         MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			conn_finish(client, conn, error_from_errno(errno));
			return;
		}
		conn->sent += (size_t)n;
	}
	conn_watch(client, conn);
}

/* After a round (and the hold, if any): close after the last round, else
 * pause until the next one is due. */
static void
conn_advance(struct client *client, struct conn *conn)
{
	if (conn->round == client->opts.rounds) {
		conn_finish(client, conn, LBCLIENT_ERROR_none);
		return;
	}
	conn_make_line(client, conn);
	conn->state = CONN_PAUSED;
	conn->due_ms = now_ms() + client->opts.interval_ms;
	conn_watch(client, conn);
}

/* After a good reply. */
static void
conn_next(struct client *client, struct conn *conn)
{
	conn->round++;
	conn->tries = 0;
	if (conn->round == 1) {
		client->past_first++;
		if (client->opts.hold_file && !client->released) {
			conn->state = CONN_HOLDING;
			conn_watch(client, conn);
			return;
		}
	}
	conn_advance(client, conn);
}

/* Check one reply "NAME LINE" (no newline). Returns true if it answered the
 * current request; false if it is a late UDP duplicate to ignore; a wrong
 * reply finishes the connection as bad_reply. */
static bool
conn_check_reply(struct client *client, struct conn *conn,
		 const char *reply, size_t len)
{
	const char *space = memchr(reply, ' ', len);
	size_t name_len = space ? (size_t)(space - reply) : 0;
	const char *rest = space + 1;
	size_t rest_len = len - name_len - 1;
	unsigned index, round;

	if (space == NULL || name_len == 0 || name_len >= LBCLIENT_NAME_MAX) {
		conn_finish(client, conn, LBCLIENT_ERROR_bad_reply);
		return false;
	}
	if (conn->state != CONN_WAITING || rest_len != conn->line_len ||
	    memcmp(rest, conn->request, rest_len) != 0) {
		if (client->opts.udp && sscanf(rest, "c%u r%u", &index, &round) == 2 &&
		    index == conn->index && round < conn->round)
			return false;
		conn_finish(client, conn, LBCLIENT_ERROR_bad_reply);
		return false;
	}
	if (conn->backend[0] == '\0')
		memcpy(conn->backend, reply, name_len);
	else if (strlen(conn->backend) != name_len ||
	         memcmp(conn->backend, reply, name_len) != 0)
		conn->changed = true;
	return true;
}

static void
conn_read_udp(struct client *client, struct conn *conn)
{
	static char buf[LBCLIENT_LINE_BYTES_MAX + LBCLIENT_NAME_MAX + 64];
	ssize_t n;

	while (conn->state != CONN_DONE) {
		n = recv(conn->fd, buf, sizeof(buf) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			conn_finish(client, conn, error_from_errno(errno));
			return;
		}
		buf[n] = '\0';
		if (conn_check_reply(client, conn, buf, (size_t)n))
			conn_next(client, conn);
	}
}

/* Take every complete line out of conn->reply. */
static void
conn_take_lines(struct client *client, struct conn *conn)
{
	char *newline;
	size_t len;

	while (conn->state != CONN_DONE &&
	       (newline = memchr(conn->reply, '\n', conn->reply_len)) != NULL) {
		*newline = '\0';
		len = (size_t)(newline - conn->reply);
		if (!conn_check_reply(client, conn, conn->reply, len))
			return;
		memmove(conn->reply, newline + 1, conn->reply_len - len - 1);
		conn->reply_len -= len + 1;
		conn_next(client, conn);
	}
	if (conn->state != CONN_DONE && conn->reply_len >= client->reply_cap)
		conn_finish(client, conn, LBCLIENT_ERROR_bad_reply);
}

static void
conn_read_tcp(struct client *client, struct conn *conn)
{
	ssize_t n;

	while (conn->state != CONN_DONE) {
		n = recv(conn->fd, conn->reply + conn->reply_len,
		         client->reply_cap - conn->reply_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			conn_finish(client, conn, error_from_errno(errno));
			return;
		}
		if (n == 0) {
			conn_finish(client, conn, LBCLIENT_ERROR_eof);
			return;
		}
		conn->reply_len += (size_t)n;
		conn_take_lines(client, conn);
	}
}

static void
conn_connected(struct client *client, struct conn *conn)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err != 0) {
		conn_finish(client, conn, err == ECONNREFUSED ?
		            LBCLIENT_ERROR_refused : LBCLIENT_ERROR_connect);
		return;
	}
	conn_send(client, conn);
}

static void
conn_event(struct client *client, struct conn *conn, uint32_t events)
{
	if (conn->state == CONN_DONE)
		return;
	if (conn->state == CONN_CONNECTING) {
		conn_connected(client, conn);
		return;
	}
	if (client->opts.udp) {
		conn_read_udp(client, conn);
		return;
	}
	if ((events & EPOLLOUT) && conn->state == CONN_WAITING)
		conn_send(client, conn);
	if (conn->state != CONN_DONE && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		conn_read_tcp(client, conn);
}

static int
conn_open(struct client *client, struct conn *conn)
{
	const struct options *opts = &client->opts;
	struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = conn->index};
	int type = opts->udp ? SOCK_DGRAM : SOCK_STREAM;

	conn->request = malloc((line_bytes_max(opts) > 40 ? line_bytes_max(opts) : 40) + 2);
	conn->reply = opts->udp ? NULL : malloc(client->reply_cap);
	conn->fd = socket(opts->addr.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (conn->request == NULL || (!opts->udp && conn->reply == NULL) || conn->fd < 0)
		return -ENOMEM;
	if (opts->no_df &&
	    setsockopt(conn->fd, IPPROTO_IP, IP_MTU_DISCOVER, &(int){IP_PMTUDISC_DONT},
		       sizeof(int)) < 0)
		return -errno;
	conn_make_line(client, conn);
	conn->state = CONN_CONNECTING;
	client->active++;
	if (epoll_ctl(client->epoll_fd, EPOLL_CTL_ADD, conn->fd, &ev) < 0)
		return -errno;
	if (connect(conn->fd, (const struct sockaddr *)&opts->addr, opts->addr_len) < 0 &&
	    errno != EINPROGRESS) {
		conn_finish(client, conn, error_from_errno(errno));
		return 0;
	}
	if (opts->udp)
		conn_send(client, conn);
	return 0;
}

static void
client_check_hold(struct client *client)
{
	unsigned i;
	struct conn *conn;

	if (client->released || access(client->opts.hold_file, F_OK) != 0)
		return;
	client->released = true;
	for (i = 0; i < client->opts.conns; i++) {
		conn = &client->conns[i];
		if (conn->state == CONN_HOLDING)
			conn_advance(client, conn);
	}
}

static void
client_write_held(struct client *client)
{
	FILE *file;

	if (client->held_written || client->opts.held_file == NULL ||
	    client->past_first < client->opts.conns)
		return;
	client->held_written = true;
	file = fopen(client->opts.held_file, "w");
	if (file == NULL) {
		fprintf(stderr, "lbclient: %s: %s\n", client->opts.held_file, strerror(errno));
		return;
	}
	fprintf(file, "%u\n", client->opts.conns);
	fclose(file);
}

/* Fire due timers: next rounds, UDP resends, the global deadline. */
static void
client_timers(struct client *client, uint64_t now)
{
	struct conn *conn;
	unsigned i;

	for (i = 0; i < client->opts.conns; i++) {
		conn = &client->conns[i];
		if (conn->state == CONN_DONE)
			continue;
		if (now >= client->deadline_ms)
			conn_finish(client, conn, LBCLIENT_ERROR_timeout);
		else if (conn->state == CONN_PAUSED && now >= conn->due_ms)
			conn_send(client, conn);
		else if (conn->state == CONN_WAITING && client->opts.udp &&
		         now >= conn->due_ms) {
			if (++conn->tries >= LBCLIENT_UDP_TRIES)
				conn_finish(client, conn, LBCLIENT_ERROR_timeout);
			else
				conn_send(client, conn);
		}
	}
}

static int
client_wait_ms(const struct client *client, uint64_t now)
{
	uint64_t next = client->deadline_ms;
	const struct conn *conn;
	unsigned i;

	for (i = 0; i < client->opts.conns; i++) {
		conn = &client->conns[i];
		if ((conn->state == CONN_PAUSED ||
		     (conn->state == CONN_WAITING && client->opts.udp)) &&
		    conn->due_ms < next)
			next = conn->due_ms;
	}
	return next <= now ? 0 : (int)(next - now);
}

static void
client_inotify(struct client *client)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(client->inotify_fd, buf, sizeof(buf)) > 0)
		;
	client_check_hold(client);
}

static int
client_run(struct client *client)
{
	struct epoll_event events[LBCLIENT_EVENTS];
	uint64_t now;
	int i, n;

	while (client->active > 0) {
		client_write_held(client);
		now = now_ms();
		n = epoll_wait(client->epoll_fd, events, LBCLIENT_EVENTS,
		               client_wait_ms(client, now));
		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n; i++) {
			if (events[i].data.u32 == LBCLIENT_INOTIFY_TAG)
				client_inotify(client);
			else
				conn_event(client, &client->conns[events[i].data.u32],
				           events[i].events);
		}
		if (client->opts.hold_file)
			client_check_hold(client);
		client_timers(client, now_ms());
	}
	client_write_held(client);
	return 0;
}

static int
client_watch_hold(struct client *client)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = LBCLIENT_INOTIFY_TAG};
	char path[PATH_MAX];

	if (client->opts.hold_file == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s", client->opts.hold_file);
	client->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (client->inotify_fd < 0 ||
	    inotify_add_watch(client->inotify_fd, dirname(path),
	                      IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_CLOSE_WRITE) < 0 ||
	    epoll_ctl(client->epoll_fd, EPOLL_CTL_ADD, client->inotify_fd, &ev) < 0) {
		fprintf(stderr, "lbclient: cannot watch %s: %s\n",
		        client->opts.hold_file, strerror(errno));
		return -errno;
	}
	return 0;
}

static int
client_open(struct client *client)
{
	unsigned i;

	client->reply_cap = line_bytes_max(&client->opts) + LBCLIENT_NAME_MAX + 64;
	client->deadline_ms = now_ms() + (uint64_t)client->opts.timeout_s * 1000;
	client->inotify_fd = -1;
	client->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	client->conns = calloc(client->opts.conns, sizeof(*client->conns));
	if (client->epoll_fd < 0 || client->conns == NULL)
		return -ENOMEM;
	if (client_watch_hold(client) < 0)
		return -EINVAL;
	for (i = 0; i < client->opts.conns; i++) {
		client->conns[i].index = i;
		client->conns[i].fd = -1;
		if (conn_open(client, &client->conns[i]) < 0) {
			fprintf(stderr, "lbclient: conn %u: %s\n", i, strerror(errno));
			return -EINVAL;
		}
	}
	return 0;
}

static void
count_backend(struct backend_count *counts, unsigned *n,
	      const char *name)
{
	unsigned i;

	for (i = 0; i < *n; i++) {
		if (strcmp(counts[i].name, name) == 0) {
			counts[i].count++;
			return;
		}
	}
	if (*n == LBCLIENT_BACKENDS_MAX)
		return;
	snprintf(counts[*n].name, sizeof(counts[*n].name), "%s", name);
	counts[(*n)++].count = 1;
}

/* Names come from the wire: print them as JSON strings, escaped. */
static void
print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void
client_report(const struct client *client)
{
	static struct backend_count backends[LBCLIENT_BACKENDS_MAX];
	unsigned errors[LBCLIENT_ERROR_MAX] = {0};
	unsigned i, nbackends = 0, ok = 0, changed = 0, failed = 0;
	const struct conn *conn;
	bool json = client->opts.json;

	for (i = 0; i < client->opts.conns; i++) {
		conn = &client->conns[i];
		errors[conn->error]++;
		if (conn->error != LBCLIENT_ERROR_none)
			failed++;
		else if (conn->changed)
			changed++;
		else
			ok++;
		if (conn->backend[0])
			count_backend(backends, &nbackends, conn->backend);
	}
	printf(json ? "{\"conns\":%u,\"ok\":%u,\"failed\":%u,\"backend_changed\":%u,"
	              "\"per_backend\":{" :
	              "conns=%u ok=%u failed=%u backend_changed=%u per_backend:",
	       client->opts.conns, ok, failed, changed);
	for (i = 0; i < nbackends; i++) {
		if (json) {
			fputs(i ? "," : "", stdout);
			print_json_string(backends[i].name);
			printf(":%u", backends[i].count);
		} else {
			printf(" %s=%u", backends[i].name, backends[i].count);
		}
	}
	printf(json ? "},\"errors\":{" : " errors:");
	for (i = 1; i < LBCLIENT_ERROR_MAX; i++)
		printf(json ? "%s\"%s\":%u" : "%s%s=%u",
		       json ? (i > 1 ? "," : "") : " ",
		       lbclient_error_names[i], errors[i]);
	printf(json ? "}}\n" : "\n");
}

static bool
client_all_ok(const struct client *client)
{
	unsigned i;

	for (i = 0; i < client->opts.conns; i++)
		if (client->conns[i].error != LBCLIENT_ERROR_none ||
		    client->conns[i].changed)
			return false;
	return true;
}

int
main(int argc, char **argv)
{
	static struct client client;

	if (options_parse(argc, argv, &client.opts) < 0) {
		usage(stderr);
		return 2;
	}
	netaddr_raise_fd_limit();
	if (client_open(&client) < 0 || client_run(&client) < 0) {
		fprintf(stderr, "lbclient: %s\n", strerror(errno));
		return 1;
	}
	client_report(&client);
	return client_all_ok(&client) ? 0 : 1;
}
