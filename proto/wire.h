/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire: every message maglb sends between nodes (flow sync over corosync
 * CPG) and on the local IPC (dataplane <-> syncd and maglbctl), as plain C.
 *
 * The schema is proto/sync.proto and proto/control.proto, packed with
 * protobuf-c; this header is the whole of it that the rest of maglb sees,
 * and no protobuf-c type appears here. proto/README.md draws the layout and
 * lists the drop counters.
 *
 * Encoders check the message (an encoder never sends what a decoder would
 * drop) and pack it into the caller's buffer. Decoders validate everything
 * first and convert only once the whole message has passed: a rejected
 * message leaves the caller's structs exactly as they were and bumps exactly
 * one drop counter.
 *
 * Threads: there is no global state; every function may be called from any
 * thread. A struct wire_counters belongs to one thread at a time. None of
 * these functions is meant for a worker lcore: encoders allocate scratch
 * memory with malloc and free it before they return.
 */
#ifndef MAGLB_PROTO_WIRE_H
#define MAGLB_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	WIRE_VERSION = 2,           /* of control.proto */
	WIRE_SYNC_VERSION = 2,      /* of sync.proto */
	WIRE_ADDR_MAX = 16,         /* bytes of an address: IPv4 uses the first 4 */
	WIRE_MAC_LEN = 6,           /* bytes of a MAC address */
};

/* ---------------------------------------------------------------- flows */

/* Bits of wire_flow.flags. Decoders clear bits they do not know. */
enum {
	WIRE_FLOW_ESTABLISHED = 1u << 0, /* TCP: the client sent more than a SYN */
	WIRE_FLOW_CLOSING = 1u << 1,     /* TCP: the client sent a FIN or a RST */
	WIRE_FLOW_FROM_PEER = 1u << 2,   /* learnt from a peer, not made here */
	WIRE_FLOW_FLAGS_ALL = (1u << 3) - 1,  /* the bits sync messages carry */
	/*
	 * Control only, in dumps and lookups: the dataplane's entry is
	 * provisional, Maglev's guess for a flow first seen mid-stream that a
	 * peer's entry may still replace (dataplane/README.md). Sync messages
	 * and export or import batches never carry it.
	 */
	WIRE_FLOW_PROVISIONAL = 1u << 3,
	WIRE_FLOW_FLAG_BITS = 4,
};

/* "established", "closing", "from-peer", "provisional": bit i's name. */
extern const char *const wire_flow_flag_names[WIRE_FLOW_FLAG_BITS];

/*
 * One connection entry: the full key, the backend, what is left of its idle
 * lifetime and its flags. An IPv4 address sits in the first 4 bytes of its
 * array, the other 12 are zero. family is that of vip and client (always the
 * same); backend_family may differ (an IPv4 VIP served through an IPv6
 * tunnel). A lookup key has backend_family 0 and no backend.
 */
struct wire_flow {
	uint8_t family;             /* AF_INET or AF_INET6: vip and client */
	uint8_t proto;              /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t vip_port;          /* host order */
	uint16_t client_port;       /* host order */
	uint8_t backend_family;     /* AF_INET or AF_INET6; 0: no backend */
	uint8_t flags;              /* WIRE_FLOW_* bits */
	uint32_t lifetime_ms;       /* remaining idle lifetime */
	uint32_t origin;            /* node that wrote it last (a resync says;
				     * in a live batch, the sender); 0 unset */
	uint8_t vip[WIRE_ADDR_MAX];
	uint8_t client[WIRE_ADDR_MAX];
	uint8_t backend[WIRE_ADDR_MAX];
};

/*
 * Sizes in bytes of entries as Flow messages (a control dump page or
 * lookup), for packing pages bounded in bytes; an export or import batch
 * (columns, as sync's below) takes no more. An entry adds exactly
 * wire_flow_encoded_size() bytes to a page: a typical IPv4 one 35 (IPv6: 71), at most WIRE_FLOW_ENCODED_MAX_V4
 * for an IPv4 entry with an IPv4 backend and WIRE_FLOW_ENCODED_MAX for any
 * (IPv6, every field at its largest). A message of len bytes holds at most
 * len / WIRE_FLOW_ENCODED_MIN valid entries: size decode buffers with that.
 * A flag bit past bit 6 would add a byte to both maxima.
 */
enum {
	WIRE_FLOW_ENCODED_MAX = 80,
	WIRE_FLOW_ENCODED_MAX_V4 = 44,
	WIRE_FLOW_ENCODED_MIN = 22,
};

/* True if f is a complete entry (key and backend) that encoders accept. */
bool wire_flow_is_valid(const struct wire_flow *f);

/* Bytes f adds to an encoded batch; 0 if f is not valid. */
size_t wire_flow_encoded_size(const struct wire_flow *f);

/* ------------------------------------------------------- drop counters */

