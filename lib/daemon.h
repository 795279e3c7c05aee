/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What maglb's daemons (maglb-dataplane, maglb-syncd) share besides IPC,
 * written once: their logging, their signals on a qb_loop, and the group
 * that may use their IPC services.
 */
#ifndef MAGLB_LIB_DAEMON_H
#define MAGLB_LIB_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <qb/qbloop.h>

/* The system group whose members may use the IPC services (and maglbctl). */
#define DAEMON_IPC_GROUP "maglb"

/*
 * qb_log for program prog (e.g. "maglb-dataplane"), from LOG_INFO up:
 * syslog (journald) with facility LOG_DAEMON for a daemon, or stderr with
 * a "prog: " prefix in the foreground and for the front-end modes. Undone
 * by qb_log_fini().
 */
void daemon_log_init(const char *prog, bool foreground);

/*
 * The gid of DAEMON_IPC_GROUP, for ipc_server_create(); (gid_t)-1 (root
 * only) when the system has no such group.
 */
gid_t daemon_ipc_group(void);

/* CLOCK_MONOTONIC in ms, wrapping: timers and timeouts (compare by difference). */
static inline uint32_t
daemon_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

/* CLOCK_MONOTONIC in µs: durations within one process. */
static inline uint64_t
daemon_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* CLOCK_THREAD_CPUTIME_ID in µs: the CPU this thread used, not the wall. */
static inline uint64_t
daemon_thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* CLOCK_REALTIME in µs: stamps other nodes read (lag, restarts). */
static inline uint64_t
daemon_real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * A timer on loop that does not spin: a timerfd whose expiry calls
 * fn(fd, revents, arg) at priority prio. libqb's own timers wait in whole
 * milliseconds and spin on epoll_wait(0) through the last one, which makes
 * a 1 ms timer a busy loop. Armed every period_ms from now, or not at all
 * for 0 (daemon_timer_arm()). Returns the fd, or -errno.
 */
int daemon_timer_create(qb_loop_t *loop, enum qb_loop_priority prio, uint32_t period_ms,
			qb_loop_poll_dispatch_fn fn, void *arg);

/* Fire once, ms from now, or every ms (repeat); 0 disarms. 0 or -errno. */
int daemon_timer_arm(int fd, uint32_t ms, bool repeat);

/*
 * In fn: whether the timer fired (its expirations read, however many: a
 * late timer is one call), false when woken for nothing.
 */
bool daemon_timer_fired(int fd);

/* Take fd off loop and close it; fd < 0 is a no-op. */
void daemon_timer_destroy(qb_loop_t *loop, int fd);

struct daemon_signals;

/* SIGHUP's work: reload the config (logging why not, if it cannot). */
typedef void (*daemon_reload_fn)(void *arg);

/*
 * Signals on loop: SIGTERM and SIGINT stop it (qb_loop_stop(), logged),
 * SIGHUP calls reload(arg) on the loop's thread (NULL: SIGHUP is ignored).
 * Returns the handlers, or NULL when out of memory; remove them with
 * daemon_signals_destroy() before the loop is destroyed.
 */
struct daemon_signals *daemon_signals_create(qb_loop_t *loop,
					     daemon_reload_fn reload, void *arg);

/* Remove the handlers and free s. NULL is a no-op. */
void daemon_signals_destroy(struct daemon_signals *s);

#endif /* MAGLB_LIB_DAEMON_H */
