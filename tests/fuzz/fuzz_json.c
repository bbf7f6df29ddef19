/* libFuzzer target: the JSON reader and the metal start-up log parser on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/data/benchdata.h"
#include "../../src/data/jsonread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[200];
    struct jv *v = jv_parse((const char *)data, size, err, sizeof err);
    if (!v && strncmp(err, "line ", 5) != 0)
        __builtin_trap(); /* every error names its position */
    jv_free(v);
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct metal_caps c;
    metal_caps_parse(text, &c);
    free(text);
    return 0;
}
