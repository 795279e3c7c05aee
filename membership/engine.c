/* SPDX-License-Identifier: BSD-3-Clause */
/* The membership engine: roles, VIP ownership, liveness, health. See engine.h. */
#include "membership/engine.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

const char *const membership_counter_names[CLUSTER_COUNTER_MAX] = {
#define CLUSTER_NAME_(id, name, text) [CLUSTER_##id] = #name,
	CLUSTER_COUNTERS(CLUSTER_NAME_)
#undef CLUSTER_NAME_
};

const char *const membership_counter_descriptions[CLUSTER_COUNTER_MAX] = {
#define CLUSTER_TEXT_(id, name, text) [CLUSTER_##id] = text,
	CLUSTER_COUNTERS(CLUSTER_TEXT_)
#undef CLUSTER_TEXT_
};

const char *const membership_ownership_names[MEMBERSHIP_OWN_MAX] = {
	[MEMBERSHIP_OWN_RELEASED] = "released",
	[MEMBERSHIP_OWN_RELEASING] = "releasing",
	[MEMBERSHIP_OWN_WAITING] = "waiting",
	[MEMBERSHIP_OWN_REQUESTED] = "requested",
	[MEMBERSHIP_OWN_OWNED] = "owned",
	[MEMBERSHIP_OWN_RENEWING] = "renewing",
	[MEMBERSHIP_OWN_LAPSED] = "lapsed",
};

const char *const membership_liveness_names[MEMBERSHIP_DP_MAX] = {
	[MEMBERSHIP_DP_DOWN] = "down",
	[MEMBERSHIP_DP_PROBING] = "probing",
	[MEMBERSHIP_DP_PROBE_SENT] = "probe-sent",
	[MEMBERSHIP_DP_ALIVE] = "alive",
	[MEMBERSHIP_DP_PING_SENT] = "ping-sent",
	[MEMBERSHIP_DP_DEAD] = "dead",
};

/* The transitions each machine may make; the rest are refused. */
static const bool own_allowed[MEMBERSHIP_OWN_MAX][MEMBERSHIP_OWN_MAX] = {
	[MEMBERSHIP_OWN_RELEASED] = {
		[MEMBERSHIP_OWN_RELEASING] = true, [MEMBERSHIP_OWN_WAITING] = true,
	},
	[MEMBERSHIP_OWN_RELEASING] = {
		[MEMBERSHIP_OWN_RELEASED] = true, [MEMBERSHIP_OWN_WAITING] = true,
	},
	[MEMBERSHIP_OWN_WAITING] = {
		[MEMBERSHIP_OWN_REQUESTED] = true, [MEMBERSHIP_OWN_RELEASING] = true,
		[MEMBERSHIP_OWN_RELEASED] = true,
	},
	[MEMBERSHIP_OWN_REQUESTED] = {
		[MEMBERSHIP_OWN_OWNED] = true, [MEMBERSHIP_OWN_WAITING] = true,
		[MEMBERSHIP_OWN_RELEASING] = true, [MEMBERSHIP_OWN_RELEASED] = true,
	},
	[MEMBERSHIP_OWN_OWNED] = {
		[MEMBERSHIP_OWN_RENEWING] = true, [MEMBERSHIP_OWN_WAITING] = true,
		[MEMBERSHIP_OWN_RELEASING] = true, [MEMBERSHIP_OWN_RELEASED] = true,
	},
	[MEMBERSHIP_OWN_RENEWING] = {
		[MEMBERSHIP_OWN_OWNED] = true, [MEMBERSHIP_OWN_LAPSED] = true,
		[MEMBERSHIP_OWN_RELEASING] = true, [MEMBERSHIP_OWN_RELEASED] = true,
	},
	[MEMBERSHIP_OWN_LAPSED] = {
		[MEMBERSHIP_OWN_WAITING] = true, [MEMBERSHIP_OWN_RELEASING] = true,
		[MEMBERSHIP_OWN_RELEASED] = true,
	},
};

static const bool live_allowed[MEMBERSHIP_DP_MAX][MEMBERSHIP_DP_MAX] = {
	[MEMBERSHIP_DP_DOWN] = { [MEMBERSHIP_DP_PROBING] = true },
	[MEMBERSHIP_DP_PROBING] = {
		[MEMBERSHIP_DP_PROBE_SENT] = true, [MEMBERSHIP_DP_DOWN] = true,
	},
	[MEMBERSHIP_DP_PROBE_SENT] = {
		[MEMBERSHIP_DP_ALIVE] = true, [MEMBERSHIP_DP_PROBING] = true,
		[MEMBERSHIP_DP_DOWN] = true,
	},
	[MEMBERSHIP_DP_ALIVE] = {
		[MEMBERSHIP_DP_PING_SENT] = true, [MEMBERSHIP_DP_DOWN] = true,
	},
	[MEMBERSHIP_DP_PING_SENT] = {
		[MEMBERSHIP_DP_ALIVE] = true, [MEMBERSHIP_DP_DEAD] = true,
		[MEMBERSHIP_DP_DOWN] = true,
	},
	[MEMBERSHIP_DP_DEAD] = {
		[MEMBERSHIP_DP_ALIVE] = true, [MEMBERSHIP_DP_PROBING] = true,
		[MEMBERSHIP_DP_DOWN] = true,
	},
};

/* A probed backend: which VIP and backend of the config. */
struct target {
	uint32_t vip, backend;
};

/* A backend of the config by its key: where it is in the flat tables. */
struct backend_ref {
	struct health_key key;
	size_t flat;
};

/* What one config makes: built before a reload commits, swapped whole. */
struct tables {
	struct target *targets;         /* by probe id */
	size_t n_targets;
	struct backend_ref *keys;       /* every backend of the config, by key */
	uint32_t *base;                 /* flat index of each VIP's first backend */
	bool *applied_down;             /* by flat index: sent to the dataplane */
	size_t n_backends;
	struct wire_flow *report;       /* n_targets: a health report's room */
};

/* The node's own facts, as last announced. */
struct local {
	bool dataplane, synced, quorate, standby;
	enum roles_role holds;
};

/* A line logged at most once every ms. */
struct ratelimit {
	bool logged;
	uint32_t at;
};

/* The hooks' environment: room sized once. */
enum { LIST_MAX = 16384, VAR_MAX = LIST_MAX + 32, VARS = 8 };

struct hook_env {
	char all[LIST_MAX], v4[LIST_MAX], v6[LIST_MAX], names[LIST_MAX];
	char vars[VARS][VAR_MAX];
	const char *env[VARS + 1];
};

struct membership {
	struct membership_ops ops;
	void *arg;
	const struct config *cfg;
	uint64_t incarnation;
	char dataplane[64];
	uint64_t seq;
	struct health *health;
	struct tables t;
	struct hook_env *hook_env;

