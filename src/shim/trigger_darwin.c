/* macOS trigger and platform facts: dyld interposing of Metal's exported device factories and
 * of the calls that start programs (the exec* family, posix_spawn, posix_spawnp), sysctl for
 * the host chip and memory, one line to stderr and the unified log (syslog).
 * Built and audited, not run here. Never: decides anything (hooks.c and the core do). */
#include "shim.h"

#if defined(__arm64e__)
#include <ptrauth.h>
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <objc/message.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysctl.h>
#include <syslog.h>
#include <unistd.h>

const char vzcaps_platform_preload_var[] = "DYLD_INSERT_LIBRARIES";
const char vzcaps_platform_preload_seps[] = ":";
const char vzcaps_platform_library_name[] = "libvzcaps.dylib";

extern const char *getprogname(void);

void vzcaps_platform_host(struct vzcaps_host *host, char *brand, size_t brand_len)
{
    size_t n = brand_len;
    host->brand_origin = "machdep.cpu.brand_string";
    host->brand = sysctlbyname("machdep.cpu.brand_string", brand, &n, NULL, 0) == 0 && n > 0 ? brand : NULL;
    if (host->brand)
        brand[n < brand_len ? n : brand_len - 1] = '\0';
    uint64_t mem = 0;
    n = sizeof mem;
    host->physical_memory = sysctlbyname("hw.memsize", &mem, &n, NULL, 0) == 0 ? mem : 0;
    /* Apple, "About the Rosetta translation environment": 1 when translated; absent (ENOENT)
     * where Rosetta does not exist */
    int translated = 0;
    n = sizeof translated;
    host->translated = sysctlbyname("sysctl.proc_translated", &translated, &n, NULL, 0) == 0 && translated == 1;
}

const char *vzcaps_platform_exe_name(void)
{
    const char *name = getprogname();
    return name ? name : "?";
}

void vzcaps_platform_log(const char *line, size_t n, bool to_stderr)
{
    int saved = errno;
    syslog(LOG_NOTICE, "%.*s", (int)n, line);
    errno = saved;
    if (to_stderr)
        vzcaps_write_stderr_line(line, n + 1);
}

/* <mach-o/dyld.h> and <crt_externs.h>: the path dyld launched, and the environment array
 * (a library has no `environ` of its own on macOS; environ(7)). */
extern int _NSGetExecutablePath(char *buf, uint32_t *bufsize);
extern char ***_NSGetEnviron(void);

int vzcaps_platform_exe_path(char *buf, size_t len)
{
    static char launched[VZCAPS_PATH_MAX + 1];
    uint32_t size = sizeof launched;
    if (len < VZCAPS_PATH_MAX + 1 || _NSGetExecutablePath(launched, &size) != 0)
        return -1; /* too long for the buffer: not a path we can use */
    return realpath(launched, buf) ? 0 : -1; /* macOS's realpath writes at most PATH_MAX (1024) + 1 */
}

char ***vzcaps_platform_environ(void)
{
    return _NSGetEnviron();
}

/* Metal's exported factories, linked weakly: absent Metal means no interposing target. */
extern id MTLCreateSystemDefaultDevice(void) __attribute__((weak_import));
extern id MTLCopyAllDevices(void) __attribute__((weak_import));
extern id MTLCopyAllDevicesWithObserver(id *observer, void *handler) __attribute__((weak_import));

typedef unsigned long (*count_fn)(id, SEL);
typedef id (*index_fn)(id, SEL, unsigned long);

static void on_array(id devices, const char *path)
{
    if (!devices)
        return;
    SEL count = sel_registerName("count"), at = sel_registerName("objectAtIndex:");
    unsigned long n = ((count_fn)(void (*)(void))objc_msgSend)(devices, count);
    for (unsigned long i = 0; i < n; i++)
        vzcaps_hooks_on_device(((index_fn)(void (*)(void))objc_msgSend)(devices, at, i), path);
}

static id vz_create_default(void)
{
    id device = MTLCreateSystemDefaultDevice();
    vzcaps_hooks_on_device(device, VZCAPS_PATH_FACTORY("MTLCreateSystemDefaultDevice")); /* keeps errno */
    return device;
}

static id vz_copy_all(void)
{
    id devices = MTLCopyAllDevices();
    int saved = errno; /* as Metal left it: count and objectAtIndex: may set it */
    on_array(devices, VZCAPS_PATH_FACTORY("MTLCopyAllDevices"));
    errno = saved;
    return devices;
}

static id vz_copy_all_observed(id *observer, void *handler)
{
    id devices = MTLCopyAllDevicesWithObserver(observer, handler);
    int saved = errno;
    on_array(devices, VZCAPS_PATH_FACTORY("MTLCopyAllDevicesWithObserver"));
    errno = saved;
    return devices;
}

