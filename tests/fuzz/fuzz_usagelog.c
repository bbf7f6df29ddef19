/* libFuzzer target: the usage log as vzcaps stats reads it (src/data/usagelog.c) — the stream
 * split into lines in pieces of any size, each line parsed and counted, the counts sorted; the
 * first bytes also as a --since value. Checks that a line
 * never outgrows its limit, that every line is either counted or skipped, and that the counts
 * agree with their entries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/data/usagelog.h"

struct seen {
    struct ulog_stats st;
    unsigned long long lines, counted, skipped;
};

static void on_line(void *ctx, const char *line, size_t len, unsigned long long line_no, bool overlong,
                    bool unterminated)
{
    struct seen *s = ctx;
    (void)unterminated;
    if (len > VZCAPS_LOG_LINE_MAX || line[len] != '\0' || line_no != ++s->lines)
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
        s->skipped++;
        return;
    }
    if (!r.program || !*r.program || !r.reason || r.version != VZCAPS_LOG_VERSION)
        __builtin_trap();
    if (ulog_stats_add(&s->st, &r) == 0)
        s->counted++;
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
    char text[64], why[200];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    long long since;
    if (ulog_since_parse(text, 1796155200, &since, why, sizeof why) != 0 && !why[0])
        __builtin_trap();
    return 0;
}
