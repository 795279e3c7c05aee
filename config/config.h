/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The config model of one maglb node and its parser.
 *
 * One file (/etc/maglb/maglb.conf, libconfig grammar) describes a node; the
 * dataplane and syncd both read it through config_load(). The parser checks
 * syntax, unknown keys and types, then a validation pass checks meaning
 * (duplicates, families, table sizes, ...). Every error carries the file and
 * line of the setting at fault, formatted "file:line: reason".
 *
 * The model is plain data: fixed-size arrays and values, no pointers into
 * libconfig. Callers own what config_load() returns and free it with
 * config_free(). Not thread-safe; call from one thread (main or control).
 */
#ifndef MAGLB_CONFIG_CONFIG_H
#define MAGLB_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define CONFIG_NAME_MAX 32          /* names of VIPs, ports, sync groups */
#define CONFIG_DEVICE_MAX 128       /* DPDK device arguments of a port */
#define CONFIG_PATH_MAX 128         /* HTTP health-check path */
#define CONFIG_ERROR_MAX 512
#define CONFIG_PORTS_MAX 16
#define CONFIG_VIPS_MAX 1024
#define CONFIG_BACKENDS_MAX 4096    /* per VIP */
#define CONFIG_WEIGHT_MAX 1000
#define CONFIG_FLOWS_CAPACITY_MAX (1u << 26)  /* a worker table: 4.8 GB */
#define CONFIG_TABLE_SIZE_DEFAULT 65537u
#define CONFIG_TABLE_SIZE_MAX 16777213u  /* largest prime below 2^24 */
#define CONFIG_TABLE_PER_BACKEND_MIN 10u /* M >= 10 * backends */

/* An IPv4 or IPv6 address; family is AF_INET or AF_INET6. */
struct config_addr {
	int family;
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t bytes[16];
	};
};

enum config_proto {
	CONFIG_PROTO_TCP = 0,
	CONFIG_PROTO_UDP,
	CONFIG_PROTO_MAX
};

enum config_encap {
	CONFIG_ENCAP_GRE = 0,
	CONFIG_ENCAP_IPIP,
	CONFIG_ENCAP_L2,
	CONFIG_ENCAP_MAX
};

/* What the per-packet Maglev hash covers. */
enum config_hash_mode {
	CONFIG_HASH_5TUPLE = 0,     /* default: (vip, vport, proto, client, cport) */
	CONFIG_HASH_CLIENT,         /* client address only: LVS-style persistence */
	CONFIG_HASH_MAX
};

enum config_health_type {
	CONFIG_HEALTH_NONE = 0,
	CONFIG_HEALTH_TCP,          /* TCP connect */
	CONFIG_HEALTH_HTTP,         /* HTTP GET, expects 2xx/3xx */
	CONFIG_HEALTH_MAX
};

/* What the cluster's nodes do (cluster.mode). */
enum config_cluster_mode {
	CONFIG_CLUSTER_ACTIVE_PASSIVE = 0, /* the best eligible node owns the VIPs */
	CONFIG_CLUSTER_ACTIVE_ACTIVE,      /* every eligible node serves them */
	CONFIG_CLUSTER_MODE_MAX
};

/*
 * BFD (RFC 5880) toward the routers on the data port. 10 ms is what the
 * control thread (a 1 ms tick on a core it shares) can keep to; past 10 s
 * a session detects nothing a router would wait for (255 x 10 s is 42
 * minutes already). The multiplier is the 8-bit Detect Mult, 0 invalid.
 * Keys: RFC 5880 4.4, 1..20 bytes for SHA-1.
 */
#define CONFIG_BFD_PEERS_MAX 16
#define CONFIG_BFD_INTERVAL_MS_MIN 10u
#define CONFIG_BFD_INTERVAL_MS_MAX 10000u
#define CONFIG_BFD_INTERVAL_MS_DEFAULT 300u
#define CONFIG_BFD_MULTIPLIER_MAX 255u
#define CONFIG_BFD_MULTIPLIER_DEFAULT 3u
#define CONFIG_BFD_KEY_MAX 20u

