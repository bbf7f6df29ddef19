/* libFuzzer target: one environment of VZCAPS_* and compatible variables through the whole
 * configuration step, plus the brand parser and the preload-list stripper. */
#include <stdint.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[4096];
    static const char *envp[64];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* lines are NAME=value entries; the first line is also a brand string */
    size_t n = 0;
    char *p = text;
    while (n < 63) {
        envp[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    envp[n] = NULL;
    struct vzcaps_chip chip;
    vzcaps_chip_from_brand(envp[0], &chip);
    if (chip.known && (chip.apple_family < 1007 || chip.apple_family > 1010))
        __builtin_trap();
    static char buf[VZCAPS_CONFIG_MAX_SIZE + 1];
    static struct vzcaps_config_result r;
    struct vzcaps_inputs in = {.envp = envp, .exe = "probe", .host = {.brand = envp[0], .brand_origin = "fuzz", .physical_memory = 1ull << 34, .translated = 0}};
    vzcaps_configure(&in, buf, sizeof buf, &r);
    /* the safety rule: without the unsafe override nothing exceeds the known chip */
    if (r.profile.state == VZCAPS_ENABLED && r.profile.chip.known && !r.profile.unsafe &&
        (r.profile.apple_family_max > r.profile.chip.apple_family || r.profile.max_threadgroup_memory > 32768))
        __builtin_trap();
    char out[4096];
    vzcaps_strip_library(envp[0], ": ", "libvzcaps.so", out, sizeof out);
    int64_t f;
    (void)vzcaps_family_parse(envp[0], &f);
    (void)vzcaps_glob_match(envp[0], n > 1 ? envp[1] : "");
    return 0;
}
