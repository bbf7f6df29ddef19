/* llama-bench tables: reading runs, medians, merging by test, the checks between runs, what
 * each run's stderr reported, and the text/CSV/Markdown/JSON renderings (the chart:
 * benchchart.c). Never: runs anything. */
#define _XOPEN_SOURCE 700
#include "benchdata.h"

#include "../common/input.h"
#include "../common/text.h"
#include "../core/vzcaps_core.h"
#include "json.h"
#include "jsonread.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_role_names[N_ROLES] = {"stock", "unlocked", "host"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2; /* halves first: no overflow */
}

static long num_field(const struct jv *o, const char *key, bool *ok)
{
    const struct jv *v = jv_get(o, key);
    if (!v || v->type != JV_NUMBER || v->number < 0 || v->number > 1e9 || v->number != floor(v->number)) {
        *ok = false;
        return 0;
    }
    return (long)v->number;
}

/* A run's samples_ts, each a bounded number of tokens per second (so medians, ratios and chart
 * scales stay finite), in *vp (heap, *n of them): 0, or -1 with err. */
static int run_samples(const struct jv *run, const char *path, size_t idx, double **vp, size_t *n, char *err, size_t errlen)
{
    const struct jv *samples = jv_get(run, "samples_ts");
    if (!samples || samples->type != JV_ARRAY || samples->count == 0) {
        snprintf(err, errlen, "%s: run %zu: no samples_ts (needs llama-bench -o json with repetitions)", path, idx);
        return -1;
    }
    double *v = malloc(samples->count * sizeof *v);
    *n = 0;
    for (const struct jv *s = samples->child; s; s = s->next) {
        if (s->type != JV_NUMBER || !(s->number >= BENCH_MIN_TS && s->number <= BENCH_MAX_TS)) {
            snprintf(err, errlen, "%s: run %zu: samples_ts[%zu] is not a number of tokens per second in %g..%g", path, idx, *n,
                     BENCH_MIN_TS, BENCH_MAX_TS);
            free(v);
            return -1;
        }
        v[(*n)++] = s->number;
    }
    *vp = v;
    return 0;
}

/* The test's name, llama-bench's: pp512, tg128, pp512+tg128, with " @ dN" for a depth; -1 when
 * neither count is positive. */
static int run_test_name(long np, long ng, long nd, char *test, size_t len)
{
    if (np > 0 && ng > 0)
        snprintf(test, len, "pp%ld+tg%ld", np, ng);
    else if (np > 0)
        snprintf(test, len, "pp%ld", np);
    else if (ng > 0)
        snprintf(test, len, "tg%ld", ng);
    else
        return -1;
    if (nd > 0)
        vzcaps_appendf(test, len, " @ d%ld", nd);
    return 0;
}

/* The samples v (n of them, sorted by the median) as role's statistics of test's row: 0, or -1
 * with err (too many tests, a test twice for one role). */
static int add_stat(struct bench_table *t, enum bench_role role, const char *test, double *v, size_t n, const char *path,
                    char *err, size_t errlen)
{
    struct bench_row *row = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].test, test) == 0)
            row = &t->rows[i];
    if (!row) {
        if (t->n == BENCH_MAX_ROWS) {
            snprintf(err, errlen, "%s: more than %d tests", path, BENCH_MAX_ROWS);
            return -1;
        }
        row = &t->rows[t->n++];
        memset(row, 0, sizeof *row);
        snprintf(row->test, sizeof row->test, "%s", test);
    }
    struct bench_stat *st = &row->role[role];
    if (st->present) {
        snprintf(err, errlen, "%s: test %s appears twice for the %s role", path, test, bench_role_names[role]);
        return -1;
    }
    st->present = true;
    st->n = n;
    st->median = bench_median(v, n);
    st->min = v[0];
    st->max = v[n - 1];
    return 0;
}

/* What the run says about the build, the model, the chip and the date (the first one given
 * wins; the earliest date): 0, or -1 with err. */
