/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/: the IPC server (ipc_server.c), its clients (ipc_client.c: blocking
 * and async), the daemons' signals (daemon.c), and maglbctl, against an
 * in-process fake: a thread runs a qb_loop with an ipc_server whose
 * handlers answer from canned data. The fake is for these unit tests only;
 * the real handlers are the dataplane's (check_control_ipc.c).
 *
 * Anything that touches the server (its counters, sending events) runs on
 * the loop thread through fake_call().
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <qb/qbipcc.h>
#include <qb/qbipcs.h>
#include <qb/qbloop.h>

#include "lib/daemon.h"
#include "lib/ipc_client.h"
#include "lib/ipc_server.h"

enum {
	FAKE_COUNTERS = 2000,
	FAKE_FLOWS = 2500,
	FAKE_GROUP = 4242,          /* the server's "maglb" group in tests */
	FAKE_NOBODY = 65534,
	FAKE_LARGE_FLOWS = 14000,   /* IPv6: fits one message */
	FAKE_HUGE_FLOWS = 20000,    /* IPv6: does not */
	TIMEOUT_MS = 5000,
};

#define FAKE_ODD_VIP "we\"b\n\\"   /* a name JSON must escape */

/* ------------------------------------------------------------- the fake */

struct fake {
	qb_loop_t *loop;
	struct ipc_server *server;
	pthread_t thread;
	int pipe[2];                /* fake_call() requests to the loop */
	sem_t done;
	char service[WIRE_NAME_MAX];
	atomic_bool hold;           /* the handler waits for fake_unblock() */
	sem_t released;
	sem_t paused, resume;       /* fake_pause_destroy_job() */
	/* loop thread only */
	uint64_t last_conn;
	uint64_t subscribed;
	uint64_t disconnects;
	uint64_t last_disconnected;
	uint64_t imported;
	struct wire_ctl_backend_set last_backend_set;
	uint32_t last_lease_ms;     /* of the last OWNERSHIP_SET */
	bool last_announce;
	bool standby;               /* CLUSTER_STANDBY */
};

static struct fake fake;

struct fake_job {
	void (*fn)(void *arg);
	void *arg;
};

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

/* Run fn(arg) on the loop thread; fake_wait() waits for it. */
static void
fake_post(void (*fn)(void *arg), void *arg)
{
	struct fake_job job = { fn, arg };

	ck_assert_int_eq(write(fake.pipe[1], &job, sizeof(job)), sizeof(job));
}

/* sem_wait() through signals. */
static void
sem_take(sem_t *sem)
{
	while (sem_wait(sem) < 0 && errno == EINTR)
		;
}

static void
fake_wait(void)
{
	sem_take(&fake.done);
}

/* Run fn(arg) on the loop thread and wait for it. */
static void
fake_call(void (*fn)(void *arg), void *arg)
{
	fake_post(fn, arg);
	fake_wait();
}

/*
 * The next request's handler waits, the loop thread with it, until
 * fake_unblock(): its answer cannot exist before then.
 */
static void
fake_hold(void)
{
	atomic_store(&fake.hold, true);
}

static void
fake_unblock(void)
{
	ck_assert_int_eq(sem_post(&fake.released), 0);
}

static void
fake_flow(struct wire_flow *f, size_t i, bool v6)
{
	memset(f, 0, sizeof(*f));
	f->family = v6 ? AF_INET6 : AF_INET;
	f->proto = i % 3 ? IPPROTO_TCP : IPPROTO_UDP;
	f->vip_port = 443;
	f->client_port = (uint16_t)(1024 + i % 60000);
	f->backend_family = f->family;
	f->lifetime_ms = 300000 - (uint32_t)i;
	f->flags = i % 2 ? WIRE_FLOW_ESTABLISHED : 0;
	if (v6) {
		static const uint8_t vip[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

		memcpy(f->vip, vip, 16);
		memcpy(f->client, vip, 16);
		memcpy(f->backend, vip, 16);
		f->client[8] = (uint8_t)(i >> 16);
		f->client[9] = (uint8_t)(i >> 8);
		f->client[10] = (uint8_t)i;
		f->backend[15] = (uint8_t)(2 + i % 4);
	} else {
		uint8_t vip[4] = { 198, 18, 0, 10 };
		uint8_t client[4] = { 198, 18, (uint8_t)(1 + (i >> 8)), (uint8_t)i };
		uint8_t backend[4] = { 198, 19, 0, (uint8_t)(5 + i % 4) };

		memcpy(f->vip, vip, 4);
		memcpy(f->client, client, 4);
		memcpy(f->backend, backend, 4);
	}
}

static int
fake_counters(const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	const char *scope = req->counters_request.scope;
	struct wire_ctl_counter *c = calloc(FAKE_COUNTERS, sizeof(*c));
	size_t n = 0;

	if (c == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < FAKE_COUNTERS; i++) {
		char name[WIRE_NAME_MAX];

		snprintf(name, sizeof(name), "worker%zu", i % 4);
		if (strncmp(name, scope, strlen(scope)) != 0)
			continue;
		memcpy(c[n].scope, name, sizeof(name));
		snprintf(c[n].name, sizeof(c[n].name), "counter_%04zu", i);
		c[n].value = (uint64_t)i * 1000003u;
		n++;
	}
	resp->kind = WIRE_CTL_COUNTERS_RESPONSE;
	resp->counters.counters = c;
	resp->counters.count = n;
	return 0;
}

static int
fake_dump(const struct wire_ctl_msg *req, struct wire_ctl_msg *resp)
{
	const struct wire_ctl_dump_request *d = &req->dump_request;
	size_t total = FAKE_FLOWS, n;
	bool v6 = false;
	struct wire_flow *e;

	if (strcmp(d->vip, "large") == 0 || strcmp(d->vip, "huge") == 0) {
		total = d->vip[0] == 'l' ? FAKE_LARGE_FLOWS : FAKE_HUGE_FLOWS;
		v6 = true;
	}
	if (d->cursor > total)
		return -EINVAL;
	n = total - d->cursor;
	if (!v6 && d->limit < n)
		n = d->limit;
	e = calloc(n ? n : 1, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		fake_flow(&e[i], d->cursor + i, v6);
	resp->kind = WIRE_CTL_DUMP_RESPONSE;
	resp->dump.entries = e;
	resp->dump.count = n;
	resp->dump.next_cursor = d->cursor + n < total ? d->cursor + n : 0;
	return 0;
}

static int
fake_vips(const struct wire_ctl_msg *req, struct wire_ctl_msg *resp,
	  char *errmsg, size_t errlen)
{
	static const char *const names[2] = { "web", FAKE_ODD_VIP };
	const char *want = req->vip_list_request.name;
	struct wire_ctl_vip *v = calloc(2, sizeof(*v));
	struct wire_ctl_backend *b = calloc(4, sizeof(*b));
	size_t nv = 0, nb = 0;

	if (v == NULL || b == NULL) {
		free(v);
		free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < 2; i++) {
		if (want[0] != '\0' && strcmp(want, names[i]) != 0)
			continue;
		snprintf(v[nv].name, sizeof(v[nv].name), "%s", names[i]);
		v[nv].family = AF_INET;
		v[nv].proto = IPPROTO_TCP;
		v[nv].port = i ? 0 : 443;
		v[nv].address[0] = 198, v[nv].address[1] = 18;
		v[nv].address[3] = (uint8_t)(10 + i);
		v[nv].owned = i == 0;
		v[nv].backends = 2;
		v[nv].backends_up = 2 - (uint32_t)i;
		v[nv].flows = 1234567 * (i + 1);
		v[nv].maglev_digest = 0x0123456789abcdefull + i;
		nv++;
		for (size_t k = 0; req->vip_list_request.backends && k < 2; k++) {
			snprintf(b[nb].vip, sizeof(b[nb].vip), "%s", names[i]);
			b[nb].family = AF_INET;
			b[nb].address[0] = 198, b[nb].address[1] = 19;
			b[nb].address[3] = (uint8_t)(5 + k);
			b[nb].weight = k ? 1000 : 100;
			b[nb].state = i && k ? WIRE_BACKEND_DOWN : WIRE_BACKEND_UP;
			b[nb].next_hop_resolved = k == 0;
			b[nb].next_hop_mac[0] = 2;
			b[nb].next_hop_mac[5] = 0xa0;
			nb++;
		}
	}
	resp->kind = WIRE_CTL_VIP_LIST_RESPONSE;
	resp->vip_list.vips = v;
	resp->vip_list.n_vips = nv;
	resp->vip_list.backends = b;
	resp->vip_list.n_backends = nb;
	if (nv == 0) {
		snprintf(errmsg, errlen, "no VIP named '%s'", want);
		return -ENOENT;
	}
	return 0;
}

/* syncd's one sync group, "default", synced: what sync verify asks first. */
static int
fake_sync_status(struct wire_ctl_msg *resp)
{
	struct wire_ctl_sync_group *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return -ENOMEM;
	snprintf(g->name, sizeof(g->name), "default");
	snprintf(g->state, sizeof(g->state), "synced");
	g->members[0] = 7;
	g->n_members = 1;
	resp->kind = WIRE_CTL_SYNC_STATUS;
	resp->sync_status = (struct wire_ctl_sync_status){
		.node_id = 7, .synced = true, .groups = g, .n_groups = 1,
	};
	return 0;
}

/* Three members: node 3's Maglev tables differ from the others'. */
static int
fake_sync_verify(struct wire_ctl_msg *resp)
{
	struct wire_ctl_sync_digest *d = calloc(3, sizeof(*d));

	if (d == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < 3; i++)
		d[i] = (struct wire_ctl_sync_digest){
			.node = i + 1, .entry_count = 1000, .digest = 0xabcdef,
			.maglev_digest = i == 2 ? 0x8000000000000002ull : 0x8000000000000001ull,
		};
	resp->kind = WIRE_CTL_SYNC_VERIFY_RESULT;
	snprintf(resp->sync_verify.group, WIRE_NAME_MAX, "default");
	resp->sync_verify.round = 1;
	resp->sync_verify.members = 3;
	resp->sync_verify.digests = d;
	resp->sync_verify.count = 3;
	return 0;
}

/* Node 2, passive, of three: 1 active, 2 itself in standby, 3 not heard. */
static int
fake_cluster(struct wire_ctl_msg *resp)
{
	struct wire_ctl_cluster_member *mb = calloc(3, sizeof(*mb));
	struct timespec now;

	if (mb == NULL)
		return -ENOMEM;
	clock_gettime(CLOCK_REALTIME, &now);
	mb[0] = (struct wire_ctl_cluster_member){
		.id = 1, .role = WIRE_ROLE_ACTIVE, .priority = 200, .known = true,
		.eligible = true, .dataplane = true, .synced = true, .quorate = true,
	};
	mb[1] = (struct wire_ctl_cluster_member){
		.id = 2, .role = WIRE_ROLE_PASSIVE, .priority = 100, .known = true,
		.dataplane = true, .synced = true, .quorate = true, .standby = true,
	};
	mb[2] = (struct wire_ctl_cluster_member){ .id = 3 };
	resp->kind = WIRE_CTL_CLUSTER_STATUS;
	resp->cluster = (struct wire_ctl_cluster){
		.node_id = 2, .mode = WIRE_CLUSTER_MODE_ACTIVE_PASSIVE, .preempt = true,
		.quorate = true, .role = WIRE_ROLE_PASSIVE, .standby = true,
		.role_changes = 3,
		.last_change_unix_ms = (uint64_t)now.tv_sec * 1000 - 12000,
		.lease_ms = 3000, .members = mb, .count = 3,
	};
	return 0;
}

/*
 * Serving, two routers: 198.18.0.1 Up with keyed SHA-1, 2001:db8::1 Down
 * since its control detection time expired; two drop reasons of four
 * happened.
 */
static int
fake_bfd_status(struct wire_ctl_msg *resp)
{
	static const char *const reasons[] = { "BAD_TTL", "TRUNCATED", "AUTH_BAD_DIGEST",
					       "UNKNOWN_PEER" };
	static const uint64_t counts[] = { 3, 0, 1, 0 };
	struct wire_ctl_bfd_session *s = calloc(2, sizeof(*s));
	struct wire_ctl_bfd_drop *d = calloc(4, sizeof(*d));

	if (s == NULL || d == NULL) {
		free(s);
		free(d);
		return -ENOMEM;
	}
	s[0] = (struct wire_ctl_bfd_session){
		.family = AF_INET, .peer = { 198, 18, 0, 1 }, .local = { 198, 18, 0, 10 },
		.state = WIRE_BFD_STATE_UP, .local_discriminator = 1,
		.remote_discriminator = 2654435769u, .tx_interval_us = 16500,
		.detect_time_us = 49500, .multiplier = 3, .remote_multiplier = 3,
		.state_age_ms = 3723000, .packets_in = 12345, .packets_out = 12346,
		.state_changes = 1, .authenticated = true,
	};
	s[1] = (struct wire_ctl_bfd_session){
		.family = AF_INET6, .peer = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 },
		.local = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x10 }, .state = WIRE_BFD_STATE_DOWN,
		.local_diag = WIRE_BFD_DIAG_DETECT_EXPIRED, .local_discriminator = 2,
		.tx_interval_us = 1000000, .detect_time_us = 3000000, .multiplier = 3,
		.state_age_ms = 12000, .packets_in = 10, .packets_out = 40, .state_changes = 2,
	};
	for (size_t i = 0; i < 4; i++) {
		snprintf(d[i].reason, sizeof(d[i].reason), "%s", reasons[i]);
		d[i].count = counts[i];
	}
	resp->kind = WIRE_CTL_BFD_STATUS;
	resp->bfd_status = (struct wire_ctl_bfd_status){
		.serving = true, .sessions = s, .n_sessions = 2, .drops = d, .n_drops = 4,
	};
	return 0;
}

