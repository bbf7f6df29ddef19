/* vzcaps bench: runs llama-bench stock and unlocked (or once on a host), checks that the
 * faster output is still right, and writes an evidence bundle. Decisions (tables, verdicts,
 * renderings) live in benchdata.c and are tested with a stand-in llama-bench. */
#define _XOPEN_SOURCE 700
#include "../../data/benchdata.h"
#include "../cli.h"
#include "../../common/child.h"
#include "../../common/readfile.h"
#include "../../common/sha256.h"
#include "../../common/stockenv.h"

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
        vzcaps_stock_child(&co, preload_var, library_file, self_path_kept());
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

/* One bench run's state, filled step by step (bench_main). */
struct bench_state {
    struct bench_opts o;
    bool guest, have_lib, have_ppl, do_check, unlocked_taken;
    char lb[1100], lp[1100], outdir[1100], self[1024], library[1100], tried[2400];
    struct vzcaps_config_result cfg;
    struct cfg_opts co;
    char **bench_args, **unlocked_args; /* live until the command ends */
    int steps, step;
    struct bench_table table;
    struct metal_caps caps[2];
    const char *roles[2];
    const char *verdict;
    char verdict_reason[300];
    double ref, unl, rel;
};

/* Each step: 0 to go on, or the command's exit status (after its message). */
static int bench_parse(int argc, char **argv, struct bench_state *bs)
{
    struct bench_opts *o = &bs->o;
    const char *check = NULL;
    *o = (struct bench_opts){.p = "512", .n = "128", .r = "10", .mode = "guest"};
    const struct opt_bind binds[] = {
        OPT_VALUE("-m", &o->model), OPT_VALUE("--llama-bench", &o->llama_bench), OPT_VALUE("--llama-perplexity", &o->llama_perplexity),
        OPT_VALUE("-p", &o->p), OPT_VALUE("-n", &o->n), OPT_VALUE("-r", &o->r), OPT_VALUE("--out", &o->out),
        OPT_VALUE("--profile", &o->profile), OPT_VALUE("--mode", &o->mode), OPT_VALUE("--timeout", &o->timeout),
        OPT_WHICH("--check-output", &check), OPT_WHICH("--no-check-output", &check), OPT_FLAG("--json", &print_json), {0}};
    int bad = cli_parse("bench", &argc, argv, binds);
    o->extra = argv + 1, o->n_extra = argc - 1; /* after --: passed on */
    o->check = !check ? -1 : strcmp(check, "--check-output") == 0;
    return bad;
}

/* The options and the model, llama-bench found. */
static int bench_check(struct bench_state *bs)
{
    if (!bs->o.model)
        return usage_error("bench", "-m MODEL is required");
    if (strcmp(bs->o.mode, "guest") && strcmp(bs->o.mode, "host"))
        return usage_error("bench", "--mode is guest or host, not \"%s\"", bs->o.mode);
    if (bs->o.timeout && timeout_opt("bench", bs->o.timeout, &timeout_s) != 0)
        return EXIT_USAGE;
    bench_mode = bs->o.mode;
    uint64_t p, n, r;
    if (vzcaps_parse_u64(bs->o.p, &p) || vzcaps_parse_u64(bs->o.n, &n) || vzcaps_parse_u64(bs->o.r, &r))
        return usage_error("bench", "-p, -n and -r take plain decimal counts");
    if (r == 0 || p + n == 0)
        return usage_error("bench", "-r must be at least 1, and -p or -n must be positive (nothing to measure)");
    bs->guest = strcmp(bs->o.mode, "guest") == 0;
    /* the buffers below hold these paths and what is built from them, never a cut one */
    const char *const paths[][2] = {{"--out", bs->o.out}, {"--llama-bench", bs->o.llama_bench}, {"--llama-perplexity", bs->o.llama_perplexity}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i][1] && strlen(paths[i][1]) > VZCAPS_PATH_MAX)
            return usage_error("bench", "%s: too long (limit %d bytes)", paths[i][0], VZCAPS_PATH_MAX);
    struct stat mst;
    char mwhy[200];
    int mfd = vzcaps_open_regular(bs->o.model, &mst, mwhy, sizeof mwhy); /* a FIFO never hangs the hash below */
    if (mfd < 0) {
        const char *why = strncmp(mwhy, "cannot open: ", 13) == 0 ? mwhy + 13 : mwhy;
        eprintf("vzcaps bench: %s: cannot read the model: %s", bs->o.model, why);
        return 1;
    }
    close(mfd);
    if (!find_executable(bs->o.llama_bench ? bs->o.llama_bench : "llama-bench", NULL, bs->lb, sizeof bs->lb)) {
        eprintf("vzcaps bench: %s not found or not executable; give --llama-bench PATH", bs->o.llama_bench ? bs->o.llama_bench : "llama-bench");
        return 1;
    }
    return 0;
}

