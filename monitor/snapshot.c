/* SPDX-License-Identifier: BSD-3-Clause */
/* Collecting a snapshot of the node: see snapshot.h. */
#include "monitor/snapshot.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

const char *const mon_service_names[MON_SERVICE_MAX] = {
	[MON_DATAPLANE] = "maglb-dataplane",
	[MON_SYNCD] = "maglb-syncd",
};

/* The dataplane's scopes a snapshot holds (prefixes, as maglbctl counters). */
static const char *const counter_scopes[MON_COUNTER_SCOPES] = {
	"total", "worker", "port:", "control", "synced", "bfd",
};

static uint64_t
monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void add_error(struct mon_snapshot *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
add_error(struct mon_snapshot *s, const char *fmt, ...)
{
	va_list ap;

	if (s->n_errors >= MON_ERRORS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(s->errors[s->n_errors++], WIRE_TEXT_MAX, fmt, ap);
	va_end(ap);
}

/*
 * One request; 0 and an answer of kind want in *resp, else -errno with an
 * error line (a refusal by the daemon gives its message). A service that
 * failed to connect once is not asked again in this snapshot.
 */
static int
ask(const struct mon_source_ops *ops, struct mon_snapshot *s, bool *down,
    enum mon_service svc, const struct wire_ctl_msg *req, enum wire_ctl_kind want,
    struct wire_ctl_msg *resp)
{
	const char *what = wire_ctl_kind_names[req->kind];
	int rc;

	if (down[svc])
		return -ENOTCONN;
	rc = ops->request(ops->ctx, svc, req, resp);
	if (rc < 0) {
		add_error(s, "%s: %s: %s", mon_service_names[svc], what, strerror(-rc));
		if (rc == -ECONNREFUSED || rc == -ENOENT || rc == -ENOTCONN ||
		    rc == -EACCES || rc == -ETIMEDOUT)
			down[svc] = true;
		return rc;
	}
	s->up[svc] = true;
	if (resp->kind == want)
		return 0;
	if (resp->kind == WIRE_CTL_ERROR && resp->error.code != 0)
		add_error(s, "%s: %s: %s", mon_service_names[svc], what, resp->error.message);
	else
		add_error(s, "%s: %s: answered %s", mon_service_names[svc], what,
			  wire_ctl_kind_names[resp->kind]);
	rc = resp->kind == WIRE_CTL_ERROR && resp->error.code > 0 ? -resp->error.code : -EPROTO;
	wire_ctl_msg_free(resp);
	return rc;
}

static void
collect_counters(const struct mon_source_ops *ops, struct mon_snapshot *s, bool *down)
{
	struct wire_ctl_counters *all = &s->counters;

	for (size_t i = 0; i < MON_COUNTER_SCOPES; i++) {
		struct wire_ctl_msg req = { .kind = WIRE_CTL_COUNTERS_REQUEST }, resp;
		struct wire_ctl_counter *grown;

		snprintf(req.counters_request.scope, sizeof(req.counters_request.scope), "%s",
			 counter_scopes[i]);
		if (ask(ops, s, down, MON_DATAPLANE, &req, WIRE_CTL_COUNTERS_RESPONSE, &resp) < 0)
			return;
		grown = realloc(all->counters, (all->count + resp.counters.count + 1) *
				sizeof(*grown));
		if (grown == NULL) {
			add_error(s, "counters: out of memory");
			wire_ctl_msg_free(&resp);
			return;
		}
		all->counters = grown;
		memcpy(all->counters + all->count, resp.counters.counters,
		       resp.counters.count * sizeof(*grown));
		all->count += resp.counters.count;
		wire_ctl_msg_free(&resp);
	}
	s->has_counters = true;
}

/* Index the backends by VIP: each VIP's come together, in the VIPs' order. */
static int
index_backends(struct mon_snapshot *s)
{
	const struct wire_ctl_vip_list *l = &s->vips;
	size_t at = 0;

	s->vip_first = calloc(l->n_vips + 1, sizeof(*s->vip_first));
	if (s->vip_first == NULL)
		return -ENOMEM;
	for (size_t v = 0; v < l->n_vips; v++) {
		s->vip_first[v] = at;
		at += l->vips[v].backends;
		if (at > l->n_backends)
			return -EPROTO;
		for (size_t b = s->vip_first[v]; b < at; b++)
			if (strcmp(l->backends[b].vip, l->vips[v].name) != 0)
				return -EPROTO;
	}
	s->vip_first[l->n_vips] = at;
	return at == l->n_backends ? 0 : -EPROTO;
}

static void
collect_vips(const struct mon_source_ops *ops, struct mon_snapshot *s, bool *down)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_VIP_LIST_REQUEST };
	int rc;

	req.vip_list_request.backends = true;
	req.vip_list_request.stats = true;
	do {
		struct wire_ctl_msg resp;

		if (ask(ops, s, down, MON_DATAPLANE, &req, WIRE_CTL_VIP_LIST_RESPONSE, &resp) < 0)
			goto fail;
		rc = wire_ctl_vip_list_append(&s->vips, &resp.vip_list);
		req.vip_list_request.cursor = resp.vip_list.next_cursor;
		wire_ctl_msg_free(&resp);
		if (rc < 0) {
			add_error(s, "VIP list: out of memory");
			goto fail;
		}
	} while (req.vip_list_request.cursor != 0);
	rc = index_backends(s);
	if (rc < 0) {
		/* A reload between two pages mixes two configs: next time. */
		add_error(s, "VIP list: %s", rc == -ENOMEM ? "out of memory" :
			  "changed while it was read");
		goto fail;
	}
	s->has_vips = true;
	return;
fail:
	wire_ctl_vip_list_free(&s->vips);
	free(s->vip_first);
	s->vip_first = NULL;
}

