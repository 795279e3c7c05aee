/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpgbench: raw corosync CPG throughput, the baseline that maglb-syncd's flow
 * sync is measured against (tests/bench/sync-vs-cpg, tests/bench/README.md).
 *
 *   cpgbench --group NAME --size BYTES --seconds S --send|--recv
 *            [--peers N] [--timeout-s T]
 *
 * --recv  joins group NAME, prints "ready" once corosync lists it as a
 *         member, then counts the messages (and bytes) that other members
 *         deliver: from the first one, for S seconds. It checks each
 *         message's size and the sender's sequence number (the first 8 bytes,
 *         big-endian), counting gaps: CPG's agreed order loses nothing.
 * --send  joins group NAME, waits until N other members are in it (default
 *         1: the receiver), then multicasts messages of exactly BYTES
 *         (CPG_TYPE_AGREED) for S seconds, as fast as CPG accepts them. On
 *         CS_ERR_TRY_AGAIN (corosync's queue is full) it dispatches what is
 *         delivered, waits up to 1 ms for more, retries, and counts the
 *         retries. It dispatches its own deliveries as it goes (every member,
 *         the sender too, gets every message) and, after the window, waits
 *         for its last message to come back (T seconds at most).
 *
 * Each prints one JSON line on stdout (after "ready" for the receiver):
 *
 *   {"role":"send"|"recv","group":..,"size":..,"seconds":..,"msgs":..,
 *    "bytes":..,"msgs_per_s":..,"mb_per_s":..,"try_again":..,...}
 *
 * MB is 10^6 bytes, of payload (BYTES a message). Exit 0 on success, 1 when
 * corosync cannot be reached or the run fails (no receiver or no message
 * within T seconds, default 30), 2 on bad arguments. corosync is found
 * through its abstract Unix socket, which belongs to the network namespace:
 * run cpgbench in the namespace of the node whose corosync it should use.
 */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <corosync/corotypes.h>
#include <corosync/cpg.h>

#include "tests/bench/bench.h"

enum { MSG_MIN = 8, MSG_MAX = 1 << 20 };

static struct {
	bool send;
	unsigned peers;
	size_t size;
	double seconds;
	double timeout_s;
	struct cpg_name group;

	uint32_t my_nodeid;
	uint32_t my_pid;
	size_t members;     /* in the last configuration change */
	bool joined;        /* this process is in the member list */

	/* receiver */
	bool started, done;
	double t0_ns, end_ns;
	uint64_t msgs, bytes, seq_gaps, wrong_size, next_seq;

	/* sender: its own messages delivered back */
	uint64_t self_delivered;
} b;

static void
die_cs(const char *what, cs_error_t err)
{
	fprintf(stderr, "cpgbench: %s: %s (%d)\n", what, cs_strerror(err), (int)err);
	if (err == CS_ERR_LIBRARY)
		fprintf(stderr, "cpgbench: is corosync running in this network "
		        "namespace? (CPG clients reach it through an abstract "
		        "Unix socket of their namespace)\n");
	exit(1);
}

static void
deliver(cpg_handle_t h, const struct cpg_name *group, uint32_t nodeid,
        uint32_t pid, void *msg, size_t len)
{
	double now;
	uint64_t seq = 0;

	(void)h;
	(void)group;
	if (nodeid == b.my_nodeid && pid == b.my_pid) {
		b.self_delivered++;
		return;
	}
	if (b.send || b.done)
		return;
	now = bench_now_ns();
	if (!b.started) {
		b.started = true;
		b.t0_ns = now;
		b.end_ns = now + b.seconds * 1e9;
	} else if (now >= b.end_ns) {
		b.done = true;
		return;
	}
	b.msgs++;
	b.bytes += len;
	if (len != b.size)
		b.wrong_size++;
	if (len >= sizeof(seq)) {
		memcpy(&seq, msg, sizeof(seq));
		seq = be64toh(seq);
		if (b.msgs > 1 && seq != b.next_seq)
			b.seq_gaps++;
		b.next_seq = seq + 1;
	}
}

static void
confchg(cpg_handle_t h, const struct cpg_name *group,
        const struct cpg_address *members, size_t n_members,
        const struct cpg_address *left, size_t n_left,
        const struct cpg_address *joined, size_t n_joined)
{
	(void)h;
	(void)group;
	(void)left;
	(void)n_left;
	(void)joined;
	(void)n_joined;
	b.members = n_members;
	b.joined = false;
	for (size_t i = 0; i < n_members; i++)
		if (members[i].nodeid == b.my_nodeid && members[i].pid == b.my_pid)
			b.joined = true;
}

/* Wait up to timeout_ms for the CPG fd, then dispatch what is there. */
static void
pump(cpg_handle_t h, int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	cs_error_t err;
	int n = poll(&pfd, 1, timeout_ms);

	if (n < 0 && errno != EINTR) {
		perror("cpgbench: poll");
		exit(1);
	}
	if (n <= 0)
		return;
	err = cpg_dispatch(h, CS_DISPATCH_ALL);
	if (err != CS_OK && err != CS_ERR_TRY_AGAIN)
		die_cs("cpg_dispatch", err);
}

/* Call f until it stops saying CS_ERR_TRY_AGAIN (corosync busy), 5 s at most. */
#define RETRY(call)                                                           \
	({                                                                    \
		cs_error_t err_;                                              \
		double until_ = bench_now_ns() + 5e9;                         \
		while ((err_ = (call)) == CS_ERR_TRY_AGAIN &&                \
		       bench_now_ns() < until_)                               \
			usleep(10000);                                        \
		err_;                                                         \
	})

/* Pump until cond() holds or timeout_s pass; false on timeout. */
static bool
pump_until(cpg_handle_t h, int fd, bool (*cond)(void), double timeout_s)
{
	double until = bench_now_ns() + timeout_s * 1e9;

	while (!cond()) {
		if (bench_now_ns() >= until)
			return false;
		pump(h, fd, 10);
	}
	return true;
}

static bool
is_member(void)
{
	return b.joined;
}

static bool
peers_present(void)
{
	return b.joined && b.members >= 1 + (size_t)b.peers;
}

static void
print_json(const char *role, double seconds, uint64_t msgs, uint64_t bytes,
           uint64_t try_again)
{
	printf("{\"role\":\"%s\",\"group\":\"%.*s\",\"size\":%zu,\"seconds\":%.3f,"
	       "\"msgs\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"msgs_per_s\":%.0f,"
	       "\"mb_per_s\":%.2f,\"try_again\":%" PRIu64,
	       role, (int)b.group.length, b.group.value, b.size, seconds, msgs, bytes,
	       seconds > 0 ? (double)msgs / seconds : 0.0,
	       seconds > 0 ? (double)bytes / seconds / 1e6 : 0.0, try_again);
}

static int
run_send(cpg_handle_t h, int fd)
{
	struct iovec iov;
	uint64_t sent = 0, try_again = 0;
	double t0, end, t1;
	char *buf = calloc(1, b.size);

	if (buf == NULL) {
		perror("cpgbench");
		return 1;
	}
	if (!pump_until(h, fd, peers_present, b.timeout_s)) {
		fprintf(stderr, "cpgbench: %u other member(s) of %.*s awaited for %.0f s, "
		        "%zu there\n", b.peers, (int)b.group.length, b.group.value,
		        b.timeout_s, b.members > 0 ? b.members - 1 : 0);
		free(buf);
		return 1;
	}
	memset(buf + sizeof(uint64_t), 0xa5, b.size - sizeof(uint64_t));
	iov.iov_base = buf;
	iov.iov_len = b.size;
	t0 = bench_now_ns();
	end = t0 + b.seconds * 1e9;
	while (bench_now_ns() < end) {
		uint64_t seq = htobe64(sent);
		cs_error_t err;

		memcpy(buf, &seq, sizeof(seq));
		err = cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1);
		if (err == CS_OK) {
			sent++;
			pump(h, fd, 0);
		} else if (err == CS_ERR_TRY_AGAIN) {
			try_again++;
			pump(h, fd, 1);
		} else {
			die_cs("cpg_mcast_joined", err);
		}
	}
	t1 = bench_now_ns();
	/* The last message back: every earlier one was delivered before it. */
	while (b.self_delivered < sent && bench_now_ns() < t1 + b.timeout_s * 1e9)
		pump(h, fd, 10);
	print_json("send", (t1 - t0) / 1e9, sent, sent * b.size, try_again);
	printf(",\"delivered_back\":%" PRIu64 ",\"drain_s\":%.3f}\n", b.self_delivered,
	       (bench_now_ns() - t1) / 1e9);
	free(buf);
	return b.self_delivered < sent;
}

