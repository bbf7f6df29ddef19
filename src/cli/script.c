/* #! scripts as run and inspect see them: each file's first line (launch.c parses it), the
 * chain of interpreters, and the program started instead of env so the injection survives.
 * Never: runs anything, or reads more of a file than its #! line. */
#define _XOPEN_SOURCE 700
#include "script.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int script_chain(const char *target, struct script_chain *c, char *why, size_t len)
{
    memset(c, 0, sizeof *c);
    struct vzcaps_shebang sb;
    int k = script_read(target, &sb, why, len);
    if (k == -2)
        return 126;
    if (k == 0) {
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
            /* run starts NAME itself, found on PATH as env finds it */
            const char *prog = vzcaps_shebang_word(&cur, name);
            char nwhy[200];
            int rc = resolve_target(prog, found, sizeof found, nwhy, sizeof nwhy);
            if (rc != 0) {
                snprintf(why, len, "its #! line starts %s through env, and %s is %s%s", prog, prog, nwhy,
                         strchr(prog, '/') ? "" : " on PATH");
                return rc;
            }
            snprintf(c->env_name, sizeof c->env_name, "%s", prog);
            if (copy_path(c->start, sizeof c->start, found, why, len) != 0)
                return 126;
            c->rewritten = true;
            c->first_arg = name + 1;
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
    vzcaps_appendf(out, len, "%s starts %s, which SIP protects: macOS removes %s there, so it and everything it starts run stock",
                   c->binary_script ? "with no #! line, it" : "its #! line", c->image, "DYLD_INSERT_LIBRARIES");
    if (c->cannot_rewrite[0])
        vzcaps_appendf(out, len, " (vzcaps run cannot start the program directly: %s)", c->cannot_rewrite);
    vzcaps_appendf(out, len, "; name an interpreter outside %s in its #! line, or run vzcaps run -- INTERPRETER SCRIPT with one",
                   vzcaps_protected_dirs_text());
}
