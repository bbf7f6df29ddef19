/* vzcaps stats: which processes the library hooked and which it left stock, and why, from the
 * usage log it appends to when one is configured (usagelog.h), as `ccache -s` shows a cache's use.
 * Owns: finding the log (--log-file, VZCAPS_LOG_FILE, the config file's log_file), streaming
 * PATH.1 then PATH through input.c, and the table and --json. Never: keeps a log file in memory
 * (one line at a time), follows a link at the log, or drops a line without counting and naming it. */
#define _POSIX_C_SOURCE 200809L
#include "../common/input.h"
#include "../common/statsfile.h"
#include "../data/usagelog.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
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
    int bad = overlong ? -1 : ulog_parse_line(line, len, &r, why, sizeof why);
    if (overlong)
        snprintf(why, sizeof why, "longer than %d bytes", VZCAPS_LOG_LINE_MAX);
    const char *tail = bad ? ulog_record_after_cut(line, len) : NULL;
    if (overlong && !tail && strncmp(line, "{\"v\":", 5) == 0) /* its last bytes: the cut part is before them */
        tail = line;
    char tail_why[300];
    if (tail && ulog_parse_line(tail, len - (size_t)(tail - line), &r, tail_why, sizeof tail_why) == 0) {
        skip_line(s, line_no, "a record cut short (no newline), followed by a whole one (counted)");
        bad = 0;
    }
    if (bad) {
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

/* The environment with VZCAPS_CONFIG=config when --config names one (heap; NULL: out of memory). */
static char **config_env(const char *config, char **entry)
{
    *entry = NULL;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!config || strncmp(environ[i], "VZCAPS_CONFIG=", 14) != 0)
            env[k++] = environ[i];
    if (config)
        env[k++] = *entry = xformat("VZCAPS_CONFIG=%s", config);
    return env;
}

/* The log's path into out, found by the library's own configuration step (VZCAPS_LOG_FILE, else
 * the config file's top-level log_file, ~/ expanded), or --log-file; and where it came from.
 * 1 found, 0 none (why says why: not configured, or the configuration names none it can use). */
static int find_log(const char *opt, const char *config, char *out, size_t len, char *from, size_t fromlen,
                    char *why, size_t whylen)
{
    if (opt) {
        if (strlen(opt) >= len)
            return snprintf(why, whylen, "--log-file is longer than %zu bytes, which no log path can be", len - 1), -1;
        snprintf(out, len, "%s", opt);
        snprintf(from, fromlen, "--log-file");
        return 1;
    }
    static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    static struct vzcaps_config_result r;
    char *entry;
    char **env = config_env(config, &entry);
    if (!env)
        return snprintf(why, whylen, "out of memory"), 0;
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)env;
    in.read_file = vzcaps_read_file;
    vzcaps_configure(&in, file_buf, sizeof file_buf, &r);
    const char *var = vzcaps_env_get(in.envp, VZCAPS_LOG_ENV); /* in environ, not in env's own entry */
    free(entry), free(env);
    if (config && var) /* the variable wins, as in the library: the file given is not read for the log */
        eprintf("vzcaps stats: --config %s: not read for the log: %s is set (%s), and it wins, as in the library", config,
                VZCAPS_LOG_ENV, *var ? var : "empty: the log is off");
    snprintf(out, len, "%s", r.log_file);
    snprintf(from, fromlen, "%s", r.log_file_origin);
    if (r.log_file[0])
        return 1;
    const char *note = NULL; /* the configuration's own word on the log (a relative path, ~ without HOME) */
    for (size_t i = 0; i < r.profile.n_notes; i++)
        if (strstr(r.profile.notes[i], VZCAPS_LOG_ENV) || strstr(r.profile.notes[i], VZCAPS_LOG_KEY))
            note = r.profile.notes[i];
    if (r.config_path[0] && r.config_error[0])
        snprintf(why, whylen, "the config file %s is refused, so it names no log: %s", r.config_path, r.config_error);
    else if (note)
        snprintf(why, whylen, "%s", note);
    else if (var && !*var)
        snprintf(why, whylen, "%s is empty: the log is off", VZCAPS_LOG_ENV);
    else if (r.config_path[0])
        snprintf(why, whylen, "%s is not set and %s has no %s line at its top", VZCAPS_LOG_ENV, r.config_path, VZCAPS_LOG_KEY);
    else
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

/* When neither file exists: whether the library would write at path at all (the directory it
 * checks: there, a directory of this user's or root's that neither group nor others may write).
 * 0 yes; else one line saying why not, and 1. */
static int check_log_dir(const char *path)
{
    char dir[VZCAPS_PATH_MAX + 1], why[200];
    const char *slash = strrchr(path, '/');
    size_t n = slash && slash > path ? (size_t)(slash - path) : slash ? 1 : 0;
    snprintf(dir, sizeof dir, "%.*s", n ? (int)n : 1, n ? path : ".");
    struct stat st;
    if (stat(dir, &st) != 0)
        snprintf(why, sizeof why, "its directory %s: %s (the library makes none)", dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, sizeof why, "%s is not a directory", dir);
    else if (vzcaps_file_trust((unsigned long)st.st_uid, (unsigned long)st.st_mode, (unsigned long)geteuid(), why,
                               sizeof why) == 0) {
        if (vzcaps_statsfile_dir_ok(path)) /* the walk the library makes, links and all */
            return 0;
        snprintf(why, sizeof why, "a link on the way to it that another user could have made (theirs, a second name, "
                 "or in a directory others may write and that is not sticky), or a directory on the way it cannot read");
    }
    eprintf("vzcaps stats: %s: not written yet, and the library will not write it there: %s", path, why);
    return 1;
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
        return eprintf("vzcaps stats: %s", why), EXIT_USAGE;
    if (!found) {
        eprintf("vzcaps stats: no log is configured (%s): set %s = PATH at the top of the config file or %s=PATH, "
                "or give --log-file PATH", why, VZCAPS_LOG_KEY, VZCAPS_LOG_ENV);
        return 1;
    }
    snprintf(files[0], sizeof files[0], "%s.1", path); /* the older records first */
    snprintf(files[1], sizeof files[1], "%s", path);
    bool read[2];
    int rc = 0;
    struct stat log_st; /* LOG.1 is the log's writer's when it is LOG's owner's */
    unsigned long writer = lstat(path, &log_st) == 0 && S_ISREG(log_st.st_mode) ? (unsigned long)log_st.st_uid : (unsigned long)geteuid();
    enum vzcaps_statsfile_old old = vzcaps_statsfile_old(AT_FDCWD, files[0], writer);
    read[0] = false;
    if (old > VZCAPS_OLD_OURS) /* never rotated over: LOG holds every record since */
        eprintf("vzcaps stats: %s: not read: %s, so the library never replaces it and keeps appending to %s past 1 MiB; "
                "move it away (mv %s %s.saved) and the next record rotates the log", files[0], vzcaps_statsfile_old_why(old),
                path, files[0], files[0]);
    else
        rc |= read_log(&s, files[0], &read[0]) != 0;
    rc |= read_log(&s, files[1], &read[1]) != 0;
    if (rc == 0 && !read[0] && !read[1] && check_log_dir(path))
        rc = 1;
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
