/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The role-change hook runner (membership/hooks.h), with real children:
 * each test writes shell scripts into a directory of its own and drives
 * the runner as the daemon's loop would, poll() on hooks_fd() then
 * hooks_dispatch(), until a condition holds or a deadline passes. Hooks
 * report through files under $HOOKS_TEST_DIR (the daemon's environment,
 * passed through) and through their output, which reaches the log
 * callback. HOOKS_TEST_VERBOSE=1 prints that log on stderr.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "membership/hooks.h"

enum {
	TIMEOUT_MS = 20000,             /* of a hook, unless a test says */
	AWAIT_MS = 15000,               /* of a condition: < TIMEOUT_MS */
	LOG_MAX = 1024,
};

/* What the runner told the test: its log and the runs that ended. */
struct capture {
	char *log[LOG_MAX];
	size_t n_log;
	char done_args[8][32];
	uint64_t done_runs[8][HOOKS_COUNTER_MAX];
	size_t n_done;
};

static struct capture cap;
static char tmp[64];                    /* this test's directory */
static char hooks_dir[96];              /* tmp/hooks.d */

static void
cap_log(void *arg, int priority, const char *line)
{
	(void)arg;
	if (getenv("HOOKS_TEST_VERBOSE") != NULL)
		fprintf(stderr, "log %d: %s\n", priority, line);
	if (cap.n_log < LOG_MAX)
		cap.log[cap.n_log++] = strdup(line);
}

static void
cap_done(void *arg, const char *arg1, const uint64_t *run)
{
	(void)arg;
	if (cap.n_done < 8) {
		snprintf(cap.done_args[cap.n_done], sizeof(cap.done_args[0]), "%s",
			 arg1 ? arg1 : "");
		memcpy(cap.done_runs[cap.n_done], run, sizeof(cap.done_runs[0]));
	}
	cap.n_done++;
}

static const struct hooks_ops ops = { .log = cap_log, .done = cap_done };

/* How many log lines contain text. */
static size_t
log_count(const char *text)
{
	size_t n = 0;

	for (size_t i = 0; i < cap.n_log; i++)
		if (cap.log[i] != NULL && strstr(cap.log[i], text) != NULL)
			n++;
	return n;
}

static void
setup(void)
{
	memset(&cap, 0, sizeof(cap));
	snprintf(tmp, sizeof(tmp), "/tmp/check_hooks.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(hooks_dir, sizeof(hooks_dir), "%s/hooks.d", tmp);
	ck_assert_int_eq(mkdir(hooks_dir, 0755), 0);
	ck_assert_int_eq(setenv("HOOKS_TEST_DIR", tmp, 1), 0);
	/* What hooks leave behind is ours to reap, not an init's that may
	 * not (a container's). */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void
teardown(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	for (size_t i = 0; i < cap.n_log; i++)
		free(cap.log[i]);
}

/* A file of mode under dir: "#!/bin/sh" and body. */
static void
write_script(const char *dir, const char *name, mode_t mode, const char *body)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void
write_hook(const char *name, const char *body)
{
	write_script(hooks_dir, name, 0755, body);
}

/* A hook that appends its name to $HOOKS_TEST_DIR/order. */
static void
write_order_hook(const char *name)
{
	write_hook(name, "echo \"${0##*/}\" >> \"$HOOKS_TEST_DIR/order\"");
}

/* The contents of tmp/name ("" when missing), in a static buffer. */
static const char *
read_tmp(const char *name)
{
	static char buf[4096];
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static double
elapsed_ms(const struct timespec *since)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)(ts.tv_sec - since->tv_sec) * 1e3 +
	       (double)(ts.tv_nsec - since->tv_nsec) / 1e6;
}

/* Drive h as the daemon's loop does until cond(h, arg) or ms pass; returns
 * cond's last answer. */
static bool
await(struct hooks *h, bool (*cond)(struct hooks *, const void *), const void *arg, int ms)
{
	uint64_t until = now_ms() + (uint64_t)ms;
	struct pollfd p = { .fd = hooks_fd(h), .events = POLLIN };

	while (!cond(h, arg)) {
		uint64_t now = now_ms();

		if (now >= until)
			return false;
		if (poll(&p, 1, (int)(until - now)) > 0)
			hooks_dispatch(h);
	}
	return true;
}

static bool
idle(struct hooks *h, const void *arg)
{
	(void)arg;
	return !hooks_busy(h);
}

static bool
logged(struct hooks *h, const void *text)
{
	(void)h;
	return log_count(text) > 0;
}

static bool
order_has(struct hooks *h, const void *text)
{
	(void)h;
	return strstr(read_tmp("order"), text) != NULL;
}

static void
make_fifo(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/fifo", tmp);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
}

/* Let the hook blocked reading tmp/fifo go on. */
static void
release_fifo(void)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/fifo", tmp);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "go\n", 3), 3);
	close(fd);
}

