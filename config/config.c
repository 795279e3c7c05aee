/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The parser: libconfig text -> struct config. Each section has its reader;
 * each reader first walks the group's children against the list of allowed
 * keys (unknown keys are errors at every level), then reads and range-checks
 * values one by one. What needs several settings at once is left to the
 * validation pass in config_check.c.
 */
#include "config/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "config/config_private.h"

#define CONFIG_FILE_SIZE_MAX (16u << 20) /* 16 MiB: far more than 1024 VIPs take */
#define CONTEXT_MAX 64
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *const config_cluster_mode_names[CONFIG_CLUSTER_MODE_MAX] = {
	[CONFIG_CLUSTER_ACTIVE_PASSIVE] = "active-passive",
	[CONFIG_CLUSTER_ACTIVE_ACTIVE] = "active-active",
};

const char *const config_proto_names[CONFIG_PROTO_MAX] = {
	[CONFIG_PROTO_TCP] = "tcp",
	[CONFIG_PROTO_UDP] = "udp",
};

const char *const config_encap_names[CONFIG_ENCAP_MAX] = {
	[CONFIG_ENCAP_GRE] = "gre",
	[CONFIG_ENCAP_IPIP] = "ipip",
	[CONFIG_ENCAP_L2] = "l2",
};

const char *const config_hash_mode_names[CONFIG_HASH_MAX] = {
	[CONFIG_HASH_5TUPLE] = "5tuple",
	[CONFIG_HASH_CLIENT] = "client",
};

const char *const config_health_type_names[CONFIG_HEALTH_MAX] = {
	[CONFIG_HEALTH_NONE] = "none",
	[CONFIG_HEALTH_TCP] = "tcp",
	[CONFIG_HEALTH_HTTP] = "http",
};

/* Where errors go while one text is parsed. */
struct parser {
	const char *name;               /* file name in messages */
	char *err;
	size_t errlen;
};

/* A key allowed in a group; required ones must be present. */
struct key {
	const char *name;
	bool required;
};

/* An integer key read into a uint32_t at offset in the target struct. */
struct uint_key {
	const char *name;
	size_t offset;
	uint32_t min, max;
};

int
config_errorf(char *err, size_t errlen, const char *name, int line,
	      const char *fmt, ...)
{
	va_list ap;
	int n;

	if (err == NULL || errlen == 0)
		return -EINVAL;
	if (line > 0)
		n = snprintf(err, errlen, "%s:%d: ", name, line);
	else
		n = snprintf(err, errlen, "%s: ", name);
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_fail(const struct parser *p, const config_setting_t *s,
		      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Format an error at the line of setting s (no line when s is NULL). */
static int
parse_fail(const struct parser *p, const config_setting_t *s,
	   const char *fmt, ...)
{
	char reason[CONFIG_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return config_errorf(p->err, p->errlen, p->name,
			     s != NULL ? (int)config_setting_source_line(s) : 0,
			     "%s", reason);
}

/* Every child of group must be in keys; every required key must be there. */
static int
check_keys(const struct parser *p, const config_setting_t *group,
	   const char *where, const struct key *keys)
{
	int n = config_setting_length(group);

	for (int i = 0; i < n; i++) {
		const config_setting_t *child = config_setting_get_elem(group, (unsigned)i);
		const char *name = config_setting_name(child);
		const struct key *k = keys;

		while (k->name != NULL && strcmp(k->name, name) != 0)
			k++;
		if (k->name == NULL)
			return parse_fail(p, child, "unknown key '%s' %s", name, where);
	}
	for (const struct key *k = keys; k->name != NULL; k++)
		if (k->required && config_setting_get_member(group, k->name) == NULL)
			return parse_fail(p, config_setting_is_root(group) ? NULL : group,
					  "missing required key '%s' %s", k->name, where);
	return 0;
}

/* Member key of parent, which must be a group if present. */
static int
read_group(const struct parser *p, const config_setting_t *parent,
	   const char *ctx, const char *key, const config_setting_t **out)
{
	const config_setting_t *s = config_setting_get_member(parent, key);

	*out = NULL;
	if (s == NULL)
		return 0;
	if (!config_setting_is_group(s))
		return parse_fail(p, s, "%s'%s' must be a group { ... }", ctx, key);
	*out = s;
	return 0;
}

/* Member key of parent, a list of groups: ( { ... }, { ... } ). */
static int
read_list(const struct parser *p, const config_setting_t *parent,
	  const char *ctx, const char *key, const config_setting_t **out)
{
	const config_setting_t *s = config_setting_get_member(parent, key);
	int n;

	*out = NULL;
	if (s == NULL)
		return 0;
	if (!config_setting_is_list(s))
		return parse_fail(p, s, "%s'%s' must be a list ( { ... }, ... )", ctx, key);
	n = config_setting_length(s);
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);

		if (!config_setting_is_group(e))
			return parse_fail(p, e, "%seach entry of '%s' must be a group { ... }",
					  ctx, key);
	}
	*out = s;
	return 0;
}

/* Integer key of group into *out if present, checked against min..max. */
static int
read_uint(const struct parser *p, const config_setting_t *group,
	  const char *ctx, const char *key, uint32_t min, uint32_t max,
	  uint32_t *out)
{
	const config_setting_t *s = config_setting_get_member(group, key);
	long long v;

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64)
		return parse_fail(p, s, "%s'%s' must be an integer", ctx, key);
	v = config_setting_get_int64(s);
	if (v < (long long)min || v > (long long)max)
		return parse_fail(p, s, "%s%s %lld out of range %u..%u",
				  ctx, key, v, min, max);
	*out = (uint32_t)v;
	return 0;
}

/* The integer keys in keys[0..n) of group, into the struct at base. */
static int
read_uints(const struct parser *p, const config_setting_t *group,
	   const char *ctx, const struct uint_key *keys, size_t n, void *base)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t *field = (uint32_t *)((char *)base + keys[i].offset);
		int rc = read_uint(p, group, ctx, keys[i].name, keys[i].min,
				   keys[i].max, field);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Boolean key of group into *out if present (*out untouched if absent). */
static int
read_bool(const struct parser *p, const config_setting_t *group,
	  const char *ctx, const char *key, bool *out)
{
	const config_setting_t *s = config_setting_get_member(group, key);

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return parse_fail(p, s, "%s'%s' must be true or false", ctx, key);
	*out = config_setting_get_bool(s) != 0;
	return 0;
}

