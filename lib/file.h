/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a whole small file (users, certificates, the console's files). */
#ifndef MAGLB_LIB_FILE_H
#define MAGLB_LIB_FILE_H

#include <stddef.h>

/*
 * The rest of fd, at most max bytes, into *text (malloc'd, NUL-terminated,
 * the caller's) and *len: 0, -EFBIG past max, -ENOMEM, or read()'s -errno.
 */
int file_read_fd(int fd, size_t max, char **text, size_t *len);

#endif /* MAGLB_LIB_FILE_H */
