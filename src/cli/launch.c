/* What a launched workload gets: the library (never from PATH or the current directory), its
 * environment, and the one launch plan every launching or explaining command takes (what starts).
 * Owns: the child's environment and the plan. Never: changes this process's own environment. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "../macho/macho.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int find_library(char *buf, size_t len, char *tried, size_t tried_len)
{
    char self[1024];
    self_path(self, sizeof self);
    tried[0] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    const char *rel[] = {"", "/../lib"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, len, "%s%s/%s", self, rel[i], library_file);
        vzcaps_appendf(tried, tried_len, "%s%s", i ? ", " : "", buf);
        if (access(buf, R_OK) == 0) {
            char *real = realpath(buf, NULL);
            if (real) {
                snprintf(buf, len, "%s", real);
                free(real);
            }
            return 0;
        }
    }
    return -1;
}

int spawn_wait(const char *path, char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv(path, argv);
        _exit(127);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* ELF identity of a file: 0 with class, data, type and machine; -1 when not ELF. */
struct elf_id {
    unsigned char cls, data;
    unsigned type, machine;
    bool interp; /* has PT_INTERP: an executable, not a library */
};

static unsigned get16(const unsigned char *p, bool le) { return le ? p[0] | p[1] << 8 : p[0] << 8 | p[1]; }
static unsigned long long getn(const unsigned char *p, int n, bool le)
{
    unsigned long long v = 0;
    for (int i = 0; i < n; i++)
        v |= (unsigned long long)p[le ? i : n - 1 - i] << (8 * i);
    return v;
}

static int elf_identify(int fd, struct elf_id *id)
{
    unsigned char h[64];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, "\177ELF", 4) != 0)
        return -1;
    id->cls = h[4], id->data = h[5];
    bool le = h[5] == 1, is64 = h[4] == 2;
    id->type = get16(h + 16, le);
    id->machine = get16(h + 18, le);
    id->interp = false;
    unsigned long long phoff = getn(h + (is64 ? 32 : 28), is64 ? 8 : 4, le);
    unsigned phentsize = get16(h + (is64 ? 54 : 42), le), phnum = get16(h + (is64 ? 56 : 44), le);
    for (unsigned i = 0; i < phnum && i < 256 && phentsize >= 8 && phentsize <= 64; i++) {
        unsigned char ph[64];
        if (pread(fd, ph, phentsize, (off_t)(phoff + (unsigned long long)i * phentsize)) != (ssize_t)phentsize)
            break;
        if (getn(ph, 4, le) == 3 /* PT_INTERP */)
            id->interp = true;
    }
    return 0;
}

int library_check(const char *library, const char *target, char *why, size_t len)
{
    struct stat st;
    char err[200];
    int fd = vzcaps_open_regular(library, &st, err, sizeof err);
    if (fd < 0) {
        snprintf(why, len, "%s", err);
        return -1;
    }
    unsigned char magic[4] = {0};
    ssize_t got = pread(fd, magic, 4, 0);
    struct elf_id lib;
    int rc = 0;
    bool elf = got == 4 && elf_identify(fd, &lib) == 0;
    bool macho = got == 4 && (memcmp(magic, "\xca\xfe\xba\xbe", 4) == 0 || memcmp(magic, "\xca\xfe\xba\xbf", 4) == 0 ||
                              memcmp(magic, "\xcf\xfa\xed\xfe", 4) == 0);
    const char *want_name = elf ? "libvzcaps.so" : "libvzcaps.dylib";
    if ((elf || macho) && strcmp(vzcaps_basename(library), want_name) != 0) {
        /* the library finds (and removes) its own entry in the preload list by this name */
        snprintf(why, len, "its file name must be %s: the library finds its own entry in %s by that name", want_name,
                 elf ? "LD_PRELOAD" : "DYLD_INSERT_LIBRARIES");
        close(fd);
        return -1;
    }
    /* the preload variable is a list with no escape: glibc splits LD_PRELOAD at spaces and
     * colons (ld.so(8)), dyld DYLD_INSERT_LIBRARIES at colons (dyld(1)); a path holding one
     * would be preloaded as other files, and the program would run stock */
    const char *seps = elf ? ": " : ":", *sep = strpbrk(library, seps);
    if ((elf || macho) && sep) {
        snprintf(why, len, "its path holds a %s, which %s cannot carry (its entries are split there, with no escape): "
                 "put the library at a path without one", *sep == ' ' ? "space" : "colon", elf ? "LD_PRELOAD" : "DYLD_INSERT_LIBRARIES");
        close(fd);
        return -1;
    }
    if (elf) {
        if (lib.type != 3 /* ET_DYN */ || lib.interp) {
            snprintf(why, len, "an ELF %s, not a shared library", lib.interp ? "executable" : "file of another type");
            rc = -1;
        } else {
            /* the target's architecture: its own ELF header, else (a script) this command's */
            char self[1024];
            self_path(self, sizeof self);
            struct stat tst;
            int tfd = vzcaps_open_regular(target, &tst, err, sizeof err);
            struct elf_id want;
            bool known = tfd >= 0 && elf_identify(tfd, &want) == 0;
            if (tfd >= 0)
                close(tfd);
            if (!known && (tfd = vzcaps_open_regular(self, &tst, err, sizeof err)) >= 0) {
                known = elf_identify(tfd, &want) == 0;
                close(tfd);
            }
            if (known && (want.machine != lib.machine || want.cls != lib.cls || want.data != lib.data)) {
                snprintf(why, len, "built for ELF machine %u (class %u), the target runs as machine %u (class %u)", lib.machine,
                         lib.cls, want.machine, want.cls);
                rc = -1;
            }
        }
    } else if (macho) {
        char archs[128];
        if (macho_dylib_check(library, archs, sizeof archs, err, sizeof err) != 0) {
            snprintf(why, len, "%s", err);
            rc = -1;
        }
    } else {
        snprintf(why, len, "not a shared library (neither ELF nor Mach-O)");
        rc = -1;
    }
    close(fd);
    return rc;
}

