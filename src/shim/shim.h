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

/* shim.c: logging. vzcaps_log escapes a raw line (vzcaps_escape) and hands it to the
 * platform; vzcaps_write_stderr_line writes an escaped line (n bytes, ending in '\n') to fd 2
 * without raising SIGPIPE, changing fd 2 or blocking for more than 200 ms. */
VZCAPS_HIDDEN void vzcaps_log(const char *raw, bool to_stderr);
VZCAPS_HIDDEN void vzcaps_write_stderr_line(const char *line, size_t n);

/* statslog.c: the stats log. prepare: once, in the constructor of a configured or refused
 * process: notes r (static, final) and exe (the program's name, static), nothing else. event:
 * the first call prepares the rest (nothing when the log's directory is not safe) and writes the
 * process's one record (hooked, the device class, why it is left stock: NULL for the refusal
 * the constructor knew); errno is kept, nothing is ever said. */
VZCAPS_HIDDEN void vzcaps_statslog_prepare(const struct vzcaps_config_result *r, const char *exe);
VZCAPS_HIDDEN void vzcaps_statslog_event(bool hooked, const char *cls, const char *reason);

/* shim.c: the one line that says what the library did, prepared by the constructor and
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
VZCAPS_HIDDEN char *const *vzcaps_child_envp(const char *file, bool search, char *const argv[], char *const envp[]);
VZCAPS_HIDDEN int vzcaps_exec_search(const char *file, char *const argv[], char *const envp[]);
/* The exec* family as the triggers export or interpose it: execve/execv (path), execvp and
 * execvpe (searched), execl/execle/execlp (kind, the arguments after arg0 in ap). */
VZCAPS_HIDDEN int vzcaps_exec_env(const char *path, char *const argv[], char *const envp[]);
VZCAPS_HIDDEN int vzcaps_exec_path_search(const char *file, char *const argv[], char *const envp[]);
enum { VZCAPS_EXECL_PATH, VZCAPS_EXECL_ENV, VZCAPS_EXECL_SEARCH };
VZCAPS_HIDDEN int vzcaps_execl(int kind, const char *file, const char *arg0, va_list ap);

/* trigger_<platform>.c */
/* the kernel's execve (no interposer of ours in between) */
VZCAPS_HIDDEN int vzcaps_platform_execve(const char *path, char *const argv[], char *const envp[]);
/* this thread's scratch mapping (NULL at first) and setting it (0, or -1); neither allocates */
VZCAPS_HIDDEN void *vzcaps_platform_scratch_get(void);
VZCAPS_HIDDEN int vzcaps_platform_scratch_set(void *mapping);
/* the ELF machine of this build (the rig), 0 on macOS */
VZCAPS_HIDDEN extern const unsigned vzcaps_platform_elf_machine;
/* whether execvp's rules are Libc's (macOS) rather than glibc's (the rig): core's vzcaps_search_* */
VZCAPS_HIDDEN extern const bool vzcaps_platform_darwin;
/* once, in the constructor: whatever the interposers need; false when selective inheritance
 * cannot work here */
VZCAPS_HIDDEN bool vzcaps_platform_spawn_init(void);
/* whether the library's own file holds an arm64e slice (it is read each call: spawn.c asks
 * once, at the first child) */
VZCAPS_HIDDEN bool vzcaps_platform_library_has_arm64e(void);
VZCAPS_HIDDEN void vzcaps_platform_host(struct vzcaps_host *host, char *brand, size_t brand_len);
VZCAPS_HIDDEN const char *vzcaps_platform_exe_name(void);
/* The real path of this process's executable (symbolic links resolved): 0, or -1. */
VZCAPS_HIDDEN int vzcaps_platform_exe_path(char *buf, size_t len);
/* shim.c: the base name of the image containing code address addr (dladdr), "" when
 * unknown. Called once per call site, never under a lock of ours. */
VZCAPS_HIDDEN void vzcaps_image_of(const void *addr, char *name, size_t len);
/* A return address without pointer-authentication bits (arm64e), as dladdr needs it. */
VZCAPS_HIDDEN const void *vzcaps_platform_strip_return_address(const void *ret);
/* Where this process's environment array lives (environ, or _NSGetEnviron on macOS). */
VZCAPS_HIDDEN char ***vzcaps_platform_environ(void);
/* Writes an escaped line of n bytes (line[n] is its '\n') to the platform's log and, if
 * asked, to standard error. */
VZCAPS_HIDDEN void vzcaps_platform_log(const char *line, size_t n, bool to_stderr);
VZCAPS_HIDDEN void vzcaps_platform_trigger_install(void);
VZCAPS_HIDDEN extern const char vzcaps_platform_preload_var[];
VZCAPS_HIDDEN extern const char vzcaps_platform_preload_seps[];
VZCAPS_HIDDEN extern const char vzcaps_platform_library_name[];


#endif
