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
