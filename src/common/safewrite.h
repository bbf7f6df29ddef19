/* The one way the command writes files and directories.
 * Owns: creating a file or directory next to its final name, writing and checking it, and
 * placing it without following a link or replacing what vzcaps did not make.
 * Never: opens an existing name for writing, follows a link at the last component, keeps a
 * setuid/setgid or world-writable mode, or reports success after a failed write. */
#ifndef VZCAPS_SAFEWRITE_H
#define VZCAPS_SAFEWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "record.h"

/* What may happen to a name that already exists when a new file is placed there. Whatever the
 * policy, only a regular file is ever replaced: a link, a directory or a special file in the
 * way is an error. */
enum vzcaps_replace {
    VZCAPS_NEW_ONLY = 0, /* the name must not exist */
    VZCAPS_IF_MARKED,    /* replace a regular file that carries the marker where marker_at says */
    VZCAPS_FORCE,        /* replace a regular file (the user passed --force) */
};

/* Options of one write. mode is masked with 0777 & ~(S_ISUID|S_ISGID|S_IWOTH) and then by the
 * umask (the file is created with it). sync: fsync the file before it is placed. */
struct vzcaps_wopts {
    mode_t mode;
    enum vzcaps_replace replace;
    const char *marker; /* for VZCAPS_IF_MARKED: a line of its own (record.h) */
    enum vzcaps_mark_at marker_at;
    bool sync;
    bool force_option; /* the command has --force: a file not replaced says that --force would */
};

/* A file being written: created as a hidden temporary in its directory, exclusively and
 * without following links, and placed under its name by vzcaps_out_commit. */
struct vzcaps_out {
    int dirfd;      /* the directory, opened without following a link at its last component */
    int fd;         /* the temporary file */
    FILE *f;        /* a stream on fd (vzcaps_out_stream), or NULL */
    char *path;     /* the final path, for messages */
    char *name;     /* the final name inside dirfd */
    char *tmp;      /* the temporary's name inside dirfd */
    struct vzcaps_wopts opts;
    int error;      /* the first errno of a failed write, 0 while all went well */
};

/* Every function below returns 0 on success, or -1 with a heap message "PATH: reason" in
 * *err (the caller frees it; err may be NULL), the temporary removed and nothing placed. */

/* Starts a file at path (its directory must exist; links on the way to it are followed, as
 * the user named them, and the file's own name never is) or at name inside an open directory
 * (dirfd stays the caller's; dirpath is used in messages only). */
int vzcaps_out_open(struct vzcaps_out *o, const char *path, const struct vzcaps_wopts *opts, char **err);
int vzcaps_out_openat(struct vzcaps_out *o, int dirfd, const char *dirpath, const char *name,
                      const struct vzcaps_wopts *opts, char **err);
/* Appends bytes; a failure is remembered and reported by vzcaps_out_commit. */
void vzcaps_out_write(struct vzcaps_out *o, const void *data, size_t len);
/* A stdio stream on the file, for fprintf; its errors are reported by vzcaps_out_commit. */
FILE *vzcaps_out_stream(struct vzcaps_out *o);
/* Flushes, checks every write, fsyncs when asked, closes and places the file under its name
 * according to the replace policy. The temporary is removed on any failure. */
int vzcaps_out_commit(struct vzcaps_out *o, char **err);
/* Gives up: removes the temporary, places nothing. Safe to call twice and after commit. */
void vzcaps_out_abort(struct vzcaps_out *o);

/* Removes every temporary a write has open (async-signal-safe: for the stop-signal handler,
 * child.c, which every command installs). */
void vzcaps_tmp_remove_all(void);

/* A whole file in one call. */
int vzcaps_write_file(const char *path, const void *data, size_t len, const struct vzcaps_wopts *opts, char **err);
int vzcaps_write_fileat(int dirfd, const char *dirpath, const char *name, const void *data, size_t len,
                        const struct vzcaps_wopts *opts, char **err);

/* An output directory for a bundle: created (with missing parents, mode 0777 & ~umask) or, when
 * it exists, accepted only if it is a real directory (not a link) that is empty, or, when marker
 * is not NULL, that holds a regular file of that name (a bundle vzcaps made before). A link
 * at path (also written "path/" or "path/.") is refused. Returns a descriptor opened with
 * O_DIRECTORY|O_NOFOLLOW, or -1 with *err. */
int vzcaps_dir_open_output(const char *path, const char *marker, char **err);
/* A directory's name as given, without trailing slashes and "." components ("DIR/" and "DIR/."
 * name DIR itself, so a link there is seen as one); on the heap, NULL when out of memory. */
char *vzcaps_dir_name(const char *given);
/* A subdirectory created inside dirfd (it must not exist); returns its descriptor or -1. */
int vzcaps_mkdirat_new(int dirfd, const char *dirpath, const char *name, mode_t mode, char **err);
/* Creates path and its missing parents (mode 0777 & ~umask); an existing directory or a link
 * to one is accepted. */
int vzcaps_mkdir_parents(const char *path, char **err);

/* The mode a copy gets: the source's permission bits without setuid, setgid, sticky and
 * world-write (the umask applies on top when the copy is created). */
mode_t vzcaps_safe_mode(mode_t source_mode);

/* Standard output is a file too: flushes and closes it, and on failure (a full disk, a closed
 * descriptor with output pending, a broken pipe) prints "vzcaps: cannot write standard output:
 * REASON" on stderr and returns -1. Call once, at exit. */
int vzcaps_close_stdout(void);

/* At start: a closed descriptor 0, 1 or 2 is filled with /dev/null opened so that writing to
 * it fails, so no file the command opens later becomes its standard output. */
void vzcaps_guard_std_fds(void);

/* Whether two output paths name one file: the same existing file (however spelled, or a hard
 * link), or the same name in the same directory (however the directory is spelled). */
bool vzcaps_same_output(const char *a, const char *b);

/* A heap message "PATH: reason" (reason from errno when why is NULL), for callers that refuse
 * something themselves in the same form. */
char *vzcaps_write_error(const char *path, const char *why, int errnum);

#endif
