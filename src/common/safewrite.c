/* The one way the command writes files and directories (see safewrite.h).
 * Owns: temporary-then-place writes, output directories, the check of standard output.
 * Never: opens an existing name for writing, follows a link at the last component, replaces
 * what vzcaps did not make without --force, or hides a failed write. Not in the library. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* mkdirat, linkat, renameat, fdopen */
#define _DARWIN_C_SOURCE
#include "safewrite.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

static char *vmsg(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

static char *msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vmsg(fmt, ap);
    va_end(ap);
    return s;
}

char *vzcaps_write_error(const char *path, const char *why, int errnum)
{
    return msg("%s: %s", path, why ? why : strerror(errnum));
}

/* Sets *err (when asked) and returns -1, keeping errno. */
static int fail(char **err, const char *path, const char *why, int errnum)
{
    if (err)
        *err = vzcaps_write_error(path, why, errnum);
    errno = errnum;
    return -1;
}

mode_t vzcaps_safe_mode(mode_t m)
{
    return m & 0777 & ~(mode_t)(S_ISUID | S_ISGID | S_ISVTX | S_IWOTH);
}

/* Splits path into a directory (opened following links: a directory the user names, such as
 * macOS's /tmp -> private/tmp, is where the file goes; only the file's own name is never
 * followed) and a final name. Returns the directory's descriptor or -1. */
static int open_parent(const char *path, char **name, char **err)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return fail(err, path, "not a file name", EINVAL);
    char *dir = slash ? msg("%.*s", (int)(slash == path ? 1 : slash - path), path) : msg(".");
    *name = msg("%s", base);
    if (!dir || !*name) {
        free(dir);
        free(*name);
        *name = NULL;
        return fail(err, path, NULL, ENOMEM);
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    if (fd < 0)
        fail(err, dir, e == ENOTDIR ? "not a directory" : e == ENOENT ? "no such directory" : NULL, e);
    free(dir);
    if (fd < 0) {
        free(*name);
        *name = NULL;
        errno = e;
    }
    return fd;
}

bool vzcaps_same_output(const char *a, const char *b)
{
    struct stat sa, sb;
    if (lstat(a, &sa) == 0 && lstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
        return true; /* one existing file (another spelling, a hard link) */
    /* names not made yet: the same name in the same directory, however the directory is spelled */
    char *na = NULL, *nb = NULL;
    int da = open_parent(a, &na, NULL), db = da >= 0 ? open_parent(b, &nb, NULL) : -1;
    bool same = db >= 0 && fstat(da, &sa) == 0 && fstat(db, &sb) == 0 && sa.st_dev == sb.st_dev &&
                sa.st_ino == sb.st_ino && strcmp(na, nb) == 0;
    if (da >= 0)
        close(da);
    if (db >= 0)
        close(db);
    free(na);
    free(nb);
    return same;
}

static unsigned long tmp_counter;

/* Every temporary being written, so that a stop signal removes them all (as git's tempfile.c
 * does): changed with the stop signals blocked, walked by the handler only. */
struct tmp_entry {
    struct tmp_entry *next;
    int dirfd;
    const char *name;
};
static struct tmp_entry *volatile tmp_list;

static void stops_blocked(bool block, sigset_t *old)
{
    if (block) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGINT), sigaddset(&s, SIGTERM), sigaddset(&s, SIGHUP);
        sigprocmask(SIG_BLOCK, &s, old);
    } else {
        sigprocmask(SIG_SETMASK, old, NULL);
    }
}

/* Remembers o's temporary; -1 when out of memory (the write is then not started). */
static int track(struct vzcaps_out *o)
{
    struct tmp_entry *e = malloc(sizeof *e);
    if (!e)
        return -1;
    e->dirfd = o->dirfd;
    e->name = o->tmp;
    sigset_t old;
    stops_blocked(true, &old);
    e->next = tmp_list;
    tmp_list = e;
    stops_blocked(false, &old);
    return 0;
}

static void untrack(struct vzcaps_out *o)
{
    sigset_t old;
    stops_blocked(true, &old);
    struct tmp_entry *e = NULL;
    for (struct tmp_entry *volatile *p = &tmp_list; *p; p = &(*p)->next)
        if ((*p)->name == o->tmp) {
            e = *p;
            *p = e->next;
            break;
        }
    stops_blocked(false, &old);
    free(e);
}