	/* the group */
	bool in_group;
	struct roles_member members[MEMBERSHIP_MEMBERS_MAX];
	enum roles_role elected[MEMBERSHIP_MEMBERS_MAX];
	size_t n_members;
	uint32_t active_id;
	bool mismatch_logged;
	struct ratelimit overflow_log;

	/* this node */
	bool quorate, standby;
	enum roles_role role;
	enum roles_role hooked;         /* the role the hooks last ran for */
	bool serving;
	struct local announced;
	bool announce_due;
	uint32_t announced_ms;
	uint32_t tick_ms;

	/* the dataplane's liveness */
	enum membership_liveness live;
	uint32_t ping_sent_ms;
	uint32_t answered_ms;           /* the ping waits since: its deadline's start */
	uint64_t maglev_digest;

	/* VIP ownership */
	enum membership_ownership own;
	uint32_t takeover_since_ms;     /* became active */
	uint32_t request_ms;            /* the request in flight (or last) was sent */
	uint32_t lease_from_ms;         /* the last acknowledged request was sent */
	uint64_t config_gen;            /* reloads and joins: the VIPs to announce again */
	bool merge_announce;            /* announce again once every member is heard */
	uint32_t device_hold_ms;        /* a quorum device's timeout; 0: none */
	bool hold_armed;                /* no takeover before hold_from_ms + that */
	uint32_t hold_from_ms;
	uint64_t request_gen, owned_gen;

	/* health */
	bool health_due;
	uint32_t health_sent_ms;
	uint64_t health_generation;
	struct ratelimit no_memory_log, too_long_log;

	uint64_t counters[CLUSTER_COUNTER_MAX];
};

static bool
elapsed(uint32_t now, uint32_t since, uint32_t ms)
{
	return (uint32_t)(now - since) >= ms;
}

static bool
ratelimit_pass(struct ratelimit *r, uint32_t now, uint32_t ms)
{
	if (r->logged && !elapsed(now, r->at, ms))
		return false;
	r->logged = true;
	r->at = now;
	return true;
}

__attribute__((format(printf, 3, 4)))
static void
say(struct membership *e, int priority, const char *fmt, ...)
{
	char line[MEMBERSHIP_LOG_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	e->ops.log(e->arg, priority, line);
}

static enum wire_cluster_mode
wire_mode(enum config_cluster_mode m)
{
	return m == CONFIG_CLUSTER_ACTIVE_ACTIVE ? WIRE_CLUSTER_MODE_ACTIVE_ACTIVE :
	       WIRE_CLUSTER_MODE_ACTIVE_PASSIVE;
}

static bool
active_passive(const struct membership *e)
{
	return e->cfg->mode == CONFIG_CLUSTER_ACTIVE_PASSIVE;
}

static struct roles_member *
member_find(struct membership *e, uint32_t id)
{
	for (size_t i = 0; i < e->n_members; i++)
		if (e->members[i].id == id)
			return &e->members[i];
	return NULL;
}

/* --------------------------------------------------------- the machines */

static void serving_update(struct membership *e);

/* The one way the ownership machine moves. 0, or -EPERM: refused. */
static int
own_move(struct membership *e, enum membership_ownership to)
{
	if (!own_allowed[e->own][to]) {
		e->counters[CLUSTER_IMPOSSIBLE_TRANSITIONS]++;
		say(e, LOG_ERR, "ownership: %s -> %s refused: not a transition of the machine "
		    "(impossible_transitions=%" PRIu64 ")", membership_ownership_names[e->own],
		    membership_ownership_names[to], e->counters[CLUSTER_IMPOSSIBLE_TRANSITIONS]);
		return -EPERM;
	}
	e->own = to;
	serving_update(e);
	return 0;
}

/* The one way the liveness machine moves. 0, or -EPERM: refused. */
static int
live_move(struct membership *e, enum membership_liveness to)
{
	if (!live_allowed[e->live][to]) {
		e->counters[CLUSTER_IMPOSSIBLE_TRANSITIONS]++;
		say(e, LOG_ERR, "dataplane liveness: %s -> %s refused: not a transition of the "
		    "machine (impossible_transitions=%" PRIu64 ")",
		    membership_liveness_names[e->live], membership_liveness_names[to],
		    e->counters[CLUSTER_IMPOSSIBLE_TRANSITIONS]);
		return -EPERM;
	}
	e->live = to;
	return 0;
}

static bool
dp_linked(const struct membership *e)
{
	return e->live != MEMBERSHIP_DP_DOWN;
}

static bool
dp_alive(const struct membership *e)
{
	return e->live == MEMBERSHIP_DP_ALIVE || e->live == MEMBERSHIP_DP_PING_SENT;
}

static bool
own_holds(const struct membership *e)
{
	return e->own == MEMBERSHIP_OWN_OWNED || e->own == MEMBERSHIP_OWN_RENEWING;
}

static void
serving_update(struct membership *e)
{
	bool on = e->role == ROLES_ACTIVE && own_holds(e);

	if (on == e->serving)
		return;
	e->serving = on;
	e->ops.serving(e->arg, on);
}

/* ------------------------------------------------------------- multicast */

static int
multicast(struct membership *e, struct wire_sync_msg *m, uint32_t now)
{
	int rc;

	m->node_id = e->cfg->node_id;
	m->seq = ++e->seq;
	rc = e->ops.multicast(e->arg, m);
	if (rc == -EAGAIN) {
		e->counters[CLUSTER_SEND_AGAIN]++;
	} else if (rc == -EMSGSIZE) {
		e->counters[CLUSTER_SEND_TOO_LONG]++;
		if (ratelimit_pass(&e->too_long_log, now, MEMBERSHIP_NO_MEMORY_LOG_MS))
			say(e, LOG_ERR, "a %s message of %zu entries is too long for the "
			    "membership group: not sent (send_too_long=%" PRIu64 ")",
			    m->kind == WIRE_SYNC_HEALTH ? "HEALTH" : "NODE_STATE", m->count,
			    e->counters[CLUSTER_SEND_TOO_LONG]);
	}
	return rc;
}

/* What this node is now. */
static struct local
local_now(const struct membership *e)
{
	return (struct local){
		.dataplane = dp_alive(e),
		.synced = e->ops.synced(e->arg),
		.quorate = e->quorate,
		.standby = e->standby,
		.holds = e->role,
	};
}

static bool
local_same(const struct local *a, const struct local *b)
{
	return a->dataplane == b->dataplane && a->synced == b->synced &&
	       a->quorate == b->quorate && a->standby == b->standby && a->holds == b->holds;
}

/* roles_eligible() of this node's own facts. */
static bool
local_eligible(const struct local *l)
{
	return l->dataplane && (l->synced || l->holds == ROLES_ACTIVE) && l->quorate &&
	       !l->standby;
}

static void
announce(struct membership *e, uint32_t now)
{
	struct local l = local_now(e);
	struct wire_sync_msg m = {
		.kind = WIRE_SYNC_NODE_STATE,
		.state = {
			.priority = e->cfg->priority,
			.dataplane = l.dataplane,
			.synced = l.synced,
			.quorate = l.quorate,
			.standby = l.standby,
			.preempt = e->cfg->preempt,
			.role = l.holds == ROLES_ACTIVE ? WIRE_ROLE_ACTIVE : WIRE_ROLE_PASSIVE,
			.mode = wire_mode(e->cfg->mode),
			.incarnation = e->incarnation,
		},
	};

	if (!e->in_group)
		return;
	if (multicast(e, &m, now) < 0)
		return;         /* announce_due stays: the tick tries again */
	e->counters[CLUSTER_ANNOUNCES_SENT]++;
	e->announced = l;
	e->announce_due = false;
	e->announced_ms = now;
}

/* ---------------------------------------------------------------- health */

/* The key of backend b of VIP v. */
static struct health_key
backend_key(const struct config *cfg, uint32_t v, uint32_t b)
{
	const struct config_vip *vip = &cfg->vips[v];
	const struct config_addr *be = &vip->backends[b].addr;
	struct health_key k;

	memset(&k, 0, sizeof(k));
	k.vip_len = vip->addr.family == AF_INET ? 4 : 16;
	k.backend_len = be->family == AF_INET ? 4 : 16;
	memcpy(k.vip, vip->addr.bytes, k.vip_len);
	memcpy(k.backend, be->bytes, k.backend_len);
	k.vip_port = vip->port;
	k.protocol = vip->proto == CONFIG_PROTO_UDP ? IPPROTO_UDP : IPPROTO_TCP;
	return k;
}

static struct wire_flow
key_to_wire(const struct health_key *k)
{
	struct wire_flow f;

	memset(&f, 0, sizeof(f));
	f.family = k->vip_len == 4 ? AF_INET : AF_INET6;
	f.backend_family = k->backend_len == 4 ? AF_INET : AF_INET6;
	memcpy(f.vip, k->vip, k->vip_len);
	memcpy(f.backend, k->backend, k->backend_len);
	f.vip_port = k->vip_port;
	f.proto = k->protocol;
	return f;
}

static int
ref_order(const void *a, const void *b)
{
	return health_key_compare(&((const struct backend_ref *)a)->key,
				  &((const struct backend_ref *)b)->key);
}

static const struct backend_ref *
backend_find(const struct tables *t, const struct health_key *k)
{
	struct backend_ref want = { .key = *k };

	return t->n_backends > 0 ?
	       bsearch(&want, t->keys, t->n_backends, sizeof(*t->keys), ref_order) : NULL;
}

/* Multicast the whole set this node's probes see down: no allocation. */
static void
report_health(struct membership *e, uint32_t now)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH };
	size_t n = 0;
	int rc;

	if (!e->in_group)
		return;
	for (size_t i = 0; i < e->t.n_targets; i++) {
		struct health_key k;

		if (e->ops.probe_up(e->arg, (uint32_t)i))
			continue;
		k = backend_key(e->cfg, e->t.targets[i].vip, e->t.targets[i].backend);
		e->t.report[n++] = key_to_wire(&k);
	}
	m.entries = e->t.report;
	m.count = n;
	m.generation = ++e->health_generation;
	rc = multicast(e, &m, now);
	if (rc == 0)
		e->counters[CLUSTER_HEALTH_SENT]++;
	if (rc == 0 || rc == -EMSGSIZE) {
		/* too long: again at the next change or period, not every tick */
		e->health_due = false;
		e->health_sent_ms = now;
	}
}

