/* build/test_core: the stats log's record (its fields, where it is cut, UTF-8 kept whole), the
 * log_file values and the name a script hands its process (VZCAPS_PROGRAM). */
#define _GNU_SOURCE /* memmem */
#include "core_tests.h"

/* ---- the stats log ---- */

/* Whether the n bytes at s are valid UTF-8 throughout (a record is cut only at a boundary). */
static bool all_utf8(const char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = vzcaps_utf8_valid(s + i, n - i)))
            return false;
    return true;
}

static void test_statslog_record(void **st)
{
    (void)st;
    char out[VZCAPS_STATSLOG_MAX];
    struct vzcaps_statslog_record r = {1796000000, 4242, 1008, true, "llama-server", "/opt/bin/llama-server",
                                       "AppleParavirtDevice", ""};
    size_t n = vzcaps_statslog_format(&r, out);
    const char want[] = "{\"v\":1,\"time\":1796000000,\"pid\":4242,\"program\":\"llama-server\",\"path\":"
                        "\"/opt/bin/llama-server\",\"event\":\"hooked\",\"class\":\"AppleParavirtDevice\",\"family\":1008,"
                        "\"reason\":\"\"}\n";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
    /* left stock, with every kind of byte a reason or a name may hold */
    r = (struct vzcaps_statslog_record){0, 1, 0, false, "a\"b\\c", "/p/\xff\x80x", "K\x01\x7f\xc2\x85",
                                        "caf\xc3\xa9 \xe2\x82\xac\n"};
    n = vzcaps_statslog_format(&r, out);
    const char want2[] = "{\"v\":1,\"time\":0,\"pid\":1,\"program\":\"a\\\"b\\\\c\",\"path\":\"/p/\\udcff\\udc80x\","
                         "\"event\":\"left_stock\",\"class\":\"K\\u0001\\u007f\\u0085\",\"family\":0,"
                         "\"reason\":\"caf\xc3\xa9 \xe2\x82\xac\\u000a\"}\n";
    assert_int_equal(n, strlen(want2));
    assert_memory_equal(out, want2, n);
    /* NULL strings are empty */
    r = (struct vzcaps_statslog_record){5, 6, 7, true, NULL, NULL, NULL, NULL};
    n = vzcaps_statslog_format(&r, out);
    assert_int_equal(n, strlen("{\"v\":1,\"time\":5,\"pid\":6,\"program\":\"\",\"path\":\"\",\"event\":\"hooked\","
                               "\"class\":\"\",\"family\":7,\"reason\":\"\"}\n"));
    assert_int_equal(vzcaps_json_escaped_len("a\"\x01\xc3\xa9\xff", 6), 1 + 2 + 6 + 2 + 6);
    /* the library's records: a hooked one says whether anything can be raised; an effect names the
     * image, the selector and the two answers; an image kept stock, the image */
    r = (struct vzcaps_statslog_record){1, 2, 1008, true, "p", "/p", "C", ""};
    struct vzcaps_statslog_more m = {0, "nothing above", NULL, NULL, 0, 0};
    n = vzcaps_statslog_format_more(&r, &m, out);
    const char base[] = "{\"v\":1,\"time\":1,\"pid\":2,\"program\":\"p\",\"path\":\"/p\",\"event\":\"";
    const char hooked[] = "hooked\",\"class\":\"C\",\"family\":1008,\"reason\":\"\",\"no_raise\":\"nothing above\"}\n";
    assert_int_equal(n, strlen(base) + strlen(hooked));
    assert_memory_equal(out + strlen(base), hooked, strlen(hooked));
    m = (struct vzcaps_statslog_more){VZCAPS_EVENT_UNLOCKED, NULL, "libggml-metal.dylib", "supportsFamily:", 0, 1008};
    n = vzcaps_statslog_format_more(&r, &m, out);
    const char unlocked[] = "unlocked\",\"class\":\"C\",\"family\":1008,\"reason\":\"\",\"image\":\"libggml-metal.dylib\","
                            "\"selector\":\"supportsFamily:\",\"stock\":0,\"given\":1008}\n";
    assert_int_equal(n, strlen(base) + strlen(unlocked));
    assert_memory_equal(out + strlen(base), unlocked, strlen(unlocked));
    m = (struct vzcaps_statslog_more){VZCAPS_EVENT_STOCK_CALLER, NULL, "libtorch_cpu.dylib", NULL, 0, 0};
    n = vzcaps_statslog_format_more(&r, &m, out);
    assert_non_null(memmem(out, n, "\"event\":\"stock_caller\"", 22));
    assert_non_null(memmem(out, n, "\"reason\":\"\",\"image\":\"libtorch_cpu.dylib\"}\n", 42));
}

