/* SPDX-License-Identifier: BSD-3-Clause */
/* Routes, access and bodies: see route.h. */
#include "monitor/route.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

const char *const mon_route_names[MON_ROUTE_MAX] = {
	[MON_ROUTE_NOT_FOUND] = "not-found",
	[MON_ROUTE_BAD_METHOD] = "bad-method",
	[MON_ROUTE_ASSET] = "asset",
	[MON_ROUTE_METRICS] = "metrics",
	[MON_ROUTE_STATE] = "state",
	[MON_ROUTE_HISTORY] = "history",
	[MON_ROUTE_LOGIN] = "login",
	[MON_ROUTE_LOGOUT] = "logout",
	[MON_ROUTE_BACKEND] = "backend",
	[MON_ROUTE_STANDBY] = "standby",
};

const char *const mon_access_names[MON_ACCESS_MAX] = {
	[MON_ALLOW] = "allow",
	[MON_LOGIN_PAGE] = "login-page",
	[MON_UNAUTHORIZED] = "unauthorized",
	[MON_FORBIDDEN] = "forbidden",
	[MON_CSRF] = "csrf",
};

static const struct {
	const char *path, *file, *type;
} assets[] = {
	{ "/", "index.html", "text/html; charset=utf-8" },
	{ "/index.html", "index.html", "text/html; charset=utf-8" },
	{ "/login.html", "login.html", "text/html; charset=utf-8" },
	{ "/console.js", "console.js", "text/javascript; charset=utf-8" },
	{ "/console.css", "console.css", "text/css; charset=utf-8" },
};

static const struct {
	const char *path;
	enum mon_route route;
	bool post;
} api[] = {
	{ "/metrics", MON_ROUTE_METRICS, false },
	{ "/api/v1/state", MON_ROUTE_STATE, false },
	{ "/api/v1/history", MON_ROUTE_HISTORY, false },
	{ "/login", MON_ROUTE_LOGIN, true },
	{ "/logout", MON_ROUTE_LOGOUT, true },
	{ "/api/v1/backend", MON_ROUTE_BACKEND, true },
	{ "/api/v1/standby", MON_ROUTE_STANDBY, true },
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

void
mon_route(const char *method, const char *path, struct mon_route_info *out)
{
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	bool post = strcmp(method, "POST") == 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < LEN(assets); i++) {
		if (strcmp(path, assets[i].path) != 0)
			continue;
		out->route = get ? MON_ROUTE_ASSET : MON_ROUTE_BAD_METHOD;
		out->asset = assets[i].file;
		out->content_type = assets[i].type;
		out->allow = "GET, HEAD";
		return;
	}
	for (size_t i = 0; i < LEN(api); i++) {
		if (strcmp(path, api[i].path) != 0)
			continue;
		out->is_post = api[i].post;
		out->allow = api[i].post ? "POST" : "GET, HEAD";
		out->route = (api[i].post ? post : get) ? api[i].route : MON_ROUTE_BAD_METHOD;
		return;
	}
	out->route = MON_ROUTE_NOT_FOUND;
}

enum mon_access
mon_authorize(const struct mon_route_info *r, const struct mon_credentials *c)
{
	bool user = c->session || c->basic;

	switch (r->route) {
	case MON_ROUTE_ASSET:
		/* The page itself says who is logged in: without a user, the login. */
		if (strcmp(r->asset, "index.html") == 0 && !user)
			return MON_LOGIN_PAGE;
		return MON_ALLOW;
	case MON_ROUTE_LOGIN:
	case MON_ROUTE_NOT_FOUND:
	case MON_ROUTE_BAD_METHOD:
		return MON_ALLOW;
	case MON_ROUTE_METRICS:
		return !c->metrics_auth || user ? MON_ALLOW : MON_UNAUTHORIZED;
	case MON_ROUTE_STATE:
	case MON_ROUTE_HISTORY:
		return user ? MON_ALLOW : MON_UNAUTHORIZED;
	case MON_ROUTE_LOGOUT:
		if (!c->session)
			return MON_UNAUTHORIZED;
		return c->csrf_ok ? MON_ALLOW : MON_CSRF;
	case MON_ROUTE_BACKEND:
	case MON_ROUTE_STANDBY:
		if (!user)
			return MON_UNAUTHORIZED;
		/* A session's token first: a forged request learns nothing. */
		if (c->session && !c->basic && !c->csrf_ok)
			return MON_CSRF;
		return c->admin ? MON_ALLOW : MON_FORBIDDEN;
	default:
		return MON_UNAUTHORIZED;
	}
}

