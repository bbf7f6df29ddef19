/* SHA-256 for the command (never linked into the injected library). */
#ifndef VZCAPS_SHA256_H
#define VZCAPS_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The frame SHA-256 shares with SHA-1 (FIPS 180-4 5.1.1: 64-byte blocks, then 0x80, zeros and
 * the length in bits, big-endian): the hash's block function and its digest's words set by init. */
struct sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill, words;
    void (*block)(uint32_t *h, const uint8_t *p);
};
void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, uint8_t *out); /* 4 bytes a word: 32 for SHA-256 */
void sha256_hex(const void *data, size_t n, char hex[65]);
/* A regular file's hash, read without ever blocking (a FIFO or device: -1, as an unreadable file). */
int sha256_file_hex(const char *path, char hex[65]);
/* An open file's hash, read from where it stands to its end (*got: the bytes read); 0, or -1
 * with errno (the descriptor stays open either way). */
int sha256_fd_hex(int fd, char hex[65], unsigned long long *got);

#endif
