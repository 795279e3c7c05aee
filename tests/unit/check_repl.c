/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * syncd's replication engine, several nodes in one process: a fake CPG
 * that delivers every message to every member in one total order (as
 * corosync does), and a fake dataplane that acknowledges imports.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "config/config.h"
#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/repl.h"
#include "lib/hash.h"

enum { NODES_MAX = 3, QUEUE_MAX = 200000 };

struct node {
	uint32_t id;
	struct config *cfg;
	struct catalog *cat;
	struct repl *r;
	bool member;
	bool cpg_busy;                  /* send answers -EAGAIN */
	bool cpg_broken;                /* send answers -EIO */
	bool dp_busy;                   /* import answers -EAGAIN */
	uint64_t imported[WIRE_FLOW_EVENT_MAX];
	uint64_t pending_tokens[4096];
	size_t n_pending;
};

struct msg {
	uint32_t sender;
	uint16_t group;
	size_t len;
	uint8_t *data;
};

static struct node nodes[NODES_MAX];
static struct msg queue[QUEUE_MAX];
static size_t q_head, q_tail;
static uint32_t now = 1000;

static const char *const config_fmt =
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n"
	"node = { id = %u; address = \"198.18.0.1%u\"; };\n"
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
	"vips = (\n"
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";\n"
	"    encap = \"l2\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; },\n"
	"      { address = \"198.18.0.22\"; mac = \"02:00:00:00:00:22\"; },\n"
	"      { address = \"198.18.0.23\"; mac = \"02:00:00:00:00:23\"; } ); }%s\n"
	");\n";

/* A VIP only some nodes have, in the default group or a group of its own. */
enum extra { EXTRA_NONE = 0, EXTRA_DNS, EXTRA_DNS_OWN_GROUP };

static const char *const extra_vip[] = {
	[EXTRA_NONE] = "",
	[EXTRA_DNS] =
	",\n  { name = \"dns\"; address = \"198.18.1.2\"; port = 53; protocol = \"udp\";\n"
	"    encap = \"l2\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; } ); }",
	[EXTRA_DNS_OWN_GROUP] =
	",\n  { name = \"dns\"; address = \"198.18.1.2\"; port = 53; protocol = \"udp\";\n"
	"    encap = \"l2\"; sync_group = \"dns\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; } ); }",
};

static int
fake_send(void *arg, uint16_t group, const void *buf, size_t len)
{
	struct node *n = arg;
	struct msg *m;

	if (n->cpg_busy)
		return -EAGAIN;
	if (n->cpg_broken)
		return -EIO;
	ck_assert_uint_lt(q_tail, QUEUE_MAX);
	m = &queue[q_tail++];
	m->sender = n->id;
	m->group = group;
	m->len = len;
	m->data = malloc(len);
	memcpy(m->data, buf, len);
	return 0;
}

static int
fake_import(void *arg, enum wire_flow_event ev, const struct wire_flow *f, size_t n,
	    uint64_t token)
{
	struct node *nd = arg;

	(void)f;
	if (nd->dp_busy)
		return -EAGAIN;
	nd->imported[ev] += n;
	ck_assert_uint_lt(nd->n_pending, 4096);
	nd->pending_tokens[nd->n_pending++] = token;
	return 0;
}

/* Node id's config, with the VIP extra (or without one), and its catalog. */
static void
config_make(uint32_t id, enum extra extra, struct config **cfg, struct catalog **cat)
{
	char text[4096], err[CONFIG_ERROR_MAX];

	snprintf(text, sizeof(text), config_fmt, id, id, extra_vip[extra]);
	*cfg = config_load_string(text, "t.conf", err, sizeof(err));
	ck_assert_msg(*cfg != NULL, "%s", err);
	*cat = catalog_create(*cfg);
	ck_assert_ptr_nonnull(*cat);
}

static void
node_start(int i, enum extra extra)
{
	static const struct repl_ops ops = { .send = fake_send, .import = fake_import };
	struct node *n = &nodes[i];
	struct repl_params p = {
		.max_batch_bytes = 8192, .max_batch_delay_ms = 5,
		.import_queue_entries = 65536, .send_queue_bytes = 1 << 20,
		.max_idle_ms = 900000,  /* the entries' lifetime: tcp_established */
	};

	memset(n, 0, sizeof(*n));
	n->id = (uint32_t)i + 1;
	config_make(n->id, extra, &n->cfg, &n->cat);
	p.self = n->id;
	n->r = repl_create(n->cat, &p, &ops, n);
	ck_assert_ptr_nonnull(n->r);
}

static void
node_stop(int i)
{
	repl_destroy(nodes[i].r);
	catalog_destroy(nodes[i].cat);
	config_free(nodes[i].cfg);
	memset(&nodes[i], 0, sizeof(nodes[i]));
}

/* CPG's view: the nodes in set (bitmask) are the members of group 0 (and
 * of every other group). */
static void
members(unsigned set)
{
	uint32_t ids[NODES_MAX];
	size_t n = 0;

	for (int i = 0; i < NODES_MAX; i++)
		if (set & (1u << i))
			ids[n++] = (uint32_t)i + 1;
	for (int i = 0; i < NODES_MAX; i++) {
		bool in = set & (1u << i);

		if (nodes[i].r == NULL || (!in && !nodes[i].member))
			continue;
		nodes[i].member = in;
		for (uint16_t g = 0; g < repl_groups(nodes[i].r); g++)
			repl_on_members(nodes[i].r, g, ids, n, in, false, now);
	}
}

/* Deliver at most max queued messages to every member, in order. */
static size_t
deliver(size_t max)
{
	size_t done = 0;

	while (q_head < q_tail && done < max) {
		struct msg *m = &queue[q_head++];

		if (m->data == NULL)
			continue;       /* lost with its sender */
		for (int i = 0; i < NODES_MAX; i++)
			if (nodes[i].r != NULL && nodes[i].member)
				repl_on_deliver(nodes[i].r, m->group, m->sender, m->data, m->len,
						now, 0);
		free(m->data);
		done++;
	}
	return done;
}

/* Lose the queued messages of sender (a partition: another ring had them). */
static void
queue_drop_from(uint32_t sender)
{
	for (size_t i = q_head; i < q_tail; i++)
		if (queue[i].sender == sender && queue[i].data != NULL) {
			free(queue[i].data);
			queue[i].data = NULL;
		}
}

/* Acknowledge every import sent so far. */
static void
ack_imports(void)
{
	for (int i = 0; i < NODES_MAX; i++) {
		struct node *n = &nodes[i];

		for (size_t k = 0; k < n->n_pending; k++)
			repl_import_done(n->r, n->pending_tokens[k], true, 0);
		n->n_pending = 0;
	}
}

/* Run the cluster until nothing moves: ticks, deliveries, acks. */
static void
settle(void)
{
	for (int round = 0; round < 100000; round++) {
		size_t before = q_tail;

		now++;
		for (int i = 0; i < NODES_MAX; i++)
			if (nodes[i].r != NULL)
				repl_tick(nodes[i].r, now, 0);
		ack_imports();
		if (deliver(SIZE_MAX) == 0 && q_tail == before && round > 10)
			return;
	}
	ck_abort_msg("the cluster did not settle");
}

static void
flow(struct wire_flow *f, uint32_t client, uint16_t port, int backend)
{
	uint32_t c = htonl(0xc6120000u | client);    /* 198.18.x.x */
	uint32_t v = htonl(0xc6120101u);             /* 198.18.1.1 */
	uint32_t b = htonl(0xc6120015u + (uint32_t)backend);

	memset(f, 0, sizeof(*f));
	f->family = AF_INET;
	f->proto = IPPROTO_TCP;
	f->vip_port = 80;
	f->client_port = port;
	f->backend_family = AF_INET;
	f->lifetime_ms = 900000;
	f->flags = WIRE_FLOW_ESTABLISHED;
	memcpy(f->vip, &v, 4);
	memcpy(f->client, &c, 4);
	memcpy(f->backend, &b, 4);
}

