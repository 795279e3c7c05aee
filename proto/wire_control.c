/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control messages (control.proto): the dataplane's local IPC.
 *
 * One table indexed by kind holds, for each body: its oneof case, its check
 * (run on decoded input and on our own output alike), and its conversions
 * both ways. The envelope code around it reaches a body through the oneof
 * field's descriptor, so no kind is special there.
 */
#include "proto/wire.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire_internal.h"

const char *const wire_ctl_kind_names[WIRE_CTL_KIND_MAX] = {
	[WIRE_CTL_STATUS_REQUEST] = "status-request",
	[WIRE_CTL_STATUS_RESPONSE] = "status-response",
	[WIRE_CTL_COUNTERS_REQUEST] = "counters-request",
	[WIRE_CTL_COUNTERS_RESPONSE] = "counters-response",
	[WIRE_CTL_VIP_LIST_REQUEST] = "vip-list-request",
	[WIRE_CTL_VIP_LIST_RESPONSE] = "vip-list-response",
	[WIRE_CTL_BACKEND_SET] = "backend-set",
	[WIRE_CTL_RELOAD_REQUEST] = "reload-request",
	[WIRE_CTL_RELOAD_RESULT] = "reload-result",
	[WIRE_CTL_OWNERSHIP_SET] = "ownership-set",
	[WIRE_CTL_FLOW_LOOKUP_REQUEST] = "flow-lookup-request",
	[WIRE_CTL_FLOW_LOOKUP_RESPONSE] = "flow-lookup-response",
	[WIRE_CTL_DUMP_REQUEST] = "dump-request",
	[WIRE_CTL_DUMP_RESPONSE] = "dump-response",
	[WIRE_CTL_EXPORT_SUBSCRIBE] = "export-subscribe",
	[WIRE_CTL_EXPORT_BATCH] = "export-batch",
	[WIRE_CTL_IMPORT_BATCH] = "import-batch",
	[WIRE_CTL_ERROR] = "error",
	[WIRE_CTL_SYNC_VERIFY_REQUEST] = "sync-verify-request",
	[WIRE_CTL_SYNC_VERIFY_RESULT] = "sync-verify-result",
	[WIRE_CTL_CLUSTER_REQUEST] = "cluster-request",
	[WIRE_CTL_CLUSTER_STATUS] = "cluster-status",
	[WIRE_CTL_CLUSTER_STANDBY] = "cluster-standby",
	[WIRE_CTL_SYNC_STATUS_REQUEST] = "sync-status-request",
	[WIRE_CTL_SYNC_STATUS] = "sync-status",
	[WIRE_CTL_BFD_STATUS_REQUEST] = "bfd-status-request",
	[WIRE_CTL_BFD_STATUS] = "bfd-status",
	[WIRE_CTL_HEALTH_STATUS_REQUEST] = "health-status-request",
	[WIRE_CTL_HEALTH_STATUS] = "health-status",
};

const char *const wire_flow_flag_names[WIRE_FLOW_FLAG_BITS] = {
	"established", "closing", "from-peer", "provisional",
};

const char *const wire_backend_state_names[WIRE_BACKEND_STATE_MAX] = {
	[WIRE_BACKEND_UP] = "up",
	[WIRE_BACKEND_DOWN] = "down",
	[WIRE_BACKEND_DRAINING] = "draining",
};

const char *const wire_backend_action_names[WIRE_BACKEND_ACTION_MAX] = {
	[WIRE_BACKEND_SET_WEIGHT] = "set-weight",
	[WIRE_BACKEND_DRAIN] = "drain",
	[WIRE_BACKEND_MARK_DOWN] = "down",
	[WIRE_BACKEND_MARK_UP] = "up",
};

const char *const wire_flow_table_names[WIRE_FLOW_TABLE_MAX] = {
	[WIRE_FLOW_TABLE_NONE] = "none",
	[WIRE_FLOW_TABLE_WORKER] = "worker",
	[WIRE_FLOW_TABLE_SYNCED] = "synced",
	[WIRE_FLOW_TABLE_MAGLEV] = "maglev",
};

const char *const wire_flow_event_names[WIRE_FLOW_EVENT_MAX] = {
	[WIRE_FLOW_EVENT_NEW] = "new",
	[WIRE_FLOW_EVENT_REFRESH] = "refresh",
	[WIRE_FLOW_EVENT_CLOSE] = "close",
};

const char *const wire_bfd_state_names[WIRE_BFD_STATE_MAX] = {
	[WIRE_BFD_STATE_ADMIN_DOWN] = "AdminDown",
	[WIRE_BFD_STATE_DOWN] = "Down",
	[WIRE_BFD_STATE_INIT] = "Init",
	[WIRE_BFD_STATE_UP] = "Up",
};

const char *const wire_bfd_diag_names[WIRE_BFD_DIAG_MAX] = {
	[WIRE_BFD_DIAG_NONE] = "none",
	[WIRE_BFD_DIAG_DETECT_EXPIRED] = "detect-expired",
	[WIRE_BFD_DIAG_ECHO_FAILED] = "echo-failed",
	[WIRE_BFD_DIAG_NEIGHBOR_DOWN] = "neighbor-down",
	[WIRE_BFD_DIAG_FORWARDING_RESET] = "forwarding-reset",
	[WIRE_BFD_DIAG_PATH_DOWN] = "path-down",
	[WIRE_BFD_DIAG_CONCAT_PATH_DOWN] = "concat-path-down",
	[WIRE_BFD_DIAG_ADMIN_DOWN] = "admin-down",
	[WIRE_BFD_DIAG_REVERSE_CONCAT_PATH_DOWN] = "reverse-concat-path-down",
};

bool
wire_ctl_kind_is_request(enum wire_ctl_kind kind)
{
	switch (kind) {
	case WIRE_CTL_STATUS_REQUEST:
	case WIRE_CTL_COUNTERS_REQUEST:
	case WIRE_CTL_VIP_LIST_REQUEST:
	case WIRE_CTL_BACKEND_SET:
	case WIRE_CTL_RELOAD_REQUEST:
	case WIRE_CTL_OWNERSHIP_SET:
	case WIRE_CTL_FLOW_LOOKUP_REQUEST:
	case WIRE_CTL_DUMP_REQUEST:
	case WIRE_CTL_EXPORT_SUBSCRIBE:
	case WIRE_CTL_IMPORT_BATCH:
	case WIRE_CTL_SYNC_VERIFY_REQUEST:
	case WIRE_CTL_CLUSTER_REQUEST:
	case WIRE_CTL_CLUSTER_STANDBY:
	case WIRE_CTL_SYNC_STATUS_REQUEST:
	case WIRE_CTL_BFD_STATUS_REQUEST:
	case WIRE_CTL_HEALTH_STATUS_REQUEST:
		return true;
	default:
		return false;
	}
}

/*
 * control.proto's enums are ours plus one, value 0 being UNSPECIFIED (proto3
 * wants a zero value; a field never set must not read as UP or NEW).
 */
static_assert((int)MAGLB__CONTROL__BACKEND_STATE__BACKEND_STATE_DRAINING ==
	      WIRE_BACKEND_DRAINING + 1, "enum order as in control.proto");
static_assert((int)MAGLB__CONTROL__BACKEND_ACTION__BACKEND_ACTION_UP ==
	      WIRE_BACKEND_MARK_UP + 1, "enum order as in control.proto");
static_assert((int)MAGLB__CONTROL__FLOW_TABLE__FLOW_TABLE_MAGLEV ==
	      WIRE_FLOW_TABLE_MAGLEV + 1, "enum order as in control.proto");
static_assert((int)MAGLB__CONTROL__FLOW_EVENT__FLOW_EVENT_CLOSE ==
	      WIRE_FLOW_EVENT_CLOSE + 1, "enum order as in control.proto");
/* But BfdState and BfdDiag: RFC 5880's values, where 0 is a real one. */
static_assert((int)MAGLB__CONTROL__BFD_STATE__BFD_STATE_UP == WIRE_BFD_STATE_UP &&
	      (int)MAGLB__CONTROL__BFD_DIAG__BFD_DIAG_REVERSE_CONCAT_PATH_DOWN ==
	      WIRE_BFD_DIAG_REVERSE_CONCAT_PATH_DOWN, "RFC 5880 4.1's values");

static int
enum_to_pb(unsigned int value, unsigned int max)
{
	return value < max ? (int)value + 1 : 0;
}

static bool
enum_pb_ok(int value, unsigned int max)
{
	return value >= 1 && (unsigned int)value <= max;
}

/* An enum whose protobuf value is ours (0 is valid). */
static bool
enum_same_ok(int value, unsigned int max)
{
	return value >= 0 && (unsigned int)value < max;
}

static bool
fail(enum wire_drop *why, enum wire_drop reason)
{
	*why = reason;
	return false;
}

/* The protobuf-c messages of one message being encoded. */
struct ctl_pb {
	Maglb__Control__Envelope env;
	union {
		Maglb__Control__StatusResponse status;
		Maglb__Control__CountersRequest counters_request;
		Maglb__Control__CountersResponse counters;
		Maglb__Control__VipListRequest vip_list_request;
		Maglb__Control__VipListResponse vip_list;
		Maglb__Control__BackendSet backend_set;
		Maglb__Control__ReloadRequest reload_request;
		Maglb__Control__ReloadResult reload_result;
		Maglb__Control__OwnershipSet ownership;
		Maglb__Control__FlowLookupRequest lookup_request;
		Maglb__Control__FlowLookupResponse lookup;
		Maglb__Control__DumpRequest dump_request;
		Maglb__Control__DumpResponse dump;
		Maglb__Control__ExportSubscribe export_subscribe;
		Maglb__Control__FlowBatch flows;
		Maglb__Control__Error error;
		Maglb__Control__SyncVerifyRequest sync_verify_request;
		Maglb__Control__SyncVerifyResult sync_verify;
		Maglb__Control__ClusterStatus cluster;
		Maglb__Control__ClusterStandby cluster_standby;
		Maglb__Control__SyncStatus sync_status;
		Maglb__Control__BfdStatus bfd_status;
		Maglb__Control__HealthStatusRequest health_status_request;
		Maglb__Control__HealthStatus health_status;
	} body;
	Maglb__Sync__Flow flow;     /* lookups */
	Maglb__Control__Histogram hist;  /* a body's own histogram (health status) */
	void **arrays[2];           /* allocated */
	Maglb__Sync__Entries cols;  /* export and import: arrays[0] holds its arrays */
};

