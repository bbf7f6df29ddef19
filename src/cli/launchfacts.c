/* Facts for the launch decisions: SIP's state (csrutil), quarantine lines, library slices.
 * Never: decides what to do with them (core/launch.c does); runs anything but csrutil. */
#define _XOPEN_SOURCE 700
#include "launchfacts.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int sip_status(void)
{
    if (!platform_is_macos || access("/usr/bin/csrutil", X_OK) != 0)
        return VZCAPS_SIP_UNKNOWN;
    int fds[2];
    if (pipe(fds) != 0)
        return VZCAPS_SIP_UNKNOWN;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(fds[1], 1);
        if (null >= 0)
            dup2(null, 0), dup2(null, 2);
        close(fds[0]);
        close(fds[1]);
        execl("/usr/bin/csrutil", "csrutil", "status", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[4096];
    size_t n = 0;
    for (;;) { /* read all of it (a full pipe must not block the child); keep the first 4 KiB */
        char chunk[512];
        ssize_t r = read(fds[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t take = (size_t)r < sizeof out - 1 - n ? (size_t)r : sizeof out - 1 - n;
        memcpy(out + n, chunk, take);
        n += take;
    }
    close(fds[0]);
    out[n] = '\0';
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return VZCAPS_SIP_UNKNOWN;
    return vzcaps_sip_parse(out);
}

/* path in single quotes for a shell, each ' written as '\'' */
static void quoted(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    vzcaps_appendf(out, len, "'");
    for (const char *p = path; *p; p++) {
        if (*p == '\'')
            vzcaps_appendf(out, len, "'\\''");
        else
            vzcaps_appendf(out, len, "%c", *p);
    }
    vzcaps_appendf(out, len, "'");
}

void quarantine_line(const char *what, const char *path, char *out, size_t len)
{
    char value[1024], why[300], desc[200];
    size_t n = 0;
    out[0] = '\0';
    int q = quarantine_value(path, value, sizeof value, &n, why, sizeof why);
    if (q < 0) {
        snprintf(out, len, "%s %s: its quarantine mark cannot be read: %s", what, path, why);
        return;
    }
    if (q == 0)
        return;
    vzcaps_quarantine_describe(value, n, desc, sizeof desc);
    char q_path[4200];
    quoted(path, q_path, sizeof q_path);
    snprintf(out, len, "%s %s is %s: Gatekeeper may refuse it, and dyld may terminate a process it is injected into; "
                       "remove the mark with: xattr -d com.apple.quarantine %s",
             what, path, desc, q_path);
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
