/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client of maglb's libqb IPC endpoints; the framing and the limits are
 * ipc.h's.
 */
#include "lib/ipc_client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <qb/qbipcc.h>
#include <qb/qblog.h>

#include "lib/ipc.h"

struct ipc_client {
	qb_ipcc_connection_t *qb;
	char service[WIRE_NAME_MAX];
	uint64_t next_request_id;
	struct wire_counters wire;
	uint8_t *buf;  /* IPC_MSG_MAX: one message in or out */
};

/* libqb's errno for a failed connect or exchange, as this library's. */
static int
ipc_client_errno(int err)
{
	switch (err) {
	case ECONNREFUSED:
	case ENOENT:
		return -ECONNREFUSED;
	case EACCES:
	case EPERM:
		return -EACCES;
	case ENOTCONN:
	case ESHUTDOWN:
	case ECONNRESET:
	case EPIPE:
	case EBADF:
		return -ENOTCONN;
	case ETIMEDOUT:
	case EAGAIN:
		return -ETIMEDOUT;
	case 0:
		return -EIO;
	default:
		return -err;
	}
}

int
ipc_client_connect(const char *service, struct ipc_client **out)
{
	struct ipc_client *c;
	int rc;

	if (service == NULL)
		service = IPC_SERVICE_DATAPLANE;
	if (service[0] == '\0' || strlen(service) >= sizeof(c->service))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->buf = malloc(IPC_MSG_MAX);
	if (c->buf == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(c->service, sizeof(c->service), "%s", service);
	c->next_request_id = 1;
	errno = 0;
	c->qb = qb_ipcc_connect(service, IPC_MSG_MAX);
	if (c->qb == NULL) {
		rc = ipc_client_errno(errno);
		goto fail;
	}
	*out = c;
	return 0;

fail:
	free(c->buf);
	free(c);
	return rc;
}

void
ipc_client_close(struct ipc_client *c)
{
	if (c == NULL)
		return;
	if (c->qb != NULL)
		qb_ipcc_disconnect(c->qb);
	free(c->buf);
	free(c);
}

static int64_t
ipc_client_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
ipc_client_now_ms(void)
{
	return ipc_client_now_us() / 1000;
}

/* Milliseconds left before deadline (-1: none), at least 0. */
static int
ipc_client_left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - ipc_client_now_ms();
	return left < 0 ? 0 : (int)left;
}

/* Check the libqb header of the n bytes at buf and decode what follows. */
static int
ipc_decode(const uint8_t *buf, ssize_t n, struct wire_ctl_msg *m,
	   struct wire_counters *wire)
{
	ssize_t len = n < 0 ? -EBADMSG : ipc_frame_check(IPC_RESPONSE, buf,
							 (size_t)n);

	if (len < 0 || wire_ctl_decode(buf + ipc_header_len(IPC_RESPONSE),
				       (size_t)len, m, wire) < 0)
		return -EBADMSG;
	return 0;
}

static int
ipc_client_send(struct ipc_client *c, const struct wire_ctl_msg *req,
		uint64_t id)
{
	struct wire_ctl_msg m = *req;
	ssize_t n, sent;

	m.version = WIRE_VERSION;
	m.request_id = id;
	n = ipc_frame(IPC_REQUEST, &m, c->buf);
	if (n < 0)
		return (int)n;
	sent = qb_ipcc_send(c->qb, c->buf, (size_t)n);
	if (sent == n)
		return 0;
	return ipc_client_errno(sent < 0 ? (int)-sent : EIO);
}

int
ipc_client_request(struct ipc_client *c, const struct wire_ctl_msg *req,
		   struct wire_ctl_msg *resp, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 :
			   ipc_client_now_ms() + timeout_ms;
	uint64_t id = c->next_request_id++;
	int rc;

	rc = ipc_client_send(c, req, id);
	if (rc < 0)
		return rc;
	for (;;) {
		struct wire_ctl_msg m;
		ssize_t n;

		n = qb_ipcc_recv(c->qb, c->buf, IPC_MSG_MAX,
				 ipc_client_left_ms(deadline));
		if (n < 0) {
			rc = ipc_client_errno((int)-n);
			if (rc == -ETIMEDOUT && ipc_client_left_ms(deadline) != 0)
				continue;
			return rc;
		}
		rc = ipc_decode(c->buf, n, &m, &c->wire);
		if (rc < 0)
			return rc;
		/* an ERROR with id 0: the server could not read our id */
		if (m.request_id == id ||
		    (m.request_id == 0 && m.kind == WIRE_CTL_ERROR)) {
			*resp = m;
			return 0;
		}
		wire_ctl_msg_free(&m);  /* the late answer to a timed-out one */
	}
}

