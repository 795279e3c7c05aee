/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglbctl monitor passwd USER [--role admin|viewer] [--file PATH]: set a
 * maglb-monitor user's password and role in its users file, with the
 * code the monitor reads the file with (monitor/auth.h). No daemon is
 * asked: the file is written in place (a temporary file renamed over it).
 *
 * The password comes from the terminal, asked twice without echo, when
 * stdin is one; otherwise it is the first line of stdin, for scripts
 * (`printf '%s\n' "$pw" | maglbctl monitor passwd alice`).
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sys/types.h>

#include "ctl/maglbctl.h"
#include "monitor/auth.h"

/* maglb-monitor.service's user and group (packaging/systemd/maglb.sysusers). */
#define MONITOR_GROUP "maglb-monitor"

enum {
	MONITOR_PASSWORD_SIZE = AUTH_PASSWORD_MAX + 1,  /* with its NUL */
};

/* The signals that end us while the terminal does not echo. */
static const int monitor_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
enum { MONITOR_SIGNALS = sizeof(monitor_signals) / sizeof(monitor_signals[0]) };

static volatile sig_atomic_t monitor_caught;

static void
monitor_on_signal(int sig)
{
	monitor_caught = sig;
}

/*
 * One line of stdin into buf (newline cut), a byte at a time so that
 * nothing past it is read. 0, -EMSGSIZE past AUTH_PASSWORD_MAX bytes,
 * -EINTR when one of monitor_signals came, -errno.
 */
static int
monitor_read_line(char buf[MONITOR_PASSWORD_SIZE])
{
	size_t n = 0;
	bool too_long = false;
	char c;

	for (;;) {
		ssize_t r = read(STDIN_FILENO, &c, 1);

		if (r < 0 && errno == EINTR && monitor_caught == 0)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0 || c == '\n')
			break;
		if (n + 1 < MONITOR_PASSWORD_SIZE)
			buf[n++] = c;
		else
			too_long = true;
	}
	buf[n] = '\0';
	return too_long ? -EMSGSIZE : 0;
}

/*
 * Prompt on stderr, read a line from the terminal on stdin without echo.
 * A signal on the way restores the terminal, then takes its course.
 */
static int
monitor_read_tty(const char *prompt, char buf[MONITOR_PASSWORD_SIZE])
{
	struct sigaction on = { .sa_handler = monitor_on_signal };
	struct sigaction saved[MONITOR_SIGNALS];
	struct termios old, quiet;
	int rc;

	if (tcgetattr(STDIN_FILENO, &old) < 0)
		return -errno;
	sigemptyset(&on.sa_mask);           /* no SA_RESTART: read() returns */
	for (int i = 0; i < MONITOR_SIGNALS; i++)
		sigaction(monitor_signals[i], &on, &saved[i]);
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	quiet.c_lflag |= ECHONL;
	fputs(prompt, stderr);
	fflush(stderr);
	rc = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) < 0 ? -errno :
	     monitor_read_line(buf);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
	for (int i = 0; i < MONITOR_SIGNALS; i++)
		sigaction(monitor_signals[i], &saved[i], NULL);
	if (monitor_caught != 0) {
		explicit_bzero(buf, MONITOR_PASSWORD_SIZE);
		fputc('\n', stderr);
		raise(monitor_caught);
	}
	return rc;
}

