/* The usage log the library appends to when log_file or VZCAPS_LOG_FILE names one (docs/fleet.md,
 * "Proof after a job"), as vzcaps stats reads it: JSON Lines, one record per process,
 *   {"v":1,"time":SECONDS,"pid":PID,"program":"NAME","path":"EXE","event":"hooked"|"left_stock",
 *    "class":"DEVICE_CLASS","family":1008,"reason":""}
 * (hooked: also "no_raise"), and the process's effects: event "unlocked" or "stock_caller" with
 * "image" (src/core/vzcaps_core.h has the whole form)
 * at most VZCAPS_LOG_LINE_MAX bytes a line; PATH is renamed PATH.1 when it reaches
 * VZCAPS_LOG_ROTATE_SIZE (the library writes it: src/shim, the core's statslog.c; where it is,
 * vzcaps_configure's log_file). Owns: reading one line, the --since forms and the counts. Never: reads a file (stats.c streams it through input.c), keeps a
 * line past its limit, or drops a program or reason past a fixed table size. */
#ifndef VZCAPS_USAGELOG_H
#define VZCAPS_USAGELOG_H

#include <stdbool.h>
#include <stddef.h>

#define VZCAPS_LOG_VERSION 1
#define VZCAPS_LOG_LINE_MAX 1024                 /* bytes of a record, its newline excluded */
#define VZCAPS_LOG_ROTATE_SIZE (1u << 20)        /* the library renames PATH to PATH.1 here */
#define VZCAPS_LOG_READ_MAX (16u << 20)          /* stats reads a file of at most this size */
#define VZCAPS_LOG_KEY "log_file"                /* the config file's key (top level), for messages */
#define VZCAPS_LOG_ENV "VZCAPS_LOG_FILE"         /* the variable, which wins over the key */

/* UNKNOWN: a record cut short before its event (ulog_parse_fragment) */
enum ulog_event { ULOG_HOOKED, ULOG_LEFT_STOCK, ULOG_UNLOCKED, ULOG_STOCK_CALLER, ULOG_UNKNOWN };

/* One record; the strings on the heap (ulog_record_free); no_raise and image "" when absent. */
struct ulog_record {
    int version;
    long long time, pid, family;
    enum ulog_event event;
    char *program, *path, *device_class, *reason, *no_raise, *image;
};

/* Parses one line (no newline) into r: 0, or -1 with the reason in why ("not JSON: line 1,
 * column 3: ...", "unknown version 2", "no \"program\" string"...); nothing to free then.
 * Members other than the contract's are ignored (a later version 1 may add some). */
int ulog_parse_line(const char *line, size_t len, struct ulog_record *r, char *why, size_t whylen);
void ulog_record_free(struct ulog_record *r);

/* What can still be read of a line that does not parse (a record cut short, its head): 0 it does
 * not begin as a record does; 1 its program is known (r: what its whole members hold, the
 * rest "", event ULOG_UNKNOWN when cut before it); 2 it may be a record, whose program is cut. */
int ulog_parse_fragment(const char *line, size_t len, struct ulog_record *r);

/* Where a whole record may start inside a line that does not parse: the last "{\"v\":" after its
 * first byte (a record's strings escape every quote, so none holds that text). A record cut short
 * (a short write on a full disk, a writer killed mid-write) has no newline, and the next process
 * appends its record to it. NULL when there is none. */
const char *ulog_record_after_cut(const char *line, size_t len);

/* The zero mark `vzcaps stats --zero` appends before it moves the log aside: from it on, stats
 * counts afresh (the records before it are kept, not counted). One line:
 *   {"v":1,"time":SECONDS,"pid":PID,"event":"zeroed"}
 * ulog_zero_format writes it with its newline into out: its length, 0 when cap is too small.
 * ulog_parse_zero: 1 when line is one (its time in *time), else 0. */
#define ULOG_ZERO_EVENT "zeroed"
size_t ulog_zero_format(long long time, long long pid, char *out, size_t cap);
int ulog_parse_zero(const char *line, size_t len, long long *time);
/* The line a rotation leaves at the end of the file it renames to PATH.1 (statsfile.h): what the
 * PATH.1 it replaced held that is now gone, {"v":1,"time":T,"pid":P,"event":"rotated",
 * "zeroed":Z,"lost":N,"until":U}: N records since the zero mark of time Z (0: none), the newest
 * of time U; N -1: unknown (the writer could not read the file it replaced, or it was too large).
 * 1 when line is one (z, lost, until set), else 0. */
int ulog_parse_rotated(const char *line, size_t len, long long *z, long long *lost, long long *until);

/* Splits a stream into lines without keeping more than one: on_line gets each line (len, its
 * 1-based number), one longer than VZCAPS_LOG_LINE_MAX with overlong true, of one longer than
 * twice that its last bytes only, dropped true (where a whole record appended to cut ones is).
 * A last line without its newline is passed with unterminated true. */
struct ulog_lines {
    char line[2 * VZCAPS_LOG_LINE_MAX + 1];
    size_t len;
    bool overlong, dropped;
    unsigned long long line_no;
    void (*on_line)(void *ctx, const char *line, size_t len, unsigned long long line_no, bool overlong,
                    bool unterminated);
    void *ctx;
};
void ulog_lines_feed(struct ulog_lines *l, const char *buf, size_t n);
void ulog_lines_end(struct ulog_lines *l);

/* A --since value as seconds since the epoch: whole unix seconds ("1796155200"), ISO 8601 UTC
 * ("2026-12-01T20:00:00Z", also without seconds "2026-12-01T20:00Z", or a date "2026-12-01"
 * meaning its midnight UTC), or a time before now ("90s", "30m", "2h", "7d"). 0, or -1 with
 * the reason in why. */
int ulog_since_parse(const char *text, long long now, long long *out, char *why, size_t whylen);
#define ULOG_SINCE_FORMS "unix seconds (1796155200), ISO 8601 UTC (2026-12-01T20:00:00Z, 2026-12-01), or a time ago (90s, 30m, 2h, 7d)"

/* The counts: one entry per (event, program, family for hooked, reason for left stock), in a
 * table that grows (an open-addressed hash over the entries). */
struct ulog_count {
    enum ulog_event event;
    char *program, *reason; /* reason: "" for hooked */
    long long family;       /* 0 for left stock */
    unsigned long long n;
};
struct ulog_stats {
    struct ulog_count *items;
    size_t n, cap;
    size_t *slots; /* index + 1 into items, 0 empty */
    size_t n_slots;
    unsigned long long hooked, left_stock;
};
/* Counts r: 0, or -1 when out of memory (the stats are then as before). */
int ulog_stats_add(struct ulog_stats *s, const struct ulog_record *r);
/* Orders the entries: by program (bytes), hooked before left stock, then family or reason. */
void ulog_stats_sort(struct ulog_stats *s);
void ulog_stats_free(struct ulog_stats *s);

#endif
