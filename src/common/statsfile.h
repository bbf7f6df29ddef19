/* The stats log's file (log_file, VZCAPS_LOG_FILE): where it may be and how it is opened for
 * one record, the same for the library (src/shim/statslog.c) and for the command (a shim that
 * starts its program stock, src/launch/start.c). */
#ifndef VZCAPS_STATSFILE_H
#define VZCAPS_STATSFILE_H

#include <stdbool.h>
#include <sys/stat.h>

/* Whether the directory of path may hold the log: a directory owned by this user or root that
 * neither group nor others may write. */
bool vzcaps_statsfile_dir_ok(const char *path);
/* path opened for appending one record (created 0600), with LOG rotated to old first when it
 * holds 1 MiB or more: a descriptor, or -1 when it is not a regular file of this user's with
 * one link that others cannot write, or another writer's rotation is under way. Never blocks,
 * never follows a link; errno is not kept (the caller keeps it). */
int vzcaps_statsfile_open(const char *path, const char *old);
/* path opened for appending as vzcaps_statsfile_open opens it, without its rotation (st: the
 * file opened): a descriptor, or -1. */
int vzcaps_statsfile_append(const char *path, struct stat *st);
/* path renamed to old, as the rotation does: only while path is still fd's file (st), under a
 * lock on it that never waits. 0 moved; 1 the lock is held (another writer's rotation is under
 * way); 2 path is no longer that file (rotated meanwhile); -1 the rename failed (errno). The
 * lock, once taken, is held until fd is closed. */
int vzcaps_statsfile_move_aside(const char *path, const char *old, int fd, const struct stat *st);

#endif
