/* SPDX-License-Identifier: BSD-3-Clause */
#include "membership/hooks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

const char *const hooks_counter_names[HOOKS_COUNTER_MAX] = {
#define HOOKS_NAME_(id, name, text) [HOOKS_##id] = #name,
	HOOKS_COUNTERS(HOOKS_NAME_)
#undef HOOKS_NAME_
};

const char *const hooks_counter_descriptions[HOOKS_COUNTER_MAX] = {
#define HOOKS_TEXT_(id, name, text) [HOOKS_##id] = text,
	HOOKS_COUNTERS(HOOKS_TEXT_)
#undef HOOKS_TEXT_
};

/* What an epoll event is about: the low bits of its data, the child's
 * generation above them. */
enum hooks_tag {
	HOOKS_TAG_TIMER = 0,
	HOOKS_TAG_PIDFD,
	HOOKS_TAG_OUTPUT,
	HOOKS_TAG_MAX
};

enum {
	HOOKS_TAG_BITS = 2,
	HOOKS_READ_MAX = 64 * 1024,     /* output bytes read a wake-up */
	HOOKS_EVENTS_MAX = 8,
};

/* A running hook's stage: signals sent past its timeout. */
enum hooks_phase {
	HOOKS_PHASE_RUNNING = 0,
	HOOKS_PHASE_TERM,               /* SIGTERM sent */
	HOOKS_PHASE_KILL,               /* SIGKILL sent */
	HOOKS_PHASE_MAX
};

/* What a request hands every hook of its run (copies). */
struct hooks_request {
	char *arg1;
	char **envp;                    /* NULL-terminated */
};

struct hooks_child {
	pid_t pid;                      /* 0: none running */
	int pidfd;
	int out;                        /* read end of its stdout+stderr; -1 at EOF */
	const char *name;               /* in the run's names */
	enum hooks_phase phase;
	char line[HOOKS_LINE_MAX + 1];
	size_t len;
	bool overlong;                  /* the line being read passed HOOKS_LINE_MAX */
};

struct hooks_run {
	struct hooks_request req;
	char *dir;                      /* as it was when the run started */
	uint32_t timeout_ms;
	char **names;                   /* sorted */
	size_t n_names, next;
	char *path;                     /* of the hook running */
	uint64_t counters[HOOKS_COUNTER_MAX];
};

struct hooks {
	char *dir;
	uint32_t timeout_ms;
	struct hooks_ops ops;
	void *arg;
	int epfd, timerfd;
	uint64_t deadline_ms;           /* the timer's, CLOCK_MONOTONIC; 0 disarmed */
	uint64_t generation;            /* of child, so a predecessor's events are told apart */
	struct hooks_run *run;
	struct hooks_request *waiting;
	struct hooks_child child;
	uint64_t counters[HOOKS_COUNTER_MAX];
	uint64_t last_run[HOOKS_COUNTER_MAX];
};

