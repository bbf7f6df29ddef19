/* vzcaps stats: which processes the library hooked and which it left stock, and why, from the
 * usage log it appends to when one is configured (usagelog.h), as `ccache -s` shows a cache's use.
 * Owns: finding the log (--log-file, VZCAPS_LOG_FILE, the config file's log_file), streaming
 * PATH.1 then PATH through input.c, the table and --json, --require's verdict per NAME, and
 * --zero (a zero mark, then the log moved aside through statsfile.c, as the rotation moves it).
 * Never: keeps a log file in memory (one line at a time), follows a link at the log, drops a
 * line without counting and naming it, or moves or writes a file the library could not have
 * written. */
#define _XOPEN_SOURCE 700 /* realpath */
#define _DARWIN_C_SOURCE /* flock on macOS */
#include "../../common/input.h"
#include "../../common/statsfile.h"
#include "../../data/require.h"
#include "../../data/usagelog.h"
#include "../cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
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
    long long since, zeroed; /* zeroed: the time of the last zero mark read (or a rotation carried) */
    bool have_since, have_zero, marked; /* marked: a zero mark itself was read */
    unsigned long long skipped, before_since, before_zero, file_skipped;
    long long lost, lost_until; /* records since the zero mark (or every one) a rotation dropped, the newest's time */
    const char *file; /* the file being read */
    const struct ulog_lines *lines; /* its lines */
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
    s->before_since = 0, s->lost = s->lost_until = 0;
    ulog_stats_free(&s->counts);
    memset(&s->counts, 0, sizeof s->counts);
    ulog_require_reset(&s->req);
    s->zeroed = when, s->have_zero = s->marked = true;
}

/* A zero mark, or a rotation's line (usagelog.h) at p, taken: true when it is one. A rotation's
 * line is about what came before the file it ends: nothing, after a mark this read holds. */
static bool mark_line(struct stats_run *s, const char *p, size_t n)
{
    long long when, z, lost, until;
    if (ulog_parse_zero(p, n, &when))
        return zero_mark(s, when), true;
    if (!ulog_parse_rotated(p, n, &z, &lost, &until))
        return false;
    if (!s->marked)
        s->have_zero = z != 0, s->zeroed = z, s->lost = lost, s->lost_until = until;
    return true;
}

/* Records a rotation dropped from the window (since the zero mark or --since): without either,
 * the window is what the log holds; -1, unknown, in any window. */
static long long lost_in_window(const struct stats_run *s)
{
    return s->lost < 0 || ((s->have_zero || s->have_since) && (!s->have_since || s->lost_until >= s->since)) ? s->lost : 0;
}

/* A whole record (or what a cut one still tells: its run), counted; r freed. */
static void take_record(struct stats_run *s, struct ulog_record *r)
{
    bool run = r->event == ULOG_HOOKED || r->event == ULOG_LEFT_STOCK;
    if (s->have_since && r->time < s->since)
        s->before_since += run;
    else if (run && ulog_stats_add(&s->counts, r) != 0)
        s->oom = true;
    else if (ulog_require_count(&s->req, r) != 0) /* for each NAME it is a run of: by program, or by path */
        s->oom = true;
    ulog_record_free(r);
}

/* A record cut short (n bytes at p; NULL: bytes of the line were not kept): a run counted when
 * its event is still there, else a record no NAME it may be of can pass with. */
static const char *cut_part(struct stats_run *s, const char *p, size_t n)
{
    struct ulog_record f;
    int k = p ? ulog_parse_fragment(p, n, &f) : 2;
    if (k == 1 && f.event != ULOG_UNKNOWN)
        return take_record(s, &f), " (what it still holds is counted)";
    if (k == 1 && *f.path && !ulog_require_count(&s->req, &f))
        return ulog_record_free(&f), " (it may be a run of that program, which --require cannot judge then)";
    if (k == 1)
        ulog_record_free(&f);
    s->req.unreadable_all += k != 0;
    return k ? " (its program cannot be read: it may be a run of any, which --require cannot judge then)" : "";
}

