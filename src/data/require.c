/* vzcaps stats --require's NAMEs (require.h): the table and its counts. Owns: one entry per
 * NAME, and matching a record to its NAMEs through a sorted index. Never: reads a file (the
 * caller resolves a NAME with a '/' to its real path), or drops a NAME past a fixed size. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "require.h"

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

int ulog_require_init(struct ulog_require *t, char *const *names, size_t n)
{
    memset(t, 0, sizeof *t);
    t->req = calloc(n ? n : 1, sizeof *t->req);
    struct ulog_required **order = calloc(n ? n : 1, sizeof *order);
    bool *later = calloc(n ? n : 1, sizeof *later); /* a NAME equal to one before it */
    int rc = t->req && order && later ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        t->req[i].name = names[i], order[i] = &t->req[i];
    if (rc == 0)
        qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1; rc == 0 && i < n; i++)
        later[order[i] - t->req] = strcmp(order[i]->name, order[i - 1]->name) == 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!later[i])
            t->req[t->n++] = (struct ulog_required){.name = names[i], .by_path = strchr(names[i], '/') != NULL};
    free(order), free(later);
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

/* Counts r for each NAME matched by_path against key: 0, or -1 out of memory. */
static int count_key(struct ulog_require *t, bool by_path, const char *key, const struct ulog_record *r)
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
    for (; lo < t->n && t->index[lo]->by_path == by_path && strcmp(t->index[lo]->match, key) == 0; lo++) {
        struct ulog_required *q = t->index[lo];
        if (r->event == ULOG_HOOKED)
            q->hooked++;
        else if (q->stock++ == 0 && !(q->reason = strdup(r->reason)))
            rc = -1;
    }
    return rc;
}

int ulog_require_count(struct ulog_require *t, const struct ulog_record *r)
{
    return count_key(t, false, r->program, r) | count_key(t, true, r->path, r);
}

void ulog_require_reset(struct ulog_require *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->req[i].reason);
        t->req[i].reason = NULL, t->req[i].hooked = t->req[i].stock = 0;
    }
}

void ulog_require_free(struct ulog_require *t)
{
    for (size_t i = 0; t->req && i < t->n; i++)
        free(t->req[i].match), free(t->req[i].reason);
    free(t->req), free(t->index);
    memset(t, 0, sizeof *t);
}
