/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglbctl: the admin CLI of maglb-dataplane, over its local IPC (the
 * client library in lib/ipc_client.h). Every read command prints an aligned
 * table, or one JSON document with --json. Commands, output and exit codes
 * are in maglbctl_usage_text below, the one source of the usage text
 * (ctl/check_usage.py keeps its copies in the READMEs and maglbctl.8
 * equal to it), and in ctl/README.md.
 *
 * Arguments are checked before anything is sent, so a mistake exits 2 even
 * when the dataplane is not running.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/json.h"
#include "ctl/maglbctl.h"
#include "lib/ipc_client.h"

static const char maglbctl_usage_text[] =
	"usage: maglbctl [--json] [--service NAME] [--sync-service NAME] [--timeout MS]\n"
	"                COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"  status                              node, workers, VIPs, flows, Maglev digest\n"
	"  bfd                                 BFD sessions with the routers: state,\n"
	"                                      diagnostics, timers, packets; drops\n"
	"  vips [NAME]                         VIPs: address, owner, backends, flows\n"
	"  backends [VIP]                      backends: weight, state, next-hop MAC\n"
	"  flows [--vip VIP] [--limit N]       connection entries (all, or the first N)\n"
	"  flow lookup VIP_ADDR VIP_PORT PROTO CLIENT_ADDR CLIENT_PORT\n"
	"                                      where a flow goes, and which table says so\n"
	"  counters [SCOPE]                    counters whose scope starts with SCOPE\n"
	"  backend set-weight VIP ADDR WEIGHT  weight 0..1000 (0 drains)\n"
	"  backend drain VIP ADDR              keep its flows, give it no new ones\n"
	"  backend down VIP ADDR               take it out of the Maglev table\n"
	"  backend up VIP ADDR                 put it back\n"
	"  vip own NAME [--announce] [--lease MS]\n"
	"                                      answer ARP/ND for the VIP (--announce:\n"
	"                                      gratuitous ARP / unsolicited NA now and\n"
	"                                      4 more times; --lease: for MS ms,\n"
	"                                      1..3600000, unless taken again)\n"
	"  vip disown NAME                     stop answering for it\n"
	"  reload [--check]                    reload the config (--check: validate only)\n"
	"  sync                                maglb-syncd: groups, members, entries,\n"
	"                                      traffic, drops, lag\n"
	"  sync verify [GROUP]                 every member's digests of its entries\n"
	"                                      and Maglev tables, compared (exit 1\n"
	"                                      when they disagree)\n"
	"  cluster                             maglb-syncd: mode, quorum, roles, members\n"
	"  cluster standby on|off              take this node out of the active role\n"
	"                                      (on) or let it back (off)\n"
	"  monitor passwd USER [--role admin|viewer] [--file PATH]\n"
	"                                      set a maglb-monitor user's password\n"
	"                                      (asked twice on a terminal, else one\n"
	"                                      line of stdin) and role (default\n"
	"                                      viewer) in PATH (default\n"
	"                                      /etc/maglb/monitor-users)\n"
	"\n"
	"options:\n"
	"  --json            one JSON document on stdout\n"
	"  --service NAME    IPC service of the dataplane (default maglb-dataplane)\n"
	"  --sync-service NAME  IPC service of maglb-syncd (default maglb-syncd),\n"
	"                    for the sync and cluster commands\n"
	"  --timeout MS      how long to wait for each answer (default 5000)\n"
	"  -h, --help        this text\n"
	"\n"
	"PROTO is tcp or udp; addresses are IPv4 or IPv6.\n"
	"exit status: 0 ok; 1 the daemon answered with an error, a reload failed,\n"
	"sync verify found members that disagree, or monitor passwd failed; 2 bad\n"
	"arguments; 3 the daemon is not running or cannot be reached\n";

int
maglbctl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("maglbctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n\n", stderr);
	fputs(maglbctl_usage_text, stderr);
	return MAGLBCTL_EXIT_USAGE;
}

/* ------------------------------------------------------------- parsing */

static bool
maglbctl_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return false;
	*out = v;
	return true;
}

static bool
maglbctl_parse_port(const char *s, uint16_t *port)
{
	uint64_t v;

	if (!maglbctl_parse_u64(s, UINT16_MAX, &v))
		return false;
	*port = (uint16_t)v;
	return true;
}

static bool
maglbctl_parse_addr(const char *s, uint8_t *family, uint8_t addr[WIRE_ADDR_MAX])
{
	memset(addr, 0, WIRE_ADDR_MAX);
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = AF_INET6;
		return true;
	}
	return false;
}

static bool
maglbctl_parse_proto(const char *s, uint8_t *proto)
{
	if (strcmp(s, "tcp") == 0 || strcmp(s, "6") == 0)
		*proto = IPPROTO_TCP;
	else if (strcmp(s, "udp") == 0 || strcmp(s, "17") == 0)
		*proto = IPPROTO_UDP;
	else
		return false;
	return true;
}

void
maglbctl_digest_str(uint64_t digest, char buf[MAGLBCTL_DIGEST_STR])
{
	snprintf(buf, MAGLBCTL_DIGEST_STR, "0x%016" PRIx64, digest);
}

/* Copy a name (VIP, scope) into a wire field; false if too long. */
bool
maglbctl_copy_name(char dst[WIRE_NAME_MAX], const char *src)
{
	size_t len = strlen(src);

	if (len >= WIRE_NAME_MAX)
		return false;
	memcpy(dst, src, len + 1);
	return true;
}

