#define _POSIX_C_SOURCE 200809L
/* Unit tests of the launch floor's one decision (src/launch/decide.c): facts in, plan out, and the
 * gate's verdict; and the rules it is decided by (src/core/exec_rules.c: xnu's #! line and image
 * activators, Libc's and glibc's execvp search, BSD env). Every case is built from facts alone:
 * no file is read, no PATH is searched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "../../src/launch/launch.h"

static struct launch_facts f;
static struct launch_plan p;
static char *cmd[3];

/* Facts for `NAME ARG`: exec finds it at first, a program (not a script). */
static void program(const char *name, const char *first)
{
    memset(&f, 0, sizeof f);
    cmd[0] = (char *)name, cmd[1] = "arg", cmd[2] = NULL;
    f.cmd = cmd;
    snprintf(f.name.found, sizeof f.name.found, "%s", first);
    snprintf(f.name.k.image, sizeof f.name.k.image, "%s", first);
}

/* What exec finds is a vzcaps shim, and real the program it stands for ("": none). */
static void shimmed(const char *real)
{
    snprintf(f.name.shim, sizeof f.name.shim, "%s", f.name.found);
    snprintf(f.name.found, sizeof f.name.found, "%s", real);
    snprintf(f.name.k.image, sizeof f.name.k.image, "%s", real);
    if (!real[0]) {
        f.name.rc = 127;
        snprintf(f.name.why, sizeof f.name.why, "no llama-server on PATH after the shim directory /s");
    }
}

/* Where cmd[0] leads is not found (127, nothing there) or cannot start (126, why). */
static void not_found(int rc, const char *why)
{
    f.name.rc = rc;
    f.name.k.exists = rc == 126;
    snprintf(f.name.why, sizeof f.name.why, "%s", why);
}

static void test_a_program_starts_as_found(void **st)
{
    (void)st;
    program("llama-server", "/opt/bin/llama-server");
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_true(p.found);
    assert_string_equal(p.target, "/opt/bin/llama-server");
    assert_string_equal(p.exec_path, "/opt/bin/llama-server");
    assert_string_equal(p.image, "/opt/bin/llama-server");
    assert_string_equal(p.exe, "llama-server");
    assert_ptr_equal(p.exec_argv, cmd);
    assert_false(p.by_path);
    assert_int_equal(p.n_notes, 0);
    assert_string_equal(launch_plan_injection(&p), "honoured");
}

static void test_not_found_stops_but_a_dry_run_gets_a_plan(void **st)
{
    (void)st;
    program("nope", "");
    not_found(127, "not found");
    assert_int_equal(launch_decide(&f, &p, false), 127);
    assert_int_equal(launch_decide(&f, &p, true), 0);
    assert_int_equal(p.rc, 127);
    assert_false(p.found);
    assert_string_equal(p.why, "not found");
    assert_string_equal(p.target, "nope");
    assert_string_equal(launch_plan_injection(&p), "unknown");
}

static void test_a_shim_by_name_starts_its_real_program(void **st)
{
    (void)st;
    program("llama-server", "/s/llama-server");
    shimmed("/opt/bin/llama-server");
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_string_equal(p.target, "/opt/bin/llama-server");
    assert_string_equal(p.image, "/opt/bin/llama-server");
    assert_true(p.by_path);
    assert_int_equal(p.n_notes, 1);
    assert_false(p.warning[0]);
    assert_string_equal(p.notes[0],
                        "llama-server on PATH is a vzcaps shim (/s/llama-server); starting the real one, /opt/bin/llama-server");
}

static void test_a_shim_by_path_resolves_as_by_name(void **st)
{
    (void)st;
    program("/s/llama-server", "/s/llama-server");
    shimmed("/opt/bin/llama-server");
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_string_equal(p.target, "/opt/bin/llama-server");
    assert_string_equal(p.exec_path, "/opt/bin/llama-server");
    assert_true(p.by_path);
    assert_string_equal(p.notes[0], "/s/llama-server is a vzcaps shim; starting the real one, /opt/bin/llama-server, as the shim would");
}

