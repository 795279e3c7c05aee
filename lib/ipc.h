/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb's local IPC contract, written once for every server
 * (lib/ipc_server.h: maglb-dataplane, maglb-syncd) and every client
 * (lib/ipc_client.h: maglbctl, maglb-syncd, the test tools).
 *
 * Transport: libqb IPC, QB_IPC_SHM. A client connects through an abstract
 * Unix socket (libqb checks SO_PEERCRED there; abstract sockets belong to a
 * network namespace), then each direction is a ring in /dev/shm: request
 * (client -> server), response and event (server -> client). Rings carry
 * messages of any size up to IPC_MSG_MAX without depending on the kernel's
 * socket buffer limits, and a full ring is an immediate -EAGAIN instead of
 * a blocked sender.
 *
 * Framing: one request = one libqb message, struct qb_ipc_request_header
 * (id IPC_MSG_ID, size = the whole message) + the wire_ctl_encode() bytes.
 * One response or event = struct qb_ipc_response_header (id IPC_MSG_ID,
 * size, error 0) + the encoded envelope. Every request gets exactly one
 * response, with the request's request_id: the handler's, or a
 * WIRE_CTL_ERROR (code 0 acknowledges; request_id 0 when the server could
 * not read the request's).
 *
 * IPC_MSG_MAX is the size of every libqb ring and of the largest message,
 * its libqb header included: a request carries at most IPC_MSG_MAX - 16
 * wire bytes, a response or an event IPC_MSG_MAX - 24. Each connection maps
 * three rings (about 3 MiB of /dev/shm). What fits in one response, at the
 * encoder's worst case (proto/README.md):
 *   - a dump page or a flow batch: (IPC_MSG_MAX - 24 - 64) / 80 = 13106
 *     entries of any family (IPC_FLOWS_PER_MSG_MAX, rounded down to 8192
 *     for margin), 23830 IPv4 ones with IPv4 backends;
 *   - a counter list: about 7000 counters with 63-character scope and
 *     name, more than 20000 with typical names ("worker0", "rx_packets").
 * A response that does not fit is replaced by WIRE_CTL_ERROR EMSGSIZE and
 * counted (RESPONSE_TOO_BIG); handlers page instead (DUMP cursors).
 */
#ifndef MAGLB_LIB_IPC_H
#define MAGLB_LIB_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <qb/qbipc_common.h>

#include "proto/wire.h"

/* The services, named after the programs that serve them. */
#define IPC_SERVICE_DATAPLANE "maglb-dataplane"
#define IPC_SERVICE_SYNCD "maglb-syncd"

enum {
	IPC_MSG_MAX = 1 << 20,
	IPC_MSG_ID = QB_IPC_MSG_USER_START, /* the only id in a header */
	IPC_FLOWS_PER_MSG_MAX = 8192,       /* dump page / batch, any family */
	IPC_REQUEST_PAYLOAD_MAX = IPC_MSG_MAX -
				  (int)sizeof(struct qb_ipc_request_header),
	IPC_RESPONSE_PAYLOAD_MAX = IPC_MSG_MAX -
				   (int)sizeof(struct qb_ipc_response_header),
};

/* Which way a message goes: its libqb header. */
enum ipc_dir {
	IPC_REQUEST,    /* client -> server: struct qb_ipc_request_header */
	IPC_RESPONSE,   /* server -> client, responses and events alike */
};

/* The length of dir's libqb header: 16 (request) or 24 bytes. */
size_t ipc_header_len(enum ipc_dir dir);

/*
 * Frame m for dir into buf (IPC_MSG_MAX bytes): the libqb header, then
 * m encoded as it is (version and request_id are the caller's). Returns
 * the whole message's length; -EMSGSIZE when it does not fit one message,
 * -EINVAL when m does not encode, -ENOMEM.
 */
ssize_t ipc_frame(enum ipc_dir dir, const struct wire_ctl_msg *m, uint8_t *buf);

/*
 * Check the libqb header of a received message of dir (n bytes at msg,
 * n as libqb reports it): id IPC_MSG_ID, size n, n within the header and
 * IPC_MSG_MAX. Returns the length of the wire bytes that follow the header,
 * or -EBADMSG.
 */
ssize_t ipc_frame_check(enum ipc_dir dir, const void *msg, size_t n);

/*
 * A COUNTERS_RESPONSE being built by a server's handler: the counters
 * whose scope starts with prefix (the request's), in a growing array that
 * the handler frees once the response is encoded. A counter that finds no
 * memory is left out.
 */
struct ipc_counter_list {
	struct wire_ctl_counter *v;
	size_t n, cap;
	const char *prefix;
};

void ipc_counter_add(struct ipc_counter_list *l, const char *scope, const char *name,
		     uint64_t value);

/*
 * Whether a scope starting with scope_start may be wanted, so that a
 * handler skips computing counters the request's prefix leaves out.
 */
bool ipc_counter_scope_wanted(const struct ipc_counter_list *l, const char *scope_start);

/* n counters of one scope: names[i] and values[i] (an X-macro's pair). */
void ipc_counter_add_array(struct ipc_counter_list *l, const char *scope,
			   const char *const *names, const uint64_t *values, size_t n);

#endif /* MAGLB_LIB_IPC_H */