/* Node i's dataplane exports n flows (clients from first) as event ev. */
static void
export(int i, enum wire_flow_event ev, uint32_t first, size_t n, int backend)
{
	struct wire_flow *e = calloc(n, sizeof(*e));
	struct wire_ctl_flows fl = { .event = ev, .entries = e, .count = n };

	for (size_t k = 0; k < n; k++)
		flow(&e[k], first + (uint32_t)k, (uint16_t)(1024 + (first + k) % 50000), backend);
	repl_on_export(nodes[i].r, &fl, now, 0);
	free(e);
}

static struct repl_group_status
status(int i)
{
	struct repl_group_status st;

	repl_group_status(nodes[i].r, 0, &st);
	return st;
}

static uint64_t
held(int i)
{
	struct repl_group_status st = status(i);

	return st.entries_own + st.entries_peers;
}

static void
setup(void)
{
	q_head = q_tail = 0;
	now = 1000;
}

static void
teardown(void)
{
	for (int i = 0; i < NODES_MAX; i++)
		if (nodes[i].r != NULL)
			node_stop(i);
	while (q_head < q_tail)
		free(queue[q_head++].data);
}

/* ------------------------------------------------------------------ tests */

START_TEST(test_new_reaches_peer)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	ck_assert_int_eq(status(0).state, REPL_SYNCED);
	ck_assert_int_eq(status(1).state, REPL_SYNCED);
	repl_dataplane_up(nodes[1].r, now);
	export(0, WIRE_FLOW_EVENT_NEW, 1, 1000, 0);
	settle();
	ck_assert_uint_eq(status(0).entries_own, 1000);
	ck_assert_uint_eq(status(1).entries_peers, 1000);
	ck_assert_uint_eq(status(1).counters[REPL_IMPORTED], 1000);
	ck_assert_uint_eq(nodes[1].imported[WIRE_FLOW_EVENT_NEW], 1000);
	ck_assert_uint_eq(status(0).digest, status(1).digest);
	/* 1000 IPv4 entries of ~35 B in 8 KiB messages: batched */
	ck_assert_uint_le(status(0).counters[REPL_MSGS_SENT], 10);
	ck_assert(repl_dataplane_synced(nodes[1].r));
}
END_TEST

START_TEST(test_close_after_new_in_one_window)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 10, 0);
	export(0, WIRE_FLOW_EVENT_CLOSE, 1, 5, 0);
	settle();
	ck_assert_uint_eq(held(1), 5);
	/* the client reuses the 5-tuple: CLOSE then NEW in one window */
	export(0, WIRE_FLOW_EVENT_CLOSE, 6, 5, 0);
	export(0, WIRE_FLOW_EVENT_NEW, 6, 5, 2);
	settle();
	ck_assert_uint_eq(held(1), 5);
	ck_assert_uint_eq(status(0).digest, status(1).digest);
}
END_TEST

START_TEST(test_refresh_does_not_overtake)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	/* REFRESH (backend 0) then a NEW that moves the flow to backend 1 */
	export(0, WIRE_FLOW_EVENT_REFRESH, 1, 3, 0);
	export(0, WIRE_FLOW_EVENT_NEW, 1, 3, 1);
	settle();
	ck_assert_uint_eq(held(1), 3);
	ck_assert_uint_eq(status(0).digest, status(1).digest);
}
END_TEST

/* Node i's dataplane exports flow client as event ev, syncd's wall clock us. */
static void
export_at(int i, enum wire_flow_event ev, uint32_t client, uint64_t us)
{
	struct wire_flow e;
	struct wire_ctl_flows fl = { .event = ev, .entries = &e, .count = 1 };

	flow(&e, client, (uint16_t)(1024 + client), 0);
	repl_on_export(nodes[i].r, &fl, now, us);
}

/* The queued message q: its kind and stamp. */
static struct wire_sync_msg
queued(size_t q)
{
	static struct wire_flow e[8192 / WIRE_SYNC_ENTRY_MIN + 1];    /* max_batch_bytes / min */
	struct wire_counters c = { 0 };
	struct wire_sync_msg m;

	ck_assert_uint_lt(q, q_tail);
	ck_assert_int_eq(wire_sync_decode(queue[q].data, queue[q].len, &m, e, sizeof(e) / sizeof(e[0]),
					  &c), 0);
	return m;
}

/*
 * A partial batch waits max_batch_delay_ms from its own first entry, and
 * its message carries that entry's stamp, whatever other kinds hold.
 */
START_TEST(test_batch_delay_and_stamp_per_kind)
{
	uint32_t t0;
	size_t q0;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	q0 = q_tail;
	t0 = now;
	export_at(0, WIRE_FLOW_EVENT_REFRESH, 1, 5000000);
	now = t0 + 3;
	export_at(0, WIRE_FLOW_EVENT_NEW, 2, 5003000);
	now = t0 + 4;
	repl_tick(nodes[0].r, now, 0);
	ck_assert_uint_eq(q_tail, q0);                  /* neither is due */
	now = t0 + 5;
	repl_tick(nodes[0].r, now, 0);                  /* the REFRESH is, and the NEW before it */
	ck_assert_uint_eq(q_tail, q0 + 2);
	ck_assert_int_eq(queued(q0).kind, WIRE_SYNC_NEW);
	ck_assert_uint_eq(queued(q0).stamp_us, 5003000);
	ck_assert_int_eq(queued(q0 + 1).kind, WIRE_SYNC_REFRESH);
	ck_assert_uint_eq(queued(q0 + 1).stamp_us, 5000000);
	now = t0 + 6;
	export_at(0, WIRE_FLOW_EVENT_NEW, 3, 5006000);
	now = t0 + 10;
	repl_tick(nodes[0].r, now, 0);
	ck_assert_uint_eq(q_tail, q0 + 2);              /* 4 ms old: it waits */
	now = t0 + 11;
	repl_tick(nodes[0].r, now, 0);
	ck_assert_uint_eq(q_tail, q0 + 3);
	ck_assert_uint_eq(queued(q0 + 2).stamp_us, 5006000);
	settle();
	ck_assert_uint_eq(held(1), 3);
}
END_TEST

START_TEST(test_agreed_order_converges)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	/* both nodes made the same flow, to different backends */
	export(0, WIRE_FLOW_EVENT_NEW, 7, 1, 0);
	export(1, WIRE_FLOW_EVENT_NEW, 7, 1, 2);
	settle();
	ck_assert_uint_eq(held(0), 1);
	ck_assert_uint_eq(held(1), 1);
	ck_assert_uint_eq(status(0).digest, status(1).digest);
}
END_TEST

/* Node i exports one UDP flow of VIP dns (198.18.1.2:53). */
static void
export_dns(int i, uint32_t client)
{
	struct wire_flow f;
	struct wire_ctl_flows fl = { .event = WIRE_FLOW_EVENT_NEW, .entries = &f, .count = 1 };
	uint32_t dns = htonl(0xc6120102u);

	flow(&f, client, 1000, 0);
	memcpy(f.vip, &dns, 4);
	f.proto = IPPROTO_UDP;
	f.vip_port = 53;
	repl_on_export(nodes[i].r, &fl, now, 0);
}

