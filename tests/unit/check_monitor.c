/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-monitor's pure parts: a snapshot collected through canned answers
 * (a dataplane and a syncd as their IPC answers say), the metrics and the
 * JSON written from it, the history's rates and events, the routes, the
 * access rules and the bodies.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "monitor/api.h"
#include "monitor/metrics.h"
#include "monitor/route.h"
#include "monitor/snapshot.h"

/* ---- a node behind canned answers ---- */

struct fake {
	bool dataplane, syncd;          /* answering */
	uint64_t packets;               /* of backend 0, grows between snapshots */
	enum wire_backend_state state1; /* of backend 1 */
	enum wire_role role;
	unsigned requests;
	uint32_t page_vips;             /* VIPs a page, 0: all */
};

enum { N_VIPS = 3, BACKENDS_PER_VIP = 2 };

static void
fill_vip_page(struct fake *f, const struct wire_ctl_vip_list_request *q, struct wire_ctl_msg *r)
{
	struct wire_ctl_vip_list *l = &r->vip_list;
	uint32_t first = q->cursor, end = f->page_vips ? first + f->page_vips : N_VIPS;

	if (end > N_VIPS)
		end = N_VIPS;
	r->kind = WIRE_CTL_VIP_LIST_RESPONSE;
	l->vips = calloc(N_VIPS, sizeof(*l->vips));
	l->backends = calloc(N_VIPS * BACKENDS_PER_VIP, sizeof(*l->backends));
	for (uint32_t v = first; v < end; v++) {
		struct wire_ctl_vip *vip = &l->vips[l->n_vips++];

		snprintf(vip->name, sizeof(vip->name), "web%u", v);
		vip->family = AF_INET;
		vip->proto = v == 2 ? IPPROTO_UDP : IPPROTO_TCP;
		vip->port = 80;
		inet_pton(AF_INET, "198.18.1.1", vip->address);
		vip->address[3] = (uint8_t)(1 + v);
		vip->owned = true;
		vip->backends = BACKENDS_PER_VIP;
		vip->table_size = 7;
		for (uint32_t b = 0; b < BACKENDS_PER_VIP; b++) {
			struct wire_ctl_backend *be = &l->backends[l->n_backends++];

			snprintf(be->vip, sizeof(be->vip), "%s", vip->name);
			be->family = AF_INET;
			inet_pton(AF_INET, "198.19.0.1", be->address);
			be->address[3] = (uint8_t)(1 + b);
			be->weight = be->config_weight = 100;
			be->maglev_slots = b == 0 ? 4 : 3;
			be->state = v == 0 && b == 1 ? f->state1 : WIRE_BACKEND_UP;
			be->traffic.packets = v == 0 && b == 0 ? f->packets : 10;
			be->traffic.bytes = 1000;
			be->traffic.new_flows = 1;
			vip->traffic.packets += be->traffic.packets;
			vip->traffic.new_flows += be->traffic.new_flows;
			vip->backends_up += be->state != WIRE_BACKEND_DOWN;
		}
	}
	l->next_cursor = end < N_VIPS ? end : 0;
}

static void
add_counter(struct wire_ctl_counters *c, const char *scope, const char *name, uint64_t v)
{
	struct wire_ctl_counter *e = &c->counters[c->count++];

	snprintf(e->scope, sizeof(e->scope), "%s", scope);
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->value = v;
}

static int
fake_request(void *ctx, enum mon_service svc, const struct wire_ctl_msg *req,
	     struct wire_ctl_msg *r)
{
	struct fake *f = ctx;

