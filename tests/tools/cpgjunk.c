/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpgjunk: a CPG member that sends garbage into a maglb sync group, for the
 * cluster tests (syncd must count it and drop it, never apply it or crash).
 *
 *   cpgjunk --group NAME [--count N]
 *
 * Joins CPG group NAME (e.g. "maglb:default") of the local corosync and
 * multicasts N messages of each kind below (default 10), then leaves:
 *   - random bytes of random length (1..2048);
 *   - a NEW batch cut short at a random length;
 *   - a NEW batch of a wire version no node speaks (WIRE_SYNC_VERSION + 1);
 *   - a NEW batch whose sender field names another node (a spoof);
 *   - a NEW batch for a VIP no node has (198.18.99.99:80);
 *   - a HEALTH report of a backend no node has (198.18.99.99 of
 *     198.18.1.1:80) down (membership's; on a sync group, a misplaced kind);
 *   - an empty message.
 * It prints one line: "sent M messages" and exits 0, or 1 on a CPG error.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <corosync/cpg.h>

#include "proto/wire.h"
#include "cpgtool.h"

enum { KINDS = 7, BUF_MAX = 4096 };

static cpg_handle_t handle;
static unsigned int local_node;

/* A valid NEW batch of 3 entries for vip (host order), into buf. */
static size_t
batch(uint8_t *buf, uint32_t node, uint32_t vip)
{
	struct wire_flow f[3];
	struct wire_sync_msg m = { .kind = WIRE_SYNC_NEW, .node_id = node, .seq = 1,
				   .entries = f, .count = 3 };
	size_t len = 0;

	for (int i = 0; i < 3; i++) {
		uint32_t v = htonl(vip), c = htonl(0xc6120a63u), b = htonl(0xc6120015u);

		memset(&f[i], 0, sizeof(f[i]));
		f[i].family = AF_INET;
		f[i].proto = IPPROTO_TCP;
		f[i].vip_port = 80;
		f[i].client_port = (uint16_t)(40000 + i);
		f[i].backend_family = AF_INET;
		f[i].lifetime_ms = 60000;
		memcpy(f[i].vip, &v, 4);
		memcpy(f[i].client, &c, 4);
		memcpy(f[i].backend, &b, 4);
	}
	if (wire_sync_encode(&m, buf, BUF_MAX, &len) < 0)
		return 0;
	return len;
}

/* A HEALTH report from node: a backend no node has is down. */
static size_t
health(uint8_t *buf, uint32_t node)
{
	struct wire_flow f;
	struct wire_sync_msg m = { .kind = WIRE_SYNC_HEALTH, .node_id = node, .seq = 1,
				   .generation = 1, .entries = &f, .count = 1 };
	uint32_t v = htonl(0xc6120101u), b = htonl(0xc6126363u);
	size_t len = 0;

	memset(&f, 0, sizeof(f));
	f.family = AF_INET;
	f.proto = IPPROTO_TCP;
	f.vip_port = 80;
	f.backend_family = AF_INET;
	memcpy(f.vip, &v, 4);
	memcpy(f.backend, &b, 4);
	if (wire_sync_encode(&m, buf, BUF_MAX, &len) < 0)
		return 0;
	return len;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "group", required_argument, NULL, 'g' },
		{ "count", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	cpg_model_v1_data_t model = { .model = CPG_MODEL_V1,
				       .cpg_deliver_fn = cpgtool_deliver };
	struct cpg_name group = { 0 };
	uint8_t buf[BUF_MAX];
	unsigned long count = 10, sent = 0;
	const char *name = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'g')
			name = optarg;
		else if (opt == 'n')
			count = strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	if (name == NULL || strlen(name) >= sizeof(group.value)) {
		fprintf(stderr, "usage: cpgjunk --group NAME [--count N]\n");
		return 2;
	}
	group.length = (uint32_t)snprintf(group.value, sizeof(group.value), "%s", name);
	if (cpg_model_initialize(&handle, CPG_MODEL_V1, (cpg_model_data_t *)&model, NULL) != CS_OK ||
	    cpg_local_get(handle, &local_node) != CS_OK || cpg_join(handle, &group) != CS_OK) {
		fprintf(stderr, "cpgjunk: cannot join %s (is corosync running?)\n", name);
		return 1;
	}
	srandom((unsigned)time(NULL));
	for (unsigned long i = 0; i < count; i++) {
		for (int k = 0; k < KINDS; k++) {
			size_t len = 0;

			switch (k) {
			case 0:
				len = 1 + (size_t)random() % 2048;
				for (size_t b = 0; b < len; b++)
					buf[b] = (uint8_t)random();
				break;
			case 1:
				len = batch(buf, local_node, 0xc6120101u);
				len = len > 1 ? 1 + (size_t)random() % (len - 1) : 0;
				break;
			case 2:
				len = batch(buf, local_node, 0xc6120101u);
				/* Envelope.version: field 1, a one-byte varint */
				buf[1] = WIRE_SYNC_VERSION + 1;
				break;
			case 3:
				len = batch(buf, local_node + 100, 0xc6120101u);
				break;
			case 4:
				len = batch(buf, local_node, 0xc6126363u);
				break;
			case 5:
				len = health(buf, local_node);
				break;
			default:
				len = 0;
				break;
			}
			if (cpgtool_send(handle, buf, len) < 0 && len > 0) {   /* CPG may refuse empty ones */
				fprintf(stderr, "cpgjunk: multicast failed\n");
				return 1;
			}
			sent++;
		}
	}
	cpg_dispatch(handle, CS_DISPATCH_ALL);
	cpg_leave(handle, &group);
	cpg_finalize(handle);
	printf("sent %lu messages\n", sent);
	return 0;
}
