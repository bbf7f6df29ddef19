/* Config files with named profiles, and the one configuration step shared by the library
 * and the command: where the file is, which section applies, which variables override it.
 * Never: opens files or reads the real environment (callers hand both in). */
#include "vzcaps_core.h"

#include <stdio.h>
#include <string.h>

#define MAX_SECTIONS 64

struct line_view {
    const char *p;
    size_t n;
};

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static struct line_view trim(const char *p, size_t n)
{
    while (n && is_blank(*p))
        p++, n--;
    while (n && is_blank(p[n - 1]))
        n--;
    return (struct line_view){p, n};
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* Whether any whitespace-separated pattern of a match value fits exe. */
static bool match_fits(const char *value, const char *exe)
{
    char pat[VZCAPS_CONFIG_MAX_LINE];
    const char *p = value;
    while (*p) {
        while (is_blank(*p))
            p++;
        size_t n = 0;
        while (p[n] && !is_blank(p[n]))
            n++;
        if (n) {
            memcpy(pat, p, n);
            pat[n] = '\0';
            if (exe && vzcaps_glob_match(pat, exe))
                return true;
        }
        p += n;
    }
    return false;
}

struct parse_state {
    const char *file;
    const char *exe;
    char names[MAX_SECTIONS][64];
    int n_sections;
    int chosen_by_match;  /* first section whose match fits, -1 */
    int apply_section;    /* pass 2: section whose keys go into *out, -1 for none */
    struct vzcaps_settings *out;
};

/* One pass over the file. Pass 1 (st->out == NULL) validates everything; pass 2 applies. */
static int parse(const char *text, size_t len, struct parse_state *st, char *err, size_t errlen)
{
    struct vzcaps_settings scratch;
    unsigned line_no = 0;
    int section = -1;
    size_t pos = 0;
    while (pos < len) {
        line_no++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl != NULL);
#define BAD(...) do { snprintf(err, errlen, "%s:%u: ", st->file, line_no); \
        vzcaps_appendf(err, errlen, __VA_ARGS__); return -1; } while (0)
        if (n > VZCAPS_CONFIG_MAX_LINE)
            BAD("line longer than %d bytes", VZCAPS_CONFIG_MAX_LINE);
        if (memchr(start, '\0', n))
            BAD("NUL byte: not a text file");
        char line[VZCAPS_CONFIG_MAX_LINE + 1];
        memcpy(line, start, n);
        line[n] = '\0';
        /* a '#' at the start or after a blank starts a comment */
        for (size_t i = 0; i < n; i++)
            if (line[i] == '#' && (i == 0 || is_blank(line[i - 1]))) {
                line[i] = '\0';
                break;
            }
        struct line_view v = trim(line, strlen(line));
        if (v.n == 0)
            continue;
        if (v.p[0] == '[') {
            if (v.p[v.n - 1] != ']' || v.n < 3)
                BAD("bad section header: expected [name]");
            size_t nn = v.n - 2;
            if (nn >= sizeof st->names[0])
                BAD("section name longer than %zu bytes", sizeof st->names[0] - 1);
            for (size_t i = 0; i < nn; i++)
                if (!name_char(v.p[1 + i]))
                    BAD("bad section name: use letters, digits, '_', '-' and '.'");
            if (st->n_sections >= MAX_SECTIONS)
                BAD("more than %d sections", MAX_SECTIONS);
            char name[64];
            memcpy(name, v.p + 1, nn);
            name[nn] = '\0';
            for (int i = 0; i < st->n_sections; i++)
                if (strcmp(st->names[i], name) == 0)
                    BAD("duplicate section [%s]", name);
            section = st->n_sections++;
            strcpy(st->names[section], name);
            memset(&scratch, 0, sizeof scratch);
            continue;
        }
        const char *eq = memchr(v.p, '=', v.n);
        if (!eq)
            BAD("expected key = value or [section]");
        struct line_view k = trim(v.p, (size_t)(eq - v.p));
        struct line_view val = trim(eq + 1, v.n - (size_t)(eq + 1 - v.p));
        char key[64], value[VZCAPS_CONFIG_MAX_LINE + 1];
        if (k.n == 0 || k.n >= sizeof key)
            BAD("missing or overlong key");
        memcpy(key, k.p, k.n);
        key[k.n] = '\0';
        memcpy(value, val.p, val.n);
        value[val.n] = '\0';
        if (section < 0)
            BAD("%s outside a section: start one with [name]", key);
        if (strcmp(key, "match") == 0) {
            if (scratch.set & (1u << VZCAPS_KEY_COUNT))
                BAD("duplicate key match in [%s]", st->names[section]);
            if (val.n == 0)
                BAD("empty match");
            scratch.set |= 1u << VZCAPS_KEY_COUNT;
            if (st->chosen_by_match < 0 && match_fits(value, st->exe))
                st->chosen_by_match = section;
            continue;
        }
        int kk = vzcaps_key_from_name(key);
        if (kk < 0)
            BAD("unknown key %s", key);
        if (scratch.set & (1u << kk))
            BAD("duplicate key %s in [%s]", key, st->names[section]);
        char origin[VZCAPS_ORIGIN_LEN], why[VZCAPS_NOTE_LEN];
        snprintf(origin, sizeof origin, "%s:%u", st->file, line_no);
        if (vzcaps_settings_set(&scratch, (enum vzcaps_key)kk, value, origin, why, sizeof why) != 0)
            BAD("%s: %s", key, why);
        if (st->out && section == st->apply_section)
            vzcaps_settings_set(st->out, (enum vzcaps_key)kk, value, origin, why, sizeof why);
#undef BAD
    }
    return 0;
}

