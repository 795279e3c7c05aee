/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemons' logging, signals and IPC group: see daemon.h. */
#include "lib/daemon.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <qb/qblog.h>

void
daemon_log_init(const char *prog, bool foreground)
{
	char format[128];

	qb_log_init(prog, LOG_DAEMON, LOG_INFO);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, foreground ? QB_FALSE : QB_TRUE);
	if (!foreground)
		return;
	qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*",
			  LOG_INFO);
	snprintf(format, sizeof(format), "%s: %%b", prog);
	qb_log_format_set(QB_LOG_STDERR, format);
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
}

gid_t
daemon_ipc_group(void)
{
	struct group *g = getgrnam(DAEMON_IPC_GROUP);

	return g != NULL ? g->gr_gid : (gid_t)-1;
}

static const int daemon_signal_list[] = { SIGTERM, SIGINT, SIGHUP };

enum { DAEMON_SIGNALS = sizeof(daemon_signal_list) / sizeof(daemon_signal_list[0]) };

struct daemon_signals {
	qb_loop_t *loop;
	daemon_reload_fn reload;
	void *arg;
	qb_loop_signal_handle handles[DAEMON_SIGNALS];
	bool added[DAEMON_SIGNALS];
};

static int32_t
daemon_on_signal(int32_t sig, void *data)
{
	struct daemon_signals *s = data;

	if (sig == SIGHUP) {
		qb_log(LOG_INFO, "signal %d: reloading", sig);
		if (s->reload != NULL)
			s->reload(s->arg);
		return 0;
	}
	qb_log(LOG_INFO, "signal %d: stopping", sig);
	qb_loop_stop(s->loop);
	return 0;
}

struct daemon_signals *
daemon_signals_create(qb_loop_t *loop, daemon_reload_fn reload, void *arg)
{
	struct daemon_signals *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->loop = loop;
	s->reload = reload;
	s->arg = arg;
	for (int i = 0; i < DAEMON_SIGNALS; i++) {
		s->added[i] = qb_loop_signal_add(loop, QB_LOOP_HIGH, daemon_signal_list[i],
						 s, daemon_on_signal, &s->handles[i]) == 0;
		if (!s->added[i]) {
			daemon_signals_destroy(s);
			return NULL;
		}
	}
	return s;
}

void
daemon_signals_destroy(struct daemon_signals *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < DAEMON_SIGNALS; i++)
		if (s->added[i])
			qb_loop_signal_del(s->loop, s->handles[i]);
	free(s);
}

int
daemon_timer_arm(int fd, uint32_t ms, bool repeat)
{
	const struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	const struct itimerspec its = { .it_value = t, .it_interval = repeat ? t : (struct timespec){ 0 } };

	return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

int
daemon_timer_create(qb_loop_t *loop, enum qb_loop_priority prio, uint32_t period_ms,
		    qb_loop_poll_dispatch_fn fn, void *arg)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = daemon_timer_arm(fd, period_ms, true);
	if (rc == 0)
		rc = qb_loop_poll_add(loop, prio, fd, POLLIN, arg, fn);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

bool
daemon_timer_fired(int fd)
{
	uint64_t expirations;

	return read(fd, &expirations, sizeof(expirations)) == sizeof(expirations);
}

void
daemon_timer_destroy(qb_loop_t *loop, int fd)
{
	if (fd < 0)
		return;
	qb_loop_poll_del(loop, fd);
	close(fd);
}