static void test_a_shim_with_nothing_behind_it_cannot_start(void **st)
{
    (void)st;
    program("llama-server", "/s/llama-server");
    shimmed("");
    assert_int_equal(launch_decide(&f, &p, false), 127);
    assert_false(p.found);
    assert_string_equal(p.why, "llama-server on PATH is a vzcaps shim (/s/llama-server), and there is no other llama-server "
                               "on PATH after it");
    program("/s/llama-server", "/s/llama-server");
    shimmed("");
    assert_int_equal(launch_decide(&f, &p, true), 0);
    assert_string_equal(p.why, "/s/llama-server is a vzcaps shim, and no llama-server on PATH after the shim directory /s");
}

static void test_the_loader_ignores_static_and_setuid_programs(void **st)
{
    (void)st;
    program("tool", "/opt/tool");
    f.elf_static = true;
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_string_equal(launch_plan_injection(&p), "ignored");
    assert_int_equal(p.n_notes, 1);
    assert_true(p.warning[0]);
    assert_non_null(strstr(p.notes[0], "/opt/tool will ignore the library: a statically linked executable"));
    program("tool", "/opt/tool");
    f.setugid = true;
    launch_decide(&f, &p, false);
    assert_string_equal(launch_plan_injection(&p), "ignored");
    assert_non_null(strstr(p.notes[0], "setuid/setgid bits"));
}

/* The target's #! line, as the kernel reads it, with err its answer (0: the interpreter runs). */
static void line(const char *text, int err)
{
    char why[200];
    f.name.k.script = true;
    f.name.k.err = err;
    assert_int_equal(vzcaps_shebang_parse(text, strlen(text), &f.name.k.sb, why, sizeof why), 1);
    snprintf(f.name.k.image, sizeof f.name.k.image, "%s", vzcaps_shebang_word(&f.name.k.sb, 0));
    snprintf(f.name.k.why, sizeof f.name.k.why, "its interpreter /w/inner: not a program the kernel runs (a script itself)");
}

static void test_a_script_loads_the_library_into_its_interpreter(void **st)
{
    (void)st;
    program("job", "/w/job");
    line("#!/opt/python3\n", 0);
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_string_equal(p.image, "/opt/python3");
    assert_string_equal(p.exe, "job"); /* the script's own name: the one match meets (docs/config.md) */
    assert_string_equal(p.exec_path, "/w/job");
    assert_string_equal(p.line, "#!/opt/python3");
    f.name.k.protected_image = true; /* SIP removes the injection there */
    launch_decide(&f, &p, false);
    assert_string_equal(launch_plan_injection(&p), "removed");
}

static void test_what_the_kernel_runs_no_image_for_runs_with_bin_sh(void **st)
{
    (void)st;
    program("./job", "./job"); /* its interpreter is a script: one #! level, ENOEXEC, execvp's /bin/sh */
    line("#!/w/inner -x\n", ENOEXEC);
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_true(p.via_sh && p.script);
    assert_string_equal(p.exec_path, "/bin/sh");
    assert_string_equal(p.exec_argv[0], "./job"); /* Libc keeps the caller's argv[0] (exec.c:252-255) */
    assert_string_equal(p.exec_argv[1], "./job");
    assert_string_equal(p.exec_argv[2], "arg");
    assert_null(p.exec_argv[3]);
    assert_string_equal(p.image, "/bin/sh");
    assert_string_equal(launch_plan_injection(&p), "removed");
    assert_non_null(strstr(p.notes[0], "(its interpreter /w/inner: not a program the kernel runs (a script itself)), so execvp starts "
                                       "it with /bin/sh, which is a program SIP protects"));
    launch_plan_free(&p);
}

/* ---- the gate ---- */

static struct vzcaps_profile prof;

static void enabled(const char *callers, const char *stock)
{
    memset(&prof, 0, sizeof prof);
    prof.state = VZCAPS_ENABLED;
    prof.apple_family_max = 1008;
    prof.scoped = true;
    snprintf(prof.callers, sizeof prof.callers, "%s", callers);
    snprintf(prof.stock_callers, sizeof prof.stock_callers, "%s", stock);
}

static enum launch_gate gate(bool with_facts, char *why, size_t len)
{
    if (with_facts)
        launch_decide(&f, &p, true);
    return launch_gate(&prof, with_facts ? &f : NULL, with_facts ? &p : NULL, why, len);
}

