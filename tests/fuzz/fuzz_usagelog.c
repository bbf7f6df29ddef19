/* libFuzzer target: the usage log as vzcaps stats reads it (src/data/usagelog.c) — the stream
 * split into lines in pieces of any size, each line parsed and counted, the counts sorted; a line
 * that is no record read for what a cut one still holds, and as a rotation's line; every record
 * and cut one taken by --require's table (src/data/require.c) and judged; the first bytes also as
 * a --since value. Checks that a line never outgrows its buffer (twice a record's limit) and is
 * overlong past the limit, that every line is either counted or skipped, and that the counts
 * agree with their entries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/data/require.h"
#include "../../src/data/usagelog.h"

struct seen {
    struct ulog_stats st;
    struct ulog_require req;
    unsigned long long lines, counted, skipped;
};

static void on_line(void *ctx, const char *line, size_t len, unsigned long long line_no, bool overlong,
                    bool unterminated)
{
    struct seen *s = ctx;
    (void)unterminated;
    /* a line is kept whole up to twice the record's limit, and one past the limit is overlong */
    if (len > 2 * VZCAPS_LOG_LINE_MAX || (len > VZCAPS_LOG_LINE_MAX && !overlong) || line[len] != '\0' ||
        line_no != ++s->lines)
        __builtin_trap();
    struct ulog_record r;
    char why[300];
    if (overlong || ulog_parse_line(line, len, &r, why, sizeof why) != 0) {
        if (!overlong && !why[0])
            __builtin_trap(); /* a refusal always says why */
        long long t = -1;
        char mark[128];
        /* a zero mark reads back as the one ulog_zero_format writes for its time */
        if (!overlong && ulog_parse_zero(line, len, &t) &&
            (t < 0 || ulog_zero_format(t, 1, mark, sizeof mark) == 0 || !ulog_parse_zero(mark, strlen(mark) - 1, &t)))
            __builtin_trap();
        long long z, lost, until;
        if (ulog_parse_rotated(line, len, &z, &lost, &until) && (z < 0 || lost < 0 || until < 0))
            __builtin_trap();
        int k = ulog_parse_fragment(line, len, &r);
        if (k < 0 || k > 2 || (k == 1 && (!r.program || !*r.program || !r.path || !r.reason || !r.image)))
            __builtin_trap();
        if (k == 1)
            ulog_require_count(&s->req, &r), ulog_record_free(&r);
        s->skipped++;
        return;
    }
    if (!r.program || !*r.program || !r.reason || r.version != VZCAPS_LOG_VERSION)
        __builtin_trap();
    bool run = r.event == ULOG_HOOKED || r.event == ULOG_LEFT_STOCK;
    if (!r.no_raise || !r.image || (!run && r.event != ULOG_UNLOCKED && r.event != ULOG_STOCK_CALLER))
        __builtin_trap();
    if (run && ulog_stats_add(&s->st, &r) == 0)
        s->counted++;
    ulog_require_count(&s->req, &r);
    ulog_record_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ulog_lines l;
    struct seen s;
    memset(&s, 0, sizeof s);
    memset(&l, 0, sizeof l);
    l.on_line = on_line, l.ctx = &s;
    char *names[] = {"a", "llama-server=2", "/usr/local/bin/b", "b=", "x"};
    size_t bad;
    if (ulog_require_init(&s.req, names, 5, &bad) != 0 || ulog_require_index(&s.req) != 0)
        __builtin_trap();
    size_t piece = size ? (size_t)data[0] % 7 + 1 : 1; /* the reads' sizes vary */
    for (size_t off = 0; off < size; off += piece)
        ulog_lines_feed(&l, (const char *)data + off, size - off < piece ? size - off : piece);
    ulog_lines_end(&l);
    if (s.counted != s.st.hooked + s.st.left_stock)
        __builtin_trap();
    ulog_stats_sort(&s.st);
    unsigned long long sum = 0;
    for (size_t i = 0; i < s.st.n; i++) {
        sum += s.st.items[i].n;
        if (i && strcmp(s.st.items[i - 1].program, s.st.items[i].program) > 0)
            __builtin_trap();
    }
    if (sum != s.counted)
        __builtin_trap();
    ulog_stats_free(&s.st);
    for (size_t i = 0; i < s.req.n; i++) {
        char *words = NULL;
        unsigned long long unlocked;
        const char *verdict = ulog_require_verdict(&s.req, &s.req.req[i], 0, "", &words, &unlocked);
        if (!verdict || !words || unlocked > s.req.req[i].hooked)
            __builtin_trap();
        free(words);
    }
    ulog_require_free(&s.req);
    char text[64], why[200];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    long long since;
    if (ulog_since_parse(text, 1796155200, &since, why, sizeof why) != 0 && !why[0])
        __builtin_trap();
    return 0;
}