/* Bring the dataplane's backends to the agreed set: only the differences. */
static void
apply_health(struct membership *e)
{
	char buf[INET6_ADDRSTRLEN];

	if (!dp_linked(e))
		return;
	for (uint32_t v = 0; v < e->cfg->n_vips; v++) {
		const struct config_vip *vip = &e->cfg->vips[v];

		for (uint32_t b = 0; b < vip->n_backends; b++) {
			size_t flat = e->t.base[v] + b;
			struct health_key k = backend_key(e->cfg, v, b);
			bool down = health_is_down(e->health, &k);
			int rc;

			if (down == e->t.applied_down[flat])
				continue;
			rc = e->ops.backend_set(e->arg, v, b, down);
			if (rc < 0) {
				if (rc != -ENOTCONN)
					e->counters[CLUSTER_BACKEND_SET_ERRORS]++;
				return;         /* retried at the next change or reconnection */
			}
			e->t.applied_down[flat] = down;
			e->counters[CLUSTER_BACKEND_SETS]++;
			say(e, LOG_NOTICE, "backend %s of VIP %s: %s (agreed)",
			    config_addr_str(&vip->backends[b].addr, buf, sizeof(buf)),
			    vip->name, down ? "down" : "up");
		}
	}
}

void
membership_backend_done(struct membership *e, int rc, const char *why, uint32_t now)
{
	(void)now;
	if (rc == 0 || rc == -ENOTCONN)
		return;         /* gone: everything is sent again at the next link */
	e->counters[CLUSTER_BACKEND_SET_ERRORS]++;
	say(e, LOG_WARNING, "dataplane refused a backend down/up: %s",
	    why != NULL ? why : strerror(-rc));
}

void
membership_probe_changed(struct membership *e, uint32_t id, bool up, uint32_t now)
{
	char buf[INET6_ADDRSTRLEN];

	(void)now;
	if (id < e->t.n_targets) {
		const struct config_vip *vip = &e->cfg->vips[e->t.targets[id].vip];

		say(e, LOG_INFO, "probe of backend %s of VIP %s: %s (this node's view)",
		    config_addr_str(&vip->backends[e->t.targets[id].backend].addr, buf,
				    sizeof(buf)), vip->name, up ? "up" : "down");
	}
	e->health_due = true;
}

void
membership_health_flush(struct membership *e, uint32_t now)
{
	if (e->health_due)
		report_health(e, now);
}

/* The probe targets of cfg; t and map sized by the backends of cfg. */
static size_t
build_targets(const struct config *cfg, struct probe_target *t, struct target *map)
{
	size_t n = 0;

	for (uint32_t v = 0; v < cfg->n_vips; v++) {
		const struct config_vip *vip = &cfg->vips[v];

		if (vip->health.type == CONFIG_HEALTH_NONE)
			continue;
		for (uint32_t b = 0; b < vip->n_backends; b++) {
			t[n] = (struct probe_target){
				.id = (uint32_t)n,
				.addr = vip->backends[b].addr,
				.port = vip->health.port != 0 ? vip->health.port : vip->port,
				.type = vip->health.type,
				.interval_ms = vip->health.interval_ms,
				.timeout_ms = vip->health.timeout_ms,
				.rise = vip->health.rise,
				.fall = vip->health.fall,
			};
			memcpy(t[n].http_path, vip->health.http_path, sizeof(t[n].http_path));
			map[n++] = (struct target){ .vip = v, .backend = b };
		}
	}
	return n;
}

