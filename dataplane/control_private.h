/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by control.c (the loop) and control_ipc.c (the IPC handlers) only. */
#ifndef MAGLB_DATAPLANE_CONTROL_PRIVATE_H
#define MAGLB_DATAPLANE_CONTROL_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include <qb/qbloop.h>

#include "dataplane/control.h"
#include "dataplane/core/flow_key.h"
#include "dataplane/core/ndisc.h"
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
	X(SLOW_ANSWERED, "ARP/ND frames answered (for the node or an owned VIP)") \
	X(SLOW_LEARNT, "valid ARP/ND frames that confirmed a wanted neighbour, unanswered") \
	X(SLOW_IGNORED, "valid ARP/ND frames neither answered nor teaching a wanted neighbour") \
	X(SEND_FAILED, "frames the control thread could not build or queue")	\
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
	CONTROL_RETIRED_MAX = 64,
	CONTROL_EXPORT_BURST = 1024,    /* records taken from a ring per tick */
	CONTROL_IMPORT_WARN_MS = 10000, /* at most one refused-import warning */
};

struct control {
	qb_loop_t *loop;
	qb_loop_timer_handle tick;
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

/* Send gratuitous ARP / unsolicited NA for every VIP this node owns. */
void control_announce(struct control *c);

/* Apply the config file again; 0, or -errno with err filled. */
int control_reload(struct control *c, bool check_only, char *err, size_t errlen);

/* Milliseconds of the workers' clock. */
uint32_t control_now_ms(const struct control *c);

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
