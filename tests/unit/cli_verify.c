/* build/test_cli_units: verify's and probe's portable decisions: the CPU references and their
 * rounding, the tolerance rule, the plan, verdicts and cache keys, one child per check; probe's
 * comparison, llama.cpp's gates and the device line. No GPU and no child process. */
#define _POSIX_C_SOURCE 200809L
#include "cli_tests.h"

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

UNIT_TESTS(cli_verify_tests,
           cmocka_unit_test(test_bf16_and_half_rounding),
           cmocka_unit_test(test_inputs),
           cmocka_unit_test(test_ref_simd),
           cmocka_unit_test(test_ref_matmul_and_padding),
           cmocka_unit_test(test_ref_bfloat_threadgroup_nocopy),
           cmocka_unit_test(test_tolerance_rule),
           cmocka_unit_test(test_verify_plan),
           cmocka_unit_test(test_verdicts_cache_and_roundtrip),
           cmocka_unit_test(test_probe_gates_and_unexpected),
           cmocka_unit_test(test_verify_one_child_per_check),
           cmocka_unit_test(test_probe_device_describe));
