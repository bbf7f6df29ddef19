/* One workload started with the library: the launch plan, the library found and checked for
 * the target, the configuration refused or applied, the SIP/arm64e decision for inheritance,
 * then the one execve (or, for a dry run, the line a shell runs as it is). vzcaps run and a
 * shim started as NAME both start here.
 * Never: starts a workload whose configuration the library would refuse, or that would pass
 * the library on to children that cannot load it; keeps running after the exec. */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int run_target_check(const char *target, const char *library, const struct vzcaps_profile *profile, char *arch,
                     size_t arch_len); /* library.c */

int launch_run(struct launch_request *rq)
{
    char **cmd = rq->cmd;

    /* the launch plan: what exec runs (a FIFO, a directory or a missing file stops here,
     * before anything reads it), its #! chain, what starts, what dyld will ignore */
    static struct launch_plan plan;
    int prc = launch_plan_make(&plan, cmd, rq->dry);
    if (prc != 0) {
        eprintf("vzcaps run: cannot run %s: %s", plan.found ? plan.target : cmd[0], plan.why);
        return prc;
    }
    if (plan.rc != 0) /* a dry run still shows the environment, for a program installed elsewhere */
        eprintf("vzcaps run: note: %s: %s%s", plan.found ? plan.target : cmd[0], plan.why, plan.found ? "" : " here");
    rq->o.exe = plan.exe;
    const char *image = plan.image; /* the program the library is loaded into */
    launch_plan_notes(&plan, "vzcaps run");
    char library[4096], tried[2400], why[1400];
    if (rq->library_opt) {
        if (strlen(rq->library_opt) >= sizeof library) {
            eprintf("vzcaps run: --library: path longer than %zu bytes", sizeof library - 1);
            return EXIT_REFUSED;
        }
        snprintf(library, sizeof library, "%s", rq->library_opt);
        snprintf(tried, sizeof tried, "--library");
    }
    if (rq->library_opt ? access(library, R_OK) != 0 : find_library(library, sizeof library, tried, sizeof tried) != 0) {
        eprintf("vzcaps run: %s not found (looked at %s); reinstall vzcaps or keep the library next to the command",
                rq->library_opt ? library : library_file, tried);
        return EXIT_REFUSED;
    }
    if (library_check(library, image, why, sizeof why) != 0) {
        eprintf("vzcaps run: not starting %s: library %s: %s", rq->o.exe, library, why);
        return EXIT_REFUSED;
    }
    static struct vzcaps_config_result r;
    cli_configure_run(&rq->o, &r);
    if (r.profile.state == VZCAPS_STOCK_REFUSED) {
        eprintf("vzcaps run: not starting %s: %s", rq->o.exe, r.profile.notes[0]);
        if (!r.profile.invalid)
            eprintf("vzcaps run: pass --family off to run it stock on purpose");
        return EXIT_REFUSED;
    }
    if (r.profile.state == VZCAPS_ENABLED && r.profile.inherit) {
        int d = launch_plan_inherit(&plan, library, rq->inherit_anyway);
        const char *iwhy = plan.inherit_why;
        if (d == VZCAPS_INHERIT_REFUSED) {
            eprintf("vzcaps run: not starting %s with the injection kept in its children: %s; drop --inherit (and inherit = yes), "
                    "or pass --inherit-anyway to accept that", rq->o.exe, iwhy);
            return EXIT_REFUSED;
        }
        if (d == VZCAPS_INHERIT_NOTE)
            eprintf("vzcaps run: note: the injection is kept in %s's children: %s", rq->o.exe, iwhy);
    }
    char arch[32];
    int rc = run_target_check(image, library, &r.profile, arch, sizeof arch);
    if (rc != 0)
        return rc;
    const char *pass = run_chip_to_pass(arch, &r.profile.chip, rq->o.chip || getenv("VZCAPS_HOST_CHIP"));
    if (pass) {
        static char chip[sizeof r.profile.chip.name];
        snprintf(chip, sizeof chip, "%s", pass);
        rq->o.chip = chip;
        eprintf("vzcaps run: note: %s runs as x86_64 (under Rosetta on Apple silicon), where the CPU brand does not name the chip; "
                "passing VZCAPS_HOST_CHIP=\"%s\"", image, chip);
    }
    if (rq->verify && r.profile.state == VZCAPS_ENABLED && (rc = verify_gate(&rq->o)) != 0)
        return rc;

    char **exec_argv = plan.exec_argv;
    const char *exec_path = plan.exec_path;
    char **env = cli_child_env(&rq->o, library);
    if (cli_preload_duplicates())
        eprintf("vzcaps run: note: %s was set %zu more time(s); the child gets one entry (the first, as getenv sees it)",
                preload_var, cli_preload_duplicates());
    if (rq->dry) {
        /* one line a shell runs as it is: every variable this run sets or changes, the command */
        launch_plan_line(stdout, &plan, env, environ);
        launch_plan_free(&plan);
        return 0;
    }
    fflush(NULL);
    execve(exec_path, exec_argv, env); /* exactly the file checked above */
    int err = errno;
    if (err == ENOEXEC) { /* no #! line: a shell script, as execvp treats it */
        size_t n = 0;
        while (exec_argv[n])
            n++;
        char **sh = calloc(n + 2, sizeof *sh);
        if (sh) {
            sh[0] = "sh";
            sh[1] = (char *)exec_path;
            memcpy(sh + 2, exec_argv + 1, n * sizeof *sh);
            execve("/bin/sh", sh, env);
        }
        err = errno;
    }
    eprintf("vzcaps run: cannot run %s: %s", plan.target, strerror(err));
    return err == ENOENT ? 127 : 126;
}
