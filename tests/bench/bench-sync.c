/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench-sync: maglb-syncd's sync path stage by stage, in ns an entry, in
 * one process (no corosync, no DPDK, no IPC).
 *
 *   bench-sync [--entries-small N] [--entries-large N] [--batch-bytes N]
 *              [--path-entries N] [--quick] [-h]
 *
 * Stages, each on IPv4 TCP entries of random clients to one VIP of a real
 * config and catalog:
 *  - cpg_encode_ns, cpg_decode_ns: wire_sync_encode() / wire_sync_decode()
 *    of a NEW batch holding as many entries as syncd packs into a message
 *    of --batch-bytes (default 8192, sync.max_batch_bytes);
 *  - export_*_ns, import_*_ns: wire_ctl_encode() / wire_ctl_decode() and
 *    wire_ctl_msg_free() of an EXPORT_BATCH of the dataplane's size (1024
 *    entries) and an IMPORT_BATCH of syncd's largest (4096);
 *  - cache_upsert_1m_ns, cache_upsert_8m_ns: cache_upsert() of random keys
 *    into one cache growing to --entries-small (default 1 M) and then to
 *    --entries-large (default 8 M), each call timed: the means over the
 *    inserts up to each size, less the clock's own cost, and the longest
 *    call (cache_grow_max_ms: a bucket doubling); cache_bytes_per_entry
 *    once grown;
 *  - digest_walk_ns: cache_group_digest() over that cache;
 *  - path_ns: two repl engines joined by an in-process total-order
 *    transport, from node 1's exports to node 2's import op, for
 *    --path-entries (default 1 M).
 * Each stage but the cache's growth repeats for at least 0.2 s. --quick:
 * ten times fewer of everything, for a smoke run. A fixed seed. Prints one
 * JSON line on stdout, notes on stderr; a benchmark: it asserts nothing
 * (exit 1 only when a stage could not run).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config.h"
#include "proto/wire.h"
#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/repl.h"
#include "tests/bench/bench.h"

enum {
	ENTRIES_SMALL_DEFAULT = 1000000,
	ENTRIES_LARGE_DEFAULT = 8000000,
	ENTRIES_MAX = 1u << 26,         /* a cache of 2.7 GB */
	BATCH_BYTES_DEFAULT = 8192,     /* the shipped sync.max_batch_bytes */
	BATCH_BYTES_MIN = 512,          /* config's range of it */
	BATCH_BYTES_MAX = 65536,
	PATH_ENTRIES_DEFAULT = 1000000,
	QUICK_DIVISOR = 10,
	EXPORT_BATCH_ENTRIES = 1024,    /* CONTROL_EXPORT_BURST, dpgen's --batch */
	IMPORT_BATCH_ENTRIES = 4096,    /* IMPORT_BATCH_MAX of syncd/repl_import.c */
	SEND_QUEUE_BYTES = 16 << 20,    /* syncd.c's CPG backlog per group */
	NODES = 2,
	PENDING_MAX = 1024,             /* imports unacknowledged, then -EAGAIN */
	SETUP_ROUNDS = 100,             /* ms for two empty nodes to sync */
	SETTLE_ROUNDS_MAX = 10000,      /* ms after the last export */
	CLOCK_SAMPLES = 100000,
	NOW_MS = 1000,                  /* the engines' clock at the start */
	FLOW_LIFETIME_MS = 900000,      /* tcp_established's default */
	SEQ = 1u << 20,                 /* a node up for a while: 3-byte varints */
};

static const double STAGE_NS = 0.2e9;  /* each stage runs this long at least */
static const uint64_t SEED = 0x243f6a8885a308d3ull;

static const char *const config_fmt =
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n"
	"node = { id = %u; address = \"198.18.0.1%u\"; };\n"
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
	"vips = (\n"
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";\n"
	"    encap = \"l2\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; },\n"
	"      { address = \"198.18.0.22\"; mac = \"02:00:00:00:00:22\"; },\n"
	"      { address = \"198.18.0.23\"; mac = \"02:00:00:00:00:23\"; } ); }\n"
	");\n";

struct opts {
	uint32_t small, large, batch_bytes, path;
	double stage_ns;
};

struct figures {
	double cpg_encode, cpg_decode, cpg_bytes_per_entry;
	size_t per_batch;
	double export_encode, export_decode, import_encode, import_decode;
	double upsert_small, upsert_large, cache_bytes_per_entry, grow_max_ms;
	double digest, path;
};

