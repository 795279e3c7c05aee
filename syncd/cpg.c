/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's CPG link. See cpg.h. */
#include "syncd/cpg.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corosync/cpg.h>
#include <qb/qblog.h>

#include "lib/daemon.h"

const char *const syncd_cpg_counter_names[SYNCD_CPG_COUNTER_MAX] = {
#define SYNCD_CPG_NAME_(id, name, text) [SYNCD_CPG_##id] = #name,
	SYNCD_CPG_COUNTERS(SYNCD_CPG_NAME_)
#undef SYNCD_CPG_NAME_
};

enum {
	BACKOFF_MIN_MS = 100,
	BACKOFF_MAX_MS = 5000,
	WARN_EVERY_MS = 60000,          /* members_dropped, foreign_members:
					 * logged this often at most */
	DISPATCH_BUDGET_US = 2000,      /* deliveries taken per wake-up, at most */
};

struct warn_limit {
	bool given;
	uint32_t at_ms;
};

static_assert(CPG_VIEW_PROCS_MAX == CPG_MEMBERS_MAX, "a confchg list fits a trust table");

struct cpg_group {
	struct syncd_cpg *link;
	uint16_t index;
	struct cpg_name name;
	cpg_handle_t handle;
	int fd;
	bool connected;                 /* handle open, fd polled */
	bool joined;                    /* cpg_join() accepted */
	bool member;                    /* a confchg listed us */
	struct cpg_view_trust trust;    /* each node's trusted process, since
					 * this handle's join */
	uint32_t backoff_ms, failures;
	qb_loop_timer_handle timer;
	bool timer_armed;
};

struct syncd_cpg {
	qb_loop_t *loop;
	uint32_t node_id;
	struct syncd_cpg_ops ops;
	void *arg;
	uint32_t pid;
	struct cpg_group **groups;      /* by index; each its own allocation:
					 * CPG keeps a pointer to it */
	uint16_t n_groups;
	struct warn_limit dropped_warned, foreign_warned;
	uint64_t counters[SYNCD_CPG_COUNTER_MAX];
};

/*
 * The group whose handle cpg_dispatch() is dispatching. corosync calls
 * back only from within it, on this thread: a callback whose handle no
 * longer leads to a group is still counted on the right link.
 */
static struct cpg_group *dispatching;

static void schedule(struct cpg_group *g, uint32_t ms);

static bool
same_name(const struct cpg_name *a, const struct cpg_name *b)
{
	return a->length == b->length && memcmp(a->value, b->value, a->length) == 0;
}

/* The group of handle h, or NULL when corosync no longer knows h. */
static struct cpg_group *
group_of(cpg_handle_t h)
{
	struct cpg_group *g = NULL;

	if (cpg_context_get(h, (void **)&g) != CS_OK)
		return NULL;
	return g;
}

/*
 * The group a callback on h is for, or NULL (counted on the dispatching
 * link): h no longer leads to a group, or name is not the group's.
 */
static struct cpg_group *
group_route(cpg_handle_t h, const struct cpg_name *name)
{
	struct cpg_group *g = group_of(h);
	struct cpg_group *counted = g != NULL ? g : dispatching;

	if (counted == NULL)
		return NULL;    /* not from cpg_dispatch(): nothing to count on */
	if (!cpg_view_route(g != NULL, g != NULL && same_name(name, &g->name),
			    counted->link->counters))
		return NULL;
	return g;
}

static void
on_deliver(cpg_handle_t h, const struct cpg_name *name, uint32_t nodeid, uint32_t pid,
	   void *msg, size_t len)
{
	struct cpg_group *g = group_route(h, name);
	struct cpg_view_proc from = { .node = nodeid, .pid = pid };

	if (g != NULL && cpg_view_trust_check(&g->trust, from, g->link->counters))
		g->link->ops.deliver(g->link->arg, g->index, nodeid, msg, len);
}

/* Whether a warning limited by w may be given now; if so, it is. */
static bool
warn_due(struct warn_limit *w)
{
	uint32_t now = daemon_mono_ms();

	if (w->given && (uint32_t)(now - w->at_ms) < WARN_EVERY_MS)
		return false;
	w->given = true;
	w->at_ms = now;
	return true;
}

