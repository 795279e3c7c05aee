/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-syncd: replicates the local dataplane's connection entries to the
 * other nodes over corosync CPG, and theirs into it.
 *
 *   maglb-syncd -c FILE [-f] [--service NAME] [--dataplane-service NAME]
 *   maglb-syncd --check-config FILE
 *
 * Its options are the dataplane's where they mean the same (usage()).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qb/qblog.h>
#include <qb/qbloop.h>

#include "config/config.h"
#include "lib/daemon.h"
#include "lib/ipc.h"
#include "syncd/syncd.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: maglb-syncd -c FILE [-f] [--service NAME] [--dataplane-service NAME]\n"
		"       maglb-syncd --check-config FILE\n"
		"  -c, --config FILE        the node's config (/etc/maglb/maglb.conf)\n"
		"  -f, --foreground         log to stderr instead of syslog\n"
		"  -s, --service NAME       its IPC service, for maglbctl (default "
		IPC_SERVICE_SYNCD ")\n"
		"  -d, --dataplane-service NAME\n"
		"                           the dataplane's IPC service (default "
		IPC_SERVICE_DATAPLANE ")\n"
		"  -t, --check-config FILE  validate FILE, print its node id and VIP count, exit\n"
		"  -h, --help               this help\n");
}

static void
reload(void *arg)
{
	syncd_reload(arg);
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
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "service", required_argument, NULL, 's' },
		{ "dataplane-service", required_argument, NULL, 'd' },
		{ "check-config", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct syncd_options o = {
		.service = IPC_SERVICE_SYNCD,
		.dataplane_service = IPC_SERVICE_DATAPLANE,
	};
	bool foreground = false;
	struct daemon_signals *signals;
	struct syncd *s;
	qb_loop_t *loop;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:fs:d:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o.config = optarg; break;
		case 'f': foreground = true; break;
		case 's': o.service = optarg; break;
		case 'd': o.dataplane_service = optarg; break;
		case 't': return check_config(optarg);
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.config == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	daemon_log_init("maglb-syncd", foreground);
	loop = qb_loop_create();
	if (loop == NULL) {
		qb_log(LOG_ERR, "cannot create the event loop");
		return 1;
	}
	s = syncd_create(loop, &o);
	signals = s != NULL ? daemon_signals_create(loop, reload, s) : NULL;
	if (signals == NULL) {
		syncd_destroy(s);
		qb_loop_destroy(loop);
		qb_log_fini();
		return 1;
	}
	qb_loop_run(loop);
	daemon_signals_destroy(signals);
	syncd_destroy(s);
	qb_loop_destroy(loop);
	qb_log_fini();
	return 0;
}
