/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpimport: imports entries into a real maglb-dataplane as maglb-syncd
 * does, for the dataplane's import benchmark (tests/bench/dataplane-import).
 *
 *   dpimport [--service NAME] (--count N | --seconds S) [--rate N]
 *            [--batch N] [--window N] [--offset N] [--lifetime-ms MS]
 *            [--vip ADDR] [--port P] [--backends ADDR,ADDR,...]
 *
 * An async IPC client (lib/ipc_client.h, the one syncd uses, with its bulk
 * lane) of the dataplane's service (default maglb-dataplane) sends
 * IMPORT_BATCH messages of NEW entries: established IPv4 TCP flows to
 * --vip:--port (default 198.18.1.1:80, the first VIP of
 * tests/bench/bench-conf.sh), each from its own client: flow i (numbered
 * from --offset) is number j = i x 2654435761 mod 2^15 x 64000 (a
 * permutation: the multiplier is a prime), client 198.18.128.0/17 +
 * j / 64000, port 1024 + j % 64000. Scattered, as real clients are: the
 * synced table hashes keys with CRC32-C, which is linear, and consecutive
 * ports of a few clients fill half its buckets twice over (its cuckoo
 * moves then took a quarter of the import's time). Its backend is the
 * next of --backends in turn (default
 * 198.18.2.11-14, that VIP's), an idle lifetime of --lifetime-ms (default
 * 900000: the established timeout an exporting dataplane gives, which
 * syncd passes on less the little time the entry spent in its cache).
 *
 * At most --batch entries a message (default 4096, syncd's
 * IMPORT_BATCH_MAX), at most --window messages in flight (default 4:
 * 16384 entries, the most the bulk lane holds), and no more than the bulk
 * lane lets through. --rate 0 (the default): as fast as the dataplane
 * acknowledges, a message sent as soon as the window and the lane have
 * room. --rate N: N entries a second, paced by a 1 ms timerfd: each tick
 * (and each answer) sends what the rate allowed since the start and is not
 * sent yet, in messages of at most --batch, as syncd sends what it has
 * queued; what the window holds back waits (backlog_max says the most that
 * waited). It stops making entries after --count of them, or --seconds
 * after the first send (at a rate, once what the rate allowed until then
 * is sent, or 1 s later with the rest unsent), or on SIGINT or SIGTERM,
 * then waits for the answers in flight.
 *
 * Every answer is checked: an acknowledgement is WIRE_CTL_ERROR with code
 * 0; an error answer, a timeout or a lost connection counts as an error
 * (its entries are not acknowledged), the first one is told on stderr.
 * Prints one JSON line on stdout at the end:
 *
 *   {"rate":..,"batch":..,"window":..,"sent":..,"acked":..,"errors":..,
 *    "requests":..,"elapsed_ms":..,"entries_per_s":..,"ack_p50_ms":..,
 *    "ack_p99_ms":..,"ack_max_ms":..,"backlog_max":..,"unsent":..,
 *    "bulk_again":..}
 *
 * sent and acked count entries; errors and requests messages; elapsed_ms
 * runs from the first send to the last answer, entries_per_s is acked over
 * it; ack_*_ms are the messages' times from ipc_async_send() to their
 * answer; unsent what a rate allowed that the end came before;
 * bulk_again the sends the bulk lane refused (retried). The dataplane
 * acknowledges a batch whatever its entries were: whether they went into
 * its synced table is in its counters (control IMPORTED, IMPORT_REJECTED,
 * IMPORT_FULL; synced ENTRIES).
 *
 * Exit status: 0 every entry sent was acknowledged; 1 an error (above), or
 * the dataplane not reachable; 2 bad arguments (the usage on stderr).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <qb/qbloop.h>
#include <qb/qblog.h>

#include "lib/ipc.h"
#include "lib/ipc_client.h"
#include "proto/wire.h"

enum {
	BACKENDS_MAX = 16,
	TICK_MS = 1,
	BATCH_DEFAULT = 4096,           /* syncd's IMPORT_BATCH_MAX */
	WINDOW_DEFAULT = 4,             /* x 4096: the bulk lane's cap */
	PORTS_PER_CLIENT = 64000,
	CLIENTS = 1 << 15,              /* 198.18.128.0/17 */
	CONNECT_WAIT_MS = 10000,        /* no connection by then: give up */
	CATCH_UP_MS = 1000,             /* past --seconds, the rate's debt is sent */
};

/* Flow numbers scattered by this prime: coprime to CLIENTS x PORTS_PER_CLIENT. */
static const uint64_t FLOW_SCATTER = 2654435761u;

/* A message in flight. */
struct req {
	struct imp *imp;
	double sent_ns;
	unsigned entries;
	bool busy;
};

struct imp {
	qb_loop_t *loop;
	struct ipc_async *a;
	const char *service;
	uint64_t rate, count, offset, seconds;
	uint32_t lifetime_ms;
	unsigned batch, window;
	uint32_t vip, port;
	uint32_t backends[BACKENDS_MAX];
	unsigned n_backends;

	bool up;                        /* connected once */
	bool making_done;               /* no more entries to send */
	bool stopped;
	uint64_t sent, acked, errors, requests, backlog_max, unsent;
	unsigned inflight;
	double create_ns, start_ns, end_ns;
	struct req *reqs;               /* window slots */
	struct wire_flow *flows;        /* the message being built */
	double *lat_ms;                 /* an answer's latency each */
	size_t lat_n, lat_cap;
	int tick_fd;
	int status;                     /* exit status */
};

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The first failure is told; any sets the exit status. */
static void
fail(struct imp *m, const char *what, int rc)
{
	char buf[256];

	if (m->status == 0)
		fprintf(stderr, "dpimport: %s: %s\n", what,
			ipc_strerror(rc, m->service, buf, sizeof(buf)));
	m->status = 1;
}

/* Flow number i, as the header says. */
static void
make_flow(const struct imp *m, uint64_t i, struct wire_flow *f)
{
	const uint64_t flows = (uint64_t)CLIENTS * PORTS_PER_CLIENT;
	uint64_t j = i * FLOW_SCATTER % flows;  /* i < 2^31: no overflow */
	uint32_t client = htonl(0xc6128000u | (uint32_t)(j / PORTS_PER_CLIENT));
	uint32_t backend = m->backends[i % m->n_backends];

	memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->proto = IPPROTO_TCP;
	f->vip_port = (uint16_t)m->port;
	f->client_port = (uint16_t)(1024 + j % PORTS_PER_CLIENT);
	f->backend_family = AF_INET;
	f->lifetime_ms = m->lifetime_ms;
	f->flags = WIRE_FLOW_ESTABLISHED;
	memcpy(f->vip, &m->vip, 4);
	memcpy(f->client, &client, 4);
	memcpy(f->backend, &backend, 4);
}

static void
maybe_stop(struct imp *m)
{
	if (m->making_done && m->inflight == 0 && !m->stopped) {
		m->stopped = true;
		m->end_ns = now_ns();
		qb_loop_stop(m->loop);
	}
}

static void
lat_add(struct imp *m, double ms)
{
	if (m->lat_n == m->lat_cap) {
		size_t cap = m->lat_cap ? 2 * m->lat_cap : 4096;
		double *p = realloc(m->lat_ms, cap * sizeof(*p));

		if (p == NULL)
			return;         /* a latency less, the counts stay right */
		m->lat_ms = p;
		m->lat_cap = cap;
	}
	m->lat_ms[m->lat_n++] = ms;
}

static void pump(struct imp *m);

static void
on_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct req *r = arg;
	struct imp *m = r->imp;

	r->busy = false;
	m->inflight--;
	if (rc == 0 && resp->kind == WIRE_CTL_ERROR && resp->error.code == 0) {
		m->acked += r->entries;
		lat_add(m, (now_ns() - r->sent_ns) / 1e6);
	} else {
		m->errors++;
		if (rc < 0)
			fail(m, "IMPORT_BATCH", rc);
		else if (m->status == 0) {
			fprintf(stderr, "dpimport: IMPORT_BATCH answered %s, code %d: %s\n",
				wire_ctl_kind_names[resp->kind],
				resp->kind == WIRE_CTL_ERROR ? resp->error.code : 0,
				resp->kind == WIRE_CTL_ERROR ? resp->error.message : "");
			m->status = 1;
		}
		m->making_done = true;  /* an error ends the run */
	}
	pump(m);
	maybe_stop(m);
}

