/* Stock means stock: which PATH entries are vzcaps shim directories (a fact of the file
 * system), and the environment a stock child gets from them (the decision is the core's,
 * vzcaps_stock_env). Never: writes, follows a link to a record, blocks on a FIFO. */
#define _POSIX_C_SOURCE 200809L
#include "stockenv.h"
#include "child.h"
#include "record.h"
#include "text.h"
#include "../core/vzcaps_core.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool vzcaps_is_shim_dir(const char *dir)
{
    int fd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    int scan = dup(fd);
    DIR *d = scan >= 0 ? fdopendir(scan) : NULL;
    if (!d) {
        if (scan >= 0)
            close(scan);
        close(fd);
        return false;
    }
    size_t sl = strlen(VZCAPS_SHIM_RECORD_SUFFIX);
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= sl + 1 || e->d_name[0] != '.' || strcmp(e->d_name + l - sl, VZCAPS_SHIM_RECORD_SUFFIX) != 0)
            continue;
        char *name = strndup(e->d_name + 1, l - sl - 1);
        found = name && *name && vzcaps_made_by_record(fd, name, e->d_name, VZCAPS_SHIM_RECORD_MAKER);
        free(name);
    }
    closedir(d);
    close(fd);
    return found;
}

const char *vzcaps_env_path(char *const *env)
{
    for (char *const *e = env; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            return *e + 5;
    return NULL;
}

char **vzcaps_stock_environ(char *const *envp, const char *preload_var, const char *libname)
{
    const char *path = vzcaps_env_path(envp);
    size_t n = path ? vzcaps_path_entries(path) : 0;
    bool *shim_dir = calloc(n + 1, sizeof *shim_dir);
    char *entry = path ? malloc(strlen(path) + 1) : NULL;
    if (!shim_dir || (path && !entry)) {
        free(shim_dir), free(entry);
        return NULL;
    }
    for (size_t i = 0; path && i < n; i++) { /* each entry's own fact */
        size_t len = strcspn(path, ":");
        memcpy(entry, path, len);
        entry[len] = '\0';
        shim_dir[i] = vzcaps_is_shim_dir(entry);
        path += len + (path[len] == ':');
    }
    free(entry);
    /* the loader's separators: ":" for dyld, ": " for glibc's ld.so (src/shim/trigger_*.c) */
    struct vzcaps_stock_env_in in = {envp, shim_dir, n, preload_var, strcmp(preload_var, "LD_PRELOAD") == 0 ? ": " : ":",
                                     libname};
    char *const *out = NULL;
    long need = vzcaps_stock_env(&in, NULL, 0, &out);
    void *mem = need > 0 ? malloc((size_t)need) : NULL;
    if (mem && vzcaps_stock_env(&in, mem, (size_t)need, &out) != 0) {
        free(mem);
        mem = NULL;
    }
    free(shim_dir);
    return mem;
}

static bool keep_none(const char *entry)
{
    (void)entry;
    return false;
}

void vzcaps_stock_child(struct vzcaps_child_opts *co, const char *preload_var, const char *libname)
{
    extern char **environ;
    static char **env;
    free(env);
    env = vzcaps_stock_environ(environ, preload_var, libname);
    if (!env) {
        eprintf("vzcaps: out of memory");
        exit(1);
    }
    co->env_keep = keep_none; /* the child's environment is exactly the stock one */
    co->env_add = env;
}
