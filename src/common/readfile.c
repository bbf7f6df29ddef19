/* Reads a whole small config file for the configuration step; shared by the library and the
 * command so both open, trust and read config files the same way.
 * Never: blocks on a FIFO or a device (opened O_NONBLOCK, regular files only), trusts a file
 * others can write, reads past its size limit, allocates or writes. */
#define _POSIX_C_SOURCE 200809L
#include "readfile.h"

#include "../core/vzcaps_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

int vzcaps_open_regular(const char *path, struct stat *st, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) { /* the common reason without the formatter (a config file searched for and absent) */
        errno == ENOENT ? (void)vzcaps_copy(err, errlen, "cannot open: No such file or directory")
                        : (void)snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        snprintf(err, errlen, "not a regular file");
        errno = EINVAL;
        return -1;
    }
    return fd;
}

int vzcaps_read_file(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing,
                     char *err, size_t errlen)
{
    (void)ctx;
    *missing = false;
    struct stat st;
    int fd = vzcaps_open_regular(path, &st, err, errlen);
    if (fd < 0) {
        *missing = errno == ENOENT;
        return -1;
    }
    if (vzcaps_file_trust((unsigned long)st.st_uid, (unsigned long)st.st_mode, (unsigned long)getuid(), err, errlen) != 0) {
        close(fd);
        return -1;
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > cap - 1) {
        close(fd);
        snprintf(err, errlen, "larger than %zu bytes", cap - 1);
        return -1;
    }
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            close(fd);
            snprintf(err, errlen, "larger than %zu bytes", cap - 1);
            return -1;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            snprintf(err, errlen, "cannot read: %s", strerror(errno));
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n < (size_t)st.st_size) { /* it shrank between fstat and the end of the read */
        snprintf(err, errlen, "truncated while read (%zu of %lld bytes)", n, (long long)st.st_size);
        return -1;
    }
    if (n >= cap) {
        snprintf(err, errlen, "larger than %zu bytes", cap - 1);
        return -1;
    }
    buf[n] = '\0';
    *len = n;
    return 0;
}
