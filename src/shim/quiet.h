/* The injected library's writes into files of the host's (say.c, statslog.c). Needs
 * <signal.h> with POSIX visible (sigset_t). */
#ifndef VZCAPS_QUIET_H
#define VZCAPS_QUIET_H

#include "shim.h"

#include <signal.h>

/* say.c: SIGPIPE and SIGXFSZ blocked in this thread around writes to a file of the host's
 * (a pipe without reader, a file over RLIMIT_FSIZE), and the one a write raised taken back.
 * vzcaps_quiet_wrote records each write's failure (its errno: EPIPE raised SIGPIPE, EFBIG
 * SIGXFSZ); only a signal a write of ours raised is taken, never one sent to the host meanwhile
 * or pending before (those are delivered when the mask is restored). */
struct vzcaps_quiet {
    sigset_t old;
    bool blocked, was_pending[2], raised[2];
};
VZCAPS_HIDDEN void vzcaps_quiet_begin(struct vzcaps_quiet *q);
VZCAPS_HIDDEN void vzcaps_quiet_wrote(struct vzcaps_quiet *q, int write_errno);
VZCAPS_HIDDEN void vzcaps_quiet_end(struct vzcaps_quiet *q);

#endif
