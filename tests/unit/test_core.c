/* Unit tests of the portable core: families, chips, every parse and clamp rule, config
 * files, and the whole family x profile answer matrix. */
#define _GNU_SOURCE /* memmem */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

/* ---- helpers ---- */

static struct vzcaps_config_result R;

static void configure_env(const char *const *envp, const char *brand, uint64_t mem)
{
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    struct vzcaps_inputs in = {.envp = envp, .exe = "llama-bench", .host = {.brand = brand, .brand_origin = "test", .physical_memory = mem, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
}

static bool any_note_contains(const struct vzcaps_profile *p, const char *needle)
{
    for (size_t i = 0; i < p->n_notes; i++)
        if (strstr(p->notes[i], needle))
            return true;
    return false;
}

/* ---- families ---- */

static void test_family_names_and_parse(void **st)
{
    (void)st;
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    assert_int_equal(n, 19);
    for (size_t i = 0; i < n; i++) {
        int64_t back = 0;
        assert_non_null(vzcaps_family_name(all[i]));
        assert_int_equal(vzcaps_family_parse(vzcaps_family_name(all[i]), &back), 0);
        assert_int_equal(back, all[i]);
        char num[16];
        snprintf(num, sizeof num, "%lld", (long long)all[i]);
        assert_int_equal(vzcaps_family_parse(num, &back), 0);
        assert_int_equal(back, all[i]);
    }
    int64_t f;
    assert_int_equal(vzcaps_family_parse("apple7", &f), 0);
    assert_int_equal(f, 1007);
    assert_int_equal(vzcaps_family_parse("METAL3", &f), 0);
    assert_int_equal(f, 5001);
    assert_int_equal(vzcaps_family_parse("metal4", &f), 0);
    assert_int_equal(f, 5002);
    const char *bad[] = {"", "apple", "apple11", "1011", "1000", "+1007", "1007 ", " 1007", "0x3e9", "-1", "metal3x", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(vzcaps_family_parse(bad[i], &f), -1);
    assert_true(vzcaps_family_is_apple(1001));
    assert_true(vzcaps_family_is_apple(1010));
    assert_false(vzcaps_family_is_apple(1000));
    assert_false(vzcaps_family_is_apple(1011));
    assert_false(vzcaps_family_is_apple(5001));
}

/* ---- chips ---- */

static void test_chip_table(void **st)
{
    (void)st;
    struct {
        const char *brand;
        bool known, guest;
        char series;
        int gen;
        int64_t family;
        const char *name;
    } cases[] = {
        {"Apple M1", true, false, 'M', 1, 1007, "Apple M1"},
        {"Apple M1 Ultra", true, false, 'M', 1, 1007, "Apple M1 Ultra"},
        {"Apple M1 Ultra (Virtual)", true, true, 'M', 1, 1007, "Apple M1 Ultra"},
        {"Apple M2 (Virtual)", true, true, 'M', 2, 1008, "Apple M2"},
        {"Apple M2 Pro (Virtual)", true, true, 'M', 2, 1008, "Apple M2 Pro"},
        {"Apple M3 Max", true, false, 'M', 3, 1009, "Apple M3 Max"},
        {"Apple M4 Max (Virtual)", true, true, 'M', 4, 1009, "Apple M4 Max"},
        {"Apple M4 Pro (Virtual)", true, true, 'M', 4, 1009, "Apple M4 Pro"},
        {"Apple M5 (Virtual)", true, true, 'M', 5, 1010, "Apple M5"},
        {"Apple M5 Pro (Virtual)", true, true, 'M', 5, 1010, "Apple M5 Pro"},
        {"apple m2 pro", true, false, 'M', 2, 1008, "Apple M2 Pro"},
        {"  Apple M3  ", true, false, 'M', 3, 1009, "Apple M3"},
        /* the A18 series is Apple9, the A19 series Apple10 (feature set tables, May 2026) */
        {"Apple A18 Pro", true, false, 'A', 18, 1009, "Apple A18 Pro"},
        {"Apple A18 Pro (Virtual)", true, true, 'A', 18, 1009, "Apple A18 Pro"},
        {"Apple A18", true, false, 'A', 18, 1009, "Apple A18"},
        {"Apple A18 (Virtual)", true, true, 'A', 18, 1009, "Apple A18"},
        {"apple a18 pro", true, false, 'A', 18, 1009, "Apple A18 Pro"},
        {"Apple A19", true, false, 'A', 19, 1010, "Apple A19"},
        {"Apple A19 Pro (Virtual)", true, true, 'A', 19, 1010, "Apple A19 Pro"},
        {"Apple A18 Max", false, false, 0, 0, 0, NULL},   /* a suffix the A series does not have */
        {"Apple A18 Ultra (Virtual)", false, true, 0, 0, 0, NULL},
        {"Apple A20 Pro", false, false, 0, 0, 0, NULL},   /* not in the table: no safe answer */
        {"Apple A17 Pro", false, false, 0, 0, 0, NULL},   /* no Mac has it */
        {"Apple A18Pro", false, false, 0, 0, 0, NULL},
        {"Apple A", false, false, 0, 0, 0, NULL},
        {"Apple M18 Pro", false, false, 0, 0, 0, NULL},   /* the series letter matters */
        {"Apple B18 Pro", false, false, 0, 0, 0, NULL},
        {"Apple M6", false, false, 0, 0, 0, NULL},
        {"Apple M6 (Virtual)", false, true, 0, 0, 0, NULL},
        {"Apple M0", false, false, 0, 0, 0, NULL},
        {"Apple M", false, false, 0, 0, 0, NULL},
        {"Apple M2 Mega", false, false, 0, 0, 0, NULL},
        {"Apple M2Pro", false, false, 0, 0, 0, NULL},
        {"Apple M2 Pro Max", false, false, 0, 0, 0, NULL},
        {"Intel(R) Core(TM) i9", false, false, 0, 0, 0, NULL},
        {"", false, false, 0, 0, 0, NULL},
        {"Apple M12", false, false, 0, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct vzcaps_chip c;
        vzcaps_chip_from_brand(cases[i].brand, &c);
        if (c.known != cases[i].known || c.guest != cases[i].guest || c.series != cases[i].series ||
            c.generation != cases[i].gen || c.apple_family != cases[i].family)
            fail_msg("\"%s\": known %d guest %d series %c gen %d family %lld", cases[i].brand, c.known, c.guest,
                     c.series ? c.series : '-', c.generation, (long long)c.apple_family);
        assert_int_equal(c.max_threadgroup_memory, cases[i].known ? 32768 : 0);
        if (cases[i].name)
            assert_string_equal(c.name, cases[i].name);
        /* every known row names its source, with a date */
        const char *src = vzcaps_chip_source(&c);
        if (cases[i].known) {
            assert_non_null(src);
            assert_non_null(strstr(src, "2026"));
        } else
            assert_null(src);
    }
    struct vzcaps_chip c;
    vzcaps_chip_from_brand(NULL, &c);
    assert_false(c.known);
    vzcaps_chip_from_brand("Apple M2", &c);
    assert_true(vzcaps_chip_has_family(&c, 5001));
    assert_true(vzcaps_chip_has_family(&c, 1008));
    assert_false(vzcaps_chip_has_family(&c, 1009));
    vzcaps_chip_from_brand("Apple M9", &c);
    assert_false(vzcaps_chip_has_family(&c, 5001));
}

/* The brand as given, when it names no known chip: trimmed and cut to 47 bytes (the name is copied
 * by hand, not by snprintf); the canonical name of a known one is built by hand too. */
static void test_chip_names_copied_by_hand(void **st)
{
    (void)st;
    struct vzcaps_chip c;
    char brand[80];
    memset(brand, 'x', sizeof brand - 1);
    brand[sizeof brand - 1] = '\0';
    vzcaps_chip_from_brand(brand, &c);
    assert_int_equal(strlen(c.name), 47);
    assert_memory_equal(c.name, brand, 47);
    vzcaps_chip_from_brand("  Intel(R) Core(TM) i9 \n", &c);
    assert_string_equal(c.name, "Intel(R) Core(TM) i9");
    vzcaps_chip_from_brand("apple m10 ultra", &c);
    assert_false(c.known);
    assert_string_equal(c.name, "apple m10 ultra");
    vzcaps_chip_from_brand("APPLE M3 MAX (Virtual)", &c);
    assert_true(c.known);
    assert_string_equal(c.name, "Apple M3 Max");
}

/* The constructor's string helpers answer as the libc calls they stand for. */
static void test_string_helpers_match_libc(void **st)
{
    (void)st;
    const char *words[] = {"", "V", "VZCAPS_", "VZCAPS_LOG=quiet", "VZCAPS", "vzcaps_", "LD_PRELOAD=x", "/", "a/b/c", "a/b/", "//x", "=", "=a"};
    size_t n = sizeof words / sizeof words[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            size_t pl = strlen(words[j]);
            if (vzcaps_has_prefix(words[i], words[j], pl) != (strncmp(words[i], words[j], pl) == 0))
                fail_msg("has_prefix(\"%s\", \"%s\")", words[i], words[j]);
            if (vzcaps_streq(words[i], words[j]) != (strcmp(words[i], words[j]) == 0))
                fail_msg("streq(\"%s\", \"%s\")", words[i], words[j]);
        }
        assert_ptr_equal(vzcaps_find_char(words[i], '='), strchr(words[i], '='));
        assert_ptr_equal(vzcaps_find_char(words[i], '\0'), strchr(words[i], '\0'));
        const char *slash = strrchr(words[i], '/');
        assert_ptr_equal(vzcaps_basename(words[i]), slash ? slash + 1 : words[i]);
    }
}

static uint64_t sixteen_gib(void)
{
    return 17179869184ull;
}

/* Physical memory asked only when a working-set floor needs it (the library's constructor does
 * not pay for it otherwise), with the same answers as when it is given. */
static void test_physical_memory_asked_when_needed(void **st)
{
    (void)st;
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    const char *env[] = {"VZCAPS_APPLE_FAMILY_MAX=1007", "VZCAPS_RECOMMENDED_WORKING_SET_SIZE=99000000000", NULL};
    struct vzcaps_inputs in = {.envp = env, .exe = "llama-bench", .host = {.brand = "Apple M2", .brand_origin = "test",
                                                                             .physical_memory_of = sixteen_gib}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED);
    assert_int_equal(R.profile.recommended_working_set_size, 17179869184ull);
    assert_true(any_note_contains(&R.profile, "working-set floor 99000000000 clamped to physical memory 17179869184"));
    env[1] = "VZCAPS_RECOMMENDED_WORKING_SET_SIZE=8000000000";
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_true(any_note_contains(&R.profile, "working-set floor 8000000000 (physical memory 17179869184)"));
    env[1] = NULL;
    in.host.physical_memory_of = NULL; /* not asked: nothing needs it */
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_true(any_note_contains(&R.profile, "Apple families up to 1007 (Apple7), within Apple M2's 1008"));
}

/* ---- settings ---- */

static void test_settings_values(void **st)
{
    (void)st;
    struct { int key; const char *value; int ok; } cases[] = {
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "auto", 0}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "off", 0},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "0", 0}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "1001", 0},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "1010", 0}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "apple9", 0},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "1000", -1}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "1011", -1},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "5001", -1}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "1009x", -1},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, " 1009", -1}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "+1009", -1},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "0x3f1", -1}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "AUTO", -1},
        {VZCAPS_KEY_APPLE_FAMILY_MAX, "", -1}, {VZCAPS_KEY_APPLE_FAMILY_MAX, "00", -1},
        {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "32768", 0}, {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "1048576", 0},
        {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "1048577", -1}, {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "0", -1},
        {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "-1", -1}, {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "32k", -1},
        {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "32768 ", -1}, {VZCAPS_KEY_MAX_THREADGROUP_MEMORY, "18446744073709551616", -1},
        {VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE, "12000000000", 0},
        {VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE, "1125899906842625", -1},
        {VZCAPS_KEY_EXTRA_FAMILIES, "metal3", 0}, {VZCAPS_KEY_EXTRA_FAMILIES, "metal3,metal4,5001", 0},
        {VZCAPS_KEY_EXTRA_FAMILIES, "metal3, metal4", -1}, {VZCAPS_KEY_EXTRA_FAMILIES, "metal3,", -1},
        {VZCAPS_KEY_EXTRA_FAMILIES, ",metal3", -1}, {VZCAPS_KEY_EXTRA_FAMILIES, "apple7", -1},
        {VZCAPS_KEY_EXTRA_FAMILIES, "metal9", -1}, {VZCAPS_KEY_EXTRA_FAMILIES, "1007", -1},
        {VZCAPS_KEY_HOST_CHIP, "Apple M2 Pro", 0}, {VZCAPS_KEY_HOST_CHIP, "anything at all", 0},
        {VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE, "1", 0}, {VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE, "2", -1},
        {VZCAPS_KEY_INHERIT, "yes", 0}, {VZCAPS_KEY_INHERIT, "0", 0}, {VZCAPS_KEY_INHERIT, "Y", -1},
        {VZCAPS_KEY_INHERIT, "matching", 0}, {VZCAPS_KEY_INHERIT, "Matching", -1},
        {VZCAPS_KEY_LOG, "quiet", 0}, {VZCAPS_KEY_LOG, "verbose", 0}, {VZCAPS_KEY_LOG, "loud", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct vzcaps_settings s;
        char err[256] = "";
        memset(&s, 0, sizeof s);
        int rc = vzcaps_settings_set(&s, (enum vzcaps_key)cases[i].key, cases[i].value, "X", err, sizeof err);
        if (rc != cases[i].ok)
            fail_msg("key %d value \"%s\": got %d (%s)", cases[i].key, cases[i].value, rc, err);
        if (rc == 0)
            assert_true(s.set & (1u << cases[i].key));
        else
            assert_true(strlen(err) > 5 && s.set == 0);
    }
    struct vzcaps_settings s;
    char err[256];
    memset(&s, 0, sizeof s);
    assert_int_equal(vzcaps_settings_set(&s, VZCAPS_KEY_EXTRA_FAMILIES, "metal3,5001,metal4", "X", err, sizeof err), 0);
    assert_int_equal(s.n_extra, 2); /* duplicates collapse */
    assert_int_equal(vzcaps_key_from_name("inherit"), VZCAPS_KEY_INHERIT);
    memset(&s, 0, sizeof s);
    assert_int_equal(vzcaps_settings_set(&s, VZCAPS_KEY_INHERIT, "yes", "X", err, sizeof err), 0);
    assert_int_equal(vzcaps_settings_set(&s, VZCAPS_KEY_INHERIT, "matching", "X", err, sizeof err), 0);
    assert_true(s.inherit_matching && !s.inherit); /* a later value replaces an earlier one */
    assert_int_equal(vzcaps_settings_set(&s, VZCAPS_KEY_INHERIT, "1", "X", err, sizeof err), 0);
    assert_true(s.inherit && !s.inherit_matching);
    assert_int_equal(vzcaps_key_from_name("match"), -1);
}