/* Point a protobuf-c string at a C array that must hold its NUL. */
static int
string_to_pb(const char *s, size_t size, char **out)
{
	if (!wire_string_terminated(s, size))
		return -EINVAL;
	/* protobuf-c's strings are not const; packing only reads them. */
	*out = (char *)s;
	return 0;
}

/* p->arrays[slot] = n messages copied from init; -ENOMEM. */
static int
array_to_pb(struct ctl_pb *p, int slot, size_t n, size_t size,
	    const void *init, const void *items)
{
	if (n == 0)
		return 0;
	if (items == NULL)
		return -EINVAL;
	p->arrays[slot] = wire_pb_array_new(n, size, init);
	return p->arrays[slot] != NULL ? 0 : -ENOMEM;
}

/* n zeroed items of size bytes for a decoded array; NULL when n is 0. */
static void *
array_to_c(size_t n, size_t size)
{
	return n > 0 ? calloc(n, size) : NULL;
}

/*
 * A body with two repeated message fields (vip_list, sync_status,
 * bfd_status): each a C array and its count in the C body, converted
 * item by item. The protobuf-c side is found by the field's name in the
 * body's descriptor, as protobuf-c itself reaches it.
 */
struct ctl_repeated {
	const char *name;           /* of the field in the body message */
	size_t items, count;        /* offsetof the array and its count in C */
	size_t size;                /* bytes of a C item */
	size_t pb_size;             /* bytes of a protobuf-c item */
	const void *pb_init;        /* a protobuf-c item, initialized */
	void (*to_c)(const void *pb, void *item);   /* of a checked item */
	int (*to_pb)(const void *item, void *pb);   /* 0 or -EINVAL */
};

/* All pointers to structs look alike (C11 6.2.5); a void * is one too here. */
static_assert(sizeof(void *) == sizeof(struct wire_ctl_vip *), "arrays stored as void *");

static const ProtobufCFieldDescriptor *
repeated_field(const ProtobufCMessage *pb, const char *name)
{
	const ProtobufCFieldDescriptor *f;

	f = protobuf_c_message_descriptor_get_field_by_name(pb->descriptor, name);
	assert(f != NULL && f->label == PROTOBUF_C_LABEL_REPEATED &&
	       f->type == PROTOBUF_C_TYPE_MESSAGE);
	return f;
}

/*
 * Convert the two repeated fields of a checked body pb into new arrays
 * of the C body c (NULL when empty): both, or -ENOMEM and c untouched.
 */
static int
repeated_to_c(const struct ctl_repeated rep[2], const void *pb, void *c)
{
	void *const *pbs[2];
	void *out[2];
	size_t n[2];

	for (int k = 0; k < 2; k++) {
		const ProtobufCFieldDescriptor *f = repeated_field(pb, rep[k].name);

		memcpy(&n[k], (const uint8_t *)pb + f->quantifier_offset, sizeof(n[k]));
		memcpy(&pbs[k], (const uint8_t *)pb + f->offset, sizeof(pbs[k]));
		out[k] = array_to_c(n[k], rep[k].size);
	}
	if ((out[0] == NULL && n[0] > 0) || (out[1] == NULL && n[1] > 0)) {
		free(out[0]);
		free(out[1]);
		return -ENOMEM;
	}
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < n[k]; i++)
			rep[k].to_c(pbs[k][i], (uint8_t *)out[k] + i * rep[k].size);
		memcpy((uint8_t *)c + rep[k].items, &out[k], sizeof(out[k]));
		memcpy((uint8_t *)c + rep[k].count, &n[k], sizeof(n[k]));
	}
	return 0;
}

/*
 * The two arrays of the C body c as the repeated fields of pb, their
 * messages in p->arrays[0] and [1]: 0, -EINVAL or -ENOMEM.
 */
static int
repeated_to_pb(struct ctl_pb *p, const struct ctl_repeated rep[2], const void *c,
	       ProtobufCMessage *pb)
{
	for (int k = 0; k < 2; k++) {
		const ProtobufCFieldDescriptor *f = repeated_field(pb, rep[k].name);
		const uint8_t *items;
		size_t n;
		int ret;

		memcpy(&items, (const uint8_t *)c + rep[k].items, sizeof(items));
		memcpy(&n, (const uint8_t *)c + rep[k].count, sizeof(n));
		ret = array_to_pb(p, k, n, rep[k].pb_size, rep[k].pb_init, items);
		for (size_t i = 0; ret == 0 && i < n; i++)
			ret = rep[k].to_pb(items + i * rep[k].size, p->arrays[k][i]);
		if (ret < 0)
			return ret;
		memcpy((uint8_t *)pb + f->quantifier_offset, &n, sizeof(n));
		memcpy((uint8_t *)pb + f->offset, &p->arrays[k], sizeof(p->arrays[k]));
	}
	return 0;
}

/* ----------------------------------------------------------- status */

static int
status_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__StatusResponse *s = body;

	m->status = (struct wire_ctl_status){
		.node_id = s->node_id,
		.workers = s->workers,
		.ports = s->ports,
		.vips = s->vips,
		.vips_owned = s->vips_owned,
		.uptime_ms = s->uptime_ms,
		.flows_local = s->flows_local,
		.flows_synced = s->flows_synced,
		.maglev_digest = s->maglev_digest,
		.serving = s->serving,
		.serving_lease_remaining_ms = s->serving_lease_remaining_ms,
	};
	return 0;
}

static int
status_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__StatusResponse *s = &p->body.status;

	*s = (Maglb__Control__StatusResponse)MAGLB__CONTROL__STATUS_RESPONSE__INIT;
	s->node_id = m->status.node_id;
	s->workers = m->status.workers;
	s->ports = m->status.ports;
	s->vips = m->status.vips;
	s->vips_owned = m->status.vips_owned;
	s->uptime_ms = m->status.uptime_ms;
	s->flows_local = m->status.flows_local;
	s->flows_synced = m->status.flows_synced;
	s->maglev_digest = m->status.maglev_digest;
	s->serving = m->status.serving;
	s->serving_lease_remaining_ms = m->status.serving_lease_remaining_ms;
	return 0;
}

/* --------------------------------------------------------- counters */

static bool
counters_request_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__CountersRequest *r = body;

	if (!wire_string_fits(r->scope, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
counters_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__CountersRequest *r = body;

	wire_string_copy(m->counters_request.scope, WIRE_NAME_MAX, r->scope);
	return 0;
}

static int
counters_request_to_pb(const struct wire_ctl_msg *m,
		       struct ctl_pb *p)
{
	Maglb__Control__CountersRequest *r = &p->body.counters_request;

	*r = (Maglb__Control__CountersRequest)MAGLB__CONTROL__COUNTERS_REQUEST__INIT;
	return string_to_pb(m->counters_request.scope, WIRE_NAME_MAX, &r->scope);
}

static bool
counters_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__CountersResponse *r = body;

	for (size_t i = 0; i < r->n_counters; i++)
		if (!wire_string_fits(r->counters[i]->scope, WIRE_NAME_MAX) ||
		    !wire_string_fits(r->counters[i]->name, WIRE_NAME_MAX))
			return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
counters_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__CountersResponse *r = body;
	struct wire_ctl_counter *out;

	out = array_to_c(r->n_counters, sizeof(*out));
	if (out == NULL && r->n_counters > 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_counters; i++) {
		wire_string_copy(out[i].scope, WIRE_NAME_MAX, r->counters[i]->scope);
		wire_string_copy(out[i].name, WIRE_NAME_MAX, r->counters[i]->name);
		out[i].value = r->counters[i]->value;
	}
	m->counters.counters = out;
	m->counters.count = r->n_counters;
	return 0;
}

static int
counters_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	static const Maglb__Control__Counter init = MAGLB__CONTROL__COUNTER__INIT;
	Maglb__Control__CountersResponse *r = &p->body.counters;
	const struct wire_ctl_counter *in = m->counters.counters;
	size_t n = m->counters.count;
	int ret;

	*r = (Maglb__Control__CountersResponse)MAGLB__CONTROL__COUNTERS_RESPONSE__INIT;
	ret = array_to_pb(p, 0, n, sizeof(init), &init, in);
	if (ret < 0)
		return ret;
	r->counters = (Maglb__Control__Counter **)p->arrays[0];
	r->n_counters = n;
	for (size_t i = 0; i < n; i++) {
		if (string_to_pb(in[i].scope, WIRE_NAME_MAX, &r->counters[i]->scope) < 0 ||
		    string_to_pb(in[i].name, WIRE_NAME_MAX, &r->counters[i]->name) < 0)
			return -EINVAL;
		r->counters[i]->value = in[i].value;
	}
	return 0;
}

/* ------------------------------------------------------------- VIPs */

