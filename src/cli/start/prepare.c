/* vzcaps prepare: a private copy of a hardened program (a Mach-O file or an .app bundle),
 * every Mach-O file in it re-signed ad hoc by vzcaps's own signer without the hardened runtime,
 * and every bundle in it sealed again (a new _CodeSignature/CodeResources, bound by its main
 * executable), so that dyld honours DYLD_INSERT_LIBRARIES for it.
 * Owns: the plan, the destination (what it may replace: a marker beside each copy), placing
 * the temporary tree built by src/macho/bundlecopy.c, removing temporaries, the Mac's check.
 * Never: modifies the original; opens anything for writing through a link; replaces a
 * destination it did not make, one that holds the source, or one two inputs would share;
 * leaves a half-written copy or its temporary tree behind; writes anything without --yes. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
#include "../cli.h"
#include "../../common/safewrite.h"
#include "../../macho/bundlecopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first line of the record beside each copy (.NAME.vzcaps-prepared) that says vzcaps made
 * it; its second line names the copy's device, inode, modification time and, for a file, its
 * SHA-256 (src/common/record.h: the test every command and script uses). */
#define MAKER "vzcaps prepare"

static void on_signal(int sig)
{
    bc_stop_signal = sig;
}

/* ---- the destination ---- */

/* Whether name in into was placed there by vzcaps prepare: its record beside it names it. */
static bool made_by_vzcaps(int intofd, const char *name)
{
    char *mname = xformat(".%s.vzcaps-prepared", name);
    bool ours = vzcaps_made_by_record(intofd, name, mname, MAKER);
    free(mname);
    return ours;
}

static int open_into(const char *into, bool create, char *err, size_t errlen)
{
    if (create) {
        char *why = NULL;
        if (vzcaps_mkdir_parents(into, &why) != 0) {
            snprintf(err, errlen, "%s", why ? why : into);
            free(why);
            return -1;
        }
    }
    int fd = open(into, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) /* Linux says ENOTDIR for a link with O_DIRECTORY|O_NOFOLLOW, macOS ELOOP */
        snprintf(err, errlen, "%s: %s", into,
                 errno == ELOOP || (lstat(into, &st) == 0 && S_ISLNK(st.st_mode)) ? "is a symbolic link (refusing to write through it)"
                                                                                  : strerror(errno));
    return fd;
}

/* Removes name in dirfd and everything below it, never following a link: 0 when it is gone,
 * else -1 with errno of the first failure. */
static int remove_at(int dirfd, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode) || depth > MAX_DEPTH + 8)
        return unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES && fchmodat(dirfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0) /* a directory made unreadable */
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    fchmod(fd, 0700); /* a copy of a read-only directory */
    int fd2 = dup(fd);
    DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
    if (d) {
        struct dirent *de;
        char **names = NULL;
        size_t n = 0, cap = 0;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 32) * sizeof *names)))
                    break;
                names[n++] = xformat("%s", de->d_name);
            }
        closedir(d);
        for (size_t i = 0; i < n; i++) {
            remove_at(fd, names[i], depth + 1);
            free(names[i]);
        }
        free(names);
    } else if (fd2 >= 0) {
        close(fd2);
    }
    close(fd);
    return unlinkat(dirfd, name, AT_REMOVEDIR); /* fails (ENOTEMPTY) when anything below stayed */
}

/* Temporaries of earlier runs that were interrupted: .NAME.vzcaps-new.PID,
 * .NAME.vzcaps-old.PID and safewrite's .vzcaps-tmp.PID.N of a process that no longer exists,
 * owned by this user. */
