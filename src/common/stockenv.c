/* Stock means stock: which PATH entries are vzcaps directories and which preload elements are
 * our library (facts of the file system, by what each file is, whatever its name), and the
 * environment a stock child gets from them (the decision is the core's, vzcaps_stock_env).
 * Never: writes, follows a link to a record, blocks on a FIFO, reads a file past its cap. */
#define _XOPEN_SOURCE 700
#include "stockenv.h"
#include "child.h"
#include "record.h"
#include "text.h"
#include "../core/vzcaps_core.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool vzcaps_is_shim_dir(const char *dir)
{
    int fd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    int scan = dup(fd);
    DIR *d = scan >= 0 ? fdopendir(scan) : NULL;
    if (!d) {
        if (scan >= 0)
            close(scan);
        close(fd);
        return false;
    }
    size_t sl = strlen(VZCAPS_SHIM_RECORD_SUFFIX);
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= sl + 1 || e->d_name[0] != '.' || strcmp(e->d_name + l - sl, VZCAPS_SHIM_RECORD_SUFFIX) != 0)
            continue;
        char *name = strndup(e->d_name + 1, l - sl - 1);
        found = name && *name && vzcaps_made_by_record(fd, name, e->d_name, VZCAPS_SHIM_RECORD_MAKER);
        free(name);
    }
    closedir(d);
    close(fd);
    return found;
}

/* ---- what vzcaps is, by what the file is ---- */

/* The markers vzcaps's binaries carry (src/cli/main.c, src/shim/init.c: VZCAPS_SELF_MARKER, the
 * kind, a blank, the version), joined at run time so this command does not carry the library's. */
static const char *marker_of(const char *kind, char *buf, size_t len)
{
    size_t m = strlen(VZCAPS_SELF_MARKER), k = strlen(kind);
    if (m + 1 + k + 2 > len)
        return "";
    memcpy(buf, VZCAPS_SELF_MARKER, m);
    buf[m] = ' ';
    memcpy(buf + m + 1, kind, k);
    buf[m + 1 + k] = ' ';
    buf[m + k + 2] = '\0';
    return buf;
}

/* Whether the regular file at path (links followed, opened without blocking) holds needle in
 * its first max bytes: read in pieces, a match across two pieces found. */
#define SCAN_PIECE 65536
static bool file_holds(const char *path, const char *needle, off_t max)
{
    size_t nl = strlen(needle);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    char *buf = fd >= 0 ? malloc(SCAN_PIECE + nl) : NULL;
    bool found = false;
    if (buf && nl && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= max) {
        size_t keep = 0;
        ssize_t n;
        while (!found && (n = read(fd, buf + keep, SCAN_PIECE)) > 0) {
            size_t have = keep + (size_t)n;
            for (size_t i = 0; !found && i + nl <= have; i++)
                found = buf[i] == needle[0] && memcmp(buf + i, needle, nl) == 0;
            keep = have < nl - 1 ? have : nl - 1; /* the tail a match may start in */
            memmove(buf, buf + have - keep, keep);
        }
    }
    free(buf);
    if (fd >= 0)
        close(fd);
    return found;
}

/* Our library is far smaller: a file larger than this is not read for its marker. */
#define LIBRARY_SCAN_MAX ((off_t)64 << 20)

struct ids {
    bool have_cmd;
    struct stat cmd;    /* the running command (self) */
    struct stat lib[2]; /* the library vzcaps uses: next to the command, in ../lib (find_library's places) */
    bool have_lib[2];
    char cmd_marker[64], lib_marker[64];
    struct seen {
        dev_t dev;
        ino_t ino;
        bool ours;
    } *seen; /* the preload files already read: each is read once, however often it is named */
    size_t n_seen, cap_seen;
};