int
ipc_client_event_recv(struct ipc_client *c, struct wire_ctl_msg *m,
		      int timeout_ms)
{
	ssize_t n;

	n = qb_ipcc_event_recv(c->qb, c->buf, IPC_MSG_MAX, timeout_ms);
	if (n == -EAGAIN || n == -ETIMEDOUT)
		return -EAGAIN;
	if (n < 0)
		return ipc_client_errno((int)-n);
	return ipc_decode(c->buf, n, m, &c->wire);
}

int
ipc_client_fd(struct ipc_client *c)
{
	int32_t fd = -1;
	int32_t rc = qb_ipcc_fd_get(c->qb, &fd);

	return rc < 0 ? rc : fd;
}

const char *
ipc_client_service(const struct ipc_client *c)
{
	return c->service;
}

const struct wire_counters *
ipc_client_wire_counters(const struct ipc_client *c)
{
	return &c->wire;
}

/* The program that serves service, for maglb's own services; else NULL. */
static const char *
ipc_service_program(const char *service)
{
	static const char *const programs[] = {
		IPC_SERVICE_DATAPLANE,  /* each named after its program */
		IPC_SERVICE_SYNCD,
	};

	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		if (strcmp(service, programs[i]) == 0)
			return programs[i];
	return NULL;
}

const char *
ipc_strerror(int rc, const char *service, char *buf, size_t len)
{
	const char *prog;
	char by[WIRE_NAME_MAX + 16] = "";

	if (service == NULL)
		service = IPC_SERVICE_DATAPLANE;
	prog = ipc_service_program(service);
	if (prog != NULL)
		snprintf(by, sizeof(by), " (%s serves it)", prog);
	switch (-rc) {
	case ECONNREFUSED:
		snprintf(buf, len, "service %s is not running%s", service, by);
		break;
	case ENOTCONN:
		snprintf(buf, len, "service %s closed the connection%s", service,
			 by);
		break;
	case EACCES:
		snprintf(buf, len, "permission denied by service %s%s: run as "
			 "root or as a member of the maglb group", service, by);
		break;
	case ETIMEDOUT:
		snprintf(buf, len, "service %s did not answer in time%s",
			 service, by);
		break;
	case EBADMSG:
		snprintf(buf, len, "service %s sent an answer that does not "
			 "decode%s", service, by);
		break;
	default:
		snprintf(buf, len, "service %s: %s", service, strerror(-rc));
		break;
	}
	return buf;
}

/* --------------------------------------------------------- async client */

const char *const ipc_async_counter_names[IPC_ASYNC_COUNTER_MAX] = {
#define IPC_ASYNC_COUNTER_NAME_(id, name, text) [IPC_ASYNC_##id] = #name,
	IPC_ASYNC_COUNTERS(IPC_ASYNC_COUNTER_NAME_)
#undef IPC_ASYNC_COUNTER_NAME_
};

const char *const ipc_async_counter_descriptions[IPC_ASYNC_COUNTER_MAX] = {
#define IPC_ASYNC_COUNTER_TEXT_(id, name, text) [IPC_ASYNC_##id] = text,
	IPC_ASYNC_COUNTERS(IPC_ASYNC_COUNTER_TEXT_)
#undef IPC_ASYNC_COUNTER_TEXT_
};

enum ipc_async_state {
	IPC_ASYNC_DOWN,         /* a retry timer is armed */
	IPC_ASYNC_CONNECTING,   /* connect_async() done, its fd polled */
	IPC_ASYNC_UP,
};

