/* vzcaps doctor: one screen on where this machine stands and which pitfalls apply, with the
 * library's own lines from one run of a Metal program; and vzcaps host, the one preference of
 * the machine that runs the VMs (METAL-FACTS: "Host side").
 * Never: doctor changes anything or starts anything but that one run (and csrutil on macOS);
 * host runs in a guest or on Linux, where the preference has no effect. */
#define _XOPEN_SOURCE 700
#include "../cli.h"
#include "../../common/child.h"
#include "../../common/sha256.h"
#include "../../device/metal.h"
#include "../../macho/inheritsafe.h"
#include "../../macho/macho.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#define MAX_LINES 16

/* One run of a Metal program through `vzcaps run`, and what the library said in it. */
struct library_run {
    bool ran;
    char command[700];   /* as shown */
    char status[600];    /* "exit 0", "killed by signal 9", with a timeout or a cap */
    int exit_code;       /* -1 when it did not exit */
    char lines[MAX_LINES][700];
    size_t n_lines, n_more; /* n_more: lines past MAX_LINES, counted and said, not shown */
    int configured, hooked; /* index into lines, -1 when the library did not say it */
    bool loaded, interposed; /* dyld's trace named the library loaded, its interposers registered */
    char skipped[300];   /* why it did not run */
};

/* Keeps a line of the child's standard error that vzcaps wrote (the library's "vzcaps:", run's
 * "vzcaps run:"), clipped visibly. */
static bool starts(const char *line, size_t n, const char *with)
{
    size_t k = strlen(with);
    return n >= k && strncmp(line, with, k) == 0;
}

static void keep_line(struct library_run *lr, const char *line, size_t n)
{
    /* dyld's trace (DYLD_PRINT_LIBRARIES: "dyld[PID]: <UUID> PATH"; DYLD_PRINT_INTERPOSING:
     * "dyld[PID]: LEAF has interposed 'SYM' ...", DyldRuntimeState.cpp:1272-1273) */
    const char *rest = starts(line, n, "dyld[") ? memchr(line, ' ', n) : NULL;
    size_t lib = strlen(library_file), k = rest ? n - (size_t)(++rest - line) : 0;
    lr->loaded |= k > lib + 1 && rest[0] == '<' && rest[k - lib - 1] == '/' && memcmp(rest + k - lib, library_file, lib) == 0;
    lr->interposed |= k > lib + 15 && memcmp(rest, library_file, lib) == 0 && memcmp(rest + lib, " has interposed", 15) == 0;
    if (!(n >= 7 && strncmp(line, "vzcaps", 6) == 0 && (line[6] == ':' || line[6] == ' ')))
        return;
    /* the one line (hooked ... : NOTES), or with VZCAPS_LOG=verbose the start-up line before it */
    bool hooked = lr->hooked < 0 && starts(line, n, "vzcaps: hooked ");
    bool configured = lr->configured < 0 && (hooked || starts(line, n, "vzcaps: configured for ") ||
                                             starts(line, n, "vzcaps: left stock for "));
    size_t at = lr->n_lines;
    if (at == MAX_LINES) { /* full: counted; the first line of each kind still takes the last place */
        lr->n_more++;
        if (!hooked && !configured)
            return;
        at = MAX_LINES - 1;
        if (lr->hooked == (int)at || lr->configured == (int)at)
            return; /* that place holds the other kind already */
    } else {
        lr->n_lines++;
    }
    vzcaps_clipn(line, n, 600, lr->lines[at], sizeof lr->lines[0]);
    if (configured)
        lr->configured = (int)at;
    if (hooked)
        lr->hooked = (int)at;
}

static void keep_line_cb(void *ctx, const char *line, size_t n)
{
    keep_line(ctx, line, n);
}

/* Runs `SELF run [--profile P] [--family F] -- CMD...` with standard output discarded and
 * standard error read line by line as it comes (child.c). */