/* ------------------------------------------------------------- bodies */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
add_field(struct mon_fields *out, const char *key, size_t klen, const char *value,
	  size_t vlen, char *err, size_t errlen)
{
	struct mon_field *f;

	if (klen == 0 || klen >= WIRE_NAME_MAX)
		return fail(err, errlen, "a field name must have 1..%d bytes", WIRE_NAME_MAX - 1);
	if (vlen >= MON_FIELD_MAX)
		return fail(err, errlen, "field '%.*s' is over %d bytes", (int)klen, key,
			    MON_FIELD_MAX - 1);
	if (memchr(key, '\0', klen) != NULL || memchr(value, '\0', vlen) != NULL)
		return fail(err, errlen, "a field holds a NUL byte");
	for (size_t i = 0; i < out->n; i++)
		if (strlen(out->f[i].key) == klen && memcmp(out->f[i].key, key, klen) == 0)
			return fail(err, errlen, "field '%.*s' given twice", (int)klen, key);
	if (out->n >= MON_FIELDS_MAX)
		return fail(err, errlen, "more than %d fields", MON_FIELDS_MAX);
	f = &out->f[out->n++];
	memcpy(f->key, key, klen);
	f->key[klen] = '\0';
	memcpy(f->value, value, vlen);
	f->value[vlen] = '\0';
	return 0;
}

static int
hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode s[0..len) into out (at least len bytes); -1 if malformed. */
static long
url_decode(const char *s, size_t len, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '+') {
			out[n++] = ' ';
		} else if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = hex(s[i + 1]);
			lo = hex(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			out[n++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[n++] = s[i];
		}
	}
	return (long)n;
}

