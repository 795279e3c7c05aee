/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Check suite of config/: the example file loads, defaults and inheritance
 * apply, and every kind of bad input is refused with "file:line: reason".
 */
#include "config/config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#define EXAMPLE "../../config/maglb.conf.example"

/* Lines 1..3 of most texts below; "vips = (" is then line 4. */
#define CLUSTER "cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\"; };\n"
#define NODE "node = { id = 1; address = \"198.18.0.10\"; address6 = \"2001:db8::10\"; };\n"
#define PORTS "ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
#define HEAD CLUSTER NODE PORTS

/* One line: the scalar keys of a VIP, group left open. */
#define VIP(name, addr, port, proto, encap) \
	"  { name = \"" name "\"; address = \"" addr "\"; port = " port \
	"; protocol = \"" proto "\"; encap = \"" encap "\";\n"

/* One line: two IPv4 backends, closing the VIP group (no comma, no newline). */
#define BACKENDS4 \
	"    backends = ( { address = \"198.18.2.11\"; }, { address = \"198.18.2.12\"; } ); }"

/* Lines 4..7: one good IPv4 VIP. */
#define WEB4_VIPS \
	"vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre") BACKENDS4 "\n);\n"

static struct config *
load_ok(const char *text)
{
	char err[CONFIG_ERROR_MAX] = "untouched";
	struct config *cfg = config_load_string(text, "t.conf", err, sizeof(err));

	ck_assert_msg(cfg != NULL, "unexpected error: %s", err);
	ck_assert_str_eq(err, "");
	return cfg;
}

/* text must be refused with an error starting with where, containing reason. */
static void
expect_error(const char *text, const char *where, const char *reason)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg = config_load_string(text, "t.conf", err, sizeof(err));

	ck_assert_msg(cfg == NULL, "accepted, expected '%s%s'", where, reason);
	ck_assert_msg(strncmp(err, where, strlen(where)) == 0,
		      "error '%s' does not start with '%s'", err, where);
	ck_assert_msg(strstr(err, reason) != NULL,
		      "error '%s' does not contain '%s'", err, reason);
}

/* HEAD, then n IPv4 backends in one VIP with the given table size. */
static char *
text_with_backends(unsigned n, unsigned table_size)
{
	size_t size = 1024 + (size_t)n * 48;
	char *text = malloc(size);
	size_t len;

	ck_assert_ptr_nonnull(text);
	len = (size_t)snprintf(text, size, HEAD "vips = (\n"
			       VIP("big", "198.18.1.1", "80", "tcp", "gre")
			       "    table_size = %u;\n    backends = (\n", table_size);
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, size - len,
					"%s{ address = \"198.18.%u.%u\"; }\n",
					i > 0 ? "," : "", 2 + i / 250, 1 + i % 250);
	snprintf(text + len, size - len, "); }\n);\n");
	return text;
}

/* ---- good input ---- */

START_TEST(test_example_loads)
{
	char err[CONFIG_ERROR_MAX] = "";
	char buf[INET6_ADDRSTRLEN];
	struct config *cfg = config_load(EXAMPLE, err, sizeof(err));
	const struct config_vip *web4, *dns6, *l2;

	ck_assert_msg(cfg != NULL, "example refused: %s", err);
	ck_assert_str_eq(cfg->file, EXAMPLE);
	ck_assert_uint_eq(cfg->hash_seed[0], 0x01);
	ck_assert_uint_eq(cfg->hash_seed[15], 0xef);
	ck_assert_uint_eq(cfg->node_id, 1);
	ck_assert_uint_eq(cfg->priority, 100);
	ck_assert(cfg->has_node_addr4 && cfg->has_node_addr6);
	ck_assert_uint_eq(cfg->n_ports, 1);
	ck_assert_str_eq(cfg->ports[0].device, "net_af_packet0,iface=lb0");
	ck_assert(cfg->ports[0].has_gateway4 && cfg->ports[0].has_gateway6);
	ck_assert_uint_eq(cfg->n_vips, 3);

	web4 = config_vip_find(cfg, "web4");
	ck_assert_ptr_nonnull(web4);
	ck_assert_int_eq(web4->addr.family, AF_INET);
	ck_assert_uint_eq(web4->port, 80);
	ck_assert_int_eq(web4->proto, CONFIG_PROTO_TCP);
	ck_assert_int_eq(web4->encap, CONFIG_ENCAP_GRE);
	ck_assert_uint_eq(web4->n_backends, 3);
	ck_assert_uint_eq(web4->backends[0].weight, 2);
	ck_assert_uint_eq(web4->backends[1].weight, 1);
	ck_assert_int_eq(web4->health.type, CONFIG_HEALTH_HTTP);
	ck_assert_str_eq(web4->health.http_path, "/healthz");

	dns6 = config_vip_find(cfg, "dns6");
	ck_assert_ptr_nonnull(dns6);
	ck_assert_int_eq(dns6->addr.family, AF_INET6);
	ck_assert_int_eq(dns6->proto, CONFIG_PROTO_UDP);
	ck_assert_int_eq(dns6->encap, CONFIG_ENCAP_IPIP);
	ck_assert_uint_eq(dns6->n_backends, 2);

	l2 = config_vip_find(cfg, "app4-l2");
	ck_assert_ptr_nonnull(l2);
	ck_assert_uint_eq(l2->port, 0);
	ck_assert_int_eq(l2->encap, CONFIG_ENCAP_L2);
	ck_assert_uint_eq(l2->n_backends, 3);
	for (uint32_t i = 0; i < l2->n_backends; i++)
		ck_assert(l2->backends[i].has_mac);
	ck_assert_uint_eq(l2->backends[2].mac[5], 0x23);
	ck_assert_str_eq(config_addr_str(&l2->backends[2].addr, buf, sizeof(buf)),
			 "198.18.0.23");
	config_free(cfg);
}
END_TEST

