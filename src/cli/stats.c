/* vzcaps stats: which processes the library hooked and which it left stock, and why, from the
 * usage log it appends to when one is configured (usagelog.h), as `ccache -s` shows a cache's use.
 * Owns: finding the log (--log-file, VZCAPS_LOG_FILE, the config file's log_file), streaming
 * PATH.1 then PATH through input.c, and the table and --json. Never: keeps a log file in memory
 * (one line at a time), follows a link at the log, or drops a line without counting and naming it. */
#define _POSIX_C_SOURCE 200809L
#include "../common/input.h"
#include "../data/usagelog.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Skipped lines named on standard error per file; the rest are counted in one more line. */
#define NAMED_SKIPS 20

struct stats_run {
    struct ulog_stats counts;
    long long since;
    bool have_since;
    unsigned long long skipped, before_since, file_skipped;
    const char *file; /* the file being read */
    bool oom;
};

static void skip_line(struct stats_run *s, unsigned long long line_no, const char *why)
{
    s->skipped++;
    if (++s->file_skipped <= NAMED_SKIPS)
        eprintf("vzcaps stats: %s:%llu: skipped: %s", s->file, line_no, why);
}

static void on_line(void *ctx, const char *line, size_t len, unsigned long long line_no, bool overlong,
                    bool unterminated)
{
    struct stats_run *s = ctx;
    char why[300];
    struct ulog_record r;
    if (overlong) {
        snprintf(why, sizeof why, "longer than %d bytes", VZCAPS_LOG_LINE_MAX);
        skip_line(s, line_no, why);
        return;
    }
    if (ulog_parse_line(line, len, &r, why, sizeof why) != 0) {
        if (unterminated) /* a record is one write with its newline: this one was cut */
            snprintf(why + strlen(why), sizeof why - strlen(why), " (the last line, without its newline)");
        skip_line(s, line_no, why);
        return;
    }
    if (s->have_since && r.time < s->since)
        s->before_since++;
    else if (ulog_stats_add(&s->counts, &r) != 0)
        s->oom = true;
    ulog_record_free(&r);
}

/* Streams one log file into s: 0 read or absent (*read tells which), -1 after the message. */
static int read_log(struct stats_run *s, const char *path, bool *was_read)
{
    char err[VZCAPS_PATH_MAX + 200];
    struct stat st;
    *was_read = false;
    errno = 0;
    int fd = vzcaps_input_open(path, VZCAPS_IN_NOFOLLOW, &st, err, sizeof err);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0)
        return eprintf("vzcaps stats: %s", err), -1;
    if ((unsigned long long)st.st_size > VZCAPS_LOG_READ_MAX) {
        char lim[32];
        vzcaps_input_size_text(VZCAPS_LOG_READ_MAX, lim, sizeof lim);
        eprintf("vzcaps stats: %s: larger than %s (%lld bytes): not a log the library wrote (it starts a new one at "
                "1 MiB)", path, lim, (long long)st.st_size);
        close(fd);
        return -1;
    }
    struct ulog_lines *l = calloc(1, sizeof *l);
    char *buf = malloc(65536);
    int rc = l && buf ? 0 : -1;
    unsigned long long got = 0;
    s->file = path, s->file_skipped = 0;
    if (l)
        l->on_line = on_line, l->ctx = s;
    while (rc == 0 && got <= VZCAPS_LOG_READ_MAX) {
        ssize_t n = read(fd, buf, 65536);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, sizeof err, "%s: cannot read: %s", path, strerror(errno));
            rc = -1;
        } else if (n == 0)
            break;
        else
            ulog_lines_feed(l, buf, (size_t)n), got += (size_t)n;
    }
    close(fd);
    if (rc == 0)
        ulog_lines_end(l);
    /* the library appends while we read: more than fstat said is fine, less is not */
    if (rc == 0 && vzcaps_input_end(path, &st, got, err, sizeof err) != 0)
        rc = -1;
    if (!l || !buf)
        snprintf(err, sizeof err, "%s: out of memory", path);
    if (rc != 0)
        eprintf("vzcaps stats: %s", err);
    else if (s->file_skipped > NAMED_SKIPS)
        eprintf("vzcaps stats: %s: %llu more lines skipped", path, s->file_skipped - NAMED_SKIPS);
    free(l), free(buf);
    *was_read = rc == 0;
    return rc;
}

