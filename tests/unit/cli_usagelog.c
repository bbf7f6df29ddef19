/* build/test_cli_units: vzcaps stats's reader (src/data/usagelog.c): --since forms, lines split
 * from a stream, the zero mark, a rotation's line and a record cut short, one record whole. */
#define _POSIX_C_SOURCE 200809L
#include "cli_tests.h"

/* vzcaps stats's reader (usagelog.c): --since forms, lines split from a stream, one record. */
static void test_usagelog_since(void **st)
{
    (void)st;
    long long t = -1, now = 1796155200; /* 2026-12-01T20:00:00Z */
    char why[300];
    assert_int_equal(ulog_since_parse("2026-12-01T20:00:00Z", now, &t, why, sizeof why), 0);
    assert_true(t == 1796155200);
    assert_int_equal(ulog_since_parse("2026-12-01T20:00Z", now, &t, why, sizeof why), 0);
    assert_true(t == 1796155200);
    assert_int_equal(ulog_since_parse("2026-12-01", now, &t, why, sizeof why), 0);
    assert_true(t == 1796155200 - 20 * 3600);
    assert_int_equal(ulog_since_parse("2024-02-29T00:00:00Z", now, &t, why, sizeof why), 0); /* a leap day */
    assert_true(t == 1709164800);
    assert_int_equal(ulog_since_parse("1970-01-01", now, &t, why, sizeof why), 0);
    assert_true(t == 0);
    assert_int_equal(ulog_since_parse("2h", now, &t, why, sizeof why), 0);
    assert_true(t == now - 7200);
    assert_int_equal(ulog_since_parse("30m", now, &t, why, sizeof why), 0);
    assert_true(t == now - 1800);
    assert_int_equal(ulog_since_parse("7d", now, &t, why, sizeof why), 0);
    assert_true(t == now - 7 * 86400);
    assert_int_equal(ulog_since_parse("42", now, &t, why, sizeof why), 0);
    assert_true(t == 42);
    const char *bad[] = {"", "2023-02-29", "2026-00-10", "2026-12-32", "2026-12-01T24:00:00Z", "2026-12-01T20:00:00",
                         "2026-12-01T20:00:00+01:00", "1969-12-31", "2h30m", "-1", "1w", "s", "99999999999d",
                         "1234567890123456", " 5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        assert_int_equal(ulog_since_parse(bad[i], now, &t, why, sizeof why), -1);
        assert_non_null(strstr(why, "is "));
    }
}

struct line_seen {
    char text[8][2 * VZCAPS_LOG_LINE_MAX + 1];
    size_t len[8];
    bool overlong[8], unterminated[8];
    unsigned long long no[8];
    int n;
};

static void line_seen(void *ctx, const char *line, size_t len, unsigned long long no, bool overlong, bool unterminated)
{
    struct line_seen *s = ctx;
    memcpy(s->text[s->n], line, len + 1);
    s->len[s->n] = len, s->no[s->n] = no, s->overlong[s->n] = overlong, s->unterminated[s->n] = unterminated;
    s->n++;
}

static void test_usagelog_lines(void **st)
{
    (void)st;
    static struct line_seen seen;
    static struct ulog_lines l;
    static char big[3000];
    memset(&seen, 0, sizeof seen);
    memset(&l, 0, sizeof l);
    l.on_line = line_seen, l.ctx = &seen;
    memset(big, 'x', sizeof big);
    ulog_lines_feed(&l, "ab", 2);
    ulog_lines_feed(&l, "c\n\nd", 4); /* a line across two reads, an empty line */
    ulog_lines_feed(&l, big, 1024);   /* d + 1024 bytes: one too many */
    ulog_lines_feed(&l, "\n", 1);
    ulog_lines_feed(&l, big, 1024);   /* exactly the limit */
    ulog_lines_feed(&l, "\ntail", 5);
    ulog_lines_end(&l);
    assert_int_equal(seen.n, 5);
    assert_string_equal(seen.text[0], "abc");
    assert_true(seen.len[1] == 0 && !seen.overlong[1]);
    assert_true(seen.overlong[2] && seen.len[2] == VZCAPS_LOG_LINE_MAX + 1 && seen.no[2] == 3); /* kept whole */
    assert_true(!seen.overlong[3] && seen.len[3] == VZCAPS_LOG_LINE_MAX);
    assert_true(seen.unterminated[4] && !seen.unterminated[3] && seen.no[4] == 5);
    assert_string_equal(seen.text[4], "tail");
    /* a longer line is kept whole up to twice the limit; of a longer one, its last bytes (a whole
     * record after cut ones is there) */
    memset(&seen, 0, sizeof seen);
    ulog_lines_feed(&l, "head", 4);
    ulog_lines_feed(&l, big, 2040);
    ulog_lines_feed(&l, "TAIL\n", 5); /* 2048 bytes */
    ulog_lines_feed(&l, big, 2045);
    ulog_lines_feed(&l, "END\n", 4);
    assert_int_equal(seen.n, 2);
    assert_true(seen.overlong[0] && seen.len[0] == 2 * VZCAPS_LOG_LINE_MAX); /* whole */
    assert_true(memcmp(seen.text[0], "head", 4) == 0 && memcmp(seen.text[0] + 2044, "TAIL", 4) == 0);
    assert_true(seen.overlong[1] && seen.len[1] == 2 * VZCAPS_LOG_LINE_MAX && seen.text[1][0] == 'x'); /* 2049: its start dropped */
    assert_memory_equal(seen.text[1] + 2 * VZCAPS_LOG_LINE_MAX - 3, "END", 3);
}

