/* Reading Mach-O bytes, shared by the reader (macho.c) and the signer (codesign.c): fixed-
 * endian integers, range checks, 16-byte names. Never: reads outside what the caller checked. */
#ifndef VZCAPS_BYTES_H
#define VZCAPS_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* For functions that report a one-line reason in (err, errlen) and return -1. */
#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

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

/* The load commands of a 64-bit slice m[0..size) (its 32-byte header checked by the caller):
 * 0 with *end, the offset just past them, or -1 when they do not fit in the slice. */
static inline int load_commands_end(const uint8_t *m, uint64_t size, uint64_t *end, char *err, size_t errlen)
{
    uint32_t sizeofcmds = le32(m + 20);
    if (!in_range(size, 32, sizeofcmds))
        FAIL("truncated: load commands (%u bytes) extend past the end of the file", sizeofcmds);
    *end = 32 + (uint64_t)sizeofcmds;
    return 0;
}

/* Load command i, at *pos (below end): its bytes, with *pos moved past it; NULL with the
 * reason in err when it is cut short or its size is not a positive multiple of 8 that fits. */
static inline const uint8_t *load_command_next(const uint8_t *m, uint64_t *pos, uint64_t end, uint32_t i, char *err,
                                               size_t errlen)
{
    if (end - *pos < 8) {
        snprintf(err, errlen, "truncated load command %u", i);
        return NULL;
    }
    const uint8_t *c = m + *pos;
    uint32_t cmdsize = le32(c + 4);
    if (cmdsize < 8 || cmdsize % 8 || cmdsize > end - *pos) {
        snprintf(err, errlen, "load command %u has a bad size %u", i, cmdsize);
        return NULL;
    }
    *pos += cmdsize;
    return c;
}

#endif
