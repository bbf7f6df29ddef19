/* Finding things the command runs or injects: the library (next to the command, then in
 * ../lib; never PATH or the current directory, where a library could be planted), executables
 * on PATH, and running a helper program to completion. */
#define _XOPEN_SOURCE 700
#include "cli.h"

#include <errno.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int find_library(char *buf, size_t len, char *tried, size_t tried_len)
{
    char self[1024];
    self_path(self, sizeof self);
    tried[0] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    const char *rel[] = {"", "/../lib"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, len, "%s%s/%s", self, rel[i], library_file);
        vzcaps_appendf(tried, tried_len, "%s%s", i ? ", " : "", buf);
        if (access(buf, R_OK) == 0) {
            char *real = realpath(buf, NULL);
            if (real) {
                snprintf(buf, len, "%s", real);
                free(real);
            }
            return 0;
        }
    }
    return -1;
}

bool find_executable(const char *name, const char *near, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *slash = near ? strrchr(near, '/') : NULL;
    if (slash) {
        snprintf(out, len, "%.*s/%s", (int)(slash - near), near, name);
        if (access(out, X_OK) == 0)
            return true;
    }
    for (const char *path = getenv("PATH"); path && *path;) {
        size_t n = strcspn(path, ":");
        snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name);
        if (access(out, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

int spawn_wait(const char *path, char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv(path, argv);
        _exit(127);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

char *read_text_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            snprintf(err, errlen, "%s: out of memory", path);
            return NULL;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (cap >= (64u << 20)) {
            fclose(f);
            free(buf);
            snprintf(err, errlen, "%s: larger than 64 MiB", path);
            return NULL;
        }
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger)
            free(buf);
        buf = bigger;
    }
    fclose(f);
    buf[n < cap ? n : cap - 1] = '\0';
    *len = n;
    return buf;
}