static pid_t
read_pid(const char *name)
{
	return (pid_t)atoi(read_tmp(name));
}

static bool
gone(pid_t pid)
{
	return kill(pid, 0) != 0 && errno == ESRCH;
}

START_TEST(test_create_refuses_zero_timeout)
{
	struct hooks *h;

	ck_assert_ptr_null(hooks_create(hooks_dir, 0, &ops, NULL));
	ck_assert_uint_eq(log_count("timeout of 0"), 1);
	h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(hooks_set(h, hooks_dir, 0), -EINVAL);
	ck_assert(!hooks_busy(h));
	hooks_destroy(h);
	hooks_destroy(NULL);
}
END_TEST

START_TEST(test_argv_and_env)
{
	const char *env[] = { "MAGLB_ROLE=active", "MAGLB_TEST_OVERRIDE=first",
			      "MAGLB_TEST_OVERRIDE=hook", NULL };
	const char *bad1[] = { "NOEQUALS", NULL }, *bad2[] = { "=value", NULL };
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	char expect[512];
	int fd;

	ck_assert_int_eq(setenv("MAGLB_TEST_KEPT", "daemon", 1), 0);
	ck_assert_int_eq(setenv("MAGLB_TEST_OVERRIDE", "daemon", 1), 0);
	/* An inherited descriptor the hook must not see. */
	fd = open("/dev/null", O_RDONLY);
	ck_assert_int_eq(dup2(fd, 50), 50);
	close(fd);
	write_hook("10-env",
		   "out=\"$HOOKS_TEST_DIR/out\"\n"
		   "printf '%s\\n' \"$0\" \"$#\" \"$1\" \"$MAGLB_ROLE\" \"$MAGLB_TEST_KEPT\" "
		   "\"$MAGLB_TEST_OVERRIDE\" > \"$out\"\n"
		   "if read -r x; then echo stdin-data; else echo stdin-eof; fi >> \"$out\"\n"
		   "if [ -e /proc/$$/fd/50 ]; then echo fd50-open; else echo fd50-closed; fi "
		   ">> \"$out\"\n"
		   "read -r _ _ _ _ pgid _ < /proc/$$/stat\n"
		   "if [ \"$pgid\" = $$ ]; then echo own-group; fi >> \"$out\"");

	ck_assert_int_eq(hooks_run(h, "x", bad1), -EINVAL);
	ck_assert_int_eq(hooks_run(h, "x", bad2), -EINVAL);
	ck_assert(!hooks_busy(h));
	ck_assert_int_eq(hooks_run(h, "active", env), 0);
	ck_assert(hooks_busy(h));
	ck_assert(await(h, idle, NULL, AWAIT_MS));

	snprintf(expect, sizeof(expect),
		 "%s/10-env\n1\nactive\nactive\ndaemon\nhook\nstdin-eof\nfd50-closed\n"
		 "own-group\n", hooks_dir);
	ck_assert_str_eq(read_tmp("out"), expect);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_RUNS], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_STARTED], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 1);
	ck_assert_uint_eq(cap.n_done, 1);
	ck_assert_str_eq(cap.done_args[0], "active");
	ck_assert_uint_eq(hooks_last_run(h)[HOOKS_OK], 1);
	hooks_destroy(h);
	close(50);
}
END_TEST

