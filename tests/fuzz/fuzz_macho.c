/* libFuzzer target: the Mach-O reader (headers, load commands, sections, code signatures,
 * entitlements) and prepare's classification of files on arbitrary bytes. Seeded with the build's own Mach-O files. */
#include <stdint.h>
#include <string.h>

#include "../../src/macho/macho.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct macho_file mf;
    char err[300];
    /* prepare's classification: any bytes, never a crash; a damaged file always has a reason */
    enum macho_kind kind = macho_classify(data, size, err, sizeof err);
    if (kind == MACHO_KIND_BROKEN && !err[0])
        __builtin_trap();
    if ((kind == MACHO_KIND_CODE || kind == MACHO_KIND_PARTLY_SIGNED || kind == MACHO_KIND_UNSIGNED) &&
        macho_parse(data, size, &mf, err, sizeof err) != 0)
        __builtin_trap(); /* code is always something the reader reads */
    if (macho_parse(data, size, &mf, err, sizeof err) != 0) {
        if (!err[0])
            __builtin_trap(); /* every refusal has a reason (raw file bytes in it are escaped where
                                 it is printed, which the end-to-end tests check) */
        return 0;
    }
    if (mf.n_slices == 0 || mf.n_slices > MACHO_MAX_SLICES)
        __builtin_trap();
    for (size_t i = 0; i < mf.n_slices; i++)
        if (mf.slices[i].offset > size || mf.slices[i].size > size - mf.slices[i].offset)
            __builtin_trap();
    return 0;
}
