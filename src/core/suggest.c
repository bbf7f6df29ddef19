/* Did-you-mean, one for every name a user types (commands, options, keys, variables, sections,
 * chips, families). Owns: the edit distance and the nearest candidate. Never: allocates, does
 * I/O, or runs on a hook's path (the library calls it only in its constructor). */
#include "vzcaps_core.h"

#include <string.h>

static char fold(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Optimal string alignment distance, ASCII case folded: an edit is a letter inserted, removed,
 * replaced, or two neighbours swapped. Three rows on the stack; words over 40 bytes are far. */
int vzcaps_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int rows[3][41], *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (fold(a[i - 1]) != fold(b[j - 1]));
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            int d = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]) &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1; /* two letters swapped is one typo */
            cur[j] = d;
        }
        int *t = prev2;
        prev2 = prev, prev = cur, cur = t;
    }
    return prev[lb];
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Whether a and b hold the same numbers in the same order: a typo never changes a number
 * ("Apple M6" is a chip the table lacks, not a typo of "Apple M5"; "apple11" is not "apple1"),
 * but a number is its value: leading zeros do not make another ("apple08" is a spelling of
 * apple8). */
static bool same_digits(const char *a, const char *b)
{
    for (;;) {
        while (*a && !digit(*a))
            a++;
        while (*b && !digit(*b))
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        while (*a == '0' && digit(a[1]))
            a++;
        while (*b == '0' && digit(b[1]))
            b++;
        while (digit(*a) && *a == *b)
            a++, b++;
        if (digit(*a) || digit(*b))
            return false;
    }
}

const char *vzcaps_did_you_mean(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    int best_d = 3; /* at most two edits away */
    size_t lw = strlen(word);
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i])
            continue;
        int d = vzcaps_edit_distance(word, candidates[i]);
        /* two edits turn any short word into another ("ls" into "vm"): a word of three letters
         * or fewer may differ by one; the same word in other letter case is a suggestion too */
        if (d < best_d && (d < 2 || lw > 3) && (d > 0 || strcmp(word, candidates[i]) != 0) && same_digits(word, candidates[i]))
            best_d = d, best = candidates[i];
    }
    return best;
}
