/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * syncd's membership, the daemon side: the membership engine
 * (membership/engine.h) wired to CPG, votequorum, the dataplane's IPC, the
 * probes, the hooks and a timer. No rule lives here. See cluster.h.
 */
#include "syncd/cluster.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qb/qblog.h>

#include "lib/daemon.h"
#include "membership/engine.h"
#include "membership/hooks.h"
#include "membership/probe.h"
#include "syncd/cluster_msg.h"
#include "syncd/cpg.h"
#include "syncd/quorum.h"

/* The engine holds the views cpg_view.h makes. */
static_assert((int)MEMBERSHIP_MEMBERS_MAX == (int)REPL_MEMBERS_MAX, "one member bound");

/* The membership group's CPG name is "maglb:" + this: '/' is not allowed
 * in a sync group's name, so no sync group can clash with it. */
static const char *const GROUP_NAME = "/membership";

/*
 * What the dataplane requests' done callbacks hold: it outlives the
 * cluster while requests are in flight, since syncd destroys the
 * dataplane link after the cluster and ipc_async_destroy() then fails
 * what is pending (-ECANCELED). The last of those frees it.
 */
struct cluster_link {
	struct syncd_cluster *c;        /* NULL: the cluster is gone */
	unsigned inflight;
};

struct syncd_cluster {
	qb_loop_t *loop;
	struct cluster_link *link;
	const struct config *cfg;
	struct repl *repl;
	struct ipc_async *dp;
	uint64_t dp_answers;            /* its responses counted at the last tick */
	struct syncd_cpg *cpg;
	struct cluster_msg *msgs;       /* what the group delivers, checked */
	struct syncd_quorum *quorum;
	struct probe *probe;
	struct hooks *hooks;
	struct membership *engine;
	int tick_fd;
	uint8_t *send_buf;              /* CLUSTER_MSG_MAX: one encoded multicast */
	struct wire_ctl_ownership_entry *vips; /* CONFIG_VIPS_MAX: an OWNERSHIP_SET's */
	uint64_t role_changed_unix_ms;  /* CLOCK_REALTIME of the last change; 0 never */
	uint64_t vips_digest;           /* the dataplane's digest its VIP list is of */
	bool vips_asking;               /* a VIP list request is on its way */
};

/* An acknowledgement's outcome for the engine: 0, the IPC's -errno, or
 * -EPROTO (refused; *why says how, for its log line). */
static int
ack_result(int rc, const struct wire_ctl_msg *resp, const char **why)
{
	*why = NULL;
	if (rc != 0) {
		*why = strerror(-rc);
		return rc;
	}
	if (resp->kind == WIRE_CTL_ERROR && resp->error.code == 0)
		return 0;
	*why = resp->kind == WIRE_CTL_ERROR ? resp->error.message : "unexpected answer";
	return -EPROTO;
}

/* ------------------------------------------------------------------ ops */

static int
link_send(struct syncd_cluster *c, const struct wire_ctl_msg *m, ipc_done_fn done)
{
	int rc = ipc_async_send(c->dp, m, done, c->link);

	if (rc == 0)
		c->link->inflight++;
	return rc;
}

/* The cluster a completion is for; NULL when it is gone. */
static struct syncd_cluster *
link_done(void *arg)
{
	struct cluster_link *l = arg;
	struct syncd_cluster *c = l->c;

	l->inflight--;
	if (c == NULL && l->inflight == 0)
		free(l);
	return c;
}

static int
op_multicast(void *arg, const struct wire_sync_msg *m)
{
	struct syncd_cluster *c = arg;
	size_t len;
	int rc = wire_sync_encode(m, c->send_buf, CLUSTER_MSG_MAX, &len);

	if (rc == -ENOSPC)
		return -EMSGSIZE;
	return rc < 0 ? rc : syncd_cpg_send(c->cpg, 0, c->send_buf, len);
}

static void
ownership_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = link_done(arg);
	const char *why;

	if (c == NULL)
		return;
	rc = ack_result(rc, resp, &why);
	membership_ownership_done(c->engine, rc, why, daemon_mono_ms());
}