START_TEST(test_peer_config_differs)
{
	struct wire_flow f;
	struct wire_ctl_flows fl = { .event = WIRE_FLOW_EVENT_NEW, .entries = &f, .count = 1 };
	uint32_t unknown = htonl(0xc6120063u);

	node_start(0, EXTRA_DNS);       /* has VIP dns, in the default group */
	node_start(1, EXTRA_NONE);
	node_start(2, EXTRA_DNS_OWN_GROUP);
	members(7);
	settle();
	export_dns(0, 1);
	flow(&f, 2, 1000, 0);
	memcpy(f.backend, &unknown, 4);         /* backend 198.18.0.99 */
	repl_on_export(nodes[0].r, &fl, now, 0);
	export(0, WIRE_FLOW_EVENT_NEW, 3, 1, 0);
	settle();
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_EXPORT_UNKNOWN], 1);
	ck_assert_uint_eq(held(0), 2);
	/* node 2 has no VIP dns: refused, counted */
	ck_assert_uint_eq(status(1).counters[REPL_REJECTED_VIP], 1);
	ck_assert_uint_eq(held(1), 1);
	/* node 3 has it in another group: refused on this one */
	ck_assert_uint_eq(status(2).counters[REPL_REJECTED_GROUP], 1);
	ck_assert_uint_eq(held(2), 1);
}
END_TEST

START_TEST(test_garbage_and_spoofed_sender)
{
	static const uint8_t junk[] = { 0xff, 0x13, 0x00, 0x42, 0x99 };
	struct wire_flow f;
	struct wire_sync_msg m = { .kind = WIRE_SYNC_NEW, .node_id = 1, .seq = 1,
				   .entries = &f, .count = 1 };
	uint8_t buf[256];
	size_t len;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	repl_on_deliver(nodes[1].r, 0, 1, junk, sizeof(junk), now, 0);
	repl_on_deliver(nodes[1].r, 0, 1, junk, 0, now, 0);
	repl_on_deliver(nodes[1].r, 7, 1, junk, sizeof(junk), now, 0);    /* no group 7 */
	flow(&f, 1, 1000, 0);
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	repl_on_deliver(nodes[1].r, 0, 3, buf, len, now, 0);    /* says 1, CPG says 3 */
	ck_assert_uint_eq(status(1).counters[REPL_DROP_DECODE], 2);    /* junk, empty */
	ck_assert_uint_eq(status(1).counters[REPL_DROP_SENDER], 1);
	ck_assert_uint_eq(held(1), 0);
	/* a membership message belongs to the membership group, not here */
	{
		struct wire_sync_msg st = {
			.kind = WIRE_SYNC_NODE_STATE, .node_id = 1, .seq = 2,
			.state = { .role = WIRE_ROLE_ACTIVE,
				   .mode = WIRE_CLUSTER_MODE_ACTIVE_PASSIVE },
		};
		uint8_t sbuf[128];
		size_t slen;

		ck_assert_int_eq(wire_sync_encode(&st, sbuf, sizeof(sbuf), &slen), 0);
		repl_on_deliver(nodes[1].r, 0, 1, sbuf, slen, now, 0);
		ck_assert_uint_eq(status(1).counters[REPL_DROP_KIND], 1);
	}
	/* truncated at every length: counted, never applied */
	for (size_t cut = 1; cut < len; cut++)
		repl_on_deliver(nodes[1].r, 0, 1, buf, cut, now, 0);
	ck_assert_uint_eq(held(1), 0);
	ck_assert_uint_ge(status(1).counters[REPL_DROP_DECODE], 2);
}
END_TEST

START_TEST(test_resync_on_join)
{
	node_start(0, EXTRA_NONE);
	members(1);
	settle();
	ck_assert_int_eq(status(0).state, REPL_SYNCED);    /* alone */
	export(0, WIRE_FLOW_EVENT_NEW, 1, 20000, 1);
	settle();
	node_start(1, EXTRA_NONE);
	members(3);
	ck_assert_int_eq(status(1).state, REPL_RESYNCING);
	settle();
	ck_assert_int_eq(status(1).state, REPL_SYNCED);
	ck_assert_uint_eq(held(1), 20000);
	ck_assert_uint_eq(status(1).counters[REPL_RESYNC_COMPLETE], 1);
	ck_assert_uint_eq(status(0).counters[REPL_RESYNC_SERVED], 1);
	ck_assert_uint_eq(status(0).digest, status(1).digest);
}
END_TEST

/* Entries made and closed while the stream runs: none lost, none back. */
START_TEST(test_resync_under_traffic)
{
	node_start(0, EXTRA_NONE);
	members(1);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 30000, 0);
	settle();
	node_start(1, EXTRA_NONE);
	members(3);
	for (int step = 0; step < 40; step++) {
		now++;
		repl_tick(nodes[0].r, now, 0);
		repl_tick(nodes[1].r, now, 0);
		export(0, WIRE_FLOW_EVENT_NEW, 40000 + (uint32_t)step * 10, 10, 2);
		export(0, WIRE_FLOW_EVENT_CLOSE, 1 + (uint32_t)step * 500, 100, 0);
		deliver(3);
	}
	settle();
	ck_assert_int_eq(status(1).state, REPL_SYNCED);
	ck_assert_uint_eq(held(0), 30000 + 400 - 4000);
	ck_assert_uint_eq(held(1), held(0));
	ck_assert_uint_eq(status(0).digest, status(1).digest);
}
END_TEST

/* A request that names no donor: the lowest member but the requester serves. */
START_TEST(test_resync_any_donor)
{
	struct wire_sync_msg m = { .kind = WIRE_SYNC_RESYNC_REQUEST, .node_id = 3, .seq = 1,
				   .epoch = 5, .peer = 0 };
	uint8_t buf[64];
	uint64_t served0, served1;
	size_t len;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	served0 = status(0).counters[REPL_RESYNC_SERVED];
	served1 = status(1).counters[REPL_RESYNC_SERVED];
	{
		uint32_t all[3] = { 1, 2, 3 };

		for (int i = 0; i < 2; i++)
			repl_on_members(nodes[i].r, 0, all, 3, true, false, now);
	}
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	for (int i = 0; i < 2; i++)
		repl_on_deliver(nodes[i].r, 0, 3, buf, len, now, 0);
	ck_assert_uint_eq(status(0).counters[REPL_RESYNC_SERVED], served0 + 1);
	ck_assert_uint_eq(status(1).counters[REPL_RESYNC_SERVED], served1);
}
END_TEST

START_TEST(test_resync_donor_leaves)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 20000, 0);
	export(1, WIRE_FLOW_EVENT_NEW, 30000, 100, 1);
	settle();
	node_start(2, EXTRA_NONE);
	members(7);
	/* the donor (node 1) sends its BEGIN and part of its stream, then dies */
	for (int i = 0; i < 2; i++) {
		now++;
		for (int n = 0; n < 3; n++)
			repl_tick(nodes[n].r, now, 0);
		deliver(2);
	}
	ck_assert_int_eq(status(2).state, REPL_RESYNCING);
	/* it crashed: what it sent and CPG had not ordered yet is lost */
	for (size_t i = q_head; i < q_tail; i++)
		if (queue[i].sender == 1) {
			free(queue[i].data);
			queue[i].data = NULL;
		}
	node_stop(0);
	members(6);
	settle();
	ck_assert_int_eq(status(2).state, REPL_SYNCED);
	ck_assert_uint_eq(held(2), 20100);
	ck_assert_uint_ge(status(2).counters[REPL_RESYNC_INCOMPLETE], 1);
	ck_assert_uint_eq(status(1).digest, status(2).digest);
}
END_TEST

START_TEST(test_dataplane_restart_imports_all)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 5000, 0);
	export(1, WIRE_FLOW_EVENT_NEW, 10000, 3000, 1);
	settle();
	nodes[0].dp_busy = true;
	repl_dataplane_up(nodes[0].r, now);
	settle();
	ck_assert(!repl_dataplane_synced(nodes[0].r));
	nodes[0].dp_busy = false;
	settle();
	ck_assert(repl_dataplane_synced(nodes[0].r));
	/* its own flows too */
	ck_assert_uint_eq(nodes[0].imported[WIRE_FLOW_EVENT_NEW], 8000);
}
END_TEST