static void library_run(const struct cfg_opts *o, char **cmd, struct library_run *lr, unsigned timeout)
{
    char self[1024];
    self_path(self, sizeof self);
    size_t n = 0;
    while (cmd[n])
        n++;
    char **argv = calloc(n + 10, sizeof *argv);
    if (!self[0] || !argv) {
        snprintf(lr->skipped, sizeof lr->skipped, "not run: %s", !self[0] ? "this command's own path is unknown" : "out of resources");
        free(argv);
        return;
    }
    cli_run_argv(argv, n + 10, self, o, cmd);
    for (size_t i = 0; argv[i]; i++)
        vzcaps_appendf(lr->command, sizeof lr->command, "%s%s", i ? " " : "", i == 0 ? "vzcaps" : argv[i]);
    /* the view's other choices reach the run as the variables they stand for */
    /* and dyld's trace of the library's load and interposers (read by keep_line, not shown) */
    char *env[5] = {xformat("DYLD_PRINT_LIBRARIES=1"), xformat("DYLD_PRINT_INTERPOSING=1"), NULL, NULL, NULL};
    size_t ne = 2;
    if (o->chip)
        env[ne++] = xformat("VZCAPS_HOST_CHIP=%s", o->chip);
    if (o->config)
        env[ne++] = xformat("VZCAPS_CONFIG=%s", o->config);
    static struct vzcaps_lines lines;
    lines = (struct vzcaps_lines){.line = keep_line_cb, .ctx = lr};
    struct vzcaps_child_opts co = {.argv = argv, .env_add = env, .err = {vzcaps_lines_write, &lines}, .timeout = timeout};
    struct vzcaps_child_result r;
    vzcaps_child_run(&co, &r);
    vzcaps_lines_end(&lines);
    free(argv);
    lr->ran = true;
    lr->exit_code = r.status != -1 && WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
    char *d = vzcaps_child_describe(&r, timeout, 0);
    snprintf(lr->status, sizeof lr->status, "%s", d ? d : "?");
    free(d);
    for (size_t i = 0; i < ne; i++)
        free(env[i]);
}

/* One line about a quarantined file (its mark described, what it does, the command that
 * removes it) into out, or "" when path carries no mark. */
/* path in single quotes for a shell, each ' written as '\'' */
static void quoted(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    vzcaps_appendf(out, len, "'");
    for (const char *p = path; *p; p++) {
        if (*p == '\'')
            vzcaps_appendf(out, len, "'\\''");
        else
            vzcaps_appendf(out, len, "%c", *p);
    }
    vzcaps_appendf(out, len, "'");
}

static void quarantine_line(const char *what, const char *path, char *out, size_t len)
{
    char value[1024], why[300], desc[200];
    size_t n = 0;
    out[0] = '\0';
    int q = quarantine_value(path, value, sizeof value, &n, why, sizeof why);
    if (q < 0) {
        snprintf(out, len, "%s %s: its quarantine mark cannot be read: %s", what, path, why);
        return;
    }
    if (q == 0)
        return;
    vzcaps_quarantine_describe(value, n, desc, sizeof desc);
    char q_path[4200];
    quoted(path, q_path, sizeof q_path);
    snprintf(out, len, "%s %s is %s: Gatekeeper may refuse it, and dyld may terminate a process it is injected into; "
                       "remove the mark with: xattr -d com.apple.quarantine %s",
             what, path, desc, q_path);
}

/* arm64e programs a user is likely to start (python3 on PATH, Apple's Command Line Tools
 * python3): "path (what it is)" for each one that runs as arm64e, when the library cannot
 * follow it there. */
static size_t arm64e_clients(bool lib_arm64e, char out[][600], size_t cap)
{
    if (lib_arm64e)
        return 0;
    static struct launch_lead on_path;
    const char *cands[2] = {NULL, "/Library/Developer/CommandLineTools/usr/bin/python3"};
    launch_lead_find("python3", &on_path);
    if (on_path.rc == 0)
        cands[0] = on_path.found;
    size_t n = 0;
    for (size_t k = 0; k < 2 && n < cap; k++) {
        static struct macho_file mf;
        char err[4600];
        if (!cands[k] || (k == 1 && cands[0] && strcmp(cands[0], cands[1]) == 0) || macho_load(cands[k], &mf, err, sizeof err) != 0)
            continue;
        bool arm64e = false;
        for (size_t i = 0; i < mf.n_slices; i++)
            arm64e |= strcmp(mf.slices[i].arch, "arm64e") == 0;
        if (!arm64e)
            continue;
        const char *kind = vzcaps_arm64e_client(cands[k]);
        snprintf(out[n++], 600, "%s%s (%s)", k == 0 ? "python3 on PATH, " : "", cands[k], kind ? kind : "an arm64e program");
    }
    return n;
}

