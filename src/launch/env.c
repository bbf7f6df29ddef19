/* The environment a launched child gets and the configuration that applies to it: this
 * process's environment with the options as VZCAPS_* variables and at most one preload entry,
 * the same configuration step the library runs (vzcaps_configure), and what a stock child keeps.
 * Owns: the child's environment. Never: changes this process's own environment. */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

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
    if (o->inherit_matching)
        env_set(b, "VZCAPS_INHERIT", "matching");
    /* bound to this pid and parent when exec'd here (run, a shim), else unclaimed (zeros: the first process that
     * reads it, the line a shell runs starts, writes its pid there); one inherited never reaches the child */
    char v[300];
    int n = o->handed_here ? snprintf(v, sizeof v, "%lld-%lld", (long long)getpid(), (long long)getppid())
                           : snprintf(v, sizeof v, "%0*d", VZCAPS_PROGRAM_CLAIM, 0);
    snprintf(v + n, sizeof v - (size_t)n, ":%s", o->handed ? o->handed : "");
    env_set(b, "VZCAPS_PROGRAM", v);
    if (!o->handed)
        b->n--, b->v[b->n] = NULL; /* env_set appended it last: taken back */
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
    if (o->config)
        labels[nl++] = "VZCAPS_CONFIG", labels[nl++] = "--config";
    if (o->chip)
        labels[nl++] = "VZCAPS_HOST_CHIP", labels[nl++] = "--chip";
    if (o->profile)
        labels[nl++] = "VZCAPS_PROFILE", labels[nl++] = "--profile";
    if (o->family)
        labels[nl++] = "VZCAPS_APPLE_FAMILY_MAX", labels[nl++] = o->family_implied ? "vzcaps run's implied --family" : "--family";
    if (o->inherit)
        labels[nl++] = "VZCAPS_INHERIT", labels[nl++] = "--inherit";
    if (o->inherit_matching)
        labels[nl++] = "VZCAPS_INHERIT", labels[nl++] = "--inherit-matching";
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
