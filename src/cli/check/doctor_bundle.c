/* vzcaps doctor --bundle DIR [-- CMD ARGS]: the first-run bundle, the one thing a person runs on
 * a Mac to show whether vzcaps works there, and the verdict read from it (portable, unit-tested).
 * Never: writes the environment, user or host names, or the home directory's path (in any form);
 * writes anywhere but a new or empty DIR (safewrite); hides a file or step that failed. */
#define _XOPEN_SOURCE 700
#include "../cli.h"
#include "../../common/child.h"
#include "../../data/scrub.h"
#include "../../common/stockenv.h"
#include "../../common/sha256.h"
#include "../../data/jsonread.h"
#include "../../data/verdict.h"
#include "../../device/metal.h"

#include <dirent.h>
#include <time.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- the device's class (the hidden child __device-class) ---- */

void device_classes_json(FILE *out, const char *const *chain, size_t n, const char *init_owner)
{
    struct json j;
    json_begin(&j, out);
    json_obj(&j, NULL);
    json_str(&j, "class", n ? chain[0] : NULL);
    json_arr(&j, "superclasses");
    for (size_t i = 1; i < n; i++)
        json_str(&j, NULL, chain[i]);
    json_end_arr(&j);
    json_bool(&j, "has_initGPUFamilySupport", init_owner != NULL);
    json_str(&j, "initGPUFamilySupport_defined_by", init_owner);
    json_end_obj(&j);
    json_finish(&j);
}

int child_device_class(void)
{
    const char *chain[32], *owner = NULL;
    size_t n = 0;
    char why[200];
    if (metal_device_classes(chain, 32, &n, &owner, why, sizeof why) != 0) {
        eprintf("vzcaps: %s", why);
        return EXIT_NEEDS_MACOS;
    }
    device_classes_json(stdout, chain, n, owner);
    return 0;
}

/* ---- crash reports ---- */

/* Whether name is a crash report of the program called prog: "PROG-YYYY-MM-DD-HHMMSS.ips"
 * (macOS 12 and later) or "PROG_YYYY-MM-DD-HHMMSS_HOST.crash" (a digit after the separator:
 * "probe-helper-..." is another program's). */
bool crash_report_matches(const char *name, const char *prog)
{
    size_t n = strlen(name), p = strlen(prog);
    if (!p || n <= p + 1 || strncmp(name, prog, p) != 0 || (name[p] != '-' && name[p] != '_') ||
        name[p + 1] < '0' || name[p + 1] > '9')
        return false;
    return (n > 4 && strcmp(name + n - 4, ".ips") == 0) || (n > 6 && strcmp(name + n - 6, ".crash") == 0);
}

/* The newest crash report of prog in dir, as text for the bundle (heap). */
static char *newest_crash_report(const char *dir, const char *prog)
{
    DIR *d = opendir(dir);
    if (!d)
        return xformat("no crash report of %s (%s: %s)\n", prog, dir, strerror(errno));
    char *best = NULL;
    time_t best_t = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!crash_report_matches(e->d_name, prog))
            continue;
        char *path = xformat("%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (!best || st.st_mtime > best_t)) {
            free(best);
            best = path, best_t = st.st_mtime;
        } else {
            free(path);
        }
    }
    closedir(d);
    if (!best)
        return xformat("no crash report of %s in %s\n", prog, dir);
    char err[4200];
    size_t len;
    char *text = read_text_file(best, &len, err, sizeof err);
    char when[64];
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&best_t, &tm));
    /* the file's name is not written: a .crash file's name holds the host name */
    char *out = text ? xformat("newest crash report of %s (modified %s):\n\n%s\n", prog, when, text)
                     : xformat("newest crash report of %s: cannot be read\n", prog);
    free(text);
    free(best);
    return out;
}

/* ---- no personal data ---- */

/* The home directory in every form a step may print it: as set, resolved (HOME may be a link),
 * the user database's, /Users/NAME, each also as JSON and as esc() write it. Longest first, so
 * a longer form is never half-replaced by a shorter one. */
static char **needles;
static size_t n_needles, cap_needles;

static void add_needle(char *s)
{
    if (!s || strlen(s) < 2) {
        free(s);
        return;
    }
    for (size_t i = 0; i < n_needles; i++)
        if (strcmp(needles[i], s) == 0) {
            free(s);
            return;
        }
    needles = xgrow(needles, &cap_needles, n_needles, sizeof *needles);
    needles[n_needles++] = s;
}

