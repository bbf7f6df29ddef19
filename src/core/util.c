/* Small string helpers shared by the core: strict numbers, globs, library lists.
 * Never: allocates, reads the environment or touches files. */
#include "vzcaps_core.h"

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

const char *vzcaps_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int vzcaps_strip_library(const char *list, const char *seps, const char *libname, char *out, size_t outlen)
{
    size_t w = 0;
    const char *p = list;
    if (outlen == 0)
        return -1;
    while (*p) {
        size_t n = strcspn(p, seps);
        size_t base = n;
        while (base > 0 && p[base - 1] != '/')
            base--;
        bool ours = n - base == strlen(libname) && memcmp(p + base, libname, n - base) == 0;
        if (n > 0 && !ours) {
            if (w + (w > 0) + n + 1 > outlen)
                return -1;
            if (w > 0)
                out[w++] = seps[0];
            memcpy(out + w, p, n);
            w += n;
        }
        p += n;
        if (*p)
            p++;
    }
    out[w] = '\0';
    return (int)w;
}

char *vzcaps_appendf(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return buf;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    return buf;
}

const char *vzcaps_env_get(const char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}