/* A request in flight; id 0: a free slot. */
struct ipc_async_slot {
	uint64_t id;
	uint64_t deadline_ms;
	unsigned bulk;                  /* its entries in the bulk lane, 0 none */
	ipc_done_fn done;
	void *arg;
};

/*
 * The bulk lane (ipc_client.h): what is in flight, and the server's time per
 * entry, measured over the time bulk requests were in flight (the server
 * had bulk work queued) against the entries it answered meanwhile.
 */
struct ipc_async_lane {
	unsigned requests, entries;     /* bulk in flight */
	uint64_t mark_us;               /* busy since, or the last answer */
	uint64_t busy_us;               /* busy time of the current sample */
	unsigned answered;              /* entries answered in it */
	uint64_t ns_per_entry;          /* the estimate; 0 none yet */
};

struct ipc_async {
	qb_loop_t *loop;
	char service[WIRE_NAME_MAX];
	struct ipc_async_ops ops;
	void *arg;
	enum ipc_async_state state;
	qb_ipcc_connection_t *qb;
	int fd;                         /* polled while connecting or up */
	int tfd;                        /* timerfd: responses, timeouts */
	qb_loop_timer_handle retry;     /* connect attempts (DOWN) */
	qb_loop_timer_handle fail;      /* a send saw the connection gone */
	bool retry_armed, poll_armed, fail_armed;
	unsigned retry_ms;              /* the next attempt's delay */
	unsigned attempts;              /* failed since the last connect */
	bool fell;                      /* down() said since the last up() */
	bool said_still_down;           /* logged once the delays are at max */
	unsigned depth;                 /* callbacks of ours on the stack */
	bool dead;                      /* destroyed: freed at depth 0 */
	uint64_t next_id;
	unsigned inflight;
	struct ipc_async_lane lane;
	struct ipc_async_slot slots[IPC_ASYNC_WINDOW];
	struct ipc_async_counters counters;
	uint8_t *buf;                   /* IPC_MSG_MAX: one message in or out */
};

static void ipc_async_connect(void *data);

/* Entries the lane may hold now: one sample's worth until measured. */
static unsigned
ipc_async_lane_limit(const struct ipc_async_lane *l)
{
	uint64_t n;

	if (l->ns_per_entry == 0)
		return IPC_ASYNC_BULK_SAMPLE;
	n = (uint64_t)IPC_ASYNC_BULK_AHEAD_MS * 1000000 / l->ns_per_entry;
	return n < IPC_ASYNC_BULK_ENTRIES_MAX ? (unsigned)n : IPC_ASYNC_BULK_ENTRIES_MAX;
}

/* Whether a bulk request of entries fits the lane now. */
static bool
ipc_async_lane_fits(const struct ipc_async_lane *l, unsigned entries)
{
	unsigned limit = ipc_async_lane_limit(l);

	if (l->requests == 0)
		return true;    /* one of any size: it cannot wait for more room */
	return l->requests < IPC_ASYNC_BULK_REQUESTS && l->entries <= limit &&
	       entries <= limit - l->entries;
}

static void
ipc_async_lane_sent(struct ipc_async_lane *l, unsigned entries)
{
	if (l->requests == 0)
		l->mark_us = (uint64_t)ipc_client_now_us();
	l->requests++;
	l->entries += entries;
}

/*
 * A bulk request of entries left the lane, answered (ok) or failed. An
 * answer closes a stretch of busy time; every IPC_ASYNC_BULK_SAMPLE
 * entries answered make a sample, which replaces a lower estimate at once
 * (a server slowing down shrinks the lane now) and moves a higher one
 * half of the way (it grows back over a few samples).
 */
static void
ipc_async_lane_done(struct ipc_async_lane *l, unsigned entries, bool ok)
{
	uint64_t now = (uint64_t)ipc_client_now_us(), sample;

	l->requests--;
	l->entries -= entries;
	if (!ok)
		return;
	l->busy_us += now - l->mark_us;
	l->mark_us = now;
	l->answered += entries;
	if (l->answered < IPC_ASYNC_BULK_SAMPLE)
		return;
	sample = l->busy_us * 1000 / l->answered;
	sample = sample > 0 ? sample : 1;
	if (l->ns_per_entry == 0 || sample > l->ns_per_entry)
		l->ns_per_entry = sample;
	else
		l->ns_per_entry = (l->ns_per_entry + sample) / 2;
	l->busy_us = 0;
	l->answered = 0;
}