static void
tables_free(struct tables *t)
{
	free(t->targets);
	free(t->keys);
	free(t->base);
	free(t->applied_down);
	free(t->report);
	memset(t, 0, sizeof(*t));
}

/* The tables of cfg; its probe targets in *probes (the caller frees). */
static int
tables_build(const struct config *cfg, struct tables *t, struct probe_target **probes)
{
	size_t total = 0;

	memset(t, 0, sizeof(*t));
	for (uint32_t v = 0; v < cfg->n_vips; v++)
		total += cfg->vips[v].n_backends;
	t->base = calloc(cfg->n_vips ? cfg->n_vips : 1, sizeof(*t->base));
	t->targets = calloc(total ? total : 1, sizeof(*t->targets));
	t->keys = calloc(total ? total : 1, sizeof(*t->keys));
	t->applied_down = calloc(total ? total : 1, sizeof(*t->applied_down));
	t->report = calloc(total ? total : 1, sizeof(*t->report));
	*probes = calloc(total ? total : 1, sizeof(**probes));
	if (t->base == NULL || t->targets == NULL || t->keys == NULL ||
	    t->applied_down == NULL || t->report == NULL || *probes == NULL) {
		tables_free(t);
		free(*probes);
		*probes = NULL;
		return -ENOMEM;
	}
	total = 0;
	for (uint32_t v = 0; v < cfg->n_vips; v++) {
		t->base[v] = (uint32_t)total;
		for (uint32_t b = 0; b < cfg->vips[v].n_backends; b++, total++)
			t->keys[total] = (struct backend_ref){
				.key = backend_key(cfg, v, b), .flat = total,
			};
	}
	qsort(t->keys, total, sizeof(*t->keys), ref_order);
	t->n_backends = total;
	t->n_targets = build_targets(cfg, *probes, t->targets);
	return 0;
}

/* ----------------------------------------------------------------- hooks */

/* Append word to the space-separated list at out (cap bytes). */
static void
list_add(char *out, size_t cap, const char *word)
{
	size_t len = strlen(out);

	snprintf(out + len, cap - len, "%s%s", len > 0 ? " " : "", word);
}

/* The VIP lists of the hooks' environment. */
static void
hook_lists(const struct config *cfg, struct hook_env *h)
{
	h->all[0] = h->v4[0] = h->v6[0] = h->names[0] = '\0';
	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct config_vip *vip = &cfg->vips[i];
		char buf[INET6_ADDRSTRLEN];
		bool seen = false;

		/* an address once, even when several VIPs (ports) share it */
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = memcmp(&cfg->vips[j].addr, &vip->addr, sizeof(vip->addr)) == 0;
		list_add(h->names, LIST_MAX, vip->name);
		if (seen)
			continue;
		config_addr_str(&vip->addr, buf, sizeof(buf));
		list_add(h->all, LIST_MAX, buf);
		list_add(vip->addr.family == AF_INET ? h->v4 : h->v6, LIST_MAX, buf);
	}
}

/* Run the hooks for role, with the VIPs in the environment (hooks.h). */
static void
run_hooks(struct membership *e, enum roles_role role)
{
	struct hook_env *h = e->hook_env;
	int rc;

	if (role == e->hooked)
		return;
	hook_lists(e->cfg, h);
	snprintf(h->vars[0], VAR_MAX, "MAGLB_ROLE=%s", roles_role_names[role]);
	snprintf(h->vars[1], VAR_MAX, "MAGLB_PREVIOUS_ROLE=%s",
		 roles_role_names[e->hooked == ROLES_NONE ? ROLES_PASSIVE : e->hooked]);
	snprintf(h->vars[2], VAR_MAX, "MAGLB_NODE_ID=%" PRIu32, e->cfg->node_id);
	snprintf(h->vars[3], VAR_MAX, "MAGLB_MODE=%s", config_cluster_mode_names[e->cfg->mode]);
	snprintf(h->vars[4], VAR_MAX, "MAGLB_VIPS=%s", h->all);
	snprintf(h->vars[5], VAR_MAX, "MAGLB_VIPS4=%s", h->v4);
	snprintf(h->vars[6], VAR_MAX, "MAGLB_VIPS6=%s", h->v6);
	snprintf(h->vars[7], VAR_MAX, "MAGLB_VIP_NAMES=%s", h->names);
	for (size_t i = 0; i < VARS; i++)
		h->env[i] = h->vars[i];
	h->env[VARS] = NULL;
	rc = e->ops.run_hooks(e->arg, role, h->env);
	if (rc == -ENODEV)
		return;         /* no runner: the next change asks again */
	e->hooked = role;
	e->counters[CLUSTER_HOOK_RUNS]++;
	if (rc < 0)
		say(e, LOG_ERR, "cannot run the hooks for role %s", roles_role_names[role]);
}

/* ------------------------------------------------------------- ownership */

/* Ask the dataplane to own the VIPs (a takeover or a renewal). 0 or -errno. */
static int
own_request(struct membership *e, bool announce, uint32_t now)
{
	int rc;

	if (!dp_linked(e))
		return -ENOTCONN;
	rc = e->ops.ownership_set(e->arg, true, announce, e->cfg->lease_ms);
	if (rc < 0) {
		/* -ENOTCONN: the link went, its down event is on its way */
		if (rc != -ENOTCONN)
			e->counters[CLUSTER_OWNERSHIP_ERRORS]++;
		return rc;
	}
	e->request_ms = now;
	e->request_gen = e->config_gen;
	return 0;
}

/*
 * Passive (or a fresh dataplane): give up the VIPs, whatever an earlier
 * request or run left owned. From an idle state only.
 */
static void
own_release(struct membership *e)
{
	int rc = -ENOTCONN;

	if (dp_linked(e)) {
		rc = e->ops.ownership_set(e->arg, false, false, 0);
		if (rc < 0 && rc != -ENOTCONN)
			e->counters[CLUSTER_OWNERSHIP_ERRORS]++;
	}
	if (rc == 0)
		own_move(e, MEMBERSHIP_OWN_RELEASING);
	else if (e->own != MEMBERSHIP_OWN_RELEASED)
		own_move(e, MEMBERSHIP_OWN_RELEASED);
}

/*
 * Own the VIPs once every entry held is imported (or TAKEOVER_WAIT_MS
 * passed): the flows the old active node made must find their entries.
 */
static void
try_takeover(struct membership *e, uint32_t now)
{
	uint64_t queued;

	if (e->own != MEMBERSHIP_OWN_WAITING || !dp_alive(e))
		return;
	queued = e->ops.import_queue(e->arg);
	if (queued > 0 && !elapsed(now, e->takeover_since_ms, MEMBERSHIP_TAKEOVER_WAIT_MS))
		return;
	/* not sent (IPC window full, no memory): the next tick tries;
	 * announced: the VIPs (active-passive; active-active owns none) */
	if (own_request(e, active_passive(e), now) < 0)
		return;
	if (queued > 0) {
		e->counters[CLUSTER_TAKEOVER_UNSYNCED]++;
		say(e, LOG_WARNING, "taking over with %" PRIu64 " entries not yet imported "
		    "(waited %u ms)", queued, (unsigned)MEMBERSHIP_TAKEOVER_WAIT_MS);
	}
	own_move(e, MEMBERSHIP_OWN_REQUESTED);
}

