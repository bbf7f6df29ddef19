/* _CodeSignature/CodeResources for the bundles vzcaps prepare re-signs.
 * Owns: codesign's default resource rules (rules, rules2) and their matching (POSIX extended
 * regular expressions, as the Security framework matches them), the seal's entries and its
 * XML form. Never: reads or writes a file itself (the caller hashes what it copies). */
#define _POSIX_C_SOURCE 200809L
#include "coderesources.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rule {
    const char *pattern;
    unsigned weight, flags;
};

/* codesign's defaults (Security-61901, OSX/libsecurity_codesigning/lib/bundlediskrep.cpp,
 * BundleDiskRep::defaultResourceRules) for a bundle whose resources path is Resources/ ... */
static const struct rule rules1_res[] = {
    {"^version.plist$", 1, 0},
    {"^Resources/", 1, 0},
    {"^Resources/.*\\.lproj/", 1000, CR_OPTIONAL},
    {"^Resources/Base\\.lproj/", 1010, 0},
    {"^Resources/.*\\.lproj/locversion.plist$", 1100, CR_OMIT},
};
static const struct rule rules2_res[] = {
    {"^.*", 1, 0},
    {"^[^/]+$", 10, CR_NESTED},
    {"^(Frameworks|SharedFrameworks|PlugIns|Plug-ins|XPCServices|Helpers|MacOS|Library/(Automator|Spotlight|LoginItems))/", 10,
     CR_NESTED},
    {".*\\.dSYM($|/)", 11, 0},
    {"^(.*/)?\\.DS_Store$", 2000, CR_OMIT},
    {"^Info\\.plist$", 20, CR_OMIT},
    {"^version\\.plist$", 20, 0},
    {"^embedded\\.provisionprofile$", 20, 0},
    {"^PkgInfo$", 20, CR_OMIT},
    {"^Resources/", 20, 0},
    {"^Resources/.*\\.lproj/", 1000, CR_OPTIONAL},
    {"^Resources/Base\\.lproj/", 1010, 0},
    {"^Resources/.*\\.lproj/locversion.plist$", 1100, CR_OMIT},
};
/* ... and for one whose resources are at its top (no nested-code rules: flat bundles have none) */
static const struct rule rules1_flat[] = {
    {"^version.plist$", 1, 0},
    {"^.*", 1, 0},
    {"^.*\\.lproj/", 1000, CR_OPTIONAL},
    {"^Base\\.lproj/", 1010, 0},
    {"^.*\\.lproj/locversion.plist$", 1100, CR_OMIT},
};
static const struct rule rules2_flat[] = {
    {"^.*", 1, 0},
    {".*\\.dSYM($|/)", 11, 0},
    {"^(.*/)?\\.DS_Store$", 2000, CR_OMIT},
    {"^Info\\.plist$", 20, CR_OMIT},
    {"^version\\.plist$", 20, 0},
    {"^embedded\\.provisionprofile$", 20, 0},
    {"^PkgInfo$", 20, CR_OMIT},
    {"^.*\\.lproj/", 1000, CR_OPTIONAL},
    {"^Base\\.lproj/", 1010, 0},
    {"^.*\\.lproj/locversion.plist$", 1100, CR_OMIT},
};

struct ruleset {
    const struct rule *r;
    size_t n;
    regex_t *re;
};
#define SET(a) {a, sizeof a / sizeof a[0], NULL}
static struct ruleset sets[4] = {SET(rules1_res), SET(rules2_res), SET(rules1_flat), SET(rules2_flat)};

static struct ruleset *ruleset(int version, bool with_resources)
{
    struct ruleset *rs = &sets[(with_resources ? 0 : 2) + (version == 2)];
    if (!rs->re) {
        regex_t *re = calloc(rs->n, sizeof *re);
        if (!re)
            abort();
        for (size_t i = 0; i < rs->n; i++)
            if (regcomp(&re[i], rs->r[i].pattern, REG_EXTENDED | REG_NOSUB) != 0)
                abort(); /* the patterns are constants: a failure is a defect of this file */
        rs->re = re;
    }
    return rs;
}

unsigned cr_match(int version, bool with_resources, const char *key)
{
    struct ruleset *rs = ruleset(version, with_resources);
    const struct rule *best = NULL;
    for (size_t i = 0; rs && i < rs->n; i++)
        if (regexec(&rs->re[i], key, 0, NULL, 0) == 0 && (!best || rs->r[i].weight > best->weight))
            best = &rs->r[i];
    return best ? CR_MATCHED | best->flags : 0;
}

