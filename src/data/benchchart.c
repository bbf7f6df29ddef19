/* The benchmark chart (SVG): one panel and axis per test, the speed-up and percent-of-host
 * charts with their own axes, what was measured and which shim each series ran with; its
 * layout computed from text lengths. Never: reads files or runs anything. */
#define _XOPEN_SOURCE 700
#include "benchdata.h"

#include "../common/text.h"
#include "../core/vzcaps_core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* One horizontal bar chart with its own labelled x axis: one bar a test, values v[i] on
 * 0..axis_max, ticks formatted by unit ("x" or " %"), a marked reference value. Returns the
 * y below it. */
static double hbar_chart(FILE *out, const struct bench_table *t, const double *v, double y, double width, double font,
                         double margin, double name_w, const char *title, const char *unit, double axis_max, double ref,
                         const char *ref_label, const char *cls, const char *colour)
{
    const double row_h = 22, value_w = text_w("100000.00 %", font);
    double bx = margin + name_w + 8, bw = width - bx - value_w - margin;
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", margin, y, title);
    y += 14;
    double top = y;
    for (size_t i = 0; i < t->n; i++, y += row_h) {
        fprintf(out, "<text x=\"%.0f\" y=\"%.1f\">", margin, y + 14);
        xml_escape(out, t->rows[i].test);
        fprintf(out, "</text>\n");
        if (isnan(v[i]))
            continue;
        double w = bw * fmin(v[i], axis_max) / axis_max;
        fprintf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"%s\"><title>", cls, bx, y + 3, w, colour);
        xml_escape(out, t->rows[i].test);
        fprintf(out, " %.2f%s</title></rect>\n", v[i], unit);
        char label[48];
        snprintf(label, sizeof label, "%.2f%s", v[i], unit);
        /* the value beside its bar, or past the reference line when it would sit on it */
        double lx = bx + w + 6, rx = ref > 0 && ref <= axis_max ? bx + bw * ref / axis_max : -1;
        if (rx >= lx - 3 && rx <= lx + text_w(label, font) + 3)
            lx = rx + 6;
        fprintf(out, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx, y + 14, label);
    }
    /* the axis: a baseline, ticks at quarters, their values with the unit, the reference */
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", bx, y + 2, bx + bw, y + 2);
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", bx, top, bx, y + 2);
    for (int g = 0; g <= 4; g++) {
        double tv = axis_max * g / 4, x = bx + bw * g / 4;
        char tick[32];
        fmt_tick(tick, sizeof tick, tv);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", x, y + 2, x, y + 6);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.0f\">%s%s</text>\n", x, y + 18, font - 1, tick, unit);
    }
    if (ref > 0 && ref <= axis_max) {
        double x = bx + bw * ref / axis_max;
        fprintf(out, "<line class=\"reference\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>\n",
                x, top, x, y + 2);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" fill=\"#c0392b\" text-anchor=\"%s\">%s</text>\n", x + 3, top - 3,
                font - 2, x + text_w(ref_label, font - 2) > width - margin ? "end" : "start", ref_label);
    }
    return y + 40;
}

/* The chart's layout, worked out before anything is drawn (svg_layout_*), then drawn step by step. */
struct svg_layout {
    double font, margin, plot_h, gap;
    size_t nrows;
    int nroles;
    char legend[N_ROLES][160], about[400], warn[240];
    const char *title, *caption, *title_speed, *title_host;
    double panel_w[BENCH_MAX_ROWS], scale[BENCH_MAX_ROWS], axis_w[BENCH_MAX_ROWS], min_panels;
    double legend_w, lower_w, max_speed, max_pct, speed[BENCH_MAX_ROWS], pct[BENCH_MAX_ROWS], name_w;
    bool any_speed, any_host;
    double width, top, legend_top, after_legend, height;
};

static const char *const svg_colours[N_ROLES] = {"#9a9a9a", "#2b7bd6", "#2a9d5b"};

/* The legend, the line about the runs, the title, and the warning when a run's family differs. */
static void svg_layout_texts(const struct bench_table *t, struct svg_layout *L)
{
    L->nrows = t->n ? t->n : 1;
    L->nroles = 0;
    for (int k = 0; k < N_ROLES; k++)
        L->nroles += t->role_given[k];
    L->nroles = L->nroles ? L->nroles : 1;
    for (int k = 0; k < N_ROLES; k++)
        bench_series_label(t, (enum bench_role)k, L->legend[k], sizeof L->legend[k]);

    bench_about(t, L->about, sizeof L->about);
    L->title = "llama-bench: tokens per second", L->caption = "median of samples, higher is better; each test on its own axis";
    /* a run whose family differs from the host's: the chart says so, as the text report does */
    const char *from;
    long host = bench_host_family(t, &from), unl = t->have_caps[ROLE_UNLOCKED] ? t->caps[ROLE_UNLOCKED].apple_family : 0;
    if (host && unl && unl != host)
        snprintf(L->warn, sizeof L->warn, "! the unlocked run reported Apple%ld, %s %s's Apple%ld: tuning rows for another GPU generation%s",
                 unl - 1000, unl > host ? "above" : "below", t->have_caps[ROLE_HOST] && t->caps[ROLE_HOST].apple_family ? "the host" : t->chip,
                 host - 1000, unl > host ? ", and more than the hardware has" : "");
}

