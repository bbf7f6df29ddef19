/* libFuzzer target: any bytes as an executable's head, a config file and an environment, through
 * selective inheritance's readers, with the rules checked on every input:
 *   - the slice reader never reads past n and says NATIVE only for ELF of the machine asked;
 *   - match patterns are refused (-1) or complete: single blanks, no blank at either end;
 *   - the decision is KEEP only for a fitting name and a loadable slice, and says why in a line;
 *   - the child's environment: strip leaves nothing of ours and no library entry; keep names
 *     the library once; the caller's array is never changed; a too-small buffer is untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

static char *env_store[64];
static char env_text[4096];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* slices: the exact bytes, in their own allocation, so ASan sees any read past them */
    unsigned char *head = malloc(size ? size : 1);
    memcpy(head, data, size);
    enum vzcaps_slices sl = vzcaps_slices_of(head, size, 62);
    if (sl == VZCAPS_SLICES_NATIVE && !(size >= 20 && memcmp(head, "\x7f" "ELF", 4) == 0))
        abort();
    free(head);
    /* patterns from the bytes as a config file */
    static char matches[VZCAPS_CONFIG_MAX_SIZE + 1];
    int m = vzcaps_config_matches((const char *)data, size, matches, 256);
    if (m >= 0 && ((size_t)m != strlen(matches) || (m && (matches[0] == ' ' || matches[m - 1] == ' ')) || strstr(matches, "  ")))
        abort();
    char why[300] = "";
    char nm[9] = "probe";
    if (size > 8) {
        memcpy(nm, data + size - 8, 8); /* the last 8 bytes as the child's name */
        nm[8] = '\0';
    }
    int d = vzcaps_child_decision("/x/y", nm, m >= 0 ? matches : "", sl, size & 1, why, sizeof why);
    if (!why[0] || strchr(why, '\n') || (d == VZCAPS_CHILD_KEEP && sl == VZCAPS_SLICES_NONE_KNOWN))
        abort();
    /* the bytes as NUL-separated environment entries */
    size_t n = size < sizeof env_text - 1 ? size : sizeof env_text - 1, k = 0;
    memcpy(env_text, data, n);
    env_text[n] = '\0';
    for (size_t i = 0; i < n && k < 63; i += strlen(env_text + i) + 1)
        if (env_text[i])
            env_store[k++] = env_text + i;
    env_store[k] = NULL;
    static char *copy[64];
    memcpy(copy, env_store, sizeof copy);
    const char *saved[] = {"VZCAPS_APPLE_FAMILY_MAX=auto"};
    struct vzcaps_child_env_in in = {env_store, saved, 1, "LD_PRELOAD", ": ", "libvzcaps.so", "/l/libvzcaps.so", NULL, 0};
    static char mem[65536];
    for (int keep = 0; keep < 2; keep++) {
        char *const *out = NULL;
        long need = vzcaps_child_env(&in, keep, NULL, 0, &out);
        if (need > 0) {
            memset(mem, 0x5a, 16);
            if (vzcaps_child_env(&in, keep, mem, (size_t)need - 1, &out) != need || mem[0] != 0x5a)
                abort();
            if ((size_t)need > sizeof mem || vzcaps_child_env(&in, keep, mem, (size_t)need, &out) != 0)
                abort();
        }
        size_t libs = 0;
        for (char *const *e = out; e && *e; e++) {
            if (!keep && vzcaps_env_is_ours(*e))
                abort();
            if (strncmp(*e, "LD_PRELOAD=", 11) == 0) /* elements whose base name is ours */
                for (const char *p = *e + 11; *p;) {
                    size_t k = strcspn(p, ": "), b = k;
                    while (b > 0 && p[b - 1] != '/')
                        b--;
                    libs += k - b == 12 && memcmp(p + b, "libvzcaps.so", 12) == 0;
                    p += k + (p[k] != '\0');
                }
        }
        if (keep ? libs != 1 : libs != 0)
            abort();
        if (memcmp(copy, env_store, sizeof copy) != 0)
            abort();
    }
    return 0;
}
