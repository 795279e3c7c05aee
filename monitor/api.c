/* SPDX-License-Identifier: BSD-3-Clause */
/* The JSON API and the history: see api.h. */
#include "monitor/api.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "lib/json.h"

/* Backends changing state in one collection that get an event each. */
enum {
	HEALTH_EVENTS_MAX = 16,
};

const char *const mon_event_kind_names[MON_EVENT_KIND_MAX] = {
	[MON_EVENT_ROLE] = "role",
	[MON_EVENT_HEALTH] = "health",
	[MON_EVENT_ADMIN] = "admin",
};

struct point {
	uint64_t t_ms;
	double packets_per_s, new_flows_per_s, sync_lag_p99_ms;    /* NaN: unknown */
};

struct event {
	uint64_t t_ms;
	enum mon_event_kind kind;
	char text[MON_EVENT_TEXT_MAX];
};

struct mon_history {
	struct point points[MON_HISTORY_POINTS];
	size_t n_points, next_point;
	struct event events[MON_HISTORY_EVENTS];
	size_t n_events, next_event;
};

struct mon_history *
mon_history_create(void)
{
	return calloc(1, sizeof(struct mon_history));
}

void
mon_history_free(struct mon_history *h)
{
	free(h);
}

void
mon_history_event(struct mon_history *h, uint64_t t_ms, enum mon_event_kind kind,
		  const char *fmt, ...)
{
	struct event *e = &h->events[h->next_event];
	va_list ap;

	e->t_ms = t_ms;
	e->kind = kind;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	h->next_event = (h->next_event + 1) % MON_HISTORY_EVENTS;
	if (h->n_events < MON_HISTORY_EVENTS)
		h->n_events++;
}

static const char *
role_name(enum wire_role r)
{
	return r == WIRE_ROLE_ACTIVE ? "active" : r == WIRE_ROLE_PASSIVE ? "passive" : "unknown";
}

/* The VIPs' packets and new flows, summed. */
static void
traffic_sums(const struct mon_snapshot *s, uint64_t *packets, uint64_t *new_flows)
{
	*packets = *new_flows = 0;
	for (size_t v = 0; v < s->vips.n_vips; v++) {
		*packets += s->vips.vips[v].traffic.packets;
		*new_flows += s->vips.vips[v].traffic.new_flows;
	}
}

static double
rate(uint64_t before, uint64_t after, double seconds)
{
	if (after < before || seconds <= 0)
		return NAN;     /* the dataplane restarted between them */
	return (double)(after - before) / seconds;
}

static void
add_point(struct mon_history *h, const struct mon_snapshot *prev, const struct mon_snapshot *s)
{
	struct point *p = &h->points[h->next_point];

	*p = (struct point){ .t_ms = s->time_ms, .packets_per_s = NAN,
			     .new_flows_per_s = NAN, .sync_lag_p99_ms = NAN };
	if (prev != NULL && prev->has_vips && s->has_vips && s->time_ms > prev->time_ms) {
		double dt = (double)(s->time_ms - prev->time_ms) / 1e3;
		uint64_t p0, n0, p1, n1;

		traffic_sums(prev, &p0, &n0);
		traffic_sums(s, &p1, &n1);
		p->packets_per_s = rate(p0, p1, dt);
		p->new_flows_per_s = rate(n0, n1, dt);
	}
	if (s->has_sync) {
		const struct wire_ctl_sync_status *st = &s->sync.sync_status;
		uint32_t worst = 0;

		for (size_t g = 0; g < st->n_groups; g++)
			if (st->groups[g].import_lag_p99_us > worst)
				worst = st->groups[g].import_lag_p99_us;
		p->sync_lag_p99_ms = worst / 1e3;
	}
	h->next_point = (h->next_point + 1) % MON_HISTORY_POINTS;
	if (h->n_points < MON_HISTORY_POINTS)
		h->n_points++;
}

static void
cluster_events(struct mon_history *h, const struct mon_snapshot *prev,
	       const struct mon_snapshot *s)
{
	const struct wire_ctl_cluster *a = &prev->cluster.cluster, *b = &s->cluster.cluster;

	if (!prev->has_cluster || !s->has_cluster)
		return;
	if (a->role != b->role)
		mon_history_event(h, s->time_ms, MON_EVENT_ROLE, "node %u: %s -> %s",
				  b->node_id, role_name(a->role), role_name(b->role));
	if (a->quorate != b->quorate)
		mon_history_event(h, s->time_ms, MON_EVENT_ROLE, "node %u: quorum %s",
				  b->node_id, b->quorate ? "regained" : "lost");
	if (a->standby != b->standby)
		mon_history_event(h, s->time_ms, MON_EVENT_ROLE, "node %u: standby %s",
				  b->node_id, b->standby ? "on" : "off");
}

static bool
same_backend(const struct wire_ctl_backend *a, const struct wire_ctl_backend *b)
{
	return a->family == b->family && memcmp(a->address, b->address, WIRE_ADDR_MAX) == 0 &&
	       strcmp(a->vip, b->vip) == 0;
}

/* Backends in the same place of both lists (a reload that moves them
 * gives no events for the ones moved). */