__attribute__((format(printf, 3, 4)))
static void
hooks_log(const struct hooks *h, int priority, const char *fmt, ...)
{
	char buf[HOOKS_LINE_MAX + NAME_MAX + 64];
	va_list ap;

	if (h->ops.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	h->ops.log(h->arg, priority, buf);
}

static void
hooks_count(struct hooks *h, enum hooks_counter c)
{
	h->counters[c]++;
	if (h->run != NULL)
		h->run->counters[c]++;
}

static uint64_t
hooks_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Arm the timer for at_ms (CLOCK_MONOTONIC), or disarm it (0). */
static void
hooks_timer_set(struct hooks *h, uint64_t at_ms)
{
	struct itimerspec its = {
		.it_value = {
			.tv_sec = (time_t)(at_ms / 1000),
			.tv_nsec = (long)(at_ms % 1000) * 1000000,
		},
	};

	h->deadline_ms = at_ms;
	/* Cannot fail with a valid fd and these values. */
	(void)timerfd_settime(h->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* ------------------------------------------------------------ requests */

static void
hooks_request_clear(struct hooks_request *q)
{
	for (char **e = q->envp; e != NULL && *e != NULL; e++)
		free(*e);
	free(q->envp);
	free(q->arg1);
}

static void
hooks_request_free(struct hooks_request *q)
{
	if (q == NULL)
		return;
	hooks_request_clear(q);
	free(q);
}

static bool
hooks_env_same_key(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");

	return n == strcspn(b, "=") && memcmp(a, b, n) == 0;
}

/* Whether an entry of env, from index from on, has the KEY of e. */
static bool
hooks_env_shadowed(const char *e, const char *const *env, size_t from)
{
	for (size_t j = from; env != NULL && env[j] != NULL; j++)
		if (hooks_env_same_key(e, env[j]))
			return true;
	return false;
}

/* environ without the keys env sets, then env: copies into q->envp. */
static int
hooks_env_build(struct hooks_request *q, const char *const *env)
{
	size_t n_env = 0, n_daemon = 0, k = 0;

	for (; env != NULL && env[n_env] != NULL; n_env++) {
		const char *eq = strchr(env[n_env], '=');

		if (eq == NULL || eq == env[n_env])
			return -EINVAL;
	}
	while (environ != NULL && environ[n_daemon] != NULL)
		n_daemon++;
	q->envp = calloc(n_daemon + n_env + 1, sizeof(*q->envp));
	if (q->envp == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n_daemon; i++) {
		if (hooks_env_shadowed(environ[i], env, 0))
			continue;
		if ((q->envp[k++] = strdup(environ[i])) == NULL)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n_env; i++) {
		if (hooks_env_shadowed(env[i], env, i + 1))
			continue;
		if ((q->envp[k++] = strdup(env[i])) == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* ---------------------------------------------------------- directory */

/* run-parts' rule, and no package manager's leftovers. */
static bool
hooks_name_ok(const char *name)
{
	static const char *const leftovers[] = {
		".dpkg-old", ".dpkg-dist", ".dpkg-new", ".dpkg-tmp",
		".rpmsave", ".rpmnew", ".rpmorig",
	};
	size_t n = strlen(name);

	if (n == 0 || name[0] == '.')
		return false;
	if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789_.-") != n)
		return false;
	for (size_t i = 0; i < sizeof(leftovers) / sizeof(leftovers[0]); i++) {
		size_t l = strlen(leftovers[i]);

		if (n > l && strcmp(name + n - l, leftovers[i]) == 0)
			return false;
	}
	return true;
}

static int
hooks_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of r->dir that may be hooks, sorted, into r->names. */
static int
hooks_dir_read(struct hooks_run *r)
{
	size_t cap = 0;
	struct dirent *e;
	DIR *d = opendir(r->dir);
	int rc = 0;

	if (d == NULL)
		return -errno;
	for (errno = 0; (e = readdir(d)) != NULL; errno = 0) {
		if (!hooks_name_ok(e->d_name))
			continue;
		if (r->n_names == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **v = realloc(r->names, ncap * sizeof(*v));

			if (v == NULL) {
				rc = -ENOMEM;
				break;
			}
			r->names = v;
			cap = ncap;
		}
		if ((r->names[r->n_names] = strdup(e->d_name)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		r->n_names++;
	}
	if (rc == 0 && errno != 0)
		rc = -errno;
	closedir(d);
	if (r->n_names > 1)
		qsort(r->names, r->n_names, sizeof(*r->names), hooks_name_cmp);
	return rc;
}

/* -------------------------------------------------------------- output */

static void
hooks_line_emit(struct hooks *h)
{
	struct hooks_child *c = &h->child;

	if (c->len == 0 && !c->overlong)
		return;
	for (size_t i = 0; i < c->len; i++)
		if ((unsigned char)c->line[i] < 0x20 || c->line[i] == 0x7f)
			c->line[i] = '?';
	c->line[c->len] = '\0';
	if (h->run->counters[HOOKS_OUTPUT_LINES] < HOOKS_RUN_LINES_MAX) {
		hooks_count(h, HOOKS_OUTPUT_LINES);
		hooks_log(h, LOG_INFO, "hook %s: %s%s", c->name, c->line,
			  c->overlong ? " [cut]" : "");
	} else {
		if (h->run->counters[HOOKS_OUTPUT_DROPPED] == 0)
			hooks_log(h, LOG_WARNING, "hooks: more than %d lines of output in one "
				  "run; the rest is not logged", HOOKS_RUN_LINES_MAX);
		hooks_count(h, HOOKS_OUTPUT_DROPPED);
	}
	c->len = 0;
	c->overlong = false;
}

static void
hooks_output_feed(struct hooks *h, const char *buf, size_t n)
{
	struct hooks_child *c = &h->child;

	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n')
			hooks_line_emit(h);
		else if (c->len < HOOKS_LINE_MAX)
			c->line[c->len++] = buf[i];
		else
			c->overlong = true;
	}
}

static void
hooks_output_close(struct hooks *h)
{
	struct hooks_child *c = &h->child;

	if (c->out < 0)
		return;
	epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->out, NULL);
	close(c->out);
	c->out = -1;
	hooks_line_emit(h);
}

/* Read what the child wrote, up to HOOKS_READ_MAX bytes; close at EOF. */
static void
hooks_output_read(struct hooks *h)
{
	char buf[4096];
	size_t total = 0;

	while (h->child.out >= 0 && total < HOOKS_READ_MAX) {
		ssize_t n = read(h->child.out, buf, sizeof(buf));

		if (n > 0) {
			hooks_output_feed(h, buf, (size_t)n);
			total += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			return;
		} else {
			hooks_output_close(h);
		}
	}
}

/* ------------------------------------------------------------ children */

static int
hooks_fd_above_stdio(int fd)
{
	int nfd;

	if (fd > STDERR_FILENO)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return nfd;
}

/* A pipe for the child's output, both ends CLOEXEC and above 2, the read
 * end non-blocking. */
static int
hooks_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	p[0] = hooks_fd_above_stdio(p[0]);
	p[1] = hooks_fd_above_stdio(p[1]);
	if (p[0] < 0 || p[1] < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) {
		int rc = -errno;

		if (p[0] >= 0)
			close(p[0]);
		if (p[1] >= 0)
			close(p[1]);
		return rc;
	}
	return 0;
}

/* posix_spawn the hook at path: see the header for what it gets. Returns
 * an errno value (posix_spawn's convention). */
static int
hooks_spawn(pid_t *pid, char *path, char *arg1, char **envp, int out)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *argv[] = {path, arg1, NULL};
	sigset_t none, all;
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawnattr_init(&at)) != 0)
		goto out_fa;
	if ((rc = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
						   O_RDONLY, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, out, STDERR_FILENO)) != 0 ||
	    (rc = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1)) != 0 ||
	    (rc = posix_spawnattr_setpgroup(&at, 0)) != 0 ||
	    (rc = posix_spawnattr_setsigmask(&at, &none)) != 0 ||
	    (rc = posix_spawnattr_setsigdefault(&at, &all)) != 0 ||
	    (rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
					   POSIX_SPAWN_SETSIGMASK |
					   POSIX_SPAWN_SETSIGDEF)) != 0)
		goto out_at;
	rc = posix_spawn(pid, path, &fa, &at, argv, envp);
