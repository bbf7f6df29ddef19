/* The usage log as vzcaps stats reads it (usagelog.h): one record a line through the project's
 * JSON reader, lines split from a stream with one line kept, --since, and the counts.
 * Never: reads a record by substring, keeps more than one line, or drops an entry past a size. */
#define _POSIX_C_SOURCE 200809L
#include "usagelog.h"
#include "jsonread.h"

#include "../core/vzcaps_core.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one record ---- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

/* An integer member in [lo, hi]: 0, or -1 with why. */
static int int_member(const struct jv *o, const char *key, long long lo, long long hi, long long *out, char *why,
                      size_t whylen)
{
    const struct jv *v = jv_get(o, key);
    if (!v || v->type != JV_NUMBER || v->number != floor(v->number) || v->number < (double)lo || v->number > (double)hi) {
        snprintf(why, whylen, "no \"%s\" integer%s", key, v && v->type == JV_NUMBER ? " in range" : "");
        return -1;
    }
    *out = (long long)v->number;
    return 0;
}

void ulog_record_free(struct ulog_record *r)
{
    free(r->program), free(r->path), free(r->device_class), free(r->reason), free(r->no_raise), free(r->image);
    memset(r, 0, sizeof *r);
}

static const char *const events[] = {"hooked", "left_stock", "unlocked", "stock_caller"};

/* The event, and the strings of a record (or of what is left of one: cut, with missing ones ""). */
static int record_strings(const struct jv *o, struct ulog_record *r, bool cut)
{
    const char *key[] = {"program", "path", "class", "reason", "no_raise", "image"};
    char **to[] = {&r->program, &r->path, &r->device_class, &r->reason, &r->no_raise, &r->image};
    const struct jv *ev = jv_get(o, "event");
    r->event = ULOG_UNKNOWN;
    for (int i = 0; ev && ev->type == JV_STRING && i < 4; i++)
        if (strcmp(ev->string, events[i]) == 0)
            r->event = (enum ulog_event)i;
    for (size_t i = 0; i < 6; i++) {
        const struct jv *v = jv_get(o, key[i]);
        if (!(*to[i] = dup_str(v && v->type == JV_STRING ? v->string : "")))
            return -1;
        if ((!v || v->type != JV_STRING) && (i < 4 || (i == 5 && (r->event == ULOG_UNLOCKED || r->event == ULOG_STOCK_CALLER))) && !cut)
            return -2 - (int)i; /* a member every record (or an effect's) has */
    }
    return 0;
}

static int record_fields(const struct jv *o, struct ulog_record *r, char *why, size_t whylen)
{
    long long v;
    const struct jv *vv = jv_get(o, "v");
    if (vv && vv->type == JV_NUMBER && vv->number != VZCAPS_LOG_VERSION) {
        snprintf(why, whylen, "unknown version %.17g (this vzcaps reads version %d)", vv->number, VZCAPS_LOG_VERSION);
        return -1;
    }
    if (int_member(o, "v", VZCAPS_LOG_VERSION, VZCAPS_LOG_VERSION, &v, why, whylen) ||
        int_member(o, "time", 0, INT64_C(1) << 52, &r->time, why, whylen) ||
        int_member(o, "pid", 0, INT64_C(1) << 52, &r->pid, why, whylen) ||
        int_member(o, "family", 0, INT64_C(1) << 31, &r->family, why, whylen))
        return -1;
    r->version = (int)v;
    const struct jv *ev = jv_get(o, "event");
    int rc = record_strings(o, r, false);
    static const char *const names[] = {"program", "path", "class", "reason", "no_raise", "image"};
    if (rc == -1)
        snprintf(why, whylen, "out of memory");
    else if (!ev || ev->type != JV_STRING)
        snprintf(why, whylen, "no \"event\" string");
    else if (rc < -1)
        snprintf(why, whylen, "no \"%s\" string", names[-2 - rc]);
    else if (r->event == ULOG_UNKNOWN)
        snprintf(why, whylen, "unknown event (not \"hooked\", \"left_stock\", \"unlocked\" or \"stock_caller\")");
    else if (!*r->program)
        snprintf(why, whylen, "an empty \"program\"");
    else
        return 0;
    return -1;
}

