/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The validation pass: checks that need more than one setting at a time, on
 * the parsed model. Errors point at the line of the later of two duplicates,
 * or at the VIP or backend at fault.
 */
#include "config/config_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

struct checker {
	const struct config *cfg;
	const char *name;               /* file name in messages */
	char *err;
	size_t errlen;
};

static bool
addr_equal(const struct config_addr *a, const struct config_addr *b)
{
	return a->family == b->family && memcmp(a->bytes, b->bytes, 16) == 0;
}

static const char *
family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

static int
check_ports(const struct checker *c)
{
	const struct config *cfg = c->cfg;

	for (uint32_t i = 0; i < cfg->n_ports; i++) {
		const struct config_port *port = &cfg->ports[i];

		for (uint32_t j = 0; j < i; j++) {
			const struct config_port *other = &cfg->ports[j];

			if (strcmp(port->name, other->name) == 0)
				return config_errorf(c->err, c->errlen, c->name, port->line,
						     "duplicate port '%s'", port->name);
			if (strcmp(port->device, other->device) == 0)
				return config_errorf(c->err, c->errlen, c->name, port->line,
						     "port '%s' has the same device as port '%s'",
						     port->name, other->name);
		}
	}
	/* The dataplane forwards on one port: refuse what it would ignore. */
	if (cfg->n_ports > 1)
		return config_errorf(c->err, c->errlen, c->name, cfg->ports[1].line,
				     "port '%s': this version forwards on one port only "
				     "(bond NICs into one DPDK port with net_bonding)",
				     cfg->ports[1].name);
	return 0;
}

/*
 * BFD peers: unique, not the node's own address, and of a family the node
 * has an address of (node.address, node.address6: the sessions run from
 * it, on the data port).
 */
static int
check_bfd(const struct checker *c)
{
	const struct config_bfd *bfd = &c->cfg->bfd;
	char buf[INET6_ADDRSTRLEN];

	for (uint32_t i = 0; i < bfd->n_peers; i++) {
		const struct config_addr *peer = &bfd->peers[i];
		bool v6 = peer->family == AF_INET6;
		const struct config_addr *own = v6 ? &c->cfg->node_addr6 : &c->cfg->node_addr4;

		config_addr_str(peer, buf, sizeof(buf));
		for (uint32_t j = 0; j < i; j++)
			if (addr_equal(peer, &bfd->peers[j]))
				return config_errorf(c->err, c->errlen, c->name, bfd->peer_lines[i],
						     "bfd: duplicate peer %s", buf);
		if (!(v6 ? c->cfg->has_node_addr6 : c->cfg->has_node_addr4))
			return config_errorf(c->err, c->errlen, c->name, bfd->peer_lines[i],
					     "bfd: peer %s is %s but the node has no '%s' "
					     "(the address its sessions run from)",
					     buf, family_name(peer->family),
					     v6 ? "node.address6" : "node.address");
		if (addr_equal(peer, own))
			return config_errorf(c->err, c->errlen, c->name, bfd->peer_lines[i],
					     "bfd: peer %s is the node's own address", buf);
	}
	return 0;
}

/* Names and (address, port, protocol) are unique across VIPs. */
static int
check_vip_duplicates(const struct checker *c)
{
	const struct config *cfg = c->cfg;

	for (uint32_t i = 0; i < cfg->n_vips; i++) {
		const struct config_vip *vip = &cfg->vips[i];

		for (uint32_t j = 0; j < i; j++) {
			const struct config_vip *other = &cfg->vips[j];

			if (strcmp(vip->name, other->name) == 0)
				return config_errorf(c->err, c->errlen, c->name, vip->line,
						     "duplicate vip '%s'", vip->name);
			if (addr_equal(&vip->addr, &other->addr) &&
			    vip->port == other->port && vip->proto == other->proto)
				return config_errorf(c->err, c->errlen, c->name, vip->line,
						     "vip '%s' duplicates the address, port and protocol of vip '%s'",
						     vip->name, other->name);
		}
	}
	return 0;
}

