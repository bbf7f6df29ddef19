/* The stats log (log_file, VZCAPS_LOG_FILE; `vzcaps stats` reads it): one record per process,
 * appended when the first device is hooked or left stock (where the one line is decided).
 * The constructor only notes whether there is a log and the program's name as it started;
 * the rest (the path and LOG.1, the directory's check, the executable's path, the refusal) is
 * prepared by the one writer at the first device, so a process without a device pays nothing. Written with one open, at most one rename, one write(2) of the whole record
 * (at most 1024 bytes, O_APPEND) and a close: no malloc, no lock that waits (a rotation takes
 * one that never does), no blocking open (nothing but a regular file is opened; O_NONBLOCK
 * besides), never through a link (O_NOFOLLOW), never a file of someone else's, errno as it was,
 * SIGXFSZ taken back, and nothing said when anything fails (the record is lost, the host is not
 * touched). */
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE /* O_NOFOLLOW on macOS */
#include "quiet.h"

#include "../common/statsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char log_path[VZCAPS_PATH_MAX + 1], log_old[VZCAPS_PATH_MAX + 3];
static char exe_path[VZCAPS_PATH_MAX + 1];
static char refusal[VZCAPS_MAX_NOTES * (VZCAPS_NOTE_LEN + 2)];
static const struct vzcaps_config_result *armed; /* the constructor's result, static and final */
static const char *program;                      /* the program's name as it started (static) */
static atomic_flag written = ATOMIC_FLAG_INIT;

void vzcaps_statslog_prepare(const struct vzcaps_config_result *r, const char *exe)
{
    if (r->log_file[0]) /* off: nothing is written, nothing said */
        armed = r, program = exe;
}

/* The rest of the preparation, by the one writer (after `written` elected it): the paths, the
 * directory's check, the executable's path, the refusal. false: nowhere safe to write. */
static bool prepare_now(const struct vzcaps_config_result *r)
{
    const struct vzcaps_profile *p = &r->profile;
    size_t n = strlen(r->log_file);
    if (n > VZCAPS_PATH_MAX || !vzcaps_statsfile_dir_ok(r->log_file))
        return false; /* nowhere safe: nothing is written, nothing said */
    memcpy(log_path, r->log_file, n + 1);
    memcpy(log_old, r->log_file, n);
    memcpy(log_old + n, ".1", 3);
    if (vzcaps_platform_exe_path(exe_path, sizeof exe_path) != 0)
        exe_path[0] = '\0';
    /* an empty argv[0] (execve(path, {"", NULL}, env)) names nothing: the executable's own base
     * name instead ("?" when even that is unknown), as every record names a program */
    if (!program[0])
        program = exe_path[0] ? vzcaps_basename(exe_path) : "?";
    refusal[0] = '\0';
    for (size_t i = 0; p->state == VZCAPS_STOCK_REFUSED && i < p->n_notes; i++)
        vzcaps_appendf(refusal, sizeof refusal, "%s%s", i ? "; " : "", p->notes[i]);
    return true;
}

static void append(bool hooked, const char *cls, const char *reason)
{
    static char line[VZCAPS_STATSLOG_MAX];
    struct vzcaps_statslog_record rec = {(long long)time(NULL), (long long)getpid(),
                                         hooked ? vzcaps_effective->apple_family_max : 0, hooked, program, exe_path, cls,
                                         hooked ? "" : reason};
    size_t n = vzcaps_statslog_format(&rec, line);
    int fd = vzcaps_statsfile_open(log_path, log_old);
    if (fd < 0)
        return;
    struct vzcaps_quiet q;
    vzcaps_quiet_begin(&q);
    if (write(fd, line, n) < 0) /* one write: O_APPEND keeps concurrent records whole */
        vzcaps_quiet_wrote(&q, errno); /* a short or failed write is a lost record, nothing more */
    vzcaps_quiet_end(&q);
    close(fd);
}

void vzcaps_statslog_event(bool hooked, const char *cls, const char *reason, const char *no_raise)
{
    (void)no_raise; /* recorded by issue 44's statslog.c */
    if (!armed || atomic_flag_test_and_set_explicit(&written, memory_order_relaxed))
        return;
    int saved = errno;
    if (prepare_now(armed))
        append(hooked, cls, reason && reason[0] ? reason : refusal);
    errno = saved;
}

/* The records of effect (issue 44), written by that change's statslog.c: nothing until then */
void vzcaps_statslog_effect(int kind, const char *image, unsigned long long stock, unsigned long long given)
{
    (void)kind, (void)image, (void)stock, (void)given;
}
void vzcaps_statslog_stock_caller(const char *image)
{
    (void)image;
}
