/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What maglb-monitor does with a request, decided without HTTP: which
 * route a method and path take, whether the credentials it came with
 * allow it, and what its body says (a login form, a JSON action). The
 * server (server.c) only carries these decisions out, so that they are
 * unit-tested and fuzzed on their own.
 */
#ifndef MAGLB_MONITOR_ROUTE_H
#define MAGLB_MONITOR_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/wire.h"

enum mon_route {
	MON_ROUTE_NOT_FOUND = 0,        /* 404 */
	MON_ROUTE_BAD_METHOD,           /* 405, with allow */
	MON_ROUTE_ASSET,                /* a file of the console */
	MON_ROUTE_METRICS,
	MON_ROUTE_STATE,
	MON_ROUTE_HISTORY,
	MON_ROUTE_LOGIN,
	MON_ROUTE_LOGOUT,
	MON_ROUTE_BACKEND,
	MON_ROUTE_STANDBY,
	MON_ROUTE_MAX
};

extern const char *const mon_route_names[MON_ROUTE_MAX];

enum {
	MON_BODY_MAX = 4096,            /* a POST's body, bytes: 413 past it */
	MON_FIELDS_MAX = 8,             /* fields a body may have */
	MON_FIELD_MAX = 1024,           /* bytes of a field's value, decoded */
};

struct mon_route_info {
	enum mon_route route;
	const char *asset;              /* ASSET: the file in the www folder */
	const char *content_type;       /* ASSET */
	const char *allow;              /* BAD_METHOD: the Allow header */
	bool is_post;                   /* takes a body */
};

/* Route method and path (no query: the server strips it). */
void mon_route(const char *method, const char *path, struct mon_route_info *out);

/* Who a request comes from, as the server found out. */
struct mon_credentials {
	bool session;                   /* a valid session cookie */
	bool basic;                     /* valid HTTP Basic credentials */
	bool admin;                     /* the user's role is admin */
	bool csrf_ok;                   /* session: X-CSRF-Token is its token */
	bool metrics_auth;              /* the config asks /metrics for a user */
};

enum mon_access {
	MON_ALLOW = 0,
	MON_LOGIN_PAGE,                 /* 303 to the login page (a browser's GET /) */
	MON_UNAUTHORIZED,               /* 401 */
	MON_FORBIDDEN,                  /* 403: a viewer asked for a change */
	MON_CSRF,                       /* 403: a session's change without its token */
	MON_ACCESS_MAX
};

extern const char *const mon_access_names[MON_ACCESS_MAX];

/*
 * Whether the credentials allow the route. The console's files and the
 * login need none; the API and the console's page need a user (session
 * or Basic); a change needs an admin, and with a session its CSRF token
 * (Basic is not sent by a browser on its own to a cross-site form, a
 * cookie is).
 */
enum mon_access mon_authorize(const struct mon_route_info *r, const struct mon_credentials *c);

struct mon_field {
	char key[WIRE_NAME_MAX];
	char value[MON_FIELD_MAX];
};

struct mon_fields {
	struct mon_field f[MON_FIELDS_MAX];
	size_t n;
};

/*
 * Parse a body: application/x-www-form-urlencoded (the login form) or a
 * flat JSON object of strings, numbers, booleans and nulls (the API).
 * 0, or -EINVAL with the reason in err: malformed, a key twice, too many
 * fields, a value too long, a nested value.
 */
int mon_fields_form(const char *body, size_t len, struct mon_fields *out,
		    char *err, size_t errlen);
int mon_fields_json(const char *body, size_t len, struct mon_fields *out,
		    char *err, size_t errlen);

/* A field's value, NULL when absent. */
const char *mon_field(const struct mon_fields *f, const char *key);

/*
 * POST /api/v1/backend {vip, backend, action: drain|undrain|weight,
 * weight}: the BACKEND_SET maglbctl sends for the same command. Undrain
 * sets the config's weight, which the server learns from the snapshot
 * (config_weight; 0 when the backend is not known, then -ENOENT).
 */
int mon_backend_action(const struct mon_fields *f, const struct wire_ctl_vip_list *vips,
		       struct wire_ctl_backend_set *out, char *err, size_t errlen);

/* POST /api/v1/standby {on: true|false}. */
int mon_standby_action(const struct mon_fields *f, bool *on, char *err, size_t errlen);

/* The value of cookie name in a Cookie header into out; false if absent. */
bool mon_cookie(const char *header, const char *name, char *out, size_t len);

#endif /* MAGLB_MONITOR_ROUTE_H */
