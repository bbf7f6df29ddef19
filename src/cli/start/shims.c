/* vzcaps shims: a directory of links to this command named after client programs, and what such
 * a link does when started (the next NAME on PATH after it, through vzcaps run), as ccache does.
 * Never: replaces or removes what vzcaps did not make, writes through a link, or starts a shim. */
#define _GNU_SOURCE      /* renameat2, RENAME_NOREPLACE (glibc 2.28) */
#define _DARWIN_C_SOURCE /* O_NOFOLLOW, O_DIRECTORY, renameatx_np, RENAME_EXCL */
#include "../../common/record.h"
#include "../../common/safewrite.h"
#include "../cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- which files are this command ---- */

/* The running command's device and inode (the launch floor's, which finds the real program). */
static int self_id(struct stat *st)
{
    return shim_self_id(st);
}

#define SHIM_MAKER "vzcaps shims"

/* The record beside a shim: .NAME.vzcaps-shim (heap). */
#define SHIM_RECORD_SUFFIX ".vzcaps-shim"
static char *record_name(const char *name)
{
    return xformat(".%s" SHIM_RECORD_SUFFIX, name);
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

/* --force: a shim another copy of vzcaps made is taken over (made this copy's) or removed. */
static bool take_over;

/* Whether the entry at name is a shim another copy of vzcaps made: its record names this very
 * link as it is now (vzcaps made it, and it was not changed since), yet it does not lead to this
 * command. copy: the link's text (the copy that made it); *gone: that file is missing now. */
static bool shim_of_another_copy(int dirfd, const char *name, char *copy, size_t len, bool *gone)
{
    char *rec = record_name(name);
    bool recorded = vzcaps_made_by_record(dirfd, name, rec, SHIM_MAKER);
    free(rec);
    struct stat l, st;
    if (!recorded || fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(l.st_mode) || shim_entry_ours(dirfd, name))
        return false;
    ssize_t n = readlinkat(dirfd, name, copy, len - 1);
    if (n < 0)
        return false;
    copy[n] = '\0';
    *gone = fstatat(dirfd, name, &st, 0) != 0;
    return true;
}

/* Writes the record of name, naming the link at entry (name itself, or the temporary name it is
 * made under before it is renamed to name: a rename keeps the link's inode and time); 0, or -1
 * after the message, which ends with left (what is left as it is). */
static int record_shim(int dirfd, const char *dir, const char *name, const char *entry, const char *left)
{
    char *rec = record_name(name), *why = NULL;
    char *text = vzcaps_record_text(dirfd, entry, SHIM_MAKER, NULL);
    struct vzcaps_wopts o = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = SHIM_MAKER};
    int rc = text && vzcaps_write_fileat(dirfd, dir, rec, text, strlen(text), &o, &why) == 0 ? 0 : -1;
    if (rc != 0)
        eprintf("vzcaps shims: %s/%s: its record: %s (%s)", dir, name, why ? why : strerror(errno), left);
    free(rec), free(text), free(why);
    return rc;
}

/* ---- the command ---- */

/* The longest NAME: its temporary name .NAME.vzcaps-shim-new.PID.N (temp_link) must be a file
 * name (NAME_MAX, 255 bytes on Linux and macOS) whatever the PID (pid_t: at most 10 digits) and
 * N (at most 2). */
#define SHIM_TEMP_EXTRA (sizeof ".vzcaps-shim-new.." + 10 + 2) /* the leading '.' is the NUL's byte */
#define SHIM_NAME_MAX (255 - SHIM_TEMP_EXTRA)

