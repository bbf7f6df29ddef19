/* vzcaps probe and vzcaps verify: run the device queries and the kernels in child processes,
 * stock and with the library, and report side by side. The children are this command
 * (hidden subcommands), so the library is injected exactly as `vzcaps run` injects it. */
#define _XOPEN_SOURCE 700
#include "../common/child.h"
#include "../common/safewrite.h"
#include "../common/stockenv.h"
#include "cli.h"
#include "../device/metal.h"
#include "../common/sha256.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int needs_macos(const char *cmd)
{
    bool replay = strcmp(cmd, "probe") == 0 || strcmp(cmd, "verify") == 0; /* the commands that have --replay */
    eprintf("vzcaps %s: needs a macOS Metal device; this is %s%s", cmd, platform_is_macos ? "a Mac without a usable Metal device" : "Linux",
            replay ? " (use --replay to render saved results)" : "");
    return EXIT_NEEDS_MACOS;
}

static unsigned timeout_s = PROBE_TIMEOUT;

/* A child's standard output, kept up to CAPTURE_MAX bytes (a longer one is not a child of
 * ours), in child.c's head of a stream. */
#define CAPTURE_MAX (4u << 20)

static int capture_sink(void *ctx, const char *p, size_t n)
{
    vzcaps_head_add(ctx, p, n);
    return 0;
}