static int run_metadata(struct bench_table *t, const struct jv *run, const char *path, size_t idx, char *err, size_t errlen)
{
    const struct jv *bc = jv_get(run, "build_commit"), *bn = jv_get(run, "build_number"), *mt = jv_get(run, "model_type");
    if (bn && (bn->type != JV_NUMBER || bn->number < 0 || bn->number > 9007199254740992.0 || bn->number != floor(bn->number))) {
        snprintf(err, errlen, "%s: run %zu: build_number is not a whole number in 0..2^53", path, idx);
        return -1;
    }
    if (bc && bc->type == JV_STRING && !t->build_commit[0])
        vzcaps_clip(bc->string, sizeof t->build_commit - 16, t->build_commit, sizeof t->build_commit);
    if (bn && !t->build_number)
        t->build_number = (long long)bn->number;
    if (mt && mt->type == JV_STRING && !t->model_type[0])
        vzcaps_clip(mt->string, sizeof t->model_type - 16, t->model_type, sizeof t->model_type);
    /* the chip: the last item of cpu_info ("Accelerate, Apple M1 Ultra (Virtual)"), when the
     * chip table knows it (never an arbitrary string on the chart) */
    const struct jv *ci = jv_get(run, "cpu_info"), *tt = jv_get(run, "test_time");
    if (ci && ci->type == JV_STRING && !t->chip[0]) {
        const char *last = strrchr(ci->string, ',');
        struct vzcaps_chip chip;
        vzcaps_chip_from_brand(last ? last + 1 : ci->string, &chip);
        if (chip.known)
            snprintf(t->chip, sizeof t->chip, "%s", chip.name);
    }
    /* the date: test_time "2026-08-09T18:13:03Z"; only a well-formed date is taken */
    if (tt && tt->type == JV_STRING && strlen(tt->string) >= 10) {
        bool date = true;
        for (int i = 0; i < 10; i++)
            date &= i == 4 || i == 7 ? tt->string[i] == '-' : tt->string[i] >= '0' && tt->string[i] <= '9';
        if (date && (!t->date[0] || strncmp(tt->string, t->date, 10) < 0))
            snprintf(t->date, sizeof t->date, "%.10s", tt->string);
    }
    return 0;
}

/* One llama-bench run (an object of its -o json array) into the table: 0, or -1 with err. */
static int add_run(struct bench_table *t, enum bench_role role, const struct jv *run, const char *path, size_t idx, char *err,
                   size_t errlen)
{
    bool ok = true;
    if (run->type != JV_OBJECT) {
        snprintf(err, errlen, "%s: run %zu is not an object", path, idx);
        return -1;
    }
    long np = num_field(run, "n_prompt", &ok), ng = num_field(run, "n_gen", &ok);
    long nd = jv_get(run, "n_depth") ? num_field(run, "n_depth", &ok) : 0;
    if (!ok) {
        snprintf(err, errlen, "%s: run %zu: n_prompt, n_gen or n_depth missing or not a count", path, idx);
        return -1;
    }
    double *v;
    size_t n;
    if (run_samples(run, path, idx, &v, &n, err, errlen) != 0)
        return -1;
    char test[48];
    if (run_test_name(np, ng, nd, test, sizeof test) != 0) {
        snprintf(err, errlen, "%s: run %zu: neither n_prompt nor n_gen is positive", path, idx);
        free(v);
        return -1;
    }
    int rc = add_stat(t, role, test, v, n, path, err, errlen);
    free(v);
    return rc == 0 ? run_metadata(t, run, path, idx, err, errlen) : -1;
}

