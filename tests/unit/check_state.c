/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check suite of dataplane/state.c, without EAL: destination ids across
 * reloads, what a reload carries over, Maglev tables shared by refcount,
 * allocation failures, the bound on destination ids, and the next hops of
 * tunnels. Configs go through the real parser (config_load_string).
 */
#include "dataplane/state.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "addr_parse.h"

#define CLUSTER "cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n"
#define NODE "node = { id = 1; address = \"198.18.0.10\"; address6 = \"2001:db8::10\"; };\n"
#define PORTS "ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
#define HEAD CLUSTER NODE PORTS

/* A VIP group, left open in its backend list; table_size fits 10 backends. */
#define VIP(name, addr, encap) \
	"  { name = \"" name "\"; address = \"" addr "\"; port = 80; protocol = \"tcp\";" \
	" encap = \"" encap "\"; table_size = 101;\n    backends = ( "
#define VIP_END " ); }"
#define BACKEND(addr) "{ address = \"" addr "\"; }"
#define WEIGHTED(addr, w) "{ address = \"" addr "\"; weight = " #w "; }"
#define L2_BACKEND(addr, mac) "{ address = \"" addr "\"; mac = \"" mac "\"; }"

#define CONF1(a) HEAD "vips = (\n" a "\n);\n"
#define CONF2(a, b) HEAD "vips = (\n" a ",\n" b "\n);\n"
#define CONF3(a, b, c) HEAD "vips = (\n" a ",\n" b ",\n" c "\n);\n"

#define WEB_123 VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.1") ", " \
	BACKEND("198.18.2.2") ", " BACKEND("198.18.2.3") VIP_END
#define DNS_12 VIP("dns", "2001:db8:1::1", "ipip") BACKEND("2001:db8:2::1") ", " \
	BACKEND("2001:db8:2::2") VIP_END
#define APP_5 VIP("app", "198.18.1.2", "gre") BACKEND("198.18.2.5") VIP_END

static const uint8_t port_mac[6] = { 0x02, 0xaa, 0, 0, 0, 0x01 };
static const uint8_t zero_mac[6];

/*
 * Allocation failures on demand: the suite links with --wrap=malloc and
 * --wrap=calloc, so the allocations of the code under test come here. With
 * alloc_budget at n >= 0, n more succeed, the next one fails, the rest
 * succeed again (alloc_budget is then -1).
 */
static int alloc_budget = -1;

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);

static bool
alloc_fails(void)
{
	return alloc_budget >= 0 && alloc_budget-- == 0;
}

void *
__wrap_malloc(size_t size)
{
	return alloc_fails() ? NULL : __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	return alloc_fails() ? NULL : __real_calloc(n, size);
}

/* A neighbour table behind state_port.lookup_mac: what it knows, what it
 * was asked. */
struct neighbours {
	unsigned n_known, n_asked;
	struct {
		uint8_t family;
		uint8_t addr[16];
		uint8_t mac[6];
	} known[4], asked[16];
};

static const uint8_t *
neighbours_lookup(void *arg, uint8_t family, const uint8_t addr[16])
{
	struct neighbours *nb = arg;

	if (nb->n_asked < 16) {
		nb->asked[nb->n_asked].family = family;
		memcpy(nb->asked[nb->n_asked].addr, addr, 16);
	}
	nb->n_asked++;
	for (unsigned i = 0; i < nb->n_known; i++)
		if (nb->known[i].family == family && memcmp(nb->known[i].addr, addr, 16) == 0)
			return nb->known[i].mac;
	return NULL;
}

/* nb learns (or relearns) addr at 02:00:00:00:00:last. */
static void
neighbours_learn(struct neighbours *nb, const char *addr, uint8_t last)
{
	uint8_t a[16], family = addr_parse(addr, a);
	unsigned i = 0;

	while (i < nb->n_known && !(nb->known[i].family == family &&
				    memcmp(nb->known[i].addr, a, 16) == 0))
		i++;
	ck_assert_uint_lt(i, 4);
	nb->known[i].family = family;
	memcpy(nb->known[i].addr, a, 16);
	memcpy(nb->known[i].mac, (const uint8_t[6]){ 0x02, 0, 0, 0, 0, last }, 6);
	nb->n_known = i == nb->n_known ? i + 1 : nb->n_known;
}

static bool
neighbours_asked(const struct neighbours *nb, const char *addr)
{
	uint8_t a[16], family = addr_parse(addr, a);

	for (unsigned i = 0; i < nb->n_asked && i < 16; i++)
		if (nb->asked[i].family == family && memcmp(nb->asked[i].addr, a, 16) == 0)
			return true;
	return false;
}

/* A port of MAC port_mac, no gateway, resolving through nb (NULL: none). */
static struct state_port
port_new(struct neighbours *nb)
{
	struct state_port port = { .mtu = 1500 };

	memcpy(port.mac, port_mac, 6);
	if (nb != NULL) {
		port.lookup_mac = neighbours_lookup;
		port.arg = nb;
	}
	return port;
}

static void
port_gateway(struct state_port *port, const char *addr, const uint8_t *static_mac)
{
	uint8_t a[16];
	int f = addr_parse(addr, a) == FLOW_FAMILY_IPV6;

	port->has_gateway[f] = true;
	memcpy(port->gateway[f], a, 16);
	port->has_gateway_mac[f] = static_mac != NULL;
	if (static_mac != NULL)
		memcpy(port->gateway_mac[f], static_mac, 6);
}

static struct state_ctx *
ctx_new(uint32_t max_dests, struct neighbours *nb)
{
	struct state_port port = port_new(nb);
	struct state_ctx *ctx = state_ctx_create(max_dests, &port);

	ck_assert_ptr_nonnull(ctx);
	return ctx;
}

static struct config *
config_of(const char *text)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg = config_load_string(text, "t.conf", err, sizeof(err));

	ck_assert_msg(cfg != NULL, "config refused: %s", err);
	return cfg;
}

/* The state of text built on prev (kept). */
static struct dp_state *
build(struct state_ctx *ctx, const char *text, const struct dp_state *prev)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg = config_of(text);
	struct dp_state *s = state_build(ctx, cfg, prev, err, sizeof(err));

	ck_assert_msg(s != NULL, "state refused: %s", err);
	config_free(cfg);
	return s;
}

/* What text builds on *s, in its place. */
static void
reload(struct state_ctx *ctx, struct dp_state **s, const char *text)
{
	struct dp_state *next = build(ctx, text, *s);

	state_free(*s);
	*s = next;
}

/* The error state_build() gives text on prev; asserts it gives no state. */
static void
build_refused(struct state_ctx *ctx, const char *text, const struct dp_state *prev,
	      char *err, size_t errlen)
{
	struct config *cfg = config_of(text);

	err[0] = '\0';
	ck_assert_ptr_null(state_build(ctx, cfg, prev, err, errlen));
	ck_assert_str_ne(err, "");
	config_free(cfg);
}

