/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Backend health, agreed. Every node probes the backends (probe.h) and
 * multicasts the whole set it sees down whenever it changes, and
 * periodically; each report replaces the sender's previous one. Every node
 * feeds the reports to health_report() in the agreed order of CPG and
 * calls health_agree() after each, with the same voters: a backend is
 * down when more than half of the voters report it down. So all nodes
 * switch their Maglev tables at the same point of the agreed order and
 * build the same tables; one node's broken link cannot take a backend
 * out, and in a pair both nodes must see it down.
 *
 * Pure data structure: no corosync, no clock.
 */
#ifndef MAGLB_MEMBERSHIP_HEALTH_H
#define MAGLB_MEMBERSHIP_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A backend of a VIP: the VIP's address, port and protocol (unique in a
 * config) and the backend's address. Addresses are 4 or 16 bytes, the
 * rest of their arrays zero, so that keys compare with memcmp().
 */
struct health_key {
	uint8_t vip[16];
	uint8_t backend[16];
	uint16_t vip_port;
	uint8_t protocol;           /* IPPROTO_TCP, IPPROTO_UDP */
	uint8_t vip_len;            /* 4 or 16 */
	uint8_t backend_len;        /* 4 or 16 */
	uint8_t pad_[3];            /* zero */
};

int health_key_compare(const struct health_key *a, const struct health_key *b);

struct health;

struct health *health_create(void);
void health_destroy(struct health *h);

/* node's whole down set replaces its previous one. 0 or -ENOMEM (kept). */
int health_report(struct health *h, uint32_t node, const struct health_key *down, size_t n);

/* node left: its report no longer counts (and is dropped). */
void health_forget(struct health *h, uint32_t node);

/*
 * Recompute the agreed down set from the reports of voters[0..n). A voter
 * without a report counts as seeing every backend up. Returns 1 when the
 * set changed since the last call, 0 when not, -ENOMEM (set kept).
 */
int health_agree(struct health *h, const uint32_t *voters, size_t n);

/* The agreed down set, sorted by health_key_compare(). */
const struct health_key *health_down(const struct health *h, size_t *n);

/* Whether k is in the agreed down set. */
bool health_is_down(const struct health *h, const struct health_key *k);

/* How many keys node's last report held; -1 without a report. */
long health_reported(const struct health *h, uint32_t node);

/*
 * The nodes whose last report holds k (voters or not), ascending: the
 * first cap of them into out (may be NULL when cap is 0). Returns how many
 * there are, which may exceed cap.
 */
size_t health_reporters(const struct health *h, const struct health_key *k, uint32_t *out,
			size_t cap);

#endif /* MAGLB_MEMBERSHIP_HEALTH_H */
