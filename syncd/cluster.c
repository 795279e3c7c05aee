/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's membership: roles, ownership lease, agreed health. See cluster.h. */
#include "syncd/cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <qb/qblog.h>

#include "lib/daemon.h"
#include "membership/health.h"
#include "membership/hooks.h"
#include "membership/probe.h"
#include "membership/roles.h"
#include "syncd/cpg.h"
#include "syncd/quorum.h"

enum {
	TICK_MS = 10,
	PING_MS = 40,                   /* a STATUS to the dataplane this often */
	PING_DEAD_MS = 120,             /* unanswered this long: not answering */
	STALL_MS = 3 * TICK_MS,         /* a tick this late: syncd itself stalled */
	ANNOUNCE_MS = 1000,             /* state announced at least this often */
	HEALTH_REPORT_MS = 5000,        /* health report at least this often */
	TAKEOVER_WAIT_MS = 200,         /* longest wait for imports before owning */
	MSG_MAX = 64 << 10,
};

/* The membership group's CPG name is "maglb:" + this: '/' is not allowed
 * in a sync group's name, so no sync group can clash with it. */
static const char *const GROUP_NAME = "/membership";

#define CLUSTER_COUNTERS(X) \
	X(ROLE_CHANGES, role_changes, "changes of this node's role") \
	X(TAKEOVERS, takeovers, "VIP ownership taken (active-passive)") \
	X(TAKEOVER_UNSYNCED, takeover_unsynced, \
	  "takeovers that did not wait for every import (TAKEOVER_WAIT_MS)") \
	X(RELEASES, releases, "VIP ownership given up") \
	X(RENEWALS, renewals, "lease renewals sent") \
	X(OWNERSHIP_ERRORS, ownership_errors, "ownership requests the dataplane refused or lost") \
	X(ANNOUNCES_SENT, announces_sent, "NODE_STATE messages sent") \
	X(STATES_RECEIVED, states_received, "NODE_STATE messages delivered") \
	X(HEALTH_SENT, health_sent, "HEALTH reports sent") \
	X(HEALTH_RECEIVED, health_received, "HEALTH reports delivered") \
	X(HEALTH_CHANGES, health_changes, "changes of the agreed down set") \
	X(BACKEND_SETS, backend_sets, "backend down/up sent to the dataplane") \
	X(BACKEND_SET_ERRORS, backend_set_errors, "backend down/up refused or lost") \
	X(HEALTH_UNKNOWN, health_unknown, "reported backends not in this node's config") \
	X(SEND_AGAIN, send_again, "multicasts deferred (CPG busy)") \
	X(DROP_DECODE, drop_decode, "membership messages that did not decode") \
	X(DROP_KIND, drop_kind, "messages of a sync kind on the membership group") \
	X(DROP_SENDER, drop_sender, "messages whose sender is not the CPG sender") \
	X(CONFIG_MISMATCH, config_mismatch, "announcements with another mode or preempt") \
	X(DP_TIMEOUTS, dp_timeouts, "dataplane pings unanswered past PING_DEAD_MS") \
	X(HOOK_RUNS, hook_runs, "hook runs asked for")

enum cluster_counter {
#define CLUSTER_ENUM_(id, name, text) CLUSTER_##id,
	CLUSTER_COUNTERS(CLUSTER_ENUM_)
#undef CLUSTER_ENUM_
	CLUSTER_COUNTER_MAX
};