void vzcaps_tmp_remove_all(void)
{
    for (struct tmp_entry *e = tmp_list; e; e = e->next)
        unlinkat(e->dirfd, e->name, 0);
}

static int out_start(struct vzcaps_out *o, int dirfd, const char *path, const char *name,
                     const struct vzcaps_wopts *opts, char **err)
{
    o->dirfd = dirfd;
    o->fd = -1;
    o->f = NULL;
    o->error = 0;
    o->opts = *opts;
    o->path = msg("%s", path);
    o->name = msg("%s", name);
    o->tmp = NULL;
    if (!o->path || !o->name)
        return fail(err, path, NULL, ENOMEM);
    if (strchr(name, '/') || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return fail(err, path, "not a file name", EINVAL);
    mode_t mode = vzcaps_safe_mode(opts->mode);
    for (int tries = 0; tries < 100; tries++) {
        free(o->tmp);
        o->tmp = msg(".vzcaps-tmp.%ld.%lu", (long)getpid(), ++tmp_counter);
        if (!o->tmp)
            return fail(err, path, NULL, ENOMEM);
        o->fd = openat(dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
        if (o->fd >= 0 || errno != EEXIST)
            break;
    }
    if (o->fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return fail(err, path, NULL, e);
    }
    return 0;
}

static void out_free(struct vzcaps_out *o)
{
    free(o->path);
    free(o->name);
    free(o->tmp);
    o->path = o->name = o->tmp = NULL;
}

int vzcaps_out_openat(struct vzcaps_out *o, int dirfd, const char *dirpath, const char *name,
                      const struct vzcaps_wopts *opts, char **err)
{
    char *path = strcmp(dirpath, "/") == 0 ? msg("/%s", name) : msg("%s/%s", dirpath, name);
    int rc = out_start(o, dirfd, path ? path : name, name, opts, err);
    free(path);
    if (rc != 0) {
        int e = errno;
        out_free(o);
        o->dirfd = -1;
        errno = e;
    } else {
        o->dirfd = dup(dirfd); /* the caller keeps its own descriptor */
        if (o->dirfd < 0) {
            int e = errno;
            unlinkat(dirfd, o->tmp, 0);
            close(o->fd);
            fail(err, o->path, NULL, e);
            out_free(o);
            errno = e;
            return -1;
        }
        if (track(o) != 0) {
            fail(err, o->path, NULL, ENOMEM);
            vzcaps_out_abort(o);
            errno = ENOMEM;
            return -1;
        }
    }
    return rc;
}

int vzcaps_out_open(struct vzcaps_out *o, const char *path, const struct vzcaps_wopts *opts, char **err)
{
    char *name = NULL;
    int dirfd = open_parent(path, &name, err);
    if (dirfd < 0) {
        o->dirfd = o->fd = -1;
        o->path = o->name = o->tmp = NULL;
        o->f = NULL;
        return -1;
    }
    int rc = out_start(o, dirfd, path, name, opts, err);
    free(name);
    if (rc != 0) {
        int e = errno;
        close(dirfd);
        out_free(o);
        o->dirfd = -1;
        errno = e;
    } else if (track(o) != 0) {
        fail(err, path, NULL, ENOMEM);
        vzcaps_out_abort(o);
        errno = ENOMEM;
        return -1;
    }
    return rc;
}

void vzcaps_out_write(struct vzcaps_out *o, const void *data, size_t len)
{
    if (o->f) { /* keep the order of what went through the stream */
        if (fwrite(data, 1, len, o->f) != len && !o->error)
            o->error = errno ? errno : EIO;
        return;
    }
    const char *p = data;
    while (len && !o->error) {
        ssize_t n = write(o->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            o->error = n < 0 ? errno : EIO;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
}

FILE *vzcaps_out_stream(struct vzcaps_out *o)
{
    if (!o->f && o->fd >= 0) {
        o->f = fdopen(o->fd, "w");
        if (!o->f && !o->error)
            o->error = errno;
    }
    return o->f;
}

void vzcaps_out_abort(struct vzcaps_out *o)
{
    if (o->f)
        fclose(o->f);
    else if (o->fd >= 0)
        close(o->fd);
    o->f = NULL;
    o->fd = -1;
    if (o->tmp && o->dirfd >= 0)
        unlinkat(o->dirfd, o->tmp, 0);
    if (o->tmp)
        untrack(o);
    if (o->dirfd >= 0)
        close(o->dirfd);
    o->dirfd = -1;
    out_free(o);
}

/* Places the written temporary under its name following the policy. */
static int place(struct vzcaps_out *o, char **err)
{
    struct stat st;
    if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT)
            return fail(err, o->path, NULL, errno);
        /* a link is an atomic "create only if absent" */
        if (linkat(o->dirfd, o->tmp, o->dirfd, o->name, 0) == 0) {
            unlinkat(o->dirfd, o->tmp, 0);
            return 0;
        }
        if (errno == EEXIST)
            return fail(err, o->path, "appeared while it was being written (left alone)", EEXIST);
        if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP && errno != EMLINK && errno != ENOSYS)
            return fail(err, o->path, NULL, errno);
        /* a file system without hard links: the name was absent a moment ago */
        if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0)
            return fail(err, o->path, NULL, errno);
        return 0;
    }
    if (S_ISLNK(st.st_mode))
        return fail(err, o->path, "exists and is a symbolic link (refusing to replace it)", EEXIST);
    if (S_ISDIR(st.st_mode))
        return fail(err, o->path, "exists and is a directory", EISDIR);
    if (!S_ISREG(st.st_mode))
        return fail(err, o->path, "exists and is not a regular file", EEXIST);
    switch (o->opts.replace) {
    case VZCAPS_NEW_ONLY:
        return fail(err, o->path, "already exists (not replaced)", EEXIST);
    case VZCAPS_IF_MARKED:
        if (!vzcaps_marked_file(o->dirfd, o->name, o->opts.marker, o->opts.marker_at))
            return fail(err, o->path,
                        o->opts.force_option ? "already exists and vzcaps did not write it (not replaced; --force replaces it)"
                                             : "already exists and vzcaps did not write it (not replaced)",
                        EEXIST);
        break;
    case VZCAPS_FORCE:
        break;
    }
    if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0)
        return fail(err, o->path, NULL, errno);
    return 0;
}

