/* Opening and reading files that vzcaps is handed (library and command alike). */
#ifndef VZCAPS_READFILE_H
#define VZCAPS_READFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* Opens path read-only without blocking (a FIFO or device never hangs) and insists on a
 * regular file: the descriptor, or -1 with "cannot open: ..." or "not a regular file" in err
 * (errno ENOENT when it does not exist). *st holds its fstat. */
int vzcaps_open_regular(const char *path, struct stat *st, char *err, size_t errlen);
/* A whole config file into buf (cap bytes, NUL-terminated), refused when not regular, not
 * trusted (vzcaps_file_trust) or larger than cap - 1 bytes by its size alone. */
int vzcaps_read_file(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing,
                     char *err, size_t errlen);

#endif
