/* build/test_core: the core's guards against hostile input: escapes, clipping that says so, the
 * environment scan, file trust, launcher targets and Rosetta's way out. Values in, values out. */
#include "core_tests.h"

/* ---- hardening: escapes, clipping, the environment scan, trust, launchers ---- */

static void expect_escape(const char *in, size_t n, const char *want)
{
    char out[256];
    size_t need = vzcaps_escape(in, n, out, sizeof out);
    assert_string_equal(out, want);
    assert_int_equal(need, strlen(want));
    assert_int_equal(vzcaps_escape(in, n, NULL, 0), need); /* sizing call */
}

static void test_escape(void **st)
{
    (void)st;
    expect_escape("plain text", 10, "plain text");
    expect_escape("a\nb", 3, "a\\x0ab");
    expect_escape("\x1b[31m\a\r\x7f", 8, "\\x1b[31m\\x07\\x0d\\x7f");
    expect_escape("back\\slash", 10, "back\\\\slash");
    expect_escape("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    expect_escape("\xc2\x9b", 2, "\\xc2\\x9b");                 /* C1 control U+009B */
    expect_escape("\xc2\xa0", 2, "\xc2\xa0");                     /* U+00A0 is text */
    expect_escape("\xff\xfe", 2, "\\xff\\xfe");                 /* never UTF-8 */
    expect_escape("\xc0\xaf", 2, "\\xc0\\xaf");                 /* overlong '/' */
    expect_escape("\xed\xa0\x80", 3, "\\xed\\xa0\\x80");     /* a surrogate */
    expect_escape("\xe2\x82", 2, "\\xe2\\x82");                 /* truncated */
    expect_escape("\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80"); /* above U+10FFFF */
    expect_escape("nul\0after", 9, "nul\\x00after");
    /* a short buffer holds a prefix of whole escapes and says how much was needed */
    char small[6];
    assert_int_equal(vzcaps_escape("ab\x1b", 3, small, sizeof small), 6);
    assert_string_equal(small, "ab");
}

static void test_clip_and_append_say_when_they_cut(void **st)
{
    (void)st;
    char out[128], big[300];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_string_equal(vzcaps_clip("short", 64, out, sizeof out), "short");
    vzcaps_clip(big, 10, out, sizeof out);
    assert_string_equal(out, "vvvvvvvvvv...(299 bytes)");
    /* the n bytes given, no NUL needed: an environment entry's name before its '=' */
    assert_string_equal(vzcaps_clipn("NAME=value", 4, 64, out, sizeof out), "NAME");
    assert_string_equal(vzcaps_clipn("VZCAPS_X=1", 8, 3, out, sizeof out), "VZC...(8 bytes)");
    /* a buffer too small for max bytes and the note: the note stays whole (it ended
     * "...(100000 byte" in a 32-byte field) */
    static char huge[100001];
    memset(huge, 'x', sizeof huge - 1);
    char field[32];
    vzcaps_clip(huge, sizeof field - 16, field, sizeof field);
    assert_string_equal(field, "xxxxxxxxxxxxxx...(100000 bytes)");
    char tiny[4];
    assert_string_equal(vzcaps_clip(huge, 10, tiny, sizeof tiny), "...");
    /* never inside a UTF-8 character */
    assert_string_equal(vzcaps_clip("\xc3\xa9\xc3\xa9\xc3\xa9", 3, out, sizeof out), "\xc3\xa9...(6 bytes)");
    char buf[16] = "";
    vzcaps_appendf(buf, sizeof buf, "%s", "0123456789abcdefghij");
    assert_string_equal(buf, "0123456789ab...");
}

static void test_environment_scan(void **st)
{
    (void)st;
    static char longname[300];
    memcpy(longname, "VZCAPS_", 7);
    memset(longname + 7, 'X', 250);
    strcpy(longname + 257, "=1");
    const char *unknown_long[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", longname, NULL};
    configure_env(unknown_long, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "unknown variable VZCAPS_XXXX"));
    assert_true(any_note_contains(&R.profile, "(257 bytes)"));
    const char *dup[] = {"VZCAPS_APPLE_FAMILY_MAX=1007", "VZCAPS_APPLE_FAMILY_MAX=1009", NULL};
    configure_env(dup, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "VZCAPS_APPLE_FAMILY_MAX is set twice"));
    const char *dup_compat[] = {"LUME_METAL_APPLE_FAMILY_MAX=1007", "LUME_METAL_APPLE_FAMILY_MAX=1009", NULL};
    configure_env(dup_compat, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    const char *noeq[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_APPLE_FAMILY_MAX", NULL};
    configure_env(noeq, "Apple M2", 0);
    assert_true(any_note_contains(&R.profile, "has no '='"));
    const char *other_compat[] = {"TART_METAL_SOMETHING_ELSE=1", "TART_METAL_APPLE_FAMILY_MAX=1007", NULL};
    configure_env(other_compat, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED); /* names the shims never read are not ours to judge */
    /* the preload variable twice is ambiguous too */
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    const char *pre[] = {"VZCAPS_APPLE_FAMILY_MAX=1007", "LD_PRELOAD=/a.so", "LD_PRELOAD=/b.so", NULL};
    struct vzcaps_inputs in = {.envp = pre, .exe = "x", .preload_var = "LD_PRELOAD", .host = {.brand = "Apple M2", .brand_origin = "test", .physical_memory = 0, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_true(any_note_contains(&R.profile, "LD_PRELOAD is set twice"));
    /* a path too long is refused, never cut */
    static char path[1200];
    memcpy(path, "VZCAPS_CONFIG=/", 15);
    memset(path + 15, 'p', 1100);
    const char *long_config[] = {path, NULL};
    configure_env(long_config, "Apple M2", 0);
    assert_true(any_note_contains(&R.profile, "too long (limit 1024 bytes)"));
    assert_true(vzcaps_env_is_ours("VZCAPS_ANYTHING") && vzcaps_env_is_ours("TART_METAL_X=1") && vzcaps_env_is_ours("LUME_METAL_"));
    assert_false(vzcaps_env_is_ours("VZCAPS") || vzcaps_env_is_ours("LD_PRELOAD=x") || vzcaps_env_is_ours("TART_X=1"));
}

static void test_file_trust(void **st)
{
    (void)st;
    char why[128];
    assert_int_equal(vzcaps_file_trust(501, 0100644, 501, why, sizeof why), 0);
    assert_int_equal(vzcaps_file_trust(0, 0100600, 501, why, sizeof why), 0);
    assert_int_equal(vzcaps_file_trust(0, 0100644, 0, why, sizeof why), 0);
    assert_int_equal(vzcaps_file_trust(502, 0100644, 501, why, sizeof why), -1);
    assert_string_equal(why, "not trusted: owned by uid 502 (only you or root may own it)");
    assert_int_equal(vzcaps_file_trust(501, 0100666, 501, why, sizeof why), -1);
    assert_string_equal(why, "not trusted: writable by others (mode 0666): chmod go-w it");
    assert_int_equal(vzcaps_file_trust(501, 0100664, 501, why, sizeof why), -1);
    assert_string_equal(why, "not trusted: writable by others (mode 0664): chmod go-w it");
}

static void test_launcher_target(void **st)
{
    (void)st;
    char t[256];
    assert_true(vzcaps_launcher_target("/Library/Frameworks/Python.framework/Versions/3.12/bin/python3.12", t, sizeof t));
    assert_string_equal(t, "/Library/Frameworks/Python.framework/Versions/3.12/Resources/Python.app/Contents/MacOS/Python");
    assert_true(vzcaps_launcher_target("/x/bin/python3", t, sizeof t));
    assert_string_equal(t, "/x/Resources/Python.app/Contents/MacOS/Python");
    assert_false(vzcaps_launcher_target("/x/bin/python2.7", t, sizeof t));
    assert_false(vzcaps_launcher_target("/x/libexec/python3.12", t, sizeof t));
    assert_false(vzcaps_launcher_target("python3.12", t, sizeof t));
    assert_false(vzcaps_launcher_target("/x/bin/llama-server", t, sizeof t));
    char tiny[20];
    assert_false(vzcaps_launcher_target("/x/bin/python3", tiny, sizeof tiny)); /* never a cut path */
}

static void test_rosetta_names_the_way_out(void **st)
{
    (void)st;
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    const char *env[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", NULL};
    struct vzcaps_inputs in = {.envp = env, .exe = "x",
                               .host = {.brand = "VirtualApple @ 2.50GHz processor", .brand_origin = "machdep.cpu.brand_string", .physical_memory = 0, .translated = 1}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_false(R.profile.invalid); /* valid, but this process cannot apply it */
    assert_true(any_note_contains(&R.profile, "runs under Rosetta"));
    assert_true(any_note_contains(&R.profile, "start it with vzcaps run"));
    assert_true(any_note_contains(&R.profile, "VZCAPS_HOST_CHIP"));
    in.host.translated = 0; /* the same brand natively: the ordinary message */
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_false(any_note_contains(&R.profile, "Rosetta"));
    const char *given[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_HOST_CHIP=Apple M1", NULL};
    in.envp = given, in.host.translated = 1; /* what vzcaps run passes: enabled under Rosetta */
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED);
    assert_int_equal(R.profile.apple_family_max, 1007);
}

UNIT_TESTS(core_hardening_tests,
           cmocka_unit_test(test_escape),
           cmocka_unit_test(test_clip_and_append_say_when_they_cut),
           cmocka_unit_test(test_environment_scan),
           cmocka_unit_test(test_file_trust),
           cmocka_unit_test(test_launcher_target),
           cmocka_unit_test(test_rosetta_names_the_way_out));