static void ids_of(const char *self, const char *libname, struct ids *ids)
{
    memset(ids, 0, sizeof *ids);
    marker_of("command", ids->cmd_marker, sizeof ids->cmd_marker);
    marker_of("library", ids->lib_marker, sizeof ids->lib_marker);
    ids->have_cmd = self && self[0] == '/' && stat(self, &ids->cmd) == 0 && S_ISREG(ids->cmd.st_mode);
    const char *slash = ids->have_cmd && *libname ? strrchr(self, '/') : NULL;
    for (int i = 0; slash && i < 2; i++) {
        char *lib = xformat("%.*s%s/%s", (int)(slash - self), self, i ? "/../lib" : "", libname);
        ids->have_lib[i] = stat(lib, &ids->lib[i]) == 0;
        free(lib);
    }
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether path, started as a program, would start a vzcaps command: the command itself under
 * another name (a link, a chain of links, a hard link, a link to a shim), a copy of it (its size
 * and its marker), or a link to another installation's (a file named vzcaps...). A name
 * vzcaps... is the command's own (never started as a program: vzcaps acts as itself). */
static bool runs_vzcaps(const char *path, const char *name, const struct ids *ids)
{
    struct stat st, l;
    if (strncmp(name, "vzcaps", 6) == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
        return false;
    if (ids->have_cmd && (same_file(&st, &ids->cmd) ||
                          (st.st_size == ids->cmd.st_size && file_holds(path, ids->cmd_marker, st.st_size))))
        return true;
    char real[PATH_MAX];
    return lstat(path, &l) == 0 && S_ISLNK(l.st_mode) && realpath(path, real) &&
           strncmp(vzcaps_basename(real), "vzcaps", 6) == 0;
}

/* Whether dir holds an entry that starts a vzcaps command (runs_vzcaps). An unreadable
 * directory cannot be listed: it is not one. */
static bool holds_vzcaps(const char *dir, const struct ids *ids)
{
    const char *d = *dir ? dir : ".";
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dp) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(dp))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *path = xformat("%s/%s", d, e->d_name);
        found = runs_vzcaps(path, e->d_name, ids);
        free(path);
    }
    closedir(dp);
    return found;
}

bool vzcaps_is_vzcaps_dir(const char *dir, const char *self)
{
    struct ids ids;
    ids_of(self, "", &ids);
    return vzcaps_is_shim_dir(dir) || holds_vzcaps(dir, &ids);
}

/* Whether a preload element is our library by what the file is: the library vzcaps uses (its
 * device and inode), or any file carrying the library's marker (a renamed copy, a link to one,
 * another version). Each file is read once (by device and inode). An element the loader would
 * search for by name (no '/' in LD_PRELOAD) is left to the name rule. */
