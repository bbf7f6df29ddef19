/* The launch plan's facts: where the command leads (a vzcaps shim and the real program it
 * starts, by name or by path alike; what the kernel runs there), the NAME of a #!/usr/bin/env
 * line and where it leads, and what the image the library would load into is (setuid/setgid,
 * Mach-O slice, static ELF); then
 * the plan (gathered here, decided in decide.c) and the SIP/arm64e decision for inheritance,
 * taken the same way by run, run --dry-run, launchd, check, inspect and doctor.
 * Owns: reading the facts. Never: decides from them (decide.c) or words them (words.c). */
#define _XOPEN_SOURCE 700
#include "launch.h"
#include "../macho/macho.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Appends name's base name as a line to *list (grown on the heap; unchanged when out of memory,
 * and then NULL: unknown). true: keep going (launch_image_libs' callback). */
static bool add_lib(void *ctx, const char *name)
{
    char **list = ctx;
    const char *base = vzcaps_basename(name);
    size_t have = *list ? strlen(*list) : 0;
    char *grown = realloc(*list, have + strlen(base) + 2);
    if (!grown) {
        free(*list);
        *list = NULL;
        return true; /* stop: unknown */
    }
    sprintf(grown + have, "%s\n", base);
    *list = grown;
    return false;
}

/* The image's own facts: setuid/setgid bits, the Mach-O slice that runs and what dyld does with
 * the injection there (signature, __RESTRICT, FairPlay), and whether it is a static ELF. */
static void image_facts(struct launch_facts *f, const char *path)
{
    static struct macho_file mf;
    char err[4600];
    struct stat st;
    f->setugid = stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID));
    f->elf_static = launch_elf_static(path) == 1;
    free(f->libs);
    f->libs = NULL;
    if (launch_image_libs(path, add_lib, &f->libs) == 0 && !f->libs)
        f->libs = calloc(1, 1); /* an ELF file linking nothing */
    if (macho_load(path, &mf, err, sizeof err) != 0)
        return; /* not Mach-O (an ELF here, or unreadable): dyld's verdicts do not apply */
    const struct macho_slice *s = macho_running_slice(&mf);
    if (!s)
        return;
    f->macho = true;
    snprintf(f->arch, sizeof f->arch, "%s", s->arch);
    f->injection = s->injection;
    snprintf(f->injection_why, sizeof f->injection_why, "%s", s->injection_reason);
    f->prepare_helps = macho_prepare_helps(s);
    f->prepare_cannot = s->restrict_section || s->cryptid;
    free(f->libs);
    f->libs = NULL;
    for (size_t i = 0; i < s->n_libs; i++)
        add_lib(&f->libs, s->libs[i]);
    for (size_t i = 0; i < s->n_selectors; i++)
        f->uses_queries |= strcmp(s->selectors[i], "supportsFamily:") == 0 || strcmp(s->selectors[i], "maxThreadgroupMemoryLength") == 0 ||
                           strcmp(s->selectors[i], "recommendedMaxWorkingSetSize") == 0;
    if (!f->libs)
        f->libs = calloc(1, 1);
}

/* Where cmd leads and what starts there: the facts of the plan. */
static void program_facts(struct launch_facts *f, char *const *cmd)
{
    free(f->libs);
    memset(f, 0, sizeof *f);
    f->cmd = cmd;
    /* where cmd[0] leads (a vzcaps shim, by name or by path: the real program it would start,
     * as the shim would only run this same plan again, with the library loaded into vzcaps) */
    launch_lead_find(cmd[0], &f->name);
    const struct exec_image *k = &f->name.k;
    if (f->name.rc != 0)
        return;
    /* #!/usr/bin/env NAME: NAME itself, as env's execvp finds it (macOS removes the injection at
     * env); an interpreter that is a vzcaps shim by its path: the real one, as the shim would */
    if (!k->err && k->script) {
        f->env = vzcaps_shebang_env(&k->sb, &f->env_word, f->env_why, sizeof f->env_why);
        if ((f->rewrite = f->env == 1 || launch_is_shim(k->image)))
            launch_lead_find(vzcaps_shebang_word(&k->sb, f->env_word), &f->env_lead);
    }
    if (!f->rewrite || !f->env_lead.rc)
        image_facts(f, launch_facts_image(f));
}

int launch_plan_make(struct launch_plan *p, char *const *cmd, bool dry)
{
    static struct launch_facts f;
    program_facts(&f, cmd);
    return launch_decide(&f, p, dry);
}