static const char *const cluster_counter_names[CLUSTER_COUNTER_MAX] = {
#define CLUSTER_NAME_(id, name, text) [CLUSTER_##id] = #name,
	CLUSTER_COUNTERS(CLUSTER_NAME_)
#undef CLUSTER_NAME_
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

/* The node's own facts, as last announced. */
struct local {
	bool dataplane, synced, quorate, standby;
	enum roles_role holds;
};

struct syncd_cluster {
	qb_loop_t *loop;
	const struct config *cfg;
	struct repl *repl;
	struct ipc_async *dp;
	struct syncd_cpg *cpg;
	struct syncd_quorum *quorum;
	struct probe *probe;
	struct hooks *hooks;
	struct health *health;
	int tick_fd;
	uint64_t incarnation;
	uint64_t seq;

	/* the group */
	bool in_group;
	struct roles_member members[REPL_MEMBERS_MAX]; /* what each last announced */
	enum roles_role elected[REPL_MEMBERS_MAX];      /* the last election's roles */
	size_t n_members;
	uint32_t active_id;             /* active-passive: the elected one */
	bool mismatch_logged;

	/* this node */
	bool dp_alive;                  /* its dataplane answered lately */
	bool ping_inflight;
	uint32_t ping_sent_ms;
	uint32_t tick_ms;               /* the last tick */
	uint64_t maglev_digest;
	bool standby;
	enum roles_role role;           /* held */
	enum roles_role hooked;         /* the role the hooks last ran for */
	struct local announced;
	bool announce_due;
	uint32_t announced_ms;
	uint64_t role_changes_at_ms;    /* CLOCK_REALTIME ms of the last change */

	/* VIP ownership (active-passive) */
	bool takeover_pending;
	uint32_t takeover_since_ms;
	bool owning;                    /* the dataplane acknowledged ownership */
	bool ownership_inflight;
	uint32_t renewed_ms;

	/* health */
	struct target *targets;         /* by probe id */
	size_t n_targets;
	bool health_due;
	uint32_t health_sent_ms;
	uint64_t health_generation;
	bool *applied_down;             /* by flat backend index: sent to the dataplane */
	struct backend_ref *keys;       /* every backend of the config, by key */
	uint32_t *backend_base;         /* flat index of each VIP's first backend */
	size_t n_backends;

	uint64_t counters[CLUSTER_COUNTER_MAX];
};

static bool
elapsed(uint32_t now, uint32_t since, uint32_t ms)
{
	return (uint32_t)(now - since) >= ms;
}

static enum wire_cluster_mode
wire_mode(enum config_cluster_mode m)
{
	return m == CONFIG_CLUSTER_ACTIVE_ACTIVE ? WIRE_CLUSTER_MODE_ACTIVE_ACTIVE :
	       WIRE_CLUSTER_MODE_ACTIVE_PASSIVE;
}

static struct roles_member *
member_find(struct syncd_cluster *c, uint32_t id)
{
	for (size_t i = 0; i < c->n_members; i++)
		if (c->members[i].id == id)
			return &c->members[i];
	return NULL;
}

/* ------------------------------------------------------------- multicast */

static int
multicast(struct syncd_cluster *c, struct wire_sync_msg *m)
{
	uint8_t *buf;
	size_t len;
	int rc;

	m->node_id = c->cfg->node_id;
	m->seq = ++c->seq;
	len = wire_sync_encoded_size(m);
	if (len == 0 || len > MSG_MAX)
		return -EMSGSIZE;
	buf = malloc(len);
	if (buf == NULL)
		return -ENOMEM;
	rc = wire_sync_encode(m, buf, len, &len);
	if (rc == 0)
		rc = syncd_cpg_send(c->cpg, 0, buf, len);
	free(buf);
	if (rc == -EAGAIN)
		c->counters[CLUSTER_SEND_AGAIN]++;
	return rc;
}

/* What this node is now. */
static struct local
local_now(const struct syncd_cluster *c)
{
	return (struct local){
		.dataplane = c->dp_alive,
		.synced = repl_holds_flows(c->repl),
		.quorate = syncd_quorum_quorate(c->quorum),
		.standby = c->standby,
		.holds = c->role,
	};
}

static bool
local_same(const struct local *a, const struct local *b)
{
	return a->dataplane == b->dataplane && a->synced == b->synced &&
	       a->quorate == b->quorate && a->standby == b->standby && a->holds == b->holds;
}

static bool
local_eligible(const struct local *l)
{
	return l->dataplane && l->synced && l->quorate && !l->standby;
}

static void
announce(struct syncd_cluster *c)
{
	struct local l = local_now(c);
	struct wire_sync_msg m = {
		.kind = WIRE_SYNC_NODE_STATE,
		.state = {
			.priority = c->cfg->priority,
			.dataplane = l.dataplane,
			.synced = l.synced,
			.quorate = l.quorate,
			.standby = l.standby,
			.preempt = c->cfg->preempt,
			.role = l.holds == ROLES_ACTIVE ? WIRE_ROLE_ACTIVE : WIRE_ROLE_PASSIVE,
			.mode = wire_mode(c->cfg->mode),
			.incarnation = c->incarnation,
		},
	};

	if (!c->in_group)
		return;
	if (multicast(c, &m) < 0)
		return;         /* announce_due stays: the tick tries again */
	c->counters[CLUSTER_ANNOUNCES_SENT]++;
	c->announced = l;
	c->announce_due = false;
	c->announced_ms = daemon_mono_ms();
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

static struct health_key
wire_to_key(const struct wire_flow *f)
{
	struct health_key k;

	memset(&k, 0, sizeof(k));
	k.vip_len = f->family == AF_INET ? 4 : 16;
	k.backend_len = f->backend_family == AF_INET ? 4 : 16;
	memcpy(k.vip, f->vip, k.vip_len);
	memcpy(k.backend, f->backend, k.backend_len);
	k.vip_port = f->vip_port;
	k.protocol = f->proto;
	return k;
}

static int
ref_order(const void *a, const void *b)
{
	return health_key_compare(&((const struct backend_ref *)a)->key,
				  &((const struct backend_ref *)b)->key);
}

static const struct backend_ref *
backend_find(const struct backend_ref *refs, size_t n, const struct health_key *k)
{
	struct backend_ref want = { .key = *k };

	return n > 0 ? bsearch(&want, refs, n, sizeof(*refs), ref_order) : NULL;
}

/* Multicast the whole set this node's probes see down. */
static void
report_health(struct syncd_cluster *c)
{
	struct wire_flow *down = calloc(c->n_targets ? c->n_targets : 1, sizeof(*down));
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH };
	size_t n = 0;

	if (down == NULL || !c->in_group) {
		free(down);
		return;
	}
	for (size_t i = 0; i < c->n_targets; i++) {
		struct health_key k;

		if (probe_up(c->probe, (uint32_t)i))
			continue;
		k = backend_key(c->cfg, c->targets[i].vip, c->targets[i].backend);
		down[n++] = key_to_wire(&k);
	}
	m.entries = down;
	m.count = n;
	m.generation = ++c->health_generation;
	if (multicast(c, &m) == 0) {
		c->counters[CLUSTER_HEALTH_SENT]++;
		c->health_due = false;
		c->health_sent_ms = daemon_mono_ms();
	}
	free(down);
}

static void
backend_set_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = arg;

	if (rc == -ENOTCONN)
		return;         /* the dataplane is gone: everything is sent again */
	if (rc != 0 || resp->kind != WIRE_CTL_ERROR || resp->error.code != 0) {
		c->counters[CLUSTER_BACKEND_SET_ERRORS]++;
		qb_log(LOG_WARNING, "dataplane refused a backend down/up: %s",
		       rc != 0 ? strerror(-rc) : resp->kind == WIRE_CTL_ERROR ?
		       resp->error.message : "unexpected answer");
	}
}