static void
backend_events(struct mon_history *h, const struct mon_snapshot *prev,
	       const struct mon_snapshot *s)
{
	size_t n, changed = 0;

	if (!prev->has_vips || !s->has_vips)
		return;
	n = prev->vips.n_backends < s->vips.n_backends ? prev->vips.n_backends :
	    s->vips.n_backends;
	for (size_t i = 0; i < n; i++) {
		const struct wire_ctl_backend *a = &prev->vips.backends[i], *b = &s->vips.backends[i];
		char addr[INET6_ADDRSTRLEN];

		if (!same_backend(a, b) || a->state == b->state)
			continue;
		if (++changed > HEALTH_EVENTS_MAX)
			continue;
		mon_history_event(h, s->time_ms, MON_EVENT_HEALTH, "%s %s: %s -> %s", b->vip,
				  mon_addr_str(b->family, b->address, addr, sizeof(addr)),
				  wire_backend_state_names[a->state], wire_backend_state_names[b->state]);
	}
	if (changed > HEALTH_EVENTS_MAX)
		mon_history_event(h, s->time_ms, MON_EVENT_HEALTH,
				  "and %zu more backends changed state", changed - HEALTH_EVENTS_MAX);
}

void
mon_history_add(struct mon_history *h, const struct mon_snapshot *prev,
		const struct mon_snapshot *s)
{
	add_point(h, prev, s);
	if (prev == NULL)
		return;
	cluster_events(h, prev, s);
	backend_events(h, prev, s);
}

int
mon_api_history(FILE *f, const struct mon_history *h)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_u64(&j, "interval_ms", MON_COLLECT_INTERVAL_MS);
	json_array_begin(&j, "points");
	for (size_t i = 0; i < h->n_points; i++) {
		size_t at = (h->next_point + MON_HISTORY_POINTS - h->n_points + i) % MON_HISTORY_POINTS;
		const struct point *p = &h->points[at];

		json_object_begin(&j, NULL);
		json_u64(&j, "t_ms", p->t_ms);
		json_double(&j, "packets_per_s", p->packets_per_s);
		json_double(&j, "new_flows_per_s", p->new_flows_per_s);
		json_double(&j, "sync_lag_p99_ms", p->sync_lag_p99_ms);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "events");
	for (size_t i = 0; i < h->n_events; i++) {
		size_t at = (h->next_event + MON_HISTORY_EVENTS - h->n_events + i) % MON_HISTORY_EVENTS;
		const struct event *e = &h->events[at];

		json_object_begin(&j, NULL);
		json_u64(&j, "t_ms", e->t_ms);
		json_string(&j, "kind", mon_event_kind_names[e->kind]);
		json_string(&j, "text", e->text);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	return json_finish(&j);
}

/* --------------------------------------------------------------- state */