static bool
vip_list_request_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__VipListRequest *r = body;

	if (!wire_string_fits(r->name, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
vip_list_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__VipListRequest *r = body;

	wire_string_copy(m->vip_list_request.name, WIRE_NAME_MAX, r->name);
	m->vip_list_request.backends = r->backends;
	m->vip_list_request.stats = r->stats;
	m->vip_list_request.cursor = r->cursor;
	return 0;
}

static int
vip_list_request_to_pb(const struct wire_ctl_msg *m,
		       struct ctl_pb *p)
{
	Maglb__Control__VipListRequest *r = &p->body.vip_list_request;

	*r = (Maglb__Control__VipListRequest)MAGLB__CONTROL__VIP_LIST_REQUEST__INIT;
	r->backends = m->vip_list_request.backends;
	r->stats = m->vip_list_request.stats;
	r->cursor = m->vip_list_request.cursor;
	return string_to_pb(m->vip_list_request.name, WIRE_NAME_MAX, &r->name);
}

static bool
vip_check(const Maglb__Control__Vip *v, enum wire_drop *why)
{
	if (!wire_string_fits(v->name, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	if (wire_addr_family(v->address.len) == 0)
		return fail(why, WIRE_DROP_BAD_ADDRESS);
	if (!wire_proto_ok((unsigned int)v->protocol))
		return fail(why, WIRE_DROP_BAD_PROTOCOL);
	if (v->port > UINT16_MAX)
		return fail(why, WIRE_DROP_BAD_PORT);
	return true;
}

static bool
backend_check(const Maglb__Control__Backend *b, enum wire_drop *why)
{
	if (!wire_string_fits(b->vip, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	if (wire_addr_family(b->address.len) == 0)
		return fail(why, WIRE_DROP_BAD_ADDRESS);
	if (b->next_hop_mac.len != 0 && b->next_hop_mac.len != WIRE_MAC_LEN)
		return fail(why, WIRE_DROP_BAD_ADDRESS);
	if (!enum_pb_ok(b->state, WIRE_BACKEND_STATE_MAX))
		return fail(why, WIRE_DROP_BAD_ENUM);
	return true;
}

static bool
vip_list_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__VipListResponse *r = body;

	for (size_t i = 0; i < r->n_vips; i++)
		if (!vip_check(r->vips[i], why))
			return false;
	for (size_t i = 0; i < r->n_backends; i++)
		if (!backend_check(r->backends[i], why))
			return false;
	return true;
}

/* Vip and Backend carry the same traffic fields, by the same names. */
#define TRAFFIC_OF_PB(m) ((struct wire_ctl_traffic){                       \
	.packets = (m)->packets, .bytes = (m)->bytes,                        \
	.new_flows = (m)->new_flows, .untracked = (m)->untracked,            \
	.synced_hits = (m)->synced_hits, .maglev_picks = (m)->maglev_picks,  \
})
#define TRAFFIC_TO_PB(m, t) do {                                             \
	(m)->packets = (t)->packets;                                         \
	(m)->bytes = (t)->bytes;                                             \
	(m)->new_flows = (t)->new_flows;                                     \
	(m)->untracked = (t)->untracked;                                     \
	(m)->synced_hits = (t)->synced_hits;                                 \
	(m)->maglev_picks = (t)->maglev_picks;                               \
} while (0)

static void
vip_to_c(const void *pb, void *item)
{
	const Maglb__Control__Vip *v = pb;
	struct wire_ctl_vip *out = item;

	wire_string_copy(out->name, WIRE_NAME_MAX, v->name);
	out->family = wire_addr_family(v->address.len);
	out->proto = (uint8_t)v->protocol;
	out->port = (uint16_t)v->port;
	wire_addr_copy(out->address, &v->address);
	out->owned = v->owned;
	out->backends = v->backends;
	out->backends_up = v->backends_up;
	out->flows = v->flows;
	out->maglev_digest = v->maglev_digest;
	out->table_size = v->table_size;
	out->traffic = TRAFFIC_OF_PB(v);
}

static void
backend_to_c(const void *pb, void *item)
{
	const Maglb__Control__Backend *b = pb;
	struct wire_ctl_backend *out = item;

	wire_string_copy(out->vip, WIRE_NAME_MAX, b->vip);
	out->family = wire_addr_family(b->address.len);
	wire_addr_copy(out->address, &b->address);
	out->weight = b->weight;
	out->state = (enum wire_backend_state)(b->state - 1);
	out->next_hop_resolved = b->next_hop_mac.len == WIRE_MAC_LEN;
	if (out->next_hop_resolved)
		memcpy(out->next_hop_mac, b->next_hop_mac.data, WIRE_MAC_LEN);
	out->config_weight = b->config_weight;
	out->maglev_slots = b->maglev_slots;
	out->flows = b->flows;
	out->traffic = TRAFFIC_OF_PB(b);
}

static int
vip_to_pb(const void *item, void *pb)
{
	const struct wire_ctl_vip *v = item;
	Maglb__Control__Vip *out = pb;

	out->address = wire_addr_to_pb(v->family, v->address);
	out->port = v->port;
	out->protocol = (Maglb__Sync__IpProtocol)v->proto;
	out->owned = v->owned;
	out->backends = v->backends;
	out->backends_up = v->backends_up;
	out->flows = v->flows;
	out->maglev_digest = v->maglev_digest;
	out->table_size = v->table_size;
	TRAFFIC_TO_PB(out, &v->traffic);
	return string_to_pb(v->name, WIRE_NAME_MAX, &out->name);
}

static int
backend_to_pb(const void *item, void *pb)
{
	const struct wire_ctl_backend *b = item;
	Maglb__Control__Backend *out = pb;

	out->address = wire_addr_to_pb(b->family, b->address);
	/* protobuf-c's bytes are not const; packing only reads them. */
	out->next_hop_mac = (ProtobufCBinaryData){
		.len = b->next_hop_resolved ? WIRE_MAC_LEN : 0,
		.data = (uint8_t *)b->next_hop_mac,
	};
	out->weight = b->weight;
	out->state = (Maglb__Control__BackendState)
		enum_to_pb(b->state, WIRE_BACKEND_STATE_MAX);
	out->config_weight = b->config_weight;
	out->maglev_slots = b->maglev_slots;
	out->flows = b->flows;
	TRAFFIC_TO_PB(out, &b->traffic);
	return string_to_pb(b->vip, WIRE_NAME_MAX, &out->vip);
}

static const Maglb__Control__Vip vip_init = MAGLB__CONTROL__VIP__INIT;
static const Maglb__Control__Backend backend_init = MAGLB__CONTROL__BACKEND__INIT;

static const struct ctl_repeated vip_list_repeated[2] = {
	{ "vips", offsetof(struct wire_ctl_vip_list, vips),
	  offsetof(struct wire_ctl_vip_list, n_vips), sizeof(struct wire_ctl_vip),
	  sizeof(vip_init), &vip_init, vip_to_c, vip_to_pb },
	{ "backends", offsetof(struct wire_ctl_vip_list, backends),
	  offsetof(struct wire_ctl_vip_list, n_backends), sizeof(struct wire_ctl_backend),
	  sizeof(backend_init), &backend_init, backend_to_c, backend_to_pb },
};

static int
vip_list_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__VipListResponse *r = body;

	m->vip_list.next_cursor = r->next_cursor;
	return repeated_to_c(vip_list_repeated, body, &m->vip_list);
}

static int
vip_list_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__VipListResponse *r = &p->body.vip_list;

	*r = (Maglb__Control__VipListResponse)MAGLB__CONTROL__VIP_LIST_RESPONSE__INIT;
	r->next_cursor = m->vip_list.next_cursor;
	return repeated_to_pb(p, vip_list_repeated, &m->vip_list, &r->base);
}

/* --------------------------------------------------------- backends */

static bool
backend_set_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__BackendSet *s = body;

	if (!wire_string_fits(s->vip, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	if (wire_addr_family(s->backend.len) == 0)
		return fail(why, WIRE_DROP_BAD_ADDRESS);
	if (!enum_pb_ok(s->action, WIRE_BACKEND_ACTION_MAX))
		return fail(why, WIRE_DROP_BAD_ENUM);
	return true;
}

static int
backend_set_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__BackendSet *s = body;
	struct wire_ctl_backend_set *out = &m->backend_set;

	wire_string_copy(out->vip, WIRE_NAME_MAX, s->vip);
	out->family = wire_addr_family(s->backend.len);
	wire_addr_copy(out->backend, &s->backend);
	out->action = (enum wire_backend_action)(s->action - 1);
	out->weight = s->weight;
	return 0;
}

static int
backend_set_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__BackendSet *s = &p->body.backend_set;
	const struct wire_ctl_backend_set *in = &m->backend_set;

	*s = (Maglb__Control__BackendSet)MAGLB__CONTROL__BACKEND_SET__INIT;
	s->backend = wire_addr_to_pb(in->family, in->backend);
	s->action = (Maglb__Control__BackendAction)
		enum_to_pb(in->action, WIRE_BACKEND_ACTION_MAX);
	s->weight = in->weight;
	return string_to_pb(in->vip, WIRE_NAME_MAX, &s->vip);
}

/* ----------------------------------------------------------- reload */

static int
reload_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__ReloadRequest *r = body;

	m->reload_request.check_only = r->check_only;
	return 0;
}

static int
reload_request_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__ReloadRequest *r = &p->body.reload_request;

	*r = (Maglb__Control__ReloadRequest)MAGLB__CONTROL__RELOAD_REQUEST__INIT;
	r->check_only = m->reload_request.check_only;
	return 0;
}

static bool
reload_result_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__ReloadResult *r = body;

	if (!wire_string_fits(r->error, WIRE_TEXT_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
reload_result_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__ReloadResult *r = body;

	m->reload_result.ok = r->ok;
	wire_string_copy(m->reload_result.error, WIRE_TEXT_MAX, r->error);
	return 0;
}

static int
reload_result_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__ReloadResult *r = &p->body.reload_result;

	*r = (Maglb__Control__ReloadResult)MAGLB__CONTROL__RELOAD_RESULT__INIT;
	r->ok = m->reload_result.ok;
	return string_to_pb(m->reload_result.error, WIRE_TEXT_MAX, &r->error);
}

/* -------------------------------------------------------- ownership */

static bool
ownership_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__OwnershipSet *s = body;

	for (size_t i = 0; i < s->n_vips; i++)
		if (!wire_string_fits(s->vips[i]->vip, WIRE_NAME_MAX))
			return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
ownership_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__OwnershipSet *s = body;
	struct wire_ctl_ownership_entry *out;

	out = array_to_c(s->n_vips, sizeof(*out));
	if (out == NULL && s->n_vips > 0)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_vips; i++) {
		wire_string_copy(out[i].vip, WIRE_NAME_MAX, s->vips[i]->vip);
		out[i].owned = s->vips[i]->owned;
	}
	m->ownership = (struct wire_ctl_ownership){
		.vips = out,
		.count = s->n_vips,
		.announce = s->announce,
		.lease_ms = s->lease_ms,
		.serving = s->serving,
	};
	return 0;
}

