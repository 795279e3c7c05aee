/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /metrics: a snapshot in Prometheus' text exposition format (version
 * 0.0.4). Pure: no I/O but the FILE the caller gives, no clock. Every
 * metric and its labels are listed in monitor/README.md; labels are VIPs,
 * backends, ports, workers, peers, members, groups and reasons, all
 * bounded by the config, never a flow or a client.
 */
#ifndef MAGLB_MONITOR_METRICS_H
#define MAGLB_MONITOR_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "monitor/snapshot.h"

/* The monitor's own counters: X(field, "metric name suffix", "help"). */
#define MON_STATS(X)							\
	X(http_requests, "http_requests_total", "HTTP requests answered")	\
	X(http_refused, "http_refused_requests_total",			\
	  "HTTP requests refused as malformed, oversized or of an unknown method") \
	X(auth_failures, "auth_failures_total",				\
	  "requests with a wrong user or password (Basic or login)")	\
	X(auth_missing, "auth_missing_total", "requests without credentials") \
	X(logins_throttled, "logins_throttled_total",			\
	  "login attempts refused while their client had to wait")	\
	X(logins, "logins_total", "successful logins to the console")	\
	X(csrf_refused, "csrf_refused_total",				\
	  "state-changing requests without the session's token")	\
	X(forbidden, "forbidden_total", "changes refused to a viewer")	\
	X(admin_actions, "admin_actions_total", "changes made by admins")	\
	X(collect_errors, "collect_errors_total",			\
	  "requests to the dataplane or syncd that failed while collecting")

struct mon_stats {
#define MON_STATS_FIELD(field, name, help) uint64_t field;
	MON_STATS(MON_STATS_FIELD)
#undef MON_STATS_FIELD
};

/* What the snapshot does not say: the build, the config, the monitor. */
struct mon_metrics_ctx {
	const char *version;
	uint64_t flows_capacity;        /* entries per worker table */
	uint64_t shared_capacity;       /* entries of the synced table */
	uint32_t sessions;              /* console sessions open */
	struct mon_stats stats;         /* a copy, read under the owner's lock */
};

/* s as metrics into *text (malloc'd, the caller's; *len bytes, no NUL):
 * 0 or -ENOMEM. */
int mon_metrics_render(const struct mon_snapshot *s, const struct mon_metrics_ctx *ctx,
		       char **text, size_t *len);

/* The same written to f: 0, -ENOMEM, or -EIO when writing failed. */
int mon_metrics_write(FILE *f, const struct mon_snapshot *s,
		      const struct mon_metrics_ctx *ctx);

#endif /* MAGLB_MONITOR_METRICS_H */
