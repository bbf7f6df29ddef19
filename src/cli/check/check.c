/* vzcaps check: what the library would do for one executable on one chip, and why; with
 * --strict, the gate a CI job trusts: the launch floor's one decision for a job that starts each
 * --exe by name (launch_job_gate), never a verdict of its own.
 * Never: a different code path from the library's (both call vzcaps_configure). */
#include "../cli.h"

#include <stdlib.h>
#include <string.h>

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
    int k = 0, failed = 0;
    const char **names = calloc((size_t)argc + 1, sizeof *names);
    if (!names)
        return eprintf("vzcaps check: out of memory"), 1;
    const struct opt_bind binds[] = {OPT_VIEW(o), OPT_LIST("--exe", names, &k), OPT_FLAG("--json", &json),
                                     OPT_FLAG("--strict", &strict), {0}};
    int rc = cli_parse("check", &argc, argv, binds);
    if (!rc)
        rc = check_family_opt("check", o.family);
    if (!rc && k > 1 && !strict)
        rc = usage_error("check", "--exe is given %d times: repeat it only with --strict, which checks every program named", k);
    if (!rc && k > 1 && json)
        rc = usage_error("check", "--exe is given %d times: --json takes one program (run check --strict --json once for each)", k);
    for (int i = 0; !rc && i < (k ? k : 1); i++) { /* every program named: one that would run stock fails the gate */
        o.exe = names[i];
        failed |= check_one(o, json, strict);
    }
    free(names);
    return rc ? rc : failed;
}
