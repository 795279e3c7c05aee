/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpg-intruder: a second process under the local node's id in a maglb CPG
 * group, for the cluster tests (syncd trusts one process per node id and
 * must drop what any other sends, syncd/cpg_view.h).
 *
 *   cpg-intruder --group NAME [--file FILE] [--state up|down [--role R]
 *                [--priority N] [--seq N]] [--batch-seq N] [--count N]
 *
 * Joins CPG group NAME of the local corosync ("maglb:/membership", or a
 * sync group: "maglb:" + its name) and multicasts, --count times each
 * (default 1), in this order:
 *   --file FILE     the bytes of FILE (at most 64 KiB);
 *   --state S       a well-formed NODE_STATE under the local node's id:
 *                   down = "dataplane down" (dataplane false; synced,
 *                   quorate), up = every fact true; role --role active or
 *                   passive (default passive), --priority (default 100),
 *                   sequence number --seq (default 1);
 *   --batch-seq N   a NEW batch of one entry (VIP 198.18.1.1:8000, client
 *                   198.18.10.99:40000, backend 198.18.0.21), sequence
 *                   number N: 1 is stale once the node's syncd has sent.
 * Then prints "joined NAME as node N pid P", "sent M messages" and
 * "ready", and stays joined (dispatching) until SIGTERM or SIGINT, when it
 * leaves and exits 0; 1 on a CPG error, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <corosync/cpg.h>

#include "proto/wire.h"
#include "cpgtool.h"

enum { BUF_MAX = 65536 };

struct options {
	const char *group, *file;
	int state;                      /* -1 none, 0 down, 1 up */
	enum wire_role role;
	uint32_t priority;
	uint64_t state_seq, batch_seq;  /* batch_seq 0: no batch */
	unsigned long count;
};

static cpg_handle_t handle;
static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* A NODE_STATE of node, as syncd/cluster.c's announce() makes one. */
static size_t
node_state(uint8_t *buf, uint32_t node, const struct options *o)
{
	struct wire_sync_msg m = {
		.kind = WIRE_SYNC_NODE_STATE, .node_id = node, .seq = o->state_seq,
		.state = {
			.priority = o->priority,
			.dataplane = o->state == 1,
			.synced = true,
			.quorate = true,
			.role = o->role,
			.mode = WIRE_CLUSTER_MODE_ACTIVE_PASSIVE,
			.incarnation = 1,
		},
	};
	size_t len = 0;

	return wire_sync_encode(&m, buf, BUF_MAX, &len) < 0 ? 0 : len;
}

/* A NEW batch of one entry for the tests' VIP, from node, numbered seq. */
static size_t
batch(uint8_t *buf, uint32_t node, uint64_t seq)
{
	struct wire_flow f = {
		.family = AF_INET, .proto = IPPROTO_TCP, .vip_port = 8000,
		.client_port = 40000, .backend_family = AF_INET, .lifetime_ms = 60000,
		.flags = WIRE_FLOW_ESTABLISHED,
	};
	struct wire_sync_msg m = { .kind = WIRE_SYNC_NEW, .node_id = node, .seq = seq,
				   .entries = &f, .count = 1 };
	uint32_t v = htonl(0xc6120101u), c = htonl(0xc6120a63u), b = htonl(0xc6120015u);
	size_t len = 0;

	memcpy(f.vip, &v, 4);
	memcpy(f.client, &c, 4);
	memcpy(f.backend, &b, 4);
	return wire_sync_encode(&m, buf, BUF_MAX, &len) < 0 ? 0 : len;
}

/* FILE's bytes into buf. Length, or 0 (said why). */
static size_t
file_read(uint8_t *buf, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t len;

	if (f == NULL) {
		fprintf(stderr, "cpg-intruder: %s: %s\n", path, strerror(errno));
		return 0;
	}
	len = fread(buf, 1, BUF_MAX, f);
	fclose(f);
	if (len == 0)
		fprintf(stderr, "cpg-intruder: %s: empty or unreadable\n", path);
	return len;
}

static int
usage(void)
{
	fprintf(stderr, "usage: cpg-intruder --group NAME [--file FILE] [--state up|down "
		"[--role active|passive] [--priority N] [--seq N]] [--batch-seq N] "
		"[--count N]\n");
	return 2;
}