/* A child's standard error goes on to ours as it comes, as when it was inherited. */
static int to_stderr(void *ctx, const char *p, size_t n)
{
    (void)ctx;
    while (n) {
        ssize_t w = write(2, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Runs argv (child.c: its own process group, --timeout) and returns its standard output (valid
 * until the next call) or NULL when it printed nothing or too much; *status receives its wait
 * status when not NULL. stock: without the library. */
static char *capture_status(char **argv, bool stock, int *status)
{
    static struct vzcaps_head c = {.limit = CAPTURE_MAX};
    vzcaps_head_free(&c);
    struct vzcaps_child_opts co = {.argv = argv, .out = {capture_sink, &c}, .err = {to_stderr, NULL}, .timeout = timeout_s};
    if (stock)
        vzcaps_stock_child(&co, preload_var, library_file);
    struct vzcaps_child_result r;
    vzcaps_child_run(&co, &r);
    if (r.timed_out)
        eprintf("vzcaps: %s: stopped after %u s (--timeout)", argv[0], timeout_s);
    bool whole = c.total == c.len;
    if (!whole && c.total > CAPTURE_MAX)
        eprintf("vzcaps: %s: printed more than %u MiB: not used", argv[0], CAPTURE_MAX >> 20);
    else if (!whole)
        eprintf("vzcaps: %s: its output could not be kept (out of memory): not used", argv[0]);
    if (status)
        *status = r.status;
    return c.len && whole ? c.data : NULL;
}

static char *capture(char **argv, bool stock)
{
    return capture_status(argv, stock, NULL);
}

struct common_opts {
    bool json;
    const char *profile, *family, *replay[2]; /* family: from run --verify --family */
};

static int parse_common(const char *cmd, int argc, char **argv, struct common_opts *o, int replay_files)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        int t;
        if (strcmp(argv[i], "--") == 0)
            break;
        if ((t = opt_take(argc, argv, &i, "--profile", &o->profile))) {
            if (t < 0)
                return usage_error(cmd, "--profile needs a value");
            continue;
        }
        const char *tv;
        if ((t = opt_take(argc, argv, &i, "--timeout", &tv))) {
            if (t < 0)
                return usage_error(cmd, "--timeout needs a value");
            if (timeout_opt(cmd, tv, &timeout_s) != 0)
                return EXIT_USAGE;
            continue;
        }
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (strcmp(argv[i], "--replay") == 0) {
            if (i + replay_files >= argc)
                return usage_error(cmd, "--replay needs %d file%s", replay_files, replay_files > 1 ? "s" : "");
            for (int k = 0; k < replay_files; k++)
                o->replay[k] = argv[++i];
        } else {
            return usage_error(cmd, "unknown argument %s", argv[i]);
        }
    }
    return 0;
}

/* The configuration the library will apply in the child (which is this very command). */
static void child_profile(const struct common_opts *o, struct vzcaps_config_result *r, struct cfg_opts *co)
{
    static char self[1024];
    self_path(self, sizeof self);
    memset(co, 0, sizeof *co);
    co->profile = o->profile;
    co->family = o->family;
    co->exe = vzcaps_basename(self);
    cli_configure_run(co, r);
}

static char *unlocked_child_status(const struct cfg_opts *co, char **child_args, int *status)
{
    char self[1024];
    self_path(self, sizeof self);
    char *cmd[16] = {self}, *argv[24];
    for (size_t n = 1; *child_args && n < 15; n++)
        cmd[n] = *child_args++;
    cli_run_argv(argv, 24, self, co, cmd);
    return capture_status(argv, false, status);
}

static char *unlocked_child(const struct cfg_opts *co, char **child_args)
{
    return unlocked_child_status(co, child_args, NULL);
}

int cmd_probe(int argc, char **argv)
{
    struct common_opts o;
    int rc = parse_common("probe", argc, argv, &o, 2);
    if (rc)
        return rc;
    static struct vzcaps_config_result r;
    struct cfg_opts co;
    child_profile(&o, &r, &co);
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
            return needs_macos("probe");
        char self[1024];
        self_path(self, sizeof self);
        char *stock_argv[] = {self, "__probe-child", NULL}, *child_args[] = {"__probe-child", NULL};
        char *text = capture(stock_argv, true);
        if (!text || probe_answers_parse(text, &s) != 0)
            return text ? (eprintf("vzcaps probe: stock: %s", s.error), 1) : needs_macos("probe");
        text = unlocked_child(&co, child_args);
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

/* Where the verdict for key is cached (on the heap: never a cut path), or NULL: without an
 * absolute XDG_CACHE_HOME or HOME there is no cache (never a shared directory such as /tmp,
 * where anyone could leave a verdict). */
static char *cache_path(const char *key)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        return xformat("%s/vzcaps/verify-%s.json", xdg, key);
    if (!home || home[0] != '/')
        return NULL;
    return xformat("%s/%s/vzcaps/verify-%s.json", home, platform_is_macos ? "Library/Caches" : ".cache", key);
}

/* The verdict's cache key: host chip, macOS build, library hash and the effective claims. */
static void verify_key(const struct common_opts *o, struct vzcaps_config_result *r, struct cfg_opts *co, char key[65])
{
    child_profile(o, r, co);
    char lib[1100], tried[2400], lib_hash[65] = "";
    if (find_library(lib, sizeof lib, tried, sizeof tried) == 0)
        sha256_file_hex(lib, lib_hash);
    struct machine m;
    machine_facts(&m);
    verify_cache_key(r->profile.chip.name, m.os_build, lib_hash, &r->profile, key);
}

static int run_verify(const struct common_opts *o, struct vresult *res, struct vzcaps_config_result *r, char key[65])
{
    struct cfg_opts co;
    verify_key(o, r, &co, key);
    char self[1024];
    self_path(self, sizeof self);
    if (!platform_is_macos)
        return needs_macos("verify");
    struct probe_answers s;
    char *probe_argv[] = {self, "__probe-child", NULL};
    char *text = capture(probe_argv, true);
    if (!text || probe_answers_parse(text, &s) != 0)
        return needs_macos("verify");
    struct vplan plan;
    verify_plan(&r->profile, s.family, (uint64_t)s.threadgroup, &plan);
    char tg[32];
    snprintf(tg, sizeof tg, "%llu", (unsigned long long)plan.threadgroup_bytes);
    struct machine m;
    machine_facts(&m);
    memset(res, 0, sizeof *res);
    /* one child per check: a GPU fault or a compiler crash in one loses only that one */
    static struct vresult part, stock;
    for (const struct vgroup *g = verify_groups; g->name; g++) {
        char why[200];
        if (!verify_group_planned(&plan, g)) {
            verify_group_skipped(res, g, strcmp(g->name, "threadgroup") == 0 ? "no threadgroup-memory floor above stock"
                                                                             : "not unlocked by this profile");
            continue;
        }
        if (strcmp(g->name, "bfloat") == 0 && !verify_bfloat_supported(m.os_version, why, sizeof why)) {
            verify_group_skipped(res, g, why);
            continue;
        }
        char *args[] = {"__verify-child", "--only", (char *)g->name, "--threadgroup", tg, NULL};
        int status = 0;
        text = unlocked_child_status(&co, args, &status);
        if (text && vresult_parse(text, &part) == 0)
            verify_append(res, &part);
        else
            verify_child_failed(res, g, strcmp(g->name, "nocopy") != 0, status);
    }
    char *stock_argv[] = {self, "__verify-child", "--only", "nocopy", NULL};
    text = capture(stock_argv, true);
    if (text && vresult_parse(text, &stock) == 0)
        verify_merge_stock_nocopy(res, &stock);
    return 0;
}

static void write_cache(const char *key, const struct vresult *res);

static void print_verify(const struct vresult *res, bool json, FILE *out)
{
    if (json) {
        struct json j;
        json_begin(&j, out);
        verify_render_json(res, &j);
        json_finish(&j);
    } else {
        verify_render_text(res, out);
    }
}

int cmd_verify(int argc, char **argv)
{
    struct common_opts o;
    int rc = parse_common("verify", argc, argv, &o, 1);
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
        print_verify(&res, o.json, stdout);
        return verify_exit_status(&res);
    }
    static struct vzcaps_config_result r;
    char key[65];
    if ((rc = run_verify(&o, &res, &r, key)) != 0)
        return rc;
    write_cache(key, &res);
    print_verify(&res, o.json, stdout);
    return verify_exit_status(&res);
}