/* ---- the calls that start programs (spawn.c decides) ---- */
const unsigned vzcaps_platform_elf_machine = 0;
const bool vzcaps_platform_darwin = true;

int vzcaps_platform_execve(const char *path, char *const argv[], char *const envp[])
{
    return execve(path, argv, envp); /* from this image: the real one, not our interposer */
}

/* a pthread key: macOS keeps thread-specific data in fixed slots of the thread (no malloc, as
 * a _Thread_local's lazy allocation would); its destructor unmaps the mapping when the thread
 * exits (its first word is its size: spawn.c) */
static pthread_key_t scratch_key;
static void scratch_free(void *mapping)
{
    int saved = errno;
    munmap(mapping, *(size_t *)mapping);
    errno = saved;
}
static bool scratch_key_made;
void *vzcaps_platform_scratch_get(void)
{
    return scratch_key_made ? pthread_getspecific(scratch_key) : NULL;
}
int vzcaps_platform_scratch_set(void *mapping)
{
    return scratch_key_made && pthread_setspecific(scratch_key, mapping) == 0 ? 0 : -1;
}

bool vzcaps_platform_library_has_arm64e(void)
{
    /* the library's own file: its slices */
    Dl_info info;
    unsigned char head[VZCAPS_SLICES_HEAD];
    ssize_t n = -1;
    int fd = dladdr((const void *)vzcaps_platform_library_has_arm64e, &info) && info.dli_fname ? open(info.dli_fname, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) : -1;
    if (fd >= 0) {
        n = read(fd, head, sizeof head);
        close(fd);
    }
    enum vzcaps_slices sl = n > 0 ? vzcaps_slices_of(head, (size_t)n, 0) : VZCAPS_SLICES_NONE_KNOWN;
    return sl == VZCAPS_SLICES_ARM64E_ONLY || sl == VZCAPS_SLICES_UNIVERSAL;
}

bool vzcaps_platform_spawn_init(void)
{
    scratch_key_made = pthread_key_create(&scratch_key, scratch_free) == 0;
    return scratch_key_made;
}

static int vz_execve(const char *path, char *const argv[], char *const envp[])
{
    return vzcaps_exec_env(path, argv, envp);
}
/* libSystem's execv, execvp and execl* reach execve across images, which dyld reroutes too;
 * interposed here as well, so that nothing depends on how libSystem is split */
static int vz_execv(const char *path, char *const argv[])
{
    return vzcaps_exec_env(path, argv, *_NSGetEnviron());
}
static int vz_execvp(const char *file, char *const argv[])
{
    return vzcaps_exec_path_search(file, argv, *_NSGetEnviron());
}
static int vz_execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = vzcaps_execl(VZCAPS_EXECL_PATH, path, arg, ap);
    va_end(ap);
    return rc;
}
static int vz_execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = vzcaps_execl(VZCAPS_EXECL_ENV, path, arg, ap);
    va_end(ap);
    return rc;
}
static int vz_execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    int rc = vzcaps_execl(VZCAPS_EXECL_SEARCH, file, arg, ap);
    va_end(ap);
    return rc;
}

static int vz_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                          char *const argv[], char *const envp[])
{
    char *const *env = vzcaps_child_envp(path, false, argv, envp);
    return env ? posix_spawn(pid, path, fa, attr, argv, env) : ENOMEM;
}

static int vz_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                           char *const argv[], char *const envp[])
{
    char *const *env = vzcaps_child_envp(file, true, argv, envp);
    return env ? posix_spawnp(pid, file, fa, attr, argv, env) : ENOMEM;
}

/* dyld applies these when the library is inserted; calls from this image are not rerouted. */
struct interpose {
    const void *replacement;
    const void *original;
};
__attribute__((used, section("__DATA,__interpose"))) static const struct interpose interposers[] = {
    {(const void *)vz_create_default, (const void *)MTLCreateSystemDefaultDevice},
    {(const void *)vz_copy_all, (const void *)MTLCopyAllDevices},
    {(const void *)vz_copy_all_observed, (const void *)MTLCopyAllDevicesWithObserver},
    {(const void *)vz_execve, (const void *)execve},
    {(const void *)vz_execv, (const void *)execv},
    {(const void *)vz_execvp, (const void *)execvp},
    {(const void *)vz_execl, (const void *)execl},
    {(const void *)vz_execle, (const void *)execle},
    {(const void *)vz_execlp, (const void *)execlp},
    {(const void *)vz_posix_spawn, (const void *)posix_spawn},
    {(const void *)vz_posix_spawnp, (const void *)posix_spawnp},
};

void vzcaps_platform_trigger_install(void)
{
    /* interposing is static (the section above); nothing to arm at run time */
}

const void *vzcaps_platform_strip_return_address(const void *ret)
{
#if defined(__arm64e__)
    return ptrauth_strip(ret, ptrauth_key_return_address);
#else
    return ret;
#endif
}
