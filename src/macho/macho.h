/* Portable, bounds-checked reader of 64-bit Mach-O files (thin and universal): slices,
 * minimum OS, linked libraries, capability selectors, code signature and entitlements. */
#ifndef VZCAPS_MACHO_H
#define VZCAPS_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MACHO_MAX_SLICES 8
#define MACHO_MAX_LIBS 48
#define MACHO_MAX_SELECTORS 24

enum macho_injection { MACHO_INJECTION_HONOURED, MACHO_INJECTION_IGNORED, MACHO_INJECTION_UNKNOWN };

struct macho_slice {
    char arch[16];                 /* arm64, arm64e, x86_64, x86_64h, or "cpu 0x..." */
    uint32_t cputype, cpusubtype, filetype;
    uint64_t offset, size;         /* within the file */
    char minos[16];                /* "13.0", "" when absent */
    char install_name[256];        /* dylibs only */
    char libs[MACHO_MAX_LIBS][200];
    bool lib_weak[MACHO_MAX_LIBS];
    size_t n_libs;
    const char *selectors[MACHO_MAX_SELECTORS]; /* capability selectors referenced */
    size_t n_selectors;
    bool ggml, mlx, torch_mps;     /* recognised clients */
    bool own;                      /* one of vzcaps's own binaries (VZCAPS_SELF_MARKER): no client */
    bool plugin;                   /* loaded by another program (MH_BUNDLE, or a .node file) */
    /* code signature */
    bool signed_;
    uint32_t cs_flags;
    bool hardened_runtime, library_validation, adhoc, platform_binary;
    int signature_valid;           /* 1 hashes match, 0 mismatch, -1 not verifiable */
    char signature_problem[200];
    char identifier[128];
    bool entitlements_present, allow_dyld_env, disable_library_validation;
    enum macho_injection injection;
    char injection_reason[240];
};

struct macho_file {
    bool fat;
    size_t n_slices;
    struct macho_slice slices[MACHO_MAX_SLICES];
};

/* Parses data; 0, or -1 with a one-line reason in err ("truncated load command 3", ...). */
int macho_parse(const uint8_t *data, size_t size, struct macho_file *out, char *err, size_t errlen);
/* Files larger than this are refused from their size alone (libtorch_cpu.dylib, among the
 * largest Metal clients, is a few hundred MB). */
#define MACHO_MAX_SIZE (1 << 30)
/* Maps path (a .app bundle: its main executable; opened without blocking, regular files
 * only) and parses it: 0, or -1 with "PATH: reason" in err. */
int macho_load(const char *path, struct macho_file *out, char *err, size_t errlen);
/* The main executable of the .app bundle bundle[0..n), relative to it:
 * Contents/MacOS/<CFBundleExecutable of Contents/Info.plist>, else Contents/MacOS/<the
 * bundle's base name>. On the heap; NULL with "PLIST: reason" in err when Info.plist exists
 * but cannot be read (not a regular file, larger than 64 KiB). */
char *macho_bundle_executable(const char *bundle, size_t n, char *err, size_t errlen);
/* Every slice of path is a dynamic library (MH_DYLIB); archs receives their names. */
int macho_dylib_check(const char *path, char *archs, size_t len, char *err, size_t errlen);
const char *macho_injection_name(enum macho_injection i);
/* The capability selectors looked for, NULL-terminated. */
extern const char *const macho_capability_selectors[];

/* macho.c: "arm64 arm64e x86_64" for a Mach-O file; 0, or -1 with a reason */
int macho_arch_list(const char *path, char *out, size_t len, char *err, size_t errlen);

#endif
