/* macOS: the platform's facts and primitives the library's other files ask for: sysctl for the
 * host chip and memory, the program's name and path, the environment array, the unified log
 * (syslog), the kernel's execve, a per-thread scratch mapping, the library's own slices.
 * Built and audited, run under emulation, not on a Mac. Never: calls a file of the library above
 * it (the triggers, hooks, spawn, the line); decides anything (hooks.c and the core do). */
#include "shim.h"

#if defined(__arm64e__)
#include <ptrauth.h>
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
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
extern char ***_NSGetArgv(void); /* <crt_externs.h> */

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

/* The base name of argv[0] (NXArgv, which dyld sets: dyldMain.cpp:890), as on Linux and as a
 * parent's inherit = matching judges a child; for an empty or absent argv[0], the leaf of the
 * path exec was given, which is what getprogname() is on macOS (Libc getprogname.c:14-19 returns
 * dyld's progname: DyldProcessConfig.cpp:483-485, the kernel's executable_path, links kept). */
const char *vzcaps_platform_exe_name(void)
{
    char **argv = *_NSGetArgv();
    const char *name = argv && argv[0] && argv[0][0] ? vzcaps_basename(argv[0]) : getprogname();
    return name ? name : "";
}

void vzcaps_platform_syslog(const char *line, size_t n)
{
    int saved = errno;
    syslog(LOG_NOTICE, "%.*s", (int)n, line);
    errno = saved;
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

const unsigned vzcaps_platform_elf_machine = 0;
/* Libc's execvp; xnu's psignal(proc, ...) for a write's SIGPIPE and SIGXFSZ (sys_generic.c:601-606,
 * vfs_vnops.c:1376-1386), delivered to any thread that does not block it (kern_sig.c:1932-1966) */
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

/* <mach-o/dyld.h>. dyld calls an add-image function at once for every image loaded (under its
 * loaders lock: DyldAPIs.cpp:802-832) and then for each new one, a remove-image function for
 * each image going, before it is unmapped (DyldRuntimeState.cpp:1630 and :1901-1925, then
 * :2117). The images loaded now are named by index instead (DyldAPIs.cpp:227-237, :300-309):
 * dladdr of a header in the shared cache walks the cache's images (DyldAPIs.cpp:902-950). */
extern void _dyld_register_func_for_add_image(void (*)(const void *mh, intptr_t slide));
extern void _dyld_register_func_for_remove_image(void (*)(const void *mh, intptr_t slide));
extern uint32_t _dyld_image_count(void);
extern const char *_dyld_get_image_name(uint32_t index);
static void (*image_added)(const char *), (*image_gone)(void);
static _Atomic bool flooding;

static void dyld_added(const void *mh, intptr_t slide)
{
    Dl_info info;
    int saved = errno;
    (void)slide;
    if (!atomic_load(&flooding) && dladdr(mh, &info) && info.dli_fname)
        image_added(info.dli_fname);
    errno = saved;
}

static void dyld_gone(const void *mh, intptr_t slide)
{
    (void)mh, (void)slide;
    image_gone();
}

void vzcaps_platform_watch_images(void (*added)(const char *path), void (*gone)(void))
{
    int saved = errno;
    image_added = added, image_gone = gone;
    atomic_store(&flooding, true); /* the images loaded before: by index, below */
    _dyld_register_func_for_add_image(dyld_added);
    atomic_store(&flooding, false);
    _dyld_register_func_for_remove_image(dyld_gone);
    for (uint32_t i = 0, n = _dyld_image_count(); i < n; i++) {
        const char *path = _dyld_get_image_name(i);
        if (path)
            added(path);
    }
    errno = saved;
}

const void *vzcaps_platform_strip_return_address(const void *ret)
{
#if defined(__arm64e__)
    return ptrauth_strip(ret, ptrauth_key_return_address);
#else
    return ret;
#endif
}