START_TEST(test_order_and_skipped_names)
{
	static const char *const run[] = { "20-b", "10-a", "B", "_x", "a.sh" };
	static const char *const skipped[] = {
		".hidden", "backup~", "has space", "bad@name", "x.dpkg-old", "x.dpkg-dist",
		"y.rpmnew", "y.rpmsave",
	};
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	char path[256], target[256];

	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		write_order_hook(run[i]);
	for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++)
		write_order_hook(skipped[i]);
	write_script(hooks_dir, "noexec", 0644, "echo noexec >> \"$HOOKS_TEST_DIR/order\"");
	snprintf(path, sizeof(path), "%s/subdir", hooks_dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	/* A link to an example elsewhere, as an operator installs one. */
	write_script(tmp, "example", 0755, "echo 30-link >> \"$HOOKS_TEST_DIR/order\"");
	snprintf(target, sizeof(target), "%s/example", tmp);
	snprintf(path, sizeof(path), "%s/30-link", hooks_dir);
	ck_assert_int_eq(symlink(target, path), 0);

	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "10-a\n20-b\n30-link\nB\n_x\na.sh\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_STARTED], 6);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 6);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_SPAWN_ERRORS], 0);
	ck_assert_uint_eq(log_count("hook noexec: not executable"), 1);
	hooks_destroy(h);
}
END_TEST

/*
 * hooks_run() returns at once: it only asks. Nothing starts, ends or logs
 * inside it (a runner that spawned or waited there would have started a
 * hook; one that waited for a blocked hook would never return, and the
 * suite's timeout fails it).
 */
static void
run_only_asks(struct hooks *h, const char *arg1)
{
	uint64_t started = hooks_counters(h)[HOOKS_STARTED];
	size_t n_log = cap.n_log, n_done = cap.n_done;

	ck_assert_int_eq(hooks_run(h, arg1, NULL), 0);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_STARTED], started);
	ck_assert_uint_eq(cap.n_log, n_log);
	ck_assert_uint_eq(cap.n_done, n_done);
	ck_assert(hooks_busy(h));
}

/* Hook 10 blocks while its argument is "active" until the test writes to
 * the FIFO; hook 20 must wait for it, and so must the next run. */
START_TEST(test_serialized)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);

	make_fifo();
	write_hook("10-block",
		   "echo \"$1-10-start\" >> \"$HOOKS_TEST_DIR/order\"\n"
		   "if [ \"$1\" = active ]; then echo waiting; read -r x < \"$HOOKS_TEST_DIR/fifo\"; fi\n"
		   "echo \"$1-10-end\" >> \"$HOOKS_TEST_DIR/order\"");
	write_hook("20-next", "echo \"$1-20\" >> \"$HOOKS_TEST_DIR/order\"");

	run_only_asks(h, "active");
	ck_assert(await(h, logged, "hook 10-block: waiting", AWAIT_MS));

	/* A second request while hook 10 blocks: queued, at once. */
	run_only_asks(h, "passive");
	/* Nothing else starts while hook 10 runs, however long the loop turns. */
	ck_assert(!await(h, order_has, "-20", 300));
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_STARTED], 1);
	ck_assert_str_eq(read_tmp("order"), "active-10-start\n");
	ck_assert(hooks_busy(h));

	release_fifo();
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"),
			 "active-10-start\nactive-10-end\nactive-20\n"
			 "passive-10-start\npassive-10-end\npassive-20\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_RUNS], 2);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 4);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_COALESCED], 0);
	hooks_destroy(h);
}
END_TEST

