/* SPDX-License-Identifier: BSD-3-Clause */
#include "dataplane/port.h"

#include <errno.h>
#include <string.h>

#include <qb/qblog.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "config/config.h"

enum {
	PORT_RX_DESC = 1024,
	PORT_TX_DESC = 1024,
};

/* "net_af_packet0,iface=lb0" -> "net_af_packet0"; a PCI address stays. */
static void
device_name(const char *device, char *name, size_t len)
{
	size_t n = strcspn(device, ",");

	if (n >= len)
		n = len - 1;
	memcpy(name, device, n);
	name[n] = '\0';
}

static int
port_find(const struct config_port *cfg, uint16_t *id)
{
	char name[CONFIG_DEVICE_MAX];
	int rc;

	device_name(cfg->device, name, sizeof(name));
	if (rte_eth_dev_get_port_by_name(name, id) == 0)
		return 0;
	rc = rte_dev_probe(cfg->device);
	if (rc < 0) {
		qb_log(LOG_ERR, "port %s: cannot attach device '%s': %s",
		       cfg->name, cfg->device, strerror(-rc));
		return rc;
	}
	if (rte_eth_dev_get_port_by_name(name, id) != 0) {
		qb_log(LOG_ERR, "port %s: device '%s' attached but no port '%s'",
		       cfg->name, cfg->device, name);
		return -ENODEV;
	}
	return 0;
}

static int
port_configure(struct dp_port *port, const struct rte_eth_dev_info *info)
{
	struct rte_eth_conf conf = { 0 };
	uint64_t rss = info->flow_type_rss_offloads &
		       (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);

	/* One queue per worker; RSS spreads flows when the port has it. */
	port->rss = port->queues > 1 && rss != 0;
	if (port->rss) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = rss;
	}
	if (info->max_rx_queues < port->queues || info->max_tx_queues < port->queues) {
		qb_log(LOG_ERR, "port %s: %u queues wanted, device has rx %u tx %u",
		       port->name, port->queues, info->max_rx_queues,
		       info->max_tx_queues);
		return -EINVAL;
	}
	return rte_eth_dev_configure(port->id, port->queues, port->queues, &conf);
}

int
port_attach(const struct config_port *cfg, uint16_t queues, struct dp_port *port)
{
	int rc;

	memset(port, 0, sizeof(*port));
	port->id = RTE_MAX_ETHPORTS;
	port->queues = queues;
	port->mtu = cfg->mtu;
	port->vlan = (uint16_t)cfg->vlan;
	snprintf(port->name, sizeof(port->name), "%s", cfg->name);
	rc = port_find(cfg, &port->id);
	if (rc < 0)
		return rc;
	/* unknown for most vdevs, and NICs whose node the kernel does not know */
	port->socket = rte_eth_dev_socket_id(port->id);
	if (port->socket == SOCKET_ID_ANY)
		port->socket = (int)rte_socket_id();
	return 0;
}

int
port_start(struct dp_port *port, const struct config_port *cfg, struct rte_mempool *pool)
{
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	int rc = rte_eth_dev_info_get(port->id, &info);

	if (rc == 0)
		rc = port_configure(port, &info);
	for (uint16_t q = 0; q < port->queues && rc == 0; q++) {
		rc = rte_eth_rx_queue_setup(port->id, q, PORT_RX_DESC, port->socket, NULL,
					    pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(port->id, q, PORT_TX_DESC, port->socket,
						    NULL);
	}
	if (rc == 0)
		rc = rte_eth_dev_start(port->id);
	if (rc < 0) {
		qb_log(LOG_ERR, "port %s: cannot set up device '%s': %s", cfg->name,
		       cfg->device, strerror(-rc));
		port_close(port);
		return rc;
	}
	/* af_packet and some vdevs refuse an MTU change: the config MTU still
	 * governs what the dataplane sends. */
	if (rte_eth_dev_set_mtu(port->id, (uint16_t)cfg->mtu) < 0)
		qb_log(LOG_INFO, "port %s: device keeps its MTU, using %u for encapsulation",
		       cfg->name, cfg->mtu);
	/* Not promiscuous: frames for other MACs on the segment are not ours.
	 * All-multicast: IPv6 neighbour solicitations use multicast MACs. */
	rte_eth_allmulticast_enable(port->id);
	rte_eth_macaddr_get(port->id, &mac);
	memcpy(port->mac, mac.addr_bytes, sizeof(port->mac));
	qb_log(LOG_INFO, "port %s: dpdk port %u, %u queue(s), rss %s, mac "
	       RTE_ETHER_ADDR_PRT_FMT ", socket %d", cfg->name, port->id, port->queues,
	       port->rss ? "on" : "off", RTE_ETHER_ADDR_BYTES(&mac), port->socket);
	return 0;
}

void
port_close(struct dp_port *port)
{
	if (port->id >= RTE_MAX_ETHPORTS)
		return;
	rte_eth_dev_stop(port->id);
	rte_eth_dev_close(port->id);
	port->id = RTE_MAX_ETHPORTS;
}
