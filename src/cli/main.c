/* The vzcaps command: dispatch, help, and the configuration helpers every subcommand shares.
 * Owns: the command table and its help text. Never: duplicates a core decision. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "commands.h"
#include "../common/safewrite.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

__attribute__((used)) static const char *const self_marker = VZCAPS_SELF_MARKER " command " VZCAPS_VERSION;

static void print_overview(FILE *out)
{
    fprintf(out, "vzcaps %s: Metal capability answers for macOS guests, from the host's real chip\n\n"
                 "usage: vzcaps COMMAND [OPTIONS]\n\n", VZCAPS_VERSION);
    for (const struct cmd_spec *c = cli_commands; c->name; c++) {
        fputs("  ", out);
        cli_print_synopsis(out, c);
    }
    fprintf(out, "\n  vzcaps help [COMMAND]   vzcaps --version\n\n"
                 "Variables read by the library:");
    for (const struct env_spec *e = cli_environment; e->name; e++)
        fprintf(out, "%s %s", e == cli_environment ? "" : ",", e->name);
    fprintf(out, ".\nSee man vzcaps.\n");
}

void print_help(const char *cmd, FILE *out)
{
    const struct cmd_spec *c = cli_find_command(cmd);
    if (!c)
        print_overview(out);
    else
        cli_print_help(out, c);
}

/* A formatted message on the heap (never cut). */
static char *vformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (buf)
        vsnprintf(buf, n > 0 ? (size_t)n + 1 : 1, fmt, again);
    va_end(again);
    return buf;
}

char *xformat(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    if (!s) {
        fprintf(stderr, "vzcaps: out of memory\n");
        exit(1);
    }
    return s;
}

const char *esc(const char *s)
{
    static char *ring[16];
    static unsigned next;
    if (!s)
        return "(null)";
    size_t n = strlen(s), need = vzcaps_escape(s, n, NULL, 0);
    char **slot = &ring[next++ % 16];
    char *b = realloc(*slot, need + 1);
    if (!b)
        return "(out of memory)";
    vzcaps_escape(s, n, b, need + 1);
    return *slot = b;
}

static void vline(FILE *out, const char *fmt, va_list ap)
{
    char *msg = vformat(fmt, ap);
    if (msg) {
        fprintf(out, "%s\n", esc(msg));
        free(msg);
    }
}

void eprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(stderr, fmt, ap);
    va_end(ap);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    eprintf("vzcaps %s: %s", cmd, msg ? msg : "out of memory");
    free(msg);
    const struct cmd_spec *c = cli_find_command(cmd);
    fputs("usage: ", stderr);
    if (c)
        cli_print_synopsis(stderr, c);
    else
        fputs("vzcaps COMMAND [OPTIONS]\n", stderr);
    return EXIT_USAGE;
}

int opt_take(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

int check_family_opt(const char *cmd, const char *value)
{
    struct vzcaps_settings s;
    char why[VZCAPS_NOTE_LEN];
    memset(&s, 0, sizeof s);
    if (value && vzcaps_settings_set(&s, VZCAPS_KEY_APPLE_FAMILY_MAX, value, "--family", why, sizeof why) != 0)
        return usage_error(cmd, "--family: %s", why);
    return 0;
}

void shell_quote(FILE *out, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(s)) {
        fputs(s, out);
        return;
    }
    /* bytes a terminal would interpret never appear raw: such a value is written as $'...'
     * with \xNN escapes (bash, zsh and ksh read it byte for byte; macOS's /bin/sh is bash) */
    size_t n = strlen(s);
    bool plain = true;
    for (size_t i = 0; i < n && plain;) {
        size_t k = vzcaps_utf8_valid(s + i, n - i);
        unsigned char c = (unsigned char)s[i];
        plain = k && c >= 0x20 && c != 0x7f && !(c == 0xc2 && (unsigned char)s[i + 1] < 0xa0);
        i += k ? k : 1;
    }
    if (plain) {
        fputc('\'', out);
        for (; *s; s++) {
            if (*s == '\'')
                fputs("'\\''", out);
            else
                fputc(*s, out);
        }
        fputc('\'', out);
        return;
    }
    fputs("$'", out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '\'')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('\'', out);
}

/* ---- configuration shared with the library ---- */

/* The environment a child gets: this process's, with the options as VZCAPS_* variables and
 * at most one preload entry. Grown on the heap: no limit on the number or length of entries
 * (every other variable passes through unchanged). */
struct envbuf {
    char **v;
    size_t n, cap;
    char **owned; /* the entries env_set allocated, freed when the environment is built again */
    size_t n_owned, cap_owned;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        eprintf("vzcaps: out of memory");
        exit(EXIT_REFUSED);
    }
    return q;
}

static void env_push(struct envbuf *b, char *entry)
{
    if (b->n + 2 > b->cap)
        b->v = xrealloc(b->v, (b->cap = b->cap * 2 + 64) * sizeof *b->v);
    b->v[b->n++] = entry;
    b->v[b->n] = NULL;
}

