#define _POSIX_C_SOURCE 200809L
/* Unit tests of the command's portable decisions: verify's CPU references, tolerance rule,
 * verdicts, plans and cache keys; probe's comparison and llama.cpp gates; SHA-256; JSON. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cli/cli.h"
#include "../../src/cli/commands.h"
#include "../../src/data/jsonread.h"
#include "../../src/data/usagelog.h"
#include "../../src/common/sha256.h"
#include "../../src/device/verify_core.h"
#include "../../src/macho/sha1.h"
#include "../../src/macho/coderesources.h"
#include "../../src/macho/inheritsafe.h"
#include "../../src/macho/macho.h"
#include "../../src/common/plist.h"

static void test_bf16_and_half_rounding(void **st)
{
    (void)st;
    assert_int_equal(vz_float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(vz_float_to_bf16(-2.5f), 0xc020);
    assert_int_equal(vz_float_to_bf16(1.00390625f), 0x3f80);  /* 1 + 2^-8: tie, to even */
    assert_int_equal(vz_float_to_bf16(1.01171875f), 0x3f82);  /* 1 + 3*2^-8: tie, to even (up) */
    assert_int_equal(vz_float_to_bf16(1.0078125f), 0x3f81);   /* exact */
    assert_true(vz_bf16_to_float(0x3f81) == 1.0078125f);
    assert_int_equal(vz_float_to_half(1.0f), 0x3c00);
    assert_int_equal(vz_float_to_half(65504.0f), 0x7bff);
    assert_int_equal(vz_float_to_half(65520.0f), 0x7c00);     /* rounds to infinity */
    assert_int_equal(vz_float_to_half(ldexpf(1, -24)), 0x0001);
    assert_int_equal(vz_float_to_half(0.1f), 0x2e66);
    assert_int_equal(vz_float_to_half(1.00048828125f), 0x3c00); /* 1 + 2^-11: tie, to even */
    assert_int_equal(vz_float_to_half(1.00146484375f), 0x3c02); /* 1 + 3*2^-11: tie, up */
    assert_int_equal(vz_float_to_half(-0.0f), 0x8000);
    assert_true(vz_half_to_float(0x3c00) == 1.0f && vz_half_to_float(0x0001) == ldexpf(1, -24));
    assert_true(vz_half_to_float(0xc000) == -2.0f && isinf(vz_half_to_float(0x7c00)));
    for (int i = -64; i < 64; i++) /* every multiple of 1/16 in [-4, 4) survives both */
        assert_true(vz_half_to_float(vz_float_to_half(i / 16.0f)) == i / 16.0f &&
                    vz_bf16_to_float(vz_float_to_bf16(i / 16.0f)) == i / 16.0f);
}

static void test_inputs(void **st)
{
    (void)st;
    float a[500], b[500];
    vz_inputs(5, a, 500, 16, 2);
    vz_inputs(5, b, 500, 16, 2);
    assert_memory_equal(a, b, sizeof a);
    int distinct = 0;
    for (int i = 0; i < 500; i++) {
        assert_true(a[i] >= -2 && a[i] < 2 && a[i] * 16 == floorf(a[i] * 16));
        distinct += i && a[i] != a[i - 1];
    }
    assert_true(distinct > 400);
    vz_inputs(6, b, 500, 4, 1);
    for (int i = 0; i < 500; i++)
        assert_true(b[i] >= -1 && b[i] < 1 && b[i] * 4 == floorf(b[i] * 4));
}

static void test_ref_simd(void **st)
{
    (void)st;
    float x[34], sum[34], max[34], down[34], prefix[34];
    unsigned char def[34];
    for (int i = 0; i < 34; i++)
        x[i] = (float)(i % 5) - 2; /* -2 -1 0 1 2 -2 ... */
    x[7] = 9;
    ref_simd(x, 34, sum, max, down, prefix, def);
    /* group 0 = x[0..31]: six cycles summing to 0, then x[30], x[31] = -2, -1, and x[7] 0 -> 9: 6 */
    assert_true(sum[0] == 6 && sum[31] == 6 && max[0] == 9 && max[31] == 9);
    assert_true(prefix[0] == -2 && prefix[1] == -3 && prefix[2] == -3 && prefix[31] == 6);
    assert_true(down[0] == -1 && def[0] && !def[31] && def[30] && down[30] == -1);
    /* group 1 = x[32], x[33] = 0, 1: a partial SIMD-group */
    assert_true(sum[32] == 1 && sum[33] == 1 && max[32] == 1 && prefix[32] == 0 && prefix[33] == 1);
    assert_true(def[32] && down[32] == 1 && !def[33]);
}

static void test_ref_matmul_and_padding(void **st)
{
    (void)st;
    const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12}; /* 2x3 * 3x2 */
    float c[4], want[] = {58, 64, 139, 154};
    ref_matmul(a, b, 2, 3, 2, c);
    assert_memory_equal(c, want, sizeof c);
    float p[8 * 8];
    pad_matrix(a, 2, 3, p, 8, 8);
    assert_true(p[0] == 1 && p[2] == 3 && p[3] == 0 && p[8] == 4 && p[10] == 6 && p[16] == 0 && p[63] == 0);
    assert_int_equal(round_up8(13), 16);
    assert_int_equal(round_up8(8), 8);
    assert_int_equal(round_up8(1), 8);
}