/* Bring the dataplane's backends to the agreed set: only the differences. */
static void
apply_health(struct syncd_cluster *c)
{
	char buf[INET6_ADDRSTRLEN];

	if (!ipc_async_connected(c->dp))
		return;
	for (uint32_t v = 0; v < c->cfg->n_vips; v++) {
		const struct config_vip *vip = &c->cfg->vips[v];

		for (uint32_t b = 0; b < vip->n_backends; b++) {
			size_t flat = c->backend_base[v] + b;
			struct health_key k = backend_key(c->cfg, v, b);
			bool down = health_is_down(c->health, &k);
			struct wire_ctl_msg m = { .kind = WIRE_CTL_BACKEND_SET };

			if (down == c->applied_down[flat])
				continue;
			snprintf(m.backend_set.vip, sizeof(m.backend_set.vip), "%s", vip->name);
			m.backend_set.family = (uint8_t)vip->backends[b].addr.family;
			memcpy(m.backend_set.backend, vip->backends[b].addr.bytes, WIRE_ADDR_MAX);
			m.backend_set.action = down ? WIRE_BACKEND_MARK_DOWN : WIRE_BACKEND_MARK_UP;
			if (ipc_async_send(c->dp, &m, backend_set_done, c) < 0) {
				c->counters[CLUSTER_BACKEND_SET_ERRORS]++;
				return;         /* retried at the next change or reconnection */
			}
			c->applied_down[flat] = down;
			c->counters[CLUSTER_BACKEND_SETS]++;
			qb_log(LOG_NOTICE, "backend %s of VIP %s: %s (agreed)",
			       config_addr_str(&vip->backends[b].addr, buf, sizeof(buf)),
			       vip->name, down ? "down" : "up");
		}
	}
}

static void
probe_changed(void *arg, uint32_t id, bool up)
{
	struct syncd_cluster *c = arg;
	char buf[INET6_ADDRSTRLEN];

	if (id < c->n_targets) {
		const struct config_vip *vip = &c->cfg->vips[c->targets[id].vip];

		qb_log(LOG_INFO, "probe of backend %s of VIP %s: %s (this node's view)",
		       config_addr_str(&vip->backends[c->targets[id].backend].addr, buf,
				       sizeof(buf)), vip->name, up ? "up" : "down");
	}
	c->health_due = true;
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

/* ----------------------------------------------------------- ownership */

/* Append word to the space-separated list at out (cap bytes). */
static void
list_add(char *out, size_t cap, const char *word)
{
	size_t len = strlen(out);

	snprintf(out + len, cap - len, "%s%s", len > 0 ? " " : "", word);
}

/* Run the hooks for role, with the VIPs in the environment (hooks.h). */
static void
run_hooks(struct syncd_cluster *c, enum roles_role role)
{
	enum { LIST_MAX = 16384, VAR_MAX = LIST_MAX + 32 };
	static char all[LIST_MAX], v4[LIST_MAX], v6[LIST_MAX], names[LIST_MAX];
	static char vars[8][VAR_MAX];
	const char *env[9];

	if (c->hooks == NULL || role == c->hooked)
		return;
	all[0] = v4[0] = v6[0] = names[0] = '\0';
	for (uint32_t i = 0; i < c->cfg->n_vips; i++) {
		const struct config_vip *vip = &c->cfg->vips[i];
		char buf[INET6_ADDRSTRLEN];
		bool seen = false;

		/* an address once, even when several VIPs (ports) share it */
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = memcmp(&c->cfg->vips[j].addr, &vip->addr, sizeof(vip->addr)) == 0;
		list_add(names, sizeof(names), vip->name);
		if (seen)
			continue;
		config_addr_str(&vip->addr, buf, sizeof(buf));
		list_add(all, sizeof(all), buf);
		list_add(vip->addr.family == AF_INET ? v4 : v6, LIST_MAX, buf);
	}
	snprintf(vars[0], VAR_MAX, "MAGLB_ROLE=%s", roles_role_names[role]);
	snprintf(vars[1], VAR_MAX, "MAGLB_PREVIOUS_ROLE=%s",
		 roles_role_names[c->hooked == ROLES_NONE ? ROLES_PASSIVE : c->hooked]);
	snprintf(vars[2], VAR_MAX, "MAGLB_NODE_ID=%" PRIu32, c->cfg->node_id);
	snprintf(vars[3], VAR_MAX, "MAGLB_MODE=%s", config_cluster_mode_names[c->cfg->mode]);
	snprintf(vars[4], VAR_MAX, "MAGLB_VIPS=%s", all);
	snprintf(vars[5], VAR_MAX, "MAGLB_VIPS4=%s", v4);
	snprintf(vars[6], VAR_MAX, "MAGLB_VIPS6=%s", v6);
	snprintf(vars[7], VAR_MAX, "MAGLB_VIP_NAMES=%s", names);
	for (size_t i = 0; i < 8; i++)
		env[i] = vars[i];
	env[8] = NULL;
	c->hooked = role;
	c->counters[CLUSTER_HOOK_RUNS]++;
	if (hooks_run(c->hooks, roles_role_names[role], env) < 0)
		qb_log(LOG_ERR, "cannot run the hooks for role %s", roles_role_names[role]);
}

static int ownership_send(struct syncd_cluster *c, bool own, bool announce);

static void
ownership_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = arg;
	bool ok = rc == 0 && resp->kind == WIRE_CTL_ERROR && resp->error.code == 0;

	c->ownership_inflight = false;
	if (!ok) {
		if (rc != -ENOTCONN)
			c->counters[CLUSTER_OWNERSHIP_ERRORS]++;
		qb_log(LOG_WARNING, "dataplane %s: VIP ownership request failed: %s",
		       ipc_async_service(c->dp),
		       rc != 0 ? strerror(-rc) : resp->kind == WIRE_CTL_ERROR ?
		       resp->error.message : "unexpected answer");
		if (c->role == ROLES_ACTIVE && !c->owning)
			c->takeover_pending = true;     /* the tick tries again */
		return;
	}
	if (c->role != ROLES_ACTIVE || c->owning)
		return;
	c->owning = true;
	c->counters[CLUSTER_TAKEOVERS]++;
	qb_log(LOG_NOTICE, "owning the VIPs (lease %u ms), announced by gratuitous ARP / "
	       "unsolicited NA", c->cfg->lease_ms);
	run_hooks(c, ROLES_ACTIVE);
}

