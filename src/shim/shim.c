/* The injected library's constructor: reads the configuration once, decides, logs one line,
 * keeps children stock unless asked, and arms the platform trigger.
 * Never: exits, aborts or changes anything when the configuration is in doubt. */
#define _POSIX_C_SOURCE 200809L
#include "shim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

VZCAPS_HIDDEN struct vzcaps_profile vzcaps_effective;

__attribute__((visibility("default"))) const char vzcaps_library_version[] = VZCAPS_VERSION;

static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
static struct vzcaps_config_result result;

void vzcaps_write_stderr_line(const char *line)
{
    char buf[2100];
    size_t n = strlen(line);
    if (n > sizeof buf - 1)
        n = sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n++] = '\n';
    ssize_t w;
    do
        w = write(2, buf, n);
    while (w < 0 && errno == EINTR);
}

/* Children start stock: drop our variables and our entry in the preload list. */
static void strip_environment(const char *compat_prefix)
{
    static char names[64][128];
    size_t n = 0;
    for (char **e = environ; e && *e && n < 64; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : 0;
        if (!eq || len >= sizeof names[0])
            continue;
        int ours = strncmp(*e, "VZCAPS_", 7) == 0 ||
                   (*compat_prefix && strncmp(*e, compat_prefix, strlen(compat_prefix)) == 0);
        if (ours) {
            memcpy(names[n], *e, len);
            names[n++][len] = '\0';
        }
    }
    for (size_t i = 0; i < n; i++)
        unsetenv(names[i]);
    const char *list = getenv(vzcaps_platform_preload_var);
    if (list) {
        static char stripped[8192];
        if (vzcaps_strip_library(list, vzcaps_platform_preload_seps, vzcaps_platform_library_name, stripped,
                                 sizeof stripped) < 0)
            return;
        if (stripped[0])
            setenv(vzcaps_platform_preload_var, stripped, 1);
        else
            unsetenv(vzcaps_platform_preload_var);
    }
}

__attribute__((constructor)) static void vzcaps_init(void)
{
    static char brand[256];
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)environ;
    in.exe = vzcaps_platform_exe_name();
    in.read_file = vzcaps_read_file;
    vzcaps_platform_host(&in.host, brand, sizeof brand);
    vzcaps_configure(&in, file_buf, sizeof file_buf, &result);
    vzcaps_effective = result.profile;

    const struct vzcaps_profile *p = &vzcaps_effective;
    if (p->state == VZCAPS_ENABLED || p->state == VZCAPS_STOCK_REFUSED) {
        static char line[2048];
        snprintf(line, sizeof line, "vzcaps: ");
        vzcaps_profile_describe(p, in.exe, line + 8, sizeof line - 8);
        vzcaps_platform_log(line, !p->quiet);
    }
    const char *compat = strcmp(result.env_prefix, "VZCAPS_") == 0 ? "" : result.env_prefix;
    if (!(p->state == VZCAPS_ENABLED && p->inherit))
        strip_environment(compat);
    if (p->state != VZCAPS_ENABLED)
        return;
    vzcaps_hooks_watch_base_class();
    vzcaps_platform_trigger_install();
}
