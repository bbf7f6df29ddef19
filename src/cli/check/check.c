/* vzcaps check: what the library would do for one executable on one chip, and why; with
 * --strict, the gate a CI job trusts: the launch floor's one decision for a job that starts each
 * --exe by name (launch_job_gate), never a verdict of its own.
 * Never: a different code path from the library's (both call vzcaps_configure). */
#include "../cli.h"

#include <stdlib.h>
#include <string.h>

/* Every --exe value in argv (--exe NAME and --exe=NAME), in order, into names: how many. */
static int exe_names(int argc, char **argv, const char **names)
{
    int n = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--exe") == 0 && i + 1 < argc)
            names[n++] = argv[++i];
        else if (strncmp(argv[i], "--exe=", 6) == 0)
            names[n++] = argv[i] + 6;
    }
    return n;
}

/* One program: the view (text or JSON), and under --strict the decision's verdict: 0 when the
 * job would change an answer, 1 otherwise (or when the configuration is invalid). */
static int check_one(struct cfg_opts o, bool json, bool strict)
{
    static struct vzcaps_config_result r;
    static struct launch_job gate;
    /* --exe by its path: configured for the name the library will see there, as by name */
    struct cfg_opts named = o;
    if (o.exe && strchr(o.exe, '/'))
        named.exe = vzcaps_basename(o.exe);
    const char *near = strict && o.exe && !strchr(o.exe, '/') ? launch_client_typo(o.exe, NULL) : NULL;
    if (strict && !near) /* the options as given: the decision implies --family auto itself, for the name it configures */
        launch_job_gate(&o, o.exe, &gate);
    /* shown: what the job gets, as the gate decided it (a script's section, its interpreter's, a
     * shim's its #! line starts), else the configuration for the name given */
    const struct vzcaps_config_result *shown = strict && !near && gate.opts ? &gate.r : (cli_configure_view(&named, &r), &r);
    named = strict && !near && gate.opts ? *gate.opts : named;
    o.family = named.family, o.family_implied = named.family_implied;
    if (json)
        print_profile_json(shown, &o, strict && !near ? &gate : NULL);
    else
        print_profile_text(shown, &o);
    if (shown->profile.invalid && !json)
        eprintf("vzcaps check: %s", shown->profile.notes[0]);
    if (!strict)
        return shown->profile.invalid ? 1 : 0;
    if (near) { /* a typo of a known client is never passed: shims says the same */
        eprintf("vzcaps check: --strict: --exe \"%s\" is not on PATH and is no client vzcaps knows: did you mean %s?", o.exe,
                near);
        return 1;
    }
    if (gate.verdict != LAUNCH_GATE_CHANGES)
        launch_gate_say("vzcaps check: --strict", o.exe, gate.verdict, gate.verdict_why);
    launch_job_free(&gate);
    return gate.verdict == LAUNCH_GATE_CHANGES ? 0 : 1;
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
    const char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names)
        return eprintf("vzcaps check: out of memory"), 1;
    int k = exe_names(n, argv, names);
    if (k > 1 && !strict) {
        free(names);
        return usage_error("check", "--exe is given %d times: repeat it only with --strict, which checks every program named", k);
    }
    if (k > 1 && json) {
        free(names);
        return usage_error("check", "--exe is given %d times: --json takes one program (run check --strict --json once for each)", k);
    }
    int rc = 0;
    for (int i = 0; i < (k ? k : 1); i++) { /* every program named: one that would run stock fails the gate */
        o.exe = k ? names[i] : o.exe;
        if (check_one(o, json, strict) != 0)
            rc = 1;
    }
    free(names);
    return rc;
}