START_TEST(test_coalesced)
{
	static const char *const later[] = { "second", "third", "fourth" };
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);

	make_fifo();
	write_hook("10-log",
		   "echo \"$1\" >> \"$HOOKS_TEST_DIR/order\"\n"
		   "if [ \"$1\" = first ]; then echo waiting; read -r x < \"$HOOKS_TEST_DIR/fifo\"; fi");

	ck_assert_int_eq(hooks_run(h, "first", NULL), 0);
	ck_assert(await(h, logged, "hook 10-log: waiting", AWAIT_MS));
	for (size_t i = 0; i < 3; i++)
		run_only_asks(h, later[i]);
	release_fifo();
	ck_assert(await(h, idle, NULL, AWAIT_MS));

	ck_assert_str_eq(read_tmp("order"), "first\nfourth\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_RUNS], 2);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_COALESCED], 2);
	ck_assert_uint_eq(cap.n_done, 2);
	ck_assert_str_eq(cap.done_args[0], "first");
	ck_assert_uint_eq(cap.done_runs[0][HOOKS_COALESCED], 2);
	ck_assert_str_eq(cap.done_args[1], "fourth");
	ck_assert_uint_eq(cap.done_runs[1][HOOKS_RUNS], 1);
	hooks_destroy(h);
}
END_TEST

/* A hook that ignores SIGTERM (and so does its child) is killed; the run
 * goes on. */
START_TEST(test_timeout_sigkill)
{
	struct hooks *h = hooks_create(hooks_dir, 200, &ops, NULL);
	struct timespec t0;
	pid_t pid;

	write_hook("10-stubborn",
		   "trap '' TERM\n"
		   "echo $$ > \"$HOOKS_TEST_DIR/pid\"\n"
		   "while :; do sleep 1; done");
	write_order_hook("20-next");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	/* The timeout, then the grace period after SIGTERM. */
	ck_assert_double_ge(elapsed_ms(&t0), 200 + HOOKS_KILL_DELAY_MS - 10);
	ck_assert_str_eq(read_tmp("order"), "20-next\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_TIMEOUTS], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_FAILED], 0);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 1);
	ck_assert_uint_eq(log_count("hook 10-stubborn: timed out after 200 ms: SIGTERM"), 1);
	ck_assert_uint_eq(log_count("hook 10-stubborn: still running"), 1);
	pid = read_pid("pid");
	ck_assert_int_gt(pid, 1);
	ck_assert(gone(pid));
	hooks_destroy(h);
}
END_TEST

/* SIGTERM goes to the hook's whole group: a process the hook started
 * cleans up, the hook waits for it and exits, no SIGKILL needed. */
START_TEST(test_timeout_sigterm)
{
	struct hooks *h = hooks_create(hooks_dir, 200, &ops, NULL);

	write_script(tmp, "child", 0755,
		     "trap 'echo child-term >> \"$HOOKS_TEST_DIR/order\"; exit 0' TERM\n"
		     "while :; do sleep 1; done");
	write_hook("10-slow",
		   "\"$HOOKS_TEST_DIR/child\" &\n"
		   "pid=$!\n"
		   "trap 'wait $pid; exit 0' TERM\n"
		   "wait $pid");
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "child-term\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_TIMEOUTS], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_FAILED], 0);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 0);
	ck_assert_uint_eq(log_count("SIGKILL"), 0);
	hooks_destroy(h);
}
END_TEST

START_TEST(test_failures_do_not_stop_the_run)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	char path[256];

	write_hook("10-fail", "exit 3");
	/* No "#!": exec refuses it (ENOEXEC). */
	snprintf(path, sizeof(path), "%s/15-noshebang", hooks_dir);
	ck_assert_int_eq(close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755)), 0);
	write_hook("20-signal", "kill -USR1 $$");
	write_order_hook("30-ok");

	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "30-ok\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_STARTED], 3);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_FAILED], 2);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_SPAWN_ERRORS], 1);
	ck_assert_uint_eq(log_count("hook 10-fail: failed, exit status 3"), 1);
	ck_assert_uint_eq(log_count("hook 15-noshebang: cannot start"), 1);
	ck_assert_uint_eq(log_count("hook 20-signal: failed, killed by signal 10"), 1);
	ck_assert_uint_eq(hooks_last_run(h)[HOOKS_FAILED], 2);
	hooks_destroy(h);
}
END_TEST