/* The verify verdict cached for doctor's view (what `vzcaps verify` with the same --profile
 * cached, launch_verify_cached), into res: its path, or NULL when there is none. */
static char *cached_verify_verdict(const struct cfg_opts *view, struct vresult *res)
{
    struct child_opts o = {.profile = view->profile, .family = view->family};
    static struct vzcaps_config_result r;
    char key[65];
    return launch_verify_cached(&o, res, &r, key);
}

static void free_pitfalls(char **p, size_t n)
{
    while (n)
        free(p[--n]);
    free(p);
}

/* What doctor gathers, step by step (cmd_doctor), then says as JSON or text. */
struct doctor_facts {
    bool json, have_lib, lib_arm64e;
    struct cfg_opts o;
    const char *bundle;
    unsigned timeout;
    char **cmd; /* doctor [OPTIONS] [--bundle DIR] -- CMD [ARGS]: the run doctor records, or the bundle's workload */
    struct machine m;
    char library[1100], tried[2400], archs[128], arch_err[256], self[1024];
    struct vzcaps_config_result r;
    struct launch_plan plan_s;
    const struct launch_plan *plan; /* the launch plan shown: of --exe PROGRAM as found on PATH, else of CMD */
    struct library_run lr;
    int sip, inherit;
    const char *sip_text, *guest;
    char clients[2][600], inherit_line[600];
    size_t n_clients;
    char q_cmd[4600], q_lib[4600];
    char **pitfalls; /* every pitfall that applies is said: the list grows, none is dropped */
    size_t np, cap_pitfalls;
    char help_page[1200];
    char *hazard;       /* the macOS 14 guest hazard, "" when it does not apply */
    char *verify_cache; /* the cached verify verdict read, NULL when none */
    const char *nocopy;      /* its nocopy_mmap result: unchecked, pass, skipped, fail_stock or fail */
};

/* doctor's options and the command after --: 0, or the usage error's status. */
static int doctor_args(int argc, char **argv, struct doctor_facts *d)
{
    const char *timeout = NULL;
    const struct opt_bind binds[] = {OPT_VIEW(d->o), OPT_VALUE("--exe", &d->o.exe), OPT_FLAG("--json", &d->json),
                                     OPT_VALUE("--bundle", &d->bundle), OPT_VALUE("--timeout", &timeout), {0}};
    int bad = cli_parse("doctor", &argc, argv, binds);
    d->timeout = DOCTOR_TIMEOUT;
    d->cmd = argc > 1 ? argv + 1 : NULL;
    if (!bad && timeout)
        bad = timeout_opt("doctor", timeout, &d->timeout);
    return bad ? bad : check_family_opt("doctor", d->o.family);
}

/* The machine, the library, the configuration, the launch plan, one run of a Metal program with
 * the library, SIP, arm64e clients, quarantine. */