static uint32_t
vip_of(const struct dp_state *s, const char *name)
{
	int vip = state_vip_find(s, name);

	ck_assert_msg(vip >= 0, "no vip '%s'", name);
	return (uint32_t)vip;
}

/* The destination id of (vip, addr) in s, or -1. */
static int64_t
dest_of(const struct dp_state *s, const char *vip, const char *addr)
{
	uint8_t a[16], family = addr_parse(addr, a);

	return state_dest_find(s, vip_of(s, vip), family, a);
}

static const struct dp_dest *
dest(const struct dp_state *s, const char *vip, const char *addr)
{
	int64_t id = dest_of(s, vip, addr);

	ck_assert_msg(id >= 0, "no backend %s in vip '%s'", addr, vip);
	return &s->dests[id];
}

/* *s with one backend's status and weight set, in its place. */
static void
change(struct state_ctx *ctx, struct dp_state **s, const char *vip, const char *addr,
       uint8_t status, uint32_t weight)
{
	int rc = 1;
	struct dp_state *next = state_with_backend(ctx, *s, vip_of(*s, vip),
						   (uint32_t)dest_of(*s, vip, addr),
						   status, weight, &rc);

	ck_assert_msg(next != NULL, "state_with_backend: %d", rc);
	ck_assert_int_eq(rc, 0);
	state_free(*s);
	*s = next;
}

/* *s with a VIP's ownership set, in its place. */
static void
own(struct state_ctx *ctx, struct dp_state **s, const char *vip, bool owned)
{
	int rc = 1;
	struct dp_state *next = state_with_owned(ctx, *s, vip_of(*s, vip), owned, &rc);

	ck_assert_msg(next != NULL, "state_with_owned: %d", rc);
	ck_assert_int_eq(rc, 0);
	state_free(*s);
	*s = next;
}

/* The slots of VIP vip's Maglev table that lead to destination id. */
static uint32_t
maglev_slots(const struct dp_state *s, uint32_t vip, int64_t id)
{
	const struct dp_maglev *m = s->vips[vip].maglev;
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->size; i++)
		n += m->slots[i] != MAGLEV_SLOT_NONE && m->rank_dest[m->slots[i]] == id;
	return n;
}

static uint32_t
refs(const struct dp_state *s, const char *vip)
{
	return s->vips[vip_of(s, vip)].maglev->refs;
}

/* ---- destination ids ---- */

START_TEST(test_ids_kept_across_reloads)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_123, DNS_12), NULL);
	uint32_t web;

	/* handed out in config order */
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.1"), 0);
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.2"), 1);
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.3"), 2);
	ck_assert_int_eq(dest_of(s, "dns", "2001:db8:2::1"), 3);
	ck_assert_int_eq(dest_of(s, "dns", "2001:db8:2::2"), 4);
	ck_assert_uint_eq(s->n_dests, 5);

	/* VIPs and backends reordered; web loses .2 and gains .4, dns loses
	 * ::1; a new VIP */
	reload(ctx, &s, CONF3(
		VIP("dns", "2001:db8:1::1", "ipip") BACKEND("2001:db8:2::2") VIP_END,
		VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.3") ", "
		BACKEND("198.18.2.1") ", " BACKEND("198.18.2.4") VIP_END,
		APP_5));
	web = vip_of(s, "web");
	ck_assert_uint_eq(web, 1);
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.1"), 0);
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.3"), 2);
	ck_assert_int_eq(dest_of(s, "dns", "2001:db8:2::2"), 4);
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.4"), 5);
	ck_assert_int_eq(dest_of(s, "app", "198.18.2.5"), 6);
	ck_assert_uint_eq(s->n_dests, 7);
	/* a VIP lists its ids in config order; a destination names its VIP's
	 * new index */
	ck_assert_uint_eq(s->vips[web].n_dests, 3);
	ck_assert_uint_eq(s->vips[web].dests[0], 2);
	ck_assert_uint_eq(s->vips[web].dests[1], 0);
	ck_assert_uint_eq(s->vips[web].dests[2], 5);
	ck_assert_uint_eq(s->dests[0].vip, web);
	ck_assert_uint_eq(s->dests[4].vip, vip_of(s, "dns"));
	/* removed: gone, out of their VIP and its Maglev table */
	ck_assert_uint_eq(s->dests[1].status, DEST_GONE);
	ck_assert_uint_eq(s->dests[3].status, DEST_GONE);
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.2"), -1);
	ck_assert_int_eq(dest_of(s, "dns", "2001:db8:2::1"), -1);
	ck_assert_uint_eq(maglev_slots(s, web, 1), 0);
	ck_assert_uint_eq(maglev_slots(s, vip_of(s, "dns"), 3), 0);
	ck_assert_uint_eq(s->dests[0].status, DEST_UP);
	ck_assert_uint_gt(maglev_slots(s, web, 5), 0);

	/* the first config again: the removed get their ids back, the added go */
	reload(ctx, &s, CONF2(WEB_123, DNS_12));
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.2"), 1);
	ck_assert_int_eq(dest_of(s, "dns", "2001:db8:2::1"), 3);
	ck_assert_uint_eq(s->dests[1].status, DEST_UP);
	ck_assert_uint_eq(s->dests[3].status, DEST_UP);
	ck_assert_uint_eq(s->dests[5].status, DEST_GONE);
	ck_assert_uint_eq(s->dests[6].status, DEST_GONE);
	ck_assert_uint_eq(s->n_dests, 7);
	ck_assert_uint_eq(s->dests[0].vip, vip_of(s, "web"));
	ck_assert_uint_gt(maglev_slots(s, vip_of(s, "web"), 1), 0);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_ids_keyed_by_vip_name)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_123,
		VIP("app", "198.18.1.2", "gre") BACKEND("198.18.2.1") VIP_END), NULL);

	/* one address in two VIPs: two destinations */
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.1"), 0);
	ck_assert_int_eq(dest_of(s, "app", "198.18.2.1"), 3);

	/* web renamed, same address and backends: new ids, the old ones gone */
	reload(ctx, &s, CONF2(
		VIP("www", "198.18.1.1", "gre") BACKEND("198.18.2.1") ", "
		BACKEND("198.18.2.2") ", " BACKEND("198.18.2.3") VIP_END,
		VIP("app", "198.18.1.2", "gre") BACKEND("198.18.2.1") VIP_END));
	ck_assert_int_eq(dest_of(s, "www", "198.18.2.1"), 4);
	ck_assert_int_eq(dest_of(s, "www", "198.18.2.3"), 6);
	ck_assert_int_eq(dest_of(s, "app", "198.18.2.1"), 3);
	for (uint32_t id = 0; id < 3; id++)
		ck_assert_uint_eq(s->dests[id].status, DEST_GONE);
	ck_assert_uint_eq(s->n_dests, 7);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_generations)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct config *cfg = config_of(CONF1(
		VIP("one", "198.18.1.1", "gre") BACKEND("198.18.2.1") VIP_END));
	char err[CONFIG_ERROR_MAX] = "";
	struct dp_state *s = build(ctx, CONF2(WEB_123, DNS_12), NULL);
	struct dp_state *copy = NULL;
	uint16_t vip_gen = s->vip_gen;
	int rc = 1;

	ck_assert_uint_eq(s->generation, 1);
	ck_assert_uint_ne(vip_gen, 0);
	/* a copy is a new generation over the same VIP set */
	copy = state_with_owned(ctx, s, 0, true, &rc);
	ck_assert_ptr_nonnull(copy);
	ck_assert_uint_eq(copy->generation, 2);
	ck_assert_uint_eq(copy->vip_gen, vip_gen);
	ck_assert(memcmp(&copy->seed, &s->seed, sizeof(s->seed)) == 0);
	state_free(copy);
	/* every build a new VIP generation, never 0, past the wrap too */
	for (uint32_t i = 0; i < 70000; i++) {
		struct dp_state *next = state_build(ctx, cfg, s, err, sizeof(err));

		ck_assert_msg(next != NULL, "build %u: %s", i, err);
		ck_assert_uint_eq(next->generation, s->generation + (i == 0 ? 2 : 1));
		ck_assert_uint_ne(next->vip_gen, 0);
		ck_assert_uint_ne(next->vip_gen, s->vip_gen);
		state_free(s);
		s = next;
	}
	state_free(s);
	config_free(cfg);
	state_ctx_destroy(ctx);
}
END_TEST

