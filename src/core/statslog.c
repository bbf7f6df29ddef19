/* The stats log's records (issue 33 item 4, issue 44; `vzcaps stats` reads them): one JSON line per
 * process and one per effect, at most VZCAPS_STATSLOG_MAX bytes each, and where the log's path comes
 * from (log_file, VZCAPS_LOG_FILE).
 * Owns: the record's exact form and how long fields are cut. Never: allocates, formats
 * through stdio (the library formats the record at the first device). */
#include "vzcaps_core.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Bytes of the JSON form of the unit at p (n bytes left), and its length in *used. One unit is
 * a valid UTF-8 sequence or one byte that is not; out (at least 6 bytes) receives it. */
static size_t json_unit(const unsigned char *p, size_t n, char *out, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    size_t k = vzcaps_utf8_valid((const char *)p, n);
    unsigned cp = p[0];
    if (k == 2 && p[0] == 0xc2 && p[1] < 0xa0)
        cp = p[1]; /* a C1 control: escaped like the C0 ones */
    else if (k > 1) {
        memcpy(out, p, k);
        *used = k;
        return k;
    }
    *used = k ? k : 1; /* a byte that is not UTF-8 is one unit: \udcXX of its value (below) */
    if (k == 1 && cp >= 0x20 && cp != 0x7f && cp != '"' && cp != '\\') {
        out[0] = (char)cp;
        return 1;
    }
    if (k == 1 && (cp == '"' || cp == '\\')) {
        out[0] = '\\', out[1] = (char)cp;
        return 2;
    }
    /* a control character is \u00XX; a byte that is not UTF-8 (0x80-0xff) a lone low surrogate,
     * \udcXX, as Python's surrogateescape decodes it: \u00XX would be the character U+00XX, and
     * "p\xff" the same name as a real "p\u00ff" (vzcaps stats reads \udcXX back as the byte) */
    memcpy(out, k ? "\\u00" : "\\udc", 4);
    out[4] = hex[cp >> 4], out[5] = hex[cp & 15];
    return 6;
}

size_t vzcaps_json_escaped_len(const char *s, size_t n)
{
    size_t len = 0;
    char unit[8];
    for (size_t i = 0, used; i < n; i += used)
        len += json_unit((const unsigned char *)s + i, n - i, unit, &used);
    return len;
}

/* s escaped into out, at most cap bytes; when the whole does not fit, whole units up to cap - 3
 * and "..." (cap >= 3). Returns the bytes written. */
static size_t json_put(const char *s, size_t n, char *out, size_t cap)
{
    bool whole = vzcaps_json_escaped_len(s, n) <= cap;
    if (!whole && cap < 3)
        return 0;
    size_t room = whole ? cap : cap - 3, w = 0;
    char unit[8];
    for (size_t i = 0, used; i < n; i += used) {
        size_t u = json_unit((const unsigned char *)s + i, n - i, unit, &used);
        if (w + u > room)
            break;
        memcpy(out + w, unit, u);
        w += u;
    }
    if (!whole)
        memcpy(out + w, "...", 3), w += 3;
    return w;
}

static size_t put_str(char *out, size_t at, const char *s)
{
    size_t n = strlen(s);
    memcpy(out + at, s, n);
    return at + n;
}

static size_t put_int(char *out, size_t at, long long v)
{
    char digits[24];
    size_t n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        digits[n++] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        out[at++] = '-';
    while (n)
        out[at++] = digits[--n];
    return at;
}

