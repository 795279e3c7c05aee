/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ipc_client.c: the async client's bulk lane, against an in-process
 * fake server (an ipc_server on a qb_loop thread) whose IMPORT_BATCH costs
 * a set time per entry, as the dataplane's upserts do, and which can hold
 * a request until the test releases it. The client runs on a loop of the
 * test's thread, fed by a pump that sends IMPORT_BATCH until the client
 * says -EAGAIN and retries every millisecond, with a STATUS every 40 ms,
 * as syncd does.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <qb/qbloop.h>

#include "lib/ipc_client.h"
#include "lib/ipc_server.h"

enum {
	BATCH = 4096,               /* syncd's IMPORT_BATCH, at most */
	FLOWS = 2 * BATCH,
	ORDER_MAX = 1024,           /* kinds the fake records, in order */
	REQS_MAX = 256,             /* requests a test records */
	PING_MS = 40,
	TIMEOUT_MS = 10000,
};

/* ------------------------------------------------------------- the fake */

struct fake {
	qb_loop_t *loop;
	struct ipc_server *server;
	pthread_t thread;
	int pipe[2];                /* fake_call() jobs to the loop thread */
	sem_t done;
	sem_t released;             /* a held request goes on */
	sem_t paused, resume;       /* fake_pause_destroy_job() */
	char service[WIRE_NAME_MAX];
	atomic_bool hold;           /* the next request waits for release */
	atomic_uint us_per_entry;   /* what an imported entry costs */
	atomic_ulong imported;
	atomic_uint served;
	int order[ORDER_MAX];       /* loop thread; read once the client idles */
};

static struct fake fake;

struct fake_job {
	void (*fn)(void *arg);
	void *arg;
};

static void
sem_take(sem_t *sem)
{
	while (sem_wait(sem) < 0 && errno == EINTR)
		;
}