#define CONFIG_LEASE_MS_MIN 100u
#define CONFIG_LEASE_MS_MAX 60000u
#define CONFIG_HOOKS_DIR_MAX 256

extern const char *const config_cluster_mode_names[CONFIG_CLUSTER_MODE_MAX];
extern const char *const config_proto_names[CONFIG_PROTO_MAX];
extern const char *const config_encap_names[CONFIG_ENCAP_MAX];
extern const char *const config_hash_mode_names[CONFIG_HASH_MAX];
extern const char *const config_health_type_names[CONFIG_HEALTH_MAX];

struct config_health {
	enum config_health_type type;
	uint16_t port;              /* 0: the VIP's port (error if the VIP is all-ports) */
	uint32_t interval_ms;
	uint32_t timeout_ms;        /* < interval_ms */
	uint32_t rise;              /* consecutive successes to go up, >= 1 */
	uint32_t fall;              /* consecutive failures to go down, >= 1 */
	char http_path[CONFIG_PATH_MAX]; /* starts with '/' */
};

struct config_backend {
	struct config_addr addr;
	uint32_t weight;            /* 0..CONFIG_WEIGHT_MAX; 0 drains */
	bool has_mac;
	uint8_t mac[6];             /* required for encap l2 */
	int line;                   /* line in the config file, for later messages */
};

struct config_vip {
	char name[CONFIG_NAME_MAX];
	struct config_addr addr;
	uint16_t port;              /* 0: all ports */
	enum config_proto proto;
	enum config_encap encap;
	enum config_hash_mode hash;
	uint32_t table_size;        /* Maglev M: prime, >= 10 * backends */
	char sync_group[CONFIG_NAME_MAX];
	uint32_t sync_after_packets; /* IPVS-style sync threshold, 0: sync at once */
	struct config_health health; /* defaults from the health section */
	uint32_t n_backends;
	struct config_backend *backends; /* n_backends entries, owned by the config */
	int line;
};

struct config_port {
	char name[CONFIG_NAME_MAX];
	char device[CONFIG_DEVICE_MAX]; /* PCI address or vdev name, as for EAL */
	uint32_t mtu;                   /* 576..9702 */
	uint32_t mbufs;                 /* packet buffers; 0: 8192 per worker + 4096 */
	uint32_t vlan;                  /* 802.1Q VLAN id 1..4094; 0: untagged */
	bool has_gateway4, has_gateway6;
	struct config_addr gateway4;    /* next hop of tunnels to backends */
	struct config_addr gateway6;
	bool has_gateway4_mac, has_gateway6_mac;
	uint8_t gateway4_mac[6];        /* static: no ARP/ND for the gateway */
	uint8_t gateway6_mac[6];
	int line;
};

/* The bfd section; absent: n_peers 0, no sessions. */
struct config_bfd {
	uint32_t n_peers;
	struct config_addr peers[CONFIG_BFD_PEERS_MAX]; /* unique, unicast */
	int peer_lines[CONFIG_BFD_PEERS_MAX];
	uint32_t interval_ms;           /* desired min TX and required min RX */
	uint32_t multiplier;            /* detect mult, 1..255 */
	bool has_auth;                  /* Meticulous Keyed SHA-1 */
	uint8_t key_id;
	uint32_t key_len;               /* 1..CONFIG_BFD_KEY_MAX */
	uint8_t key[CONFIG_BFD_KEY_MAX];
	int line;
};

struct config_timeouts {            /* idle timeouts, seconds */
	uint32_t tcp_syn;               /* only a SYN seen */
	uint32_t tcp_established;
	uint32_t tcp_closing;           /* linger after FIN or RST */
	uint32_t udp;
};

struct config_flows {
	uint32_t capacity;              /* entries per worker table, >= 1024 */
	uint32_t shared_capacity;       /* entries in the table synced from peers */
	uint32_t insert_rate;           /* new entries per second per worker; 0: no cap */
	uint32_t refresh_interval;      /* seconds between REFRESH of a live flow */
	struct config_timeouts timeouts;
};

