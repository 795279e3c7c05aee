/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread's private state: shared by control.c (the loop),
 * control_ipc.c (the IPC handlers), control_ownership.c (VIP ownership and
 * leases), control_bfd.c (BFD with the routers) and their unit test,
 * tests/unit/check_control_ipc.c; nothing else.
 */
#ifndef MAGLB_DATAPLANE_CONTROL_PRIVATE_H
#define MAGLB_DATAPLANE_CONTROL_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include <qb/qbloop.h>

#include "dataplane/control.h"
#include "dataplane/core/bfd.h"
#include "dataplane/core/flow_key.h"
#include "dataplane/core/ndisc.h"
#include "dataplane/core/packet.h"
#include "dataplane/state.h"
#include "dataplane/worker.h"
#include "proto/wire.h"

struct daemon_signals;
struct ipc_server;
struct neigh;
struct wire_flow;

/* Control-thread counters: X(NAME, "description"). */
#define CONTROL_COUNTERS(X)						\
	X(IMPORTED, "entries from syncd applied to the synced table")	\
	X(IMPORT_REJECTED, "entries from syncd for a VIP or backend not configured here") \
	X(IMPORT_FULL, "entries from syncd refused: synced table full")	\
	X(EXPORTED, "flow events sent to syncd")				\
	X(EXPORT_LOST, "flow events lost: syncd's event ring was full")	\
	X(EXPORT_NO_SUBSCRIBER, "flow events with no syncd subscribed")	\
	X(ARP_REPLIES, "ARP replies sent")				\
	X(ND_ADVERTS, "neighbour advertisements sent")			\
	X(SOLICITS, "ARP requests and neighbour solicitations sent")	\
	X(ANNOUNCES, "gratuitous ARPs and unsolicited NAs sent")		\
	X(LEASE_EXPIRED, "VIPs disowned: their ownership lease ended unrenewed") \
	X(SERVING_EXPIRED, "serving ended: its lease ended unrenewed")	\
	X(SLOW_ANSWERED, "ARP/ND frames answered (for the node or an owned VIP)") \
	X(SLOW_LEARNT, "valid ARP/ND frames that confirmed a wanted neighbour, unanswered") \
	X(SLOW_IGNORED, "valid ARP/ND frames neither answered nor teaching a wanted neighbour") \
	X(SEND_FAILED, "frames the control thread could not build or queue")	\
	X(BFD_SENT, "BFD control packets sent")				\
	X(BFD_ACCEPTED, "BFD control packets a session took")		\
	X(BFD_UPS, "BFD sessions that came Up")				\
	X(BFD_DOWNS, "BFD sessions that went down from Up")		\
	X(BFD_NO_NEIGHBOUR, "BFD packets not sent: the peer's MAC not resolved yet") \
	X(BFD_NO_SESSION, "BFD packets to this node with no session configured") \
	X(BFD_BAD_UDP, "BFD packets with a bad UDP length or checksum")	\
	X(RELOADS, "config reloads applied")				\
	X(RELOAD_ERRORS, "config reloads refused")			\
	X(STATES, "forwarding states published")			\
	X(TICKS, "control loop ticks: 1000 a second when it keeps up")

enum control_counter {
#define CONTROL_COUNTER_ENUM(name, desc) CONTROL_##name,
	CONTROL_COUNTERS(CONTROL_COUNTER_ENUM)
#undef CONTROL_COUNTER_ENUM
	CONTROL_COUNTER_MAX
};

enum {
	/* Announcements of a VIP taken: at once, then CONTROL_ANNOUNCE_GAP_MS,
	 * twice, four and eight times that after the first, 5 in all as
	 * keepalived's garp_master_repeat: a switch or router that missed one
	 * (a link just up, a busy control plane) learns from the next. A late
	 * tick delays the rest, never bunches them. */
	CONTROL_ANNOUNCE_TIMES = 5,
	CONTROL_ANNOUNCE_GAP_MS = 100,
	CONTROL_DISOWN_RETRY_MS = 10,   /* a lease ended, but no memory to act */
	CONTROL_RETIRED_MAX = 64,
	CONTROL_EXPORT_BURST = 1024,    /* records taken from a ring per tick */
	CONTROL_IMPORT_WARN_MS = 10000, /* at most one refused-import warning */
};

