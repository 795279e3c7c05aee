/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglbctl sync and sync verify: maglb-syncd's view of replication.
 *
 * sync reads syncd's counters (one COUNTERS_REQUEST) and shows them per
 * sync group; sync verify asks syncd to start a verify round in each group
 * (every member sends a digest of the entries it holds, computed at one
 * point of CPG's agreed order, and its dataplane's Maglev digest), polls
 * the answers until every member has answered or the timeout passed, and
 * shows which nodes disagree.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/json.h"
#include "ctl/maglbctl.h"

enum {
	SYNC_GROUPS_MAX = 64,
	SYNC_MEMBERS_MAX = 64,
	SYNC_VALUES_MAX = 64,
	VERIFY_POLL_MS = 50,
};

static const char *const sync_state_names[] = { "joining", "resyncing", "synced" };

/* One group's counters, as syncd lists them under scope "group:NAME". */
struct sync_group {
	char name[WIRE_NAME_MAX];
	uint32_t members[SYNC_MEMBERS_MAX];
	size_t n_members;
	const struct wire_ctl_counter *values[SYNC_VALUES_MAX];
	size_t n_values;
};

struct sync_view {
	const struct wire_ctl_counters *all;
	struct sync_group groups[SYNC_GROUPS_MAX];
	size_t n_groups;
};

static uint64_t
group_value(const struct sync_group *g, const char *name)
{
	for (size_t i = 0; i < g->n_values; i++)
		if (strcmp(g->values[i]->name, name) == 0)
			return g->values[i]->value;
	return 0;
}

static uint64_t
node_value(const struct sync_view *v, const char *name)
{
	for (size_t i = 0; i < v->all->count; i++)
		if (strcmp(v->all->counters[i].scope, "sync") == 0 &&
		    strcmp(v->all->counters[i].name, name) == 0)
			return v->all->counters[i].value;
	return 0;
}

static struct sync_group *
view_group(struct sync_view *v, const char *name)
{
	for (size_t i = 0; i < v->n_groups; i++)
		if (strcmp(v->groups[i].name, name) == 0)
			return &v->groups[i];
	if (v->n_groups == SYNC_GROUPS_MAX)
		return NULL;
	snprintf(v->groups[v->n_groups].name, WIRE_NAME_MAX, "%s", name);
	return &v->groups[v->n_groups++];
}

static bool
view_has(const struct sync_view *v, const char *name)
{
	for (size_t i = 0; i < v->n_groups; i++)
		if (strcmp(v->groups[i].name, name) == 0)
			return true;
	return false;
}

static void
view_build(struct sync_view *v, const struct wire_ctl_counters *all)
{
	memset(v, 0, sizeof(*v));
	v->all = all;
	for (size_t i = 0; i < all->count; i++) {
		const struct wire_ctl_counter *c = &all->counters[i];
		struct sync_group *g;

		if (strncmp(c->scope, "group:", 6) != 0 || (g = view_group(v, c->scope + 6)) == NULL)
			continue;
		if (strncmp(c->name, "member.", 7) == 0) {
			if (g->n_members < SYNC_MEMBERS_MAX)
				g->members[g->n_members++] = (uint32_t)c->value;
		} else if (g->n_values < SYNC_VALUES_MAX) {
			g->values[g->n_values++] = c;
		}
	}
}

static const char *
state_name(uint64_t state)
{
	return state < sizeof(sync_state_names) / sizeof(sync_state_names[0]) ?
	       sync_state_names[state] : "?";
}

/* The sum of a group's counters whose names start with prefix. */
static uint64_t
group_sum(const struct sync_group *g, const char *prefix)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < g->n_values; i++)
		if (strncmp(g->values[i]->name, prefix, strlen(prefix)) == 0)
			sum += g->values[i]->value;
	return sum;
}

static const struct maglbctl_column sync_columns[] = {
	{ "GROUP", false }, { "STATE", false }, { "MEMBERS", false },
	{ "OWN", true }, { "PEERS", true }, { "SENT", true }, { "RECEIVED", true },
	{ "IMPORTED", true }, { "REJECTED", true }, { "DROPPED", true },
	{ "QUEUE", true }, { "RESYNCS", true }, { "LAG_P50_MS", true },
	{ "LAG_P99_MS", true },
};

