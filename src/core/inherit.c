/* Selective inheritance (inherit = matching): which children keep the injection, and the
 * environment each child gets. Owns: the match patterns of a config file, the slice reading
 * of an executable's first bytes, the keep/strip decision and the child's environment array.
 * Never: opens files, reads the real environment, allocates (callers hand in memory). */
#include "vzcaps_core.h"

#include <stdio.h>
#include <string.h>

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t le32(const unsigned char *p) { return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]; }

#define CPU_ARM64 0x0100000cu
#define SUB_ARM64E 2u
#define SUB_MASK 0x00ffffffu
#define MAX_FAT_ARCHS 32 /* <mach-o/fat.h> sets no limit; real files hold 1..4 */

enum vzcaps_slices vzcaps_slices_of(const unsigned char *head, size_t n, unsigned elf_machine)
{
    if (n >= 20 && memcmp(head, "\x7f" "ELF", 4) == 0) {
        unsigned machine = head[5] == 2 ? (unsigned)head[18] << 8 | head[19] : (unsigned)head[19] << 8 | head[18];
        return elf_machine && machine == elf_machine ? VZCAPS_SLICES_NATIVE : VZCAPS_SLICES_NONE_KNOWN;
    }
    bool arm64 = false, arm64e = false;
    if (n >= 12 && le32(head) == 0xfeedfacfu) { /* a thin 64-bit Mach-O, little-endian */
        if (le32(head + 4) == CPU_ARM64)
            *((le32(head + 8) & SUB_MASK) == SUB_ARM64E ? &arm64e : &arm64) = true;
    } else if (n >= 8 && (be32(head) == 0xcafebabeu || be32(head) == 0xcafebabfu)) {
        size_t size = be32(head) == 0xcafebabfu ? 32 : 20; /* fat_arch_64 or fat_arch */
        uint32_t count = be32(head + 4);
        if (count == 0 || count > MAX_FAT_ARCHS || 8 + count * size > n)
            return VZCAPS_SLICES_NONE_KNOWN; /* not a fat file (a Java class shares the magic) or cut short */
        for (uint32_t i = 0; i < count; i++) {
            const unsigned char *a = head + 8 + i * size;
            if (be32(a) == CPU_ARM64)
                *((be32(a + 4) & SUB_MASK) == SUB_ARM64E ? &arm64e : &arm64) = true;
        }
    }
    if (arm64 && arm64e)
        return VZCAPS_SLICES_UNIVERSAL;
    return arm64e ? VZCAPS_SLICES_ARM64E_ONLY : arm64 ? VZCAPS_SLICES_ARM64 : VZCAPS_SLICES_NONE_KNOWN;
}

/* ---- match patterns: every section's match value, blank-separated ---- */

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\0'; } /* NUL: only in a file the parser refuses */

int vzcaps_config_matches(const char *text, size_t len, char *out, size_t outlen)
{
    size_t w = 0, pos = 0;
    if (outlen == 0)
        return -1;
    out[0] = '\0';
    while (pos < len) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl != NULL);
        while (n && blank(*line))
            line++, n--;
        if (n < 5 || memcmp(line, "match", 5) != 0)
            continue;
        size_t i = 5;
        while (i < n && blank(line[i]))
            i++;
        if (i >= n || line[i] != '=')
            continue; /* another key that starts with "match" */
        for (i++; i < n && line[i] != '#';) { /* the value's words, up to a comment */
            while (i < n && blank(line[i]))
                i++;
            size_t s = i;
            while (i < n && !blank(line[i]))
                i++;
            if (i == s || line[s] == '#')
                break;
            if (w + (w != 0) + (i - s) + 1 > outlen)
                return -1; /* refused, never cut */
            if (w)
                out[w++] = ' ';
            memcpy(out + w, line + s, i - s);
            w += i - s;
            out[w] = '\0';
        }
    }
    return (int)w;
}

/* the reason, only when asked for (the library decides in exec paths, where it formats nothing) */
#define SAY(...) (why && len ? snprintf(why, len, __VA_ARGS__) : 0)

