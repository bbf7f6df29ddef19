/* Selective inheritance in the library (inherit = matching): the calls that start programs
 * come here (the trigger files interpose them), and the core decides, per child, whether it
 * keeps the injection and which environment it gets.
 * Never: changes the caller's environment array; calls malloc, a lock or getenv after the
 * constructor (a child's environment is built in this thread's own mapping, see scratch());
 * starts a child the decision could not be made for with the injection. */
#define _GNU_SOURCE /* MAP_ANON, O_CLOEXEC, dladdr on glibc under -std=c11 */
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static bool active;
/* whether the library's own file has an arm64e slice: read at the first child, not at start-up
 * (a process that starts none never reads it). 0: not read yet, 1: no, 2: yes; racing first
 * children read the same file and store the same answer. */
static atomic_int lib_arm64e;

static bool library_has_arm64e(void)
{
    int v = atomic_load_explicit(&lib_arm64e, memory_order_relaxed);
    if (!v) {
        int saved = errno;
        v = vzcaps_platform_library_has_arm64e() ? 2 : 1;
        errno = saved;
        atomic_store_explicit(&lib_arm64e, v, memory_order_relaxed);
    }
    return v == 2;
}
/* ---- the library by what its file is, whatever its name (issue 45: the command's rule) ---- */
static struct stat self_file; /* this library's file (dladdr, stat), looked up at the first need */
static char self_base[256];   /* the base name of the path the loader found it at */
static atomic_int self_known; /* 0: not yet, 1: known, 2: unknown */

/* Whether path is this library: the same file (itself, a link to it), or a regular file of its
 * size carrying its marker (a renamed copy); a bare name ld.so searched (LD_PRELOAD): the one it
 * found this library by. Read without blocking. */
static bool is_self(const char *path)
{
    struct stat st;
    Dl_info info;
    int v = atomic_load_explicit(&self_known, memory_order_acquire);
    if (!v) {
        v = dladdr((const void *)&self_file, &info) && info.dli_fname && stat(info.dli_fname, &self_file) == 0 ? 1 : 2;
        vzcaps_copy(self_base, sizeof self_base, v == 1 ? vzcaps_basename(info.dli_fname) : "");
        atomic_store_explicit(&self_known, v, memory_order_release);
    }
    if (!vzcaps_find_char(path, '/') && vzcaps_streq(vzcaps_platform_preload_var, "LD_PRELOAD"))
        return v == 1 && vzcaps_streq(path, self_base);
    if (v != 1 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != self_file.st_size)
        return false;
    if (st.st_dev == self_file.st_dev && st.st_ino == self_file.st_ino)
        return true;
    static const char marker[] = VZCAPS_SELF_MARKER " library ";
    size_t size = (size_t)st.st_size, ml = sizeof marker - 1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    void *m = fd >= 0 ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    const char *b = m != MAP_FAILED ? m : NULL, *c = b;
    bool found = false;
    while (c && !found && (size_t)(c - b) + ml <= size && (c = memchr(c, marker[0], size - ml + 1 - (size_t)(c - b))))
        found = memcmp(c++, marker, ml) == 0;
    if (m != MAP_FAILED)
        munmap(m, size);
    if (fd >= 0)
        close(fd);
    return found;
}

size_t vzcaps_library_facts(const char *value, bool *ours, size_t n)
{
    const char *seps = vzcaps_platform_preload_seps, *lib = vzcaps_platform_library_name;
    if (!value || vzcaps_strip_library(value, seps, lib, NULL, 0) == 0)
        return 0; /* every element named as the library (or none): the name rule says it all */
    int saved = errno;
    size_t k = 0;
    for (const char *p = value; *p && k < n; k++) {
        char path[VZCAPS_PATH_MAX + 1];
        size_t len = strcspn(p, seps);
        ours[k] = len && len < sizeof path && (memcpy(path, p, len), path[len] = '\0', !vzcaps_streq(vzcaps_basename(path), lib)) &&
                  is_self(path);
        p += len + (p[len] != '\0');
    }
    errno = saved;
    return k;
}

static char matches[VZCAPS_CONFIG_MAX_SIZE + 1];
static const char **saved;
static size_t n_saved;
static char lib_path[VZCAPS_PATH_MAX + 1];