static int
ownership_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	static const Maglb__Control__VipOwnership init =
		MAGLB__CONTROL__VIP_OWNERSHIP__INIT;
	Maglb__Control__OwnershipSet *s = &p->body.ownership;
	const struct wire_ctl_ownership *in = &m->ownership;
	int ret;

	*s = (Maglb__Control__OwnershipSet)MAGLB__CONTROL__OWNERSHIP_SET__INIT;
	ret = array_to_pb(p, 0, in->count, sizeof(init), &init, in->vips);
	if (ret < 0)
		return ret;
	s->vips = (Maglb__Control__VipOwnership **)p->arrays[0];
	s->n_vips = in->count;
	s->announce = in->announce;
	s->lease_ms = in->lease_ms;
	s->serving = in->serving;
	for (size_t i = 0; i < in->count; i++) {
		if (string_to_pb(in->vips[i].vip, WIRE_NAME_MAX, &s->vips[i]->vip) < 0)
			return -EINVAL;
		s->vips[i]->owned = in->vips[i].owned;
	}
	return 0;
}

/* ---------------------------------------------------------- lookups */

static bool
lookup_request_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__FlowLookupRequest *r = body;

	return wire_flow_check(r->key, false, why);
}

static int
lookup_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__FlowLookupRequest *r = body;

	wire_flow_from_pb(r->key, &m->lookup_key);
	return 0;
}

static int
lookup_request_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__FlowLookupRequest *r = &p->body.lookup_request;

	*r = (Maglb__Control__FlowLookupRequest)
		MAGLB__CONTROL__FLOW_LOOKUP_REQUEST__INIT;
	wire_flow_to_pb(&m->lookup_key, &p->flow);
	r->key = &p->flow;
	return 0;
}

static bool
lookup_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__FlowLookupResponse *r = body;

	if (!enum_pb_ok(r->table, WIRE_FLOW_TABLE_MAX))
		return fail(why, WIRE_DROP_BAD_ENUM);
	return wire_flow_check(r->flow,
			       r->table != MAGLB__CONTROL__FLOW_TABLE__FLOW_TABLE_NONE,
			       why);
}

/*
 * The control-only flag (WIRE_FLOW_PROVISIONAL) of a dump's or a lookup's
 * entries, which the conversions shared with sync messages leave out.
 */
static void
provisional_to_c(Maglb__Sync__Flow *const *pbs, size_t n, struct wire_flow *f)
{
	for (size_t i = 0; i < n; i++)
		f[i].flags |= pbs[i]->flags & WIRE_FLOW_PROVISIONAL;
}

static void
provisional_to_pb(const struct wire_flow *f, size_t n, Maglb__Sync__Flow **pbs)
{
	for (size_t i = 0; i < n; i++)
		pbs[i]->flags |= f[i].flags & WIRE_FLOW_PROVISIONAL;
}

static int
lookup_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__FlowLookupResponse *r = body;

	m->lookup.table = (enum wire_flow_table)(r->table - 1);
	m->lookup.worker = r->worker;
	wire_flow_from_pb(r->flow, &m->lookup.flow);
	provisional_to_c(&r->flow, 1, &m->lookup.flow);
	return 0;
}

static int
lookup_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__FlowLookupResponse *r = &p->body.lookup;

	*r = (Maglb__Control__FlowLookupResponse)
		MAGLB__CONTROL__FLOW_LOOKUP_RESPONSE__INIT;
	r->table = (Maglb__Control__FlowTable)
		enum_to_pb(m->lookup.table, WIRE_FLOW_TABLE_MAX);
	r->worker = m->lookup.worker;
	wire_flow_to_pb(&m->lookup.flow, &p->flow);
	r->flow = &p->flow;
	provisional_to_pb(&m->lookup.flow, 1, &r->flow);
	return 0;
}

/* ------------------------------------------------------------ dumps */

static bool
dump_request_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__DumpRequest *r = body;

	if (!wire_string_fits(r->vip, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
dump_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__DumpRequest *r = body;

	m->dump_request.cursor = r->cursor;
	m->dump_request.limit = r->limit;
	wire_string_copy(m->dump_request.vip, WIRE_NAME_MAX, r->vip);
	return 0;
}

static int
dump_request_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__DumpRequest *r = &p->body.dump_request;

	*r = (Maglb__Control__DumpRequest)MAGLB__CONTROL__DUMP_REQUEST__INIT;
	r->cursor = m->dump_request.cursor;
	r->limit = m->dump_request.limit;
	return string_to_pb(m->dump_request.vip, WIRE_NAME_MAX, &r->vip);
}

static bool
dump_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__DumpResponse *r = body;

	return wire_flows_check(r->entries, r->n_entries, why);
}

static int
dump_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__DumpResponse *r = body;

	int ret;

	m->dump.count = r->n_entries;
	m->dump.next_cursor = r->next_cursor;
	ret = wire_flows_from_pb(r->entries, r->n_entries, &m->dump.entries);
	if (ret == 0)
		provisional_to_c(r->entries, r->n_entries, m->dump.entries);
	return ret;
}

/* p->arrays[0] = n entries as protobuf-c messages. */
static int
flows_to_pb(const struct wire_flow *f, size_t n, struct ctl_pb *p,
	    Maglb__Sync__Flow ***out)
{
	*out = NULL;
	if (n == 0)
		return 0;
	if (f == NULL)
		return -EINVAL;
	p->arrays[0] = (void **)wire_flows_to_pb(f, n);
	*out = (Maglb__Sync__Flow **)p->arrays[0];
	return *out != NULL ? 0 : -ENOMEM;
}

static int
dump_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__DumpResponse *r = &p->body.dump;

	*r = (Maglb__Control__DumpResponse)MAGLB__CONTROL__DUMP_RESPONSE__INIT;
	int ret;

	r->n_entries = m->dump.count;
	r->next_cursor = m->dump.next_cursor;
	ret = flows_to_pb(m->dump.entries, m->dump.count, p, &r->entries);
	if (ret == 0)
		provisional_to_pb(m->dump.entries, m->dump.count, r->entries);
	return ret;
}

/* -------------------------------------------------- export / import */

static int
export_subscribe_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__ExportSubscribe *s = body;

	m->export_subscribe.enable = s->enable;
	return 0;
}

static int
export_subscribe_to_pb(const struct wire_ctl_msg *m,
		       struct ctl_pb *p)
{
	Maglb__Control__ExportSubscribe *s = &p->body.export_subscribe;

	*s = (Maglb__Control__ExportSubscribe)MAGLB__CONTROL__EXPORT_SUBSCRIBE__INIT;
	s->enable = m->export_subscribe.enable;
	return 0;
}

static bool
flows_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__FlowBatch *b = body;
	size_t n = b->entries != NULL ? b->entries->count : 0;

	if (!enum_pb_ok(b->event, WIRE_FLOW_EVENT_MAX))
		return fail(why, WIRE_DROP_BAD_ENUM);
	return wire_cols_check(b->entries, n, why);
}

static int
flows_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__FlowBatch *b = body;
	size_t n = b->entries != NULL ? b->entries->count : 0;

	m->flows.event = (enum wire_flow_event)(b->event - 1);
	m->flows.count = n;
	m->flows.dropped = b->dropped;
	m->flows.peer = b->peer;
	m->flows.entries = NULL;
	if (n == 0)
		return 0;
	m->flows.entries = malloc(n * sizeof(*m->flows.entries));
	if (m->flows.entries == NULL)
		return -ENOMEM;
	wire_cols_to_c(b->entries, n, m->flows.entries);
	return 0;
}

static int
flows_batch_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__FlowBatch *b = &p->body.flows;

	*b = (Maglb__Control__FlowBatch)MAGLB__CONTROL__FLOW_BATCH__INIT;
	b->event = (Maglb__Control__FlowEvent)
		enum_to_pb(m->flows.event, WIRE_FLOW_EVENT_MAX);
	b->dropped = m->flows.dropped;
	b->peer = m->flows.peer;
	if (m->flows.count == 0)
		return 0;
	if (m->flows.entries == NULL)
		return -EINVAL;
	b->entries = &p->cols;
	return wire_cols_from_c(m->flows.entries, m->flows.count, false, &p->cols,
				(void **)&p->arrays[0]);
}

/* ------------------------------------------------------------ error */

static bool
error_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__Error *e = body;

	if (!wire_string_fits(e->message, WIRE_TEXT_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
error_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__Error *e = body;

	m->error.code = e->code;
	wire_string_copy(m->error.message, WIRE_TEXT_MAX, e->message);
	return 0;
}

static int
error_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__Error *e = &p->body.error;

	*e = (Maglb__Control__Error)MAGLB__CONTROL__ERROR__INIT;
	e->code = m->error.code;
	return string_to_pb(m->error.message, WIRE_TEXT_MAX, &e->message);
}

/* ------------------------------------------------------- the table */

struct ctl_ops {
	Maglb__Control__Envelope__BodyCase body_case;
	/* Validate a decoded body; NULL: nothing to check. */
	bool (*check)(const void *body, enum wire_drop *why);
	/* Convert a checked body into m; 0 or -ENOMEM. NULL: no fields. */
	int (*to_c)(const void *body, struct wire_ctl_msg *m);
	/*
	 * Fill the body in p from m; 0, -EINVAL or -ENOMEM. NULL: a body
	 * without fields (a request), set from its descriptor.
	 */
	int (*to_pb)(const struct wire_ctl_msg *m, struct ctl_pb *p);
};

#define CTL_CASE_(name) MAGLB__CONTROL__ENVELOPE__BODY_##name

/* ---------------------------------------------------------- sync verify */

static bool
sync_verify_request_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__SyncVerifyRequest *r = body;

	if (!wire_string_fits(r->group, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static int
sync_verify_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__SyncVerifyRequest *r = body;

	wire_string_copy(m->sync_verify_request.group, WIRE_NAME_MAX, r->group);
	m->sync_verify_request.round = r->round;
	return 0;
}

static int
sync_verify_request_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__SyncVerifyRequest *r = &p->body.sync_verify_request;

	*r = (Maglb__Control__SyncVerifyRequest)MAGLB__CONTROL__SYNC_VERIFY_REQUEST__INIT;
	r->round = m->sync_verify_request.round;
	return string_to_pb(m->sync_verify_request.group, WIRE_NAME_MAX, &r->group);
}