static char *json_form(const char *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    struct json j;
    json_begin(&j, f);
    json_str(&j, NULL, s);
    if (fclose(f) != 0 || n < 2) {
        free(buf);
        return NULL;
    }
    buf[n - 1] = '\0'; /* without the quotes */
    memmove(buf, buf + 1, n - 1);
    return buf;
}

static void add_home_forms(const char *h)
{
    if (!h || !*h || strcmp(h, "/") == 0)
        return;
    char *forms[2] = {xformat("%s", h), realpath(h, NULL)};
    for (int k = 0; k < 2; k++) {
        const char *f = forms[k];
        if (!f || strcmp(f, "/") == 0)
            continue;
        add_needle(xformat("%s", f));
        add_needle(json_form(f));
        add_needle(xformat("%s", esc(f)));
        add_needle(json_form(esc(f)));
    }
    free(forms[0]);
    free(forms[1]);
}

static int longest_first(const void *a, const void *b)
{
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

static void collect_needles(void)
{
    while (n_needles)
        free(needles[--n_needles]);
    add_home_forms(getenv("HOME"));
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir)
        add_home_forms(pw->pw_dir);
    if (pw && pw->pw_name) {
        char *users = xformat("/Users/%s", pw->pw_name);
        add_home_forms(users);
        free(users);
    }
    if (n_needles)
        qsort(needles, n_needles, sizeof needles[0], longest_first);
}

/* ---- the files of a step, written as the step runs ---- */

static struct out_dir od; /* the bundle's directory and what was written into it */

/* One file of the bundle fed as it comes, scrubbed first (personal data never reaches the
 * disk); begun at its first byte unless always. */
struct bundle_file {
    const char *name;
    bool always, begun, failed;
    struct out_stream out;
    struct vzcaps_scrub sc;
};

static void to_out(void *ctx, const char *data, size_t len)
{
    out_stream_write(ctx, data, len);
}

static int bf_write(void *ctx, const char *data, size_t len)
{
    struct bundle_file *f = ctx;
    if (f->failed)
        return -1;
    if (!f->begun) {
        f->begun = true;
        vzcaps_scrub_init(&f->sc, needles, n_needles, to_out, &f->out);
        if (out_dir_begin(&od, &f->out, f->name) != 0) {
            f->failed = true;
            return -1;
        }
    }
    if (vzcaps_scrub_add(&f->sc, data, len) != 0) {
        eprintf("vzcaps doctor: %s/%s: out of memory", od.path, f->name);
        out_stream_abort(&f->out);
        od.failures++;
        f->failed = true;
        return -1;
    }
    return 0;
}

static void bf_end(struct bundle_file *f)
{
    if (!f->begun && f->always)
        bf_write(f, "", 0);
    if (f->begun && !f->failed) {
        vzcaps_scrub_end(&f->sc);
        out_dir_end(&f->out);
    }
    free(f->sc.buf);
    f->sc.buf = NULL;
}

/* Writes one whole file of the bundle, scrubbed (a failure is named and counted). */
static void put_file(const char *name, const char *data, size_t len)
{
    struct bundle_file f = {.name = name, .always = true};
    bf_write(&f, data, len);
    bf_end(&f);
}

static void put_text(const char *name, const char *text)
{
    put_file(name, text, strlen(text));
}

/* What one stream of a step feeds: its file, its kept lines, its head (each optional). */
struct feed {
    struct bundle_file *file;
    struct vzcaps_lines lines;
    struct vzcaps_head *head;
};

static int feed_write(void *ctx, const char *data, size_t len)
{
    struct feed *f = ctx;
    if (f->lines.line)
        vzcaps_lines_write(&f->lines, data, len);
    if (f->head)
        vzcaps_head_add(f->head, data, len);
    if (f->file)
        bf_write(f->file, data, len);
    return 0;
}

/* ---- steps ---- */

enum step_state { STEP_OK, STEP_FAILED, STEP_SKIPPED };

struct step {
    char *file, *what; /* the file it wrote, what it is */
    enum step_state state;
    char *result;      /* "exit 0", "exit 1", "killed by signal 11", "could not be started", ... */
};
static struct step *steps;
static size_t n_steps, cap_steps;
static unsigned timeout_s = DOCTOR_TIMEOUT;

static void record(const char *file, const char *what, enum step_state state, char *result)
{
    steps = xgrow(steps, &cap_steps, n_steps, sizeof *steps);
    steps[n_steps++] = (struct step){xformat("%s", file), xformat("%s", what), state, result};
}

