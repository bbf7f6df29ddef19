/* The inheritance verdict for doctor: what dyld does with the library in the programs a
 * workload's children may be (dyld-1378 mach_o/GradedArchitectures.cpp; docs/artifacts.md).
 * Never: reads a file, runs a program, or decides for run/launchd (core's inherit rule does). */
#include "inheritsafe.h"

#include <stdio.h>
#include <string.h>

#include "../core/vzcaps_core.h"

static bool has_arch(const char *archs, const char *arch)
{
    size_t n = strlen(arch);
    for (const char *p = archs; (p = strstr(p, arch)) != NULL; p += n)
        if ((p == archs || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return true;
    return false;
}

const char *inherit_safety_name(int verdict)
{
    return verdict == INHERIT_SAFE ? "safe" : verdict == INHERIT_LIMITED ? "limited" : verdict == INHERIT_UNSAFE ? "unsafe" : "not macOS";
}

int inherit_safety(bool macos, int apple_silicon, int sip, const char *archs, char *line, size_t len)
{
    int v;
    const char *shims = "; shims start only the programs named, with any SIP state";
    if (!macos) {
        snprintf(line, len, "not macOS: decided on the Mac (its SIP state and the library's slices)");
        return INHERIT_NOT_MACOS;
    }
    if (!archs) {
        snprintf(line, len, "unsafe: no library found");
        return INHERIT_UNSAFE;
    }
    bool arm = apple_silicon != 0;
    if (!has_arch(archs, arm ? "arm64" : "x86_64")) {
        snprintf(line, len, "unsafe: the library has no %s slice, which this Mac's ordinary programs need", arm ? "arm64" : "x86_64");
        return INHERIT_UNSAFE;
    }
    if (!arm) {
        snprintf(line, len, "safe: an Intel Mac runs no arm64e programs, and the library has the x86_64 slice");
        return INHERIT_SAFE;
    }
    if (has_arch(archs, "arm64e")) {
        /* dyld grades arm64e before arm64 for an arm64 process (keys off), so the slice would
         * run in every llama-server; Apple's arm64e programs take a third-party arm64e slice
         * only with the arm64e preview ABI */
        snprintf(line, len, "unsafe: the library has an arm64e slice, which dyld loads in place of arm64 in every arm64 process "
                            "and Apple's arm64e programs refuse without the arm64e preview boot argument (not a release build%s)",
                 shims);
        return INHERIT_UNSAFE;
    }
    if (sip == VZCAPS_SIP_ENABLED) {
        v = INHERIT_LIMITED;
        snprintf(line, len, "limited: SIP is enabled, so the system programs a workload starts drop the library, but an arm64e "
                            "program outside them (Apple's Command Line Tools python3) would be terminated%s", shims);
    } else {
        v = INHERIT_UNSAFE;
        snprintf(line, len, "unsafe: SIP is %s, so arm64e system programs a workload starts (/bin/sh, /usr/bin/env) keep the "
                            "library, which has no arm64e slice, and dyld terminates them%s",
                 sip == VZCAPS_SIP_DISABLED ? "disabled" : "in an unknown state", shims);
    }
    return v;
}