/* Warn of nodes left out of a view (of nodes in all), now and then. */
static void
dropped_log(struct cpg_group *g, size_t nodes)
{
	if (warn_due(&g->link->dropped_warned))
		qb_log(LOG_WARNING, "cpg %s: %zu member nodes, more than the %u a view "
		       "holds: the highest node ids are left out (members_dropped=%" PRIu64 ")",
		       g->name.value, nodes, (unsigned)REPL_MEMBERS_MAX,
		       g->link->counters[SYNCD_CPG_MEMBERS_DROPPED]);
}

/* Warn of a foreign member (the last of a change), now and then. */
static void
foreign_log(struct cpg_group *g, struct cpg_view_proc p)
{
	if (warn_due(&g->link->foreign_warned))
		qb_log(LOG_WARNING, "cpg %s: process %u joined as node %u, which another "
		       "process holds: its messages are dropped (foreign_members=%" PRIu64 ")",
		       g->name.value, p.pid, p.node,
		       g->link->counters[SYNCD_CPG_FOREIGN_MEMBERS]);
}

/* CPG's list as (node, pid) pairs, at most CPG_MEMBERS_MAX (all corosync lists). */
static size_t
procs_of(const struct cpg_address *a, size_t n, struct cpg_view_proc out[CPG_MEMBERS_MAX])
{
	size_t i;

	for (i = 0; i < n && i < CPG_MEMBERS_MAX; i++)
		out[i] = (struct cpg_view_proc){ .node = a[i].nodeid, .pid = a[i].pid };
	return i;
}

static void
on_confchg(cpg_handle_t h, const struct cpg_name *name,
	   const struct cpg_address *members, size_t n_members,
	   const struct cpg_address *left, size_t n_left,
	   const struct cpg_address *joined, size_t n_joined)
{
	struct cpg_group *g = group_route(h, name);
	struct cpg_view_proc procs[CPG_MEMBERS_MAX], joins[CPG_MEMBERS_MAX];
	struct cpg_view_proc self, last = { 0 };
	uint32_t nodes[CPG_MEMBERS_MAX], view[REPL_MEMBERS_MAX];
	uint64_t *counters;
	size_t listed, n, nj;
	uint64_t dropped, foreign;
	bool self_in = false, merged = false;

	(void)left;
	(void)n_left;
	if (g == NULL)
		return;
	counters = g->link->counters;
	self = (struct cpg_view_proc){ .node = g->link->node_id, .pid = g->link->pid };
	for (size_t i = 0; i < n_joined; i++)
		merged |= joined[i].reason == CPG_REASON_NODEUP;
	dropped = counters[SYNCD_CPG_MEMBERS_DROPPED];
	foreign = counters[SYNCD_CPG_FOREIGN_MEMBERS];
	n = procs_of(members, n_members, procs);
	nj = procs_of(joined, n_joined, joins);
	for (size_t i = 0; i < n; i++)
		self_in |= procs[i].node == self.node && procs[i].pid == self.pid;
	listed = cpg_view_trust_update(&g->trust, self, procs, n, joins, nj, nodes, &last,
				       counters);
	if (counters[SYNCD_CPG_FOREIGN_MEMBERS] != foreign)
		foreign_log(g, last);
	n = cpg_view_build(nodes, listed, view, counters);
	if (counters[SYNCD_CPG_MEMBERS_DROPPED] != dropped)
		dropped_log(g, n + (size_t)(counters[SYNCD_CPG_MEMBERS_DROPPED] - dropped));
	if (self_in != g->member)
		qb_log(LOG_INFO, "cpg %s: %s, %zu member node(s)", g->name.value,
		       self_in ? "joined" : "left", n);
	g->member = self_in;
	if (!self_in)
		cpg_view_trust_reset(&g->trust);        /* a join starts afresh */
	g->link->ops.members(g->link->arg, g->index, view, n, self_in, merged);
}

static void
lost(struct cpg_group *g, const char *why)
{
	if (!g->connected)
		return;
	g->connected = false;
	g->joined = false;
	g->link->counters[SYNCD_CPG_DISCONNECTS]++;
	cpg_view_trust_reset(&g->trust);        /* changes are missed until the join */
	qb_log(LOG_WARNING, "cpg %s: lost corosync (%s); reconnecting", g->name.value, why);
	qb_loop_poll_del(g->link->loop, g->fd);
	cpg_finalize(g->handle);
	if (g->member) {
		g->member = false;
		g->link->ops.members(g->link->arg, g->index, NULL, 0, false, false);
	}
	g->backoff_ms = BACKOFF_MIN_MS;
	schedule(g, g->backoff_ms);
}