	f->requests++;
	memset(r, 0, sizeof(*r));
	if ((svc == MON_DATAPLANE && !f->dataplane) || (svc == MON_SYNCD && !f->syncd))
		return -ECONNREFUSED;
	switch (req->kind) {
	case WIRE_CTL_STATUS_REQUEST:
		r->kind = WIRE_CTL_STATUS_RESPONSE;
		r->status.node_id = 1;
		r->status.workers = 2;
		r->status.flows_local = 1234;
		r->status.uptime_ms = 5000;
		return 0;
	case WIRE_CTL_COUNTERS_REQUEST:
		r->kind = WIRE_CTL_COUNTERS_RESPONSE;
		r->counters.counters = calloc(4, sizeof(*r->counters.counters));
		if (strcmp(req->counters_request.scope, "total") == 0) {
			add_counter(&r->counters, "total", "RX_PACKETS", 99);
			add_counter(&r->counters, "total", "NO_BACKEND", 7);
		} else if (strcmp(req->counters_request.scope, "port:") == 0) {
			add_counter(&r->counters, "port:eth0", "IMISSED", 3);
		} else if (strcmp(req->counters_request.scope, "control") == 0) {
			add_counter(&r->counters, "control", "IMPORTED", 5);
			add_counter(&r->counters, "control", "NEIGHBOURS", 2);
		}
		return 0;
	case WIRE_CTL_VIP_LIST_REQUEST:
		fill_vip_page(f, &req->vip_list_request, r);
		return 0;
	case WIRE_CTL_BFD_STATUS_REQUEST:
		r->kind = WIRE_CTL_ERROR;
		r->error.code = EOPNOTSUPP;
		snprintf(r->error.message, sizeof(r->error.message), "no bfd section");
		return 0;
	case WIRE_CTL_CLUSTER_REQUEST:
		r->kind = WIRE_CTL_CLUSTER_STATUS;
		r->cluster.node_id = 1;
		r->cluster.role = f->role;
		r->cluster.quorate = true;
		r->cluster.role_changes = 4;
		r->cluster.members = calloc(2, sizeof(*r->cluster.members));
		r->cluster.count = 2;
		r->cluster.members[0] = (struct wire_ctl_cluster_member){
			.id = 1, .role = f->role, .known = true, .eligible = true };
		r->cluster.members[1] = (struct wire_ctl_cluster_member){ .id = 2 };
		return 0;
	case WIRE_CTL_SYNC_STATUS_REQUEST:
		r->kind = WIRE_CTL_SYNC_STATUS;
		r->sync_status.synced = true;
		r->sync_status.groups = calloc(1, sizeof(*r->sync_status.groups));
		r->sync_status.n_groups = 1;
		snprintf(r->sync_status.groups[0].name, WIRE_NAME_MAX, "default");
		snprintf(r->sync_status.groups[0].state, WIRE_NAME_MAX, "synced");
		r->sync_status.groups[0].import_lag_p99_us = 2500;
		for (int i = 0; i < WIRE_LAG_BUCKETS; i++)
			r->sync_status.groups[0].import_lag.cumulative[i] = i < 3 ? 0 : 40;
		r->sync_status.groups[0].import_lag.count = 41;
		r->sync_status.groups[0].import_lag.sum_us = 123000;
		r->sync_status.drops = calloc(1, sizeof(*r->sync_status.drops));
		r->sync_status.n_drops = 1;
		snprintf(r->sync_status.drops[0].reason, WIRE_NAME_MAX, "IMPORT_QUEUE");
		r->sync_status.drops[0].count = 11;
		return 0;
	case WIRE_CTL_HEALTH_STATUS_REQUEST: {
		struct wire_ctl_health_status *h = &r->health_status;

		/* web0's backends, one a page: the collector follows the cursor. */
		r->kind = WIRE_CTL_HEALTH_STATUS;
		h->node_id = 1;
		h->targets = calloc(1, sizeof(*h->targets));
		h->n_targets = 1;
		snprintf(h->targets[0].vip, WIRE_NAME_MAX, "web0");
		h->targets[0].family = AF_INET;
		inet_pton(AF_INET, "198.19.0.1", h->targets[0].backend);
		h->targets[0].backend[3] = (uint8_t)(1 + req->health_status_request.cursor);
		h->targets[0].agreed_up = true;
		h->targets[0].local_up = req->health_status_request.cursor == 0;
		if (!h->targets[0].local_up) {
			h->targets[0].down_by[0] = 1;
			h->targets[0].n_down_by = 1;
		}
		h->targets[0].probes = 10;
		h->targets[0].last_duration_us = 1500;
		h->next_cursor = req->health_status_request.cursor == 0 ? 1 : 0;
		h->probes = 20;
		for (int i = 0; i < WIRE_PROBE_BUCKETS; i++)
			h->probe_duration.cumulative[i] = i < 2 ? 0 : 20;
		h->probe_duration.count = 20;
		h->probe_duration.sum_us = 30000;
		return 0;
	}
	default:
		return -EINVAL;
	}
}

