/* One workload started with the library: the launch plan, the library found and checked for
 * the target, the configuration refused or applied, the SIP/arm64e decision for inheritance,
 * then the one execve (or, for a dry run, the line a shell runs as it is). vzcaps run and a
 * shim started as NAME both start here; where `vzcaps run` refuses (exit 125: a person asked for
 * the library explicitly), a shim starts the real program stock with the one line the library
 * says for it ("vzcaps: left stock for NAME: WHY"), so that a shim never breaks a job.
 * Never: starts a workload whose configuration the library would refuse, or that would pass
 * the library on to children that cannot load it; keeps running after the exec. */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include "../common/statsfile.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int run_target_check(const char *target, const char *library, const struct vzcaps_profile *profile, char *arch,
                     size_t arch_len, char *why, size_t why_len); /* library.c */

/* Starts the plan's program with env: returns only when it could not (126/127, one line). */
static int exec_plan(const struct launch_plan *plan, char **env)
{
    char **exec_argv = plan->exec_argv;
    const char *exec_path = plan->exec_path;
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
    eprintf("vzcaps run: cannot run %s: %s", plan->target, strerror(err));
    return err == ENOENT ? 127 : 126;
}

/* The name a shim's stock start goes by: the program the job named (its file's base name), not
 * the interpreter of its #! line the library would have been loaded into. */
static const char *stock_name(const struct launch_plan *plan)
{
    return vzcaps_basename(plan->target);
}

/* The stats log's record of a shim's stock start, as the library writes one for a process it
 * leaves stock (event left_stock, no device class: none was created), when r asks for the log;
 * the pid is the program's (the exec keeps it). Nothing is said when it cannot be written. */
static void stock_record(const struct launch_plan *plan, const struct vzcaps_config_result *r, const char *why)
{
    char path[PATH_MAX];
    if (!r->log_file[0] || !vzcaps_statsfile_dir_ok(r->log_file))
        return;
    char old[VZCAPS_PATH_MAX + 3], line[VZCAPS_STATSLOG_MAX];
    snprintf(old, sizeof old, "%s.1", r->log_file);
    struct vzcaps_statslog_record rec = {(long long)time(NULL), (long long)getpid(), 0, false, stock_name(plan),
                                         realpath(plan->target, path) ? path : plan->target, "", why};
    size_t n = vzcaps_statslog_format(&rec, line);
    int fd = vzcaps_statsfile_open(r->log_file, old);
    if (fd < 0)
        return;
    /* a file over RLIMIT_FSIZE: EFBIG, not the end of us; SIGXFSZ blocked, and the one our write
     * raised taken (ignoring it left it pending where the program's mask blocked it, and the
     * program was killed by it when it unblocked signals); one pending before stays */
    sigset_t xfsz, mask, pend;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    bool blocked = sigprocmask(SIG_BLOCK, &xfsz, &mask) == 0;
    bool was_pending = !blocked || sigpending(&pend) != 0 || sigismember(&pend, SIGXFSZ);
    int sig;
    /* one write: O_APPEND keeps concurrent records whole; a failed one is a lost record */
    if (write(fd, line, n) < 0 && errno == EFBIG && !was_pending && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ))
        sigwait(&xfsz, &sig); /* pending: returns at once */
    if (blocked)
        sigprocmask(SIG_SETMASK, &mask, NULL);
    close(fd);
}

/* A shim where run would refuse: the real program, stock (this environment as it is, no
 * library), after the library's own line (and its stats record). A dry run prints the line a
 * shell runs and records nothing. */
static int start_stock(const struct launch_request *rq, const struct launch_plan *plan,
                       const struct vzcaps_config_result *r, const char *why)
{
    if (!r->profile.quiet) /* log = quiet: no line, as the library says none */
        eprintf("vzcaps: left stock for %s: %s", stock_name(plan), why);
    if (rq->dry) {
        launch_plan_line(stdout, plan, environ, environ);
        return 0;
    }
    stock_record(plan, r, why);
    return exec_plan(plan, environ);
}

/* The library this run injects (--library, or the one next to the command) and whether the
 * image can load it: 0, or 1 (not found) / 2 (not loadable there) with the reason in why. */
static int library_for(const struct launch_request *rq, const char *image, char *library, size_t len, char *why, size_t wlen)
{
    char tried[2400], err[1400];
    if (rq->library_opt) {
        if (strlen(rq->library_opt) >= len) {
            snprintf(why, wlen, "--library: path longer than %zu bytes", len - 1);
            return 1;
        }
        snprintf(library, len, "%s", rq->library_opt);
        snprintf(tried, sizeof tried, "--library");
    }
    if (rq->library_opt ? access(library, R_OK) != 0 : find_library(library, len, tried, sizeof tried) != 0) {
        snprintf(why, wlen, "%s not found (looked at %s); reinstall vzcaps or keep the library next to the command",
                 rq->library_opt ? library : library_file, tried);
        return 1;
    }
    if (library_check(library, image, err, sizeof err) != 0) {
        snprintf(why, wlen, "library %s: %s", library, err);
        return 2;
    }
    return 0;
}

/* The configuration for the program, refused or usable; the SIP/arm64e decision when it keeps
 * the injection in children: 0 to go on, or an exit status (a shim: the program, stock). */