int
mon_fields_form(const char *body, size_t len, struct mon_fields *out, char *err, size_t errlen)
{
	size_t at = 0;

	out->n = 0;
	if (len > MON_BODY_MAX)
		return fail(err, errlen, "body over %d bytes", MON_BODY_MAX);
	while (at < len) {
		const char *pair = body + at, *amp = memchr(pair, '&', len - at), *eq;
		size_t plen = amp != NULL ? (size_t)(amp - pair) : len - at;
		char k[MON_BODY_MAX], v[MON_BODY_MAX];
		long kl, vl;
		int rc;

		at += plen + 1;
		if (plen == 0)
			continue;
		eq = memchr(pair, '=', plen);
		if (eq == NULL)
			return fail(err, errlen, "a form field without '='");
		kl = url_decode(pair, (size_t)(eq - pair), k);
		vl = url_decode(eq + 1, plen - (size_t)(eq - pair) - 1, v);
		if (kl < 0 || vl < 0)
			return fail(err, errlen, "a bad %%-escape in the form");
		rc = add_field(out, k, (size_t)kl, v, (size_t)vl, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

struct json_in {
	const char *s, *end;
};

static void
skip_ws(struct json_in *in)
{
	while (in->s < in->end && (*in->s == ' ' || *in->s == '\t' || *in->s == '\n' ||
				   *in->s == '\r'))
		in->s++;
}

/* A JSON string (the quote at in->s) into out (cap bytes with NUL), UTF-8. */
static int
json_string_in(struct json_in *in, char *out, size_t cap, size_t *len)
{
	size_t n = 0;

	in->s++;
	while (in->s < in->end && *in->s != '"') {
		unsigned c = (unsigned char)*in->s++;

		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (in->s >= in->end)
				return -1;
			c = (unsigned char)*in->s++;
			switch (c) {
			case '"': case '\\': case '/': break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				unsigned cp = 0;

				if (in->end - in->s < 4)
					return -1;
				for (int i = 0; i < 4; i++) {
					int h = hex(in->s[i]);

					if (h < 0)
						return -1;
					cp = cp * 16 + (unsigned)h;
				}
				in->s += 4;
				/* Names and addresses are ASCII: refuse the rest. */
				if (cp == 0 || cp > 0x7f)
					return -1;
				c = cp;
				break;
			}
			default:
				return -1;
			}
		}
		if (n + 1 >= cap)
			return -2;
		out[n++] = (char)c;
	}
	if (in->s >= in->end)
		return -1;
	in->s++;
	out[n] = '\0';
	*len = n;
	return 0;
}

/* A number, true, false or null: its text as the value. */
static int
json_scalar_in(struct json_in *in, char *out, size_t cap, size_t *len)
{
	const char *start = in->s;

	while (in->s < in->end && (isalnum((unsigned char)*in->s) || *in->s == '-' ||
				   *in->s == '+' || *in->s == '.'))
		in->s++;
	*len = (size_t)(in->s - start);
	if (*len == 0 || *len >= cap)
		return -1;
	memcpy(out, start, *len);
	out[*len] = '\0';
	if (strcmp(out, "true") == 0 || strcmp(out, "false") == 0 || strcmp(out, "null") == 0)
		return 0;
	if (out[0] != '-' && !isdigit((unsigned char)out[0]))
		return -1;
	{
		char *e;

		strtod(out, &e);
		return *e == '\0' ? 0 : -1;
	}
}

int
mon_fields_json(const char *body, size_t len, struct mon_fields *out, char *err, size_t errlen)
{
	struct json_in in = { body, body + len };
	char key[WIRE_NAME_MAX], value[MON_FIELD_MAX];

	out->n = 0;
	if (len > MON_BODY_MAX)
		return fail(err, errlen, "body over %d bytes", MON_BODY_MAX);
	skip_ws(&in);
	if (in.s >= in.end || *in.s != '{')
		return fail(err, errlen, "the body must be a JSON object");
	in.s++;
	skip_ws(&in);
	if (in.s < in.end && *in.s == '}') {
		in.s++;
		goto end;
	}
	for (;;) {
		size_t kl, vl;
		int rc;

		skip_ws(&in);
		if (in.s >= in.end || *in.s != '"')
			return fail(err, errlen, "JSON: a key must be a string");
		rc = json_string_in(&in, key, sizeof(key), &kl);
		if (rc < 0)
			return fail(err, errlen, rc == -2 ? "JSON: a key is too long" :
				    "JSON: a malformed key");
		skip_ws(&in);
		if (in.s >= in.end || *in.s != ':')
			return fail(err, errlen, "JSON: ':' expected after \"%s\"", key);
		in.s++;
		skip_ws(&in);
		if (in.s >= in.end)
			return fail(err, errlen, "JSON: a value expected after \"%s\"", key);
		if (*in.s == '{' || *in.s == '[')
			return fail(err, errlen, "JSON: \"%s\" must be a string, number or boolean", key);
		rc = *in.s == '"' ? json_string_in(&in, value, sizeof(value), &vl) :
			json_scalar_in(&in, value, sizeof(value), &vl);
		if (rc < 0)
			return fail(err, errlen, rc == -2 ? "JSON: \"%s\" is too long" :
				    "JSON: a malformed value of \"%s\"", key);
		rc = add_field(out, key, kl, value, vl, err, errlen);
		if (rc < 0)
			return rc;
		skip_ws(&in);
		if (in.s < in.end && *in.s == ',') {
			in.s++;
			continue;
		}
		if (in.s < in.end && *in.s == '}') {
			in.s++;
			break;
		}
		return fail(err, errlen, "JSON: ',' or '}' expected");
	}
end:
	skip_ws(&in);
	if (in.s != in.end)
		return fail(err, errlen, "JSON: something after the object");
	return 0;
}

const char *
mon_field(const struct mon_fields *f, const char *key)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->f[i].key, key) == 0)
			return f->f[i].value;
	return NULL;
}