static int
fake_request(void *ctx, uint64_t conn, const struct wire_ctl_msg *req,
	     struct wire_ctl_msg *resp, char *errmsg, size_t errlen)
{
	struct fake *f = ctx;

	f->last_conn = conn;
	if (atomic_exchange(&f->hold, false))
		sem_take(&f->released);
	switch (req->kind) {
	case WIRE_CTL_STATUS_REQUEST:
		resp->kind = WIRE_CTL_STATUS_RESPONSE;
		resp->status = (struct wire_ctl_status){
			.node_id = 7, .workers = 2, .ports = 1, .vips = 3,
			.vips_owned = 2, .uptime_ms = 90061000,
			.flows_local = 1234, .flows_synced = 567,
			.maglev_digest = 0xfedcba9876543210ull,
		};
		return 0;
	case WIRE_CTL_COUNTERS_REQUEST:
		return fake_counters(req, resp);
	case WIRE_CTL_DUMP_REQUEST:
		return fake_dump(req, resp);
	case WIRE_CTL_VIP_LIST_REQUEST:
		return fake_vips(req, resp, errmsg, errlen);
	case WIRE_CTL_FLOW_LOOKUP_REQUEST:
		resp->kind = WIRE_CTL_FLOW_LOOKUP_RESPONSE;
		resp->lookup.table = WIRE_FLOW_TABLE_WORKER;
		resp->lookup.worker = 1;
		resp->lookup.flow = req->lookup_key;
		resp->lookup.flow.backend_family = AF_INET;
		resp->lookup.flow.backend[0] = 198;
		resp->lookup.flow.backend[1] = 19;
		resp->lookup.flow.backend[3] = 5;
		resp->lookup.flow.lifetime_ms = 299500;
		resp->lookup.flow.flags = WIRE_FLOW_ESTABLISHED;
		return 0;
	case WIRE_CTL_BACKEND_SET:
		if (strcmp(req->backend_set.vip, "web") != 0) {
			snprintf(errmsg, errlen, "no VIP named '%s'",
				 req->backend_set.vip);
			return -ENOENT;
		}
		f->last_backend_set = req->backend_set;
		return 0;  /* the preset ERROR code 0 acknowledges */
	case WIRE_CTL_RELOAD_REQUEST:
		resp->kind = WIRE_CTL_RELOAD_RESULT;
		resp->reload_result.ok = req->reload_request.check_only;
		if (!resp->reload_result.ok)
			snprintf(resp->reload_result.error,
				 sizeof(resp->reload_result.error),
				 "/etc/maglb/maglb.conf:12: unknown key 'foo'");
		return 0;
	case WIRE_CTL_EXPORT_SUBSCRIBE:
		f->subscribed = req->export_subscribe.enable ? conn : 0;
		return 0;
	case WIRE_CTL_IMPORT_BATCH:
		f->imported += req->flows.count;
		return 0;
	case WIRE_CTL_OWNERSHIP_SET:
		/* another VIP than web: refused without a text (strerror) */
		if (req->ownership.count != 1 || strcmp(req->ownership.vips[0].vip, "web") != 0)
			return -EPERM;
		f->last_lease_ms = req->ownership.lease_ms;
		f->last_announce = req->ownership.announce;
		return 0;
	case WIRE_CTL_SYNC_VERIFY_REQUEST:
		return fake_sync_verify(resp);
	case WIRE_CTL_SYNC_STATUS_REQUEST:
		return fake_sync_status(resp);
	case WIRE_CTL_CLUSTER_REQUEST:
		return fake_cluster(resp);
	case WIRE_CTL_BFD_STATUS_REQUEST:
		return fake_bfd_status(resp);
	case WIRE_CTL_CLUSTER_STANDBY:
		f->standby = req->cluster_standby.on;
		return 0;
	default:
		return -EPERM;  /* errmsg left empty: strerror */
	}
}

static void
fake_release(void *ctx, struct wire_ctl_msg *resp)
{
	(void)ctx;
	switch (resp->kind) {
	case WIRE_CTL_COUNTERS_RESPONSE:
		free(resp->counters.counters);
		break;
	case WIRE_CTL_DUMP_RESPONSE:
		free(resp->dump.entries);
		break;
	case WIRE_CTL_VIP_LIST_RESPONSE:
		free(resp->vip_list.vips);
		free(resp->vip_list.backends);
		break;
	case WIRE_CTL_SYNC_VERIFY_RESULT:
		free(resp->sync_verify.digests);
		break;
	case WIRE_CTL_CLUSTER_STATUS:
		free(resp->cluster.members);
		break;
	case WIRE_CTL_SYNC_STATUS:
		free(resp->sync_status.groups);
		break;
	case WIRE_CTL_BFD_STATUS:
		free(resp->bfd_status.sessions);
		free(resp->bfd_status.drops);
		break;
	default:
		break;
	}
}

static void
fake_disconnected(void *ctx, uint64_t conn)
{
	struct fake *f = ctx;

	f->disconnects++;
	f->last_disconnected = conn;
	if (f->subscribed == conn)
		f->subscribed = 0;
}

static const struct ipc_handlers fake_handlers = {
	.request = fake_request,
	.release = fake_release,
	.disconnected = fake_disconnected,
};

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
	snprintf(fake.service, sizeof(fake.service), "maglb-check-%ld",
		 (long)getpid());
	ck_assert_int_eq(sem_init(&fake.done, 0, 0), 0);
	ck_assert_int_eq(sem_init(&fake.released, 0, 0), 0);
	ck_assert_int_eq(sem_init(&fake.paused, 0, 0), 0);
	ck_assert_int_eq(sem_init(&fake.resume, 0, 0), 0);
	ck_assert_int_eq(pipe2(fake.pipe, O_CLOEXEC), 0);
	fake.loop = qb_loop_create();
	ck_assert_ptr_nonnull(fake.loop);
	ck_assert_int_eq(qb_loop_poll_add(fake.loop, QB_LOOP_HIGH, fake.pipe[0],
					  POLLIN, NULL, fake_pipe_ready), 0);
	fake.server = ipc_server_create(fake.loop, fake.service, FAKE_GROUP,
					&fake_handlers, &fake);
	ck_assert_ptr_nonnull(fake.server);
	ck_assert_int_eq(pthread_create(&fake.thread, NULL, fake_thread, NULL),
			 0);
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

/* Server state, read on the loop thread. */
struct fake_snapshot {
	struct ipc_server_counters counters;
	unsigned connections;
	uint64_t last_conn, subscribed, disconnects, last_disconnected;
	uint64_t imported;
	uint32_t last_lease_ms;
	bool last_announce, standby;
};

static void
fake_snapshot_job(void *arg)
{
	struct fake_snapshot *s = arg;

	s->counters = *ipc_server_counters(fake.server);
	s->connections = ipc_server_connections(fake.server);
	s->last_conn = fake.last_conn;
	s->subscribed = fake.subscribed;
	s->disconnects = fake.disconnects;
	s->last_disconnected = fake.last_disconnected;
	s->imported = fake.imported;
	s->last_lease_ms = fake.last_lease_ms;
	s->last_announce = fake.last_announce;
	s->standby = fake.standby;
}

static struct fake_snapshot
fake_snapshot(void)
{
	struct fake_snapshot s;

	fake_call(fake_snapshot_job, &s);
	return s;
}

struct fake_event {
	uint64_t seq;
	size_t entries;
	int rc;
};

static void
fake_event_job(void *arg)
{
	struct fake_event *ev = arg;
	struct wire_ctl_msg m = { .kind = WIRE_CTL_EXPORT_BATCH };
	struct wire_flow *e = calloc(ev->entries, sizeof(*e));

	for (size_t i = 0; i < ev->entries; i++)
		fake_flow(&e[i], ev->seq * 10000 + i, true);
	m.request_id = ev->seq;
	m.flows.event = WIRE_FLOW_EVENT_NEW;
	m.flows.entries = e;
	m.flows.count = ev->entries;
	m.flows.dropped = ev->seq;
	ev->rc = ipc_server_send_event(fake.server, fake.subscribed, &m);
	free(e);
}

/* Push one export batch to the subscribed connection; its rc. */
static int
fake_event(uint64_t seq, size_t entries)
{
	struct fake_event ev = { seq, entries, 0 };

	fake_call(fake_event_job, &ev);
	return ev.rc;
}

