/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpgen: a stand-in for maglb-dataplane that speaks its IPC to maglb-syncd,
 * for the sync benchmark (tests/bench/sync-vs-cpg): it serves the export
 * stream with generated new flows at a given rate, and acknowledges
 * IMPORT_BATCH messages, counting them.
 *
 *   dpgen --service NAME [--rate N] [--rate-file F] [--count N | --sink]
 *         [--batch N] [--offset N] [--flows N] [--refresh S] [--lossy]
 *         [--mix NEW:REFRESH:CLOSE]
 *         [--vip ADDR] [--port P] [--backends ADDR,ADDR,...]
 *
 * It prints "ready" once serving. Once syncd subscribes it exports NEW
 * entries (IPv4 TCP flows to --vip:--port from distinct clients, backends
 * in turn) in EXPORT_BATCH events of --batch entries (default 1024), at
 * --rate entries a second (0: as fast as the event ring takes them; at a
 * rate, each 1 ms tick sends what the rate allowed since, as the dataplane's
 * control thread does) until
 * --count have gone (0: no end); --sink exports nothing. Flows are
 * numbered from --offset (default 0): a second run with --offset of the
 * first one's --count exports other flows. With --flows N the NEW
 * entries cycle over N flows, and each time a flow is NEW again its backend
 * is the next one of --backends (so a peer that missed the last NEW holds
 * another backend). --refresh S: once the NEW entries end (--count went,
 * or SIGUSR1), every S seconds, the first S seconds after, a REFRESH of
 * every flow made (at most --flows) with the backend its last NEW gave it:
 * the flows stay alive, and the dataplane refreshes each every
 * flows.refresh_interval. --mix (percentages, with --flows): once every
 * flow was made once, the stream is NEW, REFRESH and CLOSE entries in these
 * shares, a REFRESH naming a flow made a quarter of --flows NEW entries
 * ago, a CLOSE one made half of them ago (so the peer's cache holds a
 * steady number of entries: the flows of the last half cycle, and those of
 * the half before that no CLOSE ended). SIGHUP reads a new rate from
 * --rate-file (one number). A full event ring is not a loss: the batch
 * waits for the next tick; with --lossy and a --rate, a batch of the stream
 * the ring does not take is lost instead, counted (dropped) and reported
 * in the dropped count of the next batch (of any event), as the
 * dataplane's export ring loses entries under overload.
 * Every second, and on SIGTERM or SIGINT (then it exits), it prints one
 * JSON line on stdout:
 *   {"t_ms":..,"exported":..,"dropped":..,"refreshed":..,"imported":..,
 *    "import_batches":..,"import_per_s":..,"export_per_s":..,
 *    "held":..,"digest":..,"unheld":..,"new":..,"late":..}
 * where exported counts the entries of the stream (NEW, and the --mix's
 * REFRESH and CLOSE) the ring took, dropped those it lost, new the NEW
 * entries made, late what the rate allowed that this process, short of
 * CPU, did not make (more than 100 ms behind); the rates cover the last
 * second. With --flows, held and digest say which flows the
 * process holds and with which backend, so two of them compare: the
 * exporter holds every flow made with its last NEW's backend; a --sink
 * holds what IMPORT_BATCH messages set (CLOSE removes), for the flows
 * numbered below --flows (imports of others are counted, not held). The
 * digest is a sum over held flows of a hash of (flow number, backend);
 * an exporter's does not know of a --mix's CLOSE entries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
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
#include "lib/ipc_server.h"

enum { BACKENDS_MAX = 16, TICK_MS = 1 };