/*
 * Match option name at argv[*i], as "--name VALUE" or "--name=VALUE".
 * Returns 1 and *value, 0 if it is not this option, -1 if its value is
 * missing.
 */
int
maglbctl_option(char **argv, int argc, int *i, const char *name,
		const char **value)
{
	size_t len = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, len) != 0)
		return 0;
	if (a[len] == '=') {
		*value = a + len + 1;
		return 1;
	}
	if (a[len] != '\0')
		return 0;
	if (*i + 1 >= argc)
		return -1;
	*value = argv[++*i];
	return 1;
}

/* ------------------------------------------------------------ printing */

static const char *
maglbctl_proto_name(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	default:
		return "?";
	}
}

void
maglbctl_addr_str(uint8_t family, const uint8_t *addr, char *buf, size_t len)
{
	if (inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, addr, buf,
		      (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

/* "198.18.0.10:443", "[2001:db8::1]:443", port 0 as "*". */
static void
maglbctl_addr_port_str(uint8_t family, const uint8_t *addr, uint16_t port,
		       char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], p[8];

	maglbctl_addr_str(family, addr, a, sizeof(a));
	if (port == 0)
		snprintf(p, sizeof(p), "*");
	else
		snprintf(p, sizeof(p), "%u", port);
	snprintf(buf, len, family == AF_INET6 ? "[%s]:%s" : "%s:%s", a, p);
}

static void
maglbctl_flags_str(uint32_t flags, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < WIRE_FLOW_FLAG_BITS && used < len; i++)
		if (flags & (1u << i))
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? "," : "", wire_flow_flag_names[i]);
	if (used == 0)
		snprintf(buf, len, "-");
}

static void
maglbctl_json_flags(struct json *j, const char *key, uint32_t flags)
{
	json_array_begin(j, key);
	for (size_t i = 0; i < WIRE_FLOW_FLAG_BITS; i++)
		if (flags & (1u << i))
			json_string(j, NULL, wire_flow_flag_names[i]);
	json_array_end(j);
}

