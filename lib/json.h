/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A tiny streaming JSON writer for maglbctl --json and maglb-monitor's
 * API: one document, written as it goes, two-space indented. Strings are escaped (quote, backslash,
 * control characters); bytes that are not valid UTF-8 become U+FFFD, so
 * the output is always valid JSON whatever a name holds.
 *
 * Members of an object take a key; values in an array or at the top take
 * NULL. Nesting deeper than JSON_DEPTH_MAX is a bug (assert).
 */
#ifndef MAGLB_LIB_JSON_H
#define MAGLB_LIB_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum {
	JSON_DEPTH_MAX = 16,
};

struct json {
	FILE *f;
	int depth;
	bool has_items[JSON_DEPTH_MAX];
};

/* Start a document on f. */
void json_init(struct json *j, FILE *f);

void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);

void json_string(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_i64(struct json *j, const char *key, int64_t value);
/* Not finite (NaN, infinity): null, which JSON has instead. */
void json_double(struct json *j, const char *key, double value);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);

/* End the document (a newline). Returns 0, or -EIO if writing failed. */
int json_finish(struct json *j);

/* Write s as a JSON string literal, quotes included. */
void json_write_string(FILE *f, const char *s);

#endif /* MAGLB_LIB_JSON_H */