static void test_statslog_cut(void **st)
{
    (void)st;
    static char longname[3001], euro[3 * 1000 + 1], path[1025];
    char out[VZCAPS_STATSLOG_MAX];
    memset(longname, 'n', 3000);
    for (int i = 0; i < 1000; i++)
        memcpy(euro + 3 * i, "\xe2\x82\xac", 3);
    memset(path, 'p', 1024);
    path[0] = '/';
    /* a 3000-byte name: the record stays under 1024 bytes, the name ends in "...", the short
     * fields are whole */
    struct vzcaps_statslog_record r = {LLONG_MAX, LLONG_MAX, 1010, false, longname, "/bin/x", "Dev", "why"};
    size_t n = vzcaps_statslog_format(&r, out);
    assert_true(n <= VZCAPS_STATSLOG_MAX);
    assert_int_equal(out[n - 1], '\n');
    assert_non_null(memmem(out, n, "nnn...\",\"path\":\"/bin/x\"", strlen("nnn...\",\"path\":\"/bin/x\"")));
    assert_non_null(memmem(out, n, "\"reason\":\"why\"}\n", strlen("\"reason\":\"why\"}\n")));
    assert_non_null(memmem(out, n, "\"time\":9223372036854775807,", strlen("\"time\":9223372036854775807,")));
    /* every long field at once, in multi-byte text: each cut at a character, each marked */
    r = (struct vzcaps_statslog_record){1, 2, 3, false, euro, path, euro, euro};
    n = vzcaps_statslog_format(&r, out);
    assert_true(n <= VZCAPS_STATSLOG_MAX);
    assert_true(n > VZCAPS_STATSLOG_MAX - 8); /* the room is used, not wasted */
    assert_true(all_utf8(out, n));
    size_t cuts = 0;
    for (const char *p = out; (p = memmem(p, (size_t)(out + n - p), "...\"", 4)); p += 4)
        cuts++;
    assert_int_equal(cuts, 4);
    /* negative numbers, in case */
    r = (struct vzcaps_statslog_record){-1, LLONG_MIN, 0, true, "p", "", "", ""};
    n = vzcaps_statslog_format(&r, out);
    assert_non_null(memmem(out, n, "\"time\":-1,\"pid\":-9223372036854775808,", strlen("\"time\":-1,\"pid\":-9223372036854775808,")));
}