const char *run_chip_to_pass(const char *target_arch, const struct vzcaps_chip *native, bool chip_given)
{
    /* Under Rosetta an x86_64 process reads a brand string that does not name the chip; the
     * command, running natively, does know it (when it recognises it) */
    if (chip_given || !native->known || strcmp(target_arch, "x86_64") != 0)
        return NULL;
    return native->name;
}

void shell_quote(FILE *out, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(s)) {
        fputs(s, out);
        return;
    }
    /* bytes a terminal would interpret never appear raw: such a value is written as $'...'
     * with \xNN escapes (bash, zsh and ksh read it byte for byte; macOS's /bin/sh is bash) */
    size_t n = strlen(s);
    bool plain = true;
    for (size_t i = 0; i < n && plain;) {
        size_t k = vzcaps_utf8_valid(s + i, n - i);
        unsigned char c = (unsigned char)s[i];
        plain = k && c >= 0x20 && c != 0x7f && !(c == 0xc2 && (unsigned char)s[i + 1] < 0xa0);
        i += k ? k : 1;
    }
    if (plain) {
        fputc('\'', out);
        for (; *s; s++) {
            if (*s == '\'')
                fputs("'\\''", out);
            else
                fputc(*s, out);
        }
        fputc('\'', out);
        return;
    }
    fputs("$'", out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '\'')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('\'', out);
}

/* ---- configuration shared with the library ---- */

/* The environment a child gets: this process's, with the options as VZCAPS_* variables and
 * at most one preload entry. Grown on the heap: no limit on the number or length of entries
 * (every other variable passes through unchanged). */
struct envbuf {
    char **v;
    size_t n, cap;
    char **owned; /* the entries env_set allocated, freed when the environment is built again */
    size_t n_owned, cap_owned;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        eprintf("vzcaps: out of memory");
        exit(EXIT_REFUSED);
    }
    return q;
}

static void env_push(struct envbuf *b, char *entry)
{
    if (b->n + 2 > b->cap)
        b->v = xrealloc(b->v, (b->cap = b->cap * 2 + 64) * sizeof *b->v);
    b->v[b->n++] = entry;
    b->v[b->n] = NULL;
}

static bool env_is(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

/* Removes every entry named name, then appends name=value. */
static void env_set(struct envbuf *b, const char *name, const char *value)
{
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++)
        if (!env_is(b->v[r], name))
            b->v[w++] = b->v[r];
    b->n = w;
    char *entry = xrealloc(NULL, strlen(name) + strlen(value) + 2);
    sprintf(entry, "%s=%s", name, value);
    if (b->n_owned == b->cap_owned)
        b->owned = xrealloc(b->owned, (b->cap_owned = b->cap_owned * 2 + 8) * sizeof *b->owned);
    b->owned[b->n_owned++] = entry;
    env_push(b, entry);
}

static size_t preload_dropped; /* duplicate preload entries collapsed by env_build */

