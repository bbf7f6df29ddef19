/* build/test_core: the configuration files (sections, the search order, every error), the
 * helpers they use (globs, the library stripped from a list, describe) and the one suggestion for
 * every name a user types. Files come from the fake reader of test_core.c, never the disk. */
#include "core_tests.h"

/* ---- config files ---- */

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

UNIT_TESTS(core_config_tests,
           cmocka_unit_test(test_config_sections),
           cmocka_unit_test(test_config_search_order),
           cmocka_unit_test(test_config_search_in_configure),
           cmocka_unit_test(test_config_errors),
           cmocka_unit_test(test_glob_and_strip),
           cmocka_unit_test(test_describe),
           cmocka_unit_test(test_did_you_mean));
