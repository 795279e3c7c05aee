/* SPDX-License-Identifier: BSD-3-Clause */
/* syncd's replication engine: the import queue to the dataplane, in order. */
#include "syncd/repl_private.h"

#include <errno.h>
#include <stdlib.h>

#include "syncd/cache.h"
#include "syncd/lagcum.h"
#include "syncd/lathist.h"

enum {
	IMPORT_BATCH_MAX = 4096,        /* entries per IMPORT_BATCH */
};

void
repl_import_free_all(struct repl *r)
{
	while (r->i_head != NULL) {
		struct import_batch *b = r->i_head;

		r->i_head = b->next;
		free(b->e);
		free(b);
	}
	r->i_tail = NULL;
	r->i_entries = 0;
}

/* Queue one entry for the dataplane; false when the queue is full. */
bool
repl_import_add(struct repl *r, uint16_t gi, enum wire_flow_event ev, const struct wire_flow *f,
		uint64_t stamp_us)
{
	struct import_batch *b = r->i_tail;

	if (!r->dp_up)
		return true;    /* the full import at the next connection has it */
	if (r->i_entries >= r->p.import_queue_entries) {
		r->groups[gi].carried.counters[REPL_DROP_IMPORT_QUEUE]++;
		return false;
	}
	if (b == NULL || b->sent || b->ev != ev || b->group != gi || b->n == IMPORT_BATCH_MAX) {
		b = calloc(1, sizeof(*b));
		if (b != NULL && (b->e = malloc(64 * sizeof(*b->e))) == NULL) {
			free(b);
			b = NULL;
		}
		if (b == NULL) {
			r->groups[gi].carried.counters[REPL_DROP_IMPORT_QUEUE]++;
			return false;
		}
		b->cap = 64;
		b->ev = ev;
		b->group = gi;
		b->token = ++r->next_token;
		if (r->i_tail != NULL)
			r->i_tail->next = b;
		else
			r->i_head = b;
		r->i_tail = b;
	}
	if (b->n == b->cap) {
		size_t cap = 4 * b->cap;
		struct wire_flow *e = realloc(b->e, (cap < IMPORT_BATCH_MAX ? cap : IMPORT_BATCH_MAX) *
					      sizeof(*e));

		if (e == NULL) {
			r->groups[gi].carried.counters[REPL_DROP_IMPORT_QUEUE]++;
			return false;
		}
		b->e = e;
		b->cap = cap < IMPORT_BATCH_MAX ? cap : IMPORT_BATCH_MAX;
	}
	b->e[b->n++] = *f;
	if (stamp_us != 0 && (b->stamp_us == 0 || stamp_us < b->stamp_us))
		b->stamp_us = stamp_us;
	r->i_entries++;
	return true;
}

/* The next part of a full import: live entries from the cache. */
static void
import_walk(struct repl *r, uint32_t now_ms)
{
	struct cache_key k;
	struct cache_value v;
	struct wire_flow f;

	/* a bounded share a call: the import queue may hold a million */
	for (unsigned n = 0; r->dp_walking && r->i_entries < r->p.import_queue_entries &&
	     n < IMPORT_WALK_PER_CALL; n++) {
		if (!cache_next(r->cache, &r->dp_cursor, now_ms, &k, &v)) {
			r->dp_walking = false;
			r->dp_last_token = r->i_tail != NULL ? r->i_tail->token : 0;
			if (r->dp_last_token == 0)
				r->dp_synced = true;
			return;
		}
		cache_to_wire(r->cache, &k, &v, now_ms, &f);
		repl_import_add(r, repl_group_of_vip(r, k.vip), WIRE_FLOW_EVENT_NEW, &f, 0);
	}
}

/* Send the import batches not sent yet, in order, while the dataplane takes them. */
static void
import_send(struct repl *r)
{
	struct import_batch *b = r->i_head;

	while (b != NULL && r->dp_up) {
		struct import_batch *next = b->next;
		int rc;

		if (!b->sent) {
			rc = r->ops.import(r->arg, b->ev, b->e, b->n, b->token);
			if (rc == -EAGAIN)
				return;
			if (rc == -ENOTCONN) {
				repl_dataplane_down(r);
				return;
			}
			b->sent = true;
			if (rc < 0)
				repl_import_done(r, b->token, false, 0);  /* frees b */
		}
		b = next;
	}
}

void
repl_import_pump(struct repl *r, uint32_t now_ms)
{
	import_walk(r, now_ms);
	import_send(r);
}

void
repl_on_dispatched(struct repl *r)
{
	import_send(r);
}

void
repl_import_done(struct repl *r, uint64_t token, bool ok, uint64_t now_us)
{
	struct import_batch **link = &r->i_head, *b, *prev = NULL;

	for (b = r->i_head; b != NULL && b->token != token; prev = b, b = b->next)
		link = &b->next;
	if (b == NULL) {
		r->node[REPL_NODE_IMPORT_UNKNOWN]++;
		return;
	}
	*link = b->next;
	if (r->i_tail == b)
		r->i_tail = prev;
	r->i_entries -= b->n;
	if (ok) {
		struct group *g = &r->groups[b->group];

		r->node[REPL_NODE_IMPORT_BATCHES]++;
		g->carried.counters[REPL_IMPORTED] += b->n;
		if (b->stamp_us != 0 && now_us > b->stamp_us) {
			lathist_add(&g->carried.import_lag, now_us - b->stamp_us);
			lagcum_add(&g->carried.import_lag_cum, now_us - b->stamp_us);
		}
	} else {
		r->node[REPL_NODE_IMPORT_ERRORS]++;
	}
	if (!r->dp_walking && !r->dp_synced && token >= r->dp_last_token)
		r->dp_synced = true;
	free(b->e);
	free(b);
}

void
repl_dataplane_up(struct repl *r, uint32_t now_ms)
{
	repl_import_free_all(r);
	r->dp_up = true;
	r->dp_walking = true;
	r->dp_synced = false;
	r->dp_cursor = 0;
	r->node[REPL_NODE_DATAPLANE_RELOADS]++;
	repl_import_pump(r, now_ms);
}

void
repl_dataplane_down(struct repl *r)
{
	r->dp_up = false;
	r->dp_walking = false;
	r->dp_synced = false;
	repl_import_free_all(r);
}
