/* What the kernel starts for one file, read from it as exec_activate_image reads it (core's
 * exec_rules.c decides what the bytes mean), and a library's slices.
 * Never: starts or writes anything, or reads more of a file than its first bytes. */
#define _XOPEN_SOURCE 700
#include "exec.h"
#include "platform.h"
#include "../common/readfile.h"
#include "../macho/macho.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool find_executable(const char *name, const char *near, char *out, size_t len)
{
    /* a candidate that does not fit in out is not tried: a cut path names another file */
    if (strchr(name, '/'))
        return (size_t)snprintf(out, len, "%s", name) < len && access(out, X_OK) == 0;
    const char *slash = near ? strrchr(near, '/') : NULL;
    if (slash && (size_t)snprintf(out, len, "%.*s/%s", (int)(slash - near), near, name) < len && access(out, X_OK) == 0)
        return true;
    const char *p = vzcaps_search_path(getenv("PATH"), true), *dir; /* execvp's PATH, as resolve.c reads it */
    for (size_t n; vzcaps_path_entry(&p, &dir, &n);)
        if ((size_t)snprintf(out, len, "%.*s/%s", (int)n, dir, name) < len && access(out, X_OK) == 0)
            return true;
    return false;
}

/* ---- the kernel's view of one file ---- */

/* The file as exec_activate_image looks it up and checks it (exec_check_permissions: a regular
 * file with execute permission, else EACCES), and its first bytes (a regular file's, executable
 * or not): 0, an errno with why, or -1 when it may be executed but not read here (mode 0111: the
 * kernel reads it all the same). */
static int read_head(const char *path, unsigned char *head, size_t cap, size_t *n, bool *exists, char *why, size_t len)
{
    struct stat st;
    char err[300];
    *n = 0;
    *exists = stat(path, &st) == 0;
    int e = !*exists ? errno : !S_ISREG(st.st_mode) || access(path, X_OK) != 0 ? EACCES : 0;
    int fd = *exists && S_ISREG(st.st_mode) ? vzcaps_open_regular(path, &st, err, sizeof err) : -1;
    for (ssize_t r; fd >= 0 && *n < cap && ((r = read(fd, head + *n, cap - *n)) > 0 || (r < 0 && errno == EINTR));)
        *n += r > 0 ? (size_t)r : 0;
    if (fd >= 0)
        close(fd);
    if (e)
        snprintf(why, len, "%s", e == ENOENT ? "not found" : !*exists ? strerror(e) : S_ISREG(st.st_mode) ? "not executable"
                                                                                                        : "not a regular file");
    return e ? e : fd < 0 ? -1 : 0;
}

/* Whether SIP protects path, as given or with its links resolved. */
static bool protected_file(const char *path)
{
    if (vzcaps_path_protected(path))
        return true;
    char *real = realpath(path, NULL);
    bool p = real && vzcaps_path_protected(real);
    free(real);
    return p;
}

/* Which activator claims path, read_head's answer e and its bytes: a program SIP protects is
 * Apple's, an image whatever this machine holds there (*prot), as is one we may not read. */
static int claims(const char *path, int e, const unsigned char *head, size_t n, bool *prot)
{
    *prot = e <= 0 && protected_file(path);
    return e < 0 || *prot ? VZCAPS_EXEC_IMAGE : vzcaps_exec_claims(head, n, !platform_is_macos);
}

void exec_image_read(const char *path, struct exec_image *k)
{
    unsigned char head[VZCAPS_SHEBANG_MAX];
    size_t n;
    bool exists;
    memset(k, 0, sizeof *k);
    snprintf(k->image, sizeof k->image, "%s", path);
    int e = read_head(path, head, sizeof head, &n, &k->exists, k->why, sizeof k->why);
    int kind = claims(path, e, head, n, &k->protected_image);
    char line_why[300] = "";
    k->script = kind == VZCAPS_EXEC_SCRIPT;
    bool line = k->script && vzcaps_shebang_parse((const char *)head, n, &k->sb, line_why, sizeof line_why) > 0;
    if (e > 0 || kind == VZCAPS_EXEC_IMAGE) {
        k->err = e > 0 ? e : 0;
        return;
    }
    k->err = ENOEXEC;
    snprintf(k->why, sizeof k->why, "%s", k->script ? line_why : "no #! line and no executable format the kernel runs");
    if (!line)
        return;
    const char *interp = vzcaps_shebang_word(&k->sb, 0);
    snprintf(k->image, sizeof k->image, "%s", interp);
    char iwhy[300];
    e = read_head(interp, head, sizeof head, &n, &exists, iwhy, sizeof iwhy);
    kind = claims(interp, e, head, n, &k->protected_image);
    k->err = e > 0 ? e : kind == VZCAPS_EXEC_IMAGE ? 0 : ENOEXEC;
    if (k->err == ENOEXEC)
        snprintf(iwhy, sizeof iwhy, "not a program the kernel runs (%s), and macOS follows one #! level only",
                 kind == VZCAPS_EXEC_SCRIPT ? "a script itself" : "no executable format");
    if (k->err)
        snprintf(k->why, sizeof k->why, "its interpreter %s: %s%s", interp, iwhy,
                 *interp && interp[strlen(interp) - 1] == '\r' ? " (its name ends in a carriage return: a Windows line ending)" : "");
}

bool library_has_arch(const char *library, const char *arch)
{
    char archs[128] = "", err[256];
    if (macho_arch_list(library, archs, sizeof archs, err, sizeof err) != 0)
        return false;
    for (const char *p = archs; *p;) {
        size_t k = strcspn(p, " ");
        if (k == strlen(arch) && strncmp(p, arch, k) == 0)
            return true;
        p += k + (p[k] == ' ');
    }
    return false;
}

const char *self_path_kept(void)
{
    static char self[4096];
    if (!self[0])
        self_path(self, sizeof self);
    return self;
}
