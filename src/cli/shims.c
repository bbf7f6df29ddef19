/* vzcaps shims: a directory of links to this command named after client programs, and what such
 * a link does when started (the next NAME on PATH after it, through vzcaps run), as ccache does.
 * Never: replaces or removes what vzcaps did not make, writes through a link, or starts a shim. */
#define _XOPEN_SOURCE 700
#define _DARWIN_C_SOURCE /* O_NOFOLLOW, O_DIRECTORY */
#include "../common/record.h"
#include "../common/safewrite.h"
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- which files are this command ---- */

/* The running command's device and inode (the launch floor's, which finds the real program). */
static int self_id(struct stat *st)
{
    return shim_self_id(st);
}

#define SHIM_MAKER "vzcaps shims"

/* The record beside a shim: .NAME.vzcaps-shim (heap). */
static char *record_name(const char *name)
{
    return xformat(".%s.vzcaps-shim", name);
}

bool shim_entry_ours(int dirfd, const char *name)
{
    /* The one test of "an entry vzcaps made" (safety rule 4, record.c): the record vzcaps shims
     * wrote beside it names this very link (device, inode, time, target), and the link still
     * leads to this command. A link a user made, or one that was replaced since, is not ours. */
    char *rec = record_name(name);
    bool recorded = vzcaps_made_by_record(dirfd, name, rec, SHIM_MAKER);
    free(rec);
    struct stat l, st, me;
    return recorded && fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode) &&
           fstatat(dirfd, name, &st, 0) == 0 && self_id(&me) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino;
}

/* Writes the record of the link just made at name; 0, or -1 after the message. */
static int record_shim(int dirfd, const char *dir, const char *name)
{
    char *rec = record_name(name), *why = NULL;
    char *text = vzcaps_record_text(dirfd, name, SHIM_MAKER, NULL);
    struct vzcaps_wopts o = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = SHIM_MAKER};
    int rc = text && vzcaps_write_fileat(dirfd, dir, rec, text, strlen(text), &o, &why) == 0 ? 0 : -1;
    if (rc != 0)
        eprintf("vzcaps shims: %s (the shim %s/%s is in place, but --list and --remove will not take it for vzcaps's)",
                why ? why : strerror(errno), dir, name);
    free(rec), free(text), free(why);
    return rc;
}

/* ---- the command ---- */

/* Why name cannot be an entry ("" when it can). */
static const char *bad_name(const char *name)
{
    if (!*name)
        return "an empty name";
    if (strchr(name, '/'))
        return "a program name, not a path (no '/')";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "not a program name";
    if (name[0] == '-')
        return "a program name may not start with '-'";
    if (strncmp(name, "vzcaps", 6) == 0)
        return "vzcaps itself (an entry named vzcaps... would start vzcaps, not a shim)";
    if (strlen(name) > 255)
        return "longer than 255 bytes";
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return "it holds a control character";
    return "";
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_shims(int dirfd, const char *dir)
{
    int fd = dup(dirfd);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dp) {
        eprintf("vzcaps shims: %s: %s", dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.' || !shim_entry_ours(dirfd, e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                eprintf("vzcaps shims: %s: out of memory", dir);
                closedir(dp);
                return 1;
            }
            names = grown;
        }
        names[n++] = xformat("%s", e->d_name);
    }
    closedir(dp);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char real[4096], why[4400];
        bool found = shim_real(names[i], dir, real, sizeof real, why, sizeof why) == 0;
        printf("%s\t%s\n", esc(names[i]), found ? esc(real) : "(not found on PATH after DIR)");
        free(names[i]);
    }
    free(names);
    return 0;
}

/* An entry already at name: 0 when it is a shim (made before, or meanwhile by another run), 1
 * after the message when it is not ours. */
static int existing_entry(int dirfd, const char *dir, const char *name)
{
    if (shim_entry_ours(dirfd, name)) {
        printf("%s/%s: already a shim\n", esc(dir), esc(name));
        return 0;
    }
    /* a link to this command that no record names (made by hand, or by another run that has not
     * written its record yet): it works as a shim, so the request holds; it is not taken for ours */
    struct stat l, st, me;
    if (fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode) && fstatat(dirfd, name, &st, 0) == 0 &&
        self_id(&me) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino) {
        printf("%s/%s: already a shim (a link to vzcaps that vzcaps shims did not record: --list and --remove leave it)\n",
               esc(dir), esc(name));
        return 0;
    }
    eprintf("vzcaps shims: %s/%s: exists and vzcaps did not make it; left as it is", dir, name);
    return 1;
}

