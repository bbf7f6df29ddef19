/* No Metal on Linux: probe and verify report that and exit with their own status. */
#include "metal.h"

#include <string.h>

int metal_probe(struct probe_answers *a)
{
    memset(a, 0, sizeof *a);
    snprintf(a->error, sizeof a->error, "no Metal device: this is not macOS");
    return -1;
}

int metal_verify(const struct vplan *plan, const char *group, struct vresult *r)
{
    (void)plan;
    (void)group;
    memset(r, 0, sizeof *r);
    return -1;
}

int metal_device_classes(const char **chain, size_t max, size_t *n, const char **init_owner, char *why, size_t why_len)
{
    (void)chain;
    (void)max;
    *n = 0;
    *init_owner = NULL;
    snprintf(why, why_len, "no Metal device: this is not macOS");
    return -1;
}
