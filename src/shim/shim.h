/* Internal contract between the injected library's files (hooks, constructor, triggers).
 * Owns: nothing but declarations. Each platform provides one trigger_*.c that implements
 * the vzcaps_platform_* functions; the build picks the file, no #ifdef in shared code. */
#ifndef VZCAPS_SHIM_H
#define VZCAPS_SHIM_H

#include "../common/readfile.h"
#include "../core/vzcaps_core.h"

#include <objc/runtime.h>
#include <stdarg.h>

#define VZCAPS_HIDDEN __attribute__((visibility("hidden")))

/* The effective profile, set once by the constructor before any hook exists (until then a
 * profile whose state is VZCAPS_STOCK_UNCONFIGURED). */
VZCAPS_HIDDEN extern const struct vzcaps_profile *vzcaps_effective;

/* hooks.c. vzcaps_hooks_on_device hooks device's class; path names the way the device
 * reached it, for the one "hooked" line the first hooked class gets. */
#define VZCAPS_PATH_INIT_FAMILY "initGPUFamilySupport"
#define VZCAPS_PATH_FACTORY(fn) "factory interposer (" fn ")"
VZCAPS_HIDDEN void vzcaps_hooks_on_device(id device, const char *path);
VZCAPS_HIDDEN int vzcaps_hooks_install_on_class(Class cls, char *why, size_t len);
VZCAPS_HIDDEN void vzcaps_hooks_watch_base_class(void);
/* The caller scope's images: one loaded (its path), one gone (before its memory is reused) */
VZCAPS_HIDDEN void vzcaps_hooks_image_added(const char *path);
VZCAPS_HIDDEN void vzcaps_hooks_images_gone(void);

/* say.c: logging. vzcaps_log escapes a raw line (vzcaps_escape) and writes it to the system log
 * and, if asked, to standard error; vzcaps_write_stderr_line writes an escaped line (n bytes,
 * ending in '\n') to fd 2 without raising SIGPIPE, changing fd 2 or blocking for more than
 * 200 ms. The constructor notes standard error first (vzcaps_say_note_stderr) and, once it has
 * decided, prepares the one line (vzcaps_say_prepare: name is static and final). */
VZCAPS_HIDDEN void vzcaps_log(const char *raw, bool to_stderr);
VZCAPS_HIDDEN void vzcaps_write_stderr_line(const char *line, size_t n);
VZCAPS_HIDDEN void vzcaps_say_note_stderr(void);
VZCAPS_HIDDEN void vzcaps_say_prepare(const struct vzcaps_profile *p, const char *name);

/* statslog.c: the stats log. prepare: once, in the constructor of a configured or refused
 * process: notes r (static, final) and exe (the program's name, static), nothing else. event:
 * the first call prepares the rest (nothing when the log's directory is not safe) and writes the
 * process's one record (hooked, the device class, why it is left stock: NULL for the refusal
 * the constructor knew; no_raise: NULL when a raised answer is possible for this device and
 * profile, else why not, in words); a hooked record keeps the log open for the effects. effect:
 * the first answer of a kind that differs from the device's own, given to image (FAMILY: stock
 * 0, given the family), once per process and kind, on disk before it returns (or, asked before
 * the hooked record, right after that record). stock_caller: an image the caller scope kept
 * stock (its first call site; at most VZCAPS_STOCK_CALLERS images). All keep errno, never say
 * anything, allocate nothing and take no lock. */
enum { VZCAPS_EFFECT_FAMILY, VZCAPS_EFFECT_THREADGROUP, VZCAPS_EFFECT_WORKING_SET };
VZCAPS_HIDDEN void vzcaps_statslog_prepare(const struct vzcaps_config_result *r, const char *exe);
VZCAPS_HIDDEN void vzcaps_statslog_event(bool hooked, const char *cls, const char *reason, const char *no_raise);
VZCAPS_HIDDEN void vzcaps_statslog_effect(int kind, const char *image, unsigned long long stock, unsigned long long given);
VZCAPS_HIDDEN void vzcaps_statslog_stock_caller(const char *image);

/* say.c: the one line that says what the library did, prepared by the constructor and
 * written once (an atomic flag; no lock, no allocation): "vzcaps: hooked LABEL for EXE via
 * PATH: NOTES" when the first device class is hooked, or the refusal's "vzcaps: left stock for
 * EXE: REASON" when the first device is created (left stock). */
VZCAPS_HIDDEN void vzcaps_said(const char *label, const char *path);

/* spawn.c: selective inheritance (inherit = matching). vzcaps_spawn_setup runs in the
 * constructor before children are stripped; vzcaps_child_envp decides for a child started as
 * file (searched on PATH when search; a NULL envp is no variables, as for the kernel) and returns
 * the environment it gets: envp itself, an
 * array built in this thread's scratch mapping, or NULL (errno ENOMEM: do not start it).
 * vzcaps_exec_search is execvp's search with a given environment. The exec* wrappers build
 * an argv of up to VZCAPS_EXECL_MAX arguments on the stack, a longer one in a mapping of its
 * own (unmapped when the exec returns). */
