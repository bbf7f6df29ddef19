/* The contract every platform file keeps (darwin.c, linux.c): facts about this machine and the
 * names the platform gives things. The command includes it; a platform file includes nothing
 * of the command. */
#ifndef VZCAPS_PLATFORM_H
#define VZCAPS_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>

struct json;
struct machine {
    char os[32];           /* "macOS" or "Linux" */
    char os_version[64];   /* "15.1" */
    char os_build[32];     /* "24B83" or "" */
    char model[64];        /* hw.model, "" when unknown */
    char brand[128];       /* CPU brand string, "" when none */
    char brand_origin[64];
    int guest;             /* 1 guest, 0 host, -1 unknown */
    unsigned ncpu;
    unsigned long long memory;
};
void machine_facts(struct machine *m);
/* "guest", "host" or "unknown" */
const char *machine_kind(const struct machine *m);
/* The facts as members of the object being written: os, os_version, os_build, hw_model,
 * cpu_brand, vcpus, memory_bytes, machine. */
void machine_json(struct json *j, const struct machine *m);
/* The running command's file, links resolved (/proc/self/exe; realpath of start_path on macOS):
 * where it finds its library and installed files. "" when unknown or longer than len (never cut) */
void self_path(char *buf, size_t len);
/* self_path, asked once and kept (static): "" when unknown. Not thread-safe on its first call. */
const char *self_path_kept(void);
/* The path exec was given to start this process, links not resolved (a shim's own path, whatever
 * argv[0] says): AT_EXECFN on Linux, _NSGetExecutablePath on macOS; "" when unknown or when it
 * does not fit in len (never cut). */
void start_path(char *buf, size_t len);
extern const char preload_var[];      /* LD_PRELOAD or DYLD_INSERT_LIBRARIES */
extern const char library_file[];     /* libvzcaps.so or libvzcaps.dylib */
extern const bool platform_is_macos;
/* SIP's state (VZCAPS_SIP_* of core): `/usr/bin/csrutil status` on macOS; unknown on Linux
 * and when it cannot be run. */
int sip_status(void);
/* The com.apple.quarantine attribute of path (a link itself, not followed), at most cap
 * bytes: 1 with *n set (0 when longer than cap: still a mark), 0 when there is none, -1 when
 * it cannot be read (why says). Linux: always 0. */
int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len);

#endif
