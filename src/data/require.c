/* vzcaps stats --require's NAMEs (require.h): the table, its runs and their effects. Owns: one
 * entry per NAME, matching a record to its NAMEs through a sorted index, and an effect to the run
 * of its process. Never: reads a file (the caller resolves a NAME with a '/' to its real path),
 * or drops a NAME, a run or an effect past a fixed size. */
#define _POSIX_C_SOURCE 200809L /* strdup, strndup */
#include "require.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* By name, then by place in the table (the first of equal names first). */
static int by_name(const void *a, const void *b)
{
    const struct ulog_required *x = *(struct ulog_required *const *)a, *y = *(struct ulog_required *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x > y) - (x < y);
}

/* By what a record must hold: path matches after program ones, then by match, then place. */
static int by_match(const void *a, const void *b)
{
    const struct ulog_required *x = *(struct ulog_required *const *)a, *y = *(struct ulog_required *const *)b;
    int c = x->by_path != y->by_path ? (x->by_path ? 1 : -1) : strcmp(x->match, y->match);
    return c ? c : (x > y) - (x < y);
}

/* array (cap items of size bytes) with room for one more after its first n: array itself, a
 * larger copy (cap updated), or NULL out of memory (array is then unchanged). */
static void *grow(void *array, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return array;
    size_t c = *cap ? *cap * 2 : 16;
    void *q = c <= SIZE_MAX / size ? realloc(array, c * size) : NULL;
    if (q)
        *cap = c;
    return q;
}

/* NAME=COUNT split into q (name on the heap): 0, or -1 out of memory. */
static int split_count(struct ulog_required *q, const char *arg)
{
    const char *eq = strrchr(arg, '='), *d = eq ? eq + 1 : NULL;
    size_t digits = d ? strspn(d, "0123456789") : 0;
    bool count = eq && eq > arg && digits == strlen(d) && digits <= 15;
    q->name = count ? strndup(arg, (size_t)(eq - arg)) : strdup(arg);
    q->counted = count && digits, q->count = q->counted ? strtoull(d, NULL, 10) : 0;
    return q->name ? 0 : -1;
}

int ulog_require_init(struct ulog_require *t, char *const *names, size_t n, size_t *bad)
{
    memset(t, 0, sizeof *t);
    struct ulog_required *all = calloc(n ? n : 1, sizeof *all), **order = calloc(n ? n : 1, sizeof *order);
    bool *later = calloc(n ? n : 1, sizeof *later); /* a NAME equal to one before it */
    t->req = calloc(n ? n : 1, sizeof *t->req);
    int rc = t->req && order && all && later ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = split_count(&all[i], names[i]), order[i] = &all[i];
    if (rc == 0)
        qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1, f = 0; rc == 0 && i < n; i++) {
        if (strcmp(order[i]->name, order[f]->name) != 0) {
            f = i;
            continue;
        }
        later[order[i] - all] = true;
        if (order[i]->counted != order[f]->counted || order[i]->count != order[f]->count)
            rc = -2, *bad = (size_t)(order[i] - all);
    }
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && !later[i])
            t->req[t->n++] = (struct ulog_required){.name = all[i].name, .by_path = strchr(all[i].name, '/') != NULL,
                                                    .counted = all[i].counted, .count = all[i].count};
        else
            free((char *)all[i].name);
    }
    free(order), free(all), free(later);
    return rc;
}

int ulog_require_index(struct ulog_require *t)
{
    t->index = calloc(t->n ? t->n : 1, sizeof *t->index);
    if (!t->index)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        if (!t->req[i].match && !(t->req[i].match = strdup(t->req[i].name)))
            return -1;
        t->index[i] = &t->req[i];
    }
    qsort(t->index, t->n, sizeof *t->index, by_match);
    return 0;
}

/* Where pid's last run is in by_pid (or the free slot for it). */
static size_t *pid_slot(const struct ulog_require *t, long long pid)
{
    size_t m = t->n_slots - 1, k = (size_t)((unsigned long long)pid * 0x9e3779b97f4a7c15ull >> 20) & m;
    while (t->by_pid[k] && t->runs[t->by_pid[k] - 1].pid != pid)
        k = (k + 1) & m;
    return &t->by_pid[k];
}

