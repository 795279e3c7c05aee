/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's CPG link. See cpg.h. */
#include "syncd/cpg.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corosync/cpg.h>
#include <qb/qblog.h>

#include "syncd/repl.h"

const char *const syncd_cpg_counter_names[SYNCD_CPG_COUNTER_MAX] = {
#define SYNCD_CPG_NAME_(id, name, text) [SYNCD_CPG_##id] = #name,
	SYNCD_CPG_COUNTERS(SYNCD_CPG_NAME_)
#undef SYNCD_CPG_NAME_
};

enum {
	BACKOFF_MIN_MS = 100,
	BACKOFF_MAX_MS = 5000,
};

struct cpg_group {
	struct syncd_cpg *link;
	uint16_t index;
	struct cpg_name name;
	cpg_handle_t handle;
	int fd;
	bool connected;                 /* handle open, fd polled */
	bool joined;                    /* cpg_join() accepted */
	bool member;                    /* a confchg listed us */
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
	uint64_t counters[SYNCD_CPG_COUNTER_MAX];
};

static void schedule(struct cpg_group *g, uint32_t ms);

static struct cpg_group *
group_of(cpg_handle_t h)
{
	struct cpg_group *g = NULL;

	cpg_context_get(h, (void **)&g);
	return g;
}

static bool
same_name(const struct cpg_name *a, const struct cpg_name *b)
{
	return a->length == b->length && memcmp(a->value, b->value, a->length) == 0;
}

static void
on_deliver(cpg_handle_t h, const struct cpg_name *name, uint32_t nodeid, uint32_t pid,
	   void *msg, size_t len)
{
	struct cpg_group *g = group_of(h);

	(void)pid;
	if (g == NULL)
		return;
	if (!same_name(name, &g->name)) {
		g->link->counters[SYNCD_CPG_FOREIGN_GROUP]++;
		return;
	}
	g->link->ops.deliver(g->link->arg, g->index, nodeid, msg, len);
}

static void
on_confchg(cpg_handle_t h, const struct cpg_name *name,
	   const struct cpg_address *members, size_t n_members,
	   const struct cpg_address *left, size_t n_left,
	   const struct cpg_address *joined, size_t n_joined)
{
	struct cpg_group *g = group_of(h);
	uint32_t ids[REPL_MEMBERS_MAX];
	size_t n = 0;
	bool self_in = false;

	bool merged = false;

	(void)left;
	(void)n_left;
	if (g == NULL || !same_name(name, &g->name))
		return;
	for (size_t i = 0; i < n_joined; i++)
		merged |= joined[i].reason == CPG_REASON_NODEUP;
	for (size_t i = 0; i < n_members; i++) {
		bool seen = false;

		if (members[i].nodeid == g->link->node_id && members[i].pid == g->link->pid)
			self_in = true;
		for (size_t j = 0; j < n; j++)
			seen |= ids[j] == members[i].nodeid;
		if (!seen && n < REPL_MEMBERS_MAX)
			ids[n++] = members[i].nodeid;
	}
	if (self_in != g->member)
		qb_log(LOG_INFO, "cpg %s: %s, %zu member node(s)", g->name.value,
		       self_in ? "joined" : "left", n);
	g->member = self_in;
	g->link->ops.members(g->link->arg, g->index, ids, n, self_in, merged);
}

static void
lost(struct cpg_group *g, const char *why)
{
	if (!g->connected)
		return;
	g->connected = false;
	g->joined = false;
	g->link->counters[SYNCD_CPG_DISCONNECTS]++;
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
	struct cpg_group *g = data;
	cs_error_t rc;

	(void)fd;
	if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		lost(g, "connection closed");
		return 0;
	}
	rc = cpg_dispatch(g->handle, CS_DISPATCH_ALL);
	if (rc != CS_OK && rc != CS_ERR_TRY_AGAIN)
		lost(g, "dispatch failed");
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