static uint64_t
ipc_async_now_ms(void)
{
	return (uint64_t)ipc_client_now_ms();
}

static void
ipc_async_timer(struct ipc_async *a, qb_loop_timer_handle *h, bool *armed,
		unsigned ms, qb_loop_timer_dispatch_fn fn)
{
	if (*armed)
		return;
	*armed = qb_loop_timer_add(a->loop, QB_LOOP_HIGH,
				   (uint64_t)ms * 1000000, a, fn, h) == 0;
}

static void
ipc_async_timer_del(struct ipc_async *a, qb_loop_timer_handle h, bool *armed)
{
	if (*armed)
		qb_loop_timer_del(a->loop, h);
	*armed = false;
}

/*
 * Entry and exit of every loop callback: a user callback may destroy a,
 * which is then freed by the outermost exit.
 */
static void
ipc_async_enter(struct ipc_async *a)
{
	a->depth++;
}

static void
ipc_async_free(struct ipc_async *a)
{
	if (a->tfd >= 0) {
		qb_loop_poll_del(a->loop, a->tfd);
		close(a->tfd);
	}
	free(a->buf);
	free(a);
}

static void
ipc_async_leave(struct ipc_async *a)
{
	if (--a->depth == 0 && a->dead)
		ipc_async_free(a);
}

/* Free the slot, then done(): it may send (into the slot) or destroy a. */
static void
ipc_async_finish(struct ipc_async *a, struct ipc_async_slot *slot, int rc,
		 const struct wire_ctl_msg *m)
{
	struct ipc_async_slot s = *slot;

	slot->id = 0;
	a->inflight--;
	if (s.bulk > 0)
		ipc_async_lane_done(&a->lane, s.bulk, rc == 0);
	s.done(s.arg, rc, m);
}

/*
 * done(rc) for each request in flight, or only those past their deadline
 * at *now; each one counted in counter (IPC_ASYNC_COUNTER_MAX: none).
 */
static void
ipc_async_fail(struct ipc_async *a, int rc, const uint64_t *now,
	       enum ipc_async_counter counter)
{
	for (unsigned i = 0; i < IPC_ASYNC_WINDOW; i++) {
		const struct ipc_async_slot *s = &a->slots[i];

		if (s->id == 0 ||
		    (now != NULL && (int64_t)(*now - s->deadline_ms) < 0))
			continue;
		if (counter != IPC_ASYNC_COUNTER_MAX)
			a->counters.counts[counter]++;
		ipc_async_finish(a, &a->slots[i], rc, NULL);
	}
}

/*
 * Arm (or disarm) the response poll: a one-shot timerfd, not a qb_loop
 * timer, since qb_loop waits for a timer's last millisecond with
 * epoll_wait(0) in a loop (libqb 2.0 rounds it down to 0 ms): a 1 ms qb
 * timer kept the client's core 40 % busy while a request was in flight.
 */
static void
ipc_async_poll_arm(struct ipc_async *a, bool on)
{
	struct itimerspec its = {
		.it_value.tv_nsec = on ? IPC_ASYNC_POLL_US * 1000 : 0,
	};

	if (a->poll_armed == on)
		return;
	a->poll_armed = on && timerfd_settime(a->tfd, 0, &its, NULL) == 0;
	if (!on)
		(void)timerfd_settime(a->tfd, 0, &its, NULL);
}

/* Drop the libqb connection, if any, and its descriptor's poll. */
static void
ipc_async_close(struct ipc_async *a)
{
	if (a->fd >= 0)
		qb_loop_poll_del(a->loop, a->fd);
	a->fd = -1;
	if (a->qb != NULL)
		qb_ipcc_disconnect(a->qb);
	a->qb = NULL;
	ipc_async_poll_arm(a, false);
	ipc_async_timer_del(a, a->fail, &a->fail_armed);
}