/* The run r begins (once, for its first NAME: *run), then is q's. 0, or -1 out of memory. */
static int add_run(struct ulog_require *t, struct ulog_required *q, const struct ulog_record *r, size_t *run)
{
    if (*run == (size_t)-1) {
        struct ulog_run *runs = grow(t->runs, &t->cap_runs, t->n_runs, sizeof *t->runs);
        if (!runs)
            return -1;
        t->runs = runs;
        struct ulog_run *u = &t->runs[*run = t->n_runs++];
        *u = (struct ulog_run){r->pid, r->time, r->event, false, strdup(r->program),
                               strdup(r->event == ULOG_HOOKED ? r->no_raise : r->reason), NULL};
        if (t->n_runs * 2 > t->n_slots) { /* the processes' places made again, twice as many */
            size_t *old = t->by_pid, n = t->n_slots ? t->n_slots * 2 : 64;
            if (!(t->by_pid = calloc(n, sizeof *t->by_pid)))
                return t->by_pid = old, -1;
            free(old), t->n_slots = n;
            for (size_t i = 0; i + 1 < t->n_runs; i++) /* a later run of a pid takes its place */
                *pid_slot(t, t->runs[i].pid) = i + 1;
        }
        *pid_slot(t, r->pid) = t->n_runs;
        if (!u->program || !u->reason)
            return -1;
    }
    size_t *runs = grow(q->runs, &q->cap_runs, q->n_runs, sizeof *q->runs);
    if (!runs)
        return -1;
    q->runs = runs;
    q->runs[q->n_runs++] = *run;
    if (r->event == ULOG_HOOKED)
        q->hooked++;
    else if (q->stock++ == 0 && !(q->reason = strdup(r->reason)))
        return -1;
    return 0;
}

