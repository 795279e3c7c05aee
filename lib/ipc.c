/* SPDX-License-Identifier: BSD-3-Clause */
/* The IPC framing, for servers and clients alike: see ipc.h. */
#include "lib/ipc.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bounds ipc.h documents. */
static_assert(sizeof(struct qb_ipc_request_header) == 16, "ipc.h: - 16");
static_assert(sizeof(struct qb_ipc_response_header) == 24, "ipc.h: - 24");
static_assert(64 + (size_t)IPC_FLOWS_PER_MSG_MAX * WIRE_FLOW_ENCODED_MAX <=
	      IPC_RESPONSE_PAYLOAD_MAX, "a full flow batch fits one message");

/* Both headers start with id and size, at the same offsets. */
static_assert(offsetof(struct qb_ipc_request_header, id) ==
	      offsetof(struct qb_ipc_response_header, id), "id");
static_assert(offsetof(struct qb_ipc_request_header, size) ==
	      offsetof(struct qb_ipc_response_header, size), "size");

size_t
ipc_header_len(enum ipc_dir dir)
{
	return dir == IPC_REQUEST ? sizeof(struct qb_ipc_request_header) :
				    sizeof(struct qb_ipc_response_header);
}

ssize_t
ipc_frame(enum ipc_dir dir, const struct wire_ctl_msg *m, uint8_t *buf)
{
	/* Built apart and copied: buf need not be aligned for its fields. */
	struct qb_ipc_response_header hdr = { .id = IPC_MSG_ID };
	size_t hlen = ipc_header_len(dir), len = 0;
	int rc;

	rc = wire_ctl_encode(m, buf + hlen, IPC_MSG_MAX - hlen, &len);
	if (rc == -ENOSPC)
		return -EMSGSIZE;
	if (rc < 0)
		return rc;
	hdr.size = (int32_t)(hlen + len);
	memcpy(buf, &hdr, hlen);    /* a request header is its first 16 bytes */
	return hdr.size;
}

ssize_t
ipc_frame_check(enum ipc_dir dir, const void *msg, size_t n)
{
	struct qb_ipc_request_header hdr = { .id = 0 };
	size_t hlen = ipc_header_len(dir);

	if (n < hlen || n > IPC_MSG_MAX)
		return -EBADMSG;
	memcpy(&hdr, msg, sizeof(hdr));
	if (hdr.id != IPC_MSG_ID || hdr.size < 0 || (size_t)hdr.size != n)
		return -EBADMSG;
	return (ssize_t)(n - hlen);
}

void
ipc_counter_add(struct ipc_counter_list *l, const char *scope, const char *name,
		uint64_t value)
{
	struct wire_ctl_counter *e;

	if (strncmp(scope, l->prefix, strlen(l->prefix)) != 0)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct wire_ctl_counter *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL)
			return;
		l->v = v;
		l->cap = cap;
	}
	e = &l->v[l->n++];
	snprintf(e->scope, sizeof(e->scope), "%s", scope);
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->value = value;
}

bool
ipc_counter_scope_wanted(const struct ipc_counter_list *l, const char *scope_start)
{
	size_t a = strlen(l->prefix), b = strlen(scope_start);

	return strncmp(l->prefix, scope_start, a < b ? a : b) == 0;
}

void
ipc_counter_add_array(struct ipc_counter_list *l, const char *scope,
		      const char *const *names, const uint64_t *values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ipc_counter_add(l, scope, names[i], values[i]);
}