START_TEST(test_defaults_applied)
{
	struct config *cfg = load_ok(HEAD WEB4_VIPS);
	const struct config_vip *vip = &cfg->vips[0];

	ck_assert_uint_eq(cfg->priority, 100);
	ck_assert_int_eq(cfg->mode, CONFIG_CLUSTER_ACTIVE_PASSIVE);
	ck_assert(!cfg->preempt);
	ck_assert_uint_eq(cfg->lease_ms, 1000);
	ck_assert_str_eq(cfg->hooks_dir, "");
	ck_assert_uint_eq(cfg->hook_timeout_ms, 10000);
	ck_assert_uint_eq(cfg->ports[0].mtu, 1500);
	ck_assert(!cfg->ports[0].has_gateway4 && !cfg->ports[0].has_gateway6);
	ck_assert_uint_eq(cfg->flows.capacity, 1048576);
	ck_assert_uint_eq(cfg->flows.shared_capacity, 4194304);
	ck_assert_uint_eq(cfg->flows.insert_rate, 1000000);
	ck_assert_uint_eq(cfg->flows.refresh_interval, 60);
	ck_assert_uint_eq(cfg->flows.timeouts.tcp_syn, 10);
	ck_assert_uint_eq(cfg->flows.timeouts.tcp_established, 900);
	ck_assert_uint_eq(cfg->flows.timeouts.tcp_closing, 10);
	ck_assert_uint_eq(cfg->flows.timeouts.udp, 60);
	ck_assert_uint_eq(cfg->sync.max_batch_bytes, 8192);
	ck_assert_uint_eq(cfg->sync.max_batch_delay_ms, 1);
	ck_assert_uint_eq(cfg->sync.queue_entries, 65536);
	ck_assert_int_eq(cfg->health.type, CONFIG_HEALTH_TCP);
	ck_assert_uint_eq(cfg->health.port, 0);
	ck_assert_uint_eq(cfg->health.interval_ms, 2000);
	ck_assert_uint_eq(cfg->health.timeout_ms, 1000);
	ck_assert_uint_eq(cfg->health.rise, 2);
	ck_assert_uint_eq(cfg->health.fall, 3);
	ck_assert_str_eq(cfg->health.http_path, "/");
	ck_assert_int_eq(vip->hash, CONFIG_HASH_5TUPLE);
	ck_assert_uint_eq(vip->table_size, CONFIG_TABLE_SIZE_DEFAULT);
	ck_assert_str_eq(vip->sync_group, "default");
	ck_assert_uint_eq(vip->sync_after_packets, 0);
	ck_assert_uint_eq(vip->backends[0].weight, 1);
	ck_assert(!vip->backends[0].has_mac);
	ck_assert_int_eq(vip->line, 5);
	ck_assert_int_eq(vip->backends[1].line, 6);
	config_free(cfg);
}
END_TEST

START_TEST(test_sections_override_defaults)
{
	struct config *cfg = load_ok(HEAD
		"flows = { capacity = 2048; insert_rate = 0; timeouts = { udp = 30; }; };\n"
		"sync = { max_batch_bytes = 1400; };\n"
		WEB4_VIPS);

	ck_assert_uint_eq(cfg->flows.capacity, 2048);
	ck_assert_uint_eq(cfg->flows.insert_rate, 0);
	ck_assert_uint_eq(cfg->flows.shared_capacity, 4194304);
	ck_assert_uint_eq(cfg->flows.timeouts.udp, 30);
	ck_assert_uint_eq(cfg->flows.timeouts.tcp_established, 900);
	ck_assert_uint_eq(cfg->sync.max_batch_bytes, 1400);
	ck_assert_uint_eq(cfg->sync.max_batch_delay_ms, 1);
	config_free(cfg);
}
END_TEST

START_TEST(test_vip_health_inherits)
{
	struct config *cfg = load_ok(HEAD
		"health = { type = \"http\"; interval_ms = 5000; rise = 4; http_path = \"/ok\"; };\n"
		"vips = (\n"
		VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		"    health = { port = 8080; timeout_ms = 300; };\n"
		BACKENDS4 ",\n"
		VIP("web4b", "198.18.1.2", "80", "tcp", "gre")
		BACKENDS4 "\n);\n");
	const struct config_vip *a = config_vip_find(cfg, "web4");
	const struct config_vip *b = config_vip_find(cfg, "web4b");

	ck_assert_int_eq(a->health.type, CONFIG_HEALTH_HTTP);
	ck_assert_uint_eq(a->health.port, 8080);
	ck_assert_uint_eq(a->health.timeout_ms, 300);
	ck_assert_uint_eq(a->health.interval_ms, 5000);
	ck_assert_uint_eq(a->health.rise, 4);
	ck_assert_uint_eq(a->health.fall, 3);
	ck_assert_str_eq(a->health.http_path, "/ok");
	ck_assert_uint_eq(b->health.port, 0);
	ck_assert_uint_eq(b->health.timeout_ms, 1000);
	ck_assert_str_eq(b->health.http_path, "/ok");
	config_free(cfg);
}
END_TEST

START_TEST(test_ipv6_vip)
{
	char buf[INET6_ADDRSTRLEN];
	struct config *cfg = load_ok(HEAD "vips = (\n"
		VIP("web6", "2001:DB8:1:0:0:0:0:80", "443", "tcp", "gre")
		"    hash = \"client\"; table_size = 257;\n"
		"    backends = ( { address = \"2001:db8:2::11\"; weight = 0; } ); }\n);\n");
	const struct config_vip *vip = &cfg->vips[0];

	ck_assert_int_eq(vip->addr.family, AF_INET6);
	ck_assert_str_eq(config_addr_str(&vip->addr, buf, sizeof(buf)), "2001:db8:1::80");
	ck_assert_uint_eq(vip->port, 443);
	ck_assert_int_eq(vip->hash, CONFIG_HASH_CLIENT);
	ck_assert_uint_eq(vip->table_size, 257);
	ck_assert_uint_eq(vip->backends[0].weight, 0);
	ck_assert_str_eq(config_addr_str(&vip->backends[0].addr, buf, sizeof(buf)),
			 "2001:db8:2::11");
	config_free(cfg);
}
END_TEST

START_TEST(test_vip_find)
{
	struct config *cfg = load_ok(HEAD WEB4_VIPS);

	ck_assert_ptr_eq(config_vip_find(cfg, "web4"), &cfg->vips[0]);
	ck_assert_ptr_null(config_vip_find(cfg, "web"));
	ck_assert_ptr_null(config_vip_find(cfg, "web44"));
	ck_assert_ptr_null(config_vip_find(NULL, "web4"));
	config_free(cfg);
}
END_TEST

START_TEST(test_free_null)
{
	config_free(NULL);
}
END_TEST

