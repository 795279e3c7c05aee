/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The neighbour table: the MACs of the backends and gateways that tunnels and
 * L2 direct routing send to, resolved with ARP (IPv4) and ND (IPv6).
 *
 * Only wanted addresses are resolved and learnt (neigh_want(): a backend or
 * a gateway); an answer about anything else is ignored and counted, so the
 * network cannot fill the table. States, as Linux's NUD states:
 *
 *   state       MAC used  solicited                     next state
 *   INCOMPLETE  no        at want, then every retrans   answer: REACHABLE;
 *                                                        max_probes unanswered: FAILED
 *   REACHABLE   yes       no                            its reachable time over: STALE
 *   STALE       yes       at once, then every retrans   answer: REACHABLE;
 *                                                        max_probes unanswered: FAILED
 *   FAILED      no        every failed_retry_ms         answer: REACHABLE
 *
 * REACHABLE and STALE entries give their MAC (a STALE one is still used
 * while it is probed). INCOMPLETE and FAILED give none: as in Linux, a
 * FAILED entry keeps its last MAC internally but it is not used, so a dead
 * next hop costs NO_NEIGHBOUR drops rather than frames sent into the void;
 * health checks take a dead backend out of Maglev anyway. Unlike Linux,
 * there is no DELAY state and no unicast probing: every entry is in use (a
 * tunnel needs it), and STALE entries are probed with broadcast ARP or
 * multicast NS at once, which also finds a MAC that moved. Any answer, a
 * reply or a request from the neighbour, confirms it (REACHABLE). Each
 * entry's reachable time is drawn once, from its address's hash, in
 * [reachable_ms / 2, reachable_ms * 3 / 2), as Linux randomises it, so that
 * entries wanted together do not all go STALE together.
 *
 * Addresses are 16 bytes; IPv4 ones in the first 4 (the rest is ignored).
 * Time is the caller's monotonic milliseconds. The table belongs to the
 * control thread: single-threaded, no locks; workers get MACs through the
 * tunnels the control thread publishes (encap.h), never from here.
 */
#ifndef MAGLB_DATAPLANE_NEIGH_H
#define MAGLB_DATAPLANE_NEIGH_H

#include <stdint.h>

enum neigh_state {
	NEIGH_INCOMPLETE = 0,   /* solicited, never answered */
	NEIGH_REACHABLE,        /* answered within its reachable time */
	NEIGH_STALE,            /* older: still used, being probed */
	NEIGH_FAILED,           /* max_probes unanswered: not used, retried slowly */
	NEIGH_STATE_MAX
};

extern const char *const neigh_state_names[NEIGH_STATE_MAX];

#define NEIGH_REACHABLE_MS_DEFAULT 30000u
#define NEIGH_RETRANS_MS_DEFAULT 1000u
#define NEIGH_MAX_PROBES_DEFAULT 3u
#define NEIGH_FAILED_RETRY_MS_DEFAULT 5000u
#define NEIGH_CAPACITY_MAX (1u << 20)
#define NEIGH_PROBES_MAX 255u

struct neigh_params {
	uint32_t reachable_ms;     /* base reachable time (Linux base_reachable_time_ms) */
	uint32_t retrans_ms;       /* between two solicitations (Linux retrans_time_ms) */
	uint32_t max_probes;       /* unanswered solicitations before FAILED, 1..255 */
	uint32_t failed_retry_ms;  /* between two solicitations of a FAILED entry */
};

/* An address to solicit: family 4 or 6, IPv4 in the first 4 bytes. */
struct neigh_addr {
	uint8_t family;
	uint8_t addr[16];
};

/* Totals since create, for maglbctl. */
struct neigh_stats {
	uint64_t ignored;          /* updates for addresses never wanted */
	uint64_t changed;          /* updates that changed what a lookup gives */
	uint64_t failed;           /* entries that went FAILED */
	uint64_t solicited;        /* addresses handed out by neigh_due() */
};

/* Fill p with the defaults. */
void neigh_params_default(struct neigh_params *p);

/*
 * A table for up to capacity addresses (1..NEIGH_CAPACITY_MAX) with params
 * (NULL: the defaults; copied). Returns NULL with errno EINVAL (bad capacity
 * or params) or ENOMEM. The only allocation of this module.
 */
struct neigh *neigh_create(uint32_t capacity, const struct neigh_params *params);

/* Free n; NULL is a no-op. Pointers from neigh_lookup() die with it. */
void neigh_destroy(struct neigh *n);

/*
 * Register an address to resolve (a backend or a gateway); it is INCOMPLETE
 * and due at once. Idempotent: wanting a known address changes nothing.
 * Returns 0, -EINVAL (family not 4 or 6) or -ENOSPC (table full).
 */
int neigh_want(struct neigh *n, uint8_t family, const uint8_t addr[16],
	       uint64_t now_ms);

/*
 * Stop resolving an address (its last backend or route went away). Returns
 * 0 or -ENOENT. Moves other entries: earlier neigh_lookup() pointers die.
 */
int neigh_forget(struct neigh *n, uint8_t family, const uint8_t addr[16]);

/*
 * addr is at mac, from an ARP reply or request or an NA: the entry becomes
 * REACHABLE. Returns 1 when what neigh_lookup() gives changed (a new MAC,
 * or a MAC where there was none: the caller republishes the tunnels that
 * use it), 0 if not, -ENOENT if addr was never wanted (ignored and counted),
 * -EINVAL for a bad family.
 */
int neigh_update(struct neigh *n, uint8_t family, const uint8_t addr[16],
		 const uint8_t mac[6], uint64_t now_ms);

/*
 * addr's MAC if it is REACHABLE or STALE, else NULL. The pointer stays valid
 * until neigh_forget() or neigh_destroy(); copy the 6 bytes.
 */
const uint8_t *neigh_lookup(const struct neigh *n, uint8_t family,
			    const uint8_t addr[16]);

/* addr's state (enum neigh_state), or -ENOENT. */
int neigh_state(const struct neigh *n, uint8_t family, const uint8_t addr[16]);

/*
 * Advance the states to now and fill out[] with up to max addresses to
 * solicit now: INCOMPLETE and STALE entries every retrans_ms (a STALE one at
 * once when its reachable time runs out), FAILED ones every failed_retry_ms.
 * An entry becomes FAILED retrans_ms after its max_probes-th unanswered
 * solicitation. Returns the count; when it is max, more may be due: call
 * again (the entries handed out are not due again for retrans_ms).
 * The caller sends one ARP request / NS per address (reply.h).
 */
uint32_t neigh_due(struct neigh *n, uint64_t now_ms, struct neigh_addr *out,
		   uint32_t max);

/*
 * A number that changes whenever what neigh_lookup() gives for some address
 * changes (update, FAILED, forget): the caller republishes its tunnels when
 * it differs from the one it last saw.
 */
uint64_t neigh_generation(const struct neigh *n);

/* How many addresses are wanted. */
uint32_t neigh_count(const struct neigh *n);

void neigh_stats_get(const struct neigh *n, struct neigh_stats *out);

#endif /* MAGLB_DATAPLANE_NEIGH_H */