struct gen {
	qb_loop_t *loop;
	struct ipc_server *server;
	uint64_t conn;                  /* the subscriber, 0 none */
	uint64_t rate, count, batch, offset;
	uint64_t flows;                 /* NEW cycles over this many, 0 no end */
	uint64_t mix[WIRE_FLOW_EVENT_MAX];      /* --mix: shares of the stream */
	uint64_t made_ev[WIRE_FLOW_EVENT_MAX];  /* of each, once the mix began */
	uint64_t made_new;              /* NEW entries made, exported or lost */
	uint64_t mix_base;              /* made_new when the mix began */
	bool mixing;                    /* REFRESH and CLOSE in the stream */
	uint64_t late;                  /* entries the rate allowed, not made */
	uint64_t refresh_ms;            /* a REFRESH pass this often, 0 none */
	bool sink, lossy, new_done;
	const char *rate_file;
	uint32_t vip, port;
	uint32_t backends[BACKENDS_MAX];
	unsigned n_backends;
	uint64_t exported, imported, import_batches;
	uint64_t dropped, unreported;   /* --lossy: lost; not yet told syncd */
	uint64_t refreshed;             /* REFRESH entries sent */
	uint64_t refresh_at, refresh_end;       /* the pass under way: next, end */
	uint64_t refresh_due_ms;        /* the next pass starts, 0 not yet set */
	uint64_t last_exported, last_imported;
	double credit;                  /* entries the rate allows now */
	uint64_t start_ms, last_ms, report_ms;
	uint64_t seq;
	struct wire_flow *wflows;       /* a batch being built */
	uint32_t *held;                 /* --sink --flows: backend by flow, 0 none */
	uint64_t held_n, digest;        /* the sink's flows held, their digest */
	uint64_t unheld;                /* the sink's imports past --flows */
	int tick_fd;                    /* a timerfd: a 1 ms qb_loop timer spins */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void held_digest(const struct gen *g, uint64_t *held, uint64_t *digest);

static void
report(struct gen *g, uint64_t now)
{
	double s = (double)(now - g->report_ms) / 1000.0;
	uint64_t held, digest;

	held_digest(g, &held, &digest);
	printf("{\"t_ms\":%llu,\"exported\":%llu,\"dropped\":%llu,\"refreshed\":%llu,"
	       "\"imported\":%llu,\"import_batches\":%llu,"
	       "\"import_per_s\":%.0f,\"export_per_s\":%.0f,\"held\":%llu,"
	       "\"digest\":\"%016llx\",\"unheld\":%llu,\"new\":%llu,\"late\":%llu}\n",
	       (unsigned long long)(now - g->start_ms), (unsigned long long)g->exported,
	       (unsigned long long)g->dropped, (unsigned long long)g->refreshed,
	       (unsigned long long)g->imported, (unsigned long long)g->import_batches,
	       s > 0 ? (double)(g->imported - g->last_imported) / s : 0.0,
	       s > 0 ? (double)(g->exported - g->last_exported) / s : 0.0,
	       (unsigned long long)held, (unsigned long long)digest,
	       (unsigned long long)g->unheld, (unsigned long long)g->made_new,
	       (unsigned long long)g->late);
	fflush(stdout);
	g->last_imported = g->imported;
	g->last_exported = g->exported;
	g->report_ms = now;
}

/*
 * Flow number i: a client of 198.18.128.0/17 (i / 64000), a port (i % 64000);
 * its backend the next one of the list each time it is NEW again (turn).
 */
static void
make_flow(const struct gen *g, uint64_t i, uint64_t turn, struct wire_flow *f)
{
	uint32_t client = htonl(0xc6128000u | (uint32_t)(i / 64000 & 0x7fff));
	uint32_t vip = g->vip, backend = g->backends[(i + turn) % g->n_backends];

	memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->proto = IPPROTO_TCP;
	f->vip_port = (uint16_t)g->port;
	f->client_port = (uint16_t)(1024 + i % 64000);
	f->backend_family = AF_INET;
	f->lifetime_ms = 900000;
	f->flags = WIRE_FLOW_ESTABLISHED;
	memcpy(f->vip, &vip, 4);
	memcpy(f->client, &client, 4);
	memcpy(f->backend, &backend, 4);
}

/* The n-th NEW entry (from 0): its flow number and turn. */
static void
new_flow(const struct gen *g, uint64_t n, struct wire_flow *f)
{
	uint64_t i = g->flows != 0 ? n % g->flows : n, turn = g->flows != 0 ? n / g->flows : 0;

	make_flow(g, g->offset + i, turn, f);
}

/* Entries of the stream made so far (any event), exported or lost. */
static uint64_t
made(const struct gen *g)
{
	return g->exported + g->dropped;
}

/* The flows made so far: how many there are to refresh. */
static uint64_t
flows_live(const struct gen *g)
{
	return g->flows != 0 && g->made_new > g->flows ? g->flows : g->made_new;
}

/* Flow j of those live (j < flows_live()), as its last NEW made it. */
static void
live_flow(const struct gen *g, uint64_t j, struct wire_flow *f)
{
	uint64_t turn = g->flows != 0 ? (g->made_new - 1 - j) / g->flows : 0;

	make_flow(g, g->offset + j, turn, f);
}

/*
 * The k-th REFRESH or CLOSE of the mix names the flow of NEW number t, age
 * NEW entries ago (a quarter of --flows for a REFRESH, a half for a CLOSE:
 * no flow is refreshed once closed), spread as evenly as the NEW entries.
 * Within the last --flows NEW entries, so t is that flow's last NEW.
 */
static void
mix_flow(const struct gen *g, enum wire_flow_event ev, uint64_t k, struct wire_flow *f)
{
	uint64_t age = ev == WIRE_FLOW_EVENT_REFRESH ? g->flows / 4 : g->flows / 2;
	uint64_t t = g->mix_base + k * g->mix[WIRE_FLOW_EVENT_NEW] / g->mix[ev];

	t = t > age ? t - age : 0;
	if (t >= g->made_new)
		t = g->made_new - 1;
	if (t + g->flows < g->made_new)
		t = g->made_new - g->flows;
	make_flow(g, g->offset + t % g->flows, t / g->flows, f);
}

/*
 * The event the stream owes most of, and how many (at most n): NEW alone
 * until every flow was made once, then each event its --mix share.
 */
static enum wire_flow_event
next_event(struct gen *g, uint64_t n, uint64_t *k)
{
	enum wire_flow_event best = WIRE_FLOW_EVENT_NEW;
	uint64_t total = 0, want_best = n;

	if (!g->mixing && g->mix[WIRE_FLOW_EVENT_NEW] < 100 && g->made_new >= g->flows) {
		g->mixing = true;
		g->mix_base = g->made_new;
	}
	if (g->mixing) {
		want_best = 0;
		for (int e = 0; e < WIRE_FLOW_EVENT_MAX; e++)
			total += g->made_ev[e];
		for (int e = 0; e < WIRE_FLOW_EVENT_MAX; e++) {
			uint64_t want = (total + n) * g->mix[e] / 100;

			want = want > g->made_ev[e] ? want - g->made_ev[e] : 0;
			if (want > want_best) {
				best = (enum wire_flow_event)e;
				want_best = want;
			}
		}
	}
	*k = want_best < n ? want_best : n;
	if (*k == 0)
		*k = 1;         /* rounding: one of the largest share */
	return best;
}

/* One held flow's share of a digest: a sum of these commutes. */
static uint64_t
mix(uint64_t i, uint32_t backend)
{
	uint64_t x = i << 32 ^ backend;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ x >> 31;
}

static void
held_digest(const struct gen *g, uint64_t *held, uint64_t *digest)
{
	struct wire_flow f;
	uint32_t backend;

	*held = *digest = 0;
	if (g->flows == 0)
		return;
	if (g->sink) {
		*held = g->held_n;
		*digest = g->digest;
		return;
	}
	*held = flows_live(g);
	for (uint64_t j = 0; j < *held; j++) {
		live_flow(g, j, &f);
		memcpy(&backend, f.backend, 4);
		*digest += mix(g->offset + j, backend);
	}
}

/* The sink keeps what an import batch says of the flows it numbers. */
static void
hold(struct gen *g, const struct wire_ctl_flows *fl)
{
	for (size_t k = 0; k < fl->count; k++) {
		const struct wire_flow *f = &fl->entries[k];
		uint32_t client, backend = 0;
		uint64_t i;

		memcpy(&client, f->client, 4);
		i = (uint64_t)(ntohl(client) & 0x7fff) * 64000 + (uint64_t)(f->client_port - 1024);
		if (f->family != AF_INET || f->client_port < 1024 || i >= g->flows) {
			g->unheld++;
			continue;
		}
		if (fl->event != WIRE_FLOW_EVENT_CLOSE)
			memcpy(&backend, f->backend, 4);
		if (g->held[i] != 0) {
			g->digest -= mix(i, g->held[i]);
			g->held_n--;
		}
		g->held[i] = backend;
		if (backend != 0) {
			g->digest += mix(i, backend);
			g->held_n++;
		}
	}
}

/* A batch of any event tells syncd what was lost since the last one went. */
static int
send_batch(struct gen *g, enum wire_flow_event event, uint64_t n)
{
	struct wire_ctl_msg m = { .kind = WIRE_CTL_EXPORT_BATCH };
	int rc;

	m.request_id = ++g->seq;
	m.flows = (struct wire_ctl_flows){ .event = event, .entries = g->wflows, .count = n,
					   .dropped = g->unreported };
	rc = ipc_server_send_event(g->server, g->conn, &m);
	if (rc == 0)
		g->unreported = 0;
	return rc;
}

/* The NEW entries have ended: --count went, or SIGUSR1. */
static bool
new_ended(const struct gen *g)
{
	return g->new_done || (g->count != 0 && made(g) >= g->count);
}

/* The REFRESH pass due, batch by batch while the ring takes them. */
static void
refresh_some(struct gen *g, uint64_t now)
{
	if (g->refresh_ms == 0 || g->conn == 0 || !new_ended(g))
		return;
	if (g->refresh_due_ms == 0)
		g->refresh_due_ms = now + g->refresh_ms;
	if (g->refresh_at == g->refresh_end) {
		if (now < g->refresh_due_ms)
			return;
		g->refresh_due_ms = now + g->refresh_ms;
		g->refresh_at = 0;
		g->refresh_end = flows_live(g);
	}
	while (g->refresh_at < g->refresh_end) {
		uint64_t n = g->refresh_end - g->refresh_at;

		if (n > g->batch)
			n = g->batch;
		for (uint64_t i = 0; i < n; i++)
			live_flow(g, g->refresh_at + i, &g->wflows[i]);
		if (send_batch(g, WIRE_FLOW_EVENT_REFRESH, n) < 0)
			return;         /* ring full: next tick */
		g->refresh_at += n;
		g->refreshed += n;
	}
}

static void
export_some(struct gen *g, uint64_t now)
{
	if (g->rate != 0) {
		g->credit += (double)g->rate * (double)(now - g->last_ms) / 1000.0;
		if (g->credit > (double)g->rate / 10) {
			/* at most 100 ms late: what is past that is not made */
			g->late += (uint64_t)(g->credit - (double)g->rate / 10);
			g->credit = (double)g->rate / 10;
		}
	}
	g->last_ms = now;
	while (g->conn != 0 && !g->sink && !new_ended(g)) {
		uint64_t n = g->batch, m = made(g);
		enum wire_flow_event ev;

		if (g->count != 0 && g->count - m < n)
			n = g->count - m;
		/* at a rate, what the last tick allowed, as the dataplane's
		 * control thread sends what its workers exported since */
		if (g->rate != 0 && g->credit < (double)n)
			n = (uint64_t)g->credit;
		if (n == 0)
			return;
		ev = next_event(g, n, &n);
		for (uint64_t i = 0; i < n; i++) {
			if (ev == WIRE_FLOW_EVENT_NEW)
				new_flow(g, g->made_new + i, &g->wflows[i]);
			else
				mix_flow(g, ev, g->made_ev[ev] + i, &g->wflows[i]);
		}
		if (send_batch(g, ev, n) < 0) {
			if (!g->lossy || g->rate == 0)
				return;         /* ring full: next tick */
			g->dropped += n;
			g->unreported += n;
		} else {
			g->exported += n;
		}
		if (ev == WIRE_FLOW_EVENT_NEW)
			g->made_new += n;
		if (g->mixing)
			g->made_ev[ev] += n;
		if (g->rate != 0)
			g->credit -= (double)n;
	}
}

static int32_t
on_tick(int32_t fd, int32_t revents, void *arg)
{
	struct gen *g = arg;
	uint64_t now = now_ms(), expirations;

	(void)revents;
	if (read(fd, &expirations, sizeof(expirations)) < 0)
		return 0;
	refresh_some(g, now);
	export_some(g, now);
	if (now - g->report_ms >= 1000)
		report(g, now);
	return 0;
}

static int
serve(void *ctx, uint64_t conn_id, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp,
      char *errmsg, size_t errlen)
{
	struct gen *g = ctx;

	switch (req->kind) {
	case WIRE_CTL_EXPORT_SUBSCRIBE:
		g->conn = req->export_subscribe.enable ? conn_id : 0;
		g->last_ms = now_ms();
		return 0;
	case WIRE_CTL_IMPORT_BATCH:
		g->imported += req->flows.count;
		g->import_batches++;
		if (g->held != NULL)
			hold(g, &req->flows);
		return 0;
	case WIRE_CTL_DUMP_REQUEST:
		resp->kind = WIRE_CTL_DUMP_RESPONSE;    /* empty tables */
		return 0;
	case WIRE_CTL_STATUS_REQUEST:
		resp->kind = WIRE_CTL_STATUS_RESPONSE;
		return 0;
	default:
		snprintf(errmsg, errlen, "dpgen does not serve %s", wire_ctl_kind_names[req->kind]);
		return -EOPNOTSUPP;
	}
}

static void
disconnected(void *ctx, uint64_t conn_id)
{
	struct gen *g = ctx;

	if (g->conn == conn_id)
		g->conn = 0;
}

static int32_t
on_signal(int32_t sig, void *arg)
{
	struct gen *g = arg;

	if (sig == SIGUSR1) {
		g->new_done = true;
		report(g, now_ms());    /* what was made, for the caller to count */
		return 0;
	}
	if (sig == SIGHUP) {
		FILE *f = g->rate_file != NULL ? fopen(g->rate_file, "re") : NULL;
		unsigned long long rate;

		if (f != NULL && fscanf(f, "%llu", &rate) == 1) {
			g->rate = rate;
			g->credit = 0;
		}
		if (f != NULL)
			fclose(f);
		return 0;
	}
	report(g, now_ms());
	qb_loop_stop(g->loop);
	return 0;
}

static int
parse_backends(struct gen *g, char *list)
{
	for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
		struct in_addr a;

		if (g->n_backends == BACKENDS_MAX || inet_pton(AF_INET, tok, &a) != 1)
			return -1;
		g->backends[g->n_backends++] = a.s_addr;
	}
	return g->n_backends > 0 ? 0 : -1;
}