int bench_table_add_file(struct bench_table *t, enum bench_role role, const char *path, char *err, size_t errlen)
{
    size_t len;
    char why[300];
    char *text = read_text_file(path, &len, err, errlen);
    if (!text)
        return -1;
    struct jv *doc = jv_parse(text, len, why, sizeof why);
    free(text);
    if (!doc) {
        snprintf(err, errlen, "%s: not valid JSON: %s", path, why);
        return -1;
    }
    int rc = 0;
    if (doc->type != JV_ARRAY || doc->count == 0) {
        snprintf(err, errlen, "%s: expected a non-empty array of llama-bench runs (llama-bench -o json)", path);
        rc = -1;
    } else {
        t->role_given[role] = true;
        size_t idx = 0;
        for (const struct jv *run = doc->child; run && rc == 0; run = run->next, idx++)
            rc = add_run(t, role, run, path, idx, err, errlen);
    }
    jv_free(doc);
    return rc;
}

int bench_table_check(const struct bench_table *t, char *err, size_t errlen)
{
    if (!t->role_given[ROLE_UNLOCKED] && !t->role_given[ROLE_STOCK] && !t->role_given[ROLE_HOST]) {
        snprintf(err, errlen, "no runs given");
        return -1;
    }
    for (size_t i = 0; i < t->n; i++)
        for (int r = 0; r < N_ROLES; r++)
            if (t->role_given[r] && !t->rows[i].role[r].present) {
                snprintf(err, errlen, "test %s has no %s run: the runs do not match (same -p/-n for every run)",
                         t->rows[i].test, bench_role_names[r]);
                return -1;
            }
    for (size_t i = 0; i < t->n; i++) { /* results that overflow or vanish are errors, never inf or 0.00x */
        double sp = bench_speedup(&t->rows[i]), ph = bench_percent_of_host(&t->rows[i]);
        if ((!isnan(sp) && !(isfinite(sp) && sp > 0)) || (!isnan(ph) && !(isfinite(ph) && ph > 0))) {
            snprintf(err, errlen, "test %s: the speed-up or percentage of host is out of range", t->rows[i].test);
            return -1;
        }
    }
    return 0;
}

double bench_speedup(const struct bench_row *r)
{
    return r->role[ROLE_STOCK].present && r->role[ROLE_UNLOCKED].present ? r->role[ROLE_UNLOCKED].median / r->role[ROLE_STOCK].median : NAN;
}

double bench_percent_of_host(const struct bench_row *r)
{
    return r->role[ROLE_HOST].present && r->role[ROLE_UNLOCKED].present ? 100.0 * r->role[ROLE_UNLOCKED].median / r->role[ROLE_HOST].median : NAN;
}

/* ---- the Metal backend's own report ---- */

static int yes_no(const char *line, const char *label)
{
    const char *p = strstr(line, label);
    if (!p)
        return -2;
    p = strchr(p, '=');
    if (!p)
        return -1;
    while (*++p == ' ')
        ;
    return strncmp(p, "true", 4) == 0 ? 1 : strncmp(p, "false", 5) == 0 ? 0 : -1;
}

/* Which shim said on this line that it changed the answers: vzcaps's own line ("vzcaps: hooked
 * CLASS for EXE via PATH: ..." once a device is hooked; "vzcaps: configured for EXE: ..." at
 * start-up before that, and with VZCAPS_LOG=verbose; "vzcaps: enabled for EXE: ..." before
 * 0.1.0's hooked line) or another's "[Tag] Enabled for" (the published data set's
 * shim logs "[LumeMetalCapabilities] Enabled for llama-bench (...)"). vzcaps wins. */
static void shim_of_line(const char *line, struct metal_caps *c)
{
    if (strncmp(line, "vzcaps: configured for ", 23) == 0 || strncmp(line, "vzcaps: enabled for ", 20) == 0 ||
        strncmp(line, "vzcaps: hooked ", 15) == 0) {
        snprintf(c->shim, sizeof c->shim, "vzcaps");
        return;
    }
    const char *en = strstr(line, "] Enabled for ");
    if (!en || c->shim[0])
        return;
    const char *open = en;
    while (open > line && open[-1] != '[')
        open--;
    size_t n = (size_t)(en - open);
    if (open == line || n == 0 || n >= sizeof c->shim || (open - 1 > line && open[-2] != ' '))
        return; /* "[Tag]" stands alone: at the line's start or after a blank */
    for (size_t i = 0; i < n; i++)
        if (!((open[i] >= 'A' && open[i] <= 'Z') || (open[i] >= 'a' && open[i] <= 'z') || (open[i] >= '0' && open[i] <= '9') ||
              open[i] == '_' || open[i] == '-' || open[i] == '.'))
            return; /* only a plain name goes on a chart */
    snprintf(c->shim, sizeof c->shim, "%.*s", (int)n, open);
}