/* Own (with the lease) or give up every VIP of the config. 0 or -errno. */
static int
ownership_send(struct syncd_cluster *c, bool own, bool announce)
{
	struct wire_ctl_ownership_entry *e;
	struct wire_ctl_msg m = { .kind = WIRE_CTL_OWNERSHIP_SET };
	int rc;

	if (!ipc_async_connected(c->dp))
		return -ENOTCONN;
	if (c->cfg->n_vips == 0)
		return 0;
	e = calloc(c->cfg->n_vips, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->cfg->n_vips; i++) {
		snprintf(e[i].vip, sizeof(e[i].vip), "%s", c->cfg->vips[i].name);
		e[i].owned = own;
	}
	m.ownership = (struct wire_ctl_ownership){
		.vips = e, .count = c->cfg->n_vips, .announce = announce,
		.lease_ms = own ? c->cfg->lease_ms : 0,
	};
	rc = ipc_async_send(c->dp, &m, ownership_done, c);
	if (rc == 0) {
		c->ownership_inflight = true;
		c->renewed_ms = daemon_mono_ms();
	} else {
		c->counters[CLUSTER_OWNERSHIP_ERRORS]++;
	}
	free(e);
	return rc;
}

/*
 * Own the VIPs once every entry held is imported (or TAKEOVER_WAIT_MS
 * passed): the flows the old active node made must find their entries.
 */
static void
try_takeover(struct syncd_cluster *c, uint32_t now)
{
	bool drained;

	if (!c->takeover_pending || !c->dp_alive || c->ownership_inflight)
		return;
	drained = repl_import_queue(c->repl) == 0;
	if (!drained && !elapsed(now, c->takeover_since_ms, TAKEOVER_WAIT_MS))
		return;
	if (!drained) {
		c->counters[CLUSTER_TAKEOVER_UNSYNCED]++;
		qb_log(LOG_WARNING, "taking over with %" PRIu64 " entries not yet imported "
		       "(waited %u ms)", repl_import_queue(c->repl), (unsigned)TAKEOVER_WAIT_MS);
	}
	/* not sent (IPC window full, no memory): the next tick tries */
	c->takeover_pending = ownership_send(c, true, true) < 0;
}

static void
set_role(struct syncd_cluster *c, enum roles_role role)
{
	if (role == c->role)
		return;
	qb_log(LOG_NOTICE, "role: %s -> %s (%s%s)", roles_role_names[c->role],
	       roles_role_names[role], config_cluster_mode_names[c->cfg->mode],
	       c->active_id != 0 ? "" : ", no eligible node");
	if (c->role != ROLES_NONE) {
		c->counters[CLUSTER_ROLE_CHANGES]++;
		c->role_changes_at_ms = daemon_real_us() / 1000;
	}
	c->role = role;
	c->announce_due = true;
	if (c->cfg->mode == CONFIG_CLUSTER_ACTIVE_ACTIVE) {
		run_hooks(c, role);
		return;
	}
	if (role == ROLES_ACTIVE) {
		c->takeover_pending = true;
		c->takeover_since_ms = daemon_mono_ms();
		try_takeover(c, c->takeover_since_ms);
		return;
	}
	c->takeover_pending = false;
	if (c->owning)
		c->counters[CLUSTER_RELEASES]++;
	c->owning = false;
	ownership_send(c, false, false);
	run_hooks(c, ROLES_PASSIVE);
}

/* --------------------------------------------------------------- election */

static void
evaluate(struct syncd_cluster *c)
{
	const struct roles_member *view = c->members;
	enum roles_role *out = c->elected;
	uint32_t voters[REPL_MEMBERS_MAX];
	size_t nv = 0;
	enum roles_role want = ROLES_PASSIVE;
	struct local l = local_now(c);
	int rc;

	c->active_id = roles_elect(c->cfg->mode, c->cfg->preempt, view, c->n_members, out);
	for (size_t i = 0; i < c->n_members; i++)
		if (view[i].id == c->cfg->node_id && c->in_group)
			want = out[i];
	/* what this node knows of itself now can only take its role away */
	if (!local_eligible(&l))
		want = ROLES_PASSIVE;
	if (want != c->role) {
		set_role(c, want);
		/* at once: until the others hear it holds the role, a peer that
		 * becomes eligible meanwhile could be elected in its place */
		announce(c);
	}

	/* voters: the eligible members; when none is, every member heard */
	for (size_t i = 0; i < c->n_members; i++)
		if (roles_eligible(&view[i]))
			voters[nv++] = view[i].id;
	if (nv == 0)
		for (size_t i = 0; i < c->n_members; i++)
			if (view[i].known)
				voters[nv++] = view[i].id;
	rc = health_agree(c->health, voters, nv);
	if (rc > 0) {
		c->counters[CLUSTER_HEALTH_CHANGES]++;
		apply_health(c);
	}
}

