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

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    if (!f->libs)
        f->libs = calloc(1, 1);
}

void launch_facts_gather(struct launch_facts *f, char *const *cmd)
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
    /* #!/usr/bin/env NAME: NAME itself, as env's execvp finds it (macOS removes the injection at env) */
    if (!k->err && k->script && (f->env = vzcaps_shebang_env(&k->sb, &f->env_word, f->env_why, sizeof f->env_why)) == 1)
        launch_lead_find(vzcaps_shebang_word(&k->sb, f->env_word), &f->env_lead);
    if (f->env != 1 || !f->env_lead.rc)
        image_facts(f, launch_facts_image(f));
}

int launch_plan_make(struct launch_plan *p, char *const *cmd, bool dry)
{
    static struct launch_facts f;
    launch_facts_gather(&f, cmd);
    return launch_decide(&f, p, dry);
}

int launch_plan_inherit(struct launch_plan *p, const char *library, bool anyway)
{
    p->inherit_decided = true;
    p->inherit = vzcaps_inherit_decision(platform_is_macos, platform_is_macos ? sip_status() : VZCAPS_SIP_UNKNOWN,
                                         library_has_arch(library, "arm64e"), anyway, p->inherit_why, sizeof p->inherit_why);
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
    if (profile->state == VZCAPS_ENABLED && profile->inherit)
        launch_plan_inherit(p, find_library(library, sizeof library, tried, sizeof tried) == 0 ? library : "", false);
}
