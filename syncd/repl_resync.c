/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine: bulk resync, as requester and as donor; memberships. */
#include "syncd/repl_private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "syncd/cache.h"

enum {
	/*
	 * A donor's messages a tick: each is up to RESYNC_MSG_BYTES of
	 * entries (about 3000) walked, encoded and sent, a few ms of the loop
	 * for 8; many more would hold it past a dataplane ping's deadline.
	 */
	STREAM_MSGS_PER_TICK = 8,
	RESYNC_REFUSED_LOG_MS = 60000,  /* a refused resync event: logged once a minute */
	RESYNC_WHY_MAX = 128,
};

/* The requester's machine; its states are in repl_private.h. */
static const char *const resync_state_names[RESYNC_S_MAX] = {
	[RESYNC_S_JOINING] = "joining",
	[RESYNC_S_REQUESTING] = "requesting",
	[RESYNC_S_REQUESTED] = "requested",
	[RESYNC_S_RECEIVING] = "receiving",
	[RESYNC_S_MERGE_REQUESTING] = "merge-requesting",
	[RESYNC_S_MERGE_REQUESTED] = "merge-requested",
	[RESYNC_S_MERGE_RECEIVING] = "merge-receiving",
	[RESYNC_S_SYNCED] = "synced",
};

/* What the status tells of each. */
static const enum repl_sync_state resync_public[RESYNC_S_MAX] = {
	[RESYNC_S_JOINING] = REPL_JOINING,
	[RESYNC_S_REQUESTING] = REPL_RESYNCING,
	[RESYNC_S_REQUESTED] = REPL_RESYNCING,
	[RESYNC_S_RECEIVING] = REPL_RESYNCING,
	[RESYNC_S_MERGE_REQUESTING] = REPL_RESYNCING,
	[RESYNC_S_MERGE_REQUESTED] = REPL_RESYNCING,
	[RESYNC_S_MERGE_RECEIVING] = REPL_RESYNCING,
	[RESYNC_S_SYNCED] = REPL_SYNCED,
};

enum resync_event {
	RESYNC_EVT_JOINED = 0,          /* this node became a member */
	RESYNC_EVT_MERGED,              /* a partition healed: a returning member to ask */
	RESYNC_EVT_ALONE,               /* no other member to ask: nothing to fetch */
	RESYNC_EVT_REQUEST_SENT,        /* multicast, or refused by the transport */
	RESYNC_EVT_BEGIN,
	RESYNC_EVT_ENTRIES,
	RESYNC_EVT_END,                 /* with the count received */
	RESYNC_EVT_END_SHORT,           /* with another count: the next donor is asked */
	RESYNC_EVT_DONOR_LEFT,          /* the next donor is asked */
	RESYNC_EVT_LEFT,                /* this node is no longer a member */
	RESYNC_EVT_MAX
};

static const char *const resync_event_names[RESYNC_EVT_MAX] = {
	[RESYNC_EVT_JOINED] = "joined",
	[RESYNC_EVT_MERGED] = "merged",
	[RESYNC_EVT_ALONE] = "alone",
	[RESYNC_EVT_REQUEST_SENT] = "request-sent",
	[RESYNC_EVT_BEGIN] = "begin",
	[RESYNC_EVT_ENTRIES] = "entries",
	[RESYNC_EVT_END] = "end",
	[RESYNC_EVT_END_SHORT] = "end-short",
	[RESYNC_EVT_DONOR_LEFT] = "donor-left",
	[RESYNC_EVT_LEFT] = "left",
};

