/* The copy vzcaps prepare makes (see bundlecopy.h): reading the source without following a
 * link inside it, classifying every file, finding the bundles and sealing them inside out (a
 * new CodeResources, the main executable bound to it and to Info.plist), writing each file once,
 * exclusively, through safewrite, with a safe mode.
 * Never: opens anything for writing through a link; writes outside the temporary tree. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
#include "bundlecopy.h"

#include "../common/input.h"
#include "../common/safewrite.h"
#include "sha1.h"
#include "../common/sha256.h"
#include "../common/text.h"
#include "coderesources.h"
#include "codesign.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

volatile sig_atomic_t bc_stop_signal;

static char *join(const char *a, const char *b)
{
    return *a ? xformat("%s/%s", a, b) : xformat("%s", b);
}

static const char *last_name(const char *rel)
{
    const char *s = strrchr(rel, '/');
    return s ? s + 1 : rel;
}

/* rel's path below prefix ("" when equal), NULL when it is not below it */
const char *bc_below(const char *rel, const char *prefix)
{
    size_t n = strlen(prefix);
    if (!n)
        return rel;
    if (strncmp(rel, prefix, n) != 0)
        return NULL;
    return rel[n] == '/' ? rel + n + 1 : rel[n] == '\0' ? rel + n : NULL;
}

int bc_find_node(const struct input *in, const char *rel)
{
    for (size_t i = 0; i < in->nn; i++)
        if (strcmp(in->n[i].rel, rel) == 0)
            return (int)i;
    return -1;
}

static struct node *add_node(struct input *in, const char *rel, enum ntype type, mode_t mode)
{
    if (in->nn == in->ncap) {
        in->ncap = in->ncap ? 2 * in->ncap : 256;
        in->n = realloc(in->n, in->ncap * sizeof *in->n);
        if (!in->n) {
            eprintf("vzcaps prepare: out of memory");
            exit(1);
        }
    }
    struct node *n = &in->n[in->nn++];
    memset(n, 0, sizeof *n);
    n->rel = xformat("%s", rel);
    n->type = type;
    n->mode = mode;
    n->unit = -1;
    n->nested_unit = -1;
    return n;
}

/* Opens a file of the source for reading (the one input reader): never through a link at its
 * last component, never blocking, regular files only. */
static int open_source(const char *path, struct stat *st, char *err, size_t errlen)
{
    return vzcaps_input_open(path, VZCAPS_IN_NOFOLLOW, st, err, errlen);
}

/* The whole file (read, never mapped: a file that shrinks is "truncated", never a SIGBUS), for
 * classifying and signing; *len its size. */
static uint8_t *read_source(const char *path, size_t *len, mode_t *mode, char *err, size_t errlen)
{
    struct vzcaps_input file;
    struct vzcaps_input_opts io = {.max = MACHO_MAX_SIZE, .flags = VZCAPS_IN_NOFOLLOW};
    if (vzcaps_input_read(path, &io, &file, err, errlen) != 0)
        return NULL;
    *len = file.len;
    if (mode)
        *mode = file.st.st_mode;
    return (uint8_t *)file.data;
}

static void free_source(uint8_t *m, size_t len)
{
    (void)len;
    free(m);
}