static bool env_is(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

/* Removes every entry named name, then appends name=value. */
static void env_set(struct envbuf *b, const char *name, const char *value)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++)
        if (!env_is(b->v[r], name))
            b->v[w++] = b->v[r];
    b->n = w;
    char *entry = xrealloc(NULL, strlen(name) + strlen(value) + 2);
    sprintf(entry, "%s=%s", name, value);
    if (b->n_owned == b->cap_owned)
        b->owned = xrealloc(b->owned, (b->cap_owned = b->cap_owned * 2 + 8) * sizeof *b->owned);
    b->owned[b->n_owned++] = entry;
    env_push(b, entry);
}

static size_t preload_dropped; /* duplicate preload entries collapsed by env_build */

static void env_build(struct envbuf *b, const struct cfg_opts *o)
{
    free(b->v);
    while (b->n_owned)
        free(b->owned[--b->n_owned]);
    b->v = NULL;
    b->n = b->cap = 0;
    const char *first_preload = NULL;
    preload_dropped = 0;
    for (char **e = environ; e && *e; e++) {
        if (env_is(*e, preload_var)) {
            if (first_preload) {
                preload_dropped++;
                continue;
            }
            first_preload = *e;
        }
        env_push(b, *e);
    }
    if (!b->v)
        env_push(b, NULL), b->n = 0;
    if (o->config)
        env_set(b, "VZCAPS_CONFIG", o->config);
    if (o->profile)
        env_set(b, "VZCAPS_PROFILE", o->profile);
    if (o->chip)
        env_set(b, "VZCAPS_HOST_CHIP", o->chip);
    if (o->family)
        env_set(b, "VZCAPS_APPLE_FAMILY_MAX", o->family);
    if (o->inherit)
        env_set(b, "VZCAPS_INHERIT", "1");
}

static struct envbuf child_env;

void cli_configure(const struct cfg_opts *o, struct vzcaps_config_result *r)
{
    static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    env_build(&child_env, o);
    struct machine m;
    machine_facts(&m);
    /* settings that came from options are reported as the options, not as the variables the
     * options travel in */
    static const char *labels[16];
    size_t nl = 0;
    if (o->chip)
        labels[nl++] = "VZCAPS_HOST_CHIP", labels[nl++] = "--chip";
    if (o->family)
        labels[nl++] = "VZCAPS_APPLE_FAMILY_MAX", labels[nl++] = o->family_implied ? "vzcaps run's implied --family" : "--family";
    if (o->inherit)
        labels[nl++] = "VZCAPS_INHERIT", labels[nl++] = "--inherit";
    labels[nl] = labels[nl + 1] = NULL;
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)child_env.v;
    in.exe = o->exe;
    in.preload_var = preload_var;
    in.labels = labels;
    in.read_file = vzcaps_read_file;
    in.host.brand = m.brand[0] ? m.brand : NULL;
    in.host.brand_origin = m.brand_origin;
    in.host.physical_memory = m.memory;
    vzcaps_configure(&in, file_buf, sizeof file_buf, r);
}

void cli_configure_run(struct cfg_opts *o, struct vzcaps_config_result *r)
{
    cli_configure(o, r);
    if (!o->family && !o->profile && r->profile.state == VZCAPS_STOCK_UNCONFIGURED) {
        o->family = "auto";
        o->family_implied = true;
        cli_configure(o, r);
    }
}

void cli_configure_view(struct cfg_opts *o, struct vzcaps_config_result *r)
{
    if (o->bare)
        cli_configure(o, r);
    else
        cli_configure_run(o, r);
}

int cfg_opt_take(const char *cmd, int argc, char **argv, int *i, struct cfg_opts *o, bool with_exe)
{
    int t;
    if ((t = opt_take(argc, argv, i, "--config", &o->config)) || (t = opt_take(argc, argv, i, "--profile", &o->profile)) ||
        (with_exe && (t = opt_take(argc, argv, i, "--exe", &o->exe))) || (t = opt_take(argc, argv, i, "--chip", &o->chip)) ||
        (t = opt_take(argc, argv, i, "--family", &o->family))) {
        if (t < 0)
            return usage_error(cmd, "%s needs a value", argv[*i]);
        return 1;
    }
    if (strcmp(argv[*i], "--bare") == 0) {
        o->bare = true;
        return 1;
    }
    return 0;
}

int write_text_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    bool ok = fputs(text, f) >= 0;
    int saved = errno;
    if (fclose(f) != 0 || !ok) {
        errno = ok ? errno : saved;
        return -1;
    }
    return 0;
}

