/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metrics writer: see metrics.h. Samples of a family come together,
 * as the format requires, so per-backend families loop over the backends
 * once each, with every backend's labels formatted once beforehand.
 */
#include "monitor/metrics.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "dataplane/core/counters.h"

enum {
	LABELS_MAX = 3 * WIRE_NAME_MAX + 2 * INET6_ADDRSTRLEN + 64,
};

/* The text is built in memory and written at the end: stdio per sample
 * costs more than the formatting. */
struct writer {
	char *buf;
	size_t len, cap;
	bool oom;
	char (*backend_labels)[LABELS_MAX];     /* vip="..",backend=".." */
};

static void
put(struct writer *w, const char *s, size_t n)
{
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 1 << 16;
		char *grown;

		while (cap < w->len + n)
			cap *= 2;
		grown = w->oom ? NULL : realloc(w->buf, cap);
		if (grown == NULL) {
			w->oom = true;
			return;
		}
		w->buf = grown;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static void
puts_w(struct writer *w, const char *s)
{
	put(w, s, strlen(s));
}

static void printf_w(struct writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
printf_w(struct writer *w, const char *fmt, ...)
{
	char line[2 * LABELS_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(w, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* "NAME" -> "name": the dataplane's counter names as label values. */
static void
lower(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src[i] != '\0' && i + 1 < len; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

/* Append key="value" to labels (len bytes), escaping as the format says. */
static void
label(char *labels, size_t len, const char *key, const char *value)
{
	size_t at = strlen(labels);

	if (at + 1 >= len)
		return;
	at += (size_t)snprintf(labels + at, len - at, "%s%s=\"", at > 0 ? "," : "", key);
	for (const char *c = value; *c != '\0' && at + 3 < len; c++) {
		if (*c == '\\' || *c == '"' || *c == '\n') {
			labels[at++] = '\\';
			labels[at++] = *c == '\n' ? 'n' : *c;
		} else {
			labels[at++] = *c;
		}
	}
	if (at + 1 < len)
		labels[at++] = '"';
	labels[at < len ? at : len - 1] = '\0';
}

/* labels = src, then what label() appends. */
static void
labels_from(char *labels, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(labels, src, n);
	labels[n] = '\0';
}

static void
family(struct writer *w, const char *name, const char *type, const char *help)
{
	printf_w(w, "# HELP maglb_%s %s\n# TYPE maglb_%s %s\n", name, help, name, type);
}

static void
put_u64(struct writer *w, uint64_t v)
{
	char buf[24];
	size_t at = sizeof(buf);

	do {
		buf[--at] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	put(w, buf + at, sizeof(buf) - at);
}

/* name{labels} v; labels "" or NULL: none. suffix for _bucket and the like. */
static void
sample(struct writer *w, const char *name, const char *labels, uint64_t v)
{
	put(w, "maglb_", 6);
	puts_w(w, name);
	if (labels != NULL && labels[0] != '\0') {
		put(w, "{", 1);
		puts_w(w, labels);
		put(w, "}", 1);
	}
	put(w, " ", 1);
	put_u64(w, v);
	put(w, "\n", 1);
}

/* name{pre labels post} v: labels with a fixed label before or after. */
static void
sample_with(struct writer *w, const char *name, const char *pre, const char *labels,
	    const char *post, uint64_t v)
{
	put(w, "maglb_", 6);
	puts_w(w, name);
	put(w, "{", 1);
	puts_w(w, pre);
	puts_w(w, labels);
	puts_w(w, post);
	put(w, "} ", 2);
	put_u64(w, v);
	put(w, "\n", 1);
}

/* num / den (num <= den) to RATIO_DIGITS decimals, zeros trimmed. */
enum { RATIO_DIGITS = 9 };

static void
sample_ratio(struct writer *w, const char *name, const char *labels, uint64_t num,
	     uint64_t den)
{
	uint64_t scale = 1000000000u, r = den > 0 ? (num * scale + den / 2) / den : 0;
	char frac[RATIO_DIGITS + 2];
	int n = RATIO_DIGITS;

	put(w, "maglb_", 6);
	puts_w(w, name);
	put(w, "{", 1);
	puts_w(w, labels);
	put(w, "} ", 2);
	put_u64(w, r / scale);
	r %= scale;
	if (r != 0) {
		frac[0] = '.';
		for (int i = RATIO_DIGITS; i >= 1; i--, r /= 10)
			frac[i] = (char)('0' + r % 10);
		while (frac[n] == '0')
			n--;
		put(w, frac, (size_t)n + 1);
	}
	put(w, "\n", 1);
}

static void
sample_f(struct writer *w, const char *name, const char *labels, double v)
{
	printf_w(w, "maglb_%s%s%s%s %.15g\n", name, labels != NULL && labels[0] ? "{" : "",
		labels != NULL ? labels : "", labels != NULL && labels[0] ? "}" : "", v);
}

/*
 * One histogram's samples (its family written by the caller): a bucket a
 * bound of bounds_us (le in seconds), +Inf, the sum in seconds, the count.
 */
static void
histogram(struct writer *w, const char *name, const char *labels, const uint32_t *bounds_us,
	  const uint64_t *cumulative, size_t n, uint64_t count, uint64_t sum_us)
{
	char metric[96], with_le[LABELS_MAX + 32];

	snprintf(metric, sizeof(metric), "%s_bucket", name);
	for (size_t i = 0; i <= n; i++) {
		char le[24];

		if (i < n)
			snprintf(le, sizeof(le), "%g", bounds_us[i] / 1e6);
		else
			snprintf(le, sizeof(le), "+Inf");
		snprintf(with_le, sizeof(with_le), "%s%sle=\"%s\"", labels,
			 labels[0] != '\0' ? "," : "", le);
		sample(w, metric, with_le, i < n ? cumulative[i] : count);
	}
	snprintf(metric, sizeof(metric), "%s_sum", name);
	sample_f(w, metric, labels, sum_us / 1e6);
	snprintf(metric, sizeof(metric), "%s_count", name);
	sample(w, metric, labels, count);
}

/* A family of one sample without labels. */
static void
single(struct writer *w, const char *name, const char *type, const char *help, uint64_t v)
{
	family(w, name, type, help);
	sample(w, name, NULL, v);
}

static void
single_f(struct writer *w, const char *name, const char *type, const char *help, double v)
{
	family(w, name, type, help);
	sample_f(w, name, NULL, v);
}

/* ------------------------------------------------------------- monitor */

static void
write_monitor(struct writer *w, const struct mon_snapshot *s, const struct mon_metrics_ctx *ctx)
{
	char labels[LABELS_MAX] = "";

	label(labels, sizeof(labels), "version", ctx->version);
	family(w, "build_info", "gauge", "maglb's version, 1");
	sample(w, "build_info", labels, 1);
	family(w, "up", "gauge", "whether the daemon answered the last collection");
	for (int d = 0; d < MON_SERVICE_MAX; d++) {
		labels[0] = '\0';
		label(labels, sizeof(labels), "daemon", d == MON_DATAPLANE ? "dataplane" : "syncd");
		sample(w, "up", labels, s->up[d]);
	}
	single_f(w, "monitor_snapshot_timestamp_seconds", "gauge",
		 "when the numbers here were collected", (double)s->time_ms / 1e3);
	single_f(w, "monitor_collect_duration_seconds", "gauge",
		 "how long the last collection took", (double)s->collect_us / 1e6);
	single(w, "monitor_sessions", "gauge", "console sessions open", ctx->sessions);
#define MON_STATS_WRITE(field, name, help) \
	single(w, "monitor_" name, "counter", help, ctx->stats.field);
	MON_STATS(MON_STATS_WRITE)
#undef MON_STATS_WRITE
}

/* ----------------------------------------------------------- dataplane */

static bool
is_drop(const char *name)
{
	for (int d = 0; d < DP_DROP_MAX; d++)
		if (strcmp(name, dp_drop_names[d]) == 0)
			return true;
	return false;
}

/* Counters of scope (exactly), as one family with label key, of names
 * that drops says (true: drop reasons only, false: all but them). */
static void
scope_family(struct writer *w, const struct mon_snapshot *s, const char *scope,
	     const char *name, const char *help, const char *key, int drops)
{
	char labels[LABELS_MAX], value[WIRE_NAME_MAX];

	family(w, name, "counter", help);
	for (size_t i = 0; i < s->counters.count; i++) {
		const struct wire_ctl_counter *c = &s->counters.counters[i];

		if (strcmp(c->scope, scope) != 0 || (drops >= 0 && is_drop(c->name) != drops) ||
		    strcmp(c->name, "NEIGHBOURS") == 0)
			continue;
		lower(value, sizeof(value), c->name);
		labels[0] = '\0';
		label(labels, sizeof(labels), key, value);
		sample(w, name, labels, c->value);
	}
}

/* Per port: the NIC's counters (scope port:NAME) as families by port. */
static void
write_ports(struct writer *w, const struct mon_snapshot *s)
{
	static const struct {
		const char *counter, *name, *help;
	} m[] = {
		{ "IPACKETS", "port_rx_packets_total", "packets the NIC received" },
		{ "OPACKETS", "port_tx_packets_total", "packets the NIC sent" },
		{ "IBYTES", "port_rx_bytes_total", "bytes the NIC received" },
		{ "OBYTES", "port_tx_bytes_total", "bytes the NIC sent" },
		{ "IMISSED", "port_rx_missed_packets_total",
		  "packets the NIC dropped: the workers did not keep up" },
		{ "IERRORS", "port_rx_errors_total", "erroneous frames received" },
		{ "OERRORS", "port_tx_errors_total", "frames the NIC failed to send" },
		{ "RX_NOMBUF", "port_rx_nombuf_total", "receive buffer allocation failures" },
	};
	char labels[LABELS_MAX];

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		family(w, m[k].name, "counter", m[k].help);
		for (size_t i = 0; i < s->counters.count; i++) {
			const struct wire_ctl_counter *c = &s->counters.counters[i];

			if (strncmp(c->scope, "port:", 5) != 0 || strcmp(c->name, m[k].counter) != 0)
				continue;
			labels[0] = '\0';
			label(labels, sizeof(labels), "port", c->scope + 5);
			sample(w, m[k].name, labels, c->value);
		}
	}
}

static void
write_dataplane(struct writer *w, const struct mon_snapshot *s, const struct mon_metrics_ctx *ctx)
{
	char labels[LABELS_MAX];

	if (s->has_status) {
		single_f(w, "dataplane_uptime_seconds", "gauge", "since the dataplane started",
			 (double)s->status.uptime_ms / 1e3);
		single(w, "dataplane_workers", "gauge", "forwarding workers", s->status.workers);
		single(w, "dataplane_serving", "gauge",
		       "whether the node should get traffic (its serving lease holds)",
		       s->status.serving);
		single_f(w, "dataplane_serving_lease_remaining_seconds", "gauge",
			 "how long the node serves unless syncd renews it (0: not serving)",
			 s->status.serving_lease_remaining_ms / 1e3);
		family(w, "flow_table_entries", "gauge",
		       "connection entries: the workers' own (local), synced from peers");
		sample(w, "flow_table_entries", "table=\"local\"", s->status.flows_local);
		sample(w, "flow_table_entries", "table=\"synced\"", s->status.flows_synced);
		family(w, "flow_table_capacity", "gauge", "entries the tables hold at most");
		sample(w, "flow_table_capacity", "table=\"local\"",
		       ctx->flows_capacity * s->status.workers);
		sample(w, "flow_table_capacity", "table=\"synced\"", ctx->shared_capacity);
	}
	if (!s->has_counters)
		return;
	scope_family(w, s, "total", "dataplane_events_total",
		     "the workers' events (maglb-dataplane(8), Counters)", "event", 0);
	scope_family(w, s, "total", "dropped_packets_total",
		     "packets the workers dropped, by reason", "reason", 1);
	scope_family(w, s, "control", "control_events_total",
		     "the dataplane's control thread: imports, exports, ARP/ND, leases, reloads",
		     "event", -1);
	single(w, "neighbours", "gauge", "next hops resolved (ARP/ND)",
	       mon_counter(s, "control", "NEIGHBOURS", 0));
	scope_family(w, s, "bfd", "bfd_dropped_packets_total",
		     "BFD packets dropped before a session took them, by reason", "reason", -1);
	family(w, "worker_flows", "gauge", "entries of each worker's table");
	for (size_t i = 0; i < s->counters.count; i++) {
		const struct wire_ctl_counter *c = &s->counters.counters[i];

		if (strncmp(c->scope, "worker", 6) != 0 || strcmp(c->name, "FLOWS") != 0)
			continue;
		labels[0] = '\0';
		label(labels, sizeof(labels), "worker", c->scope + 6);
		sample(w, "worker_flows", labels, c->value);
	}
	write_ports(w, s);
}

/* ---------------------------------------------------------------- VIPs */

static void
vip_labels(const struct wire_ctl_vip *v, char *labels, size_t len)
{
	labels[0] = '\0';
	label(labels, len, "vip", v->name);
}

#define TRAFFIC_FIELDS(X)						\
	X(packets, "packets_total", "packets forwarded")		\
	X(bytes, "bytes_total", "bytes forwarded")			\
	X(new_flows, "new_flows_total", "flows that got an entry")	\
	X(untracked, "untracked_packets_total",			\
	  "packets of new flows past the insert cap (Maglev only)")	\
	X(synced_hits, "synced_hits_total",				\
	  "packets that hit an entry synced from a peer")		\
	X(maglev_picks, "maglev_picks_total", "new flows Maglev gave a backend")

static void
write_vips(struct writer *w, const struct mon_snapshot *s)
{
	const struct wire_ctl_vip_list *l = &s->vips;
	char labels[LABELS_MAX], name[64];

	family(w, "vip_info", "gauge", "a VIP: its address, port and protocol, 1");
	for (size_t v = 0; v < l->n_vips; v++) {
		const struct wire_ctl_vip *vip = &l->vips[v];
		char addr[INET6_ADDRSTRLEN], port[8];

		vip_labels(vip, labels, sizeof(labels));
		label(labels, sizeof(labels), "address",
		      mon_addr_str(vip->family, vip->address, addr, sizeof(addr)));
		snprintf(port, sizeof(port), "%u", vip->port);
		label(labels, sizeof(labels), "port", port);
		label(labels, sizeof(labels), "protocol", vip->proto == IPPROTO_UDP ? "udp" : "tcp");
		sample(w, "vip_info", labels, 1);
	}
#define VIP_GAUGE(metric, help, expr)					\
	family(w, metric, "gauge", help);				\
	for (size_t v = 0; v < l->n_vips; v++) {			\
		const struct wire_ctl_vip *vip = &l->vips[v];		\
									\
		vip_labels(vip, labels, sizeof(labels));		\
		sample(w, metric, labels, (expr));			\
	}
	VIP_GAUGE("vip_owned", "whether this node owns the VIP", vip->owned)
	VIP_GAUGE("vip_backends", "backends configured", vip->backends)
	VIP_GAUGE("vip_backends_up", "backends that take new flows (up, next hop resolved)",
		  vip->backends_up)
	VIP_GAUGE("vip_flows", "the workers' entries of the VIP", vip->flows)
	VIP_GAUGE("vip_maglev_table_size", "Maglev's M", vip->table_size)
#define VIP_TRAFFIC(field, suffix, help)				\
	snprintf(name, sizeof(name), "vip_%s", suffix);			\
	VIP_GAUGE_COUNTER(name, help, vip->traffic.field)
#define VIP_GAUGE_COUNTER(metric, help, expr)				\
	family(w, metric, "counter", help);				\
	for (size_t v = 0; v < l->n_vips; v++) {			\
		const struct wire_ctl_vip *vip = &l->vips[v];		\
									\
		vip_labels(vip, labels, sizeof(labels));		\
		sample(w, metric, labels, (expr));			\
	}
	TRAFFIC_FIELDS(VIP_TRAFFIC)
#undef VIP_TRAFFIC
#undef VIP_GAUGE_COUNTER
#undef VIP_GAUGE
}

static int
backend_labels(struct writer *w, const struct mon_snapshot *s)
{
	const struct wire_ctl_vip_list *l = &s->vips;

	w->backend_labels = malloc((l->n_backends + 1) * sizeof(*w->backend_labels));
	if (w->backend_labels == NULL)
		return -ENOMEM;
	for (size_t b = 0; b < l->n_backends; b++) {
		const struct wire_ctl_backend *be = &l->backends[b];
		char addr[INET6_ADDRSTRLEN];

		w->backend_labels[b][0] = '\0';
		label(w->backend_labels[b], LABELS_MAX, "vip", be->vip);
		label(w->backend_labels[b], LABELS_MAX, "backend",
		      mon_addr_str(be->family, be->address, addr, sizeof(addr)));
	}
	return 0;
}

/* Health: every backend's agreed verdict; the probed ones' local one and
 * probes (syncd's HEALTH_STATUS); the node's probe durations. */
static void
write_health(struct writer *w, const struct mon_snapshot *s)
{
	const struct wire_ctl_vip_list *l = &s->vips;

	family(w, "backend_health_up", "gauge",
	       "health checks: agreed by the cluster (view agreed), this node's probes (local)");
	for (int view = 0; view < 2; view++)
		for (size_t b = 0; b < l->n_backends; b++) {
			const struct wire_ctl_health_target *t = mon_backend_health(s, b);
			bool up = t != NULL ? t->agreed_up : l->backends[b].state != WIRE_BACKEND_DOWN;

			if (view == 1 && t == NULL)
				continue;
			sample_with(w, "backend_health_up", view == 0 ? "view=\"agreed\"," :
				    "view=\"local\",", w->backend_labels[b], "",
				    view == 0 ? up : t->local_up);
		}
	if (!s->has_health)
		return;
#define PROBED(metric, type, help, expr)				\
	family(w, metric, type, help);					\
	for (size_t b = 0; b < l->n_backends; b++) {			\
		const struct wire_ctl_health_target *t = mon_backend_health(s, b);	\
									\
		if (t != NULL)						\
			sample(w, metric, w->backend_labels[b], (expr));	\
	}
	PROBED("backend_health_down_reports", "gauge",
	       "nodes whose last report has the backend down", t->n_down_by)
	PROBED("backend_probes_total", "counter", "this node's probes of the backend", t->probes)
	PROBED("backend_probe_failures_total", "counter",
	       "this node's probes of the backend that failed (timeouts included)", t->failures)
#undef PROBED
	family(w, "backend_probe_last_duration_seconds", "gauge",
	       "how long this node's last probe of the backend took");
	for (size_t b = 0; b < l->n_backends; b++) {
		const struct wire_ctl_health_target *t = mon_backend_health(s, b);

		if (t != NULL && t->probes > 0)
			sample_f(w, "backend_probe_last_duration_seconds", w->backend_labels[b],
				 t->last_duration_us / 1e6);
	}
}

static void
write_probes(struct writer *w, const struct mon_snapshot *s)
{
	single(w, "probes_total", "counter", "health probes this node finished", s->probes);
	single(w, "probe_failures_total", "counter", "health probes that failed",
	       s->probe_failures);
	family(w, "probe_duration_seconds", "histogram", "how long health probes took");
	histogram(w, "probe_duration_seconds", "", wire_probe_bucket_us,
		  s->probe_duration.cumulative, WIRE_PROBE_BUCKETS, s->probe_duration.count,
		  s->probe_duration.sum_us);
}

static void
write_backends(struct writer *w, const struct mon_snapshot *s)
{
	const struct wire_ctl_vip_list *l = &s->vips;
	char name[64], states[WIRE_BACKEND_STATE_MAX][32];

#define BACKENDS(metric, type, help, expr)				\
	family(w, metric, type, help);					\
	for (size_t b = 0; b < l->n_backends; b++) {			\
		const struct wire_ctl_backend *be = &l->backends[b];	\
									\
		sample(w, metric, w->backend_labels[b], (expr));	\
	}
#define BACKEND_TRAFFIC(field, suffix, help)				\
	snprintf(name, sizeof(name), "backend_%s", suffix);		\
	BACKENDS(name, "counter", help, be->traffic.field)
	TRAFFIC_FIELDS(BACKEND_TRAFFIC)
#undef BACKEND_TRAFFIC
	BACKENDS("backend_flows", "gauge", "the workers' entries that carry the backend",
		 be->flows)
	BACKENDS("backend_weight", "gauge", "weight now (drain: 0)", be->weight)
	BACKENDS("backend_config_weight", "gauge", "weight in the config", be->config_weight)
	BACKENDS("backend_next_hop_resolved", "gauge",
		 "whether its next hop's MAC is known", be->next_hop_resolved)
#undef BACKENDS
	family(w, "backend_maglev_share", "gauge",
	       "share of its VIP's Maglev table the backend holds (new flows it gets)");
	for (size_t v = 0; v < l->n_vips; v++)
		for (size_t b = s->vip_first[v]; b < s->vip_first[v + 1]; b++)
			sample_ratio(w, "backend_maglev_share", w->backend_labels[b],
				     l->backends[b].maglev_slots, l->vips[v].table_size);
	family(w, "backend_state", "gauge", "the backend's state: 1 for the one it is in");
	for (int st = 0; st < WIRE_BACKEND_STATE_MAX; st++)
		snprintf(states[st], sizeof(states[st]), ",state=\"%s\"", wire_backend_state_names[st]);
	for (size_t b = 0; b < l->n_backends; b++)
		for (int st = 0; st < WIRE_BACKEND_STATE_MAX; st++)
			sample_with(w, "backend_state", "", w->backend_labels[b], states[st],
				    l->backends[b].state == (unsigned)st);
	write_health(w, s);
}

/* ----------------------------------------------------------------- BFD */

static void
write_bfd(struct writer *w, const struct wire_ctl_bfd_status *b)
{
	char peers[WIRE_SYNC_MEMBERS_MAX][LABELS_MAX], labels[LABELS_MAX];
	size_t n = b->n_sessions < WIRE_SYNC_MEMBERS_MAX ? b->n_sessions : WIRE_SYNC_MEMBERS_MAX;

	if (n == 0)
		return;
	single(w, "bfd_serving", "gauge", "whether sessions may be Up (the node serves)",
	       b->serving);
	for (size_t i = 0; i < n; i++) {
		char addr[INET6_ADDRSTRLEN];

		peers[i][0] = '\0';
		label(peers[i], LABELS_MAX, "peer",
		      mon_addr_str(b->sessions[i].family, b->sessions[i].peer, addr, sizeof(addr)));
	}
#define SESSIONS(metric, type, help, expr)				\
	family(w, metric, type, help);					\
	for (size_t i = 0; i < n; i++) {				\
		const struct wire_ctl_bfd_session *se = &b->sessions[i];	\
									\
		sample(w, metric, peers[i], (expr));			\
	}
	SESSIONS("bfd_session_up", "gauge", "whether the session with the router is Up",
		 se->state == WIRE_BFD_STATE_UP)
	SESSIONS("bfd_session_state_changes_total", "counter", "state changes",
		 se->state_changes)
	SESSIONS("bfd_session_received_packets_total", "counter", "packets accepted",
		 se->packets_in)
	SESSIONS("bfd_session_sent_packets_total", "counter", "packets sent", se->packets_out)
#undef SESSIONS
	family(w, "bfd_session_detect_time_seconds", "gauge",
	       "how long this side waits for the router's packets");
	for (size_t i = 0; i < n; i++)
		sample_f(w, "bfd_session_detect_time_seconds", peers[i],
			 b->sessions[i].detect_time_us / 1e6);
	family(w, "bfd_session_state", "gauge", "the session's state: 1 for the one it is in");
	for (size_t i = 0; i < n; i++)
		for (int st = 0; st < WIRE_BFD_STATE_MAX; st++) {
			labels_from(labels, sizeof(labels), peers[i]);
			label(labels, sizeof(labels), "state", wire_bfd_state_names[st]);
			sample(w, "bfd_session_state", labels, b->sessions[i].state == (unsigned)st);
		}
}

/* ------------------------------------------------------------- cluster */

static void
write_cluster(struct writer *w, const struct wire_ctl_cluster *c)
{
	char labels[LABELS_MAX], id[16];
	uint32_t known = 0;

	labels[0] = '\0';
	label(labels, sizeof(labels), "mode", c->mode < WIRE_CLUSTER_MODE_MAX ?
	      wire_cluster_mode_names[c->mode] : "?");
	family(w, "cluster_info", "gauge", "the cluster's mode, 1");
	sample(w, "cluster_info", labels, 1);
	single(w, "cluster_quorate", "gauge", "whether this node's partition has quorum",
	       c->quorate);
	single(w, "cluster_active", "gauge", "whether this node holds the active role",
	       c->role == WIRE_ROLE_ACTIVE);
	single(w, "cluster_eligible", "gauge", "whether this node may hold the active role",
	       c->eligible);
	single(w, "cluster_standby", "gauge", "whether an operator put the node in standby",
	       c->standby);
	single(w, "cluster_role_changes_total", "counter", "this node's role changes",
	       c->role_changes);
	single_f(w, "cluster_last_change_timestamp_seconds", "gauge",
		 "when this node's role last changed (0: never)", c->last_change_unix_ms / 1e3);
	single_f(w, "cluster_lease_seconds", "gauge",
		 "the VIP ownership lease syncd renews on the dataplane", c->lease_ms / 1e3);
	for (size_t i = 0; i < c->count; i++)
		known += c->members[i].known;
	single(w, "cluster_members", "gauge", "members heard from, this node included", known);
#define MEMBERS(metric, help, expr)					\
	family(w, metric, "gauge", help);				\
	for (size_t i = 0; i < c->count; i++) {				\
		const struct wire_ctl_cluster_member *m = &c->members[i];	\
									\
		snprintf(id, sizeof(id), "%u", m->id);			\
		labels[0] = '\0';					\
		label(labels, sizeof(labels), "member", id);		\
		sample(w, metric, labels, (expr));			\
	}
	MEMBERS("cluster_member_known", "whether the member's state was heard", m->known)
	MEMBERS("cluster_member_active", "whether the member holds the active role",
		m->role == WIRE_ROLE_ACTIVE)
	MEMBERS("cluster_member_eligible", "whether the member may hold the active role",
		m->eligible)
	MEMBERS("cluster_member_synced", "whether the member says it is synced", m->synced)
	MEMBERS("cluster_member_priority", "the member's priority", m->priority)
#undef MEMBERS
}

/* ---------------------------------------------------------------- sync */

/* Every group's self or import lag histogram, as one family. */
static void
lag_family(struct writer *w, const struct wire_ctl_sync_status *st,
	   char groups[][LABELS_MAX], size_t n, bool self, const char *name, const char *help)
{
	family(w, name, "histogram", help);
	for (size_t i = 0; i < n; i++) {
		const struct wire_lag_histogram *h = self ? &st->groups[i].self_lag :
							    &st->groups[i].import_lag;

		histogram(w, name, groups[i], wire_lag_bucket_us, h->cumulative,
			  WIRE_LAG_BUCKETS, h->count, h->sum_us);
	}
}

static void
write_sync(struct writer *w, const struct wire_ctl_sync_status *st)
{
	char groups[WIRE_SYNC_MEMBERS_MAX][LABELS_MAX], labels[LABELS_MAX];
	size_t n = st->n_groups < WIRE_SYNC_MEMBERS_MAX ? st->n_groups : WIRE_SYNC_MEMBERS_MAX;

	single(w, "sync_synced", "gauge",
	       "whether every group and the dataplane hold every entry", st->synced);
	single(w, "sync_dataplane_connected", "gauge", "whether syncd reaches its dataplane",
	       st->dataplane_connected);
	single(w, "sync_entries", "gauge", "entries syncd holds, every group", st->entries);
	single(w, "sync_cache_bytes", "gauge", "memory of syncd's entries", st->cache_bytes);
	single(w, "sync_import_queue_entries", "gauge", "entries waiting for the dataplane",
	       st->import_queue);
	single(w, "sync_exported_entries_total", "counter",
	       "entries the dataplane exported to syncd", st->export_entries);
	for (size_t i = 0; i < n; i++) {
		groups[i][0] = '\0';
		label(groups[i], LABELS_MAX, "group", st->groups[i].name);
	}
#define GROUPS(metric, type, help, expr)				\
	family(w, metric, type, help);					\
	for (size_t i = 0; i < n; i++) {				\
		const struct wire_ctl_sync_group *g = &st->groups[i];	\
									\
		sample(w, metric, groups[i], (expr));			\
	}
	GROUPS("sync_group_members", "gauge", "members of the group", g->n_members)
	GROUPS("sync_entries_sent_total", "counter", "entries multicast", g->entries_sent)
	GROUPS("sync_entries_received_total", "counter", "peers' entries received",
	       g->entries_received)
	GROUPS("sync_entries_imported_total", "counter",
	       "peers' entries the dataplane acknowledged", g->imported)
	GROUPS("sync_entries_rejected_total", "counter", "peers' entries refused, every reason",
	       g->rejected)
	GROUPS("sync_send_queue_messages", "gauge", "messages waiting for the ring", g->send_queue)
	GROUPS("sync_resyncs_total", "counter", "bulk resyncs completed", g->resyncs)
	GROUPS("sync_resync_received_entries_total", "counter",
	       "entries received in bulk resyncs, as requester", g->resync_entries_received)
#undef GROUPS
	family(w, "sync_group_entries", "gauge", "entries held: own (this node's dataplane's), peers'");
	for (size_t i = 0; i < n; i++) {
		labels_from(labels, sizeof(labels), groups[i]);
		label(labels, sizeof(labels), "origin", "own");
		sample(w, "sync_group_entries", labels, st->groups[i].entries_own);
		labels_from(labels, sizeof(labels), groups[i]);
		label(labels, sizeof(labels), "origin", "peers");
		sample(w, "sync_group_entries", labels, st->groups[i].entries_peers);
	}
	family(w, "sync_group_state", "gauge", "the group's state (label state), 1");
	for (size_t i = 0; i < n; i++) {
		labels_from(labels, sizeof(labels), groups[i]);
		label(labels, sizeof(labels), "state", st->groups[i].state);
		sample(w, "sync_group_state", labels, 1);
	}
	family(w, "sync_resync_last_duration_seconds", "gauge", "how long the last resync took");
	for (size_t i = 0; i < n; i++)
		sample_f(w, "sync_resync_last_duration_seconds", groups[i],
			 st->groups[i].resync_last_ms / 1e3);
	lag_family(w, st, groups, n, false, "sync_import_lag_seconds",
		   "a peer's export to this dataplane's import acknowledgement, a message each");
	lag_family(w, st, groups, n, true, "sync_self_lag_seconds",
		   "this node's export to its own delivery by the ring, a message each");
	family(w, "sync_dropped_entries_total", "counter",
	       "entries lost or refused, by reason (group \"\": the node's)");
	for (size_t i = 0; i < st->n_drops; i++) {
		char reason[WIRE_NAME_MAX];

		labels[0] = '\0';
		label(labels, sizeof(labels), "group", st->drops[i].group);
		lower(reason, sizeof(reason), st->drops[i].reason);
		label(labels, sizeof(labels), "reason", reason);
		sample(w, "sync_dropped_entries_total", labels, st->drops[i].count);
	}
}

int
mon_metrics_render(const struct mon_snapshot *s, const struct mon_metrics_ctx *ctx,
		   char **text, size_t *len)
{
	struct writer w = { 0 };
	int rc = 0;

	write_monitor(&w, s, ctx);
	write_dataplane(&w, s, ctx);
	if (s->has_vips) {
		write_vips(&w, s);
		if (backend_labels(&w, s) == 0)
			write_backends(&w, s);
		else
			rc = -ENOMEM;
		free(w.backend_labels);
	}
	if (s->has_bfd)
		write_bfd(&w, &s->bfd.bfd_status);
	if (s->has_cluster)
		write_cluster(&w, &s->cluster.cluster);
	if (s->has_sync)
		write_sync(&w, &s->sync.sync_status);
	if (s->has_health)
		write_probes(&w, s);
	if (w.oom || w.buf == NULL)
		rc = -ENOMEM;
	if (rc < 0) {
		free(w.buf);
		return rc;
	}
	*text = w.buf;
	*len = w.len;
	return 0;
}

int
mon_metrics_write(FILE *f, const struct mon_snapshot *s, const struct mon_metrics_ctx *ctx)
{
	char *text;
	size_t len;
	int rc = mon_metrics_render(s, ctx, &text, &len);

	if (rc < 0)
		return rc;
	if (fwrite(text, 1, len, f) != len || fflush(f) != 0)
		rc = -EIO;
	free(text);
	return rc;
}