#define MERGE_STDERR 0x100 /* run_step: standard error into FILE too (interleaved as it comes) */
#define ERR_ONLY 0x200     /* run_step: standard error alone into FILE, standard output discarded */
#define STOCK 0x400        /* run_step: stock (vzcaps_stock_child: no vzcaps variable, library or shim directory) */
#define SEARCH 0x800       /* run_step: argv[0] looked up on PATH */

/* What a caller wants of a step besides its files: the lines of standard error that start with
 * a prefix, the first bytes of standard output. */
struct step_keep {
    struct vzcaps_line_keep *err_lines[2]; /* each optional */
    struct vzcaps_head *out_head;
};

static void keep_lines_of(void *ctx, const char *line, size_t len)
{
    const struct step_keep *k = ctx;
    for (int i = 0; i < 2; i++)
        if (k->err_lines[i])
            vzcaps_keep_line(k->err_lines[i], line, len);
}

/* Runs argv, its output streamed into FILE and what it printed on standard error into
 * FILE.stderr (when it printed anything); records the step with its result (a timeout, a cap,
 * processes it left). The wait status, -1 when it could not be started. */
static int run_step(const char *file, const char *what, char *const argv[], char *const env[], int flags,
                    const struct step_keep *keep)
{
    if (vzcaps_stop_signal()) /* stopping: no new step starts */
        return -1;
    char *err_name = xformat("%s.stderr", file);
    struct bundle_file out = {.name = file, .always = true}, err = {.name = err_name};
    struct feed fo = {.file = flags & ERR_ONLY ? NULL : &out, .head = keep ? keep->out_head : NULL};
    struct feed fe = {.file = flags & (MERGE_STDERR | ERR_ONLY) ? &out : &err};
    static struct vzcaps_lines no_lines;
    fe.lines = no_lines;
    if (keep && (keep->err_lines[0] || keep->err_lines[1]))
        fe.lines.line = keep_lines_of, fe.lines.ctx = (void *)keep;
    struct vzcaps_child_opts co = {.argv = argv, .search = flags & SEARCH, .env_add = env, .out = {feed_write, &fo},
                                   .err = {feed_write, &fe}, .timeout = timeout_s};
    if (flags & STOCK) /* stock means stock: no shim directory on PATH, no library of ours preloaded (env: NULL) */
        vzcaps_stock_child(&co, preload_var, library_file, self_path_kept());
    struct vzcaps_child_result r;
    vzcaps_child_run(&co, &r);
    if (fe.lines.line)
        vzcaps_lines_end(&fe.lines);
    bf_end(&out);
    bf_end(&err);
    free(err_name);
    bool ok = r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && !r.timed_out && !r.stopped_by;
    record(file, what, ok ? STEP_OK : STEP_FAILED, vzcaps_child_describe(&r, timeout_s, 0));
    return r.status;
}

/* A step this system cannot run: its file says so, and it counts as skipped, not failed. */
static void skip_step(const char *file, const char *what, const char *content)
{
    put_text(file, content ? content : "not available on this system (this step needs macOS)\n");
    record(file, what, STEP_SKIPPED, xformat("not available on this system"));
}

/* Text as a fenced Markdown block that shows it as it is, to a reader of the raw file and of the
 * rendered page alike: the fence is longer than any run of backticks in it, control characters
 * other than newline and tab (DEL too) show as spaces, and it is cut at 400 bytes, never inside a
 * UTF-8 character (saying so; the caller's text may be a head already, so the whole length is not
 * known here). */
static char *fenced(const char *s, size_t len)
{
    size_t run = 0, longest = 0;
    for (size_t i = 0; i < len; i++) /* a NUL included: a control character like the others */
        run = s[i] == '`' ? run + 1 : 0, longest = run > longest ? run : longest;
    size_t fence = longest >= 3 ? longest + 1 : 3, shown = len > 400 ? 400 : len;
    while (shown < len && shown && ((unsigned char)s[shown] & 0xC0) == 0x80) /* a character is cut whole */
        shown--;
    char *ticks = malloc(fence + 1), *body = malloc(shown + 2);
    if (!ticks || !body) {
        eprintf("vzcaps doctor: out of memory");
        exit(1);
    }
    memset(ticks, '`', fence);
    ticks[fence] = '\0';
    size_t n = 0;
    for (; n < shown; n++)
        body[n] = ((unsigned char)s[n] < 0x20 || s[n] == 0x7f) && s[n] != '\n' && s[n] != '\t' ? ' ' : s[n];
    if (n && body[n - 1] != '\n')
        body[n++] = '\n';
    body[n] = '\0';
    char *out = len > shown ? xformat("%stext\n%s%s\n(cut at 400 bytes)", ticks, body, ticks)
                            : xformat("%stext\n%s%s", ticks, body, ticks);
    free(ticks), free(body);
    return out;
}

