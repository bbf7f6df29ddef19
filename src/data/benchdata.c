/* llama-bench tables: reading runs, medians, merging by test, the checks between runs, and
 * the text/CSV/Markdown/SVG/JSON renderings. Never: runs anything. */
#define _XOPEN_SOURCE 700
#include "benchdata.h"

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
    int rc = -1;
    if (doc->type != JV_ARRAY || doc->count == 0) {
        snprintf(err, errlen, "%s: expected a non-empty array of llama-bench runs (llama-bench -o json)", path);
        goto out;
    }
    t->role_given[role] = true;
    size_t idx = 0;
    for (const struct jv *run = doc->child; run; run = run->next, idx++) {
        bool ok = true;
        if (run->type != JV_OBJECT) {
            snprintf(err, errlen, "%s: run %zu is not an object", path, idx);
            goto out;
        }
        long np = num_field(run, "n_prompt", &ok), ng = num_field(run, "n_gen", &ok);
        long nd = jv_get(run, "n_depth") ? num_field(run, "n_depth", &ok) : 0;
        if (!ok) {
            snprintf(err, errlen, "%s: run %zu: n_prompt, n_gen or n_depth missing or not a count", path, idx);
            goto out;
        }
        const struct jv *samples = jv_get(run, "samples_ts");
        if (!samples || samples->type != JV_ARRAY || samples->count == 0) {
            snprintf(err, errlen, "%s: run %zu: no samples_ts (needs llama-bench -o json with repetitions)", path, idx);
            goto out;
        }
        double *v = malloc(samples->count * sizeof *v);
        size_t n = 0;
        for (const struct jv *s = samples->child; s; s = s->next) {
            /* bounded, so medians, ratios and chart scales stay finite */
            if (s->type != JV_NUMBER || !(s->number >= BENCH_MIN_TS && s->number <= BENCH_MAX_TS)) {
                snprintf(err, errlen, "%s: run %zu: samples_ts[%zu] is not a number of tokens per second in %g..%g", path, idx, n,
                         BENCH_MIN_TS, BENCH_MAX_TS);
                free(v);
                goto out;
            }
            v[n++] = s->number;
        }
        char test[48];
        if (np > 0 && ng > 0)
            snprintf(test, sizeof test, "pp%ld+tg%ld", np, ng);
        else if (np > 0)
            snprintf(test, sizeof test, "pp%ld", np);
        else if (ng > 0)
            snprintf(test, sizeof test, "tg%ld", ng);
        else {
            snprintf(err, errlen, "%s: run %zu: neither n_prompt nor n_gen is positive", path, idx);
            free(v);
            goto out;
        }
        if (nd > 0)
            vzcaps_appendf(test, sizeof test, " @ d%ld", nd);
        struct bench_row *row = NULL;
        for (size_t i = 0; i < t->n; i++)
            if (strcmp(t->rows[i].test, test) == 0)
                row = &t->rows[i];
        if (!row) {
            if (t->n == BENCH_MAX_ROWS) {
                snprintf(err, errlen, "%s: more than %d tests", path, BENCH_MAX_ROWS);
                free(v);
                goto out;
            }
            row = &t->rows[t->n++];
            memset(row, 0, sizeof *row);
            snprintf(row->test, sizeof row->test, "%s", test);
        }
        struct bench_stat *st = &row->role[role];
        if (st->present) {
            snprintf(err, errlen, "%s: test %s appears twice for the %s role", path, test, bench_role_names[role]);
            free(v);
            goto out;
        }
        st->present = true;
        st->n = n;
        st->median = bench_median(v, n);
        st->min = v[0];
        st->max = v[n - 1];
        free(v);
        const struct jv *bc = jv_get(run, "build_commit"), *bn = jv_get(run, "build_number"), *mt = jv_get(run, "model_type");
        if (bn && (bn->type != JV_NUMBER || bn->number < 0 || bn->number > 9007199254740992.0 || bn->number != floor(bn->number))) {
            snprintf(err, errlen, "%s: run %zu: build_number is not a whole number in 0..2^53", path, idx);
            goto out;
        }
        if (bc && bc->type == JV_STRING && !t->build_commit[0])
            vzcaps_clip(bc->string, sizeof t->build_commit - 16, t->build_commit, sizeof t->build_commit);
        if (bn && !t->build_number)
            t->build_number = (long long)bn->number;
        if (mt && mt->type == JV_STRING && !t->model_type[0])
            vzcaps_clip(mt->string, sizeof t->model_type - 16, t->model_type, sizeof t->model_type);
    }
    rc = 0;
out:
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

void metal_caps_parse(const char *text, struct metal_caps *c)
{
    memset(c, 0, sizeof *c);
    c->simdgroup_reduction = c->simdgroup_mm = c->bfloat = c->tensor = c->unified_memory = c->residency_sets = -1;
    c->working_set_mb = NAN;
    const char *line = text;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), line);
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
                if (open && c->n_families < 8)
                    c->families[c->n_families++] = strtol(open + 1, NULL, 10);
                c->found = true;
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
        line = nl ? nl + 1 : NULL;
    }
}

