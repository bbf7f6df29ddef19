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

/* Starts the plan's program with env: returns only when it could not (126/127, one line). */
static int exec_plan(const struct launch_plan *plan, char **env)
{
    fflush(NULL);
    execve(plan->exec_path, plan->exec_argv, env); /* exactly the file checked above (/bin/sh for one the kernel runs no image for) */
    int err = errno;
    eprintf("vzcaps run: cannot run %s: %s", plan->target, strerror(err));
    return err == ENOENT ? 127 : 126;
}

/* The name a shim's stock start goes by: the name the configuration is for (a #! script's own
 * name, docs/config.md), as the library's hooked record names it. */
static const char *stock_name(const struct launch_plan *plan)
{
    return plan->exe;
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

/* A shim whose configuration is refused: the library's own words, then the program, stock. */
static int shim_refused(const struct launch_request *rq, const struct launch_job *j)
{
    char why[9000];
    const struct vzcaps_config_result *r = &j->r;
    vzcaps_profile_describe(&r->profile, stock_name(&j->plan), why, sizeof why); /* the library's words */
    if (!r->profile.quiet)
        eprintf("vzcaps: %s", why);
    if (rq->dry)
        return launch_plan_line(stdout, &j->plan, environ, environ), 0;
    why[0] = '\0'; /* the record's reason: the notes, as the library joins them */
    for (size_t i = 0; i < r->profile.n_notes; i++)
        vzcaps_appendf(why, sizeof why, "%s%s", i ? "; " : "", r->profile.notes[i]);
    stock_record(&j->plan, r, why);
    return exec_plan(&j->plan, environ);
}

/* Where the decision stopped short of the library: a shim starts the program stock; run says
 * why and exits 125 (a person asked for the library). */
static int refused(const struct launch_request *rq, const struct launch_job *j)
{
    if (rq->shim)
        return j->step == LAUNCH_REFUSED_CONFIG ? shim_refused(rq, j) : start_stock(rq, &j->plan, &j->r, j->why);
    const char *exe = j->plan.exe;
    switch (j->step) {
    case LAUNCH_NO_LIBRARY:
        if (j->rc == 1)
            eprintf("vzcaps run: %s", j->why);
        else
            eprintf("vzcaps run: not starting %s: %s", exe, j->why);
        break;
    case LAUNCH_REFUSED_CONFIG:
        eprintf("vzcaps run: not starting %s: %s", exe, j->r.profile.notes[0]);
        if (!j->r.profile.invalid)
            eprintf("vzcaps run: pass --family off to run it stock on purpose");
        break;
    case LAUNCH_REFUSED_INHERIT:
        eprintf("vzcaps run: not starting %s with the injection kept in its children: %s; drop --inherit (and inherit = yes), "
                "or pass --inherit-anyway to accept that", exe, j->plan.inherit_why);
        break;
    default:
        eprintf("vzcaps run: refusing %s: %s", j->plan.image, j->why);
        if (strcmp(j->arch, "arm64e") == 0)
            eprintf("vzcaps run: arm64e builds of the library are made only on a Mac (make dist with Xcode); "
                    "or run an arm64 build of the program (e.g. a Homebrew or python.org python instead of Apple's)");
        return j->rc;
    }
    return EXIT_REFUSED;
}

/* The chip passed under Rosetta: an x86_64 target where the CPU brand does not name the chip. */
static void pass_chip(struct launch_request *rq, const struct launch_job *j)
{
    const char *pass = run_chip_to_pass(j->arch, &j->r.profile.chip, rq->o.chip || getenv("VZCAPS_HOST_CHIP"));
    if (!pass)
        return;
    static char chip[sizeof j->r.profile.chip.name];
    snprintf(chip, sizeof chip, "%s", pass);
    rq->o.chip = chip;
    eprintf("vzcaps run: note: %s runs as x86_64 (under Rosetta on Apple silicon), where the CPU brand does not name the chip; "
            "passing VZCAPS_HOST_CHIP=\"%s\"", j->plan.image, chip);
}

int launch_run(struct launch_request *rq)
{
    /* the one decision: what exec runs (a FIFO, a directory or a missing file stops here,
     * before anything reads it), its #! chain, what starts, the library, the configuration */
    static struct launch_job j;
    launch_job_decide(rq, &j);
    struct launch_plan *plan = &j.plan;
    if (j.step == LAUNCH_CANNOT_START) {
        eprintf("vzcaps run: cannot run %s: %s", plan->found ? plan->target : rq->cmd[0], plan->why);
        return j.rc;
    }
    if (plan->rc != 0) /* a dry run still shows the environment, for a program installed elsewhere */
        eprintf("vzcaps run: note: %s: %s%s", plan->found ? plan->target : rq->cmd[0], plan->why, plan->found ? "" : " here");
    if (!rq->shim) /* a shim says them only when it starts the program with the library */
        launch_plan_notes(plan, "vzcaps run");
    if (j.step != LAUNCH_WITH_LIBRARY)
        return refused(rq, &j);
    pass_chip(rq, &j);
    int rc;
    if (rq->verify && j.r.profile.state == VZCAPS_ENABLED && (rc = verify_gate(&rq->o)) != 0)
        return rc;
    if (rq->shim)
        launch_plan_notes(plan, "vzcaps run");
    rq->o.handed_here = !rq->dry; /* execve below keeps this pid and parent */
    char **env = cli_child_env(&rq->o, j.library);
    if (cli_preload_duplicates())
        eprintf("vzcaps run: note: %s was set %zu more time(s); the child gets one entry (the first, as getenv sees it)",
                preload_var, cli_preload_duplicates());
    if (rq->dry) {
        /* one line a shell runs as it is: every variable this run sets or changes, the command */
        launch_plan_line(stdout, plan, env, environ);
        launch_plan_free(plan);
        return 0;
    }
    return exec_plan(plan, env);
}

int shim_main(int argc, char **argv)
{
    const char *name = vzcaps_basename(argv[0]);
    char dir[4096];
    const char *d = NULL;
    const char *slash = strrchr(argv[0], '/');
    if (slash) { /* started by its path: that directory is the shim directory */
        size_t n = slash == argv[0] ? 1 : (size_t)(slash - argv[0]);
        if (n < sizeof dir) {
            snprintf(dir, sizeof dir, "%.*s", (int)n, argv[0]);
            d = dir;
        }
    }
    char real[4096], why[4400];
    if (shim_real(name, d, real, sizeof real, why, sizeof why) != 0) {
        eprintf("vzcaps: %s: %s", name, why);
        return 127;
    }
    /* exactly `vzcaps run -- REAL ARGS`: the configuration for NAME, every launch decision */
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av) {
        eprintf("vzcaps: %s: out of memory", name);
        return 126;
    }
    av[0] = real;
    for (int k = 1; k < argc; k++)
        av[k] = argv[k];
    struct launch_request rq = {.cmd = av, .shim = true};
    int rc = launch_run(&rq);
    free(av);
    return rc;
}
