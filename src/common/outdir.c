/* A bundle directory (doctor --bundle, bench --out): new or empty, never a link, every file in
 * it written once as a new file through safewrite, SHA256SUMS from the bytes written.
 * Owns: which files a bundle holds and which could not be written. Never: writes over a file,
 * through a link, or counts a file it could not write as written. */
#define _POSIX_C_SOURCE 200809L
#include "outdir.h"

#include "safewrite.h"
#include "sha256.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int out_dir_open(struct out_dir *d, const char *cmd, const char *path)
{
    memset(d, 0, sizeof *d);
    d->cmd = cmd;
    d->path = path;
    char *err = NULL;
    d->fd = vzcaps_dir_open_output(path, NULL, &err);
    if (d->fd < 0) {
        eprintf("vzcaps %s: %s", cmd, err ? err : path);
        free(err);
        return -1;
    }
    return 0;
}

int out_dir_put(struct out_dir *d, const char *name, const void *data, size_t len)
{
    char *err = NULL;
    const struct vzcaps_wopts opts = {.mode = 0644, .replace = VZCAPS_NEW_ONLY};
    size_t room = sizeof d->files / sizeof d->files[0] - (strcmp(name, "SHA256SUMS") != 0); /* one kept for it */
    if (d->n >= room) { /* a file SHA256SUMS could not list is not written */
        eprintf("vzcaps %s: cannot write %s/%s: more than %zu files in one bundle", d->cmd, d->path, name, d->n);
        d->failures++;
        return -1;
    }
    if (vzcaps_write_fileat(d->fd, d->path, name, data, len, &opts, &err) != 0) {
        eprintf("vzcaps %s: cannot write %s", d->cmd, err ? err : name);
        free(err);
        d->failures++;
        return -1;
    }
    d->files[d->n].name = xformat("%s", name);
    sha256_hex(data, len, d->files[d->n++].hex);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct out_file *)a)->name, ((const struct out_file *)b)->name);
}

int out_dir_sums(struct out_dir *d)
{
    qsort(d->files, d->n, sizeof d->files[0], by_name);
    char *sums = xformat("%s", "");
    for (size_t i = 0; i < d->n; i++) {
        char *more = xformat("%s%s  %s\n", sums, d->files[i].hex, d->files[i].name);
        free(sums);
        sums = more;
    }
    int rc = out_dir_put(d, "SHA256SUMS", sums, strlen(sums));
    free(sums);
    return rc;
}

void out_dir_close(struct out_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->files[i].name);
    d->n = 0;
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}