/* A restarted syncd adopts its dataplane's own flows and tells the peers. */
START_TEST(test_dump_adopts_own_flows)
{
	struct wire_flow f[3];

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	flow(&f[0], 1, 1000, 0);
	flow(&f[1], 2, 1000, 1);
	flow(&f[2], 3, 1000, 2);
	f[2].flags |= WIRE_FLOW_FROM_PEER;     /* a peer's: the resync's business */
	repl_on_dump(nodes[0].r, f, 3, now, 0);
	repl_on_dump(nodes[0].r, f, 3, now, 0);  /* the same page again: no news */
	settle();
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_DUMP_ADOPTED], 2);
	ck_assert_uint_eq(status(0).entries_own, 2);
	ck_assert_uint_eq(status(1).entries_peers, 2);
}
END_TEST

/* Node i's dataplane lists one VIP, name, with a Maglev digest. */
static void
vip_digest(int i, const char *name, uint64_t digest)
{
	struct repl_vip_digest v = { .digest = digest };

	snprintf(v.name, sizeof(v.name), "%s", name);
	ck_assert_int_eq(repl_set_vip_digests(nodes[i].r, &v, 1), 0);
}

START_TEST(test_verify)
{
	struct repl_digest d[NODES_MAX];
	uint32_t n_members = 0;
	int round;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	node_start(2, EXTRA_NONE);
	members(7);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 3000, 0);
	export(2, WIRE_FLOW_EVENT_NEW, 5000, 200, 1);
	settle();
	/* each answer carries its dataplane's Maglev digest: node 3's differs */
	vip_digest(0, "web", 0xabc);
	vip_digest(1, "web", 0xabc);
	vip_digest(2, "web", 0xdef);
	round = repl_verify_start(nodes[1].r, 0);
	ck_assert_int_ge(round, 1);
	settle();
	ck_assert_uint_eq(repl_verify_result(nodes[1].r, 0, (uint32_t)round, d, NODES_MAX,
					     &n_members), 3);
	ck_assert_uint_eq(n_members, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(d[i].entries, 3200);
		ck_assert_uint_eq(d[i].digest, d[0].digest);
		ck_assert_uint_eq(d[i].maglev, hash_vip_digest("web", d[i].node == 3 ? 0xdef : 0xabc));
	}
	/* node 3 holds an entry the others never got: it disagrees */
	nodes[2].cpg_broken = true;
	export(2, WIRE_FLOW_EVENT_NEW, 9000, 1, 1);
	now += 10;
	repl_tick(nodes[2].r, now, 0);          /* the batch goes, and is lost */
	nodes[2].cpg_broken = false;
	settle();
	round = repl_verify_start(nodes[0].r, 0);
	settle();
	ck_assert_uint_eq(repl_verify_result(nodes[0].r, 0, (uint32_t)round, d, NODES_MAX,
					     &n_members), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(d[i].entries, (d[i].node == 3 ? 3201u : 3200u));
	ck_assert_uint_eq(status(2).counters[REPL_DROP_SEND_ERROR], 1);
}
END_TEST

/*
 * A group's answer carries the Maglev digest of its own VIPs: node 3
 * lacks VIP dns (group dns of its own) and agrees on the default group.
 */
START_TEST(test_verify_maglev_per_group)
{
	struct repl_vip_digest both[3] = { { "web", 0xabc }, { "dns", 0x123 },
					   { "gone", 0x77 } };     /* not in the config */
	struct repl_digest d[NODES_MAX];
	uint32_t n_members = 0;
	int round;

	node_start(0, EXTRA_DNS_OWN_GROUP);
	node_start(1, EXTRA_DNS_OWN_GROUP);
	node_start(2, EXTRA_NONE);
	members(7);
	settle();
	ck_assert_int_eq(repl_set_vip_digests(nodes[0].r, both, 3), 0);
	ck_assert_int_eq(repl_set_vip_digests(nodes[1].r, both, 2), 0);
	vip_digest(2, "web", 0xabc);
	round = repl_verify_start(nodes[0].r, 0);
	ck_assert_int_ge(round, 1);
	settle();
	ck_assert_uint_eq(repl_verify_result(nodes[0].r, 0, (uint32_t)round, d, NODES_MAX,
					     &n_members), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(d[i].maglev, hash_vip_digest("web", 0xabc));
	round = repl_verify_start(nodes[1].r, 1);
	ck_assert_int_ge(round, 1);
	settle();
	ck_assert_uint_eq(repl_verify_result(nodes[1].r, 1, (uint32_t)round, d, NODES_MAX,
					     &n_members), 2);
	for (int i = 0; i < 2; i++)
		ck_assert_uint_eq(d[i].maglev, hash_vip_digest("dns", 0x123));
}
END_TEST

/*
 * The answers to node asker's verify round, once the cluster settled: one
 * per member, into d (NODES_MAX of them).
 */
static void
verify_answers(int asker, int round, struct repl_digest *d)
{
	uint32_t n_members = 0;

	ck_assert_int_ge(round, 1);
	settle();
	ck_assert_uint_eq(repl_verify_result(nodes[asker].r, 0, (uint32_t)round, d, NODES_MAX,
					     &n_members), n_members);
	ck_assert_uint_eq(n_members, 3);
}

/* Every member answered entries and one digest. */
static void
verify_agrees(int asker, int round, uint64_t entries)
{
	struct repl_digest d[NODES_MAX];

	verify_answers(asker, round, d);
	for (int i = 0; i < 3; i++) {
		ck_assert_msg(d[i].entries == entries, "node %u: %llu entries, not %llu",
			      d[i].node, (unsigned long long)d[i].entries,
			      (unsigned long long)entries);
		ck_assert_uint_eq(d[i].digest, d[0].digest);
	}
}

/* Node odd answered odd_entries, the others entries and one digest, not odd's. */
static void
verify_one_differs(const struct repl_digest *d, uint32_t odd, uint64_t odd_entries,
		   uint64_t entries)
{
	const struct repl_digest *other = d[0].node != odd ? &d[0] : &d[1];

	for (int i = 0; i < 3; i++) {
		ck_assert_msg(d[i].entries == (d[i].node == odd ? odd_entries : entries),
			      "node %u: %llu entries", d[i].node,
			      (unsigned long long)d[i].entries);
		if (d[i].node == odd)
			ck_assert_uint_ne(d[i].digest, other->digest);
		else
			ck_assert_uint_eq(d[i].digest, other->digest);
	}
}

/* Three nodes; node 1's dataplane made 100 flows, every node holds them. */
static void
three_nodes_hundred_flows(void)
{
	for (int i = 0; i < 3; i++)
		node_start(i, EXTRA_NONE);
	members(7);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 100, 0);
	settle();
}

/* Where node 1's own exports are when the verify request is delivered. */
enum export_stage { STAGE_BATCHED = 0, STAGE_QUEUED, STAGE_MULTICAST };

/*
 * Node 1's dataplane makes 50 flows and closes 40 of its 100 around a
 * verify round node 2 asks for; node 1 holds them at once, its peers
 * once CPG delivers them, after the request. Every answer describes the
 * point of the request: 100 entries.
 */
static void
verify_around_exports(enum export_stage stage)
{
	int round = 0;

	three_nodes_hundred_flows();
	if (stage == STAGE_MULTICAST)
		round = repl_verify_start(nodes[1].r, 0);
	nodes[0].cpg_busy = stage == STAGE_QUEUED;
	export(0, WIRE_FLOW_EVENT_NEW, 1000, 50, 0);
	export(0, WIRE_FLOW_EVENT_CLOSE, 1, 40, 0);
	if (stage != STAGE_BATCHED) {
		now += 10;
		repl_tick(nodes[0].r, now, 0);  /* the batches go (or wait for CPG) */
	}
	if (stage != STAGE_MULTICAST)
		round = repl_verify_start(nodes[1].r, 0);
	ck_assert_uint_eq(deliver(1), 1);       /* the request: the exports not yet */
	nodes[0].cpg_busy = false;
	verify_agrees(1, round, 100);
	/* and once they are delivered, every node holds them */
	verify_agrees(0, repl_verify_start(nodes[0].r, 0), 110);
}

