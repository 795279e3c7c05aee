/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglbctl sync and sync verify: maglb-syncd's view of replication.
 *
 * sync asks syncd for its status (one SYNC_STATUS_REQUEST) and shows the
 * node, a row per sync group and the drops by reason. sync verify asks
 * syncd to start a verify round in each group (every member sends a digest of the entries it holds, computed at one
 * point of CPG's agreed order, and its dataplane's Maglev digest), polls
 * the answers until every member has answered or the timeout passed, and
 * shows which nodes disagree.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/json.h"
#include "ctl/maglbctl.h"

enum {
	SYNC_GROUPS_MAX = 64,
	VERIFY_POLL_MS = 50,
	/*
	 * Fewest entries for which the node line shows the bytes an entry:
	 * syncd takes its cache's memory in chunks of 16384 entries (640 KiB)
	 * plus a fixed part, so below this the quotient is mostly the unused
	 * part of the last chunk (300 entries showed 2199 bytes each, against
	 * 40 in a full cache), not what an entry costs.
	 */
	SYNC_PER_ENTRY_MIN_ENTRIES = 100000,
};

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
	const struct wire_ctl_sync_group *g = &((const struct wire_ctl_sync_status *)ctx)->groups[row];
	size_t off = 0;

	switch (col) {
	case 0: snprintf(buf, len, "%s", g->name); return;
	case 1: snprintf(buf, len, "%s", g->state); return;
	case 2:
		buf[0] = '\0';
		for (size_t i = 0; i < g->n_members && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "",
						g->members[i]);
		return;
	case 3: snprintf(buf, len, "%" PRIu64, g->entries_own); return;
	case 4: snprintf(buf, len, "%" PRIu64, g->entries_peers); return;
	case 5: snprintf(buf, len, "%" PRIu64, g->entries_sent); return;
	case 6: snprintf(buf, len, "%" PRIu64, g->entries_received); return;
	case 7: snprintf(buf, len, "%" PRIu64, g->imported); return;
	case 8: snprintf(buf, len, "%" PRIu64, g->rejected); return;
	case 9: snprintf(buf, len, "%" PRIu64, g->dropped); return;
	case 10: snprintf(buf, len, "%u", g->send_queue); return;
	case 11: snprintf(buf, len, "%" PRIu64, g->resyncs); return;
	case 12: snprintf(buf, len, "%.1f", (double)g->import_lag_p50_us / 1000); return;
	default: snprintf(buf, len, "%.1f", (double)g->import_lag_p99_us / 1000); return;
	}
}

/* The drops of group ("" the node's), as keys of the object open in j. */
static void
sync_json_drops(struct json *j, const struct wire_ctl_sync_status *st, const char *group)
{
	for (size_t i = 0; i < st->n_drops; i++)
		if (strcmp(st->drops[i].group, group) == 0)
			json_u64(j, st->drops[i].reason, st->drops[i].count);
}

static void
sync_json_group(struct json *j, const struct wire_ctl_sync_status *st,
		const struct wire_ctl_sync_group *g)
{
	char digest[24];

	snprintf(digest, sizeof(digest), "%016" PRIx64, g->digest);
	json_object_begin(j, NULL);
	json_string(j, "name", g->name);
	json_string(j, "state_name", g->state);
	json_array_begin(j, "members");
	for (size_t k = 0; k < g->n_members; k++)
		json_u64(j, NULL, g->members[k]);
	json_array_end(j);
	json_u64(j, "donor", g->donor);
	json_u64(j, "entries_own", g->entries_own);
	json_u64(j, "entries_peers", g->entries_peers);
	json_string(j, "digest", digest);
	json_u64(j, "send_queue", g->send_queue);
	json_u64(j, "entries_sent", g->entries_sent);
	json_u64(j, "entries_received", g->entries_received);
	json_u64(j, "imported", g->imported);
	json_u64(j, "rejected", g->rejected);
	json_u64(j, "dropped", g->dropped);
	json_u64(j, "resync_complete", g->resyncs);
	json_u64(j, "resync_last_ms", g->resync_last_ms);
	json_u64(j, "resync_entries_received", g->resync_entries_received);
	json_u64(j, "self_lag_p50_us", g->self_lag_p50_us);
	json_u64(j, "self_lag_p99_us", g->self_lag_p99_us);
	json_u64(j, "import_lag_p50_us", g->import_lag_p50_us);
	json_u64(j, "import_lag_p99_us", g->import_lag_p99_us);
	sync_json_drops(j, st, g->name);
	json_object_end(j);
}