/* Options into o. 0, or 2 (bad usage, said). */
static int
options_parse(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "group", required_argument, NULL, 'g' },
		{ "file", required_argument, NULL, 'f' },
		{ "state", required_argument, NULL, 's' },
		{ "role", required_argument, NULL, 'r' },
		{ "priority", required_argument, NULL, 'p' },
		{ "seq", required_argument, NULL, 'q' },
		{ "batch-seq", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct options){ .state = -1, .role = WIRE_ROLE_PASSIVE, .priority = 100,
			       .state_seq = 1, .count = 1 };
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'g': o->group = optarg; break;
		case 'f': o->file = optarg; break;
		case 's':
			if (strcmp(optarg, "up") != 0 && strcmp(optarg, "down") != 0)
				return usage();
			o->state = strcmp(optarg, "up") == 0;
			break;
		case 'r':
			if (strcmp(optarg, "active") != 0 && strcmp(optarg, "passive") != 0)
				return usage();
			o->role = strcmp(optarg, "active") == 0 ? WIRE_ROLE_ACTIVE :
								  WIRE_ROLE_PASSIVE;
			break;
		case 'p': o->priority = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'q': o->state_seq = strtoull(optarg, NULL, 10); break;
		case 'b': o->batch_seq = strtoull(optarg, NULL, 10); break;
		case 'n': o->count = strtoul(optarg, NULL, 10); break;
		default: return usage();
		}
	}
	if (o->group == NULL || strlen(o->group) >= CPG_MAX_NAME_LENGTH ||
	    (o->file == NULL && o->state < 0 && o->batch_seq == 0))
		return usage();
	return 0;
}

/* Multicast what o names, count times each. Messages sent, or -1. */
static long
send_all(const struct options *o, uint32_t node)
{
	static uint8_t buf[BUF_MAX];
	long sent = 0;

	for (int k = 0; k < 3; k++) {
		size_t len;

		if (k == 0 && o->file != NULL)
			len = file_read(buf, o->file);
		else if (k == 1 && o->state >= 0)
			len = node_state(buf, node, o);
		else if (k == 2 && o->batch_seq != 0)
			len = batch(buf, node, o->batch_seq);
		else
			continue;
		if (len == 0)
			return -1;
		for (unsigned long i = 0; i < o->count; i++, sent++)
			if (cpgtool_send(handle, buf, len) < 0)
				return -1;
	}
	return sent;
}

int
main(int argc, char **argv)
{
	cpg_model_v1_data_t model = { .model = CPG_MODEL_V1,
				       .cpg_deliver_fn = cpgtool_deliver };
	struct cpg_name group = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct options o;
	unsigned int node = 0;
	struct pollfd pfd = { .events = POLLIN };
	long sent;
	int rc = options_parse(argc, argv, &o);

	if (rc != 0)
		return rc;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	group.length = (uint32_t)snprintf(group.value, sizeof(group.value), "%s", o.group);
	if (cpg_model_initialize(&handle, CPG_MODEL_V1, (cpg_model_data_t *)&model, NULL) != CS_OK ||
	    cpg_local_get(handle, &node) != CS_OK || cpg_fd_get(handle, &pfd.fd) != CS_OK ||
	    cpg_join(handle, &group) != CS_OK) {
		fprintf(stderr, "cpg-intruder: cannot join %s (is corosync running?)\n", o.group);
		return 1;
	}
	printf("joined %s as node %u pid %d\n", o.group, node, (int)getpid());
	sent = send_all(&o, node);
	if (sent < 0) {
		fprintf(stderr, "cpg-intruder: multicast failed\n");
		cpg_finalize(handle);
		return 1;
	}
	printf("sent %ld messages\nready\n", sent);
	fflush(stdout);
	while (!stop) {
		if (poll(&pfd, 1, 1000) > 0 &&
		    cpg_dispatch(handle, CS_DISPATCH_ALL) != CS_OK) {
			fprintf(stderr, "cpg-intruder: lost corosync\n");
			cpg_finalize(handle);
			return 1;
		}
	}
	cpg_leave(handle, &group);
	cpg_finalize(handle);
	printf("left\n");
	return 0;
}