/* The bundle's name, the configuration, the arguments of every run, llama-perplexity. */
static int bench_setup(struct bench_state *bs)
{
    if (bs->o.out)
        snprintf(bs->outdir, sizeof bs->outdir, "%s", bs->o.out);
    else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(bs->outdir, sizeof bs->outdir, "vzcaps-bench-%Y%m%dT%H%M%SZ", &tm);
    }
    /* a new or empty directory, never through a link (made after every argument is checked) */
    self_path(bs->self, sizeof bs->self);
    bs->have_lib = find_library(bs->library, sizeof bs->library, bs->tried, sizeof bs->tried) == 0;
    bs->co = (struct cfg_opts){.profile = bs->o.profile, .exe = vzcaps_basename(bs->lb)};
    cli_configure_run(&bs->co, &bs->cfg);
    if (bs->guest && bs->cfg.profile.state != VZCAPS_ENABLED) {
        eprintf("vzcaps bench: the unlocked run would be stock: %s", bs->cfg.profile.n_notes ? bs->cfg.profile.notes[0] : "nothing configured");
        return 1;
    }
    /* the extra arguments first, so that the measured counts and the JSON output below win */
    bs->bench_args = calloc((size_t)bs->o.n_extra + 16, sizeof *bs->bench_args);
    bs->unlocked_args = calloc((size_t)bs->o.n_extra + 32, sizeof *bs->unlocked_args);
    if (!bs->bench_args || !bs->unlocked_args) {
        eprintf("vzcaps bench: out of memory");
        return 1;
    }
    size_t na = 0;
    bs->bench_args[na++] = bs->lb;
    for (int i = 0; i < bs->o.n_extra; i++)
        bs->bench_args[na++] = bs->o.extra[i];
    const char *fixed[] = {"-m", bs->o.model, "-p", bs->o.p, "-n", bs->o.n, "-r", bs->o.r, "-o", "json"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        bs->bench_args[na++] = (char *)fixed[i];
    /* the unlocked runs go through `vzcaps run` with the same profile or family */
    cli_run_argv(bs->unlocked_args, (size_t)bs->o.n_extra + 32, bs->self, &bs->co, bs->bench_args);
    /* a llama-bench found by name in a vzcaps directory (a shim's, or one where the name starts
     * vzcaps) is vzcaps: the stock run looks the name up on its own PATH, which has no such
     * directory (the directory of the file found, not the file: it was never a directory) */
    if (!bs->o.llama_bench || !strchr(bs->o.llama_bench, '/')) {
        const char *slash = strrchr(bs->lb, '/');
        char *dir = slash ? xformat("%.*s", slash == bs->lb ? 1 : (int)(slash - bs->lb), bs->lb) : xformat("%s", "");
        if (vzcaps_is_vzcaps_dir(dir, bs->self))
            bs->bench_args[0] = (char *)(bs->o.llama_bench ? bs->o.llama_bench : "llama-bench");
        free(dir);
    }

    bs->have_ppl = find_executable(bs->o.llama_perplexity ? bs->o.llama_perplexity : "llama-perplexity", bs->o.llama_perplexity ? NULL : bs->lb, bs->lp, sizeof bs->lp);
    if (bs->o.llama_perplexity && !bs->have_ppl) { /* given, so never skipped in silence */
        eprintf("vzcaps bench: %s not found or not executable; give --llama-perplexity PATH", bs->o.llama_perplexity);
        return 1;
    }
    bs->do_check = bs->guest && bs->o.check != 0 && bs->have_ppl;
    if (bs->guest && bs->o.check == 1 && !bs->have_ppl) {
        eprintf("vzcaps bench: --check-output needs llama-perplexity (next to llama-bench, on PATH, or --llama-perplexity)");
        return 1;
    }
    return 0;
}