/* -------------------------------------------------------------- CPG */

static void
on_state(struct syncd_cluster *c, uint32_t sender, const struct wire_node_state *st)
{
	struct roles_member *m = member_find(c, sender);

	c->counters[CLUSTER_STATES_RECEIVED]++;
	if (m == NULL)
		return;         /* left before its message was delivered */
	if ((st->mode != wire_mode(c->cfg->mode) || st->preempt != c->cfg->preempt)) {
		c->counters[CLUSTER_CONFIG_MISMATCH]++;
		if (!c->mismatch_logged)
			qb_log(LOG_ERR, "node %u runs cluster mode %s, preempt %s; this node %s, "
			       "%s: the cluster.mode and cluster.preempt of every node must "
			       "be the same", sender, wire_cluster_mode_names[st->mode],
			       st->preempt ? "on" : "off", config_cluster_mode_names[c->cfg->mode],
			       c->cfg->preempt ? "on" : "off");
		c->mismatch_logged = true;
	}
	m->known = true;
	m->priority = st->priority;
	m->dataplane = st->dataplane;
	m->synced = st->synced;
	m->quorate = st->quorate;
	m->standby = st->standby;
	m->holds = st->role == WIRE_ROLE_ACTIVE ? ROLES_ACTIVE : ROLES_PASSIVE;
}

static void
on_health(struct syncd_cluster *c, uint32_t sender, const struct wire_sync_msg *msg)
{
	struct health_key *keys = calloc(msg->count ? msg->count : 1, sizeof(*keys));
	size_t n = 0;

	c->counters[CLUSTER_HEALTH_RECEIVED]++;
	if (keys == NULL || member_find(c, sender) == NULL) {
		free(keys);     /* no memory, or it left before its report came */
		return;
	}
	for (size_t i = 0; i < msg->count; i++) {
		keys[n] = wire_to_key(&msg->entries[i]);
		/* kept all the same: a node's vote is its whole report */
		if (backend_find(c->keys, c->n_backends, &keys[n]) == NULL)
			c->counters[CLUSTER_HEALTH_UNKNOWN]++;
		n++;
	}
	if (health_report(c->health, sender, keys, n) < 0)
		qb_log(LOG_ERR, "out of memory for node %u's health report", sender);
	free(keys);
}

static void
cpg_deliver(void *arg, uint16_t group, uint32_t sender, const void *buf, size_t len)
{
	struct syncd_cluster *c = arg;
	size_t cap = len / WIRE_BACKEND_REF_ENCODED_MIN + 1;
	struct wire_flow *entries = malloc(cap * sizeof(*entries));
	struct wire_sync_msg m;
	struct wire_counters wc = { 0 };

	(void)group;
	if (entries == NULL)
		return;
	if (wire_sync_decode(buf, len, &m, entries, cap, &wc) < 0) {
		c->counters[CLUSTER_DROP_DECODE]++;
	} else if (m.node_id != sender) {
		c->counters[CLUSTER_DROP_SENDER]++;
	} else if (m.kind == WIRE_SYNC_NODE_STATE) {
		on_state(c, sender, &m.state);
		evaluate(c);
	} else if (m.kind == WIRE_SYNC_HEALTH) {
		on_health(c, sender, &m);
		evaluate(c);
	} else {
		c->counters[CLUSTER_DROP_KIND]++;
	}
	free(entries);
}

static void
cpg_members(void *arg, uint16_t group, const uint32_t *ids, size_t n, bool self_in,
	    bool merged)
{
	struct syncd_cluster *c = arg;
	struct roles_member next[REPL_MEMBERS_MAX];
	bool joined = false;

	(void)group;
	(void)merged;
	for (size_t i = 0; i < n && i < REPL_MEMBERS_MAX; i++) {
		struct roles_member *old = member_find(c, ids[i]);

		if (old != NULL) {
			next[i] = *old;
		} else {
			next[i] = (struct roles_member){ .id = ids[i] };
			joined = true;
		}
	}
	for (size_t i = 0; i < c->n_members; i++) {
		bool stays = false;

		for (size_t j = 0; j < n; j++)
			stays |= ids[j] == c->members[i].id;
		if (!stays) {
			qb_log(LOG_INFO, "node %u left the cluster", c->members[i].id);
			health_forget(c->health, c->members[i].id);
		}
	}
	memcpy(c->members, next, n * sizeof(next[0]));
	c->n_members = n;
	if (self_in != c->in_group)
		qb_log(LOG_INFO, "membership group: %s", self_in ? "joined" : "lost");
	c->in_group = self_in;
	/* newcomers learn every member's state and health from the next messages */
	if (joined && self_in) {
		c->announce_due = true;
		c->health_due = true;
		announce(c);
		report_health(c);
	}
	evaluate(c);
}

/* ------------------------------------------------------------- dataplane */