static struct fake
fake_node(void)
{
	return (struct fake){ .dataplane = true, .syncd = true, .packets = 1000,
			      .state1 = WIRE_BACKEND_UP, .role = WIRE_ROLE_ACTIVE };
}

/* What fn writes, NUL-terminated; the caller frees. */
static char *
metrics_of(const struct mon_snapshot *s)
{
	struct mon_metrics_ctx ctx = { .version = "1.2.3", .flows_capacity = 1000,
				       .shared_capacity = 4000 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ctx.stats.auth_failures = 9;
	ck_assert_int_eq(mon_metrics_write(f, s, &ctx), 0);
	fclose(f);
	return buf;
}

static void
has_line(const char *text, const char *line)
{
	const char *at = text;
	size_t n = strlen(line);

	while ((at = strstr(at, line)) != NULL) {
		if ((at == text || at[-1] == '\n') && (at[n] == '\n' || at[n] == '\0'))
			return;
		at += n;
	}
	ck_abort_msg("no line '%s' in:\n%s", line, text);
}

START_TEST(test_collect_and_metrics)
{
	struct fake f = fake_node();
	const struct mon_source_ops ops = { fake_request, &f };
	struct mon_snapshot *s;
	char *m;

	f.page_vips = 2;    /* two pages: the collector follows the cursor */
	s = mon_snapshot_collect(&ops, 1000);
	ck_assert_ptr_nonnull(s);
	ck_assert(s->up[MON_DATAPLANE] && s->up[MON_SYNCD]);
	ck_assert(s->has_status && s->has_counters && s->has_vips && !s->has_bfd);
	ck_assert(s->has_cluster && s->has_sync);
	ck_assert_uint_eq(s->vips.n_vips, N_VIPS);
	ck_assert_uint_eq(s->vips.n_backends, N_VIPS * BACKENDS_PER_VIP);
	ck_assert_uint_eq(s->vip_first[2], 4);
	/* BFD's refusal is said, the rest is kept. */
	ck_assert_uint_eq(s->n_errors, 1);
	ck_assert_str_eq(s->errors[0], "maglb-dataplane: bfd-status-request: no bfd section");
	ck_assert_uint_eq(mon_counter(s, "port:eth0", "IMISSED", 0), 3);
	ck_assert_uint_eq(mon_counter(s, "port:eth0", "nope", 42), 42);
	m = metrics_of(s);
	has_line(m, "# TYPE maglb_build_info gauge");
	has_line(m, "maglb_build_info{version=\"1.2.3\"} 1");
	has_line(m, "maglb_up{daemon=\"dataplane\"} 1");
	has_line(m, "maglb_flow_table_entries{table=\"local\"} 1234");
	has_line(m, "maglb_flow_table_capacity{table=\"local\"} 2000");
	has_line(m, "maglb_flow_table_capacity{table=\"synced\"} 4000");
	has_line(m, "maglb_dataplane_events_total{event=\"rx_packets\"} 99");
	has_line(m, "maglb_dropped_packets_total{reason=\"no_backend\"} 7");
	has_line(m, "maglb_control_events_total{event=\"imported\"} 5");
	has_line(m, "maglb_neighbours 2");
	has_line(m, "maglb_port_rx_missed_packets_total{port=\"eth0\"} 3");
	has_line(m, "maglb_vip_info{vip=\"web2\",address=\"198.18.1.3\",port=\"80\",protocol=\"udp\"} 1");
	has_line(m, "maglb_vip_packets_total{vip=\"web0\"} 1010");
	has_line(m, "maglb_vip_backends_up{vip=\"web0\"} 2");
	has_line(m, "maglb_backend_packets_total{vip=\"web0\",backend=\"198.19.0.1\"} 1000");
	has_line(m, "maglb_backend_maglev_share{vip=\"web1\",backend=\"198.19.0.2\"} 0.428571429");
	has_line(m, "maglb_backend_state{vip=\"web0\",backend=\"198.19.0.2\",state=\"up\"} 1");
	has_line(m, "maglb_backend_state{vip=\"web0\",backend=\"198.19.0.2\",state=\"down\"} 0");
	has_line(m, "maglb_backend_health_up{view=\"agreed\",vip=\"web0\",backend=\"198.19.0.2\"} 1");
	has_line(m, "maglb_cluster_active 1");
	has_line(m, "maglb_cluster_role_changes_total 4");
	has_line(m, "maglb_cluster_members 1");
	has_line(m, "maglb_cluster_member_known{member=\"2\"} 0");
	has_line(m, "maglb_sync_synced 1");
	/* Quantiles are the histograms' (promtool refuses a gauge with one). */
	ck_assert_ptr_null(strstr(m, "quantile="));
	has_line(m, "maglb_sync_dropped_entries_total{group=\"\",reason=\"import_queue\"} 11");
	has_line(m, "maglb_monitor_auth_failures_total 9");
	/* Histograms: le in seconds, cumulative, +Inf the count. */
	has_line(m, "# TYPE maglb_sync_import_lag_seconds histogram");
	has_line(m, "maglb_sync_import_lag_seconds_bucket{group=\"default\",le=\"0.0005\"} 0");
	has_line(m, "maglb_sync_import_lag_seconds_bucket{group=\"default\",le=\"0.001\"} 40");
	has_line(m, "maglb_sync_import_lag_seconds_bucket{group=\"default\",le=\"+Inf\"} 41");
	has_line(m, "maglb_sync_import_lag_seconds_sum{group=\"default\"} 0.123");
	has_line(m, "maglb_sync_import_lag_seconds_count{group=\"default\"} 41");
	has_line(m, "maglb_probe_duration_seconds_bucket{le=\"0.001\"} 20");
	has_line(m, "maglb_probe_duration_seconds_count 20");
	/* Health: local for the probed ones only, agreed for all. */
	has_line(m, "maglb_backend_health_up{view=\"local\",vip=\"web0\",backend=\"198.19.0.2\"} 0");
	has_line(m, "maglb_backend_health_up{view=\"local\",vip=\"web0\",backend=\"198.19.0.1\"} 1");
	has_line(m, "maglb_backend_health_up{view=\"agreed\",vip=\"web1\",backend=\"198.19.0.1\"} 1");
	ck_assert_ptr_null(strstr(m, "maglb_backend_health_up{view=\"local\",vip=\"web1\""));
	has_line(m, "maglb_backend_health_down_reports{vip=\"web0\",backend=\"198.19.0.2\"} 1");
	has_line(m, "maglb_backend_probe_last_duration_seconds{vip=\"web0\",backend=\"198.19.0.1\"} 0.0015");
	/* No BFD section: no BFD families. */
	ck_assert_ptr_null(strstr(m, "maglb_bfd_session_up"));
	free(m);
	mon_snapshot_put(s);
}
END_TEST

START_TEST(test_daemons_down)
{
	struct fake f = fake_node();
	const struct mon_source_ops ops = { fake_request, &f };
	struct mon_snapshot *s;
	char *m;

	f.dataplane = false;
	s = mon_snapshot_collect(&ops, 1000);
	ck_assert(!s->up[MON_DATAPLANE] && s->up[MON_SYNCD]);
	ck_assert(!s->has_status && !s->has_vips && s->has_cluster);
	/* Refused once, not asked again in the same snapshot: the dataplane's
	 * STATUS, then syncd's CLUSTER, SYNC_STATUS, two pages of health. */
	ck_assert_uint_eq(f.requests, 5);
	ck_assert_uint_eq(s->n_errors, 1);
	m = metrics_of(s);
	has_line(m, "maglb_up{daemon=\"dataplane\"} 0");
	has_line(m, "maglb_up{daemon=\"syncd\"} 1");
	ck_assert_ptr_null(strstr(m, "maglb_vip_info{"));
	free(m);
	mon_snapshot_put(s);
}
END_TEST

static char *
written(int (*fn)(FILE *, const void *, const void *), const void *a, const void *b)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_int_eq(fn(f, a, b), 0);
	fclose(f);
	return buf;
}