static void
state_cluster(struct json *j, const struct wire_ctl_cluster *c)
{
	json_object_begin(j, "cluster");
	json_string(j, "mode", c->mode < WIRE_CLUSTER_MODE_MAX ? wire_cluster_mode_names[c->mode] : "?");
	json_bool(j, "quorate", c->quorate);
	json_string(j, "role", role_name(c->role));
	json_bool(j, "eligible", c->eligible);
	json_bool(j, "standby", c->standby);
	json_u64(j, "lease_ms", c->lease_ms);
	json_u64(j, "role_changes", c->role_changes);
	json_u64(j, "last_change_ms", c->last_change_unix_ms);
	json_array_begin(j, "members");
	for (size_t i = 0; i < c->count; i++) {
		const struct wire_ctl_cluster_member *m = &c->members[i];

		json_object_begin(j, NULL);
		json_u64(j, "id", m->id);
		if (m->known)
			json_string(j, "role", role_name(m->role));
		else
			json_null(j, "role");
		json_u64(j, "priority", m->priority);
		json_bool(j, "known", m->known);
		json_bool(j, "eligible", m->eligible);
		json_bool(j, "dataplane", m->dataplane);
		json_bool(j, "synced", m->synced);
		json_bool(j, "quorate", m->quorate);
		json_bool(j, "standby", m->standby);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

static void
state_sync(struct json *j, const struct wire_ctl_sync_status *st)
{
	json_object_begin(j, "sync");
	json_bool(j, "synced", st->synced);
	json_u64(j, "entries", st->entries);
	json_array_begin(j, "groups");
	for (size_t i = 0; i < st->n_groups; i++) {
		const struct wire_ctl_sync_group *g = &st->groups[i];

		json_object_begin(j, NULL);
		json_string(j, "name", g->name);
		json_string(j, "state", g->state);
		json_u64(j, "members", g->n_members);
		json_u64(j, "entries_sent", g->entries_sent);
		json_u64(j, "entries_received", g->entries_received);
		json_u64(j, "imported", g->imported);
		json_u64(j, "rejected", g->rejected);
		json_u64(j, "dropped", g->dropped);
		json_double(j, "lag_p50_ms", g->import_lag_p50_us / 1e3);
		json_double(j, "lag_p99_ms", g->import_lag_p99_us / 1e3);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

/* Health: syncd's probes when it probes the backend, else the dataplane's
 * state for the agreed view and "unknown" for the local one. */
static void
state_backend(struct json *j, const struct wire_ctl_vip *v, const struct wire_ctl_backend *b,
	      const struct wire_ctl_health_target *t)
{
	char addr[INET6_ADDRSTRLEN];
	bool agreed_up = t != NULL ? t->agreed_up : b->state != WIRE_BACKEND_DOWN;

	json_object_begin(j, NULL);
	json_string(j, "address", mon_addr_str(b->family, b->address, addr, sizeof(addr)));
	json_u64(j, "weight", b->weight);
	json_u64(j, "config_weight", b->config_weight);
	json_string(j, "state", wire_backend_state_names[b->state]);
	json_double(j, "maglev_share", v->table_size > 0 ?
		    (double)b->maglev_slots / v->table_size : 0);
	json_u64(j, "flows", b->flows);
	json_u64(j, "packets", b->traffic.packets);
	json_u64(j, "bytes", b->traffic.bytes);
	json_u64(j, "new_flows", b->traffic.new_flows);
	json_object_begin(j, "health");
	json_string(j, "local", t == NULL ? "unknown" : t->local_up ? "up" : "down");
	json_string(j, "agreed", agreed_up ? "up" : "down");
	json_array_begin(j, "down_on");
	for (uint32_t i = 0; t != NULL && i < t->n_down_by; i++)
		json_u64(j, NULL, t->down_by[i]);
	json_array_end(j);
	json_object_end(j);
	json_object_end(j);
}

static void
state_vips(struct json *j, const struct mon_snapshot *s)
{
	json_array_begin(j, "vips");
	for (size_t v = 0; s->has_vips && v < s->vips.n_vips; v++) {
		const struct wire_ctl_vip *vip = &s->vips.vips[v];
		char addr[INET6_ADDRSTRLEN];

		json_object_begin(j, NULL);
		json_string(j, "name", vip->name);
		json_string(j, "address", mon_addr_str(vip->family, vip->address, addr, sizeof(addr)));
		json_u64(j, "port", vip->port);
		json_string(j, "protocol", vip->proto == IPPROTO_UDP ? "udp" : "tcp");
		json_bool(j, "owned", vip->owned);
		json_u64(j, "backends", vip->backends);
		json_u64(j, "backends_up", vip->backends_up);
		json_u64(j, "flows", vip->flows);
		json_u64(j, "packets", vip->traffic.packets);
		json_u64(j, "bytes", vip->traffic.bytes);
		json_u64(j, "new_flows", vip->traffic.new_flows);
		json_array_begin(j, "backend_list");
		for (size_t b = s->vip_first[v]; b < s->vip_first[v + 1]; b++)
			state_backend(j, vip, &s->vips.backends[b], mon_backend_health(s, b));
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

static void
state_bfd(struct json *j, const struct wire_ctl_bfd_status *b)
{
	json_object_begin(j, "bfd");
	json_bool(j, "serving", b->serving);
	json_array_begin(j, "sessions");
	for (size_t i = 0; i < b->n_sessions; i++) {
		const struct wire_ctl_bfd_session *se = &b->sessions[i];
		char addr[INET6_ADDRSTRLEN];

		json_object_begin(j, NULL);
		json_string(j, "peer", mon_addr_str(se->family, se->peer, addr, sizeof(addr)));
		json_string(j, "state", wire_bfd_state_names[se->state]);
		json_u64(j, "state_changes", se->state_changes);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

int
mon_api_state(FILE *f, const struct mon_snapshot *s, const struct mon_api_ctx *ctx)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j, NULL);
	json_object_begin(&j, "node");
	if (s->has_cluster)
		json_u64(&j, "id", s->cluster.cluster.node_id);
	else if (s->has_status)
		json_u64(&j, "id", s->status.node_id);
	else
		json_null(&j, "id");
	json_string(&j, "name", ctx->node_name);
	json_string(&j, "version", ctx->version);
	json_bool(&j, "dataplane_up", s->up[MON_DATAPLANE]);
	json_bool(&j, "syncd_up", s->up[MON_SYNCD]);
	json_u64(&j, "time_ms", s->time_ms);
	json_object_end(&j);
	json_object_begin(&j, "user");
	json_string(&j, "name", ctx->user);
	json_string(&j, "role", ctx->role);
	json_object_end(&j);
	if (ctx->csrf != NULL)
		json_string(&j, "csrf", ctx->csrf);
	if (s->has_cluster)
		state_cluster(&j, &s->cluster.cluster);
	else
		json_null(&j, "cluster");
	if (s->has_sync)
		state_sync(&j, &s->sync.sync_status);
	else
		json_null(&j, "sync");
	state_vips(&j, s);
	if (s->has_bfd)
		state_bfd(&j, &s->bfd.bfd_status);
	else
		json_null(&j, "bfd");
	json_array_begin(&j, "errors");
	for (uint32_t i = 0; i < s->n_errors; i++)
		json_string(&j, NULL, s->errors[i]);
	json_array_end(&j);
	json_object_end(&j);
	return json_finish(&j);
}