static void
local_changed(struct syncd_cluster *c)
{
	struct local l;

	evaluate(c);            /* announces a role change itself */
	l = local_now(c);
	if (!local_same(&l, &c->announced)) {
		c->announce_due = true;
		announce(c);
	}
}

static void
pong(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = arg;

	c->ping_inflight = false;
	if (rc != 0 || resp->kind != WIRE_CTL_STATUS_RESPONSE)
		return;
	c->maglev_digest = resp->status.maglev_digest;
	repl_set_maglev_digest(c->repl, c->maglev_digest);
	if (!c->dp_alive) {
		c->dp_alive = true;
		qb_log(LOG_INFO, "dataplane %s answers", ipc_async_service(c->dp));
		local_changed(c);
	}
}

/*
 * A STATUS to the dataplane every PING_MS; one unanswered for PING_DEAD_MS
 * makes it not answering. Not judged on a tick after syncd itself was
 * held up (stalled): its answer may be waiting, unread, behind this tick.
 */
static void
ping(struct syncd_cluster *c, uint32_t now, bool stalled)
{
	struct wire_ctl_msg m = { .kind = WIRE_CTL_STATUS_REQUEST };

	if (c->ping_inflight) {
		if (c->dp_alive && !stalled && elapsed(now, c->ping_sent_ms, PING_DEAD_MS)) {
			c->counters[CLUSTER_DP_TIMEOUTS]++;
			c->dp_alive = false;
			qb_log(LOG_WARNING, "dataplane %s: no answer for %u ms: withdrawing",
			       ipc_async_service(c->dp), (unsigned)PING_DEAD_MS);
			local_changed(c);
		}
		return;
	}
	if (!ipc_async_connected(c->dp) || !elapsed(now, c->ping_sent_ms, PING_MS))
		return;
	if (ipc_async_send(c->dp, &m, pong, c) == 0) {
		c->ping_inflight = true;
		c->ping_sent_ms = now;
	}
}

void
syncd_cluster_dp_up(struct syncd_cluster *c)
{
	/* a new dataplane has every backend up and owns nothing */
	memset(c->applied_down, 0, c->n_backends * sizeof(*c->applied_down));
	c->owning = false;
	c->ping_inflight = false;
	c->ping_sent_ms = daemon_mono_ms() - PING_MS;
	ping(c, daemon_mono_ms(), false);
	if (c->role == ROLES_ACTIVE && c->cfg->mode == CONFIG_CLUSTER_ACTIVE_PASSIVE)
		c->takeover_pending = true;
	else
		ownership_send(c, false, false);     /* a lease of an earlier syncd */
	apply_health(c);
}

void
syncd_cluster_dp_down(struct syncd_cluster *c)
{
	c->ping_inflight = false;
	c->ownership_inflight = false;
	c->owning = false;
	if (c->dp_alive) {
		c->dp_alive = false;
		qb_log(LOG_WARNING, "dataplane %s: connection lost: withdrawing",
		       ipc_async_service(c->dp));
		local_changed(c);
	}
}

/* ------------------------------------------------------------------ tick */

static void
quorum_changed(void *arg, bool quorate)
{
	(void)quorate;
	local_changed(arg);
}

static int32_t
on_tick(int32_t fd, int32_t revents, void *arg)
{
	struct syncd_cluster *c = arg;
	uint32_t now = daemon_mono_ms();
	uint64_t expirations;
	struct local l;

	(void)revents;
	if (read(fd, &expirations, sizeof(expirations)) < 0)
		return 0;
	syncd_quorum_poll(c->quorum, now);
	ping(c, now, elapsed(now, c->tick_ms, STALL_MS));
	c->tick_ms = now;
	l = local_now(c);
	if (!local_same(&l, &c->announced)) {
		evaluate(c);
		c->announce_due = true;
	}
	if (c->announce_due || elapsed(now, c->announced_ms, ANNOUNCE_MS))
		announce(c);
	if (c->health_due || elapsed(now, c->health_sent_ms, HEALTH_REPORT_MS))
		report_health(c);
	try_takeover(c, now);
	if (c->owning && c->role == ROLES_ACTIVE && !c->ownership_inflight &&
	    elapsed(now, c->renewed_ms, c->cfg->lease_ms / 4)) {
		c->counters[CLUSTER_RENEWALS]++;
		ownership_send(c, true, false);
	}
	return 0;
}

static int32_t
on_probe(int32_t fd, int32_t revents, void *arg)
{
	struct syncd_cluster *c = arg;

	(void)fd;
	(void)revents;
	probe_dispatch(c->probe);
	if (c->health_due)
		report_health(c);
	return 0;
}

static int32_t
on_hooks(int32_t fd, int32_t revents, void *arg)
{
	(void)fd;
	(void)revents;
	hooks_dispatch(((struct syncd_cluster *)arg)->hooks);
	return 0;
}

static void
hooks_log(void *arg, int priority, const char *line)
{
	(void)arg;
	qb_log(priority, "%s", line);
}

/* -------------------------------------------------------------- set-up */

static int
hooks_start(struct syncd_cluster *c, const struct config *cfg)
{
	static const struct hooks_ops hops = { .log = hooks_log };

	c->hooks = hooks_create(cfg->hooks_dir, cfg->hook_timeout_ms, &hops, c);
	if (c->hooks == NULL)
		return -ENOMEM;
	if (qb_loop_poll_add(c->loop, QB_LOOP_LOW, hooks_fd(c->hooks), POLLIN, c,
			     on_hooks) != 0) {
		hooks_destroy(c->hooks);
		c->hooks = NULL;
		return -EIO;
	}
	return 0;
}