/* Every page of HEALTH_STATUS: the targets, the last page's node-wide. */
static void
collect_health(const struct mon_source_ops *ops, struct mon_snapshot *s, bool *down)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_HEALTH_STATUS_REQUEST };

	do {
		struct wire_ctl_msg resp;
		const struct wire_ctl_health_status *h = &resp.health_status;
		struct wire_ctl_health_target *grown;

		if (ask(ops, s, down, MON_SYNCD, &req, WIRE_CTL_HEALTH_STATUS, &resp) < 0)
			goto fail;
		grown = realloc(s->targets, (s->n_targets + h->n_targets + 1) * sizeof(*grown));
		if (grown == NULL) {
			wire_ctl_msg_free(&resp);
			add_error(s, "health: out of memory");
			goto fail;
		}
		s->targets = grown;
		memcpy(s->targets + s->n_targets, h->targets, h->n_targets * sizeof(*grown));
		s->n_targets += h->n_targets;
		s->probes = h->probes;
		s->probe_failures = h->failures;
		s->probe_duration = h->probe_duration;
		req.health_status_request.cursor = h->next_cursor;
		wire_ctl_msg_free(&resp);
	} while (req.health_status_request.cursor != 0);
	s->has_health = true;
	return;
fail:
	free(s->targets);
	s->targets = NULL;
	s->n_targets = 0;
}

static bool
same_target(const struct wire_ctl_backend *b, const struct wire_ctl_health_target *t)
{
	return b->family == t->family && memcmp(b->address, t->backend, WIRE_ADDR_MAX) == 0 &&
	       strcmp(b->vip, t->vip) == 0;
}

/*
 * Each backend's probe target. Both lists follow the config's order, so a
 * walk finds them; a backend out of step (a VIP without health checks,
 * configs changing between the two answers) is looked up from the start.
 */