static bool
sync_verify_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__SyncVerifyResult *r = body;

	if (!wire_string_fits(r->group, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	if (r->round == 0)
		return fail(why, WIRE_DROP_BAD_EPOCH);
	for (size_t i = 0; i < r->n_digests; i++)
		if (r->digests[i]->node == 0)
			return fail(why, WIRE_DROP_BAD_SENDER);
	return true;
}

static int
sync_verify_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__SyncVerifyResult *r = body;
	struct wire_ctl_sync_digest *out = array_to_c(r->n_digests, sizeof(*out));

	if (out == NULL && r->n_digests > 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_digests; i++)
		out[i] = (struct wire_ctl_sync_digest){
			.node = r->digests[i]->node,
			.entry_count = r->digests[i]->entry_count,
			.digest = r->digests[i]->digest,
			.maglev_digest = r->digests[i]->maglev_digest,
		};
	wire_string_copy(m->sync_verify.group, WIRE_NAME_MAX, r->group);
	m->sync_verify.round = r->round;
	m->sync_verify.members = r->members;
	m->sync_verify.digests = out;
	m->sync_verify.count = r->n_digests;
	return 0;
}

static int
sync_verify_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	static const Maglb__Control__SyncDigest init = MAGLB__CONTROL__SYNC_DIGEST__INIT;
	Maglb__Control__SyncVerifyResult *r = &p->body.sync_verify;
	const struct wire_ctl_sync_verify *in = &m->sync_verify;
	int ret;

	*r = (Maglb__Control__SyncVerifyResult)MAGLB__CONTROL__SYNC_VERIFY_RESULT__INIT;
	ret = array_to_pb(p, 0, in->count, sizeof(init), &init, in->digests);
	if (ret < 0)
		return ret;
	r->digests = (Maglb__Control__SyncDigest **)p->arrays[0];
	r->n_digests = in->count;
	r->round = in->round;
	r->members = in->members;
	for (size_t i = 0; i < in->count; i++) {
		r->digests[i]->node = in->digests[i].node;
		r->digests[i]->entry_count = in->digests[i].entry_count;
		r->digests[i]->digest = in->digests[i].digest;
		r->digests[i]->maglev_digest = in->digests[i].maglev_digest;
	}
	return string_to_pb(in->group, WIRE_NAME_MAX, &r->group);
}

/* ---------------------------------------------------------- cluster */

static bool
cluster_member_check(const Maglb__Control__ClusterMember *c,
		     enum wire_drop *why)
{
	if (c->id == 0)
		return fail(why, WIRE_DROP_BAD_SENDER);
	/* A member not heard has no role yet. */
	if (!wire_role_ok(c->role) &&
	    (c->known || c->role != MAGLB__SYNC__ROLE__ROLE_UNSPECIFIED))
		return fail(why, WIRE_DROP_BAD_ENUM);
	return true;
}

static bool
cluster_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__ClusterStatus *r = body;

	if (r->node_id == 0)
		return fail(why, WIRE_DROP_BAD_SENDER);
	if (!wire_role_ok(r->role) || !wire_cluster_mode_ok(r->mode))
		return fail(why, WIRE_DROP_BAD_ENUM);
	for (size_t i = 0; i < r->n_members; i++)
		if (!cluster_member_check(r->members[i], why))
			return false;
	return true;
}

static int
cluster_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__ClusterStatus *r = body;
	struct wire_ctl_cluster_member *out = array_to_c(r->n_members, sizeof(*out));

	if (out == NULL && r->n_members > 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_members; i++) {
		const Maglb__Control__ClusterMember *c = r->members[i];

		out[i] = (struct wire_ctl_cluster_member){
			.id = c->id,
			.role = (enum wire_role)c->role,
			.priority = c->priority,
			.known = c->known,
			.eligible = c->eligible,
			.dataplane = c->dataplane,
			.synced = c->synced,
			.quorate = c->quorate,
			.standby = c->standby,
		};
	}
	m->cluster = (struct wire_ctl_cluster){
		.node_id = r->node_id,
		.mode = (enum wire_cluster_mode)r->mode,
		.preempt = r->preempt,
		.quorate = r->quorate,
		.role = (enum wire_role)r->role,
		.eligible = r->eligible,
		.standby = r->standby,
		.role_changes = r->role_changes,
		.last_change_unix_ms = r->last_change_unix_ms,
		.lease_ms = r->lease_ms,
		.members = out,
		.count = r->n_members,
	};
	return 0;
}

static void
cluster_member_to_pb(const struct wire_ctl_cluster_member *c,
		     Maglb__Control__ClusterMember *out)
{
	out->id = c->id;
	out->role = (Maglb__Sync__Role)c->role;
	out->priority = c->priority;
	out->known = c->known;
	out->eligible = c->eligible;
	out->dataplane = c->dataplane;
	out->synced = c->synced;
	out->quorate = c->quorate;
	out->standby = c->standby;
}

static int
cluster_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	static const Maglb__Control__ClusterMember init =
		MAGLB__CONTROL__CLUSTER_MEMBER__INIT;
	Maglb__Control__ClusterStatus *r = &p->body.cluster;
	const struct wire_ctl_cluster *in = &m->cluster;
	int ret;

	*r = (Maglb__Control__ClusterStatus)MAGLB__CONTROL__CLUSTER_STATUS__INIT;
	ret = array_to_pb(p, 0, in->count, sizeof(init), &init, in->members);
	if (ret < 0)
		return ret;
	r->members = (Maglb__Control__ClusterMember **)p->arrays[0];
	r->n_members = in->count;
	for (size_t i = 0; i < in->count; i++)
		cluster_member_to_pb(&in->members[i], r->members[i]);
	r->node_id = in->node_id;
	r->mode = (Maglb__Sync__ClusterMode)in->mode;
	r->preempt = in->preempt;
	r->quorate = in->quorate;
	r->role = (Maglb__Sync__Role)in->role;
	r->eligible = in->eligible;
	r->standby = in->standby;
	r->role_changes = in->role_changes;
	r->last_change_unix_ms = in->last_change_unix_ms;
	r->lease_ms = in->lease_ms;
	return 0;
}

static int
cluster_standby_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__ClusterStandby *s = body;

	m->cluster_standby.on = s->on;
	return 0;
}

static int
cluster_standby_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__ClusterStandby *s = &p->body.cluster_standby;

	*s = (Maglb__Control__ClusterStandby)MAGLB__CONTROL__CLUSTER_STANDBY__INIT;
	s->on = m->cluster_standby.on;
	return 0;
}

/* ------------------------------------------------------- histograms */

