/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client of maglb's local IPC endpoints (contract: ipc.h; server:
 * ipc_server.h), blocking (struct ipc_client), for maglbctl and the test
 * tools: one request and its response with a timeout, and the export event
 * stream; nothing here logs.
 *
 * Errors, as -errno:
 *   -ECONNREFUSED  nothing serves the service (its program is not running)
 *   -EACCES        the server refused us: neither root nor in its group
 *   -ENOTCONN      the server went away while we were connected
 *   -ETIMEDOUT     no response within the timeout
 *   -EBADMSG       the server's answer did not decode (counted in
 *                  ipc_client_wire_counters())
 *   -EMSGSIZE      the request does not fit one IPC message
 *   -EINVAL        the request does not encode
 *   -ENOMEM
 * ipc_strerror() turns them into a line for a person that names the
 * service and the program serving it.
 *
 * Threads: a struct ipc_client belongs to one thread at a time; requests
 * and event receives on it do not overlap.
 */
#ifndef MAGLB_LIB_IPC_CLIENT_H
#define MAGLB_LIB_IPC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/ipc.h"
#include "proto/wire.h"

enum {
	IPC_CLIENT_TIMEOUT_DEFAULT_MS = 5000,
};

/* ------------------------------------------------------------ blocking */

struct ipc_client;

/*
 * Connect to service (NULL: IPC_SERVICE_DATAPLANE). Returns 0 and the
 * client in *out (the caller's, released with ipc_client_close()), or
 * -errno (see above) with *out untouched.
 */
int ipc_client_connect(const char *service, struct ipc_client **out);

/* Disconnect and free c. NULL is a no-op. */
void ipc_client_close(struct ipc_client *c);

/*
 * Send req (its version and request_id are set here) and wait up to
 * timeout_ms (< 0: forever) for its response. On 0, *resp holds the decoded
 * response, whatever its kind: a WIRE_CTL_ERROR with a non-zero code is the
 * server refusing the request, with its reason. The caller releases *resp
 * with wire_ctl_msg_free(). A response to an earlier request that timed
 * out is recognised by its request_id and skipped. On failure returns
 * -errno (see above) and *resp is untouched.
 */
int ipc_client_request(struct ipc_client *c, const struct wire_ctl_msg *req,
		       struct wire_ctl_msg *resp, int timeout_ms);

/*
 * Receive one event (an EXPORT_BATCH after EXPORT_SUBSCRIBE), waiting up to
 * timeout_ms (0: do not wait, < 0: forever). Returns 0 and the decoded
 * event in *m (release with wire_ctl_msg_free()), -EAGAIN when none came,
 * or -errno (see above).
 */
int ipc_client_event_recv(struct ipc_client *c, struct wire_ctl_msg *m,
			  int timeout_ms);

/*
 * A file descriptor that polls readable when events may be waiting, for a
 * qb_loop or poll(); then call ipc_client_event_recv(c, m, 0) until
 * -EAGAIN. Responses do not make it readable. Returns the fd or -errno.
 */
int ipc_client_fd(struct ipc_client *c);

/* The service c is connected to. */
const char *ipc_client_service(const struct ipc_client *c);

/* Decode drops of what the server sent us. */
const struct wire_counters *ipc_client_wire_counters(const struct ipc_client *c);

/*
 * A line for a person about rc (-errno from this library), naming service
 * (NULL: IPC_SERVICE_DATAPLANE) and, for maglb's own services, the program
 * that serves it: "service maglb-syncd is not running (maglb-syncd serves
 * it)", "permission denied by service NAME: run as root or as a member of
 * the maglb group", ... Written into buf (len bytes), returned.
 */
const char *ipc_strerror(int rc, const char *service, char *buf, size_t len);

#endif /* MAGLB_LIB_IPC_CLIENT_H */