/* The library this start injects (--library; a job through another installation's shim: that
 * installation's; else the one next to this command) and whether the image can load it (found,
 * readable, a path the preload variable can carry): 0, or 1 (not found) / 2 (not loadable). */
static int library_for(const struct launch_request *rq, struct launch_facts *f)
{
    char tried[2400], err[1400];
    const char *other = rq->as_job && !rq->library_opt ? f->name.command : "";
    int found;
    if (rq->library_opt && strlen(rq->library_opt) >= sizeof f->library) {
        snprintf(f->lib_why, sizeof f->lib_why, "--library: path longer than %zu bytes", sizeof f->library - 1);
        return 1;
    }
    if (rq->library_opt) {
        snprintf(f->library, sizeof f->library, "%s", rq->library_opt);
        snprintf(tried, sizeof tried, "--library");
        found = access(f->library, R_OK) == 0 ? 0 : -1;
    } else {
        found = library_near(other[0] ? other : self_path_kept(), f->library, sizeof f->library, tried, sizeof tried);
    }
    if (found != 0) {
        snprintf(f->lib_why, sizeof f->lib_why, "%s not found (looked at %s); reinstall vzcaps or keep the library next to the command",
                 rq->library_opt ? f->library : library_file, tried);
        return 1;
    }
    if (library_check(f->library, launch_facts_image(f), err, sizeof err) != 0) {
        snprintf(f->lib_why, sizeof f->lib_why, "library %s: %s", f->library, err);
        return 2;
    }
    macho_arch_list(f->library, f->lib_archs, sizeof f->lib_archs, err, sizeof err);
    return 0;
}

const struct launch_facts *launch_facts_gather(const struct launch_request *rq)
{
    static struct launch_facts f;
    program_facts(&f, rq->cmd);
    /* the names a section's match may meet: the program's own (a script's, docs/config.md), and
     * the image's, whose section applies when none meets the script's */
    const struct exec_image *k = &f.name.k;
    bool script = !f.name.rc && f.env != -2 && (!f.rewrite || !f.env_lead.rc) && (k->script || k->err == ENOEXEC);
    f.names[0] = vzcaps_basename(script ? f.name.found : rq->cmd[0]);
    f.names[1] = vzcaps_basename(launch_facts_image(&f));
    for (int i = 0; i < 1 + script; i++) {
        f.opts[i] = rq->o;
        f.opts[i].exe = f.names[i];
        cli_configure_view(&f.opts[i], &f.cfg[i]);
    }
    f.lib = library_for(rq, &f);
    bool inherit = false;
    for (int i = 0; i < 1 + script; i++)
        inherit |= f.cfg[i].profile.state == VZCAPS_ENABLED && f.cfg[i].profile.inherit;
    if (inherit && !f.lib) { /* csrutil is run only for a workload that keeps the injection in its children */
        f.sip = platform_is_macos ? sip_status() : VZCAPS_SIP_UNKNOWN;
        f.lib_arm64e = library_has_arch(f.library, "arm64e");
    }
    return &f;
}

int launch_plan_inherit(struct launch_plan *p, int sip, bool lib_arm64e, bool anyway)
{
    p->inherit_decided = true;
    p->inherit = vzcaps_inherit_decision(platform_is_macos, sip, lib_arm64e, anyway, p->inherit_why, sizeof p->inherit_why);
    if (p->inherit == VZCAPS_INHERIT_NOTE)
        launch_plan_note(p, false, "the injection is kept in %s's children: %s", p->exe, p->inherit_why);
    return p->inherit;
}

void launch_plan_free(struct launch_plan *p)
{
    if (p->exec_argv != (char **)p->cmd)
        free(p->exec_argv);
    p->exec_argv = (char **)p->cmd;
}

bool exe_launch_plan(const char *exe, struct launch_plan *p)
{
    static char *cmd[2];
    if (!exe || !*exe)
        return false;
    cmd[0] = (char *)exe; /* a shim (by name or path) is the plan's to resolve, as run resolves it */
    return launch_plan_make(p, cmd, true) == 0 && p->found;
}

void plan_inheritance(struct launch_plan *p, const struct vzcaps_profile *profile)
{
    char library[4096], tried[2400];
    bool found = find_library(library, sizeof library, tried, sizeof tried) == 0;
    if (profile->state == VZCAPS_ENABLED && profile->inherit)
        launch_plan_inherit(p, platform_is_macos ? sip_status() : VZCAPS_SIP_UNKNOWN, found && library_has_arch(library, "arm64e"), false);
}