/* Arm the next attempt, the delay doubling up to its cap. */
static void
ipc_async_retry_later(struct ipc_async *a)
{
	a->state = IPC_ASYNC_DOWN;
	ipc_async_timer(a, &a->retry, &a->retry_armed, a->retry_ms,
			ipc_async_connect);
	a->retry_ms = a->retry_ms * 2 < IPC_ASYNC_RETRY_MAX_MS ?
		      a->retry_ms * 2 : IPC_ASYNC_RETRY_MAX_MS;
}

/* An attempt failed (err: -errno): log and tell on a fall only. */
static void
ipc_async_connect_failed(struct ipc_async *a, int err)
{
	char text[WIRE_TEXT_MAX];

	a->counters.counts[IPC_ASYNC_CONNECT_FAILURES]++;
	a->attempts++;
	a->fd = -1;
	a->qb = NULL;
	ipc_async_retry_later(a);
	if (!a->fell) {
		qb_log(LOG_WARNING, "ipc %s: %s; retrying", a->service,
		       ipc_strerror(err, a->service, text, sizeof(text)));
	} else if (a->retry_ms == IPC_ASYNC_RETRY_MAX_MS && !a->said_still_down) {
		a->said_still_down = true;
		qb_log(LOG_WARNING, "ipc %s: still down after %u attempts (%s); "
		       "retrying every %u ms", a->service, a->attempts,
		       strerror(-err), IPC_ASYNC_RETRY_MAX_MS);
	}
	if (!a->fell) {
		a->fell = true;
		if (a->ops.down != NULL)
			a->ops.down(a->arg, err);
	}
}

/*
 * The connection is gone: fail what is in flight, tell, then close and
 * retry soon. Told before the close: libqb's disconnect waits, in 10 ms
 * sleeps, until the server's process is gone (reaped), and a caller acts
 * on the loss (syncd withdraws the node) without that wait.
 */
static void
ipc_async_lost(struct ipc_async *a, int err)
{
	char text[WIRE_TEXT_MAX];

	if (a->state != IPC_ASYNC_UP)
		return;
	a->state = IPC_ASYNC_DOWN;      /* sends refused from here on */
	a->counters.counts[IPC_ASYNC_DISCONNECTS]++;
	a->retry_ms = IPC_ASYNC_RETRY_MIN_MS;
	a->attempts = 0;
	a->said_still_down = false;
	qb_log(LOG_WARNING, "ipc %s: connection lost: %s; reconnecting",
	       a->service, ipc_strerror(err, a->service, text, sizeof(text)));
	ipc_async_fail(a, -ENOTCONN, NULL, IPC_ASYNC_ABORTED);
	if (!a->dead && !a->fell) {
		a->fell = true;
		if (a->ops.down != NULL)
			a->ops.down(a->arg, err);
	}
	ipc_async_close(a);     /* after a destroy in a callback: a no-op */
	if (!a->dead)
		ipc_async_retry_later(a);
}

static struct ipc_async_slot *
ipc_async_slot_of(struct ipc_async *a, uint64_t id)
{
	for (unsigned i = 0; i < IPC_ASYNC_WINDOW; i++)
		if (a->slots[i].id == id && id != 0)
			return &a->slots[i];
	return NULL;
}

/* One decoded response: its request's done(), or counted as late. */
static void
ipc_async_answer(struct ipc_async *a, const struct wire_ctl_msg *m)
{
	struct ipc_async_slot *slot = ipc_async_slot_of(a, m->request_id);

	if (slot == NULL) {
		a->counters.counts[IPC_ASYNC_LATE]++;
		return;
	}
	a->counters.counts[IPC_ASYNC_RESPONSES]++;
	if (m->kind == WIRE_CTL_ERROR && m->error.code != 0)
		a->counters.counts[IPC_ASYNC_ERRORS]++;
	ipc_async_finish(a, slot, 0, m);
}

/*
 * Take every response (events false) waiting, or up to
 * IPC_ASYNC_EVENTS_PER_WAKE events for IPC_ASYNC_WAKE_US at most, never
 * blocking (timeout 0): a server that keeps the event ring full (the
 * dataplane's export stream under a flood) must not keep the loop from
 * its other work (CPG, timers, the daemon's own clients): the rest waits
 * for the next wake-up, the poll timer's at the latest. Returns 0, 1 when
 * the budget ran out, or the -errno of a lost connection.
 */