/* The entries owed now: all that remain (--rate 0), or what the rate allowed. */
static uint64_t
owed(struct imp *m, double now)
{
	uint64_t allowed = UINT64_MAX;

	if (m->rate != 0) {
		double s = (now - m->start_ns) / 1e9;

		if (m->seconds != 0 && s > (double)m->seconds)
			s = (double)m->seconds;
		allowed = (uint64_t)(s * (double)m->rate);
	}
	if (m->count != 0 && allowed > m->count)
		allowed = m->count;
	return allowed > m->sent ? allowed - m->sent : 0;
}

/* No more entries: at a rate, what it allowed and was not sent is unsent. */
static void
end_making(struct imp *m, double now)
{
	if (!m->making_done && m->up && m->rate != 0)
		m->unsent = owed(m, now);
	m->making_done = true;
}

static struct req *
free_slot(struct imp *m)
{
	for (unsigned i = 0; i < m->window; i++)
		if (!m->reqs[i].busy)
			return &m->reqs[i];
	return NULL;
}

/* Send what is owed while the window and the bulk lane take it. */
static void
pump(struct imp *m)
{
	double now = now_ns(), end_ns = m->start_ns + (double)m->seconds * 1e9;
	bool over = m->seconds != 0 && now >= end_ns;
	uint64_t n;

	if (!m->up || m->making_done)
		return;
	if (over && m->rate == 0) {
		end_making(m, now);
		return;
	}
	while ((n = owed(m, now)) > 0) {
		struct wire_ctl_msg req = { .kind = WIRE_CTL_IMPORT_BATCH };
		struct req *r = free_slot(m);
		int rc;

		if (r == NULL)
			break;
		if (n > m->batch)
			n = m->batch;
		for (uint64_t k = 0; k < n; k++)
			make_flow(m, m->offset + m->sent + k, &m->flows[k]);
		req.flows = (struct wire_ctl_flows){ .event = WIRE_FLOW_EVENT_NEW,
						     .entries = m->flows, .count = n };
		*r = (struct req){ .imp = m, .sent_ns = now_ns(), .entries = (unsigned)n,
				   .busy = true };
		rc = ipc_async_send(m->a, &req, on_done, r);
		if (rc == -EAGAIN) {
			r->busy = false;
			break;          /* the lane or the ring: after an answer */
		}
		if (rc < 0) {
			r->busy = false;
			fail(m, "ipc_async_send", rc);
			m->making_done = true;
			return;
		}
		m->inflight++;
		m->requests++;
		m->sent += n;
	}
	n = owed(m, now);
	if (m->rate != 0 && n > m->backlog_max)
		m->backlog_max = n;
	if ((m->count != 0 && m->sent >= m->count) ||
	    (over && (n == 0 || now >= end_ns + CATCH_UP_MS * 1e6)))
		end_making(m, now);
}