static int
run_recv(cpg_handle_t h, int fd)
{
	double deadline;

	if (!pump_until(h, fd, is_member, b.timeout_s)) {
		fprintf(stderr, "cpgbench: not a member of the group after %.0f s\n",
		        b.timeout_s);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	deadline = bench_now_ns() + b.timeout_s * 1e9;
	while (!b.done) {
		double now = bench_now_ns(), until = b.started ? b.end_ns : deadline;

		if (now >= until) {
			if (!b.started) {
				fprintf(stderr, "cpgbench: no message in %.0f s\n", b.timeout_s);
				return 1;
			}
			b.done = true;
			break;
		}
		pump(h, fd, (int)((until - now) / 1e6) + 1);
	}
	print_json("recv", b.seconds, b.msgs, b.bytes, 0);
	printf(",\"seq_gaps\":%" PRIu64 ",\"wrong_size\":%" PRIu64 "}\n", b.seq_gaps,
	       b.wrong_size);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: cpgbench --group NAME --size BYTES --seconds S --send|--recv\n"
	           "                [--peers N] [--timeout-s T]\n"
	           "  BYTES %d..%d, S > 0; --peers: other members the sender awaits "
	           "(default 1);\n"
	           "  --timeout-s: longest wait for members, the first message, the "
	           "drain (default 30)\n",
	        MSG_MIN, MSG_MAX);
}