int ulog_parse_fragment(const char *line, size_t len, struct ulog_record *r)
{
    static const char start[] = VZCAPS_STATSLOG_START;
    memset(r, 0, sizeof *r);
    if (!len || memcmp(line, start, len < sizeof start - 1 ? len : sizeof start - 1) != 0)
        return 0;
    char *buf = malloc(len + 2), err[200];
    struct jv *whole = jv_parse_bytes(line, len, err, sizeof err);
    if (whole) { /* not cut: a record with a member it should not have, perhaps of a NAME */
        int rc = whole->type == JV_OBJECT && record_strings(whole, r, true) == 0 && *r->program;
        r->event = ULOG_UNKNOWN;
        if (!rc)
            ulog_record_free(r);
        return jv_free(whole), free(buf), rc;
    }
    for (size_t i = len; buf && i-- > 1;) { /* its whole members: up to a ',"' (never inside a string) */
        if (line[i] != ',' || i + 1 >= len || line[i + 1] != '"')
            continue;
        memcpy(buf, line, i);
        buf[i] = '}';
        struct jv *o = jv_parse_bytes(buf, i + 1, err, sizeof err);
        int rc = o && o->type == JV_OBJECT && record_strings(o, r, true) == 0 && *r->program ? 1 : 2;
        if (rc == 1) /* before the program: what a cut record's run is counted with */
            int_member(o, "pid", 0, INT64_C(1) << 52, &r->pid, err, sizeof err), int_member(o, "time", 0, INT64_C(1) << 52,
                                                                                           &r->time, err, sizeof err);
        jv_free(o);
        if (o) {
            if (rc == 2)
                ulog_record_free(r);
            return free(buf), rc;
        }
    }
    return free(buf), 2;
}

const char *ulog_record_after_cut(const char *line, size_t len)
{
    static const char mark[] = "{\"v\":";
    size_t m = sizeof mark - 1;
    for (size_t i = len >= m ? len - m + 1 : 0; i-- > 1;)
        if (memcmp(line + i, mark, m) == 0)
            return line + i;
    return NULL;
}

int ulog_parse_line(const char *line, size_t len, struct ulog_record *r, char *why, size_t whylen)
{
    memset(r, 0, sizeof *r);
    char err[200];
    struct jv *o = jv_parse_bytes(line, len, err, sizeof err); /* a name's non-UTF-8 byte is \udcXX */
    if (!o) {
        snprintf(why, whylen, "not JSON: %s", err);
        return -1;
    }
    int rc = -1;
    if (o->type != JV_OBJECT)
        snprintf(why, whylen, "not a JSON object");
    else
        rc = record_fields(o, r, why, whylen);
    jv_free(o);
    if (rc != 0)
        ulog_record_free(r);
    return rc;
}

/* ---- the zero mark (vzcaps stats --zero) ---- */