/* Format one cell; control characters (from names) print as '?'. */
static void
maglbctl_cell(maglbctl_cell_fn cell, const void *ctx, size_t row, size_t col,
	      char *buf, size_t len)
{
	cell(ctx, row, col, buf, len);
	for (char *p = buf; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* An aligned table: headers, then rows; cells formatted by cell(). */
void
maglbctl_table(const struct maglbctl_column *cols, size_t ncols, size_t nrows,
	       maglbctl_cell_fn cell, const void *ctx)
{
	size_t width[MAGLBCTL_TABLE_COLS_MAX];
	char buf[MAGLBCTL_CELL_MAX];

	for (size_t c = 0; c < ncols; c++)
		width[c] = strlen(cols[c].header);
	for (size_t r = 0; r < nrows; r++)
		for (size_t c = 0; c < ncols; c++) {
			maglbctl_cell(cell, ctx, r, c, buf, sizeof(buf));
			if (strlen(buf) > width[c])
				width[c] = strlen(buf);
		}
	for (size_t r = 0; r <= nrows; r++) {
		for (size_t c = 0; c < ncols; c++) {
			const char *text = cols[c].header;
			int w = (int)width[c];

			if (r > 0) {
				maglbctl_cell(cell, ctx, r - 1, c, buf,
					      sizeof(buf));
				text = buf;
			}
			if (c + 1 == ncols && !cols[c].right)
				printf("%s\n", text);
			else if (cols[c].right)
				printf("%*s%s", w, text, c + 1 == ncols ? "\n" : "  ");
			else
				printf("%-*s  ", w, text);
		}
	}
}

void
maglbctl_duration_str(uint64_t ms, char *buf, size_t len)
{
	uint64_t s = ms / 1000;

	if (s >= 86400)
		snprintf(buf, len, "%" PRIu64 "d %02u:%02u:%02u", s / 86400,
			 (unsigned)(s % 86400 / 3600), (unsigned)(s % 3600 / 60),
			 (unsigned)(s % 60));
	else
		snprintf(buf, len, "%02u:%02u:%02u", (unsigned)(s / 3600),
			 (unsigned)(s % 3600 / 60), (unsigned)(s % 60));
}

/* --------------------------------------------------------------- calls */

static int
maglbctl_client_error(const struct maglbctl *m, int rc)
{
	char text[WIRE_TEXT_MAX];

	fprintf(stderr, "maglbctl: %s\n",
		ipc_strerror(rc, m->service, text, sizeof(text)));
	switch (-rc) {
	case ECONNREFUSED:
	case ENOTCONN:
	case EACCES:
	case ETIMEDOUT:
		return MAGLBCTL_EXIT_UNREACHABLE;
	case EINVAL:
	case EMSGSIZE:
		return MAGLBCTL_EXIT_USAGE;
	default:
		return MAGLBCTL_EXIT_ERROR;
	}
}

/*
 * Send req, expect an answer of kind want (WIRE_CTL_ERROR: an
 * acknowledgement, code 0). Returns 0 with *resp (free it), or the exit
 * code after saying why on stderr.
 */
int
maglbctl_call(struct maglbctl *m, const struct wire_ctl_msg *req,
	      enum wire_ctl_kind want, struct wire_ctl_msg *resp)
{
	int rc;

	if (m->client == NULL) {
		rc = ipc_client_connect(m->service, &m->client);
		if (rc < 0)
			return maglbctl_client_error(m, rc);
	}
	rc = ipc_client_request(m->client, req, resp, m->timeout_ms);
	if (rc < 0)
		return maglbctl_client_error(m, rc);
	if (resp->kind == WIRE_CTL_ERROR && resp->error.code != 0) {
		fprintf(stderr, "maglbctl: %s\n", resp->error.message[0] != '\0' ?
			resp->error.message : strerror(resp->error.code));
		wire_ctl_msg_free(resp);
		return MAGLBCTL_EXIT_ERROR;
	}
	if (resp->kind != want) {
		fprintf(stderr, "maglbctl: unexpected %s from service %s\n",
			wire_ctl_kind_names[resp->kind], m->service);
		wire_ctl_msg_free(resp);
		return MAGLBCTL_EXIT_ERROR;
	}
	return 0;
}

int
maglbctl_show(struct maglbctl *m, int argc, char **argv, enum wire_ctl_kind kind,
	      enum wire_ctl_kind want, maglbctl_show_fn show)
{
	struct wire_ctl_msg req = { .kind = kind }, resp;
	int rc;

	if (argc != 1)
		return maglbctl_usage_error("%s takes no arguments", argv[0]);
	rc = maglbctl_call(m, &req, want, &resp);
	if (rc != 0)
		return rc;
	rc = show(m, &resp);
	wire_ctl_msg_free(&resp);
	return rc;
}

int
maglbctl_command(struct maglbctl *m, const struct wire_ctl_msg *req)
{
	struct wire_ctl_msg resp;
	int rc = maglbctl_call(m, req, WIRE_CTL_ERROR, &resp);

	if (rc != 0)
		return rc;
	wire_ctl_msg_free(&resp);
	return m->json ? maglbctl_json_ok() : MAGLBCTL_EXIT_OK;
}

void
maglbctl_json_begin(struct json *j)
{
	json_init(j, stdout);
	json_object_begin(j, NULL);
}

int
maglbctl_json_end(struct json *j)
{
	json_object_end(j);
	return json_finish(j) < 0 ? MAGLBCTL_EXIT_ERROR : MAGLBCTL_EXIT_OK;
}

int
maglbctl_json_ok(void)
{
	struct json j;

	maglbctl_json_begin(&j);
	json_bool(&j, "ok", true);
	return maglbctl_json_end(&j);
}

/* -------------------------------------------------------------- status */

static int
maglbctl_print_status(const struct maglbctl *m, const struct wire_ctl_msg *resp)
{
	const struct wire_ctl_status *st = &resp->status;
	char uptime[48], digest[MAGLBCTL_DIGEST_STR];
	struct json j;

	maglbctl_digest_str(st->maglev_digest, digest);
	if (!m->json) {
		maglbctl_duration_str(st->uptime_ms, uptime, sizeof(uptime));
		printf("node      %" PRIu32 "\n", st->node_id);
		printf("uptime    %s\n", uptime);
		printf("workers   %" PRIu32 "\n", st->workers);
		printf("ports     %" PRIu32 "\n", st->ports);
		printf("vips      %" PRIu32 " (%" PRIu32 " owned)\n", st->vips,
		       st->vips_owned);
		printf("flows     %" PRIu64 " local, %" PRIu64 " synced\n",
		       st->flows_local, st->flows_synced);
		printf("maglev    %s\n", digest);
		printf("serving   %s\n", st->serving ? "yes" : "no");
		return MAGLBCTL_EXIT_OK;
	}
	maglbctl_json_begin(&j);
	json_u64(&j, "node_id", st->node_id);
	json_u64(&j, "uptime_ms", st->uptime_ms);
	json_u64(&j, "workers", st->workers);
	json_u64(&j, "ports", st->ports);
	json_u64(&j, "vips", st->vips);
	json_u64(&j, "vips_owned", st->vips_owned);
	json_u64(&j, "flows_local", st->flows_local);
	json_u64(&j, "flows_synced", st->flows_synced);
	json_string(&j, "maglev_digest", digest);
	json_bool(&j, "serving", st->serving);
	return maglbctl_json_end(&j);
}

static int
maglbctl_status(struct maglbctl *m, int argc, char **argv)
{
	return maglbctl_show(m, argc, argv, WIRE_CTL_STATUS_REQUEST, WIRE_CTL_STATUS_RESPONSE,
			     maglbctl_print_status);
}

/* ---------------------------------------------------- vips and backends */

static const struct maglbctl_column maglbctl_vip_columns[] = {
	{ "NAME", false }, { "ADDRESS", false }, { "PROTO", false },
	{ "OWNED", false }, { "BACKENDS", true }, { "UP", true },
	{ "FLOWS", true }, { "MAGLEV", false },
};

static void
maglbctl_vip_cell(const void *ctx, size_t row, size_t col, char *buf,
		  size_t len)
{
	const struct wire_ctl_vip *v = &((const struct wire_ctl_vip *)ctx)[row];
	char digest[MAGLBCTL_DIGEST_STR];

	switch (col) {
	case 0:
		snprintf(buf, len, "%s", v->name);
		break;
	case 1:
		maglbctl_addr_port_str(v->family, v->address, v->port, buf, len);
		break;
	case 2:
		snprintf(buf, len, "%s", maglbctl_proto_name(v->proto));
		break;
	case 3:
		snprintf(buf, len, "%s", v->owned ? "yes" : "no");
		break;
	case 4:
		snprintf(buf, len, "%" PRIu32, v->backends);
		break;
	case 5:
		snprintf(buf, len, "%" PRIu32, v->backends_up);
		break;
	case 6:
		snprintf(buf, len, "%" PRIu64, v->flows);
		break;
	default:
		maglbctl_digest_str(v->maglev_digest, digest);
		snprintf(buf, len, "%s", digest);
		break;
	}
}

static const struct maglbctl_column maglbctl_backend_columns[] = {
	{ "VIP", false }, { "BACKEND", false }, { "WEIGHT", true },
	{ "STATE", false }, { "NEXT_HOP", false },
};

/* A backend's next-hop MAC, "unresolved" while it is. */
static void
maglbctl_next_hop_str(const struct wire_ctl_backend *b, char *buf, size_t len)
{
	const uint8_t *m = b->next_hop_mac;

	if (!b->next_hop_resolved)
		snprintf(buf, len, "unresolved");
	else
		snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
			 m[4], m[5]);
}

static void
maglbctl_backend_cell(const void *ctx, size_t row, size_t col, char *buf,
		      size_t len)
{
	const struct wire_ctl_backend *b =
		&((const struct wire_ctl_backend *)ctx)[row];

	switch (col) {
	case 0:
		snprintf(buf, len, "%s", b->vip);
		break;
	case 1:
		maglbctl_addr_str(b->family, b->address, buf, len);
		break;
	case 2:
		snprintf(buf, len, "%" PRIu32, b->weight);
		break;
	case 3:
		snprintf(buf, len, "%s", wire_backend_state_names[b->state]);
		break;
	default:
		maglbctl_next_hop_str(b, buf, len);
		break;
	}
}

static void
maglbctl_json_vips(struct json *j, const struct wire_ctl_vip_list *l)
{
	char addr[INET6_ADDRSTRLEN], digest[MAGLBCTL_DIGEST_STR];

	json_array_begin(j, "vips");
	for (size_t i = 0; i < l->n_vips; i++) {
		const struct wire_ctl_vip *v = &l->vips[i];

		maglbctl_addr_str(v->family, v->address, addr, sizeof(addr));
		maglbctl_digest_str(v->maglev_digest, digest);
		json_object_begin(j, NULL);
		json_string(j, "name", v->name);
		json_string(j, "address", addr);
		json_u64(j, "port", v->port);
		json_string(j, "protocol", maglbctl_proto_name(v->proto));
		json_bool(j, "owned", v->owned);
		json_u64(j, "backends", v->backends);
		json_u64(j, "backends_up", v->backends_up);
		json_u64(j, "flows", v->flows);
		json_string(j, "maglev_digest", digest);
		json_object_end(j);
	}
	json_array_end(j);
}

static void
maglbctl_json_backends(struct json *j, const struct wire_ctl_vip_list *l)
{
	char addr[INET6_ADDRSTRLEN], mac[32];

	json_array_begin(j, "backends");
	for (size_t i = 0; i < l->n_backends; i++) {
		const struct wire_ctl_backend *b = &l->backends[i];

		maglbctl_addr_str(b->family, b->address, addr, sizeof(addr));
		maglbctl_next_hop_str(b, mac, sizeof(mac));
		json_object_begin(j, NULL);
		json_string(j, "vip", b->vip);
		json_string(j, "address", addr);
		json_u64(j, "weight", b->weight);
		json_string(j, "state", wire_backend_state_names[b->state]);
		if (b->next_hop_resolved)
			json_string(j, "next_hop_mac", mac);
		else
			json_null(j, "next_hop_mac");
		json_object_end(j);
	}
	json_array_end(j);
}

/* vips [NAME] and backends [VIP]: VIP_LIST requests, page after page. */
static int
maglbctl_vip_list(struct maglbctl *m, int argc, char **argv, bool backends)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_VIP_LIST_REQUEST }, resp;
	struct wire_ctl_vip_list all = { 0 };
	const struct wire_ctl_vip_list *l = &all;
	struct json j;
	int rc;

	if (argc > 2)
		return maglbctl_usage_error("%s takes at most one VIP name",
					    argv[0]);
	if (argc == 2 && !maglbctl_copy_name(req.vip_list_request.name, argv[1]))
		return maglbctl_usage_error("VIP name too long (at most %d "
					    "characters)", WIRE_NAME_MAX - 1);
	req.vip_list_request.backends = backends;
	do {
		rc = maglbctl_call(m, &req, WIRE_CTL_VIP_LIST_RESPONSE, &resp);
		if (rc != 0) {
			wire_ctl_vip_list_free(&all);
			return rc;
		}
		if (wire_ctl_vip_list_append(&all, &resp.vip_list) < 0) {
			fprintf(stderr, "maglbctl: out of memory\n");
			wire_ctl_msg_free(&resp);
			wire_ctl_vip_list_free(&all);
			return MAGLBCTL_EXIT_ERROR;
		}
		wire_ctl_msg_free(&resp);
		req.vip_list_request.cursor = all.next_cursor;
	} while (all.next_cursor != 0);
	if (m->json) {
		maglbctl_json_begin(&j);
		if (backends)
			maglbctl_json_backends(&j, l);
		else
			maglbctl_json_vips(&j, l);
		rc = maglbctl_json_end(&j);
	} else if (backends) {
		maglbctl_table(maglbctl_backend_columns, 5, l->n_backends,
			       maglbctl_backend_cell, l->backends);
	} else {
		maglbctl_table(maglbctl_vip_columns, 8, l->n_vips,
			       maglbctl_vip_cell, l->vips);
	}
	wire_ctl_vip_list_free(&all);
	return rc;
}