/* The constructor's half, before it strips env: what a kept child gets back. 0, or -1 (out
 * of memory, our library not found in the preload variable, patterns too long). */
int vzcaps_spawn_setup(char **env, const char *file_text, size_t len)
{
    size_t n = 0;
    const char *preload = NULL, *var = vzcaps_platform_preload_var;
    size_t vl = strlen(var);
    for (char **e = env; e && *e; e++) {
        n += vzcaps_env_is_ours(*e);
        if (!preload && vzcaps_env_is(*e, var))
            preload = *e + vl + 1;
    }
    if (!preload || vzcaps_config_matches(file_text ? file_text : "", file_text ? len : 0, matches, sizeof matches) < 0)
        return -1;
    /* our library: the element of the preload list named as ours, or ours by what the file is */
    bool lib[64];
    size_t n_lib = vzcaps_library_facts(preload, lib, 64);
    for (size_t i = 0; *preload && !lib_path[0]; i++) {
        size_t k = strcspn(preload, vzcaps_platform_preload_seps);
        if (k <= VZCAPS_PATH_MAX) {
            memcpy(lib_path, preload, k);
            lib_path[k] = '\0';
            if (!(i < n_lib && lib[i]) && !vzcaps_streq(vzcaps_basename(lib_path), vzcaps_platform_library_name))
                lib_path[0] = '\0';
        }
        preload += k + (preload[k] != '\0');
    }
    if (!lib_path[0] || !(saved = malloc((n + 1) * sizeof *saved)))
        return -1;
    for (char **e = env; e && *e; e++)
        if (vzcaps_env_is_ours(*e))
            saved[n_saved++] = *e; /* the strings stay: stripping moves pointers, never frees them */
    if (!vzcaps_platform_spawn_init())
        return -1;
    active = true;
    return 0;
}

/* Memory for one child's environment: a mapping kept per thread (the platform's slot), grown
 * when too small; its first word holds its size. In a vfork child it is the suspended parent
 * thread's, which nothing else uses until the child has exec'd or exited: no per-spawn leak,
 * no allocator, no lock. */
static void *scratch(size_t need)
{
    char *cur = vzcaps_platform_scratch_get();
    size_t size = cur ? *(size_t *)(void *)cur : 0;
    if (cur && size - 16 >= need)
        return cur + 16;
    size_t grown = (need + 16 + 65535) & ~(size_t)65535;
    void *m = mmap(NULL, grown, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (m == MAP_FAILED || vzcaps_platform_scratch_set(m) != 0) {
        if (m != MAP_FAILED)
            munmap(m, grown);
        return NULL;
    }
    *(size_t *)m = grown;
    if (cur)
        munmap(cur, size);
    return (char *)m + 16;
}

static enum vzcaps_slices slices_of_file(const char *path)
{
    unsigned char head[VZCAPS_SLICES_HEAD];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return VZCAPS_SLICES_NONE_KNOWN;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, sizeof head) : -1;
    close(fd);
    return n > 0 ? vzcaps_slices_of(head, (size_t)n, vzcaps_platform_elf_machine) : VZCAPS_SLICES_NONE_KNOWN;
}

/* The PATH this process's execvp and posix_spawnp search, read from the array itself (unset: the
 * platform libc's default, core's vzcaps_search_path). */
static const char *search_path(void)
{
    return vzcaps_search_path(vzcaps_env_get((const char *const *)*vzcaps_platform_environ(), "PATH"), vzcaps_platform_darwin);
}

/* One candidate dir/file of a PATH search (an empty dir is the current directory): in the
 * caller's stack buffer when it fits, else in a mapping of its own, as a PATH element may be as
 * long as the kernel takes and the library's frames are small. NULL when there is no memory. */
struct cand {
    char *s;
    size_t mapped;
};

static char *cand_make(struct cand *c, char *buf, size_t len, const char *dir, size_t k, const char *file, size_t fl)
{
    size_t at = k ? k : 1, need = at + 1 + fl + 1;
    c->s = buf, c->mapped = 0;
    if (need > len) {
        void *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
        if (m == MAP_FAILED)
            return c->s = NULL;
        c->s = m, c->mapped = need;
    }
    memcpy(c->s, k ? dir : ".", at);
    c->s[at] = '/';
    memcpy(c->s + at + 1, file, fl + 1);
    return c->s;
}

