/* Facts about this machine that the launch decisions (core/launch.c) take as inputs: SIP's
 * state, a file's quarantine mark, a library's slices. Gathered here, decided there. */
#ifndef VZCAPS_LAUNCHFACTS_H
#define VZCAPS_LAUNCHFACTS_H

#include "cli.h"

/* VZCAPS_SIP_*: from `/usr/bin/csrutil status` on macOS; unknown elsewhere or when it fails. */
int sip_status(void);
/* launchfacts_<platform>.c: the com.apple.quarantine attribute of path (not followed when it
 * is a link), at most cap bytes: 1 with *n set, 0 when there is none, -1 when it cannot be
 * read (why says). Linux: always 0 (no such attribute). */
int quarantine_value(const char *path, char *buf, size_t cap, size_t *n, char *why, size_t len);
/* One line about a quarantined file (its mark described, what it does, the command that
 * removes it) into out, or "" when path carries no mark. */
void quarantine_line(const char *what, const char *path, char *out, size_t len);
/* Whether the Mach-O library has a slice of arch ("arm64e"); false when unreadable. */
bool library_has_arch(const char *library, const char *arch);

#endif