/* Panel i: its own scale; its least width from its bars, axis labels and test name. */
static void svg_layout_panels(const struct bench_table *t, struct svg_layout *L)
{
    L->min_panels = 0;
    for (size_t i = 0; i < L->nrows; i++) {
        double maxv = 0;
        for (int k = 0; k < N_ROLES && i < t->n; k++)
            if (t->rows[i].role[k].present && t->rows[i].role[k].median > maxv)
                maxv = t->rows[i].role[k].median;
        L->scale[i] = nice_max(maxv);
        char tick[32];
        fmt_tick(tick, sizeof tick, L->scale[i]);
        L->axis_w[i] = text_w(tick, L->font) + 8;
        double value_labels = 0;
        for (int k = 0; k < N_ROLES && i < t->n; k++)
            if (t->rows[i].role[k].present) {
                char v[32];
                snprintf(v, sizeof v, "%.1f", t->rows[i].role[k].median);
                value_labels = fmax(value_labels, text_w(v, L->font - 2));
            }
        double bars = fmax(L->nroles * (34 + L->gap) + L->gap, L->nroles * (value_labels + L->gap) + L->gap);
        double label = i < t->n ? text_w(t->rows[i].test, L->font) : 0;
        L->panel_w[i] = L->axis_w[i] + fmax(bars, label) + L->margin;
        L->min_panels += L->panel_w[i];
    }
}

/* The legend's width and the lower charts (speed-up, percentage of the host). */
static void svg_layout_lower(const struct bench_table *t, struct svg_layout *L)
{
    double lower_w;
    L->legend_w = 0;
    for (int k = 0; k < N_ROLES; k++)
        if (t->role_given[k])
            L->legend_w = fmax(L->legend_w, 16 + text_w(L->legend[k], L->font));
    L->any_speed = false, L->any_host = false;
    L->max_speed = 1, L->max_pct = 100, L->name_w = 0;
    for (size_t i = 0; i < t->n; i++) {
        L->speed[i] = bench_speedup(&t->rows[i]), L->pct[i] = bench_percent_of_host(&t->rows[i]);
        L->any_speed |= !isnan(L->speed[i]), L->any_host |= !isnan(L->pct[i]);
        if (!isnan(L->speed[i]))
            L->max_speed = fmax(L->max_speed, L->speed[i]);
        if (!isnan(L->pct[i]))
            L->max_pct = fmax(L->max_pct, L->pct[i]);
        L->name_w = fmax(L->name_w, text_w(t->rows[i].test, L->font));
    }
    L->title_speed = "Speed-up: unlocked guest / stock guest";
    L->title_host = "Unlocked guest as a percentage of the host";
    lower_w = L->margin + L->name_w + 8 + 200 + text_w("100000.00 %", L->font) + L->margin;
    L->lower_w = lower_w;
}

/* The canvas is as wide as its widest content, and the panels share it. */
static void svg_layout_canvas(const struct bench_table *t, struct svg_layout *L)
{
    double lower_w = L->lower_w;
    L->width = fmax(L->margin * 2 + L->min_panels - L->margin, L->margin * 2 + text_w(L->title, 14));
    L->width = fmax(L->width, fmax(L->margin * 2 + text_w(L->about, L->font), L->margin * 2 + text_w(L->caption, L->font - 1)));
    L->width = fmax(L->width, fmax(L->margin * 2 + L->legend_w, L->margin * 2 + text_w(L->warn, L->font)));
    if (L->any_speed || L->any_host)
        L->width = fmax(L->width, fmax(lower_w, L->margin * 2 + text_w(L->any_host ? L->title_host : L->title_speed, 14)));
    double extra = (L->width - L->margin - L->min_panels) / (double)L->nrows;
    for (size_t i = 0; i < L->nrows; i++)
        L->panel_w[i] += extra > 0 ? extra : 0;
    L->top = 22 + (L->about[0] ? 18 : 0) + 18 + 14;
    L->legend_top = L->top + L->plot_h + 44, L->after_legend = L->legend_top + L->nroles * 18 + (L->warn[0] ? 22 : 0) + 24;
    L->height = L->after_legend + (L->any_speed ? 14 + (double)t->n * 22 + 40 + 10 : 0) +
                    (L->any_host ? 14 + (double)t->n * 22 + 40 + 10 : 0) + L->margin - 24;
}