static volatile uint64_t sink;

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* What syncd stamps batches with (lag): CLOCK_REALTIME, µs. */
static uint64_t
real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* An established TCP flow of a random client to the config's VIP. */
static void
flow_random(struct wire_flow *f, uint64_t *s)
{
	uint64_t r = rnd(s);
	uint32_t client = (uint32_t)r;
	uint32_t vip = htonl(0xc6120101u);              /* 198.18.1.1 */
	uint32_t backend = htonl(0xc6120015u + (uint32_t)(r >> 48) % 3);

	memset(f, 0, sizeof(*f));
	f->family = f->backend_family = AF_INET;
	f->proto = IPPROTO_TCP;
	f->vip_port = 80;
	f->client_port = (uint16_t)(1024 + (r >> 32) % 64512);
	f->lifetime_ms = FLOW_LIFETIME_MS;
	f->flags = WIRE_FLOW_ESTABLISHED;
	memcpy(f->vip, &vip, 4);
	memcpy(f->client, &client, 4);
	memcpy(f->backend, &backend, 4);
}

static void
flows_random(struct wire_flow *f, size_t n, uint64_t *s)
{
	for (size_t i = 0; i < n; i++)
		flow_random(&f[i], s);
}

/* Node id's config and its catalog: 0, -EINVAL (said why), -ENOMEM. */
static int
config_make(uint32_t id, struct config **cfg, struct catalog **cat)
{
	char text[2048], err[CONFIG_ERROR_MAX];

	snprintf(text, sizeof(text), config_fmt, id, id);
	*cat = NULL;
	*cfg = config_load_string(text, "bench-sync.conf", err, sizeof(err));
	if (*cfg == NULL) {
		fprintf(stderr, "bench-sync: %s\n", err);
		return -EINVAL;
	}
	*cat = catalog_create(*cfg);
	return *cat != NULL ? 0 : -ENOMEM;
}

/* ns an entry of fn(arg) on entries entries, repeated for o->stage_ns. */
static double
time_per_entry(const struct opts *o, void (*fn)(void *), void *arg, size_t entries)
{
	double t0 = bench_now_ns(), t;
	uint64_t reps = 0;

	do {
		fn(arg);
		reps++;
		t = bench_now_ns() - t0;
	} while (t < o->stage_ns);
	return t / ((double)reps * (double)entries);
}

/* ---------------------------------------------------------- CPG batch */

struct cpg_stage {
	struct wire_sync_msg m;
	struct wire_flow *out;          /* decoded entries */
	size_t out_cap;
	uint8_t *buf;
	size_t buf_len, len;
	int rc;                         /* the first failure */
};

static void
cpg_encode_once(void *arg)
{
	struct cpg_stage *st = arg;
	int rc = wire_sync_encode(&st->m, st->buf, st->buf_len, &st->len);

	if (rc < 0 && st->rc == 0)
		st->rc = rc;
}

static void
cpg_decode_once(void *arg)
{
	struct cpg_stage *st = arg;
	struct wire_sync_msg m;
	int rc = wire_sync_decode(st->buf, st->len, &m, st->out, st->out_cap, NULL);

	if (rc == 0)
		sink += m.count;
	else if (st->rc == 0)
		st->rc = rc;
}

/*
 * As many entries as repl_batch_add() puts in a message of batch_bytes:
 * their encoded sizes and the largest header within it.
 */
static size_t
batch_fill(struct wire_flow *e, size_t cap, uint32_t batch_bytes, uint64_t *s)
{
	size_t n = 0, bytes = 0;

	for (; n < cap; n++) {
		flow_random(&e[n], s);
		if (bytes + wire_sync_entry_size(WIRE_SYNC_NEW, &e[n]) + WIRE_SYNC_HEADER_MAX > batch_bytes)
			break;
		bytes += wire_sync_entry_size(WIRE_SYNC_NEW, &e[n]);
	}
	return n;
}

