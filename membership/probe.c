/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The probe engine: a slot per target, one deadline per slot in a min-heap
 * under one timerfd, every socket and the timerfd in one epoll set.
 *
 * A dispatch handles its socket events first and its deadlines after: a
 * socket closed by a timeout is thus never closed while an event of it
 * waits in the same batch (its descriptor number could already belong to
 * a new probe's socket), and a closed socket leaves the epoll set with its
 * pending events.
 */
#include "membership/probe.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum probe_phase {
	PROBE_PHASE_IDLE = 0,
	PROBE_PHASE_CONNECTING,
	PROBE_PHASE_SENDING,
	PROBE_PHASE_READING,
	PROBE_PHASE_MAX
};

enum {
	/* the longest request: a full path and a bracketed IPv6 Host */
	PROBE_REQUEST_MAX = CONFIG_PATH_MAX + INET6_ADDRSTRLEN + 96,
};

static const uint64_t NS_PER_MS = 1000000;
static const uint64_t TIMER_TAG = UINT64_MAX;   /* epoll data of the timerfd */
static const uint32_t NOT_IN_HEAP = UINT32_MAX;

struct probe_slot {
	struct probe_target target;
	struct probe_stats stats;
	uint64_t deadline_ns;           /* idle: next start; in flight: its timeout */
	uint64_t started_ns;
	int fd;                         /* -1 while idle */
	enum probe_phase phase;
	uint32_t heap_pos;              /* NOT_IN_HEAP: type NONE */
	uint16_t sent;                  /* HTTP: request bytes written */
	uint8_t got;                    /* HTTP: status bytes read */
	char status[PROBE_STATUS_LEN];
};

struct probe {
	struct probe_ops ops;
	void *arg;
	int epfd;
	int timerfd;
	uint64_t armed_ns;              /* the timerfd's deadline; 0: disarmed */
	bool dispatching;
	struct probe_slot *slots;
	size_t n_slots;
	uint32_t *heap;                 /* slot indices, earliest deadline first */
	size_t n_heap;
	uint32_t *by_id;                /* slot indices sorted by target id */
	struct probe_counters counters;
};

const char *const probe_counter_names[PROBE_COUNTER_MAX] = {
#define PROBE_COUNTER_NAME_(id, name, text) [PROBE_##id] = #name,
	PROBE_COUNTERS(PROBE_COUNTER_NAME_)
#undef PROBE_COUNTER_NAME_
};

const char *const probe_counter_descriptions[PROBE_COUNTER_MAX] = {
#define PROBE_COUNTER_TEXT_(id, name, text) [PROBE_##id] = text,
	PROBE_COUNTERS(PROBE_COUNTER_TEXT_)
#undef PROBE_COUNTER_TEXT_
};

