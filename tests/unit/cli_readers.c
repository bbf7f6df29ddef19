/* build/test_cli_units: the readers and digests the command's checks rest on: SHA-256, SHA-1,
 * the JSON reader, code resources (rules and XML), Mach-O classification and the inherit-safety
 * verdict from an image's slices and SIP. Bytes in memory only. */
#define _POSIX_C_SOURCE 200809L
#include "cli_tests.h"

static void test_sha256(void **st)
{
    (void)st;
    char hex[65];
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    static char million[1000000];
    memset(million, 'a', sizeof million);
    sha256_hex(million, sizeof million, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_json_reader(void **st)
{
    (void)st;
    char err[200];
    const char doc[] = " {\"a\": [1, -2.5e3, \"x\\u00e9\\ud83d\\ude00\\n\", true, false, null, {}], \"b\": {\"c\": 0}} ";
    struct jv *v = jv_parse(doc, strlen(doc), err, sizeof err);
    assert_non_null(v);
    const struct jv *a = jv_get(v, "a");
    assert_int_equal(a->count, 7);
    assert_true(a->child->number == 1 && a->child->next->number == -2500);
    assert_string_equal(a->child->next->next->string, "x\xc3\xa9\xf0\x9f\x98\x80\n");
    assert_int_equal(jv_get(jv_get(v, "b"), "c")->type, JV_NUMBER);
    assert_null(jv_get(v, "missing"));
    jv_free(v);
    struct { const char *text, *err; } bad[] = {
        {"", "line 1, column 1: unexpected end of input"},
        {"[1,]", "line 1, column 4: unexpected character"},
        {"{\"a\" 1}", "line 1, column 6: expected ':'"},
        {"[01]", "line 1, column 3: expected ',' or ']'"},
        {"\"\\ud800\"", "line 1, column 8: unpaired surrogate"},
        /* a NUL would end the C string and silently drop what follows */
        {"\"ab\\u0000cd\"", "line 1, column 4: \\u0000 (a NUL character) in a string: not accepted"},
        {"{\"k\\u0000\": 1}", "line 1, column 4: \\u0000 (a NUL character) in a string: not accepted"},
        {"[1] x", "line 1, column 5: trailing characters after the JSON value"},
        {"\n\n  [tru]", "line 3, column 4: unexpected character"},
        {"\"a\tb\"", "line 1, column 3: control character in string"},
        {"[1.]", "line 1, column 4: bad number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(jv_parse(bad[i].text, strlen(bad[i].text), err, sizeof err));
        assert_string_equal(err, bad[i].err);
    }
    char deep[200];
    memset(deep, '[', sizeof deep);
    assert_null(jv_parse(deep, sizeof deep, err, sizeof err));
    assert_true(strstr(err, "nested too deeply") != NULL);
}

static void test_sha1(void **st)
{
    (void)st;
    struct { const char *in; const char *hex; } v[] = {
        {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct sha1 s;
        uint8_t d[20];
        char hex[41];
        sha1_init(&s);
        for (const char *c = v[i].in; *c; c++) /* byte by byte: the buffering is exercised */
            sha1_update(&s, c, 1);
        sha1_final(&s, d);
        for (int k = 0; k < 20; k++)
            snprintf(hex + 2 * k, 3, "%02x", d[k]);
        assert_string_equal(hex, v[i].hex);
    }
}

static void test_coderesources_rules(void **st)
{
    (void)st;
    /* rules2 of a bundle with Resources/: the highest weight wins */
    assert_int_equal(cr_match(2, true, "Info.plist"), CR_MATCHED | CR_OMIT);
    assert_int_equal(cr_match(2, true, "PkgInfo"), CR_MATCHED | CR_OMIT);
    assert_int_equal(cr_match(2, true, "MacOS/helper"), CR_MATCHED | CR_NESTED);
    assert_int_equal(cr_match(2, true, "Frameworks/A.framework"), CR_MATCHED | CR_NESTED);
    assert_int_equal(cr_match(2, true, "Library/LoginItems/X.app"), CR_MATCHED | CR_NESTED);
    assert_int_equal(cr_match(2, true, "loose"), CR_MATCHED | CR_NESTED); /* a file directly in Contents */
    assert_int_equal(cr_match(2, true, "version.plist"), CR_MATCHED);
    assert_int_equal(cr_match(2, true, "Resources/a.txt"), CR_MATCHED);
    assert_int_equal(cr_match(2, true, "Resources/en.lproj/a.strings"), CR_MATCHED | CR_OPTIONAL);
    assert_int_equal(cr_match(2, true, "Resources/Base.lproj/a.nib"), CR_MATCHED);
    assert_int_equal(cr_match(2, true, "Resources/en.lproj/locversion.plist"), CR_MATCHED | CR_OMIT);
    assert_int_equal(cr_match(2, true, "Frameworks/A.dSYM/Contents/x"), CR_MATCHED); /* dSYM 11 beats nested 10 */
    assert_int_equal(cr_match(2, true, "Resources/x/.DS_Store"), CR_MATCHED | CR_OMIT);
    assert_int_equal(cr_match(2, true, "lib/x.so"), CR_MATCHED);
    /* rules (legacy) with Resources/: only Resources/ and version.plist */
    assert_int_equal(cr_match(1, true, "MacOS/helper"), 0);
    assert_int_equal(cr_match(1, true, "Resources/a.txt"), CR_MATCHED);
    assert_int_equal(cr_match(1, true, "version.plist"), CR_MATCHED);
    /* without Resources/: everything, no nested locations */
    assert_int_equal(cr_match(2, false, "MacOS/helper"), CR_MATCHED);
    assert_int_equal(cr_match(1, false, "anything"), CR_MATCHED);
    assert_int_equal(cr_match(2, false, "en.lproj/a"), CR_MATCHED | CR_OPTIONAL);
}

static void test_coderesources_xml(void **st)
{
    (void)st;
    uint8_t h1[20] = {1}, h2[32] = {2}, cd[20] = {0xab};
    struct cr_seal a, b;
    cr_init(&a, true);
    cr_init(&b, true);
    /* the same entries in another order give the same bytes */
    cr_add_file(&a, "Resources/b&<x>.txt", h1, h2, NULL);
    cr_add_link(&a, "Resources/link", "b&<x>.txt");
    cr_add_bundle(&a, "Frameworks/A.framework", cd);
    cr_add_file(&a, "Info.plist", h1, h2, NULL); /* omitted by the rules */
    cr_add_file(&b, "Info.plist", h1, h2, NULL);
    cr_add_bundle(&b, "Frameworks/A.framework", cd);
    cr_add_link(&b, "Resources/link", "b&<x>.txt");
    cr_add_file(&b, "Resources/b&<x>.txt", h1, h2, NULL);
    size_t la, lb;
    char *xa = cr_xml(&a, &la), *xb = cr_xml(&b, &lb);
    assert_non_null(xa);
    assert_int_equal(la, lb);
    assert_memory_equal(xa, xb, la);
    assert_non_null(strstr(xa, "<key>Resources/b&amp;&lt;x&gt;.txt</key>"));
    assert_non_null(strstr(xa, "<string>cdhash H\"ab00000000000000000000000000000000000000\"</string>"));
    assert_null(strstr(xa, "<key>Info.plist</key>"));
    assert_non_null(strstr(xa, "<key>^Resources/.*\\.lproj/</key>"));
    free(xa);
    free(xb);
    cr_free(&a);
    cr_free(&b);
    assert_true(cr_name_ok("Resources/é.txt"));
    assert_false(cr_name_ok("a\nb"));
    assert_false(cr_name_ok("a\x7f"));
    assert_false(cr_name_ok("\xc0\xaf")); /* overlong */
    assert_false(cr_name_ok("\xe2\x82"));  /* cut short */
    assert_false(cr_name_ok("\xff"));
}

static void test_macho_classify(void **st)
{
    (void)st;
    char why[300];
    uint8_t java[64] = {0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x37};
    assert_int_equal(macho_classify(java, sizeof java, why, sizeof why), MACHO_KIND_JAVA);
    uint8_t text[16] = "hello, world....";
    assert_int_equal(macho_classify(text, sizeof text, why, sizeof why), MACHO_KIND_NONE);
    uint8_t thin32[32] = {0xce, 0xfa, 0xed, 0xfe};
    assert_int_equal(macho_classify(thin32, sizeof thin32, why, sizeof why), MACHO_KIND_OTHER_MACHO);
    /* a universal file of two static archives */
    static uint8_t ar[8192];
    memset(ar, 0, sizeof ar);
    const uint8_t hdr[] = {0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2,
                           1, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 16, 0, 0, 0, 12,
                           1, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0x18, 0, 0, 0, 0, 16, 0, 0, 0, 12};
    memcpy(ar, hdr, sizeof hdr);
    memcpy(ar + 0x1000, "!<arch>\n", 8);
    memcpy(ar + 0x1800, "!<arch>\n", 8);
    assert_int_equal(macho_classify(ar, sizeof ar, why, sizeof why), MACHO_KIND_ARCHIVE);
    /* a slice past the end is a damaged file, with a reason */
    ar[40] = 0x7f; /* the second slice's size */
    assert_int_equal(macho_classify(ar, sizeof ar, why, sizeof why), MACHO_KIND_BROKEN);
    assert_non_null(strstr(why, "truncated"));
    /* an object file */
    uint8_t obj[64] = {0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0};
    assert_int_equal(macho_classify(obj, sizeof obj, why, sizeof why), MACHO_KIND_OBJECT);
    assert_int_equal(macho_classify(obj, 4, why, sizeof why), MACHO_KIND_NONE);
}

static void test_inherit_safety(void **state)
{
    (void)state;
    char line[600];
    assert_int_equal(inherit_safety(false, 1, VZCAPS_SIP_DISABLED, "arm64 x86_64", line, sizeof line), INHERIT_NOT_MACOS);
    assert_int_equal(inherit_safety(true, 1, VZCAPS_SIP_ENABLED, NULL, line, sizeof line), INHERIT_UNSAFE);
    assert_string_equal(line, "unsafe: no library found");
    /* Apple silicon, the release's slices: the SIP state decides */
    assert_int_equal(inherit_safety(true, 1, VZCAPS_SIP_ENABLED, "arm64 x86_64", line, sizeof line), INHERIT_LIMITED);
    assert_non_null(strstr(line, "limited: SIP is enabled"));
    assert_int_equal(inherit_safety(true, 1, VZCAPS_SIP_DISABLED, "arm64 x86_64", line, sizeof line), INHERIT_UNSAFE);
    assert_non_null(strstr(line, "unsafe: SIP is disabled, so arm64e system programs"));
    assert_int_equal(inherit_safety(true, -1, VZCAPS_SIP_UNKNOWN, "arm64 x86_64", line, sizeof line), INHERIT_UNSAFE);
    assert_non_null(strstr(line, "SIP is in an unknown state"));
    assert_non_null(strstr(line, "shims start only the programs named"));
    /* an arm64e slice is what arm64 processes would load: never safe */
    assert_int_equal(inherit_safety(true, 1, VZCAPS_SIP_ENABLED, "arm64 arm64e x86_64", line, sizeof line), INHERIT_UNSAFE);
    assert_non_null(strstr(line, "arm64e slice, which dyld loads in place of arm64"));
    /* slices are words: "arm64e" alone is no arm64 slice */
    assert_int_equal(inherit_safety(true, 1, VZCAPS_SIP_ENABLED, "arm64e x86_64", line, sizeof line), INHERIT_UNSAFE);
    assert_non_null(strstr(line, "no arm64 slice"));
    /* Intel: no arm64e programs at all */
    assert_int_equal(inherit_safety(true, 0, VZCAPS_SIP_DISABLED, "arm64 x86_64", line, sizeof line), INHERIT_SAFE);
    assert_int_equal(inherit_safety(true, 0, VZCAPS_SIP_DISABLED, "arm64", line, sizeof line), INHERIT_UNSAFE);
    assert_non_null(strstr(line, "no x86_64 slice"));
    assert_string_equal(inherit_safety_name(INHERIT_LIMITED), "limited");
    /* a short buffer is cut, never overrun */
    char tiny[8];
    assert_int_equal(inherit_safety(true, 1, VZCAPS_SIP_DISABLED, "arm64", tiny, sizeof tiny), INHERIT_UNSAFE);
    assert_string_equal(tiny, "unsafe:");
}

UNIT_TESTS(cli_readers_tests,
           cmocka_unit_test(test_sha256),
           cmocka_unit_test(test_json_reader),
           cmocka_unit_test(test_sha1),
           cmocka_unit_test(test_coderesources_rules),
           cmocka_unit_test(test_coderesources_xml),
           cmocka_unit_test(test_macho_classify),
           cmocka_unit_test(test_inherit_safety));