/* String key of group into *out if present (*out untouched if absent). */
static int
read_string(const struct parser *p, const config_setting_t *group,
	    const char *ctx, const char *key, const char **out,
	    const config_setting_t **setting)
{
	const config_setting_t *s = config_setting_get_member(group, key);

	if (setting != NULL)
		*setting = s;
	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return parse_fail(p, s, "%s'%s' must be a string", ctx, key);
	*out = config_setting_get_string(s);
	return 0;
}

static bool
name_is_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= CONFIG_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

/* A name (of a VIP, port or sync group) into out if present. */
static int
read_name(const struct parser *p, const config_setting_t *group,
	  const char *ctx, const char *key, char out[CONFIG_NAME_MAX])
{
	const config_setting_t *s = NULL;
	const char *v = NULL;
	int rc = read_string(p, group, ctx, key, &v, &s);

	if (rc < 0 || v == NULL)
		return rc;
	if (!name_is_valid(v))
		return parse_fail(p, s, "%sbad %s '%s' (1..%d characters of A-Z a-z 0-9 _ . -)",
				  ctx, key, v, CONFIG_NAME_MAX - 1);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/* One of names[0..n) into *out if present. */
static int
read_enum(const struct parser *p, const config_setting_t *group,
	  const char *ctx, const char *key, const char *const *names,
	  int n, int *out)
{
	const config_setting_t *s = NULL;
	const char *v = NULL;
	char choices[64] = "";
	int rc = read_string(p, group, ctx, key, &v, &s);

	if (rc < 0 || v == NULL)
		return rc;
	for (int i = 0; i < n; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
		strncat(choices, i > 0 ? ", " : "", sizeof(choices) - strlen(choices) - 1);
		strncat(choices, names[i], sizeof(choices) - strlen(choices) - 1);
	}
	return parse_fail(p, s, "%sbad %s '%s' (one of: %s)", ctx, key, v, choices);
}

static bool
addr_is_unicast(const struct config_addr *a)
{
	static const uint8_t zero[16];

	if (a->family == AF_INET)
		return a->bytes[0] != 0 && a->bytes[0] < 224;
	return memcmp(a->bytes, zero, 16) != 0 && a->bytes[0] != 0xff;
}

/*
 * The unicast address text v of setting s (named key in messages) into
 * *out. family AF_INET or AF_INET6 demands that family; 0 takes both.
 */
static int
parse_addr(const struct parser *p, const config_setting_t *s, const char *ctx,
	   const char *key, const char *v, int family, struct config_addr *out)
{
	char buf[INET6_ADDRSTRLEN];

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, v, &out->v4) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, v, &out->v6) == 1)
		out->family = AF_INET6;
	else
		return parse_fail(p, s, "%sbad address '%s'", ctx, v);
	config_addr_str(out, buf, sizeof(buf));
	if (family != 0 && out->family != family)
		return parse_fail(p, s, "%s'%s' must be an %s address, not %s", ctx, key,
				  family == AF_INET ? "IPv4" : "IPv6", buf);
	if (!addr_is_unicast(out))
		return parse_fail(p, s, "%s%s %s is not a unicast address", ctx, key, buf);
	return 0;
}

/*
 * An address key of group into *out if present (out->family stays AF_UNSPEC
 * if absent). family AF_INET or AF_INET6 demands that family; 0 takes both.
 */
