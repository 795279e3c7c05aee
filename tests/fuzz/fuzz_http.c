/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: what maglb-monitor decides about a request from what
 * a client sent (monitor/route.c): the first byte picks the part, the rest
 * is the client's bytes: a login form, an action's JSON body (then the
 * action it makes), a Cookie header, a method and path.
 *
 * Besides "no crash, no leak, no sanitizer report", it checks: a refused
 * body says why; a parsed one has at most MON_FIELDS_MAX fields, each
 * NUL-free and within its bounds; a route is one of the table's, and the
 * access rules never let a request without a user change anything.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/route.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_fields(const struct mon_fields *f)
{
	CHECK(f->n <= MON_FIELDS_MAX);
	for (size_t i = 0; i < f->n; i++) {
		CHECK(strlen(f->f[i].key) > 0 && strlen(f->f[i].key) < WIRE_NAME_MAX);
		CHECK(strlen(f->f[i].value) < MON_FIELD_MAX);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(f->f[i].key, f->f[j].key) != 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mon_fields f;
	char err[256] = "", *text;
	int rc;

	if (size < 1 || size > MON_BODY_MAX + 64)
		return 0;
	text = malloc(size);
	CHECK(text != NULL);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		rc = mon_fields_form(text, size - 1, &f, err, sizeof(err));
		CHECK(rc == 0 || (rc == -EINVAL && err[0] != '\0'));
		if (rc == 0)
			check_fields(&f);
		break;
	case 1: {
		struct wire_ctl_backend_set b;
		bool on;

		rc = mon_fields_json(text, size - 1, &f, err, sizeof(err));
		CHECK(rc == 0 || (rc == -EINVAL && err[0] != '\0'));
		if (rc != 0)
			break;
		check_fields(&f);
		rc = mon_backend_action(&f, NULL, &b, err, sizeof(err));
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOENT);
		if (rc == 0)
			CHECK(b.action == WIRE_BACKEND_DRAIN || b.action == WIRE_BACKEND_SET_WEIGHT);
		rc = mon_standby_action(&f, &on, err, sizeof(err));
		CHECK(rc == 0 || rc == -EINVAL);
		break;
	}
	case 2: {
		char value[65];

		if (mon_cookie(text, "maglb_session", value, sizeof(value)))
			CHECK(strlen(value) < sizeof(value));
		break;
	}
	default: {
		/* "METHOD PATH": the route, and access with no user at all. */
		static const struct mon_credentials nobody = { .metrics_auth = true };
		struct mon_route_info r;
		char *space = strchr(text, ' ');
		enum mon_access a;

		if (space == NULL)
			break;
		*space = '\0';
		mon_route(text, space + 1, &r);
		CHECK(r.route < MON_ROUTE_MAX);
		a = mon_authorize(&r, &nobody);
		CHECK(a < MON_ACCESS_MAX);
		if (r.route == MON_ROUTE_BACKEND || r.route == MON_ROUTE_STANDBY ||
		    r.route == MON_ROUTE_STATE || r.route == MON_ROUTE_METRICS)
			CHECK(a == MON_UNAUTHORIZED);
		break;
	}
	}
	free(text);
	return 0;
}