int vzcaps_child_decision(const char *path, const char *argv0, const char *matches, enum vzcaps_slices slices,
                          bool library_has_arm64e, char *why, size_t len)
{
    /* the child's library picks its section by the base name of argv[0], so the decision does */
    const char *name = vzcaps_basename(argv0 && *argv0 ? argv0 : path ? path : "");
    char clip[4 * 64 + 8]; /* the name for the reason: escaped (one line), at most 64 bytes of it */
    size_t nl = strlen(name);
    size_t cl = vzcaps_escape(name, nl > 64 ? 64 : nl, clip, sizeof clip - 4);
    if (nl > 64)
        memcpy(clip + cl, "...", 4);
    if (!vzcaps_globs_fit(matches, name))
        return SAY("no config section matches %s", clip), VZCAPS_CHILD_STRIP;
    switch (slices) {
    case VZCAPS_SLICES_NATIVE:
    case VZCAPS_SLICES_ARM64:
        return SAY("a config section matches %s, and it has a slice the library loads", clip), VZCAPS_CHILD_KEEP;
    case VZCAPS_SLICES_ARM64E_ONLY:
    case VZCAPS_SLICES_UNIVERSAL:
        if (library_has_arm64e)
            return SAY("a config section matches %s, and the library has its arm64e slice", clip), VZCAPS_CHILD_KEEP;
        return SAY("%s %s, and the library has no arm64e slice (dyld would terminate it)", clip,
                        slices == VZCAPS_SLICES_UNIVERSAL ? "holds an arm64e slice, which macOS may run" : "is arm64e only"),
               VZCAPS_CHILD_STRIP;
    case VZCAPS_SLICES_NONE_KNOWN:
        break;
    }
    return SAY("%s: its slices are not known (a script, unreadable, or not an executable vzcaps reads)", clip),
           VZCAPS_CHILD_STRIP;
}

/* ---- the child's environment ---- */

long vzcaps_child_env(const struct vzcaps_child_env_in *in, bool keep, void *mem, size_t cap, char *const **out)
{
    size_t vl = strlen(in->preload_var), n_env = 0, preload_bytes = 0;
    bool ours = false, first = true;
    for (size_t k = 0; k < in->n_lib; k++)
        ours |= in->lib_elem[k]; /* the first entry names the library by what the file is */
    for (char *const *e = in->envp; e && *e; e++, n_env++) {
        if (vzcaps_env_is_ours(*e)) {
            ours = true;
        } else if (vzcaps_env_is(*e, in->preload_var)) {
            preload_bytes += strlen(*e) + 1;
            ours |= vzcaps_list_names_library(*e + vl + 1, in->seps, in->libname) || !first; /* a second entry: ambiguous, rewritten */
            first = false;
        }
    }
    if (!keep && !ours) { /* nothing of ours: the given array as it is */
        *out = in->envp;
        return 0;
    }
    size_t lib_len = strlen(in->lib_path), ptrs = (n_env + in->n_saved + 2) * sizeof(char *);
    size_t need = ptrs + preload_bytes + lib_len + 2 + vl + 1;
    if (need > cap)
        return (long)need;
    char **arr = mem;
    char *text = (char *)mem + ptrs;
    size_t k = 0;
    bool have_preload = false;
    for (char *const *e = in->envp; e && *e; e++) {
        if (vzcaps_env_is_ours(*e))
            continue; /* ours come from the saved entries (keep) or go (strip) */
        if (!vzcaps_env_is(*e, in->preload_var)) {
            arr[k++] = *e;
            continue;
        }
        if (have_preload)
            continue; /* a later duplicate: the first entry speaks, as the library reads it */
        /* strip: our library out of the entry (an entry left empty goes); keep: ours after the rest */
        size_t len = strlen(*e);
        memcpy(text, *e, vl + 1);
        int r = vzcaps_strip_library_facts(*e + vl + 1, in->seps, in->libname, in->lib_elem, in->n_lib, text + vl + 1,
                                           len - vl + lib_len + 2);
        size_t tl = r > 0 ? vl + 1 + (size_t)r : vl + 1;
        if (keep) {
            if (r > 0)
                text[tl++] = in->seps[0];
            memcpy(text + tl, in->lib_path, lib_len);
            tl += lib_len;
        }
        text[tl] = '\0';
        if (keep || r > 0) {
            arr[k++] = text;
            have_preload = true;
        }
        text += tl + 1;
    }
    if (keep && !have_preload) {
        memcpy(text, in->preload_var, vl);
        text[vl] = '=';
        memcpy(text + vl + 1, in->lib_path, lib_len + 1);
        arr[k++] = text;
    }
    for (size_t i = 0; keep && i < in->n_saved; i++)
        arr[k++] = (char *)in->saved[i];
    arr[k] = NULL;
    *out = arr;
    return 0;
}