out_at:
	posix_spawnattr_destroy(&at);
out_fa:
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/* sig to the hook's process group; to the hook alone if that fails. The
 * hook is not reaped yet, so its pid (and group id) cannot be reused. */
static void
hooks_child_signal(struct hooks *h, int sig)
{
	if (kill(-h->child.pid, sig) != 0)
		(void)syscall(SYS_pidfd_send_signal, h->child.pidfd, sig, NULL, 0);
}

static int
hooks_epoll_add(struct hooks *h, int fd, enum hooks_tag tag)
{
	struct epoll_event ev = {
		.events = EPOLLIN,
		.data.u64 = h->generation << HOOKS_TAG_BITS | tag,
	};

	return epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

/* Whether path is a hook to run; logs why not when an operator may care. */
static bool
hooks_runnable(struct hooks *h, const char *name, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return false;   /* removed since the directory was read */
		hooks_log(h, LOG_WARNING, "hook %s: %s", name, strerror(errno));
		hooks_count(h, HOOKS_SPAWN_ERRORS);
		return false;
	}
	if (!S_ISREG(st.st_mode))
		return false;
	if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0) {
		hooks_log(h, LOG_NOTICE, "hook %s: not executable, skipped", name);
		return false;
	}
	return true;
}

/* Start the hook name of the run; 0 when it runs, else -errno (skipped,
 * logged and counted as it deserves). */