/*
 * A VIP taken with a lease, or with announcements left to send. Kept by
 * name, which a reload keeps (its index it may not); a reload drops the
 * timers of the VIPs it removed, so there is at most one a VIP.
 */
struct control_vip_timer {
	char vip[CONFIG_NAME_MAX];
	uint64_t lease_end_ms;          /* control_clock_ms(); 0: no lease */
	uint32_t lease_ms;              /* as last taken */
	uint64_t announce_ms;           /* the next announcement's time */
	uint8_t announced;              /* sent so far, of CONTROL_ANNOUNCE_TIMES */
};

struct control {
	qb_loop_t *loop;
	int tick_fd;                    /* a timerfd: every millisecond */
	struct daemon_signals *signals; /* SIGTERM/SIGINT stop, SIGHUP reloads */
	struct control_params p;
	struct dp_shared *sh;
	struct config *cfg;
	struct state_ctx *sctx;
	struct neigh *neigh;
	uint64_t neigh_generation;
	struct ipc_server *ipc;
	uint64_t start_ms;
	uint64_t export_conn;           /* syncd's connection; 0: none */
	uint64_t export_seq;
	uint64_t export_lost;           /* to report in the next batch */
	uint32_t import_warn_ms;        /* the last refused-import warning */
	bool import_warned;             /* import_warn_ms is set */
	struct wire_flow *flows;        /* scratch: IPC_FLOWS_PER_MSG_MAX entries */
	struct export_rec *recs;        /* scratch: CONTROL_EXPORT_BURST records */
	struct {
		struct dp_state *state;
		uint64_t token;
	} retired[CONTROL_RETIRED_MAX];
	unsigned n_retired;
	uint64_t counters[CONTROL_COUNTER_MAX];
	uint64_t refused[NDISC_REFUSAL_MAX];    /* ARP/ND frames not believed */
	struct control_vip_timer timers[CONFIG_VIPS_MAX];
	uint32_t n_timers;
	uint64_t timers_next_ms;        /* the earliest deadline of a timer */
	bool serving;                   /* should get traffic (OWNERSHIP_SET) */
	uint64_t serving_end_ms;        /* control_clock_ms(); 0: no lease */
	struct bfd *bfd_sessions;       /* NULL: no peer configured */
	struct config_bfd bfd;          /* what they run with */
	bool bfd_serving;               /* as last told to them */
	uint64_t bfd_next_us;           /* their next deadline; 0: run them now */
	uint64_t bfd_dropped[BFD_DROP_MAX];     /* by sessions a reload replaced */
};

extern const char *const control_counter_names[CONTROL_COUNTER_MAX];

/* The state workers read now (the control thread is its only writer). */
static inline const struct dp_state *
control_state(const struct control *c)
{
	return c->sh->state;
}

/* Publish s to the workers; the old state is freed after a grace period. */
void control_publish(struct control *c, struct dp_state *s);

/* Send a gratuitous ARP (IPv4) or unsolicited NA (IPv6) for v's address. */
void control_announce(struct control *c, const struct dp_vip *v);

/* Apply the config file again; 0, or -errno with err filled. */
int control_reload(struct control *c, bool check_only, char *err, size_t errlen);

/* Queue a frame built by fill() to worker 0's TX ring, counting counter.
 * On a port with a VLAN an untagged frame is tagged (a reply copies its
 * request's tag). */
void control_send_frame(struct control *c,
			size_t (*fill)(uint8_t *out, size_t cap, void *arg), void *arg,
			enum control_counter counter);

/* Milliseconds of the workers' clock. */
uint32_t control_now_ms(const struct control *c);