void metal_caps_init(struct metal_caps *c)
{
    memset(c, 0, sizeof *c);
    c->simdgroup_reduction = c->simdgroup_mm = c->bfloat = c->tensor = c->unified_memory = c->residency_sets = -1;
    c->working_set_mb = NAN;
}

void metal_caps_line(const char *line, size_t n, struct metal_caps *c)
{
    {
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), line);
        shim_of_line(buf, c);
        if (strstr(buf, "ggml_metal")) {
            const char *p;
            int v;
            if ((p = strstr(buf, "GPU name:"))) {
                c->found = true;
                p += 9;
                while (*p == ' ')
                    p++;
                const char *open = strchr(p, '('), *close = strrchr(p, ')');
                if (open && close && close > open)
                    snprintf(c->gpu_name, sizeof c->gpu_name, "%.*s", (int)(close - open - 1), open + 1);
                else
                    snprintf(c->gpu_name, sizeof c->gpu_name, "%s", p);
            } else if ((p = strstr(buf, "GPU family:"))) {
                const char *open = strrchr(p, '(');
                long fam = open ? strtol(open + 1, NULL, 10) : 0;
                c->n_family_lines++;
                if (open && c->n_families < METAL_MAX_FAMILIES)
                    c->families[c->n_families++] = fam;
                c->found = true;
                /* the Apple line: "MTLGPUFamilyApple7  (1007)", kept as printed, spaces folded */
                const char *name = strstr(p, "MTLGPUFamilyApple");
                if (name && fam >= 1001 && fam <= 1099 && !c->apple_family) {
                    c->apple_family = fam;
                    size_t k = 0;
                    for (const char *q = name; *q && k + 1 < sizeof c->gpu_family; q++)
                        if ((unsigned char)*q >= 0x20 && *q != 0x7f && !(*q == ' ' && (k == 0 || c->gpu_family[k - 1] == ' ')))
                            c->gpu_family[k++] = *q;
                    c->gpu_family[k] = '\0';
                }
            } else if ((v = yes_no(buf, "simdgroup reduction")) != -2) {
                c->simdgroup_reduction = v;
            } else if ((v = yes_no(buf, "simdgroup matrix mul.")) != -2) {
                c->simdgroup_mm = v;
            } else if ((v = yes_no(buf, "has bfloat")) != -2) {
                c->bfloat = v;
            } else if ((v = yes_no(buf, "has tensor")) != -2) {
                c->tensor = v;
            } else if ((v = yes_no(buf, "has unified memory")) != -2) {
                c->unified_memory = v;
            } else if ((v = yes_no(buf, "use residency sets")) != -2) {
                c->residency_sets = v;
            } else if ((p = strstr(buf, "recommendedMaxWorkingSetSize"))) {
                p = strchr(p, '=');
                if (p)
                    c->working_set_mb = strtod(p + 1, NULL);
            }
        }
    }
}

void metal_caps_parse(const char *text, struct metal_caps *c)
{
    metal_caps_init(c);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        metal_caps_line(line, nl ? (size_t)(nl - line) : strlen(line), c);
        line = nl ? nl + 1 : NULL;
    }
}

