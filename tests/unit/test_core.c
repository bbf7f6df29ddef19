/* build/test_core: the unit tests of the portable core (src/core), one program over
 * tests/unit/core_*.c, a concern a file, each with its table; this file holds what they share (the
 * configuration result and the helpers that fill it, a fake file reader) and runs every table. */
#include "core_tests.h"

/* ---- helpers ---- */

struct vzcaps_config_result R;

void configure_env(const char *const *envp, const char *brand, uint64_t mem)
{
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    struct vzcaps_inputs in = {.envp = envp, .exe = "llama-bench", .host = {.brand = brand, .brand_origin = "test", .physical_memory = mem, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
}

bool any_note_contains(const struct vzcaps_profile *p, const char *needle)
{
    for (size_t i = 0; i < p->n_notes; i++)
        if (strstr(p->notes[i], needle))
            return true;
    return false;
}

/* ---- config files ---- */

struct fake_files FILES;

int fake_read(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing, char *err, size_t errlen)
{
    (void)ctx;
    for (int i = 0; i < 3; i++)
        if (FILES.path[i] && strcmp(FILES.path[i], path) == 0) {
            if (!FILES.text[i]) /* there, but not to be read */
                return snprintf(err, errlen, "not trusted: writable by others (mode 0664): chmod go-w it"), -1;
            size_t n = strlen(FILES.text[i]);
            if (n >= cap)
                return snprintf(err, errlen, "too large"), -1;
            memcpy(buf, FILES.text[i], n + 1);
            *len = n;
            return 0;
        }
    *missing = true;
    snprintf(err, errlen, "cannot open: No such file or directory");
    return -1;
}

void configure_file(const char *exe, const char *const *envp)
{
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    struct vzcaps_inputs in = {.envp = envp, .exe = exe, .read_file = fake_read, .host = {.brand = "Apple M2 (Virtual)", .brand_origin = "test", .physical_memory = 0, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &R);
}

int main(void)
{
    const struct unit_tests *const parts[] = {&core_answers_tests, &core_config_tests, &core_hardening_tests,
                                              &core_launch_tests, &core_statslog_tests};
    return run_unit_tests("core", parts, sizeof parts / sizeof parts[0]);
}