static int
stage_cpg(const struct opts *o, struct figures *fig)
{
	size_t cap = o->batch_bytes / WIRE_SYNC_ENTRY_MIN + 1;
	struct wire_flow *in = calloc(cap, sizeof(*in));
	struct cpg_stage st = { .out_cap = cap, .buf_len = o->batch_bytes };
	uint64_t s = SEED;

	st.out = calloc(cap, sizeof(*st.out));
	st.buf = malloc(st.buf_len);
	if (in == NULL || st.out == NULL || st.buf == NULL) {
		st.rc = -ENOMEM;
		goto out;
	}
	st.m = (struct wire_sync_msg){
		.kind = WIRE_SYNC_NEW, .node_id = 1, .seq = SEQ, .stamp_us = real_us(),
		.entries = in,
		.count = batch_fill(in, cap, o->batch_bytes, &s),
	};
	fig->per_batch = st.m.count;
	fig->cpg_encode = time_per_entry(o, cpg_encode_once, &st, st.m.count);
	fig->cpg_bytes_per_entry = (double)st.len / (double)st.m.count;
	if (st.rc == 0)
		fig->cpg_decode = time_per_entry(o, cpg_decode_once, &st, st.m.count);
out:
	free(in);
	free(st.out);
	free(st.buf);
	return st.rc;
}

/* ------------------------------------------------------- IPC messages */

struct ctl_stage {
	struct wire_ctl_msg m;
	uint8_t *buf;
	size_t buf_len, len;
	int rc;
};

static void
ctl_encode_once(void *arg)
{
	struct ctl_stage *st = arg;
	int rc = wire_ctl_encode(&st->m, st->buf, st->buf_len, &st->len);

	if (rc < 0 && st->rc == 0)
		st->rc = rc;
}

/* A decode as its receiver does it: then the arrays freed. */
static void
ctl_decode_once(void *arg)
{
	struct ctl_stage *st = arg;
	struct wire_ctl_msg m;
	int rc = wire_ctl_decode(st->buf, st->len, &m, NULL);

	if (rc < 0) {
		if (st->rc == 0)
			st->rc = rc;
		return;
	}
	sink += m.flows.count;
	wire_ctl_msg_free(&m);
}

/* A flows message of kind and n entries: encode, decode figures. */
static int
ctl_time(const struct opts *o, enum wire_ctl_kind kind, size_t n, double *enc, double *dec)
{
	struct wire_flow *e = calloc(n, sizeof(*e));
	struct ctl_stage st = { .m = { .kind = kind, .request_id = SEQ } };
	uint64_t s = SEED;

	if (e == NULL)
		return -ENOMEM;
	flows_random(e, n, &s);
	st.m.flows = (struct wire_ctl_flows){ .event = WIRE_FLOW_EVENT_NEW, .entries = e,
					      .count = n };
	st.buf_len = wire_ctl_encoded_size(&st.m);
	st.buf = st.buf_len > 0 ? malloc(st.buf_len) : NULL;
	if (st.buf == NULL)
		st.rc = st.buf_len == 0 ? -EINVAL : -ENOMEM;
	if (st.rc == 0)
		*enc = time_per_entry(o, ctl_encode_once, &st, n);
	if (st.rc == 0)
		*dec = time_per_entry(o, ctl_decode_once, &st, n);
	free(st.buf);
	free(e);
	return st.rc;
}

static int
stage_ctl(const struct opts *o, struct figures *fig)
{
	int rc = ctl_time(o, WIRE_CTL_EXPORT_BATCH, EXPORT_BATCH_ENTRIES, &fig->export_encode,
			  &fig->export_decode);

	if (rc == 0)
		rc = ctl_time(o, WIRE_CTL_IMPORT_BATCH, IMPORT_BATCH_ENTRIES,
			      &fig->import_encode, &fig->import_decode);
	return rc;
}

/* -------------------------------------------------------------- cache */

/* What a clock read costs: left out of each upsert's time. */
static double
clock_cost_ns(void)
{
	double t0 = bench_now_ns(), t1 = t0;

	for (int i = 0; i < CLOCK_SAMPLES; i++)
		t1 = bench_now_ns();
	return (t1 - t0) / CLOCK_SAMPLES;
}

struct digest_stage {
	const struct cache *c;
};

static void
digest_once(void *arg)
{
	const struct digest_stage *st = arg;
	struct cache_group_stats gs = cache_group_digest(st->c, 0, NOW_MS,
							  REPL_VERIFY_MARGIN_MS);

	sink += gs.digest;
}