static void test_the_gate_passes_a_shim_that_unlocks(void **st)
{
    (void)st;
    char why[9000];
    enabled("*", "libtorch*");
    program("llama-server", "/s/llama-server");
    shimmed("/opt/bin/llama-server");
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
    assert_string_equal(why, "llama-server starts /opt/bin/llama-server through its shim, with the library, which changes its answers");
    assert_int_equal(gate(false, why, sizeof why), LAUNCH_GATE_CHANGES); /* no program named: the configuration alone */
}

static void test_the_gate_finds_an_all_stock_scope(void **st)
{
    (void)st;
    char why[9000];
    program("llama-server", "/s/llama-server");
    shimmed("/opt/bin/llama-server");
    enabled("*", "*");
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_STOCK);
    assert_string_equal(why, "out of scope: stock_callers * leaves every caller stock (callers *)");
    enabled("*", "libfoo* **");
    assert_int_equal(gate(false, why, sizeof why), LAUNCH_GATE_STOCK);
    enabled("libggml* llama-server", "llama-server libggml*");
    assert_int_equal(gate(false, why, sizeof why), LAUNCH_GATE_STOCK);
    enabled("libggml* llama-server", "libggml*"); /* llama-server's own calls still get the answers */
    assert_int_equal(gate(false, why, sizeof why), LAUNCH_GATE_CHANGES);
    enabled("", ""); /* callers = none: the core's reason */
    assert_int_equal(gate(false, why, sizeof why), LAUNCH_GATE_STOCK);
    assert_non_null(strstr(why, "callers is empty"));
    enabled("*", "*");
    prof.scoped = false; /* no scope at all: every caller gets the answers */
    assert_int_equal(gate(false, why, sizeof why), LAUNCH_GATE_CHANGES);
}

static void test_the_gate_follows_what_path_resolves_to(void **st)
{
    (void)st;
    char why[9000];
    enabled("*", "");
    program("llama-server", "/opt/bin/llama-server"); /* started with the library (run): no shim needed */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
    assert_string_equal(why, "llama-server starts /opt/bin/llama-server, with the library, which changes its answers");
    program("llama-server", "/s/llama-server");
    shimmed("");
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CANNOT_START);
    assert_non_null(strstr(why, ": it exits 127"));
    program("llama-server", "");
    not_found(127, "not found"); /* not here at all: judged by the configuration alone */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
    program("llama-server", "");
    not_found(126, "not a regular file"); /* a FIFO or a directory by that name, and nothing exec would start */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CANNOT_START);
    assert_string_equal(why, "llama-server: not a regular file");
}

static void test_the_gate_knows_where_the_loader_will_not_inject(void **st)
{
    (void)st;
    char why[9000];
    enabled("*", "");
    program("llama-server", "/s/llama-server");
    shimmed("/opt/bin/llama-server");
    f.elf_static = true;
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_STOCK);
    assert_non_null(strstr(why, "the injection is ignored where the library would load (/opt/bin/llama-server): "));
    assert_non_null(strstr(why, "a statically linked executable"));
}

static void test_the_gate_knows_what_the_guest_answers_and_who_calls(void **st)
{
    (void)st;
    char why[9000];
    static char libs[] = "libggml-metal.dylib\nlibc.so.6\n";
    program("llama-server", "/s/llama-server");
    shimmed("/opt/bin/llama-server");
    enabled("*", "");
    prof.apple_family_max = 1005; /* the guest answers Apple5 already: nothing is raised */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_STOCK);
    assert_non_null(strstr(why, "nothing to change: the guest already answers Apple5"));
    prof.apple_family_max = 1006;
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
    f.libs = libs;
    enabled("libggml*", ""); /* the program links a library the scope names */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
    enabled("libfoo*", "");
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_STOCK);
    assert_string_equal(why, "out of scope: callers libfoo* (stock_callers none) leaves out llama-server and every library it links");
    enabled("*", "llama-server"); /* '*' alone names no library: the program's own calls are stock */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_STOCK);
    f.libs = NULL; /* libraries unknown: it can */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
}

/* ---- the rules: xnu's #! line and image activators, Libc's and glibc's search, BSD env ---- */

static int parse(const char *text, size_t n, struct vzcaps_shebang *sb, char *why)
{
    return vzcaps_shebang_parse(text, n ? n : strlen(text), sb, why, 200);
}