static void test_log_file_values(void **st)
{
    (void)st;
    char why[128], out[VZCAPS_PATH_MAX + 1];
    static char too_long[VZCAPS_PATH_MAX + 2];
    memset(too_long, 'a', VZCAPS_PATH_MAX + 1);
    too_long[0] = '/';
    assert_int_equal(vzcaps_log_file_check("/var/log/vzcaps.jsonl", why, sizeof why), 0);
    assert_int_equal(vzcaps_log_file_check("~/Library/Logs/vzcaps/stats.jsonl", why, sizeof why), 0);
    assert_int_equal(vzcaps_log_file_check("stats.jsonl", why, sizeof why), -1);
    assert_string_equal(why, "not an absolute path or ~/PATH");
    assert_int_equal(vzcaps_log_file_check("~user/x", why, sizeof why), -1);
    assert_int_equal(vzcaps_log_file_check("", why, sizeof why), -1);
    assert_int_equal(vzcaps_log_file_check("/var/log/", why, sizeof why), -1);
    assert_non_null(strstr(why, "not a directory"));
    assert_int_equal(vzcaps_log_file_check(too_long, why, sizeof why), -1);
    assert_string_equal(why, "too long (limit 1024 bytes)");
    assert_int_equal(vzcaps_log_file_expand("~/s.jsonl", "/home/u", out, sizeof out), 0);
    assert_string_equal(out, "/home/u/s.jsonl");
    assert_int_equal(vzcaps_log_file_expand("~/s.jsonl", "/home/u//", out, sizeof out), 0);
    assert_string_equal(out, "/home/u/s.jsonl");
    assert_int_equal(vzcaps_log_file_expand("~/s.jsonl", "/", out, sizeof out), 0);
    assert_string_equal(out, "/s.jsonl");
    assert_int_equal(vzcaps_log_file_expand("/abs", NULL, out, sizeof out), 0);
    assert_string_equal(out, "/abs");
    assert_int_equal(vzcaps_log_file_expand("~/s", "relative", out, sizeof out), -1);
    assert_int_equal(vzcaps_log_file_expand("~/s", NULL, out, sizeof out), -1);
    too_long[VZCAPS_PATH_MAX - 1] = '\0';
    assert_int_equal(vzcaps_log_file_expand("~/abc", too_long, out, sizeof out), -1); /* refused, never cut */
}

/* log_file at the top of the config file; VZCAPS_LOG_FILE wins; both know the did-you-mean */
static void test_log_file_in_configure(void **st)
{
    (void)st;
    memset(&FILES, 0, sizeof FILES);
    FILES.path[0] = "/home/u/.config/vzcaps/vzcaps.conf";
    FILES.text[0] = "log_file = ~/stats.jsonl\n[llama]\nmatch = llama-server\napple_family_max = auto\n";
    const char *home[] = {"HOME=/home/u", NULL};
    configure_file("llama-server", home);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED);
    assert_string_equal(R.log_file, "/home/u/stats.jsonl");
    assert_string_equal(R.log_file_origin, "/home/u/.config/vzcaps/vzcaps.conf:1: log_file");
    configure_file("other", home); /* no section for it: still the path (vzcaps stats reads it) */
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
    assert_string_equal(R.log_file, "/home/u/stats.jsonl");
    const char *var[] = {"HOME=/home/u", "VZCAPS_LOG_FILE=/var/tmp/x.jsonl", NULL};
    configure_file("llama-server", var);
    assert_string_equal(R.log_file, "/var/tmp/x.jsonl");
    assert_string_equal(R.log_file_origin, "VZCAPS_LOG_FILE");
    assert_int_equal(R.profile.state, VZCAPS_ENABLED); /* not a claim: the file's section still applies */
    const char *off[] = {"HOME=/home/u", "VZCAPS_LOG_FILE=", NULL};
    configure_file("llama-server", off);
    assert_string_equal(R.log_file, "");
    const char *rel[] = {"HOME=/home/u", "VZCAPS_LOG_FILE=stats.jsonl", NULL};
    configure_file("llama-server", rel);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "VZCAPS_LOG_FILE: not an absolute path or ~/PATH; fix or unset it"));
    assert_string_equal(R.log_file, "");
    const char *nohome[] = {"HOME=relative", "VZCAPS_APPLE_FAMILY_MAX=1008", "VZCAPS_LOG_FILE=~/s.jsonl", NULL};
    configure_file("llama-server", nohome);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED);
    assert_string_equal(R.log_file, "");
    assert_true(any_note_contains(&R.profile, "HOME is not an absolute path"));
    const char *typo[] = {"VZCAPS_LOG_FIEL=/x", NULL};
    configure_file("llama-server", typo);
    assert_true(any_note_contains(&R.profile, "unknown variable VZCAPS_LOG_FIEL (did you mean VZCAPS_LOG_FILE?)"));
    /* a variable alone with no configuration: the path, and nothing configured */
    memset(&FILES, 0, sizeof FILES);
    const char *alone[] = {"VZCAPS_LOG_FILE=/l", NULL};
    configure_file("x", alone);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
    assert_string_equal(R.log_file, "/l");
    /* the config file's rules */
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"[s]\nlog_file = /x\n", "f:2: log_file inside [s]: it belongs at the top of the file, before any section"},
        {"log_file = /x\nlog_file = /y\n", "f:2: duplicate key log_file"},
        {"log_file = x\n", "f:1: log_file: not an absolute path or ~/PATH"},
        {"log_fle = /x\n[s]\n", "f:1: unknown key log_fle (did you mean log_file?)"},
        {"[s]\nlog_fil = /x\n", "f:2: unknown key log_fil (did you mean log_file?)"},
    };
    struct vzcaps_settings s;
    char section[64], err[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&s, 0, sizeof s);
        assert_int_equal(vzcaps_config_apply(bad[i].text, strlen(bad[i].text), "f", "x", NULL, &s, section,
                                             sizeof section, err, sizeof err), -1);
        assert_string_equal(err, bad[i].err);
    }
    const char good[] = "# stats\nlog_file = /x/y.jsonl   # comment\n[s]\napple_family_max = 1008\n";
    memset(&s, 0, sizeof s);
    assert_int_equal(vzcaps_config_apply(good, strlen(good), "f", "x", NULL, &s, section, sizeof section, err, sizeof err), 0);
    assert_string_equal(s.log_file, "/x/y.jsonl");
    assert_string_equal(s.log_file_origin, "f:2: log_file");
}

