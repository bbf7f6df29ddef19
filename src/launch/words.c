/* The launch plan and the configuration in words, once: the text block and the --json member
 * check, doctor and inspect show, the notes run and launchd print, the one line a POSIX shell
 * runs as it is (run --dry-run), and check's view of the configuration.
 * Owns: every wording of the plan. Never: decides anything (plan.c, the core). */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the ELF machine the rig's library is built for (EM_X86_64, EM_AARCH64) */
#if defined(__x86_64__)
#define ELF_MACHINE 62u
#elif defined(__aarch64__)
#define ELF_MACHINE 183u
#else
#define ELF_MACHINE 0u
#endif

void shell_quote(FILE *out, const char *s)
{
    /* a leading '=' stays quoted: zsh (macOS's default shell) expands =NAME to NAME's path */
    if (*s && *s != '=' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(s)) {
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

/* NAME=value with the value quoted: an assignment word a POSIX shell reads as one. */
static void shell_assignment(FILE *out, const char *entry)
{
    const char *eq = strchr(entry, '=');
    fprintf(out, "%.*s=", (int)(eq - entry), entry);
    shell_quote(out, eq + 1);
}

void launch_plan_notes(const struct launch_plan *p, const char *who)
{
    for (size_t i = 0; i < p->n_notes; i++)
        eprintf("%s: %s: %s", who, p->warning[i] ? "warning" : "note", p->notes[i]);
}

void launch_plan_line(FILE *out, const struct launch_plan *p, char *const *env, char *const *base)
{
    /* env(1) takes every leading word with '=' for an assignment (macOS's as FreeBSD's: env.c),
     * `--` included, so a program word with '=' cannot follow env: then the shell's own
     * assignments start it, the program as a path (a word with '/' before '=' is no assignment) */
    const char *prog = p->exec_argv[0];
    bool with_env = !strchr(prog, '=');
    if (with_env)
        fputs("env", out);
    bool first = true;
    for (char *const *e = env; *e; e++) {
        bool same = false;
        for (char *const *c = base; c && *c && !same; c++)
            same = strcmp(*c, *e) == 0;
        if (same || !strchr(*e, '='))
            continue; /* unchanged */
        if (!first || with_env)
            fputc(' ', out);
        first = false;
        if (with_env)
            shell_quote(out, *e);
        else
            shell_assignment(out, *e);
    }
    if (!first || with_env)
        fputc(' ', out);
    /* found on PATH, the path exec runs always holds a '/' */
    shell_quote(out, (p->by_path || p->sh_why || vzcaps_shell_word_is_assignment(prog)) && strchr(p->exec_path, '/') ? p->exec_path
                                                                                                           : prog);
    for (char *const *a = p->exec_argv + 1; *a; a++) {
        fputc(' ', out);
        shell_quote(out, *a);
    }
    fputc('\n', out);
}

static const char *inherit_word(int d)
{
    return d == VZCAPS_INHERIT_REFUSED ? "refused" : d == VZCAPS_INHERIT_NOTE ? "allowed, with a caveat" : "allowed";
}

void launch_plan_text(FILE *out, const struct launch_plan *p)
{
    if (p->rc != 0) {
        fprintf(out, "launch         %s: %s\n", esc(p->found ? p->target : p->cmd[0]), esc(p->why));
        return;
    }
    fprintf(out, "launch         %s", esc(p->target));
    if (p->script)
        fprintf(out, " (a script: %s)", esc(p->line));
    fprintf(out, "\n  starts       %s\n", esc(p->exec_path));
    fprintf(out, "  library in   %s: %s%s%s\n", esc(p->image), launch_plan_injection(p), p->injection_why[0] ? ", " : "",
            esc(p->injection_why));
    if (p->inherit_decided)
        fprintf(out, "  inheritance  %s%s%s\n", inherit_word(p->inherit), p->inherit_why[0] ? ": " : "", esc(p->inherit_why));
    for (size_t i = 0; i < p->n_notes; i++)
        fprintf(out, "  - %s: %s\n", p->warning[i] ? "warning" : "note", esc(p->notes[i]));
}

void launch_plan_json(struct json *j, const char *key, const struct launch_plan *p)
{
    json_obj(j, key);
    json_str(j, "program", p->found ? p->target : NULL);
    json_str(j, "error", p->rc ? p->why : NULL);
    json_str(j, "script_line", p->rc == 0 && p->script ? p->line : NULL);
    json_str(j, "starts", p->rc == 0 ? p->exec_path : NULL);
    json_str(j, "image", p->rc == 0 ? p->image : NULL);
    json_str(j, "injection", launch_plan_injection(p));
    json_bool(j, "setuid_or_setgid", p->setugid);
    if (p->inherit_decided) {
        json_obj(j, "inheritance");
        json_str(j, "decision", inherit_word(p->inherit));
        json_str(j, "reason", p->inherit_why[0] ? p->inherit_why : NULL);
        json_end_obj(j);
    } else {
        json_null(j, "inheritance");
    }
    json_arr(j, "notes");
    for (size_t i = 0; i < p->n_notes; i++)
        json_str(j, NULL, p->notes[i]);
    json_end_arr(j);
    json_end_obj(j);
}

/* inherit = matching: the library's own decision (vzcaps_child_decision) for exe as the child
 * of a process this configuration enables, its slices read from exe as execvp finds it. */
static void print_child_decision(const struct vzcaps_config_result *r, const char *exe)
{
    static char text[VZCAPS_CONFIG_MAX_SIZE + 1], matches[VZCAPS_CONFIG_MAX_SIZE + 1];
    char err[300], why[300];
    size_t len = 0;
    bool missing = false;
    if (!r->config_path[0] || vzcaps_read_file(NULL, r->config_path, text, sizeof text, &len, &missing, err, sizeof err) != 0)
        len = 0;
    if (vzcaps_config_matches(text, len, matches, sizeof matches) < 0)
        matches[0] = '\0';
    static struct launch_lead l; /* exe as execvp finds it (a shim there is what the child starts) */
    const char *path = exe ? (launch_lead_find(exe, &l), l.shim[0] ? l.shim : l.found) : "";
    unsigned char head[VZCAPS_SLICES_HEAD];
    ssize_t n = -1;
    int fd = path[0] ? open(path, O_RDONLY | O_NONBLOCK) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        n = read(fd, head, sizeof head);
    if (fd >= 0)
        close(fd);
    char library[1100], tried[2400];
    bool arm64e = platform_is_macos && find_library(library, sizeof library, tried, sizeof tried) == 0 &&
                  library_has_arch(library, "arm64e");
    enum vzcaps_slices sl = n > 0 ? vzcaps_slices_of(head, (size_t)n, platform_is_macos ? 0 : ELF_MACHINE) : VZCAPS_SLICES_NONE_KNOWN;
    int d = vzcaps_child_decision(path[0] ? path : exe ? exe : "", exe ? exe : "", matches, sl, arm64e, why, sizeof why);
    printf("  as a child (matching)         %s: %s\n", d == VZCAPS_CHILD_KEEP ? "keeps the library" : "starts stock", esc(why));
}

void print_profile_json(const struct vzcaps_config_result *r, const struct cfg_opts *o, const struct launch_job *gate)
{
    const struct vzcaps_profile *p = &r->profile;
    bool en = p->state == VZCAPS_ENABLED;
    struct json j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_bool(&j, "valid", !p->invalid);
    if (gate) { /* check --strict: the decision's verdict */
        json_str(&j, "verdict", gate->verdict == LAUNCH_GATE_CHANGES ? "unlocked" : "stock");
        json_str(&j, "reason", gate->verdict_why);
    }
    json_str(&j, "view", o->bare ? "library" : "run");
    json_bool(&j, "family_implied", o->family_implied);
    char shim[9000];
    shim_describe(o->exe, shim, sizeof shim);
    json_str(&j, "shim", shim[0] ? shim : NULL);
    static struct launch_plan plan;
    if (exe_launch_plan(o->exe, &plan)) {
        plan_inheritance(&plan, p);
        launch_plan_json(&j, "launch", &plan);
        launch_plan_free(&plan);
    } else {
        json_null(&j, "launch");
    }
    json_bool(&j, "enabled", en);
    const char *states[] = {"unconfigured", "off", "refused", "enabled"};
    json_str(&j, "state", states[p->state]);
    json_int_or_null(&j, "apple_family_max", en && p->apple_family_max, p->apple_family_max);
    json_int_or_null(&j, "max_threadgroup_memory", en && p->max_threadgroup_memory, (long long)p->max_threadgroup_memory);
    json_int_or_null(&j, "recommended_working_set_size", en && p->recommended_working_set_size,
                     (long long)p->recommended_working_set_size);
    json_arr(&j, "extra_families");
    for (size_t i = 0; en && i < p->n_extra; i++)
        json_int(&j, NULL, p->extra[i]);
    json_end_arr(&j);
    json_str(&j, "host_chip", strcmp(p->chip_origin, "none") ? p->chip.name : NULL);
    json_bool(&j, "host_chip_known", p->chip.known);
    json_str(&j, "host_chip_source", strcmp(p->chip_origin, "none") ? p->chip_origin : NULL);
    json_str(&j, "profile", r->section[0] ? r->section : NULL);
    json_str(&j, "config_file", r->config_path[0] ? r->config_path : NULL);
    json_str(&j, "config_error", r->config_error[0] ? r->config_error : NULL);
    json_arr(&j, "config_search");
    for (int i = 0; i < r->n_searched; i++)
        json_str(&j, NULL, r->searched[i]);
    json_end_arr(&j);
    json_bool(&j, "inherit", p->inherit);
    /* the scope as the library will apply it (defaults included) */
    const char *lists[2] = {p->callers, p->stock_callers}, *keys[2] = {"callers", "stock_callers"};
    for (int k = 0; k < 2; k++) {
        json_arr(&j, keys[k]);
        char glob[VZCAPS_GLOBS_LEN];
        for (const char *g = lists[k]; *g;) {
            size_t n = strcspn(g, " ");
            snprintf(glob, sizeof glob, "%.*s", (int)n, g);
            json_str(&j, NULL, glob);
            g += n + (g[n] == ' ');
        }
        json_end_arr(&j);
    }
    json_bool(&j, "unsafe_beyond_hardware", p->unsafe);
    json_arr(&j, "notes");
    for (size_t i = 0; i < p->n_notes; i++)
        json_str(&j, NULL, p->notes[i]);
    json_end_arr(&j);
    json_end_obj(&j);
    json_finish(&j);
}

/* The file the configuration came from, or the one refused and why, or where none was found:
 * on the line itself, not only under "why". */
static void print_config_file_line(const struct vzcaps_config_result *r)
{
    if (r->config_path[0] && r->config_error[0]) {
        printf("config file    %s (refused: %s)", esc(r->config_path), esc(r->config_error));
    } else if (r->config_path[0]) {
        printf("config file    %s", esc(r->config_path));
        if (r->section[0])
            printf(" [%s]", r->section);
    } else if (!r->n_searched) {
        printf("config file    (not looked for: the configuration was refused first)");
    } else {
        printf("config file    (none found; looked at");
        for (int i = 0; i < r->n_searched; i++)
            printf("%s %s", i ? "," : "", esc(r->searched[i]));
        printf(")");
    }
}

const char *cfg_view_text(const struct cfg_opts *o)
{
    if (o->bare)
        return "what the library does with this environment alone (--bare)";
    if (o->family_implied)
        return "what vzcaps run would do: --family auto implied, since nothing else configures vzcaps here";
    return "what vzcaps run would do (the same as the library with these settings)";
}

void print_profile_text(const struct vzcaps_config_result *r, const struct cfg_opts *o)
{
    const struct vzcaps_profile *p = &r->profile;
    const char *exe = o->exe;
    const char *states[] = {"stock (nothing configured)", "stock (off)", "stock (refused)", "enabled"};
    printf("configuration  %s\n", p->invalid ? "INVALID" : "valid");
    printf("view           %s\n", cfg_view_text(o));
    printf("executable     %s\n", exe ? esc(exe) : "(any; no --exe given)");
    char shim[9000];
    shim_describe(exe, shim, sizeof shim);
    if (shim[0])
        printf("shim           %s\n", esc(shim));
    print_config_file_line(r);
    printf("\nhost chip      ");
    if (!p->chip_origin[0])
        printf("(not evaluated: the configuration was refused first)\n");
    else if (strcmp(p->chip_origin, "none") == 0)
        printf("(unknown: %s)\n", "not detected; give --chip or set VZCAPS_HOST_CHIP");
    else
        printf("%s%s (from %s)\n", esc(p->chip.name), p->chip.known ? "" : " (not recognised)", esc(p->chip_origin));
    printf("effect         %s\n", states[p->state]);
    if (p->state == VZCAPS_ENABLED) {
        printf("  apple_family_max              %lld (%s)\n", (long long)p->apple_family_max,
               vzcaps_family_name(p->apple_family_max));
        if (p->max_threadgroup_memory)
            printf("  max_threadgroup_memory        %llu (floor)\n", (unsigned long long)p->max_threadgroup_memory);
        if (p->recommended_working_set_size)
            printf("  recommended_working_set_size  %llu (floor)\n", (unsigned long long)p->recommended_working_set_size);
        for (size_t i = 0; i < p->n_extra; i++)
            printf("  extra family                  %lld (%s)\n", (long long)p->extra[i], vzcaps_family_name(p->extra[i]));
        printf("  inherit                       %s\n", p->inherit ? "yes (children keep the library)" : p->inherit_matching ?
               "matching (only children a config section matches, that can load the library, keep it)" : "no (children start stock)");
        if (p->inherit_matching)
            print_child_decision(r, exe);
        printf("  callers                       %s\n", p->callers[0] ? p->callers : "none");
        printf("  stock_callers                 %s%s\n", p->stock_callers[0] ? p->stock_callers : "none",
               p->scope_default ? " (default: PyTorch MPS keeps stock answers)" : "");
    }
    if (p->n_notes) {
        printf("why\n");
        for (size_t i = 0; i < p->n_notes; i++)
            printf("  - %s\n", esc(p->notes[i]));
    }
    /* what run would start for the executable as found here, and what dyld would do there */
    static struct launch_plan plan;
    if (exe_launch_plan(exe, &plan)) {
        plan_inheritance(&plan, p);
        launch_plan_text(stdout, &plan);
        launch_plan_free(&plan);
    }
}

void launch_gate_say(const char *who, const char *exe, enum launch_gate g, const char *why)
{
    const char *verdict = g == LAUNCH_GATE_CHANGES ? "change an answer" : g == LAUNCH_GATE_STOCK ? "run stock" : "not start";
    eprintf("%s: %s would %s: %s", who, exe ? exe : "the program", verdict, why);
}