/* One text of the workload's two runs, under its own heading: stock, then through vzcaps run. */
static char *both_runs(char *md, const char *what, const char *stock, size_t slen, const char *unlocked, size_t ulen)
{
    char *a = slen ? fenced(stock, slen) : xformat("(none)"), *b = ulen ? fenced(unlocked, ulen) : xformat("(none)");
    char *more = xformat("%s\n### %s\n\nStock:\n\n%s\n\nThrough vzcaps run:\n\n%s\n", md, what, a, b);
    free(md), free(a), free(b);
    return more;
}

/* ---- the workload, stock and through vzcaps run (doctor --bundle DIR -- CMD ARGS) ---- */

static char *workload_section(char *self, char **cmd)
{
    size_t n = 0, argc = 0;
    while (cmd[argc])
        argc++;
    char **argv_run = calloc(argc + 4, sizeof *argv_run); /* every argument, however many */
    if (!argv_run) {
        eprintf("vzcaps doctor: out of memory");
        exit(1);
    }
    argv_run[n++] = self, argv_run[n++] = "run", argv_run[n++] = "--";
    for (char **a = cmd; *a; a++)
        argv_run[n++] = *a;
    argv_run[n] = NULL;
    const char *const marks[] = {"ggml_metal_device_init:", "vzcaps:"};
    static struct vzcaps_line_keep kept[2][2]; /* [stock, through vzcaps run][mark] */
    struct vzcaps_head out_head[2] = {{.limit = 401}, {.limit = 401}};
    char *res[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        kept[r][0] = (struct vzcaps_line_keep){.prefix = marks[0]};
        kept[r][1] = (struct vzcaps_line_keep){.prefix = marks[1]};
        struct step_keep keep = {.err_lines = {&kept[r][0], &kept[r][1]}, .out_head = &out_head[r]};
        size_t before = n_steps;
        if (r == 0)
            run_step("workload-stock.txt", "the command, stock", cmd, NULL, SEARCH | STOCK, &keep);
        else
            run_step("workload-vzcaps.txt", "the command through vzcaps run", argv_run, NULL, 0, &keep);
        res[r] = xformat("%s", n_steps > before ? steps[n_steps - 1].result : "not run (stopped)");
    }
    char *s_res = res[0], *v_res = res[1];
    char *shown = xformat("%s", "");
    for (char **a = cmd; *a; a++) {
        char *more = xformat("%s%s%s", shown, a == cmd ? "" : " ", *a);
        free(shown);
        shown = more;
    }
    char *c_cmd = md_code_span(shown);
    /* the PATH each run used: the stock one without vzcaps shim directories */
    char **stock_env = vzcaps_stock_environ(environ, preload_var, library_file, self);
    const char *sp = stock_env ? vzcaps_env_path(stock_env) : NULL, *vp = getenv("PATH");
    char *c_sp = sp ? md_code_span(sp) : xformat("%s", stock_env ? "(unset)" : "(not known: out of memory)"), *c_vp = vp ? md_code_span(vp) : xformat("%s", "(unset)");
    char *md = xformat("\n## The command, stock and through vzcaps run\n\n%s\n\n| | stock | through vzcaps run |\n| --- | --- | --- |\n"
                       "| exit status | %s | %s |\n| PATH | %s | %s |\n", c_cmd, s_res, v_res, c_sp, c_vp);
    free(c_cmd), free(c_sp), free(c_vp), free(stock_env);
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
        char *sl = vzcaps_kept_text(&kept[0][k], "workload-stock.txt.stderr"), *vl = vzcaps_kept_text(&kept[1][k], "workload-vzcaps.txt.stderr");
        char *what = xformat("The `%s` lines", marks[k]);
        md = both_runs(md, what, sl, strlen(sl), vl, strlen(vl));
        free(what), free(sl), free(vl);
    }
    md = both_runs(md, "Standard output", out_head[0].data, out_head[0].len, out_head[1].data, out_head[1].len);
    char *more = xformat("%s\nThe whole outputs: workload-stock.txt and workload-vzcaps.txt (standard error in *.stderr).\n", md);
    free(md);
    md = more;
    free(shown), free(s_res), free(v_res), free(argv_run);
    vzcaps_head_free(&out_head[0]), vzcaps_head_free(&out_head[1]);
    return md;
}