/* NEW:REFRESH:CLOSE, percentages adding up to 100, NEW's above 0. */
static int
parse_mix(struct gen *g, const char *arg)
{
	unsigned long long n, r, c;
	char tail;

	if (sscanf(arg, "%llu:%llu:%llu%c", &n, &r, &c, &tail) != 3 || n == 0 ||
	    n + r + c != 100)
		return -1;
	g->mix[WIRE_FLOW_EVENT_NEW] = n;
	g->mix[WIRE_FLOW_EVENT_REFRESH] = r;
	g->mix[WIRE_FLOW_EVENT_CLOSE] = c;
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: dpgen --service NAME [--rate N] [--rate-file F] "
		"[--count N | --sink] [--batch N] [--offset N] [--flows N] [--refresh S] "
		"[--lossy] [--mix NEW:REFRESH:CLOSE] [--vip ADDR] [--port P] "
		"[--backends ADDR,...]\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "rate", required_argument, NULL, 'r' },
		{ "count", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "offset", required_argument, NULL, 'o' },
		{ "vip", required_argument, NULL, 'v' },
		{ "port", required_argument, NULL, 'p' },
		{ "backends", required_argument, NULL, 'B' },
		{ "rate-file", required_argument, NULL, 'f' },
		{ "sink", no_argument, NULL, 'S' },
		{ "flows", required_argument, NULL, 'F' },
		{ "refresh", required_argument, NULL, 'R' },
		{ "lossy", no_argument, NULL, 'L' },
		{ "mix", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct ipc_handlers h = { .request = serve, .disconnected = disconnected };
	struct gen g = { .batch = 1024, .port = 8000, .mix = { [WIRE_FLOW_EVENT_NEW] = 100 } };
	char defaults[] = "198.18.0.21,198.18.0.22,198.18.0.23";
	const char *service = NULL;
	qb_loop_signal_handle sh;
	struct in_addr vip;
	int opt;

	inet_pton(AF_INET, "198.18.1.1", &vip);
	g.vip = vip.s_addr;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's': service = optarg; break;
		case 'r': g.rate = strtoull(optarg, NULL, 10); break;
		case 'n': g.count = strtoull(optarg, NULL, 10); break;
		case 'b': g.batch = strtoull(optarg, NULL, 10); break;
		case 'o': g.offset = strtoull(optarg, NULL, 10); break;
		case 'v':
			if (inet_pton(AF_INET, optarg, &vip) != 1) {
				usage();
				return 2;
			}
			g.vip = vip.s_addr;
			break;
		case 'p': g.port = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'f': g.rate_file = optarg; break;
		case 'S': g.sink = true; break;
		case 'F': g.flows = strtoull(optarg, NULL, 10); break;
		case 'R': g.refresh_ms = strtoull(optarg, NULL, 10) * 1000; break;
		case 'L': g.lossy = true; break;
		case 'M':
			if (parse_mix(&g, optarg) < 0) {
				usage();
				return 2;
			}
			break;
		case 'B':
			if (parse_backends(&g, optarg) < 0) {
				usage();
				return 2;
			}
			break;
		default: usage(); return 2;
		}
	}
	if (service == NULL || g.batch == 0 || g.batch > IPC_FLOWS_PER_MSG_MAX || g.port > 65535 ||
	    (g.mix[WIRE_FLOW_EVENT_NEW] < 100 && g.flows < 4)) {
		usage();
		return 2;
	}
	if (g.n_backends == 0)
		parse_backends(&g, defaults);
	qb_log_init("dpgen", LOG_USER, LOG_WARNING);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, QB_FALSE);
	qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*", LOG_WARNING);
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
	g.wflows = calloc(g.batch, sizeof(*g.wflows));
	g.held = g.sink && g.flows != 0 ? calloc(g.flows, sizeof(*g.held)) : NULL;
	g.loop = qb_loop_create();
	if (g.wflows == NULL || g.loop == NULL || (g.sink && g.flows != 0 && g.held == NULL))
		return 1;
	g.server = ipc_server_create(g.loop, service, (gid_t)-1, &h, &g);
	if (g.server == NULL)
		return 1;
	g.start_ms = g.report_ms = g.last_ms = now_ms();
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGTERM, &g, on_signal, &sh);
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGINT, &g, on_signal, &sh);
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGHUP, &g, on_signal, &sh);
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGUSR1, &g, on_signal, &sh);
	g.tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (g.tick_fd < 0 ||
	    timerfd_settime(g.tick_fd, 0, &(struct itimerspec){
		    .it_interval.tv_nsec = TICK_MS * 1000000L,
		    .it_value.tv_nsec = TICK_MS * 1000000L }, NULL) != 0 ||
	    qb_loop_poll_add(g.loop, QB_LOOP_MED, g.tick_fd, POLLIN, &g, on_tick) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	qb_loop_run(g.loop);
	ipc_server_destroy(g.server);
	qb_loop_destroy(g.loop);
	free(g.wflows);
	free(g.held);
	return 0;
}
