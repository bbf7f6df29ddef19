/* Linux (GNU Objective-C runtime) trigger, for tests and `make demo`: preempts
 * MTLCreateSystemDefaultDevice when preloaded with LD_PRELOAD, watches the runtime's class
 * loads, and preempts the calls that start programs (exec*, posix_spawn*) for selective
 * inheritance (spawn.c decides). With the constructor, the library's entry points: nothing of
 * the library calls into this file. */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>

extern char **environ;

typedef id (*factory_fn)(void);
static _Atomic(factory_fn) real_create;

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
 * has run; the GNU runtime calls its public _objc_load_callback (objc/runtime.h) for each class
 * it loads, so the -[_MTLDevice initGPUFamilySupport] watch finds _MTLDevice whenever it
 * appears. Set once, by the constructor of a process it configures (one more load-time lookup
 * of a data symbol, no dlsym). (macOS has no such need: Metal is loaded, and its classes
 * registered, before the library's constructor.) */
static void (*earlier_callback)(Class, struct objc_category *);

static void class_loaded(Class cls, struct objc_category *category)
{
    int saved = errno;
    if (earlier_callback)
        earlier_callback(cls, category);
    vzcaps_hooks_watch_base_class();
    errno = saved;
}

void vzcaps_platform_trigger_install(void)
{
    /* the real factory is looked up at the first call: a process without a device never pays it */
    if (vzcaps_effective->state == VZCAPS_ENABLED && _objc_load_callback != class_loaded)
        earlier_callback = _objc_load_callback, _objc_load_callback = class_loaded;
}

/* A library opened (dlopen): the caller scope does not judge what it loads here (a wrapper that
 * called ld.so itself would hide its caller's RUNPATH from it), so the process is taken as mixed;
 * ld.so is reached by a tail call, with the caller's own return address. */
__attribute__((visibility("default"))) void *dlopen(const char *file, int mode);
void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    int saved = errno;
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (file && vzcaps_effective->state == VZCAPS_ENABLED)
        vzcaps_hooks_image_added(NULL);
    errno = saved;
    return real(file, mode);
}

/* An image unloaded (dlclose): the caller scope's decisions per address are dropped once it is
 * gone (glibc unmaps before dlclose returns; dyld tells before it unmaps, platform_darwin.c). */
__attribute__((visibility("default"))) int dlclose(void *handle);
int dlclose(void *handle)
{
    static int (*real)(void *);
    if (!real)
        real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    int rc = real ? real(handle) : -1;
    if (vzcaps_effective->state == VZCAPS_ENABLED)
        vzcaps_hooks_images_gone();
    return rc;
}

/* ---- the calls that start programs (symbol preemption: this library comes first) ----
 * glibc's own callers inside libc (system, popen) reach its internal spawn, not these: their
 * children get the environment the constructor left, which holds nothing of ours (docs). */
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
    vzcaps_spawn_fn real = vzcaps_platform_real_spawn(search); /* errno kept */
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