int metal_caps_read(const char *path, struct metal_caps *c)
{
    size_t len;
    char err[300];
    char *text = read_text_file(path, &len, err, sizeof err);
    if (!text)
        return -1;
    metal_caps_parse(text, c);
    free(text);
    return 0;
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
}

static void xml_escape(FILE *out, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else if (*s == '&')
            fputs("&amp;", out);
        else
            fputc(*s, out);
}

/* Text width for the layout: measured from its length with a generous per-character width
 * (sans-serif digits and letters average about 0.55 em; 0.62 em leaves a margin), so the
 * layout is computed, not guessed, and cannot overflow its own canvas. */
static double text_w(const char *text, double font)
{
    return (double)strlen(text) * font * 0.62 + 4;
}

static double nice_max(double v)
{
    double m = pow(10, ceil(log10(v > 0 ? v : 1)));
    if (m / 5 >= v)
        return m / 5;
    if (m / 2 >= v)
        return m / 2;
    return m;
}

static void fmt_tick(char *buf, size_t len, double v)
{
    if (v >= 100 || v == floor(v))
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.2g", v);
}

void bench_render_svg(const struct bench_table *t, FILE *out)
{
    static const char *const colours[N_ROLES] = {"#9a9a9a", "#2b7bd6", "#2a9d5b"};
    static const char *const legend[N_ROLES] = {"stock guest", "unlocked guest (vzcaps)", "host (bare metal)"};
    const char *title = "Tokens per second by test (median of samples, higher is better; each test on its own axis)";
    const double font = 12, margin = 20, plot_h = 220, bar_w = 34, gap = 6;
    size_t nrows = t->n ? t->n : 1;
    int nroles = 0;
    for (int k = 0; k < N_ROLES; k++)
        nroles += t->role_given[k];
    nroles = nroles ? nroles : 1;

    /* panel i: its own scale; width from its bars, its axis labels and its test name */
    double panel_w[BENCH_MAX_ROWS], scale[BENCH_MAX_ROWS], axis_w[BENCH_MAX_ROWS];
    double total_w = margin;
    for (size_t i = 0; i < nrows; i++) {
        double maxv = 0;
        for (int k = 0; k < N_ROLES && i < t->n; k++)
            if (t->rows[i].role[k].present && t->rows[i].role[k].median > maxv)
                maxv = t->rows[i].role[k].median;
        scale[i] = nice_max(maxv);
        char tick[32];
        fmt_tick(tick, sizeof tick, scale[i]);
        axis_w[i] = text_w(tick, font) + 8;
        double bars = nroles * (bar_w + gap) + gap;
        double label = i < t->n ? text_w(t->rows[i].test, font) : 0;
        double value_labels = 0;
        for (int k = 0; k < N_ROLES && i < t->n; k++)
            if (t->rows[i].role[k].present) {
                char v[32];
                snprintf(v, sizeof v, "%.1f", t->rows[i].role[k].median);
                value_labels = fmax(value_labels, text_w(v, font - 2));
            }
        bars = fmax(bars, nroles * (value_labels + gap) + gap);
        panel_w[i] = axis_w[i] + fmax(bars, label) + margin;
        total_w += panel_w[i];
    }
    /* the legend: one entry a line, under the panels */
    double legend_w = 0;
    for (int k = 0; k < N_ROLES; k++)
        if (t->role_given[k])
            legend_w = fmax(legend_w, 16 + text_w(legend[k], font));
    /* the second chart: speed-up and percent of host, one row per test */
    bool any_speed = false, any_host = false;
    double max_speed = 1;
    for (size_t i = 0; i < t->n; i++) {
        double sp = bench_speedup(&t->rows[i]), ph = bench_percent_of_host(&t->rows[i]);
        any_speed |= !isnan(sp), any_host |= !isnan(ph);
        if (!isnan(sp))
            max_speed = fmax(max_speed, sp);
    }
    const char *title2 = "Unlocked guest vs stock guest (speed-up) and vs the host (percent of host)";
    double name_w = 0;
    for (size_t i = 0; i < t->n; i++)
        name_w = fmax(name_w, text_w(t->rows[i].test, font));
    const double row_h = 22, bar2_w = 240;
    double chart2_w = margin + name_w + 8 + bar2_w + 8 + text_w("100.00 % of host", font) + margin;
    double width = fmax(fmax(total_w, margin * 2 + text_w(title, 14)), fmax(margin * 2 + legend_w, chart2_w));
    if (any_speed || any_host)
        width = fmax(width, margin * 2 + text_w(title2, 14));
    double top = 44, legend_top = top + plot_h + 44, chart2_top = legend_top + nroles * 18 + 30;
    int rows2 = (any_speed ? 1 : 0) + (any_host ? 1 : 0);
    double height = (any_speed || any_host) ? chart2_top + 30 + (double)t->n * rows2 * row_h + margin : legend_top + nroles * 18 + margin;

    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"%.0f\">\n",
            ceil(width), ceil(height), ceil(width), ceil(height), font);
    fprintf(out, "<title>llama-bench tokens per second: stock, unlocked (vzcaps) and host</title>\n");
    fprintf(out, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", ceil(width), ceil(height));
    fprintf(out, "<text x=\"%.0f\" y=\"22\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", margin, title);
    double px = margin;
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        double ax = px + axis_w[i], base = top + plot_h;
        for (int g = 0; g <= 4; g++) {
            double v = scale[i] * g / 4, y = base - plot_h * g / 4;
            char tick[32];
            fmt_tick(tick, sizeof tick, v);
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", ax, y,
                    px + panel_w[i] - margin, y);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ax - 4, y + 4, tick);
        }
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>\n", ax, top, ax, base);
        double slot = (panel_w[i] - margin - axis_w[i]) / nroles;
        int drawn = 0;
        for (int k = 0; k < N_ROLES; k++) {
            if (!t->role_given[k])
                continue;
            double cx = ax + slot * (drawn++ + 0.5);
            if (!r->role[k].present)
                continue;
            double h = plot_h * r->role[k].median / scale[i];
            fprintf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"%s\"><title>",
                    bench_role_names[k], cx - bar_w / 2, base - h, bar_w, h, colours[k]);
            xml_escape(out, r->test);
            fprintf(out, " %s: %.2f t/s</title></rect>\n", bench_role_names[k], r->role[k].median);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.0f\">%.1f</text>\n", cx, base - h - 4,
                    font - 2, r->role[k].median);
        }
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">", ax + (panel_w[i] - margin - axis_w[i]) / 2, base + 18);
        xml_escape(out, r->test);
        fprintf(out, "</text>\n");
        px += panel_w[i];
    }
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">tokens per second (t/s); llama-bench test under each panel</text>\n", margin,
            top + plot_h + 36);
    double ly = legend_top;
    for (int k = 0; k < N_ROLES; k++) {
        if (!t->role_given[k])
            continue;
        fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                margin, ly, colours[k], margin + 16, ly + 10, legend[k]);
        ly += 18;
    }
    if (any_speed || any_host) {
        fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", margin, chart2_top, title2);
        double y = chart2_top + 16, bx = margin + name_w + 8;
        for (size_t i = 0; i < t->n; i++) {
            double sp = bench_speedup(&t->rows[i]), ph = bench_percent_of_host(&t->rows[i]);
            for (int which = 0; which < 2; which++) {
                double v = which ? ph : sp;
                if ((which ? !any_host : !any_speed))
                    continue;
                fprintf(out, "<text x=\"%.0f\" y=\"%.1f\">", margin, y + 14);
                xml_escape(out, t->rows[i].test);
                fprintf(out, "</text>\n");
                if (!isnan(v)) {
                    double w = which ? bar2_w * fmin(v, 100) / 100 : bar2_w * v / max_speed;
                    fprintf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>\n",
                            which ? "percent_of_host" : "speedup", bx, y + 3, w, which ? colours[ROLE_HOST] : colours[ROLE_UNLOCKED]);
                    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", bx + bar2_w + 8, y + 14);
                    if (which)
                        fprintf(out, "%.2f %% of host", v);
                    else
                        fprintf(out, "%.2fx speed-up", v);
                    fprintf(out, "</text>\n");
                }
                y += row_h;
            }
        }
    }
    fprintf(out, "</svg>\n");
}