static int
maglbctl_vips(struct maglbctl *m, int argc, char **argv)
{
	return maglbctl_vip_list(m, argc, argv, false);
}

static int
maglbctl_backends(struct maglbctl *m, int argc, char **argv)
{
	return maglbctl_vip_list(m, argc, argv, true);
}

/* --------------------------------------------------------------- flows */

static const struct maglbctl_column maglbctl_flow_columns[] = {
	{ "PROTO", false }, { "VIP", false }, { "CLIENT", false },
	{ "BACKEND", false }, { "EXPIRES", true }, { "FLAGS", false },
};

static void
maglbctl_flow_cell(const void *ctx, size_t row, size_t col, char *buf,
		   size_t len)
{
	const struct wire_flow *f = &((const struct wire_flow *)ctx)[row];

	switch (col) {
	case 0:
		snprintf(buf, len, "%s", maglbctl_proto_name(f->proto));
		break;
	case 1:
		maglbctl_addr_port_str(f->family, f->vip, f->vip_port, buf, len);
		break;
	case 2:
		maglbctl_addr_port_str(f->family, f->client, f->client_port,
				       buf, len);
		break;
	case 3:
		if (f->backend_family == 0)
			snprintf(buf, len, "-");
		else
			maglbctl_addr_str(f->backend_family, f->backend, buf,
					  len);
		break;
	case 4:
		snprintf(buf, len, "%.1fs", f->lifetime_ms / 1000.0);
		break;
	default:
		maglbctl_flags_str(f->flags, buf, len);
		break;
	}
}