static int configure(struct launch_request *rq, struct launch_plan *plan, struct vzcaps_config_result *r, const char *library)
{
    char why[9000];
    cli_configure_run(&rq->o, r);
    if (r->profile.state == VZCAPS_STOCK_REFUSED) {
        if (rq->shim) {
            vzcaps_profile_describe(&r->profile, stock_name(plan), why, sizeof why); /* the library's words */
            if (!r->profile.quiet)
                eprintf("vzcaps: %s", why);
            if (rq->dry)
                return launch_plan_line(stdout, plan, environ, environ), 0;
            why[0] = '\0'; /* the record's reason: the notes, as the library joins them */
            for (size_t i = 0; i < r->profile.n_notes; i++)
                vzcaps_appendf(why, sizeof why, "%s%s", i ? "; " : "", r->profile.notes[i]);
            stock_record(plan, r, why);
            return exec_plan(plan, environ);
        }
        eprintf("vzcaps run: not starting %s: %s", rq->o.exe, r->profile.notes[0]);
        if (!r->profile.invalid)
            eprintf("vzcaps run: pass --family off to run it stock on purpose");
        return EXIT_REFUSED;
    }
    if (r->profile.state != VZCAPS_ENABLED || !r->profile.inherit)
        return 0;
    int d = launch_plan_inherit(plan, library, rq->inherit_anyway);
    const char *iwhy = plan->inherit_why;
    if (d == VZCAPS_INHERIT_REFUSED) {
        if (rq->shim)
            return snprintf(why, sizeof why, "the injection would be kept in its children: %s", iwhy), start_stock(rq, plan, r, why);
        eprintf("vzcaps run: not starting %s with the injection kept in its children: %s; drop --inherit (and inherit = yes), "
                "or pass --inherit-anyway to accept that", rq->o.exe, iwhy);
        return EXIT_REFUSED;
    }
    if (d == VZCAPS_INHERIT_NOTE)
        eprintf("vzcaps run: note: the injection is kept in %s's children: %s", rq->o.exe, iwhy);
    return 0;
}

/* The target's own check (the slice the library must have) and the chip passed under Rosetta. */
static int target_check(struct launch_request *rq, const struct launch_plan *plan, const struct vzcaps_config_result *r,
                        const char *library)
{
    char arch[32], why[400];
    int rc = run_target_check(plan->image, library, &r->profile, arch, sizeof arch, why, sizeof why);
    if (rc != 0 && rq->shim)
        return start_stock(rq, plan, r, why);
    if (rc != 0) {
        eprintf("vzcaps run: refusing %s: %s", plan->image, why);
        if (strcmp(arch, "arm64e") == 0)
            eprintf("vzcaps run: arm64e builds of the library are made only on a Mac (make dist with Xcode); "
                    "or run an arm64 build of the program (e.g. a Homebrew or python.org python instead of Apple's)");
        return rc;
    }
    const char *pass = run_chip_to_pass(arch, &r->profile.chip, rq->o.chip || getenv("VZCAPS_HOST_CHIP"));
    if (pass) {
        static char chip[sizeof r->profile.chip.name];
        snprintf(chip, sizeof chip, "%s", pass);
        rq->o.chip = chip;
        eprintf("vzcaps run: note: %s runs as x86_64 (under Rosetta on Apple silicon), where the CPU brand does not name the chip; "
                "passing VZCAPS_HOST_CHIP=\"%s\"", plan->image, chip);
    }
    return 0;
}

int launch_run(struct launch_request *rq)
{
    char **cmd = rq->cmd;
    /* the launch plan: what exec runs (a FIFO, a directory or a missing file stops here,
     * before anything reads it), its #! chain, what starts, what dyld will ignore */
    static struct launch_plan plan;
    int rc = launch_plan_make(&plan, cmd, rq->dry);
    if (rc != 0) {
        eprintf("vzcaps run: cannot run %s: %s", plan.found ? plan.target : cmd[0], plan.why);
        return rc;
    }
    if (plan.rc != 0) /* a dry run still shows the environment, for a program installed elsewhere */
        eprintf("vzcaps run: note: %s: %s%s", plan.found ? plan.target : cmd[0], plan.why, plan.found ? "" : " here");
    rq->o.exe = plan.exe;
    if (!rq->shim) /* a shim says them only when it starts the program with the library */
        launch_plan_notes(&plan, "vzcaps run");
    char library[4096], why[4000];
    int lib = library_for(rq, plan.image, library, sizeof library, why, sizeof why);
    static struct vzcaps_config_result r;
    if (lib && rq->shim) /* the configuration only names the stats log here */
        return cli_configure_run(&rq->o, &r), start_stock(rq, &plan, &r, why);
    if (lib == 1)
        eprintf("vzcaps run: %s", why);
    else if (lib)
        eprintf("vzcaps run: not starting %s: %s", rq->o.exe, why);
    if (lib)
        return EXIT_REFUSED;
    if ((rc = configure(rq, &plan, &r, library)) != 0 || r.profile.state == VZCAPS_STOCK_REFUSED ||
        (rc = target_check(rq, &plan, &r, library)) != 0)
        return rc;
    if (rq->verify && r.profile.state == VZCAPS_ENABLED && (rc = verify_gate(&rq->o)) != 0)
        return rc;
    if (rq->shim)
        launch_plan_notes(&plan, "vzcaps run");
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
    return exec_plan(&plan, env);
}
