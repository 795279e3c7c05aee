/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpgen: a stand-in for maglb-dataplane that speaks its IPC to maglb-syncd,
 * for the sync benchmark (tests/bench/sync-vs-cpg): it serves the export
 * stream with generated new flows at a given rate, and acknowledges
 * IMPORT_BATCH messages, counting them.
 *
 *   dpgen --service NAME [--rate N] [--rate-file F] [--count N | --sink]
 *         [--batch N] [--offset N] [--vip ADDR] [--port P]
 *         [--backends ADDR,ADDR,...]
 *
 * It prints "ready" once serving. Once syncd subscribes it exports NEW
 * entries (IPv4 TCP flows to --vip:--port from distinct clients, backends
 * in turn) in EXPORT_BATCH events of --batch entries (default 1024), at
 * --rate entries a second (0: as fast as the event ring takes them; at a
 * rate, each 1 ms tick sends what the rate allowed since, as the dataplane's
 * control thread does) until
 * --count have gone (0: no end); --sink exports nothing. Flows are
 * numbered from --offset (default 0): a second run with --offset of the
 * first one's --count exports other flows. SIGHUP reads a
 * new rate from --rate-file (one number). A full event ring is not a
 * loss: the batch waits for the next tick. Every second, and on SIGTERM
 * or SIGINT (then it exits), it prints one JSON line on stdout:
 *   {"t_ms":..,"exported":..,"imported":..,"import_batches":..,
 *    "import_per_s":..,"export_per_s":..}
 * where the rates cover the last second.
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
	bool sink;
	const char *rate_file;
	uint32_t vip, port;
	uint32_t backends[BACKENDS_MAX];
	unsigned n_backends;
	uint64_t exported, imported, import_batches;
	uint64_t last_exported, last_imported;
	double credit;                  /* entries the rate allows now */
	uint64_t start_ms, last_ms, report_ms;
	uint64_t seq;
	struct wire_flow *flows;
	int tick_fd;                    /* a timerfd: a 1 ms qb_loop timer spins */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
report(struct gen *g, uint64_t now)
{
	double s = (double)(now - g->report_ms) / 1000.0;

	printf("{\"t_ms\":%llu,\"exported\":%llu,\"imported\":%llu,\"import_batches\":%llu,"
	       "\"import_per_s\":%.0f,\"export_per_s\":%.0f}\n",
	       (unsigned long long)(now - g->start_ms), (unsigned long long)g->exported,
	       (unsigned long long)g->imported, (unsigned long long)g->import_batches,
	       s > 0 ? (double)(g->imported - g->last_imported) / s : 0.0,
	       s > 0 ? (double)(g->exported - g->last_exported) / s : 0.0);
	fflush(stdout);
	g->last_imported = g->imported;
	g->last_exported = g->exported;
	g->report_ms = now;
}

/* Flow number i: a client of 198.18.128.0/17 (i / 64000), a port (i % 64000). */
static void
make_flow(const struct gen *g, uint64_t i, struct wire_flow *f)
{
	uint32_t client = htonl(0xc6128000u | (uint32_t)(i / 64000 & 0x7fff));
	uint32_t vip = g->vip, backend = g->backends[i % g->n_backends];

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

static void
export_some(struct gen *g, uint64_t now)
{
	if (g->rate != 0) {
		g->credit += (double)g->rate * (double)(now - g->last_ms) / 1000.0;
		if (g->credit > (double)g->rate / 10)
			g->credit = (double)g->rate / 10;     /* at most 100 ms late */
	}
	g->last_ms = now;
	while (g->conn != 0 && !g->sink && (g->count == 0 || g->exported < g->count)) {
		uint64_t n = g->batch;
		struct wire_ctl_msg m = { .kind = WIRE_CTL_EXPORT_BATCH };

		if (g->count != 0 && g->count - g->exported < n)
			n = g->count - g->exported;
		/* at a rate, what the last tick allowed, as the dataplane's
		 * control thread sends what its workers exported since */
		if (g->rate != 0 && g->credit < (double)n)
			n = (uint64_t)g->credit;
		if (n == 0)
			return;
		for (uint64_t i = 0; i < n; i++)
			make_flow(g, g->offset + g->exported + i, &g->flows[i]);
		m.request_id = ++g->seq;
		m.flows = (struct wire_ctl_flows){ .event = WIRE_FLOW_EVENT_NEW,
						   .entries = g->flows, .count = n };
		if (ipc_server_send_event(g->server, g->conn, &m) < 0)
			return;         /* ring full: next tick */
		g->exported += n;
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

static void
usage(void)
{
	fprintf(stderr, "usage: dpgen --service NAME [--rate N] [--rate-file F] "
		"[--count N | --sink] [--batch N] [--offset N] [--vip ADDR] [--port P] "
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
		{ NULL, 0, NULL, 0 },
	};
	static const struct ipc_handlers h = { .request = serve, .disconnected = disconnected };
	struct gen g = { .batch = 1024, .port = 8000 };
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
		case 'B':
			if (parse_backends(&g, optarg) < 0) {
				usage();
				return 2;
			}
			break;
		default: usage(); return 2;
		}
	}
	if (service == NULL || g.batch == 0 || g.batch > IPC_FLOWS_PER_MSG_MAX || g.port > 65535) {
		usage();
		return 2;
	}
	if (g.n_backends == 0)
		parse_backends(&g, defaults);
	qb_log_init("dpgen", LOG_USER, LOG_WARNING);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, QB_FALSE);
	qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*", LOG_WARNING);
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
	g.flows = calloc(g.batch, sizeof(*g.flows));
	g.loop = qb_loop_create();
	if (g.flows == NULL || g.loop == NULL)
		return 1;
	g.server = ipc_server_create(g.loop, service, (gid_t)-1, &h, &g);
	if (g.server == NULL)
		return 1;
	g.start_ms = g.report_ms = g.last_ms = now_ms();
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGTERM, &g, on_signal, &sh);
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGINT, &g, on_signal, &sh);
	qb_loop_signal_add(g.loop, QB_LOOP_HIGH, SIGHUP, &g, on_signal, &sh);
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
	free(g.flows);
	return 0;
}