static void
maglbctl_json_flow(struct json *j, const char *key, const struct wire_flow *f)
{
	char addr[INET6_ADDRSTRLEN];

	json_object_begin(j, key);
	json_string(j, "protocol", maglbctl_proto_name(f->proto));
	maglbctl_addr_str(f->family, f->vip, addr, sizeof(addr));
	json_string(j, "vip", addr);
	json_u64(j, "vip_port", f->vip_port);
	maglbctl_addr_str(f->family, f->client, addr, sizeof(addr));
	json_string(j, "client", addr);
	json_u64(j, "client_port", f->client_port);
	if (f->backend_family != 0) {
		maglbctl_addr_str(f->backend_family, f->backend, addr,
				  sizeof(addr));
		json_string(j, "backend", addr);
	}
	json_u64(j, "lifetime_ms", f->lifetime_ms);
	maglbctl_json_flags(j, "flags", f->flags);
	json_object_end(j);
}

struct maglbctl_flows {
	struct wire_flow *entries;
	size_t count, cap;
	bool complete;
};

static int
maglbctl_flows_append(struct maglbctl_flows *fl, const struct wire_ctl_dump *d,
		      uint64_t limit)
{
	size_t n = d->count;

	if (limit != 0 && fl->count + n > limit)
		n = (size_t)(limit - fl->count);
	if (n == 0)                     /* an empty page: entries may be NULL */
		return 0;
	if (fl->count + n > fl->cap) {
		size_t cap = fl->cap ? fl->cap : MAGLBCTL_FLOWS_PAGE;
		struct wire_flow *e;

		while (cap < fl->count + n)
			cap *= 2;
		e = realloc(fl->entries, cap * sizeof(*e));
		if (e == NULL)
			return -ENOMEM;
		fl->entries = e;
		fl->cap = cap;
	}
	memcpy(fl->entries + fl->count, d->entries, n * sizeof(*d->entries));
	fl->count += n;
	return 0;
}

/* DUMP pages until the end or limit entries (0: no limit). */
static int
maglbctl_flows_fetch(struct maglbctl *m, const char *vip, uint64_t limit,
		     struct maglbctl_flows *fl)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_DUMP_REQUEST }, resp;
	uint64_t cursor = 0;
	int rc;

	memcpy(req.dump_request.vip, vip, strlen(vip) + 1);
	do {
		uint64_t want = MAGLBCTL_FLOWS_PAGE;

		if (limit != 0 && limit - fl->count < want)
			want = limit - fl->count;
		req.dump_request.cursor = cursor;
		req.dump_request.limit = (uint32_t)want;
		rc = maglbctl_call(m, &req, WIRE_CTL_DUMP_RESPONSE, &resp);
		if (rc != 0)
			return rc;
		rc = maglbctl_flows_append(fl, &resp.dump, limit);
		if (resp.dump.next_cursor != 0 && resp.dump.next_cursor == cursor) {
			fprintf(stderr, "maglbctl: service %s: the dump cursor "
				"did not advance\n", m->service);
			rc = -EPROTO;
		}
		cursor = resp.dump.next_cursor;
		wire_ctl_msg_free(&resp);
		if (rc == -ENOMEM)
			fputs("maglbctl: out of memory\n", stderr);
		if (rc < 0)
			return MAGLBCTL_EXIT_ERROR;
	} while (cursor != 0 && (limit == 0 || fl->count < limit));
	fl->complete = cursor == 0;
	return 0;
}

