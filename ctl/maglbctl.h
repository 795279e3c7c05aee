/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What maglbctl's command files share: the options, the call to a service,
 * the table printer, usage errors. maglbctl.c and bfd.c hold the
 * dataplane's commands, sync.c and cluster.c maglb-syncd's, monitor.c
 * maglb-monitor's users file.
 */
#ifndef MAGLB_CTL_MAGLBCTL_H
#define MAGLB_CTL_MAGLBCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>

#include "proto/wire.h"

struct ipc_client;
struct json;

enum maglbctl_exit {
	MAGLBCTL_EXIT_OK = 0,
	MAGLBCTL_EXIT_ERROR = 1,        /* the daemon answered with an error */
	MAGLBCTL_EXIT_USAGE = 2,        /* bad arguments */
	MAGLBCTL_EXIT_UNREACHABLE = 3,  /* not running, refused us, no answer */
};

enum {
	MAGLBCTL_WEIGHT_MAX = 1000,
	MAGLBCTL_TIMEOUT_MAX_MS = 3600 * 1000,
	MAGLBCTL_LEASE_MAX_MS = 3600 * 1000,
	MAGLBCTL_DIGEST_STR = 19,       /* "0x" and 16 hex digits, with NUL */
	MAGLBCTL_FLOWS_PAGE = 1024,     /* well under the IPC bound (8192) */
	MAGLBCTL_TABLE_COLS_MAX = 14,
	MAGLBCTL_CELL_MAX = 128,
	MAGLBCTL_ADDR_PORT_MAX = INET6_ADDRSTRLEN + 8,
};

struct maglbctl {
	bool json;
	const char *service;            /* the one asked: the dataplane's or syncd's */
	const char *sync_service;
	int timeout_ms;
	struct ipc_client *client;  /* connected on the first request */
};

struct maglbctl_column {
	const char *header;
	bool right;  /* numbers */
};

typedef void (*maglbctl_cell_fn)(const void *ctx, size_t row, size_t col,
				 char *buf, size_t len);

/* Print why the arguments are wrong, then usage, to stderr; the exit code. */
int maglbctl_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * Match option name at argv[*i], as "--name VALUE" or "--name=VALUE".
 * Returns 1 and *value, 0 if it is not this option, -1 if its value is
 * missing.
 */
int maglbctl_option(char **argv, int argc, int *i, const char *name,
		    const char **value);

/* A 64-bit digest as "0x%016x": JSON numbers lose bits past 2^53 (jq). */
void maglbctl_digest_str(uint64_t digest, char buf[MAGLBCTL_DIGEST_STR]);

/* Start the --json document on stdout, its top object open. */
void maglbctl_json_begin(struct json *j);

/* Close the top object and end the document; the exit code. */
int maglbctl_json_end(struct json *j);

/* {"ok": true} on stdout, for --json acknowledgements; the exit code. */
int maglbctl_json_ok(void);

/* Copy a name (VIP, scope, group) into a wire field; false if too long. */
bool maglbctl_copy_name(char dst[WIRE_NAME_MAX], const char *src);

/* An address of family (AF_INET or AF_INET6) as text; "?" if it has none. */
void maglbctl_addr_str(uint8_t family, const uint8_t *addr, char *buf, size_t len);

/* A duration of ms as "01:02:03", from a day on "2d 01:02:03". */
void maglbctl_duration_str(uint64_t ms, char *buf, size_t len);

/* An aligned table: headers, then rows; cells formatted by cell(). */
void maglbctl_table(const struct maglbctl_column *cols, size_t ncols, size_t nrows,
		    maglbctl_cell_fn cell, const void *ctx);

/*
 * Send req to m->service, expect an answer of kind want (WIRE_CTL_ERROR:
 * an acknowledgement, code 0). Returns 0 with *resp (free it), or the exit
 * code after printing why.
 */
int maglbctl_call(struct maglbctl *m, const struct wire_ctl_msg *req,
		  enum wire_ctl_kind want, struct wire_ctl_msg *resp);

/* Print a read command's answer (as text, or JSON with m->json); the exit code. */
typedef int (*maglbctl_show_fn)(const struct maglbctl *m, const struct wire_ctl_msg *resp);

/*
 * A read command without arguments (argv[0] names it): ask with a message
 * of kind, and show() the answer of kind want. Returns the exit code.
 */
int maglbctl_show(struct maglbctl *m, int argc, char **argv, enum wire_ctl_kind kind,
		  enum wire_ctl_kind want, maglbctl_show_fn show);

/*
 * A command answered by an acknowledgement alone: send req, and on success
 * say ok ({"ok":true} with --json). Returns the exit code.
 */
int maglbctl_command(struct maglbctl *m, const struct wire_ctl_msg *req);

/* sync and sync verify (sync.c). */
int maglbctl_sync(struct maglbctl *m, int argc, char **argv);

/* cluster and cluster standby on|off (cluster.c). */
int maglbctl_cluster(struct maglbctl *m, int argc, char **argv);

/* bfd: the dataplane's BFD sessions (bfd.c). */
int maglbctl_bfd(struct maglbctl *m, int argc, char **argv);

/* monitor passwd: a user of maglb-monitor, in its users file (monitor.c). */
int maglbctl_monitor(struct maglbctl *m, int argc, char **argv);

#endif /* MAGLB_CTL_MAGLBCTL_H */
