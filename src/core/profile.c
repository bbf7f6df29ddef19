/* Settings, their resolution against the host chip, and answer().
 * Owns: the option table, every parse and clamp rule, the reason for each decision.
 * Never: lowers a stock answer; claims more than the chip has without the unsafe override. */
#include "vzcaps_core.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const key_names[VZCAPS_KEY_COUNT] = {
    [VZCAPS_KEY_APPLE_FAMILY_MAX] = "apple_family_max",
    [VZCAPS_KEY_MAX_THREADGROUP_MEMORY] = "max_threadgroup_memory",
    [VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE] = "recommended_working_set_size",
    [VZCAPS_KEY_EXTRA_FAMILIES] = "extra_families",
    [VZCAPS_KEY_HOST_CHIP] = "host_chip",
    [VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE] = "unsafe_beyond_hardware",
    [VZCAPS_KEY_INHERIT] = "inherit",
    [VZCAPS_KEY_LOG] = "log",
    [VZCAPS_KEY_CALLERS] = "callers",
    [VZCAPS_KEY_STOCK_CALLERS] = "stock_callers",
};

const char *vzcaps_key_name(enum vzcaps_key key)
{
    return (unsigned)key < VZCAPS_KEY_COUNT ? key_names[key] : NULL;
}

int vzcaps_key_from_name(const char *name)
{
    for (int k = 0; k < VZCAPS_KEY_COUNT; k++)
        if (vzcaps_streq(name, key_names[k]))
            return k;
    return -1;
}

/* A one-line reason quoting value (clipped visibly when long). */
static int fail(char *err, size_t errlen, const char *fmt, const char *value)
{
    char clipped[96];
    snprintf(err, errlen, fmt, vzcaps_clip(value, 64, clipped, sizeof clipped));
    return -1;
}

/* fail(), then " (did you mean NEAR?)" */
static int fail_near(char *err, size_t errlen, const char *fmt, const char *value, const char *near)
{
    fail(err, errlen, fmt, value);
    size_t n = strlen(err);
    snprintf(err + n, errlen - n, " (did you mean %s?)", near);
    return -1;
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"1", "yes", "true"}, *const no[] = {"0", "no", "false"};
    for (size_t i = 0; i < 3; i++) {
        if (vzcaps_streq(v, yes[i]))
            return *out = true, 0;
        if (vzcaps_streq(v, no[i]))
            return *out = false, 0;
    }
    return -1;
}

static int parse_bytes(const char *v, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    if (vzcaps_parse_u64(v, out) != 0)
        return fail(err, errlen, "\"%s\" is not a plain decimal number of bytes", v);
    if (*out == 0 || *out > max) {
        char clipped[96];
        snprintf(err, errlen, "%s is out of range (1..%llu bytes)", vzcaps_clip(v, 64, clipped, sizeof clipped),
                 (unsigned long long)max);
        return -1;
    }
    return 0;
}

static int parse_extra(struct vzcaps_settings *s, const char *v, char *err, size_t errlen)
{
    int64_t list[VZCAPS_MAX_EXTRA];
    size_t n = 0;
    const char *p = v;
    for (;;) {
        char item[32];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return fail(err, errlen, "\"%s\" is not a comma list of family names or numbers", v);
        memcpy(item, p, len);
        item[len] = '\0';
        int64_t f;
        if (vzcaps_family_parse(item, &f) != 0) {
            const char *near = vzcaps_family_suggest(item);
            int64_t nf = 0;
            if (near && vzcaps_family_parse(near, &nf) == 0 && !vzcaps_family_is_apple(nf))
                return fail_near(err, errlen, "unknown family \"%s\"", item, near);
            return fail(err, errlen, "unknown family \"%s\" (e.g. metal3, metal4, mac2, common3)", item);
        }
        if (vzcaps_family_is_apple(f))
            return fail(err, errlen, "\"%s\" is an Apple family: set Apple families with apple_family_max", item);
        bool dup = false;
        for (size_t i = 0; i < n; i++)
            dup |= list[i] == f;
        if (!dup)
            list[n++] = f; /* at most the 9 non-Apple families, below VZCAPS_MAX_EXTRA */
        p += len;
        if (!*p)
            break;
        p++;
    }
    memcpy(s->extra, list, n * sizeof list[0]);
    s->n_extra = n;
    return 0;
}

