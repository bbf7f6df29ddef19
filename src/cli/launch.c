/* What a launched workload gets: the library (next to the command, then in ../lib; never PATH
 * or the current directory, where a library could be planted), the target found on PATH and
 * checked (a #! script followed to the program that runs it, and #!/usr/bin/env NAME started
 * as NAME), its argv and its environment, and running a helper program to completion.
 * Owns: the child's environment. Never: changes this process's own environment. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "../macho/macho.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

/* A candidate for exec: 0 when it is a regular file we may execute, else an errno-like
 * reason (ENOENT, EISDIR/EINVAL for anything not a regular file, EACCES). */
static int exec_candidate(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? ENOENT : errno;
    if (!S_ISREG(st.st_mode))
        return EINVAL;
    return access(path, X_OK) == 0 ? 0 : EACCES;
}

int resolve_target(const char *name, char *out, size_t len, char *why, size_t whylen)
{
    int rc;
    if (strchr(name, '/')) {
        if (strlen(name) >= len) {
            snprintf(why, whylen, "path longer than %zu bytes", len - 1);
            return 126;
        }
        snprintf(out, len, "%s", name);
        rc = exec_candidate(out);
    } else {
        rc = ENOENT;
        for (const char *path = getenv("PATH"); path && *path && rc;) {
            size_t n = strcspn(path, ":");
            int w = snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name);
            int c = w > 0 && (size_t)w < len ? exec_candidate(out) : ENOENT;
            if (c == 0 || (c != ENOENT && rc == ENOENT))
                rc = c; /* remember why a found file would not do; keep looking, as execvp does */
            path += n + (path[n] == ':');
        }
    }
    if (rc == 0)
        return 0;
    snprintf(why, whylen, "%s", rc == ENOENT ? "not found" : rc == EINVAL ? "not a regular file" :
                                rc == EACCES ? "not executable" : strerror(rc));
    return rc == ENOENT ? 127 : 126;
}

