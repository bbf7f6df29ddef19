/* Linux facts for the command: what can be known here (no chip, no Metal), for tests and
 * the portable parts of doctor/check. Never: pretends to be a Mac. */
#define _GNU_SOURCE
#include "platform.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"

#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <unistd.h>

const char preload_var[] = "LD_PRELOAD";
const char library_file[] = "libvzcaps.so";
const bool platform_is_macos = false;

void machine_facts(struct machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->os, sizeof m->os, "Linux");
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->os_version, sizeof m->os_version, "%s", u.release);
    snprintf(m->brand_origin, sizeof m->brand_origin, "no chip detection on Linux");
    m->guest = -1;
    long n = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    m->ncpu = n > 0 ? (unsigned)n : 0;
    m->memory = pages > 0 && size > 0 ? (unsigned long long)pages * (unsigned long long)size : 0;
}

void self_path(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len);
    buf[n > 0 && (size_t)n < len ? n : 0] = '\0'; /* one that fills buf may be cut: unknown, as on macOS */
}

void start_path(char *buf, size_t len)
{
    const char *p = (const char *)getauxval(AT_EXECFN); /* the kernel's copy of execve's path */
    size_t n = p ? strlen(p) : 0;
    buf[0] = '\0';
    if (n && n < len)
        memcpy(buf, p, n + 1);
}

int sip_status(void)
{
    return VZCAPS_SIP_UNKNOWN; /* SIP is macOS's */
}

int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len)
{
    (void)path, (void)buf, (void)cap, (void)why, (void)len;
    *n = 0;
    return 0; /* files here carry no quarantine mark */
}
