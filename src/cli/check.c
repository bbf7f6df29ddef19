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