bool find_executable(const char *name, const char *near, char *out, size_t len)
{
    /* a candidate that does not fit in out is not tried: a cut path names another file */
    if (strchr(name, '/'))
        return (size_t)snprintf(out, len, "%s", name) < len && access(out, X_OK) == 0;
    const char *slash = near ? strrchr(near, '/') : NULL;
    if (slash && (size_t)snprintf(out, len, "%.*s/%s", (int)(slash - near), near, name) < len && access(out, X_OK) == 0)
        return true;
    for (const char *path = getenv("PATH"); path && *path;) {
        size_t n = strcspn(path, ":");
        if ((size_t)snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name) < len && access(out, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
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

/* Appends n bytes to b (growing it); false when out of memory. */
static bool buf_add(struct cli_buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return false;
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

void cli_buf_free(struct cli_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int cli_capture(char *const argv[], char *const env[], int flags, struct cli_buf *out, struct cli_buf *err)
{
    int po[2], pe[2];
    out->len = err->len = 0;
    if (!buf_add(out, "", 0) || !buf_add(err, "", 0))
        return -1;
    if (pipe(po) != 0)
        return -1;
    if (pipe(pe) != 0) {
        close(po[0]), close(po[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0 && in != 0)
            dup2(in, 0), close(in);
        dup2(po[1], 1), dup2(pe[1], 2);
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        if (flags & CLI_CAPTURE_STOCK) { /* every entry of ours and every preload entry leaves */
            size_t w = 0, pl = strlen(preload_var);
            for (size_t r = 0; environ[r]; r++)
                if (!vzcaps_env_is_ours(environ[r]) && !(strncmp(environ[r], preload_var, pl) == 0 && environ[r][pl] == '='))
                    environ[w++] = environ[r];
            environ[w] = NULL;
        }
        for (char *const *x = env; x && *x; x++)
            putenv(*x);
        if (flags & CLI_CAPTURE_SEARCH)
            execvp(argv[0], argv);
        else
            execv(argv[0], argv);
        dprintf(2, "vzcaps: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]), close(pe[1]);
    if (pid < 0) {
        close(po[0]), close(pe[0]);
        return -1;
    }
    /* both pipes at once: a child that fills one while we wait on the other never stalls */
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    struct cli_buf *into[2] = {out, err};
    bool ok = true;
    int open_pipes = 2;
    while (open_pipes) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (fds[k].fd < 0 || !fds[k].revents)
                continue;
            char chunk[16384];
            ssize_t n = read(fds[k].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n > 0) {
                ok = buf_add(into[k], chunk, (size_t)n) && ok;
                continue;
            }
            close(fds[k].fd);
            fds[k].fd = -1;
            open_pipes--;
        }
    }
    for (int k = 0; k < 2; k++)
        if (fds[k].fd >= 0)
            close(fds[k].fd);
    int st = -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return ok ? st : -1;
}

/* ---- #! scripts: what a script really starts (core/exec_rules.c reads the lines) ---- */

/* The first bytes of path: 0 with n set, or -1 with a reason (not a regular file, unreadable). */
static int read_head(const char *path, char *head, size_t cap, size_t *n, char *why, size_t len)
{
    struct stat st;
    char err[300];
    int fd = vzcaps_open_regular(path, &st, err, sizeof err);
    if (fd < 0) {
        snprintf(why, len, "%s", err);
        return -1;
    }
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, head + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, len, "%s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *n = got;
    return 0;
}

int script_read(const char *path, struct vzcaps_shebang *sb, char *why, size_t len)
{
    char head[VZCAPS_SHEBANG_MAX + 1];
    size_t n = 0;
    if (read_head(path, head, sizeof head, &n, why, len) != 0)
        return -2;
    return vzcaps_shebang_parse(head, n, sb, why, len);
}

bool script_is_binary(const char *path)
{
    char head[4];
    size_t n = 0;
    char why[300];
    if (read_head(path, head, sizeof head, &n, why, sizeof why) != 0 || n < 4)
        return false;
    static const char *const magics[] = {"\177ELF", "\xca\xfe\xba\xbe", "\xca\xfe\xba\xbf", "\xcf\xfa\xed\xfe",
                                         "\xce\xfa\xed\xfe", "\xfe\xed\xfa\xcf", "\xfe\xed\xfa\xce"};
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++)
        if (memcmp(head, magics[i], 4) == 0)
            return true;
    return false;
}

/* Whether SIP protects path, as given or with its links resolved. */
static bool protected_file(const char *path)
{
    if (vzcaps_path_protected(path))
        return true;
    char *real = realpath(path, NULL);
    bool p = real && vzcaps_path_protected(real);
    free(real);
    return p;
}

static void line_text(const struct vzcaps_shebang *sb, char *out, size_t len)
{
    out[0] = '\0';
    vzcaps_appendf(out, len, "#!");
    for (size_t i = 0; i < sb->n_words; i++)
        vzcaps_appendf(out, len, "%s%s", i ? " " : "", vzcaps_shebang_word(sb, i));
}

static int copy_path(char *out, size_t len, const char *path, char *why, size_t whylen)
{
    if (strlen(path) >= len) {
        snprintf(why, whylen, "path longer than %zu bytes: %.200s...", len - 1, path);
        return -1;
    }
    memcpy(out, path, strlen(path) + 1);
    return 0;
}

int script_chain(const char *target, struct script_chain *c, char *why, size_t len)
{
    memset(c, 0, sizeof *c);
    struct vzcaps_shebang sb;
    int k = script_read(target, &sb, why, len);
    if (k == -2) /* executable but unreadable (mode 0111): exec can still run it; nothing to read */
        return copy_path(c->image, sizeof c->image, target, why, len) != 0 ? 126 : 0;
    if (k == 0) {
        c->binary_script = !script_is_binary(target);
        if (c->binary_script) { /* no #! and no executable format: started with /bin/sh, as execvp does */
            c->script = true;
            snprintf(c->line, sizeof c->line, "(no #! line)");
            snprintf(c->image, sizeof c->image, "/bin/sh");
            c->protected_image = protected_file("/bin/sh");
        } else if (copy_path(c->image, sizeof c->image, target, why, len) != 0)
            return 126;
        return 0;
    }
    c->script = true;
    if (k < 0)
        return 126;
    line_text(&sb, c->line, sizeof c->line);
    c->sb = sb;
    /* the program the kernel starts: the interpreter, through further #! lines */
    struct vzcaps_shebang cur = sb;
    for (c->depth = 1;; c->depth++) {
        size_t name = 0;
        char env_why[200] = "", found[4096];
        int e = vzcaps_shebang_env(&cur, &name, env_why, sizeof env_why);
        const char *interp = vzcaps_shebang_word(&cur, 0);
        if (e == 1 && c->depth == 1) {
            /* run starts NAME itself, found on PATH as env finds it */
            const char *prog = vzcaps_shebang_word(&cur, name);
            char nwhy[200];
            int rc = resolve_target(prog, found, sizeof found, nwhy, sizeof nwhy);
            if (rc != 0) {
                snprintf(why, len, "its #! line starts %s through env, and %s is %s%s", prog, prog, nwhy,
                         strchr(prog, '/') ? "" : " on PATH");
                return rc;
            }
            snprintf(c->env_name, sizeof c->env_name, "%s", prog);
            if (copy_path(c->start, sizeof c->start, found, why, len) != 0)
                return 126;
            c->rewritten = true;
            c->first_arg = name + 1;
            interp = found;
        } else if (e == -2) {
            snprintf(why, len, "its #! line%s: %s", c->depth == 1 ? "" : " of an interpreter", env_why);
            return 126;
        } else if (e < 0 && c->depth == 1) {
            snprintf(c->cannot_rewrite, sizeof c->cannot_rewrite, "%s", env_why);
        }
        if (protected_file(interp)) {
            c->protected_image = true;
            return copy_path(c->image, sizeof c->image, interp, why, len) != 0 ? 126 : 0;
        }
        struct vzcaps_shebang next;
        char iwhy[300];
        int ik = script_read(interp, &next, iwhy, sizeof iwhy);
        struct stat ist;
        if (ik == -2 && stat(interp, &ist) == 0 && S_ISREG(ist.st_mode) && access(interp, X_OK) == 0)
            /* a program we may not read (mode 0111), but the kernel may run */
            return copy_path(c->image, sizeof c->image, interp, why, len) != 0 ? 126 : 0;
        if (ik == -2) {
            snprintf(why, len, "its interpreter %s: %s", interp, iwhy);
            return access(interp, F_OK) != 0 ? 127 : 126;
        }
        if (ik == 0)
            return copy_path(c->image, sizeof c->image, interp, why, len) != 0 ? 126 : 0;
        if (ik < 0) {
            snprintf(why, len, "its interpreter %s is a script, and %s", interp, iwhy);
            return 126;
        }
        if (c->depth >= SCRIPT_DEPTH) {
            snprintf(why, len, "its #! line leads through more than %d scripts before a program", SCRIPT_DEPTH);
            return 126;
        }
        c->nested = true; /* the interpreter is a script: the kernel goes on to its interpreter */
        cur = next;
    }
}

char **script_argv(const struct script_chain *c, const char *target, char *const *cmd)
{
    size_t n = 0;
    while (cmd[n])
        n++;
    size_t extra = c->sb.n_words > c->first_arg ? c->sb.n_words - c->first_arg : 0;
    char **argv = calloc(n + extra + 3, sizeof *argv);
    if (!argv)
        return NULL;
    size_t k = 0;
    argv[k++] = (char *)c->start;
    for (size_t i = 0; i < extra; i++)
        argv[k++] = (char *)vzcaps_shebang_word(&c->sb, c->first_arg + i);
    argv[k++] = (char *)target;
    for (size_t i = 1; i < n; i++)
        argv[k++] = cmd[i];
    argv[k] = NULL;
    return argv;
}

void script_protected_advice(const struct script_chain *c, char *out, size_t len)
{
    out[0] = '\0';
    if (!c->protected_image)
        return;
    if (c->rewritten && strcmp(c->start, c->image) == 0)
        vzcaps_appendf(out, len, "vzcaps run starts %s (found on PATH for its #!.../env line) directly, but that is", c->image);
    else
        vzcaps_appendf(out, len, "%s starts %s,", c->binary_script ? "with no #! line, it" : "its #! line", c->image);
    vzcaps_appendf(out, len, " a program SIP protects: macOS removes %s there, so the script and everything it starts run stock",
                   "DYLD_INSERT_LIBRARIES");
    if (c->cannot_rewrite[0])
        vzcaps_appendf(out, len, " (vzcaps run cannot start the program directly: %s)", c->cannot_rewrite);
    vzcaps_appendf(out, len, "; name an interpreter outside %s in its #! line, or run vzcaps run -- INTERPRETER SCRIPT with one",
                   vzcaps_protected_dirs_text());
}

bool library_has_arch(const char *library, const char *arch)
{
    char archs[128] = "", err[256];
    if (macho_arch_list(library, archs, sizeof archs, err, sizeof err) != 0)
        return false;
    for (const char *p = archs; *p;) {
        size_t k = strcspn(p, " ");
        if (k == strlen(arch) && strncmp(p, arch, k) == 0)
            return true;
        p += k + (p[k] == ' ');
    }
    return false;
}
