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

/* At most this many values per document: memory stays within about 100 bytes a value. */
#define JV_MAX_VALUES 1000000
/* Members per object (names are checked for repeats against each other). */
#define JV_MAX_MEMBERS 4096

/* Parses text[0..len); NULL on error with "line L, column C: reason" in err. Refused: a
 * member name repeated within an object, a number that overflows a double, invalid UTF-8 in
 * a string, more than JV_MAX_VALUES values or JV_MAX_MEMBERS members in one object. */
struct jv *jv_parse(const char *text, size_t len, char *err, size_t errlen);
/* jv_parse, with a lone \udc80-\udcff in a string read as the byte 0x80-0xff (how the stats
 * log writes a byte of a name that is not UTF-8, as Python's surrogateescape decodes one): the
 * string is then not UTF-8, and is shown escaped ("\xff"), never as the character U+00FF. */
struct jv *jv_parse_bytes(const char *text, size_t len, char *err, size_t errlen);
void jv_free(struct jv *v);
const struct jv *jv_get(const struct jv *obj, const char *key); /* NULL when absent */

#endif
