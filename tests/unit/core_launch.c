/* build/test_core: how macOS starts a process (launch.c: protected locations, shell words, the
 * stock reason, SIP and inheritance, quarantine) and the selective inheritance of issue 26: the
 * slices of an executable, the child's decision and environment. No process is started. */
#include "core_tests.h"

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

UNIT_TESTS(core_launch_tests,
           cmocka_unit_test(test_protected_locations),
           cmocka_unit_test(test_shell_assignment_words),
           cmocka_unit_test(test_stock_reason),
           cmocka_unit_test(test_sip_and_inherit),
           cmocka_unit_test(test_quarantine),
           cmocka_unit_test(test_slices_of_an_executable),
           cmocka_unit_test(test_config_match_patterns),
           cmocka_unit_test(test_child_decision),
           cmocka_unit_test(test_stock_environment),
           cmocka_unit_test(test_child_environment),
           cmocka_unit_test(test_children_environment_stripped));