static int
hooks_child_start(struct hooks *h, const char *name)
{
	struct hooks_run *r = h->run;
	struct hooks_child *c = &h->child;
	size_t len = strlen(r->dir) + strlen(name) + 2;
	int p[2], pidfd, rc;
	pid_t pid;

	free(r->path);
	if ((r->path = malloc(len)) == NULL) {
		hooks_log(h, LOG_WARNING, "hook %s: out of memory", name);
		hooks_count(h, HOOKS_SPAWN_ERRORS);
		return -ENOMEM;
	}
	snprintf(r->path, len, "%s/%s", r->dir, name);
	if (!hooks_runnable(h, name, r->path))
		return -ENOENT;
	if ((rc = hooks_pipe(p)) != 0) {
		hooks_log(h, LOG_WARNING, "hook %s: cannot start: pipe: %s", name,
			  strerror(-rc));
		hooks_count(h, HOOKS_SPAWN_ERRORS);
		return rc;
	}
	rc = hooks_spawn(&pid, r->path, r->req.arg1, r->req.envp, p[1]);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		hooks_log(h, LOG_WARNING, "hook %s: cannot start: %s", name, strerror(rc));
		hooks_count(h, HOOKS_SPAWN_ERRORS);
		return -rc;
	}
	h->generation++;
	*c = (struct hooks_child){ .pid = pid, .pidfd = -1, .out = p[0], .name = name };
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	rc = pidfd < 0 ? -errno : 0;
	if (rc == 0) {
		c->pidfd = pidfd;
		rc = hooks_epoll_add(h, pidfd, HOOKS_TAG_PIDFD);
	}
	if (rc == 0)
		rc = hooks_epoll_add(h, p[0], HOOKS_TAG_OUTPUT);
	if (rc != 0) {
		/* Not watchable: stop it now rather than lose track of it. */
		hooks_log(h, LOG_WARNING, "hook %s: cannot watch pid %d: %s", name, (int)pid,
			  strerror(-rc));
		hooks_count(h, HOOKS_SPAWN_ERRORS);
		kill(-pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (pidfd >= 0)
			close(pidfd);
		close(p[0]);
		*c = (struct hooks_child){ .pidfd = -1, .out = -1 };
		return rc;
	}
	hooks_count(h, HOOKS_STARTED);
	hooks_log(h, LOG_DEBUG, "hook %s: started, pid %d", name, (int)pid);
	hooks_timer_set(h, hooks_now_ms() + r->timeout_ms);
	return 0;
}

static void hooks_run_next(struct hooks *h);

/* How the child ended: counted and logged. */
static void
hooks_child_judge(struct hooks *h, pid_t w, int status)
{
	struct hooks_child *c = &h->child;

	if (c->phase != HOOKS_PHASE_RUNNING)
		return;                 /* counted and logged as a timeout */
	if (w != c->pid) {
		hooks_log(h, LOG_WARNING, "hook %s: exit status lost: %s", c->name,
			  w < 0 ? strerror(errno) : "not reaped");
		hooks_count(h, HOOKS_FAILED);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		hooks_log(h, LOG_DEBUG, "hook %s: exited 0", c->name);
		hooks_count(h, HOOKS_OK);
	} else if (WIFEXITED(status)) {
		hooks_log(h, LOG_WARNING, "hook %s: failed, exit status %d", c->name,
			  WEXITSTATUS(status));
		hooks_count(h, HOOKS_FAILED);
	} else {
		hooks_log(h, LOG_WARNING, "hook %s: failed, killed by signal %d (%s)", c->name,
			  WTERMSIG(status), strsignal(WTERMSIG(status)));
		hooks_count(h, HOOKS_FAILED);
	}
}

/* The child's pidfd is readable: it has exited. Reap it, take the rest of
 * its output, go on with the run. */
static void
hooks_child_exited(struct hooks *h)
{
	struct hooks_child *c = &h->child;
	int status = 0;
	pid_t w;

	/* Whatever a timed-out hook left in its group goes with it. */
	if (c->phase != HOOKS_PHASE_RUNNING)
		kill(-c->pid, SIGKILL);
	/* WNOHANG: where SIGCHLD is ignored the kernel reaped it already. */
	do
		w = waitpid(c->pid, &status, WNOHANG);
	while (w < 0 && errno == EINTR);
	hooks_output_read(h);
	hooks_output_close(h);
	epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
	close(c->pidfd);
	c->pidfd = -1;
	hooks_timer_set(h, 0);
	hooks_child_judge(h, w, status);
	c->pid = 0;
	hooks_run_next(h);
}

