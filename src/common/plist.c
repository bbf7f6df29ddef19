/* Property-list reader: XML plists (the five predefined entities, character references and
 * CDATA decoded) and binary bplist00 (CoreFoundation's CFBinaryPList: header, objects, offset
 * table, 32-byte trailer). Never: reads outside the buffer, follows a reference cycle, trusts
 * a count or an offset, or expands more than PLIST_MAX_NODES values. */
#define _POSIX_C_SOURCE 200809L
#include "plist.h"

#include "input.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pctx {
    const unsigned char *d;
    size_t len, pos;
    size_t nodes;
    char *err;
    size_t errlen;
    bool failed;
    /* binary */
    unsigned off_size, ref_size;
    uint64_t n_objects, table;
    uint64_t stack[PLIST_MAX_DEPTH + 1];
};

static void *fail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *fail(struct pctx *c, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    c->failed = true;
    return NULL;
}

/* A value of type t for the tree (named so apart from bundlecopy.c's struct node), counted against
 * PLIST_MAX_NODES. */
static struct plist *new_value(struct pctx *c, enum plist_type t)
{
    if (++c->nodes > PLIST_MAX_NODES)
        return fail(c, "more than %d values", PLIST_MAX_NODES);
    struct plist *p = calloc(1, sizeof *p);
    if (!p)
        return fail(c, "out of memory");
    p->type = t;
    return p;
}

void plist_free(struct plist *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        if (p->keys)
            plist_free(p->keys[i]);
        if (p->items)
            plist_free(p->items[i]);
    }
    free(p->keys);
    free(p->items);
    free(p->str);
    free(p);
}

/* Appends item (and key for a dictionary) to p. */
static int add_item(struct pctx *c, struct plist *p, struct plist *key, struct plist *item)
{
    if ((p->n & (p->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        size_t cap = p->n ? 2 * p->n : 1;
        struct plist **items = realloc(p->items, cap * sizeof *items);
        if (items)
            p->items = items;
        struct plist **keys = key ? realloc(p->keys, cap * sizeof *keys) : p->keys;
        if (keys)
            p->keys = keys;
        if (!items || (key && !keys)) {
            plist_free(key);
            plist_free(item);
            fail(c, "out of memory");
            return -1;
        }
    }
    if (key)
        p->keys[p->n] = key;
    p->items[p->n++] = item;
    return 0;
}

static int by_key(const void *a, const void *b)
{
    const struct plist *x = *(const struct plist *const *)a, *y = *(const struct plist *const *)b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->str, y->str, x->len);
}

/* A dictionary whose key appears twice is refused (which one a reader takes is not defined);
 * sorted, so a huge dictionary costs n log n. */
static int unique_keys(struct pctx *c, const struct plist *p)
{
    if (p->n < 2)
        return 0;
    struct plist **k = malloc(p->n * sizeof *k);
    if (!k)
        return fail(c, "out of memory"), -1;
    memcpy(k, p->keys, p->n * sizeof *k);
    qsort(k, p->n, sizeof *k, by_key);
    int rc = 0;
    for (size_t i = 1; i < p->n && !rc; i++)
        if (by_key(&k[i - 1], &k[i]) == 0) {
            fail(c, "duplicate key \"%.*s\"", k[i]->len > 80 ? 80 : (int)k[i]->len, k[i]->str);
            rc = -1;
        }
    free(k);
    return rc;
}

const struct plist *plist_get(const struct plist *dict, const char *key)
{
    if (!dict || dict->type != PLIST_DICT)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < dict->n; i++)
        if (dict->keys[i]->len == n && memcmp(dict->keys[i]->str, key, n) == 0)
            return dict->items[i];
    return NULL;
}

/* ---- a growing byte string ---- */

struct buf {
    char *s;
    size_t n, cap;
};

