/* Whether the installed library can be inherited safely on this machine (doctor's line): the
 * library's slices, the kind of processor and SIP's state (portable; see inheritsafe.c).
 * Never: reads a file or runs a program (the caller passes what it found). */
#ifndef VZCAPS_INHERITSAFE_H
#define VZCAPS_INHERITSAFE_H

#include <stdbool.h>
#include <stddef.h>

enum { INHERIT_SAFE, INHERIT_LIMITED, INHERIT_UNSAFE, INHERIT_NOT_MACOS };

/* macos: this is macOS; apple_silicon: 1 Apple silicon (arm64e programs exist), 0 Intel, -1
 * unknown (taken as Apple silicon); sip: VZCAPS_SIP_*; archs: the library's slices ("arm64
 * x86_64"), NULL when there is no library. Writes one line for doctor ("unsafe: ..."), whose
 * first word is the verdict, and returns it. */
int inherit_safety(bool macos, int apple_silicon, int sip, const char *archs, char *line, size_t len);
/* "safe", "limited", "unsafe", "not macOS" */
const char *inherit_safety_name(int verdict);

#endif