/* The log's path into out, and where it came from: 1 found, 0 none configured (why says what
 * was looked at), -1 after the message. */
static int find_log(const char *opt, const char *config, char *out, size_t len, char *from, size_t fromlen,
                    char *why, size_t whylen)
{
    const char *env = vzcaps_env_get((const char *const *)environ, VZCAPS_LOG_ENV);
    if (opt || (env && *env)) {
        snprintf(out, len, "%s", opt ? opt : env);
        snprintf(from, fromlen, "%s", opt ? "--log-file" : VZCAPS_LOG_ENV);
        return 1;
    }
    static char paths[VZCAPS_CONFIG_SEARCH_MAX][VZCAPS_PATH_MAX + 1], buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    char err[VZCAPS_NOTE_LEN];
    bool named = config != NULL;
    int n = config ? (snprintf(paths[0], sizeof paths[0], "%s", config), strlen(config) <= VZCAPS_PATH_MAX ? 1 : -1)
                   : vzcaps_config_search((const char *const *)environ, NULL, paths, &named, err, sizeof err);
    if (n < 0)
        return eprintf("vzcaps stats: %s", config ? "--config: longer than a path" : err), -1;
    for (int i = 0; i < n; i++) {
        size_t got = 0;
        bool missing = false;
        if (vzcaps_read_file(NULL, paths[i], buf, sizeof buf, &got, &missing, err, sizeof err) != 0) {
            if (missing && !named)
                continue;
            return eprintf("vzcaps stats: %s: %s", paths[i], err), -1;
        }
        int found = ulog_config_log_file(buf, got, out, len, err, sizeof err);
        if (found < 0)
            return eprintf("vzcaps stats: %s: %s", paths[i], err), -1;
        snprintf(from, fromlen, "%s", paths[i]);
        snprintf(why, whylen, "%s has no %s line at its top", paths[i], VZCAPS_LOG_KEY);
        return found;
    }
    snprintf(why, whylen, "%s is not set and no config file was found", VZCAPS_LOG_ENV);
    return 0;
}

static void print_json(const struct stats_run *s, char files[2][VZCAPS_PATH_MAX + 3], const bool *read, const char *from)
{
    struct json j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "log_file", files[1]);
    json_str(&j, "configured_by", from);
    json_arr(&j, "log_files");
    for (int i = 0; i < 2; i++)
        if (read[i])
            json_str(&j, NULL, files[i]);
    json_end_arr(&j);
    if (s->have_since)
        json_int(&j, "since", s->since);
    else
        json_null(&j, "since");
    json_int(&j, "hooked", (long long)s->counts.hooked);
    json_int(&j, "left_stock", (long long)s->counts.left_stock);
    json_int(&j, "skipped", (long long)s->skipped);
    json_int(&j, "before_since", (long long)s->before_since);
    json_arr(&j, "programs");
    const struct ulog_count *c = s->counts.items, *end = c + s->counts.n;
    while (c < end) { /* one object per program: the entries are sorted by program */
        const struct ulog_count *p = c;
        unsigned long long hooked = 0, stock = 0;
        for (; p < end && strcmp(p->program, c->program) == 0; p++)
            *(p->event == ULOG_HOOKED ? &hooked : &stock) += p->n;
        json_obj(&j, NULL);
        json_str(&j, "program", c->program);
        json_int(&j, "hooked", (long long)hooked);
        json_int(&j, "left_stock", (long long)stock);
        json_arr(&j, "families");
        for (const struct ulog_count *q = c; q < p; q++)
            if (q->event == ULOG_HOOKED) {
                json_obj(&j, NULL);
                json_int(&j, "family", q->family);
                json_str(&j, "name", vzcaps_family_name(q->family));
                json_int(&j, "processes", (long long)q->n);
                json_end_obj(&j);
            }
        json_end_arr(&j);
        json_end_obj(&j);
        c = p;
    }
    json_end_arr(&j);
    json_arr(&j, "left_stock_reasons");
    for (c = s->counts.items; c < end; c++)
        if (c->event == ULOG_LEFT_STOCK) {
            json_obj(&j, NULL);
            json_str(&j, "program", c->program);
            json_str(&j, "reason", c->reason);
            json_int(&j, "processes", (long long)c->n);
            json_end_obj(&j);
        }
    json_end_arr(&j);
    json_end_obj(&j);
    json_finish(&j);
}