static void test_shebang_lines_as_exec_shell_imgact_reads_them(void **st)
{
    (void)st;
    static struct vzcaps_shebang sb;
    char why[200];
    assert_int_equal(parse("print(1)\n", 0, &sb, why), 0);
    assert_int_equal(parse("#", 1, &sb, why), 0);
    assert_int_equal(parse("# !/bin/sh\n", 0, &sb, why), 0);
    /* each line: its length (0: as a string), the words, and one of them (word i) */
    static const struct {
        const char *text;
        size_t n, words, i;
        const char *word;
    } lines[] = {
        {"#!/bin/sh\necho\n", 0, 1, 0, "/bin/sh"},
        {"#! \t/usr/bin/env  python3 \t-u -E  \nrest", 0, 4, 3, "-E"},
        {"#!/usr/bin/env python3 # -*- coding: utf-8 -*-\n", 0, 2, 1, "python3"}, /* '#' ends it (kern_exec.c:333, IS_EOL) */
        {"#!/bin/sh#x\n", 0, 1, 0, "/bin/sh"},
        {"#!/bin/sh #", 0, 1, 0, "/bin/sh"}, /* no newline, but a '#' */
        {"#!/bin/sh\r\n", 0, 1, 0, "/bin/sh\r"}, /* a carriage return is part of the word */
        {"#!/bin/s\x1b[0mh\n", 0, 1, 0, "/bin/s\x1b[0mh"}, /* so is a control byte */
        {"#!/bin/s\0h x\n", 13, 1, 0, "/bin/s"}, /* a NUL ends the words */
        {"#!/bin/sh \0x\n", 13, 2, 1, ""},
    };
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; k++) {
        assert_int_equal(parse(lines[k].text, lines[k].n, &sb, why), 1);
        assert_int_equal(sb.n_words, lines[k].words);
        assert_string_equal(vzcaps_shebang_word(&sb, lines[k].i), lines[k].word);
        assert_null(vzcaps_shebang_word(&sb, sb.n_words));
    }
    /* the file ends without one: the zero-filled page holds no end of line (ENOEXEC) */
    assert_int_equal(parse("#!/bin/sh", 0, &sb, why), -1);
    assert_non_null(strstr(why, "does not end"));
    assert_int_equal(parse("#!\n", 0, &sb, why), -1);
    assert_non_null(strstr(why, "no interpreter"));
    assert_int_equal(parse("#!  \t \n/bin/sh\n", 0, &sb, why), -1);
    assert_int_equal(parse("#! # /bin/sh\n", 0, &sb, why), -1);
    /* 512 bytes: the end of the line at byte 511 is read, at 512 it is not, end of file or not */
    static char big[4096];
    memset(big, 'a', sizeof big);
    memcpy(big, "#!/", 3);
    big[VZCAPS_SHEBANG_MAX - 1] = '\n';
    assert_int_equal(parse(big, sizeof big, &sb, why), 1);
    assert_int_equal(strlen(vzcaps_shebang_word(&sb, 0)), VZCAPS_SHEBANG_MAX - 3);
    big[VZCAPS_SHEBANG_MAX - 1] = 'a';
    big[VZCAPS_SHEBANG_MAX] = '\n';
    assert_int_equal(parse(big, sizeof big, &sb, why), -1);
    assert_int_equal(parse(big, VZCAPS_SHEBANG_MAX, &sb, why), -1);
    memset(big, 0, sizeof big); /* the most words a line can hold */
    memcpy(big, "#!", 2);
    for (size_t i = 2; i + 1 < VZCAPS_SHEBANG_MAX; i += 2)
        big[i] = 'x', big[i + 1] = ' ';
    big[VZCAPS_SHEBANG_MAX - 1] = '\n';
    assert_int_equal(parse(big, VZCAPS_SHEBANG_MAX, &sb, why), 1);
    assert_int_equal(sb.n_words, (VZCAPS_SHEBANG_MAX - 2) / 2);
}

