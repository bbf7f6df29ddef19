/* The stats log's file, for the library and the command alike (statsfile.h). */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* S_ISVTX */
#define _DARWIN_C_SOURCE /* O_NOFOLLOW, O_DIRECTORY, flock on macOS */
#include "statsfile.h"

#include "../core/vzcaps_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LINKS_MAX 32 /* links resolved in one walk, as the kernels' own limits (MAXSYMLINKS, 32 on macOS) */

/* Whether the link name in the directory dirfd is one that only root or this user could have put
 * there: owned by one of them, one name (a second one could have been made by whoever writes
 * another directory), in a directory of one of theirs that nobody else may write, or that is
 * sticky (where no one may rename or remove an entry that is not theirs). /tmp -> private/tmp
 * (root's, in /) is followed; a link another user made in /tmp, or any link in their directory,
 * is not. */
static bool link_trusted(int dirfd, const char *name, unsigned long uid)
{
    struct stat d, l;
    return fstat(dirfd, &d) == 0 && fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode) &&
           (l.st_uid == 0 || l.st_uid == uid) && l.st_nlink == 1 && (d.st_uid == 0 || d.st_uid == uid) &&
           (!(d.st_mode & (S_IWGRP | S_IWOTH)) || (d.st_mode & S_ISVTX));
}

static int open_root(void)
{
    return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The directory dir (absolute) opened by a walk from / one component at a time, never following a
 * link but a trusted one (link_trusted), whose target is walked in its place: the descriptor, or
 * -1 (a component missing, not a directory or not readable, a link another user could have
 * planted, more than LINKS_MAX links). Reentrant: the library's threads may each write a record. */
static __attribute__((noinline)) int open_dir(const char *dir, size_t n)
{
    char rest[2 * VZCAPS_PATH_MAX + 2], target[VZCAPS_PATH_MAX + 1];
    unsigned long uid = (unsigned long)geteuid();
    if (n >= sizeof rest || dir[0] != '/')
        return -1;
    memcpy(rest, dir, n);
    rest[n] = '\0';
    int fd = open_root(), links = 0;
    for (char *p = rest; fd >= 0;) {
        p += strspn(p, "/");
        if (!*p)
            return fd;
        char *end = p + strcspn(p, "/"), saved = *end;
        *end = '\0';
        int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t t = -1;
        if (next < 0 && ++links <= LINKS_MAX && link_trusted(fd, p, uid))
            t = readlinkat(fd, p, target, sizeof target);
        *end = saved;
        size_t left = strlen(end);
        if (next >= 0) {
            close(fd);
            fd = next, p = end;
        } else if (t <= 0 || (size_t)t >= sizeof target || (size_t)t + 1 + left >= sizeof rest) {
            close(fd);
            fd = -1;
        } else { /* the target in the link's place: "T" + "/" + what follows the link */
            memmove(rest + t + 1, end, left + 1);
            memcpy(rest, target, (size_t)t);
            rest[t] = '/';
            p = rest;
            if (target[0] == '/') /* else it is walked from the link's own directory */
                close(fd), fd = open_root();
        }
    }
    return -1;
}

/* The directory of path opened and checked (a directory owned by this user or root that neither
 * group nor others may write), with the offset of path's last component in *base; -1 else. */
static int open_log_dir(const char *path, size_t *base)
{
    char why[8];
    size_t n = strlen(path);
    const char *slash = strrchr(path, '/');
    if (n > VZCAPS_PATH_MAX || !slash || !slash[1])
        return -1;
    *base = (size_t)(slash - path) + 1;
    int fd = open_dir(path, *base);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
        vzcaps_file_trust((unsigned long)st.st_uid, (unsigned long)st.st_mode, (unsigned long)geteuid(), why,
                          sizeof why) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

int vzcaps_statsfile_dir(const char *path)
{
    size_t base;
    return open_log_dir(path, &base);
}

bool vzcaps_statsfile_dir_ok(const char *path)
{
    int fd = vzcaps_statsfile_dir(path);
    return fd >= 0 && close(fd) == 0;
}

int vzcaps_statsfile_read(int dirfd, const char *name, struct stat *st)
{
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st->st_mode)) /* opening a FIFO has effects */
        return errno = errno == ENOENT ? ENOENT : S_ISLNK(st->st_mode) ? ELOOP : S_ISDIR(st->st_mode) ? EISDIR : EINVAL, -1;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        if (fd >= 0)
            close(fd);
        return errno = EINVAL, -1;
    }
    if (st->st_uid == geteuid() && st->st_nlink == 1 && !(st->st_mode & (S_IWGRP | S_IWOTH)))
        return fd;
    close(fd);
    return errno = EPERM, -1;
}

/* The log (name in the directory dirfd) opened for appending, checked: a regular file of this
 * user's, one link, not writable by others; -1 when it is anything else (closed again). */