/* Own (with the lease) or give up every VIP of the config. */
static int
op_ownership_set(void *arg, bool own, bool announce, uint32_t lease_ms)
{
	struct syncd_cluster *c = arg;
	struct wire_ctl_msg m = { .kind = WIRE_CTL_OWNERSHIP_SET };

	/* active-active: no VIP is owned (the router routes them to every
	 * active node), only the serving word with its lease */
	uint32_t n = c->cfg->mode == CONFIG_CLUSTER_ACTIVE_PASSIVE ? c->cfg->n_vips : 0;

	if (!ipc_async_connected(c->dp))
		return -ENOTCONN;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(c->vips[i].vip, sizeof(c->vips[i].vip), "%s", c->cfg->vips[i].name);
		c->vips[i].owned = own;
	}
	m.ownership = (struct wire_ctl_ownership){
		.vips = c->vips, .count = n, .announce = announce,
		.lease_ms = lease_ms, .serving = own,
	};
	return link_send(c, &m, ownership_done);
}

static void
backend_set_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = link_done(arg);
	const char *why;

	if (c == NULL)
		return;
	rc = ack_result(rc, resp, &why);
	membership_backend_done(c->engine, rc, why, daemon_mono_ms());
}

static int
op_backend_set(void *arg, uint32_t v, uint32_t b, bool down)
{
	struct syncd_cluster *c = arg;
	const struct config_vip *vip = &c->cfg->vips[v];
	struct wire_ctl_msg m = { .kind = WIRE_CTL_BACKEND_SET };

	snprintf(m.backend_set.vip, sizeof(m.backend_set.vip), "%s", vip->name);
	m.backend_set.family = (uint8_t)vip->backends[b].addr.family;
	memcpy(m.backend_set.backend, vip->backends[b].addr.bytes, WIRE_ADDR_MAX);
	m.backend_set.action = down ? WIRE_BACKEND_MARK_DOWN : WIRE_BACKEND_MARK_UP;
	return link_send(c, &m, backend_set_done);
}

/* The dataplane's VIPs with their Maglev digests: each sync group's own. */
static void
vip_digests_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = link_done(arg);
	struct repl_vip_digest *v;
	size_t n;

	if (c == NULL)
		return;
	c->vips_asking = false;
	if (rc != 0 || resp->kind != WIRE_CTL_VIP_LIST_RESPONSE) {
		c->vips_digest = 0;     /* asked again at the next answer */
		return;
	}
	n = resp->vip_list.n_vips;
	v = calloc(n > 0 ? n : 1, sizeof(*v));
	if (v != NULL) {
		for (size_t i = 0; i < n; i++) {
			snprintf(v[i].name, sizeof(v[i].name), "%s", resp->vip_list.vips[i].name);
			v[i].digest = resp->vip_list.vips[i].maglev_digest;
		}
	}
	if (v == NULL || repl_set_vip_digests(c->repl, v, n) < 0)
		c->vips_digest = 0;
	free(v);
}

static void
pong(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct syncd_cluster *c = link_done(arg);
	bool ok = rc == 0 && resp->kind == WIRE_CTL_STATUS_RESPONSE;
	uint64_t digest = ok ? resp->status.maglev_digest : 0;
	struct wire_ctl_msg m = { .kind = WIRE_CTL_VIP_LIST_REQUEST };

	if (c == NULL)
		return;
	membership_pong(c->engine, ok, digest, daemon_mono_ms());
	/* the tables changed (or were never read): read each VIP's */
	if (ok && digest != c->vips_digest && !c->vips_asking &&
	    link_send(c, &m, vip_digests_done) == 0) {
		c->vips_asking = true;
		c->vips_digest = digest;
	}
}

static int
op_ping(void *arg)
{
	struct syncd_cluster *c = arg;
	struct wire_ctl_msg m = { .kind = WIRE_CTL_STATUS_REQUEST };

	return link_send(c, &m, pong);
}

static int
op_run_hooks(void *arg, enum roles_role role, const char *const *env)
{
	struct syncd_cluster *c = arg;

	if (c->hooks == NULL)
		return -ENODEV;
	return hooks_run(c->hooks, roles_role_names[role], env);
}

static void
op_log(void *arg, int priority, const char *line)
{
	(void)arg;
	qb_log(priority, "%s", line);
}

static bool
op_synced(void *arg)
{
	return repl_holds_flows(((struct syncd_cluster *)arg)->repl);
}

static uint64_t
op_import_queue(void *arg)
{
	return repl_import_queue(((struct syncd_cluster *)arg)->repl);
}

static int
op_probe_targets(void *arg, const struct probe_target *t, size_t n)
{
	return probe_set_targets(((struct syncd_cluster *)arg)->probe, t, n);
}

static bool
op_probe_up(void *arg, uint32_t id)
{
	return probe_up(((struct syncd_cluster *)arg)->probe, id);
}

