/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Backend health probes, as maglb-syncd runs them inside its one event
 * loop: TCP connect and HTTP GET, non-blocking from end to end.
 *
 * The engine hands its caller one descriptor, an epoll set holding the
 * engine's sockets and one timerfd; the caller adds it to its loop for
 * POLLIN and calls probe_dispatch() whenever it is readable. Nothing here
 * blocks, sleeps, logs or allocates per probe: each dispatch takes at most
 * PROBE_EVENTS_MAX socket events and PROBE_DEADLINES_MAX due deadlines,
 * and leaves the descriptor readable when more is waiting, so a large set
 * shares the loop instead of holding it. Measured, 4000 TCP targets on
 * closed loopback ports every 200 ms (20,000 probes/s), on 2 loaded
 * cores: a dispatch took 30 us at the median, 170 us at p99, 1.3 ms at
 * most (a budget of 256 deadlines gave p99 2-7 ms, max 91 ms), and the
 * whole cost 55 % of one core, the kernel's TCP work on both ends included.
 *
 * Per target, a state machine with hysteresis:
 *
 *          `fall` failures in a row
 *      UP ---------------------------> DOWN
 *        <---------------------------
 *          `rise` successes in a row
 *
 * A target starts UP: a starting node must not black-hole traffic before
 * its first probes. A failure while UP and a success while DOWN only count
 * toward a transition, and the opposite result resets that count, so a
 * flapping backend stays where it is. Each transition calls
 * ops->changed() once.
 *
 * Schedule: every probed target has one deadline, the start of its next
 * probe while idle or the end of its timeout while a probe is in flight, so
 * a target never has two probes in flight and the engine never has more
 * sockets open than targets. Deadlines sit in a binary min-heap (O(log n)
 * a probe) behind the one timerfd; the engine is meant for thousands of
 * targets. A new target's first probe falls at a fixed offset into its
 * first interval, derived from its address, port and type, so a large
 * config does not probe everything at once. Probes start every
 * interval_ms from the previous start (or at once, when a probe took
 * longer than that).
 *
 * A probe succeeds when:
 *   TCP   the connect completes (SO_ERROR 0); refused, unreachable and
 *         the timeout fail;
 *   HTTP  after the connect, "GET <http_path> HTTP/1.0" with Host (the
 *         address, IPv6 in brackets), User-Agent maglb-syncd and
 *         Connection: close is sent, and the answer starts with a status
 *         line "HTTP/d.d NNN" whose NNN is 2xx or 3xx; another code, a
 *         malformed line, the end of the stream before the line, or the
 *         timeout fail. Only the first PROBE_STATUS_LEN bytes are read.
 * The connection is then closed with a reset (SO_LINGER 0): a probe every
 * interval would otherwise leave a TIME_WAIT socket on this node each time.
 *
 * When this node cannot open a probe (socket() fails with EMFILE, ENFILE,
 * ENOBUFS...; connect() finds no local port; epoll refuses the socket) the
 * backend is not to blame: the attempt counts as a local error, the
 * target's state and its run of results stay, and the next attempt is one
 * interval later.
 *
 * Threads: one. Every function, and ops->changed(), runs on the loop's
 * thread.
 */
#ifndef MAGLB_MEMBERSHIP_PROBE_H
#define MAGLB_MEMBERSHIP_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "proto/wire.h"

enum {
	PROBE_EVENTS_MAX = 64,          /* socket events handled a dispatch */
	PROBE_DEADLINES_MAX = 64,       /* due starts and timeouts a dispatch */
	PROBE_STATUS_LEN = 13,          /* "HTTP/1.1 200" and what follows it */
};

/*
 * Reasons a probe failed beside errno values (ETIMEDOUT for the timeout,
 * ECONNREFUSED...). They start above every errno of Linux (MAX_ERRNO is
 * 4095), so one int holds either.
 */
enum probe_error {
	PROBE_ERROR_HTTP_STATUS = 4096, /* status code not 2xx or 3xx */
	PROBE_ERROR_HTTP_MALFORMED,     /* the answer is no "HTTP/d.d NNN" */
	PROBE_ERROR_HTTP_EOF,           /* the stream ended before a status line */
	PROBE_ERROR_MAX
};

/* A short text for err (an errno value or an enum probe_error). */
const char *probe_strerror(int err);

struct probe_target {
	uint32_t id;                    /* the caller's key, reported back; unique */
	struct config_addr addr;        /* AF_INET or AF_INET6 */
	uint16_t port;                  /* host order; not 0 unless type is NONE */
	enum config_health_type type;   /* NONE: never probed, always up */
	char http_path[CONFIG_PATH_MAX]; /* HTTP: starts with '/', no space or control */
	uint32_t interval_ms;           /* >= 1: from one probe's start to the next */
	uint32_t timeout_ms;            /* >= 1: a probe not done by then fails */
	uint32_t rise;                  /* >= 1 successes in a row: DOWN to UP */
	uint32_t fall;                  /* >= 1 failures in a row: UP to DOWN */
};