static int put(struct pctx *c, struct buf *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            fail(c, "out of memory");
            return -1;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int put_utf8(struct pctx *c, struct buf *b, uint32_t u)
{
    unsigned char o[4];
    size_t n;
    if (u < 0x80)
        o[0] = (unsigned char)u, n = 1;
    else if (u < 0x800)
        o[0] = (unsigned char)(0xc0 | u >> 6), o[1] = (unsigned char)(0x80 | (u & 0x3f)), n = 2;
    else if (u < 0x10000)
        o[0] = (unsigned char)(0xe0 | u >> 12), o[1] = (unsigned char)(0x80 | ((u >> 6) & 0x3f)),
        o[2] = (unsigned char)(0x80 | (u & 0x3f)), n = 3;
    else
        o[0] = (unsigned char)(0xf0 | u >> 18), o[1] = (unsigned char)(0x80 | ((u >> 12) & 0x3f)),
        o[2] = (unsigned char)(0x80 | ((u >> 6) & 0x3f)), o[3] = (unsigned char)(0x80 | (u & 0x3f)), n = 4;
    return put(c, b, o, n);
}

static struct plist *string_node(struct pctx *c, enum plist_type t, struct buf *b)
{
    struct plist *p = new_value(c, t);
    if (!p) {
        free(b->s);
        return NULL;
    }
    if (!b->s && put(c, b, "", 0) != 0) {
        free(p);
        return NULL;
    }
    p->str = b->s;
    p->len = b->n;
    return p;
}

/* ---- XML ---- */

static size_t line_of(const struct pctx *c)
{
    size_t line = 1;
    for (size_t i = 0; i < c->pos && i < c->len; i++)
        line += c->d[i] == '\n';
    return line;
}

#define XFAIL(c, fmt, ...) fail(c, "line %zu: " fmt, line_of(c), __VA_ARGS__)

static bool at(const struct pctx *c, const char *s)
{
    size_t n = strlen(s);
    return c->len - c->pos >= n && memcmp(c->d + c->pos, s, n) == 0;
}

/* Skips past the next occurrence of s; false when there is none. */
static bool skip_past(struct pctx *c, const char *s)
{
    size_t n = strlen(s);
    for (; c->len - c->pos >= n; c->pos++)
        if (memcmp(c->d + c->pos, s, n) == 0) {
            c->pos += n;
            return true;
        }
    c->pos = c->len;
    return false;
}

static bool is_space(unsigned char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

/* Skips blanks, comments and processing instructions; false on an unterminated one. */
static bool skip_misc(struct pctx *c)
{
    for (;;) {
        while (c->pos < c->len && is_space(c->d[c->pos]))
            c->pos++;
        if (at(c, "<!--")) {
            if (!skip_past(c, "-->"))
                return XFAIL(c, "%s", "unterminated comment"), false;
        } else if (at(c, "<?")) {
            if (!skip_past(c, "?>"))
                return XFAIL(c, "%s", "unterminated processing instruction"), false;
        } else {
            return true;
        }
    }
}

/* A start tag at pos: its name in name[], *empty for <x/>. */
static int start_tag(struct pctx *c, char *name, size_t nlen, bool *empty)
{
    if (c->pos >= c->len || c->d[c->pos] != '<')
        return XFAIL(c, "%s", c->pos >= c->len ? "unexpected end of the file" : "expected an element"), -1;
    if (c->pos + 1 < c->len && c->d[c->pos + 1] == '/')
        return XFAIL(c, "%s", "expected an element, found an end tag"), -1;
    c->pos++;
    size_t k = 0;
    while (c->pos < c->len && !is_space(c->d[c->pos]) && c->d[c->pos] != '>' && c->d[c->pos] != '/') {
        if (k + 1 >= nlen)
            return XFAIL(c, "%s", "an element name too long"), -1;
        name[k++] = (char)c->d[c->pos++];
    }
    name[k] = '\0';
    char quote = 0;
    for (; c->pos < c->len; c->pos++) { /* attributes: skipped, quotes honoured */
        char ch = (char)c->d[c->pos];
        if (quote) {
            quote = ch == quote ? 0 : quote;
        } else if (ch == '"' || ch == '\'') {
            quote = ch;
        } else if (ch == '>') {
            *empty = c->pos > 0 && c->d[c->pos - 1] == '/';
            c->pos++;
            return k ? 0 : (XFAIL(c, "%s", "an element without a name"), -1);
        }
    }
    return XFAIL(c, "<%s: unterminated tag", name), -1;
}

static int end_tag(struct pctx *c, const char *name)
{
    char want[32];
    snprintf(want, sizeof want, "</%s", name);
    if (!at(c, want))
        return XFAIL(c, "expected </%s>", name), -1;
    c->pos += strlen(want);
    while (c->pos < c->len && is_space(c->d[c->pos]))
        c->pos++;
    if (c->pos >= c->len || c->d[c->pos] != '>')
        return XFAIL(c, "expected </%s>", name), -1;
    c->pos++;
    return 0;
}

/* One entity after '&': appended decoded. */
static int entity(struct pctx *c, struct buf *b)
{
    static const struct {
        const char *name;
        char ch;
    } named[] = {{"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"quot;", '"'}, {"apos;", '\''}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (at(c, named[i].name)) {
            c->pos += strlen(named[i].name);
            return put(c, b, &named[i].ch, 1);
        }
    if (c->pos < c->len && c->d[c->pos] == '#') {
        bool hex = c->pos + 1 < c->len && c->d[c->pos + 1] == 'x';
        size_t p = c->pos + 1 + hex, digits = 0;
        uint32_t u = 0;
        for (; p < c->len && c->d[p] != ';' && digits < 8; p++, digits++) {
            int ch = c->d[p], v = ch >= '0' && ch <= '9' ? ch - '0' : hex && ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                                                   : hex && ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
            if (v < 0)
                break;
            u = u * (hex ? 16 : 10) + (uint32_t)v;
        }
        if (digits && p < c->len && c->d[p] == ';' && u && u <= 0x10ffff && !(u >= 0xd800 && u <= 0xdfff)) {
            c->pos = p + 1;
            return put_utf8(c, b, u);
        }
        return XFAIL(c, "%s", "a character reference that is not a character"), -1;
    }
    size_t n = 0;
    while (c->pos + n < c->len && n < 20 && c->d[c->pos + n] != ';' && !is_space(c->d[c->pos + n]))
        n++;
    return XFAIL(c, "unknown entity &%.*s;", (int)n, (const char *)c->d + c->pos), -1;
}

/* The text of element name up to its end tag, decoded. */
static int text_of(struct pctx *c, const char *name, struct buf *b)
{
    while (c->pos < c->len) {
        unsigned char ch = c->d[c->pos];
        if (ch == '&') {
            c->pos++;
            if (entity(c, b) != 0)
                return -1;
        } else if (at(c, "<![CDATA[")) {
            size_t start = c->pos += 9;
            if (!skip_past(c, "]]>"))
                return XFAIL(c, "%s", "unterminated CDATA section"), -1;
            if (put(c, b, c->d + start, c->pos - 3 - start) != 0)
                return -1;
        } else if (at(c, "<!--")) {
            if (!skip_past(c, "-->"))
                return XFAIL(c, "%s", "unterminated comment"), -1;
        } else if (ch == '<') {
            return end_tag(c, name);
        } else {
            size_t start = c->pos;
            while (c->pos < c->len && c->d[c->pos] != '&' && c->d[c->pos] != '<')
                c->pos++;
            if (put(c, b, c->d + start, c->pos - start) != 0)
                return -1;
        }
    }
    return XFAIL(c, "<%s>: unexpected end of the file", name), -1;
}

static int base64(struct pctx *c, struct buf *in, struct buf *out)
{
    uint32_t acc = 0;
    int bits = 0;
    bool pad = false;
    for (size_t i = 0; i < in->n; i++) {
        unsigned char ch = (unsigned char)in->s[i];
        int v = ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? ch - 'a' + 26 : ch >= '0' && ch <= '9' ? ch - '0' + 52
              : ch == '+' ? 62 : ch == '/' ? 63 : -1;
        if (is_space(ch))
            continue;
        if (ch == '=') {
            pad = true;
            continue;
        }
        if (v < 0 || pad)
            return XFAIL(c, "%s", "<data> is not base64"), -1;
        acc = acc << 6 | (uint32_t)v;
        if ((bits += 6) >= 8) {
            unsigned char byte = (unsigned char)(acc >> (bits -= 8));
            if (put(c, out, &byte, 1) != 0)
                return -1;
        }
    }
    return put(c, out, "", 0);
}

static struct plist *xml_scalar(struct pctx *c, const char *name, bool empty)
{
    struct buf b = {0};
    if (!empty && text_of(c, name, &b) != 0) {
        free(b.s);
        return NULL;
    }
    if (strcmp(name, "string") == 0)
        return string_node(c, PLIST_STRING, &b);
    if (strcmp(name, "date") == 0)
        return string_node(c, PLIST_DATE, &b);
    if (strcmp(name, "data") == 0) {
        struct buf out = {0};
        int rc = base64(c, &b, &out);
        free(b.s);
        if (rc != 0) {
            free(out.s);
            return NULL;
        }
        return string_node(c, PLIST_DATA, &out);
    }
    bool integer = strcmp(name, "integer") == 0;
    if (integer || strcmp(name, "real") == 0) {
        const char *s = b.s ? b.s : "";
        char *end;
        errno = 0;
        const char *digits = s + strspn(s, " \t\r\n");
        digits += *digits == '-' || *digits == '+';
        int base = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;
        long long i = integer ? strtoll(s, &end, base) : 0;
        if (integer && errno == ERANGE && i > 0 && !strchr(s, '-')) { /* up to 2^64 - 1, as CoreFoundation reads */
            errno = 0;
            i = (long long)strtoull(s, &end, base);
        }
        double r = integer ? 0 : strtod(s, &end);
        while (is_space((unsigned char)*end))
            end++;
        bool ok = end != s && *end == '\0' && errno == 0 && strlen(s) == b.n;
        free(b.s);
        if (!ok)
            return XFAIL(c, "<%s> is not a number", name);
        struct plist *p = new_value(c, integer ? PLIST_INTEGER : PLIST_REAL);
        if (p)
            p->integer = i, p->real = r;
        return p;
    }
    free(b.s);
    if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0) {
        if (b.n)
            return XFAIL(c, "<%s> holds text", name);
        struct plist *p = new_value(c, PLIST_BOOL);
        if (p)
            p->boolean = name[0] == 't';
        return p;
    }
    return XFAIL(c, "<%s> is not a property-list element", name);
}

static struct plist *xml_value(struct pctx *c, int depth);

static struct plist *xml_container(struct pctx *c, bool dict, bool empty, int depth)
{
    struct plist *p = new_value(c, dict ? PLIST_DICT : PLIST_ARRAY);
    if (!p || empty)
        return p;
    for (;;) {
        if (!skip_misc(c))
            break;
        if (at(c, "</")) {
            if (end_tag(c, dict ? "dict" : "array") == 0 && (!dict || unique_keys(c, p) == 0))
                return p;
            break;
        }
        struct plist *key = NULL;
        if (dict) {
            char name[32];
            bool kempty = false;
            if (start_tag(c, name, sizeof name, &kempty) != 0)
                break;
            if (strcmp(name, "key") != 0) {
                XFAIL(c, "<%s> where a <key> belongs", name);
                break;
            }
            struct buf b = {0};
            if (!kempty && text_of(c, "key", &b) != 0) {
                free(b.s);
                break;
            }
            if (!(key = string_node(c, PLIST_STRING, &b)) || !skip_misc(c)) {
                plist_free(key);
                break;
            }
        }
        struct plist *v = xml_value(c, depth + 1);
        if (!v) {
            plist_free(key);
            break;
        }
        if (add_item(c, p, key, v) != 0)
            break;
    }
    plist_free(p);
    return NULL;
}

static struct plist *xml_value(struct pctx *c, int depth)
{
    if (depth > PLIST_MAX_DEPTH)
        return XFAIL(c, "nested deeper than %d", PLIST_MAX_DEPTH);
    char name[32];
    bool empty = false;
    if (!skip_misc(c) || start_tag(c, name, sizeof name, &empty) != 0)
        return NULL;
    if (strcmp(name, "dict") == 0 || strcmp(name, "array") == 0)
        return xml_container(c, name[0] == 'd', empty, depth);
    return xml_scalar(c, name, empty);
}

static struct plist *xml_parse(struct pctx *c)
{
    if (at(c, "\xef\xbb\xbf"))
        c->pos += 3;
    if (c->len >= 2 && (c->d[0] == 0xfe || c->d[0] == 0xff || c->d[0] == 0 || c->d[1] == 0))
        return fail(c, "an XML property list in UTF-16 (vzcaps reads UTF-8 XML and binary property lists)");
    if (!skip_misc(c))
        return NULL;
    if (at(c, "<!DOCTYPE")) { /* skipped with its internal subset; no entity it declares is expanded */
        int nest = 0;
        for (; c->pos < c->len; c->pos++) {
            unsigned char ch = c->d[c->pos];
            nest += ch == '[' ? 1 : ch == ']' ? -1 : 0;
            if (ch == '>' && nest <= 0)
                break;
        }
        if (c->pos++ >= c->len)
            return XFAIL(c, "%s", "unterminated DOCTYPE");
        if (!skip_misc(c))
            return NULL;
    }
    char name[32];
    bool empty = false;
    if (c->pos >= c->len)
        return fail(c, "not a property list (empty)");
    size_t at_root = c->pos;
    if (start_tag(c, name, sizeof name, &empty) != 0)
        return NULL;
    if (strcmp(name, "plist") != 0) {
        c->pos = at_root;
        return XFAIL(c, "<%s> where <plist> belongs (not an XML property list)", name);
    }
    if (empty)
        return XFAIL(c, "%s", "an empty <plist/>");
    struct plist *top = xml_value(c, 1);
    if (!top)
        return NULL;
    if (!skip_misc(c) || end_tag(c, "plist") != 0 || !skip_misc(c) || c->pos != c->len) {
        if (!c->failed)
            XFAIL(c, "%s", "text after </plist>");
        plist_free(top);
        return NULL;
    }
    return top;
}

/* ---- binary (CFBinaryPList: "bplist00", objects, offset table, trailer) ---- */

static uint64_t be(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The byte span [off, off + n) lies among the objects (before the offset table). */
static bool span_ok(const struct pctx *c, uint64_t off, uint64_t n)
{
    return off <= c->table && n <= c->table - off;
}

/* The count of the object at off (marker's low nibble, or a following integer when 0xF);
 * *body is where its contents start. */
static int bin_count(struct pctx *c, uint64_t ref, uint64_t off, uint64_t *count, uint64_t *body)
{
    unsigned lo = c->d[off] & 0x0f;
    *body = off + 1;
    if (lo != 0x0f) {
        *count = lo;
        return 0;
    }
    if (!span_ok(c, off + 1, 1) || (c->d[off + 1] & 0xf0) != 0x10 || (c->d[off + 1] & 0x0f) > 3)
        return fail(c, "binary: object %llu: its count is not an integer", (unsigned long long)ref), -1;
    unsigned n = 1u << (c->d[off + 1] & 0x0f);
    if (!span_ok(c, off + 2, n))
        return fail(c, "binary: object %llu: its count lies outside the file", (unsigned long long)ref), -1;
    *count = be(c->d + off + 2, n);
    *body = off + 2 + n;
    return 0;
}

static struct plist *bin_object(struct pctx *c, uint64_t ref, int depth);

static struct plist *bin_container(struct pctx *c, uint64_t ref, bool dict, uint64_t count, uint64_t body, int depth)
{
    uint64_t width = dict ? 2 * (uint64_t)c->ref_size : c->ref_size;
    if (count > c->table / width || !span_ok(c, body, count * width))
        return fail(c, "binary: object %llu: %llu entries lie outside the file", (unsigned long long)ref, (unsigned long long)count);
    struct plist *p = new_value(c, dict ? PLIST_DICT : PLIST_ARRAY);
    for (uint64_t i = 0; p && i < count; i++) {
        struct plist *key = NULL;
        if (dict) {
            key = bin_object(c, be(c->d + body + i * c->ref_size, c->ref_size), depth + 1);
            if (key && key->type != PLIST_STRING) {
                plist_free(key);
                key = fail(c, "binary: object %llu: a key that is not a string", (unsigned long long)ref);
            }
            if (!key)
                break;
        }
        uint64_t vref = be(c->d + body + (dict ? count + i : i) * c->ref_size, c->ref_size);
        struct plist *v = bin_object(c, vref, depth + 1);
        if (!v) {
            plist_free(key);
            break;
        }
        if (add_item(c, p, key, v) != 0)
            break;
    }
    if (p && !c->failed && dict)
        unique_keys(c, p);
    if (c->failed) {
        plist_free(p);
        return NULL;
    }
    return p;
}

static struct plist *bin_string(struct pctx *c, uint64_t ref, bool utf16, uint64_t count, uint64_t body)
{
    uint64_t bytes = utf16 ? 2 * count : count;
    if (count > c->table || !span_ok(c, body, bytes))
        return fail(c, "binary: object %llu: a string that lies outside the file", (unsigned long long)ref);
    struct buf b = {0};
    if (!utf16) {
        if (put(c, &b, c->d + body, (size_t)bytes) != 0)
            return NULL;
        return string_node(c, PLIST_STRING, &b);
    }
    for (uint64_t i = 0; i < count; i++) {
        uint32_t u = (uint32_t)be(c->d + body + 2 * i, 2);
        if (u >= 0xd800 && u <= 0xdbff && i + 1 < count) {
            uint32_t lo = (uint32_t)be(c->d + body + 2 * (i + 1), 2);
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                i++;
            }
        }
        if (u >= 0xd800 && u <= 0xdfff) {
            free(b.s);
            return fail(c, "binary: object %llu: a UTF-16 string with an unpaired surrogate", (unsigned long long)ref);
        }
        if (put_utf8(c, &b, u) != 0)
            return NULL;
    }
    return string_node(c, PLIST_STRING, &b);
}

/* A binary real (marker 0x2N: 4 or 8 bytes) or date (0x33: 8 bytes, seconds since 2001). */
static struct plist *bin_real(struct pctx *c, uint64_t ref, uint64_t off, unsigned hi, unsigned lo)
{
    if ((lo != 2 && lo != 3) || (hi == 0x3 && lo != 3) || !span_ok(c, off + 1, 1u << lo))
        return fail(c, "binary: object %llu: a real number that lies outside the file", (unsigned long long)ref);
    uint64_t bits = be(c->d + off + 1, 1u << lo);
    double r;
    if (lo == 2) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        r = f;
    } else {
        memcpy(&r, &bits, sizeof r);
    }
    struct plist *p = new_value(c, hi == 0x2 ? PLIST_REAL : PLIST_DATE);
    if (p)
        p->real = r;
    return p;
}

static struct plist *bin_object(struct pctx *c, uint64_t ref, int depth)
{
    if (c->failed)
        return NULL;
    if (ref >= c->n_objects)
        return fail(c, "binary: a reference to object %llu of %llu", (unsigned long long)ref, (unsigned long long)c->n_objects);
    if (depth > PLIST_MAX_DEPTH)
        return fail(c, "binary: nested deeper than %d", PLIST_MAX_DEPTH);
    for (int i = 0; i < depth; i++)
        if (c->stack[i] == ref)
            return fail(c, "binary: object %llu contains itself", (unsigned long long)ref);
    c->stack[depth] = ref;
    uint64_t off = be(c->d + c->table + ref * c->off_size, c->off_size);
    if (off < 8 || !span_ok(c, off, 1))
        return fail(c, "binary: object %llu lies outside the file", (unsigned long long)ref);
    unsigned char m = c->d[off];
    unsigned hi = m >> 4, lo = m & 0x0f;
    struct plist *p;
    uint64_t count, body;
    switch (hi) {
    case 0x0:
        if (m != 0x08 && m != 0x09)
            return fail(c, "binary: object %llu: marker 0x%02x is not a value", (unsigned long long)ref, m);
        if ((p = new_value(c, PLIST_BOOL)))
            p->boolean = m == 0x09;
        return p;
    case 0x1:
    case 0x8: {
        unsigned n = hi == 0x1 ? 1u << lo : lo + 1;
        if ((hi == 0x1 && lo > 4) || (hi == 0x8 && n > 8) || !span_ok(c, off + 1, n))
            return fail(c, "binary: object %llu: an integer that lies outside the file", (unsigned long long)ref);
        if (n == 16 && be(c->d + off + 1, 8) != 0 && be(c->d + off + 1, 8) != UINT64_MAX)
            return fail(c, "binary: object %llu: an integer wider than 64 bits", (unsigned long long)ref);
        if ((p = new_value(c, hi == 0x1 ? PLIST_INTEGER : PLIST_UID)))
            p->integer = (long long)be(c->d + off + 1 + (n == 16 ? 8 : 0), n == 16 ? 8 : n);
        return p;
    }
    case 0x2:
    case 0x3:
        return bin_real(c, ref, off, hi, lo);
    case 0x4:
        if (bin_count(c, ref, off, &count, &body) != 0)
            return NULL;
        if (!span_ok(c, body, count))
            return fail(c, "binary: object %llu: data that lies outside the file", (unsigned long long)ref);
        {
            struct buf b = {0};
            if (put(c, &b, c->d + body, (size_t)count) != 0)
                return NULL;
            return string_node(c, PLIST_DATA, &b);
        }
    case 0x5:
    case 0x6:
        if (bin_count(c, ref, off, &count, &body) != 0)
            return NULL;
        return bin_string(c, ref, hi == 0x6, count, body);
    case 0xa:
    case 0xc:
    case 0xd:
        if (bin_count(c, ref, off, &count, &body) != 0)
            return NULL;
        return bin_container(c, ref, hi == 0xd, count, body, depth);
    default:
        return fail(c, "binary: object %llu: marker 0x%02x is not a value", (unsigned long long)ref, m);
    }
}

static struct plist *bin_parse(struct pctx *c)
{
    if (c->len < 8 + 1 + 32)
        return fail(c, "binary: shorter than a header, one object and a trailer");
    const unsigned char *t = c->d + c->len - 32;
    c->off_size = t[6];
    c->ref_size = t[7];
    c->n_objects = be(t + 8, 8);
    uint64_t top = be(t + 16, 8);
    c->table = be(t + 24, 8);
    uint64_t end = c->len - 32;
    if (c->off_size < 1 || c->off_size > 8 || c->ref_size < 1 || c->ref_size > 8)
        return fail(c, "binary: the trailer's offset or reference size is not 1..8");
    if (c->n_objects < 1 || top >= c->n_objects)
        return fail(c, "binary: the trailer names top object %llu of %llu", (unsigned long long)top, (unsigned long long)c->n_objects);
    if (c->table < 9 || c->table > end || c->n_objects > (end - c->table) / c->off_size)
        return fail(c, "binary: the offset table lies outside the file");
    return bin_object(c, top, 0);
}

struct plist *plist_parse(const void *data, size_t len, char *err, size_t errlen)
{
    struct pctx c = {.d = data, .len = len, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    if (len >= 6 && memcmp(data, "bplist", 6) == 0) {
        if (len < 8 || memcmp((const char *)data + 6, "00", 2) != 0)
            return fail(&c, "binary: a property list version other than bplist00");
        return bin_parse(&c);
    }
    struct plist *p = xml_parse(&c);
    if (!p && !c.failed)
        fail(&c, "not a property list");
    return p;
}

int plist_read_file(const char *path, struct plist **out, bool *missing, char *err, size_t errlen)
{
    *out = NULL;
    struct vzcaps_input in;
    struct vzcaps_input_opts o = {.max = PLIST_MAX_SIZE};
    if (vzcaps_input_read(path, &o, &in, err, errlen) != 0) {
        if (missing)
            *missing = in.missing;
        return -1;
    }
    if (missing)
        *missing = false;
    char why[300];
    *out = plist_parse(in.data, in.len, why, sizeof why);
    vzcaps_input_free(&in);
    if (!*out) {
        snprintf(err, errlen, "%s: not a property list vzcaps reads: %s", path, why);
        return -1;
    }
    return 0;
}
