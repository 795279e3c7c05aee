/* SPDX-License-Identifier: BSD-3-Clause */
/* For check suites: an address as the dataplane keeps it. */
#ifndef MAGLB_TESTS_ADDR_PARSE_H
#define MAGLB_TESTS_ADDR_PARSE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>

#include "dataplane/core/flow_key.h"

/* text (IPv4 or IPv6) as the state keeps addresses: 16 bytes, IPv4 in the
 * first 4, the rest 0. Returns its FLOW_FAMILY_. */
static inline uint8_t
addr_parse(const char *text, uint8_t out[16])
{
	bool v6 = strchr(text, ':') != NULL;

	memset(out, 0, 16);
	ck_assert_int_eq(inet_pton(v6 ? AF_INET6 : AF_INET, text, out), 1);
	return v6 ? FLOW_FAMILY_IPV6 : FLOW_FAMILY_IPV4;
}

#endif /* MAGLB_TESTS_ADDR_PARSE_H */
