/* The launch plan: what starts when a command is launched through vzcaps (the program exec
 * finds, shims resolved to the real program, its #! chain, the program started, what dyld does
 * with the injection there, the SIP/arm64e decision for inheritance), taken the same way by run,
 * run --dry-run, launchd, check, inspect and doctor. Owns: the plan. Never: words it (words.c). */
#define _XOPEN_SOURCE 700
#include "launch.h"
#include "../macho/macho.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void plan_note(struct launch_plan *p, bool warning, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void plan_note(struct launch_plan *p, bool warning, const char *fmt, ...)
{
    if (p->n_notes == PLAN_NOTES) { /* never dropped silently: the last one says so */
        snprintf(p->notes[PLAN_NOTES - 1], sizeof p->notes[0], "more notes than vzcaps shows (%d)", PLAN_NOTES);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->notes[p->n_notes], sizeof p->notes[0], fmt, ap);
    va_end(ap);
    p->warning[p->n_notes++] = warning;
}

/* What dyld does with the injection in the program at path: its running slice's verdict
 * (signature, __RESTRICT, FairPlay) and the setuid/setgid bits. */
static void plan_restrictions(struct launch_plan *p, const char *path)
{
    static struct macho_file mf;
    char err[4600];
    struct stat st;
    p->setugid = stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID));
    if (p->setugid)
        plan_note(p, true, "%s will ignore the library: setuid/setgid bits, for which dyld (and ld.so on Linux) ignores the "
                  "injection whenever they change the user or group", path);
    if (macho_load(path, &mf, err, sizeof err) != 0)
        return; /* not Mach-O (an ELF here, or unreadable): dyld's verdicts do not apply */
    const struct macho_slice *s = macho_running_slice(&mf);
    if (!s)
        return;
    p->macho = true;
    snprintf(p->arch, sizeof p->arch, "%s", s->arch);
    p->injection = s->injection;
    snprintf(p->injection_why, sizeof p->injection_why, "%s", s->injection_reason);
    p->prepare_helps = macho_prepare_helps(s);
    if (s->injection == MACHO_INJECTION_IGNORED)
        plan_note(p, true, "%s will ignore the library: %s%s", path, s->injection_reason,
                  p->prepare_helps ? "; vzcaps prepare makes a private copy that accepts it"
                  : s->restrict_section || s->cryptid ? "; vzcaps prepare cannot change that" : "");
}