static int
state_fn(FILE *f, const void *s, const void *ctx)
{
	return mon_api_state(f, s, ctx);
}

static int
history_fn(FILE *f, const void *h, const void *unused)
{
	(void)unused;
	return mon_api_history(f, h);
}

START_TEST(test_state_json)
{
	struct fake f = fake_node();
	const struct mon_source_ops ops = { fake_request, &f };
	struct mon_snapshot *s = mon_snapshot_collect(&ops, 1000);
	struct mon_api_ctx ctx = { "lb-a", "1.2.3", "alice", "admin", "c0ffee" };
	char *j = written(state_fn, s, &ctx);

	ck_assert_ptr_nonnull(strstr(j, "\"name\": \"lb-a\""));
	ck_assert_ptr_nonnull(strstr(j, "\"csrf\": \"c0ffee\""));
	ck_assert_ptr_nonnull(strstr(j, "\"role\": \"active\""));
	ck_assert_ptr_nonnull(strstr(j, "\"maglev_share\": 0.571428571"));
	ck_assert_ptr_nonnull(strstr(j, "\"lag_p99_ms\": 2.5"));
	ck_assert_ptr_nonnull(strstr(j, "\"bfd\": null"));
	ck_assert_ptr_nonnull(strstr(j, "\"local\": \"down\",\n            \"agreed\": \"up\",\n"
				     "            \"down_on\": [\n              1\n            ]"));
	ck_assert_ptr_nonnull(strstr(j, "\"local\": \"unknown\""));
	free(j);
	/* HTTP Basic: no session, no token. */
	ctx.csrf = NULL;
	j = written(state_fn, s, &ctx);
	ck_assert_ptr_null(strstr(j, "csrf"));
	free(j);
	mon_snapshot_put(s);
}
END_TEST

