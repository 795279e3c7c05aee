/* SPDX-License-Identifier: BSD-3-Clause */
/* votequorum for syncd. See quorum.h. */
#include "syncd/quorum.h"

#include <poll.h>
#include <stdlib.h>

#include <corosync/cmap.h>
#include <corosync/votequorum.h>
#include <qb/qblog.h>

enum {
	BACKOFF_MIN_MS = 100,
	BACKOFF_MAX_MS = 5000,
	DEVICE_TIMEOUT_DEFAULT_MS = 10000,      /* votequorum(5)'s quorum.device.timeout */
};

struct syncd_quorum {
	qb_loop_t *loop;
	void (*changed)(void *arg, bool quorate);
	void *arg;
	votequorum_handle_t handle;
	int fd;
	bool connected;
	bool quorate;
	uint32_t device_timeout_ms;     /* quorum.device.timeout; 0: no device */
	uint32_t retry_at_ms, backoff_ms;
	bool logged_failure;
};

static void
set_quorate(struct syncd_quorum *q, bool quorate)
{
	if (quorate == q->quorate)
		return;
	q->quorate = quorate;
	qb_log(LOG_INFO, "quorum %s", quorate ? "gained" : "lost");
	q->changed(q->arg, quorate);
}

static void
on_quorum(votequorum_handle_t h, uint64_t context, uint32_t quorate, uint32_t n,
	  votequorum_node_t nodes[])
{
	struct syncd_quorum *q = NULL;

	(void)context;
	(void)n;
	(void)nodes;
	if (votequorum_context_get(h, (void **)&q) == CS_OK && q != NULL)
		set_quorate(q, quorate != 0);
}

static void
disconnect(struct syncd_quorum *q)
{
	if (!q->connected)
		return;
	qb_loop_poll_del(q->loop, q->fd);
	votequorum_finalize(q->handle);
	q->connected = false;
	set_quorate(q, false);
}

static int32_t
on_readable(int32_t fd, int32_t revents, void *arg)
{
	struct syncd_quorum *q = arg;

	(void)fd;
	if ((revents & (POLLERR | POLLHUP)) != 0 ||
	    votequorum_dispatch(q->handle, CS_DISPATCH_ALL) != CS_OK) {
		qb_log(LOG_WARNING, "votequorum: lost corosync; reconnecting");
		disconnect(q);
		q->backoff_ms = BACKOFF_MIN_MS;
	}
	return 0;
}

struct syncd_quorum *
syncd_quorum_create(qb_loop_t *loop, void (*changed)(void *arg, bool quorate), void *arg)
{
	struct syncd_quorum *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->loop = loop;
	q->changed = changed;
	q->arg = arg;
	q->fd = -1;
	q->backoff_ms = BACKOFF_MIN_MS;
	return q;
}

void
syncd_quorum_destroy(struct syncd_quorum *q)
{
	if (q == NULL)
		return;
	if (q->connected) {
		qb_loop_poll_del(q->loop, q->fd);
		votequorum_finalize(q->handle);
	}
	free(q);
}

/*
 * quorum.device.timeout from corosync's cmap when a quorum device is
 * configured (quorum.device.model set), DEVICE_TIMEOUT_DEFAULT_MS when it
 * names none (votequorum(5)); 0 without a device.
 */
static uint32_t
device_timeout(void)
{
	cmap_handle_t h;
	char *model = NULL;
	uint32_t ms = DEVICE_TIMEOUT_DEFAULT_MS;

	if (cmap_initialize(&h) != CS_OK)
		return 0;
	if (cmap_get_string(h, "quorum.device.model", &model) != CS_OK) {
		cmap_finalize(h);
		return 0;
	}
	free(model);
	if (cmap_get_uint32(h, "quorum.device.timeout", &ms) != CS_OK)
		ms = DEVICE_TIMEOUT_DEFAULT_MS;
	cmap_finalize(h);
	return ms;
}

void
syncd_quorum_poll(struct syncd_quorum *q, uint32_t now_ms)
{
	votequorum_callbacks_t cb = { .votequorum_quorum_notify_fn = on_quorum };
	cs_error_t rc;

	if (q->connected || (int32_t)(now_ms - q->retry_at_ms) < 0)
		return;
	rc = votequorum_initialize(&q->handle, &cb);
	if (rc == CS_OK) {
		votequorum_context_set(q->handle, q);
		rc = votequorum_fd_get(q->handle, &q->fd);
		if (rc == CS_OK)
			rc = votequorum_trackstart(q->handle, 0, CS_TRACK_CHANGES | CS_TRACK_CURRENT);
		if (rc == CS_OK &&
		    qb_loop_poll_add(q->loop, QB_LOOP_HIGH, q->fd, POLLIN, q, on_readable) != 0)
			rc = CS_ERR_LIBRARY;
		if (rc != CS_OK)
			votequorum_finalize(q->handle);
	}
	if (rc != CS_OK) {
		if (!q->logged_failure)
			qb_log(LOG_WARNING, "votequorum: cannot connect to corosync (error %d); "
			       "retrying", rc);
		q->logged_failure = true;
		q->retry_at_ms = now_ms + q->backoff_ms;
		q->backoff_ms = q->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
				q->backoff_ms * 2;
		return;
	}
	q->connected = true;
	q->logged_failure = false;
	q->backoff_ms = BACKOFF_MIN_MS;
	q->device_timeout_ms = device_timeout();
	qb_log(LOG_INFO, "votequorum: connected%s", q->device_timeout_ms > 0 ?
	       ", with a quorum device" : "");
	/* CS_TRACK_CURRENT delivers the flag at the next dispatch */
}

bool
syncd_quorum_quorate(const struct syncd_quorum *q)
{
	return q->quorate;
}

void
syncd_quorum_refresh(struct syncd_quorum *q)
{
	struct votequorum_info info;

	/* node id 0: this node */
	if (q->connected && votequorum_getinfo(q->handle, 0, &info) == CS_OK)
		set_quorate(q, (info.flags & VOTEQUORUM_INFO_QUORATE) != 0);
}

uint32_t
syncd_quorum_device_timeout_ms(const struct syncd_quorum *q)
{
	return q->device_timeout_ms;
}
