/* SPDX-License-Identifier: BSD-3-Clause */
/* The config's VIPs and backends as syncd indexes them. See catalog.h. */
#include "syncd/catalog.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "lib/hash.h"

struct catalog {
	uint16_t n_vips, n_groups;
	struct catalog_vip *vips;       /* config order */
	uint16_t *by_addr;              /* VIP indices sorted by vip_cmp() */
	char (*groups)[CATALOG_GROUP_NAME_MAX];
};

uint64_t
catalog_hash(const void *data, size_t len)
{
	/* fixed: digests must agree between nodes, and nothing here is secret */
	static const struct hash_key key = { 0x6d61676c62737964ull, 0x6361746c6f677631ull };

	return hash_sip24(&key, data, len);
}

/* Order of VIPs by (family, address, protocol, port). */
static int
vip_key_cmp(uint8_t fa, const uint8_t *aa, uint8_t pa, uint16_t porta,
	    const struct catalog_vip *b)
{
	int d = memcmp(aa, b->addr, WIRE_ADDR_MAX);

	if (fa != b->family)
		return fa < b->family ? -1 : 1;
	if (d != 0)
		return d;
	if (pa != b->proto)
		return pa < b->proto ? -1 : 1;
	return porta == b->port ? 0 : porta < b->port ? -1 : 1;
}

static int
vip_index_cmp(const void *a, const void *b, void *arg)
{
	const struct catalog *c = arg;
	const struct catalog_vip *va = &c->vips[*(const uint16_t *)a];

	return vip_key_cmp(va->family, va->addr, va->proto, va->port,
			   &c->vips[*(const uint16_t *)b]);
}

static int
backend_key_cmp(uint8_t fa, const uint8_t *aa, const struct catalog_backend *b)
{
	if (fa != b->family)
		return fa < b->family ? -1 : 1;
	return memcmp(aa, b->addr, WIRE_ADDR_MAX);
}

static int
backend_cmp(const void *a, const void *b)
{
	const struct catalog_backend *ba = a;

	return backend_key_cmp(ba->family, ba->addr, b);
}

static void
addr_copy(uint8_t out[WIRE_ADDR_MAX], uint8_t *family, const struct config_addr *a)
{
	memset(out, 0, WIRE_ADDR_MAX);
	*family = (uint8_t)a->family;
	memcpy(out, a->bytes, a->family == AF_INET ? 4 : 16);
}

static int
group_of(struct catalog *c, const char *name)
{
	int g = catalog_group_find(c, name);

	if (g >= 0)
		return g;
	snprintf(c->groups[c->n_groups], CATALOG_GROUP_NAME_MAX, "%s", name);
	return c->n_groups++;
}

static int
vip_build(struct catalog *c, struct catalog_vip *v, const struct config_vip *cv)
{
	uint8_t hash_in[WIRE_ADDR_MAX + 2];

	snprintf(v->name, sizeof(v->name), "%s", cv->name);
	addr_copy(v->addr, &v->family, &cv->addr);
	v->proto = cv->proto == CONFIG_PROTO_TCP ? IPPROTO_TCP : IPPROTO_UDP;
	v->port = cv->port;
	v->group = (uint16_t)group_of(c, cv->sync_group);
	memcpy(hash_in, v->addr, WIRE_ADDR_MAX);
	hash_in[WIRE_ADDR_MAX] = v->family;
	hash_in[WIRE_ADDR_MAX + 1] = v->proto;
	v->hash = catalog_hash(hash_in, sizeof(hash_in));
	v->backends = calloc(cv->n_backends ? cv->n_backends : 1, sizeof(*v->backends));
	if (v->backends == NULL)
		return -ENOMEM;
	for (uint32_t b = 0; b < cv->n_backends; b++) {
		struct catalog_backend *cb = &v->backends[v->n_backends++];

		addr_copy(cb->addr, &cb->family, &cv->backends[b].addr);
		memcpy(hash_in, cb->addr, WIRE_ADDR_MAX);
		hash_in[WIRE_ADDR_MAX] = cb->family;
		hash_in[WIRE_ADDR_MAX + 1] = 0xbe;
		cb->hash = catalog_hash(hash_in, sizeof(hash_in));
	}
	qsort(v->backends, v->n_backends, sizeof(*v->backends), backend_cmp);
	return 0;
}

