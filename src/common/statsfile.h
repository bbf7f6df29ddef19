/* The stats log's file (log_file, VZCAPS_LOG_FILE): where it may be and how it is opened for
 * one record, the same for the library (src/shim/statslog.c) and for the command (a shim that
 * starts its program stock, src/launch/start.c). */
#ifndef VZCAPS_STATSFILE_H
#define VZCAPS_STATSFILE_H

#include <stdbool.h>
#include <sys/stat.h>

/* Whether the directory of path may hold the log: a directory owned by this user or root that
 * neither group nor others may write, the one actually opened: walked from / component by
 * component without following a link another user could have planted (one not owned by root or
 * this user, with a second name, or in a directory someone else may write and that is not sticky:
 * a link of another user's in /tmp; /tmp -> private/tmp is root's in root's /, and followed).
 * Every directory on the way must be readable. */
bool vzcaps_statsfile_dir_ok(const char *path);
/* That directory's descriptor (close-on-exec), or -1: what is read from it is what was checked. */
int vzcaps_statsfile_dir(const char *path);
/* name in the directory dirfd opened to be read, checked on the descriptor as the library's own:
 * a regular file of this user's with one link that group and others cannot write (st: its
 * stat). -1 with errno ENOENT (absent), EPERM (not this user's alone), ELOOP (a link), EISDIR
 * or EINVAL (not a regular file, or not openable). Never follows a link, never opens a FIFO. */
int vzcaps_statsfile_read(int dirfd, const char *name, struct stat *st);
/* What is at old (LOG.1; relative to dirfd, or AT_FDCWD), which a rotation replaces only when
 * it is nothing or a log of ours: a regular file of uid's (the writer's: the library passes its
 * own) with one link that neither group nor others may write, whose first bytes are a record's (VZCAPS_STATSLOG_START; the library and a shim start every record so, and
 * a rotation renames a LOG that began with one). Anything else is left alone: LOG stays and is
 * appended to past 1 MiB (vzcaps stats says why, vzcaps_statsfile_old_why). */
enum vzcaps_statsfile_old {
    VZCAPS_OLD_NONE,
    VZCAPS_OLD_OURS,
    VZCAPS_OLD_DIRECTORY,
    VZCAPS_OLD_LINK,
    VZCAPS_OLD_OTHER,    /* a FIFO, device or socket, or what cannot be looked at */
    VZCAPS_OLD_NOT_MINE, /* another owner, a second name, or writable by others */
    VZCAPS_OLD_NOT_LOG,  /* its first bytes are not a record's */
};
enum vzcaps_statsfile_old vzcaps_statsfile_old(int dirfd, const char *old, unsigned long uid);
/* Why a state other than NONE and OURS is not replaced, as a phrase ("a directory"). */
const char *vzcaps_statsfile_old_why(enum vzcaps_statsfile_old state);
/* path opened for appending one record (created 0600) in its directory opened and checked as
 * vzcaps_statsfile_dir_ok does (and relative to that descriptor: openat, renameat), with LOG rotated to old first when it
 * holds 1 MiB or more and old is nothing or a log of ours (else LOG is appended to past the
 * limit): a descriptor, or -1 when it is not a regular file of this user's with
 * one link that others cannot write, or another writer's rotation is under way. Never blocks,
 * never follows a link; errno is not kept (the caller keeps it). */
int vzcaps_statsfile_open(const char *path, const char *old);
/* path opened for appending as vzcaps_statsfile_open opens it, without its rotation (st: the
 * file opened): a descriptor, or -1. */
int vzcaps_statsfile_append(const char *path, struct stat *st);
/* path renamed to old, as the rotation does: only while path is still fd's file (st), under a
 * lock on it that never waits, and never over an old that is not nothing or a log of ours
 * (vzcaps_statsfile_old). 0 moved; 1 the lock is held (another writer's rotation is under way);
 * 2 path is no longer that file (rotated meanwhile); -1 the rename failed or old is not ours
 * (errno: EEXIST), or the directory is not one the log may be in (EACCES). The lock, once
 * taken, is held until fd is closed. */
int vzcaps_statsfile_move_aside(const char *path, const char *old, int fd, const struct stat *st);

#endif