/* VZCAPS_PROGRAM=PID-PPID:NAME: the script's name for its own process only (hostile values as none),
 * tied to it by its pid and its parent's: a later process that reuses the pid takes nothing */
static void test_program_handed(void **state)
{
    (void)state;
    char name[16];
    assert_int_equal(vzcaps_program_handed("42-7:tool", 42, 7, name, sizeof name), 1);
    assert_string_equal(name, "tool");
    assert_int_equal(vzcaps_program_handed("42-7:tool", 43, 42, name, sizeof name), -1); /* a child: stock */
    assert_int_equal(vzcaps_program_handed("42-7+tool", 43, 42, name, sizeof name), 0);  /* a child under inherit */
    assert_int_equal(vzcaps_program_handed("42-7+tool", 42, 7, name, sizeof name), 1);
    /* the pid reused by a later descendant (another parent): never the script's name */
    assert_int_equal(vzcaps_program_handed("42-7+tool", 42, 99, name, sizeof name), 0);
    assert_int_equal(vzcaps_program_handed("42-7:tool", 42, 99, name, sizeof name), -1);
    assert_int_equal(vzcaps_program_handed("42:tool", 42, 7, name, sizeof name), -1); /* a pid alone ties nothing */
    assert_int_equal(vzcaps_program_handed("42+tool", 42, 7, name, sizeof name), 0);
    const char *bad[] = {NULL, "", "tool", ":tool", "42-7:", "42-7:a/b", "42;tool", "-1:tool", "42-:tool", "42--7:tool",
                         "42-7:a-name-too-long-for-it"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(vzcaps_program_handed(bad[i], 42, 7, name, sizeof name), 0);
    assert_int_equal(vzcaps_program_handed("99999999999999999999:x", 42, 7, name, sizeof name), 0); /* no overflow */
    assert_int_equal(vzcaps_program_handed("42-99999999999999999999:x", 42, 7, name, sizeof name), 0);
    assert_int_equal(vzcaps_program_handed("0000000000:tool", 42, 7, name, sizeof name), 2); /* unclaimed: the reader's */
    assert_string_equal(name, "tool");
    assert_int_equal(vzcaps_program_handed("0000000000-7:tool", 42, 7, name, sizeof name), -1); /* zeros with a parent: claimed */
    assert_int_equal(vzcaps_program_handed("0:tool", 42, 7, name, sizeof name), -1); /* only the full claim field */
}

UNIT_TESTS(core_statslog_tests,
           cmocka_unit_test(test_statslog_record),
           cmocka_unit_test(test_statslog_cut),
           cmocka_unit_test(test_log_file_values),
           cmocka_unit_test(test_log_file_in_configure),
           cmocka_unit_test(test_program_handed));