/* The largest cap c such that the fields, each cut to c escaped bytes, fit budget together. */
static size_t fair_cap(const size_t *len, size_t n, size_t budget)
{
    size_t lo = 0, hi = budget;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2, sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += len[i] < mid ? len[i] : mid;
        if (sum <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* One member after "time": its key (",\"pid\":"), and its value: a number (str and word NULL),
 * a string cut to the common cap when the record is too long, or a word never cut. */
struct member {
    const char *key, *str, *word;
    long long num;
};

static long long clamp(unsigned long long v)
{
    return v > LLONG_MAX ? LLONG_MAX : (long long)v;
}

static size_t members_of(const struct vzcaps_statslog_record *r, const struct vzcaps_statslog_more *m, struct member *o)
{
    static const char *const events[] = {"left_stock", "hooked", "unlocked", "stock_caller"};
    int ev = m && m->event ? m->event : r->hooked;
    size_t n = 0;
#define M(k, s, w, v) (o[n++] = (struct member){",\"" k "\":", s, w, v})
#define S(x) ((x) ? (x) : "")
    M("pid", NULL, NULL, r->pid), M("program", S(r->program), NULL, 0), M("path", S(r->path), NULL, 0);
    M("event", NULL, events[ev], 0), M("class", S(r->cls), NULL, 0), M("family", NULL, NULL, r->family);
    M("reason", S(r->reason), NULL, 0);
    if (ev == VZCAPS_EVENT_HOOKED && m)
        M("no_raise", S(m->no_raise), NULL, 0);
    if (ev >= VZCAPS_EVENT_UNLOCKED)
        M("image", S(m->image), NULL, 0);
    if (ev == VZCAPS_EVENT_UNLOCKED)
        M("selector", S(m->selector), NULL, 0), M("stock", NULL, NULL, clamp(m->stock)), M("given", NULL, NULL, clamp(m->given));
#undef M
#undef S
    return n;
}

size_t vzcaps_statslog_format_more(const struct vzcaps_statslog_record *r, const struct vzcaps_statslog_more *more,
                                   char out[VZCAPS_STATSLOG_MAX])
{
    struct member m[16];
    size_t n = members_of(r, more, m), len[16], k = 0;
    char num[24];
    size_t fixed = strlen(VZCAPS_STATSLOG_START) + put_int(num, 0, r->time) + strlen("}\n");
    for (size_t i = 0; i < n; i++) {
        fixed += strlen(m[i].key) + (m[i].str || m[i].word ? 2 : put_int(num, 0, m[i].num));
        if (m[i].word)
            fixed += strlen(m[i].word);
        if (m[i].str)
            len[k++] = vzcaps_json_escaped_len(m[i].str, strlen(m[i].str));
    }
    size_t cap = fair_cap(len, k, VZCAPS_STATSLOG_MAX - fixed); /* >= 3: fixed is under 400 bytes */
    size_t at = put_int(out, put_str(out, 0, VZCAPS_STATSLOG_START), r->time);
    for (size_t i = 0; i < n; i++) {
        at = put_str(out, at, m[i].key);
        if (!m[i].str && !m[i].word) {
            at = put_int(out, at, m[i].num);
            continue;
        }
        out[at++] = '"';
        at = m[i].word ? put_str(out, at, m[i].word) : at + json_put(m[i].str, strlen(m[i].str), out + at, cap);
        out[at++] = '"';
    }
    return put_str(out, at, "}\n");
}

size_t vzcaps_statslog_format(const struct vzcaps_statslog_record *r, char out[VZCAPS_STATSLOG_MAX])
{
    return vzcaps_statslog_format_more(r, NULL, out);
}

int vzcaps_log_file_check(const char *value, char *why, size_t len)
{
    size_t n = strlen(value);
    if (n == 0 || !(value[0] == '/' || (value[0] == '~' && value[1] == '/')))
        return snprintf(why, len, "not an absolute path or ~/PATH"), -1;
    if (n > VZCAPS_PATH_MAX)
        return snprintf(why, len, "too long (limit %d bytes)", VZCAPS_PATH_MAX), -1;
    if (value[n - 1] == '/')
        return snprintf(why, len, "ends in '/': name the log file, not a directory"), -1;
    return 0;
}

int vzcaps_log_file_expand(const char *value, const char *home, char *out, size_t cap)
{
    const char *dir = value[0] == '~' ? home : "";
    const char *rest = value[0] == '~' ? value + 1 : value;
    if (value[0] == '~' && (!home || home[0] != '/'))
        return -1;
    size_t dl = strlen(dir), rl = strlen(rest);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--; /* HOME=/home/me/ */
    if (dl == 1 && dir[0] == '/')
        dl = 0; /* HOME=/ */
    if (dl + rl > VZCAPS_PATH_MAX || dl + rl + 1 > cap)
        return -1;
    memcpy(out, dir, dl);
    memcpy(out + dl, rest, rl + 1);
    return 0;
}