/* Why name cannot be an entry ("" when it can). */
static const char *bad_name(const char *name)
{
    if (!*name)
        return "an empty name";
    if (strchr(name, '/'))
        return "a program name, not a path (no '/')";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "not a program name";
    if (name[0] == '.')
        return "a name starting with '.' (hidden: --list would never show it)";
    size_t n = strlen(name), sl = strlen(SHIM_RECORD_SUFFIX);
    if (n >= sl && strcmp(name + n - sl, SHIM_RECORD_SUFFIX) == 0)
        return "it ends in " SHIM_RECORD_SUFFIX ", the suffix of the records vzcaps keeps beside its shims";
    if (name[0] == '-')
        return "a program name may not start with '-'";
    if (strncmp(name, "vzcaps", 6) == 0)
        return "vzcaps itself (an entry named vzcaps... would start vzcaps, not a shim)";
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
        char copy[4096];
        bool gone;
        if (e->d_name[0] == '.' || (!shim_entry_ours(dirfd, e->d_name) && !shim_of_another_copy(dirfd, e->d_name, copy, sizeof copy, &gone)))
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
        bool found = shim_real(names[i], dir, real, sizeof real, why, sizeof why) == 0, gone = false;
        printf("%s\t", esc(names[i]));
        if (shim_of_another_copy(dirfd, names[i], real, sizeof real, &gone))
            printf("(a shim of another copy of vzcaps: %s%s)\n", esc(real), gone ? ", now missing" : "");
        else if (found)
            printf("%s\n", esc(real));
        else
            printf("(not found on PATH after %s)\n", esc(dir));
        free(names[i]);
    }
    free(names);
    return 0;
}

/* Whether the entry at name is a link that leads to this command. */
static bool links_to_vzcaps(int dirfd, const char *name)
{
    struct stat l, st, me;
    return fstatat(dirfd, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode) && fstatat(dirfd, name, &st, 0) == 0 &&
           self_id(&me) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino;
}

static int take_over_shim(int dirfd, const char *dir, const char *name, const char *self, const char *copy);

/* An entry already at name: 0 when it is a shim (made before, or meanwhile by another run, or
 * another copy's taken over with --force), 1 after the message when it is not ours or could not
 * be repaired; -1 (no message) when it is gone by now and may_retry (removed meanwhile by a run
 * that does not take turns). */