/* ---- what a reload carries over ---- */

#define WEB_WEIGHTED(w1, w2, w3) VIP("web", "198.18.1.1", "gre") \
	WEIGHTED("198.18.2.1", w1) ", " WEIGHTED("198.18.2.2", w2) ", " \
	WEIGHTED("198.18.2.3", w3) VIP_END

static void
assert_weight(const struct dp_state *s, const char *addr, uint8_t status,
	      uint32_t weight, uint32_t config_weight)
{
	const struct dp_dest *d = dest(s, "web", addr);

	ck_assert_msg(d->status == status, "%s: status %s, expected %s", addr,
		      dest_status_names[d->status], dest_status_names[status]);
	ck_assert_uint_eq(d->weight, weight);
	ck_assert_uint_eq(d->config_weight, config_weight);
}

START_TEST(test_reload_resets_weights_to_config)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF1(WEB_WEIGHTED(2, 3, 0)), NULL);
	uint32_t web = vip_of(s, "web");

	assert_weight(s, "198.18.2.1", DEST_UP, 2, 2);
	assert_weight(s, "198.18.2.2", DEST_UP, 3, 3);
	assert_weight(s, "198.18.2.3", DEST_DRAINING, 0, 0);
	ck_assert_uint_eq(maglev_slots(s, web, 2), 0);

	/* set at runtime (maglbctl set-weight, drain) */
	change(ctx, &s, "web", "198.18.2.1", DEST_UP, 7);
	change(ctx, &s, "web", "198.18.2.2", DEST_DRAINING, 0);
	change(ctx, &s, "web", "198.18.2.3", DEST_UP, 5);
	assert_weight(s, "198.18.2.1", DEST_UP, 7, 2);
	assert_weight(s, "198.18.2.2", DEST_DRAINING, 0, 3);
	assert_weight(s, "198.18.2.3", DEST_UP, 5, 0);
	ck_assert_uint_eq(maglev_slots(s, web, 1), 0);
	ck_assert_uint_gt(maglev_slots(s, web, 2), 0);

	/* the same config: weights and drains set at runtime give way to it */
	reload(ctx, &s, CONF1(WEB_WEIGHTED(2, 3, 0)));
	assert_weight(s, "198.18.2.1", DEST_UP, 2, 2);
	assert_weight(s, "198.18.2.2", DEST_UP, 3, 3);
	assert_weight(s, "198.18.2.3", DEST_DRAINING, 0, 0);
	ck_assert_uint_gt(maglev_slots(s, web, 1), 0);
	ck_assert_uint_eq(maglev_slots(s, web, 2), 0);

	/* new config weights take effect; weight 0 drains */
	reload(ctx, &s, CONF1(WEB_WEIGHTED(4, 0, 1)));
	assert_weight(s, "198.18.2.1", DEST_UP, 4, 4);
	assert_weight(s, "198.18.2.2", DEST_DRAINING, 0, 0);
	assert_weight(s, "198.18.2.3", DEST_UP, 1, 1);
	ck_assert_uint_eq(maglev_slots(s, web, 1), 0);
	ck_assert_uint_gt(maglev_slots(s, web, 0), maglev_slots(s, web, 2));
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_reload_keeps_down)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF1(WEB_WEIGHTED(1, 1, 1)), NULL);
	uint32_t web = vip_of(s, "web");

	change(ctx, &s, "web", "198.18.2.2", DEST_DOWN, 1);
	ck_assert_uint_eq(maglev_slots(s, web, 1), 0);

	/* health is not config: down survives the reload, out of Maglev */
	reload(ctx, &s, CONF1(WEB_WEIGHTED(1, 1, 1)));
	assert_weight(s, "198.18.2.2", DEST_DOWN, 1, 1);
	assert_weight(s, "198.18.2.1", DEST_UP, 1, 1);
	ck_assert_uint_eq(maglev_slots(s, web, 1), 0);

	/* a new config weight is taken, the backend stays down */
	reload(ctx, &s, CONF1(WEB_WEIGHTED(1, 5, 1)));
	assert_weight(s, "198.18.2.2", DEST_DOWN, 5, 5);
	ck_assert_uint_eq(maglev_slots(s, web, 1), 0);
	reload(ctx, &s, CONF1(WEB_WEIGHTED(1, 0, 1)));
	assert_weight(s, "198.18.2.2", DEST_DOWN, 0, 0);

	/* removed, then added again: gone in between, so it comes back up */
	reload(ctx, &s, CONF1(VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.1") ", "
			      BACKEND("198.18.2.3") VIP_END));
	ck_assert_uint_eq(s->dests[1].status, DEST_GONE);
	reload(ctx, &s, CONF1(WEB_WEIGHTED(1, 1, 1)));
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.2"), 1);
	assert_weight(s, "198.18.2.2", DEST_UP, 1, 1);
	ck_assert_uint_gt(maglev_slots(s, web, 1), 0);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_reload_keeps_ownership)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_123, DNS_12), NULL);

	ck_assert(!s->vips[0].owned && !s->vips[1].owned);
	own(ctx, &s, "web", true);

	/* by name: reordered, and even at a new address, web stays owned;
	 * others are not, a new VIP is not */
	reload(ctx, &s, CONF3(DNS_12, APP_5,
		VIP("web", "198.18.1.9", "gre") BACKEND("198.18.2.1") VIP_END));
	ck_assert(s->vips[vip_of(s, "web")].owned);
	ck_assert(!s->vips[vip_of(s, "dns")].owned);
	ck_assert(!s->vips[vip_of(s, "app")].owned);

	own(ctx, &s, "web", false);
	own(ctx, &s, "dns", true);
	reload(ctx, &s, CONF2(WEB_123, DNS_12));
	ck_assert(!s->vips[vip_of(s, "web")].owned);
	ck_assert(s->vips[vip_of(s, "dns")].owned);

	/* a VIP a reload removed comes back unowned */
	reload(ctx, &s, CONF1(WEB_123));
	reload(ctx, &s, CONF2(WEB_123, DNS_12));
	ck_assert(!s->vips[vip_of(s, "dns")].owned);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