static int
read_addr(const struct parser *p, const config_setting_t *group,
	  const char *ctx, const char *key, int family, struct config_addr *out)
{
	const config_setting_t *s = NULL;
	const char *v = NULL;
	int rc = read_string(p, group, ctx, key, &v, &s);

	memset(out, 0, sizeof(*out));
	if (rc < 0 || v == NULL)
		return rc;
	return parse_addr(p, s, ctx, key, v, family, out);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly 2 * len hex digits into out; false on anything else. */
static bool
parse_hex(const char *s, uint8_t *out, size_t len, char sep)
{
	size_t step = sep != 0 ? 3 : 2;

	if (strlen(s) != len * step - (sep != 0 ? 1 : 0))
		return false;
	for (size_t i = 0; i < len; i++) {
		const char *d = s + i * step;
		int hi = hex_digit(d[0]), lo = hex_digit(d[1]);

		if (hi < 0 || lo < 0 || (sep != 0 && i + 1 < len && d[2] != sep))
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* An optional unicast MAC "xx:xx:xx:xx:xx:xx" at key; *has says if present. */
static int
read_mac(const struct parser *p, const config_setting_t *group, const char *ctx,
	 const char *key, uint8_t mac[6], bool *has)
{
	const config_setting_t *s = NULL;
	const char *text = NULL;
	int rc = read_string(p, group, ctx, key, &text, &s);

	*has = false;
	if (rc < 0 || text == NULL)
		return rc;
	if (!parse_hex(text, mac, 6, ':') || (mac[0] & 1) != 0 ||
	    (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) == 0)
		return parse_fail(p, s, "%sbad MAC '%s' (want a unicast xx:xx:xx:xx:xx:xx)",
				  ctx, text);
	*has = true;
	return 0;
}

static int
parse_cluster(const struct parser *p, const config_setting_t *root,
	      struct config *cfg)
{
	static const struct key keys[] = {
		{ "hash_seed", true }, { "mode", false }, { "preempt", false },
		{ "lease_ms", false }, { "hooks_dir", false },
		{ "hook_timeout_ms", false }, { NULL, false },
	};
	const config_setting_t *group = NULL, *s = NULL, *ds = NULL;
	const char *seed = NULL, *dir = NULL;
	int mode = (int)cfg->mode;
	int rc;

	rc = read_group(p, root, "", "cluster", &group);
	if (rc == 0)
		rc = check_keys(p, group, "in cluster", keys);
	if (rc == 0)
		rc = read_string(p, group, "", "hash_seed", &seed, &s);
	if (rc == 0)
		rc = read_enum(p, group, "cluster: ", "mode", config_cluster_mode_names,
			       CONFIG_CLUSTER_MODE_MAX, &mode);
	if (rc == 0)
		rc = read_bool(p, group, "cluster: ", "preempt", &cfg->preempt);
	if (rc == 0)
		rc = read_uint(p, group, "cluster: ", "lease_ms", CONFIG_LEASE_MS_MIN,
			       CONFIG_LEASE_MS_MAX, &cfg->lease_ms);
	if (rc == 0)
		rc = read_uint(p, group, "cluster: ", "hook_timeout_ms", 100, 600000,
			       &cfg->hook_timeout_ms);
	if (rc == 0)
		rc = read_string(p, group, "cluster: ", "hooks_dir", &dir, &ds);
	if (rc < 0)
		return rc;
	cfg->mode = (enum config_cluster_mode)mode;
	if (!parse_hex(seed, cfg->hash_seed, sizeof(cfg->hash_seed), 0))
		return parse_fail(p, s, "bad hash_seed: want exactly 32 hex digits (16 random bytes)");
	if (dir != NULL) {
		if (dir[0] != '/' || strlen(dir) >= sizeof(cfg->hooks_dir))
			return parse_fail(p, ds, "cluster: hooks_dir must be an absolute path "
					  "of at most %zu characters", sizeof(cfg->hooks_dir) - 1);
		memcpy(cfg->hooks_dir, dir, strlen(dir) + 1);
	}
	return 0;
}

static int
parse_node(const struct parser *p, const config_setting_t *root,
	   struct config *cfg)
{
	static const struct key keys[] = {
		{ "id", true }, { "priority", false }, { "address", false },
		{ "address6", false }, { NULL, false },
	};
	const config_setting_t *group;
	int rc;

	rc = read_group(p, root, "", "node", &group);
	if (rc == 0)
		rc = check_keys(p, group, "in node", keys);
	if (rc == 0)
		rc = read_uint(p, group, "node: ", "id", 1, UINT32_MAX, &cfg->node_id);
	if (rc == 0)
		rc = read_uint(p, group, "node: ", "priority", 0, 255, &cfg->priority);
	if (rc == 0)
		rc = read_addr(p, group, "node: ", "address", AF_INET, &cfg->node_addr4);
	if (rc == 0)
		rc = read_addr(p, group, "node: ", "address6", AF_INET6, &cfg->node_addr6);
	if (rc < 0)
		return rc;
	cfg->has_node_addr4 = cfg->node_addr4.family != 0;
	cfg->has_node_addr6 = cfg->node_addr6.family != 0;
	if (!cfg->has_node_addr4 && !cfg->has_node_addr6)
		return parse_fail(p, group, "node needs 'address' or 'address6' (or both)");
	return 0;
}

static int
parse_port(const struct parser *p, const config_setting_t *group,
	   struct config_port *port)
{
	static const struct key keys[] = {
		{ "name", true }, { "device", true }, { "mtu", false },
		{ "gateway", false }, { "gateway6", false }, { "gateway_mac", false },
		{ "gateway6_mac", false }, { "mbufs", false }, { "vlan", false },
		{ NULL, false },
	};
	const config_setting_t *s = NULL;
	const char *device = NULL;
	char ctx[CONTEXT_MAX];
	int rc;

	port->line = (int)config_setting_source_line(group);
	port->mtu = 1500;
	rc = check_keys(p, group, "in port", keys);
	if (rc == 0)
		rc = read_name(p, group, "port: ", "name", port->name);
	if (rc < 0)
		return rc;
	snprintf(ctx, sizeof(ctx), "port '%s': ", port->name);
	rc = read_string(p, group, ctx, "device", &device, &s);
	if (rc == 0 && (device[0] == '\0' || strlen(device) >= CONFIG_DEVICE_MAX))
		rc = parse_fail(p, s, "%sdevice must have 1..%d characters", ctx,
				CONFIG_DEVICE_MAX - 1);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "mtu", 576, 9702, &port->mtu);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "mbufs", 4096, 1u << 27, &port->mbufs);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "vlan", 1, 4094, &port->vlan);
	if (rc == 0)
		rc = read_addr(p, group, ctx, "gateway", AF_INET, &port->gateway4);
	if (rc == 0)
		rc = read_addr(p, group, ctx, "gateway6", AF_INET6, &port->gateway6);
	if (rc == 0)
		rc = read_mac(p, group, ctx, "gateway_mac", port->gateway4_mac,
			      &port->has_gateway4_mac);
	if (rc == 0)
		rc = read_mac(p, group, ctx, "gateway6_mac", port->gateway6_mac,
			      &port->has_gateway6_mac);
	if (rc < 0)
		return rc;
	if (port->has_gateway4_mac && port->gateway4.family == 0)
		return parse_fail(p, group, "%s'gateway_mac' needs 'gateway'", ctx);
	if (port->has_gateway6_mac && port->gateway6.family == 0)
		return parse_fail(p, group, "%s'gateway6_mac' needs 'gateway6'", ctx);
	memcpy(port->device, device, strlen(device) + 1);
	port->has_gateway4 = port->gateway4.family != 0;
	port->has_gateway6 = port->gateway6.family != 0;
	return 0;
}

static int
parse_ports(const struct parser *p, const config_setting_t *root,
	    struct config *cfg)
{
	const config_setting_t *list;
	int rc = read_list(p, root, "", "ports", &list);
	int n;

	if (rc < 0)
		return rc;
	n = config_setting_length(list);
	if (n == 0)
		return parse_fail(p, list, "'ports' needs at least one port");
	if (n > CONFIG_PORTS_MAX)
		return parse_fail(p, list, "too many ports (max %d)", CONFIG_PORTS_MAX);
	for (int i = 0; i < n; i++) {
		rc = parse_port(p, config_setting_get_elem(list, (unsigned)i),
				&cfg->ports[i]);
		if (rc < 0)
			return rc;
		cfg->n_ports++;
	}
	return 0;
}

static int
parse_flows(const struct parser *p, const config_setting_t *root,
	    struct config *cfg)
{
	static const struct key keys[] = {
		{ "capacity", false }, { "shared_capacity", false },
		{ "insert_rate", false }, { "refresh_interval", false },
		{ "timeouts", false }, { NULL, false },
	};
	static const struct key timeout_keys[] = {
		{ "tcp_syn", false }, { "tcp_established", false },
		{ "tcp_closing", false }, { "udp", false }, { NULL, false },
	};
#define F(f) offsetof(struct config_flows, f)
	static const struct uint_key uints[] = {
		{ "capacity", F(capacity), 1024, CONFIG_FLOWS_CAPACITY_MAX },
		{ "shared_capacity", F(shared_capacity), 1024, 1u << 30 },
		{ "insert_rate", F(insert_rate), 0, UINT32_MAX },
		{ "refresh_interval", F(refresh_interval), 1, 86400 },
	};
#undef F
#define F(f) offsetof(struct config_timeouts, f)
	static const struct uint_key timeout_uints[] = {
		{ "tcp_syn", F(tcp_syn), 1, 604800 },
		{ "tcp_established", F(tcp_established), 1, 604800 },
		{ "tcp_closing", F(tcp_closing), 1, 604800 },
		{ "udp", F(udp), 1, 604800 },
	};
#undef F
	const config_setting_t *group, *timeouts = NULL;
	int rc;