const uint32_t wire_lag_bucket_us[WIRE_LAG_BUCKETS] = {
	100, 250, 500,
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

const uint32_t wire_probe_bucket_us[WIRE_PROBE_BUCKETS] = {
	250, 500,
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000,
};

/*
 * A histogram over a ladder of bounds: one count per bound, never
 * decreasing, none above the total. Absent (NULL: an older sender's) is
 * fine, and empty.
 */
static bool
histogram_check(const Maglb__Control__Histogram *h, size_t bounds, enum wire_drop *why)
{
	if (h == NULL)
		return true;
	if (h->n_cumulative != bounds)
		return fail(why, WIRE_DROP_BAD_HISTOGRAM);
	for (size_t i = 1; i < bounds; i++)
		if (h->cumulative[i] < h->cumulative[i - 1])
			return fail(why, WIRE_DROP_BAD_HISTOGRAM);
	if (bounds > 0 && h->count < h->cumulative[bounds - 1])
		return fail(why, WIRE_DROP_BAD_HISTOGRAM);
	return true;
}

/* A checked histogram into the C one's fields; all zero when absent. */
static void
histogram_to_c(const Maglb__Control__Histogram *h, size_t bounds, uint64_t *cumulative,
	       uint64_t *count, uint64_t *sum_us)
{
	memset(cumulative, 0, bounds * sizeof(*cumulative));
	*count = *sum_us = 0;
	if (h == NULL)
		return;
	memcpy(cumulative, h->cumulative, bounds * sizeof(*cumulative));
	*count = h->count;
	*sum_us = h->sum_us;
}

/* pb over the C histogram's fields, which must outlive it. */
static void
histogram_to_pb(Maglb__Control__Histogram *pb, const uint64_t *cumulative, size_t bounds,
		uint64_t count, uint64_t sum_us)
{
	*pb = (Maglb__Control__Histogram)MAGLB__CONTROL__HISTOGRAM__INIT;
	/* protobuf-c's arrays are not const; packing only reads them. */
	pb->cumulative = (uint64_t *)(uintptr_t)cumulative;
	pb->n_cumulative = bounds;
	pb->count = count;
	pb->sum_us = sum_us;
}

/* ------------------------------------------------------ sync status */

/* A sync group's plain fields: the same name in C and in protobuf-c. */
#define SYNC_GROUP_FIGURES(X) \
	X(donor) X(entries_own) X(entries_peers) X(digest) X(send_queue) \
	X(entries_sent) X(entries_received) X(imported) X(rejected) X(dropped) \
	X(resyncs) X(resync_last_ms) X(resync_entries_received) X(self_lag_p50_us) X(self_lag_p99_us) \
	X(import_lag_p50_us) X(import_lag_p99_us)
#define SYNC_GROUP_COPY_(field) out->field = g->field;

static bool
sync_group_check(const Maglb__Control__SyncGroupStatus *g, enum wire_drop *why)
{
	if (!wire_string_fits(g->name, WIRE_NAME_MAX) || !wire_string_fits(g->state, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	if (g->n_members > WIRE_SYNC_MEMBERS_MAX)
		return fail(why, WIRE_DROP_TOO_MANY_ENTRIES);
	for (size_t i = 0; i < g->n_members; i++)
		if (g->members[i] == 0)
			return fail(why, WIRE_DROP_BAD_SENDER);
	return histogram_check(g->self_lag, WIRE_LAG_BUCKETS, why) &&
	       histogram_check(g->import_lag, WIRE_LAG_BUCKETS, why);
}

static bool
sync_status_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__SyncStatus *r = body;

	if (r->node_id == 0)
		return fail(why, WIRE_DROP_BAD_SENDER);
	for (size_t i = 0; i < r->n_groups; i++)
		if (!sync_group_check(r->groups[i], why))
			return false;
	for (size_t i = 0; i < r->n_drops; i++)
		if (!wire_string_fits(r->drops[i]->group, WIRE_NAME_MAX) ||
		    !wire_string_fits(r->drops[i]->reason, WIRE_NAME_MAX))
			return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static void
sync_group_to_c(const void *pb, void *item)
{
	const Maglb__Control__SyncGroupStatus *g = pb;
	struct wire_ctl_sync_group *out = item;

	wire_string_copy(out->name, WIRE_NAME_MAX, g->name);
	wire_string_copy(out->state, WIRE_NAME_MAX, g->state);
	for (size_t i = 0; i < g->n_members; i++)
		out->members[i] = g->members[i];
	out->n_members = (uint32_t)g->n_members;
	SYNC_GROUP_FIGURES(SYNC_GROUP_COPY_)
	histogram_to_c(g->self_lag, WIRE_LAG_BUCKETS, out->self_lag.cumulative,
		       &out->self_lag.count, &out->self_lag.sum_us);
	histogram_to_c(g->import_lag, WIRE_LAG_BUCKETS, out->import_lag.cumulative,
		       &out->import_lag.count, &out->import_lag.sum_us);
}

/*
 * A group as a repeated item with room for its two histograms: the item's
 * pointer is its SyncGroupStatus's, which comes first.
 */
struct sync_group_pb {
	Maglb__Control__SyncGroupStatus g;
	Maglb__Control__Histogram self_lag, import_lag;
};

static int
sync_group_to_pb(const void *item, void *pb)
{
	const struct wire_ctl_sync_group *g = item;
	struct sync_group_pb *room = pb;
	Maglb__Control__SyncGroupStatus *out = &room->g;

	histogram_to_pb(&room->self_lag, g->self_lag.cumulative, WIRE_LAG_BUCKETS,
			g->self_lag.count, g->self_lag.sum_us);
	histogram_to_pb(&room->import_lag, g->import_lag.cumulative, WIRE_LAG_BUCKETS,
			g->import_lag.count, g->import_lag.sum_us);
	out->self_lag = &room->self_lag;
	out->import_lag = &room->import_lag;
	if (g->n_members > WIRE_SYNC_MEMBERS_MAX ||
	    string_to_pb(g->name, WIRE_NAME_MAX, &out->name) < 0 ||
	    string_to_pb(g->state, WIRE_NAME_MAX, &out->state) < 0)
		return -EINVAL;
	/* protobuf-c's arrays are not const; packing only reads them. */
	out->members = (uint32_t *)(uintptr_t)g->members;
	out->n_members = g->n_members;
	SYNC_GROUP_FIGURES(SYNC_GROUP_COPY_)
	return 0;
}

static void
sync_drop_to_c(const void *pb, void *item)
{
	const Maglb__Control__SyncDrop *d = pb;
	struct wire_ctl_sync_drop *out = item;

	wire_string_copy(out->group, WIRE_NAME_MAX, d->group);
	wire_string_copy(out->reason, WIRE_NAME_MAX, d->reason);
	out->count = d->count;
}

static int
sync_drop_to_pb(const void *item, void *pb)
{
	const struct wire_ctl_sync_drop *d = item;
	Maglb__Control__SyncDrop *out = pb;

	out->count = d->count;
	if (string_to_pb(d->group, WIRE_NAME_MAX, &out->group) < 0)
		return -EINVAL;
	return string_to_pb(d->reason, WIRE_NAME_MAX, &out->reason);
}

static const struct sync_group_pb sync_group_init = {
	MAGLB__CONTROL__SYNC_GROUP_STATUS__INIT,
	MAGLB__CONTROL__HISTOGRAM__INIT, MAGLB__CONTROL__HISTOGRAM__INIT,
};
static const Maglb__Control__SyncDrop sync_drop_init = MAGLB__CONTROL__SYNC_DROP__INIT;

static const struct ctl_repeated sync_status_repeated[2] = {
	{ "groups", offsetof(struct wire_ctl_sync_status, groups),
	  offsetof(struct wire_ctl_sync_status, n_groups), sizeof(struct wire_ctl_sync_group),
	  sizeof(sync_group_init), &sync_group_init, sync_group_to_c, sync_group_to_pb },
	{ "drops", offsetof(struct wire_ctl_sync_status, drops),
	  offsetof(struct wire_ctl_sync_status, n_drops), sizeof(struct wire_ctl_sync_drop),
	  sizeof(sync_drop_init), &sync_drop_init, sync_drop_to_c, sync_drop_to_pb },
};

static int
sync_status_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__SyncStatus *r = body;

	m->sync_status = (struct wire_ctl_sync_status){
		.node_id = r->node_id,
		.synced = r->synced,
		.dataplane_connected = r->dataplane_connected,
		.dataplane_synced = r->dataplane_synced,
		.entries = r->entries,
		.cache_bytes = r->cache_bytes,
		.import_queue = r->import_queue,
		.export_entries = r->export_entries,
	};
	return repeated_to_c(sync_status_repeated, body, &m->sync_status);
}

static int
sync_status_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__SyncStatus *r = &p->body.sync_status;
	const struct wire_ctl_sync_status *in = &m->sync_status;

	*r = (Maglb__Control__SyncStatus)MAGLB__CONTROL__SYNC_STATUS__INIT;
	r->node_id = in->node_id;
	r->synced = in->synced;
	r->dataplane_connected = in->dataplane_connected;
	r->dataplane_synced = in->dataplane_synced;
	r->entries = in->entries;
	r->cache_bytes = in->cache_bytes;
	r->import_queue = in->import_queue;
	r->export_entries = in->export_entries;
	return repeated_to_pb(p, sync_status_repeated, in, &r->base);
}

#undef SYNC_GROUP_COPY_
#undef SYNC_GROUP_FIGURES

/* ------------------------------------------------------------- BFD */

/* A session's plain fields: the same name in C and in protobuf-c. */
#define BFD_SESSION_FIGURES(X) \
	X(local_discriminator) X(remote_discriminator) X(tx_interval_us) \
	X(detect_time_us) X(multiplier) X(remote_multiplier) X(state_age_ms) \
	X(packets_in) X(packets_out) X(state_changes) X(authenticated)
#define BFD_SESSION_COPY_(field) out->field = s->field;

static bool
bfd_session_check(const Maglb__Control__BfdSession *s, enum wire_drop *why)
{
	if (wire_addr_family(s->peer.len) == 0 || s->local.len != s->peer.len)
		return fail(why, WIRE_DROP_BAD_ADDRESS);
	if (!enum_same_ok(s->state, WIRE_BFD_STATE_MAX) ||
	    !enum_same_ok(s->local_diag, WIRE_BFD_DIAG_MAX) ||
	    !enum_same_ok(s->remote_diag, WIRE_BFD_DIAG_MAX))
		return fail(why, WIRE_DROP_BAD_ENUM);
	return true;
}

static bool
bfd_status_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__BfdStatus *r = body;

	for (size_t i = 0; i < r->n_sessions; i++)
		if (!bfd_session_check(r->sessions[i], why))
			return false;
	for (size_t i = 0; i < r->n_drops; i++)
		if (!wire_string_fits(r->drops[i]->reason, WIRE_NAME_MAX))
			return fail(why, WIRE_DROP_BAD_STRING);
	return true;
}

static void
bfd_session_to_c(const void *pb, void *item)
{
	const Maglb__Control__BfdSession *s = pb;
	struct wire_ctl_bfd_session *out = item;

	out->family = wire_addr_family(s->peer.len);
	wire_addr_copy(out->peer, &s->peer);
	wire_addr_copy(out->local, &s->local);
	out->state = (enum wire_bfd_state)s->state;
	out->local_diag = (enum wire_bfd_diag)s->local_diag;
	out->remote_diag = (enum wire_bfd_diag)s->remote_diag;
	BFD_SESSION_FIGURES(BFD_SESSION_COPY_)
}

/* An unknown family becomes an empty address, which the check refuses. */
static int
bfd_session_to_pb(const void *item, void *pb)
{
	const struct wire_ctl_bfd_session *s = item;
	Maglb__Control__BfdSession *out = pb;

	out->peer = wire_addr_to_pb(s->family, s->peer);
	out->local = wire_addr_to_pb(s->family, s->local);
	out->state = (Maglb__Control__BfdState)s->state;
	out->local_diag = (Maglb__Control__BfdDiag)s->local_diag;
	out->remote_diag = (Maglb__Control__BfdDiag)s->remote_diag;
	BFD_SESSION_FIGURES(BFD_SESSION_COPY_)
	return 0;
}

static void
bfd_drop_to_c(const void *pb, void *item)
{
	const Maglb__Control__BfdDrop *d = pb;
	struct wire_ctl_bfd_drop *out = item;

	wire_string_copy(out->reason, WIRE_NAME_MAX, d->reason);
	out->count = d->count;
}

static int
bfd_drop_to_pb(const void *item, void *pb)
{
	const struct wire_ctl_bfd_drop *d = item;
	Maglb__Control__BfdDrop *out = pb;

	out->count = d->count;
	return string_to_pb(d->reason, WIRE_NAME_MAX, &out->reason);
}

static const Maglb__Control__BfdSession bfd_session_init = MAGLB__CONTROL__BFD_SESSION__INIT;
static const Maglb__Control__BfdDrop bfd_drop_init = MAGLB__CONTROL__BFD_DROP__INIT;

static const struct ctl_repeated bfd_status_repeated[2] = {
	{ "sessions", offsetof(struct wire_ctl_bfd_status, sessions),
	  offsetof(struct wire_ctl_bfd_status, n_sessions), sizeof(struct wire_ctl_bfd_session),
	  sizeof(bfd_session_init), &bfd_session_init, bfd_session_to_c, bfd_session_to_pb },
	{ "drops", offsetof(struct wire_ctl_bfd_status, drops),
	  offsetof(struct wire_ctl_bfd_status, n_drops), sizeof(struct wire_ctl_bfd_drop),
	  sizeof(bfd_drop_init), &bfd_drop_init, bfd_drop_to_c, bfd_drop_to_pb },
};

