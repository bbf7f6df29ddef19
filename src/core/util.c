/* Small string helpers shared by the core: strict numbers, globs, library lists.
 * Never: allocates, reads the environment or touches files. */
#include "vzcaps_core.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int vzcaps_parse_u64(const char *text, uint64_t *out)
{
    if (!text || !*text)
        return -1;
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

bool vzcaps_glob_match(const char *pattern, const char *text)
{
    const char *star = NULL, *resume = NULL;
    while (*text) {
        if (*pattern == '*') {
            star = pattern++;
            resume = text;
        } else if (*pattern == '?' || *pattern == *text) {
            pattern++;
            text++;
        } else if (star) {
            pattern = star + 1;
            text = ++resume;
        } else {
            return false;
        }
    }
    while (*pattern == '*')
        pattern++;
    return *pattern == '\0';
}

bool vzcaps_globs_fit(const char *globs, const char *name)
{
    char pat[VZCAPS_CONFIG_MAX_LINE + 1];
    for (const char *p = globs; p && name && *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        size_t n = strcspn(p, " \t\r");
        if (n && n < sizeof pat) {
            memcpy(pat, p, n);
            pat[n] = '\0';
            if (vzcaps_glob_match(pat, name))
                return true;
        }
        p += n;
    }
    return false;
}

const char *vzcaps_basename(const char *path)
{
    size_t n = strlen(path); /* then back to the last '/': a long directory costs strlen alone */
    while (n > 0 && path[n - 1] != '/')
        n--;
    return path + n;
}

bool vzcaps_has_prefix(const char *s, const char *prefix, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != prefix[i]) /* s's NUL differs from prefix's byte: s is shorter */
            return false;
    return true;
}

bool vzcaps_streq(const char *a, const char *b)
{
    for (; *a == *b; a++, b++)
        if (!*a)
            return true;
    return false;
}

const char *vzcaps_find_char(const char *s, char c)
{
    for (; *s; s++)
        if (*s == c)
            return s;
    return c ? NULL : s;
}

/* The element of a preload list at p (up to one of seps or the end): its length, and in *named
 * whether its base name is libname. */
static size_t element(const char *p, const char *seps, const char *libname, bool *named)
{
    size_t n = strcspn(p, seps), base = n, ln = strlen(libname);
    while (base > 0 && p[base - 1] != '/')
        base--;
    *named = n - base == ln && memcmp(p + base, libname, ln) == 0;
    return n;
}

bool vzcaps_list_names_library(const char *list, const char *seps, const char *libname)
{
    bool named = false;
    for (const char *p = list; *p && !named;) {
        p += element(p, seps, libname, &named);
        p += *p != '\0';
    }
    return named;
}

int vzcaps_strip_library(const char *list, const char *seps, const char *libname, char *out, size_t outlen)
{
    return vzcaps_strip_library_facts(list, seps, libname, NULL, 0, out, outlen);
}

int vzcaps_strip_library_facts(const char *list, const char *seps, const char *libname, const bool *marked, size_t n_marked,
                               char *out, size_t outlen)
{
    size_t w = 0, k = 0;
    if (out && outlen == 0)
        return -1;
    for (const char *p = list; *p; k++) {
        bool ours;
        size_t n = element(p, seps, libname, &ours);
        if (n > 0 && !ours && !(k < n_marked && marked[k])) {
            if (out && w + (w > 0) + n + 1 > outlen)
                return -1;
            if (out && w > 0)
                out[w] = seps[0];
            w += w > 0;
            if (out)
                memcpy(out + w, p, n);
            w += n;
        }
        p += n;
        p += *p != '\0';
    }
    if (out)
        out[w] = '\0';
    return (int)w;
}

/* Whether fmt converts only %s, %lld and %llu (and writes %%): what the notes and origins use. */
static bool plain_format(const char *fmt)
{
    for (const char *f = fmt; (f = vzcaps_find_char(f, '%')) != NULL; f += 2) {
        if (f[1] == 'l' && f[2] == 'l' && (f[3] == 'd' || f[3] == 'u'))
            f += 2;
        else if (f[1] != 's' && f[1] != '%')
            return false;
    }
    return true;
}

static size_t put_byte(char *out, size_t cap, size_t n, char c)
{
    if (n + 1 < cap)
        out[n] = c;
    return n + 1;
}

