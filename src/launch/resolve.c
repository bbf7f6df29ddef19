/* Where a name leads on this machine, as execvp finds it (Libc's search: core's
 * vzcaps_search_step over the kernel's view of each candidate, platform/exec.c), shims included:
 * which entry is a vzcaps shim (a link to this command, of this installation or another), and the
 * real program such a shim starts (the next one on PATH after the shim directory, never a shim
 * again). The facts' first step (plan.c). Owns: the lookup side of shims (src/cli/start/shims.c
 * makes and removes them; start.c starts one). Never: starts anything, or searches PATH
 * otherwise than execvp. */
#define _XOPEN_SOURCE 700
#include "launch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The running command's device and inode: 0, or -1 when its path is unknown. */
int shim_self_id(struct stat *st)
{
    static struct stat cached;
    static int state; /* 0 not looked, 1 known, -1 unknown */
    if (!state) {
        char self[4096];
        self_path(self, sizeof self);
        state = self[0] && stat(self, &cached) == 0 ? 1 : -1;
    }
    *st = cached;
    return state > 0 ? 0 : -1;
}

/* Whether path (links followed) is this command, however it is reached (a link, a chain of
 * links, a hard link): starting it would start vzcaps again. */
static bool is_vzcaps_command(const char *path)
{
    struct stat me, st;
    return shim_self_id(&me) == 0 && stat(path, &st) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino;
}

/* Whether path is a link that leads to a vzcaps command of any installation (the file it
 * resolves to is named vzcaps...): started as NAME, that one is a shim too. */
static bool is_a_vzcaps_shim(const char *path)
{
    struct stat l;
    char target[PATH_MAX];
    return lstat(path, &l) == 0 && S_ISLNK(l.st_mode) && realpath(path, target) &&
           strncmp(vzcaps_basename(target), "vzcaps", 6) == 0;
}

/* execvp's search for name (a '/' in it: that file), from PATH entry `from` on, passing over
 * this command and every vzcaps shim when ours: 0 with l->found and l->k (k.err ENOEXEC: Libc
 * runs it with /bin/sh), or 127/126 with l->why. *skipped counts what was passed over. */
static int search(const char *name, size_t from, bool ours, struct launch_lead *l, size_t *skipped)
{
    if (strchr(name, '/')) {
        snprintf(l->found, sizeof l->found, "%s", name);
        exec_image_read(name, &l->k);
        snprintf(l->why, sizeof l->why, "%s", l->k.why);
        return !l->k.err || l->k.err == ENOEXEC ? 0 : l->k.err == ENOENT ? 127 : 126;
    }
    const char *p = vzcaps_search_path(getenv("PATH"), true), *dir;
    size_t n, i = 0;
    bool eacces = false;
    char denied[1400] = "";
    while (vzcaps_path_entry(&p, &dir, &n)) {
        if (i++ < from || (size_t)snprintf(l->found, sizeof l->found, "%.*s/%s", (int)n, dir, name) >= sizeof l->found)
            continue; /* an entry longer than a path names nothing exec could start: passed over, as execvp does */
        if (ours && (is_vzcaps_command(l->found) || is_a_vzcaps_shim(l->found))) {
            ++*skipped;
            continue;
        }
        exec_image_read(l->found, &l->k);
        int step = l->k.err ? vzcaps_search_step(l->k.err, l->k.exists, true, &eacces) : VZCAPS_SEARCH_SHELL;
        if (step != VZCAPS_SEARCH_NEXT) {
            snprintf(l->why, sizeof l->why, "%s: %s", l->found, l->k.why);
            return step == VZCAPS_SEARCH_STOP ? 126 : 0;
        }
        if ((l->k.exists || (l->k.err != ENOENT && l->k.err != ENOTDIR)) && !denied[0]) /* there, but would not do */
            snprintf(denied, sizeof denied, " (%s: %s)", l->found, l->k.why);
    }
    l->found[0] = '\0';
    l->k.exists = denied[0]; /* a file was there: it cannot start, rather than is not here */
    snprintf(l->why, sizeof l->why, "%s%s", eacces ? "not executable" : "not found", denied);
    return eacces ? 126 : 127;
}