static void doctor_gather(struct doctor_facts *d)
{
    machine_facts(&d->m);
    { /* the verdict `vzcaps verify` cached for this view (before the view fills in its defaults) */
        static struct vresult cached;
        char *at = d->verify_cache = cached_verify_verdict(&d->o, &cached);
        const struct vcheck *c = at ? verify_nocopy_check(&cached) : NULL;
        d->nocopy = !c ? "unchecked" : c->status == VCHECK_PASS ? "pass" : c->status == VCHECK_SKIP ? "skipped"
                  : cached.nocopy_stock_failed || !c->unlocked ? "fail_stock" : "fail";
        char *source = at ? xformat("the verdict cached in %s", at) : xformat("%s", "");
        size_t len = strlen(source) + 1024; /* the text's own length is under 1024: the path is never cut */
        d->hazard = xformat("%*s", (int)len, "");
        nocopy_guest_hazard(&d->m, platform_is_macos, at ? &cached : NULL, source, d->hazard, len + 1);
        free(source);
    }
    d->have_lib = find_library(d->library, sizeof d->library, d->tried, sizeof d->tried) == 0;
    if (d->have_lib && macho_arch_list(d->library, d->archs, sizeof d->archs, d->arch_err, sizeof d->arch_err) != 0)
        snprintf(d->archs, sizeof d->archs, "%s", platform_is_macos ? "unreadable" : "ELF (Linux test build)");
    cli_configure_view(&d->o, &d->r);
    /* the launch plan shown: of --exe PROGRAM as found on PATH, else of CMD */
    if (d->o.exe ? exe_launch_plan(d->o.exe, &d->plan_s) : d->cmd && launch_plan_make(&d->plan_s, d->cmd, true) == 0 && d->plan_s.found)
        d->plan = &d->plan_s;
    if (d->plan)
        plan_inheritance(&d->plan_s, &d->r.profile);

    /* the library's own lines, from one run of a Metal program: this command's device probe
     * on macOS, or the program given after -- */
    memset(&d->lr, 0, sizeof d->lr);
    d->lr.configured = d->lr.hooked = -1;
    self_path(d->self, sizeof d->self);
    char *own_probe[] = {d->self, "__probe-child", NULL};
    if (!d->have_lib)
        snprintf(d->lr.skipped, sizeof d->lr.skipped, "not run: no library");
    else if (d->cmd)
        library_run(&d->o, d->cmd, &d->lr, d->timeout);
    else if (platform_is_macos && d->self[0])
        library_run(&d->o, own_probe, &d->lr, d->timeout);
    else
        snprintf(d->lr.skipped, sizeof d->lr.skipped, "not run: no Metal device on Linux (vzcaps doctor -- PROGRAM runs one with the library)");
    d->lib_arm64e = d->have_lib && library_has_arch(d->library, "arm64e");
    d->sip = platform_is_macos ? sip_status() : VZCAPS_SIP_UNKNOWN;
    d->sip_text = !platform_is_macos ? "not macOS" : d->sip == VZCAPS_SIP_ENABLED ? "enabled" : d->sip == VZCAPS_SIP_DISABLED ? "disabled" : "unknown";
    d->n_clients = arm64e_clients(d->lib_arm64e, d->clients, 2);
    int apple_silicon = strncmp(d->m.brand, "Apple", 5) == 0 ? 1 : strstr(d->m.brand, "Intel") ? 0 : -1;
    d->inherit = inherit_safety(platform_is_macos, apple_silicon, d->sip, d->have_lib ? d->archs : NULL, d->inherit_line, sizeof d->inherit_line);
    if (d->self[0])
        quarantine_line("the command", d->self, d->q_cmd, sizeof d->q_cmd);
    if (d->have_lib)
        quarantine_line("the library", d->library, d->q_lib, sizeof d->q_lib);
}

