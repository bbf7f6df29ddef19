/* Config files with named profiles, and the one configuration step shared by the library
 * and the command: where the file is, which section applies, which variables override it.
 * Never: opens files or reads the real environment (callers hand both in). */
#include "vzcaps_core.h"

#include <stddef.h>
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

struct parse_state {
    const char *file;
    const char *exe;
    const char *profile;  /* the section asked for by name, or NULL */
    char names[MAX_SECTIONS][64];
    unsigned key_at[VZCAPS_KEY_COUNT]; /* the line of each key of the section being read */
    int n_sections;
    int chosen_by_match;  /* first section whose match fits, -1 */
    int apply_section;    /* the section whose keys go into *out as they are read, -1 for none */
    struct vzcaps_settings *out;
    char log_file[VZCAPS_PATH_MAX + 1], log_file_origin[VZCAPS_ORIGIN_LEN]; /* top level */
};

/* Keys of the file's top level (before any section): log_file. 1 when key is one (st keeps
 * it), 0 when it is not, -1 with the reason in why. */
static int top_level_key(struct parse_state *st, int section, unsigned line_no, const char *key, const char *value,
                         char *why, size_t len)
{
    static const char *const top[] = {"log_file"};
    if (section < 0 && vzcaps_did_you_mean(key, top, 1))
        return snprintf(why, len, "unknown key %s (did you mean log_file?)", key), -1;
    if (!vzcaps_streq(key, "log_file"))
        return 0;
    if (section >= 0)
        return snprintf(why, len, "log_file inside [%s]: it belongs at the top of the file, before any section",
                        st->names[section]), -1;
    if (st->log_file_origin[0])
        return snprintf(why, len, "duplicate key log_file"), -1;
    char bad[VZCAPS_NOTE_LEN / 2];
    if (vzcaps_log_file_check(value, bad, sizeof bad) != 0)
        return snprintf(why, len, "log_file: %s", bad), -1;
    vzcaps_copy(st->log_file, sizeof st->log_file, value);
    st->log_file_origin[0] = '\0';
    vzcaps_appendf(st->log_file_origin, sizeof st->log_file_origin, "%s:%llu: log_file", st->file, (unsigned long long)line_no);
    return 1;
}

/* static: kept off the stack (the library's frames stay under 4 KiB); configuration runs once */
static struct vzcaps_settings scratch; /* the keys of the section being read */
static char line_buf[VZCAPS_CONFIG_MAX_LINE + 1];
static char origin_buf[VZCAPS_ORIGIN_LEN], why_buf[VZCAPS_NOTE_LEN];

#define IN_NO_SECTION (-1)  /* before the first [section] */
#define IN_BAD_SECTION (-2) /* after a refused header: keys are checked, not applied or compared */

/* The n bytes at start as a line without its comment, trimmed, into *v (in line_buf): 0, or -1
 * with why. */
static int config_line(const char *start, size_t n, bool nul, struct line_view *v, char *why, size_t whylen)
{
    if (n > VZCAPS_CONFIG_MAX_LINE)
        return snprintf(why, whylen, "line longer than %d bytes", VZCAPS_CONFIG_MAX_LINE), -1;
    if (nul && memchr(start, '\0', n))
        return snprintf(why, whylen, "NUL byte: not a text file"), -1;
    size_t end = 0; /* a '#' at the start or after a blank starts a comment */
    while (end < n && !(start[end] == '#' && (end == 0 || is_blank(start[end - 1]))))
        end++;
    struct line_view t = trim(start, end);
    memcpy(line_buf, t.p, t.n);
    line_buf[t.n] = '\0';
    *v = (struct line_view){line_buf, t.n};
    return 0;
}

