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
    const struct opt_bind binds[] = {
        OPT_VALUE("--profile", &o.profile), OPT_VALUE("--family", &o.family), OPT_VALUE("--library", &library_opt),
        OPT_FLAG("--inherit", &o.inherit), OPT_FLAG("--inherit-matching", &o.inherit_matching),
        OPT_FLAG("--inherit-anyway", &inherit_anyway), OPT_FLAG("--dry-run", &dry), OPT_FLAG("--verify", &verify), {0}};
    int bad = cli_parse("run", &argc, argv, binds);
    if (bad)
        return bad;
    if (argc < 2)
        return usage_error("run", "no command given");
    if (o.inherit && o.inherit_matching) /* --inherit-matching: no SIP decision, nothing unmatched inherits */
        return usage_error("run", "--inherit and --inherit-matching exclude each other");
    if ((bad = check_family_opt("run", o.family)))
        return bad;
    struct launch_request rq = {.o = o, .dry = dry, .verify = verify, .inherit_anyway = inherit_anyway,
                                .library_opt = library_opt, .cmd = argv + 1};
    return launch_run(&rq);
}
