/* macOS facts for the command, read with sysctl. Built and audited, not run here.
 * Never: makes a decision; everything decided from these facts is portable code. */
#include "platform.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"

#include <mach-o/dyld.h>
#include <stdint.h>
#include <string.h>
#include <sys/sysctl.h>
#include <sys/types.h>

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

void self_path(char *buf, size_t len)
{
    uint32_t n = (uint32_t)len;
    if (_NSGetExecutablePath(buf, &n) != 0)
        buf[0] = '\0';
}