const char *
probe_strerror(int err)
{
	switch (err) {
	case 0:
		return "none";
	case PROBE_ERROR_HTTP_STATUS:
		return "http status not 2xx or 3xx";
	case PROBE_ERROR_HTTP_MALFORMED:
		return "malformed http status line";
	case PROBE_ERROR_HTTP_EOF:
		return "closed before the http status line";
	default:
		return strerror(err);
	}
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ the heap */

static bool
heap_before(const struct probe *p, size_t a, size_t b)
{
	return p->slots[p->heap[a]].deadline_ns < p->slots[p->heap[b]].deadline_ns;
}

static void
heap_swap(struct probe *p, size_t a, size_t b)
{
	uint32_t t = p->heap[a];

	p->heap[a] = p->heap[b];
	p->heap[b] = t;
	p->slots[p->heap[a]].heap_pos = (uint32_t)a;
	p->slots[p->heap[b]].heap_pos = (uint32_t)b;
}

static void
heap_down(struct probe *p, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < p->n_heap && heap_before(p, l, m))
			m = l;
		if (r < p->n_heap && heap_before(p, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(p, i, m);
		i = m;
	}
}

/* Restore the heap after slot s's deadline changed. */
static void
heap_fix(struct probe *p, struct probe_slot *s)
{
	size_t i = s->heap_pos;

	while (i > 0 && heap_before(p, i, (i - 1) / 2)) {
		heap_swap(p, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	heap_down(p, i);
}

static void
heap_build(struct probe *p)
{
	p->n_heap = 0;
	for (size_t i = 0; i < p->n_slots; i++) {
		if (p->slots[i].heap_pos == NOT_IN_HEAP)
			continue;
		p->slots[i].heap_pos = (uint32_t)p->n_heap;
		p->heap[p->n_heap++] = (uint32_t)i;
	}
	for (size_t i = p->n_heap / 2; i-- > 0;)
		heap_down(p, i);
}

static void
timer_arm(struct probe *p)
{
	uint64_t when = p->n_heap > 0 ? p->slots[p->heap[0]].deadline_ns : 0;
	struct itimerspec its = { 0 };

	if (when == p->armed_ns)
		return;
	its.it_value.tv_sec = (time_t)(when / 1000000000u);
	its.it_value.tv_nsec = (long)(when % 1000000000u);
	/* cannot fail: the descriptor and the value are valid */
	(void)timerfd_settime(p->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
	p->armed_ns = when;
}

/* ---------------------------------------------------------- the probes */

static uint32_t
slot_index(const struct probe *p, const struct probe_slot *s)
{
	return (uint32_t)(s - p->slots);
}

static void
slot_close(struct probe_slot *s)
{
	static const struct linger reset = { .l_onoff = 1, .l_linger = 0 };

	(void)setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
	close(s->fd);
	s->fd = -1;
}

/* Leave the idle slot s for its next start, one interval after this one. */
static void
slot_reschedule(struct probe *p, struct probe_slot *s, uint64_t now)
{
	uint64_t next = s->started_ns + s->target.interval_ms * NS_PER_MS;

	s->deadline_ns = next > now ? next : now;
	heap_fix(p, s);
}

/* An attempt this node could not make or finish: the backend is not to blame. */
static void
slot_local_error(struct probe *p, struct probe_slot *s, int err, uint64_t now)
{
	if (s->fd >= 0) {
		slot_close(s);
		p->counters.in_flight--;
	}
	s->phase = PROBE_PHASE_IDLE;
	s->stats.local_errors++;
	s->stats.last_error = err;
	p->counters.counts[PROBE_LOCAL_ERRORS]++;
	slot_reschedule(p, s, now);
}

static void
slot_transition(struct probe *p, struct probe_slot *s, bool up)
{
	s->stats.up = up;
	if (up) {
		p->counters.down--;
		p->counters.counts[PROBE_WENT_UP]++;
	} else {
		p->counters.down++;
		p->counters.counts[PROBE_WENT_DOWN]++;
	}
	if (p->ops.changed != NULL)
		p->ops.changed(p->arg, s->target.id, up);
}

/* Probe of s done: err 0 passed, else why it failed. */
static void
slot_finish(struct probe *p, struct probe_slot *s, int err, uint64_t now)
{
	struct probe_stats *st = &s->stats;
	uint64_t us = now > s->started_ns ? (now - s->started_ns) / 1000 : 0;

	slot_close(s);
	s->phase = PROBE_PHASE_IDLE;
	p->counters.in_flight--;
	st->probes++;
	st->last_duration_us = us < UINT32_MAX ? (uint32_t)us : UINT32_MAX;
	p->counters.durations[wire_bucket_of(wire_probe_bucket_us, WIRE_PROBE_BUCKETS, us)]++;
	p->counters.duration_sum_us += us;
	if (err == 0) {
		st->successes++;
		st->successes_in_row++;
		st->failures_in_row = 0;
		p->counters.counts[PROBE_SUCCESSES]++;
	} else {
		st->failures++;
		st->failures_in_row++;
		st->successes_in_row = 0;
		st->last_error = err;
		p->counters.counts[PROBE_FAILURES]++;
		if (err == ETIMEDOUT) {
			st->timeouts++;
			p->counters.counts[PROBE_TIMEOUTS]++;
		}
	}
	slot_reschedule(p, s, now);
	if (st->up && st->failures_in_row >= s->target.fall)
		slot_transition(p, s, false);
	else if (!st->up && st->successes_in_row >= s->target.rise)
		slot_transition(p, s, true);
}

/* Errors of connect() that say this node ran short of something. */
static bool
errno_is_local(int err)
{
	return err == ENOBUFS || err == ENOMEM || err == EAGAIN || err == EADDRNOTAVAIL;
}

static socklen_t
target_sockaddr(const struct probe_target *t, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (t->addr.family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(t->port);
		sin->sin_addr = t->addr.v4;
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(t->port);
	sin6->sin6_addr = t->addr.v6;
	return sizeof(*sin6);
}

static int
slot_watch(struct probe *p, struct probe_slot *s, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = slot_index(p, s) };

	return epoll_ctl(p->epfd, op, s->fd, &ev) == 0 ? 0 : -errno;
}

static void
slot_start(struct probe *p, struct probe_slot *s, uint64_t now)
{
	struct sockaddr_storage ss;
	socklen_t len = target_sockaddr(&s->target, &ss);
	bool http = s->target.type == CONFIG_HEALTH_HTTP;
	int rc;

	s->started_ns = now;
	s->fd = socket(s->target.addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       IPPROTO_TCP);
	if (s->fd < 0) {
		slot_local_error(p, s, errno, now);
		return;
	}
	p->counters.in_flight++;
	s->phase = PROBE_PHASE_CONNECTING;
	s->sent = 0;
	s->got = 0;
	rc = connect(s->fd, (const struct sockaddr *)&ss, len) == 0 ? 0 : errno;
	if (rc == EINTR)
		rc = EINPROGRESS;       /* the connect goes on in the background */
	if (rc != 0 && rc != EINPROGRESS && errno_is_local(rc)) {
		slot_local_error(p, s, rc, now);
		return;
	}
	if (rc == EINPROGRESS || (rc == 0 && http)) {
		int err = slot_watch(p, s, EPOLL_CTL_ADD, EPOLLOUT);

		if (err < 0) {
			slot_local_error(p, s, -err, now);
			return;
		}
	}
	p->counters.counts[PROBE_STARTED]++;
	if (rc != EINPROGRESS && !(rc == 0 && http)) {
		slot_finish(p, s, rc, now);
		return;
	}
	if (rc == 0)
		s->phase = PROBE_PHASE_SENDING;
	s->deadline_ns = now + s->target.timeout_ms * NS_PER_MS;
	heap_fix(p, s);
}

static size_t
http_request(const struct probe_target *t, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	bool v6 = t->addr.family == AF_INET6;
	int n;

	config_addr_str(&t->addr, host, sizeof(host));
	n = snprintf(buf, len,
		     "GET %s HTTP/1.0\r\nHost: %s%s%s\r\nUser-Agent: maglb-syncd\r\n"
		     "Connection: close\r\n\r\n",
		     t->http_path, v6 ? "[" : "", host, v6 ? "]" : "");
	assert(n > 0 && (size_t)n < len);
	return (size_t)n;
}

/*
 * The status line read so far, len bytes of "HTTP/d.d NNN" and one space
 * or line end: 0 while more is needed, -1 as soon as a byte breaks the
 * pattern, 1 once complete with the code in *code.
 */
static int
http_status(const char *b, size_t len, int *code)
{
	static const char pattern[PROBE_STATUS_LEN + 1] = "HTTP/9.9 999_";

	*code = 0;
	for (size_t i = 0; i < len; i++) {
		char c = b[i];

		if (pattern[i] == '9' && (c < '0' || c > '9'))
			return -1;
		if (pattern[i] == '_' && c != ' ' && c != '\r' && c != '\n')
			return -1;
		if (pattern[i] != '9' && pattern[i] != '_' && c != pattern[i])
			return -1;
		if (i >= 9 && i < 12)
			*code = *code * 10 + (c - '0');
	}
	return len == PROBE_STATUS_LEN ? 1 : 0;
}

static void
http_send(struct probe *p, struct probe_slot *s, uint64_t now)
{
	char req[PROBE_REQUEST_MAX];
	size_t len = http_request(&s->target, req, sizeof(req));
	int rc;

	while (s->sent < len) {
		ssize_t n = send(s->fd, req + s->sent, len - s->sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			slot_finish(p, s, errno, now);
			return;
		}
		s->sent += (uint16_t)n;
	}
	s->phase = PROBE_PHASE_READING;
	rc = slot_watch(p, s, EPOLL_CTL_MOD, EPOLLIN);
	if (rc < 0)
		slot_local_error(p, s, -rc, now);
}

static void
http_read(struct probe *p, struct probe_slot *s, uint64_t now)
{
	int done = 0, code;

	while (done == 0) {
		ssize_t n = recv(s->fd, s->status + s->got, sizeof(s->status) - s->got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			slot_finish(p, s, n == 0 ? PROBE_ERROR_HTTP_EOF : errno, now);
			return;
		}
		s->got += (uint8_t)n;
		done = http_status(s->status, s->got, &code);
	}
	if (done < 0) {
		slot_finish(p, s, PROBE_ERROR_HTTP_MALFORMED, now);
		return;
	}
	s->stats.last_http_status = (uint16_t)code;
	slot_finish(p, s, code >= 200 && code < 400 ? 0 : PROBE_ERROR_HTTP_STATUS, now);
}

static void
slot_event(struct probe *p, struct probe_slot *s, uint64_t now)
{
	int err = 0;
	socklen_t len = sizeof(err);

	switch (s->phase) {
	case PROBE_PHASE_CONNECTING:
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0 || s->target.type == CONFIG_HEALTH_TCP) {
			slot_finish(p, s, err, now);
			return;
		}
		s->phase = PROBE_PHASE_SENDING;
		http_send(p, s, now);
		return;
	case PROBE_PHASE_SENDING:
		http_send(p, s, now);
		return;
	case PROBE_PHASE_READING:
		http_read(p, s, now);
		return;
	default:
		return;
	}
}

/* Starts and timeouts due by now, PROBE_DEADLINES_MAX at most. */
static void
run_deadlines(struct probe *p, uint64_t now)
{
	for (unsigned budget = PROBE_DEADLINES_MAX; budget > 0 && p->n_heap > 0; budget--) {
		struct probe_slot *s = &p->slots[p->heap[0]];

		if (s->deadline_ns > now)
			return;
		if (s->phase == PROBE_PHASE_IDLE)
			slot_start(p, s, now);
		else
			slot_finish(p, s, ETIMEDOUT, now);
	}
}

void
probe_dispatch(struct probe *p)
{
	struct epoll_event ev[PROBE_EVENTS_MAX];
	int n = epoll_wait(p->epfd, ev, PROBE_EVENTS_MAX, 0);
	uint64_t now = now_ns();

	p->dispatching = true;
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == TIMER_TAG) {
			uint64_t ticks;

			if (read(p->timerfd, &ticks, sizeof(ticks)) > 0)
				p->armed_ns = 0;
			continue;
		}
		slot_event(p, &p->slots[ev[i].data.u64], now);
	}
	run_deadlines(p, now_ns());
	timer_arm(p);
	p->dispatching = false;
}

/* ------------------------------------------------------------ the set */

static bool
target_valid(const struct probe_target *t)
{
	const char *c;

	if (t->type >= CONFIG_HEALTH_MAX)
		return false;
	if (t->addr.family != AF_INET && t->addr.family != AF_INET6)
		return false;
	if (t->type == CONFIG_HEALTH_NONE)
		return true;
	if (t->port == 0 || t->interval_ms == 0 || t->timeout_ms == 0 || t->rise == 0 ||
	    t->fall == 0)
		return false;
	if (t->type != CONFIG_HEALTH_HTTP)
		return true;
	if (t->http_path[0] != '/' || memchr(t->http_path, '\0', CONFIG_PATH_MAX) == NULL)
		return false;
	for (c = t->http_path; *c != '\0'; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return false;
	return true;
}

/* Order of targets by what identifies a backend's probe (not the id). */
static int
target_key_cmp(const struct probe_target *a, const struct probe_target *b)
{
	size_t alen = a->addr.family == AF_INET ? 4 : 16;
	int rc;

	if (a->addr.family != b->addr.family)
		return a->addr.family < b->addr.family ? -1 : 1;
	rc = memcmp(a->addr.bytes, b->addr.bytes, alen);
	if (rc != 0)
		return rc;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->type == CONFIG_HEALTH_HTTP)
		return strcmp(a->http_path, b->http_path);
	return 0;
}

/* qsort_r comparators over slot indices; ties keep the set's order. */
static int
slot_key_order(const void *x, const void *y, void *arg)
{
	const struct probe_slot *slots = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int rc = target_key_cmp(&slots[a].target, &slots[b].target);

	return rc != 0 ? rc : (a > b) - (a < b);
}

static int
slot_id_order(const void *x, const void *y, void *arg)
{
	const struct probe_slot *slots = arg;
	uint32_t a = slots[*(const uint32_t *)x].target.id;
	uint32_t b = slots[*(const uint32_t *)y].target.id;

	return (a > b) - (a < b);
}

/*
 * The first unclaimed slot of the old set (its indices sorted by key in
 * order[0..m-1]) with t's key, claimed now; NULL if none.
 */
static struct probe_slot *
old_claim(struct probe *p, const uint32_t *order, bool *claimed, const struct probe_target *t)
{
	size_t lo = 0, hi = p->n_slots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (target_key_cmp(&p->slots[order[mid]].target, t) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < p->n_slots && target_key_cmp(&p->slots[order[lo]].target, t) == 0; lo++) {
		if (!claimed[lo]) {
			claimed[lo] = true;
			return &p->slots[order[lo]];
		}
	}
	return NULL;
}

/* Offset of a new target's first probe into its first interval. */
static uint64_t
target_jitter_ns(const struct probe_target *t)
{
	uint64_t h = 0xcbf29ce484222325u;     /* FNV-1a */
	uint8_t key[20];

	memcpy(key, t->addr.bytes, 16);
	key[16] = (uint8_t)(t->port >> 8);
	key[17] = (uint8_t)t->port;
	key[18] = (uint8_t)t->type;
	key[19] = (uint8_t)t->addr.family;
	if (t->addr.family == AF_INET)
		memset(key + 4, 0, 12);
	for (size_t i = 0; i < sizeof(key); i++)
		h = (h ^ key[i]) * 0x100000001b3u;
	return h % (t->interval_ms * NS_PER_MS);
}

static void
slot_init_fresh(struct probe_slot *s, const struct probe_target *t, uint64_t now)
{
	memset(s, 0, sizeof(*s));
	s->target = *t;
	s->stats.up = true;
	s->fd = -1;
	s->heap_pos = t->type == CONFIG_HEALTH_NONE ? NOT_IN_HEAP : 0;
	if (t->type != CONFIG_HEALTH_NONE)
		s->deadline_ns = now + target_jitter_ns(t);
}

/*
 * Slot ns (index i of the new set) takes over old: its state, counters and
 * probe in flight, under t's id and timings.
 */
static void
slot_init_kept(struct probe *p, struct probe_slot *ns, uint32_t i, struct probe_slot *old,
	       const struct probe_target *t, uint64_t now)
{
	*ns = *old;
	ns->target = *t;
	old->fd = -1;
	if (ns->phase == PROBE_PHASE_IDLE) {
		uint64_t latest = now + t->interval_ms * NS_PER_MS;

		if (ns->deadline_ns > latest)
			ns->deadline_ns = latest;
		return;
	}
	ns->deadline_ns = ns->started_ns + t->timeout_ms * NS_PER_MS;
	struct epoll_event ev = {
		.events = ns->phase == PROBE_PHASE_READING ? EPOLLIN : EPOLLOUT,
		.data.u64 = i,
	};
	if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, ns->fd, &ev) < 0) {
		/* the probe is dropped unseen; the target keeps its history */
		close(ns->fd);
		ns->fd = -1;
		ns->phase = PROBE_PHASE_IDLE;
		ns->deadline_ns = now;
	}
}

