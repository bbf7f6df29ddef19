/* What macOS does when it starts a process, as decisions over facts the caller gathered:
 * protected locations, #! lines, SIP and --inherit, arm64e programs, the quarantine mark.
 * Never: reads a file, runs a tool or looks at this machine (the command passes the facts);
 * imports a function the injected library may not have (it is linked there too, unused). */
#include "vzcaps_core.h"

#include <errno.h>
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

/* ---- #! lines, image activators and execvp's search ---- */

const char *vzcaps_shebang_word(const struct vzcaps_shebang *sb, size_t i)
{
    return i < sb->n_words ? sb->text + sb->off[i] : NULL;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

int vzcaps_shebang_parse(const char *head, size_t n, struct vzcaps_shebang *sb, char *why, size_t len)
{
    memset(sb, 0, sizeof *sb);
    if (n < 2 || head[0] != '#' || head[1] != '!')
        return 0;
    char line[VZCAPS_SHEBANG_MAX] = {0}; /* the page as the kernel reads it: zero-filled past the file */
    memcpy(line, head, n < sizeof line ? n : sizeof line);
    size_t start = 2, end;
    while (start < sizeof line && blank(line[start]))
        start++;
    for (end = start; end < sizeof line && line[end] != '\n' && line[end] != '#';)
        end++;
    if (end == start || end == sizeof line) {
        snprintf(why, len, end == start ? "its #! line names no interpreter"
                                        : "its #! line does not end (with a newline or '#') within the %d bytes macOS reads",
                 VZCAPS_SHEBANG_MAX);
        return -1;
    }
    while (blank(line[end - 1]))
        end--;
    /* words as exec_extract_strings splits them (kern_exec.c:6122-6160): a NUL ends the last */
    for (size_t k = start, w = 0;;) {
        sb->off[sb->n_words++] = (uint16_t)w;
        while (k < end && line[k] && !blank(line[k]))
            sb->text[w++] = line[k++];
        sb->text[w++] = '\0';
        if (k == end || !line[k])
            return 1;
        while (blank(line[k]))
            k++;
    }
}

int vzcaps_exec_claims(const unsigned char *head, size_t n, bool elf)
{
    uint32_t le = n >= 4 ? (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24 : 0;
    uint32_t type = n >= 16 ? (uint32_t)head[12] | (uint32_t)head[13] << 8 | (uint32_t)head[14] << 16 | (uint32_t)head[15] << 24 : 0;
    if ((le == 0xfeedfacfu || le == 0xfeedfaceu) && type == 2 /* MH_EXECUTE */)
        return VZCAPS_EXEC_IMAGE;
    if (le == 0xbebafecau /* FAT_MAGIC, big-endian in the file */ || (elf && le == 0x464c457fu /* \177ELF */))
        return VZCAPS_EXEC_IMAGE;
    return n >= 2 && head[0] == '#' && head[1] == '!' ? VZCAPS_EXEC_SCRIPT : VZCAPS_EXEC_NONE;
}

bool vzcaps_path_entry(const char **p, const char **dir, size_t *len)
{
    if (!*p)
        return false;
    size_t n = strcspn(*p, ":");
    *dir = n ? *p : ".", *len = n ? n : 1;
    *p = (*p)[n] ? *p + n + 1 : NULL;
    return true;
}

const char *vzcaps_search_path(const char *path, bool darwin)
{
    return path ? path : darwin ? "/usr/bin:/bin" : "/bin:/usr/bin";
}

int vzcaps_search_step(int err, bool exists, bool darwin, bool *eacces)
{
    if (err == ENOEXEC)
        return VZCAPS_SEARCH_SHELL;
    if (err == ENOENT || err == ENOTDIR || (darwin && (err == ELOOP || err == ENAMETOOLONG)) ||
        (!darwin && (err == ESTALE || err == ENODEV || err == ETIMEDOUT)))
        return VZCAPS_SEARCH_NEXT;
    if (err == EACCES && (exists || !darwin)) { /* Libc asks stat(2) whether the file is there */
        *eacces = true;
        return VZCAPS_SEARCH_NEXT;
    }
    return darwin && !exists && err != E2BIG && err != ENOMEM && err != ETXTBSY ? VZCAPS_SEARCH_NEXT : VZCAPS_SEARCH_STOP;
}

const char *vzcaps_search_sh_argv0(const char *argv0, bool darwin)
{
    return !darwin ? "/bin/sh" : argv0 ? argv0 : "sh";
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

int vzcaps_shebang_env(const struct vzcaps_shebang *sb, size_t *name_word, char *why, size_t len)
{
    *name_word = 0;
    if (sb->n_words == 0 || !vzcaps_path_is_system_env(vzcaps_shebang_word(sb, 0)))
        return 0;
    bool split = false;
    size_t i = 1;
    for (; i < sb->n_words; i++) {
        const char *a = vzcaps_shebang_word(sb, i);
        if (strcmp(a, "-S") == 0) {
            split = true; /* its argument is the next word, which the kernel split already */
            continue;
        }
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] == '-') {
            snprintf(why, len, a[1] == '-' ? "env has no long options on macOS: it reads %.40s%s as letters and stops with its usage"
                                            : "env is given the option %.40s%s", a, strlen(a) > 40 ? "..." : "");
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