/* The timer fired with a child running: past its timeout. */
static void
hooks_child_overdue(struct hooks *h)
{
	struct hooks_child *c = &h->child;

	switch (c->phase) {
	case HOOKS_PHASE_RUNNING:
		hooks_log(h, LOG_WARNING, "hook %s: timed out after %" PRIu32 " ms: SIGTERM",
			  c->name, h->run->timeout_ms);
		hooks_count(h, HOOKS_TIMEOUTS);
		hooks_child_signal(h, SIGTERM);
		c->phase = HOOKS_PHASE_TERM;
		hooks_timer_set(h, hooks_now_ms() + HOOKS_KILL_DELAY_MS);
		break;
	case HOOKS_PHASE_TERM:
		hooks_log(h, LOG_WARNING, "hook %s: still running %d ms after SIGTERM: SIGKILL",
			  c->name, HOOKS_KILL_DELAY_MS);
		hooks_child_signal(h, SIGKILL);
		c->phase = HOOKS_PHASE_KILL;
		break;
	case HOOKS_PHASE_KILL:
	case HOOKS_PHASE_MAX:
		break;
	}
}

/* ---------------------------------------------------------------- runs */

static void
hooks_run_free(struct hooks_run *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_names; i++)
		free(r->names[i]);
	free(r->names);
	free(r->path);
	free(r->dir);
	hooks_request_clear(&r->req);
	free(r);
}

static void
hooks_run_finish(struct hooks *h)
{
	struct hooks_run *r = h->run;
	const uint64_t *n = r->counters;

	hooks_log(h, LOG_INFO, "hooks: run for %s done: %" PRIu64 " started, %" PRIu64 " ok, "
		  "%" PRIu64 " failed, %" PRIu64 " timed out, %" PRIu64 " not started",
		  r->req.arg1 ? r->req.arg1 : "(none)", n[HOOKS_STARTED], n[HOOKS_OK],
		  n[HOOKS_FAILED], n[HOOKS_TIMEOUTS], n[HOOKS_SPAWN_ERRORS]);
	memcpy(h->last_run, r->counters, sizeof(h->last_run));
	/* The callback may ask for the next run: this one is over for it. */
	h->run = NULL;
	if (h->waiting != NULL)
		hooks_timer_set(h, hooks_now_ms());
	if (h->ops.done != NULL)
		h->ops.done(h->arg, r->req.arg1, h->last_run);
	hooks_run_free(r);
}

/* Start the run's next hook that can start, or end the run. */
static void
hooks_run_next(struct hooks *h)
{
	struct hooks_run *r = h->run;

	while (r->next < r->n_names)
		if (hooks_child_start(h, r->names[r->next++]) == 0)
			return;
	hooks_run_finish(h);
}

static void
hooks_run_start(struct hooks *h)
{
	struct hooks_request *q = h->waiting;
	struct hooks_run *r = calloc(1, sizeof(*r));
	int rc;

	h->waiting = NULL;
	if (r == NULL || (r->dir = strdup(h->dir)) == NULL) {
		hooks_log(h, LOG_ERR, "hooks: out of memory: the run for %s is dropped",
			  q->arg1 ? q->arg1 : "(none)");
		free(r);
		hooks_request_free(q);
		return;
	}
	r->req = *q;
	free(q);
	r->timeout_ms = h->timeout_ms;
	h->run = r;
	hooks_count(h, HOOKS_RUNS);
	rc = hooks_dir_read(r);
	if (rc != 0) {
		hooks_log(h, LOG_WARNING, "hooks: cannot read %s: %s", r->dir, strerror(-rc));
		hooks_count(h, HOOKS_DIR_ERRORS);
		hooks_run_finish(h);
		return;
	}
	hooks_log(h, LOG_DEBUG, "hooks: run for %s: %zu name(s) in %s",
		  r->req.arg1 ? r->req.arg1 : "(none)", r->n_names, r->dir);
	hooks_run_next(h);
}

static void
hooks_on_timer(struct hooks *h)
{
	uint64_t ticks;

	while (read(h->timerfd, &ticks, sizeof(ticks)) < 0 && errno == EINTR)
		;
	/* A timer re-armed since it fired has nothing to say yet. */
	if (h->deadline_ms == 0 || hooks_now_ms() < h->deadline_ms)
		return;
	h->deadline_ms = 0;
	if (h->child.pid != 0)
		hooks_child_overdue(h);
	else if (h->run == NULL && h->waiting != NULL)
		hooks_run_start(h);
}

/* ----------------------------------------------------------------- API */