	rc = read_group(p, root, "", "flows", &group);
	if (rc < 0 || group == NULL)
		return rc;
	rc = check_keys(p, group, "in flows", keys);
	if (rc == 0)
		rc = read_uints(p, group, "flows: ", uints, ARRAY_LEN(uints), &cfg->flows);
	if (rc == 0)
		rc = read_group(p, group, "flows: ", "timeouts", &timeouts);
	if (rc < 0 || timeouts == NULL)
		return rc;
	rc = check_keys(p, timeouts, "in flows.timeouts", timeout_keys);
	if (rc == 0)
		rc = read_uints(p, timeouts, "flows.timeouts: ", timeout_uints,
				ARRAY_LEN(timeout_uints), &cfg->flows.timeouts);
	return rc;
}

static int
parse_sync(const struct parser *p, const config_setting_t *root,
	   struct config *cfg)
{
	static const struct key keys[] = {
		{ "max_batch_bytes", false }, { "max_batch_delay_ms", false },
		{ "queue_entries", false }, { NULL, false },
	};
#define F(f) offsetof(struct config_sync, f)
	static const struct uint_key uints[] = {
		{ "max_batch_bytes", F(max_batch_bytes), 512, 65536 },
		{ "max_batch_delay_ms", F(max_batch_delay_ms), 1, 1000 },
		{ "queue_entries", F(queue_entries), 64, 1u << 24 },
	};
#undef F
	const config_setting_t *group;
	int rc;

	rc = read_group(p, root, "", "sync", &group);
	if (rc < 0 || group == NULL)
		return rc;
	rc = check_keys(p, group, "in sync", keys);
	if (rc == 0)
		rc = read_uints(p, group, "sync: ", uints, ARRAY_LEN(uints), &cfg->sync);
	return rc;
}

/* bfd.peers: a list or array of 1..CONFIG_BFD_PEERS_MAX address strings. */
static int
parse_bfd_peers(const struct parser *p, const config_setting_t *group,
		struct config_bfd *bfd)
{
	const config_setting_t *list = config_setting_get_member(group, "peers");
	int n = config_setting_length(list);

	if (!config_setting_is_list(list) && !config_setting_is_array(list))
		return parse_fail(p, list, "bfd: 'peers' must be a list of addresses ( \"...\", ... )");
	if (n == 0)
		return parse_fail(p, list, "bfd: 'peers' needs at least one address");
	if (n > CONFIG_BFD_PEERS_MAX)
		return parse_fail(p, list, "bfd: too many peers (max %d)", CONFIG_BFD_PEERS_MAX);
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
		int rc;

		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return parse_fail(p, e, "bfd: each peer must be an address string");
		rc = parse_addr(p, e, "bfd: ", "peer", config_setting_get_string(e), 0,
				&bfd->peers[i]);
		if (rc < 0)
			return rc;
		bfd->peer_lines[i] = (int)config_setting_source_line(e);
		bfd->n_peers++;
	}
	return 0;
}

/* bfd.auth: key_id and key, both required. */
static int
parse_bfd_auth(const struct parser *p, const config_setting_t *group,
	       struct config_bfd *bfd)
{
	static const struct key keys[] = {
		{ "key_id", true }, { "key", true }, { NULL, false },
	};
	const config_setting_t *s = NULL;
	const char *key = NULL;
	uint32_t key_id = 0;
	int rc;

	rc = check_keys(p, group, "in bfd.auth", keys);
	if (rc == 0)
		rc = read_uint(p, group, "bfd.auth: ", "key_id", 0, UINT8_MAX, &key_id);
	if (rc == 0)
		rc = read_string(p, group, "bfd.auth: ", "key", &key, &s);
	if (rc < 0)
		return rc;
	if (strlen(key) == 0 || strlen(key) > CONFIG_BFD_KEY_MAX)
		return parse_fail(p, s, "bfd.auth: key must have 1..%u bytes (RFC 5880 4.4), not %zu",
				  CONFIG_BFD_KEY_MAX, strlen(key));
	bfd->has_auth = true;
	bfd->key_id = (uint8_t)key_id;
	bfd->key_len = (uint32_t)strlen(key);
	memcpy(bfd->key, key, bfd->key_len);
	return 0;
}

static int
parse_bfd(const struct parser *p, const config_setting_t *root, struct config *cfg)
{
	static const struct key keys[] = {
		{ "peers", true }, { "interval_ms", false }, { "multiplier", false },
		{ "auth", false }, { NULL, false },
	};
	struct config_bfd *bfd = &cfg->bfd;
	const config_setting_t *group, *auth = NULL;
	int rc;

	rc = read_group(p, root, "", "bfd", &group);
	if (rc < 0 || group == NULL)
		return rc;
	bfd->line = (int)config_setting_source_line(group);
	rc = check_keys(p, group, "in bfd", keys);
	if (rc == 0)
		rc = read_uint(p, group, "bfd: ", "interval_ms", CONFIG_BFD_INTERVAL_MS_MIN,
			       CONFIG_BFD_INTERVAL_MS_MAX, &bfd->interval_ms);
	if (rc == 0)
		rc = read_uint(p, group, "bfd: ", "multiplier", 1, CONFIG_BFD_MULTIPLIER_MAX,
			       &bfd->multiplier);
	if (rc == 0)
		rc = parse_bfd_peers(p, group, bfd);
	if (rc == 0)
		rc = read_group(p, group, "bfd: ", "auth", &auth);
	if (rc == 0 && auth != NULL)
		rc = parse_bfd_auth(p, auth, bfd);
	return rc;
}

bool
config_addr_is_loopback(const struct config_addr *a)
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };

	if (a->family == AF_INET)
		return a->bytes[0] == 127;
	return a->family == AF_INET6 && memcmp(a->bytes, v6_loopback, 16) == 0;
}