static void test_image_activators(void **st)
{
    (void)st;
    unsigned char h[32] = {0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1, 0, 0, 0, 0, 2}; /* MH_MAGIC_64, arm64, MH_EXECUTE */
    assert_int_equal(vzcaps_exec_claims(h, sizeof h, false), VZCAPS_EXEC_IMAGE);
    assert_int_equal(vzcaps_exec_claims(h, 4, false), VZCAPS_EXEC_NONE); /* no MH_EXECUTE to read */
    h[12] = 6; /* MH_DYLIB */
    assert_int_equal(vzcaps_exec_claims(h, sizeof h, false), VZCAPS_EXEC_NONE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"\xca\xfe\xba\xbe", 4, false), VZCAPS_EXEC_IMAGE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"\xbe\xba\xfe\xca", 4, false), VZCAPS_EXEC_NONE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"\xca\xfe\xba\xbf", 4, false), VZCAPS_EXEC_NONE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"\177ELF", 4, false), VZCAPS_EXEC_NONE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"\177ELF", 4, true), VZCAPS_EXEC_IMAGE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"#!", 2, false), VZCAPS_EXEC_SCRIPT);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"echo", 4, true), VZCAPS_EXEC_NONE);
    assert_int_equal(vzcaps_exec_claims((const unsigned char *)"", 0, true), VZCAPS_EXEC_NONE);
}

static void test_the_search_by_libc_and_by_glibc(void **st)
{
    (void)st;
    assert_string_equal(vzcaps_search_path(NULL, true), "/usr/bin:/bin");
    assert_string_equal(vzcaps_search_path(NULL, false), "/bin:/usr/bin");
    const char *want[] = {"a", ".", "b", "."}, *p = "a::b:", *dir;
    size_t n, i = 0;
    while (vzcaps_path_entry(&p, &dir, &n))
        assert_true(i < 4 && n == strlen(want[i]) && strncmp(dir, want[i++], n) == 0);
    assert_int_equal(i, 4);
    p = vzcaps_search_path("", true); /* set but empty: the current directory */
    assert_true(vzcaps_path_entry(&p, &dir, &n) && n == 1 && *dir == '.' && !vzcaps_path_entry(&p, &dir, &n));
    for (int darwin = 0; darwin < 2; darwin++) {
        bool eacces = false;
        assert_int_equal(vzcaps_search_step(ENOEXEC, true, darwin, &eacces), VZCAPS_SEARCH_SHELL);
        assert_int_equal(vzcaps_search_step(ENOENT, false, darwin, &eacces), VZCAPS_SEARCH_NEXT);
        assert_int_equal(vzcaps_search_step(ENOTDIR, false, darwin, &eacces), VZCAPS_SEARCH_NEXT);
        assert_int_equal(vzcaps_search_step(ELOOP, false, darwin, &eacces), darwin ? VZCAPS_SEARCH_NEXT : VZCAPS_SEARCH_STOP);
        assert_int_equal(vzcaps_search_step(ENAMETOOLONG, false, darwin, &eacces), darwin ? VZCAPS_SEARCH_NEXT : VZCAPS_SEARCH_STOP);
        assert_false(eacces);
        assert_int_equal(vzcaps_search_step(EACCES, false, darwin, &eacces), VZCAPS_SEARCH_NEXT);
        assert_true(eacces == !darwin); /* Libc: stat(2) fails, a directory we may not search: not a denied file */
        assert_int_equal(vzcaps_search_step(EACCES, true, darwin, &eacces), VZCAPS_SEARCH_NEXT);
        assert_true(eacces);
        assert_int_equal(vzcaps_search_step(EPERM, true, darwin, &eacces), VZCAPS_SEARCH_STOP);
        assert_int_equal(vzcaps_search_step(EPERM, false, darwin, &eacces), darwin ? VZCAPS_SEARCH_NEXT : VZCAPS_SEARCH_STOP);
        assert_int_equal(vzcaps_search_step(E2BIG, false, darwin, &eacces), VZCAPS_SEARCH_STOP);
        assert_int_equal(vzcaps_search_step(ESTALE, true, darwin, &eacces), darwin ? VZCAPS_SEARCH_STOP : VZCAPS_SEARCH_NEXT);
    }
    assert_string_equal(vzcaps_search_sh_argv0("job", true), "job");
    assert_string_equal(vzcaps_search_sh_argv0(NULL, true), "sh");
    assert_string_equal(vzcaps_search_sh_argv0("job", false), "/bin/sh");
}

static int env_of(const char *text, size_t *name, char *why)
{
    static struct vzcaps_shebang sb;
    assert_int_equal(parse(text, 0, &sb, why), 1);
    int e = vzcaps_shebang_env(&sb, name, why, 200);
    if (e == 1)
        strcpy(why, vzcaps_shebang_word(&sb, *name));
    return e;
}