static int32_t
on_tick(int32_t fd, int32_t revents, void *arg)
{
	struct imp *m = arg;
	uint64_t expirations;

	(void)revents;
	if (read(fd, &expirations, sizeof(expirations)) < 0)
		return 0;
	if (!m->up && now_ns() - m->create_ns > CONNECT_WAIT_MS * 1e6) {
		fail(m, "connect", -ETIMEDOUT);
		m->making_done = true;
	}
	pump(m);
	maybe_stop(m);
	return 0;
}

static void
on_up(void *arg)
{
	struct imp *m = arg;

	if (m->up)
		return;         /* a reconnect: the run ended at the loss */
	m->up = true;
	m->start_ns = now_ns();
	pump(m);
	maybe_stop(m);
}

static void
on_down(void *arg, int err)
{
	struct imp *m = arg;

	fail(m, m->up ? "connection lost" : "connect", err);
	m->making_done = true;
	maybe_stop(m);          /* those in flight get done(-ENOTCONN) */
}

static int32_t
on_signal(int32_t sig, void *arg)
{
	struct imp *m = arg;

	(void)sig;
	end_making(m, now_ns());
	maybe_stop(m);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
report(struct imp *m)
{
	double ms = m->start_ns > 0 ? (m->end_ns - m->start_ns) / 1e6 : 0;
	double p50 = 0, p99 = 0, max = 0;
	size_t n = m->lat_n;

	if (n > 0) {
		qsort(m->lat_ms, n, sizeof(*m->lat_ms), cmp_double);
		p50 = m->lat_ms[n / 2];
		p99 = m->lat_ms[n * 99 / 100];
		max = m->lat_ms[n - 1];
	}
	printf("{\"rate\":%llu,\"batch\":%u,\"window\":%u,\"sent\":%llu,\"acked\":%llu,"
	       "\"errors\":%llu,\"requests\":%llu,\"elapsed_ms\":%.1f,\"entries_per_s\":%.0f,"
	       "\"ack_p50_ms\":%.3f,\"ack_p99_ms\":%.3f,\"ack_max_ms\":%.3f,"
	       "\"backlog_max\":%llu,\"unsent\":%llu,\"bulk_again\":%llu}\n",
	       (unsigned long long)m->rate, m->batch, m->window, (unsigned long long)m->sent,
	       (unsigned long long)m->acked, (unsigned long long)m->errors,
	       (unsigned long long)m->requests, ms, ms > 0 ? (double)m->acked / ms * 1e3 : 0.0,
	       p50, p99, max, (unsigned long long)m->backlog_max,
	       (unsigned long long)m->unsent,
	       m->a != NULL ? (unsigned long long)ipc_async_counters(m->a)
		       ->counts[IPC_ASYNC_BULK_AGAIN] : 0ull);
	fflush(stdout);
}

static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
parse_backends(struct imp *m, char *list)
{
	m->n_backends = 0;
	for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
		struct in_addr a;

		if (m->n_backends == BACKENDS_MAX || inet_pton(AF_INET, tok, &a) != 1)
			return -1;
		m->backends[m->n_backends++] = a.s_addr;
	}
	return m->n_backends > 0 ? 0 : -1;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: dpimport [--service NAME] (--count N | --seconds S) [--rate N]\n"
		"                [--batch 1..%d] [--window 1..%d] [--offset N] [--lifetime-ms MS]\n"
		"                [--vip ADDR] [--port P] [--backends ADDR,ADDR,...]\n",
		IPC_FLOWS_PER_MSG_MAX, IPC_ASYNC_WINDOW);
}