/* web with sync_after_packets = n, backends 198.18.2.1 and .2 */
#define WEB_SYNC(n) "  { name = \"web\"; address = \"198.18.1.1\"; port = 80;" \
	" protocol = \"tcp\"; encap = \"gre\"; table_size = 101;" \
	" sync_after_packets = " #n ";\n    backends = ( " BACKEND("198.18.2.1") ", " \
	BACKEND("198.18.2.2") VIP_END

/*
 * A VIP's sync_after_packets reaches its state (the workers read it there),
 * stays in the copies a backend change or an ownership change makes, follows
 * a reload, and is capped at what a flow entry counts (STATE_SYNC_AFTER_MAX).
 */
START_TEST(test_sync_after_packets)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_SYNC(3), DNS_12), NULL);

	ck_assert_uint_eq(s->vips[vip_of(s, "web")].sync_after_packets, 3);
	ck_assert_uint_eq(s->vips[vip_of(s, "dns")].sync_after_packets, 0);   /* default */
	change(ctx, &s, "web", "198.18.2.2", DEST_DOWN, 1);
	own(ctx, &s, "dns", true);
	ck_assert_uint_eq(s->vips[vip_of(s, "web")].sync_after_packets, 3);
	reload(ctx, &s, CONF2(DNS_12, WEB_SYNC(10)));
	ck_assert_uint_eq(s->vips[vip_of(s, "web")].sync_after_packets, 10);
	reload(ctx, &s, CONF1(WEB_SYNC(65535)));
	ck_assert_uint_eq(s->vips[0].sync_after_packets, 65535);
	reload(ctx, &s, CONF1(WEB_SYNC(100000)));
	ck_assert_uint_eq(s->vips[0].sync_after_packets, STATE_SYNC_AFTER_MAX);
	ck_assert_uint_eq(STATE_SYNC_AFTER_MAX, 65535);
	reload(ctx, &s, CONF1(WEB_123));
	ck_assert_uint_eq(s->vips[0].sync_after_packets, 0);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

/* ---- Maglev tables, refcounted ---- */

START_TEST(test_maglev_shared_by_copies)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s1 = build(ctx, CONF2(WEB_123, DNS_12), NULL), *s2, *s3;
	uint32_t web = vip_of(s1, "web"), dns = vip_of(s1, "dns");
	int rc = 1;

	ck_assert_uint_eq(refs(s1, "web"), 1);
	ck_assert_uint_eq(refs(s1, "dns"), 1);

	/* a backend change rebuilds its VIP's table only */
	s2 = state_with_backend(ctx, s1, web, 0, DEST_UP, 5, &rc);
	ck_assert_ptr_nonnull(s2);
	ck_assert_ptr_ne(s2->vips[web].maglev, s1->vips[web].maglev);
	ck_assert_uint_eq(refs(s1, "web"), 1);
	ck_assert_uint_eq(refs(s2, "web"), 1);
	ck_assert_uint_gt(maglev_slots(s2, web, 0), maglev_slots(s1, web, 0));
	ck_assert_ptr_eq(s2->vips[dns].maglev, s1->vips[dns].maglev);
	ck_assert_uint_eq(refs(s1, "dns"), 2);

	/* an ownership change rebuilds none */
	s3 = state_with_owned(ctx, s2, dns, true, &rc);
	ck_assert_ptr_nonnull(s3);
	ck_assert_ptr_eq(s3->vips[web].maglev, s2->vips[web].maglev);
	ck_assert_ptr_eq(s3->vips[dns].maglev, s1->vips[dns].maglev);
	ck_assert_uint_eq(refs(s3, "web"), 2);
	ck_assert_uint_eq(refs(s3, "dns"), 3);
	ck_assert_ptr_ne(s3->vips, s2->vips);
	ck_assert_ptr_ne(s3->vips[web].dests, s2->vips[web].dests);
	ck_assert_ptr_ne(s3->dests, s2->dests);

	/* each free drops one reference; the tables left stay readable */
	state_free(s1);
	ck_assert_uint_eq(refs(s2, "dns"), 2);
	ck_assert_uint_eq(maglev_slots(s2, dns, 3) + maglev_slots(s2, dns, 4), 101);
	state_free(s3);
	ck_assert_uint_eq(refs(s2, "web"), 1);
	ck_assert_uint_eq(refs(s2, "dns"), 1);
	ck_assert_uint_eq(maglev_slots(s2, web, 0) + maglev_slots(s2, web, 1) +
			  maglev_slots(s2, web, 2), 101);
	state_free(s2);        /* the last: LeakSanitizer sees every table freed */
	state_free(NULL);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_maglev_rebuilt_by_reload)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s1 = build(ctx, CONF2(WEB_123, DNS_12), NULL), *s2;
	const struct dp_maglev *m1, *m2;
	uint32_t web1 = vip_of(s1, "web"), web2;

	/* web's backends reordered, dns unchanged: every table is new, none
	 * of the previous state's gains a reference */
	s2 = build(ctx, CONF2(DNS_12, VIP("web", "198.18.1.1", "gre")
		   BACKEND("198.18.2.3") ", " BACKEND("198.18.2.1") ", "
		   BACKEND("198.18.2.2") VIP_END), s1);
	web2 = vip_of(s2, "web");
	m1 = s1->vips[web1].maglev;
	m2 = s2->vips[web2].maglev;
	ck_assert_ptr_ne(m1, m2);
	ck_assert_ptr_ne(s1->vips[vip_of(s1, "dns")].maglev, s2->vips[vip_of(s2, "dns")].maglev);
	ck_assert_uint_eq(refs(s1, "web"), 1);
	ck_assert_uint_eq(refs(s1, "dns"), 1);
	ck_assert_uint_eq(refs(s2, "web"), 1);
	ck_assert_uint_eq(refs(s2, "dns"), 1);
	/* with the same destination in every slot: ids and Maglev ignore order */
	ck_assert_uint_eq(m1->size, m2->size);
	for (uint32_t i = 0; i < m1->size; i++)
		ck_assert_uint_eq(m1->rank_dest[m1->slots[i]], m2->rank_dest[m2->slots[i]]);

	/* the previous state goes first: the new one does not lean on it */
	state_free(s1);
	ck_assert_uint_eq(maglev_slots(s2, web2, 0) + maglev_slots(s2, web2, 1) +
			  maglev_slots(s2, web2, 2), 101);
	state_free(s2);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_maglev_empty_without_up_backends)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF1(WEB_WEIGHTED(0, 0, 1)), NULL);
	uint32_t web = vip_of(s, "web");
	struct flow_key k = { .vip = { 198, 18, 1, 1 }, .client = { 198, 19, 0, 1 },
			      .vip_port = 80, .client_port = 40000, .proto = IPPROTO_TCP,
			      .family = FLOW_FAMILY_IPV4 };

	ck_assert_int_eq(state_maglev_pick(s, web, &k), 2);
	ck_assert_uint_eq(maglev_slots(s, web, 2), 101);
	/* the last one up goes down: no slot leads anywhere, no pick */
	change(ctx, &s, "web", "198.18.2.3", DEST_DOWN, 1);
	for (uint32_t i = 0; i < s->vips[web].maglev->size; i++)
		ck_assert_uint_eq(s->vips[web].maglev->slots[i], MAGLEV_SLOT_NONE);
	ck_assert_int_eq(state_maglev_pick(s, web, &k), -1);
	/* a drained one takes a weight again */
	change(ctx, &s, "web", "198.18.2.1", DEST_UP, 2);
	ck_assert_int_eq(state_maglev_pick(s, web, &k), 0);
	ck_assert_uint_eq(maglev_slots(s, web, 0), 101);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

