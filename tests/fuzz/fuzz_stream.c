/* libFuzzer target: any bytes through the streaming pieces of the child runner's sinks, with
 * their promises checked on every input:
 *   - the home scrub gives the same output however the stream is cut into pieces, never holds
 *     more than the longest needle plus one byte, and leaves no needle standing as whole
 *     components (first byte: the needle's length, then the needle, then the stream; the
 *     piece sizes come from the stream's own bytes);
 *   - the line splitter passes every byte on unchanged and calls back once per line, never
 *     with more than VZCAPS_LINE_MAX bytes;
 *   - the archive writer's stored blocks put together are exactly the tar stream, with the
 *     CRC-32 and size the gzip trailer states. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/common/child.h"
#include "../../src/data/scrub.h"
#include "../../src/common/targz.h"

struct buf {
    char *p;
    size_t n;
};

static void add(struct buf *b, const void *p, size_t n)
{
    b->p = realloc(b->p, b->n + n + 1);
    if (!b->p)
        abort();
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void emit(void *ctx, const char *p, size_t n)
{
    add(ctx, p, n);
}

static void emit_v(void *ctx, const void *p, size_t n)
{
    add(ctx, p, n);
}

static struct buf scrub(char **needles, const uint8_t *s, size_t n, const uint8_t *cuts, size_t ncuts)
{
    struct buf out = {0};
    add(&out, "", 0);
    struct vzcaps_scrub sc;
    vzcaps_scrub_init(&sc, needles, 1, emit, &out);
    size_t i = 0, c = 0;
    while (i < n) {
        size_t piece = ncuts ? (size_t)cuts[c++ % ncuts] % 17 + 1 : n;
        if (piece > n - i)
            piece = n - i;
        if (vzcaps_scrub_add(&sc, (const char *)s + i, piece) != 0)
            abort();
        if (sc.len > strlen(needles[0]) + 1)
            abort();
        i += piece;
    }
    vzcaps_scrub_end(&sc);
    return out;
}

static size_t lines, longest;

static void on_line(void *ctx, const char *line, size_t n)
{
    (void)ctx, (void)line;
    lines++;
    if (n > longest)
        longest = n;
}

static int copy_sink(void *ctx, const char *p, size_t n)
{
    add(ctx, p, n);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t nl = data[0] % 16 + 1;
    if (size < 1 + nl)
        return 0;
    char needle[17];
    memcpy(needle, data + 1, nl);
    needle[nl] = '\0';
    if (strlen(needle) != nl)
        return 0; /* needles are strings */
    char *needles[] = {needle};
    const uint8_t *s = data + 1 + nl;
    size_t n = size - 1 - nl;
    struct buf whole = scrub(needles, s, n, NULL, 0), cut = scrub(needles, s, n, s, n);
    if (whole.n != cut.n || memcmp(whole.p, cut.p, whole.n) != 0)
        abort();
    free(whole.p), free(cut.p);

    static struct vzcaps_lines l;
    struct buf copy = {0};
    add(&copy, "", 0);
    l = (struct vzcaps_lines){.line = on_line, .next = {copy_sink, &copy}};
    lines = longest = 0;
    for (size_t i = 0; i < n;) {
        size_t piece = (size_t)s[i] % 9 + 1 < n - i ? (size_t)s[i] % 9 + 1 : n - i;
        vzcaps_lines_write(&l, (const char *)s + i, piece);
        i += piece;
    }
    vzcaps_lines_end(&l);
    size_t newlines = 0;
    for (size_t i = 0; i < n; i++)
        newlines += s[i] == '\n';
    if (copy.n != n || (n && memcmp(copy.p, s, n) != 0) || longest > VZCAPS_LINE_MAX)
        abort();
    if (lines < newlines || lines > newlines + 1 + n / VZCAPS_LINE_MAX)
        abort();
    free(copy.p);

    struct buf gz = {0};
    static struct vzcaps_targz t;
    t.write = emit_v, t.ctx = &gz;
    vzcaps_targz_begin(&t);
    if (vzcaps_targz_member(&t, "d/f", 0644, n) != 0)
        abort();
    vzcaps_targz_data(&t, s, n);
    vzcaps_targz_end(&t);
    struct buf tar = {0};
    add(&tar, "", 0);
    const unsigned char *g = (const unsigned char *)gz.p;
    size_t pos = 10;
    for (;;) {
        if (pos + 5 > gz.n)
            abort();
        size_t len = (size_t)(g[pos + 1] | g[pos + 2] << 8);
        if ((len ^ 0xffff) != (size_t)(g[pos + 3] | g[pos + 4] << 8) || pos + 5 + len > gz.n)
            abort();
        add(&tar, g + pos + 5, len);
        int final = g[pos] & 1;
        pos += 5 + len;
        if (final)
            break;
    }
    uint32_t crc = (uint32_t)g[pos] | (uint32_t)g[pos + 1] << 8 | (uint32_t)g[pos + 2] << 16 | (uint32_t)g[pos + 3] << 24;
    if (pos + 8 != gz.n || crc != vzcaps_crc32(0, tar.p, tar.n) || tar.n % 512 || (n && memcmp(tar.p + 512, s, n) != 0))
        abort();
    free(gz.p), free(tar.p);
    return 0;
}