/* Grow c to o->large entries, one timed upsert at a time. */
static int
cache_grow(const struct opts *o, struct cache *c, struct figures *fig)
{
	double clock = clock_cost_ns(), sum = 0, max = 0;
	uint64_t s = SEED;

	fprintf(stderr, "bench-sync: a clock read costs %.1f ns\n", clock);
	for (uint32_t i = 0; i < o->large; i++) {
		struct wire_flow f;
		struct cache_key k;
		struct cache_value v;
		double t0, dt;
		int rc;

		flow_random(&f, &s);
		rc = cache_from_wire(c, &f, 1, NOW_MS, &k, &v);
		if (rc < 0)
			return rc;
		t0 = bench_now_ns();
		rc = cache_upsert(c, &k, &v, NOW_MS);
		dt = bench_now_ns() - t0;
		if (rc < 0)
			return rc;
		sum += dt;
		max = dt > max ? dt : max;
		if (i + 1 == o->small)
			fig->upsert_small = sum / o->small - clock;
	}
	fig->upsert_large = sum / o->large - clock;
	fig->grow_max_ms = max / 1e6;
	return 0;
}

static int
stage_cache(const struct opts *o, struct figures *fig)
{
	struct config *cfg;
	struct catalog *cat;
	struct cache *c = NULL;
	int rc = config_make(1, &cfg, &cat);

	if (rc == 0 && (c = cache_create(cat, 1)) == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		rc = cache_grow(o, c, fig);
	if (rc == 0) {
		struct digest_stage st = { .c = c };

		fig->cache_bytes_per_entry = (double)cache_bytes(c) / cache_count(c);
		fig->digest = time_per_entry(o, digest_once, &st, cache_count(c));
		fprintf(stderr, "bench-sync: %u of %u keys distinct\n", cache_count(c), o->large);
	}
	cache_destroy(c);
	catalog_destroy(cat);
	config_free(cfg);
	return rc;
}

/* --------------------------------------------- two engines, one path */

struct msg {
	uint32_t sender;
	uint16_t group;
	size_t len;
	uint8_t *data;
};

struct fabric;

struct node {
	struct fabric *fb;
	uint32_t id;
	struct config *cfg;
	struct catalog *cat;
	struct repl *r;
	uint64_t pending[PENDING_MAX];  /* import tokens to acknowledge */
	size_t n_pending;
	uint64_t imported, imports;     /* entries and calls of the import op */
};

/* The transport: one queue, delivered to every member in order (CPG's agreed order). */
struct fabric {
	struct node nodes[NODES];
	struct msg *q;
	size_t head, tail, cap;
	uint32_t now_ms;
};

static int
fake_send(void *arg, uint16_t group, const void *buf, size_t len)
{
	struct node *n = arg;
	struct fabric *fb = n->fb;
	struct msg *m;

	if (fb->tail == fb->cap) {
		size_t cap = fb->cap ? 2 * fb->cap : 64;
		struct msg *q = realloc(fb->q, cap * sizeof(*q));

		if (q == NULL)
			return -EAGAIN;         /* backpressure: the engine retries */
		fb->q = q;
		fb->cap = cap;
	}
	m = &fb->q[fb->tail];
	m->data = malloc(len);
	if (m->data == NULL)
		return -EAGAIN;
	memcpy(m->data, buf, len);
	m->sender = n->id;
	m->group = group;
	m->len = len;
	fb->tail++;
	return 0;
}

/* Taken at once; acknowledged after the call that made it returns (the
 * engine still holds the batch during it). */
static int
fake_import(void *arg, enum wire_flow_event ev, const struct wire_flow *f, size_t n,
	    uint64_t token)
{
	struct node *nd = arg;

	(void)ev, (void)f;
	if (nd->n_pending == PENDING_MAX)
		return -EAGAIN;
	nd->pending[nd->n_pending++] = token;
	nd->imported += n;
	nd->imports++;
	return 0;
}

static void
deliver_all(struct fabric *fb, uint64_t now_us)
{
	while (fb->head < fb->tail) {
		struct msg *m = &fb->q[fb->head++];

		for (int i = 0; i < NODES; i++)
			repl_on_deliver(fb->nodes[i].r, m->group, m->sender, m->data, m->len,
					fb->now_ms, now_us);
		free(m->data);
	}
	fb->head = fb->tail = 0;
}

static void
ack_all(struct node *n, uint64_t now_us)
{
	for (size_t k = 0; k < n->n_pending; k++)
		repl_import_done(n->r, n->pending[k], true, now_us);
	n->n_pending = 0;
}

/*
 * One millisecond: what was multicast delivered, then a tick each (which
 * flushes batches past their delay and hands imports over), then the
 * imports acknowledged.
 */
static void
fabric_round(struct fabric *fb)
{
	uint64_t now_us = real_us();

	fb->now_ms++;
	deliver_all(fb, now_us);
	for (int i = 0; i < NODES; i++) {
		repl_tick(fb->nodes[i].r, fb->now_ms, now_us);
		ack_all(&fb->nodes[i], now_us);
	}
}

static int
node_start(struct fabric *fb, int i, uint32_t batch_bytes)
{
	static const struct repl_ops ops = { .send = fake_send, .import = fake_import };
	struct node *n = &fb->nodes[i];
	struct repl_params p;
	int rc;

	n->fb = fb;
	n->id = (uint32_t)i + 1;
	rc = config_make(n->id, &n->cfg, &n->cat);
	if (rc < 0)
		return rc;
	p = (struct repl_params){
		.self = n->id, .max_batch_bytes = batch_bytes,
		.max_batch_delay_ms = n->cfg->sync.max_batch_delay_ms,
		.import_queue_entries = n->cfg->sync.queue_entries,
		.send_queue_bytes = SEND_QUEUE_BYTES,
		.max_idle_ms = n->cfg->flows.timeouts.tcp_established * 1000,
	};
	n->r = repl_create(n->cat, &p, &ops, n);
	return n->r != NULL ? 0 : -ENOMEM;
}

static void
fabric_stop(struct fabric *fb)
{
	for (int i = 0; i < NODES; i++) {
		repl_destroy(fb->nodes[i].r);
		catalog_destroy(fb->nodes[i].cat);
		config_free(fb->nodes[i].cfg);
	}
	while (fb->head < fb->tail)
		free(fb->q[fb->head++].data);
	free(fb->q);
}

/* Both nodes members of every group, dataplanes up, synced. */
static int
fabric_start(struct fabric *fb, uint32_t batch_bytes)
{
	static const uint32_t ids[NODES] = { 1, 2 };
	struct repl_group_status st;
	int rc;

	fb->now_ms = NOW_MS;
	for (int i = 0; i < NODES; i++)
		if ((rc = node_start(fb, i, batch_bytes)) < 0)
			return rc;
	for (int i = 0; i < NODES; i++) {
		for (uint16_t g = 0; g < repl_groups(fb->nodes[i].r); g++)
			repl_on_members(fb->nodes[i].r, g, ids, NODES, true, false, fb->now_ms);
		repl_dataplane_up(fb->nodes[i].r, fb->now_ms);
	}
	for (int k = 0; k < SETUP_ROUNDS; k++)
		fabric_round(fb);
	for (int i = 0; i < NODES; i++) {
		repl_group_status(fb->nodes[i].r, 0, &st);
		if (st.state != REPL_SYNCED)
			return -EPROTO;
	}
	return 0;
}

/*
 * Node 1 exports entries flows (made beforehand: the dataplane's share),
 * a batch a round, until node 2 imported them all.
 */
static int
path_run(struct fabric *fb, uint32_t entries, double *ns)
{
	struct wire_flow *e = calloc(entries, sizeof(*e));
	struct node *to = &fb->nodes[1];
	uint32_t sent = 0, idle = 0;
	uint64_t s = SEED;
	double t0;

	if (e == NULL)
		return -ENOMEM;
	flows_random(e, entries, &s);
	t0 = bench_now_ns();
	while (to->imported < entries && idle < SETTLE_ROUNDS_MAX) {
		if (sent < entries) {
			uint32_t n = entries - sent < EXPORT_BATCH_ENTRIES ?
				     entries - sent : EXPORT_BATCH_ENTRIES;
			struct wire_ctl_flows fl = { .event = WIRE_FLOW_EVENT_NEW,
						     .entries = e + sent, .count = n };

			repl_on_export(fb->nodes[0].r, &fl, fb->now_ms, real_us());
			sent += n;
		} else {
			idle++;
		}
		fabric_round(fb);
	}
	*ns = (bench_now_ns() - t0) / entries;
	free(e);
	fprintf(stderr, "bench-sync: path: %llu of %u entries imported in %llu batches\n",
		(unsigned long long)to->imported, entries, (unsigned long long)to->imports);
	return to->imported >= entries ? 0 : -ETIMEDOUT;
}

static int
stage_path(const struct opts *o, struct figures *fig)
{
	struct fabric fb;
	int rc;

	memset(&fb, 0, sizeof(fb));
	rc = fabric_start(&fb, o->batch_bytes);
	if (rc == 0)
		rc = path_run(&fb, o->path, &fig->path);
	fabric_stop(&fb);
	return rc;
}

/* --------------------------------------------------------------- main */

static void
usage(FILE *to)
{
	fprintf(to, "usage: bench-sync [--entries-small N] [--entries-large N (>= small, "
		"<= %u)]\n                  [--batch-bytes %u..%u] [--path-entries N] "
		"[--quick] [-h]\n", ENTRIES_MAX, BATCH_BYTES_MIN, BATCH_BYTES_MAX);
}

/* Values given stand; --quick divides the defaults of the others. */
static void
opts_defaults(struct opts *o, bool quick)
{
	uint32_t d = quick ? QUICK_DIVISOR : 1;

	o->small = o->small ? o->small : ENTRIES_SMALL_DEFAULT / d;
	o->large = o->large ? o->large : ENTRIES_LARGE_DEFAULT / d;
	o->path = o->path ? o->path : PATH_ENTRIES_DEFAULT / d;
	o->batch_bytes = o->batch_bytes ? o->batch_bytes : BATCH_BYTES_DEFAULT;
	o->stage_ns = STAGE_NS / d;
}

/* 0, 1 (-h: done), -1 (bad usage). */
static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "entries-small", required_argument, NULL, 's' },
		{ "entries-large", required_argument, NULL, 'l' },
		{ "batch-bytes", required_argument, NULL, 'b' },
		{ "path-entries", required_argument, NULL, 'p' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool quick = false;
	int opt;

	memset(o, 0, sizeof(*o));
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;

		if (opt == 'h')
			return 1;
		if (opt == 'q') {
			quick = true;
			continue;
		}
		if (opt == '?')
			return -1;
		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno != 0 || *end != '\0' || v == 0 || v > ENTRIES_MAX)
			return -1;
		*(opt == 's' ? &o->small : opt == 'l' ? &o->large :
		  opt == 'b' ? &o->batch_bytes : &o->path) = (uint32_t)v;
	}
	opts_defaults(o, quick);
	if (optind != argc || o->small > o->large || o->batch_bytes < BATCH_BYTES_MIN ||
	    o->batch_bytes > BATCH_BYTES_MAX)
		return -1;
	return 0;
}

