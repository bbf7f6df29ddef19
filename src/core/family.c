/* GPU family numbering and names (METAL-FACTS: "Metal GPU families").
 * Owns: the family table and parsing a family by name or number. Never: any I/O. */
#include "vzcaps_core.h"

#include <ctype.h>
#include <string.h>

static const int64_t families[] = {
    1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,
    2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002,
};

static const char *const names[] = {
    "Apple1", "Apple2", "Apple3", "Apple4", "Apple5", "Apple6", "Apple7", "Apple8", "Apple9", "Apple10",
    "Mac1", "Mac2", "Common1", "Common2", "Common3", "MacCatalyst1", "MacCatalyst2", "Metal3", "Metal4",
};

_Static_assert(sizeof families / sizeof families[0] == sizeof names / sizeof names[0], "family table");
/* the library answers from a table over these values (vzcaps_family_table) */
_Static_assert(VZCAPS_FAMILY_TABLE_FIRST == 1001 && VZCAPS_FAMILY_TABLE_FIRST + VZCAPS_FAMILY_TABLE_LEN - 1 == 5002,
               "the family answer table covers every known family");

const int64_t *vzcaps_family_all(size_t *count)
{
    *count = sizeof families / sizeof families[0];
    return families;
}

const char *vzcaps_family_name(int64_t value)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (families[i] == value)
            return names[i];
    return NULL;
}

bool vzcaps_family_is_apple(int64_t value)
{
    return value >= VZCAPS_APPLE_FIRST && value <= VZCAPS_APPLE_LAST;
}

int vzcaps_family_parse(const char *text, int64_t *out)
{
    uint64_t n;
    if (vzcaps_parse_u64(text, &n) == 0) {
        if (n > INT64_MAX || !vzcaps_family_name((int64_t)n))
            return -1;
        *out = (int64_t)n;
        return 0;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *a = names[i], *b = text;
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b))
            a++, b++;
        if (!*a && !*b) {
            *out = families[i];
            return 0;
        }
    }
    return -1;
}

const char *vzcaps_family_suggest(const char *text)
{
    return vzcaps_did_you_mean(text, names, sizeof names / sizeof names[0]);
}