int mkdir_p(const char *path)
{
    char *buf = xformat("%s", path);
    int rc = 0;
    for (char *p = buf + 1; *p && !rc; p++)
        if (*p == '/') {
            *p = '\0';
            rc = mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
            *p = '/';
        }
    if (!rc)
        rc = mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
    int saved = errno;
    free(buf);
    errno = saved;
    return rc;
}

int view_args(const char *cmd, int argc, char **argv, struct cfg_opts *o, bool *json, const char *extra,
              const char **extra_value)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) { /* nothing follows -- (cli_validate_args) */
        int t = cfg_opt_take(cmd, argc, argv, &i, o, true);
        if (t == EXIT_USAGE)
            return t;
        if (!t && extra && (t = opt_take(argc, argv, &i, extra, extra_value)) < 0)
            return usage_error(cmd, "%s needs a value", argv[i]);
        if (t)
            continue;
        if (strcmp(argv[i], "--json") != 0)
            return usage_error(cmd, "unknown argument %s", argv[i]);
        *json = true;
    }
    return check_family_opt(cmd, o->family);
}

const char *cfg_view_text(const struct cfg_opts *o)
{
    if (o->bare)
        return "what the library does with this environment alone (--bare)";
    if (o->family_implied)
        return "what vzcaps run would do: --family auto implied, since nothing else configures vzcaps here";
    return "what vzcaps run would do (the same as the library with these settings)";
}

void cli_run_argv(char **out, size_t cap, const char *self, const struct cfg_opts *o, char *const *cmd)
{
    size_t n = 0;
    out[n++] = (char *)self;
    out[n++] = "run";
    if (o->profile)
        out[n++] = "--profile", out[n++] = (char *)o->profile;
    if (o->family)
        out[n++] = "--family", out[n++] = (char *)o->family;
    out[n++] = "--";
    for (char *const *a = cmd; *a && n + 1 < cap; a++)
        out[n++] = *a;
    out[n] = NULL;
}

char **cli_child_env(const struct cfg_opts *o, const char *library)
{
    env_build(&child_env, o);
    const char *cur = NULL;
    for (size_t i = 0; i < child_env.n; i++)
        if (env_is(child_env.v[i], preload_var))
            cur = child_env.v[i] + strlen(preload_var) + 1;
    /* other libraries stay, in their order; any copy of ours goes, then ours is appended:
     * the child loads it exactly once */
    size_t cl = cur ? strlen(cur) : 0;
    char *others = xrealloc(NULL, cl + 1), *joined = xrealloc(NULL, cl + strlen(library) + 2);
    others[0] = '\0';
    int k = cur ? vzcaps_strip_library(cur, platform_is_macos ? ":" : ": ", library_file, others, cl + 1) : 0;
    if (k < 0)
        k = 0, others[0] = '\0';
    sprintf(joined, "%s%s%s", others, k > 0 ? ":" : "", library);
    free(others);
    env_set(&child_env, preload_var, joined);
    free(joined);
    return child_env.v;
}

size_t cli_preload_duplicates(void)
{
    return preload_dropped;
}

#ifndef VZCAPS_NO_MAIN
static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("vzcaps %s\n", VZCAPS_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && !cli_find_command(argv[2])) {
            const char *hint = cli_command_suggestion(argv[2]);
            return hint ? usage_error("help", "unknown command \"%s\" (did you mean %s?)", argv[2], hint)
                        : usage_error("help", "unknown command \"%s\"", argv[2]);
        }
        print_help(argc > 2 ? argv[2] : "", stdout);
        return 0;
    }
    if (strcmp(cmd, "__man") == 0) /* hidden: the man page, generated from the command table */
        return cli_print_man(stdout), 0;
    if (strcmp(cmd, "__completions") == 0)
        return argc > 2 && cli_print_completions(stdout, argv[2]) == 0 ? 0 : usage_error("help", "__completions bash|zsh|fish");
    if (strcmp(cmd, "__probe-child") == 0) /* hidden: the children of probe and verify */
        return child_probe();
    if (strcmp(cmd, "__verify-child") == 0)
        return child_verify(argc - 1, argv + 1);
    const struct cmd_spec *c = cli_find_command(cmd);
    if (!c) {
        const char *hint = cli_command_suggestion(cmd);
        if (hint)
            eprintf("vzcaps: unknown command \"%s\" (did you mean %s?)", cmd, hint);
        else
            eprintf("vzcaps: unknown command \"%s\"", cmd);
        fprintf(stderr, "run vzcaps help for the list of commands\n");
        return EXIT_USAGE;
    }
    for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help(cmd, stdout);
            return 0;
        }
    int bad = cli_validate_args(c, argc - 1, argv + 1); /* the table decides what is an option */
    if (bad)
        return bad;
    return c->fn(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    vzcaps_guard_std_fds();
    int rc = dispatch(argc, argv);
    /* standard output is a file too: a failed write of it fails the command */
    if (vzcaps_close_stdout() != 0 && rc == 0)
        rc = 1;
    return rc;
}
#endif