int vzcaps_config_apply(const char *text, size_t len, const char *file, const char *exe,
                        const char *profile, struct vzcaps_settings *s, char *section,
                        size_t section_len, char *err, size_t errlen)
{
    static struct parse_state st; /* large: kept off the stack; configuration runs once */
    memset(&st, 0, sizeof st);
    st.file = file;
    st.exe = exe;
    st.chosen_by_match = -1;
    st.apply_section = -1;
    if (parse(text, len, &st, err, errlen) != 0)
        return -1;
    int chosen = -1;
    if (profile) {
        for (int i = 0; i < st.n_sections; i++)
            if (strcmp(st.names[i], profile) == 0)
                chosen = i;
        if (chosen < 0) {
            snprintf(err, errlen, "%s: no section [%.64s] (asked for by the profile)", file, profile);
            return -1;
        }
    } else if (st.chosen_by_match >= 0) {
        chosen = st.chosen_by_match;
    } else {
        for (int i = 0; i < st.n_sections; i++)
            if (strcmp(st.names[i], "default") == 0)
                chosen = i;
    }
    snprintf(section, section_len, "%s", chosen >= 0 ? st.names[chosen] : "");
    if (chosen < 0)
        return 0;
    st.out = s;
    st.apply_section = chosen;
    st.n_sections = 0;
    st.chosen_by_match = -1;
    return parse(text, len, &st, err, errlen);
}

/* ---- the configuration step ---- */

static const char *const env_prefixes[] = {"VZCAPS_", "TART_METAL_", "LUME_METAL_"};
/* the compatibility variables of the existing shims */
static const enum vzcaps_key compat_keys[] = {
    VZCAPS_KEY_APPLE_FAMILY_MAX, VZCAPS_KEY_MAX_THREADGROUP_MEMORY, VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE};

static bool env_name(const char *entry, char *name, size_t len)
{
    const char *eq = strchr(entry, '=');
    if (!eq || (size_t)(eq - entry) >= len)
        return false;
    memcpy(name, entry, (size_t)(eq - entry));
    name[eq - entry] = '\0';
    return true;
}

static bool compat_key_allowed(int k)
{
    for (size_t i = 0; i < sizeof compat_keys / sizeof compat_keys[0]; i++)
        if ((int)compat_keys[i] == k)
            return true;
    return false;
}