int vzcaps_out_commit(struct vzcaps_out *o, char **err)
{
    int e = o->error;
    if (o->f) {
        if (fflush(o->f) != 0 && !e)
            e = errno ? errno : EIO;
        if (ferror(o->f) && !e)
            e = EIO;
    }
    if (!e && o->opts.sync && fsync(o->fd) != 0 && errno != EINVAL && errno != ENOTSUP)
        e = errno;
    int c = o->f ? fclose(o->f) : close(o->fd);
    if (c != 0 && !e)
        e = errno;
    o->f = NULL;
    o->fd = -1;
    int rc = e ? fail(err, o->path, NULL, e) : place(o, err);
    e = errno;
    vzcaps_out_abort(o); /* removes the temporary if it is still there, frees */
    errno = e;
    return rc;
}

int vzcaps_write_fileat(int dirfd, const char *dirpath, const char *name, const void *data, size_t len,
                        const struct vzcaps_wopts *opts, char **err)
{
    struct vzcaps_out o;
    if (vzcaps_out_openat(&o, dirfd, dirpath, name, opts, err) != 0)
        return -1;
    vzcaps_out_write(&o, data, len);
    return vzcaps_out_commit(&o, err);
}

int vzcaps_write_file(const char *path, const void *data, size_t len, const struct vzcaps_wopts *opts, char **err)
{
    struct vzcaps_out o;
    if (vzcaps_out_open(&o, path, opts, err) != 0)
        return -1;
    vzcaps_out_write(&o, data, len);
    return vzcaps_out_commit(&o, err);
}