static size_t put_decimal(char *out, size_t cap, size_t n, bool negative, unsigned long long v)
{
    char digits[24];
    size_t d = 0;
    do
        digits[d++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    if (negative)
        n = put_byte(out, cap, n, '-');
    while (d)
        n = put_byte(out, cap, n, digits[--d]);
    return n;
}

int vzcaps_vformat(char *out, size_t cap, const char *fmt, va_list ap)
{
    if (!plain_format(fmt))
        return vsnprintf(out, cap, fmt, ap);
    size_t n = 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            n = put_byte(out, cap, n, *f);
        } else if (f[1] == 's') {
            const char *a = va_arg(ap, const char *);
            for (a = a ? a : "(null)"; *a; a++)
                n = put_byte(out, cap, n, *a);
            f++;
        } else if (f[1] == '%') {
            n = put_byte(out, cap, n, '%');
            f++;
        } else if (f[3] == 'd') { /* %lld */
            long long v = va_arg(ap, long long);
            n = put_decimal(out, cap, n, v < 0, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
            f += 3;
        } else { /* %llu */
            n = put_decimal(out, cap, n, false, va_arg(ap, unsigned long long));
            f += 3;
        }
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n > INT_MAX ? -1 : (int)n;
}

/* Marks a buffer that something did not fit into: its last bytes become "...". */
static void mark_cut(char *buf, size_t len)
{
    if (len >= 4)
        memcpy(buf + len - 4, "...", 4);
}

char *vzcaps_appendf(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len) {
        mark_cut(buf, len);
        return buf;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vzcaps_vformat(buf + used, len - used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - used)
        mark_cut(buf, len);
    return buf;
}

/* The code point of the valid UTF-8 sequence at p (n bytes available) in *cp and its length,
 * or 0 for an invalid, overlong or truncated sequence, a surrogate or a value above U+10FFFF. */
static size_t utf8_decode(const unsigned char *p, size_t n, unsigned *cpo)
{
    unsigned c = p[0];
    size_t len;
    unsigned cp, min;
    if (c < 0x80) {
        *cpo = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    *cpo = cp;
    return len;
}

size_t vzcaps_utf8_valid(const char *p, size_t n)
{
    unsigned cp;
    return n ? utf8_decode((const unsigned char *)p, n, &cp) : 0;
}

/* Length of printable text at p, or 0 when the byte at p must be escaped: not valid UTF-8,
 * a C0 or C1 control, DEL, or the backslash of the escape form itself. */
static size_t utf8_printable(const unsigned char *p, size_t n)
{
    unsigned cp;
    size_t len = utf8_decode(p, n, &cp);
    if (!len || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == '\\')
        return 0;
    return len;
}

size_t vzcaps_escape(const char *in, size_t n, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)in;
    size_t need = 0, i = 0;
    while (i < n) {
        size_t k = utf8_printable(p + i, n - i);
        char esc[4];
        const char *src;
        size_t m;
        if (k) {
            src = (const char *)p + i, m = k;
        } else if (p[i] == '\\') {
            src = "\\\\", m = 2;
        } else {
            esc[0] = '\\', esc[1] = 'x', esc[2] = hex[p[i] >> 4], esc[3] = hex[p[i] & 15];
            src = esc, m = 4;
        }
        if (need + m < outlen)
            memcpy(out + need, src, m);
        else if (outlen)
            outlen = need + 1; /* stop writing: a prefix only, never a broken escape */
        need += m;
        i += k ? k : 1;
    }
    if (outlen)
        out[need < outlen ? need : outlen - 1] = '\0';
    return need;
}

char *vzcaps_clipn(const char *s, size_t n, size_t max, char *out, size_t outlen)
{
    if (!outlen)
        return out;
    if (n <= max && n < outlen) {
        memcpy(out, s, n);
        out[n] = '\0';
        return out;
    }
    /* the note of the cut always fits whole: the prefix gives way to it */
    char note[48];
    int k = snprintf(note, sizeof note, "...(%zu bytes)", n);
    size_t keep = max < n ? max : n;
    if ((size_t)k + keep >= outlen)
        keep = (size_t)k < outlen ? outlen - 1 - (size_t)k : 0;
    while (keep && keep < n && ((unsigned char)s[keep] & 0xc0) == 0x80) /* not inside a character */
        keep--;
    if ((size_t)k < outlen)
        snprintf(out, outlen, "%.*s%s", (int)keep, s, note);
    else
        snprintf(out, outlen, "%s", "...");
    return out;
}

char *vzcaps_clip(const char *s, size_t max, char *out, size_t outlen)
{
    return vzcaps_clipn(s, strlen(s), max, out, outlen);
}

bool vzcaps_env_is_ours(const char *entry)
{
    switch (entry[0]) { /* the first byte rules out most entries */
    case 'V':
        return vzcaps_has_prefix(entry, "VZCAPS_", 7);
    case 'T':
        return vzcaps_has_prefix(entry, "TART_METAL_", 11);
    case 'L':
        return vzcaps_has_prefix(entry, "LUME_METAL_", 11);
    }
    return false;
}

int vzcaps_env_strip(char **env, const char *preload_var, const char *seps, const char *libname, const bool *marked,
                     size_t n_marked, void *(*alloc)(void *ctx, size_t bytes), void *ctx)
{
    size_t pl = strlen(preload_var), w = 0, r = 0;
    int rc = 0;
    bool first = true;
    for (; env && env[r]; r++) {
        char *e = env[r];
        if (vzcaps_env_is_ours(e))
            continue;
        if (vzcaps_env_is(e, preload_var)) {
            const char *v = e + pl + 1;
            const bool *m = first ? marked : NULL; /* the facts are the first entry's, as the loader reads it */
            size_t nm = first ? n_marked : 0, n = strlen(v);
            int k = vzcaps_strip_library_facts(v, seps, libname, m, nm, NULL, 0);
            first = false;
            if (k == 0)
                continue; /* only our library was in it: the entry goes */
            char *copy = (size_t)k != n ? alloc(ctx, pl + 1 + n + 1) : NULL;
            if ((size_t)k != n && !copy) {
                rc = -1;
                break;
            }
            if (copy) { /* kept for the life of the process, as putenv's strings are */
                memcpy(copy, e, pl + 1);
                vzcaps_strip_library_facts(v, seps, libname, m, nm, copy + pl + 1, n + 1);
                e = copy;
            }
        }
        env[w++] = e;
    }
    if (rc != 0) /* keep what was not looked at yet */
        while (env[r])
            env[w++] = env[r++];
    if (env)
        env[w] = NULL;
    return rc;
}

int vzcaps_file_trust(unsigned long owner, unsigned long mode, unsigned long uid, char *why, size_t len)
{
    if (owner != uid && owner != 0) {
        snprintf(why, len, "not trusted: owned by uid %lu (only you or root may own it)", owner);
        return -1;
    }
    if (mode & 022) {
        snprintf(why, len, "not trusted: writable by others (mode 0%03lo): chmod go-w it", mode & 0777);
        return -1;
    }
    return 0;
}

/* Known launchers, by the shape of their real path: "<X>/bin/<name>" re-executes
 * "<X>/<target>". CPython's framework builds (Mac/Tools/pythonw.c) start bin/python3.N,
 * which re-executes Resources/Python.app/Contents/MacOS/Python with the same environment. */
static const struct {
    const char *name_glob, *target;
} launchers[] = {
    {"python3*", "Resources/Python.app/Contents/MacOS/Python"},
};

bool vzcaps_launcher_target(const char *exe_path, char *target, size_t len)
{
    const char *base = vzcaps_basename(exe_path);
    size_t dir = (size_t)(base - exe_path); /* "<X>/bin/" */
    if (dir < 5 || !vzcaps_has_prefix(base - 5, "/bin/", 5))
        return false;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        if (!vzcaps_glob_match(launchers[i].name_glob, base))
            continue;
        int n = snprintf(target, len, "%.*s/%s", (int)(dir - 5), exe_path, launchers[i].target);
        return n > 0 && (size_t)n < len; /* a target that does not fit is no launcher we can confirm */
    }
    return false;
}

