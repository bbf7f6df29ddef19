/* Linux (GNU Objective-C runtime) trigger and platform facts, for tests and `make demo`:
 * preempts MTLCreateSystemDefaultDevice when preloaded with LD_PRELOAD.
 * Never: detects a chip (there is none to detect; VZCAPS_HOST_CHIP names it). */
#define _GNU_SOURCE
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

const char vzcaps_platform_preload_var[] = "LD_PRELOAD";
const char vzcaps_platform_preload_seps[] = ": ";
const char vzcaps_platform_library_name[] = "libvzcaps.so";

void vzcaps_platform_host(struct vzcaps_host *host, char *brand, size_t brand_len)
{
    (void)brand;
    (void)brand_len;
    host->brand = NULL;
    host->brand_origin = "no chip detection on Linux";
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    host->physical_memory = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
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
static factory_fn real_create;

void vzcaps_platform_trigger_install(void)
{
    real_create = (factory_fn)(void (*)(void))dlsym(RTLD_NEXT, "MTLCreateSystemDefaultDevice");
}

/* Preempts the stand-in Metal library's factory; forwards, then hooks the device's class. */
__attribute__((visibility("default"))) id MTLCreateSystemDefaultDevice(void);
id MTLCreateSystemDefaultDevice(void)
{
    factory_fn real = real_create;
    if (!real) /* stock process, or Metal loaded after the constructor */
        real = (factory_fn)(void (*)(void))dlsym(RTLD_NEXT, "MTLCreateSystemDefaultDevice");
    if (!real)
        return nil;
    id device = real();
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
    if (!real)
        real = (exec_class_fn)(void (*)(void))dlsym(RTLD_NEXT, "__objc_exec_class");
    if (real)
        real(module);
    if (vzcaps_effective.state == VZCAPS_ENABLED)
        vzcaps_hooks_watch_base_class();
}

const void *vzcaps_platform_strip_return_address(const void *ret)
{
    return ret;
}
