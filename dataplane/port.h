/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK ports: find or hot-plug the device a config port names, configure one
 * RX and one TX queue per worker, start it. Main lcore only, at start-up.
 */
#ifndef MAGLB_DATAPLANE_PORT_H
#define MAGLB_DATAPLANE_PORT_H

#include <stdbool.h>
#include <stdint.h>

struct config_port;
struct rte_mempool;

struct dp_port {
	uint16_t id;                /* DPDK port id */
	uint16_t queues;            /* RX = TX queues = workers */
	uint32_t mtu;               /* from config */
	uint8_t mac[6];
	bool rss;                   /* the port spreads flows over the queues */
	char name[32];              /* the config port's name */
};

/*
 * Attach (probing the device when EAL has not), configure queues RX/TX
 * queues with descriptors from pool, and start port. Returns 0 or -errno
 * after logging why.
 */
int port_open(const struct config_port *cfg, uint16_t queues,
	      struct rte_mempool *pool, struct dp_port *port);

/* Stop and close; safe on a port port_open() failed on. */
void port_close(struct dp_port *port);

#endif /* MAGLB_DATAPLANE_PORT_H */
