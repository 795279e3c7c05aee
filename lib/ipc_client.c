/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client of maglb's libqb IPC endpoints; the framing and the limits are
 * ipc.h's.
 */
#include "lib/ipc_client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <qb/qbipcc.h>

#include "lib/ipc.h"

struct ipc_client {
	qb_ipcc_connection_t *qb;
	char service[WIRE_NAME_MAX];
	uint64_t next_request_id;
	struct wire_counters wire;
	uint8_t *buf;  /* IPC_MSG_MAX: one message in or out */
};

/* libqb's errno for a failed connect or exchange, as this library's. */
static int
ipc_client_errno(int err)
{
	switch (err) {
	case ECONNREFUSED:
	case ENOENT:
		return -ECONNREFUSED;
	case EACCES:
	case EPERM:
		return -EACCES;
	case ENOTCONN:
	case ESHUTDOWN:
	case ECONNRESET:
	case EPIPE:
	case EBADF:
		return -ENOTCONN;
	case ETIMEDOUT:
	case EAGAIN:
		return -ETIMEDOUT;
	case 0:
		return -EIO;
	default:
		return -err;
	}
}

int
ipc_client_connect(const char *service, struct ipc_client **out)
{
	struct ipc_client *c;
	int rc;

	if (service == NULL)
		service = IPC_SERVICE_DATAPLANE;
	if (service[0] == '\0' || strlen(service) >= sizeof(c->service))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->buf = malloc(IPC_MSG_MAX);
	if (c->buf == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(c->service, sizeof(c->service), "%s", service);
	c->next_request_id = 1;
	errno = 0;
	c->qb = qb_ipcc_connect(service, IPC_MSG_MAX);
	if (c->qb == NULL) {
		rc = ipc_client_errno(errno);
		goto fail;
	}
	*out = c;
	return 0;

fail:
	free(c->buf);
	free(c);
	return rc;
}

void
ipc_client_close(struct ipc_client *c)
{
	if (c == NULL)
		return;
	if (c->qb != NULL)
		qb_ipcc_disconnect(c->qb);
	free(c->buf);
	free(c);
}

static int64_t
ipc_client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline (-1: none), at least 0. */
static int
ipc_client_left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - ipc_client_now_ms();
	return left < 0 ? 0 : (int)left;
}

/* Check the libqb header of the n bytes at buf and decode what follows. */
static int
ipc_decode(const uint8_t *buf, ssize_t n, struct wire_ctl_msg *m,
	   struct wire_counters *wire)
{
	ssize_t len = n < 0 ? -EBADMSG : ipc_frame_check(IPC_RESPONSE, buf,
							 (size_t)n);

	if (len < 0 || wire_ctl_decode(buf + ipc_header_len(IPC_RESPONSE),
				       (size_t)len, m, wire) < 0)
		return -EBADMSG;
	return 0;
}

static int
ipc_client_send(struct ipc_client *c, const struct wire_ctl_msg *req,
		uint64_t id)
{
	struct wire_ctl_msg m = *req;
	ssize_t n, sent;

	m.version = WIRE_VERSION;
	m.request_id = id;
	n = ipc_frame(IPC_REQUEST, &m, c->buf);
	if (n < 0)
		return (int)n;
	sent = qb_ipcc_send(c->qb, c->buf, (size_t)n);
	if (sent == n)
		return 0;
	return ipc_client_errno(sent < 0 ? (int)-sent : EIO);
}

int
ipc_client_request(struct ipc_client *c, const struct wire_ctl_msg *req,
		   struct wire_ctl_msg *resp, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 :
			   ipc_client_now_ms() + timeout_ms;
	uint64_t id = c->next_request_id++;
	int rc;

	rc = ipc_client_send(c, req, id);
	if (rc < 0)
		return rc;
	for (;;) {
		struct wire_ctl_msg m;
		ssize_t n;

		n = qb_ipcc_recv(c->qb, c->buf, IPC_MSG_MAX,
				 ipc_client_left_ms(deadline));
		if (n < 0) {
			rc = ipc_client_errno((int)-n);
			if (rc == -ETIMEDOUT && ipc_client_left_ms(deadline) != 0)
				continue;
			return rc;
		}
		rc = ipc_decode(c->buf, n, &m, &c->wire);
		if (rc < 0)
			return rc;
		/* an ERROR with id 0: the server could not read our id */
		if (m.request_id == id ||
		    (m.request_id == 0 && m.kind == WIRE_CTL_ERROR)) {
			*resp = m;
			return 0;
		}
		wire_ctl_msg_free(&m);  /* the late answer to a timed-out one */
	}
}

int
ipc_client_event_recv(struct ipc_client *c, struct wire_ctl_msg *m,
		      int timeout_ms)
{
	ssize_t n;

	n = qb_ipcc_event_recv(c->qb, c->buf, IPC_MSG_MAX, timeout_ms);
	if (n == -EAGAIN || n == -ETIMEDOUT)
		return -EAGAIN;
	if (n < 0)
		return ipc_client_errno((int)-n);
	return ipc_decode(c->buf, n, m, &c->wire);
}

int
ipc_client_fd(struct ipc_client *c)
{
	int32_t fd = -1;
	int32_t rc = qb_ipcc_fd_get(c->qb, &fd);

	return rc < 0 ? rc : fd;
}

const char *
ipc_client_service(const struct ipc_client *c)
{
	return c->service;
}

const struct wire_counters *
ipc_client_wire_counters(const struct ipc_client *c)
{
	return &c->wire;
}

/* The program that serves service, for maglb's own services; else NULL. */
static const char *
ipc_service_program(const char *service)
{
	static const char *const programs[] = {
		IPC_SERVICE_DATAPLANE,  /* each named after its program */
		IPC_SERVICE_SYNCD,
	};

	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		if (strcmp(service, programs[i]) == 0)
			return programs[i];
	return NULL;
}

const char *
ipc_strerror(int rc, const char *service, char *buf, size_t len)
{
	const char *prog;
	char by[WIRE_NAME_MAX + 16] = "";

	if (service == NULL)
		service = IPC_SERVICE_DATAPLANE;
	prog = ipc_service_program(service);
	if (prog != NULL)
		snprintf(by, sizeof(by), " (%s serves it)", prog);
	switch (-rc) {
	case ECONNREFUSED:
		snprintf(buf, len, "service %s is not running%s", service, by);
		break;
	case ENOTCONN:
		snprintf(buf, len, "service %s closed the connection%s", service,
			 by);
		break;
	case EACCES:
		snprintf(buf, len, "permission denied by service %s%s: run as "
			 "root or as a member of the maglb group", service, by);
		break;
	case ETIMEDOUT:
		snprintf(buf, len, "service %s did not answer in time%s",
			 service, by);
		break;
	case EBADMSG:
		snprintf(buf, len, "service %s sent an answer that does not "
			 "decode%s", service, by);
		break;
	default:
		snprintf(buf, len, "service %s: %s", service, strerror(-rc));
		break;
	}
	return buf;
}
