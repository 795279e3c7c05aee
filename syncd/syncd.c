/* SPDX-License-Identifier: BSD-3-Clause */
/* maglb-syncd's loop: corosync, the dataplane, maglbctl. See syncd.h. */
#include "syncd/syncd.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <poll.h>

#include <qb/qblog.h>

#include "config/config.h"
#include "lib/daemon.h"
#include "lib/ipc.h"
#include "lib/ipc_client.h"
#include "lib/ipc_server.h"
#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/cluster.h"
#include "syncd/cpg.h"
#include "syncd/lathist.h"
#include "syncd/repl.h"

/* The tick: 1 ms while the engine has work, else IDLE_TICK_MS (daemon_timer_*). */
enum {
	TICK_MS = 1,
	IDLE_TICK_MS = 100,
	SEND_QUEUE_BYTES = 16 << 20,    /* per group: CPG backlog */
};

struct syncd {
	qb_loop_t *loop;
	struct syncd_options o;
	struct config *cfg;
	struct catalog *cat;
	struct repl *repl;
	struct syncd_cpg *cpg;
	struct ipc_async *dp;
	struct ipc_server *server;
	struct syncd_cluster *cluster;
	int tick_fd;
	bool tick_fast;
	uint64_t tick_due_us;           /* when the armed tick should fire */
	struct lathist loop_lag;        /* how late it fired: the loop's stalls */
	struct lathist loop_cpu;        /* CPU the loop used between two ticks */
	uint64_t tick_cpu_us;           /* the thread's CPU time at the last tick */
	bool subscribed;
	bool dumping;                   /* a reconciliation is reading the tables */
	bool dump_then_import;          /* it follows a (re)connection */
	bool dp_authoritative;          /* the dataplane ran since before syncd:
					 * what its tables lack has closed */
	uint32_t dp_start_ms;           /* when it started (its uptime said) */
	bool synced_logged;
	uint64_t start_ms;
};

/* A pending IMPORT_BATCH: the engine's token. */
struct import_ctx {
	struct syncd *s;
	uint64_t token;
};

static void tick_arm(struct syncd *s, bool fast);

/* ------------------------------------------------------------- engine */

static void
repl_log(void *arg, int priority, const char *line)
{
	(void)arg;
	qb_log(priority, "%s", line);
}

static int
repl_send(void *arg, uint16_t group, const void *buf, size_t len)
{
	struct syncd *s = arg;

	return syncd_cpg_send(s->cpg, group, buf, len);
}

static void
import_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct import_ctx *ctx = arg;
	bool ok = rc == 0 && resp->kind == WIRE_CTL_ERROR && resp->error.code == 0;

	repl_import_done(ctx->s->repl, ctx->token, ok, daemon_real_us());
	tick_arm(ctx->s, true);
	free(ctx);
}

static int
repl_import(void *arg, enum wire_flow_event ev, const struct wire_flow *f, size_t n,
	    uint64_t token)
{
	struct syncd *s = arg;
	struct wire_ctl_msg m = {
		.kind = WIRE_CTL_IMPORT_BATCH,
		.flows = { .event = ev, .entries = (struct wire_flow *)(uintptr_t)f, .count = n },
	};
	struct import_ctx *ctx;
	int rc;

	if (!s->subscribed)
		return -EAGAIN;     /* imports follow the subscription */
	ctx = malloc(sizeof(*ctx));
	if (ctx == NULL)
		return -EAGAIN;
	*ctx = (struct import_ctx){ .s = s, .token = token };
	rc = ipc_async_send(s->dp, &m, import_done, ctx);
	if (rc < 0)
		free(ctx);
	return rc;
}

/* ---------------------------------------------------------- dataplane */

static void dump_next(struct syncd *s, uint64_t cursor);