/* A list of image-name globs: blank-separated tokens of letters, digits and . _ + - * ?
 * ("none" alone: the empty list), normalised to single blanks into out. */
static int parse_globs(const char *v, char *out, char *err, size_t errlen)
{
    if (strlen(v) >= VZCAPS_GLOBS_LEN) {
        char clipped[96];
        snprintf(err, errlen, "%s: too long (limit %d bytes)", vzcaps_clip(v, 40, clipped, sizeof clipped), VZCAPS_GLOBS_LEN - 1);
        return -1;
    }
    size_t w = 0;
    for (const char *p = v; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = 0; /* letters, digits, . _ + - * ? (strspn would build a table of its set at each call) */
        while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9') ||
               (p[n] && vzcaps_find_char("._+-*?", p[n])))
            n++;
        if (p[n] && p[n] != ' ' && p[n] != '\t')
            return fail(err, errlen, "\"%s\" is not a blank-separated list of image names (letters, digits, . _ + - and the globs * ?)", v);
        if (n) {
            if (w)
                out[w++] = ' ';
            memcpy(out + w, p, n);
            w += n;
        }
        p += n;
    }
    out[w] = '\0';
    if (!w)
        return fail(err, errlen, "%s", "empty list: use none for no image");
    if (vzcaps_streq(out, "none"))
        out[0] = '\0';
    return 0;
}

/* apple_family_max: auto, off (or 0), or an Apple family (a number or appleN) */
static int set_family_max(struct vzcaps_settings *s, const char *value, char *err, size_t errlen)
{
    if (vzcaps_streq(value, "auto")) {
        s->family_mode = VZCAPS_FAMILY_AUTO;
    } else if (vzcaps_streq(value, "off") || vzcaps_streq(value, "0")) {
        s->family_mode = VZCAPS_FAMILY_OFF;
    } else {
        int64_t f;
        if (vzcaps_family_parse(value, &f) != 0 || !vzcaps_family_is_apple(f)) {
            static const char *const words[] = {"auto", "off", "apple1", "apple2", "apple3", "apple4", "apple5",
                                                "apple6", "apple7", "apple8", "apple9", "apple10"};
            const char *near = vzcaps_did_you_mean(value, words, sizeof words / sizeof words[0]);
            if (near)
                return fail_near(err, errlen, "\"%s\" is not auto, off, 0, or an Apple family 1001..1010", value, near);
            return fail(err, errlen, "\"%s\" is not auto, off, 0, or an Apple family 1001..1010 (apple1..apple10)", value);
        }
        s->family_mode = VZCAPS_FAMILY_NUMBER;
        s->family_max = f;
    }
    return 0;
}

