/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's local control endpoint (server side): libqb IPC over
 * shared memory, served from a qb_loop on the control thread, for
 * maglb-syncd and maglbctl.
 *
 * Transport: QB_IPC_SHM. A client connects through a Unix socket (libqb
 * checks SO_PEERCRED there), then each direction is a ring in /dev/shm:
 * request (client -> server), response and event (server -> client). Rings
 * carry messages of any size up to IPC_MSG_MAX without depending on the
 * kernel's socket buffer limits, and a full event ring is an immediate
 * -EAGAIN instead of a blocked sender.
 *
 * Framing: one request = one libqb message, struct qb_ipc_request_header
 * (id IPC_MSG_ID, size = the whole message) + the wire_ctl_encode() bytes.
 * One response or event = struct qb_ipc_response_header (id IPC_MSG_ID,
 * size, error 0) + the encoded envelope. Every request gets exactly one
 * response: the handler's, or a WIRE_CTL_ERROR.
 *
 * Access: root, and processes whose effective or supplementary groups hold
 * the group given to ipc_server_create(); the shared-memory files are made
 * root:group 0660 (root:root 0600 when root only).
 *
 * Threads: everything here runs on the thread that runs the qb_loop (the
 * control thread), handlers included; call create and destroy there too, or
 * before the loop runs and after it has stopped. libqb's poll callbacks
 * carry no context, so every ipc_server of a process uses the same loop.
 */
#ifndef MAGLB_LIB_IPC_SERVER_H
#define MAGLB_LIB_IPC_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <qb/qbipc_common.h>
#include <qb/qbloop.h>

#include "proto/wire.h"

/*
 * The endpoint's contract, shared with its client library (ctl/client.c).
 *
 * IPC_MSG_MAX is the size of every libqb ring and of the largest message,
 * its libqb header included: a request carries at most IPC_MSG_MAX - 16
 * wire bytes, a response or an event IPC_MSG_MAX - 24. Each connection maps
 * three rings (about 3 MiB of /dev/shm). What fits in one response, at the
 * encoder's worst case (proto/README.md):
 *   - a dump page or a flow batch: (IPC_MSG_MAX - 24 - 64) / 74 = 14168
 *     entries of any family (IPC_FLOWS_PER_MSG_MAX, rounded down to 8192
 *     for margin), 27591 IPv4 ones with IPv4 backends;
 *   - a counter list: about 7000 counters with 63-character scope and
 *     name, more than 20000 with typical names ("worker0", "rx_packets").
 * A response that does not fit is replaced by WIRE_CTL_ERROR EMSGSIZE and
 * counted (RESPONSE_TOO_BIG); handlers page instead (DUMP cursors).
 */
#define IPC_SERVICE_DATAPLANE "maglb-dataplane"

enum {
	IPC_MSG_MAX = 1 << 20,
	IPC_MSG_ID = QB_IPC_MSG_USER_START, /* the only id in a header */
	IPC_FLOWS_PER_MSG_MAX = 8192,       /* dump page / batch, any family */
	IPC_REQUEST_PAYLOAD_MAX = IPC_MSG_MAX -
				  (int)sizeof(struct qb_ipc_request_header),
	IPC_RESPONSE_PAYLOAD_MAX = IPC_MSG_MAX -
				   (int)sizeof(struct qb_ipc_response_header),
};

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
	X(EVENT_DROPS, event_drops, "events refused: the client's ring was full")

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
