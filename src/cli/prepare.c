/* vzcaps prepare: a private copy of a hardened program (a Mach-O file or an .app bundle),
 * every Mach-O file in it re-signed ad hoc by vzcaps's own signer without the hardened runtime,
 * so that dyld honours DYLD_INSERT_LIBRARIES for it.
 * Never: modifies the original; leaves a half-written copy (it is built beside the
 * destination and renamed into place whole); writes anything without --yes. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "../macho/codesign.h"
#include "../macho/macho.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MACHO 4096

struct target {
    const char *src;      /* as given */
    char name[256];       /* base name of the copy */
    bool bundle;
    char *rel[MAX_MACHO]; /* Mach-O files, relative to the bundle ("" for a plain file), signing order */
    size_t n;
};

static bool macho_magic(const char *path)
{
    struct stat st;
    char why[200];
    int fd = vzcaps_open_regular(path, &st, why, sizeof why);
    if (fd < 0)
        return false;
    unsigned char m[4] = {0};
    bool yes = read(fd, m, 4) == 4 && ((m[0] == 0xcf && m[1] == 0xfa && m[2] == 0xed && m[3] == 0xfe) ||
                                       (m[0] == 0xca && m[1] == 0xfe && m[2] == 0xba && (m[3] == 0xbe || m[3] == 0xbf)));
    close(fd);
    return yes;
}

/* ---- walking a bundle ---- */

static struct target *walking;
static size_t walk_root_len;
static char walk_err[600];

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_D || type == FTW_SL || type == FTW_DP)
        return 0;
    if (type != FTW_F) {
        snprintf(walk_err, sizeof walk_err, "%s: cannot be read", path);
        return 1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(walk_err, sizeof walk_err, "%s: not a regular file", path);
        return 1;
    }
    if (!macho_magic(path))
        return 0;
    if (walking->n == MAX_MACHO) {
        snprintf(walk_err, sizeof walk_err, "more than %d Mach-O files in the bundle", MAX_MACHO);
        return 1;
    }
    walking->rel[walking->n++] = xformat("%s", path + walk_root_len + 1);
    return 0;
}

static int depth(const char *rel)
{
    int d = 0;
    for (; *rel; rel++)
        d += *rel == '/';
    return d;
}

static const char *main_exe; /* for the sort: the bundle's main executable goes last */

static int signing_order(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    bool mx = main_exe && strcmp(x, main_exe) == 0, my = main_exe && strcmp(y, main_exe) == 0;
    if (mx != my)
        return mx ? 1 : -1;
    if (depth(x) != depth(y)) /* nested code first: deeper files before the code that holds them */
        return depth(y) - depth(x);
    return strcmp(x, y);
}

/* ---- copying and removing trees ---- */

static int copy_file(const char *from, const char *to, mode_t mode, char *err, size_t errlen)
{
    struct stat st;
    char why[200];
    int in = vzcaps_open_regular(from, &st, why, sizeof why);
    if (in < 0) {
        snprintf(err, errlen, "%s: %s", from, why);
        return -1;
    }
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = out < 0 ? -1 : 0;
    char buf[65536];
    ssize_t r;
    while (rc == 0 && (r = read(in, buf, sizeof buf)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        for (ssize_t off = 0; r > 0 && off < r && rc == 0;) {
            ssize_t w = write(out, buf + off, (size_t)(r - off));
            rc = w > 0 ? 0 : -1;
            off += w > 0 ? w : 0;
        }
        if (r < 0)
            rc = -1;
    }
    if (rc == 0 && fchmod(out, mode & 07777) != 0)
        rc = -1;
    if (out >= 0 && close(out) != 0)
        rc = -1;
    close(in);
    if (rc)
        snprintf(err, errlen, "cannot copy %s to %s: %s", from, to, strerror(errno));
    return rc;
}

static int copy_tree(const char *from, const char *to, int levels, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(from, &st) != 0) {
        snprintf(err, errlen, "%s: %s", from, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX + 1];
        ssize_t n = readlink(from, target, sizeof target - 1);
        if (n < 0 || (size_t)n >= sizeof target - 1 || (target[n] = '\0', symlink(target, to) != 0)) {
            snprintf(err, errlen, "cannot copy the link %s: %s", from, n < 0 ? strerror(errno) : "too long");
            return -1;
        }
        return 0;
    }
    if (S_ISREG(st.st_mode))
        return copy_file(from, to, st.st_mode, err, errlen);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file, directory or link", from);
        return -1;
    }
    if (levels > 64) {
        snprintf(err, errlen, "%s: nested more than 64 levels deep", from);
        return -1;
    }
    if (mkdir(to, 0700) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", to, strerror(errno));
        return -1;
    }
    DIR *d = opendir(from);
    if (!d) {
        snprintf(err, errlen, "cannot read %s: %s", from, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *a = xformat("%s/%s", from, e->d_name), *b = xformat("%s/%s", to, e->d_name);
        rc = copy_tree(a, b, levels + 1, err, errlen);
        free(a);
        free(b);
    }
    closedir(d);
    if (rc == 0 && chmod(to, st.st_mode & 07777) != 0) {
        snprintf(err, errlen, "cannot set the mode of %s: %s", to, strerror(errno));
        rc = -1;
    }
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0700);
        nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS);
    } else {
        unlink(path);
    }
}