START_TEST(test_history)
{
	struct fake f = fake_node();
	const struct mon_source_ops ops = { fake_request, &f };
	struct mon_history *h = mon_history_create();
	struct mon_snapshot *a, *b, *c;
	char *j;

	a = mon_snapshot_collect(&ops, 10000);
	mon_history_add(h, NULL, a);
	f.packets += 500;
	f.state1 = WIRE_BACKEND_DOWN;
	f.role = WIRE_ROLE_PASSIVE;
	b = mon_snapshot_collect(&ops, 12000);
	mon_history_add(h, a, b);
	/* The dataplane restarted: its counters went back, no rate. */
	f.packets = 0;
	c = mon_snapshot_collect(&ops, 13000);
	mon_history_add(h, b, c);
	mon_history_event(h, 13500, MON_EVENT_ADMIN, "alice: backend drain web0 198.19.0.1");
	j = written(history_fn, h, NULL);
	ck_assert_ptr_nonnull(strstr(j, "\"t_ms\": 12000,\n      \"packets_per_s\": 250,"));
	ck_assert_ptr_nonnull(strstr(j, "\"t_ms\": 13000,\n      \"packets_per_s\": null,"));
	ck_assert_ptr_nonnull(strstr(j, "\"text\": \"node 1: active -> passive\""));
	ck_assert_ptr_nonnull(strstr(j, "\"text\": \"web0 198.19.0.2: up -> down\""));
	ck_assert_ptr_nonnull(strstr(j, "\"kind\": \"admin\""));
	free(j);
	/* The rings keep the last ones. */
	for (int i = 0; i < MON_HISTORY_EVENTS + 5; i++)
		mon_history_event(h, 20000 + (uint64_t)i, MON_EVENT_ROLE, "e%d", i);
	j = written(history_fn, h, NULL);
	ck_assert_ptr_null(strstr(j, "\"e4\""));
	ck_assert_ptr_nonnull(strstr(j, "\"e5\""));
	ck_assert_ptr_nonnull(strstr(j, "\"e204\""));
	free(j);
	mon_snapshot_put(a);
	mon_snapshot_put(b);
	mon_snapshot_put(c);
	mon_history_free(h);
}
END_TEST

