/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglbctl bfd: the dataplane's BFD sessions with the routers of its
 * config (one BFD_STATUS_REQUEST): a row per session, then whether the
 * node is serving (its sessions are Up only then) and the packets dropped
 * before a session took them, by reason.
 */
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>

#include "lib/json.h"
#include "ctl/maglbctl.h"

static const struct maglbctl_column bfd_columns[] = {
	{ "PEER", false }, { "STATE", false }, { "DIAG", false }, { "DISCR", true },
	{ "TX", true }, { "DETECT", true }, { "MULT", true }, { "AGE", true },
	{ "IN", true }, { "OUT", true }, { "CHANGES", true }, { "AUTH", false },
};

/* A name from a table of max names; "?" past it (a bug: decoders check). */
static const char *
bfd_name(const char *const *names, unsigned int value, unsigned int max)
{
	return value < max ? names[value] : "?";
}

static const char *
bfd_state_name(enum wire_bfd_state state)
{
	return bfd_name(wire_bfd_state_names, state, WIRE_BFD_STATE_MAX);
}

static const char *
bfd_diag_name(enum wire_bfd_diag diag)
{
	return bfd_name(wire_bfd_diag_names, diag, WIRE_BFD_DIAG_MAX);
}

/* "300ms", "16.5ms": a decimal only where the µs need it. */
static void
bfd_ms_str(uint32_t us, char *buf, size_t len)
{
	if (us % 1000 == 0)
		snprintf(buf, len, "%" PRIu32 "ms", us / 1000);
	else
		snprintf(buf, len, "%.1fms", us / 1000.0);
}

/* "local/remote"; a remote value of 0 (not heard yet) as "-". */
static void
bfd_pair_str(uint32_t local, uint32_t remote, char *buf, size_t len)
{
	if (remote == 0)
		snprintf(buf, len, "%" PRIu32 "/-", local);
	else
		snprintf(buf, len, "%" PRIu32 "/%" PRIu32, local, remote);
}

static void
bfd_cell(const void *ctx, size_t row, size_t col, char *buf, size_t len)
{
	const struct wire_ctl_bfd_session *s = &((const struct wire_ctl_bfd_session *)ctx)[row];

	switch (col) {
	case 0: maglbctl_addr_str(s->family, s->peer, buf, len); return;
	case 1: snprintf(buf, len, "%s", bfd_state_name(s->state)); return;
	case 2:
		snprintf(buf, len, "%s/%s", bfd_diag_name(s->local_diag),
			 bfd_diag_name(s->remote_diag));
		return;
	case 3: bfd_pair_str(s->local_discriminator, s->remote_discriminator, buf, len); return;
	case 4: bfd_ms_str(s->tx_interval_us, buf, len); return;
	case 5: bfd_ms_str(s->detect_time_us, buf, len); return;
	case 6: bfd_pair_str(s->multiplier, s->remote_multiplier, buf, len); return;
	case 7: maglbctl_duration_str(s->state_age_ms, buf, len); return;
	case 8: snprintf(buf, len, "%" PRIu64, s->packets_in); return;
	case 9: snprintf(buf, len, "%" PRIu64, s->packets_out); return;
	case 10: snprintf(buf, len, "%" PRIu64, s->state_changes); return;
	default: snprintf(buf, len, "%s", s->authenticated ? "yes" : "no"); return;
	}
}

static void
bfd_json_session(struct json *j, const struct wire_ctl_bfd_session *s)
{
	char addr[INET6_ADDRSTRLEN];

	json_object_begin(j, NULL);
	maglbctl_addr_str(s->family, s->peer, addr, sizeof(addr));
	json_string(j, "peer", addr);
	maglbctl_addr_str(s->family, s->local, addr, sizeof(addr));
	json_string(j, "local", addr);
	json_string(j, "state", bfd_state_name(s->state));
	json_string(j, "local_diag", bfd_diag_name(s->local_diag));
	json_string(j, "remote_diag", bfd_diag_name(s->remote_diag));
	json_u64(j, "local_discriminator", s->local_discriminator);
	json_u64(j, "remote_discriminator", s->remote_discriminator);
	json_u64(j, "tx_interval_us", s->tx_interval_us);
	json_u64(j, "detect_time_us", s->detect_time_us);
	json_u64(j, "multiplier", s->multiplier);
	json_u64(j, "remote_multiplier", s->remote_multiplier);
	json_u64(j, "state_age_ms", s->state_age_ms);
	json_u64(j, "packets_in", s->packets_in);
	json_u64(j, "packets_out", s->packets_out);
	json_u64(j, "state_changes", s->state_changes);
	json_bool(j, "authenticated", s->authenticated);
	json_object_end(j);
}

static int
bfd_print_json(const struct wire_ctl_bfd_status *st)
{
	struct json j;

	maglbctl_json_begin(&j);
	json_bool(&j, "serving", st->serving);
	json_array_begin(&j, "sessions");
	for (size_t i = 0; i < st->n_sessions; i++)
		bfd_json_session(&j, &st->sessions[i]);
	json_array_end(&j);
	json_object_begin(&j, "drops");
	for (size_t i = 0; i < st->n_drops; i++)
		json_u64(&j, st->drops[i].reason, st->drops[i].count);
	json_object_end(&j);
	return maglbctl_json_end(&j);
}

static int
bfd_print(const struct maglbctl *m, const struct wire_ctl_msg *resp)
{
	const struct wire_ctl_bfd_status *st = &resp->bfd_status;

	if (m->json)
		return bfd_print_json(st);
	maglbctl_table(bfd_columns, sizeof(bfd_columns) / sizeof(bfd_columns[0]),
		       st->n_sessions, bfd_cell, st->sessions);
	printf("serving %s\n", st->serving ? "yes" : "no");
	/* The reasons that happened, under the table; JSON has them all. */
	for (size_t i = 0; i < st->n_drops; i++)
		if (st->drops[i].count > 0)
			printf("  %s %" PRIu64 "\n", st->drops[i].reason, st->drops[i].count);
	return MAGLBCTL_EXIT_OK;
}

int
maglbctl_bfd(struct maglbctl *m, int argc, char **argv)
{
	return maglbctl_show(m, argc, argv, WIRE_CTL_BFD_STATUS_REQUEST, WIRE_CTL_BFD_STATUS,
			     bfd_print);
}
