/* macOS trigger: dyld interposing of Metal's exported device factories and of the calls that
 * start programs (the exec* family, posix_spawn, posix_spawnp). With the constructor, the
 * library's entry points: nothing of the library calls into this file.
 * Built and audited, run under emulation, not on a Mac. Never: decides anything (hooks.c,
 * spawn.c and the core do). */
#include "shim.h"

#include <errno.h>
#include <objc/message.h>
#include <spawn.h>
#include <stdarg.h>
#include <unistd.h>

/* <crt_externs.h>: the environment array (a library has no `environ` of its own on macOS). */
extern char ***_NSGetEnviron(void);

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