static void remove_stale(int intofd, const char *into)
{
    int fd = dup(intofd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    char **stale = NULL;
    size_t n = 0, cap = 0;
    while ((de = readdir(d))) {
        const char *s = de->d_name, *mark = strstr(s, ".vzcaps-new."), *mark2 = strstr(s, ".vzcaps-old.");
        const char *m = mark ? mark : mark2, *num = m ? m + 12 : NULL;
        if (strncmp(s, ".vzcaps-tmp.", 12) == 0) /* a file safewrite was writing when the run was killed */
            m = s, num = s + 12;
        if (s[0] != '.' || !m)
            continue;
        char *endp;
        long pid = strtol(num, &endp, 10);
        if (m == s && *endp == '.') /* .vzcaps-tmp.PID.N */
            strtol(endp + 1, &endp, 10);
        struct stat st;
        if (*endp || pid <= 0 || pid == (long)getpid() || (kill((pid_t)pid, 0) == 0 || errno != ESRCH) ||
            fstatat(intofd, s, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid())
            continue;
        if (n == cap && !(stale = realloc(stale, (cap = cap ? 2 * cap : 8) * sizeof *stale)))
            break;
        stale[n++] = xformat("%s", s);
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        if (remove_at(intofd, stale[i], 0) == 0)
            printf("vzcaps prepare: removed %s/%s, left by an interrupted run\n", esc(into), esc(stale[i]));
        else
            eprintf("vzcaps prepare: warning: cannot remove %s/%s, left by an interrupted run: %s", into, stale[i], strerror(errno));
        free(stale[i]);
    }
    free(stale);
}

/* realpath of a directory that may not exist yet: its deepest existing ancestor resolved, the
 * missing rest appended (those names cannot be links; "." and ".." among them are taken as
 * mkdir_parents will meet them). NULL when even "/" or "." cannot be resolved. */
static char *realpath_to_be(const char *path)
{
    char *r = realpath(path, NULL);
    if (r || errno != ENOENT)
        return r;
    char *parent = xformat("%s", path);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    const char *name = slash ? slash + 1 : parent;
    char *base = slash == parent ? xformat("/") : slash ? (*slash = '\0', realpath_to_be(parent)) : realpath(".", NULL);
    if (!base || strcmp(name, ".") == 0) {
    } else if (strcmp(name, "..") == 0) {
        char *up = strrchr(base, '/');
        up[up == base ? 1 : 0] = '\0';
    } else {
        char *joined = strcmp(base, "/") == 0 ? xformat("/%s", name) : xformat("%s/%s", base, name);
        free(base);
        base = joined;
    }
    free(parent);
    return base;
}

/* Why the copy of in may not be placed (NULL: it may): a destination it did not make, one
 * inside the source or holding it. */
static char *dest_problem(const struct input *in, const char *into, int intofd)
{
    char *dest_real = NULL, *into_real = realpath_to_be(into);
    size_t rl = strlen(in->root);
    char *problem = NULL;
    if (into_real) {
        char *d = strcmp(into_real, "/") == 0 ? xformat("/%s", in->name) : xformat("%s/%s", into_real, in->name);
        if (strncmp(d, in->root, rl) == 0 && (d[rl] == '/' || d[rl] == '\0') && in->bundle)
            problem = xformat("the destination %s is inside the source %s", in->dest, in->arg);
        free(d);
    }
    struct stat st;
    bool exists = intofd >= 0 ? fstatat(intofd, in->name, &st, AT_SYMLINK_NOFOLLOW) == 0 : lstat(in->dest, &st) == 0;
    if (!problem && exists && (dest_real = realpath(in->dest, NULL))) {
        size_t dl = strlen(dest_real);
        if (strncmp(in->root, dest_real, dl) == 0 && (in->root[dl] == '/' || in->root[dl] == '\0' || strcmp(dest_real, "/") == 0))
            problem = xformat("the destination %s holds the source %s (it would be replaced)", in->dest, in->arg);
    }
    if (!problem && exists && !(intofd >= 0 && made_by_vzcaps(intofd, in->name)))
        problem = xformat("the destination %s exists and was not made by vzcaps prepare (move it away, or choose another --into)",
                          in->dest);
    /* the marker beside it is rewritten: it too must be vzcaps's, or absent */
    char *mname = xformat(".%s.vzcaps-prepared", in->name);
    if (!problem && intofd >= 0 && fstatat(intofd, mname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISREG(st.st_mode) || !vzcaps_marked_file(intofd, mname, MAKER, VZCAPS_MARK_LINE1))
            problem = xformat("%s/%s exists and was not made by vzcaps prepare (move it away, or choose another --into)", into,
                              mname);
    }
    free(mname);
    free(dest_real);
    free(into_real);
    return problem;
}

/* What codesign --verify --strict checks on a Mac, in order: every signed file, nested code
 * first, then every bundle, the outermost last. Paths relative to the copy ("" the copy), in a
 * NULL-terminated array on the heap. */
static const char **verify_list(const struct input *in)
{
    const char **out = calloc(in->nn + 2 * in->nu + 1, sizeof *out);
    if (!out) {
        eprintf("vzcaps prepare: out of memory");
        exit(1);
    }
    size_t n = 0;
    for (size_t i = 0; i < in->nn; i++)
        if (in->n[i].type == N_FILE && !in->n[i].replaced && bc_is_code(in->n[i].kind) && !in->n[i].main_exe)
            out[n++] = in->n[i].rel;
    for (size_t k = in->nu; k-- > 0;) {
        out[n++] = in->u[k].exe;
        out[n++] = in->u[k].dir;
    }
    return out;
}

static const char given_up[] =
    "What the copy gives up: notarization and the developer's identity (it is signed ad hoc, so\n"
    "Gatekeeper treats it as unidentified code; run it from a terminal, not by double-clicking a\n"
    "downloaded, quarantined copy), automatic updates (it is a snapshot: prepare it again after\n"
    "updating the original), the hardened runtime's protections for that copy (it accepts injected\n"
    "libraries, which is the point) and its entitlements (dropped: without the hardened runtime the\n"
    "cs.* ones have no effect, and restricted ones would stop an ad-hoc signed program from\n"
    "starting). The original is not touched; undo by deleting the copy.\n";

/* One line on what re-signing changes in a file, from the reader's view of it. */
static void describe(const char *path, const char *shown)
{
    static struct macho_file mf;
    char why[600], archs[64] = "";
    if (macho_load(path, &mf, why, sizeof why) != 0) {
        printf("  %s: %s\n", esc(shown), esc(why));
        return;
    }
    bool dev = false, hard = false, lv = false, ents = false, unsig = false;
    const char *kept = NULL; /* what dyld restricts that a re-signed copy keeps (issue 25 row 10) */
    for (size_t i = 0; i < mf.n_slices; i++) {
        const struct macho_slice *s = &mf.slices[i];
        if (s->restrict_section || (s->encryption_cmd && s->cryptid))
            kept = s->injection_reason;
        vzcaps_appendf(archs, sizeof archs, "%s%s", i ? " " : "", s->arch);
        dev |= s->signed_ && !s->adhoc;
        hard |= s->hardened_runtime;
        lv |= s->library_validation;
        ents |= s->entitlements_present;
        unsig |= !s->signed_;
    }
    printf("  %s (%s): %s; hardened runtime %s; library validation %s; entitlements %s\n", esc(shown), archs,
           unsig ? "unsigned slices signed too -> ad hoc" : dev ? "developer signature -> ad hoc" : "ad hoc -> ad hoc",
           hard ? "on -> off" : "off", lv ? "on -> off" : "off", ents ? "dropped" : "none");
    if (kept)
        printf("  %s: the copy will still ignore the library: %s, which re-signing does not change\n", esc(shown), esc(kept));
}

static void plan(const struct input *in, const char *problem)
{
    char *sealing = in->nu ? xformat(", sealing %zu bundle%s with a new CodeResources", in->nu, in->nu == 1 ? "" : "s")
                           : xformat("%s", "");
    printf("vzcaps prepare: would copy %s to %s and re-sign %zu Mach-O file%s ad hoc (nested code first)%s:\n", esc(in->arg),
           esc(in->dest), in->n_code, in->n_code == 1 ? "" : "s", sealing);
    free(sealing);
    for (size_t i = 0; i < in->nu; i++) /* the Info.plist read for each bundle, and what it named */
        printf("  %s: main executable %s (%s%s)\n", *in->u[i].dir ? esc(in->u[i].dir) : esc(in->name), esc(in->u[i].exe),
               in->u[i].exe_named ? "CFBundleExecutable of " : "named after the bundle: no Info.plist with a CFBundleExecutable",
               in->u[i].exe_named ? esc(in->u[i].info) : "");
    const char **list = verify_list(in);
    for (size_t i = 0; list[i]; i++) {
        int k = bc_find_node(in, list[i]);
        if (k < 0 || in->n[k].type != N_FILE)
            continue;
        char *file = *list[i] ? xformat("%s/%s", in->root, list[i]) : xformat("%s", in->root);
        describe(file, *list[i] ? list[i] : in->name);
        free(file);
    }
    for (size_t i = 0; i < in->nn; i++) {
        const struct node *nd = &in->n[i];
        if (nd->type == N_FILE && nd->kind != MACHO_KIND_NONE && !bc_is_code(nd->kind) && !nd->replaced)
            printf("  %s: %s, not signable code: copied and sealed as a resource\n", esc(nd->rel), macho_kind_name(nd->kind));
        if (in->bundle && nd->unit == -1 && nd->type != N_DIR && !nd->replaced && !bc_below(nd->rel, "Contents") && *nd->rel)
            printf("  %s: outside Contents, not sealed (codesign --verify --strict rejects such a bundle)\n", esc(nd->rel));
    }
    printf("%s with codesign --verify --strict, in this order:\n",
           platform_is_macos ? "Each is then checked" : "On macOS, each would then be checked");
    for (size_t i = 0; list[i]; i++)
        printf("  %s\n", *list[i] ? esc(list[i]) : esc(in->name));
    free(list);
    if (problem)
        printf("warning: %s: prepare --yes refuses it\n", esc(problem));
}

/* Builds the copy beside its destination and puts it in place. 0, or 1 with one line. */
static int place(struct input *in, const char *into, int intofd)
{
    char err[1400];
    struct run r = {.in = in, .write = true, .intofd = intofd, .into = into};
    r.umask_ = umask(022);
    umask(r.umask_);
    r.tmpname = xformat(".%s.vzcaps-new.%ld", in->name, (long)getpid());
    r.tmppath = strcmp(into, "/") == 0 ? xformat("/%s", r.tmpname) : xformat("%s/%s", into, r.tmpname);
    char *oldname = xformat(".%s.vzcaps-old.%ld", in->name, (long)getpid());
    int rc = 0;
    remove_at(intofd, r.tmpname, 0);
    if (in->bundle) {
        char *why = NULL;
        int fd = vzcaps_mkdirat_new(intofd, into, r.tmpname, 0700, &why);
        if (fd < 0) {
            snprintf(err, sizeof err, "%s", why ? why : r.tmppath);
            rc = -1;
        } else {
            close(fd);
        }
        free(why);
    }
    if (rc == 0)
        rc = bc_build(&r, err, sizeof err);
    /* into place as a whole: a copy vzcaps made aside, the new one in, the old one gone */
    bool had_old = false;
    char *problem = rc == 0 ? dest_problem(in, into, intofd) : NULL;
    if (problem) {
        snprintf(err, sizeof err, "%s", problem);
        rc = -1;
    }
    free(problem);
    if (rc == 0 && bc_stop_signal) {
        snprintf(err, sizeof err, "interrupted");
        rc = -1;
    }
    struct stat st;
    if (rc == 0 && fstatat(intofd, in->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        had_old = true;
        remove_at(intofd, oldname, 0);
        if (renameat(intofd, in->name, intofd, oldname) != 0) {
            snprintf(err, sizeof err, "cannot move %s aside: %s", in->dest, strerror(errno));
            rc = -1;
            had_old = false;
        }
    }
    if (rc == 0 && renameat(intofd, r.tmpname, intofd, in->name) != 0) {
        snprintf(err, sizeof err, "cannot move the copy to %s: %s", in->dest, strerror(errno));
        if (had_old)
            renameat(intofd, oldname, intofd, in->name);
        rc = -1;
    }
    if (rc != 0) {
        remove_at(intofd, r.tmpname, 0);
        eprintf("vzcaps prepare: %s", err);
    } else {
        if (had_old && remove_at(intofd, oldname, 0) != 0) {
            eprintf("vzcaps prepare: the copy is in place, but the previous one, moved aside to %s/%s, cannot be removed: %s",
                    into, oldname, strerror(errno));
            rc = -1;
        }
        /* the marker that lets a later run replace this copy, and nothing else */
        char *mname = xformat(".%s.vzcaps-prepared", in->name), *src = xformat("source %s\n", in->root), *why = NULL;
        char *text = vzcaps_record_text(intofd, in->name, MAKER, src);
        free(src);
        struct vzcaps_wopts o = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = MAKER};
        if (!text || vzcaps_write_fileat(intofd, into, mname, text, strlen(text), &o, &why) != 0) {
            eprintf("vzcaps prepare: %s (the copy is in place, but a later run will not replace it)", why ? why : in->dest);
            rc = -1;
        }
        free(mname);
        free(text);
        free(why);
    }
    free(r.tmpname);
    free(r.tmppath);
    free(oldname);
    return rc ? 1 : 0;
}

/* On a Mac: Apple's codesign on each file and bundle verify_list names. */
static void codesign_verify(const struct input *in)
{
    if (!platform_is_macos || access("/usr/bin/codesign", X_OK) != 0)
        return;
    const char **list = verify_list(in);
    for (size_t i = 0; list[i]; i++) {
        char *p = *list[i] ? xformat("%s/%s", in->dest, list[i]) : xformat("%s", in->dest);
        char *av[] = {"/usr/bin/codesign", "--verify", "--strict", p, NULL};
        if (spawn_wait(av[0], av) != 0)
            eprintf("vzcaps prepare: warning: codesign --verify --strict rejects %s (vzcaps's own verifier accepted it)", p);
        free(p);
    }
    free(list);
}

static void report(const struct input *in)
{
    printf("prepared %s: %zu Mach-O file%s re-signed ad hoc, no hardened runtime", esc(in->dest), in->n_code,
           in->n_code == 1 ? "" : "s");
    if (in->nu)
        printf("; %zu bundle%s sealed", in->nu, in->nu == 1 ? "" : "s");
    printf("\n");
    const char **list = verify_list(in);
    size_t n = 0, shown = 0;
    while (list[n])
        n++;
    for (size_t k = n; k-- > 0;) { /* the main executable first */
        int i = bc_find_node(in, list[k]);
        if (i < 0 || in->n[i].type != N_FILE)
            continue;
        char *file = *list[k] ? xformat("%s/%s", in->dest, list[k]) : xformat("%s", in->dest), err[600];
        static struct macho_file mf;
        if (macho_load(file, &mf, err, sizeof err) == 0 && mf.slices[0].filetype == 2 /* MH_EXECUTE */) {
            if (!shown++) /* a library alone has nothing to run */
                printf("run it through vzcaps with:\n");
            printf("  vzcaps run --inherit -- ");
            shell_quote(stdout, file);
            printf("\n");
        }
        free(file);
    }
    free(list);
}

/* The --into directory (the default under HOME), as its own name ("DIR/" or "DIR/." is DIR: a
 * link there is refused as DIR would be): heap, or NULL after the message. */
static char *prepare_into(const char *into)
{
    char *dir = NULL;
    if (!into) {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            eprintf("vzcaps prepare: HOME is not set: give --into DIR");
            return NULL;
        }
        into = dir = xformat("%s/Library/Application Support/vzcaps/prepared", home);
    }
    char *given_into = dir;
    dir = vzcaps_dir_name(into);
    free(given_into);
    if (!dir)
        eprintf("vzcaps prepare: out of memory");
    return dir;
}

/* Every input read and signed in memory (bc_analyse): the inputs' combined status. */
static int prepare_analyse(int count, char **args, struct input *ins, const char *into)
{
    int rc = 0;
    for (int k = 0; k < count; k++) {
        ins[k].arg = args[k];
        int one = bc_analyse(&ins[k], into);
        ins[k].ok = one == 0;
        rc |= one;
    }
    return rc;
}

/* What stands in each input's way at its destination (two inputs with one name, something that
 * is not ours there): a message per input or NULL; the array (NULL when out of memory). */
static char **prepare_problems(struct input *ins, int count, const char *into, int intofd)
{
    char **problems = calloc((size_t)count, sizeof *problems);
    for (int a = 0; a < count && problems; a++) {
        if (!ins[a].name || !ins[a].dest)
            continue;
        for (int b = 0; b < a; b++)
            if (ins[b].name && strcmp(ins[a].name, ins[b].name) == 0 && !problems[a])
                problems[a] = xformat("%s and %s would both be prepared as %s (prepare them into different --into directories)",
                                      ins[b].arg, ins[a].arg, ins[a].dest);
        if (!problems[a] && ins[a].ok)
            problems[a] = dest_problem(&ins[a], into, intofd);
    }
    return problems;
}

/* Each input placed into intofd, verified and reported; an interrupted run removes its
 * temporary tree before it ends. The combined status. */
static int prepare_place_all(struct input *ins, int count, const char *into, int intofd)
{
    int rc = 0;
    struct sigaction sa, old_int, old_term, old_hup;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    remove_stale(intofd, into);
    for (int a = 0; a < count && !bc_stop_signal; a++) {
        int one = place(&ins[a], into, intofd);
        rc |= one;
        if (one == 0) {
            codesign_verify(&ins[a]);
            report(&ins[a]);
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (bc_stop_signal) {
        fflush(stdout);
        signal(bc_stop_signal, SIG_DFL);
        raise(bc_stop_signal);
    }
    return rc;
}

int cmd_prepare(int argc, char **argv)
{
    const char *into = NULL;
    bool yes = false;
    const struct opt_bind binds[] = {OPT_VALUE("--into", &into), OPT_FLAG("--yes", &yes), {0}};
    int rc = cli_parse("prepare", &argc, argv, binds), count = argc - 1;
    if (rc)
        return rc;
    if (!count)
        return usage_error("prepare", "no program given (a Mach-O file or an .app bundle)");
    char *dir = prepare_into(into);
    if (!dir)
        return 1;
    into = dir;
    struct input *ins = calloc((size_t)count, sizeof *ins);
    if (!ins) {
        free(dir);
        eprintf("vzcaps prepare: out of memory");
        return 1;
    }
    /* every input read and signed in memory, every destination checked, before anything is
     * written: a refusal leaves nothing behind, not even --into */
    rc = prepare_analyse(count, argv + 1, ins, into);
    struct stat ist;
    bool into_exists = lstat(into, &ist) == 0;
    int intofd = into_exists ? open(into, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    char **problems = prepare_problems(ins, count, into, intofd);
    for (int a = 0; a < count; a++) {
        if (!ins[a].ok || (rc && yes))
            continue;
        if (!yes) {
            plan(&ins[a], problems ? problems[a] : NULL);
        } else if (problems && problems[a]) {
            eprintf("vzcaps prepare: %s", problems[a]);
            rc = 1;
        }
    }
    if (!yes && !rc) {
        fputs(given_up, stdout);
        printf("Nothing was written: run it again with --yes to do it.\n");
    }
    if (!yes)
        rc = 1;
    if (rc == 0) {
        char err[1400];
        if (intofd >= 0)
            close(intofd);
        intofd = open_into(into, true, err, sizeof err);
        if (intofd < 0) {
            eprintf("vzcaps prepare: %s", err);
            rc = 1;
        }
    }
    if (rc == 0)
        rc = prepare_place_all(ins, count, into, intofd);
    if (intofd >= 0)
        close(intofd);
    for (int a = 0; a < count; a++) {
        if (problems)
            free(problems[a]);
        bc_input_free(&ins[a]);
    }
    free(problems);
    free(ins);
    free(dir);
    return rc ? 1 : 0;
}
