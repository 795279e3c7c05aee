/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An in-process CPG for unit tests: nodes' processes attach, join and
 * leave one group; what they multicast is queued once and delivered to
 * every member in that one order, the sender included (totem's agreed
 * order), and member views are queued in the same order, so a view falls
 * at the same point of the stream for everyone. Partitions: a split puts
 * some nodes on a ring of their own (each side gets its view, and what
 * one side sends from then on reaches only that side); a heal joins the
 * rings again with one view, merged (CPG's NODEUP).
 *
 * A message reaches the members of its sender's ring at the time it was
 * sent (virtual synchrony: a split after the send does not take it back).
 * Nothing is delivered until the test calls fake_cpg_run(): time and
 * order are the test's.
 */
#ifndef MAGLB_TESTS_UNIT_FAKE_CPG_H
#define MAGLB_TESTS_UNIT_FAKE_CPG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	FAKE_CPG_NODES_MAX = 16,
	FAKE_CPG_QUEUE_MAX = 65536,
};

struct fake_cpg_ops {
	void (*deliver)(void *arg, uint16_t group, uint32_t sender, const void *buf,
			size_t len);
	/* ids ascending; self_in false: this process is no longer a member */
	void (*members)(void *arg, const uint32_t *ids, size_t n, bool self_in, bool merged);
};

struct fake_cpg;

struct fake_cpg *fake_cpg_create(void);
/* Frees what is still queued. NULL is a no-op. */
void fake_cpg_destroy(struct fake_cpg *f);

/* Node id's process (ops copied); not a member until fake_cpg_join(). */
void fake_cpg_attach(struct fake_cpg *f, uint32_t id, const struct fake_cpg_ops *ops,
		     void *arg);
/* The process is gone: no callback reaches it again; it leaves the group. */
void fake_cpg_detach(struct fake_cpg *f, uint32_t id);

/* Join or leave the group: a view is queued for its ring (and for it). */
void fake_cpg_join(struct fake_cpg *f, uint32_t id);
void fake_cpg_leave(struct fake_cpg *f, uint32_t id);

/* Multicast from id: 0, -ENOTCONN (not a member), -EAGAIN (set busy). */
int fake_cpg_send(struct fake_cpg *f, uint32_t id, uint16_t group, const void *buf,
		  size_t len);
void fake_cpg_set_busy(struct fake_cpg *f, uint32_t id, bool busy);

/* ids[0..n) go to a ring of their own, the rest stay; both get a view. */
void fake_cpg_split(struct fake_cpg *f, const uint32_t *ids, size_t n);
/* One ring again: one view for all, merged. */
void fake_cpg_heal(struct fake_cpg *f);

/* Deliver up to max queued items (messages and views) in order; how many. */
size_t fake_cpg_run(struct fake_cpg *f, size_t max);
size_t fake_cpg_pending(const struct fake_cpg *f);

#endif /* MAGLB_TESTS_UNIT_FAKE_CPG_H */