int vzcaps_settings_set(struct vzcaps_settings *s, enum vzcaps_key key, const char *value,
                        const char *origin, char *err, size_t errlen)
{
    bool b;
    uint64_t n;
    if ((unsigned)key >= VZCAPS_KEY_COUNT)
        return fail(err, errlen, "%s", "unknown setting");
    if (!*value)
        return fail(err, errlen, "%s", "empty value");
    switch (key) {
    case VZCAPS_KEY_APPLE_FAMILY_MAX:
        if (set_family_max(s, value, err, errlen) != 0)
            return -1;
        break;
    case VZCAPS_KEY_MAX_THREADGROUP_MEMORY:
        if (parse_bytes(value, VZCAPS_MAX_THREADGROUP_LIMIT, &n, err, errlen) != 0)
            return -1;
        s->max_threadgroup_memory = n;
        break;
    case VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE:
        if (parse_bytes(value, VZCAPS_MAX_WORKING_SET_LIMIT, &n, err, errlen) != 0)
            return -1;
        s->recommended_working_set_size = n;
        break;
    case VZCAPS_KEY_EXTRA_FAMILIES:
        if (parse_extra(s, value, err, errlen) != 0)
            return -1;
        break;
    case VZCAPS_KEY_HOST_CHIP:
        if (vzcaps_copy(s->host_chip, sizeof s->host_chip, value) >= sizeof s->host_chip)
            return fail(err, errlen, "%s", "brand string longer than 127 bytes");
        break;
    case VZCAPS_KEY_INHERIT:
        s->inherit_matching = vzcaps_streq(value, "matching");
        if (s->inherit_matching) {
            s->inherit = false;
            break;
        }
        if (parse_bool(value, &b) != 0)
            return fail(err, errlen, "\"%s\" is not 1 or 0 (yes/no, true/false) or matching", value);
        s->inherit = b;
        break;
    case VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE:
        if (parse_bool(value, &b) != 0)
            return fail(err, errlen, "\"%s\" is not 1 or 0 (yes/no, true/false)", value);
        s->unsafe = b;
        break;
    case VZCAPS_KEY_LOG:
        if (!vzcaps_streq(value, "quiet") && !vzcaps_streq(value, "normal") && !vzcaps_streq(value, "verbose"))
            return fail(err, errlen, "\"%s\" is not quiet, normal or verbose", value);
        s->quiet = vzcaps_streq(value, "quiet");
        s->verbose = vzcaps_streq(value, "verbose");
        break;
    case VZCAPS_KEY_CALLERS:
        if (parse_globs(value, s->callers, err, errlen) != 0)
            return -1;
        break;
    case VZCAPS_KEY_STOCK_CALLERS:
        if (parse_globs(value, s->stock_callers, err, errlen) != 0)
            return -1;
        break;
    default:
        break;
    }
    s->set |= 1u << key;
    vzcaps_copy(s->origin[key], sizeof s->origin[key], origin);
    return 0;
}

void vzcaps_settings_reset(struct vzcaps_settings *s)
{
    memset(s, 0, offsetof(struct vzcaps_settings, origin)); /* everything before the text arrays */
    for (int k = 0; k < VZCAPS_KEY_COUNT; k++)
        s->origin[k][0] = '\0';
    s->log_file[0] = s->log_file_origin[0] = '\0';
}

void vzcaps_profile_reset(struct vzcaps_profile *p)
{
    memset(p, 0, offsetof(struct vzcaps_profile, chip_origin)); /* everything before the text arrays */
    p->chip_origin[0] = '\0';
    p->n_notes = 0;
}

