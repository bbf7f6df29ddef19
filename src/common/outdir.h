/* A bundle directory (outdir.c): doctor --bundle DIR and bench --out DIR. */
#ifndef VZCAPS_OUTDIR_H
#define VZCAPS_OUTDIR_H

#include <stddef.h>

/* New or empty, never a link (vzcaps_dir_open_output), every file in it new (safewrite). A file
 * that cannot be written is named on stderr as "vzcaps CMD: cannot write PATH: reason" and
 * counted in failures; SHA256SUMS lists what was written, hashed from the bytes written. */
struct out_file {
    char *name;
    char hex[65];
};
struct out_dir {
    int fd;
    const char *path, *cmd;
    int failures;
    struct out_file files[64];
    size_t n;
};
/* 0, or -1 after saying why on stderr. */
int out_dir_open(struct out_dir *d, const char *cmd, const char *path);
/* 0, or -1 (said and counted). */
int out_dir_put(struct out_dir *d, const char *name, const void *data, size_t len);
/* SHA256SUMS of every file written so far, sorted by name. */
int out_dir_sums(struct out_dir *d);
void out_dir_close(struct out_dir *d);

#endif