/* The bundle opened, then the stock (or host) and unlocked llama-bench runs, read. */
static int bench_runs(struct bench_state *bs)
{
    if (out_dir_open(&od, "bench", bs->outdir) != 0)
        return 1;
    vzcaps_stop_defer(); /* a stop signal stops the run; the bundle is then marked incomplete */
    bs->steps = bs->guest ? 2 + (bs->do_check ? 2 : 0) : 1, bs->step = 0;
    char a[1400], b[1400];
    memset(&bs->table, 0, sizeof bs->table);
    char err[1400];
    metal_caps_init(&bs->caps[0]), metal_caps_init(&bs->caps[1]);
    bs->roles[0] = bs->guest ? "stock" : "host", bs->roles[1] = "unlocked";
    for (int k = 0; k < (bs->guest ? 2 : 1); k++) {
        char out_name[32], err_name[32];
        snprintf(out_name, sizeof out_name, "%s.json", bs->roles[k]);
        snprintf(err_name, sizeof err_name, "%s.stderr", bs->roles[k]);
        snprintf(a, sizeof a, "%s/%s", bs->outdir, out_name);
        snprintf(b, sizeof b, "%s/%s", bs->outdir, err_name);
        enum bench_role role = k ? ROLE_UNLOCKED : bs->guest ? ROLE_STOCK : ROLE_HOST;
        /* the run's GPU family line (it picks llama.cpp's tuning rows) and the shim that spoke,
         * read from its standard error as it comes */
        int rc = run_to_files(k ? bs->unlocked_args : bs->bench_args, !k, out_name, err_name, bs->roles[k], ++bs->step, bs->steps, NULL,
                              caps_line, &bs->caps[k]);
        bs->table.caps[role] = bs->caps[k];
        bs->table.have_caps[role] = true;
        if (rc < 0)
            return incomplete("stopped: the %s run's output could not be written (above)", bs->roles[k]);
        if (rc != 0 || vzcaps_stop_signal())
            return incomplete("the %s run failed (%s); its output is in %s", bs->roles[k], steps_done[n_steps_done - 1].result, b);
        if (bench_table_add_file(&bs->table, role, a, err, sizeof err) != 0)
            return incomplete("%s", err);
    }
    if (bench_table_check(&bs->table, err, sizeof err) != 0)
        return incomplete("%s", err);
    return 0;
}

/* The output check: CPU reference against the unlocked GPU path, same model and text. */
static int bench_output_check(struct bench_state *bs)
{
    bs->verdict = "skipped";
    bs->ref = NAN, bs->unl = NAN, bs->rel = NAN;
    if (!bs->guest)
        snprintf(bs->verdict_reason, sizeof bs->verdict_reason, "host mode: nothing unlocked to check");
    else if (bs->o.check == 0)
        snprintf(bs->verdict_reason, sizeof bs->verdict_reason, "--no-check-output");
    else if (!bs->have_ppl)
        snprintf(bs->verdict_reason, sizeof bs->verdict_reason, "llama-perplexity not found next to llama-bench or on PATH");
    if (bs->do_check) {
        char text_path[1400];
        snprintf(text_path, sizeof text_path, "%s/check-text.txt", bs->outdir);
        if (out_dir_put(&od, "check-text.txt", vzcaps_check_text, strlen(vzcaps_check_text)) != 0)
            return incomplete("stopped: the output check's text could not be written (above)");
        char *ref_args[] = {bs->lp, "-m", (char *)bs->o.model, "-f", text_path, "-c", "128", "-b", "128", "-ngl", "0", NULL};
        char *gpu_cmd[] = {bs->lp, "-m", (char *)bs->o.model, "-f", text_path, "-c", "128", "-b", "128", "-ngl", "99", NULL};
        char *gpu_args[40];
        cli_run_argv(gpu_args, 40, bs->self, &bs->co, gpu_cmd);
        int rc1 = perplexity_run(ref_args, true, "check-reference", "output check, CPU reference", ++bs->step, bs->steps, &bs->ref);
        int rc2 = vzcaps_stop_signal() ? 0 : perplexity_run(gpu_args, false, "check-unlocked", "output check, unlocked GPU", ++bs->step, bs->steps, &bs->unl);
        if (rc1 < 0 || rc2 < 0)
            return incomplete("stopped: the output check's output could not be written (above)");
        if (vzcaps_stop_signal())
            return incomplete("stopped");
        bs->verdict = rc1 || rc2 ? "error" : ppl_verdict(bs->ref, bs->unl, &bs->rel);
        if (strcmp(bs->verdict, "pass") == 0)
            snprintf(bs->verdict_reason, sizeof bs->verdict_reason, "perplexity %.4f (unlocked GPU) vs %.4f (CPU reference): %.2f %% apart, within %.0f %%",
                     bs->unl, bs->ref, bs->rel * 100, PPL_TOLERANCE * 100);
        else if (strcmp(bs->verdict, "fail") == 0)
            snprintf(bs->verdict_reason, sizeof bs->verdict_reason, "perplexity %.4f (unlocked GPU) vs %.4f (CPU reference): %.2f %% apart, over %.0f %%: the unlocked output is WRONG",
                     bs->unl, bs->ref, bs->rel * 100, PPL_TOLERANCE * 100);
        else
            snprintf(bs->verdict_reason, sizeof bs->verdict_reason, "llama-perplexity failed or printed no final estimate (see check-*.stderr)");
    }
    return 0;
}