/* The dataplane learns it from OWNERSHIP_SET's serving, with the lease;
 * this is the log line. */
static void
op_serving(void *arg, bool on)
{
	(void)arg;
	qb_log(LOG_INFO, "serving: %s", on ? "yes (BFD sessions may come up)" :
	       "no (BFD sessions go down)");
}

static void
op_role_changed(void *arg, enum roles_role from, enum roles_role to)
{
	struct syncd_cluster *c = arg;

	(void)to;
	if (from != ROLES_NONE)
		c->role_changed_unix_ms = daemon_real_us() / 1000;
}

static const struct membership_ops engine_ops = {
	.multicast = op_multicast,
	.ownership_set = op_ownership_set,
	.backend_set = op_backend_set,
	.ping = op_ping,
	.run_hooks = op_run_hooks,
	.log = op_log,
	.synced = op_synced,
	.import_queue = op_import_queue,
	.probe_targets = op_probe_targets,
	.probe_up = op_probe_up,
	.serving = op_serving,
	.role_changed = op_role_changed,
};

/* -------------------------------------------------------------- events */

static void
on_state(void *arg, uint32_t sender, const struct wire_node_state *st)
{
	struct syncd_cluster *c = arg;

	membership_on_state(c->engine, sender, st, daemon_mono_ms());
}

static int
on_health(void *arg, uint32_t sender, const struct health_key *down, size_t n)
{
	struct syncd_cluster *c = arg;

	return membership_on_health(c->engine, sender, down, n, daemon_mono_ms());
}

static void
cpg_deliver(void *arg, uint16_t group, uint32_t sender, const void *buf, size_t len)
{
	struct syncd_cluster *c = arg;
	const struct roles_member *members;
	size_t n;

	(void)group;
	members = membership_members(c->engine, &n);
	cluster_msg_deliver(c->msgs, sender, buf, len, members, n);
}

static void
cpg_members(void *arg, uint16_t group, const uint32_t *ids, size_t n, bool self_in,
	    bool merged)
{
	struct syncd_cluster *c = arg;

	(void)group;
	/* the quorum of this ring first: a view that dropped the peers must
	 * not make a node that lost quorum with them take over */
	syncd_quorum_refresh(c->quorum);
	membership_on_members(c->engine, ids, n, self_in, merged, daemon_mono_ms());
}

void
syncd_cluster_dp_up(struct syncd_cluster *c)
{
	membership_dataplane_up(c->engine, daemon_mono_ms());
}

void
syncd_cluster_dp_down(struct syncd_cluster *c)
{
	membership_dataplane_down(c->engine, daemon_mono_ms());
}

static void
quorum_changed(void *arg, bool quorate)
{
	struct syncd_cluster *c = arg;

	if (c->engine != NULL)
		membership_quorum(c->engine, quorate, daemon_mono_ms());
}

static int32_t
on_tick(int32_t fd, int32_t revents, void *arg)
{
	struct syncd_cluster *c = arg;
	uint32_t now = daemon_mono_ms();
	uint64_t answers;

	(void)revents;
	if (!daemon_timer_fired(fd))
		return 0;
	syncd_quorum_poll(c->quorum, now);
	/* read at each connect to corosync: a restarted one may have a device */
	membership_set_quorum_device(c->engine, syncd_quorum_device_timeout_ms(c->quorum));
	answers = ipc_async_counters(c->dp)->counts[IPC_ASYNC_RESPONSES];
	if (answers != c->dp_answers) {
		c->dp_answers = answers;
		membership_dataplane_answered(c->engine, now);
	}
	membership_tick(c->engine, now);
	return 0;
}

static void
probe_changed(void *arg, uint32_t id, bool up)
{
	struct syncd_cluster *c = arg;

	if (c->engine != NULL)
		membership_probe_changed(c->engine, id, up, daemon_mono_ms());
}