static const char *const files_table =
    "| file | what it holds |\n| --- | --- |\n"
    "| sw_vers.txt | macOS product version and build |\n"
    "| doctor.json | machine facts (guest or host, chip, memory), library, configuration, pitfalls |\n"
    "| check.json | the effective profile for the probe's process and why |\n"
    "| version.txt | vzcaps version, SHA-256 of the command and the library |\n"
    "| inspect-command.json, inspect-library.json | the two binaries as vzcaps inspect reads them |\n"
    "| probe.json | every Metal answer, stock and through the library; `changed` and `unexpected` |\n"
    "| library-log.txt | the library's own `vzcaps:` lines during the probe (what it enabled, what it hooked) |\n"
    "| verify.json | each unlocked path computed on the device and compared with the CPU |\n"
    "| dyld-trace.txt | one injected child with DYLD_PRINT_INTERPOSING=1 and DYLD_PRINT_LIBRARIES=1 |\n"
    "| unified-log.txt | the library's `vzcaps:` lines from the unified log, last 15 minutes |\n"
    "| workload-stock.txt, workload-vzcaps.txt | with `-- CMD ARGS`: the command's output, stock and through vzcaps run |\n"
    "| device-class.json | the default device's class, its superclasses, and which of them defines initGPUFamilySupport |\n"
    "| csrutil.txt | System Integrity Protection status |\n"
    "| quarantine.txt | extended attributes of the command and the library (com.apple.quarantine) |\n"
    "| codesign-*.txt | Apple's codesign -dvvv and --verify --strict of the command and the library |\n"
    "| system-profiler-displays.txt | system_profiler SPDisplaysDataType: the GPU as macOS sees it |\n"
    "| crash-reports.txt | the newest crash report of the workload and of vzcaps in ~/Library/Logs/DiagnosticReports |\n"
    "| *.stderr | what a step printed on standard error, when it printed anything |\n"
    "| SHA256SUMS | SHA-256 of every other file |\n";

static void bundle_reset(void)
{
    for (size_t i = 0; i < n_steps; i++)
        free(steps[i].file), free(steps[i].what), free(steps[i].result);
    n_steps = 0;
}

/* The first steps: the macOS version, doctor and check as JSON, the versions and hashes, inspect
 * of the command and the library. */
static void bundle_basics(char *self, char *library, bool have_lib, char *e)
{
    char *sw[] = {"/usr/bin/sw_vers", NULL};
    if (platform_is_macos)
        run_step("sw_vers.txt", "macOS version", sw, NULL, 0, NULL);
    else
        skip_step("sw_vers.txt", "macOS version", NULL);
    char *doctor[] = {self, "doctor", "--json", "--exe", e, NULL};
    run_step("doctor.json", "vzcaps doctor --json", doctor, NULL, 0, NULL);
    char *check[] = {self, "check", "--json", "--exe", e, NULL};
    run_step("check.json", "vzcaps check --json", check, NULL, 0, NULL);

    char cmd_hash[65] = "", lib_hash[65] = "";
    sha256_file_hex(self, cmd_hash);
    if (have_lib)
        sha256_file_hex(library, lib_hash);
    char *version = xformat("vzcaps %s\ncommand %s sha256 %s\nlibrary %s sha256 %s\n", VZCAPS_VERSION, self, cmd_hash,
                            have_lib ? library : "NOT FOUND", have_lib ? lib_hash : "-");
    put_text("version.txt", version);
    free(version);
    char *inspect_cmd[] = {self, "inspect", "--json", "--", self, NULL};
    const char *not_macho = "null\n"; /* elsewhere the two are not Mach-O files: nothing to inspect */
    if (platform_is_macos)
        run_step("inspect-command.json", "vzcaps inspect of the command", inspect_cmd, NULL, 0, NULL);
    else
        skip_step("inspect-command.json", "vzcaps inspect of the command", not_macho);
    if (have_lib && !platform_is_macos) {
        skip_step("inspect-library.json", "vzcaps inspect of the library", not_macho);
    } else if (have_lib) {
        char *inspect_lib[] = {self, "inspect", "--json", "--", library, NULL};
        run_step("inspect-library.json", "vzcaps inspect of the library", inspect_lib, NULL, 0, NULL);
    } else {
        put_text("inspect-library.json", "null\n");
        record("inspect-library.json", "vzcaps inspect of the library", STEP_FAILED, xformat("library not found"));
    }

}

/* probe and verify with the library's lines, one injected child under dyld's tracing, the
 * unified log (macOS; elsewhere skipped). probe_out and verify_out keep the two JSON outputs. */