static int
backend_compare(const void *a, const void *b)
{
	const struct config_backend *x = *(const struct config_backend *const *)a;
	const struct config_backend *y = *(const struct config_backend *const *)b;
	int d = x->addr.family - y->addr.family;

	if (d == 0)
		d = memcmp(x->addr.bytes, y->addr.bytes, 16);
	if (d == 0)
		d = x->line - y->line;
	return d;
}

/* No address twice in a VIP: sort pointers, compare neighbours. */
static int
check_backend_duplicates(const struct checker *c, const struct config_vip *vip)
{
	const struct config_backend **sorted;
	char buf[INET6_ADDRSTRLEN];
	int rc = 0;

	sorted = calloc(vip->n_backends, sizeof(*sorted));
	if (sorted == NULL) {
		config_errorf(c->err, c->errlen, c->name, vip->line, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < vip->n_backends; i++)
		sorted[i] = &vip->backends[i];
	qsort(sorted, vip->n_backends, sizeof(*sorted), backend_compare);
	for (uint32_t i = 1; i < vip->n_backends && rc == 0; i++)
		if (addr_equal(&sorted[i]->addr, &sorted[i - 1]->addr))
			rc = config_errorf(c->err, c->errlen, c->name, sorted[i]->line,
					   "duplicate backend %s in vip '%s'",
					   config_addr_str(&sorted[i]->addr, buf, sizeof(buf)),
					   vip->name);
	free(sorted);
	return rc;
}

static int
check_backends(const struct checker *c, const struct config_vip *vip)
{
	char buf[INET6_ADDRSTRLEN];

	for (uint32_t i = 0; i < vip->n_backends; i++) {
		const struct config_backend *b = &vip->backends[i];

		bool v6 = b->addr.family == AF_INET6;

		config_addr_str(&b->addr, buf, sizeof(buf));
		/* Tunnels carry either family (4in6, 6in4); L2 rewrites only MACs. */
		if (vip->encap == CONFIG_ENCAP_L2 && b->addr.family != vip->addr.family)
			return config_errorf(c->err, c->errlen, c->name, b->line,
					     "vip '%s': backend %s is %s but the VIP is %s (encap l2 keeps the VIP's family)",
					     vip->name, buf, family_name(b->addr.family),
					     family_name(vip->addr.family));
		if (vip->encap != CONFIG_ENCAP_L2 &&
		    !(v6 ? c->cfg->has_node_addr6 : c->cfg->has_node_addr4))
			return config_errorf(c->err, c->errlen, c->name, b->line,
					     "vip '%s': backend %s needs node '%s' (the tunnel source)",
					     vip->name, buf, v6 ? "address6" : "address");
		if (vip->encap == CONFIG_ENCAP_L2 && !b->has_mac)
			return config_errorf(c->err, c->errlen, c->name, b->line,
					     "vip '%s': backend %s needs 'mac' with encap l2",
					     vip->name, buf);
	}
	return check_backend_duplicates(c, vip);
}

static int
check_vip(const struct checker *c, const struct config_vip *vip)
{
	uint64_t needed = (uint64_t)CONFIG_TABLE_PER_BACKEND_MIN * vip->n_backends;

	if (vip->port == 0 && vip->health.type != CONFIG_HEALTH_NONE &&
	    vip->health.port == 0)
		return config_errorf(c->err, c->errlen, c->name, vip->line,
				     "vip '%s': an all-ports vip (port 0) needs an explicit health port for health type %s",
				     vip->name, config_health_type_names[vip->health.type]);
	if (vip->table_size < needed)
		return config_errorf(c->err, c->errlen, c->name, vip->line,
				     "vip '%s': table_size %u too small for %u backends (needs at least %llu)",
				     vip->name, vip->table_size, vip->n_backends,
				     (unsigned long long)needed);
	return check_backends(c, vip);
}

int
config_check(const struct config *cfg, const char *name, char *err,
	     size_t errlen)
{
	struct checker c = { .cfg = cfg, .name = name, .err = err, .errlen = errlen };
	int rc;

	rc = check_ports(&c);
	if (rc == 0)
		rc = check_bfd(&c);
	if (rc == 0)
		rc = check_vip_duplicates(&c);
	for (uint32_t i = 0; i < cfg->n_vips && rc == 0; i++)
		rc = check_vip(&c, &cfg->vips[i]);
	return rc;
}
