/* The stats log (log_file, VZCAPS_LOG_FILE; `vzcaps stats` reads it): one record per process,
 * appended when the first device is hooked or left stock (where the one line is decided).
 * Prepared in the constructor: the path and LOG.1, the directory's check, the program's name,
 * path and refusal. Written with one open, at most one rename, one write(2) of the whole record
 * (at most 1024 bytes, O_APPEND) and a close: no malloc, no lock that waits (a rotation takes
 * one that never does), no blocking open (nothing but a regular file is opened; O_NONBLOCK
 * besides), never through a link (O_NOFOLLOW), never a file of someone else's, errno as it was,
 * SIGXFSZ taken back, and nothing said when anything fails (the record is lost, the host is not
 * touched). */
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE /* O_NOFOLLOW on macOS */
#include "quiet.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char log_path[VZCAPS_PATH_MAX + 1], log_old[VZCAPS_PATH_MAX + 3];
static char program[4096], exe_path[VZCAPS_PATH_MAX + 1];
static char refusal[VZCAPS_MAX_NOTES * (VZCAPS_NOTE_LEN + 2)];
static bool armed;
static atomic_flag written = ATOMIC_FLAG_INIT;

/* Whether the directory of path may hold the log: a directory owned by this user or root that
 * neither group nor others may write (a shared or sticky directory such as /tmp is refused:
 * another user could put a link, a FIFO or a file of theirs at the name first). */
static bool directory_ok(const char *path)
{
    char dir[VZCAPS_PATH_MAX + 1], why[8];
    const char *slash = strrchr(path, '/');
    size_t n = slash && slash > path ? (size_t)(slash - path) : 1; /* "/x": the root directory */
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           vzcaps_file_trust((unsigned long)st.st_uid, (unsigned long)st.st_mode, (unsigned long)geteuid(), why,
                             sizeof why) == 0;
}

void vzcaps_statslog_prepare(const struct vzcaps_config_result *r, const char *exe)
{
    const struct vzcaps_profile *p = &r->profile;
    size_t n = strlen(r->log_file);
    if (!n || n > VZCAPS_PATH_MAX || !directory_ok(r->log_file))
        return; /* off, or nowhere safe: nothing is written, nothing said */
    memcpy(log_path, r->log_file, n + 1);
    memcpy(log_old, r->log_file, n);
    memcpy(log_old + n, ".1", 3);
    snprintf(program, sizeof program, "%s", exe);
    if (vzcaps_platform_exe_path(exe_path, sizeof exe_path) != 0)
        exe_path[0] = '\0';
    refusal[0] = '\0';
    for (size_t i = 0; p->state == VZCAPS_STOCK_REFUSED && i < p->n_notes; i++)
        vzcaps_appendf(refusal, sizeof refusal, "%s%s", i ? "; " : "", p->notes[i]);
    armed = true;
}

/* The log opened for appending, checked: a regular file of this user's, one link, not
 * writable by others; -1 when it is anything else (closed again). */
static int open_log(struct stat *st)
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

/* 1 MiB or more: LOG becomes LOG.1 (replacing it) and a new LOG is started; only when LOG is
 * still the file opened (another process may have rotated it meanwhile), checked and renamed
 * under a lock on that file, so that of two writers that opened it only one renames it (without
 * the lock the second could rename the first one's new LOG over LOG.1, and the full log was
 * lost). The lock never waits: a writer that finds it taken leaves the rotation to its holder. */
static int rotate(int fd, struct stat *st)
{
    struct stat now;
    if (st->st_size < VZCAPS_STATSLOG_ROTATE)
        return fd;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && lstat(log_path, &now) == 0 && now.st_dev == st->st_dev &&
        now.st_ino == st->st_ino)
        rename(log_path, log_old);
    close(fd); /* the lock goes with it */
    fd = open_log(st);
    if (fd >= 0 && st->st_size >= VZCAPS_STATSLOG_ROTATE) { /* another writer's full file: give up */
        close(fd);
        fd = -1;
    }
    return fd;
}

static void append(bool hooked, const char *cls, const char *reason)
{
    static char line[VZCAPS_STATSLOG_MAX];
    struct vzcaps_statslog_record rec = {(long long)time(NULL), (long long)getpid(),
                                         hooked ? vzcaps_effective.apple_family_max : 0, hooked, program, exe_path, cls,
                                         hooked ? "" : reason};
    size_t n = vzcaps_statslog_format(&rec, line);
    struct stat st;
    int fd = open_log(&st);
    if (fd >= 0)
        fd = rotate(fd, &st);
    if (fd < 0)
        return;
    struct vzcaps_quiet q;
    vzcaps_quiet_begin(&q);
    if (write(fd, line, n) < 0) /* one write: O_APPEND keeps concurrent records whole */
        vzcaps_quiet_wrote(&q, errno); /* a short or failed write is a lost record, nothing more */
    vzcaps_quiet_end(&q);
    close(fd);
}

void vzcaps_statslog_event(bool hooked, const char *cls, const char *reason)
{
    if (!armed || atomic_flag_test_and_set_explicit(&written, memory_order_relaxed))
        return;
    int saved = errno;
    append(hooked, cls, reason && reason[0] ? reason : refusal);
    errno = saved;
}
