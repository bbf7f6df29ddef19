/* libFuzzer target: the property-list reader (XML and binary bplist00) on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/common/plist.h"

/* Walks the tree: every string is NUL-terminated at its length, every dictionary key a string. */
static size_t walk(const struct plist *p, int depth)
{
    if (depth > PLIST_MAX_DEPTH + 1 || ((p->type == PLIST_STRING || p->type == PLIST_DATA) && p->str[p->len] != '\0'))
        __builtin_trap();
    size_t n = 1;
    for (size_t i = 0; i < p->n; i++) {
        if (p->type == PLIST_DICT && p->keys[i]->type != PLIST_STRING)
            __builtin_trap();
        n += walk(p->items[i], depth + 1);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[300];
    err[0] = '\0';
    struct plist *p = plist_parse(data, size, err, sizeof err);
    if (!p && !err[0])
        __builtin_trap(); /* every refusal says why */
    if (p) {
        if (walk(p, 0) > PLIST_MAX_NODES)
            __builtin_trap();
        (void)plist_get(p, "CFBundleExecutable");
    }
    plist_free(p);
    return 0;
}