int metal_caps_read_file(const char *path, struct metal_caps *c, bool *missing, char *err, size_t errlen)
{
    struct vzcaps_input in;
    struct vzcaps_input_opts o = {.max = TEXT_FILE_MAX};
    metal_caps_parse("", c); /* never left unset, read or not */
    int rc = vzcaps_input_read(path, &o, &in, err, errlen);
    if (missing)
        *missing = rc != 0 && in.missing;
    if (rc != 0)
        return -1;
    metal_caps_parse(in.data, c);
    vzcaps_input_free(&in);
    if (c->n_family_lines > METAL_MAX_FAMILIES) { /* a list cut short would be a different run */
        snprintf(err, errlen, "%s: more than %d \"GPU family:\" lines (%zu)", path, METAL_MAX_FAMILIES, c->n_family_lines);
        metal_caps_parse("", c);
        return -1;
    }
    return 0;
}

int bench_table_read_stderr(struct bench_table *t, enum bench_role role, const char *path, bool *missing, char *err,
                            size_t errlen)
{
    static struct metal_caps c;
    if (metal_caps_read_file(path, &c, missing, err, errlen) != 0)
        return -1;
    if (!t->have_caps[role]) { /* the first one read wins; every one is read */
        t->caps[role] = c;
        t->have_caps[role] = true;
    }
    return 0;
}

void bench_series_label(const struct bench_table *t, enum bench_role role, char *buf, size_t len)
{
    static const char *const base[N_ROLES] = {"stock guest", "unlocked guest", "host (bare metal)"};
    const struct metal_caps *c = &t->caps[role];
    if (!t->have_caps[role])
        snprintf(buf, len, "%s", base[role]); /* no stderr: nothing to credit */
    else if (c->shim[0])
        snprintf(buf, len, "%s (%s)", base[role], c->shim);
    else if (role == ROLE_UNLOCKED)
        snprintf(buf, len, "%s (no shim's log line in its stderr)", base[role]);
    else
        snprintf(buf, len, "%s", base[role]);
    if (t->have_caps[role] && c->apple_family)
        vzcaps_appendf(buf, len, ", GPU family Apple%ld", c->apple_family - 1000);
}

/* ---- renderings ---- */

static void num_or_dash(FILE *out, const struct bench_stat *s, const char *fmt)
{
    if (s->present)
        fprintf(out, fmt, s->median);
    else
        fprintf(out, "%s", "—");
}

void bench_render_text(const struct bench_table *t, FILE *out)
{
    fprintf(out, "%-16s %12s %12s %12s %9s %9s\n", "test", "stock t/s", "unlocked t/s", "host t/s", "speed-up", "of host");
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        fprintf(out, "%-16s", r->test);
        for (int k = 0; k < N_ROLES; k++) {
            if (r->role[k].present)
                fprintf(out, " %12.2f", r->role[k].median);
            else
                fprintf(out, " %12s", "-");
        }
        double s = bench_speedup(r), h = bench_percent_of_host(r);
        if (isnan(s))
            fprintf(out, " %9s", "-");
        else
            fprintf(out, " %8.2fx", s);
        if (isnan(h))
            fprintf(out, " %9s\n", "-");
        else
            fprintf(out, " %7.2f %%\n", h);
    }
    fprintf(out, "medians of samples_ts; ranges:");
    for (size_t i = 0; i < t->n; i++)
        for (int k = 0; k < N_ROLES; k++)
            if (t->rows[i].role[k].present)
                fprintf(out, "%s %s %s %.2f..%.2f (n=%zu)", i || k ? ";" : "", t->rows[i].test, bench_role_names[k],
                        t->rows[i].role[k].min, t->rows[i].role[k].max, t->rows[i].role[k].n);
    fprintf(out, "\n");
    bool any = false;
    for (int k = 0; k < N_ROLES; k++)
        any |= t->have_caps[k];
    if (!any)
        return;
    /* llama.cpp's own start-up line: the family that chose its tuning rows in each run */
    fprintf(out, "GPU family (llama.cpp's start-up line):");
    int shown = 0;
    for (int k = 0; k < N_ROLES; k++)
        if (t->have_caps[k])
            fprintf(out, "%s %s %s", shown++ ? ";" : "", bench_role_names[k],
                    t->caps[k].gpu_family[0] ? esc(t->caps[k].gpu_family) : "(not printed)"); /* from a log: escaped */
    fprintf(out, "\n");
}

