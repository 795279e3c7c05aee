/* SPDX-License-Identifier: BSD-3-Clause */
/* The membership group's messages, checked. See cluster_msg.h. */
#include "syncd/cluster_msg.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
	/* entries of the longest message: HEALTH's are the smallest */
	ENTRIES_MAX = CLUSTER_MSG_MAX / WIRE_BACKEND_REF_ENCODED_MIN + 1,
};

struct cluster_msg {
	struct cluster_msg_ops ops;
	void *arg;
	uint64_t *counters;
	struct wire_flow *entries;      /* ENTRIES_MAX: what a message carries */
	struct health_key *keys;        /* ENTRIES_MAX: a HEALTH report's */
	struct wire_counters wire;
};

struct cluster_msg *
cluster_msg_create(const struct cluster_msg_ops *ops, void *arg, uint64_t *counters)
{
	struct cluster_msg *in = calloc(1, sizeof(*in));

	if (in == NULL)
		return NULL;
	in->ops = *ops;
	in->arg = arg;
	in->counters = counters;
	in->entries = calloc(ENTRIES_MAX, sizeof(*in->entries));
	in->keys = calloc(ENTRIES_MAX, sizeof(*in->keys));
	if (in->entries == NULL || in->keys == NULL) {
		cluster_msg_destroy(in);
		return NULL;
	}
	return in;
}

void
cluster_msg_destroy(struct cluster_msg *in)
{
	if (in == NULL)
		return;
	free(in->entries);
	free(in->keys);
	free(in);
}

static bool
is_member(const struct roles_member *members, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (members[i].id == id)
			return true;
	return false;
}

/* A HEALTH entry (wire_sync_msg.entries) as a health key. */
static struct health_key
wire_to_key(const struct wire_flow *f)
{
	struct health_key k;

	memset(&k, 0, sizeof(k));
	k.vip_len = f->family == AF_INET ? 4 : 16;
	k.backend_len = f->backend_family == AF_INET ? 4 : 16;
	memcpy(k.vip, f->vip, k.vip_len);
	memcpy(k.backend, f->backend, k.backend_len);
	k.vip_port = f->vip_port;
	k.protocol = f->proto;
	return k;
}

static void
on_health(struct cluster_msg *in, uint32_t sender, const struct wire_sync_msg *m)
{
	for (size_t i = 0; i < m->count; i++)
		in->keys[i] = wire_to_key(&m->entries[i]);
	if (in->ops.health(in->arg, sender, in->keys, m->count) < 0)
		in->counters[CLUSTER_HEALTH_NO_MEMORY]++;
}

void
cluster_msg_deliver(struct cluster_msg *in, uint32_t sender, const void *buf, size_t len,
		    const struct roles_member *members, size_t n)
{
	uint64_t *c = in->counters;
	struct wire_sync_msg m;

	if (len > CLUSTER_MSG_MAX) {
		c[CLUSTER_DROP_TOO_LONG]++;
		return;
	}
	if (wire_sync_decode(buf, len, &m, in->entries, ENTRIES_MAX, &in->wire) < 0) {
		c[CLUSTER_DROP_DECODE]++;
	} else if (m.node_id != sender) {
		c[CLUSTER_DROP_SENDER]++;
	} else if (m.kind == WIRE_SYNC_NODE_STATE) {
		c[CLUSTER_STATES_RECEIVED]++;
		if (!is_member(members, n, sender))
			c[CLUSTER_STATES_NOT_MEMBER]++;
		else
			in->ops.state(in->arg, sender, &m.state);
	} else if (m.kind == WIRE_SYNC_HEALTH) {
		c[CLUSTER_HEALTH_RECEIVED]++;
		if (!is_member(members, n, sender))
			c[CLUSTER_HEALTH_NOT_MEMBER]++;
		else
			on_health(in, sender, &m);
	} else {
		c[CLUSTER_DROP_KIND]++;
	}
}