static bool
ids_unique(const struct probe_slot *slots, const uint32_t *by_id, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (slots[by_id[i]].target.id == slots[by_id[i - 1]].target.id)
			return false;
	return true;
}

struct probe_set {
	struct probe_slot *slots;
	uint32_t *heap;
	uint32_t *by_id;
	uint32_t *old_order;
	bool *claimed;
};

static void
probe_set_free(struct probe_set *set)
{
	free(set->slots);
	free(set->heap);
	free(set->by_id);
	free(set->old_order);
	free(set->claimed);
}

static int
probe_set_alloc(struct probe_set *set, size_t n, size_t old_n)
{
	size_t cap = n > 0 ? n : 1, old_cap = old_n > 0 ? old_n : 1;

	*set = (struct probe_set){
		.slots = calloc(cap, sizeof(*set->slots)),
		.heap = calloc(cap, sizeof(*set->heap)),
		.by_id = calloc(cap, sizeof(*set->by_id)),
		.old_order = calloc(old_cap, sizeof(*set->old_order)),
		.claimed = calloc(old_cap, sizeof(*set->claimed)),
	};
	if (set->slots == NULL || set->heap == NULL || set->by_id == NULL ||
	    set->old_order == NULL || set->claimed == NULL) {
		probe_set_free(set);
		return -ENOMEM;
	}
	return 0;
}

