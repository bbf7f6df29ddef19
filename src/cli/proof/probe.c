/* vzcaps probe and vzcaps verify: run the device queries and the kernels in child processes,
 * stock and with the library, and report side by side. The children are this command
 * (hidden subcommands), so the library is injected exactly as `vzcaps run` injects it. */
#define _XOPEN_SOURCE 700
#include "../cli.h"
#include "../../device/metal.h"

#include <stdlib.h>
#include <string.h>

/* probe's and verify's options (--replay takes two files and one): 0, or the usage error's status. */
static int parse_common(const char *cmd, int argc, char **argv, struct child_opts *o)
{
    const char *timeout = NULL;
    memset(o, 0, sizeof *o);
    const struct opt_bind binds[] = {OPT_VALUE("--profile", &o->profile), OPT_VALUE("--timeout", &timeout),
                                     OPT_VALUE("--replay", o->replay), OPT_FLAG("--json", &o->json), {0}};
    int bad = cli_parse(cmd, &argc, argv, binds);
    return bad ? bad : timeout ? timeout_opt(cmd, timeout, &launch_child_timeout) : 0;
}

int cmd_probe(int argc, char **argv)
{
    struct child_opts o;
    int rc = parse_common("probe", argc, argv, &o);
    if (rc)
        return rc;
    static struct vzcaps_config_result r;
    struct cfg_opts co;
    launch_child_profile(&o, &r, &co);
    struct probe_answers s, u;
    if (o.replay[0]) {
        struct probe_answers *into[2] = {&s, &u};
        for (int k = 0; k < 2; k++) {
            char err[1300];
            size_t len;
            char *text = read_text_file(o.replay[k], &len, err, sizeof err);
            int bad = text ? probe_answers_parse(text, into[k]) : -1;
            free(text);
            if (bad) {
                eprintf("vzcaps probe: %s%s%s", text ? o.replay[k] : err, text ? ": " : "", text ? into[k]->error : "");
                return 1;
            }
        }
    } else {
        if (!platform_is_macos)
            return launch_needs_macos("probe");
        char self[1024];
        self_path(self, sizeof self);
        char *stock_argv[] = {self, "__probe-child", NULL}, *child_args[] = {"__probe-child", NULL};
        char *text = launch_capture(stock_argv, true);
        if (!text || probe_answers_parse(text, &s) != 0)
            return text ? (eprintf("vzcaps probe: stock: %s", s.error), 1) : launch_needs_macos("probe");
        text = launch_unlocked_child(&co, child_args);
        if (!text || probe_answers_parse(text, &u) != 0) {
            eprintf("vzcaps probe: the child with the library failed: %s", text ? u.error : "no output");
            return 1;
        }
    }
    char unexpected[32][200];
    size_t nu = probe_unexpected(&s, &u, &r.profile, unexpected, 32);
    struct machine m;
    machine_facts(&m);
    if (o.json) {
        struct json j;
        json_begin(&j, stdout);
        json_obj(&j, NULL);
        machine_json(&j, &m);
        json_str(&j, "host_chip", strcmp(r.profile.chip_origin, "none") ? r.profile.chip.name : NULL);
        json_str(&j, "profile", r.section[0] ? r.section : NULL);
        probe_render_json(&s, &u, &r.profile, &j);
        json_end_obj(&j);
        json_finish(&j);
    } else {
        printf("%s %s%s%s, %s, host chip %s\n", m.os, m.os_version, m.os_build[0] ? " build " : "", m.os_build,
               machine_kind(&m), r.profile.chip.name[0] ? r.profile.chip.name : "unknown");
        probe_render_text(&s, &u, &r.profile, stdout);
    }
    return nu ? 1 : 0;
}

/* ---- verify ---- */


int cmd_verify(int argc, char **argv)
{
    struct child_opts o;
    int rc = parse_common("verify", argc, argv, &o);
    if (rc)
        return rc;
    static struct vresult res;
    if (o.replay[0]) {
        char err[1300];
        size_t len;
        char *text = read_text_file(o.replay[0], &len, err, sizeof err);
        int bad = text ? vresult_parse(text, &res) : -1;
        free(text);
        if (bad) {
            if (text)
                eprintf("vzcaps verify: %s: not a saved verify result", o.replay[0]);
            else
                eprintf("vzcaps verify: %s", err);
            return 1;
        }
        launch_verify_print(&res, o.json, stdout);
        return verify_exit_status(&res);
    }
    static struct vzcaps_config_result r;
    char key[65];
    if ((rc = launch_verify_run(&o, &res, &r, key)) != 0)
        return rc;
    launch_verify_cache(key, &res);
    launch_verify_print(&res, o.json, stdout);
    return verify_exit_status(&res);
}

/* Hidden children: print the answers or the results as one JSON object. */
int child_probe(void)
{
    struct probe_answers a;
    metal_probe(&a);
    probe_answers_json(&a, stdout);
    return a.ok ? 0 : 1;
}

int child_verify(int argc, char **argv)
{
    struct vplan plan = {0};
    const char *group = "nocopy";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc && verify_group_find(argv[i + 1]))
            group = argv[++i];
        else if (strcmp(argv[i], "--threadgroup") == 0 && i + 1 < argc) {
            uint64_t v;
            if (vzcaps_parse_u64(argv[++i], &v) != 0)
                return EXIT_USAGE;
            plan.threadgroup_bytes = v;
        } else
            return EXIT_USAGE;
    }
    static struct vresult r;
    if (metal_verify(&plan, group, &r) != 0)
        return launch_needs_macos("verify");
    struct json j;
    json_begin(&j, stdout);
    verify_render_json(&r, &j);
    json_finish(&j);
    return 0;
}
