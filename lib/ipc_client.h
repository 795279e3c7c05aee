/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client of maglb's local IPC endpoints (contract: ipc.h; server:
 * ipc_server.h), in two shapes:
 *
 *   - blocking (struct ipc_client), for maglbctl and the test tools: one
 *     request and its response with a timeout, and the export event
 *     stream; nothing here logs;
 *   - non-blocking (struct ipc_async), for a daemon on a qb_loop
 *     (maglb-syncd): pipelined requests whose answers come back through
 *     callbacks, events, and the one reconnect-with-backoff of maglb (the
 *     `up` callback is where a caller re-subscribes); it logs one line per
 *     state change.
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
 * and event receives on it do not overlap. A struct ipc_async lives on its
 * loop's thread: call it there, its callbacks run there.
 */
#ifndef MAGLB_LIB_IPC_CLIENT_H
#define MAGLB_LIB_IPC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <qb/qbloop.h>

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
 * -EAGAIN. Responses do not make it readable (see struct ipc_async).
 * Returns the fd or -errno.
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

/* -------------------------------------------------------- non-blocking */

/*
 * The async client on a qb_loop. Created down; connect attempts run from a
 * loop timer, the first at once, then after 100 ms doubling to 5 s while
 * they fail (reset once connected). The connect itself never blocks
 * (qb_ipcc_connect_async()).
 *
 * Requests are pipelined: up to IPC_ASYNC_WINDOW in flight, answered in any
 * order, each matched by its request_id to its done callback. A request
 * without an answer after IPC_ASYNC_TIMEOUT_MS gets done(-ETIMEDOUT); its
 * late answer is counted (LATE) and ignored. Requests in flight when the
 * connection drops get done(-ENOTCONN).
 *
 * Pipeline small answers (acknowledgements, status): every answer in flight
 * must fit the response ring (IPC_MSG_MAX) at once, else the server drops
 * it (its RESPONSE_LOST) and the request times out. Dump pages and large
 * counter lists: one at a time.
 *
 * libqb wakes a client's descriptor for events (the server writes a byte to
 * the socket per event) but not for responses (QB_IPC_SHM writes them to the
 * response ring alone, libqb 2.0 lib/ipcs.c). So responses are collected
 * whenever the descriptor wakes, and from a 500 us one-shot timerfd armed
 * while requests are in flight (never from inside ipc_async_send(): done()
 * would run in the caller's frame). A timerfd, not a qb_loop timer: qb_loop
 * spends a timer's last millisecond in epoll_wait(0), so a 1 ms qb timer
 * kept the client's core 40 % busy while waiting; the timerfd costs 3 %.
 * Measured, a client in its own process chaining 2000 IMPORT_BATCH of 100
 * flows to a server acking them: send to done() median 0.54 ms, p99
 * 0.9-1.7 ms, on 2 cores with a load average of 11.
 *
 * The bulk lane. The server answers one connection's requests in order, so
 * a request waits for all the work sent before it. Requests that carry
 * entries (IMPORT_BATCH: ipc_async_bulk_entries()) are bulk, and only about
 * IPC_ASYNC_BULK_AHEAD_MS of the server's work of them is in flight at
 * once: the lane measures the server's time per entry (the time bulk
 * requests were in flight over the entries answered meanwhile, one sample
 * per IPC_ASYNC_BULK_SAMPLE entries; a slower sample counts at once, a
 * faster one half; afresh on every connection) and holds that many entries
 * (ipc_async_bulk_limit()): IPC_ASYNC_BULK_SAMPLE until the first sample,
 * never more than IPC_ASYNC_BULK_ENTRIES_MAX nor IPC_ASYNC_BULK_REQUESTS
 * requests. One bulk request of any size goes when none is in flight. A
 * bulk send past the lane returns -EAGAIN (counted in BULK_AGAIN). Other
 * requests (STATUS, OWNERSHIP_SET, DUMP_REQUEST...) keep the rest of the
 * window, and wait for that much bulk work at most.
 *
 * What bounds it: syncd takes a STATUS unanswered for 120 ms for a dead
 * dataplane (PING_DEAD_MS), and the dataplane's control thread spends
 * 1.5-2.5 us an imported entry with a core of its own, 10-70 us of wall
 * time on contended cores (an IMPORT_BATCH of 4096 entries: 6-10 ms; 40-290
 * ms on 2 shared cores at a load average of 10-14). No fixed number of
 * entries is both enough to keep it busy and little enough to answer a
 * STATUS in time. 40 ms of measured work leave two thirds of the deadline
 * to scheduling, and are four IMPORT_BATCH of 4096 at 2 us an entry, two
 * at 4.3 us (an ASan+UBSan build), so that the dataplane serves one while
 * the next waits, and one on contended cores: syncd's IMPORT_BATCH of 4096
 * are then the floor, and one can still take longer than the deadline
 * where the dataplane gets little CPU. The cap, 16384 entries (about 620
 * KB of IPv4 entries), keeps bulk from filling the 1 MiB request ring,
 * where a STATUS would find no room. Without the lane, a full window of
 * IMPORT_BATCH put as much as that ring holds (about 27000 entries) ahead
 * of a STATUS.
 *
 * Callbacks run on the loop's thread, never from inside ipc_async_send()
 * or ipc_async_create(); any of them may send, and may destroy the client.
 */
