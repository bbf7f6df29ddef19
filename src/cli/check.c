/* vzcaps check: what the library would do for one executable on one chip, and why.
 * Never: a different code path from the library's (both call vzcaps_configure). */
#include "cli.h"
#include "../common/readfile.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    /* --exe by its path: configured for the name the library will see there, as by name */
    struct cfg_opts named = o;
    if (o.exe && strchr(o.exe, '/'))
        named.exe = vzcaps_basename(o.exe);
    cli_configure_view(&named, &r);
    o.family = named.family, o.family_implied = named.family_implied;
    if (json)
        print_profile_json(&r, &o);
    else
        print_profile_text(&r, &o);
    if (r.profile.invalid && !json)
        eprintf("vzcaps check: %s", r.profile.notes[0]);
    if (r.profile.invalid)
        return 1;
    if (!strict)
        return 0;
    /* the gate: what the job will start, as PATH resolves --exe here, and what the library does there */
    static struct launch_facts f;
    static struct launch_plan plan;
    static char *cmd[2];
    cmd[0] = (char *)o.exe;
    if (o.exe && *o.exe) {
        launch_facts_gather(&f, cmd);
        launch_decide(&f, &plan, true);
    }
    char why[9000];
    enum launch_gate g = launch_gate(&r.profile, o.exe && *o.exe ? &f : NULL, o.exe && *o.exe ? &plan : NULL, why, sizeof why);
    if (g != LAUNCH_GATE_CHANGES)
        launch_gate_say("vzcaps check: --strict", o.exe, g, why);
    launch_plan_free(&plan);
    return g == LAUNCH_GATE_CHANGES ? 0 : 1;
}