/* A [name] line: the new section's index, or -1 with why. */
static int section_header(struct parse_state *st, struct line_view v, char *why, size_t whylen)
{
    if (v.p[v.n - 1] != ']' || v.n < 3)
        return snprintf(why, whylen, "bad section header: expected [name]"), -1;
    size_t nn = v.n - 2;
    if (nn >= sizeof st->names[0])
        return snprintf(why, whylen, "section name longer than %zu bytes", sizeof st->names[0] - 1), -1;
    for (size_t i = 0; i < nn; i++)
        if (!name_char(v.p[1 + i]))
            return snprintf(why, whylen, "bad section name: use letters, digits, '_', '-' and '.'"), -1;
    if (st->n_sections >= MAX_SECTIONS)
        return snprintf(why, whylen, "more than %d sections", MAX_SECTIONS), -1;
    char *name = st->names[st->n_sections];
    ((char *)v.p)[v.n - 1] = '\0'; /* the ']' (the line is line_buf's) */
    vzcaps_copy(name, sizeof st->names[0], v.p + 1);
    for (int i = 0; i < st->n_sections; i++)
        if (vzcaps_streq(st->names[i], name))
            return snprintf(why, whylen, "duplicate section [%s]", name), -1;
    return st->n_sections++;
}

static int unknown_key(const char *key, char *why, size_t whylen)
{
    const char *known[VZCAPS_KEY_COUNT + 2] = {"match", "log_file"};
    for (int k = 0; k < VZCAPS_KEY_COUNT; k++)
        known[k + 2] = vzcaps_key_name((enum vzcaps_key)k);
    const char *near = vzcaps_did_you_mean(key, known, VZCAPS_KEY_COUNT + 2);
    if (near)
        snprintf(why, whylen, "unknown key %s (did you mean %s?)", key, near);
    else
        snprintf(why, whylen, "unknown key %s", key);
    return -1;
}

/* "file:line: key" of key k of the section being read, in origin_buf: made only for the keys of
 * the section that applies (it names the key, as a variable does) */
static const char *origin_of(const struct parse_state *st, int k)
{
    origin_buf[0] = '\0';
    return vzcaps_appendf(origin_buf, sizeof origin_buf, "%s:%llu: %s", st->file, (unsigned long long)st->key_at[k],
                          vzcaps_key_name((enum vzcaps_key)k));
}

/* st->out = the keys the section being read gave so far, with their origins */
static void settings_take(const struct parse_state *st)
{
    struct vzcaps_settings *out = st->out;
    memcpy(out, &scratch, offsetof(struct vzcaps_settings, origin));
    out->set &= ~(1u << VZCAPS_KEY_COUNT); /* match: not a setting */
    for (int k = 0; k < VZCAPS_KEY_COUNT; k++)
        vzcaps_copy(out->origin[k], sizeof out->origin[k], out->set >> k & 1 ? origin_of(st, k) : "");
}

/* A key = value line in section (IN_*, or an index): checked into scratch and, for the section
 * that applies, into st->out. 0, or -1 with why. */
static int key_line(struct parse_state *st, int section, struct line_view v, unsigned line_no, char *why, size_t whylen)
{
    const char *eq = memchr(v.p, '=', v.n);
    if (!eq)
        return snprintf(why, whylen, "expected key = value or [section]"), -1;
    struct line_view k = trim(v.p, (size_t)(eq - v.p));
    struct line_view val = trim(eq + 1, v.n - (size_t)(eq + 1 - v.p));
    if (k.n == 0 || k.n >= 64)
        return snprintf(why, whylen, "missing or overlong key"), -1;
    /* both in place, in line_buf: the key ends where its blanks or the '=' were, the value ends the line */
    char *key = (char *)k.p, *value = (char *)val.p;
    key[k.n] = '\0';
    if (section == IN_BAD_SECTION && vzcaps_streq(key, "log_file"))
        return snprintf(why, whylen, "log_file inside the section refused above: it belongs at the top of the file, "
                                     "before any section"), -1;
    int top = section == IN_BAD_SECTION ? 0 : top_level_key(st, section, line_no, key, value, why, whylen);
    if (top)
        return top < 0 ? -1 : 0;
    if (section == IN_NO_SECTION)
        return snprintf(why, whylen, "%s outside a section: start one with [name]", key), -1;
    bool is_match = vzcaps_streq(key, "match");
    int kk = is_match ? VZCAPS_KEY_COUNT : vzcaps_key_from_name(key);
    if (kk < 0)
        return unknown_key(key, why, whylen);
    if (scratch.set & (1u << kk))
        return section >= 0 ? snprintf(why, whylen, "duplicate key %s in [%s]", key, st->names[section]), -1
                            : snprintf(why, whylen, "duplicate key %s in the section refused above", key), -1;
    if (is_match) {
        if (val.n == 0)
            return snprintf(why, whylen, "empty match"), -1;
        scratch.set |= 1u << VZCAPS_KEY_COUNT;
        if (section >= 0 && st->chosen_by_match < 0 && vzcaps_globs_fit(value, st->exe)) {
            st->chosen_by_match = section;
            if (st->out && !st->profile) /* the section that applies: its keys so far, then the rest as read */
                settings_take(st), st->apply_section = section;
        }
        return 0;
    }
    st->key_at[kk] = line_no;
    if (vzcaps_settings_set(&scratch, (enum vzcaps_key)kk, value, "", why_buf, sizeof why_buf) != 0)
        return snprintf(why, whylen, "%s: %s", key, why_buf), -1;
    if (st->out && section == st->apply_section)
        vzcaps_settings_set(st->out, (enum vzcaps_key)kk, value, origin_of(st, kk), why_buf, sizeof why_buf);
    return 0;
}