static void stat_json(struct json *j, const char *key, const struct bench_stat *s, bool median)
{
    if (!s->present)
        json_null(j, key);
    else
        json_num(j, key, median ? s->median : 0);
}

void bench_render_json_rows(const struct bench_table *t, struct json *j)
{
    json_arr(j, "rows");
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        json_obj(j, NULL);
        json_str(j, "test", r->test);
        for (int k = 0; k < N_ROLES; k++)
            stat_json(j, bench_role_names[k], &r->role[k], true);
        double s = bench_speedup(r), h = bench_percent_of_host(r);
        if (isnan(s))
            json_null(j, "speedup");
        else
            json_num(j, "speedup", s);
        if (isnan(h))
            json_null(j, "percent_of_host");
        else
            json_num(j, "percent_of_host", h);
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
        for (int k = 0; k < N_ROLES; k++) {
            if (r->role[k].present)
                json_int(j, bench_role_names[k], (long long)r->role[k].n);
            else
                json_null(j, bench_role_names[k]);
        }
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
    tri(j, "simdgroup_reduction", c->simdgroup_reduction);
    tri(j, "simdgroup_matrix_mul", c->simdgroup_mm);
    tri(j, "bfloat", c->bfloat);
    tri(j, "tensor", c->tensor);
    tri(j, "unified_memory", c->unified_memory);
    tri(j, "residency_sets", c->residency_sets);
    if (isnan(c->working_set_mb))
        json_null(j, "recommended_working_set_mb");
    else
        json_num(j, "recommended_working_set_mb", c->working_set_mb);
    json_end_obj(j);
}
