/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The role-change hook runner of maglb-syncd: when this node's role
 * changes, every executable of a directory runs, one after another, with
 * the new role as its argument and the details in its environment
 * (packaging/hooks/README.md is the hooks' side of the contract).
 *
 * It lives in the daemon's single-threaded loop and never blocks it: the
 * caller polls one descriptor (hooks_fd()) and calls hooks_dispatch() when
 * it is readable; children are spawned, watched (pidfds), timed (a
 * timerfd) and their output read from there.
 *
 * A run: the directory is read when the run starts; the names that pass
 * run-parts' rule (only [A-Za-z0-9_.-], not starting with '.'), minus the
 * leftovers of package managers (*.dpkg-old, -dist, -new, -tmp, *.rpmsave,
 * *.rpmnew, *.rpmorig), are sorted in byte order, and each one that is a
 * regular file (symbolic links followed) with an execute bit runs in turn:
 *
 *   argv   {DIR/NAME, arg1, NULL}
 *   envp   the daemon's environment, then env's "KEY=VALUE" over it
 *   stdin  /dev/null; stdout and stderr: one pipe, logged line by line as
 *          "hook NAME: LINE" (at most HOOKS_LINE_MAX bytes a line and
 *          HOOKS_RUN_LINES_MAX lines a run; the rest is read and counted)
 *   fds    nothing else (everything above 2 is closed)
 *   group  a process group of its own, with default signal dispositions
 *          and an empty signal mask
 *
 * A hook still running timeout_ms after its start gets SIGTERM, and
 * SIGKILL HOOKS_KILL_DELAY_MS later, each sent to its process group (so
 * what it started in the foreground or background goes too); it counts as
 * a timeout and the run goes on with the next hook. A hook that exits
 * non-zero or dies of a signal counts as failed, and the run goes on too.
 * A hook is done when it exits: processes it left behind holding its
 * output pipe do not hold up the run.
 *
 * Runs never overlap. A request while a run is in progress waits for it;
 * when several wait, only the newest is kept (a role that changed twice
 * during a run needs only its final state announced; COALESCED counts the
 * requests replaced).
 *
 * Logging goes through ops->log (the daemon's is qb_log): INFO the end of
 * a run (its tally) and the hooks' output, WARNING a hook that failed,
 * timed out or could not start, and a directory that could not be read
 * (once a run), NOTICE a file skipped for lacking an execute bit, DEBUG
 * the start of a run and each hook's start and clean exit.
 *
 * Single-threaded: call every function from the loop's thread; callbacks
 * run from hooks_dispatch() only, never from inside hooks_run().
 * Linux 5.3 or later (pidfd_open()).
 */
#ifndef MAGLB_MEMBERSHIP_HOOKS_H
#define MAGLB_MEMBERSHIP_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

enum {
	HOOKS_KILL_DELAY_MS = 1000,     /* SIGTERM to SIGKILL */
	HOOKS_LINE_MAX = 512,           /* bytes of one output line logged */
	HOOKS_RUN_LINES_MAX = 200,      /* output lines logged per run */
};

/* X(ENUM, name, description). */
#define HOOKS_COUNTERS(X) \
	X(RUNS, runs, "runs started") \
	X(STARTED, hooks_started, "hooks started") \
	X(OK, ok, "hooks that exited 0") \
	X(FAILED, failed, "hooks that exited non-zero or died of a signal (timeouts aside)") \
	X(TIMEOUTS, timeouts, "hooks stopped past the timeout (SIGTERM, then SIGKILL)") \
	X(SPAWN_ERRORS, spawn_errors, "hooks that could not be started") \
	X(DIR_ERRORS, dir_errors, "runs whose directory could not be read") \
	X(COALESCED, coalesced, "waiting requests replaced by a newer one") \
	X(OUTPUT_LINES, output_lines, "lines of hook output logged") \
	X(OUTPUT_DROPPED, output_dropped, "lines of hook output past the per-run bound, not logged")

enum hooks_counter {
#define HOOKS_COUNTER_ENUM_(id, name, text) HOOKS_##id,
	HOOKS_COUNTERS(HOOKS_COUNTER_ENUM_)
#undef HOOKS_COUNTER_ENUM_
	HOOKS_COUNTER_MAX
};

extern const char *const hooks_counter_names[HOOKS_COUNTER_MAX];
extern const char *const hooks_counter_descriptions[HOOKS_COUNTER_MAX];

/* The caller's side; each member may be NULL. */
struct hooks_ops {
	/* One log line (no newline) at a syslog priority (LOG_ERR...). */
	void (*log)(void *arg, int priority, const char *line);
	/*
	 * A run ended; run holds its HOOKS_COUNTER_MAX counters (RUNS is 1).
	 * May call hooks_run() and hooks_set(), not hooks_destroy().
	 */
	void (*done)(void *arg, const char *arg1, const uint64_t *run);
};

struct hooks;

/*
 * A runner of the executables in dir (copied; it need not exist yet),
 * each given timeout_ms (>= 1). ops (copied) and arg are passed back to
 * the callbacks. Returns NULL, after logging why, when timeout_ms is 0 or
 * a descriptor or memory could not be had.
 */
struct hooks *hooks_create(const char *dir, uint32_t timeout_ms, const struct hooks_ops *ops,
			   void *arg);

/*
 * Stop and free h: a running hook's group gets SIGTERM, then SIGKILL after
 * HOOKS_KILL_DELAY_MS if the hook has not exited, and the hook is reaped,
 * so this may block that long. A waiting request is dropped, and no
 * callback runs. NULL is a no-op.
 */
void hooks_destroy(struct hooks *h);

/*
 * The descriptor to poll for POLLIN (an epoll set, CLOEXEC; owned by h).
 * When it is readable, call hooks_dispatch().
 */
int hooks_fd(const struct hooks *h);

/* Start, watch and reap hooks, log their output, time them out; never
 * blocks. */
void hooks_dispatch(struct hooks *h);

/*
 * Ask for a run with arg1 (NULL: none) as every hook's argv[1] and env (a
 * NULL-terminated list of "KEY=VALUE", or NULL; a later entry wins over an
 * earlier one of the same KEY) added to the environment. Both are copied.
 * Returns at once: the run starts from the next hooks_dispatch(), or
 * after the one in progress. 0, -EINVAL (an env entry without '=' or with
 * an empty KEY) or -ENOMEM; on error no request is made.
 */
int hooks_run(struct hooks *h, const char *arg1, const char *const *env);

/*
 * A new directory and timeout (a config reload), from the next run on: a
 * run in progress keeps its own. 0, -EINVAL (timeout_ms 0) or -ENOMEM; on
 * error the old ones stay.
 */
int hooks_set(struct hooks *h, const char *dir, uint32_t timeout_ms);

/* Whether a run is in progress or waiting. */
bool hooks_busy(const struct hooks *h);

/* Totals since hooks_create(): HOOKS_COUNTER_MAX counters. */
const uint64_t *hooks_counters(const struct hooks *h);

/* The counters of the last run that ended (all 0 before one has). */
const uint64_t *hooks_last_run(const struct hooks *h);

#endif /* MAGLB_MEMBERSHIP_HOOKS_H */