static int
ipc_async_drain(struct ipc_async *a, bool events)
{
	unsigned budget = events ? IPC_ASYNC_EVENTS_PER_WAKE : UINT_MAX;
	int64_t until = events ? ipc_client_now_us() + IPC_ASYNC_WAKE_US : INT64_MAX;
	bool more = false;

	while (!a->dead && a->state == IPC_ASYNC_UP) {
		struct wire_ctl_msg m;
		ssize_t n;

		if (budget-- == 0 || (events && ipc_client_now_us() >= until)) {
			more = events;
			break;
		}
		n = events ? qb_ipcc_event_recv(a->qb, a->buf, IPC_MSG_MAX, 0) :
			     qb_ipcc_recv(a->qb, a->buf, IPC_MSG_MAX, 0);
		if (n == -ETIMEDOUT || n == -EAGAIN)
			return 0;
		if (n < 0)
			return ipc_client_errno((int)-n);
		if (ipc_decode(a->buf, n, &m, &a->counters.wire) < 0) {
			a->counters.counts[IPC_ASYNC_BAD_MESSAGES]++;
			continue;
		}
		if (!events) {
			ipc_async_answer(a, &m);
		} else {
			a->counters.counts[IPC_ASYNC_EVENTS]++;
			if (a->ops.event != NULL)
				a->ops.event(a->arg, &m);
		}
		wire_ctl_msg_free(&m);
	}
	return more && !a->dead && a->state == IPC_ASYNC_UP ? 1 : 0;
}

/* Requests past their deadline get done(-ETIMEDOUT). */
static void
ipc_async_expire(struct ipc_async *a)
{
	uint64_t now = ipc_async_now_ms();

	ipc_async_fail(a, -ETIMEDOUT, &now, IPC_ASYNC_TIMEOUTS);
}

/* After any exchange: poll again soon while anything is in flight, or
 * events are left over. */
static void
ipc_async_rearm(struct ipc_async *a, bool more)
{
	if (!a->dead && a->state == IPC_ASYNC_UP && (a->inflight > 0 || more))
		ipc_async_poll_arm(a, true);
}

/* Responses, then events; a lost connection once both rings are read. */
static void
ipc_async_service_rings(struct ipc_async *a, bool hangup)
{
	int rc = ipc_async_drain(a, false);
	bool more = false;

	if (rc == 0) {
		rc = ipc_async_drain(a, true);
		more = rc == 1;
		rc = rc == 1 ? 0 : rc;
	}
	if (rc == 0 && hangup)
		rc = -ENOTCONN;
	if (rc < 0 && !a->dead)
		ipc_async_lost(a, rc);
	if (!a->dead)
		ipc_async_expire(a);
	ipc_async_rearm(a, more);
}

/* A loop callback's body: armed, its timer's flag, has fired. */
static void
ipc_async_wake(struct ipc_async *a, bool *armed, bool hangup)
{
	ipc_async_enter(a);
	if (armed != NULL)
		*armed = false;
	ipc_async_service_rings(a, hangup);
	ipc_async_leave(a);
}

static int32_t
ipc_async_on_poll(int32_t fd, int32_t revents, void *data)
{
	struct ipc_async *a = data;
	uint64_t expired;

	(void)revents;
	if (read(fd, &expired, sizeof(expired)) < 0 && errno != EAGAIN)
		return 0;
	ipc_async_wake(a, &a->poll_armed, false);
	return 0;
}

static int32_t
ipc_async_on_fd(int32_t fd, int32_t revents, void *data)
{
	(void)fd;
	ipc_async_wake(data, NULL, (revents & (POLLHUP | POLLERR | POLLNVAL)) != 0);
	return 0;
}

/* A send saw the connection gone: handle it here, not inside the send. */
static void
ipc_async_on_fail(void *data)
{
	struct ipc_async *a = data;

	ipc_async_wake(a, &a->fail_armed, true);
}