static void
sync_cell(const void *ctx, size_t row, size_t col, char *buf, size_t len)
{
	const struct sync_group *g = &((const struct sync_view *)ctx)->groups[row];
	size_t off = 0;

	switch (col) {
	case 0: snprintf(buf, len, "%s", g->name); return;
	case 1: snprintf(buf, len, "%s", state_name(group_value(g, "state"))); return;
	case 2:
		buf[0] = '\0';
		for (size_t i = 0; i < g->n_members && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "",
						g->members[i]);
		return;
	case 3: snprintf(buf, len, "%" PRIu64, group_value(g, "entries_own")); return;
	case 4: snprintf(buf, len, "%" PRIu64, group_value(g, "entries_peers")); return;
	case 5: snprintf(buf, len, "%" PRIu64, group_value(g, "entries_sent")); return;
	case 6: snprintf(buf, len, "%" PRIu64, group_value(g, "entries_received")); return;
	case 7: snprintf(buf, len, "%" PRIu64, group_value(g, "imported")); return;
	case 8: snprintf(buf, len, "%" PRIu64, group_sum(g, "rejected_")); return;
	case 9: snprintf(buf, len, "%" PRIu64, group_sum(g, "drop_")); return;
	case 10: snprintf(buf, len, "%" PRIu64, group_value(g, "send_queue")); return;
	case 11: snprintf(buf, len, "%" PRIu64, group_value(g, "resync_complete")); return;
	case 12:
		snprintf(buf, len, "%.1f", (double)group_value(g, "import_lag_p50_us") / 1000);
		return;
	default:
		snprintf(buf, len, "%.1f", (double)group_value(g, "import_lag_p99_us") / 1000);
		return;
	}
}

static void
sync_print_json(const struct sync_view *v)
{
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_object_begin(&j, "node");
	for (size_t i = 0; i < v->all->count; i++)
		if (strcmp(v->all->counters[i].scope, "sync") == 0)
			json_u64(&j, v->all->counters[i].name, v->all->counters[i].value);
	json_object_end(&j);
	json_array_begin(&j, "groups");
	for (size_t i = 0; i < v->n_groups; i++) {
		const struct sync_group *g = &v->groups[i];

		json_object_begin(&j, NULL);
		json_string(&j, "name", g->name);
		json_string(&j, "state_name", state_name(group_value(g, "state")));
		json_array_begin(&j, "members");
		for (size_t k = 0; k < g->n_members; k++)
			json_u64(&j, NULL, g->members[k]);
		json_array_end(&j);
		for (size_t k = 0; k < g->n_values; k++)
			json_u64(&j, g->values[k]->name, g->values[k]->value);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
}

/* Non-zero drops and refusals, by reason, under the table. */
static void
sync_print_problems(const struct sync_view *v)
{
	for (size_t i = 0; i < v->n_groups; i++)
		for (size_t k = 0; k < v->groups[i].n_values; k++) {
			const struct wire_ctl_counter *c = v->groups[i].values[k];

			if (c->value != 0 && (strncmp(c->name, "drop_", 5) == 0 ||
					      strncmp(c->name, "rejected_", 9) == 0 ||
					      strcmp(c->name, "seq_gaps") == 0 ||
					      strcmp(c->name, "resync_incomplete") == 0))
				printf("  %s: %s %" PRIu64 "\n", v->groups[i].name, c->name, c->value);
		}
	for (size_t i = 0; i < v->all->count; i++) {
		const struct wire_ctl_counter *c = &v->all->counters[i];

		if (strcmp(c->scope, "sync") == 0 && c->value != 0 &&
		    (strcmp(c->name, "export_lost") == 0 || strcmp(c->name, "export_unknown") == 0 ||
		     strcmp(c->name, "cache_full") == 0 || strcmp(c->name, "import_errors") == 0 ||
		     (c->name[0] >= 'A' && c->name[0] <= 'Z')))
			printf("  node: %s %" PRIu64 "\n", c->name, c->value);
	}
}

static int
sync_show(struct maglbctl *m)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_COUNTERS_REQUEST }, resp;
	struct sync_view *v;
	uint64_t entries;
	int rc;

	rc = maglbctl_call(m, &req, WIRE_CTL_COUNTERS_RESPONSE, &resp);
	if (rc != 0)
		return rc;
	v = malloc(sizeof(*v));
	if (v == NULL) {
		wire_ctl_msg_free(&resp);
		return MAGLBCTL_EXIT_ERROR;
	}
	view_build(v, &resp.counters);
	if (m->json) {
		sync_print_json(v);
	} else {
		entries = node_value(v, "entries");
		printf("node %" PRIu64 ": %s; dataplane %s, %s; %" PRIu64 " entries held, "
		       "%.1f MiB (%.0f bytes an entry)\n", node_value(v, "node_id"),
		       node_value(v, "synced") ? "synced" : "NOT synced",
		       node_value(v, "dataplane_connected") ? "connected" : "NOT connected",
		       node_value(v, "dataplane_synced") ? "has every entry" :
		       "still importing", entries,
		       (double)node_value(v, "cache_bytes") / (1 << 20),
		       entries ? (double)node_value(v, "cache_bytes") / (double)entries : 0.0);
		maglbctl_table(sync_columns, sizeof(sync_columns) / sizeof(sync_columns[0]),
			       v->n_groups, sync_cell, v);
		sync_print_problems(v);
	}
	free(v);
	wire_ctl_msg_free(&resp);
	return 0;
}

