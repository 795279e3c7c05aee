/* SPDX-License-Identifier: BSD-3-Clause */
#include "lib/json.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>

void
json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->has_items[0] = false;
}

/* Length of the valid UTF-8 sequence at s, 0 if s does not start one. */
static size_t
json_utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* Bytes at s that go out as they are: printable ASCII but '"' and '\\'. */
static size_t
json_plain_run(const unsigned char *s)
{
	size_t n = 0;

	while (s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
		n++;
	return n;
}

void
json_write_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s != '\0') {
		size_t n = json_plain_run(s);

		if (n > 0) {
			fwrite(s, 1, n, f);
			s += n;
			continue;
		}
		switch (*s) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*s < 0x20 || *s == 0x7f) {
				fprintf(f, "\\u%04x", *s);
				break;
			}
			n = json_utf8_len(s);
			if (n == 0) {
				fputs("\\ufffd", f);
				break;
			}
			fwrite(s, 1, n, f);
			s += n;
			continue;
		}
		s++;
	}
	fputc('"', f);
}

/* A newline and the indentation of depth. */
static void
json_newline(FILE *f, int depth)
{
	static const char spaces[] = "\n                                ";

	static_assert(sizeof(spaces) >= 2 * JSON_DEPTH_MAX + 2, "indentation");
	fwrite(spaces, 1, 1 + 2 * (size_t)depth, f);
}

/* Separator, indentation and key before a value. */
static void
json_item(struct json *j, const char *key)
{
	if (j->depth > 0) {
		if (j->has_items[j->depth])
			fputc(',', j->f);
		json_newline(j->f, j->depth);
	}
	j->has_items[j->depth] = true;
	if (key != NULL) {
		json_write_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void
json_open(struct json *j, const char *key, char bracket)
{
	json_item(j, key);
	fputc(bracket, j->f);
	assert(j->depth + 1 < JSON_DEPTH_MAX);
	j->depth++;
	j->has_items[j->depth] = false;
}

static void
json_close(struct json *j, char bracket)
{
	bool had = j->has_items[j->depth];

	assert(j->depth > 0);
	j->depth--;
	if (had)
		json_newline(j->f, j->depth);
	fputc(bracket, j->f);
}

void
json_object_begin(struct json *j, const char *key)
{
	json_open(j, key, '{');
}

void
json_object_end(struct json *j)
{
	json_close(j, '}');
}

void
json_array_begin(struct json *j, const char *key)
{
	json_open(j, key, '[');
}

void
json_array_end(struct json *j)
{
	json_close(j, ']');
}

void
json_string(struct json *j, const char *key, const char *value)
{
	json_item(j, key);
	json_write_string(j->f, value);
}

void
json_u64(struct json *j, const char *key, uint64_t value)
{
	char buf[24];
	size_t at = sizeof(buf);

	json_item(j, key);
	do {
		buf[--at] = (char)('0' + value % 10);
		value /= 10;
	} while (value != 0);
	fwrite(buf + at, 1, sizeof(buf) - at, j->f);
}

void
json_double(struct json *j, const char *key, double value)
{
	json_item(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.9g", value);
	else
		fputs("null", j->f);
}

void
json_i64(struct json *j, const char *key, int64_t value)
{
	json_item(j, key);
	fprintf(j->f, "%" PRId64, value);
}

void
json_bool(struct json *j, const char *key, bool value)
{
	json_item(j, key);
	fputs(value ? "true" : "false", j->f);
}

void
json_null(struct json *j, const char *key)
{
	json_item(j, key);
	fputs("null", j->f);
}

int
json_finish(struct json *j)
{
	assert(j->depth == 0);
	fputc('\n', j->f);
	return fflush(j->f) == 0 && !ferror(j->f) ? 0 : -EIO;
}
