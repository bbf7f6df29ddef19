/* vzcaps bench: runs llama-bench stock and unlocked (or once on a host), checks that the
 * faster output is still right, and writes an evidence bundle. Decisions (tables, verdicts,
 * renderings) live in benchdata.c and are tested with a stand-in llama-bench. */
#define _XOPEN_SOURCE 700
#include "../data/benchdata.h"
#include "cli.h"
#include "../common/child.h"
#include "../common/readfile.h"
#include "../common/sha256.h"
#include "../common/stockenv.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
extern const char vzcaps_check_text[];

/* Relative tolerance between the CPU reference and the unlocked GPU perplexity. */
#define PPL_TOLERANCE 0.02

struct bench_opts {
    const char *model, *llama_bench, *llama_perplexity, *out, *profile, *mode, *p, *n, *r, *timeout;
    int check;   /* -1 auto, 0 off, 1 on */
    char **extra; /* after --: passed to every llama-bench run */
    int n_extra;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct out_dir od; /* the bundle: a new or empty directory, every file new (safewrite) */
static unsigned timeout_s = BENCH_TIMEOUT;

/* One run, as the bundle's summary.json lists it. */
struct bench_step {
    char *label, *out_name, *err_name, *result;
    int rc;
    unsigned long long bytes[2];
    bool capped[2];
};
static struct bench_step *steps_done; /* every child bench ran, in order (it grows) */
static size_t n_steps_done, cap_steps_done;

/* What to look for in a run's lines as they come (NULL: nothing). */
typedef void line_fn(void *ctx, const char *line, size_t len);

/* Runs argv (on PATH when it has no '/') with its standard output streamed into the bundle's
 * file out_name and its standard error into err_name (each capped, noted in summary.json), each
 * line of them also to out_line/err_line. The exit status (or 128+signal, 126 when it could not
 * be started), or -1 when a file could not be written (said, and counted). */
static int run_to_files(char **argv, bool stock, const char *out_name, const char *err_name, const char *label, int step,
                        int steps, line_fn *out_line, line_fn *err_line, void *ctx)
{
    char shown[600] = "";
    for (char **a = argv; *a; a++)
        vzcaps_appendf(shown, sizeof shown, "%s%s", a == argv ? "" : " ", *a);
    eprintf("vzcaps bench: [%d/%d] %s: %s", step, steps, label, shown);
    double t0 = now_s();
    struct out_stream so, se;
    if (out_dir_begin(&od, &so, out_name) != 0)
        return -1;
    if (out_dir_begin(&od, &se, err_name) != 0) {
        out_stream_abort(&so);
        return -1;
    }
    static struct vzcaps_lines lo, le;
    lo = (struct vzcaps_lines){.line = out_line, .ctx = ctx, .next = {out_stream_sink, &so}};
    le = (struct vzcaps_lines){.line = err_line, .ctx = ctx, .next = {out_stream_sink, &se}};
    struct vzcaps_child_opts co = {
        .argv = argv, .search = true, .timeout = timeout_s,
        .out = out_line ? (struct vzcaps_sink){vzcaps_lines_write, &lo} : (struct vzcaps_sink){out_stream_sink, &so},
        .err = err_line ? (struct vzcaps_sink){vzcaps_lines_write, &le} : (struct vzcaps_sink){out_stream_sink, &se},
    };
    if (stock) /* stock means stock: no shim directory on PATH, no library of ours preloaded */
        vzcaps_stock_child(&co, preload_var, library_file);
    struct vzcaps_child_result r;
    vzcaps_child_run(&co, &r);
    if (out_line)
        vzcaps_lines_end(&lo);
    if (err_line)
        vzcaps_lines_end(&le);
    int st = r.status;
    int rc = st == -1 ? 126 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (rc == 0 && (r.timed_out || r.stopped_by))
        rc = 128 + SIGTERM; /* stopped, however it ended */
    char *result = vzcaps_child_describe(&r, timeout_s, 0);
    eprintf("vzcaps bench: [%d/%d] %s: %s in %.1f s (%s)", step, steps, label, rc ? "FAILED" : "done", now_s() - t0, result);
    const char *names[2] = {out_name, err_name};
    for (int k = 0; k < 2; k++)
        if (r.capped[k])
            eprintf("vzcaps bench: %s/%s: capped at %u MiB of %llu bytes (noted in summary.json)", od.path, names[k],
                    VZCAPS_CHILD_CAP >> 20, r.bytes[k]);
    int w1 = out_dir_end(&so), w2 = out_dir_end(&se);
    steps_done = xgrow(steps_done, &cap_steps_done, n_steps_done, sizeof *steps_done);
    steps_done[n_steps_done++] = (struct bench_step){xformat("%s", label), xformat("%s", out_name), xformat("%s", err_name),
                                                     result, rc, {r.bytes[0], r.bytes[1]}, {r.capped[0], r.capped[1]}};
    return w1 || w2 ? -1 : rc;
}

static void caps_line(void *ctx, const char *line, size_t len)
{
    metal_caps_line(line, len, ctx);
}

/* A file of the bundle rendered in memory, then written whole (out_dir_put). */
struct memfile {
    char *buf;
    size_t n;
    FILE *f;
};

static FILE *mem_open(struct memfile *m)
{
    m->buf = NULL, m->n = 0;
    m->f = open_memstream(&m->buf, &m->n);
    if (!m->f) {
        eprintf("vzcaps bench: out of memory");
        exit(1);
    }
    return m->f;
}

static void mem_put(struct memfile *m, const char *name)
{
    if (fclose(m->f) != 0) {
        eprintf("vzcaps bench: %s/%s: out of memory", od.path, name);
        od.failures++;
    } else {
        out_dir_put(&od, name, m->buf, m->n);
    }
    free(m->buf);
}

/* "Final estimate: PPL = 12.3456 +/- 0.12", a line of llama-perplexity's output: into *ctx
 * (a double, NAN until found). */
static void ppl_line(void *ctx, const char *line, size_t len)
{
    static const char key[] = "Final estimate: PPL =";
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
    const char *p = strstr(buf, key);
    if (!p)
        return;
    char *end;
    double v = strtod(p + sizeof key - 1, &end);
    if (end != p + sizeof key - 1 && v > 0 && isnan(*(double *)ctx))
        *(double *)ctx = v;
}

/* pass when the unlocked GPU perplexity is within PPL_TOLERANCE of the CPU reference */
static const char *ppl_verdict(double reference, double unlocked, double *rel)
{
    *rel = fabs(unlocked - reference) / reference;
    if (isnan(reference) || isnan(unlocked))
        return "error";
    return *rel <= PPL_TOLERANCE ? "pass" : "fail";
}

/* One llama-perplexity run into DIR/TAG.log and DIR/TAG.stderr; *ppl from either. */
static int perplexity_run(char **argv, bool stock, const char *tag, const char *label, int step, int steps, double *ppl)
{
    char out_name[64], err_name[64];
    snprintf(out_name, sizeof out_name, "%s.log", tag);
    snprintf(err_name, sizeof err_name, "%s.stderr", tag);
    *ppl = NAN;
    return run_to_files(argv, stock, out_name, err_name, label, step, steps, ppl_line, ppl_line, ppl);
}

static void hash_or_null(struct json *j, const char *key, const char *path)
{
    char hex[65];
    if (path && sha256_file_hex(path, hex) == 0)
        json_str(j, key, hex);
    else
        json_null(j, key);
}

/* summary.json: what the bundle holds, whether it is complete, and each run's result (its
 * caps and timeout noted); printed by --json. */
static bool print_json;
static void write_summary(const char *mode, const char *why_incomplete, const char *verdict, const char *verdict_reason,
                          const struct bench_table *table, int unlocked_taken)
{
    struct memfile mf;
    FILE *f = mem_open(&mf);
    struct json j;
    json_begin(&j, f);
    json_obj(&j, NULL);
    json_str(&j, "vzcaps_version", VZCAPS_VERSION);
    json_str(&j, "bundle", od.path);
    json_str(&j, "mode", mode);
    json_bool(&j, "complete", !why_incomplete);
    json_str(&j, "incomplete_reason", why_incomplete);
    json_int(&j, "timeout_seconds", timeout_s);
    json_int(&j, "stream_cap_bytes", VZCAPS_CHILD_CAP);
    json_arr(&j, "runs");
    for (size_t i = 0; i < n_steps_done; i++) {
        const struct bench_step *st = &steps_done[i];
        json_obj(&j, NULL);
        json_str(&j, "run", st->label);
        json_str(&j, "result", st->result);
        json_int(&j, "exit_code", st->rc);
        json_str(&j, "stdout_file", st->out_name);
        json_int(&j, "stdout_bytes", (long long)st->bytes[0]);
        json_bool(&j, "stdout_capped", st->capped[0]);
        json_str(&j, "stderr_file", st->err_name);
        json_int(&j, "stderr_bytes", (long long)st->bytes[1]);
        json_bool(&j, "stderr_capped", st->capped[1]);
        json_end_obj(&j);
    }
    json_end_arr(&j);
    json_obj(&j, "output_check");
    json_str(&j, "verdict", verdict);
    json_str(&j, "reason", verdict_reason);
    json_end_obj(&j);
    if (unlocked_taken < 0)
        json_null(&j, "unlocked_paths_taken");
    else
        json_bool(&j, "unlocked_paths_taken", unlocked_taken);
    if (table)
        bench_render_json_rows(table, &j);
    json_end_obj(&j);
    json_finish(&j);
    if (fclose(mf.f) != 0) {
        eprintf("vzcaps bench: %s/summary.json: out of memory", od.path);
        od.failures++;
    } else {
        out_dir_put(&od, "summary.json", mf.buf, mf.n);
        if (print_json)
            fwrite(mf.buf, 1, mf.n, stdout);
    }
    free(mf.buf);
}

/* A bundle that cannot be finished: said, summary.json and INCOMPLETE, SHA256SUMS; a stop
 * signal then ends the command with it. 1. */
static const char *bench_mode = "guest";
static int incomplete(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int incomplete(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *why = vxformat(fmt, ap);
    va_end(ap);
    if (vzcaps_stop_signal()) {
        free(why);
        why = xformat("stopped by signal %d before it was finished", vzcaps_stop_signal());
    }
    write_summary(bench_mode, why ? why : "out of memory", "error", "the bundle is incomplete", NULL, -1);
    out_dir_incomplete(&od, why ? why : "out of memory");
    eprintf("vzcaps bench: %s; the bundle in %s is incomplete (INCOMPLETE, summary.json; running the same command again "
            "replaces it)", why ? why : "out of memory", od.path);
    free(why);
    out_dir_close(&od);
    vzcaps_stop_now();
    return 1;
}

static int bench_main(int argc, char **argv)
{
    struct bench_opts o = {.p = "512", .n = "128", .r = "10", .mode = "guest", .check = -1};
    for (int i = 1; i < argc; i++) {
        int t;
        if ((t = opt_take(argc, argv, &i, "-m", &o.model)) || (t = opt_take(argc, argv, &i, "--llama-bench", &o.llama_bench)) ||
            (t = opt_take(argc, argv, &i, "--llama-perplexity", &o.llama_perplexity)) ||
            (t = opt_take(argc, argv, &i, "-p", &o.p)) || (t = opt_take(argc, argv, &i, "-n", &o.n)) ||
            (t = opt_take(argc, argv, &i, "-r", &o.r)) || (t = opt_take(argc, argv, &i, "--out", &o.out)) ||
            (t = opt_take(argc, argv, &i, "--profile", &o.profile)) || (t = opt_take(argc, argv, &i, "--mode", &o.mode)) ||
            (t = opt_take(argc, argv, &i, "--timeout", &o.timeout))) {
            if (t < 0)
                return usage_error("bench", "%s needs a value", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--") == 0) {
            o.extra = argv + i + 1;
            o.n_extra = argc - i - 1;
            break;
        }
        if (strcmp(argv[i], "--check-output") == 0)
            o.check = 1;
        else if (strcmp(argv[i], "--no-check-output") == 0)
            o.check = 0;
        else if (strcmp(argv[i], "--json") == 0)
            print_json = true;
        else
            return usage_error("bench", "unknown argument %s", argv[i]);
    }
    if (!o.model)
        return usage_error("bench", "-m MODEL is required");
    if (strcmp(o.mode, "guest") && strcmp(o.mode, "host"))
        return usage_error("bench", "--mode is guest or host, not \"%s\"", o.mode);
    if (o.timeout && timeout_opt("bench", o.timeout, &timeout_s) != 0)
        return EXIT_USAGE;
    bench_mode = o.mode;
    uint64_t p, n, r;
    if (vzcaps_parse_u64(o.p, &p) || vzcaps_parse_u64(o.n, &n) || vzcaps_parse_u64(o.r, &r))
        return usage_error("bench", "-p, -n and -r take plain decimal counts");
    if (r == 0 || p + n == 0)
        return usage_error("bench", "-r must be at least 1, and -p or -n must be positive (nothing to measure)");
    bool guest = strcmp(o.mode, "guest") == 0;
    /* the buffers below hold these paths and what is built from them, never a cut one */
    const char *const paths[][2] = {{"--out", o.out}, {"--llama-bench", o.llama_bench}, {"--llama-perplexity", o.llama_perplexity}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i][1] && strlen(paths[i][1]) > VZCAPS_PATH_MAX)
            return usage_error("bench", "%s: too long (limit %d bytes)", paths[i][0], VZCAPS_PATH_MAX);
    struct stat mst;
    char mwhy[200];
    int mfd = vzcaps_open_regular(o.model, &mst, mwhy, sizeof mwhy); /* a FIFO never hangs the hash below */
    if (mfd < 0) {
        const char *why = strncmp(mwhy, "cannot open: ", 13) == 0 ? mwhy + 13 : mwhy;
        eprintf("vzcaps bench: %s: cannot read the model: %s", o.model, why);
        return 1;
    }
    close(mfd);
    char lb[1100];
    if (!find_executable(o.llama_bench ? o.llama_bench : "llama-bench", NULL, lb, sizeof lb)) {
        eprintf("vzcaps bench: %s not found or not executable; give --llama-bench PATH", o.llama_bench ? o.llama_bench : "llama-bench");
        return 1;
    }
    char outdir[1100];
    if (o.out)
        snprintf(outdir, sizeof outdir, "%s", o.out);
    else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(outdir, sizeof outdir, "vzcaps-bench-%Y%m%dT%H%M%SZ", &tm);
    }
    /* a new or empty directory, never through a link (made after every argument is checked) */
    char self[1024], library[1100] = "", tried[2400];
    self_path(self, sizeof self);
    bool have_lib = find_library(library, sizeof library, tried, sizeof tried) == 0;
    static struct vzcaps_config_result cfg;
    struct cfg_opts co = {.profile = o.profile, .exe = vzcaps_basename(lb)};
    cli_configure_run(&co, &cfg);
    if (guest && cfg.profile.state != VZCAPS_ENABLED) {
        eprintf("vzcaps bench: the unlocked run would be stock: %s", cfg.profile.n_notes ? cfg.profile.notes[0] : "nothing configured");
        return 1;
    }

    /* the extra arguments first, so that the measured counts and the JSON output below win */
    static char **bench_args, **unlocked_args; /* static: live until the command ends */
    bench_args = calloc((size_t)o.n_extra + 16, sizeof *bench_args);
    unlocked_args = calloc((size_t)o.n_extra + 32, sizeof *unlocked_args);
    if (!bench_args || !unlocked_args) {
        eprintf("vzcaps bench: out of memory");
        return 1;
    }
    size_t na = 0;
    bench_args[na++] = lb;
    for (int i = 0; i < o.n_extra; i++)
        bench_args[na++] = o.extra[i];
    const char *fixed[] = {"-m", o.model, "-p", o.p, "-n", o.n, "-r", o.r, "-o", "json"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        bench_args[na++] = (char *)fixed[i];
    /* the unlocked runs go through `vzcaps run` with the same profile or family */
    cli_run_argv(unlocked_args, (size_t)o.n_extra + 32, self, &co, bench_args);
    /* a llama-bench found by name in a vzcaps shim directory is the shim: the stock run looks
     * the name up on its own PATH, which has no shim directory */
    if (!o.llama_bench || !strchr(o.llama_bench, '/')) {
        char *dir = vzcaps_dir_name(lb);
        if (dir && vzcaps_is_shim_dir(dir))
            bench_args[0] = (char *)(o.llama_bench ? o.llama_bench : "llama-bench");
        free(dir);
    }

    char lp[1100];
    bool have_ppl = find_executable(o.llama_perplexity ? o.llama_perplexity : "llama-perplexity", o.llama_perplexity ? NULL : lb, lp, sizeof lp);
    if (o.llama_perplexity && !have_ppl) { /* given, so never skipped in silence */
        eprintf("vzcaps bench: %s not found or not executable; give --llama-perplexity PATH", o.llama_perplexity);
        return 1;
    }
    bool do_check = guest && o.check != 0 && have_ppl;
    if (guest && o.check == 1 && !have_ppl) {
        eprintf("vzcaps bench: --check-output needs llama-perplexity (next to llama-bench, on PATH, or --llama-perplexity)");
        return 1;
    }
    if (out_dir_open(&od, "bench", outdir) != 0)
        return 1;
    vzcaps_stop_defer(); /* a stop signal stops the run; the bundle is then marked incomplete */
    int steps = guest ? 2 + (do_check ? 2 : 0) : 1, step = 0;
    char a[1400], b[1400];
    static struct bench_table table;
    memset(&table, 0, sizeof table);
    char err[1400];
    struct metal_caps caps[2];
    metal_caps_init(&caps[0]), metal_caps_init(&caps[1]);
    const char *roles[2] = {guest ? "stock" : "host", "unlocked"};
    for (int k = 0; k < (guest ? 2 : 1); k++) {
        char out_name[32], err_name[32];
        snprintf(out_name, sizeof out_name, "%s.json", roles[k]);
        snprintf(err_name, sizeof err_name, "%s.stderr", roles[k]);
        snprintf(a, sizeof a, "%s/%s", outdir, out_name);
        snprintf(b, sizeof b, "%s/%s", outdir, err_name);
        enum bench_role role = k ? ROLE_UNLOCKED : guest ? ROLE_STOCK : ROLE_HOST;
        /* the run's GPU family line (it picks llama.cpp's tuning rows) and the shim that spoke,
         * read from its standard error as it comes */
        int rc = run_to_files(k ? unlocked_args : bench_args, !k, out_name, err_name, roles[k], ++step, steps, NULL,
                              caps_line, &caps[k]);
        table.caps[role] = caps[k];
        table.have_caps[role] = true;
        if (rc < 0)
            return incomplete("stopped: the %s run's output could not be written (above)", roles[k]);
        if (rc != 0 || vzcaps_stop_signal())
            return incomplete("the %s run failed (%s); its output is in %s", roles[k], steps_done[n_steps_done - 1].result, b);
        if (bench_table_add_file(&table, role, a, err, sizeof err) != 0)
            return incomplete("%s", err);
    }
    if (bench_table_check(&table, err, sizeof err) != 0)
        return incomplete("%s", err);

    /* the output check: CPU reference against the unlocked GPU path, same model and text */
    const char *verdict = "skipped";
    char verdict_reason[300] = "";
    double ref = NAN, unl = NAN, rel = NAN;
    if (!guest)
        snprintf(verdict_reason, sizeof verdict_reason, "host mode: nothing unlocked to check");
    else if (o.check == 0)
        snprintf(verdict_reason, sizeof verdict_reason, "--no-check-output");
    else if (!have_ppl)
        snprintf(verdict_reason, sizeof verdict_reason, "llama-perplexity not found next to llama-bench or on PATH");
    if (do_check) {
        char text_path[1400];
        snprintf(text_path, sizeof text_path, "%s/check-text.txt", outdir);
        if (out_dir_put(&od, "check-text.txt", vzcaps_check_text, strlen(vzcaps_check_text)) != 0)
            return incomplete("stopped: the output check's text could not be written (above)");
        char *ref_args[] = {lp, "-m", (char *)o.model, "-f", text_path, "-c", "128", "-b", "128", "-ngl", "0", NULL};
        char *gpu_cmd[] = {lp, "-m", (char *)o.model, "-f", text_path, "-c", "128", "-b", "128", "-ngl", "99", NULL};
        char *gpu_args[40];
        cli_run_argv(gpu_args, 40, self, &co, gpu_cmd);
        int rc1 = perplexity_run(ref_args, true, "check-reference", "output check, CPU reference", ++step, steps, &ref);
        int rc2 = vzcaps_stop_signal() ? 0 : perplexity_run(gpu_args, false, "check-unlocked", "output check, unlocked GPU", ++step, steps, &unl);
        if (rc1 < 0 || rc2 < 0)
            return incomplete("stopped: the output check's output could not be written (above)");
        if (vzcaps_stop_signal())
            return incomplete("stopped");
        verdict = rc1 || rc2 ? "error" : ppl_verdict(ref, unl, &rel);
        if (strcmp(verdict, "pass") == 0)
            snprintf(verdict_reason, sizeof verdict_reason, "perplexity %.4f (unlocked GPU) vs %.4f (CPU reference): %.2f %% apart, within %.0f %%",
                     unl, ref, rel * 100, PPL_TOLERANCE * 100);
        else if (strcmp(verdict, "fail") == 0)
            snprintf(verdict_reason, sizeof verdict_reason, "perplexity %.4f (unlocked GPU) vs %.4f (CPU reference): %.2f %% apart, over %.0f %%: the unlocked output is WRONG",
                     unl, ref, rel * 100, PPL_TOLERANCE * 100);
        else
            snprintf(verdict_reason, sizeof verdict_reason, "llama-perplexity failed or printed no final estimate (see check-*.stderr)");
    }

    /* what the Metal backend said in each run */
    bool unlocked_taken = true;
    if (guest && caps[1].found && caps[1].simdgroup_mm != 1)
        unlocked_taken = false;

    FILE *f;
    struct memfile mf;
    if ((f = mem_open(&mf))) {
        struct json j;
        json_begin(&j, f);
        json_obj(&j, NULL);
        for (int k = 0; k < (guest ? 2 : 1); k++)
            metal_caps_json(&caps[k], &j, roles[k]);
        json_end_obj(&j);
        json_finish(&j);
    }
    mem_put(&mf, "capabilities.json");
    if ((f = mem_open(&mf))) {
        struct json j;
        json_begin(&j, f);
        json_obj(&j, NULL);
        json_str(&j, "verdict", verdict);
        json_str(&j, "reason", verdict_reason);
        json_str(&j, "method", "llama-perplexity over check-text.txt, -c 128: CPU (-ngl 0) against the unlocked GPU (-ngl 99)");
        json_num(&j, "tolerance_relative", PPL_TOLERANCE);
        json_num(&j, "perplexity_reference", ref);
        json_num(&j, "perplexity_unlocked", unl);
        json_num(&j, "relative_difference", rel);
        json_end_obj(&j);
        json_finish(&j);
    }
    mem_put(&mf, "check-output.json");
    struct machine m;
    machine_facts(&m);
    if ((f = mem_open(&mf))) {
        struct json j;
        json_begin(&j, f);
        json_obj(&j, NULL);
        json_str(&j, "vzcaps_version", VZCAPS_VERSION);
        json_str(&j, "mode", o.mode);
        machine_json(&j, &m);
        json_str(&j, "llama_build_commit", table.build_commit[0] ? table.build_commit : NULL);
        if (table.build_number)
            json_int(&j, "llama_build_number", table.build_number);
        else
            json_null(&j, "llama_build_number");
        json_str(&j, "model", o.model);
        hash_or_null(&j, "model_sha256", o.model);
        json_str(&j, "llama_bench", lb);
        json_arr(&j, "llama_bench_extra_args");
        for (int i = 0; i < o.n_extra; i++)
            json_str(&j, NULL, o.extra[i]);
        json_end_arr(&j);
        hash_or_null(&j, "llama_bench_sha256", lb);
        json_str(&j, "library", have_lib ? library : NULL);
        hash_or_null(&j, "library_sha256", have_lib ? library : NULL);
        json_obj(&j, "arguments");
        json_str(&j, "p", o.p);
        json_str(&j, "n", o.n);
        json_str(&j, "r", o.r);
        json_end_obj(&j);
        json_obj(&j, "effective_profile");
        json_bool(&j, "enabled", guest && cfg.profile.state == VZCAPS_ENABLED);
        if (guest && cfg.profile.apple_family_max)
            json_int(&j, "apple_family_max", cfg.profile.apple_family_max);
        else
            json_null(&j, "apple_family_max");
        json_str(&j, "profile", cfg.section[0] ? cfg.section : NULL);
        json_arr(&j, "notes");
        for (size_t i = 0; guest && i < cfg.profile.n_notes; i++)
            json_str(&j, NULL, cfg.profile.notes[i]);
        json_end_arr(&j);
        json_end_obj(&j);
        json_end_obj(&j);
        json_finish(&j);
    }
    mem_put(&mf, "environment.json");
    bench_render_csv(&table, mem_open(&mf));
    mem_put(&mf, "results.csv");
    bench_render_svg(&table, mem_open(&mf));
    mem_put(&mf, "chart.svg");
    f = mem_open(&mf);
    fprintf(f, "# llama-bench: %s\n\n", guest ? "stock guest vs unlocked guest (vzcaps)" : "host (bare metal)");
    if (o.n_extra) { /* as code spans nothing in an argument can end: no forged line or markup */
        fprintf(f, "Extra llama-bench arguments, the same in every run:");
        for (int i = 0; i < o.n_extra; i++) {
            char *span = md_code_span(o.extra[i]);
            fprintf(f, " %s", span);
            free(span);
        }
        fprintf(f, "\n\n");
    }
    bench_render_md(&table, f);
    fprintf(f, "\nOutput check: **%s**: %s\n", verdict, verdict_reason);
    if (!unlocked_taken)
        fprintf(f, "\n**Warning:** the unlocked run's Metal backend did not report SIMD-group matrix multiply: the unlocked paths were not taken.\n");
    mem_put(&mf, "results.md");
    if (od.failures) /* nothing is reported as done that was not written */
        return incomplete("%d of its files could not be written (above)", od.failures);
    write_summary(o.mode, NULL, verdict, verdict_reason, &table, guest ? unlocked_taken : -1);
    out_dir_sums(&od);
    if (od.failures) {
        eprintf("vzcaps bench: the bundle in %s is incomplete: %d of its files could not be written (above)", outdir, od.failures);
        return 1;
    }
    vzcaps_stop_now(); /* a stop signal that came after the last run: the bundle is complete */
    if (print_json)
        return strcmp(verdict, "fail") == 0 || strcmp(verdict, "error") == 0 ? 1 : 0;
    bench_render_text(&table, stdout);
    printf("output check: %s: %s\nbundle: %s\n", verdict, esc(verdict_reason), esc(outdir));
    if (!unlocked_taken)
        eprintf("vzcaps bench: warning: the unlocked run did not report SIMD-group matrix multiply; see %s/unlocked.stderr", outdir);
    return strcmp(verdict, "fail") == 0 || strcmp(verdict, "error") == 0 ? 1 : 0;
}

int cmd_bench(int argc, char **argv)
{
    od.fd = -1;
    int rc = bench_main(argc, argv);
    out_dir_close(&od);
    return rc;
}