/* ------------------------------------------------------------- helpers */

static struct ipc_client *
client_connect(void)
{
	struct ipc_client *c = NULL;

	ck_assert_int_eq(ipc_client_connect(fake.service, &c), 0);
	ck_assert_ptr_nonnull(c);
	return c;
}

static void
client_request(struct ipc_client *c, const struct wire_ctl_msg *req,
	       enum wire_ctl_kind want, struct wire_ctl_msg *resp)
{
	ck_assert_int_eq(ipc_client_request(c, req, resp, TIMEOUT_MS), 0);
	ck_assert_msg(resp->kind == want, "got %s, want %s",
		      wire_ctl_kind_names[resp->kind], wire_ctl_kind_names[want]);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------- round trips */

START_TEST(test_status_round_trip)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_STATUS_REQUEST }, resp;
	struct ipc_client *c = client_connect();

	ck_assert_str_eq(ipc_client_service(c), fake.service);
	client_request(c, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	ck_assert_uint_eq(resp.version, WIRE_VERSION);
	ck_assert_uint_eq(resp.status.node_id, 7);
	ck_assert_uint_eq(resp.status.workers, 2);
	ck_assert_uint_eq(resp.status.vips_owned, 2);
	ck_assert_uint_eq(resp.status.uptime_ms, 90061000);
	ck_assert_uint_eq(resp.status.flows_local, 1234);
	ck_assert_uint_eq(resp.status.flows_synced, 567);
	wire_ctl_msg_free(&resp);
	/* and again on the same connection: ids advance, answers pair up */
	client_request(c, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	ck_assert_uint_eq(resp.request_id, 2);
	ck_assert_uint_eq(fake_snapshot().counters.counts[IPC_COUNTER_REQUESTS],
			  2);
	ipc_client_close(c);
}
END_TEST

START_TEST(test_counters_2000)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_COUNTERS_REQUEST }, resp;
	struct ipc_client *c = client_connect();

	client_request(c, &req, WIRE_CTL_COUNTERS_RESPONSE, &resp);
	ck_assert_uint_eq(resp.counters.count, FAKE_COUNTERS);
	for (size_t i = 0; i < FAKE_COUNTERS; i++) {
		char name[WIRE_NAME_MAX];

		snprintf(name, sizeof(name), "counter_%04zu", i);
		ck_assert_str_eq(resp.counters.counters[i].name, name);
		ck_assert_uint_eq(resp.counters.counters[i].value,
				  (uint64_t)i * 1000003u);
	}
	wire_ctl_msg_free(&resp);
	snprintf(req.counters_request.scope, WIRE_NAME_MAX, "worker1");
	client_request(c, &req, WIRE_CTL_COUNTERS_RESPONSE, &resp);
	ck_assert_uint_eq(resp.counters.count, FAKE_COUNTERS / 4);
	ck_assert_str_eq(resp.counters.counters[0].scope, "worker1");
	wire_ctl_msg_free(&resp);
	ipc_client_close(c);
}
END_TEST

START_TEST(test_dump_pages)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_DUMP_REQUEST }, resp;
	struct ipc_client *c = client_connect();
	size_t total = 0, pages = 0;
	struct wire_flow want;

	req.dump_request.limit = 1000;
	do {
		client_request(c, &req, WIRE_CTL_DUMP_RESPONSE, &resp);
		ck_assert_uint_le(resp.dump.count, 1000);
		for (size_t i = 0; i < resp.dump.count; i++) {
			fake_flow(&want, total + i, false);
			ck_assert_mem_eq(&resp.dump.entries[i], &want,
					 sizeof(want));
		}
		total += resp.dump.count;
		pages++;
		req.dump_request.cursor = resp.dump.next_cursor;
		wire_ctl_msg_free(&resp);
	} while (req.dump_request.cursor != 0);
	ck_assert_uint_eq(total, FAKE_FLOWS);
	ck_assert_uint_eq(pages, 3);
	ipc_client_close(c);
}
END_TEST

START_TEST(test_message_bound)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_DUMP_REQUEST }, resp;
	struct ipc_client *c = client_connect();

	/* 14000 IPv6 entries, about 1 MB: one message */
	snprintf(req.dump_request.vip, WIRE_NAME_MAX, "large");
	client_request(c, &req, WIRE_CTL_DUMP_RESPONSE, &resp);
	ck_assert_uint_eq(resp.dump.count, FAKE_LARGE_FLOWS);
	ck_assert_uint_eq(resp.dump.next_cursor, 0);
	wire_ctl_msg_free(&resp);
	/* 20000 do not fit: EMSGSIZE instead, and the connection goes on */
	snprintf(req.dump_request.vip, WIRE_NAME_MAX, "huge");
	client_request(c, &req, WIRE_CTL_ERROR, &resp);
	ck_assert_int_eq(resp.error.code, EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(resp.error.message, "limit"));
	wire_ctl_msg_free(&resp);
	ck_assert_uint_eq(fake_snapshot().counters.counts
			  [IPC_COUNTER_RESPONSE_TOO_BIG], 1);
	req = (struct wire_ctl_msg){ .kind = WIRE_CTL_STATUS_REQUEST };
	client_request(c, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	ipc_client_close(c);
}
END_TEST

START_TEST(test_error_reply)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_VIP_LIST_REQUEST }, resp;
	struct ipc_client *c = client_connect();
	struct wire_ctl_ownership_entry own = { "db", true };

	snprintf(req.vip_list_request.name, WIRE_NAME_MAX, "nope");
	client_request(c, &req, WIRE_CTL_ERROR, &resp);
	ck_assert_int_eq(resp.error.code, ENOENT);
	ck_assert_str_eq(resp.error.message, "no VIP named 'nope'");
	ck_assert_uint_eq(resp.request_id, 1);
	wire_ctl_msg_free(&resp);
	/* no text from the handler: strerror */
	req = (struct wire_ctl_msg){ .kind = WIRE_CTL_OWNERSHIP_SET };
	req.ownership.vips = &own;
	req.ownership.count = 1;
	client_request(c, &req, WIRE_CTL_ERROR, &resp);
	ck_assert_int_eq(resp.error.code, EPERM);
	ck_assert_str_eq(resp.error.message, strerror(EPERM));
	wire_ctl_msg_free(&resp);
	/* an acknowledgement is an ERROR with code 0 */
	req = (struct wire_ctl_msg){ .kind = WIRE_CTL_BACKEND_SET };
	snprintf(req.backend_set.vip, WIRE_NAME_MAX, "web");
	req.backend_set.family = AF_INET;
	req.backend_set.backend[0] = 198;
	req.backend_set.action = WIRE_BACKEND_DRAIN;
	client_request(c, &req, WIRE_CTL_ERROR, &resp);
	ck_assert_int_eq(resp.error.code, 0);
	ck_assert_uint_eq(fake_snapshot().counters.counts
			  [IPC_COUNTER_HANDLER_ERRORS], 2);
	ipc_client_close(c);
}
END_TEST

/* ---------------------------------------------------------------- events */

static void
subscribe(struct ipc_client *c)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_EXPORT_SUBSCRIBE }, resp;

	req.export_subscribe.enable = true;
	client_request(c, &req, WIRE_CTL_ERROR, &resp);
	ck_assert_int_eq(resp.error.code, 0);
	ck_assert_uint_ne(fake_snapshot().subscribed, 0);
}

START_TEST(test_export_events)
{
	struct ipc_client *c = client_connect();
	struct wire_ctl_msg m;
	struct pollfd pfd;

	subscribe(c);
	ck_assert_int_eq(ipc_client_event_recv(c, &m, 0), -EAGAIN);
	for (uint64_t seq = 1; seq <= 3; seq++)
		ck_assert_int_eq(fake_event(seq, 100), 0);
	pfd = (struct pollfd){ .fd = ipc_client_fd(c), .events = POLLIN };
	ck_assert_int_ge(pfd.fd, 0);
	ck_assert_int_eq(poll(&pfd, 1, TIMEOUT_MS), 1);
	for (uint64_t seq = 1; seq <= 3; seq++) {
		struct wire_flow want;

		ck_assert_int_eq(ipc_client_event_recv(c, &m, TIMEOUT_MS), 0);
		ck_assert_int_eq(m.kind, WIRE_CTL_EXPORT_BATCH);
		ck_assert_uint_eq(m.request_id, seq);
		ck_assert_uint_eq(m.flows.dropped, seq);
		ck_assert_int_eq(m.flows.event, WIRE_FLOW_EVENT_NEW);
		ck_assert_uint_eq(m.flows.count, 100);
		fake_flow(&want, seq * 10000 + 99, true);
		ck_assert_mem_eq(&m.flows.entries[99], &want, sizeof(want));
		wire_ctl_msg_free(&m);
	}
	ck_assert_int_eq(ipc_client_event_recv(c, &m, 0), -EAGAIN);
	ck_assert_uint_eq(fake_snapshot().counters.counts[IPC_COUNTER_EVENTS],
			  3);
	ipc_client_close(c);
}
END_TEST

/*
 * A client that does not read: its event ring fills, and from then on every
 * send is refused with -EAGAIN and counted, never blocks (the loop thread
 * sends while this thread, the only reader, waits for it: a send that
 * waited for room would never return). Nothing is lost silently: the client
 * gets every event that was accepted, in order, and none that was refused.
 * How many fit is libqb's ring sizing, not ours: only that one does, and
 * that the ring is bounded.
 */
START_TEST(test_event_backpressure)
{
	enum {
		ENTRIES = 900,          /* IPv6: about 64 KiB a batch */
		SENDS_MAX = 1024,       /* 64 MiB: past any ring of IPC_MSG_MAX */
	};
	struct ipc_client *c = client_connect();
	struct fake_snapshot snap;
	struct wire_ctl_msg m;
	uint64_t sent = 0;
	int rc = 0;

	subscribe(c);
	while (sent < SENDS_MAX && (rc = fake_event(sent + 1, ENTRIES)) == 0)
		sent++;
	ck_assert_int_eq(rc, -EAGAIN);
	ck_assert_uint_ge(sent, 1);
	ck_assert_int_eq(fake_event(sent + 1, ENTRIES), -EAGAIN);
	snap = fake_snapshot();
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_EVENT_DROPS], 2);
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_EVENTS], sent);
	/* requests still get answers while the event ring is full */
	{
		struct wire_ctl_msg req = { .kind = WIRE_CTL_STATUS_REQUEST };

		client_request(c, &req, WIRE_CTL_STATUS_RESPONSE, &m);
	}
	/* the client drains in order; then there is room again */
	for (uint64_t seq = 1; seq <= sent; seq++) {
		ck_assert_int_eq(ipc_client_event_recv(c, &m, TIMEOUT_MS), 0);
		ck_assert_uint_eq(m.request_id, seq);
		ck_assert_uint_eq(m.flows.count, ENTRIES);
		wire_ctl_msg_free(&m);
	}
	ck_assert_int_eq(ipc_client_event_recv(c, &m, 0), -EAGAIN);
	ck_assert_int_eq(fake_event(sent + 1, ENTRIES), 0);
	ck_assert_int_eq(ipc_client_event_recv(c, &m, TIMEOUT_MS), 0);
	ck_assert_uint_eq(m.request_id, sent + 1);
	wire_ctl_msg_free(&m);
	ck_assert_int_eq(ipc_client_event_recv(c, &m, 0), -EAGAIN);
	ipc_client_close(c);
}
END_TEST

