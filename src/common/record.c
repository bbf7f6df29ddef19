/* The one record of what vzcaps made (record.h): an entry's device, inode, modification time and
 * content hash, the record file kept beside it, and where a marker stands in a text output.
 * Never: follows a link at the entry, blocks on a FIFO, or accepts a marker or record in part. */
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE
#include "record.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __APPLE__
#define MTIME_NSEC(st) ((long)(st).st_mtimespec.tv_nsec)
#else
#define MTIME_NSEC(st) ((long)(st).st_mtim.tv_nsec)
#endif

static void hex_of(struct sha256 *s, char hex[65])
{
    uint8_t d[32];
    sha256_final(s, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* The SHA-256 of the regular file name, which must still be the entry st describes. */
static int hash_file(int dirfd, const char *name, const struct stat *st, char hex[65])
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat now;
    if (fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    unsigned long long got;
    int rc = sha256_fd_hex(fd, hex, &got), e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The SHA-256 of a link's target and a newline (what readlink(1) prints, so the scripts agree). */
static int hash_link(int dirfd, const char *name, const struct stat *st, char hex[65])
{
    size_t cap = st->st_size > 0 ? (size_t)st->st_size + 1 : 256;
    for (;;) {
        char *buf = malloc(cap);
        if (!buf)
            return -1;
        ssize_t n = readlinkat(dirfd, name, buf, cap);
        if (n < 0 || (size_t)n < cap) {
            if (n >= 0) {
                struct sha256 s;
                sha256_init(&s);
                sha256_update(&s, buf, (size_t)n);
                sha256_update(&s, "\n", 1);
                hex_of(&s, hex);
            }
            free(buf);
            return n < 0 ? -1 : 0;
        }
        free(buf);
        if (cap > (size_t)1 << 20) {
            errno = ENAMETOOLONG;
            return -1;
        }
        cap *= 2;
    }
}

unsigned long long vzcaps_made_dev(unsigned long long raw, size_t width)
{
    return width == 4 ? raw & 0xFFFFFFFFull : raw;
}

int vzcaps_made_stat(int dirfd, const char *name, bool hash, struct vzcaps_made *m)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    m->dev = vzcaps_made_dev((unsigned long long)st.st_dev, sizeof st.st_dev);
    m->ino = (unsigned long long)st.st_ino;
    m->sec = (long long)st.st_mtime;
    m->nsec = MTIME_NSEC(st);
    snprintf(m->sha256, sizeof m->sha256, "-");
    if (!hash || S_ISDIR(st.st_mode))
        return 0;
    if (S_ISREG(st.st_mode))
        return hash_file(dirfd, name, &st, m->sha256);
    if (S_ISLNK(st.st_mode))
        return hash_link(dirfd, name, &st, m->sha256);
    return 0; /* a FIFO or device is never opened: no content */
}

char *vzcaps_made_format(const struct vzcaps_made *m)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    if (!f)
        return NULL;
    fprintf(f, "%llu %llu %lld.%09ld %s", m->dev, m->ino, m->sec, m->nsec, m->sha256);
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* The record is compared as text with the entry's own fields, as vzcaps_made_format writes
 * them now: "DEV INO SEC.NNNNNNNNN", then " SHA256" (64 lowercase hex digits, compared) or " -"
 * (not compared) or nothing (a record from before the hash), then the end of the line. The shell
 * scripts' made_this does exactly this (tests/dist/test_record.py runs a table through both). */
bool vzcaps_made_this(int dirfd, const char *name, const char *fields)
{
    if (!fields)
        return false;
    size_t len = strcspn(fields, "\n");
    const char *hash = NULL;
    size_t base = len;
    int spaces = 0;
    for (size_t i = 0; i < len; i++)
        if (fields[i] == ' ' && ++spaces == 3) {
            base = i;
            hash = fields + i + 1;
        }
    size_t hl = hash ? len - base - 1 : 0;
    if (spaces > 3 || (hash && !(hl == 1 && *hash == '-') && !(hl == 64 && strspn(hash, "0123456789abcdef") >= 64)))
        return false;
    bool compare = hash && hl == 64;
    struct vzcaps_made now;
    if (vzcaps_made_stat(dirfd, name, compare, &now) != 0)
        return false;
    char mine[96];
    int ml = snprintf(mine, sizeof mine, "%llu %llu %lld.%09ld", now.dev, now.ino, now.sec, now.nsec);
    return ml > 0 && (size_t)ml == base && memcmp(mine, fields, base) == 0 &&
           (!compare || (strlen(now.sha256) == 64 && memcmp(now.sha256, hash, 64) == 0));
}

/* The first max bytes of the regular file name in dirfd (opened without following a link or
 * blocking), NUL-terminated in buf (size max + 1); its length, or -1 (also when it holds a NUL). */
static ssize_t read_head(int dirfd, const char *name, char *buf, size_t max, bool whole)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (whole && st.st_size > (off_t)max)) {
        close(fd);
        return -1;
    }
    size_t len = 0;
    ssize_t n;
    while (len < max && ((n = read(fd, buf + len, max - len)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0)
            len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    return memchr(buf, '\0', len) ? -1 : (ssize_t)len;
}

#define RECORD_MAX 65536

bool vzcaps_made_by_record(int dirfd, const char *name, const char *recname, const char *first)
{
    char *buf = malloc(RECORD_MAX + 1);
    if (!buf)
        return false;
    ssize_t n = read_head(dirfd, recname, buf, RECORD_MAX, true);
    size_t fl = strlen(first);
    bool ok = n > 0 && strncmp(buf, first, fl) == 0 && strncmp(buf + fl, "\ncopy ", 6) == 0 &&
              vzcaps_made_this(dirfd, name, buf + fl + 6);
    free(buf);
    return ok;
}

char *vzcaps_record_text(int dirfd, const char *name, const char *first, const char *extra)
{
    struct vzcaps_made m;
    if (vzcaps_made_stat(dirfd, name, true, &m) != 0)
        return NULL;
    char *fields = vzcaps_made_format(&m), *s = NULL;
    size_t n = 0;
    FILE *f = fields ? open_memstream(&s, &n) : NULL;
    if (f) {
        fprintf(f, "%s\ncopy %s\n%s", first, fields, extra ? extra : "");
        if (fclose(f) != 0) {
            free(s);
            s = NULL;
        }
    }
    free(fields);
    if (!s)
        errno = ENOMEM;
    return s;
}

/* Line k (0-based) of head: its start and length (without the newline), false when absent or
 * not ended by a newline within head. */
static bool line_at(const char *head, size_t n, int k, const char **start, size_t *len)
{
    const char *p = head, *end = head + n;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        if (k-- == 0) {
            *start = p;
            *len = (size_t)(nl - p);
            return true;
        }
        p = nl + 1;
    }
}

static bool line_is(const char *head, size_t n, int k, const char *text)
{
    const char *s;
    size_t len;
    return line_at(head, n, k, &s, &len) && len == strlen(text) && memcmp(s, text, len) == 0;
}

static bool line_is_xml_decl(const char *head, size_t n, int k)
{
    const char *s;
    size_t len;
    return line_at(head, n, k, &s, &len) && len >= 7 && memcmp(s, "<?xml ", 6) == 0 && memcmp(s + len - 2, "?>", 2) == 0;
}

bool vzcaps_marked_text(const char *head, size_t n, const char *marker, enum vzcaps_mark_at at)
{
    if (!marker || !*marker || strchr(marker, '\n') || memchr(head, '\0', n))
        return false;
    const char *s;
    size_t len;
    switch (at) {
    case VZCAPS_MARK_LINE1:
        return line_is(head, n, 0, marker);
    case VZCAPS_MARK_AFTER_XML_DECL:
        return line_is_xml_decl(head, n, 0) ? line_is(head, n, 1, marker) : line_is(head, n, 0, marker);
    case VZCAPS_MARK_AFTER_DOCTYPE:
        return line_is_xml_decl(head, n, 0) && line_at(head, n, 1, &s, &len) && len > 10 &&
               memcmp(s, "<!DOCTYPE ", 10) == 0 && s[len - 1] == '>' && line_is(head, n, 2, marker);
    case VZCAPS_MARK_IN_HEAD: {
        size_t m = strlen(marker);
        for (size_t i = 0; m <= n && i <= n - m; i++)
            if (memcmp(head + i, marker, m) == 0)
                return true;
        return false;
    }
    }
    return false;
}

bool vzcaps_marked_file(int dirfd, const char *name, const char *marker, enum vzcaps_mark_at at)
{
    char head[4097];
    ssize_t n = read_head(dirfd, name, head, sizeof head - 1, false);
    return n > 0 && vzcaps_marked_text(head, (size_t)n, marker, at);
}