/* ------------------------------------------------------------- actions */

int
mon_backend_action(const struct mon_fields *f, const struct wire_ctl_vip_list *vips,
		   struct wire_ctl_backend_set *out, char *err, size_t errlen)
{
	const char *vip = mon_field(f, "vip"), *backend = mon_field(f, "backend");
	const char *action = mon_field(f, "action"), *weight = mon_field(f, "weight");
	const struct wire_ctl_backend *known = NULL;

	memset(out, 0, sizeof(*out));
	if (vip == NULL || backend == NULL || action == NULL)
		return fail(err, errlen, "vip, backend and action are required");
	if (strlen(vip) >= sizeof(out->vip))
		return fail(err, errlen, "no VIP '%.64s'", vip);
	snprintf(out->vip, sizeof(out->vip), "%s", vip);
	if (inet_pton(AF_INET, backend, out->backend) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, backend, out->backend) == 1)
		out->family = AF_INET6;
	else
		return fail(err, errlen, "backend '%.64s' is not an address", backend);
	for (size_t i = 0; vips != NULL && i < vips->n_backends; i++) {
		const struct wire_ctl_backend *b = &vips->backends[i];

		if (strcmp(b->vip, out->vip) == 0 && b->family == out->family &&
		    memcmp(b->address, out->backend, WIRE_ADDR_MAX) == 0)
			known = b;
	}
	if (strcmp(action, "drain") == 0) {
		out->action = WIRE_BACKEND_DRAIN;
	} else if (strcmp(action, "undrain") == 0) {
		if (known == NULL)
			return -ENOENT;
		out->action = WIRE_BACKEND_SET_WEIGHT;
		out->weight = known->config_weight;
	} else if (strcmp(action, "weight") == 0) {
		char *end;
		unsigned long w;

		if (weight == NULL)
			return fail(err, errlen, "action weight needs a weight");
		errno = 0;
		w = strtoul(weight, &end, 10);
		if (!isdigit((unsigned char)weight[0]) || *end != '\0' || errno != 0 ||
		    w > UINT32_MAX)
			return fail(err, errlen, "weight '%.16s' is not a whole number", weight);
		out->action = WIRE_BACKEND_SET_WEIGHT;
		out->weight = (uint32_t)w;
	} else {
		return fail(err, errlen, "action '%.32s' is not drain, undrain or weight", action);
	}
	return 0;
}

int
mon_standby_action(const struct mon_fields *f, bool *on, char *err, size_t errlen)
{
	const char *v = mon_field(f, "on");

	if (v == NULL || (strcmp(v, "true") != 0 && strcmp(v, "false") != 0))
		return fail(err, errlen, "on must be true or false");
	*on = strcmp(v, "true") == 0;
	return 0;
}

bool
mon_cookie(const char *header, const char *name, char *out, size_t len)
{
	size_t nlen = strlen(name);
	const char *s = header;

	while (s != NULL && *s != '\0') {
		const char *end;
		size_t vlen;

		while (*s == ' ' || *s == ';')
			s++;
		end = strchr(s, ';');
		if (end == NULL)
			end = s + strlen(s);
		if ((size_t)(end - s) > nlen && strncmp(s, name, nlen) == 0 && s[nlen] == '=') {
			vlen = (size_t)(end - s) - nlen - 1;
			if (vlen >= len)
				return false;
			memcpy(out, s + nlen + 1, vlen);
			out[vlen] = '\0';
			return true;
		}
		s = *end == ';' ? end + 1 : end;
	}
	return false;
}