static int existing_entry(int dirfd, const char *dir, const char *name, const char *self, bool may_retry)
{
    if (shim_entry_ours(dirfd, name)) {
        printf("%s/%s: already a shim\n", esc(dir), esc(name));
        return 0;
    }
    /* a link to this command that no record names (a run that failed between the two before
     * shims were made whole, another run's, or one made by hand): it works as a shim, so it is
     * repaired with its record, and --list and --remove take it from now on */
    if (links_to_vzcaps(dirfd, name)) {
        if (record_shim(dirfd, dir, name, name, "the link is left as it was, without a record") != 0)
            return 1;
        printf("%s/%s: already a shim (its record was missing: written)\n", esc(dir), esc(name));
        return 0;
    }
    char copy[4096];
    bool gone = false;
    if (shim_of_another_copy(dirfd, name, copy, sizeof copy, &gone)) {
        if (take_over)
            return take_over_shim(dirfd, dir, name, self, copy);
        eprintf("vzcaps shims: %s/%s: a shim made by another copy of vzcaps (%s%s); vzcaps shims --dir %s --force %s makes "
                "it this copy's", dir, name, copy, gone ? ", now missing" : "", dir, name);
        return 1;
    }
    struct stat st;
    if (may_retry && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
        return -1;
    eprintf("vzcaps shims: %s/%s: exists and vzcaps did not make it; left as it is", dir, name);
    return 1;
}

/* The temporary links killed runs left (temp_link: .NAME.vzcaps-shim-new.PID.N, a link its record
 * names, or one without a record that leads to this command) go, and a record naming one; runs
 * take turns (lock_dir), so none is another run's half-made shim. Anything else is left. */
static void sweep_temps(int dirfd, const char *dir)
{
    int fd = dup(dirfd);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    for (struct dirent *e; dp && (e = readdir(dp));) {
        const char *n = e->d_name, *mark = strstr(n, ".vzcaps-shim-new."), *s = mark ? mark + 17 : "";
        size_t pid = strspn(s, "0123456789"), k = pid && s[pid] == '.' ? strspn(s + pid + 1, "0123456789") : 0;
        struct stat l;
        if (n[0] != '.' || !k || mark <= n + 1 || s[pid + 1 + k] || fstatat(dirfd, n, &l, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(l.st_mode))
            continue;
        char *name = xformat("%.*s", (int)(mark - n - 1), n + 1), *rec = record_name(name);
        bool recorded = vzcaps_made_by_record(dirfd, n, rec, SHIM_MAKER);
        if ((recorded || links_to_vzcaps(dirfd, n)) && unlinkat(dirfd, n, 0) == 0) {
            if (recorded)
                (void)unlinkat(dirfd, rec, 0);
            printf("%s/%s: removed (a temporary link a stopped run left)\n", esc(dir), esc(n));
        }
        free(name), free(rec);
    }
    if (dp)
        closedir(dp);
    else if (fd >= 0)
        close(fd);
}

/* Renames from to name in dirfd unless name exists (EEXIST then): 0, or -1 with errno. */
static int rename_new(int dirfd, const char *from, const char *name)
{
#ifdef __APPLE__
    return renameatx_np(dirfd, from, dirfd, name, RENAME_EXCL);
#else
    if (renameat2(dirfd, from, dirfd, name, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    /* a file system without RENAME_NOREPLACE: a hard link of the link never replaces either */
    if (linkat(dirfd, from, dirfd, name, 0) != 0)
        return -1;
    (void)unlinkat(dirfd, from, 0);
    return 0;
#endif
}

/* A link to self at a new temporary name in dirfd (.NAME.vzcaps-shim-new.N: a name starting with
 * '.', which --list never shows and no NAME may take): the name on the heap, or NULL with errno. */
static char *temp_link(int dirfd, const char *name, const char *self)
{
    for (unsigned k = 0; k < 100; k++) {
        char *tmp = xformat(".%s.vzcaps-shim-new.%ld.%u", name, (long)getpid(), k);
        if (symlinkat(self, dirfd, tmp) == 0)
            return tmp;
        int e = errno;
        free(tmp);
        if (e != EEXIST)
            return errno = e, NULL;
    }
    return errno = EEXIST, NULL;
}

/* A shim is whole or absent: the link is made at a temporary name, its record written, and only
 * then is the link renamed to NAME (never over an entry made meanwhile); a failure at any step
 * removes what the steps before made. */
static int make_shim(int dirfd, const char *dir, const char *name, const char *self)
{
    struct stat st;
    for (int tries = 0; fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0; tries++) {
        int r = existing_entry(dirfd, dir, name, self, tries < 10);
        if (r >= 0)
            return r;
    }
    /* whole or absent across a signal too: SIGINT, SIGTERM, SIGHUP, SIGQUIT wait (pending) until
     * the steps are done or undone; only SIGKILL can leave the temporary link */
    sigset_t stop, was;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT), sigaddset(&stop, SIGTERM), sigaddset(&stop, SIGHUP), sigaddset(&stop, SIGQUIT);
    sigprocmask(SIG_BLOCK, &stop, &was);
    char *tmp = temp_link(dirfd, name, self), *rec = record_name(name);
    int rc = 0;
    if (!tmp) {
        eprintf("vzcaps shims: %s/%s: %s (nothing was made)", dir, name, strerror(errno));
        rc = 1;
    } else if (record_shim(dirfd, dir, name, tmp, "nothing was made") != 0) {
        rc = 1;
    } else if (rename_new(dirfd, tmp, name) != 0) {
        int e = errno;
        if (!vzcaps_made_by_record(dirfd, name, rec, SHIM_MAKER))
            (void)unlinkat(dirfd, rec, 0); /* it names the temporary link, which goes */
        (void)unlinkat(dirfd, tmp, 0);
        free(tmp), tmp = NULL;
        if (e == EEXIST) /* made meanwhile */
            rc = existing_entry(dirfd, dir, name, self, false) ? 1 : 2;
        else
            eprintf("vzcaps shims: %s/%s: %s (nothing was made)", dir, name, strerror(e)), rc = 1;
    }
    if (tmp && rc == 1)
        (void)unlinkat(dirfd, tmp, 0);
    free(tmp), free(rec);
    sigprocmask(SIG_SETMASK, &was, NULL);
    if (rc)
        return rc == 2 ? 0 : 1;
    printf("%s/%s -> %s\n", esc(dir), esc(name), esc(self));
    char real[4096], why[4400];
    if (shim_real(name, dir, real, sizeof real, why, sizeof why) != 0)
        eprintf("vzcaps shims: note: %s/%s: %s yet; started now it would exit 127", dir, name, why);
    return 0;
}

/* --force over another copy's shim (shim_of_another_copy, checked under the directory's lock):
 * a link to this command under a temporary name replaces it in one rename, then its record is
 * rewritten; a failure before the rename leaves the old shim as it was, one after it a link to
 * this command that a rerun repairs (existing_entry). */
static int take_over_shim(int dirfd, const char *dir, const char *name, const char *self, const char *copy)
{
    sigset_t stop, was;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT), sigaddset(&stop, SIGTERM), sigaddset(&stop, SIGHUP), sigaddset(&stop, SIGQUIT);
    sigprocmask(SIG_BLOCK, &stop, &was);
    char *tmp = temp_link(dirfd, name, self), *left = NULL;
    int rc = 0;
    if (!tmp || renameat(dirfd, tmp, dirfd, name) != 0) {
        eprintf("vzcaps shims: %s/%s: %s (left as it was: a shim of %s)", dir, name, strerror(errno), copy);
        if (tmp)
            (void)unlinkat(dirfd, tmp, 0);
        rc = 1;
    } else if (record_shim(dirfd, dir, name, name, left = xformat("it now leads to %s; its record is still the other copy's: "
                                                                  "run this again to write it", self)) != 0) {
        rc = 1;
    } else {
        printf("%s/%s -> %s (was a shim of %s)\n", esc(dir), esc(name), esc(self), esc(copy));
    }
    free(tmp), free(left);
    sigprocmask(SIG_SETMASK, &was, NULL);
    return rc;
}

static int remove_shim(int dirfd, const char *dir, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        eprintf("vzcaps shims: %s/%s: %s", dir, name, strerror(errno));
        return 1;
    }
    char copy[4096];
    bool gone = false;
    bool other = shim_of_another_copy(dirfd, name, copy, sizeof copy, &gone);
    if (other && !take_over) {
        eprintf("vzcaps shims: %s/%s: a shim made by another copy of vzcaps (%s%s); vzcaps shims --dir %s --remove --force %s "
                "removes it", dir, name, copy, gone ? ", now missing" : "", dir, name);
        return 1;
    }
    if (!other && !shim_entry_ours(dirfd, name)) {
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

/* Runs that make or remove entries in one directory take turns: an exclusive flock on the
 * directory itself (no file of its own), so a make never finds an entry half-removed by another
 * run, nor a removal a shim half-made. A lock held by another process is waited for up to 5 s,
 * never for ever (any user who can read DIR can take it), then 1 with one line. A file system
 * without flock on directories: no turns (then a make only retries an entry that vanished). */
static int lock_dir(int dirfd, const char *dir)
{
    for (int tries = 0; tries < 500; tries++) {
        if (flock(dirfd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return 0;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    eprintf("vzcaps shims: %s: another process has held the directory's lock for 5 s; nothing was made or removed", dir);
    return -1;
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

/* Every NAME before anything is made: 0, or 2 after the message (usage for a malformed NAME, one
 * line for one that cannot fit or a typo). */
static int check_names(char **names, size_t n, const char *dir_opt, bool remove)
{
    int rc = 0;
    for (size_t k = 0; !rc && k < n; k++)
        if (*bad_name(names[k]))
            rc = usage_error("shims", "NAME \"%s\": %s", names[k], bad_name(names[k]));
    for (size_t k = 0; !rc && k < n; k++) /* one line each, before anything is made */
        if (strlen(names[k]) > SHIM_NAME_MAX)
            eprintf("vzcaps shims: NAME \"%s\": longer than %d bytes (a shim is made as .NAME.vzcaps-shim-new.PID.N first, "
                    "and a file name holds at most 255 bytes)", names[k], (int)SHIM_NAME_MAX), rc = EXIT_USAGE;
        else if (strlen(dir_opt) + 1 + strlen(names[k]) >= PATH_MAX) /* no PATH search could start it */
            eprintf("vzcaps shims: %s/%s: longer than a path can be (%d bytes)", dir_opt, names[k], PATH_MAX - 1),
                rc = EXIT_USAGE;
    bool named_ok = !rc;
    for (size_t k = 0; named_ok && !remove && k < n; k++) { /* a typo is never made into a shim with exit 0 */
        const char *near = launch_client_typo(names[k], dir_opt);
        if (near) {
            eprintf("vzcaps shims: NAME \"%s\" is not on PATH and is no client vzcaps knows: did you mean %s? "
                    "(nothing was made)", names[k], near);
            rc = EXIT_USAGE;
        }
    }
    return rc;
}

int cmd_shims(int argc, char **argv)
{
    const char *dir_opt = NULL;
    bool list = false, remove = false;
    const struct opt_bind binds[] = {OPT_VALUE("--dir", &dir_opt), OPT_FLAG("--list", &list), OPT_FLAG("--remove", &remove),
                                     OPT_FLAG("--force", &take_over), {0}};
    int rc = cli_parse("shims", &argc, argv, binds);
    char **names = argv + 1;
    size_t n = (size_t)argc - 1;
    if (rc)
        return rc;
    if (!dir_opt)
        rc = usage_error("shims", "--dir DIR is required");
    else if (list && (remove || n))
        rc = usage_error("shims", "--list takes no NAME and no --remove");
    else if (list && take_over)
        rc = usage_error("shims", "--force takes over or removes shims another copy made; --list changes nothing");
    else if (!list && !n)
        rc = usage_error("shims", "no NAME given (or --list)");
    else if (!list && !remove && strchr(dir_opt, ':'))
        rc = usage_error("shims", "--dir %s: it holds ':', which separates PATH's entries, so no PATH can name it", dir_opt);
    if (!rc)
        rc = check_names(names, n, dir_opt, remove);
    if (rc)
        return rc;
    char *dir = vzcaps_dir_name(dir_opt);
    char self[4096];
    start_path(self, sizeof self); /* a link as given (Homebrew's bin/vzcaps outlives an upgrade), when it is this command */
    struct stat me, st;
    if (self[0] != '/' || stat(self, &st) != 0 || self_id(&me) != 0 || st.st_dev != me.st_dev || st.st_ino != me.st_ino)
        self_path(self, sizeof self);
    if (!dir || (!list && !remove && (self[0] != '/' || self_id(&me) != 0))) {
        eprintf("vzcaps shims: %s", dir ? "cannot tell where this command is, so no link to it can be made" : "out of memory");
        return free(dir), 1;
    }
    int dirfd = open_dir(dir, !list && !remove, list);
    if (dirfd < 0)
        return free(dir), 1;
    if (list)
        rc = list_shims(dirfd, dir);
    else if (lock_dir(dirfd, dir) != 0)
        n = 0, rc = 1;
    else
        sweep_temps(dirfd, dir);
    for (size_t k = 0; k < n; k++)
        rc |= remove ? remove_shim(dirfd, dir, names[k]) : make_shim(dirfd, dir, names[k], self);
    close(dirfd);
    free(dir);
    return rc;
}