START_TEST(test_verify_agrees_exports_batched)
{
	verify_around_exports(STAGE_BATCHED);
}
END_TEST

START_TEST(test_verify_agrees_exports_queued)
{
	verify_around_exports(STAGE_QUEUED);
}
END_TEST

START_TEST(test_verify_agrees_exports_multicast)
{
	verify_around_exports(STAGE_MULTICAST);
}
END_TEST

/*
 * Node 1's dataplane makes 10 flows and closes them at once: NEW and CLOSE
 * go in two messages, and node 2's verify request falls between them in
 * the agreed order. Node 1 took the NEW back while its CLOSE was still on
 * its way: every answer still describes the point of the request.
 */
START_TEST(test_verify_agrees_between_new_and_close)
{
	three_nodes_hundred_flows();
	export(0, WIRE_FLOW_EVENT_NEW, 1000, 10, 0);
	now += 10;
	repl_tick(nodes[0].r, now, 0);          /* the NEW goes */
	int round = repl_verify_start(nodes[1].r, 0);
	export(0, WIRE_FLOW_EVENT_CLOSE, 1000, 10, 0);
	now += 10;
	repl_tick(nodes[0].r, now, 0);          /* the CLOSE goes */
	verify_agrees(1, round, 110);
	verify_agrees(0, repl_verify_start(nodes[0].r, 0), 100);
}
END_TEST

/* Messages lost to a full CPG backlog: their entries are on node 1 only. */
START_TEST(test_verify_shows_backlog_drops)
{
	struct repl_digest d[NODES_MAX];
	uint64_t lost;
	int round;

	three_nodes_hundred_flows();
	nodes[0].cpg_busy = true;
	export(0, WIRE_FLOW_EVENT_NEW, 1000, 60000, 0);
	now += 10;
	repl_tick(nodes[0].r, now, 0);
	lost = status(0).counters[REPL_DROP_CPG_BACKLOG];
	ck_assert_uint_gt(lost, 0);
	ck_assert_uint_lt(lost, 60000);
	/* asked while the rest still waits for CPG */
	round = repl_verify_start(nodes[1].r, 0);
	ck_assert_uint_eq(deliver(1), 1);
	nodes[0].cpg_busy = false;
	verify_answers(1, round, d);
	verify_one_differs(d, 1, 100 + lost, 100);
	/* and after the rest arrived */
	verify_answers(1, repl_verify_start(nodes[1].r, 0), d);
	verify_one_differs(d, 1, 60100, 60100 - lost);
}
END_TEST

/*
 * A message that waited for CPG, then was refused: its entries are on node
 * 1 only too; not the next ones, batched when the round is asked.
 */
START_TEST(test_verify_shows_queued_send_errors)
{
	struct repl_digest d[NODES_MAX];
	int round;

	three_nodes_hundred_flows();
	nodes[0].cpg_busy = true;
	export(0, WIRE_FLOW_EVENT_NEW, 1000, 30, 0);
	now += 10;
	repl_tick(nodes[0].r, now, 0);          /* queued */
	ck_assert_uint_eq(status(0).send_queue, 1);
	nodes[0].cpg_busy = false;
	nodes[0].cpg_broken = true;
	now++;
	repl_tick(nodes[0].r, now, 0);          /* and refused */
	nodes[0].cpg_broken = false;
	ck_assert_uint_eq(status(0).counters[REPL_DROP_SEND_ERROR], 30);
	export(0, WIRE_FLOW_EVENT_NEW, 2000, 20, 0);
	round = repl_verify_start(nodes[1].r, 0);
	ck_assert_uint_eq(deliver(1), 1);
	verify_answers(1, round, d);
	verify_one_differs(d, 1, 130, 100);
}
END_TEST

/* Synced only once the dataplane has acknowledged the resync's entries. */
START_TEST(test_synced_waits_for_imports)
{
	node_start(0, EXTRA_NONE);
	members(1);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 5000, 0);
	settle();
	node_start(1, EXTRA_NONE);
	repl_dataplane_up(nodes[1].r, now);
	settle();
	ck_assert(repl_dataplane_synced(nodes[1].r));   /* nothing held yet */
	nodes[1].dp_busy = true;
	members(3);
	settle();
	ck_assert_int_eq(status(1).state, REPL_SYNCED);
	ck_assert(!repl_synced(nodes[1].r));    /* 5000 imports not acknowledged */
	nodes[1].dp_busy = false;
	settle();
	ck_assert(repl_synced(nodes[1].r));
	ck_assert_uint_eq(nodes[1].imported[WIRE_FLOW_EVENT_NEW], 5000);
}
END_TEST

/*
 * Acknowledgements of imports sent to an earlier connection of the
 * dataplane arrive after it reconnected: counted, and nothing else moves.
 */
START_TEST(test_import_ack_of_a_dropped_queue)
{
	uint64_t stale[4096];
	size_t n_stale;
	const uint64_t *node;

	node_start(0, EXTRA_NONE);
	members(1);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 10000, 0);
	settle();
	repl_dataplane_up(nodes[0].r, now);
	repl_tick(nodes[0].r, now, 0);          /* sends the imports */
	n_stale = nodes[0].n_pending;
	ck_assert_uint_gt(n_stale, 1);
	memcpy(stale, nodes[0].pending_tokens, n_stale * sizeof(stale[0]));
	nodes[0].n_pending = 0;
	repl_dataplane_up(nodes[0].r, now);     /* reconnected: the queue is dropped */
	node = repl_node_counters(nodes[0].r);
	for (size_t k = 0; k < n_stale; k++)
		repl_import_done(nodes[0].r, stale[k], true, 0);
	ck_assert_uint_eq(node[REPL_NODE_IMPORT_UNKNOWN], n_stale);
	ck_assert_uint_eq(node[REPL_NODE_IMPORT_BATCHES], 0);
	ck_assert_uint_eq(repl_import_queue(nodes[0].r), 10000);
	settle();
	ck_assert(repl_dataplane_synced(nodes[0].r));
	ck_assert_uint_eq(node[REPL_NODE_IMPORT_UNKNOWN], n_stale);
	ck_assert_uint_eq(node[REPL_NODE_IMPORT_BATCHES], n_stale);
}
END_TEST

/* Node i reloads its config: with the VIP extra (or without one). */
static void
node_reload(int i, enum extra extra)
{
	struct node *n = &nodes[i];
	struct config *cfg;
	struct catalog *cat;

	config_make(n->id, extra, &cfg, &cat);
	ck_assert_int_eq(repl_set_catalog(n->r, cat, now), 0);
	catalog_destroy(n->cat);
	config_free(n->cfg);
	n->cat = cat;
	n->cfg = cfg;
}

/* Deliver every queued message to every member, at syncd's wall clock us. */
static void
deliver_at(uint64_t us)
{
	while (q_head < q_tail) {
		struct msg *m = &queue[q_head++];

		for (int i = 0; i < NODES_MAX; i++)
			if (m->data != NULL && nodes[i].r != NULL && nodes[i].member)
				repl_on_deliver(nodes[i].r, m->group, m->sender, m->data, m->len,
						now, us);
		free(m->data);
	}
}

/* Node i's dataplane acknowledges its imports sent so far, at us. */
static void
ack_imports_at(int i, uint64_t us)
{
	struct node *n = &nodes[i];

	repl_tick(n->r, now, us);       /* the imports queued go out */
	for (size_t k = 0; k < n->n_pending; k++)
		repl_import_done(n->r, n->pending_tokens[k], true, us);
	n->n_pending = 0;
}