static int open_log(int dirfd, const char *name, struct stat *st)
{
    /* what is at the name first: opening a FIFO, a terminal or a device has effects of its own
     * (a FIFO's waiting reader wakes up, a session leader acquires a terminal, a device acts),
     * so only a regular file, or nothing, is opened; the directory is no one else's to change
     * in between */
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 ? !S_ISREG(st->st_mode) : errno != ENOENT)
        return -1;
    int fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1 &&
        !(st->st_mode & (S_IWGRP | S_IWOTH)))
        return fd;
    close(fd);
    return -1;
}

enum vzcaps_statsfile_old vzcaps_statsfile_old(int dirfd, const char *old, unsigned long uid)
{
    struct stat st;
    if (fstatat(dirfd, old, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? VZCAPS_OLD_NONE : VZCAPS_OLD_OTHER;
    if (!S_ISREG(st.st_mode)) /* looked at before it is opened: opening a FIFO has effects */
        return S_ISDIR(st.st_mode) ? VZCAPS_OLD_DIRECTORY : S_ISLNK(st.st_mode) ? VZCAPS_OLD_LINK : VZCAPS_OLD_OTHER;
    int fd = openat(dirfd, old, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
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

/* ---- what a rotation drops, said in the file it renames (usagelog.h: ulog_parse_rotated) ---- */

/* The bytes of p (n) that match pat, each '#' a number of up to 15 digits into *v in turn: the
 * length matched, 0 when p does not match. */
static size_t match(const char *p, size_t n, const char *pat, long long *v)
{
    size_t i = 0;
    for (; *pat; pat++) {
        if (*pat != '#') {
            if (i >= n || p[i++] != *pat)
                return 0;
            continue;
        }
        size_t d = 0;
        for (*v = 0; i < n && d < 15 && p[i] >= '0' && p[i] <= '9'; d++)
            *v = *v * 10 + (p[i++] - '0');
        if (!d)
            return 0;
        v++;
    }
    return i;
}

/* Since the last zero mark (0: none), how many records and the newest one's time. */
struct dropped {
    long long zeroed, lost, until;
    bool marked;
};

/* One line of the LOG.1 a rotation replaces: a zero mark starts the count afresh; the line of the rotation
 * that made it LOG.1 carries what was dropped before it (lost -1: unknown, and so it stays); else a record. */
#define ROTATED "{\"v\":1,\"time\":#,\"pid\":#,\"event\":\"rotated\",\"zeroed\":#,\"lost\":"
static void drop_line(struct dropped *d, const char *p, size_t n)
{
    long long v[5];
    bool unknown = match(p, n, ROTATED "-#,\"until\":#}", v) == n;
    if (match(p, n, "{\"v\":1,\"time\":#,\"pid\":#,\"event\":\"zeroed\"}", v) == n)
        *d = (struct dropped){v[0], 0, 0, true};
    else if (unknown || match(p, n, ROTATED "#,\"until\":#}", v) == n) {
        if (!d->marked)
            d->zeroed = v[2], d->lost = unknown || d->lost < 0 ? -1 : d->lost + v[3], d->until = v[4] > d->until ? v[4] : d->until;
    } else if (n) {
        d->lost += d->lost >= 0;
        if (match(p, n, VZCAPS_STATSLOG_START "#", v) && v[0] > d->until)
            d->until = v[0];
    }
}

/* What replacing old (in dirfd) drops: each of its lines (an overlong one counts once); lost -1
 * (unknown: --require fails) when it cannot be read, or holds more than the host's thread reads (2 MiB). */
static __attribute__((noinline)) struct dropped dropped_of(int dirfd, const char *old)
{
    char buf[2 * VZCAPS_STATSLOG_MAX];
    struct dropped d = {0, 0, 0, false};
    struct stat st;
    int fd = openat(dirfd, old, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    size_t have = 0, left = 2 * VZCAPS_STATSLOG_ROTATE;
    bool rest = false; /* the rest of an overlong line, counted already */
    ssize_t r = fd < 0 ? -(errno != ENOENT) : fstat(fd, &st) != 0 || (size_t)st.st_size > left ? -1 : 1;
    while (r > 0 && (r = read(fd, buf + have, sizeof buf - have)) > 0 && (size_t)r <= left) {
        left -= (size_t)r;
        char *p = buf, *nl;
        for (have += (size_t)r; (nl = memchr(p, '\n', have - (size_t)(p - buf))); p = nl + 1, rest = false)
            if (!rest)
                drop_line(&d, p, (size_t)(nl - p));
        memmove(buf, p, have -= (size_t)(p - buf));
        if (have == sizeof buf && !rest)
            drop_line(&d, buf, have), rest = true;
        have = have == sizeof buf ? 0 : have;
    }
    if (have && !rest)
        drop_line(&d, buf, have);
    if (fd >= 0)
        close(fd);
    return r ? (struct dropped){0, -1, 0, false} : d;
}

/* The rotation's line appended to fd's file (st: its size), all of it or nothing: never past
 * RLIMIT_FSIZE (no SIGXFSZ in the host). 0, or -1. */
static int say_dropped(int dirfd, const char *old, int fd, const struct stat *st)
{
    struct dropped d = dropped_of(dirfd, old);
    char line[200];
    int n = snprintf(line, sizeof line, "{\"v\":1,\"time\":%lld,\"pid\":%lld,\"event\":\"rotated\",\"zeroed\":%lld,"
                     "\"lost\":%lld,\"until\":%lld}\n", (long long)time(NULL), (long long)getpid(), d.zeroed, d.lost, d.until);
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
        (unsigned long long)st->st_size + (unsigned long long)n > (unsigned long long)fsize.rlim_cur)
        return -1;
    return write(fd, line, (size_t)n) == n ? 0 : -1;
}

/* name renamed to old in dirfd, only while name is still fd's file (st), under a lock on it that
 * never waits and is held until fd is closed, after the line saying what old held (say: a
 * rotation's; not when it cannot be written): 0 moved; 1 the lock is held (another writer's
 * rotation is under way); 2 name is no longer that file (rotated meanwhile); -1 the rename failed
 * (errno). */
static int move_at(int dirfd, const char *name, const char *old, int fd, const struct stat *st, bool say)
{
    struct stat now;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        return 1;
    if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino)
        return 2;
    if (say && say_dropped(dirfd, old, fd, &now) != 0)
        return -1;
    return renameat(dirfd, name, dirfd, old) == 0 ? 0 : -1;
}

/* 1 MiB or more: LOG becomes LOG.1 (replacing it) and a new LOG is started; only when LOG.1 is
 * nothing or a log of ours (else LOG stays and is appended to past the limit: a directory, a
 * user's own file at LOG.1 is never replaced, and no record is lost for it), and only when LOG is
 * still the file opened (another process may have rotated it meanwhile), checked and renamed
 * under a lock on that file, so that of two writers that opened it only one renames it (without
 * the lock the second could rename the first one's new LOG over LOG.1, and the full log was
 * lost). The lock never waits: a writer that finds it taken leaves the rotation to its holder.
 * LOG.1 is looked at before the lock: only this user can change it (the directory is checked). */
static int rotate(int dirfd, const char *name, const char *old, int fd, struct stat *st)
{
    if (st->st_size < VZCAPS_STATSLOG_ROTATE || vzcaps_statsfile_old(dirfd, old, (unsigned long)geteuid()) > VZCAPS_OLD_OURS)
        return fd;
    int moved = move_at(dirfd, name, old, fd, st, true);
    if (moved == -1 || moved == 1) /* LOG stays, or another writer is renaming it: appended to, kept either way */
        return fd;
    close(fd); /* the lock goes with it */
    fd = open_log(dirfd, name, st);
    if (fd >= 0 && st->st_size >= VZCAPS_STATSLOG_ROTATE) { /* another writer's full file: give up */
        close(fd);
        fd = -1;
    }
    return fd;
}

int vzcaps_statsfile_open(const char *path, const char *old)
{
    struct stat st;
    size_t base;
    const char *old_name = strrchr(old, '/');
    int dirfd = open_log_dir(path, &base), fd = -1;
    if (dirfd < 0)
        return -1;
    fd = open_log(dirfd, path + base, &st);
    if (fd >= 0)
        fd = rotate(dirfd, path + base, old_name ? old_name + 1 : old, fd, &st);
    close(dirfd);
    return fd;
}

int vzcaps_statsfile_append(const char *path, struct stat *st)
{
    size_t base;
    int dirfd = open_log_dir(path, &base);
    if (dirfd < 0)
        return -1;
    int fd = open_log(dirfd, path + base, st);
    close(dirfd);
    return fd;
}

int vzcaps_statsfile_move_aside(const char *path, const char *old, int fd, const struct stat *st)
{
    size_t base;
    const char *old_name = strrchr(old, '/');
    old_name = old_name ? old_name + 1 : old;
    int dirfd = open_log_dir(path, &base), rc = -1;
    if (dirfd < 0)
        return errno = EACCES, -1;
    if (vzcaps_statsfile_old(dirfd, old_name, (unsigned long)geteuid()) > VZCAPS_OLD_OURS)
        errno = EEXIST; /* never over a LOG.1 that is not a log of ours */
    else
        rc = move_at(dirfd, path + base, old_name, fd, st, false);
    int err = errno;
    close(dirfd);
    errno = err;
    return rc;
}
