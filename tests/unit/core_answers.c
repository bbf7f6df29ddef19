/* build/test_core: what the core answers. Families and their names, the chip table, the settings
 * and how they resolve (rules, floors, refusals, the compatible variables), and the whole family x
 * profile answer matrix. Tests of values only: nothing here reads a file. */
#include "core_tests.h"

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

UNIT_TESTS(core_answers_tests,
           cmocka_unit_test(test_family_names_and_parse),
           cmocka_unit_test(test_chip_table),
           cmocka_unit_test(test_chip_names_copied_by_hand),
           cmocka_unit_test(test_string_helpers_match_libc),
           cmocka_unit_test(test_physical_memory_asked_when_needed),
           cmocka_unit_test(test_settings_values),
           cmocka_unit_test(test_resolve_family_rules),
           cmocka_unit_test(test_resolve_floors),
           cmocka_unit_test(test_resolve_refusals),
           cmocka_unit_test(test_compat_variables),
           cmocka_unit_test(test_answer_matrix),
           cmocka_unit_test(test_answer_limits));