/* "ADDR:PORT" or "[ADDR6]:PORT"; the unspecified address listens on all. */
static int
parse_listen(const struct parser *p, const config_setting_t *s, const char *v,
	     struct config_listen *out)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(v, ':');
	const char *text = v, *port_text;
	bool bracketed = v[0] == '[';
	size_t host_len;
	char *end;
	unsigned long port;

	memset(out, 0, sizeof(*out));
	if (colon == NULL)
		return parse_fail(p, s, "monitor: listen '%s' must be ADDRESS:PORT or [IPV6]:PORT",
				  v);
	host_len = (size_t)(colon - v);
	port_text = colon + 1;
	if (bracketed) {
		if (host_len < 2 || v[host_len - 1] != ']')
			return parse_fail(p, s, "monitor: listen '%s': an IPv6 address goes in [ ]",
					  text);
		v++;
		host_len -= 2;
	}
	if (host_len == 0 || host_len >= sizeof(host))
		return parse_fail(p, s, "monitor: listen: bad address in '%s'", text);
	memcpy(host, v, host_len);
	host[host_len] = '\0';
	if (!bracketed && inet_pton(AF_INET, host, &out->addr.v4) == 1)
		out->addr.family = AF_INET;
	else if (bracketed && inet_pton(AF_INET6, host, &out->addr.v6) == 1)
		out->addr.family = AF_INET6;
	else
		return parse_fail(p, s, "monitor: listen: bad address '%s'%s", host,
				  strchr(host, ':') != NULL ? " (an IPv6 address goes in [ ])" : "");
	if ((out->addr.family == AF_INET && out->addr.bytes[0] >= 224) ||
	    (out->addr.family == AF_INET6 && out->addr.bytes[0] == 0xff))
		return parse_fail(p, s, "monitor: listen: %s is a multicast address", host);
	errno = 0;
	port = strtoul(port_text, &end, 10);
	if (port_text[0] < '0' || port_text[0] > '9' || *end != '\0' || errno != 0 ||
	    port == 0 || port > UINT16_MAX)
		return parse_fail(p, s, "monitor: listen '%s': port must be 1..65535", text);
	out->port = (uint16_t)port;
	out->line = (int)config_setting_source_line(s);
	return 0;
}

static int
parse_monitor_listen(const struct parser *p, const config_setting_t *group,
		     struct config_monitor *m)
{
	const config_setting_t *list = config_setting_get_member(group, "listen");
	int n = config_setting_length(list);

	if (!config_setting_is_list(list) && !config_setting_is_array(list))
		return parse_fail(p, list, "monitor: 'listen' must be a list ( \"ADDRESS:PORT\", ... )");
	if (n == 0)
		return parse_fail(p, list, "monitor: 'listen' needs at least one address");
	if (n > CONFIG_MONITOR_LISTEN_MAX)
		return parse_fail(p, list, "monitor: too many listeners (max %d)",
				  CONFIG_MONITOR_LISTEN_MAX);
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
		struct config_listen *l = &m->listen[i];
		int rc;

		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return parse_fail(p, e, "monitor: each listener must be an \"ADDRESS:PORT\" string");
		rc = parse_listen(p, e, config_setting_get_string(e), l);
		if (rc < 0)
			return rc;
		for (int j = 0; j < i; j++)
			if (m->listen[j].port == l->port &&
			    m->listen[j].addr.family == l->addr.family &&
			    memcmp(m->listen[j].addr.bytes, l->addr.bytes, 16) == 0)
				return parse_fail(p, e, "monitor: listener '%s' given twice",
						  config_setting_get_string(e));
		m->n_listen++;
	}
	return 0;
}