struct catalog *
catalog_create(const struct config *cfg)
{
	struct catalog *c;

	if (cfg->n_vips >= CATALOG_INDEX_NONE)
		return NULL;
	for (uint32_t v = 0; v < cfg->n_vips; v++)
		if (cfg->vips[v].n_backends >= CATALOG_INDEX_NONE)
			return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->vips = calloc(cfg->n_vips ? cfg->n_vips : 1, sizeof(*c->vips));
	c->by_addr = calloc(cfg->n_vips ? cfg->n_vips : 1, sizeof(*c->by_addr));
	c->groups = calloc(cfg->n_vips ? cfg->n_vips : 1, sizeof(*c->groups));
	if (c->vips == NULL || c->by_addr == NULL || c->groups == NULL)
		goto fail;
	for (uint32_t v = 0; v < cfg->n_vips; v++) {
		if (vip_build(c, &c->vips[v], &cfg->vips[v]) < 0)
			goto fail;
		c->by_addr[v] = (uint16_t)v;
		c->n_vips++;
	}
	qsort_r(c->by_addr, c->n_vips, sizeof(*c->by_addr), vip_index_cmp, c);
	return c;

fail:
	catalog_destroy(c);
	return NULL;
}

void
catalog_destroy(struct catalog *c)
{
	if (c == NULL)
		return;
	for (uint16_t v = 0; v < c->n_vips; v++)
		free(c->vips[v].backends);
	free(c->vips);
	free(c->by_addr);
	free(c->groups);
	free(c);
}

const struct catalog_vip *
catalog_vip(const struct catalog *c, uint16_t vip)
{
	return vip < c->n_vips ? &c->vips[vip] : NULL;
}

uint16_t
catalog_groups(const struct catalog *c)
{
	return c->n_groups;
}

const char *
catalog_group_name(const struct catalog *c, uint16_t group)
{
	return group < c->n_groups ? c->groups[group] : NULL;
}

int
catalog_group_find(const struct catalog *c, const char *name)
{
	for (uint16_t g = 0; g < c->n_groups; g++)
		if (strcmp(c->groups[g], name) == 0)
			return g;
	return -ENOENT;
}

int
catalog_vip_find(const struct catalog *c, const char *name)
{
	for (uint16_t v = 0; v < c->n_vips; v++)
		if (strcmp(c->vips[v].name, name) == 0)
			return v;
	return -ENOENT;
}

/* The VIP of exactly (family, addr, proto, port), or -1. */
static int
vip_search(const struct catalog *c, uint8_t family, const uint8_t *addr, uint8_t proto,
	   uint16_t port)
{
	size_t lo = 0, hi = c->n_vips;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = vip_key_cmp(family, addr, proto, port, &c->vips[c->by_addr[mid]]);

		if (d == 0)
			return c->by_addr[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

int
catalog_find(const struct catalog *c, const struct wire_flow *f, uint16_t *vip,
	     uint16_t *backend)
{
	const struct catalog_vip *v;
	size_t lo = 0, hi;
	int i = vip_search(c, f->family, f->vip, f->proto, f->vip_port);

	if (i < 0)
		i = vip_search(c, f->family, f->vip, f->proto, 0);
	if (i < 0)
		return -ENOENT;
	*vip = (uint16_t)i;
	v = &c->vips[i];
	hi = v->n_backends;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = backend_key_cmp(f->backend_family, f->backend, &v->backends[mid]);

		if (d == 0) {
			*backend = (uint16_t)mid;
			return 0;
		}
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -ESRCH;
}

void
catalog_flow(const struct catalog *c, uint16_t vip, uint16_t vip_port,
	     const uint8_t client[WIRE_ADDR_MAX], uint16_t client_port, uint16_t backend,
	     struct wire_flow *out)
{
	const struct catalog_vip *v = &c->vips[vip];

	out->family = v->family;
	out->proto = v->proto;
	out->vip_port = vip_port;
	out->client_port = client_port;
	memcpy(out->vip, v->addr, WIRE_ADDR_MAX);
	memcpy(out->client, client, WIRE_ADDR_MAX);
	if (backend == CATALOG_INDEX_NONE || backend >= v->n_backends) {
		out->backend_family = 0;
		memset(out->backend, 0, WIRE_ADDR_MAX);
		return;
	}
	out->backend_family = v->backends[backend].family;
	memcpy(out->backend, v->backends[backend].addr, WIRE_ADDR_MAX);
}