/* Why a decoder dropped a message: one counter each. */
#define WIRE_DROP_REASONS(X) \
	X(TRUNCATED, "truncated or unparseable") \
	X(BAD_VERSION, "version is not the one this node speaks") \
	X(UNKNOWN_KIND, "no body, or a body of a kind this node does not know") \
	X(BAD_SENDER, "sender or requester node id is 0") \
	X(BAD_EPOCH, "resync epoch is 0") \
	X(BAD_ADDRESS, "address not 4 or 16 bytes, MAC not 0 or 6, " \
	  "or vip and client families differ") \
	X(BAD_PROTOCOL, "protocol is not tcp or udp") \
	X(BAD_PORT, "port above 65535") \
	X(TOO_MANY_ENTRIES, "more entries than the receiver's buffer holds") \
	X(BAD_STRING, "string too long for its field") \
	X(BAD_ENUM, "enum value unknown or unspecified") \
	X(BAD_HISTOGRAM, "histogram of another number of buckets, or counts that decrease") \
	X(NO_MEMORY, "out of memory while converting")

enum wire_drop {
#define WIRE_DROP_ENUM_(name, text) WIRE_DROP_##name,
	WIRE_DROP_REASONS(WIRE_DROP_ENUM_)
#undef WIRE_DROP_ENUM_
	WIRE_DROP_MAX
};

/* "TRUNCATED", ... and their descriptions, for counters and logs. */
extern const char *const wire_drop_names[WIRE_DROP_MAX];
extern const char *const wire_drop_descriptions[WIRE_DROP_MAX];

/* Owned by the caller, zeroed by it; decoders add to it. */
struct wire_counters {
	uint64_t drops[WIRE_DROP_MAX];
};

/* ----------------------------------------------------------------- sync */

enum wire_sync_kind {
	WIRE_SYNC_NEW = 0,          /* entries: flows made here */
	WIRE_SYNC_REFRESH,          /* entries: long flows still alive */
	WIRE_SYNC_CLOSE,            /* entries: flows closed by FIN or RST */
	WIRE_SYNC_RESYNC_REQUEST,   /* epoch; peer = donor asked, 0 any */
	WIRE_SYNC_RESYNC_BEGIN,     /* epoch; peer = requester */
	WIRE_SYNC_RESYNC_ENTRIES,   /* epoch; peer = requester; entries */
	WIRE_SYNC_RESYNC_END,       /* epoch; peer = requester; entry_count */
	WIRE_SYNC_DIGEST_REQUEST,   /* epoch = the round */
	WIRE_SYNC_DIGEST,           /* epoch = round; peer = requester;
				     * entry_count, digest, maglev_digest */
	WIRE_SYNC_NODE_STATE,       /* state */
	WIRE_SYNC_HEALTH,           /* entries: backends down; generation */
	WIRE_SYNC_KIND_MAX
};

extern const char *const wire_sync_kind_names[WIRE_SYNC_KIND_MAX];

/* A node's role; the values are sync.proto's Role. */
enum wire_role {
	WIRE_ROLE_UNSPECIFIED = 0,  /* never in a NodeState; a member not heard */
	WIRE_ROLE_PASSIVE = 1,
	WIRE_ROLE_ACTIVE = 2,
	WIRE_ROLE_MAX
};

/* The values are sync.proto's ClusterMode. */
enum wire_cluster_mode {
	WIRE_CLUSTER_MODE_UNSPECIFIED = 0,  /* never valid */
	WIRE_CLUSTER_MODE_ACTIVE_PASSIVE = 1,
	WIRE_CLUSTER_MODE_ACTIVE_ACTIVE = 2,
	WIRE_CLUSTER_MODE_MAX
};

/* "unspecified", "passive", "active"; "unspecified", "active-passive", ... */
extern const char *const wire_role_names[WIRE_ROLE_MAX];
extern const char *const wire_cluster_mode_names[WIRE_CLUSTER_MODE_MAX];

/*
 * NODE_STATE: what the sender holds now. Decoders refuse a role or mode
 * that is unspecified or unknown (BAD_ENUM).
 */
struct wire_node_state {
	uint32_t priority;          /* node.priority */
	bool dataplane;             /* its dataplane answers */
	bool synced;                /* resync complete, imports acknowledged */
	bool quorate;
	bool standby;               /* an admin took it out */
	bool preempt;
	enum wire_role role;        /* the role it holds now */
	enum wire_cluster_mode mode;
	uint64_t incarnation;       /* its syncd's start, CLOCK_REALTIME µs:
				     * a new value is a restart */
};

/*
 * One sync message. Fields a kind does not carry (see the enum) are ignored
 * by the encoder and zero after a decode.
 */
struct wire_sync_msg {
	uint32_t version;           /* decode: WIRE_SYNC_VERSION; encode writes that */
	enum wire_sync_kind kind;
	uint32_t node_id;           /* sender, >= 1 */
	uint64_t seq;               /* sender's message number */
	uint32_t epoch;             /* RESYNC_*, DIGEST*: >= 1 */
	uint32_t peer;              /* see the enum; >= 1 but in the REQUESTs */
	uint64_t entry_count;       /* RESYNC_END, DIGEST */
	uint64_t digest;            /* DIGEST */
	uint64_t maglev_digest;     /* DIGEST: the sender's dataplane's Maglev
				     * digest; 0 unknown */
	uint64_t stamp_us;          /* NEW, REFRESH, CLOSE: the sender's
				     * CLOCK_REALTIME µs at the first export
				     * in it (lag); 0 none */
	uint64_t generation;        /* HEALTH: the sender's report number */
	struct wire_node_state state; /* NODE_STATE */
	/*
	 * Owned by the caller. HEALTH: the backends down, each a wire_flow
	 * with family, vip, vip_port, proto, backend_family and backend set
	 * and the rest zero; the VIP and the backend may be of different
	 * families.
	 */
	const struct wire_flow *entries;
	size_t count;
};

