/* The injected library's constructor: reads the configuration once, decides, prepares the one
 * line it says when it acts, keeps children stock unless asked, and arms the platform trigger.
 * Never: exits, aborts or changes anything when the configuration is in doubt; blocks on a
 * file or on standard error; raises SIGPIPE; prints a byte a terminal would interpret. */
#include "shim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct vzcaps_profile not_yet; /* zero: VZCAPS_STOCK_UNCONFIGURED */
VZCAPS_HIDDEN const struct vzcaps_profile *vzcaps_effective = &not_yet;

__attribute__((visibility("default"))) const char vzcaps_library_version[] = VZCAPS_VERSION;
__attribute__((used)) static const char *const self_marker = VZCAPS_SELF_MARKER " library " VZCAPS_VERSION;

static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
static struct vzcaps_config_result result;
static char name_kept[4096]; /* the program's name at start-up, whole: the line's and the record's */

static void *heap(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}

/* A launcher re-executes the real program with this same environment: it is not the
 * process the configuration is for, so it passes everything on unchanged. */
static bool is_launcher(void)
{
    static char self[VZCAPS_PATH_MAX + 1], target[VZCAPS_PATH_MAX + 1], why[64];
    if (vzcaps_platform_exe_path(self, sizeof self) != 0 || !vzcaps_launcher_target(self, target, sizeof target))
        return false;
    struct stat st;
    int fd = vzcaps_open_regular(target, &st, why, sizeof why);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* The name the launcher handed for a #! script (VZCAPS_PROGRAM=PID-PPID:NAME, docs/config.md): 1
 * in the script's own process (the interpreter, and what it execs), with name; -1 in a child of
 * it, whose environment is then made stock (as every child's); 0 without one. */
static int handed_name(char **env, char *name, size_t len)
{
    static char claimed[sizeof "VZCAPS_PROGRAM=" + 2 * 21 + 256];
    const char *value = vzcaps_env_get((const char *const *)env, "VZCAPS_PROGRAM"); /* pids: only asked with it */
    long long pid = value ? (long long)getpid() : 0, ppid = value ? (long long)getppid() : 0;
    int h = vzcaps_program_handed(value, pid, ppid, name, len);
    for (size_t r = 0; h == 2 && env[r]; r++) /* unclaimed: this is the script's process, tied to it by pid and parent */
        if (strncmp(env[r], "VZCAPS_PROGRAM=", 15) == 0) {
            snprintf(claimed, sizeof claimed, "VZCAPS_PROGRAM=%lld-%lld:%s", pid, ppid, name);
            env[r] = claimed, h = 1;
            break;
        }
    if (h < 0)
        vzcaps_env_strip(env, vzcaps_platform_preload_var, vzcaps_platform_preload_seps, vzcaps_platform_library_name, NULL, 0,
                         heap, NULL);
    return h;
}

/* The script's process keeps the injection in its children (inherit): VZCAPS_PROGRAM's
 * PID-PPID:NAME becomes PID-PPID+NAME in place (no allocation), so its exec still takes NAME
 * and its children are configured by their own names instead of starting stock; a later
 * process with its pid has another parent, and takes nothing. */
static void handed_to_children(char **env)
{
    for (size_t r = 0; env[r]; r++)
        if (strncmp(env[r], "VZCAPS_PROGRAM=", 15) == 0) {
            char *sep = strchr(env[r] + 15, ':');
            if (sep)
                *sep = '+';
        }
}

static void init(void)
{
    static char brand[256], handed[256];
    char **env = *vzcaps_platform_environ();
    if (is_launcher())
        return;
    int h = handed_name(env, handed, sizeof handed);
    if (h < 0)
        return; /* a child of a script's process: stock */
    /* argv[0]'s base name, else the leaf of the path exec was given (platform): as a parent judged it */
    const char *name = h > 0 ? handed : vzcaps_platform_exe_name();
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)env;
    in.exe = name;
    in.preload_var = vzcaps_platform_preload_var;
    in.read_file = vzcaps_read_file;
    vzcaps_platform_host(&in.host, brand, sizeof brand);
    vzcaps_configure(&in, file_buf, sizeof file_buf, &result);
    struct vzcaps_profile *p = &result.profile;

    /* Nothing here applies to this process (nothing set, or no config section fits it): pass
     * the injection on unchanged, so the process it is meant for still gets it. */
    if (p->state == VZCAPS_STOCK_UNCONFIGURED)
        return;
    vzcaps_say_note_stderr(); /* what fd 2 is (nothing since start-up opened one: the config file is closed) */
    vzcaps_copy(name_kept, sizeof name_kept, in.exe);
    /* inherit = matching: what a child a section matches gets back (spawn.c); unless that is
     * set up, nothing is passed on. The file configure used is in file_buf, whole (a file that
     * holds a NUL byte is refused) */
    if (p->state == VZCAPS_ENABLED && p->inherit_matching &&
        vzcaps_spawn_setup(env, result.config_path[0] && !result.config_error[0] ? file_buf : NULL, strlen(file_buf)) != 0) {
        p->inherit_matching = false;
        if (p->n_notes < VZCAPS_MAX_NOTES)
            snprintf(p->notes[p->n_notes++], VZCAPS_NOTE_LEN, "inherit = matching could not be set up (out of memory, "
                     "or %s does not name %s): children start stock", vzcaps_platform_preload_var, vzcaps_platform_library_name);
    }
    /* Children start stock (the rule and its cases: vzcaps_env_strip); with inherit = matching
     * too, so that a child started any other way (system(3) on glibc) gets nothing of ours */
    /* a script's process keeps it for the program it execs (a wrapper's exec: the same pid, the
     * same name); its other children see another pid and start stock; with inherit, children are
     * configured under their own names */
    if (h > 0 && p->state == VZCAPS_ENABLED && p->inherit)
        handed_to_children(env);
    bool keep = h > 0 || (p->state == VZCAPS_ENABLED && p->inherit), lib[64]; /* lib: by what the file is (issue 45) */
    size_t n_lib = keep ? 0 : vzcaps_library_facts(vzcaps_env_get(in.envp, vzcaps_platform_preload_var), lib, 64);
    if (!keep && vzcaps_env_strip(env, vzcaps_platform_preload_var, vzcaps_platform_preload_seps, vzcaps_platform_library_name, lib,
                                  n_lib, heap, NULL) != 0 &&
        p->state == VZCAPS_ENABLED) {
        p->n_notes = 0; /* the claims it would have made are not what the line is about */
        vzcaps_profile_refuse(p, "cannot remove vzcaps from the environment of child processes (out of memory)");
        p->invalid = false;
    }
    vzcaps_effective = p; /* result is static: no copy; final from here on */
    if (p->state == VZCAPS_ENABLED || p->state == VZCAPS_STOCK_REFUSED) {
        vzcaps_say_prepare(p, name_kept); /* nothing is written before a device exists (but verbose) */
        vzcaps_statslog_prepare(&result, name_kept);
    }
    if (p->state == VZCAPS_STOCK_REFUSED)
        vzcaps_platform_trigger_install(); /* the factories say the refusal at the first device */
    if (p->state != VZCAPS_ENABLED)
        return;
    vzcaps_hooks_watch_base_class();
    vzcaps_platform_trigger_install();
}

/* errno is as the process had it (zero at start-up, C11 7.5p3), whatever the constructor did */
__attribute__((constructor)) static void vzcaps_init(void)
{
    int saved = errno;
    init();
    errno = saved;
}