/* r taken for each NAME matched by_path against key: 0, or -1 out of memory. */
static int count_key(struct ulog_require *t, bool by_path, const char *key, const struct ulog_record *r, size_t *run)
{
    size_t lo = 0, hi = t->n; /* the first entry not before (by_path, key) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct ulog_required *q = t->index[mid];
        int c = q->by_path != by_path ? (q->by_path ? 1 : -1) : strcmp(q->match, key);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int rc = 0;
    for (; rc == 0 && lo < t->n && t->index[lo]->by_path == by_path && strcmp(t->index[lo]->match, key) == 0; lo++)
        if (r->event == ULOG_UNKNOWN)
            t->index[lo]->unreadable++;
        else
            rc = add_run(t, t->index[lo], r, run);
    return rc;
}

/* An effect record given to the last run of its process, when that run is a NAME's, hooked and of
 * its program (else the run is before the window, or no NAME's). 0, or -1 out of memory. */
static int effect(struct ulog_require *t, const struct ulog_record *r)
{
    size_t i = t->n_slots ? *pid_slot(t, r->pid) : 0;
    struct ulog_run *u = i ? &t->runs[i - 1] : NULL;
    if (!u || u->event != ULOG_HOOKED || strcmp(u->program, r->program) != 0)
        return 0;
    if (r->event == ULOG_UNLOCKED)
        return u->effect = true, 0;
    char *joined = malloc((u->images ? strlen(u->images) + 2 : 0) + strlen(r->image) + 1);
    if (!joined)
        return -1;
    strcpy(joined, u->images ? u->images : ""), strcat(joined, u->images ? ", " : ""), strcat(joined, r->image);
    free(u->images), u->images = joined;
    return 0;
}

int ulog_require_count(struct ulog_require *t, const struct ulog_record *r)
{
    size_t run = (size_t)-1;
    if (r->event == ULOG_UNLOCKED || r->event == ULOG_STOCK_CALLER)
        return effect(t, r);
    return count_key(t, false, r->program, r, &run) | count_key(t, true, r->path, r, &run);
}

/* ---- the verdict in words ---- */

static char *heap_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *heap_printf(const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (out)
        vsnprintf(out, (size_t)n + 1, fmt, again);
    va_end(ap), va_end(again);
    return out;
}

static const char *runs_word(unsigned long long n)
{
    return n == 1 ? "run" : "runs";
}

const char *ulog_run_verdict(const struct ulog_run *u, const char **why)
{
    *why = u->event == ULOG_LEFT_STOCK || *u->reason ? u->reason : u->effect || !u->images ? "" : u->images;
    return u->event == ULOG_LEFT_STOCK ? "stock" : u->effect ? "unlocked" : "no_effect";
}

/* Why the first run of q that raised nothing raised nothing. */
static char *no_effect_why(const struct ulog_require *t, const struct ulog_required *q)
{
    for (size_t k = 0; k < q->n_runs; k++) {
        const struct ulog_run *u = &t->runs[q->runs[k]];
        if (u->event != ULOG_HOOKED || u->effect)
            continue;
        if (*u->reason)
            return heap_printf("%s", u->reason);
        if (u->images)
            return heap_printf("no caller in scope: the images that asked were kept stock (%s)", u->images);
        return heap_printf("no image in scope asked for anything above the device's own");
    }
    return heap_printf("(none)");
}

const char *ulog_require_verdict(const struct ulog_require *t, const struct ulog_required *q, long long lost,
                                 const char *window, char **why, unsigned long long *unlocked)
{
    *unlocked = 0;
    for (size_t k = 0; k < q->n_runs; k++)
        *unlocked += t->runs[q->runs[k]].effect;
    unsigned long long ran = q->hooked + q->stock, none = q->hooked - *unlocked, cut = q->unreadable + t->unreadable_all;
    const char *s = ran == 1 ? "its " : "all ", *w = runs_word(ran);
    char *detail = NULL;
    if (q->stock)
        *why = heap_printf("left stock in %llu of %llu %s%s: %s", q->stock, ran, w, window, *q->reason ? q->reason : "(no reason given)");
    else if (none)
        *why = heap_printf("no answer raised in %llu of %llu %s%s: %s", none, ran, w, window, detail = no_effect_why(t, q));
    else if (cut)
        *why = heap_printf("%llu %s of the log cut short could be %s runs%s: not every run can be judged", cut,
                           cut == 1 ? "record" : "records", ran ? "more of its" : "its", window);
    else if (lost)
        *why = heap_printf("%.0lld%s records written%s were lost to the log's rotation: not every run can be judged", /* -1: unknown */
                           lost < 0 ? 0 : lost, lost < 0 ? "an unknown number of" : "", window);
    else if (!ran && !q->counted)
        *why = heap_printf("never ran%s: no record of %s%s%s in the log", window, q->by_path ? "a process whose executable is " : "",
                           q->match, q->by_path && strcmp(q->match, q->name) ? " (where it leads)" : "");
    else if (q->counted && ran != q->count)
        *why = heap_printf("ran %llu %s%s, not %llu", ran, ran == 1 ? "time" : "times", window, q->count);
    else
        *why = ran ? heap_printf("unlocked in %s%llu %s%s", s, ran, w, window) : heap_printf("never ran%s, as asked", window);
    free(detail);
    return q->stock ? "stock" : none ? "no_effect" : cut ? "unreadable" : lost ? "lost" : !ran && !q->counted ? "not_run"
         : q->counted && ran != q->count ? "count" : "unlocked";
}

void ulog_require_reset(struct ulog_require *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->req[i].reason);
        t->req[i].reason = NULL, t->req[i].hooked = t->req[i].stock = t->req[i].unreadable = t->req[i].n_runs = 0;
    }
    for (size_t i = 0; i < t->n_runs; i++)
        free(t->runs[i].program), free(t->runs[i].reason), free(t->runs[i].images);
    if (t->by_pid)
        memset(t->by_pid, 0, t->n_slots * sizeof *t->by_pid);
    t->n_runs = 0, t->unreadable_all = 0;
}

void ulog_require_free(struct ulog_require *t)
{
    ulog_require_reset(t);
    for (size_t i = 0; t->req && i < t->n; i++)
        free(t->req[i].match), free((char *)t->req[i].name), free(t->req[i].runs);
    free(t->req), free(t->index), free(t->runs), free(t->by_pid);
    memset(t, 0, sizeof *t);
}