static int32_t
on_probe(int32_t fd, int32_t revents, void *arg)
{
	struct syncd_cluster *c = arg;

	(void)fd;
	(void)revents;
	probe_dispatch(c->probe);
	membership_health_flush(c->engine, daemon_mono_ms());
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

static void
hooks_stop(struct syncd_cluster *c)
{
	if (c->hooks == NULL)
		return;
	qb_loop_poll_del(c->loop, hooks_fd(c->hooks));
	hooks_destroy(c->hooks);
	c->hooks = NULL;
}

/* The engine, with the probe, quorum and hooks it drives. 0 or -errno. */
static int
engine_start(struct syncd_cluster *c, const struct config *cfg)
{
	const struct membership_params p = {
		.incarnation = daemon_real_us(),
		.dataplane = ipc_async_service(c->dp),
	};
	uint32_t now = daemon_mono_ms();

	if (cfg->hooks_dir[0] != '\0' && hooks_start(c, cfg) < 0)
		return -ENOMEM;
	c->engine = membership_create(&p, cfg, &engine_ops, c, now);
	if (c->engine == NULL)
		return -ENOMEM;
	c->msgs = cluster_msg_create(&(const struct cluster_msg_ops){
		.state = on_state, .health = on_health }, c,
		membership_counters_mut(c->engine));
	if (c->msgs == NULL)
		return -ENOMEM;
	syncd_quorum_poll(c->quorum, now);
	membership_quorum(c->engine, syncd_quorum_quorate(c->quorum), now);
	return 0;
}

static int
timer_start(struct syncd_cluster *c)
{
	c->tick_fd = daemon_timer_create(c->loop, QB_LOOP_HIGH, MEMBERSHIP_TICK_MS, on_tick, c);
	if (c->tick_fd < 0)
		qb_log(LOG_ERR, "cannot set up the membership timer: %s", strerror(-c->tick_fd));
	return c->tick_fd < 0 ? c->tick_fd : 0;
}

struct syncd_cluster *
syncd_cluster_create(qb_loop_t *loop, const struct config *cfg, struct repl *repl,
		     struct ipc_async *dp)
{
	static const struct syncd_cpg_ops cops = { .deliver = cpg_deliver,
						   .members = cpg_members };
	static const struct probe_ops pops = { .changed = probe_changed };
	struct syncd_cluster *c = calloc(1, sizeof(*c));
	const char *name = GROUP_NAME;

	if (c == NULL)
		return NULL;
	c->loop = loop;
	c->cfg = cfg;
	c->repl = repl;
	c->dp = dp;
	c->tick_fd = -1;
	c->link = calloc(1, sizeof(*c->link));
	if (c->link != NULL)
		c->link->c = c;
	c->send_buf = malloc(CLUSTER_MSG_MAX);
	c->vips = calloc(CONFIG_VIPS_MAX, sizeof(*c->vips));
	c->probe = probe_create(&pops, c);
	c->quorum = syncd_quorum_create(loop, quorum_changed, c);
	if (c->link == NULL || c->send_buf == NULL || c->vips == NULL ||
	    c->probe == NULL || c->quorum == NULL || engine_start(c, cfg) < 0)
		goto fail;
	if (qb_loop_poll_add(loop, QB_LOOP_MED, probe_fd(c->probe), POLLIN, c, on_probe) != 0)
		goto fail;
	c->cpg = syncd_cpg_create(loop, cfg->node_id, &cops, c);
	if (c->cpg == NULL || syncd_cpg_set_groups(c->cpg, &name, 1) < 0 ||
	    timer_start(c) < 0)
		goto fail;
	qb_log(LOG_INFO, "membership: %s, preempt %s, priority %u, lease %u ms, %" PRIu64 " "
	       "probed backend(s), hooks %s", config_cluster_mode_names[cfg->mode],
	       cfg->preempt ? "on" : "off", cfg->priority, cfg->lease_ms,
	       probe_counters(c->probe)->targets,
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
	daemon_timer_destroy(c->loop, c->tick_fd);
	syncd_cpg_destroy(c->cpg);
	if (c->probe != NULL) {
		qb_loop_poll_del(c->loop, probe_fd(c->probe));
		probe_destroy(c->probe);
	}
	hooks_stop(c);
	syncd_quorum_destroy(c->quorum);
	cluster_msg_destroy(c->msgs);
	membership_destroy(c->engine);
	if (c->link != NULL && c->link->inflight == 0)
		free(c->link);
	else if (c->link != NULL)
		c->link->c = NULL;      /* the last completion frees it */
	free(c->send_buf);
	free(c->vips);
	free(c);
}

/* The hook runner for a reloaded config: started, stopped or moved. */
static void
hooks_reload(struct syncd_cluster *c, const struct config *cfg, const struct config *old)
{
	if (cfg->hooks_dir[0] == '\0') {
		hooks_stop(c);
	} else if (c->hooks == NULL) {
		if (hooks_start(c, cfg) < 0)
			qb_log(LOG_ERR, "reload: cannot start the hooks of %s", cfg->hooks_dir);
	} else if (hooks_set(c->hooks, cfg->hooks_dir, cfg->hook_timeout_ms) < 0) {
		qb_log(LOG_ERR, "reload: hooks stay in %s", old->hooks_dir);
	}
}

int
syncd_cluster_set_config(struct syncd_cluster *c, const struct config *cfg)
{
	const struct config *old = c->cfg;

	/* the glue's ops read c->cfg: the engine's new tables index cfg */
	c->cfg = cfg;
	if (membership_set_config(c->engine, cfg, daemon_mono_ms()) < 0) {
		c->cfg = old;
		return -ENOMEM;
	}
	hooks_reload(c, cfg, old);
	return 0;
}

int
syncd_cluster_status(const struct syncd_cluster *c, struct wire_ctl_cluster *out)
{
	int rc = membership_status(c->engine, out);

	out->last_change_unix_ms = c->role_changed_unix_ms;
	return rc;
}

void
syncd_cluster_standby(struct syncd_cluster *c, bool on)
{
	membership_standby(c->engine, on, daemon_mono_ms());
}

/* The probes' durations as a cumulative histogram. */
static void
probe_durations(const struct probe_counters *pc, struct wire_probe_histogram *out)
{
	uint64_t run = 0;

	for (unsigned int i = 0; i < WIRE_PROBE_BUCKETS; i++) {
		run += pc->durations[i];
		out->cumulative[i] = run;
	}
	out->count = run + pc->durations[WIRE_PROBE_BUCKETS];
	out->sum_us = pc->duration_sum_us;
}

int
syncd_cluster_health_status(const struct syncd_cluster *c, uint32_t cursor,
			    struct wire_ctl_health_status *out)
{
	const struct probe_counters *pc = probe_counters(c->probe);
	uint32_t total;
	size_t room, n;

	membership_health_targets(c->engine, cursor, NULL, 0, &total);
	room = cursor < total ? total - cursor : 0;
	room = room < WIRE_HEALTH_PAGE_TARGETS ? room : WIRE_HEALTH_PAGE_TARGETS;
	*out = (struct wire_ctl_health_status){
		.node_id = c->cfg->node_id, .targets_total = total,
		.probes = pc->counts[PROBE_SUCCESSES] + pc->counts[PROBE_FAILURES],
		.failures = pc->counts[PROBE_FAILURES],
		.targets = calloc(room > 0 ? room : 1, sizeof(*out->targets)),
	};
	if (out->targets == NULL)
		return -ENOMEM;
	probe_durations(pc, &out->probe_duration);
	n = membership_health_targets(c->engine, cursor, out->targets, room, &total);
	for (size_t i = 0; i < n; i++) {
		struct wire_ctl_health_target *t = &out->targets[i];
		struct probe_stats st;

		if (probe_stats(c->probe, cursor + (uint32_t)i, &st) < 0)
			continue;       /* the probe ids are the engine's indexes */
		t->probes = st.probes;
		t->failures = st.failures;
		t->last_duration_us = st.last_duration_us;
	}
	out->n_targets = n;
	out->next_cursor = cursor + n < total ? cursor + (uint32_t)n : 0;
	return 0;
}

void
syncd_cluster_counters(const struct syncd_cluster *c, struct ipc_counter_list *l)
{
	const struct probe_counters *pc = probe_counters(c->probe);
	struct membership_summary s;

	membership_summary(c->engine, &s);
	ipc_counter_add(l, "cluster", "role", s.role == ROLES_ACTIVE);
	ipc_counter_add(l, "cluster", "members", s.members);
	ipc_counter_add(l, "cluster", "active_node", s.active_id);
	ipc_counter_add(l, "cluster", "quorate", s.quorate);
	ipc_counter_add(l, "cluster", "dataplane_alive", s.dataplane_alive);
	ipc_counter_add(l, "cluster", "owning", s.owning);
	ipc_counter_add(l, "cluster", "serving", s.serving);
	ipc_counter_add(l, "cluster", "ownership_state", s.ownership);
	ipc_counter_add(l, "cluster", "liveness_state", s.liveness);
	ipc_counter_add_array(l, "cluster", membership_counter_names,
			      membership_counters(c->engine), CLUSTER_COUNTER_MAX);
	ipc_counter_add(l, "health", "targets", pc->targets);
	ipc_counter_add(l, "health", "down_here", pc->down);
	ipc_counter_add(l, "health", "down_agreed", s.down_agreed);
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
	return membership_maglev_digest(c->engine);
}