/* ---------------------------------------------------------------- verify */

static void
sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

typedef bool (*same_fn)(const struct wire_ctl_sync_digest *a,
			const struct wire_ctl_sync_digest *b);

static bool
same_entries(const struct wire_ctl_sync_digest *a, const struct wire_ctl_sync_digest *b)
{
	return a->digest == b->digest && a->entry_count == b->entry_count;
}

/* 0 is a member that did not know its dataplane's: like no other. */
static bool
same_maglev(const struct wire_ctl_sync_digest *a, const struct wire_ctl_sync_digest *b)
{
	return a->maglev_digest != 0 && a->maglev_digest == b->maglev_digest;
}

/* The answer most others are the same as. */
static const struct wire_ctl_sync_digest *
majority(const struct wire_ctl_sync_verify *r, same_fn same)
{
	size_t best = 0, best_n = 0;

	for (size_t a = 0; a < r->count; a++) {
		size_t n = 0;

		for (size_t b = 0; b < r->count; b++)
			n += same(&r->digests[a], &r->digests[b]);
		if (n > best_n) {
			best_n = n;
			best = a;
		}
	}
	return &r->digests[best];
}

/* Whether digest i agrees with the most common (entries, digest) answer. */
static bool
digest_agrees(const struct wire_ctl_sync_verify *r, size_t i)
{
	return same_entries(&r->digests[i], majority(r, same_entries));
}

/*
 * Whether member i's Maglev digest agrees with the most common one; a
 * member that did not know its dataplane's (0) is not counted either way.
 */
static bool
maglev_agrees(const struct wire_ctl_sync_verify *r, size_t i)
{
	return r->digests[i].maglev_digest == 0 ||
	       r->digests[i].maglev_digest == majority(r, same_maglev)->maglev_digest;
}

/* What differs of member i's answer, for its line: "" when nothing. */
static const char *
verify_mark(const struct wire_ctl_sync_verify *r, size_t i)
{
	bool entries = digest_agrees(r, i), maglev = maglev_agrees(r, i);

	if (entries && maglev)
		return "";
	if (!entries && !maglev)
		return "  <- differs; Maglev differs";
	return entries ? "  <- Maglev differs" : "  <- differs";
}

/* Start a round in group, poll until every member answered or timeout. */
static int
verify_group(struct maglbctl *m, const char *group, struct wire_ctl_msg *resp)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_SYNC_VERIFY_REQUEST };
	int waited = 0, rc;

	snprintf(req.sync_verify_request.group, WIRE_NAME_MAX, "%s", group);
	for (;;) {
		rc = maglbctl_call(m, &req, WIRE_CTL_SYNC_VERIFY_RESULT, resp);
		if (rc != 0)
			return rc;
		if (resp->sync_verify.count >= resp->sync_verify.members || waited >= m->timeout_ms)
			return 0;
		req.sync_verify_request.round = resp->sync_verify.round;
		wire_ctl_msg_free(resp);
		sleep_ms(VERIFY_POLL_MS);
		waited += VERIFY_POLL_MS;
	}
}