static void on_line(void *ctx, const char *line, size_t len, unsigned long long line_no, bool overlong,
                    bool unterminated)
{
    struct stats_run *s = ctx;
    char why[300], tail_why[300], said[400];
    struct ulog_record r;
    if (!overlong && ulog_parse_line(line, len, &r, why, sizeof why) == 0)
        return take_record(s, &r);
    if (!overlong && mark_line(s, line, len))
        return;
    if (overlong)
        snprintf(why, sizeof why, "longer than %d bytes", VZCAPS_LOG_LINE_MAX);
    const char *tail = ulog_record_after_cut(line, len);
    if (s->lines->dropped && !tail && strncmp(line, "{\"v\":", 5) == 0) /* its last bytes: the cut part is before them */
        tail = line;
    size_t tn = tail ? len - (size_t)(tail - line) : 0;
    bool whole = tail && ulog_parse_line(tail, tn, &r, tail_why, sizeof tail_why) == 0;
    long long t;
    int mark = !tail || whole ? 0 : ulog_parse_zero(tail, tn, &t) ? 1 : 2 * ulog_parse_rotated(tail, tn, &t, &t, &t);
    if (!whole && !mark)
        tail = NULL;
    /* what is cut: the line before its tail, record by record (each starts with {"v":, which no record's strings hold;
     * of a piece longer than a record can be, its first bytes); where its start was dropped, any run may have been */
    const char *cut = s->lines->dropped ? cut_part(s, NULL, 0) : "", *k;
    for (size_t i = 1, from = 0, n = tail ? (size_t)(tail - line) : len; i <= n; i++)
        if (i == n || (i + 5 <= n && memcmp(line + i, "{\"v\":", 5) == 0)) {
            k = cut_part(s, line + from, i - from < VZCAPS_LOG_LINE_MAX ? i - from : VZCAPS_LOG_LINE_MAX);
            cut = strlen(k) > strlen(cut) ? k : cut, from = i; /* the worst one's words: the longer, the worse */
        }
    if (whole || mark)
        snprintf(said, sizeof said, "a record cut short (no newline), followed by %s%s",
                 whole ? "a whole one (counted)" : mark == 1 ? "a zero mark (read)" : "a rotation's line (read)", cut);
    else /* a record is one write with its newline: an unterminated one was cut */
        snprintf(said, sizeof said, "%s%s%s", why, unterminated ? " (the last line, without its newline)" : "", cut);
    skip_line(s, line_no, said);
    if (whole)
        take_record(s, &r);
    else if (mark)
        mark_line(s, tail, tn);
}

/* One log streamed into s (past cap bytes refused; 0: no cap), from fd when it is open already
 * (closed here), else opened by its name (dirfd < 0) or in the directory dirfd, the one checked, as
 * a file of this user's alone (statsfile.h): 0 read or absent (*read tells which), -1 after the message. */