static int make_shim(int dirfd, const char *dir, const char *name, const char *self)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return existing_entry(dirfd, dir, name);
    if (symlinkat(self, dirfd, name) != 0) { /* never replaces: an entry made meanwhile is EEXIST */
        if (errno == EEXIST)
            return existing_entry(dirfd, dir, name);
        eprintf("vzcaps shims: %s/%s: %s", dir, name, strerror(errno));
        return 1;
    }
    if (record_shim(dirfd, dir, name) != 0)
        return 1;
    printf("%s/%s -> %s\n", esc(dir), esc(name), esc(self));
    char real[4096], why[4400];
    if (shim_real(name, dir, real, sizeof real, why, sizeof why) != 0)
        eprintf("vzcaps shims: note: %s/%s: %s yet; started now it would exit 127", dir, name, why);
    return 0;
}

static int remove_shim(int dirfd, const char *dir, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        eprintf("vzcaps shims: %s/%s: %s", dir, name, strerror(errno));
        return 1;
    }
    if (!shim_entry_ours(dirfd, name)) {
        eprintf("vzcaps shims: %s/%s: not a shim vzcaps made; left as it is", dir, name);
        return 1;
    }
    if (unlinkat(dirfd, name, 0) != 0) {
        eprintf("vzcaps shims: %s/%s: %s", dir, name, strerror(errno));
        return 1;
    }
    char *rec = record_name(name);
    if (unlinkat(dirfd, rec, 0) != 0 && errno != ENOENT)
        eprintf("vzcaps shims: note: %s/%s: %s (the shim is removed; its record is left)", dir, rec, strerror(errno));
    free(rec);
    printf("removed %s/%s\n", esc(dir), esc(name));
    return 0;
}

/* DIR for writing: created when missing; a link (also spelled DIR/ or DIR/.) or another kind of
 * file is refused. A descriptor, or -1 after the message. */
static int open_dir(const char *dir, bool create, bool read_only)
{
    struct stat st;
    if (lstat(dir, &st) != 0 && errno == ENOENT && create) {
        char *err = NULL;
        if (vzcaps_mkdir_parents(dir, &err) != 0) {
            eprintf("vzcaps shims: %s", err ? err : dir);
            free(err);
            return -1;
        }
    }
    if (lstat(dir, &st) != 0) {
        eprintf("vzcaps shims: %s: %s", dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode) && read_only) /* --list reads through a link as the user named it */
        stat(dir, &st);
    if ((S_ISLNK(st.st_mode) && !read_only) || !S_ISDIR(st.st_mode)) {
        eprintf("vzcaps shims: %s: %s", dir,
                S_ISLNK(st.st_mode) ? "a link; give the directory it leads to (vzcaps never writes through a link)"
                                    : "not a directory");
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (read_only ? 0 : O_NOFOLLOW));
    if (fd < 0)
        eprintf("vzcaps shims: %s: %s", dir, strerror(errno));
    return fd;
}

int cmd_shims(int argc, char **argv)
{
    const char *dir_opt = NULL;
    bool list = false, remove = false;
    char **names = calloc((size_t)argc + 1, sizeof *names);
    size_t n = 0;
    if (!names)
        return eprintf("vzcaps shims: out of memory"), 1;
    for (int i = 1; i < argc; i++) {
        int t = opt_take(argc, argv, &i, "--dir", &dir_opt);
        if (t < 0)
            return free(names), usage_error("shims", "--dir needs a value");
        if (t)
            continue;
        if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--remove") == 0)
            remove = true;
        else if (strcmp(argv[i], "--") == 0)
            for (i++; i < argc; i++)
                names[n++] = argv[i];
        else if (argv[i][0] == '-')
            return free(names), usage_error("shims", "unknown option %s", argv[i]);
        else
            names[n++] = argv[i];
    }
    int rc = 0;
    if (!dir_opt || !*dir_opt)
        rc = usage_error("shims", "--dir DIR is required");
    else if (list && (remove || n))
        rc = usage_error("shims", "--list takes no NAME and no --remove");
    else if (!list && !n)
        rc = usage_error("shims", "no NAME given (or --list)");
    for (size_t k = 0; !rc && k < n; k++)
        if (*bad_name(names[k]))
            rc = usage_error("shims", "NAME \"%s\": %s", names[k], bad_name(names[k]));
    if (rc)
        return free(names), rc;
    char *dir = vzcaps_dir_name(dir_opt);
    char self[4096];
    self_path(self, sizeof self);
    struct stat me;
    if (!dir || (!list && !remove && (self[0] != '/' || self_id(&me) != 0))) {
        eprintf("vzcaps shims: %s", dir ? "cannot tell where this command is, so no link to it can be made" : "out of memory");
        return free(dir), free(names), 1;
    }
    int dirfd = open_dir(dir, !list && !remove, list);
    if (dirfd < 0)
        return free(dir), free(names), 1;
    if (list)
        rc = list_shims(dirfd, dir);
    for (size_t k = 0; k < n; k++)
        rc |= remove ? remove_shim(dirfd, dir, names[k]) : make_shim(dirfd, dir, names[k], self);
    close(dirfd);
    free(dir);
    free(names);
    return rc;
}