static bool
parse_num(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= min && v <= max))
		return false;
	*out = v;
	return true;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "group", required_argument, NULL, 'g' },
		{ "size", required_argument, NULL, 'b' },
		{ "seconds", required_argument, NULL, 's' },
		{ "send", no_argument, NULL, 'S' },
		{ "recv", no_argument, NULL, 'R' },
		{ "peers", required_argument, NULL, 'p' },
		{ "timeout-s", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	cpg_callbacks_t cb = { .cpg_deliver_fn = deliver, .cpg_confchg_fn = confchg };
	const char *group = NULL;
	double size = 0, peers = 1;
	int role = 0, opt, idx = 0, fd, rc;
	cpg_handle_t h;
	cs_error_t err;

	b.seconds = 0;
	b.timeout_s = 30;
	while ((opt = getopt_long(argc, argv, "", opts, &idx)) != -1) {
		bool ok = true;

		switch (opt) {
		case 'g': group = optarg; break;
		case 'b': ok = parse_num(optarg, MSG_MIN, MSG_MAX, &size) &&
		               size == (size_t)size; break;
		case 's': ok = parse_num(optarg, 0.001, 86400, &b.seconds); break;
		case 'S': case 'R':
			ok = role == 0 || role == opt;
			role = opt;
			break;
		case 'p': ok = parse_num(optarg, 1, CPG_MEMBERS_MAX - 1, &peers) &&
		               peers == (unsigned)peers; break;
		case 't': ok = parse_num(optarg, 0.1, 86400, &b.timeout_s); break;
		case 'h': usage(stdout); return 0;
		default: ok = false; break;
		}
		if (!ok) {
			if (opt != '?')
				fprintf(stderr, "cpgbench: bad --%s: %s\n", opts[idx].name,
				        optarg != NULL ? optarg : "");
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || group == NULL || size == 0 || b.seconds == 0 || role == 0 ||
	    strlen(group) == 0 || strlen(group) >= CPG_MAX_NAME_LENGTH) {
		usage(stderr);
		return 2;
	}
	b.send = role == 'S';
	b.size = (size_t)size;
	b.peers = (unsigned)peers;
	b.group.length = (uint32_t)strlen(group);
	memcpy(b.group.value, group, b.group.length);
	b.my_pid = (uint32_t)getpid();

	err = RETRY(cpg_initialize(&h, &cb));
	if (err != CS_OK)
		die_cs("cpg_initialize", err);
	err = RETRY(cpg_local_get(h, &b.my_nodeid));
	if (err != CS_OK)
		die_cs("cpg_local_get", err);
	err = cpg_fd_get(h, &fd);
	if (err != CS_OK)
		die_cs("cpg_fd_get", err);
	err = RETRY(cpg_join(h, &b.group));
	if (err != CS_OK)
		die_cs("cpg_join", err);

	rc = b.send ? run_send(h, fd) : run_recv(h, fd);

	RETRY(cpg_leave(h, &b.group));
	cpg_finalize(h);
	return rc;
}