/* ---- signing ---- */

/* Signs the file at path (in memory: read, sign) and checks the result with the project's
 * verifier; write_back: then writes it back whole, in place. */
static int sign_file(const char *path, const char *ident, bool write_back, char *err, size_t errlen)
{
    size_t len;
    char why[600];
    struct stat st;
    int fd = vzcaps_open_regular(path, &st, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    if (st.st_size > MACHO_MAX_SIZE) {
        close(fd);
        snprintf(err, errlen, "%s: larger than %d MiB", path, MACHO_MAX_SIZE >> 20);
        return -1;
    }
    len = (size_t)st.st_size;
    uint8_t *in = malloc(len ? len : 1), *out = NULL;
    size_t got = 0;
    while (in && got < len) {
        ssize_t r = read(fd, in + got, len - got);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            break;
        got += r > 0 ? (size_t)r : 0;
    }
    close(fd);
    size_t out_len = 0;
    int rc = !in || got != len ? (snprintf(err, errlen, "%s: cannot read", path), -1) : 0;
    if (rc == 0 && codesign_adhoc(in, len, ident, &out, &out_len, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        rc = -1;
    }
    free(in);
    if (rc)
        return rc;
    /* the project's own verifier: every slice ad hoc, hashes matching, no hardened runtime */
    static struct macho_file mf;
    if (macho_parse(out, out_len, &mf, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: the re-signed file does not parse: %s", path, why);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < mf.n_slices; i++) {
        const struct macho_slice *s = &mf.slices[i];
        if (!s->signed_ || s->signature_valid != 1 || !s->adhoc || s->hardened_runtime || s->library_validation) {
            snprintf(err, errlen, "%s: slice %s does not verify after signing: %s", path, s->arch,
                     s->signature_problem[0] ? s->signature_problem : "flags");
            rc = -1;
        }
    }
    int wfd = rc || !write_back ? -1 : open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    for (size_t off = 0; rc == 0 && write_back && off < out_len;) {
        ssize_t w = wfd < 0 ? -1 : write(wfd, out + off, out_len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            rc = -1;
        }
        off += w > 0 ? (size_t)w : 0;
    }
    if (wfd >= 0 && close(wfd) != 0 && rc == 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(out);
    return rc;
}

/* One line on what re-signing changes in a file, from the reader's view of it. */
static void describe(const char *path, const char *shown)
{
    static struct macho_file mf;
    char why[600], archs[64] = "";
    if (macho_load(path, &mf, why, sizeof why) != 0) {
        printf("  %s: %s\n", esc(shown), esc(why));
        return;
    }
    bool dev = false, hard = false, lv = false, ents = false;
    for (size_t i = 0; i < mf.n_slices; i++) {
        const struct macho_slice *s = &mf.slices[i];
        vzcaps_appendf(archs, sizeof archs, "%s%s", i ? " " : "", s->arch);
        dev |= s->signed_ && !s->adhoc;
        hard |= s->hardened_runtime;
        lv |= s->library_validation;
        ents |= s->entitlements_present;
    }
    printf("  %s (%s): %s; hardened runtime %s; library validation %s; entitlements %s\n", esc(shown), archs,
           dev ? "developer signature -> ad hoc" : "ad hoc -> ad hoc", hard ? "on -> off" : "off", lv ? "on -> off" : "off",
           ents ? "dropped" : "none");
}

static const char given_up[] =
    "What the copy gives up: notarization and the developer's identity (it is signed ad hoc, so\n"
    "Gatekeeper treats it as unidentified code; run it from a terminal, not by double-clicking a\n"
    "downloaded, quarantined copy), automatic updates (it is a snapshot: prepare it again after\n"
    "updating the original), the hardened runtime's protections for that copy (it accepts injected\n"
    "libraries, which is the point) and its entitlements (dropped: without the hardened runtime the\n"
    "cs.* ones have no effect, and restricted ones would stop an ad-hoc signed program from\n"
    "starting). The original is not touched; undo by deleting the copy.\n";

/* An absolute form of path without requiring it to exist (its existing ancestors resolved). */
static char *absolute(const char *path)
{
    char *real = realpath(path, NULL);
    if (real)
        return real;
    char *copy = xformat("%s", path), *slash = strrchr(copy, '/');
    char *out;
    if (!slash) {
        char cwd[PATH_MAX];
        out = xformat("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", copy);
    } else if (slash == copy) {
        out = xformat("%s", copy);
    } else {
        *slash = '\0';
        char *parent = absolute(copy);
        out = xformat("%s/%s", parent, slash + 1);
        free(parent);
    }
    free(copy);
    return out;
}

static int prepare_one(const char *path, const char *into, bool yes)
{
    static struct target t;
    for (size_t i = 0; i < t.n; i++)
        free(t.rel[i]);
    memset(&t, 0, sizeof t);
    t.src = path;
    struct stat st;
    if (stat(path, &st) != 0) {
        eprintf("vzcaps prepare: %s: %s", path, strerror(errno));
        return 1;
    }
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *base = path + n;
    while (base > path && base[-1] != '/')
        base--;
    snprintf(t.name, sizeof t.name, "%.*s", (int)(path + n - base), base);
    if (S_ISDIR(st.st_mode)) {
        if (n < 4 || strncmp(path + n - 4, ".app", 4) != 0) {
            eprintf("vzcaps prepare: %s: a directory, but not an .app bundle", path);
            return 1;
        }
        t.bundle = true;
        walking = &t;
        walk_root_len = n;
        walk_err[0] = '\0';
        char *root = xformat("%.*s", (int)n, path);
        int w = nftw(root, collect, 32, FTW_PHYS);
        free(root);
        if (w != 0) {
            eprintf("vzcaps prepare: %s", walk_err[0] ? walk_err : strerror(errno));
            return 1;
        }
        if (!t.n) {
            eprintf("vzcaps prepare: %s: no Mach-O file in the bundle", path);
            return 1;
        }
        char err[1400], *exe = macho_bundle_executable(path, n, err, sizeof err);
        if (!exe) {
            eprintf("vzcaps prepare: %s", err);
            return 1;
        }
        main_exe = exe;
        qsort(t.rel, t.n, sizeof t.rel[0], signing_order);
        main_exe = NULL;
        free(exe);
    } else if (!S_ISREG(st.st_mode)) {
        eprintf("vzcaps prepare: %s: not a regular file or an .app bundle", path);
        return 1;
    } else if (!macho_magic(path)) {
        eprintf("vzcaps prepare: %s: not a Mach-O file", path);
        return 1;
    } else {
        t.rel[t.n++] = xformat("%s", "");
    }

    char *dest = xformat("%s/%s", into, t.name), *src_abs = absolute(path), *dest_abs = absolute(dest);
    size_t sl = strlen(src_abs);
    int rc = 0;
    if (strncmp(dest_abs, src_abs, sl) == 0 && (dest_abs[sl] == '/' || dest_abs[sl] == '\0')) {
        eprintf("vzcaps prepare: the destination %s is inside the source %s", dest, path);
        rc = 1;
    }
    /* sign every file in memory first, even for the plan: what cannot be signed is said now */
    for (size_t i = 0; rc == 0 && i < t.n; i++) {
        char *file = t.bundle ? xformat("%.*s/%s", (int)n, path, t.rel[i]) : xformat("%s", path), err[1400];
        if (sign_file(file, vzcaps_basename(file), false, err, sizeof err) != 0) {
            eprintf("vzcaps prepare: %s", err);
            rc = 1;
        }
        free(file);
    }
    if (rc == 0 && !yes) {
        printf("vzcaps prepare: would copy %s to %s and re-sign %zu Mach-O file%s ad hoc (nested code first):\n", esc(path),
               esc(dest), t.n, t.n == 1 ? "" : "s");
        for (size_t i = 0; i < t.n; i++) {
            char *file = t.bundle ? xformat("%.*s/%s", (int)n, path, t.rel[i]) : xformat("%s", path);
            describe(file, t.bundle ? t.rel[i] : t.name);
            free(file);
        }
        fputs(given_up, stdout);
        printf("Nothing was written: run it again with --yes to do it.\n");
        rc = 1;
    }
    if (rc == 0) {
        char *tmp = xformat("%s/.%s.vzcaps-new.%ld", into, t.name, (long)getpid());
        char *old = xformat("%s/.%s.vzcaps-old.%ld", into, t.name, (long)getpid()), err[1400];
        char *root = xformat("%.*s", (int)n, path);
        remove_tree(tmp);
        if (copy_tree(root, tmp, 0, err, sizeof err) != 0) {
            eprintf("vzcaps prepare: %s", err);
            rc = 1;
        }
        for (size_t i = 0; rc == 0 && i < t.n; i++) {
            char *file = t.bundle ? xformat("%s/%s", tmp, t.rel[i]) : xformat("%s", tmp);
            if (sign_file(file, vzcaps_basename(t.bundle ? t.rel[i] : t.name), true, err, sizeof err) != 0) {
                eprintf("vzcaps prepare: %s", err);
                rc = 1;
            }
            free(file);
        }
        if (rc == 0 && platform_is_macos && access("/usr/bin/codesign", X_OK) == 0) {
            char *verify[] = {"/usr/bin/codesign", "--verify", "--strict", tmp, NULL};
            if (spawn_wait(verify[0], verify) != 0)
                eprintf("vzcaps prepare: warning: codesign --verify --strict disagrees with vzcaps's verifier on %s", dest);
        }
        /* into place as a whole: the old copy (if any) aside, the new one in, the old one gone */
        bool had_old = rc == 0 && access(dest, F_OK) == 0;
        if (rc == 0 && had_old && rename(dest, old) != 0) {
            eprintf("vzcaps prepare: cannot replace %s: %s", dest, strerror(errno));
            rc = 1;
        }
        if (rc == 0 && rename(tmp, dest) != 0) {
            eprintf("vzcaps prepare: cannot move the copy to %s: %s", dest, strerror(errno));
            if (had_old)
                rename(old, dest);
            rc = 1;
        }
        if (rc)
            remove_tree(tmp);
        else if (had_old)
            remove_tree(old);
        if (rc == 0) {
            printf("prepared %s: %zu Mach-O file%s re-signed ad hoc, no hardened runtime\nrun it through vzcaps with:\n", esc(dest),
                   t.n, t.n == 1 ? "" : "s");
            for (size_t k = t.n; k-- > 0;) { /* the main executable first */
                size_t i = k;
                char *file = t.bundle ? xformat("%s/%s", dest, t.rel[i]) : xformat("%s", dest);
                static struct macho_file mf;
                if (macho_load(file, &mf, err, sizeof err) == 0 && mf.slices[0].filetype == 2 /* MH_EXECUTE */) {
                    printf("  vzcaps run --inherit -- ");
                    shell_quote(stdout, file);
                    printf("\n");
                }
                free(file);
            }
        }
        free(tmp);
        free(old);
        free(root);
    }
    free(dest);
    free(src_abs);
    free(dest_abs);
    return rc;
}

int cmd_prepare(int argc, char **argv)
{
    const char *into = NULL;
    bool yes = false, dashdash = false;
    int count = 0;
    for (int i = 1; i < argc; i++) {
        int t;
        if (!dashdash && (t = opt_take(argc, argv, &i, "--into", &into))) {
            if (t < 0)
                return usage_error("prepare", "--into needs a directory");
            continue;
        }
        if (!dashdash && strcmp(argv[i], "--yes") == 0)
            yes = true;
        else if (!dashdash && strcmp(argv[i], "--") == 0)
            dashdash = true;
        else if (!dashdash && argv[i][0] == '-' && argv[i][1])
            return usage_error("prepare", "unknown option %s", argv[i]);
        else
            count++;
    }
    if (!count)
        return usage_error("prepare", "no program given (a Mach-O file or an .app bundle)");
    char *dir = NULL;
    if (!into) {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            eprintf("vzcaps prepare: HOME is not set: give --into DIR");
            return 1;
        }
        into = dir = xformat("%s/Library/Application Support/vzcaps/prepared", home);
    }
    if (yes) { /* the destination directory, created as mkdir -p would */
        if (mkdir_p(into) != 0) {
            eprintf("vzcaps prepare: cannot create %s: %s", into, strerror(errno));
            free(dir);
            return 1;
        }
    }
    int rc = 0;
    dashdash = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!dashdash && opt_take(argc, argv, &i, "--into", &v))
            continue;
        if (!dashdash && (strcmp(argv[i], "--yes") == 0 || strcmp(argv[i], "--") == 0)) {
            dashdash |= strcmp(argv[i], "--") == 0;
            continue;
        }
        rc |= prepare_one(argv[i], into, yes);
    }
    free(dir);
    return rc ? 1 : 0;
}