#define VZCAPS_EXECL_MAX 250
VZCAPS_HIDDEN int vzcaps_spawn_setup(char **env, const char *file_text, size_t len);
/* ours[k]: the k-th element of a preload value not named as this library is it by what the file
 * is (a link to it; a copy: its size and marker); looked at only when there is one. Their number. */
VZCAPS_HIDDEN size_t vzcaps_library_facts(const char *value, bool *ours, size_t n);
VZCAPS_HIDDEN char *const *vzcaps_child_envp(const char *file, bool search, char *const argv[], char *const envp[]);
VZCAPS_HIDDEN int vzcaps_exec_search(const char *file, char *const argv[], char *const envp[]);
/* The exec* family as the triggers export or interpose it: execve/execv (path), execvp and
 * execvpe (searched), execl/execle/execlp (kind, the arguments after arg0 in ap). */
VZCAPS_HIDDEN int vzcaps_exec_env(const char *path, char *const argv[], char *const envp[]);
VZCAPS_HIDDEN int vzcaps_exec_path_search(const char *file, char *const argv[], char *const envp[]);
enum { VZCAPS_EXECL_PATH, VZCAPS_EXECL_ENV, VZCAPS_EXECL_SEARCH };
VZCAPS_HIDDEN int vzcaps_execl(int kind, const char *file, const char *arg0, va_list ap);

/* platform_<platform>.c: facts and primitives, calling nothing of the library above them; the
 * triggers (trigger_<platform>.c: factories and the calls that start programs) are, with the
 * constructor, the library's entry points */
/* the kernel's execve (no interposer of ours in between) */
VZCAPS_HIDDEN int vzcaps_platform_execve(const char *path, char *const argv[], char *const envp[]);
/* this thread's scratch mapping (NULL at first) and setting it (0, or -1); neither allocates */
VZCAPS_HIDDEN void *vzcaps_platform_scratch_get(void);
VZCAPS_HIDDEN int vzcaps_platform_scratch_set(void *mapping);
/* the ELF machine of this build (the rig), 0 on macOS */
VZCAPS_HIDDEN extern const unsigned vzcaps_platform_elf_machine;
/* Darwin's rules rather than the rig's: execvp's are Libc's, not glibc's (core's vzcaps_search_*),
 * and the kernel sends the SIGPIPE or SIGXFSZ a write raises to the process, any thread that does
 * not block it, rather than to the writing thread (say.c's writes) */
VZCAPS_HIDDEN extern const bool vzcaps_platform_darwin;
/* once, in the constructor: whatever the interposers need; false when selective inheritance
 * cannot work here */
VZCAPS_HIDDEN bool vzcaps_platform_spawn_init(void);
/* the real posix_spawn (search: posix_spawnp) past our own, or NULL; errno kept (the rig's:
 * its trigger preempts them by symbol; dyld's interposing needs no lookup) */
#include <spawn.h>
typedef int (*vzcaps_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                               char *const[], char *const[]);
VZCAPS_HIDDEN vzcaps_spawn_fn vzcaps_platform_real_spawn(bool search);
/* whether the library's own file holds an arm64e slice (it is read each call: spawn.c asks
 * once, at the first child) */
VZCAPS_HIDDEN bool vzcaps_platform_library_has_arm64e(void);
VZCAPS_HIDDEN void vzcaps_platform_host(struct vzcaps_host *host, char *brand, size_t brand_len);
VZCAPS_HIDDEN const char *vzcaps_platform_exe_name(void);
/* The real path of this process's executable (symbolic links resolved): 0, or -1. */
VZCAPS_HIDDEN int vzcaps_platform_exe_path(char *buf, size_t len);
/* Calls added(path) for each image loaded now and, on macOS, for each one loaded later (dyld's
 * add-image notice; the rig's trigger tells hooks.c itself), and gone() when one is unloaded. */
VZCAPS_HIDDEN void vzcaps_platform_watch_images(void (*added)(const char *path), void (*gone)(void));
/* A return address without pointer-authentication bits (arm64e), as dladdr needs it. */
VZCAPS_HIDDEN const void *vzcaps_platform_strip_return_address(const void *ret);
/* Where this process's environment array lives (environ, or _NSGetEnviron on macOS). */
VZCAPS_HIDDEN char ***vzcaps_platform_environ(void);
/* Writes an escaped line of n bytes to the platform's system log (the rig has none). */
VZCAPS_HIDDEN void vzcaps_platform_syslog(const char *line, size_t n);
VZCAPS_HIDDEN void vzcaps_platform_trigger_install(void);
VZCAPS_HIDDEN extern const char vzcaps_platform_preload_var[];
VZCAPS_HIDDEN extern const char vzcaps_platform_preload_seps[];
VZCAPS_HIDDEN extern const char vzcaps_platform_library_name[];


#endif
