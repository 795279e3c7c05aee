/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The JSON API (/api/v1/state, /api/v1/history) the console and scripts
 * read, and the history behind the console's charts: a point a
 * collection (rates between two snapshots) and events (role changes,
 * backends changing state, admins' actions), in rings of fixed size.
 * Pure: the caller passes the snapshots and the times; not thread safe
 * (the daemon holds a lock around the history).
 */
#ifndef MAGLB_MONITOR_API_H
#define MAGLB_MONITOR_API_H

#include <stdio.h>

#include "monitor/snapshot.h"

enum {
	MON_HISTORY_POINTS = 600,       /* 10 minutes of 1 s collections */
	MON_HISTORY_EVENTS = 200,
	MON_EVENT_TEXT_MAX = 256,
	MON_COLLECT_INTERVAL_MS = 1000,
};

enum mon_event_kind {
	MON_EVENT_ROLE = 0,
	MON_EVENT_HEALTH,
	MON_EVENT_ADMIN,
	MON_EVENT_KIND_MAX
};

extern const char *const mon_event_kind_names[MON_EVENT_KIND_MAX];

struct mon_history;

struct mon_history *mon_history_create(void);
void mon_history_free(struct mon_history *h);

/*
 * Fold s, collected after prev (NULL: the first), into h: a point of the
 * rates between them, and an event for each change of this node's role,
 * quorum or standby and of each backend's state.
 */
void mon_history_add(struct mon_history *h, const struct mon_snapshot *prev,
		     const struct mon_snapshot *s);

void mon_history_event(struct mon_history *h, uint64_t t_ms, enum mon_event_kind kind,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Who asks: the console's user; csrf NULL for HTTP Basic (no session). */
struct mon_api_ctx {
	const char *node_name;
	const char *version;
	const char *user;
	const char *role;
	const char *csrf;
};

/* Write the documents. 0, or -EIO when writing failed. */
int mon_api_state(FILE *f, const struct mon_snapshot *s, const struct mon_api_ctx *ctx);
int mon_api_history(FILE *f, const struct mon_history *h);

#endif /* MAGLB_MONITOR_API_H */
