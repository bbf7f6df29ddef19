/* The one decision for a job: from this argv, this environment and this PATH to which image
 * starts, with or without the library, under which configuration (the name a section's match
 * meets), changing which answers. vzcaps run and a shim's start act on it (start.c); check
 * --strict reports it (launch_job_gate), and never re-derives any part of it. The line the
 * launch floor keeps: the facts, gathered once into one record (plan.c), then this decision
 * (decide.c's plan, then here), then starting (start.c) and words (words.c).
 * Owns: the decision. Never: reads a file or the environment, starts anything, or writes. */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    const struct launch_facts *f = j->facts;
    bool matched[2];
    for (int i = 0; i < 2; i++) /* [default] is no match */
        matched[i] = f->cfg[i].section[0] && strcmp(f->cfg[i].section, "default") != 0;
    int i = j->plan.script && !matched[0] && strcmp(f->names[1], f->names[0]) != 0 && matched[1];
    j->r = f->cfg[i];
    rq->o = f->opts[i];
    j->plan.exe = f->names[i];
    rq->o.handed = j->plan.script ? j->plan.exe : NULL;
    j->opts = &f->opts[i];
}

/* The image's running slice and the library's: refused (EXIT_REFUSED) where dyld would abort it;
 * notes where its libraries' calls get stock answers, or it names none of the queries. */
static int target_check(struct launch_job *j)
{
    const struct launch_facts *f = j->facts;
    const struct vzcaps_profile *p = &j->r.profile;
    snprintf(j->arch, sizeof j->arch, "%s", f->macho ? f->arch : "");
    char have[160];
    snprintf(have, sizeof have, " %s ", f->lib_archs);
    char want[40];
    snprintf(want, sizeof want, " %s ", f->arch);
    if (f->macho && f->lib_archs[0] && !strstr(have, want)) {
        snprintf(j->why, sizeof j->why, "it runs as %s and the library has only %s, so dyld would abort it at launch.", f->arch,
                 f->lib_archs);
        return EXIT_REFUSED;
    }
    char stock[512] = "";
    for (const char *l = f->macho && p->state == VZCAPS_ENABLED && f->libs ? f->libs : ""; *l; l += strcspn(l, "\n") + 1) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(l, "\n"), l);
        if (!vzcaps_caller_in_scope(p, name))
            vzcaps_appendf(stock, sizeof stock, "%s%s", stock[0] ? ", " : "", name);
    }
    if (stock[0])
        launch_plan_note(&j->plan, false, "%s loads %s, whose calls get stock answers (caller scope: stock_callers %s)", j->plan.image,
                         stock, p->stock_callers[0] ? p->stock_callers : "none");
    if (f->macho && !f->uses_queries && f->libs && *f->libs)
        launch_plan_note(&j->plan, false, "%s references none of the queries the library changes (they may live in a library it "
                         "loads)", j->plan.image);
    return 0;
}

enum launch_gate launch_job_decide(struct launch_request *rq, struct launch_job *j)
{
    j->why[0] = j->verdict_why[0] = j->arch[0] = '\0';
    j->rc = 0, j->opts = NULL;
    j->facts = launch_facts_gather(rq);
    int rc = launch_decide(j->facts, &j->plan, rq->dry);
    if (rc != 0) {
        j->rc = rc;
        snprintf(j->why, sizeof j->why, "%s", j->plan.why);
        return stopped(j, LAUNCH_CANNOT_START);
    }
    configure(rq, j);
    if (j->plan.rc != 0 && rq->as_job) { /* not here, or it cannot start: as launch_gate says */
        j->step = LAUNCH_CANNOT_START;
        return j->verdict = launch_gate(&j->r.profile, j->facts, &j->plan, j->verdict_why, sizeof j->verdict_why);
    }
    snprintf(j->library, sizeof j->library, "%s", j->facts->library);
    if (j->facts->lib) {
        snprintf(j->why, sizeof j->why, "%s", j->facts->lib_why);
        return j->rc = j->facts->lib, stopped(j, LAUNCH_NO_LIBRARY);
    }
    const struct vzcaps_profile *p = &j->r.profile;
    if (p->state == VZCAPS_STOCK_REFUSED)
        return refused_config(j);
    if (p->state == VZCAPS_ENABLED && p->inherit &&
        launch_plan_inherit(&j->plan, j->facts->sip, j->facts->lib_arm64e, rq->inherit_anyway) == VZCAPS_INHERIT_REFUSED) {
        snprintf(j->why, sizeof j->why, "the injection would be kept in its children: %s", j->plan.inherit_why);
        return stopped(j, LAUNCH_REFUSED_INHERIT);
    }
    if ((j->rc = target_check(j)) != 0)
        return stopped(j, LAUNCH_REFUSED_TARGET);
    j->step = LAUNCH_WITH_LIBRARY;
    j->rc = j->plan.rc; /* a dry run of a program that cannot start here: its plan all the same */
    j->verdict = launch_gate(p, j->facts, &j->plan, j->verdict_why, sizeof j->verdict_why);
    return j->verdict;
}

enum launch_gate launch_job_gate(const struct cfg_opts *o, const char *name, struct launch_job *j)
{
    static char *cmd[2];
    struct launch_request rq = {.o = *o, .dry = true, .shim = true, .as_job = true, .cmd = cmd};
    cmd[0] = (char *)(name ? name : "");
    if (!name || !*name) { /* no program named: the configuration alone */
        cli_configure_view(&rq.o, &j->r), j->opts = NULL;
        j->step = LAUNCH_CANNOT_START;
        return j->verdict = launch_gate(&j->r.profile, NULL, NULL, j->verdict_why, sizeof j->verdict_why);
    }
    launch_job_decide(&rq, j);
    const struct launch_facts *f = j->facts;
    if (f->name.rc == 0 && !f->name.shim[0] && f->rewrite && f->env_lead.shim[0]) {
        /* no shim itself, but its #! line starts one (its interpreter by its path, env's NAME on
         * PATH): the job is that shim's, started with the script, as the shim decides it */
        static char start[4096], script[4096], *via[3] = {start, script, NULL};
        snprintf(start, sizeof start, "%s", vzcaps_shebang_word(&f->name.k.sb, f->env_word));
        snprintf(script, sizeof script, "%s", f->name.found);
        rq = (struct launch_request){.o = *o, .dry = true, .shim = true, .as_job = true, .cmd = via};
        launch_job_free(j);
        launch_job_decide(&rq, j); /* recorded as the shim's program, under its name: the proof's NAME */
        vzcaps_appendf(j->verdict_why, sizeof j->verdict_why, "; recorded as %s (stats --require %s)", j->plan.exe, j->plan.exe);
        return j->verdict;
    }
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