/*
 * The lags since start count what the 10-20 s windows count, sample for
 * sample (one a message, one an import batch), in the bucket of the
 * ladder that holds them, and a reload keeps them.
 */
START_TEST(test_lag_histograms)
{
	struct repl_group_status st0, st1;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	repl_dataplane_up(nodes[1].r, now);
	settle();
	export_at(0, WIRE_FLOW_EVENT_NEW, 1, 5000000);
	now += 10;
	repl_tick(nodes[0].r, now, 0);                  /* the batch goes, stamped */
	deliver_at(5003000);                            /* delivered back 3 ms later */
	ack_imports_at(1, 5010000);                     /* imported by node 2 at 10 ms */
	export_at(0, WIRE_FLOW_EVENT_NEW, 2, 6000000);
	now += 10;
	repl_tick(nodes[0].r, now, 0);
	deliver_at(6000050);                            /* 50 µs */
	ack_imports_at(1, 6000100);                     /* 100 µs: the first bound, le */

	st0 = status(0);
	ck_assert_uint_eq(st0.self_lag.count, 2);
	ck_assert_uint_eq(st0.self_lag.sum_us, 3000 + 50);
	ck_assert_uint_eq(st0.self_lag.cumulative[0], 1);       /* <= 100 µs */
	ck_assert_uint_eq(st0.self_lag.cumulative[4], 1);       /* <= 2.5 ms */
	ck_assert_uint_eq(st0.self_lag.cumulative[5], 2);       /* <= 5 ms */
	ck_assert_uint_eq(st0.self_lag.cumulative[WIRE_LAG_BUCKETS - 1], 2);
	ck_assert_uint_eq(st0.import_lag.count, 0);     /* node 1 imported nothing */
	/* the windows saw the same two: p99 within 5 ms, p50 at the first */
	ck_assert_uint_le(st0.self_lag_p50_us, 100);
	ck_assert_uint_ge(st0.self_lag_p99_us, 3000);
	ck_assert_uint_le(st0.self_lag_p99_us, 5000);
	st1 = status(1);
	ck_assert_uint_eq(st1.self_lag.count, 0);
	ck_assert_uint_eq(st1.import_lag.count, 2);
	ck_assert_uint_eq(st1.import_lag.sum_us, 10000 + 100);
	ck_assert_uint_eq(st1.import_lag.cumulative[0], 1);
	ck_assert_uint_eq(st1.import_lag.cumulative[5], 1);     /* <= 5 ms */
	ck_assert_uint_eq(st1.import_lag.cumulative[6], 2);     /* <= 10 ms */
	ck_assert_uint_ge(st1.import_lag_p99_us, 10000);

	node_reload(0, EXTRA_DNS);
	st1 = status(0);
	ck_assert_mem_eq(&st1.self_lag, &st0.self_lag, sizeof(st0.self_lag));
}
END_TEST

/* A reload that removes a VIP drops its entries, counted; the rest stay. */
START_TEST(test_reload_drops_removed_vip)
{
	node_start(0, EXTRA_DNS);
	members(1);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 5, 0);
	for (uint32_t c = 100; c < 103; c++)
		export_dns(0, c);
	settle();
	ck_assert_uint_eq(held(0), 8);
	node_reload(0, EXTRA_NONE);
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_RELOAD_DROPPED], 3);
	ck_assert_uint_eq(held(0), 5);
	node_reload(0, EXTRA_DNS);              /* nothing left to drop */
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_RELOAD_DROPPED], 3);
	ck_assert_uint_eq(held(0), 5);
}
END_TEST

/*
 * Nodes 1 and 2; node 1 makes 10 flows, its syncd stops, and starts again
 * away_ms later: the resync hands it back its 10 entries, its origin kept.
 */
static void
ten_flows_then_node1_back(uint32_t away_ms)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 10, 0);
	settle();
	node_stop(0);
	members(2);
	now += away_ms;
	node_start(0, EXTRA_NONE);
	members(3);
	settle();
	ck_assert_uint_eq(status(0).entries_own, 10);
}

/* Flows that closed while a node's syncd was away: closed at reconciliation. */
START_TEST(test_reconcile_closes_what_the_dataplane_lost)
{
	struct wire_flow live[6];

	/* node 1's syncd dies; 4 of its flows close meanwhile; it comes back */
	ten_flows_then_node1_back(0);
	for (int i = 0; i < 6; i++)
		flow(&live[i], 1 + (uint32_t)i, (uint16_t)(1024 + (1 + i) % 50000), 0);
	ck_assert(repl_want_reconcile(nodes[0].r));
	repl_dump_begin(nodes[0].r);
	repl_on_dump(nodes[0].r, live, 6, now, 0);
	repl_dump_end(nodes[0].r, true, now - 60000, now, 0);  /* dataplane up 60 s */
	settle();
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_RECONCILED_CLOSES], 4);
	ck_assert_uint_eq(held(0), 6);
	ck_assert_uint_eq(held(1), 6);
	ck_assert_uint_eq(status(0).digest, status(1).digest);
}
END_TEST

/*
 * A node restarted whole (dataplane, then syncd): the flows its earlier
 * dataplane made live on at its peers, still with its origin. The new
 * dataplane never saw them: they are not its to close.
 */
START_TEST(test_reconcile_spares_an_earlier_dataplanes_flows)
{
	struct wire_flow live[2];

	ten_flows_then_node1_back(5000);
	/* a reload shortened the idle timeouts: the entries keep their lifetimes */
	repl_set_max_idle(nodes[0].r, 60000);
	/* the new dataplane started 1 s ago; two flows came to it since */
	for (int i = 0; i < 2; i++)
		flow(&live[i], 100 + (uint32_t)i, 2000, 0);
	repl_dump_begin(nodes[0].r);
	repl_on_dump(nodes[0].r, live, 2, now, 0);
	repl_dump_end(nodes[0].r, true, now - 1000, now, 0);
	settle();
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_RECONCILED_CLOSES], 0);
	ck_assert_uint_eq(held(0), 12);
	ck_assert_uint_eq(held(1), 12);
}
END_TEST

/*
 * A restarted syncd reconciles (2 flows adopted, 4 closed) around a
 * verify round: the answers describe the point of the request.
 */
START_TEST(test_verify_agrees_reconciliation)
{
	struct wire_flow live[8];
	int round;

	node_start(2, EXTRA_NONE);
	ten_flows_then_node1_back(0);
	members(7);
	settle();
	for (int i = 0; i < 6; i++)
		flow(&live[i], 1 + (uint32_t)i, (uint16_t)(1024 + (1 + i) % 50000), 0);
	flow(&live[6], 500, 2000, 1);
	flow(&live[7], 501, 2000, 1);
	round = repl_verify_start(nodes[1].r, 0);
	repl_dump_begin(nodes[0].r);
	repl_on_dump(nodes[0].r, live, 8, now, 0);
	repl_dump_end(nodes[0].r, true, now - 60000, now, 0);
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_RECONCILED_CLOSES], 4);
	ck_assert_uint_eq(repl_node_counters(nodes[0].r)[REPL_NODE_DUMP_ADOPTED], 2);
	ck_assert_uint_eq(deliver(1), 1);
	verify_agrees(1, round, 10);
	verify_agrees(1, repl_verify_start(nodes[1].r, 0), 8);
}
END_TEST

