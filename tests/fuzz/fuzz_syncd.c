/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: what CPG members send a node's syncd, through its
 * replication engine (syncd/repl.c): deliveries from any sender on any
 * group, membership changes, ticks, the dataplane's acknowledgements.
 *
 * The input is a list of records, each one byte of op then its operands:
 *   op % 4 == 0: deliver; byte sender (1..4: 2 is this node), byte group,
 *                two bytes length (big-endian), that many bytes of message;
 *   op % 4 == 1: membership of group 0: a bitmask byte of nodes 1..4;
 *   op % 4 == 2: tick by a byte of milliseconds (times 16);
 *   op % 4 == 3: acknowledge the imports so far (bit 2 of op: as failed),
 *                or the transport turns busy / free (bit 3).
 * Besides "no crash, no leak, no sanitizer report", it checks that the
 * cache's per-group counts add up to its entries.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "syncd/cache.h"
#include "syncd/catalog.h"
#include "syncd/repl.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

enum { SELF = 2, TOKENS_MAX = 256 };

static const char config_text[] =
	"cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n"
	"node = { id = 2; address = \"198.18.0.12\"; };\n"
	"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
	"vips = (\n"
	"  { name = \"web\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";\n"
	"    encap = \"l2\"; backends = (\n"
	"      { address = \"198.18.0.21\"; mac = \"02:00:00:00:00:21\"; },\n"
	"      { address = \"198.18.0.22\"; mac = \"02:00:00:00:00:22\"; } ); },\n"
	"  { name = \"any6\"; address = \"2001:db8:1::1\"; port = 0; protocol = \"udp\";\n"
	"    encap = \"l2\"; sync_group = \"six\"; health = { type = \"none\"; };\n"
	"    backends = (\n"
	"      { address = \"2001:db8::21\"; mac = \"02:00:00:00:00:21\"; } ); }\n"
	");\n";

static bool busy;
static uint64_t tokens[TOKENS_MAX];
static size_t n_tokens;

static int
fake_send(void *arg, uint16_t group, const void *buf, size_t len)
{
	(void)arg;
	(void)group;
	(void)buf;
	CHECK(len > 0 && len <= (1 << 20));
	return busy ? -EAGAIN : 0;
}

static int
fake_import(void *arg, enum wire_flow_event ev, const struct wire_flow *f, size_t n,
	    uint64_t token)
{
	(void)arg;
	CHECK(ev < WIRE_FLOW_EVENT_MAX && n > 0);
	for (size_t i = 0; i < n; i++)
		CHECK(wire_flow_is_valid(&f[i]));
	if (busy || n_tokens == TOKENS_MAX)
		return -EAGAIN;
	tokens[n_tokens++] = token;
	return 0;
}

static void
check_counts(const struct repl *r)
{
	const struct cache *c = repl_cache(r);
	uint64_t sum = 0;

	for (uint16_t g = 0; g < repl_groups(r); g++) {
		struct cache_group_stats st = cache_group_stats(c, g);

		sum += st.own + st.peers;
	}
	CHECK(sum == cache_count(c));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct repl_ops ops = { .send = fake_send, .import = fake_import };
	static struct config *cfg;
	static struct catalog *cat;
	struct repl_params p = {
		.self = SELF, .max_batch_bytes = 1024, .max_batch_delay_ms = 2,
		.import_queue_entries = 512, .send_queue_bytes = 16384,
	};
	uint32_t now = 5000;
	struct repl *r;
	size_t i = 0;

	if (cfg == NULL) {
		char err[CONFIG_ERROR_MAX];

		cfg = config_load_string(config_text, "fuzz.conf", err, sizeof(err));
		if (cfg == NULL)
			fprintf(stderr, "%s\n", err);
		CHECK(cfg != NULL);
		cat = catalog_create(cfg);
		CHECK(cat != NULL);
	}
	busy = false;
	n_tokens = 0;
	r = repl_create(cat, &p, &ops, NULL);
	CHECK(r != NULL);
	repl_dataplane_up(r, now);
	while (i < size) {
		uint8_t op = data[i++];

		switch (op % 4) {
		case 0: {
			uint32_t sender;
			uint16_t group;
			size_t len;

			if (size - i < 4)
				goto out;
			sender = 1u + data[i] % 4;
			group = data[i + 1] % 3;
			len = (size_t)data[i + 2] << 8 | data[i + 3];
			i += 4;
			if (len > size - i)
				len = size - i;
			repl_on_deliver(r, group, sender, data + i, len, now, 0);
			i += len;
			break;
		}
		case 1: {
			uint32_t ids[4];
			size_t n = 0;
			uint8_t set = i < size ? data[i++] : 0;

			for (uint32_t b = 0; b < 4; b++)
				if (set & (1u << b))
					ids[n++] = b + 1;
			repl_on_members(r, 0, ids, n, (set & (1u << (SELF - 1))) != 0,
					(set & 0x80) != 0, now);
			break;
		}
		case 2:
			now += 16u * (i < size ? data[i++] : 1);
			repl_tick(r, now, 0);
			break;
		default:
			if (op & 8) {
				busy = !busy;
				break;
			}
			for (size_t t = 0; t < n_tokens; t++)
				repl_import_done(r, tokens[t], !(op & 4), 0);
			n_tokens = 0;
			break;
		}
		check_counts(r);
	}
out:
	check_counts(r);
	repl_destroy(r);
	return 0;
}