/* The same clock whole, for deadlines that must not wrap. */
uint64_t control_clock_ms(const struct control *c);

/*
 * VIP ownership (control_ownership.c), at now_ms of control_clock_ms().
 *
 * control_ownership_set() applies an OWNERSHIP_SET: every VIP it names must
 * exist (else -ENOENT and errmsg, nothing changed); a VIP taken with
 * lease_ms > 0 stays owned until now_ms + lease_ms unless taken again, with
 * 0 for good; one disowned loses its lease and announcements at once; with
 * announce, each VIP taken is announced at once, and
 * CONTROL_ANNOUNCE_TIMES - 1 more times by control_ownership_due().
 *
 * Its serving flag holds with the same lease (cleared when the lease ends,
 * SERVING_EXPIRED, one log line).
 *
 * control_ownership_due() disowns the VIPs whose lease ended
 * (LEASE_EXPIRED, a log line each), ends serving when its lease ended, and
 * sends the announcements due; the tick calls it.
 * control_ownership_reloaded() forgets the timers of VIPs a reload
 * removed. control_serving() says whether the node should get traffic.
 * Control thread.
 */
int control_ownership_set(struct control *c, const struct wire_ctl_ownership *o,
			  uint64_t now_ms, char *errmsg, size_t errlen);
void control_ownership_due(struct control *c, uint64_t now_ms);
void control_ownership_reloaded(struct control *c);
bool control_serving(const struct control *c);

/*
 * BFD (control_bfd.c). control_bfd_start() makes the sessions of c->cfg
 * (none without peers) and wants each peer's MAC resolved;
 * control_bfd_reload() takes cfg's: new intervals by a Poll Sequence,
 * other peers or another key by new sessions (logged); -errno keeps the
 * old ones; control_bfd_want_peers() wants each peer's MAC resolved again
 * (after a reload forgot neighbours); control_bfd_drops() sums the drops
 * by reason since start. control_bfd_input() takes a frame a worker handed over (m its
 * parse), false when it is not BFD to this node; control_bfd_tick() runs
 * the timers and passes control_serving() on. now_us: control_clock_us().
 * Control thread.
 */
int control_bfd_start(struct control *c);
int control_bfd_reload(struct control *c, const struct config *cfg);
void control_bfd_stop(struct control *c);
void control_bfd_want_peers(struct control *c);
void control_bfd_drops(const struct control *c, uint64_t out[BFD_DROP_MAX]);
bool control_bfd_input(struct control *c, const uint8_t *frame, uint32_t len,
		       const struct pkt_meta *m, uint64_t now_us);
void control_bfd_tick(struct control *c, uint64_t now_us);
/* BFD_STATUS into resp (arrays allocated: control_ipc_release() frees
 * them). 0 or -ENOMEM. */
int control_bfd_status(struct control *c, struct wire_ctl_msg *resp);

/* The control thread's clock in microseconds (BFD's timers). */
uint64_t control_clock_us(const struct control *c);

/* The flow_key of a wire entry (AF_INET/AF_INET6 -> families 4/6). */
void control_key_from_wire(const struct wire_flow *f, struct flow_key *k);

/* The wire entry of flow k to destination dest (no backend when dest is
 * not valid in s), its lifetime left and flowtab state. */
void control_wire_flow(const struct dp_state *s, const struct flow_key *k, uint32_t dest,
		       uint32_t lifetime_ms, uint8_t state, struct wire_flow *f);

/* The IPC handlers (control_ipc.c). */
int control_ipc_request(void *ctx, uint64_t conn_id, const struct wire_ctl_msg *req,
			struct wire_ctl_msg *resp, char *errmsg, size_t errlen);
void control_ipc_release(void *ctx, struct wire_ctl_msg *resp);
void control_ipc_disconnected(void *ctx, uint64_t conn_id);

#endif /* MAGLB_DATAPLANE_CONTROL_PRIVATE_H */