/* Targets and the applied-down table for cfg. */
static int
load_health(struct syncd_cluster *c, const struct config *cfg)
{
	size_t total = 0, n;
	struct probe_target *t;
	struct target *map;
	uint32_t *base = calloc(cfg->n_vips ? cfg->n_vips : 1, sizeof(*base));
	struct backend_ref *keys = NULL;
	bool *applied;

	for (uint32_t v = 0; v < cfg->n_vips; v++) {
		if (base != NULL)
			base[v] = (uint32_t)total;
		total += cfg->vips[v].n_backends;
	}
	t = calloc(total ? total : 1, sizeof(*t));
	map = calloc(total ? total : 1, sizeof(*map));
	applied = calloc(total ? total : 1, sizeof(*applied));
	keys = calloc(total ? total : 1, sizeof(*keys));
	if (base == NULL || t == NULL || map == NULL || applied == NULL || keys == NULL)
		goto fail;
	for (uint32_t v = 0; v < cfg->n_vips; v++)
		for (uint32_t b = 0; b < cfg->vips[v].n_backends; b++)
			keys[base[v] + b] = (struct backend_ref){
				.key = backend_key(cfg, v, b), .flat = base[v] + b,
			};
	qsort(keys, total, sizeof(*keys), ref_order);
	n = build_targets(cfg, t, map);
	if (probe_set_targets(c->probe, t, n) < 0)
		goto fail;
	/* what the dataplane has: by key, from the old config */
	for (size_t i = 0; i < total; i++) {
		const struct backend_ref *old = backend_find(c->keys, c->n_backends, &keys[i].key);

		if (old != NULL)
			applied[keys[i].flat] = c->applied_down[old->flat];
	}
	free(t);
	free(c->targets);
	free(c->applied_down);
	free(c->backend_base);
	free(c->keys);
	c->keys = keys;
	c->targets = map;
	c->n_targets = n;
	c->applied_down = applied;
	c->backend_base = base;
	c->n_backends = total;
	c->health_due = true;
	return 0;
fail:
	free(base);
	free(t);
	free(map);
	free(applied);
	free(keys);
	return -ENOMEM;
}

struct syncd_cluster *
syncd_cluster_create(qb_loop_t *loop, const struct config *cfg, struct repl *repl,
		     struct ipc_async *dp)
{
	static const struct syncd_cpg_ops cops = { .deliver = cpg_deliver,
						   .members = cpg_members };
	static const struct probe_ops pops = { .changed = probe_changed };
	struct syncd_cluster *c = calloc(1, sizeof(*c));
	struct itimerspec its = {
		.it_interval.tv_nsec = TICK_MS * 1000000L,
		.it_value.tv_nsec = TICK_MS * 1000000L,
	};
	const char *name = GROUP_NAME;

	if (c == NULL)
		return NULL;
	c->loop = loop;
	c->repl = repl;
	c->dp = dp;
	c->tick_fd = -1;
	c->incarnation = daemon_real_us();
	c->role = ROLES_NONE;
	c->hooked = ROLES_NONE;
	c->health = health_create();
	c->probe = probe_create(&pops, c);
	c->quorum = syncd_quorum_create(loop, quorum_changed, c);
	if (c->health == NULL || c->probe == NULL || c->quorum == NULL ||
	    load_health(c, cfg) < 0)
		goto fail;
	c->cfg = cfg;
	if (cfg->hooks_dir[0] != '\0' && hooks_start(c, cfg) < 0)
		goto fail;
	if (qb_loop_poll_add(loop, QB_LOOP_MED, probe_fd(c->probe), POLLIN, c, on_probe) != 0)
		goto fail;
	c->cpg = syncd_cpg_create(loop, cfg->node_id, &cops, c);
	if (c->cpg == NULL || syncd_cpg_set_groups(c->cpg, &name, 1) < 0)
		goto fail;
	c->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->tick_fd < 0 || timerfd_settime(c->tick_fd, 0, &its, NULL) < 0 ||
	    qb_loop_poll_add(loop, QB_LOOP_HIGH, c->tick_fd, POLLIN, c, on_tick) != 0) {
		qb_log(LOG_ERR, "cannot set up the membership timer: %s", strerror(errno));
		goto fail;
	}
	syncd_quorum_poll(c->quorum, daemon_mono_ms());
	set_role(c, ROLES_PASSIVE);     /* hooks withdraw what an earlier run left */
	qb_log(LOG_INFO, "membership: %s, preempt %s, priority %u, lease %u ms, %zu "
	       "probed backend(s), hooks %s", config_cluster_mode_names[cfg->mode],
	       cfg->preempt ? "on" : "off", cfg->priority, cfg->lease_ms, c->n_targets,
	       cfg->hooks_dir[0] ? cfg->hooks_dir : "none");
	return c;
fail:
	qb_log(LOG_ERR, "membership: cannot start (out of memory or file descriptors)");
	syncd_cluster_destroy(c);
	return NULL;
}

