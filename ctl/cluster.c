/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglbctl cluster and cluster standby on|off: maglb-syncd's membership.
 *
 * cluster asks syncd for the membership as this node sees it (one
 * CLUSTER_REQUEST): the mode, quorum, this node's role and its history,
 * the lease it gives its dataplane, and a row per member with what that
 * member last said of itself. cluster standby takes this node out of the
 * active role (on) or lets it back (off).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/json.h"
#include "ctl/maglbctl.h"

static const char *
yes_no(bool b)
{
	return b ? "yes" : "no";
}

static const char *
role_name(enum wire_role role)
{
	return role < WIRE_ROLE_MAX ? wire_role_names[role] : "?";
}

static const char *
mode_name(enum wire_cluster_mode mode)
{
	return mode < WIRE_CLUSTER_MODE_MAX ? wire_cluster_mode_names[mode] : "?";
}

static const struct maglbctl_column cluster_columns[] = {
	{ "ID", true }, { "ROLE", false }, { "PRIORITY", true }, { "ELIGIBLE", false },
	{ "DATAPLANE", false }, { "SYNCED", false }, { "QUORATE", false },
	{ "STANDBY", false },
};

/* A member not heard from shows its id and "-" for the rest. */
static void
cluster_cell(const void *ctx, size_t row, size_t col, char *buf, size_t len)
{
	const struct wire_ctl_cluster_member *mb =
		&((const struct wire_ctl_cluster_member *)ctx)[row];
	const bool flags[] = { mb->eligible, mb->dataplane, mb->synced, mb->quorate,
			       mb->standby };

	if (col == 0)
		snprintf(buf, len, "%" PRIu32, mb->id);
	else if (!mb->known)
		snprintf(buf, len, "-");
	else if (col == 1)
		snprintf(buf, len, "%s", role_name(mb->role));
	else if (col == 2)
		snprintf(buf, len, "%" PRIu32, mb->priority);
	else
		snprintf(buf, len, "%s", yes_no(flags[col - 3]));
}

/* "2026-12-01 17:42:50 (12 s ago)" in local time; "never" for 0. */
static void
last_change_str(uint64_t unix_ms, char *buf, size_t len)
{
	struct timespec now;
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	char when[48];
	uint64_t now_ms;

	if (unix_ms == 0) {
		snprintf(buf, len, "never");
		return;
	}
	if (localtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(when, sizeof(when), "%" PRIu64 " ms Unix time", unix_ms);
	clock_gettime(CLOCK_REALTIME, &now);
	now_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	/* a clock behind syncd's (another host's, or stepped back) says 0 */
	snprintf(buf, len, "%s (%" PRIu64 " s ago)", when,
		 now_ms > unix_ms ? (now_ms - unix_ms) / 1000 : 0);
}

static void
cluster_print_text(const struct wire_ctl_cluster *c)
{
	char last[96];

	last_change_str(c->last_change_unix_ms, last, sizeof(last));
	printf("node          %" PRIu32 "\n", c->node_id);
	printf("mode          %s\n", mode_name(c->mode));
	printf("preempt       %s\n", yes_no(c->preempt));
	printf("quorum        %s\n", yes_no(c->quorate));
	printf("role          %s\n", role_name(c->role));
	printf("eligible      %s\n", yes_no(c->eligible));
	printf("standby       %s\n", yes_no(c->standby));
	printf("role changes  %" PRIu64 "\n", c->role_changes);
	printf("last change   %s\n", last);
	if (c->lease_ms > 0)
		printf("lease         %" PRIu32 " ms\n", c->lease_ms);
	else
		printf("lease         none\n");
	printf("\n");
	maglbctl_table(cluster_columns, sizeof(cluster_columns) / sizeof(cluster_columns[0]),
		       c->count, cluster_cell, c->members);
}

static int
cluster_print_json(const struct wire_ctl_cluster *c)
{
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_u64(&j, "node_id", c->node_id);
	json_string(&j, "mode", mode_name(c->mode));
	json_bool(&j, "preempt", c->preempt);
	json_bool(&j, "quorate", c->quorate);
	json_string(&j, "role", role_name(c->role));
	json_bool(&j, "eligible", c->eligible);
	json_bool(&j, "standby", c->standby);
	json_u64(&j, "role_changes", c->role_changes);
	json_u64(&j, "last_change_unix_ms", c->last_change_unix_ms);
	json_u64(&j, "lease_ms", c->lease_ms);
	json_array_begin(&j, "members");
	for (size_t i = 0; i < c->count; i++) {
		const struct wire_ctl_cluster_member *mb = &c->members[i];

		json_object_begin(&j, NULL);
		json_u64(&j, "id", mb->id);
		if (mb->known)
			json_string(&j, "role", role_name(mb->role));
		else
			json_null(&j, "role");
		json_u64(&j, "priority", mb->priority);
		json_bool(&j, "known", mb->known);
		json_bool(&j, "eligible", mb->eligible);
		json_bool(&j, "dataplane", mb->dataplane);
		json_bool(&j, "synced", mb->synced);
		json_bool(&j, "quorate", mb->quorate);
		json_bool(&j, "standby", mb->standby);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	return json_finish(&j) < 0 ? MAGLBCTL_EXIT_ERROR : MAGLBCTL_EXIT_OK;
}

static int
cluster_show(struct maglbctl *m)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_CLUSTER_REQUEST }, resp;
	int rc;

	rc = maglbctl_call(m, &req, WIRE_CTL_CLUSTER_STATUS, &resp);
	if (rc != 0)
		return rc;
	if (m->json) {
		rc = cluster_print_json(&resp.cluster);
	} else {
		cluster_print_text(&resp.cluster);
		rc = MAGLBCTL_EXIT_OK;
	}
	wire_ctl_msg_free(&resp);
	return rc;
}

static int
cluster_standby(struct maglbctl *m, bool on)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_CLUSTER_STANDBY };

	req.cluster_standby.on = on;
	return maglbctl_command(m, &req);
}

int
maglbctl_cluster(struct maglbctl *m, int argc, char **argv)
{
	m->service = m->sync_service;
	if (argc == 1)
		return cluster_show(m);
	if (strcmp(argv[1], "standby") != 0)
		return maglbctl_usage_error("unknown cluster command '%s'", argv[1]);
	if (argc != 3 || (strcmp(argv[2], "on") != 0 && strcmp(argv[2], "off") != 0))
		return maglbctl_usage_error("cluster standby wants on or off");
	return cluster_standby(m, strcmp(argv[2], "on") == 0);
}
