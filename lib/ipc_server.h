/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A local IPC endpoint (server side) of the contract in ipc.h: libqb IPC
 * over shared memory, served from a qb_loop: the dataplane's control thread
 * (IPC_SERVICE_DATAPLANE), maglb-syncd's loop (IPC_SERVICE_SYNCD).
 *
 * Every request is checked (libqb header, wire decode, request kind)
 * before the handler sees it, and gets exactly one response.
 *
 * Access: root, and processes whose effective or supplementary groups hold
 * the group given to ipc_server_create(); the shared-memory files are made
 * root:group 0660 (root:root 0600 when root only).
 *
 * Stale files: libqb keeps each connection's rings in a directory
 * /dev/shm/qb-SERVERPID-CLIENTPID-FD-XXXXXX/ of six files,
 * qb-{request,response,event}-SERVICE-{header,data}. A server or client that
 * dies by SIGKILL leaves them behind when the other end dies as well;
 * ipc_server_create() removes those of its service whose server process is
 * gone, logs how many and counts them (STALE_FILES).
 *
 * Threads: everything here runs on the thread that runs the qb_loop,
 * handlers included; call create and destroy there too, or before the loop
 * runs and after it has stopped. libqb's poll callbacks carry no context,
 * so every ipc_server of a process uses the same loop.
 */
#ifndef MAGLB_LIB_IPC_SERVER_H
#define MAGLB_LIB_IPC_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <qb/qbloop.h>

#include "lib/ipc.h"
#include "proto/wire.h"

/*
 * One counter per outcome: X(ENUM, name, description). Bad requests are
 * also broken down by wire drop reason (struct wire_counters).
 */
#define IPC_SERVER_COUNTERS(X) \
	X(ACCEPTED, accepted, "connections accepted") \
	X(REFUSED, refused, "connections refused: not root, not in the group") \
	X(REQUESTS, requests, "requests passed to the handler") \
	X(BAD_HEADER, bad_header, "libqb header: unknown id, size out of bounds") \
	X(BAD_REQUEST, bad_request, "undecodable request (wire counters: why)") \
	X(NOT_A_REQUEST, not_a_request, "a response or event kind as a request") \
	X(HANDLER_ERRORS, handler_errors, "the handler answered an error") \
	X(RESPONSE_TOO_BIG, response_too_big, "response over IPC_MSG_MAX: EMSGSIZE") \
	X(RESPONSE_INVALID, response_invalid, "response did not encode: EPROTO") \
	X(RESPONSE_LOST, response_lost, "response not queued to the client") \
	X(EVENTS, events, "events queued to a client") \
	X(EVENT_DROPS, event_drops, "events refused: the client's ring was full") \
	X(STALE_FILES, stale_files, "/dev/shm files of dead servers removed at start")

enum ipc_counter {
#define IPC_COUNTER_ENUM_(id, name, text) IPC_COUNTER_##id,
	IPC_SERVER_COUNTERS(IPC_COUNTER_ENUM_)
#undef IPC_COUNTER_ENUM_
	IPC_COUNTER_MAX
};

/* "accepted", ... and their descriptions, for maglbctl counters and logs. */
extern const char *const ipc_counter_names[IPC_COUNTER_MAX];
extern const char *const ipc_counter_descriptions[IPC_COUNTER_MAX];

struct ipc_server_counters {
	uint64_t counts[IPC_COUNTER_MAX];
	struct wire_counters wire;  /* why BAD_REQUEST: one per wire drop */
};

struct ipc_server;

/*
 * What the server calls, on the loop's thread. ctx is the one given to
 * ipc_server_create(). conn_id names a connection for the server's
 * lifetime (1, 2, ...; never reused).
 *
 * request: req is decoded and validated, a request kind, and only valid
 * during the call (copy what you keep). *resp comes preset to WIRE_CTL_ERROR
 * with code 0 (the acknowledgement of a request without a reply body);
 * fill in kind and body, and return 0. version and request_id are the
 * server's to set. Arrays that resp points to stay the handler's: they must
 * live until release() (or the next call into the handlers when release is
 * NULL). Return -errno instead to answer WIRE_CTL_ERROR with code -rc and
 * the message in errmsg (errlen bytes, WIRE_TEXT_MAX), or strerror() when
 * errmsg is left empty.
 *
 * release (may be NULL): called after each request(), whatever it returned,
 * once the response has been encoded; free what resp points to.
 *
 * disconnected (may be NULL): the connection is gone (client closed or
 * died, or the server is being destroyed); called exactly once for every
 * connection that was established, so for every conn_id a request() saw.
 * e.g. syncd's export subscription ends.
 */
struct ipc_handlers {
	int (*request)(void *ctx, uint64_t conn_id,
		       const struct wire_ctl_msg *req, struct wire_ctl_msg *resp,
		       char *errmsg, size_t errlen);
	void (*release)(void *ctx, struct wire_ctl_msg *resp);
	void (*disconnected)(void *ctx, uint64_t conn_id);
};

/*
 * Publish service (e.g. IPC_SERVICE_DATAPLANE) on loop. group: the gid
 * allowed besides root (the maglb system group), or (gid_t)-1 for root
 * only. h (copied) and its request callback are required; ctx is passed to
 * every handler. Returns the server, or NULL after qb_log says why (the
 * name is taken by a running server, another loop already hosts servers in
 * this process, no memory).
 */
struct ipc_server *ipc_server_create(qb_loop_t *loop, const char *service,
				     gid_t group, const struct ipc_handlers *h,
				     void *ctx);

/*
 * Disconnect every client (calling disconnected() for each), withdraw the
 * service and free s. NULL is a no-op.
 */
void ipc_server_destroy(struct ipc_server *s);

/*
 * Queue m to one connection as a libqb event (the EXPORT_BATCH stream);
 * version is set here, request_id is the caller's (the batch sequence).
 * Never blocks. Returns 0; -EAGAIN when the client's event ring is full
 * (counted as EVENT_DROPS: the caller counts its entries as dropped and
 * tells the client in the next batch's `dropped`); -ENOENT no such
 * connection; -EINVAL m does not encode; -EMSGSIZE m does not fit
 * IPC_RESPONSE_PAYLOAD_MAX; -ENOTCONN the client is going away.
 */
int ipc_server_send_event(struct ipc_server *s, uint64_t conn_id,
			  const struct wire_ctl_msg *m);

/* Connections open now. */
unsigned ipc_server_connections(const struct ipc_server *s);

/* The server's counters; valid until destroy, read on the loop's thread. */
const struct ipc_server_counters *
ipc_server_counters(const struct ipc_server *s);

#endif /* MAGLB_LIB_IPC_SERVER_H */