static void csv_num(FILE *out, double v, const char *fmt)
{
    if (isnan(v))
        fputs(",", out);
    else {
        fputc(',', out);
        fprintf(out, fmt, v);
    }
}

void bench_render_csv(const struct bench_table *t, FILE *out)
{
    fprintf(out, "test,stock_tps,unlocked_tps,host_tps,speedup,percent_of_host,stock_min,stock_max,unlocked_min,unlocked_max,host_min,host_max\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        fputs(r->test, out);
        for (int k = 0; k < N_ROLES; k++)
            csv_num(out, r->role[k].present ? r->role[k].median : NAN, "%.4f");
        csv_num(out, bench_speedup(r), "%.4f");
        csv_num(out, bench_percent_of_host(r), "%.4f");
        for (int k = 0; k < N_ROLES; k++) {
            csv_num(out, r->role[k].present ? r->role[k].min : NAN, "%.4f");
            csv_num(out, r->role[k].present ? r->role[k].max : NAN, "%.4f");
        }
        fputc('\n', out);
    }
}

/* Text from a log inside a Markdown table cell: escaped as every printed line is (control
 * characters, C1, invalid UTF-8 as \\xNN), and nothing that ends the cell or opens HTML. */
static const char *md_cell(const char *s)
{
    static char buf[4][512];
    static unsigned k;
    char *b = buf[k++ % 4];
    size_t n = 0;
    for (const char *p = esc(s); *p && n + 6 < sizeof buf[0]; p++) {
        if (*p == '|' || *p == '<' || *p == '`' || *p == '*' || *p == '_' || *p == '[')
            b[n++] = '\\';
        b[n++] = *p;
    }
    b[n] = '\0';
    return b;
}

void bench_about(const struct bench_table *t, char *about, size_t len)
{
    about[0] = '\0';
    if (t->model_type[0])
        vzcaps_appendf(about, len, "%s", t->model_type);
    if (t->chip[0])
        vzcaps_appendf(about, len, "%s%s", about[0] ? " · " : "", t->chip);
    if (t->build_commit[0]) {
        vzcaps_appendf(about, len, "%sllama.cpp %s", about[0] ? " · " : "", t->build_commit);
        if (t->build_number)
            vzcaps_appendf(about, len, " (build %lld)", t->build_number);
    }
    if (t->date[0])
        vzcaps_appendf(about, len, "%s%s", about[0] ? " · " : "", t->date);
}

void bench_render_about_md(const struct bench_table *t, FILE *out)
{
    char about[400], shown[4 * sizeof about + 1];
    bench_about(t, about, sizeof about);
    if (!about[0])
        return;
    vzcaps_escape(about, strlen(about), shown, sizeof shown); /* control bytes and bad UTF-8 as \xNN */
    fputs("\nMeasured: ", out);
    for (const char *c = shown; *c; c++) {
        if (strchr("\\`*_[]<>|#", *c)) /* Markdown's punctuation, shown as itself */
            fputc('\\', out);
        fputc(*c, out);
    }
    fputs(".\n", out);
}

