/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VIP ownership on the control thread: what OWNERSHIP_SET asks, the leases
 * that end a VIP's ownership unless renewed, and the announcements repeated
 * after a take. syncd renews the leases of the VIPs it holds; a syncd that
 * dies or hangs stops renewing them, and this node stops answering ARP/ND
 * for them by itself, so two nodes never answer for one VIP for long.
 * Deadlines are checked by the 1 ms tick, against the earliest of them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <qb/qblog.h>

#include "dataplane/control_private.h"

static struct control_vip_timer *
timer_find(struct control *c, const char *vip)
{
	for (uint32_t i = 0; i < c->n_timers; i++)
		if (strcmp(c->timers[i].vip, vip) == 0)
			return &c->timers[i];
	return NULL;
}

/* vip's timer, new and empty if it had none: there is room, as a timer's
 * VIP is one of the state's, and those are at most CONFIG_VIPS_MAX. */
static struct control_vip_timer *
timer_get(struct control *c, const char *vip)
{
	struct control_vip_timer *t = timer_find(c, vip);

	if (t != NULL)
		return t;
	t = &c->timers[c->n_timers++];
	memset(t, 0, sizeof(*t));
	snprintf(t->vip, sizeof(t->vip), "%s", vip);
	t->announced = CONTROL_ANNOUNCE_TIMES;
	return t;
}

static void
timer_drop(struct control *c, struct control_vip_timer *t)
{
	*t = c->timers[--c->n_timers];
}

/* When t's next announcement is due; UINT64_MAX when none is left. */
static uint64_t
announce_at(const struct control_vip_timer *t)
{
	return t->announced < CONTROL_ANNOUNCE_TIMES ? t->announce_ms : UINT64_MAX;
}

/* Announce t's VIP v now and schedule the next: the gaps are 1, 1, 2 and 4
 * times CONTROL_ANNOUNCE_GAP_MS, so +100, +200, +400, +800 ms after the
 * first when the ticks are on time. */
static void
announce(struct control *c, struct control_vip_timer *t, const struct dp_vip *v,
	 uint64_t now_ms)
{
	control_announce(c, v);
	t->announced++;
	t->announce_ms = now_ms + ((uint64_t)CONTROL_ANNOUNCE_GAP_MS <<
				   (t->announced > 1 ? t->announced - 2 : 0));
}

static bool
timer_idle(const struct control_vip_timer *t)
{
	return t->lease_end_ms == 0 && t->announced >= CONTROL_ANNOUNCE_TIMES;
}

static void
timers_rearm(struct control *c)
{
	uint64_t next = UINT64_MAX;

	for (uint32_t i = 0; i < c->n_timers; i++) {
		const struct control_vip_timer *t = &c->timers[i];

		if (t->lease_end_ms != 0 && t->lease_end_ms < next)
			next = t->lease_end_ms;
		if (announce_at(t) < next)
			next = announce_at(t);
	}
	c->timers_next_ms = next;
}

/*
 * *n (a state not published yet, or NULL: a copy of s is made) with VIP
 * vip owned or not. Returns 0 or -errno; *n is unchanged on failure.
 */
static int
set_owned(struct control *c, const struct dp_state *s, struct dp_state **n, uint32_t vip,
	  bool owned)
{
	int rc = 0;

	if (*n == NULL)
		*n = state_with_owned(c->sctx, s, vip, owned, &rc);
	else
		(*n)->vips[vip].owned = owned;  /* unpublished: still ours */
	return rc;
}

/* A VIP taken: its lease set, renewed or cleared; announced if asked. */
static void
taken(struct control *c, const struct dp_vip *v, const struct wire_ctl_ownership *o,
      uint64_t now_ms)
{
	struct control_vip_timer *t = timer_get(c, v->name);

	t->lease_ms = o->lease_ms;
	t->lease_end_ms = o->lease_ms > 0 ? now_ms + o->lease_ms : 0;
	if (o->announce) {
		t->announced = 0;
		announce(c, t, v, now_ms);
	}
	if (timer_idle(t))
		timer_drop(c, t);
}