/* ---- resolution ---- */

static void test_resolve_family_rules(void **st)
{
    (void)st;
    struct {
        const char *family, *chip;
        int unsafe;
        enum vzcaps_state state;
        int64_t max;
        const char *note;
    } cases[] = {
        {"auto", "Apple M1", 0, VZCAPS_ENABLED, 1007, "auto"},
        {"auto", "Apple M1 Ultra (Virtual)", 0, VZCAPS_ENABLED, 1007, "Apple M1 Ultra"},
        {"auto", "Apple M2", 0, VZCAPS_ENABLED, 1008, NULL},
        {"auto", "Apple M2 Pro (Virtual)", 0, VZCAPS_ENABLED, 1008, NULL},
        {"auto", "Apple M3", 0, VZCAPS_ENABLED, 1009, NULL},
        {"auto", "Apple M3 Max (Virtual)", 0, VZCAPS_ENABLED, 1009, NULL},
        {"auto", "Apple M4", 0, VZCAPS_ENABLED, 1009, NULL},
        {"auto", "Apple M4 Max (Virtual)", 0, VZCAPS_ENABLED, 1009, NULL},
        {"auto", "Apple M5", 0, VZCAPS_ENABLED, 1010, NULL},
        {"auto", "Apple M5 (Virtual)", 0, VZCAPS_ENABLED, 1010, NULL},
        {"auto", "Apple M7 (Virtual)", 0, VZCAPS_STOCK_REFUSED, 0, "VZCAPS_HOST_CHIP"},
        {"auto", NULL, 0, VZCAPS_STOCK_REFUSED, 0, "VZCAPS_HOST_CHIP"},
        {"auto", NULL, 1, VZCAPS_STOCK_REFUSED, 0, "VZCAPS_HOST_CHIP"},
        {"1009", "Apple M1", 0, VZCAPS_ENABLED, 1007, "clamped"},
        {"1009", "Apple M2 (Virtual)", 0, VZCAPS_ENABLED, 1008, "clamped"},
        {"1006", "Apple M2", 0, VZCAPS_ENABLED, 1006, "within"},
        {"1009", "Apple M1", 1, VZCAPS_ENABLED, 1009, "BEYOND"},
        {"1010", NULL, 0, VZCAPS_ENABLED, 1010, "not validated"},
        {"1010", "Apple M9", 0, VZCAPS_ENABLED, 1010, "not validated"},
        {"off", "Apple M2", 0, VZCAPS_STOCK_OFF, 0, NULL},
        {"0", "Apple M2", 0, VZCAPS_STOCK_OFF, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char fam[64], unsafe[64];
        snprintf(fam, sizeof fam, "VZCAPS_APPLE_FAMILY_MAX=%s", cases[i].family);
        snprintf(unsafe, sizeof unsafe, "VZCAPS_UNSAFE_BEYOND_HARDWARE=%d", cases[i].unsafe);
        const char *env[] = {fam, unsafe, NULL};
        configure_env(env, cases[i].chip, 0);
        if (R.profile.state != cases[i].state || R.profile.apple_family_max != cases[i].max)
            fail_msg("case %zu: state %d max %lld", i, R.profile.state, (long long)R.profile.apple_family_max);
        if (cases[i].note && !any_note_contains(&R.profile, cases[i].note))
            fail_msg("case %zu: no note with \"%s\" (first: %s)", i, cases[i].note, R.profile.notes[0]);
        assert_false(R.profile.invalid); /* every case here is a valid configuration */
        if (cases[i].unsafe && cases[i].state == VZCAPS_ENABLED)
            assert_true(any_note_contains(&R.profile, "unsafe_beyond_hardware is set"));
    }
}

static void test_resolve_floors(void **st)
{
    (void)st;
    const uint64_t mem = 17179869184ull; /* 16 GiB guest */
    struct { const char *tg, *ws, *chip; int unsafe; uint64_t tg_out, ws_out; const char *note; } cases[] = {
        {"16384", NULL, "Apple M1", 0, 16384, 0, "documented limit"},
        {"32768", NULL, "Apple M1", 0, 32768, 0, NULL},
        {"65536", NULL, "Apple M1", 0, 32768, 0, "clamped to 32768"},
        {"65536", NULL, "Apple M1", 1, 65536, 0, "BEYOND"},
        {"65536", NULL, NULL, 0, 65536, 0, "not validated"},
        {NULL, "8000000000", "Apple M2", 0, 0, 8000000000ull, "physical memory"},
        {NULL, "99000000000", "Apple M2", 0, 0, mem, "clamped to physical memory"},
        {NULL, "99000000000", "Apple M2", 1, 0, mem, "clamped to physical memory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tg[64], ws[64], unsafe[64];
        const char *env[6] = {"VZCAPS_APPLE_FAMILY_MAX=1007"};
        size_t n = 1;
        if (cases[i].tg)
            snprintf(tg, sizeof tg, "VZCAPS_MAX_THREADGROUP_MEMORY=%s", cases[i].tg), env[n++] = tg;
        if (cases[i].ws)
            snprintf(ws, sizeof ws, "VZCAPS_RECOMMENDED_WORKING_SET_SIZE=%s", cases[i].ws), env[n++] = ws;
        snprintf(unsafe, sizeof unsafe, "VZCAPS_UNSAFE_BEYOND_HARDWARE=%d", cases[i].unsafe);
        env[n++] = unsafe;
        configure_env(env, cases[i].chip, mem);
        assert_int_equal(R.profile.state, VZCAPS_ENABLED);
        assert_int_equal(R.profile.max_threadgroup_memory, cases[i].tg_out);
        assert_int_equal(R.profile.recommended_working_set_size, cases[i].ws_out);
        if (cases[i].note && !any_note_contains(&R.profile, cases[i].note))
            fail_msg("case %zu: no note \"%s\"", i, cases[i].note);
    }
    /* unknown physical memory: the floor is used as given */
    const char *env[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_RECOMMENDED_WORKING_SET_SIZE=99000000000", NULL};
    configure_env(env, "Apple M2", 0);
    assert_int_equal(R.profile.recommended_working_set_size, 99000000000ull);
    assert_true(any_note_contains(&R.profile, "not validated"));
}

static void test_resolve_refusals(void **st)
{
    (void)st;
    struct { const char *env[4]; const char *needle; } cases[] = {
        {{"VZCAPS_APPLE_FAMILY_MAX=1009x"}, "VZCAPS_APPLE_FAMILY_MAX"},
        {{"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_MAX_THREADGROUP_MEMORY=0x8000"}, "VZCAPS_MAX_THREADGROUP_MEMORY"},
        {{"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_EXTRA_FAMILIES=metal5"}, "metal5"},
        {{"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_INHERIT=maybe"}, "VZCAPS_INHERIT"},
        {{"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_APPLE_FAMILY_MAXX=1"}, "unknown variable VZCAPS_APPLE_FAMILY_MAXX"},
        {{"VZCAPS_MAX_THREADGROUP_MEMORY=32768"}, "apple_family_max is not"},
        {{"VZCAPS_APPLE_FAMILY_MAX="}, "empty value"},
        {{"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_PROFILE=llama"}, "no config file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        configure_env(cases[i].env, "Apple M2", 0);
        assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
        assert_true(R.profile.invalid);
        assert_int_equal(R.profile.apple_family_max, 0);
        if (!any_note_contains(&R.profile, cases[i].needle))
            fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].needle, R.profile.notes[0]);
    }
    /* nothing set at all, or only inherit/log: silent stock */
    const char *none[] = {"HOME=/nonexistent", "PATH=/bin", NULL};
    configure_env(none, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
    assert_int_equal(R.profile.n_notes, 0);
    const char *quiet[] = {"VZCAPS_LOG=quiet", NULL};
    configure_env(quiet, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
}

static void test_compat_variables(void **st)
{
    (void)st;
    const char *tart[] = {"TART_METAL_APPLE_FAMILY_MAX=1009", "TART_METAL_MAX_THREADGROUP_MEMORY=65536", NULL};
    configure_env(tart, "Apple M1 Ultra (Virtual)", 0);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED);
    assert_int_equal(R.profile.apple_family_max, 1007); /* same safety rules: clamped */
    assert_int_equal(R.profile.max_threadgroup_memory, 32768);
    assert_string_equal(R.env_prefix, "TART_METAL_");
    const char *lume[] = {"LUME_METAL_APPLE_FAMILY_MAX=1008", NULL};
    configure_env(lume, "Apple M3", 0);
    assert_int_equal(R.profile.apple_family_max, 1008);
    assert_string_equal(R.env_prefix, "LUME_METAL_");
    /* TART before LUME, and the line says LUME was ignored */
    const char *both[] = {"LUME_METAL_APPLE_FAMILY_MAX=1006", "TART_METAL_APPLE_FAMILY_MAX=1008", NULL};
    configure_env(both, "Apple M3", 0);
    assert_int_equal(R.profile.apple_family_max, 1008);
    assert_true(any_note_contains(&R.profile, "LUME_METAL_* ignored: TART_METAL_* is set and comes first"));
    /* VZCAPS_ variables that configure claims silence both, and the line says so */
    const char *ours[] = {"TART_METAL_APPLE_FAMILY_MAX=1009", "VZCAPS_APPLE_FAMILY_MAX=1006", NULL};
    configure_env(ours, "Apple M3", 0);
    assert_int_equal(R.profile.apple_family_max, 1006);
    assert_true(any_note_contains(&R.profile, "TART_METAL_* ignored: VZCAPS_APPLE_FAMILY_MAX is set"));
    /* VZCAPS_HOST_CHIP, _LOG, _INHERIT and the scope combine with them (the advice the line gives) */
    const char *chip[] = {"LUME_METAL_APPLE_FAMILY_MAX=auto", "VZCAPS_HOST_CHIP=Apple M2", "VZCAPS_LOG=quiet", "VZCAPS_INHERIT=1", NULL};
    configure_env(chip, NULL, 0);
    assert_int_equal(R.profile.state, VZCAPS_ENABLED);
    assert_int_equal(R.profile.apple_family_max, 1008);
    assert_true(R.profile.quiet && R.profile.inherit);
    assert_string_equal(R.env_prefix, "LUME_METAL_");
    /* malformed compatibility value: refused like ours */
    const char *bad[] = {"TART_METAL_APPLE_FAMILY_MAX=nine", NULL};
    configure_env(bad, "Apple M3", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "TART_METAL_APPLE_FAMILY_MAX"));
    /* the compatible prefixes carry only the three shared keys */
    const char *other[] = {"TART_METAL_INHERIT=1", NULL};
    configure_env(other, "Apple M3", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
}

/* ---- the answer matrix ---- */

static uint64_t expected_family(int64_t f, int stock, int64_t max, const int64_t *extra, size_t n_extra)
{
    if (stock)
        return 1;
    if (f >= 1001 && f <= 1010)
        return f <= max;
    for (size_t i = 0; i < n_extra; i++)
        if (extra[i] == f)
            return 1;
    return 0;
}

static void test_answer_matrix(void **st)
{
    (void)st;
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    const char *ceilings[] = {"1001", "1003", "1005", "1006", "1007", "1008", "1009", "1010", "auto"};
    const char *extras[] = {NULL, "metal3", "metal3,metal4,mac1,maccatalyst2"};
    const char *chips[] = {"Apple M1", "Apple M2 (Virtual)", "Apple M4 Max (Virtual)", "Apple M5"};
    for (size_t c = 0; c < 4; c++)
        for (size_t k = 0; k < 9; k++)
            for (size_t x = 0; x < 3; x++) {
                char fam[64], ex[96];
                snprintf(fam, sizeof fam, "VZCAPS_APPLE_FAMILY_MAX=%s", ceilings[k]);
                const char *env[3] = {fam, NULL, NULL};
                if (extras[x])
                    snprintf(ex, sizeof ex, "VZCAPS_EXTRA_FAMILIES=%s", extras[x]), env[1] = ex;
                configure_env(env, chips[c], 0);
                assert_int_equal(R.profile.state, VZCAPS_ENABLED);
                struct vzcaps_chip chip;
                vzcaps_chip_from_brand(chips[c], &chip);
                int64_t max = strcmp(ceilings[k], "auto") == 0 ? chip.apple_family : strtoll(ceilings[k], NULL, 10);
                if (max > chip.apple_family)
                    max = chip.apple_family;
                assert_int_equal(R.profile.apple_family_max, max);
                for (size_t i = 0; i < n; i++)
                    for (int stock = 0; stock <= 1; stock++) {
                        uint64_t got = vzcaps_answer(&R.profile, VZCAPS_Q_SUPPORTS_FAMILY, all[i], (uint64_t)stock);
                        uint64_t want = expected_family(all[i], stock, max, R.profile.extra, R.profile.n_extra);
                        if (got != want)
                            fail_msg("chip %s ceiling %s extras %s family %lld stock %d: got %llu", chips[c], ceilings[k],
                                     extras[x] ? extras[x] : "-", (long long)all[i], stock, (unsigned long long)got);
                    }
                /* the table the library answers from says the same, for every value */
                static unsigned char table[VZCAPS_FAMILY_TABLE_LEN];
                vzcaps_family_table(&R.profile, table);
                for (int64_t f = -3; f < 7000; f++) {
                    uint64_t i = (uint64_t)(f - VZCAPS_FAMILY_TABLE_FIRST);
                    uint64_t from_table = i < VZCAPS_FAMILY_TABLE_LEN ? table[i] : 0;
                    if (from_table != vzcaps_answer(&R.profile, VZCAPS_Q_SUPPORTS_FAMILY, f, 0))
                        fail_msg("chip %s ceiling %s extras %s family %lld: table says %llu", chips[c], ceilings[k],
                                 extras[x] ? extras[x] : "-", (long long)f, (unsigned long long)from_table);
                }
                /* values outside every table are left as they were */
                assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_SUPPORTS_FAMILY, 6001, 0), 0);
                assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_SUPPORTS_FAMILY, -1, 1), 1);
            }
    /* a stock process: every answer passes through */
    const char *off[] = {"VZCAPS_APPLE_FAMILY_MAX=off", NULL};
    configure_env(off, "Apple M4", 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_SUPPORTS_FAMILY, all[i], 0), 0);
    assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_MAX_THREADGROUP_MEMORY, 0, 32768), 32768);
    assert_false(vzcaps_query_needed(&R.profile, VZCAPS_Q_SUPPORTS_FAMILY));
}

