/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What wire.c, wire_sync.c and wire_control.c share: the one place outside
 * generated code where protobuf-c types appear. Never included outside
 * proto/.
 */
#ifndef MAGLB_PROTO_WIRE_INTERNAL_H
#define MAGLB_PROTO_WIRE_INTERNAL_H

#include "proto/wire.h"

#include <protobuf-c/protobuf-c.h>

#include "control.pb-c.h"
#include "sync.pb-c.h"

/* Bytes of an address of family (AF_INET 4, AF_INET6 16), else 0. */
size_t wire_addr_len(unsigned int family);

/* The family of an address of len bytes (4 AF_INET, 16 AF_INET6), else 0. */
uint8_t wire_addr_family(size_t len);

/* Copy an address of len bytes into a zeroed 16-byte array. */
void wire_addr_copy(uint8_t dst[WIRE_ADDR_MAX], const ProtobufCBinaryData *src);

/* Point a protobuf-c bytes field at the first wire_addr_len(family) bytes. */
ProtobufCBinaryData wire_addr_to_pb(unsigned int family, const uint8_t *addr);

/* Bytes of v as a protobuf varint. */
size_t wire_varint_size(uint64_t v);

/* True if an IP protocol number is one maglb balances (TCP, UDP). */
bool wire_proto_ok(unsigned int proto);

/* True for sync.proto's Role PASSIVE and ACTIVE, and nothing else. */
bool wire_role_ok(int role);

/* True for sync.proto's ClusterMode ACTIVE_PASSIVE and ACTIVE_ACTIVE. */
bool wire_cluster_mode_ok(int mode);

/* True if a decoded string (NULL is "") has fewer than size bytes. */
bool wire_string_fits(const char *s, size_t size);

/* True if the C array s of size bytes holds its NUL. */
bool wire_string_terminated(const char *s, size_t size);

/* Copy a string that wire_string_fits() into dst of size bytes. */
void wire_string_copy(char *dst, size_t size, const char *src);

/*
 * Validate one entry: addresses, protocol, ports. A missing backend is fine
 * when need_backend is false. On failure stores the reason in *why.
 */
bool wire_flow_check(const Maglb__Sync__Flow *pb, bool need_backend,
		     enum wire_drop *why);

/* wire_flow_check() for n complete entries (backend needed). */
bool wire_flows_check(Maglb__Sync__Flow *const *pbs, size_t n,
		      enum wire_drop *why);

/* Convert a checked entry. */
void wire_flow_from_pb(const Maglb__Sync__Flow *pb, struct wire_flow *f);

/* Fill pb from f; its bytes point into f, which must outlive pb. */
void wire_flow_to_pb(const struct wire_flow *f, Maglb__Sync__Flow *pb);

/*
 * An array of n pointers to n messages of size bytes, each a copy of init,
 * in one allocation that free() releases. NULL when n is 0 or on ENOMEM;
 * tell them apart by n.
 */
void **wire_pb_array_new(size_t n, size_t size, const void *init);

/* n entries as protobuf-c messages, as wire_pb_array_new(). */
Maglb__Sync__Flow **wire_flows_to_pb(const struct wire_flow *f, size_t n);

/* Convert n checked entries into a new array (NULL when n is 0). */
int wire_flows_from_pb(Maglb__Sync__Flow *const *pbs, size_t n,
		       struct wire_flow **out);

/*
 * Entries as sync.proto's columns (Entries), for sync batches and the
 * IPC's export and import batches. wire_cols_check(): every column holds
 * count values (flags and origins: none or count), every value in range;
 * on failure the one reason. wire_cols_to_c(): checked columns into
 * f[0..count). wire_cols_from_c(): n entries into e, with origins or not,
 * its arrays in one allocation (*scratch, the caller frees it, also on
 * failure), or -ENOMEM; an invalid entry makes columns that
 * wire_cols_check() refuses, as the encoders check what they built.
 */
bool wire_cols_check(const Maglb__Sync__Entries *e, size_t count, enum wire_drop *why);
void wire_cols_to_c(const Maglb__Sync__Entries *e, size_t count, struct wire_flow *f);
int wire_cols_from_c(const struct wire_flow *f, size_t n, bool origins, Maglb__Sync__Entries *e,
		     void **scratch);

/*
 * Pack msg into buf as the public encoders promise: 0 and *out_len, or
 * -ENOSPC with the size needed in *out_len.
 */
int wire_pb_pack(const ProtobufCMessage *msg, uint8_t *buf, size_t len,
		 size_t *out_len);

/* Count a drop in c (may be NULL) and return its -errno. */
int wire_drop_count(struct wire_counters *c, enum wire_drop why);

#endif /* MAGLB_PROTO_WIRE_INTERNAL_H */
