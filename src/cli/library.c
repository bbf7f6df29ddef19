/* Finding things the command runs or injects: the library (next to the command, then in
 * ../lib; never PATH or the current directory, where a library could be planted), executables
 * on PATH, and running a helper program to completion. */
#define _XOPEN_SOURCE 700
#include "cli.h"
#include "macho.h"

#include <errno.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

char *read_text_file(const char *path, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    char why[200];
    int fd = vzcaps_open_regular(path, &st, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return NULL;
    }
    if (st.st_size > TEXT_FILE_MAX) { /* from its size alone, before reading */
        close(fd);
        snprintf(err, errlen, "%s: larger than %d MiB", path, TEXT_FILE_MAX >> 20);
        return NULL;
    }
    /* the size may change while reading: read at most the limit, and say so if it grew past */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            close(fd);
            snprintf(err, errlen, "%s: out of memory", path);
            return NULL;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            free(buf);
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            if (cap > TEXT_FILE_MAX) {
                close(fd);
                free(buf);
                snprintf(err, errlen, "%s: larger than %d MiB", path, TEXT_FILE_MAX >> 20);
                return NULL;
            }
            char *bigger = realloc(buf, (cap *= 2) + 1);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    close(fd);
    buf[n] = '\0';
    *len = n;
    return buf;
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