static int
maglbctl_flows(struct maglbctl *m, int argc, char **argv)
{
	struct maglbctl_flows fl = { 0 };
	const char *vip = "", *value;
	uint64_t limit = 0;
	struct json j;
	int rc;

	for (int i = 1; i < argc; i++) {
		if ((rc = maglbctl_option(argv, argc, &i, "--vip", &vip)) != 0) {
			if (rc < 0 || strlen(vip) >= WIRE_NAME_MAX)
				return maglbctl_usage_error("--vip wants a VIP "
							    "name");
		} else if ((rc = maglbctl_option(argv, argc, &i, "--limit",
						 &value)) != 0) {
			if (rc < 0 || !maglbctl_parse_u64(value, UINT32_MAX,
							  &limit))
				return maglbctl_usage_error("--limit wants a "
							    "number of flows");
		} else {
			return maglbctl_usage_error("flows: unexpected '%s'",
						    argv[i]);
		}
	}
	rc = maglbctl_flows_fetch(m, vip, limit, &fl);
	if (rc == 0 && m->json) {
		maglbctl_json_begin(&j);
		json_array_begin(&j, "flows");
		for (size_t i = 0; i < fl.count; i++)
			maglbctl_json_flow(&j, NULL, &fl.entries[i]);
		json_array_end(&j);
		json_u64(&j, "count", fl.count);
		json_bool(&j, "complete", fl.complete);
		rc = maglbctl_json_end(&j);
	} else if (rc == 0) {
		maglbctl_table(maglbctl_flow_columns, 6, fl.count,
			       maglbctl_flow_cell, fl.entries);
	}
	free(fl.entries);
	return rc;
}

/* --------------------------------------------------------- flow lookup */

static int
maglbctl_parse_lookup(char **argv, struct wire_flow *key)
{
	uint8_t client_family;

	memset(key, 0, sizeof(*key));
	if (!maglbctl_parse_addr(argv[2], &key->family, key->vip))
		return maglbctl_usage_error("bad VIP address '%s'", argv[2]);
	if (!maglbctl_parse_port(argv[3], &key->vip_port))
		return maglbctl_usage_error("bad VIP port '%s' (0..65535)",
					    argv[3]);
	if (!maglbctl_parse_proto(argv[4], &key->proto))
		return maglbctl_usage_error("bad protocol '%s' (tcp or udp)",
					    argv[4]);
	if (!maglbctl_parse_addr(argv[5], &client_family, key->client))
		return maglbctl_usage_error("bad client address '%s'", argv[5]);
	if (!maglbctl_parse_port(argv[6], &key->client_port))
		return maglbctl_usage_error("bad client port '%s' (0..65535)",
					    argv[6]);
	if (client_family != key->family)
		return maglbctl_usage_error("VIP and client addresses must be "
					    "of the same family");
	return 0;
}

static int
maglbctl_print_lookup(const struct maglbctl *m, const struct wire_ctl_lookup *l)
{
	char buf[MAGLBCTL_CELL_MAX];
	const struct wire_flow *f = &l->flow;
	struct json j;

	if (m->json) {
		maglbctl_json_begin(&j);
		json_string(&j, "table", wire_flow_table_names[l->table]);
		if (l->table == WIRE_FLOW_TABLE_WORKER)
			json_u64(&j, "worker", l->worker);
		maglbctl_json_flow(&j, "flow", f);
		return maglbctl_json_end(&j);
	}
	if (l->table == WIRE_FLOW_TABLE_WORKER)
		printf("table     worker %" PRIu32 "\n", l->worker);
	else if (l->table == WIRE_FLOW_TABLE_NONE)
		printf("table     none (no VIP matches)\n");
	else
		printf("table     %s\n", wire_flow_table_names[l->table]);
	maglbctl_addr_port_str(f->family, f->vip, f->vip_port, buf, sizeof(buf));
	printf("vip       %s %s\n", buf, maglbctl_proto_name(f->proto));
	maglbctl_addr_port_str(f->family, f->client, f->client_port, buf,
			       sizeof(buf));
	printf("client    %s\n", buf);
	if (l->table == WIRE_FLOW_TABLE_NONE)
		return 0;
	maglbctl_flow_cell(f, 0, 3, buf, sizeof(buf));
	printf("backend   %s\n", buf);
	if (l->table != WIRE_FLOW_TABLE_MAGLEV) {
		maglbctl_flow_cell(f, 0, 4, buf, sizeof(buf));
		printf("expires   %s\n", buf);
		maglbctl_flags_str(f->flags, buf, sizeof(buf));
		printf("flags     %s\n", buf);
	}
	return 0;
}

static int
maglbctl_flow(struct maglbctl *m, int argc, char **argv)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_FLOW_LOOKUP_REQUEST }, resp;
	int rc;

	if (argc < 2 || strcmp(argv[1], "lookup") != 0)
		return maglbctl_usage_error("flow: the subcommand is lookup");
	if (argc != 7)
		return maglbctl_usage_error("flow lookup wants VIP_ADDR VIP_PORT "
					    "PROTO CLIENT_ADDR CLIENT_PORT");
	rc = maglbctl_parse_lookup(argv, &req.lookup_key);
	if (rc != 0)
		return rc;
	rc = maglbctl_call(m, &req, WIRE_CTL_FLOW_LOOKUP_RESPONSE, &resp);
	if (rc != 0)
		return rc;
	rc = maglbctl_print_lookup(m, &resp.lookup);
	wire_ctl_msg_free(&resp);
	return rc;
}

/* ------------------------------------------------------------ counters */

static const struct maglbctl_column maglbctl_counter_columns[] = {
	{ "SCOPE", false }, { "NAME", false }, { "VALUE", true },
};

static void
maglbctl_counter_cell(const void *ctx, size_t row, size_t col, char *buf,
		      size_t len)
{
	const struct wire_ctl_counter *c =
		&((const struct wire_ctl_counter *)ctx)[row];

	if (col == 0)
		snprintf(buf, len, "%s", c->scope);
	else if (col == 1)
		snprintf(buf, len, "%s", c->name);
	else
		snprintf(buf, len, "%" PRIu64, c->value);
}