/* The zero mark of stats --zero: what it writes, it reads back; nothing else is a mark. */
static void test_usagelog_zero_mark(void **st)
{
    (void)st;
    char line[128];
    long long t = -1;
    size_t n = ulog_zero_format(1796155200, 42, line, sizeof line);
    assert_string_equal(line, "{\"v\":1,\"time\":1796155200,\"pid\":42,\"event\":\"zeroed\"}\n");
    assert_int_equal(n, strlen(line));
    assert_int_equal(ulog_parse_zero(line, n - 1, &t), 1);
    assert_true(t == 1796155200);
    assert_int_equal(ulog_zero_format(1, 1, line, 20), 0); /* never cut */
    static const char *const not_marks[] = {
        "{\"v\":1,\"time\":1,\"pid\":1,\"program\":\"a\",\"path\":\"/p\",\"event\":\"hooked\",\"class\":\"\",\"family\":1008,\"reason\":\"\"}",
        "{\"v\":2,\"time\":1,\"event\":\"zeroed\"}", "{\"v\":1,\"event\":\"zeroed\"}", "{\"v\":1,\"time\":-1,\"event\":\"zeroed\"}",
        "{\"v\":1,\"time\":1,\"event\":\"zero\"}", "[\"zeroed\"]", "{\"v\":1,\"time\":1,\"event\":\"zeroed\"", ""};
    for (size_t i = 0; i < sizeof not_marks / sizeof not_marks[0]; i++)
        assert_int_equal(ulog_parse_zero(not_marks[i], strlen(not_marks[i]), &t), 0);
}

/* A rotation's line reads back its three numbers; a record cut short tells what its whole members hold. */
static void test_usagelog_rotated_and_cut(void **st)
{
    (void)st;
    long long z = -1, lost = -1, until = -1;
    const char *rot = "{\"v\":1,\"time\":5,\"pid\":6,\"event\":\"rotated\",\"zeroed\":1700000000,\"lost\":42,\"until\":1700000009}";
    assert_int_equal(ulog_parse_rotated(rot, strlen(rot), &z, &lost, &until), 1);
    assert_true(z == 1700000000 && lost == 42 && until == 1700000009);
    assert_int_equal(ulog_parse_rotated(rot, strlen(rot) - 1, &z, &lost, &until), 0);
    const char *unknown = "{\"v\":1,\"time\":5,\"pid\":6,\"event\":\"rotated\",\"zeroed\":0,\"lost\":-1,\"until\":0}";
    assert_int_equal(ulog_parse_rotated(unknown, strlen(unknown), &z, &lost, &until), 1); /* -1: how many, unknown */
    assert_true(lost == -1);
    const char *neg = "{\"v\":1,\"time\":5,\"pid\":6,\"event\":\"rotated\",\"zeroed\":0,\"lost\":-2,\"until\":0}";
    assert_int_equal(ulog_parse_rotated(neg, strlen(neg), &z, &lost, &until), 0);
    struct ulog_record r;
    const char *cut = "{\"v\":1,\"time\":7,\"pid\":8,\"program\":\"p\\\"q\",\"path\":\"/x\",\"event\":\"left_stock\",\"class\":\"App";
    assert_int_equal(ulog_parse_fragment(cut, strlen(cut), &r), 1);
    assert_true(r.event == ULOG_LEFT_STOCK && r.pid == 8 && r.time == 7);
    assert_string_equal(r.program, "p\"q");
    ulog_record_free(&r);
    assert_int_equal(ulog_parse_fragment(cut, 60, &r), 1); /* cut in its path: program whole, event not */
    assert_true(r.event == ULOG_UNKNOWN);
    ulog_record_free(&r);
    assert_int_equal(ulog_parse_fragment(cut, 40, &r), 2); /* cut in its program: anyone's */
    assert_int_equal(ulog_parse_fragment(cut, 9, &r), 2);
    assert_int_equal(ulog_parse_fragment("not a record", 12, &r), 0);
    assert_int_equal(ulog_parse_fragment("{\"v\":2,\"time\":1}", 17, &r), 0);
}