static int
parse(int argc, char **argv, struct imp *m)
{
	static const struct option opts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },
		{ "batch", required_argument, NULL, 'b' },
		{ "window", required_argument, NULL, 'w' },
		{ "offset", required_argument, NULL, 'o' },
		{ "lifetime-ms", required_argument, NULL, 'l' },
		{ "vip", required_argument, NULL, 'v' },
		{ "port", required_argument, NULL, 'p' },
		{ "backends", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	const uint64_t flows_max = (uint64_t)CLIENTS * PORTS_PER_CLIENT;
	struct in_addr a;
	uint64_t v;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (optarg[0] == '\0' || strlen(optarg) >= WIRE_NAME_MAX)
				return -1;
			m->service = optarg;
			break;
		case 'n':
			if (parse_u64(optarg, 1, flows_max, &m->count) < 0)
				return -1;
			break;
		case 't':
			if (parse_u64(optarg, 1, 86400, &m->seconds) < 0)
				return -1;
			break;
		case 'r':
			if (parse_u64(optarg, 0, 1000000000, &m->rate) < 0)
				return -1;
			break;
		case 'b':
			if (parse_u64(optarg, 1, IPC_FLOWS_PER_MSG_MAX, &v) < 0)
				return -1;
			m->batch = (unsigned)v;
			break;
		case 'w':
			if (parse_u64(optarg, 1, IPC_ASYNC_WINDOW, &v) < 0)
				return -1;
			m->window = (unsigned)v;
			break;
		case 'o':
			if (parse_u64(optarg, 0, flows_max - 1, &m->offset) < 0)
				return -1;
			break;
		case 'l':
			if (parse_u64(optarg, 1, UINT32_MAX, &v) < 0)
				return -1;
			m->lifetime_ms = (uint32_t)v;
			break;
		case 'v':
			if (inet_pton(AF_INET, optarg, &a) != 1)
				return -1;
			m->vip = a.s_addr;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 65535, &v) < 0)
				return -1;
			m->port = (uint32_t)v;
			break;
		case 'B':
			if (parse_backends(m, optarg) < 0)
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc || (m->count == 0 && m->seconds == 0))
		return -1;
	/* every flow numbered distinct: --count past the last client wraps */
	if (m->count != 0 && m->count > flows_max - m->offset)
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct ipc_async_ops ops = { .up = on_up, .down = on_down };
	struct imp m = { .batch = BATCH_DEFAULT, .window = WINDOW_DEFAULT, .port = 80,
			 .lifetime_ms = 900000, .tick_fd = -1 };
	char defaults[] = "198.18.2.11,198.18.2.12,198.18.2.13,198.18.2.14";
	qb_loop_signal_handle sh;
	struct in_addr vip;

	inet_pton(AF_INET, "198.18.1.1", &vip);
	m.vip = vip.s_addr;
	parse_backends(&m, defaults);
	if (parse(argc, argv, &m) < 0) {
		usage();
		return 2;
	}
	qb_log_init("dpimport", LOG_USER, LOG_WARNING);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, QB_FALSE);
	qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*", LOG_WARNING);
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
	m.reqs = calloc(m.window, sizeof(*m.reqs));
	m.flows = calloc(m.batch, sizeof(*m.flows));
	m.loop = qb_loop_create();
	if (m.reqs == NULL || m.flows == NULL || m.loop == NULL) {
		fprintf(stderr, "dpimport: out of memory\n");
		return 1;
	}
	qb_loop_signal_add(m.loop, QB_LOOP_HIGH, SIGTERM, &m, on_signal, &sh);
	qb_loop_signal_add(m.loop, QB_LOOP_HIGH, SIGINT, &m, on_signal, &sh);
	/* a timerfd: a 1 ms qb_loop timer spins through its last millisecond */
	m.tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m.tick_fd < 0 ||
	    timerfd_settime(m.tick_fd, 0, &(struct itimerspec){
		    .it_interval.tv_nsec = TICK_MS * 1000000L,
		    .it_value.tv_nsec = TICK_MS * 1000000L }, NULL) != 0 ||
	    qb_loop_poll_add(m.loop, QB_LOOP_MED, m.tick_fd, POLLIN, &m, on_tick) != 0) {
		fprintf(stderr, "dpimport: cannot set up the 1 ms tick\n");
		return 1;
	}
	m.create_ns = now_ns();
	m.a = ipc_async_create(m.loop, m.service, &ops, &m);
	if (m.a == NULL) {
		fprintf(stderr, "dpimport: cannot create the IPC client\n");
		return 1;
	}
	qb_loop_run(m.loop);
	if (m.end_ns == 0)
		m.end_ns = now_ns();
	if (m.acked != m.sent && m.status == 0) {
		fprintf(stderr, "dpimport: %llu of %llu entries acknowledged\n",
			(unsigned long long)m.acked, (unsigned long long)m.sent);
		m.status = 1;
	}
	report(&m);
	ipc_async_destroy(m.a);
	qb_loop_poll_del(m.loop, m.tick_fd);
	close(m.tick_fd);
	qb_loop_destroy(m.loop);
	free(m.reqs);
	free(m.flows);
	free(m.lat_ms);
	return m.status;
}