/* The server answered the connect: finish it, then up(). */
static int32_t
ipc_async_on_connect(int32_t fd, int32_t revents, void *data)
{
	struct ipc_async *a = data;
	int32_t rc;

	(void)revents;
	ipc_async_enter(a);
	qb_loop_poll_del(a->loop, fd);
	rc = qb_ipcc_connect_continue(a->qb);   /* frees it on failure */
	if (rc != 0) {
		ipc_async_connect_failed(a, ipc_client_errno(-rc));
		goto out;
	}
	if (qb_ipcc_fd_get(a->qb, &a->fd) != 0 ||
	    qb_loop_poll_add(a->loop, QB_LOOP_HIGH, a->fd, POLLIN | POLLPRI, a,
			     ipc_async_on_fd) != 0) {
		a->fd = -1;
		qb_ipcc_disconnect(a->qb);
		ipc_async_connect_failed(a, -ENOMEM);
		goto out;
	}
	a->state = IPC_ASYNC_UP;
	a->lane = (struct ipc_async_lane){ 0 };    /* measure this server afresh */
	a->counters.counts[IPC_ASYNC_CONNECTS]++;
	if (a->attempts > 0 || a->counters.counts[IPC_ASYNC_CONNECTS] > 1)
		qb_log(LOG_NOTICE, "ipc %s: connected after %u failed attempt(s)",
		       a->service, a->attempts);
	else
		qb_log(LOG_INFO, "ipc %s: connected", a->service);
	a->retry_ms = IPC_ASYNC_RETRY_MIN_MS;
	a->attempts = 0;
	a->fell = false;
	a->said_still_down = false;
	if (a->ops.up != NULL)
		a->ops.up(a->arg);
	if (!a->dead && a->state == IPC_ASYNC_UP)
		ipc_async_service_rings(a, false);   /* events sent meanwhile */
out:
	ipc_async_leave(a);
	return 0;
}

/*
 * Free a connection connect_async() opened and nobody continued: libqb's
 * disconnect frees it but leaves its socket open.
 */
static void
ipc_async_half_close(struct ipc_async *a, int fd)
{
	close(fd);
	qb_ipcc_disconnect(a->qb);
	a->qb = NULL;
}

/* A connect attempt (retry timer): never blocks. */
static void
ipc_async_connect(void *data)
{
	struct ipc_async *a = data;
	int fd = -1;

	ipc_async_enter(a);
	a->retry_armed = false;
	errno = 0;
	a->qb = qb_ipcc_connect_async(a->service, IPC_MSG_MAX, &fd);
	if (a->qb == NULL) {
		ipc_async_connect_failed(a, ipc_client_errno(errno));
	} else if (qb_loop_poll_add(a->loop, QB_LOOP_HIGH, fd, POLLIN, a,
				    ipc_async_on_connect) != 0) {
		ipc_async_half_close(a, fd);
		ipc_async_connect_failed(a, -ENOMEM);
	} else {
		a->fd = fd;
		a->state = IPC_ASYNC_CONNECTING;
	}
	ipc_async_leave(a);
}

struct ipc_async *
ipc_async_create(qb_loop_t *loop, const char *service,
		 const struct ipc_async_ops *ops, void *arg)
{
	struct ipc_async *a;

	if (service == NULL)
		service = IPC_SERVICE_DATAPLANE;
	if (loop == NULL || service[0] == '\0' ||
	    strlen(service) >= sizeof(a->service))
		return NULL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	a->buf = malloc(IPC_MSG_MAX);
	if (a->buf == NULL) {
		free(a);
		return NULL;
	}
	a->loop = loop;
	a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (a->tfd < 0 || qb_loop_poll_add(loop, QB_LOOP_HIGH, a->tfd, POLLIN, a,
					   ipc_async_on_poll) != 0) {
		if (a->tfd >= 0)
			close(a->tfd);
		free(a->buf);
		free(a);
		return NULL;
	}
	snprintf(a->service, sizeof(a->service), "%s", service);
	if (ops != NULL)
		a->ops = *ops;
	a->arg = arg;
	a->fd = -1;
	a->next_id = 1;
	a->retry_ms = 0;    /* the first attempt at once */
	ipc_async_retry_later(a);
	a->retry_ms = IPC_ASYNC_RETRY_MIN_MS;
	if (!a->retry_armed) {
		ipc_async_free(a);
		return NULL;
	}
	return a;
}

