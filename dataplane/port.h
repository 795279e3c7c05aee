/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK ports: find or hot-plug the device a config port names (port_attach:
 * then its NUMA socket is known, where its packet buffers belong), configure
 * one RX and one TX queue per worker and start it (port_start). Main lcore
 * only, at start-up.
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
	uint16_t vlan;              /* 802.1Q VLAN id of every frame; 0: untagged */
	int socket;                 /* the device's NUMA socket, else the main lcore's */
	uint8_t mac[6];
	bool rss;                   /* the port spreads flows over the queues */
	char name[32];              /* the config port's name */
};

/*
 * Find cfg's device, probing it when EAL has not (a vdev named only in the
 * config), and fill port for queues RX/TX queue pairs. Returns 0 or -errno
 * after logging why.
 */
int port_attach(const struct config_port *cfg, uint16_t queues, struct dp_port *port);

/*
 * Configure an attached port's queues, RX descriptors from pool (best on
 * port->socket), and start it. Returns 0 or -errno after logging why; the
 * port is then closed.
 */
int port_start(struct dp_port *port, const struct config_port *cfg,
	       struct rte_mempool *pool);

/* Stop and close; safe on a port port_attach() or port_start() failed on. */
void port_close(struct dp_port *port);

#endif /* MAGLB_DATAPLANE_PORT_H */
