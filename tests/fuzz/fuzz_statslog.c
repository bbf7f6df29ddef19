/* libFuzzer target: the stats log's record, of any event, from any four strings and numbers (the
 * library formats it from a program name, a path, a class name, a reason and an image it does not
 * control):
 * always one line of valid UTF-8 JSON, at most VZCAPS_STATSLOG_MAX bytes; and the log_file
 * value check and expansion. */
#include <stdint.h>
#include <string.h>

#include "../../src/core/vzcaps_core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[8192], out[VZCAPS_STATSLOG_MAX], path[VZCAPS_PATH_MAX + 1];
    if (size >= sizeof text || size < 24)
        return 0;
    long long nums[3];
    memcpy(nums, data, sizeof nums);
    memcpy(text, data + 24, size - 24);
    text[size - 24] = '\0';
    /* NUL-separated fields: program, path, class, reason */
    const char *f[4] = {text, "", "", ""};
    char *p = text;
    for (int i = 1; i < 4; i++) {
        char *nul = memchr(p, '\0', (size_t)(text + size - 24 - p));
        if (!nul || nul == text + size - 24)
            break;
        f[i] = p = nul + 1;
    }
    for (char *q = text; q < text + size - 24; q++)
        if (*q == '\x1f')
            *q = '\0'; /* the unit separator splits fields too */
    struct vzcaps_statslog_record r = {nums[0], nums[1], nums[2], nums[0] & 1, f[0], f[1], f[2], f[3]};
    /* the library's records: an event of each kind, its no_raise or image any of the strings */
    struct vzcaps_statslog_more more = {(int)((unsigned long long)nums[1] % 4), f[3], f[2], f[1],
                                        (unsigned long long)nums[2], (unsigned long long)nums[0]};
    size_t n = nums[1] & 4 ? vzcaps_statslog_format_more(&r, &more, out) : vzcaps_statslog_format(&r, out);
    if (n > VZCAPS_STATSLOG_MAX || n < 2 || out[n - 1] != '\n' || out[n - 2] != '}' || out[0] != '{')
        __builtin_trap();
    for (size_t i = 0, k; i < n; i += k) {
        k = vzcaps_utf8_valid(out + i, n - i);
        if (!k || (k == 1 && (unsigned char)out[i] < 0x20 && out[i] != '\n'))
            __builtin_trap(); /* cut inside a character, or a raw control byte */
        if (out[i] == '\n' && i != n - 1)
            __builtin_trap();
    }
    char why[128];
    if (vzcaps_log_file_check(f[0], why, sizeof why) == 0 &&
        vzcaps_log_file_expand(f[0], f[1], path, sizeof path) == 0 && (path[0] != '/' || strlen(path) > VZCAPS_PATH_MAX))
        __builtin_trap();
    return 0;
}
