/* Where a name leads on PATH, shims included: which entry is a vzcaps shim (a link to this
 * command, of this installation or another), and the real program such a shim starts (the next
 * one on PATH after the shim directory, never a shim again). A fact for the plan (plan.c).
 * Owns: the lookup side of shims (src/cli/start/shims.c makes and removes them; start.c starts one).
 * Never: starts anything, or follows PATH differently from exec. */
#define _XOPEN_SOURCE 700
#include "launch.h"

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

/* PATH's entries in order, as execvp reads them (an empty entry is the current directory). */
struct path_walk {
    const char *p;
    char entry[4096];
    bool done;
};

static bool path_next(struct path_walk *w)
{
    while (!w->done) {
        size_t n = strcspn(w->p, ":");
        bool fits = n < sizeof w->entry;
        if (fits)
            snprintf(w->entry, sizeof w->entry, "%.*s", n ? (int)n : 1, n ? w->p : ".");
        w->done = w->p[n] == '\0';
        w->p += n + !w->done;
        if (fits) /* an entry longer than a path names nothing exec could start */
            return true;
    }
    return false;
}

static bool same_dir(const char *a, const struct stat *b)
{
    struct stat st;
    return stat(a, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == b->st_dev && st.st_ino == b->st_ino;
}

int shim_real(const char *name, const char *dir, char *out, size_t len, char *why, size_t whylen)
{
    struct stat me;
    if (shim_self_id(&me) != 0) { /* without knowing which files are vzcaps, a shim could start itself */
        snprintf(why, whylen, "this command cannot tell its own path, so it cannot tell a shim from the real %s; refused", name);
        return 127;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) {
        snprintf(why, whylen, "PATH is empty, so there is no %s to start", name);
        return 127;
    }
    /* where the search starts: after the first entry that is dir (any spelling, a link to it),
     * or, with no dir, after the first entry whose NAME is this command (the one exec found) */
    struct stat dst;
    bool have_dir = dir && stat(dir, &dst) == 0;
    size_t start = 0, i = 0, skipped = 0;
    char cand[4096], found_dir[4096] = "";
    struct path_walk w = {path, "", false};
    while (path_next(&w)) {
        i++;
        bool here = have_dir ? same_dir(w.entry, &dst)
                             : !dir && (size_t)snprintf(cand, sizeof cand, "%s/%s", w.entry, name) < sizeof cand &&
                                   is_vzcaps_command(cand);
        if (here) {
            start = i;
            snprintf(found_dir, sizeof found_dir, "%s", w.entry);
            break;
        }
    }
    w = (struct path_walk){path, "", false};
    i = 0;
    while (path_next(&w)) {
        if (++i <= start)
            continue;
        if ((size_t)snprintf(cand, sizeof cand, "%s/%s", w.entry, name) >= sizeof cand)
            continue;
        /* DIR again, another shim directory of this vzcaps or of another installation: never a loop */
        if (is_vzcaps_command(cand) || is_a_vzcaps_shim(cand)) {
            skipped++;
            continue;
        }
        char cwhy[200];
        if (resolve_target(cand, out, len, cwhy, sizeof cwhy) == 0)
            return 0;
    }
    const char *shown = dir ? dir : found_dir;
    snprintf(why, whylen, "no %s on PATH after the shim directory%s%s%s", name, *shown ? " " : "", shown,
             skipped ? " (only vzcaps shims: refused, as starting one would loop)" : "");
    return 127;
}

bool shim_is_started_as(const char *argv0)
{
    if (!argv0 || !*argv0)
        return false;
    const char *base = vzcaps_basename(argv0);
    return *base && strncmp(base, "vzcaps", 6) != 0;
}

bool shim_at(const char *path, char *out, size_t len, char *why, size_t whylen)
{
    out[0] = why[0] = '\0';
    if (!shim_is_started_as(path) || !(is_vzcaps_command(path) || is_a_vzcaps_shim(path)))
        return false; /* a link to a vzcaps command of any installation is a shim */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    if (shim_real(vzcaps_basename(path), slash ? dir : NULL, out, len, why, whylen) != 0)
        out[0] = '\0';
    return true;
}

bool shim_real_for(const char *name, char *out, size_t len)
{
    char first[4096], why[4400];
    out[0] = '\0';
    if (!name || !*name || strchr(name, '/') || resolve_target(name, first, sizeof first, why, sizeof why) != 0)
        return false;
    return shim_at(first, out, len, why, sizeof why);
}

void shim_describe(const char *name, char *out, size_t len)
{
    out[0] = '\0';
    if (!name || !*name || strchr(name, '/'))
        return;
    char first[4096], why[4400], real[4096];
    if (resolve_target(name, first, sizeof first, why, sizeof why) != 0 || !is_vzcaps_command(first))
        return;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", first);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    if (shim_real(name, slash ? dir : NULL, real, sizeof real, why, sizeof why) == 0)
        snprintf(out, len, "%s on PATH is a vzcaps shim (%s), which runs %s through vzcaps run", name, first, real);
    else
        snprintf(out, len, "%s on PATH is a vzcaps shim (%s), and %s: it exits 127", name, first, why);
}

bool shim_other_command(const char *path, char *out, size_t len)
{
    char target[PATH_MAX];
    out[0] = '\0';
    if (is_vzcaps_command(path) || !is_a_vzcaps_shim(path) || !realpath(path, target))
        return false;
    snprintf(out, len, "%s", target);
    return true;
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
