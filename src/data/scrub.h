/* Replacing a user's home directory in a stream (scrub.c): doctor --bundle writes no path of it.
 * Owns: matching needles as whole path components across the pieces of a stream. Never: keeps
 * more of the stream than the longest needle, or replaces part of a longer file name. */
#ifndef VZCAPS_SCRUB_H
#define VZCAPS_SCRUB_H

#include <stdbool.h>
#include <stddef.h>

/* Every needle becomes "~" where it stands as whole path components: not after a byte that
 * continues a file name (letters, digits, "._-+@~", bytes above 0x7f), and not before one
 * unless the needle ends in '/' (HOME=/x/ma leaves /x/main/build alone). Needles are tried
 * longest first (the caller sorts them). */
struct vzcaps_scrub {
    char *const *needles;
    size_t n_needles;
    void (*emit)(void *ctx, const char *data, size_t len);
    void *ctx;
    char *buf; /* held back: the tail a needle may continue into */
    size_t len, cap;
    int prev;  /* the last byte passed on, -1 at the start */
};
void vzcaps_scrub_init(struct vzcaps_scrub *s, char *const *needles, size_t n, void (*emit)(void *, const char *, size_t),
                       void *ctx);
/* 0, or -1 when out of memory (nothing more is passed on). */
int vzcaps_scrub_add(struct vzcaps_scrub *s, const char *data, size_t len);
/* Passes on the rest and frees what it held. */
void vzcaps_scrub_end(struct vzcaps_scrub *s);

#endif