/* ---- Maglev digests ---- */

static uint64_t
vip_digest(const struct dp_state *s, const char *vip)
{
	return s->vips[vip_of(s, vip)].maglev->digest;
}

/* Two nodes, one config (in another VIP and backend order, with other
 * destination ids): equal digests; a backend down on one of them parts
 * them, and the same backend down on the other, or back up, joins them. */
START_TEST(test_digest_equal_across_nodes)
{
	struct state_ctx *a_ctx = ctx_new(64, NULL), *b_ctx = ctx_new(64, NULL);
	struct dp_state *a = build(a_ctx, CONF2(WEB_123, DNS_12), NULL);
	struct dp_state *b = build(b_ctx, CONF1(APP_5), NULL);

	reload(b_ctx, &b, CONF2(DNS_12, VIP("web", "198.18.1.1", "gre")
		BACKEND("198.18.2.3") ", " BACKEND("198.18.2.1") ", "
		BACKEND("198.18.2.2") VIP_END));
	ck_assert_int_ne(dest_of(a, "web", "198.18.2.1"), dest_of(b, "web", "198.18.2.1"));
	ck_assert_uint_eq(vip_digest(a, "web"), vip_digest(b, "web"));
	ck_assert_uint_eq(vip_digest(a, "dns"), vip_digest(b, "dns"));
	ck_assert_uint_ne(vip_digest(a, "web"), vip_digest(a, "dns"));
	ck_assert_uint_eq(a->maglev_digest, b->maglev_digest);

	change(b_ctx, &b, "web", "198.18.2.2", DEST_DOWN, 1);
	ck_assert_uint_ne(vip_digest(a, "web"), vip_digest(b, "web"));
	ck_assert_uint_eq(vip_digest(a, "dns"), vip_digest(b, "dns"));
	ck_assert_uint_ne(a->maglev_digest, b->maglev_digest);
	change(a_ctx, &a, "web", "198.18.2.2", DEST_DOWN, 1);
	ck_assert_uint_eq(a->maglev_digest, b->maglev_digest);
	change(b_ctx, &b, "web", "198.18.2.2", DEST_UP, 1);
	ck_assert_uint_ne(a->maglev_digest, b->maglev_digest);
	change(a_ctx, &a, "web", "198.18.2.2", DEST_UP, 1);
	ck_assert_uint_eq(vip_digest(a, "web"), vip_digest(b, "web"));
	ck_assert_uint_eq(a->maglev_digest, b->maglev_digest);

	/* a reload keeps what is down, and the digest with it */
	change(a_ctx, &a, "dns", "2001:db8:2::1", DEST_DOWN, 1);
	change(b_ctx, &b, "dns", "2001:db8:2::1", DEST_DOWN, 1);
	reload(a_ctx, &a, CONF2(WEB_123, DNS_12));
	ck_assert_uint_eq(a->maglev_digest, b->maglev_digest);
	state_free(a);
	state_free(b);
	state_ctx_destroy(a_ctx);
	state_ctx_destroy(b_ctx);
}
END_TEST

/* A weight or a drain changes a digest exactly when it changes the table. */
START_TEST(test_digest_follows_the_table)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_123, APP_5), NULL);
	uint64_t web = vip_digest(s, "web"), app = vip_digest(s, "app");
	uint64_t node = s->maglev_digest;

	/* one backend fills every slot whatever its weight */
	change(ctx, &s, "app", "198.18.2.5", DEST_UP, 7);
	ck_assert_uint_eq(vip_digest(s, "app"), app);
	ck_assert_uint_eq(s->maglev_digest, node);
	/* ownership builds no table */
	own(ctx, &s, "web", true);
	ck_assert_uint_eq(s->maglev_digest, node);

	change(ctx, &s, "web", "198.18.2.1", DEST_UP, 3);
	ck_assert_uint_ne(vip_digest(s, "web"), web);
	ck_assert_uint_ne(s->maglev_digest, node);
	change(ctx, &s, "web", "198.18.2.1", DEST_DRAINING, 0);
	ck_assert_uint_ne(vip_digest(s, "web"), web);
	change(ctx, &s, "web", "198.18.2.1", DEST_UP, 1);
	ck_assert_uint_eq(vip_digest(s, "web"), web);
	ck_assert_uint_eq(s->maglev_digest, node);

	/* no backend up: a table of empty slots has a digest of its own */
	change(ctx, &s, "app", "198.18.2.5", DEST_DOWN, 1);
	ck_assert_uint_ne(vip_digest(s, "app"), app);
	ck_assert_uint_ne(s->maglev_digest, node);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

/* A drained backend takes no slot: the ranks shift, the table and its
 * digest, of addresses, do not. */
START_TEST(test_digest_of_addresses)
{
	struct state_ctx *ctx = ctx_new(64, NULL), *ctx2 = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF1(WEB_123), NULL);
	struct dp_state *s2 = build(ctx2, CONF1(VIP("web", "198.18.1.1", "gre")
		WEIGHTED("198.18.2.0", 0) ", " BACKEND("198.18.2.1") ", "
		BACKEND("198.18.2.2") ", " BACKEND("198.18.2.3") VIP_END), NULL);

	ck_assert_uint_ne(s->vips[0].maglev->rank_dest[s->vips[0].maglev->slots[0]],
			  s2->vips[0].maglev->rank_dest[s2->vips[0].maglev->slots[0]]);
	ck_assert_uint_eq(vip_digest(s, "web"), vip_digest(s2, "web"));
	ck_assert_uint_eq(s->maglev_digest, s2->maglev_digest);
	state_free(s);
	state_free(s2);
	state_ctx_destroy(ctx);
	state_ctx_destroy(ctx2);
}
END_TEST