/*
 * Sizes of sync messages, for packing batches bounded in bytes. Entries
 * travel as columns (sync.proto's Entries): an entry adds exactly
 * wire_sync_entry_size() bytes to its message's columns, a typical IPv4
 * one 21 (port 80, lifetime of 3 varint bytes), at most
 * WIRE_SYNC_ENTRY_MAX_V4 for an IPv4 entry with an IPv4 backend and
 * WIRE_SYNC_ENTRY_MAX for any, at least WIRE_SYNC_ENTRY_MIN. A resync's
 * entries carry their origin too. A message of len bytes holds at most
 * len / WIRE_SYNC_ENTRY_MIN valid entries: size decode buffers with that.
 * A flag bit past bit 6 would add a byte to both maxima.
 */
enum {
	WIRE_SYNC_ENTRY_MAX = 66,
	WIRE_SYNC_ENTRY_MAX_V4 = 30,
	WIRE_SYNC_ENTRY_MIN = 19,
};

/*
 * Bytes f adds to a message of kind (NEW, REFRESH, CLOSE or
 * RESYNC_ENTRIES); 0 if f is not valid.
 */
size_t wire_sync_entry_size(enum wire_sync_kind kind, const struct wire_flow *f);

/*
 * Bytes of an encoded message without its entries, at most: a message with
 * entries e1..en takes no more than WIRE_SYNC_HEADER_MAX + sum of
 * wire_sync_entry_size(ei) bytes, and, but for HEALTH, no less than the
 * sum (the header: the envelope, the batch, and each column's tag and
 * length, up to 1 MiB of them). The largest message without entries is a
 * DIGEST (62 bytes with every field at its largest), then a NODE_STATE (52).
 *
 * A HEALTH entry is sent as a BackendRef message without its client,
 * lifetime and flags: it adds WIRE_BACKEND_REF_ENCODED_MIN to
 * WIRE_BACKEND_REF_ENCODED_MAX bytes (IPv6 VIP and backend, port above
 * 16383). So a message of len bytes of any kind holds at most
 * len / WIRE_BACKEND_REF_ENCODED_MIN entries: size decode buffers for
 * HEALTH with that (len / WIRE_SYNC_ENTRY_MIN is enough for the others).
 */
enum {
	WIRE_SYNC_HEADER_MAX = 96,
	WIRE_BACKEND_REF_ENCODED_MIN = 16,
	WIRE_BACKEND_REF_ENCODED_MAX = 44,
};

/*
 * Pack m into buf (len bytes). On success returns 0 and stores the encoded
 * length in *out_len. Returns -EINVAL if m is not valid (unknown kind, node
 * id 0, epoch 0 or requester 0 in a resync, an invalid entry, entries
 * missing, a NODE_STATE's role or mode unspecified), -ENOSPC if buf is too
 * small (*out_len then holds the size needed), -ENOMEM. buf is written
 * only on success.
 */
int wire_sync_encode(const struct wire_sync_msg *m, uint8_t *buf, size_t len,
		     size_t *out_len);

/* The exact encoded size of m; 0 if m is not valid or memory ran out. */
size_t wire_sync_encoded_size(const struct wire_sync_msg *m);

/*
 * Decode and validate buf (len bytes). On success fills *m, writes its
 * entries into entries[0..m->count) (cap entries of room, may be NULL when
 * cap is 0), points m->entries there and returns 0. On failure returns
 * -errno, bumps exactly one counter of c (c may be NULL) and leaves m and
 * entries untouched:
 *   -EBADMSG          TRUNCATED, UNKNOWN_KIND, BAD_SENDER, BAD_EPOCH,
 *                     BAD_ADDRESS, BAD_PROTOCOL, BAD_PORT, BAD_ENUM
 *   -EPROTONOSUPPORT  BAD_VERSION
 *   -EMSGSIZE         TOO_MANY_ENTRIES
 *   -ENOMEM           NO_MEMORY
 * Unknown flag bits are cleared, unknown fields ignored.
 */
int wire_sync_decode(const uint8_t *buf, size_t len, struct wire_sync_msg *m,
		     struct wire_flow *entries, size_t cap,
		     struct wire_counters *c);

/* -------------------------------------------------------------- control */

enum {
	WIRE_NAME_MAX = 64,         /* names: VIPs, counters, scopes; with NUL */
	WIRE_TEXT_MAX = 512,        /* error texts; with NUL */
};

