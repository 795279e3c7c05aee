/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-ipc: the local IPC's acknowledgement latency, as syncd meets it.
 *
 *   bench-ipc [--requests N] [--flows F]
 *
 * A server (lib/ipc_server.h) in a child process acknowledges IMPORT_BATCH
 * requests, as the dataplane does; the async client (lib/ipc_client.h) on a
 * qb_loop in this process chains N of them (default 2000), F IPv4 flows each
 * (default 100), each sent from the previous one's done(). Figures, ms from
 * ipc_async_send() to done(): median_ms, p99_ms, max_ms; and requests_per_s
 * over the chain. Prints one JSON line; a benchmark: it asserts nothing
 * (exit 1 only when the chain could not run: no server, an error answer, a
 * timeout).
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <qb/qbloop.h>

#include "lib/ipc_client.h"
#include "lib/ipc_server.h"
#include "tests/bench/bench.h"

enum {
	REQUESTS_DEFAULT = 2000,
	REQUESTS_MAX = 1000000,
	FLOWS_DEFAULT = 100,
	FLOWS_MAX = 8192,               /* IPC_FLOWS_PER_MSG_MAX */
	DEADLINE_MS = 600000,           /* the whole chain, at most */
};

/* ------------------------------------------------------------- server */

static int
server_request(void *ctx, uint64_t conn_id, const struct wire_ctl_msg *req,
	       struct wire_ctl_msg *resp, char *errmsg, size_t errlen)
{
	(void)ctx, (void)conn_id, (void)resp, (void)errmsg, (void)errlen;
	return req->kind == WIRE_CTL_IMPORT_BATCH ? 0 : -EPERM;  /* 0: the ack */
}

/* The parent closed its end of the pipe: it is done (or gone). */
static int32_t
server_parent_gone(int32_t fd, int32_t revents, void *data)
{
	(void)fd, (void)revents;
	qb_loop_stop(data);
	return 0;
}

/* The child: serve service until gone_fd's writer (the parent) closes it. */
static int
server_run(const char *service, int ready_fd, int gone_fd)
{
	static const struct ipc_handlers h = { .request = server_request };
	qb_loop_t *loop = qb_loop_create();
	struct ipc_server *s;

	if (loop == NULL)
		return 1;
	s = ipc_server_create(loop, service, getegid(), &h, NULL);
	if (s == NULL ||
	    qb_loop_poll_add(loop, QB_LOOP_HIGH, gone_fd, POLLIN, loop,
			     server_parent_gone) != 0)
		return 1;
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	close(ready_fd);
	qb_loop_run(loop);
	ipc_server_destroy(s);
	qb_loop_destroy(loop);
	return 0;
}

/* ------------------------------------------------------------- client */

struct chain {
	qb_loop_t *loop;
	struct ipc_async *a;
	struct wire_flow *flows;
	unsigned flows_n, requests, done;
	double *lat_ms;
	double sent_ns, start_ns, end_ns;
	int error;                      /* the first failure, -errno */
};

static void chain_done(void *arg, int rc, const struct wire_ctl_msg *resp);

static void
chain_stop(struct chain *c, int error)
{
	if (c->error == 0)
		c->error = error;
	c->end_ns = bench_now_ns();
	qb_loop_stop(c->loop);
}

static void
chain_send(struct chain *c)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_IMPORT_BATCH };
	int rc;

	req.flows.event = WIRE_FLOW_EVENT_NEW;
	req.flows.entries = c->flows;
	req.flows.count = c->flows_n;
	c->sent_ns = bench_now_ns();
	rc = ipc_async_send(c->a, &req, chain_done, c);
	if (rc < 0)
		chain_stop(c, rc);
}

static void
chain_done(void *arg, int rc, const struct wire_ctl_msg *resp)
{
	struct chain *c = arg;

	if (rc == 0 && (resp->kind != WIRE_CTL_ERROR || resp->error.code != 0))
		rc = -EPROTO;
	if (rc < 0) {
		chain_stop(c, rc);
		return;
	}
	c->lat_ms[c->done++] = (bench_now_ns() - c->sent_ns) / 1e6;
	if (c->done == c->requests)
		chain_stop(c, 0);
	else
		chain_send(c);
}

static void
chain_up(void *arg)
{
	struct chain *c = arg;

	if (c->start_ns == 0) {
		c->start_ns = bench_now_ns();
		chain_send(c);
	}
}

static void
chain_down(void *arg, int err)
{
	struct chain *c = arg;

	/* a first connect that fails retries; a lost connection ends it */
	if (c->start_ns != 0)
		chain_stop(c, err);
}