START_TEST(test_with_backend_refuses)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_123, APP_5), NULL);
	uint32_t web = vip_of(s, "web");
	uint64_t generation;
	int rc;

	reload(ctx, &s, CONF2(VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.1") ", "
			      BACKEND("198.18.2.3") VIP_END, APP_5));
	generation = s->generation;
	ck_assert_uint_eq(s->dests[1].status, DEST_GONE);
	rc = 0;     /* another VIP's destination */
	ck_assert_ptr_null(state_with_backend(ctx, s, web, 3, DEST_DOWN, 1, &rc));
	ck_assert_int_eq(rc, -ENOENT);
	rc = 0;     /* a gone one */
	ck_assert_ptr_null(state_with_backend(ctx, s, web, 1, DEST_UP, 1, &rc));
	ck_assert_int_eq(rc, -ENOENT);
	rc = 0;
	ck_assert_ptr_null(state_with_backend(ctx, s, web, s->n_dests, DEST_UP, 1, &rc));
	ck_assert_int_eq(rc, -ENOENT);
	rc = 0;
	ck_assert_ptr_null(state_with_backend(ctx, s, s->n_vips, 0, DEST_UP, 1, &rc));
	ck_assert_int_eq(rc, -ENOENT);
	rc = 0;
	ck_assert_ptr_null(state_with_owned(ctx, s, s->n_vips, true, &rc));
	ck_assert_int_eq(rc, -ENOENT);
	/* s is as it was */
	ck_assert_uint_eq(s->dests[0].status, DEST_UP);
	ck_assert_uint_eq(s->dests[3].status, DEST_UP);
	ck_assert_uint_eq(refs(s, "web"), 1);
	ck_assert_uint_eq(refs(s, "app"), 1);
	ck_assert_uint_eq(s->generation, generation);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

/* ---- allocation failures ---- */

/* Whether the allocation that alloc_budget was set to fail did fail. */
static bool
alloc_failed(void)
{
	bool failed = alloc_budget < 0;

	alloc_budget = -1;
	return failed;
}

