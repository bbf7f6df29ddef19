/* The chip table: from a CPU brand string to the Apple family and limits it really has.
 * Owns: chip recognition (METAL-FACTS: "the real family of a host is a function of its chip
 * generation"). Never: guesses for an unknown generation; any I/O. */
#include "vzcaps_core.h"

#include <stdio.h>
#include <string.h>

/* "maximum total threadgroup memory is 32 KB for Apple4..Apple9, Metal3, Metal4 and Mac";
 * Apple10's limit is not published, so M5 and A19 are held at the same 32 KB (never above). */
#define DOCUMENTED_THREADGROUP_MEMORY 32768u

/* One row a chip generation. Brand strings, as machdep.cpu.brand_string reports them:
 * "Apple M2 Pro" on a host, "Apple M2 Pro (Virtual)" in a guest; "Apple A18 Pro" and
 * "Apple A18 Pro (Virtual)" likewise (a MacBook Neo host). A chip is added only with its
 * source: a row without one is a guess, and an unknown chip has no safe answer. */
#define FEATURE_TABLES_2026 "Apple, Metal feature set tables, May 2026"
static const struct chip_row {
    char series;                 /* 'M' or 'A' */
    int generation;
    const char *variants;        /* the suffixes the series uses, space-separated */
    int64_t apple_family;
    const char *source;
} chip_rows[] = {
    {'M', 1, "Pro Max Ultra", 1007, FEATURE_TABLES_2026 ": M1 is Apple7"},
    {'M', 2, "Pro Max Ultra", 1008, FEATURE_TABLES_2026 ": M2 is Apple8"},
    {'M', 3, "Pro Max Ultra", 1009, FEATURE_TABLES_2026 ": M3 is Apple9"},
    {'M', 4, "Pro Max Ultra", 1009, FEATURE_TABLES_2026 ": M4 is Apple9"},
    {'M', 5, "Pro Max Ultra", 1010, FEATURE_TABLES_2026 ": M5 is Apple10"},
    {'A', 18, "Pro", 1009, FEATURE_TABLES_2026 ": the A18 series is Apple9"},
    {'A', 19, "Pro", 1010, FEATURE_TABLES_2026 ": the A19 series is Apple10"},
};

/* ASCII case only: brand strings are ASCII, and the result must not depend on the locale */
static int fold(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int ncase_cmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fold((unsigned char)a[i]) != fold((unsigned char)b[i]))
            return 1;
    return 0;
}

/* The variant of `row` spelled by brand[0..len), or NULL. */
static const char *row_variant(const struct chip_row *row, const char *brand, size_t len)
{
    for (const char *v = row->variants; *v;) {
        size_t n = strcspn(v, " ");
        if (n == len && ncase_cmp(brand, v, n) == 0)
            return v;
        v += n;
        while (*v == ' ')
            v++;
    }
    return NULL;
}

const char *vzcaps_chip_source(const struct vzcaps_chip *chip)
{
    for (size_t r = 0; r < sizeof chip_rows / sizeof chip_rows[0]; r++)
        if (chip->known && chip_rows[r].series == chip->series && chip_rows[r].generation == chip->generation)
            return chip_rows[r].source;
    return NULL;
}

/* "Apple <series><generation>[ <variant>]", the variant up to its first space, cut to fit as
 * snprintf would (out: len bytes, NUL-terminated) */
static void canonical_name(char *out, size_t len, char series, int gen, const char *variant)
{
    char buf[64], digits[12];
    size_t n = 0, d = 0;
    memcpy(buf, "Apple ", 6);
    n = 6;
    buf[n++] = series;
    do
        digits[d++] = (char)('0' + gen % 10);
    while ((gen /= 10) > 0 && d < sizeof digits);
    while (d)
        buf[n++] = digits[--d];
    if (variant) {
        buf[n++] = ' ';
        for (const char *v = variant; *v && *v != ' ' && n < sizeof buf - 1; v++)
            buf[n++] = *v;
    }
    if (n > len - 1)
        n = len - 1;
    memcpy(out, buf, n);
    out[n] = '\0';
}