static void cand_done(struct cand *c)
{
    if (c->mapped) {
        int e = errno;
        munmap(c->s, c->mapped);
        errno = e;
        c->mapped = 0;
    }
}

/* The first dir/file on PATH that exec would run as the libc's search goes (core's
 * vzcaps_search_step over stat(2): a regular file we may execute runs), in c (cand_done it); file
 * itself when it holds '/' or the search finds none. */
static const char *resolve(const char *file, struct cand *c, char *buf, size_t len)
{
    c->mapped = 0;
    if (strchr(file, '/'))
        return file;
    size_t fl = strlen(file), k;
    bool eacces = false;
    const char *dir;
    for (const char *p = search_path(); vzcaps_path_entry(&p, &dir, &k);) {
        struct stat st;
        if (k + fl + 2 > PATH_MAX || !cand_make(c, buf, len, dir, k, file, fl))
            continue; /* longer than a path: passed over, as execvp does */
        bool there = stat(c->s, &st) == 0, runs = there && S_ISREG(st.st_mode) && access(c->s, X_OK) == 0;
        if (runs)
            return c->s;
        int step = vzcaps_search_step(there ? EACCES : errno, there, vzcaps_platform_darwin, &eacces);
        cand_done(c);
        if (step != VZCAPS_SEARCH_NEXT)
            break;
    }
    return file;
}

/* Whether envp is an environment this thread's scratch mapping holds: one the library built.
 * libSystem's posix_spawnp calls posix_spawn for each PATH candidate, and dyld reroutes that
 * call to our replacement (Libc sys/posix_spawn.c; the shared cache is patched for interposed
 * functions): the environment built for the outer call comes back, and rebuilding it would
 * write the new one over the one being read. */
static bool built_here(char *const envp[])
{
    const char *cur = vzcaps_platform_scratch_get();
    size_t size = cur ? *(const size_t *)(const void *)cur : 0;
    return cur && (const char *)envp >= cur && (const char *)envp < cur + size;
}

static char *const *child_envp(const char *file, bool search, char *const argv[], char *const envp[]);

/* errno is as the caller had it, but for ENOMEM when the child must not start */
char *const *vzcaps_child_envp(const char *file, bool search, char *const argv[], char *const envp[])
{
    int saved = errno;
    char *const *out = child_envp(file, search, argv, envp);
    if (out)
        errno = saved;
    return out;
}

static char *const *child_envp(const char *file, bool search, char *const argv[], char *const envp[])
{
    static char *const empty[] = {NULL};
    if (!envp) /* the kernel takes NULL as no variables (execve, environ after clearenv); here NULL is "refused" */
        envp = empty;
    if (!active || built_here(envp)) /* built by the call this one is nested in: already decided */
        return envp;
    char buf[VZCAPS_PATH_MAX + 1];
    struct cand c = {NULL, 0};
    const char *path = search ? resolve(file, &c, buf, sizeof buf) : file;
    int keep = vzcaps_child_decision(path, argv && argv[0] ? argv[0] : "", matches, slices_of_file(path), library_has_arm64e(), NULL,
                                     0) == VZCAPS_CHILD_KEEP; /* no reason: nothing is formatted here */
    cand_done(&c);
    bool lib[64]; /* the library by what the file is, in the preload entry the child is given */
    size_t n_lib = vzcaps_library_facts(vzcaps_env_get((const char *const *)envp, vzcaps_platform_preload_var), lib, 64);
    struct vzcaps_child_env_in in = {envp, saved, n_saved, vzcaps_platform_preload_var, vzcaps_platform_preload_seps,
                                     vzcaps_platform_library_name, lib_path, lib, n_lib};
    char *const *out = NULL;
    long need = vzcaps_child_env(&in, keep, NULL, 0, &out);
    if (need == 0)
        return out;
    void *mem = scratch((size_t)need);
    if (!mem || vzcaps_child_env(&in, keep, (char *)mem, (size_t)need, &out) != 0) {
        errno = ENOMEM; /* the child is not started, rather than started with what it must not get */
        return NULL;
    }
    return out;
}

/* A file the kernel will not run (ENOEXEC), run by /bin/sh as execvp does: the shell's argv on
 * the stack, or in a mapping of its own (envp may live in the scratch mapping). */
