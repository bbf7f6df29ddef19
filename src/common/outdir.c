/* A bundle directory (doctor --bundle, bench --out): new or empty (or an incomplete bundle of
 * ours, replaced), never a link, every file in it written once as a new file through safewrite,
 * SHA256SUMS from the bytes written.
 * Owns: which files a bundle holds and which could not be written. Never: writes over a file,
 * through a link, removes a file SHA256SUMS does not vouch for, or counts a failed file. */
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE /* O_NOFOLLOW, O_DIRECTORY */
#include "outdir.h"

#include "targz.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- replacing an incomplete bundle ---- */

/* The SHA-256 of name in dirfd, a regular file opened without following a link: 0 or -1. */
static int hash_at(int dirfd, const char *name, char hex[65])
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sha256 h;
    sha256_init(&h);
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            sha256_update(&h, buf, (size_t)n);
    close(fd);
    if (n < 0)
        return -1;
    uint8_t d[32];
    sha256_final(&h, d);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* The names SHA256SUMS lists with their hashes, each checked against the file; NULL with why
 * when one does not match or the list is not one vzcaps wrote. */
static char *checked_sums(int dirfd, const char **why)
{
    int fd = openat(dirfd, "SHA256SUMS", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 65536) {
        if (fd >= 0)
            close(fd);
        *why = "its SHA256SUMS is missing, not a regular file or too large";
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t len = 0;
    ssize_t n;
    while (text && len < (size_t)st.st_size && ((n = read(fd, text + len, (size_t)st.st_size - len)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0)
            len += (size_t)n;
    close(fd);
    if (!text) {
        *why = "out of memory";
        return NULL;
    }
    text[len] = '\0';
    for (char *line = text; *line;) { /* "HEX  NAME\n", as out_dir_sums writes it */
        char *nl = strchr(line, '\n');
        if (!nl || nl - line < 67 || line[64] != ' ' || line[65] != ' ' || memchr(line + 66, '/', (size_t)(nl - line - 66))) {
            *why = "its SHA256SUMS is not one vzcaps wrote";
            free(text);
            return NULL;
        }
        *nl = '\0';
        char hex[65];
        if (hash_at(dirfd, line + 66, hex) != 0 || memcmp(hex, line, 64) != 0) {
            *why = "a file SHA256SUMS lists is missing or changed";
            free(text);
            return NULL;
        }
        *nl = '\n';
        line = nl + 1;
    }
    return text;
}

static bool listed(const char *sums, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = sums; *line;) {
        const char *nl = strchr(line, '\n');
        if ((size_t)(nl - line - 66) == n && memcmp(line + 66, name, n) == 0)
            return true;
        line = nl + 1;
    }
    return false;
}

/* A directory that holds INCOMPLETE: removes the bundle when every entry is SHA256SUMS or a
 * file it lists with that content (and INCOMPLETE is one of them). 0, or -1 with why. */
static int clear_incomplete(int dirfd, const char **why)
{
    char *sums = checked_sums(dirfd, why);
    if (!sums)
        return -1;
    int rc = 0;
    if (!listed(sums, OUT_DIR_INCOMPLETE)) {
        *why = "its INCOMPLETE is not listed in its SHA256SUMS";
        rc = -1;
    }
    int dup_fd = rc == 0 ? dup(dirfd) : -1;
    DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (rc == 0 && !dir) {
        if (dup_fd >= 0)
            close(dup_fd);
        *why = strerror(errno);
        rc = -1;
    }
    if (dir)
        rewinddir(dir); /* the descriptor's offset is shared with the one that checked the directory */
    struct dirent *e;
    while (dir && rc == 0 && (e = readdir(dir)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "SHA256SUMS") && !listed(sums, e->d_name)) {
            *why = "it holds files that are not part of the bundle";
            rc = -1;
        }
    if (dir)
        closedir(dir);
    for (const char *line = sums; rc == 0 && *line;) {
        const char *nl = strchr(line, '\n');
        char *name = xformat("%.*s", (int)(nl - line - 66), line + 66);
        if (strcmp(name, OUT_DIR_INCOMPLETE) != 0 && unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
            *why = strerror(errno), rc = -1;
        free(name);
        line = nl + 1;
    }
    /* the marker and the list go last: an interrupted removal can be run again */
    if (rc == 0 && unlinkat(dirfd, "SHA256SUMS", 0) != 0)
        *why = strerror(errno), rc = -1;
    if (rc == 0 && unlinkat(dirfd, OUT_DIR_INCOMPLETE, 0) != 0)
        *why = strerror(errno), rc = -1;
    free(sums);
    return rc;
}

int out_dir_open(struct out_dir *d, const char *cmd, const char *path)
{
    memset(d, 0, sizeof *d);
    d->cmd = cmd;
    d->path = path;
    char *err = NULL;
    /* an incomplete bundle is let through here and checked below; any other non-empty
     * directory is refused as it always was */
    struct stat st;
    int probe = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bool marked = probe >= 0 && fstatat(probe, OUT_DIR_INCOMPLETE, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (probe >= 0)
        close(probe);
    d->fd = vzcaps_dir_open_output(path, marked ? OUT_DIR_INCOMPLETE : NULL, &err);
    if (d->fd < 0) {
        eprintf("vzcaps %s: %s", cmd, err ? err : path);
        free(err);
        return -1;
    }
    if (fstatat(d->fd, OUT_DIR_INCOMPLETE, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        const char *why = "";
        if (clear_incomplete(d->fd, &why) != 0) {
            eprintf("vzcaps %s: %s: holds an incomplete bundle that cannot be replaced: %s", cmd, path, why);
            close(d->fd);
            d->fd = -1;
            return -1;
        }
        d->replaced = true;
    }
    return 0;
}

/* ---- files ---- */

int out_dir_begin(struct out_dir *d, struct out_stream *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->d = d;
    size_t room = sizeof d->files / sizeof d->files[0] - (strcmp(name, "SHA256SUMS") != 0); /* one kept for it */
    if (d->n >= room) { /* a file SHA256SUMS could not list is not written */
        eprintf("vzcaps %s: cannot write %s/%s: more than %zu files in one bundle", d->cmd, d->path, name, d->n);
        d->failures++;
        return -1;
    }
    char *err = NULL;
    const struct vzcaps_wopts opts = {.mode = 0644, .replace = VZCAPS_NEW_ONLY};
    if (vzcaps_out_openat(&s->o, d->fd, d->path, name, &opts, &err) != 0) {
        eprintf("vzcaps %s: cannot write %s", d->cmd, err ? err : name);
        free(err);
        d->failures++;
        return -1;
    }
    sha256_init(&s->h);
    s->open = true;
    return 0;
}

void out_stream_write(struct out_stream *s, const void *data, size_t len)
{
    if (!s->open || !len)
        return;
    vzcaps_out_write(&s->o, data, len);
    sha256_update(&s->h, data, len);
    s->len += len;
}

int out_dir_end(struct out_stream *s)
{
    if (!s->open)
        return -1;
    s->open = false;
    struct out_dir *d = s->d;
    char *name = xformat("%s", s->o.name);
    char *err = NULL;
    if (vzcaps_out_commit(&s->o, &err) != 0) {
        eprintf("vzcaps %s: cannot write %s", d->cmd, err ? err : name);
        free(err);
        free(name);
        d->failures++;
        return -1;
    }
    uint8_t digest[32];
    sha256_final(&s->h, digest);
    struct out_file *f = &d->files[d->n++];
    f->name = name;
    f->len = s->len;
    for (int i = 0; i < 32; i++)
        snprintf(f->hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

void out_stream_abort(struct out_stream *s)
{
    if (s->open)
        vzcaps_out_abort(&s->o);
    s->open = false;
}

int out_stream_sink(void *stream, const char *data, size_t len)
{
    struct out_stream *s = stream;
    out_stream_write(s, data, len);
    return s->open && !s->o.error ? 0 : -1;
}

int out_dir_put(struct out_dir *d, const char *name, const void *data, size_t len)
{
    struct out_stream s;
    if (out_dir_begin(d, &s, name) != 0)
        return -1;
    out_stream_write(&s, data, len);
    return out_dir_end(&s);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct out_file *)a)->name, ((const struct out_file *)b)->name);
}

int out_dir_sums(struct out_dir *d)
{
    qsort(d->files, d->n, sizeof d->files[0], by_name);
    struct out_stream s;
    if (out_dir_begin(d, &s, "SHA256SUMS") != 0)
        return -1;
    for (size_t i = 0; i < d->n; i++) {
        char line[256];
        int n = snprintf(line, sizeof line, "%s  ", d->files[i].hex);
        out_stream_write(&s, line, (size_t)n);
        out_stream_write(&s, d->files[i].name, strlen(d->files[i].name));
        out_stream_write(&s, "\n", 1);
    }
    int rc = out_dir_end(&s);
    qsort(d->files, d->n, sizeof d->files[0], by_name); /* SHA256SUMS in its place */
    return rc;
}

int out_dir_incomplete(struct out_dir *d, const char *why)
{
    char *text = xformat("vzcaps %s: this bundle is incomplete: %s. Running the same command into this directory again "
                         "replaces it.\n", d->cmd, why);
    int rc = out_dir_put(d, OUT_DIR_INCOMPLETE, text, strlen(text));
    free(text);
    return out_dir_sums(d) || rc;
}

/* ---- the archive ---- */

static void archive_write(void *ctx, const void *data, size_t len)
{
    vzcaps_out_write(ctx, data, len);
}

/* One file of the bundle into the archive, read back without following a link and checked
 * against what was written: 0, or -1 with why. */
static int archive_file(struct out_dir *d, struct vzcaps_targz *t, const char *top, const struct out_file *f, const char **why)
{
    int fd = openat(d->fd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size != f->len) {
        if (fd >= 0)
            close(fd);
        *why = "changed since it was written";
        return -1;
    }
    char *name = xformat("%s/%s", top, f->name);
    int rc = vzcaps_targz_member(t, name, 0644, f->len);
    free(name);
    if (rc != 0) {
        close(fd);
        *why = "its name is too long for a tar member";
        return -1;
    }
    struct sha256 h;
    sha256_init(&h);
    char buf[65536];
    unsigned long long left = f->len;
    while (left) {
        ssize_t n = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        sha256_update(&h, buf, (size_t)n);
        vzcaps_targz_data(t, buf, (size_t)n);
        left -= (unsigned long long)n;
    }
    close(fd);
    uint8_t digest[32];
    sha256_final(&h, digest);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    if (left || strcmp(hex, f->hex) != 0) {
        *why = "changed since it was written";
        return -1;
    }
    return 0;
}

int out_dir_archive(struct out_dir *d, const char *archive_path, const char *top)
{
    struct vzcaps_out o;
    char *err = NULL;
    const struct vzcaps_wopts opts = {.mode = 0644, .replace = VZCAPS_NEW_ONLY};
    if (vzcaps_out_open(&o, archive_path, &opts, &err) != 0) {
        eprintf("vzcaps %s: cannot write %s", d->cmd, err ? err : archive_path);
        free(err);
        return -1;
    }
    static struct vzcaps_targz t; /* 64 KiB: not on the stack */
    t.write = archive_write, t.ctx = &o;
    vzcaps_targz_begin(&t);
    char *dir = xformat("%s/", top);
    int rc = vzcaps_targz_member(&t, dir, 0755, 0);
    free(dir);
    qsort(d->files, d->n, sizeof d->files[0], by_name);
    const char *why = "its name is too long for a tar member";
    for (size_t i = 0; rc == 0 && i < d->n; i++)
        if ((rc = archive_file(d, &t, top, &d->files[i], &why)) != 0)
            eprintf("vzcaps %s: cannot write %s: %s/%s %s", d->cmd, archive_path, d->path, d->files[i].name, why);
    if (rc != 0) {
        vzcaps_out_abort(&o);
        return -1;
    }
    vzcaps_targz_end(&t);
    if (vzcaps_out_commit(&o, &err) != 0) {
        eprintf("vzcaps %s: cannot write %s", d->cmd, err ? err : archive_path);
        free(err);
        return -1;
    }
    return 0;
}

void out_dir_close(struct out_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->files[i].name);
    d->n = 0;
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}