static bool same_dir(const char *a, const struct stat *b)
{
    struct stat st;
    return stat(a, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == b->st_dev && st.st_ino == b->st_ino;
}

/* The PATH entry the shim directory dir is (any spelling of it, a link to it; NULL: the first
 * entry whose NAME is this command, the one exec found): its number, counted from 1, into
 * found_dir; 0 when PATH has none. */
static size_t shim_entry(const char *name, const char *dir, char *found_dir, size_t len)
{
    struct stat dst;
    bool have_dir = dir && stat(dir, &dst) == 0;
    const char *p = vzcaps_search_path(getenv("PATH"), true), *d;
    char cand[4096];
    size_t n, i = 0;
    while (vzcaps_path_entry(&p, &d, &n)) {
        i++;
        snprintf(found_dir, len, "%.*s", (int)n, d);
        if (have_dir ? same_dir(found_dir, &dst)
                     : !dir && (size_t)snprintf(cand, sizeof cand, "%s/%s", found_dir, name) < sizeof cand && is_vzcaps_command(cand))
            return i;
    }
    found_dir[0] = '\0';
    return 0;
}

/* The real program a shim named name in dir stands for (see shim_real): into l, or 127 with l->why. */
static int real_after(const char *name, const char *dir, struct launch_lead *l)
{
    struct stat me;
    if (shim_self_id(&me) != 0) { /* without knowing which files are vzcaps, a shim could start itself */
        snprintf(l->why, sizeof l->why, "this command cannot tell its own path, so it cannot tell a shim from the real %s; refused",
                 name);
        return 127;
    }
    char found_dir[4096];
    size_t skipped = 0, from = shim_entry(name, dir, found_dir, sizeof found_dir);
    if (search(name, from, true, l, &skipped) == 0)
        return 0;
    const char *shown = dir ? dir : found_dir;
    snprintf(l->why, sizeof l->why, "no %s on PATH after the shim directory%s%s%s", name, *shown ? " " : "", shown,
             skipped ? " (only vzcaps shims: refused, as starting one would loop)" : "");
    return 127;
}

int shim_real(const char *name, const char *dir, char *out, size_t len, char *why, size_t whylen)
{
    static struct launch_lead l;
    if (real_after(name, dir, &l) == 0 && (size_t)snprintf(out, len, "%s", l.found) < len)
        return 0;
    snprintf(why, whylen, "%s", l.why);
    return 127;
}

bool shim_is_started_as(const char *argv0)
{
    if (!argv0 || !*argv0)
        return false;
    const char *base = vzcaps_basename(argv0);
    return *base && strncmp(base, "vzcaps", 6) != 0;
}

bool launch_is_shim(const char *path)
{
    return shim_is_started_as(path) && (is_vzcaps_command(path) || is_a_vzcaps_shim(path));
}

void launch_lead_find(const char *name, struct launch_lead *l)
{
    memset(l, 0, sizeof *l);
    size_t skipped = 0;
    if ((l->rc = search(name, 0, false, l, &skipped)) != 0 || !launch_is_shim(l->found))
        return; /* a link to a vzcaps command of any installation is a shim */
    snprintf(l->shim, sizeof l->shim, "%s", l->found);
    char target[PATH_MAX], dir[4096];
    if (!is_vzcaps_command(l->shim) && realpath(l->shim, target))
        snprintf(l->command, sizeof l->command, "%s", target); /* another installation's */
    snprintf(dir, sizeof dir, "%s", l->shim);
    char *slash = strrchr(dir, '/');
    *(slash == dir ? slash + 1 : slash) = '\0';
    l->rc = real_after(vzcaps_basename(l->shim), dir, l);
}

void shim_describe(const char *name, char *out, size_t len)
{
    static struct launch_lead l;
    out[0] = '\0';
    if (!name || !*name || strchr(name, '/'))
        return;
    launch_lead_find(name, &l);
    if (!l.shim[0] || l.command[0])
        return;
    if (l.rc == 0)
        snprintf(out, len, "%s on PATH is a vzcaps shim (%s), which runs %s through vzcaps run", name, l.shim, l.found);
    else
        snprintf(out, len, "%s on PATH is a vzcaps shim (%s), and %s: it exits 127", name, l.shim, l.why);
}

/* Programs people make shims for (the Metal clients vzcaps is used with): a NAME that is one or
 * two edits from one of them, is none of them and is not on PATH is taken for a typo. */
static const char *const known_clients[] = {
    "llama-server", "llama-cli", "llama-bench", "llama-perplexity", "llama-run", "llama-embedding", "llama-mtmd-cli",
    "llama-simple", "ollama", "python3", "python", "whisper-cli", "whisper-server", "koboldcpp",
};

const char *launch_client_typo(const char *name, const char *dir)
{
    size_t n = sizeof known_clients / sizeof known_clients[0];
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, known_clients[i]) == 0)
            return NULL;
    const char *near = vzcaps_did_you_mean(name, known_clients, n);
    char real[4096], why[4400];
    return near && shim_real(name, dir, real, sizeof real, why, sizeof why) != 0 ? near : NULL;
}