/* The password, from the terminal (twice) or from stdin; the exit code. */
static int
monitor_password(const char *user, char password[MONITOR_PASSWORD_SIZE])
{
	char prompt[AUTH_NAME_MAX + 32], again[MONITOR_PASSWORD_SIZE];
	bool tty = isatty(STDIN_FILENO);
	int rc;

	snprintf(prompt, sizeof(prompt), "password for %s: ", user);
	rc = tty ? monitor_read_tty(prompt, password) : monitor_read_line(password);
	if (rc == 0 && tty) {
		rc = monitor_read_tty("again: ", again);
		if (rc == 0 && strcmp(password, again) != 0)
			rc = -EILSEQ;
		explicit_bzero(again, sizeof(again));
	}
	if (rc == 0 && password[0] == '\0')
		rc = -ENODATA;
	if (rc == 0)
		return MAGLBCTL_EXIT_OK;
	if (rc == -EILSEQ)
		fputs("maglbctl: the passwords differ; nothing written\n", stderr);
	else if (rc == -ENODATA)
		fputs("maglbctl: empty password refused\n", stderr);
	else if (rc == -EMSGSIZE)
		fprintf(stderr, "maglbctl: password longer than %d bytes refused\n",
			AUTH_PASSWORD_MAX);
	else
		fprintf(stderr, "maglbctl: reading the password: %s\n", strerror(-rc));
	explicit_bzero(password, MONITOR_PASSWORD_SIZE);
	return MAGLBCTL_EXIT_ERROR;
}

/* Hash password and write user's line; the exit code. */
static int
monitor_write(const struct maglbctl *m, const char *path, const char *user,
	      enum auth_role role, const char *password)
{
	char hash[AUTH_HASH_SIZE], err[512];
	const struct group *group;
	bool created;
	int rc;

	rc = auth_hash_password(password, &auth_random_getrandom, hash, sizeof(hash));
	if (rc < 0) {
		fprintf(stderr, "maglbctl: hashing the password: %s\n", strerror(-rc));
		return MAGLBCTL_EXIT_ERROR;
	}
	created = access(path, F_OK) != 0;
	rc = auth_users_file_set(path, user, hash, role, err, sizeof(err));
	explicit_bzero(hash, sizeof(hash));
	if (rc < 0) {
		fprintf(stderr, "maglbctl: %s\n", err);
		return MAGLBCTL_EXIT_ERROR;
	}
	/* A new file goes to the daemon's group, which reads it (0640). */
	group = created ? getgrnam(MONITOR_GROUP) : NULL;
	if (group != NULL && chown(path, (uid_t)-1, group->gr_gid) != 0)
		fprintf(stderr, "maglbctl: %s: cannot give it to group %s: %s\n", path,
			MONITOR_GROUP, strerror(errno));
	if (m->json)
		return maglbctl_json_ok();
	printf("monitor user %s (%s) written to %s\n", user, auth_role_names[role], path);
	return MAGLBCTL_EXIT_OK;
}

static int
monitor_passwd(struct maglbctl *m, int argc, char **argv)
{
	const char *user = NULL, *path = AUTH_USERS_PATH_DEFAULT, *value;
	enum auth_role role = AUTH_ROLE_VIEWER;
	char password[MONITOR_PASSWORD_SIZE];
	int rc;

	for (int i = 2; i < argc; i++) {
		if ((rc = maglbctl_option(argv, argc, &i, "--role", &value)) != 0) {
			if (rc < 0 || !auth_role_parse(value, &role))
				return maglbctl_usage_error("--role wants admin or viewer");
		} else if ((rc = maglbctl_option(argv, argc, &i, "--file", &path)) != 0) {
			if (rc < 0 || path[0] == '\0')
				return maglbctl_usage_error("--file wants a path");
		} else if (user == NULL && argv[i][0] != '-') {
			user = argv[i];
		} else {
			return maglbctl_usage_error("monitor passwd: unexpected '%s'",
						    argv[i]);
		}
	}
	if (user == NULL)
		return maglbctl_usage_error("monitor passwd wants a USER");
	if (!auth_user_name_valid(user))
		return maglbctl_usage_error("bad user name '%s' (1..%d of A-Z a-z 0-9 "
					    ". _ -)", user, AUTH_NAME_MAX);
	rc = monitor_password(user, password);
	if (rc != MAGLBCTL_EXIT_OK)
		return rc;
	rc = monitor_write(m, path, user, role, password);
	explicit_bzero(password, sizeof(password));
	return rc;
}

int
maglbctl_monitor(struct maglbctl *m, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "passwd") != 0)
		return maglbctl_usage_error("monitor: the subcommand is passwd");
	return monitor_passwd(m, argc, argv);
}
