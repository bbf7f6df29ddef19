/* A reproducible .tar.gz: ustar members inside a gzip member of stored deflate blocks (RFC 1951
 * section 3.2.4, RFC 1952), so two runs over the same files give the same bytes.
 * Owns: the archive format. Never: reads files, compresses, or writes a machine's names, times
 * or ids (mtime 0, uid and gid 0, empty user and group names, OS byte 255: unknown). */
#include "targz.h"

#include <stdbool.h>
#include <string.h>

uint32_t vzcaps_crc32(uint32_t crc, const void *data, size_t len)
{
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    const unsigned char *p = data;
    crc = ~crc;
    while (len--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* One stored block of what is buffered (not the last: the empty final block ends the stream). */
static void flush_block(struct vzcaps_targz *t)
{
    if (!t->fill)
        return;
    unsigned char h[5] = {0x00, (unsigned char)(t->fill & 0xff), (unsigned char)(t->fill >> 8),
                          (unsigned char)(~t->fill & 0xff), (unsigned char)((~t->fill >> 8) & 0xff)};
    t->write(t->ctx, h, sizeof h);
    t->write(t->ctx, t->block, t->fill);
    t->fill = 0;
}

/* Bytes of the tar stream. */
static void tar_bytes(struct vzcaps_targz *t, const void *data, size_t len)
{
    const unsigned char *p = data;
    t->crc = vzcaps_crc32(t->crc, p, len);
    t->isize += len;
    while (len) {
        size_t n = sizeof t->block - t->fill < len ? sizeof t->block - t->fill : len;
        memcpy(t->block + t->fill, p, n);
        t->fill += n, p += n, len -= n;
        if (t->fill == sizeof t->block)
            flush_block(t);
    }
}

void vzcaps_targz_begin(struct vzcaps_targz *t)
{
    t->crc = 0, t->isize = 0, t->left = 0, t->pad = 0, t->fill = 0;
    /* ID1 ID2 CM=8 FLG=0 MTIME=0 XFL=0 OS=255 */
    static const unsigned char h[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
    t->write(t->ctx, h, sizeof h);
}

static void octal(char *field, size_t width, unsigned long long v)
{
    /* width - 1 digits and a NUL, as ustar writes them */
    field[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0; v >>= 3)
        field[i] = (char)('0' + (v & 7));
}

static void finish_member(struct vzcaps_targz *t)
{
    static const unsigned char zeros[512];
    if (t->pad)
        tar_bytes(t, zeros, t->pad);
    t->pad = 0;
}

int vzcaps_targz_member(struct vzcaps_targz *t, const char *name, unsigned mode, unsigned long long size)
{
    finish_member(t);
    size_t n = strlen(name), split = 0;
    if (n > 100) { /* prefix (up to 155) '/' name (up to 100) */
        for (size_t i = n; i-- > 0;)
            if (name[i] == '/' && i <= 155 && n - i - 1 <= 100 && n - i - 1 > 0) {
                split = i;
                break;
            }
        if (!split)
            return -1;
    }
    if (size >= 077777777777ull)
        return -1;
    char h[512];
    memset(h, 0, sizeof h);
    if (split) {
        memcpy(h + 345, name, split);
        memcpy(h, name + split + 1, n - split - 1);
    } else {
        memcpy(h, name, n);
    }
    bool dir = n && name[n - 1] == '/';
    octal(h + 100, 8, mode & 07777);
    octal(h + 108, 8, 0);
    octal(h + 116, 8, 0);
    octal(h + 124, 12, dir ? 0 : size);
    octal(h + 136, 12, 0);
    h[156] = dir ? '5' : '0';
    memcpy(h + 257, "ustar", 6); /* magic "ustar\0", version "00" */
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < sizeof h; i++)
        sum += (unsigned char)h[i];
    octal(h + 148, 7, sum); /* six digits, NUL, and the blank already there */
    tar_bytes(t, h, sizeof h);
    t->left = dir ? 0 : size;
    t->pad = (unsigned)((512 - (t->left % 512)) % 512);
    return 0;
}

void vzcaps_targz_data(struct vzcaps_targz *t, const void *data, size_t len)
{
    tar_bytes(t, data, len);
    t->left -= len < t->left ? len : t->left;
}

void vzcaps_targz_end(struct vzcaps_targz *t)
{
    finish_member(t);
    static const unsigned char zeros[1024]; /* two zero blocks end a tar */
    tar_bytes(t, zeros, sizeof zeros);
    flush_block(t);
    static const unsigned char last[5] = {0x01, 0x00, 0x00, 0xff, 0xff}; /* BFINAL, stored, empty */
    t->write(t->ctx, last, sizeof last);
    unsigned char tr[8];
    for (int i = 0; i < 4; i++)
        tr[i] = (unsigned char)(t->crc >> (8 * i)), tr[4 + i] = (unsigned char)(t->isize >> (8 * i));
    t->write(t->ctx, tr, sizeof tr);
}