/* Gauges of the new set: targets, down, in flight. */
static void
probe_recount(struct probe *p)
{
	p->counters.targets = p->n_slots;
	p->counters.down = 0;
	p->counters.in_flight = 0;
	for (size_t i = 0; i < p->n_slots; i++) {
		p->counters.down += !p->slots[i].stats.up;
		p->counters.in_flight += p->slots[i].fd >= 0;
	}
}

int
probe_set_targets(struct probe *p, const struct probe_target *t, size_t n)
{
	struct probe_set set;
	uint64_t now = now_ns();
	int rc;

	if (p->dispatching)
		return -EBUSY;
	if (n > UINT32_MAX - 1)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!target_valid(&t[i]))
			return -EINVAL;
	rc = probe_set_alloc(&set, n, p->n_slots);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		set.slots[i].target = t[i];
		set.by_id[i] = i;
	}
	qsort_r(set.by_id, n, sizeof(*set.by_id), slot_id_order, set.slots);
	if (!ids_unique(set.slots, set.by_id, n)) {
		probe_set_free(&set);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < p->n_slots; i++)
		set.old_order[i] = i;
	qsort_r(set.old_order, p->n_slots, sizeof(*set.old_order), slot_key_order, p->slots);

	/* commit */
	for (uint32_t i = 0; i < n; i++) {
		struct probe_slot *old = old_claim(p, set.old_order, set.claimed, &t[i]);

		if (old != NULL)
			slot_init_kept(p, &set.slots[i], i, old, &t[i], now);
		else
			slot_init_fresh(&set.slots[i], &t[i], now);
	}
	for (size_t i = 0; i < p->n_slots; i++)
		if (p->slots[i].fd >= 0)
			slot_close(&p->slots[i]);
	free(p->slots);
	free(p->heap);
	free(p->by_id);
	p->slots = set.slots;
	p->heap = set.heap;
	p->by_id = set.by_id;
	p->n_slots = n;
	free(set.old_order);
	free(set.claimed);
	heap_build(p);
	probe_recount(p);
	timer_arm(p);
	return 0;
}