/* The reconciliation read every page (or gave up): settle it. */
static void
dump_done(struct syncd *s, bool complete)
{
	s->dumping = false;
	if (complete)
		repl_dump_end(s->repl, s->dp_authoritative, s->dp_start_ms, daemon_mono_ms(),
			      daemon_real_us());
	else
		repl_dump_abort(s->repl);
	if (s->dump_then_import && s->subscribed) {
		qb_log(LOG_INFO, "dataplane %s: importing the entries held",
		       ipc_async_service(s->dp));
		repl_dataplane_up(s->repl, daemon_mono_ms());
	}
	s->dump_then_import = false;
	tick_arm(s, true);
}

/* A page of the dataplane's tables: reconcile it, ask for the next. */
static void
dumped(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd *s = arg;

	if (rc == 0 && resp->kind == WIRE_CTL_DUMP_RESPONSE) {
		repl_on_dump(s->repl, resp->dump.entries, resp->dump.count, daemon_mono_ms(),
			     daemon_real_us());
		if (resp->dump.next_cursor != 0)
			dump_next(s, resp->dump.next_cursor);
		else
			dump_done(s, true);
		return;
	}
	if (rc != -ENOTCONN)
		qb_log(LOG_WARNING, "dataplane %s: reading its flow tables failed: %s",
		       ipc_async_service(s->dp),
		       rc < 0 ? strerror(-rc) : resp->kind == WIRE_CTL_ERROR ?
		       resp->error.message : "unexpected answer");
	dump_done(s, false);
}

static void
dump_next(struct syncd *s, uint64_t cursor)
{
	struct wire_ctl_msg m = {
		.kind = WIRE_CTL_DUMP_REQUEST,
		.dump_request = { .cursor = cursor, .limit = IPC_FLOWS_PER_MSG_MAX },
	};

	if (ipc_async_send(s->dp, &m, dumped, s) < 0)
		dump_done(s, false);
}

/* Read the dataplane's tables to reconcile the cache with them. */
static void
dump_start(struct syncd *s, bool then_import)
{
	s->dumping = true;
	s->dump_then_import = then_import;
	repl_dump_begin(s->repl);
	dump_next(s, 0);
}

/* The dataplane's uptime: whether its tables speak for every flow we made. */
static void
dp_status(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd *s = arg;
	uint64_t up = rc == 0 && resp->kind == WIRE_CTL_STATUS_RESPONSE ?
		      resp->status.uptime_ms : 0;

	if (rc == -ENOTCONN)
		return;
	s->dp_authoritative = up > daemon_mono_ms() - s->start_ms;
	/* clamped: 2^30 ms (12 days) is past any idle timeout, and keeps the
	 * comparisons of 32-bit times in range */
	s->dp_start_ms = daemon_mono_ms() - (uint32_t)(up < (1u << 30) ? up : (1u << 30));
	qb_log(LOG_INFO, "dataplane %s: subscribed to its export stream; reading its flow "
	       "tables (it has run %s syncd)", ipc_async_service(s->dp),
	       s->dp_authoritative ? "since before" : "for less time than");
	dump_start(s, true);
}

static void
subscribed(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd *s = arg;
	struct wire_ctl_msg m = { .kind = WIRE_CTL_STATUS_REQUEST };

	if (rc == 0 && resp->kind == WIRE_CTL_ERROR && resp->error.code == 0) {
		s->subscribed = true;
		if (ipc_async_send(s->dp, &m, dp_status, s) < 0) {
			s->dp_authoritative = false;
			dump_start(s, true);
		}
		return;
	}
	if (rc == 0 && resp->kind == WIRE_CTL_ERROR)
		qb_log(LOG_ERR, "dataplane %s: refused the export subscription: %s",
		       ipc_async_service(s->dp), resp->error.message);
	else
		qb_log(LOG_WARNING, "dataplane %s: export subscription failed: %s",
		       ipc_async_service(s->dp), strerror(-rc));
}

static void
dp_up(void *arg)
{
	struct syncd *s = arg;
	struct wire_ctl_msg m = {
		.kind = WIRE_CTL_EXPORT_SUBSCRIBE,
		.export_subscribe.enable = true,
	};

	s->subscribed = false;
	syncd_cluster_dp_up(s->cluster);
	if (ipc_async_send(s->dp, &m, subscribed, s) < 0)
		qb_log(LOG_WARNING, "dataplane %s: cannot ask for the export stream",
		       ipc_async_service(s->dp));
}