enum wire_ctl_kind {
	WIRE_CTL_STATUS_REQUEST = 0,    /* no body */
	WIRE_CTL_STATUS_RESPONSE,       /* status */
	WIRE_CTL_COUNTERS_REQUEST,      /* counters_request */
	WIRE_CTL_COUNTERS_RESPONSE,     /* counters */
	WIRE_CTL_VIP_LIST_REQUEST,      /* vip_list_request */
	WIRE_CTL_VIP_LIST_RESPONSE,     /* vip_list */
	WIRE_CTL_BACKEND_SET,           /* backend_set */
	WIRE_CTL_RELOAD_REQUEST,        /* reload_request */
	WIRE_CTL_RELOAD_RESULT,         /* reload_result */
	WIRE_CTL_OWNERSHIP_SET,         /* ownership */
	WIRE_CTL_FLOW_LOOKUP_REQUEST,   /* lookup_key */
	WIRE_CTL_FLOW_LOOKUP_RESPONSE,  /* lookup */
	WIRE_CTL_DUMP_REQUEST,          /* dump_request */
	WIRE_CTL_DUMP_RESPONSE,         /* dump */
	WIRE_CTL_EXPORT_SUBSCRIBE,      /* export_subscribe */
	WIRE_CTL_EXPORT_BATCH,          /* flows */
	WIRE_CTL_IMPORT_BATCH,          /* flows */
	WIRE_CTL_ERROR,                 /* error; code 0 acknowledges success */
	WIRE_CTL_SYNC_VERIFY_REQUEST,   /* sync_verify_request (to syncd) */
	WIRE_CTL_SYNC_VERIFY_RESULT,    /* sync_verify */
	WIRE_CTL_CLUSTER_REQUEST,       /* no body (to syncd) */
	WIRE_CTL_CLUSTER_STATUS,        /* cluster */
	WIRE_CTL_CLUSTER_STANDBY,       /* cluster_standby (to syncd) */
	WIRE_CTL_SYNC_STATUS_REQUEST,   /* no body (to syncd) */
	WIRE_CTL_SYNC_STATUS,           /* sync_status */
	WIRE_CTL_BFD_STATUS_REQUEST,    /* no body (to the dataplane) */
	WIRE_CTL_BFD_STATUS,            /* bfd_status */
	WIRE_CTL_HEALTH_STATUS_REQUEST, /* health_status_request (to syncd) */
	WIRE_CTL_HEALTH_STATUS,         /* health_status */
	WIRE_CTL_KIND_MAX
};

enum wire_backend_state {
	WIRE_BACKEND_UP = 0,
	WIRE_BACKEND_DOWN,
	WIRE_BACKEND_DRAINING,
	WIRE_BACKEND_STATE_MAX
};

enum wire_backend_action {
	WIRE_BACKEND_SET_WEIGHT = 0,
	WIRE_BACKEND_DRAIN,
	WIRE_BACKEND_MARK_DOWN,
	WIRE_BACKEND_MARK_UP,
	WIRE_BACKEND_ACTION_MAX
};

enum wire_flow_table {
	WIRE_FLOW_TABLE_NONE = 0,   /* no VIP matches the key */
	WIRE_FLOW_TABLE_WORKER,     /* in a worker's own table */
	WIRE_FLOW_TABLE_SYNCED,     /* in the table synced from peers */
	WIRE_FLOW_TABLE_MAGLEV,     /* not tracked: what Maglev picks now */
	WIRE_FLOW_TABLE_MAX
};

enum wire_flow_event {
	WIRE_FLOW_EVENT_NEW = 0,
	WIRE_FLOW_EVENT_REFRESH,
	WIRE_FLOW_EVENT_CLOSE,
	WIRE_FLOW_EVENT_MAX
};

extern const char *const wire_ctl_kind_names[WIRE_CTL_KIND_MAX];
extern const char *const wire_backend_state_names[WIRE_BACKEND_STATE_MAX];
extern const char *const wire_backend_action_names[WIRE_BACKEND_ACTION_MAX];
extern const char *const wire_flow_table_names[WIRE_FLOW_TABLE_MAX];
extern const char *const wire_flow_event_names[WIRE_FLOW_EVENT_MAX];

/*
 * Whether a client may send kind as a request (a response, an event or an
 * error may not): what every IPC server checks before its handler runs.
 */
bool wire_ctl_kind_is_request(enum wire_ctl_kind kind);

/*
 * Strings are NUL-terminated inside their arrays. Arrays (pointer + count)
 * are the caller's when it encodes, and allocated by wire_ctl_decode() when
 * it decodes (see there).
 */
struct wire_ctl_status {
	uint32_t node_id;
	uint32_t workers;
	uint32_t ports;
	uint32_t vips;
	uint32_t vips_owned;
	uint64_t uptime_ms;
	uint64_t flows_local;       /* in the workers' tables */
	uint64_t flows_synced;      /* in the table synced from peers */
	uint64_t maglev_digest;     /* every VIP's Maglev table, combined */
	bool serving;               /* should get traffic (wire_ctl_ownership) */
	uint32_t serving_lease_remaining_ms; /* unless renewed; 0: not serving, or
				     * no lease */
};

struct wire_ctl_counters_request {
	char scope[WIRE_NAME_MAX];  /* prefix of the scopes wanted; "" all */
};

struct wire_ctl_counter {
	char scope[WIRE_NAME_MAX];  /* "worker0", "port0", "vip:web", "sync" */
	char name[WIRE_NAME_MAX];
	uint64_t value;
};