bool vzcaps_env_is(const char *entry, const char *name)
{
    while (*name && *entry == *name)
        entry++, name++;
    return !*name && *entry == '=';
}

const char *vzcaps_env_get(const char *const *envp, const char *name)
{
    for (; envp && *envp; envp++)
        if (**envp == *name && vzcaps_env_is(*envp, name)) /* the first byte: most entries end there */
            return *envp + strlen(name) + 1;
    return NULL;
}

size_t vzcaps_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    size_t k = n < cap ? n : cap - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
    return n;
}

int vzcaps_program_handed(const char *value, long long pid, long long ppid, char *name, size_t len)
{
    long long v = 0, parent = -1;
    const char *p = value;
    if (!value || *p < '0' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9' && v < 100000000000LL)
        v = v * 10 + (*p++ - '0');
    size_t claim = (size_t)(p - value);
    if (*p == '-' && p[1] >= '0' && p[1] <= '9')
        for (parent = 0, p++; *p >= '0' && *p <= '9' && parent < 100000000000LL;)
            parent = parent * 10 + (*p++ - '0');
    if ((*p != ':' && *p != '+') || !p[1] || strchr(p + 1, '/') || strlen(p + 1) >= len)
        return 0; /* malformed: as if absent */
    if (v == 0 && parent < 0 && claim == VZCAPS_PROGRAM_CLAIM) {
        memcpy(name, p + 1, strlen(p + 1) + 1);
        return 2; /* unclaimed: the first process that reads it is the script's */
    }
    if (v != pid || parent != ppid) /* another process, or one that reused the pid: not the script's */
        return *p == ':' ? -1 : 0; /* '+': the script's process keeps the injection in its children */
    memcpy(name, p + 1, strlen(p + 1) + 1);
    return 1;
}
