/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The part of the wire both schemas share: flow entries, addresses,
 * strings, drop counters and packing.
 */
#include "proto/wire.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "proto/wire_internal.h"

static_assert(sizeof(struct wire_flow) == 64, "one entry, one cache line");
static_assert((int)MAGLB__SYNC__IP_PROTOCOL__IP_PROTOCOL_TCP == IPPROTO_TCP &&
	      (int)MAGLB__SYNC__IP_PROTOCOL__IP_PROTOCOL_UDP == IPPROTO_UDP,
	      "sync.proto uses IANA protocol numbers");
static_assert((int)MAGLB__SYNC__FLOW_FLAG__FLOW_FLAG_ESTABLISHED == WIRE_FLOW_ESTABLISHED &&
	      (int)MAGLB__SYNC__FLOW_FLAG__FLOW_FLAG_CLOSING == WIRE_FLOW_CLOSING &&
	      (int)MAGLB__SYNC__FLOW_FLAG__FLOW_FLAG_FROM_PEER == WIRE_FLOW_FROM_PEER,
	      "flag bits as in sync.proto");

const char *const wire_drop_names[WIRE_DROP_MAX] = {
#define WIRE_DROP_NAME_(name, text) [WIRE_DROP_##name] = #name,
	WIRE_DROP_REASONS(WIRE_DROP_NAME_)
#undef WIRE_DROP_NAME_
};

const char *const wire_drop_descriptions[WIRE_DROP_MAX] = {
#define WIRE_DROP_TEXT_(name, text) [WIRE_DROP_##name] = text,
	WIRE_DROP_REASONS(WIRE_DROP_TEXT_)
#undef WIRE_DROP_TEXT_
};

int
wire_drop_count(struct wire_counters *c, enum wire_drop why)
{
	assert(why < WIRE_DROP_MAX);
	if (c != NULL)
		c->drops[why]++;
	switch (why) {
	case WIRE_DROP_BAD_VERSION:
		return -EPROTONOSUPPORT;
	case WIRE_DROP_TOO_MANY_ENTRIES:
		return -EMSGSIZE;
	case WIRE_DROP_NO_MEMORY:
		return -ENOMEM;
	default:
		return -EBADMSG;
	}
}

size_t
wire_addr_len(unsigned int family)
{
	switch (family) {
	case AF_INET:
		return 4;
	case AF_INET6:
		return 16;
	default:
		return 0;
	}
}

uint8_t
wire_addr_family(size_t len)
{
	switch (len) {
	case 4:
		return AF_INET;
	case 16:
		return AF_INET6;
	default:
		return 0;
	}
}

void
wire_addr_copy(uint8_t dst[WIRE_ADDR_MAX], const ProtobufCBinaryData *src)
{
	memset(dst, 0, WIRE_ADDR_MAX);
	if (src->len > 0 && src->len <= WIRE_ADDR_MAX)
		memcpy(dst, src->data, src->len);
}

ProtobufCBinaryData
wire_addr_to_pb(unsigned int family, const uint8_t *addr)
{
	/* protobuf-c's bytes are not const; packing only reads them. */
	return (ProtobufCBinaryData){
		.len = wire_addr_len(family),
		.data = (uint8_t *)addr,
	};
}

bool
wire_string_fits(const char *s, size_t size)
{
	return s == NULL || strnlen(s, size) < size;
}

bool
wire_string_terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

void
wire_string_copy(char *dst, size_t size, const char *src)
{
	size_t n = src != NULL ? strnlen(src, size - 1) : 0;

	if (n > 0)
		memcpy(dst, src, n);
	memset(dst + n, 0, size - n);
}