static int read_log(struct stats_run *s, int dirfd, const char *path, bool *was_read, unsigned long long cap, int fd)
{
    char err[VZCAPS_PATH_MAX + 200];
    struct stat st;
    *was_read = false;
    errno = 0;
    fd = fd >= 0 ? (fstat(fd, &st), fd) : dirfd < 0 ? vzcaps_input_open(path, VZCAPS_IN_NOFOLLOW, &st, err, sizeof err)
                                                     : vzcaps_statsfile_read(dirfd, strrchr(path, '/') + 1, &st);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0 && dirfd >= 0)
        snprintf(err, sizeof err, "%s: %s: its records prove nothing", path,
                 errno == EPERM ? "not a file of yours alone (another owner, a second name, or writable by others)"
                 : errno == ELOOP ? "a symbolic link" : errno == EISDIR ? "a directory" : "not a regular file, or it cannot be opened");
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
        l->on_line = on_line, l->ctx = s, s->lines = l;
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
    json_int_or_null(j, "zeroed_at", s->have_zero, s->zeroed);
    json_int(j, "before_zero", (long long)s->before_zero);
    json_int(j, "lost", lost_in_window(s));
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
    json_int_or_null(j, "since", s->have_since, s->since);
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
    const struct opt_bind binds[] = {OPT_VALUE("--since", &a->since), OPT_VALUE("--log-file", &a->log),
                                     OPT_VALUE("--config", &a->config), OPT_FLAG("--json", &a->json),
                                     OPT_FLAG("--require", &a->require), OPT_FLAG("--zero", &a->zero), {0}};
    int bad = cli_parse("stats", &argc, argv, binds);
    a->names = argv + 1, a->n_names = (size_t)argc - 1;
    if (bad)
        return bad;
    if (a->zero && (a->require || a->n_names || a->json || a->since))
        return usage_error("stats", "--zero takes no --require, NAME, --json or --since: it only starts a fresh count");
    if (a->n_names && !a->require)
        return usage_error("stats", "%s: a NAME is for --require (vzcaps stats --require NAME...)", a->names[0]);
    if (a->require && !a->n_names)
        return usage_error("stats", "--require needs at least one NAME: the programs the job ran");
    return 0;
}

/* When neither file exists (or before --zero writes, or --require reads): whether the library
 * would write at path at all (the directory it checks: there, a directory of this user's or
 * root's that neither group nor others may write): the directory's descriptor, the one walked
 * as the library walks it; else one line saying why not (after what), and -1. */
static int log_dir(const char *path, const char *what)
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
        int fd = vzcaps_statsfile_dir(path); /* the walk the library makes, links and all */
        if (fd >= 0)
            return fd;
        snprintf(why, sizeof why, "a link on the way to it that another user could have made (theirs, a second name, "
                 "or in a directory others may write and that is not sticky), or a directory on the way it cannot read");
    }
    else if (st.st_mode & 022) /* /tmp and the like: a directory of one's own in it, never a chmod of a shared one */
        snprintf(why, sizeof why, "not trusted: %s may be written by others (mode %04o): log into a private directory instead: "
                 "mkdir -m 700 %s/vzcaps-%lu, then VZCAPS_LOG_FILE=%s/vzcaps-%lu/%s", dir, (unsigned)(st.st_mode & 07777),
                 dir, (unsigned long)geteuid(), dir, (unsigned long)geteuid(), slash ? slash + 1 : path);
    eprintf("vzcaps stats: %s: %s: %s", path, what, why);
    return -1;
}

/* log_dir as a check only: 0, or 1 after the message. */
static int check_log_dir(const char *path, const char *what)
{
    int fd = log_dir(path, what);
    return fd < 0 ? 1 : (close(fd), 0);
}

/* ---- --require: the proof after a job ---- */

/* The NAMEs as records are matched: a NAME with a '/' by its real path (the record's "path" is
 * the executable's, links resolved), when it resolves; each NAME once. 0, or 1 out of memory. */
