/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-monitor: maglb-monitor's writers on a snapshot of a big node, in
 * one process: /metrics and /api/v1/state from a snapshot of --vips VIPs
 * (default 1000) of --backends backends each (default 10), the median of
 * --runs (default 20). Prints one JSON line:
 *   {"vips":..,"backends":..,"metrics_ms":..,"metrics_bytes":..,
 *    "metrics_ns_per_sample":..,"state_ms":..,"state_bytes":..}
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/api.h"
#include "monitor/metrics.h"
#include "monitor/snapshot.h"
#include "tests/bench/bench.h"

static struct mon_snapshot *
big_snapshot(unsigned n_vips, unsigned per_vip)
{
	struct mon_snapshot *s = calloc(1, sizeof(*s));
	struct wire_ctl_vip_list *l = &s->vips;

	atomic_init(&s->refs, 1);
	s->up[MON_DATAPLANE] = s->has_status = s->has_vips = true;
	s->status.workers = 1;
	l->vips = calloc(n_vips, sizeof(*l->vips));
	l->backends = calloc((size_t)n_vips * per_vip, sizeof(*l->backends));
	s->vip_first = calloc(n_vips + 1, sizeof(*s->vip_first));
	for (unsigned v = 0; v < n_vips; v++) {
		struct wire_ctl_vip *vip = &l->vips[l->n_vips++];

		snprintf(vip->name, sizeof(vip->name), "vip-%u", v);
		vip->family = AF_INET;
		vip->proto = IPPROTO_TCP;
		vip->port = 443;
		vip->address[0] = 198;
		vip->address[1] = 18;
		vip->address[2] = (uint8_t)(v >> 8);
		vip->address[3] = (uint8_t)v;
		vip->backends = per_vip;
		vip->table_size = 1009;
		s->vip_first[v] = l->n_backends;
		for (unsigned b = 0; b < per_vip; b++) {
			struct wire_ctl_backend *be = &l->backends[l->n_backends++];

			snprintf(be->vip, sizeof(be->vip), "%s", vip->name);
			be->family = AF_INET;
			be->address[0] = 198;
			be->address[1] = 19;
			be->address[2] = (uint8_t)b;
			be->address[3] = (uint8_t)v;
			be->weight = be->config_weight = 100;
			be->maglev_slots = 100;
			be->flows = 12345;
			be->traffic = (struct wire_ctl_traffic){ 123456789, 98765432100, 4567, 0, 12, 4567 };
		}
	}
	s->vip_first[n_vips] = l->n_backends;
	return s;
}

static int
write_metrics(FILE *f, const struct mon_snapshot *s)
{
	struct mon_metrics_ctx ctx = { .version = "bench", .flows_capacity = 1 << 20 };

	return mon_metrics_write(f, s, &ctx);
}

static int
write_state(FILE *f, const struct mon_snapshot *s)
{
	struct mon_api_ctx ctx = { "bench", "bench", "bench", "viewer", NULL };

	return mon_api_state(f, s, &ctx);
}

/* The median ms of runs writes, and the bytes and samples of the last. */
static double
measure(int (*fn)(FILE *, const struct mon_snapshot *), const struct mon_snapshot *s,
	unsigned runs, size_t *bytes, size_t *samples)
{
	double *t = calloc(runs, sizeof(*t)), ms;

	for (unsigned r = 0; r < runs; r++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		double t0 = bench_now_ns();

		if (f == NULL || fn(f, s) != 0 || fclose(f) != 0) {
			fprintf(stderr, "bench-monitor: writing failed\n");
			exit(1);
		}
		t[r] = (bench_now_ns() - t0) / 1e6;
		*bytes = len;
		*samples = 0;
		for (char *line = buf; line < buf + len; line = strchr(line, '\n') + 1)
			*samples += line[0] != '#';
		free(buf);
	}
	ms = bench_median(t, runs);
	free(t);
	return ms;
}

int
main(int argc, char **argv)
{
	unsigned vips = 1000, per_vip = 10, runs = 20;
	size_t mbytes, msamples, sbytes, slines;
	struct mon_snapshot *s;
	double mms, sms;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--vips") == 0)
			vips = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--backends") == 0)
			per_vip = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--runs") == 0)
			runs = (unsigned)atoi(argv[i + 1]);
		else {
			fprintf(stderr, "usage: bench-monitor [--vips N] [--backends N] [--runs N]\n");
			return 2;
		}
	}
	if (vips == 0 || per_vip == 0 || runs == 0) {
		fprintf(stderr, "bench-monitor: --vips, --backends and --runs must be >= 1\n");
		return 2;
	}
	s = big_snapshot(vips, per_vip);
	mms = measure(write_metrics, s, runs, &mbytes, &msamples);
	sms = measure(write_state, s, runs, &sbytes, &slines);
	printf("{\"vips\": %u, \"backends\": %u, \"metrics_ms\": %.2f, \"metrics_bytes\": %zu, "
	       "\"metrics_ns_per_sample\": %.1f, \"state_ms\": %.2f, \"state_bytes\": %zu}\n",
	       vips, vips * per_vip, mms, mbytes, mms * 1e6 / (double)msamples, sms, sbytes);
	mon_snapshot_put(s);
	return 0;
}
