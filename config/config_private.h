/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal to config/: what the parser (config.c) and the validation pass
 * (config_check.c) share. No other module includes this header.
 */
#ifndef MAGLB_CONFIG_CONFIG_PRIVATE_H
#define MAGLB_CONFIG_CONFIG_PRIVATE_H

#include <stddef.h>

#include "config/config.h"

/*
 * Write "name:line: reason" into err (errlen bytes), or "name: reason" when
 * line <= 0. err may be NULL or errlen 0: then nothing is written. Always
 * returns -EINVAL, so that callers can write `return config_errorf(...)`.
 */
int config_errorf(char *err, size_t errlen, const char *name, int line,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * The validation pass: everything that needs more than one setting at a time
 * (duplicates, address families, table sizes against backends, health ports).
 * Runs on a fully parsed model. Returns 0, or -EINVAL or -ENOMEM after
 * writing the error into err.
 */
int config_check(const struct config *cfg, const char *name, char *err,
		 size_t errlen);

#endif /* MAGLB_CONFIG_CONFIG_PRIVATE_H */
