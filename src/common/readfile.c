/* Reads a whole small file for the configuration step; shared by the library and the command
 * so both read config files the same way. Never: allocates or writes. */
#define _POSIX_C_SOURCE 200809L
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int vzcaps_read_file(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing,
                     char *err, size_t errlen)
{
    (void)ctx;
    *missing = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err, errlen, "not a regular file");
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
    if (n >= cap) {
        snprintf(err, errlen, "larger than %zu bytes", cap - 1);
        return -1;
    }
    buf[n] = '\0';
    *len = n;
    return 0;
}
