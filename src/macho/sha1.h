/* SHA-1 for the legacy ("files") section of a bundle's CodeResources, which codesign still
 * writes; never used for anything that must resist collisions. Not in the library. */
#ifndef VZCAPS_SHA1_H
#define VZCAPS_SHA1_H

#include "../common/sha256.h"

struct sha1 {
    struct sha256 frame; /* SHA-256's frame, with SHA-1's block function and five words */
};
void sha1_init(struct sha1 *s);
void sha1_update(struct sha1 *s, const void *data, size_t n);
void sha1_final(struct sha1 *s, uint8_t out[20]);

#endif
