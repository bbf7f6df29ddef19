/* vzcaps stats: which processes the library hooked and which it left stock, and why, from the
 * usage log it appends to when one is configured (usagelog.h), as `ccache -s` shows a cache's use.
 * Owns: finding the log (--log-file, VZCAPS_LOG_FILE, the config file's log_file), streaming
 * PATH.1 then PATH through input.c, the table and --json, --require's verdict per NAME, and
 * --zero (a zero mark, then the log moved aside through statsfile.c, as the rotation moves it).
 * Never: keeps a log file in memory (one line at a time), follows a link at the log, drops a
 * line without counting and naming it, or moves or writes a file the library could not have
 * written. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "../../common/input.h"
#include "../../common/statsfile.h"
#include "../../data/require.h"
#include "../../data/usagelog.h"
#include "../cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
    struct ulog_require req; /* --require's NAMEs, their runs counted as the records come (after --since) */
    long long since, zeroed; /* zeroed: the time of the last zero mark read */
    bool have_since, have_zero;
    unsigned long long skipped, before_since, before_zero, file_skipped;
    const char *file; /* the file being read */
    bool oom;
};

static void skip_line(struct stats_run *s, unsigned long long line_no, const char *why)
{
    s->skipped++;
    if (++s->file_skipped <= NAMED_SKIPS)
        eprintf("vzcaps stats: %s:%llu: skipped: %s", s->file, line_no, why);
}