static void test_env_as_bsd_env_reads_its_options(void **st)
{
    (void)st;
    size_t name;
    char why[200];
    assert_int_equal(env_of("#!/bin/sh\n", &name, why), 0);
    assert_int_equal(env_of("#!/usr/bin/envy x\n", &name, why), 0);
    /* env by path, never by name (issue 25 row 11): a user's env is a program of its own */
    assert_int_equal(env_of("#!/path/to/your/env sh\n", &name, why), 0);
    assert_int_equal(env_of("#!./tools/env sh\n", &name, why), 0);
    assert_int_equal(env_of("#!/bin/env python3\n", &name, why), 0); /* not macOS's env */
    assert_int_equal(env_of("#!//usr/./bin//env python3\n", &name, why), 1);
    assert_int_equal(env_of("#!/USR/bin/ENV python3\n", &name, why), 1);
    assert_false(vzcaps_path_is_system_env("/usr/bin/env/x"));
    assert_false(vzcaps_path_is_system_env("usr/bin/env"));
    assert_int_equal(env_of("#!/usr/bin/env python3 -u -E\n", &name, why), 1);
    assert_int_equal(name, 1);
    assert_string_equal(why, "python3");
    assert_int_equal(env_of("#!/usr/bin/env -S python3 -u\n", &name, why), 1);
    assert_int_equal(name, 2);
    assert_int_equal(env_of("#!/usr/bin/env -- python3\n", &name, why), 1);
    assert_int_equal(env_of("#!/usr/bin/env -S -- python3\n", &name, why), 1);
    assert_int_equal(name, 3);
    assert_int_equal(env_of("#!/usr/bin/env python3 # -S is a comment\n", &name, why), 1);
    /* what starting NAME directly cannot reproduce */
    assert_int_equal(env_of("#!/usr/bin/env -i python3\n", &name, why), -1);
    assert_non_null(strstr(why, "option -i"));
    assert_int_equal(env_of("#!/usr/bin/env --split-string python3 -u\n", &name, why), -1); /* no long options */
    assert_non_null(strstr(why, "no long options"));
    assert_int_equal(env_of("#!/usr/bin/env -Spython3\n", &name, why), -1);
    assert_int_equal(env_of("#!/usr/bin/env -u HOME python3\n", &name, why), -1);
    assert_int_equal(env_of("#!/usr/bin/env PYTHONPATH=/x python3\n", &name, why), -1);
    assert_non_null(strstr(why, "sets a variable"));
    assert_int_equal(env_of("#!/usr/bin/env\n", &name, why), -2);
    assert_non_null(strstr(why, "no program"));
    assert_int_equal(env_of("#!/usr/bin/env -S\n", &name, why), -2);
    assert_int_equal(env_of("#!/usr/bin/env -S python3 \"-c\"\n", &name, why), -1);
    assert_non_null(strstr(why, "quotes"));
    assert_int_equal(env_of("#!/usr/bin/env -S python3 $HOME\n", &name, why), -1);
    assert_int_equal(env_of("#!/usr/bin/env python3 $HOME\n", &name, why), 1); /* no -S: a plain word */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_program_starts_as_found),
        cmocka_unit_test(test_not_found_stops_but_a_dry_run_gets_a_plan),
        cmocka_unit_test(test_a_shim_by_name_starts_its_real_program),
        cmocka_unit_test(test_a_shim_by_path_resolves_as_by_name),
        cmocka_unit_test(test_a_shim_with_nothing_behind_it_cannot_start),
        cmocka_unit_test(test_the_loader_ignores_static_and_setuid_programs),
        cmocka_unit_test(test_a_script_loads_the_library_into_its_interpreter),
        cmocka_unit_test(test_what_the_kernel_runs_no_image_for_runs_with_bin_sh),
        cmocka_unit_test(test_the_gate_passes_a_shim_that_unlocks),
        cmocka_unit_test(test_the_gate_finds_an_all_stock_scope),
        cmocka_unit_test(test_the_gate_follows_what_path_resolves_to),
        cmocka_unit_test(test_the_gate_knows_where_the_loader_will_not_inject),
        cmocka_unit_test(test_the_gate_knows_what_the_guest_answers_and_who_calls),
        cmocka_unit_test(test_shebang_lines_as_exec_shell_imgact_reads_them),
        cmocka_unit_test(test_image_activators),
        cmocka_unit_test(test_the_search_by_libc_and_by_glibc),
        cmocka_unit_test(test_env_as_bsd_env_reads_its_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
