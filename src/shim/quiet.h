/* The injected library's writes into files of the host's (shim.c, statslog.c). Needs
 * <signal.h> with POSIX visible (sigset_t). */
#ifndef VZCAPS_QUIET_H
#define VZCAPS_QUIET_H

#include "shim.h"

#include <signal.h>

/* shim.c: SIGPIPE and SIGXFSZ blocked in this thread around a write to a file of the host's
 * (a pipe without reader, a file over RLIMIT_FSIZE), and one the write raised taken back. */
struct vzcaps_quiet {
    sigset_t old;
    bool blocked, was_pending[2];
};
VZCAPS_HIDDEN void vzcaps_quiet_begin(struct vzcaps_quiet *q);
VZCAPS_HIDDEN void vzcaps_quiet_end(struct vzcaps_quiet *q);

#endif