START_TEST(test_int64_accepted)
{
	struct config *cfg = load_ok(
		"cluster = { hash_seed = \"0123456789ABCDEF0123456789abcdef\"; };\n"
		"node = { id = 4000000000L; address6 = \"2001:db8::10\"; };\n"
		"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
		"flows = { insert_rate = 4294967295L; };\n"
		"vips = (\n" VIP("l2", "198.18.1.1", "0x50", "tcp", "l2")
		"    health = { type = \"none\"; };\n"
		"    backends = ( { address = \"198.18.2.11\"; mac = \"02:AA:bb:00:00:01\"; } ); }\n);\n");

	ck_assert_uint_eq(cfg->node_id, 4000000000u);
	ck_assert_uint_eq(cfg->flows.insert_rate, 4294967295u);
	ck_assert_uint_eq(cfg->vips[0].port, 80);
	ck_assert_uint_eq(cfg->hash_seed[1], 0x23);
	ck_assert_uint_eq(cfg->vips[0].backends[0].mac[1], 0xaa);
	config_free(cfg);
}
END_TEST

/* ---- bad input: syntax, keys, types ---- */

START_TEST(test_syntax_error)
{
	expect_error(HEAD "vips = (\n  { name = ; }\n);\n", "t.conf:5: ", "syntax error");
	expect_error(HEAD "node = { id = 2; };\n" WEB4_VIPS, "t.conf:4: ", "duplicate setting");
}
END_TEST

START_TEST(test_unknown_key_top)
{
	expect_error(HEAD "\nbogus = 1;\n" WEB4_VIPS, "t.conf:5: ",
		     "unknown key 'bogus' at top level");
}
END_TEST

START_TEST(test_unknown_key_vip)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    prot = \"tcp\";\n" BACKENDS4 "\n);\n",
		     "t.conf:6: ", "unknown key 'prot' in vip");
}
END_TEST

START_TEST(test_unknown_key_backend)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    backends = (\n"
		     "      { address = \"198.18.2.11\"; },\n"
		     "      { address = \"198.18.2.12\"; wieght = 2; }\n"
		     "    ); }\n);\n",
		     "t.conf:8: ", "unknown key 'wieght' in backend");
}
END_TEST

START_TEST(test_unknown_key_section)
{
	expect_error(HEAD "flows = {\n  timeouts = { tcp = 5; };\n};\n" WEB4_VIPS,
		     "t.conf:5: ", "unknown key 'tcp' in flows.timeouts");
}
END_TEST

START_TEST(test_wrong_type)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "\"80\"", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "'port' must be an integer");
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    backends = ( { address = \"198.18.2.11\"; weight = 1.5; } ); }\n);\n",
		     "t.conf:6: ", "'weight' must be an integer");
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    sync_group = 7;\n" BACKENDS4 "\n);\n",
		     "t.conf:6: ", "'sync_group' must be a string");
	expect_error(HEAD "sync = ( );\n" WEB4_VIPS, "t.conf:4: ", "'sync' must be a group");
	expect_error(HEAD "vips = { };\n", "t.conf:4: ", "'vips' must be a list");
}
END_TEST

START_TEST(test_integer_wraps_refused)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "4294967376", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "4294967376 does not fit in 32 bits");
	/* The same digits in a string or a comment are no integer. */
	config_free(load_ok(HEAD "# 99999999999\n" WEB4_VIPS));
}
END_TEST

START_TEST(test_include_refused)
{
	expect_error(HEAD "@include \"/etc/maglb/other.conf\"\n" WEB4_VIPS,
		     "t.conf:4: ", "@include is not supported");
}
END_TEST

/* ---- bad input: values ---- */

START_TEST(test_bad_address)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.300.1", "80", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "bad address '198.18.300.1'");
	expect_error(HEAD "vips = (\n" VIP("web4", "224.0.0.1", "80", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "224.0.0.1 is not a unicast address");
}
END_TEST

START_TEST(test_node_address_family)
{
	expect_error(CLUSTER
		     "node = { id = 1;\n  address = \"2001:db8::10\"; };\n" PORTS WEB4_VIPS,
		     "t.conf:3: ", "node: 'address' must be an IPv4 address, not 2001:db8::10");
	expect_error(CLUSTER NODE "ports = ( { name = \"lan1\"; device = \"net_null1\";\n"
		     "  gateway6 = \"198.18.0.1\"; } );\n" WEB4_VIPS,
		     "t.conf:4: ", "port 'lan1': 'gateway6' must be an IPv6 address");
}
END_TEST

START_TEST(test_bad_mac)
{
	expect_error(HEAD "vips = (\n" VIP("l2", "198.18.1.1", "80", "tcp", "l2")
		     "    backends = ( { address = \"198.18.0.21\"; mac = \"02:00:00:00:21\"; } ); }\n);\n",
		     "t.conf:6: ", "bad MAC '02:00:00:00:21'");
	expect_error(HEAD "vips = (\n" VIP("l2", "198.18.1.1", "80", "tcp", "l2")
		     "    backends = ( { address = \"198.18.0.21\"; mac = \"01:00:5e:00:00:01\"; } ); }\n);\n",
		     "t.conf:6: ", "bad MAC '01:00:5e:00:00:01'");
}
END_TEST

START_TEST(test_port_out_of_range)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "70000", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "vip 'web4': port 70000 out of range 0..65535");
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "-1", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "port -1 out of range 0..65535");
}
END_TEST

START_TEST(test_weight_out_of_range)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    backends = ( { address = \"198.18.2.11\"; weight = 1001; } ); }\n);\n",
		     "t.conf:6: ", "weight 1001 out of range 0..1000");
}
END_TEST

START_TEST(test_section_range)
{
	expect_error(HEAD "flows = { capacity = 100; };\n" WEB4_VIPS,
		     "t.conf:4: ", "capacity 100 out of range 1024..");
	expect_error(HEAD "flows = { capacity = 67108865; };\n" WEB4_VIPS,
		     "t.conf:4: ", "capacity 67108865 out of range 1024..67108864");
	expect_error(HEAD "sync = {\n  max_batch_delay_ms = 0;\n};\n" WEB4_VIPS,
		     "t.conf:5: ", "max_batch_delay_ms 0 out of range 1..1000");
	expect_error(
		CLUSTER
		"node = { id = 1; address = \"198.18.0.10\"; };\n"
		"ports = ( { name = \"lan0\"; device = \"net_null0\";\n  mtu = 100; } );\n"
		WEB4_VIPS, "t.conf:4: ", "mtu 100 out of range 576..9702");
	expect_error(CLUSTER NODE
		     "ports = ( { name = \"lan0\"; device = \"net_null0\";\n  vlan = 4095; } );\n"
		     WEB4_VIPS, "t.conf:4: ", "vlan 4095 out of range 1..4094");
	expect_error(CLUSTER NODE
		     "ports = ( { name = \"lan0\"; device = \"net_null0\";\n  vlan = 0; } );\n"
		     WEB4_VIPS, "t.conf:4: ", "vlan 0 out of range 1..4094");
}
END_TEST