struct config_sync {
	uint32_t max_batch_bytes;       /* 512..65536 */
	uint32_t max_batch_delay_ms;    /* 1..1000 */
	uint32_t queue_entries;         /* bound of each export/IPC queue */
};

/*
 * The monitor section: maglb-monitor's HTTP(S) listeners. Plain HTTP
 * (tls = false) is refused unless every listener is a loopback address,
 * since its passwords and session cookies would cross the network in the
 * clear. Absent: present false, and maglb-monitor refuses to start.
 */
#define CONFIG_MONITOR_LISTEN_MAX 8
#define CONFIG_FILE_PATH_MAX 256
#define CONFIG_MONITOR_USERS_FILE_DEFAULT "/etc/maglb/monitor-users"
#define CONFIG_MONITOR_CONNECTIONS_MAX 4096u
#define CONFIG_MONITOR_CONNECTIONS_DEFAULT 64u
#define CONFIG_MONITOR_TIMEOUT_S_MAX 300u
#define CONFIG_MONITOR_TIMEOUT_S_DEFAULT 10u

struct config_listen {
	struct config_addr addr;        /* may be the unspecified address */
	uint16_t port;                  /* 1..65535 */
	int line;
};

struct config_monitor {
	bool present;
	uint32_t n_listen;
	struct config_listen listen[CONFIG_MONITOR_LISTEN_MAX];
	bool tls;                       /* default true */
	char tls_cert[CONFIG_FILE_PATH_MAX];    /* PEM; required with tls */
	char tls_key[CONFIG_FILE_PATH_MAX];
	char users_file[CONFIG_FILE_PATH_MAX];
	bool metrics_auth;              /* /metrics asks for a user too */
	uint32_t max_connections;       /* at once, every listener */
	uint32_t timeout_s;             /* an idle or slow connection is closed */
	int line;
};

/* Whether a is in 127.0.0.0/8 or is ::1. */
bool config_addr_is_loopback(const struct config_addr *a);

struct config {
	char file[256];                 /* the path it was loaded from */
	uint8_t hash_seed[16];          /* cluster.hash_seed, 32 hex digits */
	enum config_cluster_mode mode;  /* cluster.mode, default active-passive */
	bool preempt;                   /* a better node takes the role back */
	uint32_t lease_ms;              /* VIP ownership lease, renewed by syncd */
	char hooks_dir[CONFIG_HOOKS_DIR_MAX]; /* role-change hooks; "" none */
	uint32_t hook_timeout_ms;       /* each hook's time limit */
	uint32_t node_id;               /* >= 1 */
	uint32_t priority;              /* 0..255 */
	bool has_node_addr4, has_node_addr6;
	struct config_addr node_addr4;  /* outer source of IPv4 tunnels */
	struct config_addr node_addr6;  /* outer source of IPv6 tunnels */
	uint32_t n_ports;
	struct config_port ports[CONFIG_PORTS_MAX];
	struct config_flows flows;
	struct config_sync sync;
	struct config_health health;    /* defaults for every VIP */
	struct config_bfd bfd;
	struct config_monitor monitor;
	uint32_t n_vips;
	struct config_vip *vips;        /* n_vips entries, owned by the config */
};

/*
 * Parse and validate the file at path. On success returns a new config the
 * caller frees with config_free(). On failure returns NULL and writes
 * "file:line: reason" (or "file: reason" when no line applies) into err,
 * which has room for errlen bytes.
 */
struct config *config_load(const char *path, char *err, size_t errlen);

/* The same from a string; name stands in for the file name in errors. */
struct config *config_load_string(const char *text, const char *name,
				  char *err, size_t errlen);

/* Free a config; NULL is a no-op. */
void config_free(struct config *cfg);

/* Format an address into buf (INET6_ADDRSTRLEN bytes), canonical form. */
const char *config_addr_str(const struct config_addr *addr, char *buf, size_t len);

/* Find a VIP by name; NULL if none. */
const struct config_vip *config_vip_find(const struct config *cfg, const char *name);

#endif /* MAGLB_CONFIG_CONFIG_H */
