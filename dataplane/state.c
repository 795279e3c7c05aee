/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/state.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/core/flow_key.h"
#include "dataplane/core/maglev.h"
#include "dataplane/core/viptab.h"

const char *const dest_status_names[DEST_STATUS_MAX] = {
	[DEST_UP] = "up",
	[DEST_DRAINING] = "draining",
	[DEST_DOWN] = "down",
	[DEST_GONE] = "gone",
};

/* A destination's identity: the VIP's name and the backend's address. */
struct dest_key {
	char vip[CONFIG_NAME_MAX];
	uint8_t family;
	uint8_t addr[16];
};

/*
 * The registry of destination ids: open addressing over dest_key, ids handed
 * out in order and never reused, so a flow entry's id means one backend of
 * one VIP for the life of the process.
 */
struct state_ctx {
	struct state_port port;
	uint32_t max_dests, n_dests, buckets;
	struct dest_key *keys;      /* by id */
	uint32_t *slots;            /* id + 1, 0: empty */
	uint64_t generation;
	uint16_t vip_gen;
};

static uint64_t
dest_key_hash(const struct dest_key *k)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	const uint8_t *p = (const uint8_t *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}


/* The registry bucket of k: the one holding its id, else the empty one where
 * it goes (there is one: twice as many buckets as ids). */
static uint32_t
registry_bucket(const struct state_ctx *ctx, const struct dest_key *k)
{
	uint32_t mask = ctx->buckets - 1;
	uint32_t b = (uint32_t)dest_key_hash(k) & mask;

	while (ctx->slots[b] != 0 && memcmp(&ctx->keys[ctx->slots[b] - 1], k, sizeof(*k)) != 0)
		b = (b + 1) & mask;
	return b;
}

/* The id of k, added if new; -ENOSPC when max_dests are handed out. */
static int64_t
registry_id(struct state_ctx *ctx, const struct dest_key *k)
{
	uint32_t b = registry_bucket(ctx, k);

	if (ctx->slots[b] != 0)
		return ctx->slots[b] - 1;
	if (ctx->n_dests == ctx->max_dests)
		return -ENOSPC;
	ctx->keys[ctx->n_dests] = *k;
	ctx->slots[b] = ++ctx->n_dests;
	return ctx->n_dests - 1;
}

uint32_t
state_dests_max(const struct config *cfg)
{
	uint64_t n = 0;

	for (uint32_t v = 0; v < cfg->n_vips; v++)
		n += cfg->vips[v].n_backends;
	n *= STATE_DESTS_HEADROOM;
	if (n < STATE_DESTS_MIN)
		return STATE_DESTS_MIN;
	return n > STATE_DESTS_LIMIT ? STATE_DESTS_LIMIT : (uint32_t)n;
}

