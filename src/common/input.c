/* The one way the command reads a file: non-blocking open, regular files only, a size limit
 * checked before and while reading, shrinking detected ("truncated"), one "PATH: reason" line.
 * Never: maps a file (no SIGBUS), blocks on a FIFO, reads past its limit, or returns part of
 * a file as if it were whole. */
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE /* O_NOFOLLOW */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

void (*vzcaps_input_after_stat)(int fd, const char *path);

void vzcaps_input_size_text(size_t n, char *buf, size_t len)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, len, "%zu KiB", n >> 10);
    else
        snprintf(buf, len, "%zu bytes", n);
}

static const char *type_name(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

static int open_input(const char *path, unsigned flags, struct stat *st, bool *missing, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (flags & VZCAPS_IN_NOFOLLOW ? O_NOFOLLOW : 0));
    if (fd < 0) {
        int e = errno;
        if (missing)
            *missing = e == ENOENT;
        snprintf(err, errlen, "%s: cannot open: %s", path, e == ELOOP && (flags & VZCAPS_IN_NOFOLLOW) ? "a symbolic link (not followed)" : strerror(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    bool special = (flags & VZCAPS_IN_SPECIAL) && (S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode));
    if (!S_ISREG(st->st_mode) && !special) {
        close(fd);
        if (S_ISDIR(st->st_mode))
            snprintf(err, errlen, "%s: a directory, not a file", path);
        else
            snprintf(err, errlen, "%s: not a regular file (%s)", path, type_name(st->st_mode));
        errno = EINVAL;
        return -1;
    }
    if (special) { /* the caller asked for a stream: read it until its end */
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
            (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    }
    return fd;
}

int vzcaps_input_open(const char *path, unsigned flags, struct stat *st, char *err, size_t errlen)
{
    int fd = open_input(path, flags & ~(unsigned)VZCAPS_IN_SPECIAL, st, NULL, err, errlen);
    if (fd >= 0 && vzcaps_input_after_stat)
        vzcaps_input_after_stat(fd, path);
    return fd;
}

int vzcaps_input_end(const char *path, const struct stat *st, unsigned long long got, char *err, size_t errlen)
{
    if (S_ISREG(st->st_mode) && got < (unsigned long long)st->st_size) {
        snprintf(err, errlen, "%s: truncated while read (%llu of %lld bytes)", path, got, (long long)st->st_size);
        return -1;
    }
    return 0;
}

static int too_large(const char *path, size_t max, unsigned long long size, char *err, size_t errlen)
{
    char lim[32];
    vzcaps_input_size_text(max, lim, sizeof lim);
    if (size)
        snprintf(err, errlen, "%s: larger than %s (%llu bytes)", path, lim, size);
    else
        snprintf(err, errlen, "%s: larger than %s (it grew while read)", path, lim);
    return -1;
}

int vzcaps_input_read(const char *path, const struct vzcaps_input_opts *o, struct vzcaps_input *in, char *err,
                      size_t errlen)
{
    memset(in, 0, sizeof *in);
    size_t max = o->max;
    int fd = open_input(path, o->flags, &in->st, &in->missing, err, errlen);
    if (fd < 0)
        return -1;
    bool reg = S_ISREG(in->st.st_mode);
    if (reg && (in->st.st_size < 0 || (unsigned long long)in->st.st_size > max)) { /* from its size alone */
        close(fd);
        return too_large(path, max, (unsigned long long)in->st.st_size, err, errlen);
    }
    if (vzcaps_input_after_stat)
        vzcaps_input_after_stat(fd, path);
    /* room for the size fstat gave and one byte more: growth is seen, never read past max + 1 */
    size_t cap = reg ? (size_t)in->st.st_size + 1 : (max < 65536 ? max + 1 : 65536), n = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    while (buf) {
        if (n == cap) {
            if (cap > max) {
                rc = too_large(path, max, 0, err, errlen);
                break;
            }
            size_t more = cap > max / 2 ? max + 1 : cap * 2;
            char *b = realloc(buf, more + 1);
            if (!b)
                break;
            buf = b;
            cap = more;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
            rc = -1;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (rc == 0 && reg)
        rc = vzcaps_input_end(path, &in->st, n, err, errlen);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    in->data = buf;
    in->len = n;
    return 0;
}

void vzcaps_input_free(struct vzcaps_input *in)
{
    free(in->data);
    in->data = NULL;
    in->len = 0;
}