static void bundle_probe_verify(char *self, struct vzcaps_head *probe_out, struct vzcaps_head *verify_out)
{
    if (platform_is_macos) {
        char *probe[] = {self, "probe", "--json", NULL}, *verify[] = {self, "verify", "--json", NULL};
        struct vzcaps_line_keep lib_lines = {.prefix = "vzcaps:"};
        struct step_keep probe_keep = {.err_lines = {&lib_lines, NULL}, .out_head = probe_out};
        run_step("probe.json", "vzcaps probe --json", probe, NULL, 0, &probe_keep);
        char *log = vzcaps_kept_text(&lib_lines, "probe.json.stderr");
        put_text("library-log.txt", *log ? log : "(the library printed no line)\n");
        free(log);
        struct step_keep verify_keep = {.out_head = verify_out};
        run_step("verify.json", "vzcaps verify --json", verify, NULL, 0, &verify_keep);
        /* one injected child, with dyld saying what it interposed and loaded (on standard error) */
        char *trace[] = {self, "run", "--", self, "__probe-child", NULL};
        char *trace_env[] = {"DYLD_PRINT_INTERPOSING=1", "DYLD_PRINT_LIBRARIES=1", NULL};
        run_step("dyld-trace.txt", "an injected child under DYLD_PRINT_*", trace, trace_env, ERR_ONLY, NULL);
        char *log_show[] = {"/usr/bin/log", "show", "--last", "15m", "--style", "compact", "--predicate",
                            "eventMessage BEGINSWITH \"vzcaps:\"", NULL};
        run_step("unified-log.txt", "the unified log's vzcaps: lines", log_show, NULL, 0, NULL);
    } else {
        skip_step("probe.json", "vzcaps probe --json", "null\n");
        skip_step("library-log.txt", "the library's lines during the probe", NULL);
        skip_step("verify.json", "vzcaps verify --json", "null\n");
        skip_step("dyld-trace.txt", "an injected child under DYLD_PRINT_*", NULL);
        skip_step("unified-log.txt", "the unified log's vzcaps: lines", NULL);
    }
}

static void bundle_diagnostics(char *self, char *library, bool have_lib)
{
    /* what a failure needs to be diagnosed: the device's classes, SIP, quarantine, signatures,
     * the GPU as the system sees it (macOS only: elsewhere "not available on this system") */
    char *classes[] = {self, "__device-class", NULL};
    if (platform_is_macos)
        run_step("device-class.json", "the device's class, superclasses, initGPUFamilySupport (stock)", classes, NULL,
                 STOCK, NULL);
    else
        skip_step("device-class.json", "the device's class, superclasses, initGPUFamilySupport (stock)", "null\n");
    char *csrutil[] = {"/usr/bin/csrutil", "status", NULL};
    char *xattr[] = {"/usr/bin/xattr", "-l", self, have_lib ? library : NULL, NULL};
    char *cs_cmd[] = {"/usr/bin/codesign", "-dvvv", self, NULL}, *cs_lib[] = {"/usr/bin/codesign", "-dvvv", library, NULL};
    char *csv_cmd[] = {"/usr/bin/codesign", "--verify", "--strict", "--verbose=2", self, NULL};
    char *csv_lib[] = {"/usr/bin/codesign", "--verify", "--strict", "--verbose=2", library, NULL};
    char *displays[] = {"/usr/sbin/system_profiler", "SPDisplaysDataType", NULL};
    struct {
        const char *file, *what;
        char **argv;
    } mac[] = {
        {"csrutil.txt", "csrutil status (System Integrity Protection)", csrutil},
        {"quarantine.txt", "extended attributes (com.apple.quarantine) of the command and the library", xattr},
        {"codesign-command.txt", "codesign -dvvv of the command", cs_cmd},
        {"codesign-verify-command.txt", "codesign --verify --strict of the command", csv_cmd},
        {"codesign-library.txt", "codesign -dvvv of the library", have_lib ? cs_lib : NULL},
        {"codesign-verify-library.txt", "codesign --verify --strict of the library", have_lib ? csv_lib : NULL},
        {"system-profiler-displays.txt", "system_profiler SPDisplaysDataType", displays},
    };
    for (size_t i = 0; i < sizeof mac / sizeof mac[0]; i++) {
        if (!platform_is_macos)
            skip_step(mac[i].file, mac[i].what, NULL);
        else if (!mac[i].argv) {
            put_text(mac[i].file, "library not found\n");
            record(mac[i].file, mac[i].what, STEP_FAILED, xformat("library not found"));
        } else
            run_step(mac[i].file, mac[i].what, mac[i].argv, NULL, MERGE_STDERR, NULL);
    }
}

