/* The one decision for a job: from this argv, this environment and this PATH to which image
 * starts, with or without the library, under which configuration (the name a section's match
 * meets), changing which answers. vzcaps run and a shim's start act on it (start.c); check
 * --strict reports it (launch_job_gate), and never re-derives any part of it. The line the
 * launch floor keeps: facts (resolve.c, plan.c), then this decision (decide.c's plan, then
 * here), then starting (start.c) and words (words.c).
 * Owns: the decision. Never: starts anything, or writes anything. */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int run_target_check(const char *target, const char *library, const struct vzcaps_profile *profile, char *arch,
                     size_t arch_len, char *why, size_t why_len); /* library.c */

/* The library next to command (or in ../lib): 0 with its path, or -1 with the paths tried. */
static int library_near(const char *command, char *buf, size_t len, char *tried, size_t tlen)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", command);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    tried[0] = '\0';
    const char *rel[] = {"", "/../lib"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, len, "%s%s/%s", dir, rel[i], library_file);
        vzcaps_appendf(tried, tlen, "%s%s", i ? ", " : "", buf);
        if (access(buf, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* The library this start injects (--library; a job through another installation's shim: that
 * installation's; else the one next to this command) and whether the image can load it (found,
 * readable, a path the preload variable can carry): 0, or 1 (not found) / 2 (not loadable). */
static int library_for(const struct launch_request *rq, const struct launch_job *j, char *library, size_t len, char *why,
                       size_t wlen)
{
    char tried[2400], err[1400];
    const char *other = rq->as_job && !rq->library_opt ? j->facts.name.command : "";
    int found;
    if (rq->library_opt) {
        if (strlen(rq->library_opt) >= len) {
            snprintf(why, wlen, "--library: path longer than %zu bytes", len - 1);
            return 1;
        }
        snprintf(library, len, "%s", rq->library_opt);
        snprintf(tried, sizeof tried, "--library");
        found = access(library, R_OK) == 0 ? 0 : -1;
    } else {
        found = other[0] ? library_near(other, library, len, tried, sizeof tried) : find_library(library, len, tried, sizeof tried);
    }
    if (found != 0) {
        snprintf(why, wlen, "%s not found (looked at %s); reinstall vzcaps or keep the library next to the command",
                 rq->library_opt ? library : library_file, tried);
        return 1;
    }
    if (library_check(library, j->plan.image, err, sizeof err) != 0) {
        snprintf(why, wlen, "library %s: %s", library, err);
        return 2;
    }
    return 0;
}

/* Stopped before the library: the verdict says why the job runs stock (or cannot start). */
static enum launch_gate stopped(struct launch_job *j, enum launch_step step)
{
    j->step = step;
    const char *what = step == LAUNCH_NO_LIBRARY ? "the library cannot be loaded: " : "";
    j->verdict = step == LAUNCH_CANNOT_START ? LAUNCH_GATE_CANNOT_START : LAUNCH_GATE_STOCK;
    snprintf(j->verdict_why, sizeof j->verdict_why, "%s%s", what, j->why);
    return j->verdict;
}

/* The configuration refused (run: exit 125; a shim: the program, stock): its reason. */
static enum launch_gate refused_config(struct launch_job *j)
{
    vzcaps_stock_reason(&j->r.profile, j->why, sizeof j->why);
    return stopped(j, LAUNCH_REFUSED_CONFIG);
}

/* The configuration for the program: under its own name; for a #! script, the section whose
 * match meets the script's own name, else (none does) the one that meets its interpreter's;
 * a script's name is handed to the library, which sees the interpreter (docs/config.md). */
static void configure(struct launch_request *rq, struct launch_job *j)
{
    static struct vzcaps_config_result by_interpreter;
    struct cfg_opts o = rq->o;
    o.exe = j->plan.exe;
    cli_configure_view(&o, &j->r);
    const char *interp = vzcaps_basename(j->plan.image);
    bool matched = j->r.section[0] && strcmp(j->r.section, "default") != 0; /* [default] is no match */
    if (j->plan.script && !matched && strcmp(interp, o.exe) != 0) {
        struct cfg_opts io = rq->o;
        io.exe = interp;
        cli_configure_view(&io, &by_interpreter);
        if (by_interpreter.section[0] && strcmp(by_interpreter.section, "default") != 0) {
            j->r = by_interpreter;
            o = io;
            j->plan.exe = interp;
        }
    }
    o.handed = j->plan.script ? j->plan.exe : NULL;
    rq->o = o;
}

enum launch_gate launch_job_decide(struct launch_request *rq, struct launch_job *j)
{
    j->why[0] = j->verdict_why[0] = j->arch[0] = '\0';
    j->rc = 0;
    launch_facts_gather(&j->facts, rq->cmd);
    int rc = launch_decide(&j->facts, &j->plan, rq->dry);
    if (rc != 0) {
        j->rc = rc;
        snprintf(j->why, sizeof j->why, "%s", j->plan.why);
        return stopped(j, LAUNCH_CANNOT_START);
    }
    configure(rq, j);
    if (j->plan.rc != 0 && rq->as_job) { /* not here, or it cannot start: as launch_gate says */
        j->step = LAUNCH_CANNOT_START;
        return j->verdict = launch_gate(&j->r.profile, &j->facts, &j->plan, j->verdict_why, sizeof j->verdict_why);
    }
    int lib = library_for(rq, j, j->library, sizeof j->library, j->why, sizeof j->why);
    if (lib)
        return j->rc = lib, stopped(j, LAUNCH_NO_LIBRARY);
    const struct vzcaps_profile *p = &j->r.profile;
    if (p->state == VZCAPS_STOCK_REFUSED)
        return refused_config(j);
    if (p->state == VZCAPS_ENABLED && p->inherit &&
        launch_plan_inherit(&j->plan, j->library, rq->inherit_anyway) == VZCAPS_INHERIT_REFUSED) {
        snprintf(j->why, sizeof j->why, "the injection would be kept in its children: %s", j->plan.inherit_why);
        return stopped(j, LAUNCH_REFUSED_INHERIT);
    }
    if ((j->rc = run_target_check(j->plan.image, j->library, p, j->arch, sizeof j->arch, j->why, sizeof j->why)) != 0)
        return stopped(j, LAUNCH_REFUSED_TARGET);
    j->step = LAUNCH_WITH_LIBRARY;
    j->rc = j->plan.rc; /* a dry run of a program that cannot start here: its plan all the same */
    j->verdict = launch_gate(p, &j->facts, &j->plan, j->verdict_why, sizeof j->verdict_why);
    return j->verdict;
}

enum launch_gate launch_job_gate(const struct cfg_opts *o, const char *name, struct launch_job *j)
{
    static char *cmd[2];
    struct launch_request rq = {.o = *o, .dry = true, .shim = true, .as_job = true, .cmd = cmd};
    cmd[0] = (char *)(name ? name : "");
    if (!name || !*name) { /* no program named: the configuration alone */
        cli_configure_view(&rq.o, &j->r);
        j->step = LAUNCH_CANNOT_START;
        return j->verdict = launch_gate(&j->r.profile, NULL, NULL, j->verdict_why, sizeof j->verdict_why);
    }
    launch_job_decide(&rq, j);
    const struct launch_facts *f = &j->facts;
    if (f->name.rc == 0 && !f->name.shim[0] && j->verdict == LAUNCH_GATE_CHANGES) { /* a job's shell starts what PATH finds: without the library */
        snprintf(j->verdict_why, sizeof j->verdict_why, "%s %s %s, which is not a vzcaps shim: a job that starts it runs it "
                 "without the library (put the shim directory first on PATH, or start it with vzcaps run)", name,
                 strchr(name, '/') ? "is" : "on PATH resolves to", f->name.found);
        return j->verdict = LAUNCH_GATE_STOCK;
    }
    return j->verdict;
}

void launch_job_free(struct launch_job *j)
{
    launch_plan_free(&j->plan);
}