static int32_t
on_fd(int32_t fd, int32_t revents, void *data)
{
	struct cpg_group *g = data, *outer;
	uint64_t start_us;
	cs_error_t rc;

	(void)fd;
	if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		lost(g, "connection closed");
		return 0;
	}
	/*
	 * One message at a time for DISPATCH_BUDGET_US at most: a ring that
	 * delivers as fast as they are applied would keep CS_DISPATCH_ALL
	 * from returning, and the loop from its timers and clients (seconds
	 * under saturation). libqb leaves the fd readable while events
	 * wait, so the rest comes at the next turn of the loop.
	 */
	outer = dispatching;
	dispatching = g;
	start_us = daemon_mono_us();
	do
		rc = cpg_dispatch(g->handle, CS_DISPATCH_ONE_NONBLOCKING);
	while (rc == CS_OK && g->connected && daemon_mono_us() - start_us < DISPATCH_BUDGET_US);
	dispatching = outer;
	if (rc != CS_OK && rc != CS_ERR_TRY_AGAIN && g->connected)
		lost(g, "dispatch failed");
	if (g->link->ops.dispatched != NULL)
		g->link->ops.dispatched(g->link->arg);
	return 0;
}

/* Open a handle and poll it. 0 or -errno. */
static int
group_connect(struct cpg_group *g)
{
	cpg_model_v1_data_t model = {
		.model = CPG_MODEL_V1,
		.cpg_deliver_fn = on_deliver,
		.cpg_confchg_fn = on_confchg,
	};
	unsigned int local = 0;

	if (cpg_model_initialize(&g->handle, CPG_MODEL_V1, (cpg_model_data_t *)&model,
				 g) != CS_OK)
		return -ECONNREFUSED;
	if (cpg_local_get(g->handle, &local) != CS_OK ||
	    cpg_fd_get(g->handle, &g->fd) != CS_OK) {
		cpg_finalize(g->handle);
		return -ECONNREFUSED;
	}
	if (local != g->link->node_id) {
		qb_log(LOG_ERR, "cpg: corosync's node id is %u but node.id is %u: "
		       "set them equal; not syncing", local, g->link->node_id);
		cpg_finalize(g->handle);
		return -EINVAL;
	}
	if (qb_loop_poll_add(g->link->loop, QB_LOOP_HIGH, g->fd, POLLIN, g, on_fd) != 0) {
		cpg_finalize(g->handle);
		return -ENOMEM;
	}
	g->connected = true;
	return 0;
}

/* Connect if needed, then join; retried from the timer until joined. */
static void
on_timer(void *data)
{
	struct cpg_group *g = data;
	struct syncd_cpg *link = g->link;
	cs_error_t rc;

	g->timer_armed = false;
	if (!g->connected) {
		if (group_connect(g) < 0) {
			link->counters[SYNCD_CPG_CONNECT_FAILURES]++;
			if (++g->failures == 1 || g->failures % 60 == 0)
				qb_log(LOG_WARNING, "cpg %s: corosync not reachable "
				       "(%u attempts)", g->name.value, g->failures);
			g->backoff_ms = g->backoff_ms * 2 > BACKOFF_MAX_MS ?
					BACKOFF_MAX_MS : g->backoff_ms * 2;
			schedule(g, g->backoff_ms);
			return;
		}
		link->counters[SYNCD_CPG_CONNECTS]++;
		g->failures = 0;
		g->backoff_ms = BACKOFF_MIN_MS;
	}
	rc = cpg_join(g->handle, &g->name);
	if (rc == CS_OK) {
		g->joined = true;
		qb_log(LOG_INFO, "cpg %s: connected to corosync, joining as node %u",
		       g->name.value, link->node_id);
	} else if (rc == CS_ERR_TRY_AGAIN) {
		schedule(g, BACKOFF_MIN_MS);
	} else {
		qb_log(LOG_ERR, "cpg %s: cannot join: error %d", g->name.value, rc);
		lost(g, "join refused");
	}
}