START_TEST(test_event_unknown_connection)
{
	struct fake_event ev = { 1, 1, 0 };

	/* nobody subscribed: connection 0 does not exist */
	fake_call(fake_event_job, &ev);
	ck_assert_int_eq(ev.rc, -ENOENT);
}
END_TEST

/* ------------------------------------------------------ hostile input */

/* Send raw wire bytes (with id and size as given) and decode the reply. */
static void
raw_exchange(qb_ipcc_connection_t *qb, int32_t id, int32_t size_delta,
	     const uint8_t *bytes, size_t len, struct wire_ctl_msg *reply)
{
	static uint8_t buf[IPC_MSG_MAX];
	struct qb_ipc_request_header *hdr = (void *)buf;
	struct qb_ipc_response_header *rh = (void *)buf;
	ssize_t n;

	memset(hdr, 0, sizeof(*hdr));
	hdr->id = id;
	hdr->size = (int32_t)(sizeof(*hdr) + len) + size_delta;
	memcpy(buf + sizeof(*hdr), bytes, len);
	ck_assert_int_eq(qb_ipcc_send(qb, buf, sizeof(*hdr) + len),
			 (ssize_t)(sizeof(*hdr) + len));
	n = qb_ipcc_recv(qb, buf, sizeof(buf), TIMEOUT_MS);
	ck_assert_int_gt(n, (ssize_t)sizeof(*rh));
	ck_assert_int_eq(rh->size, n);
	ck_assert_int_eq(rh->id, IPC_MSG_ID);
	ck_assert_int_eq(wire_ctl_decode(buf + sizeof(*rh),
					 (size_t)n - sizeof(*rh), reply, NULL), 0);
}

static void
raw_expect_error(qb_ipcc_connection_t *qb, int32_t id, int32_t size_delta,
		 const uint8_t *bytes, size_t len, int code)
{
	struct wire_ctl_msg reply;

	raw_exchange(qb, id, size_delta, bytes, len, &reply);
	ck_assert_int_eq(reply.kind, WIRE_CTL_ERROR);
	ck_assert_msg(reply.error.code == code, "code %d (%s), want %d",
		      reply.error.code, reply.error.message, code);
	ck_assert_str_ne(reply.error.message, "");
	wire_ctl_msg_free(&reply);
}

START_TEST(test_garbage)
{
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0x07, 0x13 };
	/* this version, then an empty body in field 99, which no kind uses */
	static const uint8_t unknown_kind[] = { 0x08, WIRE_VERSION, 0x9a, 0x06, 0x00 };
	struct wire_ctl_msg m = { .kind = WIRE_CTL_STATUS_REQUEST }, reply;
	qb_ipcc_connection_t *qb = qb_ipcc_connect(fake.service, IPC_MSG_MAX);
	struct fake_snapshot snap;
	uint8_t bytes[256];
	size_t len;

	ck_assert_ptr_nonnull(qb);
	raw_expect_error(qb, IPC_MSG_ID, 0, garbage, sizeof(garbage), EBADMSG);
	/* a valid request of the next version */
	ck_assert_int_eq(wire_ctl_encode(&m, bytes, sizeof(bytes), &len), 0);
	ck_assert_uint_eq(bytes[0], 0x08);
	bytes[1] = WIRE_VERSION + 1;
	raw_expect_error(qb, IPC_MSG_ID, 0, bytes, len, EPROTONOSUPPORT);
	raw_expect_error(qb, IPC_MSG_ID, 0, unknown_kind, sizeof(unknown_kind),
			 EBADMSG);
	/* a response kind sent as a request */
	m = (struct wire_ctl_msg){ .kind = WIRE_CTL_STATUS_RESPONSE };
	ck_assert_int_eq(wire_ctl_encode(&m, bytes, sizeof(bytes), &len), 0);
	raw_expect_error(qb, IPC_MSG_ID, 0, bytes, len, EBADRQC);
	/* libqb header: unknown id, size that lies */
	m = (struct wire_ctl_msg){ .kind = WIRE_CTL_STATUS_REQUEST };
	ck_assert_int_eq(wire_ctl_encode(&m, bytes, sizeof(bytes), &len), 0);
	raw_expect_error(qb, IPC_MSG_ID + 5, 0, bytes, len, EBADMSG);
	raw_expect_error(qb, IPC_MSG_ID, -(int32_t)len - 8, bytes, len, EBADMSG);
	raw_expect_error(qb, IPC_MSG_ID, IPC_MSG_MAX, bytes, len, EBADMSG);
	/* the connection still serves */
	raw_exchange(qb, IPC_MSG_ID, 0, bytes, len, &reply);
	ck_assert_int_eq(reply.kind, WIRE_CTL_STATUS_RESPONSE);
	snap = fake_snapshot();
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_BAD_REQUEST], 3);
	ck_assert_uint_eq(snap.counters.wire.drops[WIRE_DROP_TRUNCATED], 1);
	ck_assert_uint_eq(snap.counters.wire.drops[WIRE_DROP_BAD_VERSION], 1);
	ck_assert_uint_eq(snap.counters.wire.drops[WIRE_DROP_UNKNOWN_KIND], 1);
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_NOT_A_REQUEST], 1);
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_BAD_HEADER], 3);
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_REQUESTS], 1);
	qb_ipcc_disconnect(qb);
}
END_TEST

/* ------------------------------------------------------- connections */

START_TEST(test_not_running)
{
	struct ipc_client *c = NULL;
	char name[WIRE_NAME_MAX], text[WIRE_TEXT_MAX], want[WIRE_TEXT_MAX];

	snprintf(name, sizeof(name), "maglb-check-nobody-%ld", (long)getpid());
	ck_assert_int_eq(ipc_client_connect(name, &c), -ECONNREFUSED);
	ck_assert_ptr_null(c);
	snprintf(want, sizeof(want), "service %s is not running", name);
	ck_assert_str_eq(ipc_strerror(-ECONNREFUSED, name, text, sizeof(text)),
			 want);
	/* maglb's own services name the program that serves them */
	ck_assert_str_eq(ipc_strerror(-ECONNREFUSED, IPC_SERVICE_SYNCD, text,
				      sizeof(text)), "service maglb-syncd is not "
			 "running (maglb-syncd serves it)");
	ck_assert_str_eq(ipc_strerror(-ENOTCONN, NULL, text, sizeof(text)),
			 "service maglb-dataplane closed the connection "
			 "(maglb-dataplane serves it)");
	ck_assert_str_eq(ipc_strerror(-EACCES, IPC_SERVICE_SYNCD, text,
				      sizeof(text)), "permission denied by "
			 "service maglb-syncd (maglb-syncd serves it): run as "
			 "root or as a member of the maglb group");
	ck_assert_str_eq(ipc_strerror(-ETIMEDOUT, name, text, sizeof(text)) +
			 strlen(name) + 8, " did not answer in time");
}
END_TEST

static void
fake_destroy_job(void *arg)
{
	(void)arg;
	ipc_server_destroy(fake.server);
	fake.server = NULL;
}

START_TEST(test_server_gone)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_STATUS_REQUEST }, resp;
	struct ipc_client *c = client_connect();
	uint64_t disconnects;

	client_request(c, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	fake_call(fake_destroy_job, NULL);
	disconnects = fake.disconnects;  /* the loop thread is idle now */
	ck_assert_uint_eq(disconnects, 1);
	ck_assert_int_eq(ipc_client_request(c, &req, &resp, 2000), -ENOTCONN);
	ipc_client_close(c);
}
END_TEST

/*
 * The handler holds the request until after the client has given up, so
 * the answer is certainly late: a client that waited for it instead of
 * its timeout would wait here forever (the suite's timeout fails it).
 */
START_TEST(test_timeout_then_next)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_COUNTERS_REQUEST }, resp;
	struct ipc_client *c = client_connect();
	double t0 = now_ms(), waited;

	fake_hold();
	ck_assert_int_eq(ipc_client_request(c, &req, &resp, 100), -ETIMEDOUT);
	waited = now_ms() - t0;
	fake_unblock();
	/* its own timeout, not a far longer one (seconds for milliseconds) */
	ck_assert_double_ge(waited, 99.0);
	ck_assert_double_lt(waited, 2000.0);
	/* the late COUNTERS answer is skipped; this one is ours */
	req = (struct wire_ctl_msg){ .kind = WIRE_CTL_STATUS_REQUEST };
	client_request(c, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	ck_assert_uint_eq(resp.request_id, 2);
	ipc_client_close(c);
}
END_TEST

START_TEST(test_disconnected)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_STATUS_REQUEST }, resp;
	struct ipc_client *a = client_connect(), *b = client_connect();
	struct fake_snapshot snap;
	uint64_t id_b;

	client_request(b, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	id_b = fake_snapshot().last_conn;
	subscribe(b);
	ck_assert_uint_eq(fake_snapshot().connections, 2);
	ipc_client_close(b);
	for (int i = 0; i < 200; i++) {
		snap = fake_snapshot();
		if (snap.disconnects > 0)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(snap.disconnects, 1);
	ck_assert_uint_eq(snap.last_disconnected, id_b);
	ck_assert_uint_eq(snap.subscribed, 0);
	ck_assert_uint_eq(snap.connections, 1);
	ck_assert_uint_eq(snap.counters.counts[IPC_COUNTER_ACCEPTED], 2);
	client_request(a, &req, WIRE_CTL_STATUS_RESPONSE, &resp);
	ipc_client_close(a);
}
END_TEST

/*
 * In a child with other credentials, connect and ask for the status:
 * exits 0 if that worked, 10 + errno of the connect otherwise.
 */
static int
access_child(gid_t gid, const gid_t *groups, size_t ngroups)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct wire_ctl_msg req = { .kind = WIRE_CTL_STATUS_REQUEST };
		struct wire_ctl_msg resp;
		struct ipc_client *c = NULL;
		int rc;

		if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0 ||
		    setuid(FAKE_NOBODY) < 0)
			_exit(2);
		rc = ipc_client_connect(fake.service, &c);
		if (rc < 0)
			_exit(10 + -rc < 255 ? 10 + -rc : 255);
		rc = ipc_client_request(c, &req, &resp, TIMEOUT_MS);
		_exit(rc == 0 && resp.kind == WIRE_CTL_STATUS_RESPONSE ? 0 : 3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_access)
{
	const gid_t group = FAKE_GROUP;

	if (geteuid() != 0)
		return;  /* needs root to take other credentials */
	ck_assert_int_eq(access_child(FAKE_NOBODY, NULL, 0), 10 + EACCES);
	/* the group as primary, then as a supplementary group */
	ck_assert_int_eq(access_child(FAKE_GROUP, NULL, 0), 0);
	ck_assert_int_eq(access_child(FAKE_NOBODY, &group, 1), 0);
	ck_assert_uint_eq(fake_snapshot().counters.counts[IPC_COUNTER_REFUSED],
			  1);
}
END_TEST

