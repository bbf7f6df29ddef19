/* Linux (GNU Objective-C runtime) trigger and platform facts, for tests and `make demo`:
 * preempts MTLCreateSystemDefaultDevice when preloaded with LD_PRELOAD, and the calls that
 * start programs (exec*, posix_spawn*) for selective inheritance (spawn.c decides).
 * Never: detects a chip (there is none to detect; VZCAPS_HOST_CHIP names it). */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <sys/mman.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

const char vzcaps_platform_preload_var[] = "LD_PRELOAD";
const char vzcaps_platform_preload_seps[] = ": ";
const char vzcaps_platform_library_name[] = "libvzcaps.so";

static uint64_t physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

void vzcaps_platform_host(struct vzcaps_host *host, char *brand, size_t brand_len)
{
    (void)brand;
    (void)brand_len;
    host->brand = NULL;
    host->brand_origin = "no chip detection on Linux";
    host->physical_memory = 0;
    host->physical_memory_of = physical_memory; /* asked only by a working-set floor */
}

const char *vzcaps_platform_exe_name(void)
{
    return program_invocation_short_name;
}

void vzcaps_platform_log(const char *line, size_t n, bool to_stderr)
{
    if (to_stderr)
        vzcaps_write_stderr_line(line, n + 1);
}

int vzcaps_platform_exe_path(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len);
    if (n <= 0 || (size_t)n >= len)
        return -1; /* a path that does not fit is no path we can use */
    buf[n] = '\0';
    return 0;
}

char ***vzcaps_platform_environ(void)
{
    return &environ;
}

typedef id (*factory_fn)(void);
static _Atomic(factory_fn) real_create;

void vzcaps_platform_trigger_install(void)
{
    /* the real factory is looked up at the first call: a process without a device never pays it */
}

/* Preempts the stand-in Metal library's factory; forwards, then hooks the device's class. */
__attribute__((visibility("default"))) id MTLCreateSystemDefaultDevice(void);
id MTLCreateSystemDefaultDevice(void)
{
    factory_fn real = atomic_load_explicit(&real_create, memory_order_relaxed);
    int saved = errno;
    if (!real) { /* the first call (any thread may look it up: the same answer) */
        real = (factory_fn)(void (*)(void))dlsym(RTLD_NEXT, "MTLCreateSystemDefaultDevice");
        atomic_store_explicit(&real_create, real, memory_order_relaxed);
    }
    errno = saved;
    if (!real)
        return nil;
    id device = real(); /* errno as the real factory leaves it; vzcaps_hooks_on_device keeps it */
    vzcaps_hooks_on_device(device, VZCAPS_PATH_FACTORY("MTLCreateSystemDefaultDevice"));
    return device;
}

/* Classes compiled into the executable itself register after every library's constructor
 * has run, through __objc_exec_class; preempting it lets the -[_MTLDevice
 * initGPUFamilySupport] hook find _MTLDevice whenever it appears. (macOS has no equivalent
 * need: Metal is loaded, and its classes registered, before the library's constructor.) */
typedef void (*exec_class_fn)(void *module);

__attribute__((visibility("default"))) void __objc_exec_class(void *module);
void __objc_exec_class(void *module)
{
    static exec_class_fn real;
    int saved = errno;
    if (!real)
        real = (exec_class_fn)(void (*)(void))dlsym(RTLD_NEXT, "__objc_exec_class");
    errno = saved;
    if (real)
        real(module);
    saved = errno;
    if (vzcaps_effective->state == VZCAPS_ENABLED)
        vzcaps_hooks_watch_base_class();
    errno = saved;
}

const void *vzcaps_platform_strip_return_address(const void *ret)
{
    return ret;
}

/* ---- the calls that start programs (symbol preemption: this library comes first) ----
 * glibc's own callers inside libc (system, popen) reach its internal spawn, not these: their
 * children get the environment the constructor left, which holds nothing of ours (docs). */
