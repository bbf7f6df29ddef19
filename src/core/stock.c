/* Stock means stock (issue 33 item 3): the environment of a run that must be stock (doctor
 * --bundle's, bench's, probe's and verify's stock children). Owns: which entries such a child
 * gets. Never: looks at the file system (which PATH entries are vzcaps shim directories is a
 * fact the caller gathers), reads the real environment, allocates (callers hand in memory). */
#include "vzcaps_core.h"

#include <string.h>

size_t vzcaps_path_entries(const char *path)
{
    size_t n = 1;
    for (const char *p = path; *p; p++)
        n += *p == ':';
    return n;
}

/* PATH's value without the entries marked as shim directories, into out (at least
 * strlen(path) + 1 bytes): its length. Entries past n are kept. */
static size_t path_without_shims(const char *path, const bool *shim_dir, size_t n, char *out)
{
    size_t w = 0, i = 0, kept = 0;
    for (const char *p = path;; i++) {
        size_t len = strcspn(p, ":");
        if (i >= n || !shim_dir[i]) {
            if (kept++)
                out[w++] = ':';
            memcpy(out + w, p, len);
            w += len;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    out[w] = '\0';
    return kept ? w : (size_t)-1;
}

long vzcaps_stock_env(const struct vzcaps_stock_env_in *in, void *mem, size_t cap, char *const **out)
{
    size_t vl = strlen(in->preload_var), n_env = 0, text = 0;
    for (char *const *e = in->envp; e && *e; e++, n_env++)
        text += strlen(*e) + 1;
    size_t ptrs = (n_env + 1) * sizeof(char *), need = ptrs + text;
    if (need > cap)
        return (long)need;
    char **arr = mem;
    char *t = (char *)mem + ptrs;
    size_t k = 0;
    bool have_preload = false, have_path = false;
    for (char *const *e = in->envp; e && *e; e++) {
        size_t len = strlen(*e);
        if (vzcaps_env_is_ours(*e))
            continue;
        if (vzcaps_env_is(*e, in->preload_var)) {
            if (have_preload)
                continue; /* a later duplicate: the first entry speaks, as the loader reads it */
            have_preload = true;
            memcpy(t, *e, vl + 1);
            int r = vzcaps_strip_library_facts(*e + vl + 1, in->seps, in->libname, in->lib_elem, in->n_lib, t + vl + 1, len - vl);
            if (r <= 0)
                continue; /* only our library was in it (or nothing): the entry goes */
            if ((size_t)r == len - vl - 1) { /* nothing of ours in it: the entry as it was */
                arr[k++] = *e;
                continue;
            }
            arr[k++] = t;
            t += vl + 1 + (size_t)r + 1;
        } else if (vzcaps_env_is(*e, "PATH")) {
            if (have_path)
                continue; /* as execvp reads it: the first */
            have_path = true;
            memcpy(t, "PATH=", 5);
            size_t r = path_without_shims(*e + 5, in->shim_dir, in->n_path, t + 5);
            if (r == (size_t)-1)
                continue; /* every entry a shim directory: no PATH, the system's default search */
            arr[k++] = t;
            t += 5 + r + 1;
        } else {
            arr[k++] = *e;
        }
    }
    arr[k] = NULL;
    *out = arr;
    return 0;
}
