/* Reading a whole small file for the configuration step (library and command alike). */
#ifndef VZCAPS_READFILE_H
#define VZCAPS_READFILE_H

#include <stdbool.h>
#include <stddef.h>

int vzcaps_read_file(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing,
                     char *err, size_t errlen);

#endif