void vzcaps_configure(const struct vzcaps_inputs *in, char *file_buf, size_t file_cap,
                      struct vzcaps_config_result *out)
{
    static struct vzcaps_settings s; /* large: kept off the stack */
    char err[VZCAPS_NOTE_LEN], name[128];
    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);

    /* Which variable family speaks: VZCAPS_* if any is set, else the first compatible one. */
    const char *prefix = NULL;
    for (size_t i = 0; i < sizeof env_prefixes / sizeof env_prefixes[0] && !prefix; i++)
        for (const char *const *e = in->envp; e && *e && !prefix; e++)
            if (env_name(*e, name, sizeof name) && strncmp(name, env_prefixes[i], strlen(env_prefixes[i])) == 0 &&
                (i == 0 || compat_key_allowed(vzcaps_key_from_env_name(name, env_prefixes[i]))))
                prefix = env_prefixes[i];
    snprintf(out->env_prefix, sizeof out->env_prefix, "%s", prefix ? prefix : "");
    bool ours = prefix && strcmp(prefix, "VZCAPS_") == 0;

    /* Unknown VZCAPS_* names are typos: refuse rather than run stock silently. */
    for (const char *const *e = in->envp; ours && e && *e; e++) {
        if (!env_name(*e, name, sizeof name) || strncmp(name, "VZCAPS_", 7) != 0)
            continue;
        if (vzcaps_key_from_env_name(name, "VZCAPS_") < 0 && strcmp(name, "VZCAPS_CONFIG") != 0 &&
            strcmp(name, "VZCAPS_PROFILE") != 0) {
            snprintf(err, sizeof err, "unknown variable %.60s (known: VZCAPS_APPLE_FAMILY_MAX, VZCAPS_MAX_THREADGROUP_MEMORY, ... see vzcaps help)", name);
            vzcaps_profile_refuse(&out->profile, err);
            return;
        }
    }

    /* 1. the config file: VZCAPS_CONFIG, else ~/.config/vzcaps/vzcaps.conf, else /usr/local/etc/vzcaps.conf */
    const char *named = vzcaps_env_get(in->envp, "VZCAPS_CONFIG");
    const char *home = vzcaps_env_get(in->envp, "HOME");
    char candidates[2][512];
    int n_cand = 0;
    if (named) {
        snprintf(candidates[n_cand++], sizeof candidates[0], "%s", named);
    } else {
        if (home && *home)
            snprintf(candidates[n_cand++], sizeof candidates[0], "%s/.config/vzcaps/vzcaps.conf", home);
        snprintf(candidates[n_cand++], sizeof candidates[0], "%s", "/usr/local/etc/vzcaps.conf");
    }
    for (int i = 0; i < n_cand && in->read_file; i++) {
        size_t len = 0;
        bool missing = false;
        if (in->read_file(in->read_ctx, candidates[i], file_buf, file_cap, &len, &missing, err, sizeof err) != 0) {
            if (missing && !named)
                continue;
            char why[VZCAPS_NOTE_LEN + 600];
            snprintf(why, sizeof why, "%s: %s%s", candidates[i], err, named ? " (named by VZCAPS_CONFIG)" : "");
            vzcaps_profile_refuse(&out->profile, why);
            return;
        }
        snprintf(out->config_path, sizeof out->config_path, "%s", candidates[i]);
        char cerr[VZCAPS_NOTE_LEN];
        if (vzcaps_config_apply(file_buf, len, candidates[i], in->exe, vzcaps_env_get(in->envp, "VZCAPS_PROFILE"), &s,
                                out->section, sizeof out->section, cerr, sizeof cerr) != 0) {
            vzcaps_profile_refuse(&out->profile, cerr);
            return;
        }
        break;
    }
    if (!out->config_path[0] && vzcaps_env_get(in->envp, "VZCAPS_PROFILE")) {
        vzcaps_profile_refuse(&out->profile, "VZCAPS_PROFILE is set but no config file was found");
        return;
    }

    /* 2. variables override the file */
    for (const char *const *e = in->envp; prefix && e && *e; e++) {
        if (!env_name(*e, name, sizeof name))
            continue;
        int k = vzcaps_key_from_env_name(name, prefix);
        if (k < 0 || (!ours && !compat_key_allowed(k)))
            continue;
        char why[VZCAPS_NOTE_LEN], msg[VZCAPS_NOTE_LEN + 160];
        if (vzcaps_settings_set(&s, (enum vzcaps_key)k, strchr(*e, '=') + 1, name, why, sizeof why) != 0) {
            snprintf(msg, sizeof msg, "%s: %s; fix or unset it", name, why);
            vzcaps_profile_refuse(&out->profile, msg);
            return;
        }
    }

    vzcaps_profile_resolve(&s, &in->host, &out->profile);
    if (out->section[0] && out->profile.n_notes < VZCAPS_MAX_NOTES && out->profile.state != VZCAPS_STOCK_UNCONFIGURED) {
        /* name the section first: it explains every later note */
        struct vzcaps_profile *p = &out->profile;
        memmove(p->notes[1], p->notes[0], p->n_notes * sizeof p->notes[0]);
        snprintf(p->notes[0], sizeof p->notes[0], "profile [%s] of %.120s", out->section, out->config_path);
        p->n_notes++;
    }
}