void bench_render_md(const struct bench_table *t, FILE *out)
{
    fprintf(out, "| test | stock (t/s) | unlocked (t/s) | host (t/s) | unlocked / stock | unlocked / host |\n");
    fprintf(out, "| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        fprintf(out, "| %s |", r->test);
        for (int k = 0; k < N_ROLES; k++) {
            fputc(' ', out);
            num_or_dash(out, &r->role[k], "%.4f");
            fputs(" |", out);
        }
        double s = bench_speedup(r), h = bench_percent_of_host(r);
        if (isnan(s))
            fprintf(out, " — |");
        else
            fprintf(out, " %.4fx |", s);
        if (isnan(h))
            fprintf(out, " — |\n");
        else
            fprintf(out, " %.4f %% |\n", h);
    }
    fprintf(out, "\nMedians of llama-bench `samples_ts` per test.\n");
    bench_render_about_md(t, out);
    bool any = false;
    for (int k = 0; k < N_ROLES; k++)
        any |= t->have_caps[k];
    if (!any)
        return;
    /* which tuning rows each run used: llama.cpp keys them by this family */
    fprintf(out, "\n| run | GPU family (llama.cpp's start-up line) | shim that said it changed the answers |\n| --- | --- | --- |\n");
    for (int k = 0; k < N_ROLES; k++)
        if (t->have_caps[k])
            fprintf(out, "| %s | %s | %s |\n", bench_role_names[k], t->caps[k].gpu_family[0] ? md_cell(t->caps[k].gpu_family) : "(not printed)",
                    t->caps[k].shim[0] ? md_cell(t->caps[k].shim) : "none");
}

long bench_host_family(const struct bench_table *t, const char **from)
{
    if (t->have_caps[ROLE_HOST] && t->caps[ROLE_HOST].apple_family) {
        *from = "the host run";
        return t->caps[ROLE_HOST].apple_family;
    }
    struct vzcaps_chip chip;
    vzcaps_chip_from_brand(t->chip[0] ? t->chip : NULL, &chip);
    *from = t->chip_from[0] ? t->chip_from : "the runs' cpu_info";
    return chip.known ? (long)chip.apple_family : 0;
}

void bench_render_json_rows(const struct bench_table *t, struct json *j)
{
    json_arr(j, "rows");
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        json_obj(j, NULL);
        json_str(j, "test", r->test);
        for (int k = 0; k < N_ROLES; k++)
            json_num(j, bench_role_names[k], r->role[k].present ? r->role[k].median : NAN); /* json_num: NaN is null */
        json_num(j, "speedup", bench_speedup(r));
        json_num(j, "percent_of_host", bench_percent_of_host(r));
        json_obj(j, "range");
        for (int k = 0; k < N_ROLES; k++) {
            if (!r->role[k].present) {
                json_null(j, bench_role_names[k]);
                continue;
            }
            json_arr(j, bench_role_names[k]);
            json_num(j, NULL, r->role[k].min);
            json_num(j, NULL, r->role[k].max);
            json_end_arr(j);
        }
        json_end_obj(j);
        json_obj(j, "samples");
        for (int k = 0; k < N_ROLES; k++)
            json_int_or_null(j, bench_role_names[k], r->role[k].present, (long long)r->role[k].n);
        json_end_obj(j);
        json_end_obj(j);
    }
    json_end_arr(j);
}

static void tri(struct json *j, const char *key, int v)
{
    if (v < 0)
        json_null(j, key);
    else
        json_bool(j, key, v == 1);
}

void metal_caps_json(const struct metal_caps *c, struct json *j, const char *key)
{
    json_obj(j, key);
    json_bool(j, "found", c->found);
    json_str(j, "gpu_name", c->gpu_name[0] ? c->gpu_name : NULL);
    json_arr(j, "families");
    for (size_t i = 0; i < c->n_families; i++)
        json_int(j, NULL, c->families[i]);
    json_end_arr(j);
    json_str(j, "gpu_family", c->gpu_family[0] ? c->gpu_family : NULL); /* the line that picks the tuning rows */
    json_int_or_null(j, "apple_family", c->apple_family != 0, c->apple_family);
    json_str(j, "shim", c->shim[0] ? c->shim : NULL);
    tri(j, "simdgroup_reduction", c->simdgroup_reduction);
    tri(j, "simdgroup_matrix_mul", c->simdgroup_mm);
    tri(j, "bfloat", c->bfloat);
    tri(j, "tensor", c->tensor);
    tri(j, "unified_memory", c->unified_memory);
    tri(j, "residency_sets", c->residency_sets);
    json_num(j, "recommended_working_set_mb", c->working_set_mb); /* NaN: null */
    json_end_obj(j);
}
