/* The children of probe, verify and run --verify: this very command (hidden subcommands), run
 * stock or through `vzcaps run` as child.c runs children (own group, --timeout), their output kept
 * in a bounded head; verify's verdict, its cache and the gate run --verify applies.
 * Owns: those children, the verdict cache and the macOS 14 guest hazard read from a verdict. Never: reads a command line (src/cli/proof/probe.c). */
#define _XOPEN_SOURCE 700
#include "launch.h"
#include "../common/child.h"
#include "../common/safewrite.h"
#include "../common/sha256.h"
#include "../common/stockenv.h"
#include "../device/metal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int launch_needs_macos(const char *cmd)
{
    bool replay = strcmp(cmd, "probe") == 0 || strcmp(cmd, "verify") == 0; /* the commands that have --replay */
    eprintf("vzcaps %s: needs a macOS Metal device; this is %s%s", cmd, platform_is_macos ? "a Mac without a usable Metal device" : "Linux",
            replay ? " (use --replay to render saved results)" : "");
    return EXIT_NEEDS_MACOS;
}

unsigned launch_child_timeout = PROBE_TIMEOUT;

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
    struct vzcaps_child_opts co = {.argv = argv, .out = {capture_sink, &c}, .err = {to_stderr, NULL}, .timeout = launch_child_timeout};
    if (stock)
        vzcaps_stock_child(&co, preload_var, library_file, self_path_kept());
    struct vzcaps_child_result r;
    vzcaps_child_run(&co, &r);
    if (r.timed_out)
        eprintf("vzcaps: %s: stopped after %u s (--timeout)", argv[0], launch_child_timeout);
    bool whole = c.total == c.len;
    if (!whole && c.total > CAPTURE_MAX)
        eprintf("vzcaps: %s: printed more than %u MiB: not used", argv[0], CAPTURE_MAX >> 20);
    else if (!whole)
        eprintf("vzcaps: %s: its output could not be kept (out of memory): not used", argv[0]);
    if (status)
        *status = r.status;
    return c.len && whole ? c.data : NULL;
}

char *launch_capture(char **argv, bool stock)
{
    return capture_status(argv, stock, NULL);
}

/* The configuration the library will apply in the child (which is this very command). */
void launch_child_profile(const struct child_opts *o, struct vzcaps_config_result *r, struct cfg_opts *co)
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

char *launch_unlocked_child(const struct cfg_opts *co, char **child_args)
{
    return unlocked_child_status(co, child_args, NULL);
}

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
static void verify_key(const struct child_opts *o, struct vzcaps_config_result *r, struct cfg_opts *co, char key[65])
{
    launch_child_profile(o, r, co);
    char lib[1100], tried[2400], lib_hash[65] = "";
    if (find_library(lib, sizeof lib, tried, sizeof tried) == 0)
        sha256_file_hex(lib, lib_hash);
    struct machine m;
    machine_facts(&m);
    verify_cache_key(r->profile.chip.name, m.os_build, lib_hash, &r->profile, key);
}

char *launch_verify_cached(const struct child_opts *o, struct vresult *res, struct vzcaps_config_result *r, char key[65])
{
    struct cfg_opts child;
    verify_key(o, r, &child, key);
    char *path = cache_path(key), err[1300];
    size_t len;
    char *text = path ? read_text_file(path, &len, err, sizeof err) : NULL;
    int cached = text && vresult_parse(text, res) == 0;
    free(text);
    if (!cached)
        free(path), path = NULL;
    return path;
}

int launch_verify_run(const struct child_opts *o, struct vresult *res, struct vzcaps_config_result *r, char key[65])
{
    struct cfg_opts co;
    verify_key(o, r, &co, key);
    char self[1024];
    self_path(self, sizeof self);
    if (!platform_is_macos)
        return launch_needs_macos("verify");
    struct probe_answers s;
    char *probe_argv[] = {self, "__probe-child", NULL};
    char *text = launch_capture(probe_argv, true);
    if (!text || probe_answers_parse(text, &s) != 0)
        return launch_needs_macos("verify");
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
    text = launch_capture(stock_argv, true);
    if (text && vresult_parse(text, &stock) == 0)
        verify_merge_stock_nocopy(res, &stock);
    return 0;
}

/* The cache's files are verify results: one is replaced when it is one (this key's members
 * come first, within the 4096 bytes safewrite looks at), never another file at that name. */
static const char cache_marker[] = "\"nocopy_guest_fault\":";