void vzcaps_chip_from_brand(const char *brand, struct vzcaps_chip *out)
{
    memset(out, 0, sizeof *out);
    if (!brand)
        return;
    while (*brand == ' ' || *brand == '\t')
        brand++;
    size_t len = strlen(brand);
    while (len && (brand[len - 1] == ' ' || brand[len - 1] == '\t' || brand[len - 1] == '\n'))
        len--;
    /* by hand, not snprintf: this runs in every process the library starts in */
    memcpy(out->name, brand, len < sizeof out->name - 1 ? len : sizeof out->name - 1); /* out is zeroed */

    static const char virt[] = " (Virtual)";
    if (len >= sizeof virt - 1 && ncase_cmp(brand + len - (sizeof virt - 1), virt, sizeof virt - 1) == 0) {
        out->guest = true;
        len -= sizeof virt - 1;
    }
    /* "Apple <series><generation>[ <variant>]" */
    if (len < 8 || ncase_cmp(brand, "Apple ", 6) != 0)
        return;
    /* ASCII upper case by hand: the injected library imports nothing it does not need */
    char series = brand[6] >= 'a' && brand[6] <= 'z' ? (char)(brand[6] - 'a' + 'A') : brand[6];
    size_t i = 7;
    int gen = 0;
    while (i < len && brand[i] >= '0' && brand[i] <= '9' && gen < 1000)
        gen = gen * 10 + (brand[i++] - '0');
    if (i == 7 || brand[7] == '0')
        return;
    const char *variant_at = brand + len, *variant = NULL;
    size_t variant_len = 0;
    if (i < len) {
        if (brand[i] != ' ')
            return;
        variant_at = brand + i + 1;
        variant_len = len - i - 1;
    }
    for (size_t r = 0; r < sizeof chip_rows / sizeof chip_rows[0]; r++) {
        const struct chip_row *row = &chip_rows[r];
        if (row->series != series || row->generation != gen)
            continue;
        if (variant_len && !(variant = row_variant(row, variant_at, variant_len)))
            return; /* a suffix this series does not have */
        out->known = true;
        out->series = series;
        out->generation = gen;
        out->apple_family = row->apple_family;
        out->max_threadgroup_memory = DOCUMENTED_THREADGROUP_MEMORY;
        canonical_name(out->name, sizeof out->name, series, gen, variant);
        return;
    }
    /* a chip not in the table (a future one, or a series Macs do not use): no safe answer */
}

bool vzcaps_chip_has_family(const struct vzcaps_chip *chip, int64_t family)
{
    if (!chip->known)
        return false;
    if (vzcaps_family_is_apple(family))
        return family <= chip->apple_family;
    /* Every Apple-silicon Mac reports Mac2 (and so Mac1), Common1..3, MacCatalyst, Metal3;
     * Metal4 on macOS 26 (a bare-metal M1 Ultra reports it). */
    return vzcaps_family_name(family) != NULL;
}

bool vzcaps_chip_suggest(const char *text, char *out, size_t len)
{
    struct vzcaps_chip c;
    char buf[160];
    while (*text == ' ' || *text == '\t')
        text++;
    if (strlen(text) > 100)
        return false;
    /* the brand without its "Apple " ("M2 Pro", "m2 pro"): the chip it names */
    if (ncase_cmp(text, "Apple ", 6) != 0) {
        snprintf(buf, sizeof buf, "Apple %s", text);
        vzcaps_chip_from_brand(buf, &c);
        if (c.known)
            return snprintf(out, len, "%s", c.name), true;
    }
    /* a typo of a brand in the table ("Apple M2 Por", "Aple M4 Max") */
    char names[sizeof chip_rows / sizeof chip_rows[0] * 4][24];
    const char *cands[sizeof names / sizeof names[0]];
    size_t n = 0;
    for (size_t r = 0; r < sizeof chip_rows / sizeof chip_rows[0]; r++) {
        const struct chip_row *row = &chip_rows[r];
        for (const char *v = row->variants, *at = NULL; n < sizeof names / sizeof names[0]; at = v) {
            size_t vn = at ? strcspn(at, " ") : 0; /* the bare name first, then each variant */
            snprintf(names[n], sizeof names[n], "Apple %c%d%s%.*s", row->series, row->generation, at ? " " : "",
                     (int)vn, at ? at : "");
            cands[n] = names[n];
            n++;
            if (at)
                for (v = at + vn; *v == ' '; v++)
                    ;
            if (!*v)
                break;
        }
    }
    size_t tl = strlen(text);
    static const char virt[] = " (Virtual)";
    if (tl >= sizeof virt - 1 && ncase_cmp(text + tl - (sizeof virt - 1), virt, sizeof virt - 1) == 0)
        tl -= sizeof virt - 1;
    snprintf(buf, sizeof buf, "%.*s", (int)tl, text);
    const char *near = vzcaps_did_you_mean(buf, cands, n);
    if (!near)
        return false;
    snprintf(out, len, "%s", near);
    return true;
}