/* An absolute path key of group into out if present. */
static int
read_path(const struct parser *p, const config_setting_t *group,
	  const char *ctx, const char *key, char out[CONFIG_FILE_PATH_MAX])
{
	const config_setting_t *s = NULL;
	const char *v = NULL;
	int rc = read_string(p, group, ctx, key, &v, &s);

	if (rc < 0 || v == NULL)
		return rc;
	if (v[0] != '/' || strlen(v) >= CONFIG_FILE_PATH_MAX)
		return parse_fail(p, s, "%s%s must be an absolute path of at most %d characters",
				  ctx, key, CONFIG_FILE_PATH_MAX - 1);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

static int
parse_monitor(const struct parser *p, const config_setting_t *root, struct config *cfg)
{
	static const struct key keys[] = {
		{ "listen", true }, { "tls", false }, { "tls_cert", false },
		{ "tls_key", false }, { "users_file", false }, { "metrics_auth", false },
		{ "max_connections", false }, { "timeout_s", false }, { NULL, false },
	};
	struct config_monitor *m = &cfg->monitor;
	const config_setting_t *group;
	int rc;

	rc = read_group(p, root, "", "monitor", &group);
	if (rc < 0 || group == NULL)
		return rc;
	m->present = true;
	m->line = (int)config_setting_source_line(group);
	rc = check_keys(p, group, "in monitor", keys);
	if (rc == 0)
		rc = parse_monitor_listen(p, group, m);
	if (rc == 0)
		rc = read_bool(p, group, "monitor: ", "tls", &m->tls);
	if (rc == 0)
		rc = read_path(p, group, "monitor: ", "tls_cert", m->tls_cert);
	if (rc == 0)
		rc = read_path(p, group, "monitor: ", "tls_key", m->tls_key);
	if (rc == 0)
		rc = read_path(p, group, "monitor: ", "users_file", m->users_file);
	if (rc == 0)
		rc = read_bool(p, group, "monitor: ", "metrics_auth", &m->metrics_auth);
	if (rc == 0)
		rc = read_uint(p, group, "monitor: ", "max_connections", 1,
			       CONFIG_MONITOR_CONNECTIONS_MAX, &m->max_connections);
	if (rc == 0)
		rc = read_uint(p, group, "monitor: ", "timeout_s", 1,
			       CONFIG_MONITOR_TIMEOUT_S_MAX, &m->timeout_s);
	if (rc < 0)
		return rc;
	if (m->tls && (m->tls_cert[0] == '\0' || m->tls_key[0] == '\0'))
		return parse_fail(p, group, "monitor: TLS needs tls_cert and tls_key "
				  "(PEM files; plain HTTP, tls = false, only on loopback)");
	if (!m->tls && (m->tls_cert[0] != '\0' || m->tls_key[0] != '\0'))
		return parse_fail(p, group, "monitor: tls_cert and tls_key given with tls = false");
	for (uint32_t i = 0; i < m->n_listen && !m->tls; i++) {
		char buf[INET6_ADDRSTRLEN];

		if (!config_addr_is_loopback(&m->listen[i].addr))
			return config_errorf(p->err, p->errlen, p->name, m->listen[i].line,
					     "monitor: plain HTTP (tls = false) only on loopback, "
					     "and %s is not: passwords would cross the network in the clear",
					     config_addr_str(&m->listen[i].addr, buf, sizeof(buf)));
	}
	return 0;
}

static int
read_http_path(const struct parser *p, const config_setting_t *group,
	       const char *ctx, char out[CONFIG_PATH_MAX])
{
	const config_setting_t *s = NULL;
	const char *v = NULL;
	int rc = read_string(p, group, ctx, "http_path", &v, &s);

	if (rc < 0 || v == NULL)
		return rc;
	if (v[0] != '/' || strlen(v) >= CONFIG_PATH_MAX)
		return parse_fail(p, s, "%shttp_path must start with '/' and have at most %d characters",
				  ctx, CONFIG_PATH_MAX - 1);
	for (const char *c = v; *c != '\0'; c++)
		if (*c <= ' ' || *c >= 0x7f)
			return parse_fail(p, s, "%shttp_path must not contain spaces or control characters",
					  ctx);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/*
 * A health group over *h: the keys present replace the values in h (the
 * defaults, or for a VIP the top-level health section).
 */
static int
parse_health(const struct parser *p, const config_setting_t *group,
	     const char *ctx, struct config_health *h)
{
	static const struct key keys[] = {
		{ "type", false }, { "port", false }, { "interval_ms", false },
		{ "timeout_ms", false }, { "rise", false }, { "fall", false },
		{ "http_path", false }, { NULL, false },
	};
#define F(f) offsetof(struct config_health, f)
	static const struct uint_key uints[] = {
		{ "interval_ms", F(interval_ms), 100, 3600000 },
		{ "timeout_ms", F(timeout_ms), 1, 3600000 },
		{ "rise", F(rise), 1, 100 },
		{ "fall", F(fall), 1, 100 },
	};
#undef F
	uint32_t port = h->port;
	int type = (int)h->type;
	int rc;

	rc = check_keys(p, group, "in health", keys);
	if (rc == 0)
		rc = read_enum(p, group, ctx, "type", config_health_type_names,
			       CONFIG_HEALTH_MAX, &type);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "port", 0, 65535, &port);
	if (rc == 0)
		rc = read_uints(p, group, ctx, uints, ARRAY_LEN(uints), h);
	if (rc == 0)
		rc = read_http_path(p, group, ctx, h->http_path);
	if (rc < 0)
		return rc;
	h->type = (enum config_health_type)type;
	h->port = (uint16_t)port;
	if (h->timeout_ms >= h->interval_ms)
		return parse_fail(p, group, "%stimeout_ms %u must be less than interval_ms %u",
				  ctx, h->timeout_ms, h->interval_ms);
	return 0;
}

static bool
is_prime(uint32_t n)
{
	if (n < 2)
		return false;
	if (n % 2 == 0)
		return n == 2;
	for (uint32_t d = 3; d <= n / d; d += 2)
		if (n % d == 0)
			return false;
	return true;
}

static int
parse_backend(const struct parser *p, const config_setting_t *group,
	      const char *ctx, struct config_backend *b)
{
	static const struct key keys[] = {
		{ "address", true }, { "weight", false }, { "mac", false },
		{ NULL, false },
	};
	int rc;

	b->line = (int)config_setting_source_line(group);
	b->weight = 1;
	rc = check_keys(p, group, "in backend", keys);
	if (rc == 0)
		rc = read_addr(p, group, ctx, "address", 0, &b->addr);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "weight", 0, CONFIG_WEIGHT_MAX, &b->weight);
	if (rc == 0)
		rc = read_mac(p, group, ctx, "mac", b->mac, &b->has_mac);
	return rc;
}

