#define _POSIX_C_SOURCE 200809L
/* Unit tests of the launch floor's one decision (src/launch/decide.c): facts in, plan out, and the
 * gate's verdict. Every case is built from facts alone: no file is read, no PATH is searched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
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
    snprintf(f.first, sizeof f.first, "%s", first);
}

static void shimmed(const char *real)
{
    f.shim = true;
    snprintf(f.shim_real, sizeof f.shim_real, "%s", real);
    if (!real[0])
        snprintf(f.shim_why, sizeof f.shim_why, "no llama-server on PATH after the shim directory /s");
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
    f.resolve_rc = 127;
    snprintf(f.resolve_why, sizeof f.resolve_why, "not found");
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

static void test_a_script_loads_the_library_into_its_interpreter(void **st)
{
    (void)st;
    program("job", "/w/job");
    f.chain.script = true;
    snprintf(f.chain.image, sizeof f.chain.image, "/opt/python3");
    snprintf(f.chain.line, sizeof f.chain.line, "#!/opt/python3");
    assert_int_equal(launch_decide(&f, &p, false), 0);
    assert_string_equal(p.image, "/opt/python3");
    assert_string_equal(p.exe, "job"); /* the script's own name: the one match meets (docs/config.md) */
    assert_string_equal(p.exec_path, "/w/job");
    f.chain.protected_image = true; /* SIP removes the injection there */
    launch_decide(&f, &p, false);
    assert_string_equal(launch_plan_injection(&p), "removed");
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
    f.resolve_rc = 127; /* not here at all: judged by the configuration alone */
    assert_int_equal(gate(true, why, sizeof why), LAUNCH_GATE_CHANGES);
    program("llama-server", "");
    f.resolve_rc = 126; /* a FIFO or a directory by that name, and nothing exec would start */
    snprintf(f.resolve_why, sizeof f.resolve_why, "not a regular file");
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
        cmocka_unit_test(test_the_gate_passes_a_shim_that_unlocks),
        cmocka_unit_test(test_the_gate_finds_an_all_stock_scope),
        cmocka_unit_test(test_the_gate_follows_what_path_resolves_to),
        cmocka_unit_test(test_the_gate_knows_where_the_loader_will_not_inject),
        cmocka_unit_test(test_the_gate_knows_what_the_guest_answers_and_who_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