static void
fake_root_only_job(void *arg)
{
	(void)arg;
	ipc_server_destroy(fake.server);
	fake.server = ipc_server_create(fake.loop, fake.service, (gid_t)-1,
					&fake_handlers, &fake);
}

START_TEST(test_access_root_only)
{
	struct ipc_client *c = NULL;

	if (geteuid() != 0)
		return;
	fake_call(fake_root_only_job, NULL);
	ck_assert_ptr_nonnull(fake.server);
	ck_assert_int_eq(access_child(FAKE_GROUP, NULL, 0), 10 + EACCES);
	ck_assert_int_eq(ipc_client_connect(fake.service, &c), 0);
	ipc_client_close(c);
}
END_TEST

/* ------------------------------------------------------- stale files */

/* A pid that no process has now: a child's, reaped. */
static pid_t
dead_pid(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* A connection directory as libqb leaves it: the six rings of service. */
static void
stale_dir(char *dir, size_t len, pid_t server, pid_t client,
	  const char *service)
{
	static const char *const rings[] = { "request", "response", "event" };

	snprintf(dir, len, "/dev/shm/qb-%ld-%ld-99-Xy12Zw", (long)server,
		 (long)client);
	ck_assert_int_eq(mkdir(dir, 0770), 0);
	for (size_t r = 0; r < 3; r++) {
		for (int p = 0; p < 2; p++) {
			char path[PATH_MAX];
			int fd;

			snprintf(path, sizeof(path), "%s/qb-%s-%s-%s", dir, rings[r],
				 service, p ? "data" : "header");
			fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
			ck_assert_int_ge(fd, 0);
			close(fd);
		}
	}
}

static void
rm_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void
fake_restart_job(void *arg)
{
	(void)arg;
	ipc_server_destroy(fake.server);
	fake.server = ipc_server_create(fake.loop, fake.service, FAKE_GROUP,
					&fake_handlers, &fake);
}

/* A server's start removes its service's rings left by dead servers only. */
START_TEST(test_stale_shm)
{
	char dead[PATH_MAX], alive[PATH_MAX], other[PATH_MAX];
	char name[WIRE_NAME_MAX + 8];
	pid_t gone = dead_pid();
	struct stat st;

	snprintf(name, sizeof(name), "%s-other", fake.service);
	stale_dir(dead, sizeof(dead), gone, gone, fake.service);
	stale_dir(alive, sizeof(alive), getppid(), gone, fake.service);
	stale_dir(other, sizeof(other), gone, gone + 1, name);
	fake_call(fake_restart_job, NULL);
	ck_assert_ptr_nonnull(fake.server);
	ck_assert_int_eq(stat(dead, &st), -1);
	ck_assert_int_eq(stat(alive, &st), 0);  /* its server lives */
	ck_assert_int_eq(stat(other, &st), 0);  /* another service's */
	ck_assert_uint_eq(fake_snapshot().counters.counts[IPC_COUNTER_STALE_FILES],
			  6);
	rm_dir(alive);
	rm_dir(other);
}
END_TEST

/* --------------------------------------------------------- async client */

enum {
	ASYNC_MAX = 256,    /* requests one test sends */
};

/* An async client on a loop of the test's thread, and what it saw. */
struct async_test {
	qb_loop_t *loop;
	struct ipc_async *a;
	unsigned ups, downs, events, done;
	int last_down;
	uint64_t last_event;
	bool resubscribe;                   /* up() subscribes */
	int rc[ASYNC_MAX];
	int kind[ASYNC_MAX];
	uint64_t id[ASYNC_MAX];
	double done_ms[ASYNC_MAX];
	unsigned chain;                     /* done() sends the next import */
	bool (*until)(struct async_test *t);
	double deadline;
	qb_loop_timer_handle tick;
};

struct async_req {
	struct async_test *t;
	unsigned i;
};

static struct async_req async_reqs[ASYNC_MAX];
static struct wire_flow async_flows[100];

static void async_done(void *arg, int rc, const struct wire_ctl_msg *resp);

static void
async_subscribe(struct async_test *t)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_EXPORT_SUBSCRIBE };

	req.export_subscribe.enable = true;
	async_reqs[ASYNC_MAX - 1] = (struct async_req){ t, ASYNC_MAX - 1 };
	ck_assert_int_eq(ipc_async_send(t->a, &req, async_done,
					&async_reqs[ASYNC_MAX - 1]), 0);
}

static void
async_up(void *arg)
{
	struct async_test *t = arg;

	t->ups++;
	ck_assert(ipc_async_connected(t->a));
	if (t->resubscribe)
		async_subscribe(t);
}

static void
async_down(void *arg, int err)
{
	struct async_test *t = arg;

	t->downs++;
	t->last_down = err;
}

static void
async_event(void *arg, const struct wire_ctl_msg *m)
{
	struct async_test *t = arg;

	t->events++;
	t->last_event = m->request_id;
}

static const struct ipc_async_ops async_ops = {
	.up = async_up, .down = async_down, .event = async_event,
};

/* Send request i of kind (an IMPORT_BATCH of 100 flows, or no body). */
static int
async_send(struct async_test *t, unsigned i, enum wire_ctl_kind kind)
{
	struct wire_ctl_msg req = { .kind = kind };

	if (kind == WIRE_CTL_IMPORT_BATCH) {
		req.flows.entries = async_flows;
		req.flows.count = 100;
	}
	async_reqs[i] = (struct async_req){ t, i };
	return ipc_async_send(t->a, &req, async_done, &async_reqs[i]);
}

static void
async_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct async_req *r = arg;
	struct async_test *t = r->t;

	t->rc[r->i] = rc;
	t->kind[r->i] = resp != NULL ? (int)resp->kind : -1;
	t->id[r->i] = resp != NULL ? resp->request_id : 0;
	t->done_ms[r->i] = now_ms();
	t->done++;
	if (t->chain > r->i + 1)    /* the next one, from inside done() */
		ck_assert_int_eq(async_send(t, r->i + 1, WIRE_CTL_IMPORT_BATCH), 0);
}

static void
async_tick(void *data)
{
	struct async_test *t = data;

	if (t->until(t) || now_ms() > t->deadline) {
		qb_loop_stop(t->loop);
		return;
	}
	qb_loop_timer_add(t->loop, QB_LOOP_LOW, 1000000, t, async_tick, &t->tick);
}

/* Run the client's loop until until(t) holds or ms pass; until(t). */
static bool
async_run(struct async_test *t, bool (*until)(struct async_test *t), double ms)
{
	t->until = until;
	t->deadline = now_ms() + ms;
	qb_loop_timer_add(t->loop, QB_LOOP_LOW, 0, t, async_tick, &t->tick);
	qb_loop_run(t->loop);
	return until(t);
}

static bool
async_is_up(struct async_test *t)
{
	return ipc_async_connected(t->a);
}

static bool
async_is_down(struct async_test *t)
{
	return t->downs > 0 && !ipc_async_connected(t->a);
}

static bool
async_idle(struct async_test *t)
{
	return ipc_async_inflight(t->a) == 0;
}

static bool
async_events_1(struct async_test *t)
{
	return t->events >= 1;
}

static bool
async_events_2(struct async_test *t)
{
	return t->events >= 2;
}

static void
async_start(struct async_test *t, const char *service)
{
	memset(t, 0, sizeof(*t));
	t->loop = qb_loop_create();
	ck_assert_ptr_nonnull(t->loop);
	t->a = ipc_async_create(t->loop, service, &async_ops, t);
	ck_assert_ptr_nonnull(t->a);
	for (size_t i = 0; i < 100; i++)
		fake_flow(&async_flows[i], i, i % 2);
}

static void
async_stop(struct async_test *t)
{
	ipc_async_destroy(t->a);
	qb_loop_destroy(t->loop);
}

START_TEST(test_async_pipeline)
{
	static struct async_test t;
	const struct ipc_async_counters *ac;
	struct wire_ctl_msg bad = { .kind = WIRE_CTL_VIP_LIST_REQUEST };

	async_start(&t, fake.service);
	ck_assert_int_eq(async_send(&t, 0, WIRE_CTL_STATUS_REQUEST), -ENOTCONN);
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	ck_assert_uint_eq(t.ups, 1);
	ck_assert_uint_eq(t.downs, 0);
	/* a full window of requests, all in flight at once */
	for (unsigned i = 0; i < IPC_ASYNC_WINDOW; i++)
		ck_assert_int_eq(async_send(&t, i, i % 2 ? WIRE_CTL_STATUS_REQUEST :
					    WIRE_CTL_IMPORT_BATCH), 0);
	ck_assert_uint_eq(ipc_async_inflight(t.a), IPC_ASYNC_WINDOW);
	ck_assert_int_eq(async_send(&t, IPC_ASYNC_WINDOW, WIRE_CTL_STATUS_REQUEST),
			 -EAGAIN);
	ck_assert(async_run(&t, async_idle, TIMEOUT_MS));
	ck_assert_uint_eq(t.done, IPC_ASYNC_WINDOW);
	for (unsigned i = 0; i < IPC_ASYNC_WINDOW; i++) {
		ck_assert_int_eq(t.rc[i], 0);
		ck_assert_int_eq(t.kind[i], i % 2 ? WIRE_CTL_STATUS_RESPONSE :
				 WIRE_CTL_ERROR);
		ck_assert_uint_eq(t.id[i], i + 1);  /* each its own answer */
	}
	ck_assert_uint_eq(fake_snapshot().counters.counts[IPC_COUNTER_REQUESTS],
			  IPC_ASYNC_WINDOW);
	/* an error answer is an answer (rc 0), counted as an error */
	snprintf(bad.vip_list_request.name, WIRE_NAME_MAX, "nope");
	async_reqs[0] = (struct async_req){ &t, 0 };
	ck_assert_int_eq(ipc_async_send(t.a, &bad, async_done, &async_reqs[0]), 0);
	ck_assert(async_run(&t, async_idle, TIMEOUT_MS));
	ck_assert_int_eq(t.rc[0], 0);
	ck_assert_int_eq(t.kind[0], WIRE_CTL_ERROR);
	ac = ipc_async_counters(t.a);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_REQUESTS], IPC_ASYNC_WINDOW + 1);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_RESPONSES], IPC_ASYNC_WINDOW + 1);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_ERRORS], 1);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_SEND_AGAIN], 1);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_CONNECTS], 1);
	ck_assert_str_eq(ipc_async_counter_names[IPC_ASYNC_SEND_AGAIN],
			 "send_again");
	/* what cannot be sent is refused at once */
	bad = (struct wire_ctl_msg){ .kind = WIRE_CTL_KIND_MAX };
	ck_assert_int_eq(ipc_async_send(t.a, &bad, async_done, &async_reqs[0]),
			 -EINVAL);
	async_stop(&t);
}
END_TEST