static void
dp_down(void *arg, int err)
{
	struct syncd *s = arg;

	(void)err;
	s->subscribed = false;
	repl_dataplane_down(s->repl);
	syncd_cluster_dp_down(s->cluster);
}

static void
dp_event(void *arg, const struct wire_ctl_msg *m)
{
	struct syncd *s = arg;

	if (m->kind == WIRE_CTL_EXPORT_BATCH) {
		repl_on_export(s->repl, &m->flows, daemon_mono_ms(), daemon_real_us());
		tick_arm(s, true);
	}
}

/* -------------------------------------------------------------- corosync */

static void
cpg_deliver(void *arg, uint16_t group, uint32_t sender, const void *msg, size_t len)
{
	struct syncd *s = arg;

	repl_on_deliver(s->repl, group, sender, msg, len, daemon_mono_ms(), daemon_real_us());
	tick_arm(s, true);
}

static void
cpg_dispatched(void *arg)
{
	struct syncd *s = arg;

	repl_on_dispatched(s->repl);
}

static void
cpg_members(void *arg, uint16_t group, const uint32_t *members, size_t n, bool self_in,
	    bool merged)
{
	struct syncd *s = arg;

	repl_on_members(s->repl, group, members, n, self_in, merged, daemon_mono_ms());
	tick_arm(s, true);
}

/* ------------------------------------------------------------------ tick */

static void
tick_arm(struct syncd *s, bool fast)
{
	if (fast && s->tick_fast)
		return;         /* due within a millisecond anyway */
	s->tick_fast = fast;
	s->tick_due_us = daemon_mono_us() + (fast ? TICK_MS : IDLE_TICK_MS) * 1000ull;
	daemon_timer_arm(s->tick_fd, fast ? TICK_MS : IDLE_TICK_MS, false);
}

static int32_t
on_tick(int32_t fd, int32_t revents, void *arg)
{
	struct syncd *s = arg;
	bool synced;

	(void)revents;
	uint64_t now_us, cpu_us;

	if (!daemon_timer_fired(fd))
		return 0;
	/*
	 * However late the tick fires, the loop was busy elsewhere (or the
	 * process had no core) that long: the longest stall anyone waited.
	 */
	now_us = daemon_mono_us();
	lathist_add(&s->loop_lag, now_us > s->tick_due_us ? now_us - s->tick_due_us : 0);
	lathist_tick(&s->loop_lag, now_us);
	/*
	 * What the loop itself did meanwhile: no callback ran longer than
	 * this, whatever the scheduler did (the rest of a stall is time
	 * without a core).
	 */
	cpu_us = daemon_thread_cpu_us();
	lathist_add(&s->loop_cpu, cpu_us - s->tick_cpu_us);
	lathist_tick(&s->loop_cpu, now_us);
	s->tick_cpu_us = cpu_us;
	s->tick_fast = false;
	repl_tick(s->repl, daemon_mono_ms(), daemon_real_us());
	if (repl_want_reconcile(s->repl) && s->subscribed && !s->dumping)
		dump_start(s, false);
	synced = repl_synced(s->repl);
	if (synced != s->synced_logged) {
		s->synced_logged = synced;
		qb_log(LOG_INFO, "%s", synced ? "synced: every group and the dataplane" :
		       "not synced");
	}
	tick_arm(s, repl_busy(s->repl));
	return 0;
}

/* ----------------------------------------------------------- maglbctl */

