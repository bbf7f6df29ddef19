/* What macOS does when it starts a process, as decisions over facts the caller gathered:
 * protected locations, #! lines, SIP and --inherit, arm64e programs, the quarantine mark.
 * Never: reads a file, runs a tool or looks at this machine (the command passes the facts);
 * imports a function the injected library may not have (it is linked there too, unused). */
#include "vzcaps_core.h"

#include <stdio.h>
#include <string.h>

/* Where SIP protects the programs: dyld drops DYLD_* variables when it starts one of them. */
static const char *const protected_dirs[] = {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/libexec", "/System"};
#define N_PROTECTED (sizeof protected_dirs / sizeof protected_dirs[0])

const char *vzcaps_protected_dirs_text(void)
{
    return "/bin, /sbin, /usr/bin, /usr/sbin, /usr/libexec and /System";
}

/* strstr, which the library's import allow-list does not have */
static const char *find(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncmp(hay, needle, n) == 0)
            return hay;
    return NULL;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The path's components, "//" and "/./" collapsed, compared without case (macOS's default
 * file system ignores it): whether the first components are dir's. */
static bool under(const char *path, const char *dir)
{
    const char *p = path, *d = dir;
    while (*d) {
        while (*d == '/')
            d++;
        for (;;) { /* skip separators and "." components of the path */
            while (*p == '/')
                p++;
            if (p[0] == '.' && (p[1] == '/' || p[1] == '\0'))
                p++;
            else
                break;
        }
        size_t n = strcspn(d, "/"), m = strcspn(p, "/");
        if (n != m)
            return false;
        for (size_t i = 0; i < n; i++)
            if (lower(p[i]) != lower(d[i]))
                return false;
        p += m, d += n;
    }
    if (*p != '/')
        return false;
    while (*p == '/' || (p[0] == '.' && (p[1] == '/' || p[1] == '\0')))
        p++;
    return *p != '\0'; /* a file below dir, not dir itself */
}

bool vzcaps_path_protected(const char *path)
{
    if (!path || path[0] != '/')
        return false; /* a relative path: the caller resolves it first */
    for (size_t i = 0; i < N_PROTECTED; i++)
        if (under(path, protected_dirs[i]))
            return true;
    return false;
}

/* ---- #! lines ---- */

const char *vzcaps_shebang_word(const struct vzcaps_shebang *sb, size_t i)
{
    return i < sb->n_words ? sb->text + sb->off[i] : NULL;
}

int vzcaps_shebang_parse(const char *head, size_t n, struct vzcaps_shebang *sb, char *why, size_t len)
{
    memset(sb, 0, sizeof *sb);
    if (n < 2 || head[0] != '#' || head[1] != '!')
        return 0;
    size_t limit = n < VZCAPS_SHEBANG_MAX ? n : VZCAPS_SHEBANG_MAX, end = 2;
    while (end < limit && head[end] != '\n')
        end++;
    if (end == limit && n > VZCAPS_SHEBANG_MAX) {
        snprintf(why, len, "its #! line is longer than %d bytes, more than macOS reads", VZCAPS_SHEBANG_MAX);
        return -1;
    }
    /* head[2..end) is the line (the end of the file ends it too) */
    for (size_t i = 2; i < end; i++) {
        unsigned char c = (unsigned char)head[i];
        if (c == '\r') {
            snprintf(why, len, "its #! line ends in a carriage return (a Windows line ending): the interpreter's name would include it");
            return -1;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            snprintf(why, len, "its #! line holds the control byte 0x%02x", c);
            return -1;
        }
    }
    size_t w = 0;
    for (size_t i = 2; i < end;) {
        while (i < end && (head[i] == ' ' || head[i] == '\t'))
            i++;
        if (i == end)
            break;
        sb->off[sb->n_words++] = (uint16_t)w; /* at most 255 words fit in 510 bytes */
        while (i < end && head[i] != ' ' && head[i] != '\t')
            sb->text[w++] = head[i++];
        sb->text[w++] = '\0';
    }
    if (sb->n_words == 0) {
        snprintf(why, len, "its #! line names no interpreter");
        return -1;
    }
    return 1;
}

/* The next component of a path at *p ("//" and "." components skipped): its length, 0 at the end. */
static size_t component(const char **p)
{
    for (;;) {
        while (**p == '/')
            (*p)++;
        if ((*p)[0] == '.' && ((*p)[1] == '/' || (*p)[1] == '\0'))
            (*p)++;
        else
            break;
    }
    return strcspn(*p, "/");
}