struct wire_ctl_counters {
	struct wire_ctl_counter *counters;
	size_t count;
};

/*
 * A VIP list comes in pages of whole VIPs, as many as hold no more than
 * VIP_LIST_PAGE_BACKENDS backends together (at least one VIP), so that a
 * page with traffic stays well under the IPC bound (about 100 bytes a
 * backend with every field) and a VIP of CONFIG_BACKENDS_MAX backends
 * still fits alone.
 */
enum {
	VIP_LIST_PAGE_BACKENDS = 4096,
};

struct wire_ctl_vip_list_request {
	char name[WIRE_NAME_MAX];   /* one VIP; "" every VIP */
	bool backends;              /* also list their backends */
	bool stats;                 /* and the traffic of VIPs and backends */
	uint32_t cursor;            /* first VIP: 0, then the last next_cursor */
};

/* Since the dataplane started; untracked: packets past the insert cap. */
struct wire_ctl_traffic {
	uint64_t packets;
	uint64_t bytes;
	uint64_t new_flows;
	uint64_t untracked;
	uint64_t synced_hits;
	uint64_t maglev_picks;
};

struct wire_ctl_vip {
	char name[WIRE_NAME_MAX];
	uint8_t family;             /* AF_INET or AF_INET6 */
	uint8_t proto;              /* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t port;              /* 0: every port */
	uint8_t address[WIRE_ADDR_MAX];
	bool owned;
	uint32_t backends;
	uint32_t backends_up;
	uint64_t flows;
	uint64_t maglev_digest;     /* of its Maglev table */
	uint32_t table_size;        /* Maglev's M */
	struct wire_ctl_traffic traffic;  /* when asked: its backends' sums */
};

struct wire_ctl_backend {
	char vip[WIRE_NAME_MAX];    /* the VIP it serves */
	uint8_t family;
	uint8_t address[WIRE_ADDR_MAX];
	uint32_t weight;
	enum wire_backend_state state;
	bool next_hop_resolved;     /* next_hop_mac is known (on the wire: 6
				     * bytes, else none) */
	uint8_t next_hop_mac[WIRE_MAC_LEN];  /* where its packets go on the link:
				     * the gateway, the backend (on-link, l2) */
	uint32_t config_weight;     /* the config's; weight is as set now */
	uint32_t maglev_slots;      /* of its VIP's table, held now */
	uint64_t flows;             /* when asked: the workers' entries for it */
	struct wire_ctl_traffic traffic;  /* when asked */
};

struct wire_ctl_vip_list {
	struct wire_ctl_vip *vips;
	size_t n_vips;
	struct wire_ctl_backend *backends;
	size_t n_backends;
	uint32_t next_cursor;       /* 0: the list is complete */
};

struct wire_ctl_backend_set {
	char vip[WIRE_NAME_MAX];
	uint8_t family;             /* of the backend */
	uint8_t backend[WIRE_ADDR_MAX];
	enum wire_backend_action action;
	uint32_t weight;            /* SET_WEIGHT */
};

struct wire_ctl_reload_request {
	bool check_only;            /* validate, change nothing */
};

struct wire_ctl_reload_result {
	bool ok;
	char error[WIRE_TEXT_MAX];  /* "file:line: reason" */
};

struct wire_ctl_ownership_entry {
	char vip[WIRE_NAME_MAX];
	bool owned;
};

struct wire_ctl_ownership {
	struct wire_ctl_ownership_entry *vips;
	size_t count;
	bool announce;              /* gratuitous ARP / unsolicited NA */
	uint32_t lease_ms;          /* VIPs taken stay owned this long unless
				     * renewed; 0 no lease */
	bool serving;               /* should get traffic, for lease_ms too */
};

struct wire_ctl_lookup {
	enum wire_flow_table table;
	uint32_t worker;            /* TABLE_WORKER */
	struct wire_flow flow;      /* key, and backend unless TABLE_NONE */
};

struct wire_ctl_dump_request {
	uint64_t cursor;            /* 0 first, then the last next_cursor */
	uint32_t limit;             /* entries per page at most */
	char vip[WIRE_NAME_MAX];    /* "" every VIP */
};

struct wire_ctl_dump {
	struct wire_flow *entries;
	size_t count;
	uint64_t next_cursor;       /* 0: complete */
};

struct wire_ctl_export_subscribe {
	bool enable;
};

/* EXPORT_BATCH (dataplane -> syncd) and IMPORT_BATCH (syncd -> dataplane). */
struct wire_ctl_flows {
	enum wire_flow_event event;
	struct wire_flow *entries;
	size_t count;
	uint64_t dropped;           /* export: lost since the last batch */
	uint32_t peer;              /* import: node the entries came from */
};

struct wire_ctl_sync_verify_request {
	char group[WIRE_NAME_MAX];
	uint32_t round;             /* 0: start a round */
};

struct wire_ctl_sync_digest {
	uint32_t node;              /* >= 1 */
	uint64_t entry_count;
	uint64_t digest;
	uint64_t maglev_digest;     /* its dataplane's; 0 unknown */
};