bool cr_layout_with_resources(bool contents_layout, bool resources_entry)
{
    return contents_layout || resources_entry;
}

enum { E_HASH, E_LINK, E_NESTED };
struct cr_entry {
    char *key;
    int type;
    unsigned flags2, flags1; /* the rules2 and rules flags (0: not in that section) */
    uint8_t sha1[20], sha256[32], cdhash[20];
    char *target;
};

void cr_init(struct cr_seal *s, bool with_resources)
{
    memset(s, 0, sizeof *s);
    s->with_resources = with_resources;
}

void cr_free(struct cr_seal *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].key);
        free(s->e[i].target);
    }
    free(s->e);
    memset(s, 0, sizeof *s);
}

static struct cr_entry *add(struct cr_seal *s, const char *key)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        struct cr_entry *e = realloc(s->e, cap * sizeof *e);
        if (!e)
            abort();
        s->e = e;
        s->cap = cap;
    }
    struct cr_entry *e = &s->e[s->n++];
    memset(e, 0, sizeof *e);
    e->key = strdup(key);
    if (!e->key)
        abort();
    return e;
}

void cr_add_file(struct cr_seal *s, const char *key, const uint8_t sha1[20], const uint8_t sha256[32], const uint8_t *cdhash)
{
    unsigned f2 = cr_match(2, s->with_resources, key), f1 = cr_match(1, s->with_resources, key);
    f2 = f2 & CR_OMIT ? 0 : f2;
    f1 = f1 & CR_OMIT ? 0 : f1;
    if (!f2 && !f1)
        return;
    struct cr_entry *e = add(s, key);
    e->type = f2 & CR_NESTED && cdhash ? E_NESTED : E_HASH;
    e->flags2 = f2;
    e->flags1 = f1;
    memcpy(e->sha1, sha1, 20);
    memcpy(e->sha256, sha256, 32);
    if (cdhash)
        memcpy(e->cdhash, cdhash, 20);
}

void cr_add_link(struct cr_seal *s, const char *key, const char *target)
{
    unsigned f2 = cr_match(2, s->with_resources, key);
    if (!f2 || f2 & CR_OMIT)
        return;
    struct cr_entry *e = add(s, key);
    e->type = E_LINK;
    e->flags2 = f2 & ~CR_NESTED; /* a link is never nested code */
    e->target = strdup(target);
    if (!e->target)
        abort();
}

void cr_add_bundle(struct cr_seal *s, const char *key, const uint8_t cdhash[20])
{
    struct cr_entry *e = add(s, key);
    e->type = E_NESTED;
    e->flags2 = cr_match(2, s->with_resources, key) | CR_MATCHED;
    memcpy(e->cdhash, cdhash, 20);
}

bool cr_name_ok(const char *name)
{
    const unsigned char *p = (const unsigned char *)name;
    while (*p) {
        if (*p < 0x20 || *p == 0x7f)
            return false;
        int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
        if (n < 0 || (n == 1 && *p < 0xc2))
            return false;
        for (int i = 1; i <= n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return false;
        p += n + 1;
    }
    return true;
}

/* ---- the XML property list ---- */

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

static void indent(struct buf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        put(b, "\t", 1);
}

static void text(struct buf *b, const char *s)
{
    for (; *s; s++)
        if (*s == '&')
            puts_(b, "&amp;");
        else if (*s == '<')
            puts_(b, "&lt;");
        else if (*s == '>')
            puts_(b, "&gt;");
        else
            put(b, s, 1);
}

static void key(struct buf *b, int depth, const char *k)
{
    indent(b, depth);
    puts_(b, "<key>");
    text(b, k);
    puts_(b, "</key>\n");
}

static void data(struct buf *b, int depth, const uint8_t *d, size_t n)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    indent(b, depth);
    puts_(b, "<data>\n");
    indent(b, depth);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        char q[4] = {b64[v >> 18 & 63], b64[v >> 12 & 63], i + 1 < n ? b64[v >> 6 & 63] : '=', i + 2 < n ? b64[v & 63] : '='};
        put(b, q, 4);
    }
    puts_(b, "\n");
    indent(b, depth);
    puts_(b, "</data>\n");
}

static void line(struct buf *b, int depth, const char *s)
{
    indent(b, depth);
    puts_(b, s);
    puts_(b, "\n");
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const struct cr_entry *const *)a)->key, (*(const struct cr_entry *const *)b)->key);
}