static void
own_renew(struct membership *e, uint32_t now)
{
	e->counters[CLUSTER_RENEWALS]++;
	/* a reload since the VIPs were owned: announce the new set */
	if (own_request(e, active_passive(e) && e->owned_gen != e->config_gen, now) == 0)
		own_move(e, MEMBERSHIP_OWN_RENEWING);
}

/* The lease ran out with no renewal acknowledged: take the VIPs again. */
static void
own_lapse_check(struct membership *e, uint32_t now)
{
	if (!own_holds(e) || !elapsed(now, e->lease_from_ms, e->cfg->lease_ms))
		return;
	e->counters[CLUSTER_LEASE_LAPSES]++;
	say(e, LOG_WARNING, "VIP lease lapsed: no renewal acknowledged for %u ms: taking "
	    "the VIPs again (lease_lapses=%" PRIu64 ")", e->cfg->lease_ms,
	    e->counters[CLUSTER_LEASE_LAPSES]);
	own_move(e, e->own == MEMBERSHIP_OWN_OWNED ? MEMBERSHIP_OWN_WAITING :
		 MEMBERSHIP_OWN_LAPSED);
}

/* Every member heard since it joined: the election is over the whole view. */
static bool
all_known(const struct membership *e)
{
	for (size_t i = 0; i < e->n_members; i++)
		if (!e->members[i].known)
			return false;
	return true;
}

static void
own_tick(struct membership *e, uint32_t now)
{
	/* after a merge: the owner the whole view elected announces again (a
	 * node about to lose the role must not: it learns so by then) */
	if (e->merge_announce && all_known(e)) {
		e->merge_announce = false;
		if (e->role == ROLES_ACTIVE)
			e->config_gen++;        /* the next renewal announces */
	}
	own_lapse_check(e, now);
	try_takeover(e, now);
	if (e->own == MEMBERSHIP_OWN_OWNED &&
	    (elapsed(now, e->request_ms, e->cfg->lease_ms / 4) ||
	     e->owned_gen != e->config_gen))
		own_renew(e, now);
}

/* The VIPs acknowledged as owned (active-passive: the hooks announce the
 * role), or serving acknowledged (active-active: they did at the change). */
static void
own_taken(struct membership *e)
{
	e->lease_from_ms = e->request_ms;
	e->owned_gen = e->request_gen;
	if (own_move(e, MEMBERSHIP_OWN_OWNED) < 0)
		return;
	e->counters[CLUSTER_TAKEOVERS]++;
	if (!active_passive(e)) {
		say(e, LOG_NOTICE, "serving (lease %u ms): BFD sessions may come up",
		    e->cfg->lease_ms);
		return;
	}
	say(e, LOG_NOTICE, "owning the VIPs (lease %u ms), announced by gratuitous ARP / "
	    "unsolicited NA", e->cfg->lease_ms);
	run_hooks(e, ROLES_ACTIVE);
}

/*
 * A renewal answered, still active (refused: the lease runs from the last
 * acknowledged one). The role may have been lost and regained meanwhile,
 * the hooks run passive: they announce active again.
 */
static void
own_renewed(struct membership *e, bool ok)
{
	if (ok) {
		e->lease_from_ms = e->request_ms;
		e->owned_gen = e->request_gen;
	}
	if (own_move(e, MEMBERSHIP_OWN_OWNED) == 0 && active_passive(e))
		run_hooks(e, ROLES_ACTIVE);
}

void
membership_ownership_done(struct membership *e, int rc, const char *why, uint32_t now)
{
	bool want = e->role == ROLES_ACTIVE;
	enum membership_ownership was = e->own;

	if (rc != 0 && was != MEMBERSHIP_OWN_RELEASED && was != MEMBERSHIP_OWN_WAITING &&
	    was != MEMBERSHIP_OWN_OWNED) {
		if (rc != -ENOTCONN)
			e->counters[CLUSTER_OWNERSHIP_ERRORS]++;
		say(e, LOG_WARNING, "dataplane %s: VIP ownership request failed: %s",
		    e->dataplane, why != NULL ? why : strerror(-rc));
	}
	switch (was) {
	case MEMBERSHIP_OWN_RELEASING:
		own_move(e, want ? MEMBERSHIP_OWN_WAITING : MEMBERSHIP_OWN_RELEASED);
		try_takeover(e, now);
		break;
	case MEMBERSHIP_OWN_REQUESTED:
	case MEMBERSHIP_OWN_RENEWING:
		if (!want) {
			own_release(e);
		} else if (was == MEMBERSHIP_OWN_REQUESTED) {
			if (rc == 0)
				own_taken(e);
			else    /* the tick asks again */
				own_move(e, MEMBERSHIP_OWN_WAITING);
		} else {
			own_renewed(e, rc == 0);
		}
		break;
	case MEMBERSHIP_OWN_LAPSED:
		if (want)
			own_move(e, MEMBERSHIP_OWN_WAITING);
		else
			own_release(e);
		break;
	default:
		own_move(e, was);       /* nothing in flight: refused, counted */
		break;
	}
}

/* ------------------------------------------------------------------ role */

/*
 * Take the VIPs (active-passive) or start serving (active-active), after
 * the imports, with the lease; or give them up. Active-active hooks run
 * at once: the routes are announced with the role, and the dataplane's
 * BFD sessions come up once serving is acknowledged.
 */
static void
role_ownership(struct membership *e, enum roles_role role, uint32_t now)
{
	if (!active_passive(e))
		run_hooks(e, role);
	if (role == ROLES_ACTIVE) {
		e->takeover_since_ms = now;
		/* in flight (a release, or a request of an earlier term): its
		 * completion sees the role */
		if (e->own == MEMBERSHIP_OWN_RELEASED)
			own_move(e, MEMBERSHIP_OWN_WAITING);
		try_takeover(e, now);
		return;
	}
	if (own_holds(e))
		e->counters[CLUSTER_RELEASES]++;
	if (e->own == MEMBERSHIP_OWN_RELEASED || e->own == MEMBERSHIP_OWN_WAITING ||
	    e->own == MEMBERSHIP_OWN_OWNED)
		own_release(e);
	if (active_passive(e))
		run_hooks(e, ROLES_PASSIVE);
}

static void
set_role(struct membership *e, enum roles_role role, uint32_t now)
{
	enum roles_role from = e->role;

	if (role == from)
		return;
	say(e, LOG_NOTICE, "role: %s -> %s (%s%s)", roles_role_names[from],
	    roles_role_names[role], config_cluster_mode_names[e->cfg->mode],
	    e->active_id != 0 ? "" : ", no eligible node");
	if (from != ROLES_NONE)
		e->counters[CLUSTER_ROLE_CHANGES]++;
	e->role = role;
	e->announce_due = true;
	if (e->ops.role_changed != NULL)
		e->ops.role_changed(e->arg, from, role);
	role_ownership(e, role, now);
	serving_update(e);
}

