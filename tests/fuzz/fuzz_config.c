/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: a config file's text through config_load_string(), the
 * parser and cross-checks every program runs on /etc/maglb/maglb.conf and
 * on every reload.
 *
 * Besides "no crash, no leak, no sanitizer report", it checks the loader's
 * contract: a refused file gets an error that names the file; an accepted
 * one loads the same way twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

#define CHECK(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, err[512] = "", err2[512] = "";
	struct config *cfg, *again;

	if (size > 65536)           /* a config is a few KiB */
		return 0;
	text = malloc(size + 1);
	CHECK(text != NULL);
	if (size > 0)
		memcpy(text, data, size);
	text[size] = '\0';
	cfg = config_load_string(text, "fuzz.conf", err, sizeof(err));
	if (cfg == NULL) {
		CHECK(strncmp(err, "fuzz.conf", 9) == 0);
	} else {
		again = config_load_string(text, "fuzz.conf", err2, sizeof(err2));
		CHECK(again != NULL);
		config_free(again);
		config_free(cfg);
	}
	free(text);
	return 0;
}
