/* The launch plan decided from its facts, once: what starts (the shim's real program, the
 * program a #!/usr/bin/env line names), the program the library loads into and the name it
 * sees, what the loader does with the injection there, the notes that say why; and the gate's
 * verdict (check --strict): would the run change at least one answer, or run stock, and why.
 * Owns: those decisions. Never: reads a file or the environment (plan.c gathers the facts). */
#include "launch.h"
#include "../macho/macho.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void launch_plan_note(struct launch_plan *p, bool warning, const char *fmt, ...)
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

const char *launch_facts_image(const struct launch_facts *f)
{
    if (!f->chain.script)
        return f->shim ? f->shim_real : f->first;
    if (f->env_shim)
        return f->env_sub.script ? f->env_sub.image : f->env_real;
    return f->chain.image;
}

/* A plan that cannot start: rc with why (a dry run still gets the plan). */
static int cannot_start(struct launch_plan *p, int rc, bool dry)
{
    p->rc = rc;
    return dry ? 0 : rc;
}

/* cmd[0] is a vzcaps shim: the real program it starts becomes the target. false: there is none. */
static bool through_shim(const struct launch_facts *f, struct launch_plan *p)
{
    const char *name = f->cmd[0];
    bool named = !strchr(name, '/');
    if (!f->shim_real[0]) {
        if (named)
            snprintf(p->why, sizeof p->why, "%s on PATH is a vzcaps shim (%s), and there is no other %s on PATH after it", name,
                     f->first, name);
        else
            snprintf(p->why, sizeof p->why, "%s is a vzcaps shim, and %s", name, f->shim_why);
        p->found = false;
        return false;
    }
    if (named)
        launch_plan_note(p, false, "%s on PATH is a vzcaps shim (%s); starting the real one, %s", name, f->first, f->shim_real);
    else
        launch_plan_note(p, false, "%s is a vzcaps shim; starting the real one, %s, as the shim would", name, f->shim_real);
    snprintf(p->target, sizeof p->target, "%s", f->shim_real);
    p->by_path = true;
    return true;
}

/* #!/usr/bin/env NAME with NAME shimmed: the real NAME, as the shim would start it. */
static bool through_env_shim(const struct launch_facts *f, struct launch_plan *p)
{
    if (!f->env_real[0] || f->env_rc != 0) {
        snprintf(p->why, sizeof p->why, "its #! line starts %s through env, and %s", p->chain.env_name,
                 f->env_real[0] ? f->env_why : "the only one on PATH is a vzcaps shim");
        return false;
    }
    launch_plan_note(p, false, "%s on PATH is a vzcaps shim (%s); starting the real one, %s", p->chain.env_name, p->chain.start,
                     f->env_real);
    snprintf(p->chain.start, sizeof p->chain.start, "%s", f->env_real);
    snprintf(p->chain.image, sizeof p->chain.image, "%s", launch_facts_image(f));
    p->chain.protected_image = f->env_sub.script ? f->env_sub.protected_image : vzcaps_path_protected(f->env_real);
    return true;
}

/* What the loader does with the injection in the image: setuid/setgid, the running slice's
 * verdict (signature, __RESTRICT, FairPlay), a static executable. */
static void restrictions(const struct launch_facts *f, struct launch_plan *p)
{
    const char *path = p->image;
    p->setugid = f->setugid;
    if (p->setugid)
        launch_plan_note(p, true, "%s will ignore the library: setuid/setgid bits, for which dyld (and ld.so on Linux) ignores "
                         "the injection whenever they change the user or group", path);
    p->elf_static = f->elf_static;
    if (p->elf_static)
        launch_plan_note(p, true, "%s will ignore the library: a statically linked executable, which no dynamic loader starts, "
                         "so nothing there reads the preload variable", path);
    if (!f->macho)
        return; /* not Mach-O (an ELF here, or unreadable): dyld's verdicts do not apply */
    p->macho = true;
    snprintf(p->arch, sizeof p->arch, "%s", f->arch);
    p->injection = f->injection;
    snprintf(p->injection_why, sizeof p->injection_why, "%s", f->injection_why);
    p->prepare_helps = f->prepare_helps;
    if (f->injection == MACHO_INJECTION_IGNORED)
        launch_plan_note(p, true, "%s will ignore the library: %s%s", path, f->injection_why,
                         f->prepare_helps ? "; vzcaps prepare makes a private copy that accepts it"
                         : f->prepare_cannot ? "; vzcaps prepare cannot change that" : "");
}

