/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglb-dataplane: the DPDK forwarder.
 *
 *   maglb-dataplane [EAL args] -- -c FILE [-f] [--poll busy|adaptive] [--service NAME]
 *   maglb-dataplane --check-config FILE
 *
 * The main lcore runs the control thread; every other lcore of the EAL
 * core list is a worker with its own RX and TX queue.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <qb/qblog.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "config/config.h"
#include "dataplane/control.h"
#include "dataplane/state.h"
#include "dataplane/synced.h"
#include "dataplane/worker.h"
#include "lib/daemon.h"
#include "lib/ipc.h"

struct options {
	const char *config;
	const char *check;
	const char *service;
	enum worker_poll poll;
	bool foreground;
};

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Print one VIP's table: slots and share per backend, in config order. */
static int
print_vip(const struct dp_state *s, uint32_t v)
{
	const struct dp_vip *vip = &s->vips[v];
	const struct dp_maglev *mg = vip->maglev;
	char addr[INET6_ADDRSTRLEN], port[16];
	uint32_t *slots = calloc(s->n_dests ? s->n_dests : 1, sizeof(*slots));
	bool any = false;

	if (slots == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < mg->size; i++)
		if (mg->slots[i] != MAGLEV_SLOT_NONE)
			slots[mg->rank_dest[mg->slots[i]]]++;
	inet_ntop(vip->family == FLOW_FAMILY_IPV4 ? AF_INET : AF_INET6, vip->addr,
		  addr, sizeof(addr));
	if (vip->port == 0)
		snprintf(port, sizeof(port), "all ports");
	else
		snprintf(port, sizeof(port), "port %u", vip->port);
	printf("vip %s %s %s/%s encap %s hash %s table %u\n", vip->name, addr, port,
	       vip->proto == IPPROTO_TCP ? "tcp" : "udp", encap_kind_names[vip->encap],
	       config_hash_mode_names[vip->hash], mg->size);
	printf("  %-40s %6s %8s %7s\n", "backend", "weight", "slots", "share");
	for (uint32_t i = 0; i < vip->n_dests; i++) {
		const struct dp_dest *d = &s->dests[vip->dests[i]];
		uint32_t n = slots[vip->dests[i]];

		inet_ntop(d->family == FLOW_FAMILY_IPV4 ? AF_INET : AF_INET6, d->addr,
			  addr, sizeof(addr));
		printf("  %-40s %6u %8u %6.2f%%\n", addr, d->weight, n, 100.0 * n / mg->size);
		any |= n > 0;
	}
	if (!any)
		printf("  (every weight is 0: no backend takes new flows)\n");
	free(slots);
	return 0;
}

/*
 * Validate path and build the forwarding state from it, as the running
 * dataplane would (no port: next hops stay unresolved), then print it.
 */
static int
check_config(const char *path)
{
	char err[CONFIG_ERROR_MAX];
	struct config *cfg = config_load(path, err, sizeof(err));
	struct state_port port = { .mtu = 0 };
	struct state_ctx *ctx = NULL;
	struct dp_state *s = NULL;
	double t0, ms;
	int rc = -EINVAL;

	if (cfg == NULL)
		goto out;
	rc = -ENOMEM;
	ctx = state_ctx_create(state_dests_max(cfg), &port);
	if (ctx == NULL)
		goto out;
	t0 = now_ms();
	s = state_build(ctx, cfg, NULL, err, sizeof(err));
	ms = now_ms() - t0;
	rc = s == NULL ? -EINVAL : 0;
	if (s == NULL)
		goto out;
	printf("%s: ok: node %u priority %u, %u port(s), %u vip(s), "
	       "Maglev tables built in %.3f ms\n", path, cfg->node_id, cfg->priority,
	       cfg->n_ports, cfg->n_vips, ms);
	for (uint32_t i = 0; i < s->n_vips && rc == 0; i++)
		rc = print_vip(s, i);
out:
	if (rc == -EINVAL)
		qb_log(LOG_ERR, "%s", err);
	state_free(s);
	state_ctx_destroy(ctx);
	config_free(cfg);
	return rc;
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: maglb-dataplane [EAL args] -- -c FILE [-f] [--poll busy|adaptive]\n"
		"                       [--service NAME]\n"
		"       maglb-dataplane --check-config FILE\n"
		"  -c, --config FILE        the node's config (/etc/maglb/maglb.conf)\n"
		"  -f, --foreground         log to stderr instead of syslog\n"
		"  -p, --poll MODE          busy (default: a worker owns its core) or adaptive\n"
		"                           (sleeps after empty polls: shared machines, tests)\n"
		"  -s, --service NAME       IPC service name (default " IPC_SERVICE_DATAPLANE ")\n"
		"  -t, --check-config FILE  validate FILE, print each VIP's Maglev table, exit\n"
		"  -h, --help               this help\n"
		"EAL args: see DPDK's EAL parameters (e.g. -l 0,1, --vdev, -a PCI, --no-huge)\n");
}