/* Print one group's answers; whether every member answered and agrees. */
static bool
verify_print(const struct wire_ctl_sync_verify *r, struct json *j)
{
	bool ok = r->count >= r->members;

	for (size_t i = 0; i < r->count; i++)
		ok &= digest_agrees(r, i) && maglev_agrees(r, i);
	if (j != NULL) {
		json_object_begin(j, NULL);
		json_string(j, "group", r->group);
		json_u64(j, "round", r->round);
		json_u64(j, "members", r->members);
		json_bool(j, "agree", ok);
		json_array_begin(j, "digests");
		for (size_t i = 0; i < r->count; i++) {
			char hex[24], maglev[MAGLBCTL_DIGEST_STR];

			snprintf(hex, sizeof(hex), "%016" PRIx64, r->digests[i].digest);
			maglbctl_digest_str(r->digests[i].maglev_digest, maglev);
			json_object_begin(j, NULL);
			json_u64(j, "node", r->digests[i].node);
			json_u64(j, "entries", r->digests[i].entry_count);
			json_string(j, "digest", hex);
			json_bool(j, "agrees", digest_agrees(r, i));
			json_string(j, "maglev_digest", maglev);
			json_bool(j, "maglev_agrees", maglev_agrees(r, i));
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
		return ok;
	}
	printf("group %s: %zu of %u members answered: %s\n", r->group, r->count, r->members,
	       ok ? "they agree" : r->count < r->members ? "INCOMPLETE" : "THEY DISAGREE");
	for (size_t i = 0; i < r->count; i++) {
		char maglev[MAGLBCTL_DIGEST_STR];

		if (r->digests[i].maglev_digest != 0)
			maglbctl_digest_str(r->digests[i].maglev_digest, maglev);
		else
			snprintf(maglev, sizeof(maglev), "unknown");
		printf("  node %-4u %10" PRIu64 " entries  digest %016" PRIx64
		       "  maglev %s%s\n", r->digests[i].node, r->digests[i].entry_count,
		       r->digests[i].digest, maglev, verify_mark(r, i));
	}
	return ok;
}

static int
sync_verify(struct maglbctl *m, const char *only)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_COUNTERS_REQUEST }, resp;
	struct sync_view *v = malloc(sizeof(*v));
	bool all_ok = true;
	struct json j;
	int rc;

	if (v == NULL)
		return MAGLBCTL_EXIT_ERROR;
	snprintf(req.counters_request.scope, WIRE_NAME_MAX, "group:");
	rc = maglbctl_call(m, &req, WIRE_CTL_COUNTERS_RESPONSE, &resp);
	if (rc != 0) {
		free(v);
		return rc;
	}
	view_build(v, &resp.counters);
	if (only != NULL && !view_has(v, only)) {
		fprintf(stderr, "maglbctl: node has no sync group '%s'\n", only);
		free(v);
		wire_ctl_msg_free(&resp);
		return MAGLBCTL_EXIT_ERROR;
	}
	if (m->json) {
		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_array_begin(&j, "groups");
	}
	for (size_t i = 0; i < v->n_groups && rc == 0; i++) {
		struct wire_ctl_msg r;

		if (only != NULL && strcmp(only, v->groups[i].name) != 0)
			continue;
		rc = verify_group(m, v->groups[i].name, &r);
		if (rc == 0) {
			all_ok &= verify_print(&r.sync_verify, m->json ? &j : NULL);
			wire_ctl_msg_free(&r);
		}
	}
	if (m->json) {
		json_array_end(&j);
		json_bool(&j, "agree", all_ok);
		json_object_end(&j);
		if (json_finish(&j) < 0 && rc == 0)
			rc = MAGLBCTL_EXIT_ERROR;
	}
	free(v);
	wire_ctl_msg_free(&resp);
	if (rc == 0 && !all_ok)
		rc = MAGLBCTL_EXIT_ERROR;
	return rc;
}

int
maglbctl_sync(struct maglbctl *m, int argc, char **argv)
{
	char name[WIRE_NAME_MAX];

	m->service = m->sync_service;
	if (argc == 1)
		return sync_show(m);
	if (strcmp(argv[1], "verify") != 0)
		return maglbctl_usage_error("unknown sync command '%s'", argv[1]);
	if (argc > 3)
		return maglbctl_usage_error("sync verify takes at most one group");
	if (argc == 3 && !maglbctl_copy_name(name, argv[2]))
		return maglbctl_usage_error("group name too long (at most %d characters)",
					    WIRE_NAME_MAX - 1);
	return sync_verify(m, argc == 3 ? argv[2] : NULL);
}