size_t ulog_zero_format(long long time, long long pid, char *out, size_t cap)
{
    int n = snprintf(out, cap, "{\"v\":%d,\"time\":%lld,\"pid\":%lld,\"event\":\"%s\"}\n", VZCAPS_LOG_VERSION, time, pid,
                     ULOG_ZERO_EVENT);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* 1 when line is the one-line mark of event whose integer members are keys (into v, each at
 * least lo), else 0. */
static int parse_mark(const char *line, size_t len, const char *event, const char *const *keys, long long *v, long long lo)
{
    char err[200];
    struct jv *o = jv_parse(line, len, err, sizeof err);
    const struct jv *ev = o && o->type == JV_OBJECT ? jv_get(o, "event") : NULL;
    long long version;
    int is = ev && ev->type == JV_STRING && strcmp(ev->string, event) == 0 &&
             int_member(o, "v", VZCAPS_LOG_VERSION, VZCAPS_LOG_VERSION, &version, err, sizeof err) == 0;
    for (; is && *keys; keys++)
        is = int_member(o, *keys, lo, INT64_C(1) << 52, v++, err, sizeof err) == 0;
    jv_free(o);
    return is;
}

int ulog_parse_rotated(const char *line, size_t len, long long *z, long long *lost, long long *until)
{
    static const char *const keys[] = {"zeroed", "lost", "until", NULL};
    long long v[3];
    int is = parse_mark(line, len, "rotated", keys, v, -1); /* lost -1: unknown */
    if (is)
        *z = v[0], *lost = v[1], *until = v[2];
    return is;
}

int ulog_parse_zero(const char *line, size_t len, long long *time)
{
    static const char *const keys[] = {"time", NULL};
    return parse_mark(line, len, ULOG_ZERO_EVENT, keys, time, 0);
}

/* ---- lines from a stream ---- */

/* take bytes added to the line: past VZCAPS_LOG_LINE_MAX it is overlong; of one past twice that,
 * its last bytes are kept (dropped: its start; a whole record appended to cut ones is at the end). */
static void line_add(struct ulog_lines *l, const char *p, size_t take)
{
    const size_t max = sizeof l->line - 1;
    if (take >= max) {
        l->dropped = l->dropped || l->len + take > max;
        memcpy(l->line, p + take - max, max);
        l->len = max;
    } else if (l->len + take > max) {
        size_t drop = l->len + take - max;
        memmove(l->line, l->line + drop, l->len - drop);
        l->len -= drop, l->dropped = true;
    }
    if (take < max)
        memcpy(l->line + l->len, p, take), l->len += take;
    l->overlong = l->dropped || l->len > VZCAPS_LOG_LINE_MAX;
}

void ulog_lines_feed(struct ulog_lines *l, const char *buf, size_t n)
{
    while (n) {
        const char *nl = memchr(buf, '\n', n);
        size_t take = nl ? (size_t)(nl - buf) : n;
        line_add(l, buf, take);
        buf += take, n -= take;
        if (!nl)
            return;
        buf++, n--;
        l->line[l->len] = '\0';
        l->on_line(l->ctx, l->line, l->len, ++l->line_no, l->overlong, false);
        l->len = 0, l->overlong = l->dropped = false;
    }
}

void ulog_lines_end(struct ulog_lines *l)
{
    if (l->len || l->overlong) {
        l->line[l->len] = '\0';
        l->on_line(l->ctx, l->line, l->len, ++l->line_no, l->overlong, true);
    }
    l->len = 0, l->overlong = l->dropped = false;
}

/* ---- --since ---- */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

/* n digits at p as a number, or -1. */
static long long digits(const char *p, int n)
{
    long long v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

static int since_iso(const char *t, long long *out)
{
    size_t n = strlen(t);
    if (n != 10 && n != 17 && n != 20)
        return -1;
    long long y = digits(t, 4), mo = digits(t + 5, 2), d = digits(t + 8, 2), h = 0, mi = 0, s = 0;
    if (y < 1970 || t[4] != '-' || t[7] != '-' || mo < 1 || mo > 12 || d < 1)
        return -1;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return -1;
    if (n > 10) {
        h = digits(t + 11, 2), mi = digits(t + 14, 2), s = n == 20 ? digits(t + 17, 2) : 0;
        if (t[10] != 'T' || t[13] != ':' || (n == 20 && t[16] != ':') || t[n - 1] != 'Z' || h < 0 || h > 23 ||
            mi < 0 || mi > 59 || s < 0 || s > 60)
            return -1;
    }
    *out = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
    return 0;
}

int ulog_since_parse(const char *text, long long now, long long *out, char *why, size_t whylen)
{
    size_t n = strlen(text), nd = strspn(text, "0123456789");
    if (nd && nd <= 15 && (nd == n || (nd == n - 1 && strchr("smhd", text[n - 1])))) {
        long long v = digits(text, (int)nd);
        if (nd == n) {
            *out = v;
            return 0;
        }
        long long unit = text[n - 1] == 's' ? 1 : text[n - 1] == 'm' ? 60 : text[n - 1] == 'h' ? 3600 : 86400;
        if (v <= (now > 0 ? now : 0) / unit + 1) { /* never before the epoch by much: no overflow */
            *out = now - v * unit;
            return 0;
        }
        snprintf(why, whylen, "\"%s\" is before 1970", text);
        return -1;
    }
    if (since_iso(text, out) == 0)
        return 0;
    snprintf(why, whylen, "\"%.64s%s\" is not a time: use %s", text, n > 64 ? "..." : "", ULOG_SINCE_FORMS);
    return -1;
}

/* ---- the counts ---- */

static size_t hash_of(enum ulog_event e, const char *program, long long family, const char *reason)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)e;
    for (const char *s = program; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ (uint64_t)family) * 1099511628211ull;
    for (const char *s = reason; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static bool same_key(const struct ulog_count *c, enum ulog_event e, const char *program, long long family,
                     const char *reason)
{
    return c->event == e && c->family == family && strcmp(c->program, program) == 0 && strcmp(c->reason, reason) == 0;
}

/* The slots doubled (or first made) and every entry placed again: 0, or -1 out of memory. */
static int grow_slots(struct ulog_stats *s)
{
    size_t n = s->n_slots ? s->n_slots * 2 : 64;
    size_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct ulog_count *c = &s->items[i];
        size_t k = hash_of(c->event, c->program, c->family, c->reason) & (n - 1);
        while (slots[k])
            k = (k + 1) & (n - 1);
        slots[k] = i + 1;
    }
    free(s->slots);
    s->slots = slots, s->n_slots = n;
    return 0;
}

int ulog_stats_add(struct ulog_stats *s, const struct ulog_record *r)
{
    const char *reason = r->event == ULOG_HOOKED ? "" : r->reason;
    long long family = r->event == ULOG_HOOKED ? r->family : 0;
    if ((s->n + 1) * 2 > s->n_slots && grow_slots(s) != 0)
        return -1;
    size_t k = hash_of(r->event, r->program, family, reason) & (s->n_slots - 1);
    for (; s->slots[k]; k = (k + 1) & (s->n_slots - 1))
        if (same_key(&s->items[s->slots[k] - 1], r->event, r->program, family, reason))
            break;
    if (!s->slots[k]) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            struct ulog_count *items = realloc(s->items, cap * sizeof *items);
            if (!items)
                return -1;
            s->items = items, s->cap = cap;
        }
        char *p = dup_str(r->program), *why = dup_str(reason);
        if (!p || !why)
            return free(p), free(why), -1;
        s->items[s->n] = (struct ulog_count){r->event, p, why, family, 0};
        s->slots[k] = ++s->n;
    }
    s->items[s->slots[k] - 1].n++;
    if (r->event == ULOG_HOOKED)
        s->hooked++;
    else
        s->left_stock++;
    return 0;
}

static int by_key(const void *a, const void *b)
{
    const struct ulog_count *x = a, *y = b;
    int c = strcmp(x->program, y->program);
    if (c)
        return c;
    if (x->event != y->event)
        return x->event == ULOG_HOOKED ? -1 : 1;
    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    return strcmp(x->reason, y->reason);
}

void ulog_stats_sort(struct ulog_stats *s)
{
    if (s->n)
        qsort(s->items, s->n, sizeof *s->items, by_key);
    free(s->slots); /* the places are stale now: made again by the next add */
    s->slots = NULL, s->n_slots = 0;
}

void ulog_stats_free(struct ulog_stats *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i].program), free(s->items[i].reason);
    free(s->items), free(s->slots);
    memset(s, 0, sizeof *s);
}