/* ---------------------------------------------------------- the engine */

struct probe *
probe_create(const struct probe_ops *ops, void *arg)
{
	struct probe *p = calloc(1, sizeof(*p));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TIMER_TAG };
	int err;

	if (p == NULL)
		return NULL;
	p->ops = *ops;
	p->arg = arg;
	p->timerfd = -1;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		goto fail;
	p->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (p->timerfd < 0)
		goto fail;
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->timerfd, &ev) < 0)
		goto fail;
	return p;
fail:
	err = errno;
	probe_destroy(p);
	errno = err;
	return NULL;
}

void
probe_destroy(struct probe *p)
{
	if (p == NULL)
		return;
	assert(!p->dispatching);
	for (size_t i = 0; i < p->n_slots; i++)
		if (p->slots[i].fd >= 0)
			slot_close(&p->slots[i]);
	if (p->timerfd >= 0)
		close(p->timerfd);
	if (p->epfd >= 0)
		close(p->epfd);
	free(p->slots);
	free(p->heap);
	free(p->by_id);
	free(p);
}

int
probe_fd(const struct probe *p)
{
	return p->epfd;
}

static const struct probe_slot *
slot_find(const struct probe *p, uint32_t id)
{
	size_t lo = 0, hi = p->n_slots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct probe_slot *s = &p->slots[p->by_id[mid]];

		if (s->target.id == id)
			return s;
		if (s->target.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool
probe_up(const struct probe *p, uint32_t id)
{
	const struct probe_slot *s = slot_find(p, id);

	return s == NULL || s->stats.up;
}

int
probe_stats(const struct probe *p, uint32_t id, struct probe_stats *out)
{
	const struct probe_slot *s = slot_find(p, id);

	if (s == NULL)
		return -ENOENT;
	*out = s->stats;
	return 0;
}

const struct probe_counters *
probe_counters(const struct probe *p)
{
	return &p->counters;
}
