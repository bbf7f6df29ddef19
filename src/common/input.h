/* The one way the command reads a file it is given or finds (input.c): configs go through
 * readfile.c (shared with the library); everything else (models, plists, llama-bench JSON and
 * logs, Mach-O, manifests) through here. Never linked into the injected library. */
#ifndef VZCAPS_INPUT_H
#define VZCAPS_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* A result the caller cannot drop: every input given or found is used, or the command fails
 * with its name and the reason. */
#define VZCAPS_MUST_USE __attribute__((warn_unused_result))

enum {
    VZCAPS_IN_NOFOLLOW = 1, /* refuse a symbolic link at the last component */
    VZCAPS_IN_SPECIAL = 2,  /* also FIFOs and character devices (read until their end, blocking) */
};

struct vzcaps_input_opts {
    size_t max;     /* the size limit in bytes (required: a read never runs unbounded) */
    unsigned flags; /* VZCAPS_IN_* */
};

/* A whole file in memory: data[len] is '\0' (text callers may use it as a string; binary
 * callers use len). missing: the open failed with ENOENT (a caller for which "absent" is no
 * error may say so; every other failure is an error). st: its fstat. */
struct vzcaps_input {
    char *data;
    size_t len;
    struct stat st;
    bool missing;
};

/* Reads path whole: opened read-only with O_NONBLOCK (a FIFO or a device never hangs it),
 * regular files only unless VZCAPS_IN_SPECIAL, refused from its size alone when larger than
 * max, read (never mapped: a file that shrinks cannot raise SIGBUS) and refused as "truncated
 * while read" when it ends before the size fstat gave, or when it grows past max. 0, or -1 with
 * one line "PATH: reason" in err and nothing to free. */
VZCAPS_MUST_USE int vzcaps_input_read(const char *path, const struct vzcaps_input_opts *o, struct vzcaps_input *in,
                                      char *err, size_t errlen);
void vzcaps_input_free(struct vzcaps_input *in);

/* For a file read in a stream (copied or hashed without being kept): the descriptor of a
 * regular file opened as above (-1 with "PATH: reason"), then vzcaps_input_end with the bytes
 * read: -1 with "PATH: truncated while read" when fewer than st->st_size arrived. */
VZCAPS_MUST_USE int vzcaps_input_open(const char *path, unsigned flags, struct stat *st, char *err, size_t errlen);
VZCAPS_MUST_USE int vzcaps_input_end(const char *path, const struct stat *st, unsigned long long got, char *err,
                                     size_t errlen);

/* "64 MiB", "1024 MiB", "4 KiB", "512 bytes": a limit as the messages and the docs state it. */
void vzcaps_input_size_text(size_t n, char *buf, size_t len);

/* Tests only: called between the fstat and the first read (to change the file there). */
extern void (*vzcaps_input_after_stat)(int fd, const char *path);

#endif