static void test_answer_limits(void **st)
{
    (void)st;
    const char *env[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_MAX_THREADGROUP_MEMORY=32768",
                         "VZCAPS_RECOMMENDED_WORKING_SET_SIZE=12000000000", NULL};
    configure_env(env, "Apple M2", 17179869184ull);
    assert_true(vzcaps_query_needed(&R.profile, VZCAPS_Q_MAX_THREADGROUP_MEMORY));
    assert_true(vzcaps_query_needed(&R.profile, VZCAPS_Q_RECOMMENDED_WORKING_SET));
    assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_MAX_THREADGROUP_MEMORY, 0, 16384), 32768);
    assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_MAX_THREADGROUP_MEMORY, 0, 65536), 65536); /* never lowered */
    assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_RECOMMENDED_WORKING_SET, 0, 5010800640ull), 12000000000ull);
    assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_RECOMMENDED_WORKING_SET, 0, 13000000000ull), 13000000000ull);
    const char *fam_only[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", NULL};
    configure_env(fam_only, "Apple M2", 0);
    assert_false(vzcaps_query_needed(&R.profile, VZCAPS_Q_MAX_THREADGROUP_MEMORY));
    assert_false(vzcaps_query_needed(&R.profile, VZCAPS_Q_RECOMMENDED_WORKING_SET));
    assert_int_equal(vzcaps_answer(&R.profile, VZCAPS_Q_MAX_THREADGROUP_MEMORY, 0, 32768), 32768);
}

/* ---- config files ---- */

struct fake_files {
    const char *path[3];
    const char *text[3];
};
static struct fake_files FILES;

static int fake_read(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing, char *err, size_t errlen)
{
    (void)ctx;
    for (int i = 0; i < 3; i++)
        if (FILES.path[i] && strcmp(FILES.path[i], path) == 0) {
            if (!FILES.text[i]) /* there, but not to be read */
                return snprintf(err, errlen, "not trusted: writable by others (mode 0664): chmod go-w it"), -1;
            size_t n = strlen(FILES.text[i]);
            if (n >= cap)
                return snprintf(err, errlen, "too large"), -1;
            memcpy(buf, FILES.text[i], n + 1);
            *len = n;
            return 0;
        }
    *missing = true;
    snprintf(err, errlen, "cannot open: No such file or directory");
    return -1;
}

static const char SAMPLE[] =
    "# comments start with '#'\n"
    "[llama]\n"
    "match = llama-server llama-cli llama-bench whisper-*\n"
    "apple_family_max = auto\n"
    "max_threadgroup_memory = 32768   # inline comment\n"
    "[ollama]\n"
    "match = ollama\n"
    "apple_family_max = auto\n"
    "inherit = yes\n"
    "[mlx]\n"
    "match = python3*\n"
    "apple_family_max = off\n"
    "[default]\n"
    "apple_family_max = 1006\n";

static void configure_file(const char *exe, const char *const *envp)
{
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    struct vzcaps_inputs in = {.envp = envp, .exe = exe, .read_file = fake_read, .host = {.brand = "Apple M2 (Virtual)", .brand_origin = "test", .physical_memory = 0, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
}

static void test_config_sections(void **st)
{
    (void)st;
    memset(&FILES, 0, sizeof FILES);
    FILES.path[0] = "/home/u/.config/vzcaps/vzcaps.conf";
    FILES.text[0] = SAMPLE;
    const char *env[] = {"HOME=/home/u", NULL};
    struct { const char *exe, *section; enum vzcaps_state state; int64_t max; int inherit; } cases[] = {
        {"llama-bench", "llama", VZCAPS_ENABLED, 1008, 0},
        {"whisper-cli", "llama", VZCAPS_ENABLED, 1008, 0},
        {"ollama", "ollama", VZCAPS_ENABLED, 1008, 1},
        {"python3.12", "mlx", VZCAPS_STOCK_OFF, 0, 0},
        {"probe", "default", VZCAPS_ENABLED, 1006, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        configure_file(cases[i].exe, env);
        assert_string_equal(R.section, cases[i].section);
        assert_int_equal(R.profile.state, cases[i].state);
        assert_int_equal(R.profile.apple_family_max, cases[i].max);
        assert_int_equal(R.profile.inherit, cases[i].inherit);
        assert_string_equal(R.config_path, "/home/u/.config/vzcaps/vzcaps.conf");
    }
    configure_file("llama-bench", env);
    assert_int_equal(R.profile.max_threadgroup_memory, 32768);
    assert_true(any_note_contains(&R.profile, "profile [llama]"));
    /* VZCAPS_PROFILE picks the section; variables override the file */
    const char *pick[] = {"HOME=/home/u", "VZCAPS_PROFILE=ollama", "VZCAPS_INHERIT=0", NULL};
    configure_file("llama-bench", pick);
    assert_string_equal(R.section, "ollama");
    assert_int_equal(R.profile.inherit, 0);
    const char *missing_profile[] = {"HOME=/home/u", "VZCAPS_PROFILE=nope", NULL};
    configure_file("llama-bench", missing_profile);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "no section [nope]"));
    /* the system file is the fallback; VZCAPS_CONFIG replaces the search */
    FILES.path[0] = "/usr/local/etc/vzcaps.conf";
    configure_file("ollama", env);
    assert_string_equal(R.config_path, "/usr/local/etc/vzcaps.conf");
    const char *named_missing[] = {"HOME=/home/u", "VZCAPS_CONFIG=/nope.conf", NULL};
    configure_file("ollama", named_missing);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "/nope.conf: cannot open"));
    FILES.path[0] = NULL;
    configure_file("ollama", env);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
    /* no matching section and no [default]: nothing applies */
    FILES.path[0] = "/usr/local/etc/vzcaps.conf";
    FILES.text[0] = "[x]\nmatch = foo\napple_family_max = auto\n";
    configure_file("bar", env);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
    assert_string_equal(R.section, "");
}

