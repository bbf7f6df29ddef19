/* SHA-1 for the legacy ("files") section of a bundle's CodeResources, which codesign still
 * writes; never used for anything that must resist collisions. Not in the library. */
#ifndef VZCAPS_SHA1_H
#define VZCAPS_SHA1_H

#include <stddef.h>
#include <stdint.h>

struct sha1 {
    uint32_t h[5];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
};
void sha1_init(struct sha1 *s);
void sha1_update(struct sha1 *s, const void *data, size_t n);
void sha1_final(struct sha1 *s, uint8_t out[20]);

#endif
