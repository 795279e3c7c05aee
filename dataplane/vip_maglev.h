/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A VIP's Maglev table built from its config: the backends' canonical names
 * and the ranking that maps table slots back to config backends.
 * Control thread only (allocates).
 */
#ifndef MAGLB_DATAPLANE_VIP_MAGLEV_H
#define MAGLB_DATAPLANE_VIP_MAGLEV_H

#include <netinet/in.h>
#include <stdint.h>

#include "dataplane/core/maglev.h"

struct config_vip;

struct vip_maglev {
	uint32_t size;                          /* M */
	uint32_t n_backends;
	char (*names)[INET6_ADDRSTRLEN];        /* canonical, in config order */
	uint32_t *order;                        /* rank -> config index */
	uint16_t *table;                        /* slot -> rank */
};

/*
 * Build the table of vip. Returns it, or NULL with *rc = -errno. When every
 * weight is 0 the table is returned with *rc = -ENODATA and every slot
 * MAGLEV_SLOT_NONE (the VIP has no backend for new flows).
 */
struct vip_maglev *vip_maglev_build(const struct config_vip *vip, int *rc);

/* Free; NULL is a no-op. */
void vip_maglev_free(struct vip_maglev *vm);

#endif /* MAGLB_DATAPLANE_VIP_MAGLEV_H */