int launch_decide(const struct launch_facts *f, struct launch_plan *p, bool dry)
{
    memset(p, 0, sizeof *p);
    p->cmd = f->cmd;
    p->exe = vzcaps_basename(f->cmd[0]);
    p->image = p->exec_path = p->target;
    p->exec_argv = (char **)f->cmd;
    if (f->resolve_rc != 0) {
        snprintf(p->why, sizeof p->why, "%s", f->resolve_why);
        snprintf(p->target, sizeof p->target, "%s", f->cmd[0]); /* a dry run shows it anyway */
        return cannot_start(p, f->resolve_rc, dry);
    }
    p->found = true;
    snprintf(p->target, sizeof p->target, "%s", f->first);
    if (f->shim && !through_shim(f, p))
        return cannot_start(p, 127, dry);
    if (f->chain_rc != 0) {
        snprintf(p->why, sizeof p->why, "%s", f->chain_why);
        return cannot_start(p, f->chain_rc, dry);
    }
    p->chain = f->chain;
    if (f->env_shim && !through_env_shim(f, p))
        return cannot_start(p, 127, dry);
    if (p->chain.script)
        p->image = p->chain.image, p->exe = vzcaps_basename(p->target); /* the script's own name (docs/config.md) */
    if (p->chain.rewritten) {
        p->exec_argv = script_argv(&p->chain, p->target, f->cmd);
        p->exec_path = p->chain.start;
        if (!p->exec_argv) {
            snprintf(p->why, sizeof p->why, "out of memory");
            return p->rc = 126;
        }
        launch_plan_note(p, false, "%s starts %s through env; starting %s directly, since macOS removes the injection at env, "
                         "which SIP protects", p->target, p->chain.env_name, p->chain.start);
    }
    char advice[2400];
    script_protected_advice(&p->chain, advice, sizeof advice);
    if (advice[0])
        launch_plan_note(p, true, "%s: %s", p->target, advice);
    restrictions(f, p);
    return 0;
}

const char *launch_plan_injection(const struct launch_plan *p)
{
    if (p->rc != 0)
        return "unknown";
    if (p->chain.protected_image)
        return "removed";
    if (p->setugid || p->elf_static)
        return "ignored";
    return p->macho ? macho_injection_name((enum macho_injection)p->injection) : "honoured";
}


/* Whether the caller scope leaves every caller stock: a stock_callers glob of '*' alone (it fits
 * every image name), or every callers glob also listed in stock_callers (checked first). */
static bool scope_all_stock(const struct vzcaps_profile *p)
{
    if (!p->scoped)
        return false;
    for (const char *g = p->stock_callers; *g;) {
        size_t n = strcspn(g, " ");
        if (n && strspn(g, "*") >= n)
            return true;
        g += n + (g[n] == ' ');
    }
    bool all = p->callers[0] != '\0';
    for (const char *g = p->callers; *g && all;) {
        size_t n = strcspn(g, " ");
        bool listed = false;
        for (const char *s = p->stock_callers; *s && !listed;) {
            size_t k = strcspn(s, " ");
            listed = k == n && strncmp(s, g, n) == 0;
            s += k + (s[k] == ' ');
        }
        all = listed;
        g += n + (g[n] == ' ');
    }
    return all;
}

/* Whether a callers glob other than '*' alone names lib (a libggml* for libggml-metal.dylib),
 * and the scope keeps it (no stock_callers glob fits it). */
