/* vzcaps doctor: one screen on where this machine stands and which pitfalls apply, with the
 * library's own lines from one run of a Metal program; and vzcaps host, the one preference of
 * the machine that runs the VMs (METAL-FACTS: "Host side").
 * Never: doctor changes anything or starts anything but that one run (and csrutil on macOS);
 * host runs in a guest or on Linux, where the preference has no effect. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "../common/child.h"
#include "../macho/inheritsafe.h"
#include "../macho/macho.h"

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
    char *env[3] = {NULL, NULL, NULL};
    size_t ne = 0;
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
    char on_path[4096], why[200];
    const char *cands[2] = {NULL, "/Library/Developer/CommandLineTools/usr/bin/python3"};
    if (resolve_target("python3", on_path, sizeof on_path, why, sizeof why) == 0)
        cands[0] = on_path;
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

static void free_pitfalls(char **p, size_t n)
{
    while (n)
        free(p[--n]);
    free(p);
}

int cmd_doctor(int argc, char **argv)
{
    bool json = false;
    struct cfg_opts o = {0};
    const char *bundle = NULL;
    /* --timeout SECONDS is doctor's own; the other options are the view's (view_args) */
    unsigned timeout = DOCTOR_TIMEOUT;
    static char **args; /* lives as long as the command */
    args = calloc((size_t)argc + 1, sizeof *args);
    int nargs = 0;
    if (!args) {
        eprintf("vzcaps doctor: out of memory");
        return 1;
    }
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int t = i > 0 ? opt_take(argc, argv, &i, "--timeout", &v) : 0;
        if (t < 0)
            return usage_error("doctor", "--timeout needs a value");
        if (t > 0 && timeout_opt("doctor", v, &timeout) != 0)
            return EXIT_USAGE;
        if (t == 0)
            args[nargs++] = argv[i];
        if (strcmp(argv[i], "--") == 0) /* the rest is the command's */
            for (i++; i < argc; i++)
                args[nargs++] = argv[i];
    }
    argc = nargs, argv = args;
    int bad = view_args("doctor", argc, argv, &o, &json, "--bundle", &bundle);
    if (bad)
        return bad;
    char **cmd = NULL; /* doctor [OPTIONS] [--bundle DIR] -- CMD [ARGS]: the run doctor records, or the bundle's workload */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            cmd = argv + i + 1;
            break;
        }
    if (cmd && !*cmd)
        return usage_error("doctor", "no command after --");
    if (bundle)
        return doctor_bundle(bundle, o.exe, cmd, timeout);
    struct machine m;
    machine_facts(&m);
    char library[1100], tried[2400], archs[128] = "", arch_err[256] = "";
    bool have_lib = find_library(library, sizeof library, tried, sizeof tried) == 0;
    if (have_lib && macho_arch_list(library, archs, sizeof archs, arch_err, sizeof arch_err) != 0)
        snprintf(archs, sizeof archs, "%s", platform_is_macos ? "unreadable" : "ELF (Linux test build)");
    static struct vzcaps_config_result r;
    cli_configure_view(&o, &r);
    /* the launch plan shown: of --exe PROGRAM as found on PATH, else of CMD */
    static struct launch_plan plan_s;
    const struct launch_plan *plan = NULL;
    if (o.exe ? exe_launch_plan(o.exe, &plan_s) : cmd && launch_plan_make(&plan_s, cmd, true) == 0 && plan_s.found)
        plan = &plan_s;
    if (plan)
        plan_inheritance(&plan_s, &r.profile);

    /* the library's own lines, from one run of a Metal program: this command's device probe
     * on macOS, or the program given after -- */
    static struct library_run lr;
    memset(&lr, 0, sizeof lr);
    lr.configured = lr.hooked = -1;
    char self[1024];
    self_path(self, sizeof self);
    char *own_probe[] = {self, "__probe-child", NULL};
    if (!have_lib)
        snprintf(lr.skipped, sizeof lr.skipped, "not run: no library");
    else if (cmd)
        library_run(&o, cmd, &lr, timeout);
    else if (platform_is_macos && self[0])
        library_run(&o, own_probe, &lr, timeout);
    else
        snprintf(lr.skipped, sizeof lr.skipped, "not run: no Metal device on Linux (vzcaps doctor -- PROGRAM runs one with the library)");
    bool lib_arm64e = have_lib && library_has_arch(library, "arm64e");
    int sip = platform_is_macos ? sip_status() : VZCAPS_SIP_UNKNOWN;
    const char *sip_text = !platform_is_macos ? "not macOS" : sip == VZCAPS_SIP_ENABLED ? "enabled" : sip == VZCAPS_SIP_DISABLED ? "disabled" : "unknown";
    char clients[2][600], inherit_line[600];
    size_t n_clients = arm64e_clients(lib_arm64e, clients, 2);
    int apple_silicon = strncmp(m.brand, "Apple", 5) == 0 ? 1 : strstr(m.brand, "Intel") ? 0 : -1;
    int inherit = inherit_safety(platform_is_macos, apple_silicon, sip, have_lib ? archs : NULL, inherit_line, sizeof inherit_line);
    char q_cmd[4600] = "", q_lib[4600] = "";
    if (self[0])
        quarantine_line("the command", self, q_cmd, sizeof q_cmd);
    if (have_lib)
        quarantine_line("the library", library, q_lib, sizeof q_lib);

    /* every pitfall that applies is said: the list grows, none is dropped */
    char **pitfalls = NULL;
    size_t np = 0, cap_pitfalls = 0;