struct state_ctx *
state_ctx_create(uint32_t max_dests, const struct state_port *port)
{
	struct state_ctx *ctx;

	if (max_dests == 0 || max_dests > STATE_DESTS_LIMIT)
		return NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return NULL;
	ctx->port = *port;
	ctx->max_dests = max_dests;
	for (ctx->buckets = 64; ctx->buckets < 2 * max_dests; ctx->buckets *= 2)
		;
	ctx->keys = calloc(max_dests, sizeof(*ctx->keys));
	ctx->slots = calloc(ctx->buckets, sizeof(*ctx->slots));
	if (ctx->keys == NULL || ctx->slots == NULL) {
		state_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

const struct state_port *
state_ctx_port(const struct state_ctx *ctx)
{
	return &ctx->port;
}

void
state_ctx_set_port(struct state_ctx *ctx, const struct state_port *port)
{
	ctx->port = *port;
}

void
state_ctx_destroy(struct state_ctx *ctx)
{
	if (ctx == NULL)
		return;
	free(ctx->slots);
	free(ctx->keys);
	free(ctx);
}

const uint8_t *
state_next_hop_addr(const struct state_port *port, uint8_t family, const uint8_t addr[16])
{
	int f = family == FLOW_FAMILY_IPV6;

	if (port->has_gateway[f])
		return port->has_gateway_mac[f] ? NULL : port->gateway[f];
	return addr;
}

const uint8_t *
state_next_hop(const struct state_port *port, uint8_t family, const uint8_t addr[16])
{
	int f = family == FLOW_FAMILY_IPV6;
	const uint8_t *hop = state_next_hop_addr(port, family, addr);

	if (hop == NULL)
		return port->gateway_mac[f];
	return port->lookup_mac == NULL ? NULL : port->lookup_mac(port->arg, family, hop);
}

static struct hash_key
digest_key(void)
{
	return hash_key_from_bytes((const uint8_t *)STATE_DIGEST_KEY);
}

/* m's digest (STATE_DIGEST_KEY), its n_ranks ranks' destinations in dests. */
static int
maglev_digest(struct dp_maglev *m, uint32_t n_ranks, const struct dp_dest *dests)
{
	const struct hash_key key = digest_key();
	uint64_t *rank_word = calloc(n_ranks ? n_ranks : 1, sizeof(*rank_word));
	uint8_t addr[17];
	uint64_t v[4];

	if (rank_word == NULL)
		return -ENOMEM;
	for (uint32_t r = 0; r < n_ranks; r++) {
		const struct dp_dest *d = &dests[m->rank_dest[r]];

		addr[0] = d->family;
		memcpy(addr + 1, d->addr, 16);
		rank_word[r] = hash_sip24(&key, addr, sizeof(addr));
	}
	hash_sipinit(v, &key);
	hash_sip13_absorb(v, m->size);
	for (uint32_t i = 0; i < m->size; i++)
		hash_sip13_absorb(v, m->slots[i] == MAGLEV_SLOT_NONE ? 0 :
				  rank_word[m->slots[i]]);
	m->digest = hash_sip13_finish(v, (uint64_t)m->size + 1);
	free(rank_word);
	return 0;
}

/* The state's digest: the VIPs' own, each named, summed. */
static uint64_t
state_digest(const struct dp_state *s)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < s->n_vips; i++)
		sum += hash_vip_digest(s->vips[i].name, s->vips[i].maglev->digest);
	return sum;
}

static void
maglev_unref(struct dp_maglev *mg)
{
	if (mg == NULL || --mg->refs > 0)
		return;
	free(mg->rank_dest);
	free(mg->dest_slots);
	free(mg->slots);
	free(mg);
}

/* Build vip's Maglev table from its destinations' weights and status. */
static struct dp_maglev *
maglev_for_vip(const struct dp_vip *vip, uint32_t size, const struct dp_dest *dests,
	       int *rc)
{
	struct dp_maglev *mg = calloc(1, sizeof(*mg));
	struct maglev_backend *b = calloc(vip->n_dests, sizeof(*b));
	char (*names)[INET6_ADDRSTRLEN] = calloc(vip->n_dests, sizeof(*names));
	uint32_t *order = calloc(vip->n_dests, sizeof(*order));

	*rc = -ENOMEM;
	if (mg == NULL || b == NULL || names == NULL || order == NULL)
		goto fail;
	mg->refs = 1;
	mg->size = 0;
	for (uint32_t i = 0; i < vip->n_dests; i++) {
		const struct dp_dest *d = &dests[vip->dests[i]];

		inet_ntop(d->family == FLOW_FAMILY_IPV4 ? AF_INET : AF_INET6, d->addr,
			  names[i], sizeof(names[i]));
		b[i] = (struct maglev_backend){
			names[i], d->status == DEST_UP ? d->weight : 0 };
	}
	mg->slots = calloc(size, sizeof(*mg->slots));
	mg->rank_dest = calloc(vip->n_dests, sizeof(*mg->rank_dest));
	mg->dest_slots = calloc(vip->n_dests, sizeof(*mg->dest_slots));
	if (mg->slots == NULL || mg->rank_dest == NULL || mg->dest_slots == NULL)
		goto fail;
	mg->size = size;
	*rc = maglev_build(b, vip->n_dests, mg->size, mg->slots, order);
	if (*rc < 0 && *rc != -ENODATA)
		goto fail;
	for (uint32_t r = 0; r < vip->n_dests; r++)
		mg->rank_dest[r] = vip->dests[order[r]];
	for (uint32_t i = 0; i < mg->size; i++)
		if (mg->slots[i] != MAGLEV_SLOT_NONE)
			mg->dest_slots[order[mg->slots[i]]]++;
	*rc = maglev_digest(mg, vip->n_dests, dests);
	if (*rc < 0)
		goto fail;
	goto out;
fail:
	if (mg != NULL) {
		mg->refs = 1;
		maglev_unref(mg);
	}
	mg = NULL;
out:
	free(order);
	free(names);
	free(b);
	return mg;
}

