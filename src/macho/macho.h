/* Portable, bounds-checked reader of 64-bit Mach-O files (thin and universal): slices,
 * minimum OS, linked libraries, capability selectors, code signature and entitlements. */
#ifndef VZCAPS_MACHO_H
#define VZCAPS_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MACHO_MAX_SLICES 8
/* A file linking more libraries, or naming one by a longer path, is refused (never a list
 * cut short: the libraries decide which images stay stock). The selector table holds every
 * entry of macho_capability_selectors. */
#define MACHO_MAX_LIBS 256
#define MACHO_MAX_LIB_NAME 512
#define MACHO_MAX_SELECTORS 24

enum macho_injection { MACHO_INJECTION_HONOURED, MACHO_INJECTION_IGNORED, MACHO_INJECTION_UNKNOWN };

struct macho_slice {
    char arch[16];                 /* arm64, arm64e, x86_64, x86_64h, or "cpu 0x..." */
    uint32_t cputype, cpusubtype, filetype;
    uint64_t offset, size;         /* within the file */
    char minos[16];                /* "13.0", "" when absent */
    char install_name[256];        /* dylibs only */
    char libs[MACHO_MAX_LIBS][MACHO_MAX_LIB_NAME];
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
    /* what makes dyld restrict a program besides its signature (dyld's ProcessConfig, AMFI) */
    bool restrict_section;         /* a __RESTRICT,__restrict section */
    bool encryption_cmd;           /* LC_ENCRYPTION_INFO or LC_ENCRYPTION_INFO_64 */
    uint32_t cryptid;              /* its cryptid: != 0 FairPlay-encrypted */
    enum macho_injection injection;
    char injection_reason[240];
};

struct macho_file {
    bool fat;
    size_t n_slices;
    struct macho_slice slices[MACHO_MAX_SLICES];
    char path[4400];       /* the file read (a .app bundle's main executable) */
    char info_plist[4400]; /* the Info.plist whose CFBundleExecutable named it, "" when none did */
};

/* Parses data; 0, or -1 with a one-line reason in err ("truncated load command 3", ...). */
int macho_parse(const uint8_t *data, size_t size, struct macho_file *out, char *err, size_t errlen);
/* Files larger than this are refused from their size alone (libtorch_cpu.dylib, among the
 * largest Metal clients, is a few hundred MB). */
#define MACHO_MAX_SIZE (1 << 30)
/* Whether a file whose first n bytes (at least 8, else false) are head must be read whole to
 * parse or classify it: a 64-bit Mach-O or a universal file. Any other file is told apart
 * (not a Mach-O file, 32-bit, big-endian) from its first 32 bytes. */
bool macho_needs_whole(const uint8_t *head, size_t n);
/* Reads path (a .app bundle: its main executable) through the one input reader (opened
 * without blocking, regular files only, at most MACHO_MAX_SIZE, read and never mapped: a file
 * truncated while read is "truncated", never a signal) and parses it: 0, or -1 with
 * "PATH: reason" in err. */
int macho_load(const char *path, struct macho_file *out, char *err, size_t errlen);
/* The CFBundleExecutable of the Info.plist at plist (XML or binary, read as a property list by
 * src/common/plist.c, entities decoded): 0 with the name on the heap
 * in *name, or NULL when there is no such file or key; -1 with "PLIST: reason" when it cannot
 * be read or the name is not a plain file name. */
int macho_plist_executable(const char *plist, char **name, char *err, size_t errlen);
/* What a file is, for prepare: code it signs, or something it keeps as a resource. */
enum macho_kind {
    MACHO_KIND_NONE,          /* not a Mach-O file */
    MACHO_KIND_CODE,          /* 64-bit Mach-O, every slice signed */
    MACHO_KIND_PARTLY_SIGNED, /* universal, some slices signed and some not */
    MACHO_KIND_UNSIGNED,      /* 64-bit Mach-O, no slice signed */
    MACHO_KIND_OBJECT,        /* MH_OBJECT (in any slice) */
    MACHO_KIND_DSYM,          /* MH_DSYM (in any slice) */
    MACHO_KIND_ARCHIVE,       /* a universal file of static archives (!<arch>) */
    MACHO_KIND_JAVA,          /* CAFEBABE followed by a class file version, not a slice count */
    MACHO_KIND_OTHER_MACHO,   /* 32-bit or big-endian Mach-O */
    MACHO_KIND_BROKEN,        /* a Mach-O header that does not hold up (reason in err) */
};
/* Classifies data from its headers (and, for code, a full parse). Never fails: a damaged
 * file is MACHO_KIND_BROKEN with the reason in err. */
enum macho_kind macho_classify(const uint8_t *data, size_t size, char *err, size_t errlen);
const char *macho_kind_name(enum macho_kind k);
/* A thin 64-bit slice: 1 it has a code signature command, 0 none, -1 its load commands do
 * not hold up. */
int macho_slice_signed(const uint8_t *m, size_t size);
/* Every slice of path is a dynamic library (MH_DYLIB); archs receives their names. */
int macho_dylib_check(const char *path, char *archs, size_t len, char *err, size_t errlen);
const char *macho_injection_name(enum macho_injection i);
/* The capability selectors looked for, NULL-terminated. */
extern const char *const macho_capability_selectors[];

/* macho.c: "arm64 arm64e x86_64" for a Mach-O file; 0, or -1 with a reason */
int macho_arch_list(const char *path, char *out, size_t len, char *err, size_t errlen);

#endif
