/* The launch plan decided from its facts, once: what starts (the shim's real program, the
 * program a #!/usr/bin/env line names), the program the library loads into and the name it
 * sees, what the loader does with the injection there, the notes that say why; and the gate's
 * verdict (check --strict): would the run change at least one answer, or run stock, and why.
 * Owns: those decisions. Never: reads a file or the environment (plan.c gathers the facts). */
#include "launch.h"
#include "../macho/macho.h"

#include <errno.h>
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
    const struct launch_lead *l = f->rewrite ? &f->env_lead : &f->name;
    return l->k.err == ENOEXEC ? "/bin/sh" : l->k.image;
}

/* A plan that cannot start: rc with why (a dry run still gets the plan). */
static int cannot_start(struct launch_plan *p, int rc, bool dry)
{
    p->rc = rc;
    return dry ? 0 : rc;
}

/* Where cmd[0] (or, by "env" or "shim", what its #! line starts) leads when nothing starts: why. */
static void not_started(struct launch_plan *p, const char *name, const struct launch_lead *l, const char *by)
{
    if (by && *by == 's')
        snprintf(p->why, sizeof p->why, "its #! line starts %s, a vzcaps shim, and %s", name, l->why);
    else if (by && l->shim[0])
        snprintf(p->why, sizeof p->why, "its #! line starts %s through env, and the only one on PATH is a vzcaps shim: %s", name,
                 l->why);
    else if (by)
        snprintf(p->why, sizeof p->why, "its #! line starts %s through env, and %s is %s%s", name, name, l->why,
                 strchr(name, '/') ? "" : " on PATH");
    else if (l->shim[0] && strchr(name, '/'))
        snprintf(p->why, sizeof p->why, "%s is a vzcaps shim, and %s", name, l->why);
    else if (l->shim[0])
        snprintf(p->why, sizeof p->why, "%s on PATH is a vzcaps shim (%s), and there is no other %s on PATH after it", name,
                 l->shim, name);
    else
        snprintf(p->why, sizeof p->why, "%s", l->why);
}

/* argv for exec: [sh0,] start, the line's words from `from` on, [target,] cmd[1..] (malloc'd, of
 * pointers into its arguments; NULL when out of memory). */
static char **plan_argv(const char *sh0, const char *start, const struct vzcaps_shebang *sb, size_t from, const char *target,
                        char *const *cmd)
{
    size_t n = 0, k = 0, extra = sb && sb->n_words > from ? sb->n_words - from : 0;
    while (cmd[n])
        n++;
    char **argv = calloc(n + extra + 4, sizeof *argv);
    if (!argv)
        return NULL;
    if (sh0)
        argv[k++] = (char *)sh0;
    argv[k++] = (char *)start;
    for (size_t i = 0; i < extra; i++)
        argv[k++] = (char *)vzcaps_shebang_word(sb, from + i);
    if (target)
        argv[k++] = (char *)target;
    for (size_t i = 1; i < n; i++)
        argv[k++] = cmd[i];
    return argv;
}

/* What starts: the target as found, through /bin/sh where the kernel runs no image for it (as
 * execvp does), or NAME of a #!/usr/bin/env NAME line directly (macOS removes the injection at
 * env, which SIP protects): exec_path, exec_argv, the image and whether SIP protects it. */
static int what_starts(const struct launch_facts *f, struct launch_plan *p)
{
    const struct exec_image *k = &f->name.k;
    p->via_sh = k->err == ENOEXEC;
    p->script = p->via_sh || k->script;
    snprintf(p->line, sizeof p->line, "%s%s%s", k->sb.n_words ? "#!" : p->via_sh ? "(" : "", k->sb.n_words ? "" : k->why,
             !k->sb.n_words && p->via_sh ? ")" : "");
    for (size_t i = 0; i < k->sb.n_words; i++)
        vzcaps_appendf(p->line, sizeof p->line, "%s%s", i ? " " : "", vzcaps_shebang_word(&k->sb, i));
    if (f->env < 0)
        snprintf(p->cannot_rewrite, sizeof p->cannot_rewrite, "%s", f->env_why);
    p->rewritten = f->rewrite;
    const struct launch_lead *l = p->rewritten ? &f->env_lead : &f->name;
    p->image = launch_facts_image(f);
    p->protected_image = l->k.err == ENOEXEC || l->k.protected_image;
    p->sh_why = l->k.err == ENOEXEC ? l->k.why : NULL;
    if (p->rewritten) {
        snprintf(p->env_name, sizeof p->env_name, "%s", vzcaps_shebang_word(&k->sb, f->env_word));
        if (l->shim[0] && f->env == 1)
            launch_plan_note(p, false, "%s on PATH is a vzcaps shim (%s); starting the real one, %s", p->env_name, l->shim, l->found);
        else if (l->shim[0])
            launch_plan_note(p, false, "its interpreter %s is a vzcaps shim; starting the real one, %s", p->env_name, l->found);
        if (f->env == 1)
            launch_plan_note(p, false, "%s starts %s through env; starting %s directly, since macOS removes the injection at env, "
                             "which SIP protects", p->target, p->env_name, l->found);
        p->exec_argv = plan_argv(l->k.err == ENOEXEC ? p->env_name : NULL, l->found, &k->sb, f->env_word + 1, p->target, f->cmd);
    } else if (p->via_sh) {
        p->exec_argv = plan_argv(vzcaps_search_sh_argv0(f->cmd[0], true), p->target, NULL, 0, NULL, f->cmd);
    }
    p->exec_path = l->k.err == ENOEXEC ? "/bin/sh" : p->rewritten ? l->found : p->target;
    if (!p->exec_argv) {
        snprintf(p->why, sizeof p->why, "out of memory");
        return p->rc = 126;
    }
    return 0;
}