/* Recompute the agreed down set over the voters; apply a change. */
static void
agree_health(struct membership *e)
{
	uint32_t voters[MEMBERSHIP_MEMBERS_MAX];
	size_t nv = 0;

	/* voters: the eligible members; when none is, every member heard */
	for (size_t i = 0; i < e->n_members; i++)
		if (roles_eligible(&e->members[i]))
			voters[nv++] = e->members[i].id;
	if (nv == 0)
		for (size_t i = 0; i < e->n_members; i++)
			if (e->members[i].known)
				voters[nv++] = e->members[i].id;
	if (health_agree(e->health, voters, nv) > 0) {
		e->counters[CLUSTER_HEALTH_CHANGES]++;
		apply_health(e);
	}
}

/*
 * With a quorum device, votequorum may count the device's vote of the
 * previous ring for up to its timeout after a member left (the side of a
 * split the device will deny looks quorate until then), and quorum may
 * come back before the view that brings the peers: no takeover within the
 * device's timeout of either.
 */
static bool
device_hold(struct membership *e, uint32_t now)
{
	if (!e->hold_armed)
		return false;
	if (e->device_hold_ms == 0 || elapsed(now, e->hold_from_ms, e->device_hold_ms)) {
		e->hold_armed = false;
		return false;
	}
	return true;
}

static void
evaluate(struct membership *e, uint32_t now)
{
	enum roles_role want = ROLES_PASSIVE;
	struct local l = local_now(e);

	e->active_id = roles_elect(e->cfg->mode, e->cfg->preempt, e->members, e->n_members,
				   e->elected);
	for (size_t i = 0; i < e->n_members; i++)
		if (e->members[i].id == e->cfg->node_id && e->in_group)
			want = e->elected[i];
	/* what this node knows of itself now can only take its role away */
	if (!local_eligible(&l))
		want = ROLES_PASSIVE;
	if (want == ROLES_ACTIVE && e->role != ROLES_ACTIVE && device_hold(e, now))
		want = e->role;         /* the tick elects again once it ends */
	if (want != e->role) {
		set_role(e, want, now);
		/* at once: until the others hear it holds the role, a peer that
		 * becomes eligible meanwhile could be elected in its place */
		announce(e, now);
	}
	agree_health(e);
}

/* A fact of this node changed: elect, and tell the others. */
static void
local_changed(struct membership *e, uint32_t now)
{
	struct local l;

	evaluate(e, now);       /* announces a role change itself */
	l = local_now(e);
	if (!local_same(&l, &e->announced)) {
		e->announce_due = true;
		announce(e, now);
	}
}

/* --------------------------------------------------------------- the group */

void
membership_on_state(struct membership *e, uint32_t sender,
		    const struct wire_node_state *st, uint32_t now)
{
	struct roles_member *m = member_find(e, sender);

	if (m == NULL)
		return;         /* the intake checks membership: left out (overflow) */
	if (st->mode != wire_mode(e->cfg->mode) || st->preempt != e->cfg->preempt) {
		e->counters[CLUSTER_CONFIG_MISMATCH]++;
		if (!e->mismatch_logged)
			say(e, LOG_ERR, "node %u runs cluster mode %s, preempt %s; this node %s, "
			    "%s: the cluster.mode and cluster.preempt of every node must "
			    "be the same", sender, wire_cluster_mode_names[st->mode],
			    st->preempt ? "on" : "off", config_cluster_mode_names[e->cfg->mode],
			    e->cfg->preempt ? "on" : "off");
		e->mismatch_logged = true;
	}
	m->known = true;
	m->priority = st->priority;
	m->dataplane = st->dataplane;
	m->synced = st->synced;
	m->quorate = st->quorate;
	m->standby = st->standby;
	m->holds = st->role == WIRE_ROLE_ACTIVE ? ROLES_ACTIVE : ROLES_PASSIVE;
	evaluate(e, now);
}

int
membership_on_health(struct membership *e, uint32_t sender, const struct health_key *down,
		     size_t n, uint32_t now)
{
	int rc;

	/* kept all the same: a node's vote is its whole report */
	for (size_t i = 0; i < n; i++)
		if (backend_find(&e->t, &down[i]) == NULL)
			e->counters[CLUSTER_HEALTH_UNKNOWN]++;
	rc = health_report(e->health, sender, down, n);
	if (rc < 0) {
		if (ratelimit_pass(&e->no_memory_log, now, MEMBERSHIP_NO_MEMORY_LOG_MS))
			say(e, LOG_ERR, "out of memory for node %u's health report "
			    "(health_no_memory=%" PRIu64 ")", sender,
			    e->counters[CLUSTER_HEALTH_NO_MEMORY] + 1);
		return rc;
	}
	evaluate(e, now);
	return 0;
}

/*
 * The lowest MEMBERSHIP_MEMBERS_MAX of ids[0..n) into kept, ascending (as
 * cpg_view.h keeps them: every node keeps the same). Returns how many.
 */
static size_t
view_cap(const uint32_t *ids, size_t n, uint32_t *kept)
{
	size_t nk = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (nk == MEMBERSHIP_MEMBERS_MAX && ids[i] >= kept[nk - 1])
			continue;
		if (nk < MEMBERSHIP_MEMBERS_MAX)
			nk++;
		for (j = nk - 1; j > 0 && kept[j - 1] > ids[i]; j--)
			kept[j] = kept[j - 1];
		kept[j] = ids[i];
	}
	return nk;
}

/* The members of ids[0..n) carried over, the others new; returns whether
 * one is, and sets *left when a member is not in ids. */
static bool
view_take(struct membership *e, const uint32_t *ids, size_t n, bool *left)
{
	struct roles_member next[MEMBERSHIP_MEMBERS_MAX];
	bool joined = false;

	for (size_t i = 0; i < n; i++) {
		struct roles_member *old = member_find(e, ids[i]);

		if (old != NULL) {
			next[i] = *old;
		} else {
			next[i] = (struct roles_member){ .id = ids[i] };
			joined = true;
		}
	}
	for (size_t i = 0; i < e->n_members; i++) {
		bool stays = false;

		for (size_t j = 0; j < n; j++)
			stays |= ids[j] == e->members[i].id;
		if (!stays) {
			say(e, LOG_INFO, "node %u left the cluster", e->members[i].id);
			health_forget(e->health, e->members[i].id);
			*left = true;
		}
	}
	memcpy(e->members, next, n * sizeof(next[0]));
	e->n_members = n;
	return joined;
}