void
ipc_async_destroy(struct ipc_async *a)
{
	if (a == NULL || a->dead)
		return;
	a->dead = true;
	if (a->state == IPC_ASYNC_CONNECTING) {
		qb_loop_poll_del(a->loop, a->fd);
		ipc_async_half_close(a, a->fd);
		a->fd = -1;
	}
	ipc_async_close(a);
	ipc_async_timer_del(a, a->retry, &a->retry_armed);
	a->state = IPC_ASYNC_DOWN;
	/* done() may not send (a is dead: -ENOTCONN) nor destroy again */
	a->depth++;
	ipc_async_fail(a, -ECANCELED, NULL, IPC_ASYNC_COUNTER_MAX);
	ipc_async_leave(a);
}

unsigned
ipc_async_bulk_entries(const struct wire_ctl_msg *req)
{
	if (req->kind != WIRE_CTL_IMPORT_BATCH)
		return 0;
	return req->flows.count > 0 && req->flows.count < UINT_MAX ?
	       (unsigned)req->flows.count : 1;
}

int
ipc_async_send(struct ipc_async *a, const struct wire_ctl_msg *req,
	       ipc_done_fn done, void *done_arg)
{
	struct ipc_async_slot *slot;
	struct wire_ctl_msg m;
	unsigned bulk;
	ssize_t n, sent;

	if (done == NULL || req == NULL)
		return -EINVAL;
	if (a->dead || a->state != IPC_ASYNC_UP || a->fail_armed)
		return -ENOTCONN;
	bulk = ipc_async_bulk_entries(req);
	if (bulk > 0 && !ipc_async_lane_fits(&a->lane, bulk)) {
		a->counters.counts[IPC_ASYNC_BULK_AGAIN]++;
		return -EAGAIN;
	}
	slot = NULL;
	for (unsigned i = 0; i < IPC_ASYNC_WINDOW && slot == NULL; i++)
		if (a->slots[i].id == 0)
			slot = &a->slots[i];
	if (slot == NULL) {
		a->counters.counts[IPC_ASYNC_SEND_AGAIN]++;
		return -EAGAIN;
	}
	m = *req;
	m.version = WIRE_VERSION;
	m.request_id = a->next_id;
	n = ipc_frame(IPC_REQUEST, &m, a->buf);
	if (n < 0)
		return (int)n;
	sent = qb_ipcc_send(a->qb, a->buf, (size_t)n);
	if (sent == -EMSGSIZE)
		return -EMSGSIZE;
	if (sent == -EAGAIN || sent == -ETIMEDOUT) {
		a->counters.counts[IPC_ASYNC_SEND_AGAIN]++;
		return -EAGAIN;
	}
	if (sent != n) {
		/* lost: the loop fails the others and says down() */
		ipc_async_timer(a, &a->fail, &a->fail_armed, 0,
				ipc_async_on_fail);
		return -ENOTCONN;
	}
	*slot = (struct ipc_async_slot){
		.id = a->next_id++,
		.deadline_ms = ipc_async_now_ms() + IPC_ASYNC_TIMEOUT_MS,
		.done = done,
		.arg = done_arg,
		.bulk = bulk,
	};
	a->inflight++;
	if (bulk > 0)
		ipc_async_lane_sent(&a->lane, bulk);
	a->counters.counts[IPC_ASYNC_REQUESTS]++;
	ipc_async_rearm(a, false);
	return 0;
}

bool
ipc_async_connected(const struct ipc_async *a)
{
	return !a->dead && a->state == IPC_ASYNC_UP;
}

unsigned
ipc_async_inflight(const struct ipc_async *a)
{
	return a->inflight;
}

unsigned
ipc_async_bulk_inflight(const struct ipc_async *a)
{
	return a->lane.entries;
}

unsigned
ipc_async_bulk_limit(const struct ipc_async *a)
{
	return ipc_async_lane_limit(&a->lane);
}

const char *
ipc_async_service(const struct ipc_async *a)
{
	return a->service;
}

const struct ipc_async_counters *
ipc_async_counters(const struct ipc_async *a)
{
	return &a->counters;
}