/*
 * A raw libqb server on the fake's loop that holds requests and answers
 * the held ones last first, once it has ASYNC_REORDER of them: what a
 * server that answers out of order looks like to the async client.
 */
enum { ASYNC_REORDER = 3 };

static struct {
	qb_ipcs_service_t *service;
	qb_ipcs_connection_t *conn;
	uint64_t ids[ASYNC_REORDER];
	unsigned held;
	char name[WIRE_NAME_MAX + 8];
} reorder;

static int32_t
reorder_poll_add(enum qb_loop_priority p, int32_t fd, int32_t events,
		 void *data, qb_ipcs_dispatch_fn_t fn)
{
	return qb_loop_poll_add(fake.loop, p, fd, events, data, fn);
}

static int32_t
reorder_poll_mod(enum qb_loop_priority p, int32_t fd, int32_t events,
		 void *data, qb_ipcs_dispatch_fn_t fn)
{
	return qb_loop_poll_mod(fake.loop, p, fd, events, data, fn);
}

static int32_t
reorder_poll_del(int32_t fd)
{
	return qb_loop_poll_del(fake.loop, fd);
}

static int32_t
reorder_job_add(enum qb_loop_priority p, void *data, qb_loop_job_dispatch_fn fn)
{
	return qb_loop_job_add(fake.loop, p, data, fn);
}

static int32_t
reorder_accept(qb_ipcs_connection_t *c, uid_t uid, gid_t gid)
{
	(void)c;
	(void)uid;
	(void)gid;
	return 0;
}

static int32_t
reorder_msg(qb_ipcs_connection_t *c, void *data, size_t size)
{
	static uint8_t buf[IPC_MSG_MAX];
	ssize_t len = ipc_frame_check(IPC_REQUEST, data, size);
	struct wire_ctl_msg req, resp = { .kind = WIRE_CTL_STATUS_RESPONSE };

	ck_assert_int_ge(len, 0);
	ck_assert_int_eq(wire_ctl_decode((const uint8_t *)data +
					 ipc_header_len(IPC_REQUEST), (size_t)len,
					 &req, NULL), 0);
	reorder.conn = c;
	reorder.ids[reorder.held++] = req.request_id;
	if (reorder.held < ASYNC_REORDER)
		return 0;
	while (reorder.held > 0) {
		ssize_t n;

		resp.request_id = reorder.ids[--reorder.held];
		resp.status.node_id = (uint32_t)resp.request_id;
		n = ipc_frame(IPC_RESPONSE, &resp, buf);
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(qb_ipcs_response_send(c, buf, (size_t)n), n);
	}
	return 0;
}

static void
reorder_start_job(void *arg)
{
	struct qb_ipcs_service_handlers h = {
		.connection_accept = reorder_accept,
		.msg_process = reorder_msg,
	};
	struct qb_ipcs_poll_handlers ph = {
		.job_add = reorder_job_add,
		.dispatch_add = reorder_poll_add,
		.dispatch_mod = reorder_poll_mod,
		.dispatch_del = reorder_poll_del,
	};

	(void)arg;
	reorder.service = qb_ipcs_create(reorder.name, 0, QB_IPC_SHM, &h);
	ck_assert_ptr_nonnull(reorder.service);
	qb_ipcs_poll_handlers_set(reorder.service, &ph);
	qb_ipcs_enforce_buffer_size(reorder.service, IPC_MSG_MAX);
	ck_assert_int_eq(qb_ipcs_run(reorder.service), 0);
}

static void
reorder_stop_job(void *arg)
{
	(void)arg;
	qb_ipcs_destroy(reorder.service);
}

/* Answers that come last first still reach their own done(). */
START_TEST(test_async_out_of_order)
{
	static struct async_test t;

	memset(&reorder, 0, sizeof(reorder));
	snprintf(reorder.name, sizeof(reorder.name), "%s-reorder", fake.service);
	fake_call(reorder_start_job, NULL);
	async_start(&t, reorder.name);
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	for (unsigned i = 0; i < ASYNC_REORDER; i++)
		ck_assert_int_eq(async_send(&t, i, WIRE_CTL_STATUS_REQUEST), 0);
	ck_assert(async_run(&t, async_idle, TIMEOUT_MS));
	for (unsigned i = 0; i < ASYNC_REORDER; i++) {
		ck_assert_int_eq(t.rc[i], 0);
		ck_assert_uint_eq(t.id[i], i + 1);
		/* done() order: the last request's answer came first */
		if (i > 0)
			ck_assert_double_le(t.done_ms[i], t.done_ms[i - 1]);
	}
	ck_assert_uint_eq(ipc_async_counters(t.a)->counts[IPC_ASYNC_LATE], 0);
	async_stop(&t);
	fake_call(reorder_stop_job, NULL);
}
END_TEST

/*
 * IMPORT_BATCH requests chained, each sent from the previous one's done():
 * every one answered, in order, every flow imported. (How fast:
 * tests/bench/bench-ipc.c.)
 */
START_TEST(test_async_chained)
{
	enum { N = 200 };
	static struct async_test t;

	async_start(&t, fake.service);
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	t.chain = N;
	ck_assert_int_eq(async_send(&t, 0, WIRE_CTL_IMPORT_BATCH), 0);
	ck_assert(async_run(&t, async_idle, 60000));
	ck_assert_uint_eq(t.done, N);
	for (unsigned i = 0; i < N; i++) {
		ck_assert_int_eq(t.rc[i], 0);
		ck_assert_int_eq(t.kind[i], WIRE_CTL_ERROR);   /* the ack */
		ck_assert_uint_eq(t.id[i], i + 1);
	}
	ck_assert_uint_eq(fake_snapshot().imported, 100 * N);
	async_stop(&t);
}
END_TEST

/*
 * The loop thread stops here, tells the test (paused), and destroys the
 * server once the test has queued its request (resume): the request is in
 * the ring and its handler cannot have run.
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
	fake.server = ipc_server_create(fake.loop, fake.service, FAKE_GROUP,
					&fake_handlers, &fake);
}

/* Lost, reconnected with backoff, subscribed again from up(). */
START_TEST(test_async_reconnect)
{
	static struct async_test t;
	const struct ipc_async_counters *ac;

	async_start(&t, fake.service);
	t.resubscribe = true;
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	ck_assert(async_run(&t, async_idle, TIMEOUT_MS));
	ck_assert_int_eq(t.kind[ASYNC_MAX - 1], WIRE_CTL_ERROR);
	ck_assert_int_eq(fake_event(1, 10), 0);
	ck_assert(async_run(&t, async_events_1, TIMEOUT_MS));
	/* the server goes away with a request in flight */
	fake_post(fake_pause_destroy_job, NULL);
	sem_take(&fake.paused);
	ck_assert_int_eq(async_send(&t, 0, WIRE_CTL_STATUS_REQUEST), 0);
	ck_assert_int_eq(sem_post(&fake.resume), 0);
	fake_wait();
	ck_assert(async_run(&t, async_is_down, TIMEOUT_MS));
	ck_assert_int_eq(t.rc[0], -ENOTCONN);
	ck_assert_int_eq(t.last_down, -ENOTCONN);
	ck_assert_uint_eq(t.downs, 1);
	ck_assert_int_eq(async_send(&t, 1, WIRE_CTL_STATUS_REQUEST), -ENOTCONN);
	/* retries fail quietly (one down() per fall) until it is back */
	async_run(&t, async_is_up, 400);
	ck_assert_uint_eq(t.downs, 1);
	fake_call(fake_recreate_job, NULL);
	ck_assert_ptr_nonnull(fake.server);
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	ck_assert_uint_eq(t.ups, 2);
	ck_assert(async_run(&t, async_idle, TIMEOUT_MS));
	ck_assert_uint_ne(fake_snapshot().subscribed, 0);
	ck_assert_int_eq(fake_event(2, 10), 0);
	ck_assert(async_run(&t, async_events_2, TIMEOUT_MS));
	ck_assert_uint_eq(t.last_event, 2);
	ac = ipc_async_counters(t.a);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_CONNECTS], 2);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_DISCONNECTS], 1);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_ABORTED], 1);
	ck_assert_uint_ge(ac->counts[IPC_ASYNC_CONNECT_FAILURES], 2);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_EVENTS], 2);
	async_stop(&t);
}
END_TEST

static bool
async_failed_3(struct async_test *t)
{
	return ipc_async_counters(t->a)->counts[IPC_ASYNC_CONNECT_FAILURES] >= 3;
}

START_TEST(test_async_not_running)
{
	static struct async_test t;
	char name[WIRE_NAME_MAX];

	snprintf(name, sizeof(name), "maglb-check-nobody-%ld", (long)getpid());
	async_start(&t, name);
	ck_assert(async_run(&t, async_failed_3, TIMEOUT_MS));
	ck_assert_uint_eq(t.downs, 1);
	ck_assert_int_eq(t.last_down, -ECONNREFUSED);
	ck_assert_uint_eq(t.ups, 0);
	ck_assert_str_eq(ipc_async_service(t.a), name);
	async_stop(&t);
}
END_TEST

static bool
async_done_1(struct async_test *t)
{
	return t->done >= 1;
}

/* No answer in time: -ETIMEDOUT, and the late answer is ignored. */
START_TEST(test_async_timeout)
{
	static struct async_test t;
	const struct ipc_async_counters *ac;

	async_start(&t, fake.service);
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	/* the answer comes only once the request has timed out */
	fake_hold();
	ck_assert_int_eq(async_send(&t, 0, WIRE_CTL_STATUS_REQUEST), 0);
	ck_assert(async_run(&t, async_done_1, IPC_ASYNC_TIMEOUT_MS + 10000));
	ck_assert_int_eq(t.rc[0], -ETIMEDOUT);
	fake_unblock();
	ck_assert_int_eq(async_send(&t, 1, WIRE_CTL_STATUS_REQUEST), 0);
	ck_assert(async_run(&t, async_idle, TIMEOUT_MS));
	ck_assert_int_eq(t.rc[1], 0);
	ck_assert_int_eq(t.kind[1], WIRE_CTL_STATUS_RESPONSE);
	ac = ipc_async_counters(t.a);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_TIMEOUTS], 1);
	ck_assert_uint_eq(ac->counts[IPC_ASYNC_LATE], 1);
	ck_assert_uint_eq(t.done, 2);
	async_stop(&t);
}
END_TEST

static void
async_destroy_in_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct async_test *t = arg;

	(void)resp;
	t->rc[t->done++] = rc;
	if (t->a != NULL) {
		struct ipc_async *a = t->a;

		t->a = NULL;
		ipc_async_destroy(a);   /* from inside its own callback */
	}
}

static bool
async_done_2(struct async_test *t)
{
	return t->done >= 2;
}