bool vzcaps_path_is_system_env(const char *path)
{
    /* by path, never by name: a user's ./tools/env is a program of its own, not env(1) */
    static const char sys[] = "/usr/bin/env";
    if (!path || path[0] != '/')
        return false;
    const char *p = path, *d = sys;
    for (;;) {
        size_t m = component(&p), n = component(&d);
        if (m != n)
            return false;
        if (!n)
            return true;
        for (size_t i = 0; i < n; i++)
            if (lower(p[i]) != lower(d[i])) /* macOS's default file system ignores case */
                return false;
        p += m, d += n;
    }
}

static bool is_env(const char *interp)
{
    return vzcaps_path_is_system_env(interp);
}

int vzcaps_shebang_env(const struct vzcaps_shebang *sb, size_t *name_word, char *why, size_t len)
{
    *name_word = 0;
    if (sb->n_words == 0 || !is_env(vzcaps_shebang_word(sb, 0)))
        return 0;
    bool split = false;
    size_t i = 1;
    for (; i < sb->n_words; i++) {
        const char *a = vzcaps_shebang_word(sb, i);
        if (strcmp(a, "-S") == 0 || strcmp(a, "--split-string") == 0) {
            split = true; /* macOS splits the line into words already; -S adds nothing here */
            continue;
        }
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] == '-') {
            snprintf(why, len, "env is given the option %.40s%s", a, strlen(a) > 40 ? "..." : "");
            return -1;
        }
        break;
    }
    if (i >= sb->n_words) { /* env would be given the script itself, and start it again and again */
        snprintf(why, len, "env is given no program to start (it would start the script itself, over and over)");
        return -2;
    }
    for (size_t k = i; k < sb->n_words; k++) {
        const char *a = vzcaps_shebang_word(sb, k);
        if (k == i && strchr(a, '=')) {
            snprintf(why, len, "env sets a variable (%.40s%s) before the program", a, strlen(a) > 40 ? "..." : "");
            return -1;
        }
        if (split && a[strcspn(a, "\"'\\$")]) {
            snprintf(why, len, "env -S is given quotes, escapes or variables, which only env itself expands");
            return -1;
        }
    }
    *name_word = i;
    return 1;
}

/* ---- the printed command line ---- */

bool vzcaps_shell_word_is_assignment(const char *word)
{
    /* NAME=..., NAME a letter or '_' and then letters, digits and '_' (POSIX "name") */
    const char *p = word;
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
        return false;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
        p++;
    return *p == '=';
}

/* ---- SIP, --inherit and arm64e ---- */

int vzcaps_sip_parse(const char *text)
{
    static const char key[] = "System Integrity Protection status:";
    const char *p = text ? find(text, key) : NULL;
    if (!p)
        return VZCAPS_SIP_UNKNOWN;
    p += sizeof key - 1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "enabled.", 8) == 0)
        return VZCAPS_SIP_ENABLED;
    if (strncmp(p, "disabled.", 9) == 0)
        return VZCAPS_SIP_DISABLED;
    return VZCAPS_SIP_UNKNOWN; /* "unknown (Custom Configuration)" and anything else */
}

int vzcaps_inherit_decision(bool macos, int sip, bool library_has_arm64e, bool anyway, char *why, size_t len)
{
    why[0] = '\0';
    /* an arm64e slice of the library does not make it safe: dyld's arm64e processes accept only
     * Apple's arm64e ABI, which no toolchain here builds, and third-party arm64e code runs only
     * with a boot argument (docs/artifacts.md, "arm64e: decided from dyld's source"); so the
     * refusal stands whatever slices the library has */
    if (!macos)
        return VZCAPS_INHERIT_OK;
    if (sip == VZCAPS_SIP_ENABLED) {
        snprintf(why, len, "with SIP enabled macOS removes the library from the system programs the workload starts; "
                           "an arm64e program outside %s (such as Apple's Command Line Tools python3) would still be terminated",
                 vzcaps_protected_dirs_text());
        return VZCAPS_INHERIT_NOTE;
    }
    snprintf(why, len, "SIP is %s, so system programs the workload starts (arm64e, such as /bin/sh) would keep the library, "
                       "%s, and dyld would terminate them",
             sip == VZCAPS_SIP_DISABLED ? "disabled" : "in an unknown state",
             library_has_arm64e ? "whose arm64e slice Apple's arm64e programs do not accept" : "which has no arm64e slice");
    return anyway ? VZCAPS_INHERIT_NOTE : VZCAPS_INHERIT_REFUSED;
}