/* Per group: its state, members, entries, counters and lags. */
static void
counters_group(struct syncd *s, uint16_t gi, struct ipc_counter_list *l)
{
	struct repl_group_status st;
	char scope[WIRE_NAME_MAX], name[WIRE_NAME_MAX];

	repl_group_status(s->repl, gi, &st);
	snprintf(scope, sizeof(scope), "group:%s", st.name);
	ipc_counter_add(l, scope, "state", st.state);
	for (uint32_t i = 0; i < st.n_members; i++) {
		snprintf(name, sizeof(name), "member.%u", st.members[i]);
		ipc_counter_add(l, scope, name, st.members[i]);
	}
	ipc_counter_add(l, scope, "donor", st.donor);
	ipc_counter_add(l, scope, "entries_own", st.entries_own);
	ipc_counter_add(l, scope, "entries_peers", st.entries_peers);
	ipc_counter_add(l, scope, "digest", st.digest);
	ipc_counter_add(l, scope, "send_queue", st.send_queue);
	ipc_counter_add(l, scope, "self_lag_p50_us", st.self_lag_p50_us);
	ipc_counter_add(l, scope, "self_lag_p99_us", st.self_lag_p99_us);
	ipc_counter_add(l, scope, "import_lag_p50_us", st.import_lag_p50_us);
	ipc_counter_add(l, scope, "import_lag_p99_us", st.import_lag_p99_us);
	ipc_counter_add_array(l, scope, repl_counter_names, st.counters, REPL_COUNTER_MAX);
}

static int
counters(struct syncd *s, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	struct ipc_counter_list l = { .prefix = req->counters_request.scope };
	const struct cache *c = repl_cache(s->repl);
	const uint64_t *node = repl_node_counters(s->repl);
	const uint64_t *link = syncd_cpg_counters(s->cpg);
	const struct ipc_async_counters *dp = ipc_async_counters(s->dp);
	const struct ipc_server_counters *ic = ipc_server_counters(s->server);

	ipc_counter_add(&l, "sync", "node_id", s->cfg->node_id);
	ipc_counter_add(&l, "sync", "synced", repl_synced(s->repl));
	ipc_counter_add(&l, "sync", "dataplane_connected", s->subscribed);
	ipc_counter_add(&l, "sync", "dataplane_synced", repl_dataplane_synced(s->repl));
	ipc_counter_add(&l, "sync", "entries", cache_count(c));
	ipc_counter_add(&l, "sync", "cache_bytes", cache_bytes(c));
	ipc_counter_add(&l, "sync", "import_queue", repl_import_queue(s->repl));
	ipc_counter_add(&l, "sync", "loop_lag_p99_us", lathist_quantile(&s->loop_lag, 0.99));
	ipc_counter_add(&l, "sync", "loop_lag_max_us", lathist_quantile(&s->loop_lag, 1.0));
	ipc_counter_add(&l, "sync", "loop_cpu_max_us", lathist_quantile(&s->loop_cpu, 1.0));
	ipc_counter_add_array(&l, "sync", repl_node_counter_names, node, REPL_NODE_COUNTER_MAX);
	ipc_counter_add_array(&l, "sync", wire_drop_names, repl_wire_counters(s->repl)->drops,
			      WIRE_DROP_MAX);
	for (uint16_t g = 0; g < repl_groups(s->repl); g++)
		counters_group(s, g, &l);
	ipc_counter_add_array(&l, "cpg", syncd_cpg_counter_names, link, SYNCD_CPG_COUNTER_MAX);
	syncd_cluster_counters(s->cluster, &l);
	ipc_counter_add_array(&l, "dataplane", ipc_async_counter_names, dp->counts,
			      IPC_ASYNC_COUNTER_MAX);
	ipc_counter_add_array(&l, "ipc", ipc_counter_names, ic->counts, IPC_COUNTER_MAX);
	resp->kind = WIRE_CTL_COUNTERS_RESPONSE;
	resp->counters.counters = l.v;
	resp->counters.count = l.n;
	return 0;
}

/*
 * What maglbctl sync lists by reason, by repl.h's names: the counters of
 * drops (drop_*) and refusals (rejected_*), and the few others that mean
 * something was lost. DROP_ counters added to repl.h join by their name.
 */
static bool
counter_is_drop(const char *name)
{
	return strncmp(name, "drop_", 5) == 0 || strncmp(name, "rejected_", 9) == 0 ||
	       strcmp(name, "seq_gaps") == 0 || strcmp(name, "resync_incomplete") == 0;
}