/* Adds "file:line: why" to err, after "; " when it holds others; one that does not fit is
 * counted in *more (the caller says how many, in the room kept for it). */
#define MORE_ROOM 40
static void add_error(char *err, size_t errlen, unsigned n, unsigned *more, const char *file, unsigned line_no,
                      const char *why)
{
    size_t used = n ? strlen(err) : 0;
    int need = snprintf(NULL, 0, "%s%s:%u: %s", n ? "; " : "", file, line_no, why);
    if (n && used + (size_t)need + MORE_ROOM >= errlen) {
        (*more)++;
        return;
    }
    snprintf(err + used, errlen - used, "%s%s:%u: %s", n ? "; " : "", file, line_no, why);
}

/* One pass over the file: validates everything and reports every bad line, not only the first
 * ("f:2: ...; f:5: ..."), and applies the section that applies (the profile's; else the first
 * whose match fits; else [default]) into st->out. 0, or -1 with err. */
static int parse(const char *text, size_t len, struct parse_state *st, char *err, size_t errlen)
{
    static char why[VZCAPS_NOTE_LEN];
    vzcaps_settings_reset(&scratch);
    unsigned line_no = 0, n_bad = 0, more = 0;
    int section = IN_NO_SECTION;
    bool nul = memchr(text, '\0', len) != NULL; /* looked for line by line only in a file that has one */
    for (size_t pos = 0; pos < len;) {
        line_no++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl != NULL);
        struct line_view v;
        int rc = config_line(start, n, nul, &v, why, sizeof why);
        if (rc == 0 && v.n && v.p[0] == '[') {
            int s = section_header(st, v, why, sizeof why);
            section = s >= 0 ? s : IN_BAD_SECTION; /* its keys are still checked, against nothing */
            /* the profile's section applies as it is read; [default], until a match fits */
            if (s >= 0 && (st->profile ? vzcaps_streq(st->names[s], st->profile)
                                       : st->chosen_by_match < 0 && vzcaps_streq(st->names[s], "default")))
                st->apply_section = s;
            vzcaps_settings_reset(&scratch);
            rc = s >= 0 ? 0 : -1;
        } else if (rc == 0 && v.n) {
            rc = key_line(st, section, v, line_no, why, sizeof why);
        }
        if (rc != 0)
            add_error(err, errlen, n_bad++, &more, st->file, line_no, why);
    }
    if (more)
        vzcaps_appendf(err, errlen, "; and %u more bad lines", more);
    return n_bad ? -1 : 0;
}

int vzcaps_config_apply(const char *text, size_t len, const char *file, const char *exe,
                        const char *profile, struct vzcaps_settings *s, char *section,
                        size_t section_len, char *err, size_t errlen)
{
    static struct parse_state st; /* large: kept off the stack; configuration runs once */
    st.file = file;
    st.exe = exe;
    st.profile = profile;
    st.n_sections = 0;
    st.chosen_by_match = st.apply_section = -1;
    st.out = s;
    st.log_file[0] = st.log_file_origin[0] = '\0';
    if (parse(text, len, &st, err, errlen) != 0)
        return -1;
    vzcaps_copy(s->log_file, sizeof s->log_file, st.log_file);
    vzcaps_copy(s->log_file_origin, sizeof s->log_file_origin, st.log_file_origin);
    if (profile && st.apply_section < 0) {
        char clipped[96];
        const char *names[MAX_SECTIONS];
        for (int i = 0; i < st.n_sections; i++)
            names[i] = st.names[i];
        const char *near = vzcaps_did_you_mean(profile, names, (size_t)st.n_sections);
        snprintf(err, errlen, "%s: no section [%s] (asked for by the profile%s%s%s)", file,
                 vzcaps_clip(profile, 64, clipped, sizeof clipped), near ? "; did you mean [" : "", near ? near : "",
                 near ? "]?" : "");
        return -1;
    }
    vzcaps_copy(section, section_len, st.apply_section >= 0 ? st.names[st.apply_section] : "");
    return 0;
}

