/* The first-run bundle's verdict (verdict.c). */
#ifndef VZCAPS_VERDICT_H
#define VZCAPS_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

/* "WORKS", "PARTIAL", "DOES NOT WORK", "CANNOT TELL" or "NOT ON MACOS" from probe --json's and
 * verify --json's outputs (NULL: not there), with a one-sentence reason in reason. */
const char *bundle_verdict(bool macos, const char *probe_json, const char *verify_json, char *reason, size_t len);

#endif