struct hooks *
hooks_create(const char *dir, uint32_t timeout_ms, const struct hooks_ops *ops, void *arg)
{
	struct hooks *h = calloc(1, sizeof(*h));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = HOOKS_TAG_TIMER };

	if (h == NULL) {
		if (ops != NULL && ops->log != NULL)
			ops->log(arg, LOG_ERR, "hooks: out of memory");
		return NULL;
	}
	h->epfd = h->timerfd = -1;
	h->child.out = h->child.pidfd = -1;
	if (ops != NULL)
		h->ops = *ops;
	h->arg = arg;
	h->timeout_ms = timeout_ms;
	if (dir == NULL || timeout_ms == 0) {
		hooks_log(h, LOG_ERR, "hooks: %s", dir == NULL ? "no directory" :
			  "a timeout of 0 ms");
		goto fail;
	}
	if ((h->dir = strdup(dir)) == NULL) {
		hooks_log(h, LOG_ERR, "hooks: out of memory");
		goto fail;
	}
	if ((h->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (h->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0 ||
	    epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->timerfd, &ev) != 0) {
		hooks_log(h, LOG_ERR, "hooks: cannot set up the event set: %s", strerror(errno));
		goto fail;
	}
	return h;
fail:
	hooks_destroy(h);
	return NULL;
}

/* hooks_destroy()'s end of a running hook: SIGTERM, a grace period,
 * SIGKILL to whatever is left of its group, reaped. */
static void
hooks_child_stop(struct hooks *h)
{
	struct hooks_child *c = &h->child;
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
	uint64_t until = hooks_now_ms() + HOOKS_KILL_DELAY_MS, now;

	hooks_child_signal(h, SIGTERM);
	while ((now = hooks_now_ms()) < until &&
	       poll(&p, 1, (int)(until - now)) < 0 && errno == EINTR)
		;
	hooks_child_signal(h, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->pid = 0;
}

void
hooks_destroy(struct hooks *h)
{
	if (h == NULL)
		return;
	if (h->child.pid != 0)
		hooks_child_stop(h);
	if (h->child.pidfd >= 0)
		close(h->child.pidfd);
	if (h->child.out >= 0)
		close(h->child.out);
	hooks_run_free(h->run);
	hooks_request_free(h->waiting);
	if (h->timerfd >= 0)
		close(h->timerfd);
	if (h->epfd >= 0)
		close(h->epfd);
	free(h->dir);
	free(h);
}

int
hooks_fd(const struct hooks *h)
{
	return h->epfd;
}

void
hooks_dispatch(struct hooks *h)
{
	struct epoll_event ev[HOOKS_EVENTS_MAX];
	int n = epoll_wait(h->epfd, ev, HOOKS_EVENTS_MAX, 0);

	for (int i = 0; i < n; i++) {
		enum hooks_tag tag = ev[i].data.u64 & ((1u << HOOKS_TAG_BITS) - 1);
		uint64_t gen = ev[i].data.u64 >> HOOKS_TAG_BITS;

		if (tag == HOOKS_TAG_TIMER) {
			hooks_on_timer(h);
			continue;
		}
		/* An earlier child's, reaped by an event of this batch. */
		if (h->child.pid == 0 || gen != h->generation)
			continue;
		if (tag == HOOKS_TAG_OUTPUT)
			hooks_output_read(h);
		else if (tag == HOOKS_TAG_PIDFD)
			hooks_child_exited(h);
	}
}

int
hooks_run(struct hooks *h, const char *arg1, const char *const *env)
{
	struct hooks_request *q = calloc(1, sizeof(*q));
	int rc;

	if (q == NULL)
		return -ENOMEM;
	if (arg1 != NULL && (q->arg1 = strdup(arg1)) == NULL) {
		hooks_request_free(q);
		return -ENOMEM;
	}
	if ((rc = hooks_env_build(q, env)) != 0) {
		hooks_request_free(q);
		return rc;
	}
	if (h->waiting != NULL) {
		hooks_request_free(h->waiting);
		hooks_count(h, HOOKS_COALESCED);
	}
	h->waiting = q;
	/* Started from the loop, so that no callback runs in the caller's frame. */
	if (h->run == NULL)
		hooks_timer_set(h, hooks_now_ms());
	return 0;
}

int
hooks_set(struct hooks *h, const char *dir, uint32_t timeout_ms)
{
	char *d;

	if (dir == NULL || timeout_ms == 0)
		return -EINVAL;
	if ((d = strdup(dir)) == NULL)
		return -ENOMEM;
	free(h->dir);
	h->dir = d;
	h->timeout_ms = timeout_ms;
	return 0;
}

bool
hooks_busy(const struct hooks *h)
{
	return h->run != NULL || h->waiting != NULL;
}

const uint64_t *
hooks_counters(const struct hooks *h)
{
	return h->counters;
}

const uint64_t *
hooks_last_run(const struct hooks *h)
{
	return h->last_run;
}