bool
wire_proto_ok(unsigned int proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

static bool
addr_len_ok(size_t len)
{
	return wire_addr_family(len) != 0;
}

bool
wire_flow_check(const Maglb__Sync__Flow *pb, bool need_backend,
		enum wire_drop *why)
{
	if (pb == NULL || !addr_len_ok(pb->vip.len) ||
	    pb->client.len != pb->vip.len ||
	    (pb->backend.len != 0 && !addr_len_ok(pb->backend.len)) ||
	    (pb->backend.len == 0 && need_backend)) {
		*why = WIRE_DROP_BAD_ADDRESS;
		return false;
	}
	if (!wire_proto_ok((unsigned int)pb->protocol)) {
		*why = WIRE_DROP_BAD_PROTOCOL;
		return false;
	}
	if (pb->vip_port > UINT16_MAX || pb->client_port > UINT16_MAX) {
		*why = WIRE_DROP_BAD_PORT;
		return false;
	}
	return true;
}

bool
wire_flows_check(Maglb__Sync__Flow *const *pbs, size_t n,
		 enum wire_drop *why)
{
	for (size_t i = 0; i < n; i++)
		if (!wire_flow_check(pbs[i], true, why))
			return false;
	return true;
}

void
wire_flow_from_pb(const Maglb__Sync__Flow *pb, struct wire_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->family = wire_addr_family(pb->vip.len);
	f->proto = (uint8_t)pb->protocol;
	f->vip_port = (uint16_t)pb->vip_port;
	f->client_port = (uint16_t)pb->client_port;
	f->backend_family = wire_addr_family(pb->backend.len);
	f->lifetime_ms = pb->lifetime_ms;
	f->flags = pb->flags & WIRE_FLOW_FLAGS_ALL;
	f->origin = pb->origin;
	wire_addr_copy(f->vip, &pb->vip);
	wire_addr_copy(f->client, &pb->client);
	wire_addr_copy(f->backend, &pb->backend);
}

void
wire_flow_to_pb(const struct wire_flow *f, Maglb__Sync__Flow *pb)
{
	*pb = (Maglb__Sync__Flow)MAGLB__SYNC__FLOW__INIT;
	pb->vip = wire_addr_to_pb(f->family, f->vip);
	pb->vip_port = f->vip_port;
	pb->protocol = (Maglb__Sync__IpProtocol)f->proto;
	pb->client = wire_addr_to_pb(f->family, f->client);
	pb->client_port = f->client_port;
	pb->backend = wire_addr_to_pb(f->backend_family, f->backend);
	pb->lifetime_ms = f->lifetime_ms;
	pb->flags = f->flags & WIRE_FLOW_FLAGS_ALL;
	pb->origin = f->origin;
}

bool
wire_flow_is_valid(const struct wire_flow *f)
{
	Maglb__Sync__Flow pb;
	enum wire_drop why;

	/* A family the encoder does not know becomes an empty address. */
	wire_flow_to_pb(f, &pb);
	return wire_flow_check(&pb, true, &why);
}

size_t
wire_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t
wire_flow_encoded_size(const struct wire_flow *f)
{
	Maglb__Sync__Flow pb;
	enum wire_drop why;
	size_t size;

	wire_flow_to_pb(f, &pb);
	if (!wire_flow_check(&pb, true, &why))
		return 0;
	size = maglb__sync__flow__get_packed_size(&pb);
	/* The repeated field's tag (fields 1..15: one byte) and length. */
	return 1 + wire_varint_size(size) + size;
}

void **
wire_pb_array_new(size_t n, size_t size, const void *init)
{
	void **ptrs;
	uint8_t *items;

	if (n == 0 || n > SIZE_MAX / (sizeof(void *) + size))
		return NULL;
	ptrs = malloc(n * (sizeof(void *) + size));
	if (ptrs == NULL)
		return NULL;
	/*
	 * size is a multiple of the messages' alignment, as is n pointers.
	 * The pointers are stored as void * and read as pointers to messages,
	 * as protobuf-c itself does with the repeated fields it unpacks.
	 */
	items = (uint8_t *)(ptrs + n);
	for (size_t i = 0; i < n; i++) {
		ptrs[i] = items + i * size;
		memcpy(ptrs[i], init, size);
	}
	return ptrs;
}

Maglb__Sync__Flow **
wire_flows_to_pb(const struct wire_flow *f, size_t n)
{
	static const Maglb__Sync__Flow init = MAGLB__SYNC__FLOW__INIT;
	Maglb__Sync__Flow **pbs;

	pbs = (Maglb__Sync__Flow **)wire_pb_array_new(n, sizeof(init), &init);
	if (pbs == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		wire_flow_to_pb(&f[i], pbs[i]);
	return pbs;
}

int
wire_flows_from_pb(Maglb__Sync__Flow *const *pbs, size_t n,
		   struct wire_flow **out)
{
	struct wire_flow *f = NULL;

	if (n > 0) {
		f = calloc(n, sizeof(*f));
		if (f == NULL)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		wire_flow_from_pb(pbs[i], &f[i]);
	*out = f;
	return 0;
}

int
wire_pb_pack(const ProtobufCMessage *msg, uint8_t *buf, size_t len,
	     size_t *out_len)
{
	size_t size = protobuf_c_message_get_packed_size(msg);

	*out_len = size;
	if (size > len)
		return -ENOSPC;
	if (protobuf_c_message_pack(msg, buf) != size)
		return -EINVAL;
	return 0;
}
