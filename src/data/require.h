/* vzcaps stats --require's NAMEs (require.c): each NAME once, in the order given, its runs and
 * their effects taken as the usage log's records come, by a sorted index (any number of NAMEs:
 * no NAME is compared with every other, nor every record with every NAME). */
#ifndef VZCAPS_REQUIRE_H
#define VZCAPS_REQUIRE_H

#include "usagelog.h"

#include <stdbool.h>
#include <stddef.h>

/* One run of a NAME (its hooked or left_stock record) and what its process's effects said. */
struct ulog_run {
    long long pid, time;
    enum ulog_event event;  /* ULOG_HOOKED or ULOG_LEFT_STOCK */
    bool effect;            /* an "unlocked" record of its process followed */
    char *program, *reason; /* reason: left stock's, or the hooked record's no_raise */
    char *images;           /* the images kept stock, ", "-joined (NULL: none) */
};

struct ulog_required {
    const char *name; /* NAME, without a "=COUNT" */
    char *match; /* what a record must hold: NAME, or a NAME with a '/''s real path */
    bool by_path; /* matched against the record's "path", else its "program" */
    bool counted; /* NAME=COUNT: it must run exactly count times */
    unsigned long long count, hooked, stock, unreadable; /* unreadable: cut records that may be its runs */
    char *reason; /* the first stock run's reason */
    size_t *runs, n_runs, cap_runs; /* indices into ulog_require's runs, in the log's order */
};

struct ulog_require {
    struct ulog_required *req; /* in the order given, each NAME once */
    size_t n;
    struct ulog_required **index; /* by (by_path, match) */
    struct ulog_run *runs;
    size_t n_runs, cap_runs, *by_pid, n_slots; /* by_pid: each process's last run (index + 1; 0 free) */
    unsigned long long unreadable_all; /* cut records whose program is cut too: any NAME's */
};

/* Each NAME of names once (the first of equal ones), by_path set for a NAME with '/', match
 * NULL for the caller to set. "NAME=COUNT" (1 to 15 digits after the last '=', a NAME before
 * it) asks for exactly COUNT runs; "NAME=" is NAME (how a NAME ending in "=DIGITS" is given).
 * 0; -1 out of memory; -2 a NAME given with two different counts (*bad: its index). */
int ulog_require_init(struct ulog_require *t, char *const *names, size_t n, size_t *bad);
/* Once every match is set (a NULL one is NAME itself): 0, or -1 out of memory. */
int ulog_require_index(struct ulog_require *t);
/* r taken for every NAME it is a run or a cut record of, or for the run it is an effect of (the
 * last run of its process): 0, or -1 out of memory (all heap: ulog_require_free). */
int ulog_require_count(struct ulog_require *t, const struct ulog_record *r);
/* q's verdict ("unlocked", the pass; "stock", "no_effect", "unreadable", "lost" (records lost
 * since the window's start), "not_run" or "count"), why in words (*why: heap, NULL out of memory;
 * window: " since ..." or "") and its runs with an effect. A run's verdict: "unlocked", "stock"
 * or "no_effect", and why (its own words). */
const char *ulog_require_verdict(const struct ulog_require *t, const struct ulog_required *q, long long lost,
                                 const char *window, char **why, unsigned long long *unlocked);
const char *ulog_run_verdict(const struct ulog_run *u, const char **why);
/* Every count back to none (a zero mark). */
void ulog_require_reset(struct ulog_require *t);
void ulog_require_free(struct ulog_require *t);

#endif