/* destroy() from a done(): the others get -ECANCELED, nothing after. */
START_TEST(test_async_destroy_in_callback)
{
	static struct async_test t;
	struct wire_ctl_msg req = { .kind = WIRE_CTL_STATUS_REQUEST };

	async_start(&t, fake.service);
	ck_assert(async_run(&t, async_is_up, TIMEOUT_MS));
	ck_assert_int_eq(ipc_async_send(t.a, &req, async_destroy_in_done, &t), 0);
	ck_assert_int_eq(ipc_async_send(t.a, &req, async_destroy_in_done, &t), 0);
	ck_assert(async_run(&t, async_done_2, TIMEOUT_MS));
	ck_assert_int_eq(t.rc[0], 0);
	ck_assert_int_eq(t.rc[1], -ECANCELED);
	async_run(&t, async_done_2, 50);   /* nothing fires after the free */
	ck_assert_uint_eq(t.done, 2);
	qb_loop_destroy(t.loop);
}
END_TEST

/* ---------------------------------------------------------------- daemon */

static unsigned daemon_reloads;

static void
daemon_reload(void *arg)
{
	daemon_reloads++;
	ck_assert_ptr_eq(arg, &daemon_reloads);
}

static void
daemon_raise(void *data)
{
	raise((int)(intptr_t)data);
}

/* SIGHUP reloads, SIGTERM stops the loop; both on the loop's thread. */
START_TEST(test_daemon_signals)
{
	qb_loop_t *loop = qb_loop_create();
	struct daemon_signals *sig;
	qb_loop_timer_handle h1, h2;

	ck_assert_ptr_nonnull(loop);
	sig = daemon_signals_create(loop, daemon_reload, &daemon_reloads);
	ck_assert_ptr_nonnull(sig);
	qb_loop_timer_add(loop, QB_LOOP_LOW, 1000000, (void *)(intptr_t)SIGHUP,
			  daemon_raise, &h1);
	qb_loop_timer_add(loop, QB_LOOP_LOW, 50000000, (void *)(intptr_t)SIGTERM,
			  daemon_raise, &h2);
	qb_loop_run(loop);      /* returns on SIGTERM */
	ck_assert_uint_eq(daemon_reloads, 1);
	daemon_signals_destroy(sig);
	qb_loop_destroy(loop);
	ck_assert(daemon_ipc_group() == (gid_t)-1 ||
		  getgrgid(daemon_ipc_group()) != NULL);
}
END_TEST

/* ------------------------------------------------------------ maglbctl */

struct ctl_run {
	int status;
	char out[1 << 22];
	char err[8192];
};

