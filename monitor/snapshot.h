/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What maglb-monitor knows of its node at one moment: the answers of the
 * dataplane and syncd to the same requests maglbctl makes, collected one
 * after the other once a second (the console polls that often; a scrape
 * renders the latest snapshot rather than asking the dataplane again, so
 * scrapes cost its control thread nothing).
 *
 * The collector is pure: it talks to the daemons through an ops table, so
 * the unit test gives it canned answers. A daemon that does not answer
 * leaves its parts out (has_* false) and an error line; the rest is kept.
 * A snapshot is immutable once collected and shared by reference between
 * the collector and the HTTP threads.
 */
#ifndef MAGLB_MONITOR_SNAPSHOT_H
#define MAGLB_MONITOR_SNAPSHOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

enum mon_service {
	MON_DATAPLANE = 0,
	MON_SYNCD,
	MON_SERVICE_MAX
};

extern const char *const mon_service_names[MON_SERVICE_MAX];

struct mon_source_ops {
	/*
	 * Ask service req; 0 and the decoded answer in *resp (released with
	 * wire_ctl_msg_free()), or -errno as ipc_client_request() returns.
	 */
	int (*request)(void *ctx, enum mon_service service,
		       const struct wire_ctl_msg *req, struct wire_ctl_msg *resp);
	void *ctx;
};

enum {
	MON_ERRORS_MAX = 8,
	/* The dataplane's counter scopes a snapshot asks for (not the
	 * per-backend ones: the VIP list carries their traffic). */
	MON_COUNTER_SCOPES = 6,
};

struct mon_snapshot {
	atomic_uint refs;
	uint64_t time_ms;               /* CLOCK_REALTIME when collected */
	uint64_t collect_us;            /* how long collecting took */
	bool up[MON_SERVICE_MAX];       /* answered at least one request */
	bool has_status, has_counters, has_vips, has_bfd;   /* dataplane */
	bool has_cluster, has_sync, has_health;             /* syncd */
	struct wire_ctl_status status;
	struct wire_ctl_counters counters;  /* every scope asked, one array */
	struct wire_ctl_vip_list vips;      /* with backends and traffic */
	size_t *vip_first;                  /* n_vips + 1: VIP v's backends are
					     * [vip_first[v], vip_first[v + 1]) */
	struct wire_ctl_msg bfd;            /* BFD_STATUS */
	struct wire_ctl_msg cluster;        /* CLUSTER_STATUS */
	struct wire_ctl_msg sync;           /* SYNC_STATUS */
	/* HEALTH_STATUS, every page: the probe targets, and node-wide. */
	struct wire_ctl_health_target *targets;
	size_t n_targets;
	uint64_t probes, probe_failures;
	struct wire_probe_histogram probe_duration;
	int32_t *health_of;                 /* n_backends: its target, or -1 */
	uint32_t n_errors;
	char errors[MON_ERRORS_MAX][WIRE_TEXT_MAX];
};

/*
 * Collect a new snapshot (one reference, the caller's), stamped now_ms.
 * NULL only when memory ran out.
 */
struct mon_snapshot *mon_snapshot_collect(const struct mon_source_ops *ops,
					  uint64_t now_ms);

/* Take and drop a reference; the last put frees. NULL is a no-op. */
struct mon_snapshot *mon_snapshot_get(struct mon_snapshot *s);
void mon_snapshot_put(struct mon_snapshot *s);

/* The dataplane's counter (scope, name); def when it is not there. */
uint64_t mon_counter(const struct mon_snapshot *s, const char *scope,
		     const char *name, uint64_t def);


/* A wire address (AF_INET or AF_INET6 family) as text into buf; "?" if it
 * does not fit. Returns buf. */
const char *mon_addr_str(uint8_t family, const uint8_t *addr, char *buf, size_t len);

/* Backend b's (of s->vips.backends) probe target; NULL: not probed. */
const struct wire_ctl_health_target *mon_backend_health(const struct mon_snapshot *s,
							 size_t backend);

#endif /* MAGLB_MONITOR_SNAPSHOT_H */