struct wire_ctl_sync_verify {
	char group[WIRE_NAME_MAX];
	uint32_t round;             /* >= 1 */
	uint32_t members;
	struct wire_ctl_sync_digest *digests;
	size_t count;
};

/* One member of the cluster, as the node answering sees it. */
struct wire_ctl_cluster_member {
	uint32_t id;                /* >= 1 */
	enum wire_role role;        /* UNSPECIFIED only when !known */
	uint32_t priority;
	bool known;                 /* its state was heard; else the rest is
				     * zero */
	bool eligible;              /* may hold the active role now */
	bool dataplane;
	bool synced;
	bool quorate;
	bool standby;
};

/* CLUSTER_STATUS: the membership, from syncd. */
struct wire_ctl_cluster {
	uint32_t node_id;           /* this node, >= 1 */
	enum wire_cluster_mode mode;
	bool preempt;
	bool quorate;
	enum wire_role role;        /* this node's: PASSIVE or ACTIVE */
	bool eligible;
	bool standby;
	uint64_t role_changes;
	uint64_t last_change_unix_ms; /* 0: never */
	uint32_t lease_ms;          /* of the VIP ownership it hands out */
	struct wire_ctl_cluster_member *members;
	size_t count;
};

struct wire_ctl_cluster_standby {
	bool on;
};

enum {
	WIRE_SYNC_MEMBERS_MAX = 64,     /* members of a group a status lists */
};

/*
 * Cumulative histograms, Prometheus style, since the process started
 * (never reset; a reload keeps them): a ladder of upper bounds in µs fixed
 * here per use and not sent, and for each bound the count of observations
 * at or below it (cumulative: never decreasing along the ladder), the count
 * of every observation (the +Inf bucket, at least the last bound's) and
 * their sum in µs. As Prometheus wants them: le="bound / 1e6" seconds is
 * cumulative[i], le="+Inf" is count, _sum is sum_us / 1e6 and _count is
 * count. Decoders refuse (BAD_HISTOGRAM) one of another number of bounds,
 * or whose counts decrease (count included); an absent one (an older
 * sender) decodes as empty, all zero.
 *
 * wire_lag_bucket_us[]: replication lag, 100 µs .. 60 s: 100, 250, 500 µs,
 * 1, 2.5, 5, 10, 25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10, 30, 60 s.
 * wire_probe_bucket_us[]: health probe durations, 250 µs .. 10 s: 250,
 * 500 µs, 1, 2.5, 5, 10, 25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10 s.
 */
enum {
	WIRE_LAG_BUCKETS = 18,
	WIRE_PROBE_BUCKETS = 15,
};

extern const uint32_t wire_lag_bucket_us[WIRE_LAG_BUCKETS];
extern const uint32_t wire_probe_bucket_us[WIRE_PROBE_BUCKETS];

struct wire_lag_histogram {
	uint64_t cumulative[WIRE_LAG_BUCKETS]; /* [i]: <= wire_lag_bucket_us[i] */
	uint64_t count;             /* every observation: the +Inf bucket */
	uint64_t sum_us;
};

struct wire_probe_histogram {
	uint64_t cumulative[WIRE_PROBE_BUCKETS]; /* [i]: <= wire_probe_bucket_us[i] */
	uint64_t count;
	uint64_t sum_us;
};

/*
 * The bucket v falls in over bounds[0..n) (ascending): the first i with
 * v <= bounds[i], n above them all. A few compares, for the counters that
 * feed the histograms above (one per bucket, cumulated when reported).
 */
static inline unsigned int
wire_bucket_of(const uint32_t *bounds, unsigned int n, uint64_t v)
{
	unsigned int i = 0;

	while (i < n && v > bounds[i])
		i++;
	return i;
}

/* One sync group, in SYNC_STATUS. */
struct wire_ctl_sync_group {
	char name[WIRE_NAME_MAX];
	char state[WIRE_NAME_MAX];  /* syncd's name of the group's state */
	uint32_t members[WIRE_SYNC_MEMBERS_MAX];  /* node ids, >= 1 */
	uint32_t n_members;
	uint32_t donor;             /* resyncing: the member asked; else 0 */
	uint64_t entries_own;       /* held, made by this node's dataplane */
	uint64_t entries_peers;     /* held, from peers */
	uint64_t digest;            /* of the entries held */
	uint32_t send_queue;        /* messages waiting for CPG */
	uint64_t entries_sent;
	uint64_t entries_received;
	uint64_t imported;          /* acknowledged by the dataplane */
	uint64_t rejected;          /* peers' entries refused, every reason */
	uint64_t dropped;           /* lost, every reason */
	uint64_t resyncs;           /* completed */
	uint64_t resync_last_ms;    /* the last complete one took */
	uint64_t resync_entries_received;  /* in every resync, as requester */
	uint32_t self_lag_p50_us, self_lag_p99_us;      /* export -> own delivery */
	uint32_t import_lag_p50_us, import_lag_p99_us;  /* peer's export -> import ack */
	struct wire_lag_histogram self_lag;     /* the same lags since syncd started, */
	struct wire_lag_histogram import_lag;   /* one sample a message (cumulative) */
};