/* ---- the configuration step ---- */

static const char *const env_prefixes[] = {"VZCAPS_", "TART_METAL_", "LUME_METAL_"};
#define N_PREFIXES (sizeof env_prefixes / sizeof env_prefixes[0])
/* the keys of the existing shims' compatibility variables */
static const unsigned compat_keys = 1u << VZCAPS_KEY_APPLE_FAMILY_MAX | 1u << VZCAPS_KEY_MAX_THREADGROUP_MEMORY |
                                    1u << VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE;
/* VZCAPS_ names that are not settings: slots after the keys */
static const char *const other_names[] = {"CONFIG", "PROFILE", "LOG_FILE", "PROGRAM"};
#define N_SLOTS (VZCAPS_KEY_COUNT + sizeof other_names / sizeof other_names[0])

/* The slot of the name rest[0..n) after a prefix: a key (upper case), or for VZCAPS_ one of
 * other_names; -1 when unknown. Works on any length, copies nothing. */
static int env_slot(const char *rest, size_t n, bool ours)
{
    for (int k = 0; k < VZCAPS_KEY_COUNT; k++) {
        const char *key = vzcaps_key_name((enum vzcaps_key)k);
        if (strlen(key) != n)
            continue;
        size_t i = 0;
        while (i < n && (key[i] >= 'a' && key[i] <= 'z' ? key[i] - 'a' + 'A' : key[i]) == rest[i])
            i++;
        if (i == n)
            return ours || (compat_keys >> k & 1) ? k : -1;
    }
    for (size_t i = 0; ours && i < sizeof other_names / sizeof other_names[0]; i++)
        if (strlen(other_names[i]) == n && memcmp(other_names[i], rest, n) == 0)
            return VZCAPS_KEY_COUNT + (int)i;
    return -1;
}

/* The VZCAPS_ name nearest to the unknown one whose tail is rest[0..n), into out. */
static bool env_suggest(const char *rest, size_t n, char *out, size_t len)
{
    char word[48];
    const char *known[VZCAPS_KEY_COUNT + sizeof other_names / sizeof other_names[0]];
    size_t nk = 0;
    if (n >= sizeof word)
        return false;
    memcpy(word, rest, n);
    word[n] = '\0';
    for (int k = 0; k < VZCAPS_KEY_COUNT; k++)
        known[nk++] = vzcaps_key_name((enum vzcaps_key)k); /* case is ignored: apple_family_max */
    for (size_t i = 0; i < sizeof other_names / sizeof other_names[0]; i++)
        known[nk++] = other_names[i];
    const char *near = vzcaps_did_you_mean(word, known, nk);
    if (!near)
        return false;
    size_t w = (size_t)snprintf(out, len, "VZCAPS_"); /* len is at least 8 */
    for (size_t i = 0; near[i] && w + 1 < len; i++)
        out[w++] = near[i] >= 'a' && near[i] <= 'z' ? (char)(near[i] - 'a' + 'A') : near[i];
    out[w] = '\0';
    return true;
}

/* Reads which of our names the environment holds. Refuses (returns -1 with a reason) an
 * unknown VZCAPS_ name, an entry of ours without '=', and any name of ours or the preload
 * variable present twice: which entry a reader sees would then depend on the reader. */