int launch_plan_make(struct launch_plan *p, char *const *cmd, bool dry)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->exe = vzcaps_basename(cmd[0]);
    p->image = p->exec_path = p->target;
    p->exec_argv = (char **)cmd;
    int rc = resolve_target(cmd[0], p->target, sizeof p->target, p->why, sizeof p->why);
    if (rc != 0) {
        p->rc = rc;
        p->found = false;
        snprintf(p->target, sizeof p->target, "%s", cmd[0]); /* a dry run shows it anyway */
        return dry ? 0 : rc;
    }
    p->found = true;
    /* a name whose first PATH entry is a vzcaps shim: the real program the shim would run (the
     * shim would only run this same plan again, with the library loaded into vzcaps itself) */
    char real[4096];
    if (!strchr(cmd[0], '/') && shim_real_for(cmd[0], real, sizeof real)) {
        if (!real[0]) {
            snprintf(p->why, sizeof p->why, "%s on PATH is a vzcaps shim (%s), and there is no other %s on PATH after it",
                     cmd[0], p->target, cmd[0]);
            p->found = false;
            return p->rc = 127, dry ? 0 : 127;
        }
        plan_note(p, false, "%s on PATH is a vzcaps shim (%s); starting the real one, %s", cmd[0], p->target, real);
        snprintf(p->target, sizeof p->target, "%s", real);
        p->by_path = true;
    }
    /* a script: the program that really starts (and, for #!/usr/bin/env NAME, NAME itself,
     * since macOS removes the injection at env) */
    rc = script_chain(p->target, &p->chain, p->why, sizeof p->why);
    if (rc != 0) {
        p->rc = rc;
        return dry ? 0 : rc;
    }
    if (p->chain.rewritten && shim_real_for(p->chain.env_name, real, sizeof real)) {
        /* #!/usr/bin/env NAME, NAME shimmed: the real NAME, as the shim would start it */
        static struct script_chain sub;
        char swhy[1400];
        if (!real[0] || script_chain(real, &sub, swhy, sizeof swhy) != 0) {
            snprintf(p->why, sizeof p->why, "its #! line starts %s through env, and %s", p->chain.env_name,
                     real[0] ? swhy : "the only one on PATH is a vzcaps shim");
            return p->rc = 127, dry ? 0 : 127;
        }
        plan_note(p, false, "%s on PATH is a vzcaps shim (%s); starting the real one, %s", p->chain.env_name, p->chain.start,
                  real);
        snprintf(p->chain.start, sizeof p->chain.start, "%s", real);
        snprintf(p->chain.image, sizeof p->chain.image, "%s", sub.script ? sub.image : real);
        p->chain.protected_image = sub.script ? sub.protected_image : vzcaps_path_protected(real);
    }
    if (p->chain.script)
        p->image = p->chain.image, p->exe = vzcaps_basename(p->image); /* the name the library sees */
    if (p->chain.rewritten) {
        p->exec_argv = script_argv(&p->chain, p->target, cmd);
        p->exec_path = p->chain.start;
        if (!p->exec_argv) {
            snprintf(p->why, sizeof p->why, "out of memory");
            return p->rc = 126;
        }
        plan_note(p, false, "%s starts %s through env; starting %s directly, since macOS removes the injection at env, "
                  "which SIP protects", p->target, p->chain.env_name, p->chain.start);
    }
    char advice[2400];
    script_protected_advice(&p->chain, advice, sizeof advice);
    if (advice[0])
        plan_note(p, true, "%s: %s", p->target, advice);
    plan_restrictions(p, p->image);
    return 0;
}

int launch_plan_inherit(struct launch_plan *p, const char *library, bool anyway)
{
    p->inherit_decided = true;
    p->inherit = vzcaps_inherit_decision(platform_is_macos, platform_is_macos ? sip_status() : VZCAPS_SIP_UNKNOWN,
                                         library_has_arch(library, "arm64e"), anyway, p->inherit_why, sizeof p->inherit_why);
    if (p->inherit == VZCAPS_INHERIT_NOTE)
        plan_note(p, false, "the injection is kept in %s's children: %s", p->exe, p->inherit_why);
    return p->inherit;
}

void launch_plan_free(struct launch_plan *p)
{
    if (p->exec_argv != (char **)p->cmd)
        free(p->exec_argv);
    p->exec_argv = (char **)p->cmd;
}

const char *launch_plan_injection(const struct launch_plan *p)
{
    if (p->rc != 0)
        return "unknown";
    if (p->chain.protected_image)
        return "removed";
    if (p->setugid)
        return "ignored";
    return p->macho ? macho_injection_name((enum macho_injection)p->injection) : "honoured";
}

bool exe_launch_plan(const char *exe, struct launch_plan *p)
{
    static char real[4096];
    static char *cmd[2];
    if (!exe || !*exe)
        return false;
    cmd[0] = (char *)exe;
    if (shim_real_for(exe, real, sizeof real)) {
        if (!real[0])
            return false;
        cmd[0] = real;
    }
    return launch_plan_make(p, cmd, true) == 0 && p->found;
}

void plan_inheritance(struct launch_plan *p, const struct vzcaps_profile *profile)
{
    char library[4096], tried[2400];
    if (profile->state == VZCAPS_ENABLED && profile->inherit)
        launch_plan_inherit(p, find_library(library, sizeof library, tried, sizeof tried) == 0 ? library : "", false);
}
