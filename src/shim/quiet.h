/* The injected library's writes into files of the host's (say.c, statslog.c): the one way they
 * are made. Needs nothing but shim.h. */
#ifndef VZCAPS_QUIET_H
#define VZCAPS_QUIET_H

#include "shim.h"

#include <sys/types.h>

/* say.c: write(2) of n bytes to fd, raising no SIGPIPE or SIGXFSZ the host can receive, in any
 * thread: on Linux, where the kernel sends them to the writing thread, they are blocked here for
 * the write and the one it raised is taken back (never one the host had pending); on macOS,
 * where xnu sends them to the process, the write is not made where it would raise one (a hung-up
 * pipe or socket: -1, EPIPE; past RLIMIT_FSIZE: -1, EFBIG). Otherwise as write(2), errno too. */
VZCAPS_HIDDEN ssize_t vzcaps_quiet_write(int fd, const void *buf, size_t n);

#endif