static void
schedule(struct cpg_group *g, uint32_t ms)
{
	if (g->timer_armed)
		return;
	if (qb_loop_timer_add(g->link->loop, QB_LOOP_LOW, (uint64_t)ms * 1000000ull, g,
			      on_timer, &g->timer) == 0)
		g->timer_armed = true;
}

static void
group_destroy(struct cpg_group *g)
{
	if (g == NULL)
		return;
	if (g->timer_armed)
		qb_loop_timer_del(g->link->loop, g->timer);
	if (g->connected) {
		if (g->joined) {
			qb_log(LOG_INFO, "cpg %s: leaving", g->name.value);
			cpg_leave(g->handle, &g->name);
		}
		qb_loop_poll_del(g->link->loop, g->fd);
		cpg_finalize(g->handle);
	}
	free(g);
}

struct syncd_cpg *
syncd_cpg_create(qb_loop_t *loop, uint32_t node_id, const struct syncd_cpg_ops *ops,
		 void *arg)
{
	struct syncd_cpg *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->loop = loop;
	c->node_id = node_id;
	c->ops = *ops;
	c->arg = arg;
	c->pid = (uint32_t)getpid();
	return c;
}

void
syncd_cpg_destroy(struct syncd_cpg *c)
{
	if (c == NULL)
		return;
	for (uint16_t i = 0; i < c->n_groups; i++)
		group_destroy(c->groups[i]);
	free(c->groups);
	free(c);
}

/* The group named nm among c's, or -1. */
static int
group_find(const struct syncd_cpg *c, const struct cpg_name *nm)
{
	for (uint16_t j = 0; j < c->n_groups; j++)
		if (c->groups[j] != NULL && same_name(&c->groups[j]->name, nm))
			return j;
	return -1;
}

int
syncd_cpg_set_groups(struct syncd_cpg *c, const char *const *names, uint16_t n)
{
	struct cpg_group **gs = calloc(n ? n : 1, sizeof(*gs));
	int *old = calloc(n ? n : 1, sizeof(*old));

	if (gs == NULL || old == NULL)
		goto fail;
	for (uint16_t i = 0; i < n; i++) {
		struct cpg_name nm = { 0 };

		nm.length = (uint32_t)snprintf(nm.value, sizeof(nm.value), "maglb:%s", names[i]);
		old[i] = group_find(c, &nm);
		if (old[i] >= 0)
			continue;
		gs[i] = calloc(1, sizeof(**gs));
		if (gs[i] == NULL)
			goto fail;
		gs[i]->link = c;
		gs[i]->name = nm;
		gs[i]->fd = -1;
		gs[i]->backoff_ms = BACKOFF_MIN_MS;
	}

	/* commit */
	for (uint16_t i = 0; i < n; i++) {
		if (old[i] >= 0) {
			gs[i] = c->groups[old[i]];      /* carried over */
			c->groups[old[i]] = NULL;
		} else {
			schedule(gs[i], 0);
		}
		gs[i]->index = i;
	}
	for (uint16_t j = 0; j < c->n_groups; j++)
		group_destroy(c->groups[j]);    /* no VIP of this node is in it */
	free(c->groups);
	free(old);
	c->groups = gs;
	c->n_groups = n;
	return 0;

fail:
	for (uint16_t i = 0; gs != NULL && i < n; i++)
		free(gs[i]);
	free(gs);
	free(old);
	return -ENOMEM;
}

int
syncd_cpg_send(struct syncd_cpg *c, uint16_t group, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };
	struct cpg_group *g;
	cs_error_t rc;

	if (group >= c->n_groups || !(g = c->groups[group])->member)
		return -ENOTCONN;
	rc = cpg_mcast_joined(g->handle, CPG_TYPE_AGREED, &iov, 1);
	if (rc == CS_OK)
		return 0;
	if (rc == CS_ERR_TRY_AGAIN) {
		c->counters[SYNCD_CPG_SEND_TRY_AGAIN]++;
		return -EAGAIN;
	}
	c->counters[SYNCD_CPG_SEND_ERRORS]++;
	if (rc == CS_ERR_LIBRARY || rc == CS_ERR_BAD_HANDLE)
		lost(g, "multicast failed");
	return -EIO;
}

const uint64_t *
syncd_cpg_counters(const struct syncd_cpg *c)
{
	return c->counters;
}