void
syncd_cluster_destroy(struct syncd_cluster *c)
{
	if (c == NULL)
		return;
	if (c->tick_fd >= 0) {
		qb_loop_poll_del(c->loop, c->tick_fd);
		close(c->tick_fd);
	}
	syncd_cpg_destroy(c->cpg);
	if (c->probe != NULL) {
		qb_loop_poll_del(c->loop, probe_fd(c->probe));
		probe_destroy(c->probe);
	}
	if (c->hooks != NULL) {
		qb_loop_poll_del(c->loop, hooks_fd(c->hooks));
		hooks_destroy(c->hooks);
	}
	syncd_quorum_destroy(c->quorum);
	health_destroy(c->health);
	free(c->targets);
	free(c->applied_down);
	free(c->backend_base);
	free(c->keys);
	free(c);
}

int
syncd_cluster_set_config(struct syncd_cluster *c, const struct config *cfg)
{
	if (load_health(c, cfg) < 0)
		return -ENOMEM;
	if (cfg->mode != c->cfg->mode || cfg->preempt != c->cfg->preempt)
		qb_log(LOG_WARNING, "reload: cluster mode %s, preempt %s: every node must "
		       "change it too", config_cluster_mode_names[cfg->mode],
		       cfg->preempt ? "on" : "off");
	if (cfg->hooks_dir[0] == '\0' && c->hooks != NULL) {
		qb_loop_poll_del(c->loop, hooks_fd(c->hooks));
		hooks_destroy(c->hooks);
		c->hooks = NULL;
	} else if (cfg->hooks_dir[0] != '\0' && c->hooks == NULL) {
		if (hooks_start(c, cfg) < 0)
			qb_log(LOG_ERR, "reload: cannot start the hooks of %s", cfg->hooks_dir);
	} else if (c->hooks != NULL &&
		   hooks_set(c->hooks, cfg->hooks_dir, cfg->hook_timeout_ms) < 0) {
		qb_log(LOG_ERR, "reload: hooks stay in %s", c->cfg->hooks_dir);
	}
	c->cfg = cfg;
	c->mismatch_logged = false;
	c->announce_due = true;
	/* VIPs may have come: own them too, announced */
	if (c->owning)
		ownership_send(c, true, true);
	evaluate(c);
	apply_health(c);
	return 0;
}

int
syncd_cluster_status(const struct syncd_cluster *c, struct wire_ctl_cluster *out)
{
	struct local l = local_now(c);

	*out = (struct wire_ctl_cluster){
		.node_id = c->cfg->node_id,
		.mode = wire_mode(c->cfg->mode),
		.preempt = c->cfg->preempt,
		.quorate = l.quorate,
		.role = c->role == ROLES_ACTIVE ? WIRE_ROLE_ACTIVE : WIRE_ROLE_PASSIVE,
		.eligible = local_eligible(&l) && c->in_group,
		.standby = c->standby,
		.role_changes = c->counters[CLUSTER_ROLE_CHANGES],
		.last_change_unix_ms = c->role_changes_at_ms,
		.lease_ms = c->cfg->lease_ms,
	};
	out->members = calloc(c->n_members ? c->n_members : 1, sizeof(*out->members));
	if (out->members == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_members; i++) {
		const struct roles_member *m = &c->members[i];

		out->members[i] = (struct wire_ctl_cluster_member){
			.id = m->id,
			.known = m->known,
			.role = !m->known ? WIRE_ROLE_UNSPECIFIED :
				c->elected[i] == ROLES_ACTIVE ? WIRE_ROLE_ACTIVE :
				WIRE_ROLE_PASSIVE,
			.priority = m->priority,
			.eligible = roles_eligible(m),
			.dataplane = m->dataplane,
			.synced = m->synced,
			.quorate = m->quorate,
			.standby = m->standby,
		};
	}
	out->count = c->n_members;
	return 0;
}

void
syncd_cluster_standby(struct syncd_cluster *c, bool on)
{
	if (on == c->standby)
		return;
	c->standby = on;
	qb_log(LOG_NOTICE, "standby %s (maglbctl)", on ? "on: withdrawing" : "off");
	local_changed(c);
}

void
syncd_cluster_counters(const struct syncd_cluster *c, struct ipc_counter_list *l)
{
	const struct probe_counters *pc = probe_counters(c->probe);

	ipc_counter_add(l, "cluster", "role", c->role == ROLES_ACTIVE);
	ipc_counter_add(l, "cluster", "members", c->n_members);
	ipc_counter_add(l, "cluster", "active_node", c->active_id);
	ipc_counter_add(l, "cluster", "quorate", syncd_quorum_quorate(c->quorum));
	ipc_counter_add(l, "cluster", "dataplane_alive", c->dp_alive);
	ipc_counter_add(l, "cluster", "owning", c->owning);
	ipc_counter_add_array(l, "cluster", cluster_counter_names, c->counters,
			      CLUSTER_COUNTER_MAX);
	ipc_counter_add(l, "health", "targets", pc->targets);
	ipc_counter_add(l, "health", "down_here", pc->down);
	{
		size_t n;

		health_down(c->health, &n);
		ipc_counter_add(l, "health", "down_agreed", n);
	}
	ipc_counter_add_array(l, "health", probe_counter_names, pc->counts, PROBE_COUNTER_MAX);
	if (c->hooks != NULL)
		ipc_counter_add_array(l, "hooks", hooks_counter_names, hooks_counters(c->hooks),
				      HOOKS_COUNTER_MAX);
	ipc_counter_add_array(l, "cluster_cpg", syncd_cpg_counter_names,
			      syncd_cpg_counters(c->cpg), SYNCD_CPG_COUNTER_MAX);
}

uint64_t
syncd_cluster_maglev_digest(const struct syncd_cluster *c)
{
	return c->maglev_digest;
}
