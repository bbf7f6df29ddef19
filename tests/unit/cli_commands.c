/* build/test_cli_units: the subcommands' own decisions: run's chip for x86_64 targets, the
 * bundle's verdicts, device classes and crash reports, the macOS 14 guest hazard, the command
 * table behind help and the completions, wrapping, and launchd --install's domain and plist
 * with the stand-in launchctl (tests/cli/standins). */
#define _POSIX_C_SOURCE 200809L
#include "cli_tests.h"

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

UNIT_TESTS(cli_commands_tests,
           cmocka_unit_test(test_run_passes_the_native_chip_to_x86_64_targets),
           cmocka_unit_test(test_bundle_verdicts),
           cmocka_unit_test(test_nocopy_guest_hazard),
           cmocka_unit_test(test_command_table_for_help_and_completions),
           cmocka_unit_test(test_wrap),
           cmocka_unit_test(test_bundle_device_classes_and_crash_reports),
           cmocka_unit_test(test_launchd_domain_gui_or_user),
           cmocka_unit_test(test_launchd_plist_session_type_per_domain));
