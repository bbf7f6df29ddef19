/* libFuzzer target: a hostile environment array (entries of any length, duplicates, missing
 * '=', empty names, NUL-free bytes of any kind) through the library's configuration step and
 * its stripping for children, with the rules checked on every input:
 *   - an unknown VZCAPS_ name, one of ours without '=', or a name of ours or the preload
 *     variable present twice leaves the process stock (refused);
 *   - the config search (vzcaps_config_search) ends with the system files in their order, and
 *     a user file it names is whole (ends in /vzcaps/vzcaps.conf, never cut);
 *   - after stripping, no entry of ours and no copy of the library remain, every other entry
 *     is kept in order, and a one-line description never holds a newline. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

#define MAX_ENTRIES 512

static char arena[1 << 20];
static size_t used;

static void *bump(void *ctx, size_t n)
{
    (void)ctx;
    if (n > sizeof arena - used)
        return NULL;
    void *p = arena + used;
    used += n;
    return p;
}

static size_t name_len(const char *e)
{
    const char *eq = strchr(e, '=');
    return eq ? (size_t)(eq - e) : strlen(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[1 << 16];
    static char *env[MAX_ENTRIES + 1], *before[MAX_ENTRIES + 1];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t n = 0; /* entries are lines; NUL bytes end the input early, as in a real array */
    for (char *p = text; n < MAX_ENTRIES && *p;) {
        env[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    env[n] = NULL;
    memcpy(before, env, sizeof env);

    /* the rule on refusals, computed independently of the core; the names are the ones
     * docs/variables.md documents (tests/test_fuzz_harness.py keeps the two equal) */
    static const char *const known[] = {"VZCAPS_APPLE_FAMILY_MAX", "VZCAPS_MAX_THREADGROUP_MEMORY",
                                        "VZCAPS_RECOMMENDED_WORKING_SET_SIZE", "VZCAPS_EXTRA_FAMILIES", "VZCAPS_HOST_CHIP",
                                        "VZCAPS_UNSAFE_BEYOND_HARDWARE", "VZCAPS_INHERIT", "VZCAPS_LOG", "VZCAPS_CALLERS",
                                        "VZCAPS_STOCK_CALLERS", "VZCAPS_CONFIG", "VZCAPS_PROFILE", "VZCAPS_LOG_FILE",
                                        "VZCAPS_PROGRAM"};
    int must_refuse = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ln = name_len(env[i]);
        if (strncmp(env[i], "VZCAPS_", 7) == 0) {
            int k = 0;
            for (size_t j = 0; j < sizeof known / sizeof known[0]; j++)
                k |= strlen(known[j]) == ln && memcmp(known[j], env[i], ln) == 0;
            must_refuse |= !k || !strchr(env[i], '=');
        }
        int dup_checked = strncmp(env[i], "VZCAPS_", 7) == 0 || (ln == 10 && memcmp(env[i], "LD_PRELOAD", 10) == 0 && env[i][10]);
        for (size_t j = 0; dup_checked && j < i; j++)
            must_refuse |= name_len(env[j]) == ln && memcmp(env[j], env[i], ln) == 0 && strchr(env[j], '=') && strchr(env[i], '=');
    }
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    static struct vzcaps_config_result r;
    struct vzcaps_inputs in = {.envp = (const char *const *)env, .exe = "probe", .preload_var = "LD_PRELOAD",
                               .host = {.brand = "Apple M2", .brand_origin = "fuzz", .physical_memory = 1ull << 34, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &r);
    if (must_refuse && r.profile.state != VZCAPS_STOCK_REFUSED)
        __builtin_trap();
    if (r.n_searched > 1) {
        if (strcmp(r.searched[r.n_searched - 2], "/opt/homebrew/etc/vzcaps.conf") != 0 ||
            strcmp(r.searched[r.n_searched - 1], "/usr/local/etc/vzcaps.conf") != 0)
            __builtin_trap();
        const char *user = r.searched[0];
        size_t ul = strlen(user);
        if (r.n_searched == 3 && (ul < 19 || strcmp(user + ul - 19, "/vzcaps/vzcaps.conf") != 0))
            __builtin_trap();
    }
    static char line[VZCAPS_MAX_NOTES * (VZCAPS_NOTE_LEN + 2) + 64];
    vzcaps_profile_describe(&r.profile, "probe", line, sizeof line);
    static char escaped[4 * sizeof line + 1];
    vzcaps_escape(line, strlen(line), escaped, sizeof escaped);
    if (strchr(escaped, '\n') || strchr(escaped, '\r') || strchr(escaped, '\x1b'))
        __builtin_trap();

    used = 0;
    if (vzcaps_env_strip(env, "LD_PRELOAD", ": ", "libvzcaps.so", NULL, 0, bump, NULL) != 0)
        return 0;
    size_t kept = 0;
    for (char **e = env; *e; e++) {
        if (vzcaps_env_is_ours(*e))
            __builtin_trap();
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0)
            for (const char *p = *e + 11; (p = strstr(p, "libvzcaps.so")); p++)
                if ((p == *e + 11 || p[-1] == '/' || p[-1] == ':' || p[-1] == ' ') && (p[12] == '\0' || p[12] == ':' || p[12] == ' '))
                    __builtin_trap();
        kept++;
    }
    /* every entry that was not ours and not a preload entry is still there, in order */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (vzcaps_env_is_ours(before[i]) || strncmp(before[i], "LD_PRELOAD=", 11) == 0)
            continue;
        while (k < kept && env[k] != before[i])
            k++;
        if (k == kept)
            __builtin_trap();
    }
    return 0;
}
