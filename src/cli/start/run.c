/* vzcaps run: one workload with the library injected and the configuration checked first: the
 * options read here, the launch itself in the launch floor (src/launch/start.c). Never: starts a workload whose configuration the library would refuse, or that would pass
 * the library on to children that cannot load it; keeps running after the exec (exit status
 * and signals are the workload's own). */
#define _XOPEN_SOURCE 700
#include "../cli.h"

#include <string.h>

int cmd_run(int argc, char **argv)
{
    struct cfg_opts o = {0};
    bool dry = false, verify = false, inherit_anyway = false;
    const char *library_opt = NULL;
    int i = 1;
    for (; i < argc; i++) {
        int t;
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if ((t = opt_take(argc, argv, &i, "--profile", &o.profile)) ||
            (t = opt_take(argc, argv, &i, "--family", &o.family)) ||
            (t = opt_take(argc, argv, &i, "--library", &library_opt))) {
            if (t < 0)
                return usage_error("run", "%s needs a value", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--inherit") == 0)
            o.inherit = true;
        else if (strcmp(argv[i], "--inherit-matching") == 0)
            o.inherit_matching = true; /* no SIP decision: nothing unmatched inherits (below) */
        else if (strcmp(argv[i], "--inherit-anyway") == 0)
            inherit_anyway = true;
        else if (strcmp(argv[i], "--dry-run") == 0)
            dry = true;
        else if (strcmp(argv[i], "--verify") == 0)
            verify = true;
        else if (argv[i][0] == '-')
            return usage_error("run", "unknown option %s", argv[i]);
        else
            break;
    }
    if (i >= argc)
        return usage_error("run", "no command given");
    if (o.inherit && o.inherit_matching)
        return usage_error("run", "--inherit and --inherit-matching exclude each other");
    int bad = check_family_opt("run", o.family);
    if (bad)
        return bad;
    struct launch_request rq = {.o = o, .dry = dry, .verify = verify, .inherit_anyway = inherit_anyway,
                                .library_opt = library_opt, .cmd = argv + i};
    return launch_run(&rq);
}
