/* vzcaps check: what the library would do for one executable on one chip, and why.
 * Never: a different code path from the library's (both call vzcaps_configure). */
#include "cli.h"
#include "../common/readfile.h"

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

/* inherit = matching: the library's own decision (vzcaps_child_decision) for exe as the child
 * of a process this configuration enables, its slices read from exe as found on PATH. */
static void print_child_decision(const struct vzcaps_config_result *r, const char *exe)
{
    static char text[VZCAPS_CONFIG_MAX_SIZE + 1], matches[VZCAPS_CONFIG_MAX_SIZE + 1];
    char err[300], path[4200] = "", why[300];
    size_t len = 0;
    bool missing = false;
    if (!r->config_path[0] || vzcaps_read_file(NULL, r->config_path, text, sizeof text, &len, &missing, err, sizeof err) != 0)
        len = 0;
    if (vzcaps_config_matches(text, len, matches, sizeof matches) < 0)
        matches[0] = '\0';
    const char *dirs = getenv("PATH");
    for (const char *d = dirs && exe && !strchr(exe, '/') ? dirs : ""; *d;) {
        size_t k = strcspn(d, ":");
        snprintf(path, sizeof path, "%.*s/%s", (int)k, d, exe);
        if (access(path, X_OK) == 0)
            break;
        path[0] = '\0';
        d += k + (d[k] == ':');
    }
    if (exe && strchr(exe, '/'))
        snprintf(path, sizeof path, "%s", exe);
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

bool exe_launch_plan(const char *exe, struct launch_plan *p)
{
    static char real[4096];
    static char *cmd[2];
    if (!exe || !*exe)
        return false;
    cmd[0] = (char *)exe;
    if (shim_real_for(exe, real, sizeof real)) {
        if (!real[0])
            return false;
        cmd[0] = real;
    }
    return launch_plan_make(p, cmd, true) == 0 && p->found;
}

void plan_inheritance(struct launch_plan *p, const struct vzcaps_profile *profile)
{
    char library[4096], tried[2400];
    if (profile->state == VZCAPS_ENABLED && profile->inherit)
        launch_plan_inherit(p, find_library(library, sizeof library, tried, sizeof tried) == 0 ? library : "", false);
}

static void print_profile_json(const struct vzcaps_config_result *r, const struct cfg_opts *o)
{
    const struct vzcaps_profile *p = &r->profile;
    bool en = p->state == VZCAPS_ENABLED;
    struct json j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_bool(&j, "valid", !p->invalid);
    json_str(&j, "view", o->bare ? "library" : "run");
    json_bool(&j, "family_implied", o->family_implied);
    char shim[9000];
    shim_describe(o->exe, shim, sizeof shim);
    json_str(&j, "shim", shim[0] ? shim : NULL);
    static struct launch_plan plan;
    if (exe_launch_plan(o->exe, &plan)) {
        plan_inheritance(&plan, p);
        launch_plan_json(&j, "launch", &plan);
    } else {
        json_null(&j, "launch");
    }
    json_bool(&j, "enabled", en);
    const char *states[] = {"unconfigured", "off", "refused", "enabled"};
    json_str(&j, "state", states[p->state]);
    if (en && p->apple_family_max)
        json_int(&j, "apple_family_max", p->apple_family_max);
    else
        json_null(&j, "apple_family_max");
    if (en && p->max_threadgroup_memory)
        json_int(&j, "max_threadgroup_memory", (long long)p->max_threadgroup_memory);
    else
        json_null(&j, "max_threadgroup_memory");
    if (en && p->recommended_working_set_size)
        json_int(&j, "recommended_working_set_size", (long long)p->recommended_working_set_size);
    else
        json_null(&j, "recommended_working_set_size");
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
    }
}

int cmd_check(int argc, char **argv)
{
    struct cfg_opts o = {0};
    bool json = false, strict = false;
    /* --strict is check's own; the rest are the view's (view_args) */
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--strict") == 0)
            strict = true;
        else
            argv[n++] = argv[i];
        if (strcmp(argv[i], "--") == 0)
            while (++i < argc)
                argv[n++] = argv[i];
    }
    int bad = view_args("check", n, argv, &o, &json, NULL, NULL);
    if (bad)
        return bad;
    static struct vzcaps_config_result r;
    cli_configure_view(&o, &r);
    if (json)
        print_profile_json(&r, &o);
    else
        print_profile_text(&r, &o);
    if (r.profile.invalid && !json)
        eprintf("vzcaps check: %s", r.profile.notes[0]);
    if (r.profile.invalid)
        return 1;
    char why[VZCAPS_NOTE_LEN + 100];
    if (strict && vzcaps_stock_reason(&r.profile, why, sizeof why)) {
        eprintf("vzcaps check: --strict: %s would run stock: %s", o.exe ? o.exe : "the program", why);
        return 1;
    }
    char real[4096];
    if (strict && o.exe && shim_real_for(o.exe, real, sizeof real) && !real[0]) { /* a shim with nothing to start */
        char shim[9000];
        shim_describe(o.exe, shim, sizeof shim);
        eprintf("vzcaps check: --strict: %s would not start: %s", o.exe, shim);
        return 1;
    }
    static struct launch_plan plan; /* the program as exec finds it here: what dyld would do with it */
    const char *inj = strict && exe_launch_plan(o.exe, &plan) ? launch_plan_injection(&plan) : "honoured";
    if (strcmp(inj, "ignored") == 0 || strcmp(inj, "removed") == 0) {
        eprintf("vzcaps check: --strict: %s would run stock: the injection is %s where the library would load (%s)%s%s", o.exe,
                inj, plan.image, plan.n_notes ? ": " : "", plan.n_notes ? plan.notes[plan.n_notes - 1] : "");
        return 1;
    }
    return 0;
}