static int
maglbctl_counters(struct maglbctl *m, int argc, char **argv)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_COUNTERS_REQUEST }, resp;
	const struct wire_ctl_counters *l = &resp.counters;
	struct json j;
	int rc;

	if (argc > 2)
		return maglbctl_usage_error("counters takes at most one scope");
	if (argc == 2 && !maglbctl_copy_name(req.counters_request.scope, argv[1]))
		return maglbctl_usage_error("scope too long (at most %d "
					    "characters)", WIRE_NAME_MAX - 1);
	rc = maglbctl_call(m, &req, WIRE_CTL_COUNTERS_RESPONSE, &resp);
	if (rc != 0)
		return rc;
	if (m->json) {
		maglbctl_json_begin(&j);
		json_array_begin(&j, "counters");
		for (size_t i = 0; i < l->count; i++) {
			json_object_begin(&j, NULL);
			json_string(&j, "scope", l->counters[i].scope);
			json_string(&j, "name", l->counters[i].name);
			json_u64(&j, "value", l->counters[i].value);
			json_object_end(&j);
		}
		json_array_end(&j);
		rc = maglbctl_json_end(&j);
	} else {
		maglbctl_table(maglbctl_counter_columns, 3, l->count,
			       maglbctl_counter_cell, l->counters);
	}
	wire_ctl_msg_free(&resp);
	return rc;
}

/* ------------------------------------------------------------- backend */

static int
maglbctl_parse_backend(int argc, char **argv, struct wire_ctl_backend_set *b)
{
	static const char *const actions[WIRE_BACKEND_ACTION_MAX] = {
		[WIRE_BACKEND_SET_WEIGHT] = "set-weight",
		[WIRE_BACKEND_DRAIN] = "drain",
		[WIRE_BACKEND_MARK_DOWN] = "down",
		[WIRE_BACKEND_MARK_UP] = "up",
	};
	uint64_t weight;
	int a;

	if (argc < 2)
		return maglbctl_usage_error("backend wants set-weight, drain, "
					    "down or up");
	for (a = 0; a < WIRE_BACKEND_ACTION_MAX; a++)
		if (strcmp(argv[1], actions[a]) == 0)
			break;
	if (a == WIRE_BACKEND_ACTION_MAX)
		return maglbctl_usage_error("unknown backend action '%s'",
					    argv[1]);
	b->action = (enum wire_backend_action)a;
	if (argc != (a == WIRE_BACKEND_SET_WEIGHT ? 5 : 4))
		return maglbctl_usage_error("backend %s wants VIP ADDR%s",
					    argv[1], a == WIRE_BACKEND_SET_WEIGHT ?
					    " WEIGHT" : "");
	if (!maglbctl_copy_name(b->vip, argv[2]))
		return maglbctl_usage_error("VIP name too long (at most %d "
					    "characters)", WIRE_NAME_MAX - 1);
	if (!maglbctl_parse_addr(argv[3], &b->family, b->backend))
		return maglbctl_usage_error("bad backend address '%s'", argv[3]);
	if (a == WIRE_BACKEND_SET_WEIGHT) {
		if (!maglbctl_parse_u64(argv[4], MAGLBCTL_WEIGHT_MAX, &weight))
			return maglbctl_usage_error("bad weight '%s' (0..%d)",
						    argv[4],
						    MAGLBCTL_WEIGHT_MAX);
		b->weight = (uint32_t)weight;
	}
	return 0;
}

static int
maglbctl_backend(struct maglbctl *m, int argc, char **argv)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_BACKEND_SET };
	int rc;

	rc = maglbctl_parse_backend(argc, argv, &req.backend_set);
	if (rc != 0)
		return rc;
	return maglbctl_command(m, &req);
}

/* ----------------------------------------------------------- ownership */

/*
 * vip own NAME [--announce] [--lease MS] | vip disown NAME: normally
 * syncd's to say.
 */
static int
maglbctl_vip(struct maglbctl *m, int argc, char **argv)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_OWNERSHIP_SET };
	struct wire_ctl_ownership_entry e = { .owned = false };
	const char *value;
	uint64_t ms;
	bool own;
	int rc;

	if (argc < 3 || (strcmp(argv[1], "own") != 0 && strcmp(argv[1], "disown") != 0))
		return maglbctl_usage_error("vip wants own NAME [--announce] [--lease MS] "
					    "or disown NAME");
	own = strcmp(argv[1], "own") == 0;
	if (!maglbctl_copy_name(e.vip, argv[2]))
		return maglbctl_usage_error("VIP name too long (at most %d characters)",
					    WIRE_NAME_MAX - 1);
	for (int i = 3; i < argc; i++) {
		if (own && strcmp(argv[i], "--announce") == 0) {
			req.ownership.announce = true;
		} else if (own && (rc = maglbctl_option(argv, argc, &i, "--lease",
							&value)) != 0) {
			if (rc < 0 || !maglbctl_parse_u64(value, MAGLBCTL_LEASE_MAX_MS, &ms) ||
			    ms == 0)
				return maglbctl_usage_error("--lease wants 1..%d ms",
							    MAGLBCTL_LEASE_MAX_MS);
			req.ownership.lease_ms = (uint32_t)ms;
		} else {
			return maglbctl_usage_error("vip %s: unexpected '%s'", argv[1], argv[i]);
		}
	}
	e.owned = own;
	req.ownership.vips = &e;
	req.ownership.count = 1;
	return maglbctl_command(m, &req);
}