/* ---- routes and access ---- */

START_TEST(test_routes)
{
	struct mon_route_info r;

	mon_route("GET", "/", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_ASSET);
	ck_assert_str_eq(r.asset, "index.html");
	mon_route("HEAD", "/console.js", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_ASSET);
	ck_assert_str_eq(r.content_type, "text/javascript; charset=utf-8");
	mon_route("POST", "/console.js", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_BAD_METHOD);
	ck_assert_str_eq(r.allow, "GET, HEAD");
	mon_route("GET", "/metrics", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_METRICS);
	mon_route("GET", "/api/v1/backend", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_BAD_METHOD);
	ck_assert_str_eq(r.allow, "POST");
	mon_route("POST", "/api/v1/backend", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_BACKEND);
	ck_assert(r.is_post);
	mon_route("GET", "/../etc/passwd", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_NOT_FOUND);
	mon_route("GET", "/fixtures/state-admin.json", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_NOT_FOUND);
	mon_route("DELETE", "/metrics", &r);
	ck_assert_int_eq(r.route, MON_ROUTE_BAD_METHOD);
}
END_TEST

static enum mon_access
access_of(const char *method, const char *path, struct mon_credentials c)
{
	struct mon_route_info r;

	mon_route(method, path, &r);
	return mon_authorize(&r, &c);
}

START_TEST(test_access)
{
	const struct mon_credentials none = { .metrics_auth = true };
	const struct mon_credentials viewer = { .basic = true, .metrics_auth = true };
	const struct mon_credentials admin_basic = { .basic = true, .admin = true };
	const struct mon_credentials admin_session = { .session = true, .admin = true };
	struct mon_credentials admin_token = admin_session, viewer_token = { .session = true };
	struct mon_credentials open_metrics = { .metrics_auth = false };

	admin_token.csrf_ok = true;
	viewer_token.csrf_ok = true;
	ck_assert_int_eq(access_of("GET", "/login.html", none), MON_ALLOW);
	ck_assert_int_eq(access_of("GET", "/console.css", none), MON_ALLOW);
	ck_assert_int_eq(access_of("GET", "/", none), MON_LOGIN_PAGE);
	ck_assert_int_eq(access_of("GET", "/", viewer), MON_ALLOW);
	ck_assert_int_eq(access_of("GET", "/metrics", none), MON_UNAUTHORIZED);
	ck_assert_int_eq(access_of("GET", "/metrics", open_metrics), MON_ALLOW);
	ck_assert_int_eq(access_of("GET", "/api/v1/state", open_metrics), MON_UNAUTHORIZED);
	ck_assert_int_eq(access_of("GET", "/api/v1/state", viewer), MON_ALLOW);
	ck_assert_int_eq(access_of("POST", "/login", none), MON_ALLOW);
	ck_assert_int_eq(access_of("POST", "/api/v1/backend", none), MON_UNAUTHORIZED);
	ck_assert_int_eq(access_of("POST", "/api/v1/backend", viewer), MON_FORBIDDEN);
	ck_assert_int_eq(access_of("POST", "/api/v1/backend", admin_basic), MON_ALLOW);
	/* A cookie rides along a cross-site POST: the token must too. */
	ck_assert_int_eq(access_of("POST", "/api/v1/backend", admin_session), MON_CSRF);
	ck_assert_int_eq(access_of("POST", "/api/v1/standby", admin_token), MON_ALLOW);
	ck_assert_int_eq(access_of("POST", "/api/v1/standby", viewer_token), MON_FORBIDDEN);
	ck_assert_int_eq(access_of("POST", "/logout", admin_session), MON_CSRF);
	ck_assert_int_eq(access_of("POST", "/logout", viewer_token), MON_ALLOW);
	ck_assert_int_eq(access_of("POST", "/logout", viewer), MON_UNAUTHORIZED);
}
END_TEST