static void bundle_crash_reports(char **cmd)
{
    /* crash reports of the workload and of vzcaps (whose children probe and verify) */
    const char *home = getenv("HOME");
    char *reports_dir = xformat("%s/Library/Logs/DiagnosticReports", home && *home ? home : "~");
    char *crashes = newest_crash_report(reports_dir, "vzcaps");
    if (cmd && *cmd) {
        char *more = newest_crash_report(reports_dir, vzcaps_basename(cmd[0]));
        char *both = xformat("%s\n%s", more, crashes);
        free(more);
        free(crashes);
        crashes = both;
    }
    put_text("crash-reports.txt", crashes);
    record("crash-reports.txt", "the newest crash report of the workload and of vzcaps", STEP_OK, xformat("read"));
    free(crashes);
    free(reports_dir);

}

/* The table of every step and its result; the counts. */
static char *bundle_step_table(size_t *ran, size_t *failed, size_t *skipped)
{
    *ran = *failed = *skipped = 0;
    char *table = xformat("%s", "| file | step | result |\n| --- | --- | --- |\n");
    for (size_t i = 0; i < n_steps; i++) {
        *ran += steps[i].state != STEP_SKIPPED;
        *failed += steps[i].state == STEP_FAILED;
        *skipped += steps[i].state == STEP_SKIPPED;
        char *more = xformat("%s| %s | %s | %s%s |\n", table, steps[i].file, steps[i].what,
                             steps[i].state == STEP_FAILED ? "**FAILED**: " : "", steps[i].result);
        free(table);
        table = more;
    }
    return table;
}

/* The archive beside the bundle: *archive (NULL: none can be named, as for /) and its top
 * directory's name; the directory's name to free. */
static char *bundle_archive_name(const char *dir, char **archive, const char **top)
{
    char *dir_name = vzcaps_dir_name(dir);
    const char *base = dir_name ? vzcaps_basename(dir_name) : "";
    if (dir_name && (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)) { /* "." names no file beside it */
        free(dir_name);
        dir_name = realpath(dir, NULL);
    }
    if (dir_name && strcmp(dir_name, "/") == 0)
        free(dir_name), dir_name = NULL;
    *archive = dir_name ? xformat("%s.tar.gz", dir_name) : NULL;
    *top = dir_name ? vzcaps_basename(dir_name) : "bundle";
    return dir_name;
}

/* summary.md, the last file but SHA256SUMS (what could not be written so far is in it): whether
 * it was written. */
static bool bundle_summary(int stop, const char *verdict, const char *reason, const char *top, size_t ran, size_t failed,
                           size_t skipped, const char *device, const char *table, const char *workload, const char *hazard)
{
    int failures_before = od.failures;
    char *stopped = stop ? xformat("INCOMPLETE: vzcaps doctor was stopped by signal %d before its steps were done (the steps "
                                   "below ran); running the same command into this directory again replaces this bundle.\n\n", stop)
                         : xformat("%s", "");
    char *summary = xformat(
        "%s%s: %s.\n\n"
        "vzcaps %s first-run bundle. Attach %s.tar.gz (this directory as one file, written beside it) to an issue in\n"
        "the repository you got vzcaps from; of the environment it holds only PATH and vzcaps's own variables, no user\n"
        "or host names, and the home directory is written as ~.\n\n"
        "Steps: %zu ran, %zu failed, %zu skipped (not available on this system). Files: %d could not be written%s.\n\n"
        "Device (MTLDevice name and architecture.name, from probe.json): %s.\n\n"
        "%s%s%s%s%s\n%s\n"
        "Verdicts: WORKS (answers changed as asked and every unlocked check computed correct results), PARTIAL\n"
        "(answers changed, but a check failed or did not run), DOES NOT WORK (nothing changed, or something\n"
        "changed that was not asked for), CANNOT TELL (the device could not be read), NOT ON MACOS.\n",
        stopped, verdict, reason, VZCAPS_VERSION, top, ran, failed, skipped, failures_before,
        failures_before ? " (they are missing from SHA256SUMS; see the messages of vzcaps doctor)" : "", device,
        *hazard ? "Guest hazard: " : "", hazard, *hazard ? "\n\n" : "", table, workload, files_table);
    put_text("summary.md", summary);
    free(summary);
    free(stopped);
    return od.failures == failures_before;

}

/* INCOMPLETE and SHA256SUMS after a stop; else SHA256SUMS, the archive and what is said (dir_name
 * and archive are freed). The exit status. */