/* Every pitfall that applies, and the page that explains them. */
static void doctor_pitfalls(struct doctor_facts *d)
{
#define PITFALL(...) do { d->pitfalls = xgrow(d->pitfalls, &d->cap_pitfalls, d->np, sizeof *d->pitfalls); \
                          d->pitfalls[d->np++] = xformat(__VA_ARGS__); } while (0)
    if (!platform_is_macos)
        PITFALL("not macOS: only the portable parts run here (configuration, reports, inspect); probe, verify and host need a Mac");
    if (platform_is_macos && d->m.guest == 0)
        PITFALL("this is a host, not a guest: its Metal answers are already the chip's own, vzcaps changes nothing useful here");
    char near[48];
    if (!d->r.profile.chip.known && d->o.chip && vzcaps_chip_suggest(d->o.chip, near, sizeof near))
        PITFALL("host chip unknown: --chip \"%s\" is not a chip vzcaps knows (did you mean \"%s\"?)", d->o.chip, near);
    else if (!d->r.profile.chip.known && d->o.chip)
        PITFALL("host chip unknown: --chip \"%s\" is not a chip vzcaps knows (brand strings such as \"Apple M2 Pro\")", d->o.chip);
    else if (!d->r.profile.chip.known)
        PITFALL("host chip unknown: apple_family_max=auto leaves processes stock; set VZCAPS_HOST_CHIP (e.g. \"Apple M2 Pro\") or pass --chip to check");
    if (!d->have_lib)
        PITFALL("library not found (looked at %s)", d->tried);
    if (d->have_lib && platform_is_macos && !strstr(d->archs, "arm64e"))
        PITFALL("the library has no arm64e slice: arm64e processes (system binaries, Apple's python3) cannot load it; vzcaps run refuses them");
    if (d->r.profile.invalid)
        PITFALL("configuration invalid: %s", d->r.profile.notes[0]);
    for (size_t i = 0; i < d->r.profile.n_extra; i++)
        if (d->r.profile.extra[i] == 5001)
            PITFALL("extra family metal3 is claimed: MLX then fails with \"Unable to construct residency set\"; drop it for MLX workloads");
    const char *pre = getenv(preload_var);
    bool preloaded = pre && vzcaps_list_names_library(pre, platform_is_macos ? ":" : ": ", library_file);
    if (preloaded)
        PITFALL("%s in this shell already names the library: every program started here is injected; prefer vzcaps run", preload_var);
    if (preloaded && platform_is_macos && !d->lib_arm64e && d->sip != VZCAPS_SIP_ENABLED)
        PITFALL("SIP is %s: arm64e system programs started from this shell (/bin/sh, /usr/bin/env) keep %s, and dyld terminates them",
                d->sip_text, preload_var);
    for (size_t i = 0; i < d->n_clients; i++)
        PITFALL("arm64e client %s: the library has no arm64e slice, so it cannot be loaded there (vzcaps run refuses it); "
                "use an arm64 build (for Python: Homebrew's or python.org's python3)", d->clients[i]);
    if (d->hazard[0])
        PITFALL("%s", d->hazard);
    if (d->q_cmd[0])
        PITFALL("%s", d->q_cmd);
    if (d->q_lib[0])
        PITFALL("%s", d->q_lib);
    if (d->lr.ran && (d->lr.exit_code == EXIT_REFUSED || d->lr.exit_code == 126 || d->lr.exit_code == 127) && d->lr.configured < 0)
        PITFALL("%s did not start the program (exit %d; its line is shown above)", d->lr.command, d->lr.exit_code);
    else if (d->lr.ran && d->lr.exit_code < 0)
        PITFALL("%s was %s: dyld terminates a process it cannot load the library into (an arm64e program, a quarantined library)",
                d->lr.command, d->lr.status);
    else if (d->lr.ran && d->lr.configured < 0)
        PITFALL("the library said nothing in %s: the program created no Metal device (the library speaks only when it acts), "
                "it was not loaded (a program SIP protects, the hardened runtime: see vzcaps inspect), or VZCAPS_LOG=quiet",
                d->lr.command);
    else if (d->lr.ran && d->lr.hooked < 0 && strncmp(d->lr.lines[d->lr.configured], "vzcaps: configured", 18) == 0)
        PITFALL("the library was configured in %s but hooked no device class: the program created no Metal device, or its class "
                "was never reached (the lines above say which)", d->lr.command);
    if (d->lr.loaded && !d->lr.interposed)
        PITFALL("dyld loaded the library in %s but applied none of its interposers (its trace has no \"%s has interposed\" line): "
                "the Metal factories' and the exec* and posix_spawn* replacements do nothing there; devices are still hooked through "
                "initGPUFamilySupport, and with inherit = matching every child starts stock", d->lr.command, library_file);

    /* the page that explains every pitfall: installed with the docs, or beside build/ in a checkout */
    static const char *const pages[] = {"share/doc/vzcaps/troubleshooting.md", "docs/troubleshooting.md"};
    if (!installed_file(pages, 2, d->help_page, sizeof d->help_page))
        snprintf(d->help_page, sizeof d->help_page, "troubleshooting.md in vzcaps's documentation (share/doc/vzcaps/ under its prefix)");
}