void
membership_on_members(struct membership *e, const uint32_t *ids, size_t n, bool self_in,
		      bool merged, uint32_t now)
{
	uint32_t kept[MEMBERSHIP_MEMBERS_MAX];
	size_t nk = view_cap(ids, n, kept);
	bool joined, left = false, listed = false;

	if (nk < n) {
		e->counters[CLUSTER_VIEW_OVERFLOW] += n - nk;
		if (ratelimit_pass(&e->overflow_log, now, MEMBERSHIP_NO_MEMORY_LOG_MS))
			say(e, LOG_WARNING, "membership view of %zu nodes: the %zu of highest "
			    "id left out (at most %u)", n, n - nk,
			    (unsigned)MEMBERSHIP_MEMBERS_MAX);
	}
	for (size_t i = 0; i < nk; i++)
		listed |= kept[i] == e->cfg->node_id;
	/* left out of its own view: no role, no vote, nothing to say */
	self_in = self_in && listed;
	joined = view_take(e, kept, nk, &left);
	if (left) {             /* a split, maybe: see device_hold() */
		e->hold_armed = true;
		e->hold_from_ms = now;
	}
	if (self_in != e->in_group)
		say(e, LOG_INFO, "membership group: %s", self_in ? "joined" : "lost");
	e->in_group = self_in;
	/* newcomers learn every member's state and health from the next messages */
	if (joined && self_in) {
		e->announce_due = true;
		e->health_due = true;
		announce(e, now);
		report_health(e, now);
	}
	/* a healed partition: the other half may have announced the VIPs
	 * itself meanwhile; the routers must hear the owner again, once the
	 * election over every member's state says who it is (own_tick) */
	if (merged && self_in)
		e->merge_announce = true;
	evaluate(e, now);
}

const struct roles_member *
membership_members(const struct membership *e, size_t *n)
{
	*n = e->n_members;
	return e->members;
}

uint64_t *
membership_counters_mut(struct membership *e)
{
	return e->counters;
}

const uint64_t *
membership_counters(const struct membership *e)
{
	return e->counters;
}

/* -------------------------------------------------------------- this node */

void
membership_quorum(struct membership *e, bool quorate, uint32_t now)
{
	if (quorate == e->quorate)
		return;
	e->quorate = quorate;
	if (quorate) {          /* before the view that brings the peers, maybe */
		e->hold_armed = true;
		e->hold_from_ms = now;
	}
	local_changed(e, now);
}

void
membership_standby(struct membership *e, bool on, uint32_t now)
{
	if (on == e->standby)
		return;
	e->standby = on;
	say(e, LOG_NOTICE, "standby %s (maglbctl)", on ? "on: withdrawing" : "off");
	local_changed(e, now);
}

static void
ping_send(struct membership *e, uint32_t now)
{
	if (e->ops.ping(e->arg) < 0)
		return;         /* the next tick tries again */
	e->ping_sent_ms = e->answered_ms = now;
	live_move(e, e->live == MEMBERSHIP_DP_PROBING ? MEMBERSHIP_DP_PROBE_SENT :
		  MEMBERSHIP_DP_PING_SENT);
}

void
membership_dataplane_answered(struct membership *e, uint32_t now)
{
	if (e->live == MEMBERSHIP_DP_PING_SENT)
		e->answered_ms = now;
}

void
membership_pong(struct membership *e, bool ok, uint64_t maglev_digest, uint32_t now)
{
	enum membership_liveness was = e->live;

	switch (was) {
	case MEMBERSHIP_DP_PING_SENT:
		live_move(e, MEMBERSHIP_DP_ALIVE);
		break;
	case MEMBERSHIP_DP_PROBE_SENT:
	case MEMBERSHIP_DP_DEAD:
		live_move(e, ok ? MEMBERSHIP_DP_ALIVE : MEMBERSHIP_DP_PROBING);
		break;
	default:
		live_move(e, was);      /* no ping in flight: refused, counted */
		return;
	}
	if (!ok)
		return;
	e->maglev_digest = maglev_digest;
	if (was != MEMBERSHIP_DP_PING_SENT) {
		say(e, LOG_INFO, "dataplane %s answers", e->dataplane);
		local_changed(e, now);
	}
}

/*
 * A ping every PING_MS; one unanswered for PING_DEAD_MS makes the
 * dataplane DEAD. Not judged on a tick after syncd itself was held up
 * (stalled): its answer may be waiting, unread, behind this tick.
 */
static void
live_tick(struct membership *e, uint32_t now, bool stalled)
{
	if (e->live == MEMBERSHIP_DP_PING_SENT) {
		if (stalled || !elapsed(now, e->answered_ms, MEMBERSHIP_PING_DEAD_MS))
			return;
		e->counters[CLUSTER_DP_TIMEOUTS]++;
		live_move(e, MEMBERSHIP_DP_DEAD);
		say(e, LOG_WARNING, "dataplane %s: no answer for %u ms: withdrawing",
		    e->dataplane, (unsigned)MEMBERSHIP_PING_DEAD_MS);
		local_changed(e, now);
		return;
	}
	if ((e->live == MEMBERSHIP_DP_PROBING || e->live == MEMBERSHIP_DP_ALIVE) &&
	    elapsed(now, e->ping_sent_ms, MEMBERSHIP_PING_MS))
		ping_send(e, now);
}

void
membership_dataplane_up(struct membership *e, uint32_t now)
{
	/* a new dataplane has every backend up and owns nothing */
	memset(e->t.applied_down, 0, e->t.n_backends * sizeof(*e->t.applied_down));
	if (live_move(e, MEMBERSHIP_DP_PROBING) < 0)
		return;
	ping_send(e, now);
	if (e->own != MEMBERSHIP_OWN_RELEASED)
		own_move(e, MEMBERSHIP_OWN_RELEASED);
	if (e->role == ROLES_ACTIVE) {
		e->takeover_since_ms = now;
		own_move(e, MEMBERSHIP_OWN_WAITING);
	} else {
		own_release(e);         /* a lease of an earlier syncd */
	}
	apply_health(e);
}

void
membership_dataplane_down(struct membership *e, uint32_t now)
{
	bool was_alive = dp_alive(e);

	if (e->live != MEMBERSHIP_DP_DOWN)
		live_move(e, MEMBERSHIP_DP_DOWN);
	/* its requests failed already (-ENOTCONN comes first); it owns nothing */
	if (e->own != MEMBERSHIP_OWN_RELEASED)
		own_move(e, MEMBERSHIP_OWN_RELEASED);
	if (was_alive) {
		say(e, LOG_WARNING, "dataplane %s: connection lost: withdrawing", e->dataplane);
		local_changed(e, now);
	}
}

void
membership_tick(struct membership *e, uint32_t now)
{
	bool stalled = elapsed(now, e->tick_ms, MEMBERSHIP_STALL_MS);
	struct local l;

	e->tick_ms = now;
	live_tick(e, now, stalled);
	l = local_now(e);
	if (e->hold_armed && !device_hold(e, now))
		evaluate(e, now);       /* a takeover held back may go now */
	if (!local_same(&l, &e->announced)) {
		evaluate(e, now);
		e->announce_due = true;
	}
	if (e->announce_due || elapsed(now, e->announced_ms, MEMBERSHIP_ANNOUNCE_MS))
		announce(e, now);
	if (e->health_due || elapsed(now, e->health_sent_ms, MEMBERSHIP_HEALTH_REPORT_MS))
		report_health(e, now);
	own_tick(e, now);
}