void
state_free(struct dp_state *s)
{
	if (s == NULL)
		return;
	for (uint32_t i = 0; i < s->n_vips; i++) {
		maglev_unref(s->vips[i].maglev);
		free(s->vips[i].dests);
	}
	viptab_destroy(s->viptab);
	free(s->vips);
	free(s->dests);
	free(s);
}

static int
state_viptab(struct dp_state *s)
{
	struct viptab_vip *v = calloc(s->n_vips ? s->n_vips : 1, sizeof(*v));

	if (v == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->n_vips; i++) {
		v[i].family = s->vips[i].family;
		v[i].proto = s->vips[i].proto;
		v[i].port = s->vips[i].port;
		memcpy(v[i].addr, s->vips[i].addr, sizeof(v[i].addr));
		v[i].id = i;
	}
	s->viptab = viptab_create(v, s->n_vips);
	free(v);
	return s->viptab == NULL ? -ENOMEM : 0;
}

/* The tunnel of d for a VIP with encapsulation encap. */
static void
dest_tunnel(const struct state_ctx *ctx, struct dp_dest *d, uint8_t encap,
	    const uint8_t *l2_mac, const uint8_t node_addr[2][16])
{
	static const uint8_t none[6];
	const uint8_t *mac = encap == ENCAP_L2 ? l2_mac :
			     state_next_hop(&ctx->port, d->family, d->addr);

	d->resolved = mac != NULL;
	encap_tunnel_init(&d->tunnel, (enum encap_kind)encap, d->family,
			  mac != NULL ? mac : none, ctx->port.mac,
			  node_addr[d->family == FLOW_FAMILY_IPV6], d->addr);
}

static uint8_t
family_of(const struct config_addr *a)
{
	return a->family == AF_INET ? FLOW_FAMILY_IPV4 : FLOW_FAMILY_IPV6;
}

static void
addr_bytes(const struct config_addr *a, uint8_t out[16])
{
	memset(out, 0, 16);
	memcpy(out, a->bytes, a->family == AF_INET ? 4 : 16);
}

static const uint8_t encap_of[CONFIG_ENCAP_MAX] = {
	[CONFIG_ENCAP_GRE] = ENCAP_GRE,
	[CONFIG_ENCAP_IPIP] = ENCAP_IPIP,
	[CONFIG_ENCAP_L2] = ENCAP_L2,
};

/* The registry key of backend b of VIP v. */
static void
dest_key_of(const struct config_vip *v, const struct config_backend *b, struct dest_key *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->vip, sizeof(k->vip), "%s", v->name);
	k->family = family_of(&b->addr);
	addr_bytes(&b->addr, k->addr);
}

/* The (VIP, backend) pairs of cfg without an id yet (the config refuses
 * duplicates, so each is one new id). */
static uint32_t
registry_unknown(const struct state_ctx *ctx, const struct config *cfg)
{
	uint32_t n = 0;
	struct dest_key k;

	for (uint32_t v = 0; v < cfg->n_vips; v++) {
		for (uint32_t b = 0; b < cfg->vips[v].n_backends; b++) {
			dest_key_of(&cfg->vips[v], &cfg->vips[v].backends[b], &k);
			n += ctx->slots[registry_bucket(ctx, &k)] == 0;
		}
	}
	return n;
}