static int
bfd_status_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__BfdStatus *r = body;

	m->bfd_status = (struct wire_ctl_bfd_status){ .serving = r->serving };
	return repeated_to_c(bfd_status_repeated, body, &m->bfd_status);
}

static int
bfd_status_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__BfdStatus *r = &p->body.bfd_status;

	*r = (Maglb__Control__BfdStatus)MAGLB__CONTROL__BFD_STATUS__INIT;
	r->serving = m->bfd_status.serving;
	return repeated_to_pb(p, bfd_status_repeated, &m->bfd_status, &r->base);
}

#undef BFD_SESSION_COPY_
#undef BFD_SESSION_FIGURES

/* ----------------------------------------------------------- health */

static int
health_status_request_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__HealthStatusRequest *r = body;

	m->health_status_request.cursor = r->cursor;
	return 0;
}

static int
health_status_request_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	Maglb__Control__HealthStatusRequest *r = &p->body.health_status_request;

	*r = (Maglb__Control__HealthStatusRequest)MAGLB__CONTROL__HEALTH_STATUS_REQUEST__INIT;
	r->cursor = m->health_status_request.cursor;
	return 0;
}

static bool
health_target_check(const Maglb__Control__HealthTarget *t, enum wire_drop *why)
{
	if (!wire_string_fits(t->vip, WIRE_NAME_MAX))
		return fail(why, WIRE_DROP_BAD_STRING);
	if (wire_addr_family(t->backend.len) == 0)
		return fail(why, WIRE_DROP_BAD_ADDRESS);
	if (t->n_down_by > WIRE_SYNC_MEMBERS_MAX)
		return fail(why, WIRE_DROP_TOO_MANY_ENTRIES);
	for (size_t i = 0; i < t->n_down_by; i++)
		if (t->down_by[i] == 0)
			return fail(why, WIRE_DROP_BAD_SENDER);
	return true;
}

static bool
health_status_check(const void *body, enum wire_drop *why)
{
	const Maglb__Control__HealthStatus *r = body;

	if (r->node_id == 0)
		return fail(why, WIRE_DROP_BAD_SENDER);
	if (!histogram_check(r->probe_duration, WIRE_PROBE_BUCKETS, why))
		return false;
	for (size_t i = 0; i < r->n_targets; i++)
		if (!health_target_check(r->targets[i], why))
			return false;
	return true;
}

static void
health_target_to_c(const Maglb__Control__HealthTarget *t, struct wire_ctl_health_target *out)
{
	wire_string_copy(out->vip, WIRE_NAME_MAX, t->vip);
	out->family = wire_addr_family(t->backend.len);
	wire_addr_copy(out->backend, &t->backend);
	out->local_up = t->local_up;
	out->agreed_up = t->agreed_up;
	for (size_t i = 0; i < t->n_down_by; i++)
		out->down_by[i] = t->down_by[i];
	out->n_down_by = (uint32_t)t->n_down_by;
	out->probes = t->probes;
	out->failures = t->failures;
	out->last_duration_us = t->last_duration_us;
}

static int
health_status_to_c(const void *body, struct wire_ctl_msg *m)
{
	const Maglb__Control__HealthStatus *r = body;
	struct wire_ctl_health_status *out = &m->health_status;
	struct wire_ctl_health_target *targets = array_to_c(r->n_targets, sizeof(*targets));

	if (targets == NULL && r->n_targets > 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_targets; i++)
		health_target_to_c(r->targets[i], &targets[i]);
	*out = (struct wire_ctl_health_status){
		.node_id = r->node_id, .targets_total = r->targets_total,
		.next_cursor = r->next_cursor, .targets = targets, .n_targets = r->n_targets,
		.probes = r->probes, .failures = r->failures,
	};
	histogram_to_c(r->probe_duration, WIRE_PROBE_BUCKETS, out->probe_duration.cumulative,
		       &out->probe_duration.count, &out->probe_duration.sum_us);
	return 0;
}

/* An unknown family becomes an empty address, which the check refuses. */
static int
health_target_to_pb(const struct wire_ctl_health_target *t, Maglb__Control__HealthTarget *out)
{
	if (t->n_down_by > WIRE_SYNC_MEMBERS_MAX)
		return -EINVAL;
	out->backend = wire_addr_to_pb(t->family, t->backend);
	out->local_up = t->local_up;
	out->agreed_up = t->agreed_up;
	/* protobuf-c's arrays are not const; packing only reads them. */
	out->down_by = (uint32_t *)(uintptr_t)t->down_by;
	out->n_down_by = t->n_down_by;
	out->probes = t->probes;
	out->failures = t->failures;
	out->last_duration_us = t->last_duration_us;
	return string_to_pb(t->vip, WIRE_NAME_MAX, &out->vip);
}

static int
health_status_to_pb(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	static const Maglb__Control__HealthTarget init = MAGLB__CONTROL__HEALTH_TARGET__INIT;
	Maglb__Control__HealthStatus *r = &p->body.health_status;
	const struct wire_ctl_health_status *in = &m->health_status;
	const struct wire_probe_histogram *h = &in->probe_duration;
	int ret;

	*r = (Maglb__Control__HealthStatus)MAGLB__CONTROL__HEALTH_STATUS__INIT;
	ret = array_to_pb(p, 0, in->n_targets, sizeof(init), &init, in->targets);
	if (ret < 0)
		return ret;
	r->targets = (Maglb__Control__HealthTarget **)p->arrays[0];
	r->n_targets = in->n_targets;
	for (size_t i = 0; i < in->n_targets; i++)
		if (health_target_to_pb(&in->targets[i], r->targets[i]) < 0)
			return -EINVAL;
	r->node_id = in->node_id;
	r->targets_total = in->targets_total;
	r->next_cursor = in->next_cursor;
	r->probes = in->probes;
	r->failures = in->failures;
	histogram_to_pb(&p->hist, h->cumulative, WIRE_PROBE_BUCKETS, h->count, h->sum_us);
	r->probe_duration = &p->hist;
	return 0;
}

static const struct ctl_ops ctl_ops[WIRE_CTL_KIND_MAX] = {
	[WIRE_CTL_STATUS_REQUEST] = { CTL_CASE_(STATUS_REQUEST),
		NULL, NULL, NULL },
	[WIRE_CTL_STATUS_RESPONSE] = { CTL_CASE_(STATUS_RESPONSE),
		NULL, status_to_c, status_to_pb },
	[WIRE_CTL_COUNTERS_REQUEST] = { CTL_CASE_(COUNTERS_REQUEST),
		counters_request_check, counters_request_to_c,
		counters_request_to_pb },
	[WIRE_CTL_COUNTERS_RESPONSE] = { CTL_CASE_(COUNTERS_RESPONSE),
		counters_check, counters_to_c, counters_to_pb },
	[WIRE_CTL_VIP_LIST_REQUEST] = { CTL_CASE_(VIP_LIST_REQUEST),
		vip_list_request_check, vip_list_request_to_c,
		vip_list_request_to_pb },
	[WIRE_CTL_VIP_LIST_RESPONSE] = { CTL_CASE_(VIP_LIST_RESPONSE),
		vip_list_check, vip_list_to_c, vip_list_to_pb },
	[WIRE_CTL_BACKEND_SET] = { CTL_CASE_(BACKEND_SET),
		backend_set_check, backend_set_to_c, backend_set_to_pb },
	[WIRE_CTL_RELOAD_REQUEST] = { CTL_CASE_(RELOAD_REQUEST),
		NULL, reload_request_to_c, reload_request_to_pb },
	[WIRE_CTL_RELOAD_RESULT] = { CTL_CASE_(RELOAD_RESULT),
		reload_result_check, reload_result_to_c, reload_result_to_pb },
	[WIRE_CTL_OWNERSHIP_SET] = { CTL_CASE_(OWNERSHIP_SET),
		ownership_check, ownership_to_c, ownership_to_pb },
	[WIRE_CTL_FLOW_LOOKUP_REQUEST] = { CTL_CASE_(FLOW_LOOKUP_REQUEST),
		lookup_request_check, lookup_request_to_c, lookup_request_to_pb },
	[WIRE_CTL_FLOW_LOOKUP_RESPONSE] = { CTL_CASE_(FLOW_LOOKUP_RESPONSE),
		lookup_check, lookup_to_c, lookup_to_pb },
	[WIRE_CTL_DUMP_REQUEST] = { CTL_CASE_(DUMP_REQUEST),
		dump_request_check, dump_request_to_c, dump_request_to_pb },
	[WIRE_CTL_DUMP_RESPONSE] = { CTL_CASE_(DUMP_RESPONSE),
		dump_check, dump_to_c, dump_to_pb },
	[WIRE_CTL_EXPORT_SUBSCRIBE] = { CTL_CASE_(EXPORT_SUBSCRIBE),
		NULL, export_subscribe_to_c, export_subscribe_to_pb },
	[WIRE_CTL_EXPORT_BATCH] = { CTL_CASE_(EXPORT_BATCH),
		flows_check, flows_to_c, flows_batch_to_pb },
	[WIRE_CTL_IMPORT_BATCH] = { CTL_CASE_(IMPORT_BATCH),
		flows_check, flows_to_c, flows_batch_to_pb },
	[WIRE_CTL_ERROR] = { CTL_CASE_(ERROR),
		error_check, error_to_c, error_to_pb },
	[WIRE_CTL_SYNC_VERIFY_REQUEST] = { CTL_CASE_(SYNC_VERIFY_REQUEST),
		sync_verify_request_check, sync_verify_request_to_c,
		sync_verify_request_to_pb },
	[WIRE_CTL_SYNC_VERIFY_RESULT] = { CTL_CASE_(SYNC_VERIFY_RESULT),
		sync_verify_check, sync_verify_to_c, sync_verify_to_pb },
	[WIRE_CTL_CLUSTER_REQUEST] = { CTL_CASE_(CLUSTER_REQUEST),
		NULL, NULL, NULL },
	[WIRE_CTL_CLUSTER_STATUS] = { CTL_CASE_(CLUSTER_STATUS),
		cluster_check, cluster_to_c, cluster_to_pb },
	[WIRE_CTL_CLUSTER_STANDBY] = { CTL_CASE_(CLUSTER_STANDBY),
		NULL, cluster_standby_to_c, cluster_standby_to_pb },
	[WIRE_CTL_SYNC_STATUS_REQUEST] = { CTL_CASE_(SYNC_STATUS_REQUEST),
		NULL, NULL, NULL },
	[WIRE_CTL_SYNC_STATUS] = { CTL_CASE_(SYNC_STATUS),
		sync_status_check, sync_status_to_c, sync_status_to_pb },
	[WIRE_CTL_BFD_STATUS_REQUEST] = { CTL_CASE_(BFD_STATUS_REQUEST),
		NULL, NULL, NULL },
	[WIRE_CTL_BFD_STATUS] = { CTL_CASE_(BFD_STATUS),
		bfd_status_check, bfd_status_to_c, bfd_status_to_pb },
	[WIRE_CTL_HEALTH_STATUS_REQUEST] = { CTL_CASE_(HEALTH_STATUS_REQUEST),
		NULL, health_status_request_to_c, health_status_request_to_pb },
	[WIRE_CTL_HEALTH_STATUS] = { CTL_CASE_(HEALTH_STATUS),
		health_status_check, health_status_to_c, health_status_to_pb },
};