/* A missing directory is one warning and one count a run; the directory
 * is read again at every run, and hooks_set() moves it. */
START_TEST(test_directory_each_run)
{
	char missing[128], other[128];
	struct hooks *h;

	snprintf(missing, sizeof(missing), "%s/missing", tmp);
	snprintf(other, sizeof(other), "%s/other", tmp);
	h = hooks_create(missing, TIMEOUT_MS, &ops, NULL);
	ck_assert_ptr_nonnull(h);

	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_DIR_ERRORS], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_RUNS], 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_STARTED], 0);
	ck_assert_uint_eq(log_count("cannot read"), 1);
	ck_assert_uint_eq(cap.n_done, 1);

	ck_assert_int_eq(mkdir(missing, 0755), 0);
	write_script(missing, "10-first", 0755, "echo first >> \"$HOOKS_TEST_DIR/order\"");
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "first\n");

	write_script(missing, "20-added", 0755, "echo added >> \"$HOOKS_TEST_DIR/order\"");
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "first\nfirst\nadded\n");

	ck_assert_int_eq(mkdir(other, 0755), 0);
	write_script(other, "10-other", 0755, "echo other >> \"$HOOKS_TEST_DIR/order\"");
	ck_assert_int_eq(hooks_set(h, other, TIMEOUT_MS), 0);
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "first\nfirst\nadded\nother\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_DIR_ERRORS], 1);
	hooks_destroy(h);
}
END_TEST

/* A run in progress keeps the directory it started with. */
START_TEST(test_set_applies_next_run)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	char other[128];

	make_fifo();
	snprintf(other, sizeof(other), "%s/other", tmp);
	ck_assert_int_eq(mkdir(other, 0755), 0);
	write_hook("10-block", "echo waiting; read -r x < \"$HOOKS_TEST_DIR/fifo\"");
	write_order_hook("20-old");
	write_script(other, "10-new", 0755, "echo 10-new >> \"$HOOKS_TEST_DIR/order\"");

	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, logged, "hook 10-block: waiting", AWAIT_MS));
	ck_assert_int_eq(hooks_set(h, other, TIMEOUT_MS), 0);
	ck_assert_int_eq(hooks_run(h, "passive", NULL), 0);
	release_fifo();
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "20-old\n10-new\n");
	hooks_destroy(h);
}
END_TEST

/* hooks_destroy() stops a hook that ignores SIGTERM, and what it started,
 * and reaps it. */
START_TEST(test_destroy_leaves_no_child)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	struct pollfd p = { .events = POLLIN };
	pid_t pid, child;

	write_hook("10-hang",
		   "trap '' TERM\n"
		   "echo $$ > \"$HOOKS_TEST_DIR/pid\"\n"
		   "sleep 300 &\n"
		   "echo $! > \"$HOOKS_TEST_DIR/child\"\n"
		   "echo waiting\n"
		   "wait");
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, logged, "hook 10-hang: waiting", AWAIT_MS));
	pid = read_pid("pid");
	child = read_pid("child");
	ck_assert_int_gt(pid, 1);
	ck_assert_int_gt(child, 1);
	ck_assert(!gone(pid));
	/* Orphaned by the hook's end, it comes to the test, the subreaper. */
	p.fd = (int)syscall(SYS_pidfd_open, child, 0);
	ck_assert_int_ge(p.fd, 0);

	hooks_destroy(h);
	ck_assert(gone(pid));
	ck_assert_int_eq(poll(&p, 1, AWAIT_MS), 1);
	close(p.fd);
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
}
END_TEST

/* The descriptors of a hook that ended are closed once: their numbers,
 * taken again by the caller, stay the caller's. */
START_TEST(test_destroy_closes_only_its_own)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	int fd[4];

	write_order_hook("10-a");
	write_order_hook("20-b");
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 2);
	for (size_t i = 0; i < 4; i++)
		ck_assert_int_ge(fd[i] = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
	hooks_destroy(h);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_ne(fcntl(fd[i], F_GETFD), -1);
		close(fd[i]);
	}
}
END_TEST