static void
drop_add(struct wire_ctl_sync_status *out, const char *group, const char *reason,
	 uint64_t count)
{
	struct wire_ctl_sync_drop *d;

	if (count == 0)
		return;
	d = &out->drops[out->n_drops++];
	snprintf(d->group, sizeof(d->group), "%s", group);
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	d->count = count;
}

static_assert((int)WIRE_SYNC_MEMBERS_MAX >= (int)REPL_MEMBERS_MAX,
	      "a sync status lists every member of a group");

/* One group's status, and its drops into out->drops. */
static void
sync_status_group(struct syncd *s, uint16_t gi, struct wire_ctl_sync_status *out)
{
	struct wire_ctl_sync_group *g = &out->groups[gi];
	struct repl_group_status st;

	repl_group_status(s->repl, gi, &st);
	*g = (struct wire_ctl_sync_group){
		.donor = st.donor, .entries_own = st.entries_own,
		.entries_peers = st.entries_peers, .digest = st.digest,
		.send_queue = st.send_queue,
		.entries_sent = st.counters[REPL_ENTRIES_SENT],
		.entries_received = st.counters[REPL_ENTRIES_RECEIVED],
		.imported = st.counters[REPL_IMPORTED],
		.resyncs = st.counters[REPL_RESYNC_COMPLETE],
		.resync_last_ms = st.counters[REPL_RESYNC_LAST_MS],
		.resync_entries_received = st.counters[REPL_RESYNC_ENTRIES_RECEIVED],
		.self_lag_p50_us = st.self_lag_p50_us, .self_lag_p99_us = st.self_lag_p99_us,
		.import_lag_p50_us = st.import_lag_p50_us,
		.import_lag_p99_us = st.import_lag_p99_us,
		.self_lag = st.self_lag, .import_lag = st.import_lag,
	};
	snprintf(g->name, sizeof(g->name), "%s", st.name);
	snprintf(g->state, sizeof(g->state), "%s", repl_sync_state_names[st.state]);
	for (uint32_t i = 0; i < st.n_members; i++)
		g->members[g->n_members++] = st.members[i];
	for (int c = 0; c < REPL_COUNTER_MAX; c++) {
		const char *name = repl_counter_names[c];

		if (strncmp(name, "rejected_", 9) == 0)
			g->rejected += st.counters[c];
		else if (strncmp(name, "drop_", 5) == 0)
			g->dropped += st.counters[c];
		if (counter_is_drop(name))
			drop_add(out, st.name, name, st.counters[c]);
	}
}

/* maglbctl sync: the node, its groups, and what they dropped. */
static int
sync_status(struct syncd *s, struct wire_ctl_msg *resp)
{
	static const enum repl_node_counter node_drops[] = {
		REPL_NODE_EXPORT_LOST, REPL_NODE_EXPORT_UNKNOWN, REPL_NODE_CACHE_FULL,
		REPL_NODE_IMPORT_ERRORS,
	};
	struct wire_ctl_sync_status *out = &resp->sync_status;
	const uint64_t *node = repl_node_counters(s->repl);
	const uint64_t *wire = repl_wire_counters(s->repl)->drops;
	uint16_t n = repl_groups(s->repl);
	const struct cache *c = repl_cache(s->repl);

	resp->kind = WIRE_CTL_SYNC_STATUS;
	*out = (struct wire_ctl_sync_status){
		.node_id = s->cfg->node_id, .synced = repl_synced(s->repl),
		.dataplane_connected = s->subscribed,
		.dataplane_synced = repl_dataplane_synced(s->repl),
		.entries = cache_count(c), .cache_bytes = cache_bytes(c),
		.import_queue = repl_import_queue(s->repl),
		.export_entries = node[REPL_NODE_EXPORT_ENTRIES],
		.groups = calloc(n ? n : 1, sizeof(*out->groups)), .n_groups = n,
		.drops = calloc((size_t)n * REPL_COUNTER_MAX + REPL_NODE_COUNTER_MAX +
				WIRE_DROP_MAX, sizeof(*out->drops)),
	};
	if (out->groups == NULL || out->drops == NULL)
		return -ENOMEM;     /* serve_release() frees either */
	for (uint16_t g = 0; g < n; g++)
		sync_status_group(s, g, out);
	for (size_t i = 0; i < sizeof(node_drops) / sizeof(node_drops[0]); i++)
		drop_add(out, "", repl_node_counter_names[node_drops[i]], node[node_drops[i]]);
	for (int i = 0; i < WIRE_DROP_MAX; i++)
		drop_add(out, "", wire_drop_names[i], wire[i]);
	return 0;
}