int vzcaps_mkdir_parents(const char *path, char **err)
{
    char *buf = msg("%s", path);
    if (!buf)
        return fail(err, path, NULL, ENOMEM);
    int rc = 0;
    size_t n = strlen(buf);
    for (size_t i = 1; i <= n && !rc; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        struct stat st;
        if (mkdir(buf, 0777) != 0) {
            int e = errno;
            if (e != EEXIST || stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
                rc = fail(err, buf, e == EEXIST ? "exists and is not a directory" : NULL, e == EEXIST ? ENOTDIR : e);
        }
        buf[i] = c;
    }
    int e = errno;
    free(buf);
    errno = e;
    return rc;
}

static int dir_open_output(const char *path, const char *marker, char **err);

char *vzcaps_dir_name(const char *given)
{
    /* "DIR/" and "DIR/." would make lstat and open follow a link at DIR: the name is taken
     * without its trailing slashes and "." components ("." and "/" stay) */
    char *path = msg("%s", given);
    if (!path)
        return NULL;
    for (size_t n = strlen(path);;) {
        if (n > 1 && path[n - 1] == '/')
            path[--n] = '\0';
        else if (n >= 2 && path[n - 1] == '.' && path[n - 2] == '/')
            path[--n] = '\0';
        else
            break;
    }
    return path;
}

int vzcaps_dir_open_output(const char *given, const char *marker, char **err)
{
    char *path = vzcaps_dir_name(given);
    if (!path)
        return fail(err, given, NULL, ENOMEM);
    int fd = dir_open_output(path, marker, err);
    int e = errno;
    free(path);
    errno = e;
    return fd;
}

static int dir_open_output(const char *path, const char *marker, char **err)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return fail(err, path, NULL, errno);
        if (vzcaps_mkdir_parents(path, err) != 0)
            return -1;
    } else if (S_ISLNK(st.st_mode)) {
        return fail(err, path, "is a symbolic link (refusing to write through it)", ELOOP);
    } else if (!S_ISDIR(st.st_mode)) {
        return fail(err, path, "exists and is not a directory", ENOTDIR);
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(err, path, errno == ELOOP ? "is a symbolic link (refusing to write through it)" : NULL, errno);
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        int e = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        close(fd);
        return fail(err, path, NULL, e);
    }
    bool empty = true, marked = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        empty = false;
        if (marker && strcmp(de->d_name, marker) == 0 &&
            fstatat(fd, marker, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            marked = true;
    }
    closedir(d);
    if (!empty && !marked) {
        close(fd);
        return fail(err, path, marker ? "exists, is not empty and was not written by vzcaps (choose a new or empty directory)"
                                       : "exists and is not empty (choose a new or empty directory)", ENOTEMPTY);
    }
    return fd;
}

int vzcaps_mkdirat_new(int dirfd, const char *dirpath, const char *name, mode_t mode, char **err)
{
    char *path = msg("%s/%s", dirpath, name);
    const char *p = path ? path : name;
    int rc;
    if (strchr(name, '/') || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        rc = fail(err, p, "not a directory name", EINVAL);
    else if (mkdirat(dirfd, name, vzcaps_safe_mode(mode)) != 0)
        rc = fail(err, p, errno == EEXIST ? "already exists (not replaced)" : NULL, errno);
    else if ((rc = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        rc = fail(err, p, NULL, errno);
    int e = errno;
    free(path);
    errno = e;
    return rc;
}

int vzcaps_close_stdout(void)
{
    /* As coreutils' close_stdout: an error that stdio saw, or one that flushing or closing
     * reports now, is a failed write, except a closed descriptor with nothing to write. stdio
     * forgets why an earlier write failed and drops what it could not write; what is still
     * buffered is tried again for the reason, else the descriptor is asked (closed, or open
     * read-only as vzcaps_guard_std_fds leaves a closed one: EBADF), else no reason is made up. */
    int e = 0;
    bool failed_before = ferror(stdout) != 0;
    if (failed_before) {
        clearerr(stdout);
        errno = 0;
        if (fflush(stdout) != 0 && errno)
            e = errno;
    }
    if (!e && fflush(stdout) != 0)
        e = errno ? errno : -1;
    if (!e && ferror(stdout))
        failed_before = true;
    if (!e && failed_before) {
        int fl = fcntl(STDOUT_FILENO, F_GETFL);
        e = fl < 0 ? errno : (fl & O_ACCMODE) == O_RDONLY ? EBADF : -1;
    }
    if (fclose(stdout) != 0 && !e && errno != EBADF)
        e = errno;
    if (!e)
        return 0;
    if (e > 0)
        fprintf(stderr, "vzcaps: cannot write standard output: %s\n", strerror(e));
    else
        fprintf(stderr, "vzcaps: cannot write standard output: a write failed (stdio does not keep the reason)\n");
    return -1;
}

void vzcaps_guard_std_fds(void)
{
    /* A descriptor 0-2 that is closed is taken by /dev/null opened the wrong way round, so the
     * next file the command opens cannot become its standard output, and a write to a closed
     * standard output fails (and is reported by vzcaps_close_stdout) instead of landing in a file. */
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int n = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
            if (n >= 0 && n != fd) {
                dup2(n, fd);
                close(n);
            }
        }
}