static int
sync_print_json(const struct wire_ctl_sync_status *st)
{
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j, NULL);
	json_object_begin(&j, "node");
	json_u64(&j, "node_id", st->node_id);
	json_u64(&j, "synced", st->synced);
	json_u64(&j, "dataplane_connected", st->dataplane_connected);
	json_u64(&j, "dataplane_synced", st->dataplane_synced);
	json_u64(&j, "entries", st->entries);
	json_u64(&j, "cache_bytes", st->cache_bytes);
	json_u64(&j, "import_queue", st->import_queue);
	json_u64(&j, "export_entries", st->export_entries);
	sync_json_drops(&j, st, "");
	json_object_end(&j);
	json_array_begin(&j, "groups");
	for (size_t i = 0; i < st->n_groups; i++)
		sync_json_group(&j, st, &st->groups[i]);
	json_array_end(&j);
	json_object_end(&j);
	return json_finish(&j) < 0 ? MAGLBCTL_EXIT_ERROR : 0;
}

static void
sync_print(const struct wire_ctl_sync_status *st)
{
	printf("node %u: %s; dataplane %s, %s; %" PRIu64 " entries held, %.1f MiB",
	       st->node_id, st->synced ? "synced" : "NOT synced",
	       st->dataplane_connected ? "connected" : "NOT connected",
	       st->dataplane_synced ? "has every entry" : "still importing", st->entries,
	       (double)st->cache_bytes / (1 << 20));
	if (st->entries >= SYNC_PER_ENTRY_MIN_ENTRIES)
		printf(" (%.0f bytes an entry)", (double)st->cache_bytes / (double)st->entries);
	putchar('\n');
	maglbctl_table(sync_columns, sizeof(sync_columns) / sizeof(sync_columns[0]),
		       st->n_groups, sync_cell, st);
	/* Non-zero drops and refusals, by reason, under the table. */
	for (size_t i = 0; i < st->n_drops; i++)
		printf("  %s: %s %" PRIu64 "\n", st->drops[i].group[0] ? st->drops[i].group :
		       "node", st->drops[i].reason, st->drops[i].count);
}

static int
sync_show(struct maglbctl *m)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_SYNC_STATUS_REQUEST }, resp;
	int rc;

	rc = maglbctl_call(m, &req, WIRE_CTL_SYNC_STATUS, &resp);
	if (rc != 0)
		return rc;
	if (m->json)
		rc = sync_print_json(&resp.sync_status);
	else
		sync_print(&resp.sync_status);
	wire_ctl_msg_free(&resp);
	return rc;
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
verify_group(struct maglbctl *m, const char group[WIRE_NAME_MAX], struct wire_ctl_msg *resp)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_SYNC_VERIFY_REQUEST };
	int waited = 0, rc;

	memcpy(req.sync_verify_request.group, group, strnlen(group, WIRE_NAME_MAX - 1));
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

/* The node's sync groups, from syncd's SYNC_STATUS. */
static int
verify_groups(struct maglbctl *m, char (*names)[WIRE_NAME_MAX], size_t *n)
{
	struct wire_ctl_msg req = { .kind = WIRE_CTL_SYNC_STATUS_REQUEST }, resp;
	int rc;

	rc = maglbctl_call(m, &req, WIRE_CTL_SYNC_STATUS, &resp);
	if (rc != 0)
		return rc;
	*n = 0;
	for (size_t i = 0; i < resp.sync_status.n_groups && *n < SYNC_GROUPS_MAX; i++)
		snprintf(names[(*n)++], WIRE_NAME_MAX, "%s", resp.sync_status.groups[i].name);
	wire_ctl_msg_free(&resp);
	return 0;
}

static bool
name_listed(char (*names)[WIRE_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static int
sync_verify(struct maglbctl *m, const char *only)
{
	char names[SYNC_GROUPS_MAX][WIRE_NAME_MAX];
	bool all_ok = true;
	struct json j;
	size_t n;
	int rc;

	rc = verify_groups(m, names, &n);
	if (rc != 0)
		return rc;
	if (only != NULL && !name_listed(names, n, only)) {
		fprintf(stderr, "maglbctl: node has no sync group '%s'\n", only);
		return MAGLBCTL_EXIT_ERROR;
	}
	if (m->json) {
		json_init(&j, stdout);
		json_object_begin(&j, NULL);
		json_array_begin(&j, "groups");
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct wire_ctl_msg r;

		if (only != NULL && strcmp(only, names[i]) != 0)
			continue;
		rc = verify_group(m, names[i], &r);
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