/* The search order: one function for the library, the command and the docs. */
static void test_config_search_order(void **st)
{
    (void)st;
    static char paths[VZCAPS_CONFIG_SEARCH_MAX][VZCAPS_PATH_MAX + 1];
    char why[300] = "";
    bool named = true;
    const char *xdg[] = {"HOME=/home/u", "XDG_CONFIG_HOME=/home/u/cfg", NULL};
    assert_int_equal(vzcaps_config_search(xdg, NULL, paths, &named, why, sizeof why), 3);
    assert_false(named);
    assert_string_equal(paths[0], "/home/u/cfg/vzcaps/vzcaps.conf");
    assert_string_equal(paths[1], "/opt/homebrew/etc/vzcaps.conf"); /* Homebrew on Apple silicon first */
    assert_string_equal(paths[2], "/usr/local/etc/vzcaps.conf");
    /* XDG: a relative or empty XDG_CONFIG_HOME is ignored, and ~/.config is used */
    const char *rel[] = {"HOME=/home/u", "XDG_CONFIG_HOME=cfg", NULL}, *empty[] = {"XDG_CONFIG_HOME=", "HOME=/home/u", NULL};
    assert_int_equal(vzcaps_config_search(rel, "", paths, &named, why, sizeof why), 3);
    assert_string_equal(paths[0], "/home/u/.config/vzcaps/vzcaps.conf");
    assert_int_equal(vzcaps_config_search(empty, "", paths, &named, why, sizeof why), 3);
    assert_string_equal(paths[0], "/home/u/.config/vzcaps/vzcaps.conf");
    /* a relative HOME is ignored like a relative XDG_CONFIG_HOME (issue 25 row 15): the file
     * would depend on the current directory */
    const char *rel_home[] = {"HOME=.", NULL}, *rel_both[] = {"HOME=u", "XDG_CONFIG_HOME=cfg", NULL};
    const char *rel_home_xdg[] = {"HOME=.", "XDG_CONFIG_HOME=/x", NULL};
    assert_int_equal(vzcaps_config_search(rel_home, "", paths, &named, why, sizeof why), 2);
    assert_string_equal(paths[0], "/opt/homebrew/etc/vzcaps.conf");
    assert_int_equal(vzcaps_config_search(rel_both, "", paths, &named, why, sizeof why), 2);
    assert_string_equal(paths[0], "/opt/homebrew/etc/vzcaps.conf");
    assert_int_equal(vzcaps_config_search(rel_home_xdg, "", paths, &named, why, sizeof why), 3);
    assert_string_equal(paths[0], "/x/vzcaps/vzcaps.conf");
    /* no HOME: the system files only; root prefixes them (the test seam) */
    const char *none[] = {NULL};
    assert_int_equal(vzcaps_config_search(none, "/tmp/root", paths, &named, why, sizeof why), 2);
    assert_string_equal(paths[0], "/tmp/root/opt/homebrew/etc/vzcaps.conf");
    assert_string_equal(paths[1], "/tmp/root/usr/local/etc/vzcaps.conf");
    /* VZCAPS_CONFIG replaces the search */
    const char *named_env[] = {"XDG_CONFIG_HOME=/x", "VZCAPS_CONFIG=/etc/my.conf", NULL};
    assert_int_equal(vzcaps_config_search(named_env, NULL, paths, &named, why, sizeof why), 1);
    assert_true(named);
    assert_string_equal(paths[0], "/etc/my.conf");
    const char *named_empty[] = {"VZCAPS_CONFIG=", NULL};
    assert_int_equal(vzcaps_config_search(named_empty, NULL, paths, &named, why, sizeof why), -1);
    assert_string_equal(why, "VZCAPS_CONFIG is empty: name a config file or unset it");
    /* a path that would not fit is refused, naming the variable, never cut */
    static char long_xdg[VZCAPS_PATH_MAX + 40];
    snprintf(long_xdg, sizeof long_xdg, "XDG_CONFIG_HOME=/%0*d", VZCAPS_PATH_MAX - 10, 0);
    const char *too_long[] = {long_xdg, NULL};
    assert_int_equal(vzcaps_config_search(too_long, NULL, paths, &named, why, sizeof why), -1);
    assert_non_null(strstr(why, "XDG_CONFIG_HOME /000"));
    assert_non_null(strstr(why, "too long for the user config file path"));
    snprintf(long_xdg, sizeof long_xdg, "XDG_CONFIG_HOME=/%0*d", VZCAPS_PATH_MAX - 20, 0); /* exactly the limit */
    assert_int_equal(vzcaps_config_search(too_long, NULL, paths, &named, why, sizeof why), 3);
    assert_int_equal(strlen(paths[0]), VZCAPS_PATH_MAX);
    static char long_root[VZCAPS_PATH_MAX];
    memset(long_root, 'r', sizeof long_root - 1);
    long_root[0] = '/';
    assert_int_equal(vzcaps_config_search(none, long_root, paths, &named, why, sizeof why), -1);
    assert_non_null(strstr(why, "too long"));
}

