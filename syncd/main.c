/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-syncd: replicates the local dataplane's connection entries to the
 * other nodes over corosync CPG, and theirs into it.
 *
 *   maglb-syncd -c FILE [-f] [--service NAME] [--dataplane-service NAME]
 *   maglb-syncd --check-config FILE
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qb/qblog.h>
#include <qb/qbloop.h>

#include "config/config.h"
#include "lib/ipc.h"
#include "syncd/syncd.h"

static struct syncd *running;

static void
usage(FILE *f)
{
	fprintf(f, "usage: maglb-syncd -c FILE [-f] [--service NAME] "
		"[--dataplane-service NAME]\n"
		"       maglb-syncd --check-config FILE\n");
}

/* syslog (journald) for the daemon, stderr in the foreground. */
static void
log_init(bool to_stderr)
{
	qb_log_init("maglb-syncd", LOG_DAEMON, LOG_INFO);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, to_stderr ? QB_FALSE : QB_TRUE);
	if (!to_stderr)
		return;
	qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE, "*", LOG_INFO);
	qb_log_format_set(QB_LOG_STDERR, "maglb-syncd: %b");
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
}

static int32_t
on_signal(int32_t sig, void *arg)
{
	qb_loop_t *loop = arg;

	if (sig == SIGHUP) {
		qb_log(LOG_INFO, "SIGHUP: reloading");
		syncd_reload(running);
		return 0;
	}
	qb_log(LOG_INFO, "signal %d: stopping", sig);
	qb_loop_stop(loop);
	return 0;
}

static int
check_config(const char *path)
{
	char err[CONFIG_ERROR_MAX];
	struct config *cfg = config_load(path, err, sizeof(err));

	if (cfg == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("%s: ok, node %u, %u VIP(s)\n", path, cfg->node_id, cfg->n_vips);
	config_free(cfg);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "dataplane-service", required_argument, NULL, 'd' },
		{ "check-config", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct syncd_options o = {
		.service = IPC_SERVICE_SYNCD,
		.dataplane_service = IPC_SERVICE_DATAPLANE,
	};
	bool foreground = false;
	qb_loop_signal_handle sh;
	qb_loop_t *loop;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:fh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o.config = optarg; break;
		case 'f': foreground = true; break;
		case 's': o.service = optarg; break;
		case 'd': o.dataplane_service = optarg; break;
		case 'k': return check_config(optarg);
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.config == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	log_init(foreground);
	loop = qb_loop_create();
	if (loop == NULL) {
		qb_log(LOG_ERR, "cannot create the event loop");
		return 1;
	}
	running = syncd_create(loop, &o);
	if (running == NULL) {
		qb_loop_destroy(loop);
		qb_log_fini();
		return 1;
	}
	qb_loop_signal_add(loop, QB_LOOP_HIGH, SIGTERM, loop, on_signal, &sh);
	qb_loop_signal_add(loop, QB_LOOP_HIGH, SIGINT, loop, on_signal, &sh);
	qb_loop_signal_add(loop, QB_LOOP_HIGH, SIGHUP, loop, on_signal, &sh);
	qb_loop_run(loop);
	syncd_destroy(running);
	qb_loop_destroy(loop);
	qb_log_fini();
	return 0;
}