static bool scope_names_lib(const struct vzcaps_profile *p, const char *lib)
{
    char glob[VZCAPS_GLOBS_LEN];
    if (!vzcaps_caller_in_scope(p, lib))
        return false;
    for (const char *g = p->callers; *g;) {
        size_t n = strcspn(g, " ");
        snprintf(glob, sizeof glob, "%.*s", (int)n, g);
        if (strspn(glob, "*") < n && vzcaps_glob_match(glob, lib))
            return true;
        g += n + (g[n] == ' ');
    }
    return false;
}

/* Whether the caller scope can include a call the program makes: from its own image, or from a
 * library it links that a callers glob names (the libraries are known only by name: '*' alone,
 * which fits libc too, does not count for them). Libraries unknown: it can. */
static bool scope_fits_program(const struct vzcaps_profile *p, const struct launch_facts *f, const char *image)
{
    if (!p->scoped || !f->libs || vzcaps_caller_in_scope(p, vzcaps_basename(image)))
        return true;
    char name[256];
    for (const char *l = f->libs; *l;) {
        size_t n = strcspn(l, "\n");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), l);
        if (scope_names_lib(p, name))
            return true;
        l += n + (l[n] == '\n');
    }
    return false;
}

/* The job's program cannot start (f, plan): true with why. */
static bool cannot_start_why(const struct launch_facts *f, const struct launch_plan *plan, char *why, size_t len)
{
    const char *name = f->cmd[0];
    if (f->resolve_rc != 0) { /* found, but exec would not start it (a FIFO, a directory, not executable) */
        snprintf(why, len, "%s: %s", name, f->resolve_why);
        return true;
    }
    if (f->shim && !f->shim_real[0]) {
        snprintf(why, len, "%s on PATH is a vzcaps shim (%s), and %s: it exits 127", name, f->first, f->shim_why);
        return true;
    }
    if (plan && plan->rc != 0) {
        snprintf(why, len, "%s: %s", name, plan->why);
        return true;
    }
    return false;
}

enum launch_gate launch_gate(const struct vzcaps_profile *profile, const struct launch_facts *f, const struct launch_plan *plan,
                             char *why, size_t len)
{
    why[0] = '\0';
    if (vzcaps_stock_reason(profile, why, len))
        return LAUNCH_GATE_STOCK;
    if (scope_all_stock(profile)) {
        snprintf(why, len, "out of scope: stock_callers %s leaves every caller stock (callers %s)", profile->stock_callers,
                 profile->callers);
        return LAUNCH_GATE_STOCK;
    }
    if (!f || f->resolve_rc == 127)
        return LAUNCH_GATE_CHANGES; /* no program named, or none here: the configuration alone */
    if (cannot_start_why(f, plan, why, len))
        return LAUNCH_GATE_CANNOT_START;
    const char *inj = plan ? launch_plan_injection(plan) : "honoured";
    if (strcmp(inj, "ignored") == 0 || strcmp(inj, "removed") == 0) {
        snprintf(why, len, "the injection is %s where the library would load (%s)%s%s", inj, plan->image,
                 plan->n_notes ? ": " : "", plan->n_notes ? plan->notes[plan->n_notes - 1] : "");
        return LAUNCH_GATE_STOCK;
    }
    const char *image = plan ? plan->image : f->shim ? f->shim_real : f->first;
    if (!scope_fits_program(profile, f, image)) {
        snprintf(why, len, "out of scope: callers %s (stock_callers %s) leaves out %s and every library it links", profile->callers,
                 profile->stock_callers[0] ? profile->stock_callers : "none", vzcaps_basename(image));
        return LAUNCH_GATE_STOCK;
    }
    snprintf(why, len, "%s starts %s%s, with the library, which changes its answers", f->cmd[0], image,
             f->shim ? " through its shim" : "");
    return LAUNCH_GATE_CHANGES;
}