static void doctor_print_json(struct doctor_facts *d)
{
    struct json j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "version", VZCAPS_VERSION);
    machine_json(&j, &d->m);
    json_str(&j, "host_chip", strcmp(d->r.profile.chip_origin, "none") ? d->r.profile.chip.name : NULL);
    json_bool(&j, "host_chip_known", d->r.profile.chip.known);
    json_str(&j, "host_chip_source", d->r.profile.chip_origin);
    json_str(&j, "library", d->have_lib ? d->library : NULL);
    json_str(&j, "library_archs", d->have_lib ? d->archs : NULL);
    json_str(&j, "config_file", d->r.config_path[0] ? d->r.config_path : NULL);
    json_str(&j, "config_error", d->r.config_error[0] ? d->r.config_error : NULL);
    json_bool(&j, "config_valid", !d->r.profile.invalid);
    json_str(&j, "profile", d->r.section[0] ? d->r.section : NULL);
    json_bool(&j, "enabled", d->r.profile.state == VZCAPS_ENABLED);
    json_str(&j, "view", d->o.bare ? "library" : "run");
    json_bool(&j, "family_implied", d->o.family_implied);
    char shim[9000];
    shim_describe(d->o.exe ? d->o.exe : d->cmd ? d->cmd[0] : NULL, shim, sizeof shim);
    json_str(&j, "shim", shim[0] ? shim : NULL);
    if (d->plan)
        launch_plan_json(&j, "launch", d->plan);
    else
        json_null(&j, "launch");
    json_int_or_null(&j, "apple_family_max", d->r.profile.state == VZCAPS_ENABLED, d->r.profile.apple_family_max);
    json_arr(&j, "notes");
    for (size_t i = 0; i < d->r.profile.n_notes; i++)
        json_str(&j, NULL, d->r.profile.notes[i]);
    json_end_arr(&j);
    json_obj(&j, "library_run");
    json_bool(&j, "ran", d->lr.ran);
    json_str(&j, "command", d->lr.ran ? d->lr.command : NULL);
    json_str(&j, "status", d->lr.ran ? d->lr.status : NULL);
    json_str(&j, "skipped", d->lr.ran ? NULL : d->lr.skipped);
    json_str(&j, "configured_line", d->lr.configured >= 0 ? d->lr.lines[d->lr.configured] : NULL);
    json_str(&j, "hooked_line", d->lr.hooked >= 0 ? d->lr.lines[d->lr.hooked] : NULL);
    json_arr(&j, "lines");
    for (size_t i = 0; i < d->lr.n_lines; i++)
        json_str(&j, NULL, d->lr.lines[i]);
    json_end_arr(&j);
    json_int(&j, "lines_not_shown", (long long)d->lr.n_more);
    json_end_obj(&j);
    json_obj(&j, "nocopy_mmap"); /* the macOS 14 guest hazard's check, from the cached verify verdict */
    json_str(&j, "verdict", d->nocopy);
    json_str(&j, "verify_cache", d->verify_cache);
    json_end_obj(&j);
    json_str(&j, "sip", d->sip_text);
    json_str(&j, "inherit_safety", inherit_safety_name(d->inherit));
    json_str(&j, "inherit_safety_why", d->inherit_line);
    json_arr(&j, "arm64e_clients");
    for (size_t i = 0; i < d->n_clients; i++)
        json_str(&j, NULL, d->clients[i]);
    json_end_arr(&j);
    json_arr(&j, "quarantined");
    if (d->q_cmd[0])
        json_str(&j, NULL, d->self);
    if (d->q_lib[0])
        json_str(&j, NULL, d->library);
    json_end_arr(&j);
    json_arr(&j, "pitfalls");
    for (size_t i = 0; i < d->np; i++)
        json_str(&j, NULL, d->pitfalls[i]);
    json_end_arr(&j);
    json_str(&j, "troubleshooting", d->np ? d->help_page : NULL);
    json_end_obj(&j);
    json_finish(&j);
}