static void
index_health(struct mon_snapshot *s)
{
	size_t next = 0;

	if (!s->has_vips || !s->has_health)
		return;
	s->health_of = malloc((s->vips.n_backends + 1) * sizeof(*s->health_of));
	if (s->health_of == NULL) {
		add_error(s, "health: out of memory");
		return;
	}
	for (size_t b = 0; b < s->vips.n_backends; b++) {
		const struct wire_ctl_backend *be = &s->vips.backends[b];

		s->health_of[b] = -1;
		if (next < s->n_targets && same_target(be, &s->targets[next])) {
			s->health_of[b] = (int32_t)next++;
			continue;
		}
		for (size_t t = 0; t < s->n_targets; t++)
			if (same_target(be, &s->targets[t])) {
				s->health_of[b] = (int32_t)t;
				next = t + 1;
				break;
			}
	}
}

/* A request without a body; true when its answer is in *resp. */
static bool
collect_one(const struct mon_source_ops *ops, struct mon_snapshot *s, bool *down,
	    enum mon_service svc, enum wire_ctl_kind kind, enum wire_ctl_kind want,
	    struct wire_ctl_msg *resp)
{
	struct wire_ctl_msg req = { .kind = kind };

	return ask(ops, s, down, svc, &req, want, resp) == 0;
}

struct mon_snapshot *
mon_snapshot_collect(const struct mon_source_ops *ops, uint64_t now_ms)
{
	struct mon_snapshot *s = calloc(1, sizeof(*s));
	bool down[MON_SERVICE_MAX] = { false };
	uint64_t t0 = monotonic_us();
	struct wire_ctl_msg resp;

	if (s == NULL)
		return NULL;
	atomic_init(&s->refs, 1);
	s->time_ms = now_ms;
	if (collect_one(ops, s, down, MON_DATAPLANE, WIRE_CTL_STATUS_REQUEST,
			WIRE_CTL_STATUS_RESPONSE, &resp)) {
		s->status = resp.status;
		s->has_status = true;
	}
	collect_counters(ops, s, down);
	collect_vips(ops, s, down);
	s->has_bfd = collect_one(ops, s, down, MON_DATAPLANE, WIRE_CTL_BFD_STATUS_REQUEST,
				 WIRE_CTL_BFD_STATUS, &s->bfd);
	s->has_cluster = collect_one(ops, s, down, MON_SYNCD, WIRE_CTL_CLUSTER_REQUEST,
				     WIRE_CTL_CLUSTER_STATUS, &s->cluster);
	s->has_sync = collect_one(ops, s, down, MON_SYNCD, WIRE_CTL_SYNC_STATUS_REQUEST,
				  WIRE_CTL_SYNC_STATUS, &s->sync);
	collect_health(ops, s, down);
	index_health(s);
	s->collect_us = monotonic_us() - t0;
	return s;
}

struct mon_snapshot *
mon_snapshot_get(struct mon_snapshot *s)
{
	if (s != NULL)
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

void
mon_snapshot_put(struct mon_snapshot *s)
{
	if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(s->counters.counters);
	wire_ctl_vip_list_free(&s->vips);
	free(s->vip_first);
	free(s->targets);
	free(s->health_of);
	if (s->has_bfd)
		wire_ctl_msg_free(&s->bfd);
	if (s->has_cluster)
		wire_ctl_msg_free(&s->cluster);
	if (s->has_sync)
		wire_ctl_msg_free(&s->sync);
	free(s);
}

const char *
mon_addr_str(uint8_t family, const uint8_t *addr, char *buf, size_t len)
{
	if (inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, addr, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

const struct wire_ctl_health_target *
mon_backend_health(const struct mon_snapshot *s, size_t backend)
{
	if (s->health_of == NULL || backend >= s->vips.n_backends || s->health_of[backend] < 0)
		return NULL;
	return &s->targets[s->health_of[backend]];
}

uint64_t
mon_counter(const struct mon_snapshot *s, const char *scope, const char *name, uint64_t def)
{
	for (size_t i = 0; i < s->counters.count; i++) {
		const struct wire_ctl_counter *c = &s->counters.counters[i];

		if (strcmp(c->scope, scope) == 0 && strcmp(c->name, name) == 0)
			return c->value;
	}
	return def;
}