static int require_init(struct stats_run *s, char **names, size_t n)
{
    size_t bad = 0;
    int rc = ulog_require_init(&s->req, names, n, &bad);
    if (rc == -2)
        return usage_error("stats", "--require %s: the same NAME is given with another COUNT", names[bad]);
    if (rc != 0)
        return eprintf("vzcaps stats: out of memory"), 1;
    for (size_t i = 0; i < s->req.n; i++)
        if (s->req.req[i].by_path)
            s->req.req[i].match = realpath(s->req.req[i].name, NULL);
    return ulog_require_index(&s->req) != 0 ? eprintf("vzcaps stats: out of memory"), 1 : 0;
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

/* One line per failing NAME on standard error (and, when the log is not whole, one on standard
 * output), or the one line of confirmation on standard output: 0 when every NAME passes, else 1. */
static int require_say(const struct stats_run *s, bool json)
{
    char *window = window_text(s), *why;
    int failed = 0;
    for (size_t i = 0; i < s->req.n; i++) {
        unsigned long long unlocked;
        const char *verdict = ulog_require_verdict(&s->req, &s->req.req[i], lost_in_window(s), window, &why, &unlocked);
        if (strcmp(verdict, "unlocked") != 0)
            eprintf("vzcaps stats: --require %s: %s", s->req.req[i].name, why ? why : "out of memory"), failed = 1;
        free(why);
    }
    if (!json && (!failed || s->skipped || lost_in_window(s))) {
        printf("vzcaps stats: --require: %s%s", failed ? "fails" : "unlocked in every run", failed ? "" : window);
        for (size_t i = 0; i < s->req.n && !failed; i++)
            printf("%s %s (%llu)", i ? "," : ":", esc(s->req.req[i].name), s->req.req[i].hooked);
        if (s->skipped)
            printf(" (%llu %s skipped, named on standard error)", s->skipped, plural(s->skipped, "line", "lines"));
        if (lost_in_window(s))
            printf(" (%.0lld%s records written%s lost to rotation)", lost_in_window(s) < 0 ? 0 : lost_in_window(s),
                   lost_in_window(s) < 0 ? "an unknown number of" : "", window); /* %.0lld: 0 prints nothing */
        printf("\n");
    }
    free(window);
    return failed;
}

/* Each run of q: its process, time and verdict, and why. */
static void runs_json(struct json *j, const struct stats_run *s, const struct ulog_required *q)
{
    json_arr(j, "runs");
    for (size_t k = 0; k < q->n_runs; k++) {
        const struct ulog_run *u = &s->req.runs[q->runs[k]];
        const char *why, *verdict = ulog_run_verdict(u, &why);
        json_obj(j, NULL);
        json_int(j, "pid", u->pid);
        json_int(j, "time", u->time);
        json_str(j, "verdict", verdict);
        json_str(j, "reason", why);
        json_end_obj(j);
    }
    json_end_arr(j);
}

static void require_json(const struct stats_run *s, char files[2][VZCAPS_PATH_MAX + 3], const bool *read, const char *from,
                         int failed)
{
    struct json j;
    char *window = window_text(s), *why;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "verdict", failed ? "fail" : "pass");
    json_arr(&j, "required");
    for (size_t i = 0; i < s->req.n; i++) {
        const struct ulog_required *q = &s->req.req[i];
        unsigned long long unlocked;
        const char *verdict = ulog_require_verdict(&s->req, q, lost_in_window(s), window, &why, &unlocked);
        json_obj(&j, NULL);
        json_str(&j, "program", q->name);
        json_str(&j, "matched", q->by_path ? "path" : "program");
        json_str(&j, "match", q->match);
        json_int(&j, "ran", (long long)(q->hooked + q->stock));
        json_int(&j, "hooked", (long long)q->hooked);
        json_int(&j, "left_stock", (long long)q->stock);
        json_str(&j, "verdict", verdict);
        json_str(&j, "reason", why ? why : "out of memory");
        json_int(&j, "unlocked", (long long)unlocked);
        json_int(&j, "unreadable", (long long)(q->unreadable + s->req.unreadable_all));
        json_int_or_null(&j, "count", q->counted, (long long)q->count);
        runs_json(&j, s, q);
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

/* What --zero may append to (or, replaced, move the log over) at path: nothing (0, *st zeroed), or
 * a log of this user's as a rotation judges one (vzcaps_statsfile_old; an empty one only to append
 * to) (0, its stat); else one line saying why, and -1. */
static int zero_check(const char *path, struct stat *st, bool replaced)
{
    memset(st, 0, sizeof *st);
    enum vzcaps_statsfile_old state = vzcaps_statsfile_old(AT_FDCWD, path, (unsigned long)geteuid());
    bool empty = state == VZCAPS_OLD_NOT_LOG && lstat(path, st) == 0 && st->st_size == 0;
    if (state == VZCAPS_OLD_NONE || ((state == VZCAPS_OLD_OURS || (empty && !replaced)) && lstat(path, st) == 0))
        return 0;
    eprintf("vzcaps stats: --zero: %s: %s, so %s replaces it (move it away: mv %s %s.saved); nothing moved", path,
            empty ? "it is empty, not a log of vzcaps's" : vzcaps_statsfile_old_why(state),
            replaced ? "neither a rotation nor --zero" : "it is no log vzcaps wrote, and nothing of vzcaps's", path, path);
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
        if (zero_check(path, &st_log, false) || zero_check(old, &st_old, st_log.st_nlink != 0))
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

/* Reads PATH.1 then PATH into s, by name or in the directory dirfd (the one checked): 0, or 1
 * after the message (nothing is shown of a part). */
static int count_log(struct stats_run *s, int dirfd, const char *path, char files[2][VZCAPS_PATH_MAX + 3], bool *read)
{
    snprintf(files[0], VZCAPS_PATH_MAX + 3, "%s.1", path); /* the older records first */
    snprintf(files[1], VZCAPS_PATH_MAX + 3, "%s", path);
    int rc = 0, at = dirfd >= 0 ? dirfd : AT_FDCWD;
    const char *base = dirfd >= 0 ? strrchr(path, '/') + 1 : path;
    struct stat log_st; /* LOG.1 is the log's writer's when it is LOG's owner's */
    unsigned long writer = fstatat(at, base, &log_st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(log_st.st_mode) && dirfd < 0
                               ? (unsigned long)log_st.st_uid
                               : (unsigned long)geteuid();
    enum vzcaps_statsfile_old old = vzcaps_statsfile_old(at, dirfd >= 0 ? strrchr(files[0], '/') + 1 : files[0], writer);
    read[0] = false;
    /* the proof's LOG opened first, under a shared lock while both are read: a writer's rotation (its
     * lock never waits) is left to later; a rename without the lock is found after (LOG is another file) */
    struct stat held_st, now;
    int held = dirfd >= 0 ? vzcaps_statsfile_read(dirfd, base, &held_st) : -1;
    (void)(held >= 0 && flock(held, LOCK_SH | LOCK_NB));
    if (old > VZCAPS_OLD_OURS) /* never rotated over: LOG holds every record since */
        eprintf("vzcaps stats: %s: not read: %s, so the library never replaces it and keeps appending to %s past 1 MiB; "
                "move it away (mv %s %s.saved) and the next record rotates the log", files[0], vzcaps_statsfile_old_why(old),
                path, files[0], files[0]);
    else
        rc |= read_log(s, dirfd, files[0], &read[0], VZCAPS_LOG_READ_MAX, -1) != 0;
    rc |= read_log(s, dirfd, files[1], &read[1], old > VZCAPS_OLD_OURS ? 0 : VZCAPS_LOG_READ_MAX, held) != 0; /* past 1 MiB */
    if (held >= 0 && (fstatat(dirfd, base, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_ino != held_st.st_ino ||
                      now.st_dev != held_st.st_dev))
        rc = 1, eprintf("vzcaps stats: %s was rotated while it was read: what was read proves nothing; run it again", path);
    if (rc == 0 && !read[0] && !read[1] && dirfd < 0 && check_log_dir(path, "not written yet, and the library will not write it there"))
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
    int rc = require_init(&s, a->names, a->n_names);
    if (rc)
        return ulog_require_free(&s.req), rc;
    bool read[2];
    /* a proof only from where the library writes (a log in a directory others may write could
     * hold anyone's records), of the very files in the directory checked */
    int dirfd = a->require ? log_dir(path, "--require: the library does not write there, so its records there prove nothing") : -1;
    rc = a->require && dirfd < 0 ? 1 : count_log(&s, dirfd, path, files, read);
    if (dirfd >= 0)
        close(dirfd);
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
    return rc ? rc : stats_main(&a);
}