/* Where each event takes each state; the rest are refused. */
static const struct resync_move {
	bool ok;
	enum resync_state to;
} resync_moves[RESYNC_S_MAX][RESYNC_EVT_MAX] = {
	[RESYNC_S_JOINING] = {
		[RESYNC_EVT_JOINED] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_REQUESTING] = {
		[RESYNC_EVT_REQUEST_SENT] = { true, RESYNC_S_REQUESTED },
		[RESYNC_EVT_ALONE] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_REQUESTED] = {
		[RESYNC_EVT_BEGIN] = { true, RESYNC_S_RECEIVING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_RECEIVING] = {
		[RESYNC_EVT_ENTRIES] = { true, RESYNC_S_RECEIVING },
		[RESYNC_EVT_END] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_END_SHORT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_MERGE_REQUESTING] = {
		[RESYNC_EVT_REQUEST_SENT] = { true, RESYNC_S_MERGE_REQUESTED },
		[RESYNC_EVT_ALONE] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_MERGE_REQUESTED] = {
		[RESYNC_EVT_BEGIN] = { true, RESYNC_S_MERGE_RECEIVING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_MERGE_RECEIVING] = {
		[RESYNC_EVT_ENTRIES] = { true, RESYNC_S_MERGE_RECEIVING },
		[RESYNC_EVT_END] = { true, RESYNC_S_SYNCED },
		[RESYNC_EVT_END_SHORT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_DONOR_LEFT] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
	[RESYNC_S_SYNCED] = {
		[RESYNC_EVT_MERGED] = { true, RESYNC_S_MERGE_REQUESTING },
		[RESYNC_EVT_LEFT] = { true, RESYNC_S_JOINING },
	},
};

static const char *const stream_phase_names[STREAM_PHASE_MAX] = {
	[STREAM_BEGIN] = "begin",
	[STREAM_ENTRIES] = "entries",
	[STREAM_END] = "end",
};

/* ----------------------------------------------------------------- resync */

/* The lowest member above after (0: any) but this node; 0 when alone. */
static uint32_t
pick_donor(const struct repl *r, const struct group *g, uint32_t after)
{
	uint32_t best = 0, lowest = 0;

	for (uint32_t i = 0; i < g->carried.n_members; i++) {
		uint32_t n = g->carried.members[i];

		if (n == r->p.self)
			continue;
		if (lowest == 0 || n < lowest)
			lowest = n;
		if (n > after && (best == 0 || n < best))
			best = n;
	}
	return best != 0 ? best : lowest;
}

/* The lowest member but node (a request naming no donor: that one serves). */
static uint32_t
lowest_but(const struct group *g, uint32_t node)
{
	uint32_t best = 0;

	for (uint32_t i = 0; i < g->carried.n_members; i++)
		if (g->carried.members[i] != node && (best == 0 || g->carried.members[i] < best))
			best = g->carried.members[i];
	return best;
}

/* Count, and log at most once a minute, an event the requester cannot take. */
__attribute__((format(printf, 5, 6)))
static void
resync_refuse(const struct repl *r, struct group *g, enum resync_event ev, uint32_t now_ms,
	      const char *fmt, ...)
{
	struct resync_requester *rq = &g->carried.rq;
	char why[RESYNC_WHY_MAX];
	va_list ap;

	g->carried.counters[REPL_IMPOSSIBLE_TRANSITIONS]++;
	if (rq->refused_logged && now_ms - rq->refused_ms < RESYNC_REFUSED_LOG_MS)
		return;
	rq->refused_logged = true;
	rq->refused_ms = now_ms;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	repl_say(r, LOG_ERR, "group %s: resync: %s refused in state %s (donor %u, epoch %u): %s "
		 "(impossible_transitions=%" PRIu64 ")", g->name, resync_event_names[ev],
		 resync_state_names[rq->state], rq->donor, rq->epoch, why,
		 g->carried.counters[REPL_IMPOSSIBLE_TRANSITIONS]);
}

/* The one way the requester moves. 0, or -EPERM: refused, nothing changed. */
static int
resync_move(const struct repl *r, struct group *g, enum resync_event ev, uint32_t now_ms)
{
	const struct resync_move *m = &resync_moves[g->carried.rq.state][ev];

	if (!m->ok) {
		resync_refuse(r, g, ev, now_ms, "not a transition of the machine");
		return -EPERM;
	}
	g->carried.rq.state = m->to;
	return 0;
}

enum repl_sync_state
repl_group_state(const struct group *g)
{
	return resync_public[g->carried.rq.state];
}

/* A donor picked, the request not multicast yet. */
bool
repl_resync_requesting(const struct group *g)
{
	return g->carried.rq.state == RESYNC_S_REQUESTING ||
	       g->carried.rq.state == RESYNC_S_MERGE_REQUESTING;
}

/* Synced before a partition healed, fetching what the other side made. */
bool
repl_resync_merging(const struct group *g)
{
	return g->carried.rq.state == RESYNC_S_MERGE_REQUESTING ||
	       g->carried.rq.state == RESYNC_S_MERGE_REQUESTED ||
	       g->carried.rq.state == RESYNC_S_MERGE_RECEIVING;
}

static void
request_send(struct repl *r, uint16_t gi, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct wire_sync_msg m = {
		.kind = WIRE_SYNC_RESYNC_REQUEST, .epoch = g->carried.rq.epoch,
		.peer = g->carried.rq.donor,
	};
	size_t len;
	int rc;

	if (g->carried.q_head != NULL)
		return;         /* after the backlog, from the tick */
	len = repl_encode(r, g, &m);
	rc = len > 0 ? r->ops.send(r->arg, gi, r->buf, len) : -EINVAL;
	if (rc == -EAGAIN) {
		g->carried.seq--;
		g->carried.counters[REPL_CPG_RETRIES]++;
		return;
	}
	resync_move(r, g, RESYNC_EVT_REQUEST_SENT, now_ms);
	if (rc == 0) {
		g->carried.counters[REPL_MSGS_SENT]++;
		g->carried.counters[REPL_BYTES_SENT] += len;
	}
}

/*
 * Apply ev, which leads to (MERGE_)REQUESTING, and ask the next donor after
 * `after` for everything; synced when alone. 0, or -EPERM: ev refused.
 */
static int
resync_start(struct repl *r, uint16_t gi, enum resync_event ev, uint32_t after,
	     uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct resync_requester *rq = &g->carried.rq;
	uint32_t donor;

	if (resync_move(r, g, ev, now_ms) < 0)
		return -EPERM;
	donor = pick_donor(r, g, after);
	if (donor == 0)
		return resync_move(r, g, RESYNC_EVT_ALONE, now_ms) < 0 ? -EPERM : 0;
	rq->donor = donor;
	rq->epoch = rq->epoch + 1 != 0 ? rq->epoch + 1 : 1;
	rq->got = 0;
	rq->start_ms = now_ms;
	g->carried.counters[REPL_RESYNC_REQUESTS]++;
	request_send(r, gi, now_ms);
	return 0;
}

static void
stream_add(struct group *g, uint32_t requester, uint32_t epoch, bool announce)
{
	struct stream *s = NULL;

	for (uint32_t i = 0; i < g->n_streams; i++)
		if (g->streams[i].requester == requester)
			s = &g->streams[i];    /* a newer request replaces it */
	if (s == NULL) {
		if (g->n_streams == STREAMS_MAX)
			return;     /* the requester asks again after a timeout */
		s = &g->streams[g->n_streams++];
	}
	*s = (struct stream){ .requester = requester, .epoch = epoch, .announce = announce,
			      .phase = announce ? STREAM_ENTRIES : STREAM_BEGIN };
	if (!announce)
		g->carried.counters[REPL_RESYNC_SERVED]++;
}

static void
stream_drop(struct group *g, uint32_t i)
{
	g->streams[i] = g->streams[--g->n_streams];
}

static void
stream_enter(const struct repl *r, const struct group *g, struct stream *s,
	     enum stream_phase phase)
{
	s->phase = phase;
	repl_say(r, LOG_DEBUG, "group %s: resync stream to node %u, epoch %u: %s (%" PRIu64
		 " entries sent)", g->name, s->requester, s->epoch, stream_phase_names[phase],
		 s->sent);
}

/* Build the stream's next message at the moment it is sent; see repl.h. */
static int
stream_step(struct repl *r, uint16_t gi, struct stream *s, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct wire_sync_msg m = { .epoch = s->epoch, .peer = s->requester };
	struct wire_flow *e = r->scratch;
	uint32_t cursor = s->cursor;
	size_t bytes = WIRE_SYNC_HEADER_MAX, len, n = 0;
	int rc;

	if (s->announce && s->phase != STREAM_ENTRIES) {
		return 1;
	} else if (s->phase == STREAM_BEGIN) {
		m.kind = WIRE_SYNC_RESYNC_BEGIN;
	} else if (s->phase == STREAM_END) {
		m.kind = WIRE_SYNC_RESYNC_END;
		m.entry_count = s->sent;
	} else {
		struct cache_key k;
		struct cache_value v;

		m.kind = s->announce ? WIRE_SYNC_NEW : WIRE_SYNC_RESYNC_ENTRIES;
		for (;;) {
			uint32_t before = cursor;

			if (!cache_next(r->cache, &cursor, now_ms, &k, &v)) {
				break;
			}
			if (repl_group_of_vip(r, k.vip) != gi ||
			    (s->announce && v.origin != r->p.self))
				continue;
			cache_to_wire(r->cache, &k, &v, now_ms, &e[n]);
			if (!s->announce)
				e[n].origin = v.origin;
			if (bytes + wire_sync_entry_size(m.kind, &e[n]) > RESYNC_MSG_BYTES) {
				cursor = before;
				break;
			}
			bytes += wire_sync_entry_size(m.kind, &e[n]);
			n++;
		}
		if (n == 0) {
			stream_enter(r, g, s, STREAM_END);
			s->cursor = cursor;
			return 0;
		}
		m.entries = e;
		m.count = n;
	}
	len = repl_encode(r, g, &m);
	rc = len > 0 ? r->ops.send(r->arg, gi, r->buf, len) : -EINVAL;
	if (rc == -EAGAIN) {
		g->carried.seq--;
		g->carried.counters[REPL_CPG_RETRIES]++;
		return rc;
	}
	if (rc == 0) {
		g->carried.counters[REPL_MSGS_SENT]++;
		g->carried.counters[REPL_BYTES_SENT] += len;
		g->carried.counters[s->announce ? REPL_ENTRIES_SENT :
				    REPL_RESYNC_ENTRIES_SENT] += n;
	}
	s->cursor = cursor;
	s->sent += n;
	if (s->phase == STREAM_BEGIN)
		stream_enter(r, g, s, STREAM_ENTRIES);
	else if (s->phase == STREAM_END)
		return 1;       /* done */
	return 0;
}

static void
streams_run(struct repl *r, uint16_t gi, uint32_t now_ms)
{
	struct group *g = &r->groups[gi];

	for (int budget = STREAM_MSGS_PER_TICK; budget > 0 && g->n_streams > 0 &&
	     g->carried.q_head == NULL; budget--) {
		int rc = stream_step(r, gi, &g->streams[0], now_ms);

		if (rc < 0)
			return;
		if (rc == 1)
			stream_drop(g, 0);
	}
}

void
repl_resync_tick(struct repl *r, uint16_t gi, uint32_t now_ms)
{
	if (repl_resync_requesting(&r->groups[gi]))
		request_send(r, gi, now_ms);
	streams_run(r, gi, now_ms);
}

/*
 * A donor's BEGIN, ENTRIES or END addressed to this node. Every member sees
 * every stream; one addressed here comes from the donor asked, with the
 * epoch asked: CPG delivers nothing of a donor after it left, and a new
 * request is made only once the stream before has ended or its donor left.
 */
static void
on_stream(struct repl *r, uint16_t gi, uint32_t sender, const struct wire_sync_msg *m,
	  uint32_t now_ms)
{
	struct group *g = &r->groups[gi];
	struct resync_requester *rq = &g->carried.rq;
	enum resync_event ev = m->kind == WIRE_SYNC_RESYNC_BEGIN ? RESYNC_EVT_BEGIN :
			       m->kind == WIRE_SYNC_RESYNC_ENTRIES ? RESYNC_EVT_ENTRIES :
			       rq->got == m->entry_count ? RESYNC_EVT_END : RESYNC_EVT_END_SHORT;

	if (sender != rq->donor || m->epoch != rq->epoch) {
		resync_refuse(r, g, ev, now_ms, "from node %u, epoch %u: not the stream asked",
			      sender, m->epoch);
		return;
	}
	switch (ev) {
	case RESYNC_EVT_BEGIN:
		if (resync_move(r, g, ev, now_ms) == 0)
			rq->got = 0;
		break;
	case RESYNC_EVT_ENTRIES:
		if (resync_move(r, g, ev, now_ms) < 0)
			break;
		repl_apply_entries(r, gi, sender, KIND_NEW, m, now_ms);
		rq->got += m->count;
		g->carried.counters[REPL_RESYNC_ENTRIES_RECEIVED] += m->count;
		break;
	case RESYNC_EVT_END:
		if (resync_move(r, g, ev, now_ms) < 0)
			break;
		rq->import_barrier = r->i_tail != NULL ? r->i_tail->token : 0;
		r->want_reconcile = true;
		g->carried.counters[REPL_RESYNC_COMPLETE]++;
		g->carried.counters[REPL_RESYNC_LAST_MS] = now_ms - rq->start_ms;
		break;
	default:
		if (resync_start(r, gi, ev, rq->donor, now_ms) == 0)
			g->carried.counters[REPL_RESYNC_INCOMPLETE]++;
		break;
	}
}

void
repl_resync_deliver(struct repl *r, uint16_t gi, uint32_t sender, const struct wire_sync_msg *m,
		    uint32_t now_ms)
{
	struct group *g = &r->groups[gi];

	switch (m->kind) {
	case WIRE_SYNC_RESYNC_REQUEST:
		if (sender != r->p.self && g->carried.member &&
		    (m->peer == r->p.self || (m->peer == 0 && lowest_but(g, sender) == r->p.self)))
			stream_add(g, sender, m->epoch, false);
		break;
	case WIRE_SYNC_RESYNC_BEGIN:
	case WIRE_SYNC_RESYNC_ENTRIES:
	case WIRE_SYNC_RESYNC_END:
		if (m->peer == r->p.self)
			on_stream(r, gi, sender, m, now_ms);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------ membership */

static bool
is_member(const struct group *g, uint32_t node)
{
	for (uint32_t i = 0; i < g->carried.n_members; i++)
		if (g->carried.members[i] == node)
			return true;
	return false;
}

/* The lowest of members[0..n) that was not a member before, but this node. */
static uint32_t
lowest_newcomer(const struct repl *r, const struct group *g, const uint32_t *members, size_t n)
{
	uint32_t best = 0;

	for (size_t i = 0; i < n; i++)
		if (members[i] != r->p.self && !is_member(g, members[i]) &&
		    (best == 0 || members[i] < best))
			best = members[i];
	return best;
}

void
repl_on_members(struct repl *r, uint16_t gi, const uint32_t *members, size_t n, bool self_in,
		bool merged, uint32_t now_ms)
{
	struct group *g;
	uint32_t newcomer;

	if (gi >= r->n_groups)
		return;
	g = &r->groups[gi];
	newcomer = lowest_newcomer(r, g, members, n);
	g->carried.n_members = 0;
	for (size_t i = 0; i < n && g->carried.n_members < REPL_MEMBERS_MAX; i++)
		g->carried.members[g->carried.n_members++] = members[i];
	for (uint32_t i = 0; i < REPL_MEMBERS_MAX; i++)
		if (g->carried.peers[i].node != 0 && !is_member(g, g->carried.peers[i].node))
			g->carried.peers[i] = (struct peer_seq){ 0 };
	for (uint32_t i = 0; i < g->n_streams;)
		if (!g->streams[i].announce && !is_member(g, g->streams[i].requester))
			stream_drop(g, i);
		else
			i++;
	if (!self_in) {
		g->carried.member = false;
		resync_move(r, g, RESYNC_EVT_LEFT, now_ms);
		g->n_streams = 0;
		repl_queue_clear(g);
		return;
	}
	if (!g->carried.member) {  /* what we made while outside the group */
		stream_add(g, r->p.self, 0, true);
		repl_inflight_clear(g);
	}
	g->carried.member = true;
	if (g->carried.rq.state == RESYNC_S_JOINING) {
		resync_start(r, gi, RESYNC_EVT_JOINED, 0, now_ms);
	} else if (repl_group_state(g) == REPL_RESYNCING &&
		   !is_member(g, g->carried.rq.donor)) {
		if (resync_start(r, gi, RESYNC_EVT_DONOR_LEFT, g->carried.rq.donor, now_ms) == 0)
			g->carried.counters[REPL_RESYNC_INCOMPLETE]++;
	} else if (g->carried.rq.state == RESYNC_S_SYNCED && newcomer != 0 && merged) {
		/* a partition healed: each side lacks what the other made */
		stream_add(g, r->p.self, 0, true);
		if (resync_start(r, gi, RESYNC_EVT_MERGED, newcomer - 1, now_ms) == 0)
			g->carried.counters[REPL_RESYNC_MERGES]++;
	}
}
