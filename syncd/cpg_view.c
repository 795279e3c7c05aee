/* SPDX-License-Identifier: BSD-3-Clause */
/* What syncd takes from CPG's callbacks. See cpg_view.h. */
#include "syncd/cpg_view.h"

#include <stdlib.h>
#include <string.h>

static int
node_order(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

size_t
cpg_view_build(uint32_t *nodes, size_t n, uint32_t view[REPL_MEMBERS_MAX],
	       uint64_t counters[SYNCD_CPG_COUNTER_MAX])
{
	size_t kept = 0;

	if (n > 1)
		qsort(nodes, n, sizeof(*nodes), node_order);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && nodes[i] == nodes[i - 1])
			continue;       /* another process of the same node */
		if (kept == REPL_MEMBERS_MAX)
			counters[SYNCD_CPG_MEMBERS_DROPPED]++;
		else
			view[kept++] = nodes[i];
	}
	return kept;
}

bool
cpg_view_route(bool known, bool same_group, uint64_t counters[SYNCD_CPG_COUNTER_MAX])
{
	if (!known) {
		counters[SYNCD_CPG_UNKNOWN_HANDLE]++;
		return false;
	}
	if (!same_group) {
		counters[SYNCD_CPG_FOREIGN_GROUP]++;
		return false;
	}
	return true;
}

static bool
proc_in(const struct cpg_view_proc *l, size_t n, struct cpg_view_proc p)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].node == p.node && l[i].pid == p.pid)
			return true;
	return false;
}

/* The first of l[0..n) of node, or NULL. */
static const struct cpg_view_proc *
node_first(const struct cpg_view_proc *l, size_t n, uint32_t node)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].node == node)
			return &l[i];
	return NULL;
}

/* The pid node trusts after a change (0: none); node has a member. */
static uint32_t
trust_pick(const struct cpg_view_trust *t, struct cpg_view_proc self,
	   const struct cpg_view_proc *members, size_t n,
	   const struct cpg_view_proc *joined, size_t nj, uint32_t node)
{
	const struct cpg_view_proc *old = node_first(t->trusted, t->n_trusted, node);
	const struct cpg_view_proc *p;

	if (node == self.node)
		return proc_in(members, n, self) ? self.pid : 0;
	if (old != NULL && old->pid != 0 && proc_in(members, n, *old))
		return old->pid;
	p = node_first(joined, nj, node);
	if (p != NULL && proc_in(members, n, *p))
		return p->pid;          /* joined now, the first of its node */
	if (old != NULL)
		return 0;               /* its trusted member left: none until one joins */
	return node_first(members, n, node)->pid;       /* there before we joined */
}

void
cpg_view_trust_reset(struct cpg_view_trust *t)
{
	t->n_trusted = 0;
	t->n_foreign = 0;
}

size_t
cpg_view_trust_update(struct cpg_view_trust *t, struct cpg_view_proc self,
		      const struct cpg_view_proc *members, size_t n,
		      const struct cpg_view_proc *joined, size_t nj,
		      uint32_t nodes[CPG_VIEW_PROCS_MAX], struct cpg_view_proc *last,
		      uint64_t counters[SYNCD_CPG_COUNTER_MAX])
{
	struct cpg_view_proc trusted[CPG_VIEW_PROCS_MAX], foreign[CPG_VIEW_PROCS_MAX];
	uint32_t n_trusted = 0, n_foreign = 0;
	size_t kept = 0;

	n = n < CPG_VIEW_PROCS_MAX ? n : CPG_VIEW_PROCS_MAX;
	nj = nj < CPG_VIEW_PROCS_MAX ? nj : CPG_VIEW_PROCS_MAX;
	for (size_t i = 0; i < n; i++)
		if (node_first(members, i, members[i].node) == NULL)
			trusted[n_trusted++] = (struct cpg_view_proc){
				.node = members[i].node,
				.pid = trust_pick(t, self, members, n, joined, nj,
						  members[i].node),
			};
	for (size_t i = 0; i < n; i++) {
		if (proc_in(trusted, n_trusted, members[i]))
			continue;
		foreign[n_foreign++] = members[i];
		if (!proc_in(t->foreign, t->n_foreign, members[i])) {
			counters[SYNCD_CPG_FOREIGN_MEMBERS]++;
			*last = members[i];
		}
	}

	/* commit */
	memcpy(t->trusted, trusted, n_trusted * sizeof(*trusted));
	memcpy(t->foreign, foreign, n_foreign * sizeof(*foreign));
	t->n_trusted = n_trusted;
	t->n_foreign = n_foreign;
	for (uint32_t i = 0; i < n_trusted; i++)
		if (trusted[i].pid != 0)
			nodes[kept++] = trusted[i].node;
	return kept;
}

bool
cpg_view_trust_check(const struct cpg_view_trust *t, struct cpg_view_proc p,
		     uint64_t counters[SYNCD_CPG_COUNTER_MAX])
{
	const struct cpg_view_proc *tr = node_first(t->trusted, t->n_trusted, p.node);

	if (tr != NULL && tr->pid != 0 && tr->pid == p.pid)
		return true;
	counters[SYNCD_CPG_FOREIGN_MESSAGES]++;
	return false;
}