static int
parse_backends(const struct parser *p, const config_setting_t *group,
	       const char *ctx, struct config_vip *vip)
{
	const config_setting_t *list;
	int rc = read_list(p, group, ctx, "backends", &list);
	int n;

	if (rc < 0)
		return rc;
	n = config_setting_length(list);
	if (n == 0)
		return parse_fail(p, list, "%s'backends' needs at least one backend", ctx);
	if (n > CONFIG_BACKENDS_MAX)
		return parse_fail(p, list, "%stoo many backends (max %d)", ctx,
				  CONFIG_BACKENDS_MAX);
	vip->backends = calloc((size_t)n, sizeof(*vip->backends));
	if (vip->backends == NULL)
		return parse_fail(p, list, "out of memory");
	vip->n_backends = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		rc = parse_backend(p, config_setting_get_elem(list, (unsigned)i), ctx,
				   &vip->backends[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The keys of a VIP that take a single value, after its name. */
static int
parse_vip_values(const struct parser *p, const config_setting_t *group,
		 const char *ctx, struct config_vip *vip)
{
	const config_setting_t *s = NULL;
	uint32_t port = 0;
	int proto = 0, encap = 0, hash = (int)vip->hash;
	int rc;

	rc = read_addr(p, group, ctx, "address", 0, &vip->addr);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "port", 0, 65535, &port);
	if (rc == 0)
		rc = read_enum(p, group, ctx, "protocol", config_proto_names,
			       CONFIG_PROTO_MAX, &proto);
	if (rc == 0)
		rc = read_enum(p, group, ctx, "encap", config_encap_names,
			       CONFIG_ENCAP_MAX, &encap);
	if (rc == 0)
		rc = read_enum(p, group, ctx, "hash", config_hash_mode_names,
			       CONFIG_HASH_MAX, &hash);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "table_size", 1, CONFIG_TABLE_SIZE_MAX,
			       &vip->table_size);
	if (rc == 0)
		rc = read_name(p, group, ctx, "sync_group", vip->sync_group);
	if (rc == 0)
		rc = read_uint(p, group, ctx, "sync_after_packets", 0, UINT32_MAX,
			       &vip->sync_after_packets);
	if (rc < 0)
		return rc;
	vip->port = (uint16_t)port;
	vip->proto = (enum config_proto)proto;
	vip->encap = (enum config_encap)encap;
	vip->hash = (enum config_hash_mode)hash;
	s = config_setting_get_member(group, "table_size");
	if (!is_prime(vip->table_size))
		return parse_fail(p, s, "%stable_size %u is not prime", ctx, vip->table_size);
	return 0;
}

static int
parse_vip(const struct parser *p, const config_setting_t *group,
	  const struct config *cfg, struct config_vip *vip)
{
	static const struct key keys[] = {
		{ "name", true }, { "address", true }, { "port", true },
		{ "protocol", true }, { "encap", true }, { "hash", false },
		{ "table_size", false }, { "sync_group", false },
		{ "sync_after_packets", false }, { "health", false },
		{ "backends", true }, { NULL, false },
	};
	const config_setting_t *health;
	char ctx[CONTEXT_MAX], health_ctx[CONTEXT_MAX];
	int rc;

	vip->line = (int)config_setting_source_line(group);
	vip->hash = CONFIG_HASH_5TUPLE;
	vip->table_size = CONFIG_TABLE_SIZE_DEFAULT;
	strcpy(vip->sync_group, "default");
	vip->health = cfg->health;
	rc = check_keys(p, group, "in vip", keys);
	if (rc == 0)
		rc = read_name(p, group, "vip: ", "name", vip->name);
	if (rc < 0)
		return rc;
	snprintf(ctx, sizeof(ctx), "vip '%s': ", vip->name);
	snprintf(health_ctx, sizeof(health_ctx), "vip '%s': health: ", vip->name);
	rc = parse_vip_values(p, group, ctx, vip);
	if (rc == 0)
		rc = read_group(p, group, ctx, "health", &health);
	if (rc == 0 && health != NULL)
		rc = parse_health(p, health, health_ctx, &vip->health);
	if (rc == 0)
		rc = parse_backends(p, group, ctx, vip);
	return rc;
}

static int
parse_vips(const struct parser *p, const config_setting_t *root,
	   struct config *cfg)
{
	const config_setting_t *list;
	int rc = read_list(p, root, "", "vips", &list);
	int n;

	if (rc < 0)
		return rc;
	n = config_setting_length(list);
	if (n == 0)
		return parse_fail(p, list, "'vips' needs at least one vip");
	if (n > CONFIG_VIPS_MAX)
		return parse_fail(p, list, "too many vips (max %d)", CONFIG_VIPS_MAX);
	cfg->vips = calloc((size_t)n, sizeof(*cfg->vips));
	if (cfg->vips == NULL)
		return parse_fail(p, list, "out of memory");
	cfg->n_vips = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		rc = parse_vip(p, config_setting_get_elem(list, (unsigned)i), cfg,
			       &cfg->vips[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void
config_defaults(struct config *cfg)
{
	cfg->priority = 100;
	cfg->mode = CONFIG_CLUSTER_ACTIVE_PASSIVE;
	cfg->lease_ms = 1000;
	cfg->hook_timeout_ms = 10000;
	cfg->flows = (struct config_flows){
		.capacity = 1048576,
		.shared_capacity = 4194304,
		.insert_rate = 1000000,
		.refresh_interval = 60,
		.timeouts = { .tcp_syn = 10, .tcp_established = 900,
			      .tcp_closing = 10, .udp = 60 },
	};
	cfg->sync = (struct config_sync){
		.max_batch_bytes = 8192,
		.max_batch_delay_ms = 1,
		.queue_entries = 65536,
	};
	cfg->health = (struct config_health){
		.type = CONFIG_HEALTH_TCP,
		.port = 0,
		.interval_ms = 2000,
		.timeout_ms = 1000,
		.rise = 2,
		.fall = 3,
		.http_path = "/",
	};
	cfg->bfd.interval_ms = CONFIG_BFD_INTERVAL_MS_DEFAULT;
	cfg->bfd.multiplier = CONFIG_BFD_MULTIPLIER_DEFAULT;
	cfg->monitor.tls = true;
	cfg->monitor.metrics_auth = true;
	cfg->monitor.max_connections = CONFIG_MONITOR_CONNECTIONS_DEFAULT;
	cfg->monitor.timeout_s = CONFIG_MONITOR_TIMEOUT_S_DEFAULT;
	snprintf(cfg->monitor.users_file, sizeof(cfg->monitor.users_file), "%s",
		 CONFIG_MONITOR_USERS_FILE_DEFAULT);
}

static int
parse_root(const struct parser *p, const config_setting_t *root,
	   struct config *cfg)
{
	static const struct key keys[] = {
		{ "cluster", true }, { "node", true }, { "ports", true },
		{ "flows", false }, { "sync", false }, { "health", false },
		{ "bfd", false }, { "monitor", false }, { "vips", true },
		{ NULL, false },
	};
	const config_setting_t *health;
	int rc;

	rc = check_keys(p, root, "at top level", keys);
	if (rc == 0)
		rc = parse_cluster(p, root, cfg);
	if (rc == 0)
		rc = parse_node(p, root, cfg);
	if (rc == 0)
		rc = parse_ports(p, root, cfg);
	if (rc == 0)
		rc = parse_flows(p, root, cfg);
	if (rc == 0)
		rc = parse_sync(p, root, cfg);
	if (rc == 0)
		rc = parse_bfd(p, root, cfg);
	if (rc == 0)
		rc = parse_monitor(p, root, cfg);
	if (rc == 0)
		rc = read_group(p, root, "", "health", &health);
	if (rc == 0 && health != NULL)
		rc = parse_health(p, health, "health: ", &cfg->health);
	if (rc == 0)
		rc = parse_vips(p, root, cfg);
	return rc;
}

/*
 * Past end_mark (a string's closing quote, a comment's end), counting lines;
 * an end_mark of "\n" stops before the newline.
 */
static const char *
scan_skip(const char *s, const char *end_mark, bool escapes, int *line)
{
	size_t len = strlen(end_mark);

	while (*s != '\0' && strncmp(s, end_mark, len) != 0) {
		if (escapes && *s == '\\' && s[1] != '\0' && s[1] != '\n')
			s++;
		else if (*s == '\n')
			(*line)++;
		s++;
	}
	if (*s == '\0' || end_mark[0] == '\n')
		return s;
	return s + len;
}

static bool
scan_is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*';
}

/*
 * One number token at *s, advancing *s past it. Returns false for a plain
 * (no L suffix) integer that does not fit in 32 bits.
 */
static bool
scan_number(const char **s)
{
	const char *start = *s, *t = *s;
	bool hex = false;
	long long v;

	if (*t == '+' || *t == '-' || *t == '.')
		t++;
	if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
		hex = true;
		t += 2;
		while (hex_digit(*t) >= 0)
			t++;
	} else {
		while (*t >= '0' && *t <= '9')
			t++;
	}
	if (*start == '.' || *t == 'L' ||
	    (!hex && (*t == '.' || *t == 'e' || *t == 'E'))) {
		while (*t != '\0' && strchr("0123456789.eEL+-", *t) != NULL)
			t++;
		*s = t;
		return true;            /* a float or a 64-bit integer */
	}
	*s = t;
	errno = 0;
	v = strtoll(start, NULL, hex ? 16 : 10);
	return errno == 0 && v >= INT32_MIN && v <= INT32_MAX;
}

/*
 * libconfig 1.5 reads a plain integer with atoi()/strtoul() into an int, so
 * "port = 4294967376;" silently becomes 80. Find such literals before the
 * parse, outside strings and comments. Also refuse @include: one file
 * describes a node, and every error names that file.
 */
static int
scan_text(const struct parser *p, const char *text)
{
	const char *s = text, *tok;
	int line = 1;

	while (*s != '\0') {
		tok = s;
		if (*s == '\n') {
			line++;
			s++;
		} else if (*s == '"') {
			s = scan_skip(s + 1, "\"", true, &line);
		} else if (*s == '#' || strncmp(s, "//", 2) == 0) {
			s = scan_skip(s, "\n", false, &line);
		} else if (strncmp(s, "/*", 2) == 0) {
			s = scan_skip(s + 2, "*/", false, &line);
		} else if (strncmp(s, "@include", 8) == 0) {
			return config_errorf(p->err, p->errlen, p->name, line,
					     "@include is not supported (one file describes a node)");
		} else if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '*') {
			while (scan_is_name_char(*s))
				s++;
		} else if ((*s >= '0' && *s <= '9') || *s == '.' ||
			   ((*s == '-' || *s == '+') && s[1] >= '0' && s[1] <= '9')) {
			if (!scan_number(&s))
				return config_errorf(p->err, p->errlen, p->name, line,
						     "integer %.*s does not fit in 32 bits (write %.*sL for a 64-bit value)",
						     (int)(s - tok), tok, (int)(s - tok), tok);
		} else {
			s++;
		}
	}
	return 0;
}

/* Parse text into a new config; NULL and err set on any error. */
static struct config *
config_parse(const char *text, const char *name, char *err, size_t errlen)
{
	struct parser p = { .name = name, .err = err, .errlen = errlen };
	struct config *cfg = NULL;
	config_t lc;
	int rc;

	config_init(&lc);
	rc = scan_text(&p, text);
	if (rc < 0)
		goto fail;
	if (config_read_string(&lc, text) != CONFIG_TRUE) {
		rc = config_errorf(err, errlen, name, config_error_line(&lc), "%s",
				   config_error_text(&lc));
		goto fail;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		rc = config_errorf(err, errlen, name, 0, "out of memory");
		goto fail;
	}
	snprintf(cfg->file, sizeof(cfg->file), "%s", name);
	config_defaults(cfg);
	rc = parse_root(&p, config_root_setting(&lc), cfg);
	if (rc == 0)
		rc = config_check(cfg, name, err, errlen);
	if (rc < 0)
		goto fail;
	config_destroy(&lc);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	return cfg;
fail:
	config_free(cfg);
	config_destroy(&lc);
	return NULL;
}

struct config *
config_load_string(const char *text, const char *name, char *err,
		   size_t errlen)
{
	if (name == NULL)
		name = "(string)";
	if (text == NULL) {
		config_errorf(err, errlen, name, 0, "no text");
		return NULL;
	}
	return config_parse(text, name, err, errlen);
}

/* The whole file at path as a NUL-terminated string; NULL and err set on error. */
static char *
config_read_text(const char *path, char *err, size_t errlen)
{
	size_t len = 0, size = 0;
	char *text = NULL, *bigger;
	FILE *f;

	f = fopen(path, "r");
	if (f == NULL)
		goto fail_errno;
	for (;;) {
		if (len + 1 >= size) {
			size = size == 0 ? 4096 : 2 * size;
			if (size > CONFIG_FILE_SIZE_MAX + 1) {
				config_errorf(err, errlen, path, 0,
					      "file too large (max %u bytes)", CONFIG_FILE_SIZE_MAX);
				goto fail;
			}
			bigger = realloc(text, size);
			if (bigger == NULL) {
				config_errorf(err, errlen, path, 0, "out of memory");
				goto fail;
			}
			text = bigger;
		}
		len += fread(text + len, 1, size - 1 - len, f);
		if (ferror(f))
			goto fail_errno;
		if (feof(f))
			break;
	}
	text[len] = '\0';
	if (strlen(text) != len) {
		config_errorf(err, errlen, path, 0, "file contains a NUL byte");
		goto fail;
	}
	fclose(f);
	return text;
fail_errno:
	config_errorf(err, errlen, path, 0, "cannot open: %s", strerror(errno));
fail:
	free(text);
	if (f != NULL)
		fclose(f);
	return NULL;
}

struct config *
config_load(const char *path, char *err, size_t errlen)
{
	struct config *cfg;
	char *text;

	text = config_read_text(path, err, errlen);
	if (text == NULL)
		return NULL;
	cfg = config_parse(text, path, err, errlen);
	free(text);
	return cfg;
}

void
config_free(struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		free(cfg->vips[i].backends);
	free(cfg->vips);
	free(cfg);
}

const char *
config_addr_str(const struct config_addr *addr, char *buf, size_t len)
{
	if (len == 0)
		return buf;
	if ((addr->family != AF_INET && addr->family != AF_INET6) ||
	    inet_ntop(addr->family, addr->bytes, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

const struct config_vip *
config_vip_find(const struct config *cfg, const char *name)
{
	if (cfg == NULL || name == NULL)
		return NULL;
	for (uint32_t i = 0; i < cfg->n_vips; i++)
		if (strcmp(cfg->vips[i].name, name) == 0)
			return &cfg->vips[i];
	return NULL;
}