static int
parse_poll(const char *s, enum worker_poll *poll)
{
	for (int i = 0; i < WORKER_POLL_MAX; i++) {
		if (strcmp(s, worker_poll_names[i]) == 0) {
			*poll = (enum worker_poll)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* 0 go on, 1 exit 0 (help), -1 exit 2 (usage error). */
static int
parse_args(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "poll", required_argument, NULL, 'p' },
		{ "service", required_argument, NULL, 's' },
		{ "check-config", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:fp:s:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': o->config = optarg; break;
		case 'f': o->foreground = true; break;
		case 's': o->service = optarg; break;
		case 't': o->check = optarg; break;
		case 'h': usage(stdout); return 1;
		case 'p':
			if (parse_poll(optarg, &o->poll) == 0)
				break;
			fprintf(stderr, "maglb-dataplane: bad poll mode '%s'\n", optarg);
			return -1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc || (o->config == NULL && o->check == NULL)) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/* --check-config needs no EAL: find it before rte_eal_init() sees argv. */
static const char *
find_check(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--check-config") == 0 || strcmp(argv[i], "-t") == 0)
			return argv[i + 1];
	return NULL;
}

struct dataplane {
	struct options opt;
	struct config *cfg;
	struct dp_shared sh;
	struct rte_mempool *pool;
	struct worker *workers;
	unsigned n_workers;
};

static void
shared_node_addrs(struct dp_shared *sh, const struct config *cfg)
{
	sh->node.has_addr[0] = cfg->has_node_addr4;
	sh->node.has_addr[1] = cfg->has_node_addr6;
	memcpy(sh->node.addr[0], &cfg->node_addr4.v4, 4);
	memcpy(sh->node.addr[1], &cfg->node_addr6.v6, 16);
}

/* One contiguous run of EAL's memory, populated writable. */
static int
populate_run(const struct rte_memseg_list *msl, const struct rte_memseg *ms, size_t len,
	     void *arg)
{
	int *err = arg;

	(void)msl;
	if (madvise(ms->addr, len, MADV_POPULATE_WRITE) == 0)
		return 0;
	*err = errno;
	return 1;       /* stops the walk */
}

/*
 * Under --no-huge EAL's memory is anonymous and each page is faulted in when
 * first written: the first import into an empty synced table then faults
 * thousands of pages inside one request, on the control thread that answers
 * syncd's liveness pings, and the packet path faults where a table first
 * fills. Populated here, at start, it is resident like hugepages (which EAL
 * maps populated already).
 */
static void
populate_memory(void)
{
	int err = 0;

	if (rte_eal_has_hugepages())
		return;
	if (rte_memseg_contig_walk(populate_run, &err) != 0 && err != 0)
		qb_log(LOG_WARNING, "cannot populate EAL's memory: %s; pages fault in on "
		       "first use", strerror(err));
}

/* Memory for the cores of socket: there, or anywhere under --no-huge (EAL's
 * memory is then one anonymous area, filed under socket 0). */
static int
memory_socket(unsigned socket)
{
	return rte_eal_has_hugepages() ? (int)socket : SOCKET_ID_ANY;
}

/* The socket of every worker lcore, for what they all use (their array, the
 * synced table, RCU): SOCKET_ID_ANY when they span sockets. */
static int
workers_socket(void)
{
	unsigned lcore, socket = rte_lcore_to_socket_id(rte_get_next_lcore(-1, 1, 0));

	RTE_LCORE_FOREACH_WORKER(lcore)
		if (rte_lcore_to_socket_id(lcore) != socket)
			return SOCKET_ID_ANY;
	return memory_socket(socket);
}

/* The packet buffers of port cp, on the port's socket: the NIC writes them,
 * the workers read every frame. */
static struct rte_mempool *
mbuf_pool_create(const struct config_port *cp, unsigned n_workers, int socket)
{
	struct rte_mempool *pool;
	unsigned mbufs = cp->mbufs != 0 ? cp->mbufs : 8192 * n_workers + 4096;
	/* One segment holds a whole frame of the port's MTU (VLAN tag, FCS).
	 * net_af_packet wants room for its own ring frames: 2048 bytes by
	 * default, framesz= for jumbo frames. */
	unsigned room = RTE_ALIGN_CEIL(cp->mtu + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN +
				       RTE_ETHER_CRC_LEN, RTE_CACHE_LINE_SIZE);
	const char *framesz = strstr(cp->device, ",framesz=");

	if (strncmp(cp->device, "net_af_packet", 13) == 0)
		room = RTE_MAX(room, framesz != NULL ?
				     (unsigned)strtoul(framesz + 9, NULL, 10) :
				     (unsigned)RTE_MBUF_DEFAULT_DATAROOM);
	if (room > UINT16_MAX - RTE_PKTMBUF_HEADROOM) {
		qb_log(LOG_ERR, "port %s: packet buffers of %u bytes are too large", cp->name,
		       room);
		return NULL;
	}
	room += RTE_PKTMBUF_HEADROOM;
	pool = rte_pktmbuf_pool_create("mbufs", mbufs, 256, 0, (uint16_t)room,
				       memory_socket((unsigned)socket));
	if (pool == NULL)
		qb_log(LOG_ERR, "port %s: cannot allocate %u packet buffers on socket %d: %s",
		       cp->name, mbufs, socket, rte_strerror(rte_errno));
	else
		qb_log(LOG_INFO, "%u packet buffers of %u bytes on socket %d", mbufs, room,
		       socket);
	return pool;
}

static int
start(struct dataplane *dp)
{
	struct flowtab_params fp = worker_flow_params(&dp->cfg->flows);
	const struct config_port *cp = &dp->cfg->ports[0];
	unsigned i = 0, lcore;
	int socket, rc;

	dp->n_workers = rte_lcore_count() - 1;
	if (dp->n_workers == 0) {
		qb_log(LOG_ERR, "no worker lcore: give EAL at least two (-l 0,1)");
		return -EINVAL;
	}
	socket = workers_socket();
	rc = port_attach(cp, (uint16_t)dp->n_workers, &dp->sh.port);
	if (rc < 0)
		return rc;
	dp->pool = mbuf_pool_create(cp, dp->n_workers, dp->sh.port.socket);
	if (dp->pool == NULL)
		return -ENOMEM;
	dp->sh.rcu = rte_zmalloc_socket("rcu", rte_rcu_qsbr_get_memsize(dp->n_workers),
					RTE_CACHE_LINE_SIZE, socket);
	dp->workers = rte_zmalloc_socket("workers", dp->n_workers * sizeof(*dp->workers),
					 RTE_CACHE_LINE_SIZE, socket);
	if (dp->sh.rcu == NULL || dp->workers == NULL) {
		qb_log(LOG_ERR, "out of memory for the workers' state");
		return -ENOMEM;
	}
	rte_rcu_qsbr_init(dp->sh.rcu, dp->n_workers);
	dp->sh.synced = synced_create("synced", dp->cfg->flows.shared_capacity, dp->sh.rcu,
				      socket);
	if (dp->sh.synced == NULL)
		return -ENOMEM;
	rc = port_start(&dp->sh.port, cp, dp->pool);
	if (rc < 0)
		return rc;
	dp->sh.max_dests = state_dests_max(dp->cfg);
	dp->sh.poll = dp->opt.poll;
	dp->sh.tsc_per_ms = rte_get_tsc_hz() / 1000;
	shared_node_addrs(&dp->sh, dp->cfg);
	RTE_LCORE_FOREACH_WORKER(lcore) {
		rc = worker_init(&dp->workers[i], i, lcore,
				 memory_socket(rte_lcore_to_socket_id(lcore)), &dp->sh, &fp,
				 dp->cfg->sync.queue_entries, dp->pool);
		if (rc < 0)
			return rc;
		i++;
	}
	qb_log(LOG_INFO, "%u worker(s), %u flows each, %zu bytes per flow, %u destination "
	       "ids, poll %s", dp->n_workers, fp.capacity,
	       flowtab_bytes_per_flow(dp->workers[0].flows), dp->sh.max_dests,
	       worker_poll_names[dp->opt.poll]);
	for (i = 0; i < dp->n_workers; i++)
		rte_eal_remote_launch(worker_main, &dp->workers[i], dp->workers[i].lcore);
	return 0;
}

static void
stop(struct dataplane *dp)
{
	__atomic_store_n(&dp->sh.stop, true, __ATOMIC_RELEASE);
	rte_eal_mp_wait_lcore();
	for (unsigned i = 0; dp->workers != NULL && i < dp->n_workers; i++)
		worker_fini(&dp->workers[i]);
	port_close(&dp->sh.port);
	state_free(dp->sh.state);
	synced_destroy(dp->sh.synced);
	rte_free(dp->workers);
	rte_free(dp->sh.rcu);
	rte_mempool_free(dp->pool);
}

static int
run(struct dataplane *dp)
{
	char err[CONFIG_ERROR_MAX];
	struct control_params cp;
	int rc;

	dp->cfg = config_load(dp->opt.config, err, sizeof(err));
	if (dp->cfg == NULL) {
		qb_log(LOG_ERR, "%s", err);
		return -EINVAL;
	}
	dp->sh.port.id = RTE_MAX_ETHPORTS;
	rc = start(dp);
	if (rc == 0) {
		cp = (struct control_params){
			.config_path = dp->opt.config, .cfg = dp->cfg, .shared = &dp->sh,
			.workers = dp->workers, .n_workers = dp->n_workers, .pool = dp->pool,
			.service = dp->opt.service, .group = daemon_ipc_group(),
		};
		rc = control_run(&cp);
		dp->cfg = cp.cfg;
	}
	stop(dp);
	config_free(dp->cfg);
	return rc;
}

int
main(int argc, char **argv)
{
	struct dataplane dp = { .opt = { .service = IPC_SERVICE_DATAPLANE } };
	const char *check = find_check(argc, argv);
	int n, rc;

	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);  /* EAL's own options: --help after -- */
			return EXIT_SUCCESS;
		}
	}
	if (check != NULL) {
		daemon_log_init("maglb-dataplane", true);
		rc = check_config(check);
		qb_log_fini();
		return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	}
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "maglb-dataplane: EAL: %s\n", rte_strerror(rte_errno));
		return 2;
	}
	argv[n] = argv[0];
	rc = parse_args(argc - n, argv + n, &dp.opt);
	if (rc != 0) {
		rte_eal_cleanup();
		return rc > 0 ? EXIT_SUCCESS : 2;
	}
	daemon_log_init("maglb-dataplane", dp.opt.foreground);
	populate_memory();
	rc = run(&dp);
	qb_log(LOG_INFO, "stopped");
	qb_log_fini();
	rte_eal_cleanup();
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
