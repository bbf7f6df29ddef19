/* What exec starts for a command name, read from the files: the PATH lookup, the #! chain a
 * script leads through (core/exec_rules.c decides what its lines mean), a library's slices.
 * Never: starts or writes anything, or reads more of a file than its first bytes. */
#define _XOPEN_SOURCE 700
#include "exec.h"
#include "platform.h"
#include "../common/readfile.h"
#include "../macho/macho.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A candidate for exec: 0 when it is a regular file we may execute, else an errno-like
 * reason (ENOENT, EISDIR/EINVAL for anything not a regular file, EACCES). */
static int exec_candidate(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? ENOENT : errno;
    if (!S_ISREG(st.st_mode))
        return EINVAL;
    return access(path, X_OK) == 0 ? 0 : EACCES;
}

int resolve_target(const char *name, char *out, size_t len, char *why, size_t whylen)
{
    int rc;
    if (strchr(name, '/')) {
        if (strlen(name) >= len) {
            snprintf(why, whylen, "path longer than %zu bytes", len - 1);
            return 126;
        }
        snprintf(out, len, "%s", name);
        rc = exec_candidate(out);
    } else {
        rc = ENOENT;
        /* an empty entry (leading, trailing, doubled ':') is the current directory, as execvp reads it */
        const char *path = getenv("PATH");
        for (bool more = path && *path; more && rc;) {
            size_t n = strcspn(path, ":");
            int w = snprintf(out, len, "%.*s/%s", n ? (int)n : 1, n ? path : ".", name);
            int c = w > 0 && (size_t)w < len ? exec_candidate(out) : ENOENT;
            if (c == 0 || (c != ENOENT && rc == ENOENT))
                rc = c; /* remember why a found file would not do; keep looking, as execvp does */
            more = path[n] == ':';
            path += n + more;
        }
    }
    if (rc == 0)
        return 0;
    snprintf(why, whylen, "%s", rc == ENOENT ? "not found" : rc == EINVAL ? "not a regular file" :
                                rc == EACCES ? "not executable" : strerror(rc));
    return rc == ENOENT ? 127 : 126;
}

bool find_executable(const char *name, const char *near, char *out, size_t len)
{
    /* a candidate that does not fit in out is not tried: a cut path names another file */
    if (strchr(name, '/'))
        return (size_t)snprintf(out, len, "%s", name) < len && access(out, X_OK) == 0;
    const char *slash = near ? strrchr(near, '/') : NULL;
    if (slash && (size_t)snprintf(out, len, "%.*s/%s", (int)(slash - near), near, name) < len && access(out, X_OK) == 0)
        return true;
    const char *path = getenv("PATH");
    for (bool more = path && *path; more;) { /* an empty entry is the current directory */
        size_t n = strcspn(path, ":");
        if ((size_t)snprintf(out, len, "%.*s/%s", n ? (int)n : 1, n ? path : ".", name) < len && access(out, X_OK) == 0)
            return true;
        more = path[n] == ':';
        path += n + more;
    }
    return false;
}

/* ---- #! scripts: what a script really starts (core/exec_rules.c reads the lines) ---- */

/* The first bytes of path: 0 with n set, or -1 with a reason (not a regular file, unreadable). */
static int read_head(const char *path, char *head, size_t cap, size_t *n, char *why, size_t len)
{
    struct stat st;
    char err[300];
    int fd = vzcaps_open_regular(path, &st, err, sizeof err);
    if (fd < 0) {
        snprintf(why, len, "%s", err);
        return -1;
    }
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, head + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, len, "%s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *n = got;
    return 0;
}

int script_read(const char *path, struct vzcaps_shebang *sb, char *why, size_t len)
{
    char head[VZCAPS_SHEBANG_MAX + 1];
    size_t n = 0;
    if (read_head(path, head, sizeof head, &n, why, len) != 0)
        return -2;
    return vzcaps_shebang_parse(head, n, sb, why, len);
}