/* ----------------------------------------------------------------- set-up */

/* The tables of cfg, carrying over what the dataplane has (by key). */
static int
load_tables(struct membership *e, const struct config *cfg)
{
	struct probe_target *probes;
	struct tables t;
	int rc = tables_build(cfg, &t, &probes);

	if (rc < 0)
		return rc;
	rc = e->ops.probe_targets(e->arg, probes, t.n_targets);
	free(probes);
	if (rc < 0) {
		tables_free(&t);
		return rc;
	}
	/* commit */
	for (size_t i = 0; i < t.n_backends; i++) {
		const struct backend_ref *old = backend_find(&e->t, &t.keys[i].key);

		if (old != NULL)
			t.applied_down[t.keys[i].flat] = e->t.applied_down[old->flat];
	}
	tables_free(&e->t);
	e->t = t;
	e->health_due = true;
	return 0;
}

struct membership *
membership_create(const struct membership_params *p, const struct config *cfg,
		  const struct membership_ops *ops, void *arg, uint32_t now)
{
	struct membership *e = calloc(1, sizeof(*e));

	if (e == NULL) {
		ops->log(arg, LOG_ERR, "membership: out of memory");
		return NULL;
	}
	e->ops = *ops;
	e->arg = arg;
	e->cfg = cfg;
	e->incarnation = p->incarnation;
	snprintf(e->dataplane, sizeof(e->dataplane), "%s", p->dataplane);
	e->tick_ms = now;
	e->announced_ms = now;
	e->health_sent_ms = now;
	e->health = health_create();
	e->hook_env = calloc(1, sizeof(*e->hook_env));
	if (e->health == NULL || e->hook_env == NULL || load_tables(e, cfg) < 0) {
		say(e, LOG_ERR, "membership: cannot start (out of memory, or the probes "
		    "refused their targets)");
		membership_destroy(e);
		return NULL;
	}
	set_role(e, ROLES_PASSIVE, now);  /* hooks withdraw what an earlier run left */
	return e;
}

void
membership_destroy(struct membership *e)
{
	if (e == NULL)
		return;
	tables_free(&e->t);
	health_destroy(e->health);
	free(e->hook_env);
	free(e);
}

int
membership_set_config(struct membership *e, const struct config *cfg, uint32_t now)
{
	int rc = load_tables(e, cfg);

	if (rc < 0)
		return rc;
	if (cfg->mode != e->cfg->mode || cfg->preempt != e->cfg->preempt)
		say(e, LOG_WARNING, "reload: cluster mode %s, preempt %s: every node must "
		    "change it too", config_cluster_mode_names[cfg->mode],
		    cfg->preempt ? "on" : "off");
	e->cfg = cfg;
	e->mismatch_logged = false;
	e->announce_due = true;
	/* VIPs may have come: own them too, announced */
	e->config_gen++;
	if (e->own == MEMBERSHIP_OWN_OWNED)
		own_renew(e, now);
	evaluate(e, now);
	apply_health(e);
	serving_update(e);
	return 0;
}

/* ----------------------------------------------------------------- status */

int
membership_status(const struct membership *e, struct wire_ctl_cluster *out)
{
	struct local l = local_now(e);

	*out = (struct wire_ctl_cluster){
		.node_id = e->cfg->node_id,
		.mode = wire_mode(e->cfg->mode),
		.preempt = e->cfg->preempt,
		.quorate = l.quorate,
		.role = e->role == ROLES_ACTIVE ? WIRE_ROLE_ACTIVE : WIRE_ROLE_PASSIVE,
		.eligible = local_eligible(&l) && e->in_group,
		.standby = e->standby,
		.role_changes = e->counters[CLUSTER_ROLE_CHANGES],
		.lease_ms = e->cfg->lease_ms,
	};
	out->members = calloc(e->n_members ? e->n_members : 1, sizeof(*out->members));
	if (out->members == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < e->n_members; i++) {
		const struct roles_member *m = &e->members[i];

		out->members[i] = (struct wire_ctl_cluster_member){
			.id = m->id,
			.known = m->known,
			.role = !m->known ? WIRE_ROLE_UNSPECIFIED :
				e->elected[i] == ROLES_ACTIVE ? WIRE_ROLE_ACTIVE :
				WIRE_ROLE_PASSIVE,
			.priority = m->priority,
			.eligible = roles_eligible(m),
			.dataplane = m->dataplane,
			.synced = m->synced,
			.quorate = m->quorate,
			.standby = m->standby,
		};
	}
	out->count = e->n_members;
	return 0;
}

void
membership_summary(const struct membership *e, struct membership_summary *out)
{
	size_t down;

	health_down(e->health, &down);
	*out = (struct membership_summary){
		.role = e->role,
		.members = e->n_members,
		.active_id = e->active_id,
		.quorate = e->quorate,
		.dataplane_alive = dp_alive(e),
		.owning = own_holds(e),
		.serving = e->serving,
		.down_agreed = down,
		.ownership = e->own,
		.liveness = e->live,
	};
}

size_t
membership_health_targets(const struct membership *e, uint32_t cursor,
			  struct wire_ctl_health_target *out, size_t cap, uint32_t *total)
{
	size_t n = 0;

	*total = (uint32_t)e->t.n_targets;
	for (size_t id = cursor; id < e->t.n_targets && n < cap; id++, n++) {
		const struct target *t = &e->t.targets[id];
		const struct config_vip *vip = &e->cfg->vips[t->vip];
		const struct config_addr *be = &vip->backends[t->backend].addr;
		struct health_key k = backend_key(e->cfg, t->vip, t->backend);
		struct wire_ctl_health_target *o = &out[n];
		size_t by;

		memset(o, 0, sizeof(*o));
		snprintf(o->vip, sizeof(o->vip), "%s", vip->name);
		o->family = (uint8_t)be->family;
		memcpy(o->backend, be->bytes, be->family == AF_INET ? 4 : 16);
		o->local_up = e->ops.probe_up(e->arg, (uint32_t)id);
		o->agreed_up = !health_is_down(e->health, &k);
		by = health_reporters(e->health, &k, o->down_by, WIRE_SYNC_MEMBERS_MAX);
		o->n_down_by = (uint32_t)(by < WIRE_SYNC_MEMBERS_MAX ? by : WIRE_SYNC_MEMBERS_MAX);
	}
	return n;
}

uint64_t
membership_maglev_digest(const struct membership *e)
{
	return e->maglev_digest;
}

void
membership_set_quorum_device(struct membership *e, uint32_t timeout_ms)
{
	e->device_hold_ms = timeout_ms;
}