/* capabilities.json and check-output.json. */
static void bench_write_caps(struct bench_state *bs)
{
    bs->unlocked_taken = true;
    if (bs->guest && bs->caps[1].found && bs->caps[1].simdgroup_mm != 1)
        bs->unlocked_taken = false;

    FILE *f;
    struct memfile mf;
    if ((f = mem_open(&mf))) {
        struct json j;
        json_begin(&j, f);
        json_obj(&j, NULL);
        for (int k = 0; k < (bs->guest ? 2 : 1); k++)
            metal_caps_json(&bs->caps[k], &j, bs->roles[k]);
        json_end_obj(&j);
        json_finish(&j);
    }
    mem_put(&mf, "capabilities.json");
    if ((f = mem_open(&mf))) {
        struct json j;
        json_begin(&j, f);
        json_obj(&j, NULL);
        json_str(&j, "verdict", bs->verdict);
        json_str(&j, "reason", bs->verdict_reason);
        json_str(&j, "method", "llama-perplexity over check-text.txt, -c 128: CPU (-ngl 0) against the unlocked GPU (-ngl 99)");
        json_num(&j, "tolerance_relative", PPL_TOLERANCE);
        json_num(&j, "perplexity_reference", bs->ref);
        json_num(&j, "perplexity_unlocked", bs->unl);
        json_num(&j, "relative_difference", bs->rel);
        json_end_obj(&j);
        json_finish(&j);
    }
    mem_put(&mf, "check-output.json");
}

/* environment.json: the machine, the programs and their hashes, the effective profile. */
static void bench_write_environment(struct bench_state *bs)
{
    FILE *f;
    struct memfile mf;
    struct machine m;
    machine_facts(&m);
    if ((f = mem_open(&mf))) {
        struct json j;
        json_begin(&j, f);
        json_obj(&j, NULL);
        json_str(&j, "vzcaps_version", VZCAPS_VERSION);
        json_str(&j, "mode", bs->o.mode);
        machine_json(&j, &m);
        json_str(&j, "llama_build_commit", bs->table.build_commit[0] ? bs->table.build_commit : NULL);
        json_int_or_null(&j, "llama_build_number", bs->table.build_number != 0, bs->table.build_number);
        json_str(&j, "model", bs->o.model);
        hash_or_null(&j, "model_sha256", bs->o.model);
        json_str(&j, "llama_bench", bs->lb);
        json_arr(&j, "llama_bench_extra_args");
        for (int i = 0; i < bs->o.n_extra; i++)
            json_str(&j, NULL, bs->o.extra[i]);
        json_end_arr(&j);
        hash_or_null(&j, "llama_bench_sha256", bs->lb);
        json_str(&j, "library", bs->have_lib ? bs->library : NULL);
        hash_or_null(&j, "library_sha256", bs->have_lib ? bs->library : NULL);
        json_obj(&j, "arguments");
        json_str(&j, "p", bs->o.p);
        json_str(&j, "n", bs->o.n);
        json_str(&j, "r", bs->o.r);
        json_end_obj(&j);
        json_obj(&j, "effective_profile");
        json_bool(&j, "enabled", bs->guest && bs->cfg.profile.state == VZCAPS_ENABLED);
        json_int_or_null(&j, "apple_family_max", bs->guest && bs->cfg.profile.apple_family_max, bs->cfg.profile.apple_family_max);
        json_str(&j, "profile", bs->cfg.section[0] ? bs->cfg.section : NULL);
        json_arr(&j, "notes");
        for (size_t i = 0; bs->guest && i < bs->cfg.profile.n_notes; i++)
            json_str(&j, NULL, bs->cfg.profile.notes[i]);
        json_end_arr(&j);
        json_end_obj(&j);
        json_end_obj(&j);
        json_finish(&j);
    }
    mem_put(&mf, "environment.json");
}