bool script_is_binary(const char *path)
{
    char head[4];
    size_t n = 0;
    char why[300];
    if (read_head(path, head, sizeof head, &n, why, sizeof why) != 0 || n < 4)
        return false;
    static const char *const magics[] = {"\177ELF", "\xca\xfe\xba\xbe", "\xca\xfe\xba\xbf", "\xcf\xfa\xed\xfe",
                                         "\xce\xfa\xed\xfe", "\xfe\xed\xfa\xcf", "\xfe\xed\xfa\xce"};
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++)
        if (memcmp(head, magics[i], 4) == 0)
            return true;
    return false;
}

/* Whether SIP protects path, as given or with its links resolved. */
static bool protected_file(const char *path)
{
    if (vzcaps_path_protected(path))
        return true;
    char *real = realpath(path, NULL);
    bool p = real && vzcaps_path_protected(real);
    free(real);
    return p;
}

static void line_text(const struct vzcaps_shebang *sb, char *out, size_t len)
{
    out[0] = '\0';
    vzcaps_appendf(out, len, "#!");
    for (size_t i = 0; i < sb->n_words; i++)
        vzcaps_appendf(out, len, "%s%s", i ? " " : "", vzcaps_shebang_word(sb, i));
}

static int copy_path(char *out, size_t len, const char *path, char *why, size_t whylen)
{
    if (strlen(path) >= len) {
        snprintf(why, whylen, "path longer than %zu bytes: %.200s...", len - 1, path);
        return -1;
    }
    memcpy(out, path, strlen(path) + 1);
    return 0;
}

/* A file with no #! line: a program (its own image), or, with no executable format either, a
 * script execvp starts with /bin/sh. */
static int no_shebang(const char *target, struct script_chain *c, char *why, size_t len)
{
    c->binary_script = !script_is_binary(target);
    if (c->binary_script) { /* no #! and no executable format: started with /bin/sh, as execvp does */
        c->script = true;
        snprintf(c->line, sizeof c->line, "(no #! line)");
        snprintf(c->image, sizeof c->image, "/bin/sh");
        c->protected_image = protected_file("/bin/sh");
    } else if (copy_path(c->image, sizeof c->image, target, why, len) != 0)
        return 126;
    return 0;
}

/* #!/usr/bin/env NAME: run starts NAME itself, found on PATH as env finds it (into found). */
static int env_start(struct script_chain *c, const struct vzcaps_shebang *cur, size_t name, char *found, size_t flen, char *why,
                     size_t len)
{
    const char *prog = vzcaps_shebang_word(cur, name);
    char nwhy[200];
    int rc = resolve_target(prog, found, flen, nwhy, sizeof nwhy);
    if (rc != 0) {
        snprintf(why, len, "its #! line starts %s through env, and %s is %s%s", prog, prog, nwhy, strchr(prog, '/') ? "" : " on PATH");
        return rc;
    }
    snprintf(c->env_name, sizeof c->env_name, "%s", prog);
    if (copy_path(c->start, sizeof c->start, found, why, len) != 0)
        return 126;
    c->rewritten = true;
    c->first_arg = name + 1;
    return 0;
}