START_TEST(test_build_out_of_memory)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *prev = build(ctx, CONF1(WEB_123), NULL);
	struct config *cfg = config_of(CONF2(WEB_123, DNS_12));
	char err[CONFIG_ERROR_MAX];
	struct dp_state *s = NULL;
	int n;

	/* the n-th allocation of the build fails, for every n it makes: no
	 * state, an ENOMEM error, prev intact, nothing leaked */
	for (n = 0; s == NULL; n++) {
		err[0] = '\0';
		alloc_budget = n;
		s = state_build(ctx, cfg, prev, err, sizeof(err));
		if (!alloc_failed()) {
			ck_assert_msg(s != NULL, "no allocation failed: %s", err);
			break;
		}
		ck_assert_msg(s == NULL, "allocation %d failed, state built", n);
		ck_assert_msg(strstr(err, strerror(ENOMEM)) != NULL, "allocation %d: %s", n, err);
		ck_assert_uint_eq(refs(prev, "web"), 1);
	}
	ck_assert_int_gt(n, 10);
	ck_assert_int_eq(dest_of(s, "dns", "2001:db8:2::2"), 4);
	ck_assert_uint_gt(maglev_slots(s, vip_of(s, "dns"), 4), 0);
	state_free(s);
	state_free(prev);
	config_free(cfg);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_copies_out_of_memory)
{
	struct state_ctx *ctx = ctx_new(64, NULL);
	struct dp_state *s = build(ctx, CONF2(WEB_123, DNS_12), NULL), *c = NULL;
	uint32_t web = vip_of(s, "web");
	int n, rc;

	/* a backend change, then an ownership change, each failing at its
	 * n-th allocation: no copy, ENOMEM, s and its tables' refs intact */
	for (int kind = 0; kind < 2; kind++) {
		for (n = 0, c = NULL; c == NULL; n++) {
			rc = 0;
			alloc_budget = n;
			c = kind == 0 ? state_with_backend(ctx, s, web, 0, DEST_UP, 5, &rc) :
					state_with_owned(ctx, s, web, true, &rc);
			if (!alloc_failed()) {
				ck_assert_msg(c != NULL, "no allocation failed: %d", rc);
				break;
			}
			ck_assert_msg(c == NULL, "allocation %d failed, state built", n);
			ck_assert_int_eq(rc, -ENOMEM);
			ck_assert_uint_eq(refs(s, "web"), 1);
			ck_assert_uint_eq(refs(s, "dns"), 1);
		}
		ck_assert_int_gt(n, 3);
		ck_assert_uint_eq(refs(c, "dns"), 2);
		state_free(c);
	}
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

/* ---- the bound on destination ids ---- */

START_TEST(test_max_dests_bound)
{
	struct state_ctx *ctx = ctx_new(4, NULL);
	struct dp_state *s = build(ctx, CONF1(WEB_123), NULL);
	char err[CONFIG_ERROR_MAX];

	ck_assert_uint_eq(s->n_dests, 3);
	/* five would be past four */
	build_refused(ctx, CONF2(WEB_123, VIP("app", "198.18.1.2", "gre")
		      BACKEND("198.18.2.5") ", " BACKEND("198.18.2.6") VIP_END), s,
		      err, sizeof(err));
	ck_assert_msg(strstr(err, "t.conf: more than 4 destinations") != NULL, "%s", err);
	/* the running state is untouched and the same config builds again */
	ck_assert_uint_eq(s->n_dests, 3);
	ck_assert_uint_eq(refs(s, "web"), 1);
	ck_assert_uint_eq(s->dests[2].status, DEST_UP);
	reload(ctx, &s, CONF1(WEB_123));
	ck_assert_int_eq(dest_of(s, "web", "198.18.2.3"), 2);

	/* the fourth and last */
	reload(ctx, &s, CONF2(WEB_123, APP_5));
	ck_assert_int_eq(dest_of(s, "app", "198.18.2.5"), 3);
	ck_assert_uint_eq(s->n_dests, 4);
	/* ids are never reused: a removed backend frees none */
	build_refused(ctx, CONF1(VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.9")
				 VIP_END), s, err, sizeof(err));
	ck_assert_msg(strstr(err, "more than 4 destinations") != NULL, "%s", err);
	/* but the known ones come and go */
	reload(ctx, &s, CONF1(WEB_123));
	reload(ctx, &s, CONF2(WEB_123, APP_5));
	ck_assert_int_eq(dest_of(s, "app", "198.18.2.5"), 3);
	state_free(s);
	state_ctx_destroy(ctx);

	/* a first config past the bound: refused, nothing leaks */
	ctx = ctx_new(2, NULL);
	build_refused(ctx, CONF1(WEB_123), NULL, err, sizeof(err));
	ck_assert_msg(strstr(err, "t.conf: more than 2 destinations") != NULL, "%s", err);
	state_ctx_destroy(ctx);
}
END_TEST

/* ---- next hops ---- */

START_TEST(test_next_hop_on_link)
{
	struct neighbours nb = { 0 };
	struct state_port port = port_new(&nb);
	uint8_t a4[16], a6[16];

	addr_parse("198.18.2.1", a4);
	addr_parse("2001:db8:2::1", a6);
	/* no gateway: the backend is its own next hop */
	ck_assert_ptr_eq(state_next_hop_addr(&port, FLOW_FAMILY_IPV4, a4), a4);
	ck_assert_ptr_eq(state_next_hop_addr(&port, FLOW_FAMILY_IPV6, a6), a6);
	ck_assert_ptr_null(state_next_hop(&port, FLOW_FAMILY_IPV4, a4));
	ck_assert_uint_eq(nb.n_asked, 1);
	neighbours_learn(&nb, "198.18.2.1", 0x11);
	neighbours_learn(&nb, "2001:db8:2::1", 0x61);
	ck_assert_ptr_eq(state_next_hop(&port, FLOW_FAMILY_IPV4, a4), nb.known[0].mac);
	ck_assert_ptr_eq(state_next_hop(&port, FLOW_FAMILY_IPV6, a6), nb.known[1].mac);
	ck_assert_uint_eq(nb.asked[2].family, FLOW_FAMILY_IPV6);
	ck_assert(memcmp(nb.asked[2].addr, a6, 16) == 0);
	/* without a neighbour table nothing resolves */
	port.lookup_mac = NULL;
	ck_assert_ptr_null(state_next_hop(&port, FLOW_FAMILY_IPV4, a4));
}
END_TEST

START_TEST(test_next_hop_via_gateway)
{
	struct neighbours nb = { 0 };
	struct state_port port = port_new(&nb);
	uint8_t a4[16], a6[16];

	addr_parse("198.18.2.1", a4);
	addr_parse("2001:db8:2::1", a6);
	port_gateway(&port, "198.18.0.1", NULL);
	neighbours_learn(&nb, "198.18.2.1", 0x11);  /* on the link too: not asked */
	/* an IPv4 gateway: IPv4 backends go through it, IPv6 ones do not */
	ck_assert_ptr_eq(state_next_hop_addr(&port, FLOW_FAMILY_IPV4, a4), port.gateway[0]);
	ck_assert_ptr_eq(state_next_hop_addr(&port, FLOW_FAMILY_IPV6, a6), a6);
	ck_assert_ptr_null(state_next_hop(&port, FLOW_FAMILY_IPV4, a4));
	ck_assert(neighbours_asked(&nb, "198.18.0.1"));
	ck_assert(!neighbours_asked(&nb, "198.18.2.1"));
	neighbours_learn(&nb, "198.18.0.1", 0x01);
	ck_assert_ptr_eq(state_next_hop(&port, FLOW_FAMILY_IPV4, a4), nb.known[1].mac);

	port_gateway(&port, "2001:db8::1", NULL);
	ck_assert_ptr_eq(state_next_hop_addr(&port, FLOW_FAMILY_IPV6, a6), port.gateway[1]);
	ck_assert_ptr_null(state_next_hop(&port, FLOW_FAMILY_IPV6, a6));
	ck_assert(neighbours_asked(&nb, "2001:db8::1"));
	ck_assert(!neighbours_asked(&nb, "2001:db8:2::1"));
	neighbours_learn(&nb, "2001:db8::1", 0x06);
	ck_assert_ptr_eq(state_next_hop(&port, FLOW_FAMILY_IPV6, a6), nb.known[2].mac);
}
END_TEST

START_TEST(test_next_hop_static_gateway_mac)
{
	static const uint8_t mac4[6] = { 0x02, 0, 0, 0, 0, 0x44 };
	static const uint8_t mac6[6] = { 0x02, 0, 0, 0, 0, 0x66 };
	struct neighbours nb = { 0 };
	struct state_port port = port_new(&nb);
	uint8_t a4[16], a6[16];
	const uint8_t *mac;

	addr_parse("198.18.2.1", a4);
	addr_parse("2001:db8:2::1", a6);
	port_gateway(&port, "198.18.0.1", mac4);
	port_gateway(&port, "2001:db8::1", NULL);
	/* a static MAC: nothing to resolve, none asked */
	ck_assert_ptr_null(state_next_hop_addr(&port, FLOW_FAMILY_IPV4, a4));
	mac = state_next_hop(&port, FLOW_FAMILY_IPV4, a4);
	ck_assert_ptr_nonnull(mac);
	ck_assert(memcmp(mac, mac4, 6) == 0);
	ck_assert_uint_eq(nb.n_asked, 0);
	/* the other family still resolves its gateway */
	ck_assert_ptr_eq(state_next_hop_addr(&port, FLOW_FAMILY_IPV6, a6), port.gateway[1]);
	ck_assert_ptr_null(state_next_hop(&port, FLOW_FAMILY_IPV6, a6));
	ck_assert_uint_eq(nb.n_asked, 1);
	port_gateway(&port, "2001:db8::1", mac6);
	mac = state_next_hop(&port, FLOW_FAMILY_IPV6, a6);
	ck_assert_ptr_nonnull(mac);
	ck_assert(memcmp(mac, mac6, 6) == 0);
	ck_assert_uint_eq(nb.n_asked, 1);
}
END_TEST

#define TUNNELS CONF3(VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.1") ", " \
		      BACKEND("198.18.2.2") VIP_END, DNS_12, \
		      VIP("l2", "198.18.1.3", "l2") \
		      L2_BACKEND("198.18.0.21", "02:00:00:00:00:21") VIP_END)

static void
assert_tunnel(const struct dp_state *s, const char *vip, const char *addr,
	      uint8_t kind, const char *src, const uint8_t *eth_dst)
{
	const struct dp_dest *d = dest(s, vip, addr);
	uint8_t a[16], family = addr_parse(addr, a), s16[16];

	addr_parse(src, s16);
	ck_assert_uint_eq(d->tunnel.kind, kind);
	ck_assert_uint_eq(d->tunnel.outer_family, family);
	ck_assert(memcmp(d->tunnel.dst, a, family == FLOW_FAMILY_IPV4 ? 4 : 16) == 0);
	ck_assert(memcmp(d->tunnel.src, s16, family == FLOW_FAMILY_IPV4 ? 4 : 16) == 0);
	ck_assert(memcmp(d->tunnel.eth_src, port_mac, 6) == 0);
	ck_assert_msg(d->resolved == (eth_dst != NULL), "%s: resolved %d", addr, d->resolved);
	ck_assert_msg(memcmp(d->tunnel.eth_dst, eth_dst != NULL ? eth_dst : zero_mac, 6) == 0,
		      "%s: eth_dst ends %02x", addr, d->tunnel.eth_dst[5]);
}

