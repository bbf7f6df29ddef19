/* The chip table: from a CPU brand string to the Apple family and limits it really has.
 * Owns: chip recognition (METAL-FACTS: "the real family of a host is a function of its chip
 * generation"). Never: guesses for an unknown generation; any I/O. */
#include "vzcaps_core.h"

#include <stdio.h>
#include <ctype.h>
#include <string.h>

/* M1 -> Apple7, M2 -> Apple8, M3 and M4 -> Apple9, M5 -> Apple10. */
static const int64_t family_of_generation[] = {0, 1007, 1008, 1009, 1009, 1010};
#define MAX_GENERATION 5
/* "maximum total threadgroup memory is 32 KB for Apple4..Apple9, Metal3, Metal4 and Mac";
 * Apple10's limit is not published, so M5 is held at the same 32 KB (never above). */
#define DOCUMENTED_THREADGROUP_MEMORY 32768u

static int ncase_cmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 1;
    return 0;
}

static const char *const variants[] = {"Pro", "Max", "Ultra"};

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
    snprintf(out->name, sizeof out->name, "%.*s", (int)(len < 47 ? len : 47), brand);

    static const char virt[] = " (Virtual)";
    if (len >= sizeof virt - 1 && ncase_cmp(brand + len - (sizeof virt - 1), virt, sizeof virt - 1) == 0) {
        out->guest = true;
        len -= sizeof virt - 1;
    }
    /* "Apple M<generation>[ <variant>]" */
    if (len < 8 || ncase_cmp(brand, "Apple M", 7) != 0)
        return;
    size_t i = 7;
    int gen = 0;
    while (i < len && brand[i] >= '0' && brand[i] <= '9' && gen < 1000)
        gen = gen * 10 + (brand[i++] - '0');
    if (i == 7 || brand[7] == '0')
        return;
    const char *variant = "";
    if (i < len) {
        if (brand[i] != ' ')
            return;
        i++;
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
            if (len - i == strlen(variants[v]) && ncase_cmp(brand + i, variants[v], len - i) == 0)
                variant = variants[v];
        if (!*variant)
            return;
    }
    if (gen > MAX_GENERATION)
        return; /* a future chip: no safe answer */
    out->known = true;
    out->generation = gen;
    out->apple_family = family_of_generation[gen];
    out->max_threadgroup_memory = DOCUMENTED_THREADGROUP_MEMORY;
    snprintf(out->name, sizeof out->name, "Apple M%d%s%s", gen, *variant ? " " : "", variant);
}

bool vzcaps_chip_has_family(const struct vzcaps_chip *chip, int64_t family)
{
    if (!chip->known)
        return false;
    if (vzcaps_family_is_apple(family))
        return family <= chip->apple_family;
    /* Every M-series Mac reports Mac2 (and so Mac1), Common1..3, MacCatalyst, Metal3;
     * Metal4 on macOS 26 (a bare-metal M1 Ultra reports it). */
    return vzcaps_family_name(family) != NULL;
}
