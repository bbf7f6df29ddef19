/* The files next to this command and the facts the launch reads from them: the library (never
 * from PATH or the current directory) and whether a target can load it, installed pages, the
 * Mach-O slice that runs and what dyld does there (from src/macho), and run's check of its
 * target. Owns: those facts. Never: decides what starts (plan.c) or words it (words.c). */
#define _XOPEN_SOURCE 700
#include "launch.h"
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

int library_near(const char *command, char *buf, size_t len, char *tried, size_t tried_len)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", command);
    tried[0] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    const char *rel[] = {"", "/../lib"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, len, "%s%s/%s", dir, rel[i], library_file);
        vzcaps_appendf(tried, tried_len, "%s%s", i ? ", " : "", buf);
        if (access(buf, R_OK) == 0) {
            char *real = realpath(buf, NULL);
            if (real && strlen(real) < len)
                snprintf(buf, len, "%s", real);
            free(real);
            return 0;
        }
    }
    return -1;
}

int find_library(char *buf, size_t len, char *tried, size_t tried_len)
{
    return library_near(self_path_kept(), buf, len, tried, tried_len);
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

/* The file offset of virtual address va in the ELF file (its PT_LOAD segment), or -1. */
static long long elf_offset(int fd, const unsigned char *h, unsigned long long va)
{
    bool le = h[5] == 1, is64 = h[4] == 2;
    unsigned long long phoff = getn(h + (is64 ? 32 : 28), is64 ? 8 : 4, le);
    unsigned phentsize = get16(h + (is64 ? 54 : 42), le), phnum = get16(h + (is64 ? 56 : 44), le);
    for (unsigned i = 0; i < phnum && i < 256 && phentsize >= 32 && phentsize <= 64; i++) {
        unsigned char ph[64];
        if (pread(fd, ph, phentsize, (off_t)(phoff + (unsigned long long)i * phentsize)) != (ssize_t)phentsize)
            return -1;
        if (getn(ph, 4, le) != 1 /* PT_LOAD */)
            continue;
        unsigned long long off = getn(ph + (is64 ? 8 : 4), is64 ? 8 : 4, le), vaddr = getn(ph + (is64 ? 16 : 8), is64 ? 8 : 4, le);
        unsigned long long filesz = getn(ph + (is64 ? 32 : 16), is64 ? 8 : 4, le);
        if (va >= vaddr && va - vaddr < filesz)
            return (long long)(off + (va - vaddr));
    }
    return -1;
}

/* The dynamic section's DT_NEEDED names, each handed to each(ctx, name) until it returns true. */
static bool elf_needed(int fd, const unsigned char *h, bool (*each)(void *, const char *), void *ctx)
{
    bool le = h[5] == 1, is64 = h[4] == 2;
    unsigned w = is64 ? 8 : 4;
    unsigned long long phoff = getn(h + (is64 ? 32 : 28), w, le);
    unsigned phentsize = get16(h + (is64 ? 54 : 42), le), phnum = get16(h + (is64 ? 56 : 44), le);
    unsigned long long dyn = 0, dynsz = 0, strtab = 0;
    for (unsigned i = 0; i < phnum && i < 256 && phentsize >= 32 && phentsize <= 64 && !dynsz; i++) {
        unsigned char ph[64];
        if (pread(fd, ph, phentsize, (off_t)(phoff + (unsigned long long)i * phentsize)) != (ssize_t)phentsize)
            return false;
        if (getn(ph, 4, le) == 2 /* PT_DYNAMIC */)
            dyn = getn(ph + (is64 ? 8 : 4), w, le), dynsz = getn(ph + (is64 ? 32 : 16), w, le);
    }
    for (unsigned long long at = 0; at + 2 * w <= dynsz && !strtab; at += 2 * w) { /* DT_STRTAB first */
        unsigned char d[16];
        if (pread(fd, d, 2 * w, (off_t)(dyn + at)) != (ssize_t)(2 * w) || getn(d, w, le) == 0)
            break;
        if (getn(d, w, le) == 5)
            strtab = getn(d + w, w, le);
    }
    long long str = strtab ? elf_offset(fd, h, strtab) : -1;
    for (unsigned long long at = 0; str >= 0 && at + 2 * w <= dynsz; at += 2 * w) {
        unsigned char d[16];
        char name[256];
        if (pread(fd, d, 2 * w, (off_t)(dyn + at)) != (ssize_t)(2 * w) || getn(d, w, le) == 0)
            break;
        ssize_t n = getn(d, w, le) == 1 /* DT_NEEDED */ ? pread(fd, name, sizeof name - 1, (off_t)(str + (long long)getn(d + w, w, le))) : -1;
        if (n > 0 && (name[n] = '\0', each(ctx, name)))
            return true;
    }
    return false;
}

int launch_image_libs(const char *path, bool (*each)(void *, const char *), void *ctx)
{
    struct stat st;
    char err[200];
    unsigned char h[64];
    int fd = vzcaps_open_regular(path, &st, err, sizeof err);
    if (fd < 0)
        return -1;
    int rc = -1;
    if (pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && memcmp(h, "\177ELF", 4) == 0)
        rc = elf_needed(fd, h, each, ctx) ? 1 : 0;
    close(fd);
    return rc;
}

int launch_elf_static(const char *path)
{
    struct stat st;
    char err[200];
    int fd = vzcaps_open_regular(path, &st, err, sizeof err);
    if (fd < 0)
        return -1;
    struct elf_id id;
    int rc = elf_identify(fd, &id);
    close(fd);
    if (rc != 0)
        return -1;
    /* an executable (ET_EXEC, or ET_DYN: a static PIE) with no PT_INTERP: the kernel starts it
     * itself, no ld.so runs, nothing reads LD_PRELOAD */
    return (id.type == 2 || id.type == 3) && !id.interp ? 1 : 0;
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

/* ---- configuration shared with the library ---- */

/* ---- the launch plan: what run, --dry-run, launchd, check, inspect and doctor show ---- */

bool installed_file(const char *const *rels, size_t n, char *buf, size_t len)
{
    char self[1024];
    self_path(self, sizeof self);
    char *slash = strrchr(self, '/');
    if (!slash)
        return false;
    *slash = '\0';
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        int w = snprintf(buf, len, "%s/../%s", self, rels[i]);
        if (w < 0 || (size_t)w >= len || stat(buf, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        char *real = realpath(buf, NULL);
        if (real && strlen(real) < len)
            snprintf(buf, len, "%s", real);
        free(real);
        return true;
    }
    buf[0] = '\0';
    return false;
}

/* Whether vzcaps prepare would make a copy that honours injection: ignored because of the
 * hardened runtime, library validation or a restricted signature, not because it is Apple's. */
bool macho_prepare_helps(const struct macho_slice *s)
{
    /* a re-signed copy keeps a __RESTRICT section and encrypted segments */
    return s->injection == MACHO_INJECTION_IGNORED && !s->platform_binary && !s->restrict_section &&
           !(s->encryption_cmd && s->cryptid);
}

/* Which slice runs: on Apple silicon arm64e, then arm64, then x86_64 (Rosetta). */
const struct macho_slice *macho_running_slice(const struct macho_file *mf)
{
    const char *order[] = {"arm64e", "arm64", "x86_64", "x86_64h"};
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < mf->n_slices; i++)
            if (strcmp(mf->slices[i].arch, order[k]) == 0)
                return &mf->slices[i];
    return mf->n_slices ? &mf->slices[0] : NULL;
}
