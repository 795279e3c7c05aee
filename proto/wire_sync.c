/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow sync messages (sync.proto): peer to peer over CPG.
 *
 * Every kind is one body of the Envelope's oneof. The kinds differ only in
 * which of four things their body carries (epoch, peer, entry count,
 * entries), so both directions go through struct sync_body, and one check
 * serves the decoder (peer input) and the encoder (our own output).
 */
#include "proto/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
};

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
};

/* What a body carries, whatever its kind. */
struct sync_body {
	uint32_t epoch;
	uint32_t peer;
	uint64_t entry_count;
	uint64_t stamp_us;
	uint64_t digest;
	Maglb__Sync__Flow **entries;
	size_t count;
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
	} body;
	Maglb__Sync__Flow **flows;  /* allocated */
};

/* The kind of a body; WIRE_SYNC_KIND_MAX for none or an unknown one. */
static enum wire_sync_kind sync_kind_of(Maglb__Sync__Envelope__BodyCase body)
{
	if (body == MAGLB__SYNC__ENVELOPE__BODY__NOT_SET)
		return WIRE_SYNC_KIND_MAX;
	for (int kind = 0; kind < WIRE_SYNC_KIND_MAX; kind++)
		if (sync_cases[kind] == body)
			return (enum wire_sync_kind)kind;
	return WIRE_SYNC_KIND_MAX;
}

/* Kinds that carry an epoch (a resync's, a digest round), >= 1. */
static bool has_epoch(enum wire_sync_kind kind)
{
	return kind >= WIRE_SYNC_RESYNC_REQUEST;
}

/* Kinds that name the node they answer, >= 1. */
static bool has_peer(enum wire_sync_kind kind)
{
	return has_epoch(kind) && kind != WIRE_SYNC_RESYNC_REQUEST &&
	       kind != WIRE_SYNC_DIGEST_REQUEST;
}

static bool has_entries(enum wire_sync_kind kind)
{
	return kind <= WIRE_SYNC_CLOSE || kind == WIRE_SYNC_RESYNC_ENTRIES;
}

/* Read the body of env (of a known kind); false if it is missing. */
static bool sync_body_get(const Maglb__Sync__Envelope *env,
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
		b->entries = env->resync_entries->entries;
		b->count = env->resync_entries->n_entries;
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
		return true;
	default:
		return false;
	}
	if (batch == NULL)
		return false;
	b->entries = batch->entries;
	b->count = batch->n_entries;
	b->stamp_us = batch->stamp_us;
	return true;
}

/*
 * Validate a whole message, without changing anything. On success stores
 * its kind and body; on failure the one reason it is dropped.
 */
static bool sync_check(const Maglb__Sync__Envelope *env, size_t cap,
		       enum wire_sync_kind *kind, struct sync_body *b,
		       enum wire_drop *why)
{
	if (env->version != WIRE_VERSION) {
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
	if (b->count > cap) {
		*why = WIRE_DROP_TOO_MANY_ENTRIES;
		return false;
	}
	return wire_flows_check(b->entries, b->count, why);
}

/* Set the body of p->env for m; the entries are already in p->flows. */
static void sync_body_set(const struct wire_sync_msg *m, struct sync_pb *p)
{
	Maglb__Sync__Envelope *env = &p->env;

	env->body_case = sync_cases[m->kind];
	switch (m->kind) {
	case WIRE_SYNC_NEW:
	case WIRE_SYNC_REFRESH:
	case WIRE_SYNC_CLOSE:
		p->body.batch = (Maglb__Sync__Batch)MAGLB__SYNC__BATCH__INIT;
		p->body.batch.entries = p->flows;
		p->body.batch.n_entries = m->count;
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
		p->body.entries.entries = p->flows;
		p->body.entries.n_entries = m->count;
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
	default:
		p->body.digest = (Maglb__Sync__Digest)MAGLB__SYNC__DIGEST__INIT;
		p->body.digest.round = m->epoch;
		p->body.digest.requester = m->peer;
		p->body.digest.entry_count = m->entry_count;
		p->body.digest.digest = m->digest;
		env->digest = &p->body.digest;
		break;
	}
}

/* Build and check the protobuf-c view of m; free p->flows afterwards. */
static int sync_pb_build(const struct wire_sync_msg *m, struct sync_pb *p)
{
	enum wire_sync_kind kind;
	struct sync_body b;
	enum wire_drop why;
	size_t count;

	p->flows = NULL;
	if ((unsigned int)m->kind >= WIRE_SYNC_KIND_MAX)
		return -EINVAL;
	count = has_entries(m->kind) ? m->count : 0;
	if (count > 0) {
		if (m->entries == NULL)
			return -EINVAL;
		p->flows = wire_flows_to_pb(m->entries, count);
		if (p->flows == NULL)
			return -ENOMEM;
	}
	p->env = (Maglb__Sync__Envelope)MAGLB__SYNC__ENVELOPE__INIT;
	p->env.version = WIRE_VERSION;
	p->env.sender = m->node_id;
	p->env.seq = m->seq;
	sync_body_set(m, p);
	if (!sync_check(&p->env, SIZE_MAX, &kind, &b, &why)) {
		free(p->flows);
		p->flows = NULL;
		return -EINVAL;
	}
	return 0;
}

int wire_sync_encode(const struct wire_sync_msg *m, uint8_t *buf, size_t len,
		     size_t *out_len)
{
	struct sync_pb p;
	int ret;

	ret = sync_pb_build(m, &p);
	if (ret < 0)
		return ret;
	ret = wire_pb_pack(&p.env.base, buf, len, out_len);
	free(p.flows);
	return ret;
}

size_t wire_sync_encoded_size(const struct wire_sync_msg *m)
{
	struct sync_pb p;
	size_t size;

	if (sync_pb_build(m, &p) < 0)
		return 0;
	size = maglb__sync__envelope__get_packed_size(&p.env);
	free(p.flows);
	return size;
}

int wire_sync_decode(const uint8_t *buf, size_t len, struct wire_sync_msg *m,
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
	for (size_t i = 0; i < b.count; i++)
		wire_flow_from_pb(b.entries[i], &entries[i]);
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
		.entries = b.count > 0 ? entries : NULL,
		.count = b.count,
	};
	maglb__sync__envelope__free_unpacked(env, NULL);
	return 0;
}