/* A drop or refusal that happened (count >= 1), by reason. */
struct wire_ctl_sync_drop {
	char group[WIRE_NAME_MAX];  /* "" the node's */
	char reason[WIRE_NAME_MAX]; /* the counter's name */
	uint64_t count;
};

/* SYNC_STATUS: replication as syncd sees it. */
struct wire_ctl_sync_status {
	uint32_t node_id;           /* >= 1 */
	bool synced;                /* every group and the dataplane */
	bool dataplane_connected;
	bool dataplane_synced;      /* it acknowledged every entry held */
	uint64_t entries;           /* held, every group */
	uint64_t cache_bytes;
	uint64_t import_queue;      /* entries waiting for the dataplane */
	uint64_t export_entries;    /* the dataplane exported to syncd */
	struct wire_ctl_sync_group *groups;
	size_t n_groups;
	struct wire_ctl_sync_drop *drops;
	size_t n_drops;
};

/*
 * A BFD session's state and diagnostic: RFC 5880 4.1's values, which are
 * control.proto's too (its BfdState has no UNSPECIFIED: RFC 5880's 0,
 * AdminDown, is a real state). Decoders refuse a value they do not know
 * (BAD_ENUM), as for every enum of control.proto.
 */
enum wire_bfd_state {
	WIRE_BFD_STATE_ADMIN_DOWN = 0,
	WIRE_BFD_STATE_DOWN,
	WIRE_BFD_STATE_INIT,
	WIRE_BFD_STATE_UP,
	WIRE_BFD_STATE_MAX
};

enum wire_bfd_diag {
	WIRE_BFD_DIAG_NONE = 0,
	WIRE_BFD_DIAG_DETECT_EXPIRED,       /* control detection time expired */
	WIRE_BFD_DIAG_ECHO_FAILED,          /* echo function failed */
	WIRE_BFD_DIAG_NEIGHBOR_DOWN,        /* neighbor signaled session down */
	WIRE_BFD_DIAG_FORWARDING_RESET,     /* forwarding plane reset */
	WIRE_BFD_DIAG_PATH_DOWN,
	WIRE_BFD_DIAG_CONCAT_PATH_DOWN,     /* concatenated path down */
	WIRE_BFD_DIAG_ADMIN_DOWN,           /* administratively down */
	WIRE_BFD_DIAG_REVERSE_CONCAT_PATH_DOWN,
	WIRE_BFD_DIAG_MAX
};

/*
 * "AdminDown", "Down", "Init", "Up": the names BIRD and FRR show.
 * "none", "detect-expired", "echo-failed", "neighbor-down",
 * "forwarding-reset", "path-down", "concat-path-down", "admin-down",
 * "reverse-concat-path-down".
 */
extern const char *const wire_bfd_state_names[WIRE_BFD_STATE_MAX];
extern const char *const wire_bfd_diag_names[WIRE_BFD_DIAG_MAX];

/* One BFD session of the dataplane, with a router. */
struct wire_ctl_bfd_session {
	uint8_t family;             /* AF_INET or AF_INET6: peer and local */
	uint8_t peer[WIRE_ADDR_MAX];    /* the router */
	uint8_t local[WIRE_ADDR_MAX];   /* this node's address it runs from */
	enum wire_bfd_state state;
	enum wire_bfd_diag local_diag;  /* why this side last left Up */
	enum wire_bfd_diag remote_diag; /* the peer's, from its last packet */
	uint32_t local_discriminator;
	uint32_t remote_discriminator;  /* 0 until the peer's is known */
	uint32_t tx_interval_us;    /* negotiated: what this side sends at */
	uint32_t detect_time_us;    /* how long this side waits for the peer */
	uint32_t multiplier;        /* this side's detect multiplier */
	uint32_t remote_multiplier; /* 0 until the peer's is known */
	uint64_t state_age_ms;      /* time in the current state */
	uint64_t packets_in;        /* accepted */
	uint64_t packets_out;
	uint64_t state_changes;
	bool authenticated;         /* keyed SHA-1 */
};

/* Packets dropped before a session took them, by reason (0 too). */
struct wire_ctl_bfd_drop {
	char reason[WIRE_NAME_MAX]; /* the dataplane's counter name */
	uint64_t count;
};

/* BFD_STATUS: the dataplane's sessions with the routers. */
struct wire_ctl_bfd_status {
	bool serving;               /* as wire_ctl_status: sessions Up only then */
	struct wire_ctl_bfd_session *sessions;
	size_t n_sessions;
	struct wire_ctl_bfd_drop *drops;
	size_t n_drops;
};

/*
 * HEALTH_STATUS comes in pages of at most WIRE_HEALTH_PAGE_TARGETS probe
 * targets, in the config's order: ask again with cursor set to the
 * answer's next_cursor until it is 0. The widest page (every field at its
 * largest, 64 nodes reporting each target down) takes about 450 KiB, under
 * the IPC bound (check_wire holds it to that). A reload between two pages
 * may shift the list: the cursor is a position in it.
 */
enum {
	WIRE_HEALTH_PAGE_TARGETS = 1024,
};

struct wire_ctl_health_status_request {
	uint32_t cursor;            /* 0 first, then the last next_cursor */
};