static void env_build(struct envbuf *b, const struct cfg_opts *o)
{
    free(b->v);
    while (b->n_owned)
        free(b->owned[--b->n_owned]);
    b->v = NULL;
    b->n = b->cap = 0;
    const char *first_preload = NULL;
    preload_dropped = 0;
    for (char **e = environ; e && *e; e++) {
        if (env_is(*e, preload_var)) {
            if (first_preload) {
                preload_dropped++;
                continue;
            }
            first_preload = *e;
        }
        env_push(b, *e);
    }
    if (!b->v)
        env_push(b, NULL), b->n = 0;
    if (o->config)
        env_set(b, "VZCAPS_CONFIG", o->config);
    if (o->profile)
        env_set(b, "VZCAPS_PROFILE", o->profile);
    if (o->chip)
        env_set(b, "VZCAPS_HOST_CHIP", o->chip);
    if (o->family)
        env_set(b, "VZCAPS_APPLE_FAMILY_MAX", o->family);
    if (o->inherit)
        env_set(b, "VZCAPS_INHERIT", "1");
    if (o->inherit_matching)
        env_set(b, "VZCAPS_INHERIT", "matching");
}

static struct envbuf child_env;

void cli_configure(const struct cfg_opts *o, struct vzcaps_config_result *r)
{
    static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    env_build(&child_env, o);
    struct machine m;
    machine_facts(&m);
    /* settings that came from options are reported as the options, not as the variables the
     * options travel in */
    static const char *labels[16];
    size_t nl = 0;
    if (o->chip)
        labels[nl++] = "VZCAPS_HOST_CHIP", labels[nl++] = "--chip";
    if (o->profile)
        labels[nl++] = "VZCAPS_PROFILE", labels[nl++] = "--profile";
    if (o->family)
        labels[nl++] = "VZCAPS_APPLE_FAMILY_MAX", labels[nl++] = o->family_implied ? "vzcaps run's implied --family" : "--family";
    if (o->inherit)
        labels[nl++] = "VZCAPS_INHERIT", labels[nl++] = "--inherit";
    if (o->inherit_matching)
        labels[nl++] = "VZCAPS_INHERIT", labels[nl++] = "--inherit-matching";
    labels[nl] = labels[nl + 1] = NULL;
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)child_env.v;
    in.exe = o->exe;
    in.preload_var = preload_var;
    in.labels = labels;
    in.read_file = vzcaps_read_file;
    in.host.brand = m.brand[0] ? m.brand : NULL;
    in.host.brand_origin = m.brand_origin;
    in.host.physical_memory = m.memory;
    vzcaps_configure(&in, file_buf, sizeof file_buf, r);
}

void cli_configure_run(struct cfg_opts *o, struct vzcaps_config_result *r)
{
    cli_configure(o, r);
    if (!o->family && !o->profile && r->profile.state == VZCAPS_STOCK_UNCONFIGURED) {
        o->family = "auto";
        o->family_implied = true;
        cli_configure(o, r);
    }
}

void cli_configure_view(struct cfg_opts *o, struct vzcaps_config_result *r)
{
    if (o->bare)
        cli_configure(o, r);
    else
        cli_configure_run(o, r);
}

void cli_run_argv(char **out, size_t cap, const char *self, const struct cfg_opts *o, char *const *cmd)
{
    size_t n = 0;
    out[n++] = (char *)self;
    out[n++] = "run";
    if (o->profile)
        out[n++] = "--profile", out[n++] = (char *)o->profile;
    if (o->family)
        out[n++] = "--family", out[n++] = (char *)o->family;
    out[n++] = "--";
    for (char *const *a = cmd; *a && n + 1 < cap; a++)
        out[n++] = *a;
    out[n] = NULL;
}

char **cli_child_env(const struct cfg_opts *o, const char *library)
{
    env_build(&child_env, o);
    const char *cur = NULL;
    for (size_t i = 0; i < child_env.n; i++)
        if (env_is(child_env.v[i], preload_var))
            cur = child_env.v[i] + strlen(preload_var) + 1;
    /* other libraries stay, in their order; any copy of ours goes, then ours is appended:
     * the child loads it exactly once */
    size_t cl = cur ? strlen(cur) : 0;
    char *others = xrealloc(NULL, cl + 1), *joined = xrealloc(NULL, cl + strlen(library) + 2);
    others[0] = '\0';
    int k = cur ? vzcaps_strip_library(cur, platform_is_macos ? ":" : ": ", library_file, others, cl + 1) : 0;
    if (k < 0)
        k = 0, others[0] = '\0';
    sprintf(joined, "%s%s%s", others, k > 0 ? ":" : "", library);
    free(others);
    env_set(&child_env, preload_var, joined);
    free(joined);
    return child_env.v;
}

