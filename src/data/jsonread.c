/* JSON reader: recursive descent with a depth limit, full string escapes (UTF-8 output),
 * strict numbers. Never: accepts trailing garbage, or reads past len. Fuzzed. */
#include "jsonread.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#include "../core/vzcaps_core.h"

struct parser {
    const char *s;
    size_t len, pos;
    char *err;
    size_t errlen;
    int failed;
    size_t nodes; /* values so far: memory is bounded by JV_MAX_VALUES, whatever the input */
    bool bytes;   /* jv_parse_bytes: a lone \udc80-\udcff is that byte (0x80-0xff) */
};

#define BYTE_ESCAPE 0x80000000u /* escape()'s mark on a byte from a lone \udcXX */

static void fail(struct parser *p, const char *why)
{
    if (p->failed)
        return;
    p->failed = 1;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p->pos && i < p->len; i++) {
        if (p->s[i] == '\n')
            line++, col = 1;
        else
            col++;
    }
    snprintf(p->err, p->errlen, "line %zu, column %zu: %s", line, col, why);
}

static void ws(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static struct jv *node(struct parser *p, enum jv_type t)
{
    if (++p->nodes > JV_MAX_VALUES) {
        char why[64];
        snprintf(why, sizeof why, "more than %d values", JV_MAX_VALUES);
        fail(p, why);
        return NULL;
    }
    struct jv *v = calloc(1, sizeof *v);
    if (!v)
        fail(p, "out of memory");
    else
        v->type = t;
    return v;
}

static int hex4(struct parser *p, unsigned *out)
{
    if (p->len - p->pos < 4)
        return fail(p, "truncated \\u escape"), -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(p, "bad \\u escape"), -1;
    }
    *out = v;
    return 0;
}

/* After a backslash: the escape's code point in *cp (a \\u surrogate pair joined); 0, or -1
 * after fail(). */