#define PITFALL(...) do { pitfalls = xgrow(pitfalls, &cap_pitfalls, np, sizeof *pitfalls); \
                          pitfalls[np++] = xformat(__VA_ARGS__); } while (0)
    if (!platform_is_macos)
        PITFALL("not macOS: only the portable parts run here (configuration, reports, inspect); probe, verify and host need a Mac");
    if (platform_is_macos && m.guest == 0)
        PITFALL("this is a host, not a guest: its Metal answers are already the chip's own, vzcaps changes nothing useful here");
    char near[48];
    if (!r.profile.chip.known && o.chip && vzcaps_chip_suggest(o.chip, near, sizeof near))
        PITFALL("host chip unknown: --chip \"%s\" is not a chip vzcaps knows (did you mean \"%s\"?)", o.chip, near);
    else if (!r.profile.chip.known && o.chip)
        PITFALL("host chip unknown: --chip \"%s\" is not a chip vzcaps knows (brand strings such as \"Apple M2 Pro\")", o.chip);
    else if (!r.profile.chip.known)
        PITFALL("host chip unknown: apple_family_max=auto leaves processes stock; set VZCAPS_HOST_CHIP (e.g. \"Apple M2 Pro\") or pass --chip to check");
    if (!have_lib)
        PITFALL("library not found (looked at %s)", tried);
    if (have_lib && platform_is_macos && !strstr(archs, "arm64e"))
        PITFALL("the library has no arm64e slice: arm64e processes (system binaries, Apple's python3) cannot load it; vzcaps run refuses them");
    if (r.profile.invalid)
        PITFALL("configuration invalid: %s", r.profile.notes[0]);
    for (size_t i = 0; i < r.profile.n_extra; i++)
        if (r.profile.extra[i] == 5001)
            PITFALL("extra family metal3 is claimed: MLX then fails with \"Unable to construct residency set\"; drop it for MLX workloads");
    const char *pre = getenv(preload_var);
    if (pre && strstr(pre, library_file))
        PITFALL("%s in this shell already names the library: every program started here is injected; prefer vzcaps run", preload_var);
    if (pre && strstr(pre, library_file) && platform_is_macos && !lib_arm64e && sip != VZCAPS_SIP_ENABLED)
        PITFALL("SIP is %s: arm64e system programs started from this shell (/bin/sh, /usr/bin/env) keep %s, and dyld terminates them",
                sip_text, preload_var);
    for (size_t i = 0; i < n_clients; i++)
        PITFALL("arm64e client %s: the library has no arm64e slice, so it cannot be loaded there (vzcaps run refuses it); "
                "use an arm64 build (for Python: Homebrew's or python.org's python3)", clients[i]);
    if (q_cmd[0])
        PITFALL("%s", q_cmd);
    if (q_lib[0])
        PITFALL("%s", q_lib);
    if (lr.ran && (lr.exit_code == EXIT_REFUSED || lr.exit_code == 126 || lr.exit_code == 127) && lr.configured < 0)
        PITFALL("%s did not start the program (exit %d; its line is shown above)", lr.command, lr.exit_code);
    else if (lr.ran && lr.exit_code < 0)
        PITFALL("%s was %s: dyld terminates a process it cannot load the library into (an arm64e program, a quarantined library)",
                lr.command, lr.status);
    else if (lr.ran && lr.configured < 0)
        PITFALL("the library said nothing in %s: the program created no Metal device (the library speaks only when it acts), "
                "it was not loaded (a program SIP protects, the hardened runtime: see vzcaps inspect), or VZCAPS_LOG=quiet",
                lr.command);
    else if (lr.ran && lr.hooked < 0 && strncmp(lr.lines[lr.configured], "vzcaps: configured", 18) == 0)
        PITFALL("the library was configured in %s but hooked no device class: the program created no Metal device, or its class "
                "was never reached (the lines above say which)", lr.command);

    /* the page that explains every pitfall: installed with the docs, or beside build/ in a checkout */
    static const char *const pages[] = {"share/doc/vzcaps/troubleshooting.md", "docs/troubleshooting.md"};
    char help_page[1200];
    if (!installed_file(pages, 2, help_page, sizeof help_page))
        snprintf(help_page, sizeof help_page, "troubleshooting.md in vzcaps's documentation (share/doc/vzcaps/ under its prefix)");

    const char *guest = machine_kind(&m);
    if (json) {
        struct json j;
        json_begin(&j, stdout);
        json_obj(&j, NULL);
        json_str(&j, "version", VZCAPS_VERSION);
        machine_json(&j, &m);
        json_str(&j, "host_chip", strcmp(r.profile.chip_origin, "none") ? r.profile.chip.name : NULL);
        json_bool(&j, "host_chip_known", r.profile.chip.known);
        json_str(&j, "host_chip_source", r.profile.chip_origin);
        json_str(&j, "library", have_lib ? library : NULL);
        json_str(&j, "library_archs", have_lib ? archs : NULL);
        json_str(&j, "config_file", r.config_path[0] ? r.config_path : NULL);
        json_str(&j, "config_error", r.config_error[0] ? r.config_error : NULL);
        json_bool(&j, "config_valid", !r.profile.invalid);
        json_str(&j, "profile", r.section[0] ? r.section : NULL);
        json_bool(&j, "enabled", r.profile.state == VZCAPS_ENABLED);
        json_str(&j, "view", o.bare ? "library" : "run");
        json_bool(&j, "family_implied", o.family_implied);
        char shim[9000];
        shim_describe(o.exe ? o.exe : cmd ? cmd[0] : NULL, shim, sizeof shim);
        json_str(&j, "shim", shim[0] ? shim : NULL);
        if (plan)
            launch_plan_json(&j, "launch", plan);
        else
            json_null(&j, "launch");
        if (r.profile.state == VZCAPS_ENABLED)
            json_int(&j, "apple_family_max", r.profile.apple_family_max);
        else
            json_null(&j, "apple_family_max");
        json_arr(&j, "notes");
        for (size_t i = 0; i < r.profile.n_notes; i++)
            json_str(&j, NULL, r.profile.notes[i]);
        json_end_arr(&j);
        json_obj(&j, "library_run");
        json_bool(&j, "ran", lr.ran);
        json_str(&j, "command", lr.ran ? lr.command : NULL);
        json_str(&j, "status", lr.ran ? lr.status : NULL);
        json_str(&j, "skipped", lr.ran ? NULL : lr.skipped);
        json_str(&j, "configured_line", lr.configured >= 0 ? lr.lines[lr.configured] : NULL);
        json_str(&j, "hooked_line", lr.hooked >= 0 ? lr.lines[lr.hooked] : NULL);
        json_arr(&j, "lines");
        for (size_t i = 0; i < lr.n_lines; i++)
            json_str(&j, NULL, lr.lines[i]);
        json_end_arr(&j);
        json_int(&j, "lines_not_shown", (long long)lr.n_more);
        json_end_obj(&j);
        json_str(&j, "sip", sip_text);
        json_str(&j, "inherit_safety", inherit_safety_name(inherit));
        json_str(&j, "inherit_safety_why", inherit_line);
        json_arr(&j, "arm64e_clients");
        for (size_t i = 0; i < n_clients; i++)
            json_str(&j, NULL, clients[i]);
        json_end_arr(&j);
        json_arr(&j, "quarantined");
        if (q_cmd[0])
            json_str(&j, NULL, self);
        if (q_lib[0])
            json_str(&j, NULL, library);
        json_end_arr(&j);
        json_arr(&j, "pitfalls");
        for (size_t i = 0; i < np; i++)
            json_str(&j, NULL, pitfalls[i]);
        json_end_arr(&j);
        json_str(&j, "troubleshooting", np ? help_page : NULL);
        json_end_obj(&j);
        json_finish(&j);
        free_pitfalls(pitfalls, np);
        return 0;
    }
    printf("vzcaps %s doctor\n", VZCAPS_VERSION);
    printf("system         %s %s%s%s\n", m.os, m.os_version, m.os_build[0] ? " build " : "", m.os_build);
    printf("machine        %s%s%s\n", guest, m.model[0] ? ", " : "", m.model);
    printf("cpu            %s (%u cpus, %.1f GiB)\n", m.brand[0] ? esc(m.brand) : "(no brand string)", m.ncpu, (double)m.memory / 1073741824.0);
    printf("library        %s%s%s%s\n", have_lib ? esc(library) : "NOT FOUND", have_lib ? " (" : "", have_lib ? archs : "", have_lib ? ")" : "");
    printf("sip            %s\n", sip_text);
    printf("inherit        %s\n", inherit_line);
    print_profile_text(&r, &o);
    if (!o.exe && plan) { /* doctor -- CMD: the plan of what it started (with --exe, the profile's lines show it) */
        char shim[9000];
        shim_describe(cmd[0], shim, sizeof shim);
        if (shim[0])
            printf("shim           %s\n", esc(shim));
        launch_plan_text(stdout, plan);
    }
    if (lr.ran) {
        printf("library run    %s (%s)\n", esc(lr.command), lr.status);
        for (size_t i = 0; i < lr.n_lines; i++)
            printf("  %s\n", esc(lr.lines[i]));
        if (lr.n_more)
            printf("  (%zu more lines from vzcaps, not shown)\n", lr.n_more);
        if (lr.n_lines == 0)
            printf("  (no line from vzcaps)\n");
    } else {
        printf("library run    %s\n", lr.skipped);
    }
    printf("pitfalls       %s\n", np ? "" : "none found");
    for (size_t i = 0; i < np; i++)
        printf("  ! %s\n", esc(pitfalls[i]));
    if (np)
        printf("  causes and fixes: %s\n", esc(help_page));
    free_pitfalls(pitfalls, np);
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