/* ---- bodies ---- */

static void
json_refused(const char *body, const char *why)
{
	struct mon_fields f;
	char err[256] = "";

	ck_assert_msg(mon_fields_json(body, strlen(body), &f, err, sizeof(err)) == -EINVAL,
		      "accepted %s", body);
	ck_assert_msg(strstr(err, why) != NULL, "'%s': '%s', not '%s'", body, err, why);
}

START_TEST(test_fields)
{
	struct mon_fields f;
	char err[256], big[MON_BODY_MAX + 2];
	const char *form = "user=al%69ce&password=a+b%26c%3D&";

	ck_assert_int_eq(mon_fields_form(form, strlen(form), &f, err, sizeof(err)), 0);
	ck_assert_str_eq(mon_field(&f, "user"), "alice");
	ck_assert_str_eq(mon_field(&f, "password"), "a b&c=");
	ck_assert_ptr_null(mon_field(&f, "nope"));
	ck_assert_int_eq(mon_fields_form("a=1&a=2", 7, &f, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "field 'a' given twice");
	ck_assert_int_eq(mon_fields_form("a=%4", 4, &f, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mon_fields_form("a=%zz", 5, &f, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mon_fields_form("novalue", 7, &f, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mon_fields_form("a=%00", 5, &f, err, sizeof(err)), -EINVAL);
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(mon_fields_form(big, sizeof(big), &f, err, sizeof(err)), -EINVAL);

	const char *j = " {\"vip\": \"web\", \"backend\":\"198.19.0.1\",\n"
			"\"action\": \"weight\", \"weight\": 50, \"x\": true, \"y\": null,"
			" \"z\": \"a\\\"\\u0041\"} ";
	ck_assert_int_eq(mon_fields_json(j, strlen(j), &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.n, 7);
	ck_assert_str_eq(mon_field(&f, "weight"), "50");
	ck_assert_str_eq(mon_field(&f, "x"), "true");
	ck_assert_str_eq(mon_field(&f, "z"), "a\"A");
	ck_assert_int_eq(mon_fields_json("{}", 2, &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.n, 0);
	json_refused("", "must be a JSON object");
	json_refused("[1]", "must be a JSON object");
	json_refused("{\"a\": {\"b\": 1}}", "must be a string, number or boolean");
	json_refused("{\"a\": [1]}", "must be a string, number or boolean");
	json_refused("{\"a\": 1,}", "a key must be a string");
	json_refused("{\"a\" 1}", "':' expected");
	json_refused("{\"a\": 1} x", "something after the object");
	json_refused("{\"a\": 1", "',' or '}' expected");
	json_refused("{\"a\": \"b", "a malformed value");
	json_refused("{\"a\": tru}", "a malformed value");
	json_refused("{\"a\": 1e}", "a malformed value");
	json_refused("{\"a\": \"\\u00e9\"}", "a malformed value");
	json_refused("{\"a\": \"\\u0000\"}", "a malformed value");
	json_refused("{\"a\": 1, \"a\": 2}", "given twice");
	json_refused("{\"a\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1}",
		     "more than 8 fields");
}
END_TEST

START_TEST(test_actions)
{
	struct fake fk = fake_node();
	const struct mon_source_ops ops = { fake_request, &fk };
	struct mon_snapshot *s = mon_snapshot_collect(&ops, 1000);
	struct wire_ctl_backend_set b;
	struct mon_fields f;
	char err[256];
	bool on;

#define FIELDS(text) ck_assert_int_eq(mon_fields_json(text, strlen(text), &f, err, sizeof(err)), 0)
	FIELDS("{\"vip\": \"web1\", \"backend\": \"198.19.0.2\", \"action\": \"drain\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.action, WIRE_BACKEND_DRAIN);
	ck_assert_str_eq(b.vip, "web1");
	ck_assert_int_eq(b.family, AF_INET);
	ck_assert_uint_eq(b.backend[3], 2);
	/* Undrain: back to the config's weight. */
	FIELDS("{\"vip\": \"web1\", \"backend\": \"198.19.0.2\", \"action\": \"undrain\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.action, WIRE_BACKEND_SET_WEIGHT);
	ck_assert_uint_eq(b.weight, 100);
	FIELDS("{\"vip\": \"web1\", \"backend\": \"198.19.0.9\", \"action\": \"undrain\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), -ENOENT);
	FIELDS("{\"vip\": \"web1\", \"backend\": \"2001:db8::5\", \"action\": \"weight\", \"weight\": \"7\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), 0);
	ck_assert_int_eq(b.family, AF_INET6);
	ck_assert_uint_eq(b.weight, 7);
	FIELDS("{\"vip\": \"web1\", \"backend\": \"198.19.0.2\", \"action\": \"weight\", \"weight\": -1}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "weight '-1' is not a whole number");
	FIELDS("{\"vip\": \"web1\", \"backend\": \"198.19.0.2\", \"action\": \"weight\", \"weight\": 1.5}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), -EINVAL);
	FIELDS("{\"vip\": \"web1\", \"backend\": \"host\", \"action\": \"drain\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "backend 'host' is not an address");
	FIELDS("{\"vip\": \"web1\", \"backend\": \"198.19.0.2\", \"action\": \"down\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), -EINVAL);
	FIELDS("{\"vip\": \"web1\"}");
	ck_assert_int_eq(mon_backend_action(&f, &s->vips, &b, err, sizeof(err)), -EINVAL);
	FIELDS("{\"on\": true}");
	ck_assert_int_eq(mon_standby_action(&f, &on, err, sizeof(err)), 0);
	ck_assert(on);
	FIELDS("{\"on\": 1}");
	ck_assert_int_eq(mon_standby_action(&f, &on, err, sizeof(err)), -EINVAL);
#undef FIELDS
	mon_snapshot_put(s);
}
END_TEST

START_TEST(test_cookie)
{
	char v[65];

	ck_assert(mon_cookie("a=1; maglb_session=abc; b=2", "maglb_session", v, sizeof(v)));
	ck_assert_str_eq(v, "abc");
	ck_assert(mon_cookie("maglb_session=", "maglb_session", v, sizeof(v)));
	ck_assert_str_eq(v, "");
	ck_assert(!mon_cookie("xmaglb_session=abc", "maglb_session", v, sizeof(v)));
	ck_assert(!mon_cookie("maglb_sessionx=abc", "maglb_session", v, sizeof(v)));
	ck_assert(!mon_cookie("", "maglb_session", v, sizeof(v)));
	ck_assert(!mon_cookie("maglb_session=0123456789012345678901234567890123456789"
			      "0123456789012345678901234567890123456789", "maglb_session", v,
			      sizeof(v)));
}
END_TEST

static Suite *
monitor_suite(void)
{
	Suite *s = suite_create("monitor");
	TCase *tc = tcase_create("monitor");

	tcase_add_test(tc, test_collect_and_metrics);
	tcase_add_test(tc, test_daemons_down);
	tcase_add_test(tc, test_state_json);
	tcase_add_test(tc, test_history);
	tcase_add_test(tc, test_routes);
	tcase_add_test(tc, test_access);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_actions);
	tcase_add_test(tc, test_cookie);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(monitor_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
