/* The stats log's file, for the library and the command alike (statsfile.h). */
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE /* O_NOFOLLOW, flock on macOS */
#include "statsfile.h"

#include "../core/vzcaps_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether the directory of path may hold the log: a directory owned by this user or root that
 * neither group nor others may write (a shared or sticky directory such as /tmp is refused:
 * another user could put a link, a FIFO or a file of theirs at the name first). */
bool vzcaps_statsfile_dir_ok(const char *path)
{
    char dir[VZCAPS_PATH_MAX + 1], why[8];
    if (strlen(path) > VZCAPS_PATH_MAX)
        return false;
    const char *slash = strrchr(path, '/');
    size_t n = slash && slash > path ? (size_t)(slash - path) : 1; /* "/x": the root directory */
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           vzcaps_file_trust((unsigned long)st.st_uid, (unsigned long)st.st_mode, (unsigned long)geteuid(), why,
                             sizeof why) == 0;
}

/* The log opened for appending, checked: a regular file of this user's, one link, not
 * writable by others; -1 when it is anything else (closed again). */
static int open_log(const char *log_path, struct stat *st)
{
    /* what is at the name first: opening a FIFO, a terminal or a device has effects of its own
     * (a FIFO's waiting reader wakes up, a session leader acquires a terminal, a device acts),
     * so only a regular file, or nothing, is opened; the directory is no one else's to change
     * in between */
    if (lstat(log_path, st) == 0 ? !S_ISREG(st->st_mode) : errno != ENOENT)
        return -1;
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1 &&
        !(st->st_mode & (S_IWGRP | S_IWOTH)))
        return fd;
    close(fd);
    return -1;
}

enum vzcaps_statsfile_old vzcaps_statsfile_old(const char *old, unsigned long uid)
{
    struct stat st;
    if (lstat(old, &st) != 0)
        return errno == ENOENT ? VZCAPS_OLD_NONE : VZCAPS_OLD_OTHER;
    if (!S_ISREG(st.st_mode)) /* looked at before it is opened: opening a FIFO has effects */
        return S_ISDIR(st.st_mode) ? VZCAPS_OLD_DIRECTORY : S_ISLNK(st.st_mode) ? VZCAPS_OLD_LINK : VZCAPS_OLD_OTHER;
    int fd = open(old, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return VZCAPS_OLD_OTHER;
    char head[sizeof VZCAPS_STATSLOG_START - 1];
    enum vzcaps_statsfile_old state = VZCAPS_OLD_OURS;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        state = VZCAPS_OLD_OTHER;
    else if ((unsigned long)st.st_uid != uid || st.st_nlink != 1 || (st.st_mode & (S_IWGRP | S_IWOTH)))
        state = VZCAPS_OLD_NOT_MINE;
    else if (read(fd, head, sizeof head) != (ssize_t)sizeof head || memcmp(head, VZCAPS_STATSLOG_START, sizeof head) != 0)
        state = VZCAPS_OLD_NOT_LOG;
    close(fd);
    return state;
}

const char *vzcaps_statsfile_old_why(enum vzcaps_statsfile_old state)
{
    switch (state) {
    case VZCAPS_OLD_DIRECTORY: return "a directory";
    case VZCAPS_OLD_LINK: return "a symbolic link";
    case VZCAPS_OLD_OTHER: return "not a regular file, or it cannot be looked at";
    case VZCAPS_OLD_NOT_MINE: return "not a file of yours alone: another owner, a second name, or writable by others";
    case VZCAPS_OLD_NOT_LOG: return "its first line is not a vzcaps record";
    default: return "a log of vzcaps's";
    }
}

/* 1 MiB or more: LOG becomes LOG.1 (replacing it) and a new LOG is started; only when LOG.1 is
 * nothing or a log of ours (else LOG stays and is appended to past the limit: a directory, a
 * user's own file at LOG.1 is never replaced, and no record is lost for it), and only when LOG is
 * still the file opened (another process may have rotated it meanwhile), checked and renamed
 * under a lock on that file, so that of two writers that opened it only one renames it (without
 * the lock the second could rename the first one's new LOG over LOG.1, and the full log was
 * lost). The lock never waits: a writer that finds it taken leaves the rotation to its holder.
 * LOG.1 is looked at before the lock: only this user can change it (the directory is checked). */
static int rotate(const char *log_path, const char *log_old, int fd, struct stat *st)
{
    struct stat now;
    if (st->st_size < VZCAPS_STATSLOG_ROTATE || vzcaps_statsfile_old(log_old, (unsigned long)geteuid()) > VZCAPS_OLD_OURS)
        return fd;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && lstat(log_path, &now) == 0 && now.st_dev == st->st_dev &&
        now.st_ino == st->st_ino && rename(log_path, log_old) != 0)
        return fd; /* LOG stays (the lock goes with the descriptor): appended past the limit */
    close(fd); /* the lock goes with it */
    fd = open_log(log_path, st);
    if (fd >= 0 && st->st_size >= VZCAPS_STATSLOG_ROTATE) { /* another writer's full file: give up */
        close(fd);
        fd = -1;
    }
    return fd;
}

int vzcaps_statsfile_open(const char *path, const char *old)
{
    struct stat st;
    int fd = open_log(path, &st);
    return fd >= 0 ? rotate(path, old, fd, &st) : -1;
}