/* vzcaps_configure reads the first file of the search that exists, and says which. */
static void test_config_search_in_configure(void **st)
{
    (void)st;
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    memset(&FILES, 0, sizeof FILES);
    FILES.path[0] = "/r/opt/homebrew/etc/vzcaps.conf", FILES.text[0] = "[default]\napple_family_max = 1007\n";
    FILES.path[1] = "/r/usr/local/etc/vzcaps.conf", FILES.text[1] = "[default]\napple_family_max = 1006\n";
    const char *env[] = {"HOME=/home/u", "XDG_CONFIG_HOME=/home/u/xdg", NULL};
    struct vzcaps_inputs in = {.envp = env, .exe = "x", .read_file = fake_read, .sys_root = "/r",
                               .host = {.brand = "Apple M2 (Virtual)", .brand_origin = "test", .physical_memory = 0, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_string_equal(R.config_path, "/r/opt/homebrew/etc/vzcaps.conf");
    assert_int_equal(R.profile.apple_family_max, 1007);
    assert_int_equal(R.n_searched, 3);
    assert_string_equal(R.searched[0], "/home/u/xdg/vzcaps/vzcaps.conf");
    assert_string_equal(R.config_error, "");
    FILES.path[0] = NULL; /* no Homebrew file on Apple silicon: /usr/local/etc */
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_string_equal(R.config_path, "/r/usr/local/etc/vzcaps.conf");
    assert_int_equal(R.profile.apple_family_max, 1006);
    FILES.path[2] = "/home/u/xdg/vzcaps/vzcaps.conf", FILES.text[2] = "[default]\napple_family_max = 1008\n";
    vzcaps_configure(&in, buf, sizeof buf, &R); /* the user's file comes first */
    assert_string_equal(R.config_path, "/home/u/xdg/vzcaps/vzcaps.conf");
    assert_int_equal(R.profile.apple_family_max, 1008);
    /* a file that is there but refused is named with its reason, and nothing later is read */
    FILES.text[2] = NULL;
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_string_equal(R.config_path, "/home/u/xdg/vzcaps/vzcaps.conf");
    assert_string_equal(R.config_error, "not trusted: writable by others (mode 0664): chmod go-w it");
    assert_true(any_note_contains(&R.profile, "/home/u/xdg/vzcaps/vzcaps.conf: not trusted"));
    /* a file that does not parse is named with its error too */
    FILES.text[2] = "[s]\nbogus = 1\n";
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_string_equal(R.config_path, "/home/u/xdg/vzcaps/vzcaps.conf");
    assert_string_equal(R.config_error, "/home/u/xdg/vzcaps/vzcaps.conf:2: unknown key bogus");
    /* the library's own call has no root: the real system paths */
    FILES.path[2] = NULL;
    in.sys_root = NULL;
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_UNCONFIGURED);
    assert_string_equal(R.config_path, "");
    assert_string_equal(R.searched[1], "/opt/homebrew/etc/vzcaps.conf");
}

static void test_config_errors(void **st)
{
    (void)st;
    char longline[1200];
    memset(longline, 'a', sizeof longline);
    memcpy(longline, "[s]\nhost_chip = ", 16);
    longline[sizeof longline - 1] = '\0';
    struct { const char *text, *err; } cases[] = {
        {"[s]\nbogus = 1\n", "f.conf:2: unknown key bogus"},
        {"apple_family_max = auto\n", "f.conf:1: apple_family_max outside a section: start one with [name]"},
        {"[s]\napple_family_max = auto\napple_family_max = off\n", "f.conf:3: duplicate key apple_family_max in [s]"},
        {"[s]\napple_family_max = 12\n", "f.conf:2: apple_family_max: \"12\" is not auto, off, 0, or an Apple family 1001..1010 (apple1..apple10)"},
        {"[s\n", "f.conf:1: bad section header: expected [name]"},
        {"[]\n", "f.conf:1: bad section header: expected [name]"},
        {"[a b]\n", "f.conf:1: bad section name: use letters, digits, '_', '-' and '.'"},
        {"[s]\n[s]\n", "f.conf:2: duplicate section [s]"},
        {"[s]\njust words\n", "f.conf:2: expected key = value or [section]"},
        {"[s]\nmatch =\n", "f.conf:2: empty match"},
        {"[s]\nmatch = a\nmatch = b\n", "f.conf:3: duplicate key match in [s]"},
        {"[s]\n = 3\n", "f.conf:2: missing or overlong key"},
        {longline, "f.conf:2: line longer than 1024 bytes"},
        {"[s]\napple_family_max = auto\n[t]\nmax_threadgroup_memory = lots\n", "f.conf:4: max_threadgroup_memory: \"lots\" is not a plain decimal number of bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct vzcaps_settings s;
        char section[64], err[300] = "";
        memset(&s, 0, sizeof s);
        int rc = vzcaps_config_apply(cases[i].text, strlen(cases[i].text), "f.conf", "x", NULL, &s, section, sizeof section, err, sizeof err);
        assert_int_equal(rc, -1);
        assert_string_equal(err, cases[i].err);
        assert_int_equal(s.set, 0); /* nothing half-applied */
    }
    /* an error in a section that is not chosen still rejects the whole file */
    struct vzcaps_settings s;
    char section[64], err[300];
    memset(&s, 0, sizeof s);
    const char text[] = "[a]\nmatch = x\napple_family_max = auto\n[b]\nlog = loud\n";
    assert_int_equal(vzcaps_config_apply(text, sizeof text - 1, "f.conf", "x", NULL, &s, section, sizeof section, err, sizeof err), -1);
    assert_string_equal(err, "f.conf:5: log: \"loud\" is not quiet, normal or verbose");
    const char nul[] = "[a]\nlog = quiet\0\n";
    assert_int_equal(vzcaps_config_apply(nul, sizeof nul - 1, "f.conf", "x", NULL, &s, section, sizeof section, err, sizeof err), -1);
    assert_string_equal(err, "f.conf:2: NUL byte: not a text file");
    /* regression (issue 33 row 11): every bad line is reported, not only the first */
    const char many[] = "[a]\nmatch = x\napple_family_maxx = auto\nbogus = 1\nlog = loud\n[b c]\nfoo = 1\nlog = quiet\n"
                        "log = quiet\n[a]\nmatch = y\nmatch = z\n[d]\napple_family_max = auto\n";
    static char big_err[600];
    assert_int_equal(vzcaps_config_apply(many, sizeof many - 1, "f.conf", "x", NULL, &s, section, sizeof section, big_err, sizeof big_err), -1);
    assert_string_equal(big_err, "f.conf:3: unknown key apple_family_maxx (did you mean apple_family_max?); f.conf:4: unknown key bogus; "
                             "f.conf:5: log: \"loud\" is not quiet, normal or verbose; f.conf:6: bad section name: use letters, "
                             "digits, '_', '-' and '.'; f.conf:7: unknown key foo; f.conf:9: duplicate key log in the section "
                             "refused above; f.conf:10: duplicate section [a]; f.conf:12: duplicate key match in the section "
                             "refused above");
    assert_int_equal(s.set, 0);
    /* more than fit: what fits, then how many more, in one line that is never cut */
    static char lots[20000];
    size_t used = (size_t)snprintf(lots, sizeof lots, "[s]\n");
    for (int i = 0; i < 300; i++)
        used += (size_t)snprintf(lots + used, sizeof lots - used, "bogus%d = 1\n", i);
    assert_int_equal(vzcaps_config_apply(lots, used, "f.conf", "x", NULL, &s, section, sizeof section, big_err, sizeof big_err), -1);
    assert_true(strncmp(big_err, "f.conf:2: unknown key bogus0; f.conf:3: unknown key bogus1; ", 60) == 0);
    const char *tail = strstr(big_err, "; and ");
    assert_non_null(tail);
    unsigned more = 0, shown = 0;
    assert_int_equal(sscanf(tail, "; and %u more bad lines", &more), 1);
    for (const char *p = big_err; (p = strstr(p, "unknown key")); p++)
        shown++;
    assert_int_equal(shown + more, 300);
    assert_null(strchr(big_err, '\n'));
    /* CRLF line ends and blank lines are fine */
    const char crlf[] = "\r\n[a]\r\nmatch = x\r\napple_family_max = auto\r\n";
    assert_int_equal(vzcaps_config_apply(crlf, sizeof crlf - 1, "f.conf", "x", NULL, &s, section, sizeof section, err, sizeof err), 0);
    assert_string_equal(section, "a");
    assert_int_equal(s.family_mode, VZCAPS_FAMILY_AUTO);
    /* through configure: the refusal names file:line */
    memset(&FILES, 0, sizeof FILES);
    FILES.path[0] = "/c.conf";
    FILES.text[0] = "[s]\nbogus = 1\n";
    const char *env[] = {"VZCAPS_CONFIG=/c.conf", NULL};
    configure_file("x", env);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_string_equal(R.profile.notes[0], "/c.conf:2: unknown key bogus");
    /* a setting's origin in a file names its key (it read "/c.conf:2=auto needs ...") */
    FILES.text[0] = "[s]\napple_family_max = auto\n";
    const char *with_profile[] = {"VZCAPS_CONFIG=/c.conf", "VZCAPS_PROFILE=s", NULL};
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    struct vzcaps_inputs unknown_chip = {.envp = with_profile, .exe = "x", .read_file = fake_read};
    vzcaps_configure(&unknown_chip, buf, sizeof buf, &R);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_true(any_note_contains(&R.profile, "/c.conf:2: apple_family_max=auto needs the host chip"));
    FILES.text[0] = "[s]\napple_family_max = off\n";
    configure_file("x", with_profile);
    assert_true(any_note_contains(&R.profile, "/c.conf:2: apple_family_max is off"));
}

/* ---- helpers ---- */

static void test_glob_and_strip(void **st)
{
    (void)st;
    assert_true(vzcaps_glob_match("whisper-*", "whisper-cli"));
    assert_true(vzcaps_glob_match("python3*", "python3"));
    assert_true(vzcaps_glob_match("?lama", "llama"));
    assert_true(vzcaps_glob_match("*", ""));
    assert_true(vzcaps_glob_match("a*b*c", "axxbyyc"));
    assert_false(vzcaps_glob_match("a*b*c", "axxbyy"));
    assert_false(vzcaps_glob_match("llama", "llama-cli"));
    assert_false(vzcaps_glob_match("?", ""));
    char out[256];
    assert_int_equal(vzcaps_strip_library("/a/libvzcaps.so", ": ", "libvzcaps.so", out, sizeof out), 0);
    assert_string_equal(out, "");
    vzcaps_strip_library("/x/liba.so:/a/libvzcaps.so /y/libb.so", ": ", "libvzcaps.so", out, sizeof out);
    assert_string_equal(out, "/x/liba.so:/y/libb.so");
    vzcaps_strip_library("libvzcaps.so.bak:libvzcaps.so::", ":", "libvzcaps.so", out, sizeof out);
    assert_string_equal(out, "libvzcaps.so.bak");
    assert_int_equal(vzcaps_strip_library("/long/liba.so", ":", "libvzcaps.so", out, 5), -1);
    assert_true(vzcaps_list_names_library("/x/liba.so:/a/libvzcaps.so", ": ", "libvzcaps.so"));
    assert_true(vzcaps_list_names_library("libvzcaps.so", ":", "libvzcaps.so"));
    assert_true(vzcaps_list_names_library("/x/liba.so /a/libvzcaps.so", ": ", "libvzcaps.so"));
    assert_false(vzcaps_list_names_library("/a/libvzcaps.so.bak:/b/notlibvzcaps.so", ":", "libvzcaps.so"));
    assert_false(vzcaps_list_names_library("/libvzcaps.so/liba.so", ":", "libvzcaps.so"));
    assert_false(vzcaps_list_names_library("", ":", "libvzcaps.so"));
    assert_string_equal(vzcaps_basename("/usr/bin/llama-cli"), "llama-cli");
    assert_string_equal(vzcaps_basename("ollama"), "ollama");
    uint64_t v;
    assert_int_equal(vzcaps_parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(vzcaps_parse_u64("18446744073709551616", &v), -1);
}

static void test_describe(void **st)
{
    (void)st;
    const char *env[] = {"VZCAPS_APPLE_FAMILY_MAX=1009", NULL};
    configure_env(env, "Apple M1 Ultra (Virtual)", 0);
    char line[1024];
    vzcaps_profile_describe(&R.profile, "llama-bench", line, sizeof line);
    assert_string_equal(line, "configured for llama-bench: Apple families up to 1007 (Apple7): 1009 clamped to the real family of Apple M1 Ultra (from test)");
    assert_null(strchr(line, '\n'));
    const char *bad[] = {"VZCAPS_APPLE_FAMILY_MAX=nine", NULL};
    configure_env(bad, "Apple M1", 0);
    vzcaps_profile_describe(&R.profile, "x", line, sizeof line);
    assert_string_equal(line, "left stock for x: VZCAPS_APPLE_FAMILY_MAX: \"nine\" is not auto, off, 0, or an Apple family 1001..1010 (apple1..apple10); fix or unset it");
}

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

/* ---- launch.c: how macOS starts a process ---- */

static void test_protected_locations(void **st)
{
    (void)st;
    const char *yes[] = {"/bin/sh", "/usr/bin/env", "/usr/bin/python3", "/sbin/launchd", "/usr/sbin/sshd",
                         "/usr/libexec/path_helper", "/System/Library/x", "//usr//bin/env", "/usr/./bin/env",
                         "/USR/BIN/env", "/./bin/sh", "/usr/bin/sub/dir/x"};
    const char *no[] = {"/usr/local/bin/python3", "/opt/homebrew/bin/python3", "/usr/binx/env", "/usr/bin",
                        "/usr/bin/", "/binary", "usr/bin/env", "bin/sh", "", "/Library/Developer/CommandLineTools/usr/bin/python3",
                        "/Systemx/a", "/usr/lib/libSystem.B.dylib", "/usr/../usr/bin/env" /* not collapsed: resolve first */};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        assert_true(vzcaps_path_protected(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_false(vzcaps_path_protected(no[i]));
    assert_false(vzcaps_path_protected(NULL));
    assert_non_null(strstr(vzcaps_protected_dirs_text(), "/usr/libexec"));
}

static void test_shell_assignment_words(void **st)
{
    (void)st;
    /* what a POSIX shell takes for an assignment as a command's first word */
    assert_true(vzcaps_shell_word_is_assignment("a=b"));
    assert_true(vzcaps_shell_word_is_assignment("_X1="));
    assert_false(vzcaps_shell_word_is_assignment("./a=b"));
    assert_false(vzcaps_shell_word_is_assignment("/opt/a=b"));
    assert_false(vzcaps_shell_word_is_assignment("1a=b"));
    assert_false(vzcaps_shell_word_is_assignment("a-b=c"));
    assert_false(vzcaps_shell_word_is_assignment("=x"));
    assert_false(vzcaps_shell_word_is_assignment("plain"));
    assert_false(vzcaps_shell_word_is_assignment(""));
}

static void test_stock_reason(void **st)
{
    (void)st;
    static struct vzcaps_profile p;
    char why[VZCAPS_NOTE_LEN + 100];
    memset(&p, 0, sizeof p);
    p.state = VZCAPS_STOCK_UNCONFIGURED;
    assert_non_null(vzcaps_stock_reason(&p, why, sizeof why));
    assert_non_null(strstr(why, "out of scope"));
    p.state = VZCAPS_STOCK_OFF;
    assert_non_null(strstr(vzcaps_stock_reason(&p, why, sizeof why), "off"));
    p.state = VZCAPS_STOCK_REFUSED;
    snprintf(p.notes[0], sizeof p.notes[0], "the reason");
    p.n_notes = 1;
    assert_string_equal(vzcaps_stock_reason(&p, why, sizeof why), "refused: the reason");
    p.state = VZCAPS_ENABLED;
    assert_non_null(strstr(vzcaps_stock_reason(&p, why, sizeof why), "nothing to change"));
    p.apple_family_max = 1008;
    assert_non_null(strstr(vzcaps_stock_reason(&p, why, sizeof why), "callers is empty"));
    snprintf(p.callers, sizeof p.callers, "*");
    assert_null(vzcaps_stock_reason(&p, why, sizeof why));
    p.apple_family_max = 0, p.recommended_working_set_size = 1 << 30;
    assert_null(vzcaps_stock_reason(&p, why, sizeof why));
}

static void test_sip_and_inherit(void **st)
{
    (void)st;
    assert_int_equal(vzcaps_sip_parse("System Integrity Protection status: enabled.\n"), VZCAPS_SIP_ENABLED);
    assert_int_equal(vzcaps_sip_parse("System Integrity Protection status: disabled.\n"), VZCAPS_SIP_DISABLED);
    assert_int_equal(vzcaps_sip_parse("System Integrity Protection status: unknown (Custom Configuration).\n\nConfiguration:\n"
                                      "\tFilesystem Protections: disabled\n"), VZCAPS_SIP_UNKNOWN);
    assert_int_equal(vzcaps_sip_parse(""), VZCAPS_SIP_UNKNOWN);
    assert_int_equal(vzcaps_sip_parse(NULL), VZCAPS_SIP_UNKNOWN);
    assert_int_equal(vzcaps_sip_parse("System Integrity Protection status: enabledx"), VZCAPS_SIP_UNKNOWN);
    char why[600];
    /* not macOS: nothing to say */
    assert_int_equal(vzcaps_inherit_decision(false, VZCAPS_SIP_DISABLED, false, false, why, sizeof why), VZCAPS_INHERIT_OK);
    /* an arm64e slice does not make it safe (issue 26 item 3: Apple's arm64e programs refuse
     * third-party arm64e code); the refusal stands and says why */
    assert_int_equal(vzcaps_inherit_decision(true, VZCAPS_SIP_DISABLED, true, false, why, sizeof why), VZCAPS_INHERIT_REFUSED);
    assert_non_null(strstr(why, "whose arm64e slice Apple's arm64e programs do not accept"));
    /* SIP enabled: allowed, with what remains */
    assert_int_equal(vzcaps_inherit_decision(true, VZCAPS_SIP_ENABLED, false, false, why, sizeof why), VZCAPS_INHERIT_NOTE);
    assert_non_null(strstr(why, "Command Line Tools python3"));
    /* disabled or unknown: refused unless accepted */
    assert_int_equal(vzcaps_inherit_decision(true, VZCAPS_SIP_DISABLED, false, false, why, sizeof why), VZCAPS_INHERIT_REFUSED);
    assert_non_null(strstr(why, "SIP is disabled"));
    assert_non_null(strstr(why, "dyld would terminate them"));
    assert_int_equal(vzcaps_inherit_decision(true, VZCAPS_SIP_UNKNOWN, false, false, why, sizeof why), VZCAPS_INHERIT_REFUSED);
    assert_non_null(strstr(why, "unknown state"));
    assert_int_equal(vzcaps_inherit_decision(true, VZCAPS_SIP_DISABLED, false, true, why, sizeof why), VZCAPS_INHERIT_NOTE);
    /* arm64e clients by where they live */
    assert_string_equal(vzcaps_arm64e_client("/Library/Developer/CommandLineTools/usr/bin/python3"),
                        "Apple's Command Line Tools Python");
    assert_string_equal(vzcaps_arm64e_client("/Library/Developer/CommandLineTools/Library/Frameworks/Python3.framework/"
                                             "Versions/3.9/Resources/Python.app/Contents/MacOS/Python"),
                        "Apple's Command Line Tools Python");
    assert_string_equal(vzcaps_arm64e_client("/Applications/Xcode.app/Contents/Developer/usr/bin/python3"), "Xcode's Python");
    assert_string_equal(vzcaps_arm64e_client("/usr/bin/python3"), "a system program");
    assert_null(vzcaps_arm64e_client("/opt/homebrew/bin/python3"));
    assert_null(vzcaps_arm64e_client(NULL));
}

static void test_quarantine(void **st)
{
    (void)st;
    char out[200];
    const char v[] = "0083;5f1e2a3b;Safari;0F0B2C5E-1234-4C6F-8C1D-0123456789AB";
    assert_true(vzcaps_quarantine_describe(v, strlen(v), out, sizeof out));
    assert_string_equal(out, "quarantined (downloaded by Safari, flags 0083)");
    assert_true(vzcaps_quarantine_describe("00c1;5f1e2a3b;Google Chrome;", 29, out, sizeof out));
    assert_string_equal(out, "quarantined (downloaded by Google Chrome, flags 00c1)");
    /* the value is bytes, not a string: nothing past n is read */
    assert_true(vzcaps_quarantine_describe("0083XXXX", 4, out, sizeof out));
    assert_string_equal(out, "quarantined (flags 0083)");
    assert_true(vzcaps_quarantine_describe("", 0, out, sizeof out));
    assert_string_equal(out, "quarantined (the mark's value is not in the usual form)");
    /* an agent with control bytes or of any length is not quoted */
    assert_true(vzcaps_quarantine_describe("0083;1;Saf\x1b[2Jari;x", 20, out, sizeof out));
    assert_string_equal(out, "quarantined (flags 0083)");
    static char huge[5000];
    memset(huge, 'A', sizeof huge);
    memcpy(huge, "zz83;1;", 7);
    assert_true(vzcaps_quarantine_describe(huge, sizeof huge, out, sizeof out));
    assert_string_equal(out, "quarantined (the mark's value is not in the usual form)");
}

/* ---- did you mean: one suggestion for every name a user types ---- */

static void test_did_you_mean(void **st)
{
    (void)st;
    assert_int_equal(vzcaps_edit_distance("apple_family_maxx", "apple_family_max"), 1);
    assert_int_equal(vzcaps_edit_distance("FAMLY", "family"), 1); /* case is ignored */
    assert_int_equal(vzcaps_edit_distance("rnu", "run"), 1);       /* a swap is one edit */
    assert_int_equal(vzcaps_edit_distance("", "abc"), 3);
    const char *words[] = {"run", "check", NULL, "host"};
    assert_string_equal(vzcaps_did_you_mean("chekc", words, 4), "check");
    assert_null(vzcaps_did_you_mean("check", words, 4)); /* the word itself is no suggestion */
    assert_null(vzcaps_did_you_mean("frobnicate", words, 4));
    assert_null(vzcaps_did_you_mean("rx", words, 4)); /* short words: one edit at most */
    assert_string_equal(vzcaps_did_you_mean("RUN", words, 4), "run");
    /* numbers: the same value with leading zeros is a spelling, another value never is */
    const char *fams[] = {"apple1", "apple8", "apple10", "Apple M2 Pro"};
    assert_string_equal(vzcaps_did_you_mean("apple08", fams, 4), "apple8");
    assert_string_equal(vzcaps_did_you_mean("apple010", fams, 4), "apple10");
    assert_string_equal(vzcaps_did_you_mean("apple001", fams, 4), "apple1");
    assert_null(vzcaps_did_you_mean("apple11", fams, 4));
    assert_null(vzcaps_did_you_mean("apple80", fams, 4));
    assert_null(vzcaps_did_you_mean("apple18", fams, 4));
    assert_string_equal(vzcaps_did_you_mean("Apple M02 Pro", fams, 4), "Apple M2 Pro");
    assert_null(vzcaps_did_you_mean("Apple M2 Pro 1", fams, 4)); /* a number more */
    char long_word[200];
    memset(long_word, 'r', sizeof long_word - 1);
    long_word[sizeof long_word - 1] = '\0';
    assert_null(vzcaps_did_you_mean(long_word, words, 4));
    /* chips: the brand without "Apple ", a typo, never another generation */
    char chip[48];
    assert_true(vzcaps_chip_suggest("M2 Pro", chip, sizeof chip));
    assert_string_equal(chip, "Apple M2 Pro");
    assert_true(vzcaps_chip_suggest("m4 max (Virtual)", chip, sizeof chip));
    assert_string_equal(chip, "Apple M4 Max");
    assert_true(vzcaps_chip_suggest("Apple M2 Por", chip, sizeof chip));
    assert_string_equal(chip, "Apple M2 Pro");
    assert_true(vzcaps_chip_suggest("Aple A18 Pro", chip, sizeof chip));
    assert_string_equal(chip, "Apple A18 Pro");
    assert_false(vzcaps_chip_suggest("Apple M6", chip, sizeof chip));
    assert_false(vzcaps_chip_suggest("Apple M1 Turbo", chip, sizeof chip));
    assert_false(vzcaps_chip_suggest("Intel(R) Core(TM) i9", chip, sizeof chip));
    /* families */
    assert_string_equal(vzcaps_family_suggest("metl3"), "Metal3");
    assert_string_equal(vzcaps_family_suggest("comon3"), "Common3");
    assert_null(vzcaps_family_suggest("metal5")); /* a typo never changes a number */
    assert_null(vzcaps_family_suggest("apple11"));
    assert_string_equal(vzcaps_family_suggest("aple7"), "Apple7");

    /* where a user types them: a config key, a variable, a section, a family, a chip */
    struct vzcaps_settings s;
    char section[64], err[300] = "";
    memset(&s, 0, sizeof s);
    const char key[] = "[s]\napple_family_maxx = auto\n";
    assert_int_equal(vzcaps_config_apply(key, sizeof key - 1, "f.conf", "x", NULL, &s, section, sizeof section, err, sizeof err), -1);
    assert_string_equal(err, "f.conf:2: unknown key apple_family_maxx (did you mean apple_family_max?)");
    const char mtch[] = "[s]\nmach = x\n";
    assert_int_equal(vzcaps_config_apply(mtch, sizeof mtch - 1, "f.conf", "x", NULL, &s, section, sizeof section, err, sizeof err), -1);
    assert_string_equal(err, "f.conf:2: unknown key mach (did you mean match?)");
    const char sect[] = "[llama]\napple_family_max = auto\n";
    assert_int_equal(vzcaps_config_apply(sect, sizeof sect - 1, "f.conf", "x", "lama", &s, section, sizeof section, err, sizeof err), -1);
    assert_string_equal(err, "f.conf: no section [lama] (asked for by the profile; did you mean [llama]?)");
    const char *typo[] = {"VZCAPS_APPLE_FAMLY_MAX=auto", NULL};
    configure_env(typo, "Apple M2", 0);
    assert_int_equal(R.profile.state, VZCAPS_STOCK_REFUSED);
    assert_string_equal(R.profile.notes[0], "unknown variable VZCAPS_APPLE_FAMLY_MAX (did you mean VZCAPS_APPLE_FAMILY_MAX?)");
    const char *prof[] = {"VZCAPS_PROFLE=llama", NULL};
    configure_env(prof, "Apple M2", 0);
    assert_string_equal(R.profile.notes[0], "unknown variable VZCAPS_PROFLE (did you mean VZCAPS_PROFILE?)");
    const char *fam[] = {"VZCAPS_APPLE_FAMILY_MAX=aple8", NULL};
    configure_env(fam, "Apple M2", 0);
    assert_true(any_note_contains(&R.profile, "\"aple8\" is not auto, off, 0, or an Apple family 1001..1010 (did you mean apple8?)"));
    const char *extra[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_EXTRA_FAMILIES=metal3,mettal4", NULL};
    configure_env(extra, "Apple M2", 0);
    assert_true(any_note_contains(&R.profile, "unknown family \"mettal4\" (did you mean Metal4?)"));
    const char *chip_env[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_HOST_CHIP=M2 Pro", NULL};
    configure_env(chip_env, "Apple M1", 0);
    assert_string_equal(R.profile.notes[0], "VZCAPS_APPLE_FAMILY_MAX=auto needs a known host chip, and \"M2 Pro\" (from "
                                            "VZCAPS_HOST_CHIP) is not one (did you mean \"Apple M2 Pro\"?): fix VZCAPS_HOST_CHIP");
    /* the option a setting came from is named, not the variable it travels in */
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    const char *labels[] = {"VZCAPS_HOST_CHIP", "--chip", "VZCAPS_PROFILE", "--profile", NULL, NULL};
    struct vzcaps_inputs in = {.envp = chip_env, .exe = "x", .labels = labels};
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_true(any_note_contains(&R.profile, "(from --chip) is not one (did you mean \"Apple M2 Pro\"?): fix --chip"));
    const char *no_file[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_PROFILE=nosuch", NULL};
    in.envp = no_file;
    vzcaps_configure(&in, buf, sizeof buf, &R);
    assert_string_equal(R.profile.notes[0], "--profile is set but no config file was found: create one with a [nosuch] section, or drop --profile");
    /* a detected chip the table lacks keeps the advice to set the variable */
    const char *detected[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", NULL};
    configure_env(detected, "Apple M9", 0);
    assert_true(any_note_contains(&R.profile, "is not one: set VZCAPS_HOST_CHIP"));
}

/* ---- selective inheritance (inherit = matching, issue 26 item 4) ---- */

static size_t be(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
    return 4;
}

/* a fat header with the given (cputype, cpusubtype) slices */
static size_t fat(unsigned char *buf, const uint32_t (*archs)[2], uint32_t n)
{
    memset(buf, 0, 8 + 20 * n);
    be(buf, 0xcafebabe), be(buf + 4, n);
    for (uint32_t i = 0; i < n; i++)
        be(buf + 8 + 20 * i, archs[i][0]), be(buf + 12 + 20 * i, archs[i][1]);
    return 8 + 20 * n;
}

static void test_slices_of_an_executable(void **st)
{
    (void)st;
    unsigned char b[256];
    enum { ARM64 = 0x0100000c, X86 = 0x01000007 };
    const uint32_t universal[][2] = {{X86, 3}, {ARM64, 0}, {ARM64, 0x80000002u}}; /* arm64e with the ABI-version bits */
    const uint32_t apple[][2] = {{X86, 3}, {ARM64, 2}}, intel[][2] = {{X86, 3}}, mac[][2] = {{X86, 3}, {ARM64, 0}};
    assert_int_equal(vzcaps_slices_of(b, fat(b, universal, 3), 0), VZCAPS_SLICES_UNIVERSAL);
    assert_int_equal(vzcaps_slices_of(b, fat(b, apple, 2), 0), VZCAPS_SLICES_ARM64E_ONLY); /* Apple's programs */
    assert_int_equal(vzcaps_slices_of(b, fat(b, mac, 2), 0), VZCAPS_SLICES_ARM64);
    assert_int_equal(vzcaps_slices_of(b, fat(b, intel, 1), 0), VZCAPS_SLICES_NONE_KNOWN);
    size_t n = fat(b, universal, 3);
    assert_int_equal(vzcaps_slices_of(b, n - 1, 0), VZCAPS_SLICES_NONE_KNOWN); /* cut short */
    be(b + 4, 51); /* a Java class file shares the magic: 51 is its version, no slice count */
    assert_int_equal(vzcaps_slices_of(b, sizeof b, 0), VZCAPS_SLICES_NONE_KNOWN);
    /* thin, little-endian */
    const unsigned char thin64[] = {0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1, 0, 0, 0, 0};
    const unsigned char thin64e[] = {0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1, 2, 0, 0, 0x80};
    assert_int_equal(vzcaps_slices_of(thin64, sizeof thin64, 0), VZCAPS_SLICES_ARM64);
    assert_int_equal(vzcaps_slices_of(thin64e, sizeof thin64e, 0), VZCAPS_SLICES_ARM64E_ONLY);
    /* ELF: the rig's own machine only */
    unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1};
    elf[18] = 62;
    assert_int_equal(vzcaps_slices_of(elf, sizeof elf, 62), VZCAPS_SLICES_NATIVE);
    assert_int_equal(vzcaps_slices_of(elf, sizeof elf, 183), VZCAPS_SLICES_NONE_KNOWN);
    assert_int_equal(vzcaps_slices_of(elf, sizeof elf, 0), VZCAPS_SLICES_NONE_KNOWN);
    assert_int_equal(vzcaps_slices_of((const unsigned char *)"#!/bin/sh\n", 10, 62), VZCAPS_SLICES_NONE_KNOWN);
    assert_int_equal(vzcaps_slices_of(b, 0, 62), VZCAPS_SLICES_NONE_KNOWN);
}

static void test_config_match_patterns(void **st)
{
    (void)st;
    const char text[] = "[a]\nmatch = ollama llama-server # the server\napple_family_max = auto\n[b]\n  match\t=\tprobe\n"
                        "matchless = x\n[default]\napple_family_max = auto\n";
    char out[64];
    assert_int_equal(vzcaps_config_matches(text, sizeof text - 1, out, sizeof out), 25);
    assert_string_equal(out, "ollama llama-server probe");
    assert_int_equal(vzcaps_config_matches(text, sizeof text - 1, out, 10), -1); /* refused, never cut */
    assert_int_equal(vzcaps_config_matches("", 0, out, sizeof out), 0);
    assert_string_equal(out, "");
}

static void test_child_decision(void **st)
{
    (void)st;
    char why[300];
    const char *m = "ollama llama-* probe python3*";
    /* non-matching children: stripped whatever their slices */
    assert_int_equal(vzcaps_child_decision("/usr/bin/env", "env", m, VZCAPS_SLICES_ARM64E_ONLY, false, why, sizeof why),
                     VZCAPS_CHILD_STRIP);
    assert_string_equal(why, "no config section matches env");
    assert_int_equal(vzcaps_child_decision("/opt/x/helper", "helper", m, VZCAPS_SLICES_ARM64, true, why, sizeof why),
                     VZCAPS_CHILD_STRIP);
    assert_int_equal(vzcaps_child_decision("/x/probe", "probe", "", VZCAPS_SLICES_NATIVE, false, why, sizeof why),
                     VZCAPS_CHILD_STRIP); /* no patterns (no config file): nothing inherits */
    /* matching and loadable */
    assert_int_equal(vzcaps_child_decision("/x/llama-server", "llama-server", m, VZCAPS_SLICES_ARM64, false, why, sizeof why),
                     VZCAPS_CHILD_KEEP);
    assert_string_equal(why, "a config section matches llama-server, and it has a slice the library loads");
    assert_int_equal(vzcaps_child_decision("/x/probe", "probe", m, VZCAPS_SLICES_NATIVE, false, why, sizeof why), VZCAPS_CHILD_KEEP);
    /* arm64e-only: Apple's python3 matches python3*, but dyld would terminate it */
    assert_int_equal(vzcaps_child_decision("/usr/bin/python3", "python3", m, VZCAPS_SLICES_ARM64E_ONLY, false, why, sizeof why),
                     VZCAPS_CHILD_STRIP);
    assert_string_equal(why, "python3 is arm64e only, and the library has no arm64e slice (dyld would terminate it)");
    assert_int_equal(vzcaps_child_decision("/usr/bin/python3", "python3", m, VZCAPS_SLICES_ARM64E_ONLY, true, why, sizeof why),
                     VZCAPS_CHILD_KEEP);
    /* universal (arm64 and arm64e): which one runs is macOS's choice, so it needs arm64e too */
    assert_int_equal(vzcaps_child_decision("/x/ollama", "ollama", m, VZCAPS_SLICES_UNIVERSAL, false, why, sizeof why),
                     VZCAPS_CHILD_STRIP);
    assert_non_null(strstr(why, "holds an arm64e slice, which macOS may run"));
    assert_int_equal(vzcaps_child_decision("/x/ollama", "ollama", m, VZCAPS_SLICES_UNIVERSAL, true, why, sizeof why),
                     VZCAPS_CHILD_KEEP);
    /* slices not known (a script, unreadable): stripped */
    assert_int_equal(vzcaps_child_decision("/x/probe", "probe", m, VZCAPS_SLICES_NONE_KNOWN, true, why, sizeof why),
                     VZCAPS_CHILD_STRIP);
    assert_non_null(strstr(why, "slices are not known"));
    /* the name is argv[0]'s (what the child's own library reads), else the path's */
    assert_int_equal(vzcaps_child_decision("/x/real-binary", "/y/llama-cli", m, VZCAPS_SLICES_ARM64, false, why, sizeof why),
                     VZCAPS_CHILD_KEEP);
    assert_int_equal(vzcaps_child_decision("/x/llama-cli", "renamed", m, VZCAPS_SLICES_ARM64, false, why, sizeof why),
                     VZCAPS_CHILD_STRIP);
    assert_int_equal(vzcaps_child_decision("/x/llama-cli", "", m, VZCAPS_SLICES_ARM64, false, why, sizeof why), VZCAPS_CHILD_KEEP);
    assert_int_equal(vzcaps_child_decision(NULL, NULL, m, VZCAPS_SLICES_ARM64, false, why, sizeof why), VZCAPS_CHILD_STRIP);
    /* a hostile name stays on one line (the fuzzer's first find) */
    assert_int_equal(vzcaps_child_decision("/x", "llama-*\n\x1b[2J", m, VZCAPS_SLICES_ARM64, false, why, sizeof why),
                     VZCAPS_CHILD_KEEP);
    assert_string_equal(why, "a config section matches llama-*\\x0a\\x1b[2J, and it has a slice the library loads");
}

/* Issue 33 item 3: a stock run's environment (vzcaps_stock_env), from facts only. */
static void test_stock_environment(void **st)
{
    (void)st;
    static char mem[4096];
    char *const *out;
    char *env[] = {"HOME=/h", "PATH=/opt/shims:/usr/bin::/x/shims:/bin", "VZCAPS_APPLE_FAMILY_MAX=1009",
                   "LD_PRELOAD=/a/libasan.so /b/libvzcaps.so", "TART_METAL_X=1", "PATH=/later", "LD_PRELOAD=/x/libvzcaps.so",
                   NULL};
    assert_int_equal(vzcaps_path_entries("/opt/shims:/usr/bin::/x/shims:/bin"), 5);
    assert_int_equal(vzcaps_path_entries(""), 1);
    const bool shim_dir[] = {true, false, false, true, false};
    struct vzcaps_stock_env_in in = {env, shim_dir, 5, "LD_PRELOAD", ": ", "libvzcaps.so", NULL, 0};
    long need = vzcaps_stock_env(&in, NULL, 0, &out);
    assert_true(need > 0 && (size_t)need <= sizeof mem);
    assert_int_equal(vzcaps_stock_env(&in, mem, (size_t)need - 1, &out), need); /* too small: nothing written */
    assert_int_equal(vzcaps_stock_env(&in, mem, (size_t)need, &out), 0);
    assert_string_equal(out[0], "HOME=/h");
    assert_string_equal(out[1], "PATH=/usr/bin::/bin"); /* the empty entry (the current directory) stays */
    assert_string_equal(out[2], "LD_PRELOAD=/a/libasan.so"); /* another library stays, ours goes */
    assert_null(out[3]);                                    /* no entry of ours, no later duplicate */
    assert_string_equal(env[1], "PATH=/opt/shims:/usr/bin::/x/shims:/bin"); /* the caller's array untouched */
    /* a preload entry of ours only, and a PATH of shim directories only: both go */
    char *only[] = {"DYLD_INSERT_LIBRARIES=/u/lib/libvzcaps.dylib", "PATH=/s", "TERM=x", NULL};
    const bool all[] = {true};
    struct vzcaps_stock_env_in mac = {only, all, 1, "DYLD_INSERT_LIBRARIES", ":", "libvzcaps.dylib", NULL, 0};
    assert_int_equal(vzcaps_stock_env(&mac, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "TERM=x");
    assert_null(out[1]);
    /* nothing of ours, no shim directory: every entry as it was (the same strings) */
    char *clean[] = {"PATH=/usr/bin:/bin", "LD_PRELOAD=/a/x.so", NULL};
    const bool none[] = {false, false};
    struct vzcaps_stock_env_in c = {clean, none, 2, "LD_PRELOAD", ": ", "libvzcaps.so", NULL, 0};
    assert_int_equal(vzcaps_stock_env(&c, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "PATH=/usr/bin:/bin");
    assert_ptr_equal(out[1], clean[1]);
    assert_null(out[2]);
    /* fewer facts than entries: the entries past them are kept; a library named like ours in
     * another name is not ours */
    char *odd[] = {"PATH=/s:/t", "LD_PRELOAD=/a/libvzcaps.so.old", NULL};
    struct vzcaps_stock_env_in o = {odd, all, 1, "LD_PRELOAD", ": ", "libvzcaps.so", NULL, 0};
    assert_int_equal(vzcaps_stock_env(&o, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "PATH=/t");
    assert_string_equal(out[1], "LD_PRELOAD=/a/libvzcaps.so.old");
    /* issue 39 row 9: an element the caller found to be our library by what the file is goes,
     * whatever its name; elements are counted as split, empty ones too; facts past the list and
     * an element not marked stay */
    char *renamed[] = {"LD_PRELOAD=/a/x.so::/b/libmine.so /c/libvzcaps.so.old /d/y.so", NULL};
    const bool marks[] = {false, false, true, true, false, true};
    struct vzcaps_stock_env_in r = {renamed, none, 0, "LD_PRELOAD", ": ", "libvzcaps.so", marks, 6};
    assert_int_equal(vzcaps_stock_env(&r, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "LD_PRELOAD=/a/x.so:/d/y.so");
    assert_null(out[1]);
    const bool every[] = {true, true, true, true, true};
    r.lib_elem = every, r.n_lib = 5;
    assert_int_equal(vzcaps_stock_env(&r, mem, sizeof mem, &out), 0);
    assert_null(out[0]); /* every element ours: the entry goes */
    char buf[64];
    assert_int_equal(vzcaps_strip_library_facts("p:q:r", ":", "libvzcaps.so", marks + 2, 2, buf, sizeof buf), 1);
    assert_string_equal(buf, "r");
    /* no environment at all */
    char *empty[] = {NULL};
    o.envp = empty;
    assert_int_equal(vzcaps_stock_env(&o, mem, sizeof mem, &out), 0);
    assert_null(out[0]);
}

static void test_child_environment(void **st)
{
    (void)st;
    static char mem[4096];
    char *const *out;
    const char *saved[] = {"VZCAPS_APPLE_FAMILY_MAX=auto", "VZCAPS_INHERIT=matching"};
    char *clean[] = {"PATH=/bin", "LD_PRELOAD=/x/other.so", NULL};
    struct vzcaps_child_env_in in = {clean, saved, 2, "LD_PRELOAD", ": ", "libvzcaps.so", "/lib/libvzcaps.so", NULL, 0};
    /* strip, nothing of ours: the caller's own array, no memory */
    assert_int_equal(vzcaps_child_env(&in, false, NULL, 0, &out), 0);
    assert_ptr_equal(out, clean);
    /* keep: ours back, our library after the others; the caller's array untouched */
    long need = vzcaps_child_env(&in, true, NULL, 0, &out);
    assert_true(need > 0 && (size_t)need <= sizeof mem);
    assert_int_equal(vzcaps_child_env(&in, true, mem, (size_t)need - 1, &out), need); /* too small: nothing written */
    assert_int_equal(vzcaps_child_env(&in, true, mem, (size_t)need, &out), 0);
    assert_string_equal(out[0], "PATH=/bin");
    assert_string_equal(out[1], "LD_PRELOAD=/x/other.so:/lib/libvzcaps.so");
    assert_string_equal(out[2], "VZCAPS_APPLE_FAMILY_MAX=auto");
    assert_string_equal(out[3], "VZCAPS_INHERIT=matching");
    assert_null(out[4]);
    assert_string_equal(clean[1], "LD_PRELOAD=/x/other.so");
    /* keep with no preload entry: one naming only ours */
    char *bare[] = {"HOME=/h", NULL};
    in.envp = bare;
    assert_int_equal(vzcaps_child_env(&in, true, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "HOME=/h");
    assert_string_equal(out[1], "LD_PRELOAD=/lib/libvzcaps.so");
    assert_null(out[4]);
    /* strip an array that holds ours (a caller built it): no entry of ours, our library out,
     * an entry left empty goes */
    char *dirty[] = {"VZCAPS_APPLE_FAMILY_MAX=1008", "A=1", "LD_PRELOAD=/lib/libvzcaps.so", "TART_METAL_X=1", "B=2", NULL};
    in.envp = dirty;
    assert_int_equal(vzcaps_child_env(&in, false, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "A=1");
    assert_string_equal(out[1], "B=2");
    assert_null(out[2]);
    char *mixed[] = {"LD_PRELOAD=/a.so /lib/libvzcaps.so:/b.so", NULL};
    in.envp = mixed;
    assert_int_equal(vzcaps_child_env(&in, false, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "LD_PRELOAD=/a.so:/b.so");
    assert_null(out[1]);
    /* keep when the caller's preload already names us: once, after the others */
    assert_int_equal(vzcaps_child_env(&in, true, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "LD_PRELOAD=/a.so:/b.so:/lib/libvzcaps.so");
    assert_string_equal(mixed[0], "LD_PRELOAD=/a.so /lib/libvzcaps.so:/b.so");
    /* two preload entries (the fuzzer's find): the first speaks, the second goes; ours in neither */
    char *twice[] = {"LD_PRELOAD=/a.so", "X=1", "LD_PRELOAD=/lib/libvzcaps.so", NULL};
    in.envp = twice;
    assert_int_equal(vzcaps_child_env(&in, false, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "LD_PRELOAD=/a.so");
    assert_string_equal(out[1], "X=1");
    assert_null(out[2]);
    /* the library by what the file is (issue 45): a link named vz.so goes, as the stock runs drop it */
    char *link[] = {"LD_PRELOAD=/a.so:/x/vz.so", NULL}, *only[] = {"LD_PRELOAD=/x/vz.so", "B=2", NULL};
    bool lib[] = {false, true};
    in.envp = link, in.lib_elem = lib, in.n_lib = 2;
    assert_int_equal(vzcaps_child_env(&in, false, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "LD_PRELOAD=/a.so");
    assert_null(out[1]);
    in.envp = only, in.lib_elem = lib + 1, in.n_lib = 1;
    assert_int_equal(vzcaps_child_env(&in, false, mem, sizeof mem, &out), 0);
    assert_string_equal(out[0], "B=2");
    assert_null(out[1]);
}

static int n_allocs;
static void *count_alloc(void *ctx, size_t n)
{
    (void)ctx;
    n_allocs++;
    static char arena[4][256];
    return n <= sizeof arena[0] && n_allocs <= 4 ? arena[n_allocs - 1] : NULL;
}

/* The constructor's strip (default inherit): by name, and by what the file is for the first
 * preload entry; an entry that held only the library goes without a copy. */
static void test_children_environment_stripped(void **st)
{
    (void)st;
    char *env[] = {"A=1", "LD_PRELOAD=/x/vz.so", "VZCAPS_LOG=quiet", "LD_PRELOAD=/y/vz.so", "B=2", NULL};
    bool lib[] = {true};
    n_allocs = 0;
    assert_int_equal(vzcaps_env_strip(env, "LD_PRELOAD", ": ", "libvzcaps.so", lib, 1, count_alloc, NULL), 0);
    assert_string_equal(env[0], "A=1");
    assert_string_equal(env[1], "LD_PRELOAD=/y/vz.so"); /* a later entry: the name rule alone */
    assert_string_equal(env[2], "B=2");
    assert_null(env[3]);
    assert_int_equal(n_allocs, 0);
    char *mixed[] = {"LD_PRELOAD=/o.so /x/vz.so:/l/libvzcaps.so", "LD_PRELOAD=/o.so", NULL};
    bool marks[] = {false, true, false};
    assert_int_equal(vzcaps_env_strip(mixed, "LD_PRELOAD", ": ", "libvzcaps.so", marks, 3, count_alloc, NULL), 0);
    assert_string_equal(mixed[0], "LD_PRELOAD=/o.so");
    assert_string_equal(mixed[1], "LD_PRELOAD=/o.so"); /* nothing of ours: the same string, not a copy */
    assert_int_equal(n_allocs, 1);
    bool third[] = {false, false, true}; /* empty elements count */
    assert_int_equal(vzcaps_strip_library_facts("/o.so::/x/vz.so", ":", "libvzcaps.so", third, 3, NULL, 0), 5);
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_names_and_parse), cmocka_unit_test(test_chip_table),
        cmocka_unit_test(test_chip_names_copied_by_hand), cmocka_unit_test(test_string_helpers_match_libc),
        cmocka_unit_test(test_physical_memory_asked_when_needed),
        cmocka_unit_test(test_settings_values),        cmocka_unit_test(test_resolve_family_rules),
        cmocka_unit_test(test_resolve_floors),         cmocka_unit_test(test_resolve_refusals),
        cmocka_unit_test(test_compat_variables),       cmocka_unit_test(test_answer_matrix),
        cmocka_unit_test(test_answer_limits),          cmocka_unit_test(test_config_sections), cmocka_unit_test(test_config_search_order),
        cmocka_unit_test(test_config_search_in_configure),
        cmocka_unit_test(test_config_errors),          cmocka_unit_test(test_glob_and_strip),
        cmocka_unit_test(test_describe),               cmocka_unit_test(test_escape),
        cmocka_unit_test(test_clip_and_append_say_when_they_cut), cmocka_unit_test(test_environment_scan),
        cmocka_unit_test(test_file_trust),             cmocka_unit_test(test_launcher_target),
        cmocka_unit_test(test_rosetta_names_the_way_out), cmocka_unit_test(test_protected_locations),
        cmocka_unit_test(test_shell_assignment_words), cmocka_unit_test(test_stock_reason),
        cmocka_unit_test(test_sip_and_inherit),        cmocka_unit_test(test_quarantine),
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_statslog_record),        cmocka_unit_test(test_statslog_cut),
        cmocka_unit_test(test_log_file_values),        cmocka_unit_test(test_log_file_in_configure),
        cmocka_unit_test(test_slices_of_an_executable), cmocka_unit_test(test_config_match_patterns),
        cmocka_unit_test(test_program_handed),
        cmocka_unit_test(test_child_decision),         cmocka_unit_test(test_child_environment), cmocka_unit_test(test_stock_environment),
        cmocka_unit_test(test_children_environment_stripped),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