static void
report(const struct opts *o, const struct figures *f)
{
	printf("{\"entries_small\":%u,\"entries_large\":%u,\"batch_bytes\":%u,"
	       "\"entries_per_cpg_batch\":%zu,\"cpg_bytes_per_entry\":%.1f,"
	       "\"cpg_encode_ns\":%.1f,\"cpg_decode_ns\":%.1f,"
	       "\"export_encode_ns\":%.1f,\"export_decode_ns\":%.1f,"
	       "\"import_encode_ns\":%.1f,\"import_decode_ns\":%.1f,"
	       "\"cache_upsert_1m_ns\":%.1f,\"cache_upsert_8m_ns\":%.1f,"
	       "\"cache_bytes_per_entry\":%.1f,\"cache_grow_max_ms\":%.2f,"
	       "\"digest_walk_ns\":%.2f,\"path_ns\":%.1f}\n",
	       o->small, o->large, o->batch_bytes, f->per_batch, f->cpg_bytes_per_entry,
	       f->cpg_encode, f->cpg_decode, f->export_encode, f->export_decode,
	       f->import_encode, f->import_decode, f->upsert_small, f->upsert_large,
	       f->cache_bytes_per_entry, f->grow_max_ms, f->digest, f->path);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(const struct opts *, struct figures *);
	} stages[] = {
		{ "cpg", stage_cpg }, { "ipc", stage_ctl },
		{ "cache", stage_cache }, { "path", stage_path },
	};
	struct figures fig;
	struct opts o;
	int rc = parse(argc, argv, &o);

	if (rc != 0) {
		usage(rc > 0 ? stdout : stderr);
		return rc > 0 ? 0 : 2;
	}
	memset(&fig, 0, sizeof(fig));
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		fprintf(stderr, "bench-sync: stage %s\n", stages[i].name);
		rc = stages[i].run(&o, &fig);
		if (rc != 0) {
			fprintf(stderr, "bench-sync: stage %s: %s\n", stages[i].name,
				strerror(-rc));
			return 1;
		}
	}
	report(&o, &fig);
	return 0;
}