/* A partition heals: each side gets what the other made meanwhile. */
START_TEST(test_partition_heals)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	node_start(2, EXTRA_NONE);
	members(7);
	for (int i = 0; i < 3; i++)
		repl_dataplane_up(nodes[i].r, now);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 100, 0);
	settle();
	/* node 1 alone on one side, nodes 2 and 3 on the other */
	for (int i = 0; i < 3; i++) {
		uint32_t one = 1, two[2] = { 2, 3 };

		if (i == 0)
			repl_on_members(nodes[0].r, 0, &one, 1, true, false, now);
		else
			repl_on_members(nodes[i].r, 0, two, 2, true, false, now);
	}
	nodes[0].member = false;        /* the fake CPG: two rings now */
	export(0, WIRE_FLOW_EVENT_NEW, 1000, 50, 1);
	settle();
	queue_drop_from(1);             /* node 1's messages never reached them */
	nodes[0].member = true;
	nodes[1].member = nodes[2].member = false;
	export(1, WIRE_FLOW_EVENT_NEW, 2000, 70, 2);
	settle();
	nodes[1].member = nodes[2].member = true;
	/* the rings merge: CPG says NODEUP on both sides */
	for (int i = 0; i < 3; i++) {
		uint32_t all[3] = { 1, 2, 3 };

		repl_on_members(nodes[i].r, 0, all, 3, true, true, now);
	}
	/* fetching the other side's flows, each still holds its own side's:
	 * eligible for a role, though not synced */
	for (int i = 0; i < 3; i++) {
		ck_assert(!repl_synced(nodes[i].r));
		ck_assert(repl_holds_flows(nodes[i].r));
	}
	settle();
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(held(i), 220);
		ck_assert(repl_synced(nodes[i].r));
	}
	ck_assert_uint_eq(status(0).digest, status(1).digest);
	ck_assert_uint_eq(status(0).digest, status(2).digest);
	ck_assert_uint_ge(status(0).counters[REPL_RESYNC_MERGES], 1);
}
END_TEST

START_TEST(test_cpg_backpressure)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	nodes[0].cpg_busy = true;
	export(0, WIRE_FLOW_EVENT_NEW, 1, 2000, 0);
	for (int i = 0; i < 20; i++) {
		now++;
		repl_tick(nodes[0].r, now, 0);
	}
	ck_assert_uint_gt(status(0).send_queue, 0);
	ck_assert_uint_gt(status(0).counters[REPL_CPG_RETRIES], 0);
	nodes[0].cpg_busy = false;
	settle();
	ck_assert_uint_eq(status(0).send_queue, 0);
	ck_assert_uint_eq(held(1), 2000);
	/* a backlog past its bound drops, counted, and never grows */
	nodes[0].cpg_busy = true;
	export(0, WIRE_FLOW_EVENT_NEW, 100000, 60000, 0);
	for (int i = 0; i < 20; i++) {
		now++;
		repl_tick(nodes[0].r, now, 0);
	}
	ck_assert_uint_gt(status(0).counters[REPL_DROP_CPG_BACKLOG], 0);
	ck_assert_uint_le(status(0).send_queue, (1 << 20) / 8000 + 1);
	nodes[0].cpg_busy = false;
	settle();
}
END_TEST

START_TEST(test_expiry)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 100, 0);
	settle();
	ck_assert_uint_eq(held(1), 100);
	now += 900001;
	settle();
	ck_assert_uint_eq(cache_count(repl_cache(nodes[1].r)), 0);
	ck_assert_uint_eq(held(1), 0);
}
END_TEST

START_TEST(test_cache_bytes_per_entry)
{
	const struct cache *c;

	node_start(0, EXTRA_NONE);
	members(1);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 1000000, 0);
	c = repl_cache(nodes[0].r);
	ck_assert_uint_eq(cache_count(c), 1000000);
	printf("cache: %u entries, %zu bytes, %.1f bytes an entry\n", cache_count(c),
	       cache_bytes(c), (double)cache_bytes(c) / cache_count(c));
	ck_assert_uint_le(cache_bytes(c) / cache_count(c), 96);
}
END_TEST

/* Node 1's process says to node 2: a batch of kind of client's flow, seq. */
static void
deliver_seq(enum wire_sync_kind kind, uint32_t client, uint64_t seq)
{
	struct wire_flow f;
	struct wire_sync_msg m = { .kind = kind, .node_id = 1, .seq = seq, .entries = &f,
				   .count = 1 };
	uint8_t buf[256];
	size_t len;

	flow(&f, client, (uint16_t)(1024 + client), 0);
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	repl_on_deliver(nodes[1].r, 0, 1, buf, len, now, 0);
}

/* Every counter of a moved by at most most from b; msgs_received by msgs. */
static void
counters_moved_at_most(const struct repl_group_status *b, const struct repl_group_status *a,
		       uint64_t most, uint64_t msgs)
{
	for (int i = 0; i < REPL_COUNTER_MAX; i++)
		ck_assert_msg(a->counters[i] - b->counters[i] <= (i == REPL_MSGS_RECEIVED ?
								    msgs : most),
			      "%s moved by %llu", repl_counter_names[i],
			      (unsigned long long)(a->counters[i] - b->counters[i]));
}

/*
 * Batches replayed with a seq node 1 used already (a CLOSE of a live flow,
 * a NEW): dropped, each counted once, the mark kept, so node 1's next
 * batch is no gap.
 */
START_TEST(test_seq_stale_dropped_once)
{
	struct repl_group_status before, after;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 2, 0);
	settle();
	ck_assert_uint_eq(held(1), 2);
	before = status(1);
	deliver_seq(WIRE_SYNC_CLOSE, 1, 1);
	deliver_seq(WIRE_SYNC_NEW, 3, 1);
	after = status(1);
	ck_assert_uint_eq(after.counters[REPL_DROP_SEQ_STALE], 2);
	ck_assert_uint_eq(after.counters[REPL_SEQ_GAPS], 0);
	ck_assert_uint_eq(after.counters[REPL_ENTRIES_RECEIVED],
			  before.counters[REPL_ENTRIES_RECEIVED]);
	counters_moved_at_most(&before, &after, 2, 2);
	ck_assert_uint_eq(held(1), 2);

	export(0, WIRE_FLOW_EVENT_NEW, 10, 1, 0);
	settle();
	ck_assert_uint_eq(held(1), 3);
	ck_assert_uint_eq(status(1).counters[REPL_SEQ_GAPS], 0);
	ck_assert_uint_eq(status(1).counters[REPL_DROP_SEQ_STALE], 2);
}
END_TEST

/*
 * A jump forward, however far, is one gap; the batch is applied (the
 * messages before it are what is missing) and the sequence goes on from
 * it.
 */
START_TEST(test_seq_jump_counts_once)
{
	struct repl_group_status before, after;
	const uint64_t far = 2000000000000ull;

	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	before = status(1);
	deliver_seq(WIRE_SYNC_NEW, 5, far);
	ck_assert_uint_eq(status(1).counters[REPL_SEQ_GAPS], 1);
	deliver_seq(WIRE_SYNC_NEW, 6, far + 1);
	ck_assert_uint_eq(status(1).counters[REPL_SEQ_GAPS], 1);
	deliver_seq(WIRE_SYNC_NEW, 7, far + 5);
	after = status(1);
	ck_assert_uint_eq(after.counters[REPL_SEQ_GAPS], 2);
	ck_assert_uint_eq(after.counters[REPL_DROP_SEQ_STALE], 0);
	ck_assert_uint_eq(held(1), 3);
	counters_moved_at_most(&before, &after, 3, 3);
}
END_TEST

/*
 * A restarted sender starts its sequence again: it left the view first,
 * so nothing of it is stale and no gap is counted.
 */
START_TEST(test_seq_restarted_sender_not_stale)
{
	node_start(0, EXTRA_NONE);
	node_start(1, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 50, 0);
	settle();
	node_stop(0);
	members(2);
	settle();
	node_start(0, EXTRA_NONE);
	members(3);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 100, 1, 0);
	settle();
	ck_assert_uint_eq(held(1), 51);
	ck_assert_uint_eq(status(1).counters[REPL_DROP_SEQ_STALE], 0);
	ck_assert_uint_eq(status(1).counters[REPL_SEQ_GAPS], 0);
}
END_TEST

