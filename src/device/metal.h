/* The GPU side of probe and verify: one implementation per platform (metal_darwin.c drives
 * Metal through the Objective-C runtime; metal_linux.c says there is no Metal device). */
#ifndef VZCAPS_METAL_H
#define VZCAPS_METAL_H

#include "verify_core.h"

/* Reads every answer of the default device. 0, or -1 with the reason in a->error. */
int metal_probe(struct probe_answers *a);
/* Runs one group of checks (a verify_groups name; the threadgroup check uses the plan's
 * bytes). 0, or -1 when there is no Metal device. */
int metal_verify(const struct vplan *plan, const char *group, struct vresult *r);

/* The default device's class and its superclasses, most derived first (at most max names,
 * pointing into the runtime), and the class among them whose initGPUFamilySupport the device
 * runs (NULL when it has none). 0, or -1 with the reason in why (no Metal device). */
int metal_device_classes(const char **chain, size_t max, size_t *n, const char **init_owner, char *why, size_t why_len);

#endif
