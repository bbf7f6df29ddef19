/* libFuzzer target: the config-file parser and section choice, on arbitrary bytes.
 * First byte picks an executable name; the rest is the file. */
#include <stdint.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const exes[] = {"llama-bench", "ollama", "python3.12", "x", NULL};
    if (size < 1 || size > VZCAPS_CONFIG_MAX_SIZE)
        return 0;
    const char *exe = exes[data[0] % 5];
    struct vzcaps_settings s;
    char section[64], err[300];
    memset(&s, 0, sizeof s);
    if (vzcaps_config_apply((const char *)data + 1, size - 1, "fuzz.conf", exe, (data[0] & 0x80) ? "llama" : NULL,
                            &s, section, sizeof section, err, sizeof err) == 0) {
        struct vzcaps_host host = {.brand = "Apple M2 (Virtual)", .brand_origin = "fuzz", .physical_memory = 1ull << 34, .translated = 0};
        struct vzcaps_profile p;
        vzcaps_profile_resolve(&s, &host, &p);
        char line[2048];
        vzcaps_profile_describe(&p, exe, line, sizeof line);
        for (int64_t f = 1000; f <= 1011; f++)
            (void)vzcaps_answer(&p, VZCAPS_Q_SUPPORTS_FAMILY, f, 0);
    } else if (strncmp(err, "fuzz.conf", 9) != 0) {
        __builtin_trap(); /* every file error names file:line */
    }
    return 0;
}