size_t cli_preload_duplicates(void)
{
    return preload_dropped;
}

/* ---- the launch plan: what run, --dry-run, launchd, check, inspect and doctor show ---- */

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

void launch_plan_notes(const struct launch_plan *p, const char *who)
{
    for (size_t i = 0; i < p->n_notes; i++)
        eprintf("%s: %s: %s", who, p->warning[i] ? "warning" : "note", p->notes[i]);
}

/* NAME=value with the value quoted: an assignment word a POSIX shell reads as one. */
static void shell_assignment(FILE *out, const char *entry)
{
    const char *eq = strchr(entry, '=');
    fprintf(out, "%.*s=", (int)(eq - entry), entry);
    shell_quote(out, eq + 1);
}

void launch_plan_line(FILE *out, const struct launch_plan *p, char *const *env, char *const *base)
{
    /* env(1) takes every leading word with '=' for an assignment (macOS's as FreeBSD's: env.c),
     * `--` included, so a program word with '=' cannot follow env: then the shell's own
     * assignments start it, the program as a path (a word with '/' before '=' is no assignment) */
    const char *prog = p->exec_argv[0];
    bool with_env = !strchr(prog, '=');
    if (with_env)
        fputs("env", out);
    bool first = true;
    for (char *const *e = env; *e; e++) {
        bool same = false;
        for (char *const *c = base; c && *c && !same; c++)
            same = strcmp(*c, *e) == 0;
        if (same || !strchr(*e, '='))
            continue; /* unchanged */
        if (!first || with_env)
            fputc(' ', out);
        first = false;
        if (with_env)
            shell_quote(out, *e);
        else
            shell_assignment(out, *e);
    }
    if (!first || with_env)
        fputc(' ', out);
    /* found on PATH, the path exec runs always holds a '/' */
    shell_quote(out, (p->by_path || vzcaps_shell_word_is_assignment(prog)) && strchr(p->exec_path, '/') ? p->exec_path : prog);
    for (char *const *a = p->exec_argv + 1; *a; a++) {
        fputc(' ', out);
        shell_quote(out, *a);
    }
    fputc('\n', out);
}

static const char *inherit_word(int d)
{
    return d == VZCAPS_INHERIT_REFUSED ? "refused" : d == VZCAPS_INHERIT_NOTE ? "allowed, with a caveat" : "allowed";
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

void launch_plan_text(FILE *out, const struct launch_plan *p)
{
    if (p->rc != 0) {
        fprintf(out, "launch         %s: %s\n", esc(p->found ? p->target : p->cmd[0]), esc(p->why));
        return;
    }
    fprintf(out, "launch         %s", esc(p->target));
    if (p->chain.script)
        fprintf(out, " (a script: %s)", esc(p->chain.line));
    fprintf(out, "\n  starts       %s\n", esc(p->exec_path));
    fprintf(out, "  library in   %s: %s%s%s\n", esc(p->image), launch_plan_injection(p), p->injection_why[0] ? ", " : "",
            esc(p->injection_why));
    if (p->inherit_decided)
        fprintf(out, "  inheritance  %s%s%s\n", inherit_word(p->inherit), p->inherit_why[0] ? ": " : "", esc(p->inherit_why));
    for (size_t i = 0; i < p->n_notes; i++)
        fprintf(out, "  - %s: %s\n", p->warning[i] ? "warning" : "note", esc(p->notes[i]));
}

void launch_plan_json(struct json *j, const char *key, const struct launch_plan *p)
{
    json_obj(j, key);
    json_str(j, "program", p->found ? p->target : NULL);
    json_str(j, "error", p->rc ? p->why : NULL);
    json_str(j, "script_line", p->rc == 0 && p->chain.script ? p->chain.line : NULL);
    json_str(j, "starts", p->rc == 0 ? p->exec_path : NULL);
    json_str(j, "image", p->rc == 0 ? p->image : NULL);
    json_str(j, "injection", launch_plan_injection(p));
    json_bool(j, "setuid_or_setgid", p->setugid);
    if (p->inherit_decided) {
        json_obj(j, "inheritance");
        json_str(j, "decision", inherit_word(p->inherit));
        json_str(j, "reason", p->inherit_why[0] ? p->inherit_why : NULL);
        json_end_obj(j);
    } else {
        json_null(j, "inheritance");
    }
    json_arr(j, "notes");
    for (size_t i = 0; i < p->n_notes; i++)
        json_str(j, NULL, p->notes[i]);
    json_end_arr(j);
    json_end_obj(j);
}