/* Fill VIP i and its destinations from the config. */
static int
build_vip(struct state_ctx *ctx, struct dp_state *s, const struct config *cfg,
	  uint32_t i, const struct dp_state *prev, const uint8_t node_addr[2][16])
{
	const struct config_vip *cv = &cfg->vips[i];
	struct dp_vip *v = &s->vips[i];
	int prev_vip = prev != NULL ? state_vip_find(prev, cv->name) : -1;

	snprintf(v->name, sizeof(v->name), "%s", cv->name);
	v->family = family_of(&cv->addr);
	addr_bytes(&cv->addr, v->addr);
	v->proto = cv->proto == CONFIG_PROTO_TCP ? IPPROTO_TCP : IPPROTO_UDP;
	v->port = cv->port;
	v->encap = encap_of[cv->encap];
	v->hash = (uint8_t)cv->hash;
	v->owned = prev_vip >= 0 && prev->vips[prev_vip].owned;
	v->sync_after_packets = (uint16_t)(cv->sync_after_packets < STATE_SYNC_AFTER_MAX ?
					   cv->sync_after_packets : STATE_SYNC_AFTER_MAX);
	v->n_dests = cv->n_backends;
	v->dests = calloc(cv->n_backends, sizeof(*v->dests));
	if (v->dests == NULL)
		return -ENOMEM;
	for (uint32_t b = 0; b < cv->n_backends; b++) {
		const struct config_backend *cb = &cv->backends[b];
		struct dest_key k;
		int64_t id;
		struct dp_dest *d;

		dest_key_of(cv, cb, &k);
		id = registry_id(ctx, &k);
		if (id < 0 || (uint64_t)id >= s->n_dests)
			return id < 0 ? (int)id : -ENOSPC;
		v->dests[b] = (uint32_t)id;
		d = &s->dests[id];
		d->family = k.family;
		memcpy(d->addr, k.addr, 16);
		d->vip = (uint16_t)i;
		d->config_weight = d->weight = cb->weight;
		d->status = cb->weight > 0 ? DEST_UP : DEST_DRAINING;
		/* Health (down) is not config: it survives a reload. */
		if (prev != NULL && (uint64_t)id < prev->n_dests &&
		    prev->dests[id].status == DEST_DOWN)
			d->status = DEST_DOWN;
		dest_tunnel(ctx, d, v->encap, cb->has_mac ? cb->mac : NULL, node_addr);
	}
	return 0;
}

/* A state of n_vips VIPs and n_dests ids, every destination GONE until filled. */
static int
alloc_state(struct dp_state **out, uint32_t n_vips, uint32_t n_dests)
{
	struct dp_state *s = calloc(1, sizeof(*s));

	*out = s;
	if (s == NULL)
		return -ENOMEM;
	s->vips = calloc(n_vips ? n_vips : 1, sizeof(*s->vips));
	s->dests = calloc(n_dests ? n_dests : 1, sizeof(*s->dests));
	if (s->vips == NULL || s->dests == NULL)
		return -ENOMEM;        /* counts still 0: state_free() walks nothing */
	s->n_vips = n_vips;
	s->n_dests = n_dests;
	for (uint32_t d = 0; d < n_dests; d++)
		s->dests[d].status = DEST_GONE;
	return 0;
}

struct dp_state *
state_build(struct state_ctx *ctx, const struct config *cfg,
	    const struct dp_state *prev, char *err, size_t errlen)
{
	uint32_t unknown = registry_unknown(ctx, cfg);
	uint8_t node_addr[2][16];
	struct dp_state *s = NULL;
	int rc;

	/* Ids are never reused: a config that needs more than are left is
	 * refused before any is handed out. */
	if (unknown > ctx->max_dests - ctx->n_dests) {
		snprintf(err, errlen, "%s: more than %u destinations (VIP, backend) since "
			 "start: %u new, %u ids left; restart maglb-dataplane to size them "
			 "for this config", cfg->file, ctx->max_dests, unknown,
			 ctx->max_dests - ctx->n_dests);
		return NULL;
	}
	rc = alloc_state(&s, cfg->n_vips, ctx->n_dests + unknown);
	if (rc < 0)
		goto fail;
	s->generation = ++ctx->generation;
	s->vip_gen = ++ctx->vip_gen != 0 ? ctx->vip_gen : ++ctx->vip_gen;
	s->seed = hash_key_from_bytes(cfg->hash_seed);
	addr_bytes(&cfg->node_addr4, node_addr[0]);
	addr_bytes(&cfg->node_addr6, node_addr[1]);
	for (uint32_t i = 0; i < cfg->n_vips && rc == 0; i++)
		rc = build_vip(ctx, s, cfg, i, prev, node_addr);
	for (uint32_t i = 0; i < cfg->n_vips && rc == 0; i++)
		s->vips[i].maglev = maglev_for_vip(&s->vips[i], cfg->vips[i].table_size,
						   s->dests, &rc);
	if (rc == 0)
		rc = state_viptab(s);
	if (rc == 0)
		s->maglev_digest = state_digest(s);
fail:
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot build the forwarding state: %s",
			 cfg->file, strerror(-rc));
		state_free(s);
		s = NULL;
	}
	return s;
}