/* Whether the profile claims anything above what a guest answers stock (METAL-FACTS: Apple1-5,
 * Common1-3 and Mac2 supported, 32768 bytes of threadgroup memory): vzcaps only ever raises an
 * answer. A working-set floor is always counted: the guest's own value depends on its memory. */
static bool above_guest(const struct vzcaps_profile *p)
{
    if (p->apple_family_max > VZCAPS_GUEST_APPLE_MAX || p->max_threadgroup_memory > VZCAPS_GUEST_THREADGROUP ||
        p->recommended_working_set_size)
        return true;
    for (size_t i = 0; i < p->n_extra; i++) {
        int64_t f = p->extra[i];
        if (!(f == 2002 || (f >= 3001 && f <= 3003) || (f >= 1001 && f <= VZCAPS_GUEST_APPLE_MAX)))
            return true;
    }
    return false;
}

const char *vzcaps_stock_reason(const struct vzcaps_profile *p, char *why, size_t len)
{
    switch (p->state) {
    case VZCAPS_STOCK_REFUSED: /* every note, as the shim's line joins them: the cause and its fix follow the profile's name */
        snprintf(why, len, "refused: %s", p->n_notes ? p->notes[0] : "the configuration was refused");
        for (size_t i = 1; i < p->n_notes; i++)
            vzcaps_appendf(why, len, "; %s", p->notes[i]);
        return why;
    case VZCAPS_STOCK_OFF:
        snprintf(why, len, "off: the configuration turns vzcaps off for it");
        return why;
    case VZCAPS_STOCK_UNCONFIGURED:
        snprintf(why, len, "out of scope: nothing configures vzcaps for it");
        return why;
    case VZCAPS_ENABLED:
        break;
    }
    if (!p->apple_family_max && !p->n_extra && !p->max_threadgroup_memory && !p->recommended_working_set_size) {
        snprintf(why, len, "nothing to change: the profile changes no answer");
        return why;
    }
    if (!above_guest(p)) {
        snprintf(why, len, "nothing to change: the guest already answers Apple%d, Common1-3 and Mac2 and %d bytes of threadgroup "
                 "memory, and vzcaps never lowers an answer (apple_family_max %lld)", VZCAPS_GUEST_APPLE_MAX - 1000,
                 VZCAPS_GUEST_THREADGROUP, (long long)p->apple_family_max);
        return why;
    }
    if (!p->callers[0]) {
        snprintf(why, len, "out of scope: callers is empty, so no call gets the profile's answers");
        return why;
    }
    return NULL;
}

const char *vzcaps_arm64e_client(const char *path)
{
    if (!path)
        return NULL;
    const char *base = vzcaps_basename(path);
    bool python = strncmp(base, "python", 6) == 0 || strcmp(base, "Python") == 0;
    if (find(path, "/Library/Developer/CommandLineTools/"))
        return python ? "Apple's Command Line Tools Python" : "a program of Apple's Command Line Tools";
    if (find(path, "/Contents/Developer/"))
        return python ? "Xcode's Python" : "a program of Xcode";
    if (vzcaps_path_protected(path))
        return "a system program";
    return NULL;
}

/* ---- the quarantine mark ---- */

bool vzcaps_quarantine_describe(const char *value, size_t n, char *out, size_t len)
{
    /* "flags;time;agent;uuid", each field hexadecimal but the agent (the app that downloaded) */
    size_t f[4] = {0}, fl[4] = {0}, k = 0, start = 0;
    for (size_t i = 0; i <= n && k < 4; i++)
        if (i == n || value[i] == ';') {
            f[k] = start, fl[k] = i - start, k++;
            start = i + 1;
        }
    bool agent_ok = k >= 3 && fl[2] > 0 && fl[2] <= 64;
    for (size_t i = 0; agent_ok && i < fl[2]; i++) {
        unsigned char c = (unsigned char)value[f[2] + i];
        agent_ok = c >= 0x20 && c < 0x7f;
    }
    bool flags_ok = k >= 1 && fl[0] == 4; /* the value is n bytes, not a string: no str* on it */
    for (size_t i = 0; flags_ok && i < 4; i++) {
        char c = value[i];
        flags_ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }
    if (agent_ok)
        snprintf(out, len, "quarantined (downloaded by %.*s%s%.*s)", (int)fl[2], value + f[2], flags_ok ? ", flags " : "",
                 flags_ok ? 4 : 0, value);
    else if (flags_ok)
        snprintf(out, len, "quarantined (flags %.4s)", value);
    else
        snprintf(out, len, "quarantined (the mark's value is not in the usual form)");
    return true;
}