enum {
	IPC_ASYNC_WINDOW = 64,          /* requests in flight at most */
	IPC_ASYNC_BULK_AHEAD_MS = 40,   /* bulk work in flight, measured */
	IPC_ASYNC_BULK_ENTRIES_MAX = 16384, /* bulk entries in flight at most */
	IPC_ASYNC_BULK_REQUESTS = IPC_ASYNC_WINDOW / 2, /* bulk requests at most */
	IPC_ASYNC_BULK_SAMPLE = 4096,   /* entries answered per sample */
	IPC_ASYNC_TIMEOUT_MS = 5000,    /* per request */
	IPC_ASYNC_RETRY_MIN_MS = 100,   /* first reconnect delay */
	IPC_ASYNC_RETRY_MAX_MS = 5000,  /* delays double up to this */
	IPC_ASYNC_POLL_US = 500,        /* response polling while in flight */
	IPC_ASYNC_EVENTS_PER_WAKE = 16, /* events taken per wake-up at most */
	IPC_ASYNC_WAKE_US = 2000,       /* and for this long at most */
};

struct ipc_async;

struct ipc_async_ops {
	/* connected, first time or again: re-subscribe here */
	void (*up)(void *arg);
	/*
	 * lost (-ENOTCONN...) or connect failed; retries follow with backoff.
	 * Called once per fall: when a connection is lost, and when the first
	 * attempt after create() or after a loss fails (err: -ECONNREFUSED,
	 * -EACCES, ...), not for every retry.
	 */
	void (*down)(void *arg, int err);
	/* an event (EXPORT_BATCH...); m valid during the call only */
	void (*event)(void *arg, const struct wire_ctl_msg *m);
};

/*
 * rc 0: resp valid during the call (any kind; WIRE_CTL_ERROR code 0 = ack);
 * rc < 0: -ENOTCONN (connection lost before the answer), -ETIMEDOUT,
 * -ECANCELED (ipc_async_destroy()).
 */
typedef void (*ipc_done_fn)(void *arg, int rc, const struct wire_ctl_msg *resp);

/*
 * One counter per outcome: X(ENUM, name, description). Undecodable
 * messages are also broken down by wire drop reason.
 */
#define IPC_ASYNC_COUNTERS(X) \
	X(CONNECTS, connects, "connections made") \
	X(CONNECT_FAILURES, connect_failures, "connect attempts that failed") \
	X(DISCONNECTS, disconnects, "connections lost") \
	X(REQUESTS, requests, "requests queued to the server") \
	X(RESPONSES, responses, "answers matched to their request") \
	X(ERRORS, errors, "answers that were WIRE_CTL_ERROR with a code") \
	X(TIMEOUTS, timeouts, "requests unanswered in time: -ETIMEDOUT") \
	X(ABORTED, aborted, "requests failed by a lost connection: -ENOTCONN") \
	X(SEND_AGAIN, send_again, "sends refused: window or request ring full") \
	X(BULK_AGAIN, bulk_again, "bulk sends refused: the bulk lane full") \
	X(EVENTS, events, "events passed to the event callback") \
	X(LATE, late, "answers to no request in flight (timed out): ignored") \
	X(BAD_MESSAGES, bad_messages, "messages that did not decode: dropped")

enum ipc_async_counter {
#define IPC_ASYNC_COUNTER_ENUM_(id, name, text) IPC_ASYNC_##id,
	IPC_ASYNC_COUNTERS(IPC_ASYNC_COUNTER_ENUM_)
#undef IPC_ASYNC_COUNTER_ENUM_
	IPC_ASYNC_COUNTER_MAX
};

extern const char *const ipc_async_counter_names[IPC_ASYNC_COUNTER_MAX];
extern const char *const ipc_async_counter_descriptions[IPC_ASYNC_COUNTER_MAX];

struct ipc_async_counters {
	uint64_t counts[IPC_ASYNC_COUNTER_MAX];
	struct wire_counters wire;  /* why BAD_MESSAGES */
};

/*
 * A client of service (NULL: IPC_SERVICE_DATAPLANE) on loop; ops (copied;
 * any callback may be NULL) get arg. Returns NULL when out of memory or
 * service is not a name; the first connect attempt runs from the loop.
 */
struct ipc_async *ipc_async_create(qb_loop_t *loop, const char *service,
				   const struct ipc_async_ops *ops, void *arg);

/* Disconnect and free a; pending done() get -ECANCELED. NULL: no-op. */
void ipc_async_destroy(struct ipc_async *a);

/*
 * Queue req (its version and request_id are set here) to the server;
 * done(done_arg, ...) follows exactly once, from the loop (unless this
 * returns an error). Never blocks. Returns 0 queued to the server;
 * -EAGAIN window, bulk lane or request ring full (caller keeps it,
 * retries later: the bulk lane frees as answers come, before their done());
 * -ENOTCONN; -EMSGSIZE; -EINVAL (req does not encode, done is NULL).
 */
int ipc_async_send(struct ipc_async *a, const struct wire_ctl_msg *req,
		   ipc_done_fn done, void *done_arg);

/* Connected now (the last up() has had no down() since). */
bool ipc_async_connected(const struct ipc_async *a);

/* Requests sent and not yet answered, timed out or failed. */
unsigned ipc_async_inflight(const struct ipc_async *a);

/* Entries of the bulk requests in flight (see the bulk lane above). */
unsigned ipc_async_bulk_inflight(const struct ipc_async *a);

/*
 * The entries the bulk lane holds at most now, from the server's measured
 * time per entry (IPC_ASYNC_BULK_SAMPLE until measured); one bulk request
 * of any size goes when none is in flight.
 */
unsigned ipc_async_bulk_limit(const struct ipc_async *a);

/* The entries req carries as a bulk request: 0 when it is not bulk. */
unsigned ipc_async_bulk_entries(const struct wire_ctl_msg *req);

/* The service a speaks to. */
const char *ipc_async_service(const struct ipc_async *a);

/* a's counters; valid until destroy, read on the loop's thread. */
const struct ipc_async_counters *ipc_async_counters(const struct ipc_async *a);

#endif /* MAGLB_LIB_IPC_CLIENT_H */