static void note(struct vzcaps_profile *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void note(struct vzcaps_profile *p, const char *fmt, ...)
{
    if (p->n_notes >= VZCAPS_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *n = p->notes[p->n_notes++];
    n[0] = '\0';
    int len = vzcaps_vformat(n, VZCAPS_NOTE_LEN, fmt, ap);
    va_end(ap);
    if (len < 0 || len >= VZCAPS_NOTE_LEN)
        memcpy(n + VZCAPS_NOTE_LEN - 4, "...", 4); /* never cut silently */
}

void vzcaps_profile_refuse(struct vzcaps_profile *p, const char *reason)
{
    p->state = VZCAPS_STOCK_REFUSED;
    p->invalid = true;
    p->apple_family_max = 0;
    p->max_threadgroup_memory = p->recommended_working_set_size = 0;
    p->n_extra = 0;
    note(p, "%s", reason);
}

#define HAS(s, k) (((s)->set >> (k)) & 1u)

/* The flags and the caller scope, copied from the settings. */
static void resolve_scope(const struct vzcaps_settings *s, struct vzcaps_profile *p)
{
    p->inherit = s->inherit;
    p->quiet = s->quiet;
    p->verbose = s->verbose;
    p->inherit_matching = s->inherit_matching;
    p->unsafe = s->unsafe;
    vzcaps_copy(p->callers, sizeof p->callers, HAS(s, VZCAPS_KEY_CALLERS) ? s->callers : "*");
    vzcaps_copy(p->stock_callers, sizeof p->stock_callers,
                HAS(s, VZCAPS_KEY_STOCK_CALLERS) ? s->stock_callers : VZCAPS_DEFAULT_STOCK_CALLERS);
    p->scoped = !vzcaps_streq(p->callers, "*") || p->stock_callers[0];
    p->scope_default = vzcaps_streq(p->callers, "*") && vzcaps_streq(p->stock_callers, VZCAPS_DEFAULT_STOCK_CALLERS);
}

/* apple_family_max=auto on a host chip that is not known: refused, with the way out that
 * fits how the brand was found. */
static void refuse_auto(const struct vzcaps_settings *s, const struct vzcaps_host *host, const char *brand,
                        const char *origin, struct vzcaps_profile *p)
{
    const char *fam_origin = s->origin[VZCAPS_KEY_APPLE_FAMILY_MAX];
    char why[VZCAPS_NOTE_LEN], near[48];
    if (host && host->translated == 1)
        snprintf(why, sizeof why, "%s=auto needs the host chip, and this process runs under Rosetta, where the CPU brand (\"%s\") does not name it: start it with vzcaps run, which passes the chip it reads natively, or set VZCAPS_HOST_CHIP, e.g. \"Apple M2 Pro\"", fam_origin, brand ? brand : "none");
    else if (brand && HAS(s, VZCAPS_KEY_HOST_CHIP) && vzcaps_chip_suggest(brand, near, sizeof near))
        snprintf(why, sizeof why, "%s=auto needs a known host chip, and \"%s\" (from %s) is not one (did you mean \"%s\"?): fix %s",
                 fam_origin, brand, origin, near, origin);
    else if (brand && HAS(s, VZCAPS_KEY_HOST_CHIP))
        snprintf(why, sizeof why, "%s=auto needs a known host chip, and \"%s\" (from %s) is not one: fix %s, e.g. \"Apple M2 Pro\", or give a family number",
                 fam_origin, brand, origin, origin);
    else if (brand)
        snprintf(why, sizeof why, "%s=auto needs a known host chip, and \"%s\" (from %s) is not one: set VZCAPS_HOST_CHIP, e.g. \"Apple M2 Pro\"", fam_origin, brand, origin);
    else
        snprintf(why, sizeof why, "%s=auto needs the host chip, which could not be detected: set VZCAPS_HOST_CHIP, e.g. \"Apple M2 Pro\"", fam_origin);
    vzcaps_profile_refuse(p, why);
    p->invalid = false; /* a valid configuration this host cannot apply */
}

/* The family ceiling from apple_family_max. false: the profile is final (stock: unset, off
 * or refused); true: go on to enable it. */
static bool resolve_family(const struct vzcaps_settings *s, const struct vzcaps_host *host, const char *brand,
                           const char *origin, struct vzcaps_profile *p)
{
    const struct vzcaps_chip *chip = &p->chip;
    const char *fam_origin = s->origin[VZCAPS_KEY_APPLE_FAMILY_MAX];

    switch (s->family_mode) {
    case VZCAPS_FAMILY_UNSET:
        for (int k = 0; k < VZCAPS_KEY_COUNT; k++) {
            if (HAS(s, k) && k != VZCAPS_KEY_INHERIT && k != VZCAPS_KEY_LOG && k != VZCAPS_KEY_HOST_CHIP &&
                k != VZCAPS_KEY_CALLERS && k != VZCAPS_KEY_STOCK_CALLERS) {
                char why[VZCAPS_NOTE_LEN];
                snprintf(why, sizeof why, "%s is set but apple_family_max is not, and only it enables vzcaps: set it to auto", s->origin[k]);
                vzcaps_profile_refuse(p, why);
                return false;
            }
        }
        p->state = VZCAPS_STOCK_UNCONFIGURED;
        return false;
    case VZCAPS_FAMILY_OFF:
        p->state = VZCAPS_STOCK_OFF;
        note(p, "%s is off", fam_origin);
        return false;
    case VZCAPS_FAMILY_AUTO:
        if (!chip->known) {
            refuse_auto(s, host, brand, origin, p);
            return false;
        }
        p->apple_family_max = chip->apple_family;
        note(p, "Apple families up to %lld (%s): auto, the real family of %s (from %s)",
             (long long)p->apple_family_max, vzcaps_family_name(p->apple_family_max), chip->name, origin);
        break;
    case VZCAPS_FAMILY_NUMBER:
        p->apple_family_max = s->family_max;
        if (!chip->known)
            note(p, "Apple families up to %lld (%s) as given, not validated: host chip unknown",
                 (long long)s->family_max, vzcaps_family_name(s->family_max));
        else if (s->family_max <= chip->apple_family)
            note(p, "Apple families up to %lld (%s), within %s's %lld", (long long)s->family_max,
                 vzcaps_family_name(s->family_max), chip->name, (long long)chip->apple_family);
        else if (s->unsafe)
            note(p, "Apple families up to %lld (%s), BEYOND %s's %lld: not clamped (unsafe_beyond_hardware)",
                 (long long)s->family_max, vzcaps_family_name(s->family_max), chip->name, (long long)chip->apple_family);
        else {
            p->apple_family_max = chip->apple_family;
            note(p, "Apple families up to %lld (%s): %lld clamped to the real family of %s (from %s)",
                 (long long)chip->apple_family, vzcaps_family_name(chip->apple_family),
                 (long long)s->family_max, chip->name, origin);
        }
        break;
    }
    return true;
}

/* The two byte floors, clamped to the chip's documented limit and to physical memory. */
static void resolve_floors(const struct vzcaps_settings *s, const struct vzcaps_host *host, struct vzcaps_profile *p)
{
    const struct vzcaps_chip *chip = &p->chip;
    if (HAS(s, VZCAPS_KEY_MAX_THREADGROUP_MEMORY)) {
        uint64_t v = s->max_threadgroup_memory, lim = chip->max_threadgroup_memory;
        p->max_threadgroup_memory = v;
        if (!chip->known)
            note(p, "threadgroup memory floor %llu as given, not validated: host chip unknown", (unsigned long long)v);
        else if (v <= lim)
            note(p, "threadgroup memory floor %llu (documented limit %llu)", (unsigned long long)v, (unsigned long long)lim);
        else if (s->unsafe)
            note(p, "threadgroup memory floor %llu, BEYOND the documented %llu: not clamped", (unsigned long long)v, (unsigned long long)lim);
        else {
            p->max_threadgroup_memory = lim;
            note(p, "threadgroup memory floor %llu clamped to %llu, the documented limit of %s",
                 (unsigned long long)v, (unsigned long long)lim, chip->name);
        }
    }
    if (HAS(s, VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE)) {
        uint64_t v = s->recommended_working_set_size, mem = host ? host->physical_memory : 0;
        if (!mem && host && host->physical_memory_of)
            mem = host->physical_memory_of();
        p->recommended_working_set_size = v;
        if (!mem)
            note(p, "working-set floor %llu as given, not validated: physical memory unknown", (unsigned long long)v);
        else if (v <= mem)
            note(p, "working-set floor %llu (physical memory %llu)", (unsigned long long)v, (unsigned long long)mem);
        else {
            p->recommended_working_set_size = mem;
            note(p, "working-set floor %llu clamped to physical memory %llu", (unsigned long long)v, (unsigned long long)mem);
        }
    }
}

/* The extra families the chip has (all of them when unsafe or the chip is unknown). */
static void resolve_extras(const struct vzcaps_settings *s, struct vzcaps_profile *p)
{
    const struct vzcaps_chip *chip = &p->chip;
    for (size_t i = 0; i < s->n_extra; i++) {
        int64_t f = s->extra[i];
        const char *name = vzcaps_family_name(f);
        if (chip->known && !s->unsafe && !vzcaps_chip_has_family(chip, f)) {
            note(p, "extra family %s dropped: %s does not have it", name, chip->name);
            continue;
        }
        p->extra[p->n_extra++] = f;
        note(p, "extra family %lld (%s)%s%s", (long long)f, name, chip->known ? "" : " as given, not validated",
             f == 5001 ? " (warning: known to break MLX's residency sets)" : "");
    }
}

void vzcaps_profile_resolve(const struct vzcaps_settings *s, const struct vzcaps_host *host,
                            struct vzcaps_profile *p)
{
    vzcaps_profile_reset(p);
    resolve_scope(s, p);

    const char *brand = host ? host->brand : NULL;
    const char *origin = host && host->brand_origin ? host->brand_origin : "detection";
    if (HAS(s, VZCAPS_KEY_HOST_CHIP)) {
        brand = s->host_chip;
        origin = s->origin[VZCAPS_KEY_HOST_CHIP];
    }
    vzcaps_chip_from_brand(brand, &p->chip);
    vzcaps_copy(p->chip_origin, sizeof p->chip_origin, brand ? origin : "none");

    if (!resolve_family(s, host, brand, origin, p))
        return;
    p->state = VZCAPS_ENABLED;
    if (!p->scope_default)
        note(p, "for calls from images %s, except %s (stock answers)", p->callers[0] ? p->callers : "none",
             p->stock_callers[0] ? p->stock_callers : "none");
    if (s->unsafe)
        note(p, "unsafe_beyond_hardware is set (%s): claims are not clamped to the host chip", s->origin[VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE]);
    resolve_floors(s, host, p);
    resolve_extras(s, p);
}

const char *vzcaps_caller_rule(const struct vzcaps_profile *p, const char *image)
{
    if (vzcaps_globs_fit(p->stock_callers, image ? image : ""))
        return "stock_callers";
    return vzcaps_globs_fit(p->callers, image ? image : "") ? "callers" : "not in callers";
}

bool vzcaps_caller_in_scope(const struct vzcaps_profile *p, const char *image)
{
    return !p->scoped || vzcaps_streq(vzcaps_caller_rule(p, image), "callers");
}

void vzcaps_profile_describe(const struct vzcaps_profile *p, const char *exe, char *buf, size_t len)
{
    buf[0] = '\0';
    switch (p->state) {
    case VZCAPS_ENABLED:
        vzcaps_appendf(buf, len, "configured for %s: ", exe);
        break;
    case VZCAPS_STOCK_REFUSED:
        vzcaps_appendf(buf, len, "left stock for %s: ", exe);
        break;
    default:
        vzcaps_appendf(buf, len, "stock for %s%s", exe, p->n_notes ? ": " : "");
        break;
    }
    for (size_t i = 0; i < p->n_notes; i++)
        vzcaps_appendf(buf, len, "%s%s", i ? "; " : "", p->notes[i]);
}

bool vzcaps_query_needed(const struct vzcaps_profile *p, enum vzcaps_query q)
{
    if (p->state != VZCAPS_ENABLED)
        return false;
    switch (q) {
    case VZCAPS_Q_SUPPORTS_FAMILY:
        return true;
    case VZCAPS_Q_MAX_THREADGROUP_MEMORY:
        return p->max_threadgroup_memory != 0;
    case VZCAPS_Q_RECOMMENDED_WORKING_SET:
        return p->recommended_working_set_size != 0;
    }
    return false;
}

/* vzcaps_answer's rules as ranges (the Apple families up to the ceiling, then the extras): a
 * few stores, not 4,002 answers, at the first device */
void vzcaps_family_table(const struct vzcaps_profile *p, unsigned char table[VZCAPS_FAMILY_TABLE_LEN])
{
    memset(table, 0, VZCAPS_FAMILY_TABLE_LEN);
    if (p->state != VZCAPS_ENABLED)
        return;
    for (int64_t f = VZCAPS_APPLE_FIRST; f <= p->apple_family_max && f <= VZCAPS_APPLE_LAST; f++)
        table[f - VZCAPS_FAMILY_TABLE_FIRST] = 1;
    for (size_t i = 0; i < p->n_extra; i++)
        if (!vzcaps_family_is_apple(p->extra[i]) && (uint64_t)(p->extra[i] - VZCAPS_FAMILY_TABLE_FIRST) < VZCAPS_FAMILY_TABLE_LEN)
            table[p->extra[i] - VZCAPS_FAMILY_TABLE_FIRST] = 1;
}

uint64_t vzcaps_answer(const struct vzcaps_profile *p, enum vzcaps_query q, int64_t arg, uint64_t stock)
{
    if (p->state != VZCAPS_ENABLED)
        return stock;
    switch (q) {
    case VZCAPS_Q_SUPPORTS_FAMILY:
        if (stock)
            return stock; /* a supported answer is never turned into unsupported */
        if (vzcaps_family_is_apple(arg))
            return arg <= p->apple_family_max;
        for (size_t i = 0; i < p->n_extra; i++)
            if (p->extra[i] == arg)
                return 1;
        return stock;
    case VZCAPS_Q_MAX_THREADGROUP_MEMORY:
        return stock > p->max_threadgroup_memory ? stock : p->max_threadgroup_memory;
    case VZCAPS_Q_RECOMMENDED_WORKING_SET:
        return stock > p->recommended_working_set_size ? stock : p->recommended_working_set_size;
    }
    return stock;
}