void launch_verify_cache(const char *key, const struct vresult *res)
{
    char *path = cache_path(key), *dir, *err = NULL, *buf = NULL;
    if (!path)
        return;
    dir = xformat("%s", path);
    *strrchr(dir, '/') = '\0';
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (f) {
        launch_verify_print(res, true, f);
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

void launch_verify_print(const struct vresult *res, bool json, FILE *out)
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


/* vzcaps run --verify: the cached verdict for this chip, build, library and profile when
 * there is one, else a verify run (whose verdict is then cached). */
int verify_gate(const struct cfg_opts *co)
{
    /* the children are this command, so name the section the workload gets explicitly */
    static struct vzcaps_config_result workload;
    cli_configure(co, &workload);
    const char *section = co->profile ? co->profile : workload.section[0] ? workload.section : NULL;
    struct child_opts o = {.profile = section, .family = co->family};
    static struct vresult res;
    static struct vzcaps_config_result r;
    char key[65];
    char *path = launch_verify_cached(&o, &res, &r, key);
    if (path) {
        eprintf("vzcaps run: using the cached verify verdict %s", path);
    } else {
        int rc = platform_is_macos ? launch_verify_run(&o, &res, &r, key) : launch_needs_macos("run --verify");
        if (rc != 0) {
            free(path);
            return rc == EXIT_NEEDS_MACOS ? rc : EXIT_REFUSED;
        }
        launch_verify_cache(key, &res);
    }
    if (verify_exit_status(&res) == 0) {
        free(path);
        return 0;
    }
    eprintf("vzcaps run: not starting: vzcaps verify found unlocked paths that compute wrong results:");
    bool nocopy = false, other = false;
    for (size_t i = 0; i < res.n; i++)
        if (res.checks[i].unlocked && res.checks[i].status == VCHECK_FAIL) {
            eprintf("  %s (%s)%s%s", res.checks[i].name, res.checks[i].path, res.checks[i].reason[0] ? ": " : "", res.checks[i].reason);
            bool is_nocopy = strcmp(res.checks[i].name, "nocopy_mmap") == 0;
            nocopy |= is_nocopy, other |= !is_nocopy;
        }
    /* the workaround for what failed: a lower claim for the GPU paths; for a NoCopy buffer over
     * a mapped file (the macOS 14 guest hazard), not mapping the model */
    eprintf("vzcaps run: %s%sor run without --verify to accept the risk; `vzcaps verify` shows the details%s%s%s",
            other ? "lower the claim (--family 1006 keeps SIMD-group paths off), drop the floor that failed, " : "",
            nocopy ? "for nocopy_mmap run the client with --no-mmap (llama.cpp: the model is read, not mapped), or set "
                     "GGML_METAL_SHARED_BUFFERS_DISABLE=1 for ggml clients (a lower claim does not help: a newBufferWithBytesNoCopy "
                     "over a mapped file returned wrong data), " : "",
            path ? " (cached in " : "", path ? path : "", path ? ")" : "");
    free(path);
    return EXIT_REFUSED;
}

/* ---- the guest hazard of macOS 14 (issue 39 item 7): said, never worked around behind the user's back ---- */

#define NOCOPY_WORKAROUND "run the client with --no-mmap (llama.cpp: the model is read into memory, not mapped), " \
                          "or set GGML_METAL_SHARED_BUFFERS_DISABLE=1 for ggml clients"

const struct vcheck *verify_nocopy_check(const struct vresult *r)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (strcmp(r->checks[i].name, "nocopy_mmap") == 0)
            return &r->checks[i];
    return NULL;
}

bool nocopy_guest_hazard(const struct machine *m, bool macos, const struct vresult *verdict, const char *source, char *out,
                         size_t len)
{
    out[0] = '\0';
    uint64_t major = 0;
    char head[16];
    size_t n = strcspn(m->os_version, ".");
    if (!macos || m->guest != 1 || n == 0 || n >= sizeof head)
        return false;
    memcpy(head, m->os_version, n);
    head[n] = '\0';
    if (vzcaps_parse_u64(head, &major) != 0 || major != 14)
        return false;
    const struct vcheck *c = verify_nocopy_check(verdict);
    if (c && c->status == VCHECK_PASS)
        return false; /* checked on this guest: not seen here */
    if (c && c->status == VCHECK_FAIL && (verdict->nocopy_stock_failed || !c->unlocked))
        snprintf(out, len, "macOS %s guest: vzcaps verify found newBufferWithBytesNoCopy over a file-backed mmap returning "
                           "stale data here, stock too (nocopy_mmap, %s): a client that maps its model (llama.cpp does by "
                           "default) prints empty or garbage output with or without vzcaps; " NOCOPY_WORKAROUND,
                 m->os_version, source);
    else if (c && c->status == VCHECK_FAIL)
        snprintf(out, len, "macOS %s guest: vzcaps verify found newBufferWithBytesNoCopy over a file-backed mmap returning "
                           "wrong data with the library (nocopy_mmap, %s): a client that maps its model may print empty or "
                           "garbage output, and run --verify refuses to start it; " NOCOPY_WORKAROUND,
                 m->os_version, source);
    else
        snprintf(out, len, "macOS %s guest: newBufferWithBytesNoCopy over a file-backed mmap is known to return stale data "
                           "in macOS 14 guests, stock too (macOS 15 and 26 guests are fine): a client that maps its model "
                           "(llama.cpp does by default) may print empty or garbage output; check this guest with vzcaps "
                           "verify (its nocopy_mmap check); if it fails, " NOCOPY_WORKAROUND,
                 m->os_version);
    return true;
}

bool bundle_guest_hazard(const struct machine *m, bool macos, const char *verify_json, char *out, size_t len)
{
    static struct vresult res;
    bool parsed = verify_json && vresult_parse(verify_json, &res) == 0;
    return nocopy_guest_hazard(m, macos, parsed ? &res : NULL, "verify.json in this bundle", out, len);
}