static int bundle_finish(const char *dir, int stop, const char *verdict, const char *reason, size_t ran, size_t failed,
                         size_t skipped, bool summary_written, char *dir_name, char *archive, const char *top)
{
    if (stop) { /* complete what is there: INCOMPLETE and SHA256SUMS; no archive of it */
        char *why = xformat("stopped by signal %d before its steps were done", stop);
        out_dir_incomplete(&od, why);
        free(why);
        out_dir_close(&od);
        eprintf("vzcaps doctor: stopped by signal %d: the bundle in %s is incomplete (summary.md, INCOMPLETE); running the same "
                "command again replaces it", stop, dir);
        free(dir_name), free(archive);
        bundle_reset();
        vzcaps_stop_now();
        return 1;
    }
    out_dir_sums(&od);
    /* the one file to attach: the bundle as a reproducible archive beside it */
    int files = od.failures;
    bool archived = !files && archive && out_dir_archive(&od, archive, top) == 0; /* of a whole bundle only */
    size_t wrote = od.n;
    out_dir_close(&od);
    bundle_reset();
    if (files || failed) {
        /* only what went wrong: "0 of its files could not be written (above)" pointed at nothing */
        char *lost = files ? xformat("%d of its files could not be written (above)", files) : xformat("%s", "");
        char *bad = failed ? xformat("%zu of its steps failed", failed) : xformat("%s", "");
        eprintf("vzcaps doctor: the bundle in %s is incomplete: %s%s%s %s", dir, lost, files && failed ? ", " : "", bad,
                summary_written ? "(see summary.md)" : "(summary.md could not be written either)");
        free(lost), free(bad);
        if (archived)
            printf("attach %s to an issue in the repository you got vzcaps from\n", esc(archive));
        free(dir_name), free(archive);
        return 1;
    }
    if (!archived) {
        eprintf("vzcaps doctor: the bundle in %s is complete, but the archive to attach could not be written (above)", dir);
        free(dir_name), free(archive);
        return 1;
    }
    printf("%s: %s.\nwrote %s (summary.md, SHA256SUMS and %zu more files; %zu steps ran, %zu skipped: not available on this system)\n"
           "attach %s to an issue in the repository you got vzcaps from\n",
           verdict, reason, esc(dir), wrote - 2, ran, skipped, esc(archive));
    free(dir_name), free(archive);
    return 0;
}

int doctor_bundle(const char *dir, const char *exe, char **cmd, unsigned timeout)
{
    bundle_reset();
    timeout_s = timeout;
    if (out_dir_open(&od, "doctor", dir) != 0)
        return 1;
    vzcaps_stop_defer(); /* a stop signal ends the running step; the bundle is then finished as incomplete */
    collect_needles();
    char self[4096], library[4096], tried[2400];
    self_path(self, sizeof self);
    bool have_lib = find_library(library, sizeof library, tried, sizeof tried) == 0;
    bundle_basics(self, library, have_lib, (char *)(exe ? exe : "probe"));
    /* the verdict reads the two JSON outputs: kept up to 4 MiB each (a longer one is not theirs) */
    struct vzcaps_head probe_out = {.limit = 4u << 20}, verify_out = {.limit = 4u << 20};
    bundle_probe_verify(self, &probe_out, &verify_out);
    bundle_diagnostics(self, library, have_lib);
    char *workload = cmd && *cmd ? workload_section(self, cmd) : xformat("%s", "");
    bundle_crash_reports(cmd);
    char reason[600];
    bool whole = probe_out.total == probe_out.len && verify_out.total == verify_out.len;
    const char *verdict = bundle_verdict(platform_is_macos, whole ? probe_out.data : NULL, whole ? verify_out.data : NULL, reason,
                                         sizeof reason);
    char device[400], hazard[900];
    probe_device_describe(whole ? probe_out.data : NULL, device, sizeof device);
    struct machine m;
    machine_facts(&m);
    bundle_guest_hazard(&m, platform_is_macos, whole ? verify_out.data : NULL, hazard, sizeof hazard);
    vzcaps_head_free(&probe_out), vzcaps_head_free(&verify_out);
    size_t ran, failed, skipped;
    char *table = bundle_step_table(&ran, &failed, &skipped);
    int stop = vzcaps_stop_signal();
    const char *top;
    char *archive, *dir_name = bundle_archive_name(dir, &archive, &top);
    bool summary_written = bundle_summary(stop, verdict, reason, top, ran, failed, skipped, device, table, workload, hazard);
    free(table), free(workload);
    return bundle_finish(dir, stop, verdict, reason, ran, failed, skipped, summary_written, dir_name, archive, top);
}