int
control_ownership_set(struct control *c, const struct wire_ctl_ownership *o,
		      uint64_t now_ms, char *errmsg, size_t errlen)
{
	const struct dp_state *s = control_state(c);
	struct dp_state *n = NULL;
	int rc = 0;

	for (size_t i = 0; i < o->count; i++) {
		if (state_vip_find(s, o->vips[i].vip) < 0) {
			snprintf(errmsg, errlen, "no vip '%s'", o->vips[i].vip);
			return -ENOENT;
		}
	}
	/* A renewal changes no state: only a VIP changing hands makes one. */
	for (size_t i = 0; i < o->count && rc == 0; i++) {
		uint32_t vip = (uint32_t)state_vip_find(s, o->vips[i].vip);
		const struct dp_state *cur = n != NULL ? n : s;

		if (cur->vips[vip].owned != o->vips[i].owned)
			rc = set_owned(c, s, &n, vip, o->vips[i].owned);
	}
	if (rc < 0) {
		state_free(n);
		return rc;
	}

	/* commit */
	if (n != NULL)
		control_publish(c, n);
	c->serving = o->serving;
	c->serving_end_ms = o->serving && o->lease_ms > 0 ? now_ms + o->lease_ms : 0;
	s = control_state(c);
	for (size_t i = 0; i < o->count; i++) {
		const struct dp_vip *v = &s->vips[state_vip_find(s, o->vips[i].vip)];
		struct control_vip_timer *t;

		if (o->vips[i].owned)
			taken(c, v, o, now_ms);
		else if ((t = timer_find(c, v->name)) != NULL)
			timer_drop(c, t);
	}
	timers_rearm(c);
	return 0;
}

/* t's lease ended: disown its VIP in *n. False when out of memory. */
static bool
lease_ended(struct control *c, const struct dp_state *s, struct dp_state **n,
	    const struct control_vip_timer *t)
{
	int vip = state_vip_find(s, t->vip);

	if (set_owned(c, s, n, (uint32_t)vip, false) < 0) {
		qb_log(LOG_ERR, "VIP %s: ownership lease ended, but out of memory to "
		       "disown it: retrying", t->vip);
		return false;
	}
	qb_log(LOG_WARNING, "VIP %s: ownership lease ended, not renewed for %u ms: "
	       "no longer answering ARP/ND", t->vip, t->lease_ms);
	c->counters[CONTROL_LEASE_EXPIRED]++;
	return true;
}

/* The serving lease ended: the node stops asking for traffic by itself. */
static void
serving_due(struct control *c, uint64_t now_ms)
{
	if (!c->serving || c->serving_end_ms == 0 || now_ms < c->serving_end_ms)
		return;
	c->serving = false;
	c->serving_end_ms = 0;
	c->counters[CONTROL_SERVING_EXPIRED]++;
	qb_log(LOG_WARNING, "serving lease ended, not renewed: BFD sessions go down");
}

bool
control_serving(const struct control *c)
{
	return c->serving;
}

void
control_ownership_due(struct control *c, uint64_t now_ms)
{
	const struct dp_state *s = control_state(c);
	struct dp_state *n = NULL;
	uint32_t i = 0;

	serving_due(c, now_ms);
	if (c->n_timers == 0 || now_ms < c->timers_next_ms)
		return;
	while (i < c->n_timers) {
		struct control_vip_timer *t = &c->timers[i];

		if (t->lease_end_ms != 0 && now_ms >= t->lease_end_ms) {
			if (lease_ended(c, s, &n, t)) {
				timer_drop(c, t);
				continue;
			}
			t->lease_end_ms = now_ms + CONTROL_DISOWN_RETRY_MS;
		}
		if (now_ms >= announce_at(t))
			announce(c, t, &s->vips[state_vip_find(s, t->vip)], now_ms);
		if (timer_idle(t))
			timer_drop(c, t);
		else
			i++;
	}
	if (n != NULL)
		control_publish(c, n);
	timers_rearm(c);
}

void
control_ownership_reloaded(struct control *c)
{
	const struct dp_state *s = control_state(c);
	uint32_t i = 0;

	while (i < c->n_timers) {
		if (state_vip_find(s, c->timers[i].vip) < 0)
			timer_drop(c, &c->timers[i]);
		else
			i++;
	}
	timers_rearm(c);
}