static void test_ref_bfloat_threadgroup_nocopy(void **st)
{
    (void)st;
    const float a[] = {1.5f, -2.0f, 0.0625f}, b[] = {1.25f, 3.0f, 1.0f}, c[] = {0.00390625f, 1.0f, -1.0f};
    float conv[3], fma[3];
    ref_bfloat(a, b, c, 3, conv, fma);
    assert_true(conv[0] == 1.5f && conv[1] == -2.0f && conv[2] == 0.0625f);
    /* 1.875 + 2^-8 = 1.11100001b needs 8 fraction bits, bfloat has 7: a tie, to even: 1.875 */
    assert_true(fma[0] == 1.875f);
    assert_true(fma[1] == -5.0f && fma[2] == -0.9375f);
    uint32_t out[2];
    ref_threadgroup(4, 2, out);
    assert_int_equal(out[0], 0x449134a4u); /* words 1 and 3, by hand (Python) */
    assert_int_equal(out[1], 0x3c6f13a4u); /* words 0 and 2 */
    uint32_t in[3] = {0, 1, 0x55555555u}, o[3];
    ref_nocopy(in, 3, o);
    assert_true(o[0] == 1 && o[1] == 4 && o[2] == 0x00000000u);
}

static void test_tolerance_rule(void **st)
{
    (void)st;
    const float want[] = {1, 100, 0, -4};
    const float good[] = {1.0005f, 100.009f, 0.0009f, -4};
    struct vcheck c = {0};
    vcheck_compare(&c, good, want, 4, 1e-3, 1e-4); /* |err| <= 1e-3 + 1e-4 |ref| */
    assert_int_equal(c.status, VCHECK_PASS);
    assert_int_equal(c.compared, 4);
    assert_true(fabs(c.max_abs - 0.009) < 1e-5);
    assert_true(c.max_rel > 4.9e-4 && c.max_rel < 5.1e-4); /* relative error is taken where the reference is not 0 */
    const float bad[] = {1, 100.2f, 0, NAN};
    struct vcheck d = {0};
    vcheck_compare(&d, bad, want, 4, 1e-3, 1e-4);
    assert_int_equal(d.status, VCHECK_FAIL);
    assert_int_equal(d.bad, 2);
    assert_true(isinf(d.max_abs));
    struct vcheck e = {0};
    uint32_t x[] = {1, 2}, y[] = {1, 3};
    vcheck_compare_u32(&e, x, x, 2);
    assert_int_equal(e.status, VCHECK_PASS);
    vcheck_compare_u32(&e, x, y, 2);
    assert_int_equal(e.status, VCHECK_FAIL); /* once failed, stays failed */
    vcheck_compare_u32(&e, x, x, 2);
    assert_int_equal(e.status, VCHECK_FAIL);
}

static struct vzcaps_config_result R;