#undef CTL_CASE_

/* The kind of a body case; WIRE_CTL_KIND_MAX for none or an unknown one. */
static enum wire_ctl_kind
ctl_kind_of(Maglb__Control__Envelope__BodyCase body)
{
	if (body == MAGLB__CONTROL__ENVELOPE__BODY__NOT_SET)
		return WIRE_CTL_KIND_MAX;
	for (int kind = 0; kind < WIRE_CTL_KIND_MAX; kind++)
		if (ctl_ops[kind].body_case == body)
			return (enum wire_ctl_kind)kind;
	return WIRE_CTL_KIND_MAX;
}

/* The Envelope's field of a body case: a message field of the oneof. */
static const ProtobufCFieldDescriptor *
ctl_body_field(Maglb__Control__Envelope__BodyCase body)
{
	const ProtobufCFieldDescriptor *field;

	field = protobuf_c_message_descriptor_get_field(
		&maglb__control__envelope__descriptor, (unsigned int)body);
	assert(field != NULL && field->type == PROTOBUF_C_TYPE_MESSAGE);
	return field;
}

/* The oneof member of env for body, through its field descriptor. */
static ProtobufCMessage **
ctl_body_slot(Maglb__Control__Envelope *env,
	      Maglb__Control__Envelope__BodyCase body)
{
	return (ProtobufCMessage **)((uint8_t *)env + ctl_body_field(body)->offset);
}

/* Validate a whole decoded message; on success store its kind and body. */
static bool
ctl_check(Maglb__Control__Envelope *env, enum wire_ctl_kind *kind,
	  const ProtobufCMessage **body, enum wire_drop *why)
{
	const struct ctl_ops *ops;

	if (env->version != WIRE_VERSION)
		return fail(why, WIRE_DROP_BAD_VERSION);
	*kind = ctl_kind_of(env->body_case);
	if (*kind == WIRE_CTL_KIND_MAX)
		return fail(why, WIRE_DROP_UNKNOWN_KIND);
	ops = &ctl_ops[*kind];
	*body = *ctl_body_slot(env, ops->body_case);
	if (*body == NULL)
		return fail(why, WIRE_DROP_UNKNOWN_KIND);
	return ops->check == NULL || ops->check(*body, why);
}

static void
ctl_pb_release(struct ctl_pb *p)
{
	free(p->arrays[0]);
	free(p->arrays[1]);
	p->arrays[0] = p->arrays[1] = NULL;
}

/* Build and check the protobuf-c view of m; ctl_pb_release() it after. */
static int
ctl_pb_build(const struct wire_ctl_msg *m, struct ctl_pb *p)
{
	const ProtobufCMessage *body;
	enum wire_ctl_kind kind;
	enum wire_drop why;
	int ret;

	p->arrays[0] = p->arrays[1] = NULL;
	if ((unsigned int)m->kind >= WIRE_CTL_KIND_MAX)
		return -EINVAL;
	p->env = (Maglb__Control__Envelope)MAGLB__CONTROL__ENVELOPE__INIT;
	p->env.version = WIRE_VERSION;
	p->env.request_id = m->request_id;
	p->env.body_case = ctl_ops[m->kind].body_case;
	/* Every body type starts with its ProtobufCMessage. */
	*ctl_body_slot(&p->env, p->env.body_case) = (ProtobufCMessage *)&p->body;
	protobuf_c_message_init(ctl_body_field(p->env.body_case)->descriptor, &p->body);
	ret = ctl_ops[m->kind].to_pb != NULL ? ctl_ops[m->kind].to_pb(m, p) : 0;
	if (ret == 0 && !ctl_check(&p->env, &kind, &body, &why))
		ret = -EINVAL;
	if (ret < 0)
		ctl_pb_release(p);
	return ret;
}

int
wire_ctl_encode(const struct wire_ctl_msg *m, uint8_t *buf, size_t len,
		size_t *out_len)
{
	struct ctl_pb p;
	int ret;

	ret = ctl_pb_build(m, &p);
	if (ret < 0)
		return ret;
	ret = wire_pb_pack(&p.env.base, buf, len, out_len);
	ctl_pb_release(&p);
	return ret;
}

size_t
wire_ctl_encoded_size(const struct wire_ctl_msg *m)
{
	struct ctl_pb p;
	size_t size;

	if (ctl_pb_build(m, &p) < 0)
		return 0;
	size = maglb__control__envelope__get_packed_size(&p.env);
	ctl_pb_release(&p);
	return size;
}

int
wire_ctl_decode(const uint8_t *buf, size_t len, struct wire_ctl_msg *m,
		struct wire_counters *c)
{
	const ProtobufCMessage *body;
	Maglb__Control__Envelope *env;
	enum wire_ctl_kind kind;
	struct wire_ctl_msg out;
	enum wire_drop why;
	int ret = 0;

	if (buf == NULL && len > 0)
		return wire_drop_count(c, WIRE_DROP_TRUNCATED);
	/* NULL when the input is cut short or malformed (or on ENOMEM). */
	env = maglb__control__envelope__unpack(NULL, len, buf);
	if (env == NULL)
		return wire_drop_count(c, WIRE_DROP_TRUNCATED);
	if (!ctl_check(env, &kind, &body, &why)) {
		maglb__control__envelope__free_unpacked(env, NULL);
		return wire_drop_count(c, why);
	}

	/* commit: into out, which is copied to m only if it all converts */
	memset(&out, 0, sizeof(out));
	out.version = env->version;
	out.kind = kind;
	out.request_id = env->request_id;
	if (ctl_ops[kind].to_c != NULL)
		ret = ctl_ops[kind].to_c(body, &out);
	maglb__control__envelope__free_unpacked(env, NULL);
	if (ret < 0) {
		wire_ctl_msg_free(&out);
		return wire_drop_count(c, WIRE_DROP_NO_MEMORY);
	}
	*m = out;
	return 0;
}

void
wire_ctl_msg_free(struct wire_ctl_msg *m)
{
	if (m == NULL)
		return;
	switch (m->kind) {
	case WIRE_CTL_COUNTERS_RESPONSE:
		free(m->counters.counters);
		break;
	case WIRE_CTL_VIP_LIST_RESPONSE:
		free(m->vip_list.vips);
		free(m->vip_list.backends);
		break;
	case WIRE_CTL_OWNERSHIP_SET:
		free(m->ownership.vips);
		break;
	case WIRE_CTL_DUMP_RESPONSE:
		free(m->dump.entries);
		break;
	case WIRE_CTL_EXPORT_BATCH:
	case WIRE_CTL_IMPORT_BATCH:
		free(m->flows.entries);
		break;
	case WIRE_CTL_SYNC_VERIFY_RESULT:
		free(m->sync_verify.digests);
		break;
	case WIRE_CTL_CLUSTER_STATUS:
		free(m->cluster.members);
		break;
	case WIRE_CTL_SYNC_STATUS:
		free(m->sync_status.groups);
		free(m->sync_status.drops);
		break;
	case WIRE_CTL_BFD_STATUS:
		free(m->bfd_status.sessions);
		free(m->bfd_status.drops);
		break;
	case WIRE_CTL_HEALTH_STATUS:
		free(m->health_status.targets);
		break;
	default:
		break;
	}
	memset(m, 0, sizeof(*m));
}

/* *items (n of size bytes) grown by more copied from add: 0 or -ENOMEM. */
static int
items_append(void **items, size_t n, const void *add, size_t more, size_t size)
{
	void *bigger;

	if (more == 0)
		return 0;
	bigger = realloc(*items, (n + more) * size);
	if (bigger == NULL)
		return -ENOMEM;
	memcpy((uint8_t *)bigger + n * size, add, more * size);
	*items = bigger;
	return 0;
}

int
wire_ctl_vip_list_append(struct wire_ctl_vip_list *all,
			 const struct wire_ctl_vip_list *page)
{
	void *vips = all->vips, *backends = all->backends;

	if (items_append(&vips, all->n_vips, page->vips, page->n_vips,
			 sizeof(*page->vips)) < 0)
		return -ENOMEM;
	all->vips = vips;           /* realloc'd: the old pointer is gone */
	if (items_append(&backends, all->n_backends, page->backends,
			 page->n_backends, sizeof(*page->backends)) < 0)
		return -ENOMEM;         /* the VIPs' room grew, their count did not */
	all->backends = backends;
	all->n_vips += page->n_vips;
	all->n_backends += page->n_backends;
	all->next_cursor = page->next_cursor;
	return 0;
}

void
wire_ctl_vip_list_free(struct wire_ctl_vip_list *l)
{
	if (l == NULL)
		return;
	free(l->vips);
	free(l->backends);
	*l = (struct wire_ctl_vip_list){ 0 };
}