static void
chain_deadline(void *data)
{
	chain_stop(data, -ETIMEDOUT);
}

static void
flows_fill(struct wire_flow *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t vip[4] = { 198, 18, 0, 10 };
		uint8_t client[4] = { 198, 18, (uint8_t)(1 + (i >> 8)), (uint8_t)i };
		uint8_t backend[4] = { 198, 19, 0, (uint8_t)(5 + i % 4) };

		memset(&f[i], 0, sizeof(f[i]));
		f[i].family = f[i].backend_family = AF_INET;
		f[i].proto = IPPROTO_TCP;
		f[i].vip_port = 443;
		f[i].client_port = (uint16_t)(1024 + i);
		f[i].lifetime_ms = 900000;
		f[i].flags = WIRE_FLOW_ESTABLISHED;
		memcpy(f[i].vip, vip, 4);
		memcpy(f[i].client, client, 4);
		memcpy(f[i].backend, backend, 4);
	}
}

/* Run the chain against service; 0 or -errno. */
static int
chain_run(struct chain *c, const char *service)
{
	static const struct ipc_async_ops ops = { .up = chain_up, .down = chain_down };
	qb_loop_timer_handle deadline;

	c->loop = qb_loop_create();
	if (c->loop == NULL)
		return -ENOMEM;
	c->a = ipc_async_create(c->loop, service, &ops, c);
	if (c->a == NULL)
		return -ENOMEM;
	qb_loop_timer_add(c->loop, QB_LOOP_LOW, (uint64_t)DEADLINE_MS * 1000000, c,
			  chain_deadline, &deadline);
	qb_loop_run(c->loop);
	ipc_async_destroy(c->a);
	qb_loop_destroy(c->loop);
	return c->error;
}

/* ------------------------------------------------------------- main */

static int
parse(int argc, char **argv, unsigned *requests, unsigned *flows)
{
	static const struct option longopts[] = {
		{ "requests", required_argument, NULL, 'n' },
		{ "flows", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;

		if (opt != 'n' && opt != 'f')
			return -1;
		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno != 0 || *end != '\0' || v == 0 ||
		    v > (opt == 'n' ? REQUESTS_MAX : FLOWS_MAX))
			return -1;
		*(opt == 'n' ? requests : flows) = (unsigned)v;
	}
	return optind == argc ? 0 : -1;
}

static void
report(struct chain *c)
{
	double secs = (c->end_ns - c->start_ns) / 1e9;
	unsigned n = c->requests;

	qsort(c->lat_ms, n, sizeof(c->lat_ms[0]), bench_cmp_double);
	printf("{\"requests\":%u,\"flows\":%u,\"median_ms\":%.3f,\"p99_ms\":%.3f,"
	       "\"max_ms\":%.3f,\"requests_per_s\":%.0f}\n", n, c->flows_n,
	       c->lat_ms[n / 2], c->lat_ms[(size_t)n * 99 / 100], c->lat_ms[n - 1],
	       secs > 0 ? n / secs : 0.0);
}

int
main(int argc, char **argv)
{
	struct chain c = { .requests = REQUESTS_DEFAULT, .flows_n = FLOWS_DEFAULT };
	char service[WIRE_NAME_MAX], r;
	int ready[2], gone[2], rc, status;
	pid_t pid;

	if (parse(argc, argv, &c.requests, &c.flows_n) < 0) {
		fprintf(stderr, "usage: bench-ipc [--requests 1..%u] [--flows 1..%u]\n",
			REQUESTS_MAX, FLOWS_MAX);
		return 2;
	}
	c.flows = calloc(c.flows_n, sizeof(*c.flows));
	c.lat_ms = calloc(c.requests, sizeof(*c.lat_ms));
	if (c.flows == NULL || c.lat_ms == NULL || pipe(ready) < 0 || pipe(gone) < 0)
		return 1;
	flows_fill(c.flows, c.flows_n);
	snprintf(service, sizeof(service), "maglb-bench-ipc-%ld", (long)getpid());
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(ready[0]);
		close(gone[1]);
		_exit(server_run(service, ready[1], gone[0]));
	}
	close(ready[1]);
	close(gone[0]);
	rc = read(ready[0], &r, 1) == 1 ? chain_run(&c, service) : -ECONNREFUSED;
	close(gone[1]);         /* the server stops */
	waitpid(pid, &status, 0);
	if (rc < 0) {
		fprintf(stderr, "bench-ipc: after %u of %u requests: %s\n", c.done,
			c.requests, strerror(-rc));
		return 1;
	}
	report(&c);
	free(c.flows);
	free(c.lat_ms);
	return 0;
}
