/* Reading Mach-O bytes, shared by the reader (macho.c) and the signer (codesign.c): fixed-
 * endian integers, range checks, 16-byte names. Never: reads outside what the caller checked. */
#ifndef VZCAPS_BYTES_H
#define VZCAPS_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline bool in_range(uint64_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }
static inline uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static inline uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
static inline uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static inline uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* A 16-byte segment or section name for a message, up to its NUL: raw file bytes, escaped
 * where the message is printed (eprintf, esc, the JSON writer), like every other value. */
static inline const char *name16(const uint8_t *p, char out[68])
{
    size_t n = 0;
    while (n < 16 && p[n])
        n++;
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

#endif