/* Start a verify round (round 0), or report the answers to one so far. */
static int
verify(struct syncd *s, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp, char *errmsg,
       size_t errlen)
{
	const struct wire_ctl_sync_verify_request *q = &req->sync_verify_request;
	struct wire_ctl_sync_verify *out = &resp->sync_verify;
	struct repl_digest d[REPL_MEMBERS_MAX];
	int gi = catalog_group_find(s->cat, q->group);
	int round = (int)q->round;
	size_t n;

	if (gi < 0) {
		snprintf(errmsg, errlen, "no sync group '%s' on this node", q->group);
		return -ENOENT;
	}
	if (round == 0)
		round = repl_verify_start(s->repl, (uint16_t)gi);
	if (round < 0) {
		snprintf(errmsg, errlen, "group %s: %s", q->group, round == -ENOTCONN ?
			 "this node is not a member yet" : "CPG is busy, try again");
		return round;
	}
	tick_arm(s, true);
	resp->kind = WIRE_CTL_SYNC_VERIFY_RESULT;
	snprintf(out->group, sizeof(out->group), "%s", q->group);
	out->round = (uint32_t)round;
	n = repl_verify_result(s->repl, (uint16_t)gi, (uint32_t)round, d, REPL_MEMBERS_MAX,
			       &out->members);
	out->digests = calloc(n ? n : 1, sizeof(*out->digests));
	if (out->digests == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		out->digests[i] = (struct wire_ctl_sync_digest){
			.node = d[i].node, .entry_count = d[i].entries, .digest = d[i].digest,
			.maglev_digest = d[i].maglev,
		};
	out->count = n;
	return 0;
}

/* maglbctl reload: re-read the config, or (--check) only validate it. */
static int
reload(struct syncd *s, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	struct wire_ctl_reload_result *r = &resp->reload_result;
	struct config *cfg;

	resp->kind = WIRE_CTL_RELOAD_RESULT;
	if (!req->reload_request.check_only) {
		r->ok = syncd_reload(s) == 0;
		if (!r->ok)
			snprintf(r->error, sizeof(r->error), "see the log of maglb-syncd");
		return 0;
	}
	cfg = config_load(s->o.config, r->error, sizeof(r->error));
	r->ok = cfg != NULL && cfg->node_id == s->cfg->node_id;
	if (cfg != NULL && !r->ok)
		snprintf(r->error, sizeof(r->error), "%s: node.id changed (%u to %u): "
			 "restart maglb-syncd for that", s->o.config, s->cfg->node_id,
			 cfg->node_id);
	if (r->ok)
		r->error[0] = '\0';
	config_free(cfg);
	return 0;
}

static int
serve(void *ctx, uint64_t conn_id, const struct wire_ctl_msg *req, struct wire_ctl_msg *resp,
      char *errmsg, size_t errlen)
{
	struct syncd *s = ctx;

	(void)conn_id;
	switch (req->kind) {
	case WIRE_CTL_STATUS_REQUEST:
		resp->kind = WIRE_CTL_STATUS_RESPONSE;
		resp->status.node_id = s->cfg->node_id;
		resp->status.vips = s->cfg->n_vips;
		resp->status.uptime_ms = daemon_mono_ms() - s->start_ms;
		resp->status.flows_synced = cache_count(repl_cache(s->repl));
		return 0;
	case WIRE_CTL_COUNTERS_REQUEST:
		return counters(s, req, resp);
	case WIRE_CTL_SYNC_VERIFY_REQUEST:
		return verify(s, req, resp, errmsg, errlen);
	case WIRE_CTL_SYNC_STATUS_REQUEST:
		return sync_status(s, resp);
	case WIRE_CTL_CLUSTER_REQUEST:
		resp->kind = WIRE_CTL_CLUSTER_STATUS;
		return syncd_cluster_status(s->cluster, &resp->cluster);
	case WIRE_CTL_HEALTH_STATUS_REQUEST:
		resp->kind = WIRE_CTL_HEALTH_STATUS;
		return syncd_cluster_health_status(s->cluster, req->health_status_request.cursor,
						   &resp->health_status);
	case WIRE_CTL_CLUSTER_STANDBY:
		syncd_cluster_standby(s->cluster, req->cluster_standby.on);
		resp->kind = WIRE_CTL_ERROR;
		resp->error.code = 0;
		return 0;
	case WIRE_CTL_RELOAD_REQUEST:
		return reload(s, req, resp);
	default:
		snprintf(errmsg, errlen, "maglb-syncd does not serve %s",
			 wire_ctl_kind_names[req->kind]);
		return -EOPNOTSUPP;
	}
}

static void
serve_release(void *ctx, struct wire_ctl_msg *resp)
{
	(void)ctx;
	if (resp->kind == WIRE_CTL_COUNTERS_RESPONSE)
		free(resp->counters.counters);
	else if (resp->kind == WIRE_CTL_SYNC_VERIFY_RESULT)
		free(resp->sync_verify.digests);
	else if (resp->kind == WIRE_CTL_CLUSTER_STATUS)
		free(resp->cluster.members);
	else if (resp->kind == WIRE_CTL_HEALTH_STATUS)
		free(resp->health_status.targets);
	else if (resp->kind == WIRE_CTL_SYNC_STATUS) {
		free(resp->sync_status.groups);
		free(resp->sync_status.drops);
	}
}

/* -------------------------------------------------------------- set-up */

/* The longest idle timeout of the config's flows, in ms. */
static uint32_t
max_idle_ms(const struct config *cfg)
{
	const struct config_timeouts *t = &cfg->flows.timeouts;
	uint32_t s = t->tcp_syn;

	s = t->tcp_established > s ? t->tcp_established : s;
	s = t->tcp_closing > s ? t->tcp_closing : s;
	s = t->udp > s ? t->udp : s;
	return s * 1000;
}

static int
join_groups(struct syncd *s)
{
	const char *names[CONFIG_VIPS_MAX];
	uint16_t n = catalog_groups(s->cat);

	for (uint16_t i = 0; i < n; i++)
		names[i] = catalog_group_name(s->cat, i);
	return syncd_cpg_set_groups(s->cpg, names, n);
}

struct syncd *
syncd_create(qb_loop_t *loop, const struct syncd_options *o)
{
	static const struct repl_ops rops = { .send = repl_send, .import = repl_import,
					      .log = repl_log };
	static const struct syncd_cpg_ops cops = { .deliver = cpg_deliver,
						   .members = cpg_members,
						   .dispatched = cpg_dispatched };
	static const struct ipc_async_ops dops = { .up = dp_up, .down = dp_down,
						   .event = dp_event };
	static const struct ipc_handlers h = { .request = serve, .release = serve_release };
	struct syncd *s = calloc(1, sizeof(*s));
	char err[CONFIG_ERROR_MAX];
	struct repl_params p;

	if (s == NULL)
		return NULL;
	s->loop = loop;
	s->o = *o;
	s->tick_fd = -1;
	s->start_ms = daemon_mono_ms();
	s->cfg = config_load(o->config, err, sizeof(err));
	if (s->cfg == NULL) {
		qb_log(LOG_ERR, "%s", err);
		goto fail;
	}
	s->cat = catalog_create(s->cfg);
	p = (struct repl_params){
		.self = s->cfg->node_id,
		.max_batch_bytes = s->cfg->sync.max_batch_bytes,
		.max_batch_delay_ms = s->cfg->sync.max_batch_delay_ms,
		.import_queue_entries = s->cfg->sync.queue_entries,
		.send_queue_bytes = SEND_QUEUE_BYTES,
		.max_idle_ms = max_idle_ms(s->cfg),
	};
	if (s->cat == NULL || (s->repl = repl_create(s->cat, &p, &rops, s)) == NULL) {
		qb_log(LOG_ERR, "out of memory");
		goto fail;
	}
	s->server = ipc_server_create(loop, o->service, daemon_ipc_group(), &h, s);
	s->cpg = syncd_cpg_create(loop, s->cfg->node_id, &cops, s);
	s->dp = ipc_async_create(loop, o->dataplane_service, &dops, s);
	if (s->server == NULL || s->cpg == NULL || s->dp == NULL || join_groups(s) < 0)
		goto fail;
	s->cluster = syncd_cluster_create(loop, s->cfg, s->repl, s->dp);
	if (s->cluster == NULL)
		goto fail;
	s->tick_fd = daemon_timer_create(loop, QB_LOOP_MED, 0, on_tick, s);
	if (s->tick_fd < 0) {
		qb_log(LOG_ERR, "cannot set up the tick timer: %s", strerror(-s->tick_fd));
		goto fail;
	}
	s->tick_cpu_us = daemon_thread_cpu_us();
	tick_arm(s, true);
	qb_log(LOG_INFO, "node %u: %u VIP(s) in %u sync group(s); dataplane service %s",
	       s->cfg->node_id, s->cfg->n_vips, catalog_groups(s->cat), o->dataplane_service);
	return s;

fail:
	syncd_destroy(s);
	return NULL;
}

void
syncd_destroy(struct syncd *s)
{
	if (s == NULL)
		return;
	daemon_timer_destroy(s->loop, s->tick_fd);
	syncd_cluster_destroy(s->cluster);
	ipc_async_destroy(s->dp);
	syncd_cpg_destroy(s->cpg);
	ipc_server_destroy(s->server);
	repl_destroy(s->repl);
	catalog_destroy(s->cat);
	if (s->cfg != NULL)
		config_free(s->cfg);
	free(s);
}

int
syncd_reload(struct syncd *s)
{
	char err[CONFIG_ERROR_MAX];
	struct config *cfg = config_load(s->o.config, err, sizeof(err));
	struct catalog *cat;

	if (cfg == NULL) {
		qb_log(LOG_ERR, "reload refused, running config kept: %s", err);
		return -EINVAL;
	}
	if (cfg->node_id != s->cfg->node_id) {
		qb_log(LOG_ERR, "reload refused, running config kept: %s: node.id changed "
		       "(%u to %u): restart maglb-syncd for that", s->o.config,
		       s->cfg->node_id, cfg->node_id);
		config_free(cfg);
		return -EINVAL;
	}
	cat = catalog_create(cfg);
	if (cat == NULL || syncd_cluster_set_config(s->cluster, cfg) < 0) {
		qb_log(LOG_ERR, "reload refused, running config kept: out of memory");
		catalog_destroy(cat);
		config_free(cfg);
		return -ENOMEM;
	}
	if (repl_set_catalog(s->repl, cat, daemon_mono_ms()) < 0) {
		/* back to the running config; it held these tables a moment ago */
		if (syncd_cluster_set_config(s->cluster, s->cfg) < 0)
			qb_log(LOG_CRIT, "reload: out of memory going back to the running "
			       "config: membership health tables are stale");
		qb_log(LOG_ERR, "reload refused, running config kept: out of memory");
		catalog_destroy(cat);
		config_free(cfg);
		return -ENOMEM;
	}
	repl_set_max_idle(s->repl, max_idle_ms(cfg));
	catalog_destroy(s->cat);
	config_free(s->cfg);
	s->cat = cat;
	s->cfg = cfg;
	if (join_groups(s) < 0)
		qb_log(LOG_ERR, "reload: cannot update the CPG groups: out of memory");
	qb_log(LOG_INFO, "reloaded %s: %u VIP(s) in %u sync group(s)", s->o.config,
	       cfg->n_vips, catalog_groups(cat));
	return 0;
}
