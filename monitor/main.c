/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-monitor: the node's Prometheus metrics and web console over HTTPS,
 * read from its dataplane and syncd over their local IPC.
 *
 *   maglb-monitor -c FILE [-f] [--www DIR] [--name NAME]
 *                 [--dataplane-service NAME] [--syncd-service NAME]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <qb/qblog.h>
#include <qb/qbloop.h>

#include "lib/daemon.h"
#include "lib/ipc.h"
#include "monitor/monitor.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: maglb-monitor -c FILE [-f] [--www DIR] [--name NAME]\n"
		"                     [--dataplane-service NAME] [--syncd-service NAME]\n"
		"  -c, --config FILE        the node's config (/etc/maglb/maglb.conf), its\n"
		"                           monitor section\n"
		"  -f, --foreground         log to stderr instead of syslog\n"
		"  -w, --www DIR            the console's files (default " MAGLB_WWW_DIR ")\n"
		"  -n, --name NAME          the node's name on the console (default: host name)\n"
		"  -d, --dataplane-service NAME\n"
		"                           the dataplane's IPC service (default "
		IPC_SERVICE_DATAPLANE ")\n"
		"  -s, --syncd-service NAME syncd's IPC service (default " IPC_SERVICE_SYNCD ")\n"
		"  -h, --help               this help\n");
}

static void
reload(void *arg)
{
	monitor_reload(arg);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "www", required_argument, NULL, 'w' },
		{ "name", required_argument, NULL, 'n' },
		{ "dataplane-service", required_argument, NULL, 'd' },
		{ "syncd-service", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct monitor_options o = {
		.www_dir = MAGLB_WWW_DIR,
		.dataplane_service = IPC_SERVICE_DATAPLANE,
		.syncd_service = IPC_SERVICE_SYNCD,
	};
	bool foreground = false;
	struct daemon_signals *signals;
	struct monitor *m;
	qb_loop_t *loop;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:fw:n:d:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o.config = optarg; break;
		case 'f': foreground = true; break;
		case 'w': o.www_dir = optarg; break;
		case 'n': o.node_name = optarg; break;
		case 'd': o.dataplane_service = optarg; break;
		case 's': o.syncd_service = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.config == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	daemon_log_init("maglb-monitor", foreground);
	loop = qb_loop_create();
	if (loop == NULL) {
		qb_log(LOG_ERR, "cannot create the event loop");
		return 1;
	}
	m = monitor_create(loop, &o);
	signals = m != NULL ? daemon_signals_create(loop, reload, m) : NULL;
	if (signals == NULL) {
		monitor_destroy(m);
		qb_loop_destroy(loop);
		qb_log_fini();
		return 1;
	}
	qb_loop_run(loop);
	daemon_signals_destroy(signals);
	monitor_destroy(m);
	qb_loop_destroy(loop);
	qb_log_fini();
	return 0;
}