static int escape(struct parser *p, unsigned *cp)
{
    char e = p->s[p->pos++];
    if (e == 'u') {
        if (hex4(p, cp) != 0)
            return -1;
        if (*cp == 0) { /* a C string would end there and the rest be lost unseen */
            p->pos -= 6;
            return fail(p, "\\u0000 (a NUL character) in a string: not accepted"), -1;
        }
        if (*cp >= 0xd800 && *cp < 0xdc00) {
            unsigned lo;
            if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                return fail(p, "unpaired surrogate"), -1;
            p->pos += 2;
            if (hex4(p, &lo) != 0)
                return -1;
            if (lo < 0xdc00 || lo > 0xdfff)
                return fail(p, "unpaired surrogate"), -1;
            *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (p->bytes && *cp >= 0xdc80 && *cp <= 0xdcff) {
            *cp = BYTE_ESCAPE | (*cp - 0xdc00);
        } else if (*cp >= 0xdc00 && *cp <= 0xdfff) {
            return fail(p, "unpaired surrogate"), -1;
        }
        return 0;
    }
    switch (e) {
    case '"': *cp = '"'; break;
    case '\\': *cp = '\\'; break;
    case '/': *cp = '/'; break;
    case 'b': *cp = '\b'; break;
    case 'f': *cp = '\f'; break;
    case 'n': *cp = '\n'; break;
    case 'r': *cp = '\r'; break;
    case 't': *cp = '\t'; break;
    default: return fail(p, "bad escape"), -1;
    }
    return 0;
}

/* cp as UTF-8 at out + *n (room for 4 bytes); raw: a byte as it was (below 0x80). */
static void put_utf8(char *out, size_t *np, unsigned cp, bool raw)
{
    size_t n = *np;
    if (cp < 0x80 || raw) {
        out[n++] = (char)cp;
    } else if (cp < 0x800) {
        out[n++] = (char)(0xc0 | cp >> 6), out[n++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[n++] = (char)(0xe0 | cp >> 12), out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[n++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[n++] = (char)(0xf0 | cp >> 18), out[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[n++] = (char)(0x80 | (cp & 0x3f));
    }
    *np = n;
}

static char *string(struct parser *p)
{
    p->pos++; /* opening quote */
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    if (!out)
        return fail(p, "out of memory"), NULL;
    for (;;) {
        if (p->pos >= p->len) {
            fail(p, "unterminated string");
            break;
        }
        unsigned char c = (unsigned char)p->s[p->pos++];
        unsigned cp;
        if (c == '"') {
            out[n] = '\0';
            return out;
        }
        if (c < 0x20) {
            p->pos--;
            fail(p, "control character in string");
            break;
        }
        if (c >= 0x80) { /* raw UTF-8: copied as it is, once known valid (RFC 8259 section 8.1) */
            size_t k = vzcaps_utf8_valid(p->s + p->pos - 1, p->len - p->pos + 1);
            if (!k) {
                p->pos--;
                fail(p, "invalid UTF-8 in string");
                break;
            }
            if (n + k + 5 >= cap) {
                char *bigger = realloc(out, cap = cap * 2 + k);
                if (!bigger) {
                    fail(p, "out of memory");
                    break;
                }
                out = bigger;
            }
            memcpy(out + n, p->s + p->pos - 1, k);
            n += k;
            p->pos += k - 1;
            continue;
        }
        if (c != '\\') {
            cp = c;
        } else {
            if (p->pos >= p->len) {
                fail(p, "unterminated string");
                break;
            }
            if (escape(p, &cp) != 0)
                break;
        }
        if (n + 5 >= cap) {
            char *bigger = realloc(out, cap *= 2);
            if (!bigger) {
                fail(p, "out of memory");
                break;
            }
            out = bigger;
        }
        put_utf8(out, &n, cp & ~BYTE_ESCAPE, c != '\\' || (cp & BYTE_ESCAPE));
    }
    free(out);
    return NULL;
}

static int digits(struct parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    return p->pos > start;
}

static struct jv *value(struct parser *p, int depth);

static struct jv *number(struct parser *p)
{
    size_t start = p->pos;
    if (p->s[p->pos] == '-')
        p->pos++;
    if (p->pos < p->len && p->s[p->pos] == '0')
        p->pos++;
    else if (!digits(p))
        return fail(p, "bad number"), NULL;
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (!digits(p))
            return fail(p, "bad number"), NULL;
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        if (!digits(p))
            return fail(p, "bad number"), NULL;
    }
    char buf[64];
    size_t n = p->pos - start;
    if (n >= sizeof buf)
        return fail(p, "number too long"), NULL;
    memcpy(buf, p->s + start, n);
    buf[n] = '\0';
    double d = strtod(buf, NULL);
    if (!isfinite(d)) {
        p->pos = start;
        return fail(p, "number out of range"), NULL;
    }
    struct jv *v = node(p, JV_NUMBER);
    if (v)
        v->number = d;
    return v;
}

static struct jv *container(struct parser *p, int depth, int object)
{
    struct jv *v = node(p, object ? JV_OBJECT : JV_ARRAY), **tail;
    if (!v)
        return NULL;
    tail = &v->child;
    p->pos++;
    ws(p);
    char close = object ? '}' : ']';
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        if (object) {
            ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"') {
                fail(p, p->pos >= p->len ? "unexpected end of input" : "expected a member name");
                break;
            }
            if (!(key = string(p)))
                break;
            ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(key);
                fail(p, "expected ':'");
                break;
            }
            p->pos++;
        }
        if (key && v->count >= JV_MAX_MEMBERS) {
            char why[64];
            snprintf(why, sizeof why, "an object with more than %d members", JV_MAX_MEMBERS);
            free(key);
            fail(p, why);
            break;
        }
        if (key) { /* a repeated name: readers disagree on which one counts, so refuse it */
            bool dup = false;
            for (const struct jv *m = v->child; m && !dup; m = m->next)
                dup = strcmp(m->key, key) == 0;
            if (dup) {
                char why[120];
                snprintf(why, sizeof why, "duplicate key \"%.60s\"%s", key, strlen(key) > 60 ? "..." : "");
                free(key);
                fail(p, why);
                break;
            }
        }
        struct jv *item = value(p, depth + 1);
        if (!item) {
            free(key);
            break;
        }
        item->key = key;
        *tail = item;
        tail = &item->next;
        v->count++;
        ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return v;
        }
        fail(p, p->pos >= p->len ? "unexpected end of input" : object ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    jv_free(v);
    return NULL;
}

static struct jv *literal(struct parser *p, const char *word, enum jv_type t, double n)
{
    size_t wl = strlen(word);
    if (p->len - p->pos < wl || memcmp(p->s + p->pos, word, wl) != 0)
        return fail(p, "unexpected character"), NULL;
    p->pos += wl;
    struct jv *v = node(p, t);
    if (v)
        v->number = n;
    return v;
}

static struct jv *value(struct parser *p, int depth)
{
    ws(p);
    if (depth > MAX_DEPTH)
        return fail(p, "nested too deeply"), NULL;
    if (p->pos >= p->len)
        return fail(p, "unexpected end of input"), NULL;
    char c = p->s[p->pos];
    switch (c) {
    case '{':
        return container(p, depth, 1);
    case '[':
        return container(p, depth, 0);
    case '"': {
        char *s = string(p);
        if (!s)
            return NULL;
        struct jv *v = node(p, JV_STRING);
        if (!v) {
            free(s);
            return NULL;
        }
        v->string = s;
        return v;
    }
    case 't':
        return literal(p, "true", JV_BOOL, 1);
    case 'f':
        return literal(p, "false", JV_BOOL, 0);
    case 'n':
        return literal(p, "null", JV_NULL, 0);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return number(p);
        return fail(p, "unexpected character"), NULL;
    }
}

static struct jv *parse(const char *text, size_t len, char *err, size_t errlen, bool bytes)
{
    struct parser p = {text, len, 0, err, errlen, 0, 0, bytes};
    struct jv *v = value(&p, 0);
    if (v) {
        ws(&p);
        if (p.pos != len) {
            fail(&p, "trailing characters after the JSON value");
            jv_free(v);
            v = NULL;
        }
    }
    return v;
}

struct jv *jv_parse(const char *text, size_t len, char *err, size_t errlen)
{
    return parse(text, len, err, errlen, false);
}

struct jv *jv_parse_bytes(const char *text, size_t len, char *err, size_t errlen)
{
    return parse(text, len, err, errlen, true);
}

void jv_free(struct jv *v)
{
    while (v) {
        struct jv *next = v->next;
        jv_free(v->child);
        free(v->string);
        free(v->key);
        free(v);
        v = next;
    }
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
    if (!obj || obj->type != JV_OBJECT)
        return NULL;
    for (const struct jv *m = obj->child; m; m = m->next)
        if (m->key && strcmp(m->key, key) == 0)
            return m;
    return NULL;
}