START_TEST(test_tunnels_take_next_hops)
{
	struct neighbours nb = { 0 };
	struct state_ctx *ctx = ctx_new(64, &nb);
	struct state_port port = *state_ctx_port(ctx);
	struct dp_state *s;

	/* IPv4 on the link, IPv6 through a gateway */
	port_gateway(&port, "2001:db8::1", NULL);
	state_ctx_set_port(ctx, &port);
	ck_assert(state_ctx_port(ctx)->has_gateway[1]);
	neighbours_learn(&nb, "198.18.2.1", 0x11);
	neighbours_learn(&nb, "2001:db8::1", 0x06);
	s = build(ctx, TUNNELS, NULL);
	assert_tunnel(s, "web", "198.18.2.1", ENCAP_GRE, "198.18.0.10", nb.known[0].mac);
	assert_tunnel(s, "web", "198.18.2.2", ENCAP_GRE, "198.18.0.10", NULL);
	assert_tunnel(s, "dns", "2001:db8:2::1", ENCAP_IPIP, "2001:db8::10", nb.known[1].mac);
	assert_tunnel(s, "dns", "2001:db8:2::2", ENCAP_IPIP, "2001:db8::10", nb.known[1].mac);
	/* L2: the backend's configured MAC, nothing resolved */
	assert_tunnel(s, "l2", "198.18.0.21", ENCAP_L2, "198.18.0.10",
		      (const uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x21 });
	ck_assert(!neighbours_asked(&nb, "198.18.0.21"));
	ck_assert(!neighbours_asked(&nb, "2001:db8:2::1"));
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_with_neighbours)
{
	static const uint8_t gw_mac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
	struct neighbours nb = { 0 };
	struct state_ctx *ctx = ctx_new(64, &nb);
	struct state_port port = *state_ctx_port(ctx);
	struct dp_state *s, *next;
	uint32_t web;
	int rc;

	neighbours_learn(&nb, "198.18.2.1", 0x11);
	s = build(ctx, TUNNELS, NULL);
	reload(ctx, &s, CONF3(VIP("web", "198.18.1.1", "gre") BACKEND("198.18.2.1") ", "
			      BACKEND("198.18.2.2") VIP_END,
			      VIP("dns", "2001:db8:1::1", "ipip") BACKEND("2001:db8:2::2") VIP_END,
			      VIP("l2", "198.18.1.3", "l2")
			      L2_BACKEND("198.18.0.21", "02:00:00:00:00:21") VIP_END));
	web = vip_of(s, "web");
	ck_assert_uint_eq(s->dests[2].status, DEST_GONE);

	/* nothing new: no state */
	rc = 1;
	ck_assert_ptr_null(state_with_neighbours(ctx, s, &rc));
	ck_assert_int_eq(rc, 0);

	/* .2 resolves: a copy with its tunnel, the Maglev tables shared */
	neighbours_learn(&nb, "198.18.2.2", 0x12);
	rc = 1;
	next = state_with_neighbours(ctx, s, &rc);
	ck_assert_ptr_nonnull(next);
	ck_assert_int_eq(rc, 0);
	assert_tunnel(next, "web", "198.18.2.2", ENCAP_GRE, "198.18.0.10", nb.known[1].mac);
	assert_tunnel(next, "web", "198.18.2.1", ENCAP_GRE, "198.18.0.10", nb.known[0].mac);
	assert_tunnel(s, "web", "198.18.2.2", ENCAP_GRE, "198.18.0.10", NULL);
	ck_assert_ptr_eq(next->vips[web].maglev, s->vips[web].maglev);
	ck_assert_uint_eq(refs(next, "web"), 2);
	ck_assert_uint_eq(next->vip_gen, s->vip_gen);
	ck_assert_uint_gt(next->generation, s->generation);
	state_free(s);
	s = next;

	/* .1 moves to another MAC, .2 is forgotten */
	neighbours_learn(&nb, "198.18.2.1", 0x31);
	nb.n_known = 1;
	next = state_with_neighbours(ctx, s, &rc);
	ck_assert_ptr_nonnull(next);
	assert_tunnel(next, "web", "198.18.2.1", ENCAP_GRE, "198.18.0.10",
		      (const uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x31 });
	assert_tunnel(next, "web", "198.18.2.2", ENCAP_GRE, "198.18.0.10", NULL);
	state_free(s);
	s = next;

	/* a static IPv4 gateway MAC: every IPv4 tunnel takes it; L2 and gone
	 * destinations keep theirs */
	port_gateway(&port, "198.18.0.1", gw_mac);
	state_ctx_set_port(ctx, &port);
	next = state_with_neighbours(ctx, s, &rc);
	ck_assert_ptr_nonnull(next);
	assert_tunnel(next, "web", "198.18.2.1", ENCAP_GRE, "198.18.0.10", gw_mac);
	assert_tunnel(next, "web", "198.18.2.2", ENCAP_GRE, "198.18.0.10", gw_mac);
	assert_tunnel(next, "dns", "2001:db8:2::2", ENCAP_IPIP, "2001:db8::10", NULL);
	assert_tunnel(next, "l2", "198.18.0.21", ENCAP_L2, "198.18.0.10",
		      (const uint8_t[6]){ 0x02, 0, 0, 0, 0, 0x21 });
	ck_assert_uint_eq(next->dests[2].status, DEST_GONE);
	ck_assert(!next->dests[2].resolved);
	state_free(s);
	s = next;
	ck_assert_ptr_null(state_with_neighbours(ctx, s, &rc));
	ck_assert_int_eq(rc, 0);
	state_free(s);
	state_ctx_destroy(ctx);
}
END_TEST

static Suite *
state_suite(void)
{
	Suite *s = suite_create("state");
	TCase *ids = tcase_create("ids");
	TCase *reloads = tcase_create("reloads");
	TCase *maglev = tcase_create("maglev");
	TCase *hops = tcase_create("next_hops");

	tcase_add_test(ids, test_ids_kept_across_reloads);
	tcase_add_test(ids, test_ids_keyed_by_vip_name);
	tcase_add_test(ids, test_generations);
	tcase_add_test(ids, test_max_dests_bound);
	tcase_add_test(reloads, test_reload_resets_weights_to_config);
	tcase_add_test(reloads, test_reload_keeps_down);
	tcase_add_test(reloads, test_reload_keeps_ownership);
	tcase_add_test(reloads, test_sync_after_packets);
	tcase_add_test(maglev, test_maglev_shared_by_copies);
	tcase_add_test(maglev, test_maglev_rebuilt_by_reload);
	tcase_add_test(maglev, test_maglev_empty_without_up_backends);
	tcase_add_test(maglev, test_with_backend_refuses);
	tcase_add_test(maglev, test_digest_equal_across_nodes);
	tcase_add_test(maglev, test_digest_follows_the_table);
	tcase_add_test(maglev, test_digest_of_addresses);
	tcase_add_test(maglev, test_build_out_of_memory);
	tcase_add_test(maglev, test_copies_out_of_memory);
	tcase_add_test(hops, test_next_hop_on_link);
	tcase_add_test(hops, test_next_hop_via_gateway);
	tcase_add_test(hops, test_next_hop_static_gateway_mac);
	tcase_add_test(hops, test_tunnels_take_next_hops);
	tcase_add_test(hops, test_with_neighbours);
	suite_add_tcase(s, ids);
	suite_add_tcase(s, reloads);
	suite_add_tcase(s, maglev);
	suite_add_tcase(s, hops);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(state_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