START_TEST(test_bad_hash_seed)
{
	expect_error("cluster = {\n  hash_seed = \"0123456789abcdef0123456789abcde\";\n};\n"
		     NODE PORTS WEB4_VIPS,
		     "t.conf:2: ", "bad hash_seed");
	expect_error("cluster = { hash_seed = \"0123456789abcdef0123456789abcdeg\"; };\n"
		     NODE PORTS WEB4_VIPS,
		     "t.conf:1: ", "exactly 32 hex digits");
}
END_TEST

START_TEST(test_bad_enum_names)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "sctp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "bad protocol 'sctp' (one of: tcp, udp)");
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "vxlan")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "bad encap 'vxlan' (one of: gre, ipip, l2)");
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    hash = \"4tuple\";\n" BACKENDS4 "\n);\n",
		     "t.conf:6: ", "bad hash '4tuple' (one of: 5tuple, client)");
	expect_error(HEAD "health = { type = \"icmp\"; };\n" WEB4_VIPS,
		     "t.conf:4: ", "bad type 'icmp' (one of: none, tcp, http)");
}
END_TEST

START_TEST(test_bad_name)
{
	expect_error(HEAD "vips = (\n" VIP("web 4", "198.18.1.1", "80", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "bad name 'web 4'");
	expect_error(HEAD "vips = (\n"
		     VIP("a-name-of-thirty-two-characters2", "198.18.1.1", "80", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ", "bad name 'a-name-of-thirty-two");
}
END_TEST

START_TEST(test_table_size_not_prime)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    table_size = 65536;\n" BACKENDS4 "\n);\n",
		     "t.conf:6: ", "vip 'web4': table_size 65536 is not prime");
}
END_TEST

START_TEST(test_table_size_over_max)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    table_size = 16777259;\n" BACKENDS4 "\n);\n",
		     "t.conf:6: ", "table_size 16777259 out of range 1..16777213");
}
END_TEST

START_TEST(test_table_size_too_small)
{
	char *text = text_with_backends(20, 101);

	expect_error(text, "t.conf:5: ",
		     "vip 'big': table_size 101 too small for 20 backends (needs at least 200)");
	free(text);
	text = text_with_backends(20, 211);
	config_free(load_ok(text));
	free(text);
}
END_TEST

START_TEST(test_too_many_backends)
{
	char *text = text_with_backends(CONFIG_BACKENDS_MAX + 1, 65537);

	expect_error(text, "t.conf:7: ", "too many backends (max 4096)");
	free(text);
}
END_TEST

START_TEST(test_health_timeout)
{
	expect_error(HEAD "health = {\n  interval_ms = 1000;\n};\n" WEB4_VIPS,
		     "t.conf:4: ", "health: timeout_ms 1000 must be less than interval_ms 1000");
	/* A VIP's timeout against the inherited interval. */
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    health = { timeout_ms = 2500; };\n" BACKENDS4 "\n);\n",
		     "t.conf:6: ", "vip 'web4': health: timeout_ms 2500 must be less than interval_ms 2000");
	expect_error(HEAD "health = { type = \"http\"; http_path = \"healthz\"; };\n" WEB4_VIPS,
		     "t.conf:4: ", "http_path must start with '/'");
}
END_TEST

START_TEST(test_all_ports_health_port)
{
	expect_error(HEAD "vips = (\n" VIP("any", "198.18.1.1", "0", "tcp", "gre")
		     BACKENDS4 "\n);\n", "t.conf:5: ",
		     "vip 'any': an all-ports vip (port 0) needs an explicit health port");
}
END_TEST

/* ---- bad input: required keys ---- */

START_TEST(test_missing_vip_address)
{
	expect_error(HEAD "vips = (\n"
		     "  { name = \"web4\"; port = 80; protocol = \"tcp\"; encap = \"gre\";\n"
		     BACKENDS4 "\n);\n", "t.conf:5: ", "missing required key 'address' in vip");
}
END_TEST

START_TEST(test_missing_backend_address)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    backends = (\n      { weight = 3; }\n    ); }\n);\n",
		     "t.conf:7: ", "missing required key 'address' in backend");
}
END_TEST

START_TEST(test_missing_section)
{
	expect_error(HEAD, "t.conf: ", "missing required key 'vips' at top level");
	expect_error(HEAD "vips = ( );\n", "t.conf:4: ", "'vips' needs at least one vip");
}
END_TEST

START_TEST(test_missing_node_keys)
{
	expect_error(CLUSTER
		     "node = {\n  address = \"198.18.0.10\";\n};\n" PORTS WEB4_VIPS,
		     "t.conf:2: ", "missing required key 'id' in node");
	expect_error(CLUSTER
		     "node = { id = 1; };\n" PORTS WEB4_VIPS,
		     "t.conf:2: ", "node needs 'address' or 'address6'");
}
END_TEST

START_TEST(test_missing_vip_encap)
{
	expect_error(HEAD "vips = (\n"
		     "  { name = \"web4\"; address = \"198.18.1.1\"; port = 80; protocol = \"tcp\";\n"
		     BACKENDS4 "\n);\n", "t.conf:5: ", "missing required key 'encap' in vip");
}
END_TEST

/* ---- bad input: the validation pass ---- */

START_TEST(test_duplicate_vip_name)
{
	expect_error(HEAD "vips = (\n"
		     VIP("web4", "198.18.1.1", "80", "tcp", "gre") BACKENDS4 ",\n"
		     VIP("web4", "198.18.1.2", "80", "tcp", "gre") BACKENDS4 "\n);\n",
		     "t.conf:7: ", "duplicate vip 'web4'");
}
END_TEST

START_TEST(test_duplicate_vip_address)
{
	expect_error(HEAD "vips = (\n"
		     VIP("web4", "198.18.1.1", "80", "tcp", "gre") BACKENDS4 ",\n"
		     VIP("web4-udp", "198.18.1.1", "80", "udp", "gre") BACKENDS4 ",\n"
		     VIP("web6", "198.18.1.1", "80", "tcp", "ipip") BACKENDS4 "\n);\n",
		     "t.conf:9: ",
		     "vip 'web6' duplicates the address, port and protocol of vip 'web4'");
}
END_TEST

