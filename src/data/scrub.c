/* Replacing a user's home directory in a stream as it passes, in time linear in the stream
 * (times the needles) and memory bounded by the longest needle.
 * Owns: whole-component matching across piece boundaries. Never: replaces part of a name. */
#include "scrub.h"

#include <stdlib.h>
#include <string.h>

/* A byte that continues a file name. */
static bool name_byte(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80 ||
           (c > 0 && strchr("._-+@~", c));
}

void vzcaps_scrub_init(struct vzcaps_scrub *s, char *const *needles, size_t n, void (*emit)(void *, const char *, size_t),
                       void *ctx)
{
    *s = (struct vzcaps_scrub){.needles = needles, .n_needles = n, .emit = emit, .ctx = ctx, .prev = -1};
}

/* The needle that stands at i as whole components, or 0. */
static size_t match_at(const struct vzcaps_scrub *s, size_t i)
{
    int before = i ? (unsigned char)s->buf[i - 1] : s->prev;
    if (before >= 0 && name_byte(before))
        return 0;
    for (size_t k = 0; k < s->n_needles; k++) {
        size_t n = strlen(s->needles[k]);
        if (!n || n > s->len - i || s->buf[i] != s->needles[k][0] || memcmp(s->buf + i, s->needles[k], n) != 0)
            continue;
        if (s->needles[k][n - 1] == '/' || i + n == s->len || !name_byte((unsigned char)s->buf[i + n]))
            return n;
    }
    return 0;
}

/* Passes on what is decided: everything when final, else all but a tail longer than any
 * needle (whether a needle ends there depends on the byte after it). */
static void run(struct vzcaps_scrub *s, bool final)
{
    if (!s->len)
        return;
    size_t hold = 0;
    for (size_t k = 0; !final && k < s->n_needles; k++)
        if (strlen(s->needles[k]) + 1 > hold)
            hold = strlen(s->needles[k]) + 1;
    size_t i = 0, from = 0;
    while (i < s->len && (final || i + hold < s->len)) {
        size_t n = match_at(s, i);
        if (!n) {
            i++;
            continue;
        }
        if (i > from)
            s->emit(s->ctx, s->buf + from, i - from);
        s->emit(s->ctx, "~", 1);
        i += n;
        from = i;
    }
    if (i > from)
        s->emit(s->ctx, s->buf + from, i - from);
    if (i)
        s->prev = (unsigned char)s->buf[i - 1];
    memmove(s->buf, s->buf + i, s->len - i);
    s->len -= i;
}

int vzcaps_scrub_add(struct vzcaps_scrub *s, const char *data, size_t len)
{
    if (s->len + len > s->cap) {
        size_t cap = s->len + len + 4096;
        char *b = realloc(s->buf, cap);
        if (!b)
            return -1;
        s->buf = b, s->cap = cap;
    }
    if (len)
        memcpy(s->buf + s->len, data, len);
    s->len += len;
    run(s, false);
    return 0;
}

void vzcaps_scrub_end(struct vzcaps_scrub *s)
{
    run(s, true);
    free(s->buf);
    s->buf = NULL, s->len = s->cap = 0;
}
