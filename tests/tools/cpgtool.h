/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the test tools that join a CPG group as a stranger share (cpgjunk,
 * cpg-intruder): a deliver callback that ignores what the group says, and
 * a multicast that waits out CS_ERR_TRY_AGAIN. The tools are not syncd:
 * a busy wait here is the simplest thing that works.
 */
#ifndef MAGLB_TESTS_TOOLS_CPGTOOL_H
#define MAGLB_TESTS_TOOLS_CPGTOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include <corosync/cpg.h>

static inline void
cpgtool_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid, uint32_t pid,
		void *msg, size_t len)
{
	(void)h; (void)g; (void)nodeid; (void)pid; (void)msg; (void)len;
}

/* Multicast on h (agreed order), retrying TRY_AGAIN for ~1 s. 0 or -1. */
static inline int
cpgtool_send(cpg_handle_t h, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)buf, .iov_len = len };

	for (int tries = 0; tries < 1000; tries++) {
		cs_error_t rc = cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1);

		if (rc == CS_OK)
			return 0;
		if (rc != CS_ERR_TRY_AGAIN)
			return -1;
		cpg_dispatch(h, CS_DISPATCH_ALL);
		usleep(1000);
	}
	return -1;
}

#endif /* MAGLB_TESTS_TOOLS_CPGTOOL_H */