int script_chain(const char *target, struct script_chain *c, char *why, size_t len)
{
    memset(c, 0, sizeof *c);
    struct vzcaps_shebang sb;
    int k = script_read(target, &sb, why, len);
    if (k == -2) /* executable but unreadable (mode 0111): exec can still run it; nothing to read */
        return copy_path(c->image, sizeof c->image, target, why, len) != 0 ? 126 : 0;
    if (k == 0)
        return no_shebang(target, c, why, len);
    c->script = true;
    if (k < 0)
        return 126;
    line_text(&sb, c->line, sizeof c->line);
    c->sb = sb;
    /* the program the kernel starts: the interpreter, through further #! lines */
    struct vzcaps_shebang cur = sb;
    for (c->depth = 1;; c->depth++) {
        size_t name = 0;
        char env_why[200] = "", found[4096];
        int e = vzcaps_shebang_env(&cur, &name, env_why, sizeof env_why);
        const char *interp = vzcaps_shebang_word(&cur, 0);
        if (e == 1 && c->depth == 1) {
            int rc = env_start(c, &cur, name, found, sizeof found, why, len);
            if (rc != 0)
                return rc;
            interp = found;
        } else if (e == -2) {
            snprintf(why, len, "its #! line%s: %s", c->depth == 1 ? "" : " of an interpreter", env_why);
            return 126;
        } else if (e < 0 && c->depth == 1) {
            snprintf(c->cannot_rewrite, sizeof c->cannot_rewrite, "%s", env_why);
        }
        if (protected_file(interp)) {
            c->protected_image = true;
            return copy_path(c->image, sizeof c->image, interp, why, len) != 0 ? 126 : 0;
        }
        struct vzcaps_shebang next;
        char iwhy[300];
        int ik = script_read(interp, &next, iwhy, sizeof iwhy);
        struct stat ist;
        if (ik == -2 && stat(interp, &ist) == 0 && S_ISREG(ist.st_mode) && access(interp, X_OK) == 0)
            /* a program we may not read (mode 0111), but the kernel may run */
            return copy_path(c->image, sizeof c->image, interp, why, len) != 0 ? 126 : 0;
        if (ik == -2) {
            snprintf(why, len, "its interpreter %s: %s", interp, iwhy);
            return access(interp, F_OK) != 0 ? 127 : 126;
        }
        if (ik == 0)
            return copy_path(c->image, sizeof c->image, interp, why, len) != 0 ? 126 : 0;
        if (ik < 0) {
            snprintf(why, len, "its interpreter %s is a script, and %s", interp, iwhy);
            return 126;
        }
        if (c->depth >= SCRIPT_DEPTH) {
            snprintf(why, len, "its #! line leads through more than %d scripts before a program", SCRIPT_DEPTH);
            return 126;
        }
        c->nested = true; /* the interpreter is a script: the kernel goes on to its interpreter */
        cur = next;
    }
}

char **script_argv(const struct script_chain *c, const char *target, char *const *cmd)
{
    size_t n = 0;
    while (cmd[n])
        n++;
    size_t extra = c->sb.n_words > c->first_arg ? c->sb.n_words - c->first_arg : 0;
    char **argv = calloc(n + extra + 3, sizeof *argv);
    if (!argv)
        return NULL;
    size_t k = 0;
    argv[k++] = (char *)c->start;
    for (size_t i = 0; i < extra; i++)
        argv[k++] = (char *)vzcaps_shebang_word(&c->sb, c->first_arg + i);
    argv[k++] = (char *)target;
    for (size_t i = 1; i < n; i++)
        argv[k++] = cmd[i];
    argv[k] = NULL;
    return argv;
}

void script_protected_advice(const struct script_chain *c, char *out, size_t len)
{
    out[0] = '\0';
    if (!c->protected_image)
        return;
    if (c->rewritten && strcmp(c->start, c->image) == 0)
        vzcaps_appendf(out, len, "vzcaps run starts %s (found on PATH for its #!.../env line) directly, but that is", c->image);
    else
        vzcaps_appendf(out, len, "%s starts %s,", c->binary_script ? "with no #! line, it" : "its #! line", c->image);
    vzcaps_appendf(out, len, " a program SIP protects: macOS removes %s there, so the script and everything it starts run stock",
                   "DYLD_INSERT_LIBRARIES");
    if (c->cannot_rewrite[0])
        vzcaps_appendf(out, len, " (vzcaps run cannot start the program directly: %s)", c->cannot_rewrite);
    vzcaps_appendf(out, len, "; name an interpreter outside %s in its #! line, or run vzcaps run -- INTERPRETER SCRIPT with one",
                   vzcaps_protected_dirs_text());
}

bool library_has_arch(const char *library, const char *arch)
{
    char archs[128] = "", err[256];
    if (macho_arch_list(library, archs, sizeof archs, err, sizeof err) != 0)
        return false;
    for (const char *p = archs; *p;) {
        size_t k = strcspn(p, " ");
        if (k == strlen(arch) && strncmp(p, arch, k) == 0)
            return true;
        p += k + (p[k] == ' ');
    }
    return false;
}

const char *self_path_kept(void)
{
    static char self[4096];
    if (!self[0])
        self_path(self, sizeof self);
    return self;
}