/* A zero mark (stats --zero): what was counted before it is left out, kept in the file. */
static void zero_mark(struct stats_run *s, long long when)
{
    s->before_zero += s->counts.hooked + s->counts.left_stock + s->before_since;
    s->before_since = 0;
    ulog_stats_free(&s->counts);
    memset(&s->counts, 0, sizeof s->counts);
    ulog_require_reset(&s->req);
    s->zeroed = when, s->have_zero = true;
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
    long long when;
    bool whole_zero = bad && ulog_parse_zero(line, len, &when);
    bool tail_zero = bad && !whole_zero && tail && ulog_parse_zero(tail, len - (size_t)(tail - line), &when);
    if (tail_zero)
        skip_line(s, line_no, "a record cut short (no newline), followed by a zero mark (read)");
    if (whole_zero || tail_zero) {
        zero_mark(s, when);
        return;
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
    else if (ulog_require_count(&s->req, &r) != 0) /* for each NAME it is a run of: by program, or by path */
        s->oom = true;
    ulog_record_free(&r);
}

/* One log streamed into s (past cap bytes refused; 0: no cap): 0 read or absent (*read tells which), -1 after the message. */
static int read_log(struct stats_run *s, const char *path, bool *was_read, unsigned long long cap)
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
    if (cap && (unsigned long long)st.st_size > cap) {
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
    while (rc == 0 && (!cap || got <= cap)) {
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

/* Where the count starts after stats --zero: the mark's time (null: no mark) and the records left out. */
static void zero_json(struct json *j, const struct stats_run *s)
{
    if (s->have_zero)
        json_int(j, "zeroed_at", s->zeroed);
    else
        json_null(j, "zeroed_at");
    json_int(j, "before_zero", (long long)s->before_zero);
}

/* The fields every --json answer has: the log, who configured it, the files read, --since. */
static void json_log_fields(struct json *j, const struct stats_run *s, char files[2][VZCAPS_PATH_MAX + 3], const bool *read,
                            const char *from)
{
    json_str(j, "log_file", files[1]);
    json_str(j, "configured_by", from);
    json_arr(j, "log_files");
    for (int i = 0; i < 2; i++)
        if (read[i])
            json_str(j, NULL, files[i]);
    json_end_arr(j);
    if (s->have_since)
        json_int(j, "since", s->since);
    else
        json_null(j, "since");
}

static void print_json(const struct stats_run *s, char files[2][VZCAPS_PATH_MAX + 3], const bool *read, const char *from)
{
    struct json j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_log_fields(&j, s, files, read, from);
    json_int(&j, "hooked", (long long)s->counts.hooked);
    json_int(&j, "left_stock", (long long)s->counts.left_stock);
    json_int(&j, "skipped", (long long)s->skipped);
    json_int(&j, "before_since", (long long)s->before_since);
    zero_json(&j, s);
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

/* A record's time as a person reads it, in UTC as records are (Unix seconds when it has no date). */
static const char *human_time(long long secs, char *when, size_t len)
{
    time_t t = (time_t)secs;
    struct tm tm;
    if ((long long)t != secs || !gmtime_r(&t, &tm) || !strftime(when, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(when, len, "%lld", secs);
    return when;
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
    char when[64];
    if (s->have_since)
        printf(" (since %s; %llu earlier %s left out)", human_time(s->since, when, sizeof when), s->before_since,
               plural(s->before_since, "record", "records"));
    if (s->have_zero)
        printf(" (counted from the zero mark of %s; %llu earlier %s kept, left out)", human_time(s->zeroed, when, sizeof when),
               s->before_zero, plural(s->before_zero, "record", "records"));
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

/* The command line: options, and the NAMEs --require takes (operands, in any order). */
struct stats_args {
    bool json, require, zero;
    const char *since, *log, *config;
    char **names;
    size_t n_names;
};

static int parse_args(int argc, char **argv, struct stats_args *a)
{
    a->names = calloc((size_t)argc, sizeof *a->names);
    if (!a->names)
        return eprintf("vzcaps stats: out of memory"), 1;
    for (int i = 1; i < argc; i++) {
        int t;
        if ((t = opt_take(argc, argv, &i, "--since", &a->since)) || (t = opt_take(argc, argv, &i, "--log-file", &a->log)) ||
            (t = opt_take(argc, argv, &i, "--config", &a->config))) {
            if (t < 0)
                return usage_error("stats", "%s needs a value", argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--") == 0)
            while (i + 1 < argc)
                a->names[a->n_names++] = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            a->json = true;
        else if (strcmp(argv[i], "--require") == 0)
            a->require = true;
        else if (strcmp(argv[i], "--zero") == 0)
            a->zero = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return usage_error("stats", "unexpected argument %s", argv[i]);
        else
            a->names[a->n_names++] = argv[i];
    }
    if (a->zero && (a->require || a->n_names || a->json || a->since))
        return usage_error("stats", "--zero takes no --require, NAME, --json or --since: it only starts a fresh count");
    if (a->n_names && !a->require)
        return usage_error("stats", "%s: a NAME is for --require (vzcaps stats --require NAME...)", a->names[0]);
    if (a->require && !a->n_names)
        return usage_error("stats", "--require needs at least one NAME: the programs the job ran");
    return 0;
}

/* When neither file exists (or before --zero writes): whether the library would write at path
 * at all (the directory it checks: there, a directory of this user's or root's that neither
 * group nor others may write). 0 yes; else one line saying why not (after what), and 1. */
static int check_log_dir(const char *path, const char *what)
{
    char dir[VZCAPS_PATH_MAX + 1], why[3 * VZCAPS_PATH_MAX + 200];
    const char *slash = strrchr(path, '/');
    size_t n = slash && slash > path ? (size_t)(slash - path) : slash ? 1 : 0;
    snprintf(dir, sizeof dir, "%.*s", n ? (int)n : 1, n ? path : ".");
    struct stat st;
    if (slash && !slash[1]) /* a directory's name: the library writes no file there */
        snprintf(why, sizeof why, "it ends in '/': a directory, not a log file");
    else if (stat(dir, &st) != 0)
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
    else if (st.st_mode & 022) /* /tmp and the like: a directory of one's own in it, never a chmod of a shared one */
        snprintf(why, sizeof why, "not trusted: %s may be written by others (mode %04o): log into a private directory instead: "
                 "mkdir -m 700 %s/vzcaps-%lu, then VZCAPS_LOG_FILE=%s/vzcaps-%lu/%s", dir, (unsigned)(st.st_mode & 07777),
                 dir, (unsigned long)geteuid(), dir, (unsigned long)geteuid(), slash ? slash + 1 : path);
    eprintf("vzcaps stats: %s: %s: %s", path, what, why);
    return 1;
}

/* ---- --require: the proof after a job ---- */

/* The NAMEs as records are matched: a NAME with a '/' by its real path (the record's "path" is
 * the executable's, links resolved), when it resolves; each NAME once. 0, or 1 out of memory. */
static int require_init(struct stats_run *s, char **names, size_t n)
{
    if (ulog_require_init(&s->req, names, n) != 0)
        return 1;
    for (size_t i = 0; i < s->req.n; i++)
        if (s->req.req[i].by_path)
            s->req.req[i].match = realpath(s->req.req[i].name, NULL);
    return ulog_require_index(&s->req) != 0;
}

static const char *require_verdict(const struct ulog_required *q)
{
    return q->stock ? "stock" : q->hooked ? "unlocked" : "not_run";
}

/* Why q passes or fails, in words (heap). window: " since ..." or "". */
static char *require_reason(const struct ulog_required *q, const char *window)
{
    unsigned long long ran = q->hooked + q->stock;
    if (!ran)
        return xformat("never ran%s: no record of %s%s%s in the log", window, q->by_path ? "a process whose executable is " : "",
                       q->match, q->by_path && strcmp(q->match, q->name) ? " (where it leads)" : "");
    if (q->stock)
        return xformat("left stock in %llu of %llu %s%s: %s", q->stock, ran, plural(ran, "run", "runs"), window,
                       q->reason && *q->reason ? q->reason : "(no reason given)");
    return xformat("hooked in %s%llu %s%s", ran == 1 ? "its " : "all ", ran, plural(ran, "run", "runs"), window);
}

static char *window_text(const struct stats_run *s)
{
    char since[64], zeroed[64];
    human_time(s->since, since, sizeof since), human_time(s->zeroed, zeroed, sizeof zeroed);
    if (s->have_since && s->have_zero)
        return xformat(" since %s and the zero mark of %s", since, zeroed);
    if (s->have_since || s->have_zero)
        return xformat(" since %s%s", s->have_zero ? "the zero mark of " : "", s->have_zero ? zeroed : since);
    return xformat("%s", "");
}

/* One line per failing NAME on standard error, or the one line of confirmation on standard
 * output: 0 when every NAME ran and was hooked in every run, else 1. */
static int require_say(const struct stats_run *s, bool json)
{
    char *window = window_text(s);
    int failed = 0;
    for (size_t i = 0; i < s->req.n; i++)
        if (s->req.req[i].stock || !s->req.req[i].hooked) {
            char *why = require_reason(&s->req.req[i], window);
            eprintf("vzcaps stats: --require %s: %s", s->req.req[i].name, why);
            free(why);
            failed = 1;
        }
    if (!failed && !json) {
        printf("vzcaps stats: --require: hooked in every run%s:", window);
        for (size_t i = 0; i < s->req.n; i++)
            printf("%s %s (%llu)", i ? "," : "", esc(s->req.req[i].name), s->req.req[i].hooked);
        if (s->skipped)
            printf(" (%llu %s skipped, named on standard error)", s->skipped, plural(s->skipped, "line", "lines"));
        printf("\n");
    }
    free(window);
    return failed;
}

static void require_json(const struct stats_run *s, char files[2][VZCAPS_PATH_MAX + 3], const bool *read, const char *from,
                         int failed)
{
    struct json j;
    char *window = window_text(s);
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "verdict", failed ? "fail" : "pass");
    json_arr(&j, "required");
    for (size_t i = 0; i < s->req.n; i++) {
        const struct ulog_required *q = &s->req.req[i];
        char *why = require_reason(q, window);
        json_obj(&j, NULL);
        json_str(&j, "program", q->name);
        json_str(&j, "matched", q->by_path ? "path" : "program");
        json_str(&j, "match", q->match);
        json_int(&j, "ran", (long long)(q->hooked + q->stock));
        json_int(&j, "hooked", (long long)q->hooked);
        json_int(&j, "left_stock", (long long)q->stock);
        json_str(&j, "verdict", require_verdict(q));
        json_str(&j, "reason", why);
        json_end_obj(&j);
        free(why);
    }
    json_end_arr(&j);
    json_log_fields(&j, s, files, read, from);
    json_int(&j, "skipped", (long long)s->skipped);
    zero_json(&j, s);
    json_end_obj(&j);
    json_finish(&j);
    free(window);
}

/* ---- --zero: a fresh count, the old records kept ---- */

/* NULL when fd's file starts with a line of the log (a record or a zero mark, or one after a cut
 * record) or is empty; else why not. */
static const char *first_line_why(int fd)
{
    static char buf[VZCAPS_LOG_LINE_MAX + 2];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) != 0) {
        if (n < 0 && errno != EINTR)
            return strerror(errno);
        got += n > 0 ? (size_t)n : 0;
    }
    const char *nl = got ? memchr(buf, '\n', got) : buf;
    size_t len = got ? (size_t)(nl - buf) : 0;
    const char *tail = nl && got ? ulog_record_after_cut(buf, len) : NULL;
    struct ulog_record r;
    char why[300];
    long long t;
    for (const char *line = got ? buf : NULL; nl && line; line = line == buf ? tail : NULL) {
        size_t l = len - (size_t)(line - buf);
        if (ulog_parse_zero(line, l, &t))
            return NULL;
        if (ulog_parse_line(line, l, &r, why, sizeof why) == 0)
            return ulog_record_free(&r), NULL;
    }
    return got ? "its first line is not a record of the stats log" : NULL;
}

/* What --zero may write to or replace at path: nothing there (0, *st_out zeroed), or a regular
 * file of this user's with one link that others cannot write, starting with a line of the log
 * (0, its stat); else one line saying why, and -1. */
static int zero_check(const char *path, struct stat *st_out)
{
    char err[VZCAPS_PATH_MAX + 200], why[200] = "";
    struct stat st;
    memset(st_out, 0, sizeof *st_out);
    errno = 0;
    int fd = vzcaps_input_open(path, VZCAPS_IN_NOFOLLOW, &st, err, sizeof err);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0)
        return eprintf("vzcaps stats: --zero: %s: nothing moved", err), -1;
    const char *line_why = first_line_why(fd);
    close(fd);
    if (st.st_uid != geteuid())
        snprintf(why, sizeof why, "owned by uid %lu, not by this user", (unsigned long)st.st_uid);
    else if (st.st_nlink != 1)
        snprintf(why, sizeof why, "it has %lu links", (unsigned long)st.st_nlink);
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, sizeof why, "others may write it");
    else if (line_why)
        snprintf(why, sizeof why, "%s", line_why);
    if (why[0])
        return eprintf("vzcaps stats: --zero: %s: %s: not a log vzcaps wrote; nothing moved", path, why), -1;
    *st_out = st;
    return 0;
}

/* old, which moving the log aside replaces: only what a rotation replaces (0), else -1 after the message. */
static int zero_replaceable(const char *old, const struct stat *st)
{
    enum vzcaps_statsfile_old state = vzcaps_statsfile_old(AT_FDCWD, old, (unsigned long)geteuid());
    if (state <= VZCAPS_OLD_OURS)
        return 0;
    eprintf("vzcaps stats: --zero: %s: %s, so neither a rotation nor --zero replaces it (move it away: mv %s %s.saved); "
            "nothing moved", old, state == VZCAPS_OLD_NOT_LOG && st->st_size == 0 ? "it is empty, not a log of vzcaps's"
                                                                                : vzcaps_statsfile_old_why(state), old, old);
    return -1;
}

/* The file checked (path: the log, else old) opened for appending, checked again: the same file
 * still there. -1 after the message; -2 when it changed in between (a rotation: check again). */
static int zero_open(const char *target, const struct stat *checked, struct stat *st)
{
    int fd = vzcaps_statsfile_append(target, st);
    if (fd < 0)
        return eprintf("vzcaps stats: --zero: %s: cannot be opened to append the zero mark (no longer a log of "
                       "this user's): nothing moved", target), -1;
    if (st->st_dev == checked->st_dev && st->st_ino == checked->st_ino)
        return fd;
    close(fd);
    return -2;
}

/* Appends the zero mark to fd's file: 0, or 1 after the message. */
static int zero_mark_write(int fd, const char *target)
{
    char mark[128];
    size_t n = ulog_zero_format((long long)time(NULL), (long long)getpid(), mark, sizeof mark);
    signal(SIGXFSZ, SIG_IGN); /* past RLIMIT_FSIZE: EFBIG and a message, not the end of us */
    ssize_t w = write(fd, mark, n); /* one write: O_APPEND keeps it whole among the records */
    if (w == (ssize_t)n)
        return 0;
    eprintf("vzcaps stats: --zero: %s: the zero mark could not be written (%s): nothing moved, nothing zeroed", target,
            w < 0 ? strerror(errno) : "written short: is the disk full?");
    return 1;
}

/* vzcaps stats --zero: the zero mark appended to the log (to PATH.1 when there is no log), then
 * the log moved to PATH.1, as the rotation moves it. One line saying what it did. */
static int zero_log(const char *path)
{
    char old[VZCAPS_PATH_MAX + 3];
    snprintf(old, sizeof old, "%s.1", path);
    if (check_log_dir(path, "--zero: the library does not write there, so there is nothing to zero"))
        return 1;
    struct stat st_old, st_log, st;
    int fd = -2;
    for (int tries = 0; fd == -2 && tries < 5; tries++) {
        if (zero_check(old, &st_old) || zero_check(path, &st_log) ||
            (st_log.st_nlink && st_old.st_nlink && zero_replaceable(old, &st_old)))
            return 1;
        if (!st_log.st_nlink && !st_old.st_nlink)
            return printf("vzcaps stats: --zero: nothing to zero: %s not written yet\n", esc(path)), 0;
        fd = zero_open(st_log.st_nlink ? path : old, st_log.st_nlink ? &st_log : &st_old, &st);
    }
    if (fd < 0)
        return fd == -2 ? eprintf("vzcaps stats: --zero: %s: it keeps changing (rotated meanwhile): nothing moved", path), 1 : 1;
    const char *target = st_log.st_nlink ? path : old;
    if (zero_mark_write(fd, target))
        return close(fd), 1;
    if (!st_log.st_nlink) {
        close(fd);
        return printf("vzcaps stats: --zero: %s not written since its rotation: the zero mark is at the end of %s, its "
                      "records kept; counting starts afresh\n", esc(path), esc(old)), 0;
    }
    int moved;
    struct timespec wait = {0, 10 * 1000 * 1000};
    for (int tries = 0; (moved = vzcaps_statsfile_move_aside(path, old, fd, &st)) == 1 && tries < 100; tries++)
        nanosleep(&wait, NULL); /* a rotation holds the lock for a rename's time */
    int err = errno;
    close(fd);
    if (moved < 0)
        return eprintf("vzcaps stats: --zero: %s: the zero mark is written, but it could not be moved to %s: %s", path, old,
                       strerror(err)), 1;
    if (moved == 0)
        printf("vzcaps stats: --zero: %s moved to %s%s, with the zero mark at its end; counting starts afresh\n", esc(path),
               esc(old), st_old.st_nlink ? " (replacing the older one, as a rotation does)" : "");
    else
        printf("vzcaps stats: --zero: the zero mark is at the end of %s, %s; counting starts afresh\n", esc(path),
               moved == 2 ? "moved meanwhile by a rotation" : "not moved: a rotation held its lock for a second");
    return 0;
}

/* ---- the command ---- */

/* Reads PATH.1 then PATH into s: 0, or 1 after the message (nothing is shown of a part). */
static int count_log(struct stats_run *s, const char *path, char files[2][VZCAPS_PATH_MAX + 3], bool *read)
{
    snprintf(files[0], VZCAPS_PATH_MAX + 3, "%s.1", path); /* the older records first */
    snprintf(files[1], VZCAPS_PATH_MAX + 3, "%s", path);
    int rc = 0;
    struct stat log_st; /* LOG.1 is the log's writer's when it is LOG's owner's */
    unsigned long writer = lstat(path, &log_st) == 0 && S_ISREG(log_st.st_mode) ? (unsigned long)log_st.st_uid
                                                                                : (unsigned long)geteuid();
    enum vzcaps_statsfile_old old = vzcaps_statsfile_old(AT_FDCWD, files[0], writer);
    read[0] = false;
    if (old > VZCAPS_OLD_OURS) /* never rotated over: LOG holds every record since */
        eprintf("vzcaps stats: %s: not read: %s, so the library never replaces it and keeps appending to %s past 1 MiB; "
                "move it away (mv %s %s.saved) and the next record rotates the log", files[0], vzcaps_statsfile_old_why(old),
                path, files[0], files[0]);
    else
        rc |= read_log(s, files[0], &read[0], VZCAPS_LOG_READ_MAX) != 0;
    rc |= read_log(s, files[1], &read[1], old > VZCAPS_OLD_OURS ? 0 : VZCAPS_LOG_READ_MAX) != 0; /* appended past 1 MiB */
    if (rc == 0 && !read[0] && !read[1] && check_log_dir(path, "not written yet, and the library will not write it there"))
        rc = 1;
    if (s->oom)
        eprintf("vzcaps stats: out of memory while counting: the counts are incomplete"), rc = 1;
    ulog_stats_sort(&s->counts);
    return rc;
}

/* A relative --log-file made absolute (the library's walk takes no other): 0, or 1 after the message. */
static int absolute_log(char *path, size_t len)
{
    char cwd[VZCAPS_PATH_MAX + 1], *rel = path[0] == '/' ? NULL : xformat("%s", path);
    int bad = rel && (!getcwd(cwd, sizeof cwd) || (size_t)snprintf(path, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel) >= len);
    if (bad)
        eprintf("vzcaps stats: --log-file %s: the current directory cannot be named, or with it no path can be that long", rel);
    return free(rel), bad;
}

static int stats_main(const struct stats_args *a)
{
    static struct stats_run s;
    memset(&s, 0, sizeof s);
    char why[VZCAPS_NOTE_LEN + 100];
    if (a->since && ulog_since_parse(a->since, (long long)time(NULL), &s.since, why, sizeof why) != 0)
        return eprintf("vzcaps stats: --since %s", why), EXIT_USAGE;
    s.have_since = a->since != NULL;
    static char path[VZCAPS_PATH_MAX + 1], files[2][VZCAPS_PATH_MAX + 3];
    char from[VZCAPS_PATH_MAX + 1];
    int found = find_log(a->log, a->config, path, sizeof path, from, sizeof from, why, sizeof why);
    if (found < 0)
        return eprintf("vzcaps stats: %s", why), EXIT_USAGE;
    if (!found) {
        eprintf("vzcaps stats: no log is configured (%s): set %s = PATH at the top of the config file or %s=PATH, "
                "or give --log-file PATH", why, VZCAPS_LOG_KEY, VZCAPS_LOG_ENV);
        return 1;
    }
    if ((a->zero || a->require) && absolute_log(path, sizeof path))
        return 1;
    if (a->zero)
        return zero_log(path);
    if (require_init(&s, a->names, a->n_names) != 0)
        return ulog_require_free(&s.req), eprintf("vzcaps stats: out of memory"), 1;
    bool read[2];
    /* a proof only from where the library writes: a log in a directory others may write could
     * hold anyone's records */
    int rc = a->require && check_log_dir(path, "--require: the library does not write there, so its records there prove "
                                               "nothing")
                 ? 1
                 : count_log(&s, path, files, read);
    if (rc == 0 && a->require) { /* counts of part of the log prove nothing */
        rc = require_say(&s, a->json);
        if (a->json)
            require_json(&s, files, read, from, rc);
    } else if (rc == 0 && a->json)
        print_json(&s, files, read, from);
    else if (rc == 0)
        print_text(&s, files, read, from);
    ulog_stats_free(&s.counts);
    ulog_require_free(&s.req);
    return rc;
}

int cmd_stats(int argc, char **argv)
{
    struct stats_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc == 0)
        rc = stats_main(&a);
    free(a.names);
    return rc;
}
