/* A small JSON reader (RFC 8259) for llama-bench output and evidence bundles. */
#ifndef VZCAPS_JSONREAD_H
#define VZCAPS_JSONREAD_H

#include <stddef.h>

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
    enum jv_type type;
    double number;       /* JV_NUMBER, JV_BOOL (0/1) */
    char *string;        /* JV_STRING; object member key in key */
    char *key;
    struct jv *child;    /* first element / member */
    struct jv *next;     /* next sibling */
    size_t count;        /* elements / members */
};

/* Parses text[0..len); NULL on error with "line L, column C: reason" in err. */
struct jv *jv_parse(const char *text, size_t len, char *err, size_t errlen);
void jv_free(struct jv *v);
const struct jv *jv_get(const struct jv *obj, const char *key); /* NULL when absent */

#endif
