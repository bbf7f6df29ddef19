/* Ad-hoc code signing for vzcaps prepare (portable; see codesign.c). */
#ifndef VZCAPS_CODESIGN_H
#define VZCAPS_CODESIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CODESIGN_MAX_SLICES 8

struct codesign_slice_report {
    uint32_t old_flags;  /* the replaced CodeDirectory's flags (hardened runtime, ...) */
    uint64_t grew;       /* bytes __LINKEDIT grew by; 0 when the signature fit in the old space */
    bool was_unsigned;   /* the slice had no signature (a universal file's other slices did) */
    uint32_t cputype, cpusubtype;
    uint8_t cdhash[20];  /* the new CodeDirectory's SHA-256, cut to 20 bytes */
    char identifier[256];
};
struct codesign_report {
    size_t n_slices;
    struct codesign_slice_report slice[CODESIGN_MAX_SLICES];
};

/* What a bundle's main executable binds: SHA-256 digests of the bytes of Contents/Info.plist
 * (special slot 1) and of _CodeSignature/CodeResources (slot 3), each NULL when not bound. */
struct codesign_bind {
    const uint8_t *info_plist;
    const uint8_t *resources;
};
/* Re-signs every slice of a thin or universal 64-bit Mach-O image ad hoc: a version 0x20400
 * CodeDirectory with SHA-256 hashes of 4 KiB pages over everything before the signature, the
 * old identifier (fallback_ident when there was none), the ad-hoc flag and no other (no
 * hardened runtime, library validation or restrict), the exec-segment fields (__TEXT, and the
 * main-binary flag for executables), an empty requirements set, no entitlements. The signature
 * goes into the existing space zero-padded to its size, or __LINKEDIT grows. The result is a
 * new malloc'd image. 0, or -1 with a one-line reason (truncated, unparsable signature, ...).
 * With the special slots of bind (NULL: none) and, with sign_unsigned_slices, a universal
 * file's unsigned slices signed too (a signature command is added where the padding before the
 * first section has room and __LINKEDIT ends the slice). */
int codesign_adhoc_bound(const uint8_t *in, size_t len, const char *fallback_ident, const struct codesign_bind *bind,
                         bool sign_unsigned_slices, uint8_t **out, size_t *out_len, struct codesign_report *rep, char *err,
                         size_t errlen);

#endif
