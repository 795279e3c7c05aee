/* SPDX-License-Identifier: BSD-3-Clause */
/* The election over the agreed view. See roles.h. */
#include "membership/roles.h"

const char *const roles_role_names[3] = {
	[ROLES_NONE] = "none",
	[ROLES_PASSIVE] = "passive",
	[ROLES_ACTIVE] = "active",
};

bool
roles_eligible(const struct roles_member *m)
{
	return m->known && m->dataplane && (m->synced || m->holds == ROLES_ACTIVE) &&
	       m->quorate && !m->standby;
}

/* Whether a ranks above b: (priority, id), highest first. */
static bool
ranks_above(const struct roles_member *a, const struct roles_member *b)
{
	return a->priority != b->priority ? a->priority > b->priority : a->id > b->id;
}

uint32_t
roles_elect(enum config_cluster_mode mode, bool preempt, const struct roles_member *m,
	    size_t n, enum roles_role *out)
{
	const struct roles_member *best = NULL, *holder = NULL, *winner;

	for (size_t i = 0; i < n; i++) {
		bool eligible = roles_eligible(&m[i]);

		out[i] = mode == CONFIG_CLUSTER_ACTIVE_ACTIVE && eligible ? ROLES_ACTIVE :
			 ROLES_PASSIVE;
		if (!eligible)
			continue;
		if (best == NULL || ranks_above(&m[i], best))
			best = &m[i];
		if (m[i].holds == ROLES_ACTIVE && (holder == NULL || ranks_above(&m[i], holder)))
			holder = &m[i];
	}
	if (mode == CONFIG_CLUSTER_ACTIVE_ACTIVE || best == NULL)
		return 0;
	winner = preempt || holder == NULL ? best : holder;
	out[winner - m] = ROLES_ACTIVE;
	return winner->id;
}