/* One probe target: a backend of a VIP with health checking. */
struct wire_ctl_health_target {
	char vip[WIRE_NAME_MAX];    /* the VIP's name */
	uint8_t family;             /* of the backend: AF_INET or AF_INET6 */
	uint8_t backend[WIRE_ADDR_MAX];
	bool local_up;              /* this node's probes' verdict */
	bool agreed_up;             /* not in the agreed down set */
	uint32_t down_by[WIRE_SYNC_MEMBERS_MAX]; /* nodes whose last report has it
				     * down (voters or not), ascending, >= 1 */
	uint32_t n_down_by;
	uint64_t probes;            /* finished here: successes + failures */
	uint64_t failures;          /* timeouts included */
	uint32_t last_duration_us;  /* of the last finished probe (probes > 0) */
};

/* HEALTH_STATUS: syncd's probe targets, a page of them, and its probes. */
struct wire_ctl_health_status {
	uint32_t node_id;           /* >= 1 */
	uint32_t targets_total;     /* every probe target of the config */
	uint32_t next_cursor;       /* 0: the list is complete */
	struct wire_ctl_health_target *targets;
	size_t n_targets;
	/* node-wide, since syncd started, on every page */
	uint64_t probes;            /* finished */
	uint64_t failures;
	struct wire_probe_histogram probe_duration;
};

struct wire_ctl_error {
	int code;                   /* positive errno; 0 acknowledges success */
	char message[WIRE_TEXT_MAX];
};

/* One control message; the union member in use is named in the kind enum. */
struct wire_ctl_msg {
	uint32_t version;           /* decode: WIRE_VERSION; encode writes that */
	enum wire_ctl_kind kind;
	uint64_t request_id;        /* echoed by the response */
	union {
		struct wire_ctl_status status;
		struct wire_ctl_counters_request counters_request;
		struct wire_ctl_counters counters;
		struct wire_ctl_vip_list_request vip_list_request;
		struct wire_ctl_vip_list vip_list;
		struct wire_ctl_backend_set backend_set;
		struct wire_ctl_reload_request reload_request;
		struct wire_ctl_reload_result reload_result;
		struct wire_ctl_ownership ownership;
		struct wire_flow lookup_key;  /* backend_family 0 */
		struct wire_ctl_lookup lookup;
		struct wire_ctl_dump_request dump_request;
		struct wire_ctl_dump dump;
		struct wire_ctl_export_subscribe export_subscribe;
		struct wire_ctl_flows flows;
		struct wire_ctl_error error;
		struct wire_ctl_sync_verify_request sync_verify_request;
		struct wire_ctl_sync_verify sync_verify;
		struct wire_ctl_cluster cluster;
		struct wire_ctl_cluster_standby cluster_standby;
		struct wire_ctl_sync_status sync_status;
		struct wire_ctl_bfd_status bfd_status;
		struct wire_ctl_health_status_request health_status_request;
		struct wire_ctl_health_status health_status;
	};
};

/*
 * Pack m into buf (len bytes), as wire_sync_encode(): 0 and *out_len, or
 * -EINVAL (unknown kind or enum, a string without its NUL, a bad address or
 * entry), -ENOSPC (*out_len then holds the size needed), -ENOMEM. The arrays
 * of m stay the caller's.
 */
int wire_ctl_encode(const struct wire_ctl_msg *m, uint8_t *buf, size_t len,
		    size_t *out_len);

/* The exact encoded size of m; 0 if m is not valid or memory ran out. */
size_t wire_ctl_encoded_size(const struct wire_ctl_msg *m);

/*
 * Decode and validate buf (len bytes) into *m. On success returns 0; the
 * arrays of m (counters, vip_list, ownership, dump, flows, sync_verify,
 * cluster, sync_status, bfd_status, health_status) are then allocated with
 * malloc, NULL when empty, and the caller releases them with
 * wire_ctl_msg_free(). On failure returns -errno as wire_sync_decode()
 * does (BAD_STRING, BAD_ENUM and BAD_HISTOGRAM give -EBADMSG), bumps
 * exactly one counter of c (may be NULL), allocates nothing and leaves *m
 * untouched.
 */
int wire_ctl_decode(const uint8_t *buf, size_t len, struct wire_ctl_msg *m,
		    struct wire_counters *c);

/*
 * Free the arrays a successful wire_ctl_decode() allocated and zero *m.
 * NULL, and a message without arrays, are fine. Never call it on a message
 * whose arrays the caller built itself.
 */
void wire_ctl_msg_free(struct wire_ctl_msg *m);

/*
 * Append a page's VIPs and backends (copied; the page stays the caller's)
 * to *all, which starts zeroed: 0, or -ENOMEM and *all unchanged. The
 * caller frees *all with wire_ctl_vip_list_free().
 */
int wire_ctl_vip_list_append(struct wire_ctl_vip_list *all,
			     const struct wire_ctl_vip_list *page);

/* Free the arrays of a list built by wire_ctl_vip_list_append(), zero it. */
void wire_ctl_vip_list_free(struct wire_ctl_vip_list *l);

#endif /* MAGLB_PROTO_WIRE_H */