static bool is_our_library(const char *elem, bool by_path, struct ids *ids)
{
    struct stat st;
    if ((!by_path && !strchr(elem, '/')) || stat(elem, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    for (int i = 0; i < 2; i++)
        if (ids->have_lib[i] && same_file(&st, &ids->lib[i]))
            return true;
    for (size_t k = 0; k < ids->n_seen; k++)
        if (ids->seen[k].dev == st.st_dev && ids->seen[k].ino == st.st_ino)
            return ids->seen[k].ours;
    bool ours = file_holds(elem, ids->lib_marker, LIBRARY_SCAN_MAX);
    ids->seen = xgrow(ids->seen, &ids->cap_seen, ids->n_seen, sizeof *ids->seen);
    ids->seen[ids->n_seen++] = (struct seen){st.st_dev, st.st_ino, ours};
    return ours;
}

const char *vzcaps_env_path(char *const *env)
{
    for (char *const *e = env; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            return *e + 5;
    return NULL;
}

/* The first preload entry's value in env (the one the core reads), or NULL. */
static const char *preload_value(char *const *env, const char *var)
{
    size_t vl = strlen(var);
    for (char *const *e = env; e && *e; e++)
        if (strncmp(*e, var, vl) == 0 && (*e)[vl] == '=')
            return *e + vl + 1;
    return NULL;
}

/* The facts of each PATH entry (drop[i]: a vzcaps directory, by its record or what it holds):
 * each directory is looked at once (by device and inode), however often PATH names it. */
static bool *path_facts(const char *path, size_t n, struct ids *ids)
{
    bool *drop = calloc(n + 1, sizeof *drop);
    struct stat *dirs = calloc(n + 1, sizeof *dirs);
    bool *dir_drop = calloc(n + 1, sizeof *dir_drop);
    char *entry = path ? malloc(strlen(path) + 1) : NULL;
    size_t n_dirs = 0;
    for (size_t i = 0; drop && dirs && dir_drop && entry && i < n; i++) {
        size_t len = strcspn(path, ":");
        memcpy(entry, path, len);
        entry[len] = '\0';
        path += len + (path[len] == ':');
        struct stat st;
        if (stat(*entry ? entry : ".", &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        size_t k = 0;
        while (k < n_dirs && !same_file(&dirs[k], &st))
            k++;
        if (k == n_dirs) {
            dirs[n_dirs] = st;
            dir_drop[n_dirs++] = vzcaps_is_shim_dir(entry) || holds_vzcaps(entry, ids);
        }
        drop[i] = dir_drop[k];
    }
    bool ok = drop && dirs && dir_drop && (entry || !path);
    free(dirs), free(dir_drop), free(entry);
    if (!ok)
        free(drop);
    return ok ? drop : NULL;
}

/* The facts of each element of the preload value (split as vzcaps_strip_library_facts splits):
 * lib[k], our library by what the file is. *n receives their number. */
static bool *preload_facts(const char *value, const char *seps, bool by_path, struct ids *ids, size_t *n)
{
    *n = 0;
    for (const char *p = value; p && *p; (*n)++) {
        p += strcspn(p, seps);
        p += *p != '\0';
    }
    bool *lib = calloc(*n + 1, sizeof *lib);
    char *elem = value ? malloc(strlen(value) + 1) : NULL;
    size_t k = 0;
    for (const char *p = value; lib && elem && p && *p; k++) {
        size_t len = strcspn(p, seps);
        memcpy(elem, p, len);
        elem[len] = '\0';
        lib[k] = len && is_our_library(elem, by_path, ids);
        p += len;
        p += *p != '\0';
    }
    bool ok = lib && (elem || !value);
    free(elem);
    if (!ok)
        free(lib);
    return ok ? lib : NULL;
}

char **vzcaps_stock_environ(char *const *envp, const char *preload_var, const char *libname, const char *self)
{
    struct ids ids;
    ids_of(self, libname, &ids);
    const char *path = vzcaps_env_path(envp);
    size_t n = path ? vzcaps_path_entries(path) : 0, n_lib = 0;
    bool dyld = strcmp(preload_var, "LD_PRELOAD") != 0;
    /* the loader's separators: ":" for dyld, ": " for glibc's ld.so (src/shim/trigger_*.c) */
    const char *seps = dyld ? ":" : ": ";
    bool *shim_dir = path_facts(path, n, &ids);
    /* dyld takes every element as a path (a bare name is in the current directory) */
    bool *lib = preload_facts(preload_value(envp, preload_var), seps, dyld, &ids, &n_lib);
    void *mem = NULL;
    if (shim_dir && lib) {
        struct vzcaps_stock_env_in in = {envp, shim_dir, n, preload_var, seps, libname, lib, n_lib};
        char *const *out = NULL;
        long need = vzcaps_stock_env(&in, NULL, 0, &out);
        mem = need > 0 ? malloc((size_t)need) : NULL;
        if (mem && vzcaps_stock_env(&in, mem, (size_t)need, &out) != 0) {
            free(mem);
            mem = NULL;
        }
    }
    free(shim_dir), free(lib), free(ids.seen);
    return mem;
}

static bool keep_none(const char *entry)
{
    (void)entry;
    return false;
}

void vzcaps_stock_child(struct vzcaps_child_opts *co, const char *preload_var, const char *libname, const char *self)
{
    extern char **environ;
    static char **env;
    free(env);
    env = vzcaps_stock_environ(environ, preload_var, libname, self);
    if (!env) {
        eprintf("vzcaps: out of memory");
        exit(1);
    }
    co->env_keep = keep_none; /* the child's environment is exactly the stock one */
    co->env_add = env;
}
