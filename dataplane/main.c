/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-dataplane front end.
 *
 *   maglb-dataplane --check-config FILE    validate FILE, build every VIP's
 *                                          Maglev table, print a summary
 *
 * The forwarder itself (EAL arguments, ports, workers) comes with the
 * dataplane issue; until then --check-config is the only mode.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <qb/qblog.h>

#include "config/config.h"
#include "dataplane/vip_maglev.h"

static void
log_init(void)
{
	qb_log_init("maglb-dataplane", LOG_DAEMON, LOG_INFO);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, QB_FALSE);
	qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE,
			  "*", LOG_INFO);
	qb_log_format_set(QB_LOG_STDERR, "%b");
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Print one VIP's table: slots and share per backend, in config order. */
static int
print_vip(const struct config_vip *vip)
{
	char addr[INET6_ADDRSTRLEN], port[16];
	struct vip_maglev *vm;
	uint32_t *slots;
	double t0 = now_ms(), ms;
	int rc;

	vm = vip_maglev_build(vip, &rc);
	ms = now_ms() - t0;
	if (vm == NULL) {
		qb_log(LOG_ERR, "vip '%s': maglev build failed: %s", vip->name,
		       strerror(-rc));
		return rc;
	}
	slots = calloc(vip->n_backends, sizeof(*slots));
	if (slots == NULL) {
		vip_maglev_free(vm);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < vm->size; s++)
		if (vm->table[s] != MAGLEV_SLOT_NONE)
			slots[vm->order[vm->table[s]]]++;
	config_addr_str(&vip->addr, addr, sizeof(addr));
	if (vip->port == 0)
		snprintf(port, sizeof(port), "all ports");
	else
		snprintf(port, sizeof(port), "port %u", vip->port);
	printf("vip %s %s %s/%s encap %s hash %s table %u built in %.3f ms\n",
	       vip->name, addr, port, config_proto_names[vip->proto],
	       config_encap_names[vip->encap], config_hash_mode_names[vip->hash],
	       vm->size, ms);
	printf("  %-40s %6s %8s %7s\n", "backend", "weight", "slots", "share");
	for (uint32_t i = 0; i < vip->n_backends; i++)
		printf("  %-40s %6u %8u %6.2f%%\n", vm->names[i],
		       vip->backends[i].weight, slots[i], 100.0 * slots[i] / vm->size);
	if (rc == -ENODATA)
		printf("  (every weight is 0: no backend takes new flows)\n");
	free(slots);
	vip_maglev_free(vm);
	return 0;
}

static int
check_config(const char *path)
{
	char err[CONFIG_ERROR_MAX];
	struct config *cfg = config_load(path, err, sizeof(err));
	int rc = 0;

	if (cfg == NULL) {
		qb_log(LOG_ERR, "%s", err);
		return -EINVAL;
	}
	printf("%s: ok: node %u priority %u, %u port(s), %u vip(s)\n", path,
	       cfg->node_id, cfg->priority, cfg->n_ports, cfg->n_vips);
	for (uint32_t i = 0; i < cfg->n_vips && rc == 0; i++)
		rc = print_vip(&cfg->vips[i]);
	config_free(cfg);
	return rc;
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: maglb-dataplane --check-config FILE\n"
		"  -t, --check-config FILE  validate FILE and print each VIP's Maglev table\n"
		"  -h, --help               this help\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check-config", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *check = NULL;
	int c, rc;

	while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			check = optarg;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (check == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	log_init();
	rc = check_config(check);
	qb_log_fini();
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
