/* libFuzzer target: the ad-hoc signer's input parsing (vzcaps prepare) on hostile Mach-O
 * bytes. Whatever it accepts must come out signed so that the project's verifier agrees:
 * every slice signed ad hoc, every hash matching, no hardened runtime. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/macho/codesign.h"
#include "../../src/macho/macho.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *out = NULL;
    size_t out_len = 0;
    char err[512];
    struct codesign_report rep;
    /* with a bound Info.plist and seal, and unsigned slices of universal files signed too */
    static const uint8_t info[32] = {1}, seal[32] = {3};
    const struct codesign_bind bind = {info, seal};
    bool bound = size && data[size - 1] & 1;
    if (codesign_adhoc_bound(data, size, "fuzz", bound ? &bind : NULL, bound, &out, &out_len, &rep, err, sizeof err) != 0) {
        if (!err[0])
            __builtin_trap(); /* a refusal has a reason (raw file bytes in it are escaped on output) */
        return 0;
    }
    static struct macho_file mf;
    if (macho_parse(out, out_len, &mf, err, sizeof err) != 0)
        __builtin_trap();
    for (size_t i = 0; i < mf.n_slices; i++) {
        const struct macho_slice *s = &mf.slices[i];
        if (!s->signed_ || s->signature_valid != 1 || !s->adhoc || s->hardened_runtime)
            __builtin_trap();
    }
    free(out);
    return 0;
}
