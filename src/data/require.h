/* vzcaps stats --require's NAMEs (require.c): each NAME once, in the order given, and the runs of
 * each counted as the usage log's records come, by a sorted index (any number of NAMEs: no
 * NAME is compared with every other, nor every record with every NAME). */
#ifndef VZCAPS_REQUIRE_H
#define VZCAPS_REQUIRE_H

#include "usagelog.h"

#include <stdbool.h>
#include <stddef.h>

struct ulog_required {
    const char *name;
    char *match; /* what a record must hold (heap): NAME, or a NAME with a '/''s real path */
    bool by_path; /* matched against the record's "path", else its "program" */
    unsigned long long hooked, stock;
    char *reason; /* the first stock run's reason (heap) */
};

struct ulog_require {
    struct ulog_required *req; /* in the order given, each NAME once */
    size_t n;
    struct ulog_required **index; /* by (by_path, match) */
};

/* Each NAME of names once (the first of equal ones), by_path set for a NAME with '/', match
 * NULL for the caller to set: 0, or -1 out of memory. */
int ulog_require_init(struct ulog_require *t, char *const *names, size_t n);
/* Once every match is set (a NULL one is NAME itself): 0, or -1 out of memory. */
int ulog_require_index(struct ulog_require *t);
/* r counted for every NAME it is a run of: 0, or -1 out of memory (a reason not kept). */
int ulog_require_count(struct ulog_require *t, const struct ulog_record *r);
/* Every count back to none (a zero mark). */
void ulog_require_reset(struct ulog_require *t);
void ulog_require_free(struct ulog_require *t);

#endif