START_TEST(test_backend_family)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "l2")
		     "    backends = (\n"
		     "      { address = \"198.18.2.11\"; mac = \"02:00:00:00:02:0b\"; },\n"
		     "      { address = \"2001:db8::1\"; mac = \"02:00:00:00:02:0c\"; }\n"
		     "    ); }\n);\n",
		     "t.conf:8: ", "vip 'web4': backend 2001:db8::1 is IPv6 but the VIP is IPv4");
}
END_TEST

/* Tunnels carry the other family (4in6, 6in4) when the node has its source. */
START_TEST(test_tunnel_other_family)
{
	char err[CONFIG_ERROR_MAX] = "";
	struct config *cfg = config_load_string(
		CLUSTER
		"node = { id = 1; address = \"198.18.0.10\"; address6 = \"2001:db8::10\"; };\n"
		"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
		"vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "ipip")
		"    backends = ( { address = \"2001:db8:2::11\"; },\n"
		"                 { address = \"198.18.2.11\"; } ); }\n);\n",
		"t.conf", err, sizeof(err));

	ck_assert_msg(cfg != NULL, "%s", err);
	ck_assert_int_eq(cfg->vips[0].backends[0].addr.family, AF_INET6);
	config_free(cfg);
}
END_TEST

START_TEST(test_l2_needs_mac)
{
	expect_error(HEAD "vips = (\n" VIP("l2", "198.18.1.1", "80", "tcp", "l2")
		     "    backends = (\n"
		     "      { address = \"198.18.2.12\"; mac = \"02:00:00:00:02:0c\"; },\n"
		     "      { address = \"198.18.2.11\"; }\n    ); }\n);\n",
		     "t.conf:8: ", "vip 'l2': backend 198.18.2.11 needs 'mac' with encap l2");
}
END_TEST

START_TEST(test_duplicate_backend)
{
	expect_error(HEAD "vips = (\n" VIP("web4", "198.18.1.1", "80", "tcp", "gre")
		     "    backends = (\n      { address = \"198.18.2.11\"; },\n"
		     "      { address = \"198.18.2.12\"; },\n"
		     "      { address = \"198.18.2.11\"; weight = 5; }\n    ); }\n);\n",
		     "t.conf:9: ", "duplicate backend 198.18.2.11 in vip 'web4'");
}
END_TEST

START_TEST(test_duplicate_port)
{
	expect_error(
		CLUSTER
		"node = { id = 1; address = \"198.18.0.10\"; };\n"
		"ports = ( { name = \"lan0\"; device = \"net_null0\"; },\n"
		"  { name = \"lan0\"; device = \"net_null1\"; } );\n" WEB4_VIPS,
		"t.conf:4: ", "duplicate port 'lan0'");
}
END_TEST

START_TEST(test_second_port)
{
	expect_error(
		CLUSTER
		"node = { id = 1; address = \"198.18.0.10\"; };\n"
		"ports = ( { name = \"lan0\"; device = \"net_null0\"; },\n"
		"  { name = \"lan1\"; device = \"net_null1\"; } );\n" WEB4_VIPS,
		"t.conf:4: ", "port 'lan1': this version forwards on one port only");
}
END_TEST

START_TEST(test_tunnel_source_missing)
{
	expect_error(
		CLUSTER
		"node = { id = 1; address = \"198.18.0.10\"; };\n"
		"ports = ( { name = \"lan0\"; device = \"net_null0\"; } );\n"
		"vips = (\n" VIP("web6", "2001:db8:1::80", "80", "tcp", "gre")
		"    backends = ( { address = \"2001:db8:2::11\"; } ); }\n);\n",
		"t.conf:6: ", "vip 'web6': backend 2001:db8:2::11 needs node 'address6' (the tunnel source)");
}
END_TEST

/* ---- files ---- */

START_TEST(test_missing_file)
{
	char err[CONFIG_ERROR_MAX] = "";

	ck_assert_ptr_null(config_load("data/no-such-file.conf", err, sizeof(err)));
	ck_assert_str_eq(err, "data/no-such-file.conf: cannot open: No such file or directory");
	ck_assert_ptr_null(config_load("data", err, sizeof(err)));
	ck_assert_str_eq(err, "data: cannot open: Is a directory");
}
END_TEST

START_TEST(test_bad_file)
{
	char err[CONFIG_ERROR_MAX] = "";

	ck_assert_ptr_null(config_load("data/bad-backend-family.conf", err, sizeof(err)));
	ck_assert_str_eq(err, "data/bad-backend-family.conf:20: "
			 "vip 'web6': backend 198.18.2.11 needs node 'address' (the tunnel source)");
}
END_TEST

START_TEST(test_error_truncated)
{
	char err[16];

	ck_assert_ptr_null(config_load_string(HEAD, "a-long-file-name.conf", err, sizeof(err)));
	ck_assert_str_eq(err, "a-long-file-nam");
	ck_assert_ptr_null(config_load_string(HEAD, "t.conf", NULL, 0));
}
END_TEST

START_TEST(test_cluster_keys)
{
	struct config *cfg = load_ok("cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\";\n"
				     "  mode = \"active-active\"; preempt = true; lease_ms = 300;\n"
				     "  hooks_dir = \"/etc/maglb/hooks.d\"; hook_timeout_ms = 2000; };\n"
				     NODE PORTS WEB4_VIPS);

	ck_assert_int_eq(cfg->mode, CONFIG_CLUSTER_ACTIVE_ACTIVE);
	ck_assert(cfg->preempt);
	ck_assert_uint_eq(cfg->lease_ms, 300);
	ck_assert_str_eq(cfg->hooks_dir, "/etc/maglb/hooks.d");
	ck_assert_uint_eq(cfg->hook_timeout_ms, 2000);
	config_free(cfg);
}
END_TEST

#define SEED "cluster = { hash_seed = \"0123456789abcdef0123456789abcdef\";\n"

START_TEST(test_cluster_keys_refused)
{
	expect_error(SEED "  mode = \"active-standby\"; };\n" NODE PORTS WEB4_VIPS,
		     "t.conf:2: ", "bad mode 'active-standby' (one of: active-passive, active-active)");
	expect_error(SEED "  preempt = 1; };\n" NODE PORTS WEB4_VIPS,
		     "t.conf:2: ", "'preempt' must be true or false");
	expect_error(SEED "  lease_ms = 50; };\n" NODE PORTS WEB4_VIPS,
		     "t.conf:2: ", "lease_ms");
	expect_error(SEED "  hooks_dir = \"hooks.d\"; };\n" NODE PORTS WEB4_VIPS,
		     "t.conf:2: ", "hooks_dir must be an absolute path");
	expect_error(SEED "  hook_timeout_ms = 0; };\n" NODE PORTS WEB4_VIPS,
		     "t.conf:2: ", "hook_timeout_ms");
}
END_TEST