static void configure(const char *const *env)
{
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    struct vzcaps_inputs in = {.envp = env, .exe = "vzcaps", .host = {.brand = "Apple M1 (Virtual)", .brand_origin = "test", .physical_memory = 1ull << 34}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
}

static const int STOCK[PROBE_FAMILIES] = {1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0};

static void test_verify_plan(void **st)
{
    (void)st;
    struct vplan p;
    const char *autoenv[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", NULL};
    configure(autoenv);
    verify_plan(&R.profile, STOCK, 32768, &p);
    assert_true(p.simd_reduction && p.simdgroup_mm && p.bfloat && !p.threadgroup);
    const char *six[] = {"VZCAPS_APPLE_FAMILY_MAX=1006", NULL};
    configure(six);
    verify_plan(&R.profile, STOCK, 32768, &p);
    assert_true(!p.simd_reduction && !p.simdgroup_mm && p.bfloat);
    const char *tg[] = {"VZCAPS_APPLE_FAMILY_MAX=1005", "VZCAPS_MAX_THREADGROUP_MEMORY=32768", NULL};
    configure(tg);
    verify_plan(&R.profile, STOCK, 16384, &p);
    assert_true(p.threadgroup && p.threadgroup_bytes == 32768 && !p.bfloat);
    int already[PROBE_FAMILIES];
    memcpy(already, STOCK, sizeof already);
    already[5] = already[6] = 1; /* stock already Apple6 and Apple7 */
    configure(autoenv);
    verify_plan(&R.profile, already, 32768, &p);
    assert_true(!p.simd_reduction && !p.simdgroup_mm && !p.bfloat);
    const char *m3[] = {"VZCAPS_APPLE_FAMILY_MAX=1005", "VZCAPS_EXTRA_FAMILIES=metal3", NULL};
    configure(m3);
    verify_plan(&R.profile, STOCK, 32768, &p);
    assert_true(p.simd_reduction && !p.simdgroup_mm && p.bfloat);
}

static void test_verdicts_cache_and_roundtrip(void **st)
{
    (void)st;
    static struct vresult r, back;
    memset(&r, 0, sizeof r);
    snprintf(r.device, sizeof r.device, "Apple Paravirtual device");
    r.n = 3;
    snprintf(r.checks[0].name, 40, "simd_reduce_32");
    r.checks[0].status = VCHECK_PASS, r.checks[0].unlocked = true, r.checks[0].compared = 128;
    snprintf(r.checks[1].name, 40, "bfloat");
    r.checks[1].status = VCHECK_SKIP, snprintf(r.checks[1].reason, 240, "not unlocked by this profile");
    snprintf(r.checks[2].name, 40, "nocopy_mmap");
    r.checks[2].status = VCHECK_FAIL, r.checks[2].bad = 4, r.checks[2].max_abs = 7;
    assert_int_equal(verify_exit_status(&r), 0); /* the failure is not an unlocked path */
    r.checks[2].unlocked = true;
    assert_int_equal(verify_exit_status(&r), 1);
    r.checks[2].unlocked = false;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct json j;
    json_begin(&j, f);
    verify_render_json(&r, &j);
    json_finish(&j);
    fclose(f);
    assert_int_equal(vresult_parse(text, &back), 0);
    free(text);
    assert_int_equal(back.n, 3);
    assert_string_equal(back.checks[1].reason, "not unlocked by this profile");
    assert_int_equal(back.checks[2].status, VCHECK_FAIL);
    assert_true(back.checks[0].unlocked && back.checks[0].compared == 128 && back.checks[2].max_abs == 7);
    /* a NoCopy failure that also happens stock is the guest's */
    static struct vresult stock;
    memset(&stock, 0, sizeof stock);
    stock.n = 1;
    snprintf(stock.checks[0].name, 40, "nocopy_mmap");
    stock.checks[0].status = VCHECK_FAIL;
    verify_merge_stock_nocopy(&back, &stock);
    assert_true(back.nocopy_stock_failed && verify_exit_status(&back) == 0);
    stock.checks[0].status = VCHECK_PASS;
    back.nocopy_stock_failed = false;
    verify_merge_stock_nocopy(&back, &stock);
    assert_true(!back.nocopy_stock_failed && verify_exit_status(&back) == 1);

    char k1[65], k2[65], k3[65], k4[65];
    const char *a[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_EXTRA_FAMILIES=metal3,metal4", NULL};
    const char *b[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_EXTRA_FAMILIES=metal4,metal3", NULL};
    configure(a);
    verify_cache_key("Apple M1", "24B83", "abc", &R.profile, k1);
    verify_cache_key("Apple M1", "24B83", "abc", &R.profile, k4);
    assert_string_equal(k1, k4);
    configure(b);
    verify_cache_key("Apple M1", "24B83", "abc", &R.profile, k2);
    assert_string_equal(k1, k2); /* order of extra families does not matter */
    verify_cache_key("Apple M1", "24B84", "abc", &R.profile, k3);
    assert_string_not_equal(k1, k3);
    verify_cache_key("Apple M2", "24B83", "abc", &R.profile, k3);
    assert_string_not_equal(k1, k3);
    verify_cache_key("Apple M1", "24B83", "abd", &R.profile, k3);
    assert_string_not_equal(k1, k3);
    const char *c[] = {"VZCAPS_APPLE_FAMILY_MAX=1006", NULL};
    configure(c);
    verify_cache_key("Apple M1", "24B83", "abc", &R.profile, k3);
    assert_string_not_equal(k1, k3);
    assert_int_equal(strlen(k1), 64);
}

static void test_probe_gates_and_unexpected(void **st)
{
    (void)st;
    struct probe_answers s = {.ok = true, .threadgroup = 32768, .working_set = 5010800640, .max_buffer = 1 << 30, .unified = 1};
    snprintf(s.device, sizeof s.device, "Apple Paravirtual device");
    memcpy(s.family, STOCK, sizeof s.family);
    struct probe_answers u = s;
    for (int i = 5; i <= 6; i++)
        u.family[i] = 1; /* Apple6, Apple7 */
    struct llama_gates g;
    llama_gates_from(&s, &g);
    assert_true(!g.simdgroup_reduction && !g.simdgroup_mm && !g.bfloat && !g.tensor);
    llama_gates_from(&u, &g);
    assert_true(g.simdgroup_reduction && g.simdgroup_mm && g.bfloat && !g.tensor);
    const char *autoenv[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", NULL};
    configure(autoenv); /* M1: Apple7 */
    char out[8][200];
    assert_int_equal(probe_unexpected(&s, &u, &R.profile, out, 8), 0);
    u.family[7] = 1; /* Apple8: more than asked */
    u.max_buffer = 1;
    assert_int_equal(probe_unexpected(&s, &u, &R.profile, out, 8), 2);
    assert_string_equal(out[0], "supportsFamily(Apple8 1008): yes, but the profile implies no");
    assert_true(strstr(out[1], "maxBufferLength changed") != NULL);
    /* tensor: Metal4 and an M5-class name */
    struct probe_answers t = s;
    t.family[18] = 1;
    snprintf(t.device, sizeof t.device, "Apple M5 Max");
    llama_gates_from(&t, &g);
    assert_true(g.tensor);
    /* the child's JSON, parsed back */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    probe_answers_json(&u, f);
    fclose(f);
    struct probe_answers back;
    assert_int_equal(probe_answers_parse(text, &back), 0);
    free(text);
    assert_memory_equal(back.family, u.family, sizeof u.family);
    assert_true(back.threadgroup == 32768 && back.max_buffer == 1 && back.unified == 1);
    assert_int_equal(probe_answers_parse("{\"error\":\"no device\"}", &back), -1);
    assert_string_equal(back.error, "no device");
    assert_int_equal(probe_answers_parse("nonsense", &back), -1);
}

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

static void test_run_passes_the_native_chip_to_x86_64_targets(void **st)
{
    (void)st;
    struct vzcaps_chip m2, unknown;
    vzcaps_chip_from_brand("Apple M2 Pro", &m2);
    vzcaps_chip_from_brand("VirtualApple @ 2.50GHz processor", &unknown);
    assert_string_equal(run_chip_to_pass("x86_64", &m2, false), "Apple M2 Pro");
    assert_null(run_chip_to_pass("arm64", &m2, false));     /* native: it reads the chip itself */
    assert_null(run_chip_to_pass("arm64e", &m2, false));
    assert_null(run_chip_to_pass("x86_64", &m2, true));     /* a chip given wins */
    assert_null(run_chip_to_pass("x86_64", &unknown, false)); /* this command is translated too */
    assert_null(run_chip_to_pass("", &m2, false));          /* not Mach-O: nothing known */
}

static void test_verify_one_child_per_check(void **st)
{
    (void)st;
    static struct vresult r;
    memset(&r, 0, sizeof r);
    const struct vgroup *mm = verify_group_find("mm"), *nocopy = verify_group_find("nocopy");
    assert_non_null(mm);
    assert_non_null(nocopy);
    assert_null(verify_group_find("bogus"));
    /* a child killed by SIGSEGV (wait status: the signal number) fails only its own check */
    verify_child_failed(&r, mm, true, SIGSEGV);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.checks[0].name, "simdgroup_mm");
    assert_int_equal(r.checks[0].status, VCHECK_FAIL);
    assert_true(r.checks[0].unlocked);
    assert_non_null(strstr(r.checks[0].reason, "killed by signal 11"));
    assert_int_equal(verify_exit_status(&r), 1);
    verify_child_failed(&r, nocopy, false, 3 << 8); /* exited with status 3 */
    assert_non_null(strstr(r.checks[1].reason, "exited with status 3 without results"));
    struct vplan plan = {.simd_reduction = true};
    assert_true(verify_group_planned(&plan, verify_group_find("simd")));
    assert_false(verify_group_planned(&plan, mm));
    assert_true(verify_group_planned(&plan, nocopy)); /* always */
    char why[200];
    assert_false(verify_bfloat_supported("13.6.1", why, sizeof why));
    assert_non_null(strstr(why, "macOS 14"));
    assert_true(verify_bfloat_supported("14.0", why, sizeof why));
    assert_true(verify_bfloat_supported("26.1", why, sizeof why));
    assert_true(verify_bfloat_supported("", why, sizeof why)); /* unknown: try it */
    static struct vresult more;
    memset(&more, 0, sizeof more);
    snprintf(more.device, sizeof more.device, "Apple Paravirtual device");
    verify_group_skipped(&more, verify_group_find("bfloat"), "the bfloat kernel needs Metal Shading Language 3.1");
    verify_append(&r, &more);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.checks[2].status, VCHECK_SKIP);
    assert_string_equal(r.device, "Apple Paravirtual device");
}

static void test_bundle_verdicts(void **st)
{
    (void)st;
    char why[600];
    const char *unlocked7 = "{\"stock\":{},\"unlocked\":{\"families\":{\"1005\":true,\"1006\":true,\"1007\":true,\"1008\":false}},"
                            "\"changed\":[1006,1007],\"unexpected\":[]}";
    const char *pass = "{\"ok\":true,\"checks\":[{\"name\":\"simd_reduce_32\",\"result\":\"pass\",\"unlocked\":true},"
                       "{\"name\":\"nocopy_mmap\",\"result\":\"fail\",\"unlocked\":false}]}";
    const char *fail = "{\"ok\":false,\"checks\":[{\"name\":\"simd_reduce_32\",\"result\":\"pass\",\"unlocked\":true},"
                       "{\"name\":\"simdgroup_mm\",\"result\":\"fail\",\"unlocked\":true}]}";
    assert_string_equal(bundle_verdict(false, unlocked7, pass, why, sizeof why), "NOT ON MACOS");
    assert_string_equal(bundle_verdict(true, unlocked7, pass, why, sizeof why), "WORKS");
    assert_string_equal(why, "the unlocked probe reported Apple7, and every unlocked check computed correct results");
    assert_string_equal(bundle_verdict(true, unlocked7, fail, why, sizeof why), "PARTIAL");
    assert_non_null(strstr(why, "first: simdgroup_mm"));
    assert_string_equal(bundle_verdict(true, unlocked7, "null", why, sizeof why), "PARTIAL");
    assert_string_equal(bundle_verdict(true, unlocked7, NULL, why, sizeof why), "PARTIAL");
    const char *nothing = "{\"unlocked\":{\"families\":{\"1005\":true}},\"changed\":[],\"unexpected\":[]}";
    assert_string_equal(bundle_verdict(true, nothing, pass, why, sizeof why), "DOES NOT WORK");
    assert_non_null(strstr(why, "did not take effect"));
    const char *odd = "{\"unlocked\":{\"families\":{\"1007\":true}},\"changed\":[1007],\"unexpected\":[\"maxBufferLength changed\"]}";
    assert_string_equal(bundle_verdict(true, odd, pass, why, sizeof why), "DOES NOT WORK");
    assert_non_null(strstr(why, "maxBufferLength changed"));
    assert_string_equal(bundle_verdict(true, "null", pass, why, sizeof why), "CANNOT TELL");
    assert_string_equal(bundle_verdict(true, "not json", pass, why, sizeof why), "CANNOT TELL");
    assert_string_equal(bundle_verdict(true, NULL, NULL, why, sizeof why), "CANNOT TELL");
}

/* Issue 39 item 7: the macOS 14 guest hazard (newBufferWithBytesNoCopy over a file-backed mmap
 * returns stale data) is named on a macOS 14 guest only, from the verify verdict when there is
 * one, with the check and both workarounds; a passing nocopy_mmap check says nothing. */
static struct machine mac_machine(const char *version, int guest)
{
    struct machine m;
    memset(&m, 0, sizeof m);
    snprintf(m.os, sizeof m.os, "macOS");
    snprintf(m.os_version, sizeof m.os_version, "%s", version);
    m.guest = guest;
    return m;
}

static void test_nocopy_guest_hazard(void **st)
{
    (void)st;
    char out[900];
    struct machine m14 = mac_machine("14.6.1", 1);
    assert_true(nocopy_guest_hazard(&m14, true, NULL, "", out, sizeof out));
    assert_non_null(strstr(out, "macOS 14.6.1 guest: newBufferWithBytesNoCopy over a file-backed mmap is known to return stale data"));
    assert_non_null(strstr(out, "check this guest with vzcaps verify (its nocopy_mmap check)"));
    assert_non_null(strstr(out, "--no-mmap") && strstr(out, "GGML_METAL_SHARED_BUFFERS_DISABLE=1 for ggml clients"));
    struct machine m14b = mac_machine("14", 1), m14c = mac_machine("14.0", 1);
    assert_true(nocopy_guest_hazard(&m14b, true, NULL, "", out, sizeof out));
    assert_true(nocopy_guest_hazard(&m14c, true, NULL, "", out, sizeof out));
    /* not a macOS 14 guest: nothing */
    const char *others[] = {"15.1", "26.0", "13.6", "4.14", "140.1", "14a", "", "1.4", "014x"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        struct machine m = mac_machine(others[i], 1);
        assert_false(nocopy_guest_hazard(&m, true, NULL, "", out, sizeof out));
        assert_string_equal(out, "");
    }
    struct machine host = mac_machine("14.6", 0), unknown = mac_machine("14.6", -1);
    assert_false(nocopy_guest_hazard(&host, true, NULL, "", out, sizeof out));
    assert_false(nocopy_guest_hazard(&unknown, true, NULL, "", out, sizeof out));
    assert_false(nocopy_guest_hazard(&m14, false, NULL, "", out, sizeof out)); /* not a Mac (the rig's Linux) */
    /* with a verdict: passing says nothing; failing stock is the guest's fault; failing with the library only */
    static struct vresult v;
    assert_int_equal(vresult_parse("{\"nocopy_guest_fault\":false,\"checks\":[{\"name\":\"nocopy_mmap\",\"result\":\"pass\","
                                   "\"unlocked\":false}]}", &v), 0);
    assert_false(nocopy_guest_hazard(&m14, true, &v, "the verdict cached in X", out, sizeof out));
    assert_int_equal(vresult_parse("{\"nocopy_guest_fault\":true,\"checks\":[{\"name\":\"nocopy_mmap\",\"result\":\"fail\","
                                   "\"unlocked\":false}]}", &v), 0);
    assert_true(nocopy_guest_hazard(&m14, true, &v, "the verdict cached in X", out, sizeof out));
    assert_non_null(strstr(out, "vzcaps verify found newBufferWithBytesNoCopy over a file-backed mmap returning stale data here, "
                                "stock too (nocopy_mmap, the verdict cached in X)"));
    assert_non_null(strstr(out, "--no-mmap") && strstr(out, "GGML_METAL_SHARED_BUFFERS_DISABLE=1"));
    assert_int_equal(vresult_parse("{\"nocopy_guest_fault\":false,\"checks\":[{\"name\":\"nocopy_mmap\",\"result\":\"fail\","
                                   "\"unlocked\":true}]}", &v), 0);
    assert_true(nocopy_guest_hazard(&m14, true, &v, "S", out, sizeof out));
    assert_non_null(strstr(out, "returning wrong data with the library (nocopy_mmap, S)"));
    assert_non_null(strstr(out, "run --verify refuses to start it") && strstr(out, "--no-mmap"));
    /* a verdict without the check, or with it skipped: as unchecked */
    assert_int_equal(vresult_parse("{\"checks\":[{\"name\":\"nocopy_mmap\",\"result\":\"skipped\"}]}", &v), 0);
    assert_true(nocopy_guest_hazard(&m14, true, &v, "S", out, sizeof out));
    assert_non_null(strstr(out, "is known to return stale data"));
    assert_int_equal(vresult_parse("{\"checks\":[]}", &v), 0);
    assert_true(nocopy_guest_hazard(&m14, true, &v, "S", out, sizeof out));
    assert_non_null(strstr(out, "is known to return stale data"));
    /* a short buffer gets a cut line, never an overrun */
    char small[16];
    assert_true(nocopy_guest_hazard(&m14, true, NULL, "", small, sizeof small));
    assert_int_equal(strlen(small), sizeof small - 1);
    /* the bundle's summary: from its own verify.json */
    assert_true(bundle_guest_hazard(&m14, true, "{\"nocopy_guest_fault\":true,\"checks\":[{\"name\":\"nocopy_mmap\","
                                               "\"result\":\"fail\",\"unlocked\":false}]}", out, sizeof out));
    assert_non_null(strstr(out, "stock too (nocopy_mmap, verify.json in this bundle)"));
    assert_true(bundle_guest_hazard(&m14, true, "null", out, sizeof out)); /* verify did not run */
    assert_non_null(strstr(out, "check this guest with vzcaps verify"));
    assert_true(bundle_guest_hazard(&m14, true, NULL, out, sizeof out));
    assert_false(bundle_guest_hazard(&m14, true, "{\"checks\":[{\"name\":\"nocopy_mmap\",\"result\":\"pass\"}]}", out,
                                     sizeof out));
    struct machine m15 = mac_machine("15.1", 1);
    assert_false(bundle_guest_hazard(&m15, true, NULL, out, sizeof out));
}

/* The summary's device line: MTLDevice's name and architecture.name from probe --json, null and
 * absent ones said so (issue 26 item 8). */
static void test_probe_device_describe(void **st)
{
    (void)st;
    char out[400];
    probe_device_describe("{\"device\":{\"name\":\"Apple Paravirtual device\",\"architecture\":{\"name\":\"applegpu_g13g\"}}}", out,
                          sizeof out);
    assert_string_equal(out, "Apple Paravirtual device, architecture applegpu_g13g");
    probe_device_describe("{\"device\":{\"name\":\"Apple Paravirtual device\",\"architecture\":{\"name\":null}}}", out, sizeof out);
    assert_string_equal(out, "Apple Paravirtual device, architecture not reported");
    probe_device_describe("{\"device\":{\"name\":\"a\\nb\"}}", out, sizeof out); /* escaped, never a raw line break */
    assert_string_equal(out, "a\\x0ab, architecture not reported");
    const char *none[] = {"null", "not json", "{\"device\":\"old string form\"}", ""};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        probe_device_describe(none[i], out, sizeof out);
        assert_string_equal(out, "not reported (no probe result with a device name)");
    }
    probe_device_describe(NULL, out, sizeof out);
    assert_string_equal(out, "not reported (no probe result with a device name)");
}

/* The command table is complete for help and the completions: every command has a group (or
 * is help), a one-line summary and aliases that are not command names; every metavariable
 * is one the completions know. */
static void test_command_table_for_help_and_completions(void **st)
{
    (void)st;
    size_t n = 0;
    for (const struct cmd_spec *c = cli_commands; c->name; c++, n++) {
        assert_true(c->group != GROUP_NONE || strcmp(c->name, "help") == 0);
        assert_non_null(c->summary);
        assert_true(strlen(c->summary) > 10 && strlen(c->summary) <= 80 && !strchr(c->summary, '\n'));
        char word[64];
        for (const char *p = c->aliases ? c->aliases : ""; *p;) {
            size_t k = strcspn(p, " ");
            snprintf(word, sizeof word, "%.*s", (int)k, p);
            assert_null(cli_find_command(word));
            p += k + (p[k] == ' ');
        }
        assert_true(strlen(c->args) < 128); /* the completions read its first operand from 128 bytes */
        if (c->args_mode == ARGS_POSITIONAL) {
            const char *a = c->args + strspn(c->args, "[(");
            snprintf(word, sizeof word, "%.*s", (int)strcspn(a, " ].)"), a);
            assert_int_not_equal(cli_value_kind(word), VALUE_UNKNOWN);
        }
        for (const struct opt_spec *o = c->opts; o->name; o++) {
            assert_int_not_equal(cli_value_kind(o->arg), VALUE_UNKNOWN);
            assert_true(o->def != REQUIRED || o->arg); /* a required flag would mean nothing */
        }
    }
    assert_true(n >= 12);
    assert_int_equal(cli_value_kind("auto|off|FAMILY"), VALUE_WORDS);
    assert_int_equal(cli_value_kind("STOCK.json UNLOCKED.json"), VALUE_FILE);
    assert_int_equal(cli_value_kind("PROFILE"), VALUE_PROFILE);
    assert_int_equal(cli_value_kind("SOMETHING"), VALUE_UNKNOWN);
    assert_int_equal(cli_value_kind(NULL), VALUE_NONE);
    /* suggestions: the closest name, or the commands that do the job */
    assert_string_equal(cli_command_suggestion("chek"), "check");
    assert_string_equal(cli_command_suggestion("status"), "doctor, or host status");
    assert_string_equal(cli_command_suggestion("enable"), "host enable");
    assert_string_equal(cli_command_suggestion("benchmark"), "bench");
    assert_null(cli_command_suggestion("frobnicate"));
    /* a typo of a job's word gets the commands for that job; a short word gets nothing */
    assert_string_equal(cli_command_suggestion("stauts"), "stats"); /* a command one edit away comes first */
    assert_string_equal(cli_command_suggestion("disabel"), "host disable");
    assert_string_equal(cli_command_suggestion("benchmrk"), "bench");
    assert_null(cli_command_suggestion("ls"));
    assert_null(cli_command_suggestion("vmm"));
    /* "list" is a job two commands do with an option (shims arrives with fleet mode) */
    assert_string_equal(cli_command_suggestion("list"), cli_find_command("shims") ? "launchd --list, or shims --dir DIR --list" : "launchd --list");
}

/* cli_wrap never cuts a word and keeps lines within the width */
static void test_wrap(void **st)
{
    (void)st;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_wrap(f, "aaaa bbbb\ncccc dddd", 2, 4, 13);
    fputs("|", f);
    cli_wrap(f, "averyveryverylongword x", 0, 0, 10); /* longer than the width: alone on its line */
    fclose(f);
    assert_string_equal(buf, "aaaa bbbb\n    cccc dddd|averyveryverylongword\nx");
    free(buf);
}

static void test_bundle_device_classes_and_crash_reports(void **st)
{
    (void)st;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    const char *chain[] = {"AppleParavirtDevice", "_MTLDevice", "NSObject"};
    device_classes_json(f, chain, 3, "_MTLDevice");
    fclose(f);
    assert_string_equal(buf, "{\"class\":\"AppleParavirtDevice\",\"superclasses\":[\"_MTLDevice\",\"NSObject\"],"
                             "\"has_initGPUFamilySupport\":true,\"initGPUFamilySupport_defined_by\":\"_MTLDevice\"}\n");
    free(buf);
    f = open_memstream(&buf, &n);
    device_classes_json(f, chain, 1, NULL);
    fclose(f);
    assert_string_equal(buf, "{\"class\":\"AppleParavirtDevice\",\"superclasses\":[],\"has_initGPUFamilySupport\":false,"
                             "\"initGPUFamilySupport_defined_by\":null}\n");
    free(buf);
    assert_true(crash_report_matches("ollama-2025-01-02-030405.ips", "ollama"));
    assert_true(crash_report_matches("ollama_2025-01-02-030405_mac-mini.crash", "ollama"));
    assert_false(crash_report_matches("ollama-runner-2025-01-02-030405.ips", "ollama"));
    assert_false(crash_report_matches("ollama-2025-01-02-030405.diag", "ollama"));
    assert_false(crash_report_matches("ollama.ips", "ollama"));
    assert_false(crash_report_matches("xollama-2025-01-02-030405.ips", "ollama"));
    assert_false(crash_report_matches("ollama-2025.ips", ""));
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

/* ---- launchd --install's domain, with the stand-in launchctl (tests/cli/standins) ---- */

static char *launchctl_log(const char *path)
{
    static char text[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    remove(path);
    return text;
}

static void test_launchd_domain_gui_or_user(void **st)
{
    (void)st;
    const char *lc = "tests/cli/standins/launchctl", *log = "build/launchctl-standin.log";
    char domain[64];
    remove(log);
    setenv("FAKE_LOG", log, 1);
    unsetenv("FAKE_LOADED");
    /* a GUI login session: gui/UID */
    setenv("FAKE_GUI", "1", 1);
    assert_true(launchd_domain(lc, 501, domain, sizeof domain));
    assert_string_equal(domain, "gui/501");
    assert_string_equal(launchctl_log(log), "launchctl print gui/501\n");
    /* a guest used over SSH: no gui/UID domain, so user/UID */
    setenv("FAKE_GUI", "0", 1);
    assert_false(launchd_domain(lc, 501, domain, sizeof domain));
    assert_string_equal(domain, "user/501");
    launchctl_log(log);
    /* install into user/UID with nothing loaded: asks, then bootstraps */
    assert_int_equal(launchd_apply(lc, 501, "com.me.x", "/h/com.me.x.plist"), 0);
    assert_string_equal(launchctl_log(log), "launchctl print gui/501\nlaunchctl print user/501/com.me.x\n"
                                            "launchctl print gui/501/com.me.x\nlaunchctl bootstrap user/501 /h/com.me.x.plist\n");
    /* a label already loaded (in either domain) is booted out before it is bootstrapped again */
    setenv("FAKE_GUI", "1", 1);
    setenv("FAKE_LOADED", "user/501/com.me.x gui/501/com.me.x", 1);
    assert_int_equal(launchd_apply(lc, 501, "com.me.x", "/h/com.me.x.plist"), 0);
    assert_string_equal(launchctl_log(log),
                        "launchctl print gui/501\nlaunchctl print gui/501/com.me.x\nlaunchctl bootout gui/501/com.me.x\n"
                        "launchctl print user/501/com.me.x\nlaunchctl bootout user/501/com.me.x\n"
                        "launchctl bootstrap gui/501 /h/com.me.x.plist\n");
    /* a failed bootout: no bootstrap, a failure */
    setenv("FAKE_RC", "5", 1);
    setenv("FAKE_LOADED", "gui/501/com.me.x", 1);
    assert_int_equal(launchd_apply(lc, 501, "com.me.x", "/h/com.me.x.plist"), 1);
    assert_null(strstr(launchctl_log(log), "bootstrap"));
    /* --remove: boots out where it is loaded, bootstraps nothing */
    unsetenv("FAKE_RC");
    assert_int_equal(launchd_apply(lc, 501, "com.me.x", NULL), 0);
    assert_string_equal(launchctl_log(log), "launchctl print gui/501\nlaunchctl print gui/501/com.me.x\n"
                                            "launchctl bootout gui/501/com.me.x\nlaunchctl print user/501/com.me.x\n");
    unsetenv("FAKE_LOG"), unsetenv("FAKE_GUI"), unsetenv("FAKE_LOADED");
}

/* Issue 32 row 12: the plist --install writes for the domain the stand-in launchctl gives:
 * user/UID (no GUI login) with LimitLoadToSessionType = Background, gui/UID without the key. */
static const struct plist *session_type_of_plist_for(const char *fake_gui, struct plist **doc)
{
    const char *lc = "tests/cli/standins/launchctl";
    char domain[64], why[200];
    setenv("FAKE_GUI", fake_gui, 1);
    bool gui = launchd_choose_domain(lc, 501, domain, sizeof domain);
    assert_string_equal(domain, gui ? "gui/501" : "user/501");
    char *cmd[] = {"/opt/homebrew/bin/llama-server", "--port", "8080", NULL}, *env[] = {"DYLD_INSERT_LIBRARIES=/l.dylib", NULL};
    size_t len = 0;
    char *text = launchd_plist("com.me.x", cmd, env, "/Users/me", !gui, &len);
    assert_non_null(text);
    *doc = plist_parse(text, len, why, sizeof why);
    free(text);
    assert_non_null(*doc);
    assert_string_equal(plist_get(*doc, "Label")->str, "com.me.x");
    return plist_get(*doc, "LimitLoadToSessionType");
}

static void test_launchd_plist_session_type_per_domain(void **st)
{
    (void)st;
    unsetenv("FAKE_LOADED"), unsetenv("FAKE_LOG");
    struct plist *doc;
    const struct plist *v = session_type_of_plist_for("0", &doc);
    assert_non_null(v);
    assert_int_equal(v->type, PLIST_STRING);
    assert_string_equal(v->str, "Background");
    plist_free(doc);
    assert_null(session_type_of_plist_for("1", &doc));
    plist_free(doc);
    unsetenv("FAKE_GUI");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_and_half_rounding), cmocka_unit_test(test_inputs),
        cmocka_unit_test(test_ref_simd),               cmocka_unit_test(test_ref_matmul_and_padding),
        cmocka_unit_test(test_ref_bfloat_threadgroup_nocopy), cmocka_unit_test(test_tolerance_rule),
        cmocka_unit_test(test_verify_plan),            cmocka_unit_test(test_verdicts_cache_and_roundtrip),
        cmocka_unit_test(test_probe_gates_and_unexpected), cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_json_reader),
        cmocka_unit_test(test_run_passes_the_native_chip_to_x86_64_targets),
        cmocka_unit_test(test_verify_one_child_per_check), cmocka_unit_test(test_bundle_verdicts), cmocka_unit_test(test_probe_device_describe),
        cmocka_unit_test(test_command_table_for_help_and_completions), cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_bundle_device_classes_and_crash_reports),
        cmocka_unit_test(test_sha1),                   cmocka_unit_test(test_coderesources_rules),
        cmocka_unit_test(test_coderesources_xml),      cmocka_unit_test(test_macho_classify),
        cmocka_unit_test(test_launchd_domain_gui_or_user),
        cmocka_unit_test(test_launchd_plist_session_type_per_domain),
        cmocka_unit_test(test_inherit_safety),
        cmocka_unit_test(test_usagelog_since), cmocka_unit_test(test_usagelog_lines),
        cmocka_unit_test(test_usagelog_record), cmocka_unit_test(test_usagelog_rotated_and_cut),        cmocka_unit_test(test_nocopy_guest_hazard),
        cmocka_unit_test(test_usagelog_zero_mark),
    };
    return cmocka_run_group_tests_name("command", tests, NULL, NULL);
}