static void
sleep_us(unsigned long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int32_t
fake_pipe_ready(int32_t fd, int32_t revents, void *data)
{
	struct fake_job job;

	(void)revents;
	(void)data;
	if (read(fd, &job, sizeof(job)) == (ssize_t)sizeof(job)) {
		job.fn(job.arg);
		sem_post(&fake.done);
	}
	return 0;
}

static void
fake_post(void (*fn)(void *arg), void *arg)
{
	struct fake_job job = { fn, arg };

	ck_assert_int_eq(write(fake.pipe[1], &job, sizeof(job)), sizeof(job));
}

static void
fake_call(void (*fn)(void *arg), void *arg)
{
	fake_post(fn, arg);
	sem_take(&fake.done);
}

static int
fake_request(void *ctx, uint64_t conn, const struct wire_ctl_msg *req,
	     struct wire_ctl_msg *resp, char *errmsg, size_t errlen)
{
	unsigned n;

	(void)ctx;
	(void)conn;
	(void)errmsg;
	(void)errlen;
	if (atomic_exchange(&fake.hold, false))
		sem_take(&fake.released);
	n = atomic_fetch_add(&fake.served, 1);
	if (n < ORDER_MAX)
		fake.order[n] = req->kind;
	switch (req->kind) {
	case WIRE_CTL_STATUS_REQUEST:
		resp->kind = WIRE_CTL_STATUS_RESPONSE;
		return 0;
	case WIRE_CTL_IMPORT_BATCH:
		sleep_us((unsigned long)atomic_load(&fake.us_per_entry) * req->flows.count);
		atomic_fetch_add(&fake.imported, req->flows.count);
		return 0;
	case WIRE_CTL_OWNERSHIP_SET:
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static const struct ipc_handlers fake_handlers = { .request = fake_request };

static void *
fake_thread(void *arg)
{
	(void)arg;
	qb_loop_run(fake.loop);
	return NULL;
}

static void
fake_stop(void *arg)
{
	(void)arg;
	qb_loop_stop(fake.loop);
}

static void
fake_setup(void)
{
	memset(&fake, 0, sizeof(fake));
	snprintf(fake.service, sizeof(fake.service), "maglb-check-lane-%ld", (long)getpid());
	ck_assert_int_eq(sem_init(&fake.done, 0, 0), 0);
	ck_assert_int_eq(sem_init(&fake.released, 0, 0), 0);
	ck_assert_int_eq(sem_init(&fake.paused, 0, 0), 0);
	ck_assert_int_eq(sem_init(&fake.resume, 0, 0), 0);
	ck_assert_int_eq(pipe2(fake.pipe, O_CLOEXEC), 0);
	fake.loop = qb_loop_create();
	ck_assert_ptr_nonnull(fake.loop);
	ck_assert_int_eq(qb_loop_poll_add(fake.loop, QB_LOOP_HIGH, fake.pipe[0], POLLIN, NULL,
					  fake_pipe_ready), 0);
	fake.server = ipc_server_create(fake.loop, fake.service, (gid_t)-1, &fake_handlers,
					&fake);
	ck_assert_ptr_nonnull(fake.server);
	ck_assert_int_eq(pthread_create(&fake.thread, NULL, fake_thread, NULL), 0);
}

static void
fake_teardown(void)
{
	if (fake.loop == NULL)
		return;
	fake_call(fake_stop, NULL);
	pthread_join(fake.thread, NULL);
	ipc_server_destroy(fake.server);
	qb_loop_poll_del(fake.loop, fake.pipe[0]);
	qb_loop_destroy(fake.loop);
	close(fake.pipe[0]);
	close(fake.pipe[1]);
	sem_destroy(&fake.done);
	sem_destroy(&fake.released);
	sem_destroy(&fake.paused);
	sem_destroy(&fake.resume);
	fake.loop = NULL;
}

/*
 * The loop thread stops here, tells the test (paused), and destroys the
 * server once the test has queued its requests (resume).
 */
static void
fake_pause_destroy_job(void *arg)
{
	(void)arg;
	ck_assert_int_eq(sem_post(&fake.paused), 0);
	sem_take(&fake.resume);
	ipc_server_destroy(fake.server);
	fake.server = NULL;
}

static void
fake_recreate_job(void *arg)
{
	(void)arg;
	fake.server = ipc_server_create(fake.loop, fake.service, (gid_t)-1, &fake_handlers,
					&fake);
}

/* ----------------------------------------------------------- the client */

struct lane_test;

struct lane_req {
	struct lane_test *t;
	unsigned i;                 /* its record; REQS_MAX and up: the pump's */
	unsigned entries;
};

struct lane_test {
	qb_loop_t *loop;
	struct ipc_async *a;
	qb_loop_timer_handle tick;
	bool (*until)(struct lane_test *t);
	double deadline;
	/* requests sent one by one: their outcome, in answer order */
	unsigned done;
	int rc[REQS_MAX];
	int kind[REQS_MAX];
	unsigned answered[REQS_MAX];        /* its place among the answers */
	struct lane_req reqs[REQS_MAX];
	unsigned chain;                     /* done() sends the next BATCH */
	/* the pump: IMPORT_BATCH of batch entries until to_send is sent */
	bool pumping;
	unsigned batch;
	uint64_t to_send, acked, failed;
	unsigned bulk_requests, max_bulk_requests, max_bulk_entries, max_limit;
	/* its STATUS every PING_MS: the bulk ahead of each, its wait */
	bool ping_inflight;
	double ping_sent_ms, ping_max_ms, last_ping_ms;
	unsigned pings, pongs, max_ahead;
};

static struct wire_flow flows[FLOWS];

static void lane_done(void *arg, int rc, const struct wire_ctl_msg *resp);

static void
flows_fill(void)
{
	for (size_t i = 0; i < FLOWS; i++) {
		struct wire_flow *f = &flows[i];
		uint32_t vip = htonl(0xc6120101), client = htonl(0xc6128000u + (uint32_t)i);
		uint32_t backend = htonl(0xc6120015 + (uint32_t)(i % 3));

		memset(f, 0, sizeof(*f));
		f->family = AF_INET;
		f->proto = IPPROTO_TCP;
		f->vip_port = 8000;
		f->client_port = (uint16_t)(1024 + i % 60000);
		f->backend_family = AF_INET;
		f->lifetime_ms = 900000;
		f->flags = WIRE_FLOW_ESTABLISHED;
		memcpy(f->vip, &vip, 4);
		memcpy(f->client, &client, 4);
		memcpy(f->backend, &backend, 4);
	}
}

static struct wire_ctl_msg
import_msg(unsigned entries)
{
	struct wire_ctl_msg m = { .kind = WIRE_CTL_IMPORT_BATCH };

	m.flows = (struct wire_ctl_flows){ .event = WIRE_FLOW_EVENT_NEW, .entries = flows,
					   .count = entries };
	return m;
}

/* Send record i: an IMPORT_BATCH of entries, or a request of kind. */
static int
lane_send(struct lane_test *t, unsigned i, enum wire_ctl_kind kind, unsigned entries)
{
	struct wire_ctl_msg m = { .kind = kind };

	if (kind == WIRE_CTL_IMPORT_BATCH)
		m = import_msg(entries);
	t->reqs[i] = (struct lane_req){ t, i, entries };
	return ipc_async_send(t->a, &m, lane_done, &t->reqs[i]);
}

static void
lane_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct lane_req *r = arg;
	struct lane_test *t = r->t;

	t->rc[r->i] = rc;
	t->kind[r->i] = resp != NULL ? (int)resp->kind : -1;
	t->answered[r->i] = t->done++;
	if (t->chain > r->i + 1)    /* the next one, from inside done() */
		ck_assert_int_eq(lane_send(t, r->i + 1, WIRE_CTL_IMPORT_BATCH, BATCH), 0);
}

static void
pump_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct lane_req *r = arg;

	(void)resp;
	r->t->bulk_requests--;
	if (rc == 0)
		r->t->acked += r->entries;
	else
		r->t->failed += r->entries;
	free(r);
}

static void
pong(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct lane_test *t = arg;
	double waited = now_ms() - t->ping_sent_ms;

	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(resp->kind, WIRE_CTL_STATUS_RESPONSE);
	t->ping_inflight = false;
	t->pongs++;
	if (waited > t->ping_max_ms)
		t->ping_max_ms = waited;
}

/* One tick of the pump: what the lane takes, and a STATUS when due. */
static void
pump(struct lane_test *t)
{
	struct wire_ctl_msg status = { .kind = WIRE_CTL_STATUS_REQUEST };
	unsigned limit = ipc_async_bulk_limit(t->a);

	if (limit > t->max_limit)
		t->max_limit = limit;
	if (!t->ping_inflight && now_ms() - t->last_ping_ms >= PING_MS) {
		unsigned ahead = ipc_async_bulk_inflight(t->a);

		ck_assert_int_eq(ipc_async_send(t->a, &status, pong, t), 0);
		t->ping_inflight = true;
		t->ping_sent_ms = t->last_ping_ms = now_ms();
		t->pings++;
		if (ahead > t->max_ahead)
			t->max_ahead = ahead;
	}
	while (t->to_send > 0) {
		struct lane_req *r = malloc(sizeof(*r));
		unsigned n = t->to_send < t->batch ? (unsigned)t->to_send : t->batch;
		struct wire_ctl_msg m = import_msg(n);
		int rc;

		ck_assert_ptr_nonnull(r);
		*r = (struct lane_req){ t, REQS_MAX, n };
		rc = ipc_async_send(t->a, &m, pump_done, r);
		if (rc == -EAGAIN) {
			free(r);
			break;
		}
		ck_assert_int_eq(rc, 0);
		t->to_send -= n;
		t->bulk_requests++;
		if (t->bulk_requests > t->max_bulk_requests)
			t->max_bulk_requests = t->bulk_requests;
		if (ipc_async_bulk_inflight(t->a) > t->max_bulk_entries)
			t->max_bulk_entries = ipc_async_bulk_inflight(t->a);
	}
}

static void
lane_tick(void *data)
{
	struct lane_test *t = data;

	if (t->pumping && ipc_async_connected(t->a))
		pump(t);
	if (t->until(t) || now_ms() > t->deadline) {
		qb_loop_stop(t->loop);
		return;
	}
	qb_loop_timer_add(t->loop, QB_LOOP_LOW, 1000000, t, lane_tick, &t->tick);
}

/* Run the client's loop until until(t) holds or ms pass; until(t). */
static bool
lane_run(struct lane_test *t, bool (*until)(struct lane_test *t), double ms)
{
	t->until = until;
	t->deadline = now_ms() + ms;
	qb_loop_timer_add(t->loop, QB_LOOP_LOW, 0, t, lane_tick, &t->tick);
	qb_loop_run(t->loop);
	return until(t);
}

static bool
is_up(struct lane_test *t)
{
	return ipc_async_connected(t->a);
}

static bool
is_down(struct lane_test *t)
{
	return !ipc_async_connected(t->a);
}

static bool
idle(struct lane_test *t)
{
	return ipc_async_inflight(t->a) == 0;
}

static bool
pumped(struct lane_test *t)
{
	return t->to_send == 0 && idle(t);
}

static void
lane_start(struct lane_test *t)
{
	memset(t, 0, sizeof(*t));
	t->loop = qb_loop_create();
	ck_assert_ptr_nonnull(t->loop);
	t->a = ipc_async_create(t->loop, fake.service, NULL, t);
	ck_assert_ptr_nonnull(t->a);
	flows_fill();
	ck_assert(lane_run(t, is_up, TIMEOUT_MS));
}

static void
lane_stop(struct lane_test *t)
{
	ipc_async_destroy(t->a);
	qb_loop_destroy(t->loop);
}

static uint64_t
count_of(const struct lane_test *t, enum ipc_async_counter c)
{
	return ipc_async_counters(t->a)->counts[c];
}

/* ---------------------------------------------------------------- tests */

/* What is bulk: an IMPORT_BATCH, by its entries (an empty one counts 1). */
START_TEST(test_bulk_kinds)
{
	struct wire_ctl_msg m = import_msg(BATCH);

	ck_assert_uint_eq(ipc_async_bulk_entries(&m), BATCH);
	m.flows.count = 0;
	ck_assert_uint_eq(ipc_async_bulk_entries(&m), 1);
	m = (struct wire_ctl_msg){ .kind = WIRE_CTL_STATUS_REQUEST };
	ck_assert_uint_eq(ipc_async_bulk_entries(&m), 0);
	m.kind = WIRE_CTL_OWNERSHIP_SET;
	ck_assert_uint_eq(ipc_async_bulk_entries(&m), 0);
	m.kind = WIRE_CTL_DUMP_REQUEST;
	ck_assert_uint_eq(ipc_async_bulk_entries(&m), 0);
	ck_assert_str_eq(ipc_async_counter_names[IPC_ASYNC_BULK_AGAIN], "bulk_again");
}
END_TEST

/*
 * Bulk past the lane waits; STATUS and OWNERSHIP_SET do not, and are
 * answered right after the bulk that was in flight, before the bulk that
 * waited.
 */
START_TEST(test_lane_holds_bulk_only)
{
	static struct lane_test t;
	unsigned i;

	lane_start(&t);
	ck_assert_uint_eq(ipc_async_bulk_limit(t.a), IPC_ASYNC_BULK_SAMPLE);  /* unmeasured */
	atomic_store(&fake.hold, true);
	ck_assert_int_eq(lane_send(&t, 0, WIRE_CTL_IMPORT_BATCH, BATCH), 0);
	ck_assert_uint_eq(ipc_async_bulk_inflight(t.a), BATCH);
	ck_assert_int_eq(lane_send(&t, 1, WIRE_CTL_IMPORT_BATCH, 1), -EAGAIN);
	ck_assert_uint_eq(count_of(&t, IPC_ASYNC_BULK_AGAIN), 1);
	ck_assert_uint_eq(count_of(&t, IPC_ASYNC_SEND_AGAIN), 0);
	ck_assert_int_eq(lane_send(&t, 1, WIRE_CTL_STATUS_REQUEST, 0), 0);
	ck_assert_int_eq(lane_send(&t, 2, WIRE_CTL_OWNERSHIP_SET, 0), 0);
	/* the rest of the window is the others' */
	for (i = 3; i < IPC_ASYNC_WINDOW; i++)
		ck_assert_int_eq(lane_send(&t, i, WIRE_CTL_STATUS_REQUEST, 0), 0);
	ck_assert_int_eq(lane_send(&t, i, WIRE_CTL_STATUS_REQUEST, 0), -EAGAIN);
	ck_assert_uint_eq(count_of(&t, IPC_ASYNC_SEND_AGAIN), 1);
	ck_assert_int_eq(sem_post(&fake.released), 0);
	ck_assert(lane_run(&t, idle, TIMEOUT_MS));
	ck_assert_uint_eq(t.done, IPC_ASYNC_WINDOW);
	ck_assert_int_eq(t.rc[0], 0);
	ck_assert_uint_eq(t.answered[0], 0);
	ck_assert_int_eq(t.kind[1], WIRE_CTL_STATUS_RESPONSE);
	ck_assert_uint_eq(t.answered[1], 1);
	ck_assert_int_eq(t.kind[2], WIRE_CTL_ERROR);   /* the acknowledgement */
	ck_assert_uint_eq(t.answered[2], 2);
	ck_assert_uint_eq(ipc_async_bulk_inflight(t.a), 0);
	/* the lane is free again: the bulk that waited goes now */
	ck_assert_int_eq(lane_send(&t, 0, WIRE_CTL_IMPORT_BATCH, BATCH), 0);
	ck_assert(lane_run(&t, idle, TIMEOUT_MS));
	ck_assert_uint_eq(atomic_load(&fake.imported), 2 * BATCH);
	lane_stop(&t);
}
END_TEST

/*
 * One bulk request of any size goes into an empty lane; small ones share
 * it up to IPC_ASYNC_BULK_REQUESTS, whatever their entries.
 */
START_TEST(test_lane_sizes)
{
	static struct lane_test t;
	unsigned i;

	lane_start(&t);
	atomic_store(&fake.hold, true);
	ck_assert_int_eq(lane_send(&t, 0, WIRE_CTL_IMPORT_BATCH, FLOWS), 0);
	ck_assert_uint_eq(ipc_async_bulk_inflight(t.a), FLOWS);
	ck_assert_int_eq(lane_send(&t, 1, WIRE_CTL_IMPORT_BATCH, 1), -EAGAIN);
	ck_assert_int_eq(sem_post(&fake.released), 0);
	ck_assert(lane_run(&t, idle, TIMEOUT_MS));
	atomic_store(&fake.hold, true);
	for (i = 0; i < IPC_ASYNC_BULK_REQUESTS; i++)
		ck_assert_int_eq(lane_send(&t, i, WIRE_CTL_IMPORT_BATCH, 10), 0);
	ck_assert_int_eq(lane_send(&t, i, WIRE_CTL_IMPORT_BATCH, 10), -EAGAIN);
	ck_assert_uint_eq(ipc_async_bulk_inflight(t.a), 10 * IPC_ASYNC_BULK_REQUESTS);
	ck_assert_int_eq(lane_send(&t, i, WIRE_CTL_STATUS_REQUEST, 0), 0);
	ck_assert_int_eq(sem_post(&fake.released), 0);
	ck_assert(lane_run(&t, idle, TIMEOUT_MS));
	ck_assert_uint_eq(t.done, 2 + IPC_ASYNC_BULK_REQUESTS);
	ck_assert_uint_eq(atomic_load(&fake.imported), FLOWS + 10 * IPC_ASYNC_BULK_REQUESTS);
	lane_stop(&t);
}
END_TEST

/* An answer frees its place in the lane before its done(), which may
 * send the next bulk request at once. */
START_TEST(test_lane_refill_from_done)
{
	static struct lane_test t;

	lane_start(&t);
	t.chain = 20;
	ck_assert_int_eq(lane_send(&t, 0, WIRE_CTL_IMPORT_BATCH, BATCH), 0);
	ck_assert(lane_run(&t, idle, TIMEOUT_MS));
	ck_assert_uint_eq(t.done, 20);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_int_eq(t.rc[i], 0);
	ck_assert_uint_eq(atomic_load(&fake.imported), 20 * BATCH);
	ck_assert_uint_eq(count_of(&t, IPC_ASYNC_BULK_AGAIN), 0);
	lane_stop(&t);
}
END_TEST

/*
 * A server that spends 20 us an entry (82 ms an IMPORT_BATCH of 4096): the
 * lane measures it and holds less than one batch's worth, so each STATUS
 * waits for one batch at most, never the several that would keep a fast
 * server busy; every entry still goes.
 */
START_TEST(test_lane_slow_server)
{
	static struct lane_test t;
	const unsigned us = 20, batches = 6;
	unsigned limit_max = IPC_ASYNC_BULK_AHEAD_MS * 1000 / us;

	lane_start(&t);
	atomic_store(&fake.us_per_entry, us);
	t.batch = BATCH;
	t.to_send = (uint64_t)batches * BATCH;
	t.pumping = true;
	ck_assert(lane_run(&t, pumped, TIMEOUT_MS));
	printf("slow server (%u us an entry): limit %u entries, %u pings, the longest "
	       "wait %.1f ms\n", us, ipc_async_bulk_limit(t.a), t.pongs, t.ping_max_ms);
	ck_assert_uint_eq(t.acked, (uint64_t)batches * BATCH);
	ck_assert_uint_eq(atomic_load(&fake.imported), (uint64_t)batches * BATCH);
	ck_assert_uint_gt(ipc_async_bulk_limit(t.a), 0);
	ck_assert_uint_le(ipc_async_bulk_limit(t.a), limit_max);
	ck_assert_uint_eq(t.max_bulk_requests, 1);
	ck_assert_uint_le(t.max_ahead, BATCH);
	ck_assert_uint_gt(t.pongs, 0);
	ck_assert_uint_gt(count_of(&t, IPC_ASYNC_BULK_AGAIN), 0);
	lane_stop(&t);
}
END_TEST

/*
 * A server that only decodes: the lane grows past one batch (the server
 * serves one while the next waits), and never past its cap.
 */
START_TEST(test_lane_fast_server)
{
	static struct lane_test t;
	const unsigned batches = 60;

	lane_start(&t);
	t.batch = BATCH;
	t.to_send = (uint64_t)batches * BATCH;
	t.pumping = true;
	ck_assert(lane_run(&t, pumped, 4 * TIMEOUT_MS));
	printf("fast server: limit %u entries (at most %u), %u bulk requests in flight "
	       "at most, %u pings, the longest wait %.1f ms\n", ipc_async_bulk_limit(t.a),
	       t.max_limit, t.max_bulk_requests, t.pongs, t.ping_max_ms);
	ck_assert_uint_eq(t.acked, (uint64_t)batches * BATCH);
	ck_assert_uint_gt(t.max_limit, IPC_ASYNC_BULK_SAMPLE);
	ck_assert_uint_ge(t.max_bulk_requests, 2);
	ck_assert_uint_le(t.max_bulk_entries, IPC_ASYNC_BULK_ENTRIES_MAX);
	ck_assert_uint_le(t.max_limit, IPC_ASYNC_BULK_ENTRIES_MAX);
	lane_stop(&t);
}
END_TEST

/*
 * A lost connection fails the bulk in flight and empties the lane; the next
 * connection measures its server afresh.
 */
START_TEST(test_lane_lost)
{
	static struct lane_test t;

	lane_start(&t);
	t.batch = BATCH;
	t.to_send = 8 * BATCH;
	t.pumping = true;
	ck_assert(lane_run(&t, pumped, TIMEOUT_MS));
	t.pumping = false;
	fake_post(fake_pause_destroy_job, NULL);
	sem_take(&fake.paused);
	ck_assert_int_eq(lane_send(&t, 0, WIRE_CTL_IMPORT_BATCH, BATCH), 0);
	ck_assert_uint_eq(ipc_async_bulk_inflight(t.a), BATCH);
	ck_assert_int_eq(sem_post(&fake.resume), 0);
	sem_take(&fake.done);
	ck_assert(lane_run(&t, is_down, TIMEOUT_MS));
	ck_assert_int_eq(t.rc[0], -ENOTCONN);
	ck_assert_uint_eq(ipc_async_bulk_inflight(t.a), 0);
	fake_call(fake_recreate_job, NULL);
	ck_assert_ptr_nonnull(fake.server);
	ck_assert(lane_run(&t, is_up, TIMEOUT_MS));
	ck_assert_uint_eq(ipc_async_bulk_limit(t.a), IPC_ASYNC_BULK_SAMPLE);
	ck_assert_int_eq(lane_send(&t, 0, WIRE_CTL_IMPORT_BATCH, BATCH), 0);
	ck_assert(lane_run(&t, idle, TIMEOUT_MS));
	ck_assert_int_eq(t.rc[0], 0);
	lane_stop(&t);
}
END_TEST

static Suite *
ipc_async_suite(void)
{
	struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "bulk_kinds", test_bulk_kinds },
		{ "lane_holds_bulk_only", test_lane_holds_bulk_only },
		{ "lane_sizes", test_lane_sizes },
		{ "lane_refill_from_done", test_lane_refill_from_done },
		{ "lane_slow_server", test_lane_slow_server },
		{ "lane_fast_server", test_lane_fast_server },
		{ "lane_lost", test_lane_lost },
	};
	Suite *s = suite_create("ipc_async");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ipc_async_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