/* -------------------------------------------------------------- reload */

static int
maglbctl_reload(struct maglbctl *m, int argc, char **argv)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_RELOAD_REQUEST }, resp;
	const struct wire_ctl_reload_result *r = &resp.reload_result;
	bool check = false;
	struct json j;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--check") != 0)
			return maglbctl_usage_error("reload: unexpected '%s'",
						    argv[i]);
		check = true;
	}
	req.reload_request.check_only = check;
	rc = maglbctl_call(m, &req, WIRE_CTL_RELOAD_RESULT, &resp);
	if (rc != 0)
		return rc;
	rc = r->ok ? MAGLBCTL_EXIT_OK : MAGLBCTL_EXIT_ERROR;
	if (m->json) {
		maglbctl_json_begin(&j);
		json_bool(&j, "ok", r->ok);
		json_bool(&j, "check", check);
		if (!r->ok)
			json_string(&j, "error", r->error);
		json_object_end(&j);
		if (json_finish(&j) < 0)
			rc = MAGLBCTL_EXIT_ERROR;
	} else if (r->ok) {
		printf("%s\n", check ? "config ok" : "reloaded");
	}
	if (!r->ok)
		fprintf(stderr, "maglbctl: %s failed: %s\n",
			check ? "config check" : "reload", r->error);
	wire_ctl_msg_free(&resp);
	return rc;
}

/* ---------------------------------------------------------------- main */

static const struct maglbctl_command {
	const char *name;
	int (*run)(struct maglbctl *m, int argc, char **argv);
} maglbctl_commands[] = {
	{ "status", maglbctl_status },
	{ "vips", maglbctl_vips },
	{ "backends", maglbctl_backends },
	{ "flows", maglbctl_flows },
	{ "flow", maglbctl_flow },
	{ "counters", maglbctl_counters },
	{ "backend", maglbctl_backend },
	{ "vip", maglbctl_vip },
	{ "reload", maglbctl_reload },
	{ "sync", maglbctl_sync },
	{ "cluster", maglbctl_cluster },
	{ "bfd", maglbctl_bfd },
	{ "monitor", maglbctl_monitor },
};

/*
 * Take the global options out of argv, wherever they are (before a "--"),
 * and leave the command and its arguments in args. Returns -1 to go on, or
 * an exit code.
 */
static int
maglbctl_global_options(struct maglbctl *m, int argc, char **argv,
			char **args, int *nargs)
{
	bool options = true;
	const char *value;
	uint64_t ms;
	int rc;

	*nargs = 0;
	for (int i = 1; i < argc; i++) {
		if (options && strcmp(argv[i], "--") == 0) {
			options = false;
		} else if (!options) {
			args[(*nargs)++] = argv[i];
		} else if (strcmp(argv[i], "--json") == 0) {
			m->json = true;
		} else if (strcmp(argv[i], "-h") == 0 ||
			   strcmp(argv[i], "--help") == 0) {
			fputs(maglbctl_usage_text, stdout);
			return MAGLBCTL_EXIT_OK;
		} else if ((rc = maglbctl_option(argv, argc, &i, "--service",
						 &m->service)) != 0) {
			if (rc < 0 || m->service[0] == '\0' ||
			    strlen(m->service) >= WIRE_NAME_MAX)
				return maglbctl_usage_error("--service wants a "
							    "service name");
		} else if ((rc = maglbctl_option(argv, argc, &i, "--sync-service",
						 &m->sync_service)) != 0) {
			if (rc < 0 || m->sync_service[0] == '\0' ||
			    strlen(m->sync_service) >= WIRE_NAME_MAX)
				return maglbctl_usage_error("--sync-service wants a "
							    "service name");
		} else if ((rc = maglbctl_option(argv, argc, &i, "--timeout",
						 &value)) != 0) {
			if (rc < 0 || !maglbctl_parse_u64(value,
					MAGLBCTL_TIMEOUT_MAX_MS, &ms) || ms == 0)
				return maglbctl_usage_error("--timeout wants "
							    "1..%d ms",
							    MAGLBCTL_TIMEOUT_MAX_MS);
			m->timeout_ms = (int)ms;
		} else {
			args[(*nargs)++] = argv[i];
		}
	}
	return -1;
}

int
main(int argc, char **argv)
{
	struct maglbctl m = {
		.service = IPC_SERVICE_DATAPLANE,
		.sync_service = IPC_SERVICE_SYNCD,
		.timeout_ms = IPC_CLIENT_TIMEOUT_DEFAULT_MS,
	};
	char **args;
	int nargs, rc;

	args = calloc((size_t)argc + 1, sizeof(*args));
	if (args == NULL) {
		fputs("maglbctl: out of memory\n", stderr);
		return MAGLBCTL_EXIT_ERROR;
	}
	rc = maglbctl_global_options(&m, argc, argv, args, &nargs);
	if (rc < 0 && nargs == 0)
		rc = maglbctl_usage_error("no command");
	for (size_t i = 0; rc < 0 && i < sizeof(maglbctl_commands) /
	     sizeof(maglbctl_commands[0]); i++)
		if (strcmp(args[0], maglbctl_commands[i].name) == 0)
			rc = maglbctl_commands[i].run(&m, nargs, args);
	if (rc < 0)
		rc = maglbctl_usage_error("unknown command '%s'", args[0]);
	ipc_client_close(m.client);
	free(args);
	return rc;
}