static const char *plural(unsigned long long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void print_text(const struct stats_run *s, char files[2][VZCAPS_PATH_MAX + 3], const bool *read, const char *from)
{
    printf("log: %s%s%s", read[0] ? esc(files[0]) : "", read[0] && read[1] ? ", " : "", read[1] ? esc(files[1]) : "");
    if (!read[0] && !read[1])
        printf("%s (not written yet)", esc(files[1]));
    printf(" (configured by %s)", esc(from));
    if (s->have_since)
        printf(" (since %lld; %llu earlier %s left out)", s->since, s->before_since,
               plural(s->before_since, "record", "records"));
    printf("\nhooked: %llu %s\n", s->counts.hooked, plural(s->counts.hooked, "process", "processes"));
    for (size_t i = 0; i < s->counts.n; i++) {
        const struct ulog_count *c = &s->counts.items[i];
        const char *name = vzcaps_family_name(c->family);
        if (c->event == ULOG_HOOKED)
            printf("  %-24s %s (%lld)  %llu\n", esc(c->program), name ? name : "family", c->family, c->n);
    }
    printf("left stock: %llu %s\n", s->counts.left_stock, plural(s->counts.left_stock, "process", "processes"));
    for (size_t i = 0; i < s->counts.n; i++) {
        const struct ulog_count *c = &s->counts.items[i];
        if (c->event == ULOG_LEFT_STOCK)
            printf("  %-24s %llu  %s\n", esc(c->program), c->n, *c->reason ? esc(c->reason) : "(no reason given)");
    }
    printf("skipped: %llu %s%s\n", s->skipped, plural(s->skipped, "line", "lines"),
           s->skipped ? " (named on standard error)" : "");
}

static int stats_args(int argc, char **argv, bool *json, const char **since, const char **log, const char **config)
{
    for (int i = 1; i < argc; i++) {
        int t;
        if ((t = opt_take(argc, argv, &i, "--since", since)) || (t = opt_take(argc, argv, &i, "--log-file", log)) ||
            (t = opt_take(argc, argv, &i, "--config", config))) {
            if (t < 0)
                return usage_error("stats", "%s needs a value", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--json") == 0)
            *json = true;
        else
            return usage_error("stats", "unexpected argument %s", argv[i]);
    }
    return 0;
}

int cmd_stats(int argc, char **argv)
{
    bool json = false;
    const char *since = NULL, *log_opt = NULL, *config = NULL;
    int bad = stats_args(argc, argv, &json, &since, &log_opt, &config);
    if (bad)
        return bad;
    static struct stats_run s;
    memset(&s, 0, sizeof s);
    char why[VZCAPS_NOTE_LEN + 100];
    if (since && ulog_since_parse(since, (long long)time(NULL), &s.since, why, sizeof why) != 0)
        return eprintf("vzcaps stats: --since %s", why), EXIT_USAGE;
    s.have_since = since != NULL;
    static char path[VZCAPS_PATH_MAX + 1], files[2][VZCAPS_PATH_MAX + 3];
    char from[VZCAPS_PATH_MAX + 1];
    int found = find_log(log_opt, config, path, sizeof path, from, sizeof from, why, sizeof why);
    if (found < 0)
        return 1;
    if (!found) {
        eprintf("vzcaps stats: no log is configured (%s): set %s = PATH at the top of the config file or %s=PATH, "
                "or give --log-file PATH", why, VZCAPS_LOG_KEY, VZCAPS_LOG_ENV);
        return 1;
    }
    snprintf(files[0], sizeof files[0], "%s.1", path); /* the older records first */
    snprintf(files[1], sizeof files[1], "%s", path);
    bool read[2];
    int rc = 0;
    for (int i = 0; i < 2; i++)
        rc |= read_log(&s, files[i], &read[i]) != 0;
    if (s.oom)
        eprintf("vzcaps stats: out of memory while counting: the counts are incomplete"), rc = 1;
    ulog_stats_sort(&s.counts);
    if (rc == 0 && json) /* counts of part of the log are not shown as the log's */
        print_json(&s, files, read, from);
    else if (rc == 0)
        print_text(&s, files, read, from);
    ulog_stats_free(&s.counts);
    return rc;
}
