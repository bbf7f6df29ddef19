/* A bundle directory (outdir.c): doctor --bundle DIR and bench --out DIR. */
#ifndef VZCAPS_OUTDIR_H
#define VZCAPS_OUTDIR_H

#include "safewrite.h"
#include "sha256.h"

#include <stdbool.h>
#include <stddef.h>

/* New or empty, never a link (vzcaps_dir_open_output), every file in it new (safewrite). A file
 * that cannot be written is named on stderr as "vzcaps CMD: cannot write PATH: reason" and
 * counted in failures; SHA256SUMS lists what was written, hashed from the bytes written.
 * A bundle that could not be finished (a stop signal, a failed run) holds a file INCOMPLETE
 * saying why, listed in its SHA256SUMS; a later run into the same directory replaces such a
 * bundle (only when every file in it is one SHA256SUMS lists, with that content). */
#define OUT_DIR_INCOMPLETE "INCOMPLETE"
struct out_file {
    char *name;
    char hex[65];
    unsigned long long len;
};
struct out_dir {
    int fd;
    const char *path, *cmd;
    int failures;
    struct out_file files[64];
    size_t n;
    bool replaced; /* out_dir_open replaced an incomplete bundle */
};
/* One file being written as it comes (out_dir_begin .. out_dir_end). */
struct out_stream {
    struct out_dir *d;
    struct vzcaps_out o;
    struct sha256 h;
    unsigned long long len;
    bool open;
};
/* 0, or -1 after saying why on stderr. */
int out_dir_open(struct out_dir *d, const char *cmd, const char *path);
/* 0, or -1 (said and counted). */
int out_dir_put(struct out_dir *d, const char *name, const void *data, size_t len);
int out_dir_begin(struct out_dir *d, struct out_stream *s, const char *name);
void out_stream_write(struct out_stream *s, const void *data, size_t len);
int out_dir_end(struct out_stream *s);
/* Gives a file up (not written, not counted); safe after out_dir_end or a failed begin. */
void out_stream_abort(struct out_stream *s);
/* A sink (child.h) onto a stream: for vzcaps_child_opts. */
int out_stream_sink(void *stream, const char *data, size_t len);
/* SHA256SUMS of every file written so far, sorted by name. */
int out_dir_sums(struct out_dir *d);
/* An unfinished bundle: INCOMPLETE (why, one line) and SHA256SUMS. */
int out_dir_incomplete(struct out_dir *d, const char *why);
/* The bundle as one reproducible archive at archive_path (a new file, safewrite): a directory
 * member top/ and every file written, in name order, read back and checked against the hash
 * recorded when it was written. 0, or -1 after saying why on stderr. */
int out_dir_archive(struct out_dir *d, const char *archive_path, const char *top);
void out_dir_close(struct out_dir *d);

#endif