static void
add(Suite *s, const char *name, const TTest *test)
{
	TCase *tc = tcase_create(name);

	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

/* ---- bfd ---- */

/* bfd = { peers = ( P ); KEYS }, lines 4..6 after HEAD (whose node has
 * both addresses), then one VIP. */
#define BFD(peers, keys) HEAD "bfd = {\n  peers = ( " peers " );\n  " keys "\n};\n" WEB4_VIPS

START_TEST(test_bfd_defaults)
{
	struct config *cfg = load_ok(HEAD WEB4_VIPS);

	ck_assert_uint_eq(cfg->bfd.n_peers, 0);
	ck_assert_uint_eq(cfg->bfd.interval_ms, CONFIG_BFD_INTERVAL_MS_DEFAULT);
	ck_assert_uint_eq(cfg->bfd.multiplier, CONFIG_BFD_MULTIPLIER_DEFAULT);
	ck_assert(!cfg->bfd.has_auth);
	config_free(cfg);
	cfg = load_ok(BFD("\"198.18.0.1\"", ""));
	ck_assert_uint_eq(cfg->bfd.n_peers, 1);
	ck_assert_uint_eq(cfg->bfd.interval_ms, 300);
	ck_assert_uint_eq(cfg->bfd.multiplier, 3);
	ck_assert(!cfg->bfd.has_auth);
	ck_assert_int_eq(cfg->bfd.line, 4);
	config_free(cfg);
}
END_TEST

START_TEST(test_bfd_loads)
{
	struct config *cfg = load_ok(BFD("\"198.18.0.1\", \"2001:db8::1\"",
					 "interval_ms = 100; multiplier = 5; "
					 "auth = { key_id = 7; key = \"secret\"; };"));
	char buf[INET6_ADDRSTRLEN];

	ck_assert_uint_eq(cfg->bfd.n_peers, 2);
	ck_assert_int_eq(cfg->bfd.peers[0].family, AF_INET);
	ck_assert_str_eq(config_addr_str(&cfg->bfd.peers[1], buf, sizeof(buf)), "2001:db8::1");
	ck_assert_int_eq(cfg->bfd.peer_lines[1], 5);
	ck_assert_uint_eq(cfg->bfd.interval_ms, 100);
	ck_assert_uint_eq(cfg->bfd.multiplier, 5);
	ck_assert(cfg->bfd.has_auth);
	ck_assert_uint_eq(cfg->bfd.key_id, 7);
	ck_assert_uint_eq(cfg->bfd.key_len, 6);
	ck_assert_mem_eq(cfg->bfd.key, "secret", 6);
	config_free(cfg);
	/* An array works as well as a list; bounds are inclusive. */
	cfg = load_ok(HEAD "bfd = { peers = [ \"198.18.0.1\" ]; interval_ms = 10; "
		      "multiplier = 255; auth = { key_id = 255; key = \"12345678901234567890\"; }; };\n"
		      WEB4_VIPS);
	ck_assert_uint_eq(cfg->bfd.key_len, CONFIG_BFD_KEY_MAX);
	config_free(cfg);
	cfg = load_ok(BFD("\"198.18.0.1\"", "interval_ms = 10000; multiplier = 1;"));
	config_free(cfg);
}
END_TEST

START_TEST(test_bfd_ranges_refused)
{
	expect_error(BFD("\"198.18.0.1\"", "interval_ms = 9;"), "t.conf:6: ",
		     "bfd: interval_ms 9 out of range 10..10000");
	expect_error(BFD("\"198.18.0.1\"", "interval_ms = 10001;"), "t.conf:6: ",
		     "bfd: interval_ms 10001 out of range 10..10000");
	expect_error(BFD("\"198.18.0.1\"", "multiplier = 0;"), "t.conf:6: ",
		     "bfd: multiplier 0 out of range 1..255");
	expect_error(BFD("\"198.18.0.1\"", "multiplier = 256;"), "t.conf:6: ",
		     "bfd: multiplier 256 out of range 1..255");
	expect_error(BFD("\"198.18.0.1\"", "interval_ms = \"100\";"), "t.conf:6: ",
		     "'interval_ms' must be an integer");
}
END_TEST

START_TEST(test_bfd_peers_refused)
{
	char text[4096];
	size_t len;

	expect_error(HEAD "bfd = {\n  interval_ms = 100;\n};\n" WEB4_VIPS, "t.conf:4: ",
		     "missing required key 'peers' in bfd");
	expect_error(BFD("", ""), "t.conf:5: ", "bfd: 'peers' needs at least one address");
	expect_error(HEAD "bfd = {\n  peers = \"198.18.0.1\";\n};\n" WEB4_VIPS,
		     "t.conf:5: ", "bfd: 'peers' must be a list");
	expect_error(BFD("1", ""), "t.conf:5: ", "bfd: each peer must be an address string");
	expect_error(BFD("\"198.18.0.300\"", ""), "t.conf:5: ", "bad address '198.18.0.300'");
	expect_error(BFD("\"224.0.0.5\"", ""), "t.conf:5: ", "peer 224.0.0.5 is not a unicast");
	expect_error(BFD("\"198.18.0.1\",\n \"198.18.0.2\",\n \"198.18.0.1\"", ""),
		     "t.conf:7: ", "bfd: duplicate peer 198.18.0.1");
	expect_error(BFD("\"198.18.0.10\"", ""), "t.conf:5: ",
		     "bfd: peer 198.18.0.10 is the node's own address");
	expect_error(HEAD "bfd = {\n  peers = ( \"198.18.0.1\" );\n  bogus = 1;\n};\n"
		     WEB4_VIPS, "t.conf:6: ", "unknown key 'bogus' in bfd");
	expect_error(HEAD "bfd = ( );\n" WEB4_VIPS, "t.conf:4: ",
		     "'bfd' must be a group");
	len = (size_t)snprintf(text, sizeof(text), HEAD "bfd = { peers = ( ");
	for (unsigned i = 0; i <= CONFIG_BFD_PEERS_MAX; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\"198.18.0.%u\"",
					i > 0 ? ", " : "", 100 + i);
	snprintf(text + len, sizeof(text) - len, " ); };\n" WEB4_VIPS);
	expect_error(text, "t.conf:4: ", "bfd: too many peers (max 16)");
}
END_TEST

/* A peer of a family needs the node's address of that family. */
START_TEST(test_bfd_needs_node_address)
{
	expect_error(CLUSTER "node = { id = 1; address6 = \"2001:db8::10\"; };\n" PORTS
		     "bfd = {\n  peers = ( \"198.18.0.1\" );\n};\n" WEB4_VIPS,
		     "t.conf:5: ", "bfd: peer 198.18.0.1 is IPv4 but the node has no "
		     "'node.address'");
	expect_error(CLUSTER "node = { id = 1; address = \"198.18.0.10\"; };\n" PORTS
		     "bfd = {\n  peers = ( \"198.18.0.1\",\n \"2001:db8::1\" );\n};\n" WEB4_VIPS,
		     "t.conf:6: ", "bfd: peer 2001:db8::1 is IPv6 but the node has no "
		     "'node.address6'");
	expect_error(BFD("\"2001:db8::10\"", ""), "t.conf:5: ",
		     "bfd: peer 2001:db8::10 is the node's own address");
}
END_TEST

START_TEST(test_bfd_auth_refused)
{
	expect_error(BFD("\"198.18.0.1\"", "auth = { key_id = 1; key = \"\"; };"), "t.conf:6: ",
		     "bfd.auth: key must have 1..20 bytes (RFC 5880 4.4), not 0");
	expect_error(BFD("\"198.18.0.1\"", "auth = { key_id = 1; key = \"123456789012345678901\"; };"),
		     "t.conf:6: ", "bfd.auth: key must have 1..20 bytes (RFC 5880 4.4), not 21");
	expect_error(BFD("\"198.18.0.1\"", "auth = { key_id = 256; key = \"k\"; };"), "t.conf:6: ",
		     "bfd.auth: key_id 256 out of range 0..255");
	expect_error(BFD("\"198.18.0.1\"", "auth = { key_id = 1; };"), "t.conf:6: ",
		     "missing required key 'key' in bfd.auth");
	expect_error(BFD("\"198.18.0.1\"", "auth = { key = \"k\"; };"), "t.conf:6: ",
		     "missing required key 'key_id' in bfd.auth");
	expect_error(BFD("\"198.18.0.1\"", "auth = { key_id = 1; key = \"k\"; type = 5; };"),
		     "t.conf:6: ", "unknown key 'type' in bfd.auth");
	expect_error(BFD("\"198.18.0.1\"", "auth = { key_id = 1; key = 5; };"), "t.conf:6: ",
		     "'key' must be a string");
	expect_error(BFD("\"198.18.0.1\"", "auth = \"secret\";"), "t.conf:6: ",
		     "bfd: 'auth' must be a group");
}
END_TEST

/* ---- monitor ---- */

/* monitor = { listen = ( L ); KEYS }, lines 4..6 after HEAD. */
#define MONITOR(listen, keys) \
	HEAD "monitor = {\n  listen = ( " listen " );\n  " keys "\n};\n" WEB4_VIPS
#define TLS_FILES "tls_cert = \"/etc/maglb/monitor.crt\"; tls_key = \"/etc/maglb/monitor.key\";"

START_TEST(test_monitor_defaults)
{
	struct config *cfg = load_ok(HEAD WEB4_VIPS);
	char buf[INET6_ADDRSTRLEN];

	ck_assert(!cfg->monitor.present);
	config_free(cfg);
	cfg = load_ok(MONITOR("\"198.18.0.11:9443\", \"[::1]:9443\"", TLS_FILES));
	ck_assert(cfg->monitor.present);
	ck_assert_int_eq(cfg->monitor.line, 4);
	ck_assert_uint_eq(cfg->monitor.n_listen, 2);
	ck_assert_str_eq(config_addr_str(&cfg->monitor.listen[0].addr, buf, sizeof(buf)),
			 "198.18.0.11");
	ck_assert_uint_eq(cfg->monitor.listen[0].port, 9443);
	ck_assert_int_eq(cfg->monitor.listen[1].addr.family, AF_INET6);
	ck_assert(config_addr_is_loopback(&cfg->monitor.listen[1].addr));
	ck_assert(!config_addr_is_loopback(&cfg->monitor.listen[0].addr));
	ck_assert(cfg->monitor.tls);
	ck_assert(cfg->monitor.metrics_auth);
	ck_assert_str_eq(cfg->monitor.tls_key, "/etc/maglb/monitor.key");
	ck_assert_str_eq(cfg->monitor.users_file, CONFIG_MONITOR_USERS_FILE_DEFAULT);
	ck_assert_uint_eq(cfg->monitor.max_connections, CONFIG_MONITOR_CONNECTIONS_DEFAULT);
	ck_assert_uint_eq(cfg->monitor.timeout_s, CONFIG_MONITOR_TIMEOUT_S_DEFAULT);
	config_free(cfg);
	/* Plain HTTP on loopback; the unspecified address listens on all. */
	cfg = load_ok(MONITOR("\"127.0.0.1:8080\", \"[::1]:8080\"",
			      "tls = false; metrics_auth = false; users_file = \"/run/u\"; "
			      "max_connections = 4096; timeout_s = 1;"));
	ck_assert(!cfg->monitor.tls);
	ck_assert(!cfg->monitor.metrics_auth);
	ck_assert_str_eq(cfg->monitor.users_file, "/run/u");
	config_free(cfg);
	cfg = load_ok(MONITOR("\"0.0.0.0:9443\", \"[::]:9443\"", TLS_FILES));
	ck_assert_uint_eq(cfg->monitor.n_listen, 2);
	config_free(cfg);
}
END_TEST

START_TEST(test_monitor_refused)
{
	expect_error(MONITOR("\"198.18.0.11:9443\"", "tls = false;"), "t.conf:5: ",
		     "monitor: plain HTTP (tls = false) only on loopback, and 198.18.0.11 is not");
	expect_error(MONITOR("\"198.18.0.11:9443\"", ""), "t.conf:4: ",
		     "monitor: TLS needs tls_cert and tls_key");
	expect_error(MONITOR("\"127.0.0.1:9443\"", "tls = false; tls_cert = \"/a\";"),
		     "t.conf:4: ", "monitor: tls_cert and tls_key given with tls = false");
	expect_error(MONITOR("\"198.18.0.11\"", TLS_FILES), "t.conf:5: ",
		     "monitor: listen '198.18.0.11' must be ADDRESS:PORT");
	expect_error(MONITOR("\"198.18.0.11:0\"", TLS_FILES), "t.conf:5: ",
		     "port must be 1..65535");
	expect_error(MONITOR("\"198.18.0.11:65536\"", TLS_FILES), "t.conf:5: ",
		     "port must be 1..65535");
	expect_error(MONITOR("\"198.18.0.11:94x\"", TLS_FILES), "t.conf:5: ",
		     "port must be 1..65535");
	expect_error(MONITOR("\"::1:9443\"", TLS_FILES), "t.conf:5: ",
		     "an IPv6 address goes in [ ]");
	expect_error(MONITOR("\"[::1:9443\"", TLS_FILES), "t.conf:5: ",
		     "an IPv6 address goes in [ ]");
	expect_error(MONITOR("\"[198.18.0.11]:9443\"", TLS_FILES), "t.conf:5: ",
		     "bad address '198.18.0.11'");
	expect_error(MONITOR("\"host.example:9443\"", TLS_FILES), "t.conf:5: ",
		     "bad address 'host.example'");
	expect_error(MONITOR("\"224.0.0.1:9443\"", TLS_FILES), "t.conf:5: ",
		     "224.0.0.1 is a multicast address");
	expect_error(MONITOR("\"198.18.0.11:9443\",\n \"198.18.0.11:9443\"", TLS_FILES),
		     "t.conf:6: ", "listener '198.18.0.11:9443' given twice");
	expect_error(MONITOR("", TLS_FILES), "t.conf:5: ", "'listen' needs at least one");
	expect_error(MONITOR("9443", TLS_FILES), "t.conf:5: ",
		     "each listener must be an \"ADDRESS:PORT\" string");
	expect_error(MONITOR("\"127.0.0.1:1\"", "tls = false; users_file = \"users\";"),
		     "t.conf:6: ", "monitor: users_file must be an absolute path");
	expect_error(MONITOR("\"127.0.0.1:1\"", "tls = false; max_connections = 0;"),
		     "t.conf:6: ", "monitor: max_connections 0 out of range 1..4096");
	expect_error(MONITOR("\"127.0.0.1:1\"", "tls = false; timeout_s = 301;"),
		     "t.conf:6: ", "monitor: timeout_s 301 out of range 1..300");
	expect_error(MONITOR("\"127.0.0.1:1\"", "tls = \"yes\";"), "t.conf:6: ",
		     "'tls' must be true or false");
	expect_error(MONITOR("\"127.0.0.1:1\"", "tls = false; port = 1;"), "t.conf:6: ",
		     "unknown key 'port' in monitor");
	expect_error(HEAD "monitor = {\n  tls = false;\n};\n" WEB4_VIPS, "t.conf:4: ",
		     "missing required key 'listen' in monitor");
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");

	add(s, "example_loads", test_example_loads);
	add(s, "defaults_applied", test_defaults_applied);
	add(s, "cluster_keys", test_cluster_keys);
	add(s, "cluster_keys_refused", test_cluster_keys_refused);
	add(s, "sections_override_defaults", test_sections_override_defaults);
	add(s, "vip_health_inherits", test_vip_health_inherits);
	add(s, "ipv6_vip", test_ipv6_vip);
	add(s, "vip_find", test_vip_find);
	add(s, "free_null", test_free_null);
	add(s, "int64_accepted", test_int64_accepted);
	add(s, "syntax_error", test_syntax_error);
	add(s, "unknown_key_top", test_unknown_key_top);
	add(s, "unknown_key_vip", test_unknown_key_vip);
	add(s, "unknown_key_backend", test_unknown_key_backend);
	add(s, "unknown_key_section", test_unknown_key_section);
	add(s, "wrong_type", test_wrong_type);
	add(s, "integer_wraps_refused", test_integer_wraps_refused);
	add(s, "include_refused", test_include_refused);
	add(s, "bad_address", test_bad_address);
	add(s, "node_address_family", test_node_address_family);
	add(s, "bad_mac", test_bad_mac);
	add(s, "port_out_of_range", test_port_out_of_range);
	add(s, "weight_out_of_range", test_weight_out_of_range);
	add(s, "section_range", test_section_range);
	add(s, "bad_hash_seed", test_bad_hash_seed);
	add(s, "bad_enum_names", test_bad_enum_names);
	add(s, "bfd_defaults", test_bfd_defaults);
	add(s, "bfd_loads", test_bfd_loads);
	add(s, "bfd_ranges_refused", test_bfd_ranges_refused);
	add(s, "bfd_peers_refused", test_bfd_peers_refused);
	add(s, "bfd_needs_node_address", test_bfd_needs_node_address);
	add(s, "bfd_auth_refused", test_bfd_auth_refused);
	add(s, "monitor_defaults", test_monitor_defaults);
	add(s, "monitor_refused", test_monitor_refused);
	add(s, "bad_name", test_bad_name);
	add(s, "table_size_not_prime", test_table_size_not_prime);
	add(s, "table_size_over_max", test_table_size_over_max);
	add(s, "table_size_too_small", test_table_size_too_small);
	add(s, "too_many_backends", test_too_many_backends);
	add(s, "health_timeout", test_health_timeout);
	add(s, "all_ports_health_port", test_all_ports_health_port);
	add(s, "missing_vip_address", test_missing_vip_address);
	add(s, "missing_backend_address", test_missing_backend_address);
	add(s, "missing_section", test_missing_section);
	add(s, "missing_node_keys", test_missing_node_keys);
	add(s, "missing_vip_encap", test_missing_vip_encap);
	add(s, "duplicate_vip_name", test_duplicate_vip_name);
	add(s, "duplicate_vip_address", test_duplicate_vip_address);
	add(s, "backend_family", test_backend_family);
	add(s, "tunnel_other_family", test_tunnel_other_family);
	add(s, "l2_needs_mac", test_l2_needs_mac);
	add(s, "duplicate_backend", test_duplicate_backend);
	add(s, "duplicate_port", test_duplicate_port);
	add(s, "second_port", test_second_port);
	add(s, "tunnel_source_missing", test_tunnel_source_missing);
	add(s, "missing_file", test_missing_file);
	add(s, "bad_file", test_bad_file);
	add(s, "error_truncated", test_error_truncated);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