/* One target's state and history, for the daemon's counters. */
struct probe_stats {
	bool up;
	uint64_t probes;                /* finished: successes + failures */
	uint64_t successes;
	uint64_t failures;              /* timeouts included */
	uint64_t timeouts;
	uint64_t local_errors;          /* attempts this node could not start */
	uint32_t successes_in_row;      /* 0 when the last probe failed */
	uint32_t failures_in_row;       /* 0 when the last probe passed */
	int last_error;                 /* of the last failure or local error; 0: none */
	uint16_t last_http_status;      /* of the last status line read; 0: none */
	uint32_t last_duration_us;      /* of the last finished probe (probes > 0) */
};

/* The engine's totals: X(ENUM, name, description). */
#define PROBE_COUNTERS(X) \
	X(STARTED, started, "probes started") \
	X(SUCCESSES, successes, "probes that passed") \
	X(FAILURES, failures, "probes that failed, timeouts included") \
	X(TIMEOUTS, timeouts, "probes unfinished within their timeout") \
	X(LOCAL_ERRORS, local_errors, "probes this node could not start (EMFILE, ...)") \
	X(WENT_DOWN, went_down, "transitions from up to down") \
	X(WENT_UP, went_up, "transitions from down to up")

enum probe_counter {
#define PROBE_COUNTER_ENUM_(id, name, text) PROBE_##id,
	PROBE_COUNTERS(PROBE_COUNTER_ENUM_)
#undef PROBE_COUNTER_ENUM_
	PROBE_COUNTER_MAX
};

extern const char *const probe_counter_names[PROBE_COUNTER_MAX];
extern const char *const probe_counter_descriptions[PROBE_COUNTER_MAX];

struct probe_counters {
	uint64_t counts[PROBE_COUNTER_MAX];
	/* gauges, as of now */
	uint64_t targets;
	uint64_t down;
	uint64_t in_flight;
	/*
	 * How long the finished probes took (successes and failures, from
	 * the start to the dispatch that ended it), by bucket of
	 * wire_probe_bucket_us[]: not cumulative, [i] above bound i - 1 and at
	 * most bound i, the last above every bound; and their sum.
	 */
	uint64_t durations[WIRE_PROBE_BUCKETS + 1];
	uint64_t duration_sum_us;
};

struct probe_ops {
	/*
	 * Target id went up or down. It may read the engine (probe_up(),
	 * probe_stats()) but not call probe_set_targets() or probe_destroy().
	 */
	void (*changed)(void *arg, uint32_t id, bool up);
};

struct probe;

/*
 * An engine with no targets; ops (copied; changed may be NULL) get arg.
 * Returns NULL with errno set when memory, epoll or a timerfd ran out.
 */
struct probe *probe_create(const struct probe_ops *ops, void *arg);

/* Close every socket and free p. NULL is a no-op. Not from changed(). */
void probe_destroy(struct probe *p);

/* The descriptor to poll for POLLIN; p owns it. */
int probe_fd(const struct probe *p);

/*
 * Work that is ready: finish the probes whose sockets answered, fail the
 * ones past their timeout, start the ones due, re-arm the timer. Call it
 * when probe_fd() is readable (a call when it is not is harmless). Never
 * blocks. Runs ops->changed() for each transition.
 */
void probe_dispatch(struct probe *p);

/*
 * Replace the whole set by t[0..n-1] (copied), at config load and reload.
 * A target whose address, port, type and (for HTTP) path match one of the
 * previous set keeps its state, counters and any probe in flight, under its
 * new id and with its new interval, timeout, rise and fall; when several
 * match, they pair in order. The others start fresh: up, no history, first
 * probe within their first interval. Targets leaving the set are dropped
 * with their sockets. No changed() call: read probe_up() after it.
 *
 * Returns 0; -EINVAL when a target breaks the rules above or two share an
 * id; -ENOMEM; -EBUSY from inside changed(). On error the previous set
 * stays as it was.
 */
int probe_set_targets(struct probe *p, const struct probe_target *t, size_t n);

/*
 * Whether target id is up. An id not in the set reads as up, like a
 * target that is not health-checked.
 */
bool probe_up(const struct probe *p, uint32_t id);

/* Target id's state and counters into *out: 0, or -ENOENT. */
int probe_stats(const struct probe *p, uint32_t id, struct probe_stats *out);

/* The engine's totals; valid until probe_destroy(). */
const struct probe_counters *probe_counters(const struct probe *p);

#endif /* MAGLB_MEMBERSHIP_PROBE_H */
