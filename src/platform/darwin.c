/* macOS facts for the command, read with sysctl, `csrutil status` (SIP) and getxattr (the
 * quarantine mark). Built and audited, not run here.
 * Never: makes a decision; everything decided from these facts is portable code. */
#include "platform.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"

#include <errno.h>
#include <fcntl.h>
#include <mach-o/dyld.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

const char preload_var[] = "DYLD_INSERT_LIBRARIES";
const char library_file[] = "libvzcaps.dylib";
const bool platform_is_macos = true;

static void sysctl_str(const char *name, char *buf, size_t len)
{
    size_t n = len;
    if (sysctlbyname(name, buf, &n, NULL, 0) != 0)
        buf[0] = '\0';
    else
        buf[n < len ? n : len - 1] = '\0';
}

static long long sysctl_int(const char *name)
{
    int64_t v = 0;
    size_t n = sizeof v;
    if (sysctlbyname(name, &v, &n, NULL, 0) != 0)
        return -1;
    if (n == sizeof(int32_t)) {
        int32_t small;
        memcpy(&small, &v, sizeof small);
        return small;
    }
    return v;
}

void machine_facts(struct machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->os, sizeof m->os, "macOS");
    sysctl_str("kern.osproductversion", m->os_version, sizeof m->os_version);
    sysctl_str("kern.osversion", m->os_build, sizeof m->os_build);
    sysctl_str("hw.model", m->model, sizeof m->model);
    sysctl_str("machdep.cpu.brand_string", m->brand, sizeof m->brand);
    snprintf(m->brand_origin, sizeof m->brand_origin, "machdep.cpu.brand_string");
    long long vmm = sysctl_int("kern.hv_vmm_present");
    m->guest = vmm < 0 ? -1 : vmm > 0;
    long long ncpu = sysctl_int("hw.ncpu"), mem = sysctl_int("hw.memsize");
    m->ncpu = ncpu > 0 ? (unsigned)ncpu : 0;
    m->memory = mem > 0 ? (unsigned long long)mem : 0;
}

void start_path(char *buf, size_t len)
{
    /* the path exec was given, a link not resolved (dyld DyldAPIs.cpp, _NSGetExecutablePath:
     * "this is not real-path. It may be a symlink"; xnu kern_exec.c, exec_save_path) */
    uint32_t n = (uint32_t)len;
    if (_NSGetExecutablePath(buf, &n) != 0)
        buf[0] = '\0';
}

void self_path(char *buf, size_t len)
{
    char given[PATH_MAX];
    start_path(given, sizeof given);
    char *real = given[0] ? realpath(given, NULL) : NULL; /* the file itself, as /proc/self/exe is on Linux */
    buf[0] = '\0';
    if (real && strlen(real) < len)
        memcpy(buf, real, strlen(real) + 1);
    free(real);
}

int sip_status(void)
{
    if (access("/usr/bin/csrutil", X_OK) != 0)
        return VZCAPS_SIP_UNKNOWN;
    int fds[2];
    if (pipe(fds) != 0)
        return VZCAPS_SIP_UNKNOWN;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(fds[1], 1);
        if (null >= 0)
            dup2(null, 0), dup2(null, 2);
        close(fds[0]);
        close(fds[1]);
        execl("/usr/bin/csrutil", "csrutil", "status", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[4096];
    size_t n = 0;
    for (;;) { /* read all of it (a full pipe must not block the child); keep the first 4 KiB */
        char chunk[512];
        ssize_t r = read(fds[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t take = (size_t)r < sizeof out - 1 - n ? (size_t)r : sizeof out - 1 - n;
        memcpy(out + n, chunk, take);
        n += take;
    }
    close(fds[0]);
    out[n] = '\0';
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return VZCAPS_SIP_UNKNOWN;
    return vzcaps_sip_parse(out);
}

/* <sys/xattr.h> (not in every SDK the cross build has): getxattr(2) as macOS declares it */
#define VZ_XATTR_NOFOLLOW 0x0001
extern ssize_t getxattr(const char *path, const char *name, void *value, size_t size, uint32_t position, int options);
#ifndef ENOATTR
#define ENOATTR 93 /* <sys/errno.h> on macOS */
#endif

int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len)
{
    *n = 0;
    ssize_t r = getxattr(path, "com.apple.quarantine", buf, cap, 0, VZ_XATTR_NOFOLLOW);
    if (r >= 0) {
        *n = (size_t)r;
        return 1;
    }
    if (errno == ENOATTR || errno == ENOTSUP)
        return 0;
    if (errno == ERANGE) { /* longer than any mark macOS writes: still a mark */
        *n = 0;
        return 1;
    }
    snprintf(why, len, "%s", strerror(errno));
    return -1;
}