/* The cache's files are verify results: one is replaced when it is one (this key's members
 * come first, within the 4096 bytes safewrite looks at), never another file at that name. */
static const char cache_marker[] = "\"nocopy_guest_fault\":";

static void write_cache(const char *key, const struct vresult *res)
{
    char *path = cache_path(key), *dir, *err = NULL, *buf = NULL;
    if (!path)
        return;
    dir = xformat("%s", path);
    *strrchr(dir, '/') = '\0';
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (f) {
        print_verify(res, true, f);
        if (fclose(f) != 0)
            free(buf), buf = NULL;
    }
    struct vzcaps_wopts opts = {.mode = 0644, .replace = VZCAPS_IF_MARKED, .marker = cache_marker,
                                .marker_at = VZCAPS_MARK_IN_HEAD};
    if (!buf)
        eprintf("vzcaps: cannot cache the verify verdict in %s: out of memory", path);
    else if (vzcaps_mkdir_parents(dir, &err) != 0 || vzcaps_write_file(path, buf, n, &opts, &err) != 0)
        /* the verdict stands; only the next run --verify repeats it */
        eprintf("vzcaps: cannot cache the verify verdict: %s", err ? err : path);
    free(err);
    free(buf);
    free(dir);
    free(path);
}

/* vzcaps run --verify: the cached verdict for this chip, build, library and profile when
 * there is one, else a verify run (whose verdict is then cached). */
int verify_gate(const struct cfg_opts *co)
{
    /* the children are this command, so name the section the workload gets explicitly */
    static struct vzcaps_config_result workload;
    cli_configure(co, &workload);
    const char *section = co->profile ? co->profile : workload.section[0] ? workload.section : NULL;
    struct common_opts o = {.profile = section, .family = co->family};
    static struct vresult res;
    static struct vzcaps_config_result r;
    struct cfg_opts child;
    char key[65];
    verify_key(&o, &r, &child, key);
    char *path = cache_path(key), err[1300];
    size_t len;
    char *text = path ? read_text_file(path, &len, err, sizeof err) : NULL;
    int cached = text && vresult_parse(text, &res) == 0;
    free(text);
    if (cached) {
        eprintf("vzcaps run: using the cached verify verdict %s", path);
    } else {
        int rc = platform_is_macos ? run_verify(&o, &res, &r, key) : needs_macos("run --verify");
        if (rc != 0) {
            free(path);
            return rc == EXIT_NEEDS_MACOS ? rc : EXIT_REFUSED;
        }
        write_cache(key, &res);
    }
    if (verify_exit_status(&res) == 0) {
        free(path);
        return 0;
    }
    eprintf("vzcaps run: not starting: vzcaps verify found unlocked paths that compute wrong results:");
    for (size_t i = 0; i < res.n; i++)
        if (res.checks[i].unlocked && res.checks[i].status == VCHECK_FAIL)
            eprintf("  %s (%s)%s%s", res.checks[i].name, res.checks[i].path, res.checks[i].reason[0] ? ": " : "", res.checks[i].reason);
    eprintf("vzcaps run: lower the claim (--family 1006 keeps SIMD-group paths off), drop the floor that failed, "
            "or run without --verify to accept the risk; `vzcaps verify` shows the details%s%s%s",
            path ? " (cached in " : "", path ? path : "", path ? ")" : "");
    free(path);
    return EXIT_REFUSED;
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
        return needs_macos("verify");
    struct json j;
    json_begin(&j, stdout);
    verify_render_json(&r, &j);
    json_finish(&j);
    return 0;
}