static int classify(const char *path, struct node *n, char *err, size_t errlen)
{
    struct stat st;
    uint8_t head[8];
    int fd = open_source(path, &st, err, errlen);
    if (fd < 0)
        return -1;
    ssize_t got;
    while ((got = pread(fd, head, sizeof head, 0)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (got < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    char why[300];
    if (!macho_needs_whole(head, (size_t)got)) { /* a large resource is never read to learn it is not code */
        n->kind = macho_classify(head, (size_t)got, why, sizeof why);
        return 0;
    }
    size_t len;
    uint8_t *m = read_source(path, &len, NULL, err, errlen);
    if (!m)
        return -1;
    n->kind = macho_classify(m, len, why, sizeof why);
    free_source(m, len);
    if (n->kind == MACHO_KIND_BROKEN) {
        snprintf(err, errlen, "%s: %s", path, why[0] ? why : "a damaged Mach-O file");
        return -1;
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the directory path (rel in the bundle) and everything below it, never following a link. */
static int walk(struct input *in, const char *path, const char *rel, int depth, char *err, size_t errlen)
{
    if (depth > MAX_DEPTH) {
        snprintf(err, errlen, "%s: nested more than %d levels deep", path, MAX_DEPTH);
        return -1;
    }
    DIR *d = opendir(path);
    if (!d) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (nn == cap) {
            cap = cap ? 2 * cap : 32;
            names = realloc(names, cap * sizeof *names);
            if (!names) {
                eprintf("vzcaps prepare: out of memory");
                exit(1);
            }
        }
        names[nn++] = xformat("%s", de->d_name);
    }
    closedir(d);
    if (nn)
        qsort(names, nn, sizeof *names, by_name); /* the same order on every run */
    int rc = 0;
    for (size_t i = 0; i < nn && rc == 0; i++) {
        char *p = xformat("%s/%s", path, names[i]), *r = join(rel, names[i]);
        struct stat st;
        if (!cr_name_ok(names[i])) {
            snprintf(err, errlen, "%s: a name with control characters or invalid UTF-8 cannot be sealed", p); /* raw: the printer escapes it */
            rc = -1;
        } else if (in->nn >= MAX_NODES) {
            snprintf(err, errlen, "%s: more than %d files", in->arg, MAX_NODES);
            rc = -1;
        } else if (lstat(p, &st) != 0) {
            snprintf(err, errlen, "%s: %s", p, strerror(errno));
            rc = -1;
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX + 1];
            ssize_t t = readlink(p, target, sizeof target - 1);
            if (t < 0 || (size_t)t >= sizeof target - 1) {
                snprintf(err, errlen, "%s: cannot read the link: %s", p, t < 0 ? strerror(errno) : "too long");
                rc = -1;
            } else {
                target[t] = '\0';
                add_node(in, r, N_LINK, st.st_mode)->target = xformat("%s", target);
            }
        } else if (S_ISREG(st.st_mode)) {
            struct node *n = add_node(in, r, N_FILE, st.st_mode);
            rc = classify(p, n, err, errlen);
        } else if (S_ISDIR(st.st_mode)) {
            add_node(in, r, N_DIR, st.st_mode);
            rc = walk(in, p, r, depth + 1, err, errlen);
        } else {
            snprintf(err, errlen, "%s: not a regular file, directory or link", p);
            rc = -1;
        }
        free(p);
        free(r);
    }
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* ---- bundles: which units, their scope, the order they are sealed in ---- */

bool bc_is_code(enum macho_kind k)
{
    return k == MACHO_KIND_CODE || k == MACHO_KIND_PARTLY_SIGNED;
}

static int add_unit(struct input *in, const char *dir, const char *base, const char *info, const char *exe_dir,
                    const char *fallback_exe, int parent, char *err, size_t errlen)
{
    char *src_info = xformat("%s/%s", in->root, info), *name = NULL;
    int inode = bc_find_node(in, info);
    int rc = inode >= 0 && in->n[inode].type == N_FILE ? macho_plist_executable(src_info, &name, err, errlen) : 0;
    free(src_info);
    if (rc != 0)
        return -1;
    char *exe = join(exe_dir, name ? name : fallback_exe);
    bool named = name != NULL;
    free(name);
    int e = bc_find_node(in, exe);
    if (e < 0 || in->n[e].type != N_FILE || !bc_is_code(in->n[e].kind)) {
        snprintf(err, errlen, "%s/%s: %s, but it is the main executable of %s%s%s%s", in->root, exe,
                 e < 0 ? "missing" : in->n[e].type != N_FILE ? "not a regular file" : macho_kind_name(in->n[e].kind),
                 in->root, *dir ? "/" : "", dir,
                 *dir ? " (a directory with an extension in a code location is a nested bundle; vzcaps seals only bundles with signed code)"
                      : "");
        free(exe);
        return -1;
    }
    if (in->nu == in->ucap) {
        in->ucap = in->ucap ? 2 * in->ucap : 8;
        in->u = realloc(in->u, in->ucap * sizeof *in->u);
        if (!in->u) {
            eprintf("vzcaps prepare: out of memory");
            exit(1);
        }
    }
    struct unit *u = &in->u[in->nu++];
    memset(u, 0, sizeof *u);
    u->dir = xformat("%s", dir);
    u->base = xformat("%s", base);
    u->info = xformat("%s", info);
    u->exe = exe;
    u->exe_named = named;
    u->parent = parent;
    char *res = join(base, "Resources");
    int r = bc_find_node(in, res);
    u->with_resources = cr_layout_with_resources(strcmp(base, dir) != 0 && strcmp(last_name(base), "Contents") == 0,
                                                 r >= 0 && (in->n[r].type == N_DIR || in->n[r].type == N_LINK));
    free(res);
    in->n[e].main_exe = true;
    return (int)in->nu - 1;
}

/* The units of the bundle directory dir: one, or one per version of a versioned framework.
 * Returns the unit its parent records (for a framework: the one Versions/Current names). */
static int add_bundle(struct input *in, const char *dir, int parent, char *err, size_t errlen)
{
    const char *name = *dir ? last_name(dir) : in->name;
    const char *dot = strrchr(name, '.');
    char *stem = xformat("%.*s", (int)(dot && dot != name ? dot - name : (ptrdiff_t)strlen(name)), name);
    char *contents = join(dir, "Contents"), *versions = join(dir, "Versions");
    int c = bc_find_node(in, contents), v = bc_find_node(in, versions), rc = -1;
    if (c >= 0 && in->n[c].type == N_DIR) {
        char *info = join(contents, "Info.plist"), *macos = join(contents, "MacOS");
        rc = add_unit(in, dir, contents, info, macos, stem, parent, err, errlen);
        free(info);
        free(macos);
    } else if (parent < 0) {
        snprintf(err, errlen, "%s: an .app bundle without a Contents directory", in->root);
    } else if (dot && strcmp(dot, ".framework") == 0 && v >= 0 && in->n[v].type == N_DIR) {
        /* each version is a bundle; the parent records the one Current names (else the first) */
        char *cur = join(versions, "Current");
        int cl = bc_find_node(in, cur), first = -1;
        const char *current = cl >= 0 && in->n[cl].type == N_LINK && !strchr(in->n[cl].target, '/') ? in->n[cl].target : NULL;
        for (size_t i = 0; i < in->nn; i++) {
            const char *sub = bc_below(in->n[i].rel, versions);
            if (!sub || !*sub || strchr(sub, '/') || in->n[i].type != N_DIR)
                continue;
            char *vdir = xformat("%s", in->n[i].rel), *res = join(vdir, "Resources"), *info = join(res, "Info.plist");
            int k = add_unit(in, vdir, vdir, info, vdir, stem, parent, err, errlen);
            free(res);
            free(info);
            free(vdir);
            if (k < 0) {
                first = -2;
                break;
            }
            if (first < 0)
                first = k;
            if (current && strcmp(sub, current) == 0)
                rc = k;
        }
        free(cur);
        if (first == -1)
            snprintf(err, errlen, "%s/%s: a framework without versions", in->root, dir);
        rc = first < 0 ? -1 : rc >= 0 ? rc : first;
    } else if (dot && strcmp(dot, ".framework") == 0) {
        char *res = join(dir, "Resources"), *info = join(res, "Info.plist");
        rc = add_unit(in, dir, dir, info, dir, stem, parent, err, errlen);
        free(res);
        free(info);
    } else {
        char *info = join(dir, "Info.plist");
        rc = add_unit(in, dir, dir, info, dir, stem, parent, err, errlen);
        free(info);
    }
    free(stem);
    free(contents);
    free(versions);
    return rc;
}

/* Gives every node in unit k's resource base to k, finds its nested bundles (directories
 * with an extension where the rules expect nested code) and adds them as units. */
static int claim(struct input *in, int k, char *err, size_t errlen)
{
    const char *skip = NULL; /* a nested bundle's directory: its parts belong to its own units */
    for (size_t i = 0; i < in->nn; i++) {
        struct node *n = &in->n[i];
        const struct unit *u = &in->u[k];
        const char *key = bc_below(n->rel, u->base);
        if (!key || !*key || n->unit >= 0 || n->replaced)
            continue;
        if (skip && bc_below(n->rel, skip))
            continue;
        skip = NULL;
        if (strcmp(key, "_CodeSignature") == 0 || strncmp(key, "_CodeSignature/", 15) == 0) {
            n->replaced = true; /* the old seal and signature files: a new seal is written */
            continue;
        }
        if (n->type == N_DIR && strchr(last_name(key), '.') && cr_match(2, u->with_resources, key) & CR_NESTED) {
            int child = add_bundle(in, n->rel, k, err, errlen);
            if (child < 0)
                return -1;
            in->n[i].nested_unit = child;
            skip = in->n[i].rel;
            continue;
        }
        n->unit = k;
    }
    return 0;
}

/* ---- signing and copying ---- */

static const uint8_t *pick_cdhash(const struct codesign_report *rep)
{
    /* the slice an Apple silicon Mac validates: arm64e, else arm64, else the first */
    size_t best = 0;
    int score = -1;
    for (size_t i = 0; i < rep->n_slices; i++) {
        const struct codesign_slice_report *s = &rep->slice[i];
        int sc = s->cputype == 0x0100000cu ? ((s->cpusubtype & 0xffffff) == 2 ? 2 : 1) : 0;
        if (sc > score)
            score = sc, best = i;
    }
    return rep->slice[best].cdhash;
}

static void digests(const void *data, size_t len, uint8_t sha1[20], uint8_t sha256[32])
{
    struct sha1 a;
    struct sha256 b;
    sha1_init(&a);
    sha1_update(&a, data, len);
    sha1_final(&a, sha1);
    sha256_init(&b);
    sha256_update(&b, data, len);
    sha256_final(&b, sha256);
}

/* The directory of the copy that holds rel, opened without following a link. */
static int open_copy_dir(struct run *r, const char *rel, const char **name, char *err, size_t errlen)
{
    const char *slash = strrchr(rel, '/');
    *name = slash ? slash + 1 : rel;
    char *dir = slash ? xformat("%s/%.*s", r->tmppath, (int)(slash - rel), rel) : xformat("%s", r->tmppath);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    free(dir);
    return fd;
}

static int write_copy(struct run *r, const char *rel, const void *data, size_t len, mode_t mode, char *err, size_t errlen)
{
    const char *name;
    int dirfd;
    char *dirpath;
    if (!r->in->bundle) { /* a single file: the temporary name in --into */
        dirfd = r->intofd, name = r->tmpname, dirpath = xformat("%s", r->into);
    } else {
        if ((dirfd = open_copy_dir(r, rel, &name, err, errlen)) < 0)
            return -1;
        const char *slash = strrchr(rel, '/');
        dirpath = slash ? xformat("%s/%.*s", r->tmppath, (int)(slash - rel), rel) : xformat("%s", r->tmppath);
    }
    struct vzcaps_wopts o = {.mode = mode, .replace = VZCAPS_NEW_ONLY, .sync = false};
    char *why = NULL;
    int rc = vzcaps_write_fileat(dirfd, dirpath, name, data, len, &o, &why);
    if (rc != 0)
        snprintf(err, errlen, "%s", why ? why : "cannot write");
    free(why);
    free(dirpath);
    if (r->in->bundle)
        close(dirfd);
    return rc;
}

/* Signs node n (optionally binding a bundle's Info.plist and seal), checks the result with
 * the project's verifier and writes it. */
static int sign_node(struct run *r, struct node *n, const struct codesign_bind *bind, char *err, size_t errlen)
{
    char *path = *n->rel ? xformat("%s/%s", r->in->root, n->rel) : xformat("%s", r->in->root);
    size_t len, out_len = 0;
    mode_t mode;
    uint8_t *in = read_source(path, &len, &mode, err, errlen), *out = NULL;
    if (!in) {
        free(path);
        return -1;
    }
    static struct codesign_report rep;
    char why[600];
    const char *ident = *n->rel ? last_name(n->rel) : r->in->name;
    int rc = codesign_adhoc_bound(in, len, ident, bind, n->kind == MACHO_KIND_PARTLY_SIGNED, &out, &out_len, &rep, why, sizeof why);
    free_source(in, len);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", path, why);
    /* the project's own verifier: every slice ad hoc, hashes matching, no hardened runtime */
    static struct macho_file mf;
    if (rc == 0 && macho_parse(out, out_len, &mf, why, sizeof why) != 0) {
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
    if (rc == 0) {
        digests(out, out_len, n->sha1, n->sha256);
        memcpy(n->cdhash, pick_cdhash(&rep), 20);
        if (r->write)
            rc = write_copy(r, n->rel, out, out_len, vzcaps_safe_mode(mode), err, errlen);
        r->in->n_code++;
    }
    free(out);
    free(path);
    return rc;
}

/* Copies a resource (hashing what it writes); in the plan only its digests are taken when
 * the seal needs them (Info.plist). */
static int copy_node(struct run *r, struct node *n, bool need_digest, char *err, size_t errlen)
{
    if (!r->write && !need_digest)
        return 0;
    char *path = xformat("%s/%s", r->in->root, n->rel);
    struct stat st;
    int fd = open_source(path, &st, err, errlen);
    if (fd < 0) {
        free(path);
        return -1;
    }
    struct vzcaps_out o;
    const char *name = NULL;
    int dirfd = -1;
    char *why = NULL;
    int rc = 0;
    if (r->write) {
        dirfd = open_copy_dir(r, n->rel, &name, err, errlen);
        struct vzcaps_wopts opts = {.mode = vzcaps_safe_mode(st.st_mode), .replace = VZCAPS_NEW_ONLY};
        const char *slash = strrchr(n->rel, '/');
        char *dirpath = slash ? xformat("%s/%.*s", r->tmppath, (int)(slash - n->rel), n->rel) : xformat("%s", r->tmppath);
        rc = dirfd < 0 ? -1 : vzcaps_out_openat(&o, dirfd, dirpath, name, &opts, &why);
        if (dirfd >= 0 && rc != 0)
            snprintf(err, errlen, "%s", why ? why : "cannot write");
        free(dirpath);
    }
    struct sha1 a;
    struct sha256 b;
    sha1_init(&a);
    sha256_init(&b);
    static uint8_t buf[1 << 16];
    unsigned long long total = 0;
    while (rc == 0) {
        if (bc_stop_signal) {
            snprintf(err, errlen, "interrupted");
            rc = -1;
            break;
        }
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            rc = -1;
            break;
        }
        if (got == 0) {
            rc = vzcaps_input_end(path, &st, total, err, errlen); /* shrank while copied */
            break;
        }
        total += (unsigned long long)got;
        sha1_update(&a, buf, (size_t)got);
        sha256_update(&b, buf, (size_t)got);
        if (r->write)
            vzcaps_out_write(&o, buf, (size_t)got);
    }
    close(fd);
    sha1_final(&a, n->sha1);
    sha256_final(&b, n->sha256);
    if (r->write && dirfd >= 0) {
        if (rc == 0 && vzcaps_out_commit(&o, &why) != 0) {
            snprintf(err, errlen, "%s", why ? why : "cannot write");
            rc = -1;
        } else if (rc != 0 && why == NULL) {
            vzcaps_out_abort(&o);
        }
        close(dirfd);
    }
    free(why);
    free(path);
    return rc;
}

static int process_node(struct run *r, struct node *n, char *err, size_t errlen)
{
    if (bc_stop_signal) {
        snprintf(err, errlen, "interrupted");
        return -1;
    }
    if (n->type != N_FILE || n->replaced || n->main_exe)
        return 0;
    if (bc_is_code(n->kind))
        return sign_node(r, n, NULL, err, errlen);
    bool info = false;
    for (size_t k = 0; k < r->in->nu; k++)
        info |= strcmp(r->in->u[k].info, n->rel) == 0;
    return copy_node(r, n, info, err, errlen);
}

/* Seals unit k: its files (nested bundles are sealed already), its CodeResources, then its
 * main executable bound to Info.plist and that seal. */
static int seal_unit(struct run *r, int k, char *err, size_t errlen)
{
    struct input *in = r->in;
    struct unit *u = &in->u[k];
    for (size_t i = 0; i < in->nn; i++)
        if (in->n[i].unit == k && process_node(r, &in->n[i], err, errlen) != 0)
            return -1;
    struct cr_seal seal;
    cr_init(&seal, u->with_resources);
    for (size_t i = 0; i < in->nn; i++) {
        const struct node *n = &in->n[i];
        const char *key = bc_below(n->rel, u->base);
        if (n->nested_unit >= 0 && in->u[n->nested_unit].parent == k) {
            cr_add_bundle(&seal, key, in->u[n->nested_unit].cdhash);
            continue;
        }
        if (n->unit != k || n->main_exe || strcmp(key, "CodeResources") == 0)
            continue;
        if (n->type == N_FILE)
            cr_add_file(&seal, key, n->sha1, n->sha256, bc_is_code(n->kind) ? n->cdhash : NULL);
        else if (n->type == N_LINK)
            cr_add_link(&seal, key, n->target);
    }
    size_t xlen = 0;
    char *xml = cr_xml(&seal, &xlen);
    cr_free(&seal);
    if (!xml) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint8_t xml_sha256[32], unused[20];
    digests(xml, xlen, unused, xml_sha256);
    int rc = 0;
    if (r->write) {
        char *csdir = join(u->base, "_CodeSignature"), *p = xformat("%s/%s", r->tmppath, csdir);
        struct stat st;
        if (lstat(p, &st) != 0 && mkdir(p, 0700) != 0) {
            snprintf(err, errlen, "%s: %s", p, strerror(errno));
            rc = -1;
        }
        char *file = join(csdir, "CodeResources");
        if (rc == 0)
            rc = write_copy(r, file, xml, xlen, 0644, err, errlen);
        free(file);
        free(csdir);
        free(p);
    }
    free(xml);
    if (rc != 0)
        return -1;
    int info = bc_find_node(in, u->info), exe = bc_find_node(in, u->exe);
    struct codesign_bind bind = {info >= 0 && in->n[info].type == N_FILE ? in->n[info].sha256 : NULL, xml_sha256};
    if (sign_node(r, &in->n[exe], &bind, err, errlen) != 0)
        return -1;
    memcpy(u->cdhash, in->n[exe].cdhash, 20);
    return 0;
}

/* Everything, in order: nested bundles before the bundles that hold them, loose files, links
 * last (no link exists in the copy while a file is written into it). */
int bc_build(struct run *r, char *err, size_t errlen)
{
    struct input *in = r->in;
    in->n_code = 0;
    if (!in->bundle)
        return process_node(r, &in->n[0], err, errlen);
    if (r->write) {
        for (size_t i = 0; i < in->nn; i++) {
            const struct node *n = &in->n[i];
            if (n->type != N_DIR || n->replaced || !*n->rel)
                continue;
            char *p = xformat("%s/%s", r->tmppath, n->rel);
            if (mkdir(p, 0700) != 0) {
                snprintf(err, errlen, "%s: %s", p, strerror(errno));
                free(p);
                return -1;
            }
            free(p);
        }
    }
    for (size_t k = in->nu; k-- > 0;) /* units were found parents first */
        if (seal_unit(r, (int)k, err, errlen) != 0)
            return -1;
    for (size_t i = 0; i < in->nn; i++)
        if (in->n[i].unit < 0 && process_node(r, &in->n[i], err, errlen) != 0)
            return -1;
    if (!r->write)
        return 0;
    for (size_t i = 0; i < in->nn; i++) {
        const struct node *n = &in->n[i];
        if (n->type != N_LINK || n->replaced)
            continue;
        const char *name;
        int fd = open_copy_dir(r, n->rel, &name, err, errlen);
        if (fd < 0)
            return -1;
        int rc = symlinkat(n->target, fd, name);
        if (rc != 0)
            snprintf(err, errlen, "%s/%s: cannot create the link: %s", r->tmppath, n->rel, strerror(errno));
        close(fd);
        if (rc != 0)
            return -1;
    }
    /* directories get the source's mode last (deepest first), made safe, the umask applied */
    for (size_t i = in->nn; i-- > 0;) {
        const struct node *n = &in->n[i];
        if (n->type != N_DIR || n->replaced)
            continue;
        char *p = *n->rel ? xformat("%s/%s", r->tmppath, n->rel) : xformat("%s", r->tmppath);
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int rc = fd < 0 ? -1 : fchmod(fd, vzcaps_safe_mode(n->mode) & ~r->umask_);
        if (rc != 0)
            snprintf(err, errlen, "%s: cannot set its mode: %s", p, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(p);
        if (rc != 0)
            return -1;
    }
    for (size_t k = 0; k < in->nu; k++) { /* the new seals' directories */
        char *p = xformat("%s/%s/_CodeSignature", r->tmppath, in->u[k].base);
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            fchmod(fd, 0755 & ~r->umask_);
            close(fd);
        }
        free(p);
    }
    return 0;
}

/* ---- one input ---- */

void bc_input_free(struct input *in)
{
    for (size_t i = 0; i < in->nn; i++) {
        free(in->n[i].rel);
        free(in->n[i].target);
    }
    for (size_t k = 0; k < in->nu; k++) {
        free(in->u[k].dir);
        free(in->u[k].base);
        free(in->u[k].info);
        free(in->u[k].exe);
    }
    free(in->n);
    free(in->u);
    free(in->root);
    free(in->name);
    free(in->dest);
    memset(in, 0, sizeof *in);
}

/* Reads, classifies and signs (in memory) one input: 0, or 1 with one line on stderr. */
int bc_analyse(struct input *in, const char *into)
{
    char err[1400];
    const char *path = in->arg;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *base = path + n;
    while (base > path && base[-1] != '/')
        base--;
    in->name = xformat("%.*s", (int)(path + n - base), base);
    if (!*in->name || strcmp(in->name, ".") == 0 || strcmp(in->name, "..") == 0 || strcmp(in->name, "/") == 0) {
        eprintf("vzcaps prepare: %s: give the program by a name (its copy is named after it)", path);
        return 1;
    }
    in->root = realpath(path, NULL); /* a link given here is followed: its target is copied */
    struct stat st;
    if (!in->root || stat(in->root, &st) != 0) {
        eprintf("vzcaps prepare: %s: %s", path, strerror(errno));
        return 1;
    }
    in->dest = strcmp(into, "/") == 0 ? xformat("/%s", in->name) : xformat("%s/%s", into, in->name);
    if (S_ISDIR(st.st_mode)) {
        if (strlen(in->name) < 5 || strcmp(in->name + strlen(in->name) - 4, ".app") != 0) {
            eprintf("vzcaps prepare: %s: a directory, but not an .app bundle", path);
            return 1;
        }
        in->bundle = true;
        add_node(in, "", N_DIR, st.st_mode);
        if (walk(in, in->root, "", 0, err, sizeof err) != 0) {
            eprintf("vzcaps prepare: %s", err);
            return 1;
        }
        size_t code = 0;
        for (size_t i = 0; i < in->nn; i++)
            code += in->n[i].type == N_FILE && bc_is_code(in->n[i].kind);
        if (!code) {
            eprintf("vzcaps prepare: %s: no Mach-O file in the bundle", path);
            return 1;
        }
        if (add_bundle(in, "", -1, err, sizeof err) < 0) {
            eprintf("vzcaps prepare: %s", err);
            return 1;
        }
        for (size_t k = 0; k < in->nu; k++) /* grows while it runs: nested bundles are added */
            if (claim(in, (int)k, err, sizeof err) != 0) {
                eprintf("vzcaps prepare: %s", err);
                return 1;
            }
        in->n[0].unit = -2; /* the bundle directory itself: the copy's root */
    } else if (!S_ISREG(st.st_mode)) {
        eprintf("vzcaps prepare: %s: not a regular file or an .app bundle", path);
        return 1;
    } else {
        struct node *nd = add_node(in, "", N_FILE, st.st_mode);
        if (classify(in->root, nd, err, sizeof err) != 0) {
            eprintf("vzcaps prepare: %s", err);
            return 1;
        }
        if (!bc_is_code(nd->kind)) {
            eprintf("vzcaps prepare: %s: %s", path,
                    nd->kind == MACHO_KIND_UNSIGNED ? "not signed: there is no signature to replace"
                    : nd->kind == MACHO_KIND_NONE   ? "not a Mach-O file"
                                                    : macho_kind_name(nd->kind));
            return 1;
        }
    }
    /* sign every file in memory first, even for the plan: what cannot be signed is said now */
    struct run r = {.in = in, .write = false, .intofd = -1};
    if (bc_build(&r, err, sizeof err) != 0) {
        eprintf("vzcaps prepare: %s", err);
        return 1;
    }
    return 0;
}
