/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow sync messages (sync.proto): peer to peer over CPG.
 *
 * Every kind is one body of the Envelope's oneof. The kinds differ only in
 * which things their body carries (epoch, peer, entry count, entries, a
 * node's state, backend references), so both directions go through struct
 * sync_body, and one check serves the decoder (peer input) and the encoder
 * (our own output). Entries travel as columns (sync.proto's Entries): one
 * allocation a message each way, none an entry.
 */
#include "proto/wire.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/wire_internal.h"

const char *const wire_sync_kind_names[WIRE_SYNC_KIND_MAX] = {
	[WIRE_SYNC_NEW] = "new",
	[WIRE_SYNC_REFRESH] = "refresh",
	[WIRE_SYNC_CLOSE] = "close",
	[WIRE_SYNC_RESYNC_REQUEST] = "resync-request",
	[WIRE_SYNC_RESYNC_BEGIN] = "resync-begin",
	[WIRE_SYNC_RESYNC_ENTRIES] = "resync-entries",
	[WIRE_SYNC_RESYNC_END] = "resync-end",
	[WIRE_SYNC_DIGEST_REQUEST] = "digest-request",
	[WIRE_SYNC_DIGEST] = "digest",
	[WIRE_SYNC_NODE_STATE] = "node-state",
	[WIRE_SYNC_HEALTH] = "health",
};

const char *const wire_role_names[WIRE_ROLE_MAX] = {
	[WIRE_ROLE_UNSPECIFIED] = "unspecified",
	[WIRE_ROLE_PASSIVE] = "passive",
	[WIRE_ROLE_ACTIVE] = "active",
};

const char *const wire_cluster_mode_names[WIRE_CLUSTER_MODE_MAX] = {
	[WIRE_CLUSTER_MODE_UNSPECIFIED] = "unspecified",
	[WIRE_CLUSTER_MODE_ACTIVE_PASSIVE] = "active-passive",
	[WIRE_CLUSTER_MODE_ACTIVE_ACTIVE] = "active-active",
};

/* Unlike control.proto's enums, these two keep sync.proto's values. */
static_assert((int)MAGLB__SYNC__ROLE__ROLE_PASSIVE == WIRE_ROLE_PASSIVE &&
	      (int)MAGLB__SYNC__ROLE__ROLE_ACTIVE == WIRE_ROLE_ACTIVE,
	      "Role as in sync.proto");
static_assert((int)MAGLB__SYNC__CLUSTER_MODE__CLUSTER_MODE_ACTIVE_PASSIVE ==
	      WIRE_CLUSTER_MODE_ACTIVE_PASSIVE &&
	      (int)MAGLB__SYNC__CLUSTER_MODE__CLUSTER_MODE_ACTIVE_ACTIVE ==
	      WIRE_CLUSTER_MODE_ACTIVE_ACTIVE, "ClusterMode as in sync.proto");

/* The Envelope body of each kind. */
static const Maglb__Sync__Envelope__BodyCase sync_cases[WIRE_SYNC_KIND_MAX] = {
	[WIRE_SYNC_NEW] = MAGLB__SYNC__ENVELOPE__BODY_FLOW_NEW,
	[WIRE_SYNC_REFRESH] = MAGLB__SYNC__ENVELOPE__BODY_FLOW_REFRESH,
	[WIRE_SYNC_CLOSE] = MAGLB__SYNC__ENVELOPE__BODY_FLOW_CLOSE,
	[WIRE_SYNC_RESYNC_REQUEST] = MAGLB__SYNC__ENVELOPE__BODY_RESYNC_REQUEST,
	[WIRE_SYNC_RESYNC_BEGIN] = MAGLB__SYNC__ENVELOPE__BODY_RESYNC_BEGIN,
	[WIRE_SYNC_RESYNC_ENTRIES] = MAGLB__SYNC__ENVELOPE__BODY_RESYNC_ENTRIES,
	[WIRE_SYNC_RESYNC_END] = MAGLB__SYNC__ENVELOPE__BODY_RESYNC_END,
	[WIRE_SYNC_DIGEST_REQUEST] = MAGLB__SYNC__ENVELOPE__BODY_DIGEST_REQUEST,
	[WIRE_SYNC_DIGEST] = MAGLB__SYNC__ENVELOPE__BODY_DIGEST,
	[WIRE_SYNC_NODE_STATE] = MAGLB__SYNC__ENVELOPE__BODY_NODE_STATE,
	[WIRE_SYNC_HEALTH] = MAGLB__SYNC__ENVELOPE__BODY_HEALTH_REPORT,
};

/* What a body carries, whatever its kind. */
struct sync_body {
	uint32_t epoch;
	uint32_t peer;
	uint64_t entry_count;
	uint64_t stamp_us;
	uint64_t digest;
	uint64_t maglev_digest;
	uint64_t generation;
	const Maglb__Sync__NodeState *state;
	const Maglb__Sync__Entries *cols; /* NULL: no entries */
	Maglb__Sync__BackendRef **refs;  /* HEALTH, instead of entries */
	size_t count;                    /* of entries or refs */
};

/* The protobuf-c messages of one message being encoded. */
struct sync_pb {
	Maglb__Sync__Envelope env;
	union {
		Maglb__Sync__Batch batch;
		Maglb__Sync__ResyncRequest request;
		Maglb__Sync__ResyncBegin begin;
		Maglb__Sync__ResyncEntries entries;
		Maglb__Sync__ResyncEnd end;
		Maglb__Sync__DigestRequest digest_request;
		Maglb__Sync__Digest digest;
		Maglb__Sync__NodeState node_state;
		Maglb__Sync__HealthReport health;
	} body;
	Maglb__Sync__Entries cols;
	void *scratch;              /* allocated: the columns' arrays (wire_cols_from_c()) */
	Maglb__Sync__BackendRef **refs;  /* allocated */
};

/* The kind of a body; WIRE_SYNC_KIND_MAX for none or an unknown one. */
static enum wire_sync_kind
sync_kind_of(Maglb__Sync__Envelope__BodyCase body)
{
	if (body == MAGLB__SYNC__ENVELOPE__BODY__NOT_SET)
		return WIRE_SYNC_KIND_MAX;
	for (int kind = 0; kind < WIRE_SYNC_KIND_MAX; kind++)
		if (sync_cases[kind] == body)
			return (enum wire_sync_kind)kind;
	return WIRE_SYNC_KIND_MAX;
}

/* Kinds that carry an epoch (a resync's, a digest round), >= 1. */
static bool
has_epoch(enum wire_sync_kind kind)
{
	return kind >= WIRE_SYNC_RESYNC_REQUEST && kind <= WIRE_SYNC_DIGEST;
}

/* Kinds that name the node they answer, >= 1. */
static bool
has_peer(enum wire_sync_kind kind)
{
	return has_epoch(kind) && kind != WIRE_SYNC_RESYNC_REQUEST &&
	       kind != WIRE_SYNC_DIGEST_REQUEST;
}

static bool
has_entries(enum wire_sync_kind kind)
{
	return kind <= WIRE_SYNC_CLOSE || kind == WIRE_SYNC_RESYNC_ENTRIES;
}

/* Read the body of env (of a known kind); false if it is missing. */
static bool
sync_body_get(const Maglb__Sync__Envelope *env,
	      enum wire_sync_kind kind, struct sync_body *b)
{
	const Maglb__Sync__Batch *batch = NULL;

	memset(b, 0, sizeof(*b));
	switch (kind) {
	case WIRE_SYNC_NEW:
		batch = env->flow_new;
		break;
	case WIRE_SYNC_REFRESH:
		batch = env->flow_refresh;
		break;
	case WIRE_SYNC_CLOSE:
		batch = env->flow_close;
		break;
	case WIRE_SYNC_RESYNC_REQUEST:
		if (env->resync_request == NULL)
			return false;
		b->epoch = env->resync_request->epoch;
		b->peer = env->resync_request->donor;
		return true;
	case WIRE_SYNC_RESYNC_BEGIN:
		if (env->resync_begin == NULL)
			return false;
		b->epoch = env->resync_begin->epoch;
		b->peer = env->resync_begin->requester;
		return true;
	case WIRE_SYNC_RESYNC_ENTRIES:
		if (env->resync_entries == NULL)
			return false;
		b->epoch = env->resync_entries->epoch;
		b->peer = env->resync_entries->requester;
		b->cols = env->resync_entries->entries;
		b->count = b->cols != NULL ? b->cols->count : 0;
		return true;
	case WIRE_SYNC_RESYNC_END:
		if (env->resync_end == NULL)
			return false;
		b->epoch = env->resync_end->epoch;
		b->peer = env->resync_end->requester;
		b->entry_count = env->resync_end->entry_count;
		return true;
	case WIRE_SYNC_DIGEST_REQUEST:
		if (env->digest_request == NULL)
			return false;
		b->epoch = env->digest_request->round;
		return true;
	case WIRE_SYNC_DIGEST:
		if (env->digest == NULL)
			return false;
		b->epoch = env->digest->round;
		b->peer = env->digest->requester;
		b->entry_count = env->digest->entry_count;
		b->digest = env->digest->digest;
		b->maglev_digest = env->digest->maglev_digest;
		return true;
	case WIRE_SYNC_NODE_STATE:
		b->state = env->node_state;
		return b->state != NULL;
	case WIRE_SYNC_HEALTH:
		if (env->health_report == NULL)
			return false;
		b->refs = env->health_report->down;
		b->count = env->health_report->n_down;
		b->generation = env->health_report->generation;
		return true;
	default:
		return false;
	}
	if (batch == NULL)
		return false;
	b->cols = batch->entries;
	b->count = b->cols != NULL ? b->cols->count : 0;
	b->stamp_us = batch->stamp_us;
	return true;
}

bool
wire_role_ok(int role)
{
	return role == WIRE_ROLE_PASSIVE || role == WIRE_ROLE_ACTIVE;
}

bool
wire_cluster_mode_ok(int mode)
{
	return mode == WIRE_CLUSTER_MODE_ACTIVE_PASSIVE ||
	       mode == WIRE_CLUSTER_MODE_ACTIVE_ACTIVE;
}

static bool
node_state_check(const Maglb__Sync__NodeState *s,
		 enum wire_drop *why)
{
	if (!wire_role_ok(s->role) || !wire_cluster_mode_ok(s->mode)) {
		*why = WIRE_DROP_BAD_ENUM;
		return false;
	}
	return true;
}

/* A backend reference: both addresses, the protocol, the VIP's port. */
static bool
backend_ref_check(const Maglb__Sync__BackendRef *r,
		  enum wire_drop *why)
{
	if (wire_addr_family(r->vip.len) == 0 ||
	    wire_addr_family(r->backend.len) == 0) {
		*why = WIRE_DROP_BAD_ADDRESS;
		return false;
	}
	if (!wire_proto_ok((unsigned int)r->protocol)) {
		*why = WIRE_DROP_BAD_PROTOCOL;
		return false;
	}
	if (r->vip_port > UINT16_MAX) {
		*why = WIRE_DROP_BAD_PORT;
		return false;
	}
	return true;
}

static void
backend_ref_to_c(const Maglb__Sync__BackendRef *r,
		 struct wire_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->family = wire_addr_family(r->vip.len);
	f->proto = (uint8_t)r->protocol;
	f->vip_port = (uint16_t)r->vip_port;
	f->backend_family = wire_addr_family(r->backend.len);
	wire_addr_copy(f->vip, &r->vip);
	wire_addr_copy(f->backend, &r->backend);
}

/* n references as protobuf-c messages, as wire_pb_array_new(). */
static Maglb__Sync__BackendRef **
backend_refs_to_pb(const struct wire_flow *f,
		   size_t n)
{
	static const Maglb__Sync__BackendRef init = MAGLB__SYNC__BACKEND_REF__INIT;
	Maglb__Sync__BackendRef **pbs;

	pbs = (Maglb__Sync__BackendRef **)wire_pb_array_new(n, sizeof(init), &init);
	if (pbs == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		pbs[i]->vip = wire_addr_to_pb(f[i].family, f[i].vip);
		pbs[i]->vip_port = f[i].vip_port;
		pbs[i]->protocol = (Maglb__Sync__IpProtocol)f[i].proto;
		pbs[i]->backend = wire_addr_to_pb(f[i].backend_family, f[i].backend);
	}
	return pbs;
}

/* A resync's entries carry their origins; live batches' are the sender. */
static bool
has_origins(enum wire_sync_kind kind)
{
	return kind == WIRE_SYNC_RESYNC_ENTRIES;
}

size_t
wire_sync_entry_size(enum wire_sync_kind kind, const struct wire_flow *f)
{
	size_t a = wire_addr_len(f->family), b = wire_addr_len(f->backend_family);

	if (!has_entries(kind) || !wire_flow_is_valid(f))
		return 0;
	/* family byte, 3 addresses, 2 ports, protocol, lifetime, flags */
	return 1 + 2 * a + b + wire_varint_size(f->vip_port) + 2 + 1 +
	       wire_varint_size(f->lifetime_ms) + wire_varint_size(f->flags & WIRE_FLOW_FLAGS_ALL) +
	       (has_origins(kind) ? wire_varint_size(f->origin) : 0);
}

/*
 * Validate a whole message, without changing anything. On success stores
 * its kind and body; on failure the one reason it is dropped.
 */
static bool
sync_check(const Maglb__Sync__Envelope *env, size_t cap,
	   enum wire_sync_kind *kind, struct sync_body *b,
	   enum wire_drop *why)
{
	if (env->version != WIRE_SYNC_VERSION) {
		*why = WIRE_DROP_BAD_VERSION;
		return false;
	}
	*kind = sync_kind_of(env->body_case);
	if (*kind == WIRE_SYNC_KIND_MAX || !sync_body_get(env, *kind, b)) {
		*why = WIRE_DROP_UNKNOWN_KIND;
		return false;
	}
	if (env->sender == 0 || (has_peer(*kind) && b->peer == 0)) {
		*why = WIRE_DROP_BAD_SENDER;
		return false;
	}
	if (has_epoch(*kind) && b->epoch == 0) {
		*why = WIRE_DROP_BAD_EPOCH;
		return false;
	}
	if (*kind == WIRE_SYNC_NODE_STATE && !node_state_check(b->state, why))
		return false;
	if (b->count > cap) {
		*why = WIRE_DROP_TOO_MANY_ENTRIES;
		return false;
	}
	if (*kind == WIRE_SYNC_HEALTH) {
		for (size_t i = 0; i < b->count; i++)
			if (!backend_ref_check(b->refs[i], why))
				return false;
		return true;
	}
	return wire_cols_check(b->cols, b->count, why);
}

static void
node_state_to_pb(const struct wire_node_state *s,
		 Maglb__Sync__NodeState *out)
{
	*out = (Maglb__Sync__NodeState)MAGLB__SYNC__NODE_STATE__INIT;
	out->priority = s->priority;
	out->dataplane = s->dataplane;
	out->synced = s->synced;
	out->quorate = s->quorate;
	out->standby = s->standby;
	out->role = (Maglb__Sync__Role)s->role;
	out->incarnation = s->incarnation;
	out->mode = (Maglb__Sync__ClusterMode)s->mode;
	out->preempt = s->preempt;
}

static void
node_state_to_c(const Maglb__Sync__NodeState *s,
		struct wire_node_state *out)
{
	*out = (struct wire_node_state){
		.priority = s->priority,
		.dataplane = s->dataplane,
		.synced = s->synced,
		.quorate = s->quorate,
		.standby = s->standby,
		.preempt = s->preempt,
		.role = (enum wire_role)s->role,
		.mode = (enum wire_cluster_mode)s->mode,
		.incarnation = s->incarnation,
	};
}

/*
 * Set the body of p->env for m; the entries are already in p->flows or
 * p->refs.
 */
static void
sync_body_set(const struct wire_sync_msg *m, struct sync_pb *p)
{
	Maglb__Sync__Envelope *env = &p->env;

	env->body_case = sync_cases[m->kind];
	switch (m->kind) {
	case WIRE_SYNC_NEW:
	case WIRE_SYNC_REFRESH:
	case WIRE_SYNC_CLOSE:
		p->body.batch = (Maglb__Sync__Batch)MAGLB__SYNC__BATCH__INIT;
		p->body.batch.entries = m->count > 0 ? &p->cols : NULL;
		p->body.batch.stamp_us = m->stamp_us;
		/* The three kinds share the Batch type: any member will do. */
		env->flow_new = &p->body.batch;
		break;
	case WIRE_SYNC_RESYNC_REQUEST:
		p->body.request = (Maglb__Sync__ResyncRequest)
			MAGLB__SYNC__RESYNC_REQUEST__INIT;
		p->body.request.epoch = m->epoch;
		p->body.request.donor = m->peer;
		env->resync_request = &p->body.request;
		break;
	case WIRE_SYNC_RESYNC_BEGIN:
		p->body.begin = (Maglb__Sync__ResyncBegin)
			MAGLB__SYNC__RESYNC_BEGIN__INIT;
		p->body.begin.epoch = m->epoch;
		p->body.begin.requester = m->peer;
		env->resync_begin = &p->body.begin;
		break;
	case WIRE_SYNC_RESYNC_ENTRIES:
		p->body.entries = (Maglb__Sync__ResyncEntries)
			MAGLB__SYNC__RESYNC_ENTRIES__INIT;
		p->body.entries.epoch = m->epoch;
		p->body.entries.requester = m->peer;
		p->body.entries.entries = m->count > 0 ? &p->cols : NULL;
		env->resync_entries = &p->body.entries;
		break;
	case WIRE_SYNC_RESYNC_END:
		p->body.end = (Maglb__Sync__ResyncEnd)MAGLB__SYNC__RESYNC_END__INIT;
		p->body.end.epoch = m->epoch;
		p->body.end.requester = m->peer;
		p->body.end.entry_count = m->entry_count;
		env->resync_end = &p->body.end;
		break;
	case WIRE_SYNC_DIGEST_REQUEST:
		p->body.digest_request = (Maglb__Sync__DigestRequest)
			MAGLB__SYNC__DIGEST_REQUEST__INIT;
		p->body.digest_request.round = m->epoch;
		env->digest_request = &p->body.digest_request;
		break;
	case WIRE_SYNC_DIGEST:
		p->body.digest = (Maglb__Sync__Digest)MAGLB__SYNC__DIGEST__INIT;
		p->body.digest.round = m->epoch;
		p->body.digest.requester = m->peer;
		p->body.digest.entry_count = m->entry_count;
		p->body.digest.digest = m->digest;
		p->body.digest.maglev_digest = m->maglev_digest;
		env->digest = &p->body.digest;
		break;
	case WIRE_SYNC_NODE_STATE:
		node_state_to_pb(&m->state, &p->body.node_state);
		env->node_state = &p->body.node_state;
		break;
	default:
		p->body.health = (Maglb__Sync__HealthReport)
			MAGLB__SYNC__HEALTH_REPORT__INIT;
		p->body.health.down = p->refs;
		p->body.health.n_down = m->count;
		p->body.health.generation = m->generation;
		env->health_report = &p->body.health;
		break;
	}
}

static void
sync_pb_release(struct sync_pb *p)
{
	free(p->scratch);
	free(p->refs);
	p->scratch = NULL;
	p->refs = NULL;
}

/* Build and check the protobuf-c view of m; sync_pb_release() it after. */
static int
sync_pb_build(const struct wire_sync_msg *m, struct sync_pb *p)
{
	enum wire_sync_kind kind;
	struct sync_body b;
	enum wire_drop why;
	bool refs;

	p->scratch = NULL;
	p->refs = NULL;
	if ((unsigned int)m->kind >= WIRE_SYNC_KIND_MAX)
		return -EINVAL;
	refs = m->kind == WIRE_SYNC_HEALTH;
	if ((has_entries(m->kind) || refs) && m->count > 0) {
		int rc;

		if (m->entries == NULL)
			return -EINVAL;
		if (refs) {
			p->refs = backend_refs_to_pb(m->entries, m->count);
			rc = p->refs == NULL ? -ENOMEM : 0;
		} else {
			rc = wire_cols_from_c(m->entries, m->count, has_origins(m->kind), &p->cols,
					      &p->scratch);
		}
		if (rc < 0) {
			sync_pb_release(p);
			return rc;
		}
	}
	p->env = (Maglb__Sync__Envelope)MAGLB__SYNC__ENVELOPE__INIT;
	p->env.version = WIRE_SYNC_VERSION;
	p->env.sender = m->node_id;
	p->env.seq = m->seq;
	sync_body_set(m, p);
	if (!sync_check(&p->env, SIZE_MAX, &kind, &b, &why)) {
		sync_pb_release(p);
		return -EINVAL;
	}
	return 0;
}

int
wire_sync_encode(const struct wire_sync_msg *m, uint8_t *buf, size_t len,
		 size_t *out_len)
{
	struct sync_pb p;
	int ret;

	ret = sync_pb_build(m, &p);
	if (ret < 0)
		return ret;
	ret = wire_pb_pack(&p.env.base, buf, len, out_len);
	sync_pb_release(&p);
	return ret;
}

size_t
wire_sync_encoded_size(const struct wire_sync_msg *m)
{
	struct sync_pb p;
	size_t size;

	if (sync_pb_build(m, &p) < 0)
		return 0;
	size = maglb__sync__envelope__get_packed_size(&p.env);
	sync_pb_release(&p);
	return size;
}

int
wire_sync_decode(const uint8_t *buf, size_t len, struct wire_sync_msg *m,
		 struct wire_flow *entries, size_t cap,
		 struct wire_counters *c)
{
	Maglb__Sync__Envelope *env;
	enum wire_sync_kind kind;
	struct sync_body b;
	enum wire_drop why;

	if (buf == NULL && len > 0)
		return wire_drop_count(c, WIRE_DROP_TRUNCATED);
	/* NULL when the input is cut short or malformed (or on ENOMEM). */
	env = maglb__sync__envelope__unpack(NULL, len, buf);
	if (env == NULL)
		return wire_drop_count(c, WIRE_DROP_TRUNCATED);
	if (entries == NULL)
		cap = 0;
	if (!sync_check(env, cap, &kind, &b, &why)) {
		maglb__sync__envelope__free_unpacked(env, NULL);
		return wire_drop_count(c, why);
	}

	/* commit */
	if (kind == WIRE_SYNC_HEALTH)
		for (size_t i = 0; i < b.count; i++)
			backend_ref_to_c(b.refs[i], &entries[i]);
	else if (b.count > 0)
		wire_cols_to_c(b.cols, b.count, entries);
	*m = (struct wire_sync_msg){
		.version = env->version,
		.kind = kind,
		.node_id = env->sender,
		.seq = env->seq,
		.epoch = b.epoch,
		.peer = b.peer,
		.entry_count = b.entry_count,
		.stamp_us = b.stamp_us,
		.digest = b.digest,
		.maglev_digest = b.maglev_digest,
		.generation = b.generation,
		.entries = b.count > 0 ? entries : NULL,
		.count = b.count,
	};
	if (kind == WIRE_SYNC_NODE_STATE)
		node_state_to_c(b.state, &m->state);
	maglb__sync__envelope__free_unpacked(env, NULL);
	return 0;
}
