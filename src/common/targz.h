/* A reproducible .tar.gz (targz.c): ustar members in the order given, mtime 0, uid and gid 0,
 * no user or group names, inside a gzip member of stored deflate blocks (RFC 1951 and 1952).
 * Owns: the archive's bytes. Never: compresses, reads a file, or writes but through its sink. */
#ifndef VZCAPS_TARGZ_H
#define VZCAPS_TARGZ_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 of RFC 1952 (ISO 3309), continued from crc (0 to start). */
uint32_t vzcaps_crc32(uint32_t crc, const void *data, size_t len);

struct vzcaps_targz {
    void (*write)(void *ctx, const void *data, size_t len);
    void *ctx;
    uint32_t crc;
    uint64_t isize;         /* bytes of the tar stream */
    unsigned long long left; /* bytes of the current member still to come */
    unsigned pad;           /* its padding to 512 */
    size_t fill;
    unsigned char block[65535];
};

void vzcaps_targz_begin(struct vzcaps_targz *t);
/* A member: a directory (size 0, name ending in '/') or a regular file of size bytes, whose
 * content follows through vzcaps_targz_data. Names up to 255 bytes (ustar's prefix/name
 * split); -1 for a longer name or one that cannot be split. */
int vzcaps_targz_member(struct vzcaps_targz *t, const char *name, unsigned mode, unsigned long long size);
void vzcaps_targz_data(struct vzcaps_targz *t, const void *data, size_t len);
/* The end of the tar stream and of the gzip member. */
void vzcaps_targz_end(struct vzcaps_targz *t);

#endif
