/* Text the command prints or reads: formatting on the heap, escaping for terminals, one-line
 * errors, and whole small files.
 * Owns: the one escape form of every human-readable line (vzcaps_escape). Never: cuts a
 * message, prints a raw control byte, or blocks on a FIFO. */
#define _POSIX_C_SOURCE 200809L
#include "text.h"

#include "input.h"

#include "../core/vzcaps_core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A formatted message on the heap (never cut). */
char *vxformat(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (buf)
        vsnprintf(buf, n > 0 ? (size_t)n + 1 : 1, fmt, again);
    va_end(again);
    return buf;
}

char *xformat(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vxformat(fmt, ap);
    va_end(ap);
    if (!s) {
        fprintf(stderr, "vzcaps: out of memory\n");
        exit(1);
    }
    return s;
}

void *xgrow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    size_t want = *cap ? *cap : 8;
    while (want <= n)
        want *= 2;
    void *q = want <= SIZE_MAX / size ? realloc(p, want * size) : NULL;
    if (!q) {
        fprintf(stderr, "vzcaps: out of memory\n");
        exit(1);
    }
    *cap = want;
    return q;
}

const char *esc(const char *s)
{
    static char *ring[16];
    static unsigned next;
    if (!s)
        return "(null)";
    size_t n = strlen(s), need = vzcaps_escape(s, n, NULL, 0);
    char **slot = &ring[next++ % 16];
    char *b = realloc(*slot, need + 1);
    if (!b)
        return "(out of memory)";
    vzcaps_escape(s, n, b, need + 1);
    return *slot = b;
}

/* msg escaped (vzcaps_escape) into out when it is not NULL; its length. A \x00 in msg is a NUL
 * its maker wrote as it is shown (a C string cannot carry one): kept, not escaped again. */
static size_t escape_line(const char *msg, char *out)
{
    size_t w = 0;
    for (const char *p = msg;;) {
        const char *nul = strstr(p, "\\x00");
        size_t n = nul ? (size_t)(nul - p) : strlen(p), need = vzcaps_escape(p, n, NULL, 0);
        if (out)
            vzcaps_escape(p, n, out + w, need + 1);
        w += need;
        if (!nul)
            return w;
        if (out)
            memcpy(out + w, "\\x00", 4);
        w += 4;
        p = nul + 4;
    }
}

char *nul_shown(const char *s, size_t n)
{
    char *out = malloc(n * 4 + 1);
    size_t w = 0;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i]) {
            out[w++] = s[i];
        } else {
            memcpy(out + w, "\\x00", 4);
            w += 4;
        }
    }
    if (out)
        out[w] = '\0';
    return out;
}

static void vline(FILE *out, const char *fmt, va_list ap)
{
    char *msg = vxformat(fmt, ap);
    char *line = msg ? malloc(escape_line(msg, NULL) + 1) : NULL;
    if (line) {
        line[escape_line(msg, line)] = '\0';
        fprintf(out, "%s\n", line);
    } else if (msg) {
        fputs("(out of memory)\n", out);
    }
    free(line);
    free(msg);
}

void eprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(stderr, fmt, ap);
    va_end(ap);
}

char *read_text_file(const char *path, size_t *len, char *err, size_t errlen)
{
    struct vzcaps_input in;
    struct vzcaps_input_opts o = {.max = TEXT_FILE_MAX};
    if (vzcaps_input_read(path, &o, &in, err, errlen) != 0)
        return NULL;
    *len = in.len;
    return in.data;
}

char *md_code_span(const char *s)
{
    const char *t = esc(s);
    size_t run = 0, longest = 0;
    for (const char *p = t; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    bool pad = *t == '`' || *t == ' ' || (*t && (t[strlen(t) - 1] == '`' || t[strlen(t) - 1] == ' '));
    char *fence = xformat("%.*s", (int)longest + 1, "````````````````````````````````````````````````````````````````");
    if (strlen(fence) <= longest) { /* a run longer than the fence above: the text as entities instead */
        free(fence);
        char *out = xformat("%s", "");
        for (const char *p = t; *p; p++) {
            char *more = strchr("`|\\*_[]<>#&~", *p) ? xformat("%s&#%d;", out, *p) : xformat("%s%c", out, *p);
            free(out);
            out = more;
        }
        return out;
    }
    char *span = xformat("%s%s%s%s%s", fence, pad ? " " : "", t, pad ? " " : "", fence);
    free(fence);
    return span;
}