static void
read_all(int fd, char *buf, size_t len)
{
	ssize_t n;
	size_t used = 0;

	lseek(fd, 0, SEEK_SET);
	while (used + 1 < len && (n = read(fd, buf + used, len - used - 1)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	close(fd);
}

/* Run maglbctl with args (NULL-terminated, service added unless NULL). */
static void
ctl_run(struct ctl_run *r, const char *service, const char *const *args)
{
	const char *bin = getenv("MAGLBCTL");
	char out_path[] = "/tmp/check_ipc_outXXXXXX";
	char err_path[] = "/tmp/check_ipc_errXXXXXX";
	const char *argv[32];
	int out, err, n = 0, status;
	pid_t pid;

	ck_assert_msg(bin != NULL, "MAGLBCTL is not set (meson sets it)");
	out = mkstemp(out_path);
	err = mkstemp(err_path);
	ck_assert(out >= 0 && err >= 0);
	unlink(out_path);
	unlink(err_path);
	argv[n++] = bin;
	if (service != NULL) {
		argv[n++] = "--service";
		argv[n++] = service;
	}
	while (*args != NULL && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *v[32];    /* execv() takes them writable: copies */

		for (int i = 0; i <= n; i++)
			v[i] = argv[i] != NULL ? strdup(argv[i]) : NULL;
		dup2(out, 1);
		dup2(err, 2);
		execv(bin, v);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	r->status = WEXITSTATUS(status);
	read_all(out, r->out, sizeof(r->out));
	read_all(err, r->err, sizeof(r->err));
}

#define CTL(r, ...) ctl_run((r), fake.service, (const char *const[]){ __VA_ARGS__, NULL })

static void
ctl_expect(const struct ctl_run *r, int status, const char *out_has,
	   const char *err_has)
{
	ck_assert_msg(r->status == status, "exit %d, want %d\nstdout:\n%s\n"
		      "stderr:\n%s", r->status, status, r->out, r->err);
	if (out_has != NULL)
		ck_assert_msg(strstr(r->out, out_has) != NULL,
			      "stdout lacks '%s':\n%s", out_has, r->out);
	if (err_has != NULL)
		ck_assert_msg(strstr(r->err, err_has) != NULL,
			      "stderr lacks '%s':\n%s", err_has, r->err);
}

START_TEST(test_maglbctl_status)
{
	static struct ctl_run r;

	CTL(&r, "status");
	ctl_expect(&r, 0, "node      7\n", NULL);
	ctl_expect(&r, 0, "uptime    1d 01:01:01\n", NULL);
	ctl_expect(&r, 0, "vips      3 (2 owned)\n", NULL);
	ctl_expect(&r, 0, "maglev    0xfedcba9876543210\n", NULL);
	ctl_expect(&r, 0, "serving   no\n", NULL);
	ck_assert_str_eq(r.err, "");
	CTL(&r, "--json", "status");
	ctl_expect(&r, 0, "\"node_id\": 7,", NULL);
	ctl_expect(&r, 0, "\"flows_synced\": 567,\n", NULL);
	/* a hex string: jq would round a 64-bit number */
	ctl_expect(&r, 0, "\"maglev_digest\": \"0xfedcba9876543210\",\n", NULL);
	ctl_expect(&r, 0, "\"serving\": false\n}\n", NULL);
	ck_assert_int_eq(r.out[0], '{');
	/* global options may follow the command */
	CTL(&r, "status", "--json", "--timeout", "2000");
	ctl_expect(&r, 0, "\"uptime_ms\": 90061000,", NULL);
}
END_TEST

START_TEST(test_maglbctl_reads)
{
	static struct ctl_run r;

	CTL(&r, "vips");
	ctl_expect(&r, 0, "NAME", NULL);
	ctl_expect(&r, 0, "198.18.0.10:443", NULL);
	ctl_expect(&r, 0, "198.18.0.11:*", NULL);
	ctl_expect(&r, 0, "  FLOWS  MAGLEV\n", NULL);
	ctl_expect(&r, 0, "1234567  0x0123456789abcdef\n", NULL);
	CTL(&r, "--json", "vips");
	ctl_expect(&r, 0, "\"name\": \"we\\\"b\\n\\\\\"", NULL);
	ctl_expect(&r, 0, "\"maglev_digest\": \"0x0123456789abcdf0\"\n", NULL);
	CTL(&r, "backends", "web");
	ctl_expect(&r, 0, "VIP  BACKEND     WEIGHT  STATE  NEXT_HOP\n"
			  "web  198.19.0.5     100  up     02:00:00:00:00:a0\n"
			  "web  198.19.0.6    1000  up     unresolved\n", NULL);
	CTL(&r, "--json", "backends", "web");
	ctl_expect(&r, 0, "\"next_hop_mac\": \"02:00:00:00:00:a0\"\n", NULL);
	ctl_expect(&r, 0, "\"next_hop_mac\": null\n", NULL);
	CTL(&r, "counters", "worker3");
	ctl_expect(&r, 0, "worker3  counter_0003     3000009\n", NULL);
	CTL(&r, "flows", "--limit", "5");
	ctl_expect(&r, 0, "PROTO  VIP              CLIENT           "
			  "BACKEND     EXPIRES  FLAGS\n"
			  "udp    198.18.0.10:443  198.18.1.0:1024  "
			  "198.19.0.5   300.0s  -\n", NULL);
	ck_assert_ptr_null(strstr(r.out, ":1029 "));
	CTL(&r, "--json", "flows", "--limit=1200");
	ctl_expect(&r, 0, "\"count\": 1200,\n  \"complete\": false\n", NULL);
	CTL(&r, "--json", "flows");
	ctl_expect(&r, 0, "\"count\": 2500,\n  \"complete\": true\n", NULL);
	CTL(&r, "flow", "lookup", "198.18.0.10", "443", "tcp", "198.18.1.20",
	    "51000");
	ctl_expect(&r, 0, "table     worker 1\n", NULL);
	ctl_expect(&r, 0, "backend   198.19.0.5\n", NULL);
	ctl_expect(&r, 0, "flags     established\n", NULL);
	CTL(&r, "--json", "flow", "lookup", "2001:db8::1", "80", "udp",
	    "2001:db8::2", "5353");
	ctl_expect(&r, 0, "\"client\": \"2001:db8::2\"", NULL);
}
END_TEST

START_TEST(test_maglbctl_writes)
{
	static struct ctl_run r;

	CTL(&r, "backend", "set-weight", "web", "198.19.0.5", "0");
	ctl_expect(&r, 0, NULL, NULL);
	ck_assert_str_eq(r.out, "");
	CTL(&r, "--json", "backend", "drain", "web", "2001:db8::5");
	ctl_expect(&r, 0, "\"ok\": true", NULL);
	CTL(&r, "reload", "--check");
	ctl_expect(&r, 0, "config ok\n", NULL);
	/* the daemon answers with an error: exit 1 and its message */
	CTL(&r, "reload");
	ctl_expect(&r, 1, NULL, "maglb.conf:12: unknown key 'foo'");
	CTL(&r, "backend", "up", "nope", "198.19.0.5");
	ctl_expect(&r, 1, NULL, "maglbctl: no VIP named 'nope'\n");
	CTL(&r, "vips", "nope");
	ctl_expect(&r, 1, NULL, "no VIP named 'nope'");
}
END_TEST

START_TEST(test_maglbctl_vip_lease)
{
	static struct ctl_run r;
	struct fake_snapshot snap;

	CTL(&r, "vip", "own", "web", "--lease", "1500", "--announce");
	ctl_expect(&r, 0, NULL, NULL);
	ck_assert_str_eq(r.out, "");
	snap = fake_snapshot();
	ck_assert_uint_eq(snap.last_lease_ms, 1500);
	ck_assert(snap.last_announce);
	CTL(&r, "--json", "vip", "own", "web", "--lease=3600000");
	ctl_expect(&r, 0, "\"ok\": true", NULL);
	snap = fake_snapshot();
	ck_assert_uint_eq(snap.last_lease_ms, 3600000);
	ck_assert(!snap.last_announce);
	CTL(&r, "vip", "own", "web");
	ctl_expect(&r, 0, NULL, NULL);
	ck_assert_uint_eq(fake_snapshot().last_lease_ms, 0);
}
END_TEST

START_TEST(test_maglbctl_cluster)
{
	static struct ctl_run r;

	/* syncd's service, as for sync */
	CTL(&r, "--sync-service", fake.service, "cluster");
	ctl_expect(&r, 0, "node          2\n"
			  "mode          active-passive\n"
			  "preempt       yes\n"
			  "quorum        yes\n"
			  "role          passive\n"
			  "eligible      no\n"
			  "standby       yes\n"
			  "role changes  3\n", NULL);
	ctl_expect(&r, 0, " (12 s ago)\nlease         3000 ms\n\n", NULL);
	ctl_expect(&r, 0, "ID  ROLE     PRIORITY  ELIGIBLE  DATAPLANE  SYNCED  QUORATE  STANDBY\n"
			  " 1  active        200  yes       yes        yes     yes      no\n"
			  " 2  passive       100  no        yes        yes     yes      yes\n"
			  " 3  -               -  -         -          -       -        -\n", NULL);
	ck_assert_str_eq(r.err, "");
	CTL(&r, "--json", "--sync-service", fake.service, "cluster");
	ctl_expect(&r, 0, "\"node_id\": 2,\n  \"mode\": \"active-passive\",", NULL);
	ctl_expect(&r, 0, "\"role\": \"passive\",", NULL);
	ctl_expect(&r, 0, "\"lease_ms\": 3000,", NULL);
	ctl_expect(&r, 0, "\"id\": 3,\n      \"role\": null,", NULL);
	ctl_expect(&r, 0, "\"known\": false,", NULL);

	CTL(&r, "--sync-service", fake.service, "cluster", "standby", "off");
	ctl_expect(&r, 0, NULL, NULL);
	ck_assert_str_eq(r.out, "");
	ck_assert(!fake_snapshot().standby);
	CTL(&r, "--json", "--sync-service", fake.service, "cluster", "standby", "on");
	ctl_expect(&r, 0, "\"ok\": true", NULL);
	ck_assert(fake_snapshot().standby);
}
END_TEST

/* The dataplane's sessions: a row each; the drops that happened; JSON all. */
START_TEST(test_maglbctl_bfd)
{
	static struct ctl_run r;

	CTL(&r, "bfd");
	ctl_expect(&r, 0, "PEER         STATE  DIAG                        DISCR      TX  DETECT  "
			  "MULT       AGE     IN    OUT  CHANGES  AUTH\n"
			  "198.18.0.1   Up     none/none            1/2654435769  16.5ms  49.5ms  "
			  " 3/3  01:02:03  12345  12346        1  yes\n"
			  "2001:db8::1  Down   detect-expired/none           2/-  1000ms  3000ms  "
			  " 3/-  00:00:12     10     40        2  no\n"
			  "serving yes\n"
			  "  BAD_TTL 3\n"
			  "  AUTH_BAD_DIGEST 1\n", NULL);
	ck_assert_ptr_null(strstr(r.out, "TRUNCATED"));
	ck_assert_str_eq(r.err, "");
	CTL(&r, "--json", "bfd");
	ctl_expect(&r, 0, "{\n  \"serving\": true,\n  \"sessions\": [\n    {\n"
			  "      \"peer\": \"198.18.0.1\",\n"
			  "      \"local\": \"198.18.0.10\",\n"
			  "      \"state\": \"Up\",\n"
			  "      \"local_diag\": \"none\",\n"
			  "      \"remote_diag\": \"none\",\n"
			  "      \"local_discriminator\": 1,\n"
			  "      \"remote_discriminator\": 2654435769,\n"
			  "      \"tx_interval_us\": 16500,\n"
			  "      \"detect_time_us\": 49500,\n"
			  "      \"multiplier\": 3,\n"
			  "      \"remote_multiplier\": 3,\n"
			  "      \"state_age_ms\": 3723000,\n"
			  "      \"packets_in\": 12345,\n"
			  "      \"packets_out\": 12346,\n"
			  "      \"state_changes\": 1,\n"
			  "      \"authenticated\": true\n    },", NULL);
	ctl_expect(&r, 0, "\"peer\": \"2001:db8::1\",\n      \"local\": \"2001:db8::10\",\n"
			  "      \"state\": \"Down\",\n"
			  "      \"local_diag\": \"detect-expired\",", NULL);
	ctl_expect(&r, 0, "\"remote_discriminator\": 0,", NULL);
	ctl_expect(&r, 0, "\"authenticated\": false\n    }\n  ],\n", NULL);
	/* every reason, zero or not */
	ctl_expect(&r, 0, "  \"drops\": {\n    \"BAD_TTL\": 3,\n    \"TRUNCATED\": 0,\n"
			  "    \"AUTH_BAD_DIGEST\": 1,\n    \"UNKNOWN_PEER\": 0\n  }\n}\n", NULL);
	/* the dataplane's, not syncd's */
	CTL(&r, "--sync-service", "maglb-check-nosyncd", "bfd");
	ctl_expect(&r, 0, "serving yes\n", NULL);
}
END_TEST

/* A member whose Maglev tables differ is marked, and fails the verify. */
START_TEST(test_maglbctl_verify_maglev)
{
	static struct ctl_run r;

	CTL(&r, "--sync-service", fake.service, "sync", "verify");
	ctl_expect(&r, 1, "group default: 3 of 3 members answered: THEY DISAGREE\n", NULL);
	ctl_expect(&r, 1, "maglev 0x8000000000000001\n", NULL);
	ctl_expect(&r, 1, "maglev 0x8000000000000002  <- Maglev differs\n", NULL);
	CTL(&r, "--json", "--sync-service", fake.service, "sync", "verify");
	ctl_expect(&r, 1, "\"maglev_digest\": \"0x8000000000000002\",\n"
			  "          \"maglev_agrees\": false\n", NULL);
	ctl_expect(&r, 1, "\"agree\": false\n}\n", NULL);
}
END_TEST

START_TEST(test_maglbctl_bad_arguments)
{
	static const char *const cases[][8] = {
		{ "frobnicate" },
		{ "status", "extra" },
		{ "backend", "set-weight", "web", "198.19.0.5", "1001" },
		{ "backend", "set-weight", "web", "198.19.0.5", "-1" },
		{ "backend", "set-weight", "web", "198.19.0.5" },
		{ "backend", "drain", "web", "198.19.0.300" },
		{ "backend", "weigh", "web", "198.19.0.5" },
		{ "flow", "lookup", "198.18.0.10", "65536", "tcp", "198.18.1.2", "1" },
		{ "flow", "lookup", "198.18.0.10", "443", "sctp", "198.18.1.2", "1" },
		{ "flow", "lookup", "198.18.0.10", "443", "tcp", "2001:db8::2", "1" },
		{ "flow", "lookup", "198.18.0.10", "443", "tcp", "198.18.1.2" },
		{ "flows", "--limit", "many" },
		{ "flows", "--vip" },
		{ "reload", "--now" },
		{ "--timeout", "0", "status" },
		{ "counters", "a", "b" },
		{ "sync", "frobnicate" },
		{ "sync", "verify", "default", "extra" },
		{ "sync", "verify", "a-group-name-longer-than-sixty-three-characters-is-not-a-group-0" },
		{ "--sync-service", "", "sync" },
		{ "sync", "--sync-service" },
		{ "vip", "own", "web", "--lease" },
		{ "vip", "own", "web", "--lease", "0" },
		{ "vip", "own", "web", "--lease", "3600001" },
		{ "vip", "own", "web", "--lease", "1s" },
		{ "vip", "own", "web", "--lease=-5" },
		{ "vip", "disown", "web", "--lease", "100" },
		{ "cluster", "extra" },
		{ "bfd", "extra" },
		{ "cluster", "standby" },
		{ "cluster", "standby", "maybe" },
		{ "cluster", "standby", "on", "extra" },
	};
	static struct ctl_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* checked before connecting: no daemon needed */
		ctl_run(&r, "maglb-check-nobody", cases[i]);
		ctl_expect(&r, 2, NULL, "usage: maglbctl");
		ck_assert_str_eq(r.out, "");
	}
	ctl_run(&r, NULL, (const char *const[]){ NULL });
	ctl_expect(&r, 2, NULL, "no command");
	ctl_run(&r, NULL, (const char *const[]){ "--help", NULL });
	ctl_expect(&r, 0, "usage: maglbctl", NULL);
}
END_TEST

START_TEST(test_maglbctl_not_running)
{
	static struct ctl_run r;

	ctl_run(&r, "maglb-check-nobody", (const char *const[]){ "status", NULL });
	ctl_expect(&r, 3, NULL, "service maglb-check-nobody is not running\n");
	ck_assert_str_eq(r.out, "");
	ctl_run(&r, "maglb-check-nobody",
		(const char *const[]){ "--json", "flows", NULL });
	ctl_expect(&r, 3, NULL, "is not running");
	ctl_run(&r, "maglb-check-nobody", (const char *const[]){ "bfd", NULL });
	ctl_expect(&r, 3, NULL, "service maglb-check-nobody is not running\n");
	/* sync goes to syncd's service, named by --sync-service */
	ctl_run(&r, "maglb-check-nobody", (const char *const[]){
		"--sync-service", "maglb-check-nosyncd", "sync", NULL });
	ctl_expect(&r, 3, NULL, "service maglb-check-nosyncd is not running");
	ctl_run(&r, "maglb-check-nobody", (const char *const[]){
		"--sync-service", "maglb-check-nosyncd", "cluster", NULL });
	ctl_expect(&r, 3, NULL, "service maglb-check-nosyncd is not running");
	ck_assert_str_eq(r.out, "");
	ctl_run(&r, "maglb-check-nobody", (const char *const[]){
		"--sync-service", "maglb-check-nosyncd", "cluster", "standby", "on", NULL });
	ctl_expect(&r, 3, NULL, "service maglb-check-nosyncd is not running");
}
END_TEST

static Suite *
ipc_suite(void)
{
	Suite *s = suite_create("ipc");
	struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "status", test_status_round_trip },
		{ "counters", test_counters_2000 },
		{ "dump", test_dump_pages },
		{ "bound", test_message_bound },
		{ "error", test_error_reply },
		{ "events", test_export_events },
		{ "backpressure", test_event_backpressure },
		{ "event_unknown", test_event_unknown_connection },
		{ "garbage", test_garbage },
		{ "not_running", test_not_running },
		{ "server_gone", test_server_gone },
		{ "timeout", test_timeout_then_next },
		{ "disconnected", test_disconnected },
		{ "access", test_access },
		{ "access_root_only", test_access_root_only },
		{ "stale_shm", test_stale_shm },
		{ "async_pipeline", test_async_pipeline },
		{ "async_out_of_order", test_async_out_of_order },
		{ "async_chained", test_async_chained },
		{ "async_reconnect", test_async_reconnect },
		{ "async_not_running", test_async_not_running },
		{ "async_timeout", test_async_timeout },
		{ "async_destroy_in_callback", test_async_destroy_in_callback },
		{ "maglbctl_status", test_maglbctl_status },
		{ "maglbctl_reads", test_maglbctl_reads },
		{ "maglbctl_writes", test_maglbctl_writes },
		{ "maglbctl_vip_lease", test_maglbctl_vip_lease },
		{ "maglbctl_cluster", test_maglbctl_cluster },
		{ "maglbctl_bfd", test_maglbctl_bfd },
		{ "maglbctl_verify_maglev", test_maglbctl_verify_maglev },
		{ "maglbctl_bad_arguments", test_maglbctl_bad_arguments },
		{ "maglbctl_not_running", test_maglbctl_not_running },
	};

	TCase *tc;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	tc = tcase_create("daemon_signals");    /* no server: its own loop */
	tcase_add_test(tc, test_daemon_signals);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ipc_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