/* A copy of s sharing its Maglev tables; the caller changes what it needs. */
static struct dp_state *
state_copy(struct state_ctx *ctx, const struct dp_state *s, int *rc)
{
	struct dp_state *c;

	*rc = alloc_state(&c, s->n_vips, s->n_dests);
	if (*rc < 0)
		goto fail;
	c->generation = ++ctx->generation;
	c->vip_gen = s->vip_gen;
	c->seed = s->seed;
	c->maglev_digest = s->maglev_digest;
	memcpy(c->dests, s->dests, s->n_dests * sizeof(*c->dests));
	memcpy(c->vips, s->vips, s->n_vips * sizeof(*c->vips));
	for (uint32_t i = 0; i < s->n_vips; i++) {
		c->vips[i].dests = NULL;
		c->vips[i].maglev = NULL;
	}
	for (uint32_t i = 0; i < s->n_vips; i++) {
		size_t bytes = s->vips[i].n_dests * sizeof(uint32_t);

		c->vips[i].dests = malloc(bytes ? bytes : 1);
		if (c->vips[i].dests == NULL) {
			*rc = -ENOMEM;
			goto fail;
		}
		memcpy(c->vips[i].dests, s->vips[i].dests, bytes);
		c->vips[i].maglev = s->vips[i].maglev;
		c->vips[i].maglev->refs++;
	}
	*rc = state_viptab(c);
	if (*rc == 0)
		return c;
fail:
	state_free(c);
	return NULL;
}

struct dp_state *
state_with_backend(struct state_ctx *ctx, const struct dp_state *s, uint32_t vip,
		   uint32_t dest, uint8_t status, uint32_t weight, int *rc)
{
	struct dp_state *c;
	struct dp_maglev *mg;

	if (vip >= s->n_vips || dest >= s->n_dests || s->dests[dest].vip != vip ||
	    s->dests[dest].status == DEST_GONE) {
		*rc = -ENOENT;
		return NULL;
	}
	c = state_copy(ctx, s, rc);
	if (c == NULL)
		return NULL;
	c->dests[dest].status = status;
	c->dests[dest].weight = weight;
	mg = maglev_for_vip(&c->vips[vip], c->vips[vip].maglev->size, c->dests, rc);
	if (mg == NULL) {
		state_free(c);
		return NULL;
	}
	maglev_unref(c->vips[vip].maglev);
	c->vips[vip].maglev = mg;
	c->maglev_digest = state_digest(c);
	return c;
}

struct dp_state *
state_with_owned(struct state_ctx *ctx, const struct dp_state *s, uint32_t vip,
		 bool owned, int *rc)
{
	struct dp_state *c;

	if (vip >= s->n_vips) {
		*rc = -ENOENT;
		return NULL;
	}
	c = state_copy(ctx, s, rc);
	if (c != NULL)
		c->vips[vip].owned = owned;
	return c;
}

struct dp_state *
state_with_neighbours(struct state_ctx *ctx, const struct dp_state *s, int *rc)
{
	struct dp_state *c = NULL;

	*rc = 0;
	for (uint32_t d = 0; d < s->n_dests; d++) {
		const struct dp_dest *old = &s->dests[d];
		const uint8_t *mac;

		if (old->status == DEST_GONE || old->tunnel.kind == ENCAP_L2)
			continue;
		mac = state_next_hop(&ctx->port, old->family, old->addr);
		if (mac == NULL ? !old->resolved :
		    old->resolved && memcmp(mac, old->tunnel.eth_dst, 6) == 0)
			continue;
		if (c == NULL && (c = state_copy(ctx, s, rc)) == NULL)
			return NULL;
		c->dests[d].resolved = mac != NULL;
		encap_tunnel_init(&c->dests[d].tunnel, (enum encap_kind)old->tunnel.kind,
				  old->family, mac != NULL ? mac : (const uint8_t[6]){ 0 },
				  ctx->port.mac, old->tunnel.src, old->addr);
	}
	return c;
}

int
state_vip_find(const struct dp_state *s, const char *name)
{
	for (uint32_t i = 0; i < s->n_vips; i++)
		if (strcmp(s->vips[i].name, name) == 0)
			return (int)i;
	return -1;
}

int64_t
state_dest_find(const struct dp_state *s, uint32_t vip, uint8_t family,
		const uint8_t addr[16])
{
	if (vip >= s->n_vips)
		return -1;
	for (uint32_t i = 0; i < s->vips[vip].n_dests; i++) {
		uint32_t id = s->vips[vip].dests[i];
		const struct dp_dest *d = &s->dests[id];

		if (d->family == family &&
		    memcmp(d->addr, addr, family == FLOW_FAMILY_IPV4 ? 4 : 16) == 0)
			return id;
	}
	return -1;
}
