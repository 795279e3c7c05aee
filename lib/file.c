/* SPDX-License-Identifier: BSD-3-Clause */
#include "lib/file.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int
file_read_fd(int fd, size_t max, char **text, size_t *len)
{
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap), *grown;
	ssize_t n;

	while (buf != NULL) {
		if (used > max) {
			free(buf);
			return -EFBIG;
		}
		if (used + 1 == cap) {
			grown = realloc(buf, cap * 2);
			if (grown == NULL)
				break;
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;

			free(buf);
			return rc;
		}
		if (n == 0) {
			buf[used] = '\0';
			*text = buf;
			*len = used;
			return 0;
		}
		used += (size_t)n;
	}
	free(buf);
	return -ENOMEM;
}