#if defined(__x86_64__)
const unsigned vzcaps_platform_elf_machine = EM_X86_64;
#elif defined(__aarch64__)
const unsigned vzcaps_platform_elf_machine = EM_AARCH64;
#else
const unsigned vzcaps_platform_elf_machine = 0;
#endif
const bool vzcaps_platform_darwin = false;

int vzcaps_platform_execve(const char *path, char *const argv[], char *const envp[])
{
    return (int)syscall(SYS_execve, path, argv, envp);
}

/* initial-exec: a preloaded library's TLS is in the static block, so no access allocates.
 * The mapping is unmapped when its thread exits, through a pthread key's destructor (a host
 * that starts each child from a new thread lost 64 KiB and a mapping per thread). glibc keeps
 * the values of its first 32 keys in the thread itself (specific_1stblock, nptl/descr.h); a
 * later key's first value is calloc'ed, which must not happen here (a vfork child shares the
 * parent's heap): with such a key the mapping is kept for the life of the process, as before. */
#define GLIBC_KEYS_IN_THREAD 32
static __thread void *scratch_slot __attribute__((tls_model("initial-exec")));
static pthread_key_t scratch_key;
static bool scratch_key_ok;

static void scratch_free(void *mapping)
{
    int saved = errno;
    if (mapping == scratch_slot)
        scratch_slot = NULL;
    munmap(mapping, *(size_t *)mapping); /* its first word is its size (spawn.c) */
    errno = saved;
}

void *vzcaps_platform_scratch_get(void)
{
    return scratch_slot;
}
int vzcaps_platform_scratch_set(void *mapping)
{
    scratch_slot = mapping;
    if (scratch_key_ok)
        pthread_setspecific(scratch_key, mapping);
    return 0;
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[],
                        char *const[]);
static spawn_fn real_spawn, real_spawnp;

bool vzcaps_platform_library_has_arm64e(void)
{
    return false; /* ELF: no slices */
}

bool vzcaps_platform_spawn_init(void)
{
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
    if (scratch_key_ok && scratch_key >= GLIBC_KEYS_IN_THREAD) {
        pthread_key_delete(scratch_key);
        scratch_key_ok = false;
    }
    real_spawn = (spawn_fn)(void (*)(void))dlsym(RTLD_NEXT, "posix_spawn");
    real_spawnp = (spawn_fn)(void (*)(void))dlsym(RTLD_NEXT, "posix_spawnp");
    return real_spawn && real_spawnp;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return vzcaps_exec_env(path, argv, envp);
}
EXPORT int execv(const char *path, char *const argv[])
{
    return vzcaps_exec_env(path, argv, environ);
}
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return vzcaps_exec_path_search(file, argv, envp);
}
EXPORT int execvp(const char *file, char *const argv[])
{
    return vzcaps_exec_path_search(file, argv, environ);
}

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = vzcaps_execl(VZCAPS_EXECL_PATH, path, arg, ap);
    va_end(ap);
    return rc;
}
EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = vzcaps_execl(VZCAPS_EXECL_ENV, path, arg, ap);
    va_end(ap);
    return rc;
}
EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = vzcaps_execl(VZCAPS_EXECL_SEARCH, file, arg, ap);
    va_end(ap);
    return rc;
}

static int spawn(bool search, pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                 char *const argv[], char *const envp[])
{
    spawn_fn real = search ? real_spawnp : real_spawn;
    int saved = errno;
    if (!real) /* a process the library does not configure: resolved on its first spawn */
        real = (spawn_fn)(void (*)(void))dlsym(RTLD_NEXT, search ? "posix_spawnp" : "posix_spawn");
    errno = saved; /* vzcaps_child_envp keeps it too, but for ENOMEM */
    if (!real)
        return ENOSYS;
    char *const *env = vzcaps_child_envp(file, search, argv, envp);
    return env ? real(pid, file, fa, attr, argv, env) : ENOMEM;
}
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                       char *const argv[], char *const envp[])
{
    return spawn(false, pid, path, fa, attr, argv, envp);
}
EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                        char *const argv[], char *const envp[])
{
    return spawn(true, pid, file, fa, attr, argv, envp);
}