static void svg_head(const struct bench_table *t, const struct svg_layout *L, FILE *out)
{
    double y = 22;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"%.0f\">\n",
            ceil(L->width), ceil(L->height), ceil(L->width), ceil(L->height), L->font);
    fprintf(out, "<title>llama-bench tokens per second:");
    int listed = 0;
    for (int k = 0; k < N_ROLES; k++)
        if (t->role_given[k])
            fprintf(out, "%s %s", listed++ ? ";" : "", L->legend[k]);
    fprintf(out, "</title>\n");
    fprintf(out, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", ceil(L->width), ceil(L->height));
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", L->margin, y, L->title);
    if (L->about[0]) {
        y += 18;
        fprintf(out, "<text class=\"about\" x=\"%.0f\" y=\"%.0f\">", L->margin, y);
        xml_escape(out, L->about);
        fprintf(out, "</text>\n");
    }
    y += 16;
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"%.0f\" fill=\"#555555\">%s</text>\n", L->margin, y, L->font - 1, L->caption);
}

static void svg_panels(const struct bench_table *t, const struct svg_layout *L, FILE *out)
{
    static const char *const *const colours = svg_colours;
    double px = L->margin;
    for (size_t i = 0; i < t->n; i++) {
        const struct bench_row *r = &t->rows[i];
        double ax = px + L->axis_w[i], base = L->top + L->plot_h, inner = L->panel_w[i] - L->margin - L->axis_w[i];
        double slot = inner / L->nroles, bar_w = fmin(slot - L->gap, 60);
        for (int g = 0; g <= 4; g++) {
            double v = L->scale[i] * g / 4, gy = base - L->plot_h * g / 4;
            char tick[32];
            fmt_tick(tick, sizeof tick, v);
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", ax, gy, px + L->panel_w[i] - L->margin, gy);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ax - 4, gy + 4, tick);
        }
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>\n", ax, L->top, ax, base);
        int drawn = 0;
        for (int k = 0; k < N_ROLES; k++) {
            if (!t->role_given[k])
                continue;
            double cx = ax + slot * (drawn++ + 0.5);
            if (!r->role[k].present)
                continue;
            double h = L->plot_h * r->role[k].median / L->scale[i];
            fprintf(out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                    bench_role_names[k], cx - bar_w / 2, base - h, bar_w, h, colours[k]);
            xml_escape(out, r->test);
            fprintf(out, " %s: %.2f t/s</title></rect>\n", bench_role_names[k], r->role[k].median);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.0f\">%.1f</text>\n", cx, base - h - 4,
                    L->font - 2, r->role[k].median);
        }
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">", ax + inner / 2, base + 18);
        xml_escape(out, r->test);
        fprintf(out, "</text>\n");
        px += L->panel_w[i];
    }
}

static void svg_legend(const struct bench_table *t, const struct svg_layout *L, FILE *out)
{
    static const char *const *const colours = svg_colours;
    fprintf(out, "<text x=\"%.0f\" y=\"%.0f\">tokens per second (t/s); llama-bench test under each panel</text>\n", L->margin,
            L->top + L->plot_h + 36);
    double ly = L->legend_top;
    for (int k = 0; k < N_ROLES; k++) {
        if (!t->role_given[k])
            continue;
        fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/><text class=\"legend\" x=\"%.0f\" y=\"%.0f\">",
                L->margin, ly, colours[k], L->margin + 16, ly + 10);
        xml_escape(out, L->legend[k]);
        fprintf(out, "</text>\n");
        ly += 18;
    }
    if (L->warn[0]) {
        fprintf(out, "<text class=\"warning\" x=\"%.0f\" y=\"%.0f\" fill=\"#c0392b\">", L->margin, ly + 14);
        xml_escape(out, L->warn);
        fprintf(out, "</text>\n");
    }
}

void bench_render_svg(const struct bench_table *t, FILE *out)
{
    static struct svg_layout layout;
    struct svg_layout *L = &layout;
    memset(L, 0, sizeof *L);
    L->font = 12, L->margin = 20, L->plot_h = 220, L->gap = 6;
    svg_layout_texts(t, L);
    svg_layout_panels(t, L);
    svg_layout_lower(t, L);
    svg_layout_canvas(t, L);
    svg_head(t, L, out);
    svg_panels(t, L, out);
    svg_legend(t, L, out);
    static const char *const *const colours = svg_colours;
    double y = L->after_legend;
    if (L->any_speed)
        y = hbar_chart(out, t, L->speed, y, L->width, L->font, L->margin, L->name_w, L->title_speed, "x", nice_max(L->max_speed), 1, "1x: as fast as stock",
                       "speedup", colours[ROLE_UNLOCKED]) + 10;
    if (L->any_host)
        hbar_chart(out, t, L->pct, y, L->width, L->font, L->margin, L->name_w, L->title_host, " %", nice_max(L->max_pct) < 125 ? 100 * ceil(L->max_pct / 100 - 1e-9) : nice_max(L->max_pct), 100,
                   "100 %: as fast as the host", "percent_of_host", colours[ROLE_HOST]);
    fprintf(out, "</svg>\n");
}