/*
 * Node sender's process says to node 2: a resync message of kind with
 * epoch, one flow in it (ENTRIES) or the count for END.
 */
static void
deliver_resync(enum wire_sync_kind kind, uint32_t sender, uint32_t epoch, uint64_t seq,
	       uint64_t count)
{
	struct wire_flow f;
	struct wire_sync_msg m = { .kind = kind, .node_id = sender, .seq = seq, .epoch = epoch,
				   .peer = 2, .entry_count = count };
	uint8_t buf[256];
	size_t len;

	if (kind == WIRE_SYNC_RESYNC_ENTRIES) {
		flow(&f, 60000, 60000, 0);
		m.entries = &f;
		m.count = 1;
	}
	ck_assert_int_eq(wire_sync_encode(&m, buf, sizeof(buf), &len), 0);
	repl_on_deliver(nodes[1].r, 0, sender, buf, len, now, 0);
}

/*
 * A refused resync event changed nothing but its own count (and what any
 * delivery counts: the message, a gap in its sender's sequence).
 */
static void
refused(const struct repl_group_status *b, const struct repl_group_status *a, uint64_t n)
{
	ck_assert_uint_eq(a->counters[REPL_IMPOSSIBLE_TRANSITIONS],
			  b->counters[REPL_IMPOSSIBLE_TRANSITIONS] + n);
	for (int i = 0; i < REPL_COUNTER_MAX; i++)
		if (i != REPL_IMPOSSIBLE_TRANSITIONS && i != REPL_MSGS_RECEIVED &&
		    i != REPL_SEQ_GAPS)
			ck_assert_msg(a->counters[i] == b->counters[i], "%s moved",
				      repl_counter_names[i]);
	ck_assert_int_eq(a->state, b->state);
	ck_assert_uint_eq(a->donor, b->donor);
	ck_assert_uint_eq(a->entries_peers, b->entries_peers);
	ck_assert_uint_eq(a->digest, b->digest);
}

/* Node 1 holds 10 entries; node 2 joins and asks it (epoch 1), not delivered yet. */
static void
joined_asking(void)
{
	node_start(0, EXTRA_NONE);
	members(1);
	settle();
	export(0, WIRE_FLOW_EVENT_NEW, 1, 10, 0);
	settle();
	node_start(1, EXTRA_NONE);
	members(3);
	ck_assert_int_eq(status(1).state, REPL_RESYNCING);
	ck_assert_uint_eq(status(1).donor, 1);
}

/* Node 2's resync ends as if nothing had been refused. */
static void
asked_completes(void)
{
	settle();
	ck_assert_int_eq(status(1).state, REPL_SYNCED);
	ck_assert_uint_eq(held(1), 10);
	ck_assert_uint_eq(status(1).counters[REPL_RESYNC_COMPLETE], 1);
}

/* A stream addressed here that is not the one asked: another donor, another epoch. */
START_TEST(test_resync_refuses_stream_not_asked)
{
	struct repl_group_status before, after;

	joined_asking();
	before = status(1);
	deliver_resync(WIRE_SYNC_RESYNC_BEGIN, 3, 1, 1, 0);
	deliver_resync(WIRE_SYNC_RESYNC_ENTRIES, 3, 1, 2, 0);
	after = status(1);
	refused(&before, &after, 2);
	ck_assert_uint_eq(held(1), 0);

	asked_completes();
	before = status(1);
	deliver_resync(WIRE_SYNC_RESYNC_END, 1, 9, 1000, 0);
	after = status(1);
	refused(&before, &after, 1);
	ck_assert_uint_eq(after.counters[REPL_RESYNC_COMPLETE], 1);
}
END_TEST

/* The donor's ENTRIES before its BEGIN: no move of a requester still waiting. */
START_TEST(test_resync_refuses_entries_before_begin)
{
	struct repl_group_status before, after;

	joined_asking();
	/* node 1 multicast its batch (seq 1) before node 2 joined: 1 is unseen here */
	ck_assert_uint_ge(status(0).counters[REPL_MSGS_SENT], 1);
	before = status(1);
	deliver_resync(WIRE_SYNC_RESYNC_ENTRIES, 1, 1, 1, 0);
	after = status(1);
	refused(&before, &after, 1);
	ck_assert_uint_eq(held(1), 0);

	asked_completes();
	ck_assert_uint_eq(status(1).counters[REPL_IMPOSSIBLE_TRANSITIONS], 1);
}
END_TEST

/* The END of the stream asked, again once synced: no move of a synced requester. */
START_TEST(test_resync_refuses_end_when_synced)
{
	struct repl_group_status before, after;

	joined_asking();
	asked_completes();
	ck_assert_uint_eq(status(1).counters[REPL_IMPOSSIBLE_TRANSITIONS], 0);
	before = status(1);
	deliver_resync(WIRE_SYNC_RESYNC_END, 1, 1, 1000, 10);
	after = status(1);
	refused(&before, &after, 1);
	ck_assert_uint_eq(after.counters[REPL_RESYNC_COMPLETE], 1);
}
END_TEST

static Suite *
repl_suite(void)
{
	Suite *s = suite_create("repl");
	TCase *tc = tcase_create("repl");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_new_reaches_peer);
	tcase_add_test(tc, test_close_after_new_in_one_window);
	tcase_add_test(tc, test_refresh_does_not_overtake);
	tcase_add_test(tc, test_batch_delay_and_stamp_per_kind);
	tcase_add_test(tc, test_agreed_order_converges);
	tcase_add_test(tc, test_peer_config_differs);
	tcase_add_test(tc, test_garbage_and_spoofed_sender);
	tcase_add_test(tc, test_resync_on_join);
	tcase_add_test(tc, test_resync_under_traffic);
	tcase_add_test(tc, test_resync_any_donor);
	tcase_add_test(tc, test_resync_donor_leaves);
	tcase_add_test(tc, test_resync_refuses_stream_not_asked);
	tcase_add_test(tc, test_resync_refuses_entries_before_begin);
	tcase_add_test(tc, test_resync_refuses_end_when_synced);
	tcase_add_test(tc, test_dataplane_restart_imports_all);
	tcase_add_test(tc, test_dump_adopts_own_flows);
	tcase_add_test(tc, test_verify);
	tcase_add_test(tc, test_verify_maglev_per_group);
	tcase_add_test(tc, test_verify_agrees_exports_batched);
	tcase_add_test(tc, test_verify_agrees_exports_queued);
	tcase_add_test(tc, test_verify_agrees_exports_multicast);
	tcase_add_test(tc, test_verify_agrees_between_new_and_close);
	tcase_add_test(tc, test_verify_shows_backlog_drops);
	tcase_add_test(tc, test_verify_shows_queued_send_errors);
	tcase_add_test(tc, test_verify_agrees_reconciliation);
	tcase_add_test(tc, test_synced_waits_for_imports);
	tcase_add_test(tc, test_import_ack_of_a_dropped_queue);
	tcase_add_test(tc, test_reload_drops_removed_vip);
	tcase_add_test(tc, test_lag_histograms);
	tcase_add_test(tc, test_reconcile_closes_what_the_dataplane_lost);
	tcase_add_test(tc, test_reconcile_spares_an_earlier_dataplanes_flows);
	tcase_add_test(tc, test_partition_heals);
	tcase_add_test(tc, test_cpg_backpressure);
	tcase_add_test(tc, test_expiry);
	tcase_add_test(tc, test_cache_bytes_per_entry);
	tcase_add_test(tc, test_seq_stale_dropped_once);
	tcase_add_test(tc, test_seq_jump_counts_once);
	tcase_add_test(tc, test_seq_restarted_sender_not_stale);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(repl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
