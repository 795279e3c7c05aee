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

/* -------------------------------------------------- entries as columns */

/* Entries.families bits. */
enum {
	FAMILY_V6 = 1u << 0,        /* VIP and client */
	FAMILY_BACKEND_V6 = 1u << 1,
	FAMILY_BITS = FAMILY_V6 | FAMILY_BACKEND_V6,
};

static size_t
family_bytes(uint8_t bits, uint8_t bit)
{
	return bits & bit ? 16 : 4;
}

bool
wire_cols_check(const Maglb__Sync__Entries *e, size_t count, enum wire_drop *why)
{
	size_t addr = 0, backend = 0;

	if (count == 0)
		return true;
	if (e->families.len != count || e->n_vip_ports != count || e->n_protocols != count ||
	    e->client_ports.len != 2 * count || e->n_lifetimes_ms != count ||
	    (e->n_flags != 0 && e->n_flags != count) ||
	    (e->n_origins != 0 && e->n_origins != count)) {
		*why = WIRE_DROP_TRUNCATED;
		return false;
	}
	for (size_t i = 0; i < count; i++) {
		uint8_t fam = e->families.data[i];

		if (fam & ~FAMILY_BITS) {
			*why = WIRE_DROP_BAD_ADDRESS;
			return false;
		}
		addr += family_bytes(fam, FAMILY_V6);
		backend += family_bytes(fam, FAMILY_BACKEND_V6);
		if (!wire_proto_ok((unsigned int)e->protocols[i])) {
			*why = WIRE_DROP_BAD_PROTOCOL;
			return false;
		}
		if (e->vip_ports[i] > UINT16_MAX) {
			*why = WIRE_DROP_BAD_PORT;
			return false;
		}
	}
	if (e->vips.len != addr || e->clients.len != addr || e->backends.len != backend) {
		*why = WIRE_DROP_BAD_ADDRESS;
		return false;
	}
	return true;
}

void
wire_cols_to_c(const Maglb__Sync__Entries *e, size_t count, struct wire_flow *f)
{
	const uint8_t *vip = e->vips.data, *client = e->clients.data;
	const uint8_t *backend = e->backends.data, *port = e->client_ports.data;

	for (size_t i = 0; i < count; i++, port += 2) {
		uint8_t fam = e->families.data[i];
		size_t a = family_bytes(fam, FAMILY_V6), b = family_bytes(fam, FAMILY_BACKEND_V6);

		memset(f[i].vip, 0, sizeof(f[i].vip));
		memset(f[i].client, 0, sizeof(f[i].client));
		memset(f[i].backend, 0, sizeof(f[i].backend));
		f[i].family = wire_addr_family(a);
		f[i].backend_family = wire_addr_family(b);
		f[i].proto = (uint8_t)e->protocols[i];
		f[i].vip_port = (uint16_t)e->vip_ports[i];
		f[i].client_port = (uint16_t)(port[0] << 8 | port[1]);
		f[i].lifetime_ms = e->lifetimes_ms[i];
		f[i].flags = e->n_flags ? (uint8_t)(e->flags[i] & WIRE_FLOW_FLAGS_ALL) : 0;
		f[i].origin = e->n_origins ? e->origins[i] : 0;
		memcpy(f[i].vip, vip, a);
		memcpy(f[i].client, client, a);
		memcpy(f[i].backend, backend, b);
		vip += a;
		client += a;
		backend += b;
	}
}

int
wire_cols_from_c(const struct wire_flow *f, size_t n, bool origins, Maglb__Sync__Entries *e,
		 void **scratch)
{
	size_t u32 = n * sizeof(uint32_t);
	uint8_t *m, *vip, *client, *backend, *port;

	*e = (Maglb__Sync__Entries)MAGLB__SYNC__ENTRIES__INIT;
	/* 5 arrays of uint32 (enums are ints), then the byte columns */
	*scratch = m = malloc(5 * u32 + n * (1 + 3 * WIRE_ADDR_MAX + 2));
	if (m == NULL)
		return -ENOMEM;
	e->count = (uint32_t)n;
	e->vip_ports = (uint32_t *)(void *)m;
	e->protocols = (Maglb__Sync__IpProtocol *)(void *)(m + u32);
	e->lifetimes_ms = (uint32_t *)(void *)(m + 2 * u32);
	e->flags = (uint32_t *)(void *)(m + 3 * u32);
	e->origins = (uint32_t *)(void *)(m + 4 * u32);
	e->families.data = m + 5 * u32;
	vip = e->vips.data = e->families.data + n;
	client = e->clients.data = vip + n * WIRE_ADDR_MAX;
	backend = e->backends.data = client + n * WIRE_ADDR_MAX;
	port = e->client_ports.data = backend + n * WIRE_ADDR_MAX;
	e->n_vip_ports = e->n_protocols = e->n_lifetimes_ms = e->n_flags = n;
	e->n_origins = origins ? n : 0;
	e->families.len = n;
	e->client_ports.len = 2 * n;
	for (size_t i = 0; i < n; i++) {
		/* an unknown family adds no bytes: the check after catches it */
		size_t a = wire_addr_len(f[i].family), b = wire_addr_len(f[i].backend_family);

		e->families.data[i] = (uint8_t)((a == 16 ? FAMILY_V6 : 0) |
						(b == 16 ? FAMILY_BACKEND_V6 : 0));
		e->vip_ports[i] = f[i].vip_port;
		e->protocols[i] = (Maglb__Sync__IpProtocol)f[i].proto;
		e->lifetimes_ms[i] = f[i].lifetime_ms;
		e->flags[i] = f[i].flags & WIRE_FLOW_FLAGS_ALL;
		e->origins[i] = f[i].origin;
		memcpy(vip + e->vips.len, f[i].vip, a);
		memcpy(client + e->clients.len, f[i].client, a);
		memcpy(backend + e->backends.len, f[i].backend, b);
		e->vips.len += a;
		e->clients.len += a;
		e->backends.len += b;
		port[2 * i] = (uint8_t)(f[i].client_port >> 8);
		port[2 * i + 1] = (uint8_t)f[i].client_port;
	}
	return 0;
}