static int scan_env(const struct vzcaps_inputs *in, unsigned seen[N_PREFIXES], char *why, size_t len)
{
    static char name[128];
    size_t pl = in->preload_var ? strlen(in->preload_var) : 0;
    bool preload_seen = false;
    memset(seen, 0, N_PREFIXES * sizeof seen[0]);
    for (const char *const *e = in->envp; e && *e; e++) {
        bool maybe = pl && **e == in->preload_var[0]; /* the first byte rules out most entries */
        for (size_t i = 0; i < N_PREFIXES && !maybe; i++)
            maybe = **e == env_prefixes[i][0];
        if (!maybe)
            continue;
        const char *eq = vzcaps_find_char(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        if (pl && n == pl && vzcaps_has_prefix(*e, in->preload_var, pl)) {
            if (preload_seen) {
                snprintf(why, len, "%s is set twice in the environment: which one applies is ambiguous; set it once", in->preload_var);
                return -1;
            }
            preload_seen = true;
            continue;
        }
        for (size_t i = 0; i < N_PREFIXES; i++) {
            size_t xl = strlen(env_prefixes[i]);
            if (!vzcaps_has_prefix(*e, env_prefixes[i], xl))
                continue;
            if (!eq) {
                snprintf(why, len, "environment entry %s has no '=': malformed", vzcaps_clipn(*e, n, 64, name, sizeof name));
                return -1;
            }
            int slot = env_slot(*e + xl, n - xl, i == 0);
            if (slot < 0 && i == 0) {
                char near[64];
                if (env_suggest(*e + xl, n - xl, near, sizeof near))
                    snprintf(why, len, "unknown variable %s (did you mean %s?)", vzcaps_clipn(*e, n, 64, name, sizeof name), near);
                else
                    snprintf(why, len, "unknown variable %s (known: VZCAPS_APPLE_FAMILY_MAX, VZCAPS_MAX_THREADGROUP_MEMORY, ... see vzcaps help)",
                             vzcaps_clipn(*e, n, 64, name, sizeof name));
                return -1;
            }
            if (slot < 0)
                break; /* not a compatible variable vzcaps reads */
            if (seen[i] & (1u << slot)) {
                snprintf(why, len, "%s is set twice in the environment: which one applies is ambiguous; set it once",
                         vzcaps_clipn(*e, n, 64, name, sizeof name));
                return -1;
            }
            seen[i] |= 1u << slot;
            break;
        }
    }
    return 0;
}

/* a + b into out (VZCAPS_PATH_MAX + 1 bytes), both lengths checked by the caller */
static void join(char *out, const char *a, const char *b)
{
    size_t n = strlen(a);
    memcpy(out, a, n);
    vzcaps_copy(out + n, VZCAPS_PATH_MAX + 1 - n, b);
}

int vzcaps_config_search(const char *const *envp, const char *root, char paths[][VZCAPS_PATH_MAX + 1], bool *named,
                         char *why, size_t len)
{
    static const char *const system_files[] = {"/opt/homebrew/etc/vzcaps.conf", "/usr/local/etc/vzcaps.conf"};
    char clip[128];
    const char *config = vzcaps_env_get(envp, "VZCAPS_CONFIG");
    *named = config != NULL;
    if (config) {
        if (!*config)
            return snprintf(why, len, "VZCAPS_CONFIG is empty: name a config file or unset it"), -1;
        if (strlen(config) > VZCAPS_PATH_MAX)
            return snprintf(why, len, "VZCAPS_CONFIG %s: too long (limit %d bytes)", vzcaps_clip(config, 64, clip, sizeof clip),
                            VZCAPS_PATH_MAX), -1;
        vzcaps_copy(paths[0], VZCAPS_PATH_MAX + 1, config);
        return 1;
    }
    int n = 0;
    const char *xdg = vzcaps_env_get(envp, "XDG_CONFIG_HOME"), *home = vzcaps_env_get(envp, "HOME");
    bool use_xdg = xdg && xdg[0] == '/';
    const char *var = use_xdg ? "XDG_CONFIG_HOME" : "HOME";
    /* a relative HOME is ignored like a relative XDG_CONFIG_HOME: the file would depend on the
     * current directory */
    const char *dir = use_xdg ? xdg : home && home[0] == '/' ? home : NULL;
    const char *tail = use_xdg ? "/vzcaps/vzcaps.conf" : "/.config/vzcaps/vzcaps.conf";
    if (dir) {
        if (strlen(dir) + strlen(tail) > VZCAPS_PATH_MAX)
            return snprintf(why, len, "%s %s: too long for the user config file path (limit %d bytes)", var,
                            vzcaps_clip(dir, 64, clip, sizeof clip), VZCAPS_PATH_MAX), -1;
        join(paths[n++], dir, tail);
    }
    root = root ? root : "";
    for (size_t i = 0; i < sizeof system_files / sizeof system_files[0]; i++) {
        if (strlen(root) + strlen(system_files[i]) > VZCAPS_PATH_MAX)
            return snprintf(why, len, "system config root %s: too long (limit %d bytes)", vzcaps_clip(root, 64, clip, sizeof clip),
                            VZCAPS_PATH_MAX), -1;
        join(paths[n++], root, system_files[i]);
    }
    return n;
}

/* large: kept off the stack (the library's frames stay under 4 KiB); configuration runs
 * once in the library and one call at a time in the command */
static struct vzcaps_settings s;


/* The stats log's path: VZCAPS_LOG_FILE wins over the file's log_file (which a file refused
 * before it was read does not give). A malformed VZCAPS_LOG_FILE refuses the configuration, as
 * any malformed variable does. */
static void log_file_of(const struct vzcaps_inputs *in, struct vzcaps_config_result *out)
{
    static char bad[VZCAPS_NOTE_LEN / 2], why[VZCAPS_NOTE_LEN];
    const char *var = vzcaps_env_get(in->envp, "VZCAPS_LOG_FILE");
    const char *value = var ? var : s.log_file;
    if (var && var[0] && vzcaps_log_file_check(var, bad, sizeof bad) != 0) {
        if (out->profile.state != VZCAPS_STOCK_REFUSED) {
            snprintf(why, sizeof why, "VZCAPS_LOG_FILE: %s; fix or unset it", bad);
            out->profile.n_notes = 0;
            vzcaps_profile_refuse(&out->profile, why);
        }
        return;
    }
    vzcaps_copy(out->log_file_origin, sizeof out->log_file_origin, var ? "VZCAPS_LOG_FILE" : s.log_file_origin);
    if (!value[0])
        return; /* off; VZCAPS_LOG_FILE= turns off the file's */
    if (vzcaps_log_file_expand(value, vzcaps_env_get(in->envp, "HOME"), out->log_file, sizeof out->log_file) != 0 &&
        out->profile.n_notes < VZCAPS_MAX_NOTES)
        snprintf(out->profile.notes[out->profile.n_notes++], VZCAPS_NOTE_LEN,
                 "%s %s: HOME is not an absolute path, or the path is too long: no stats log", out->log_file_origin,
                 vzcaps_clip(value, 64, (char[128]){0}, 128));
}

/* the configuration's scratch text, kept off the stack like s (one call at a time) */
static char cfg_err[VZCAPS_NOTE_LEN], cfg_why[VZCAPS_NOTE_LEN], cfg_name[128];

/* Which variables speak for the claims: VZCAPS_* ones that configure claims (directly, or a
 * config file through VZCAPS_CONFIG/VZCAPS_PROFILE) silence the compatible families;
 * otherwise the first compatible family set does. VZCAPS_HOST_CHIP, _LOG, _INHERIT,
 * _CALLERS and _STOCK_CALLERS combine with either. */
static const unsigned claims = 1u << VZCAPS_KEY_APPLE_FAMILY_MAX | 1u << VZCAPS_KEY_MAX_THREADGROUP_MEMORY |
                               1u << VZCAPS_KEY_RECOMMENDED_WORKING_SET_SIZE | 1u << VZCAPS_KEY_EXTRA_FAMILIES |
                               1u << VZCAPS_KEY_UNSAFE_BEYOND_HARDWARE | 1u << VZCAPS_KEY_COUNT |
                               1u << (VZCAPS_KEY_COUNT + 1);

/* The index of the compatible family that speaks (0: none), and in ignored the note naming
 * the families that were set but do not speak ("" when none). */
static size_t speaking_family(const struct vzcaps_inputs *in, const unsigned seen[N_PREFIXES], char *ignored,
                              size_t len)
{
    bool ours = seen[0] & claims;
    size_t compat = 0;
    for (size_t i = 1; i < N_PREFIXES && !ours && !compat; i++)
        if (seen[i])
            compat = i;
    ignored[0] = '\0';
    if (ours && (seen[1] || seen[2])) {
        const char *which = "";
        size_t wn = 0;
        for (const char *const *e = in->envp; e && *e && !wn; e++) {
            const char *eq = vzcaps_find_char(*e, '=');
            int k = eq && vzcaps_has_prefix(*e, "VZCAPS_", 7) ? env_slot(*e + 7, (size_t)(eq - *e) - 7, true) : -1;
            if (k >= 0 && (claims & (1u << k)))
                which = *e, wn = (size_t)(eq - *e);
        }
        snprintf(ignored, len, "%s%s%s ignored: %.*s is set, and VZCAPS_ variables configure vzcaps",
                 seen[1] ? "TART_METAL_*" : "", seen[1] && seen[2] ? " and " : "", seen[2] ? "LUME_METAL_*" : "", (int)wn, which);
    } else if (compat == 1 && seen[2]) {
        snprintf(ignored, len, "LUME_METAL_* ignored: TART_METAL_* is set and comes first");
    }
    return compat;
}

/* What a setting is called where the user gave it: the option a command's label names for the
 * variable, else the variable itself. */
static const char *setting_label(const char *const *labels, const char *var)
{
    for (const char *const *l = labels; l && l[0]; l += 2)
        if (strcmp(l[0], var) == 0)
            return l[1];
    return var;
}

/* Step 1: the config file, in vzcaps_config_search's order, read into s. -1: refused (the
 * reason is in out->profile). */
static int read_config_file(const struct vzcaps_inputs *in, char *file_buf, size_t file_cap,
                            struct vzcaps_config_result *out)
{
    char *const err = cfg_err, *const why = cfg_why;
    const char *profile = vzcaps_env_get(in->envp, "VZCAPS_PROFILE"); /* one scan for both uses */
    bool named = false;
    int n_cand = vzcaps_config_search(in->envp, in->sys_root, out->searched, &named, why, sizeof cfg_why);
    if (n_cand < 0) {
        vzcaps_profile_refuse(&out->profile, why);
        return -1;
    }
    out->n_searched = n_cand;
    char (*candidates)[VZCAPS_PATH_MAX + 1] = out->searched;
    for (int i = 0; i < n_cand && in->read_file; i++) {
        size_t len = 0;
        bool missing = false;
        if (in->read_file(in->read_ctx, candidates[i], file_buf, file_cap, &len, &missing, err, sizeof cfg_err) != 0) {
            if (missing && !named)
                continue;
            snprintf(out->config_path, sizeof out->config_path, "%s", candidates[i]);
            snprintf(out->config_error, sizeof out->config_error, "%s", err);
            snprintf(why, sizeof cfg_why, "%s: %s%s%s%s", candidates[i], err, named ? " (named by " : "",
                     named ? setting_label(in->labels, "VZCAPS_CONFIG") : "", named ? ")" : "");
            vzcaps_profile_refuse(&out->profile, why);
            return -1;
        }
        vzcaps_copy(out->config_path, sizeof out->config_path, candidates[i]);
        if (vzcaps_config_apply(file_buf, len, candidates[i], in->exe, profile, &s,
                                out->section, sizeof out->section, err, sizeof cfg_err) != 0) {
            snprintf(out->config_error, sizeof out->config_error, "%s", err);
            vzcaps_profile_refuse(&out->profile, err);
            return -1;
        }
        break;
    }
    if (!out->config_path[0] && profile) {
        const char *given = setting_label(in->labels, "VZCAPS_PROFILE"); /* or the option it came from */
        snprintf(why, sizeof cfg_why, "%s is set but no config file was found: create one with a [%s] section, or drop %s",
                 given, vzcaps_clip(profile, 64, cfg_name, sizeof cfg_name), given);
        vzcaps_profile_refuse(&out->profile, why);
        return -1;
    }
    return 0;
}

/* Step 2: variables override the file: every VZCAPS_ setting, and the claims of the
 * compatible family that speaks (prefix; NULL if none). -1: refused. */
static int apply_variables(const struct vzcaps_inputs *in, const char *prefix, struct vzcaps_config_result *out)
{
    char *const err = cfg_err, *const why = cfg_why, *const name = cfg_name;
    for (const char *const *e = in->envp; e && *e; e++) {
        if (**e != 'V' && (!prefix || **e != prefix[0]))
            continue; /* neither VZCAPS_ nor the prefix, by their first byte */
        const char *eq = vzcaps_find_char(*e, '=');
        size_t xl = vzcaps_has_prefix(*e, "VZCAPS_", 7) ? 7 : prefix && vzcaps_has_prefix(*e, prefix, strlen(prefix)) ? strlen(prefix) : 0;
        if (!eq || !xl)
            continue;
        int k = env_slot(*e + xl, (size_t)(eq - *e) - xl, xl == 7);
        if (k < 0 || k >= VZCAPS_KEY_COUNT)
            continue;
        vzcaps_clipn(*e, (size_t)(eq - *e), 64, name, sizeof cfg_name); /* a known name: short */
        const char *label = setting_label(in->labels, name);
        if (label != name)
            snprintf(name, sizeof cfg_name, "%s", label);
        if (vzcaps_settings_set(&s, (enum vzcaps_key)k, eq + 1, name, err, sizeof cfg_err) != 0) {
            snprintf(why, sizeof cfg_why, "%s: %s; fix or unset it", name, err);
            vzcaps_profile_refuse(&out->profile, why);
            return -1;
        }
    }
    return 0;
}

/* Step 3: the notes that explain the resolved profile: the ignored families, and the
 * section, named first. */
static void add_config_notes(const char *ignored, struct vzcaps_config_result *out)
{
    if (ignored[0] && out->profile.n_notes < VZCAPS_MAX_NOTES) /* never silently */
        vzcaps_copy(out->profile.notes[out->profile.n_notes++], VZCAPS_NOTE_LEN, ignored);
    if (out->section[0] && out->profile.n_notes < VZCAPS_MAX_NOTES && out->profile.state != VZCAPS_STOCK_UNCONFIGURED) {
        /* name the section first: it explains every later note */
        struct vzcaps_profile *p = &out->profile;
        for (size_t i = p->n_notes; i > 0; i--) /* the notes' text, not their whole arrays */
            vzcaps_copy(p->notes[i], sizeof p->notes[i], p->notes[i - 1]);
        p->notes[0][0] = '\0';
        vzcaps_appendf(p->notes[0], sizeof p->notes[0], "profile [%s] of %s", out->section, out->config_path);
        p->n_notes++;
    }
}

static void configure(const struct vzcaps_inputs *in, char *file_buf, size_t file_cap,
                      struct vzcaps_config_result *out)
{
    static char ignored[VZCAPS_NOTE_LEN];
    unsigned seen[N_PREFIXES];
    vzcaps_config_result_reset(out);
    vzcaps_settings_reset(&s);

    if (scan_env(in, seen, cfg_why, sizeof cfg_why) != 0) {
        vzcaps_profile_refuse(&out->profile, cfg_why);
        return;
    }
    size_t compat = speaking_family(in, seen, ignored, sizeof ignored);
    const char *prefix = compat ? env_prefixes[compat] : NULL;
    vzcaps_copy(out->env_prefix, sizeof out->env_prefix, prefix ? prefix : seen[0] ? "VZCAPS_" : "");

    if (read_config_file(in, file_buf, file_cap, out) != 0 || apply_variables(in, prefix, out) != 0)
        return;
    vzcaps_profile_resolve(&s, &in->host, &out->profile);
    add_config_notes(ignored, out);
}

void vzcaps_config_result_reset(struct vzcaps_config_result *r)
{
    vzcaps_profile_reset(&r->profile);
    r->config_path[0] = r->config_error[0] = '\0';
    for (int i = 0; i < VZCAPS_CONFIG_SEARCH_MAX; i++)
        r->searched[i][0] = '\0';
    r->n_searched = 0;
    r->section[0] = r->env_prefix[0] = r->log_file[0] = r->log_file_origin[0] = '\0';
}

void vzcaps_configure(const struct vzcaps_inputs *in, char *file_buf, size_t file_cap,
                      struct vzcaps_config_result *out)
{
    configure(in, file_buf, file_cap, out);
    log_file_of(in, out);
}
