/* Property lists as property lists (plist.c): XML (entities and CDATA decoded) and binary
 * bplist00 (CoreFoundation's CFBinaryPList layout), into one tree. Portable; fuzzed. */
#ifndef VZCAPS_PLIST_H
#define VZCAPS_PLIST_H

#include <stdbool.h>
#include <stddef.h>

/* Limits: a property list file larger than PLIST_MAX_SIZE, nested deeper than PLIST_MAX_DEPTH
 * or with more than PLIST_MAX_NODES values (a binary list may share objects) is refused. */
#define PLIST_MAX_SIZE (8 << 20)
#define PLIST_MAX_DEPTH 128
#define PLIST_MAX_NODES (1 << 20)

enum plist_type { PLIST_DICT, PLIST_ARRAY, PLIST_STRING, PLIST_INTEGER, PLIST_REAL, PLIST_BOOL, PLIST_DATE, PLIST_DATA, PLIST_UID };

struct plist {
    enum plist_type type;
    char *str;  /* STRING: UTF-8 (may hold NUL bytes; len counts them), DATA: the bytes, DATE: XML text; NUL-terminated */
    size_t len;
    long long integer; /* INTEGER, UID */
    double real;       /* REAL, and a binary DATE (seconds since 2001-01-01) */
    bool boolean;
    size_t n;              /* DICT: pairs, ARRAY: items */
    struct plist **keys;   /* DICT: STRING keys, no two alike */
    struct plist **items;  /* DICT: values; ARRAY: items */
};

/* Parses a whole property list (binary when it starts with "bplist00", else XML). The tree,
 * or NULL with one line in err ("line 3: unknown entity &foo;", "binary: object 7 ..."). */
__attribute__((warn_unused_result)) struct plist *plist_parse(const void *data, size_t len, char *err, size_t errlen);
void plist_free(struct plist *p);
/* dict's value for key, NULL when dict is not a dictionary or has no such key. */
const struct plist *plist_get(const struct plist *dict, const char *key);
/* The file at path through the one input reader (PLIST_MAX_SIZE), parsed: 0 with the tree in
 * *out; -1 with "PATH: reason" in err (*missing when it does not exist). */
__attribute__((warn_unused_result)) int plist_read_file(const char *path, struct plist **out, bool *missing, char *err,
                                                        size_t errlen);

#endif