static void doctor_print_text(struct doctor_facts *d)
{
    printf("vzcaps %s doctor\n", VZCAPS_VERSION);
    printf("system         %s %s%s%s\n", d->m.os, d->m.os_version, d->m.os_build[0] ? " build " : "", d->m.os_build);
    printf("machine        %s%s%s\n", d->guest, d->m.model[0] ? ", " : "", d->m.model);
    printf("cpu            %s (%u cpus, %.1f GiB)\n", d->m.brand[0] ? esc(d->m.brand) : "(no brand string)", d->m.ncpu, (double)d->m.memory / 1073741824.0);
    printf("library        %s%s%s%s\n", d->have_lib ? esc(d->library) : "NOT FOUND", d->have_lib ? " (" : "", d->have_lib ? d->archs : "", d->have_lib ? ")" : "");
    printf("sip            %s\n", d->sip_text);
    printf("inherit        %s\n", d->inherit_line);
    print_profile_text(&d->r, &d->o);
    if (!d->o.exe && d->plan) { /* doctor -- CMD: the plan of what it started (with --exe, the profile's lines show it) */
        char shim[9000];
        shim_describe(d->cmd[0], shim, sizeof shim);
        if (shim[0])
            printf("shim           %s\n", esc(shim));
        launch_plan_text(stdout, d->plan);
    }
    if (d->lr.ran) {
        printf("library run    %s (%s)\n", esc(d->lr.command), d->lr.status);
        for (size_t i = 0; i < d->lr.n_lines; i++)
            printf("  %s\n", esc(d->lr.lines[i]));
        if (d->lr.n_more)
            printf("  (%zu more lines from vzcaps, not shown)\n", d->lr.n_more);
        if (d->lr.n_lines == 0)
            printf("  (no line from vzcaps)\n");
    } else {
        printf("library run    %s\n", d->lr.skipped);
    }
    printf("pitfalls       %s\n", d->np ? "" : "none found");
    for (size_t i = 0; i < d->np; i++)
        printf("  ! %s\n", esc(d->pitfalls[i]));
    if (d->np)
        printf("  causes and fixes: %s\n", esc(d->help_page));
}

int cmd_doctor(int argc, char **argv)
{
    static struct doctor_facts facts;
    memset(&facts, 0, sizeof facts);
    struct doctor_facts *d = &facts;
    int bad = doctor_args(argc, argv, d);
    if (bad)
        return bad;
    if (d->bundle)
        return doctor_bundle(d->bundle, d->o.exe, d->cmd, d->timeout);
    doctor_gather(d);
    doctor_pitfalls(d);
    d->guest = machine_kind(&d->m);
    if (d->json)
        doctor_print_json(d);
    else
        doctor_print_text(d);
    free_pitfalls(d->pitfalls, d->np);
    free(d->hazard), free(d->verify_cache);
    return 0;
}

/* ---- vzcaps host: the ForceUnrestrictedDeviceFeatureLevel preference on a macOS host ---- */

static const char domain[] = "com.apple.gpusw.ParavirtualizedGraphics";
static const char key[] = "ForceUnrestrictedDeviceFeatureLevel";

static int defaults(char *const av[])
{
    return spawn_wait("/usr/bin/defaults", av);
}

int cmd_host(int argc, char **argv)
{
    if (argc != 2)
        return usage_error("host", "expected one of status, enable, disable");
    const char *verb = argv[1];
    if (strcmp(verb, "status") && strcmp(verb, "enable") && strcmp(verb, "disable"))
        return usage_error("host", "unknown action \"%s\" (status, enable or disable)", verb);
    struct machine m;
    machine_facts(&m);
    if (!platform_is_macos) {
        eprintf("vzcaps host: this is %s; the %s preference exists only on a macOS host that runs the VMs", m.os, key);
        return EXIT_NEEDS_MACOS;
    }
    if (m.guest == 1) {
        eprintf("vzcaps host: this is a guest (kern.hv_vmm_present=1); run it on the host that runs the VMs, where the preference takes effect");
        return EXIT_NEEDS_MACOS;
    }
    int rc;
    if (strcmp(verb, "status") == 0) {
        char *av[] = {"defaults", "read", (char *)domain, (char *)key, NULL};
        printf("%s %s: ", domain, key);
        fflush(stdout);
        rc = defaults(av);
        if (rc != 0)
            printf("not set\n");
        return 0;
    }
    if (strcmp(verb, "enable") == 0) {
        char *av[] = {"defaults", "write", (char *)domain, (char *)key, "-bool", "true", NULL};
        rc = defaults(av);
    } else {
        char *av[] = {"defaults", "delete", (char *)domain, (char *)key, NULL};
        rc = defaults(av);
        if (rc != 0)
            rc = 0; /* already absent */
    }
    if (rc != 0) {
        eprintf("vzcaps host: defaults failed (exit %d)", rc);
        return 1;
    }
    printf("%s %s %s. Restart running VMs for it to take effect.\n", domain, key, strcmp(verb, "enable") == 0 ? "set to true" : "deleted");
    printf("Note: Apple does not document this preference; one public measurement found it changes no answer a guest reports.\n");
    return 0;
}