START_TEST(test_output_logged_and_bounded)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	char cut[HOOKS_LINE_MAX + 64];
	size_t n;

	write_hook("05-partial", "printf 'no newline'");
	write_hook("10-chatty",
		   "echo one\n"
		   "printf 'two\\tcolumns\\n' >&2\n"
		   "head -c 2000 /dev/zero | tr '\\0' x; echo\n"
		   "i=0; while [ $i -lt 300 ]; do echo \"line $i\"; i=$((i + 1)); done");

	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_uint_eq(log_count("hook 05-partial: no newline"), 1);
	ck_assert_uint_eq(log_count("hook 10-chatty: one"), 1);
	ck_assert_uint_eq(log_count("hook 10-chatty: two?columns"), 1);
	n = (size_t)snprintf(cut, sizeof(cut), "hook 10-chatty: ");
	memset(cut + n, 'x', HOOKS_LINE_MAX);
	snprintf(cut + n + HOOKS_LINE_MAX, sizeof(cut) - n - HOOKS_LINE_MAX, " [cut]");
	ck_assert_uint_eq(log_count(cut), 1);
	/* 1 + 3 + 300 lines: the first HOOKS_RUN_LINES_MAX logged. */
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OUTPUT_LINES], HOOKS_RUN_LINES_MAX);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OUTPUT_DROPPED], 304 - HOOKS_RUN_LINES_MAX);
	ck_assert_uint_eq(log_count("hook 10-chatty: line "), HOOKS_RUN_LINES_MAX - 4);
	ck_assert_uint_eq(log_count("the rest is not logged"), 1);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 2);
	hooks_destroy(h);
}
END_TEST

/* A hook is done when it exits, even if something it left behind holds
 * its output open. */
START_TEST(test_exit_ends_the_hook)
{
	struct hooks *h = hooks_create(hooks_dir, TIMEOUT_MS, &ops, NULL);
	pid_t pid;

	write_hook("10-leaves",
		   "echo $$ > \"$HOOKS_TEST_DIR/pid\"\n"
		   "(sleep 60; echo late) &\n"
		   "exit 0");
	write_order_hook("20-next");
	ck_assert_int_eq(hooks_run(h, "active", NULL), 0);
	/* Before the hook's timeout, which would end the leftover and with
	 * it the output. */
	ck_assert(await(h, idle, NULL, AWAIT_MS));
	ck_assert_str_eq(read_tmp("order"), "20-next\n");
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_OK], 2);
	ck_assert_uint_eq(hooks_counters(h)[HOOKS_TIMEOUTS], 0);
	pid = read_pid("pid");
	ck_assert_int_gt(pid, 1);
	/* The leftover, in the hook's group. */
	ck_assert_int_eq(kill(-pid, SIGKILL), 0);
	while (waitpid(-pid, NULL, 0) > 0)
		;
	hooks_destroy(h);
}
END_TEST

static Suite *
hooks_suite(void)
{
	Suite *s = suite_create("hooks");
	TCase *tc = tcase_create("hooks");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_create_refuses_zero_timeout);
	tcase_add_test(tc, test_argv_and_env);
	tcase_add_test(tc, test_order_and_skipped_names);
	tcase_add_test(tc, test_serialized);
	tcase_add_test(tc, test_coalesced);
	tcase_add_test(tc, test_timeout_sigkill);
	tcase_add_test(tc, test_timeout_sigterm);
	tcase_add_test(tc, test_failures_do_not_stop_the_run);
	tcase_add_test(tc, test_directory_each_run);
	tcase_add_test(tc, test_set_applies_next_run);
	tcase_add_test(tc, test_destroy_leaves_no_child);
	tcase_add_test(tc, test_destroy_closes_only_its_own);
	tcase_add_test(tc, test_output_logged_and_bounded);
	tcase_add_test(tc, test_exit_ends_the_hook);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(hooks_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