static void test_usagelog_record(void **st)
{
    (void)st;
    struct ulog_record r;
    char why[300];
    const char *ok = "{\"v\":1,\"time\":1796155200,\"pid\":42,\"program\":\"a\\u00ffb\",\"path\":\"/p\",\"event\":\"left_stock\","
                     "\"class\":\"MTLDevice\",\"family\":0,\"reason\":\"refused: x\",\"later\":[1]}";
    assert_int_equal(ulog_parse_line(ok, strlen(ok), &r, why, sizeof why), 0);
    assert_true(r.time == 1796155200 && r.pid == 42 && r.family == 0 && r.event == ULOG_LEFT_STOCK);
    assert_string_equal(r.program, "a\xc3\xbf" "b");
    assert_string_equal(r.reason, "refused: x");
    struct ulog_stats s = {0};
    assert_int_equal(ulog_stats_add(&s, &r), 0);
    assert_int_equal(ulog_stats_add(&s, &r), 0);
    ulog_record_free(&r);
    assert_true(s.n == 1 && s.items[0].n == 2 && s.left_stock == 2 && s.hooked == 0);
    ulog_stats_free(&s);
    const char *bad[][2] = {
        {"{\"v\":2,\"time\":1}", "unknown version 2"},
        {"{\"time\":1}", "no \"v\" integer"},
        {"{\"v\":1,\"time\":1,\"pid\":1,\"family\":1008,\"program\":\"p\",\"path\":\"/\",\"event\":\"hooked\",\"class\":\"c\"}",
         "no \"reason\" string"},
        {"{\"v\":1,\"time\":1.5,\"pid\":1}", "no \"time\" integer"},
        {"{\"v\":1,\"time\":1,\"pid\":1,\"family\":1008,\"program\":\"p\",\"path\":\"/\",\"event\":\"other\",\"class\":\"c\","
         "\"reason\":\"\"}", "unknown event"},
        {"[]", "not a JSON object"},
        {"{\"v\":1,", "not JSON: line 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ulog_parse_line(bad[i][0], strlen(bad[i][0]), &r, why, sizeof why), -1);
        assert_non_null(strstr(why, bad[i][1]));
        assert_null(r.program);
    }
    /* a byte that is not UTF-8 (\udcXX, as the library writes it) is that byte, not U+00XX */
    const char *byte = "{\"v\":1,\"time\":1,\"pid\":1,\"program\":\"p\\udcff\",\"path\":\"/p\\udc80\",\"event\":\"hooked\","
                       "\"class\":\"c\",\"family\":1008,\"reason\":\"\"}";
    assert_int_equal(ulog_parse_line(byte, strlen(byte), &r, why, sizeof why), 0);
    assert_string_equal(r.program, "p\xff");
    assert_string_equal(r.path, "/p\x80");
    ulog_record_free(&r);
    char err[200];
    assert_null(jv_parse("\"\\udcff\"", 8, err, sizeof err)); /* elsewhere still refused */
    assert_non_null(strstr(err, "unpaired surrogate"));
    struct jv *lo = jv_parse_bytes("\"\\udc7f\"", 8, err, sizeof err); /* below 0x80: never a byte escape */
    assert_null(lo);
    /* a record appended to one cut short: where it starts; none in a whole record or at byte 0 */
    const char *cut = "{\"v\":1,\"time\":17{\"v\":1,\"x\":\"{\\\"v\\\":\"}";
    assert_ptr_equal(ulog_record_after_cut(cut, strlen(cut)), cut + 16);
    assert_null(ulog_record_after_cut(ok, strlen(ok)));
    assert_null(ulog_record_after_cut("{\"v\":", 5));
    const char *at1 = "x{\"v\":";
    assert_null(ulog_record_after_cut(at1, 5)); /* the mark cut by the line's end */
    assert_ptr_equal(ulog_record_after_cut(at1, 6), at1 + 1);
}

UNIT_TESTS(cli_usagelog_tests,
           cmocka_unit_test(test_usagelog_since),
           cmocka_unit_test(test_usagelog_lines),
           cmocka_unit_test(test_usagelog_zero_mark),
           cmocka_unit_test(test_usagelog_rotated_and_cut),
           cmocka_unit_test(test_usagelog_record));