void launch_plan_advice(const struct launch_plan *p, char *out, size_t len)
{
    out[0] = '\0';
    if (!p->protected_image)
        return;
    if (p->sh_why)
        vzcaps_appendf(out, len, "the kernel runs no program for %s (%s), so execvp starts it with /bin/sh, which is",
                       p->rewritten ? p->env_name : "it", p->sh_why);
    else if (p->rewritten)
        vzcaps_appendf(out, len, "vzcaps run starts %s (found on PATH for its #!.../env line) directly, but that is", p->image);
    else if (p->script)
        vzcaps_appendf(out, len, "its #! line starts %s,", p->image);
    vzcaps_appendf(out, len, "%sa program SIP protects: macOS removes %s there, so %s and everything it starts run stock",
                   out[0] ? " " : "", "DYLD_INSERT_LIBRARIES", p->script ? "the script" : "it");
    if (!p->script)
        return; /* Apple's own program: no other to name */
    if (p->cannot_rewrite[0])
        vzcaps_appendf(out, len, " (vzcaps run cannot start the program directly: %s)", p->cannot_rewrite);
    vzcaps_appendf(out, len, "; name an interpreter outside %s in its #! line, or run vzcaps run -- INTERPRETER SCRIPT with one",
                   vzcaps_protected_dirs_text());
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
    const struct launch_lead *l = &f->name;
    p->found = l->rc == 0;
    snprintf(p->target, sizeof p->target, "%s", p->found ? l->found : f->cmd[0]); /* a dry run shows it anyway */
    if (!p->found) {
        not_started(p, f->cmd[0], l, NULL);
        return cannot_start(p, l->rc, dry);
    }
    if (l->shim[0] && !strchr(f->cmd[0], '/'))
        launch_plan_note(p, false, "%s on PATH is a vzcaps shim (%s); starting the real one, %s", f->cmd[0], l->shim, l->found);
    else if (l->shim[0])
        launch_plan_note(p, false, "%s is a vzcaps shim; starting the real one, %s, as the shim would", f->cmd[0], l->found);
    p->by_path = l->shim[0];
    if (f->env == -2 || (f->rewrite && f->env_lead.rc)) {
        if (f->env == -2)
            snprintf(p->why, sizeof p->why, "its #! line: %s", f->env_why);
        else
            not_started(p, vzcaps_shebang_word(&l->k.sb, f->env_word), &f->env_lead, f->env == 1 ? "env" : "shim");
        return cannot_start(p, f->env == -2 ? 126 : f->env_lead.rc, dry);
    }
    if (what_starts(f, p) != 0)
        return p->rc;
    if (p->script)
        p->exe = vzcaps_basename(p->target); /* the script's own name (docs/config.md) */
    char advice[2400];
    launch_plan_advice(p, advice, sizeof advice);
    if (advice[0])
        launch_plan_note(p, true, "%s: %s", p->target, advice);
    restrictions(f, p);
    return 0;
}

const char *launch_plan_injection(const struct launch_plan *p)
{
    if (p->rc != 0)
        return "unknown";
    if (p->protected_image)
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
    const struct launch_lead *l = &f->name;
    if (l->rc != 0 && l->shim[0]) {
        snprintf(why, len, "%s on PATH is a vzcaps shim (%s), and %s: it exits 127", name, l->shim, l->why);
        return true;
    }
    if (l->rc != 0) { /* found, but exec would not start it (a FIFO, a directory, not executable) */
        snprintf(why, len, "%s: %s", name, l->why);
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
    if (!f || (f->name.rc == 127 && !f->name.shim[0] && !f->name.k.exists))
        return LAUNCH_GATE_CHANGES; /* no program named, or none here: the configuration alone */
    if (cannot_start_why(f, plan, why, len))
        return LAUNCH_GATE_CANNOT_START;
    const char *inj = plan ? launch_plan_injection(plan) : "honoured";
    if (strcmp(inj, "ignored") == 0 || strcmp(inj, "removed") == 0) {
        snprintf(why, len, "the injection is %s where the library would load (%s)%s%s", inj, plan->image,
                 plan->n_notes ? ": " : "", plan->n_notes ? plan->notes[plan->n_notes - 1] : "");
        return LAUNCH_GATE_STOCK;
    }
    const char *image = plan ? plan->image : f->name.found;
    if (!scope_fits_program(profile, f, image)) {
        snprintf(why, len, "out of scope: callers %s (stock_callers %s) leaves out %s and every library it links", profile->callers,
                 profile->stock_callers[0] ? profile->stock_callers : "none", vzcaps_basename(image));
        return LAUNCH_GATE_STOCK;
    }
    snprintf(why, len, "%s starts %s%s, with the library, which changes its answers", f->cmd[0], image,
             f->name.shim[0] ? " through its shim" : "");
    return LAUNCH_GATE_CHANGES;
}