static void rules(struct buf *b, const struct ruleset *rs)
{
    /* keys sorted, as a property list writer sorts them */
    const struct rule *order[16];
    size_t n = rs->n;
    for (size_t i = 0; i < n; i++)
        order[i] = &rs->r[i];
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && strcmp(order[k - 1]->pattern, order[k]->pattern) > 0; k--) {
            const struct rule *t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    line(b, 1, "<dict>");
    for (size_t i = 0; i < n; i++) {
        const struct rule *r = order[i];
        key(b, 2, r->pattern);
        if (r->weight == 1 && !r->flags) {
            line(b, 2, "<true/>");
            continue;
        }
        line(b, 2, "<dict>");
        if (r->flags & CR_NESTED)
            key(b, 3, "nested"), line(b, 3, "<true/>");
        if (r->flags & CR_OMIT)
            key(b, 3, "omit"), line(b, 3, "<true/>");
        if (r->flags & CR_OPTIONAL)
            key(b, 3, "optional"), line(b, 3, "<true/>");
        char w[40];
        snprintf(w, sizeof w, "<real>%u</real>", r->weight);
        key(b, 3, "weight"), line(b, 3, w);
        line(b, 2, "</dict>");
    }
    line(b, 1, "</dict>");
}

char *cr_xml(const struct cr_seal *s, size_t *len)
{
    struct buf b = {0};
    const struct cr_entry **sorted = malloc((s->n ? s->n : 1) * sizeof *sorted);
    if (!sorted)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        sorted[i] = &s->e[i];
    qsort(sorted, s->n, sizeof *sorted, by_key);
    puts_(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
              "<plist version=\"1.0\">\n<dict>\n");
    /* files: the legacy seal, SHA-1 of regular files only */
    key(&b, 1, "files");
    line(&b, 1, "<dict>");
    for (size_t i = 0; i < s->n; i++) {
        const struct cr_entry *e = sorted[i];
        if (!e->flags1 || e->type == E_LINK)
            continue;
        key(&b, 2, e->key);
        if (!(e->flags1 & CR_OPTIONAL)) {
            data(&b, 2, e->sha1, 20);
            continue;
        }
        line(&b, 2, "<dict>");
        key(&b, 3, "hash"), data(&b, 3, e->sha1, 20);
        key(&b, 3, "optional"), line(&b, 3, "<true/>");
        line(&b, 2, "</dict>");
    }
    line(&b, 1, "</dict>");
    /* files2: hash2 (SHA-256: the CodeDirectories are SHA-256 only), links, nested code */
    key(&b, 1, "files2");
    line(&b, 1, "<dict>");
    for (size_t i = 0; i < s->n; i++) {
        const struct cr_entry *e = sorted[i];
        if (!e->flags2)
            continue;
        key(&b, 2, e->key);
        line(&b, 2, "<dict>");
        if (e->type == E_NESTED) {
            char req[64] = "cdhash H\"";
            for (int k = 0; k < 20; k++)
                snprintf(req + 9 + 2 * k, sizeof req - 9 - 2 * k, "%02x", e->cdhash[k]);
            strcat(req, "\"");
            key(&b, 3, "cdhash"), data(&b, 3, e->cdhash, 20);
            if (e->flags2 & CR_OPTIONAL)
                key(&b, 3, "optional"), line(&b, 3, "<true/>");
            key(&b, 3, "requirement");
            indent(&b, 3), puts_(&b, "<string>"), text(&b, req), puts_(&b, "</string>\n");
        } else if (e->type == E_LINK) {
            if (e->flags2 & CR_OPTIONAL)
                key(&b, 3, "optional"), line(&b, 3, "<true/>");
            key(&b, 3, "symlink");
            indent(&b, 3), puts_(&b, "<string>"), text(&b, e->target), puts_(&b, "</string>\n");
        } else {
            key(&b, 3, "hash2"), data(&b, 3, e->sha256, 32);
            if (e->flags2 & CR_OPTIONAL)
                key(&b, 3, "optional"), line(&b, 3, "<true/>");
        }
        line(&b, 2, "</dict>");
    }
    line(&b, 1, "</dict>");
    key(&b, 1, "rules");
    rules(&b, ruleset(1, s->with_resources));
    key(&b, 1, "rules2");
    rules(&b, ruleset(2, s->with_resources));
    puts_(&b, "</dict>\n</plist>\n");
    free(sorted);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
