/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * syncd's view of corosync's votequorum: whether this node's partition has
 * quorum. Tracks changes on the qb_loop; connects, and reconnects when
 * corosync goes away, from syncd_quorum_poll() (called from a timer). Not
 * connected means not quorate: a node cut off from corosync withdraws.
 */
#ifndef MAGLB_SYNCD_QUORUM_H
#define MAGLB_SYNCD_QUORUM_H

#include <stdbool.h>
#include <stdint.h>

#include <qb/qbloop.h>

struct syncd_quorum;

/* changed(arg, quorate) on every change of the flag. NULL on no memory. */
struct syncd_quorum *syncd_quorum_create(qb_loop_t *loop,
					 void (*changed)(void *arg, bool quorate),
					 void *arg);
void syncd_quorum_destroy(struct syncd_quorum *q);

/* Connect if not connected and the backoff allows; now in ms. */
void syncd_quorum_poll(struct syncd_quorum *q, uint32_t now_ms);

bool syncd_quorum_quorate(const struct syncd_quorum *q);

/*
 * Ask votequorum now (a synchronous round trip) and report a change as a
 * notification would. For a CPG view change: corosync computes quorum for
 * a new ring before CPG delivers the view, but its notification comes on
 * another connection and may be read after the view; a node that acted on
 * the view alone would take over on the side that just lost quorum.
 */
void syncd_quorum_refresh(struct syncd_quorum *q);

/*
 * The quorum device's timeout (corosync's quorum.device.timeout) when one
 * is configured, read at each connect; 0 without a device. votequorum may
 * count a device's vote of the previous ring for up to that long after a
 * membership change: the side of a split the device will deny looks
 * quorate until then.
 */
uint32_t syncd_quorum_device_timeout_ms(const struct syncd_quorum *q);

#endif /* MAGLB_SYNCD_QUORUM_H */