static void exec_sh(const char *path, char *const argv[], char *const envp[])
{
    char *small[VZCAPS_EXECL_MAX + 2], **sh = small;
    size_t n = 0;
    while (argv[n])
        n++;
    size_t bytes = (n + 2) * sizeof *sh;
    if (n > VZCAPS_EXECL_MAX) {
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
        if (m == MAP_FAILED) {
            errno = E2BIG;
            return;
        }
        sh = m;
    }
    sh[0] = (char *)vzcaps_search_sh_argv0(argv[0], vzcaps_platform_darwin), sh[1] = (char *)path, sh[2] = NULL; /* an empty argv too */
    for (size_t i = 1; i <= n; i++)
        sh[i + 1] = argv[i];
    vzcaps_platform_execve("/bin/sh", sh, envp);
    if (sh != small) {
        int e = errno;
        munmap(sh, bytes);
        errno = e;
    }
}

/* execvp's search with an environment of our choosing, by the platform libc's rules (core's
 * vzcaps_search_step: Libc's on macOS, glibc's on the rig): each PATH entry in turn, a file
 * the kernel will not run (ENOEXEC) run by /bin/sh. */
int vzcaps_exec_search(const char *file, char *const argv[], char *const envp[])
{
    if (!*file)
        return errno = ENOENT, -1;
    char buf[VZCAPS_PATH_MAX + 1];
    bool eacces = false, given = strchr(file, '/');
    size_t fl = strlen(file), k = 0;
    const char *p = given ? NULL : search_path(), *dir = NULL;
    while (given || vzcaps_path_entry(&p, &dir, &k)) {
        struct cand c = {NULL, 0};
        const char *path = file;
        if (!given && k + fl + 2 > PATH_MAX)
            continue; /* longer than a path: passed over, as execvp does */
        if (!given && !(path = cand_make(&c, buf, sizeof buf, dir, k, file, fl)))
            return errno = ENOMEM, -1;
        vzcaps_platform_execve(path, argv, envp);
        int err = errno;
        struct stat st;
        int step = vzcaps_search_step(err, err != ENOENT && err != ENOTDIR && stat(path, &st) == 0, vzcaps_platform_darwin, &eacces);
        errno = err;
        if (step == VZCAPS_SEARCH_SHELL)
            exec_sh(path, argv, envp);
        cand_done(&c);
        if (given || step != VZCAPS_SEARCH_NEXT)
            return -1;
    }
    errno = eacces ? EACCES : ENOENT;
    return -1;
}

/* ---- the exec* family, for both triggers ---- */

int vzcaps_exec_env(const char *path, char *const argv[], char *const envp[])
{
    char *const *env = vzcaps_child_envp(path, false, argv, envp);
    return env ? vzcaps_platform_execve(path, argv, env) : -1;
}

int vzcaps_exec_path_search(const char *file, char *const argv[], char *const envp[])
{
    char *const *env = vzcaps_child_envp(file, true, argv, envp);
    return env ? vzcaps_exec_search(file, argv, env) : -1;
}

/* execl, execle, execlp: the arguments into an array, on the stack up to VZCAPS_EXECL_MAX,
 * else in a mapping of their own (unmapped if the exec returns; any number, as libc's) */
int vzcaps_execl(int kind, const char *file, const char *arg0, va_list ap)
{
    va_list count;
    va_copy(count, ap);
    size_t n = 1;
    if (arg0)
        while (va_arg(count, char *))
            n++;
    va_end(count);
    char *small[VZCAPS_EXECL_MAX + 1], **argv = small;
    size_t bytes = (n + 1) * sizeof *argv;
    if (n > VZCAPS_EXECL_MAX) {
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
        if (m == MAP_FAILED)
            return errno = E2BIG, -1;
        argv = m;
    }
    argv[0] = (char *)arg0;
    for (size_t i = 1; arg0 && i <= n; i++)
        argv[i] = va_arg(ap, char *); /* the last is the NULL */
    argv[arg0 ? n : 1] = NULL;
    char *const *envp = kind == VZCAPS_EXECL_ENV ? va_arg(ap, char *const *) : *vzcaps_platform_environ();
    int rc = kind == VZCAPS_EXECL_SEARCH ? vzcaps_exec_path_search(file, argv, envp) : vzcaps_exec_env(file, argv, envp);
    if (argv != small) {
        int e = errno;
        munmap(argv, bytes);
        errno = e;
    }
    return rc;
}