/* results.csv, chart.svg, results.md. */
static void bench_write_results(struct bench_state *bs)
{
    FILE *f;
    struct memfile mf;
    bench_render_csv(&bs->table, mem_open(&mf));
    mem_put(&mf, "results.csv");
    bench_render_svg(&bs->table, mem_open(&mf));
    mem_put(&mf, "chart.svg");
    f = mem_open(&mf);
    fprintf(f, "# llama-bench: %s\n\n", bs->guest ? "stock guest vs unlocked guest (vzcaps)" : "host (bare metal)");
    if (bs->o.n_extra) { /* as code spans nothing in an argument can end: no forged line or markup */
        fprintf(f, "Extra llama-bench arguments, the same in every run:");
        for (int i = 0; i < bs->o.n_extra; i++) {
            char *span = md_code_span(bs->o.extra[i]);
            fprintf(f, " %s", span);
            free(span);
        }
        fprintf(f, "\n\n");
    }
    bench_render_md(&bs->table, f);
    fprintf(f, "\nOutput check: **%s**: %s\n", bs->verdict, bs->verdict_reason);
    if (!bs->unlocked_taken)
        fprintf(f, "\n**Warning:** the unlocked run's Metal backend did not report SIMD-group matrix multiply: the unlocked paths were not taken.\n");
    mem_put(&mf, "results.md");
}

/* summary.json and SHA256SUMS, then what is printed; the exit status. */
static int bench_finish(struct bench_state *bs)
{
    if (od.failures) /* nothing is reported as done that was not written */
        return incomplete("%d of its files could not be written (above)", od.failures);
    write_summary(bs->o.mode, NULL, bs->verdict, bs->verdict_reason, &bs->table, bs->guest ? bs->unlocked_taken : -1);
    out_dir_sums(&od);
    if (od.failures) {
        eprintf("vzcaps bench: the bundle in %s is incomplete: %d of its files could not be written (above)", bs->outdir, od.failures);
        return 1;
    }
    vzcaps_stop_now(); /* a stop signal that came after the last run: the bundle is complete */
    if (print_json)
        return strcmp(bs->verdict, "fail") == 0 || strcmp(bs->verdict, "error") == 0 ? 1 : 0;
    bench_render_text(&bs->table, stdout);
    printf("output check: %s: %s\nbundle: %s\n", bs->verdict, esc(bs->verdict_reason), esc(bs->outdir));
    if (!bs->unlocked_taken)
        eprintf("vzcaps bench: warning: the unlocked run did not report SIMD-group matrix multiply; see %s/unlocked.stderr", bs->outdir);
    return strcmp(bs->verdict, "fail") == 0 || strcmp(bs->verdict, "error") == 0 ? 1 : 0;
}

static int bench_main(int argc, char **argv)
{
    static struct bench_state state;
    memset(&state, 0, sizeof state);
    struct bench_state *bs = &state;
    int rc;
    if ((rc = bench_parse(argc, argv, bs)) || (rc = bench_check(bs)) || (rc = bench_setup(bs)) || (rc = bench_runs(bs)) ||
        (rc = bench_output_check(bs)))
        return rc;
    bench_write_caps(bs);
    bench_write_environment(bs);
    bench_write_results(bs);
    return bench_finish(bs);
}

int cmd_bench(int argc, char **argv)
{
    od.fd = -1;
    int rc = bench_main(argc, argv);
    out_dir_close(&od);
    return rc;
}
