/* Linux (the GNU Objective-C runtime rig): the platform's facts and primitives the library's
 * other files ask for (the preload variable, the program's name and path, the environment
 * array, the kernel's execve, a per-thread scratch mapping, the real posix_spawn*).
 * Never: calls a file of the library above it (the triggers, hooks, spawn, the line); detects a
 * chip (there is none to detect; VZCAPS_HOST_CHIP names it). */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
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

/* The base name of argv[0], as a parent's inherit = matching judges a child; for an empty one,
 * the leaf of the path exec was given (AT_EXECFN, links kept), as macOS's getprogname() is. */
const char *vzcaps_platform_exe_name(void)
{
    const char *given = program_invocation_short_name[0] ? NULL : (const char *)getauxval(AT_EXECFN);
    return !given ? program_invocation_short_name : vzcaps_basename(given);
}

void vzcaps_platform_syslog(const char *line, size_t n)
{
    (void)line, (void)n; /* no system log on the rig: the line goes to standard error only */
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

/* Each object loaded now by its path (the program's own as dladdr names it, argv[0]: its base
 * name is all hooks.c reads); later loads and unloads reach hooks.c through the trigger */
static int each_object(struct dl_phdr_info *info, size_t size, void *added)
{
    (void)size;
    (*(void (**)(const char *))added)(info->dlpi_name[0] ? info->dlpi_name : program_invocation_short_name);
    return 0;
}

void vzcaps_platform_watch_images(void (*added)(const char *path), void (*gone)(void))
{
    int saved = errno;
    (void)gone;
    dl_iterate_phdr(each_object, &added);
    errno = saved;
}

const void *vzcaps_platform_strip_return_address(const void *ret)
{
    return ret;
}

#if defined(__x86_64__)
const unsigned vzcaps_platform_elf_machine = EM_X86_64;
#elif defined(__aarch64__)
const unsigned vzcaps_platform_elf_machine = EM_AARCH64;
#else
const unsigned vzcaps_platform_elf_machine = 0;
#endif
/* glibc's execvp; Linux's send_sig(sig, current, 0) for a write's SIGPIPE and SIGXFSZ, queued for
 * the writing thread alone (kernel/signal.c send_sig_info: PIDTYPE_PID) */
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

typedef vzcaps_spawn_fn spawn_fn;
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

vzcaps_spawn_fn vzcaps_platform_real_spawn(bool search)
{
    spawn_fn real = search ? real_spawnp : real_spawn;
    int saved = errno;
    if (!real) /* a process the library does not configure: resolved on its first spawn */
        real = (spawn_fn)(void (*)(void))dlsym(RTLD_NEXT, search ? "posix_spawnp" : "posix_spawn");
    errno = saved;
    return real;
}
