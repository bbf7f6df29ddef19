/* The one line the library says (prepared by the constructor, written once by the one writer
 * at the first device) and the way it writes into files of the host's: standard error as the
 * process started with it, and no SIGPIPE or SIGXFSZ the host can receive.
 * Never: blocks for more than 200 ms, writes to a file the program opened since it started,
 * allocates or locks on a hook's path, changes errno or the state of fd 2. */
#define _GNU_SOURCE /* the POSIX and BSD interfaces glibc hides in strict C11 (macOS shows them) */
#include "quiet.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Standard error as the process started with it. The line is written at the first device,
 * long after start-up, by when fd 2 may hold a file of the program's own: a process started
 * with stderr closed, or one that closed it (daemons do) or whose stderr file was deleted and
 * whose next open took fd 2 (ext4 hands the freed inode to the next file at once, so device
 * and inode alone do not tell the files apart). So:
 * - a regular file is pinned: the constructor keeps a close-on-exec duplicate of fd 2 (at 100
 *   or above where the limit allows, out of the way of the low numbers programs expect), so its
 *   inode cannot be freed and reused while we hold it; the line is written to that duplicate,
 *   and only while fd 2 is the same file (device, inode, type) as the duplicate still is. Cost:
 *   one descriptor, and a deleted stderr file's blocks stay in use until the process exits.
 * - anything else (a terminal, a pipe, a socket, /dev/null) is not pinned: holding a pipe or a
 *   socket would keep its reader from seeing end-of-file after the program closes it. Its
 *   identity (device, inode, type, rdev) is compared at the write.
 * - in doubt (fd 2 closed at start, a different file now, our duplicate closed or replaced by
 *   the program), nothing is written. */
static struct {
    bool open;
    int kept; /* the duplicate of a regular file, or -1 */
    dev_t dev, rdev;
    ino_t ino;
    mode_t type;
} stderr_at_start = {false, -1, 0, 0, 0, 0};

static bool same_file(const struct stat *st)
{
    return st->st_dev == stderr_at_start.dev && st->st_ino == stderr_at_start.ino &&
           (st->st_mode & S_IFMT) == stderr_at_start.type && st->st_rdev == stderr_at_start.rdev;
}

void vzcaps_say_note_stderr(void)
{
    struct stat st;
    if (fstat(2, &st) == 0)
        stderr_at_start.open = true, stderr_at_start.dev = st.st_dev, stderr_at_start.ino = st.st_ino,
        stderr_at_start.type = st.st_mode & S_IFMT, stderr_at_start.rdev = st.st_rdev;
}

/* Once, at the end of the constructor, when the library may write a line. */
static void pin_stderr(void)
{
    struct stat st;
    if (!stderr_at_start.open || stderr_at_start.type != S_IFREG || fstat(2, &st) != 0 || !same_file(&st))
        return;
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
    if (fd < 0)
        fd = fcntl(2, F_DUPFD_CLOEXEC, 3); /* a descriptor limit under 101 */
    if (fd < 0)
        stderr_at_start.open = false; /* in doubt later: nothing is written */
    stderr_at_start.kept = fd;
}

/* The descriptor the line may be written to now, or -1 (never a file the program opened since). */
static int stderr_target(void)
{
    struct stat st;
    if (!stderr_at_start.open || fstat(2, &st) != 0 || !same_file(&st))
        return -1;
    if (stderr_at_start.type != S_IFREG)
        return 2;
    return stderr_at_start.kept >= 0 && fstat(stderr_at_start.kept, &st) == 0 && same_file(&st) ? stderr_at_start.kept : -1;
}

/* Whether fd takes more bytes before the deadline. */
static bool fd_writable(int fd, long long deadline)
{
    for (;;) {
        long long left = deadline - now_us();
        if (left <= 0 || fd >= FD_SETSIZE)
            return false;
        struct timeval tv = {(time_t)(left / 1000000), (suseconds_t)(left % 1000000)};
        fd_set w;
        FD_ZERO(&w);
        FD_SET(fd, &w);
        int r = select(fd + 1, NULL, &w, NULL, &tv);
        if (r >= 0 || errno != EINTR)
            return r > 0;
    }
}

/* One line to standard error. The state of fd 2 is left alone (no O_NONBLOCK, no
 * F_SETNOSIGPIPE: they would change it for the host process too), and no write raises a signal
 * (vzcaps_quiet_write); each chunk waits until the file is writable, within 200 ms for the whole
 * line, and is no larger than PIPE_BUF on macOS (512), so a writable pipe takes it without
 * blocking. A reader that never reads costs the host at most 200 ms, once. errno is as it was. */
VZCAPS_HIDDEN void vzcaps_write_stderr_line(const char *line, size_t n)
{
    int saved = errno;
    int fd = stderr_target(); /* -1: the line is lost, the program's file is not touched */
    long long deadline = now_us() + 200000;
    for (size_t off = 0; fd >= 0 && off < n;) {
        if (!fd_writable(fd, deadline))
            break;
        size_t chunk = n - off < 512 ? n - off : 512;
        ssize_t w = vzcaps_quiet_write(fd, line + off, chunk);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* closed, full or gone: the line is lost, the host is not */
        off += (size_t)w;
    }
    errno = saved;
}

/* ---- writes into files of the host's that raise no signal the host can receive ----
 * A write to a pipe or socket whose reader is gone raises SIGPIPE, one past RLIMIT_FSIZE
 * SIGXFSZ; by default either ends the process.
 * - Linux sends them to the writing thread (fs/pipe.c pipe_write, net/unix/af_unix.c,
 *   mm/filemap.c generic_write_check_limits: send_sig(sig, current, 0), which kernel/signal.c
 *   send_sig_info queues as PIDTYPE_PID, for that thread alone): blocked in this thread for the
 *   write, the one the write raised is taken back (never one the host had pending before).
 * - xnu sends them to the process (sys_generic.c:601-606, sys_socket.c:155-158,
 *   vfs_vnops.c:1376-1386: psignal), to the first thread that does not block them
 *   (kern_sig.c:1932-1966; GCD's start with SIGPIPE unblocked), and sigpending sees only this
 *   thread's (kern_sig.c:835-846): blocking here does not help. So the write is not made where it would
 *   raise one: a pipe or socket poll(2) says is hung up (sys_generic.c:1859-1860: EV_EOF, set in
 *   the states in which the write fails with EPIPE: sys_pipe.c:933-936 and :1408-1410,
 *   uipc_socket.c:2032 and :6778), or a regular file the write would take past RLIMIT_FSIZE at
 *   the descriptor's offset (vn_write's check) or at the file's end (where an append lands);
 *   errno is then EPIPE or EFBIG, as the write's would be. (F_SETNOSIGPIPE would set a flag of
 *   the open file the host shares: kern_descrip.c:2931-2951.) Left open: a reader that leaves,
 *   or a writer that grows the file, between the check and the write. */
static const int quiet_signals[2] = {SIGPIPE, SIGXFSZ};

/* the errno a write of n bytes to fd would fail with where it would raise a signal, else 0 */
static int write_would_signal(int fd, size_t n)
{
    struct stat st;
    struct rlimit lim;
    struct pollfd p = {fd, POLLOUT, 0};
    if (fstat(fd, &st) != 0)
        return 0; /* the write fails by itself */
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
        return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) ? EPIPE : 0;
    if (!S_ISREG(st.st_mode) || getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return 0;
    off_t at = lseek(fd, 0, SEEK_CUR);
    return at < 0 || (rlim_t)(at > st.st_size ? at : st.st_size) + n > lim.rlim_cur ? EFBIG : 0;
}

ssize_t vzcaps_quiet_write(int fd, const void *buf, size_t n)
{
    int refused = vzcaps_platform_darwin ? write_would_signal(fd, n) : 0;
    if (refused)
        return errno = refused, -1; /* not written: no signal, nothing to take back */
    sigset_t set, old, pending;
    sigemptyset(&set);
    for (int i = 0; i < 2; i++)
        sigaddset(&set, quiet_signals[i]);
    bool blocked = pthread_sigmask(SIG_BLOCK, &set, &old) == 0, was_pending[2];
    bool known = blocked && sigpending(&pending) == 0;
    for (int i = 0; i < 2; i++)
        was_pending[i] = !known || sigismember(&pending, quiet_signals[i]);
    ssize_t w = write(fd, buf, n);
    int e = errno;
    for (int i = 0; blocked && w < 0 && i < 2; i++)
        if (e == (i ? EFBIG : EPIPE) && !was_pending[i] && sigpending(&pending) == 0 &&
            sigismember(&pending, quiet_signals[i])) {
            int sig;
            sigemptyset(&set);
            sigaddset(&set, quiet_signals[i]);
            sigwait(&set, &sig); /* pending, so this returns at once */
        }
    if (blocked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

/* An escaped line of n bytes (line[n] is its '\n') to the system log and, if asked, to standard error. */
static void emit(const char *line, size_t n, bool to_stderr)
{
    vzcaps_platform_syslog(line, n);
    if (to_stderr)
        vzcaps_write_stderr_line(line, n + 1);
}

VZCAPS_HIDDEN void vzcaps_log(const char *raw, bool to_stderr)
{
    /* raw lines are bounded (notes and names are); escaping needs at most 4x, plus '\n' */
    static char line[4 * (16 + 300 + VZCAPS_MAX_NOTES * (VZCAPS_NOTE_LEN + 2)) + 2];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* trigger paths may log from two threads */
    pthread_mutex_lock(&lock);
    size_t n = vzcaps_escape(raw, strlen(raw), line, sizeof line - 1);
    if (n >= sizeof line - 1) {
        n = sizeof line - 5;
        memcpy(line + n, "...", 3), n += 3; /* never cut silently */
    }
    line[n] = '\n'; /* written with the line: one chunk where it fits */
    line[n + 1] = '\0';
    emit(line, n, to_stderr);
    pthread_mutex_unlock(&lock);
}

/* ---- the one line: decided here, said once when the library acts ----
 * A process that never creates a device writes nothing, and formats nothing: the constructor
 * keeps the program's name as it started (a program may rewrite its argv[0] later) and
 * whether and where the line goes; the one writer, elected by one atomic flag at the first
 * device, describes the profile (the constructor's result, unchanged since), escapes it and
 * adds the class. No lock, no allocation. */
#define SAID_RAW (16 + 300 + VZCAPS_MAX_NOTES * (VZCAPS_NOTE_LEN + 2))
static const char *said_name = ""; /* the program's name at start-up, whole (the constructor's, static) */
static char said_exe[4 * 300 + 1], said_tail[4 * SAID_RAW + 8];
static size_t said_exe_len, said_tail_len;
static char said_line[sizeof said_tail + sizeof said_exe + 4 * 160 + 200];
static bool said_refused, said_to_stderr, said_armed, said_notes;
static atomic_flag said = ATOMIC_FLAG_INIT;

/* escapes n bytes of raw into out (cap bytes), marking a cut with "..."; returns the length */
static size_t escape_into(const char *raw, size_t n, char *out, size_t cap)
{
    size_t len = vzcaps_escape(raw, n, out, cap);
    if (len >= cap) {
        len = cap - 4;
        memcpy(out + len, "...", 4); /* never cut silently */
        len += 3;
    }
    return len;
}

static size_t put(char *dst, size_t at, const char *src, size_t n)
{
    memcpy(dst + at, src, n);
    return at + n;
}

/* "vzcaps: configured for EXE: NOTES" or "vzcaps: left stock for EXE: REASON", as the start-up
 * line says it, into raw (SAID_RAW bytes); exe receives the clipped name */
static void said_describe(char *raw, char exe[300])
{
    vzcaps_clip(said_name, 255, exe, 300);
    memcpy(raw, "vzcaps: ", 9);
    vzcaps_profile_describe(vzcaps_effective, exe, raw + 8, SAID_RAW - 8);
}

/* The constructor's half: only what must be known before main (log = verbose says the
 * start-up line now, for debugging). */
void vzcaps_say_prepare(const struct vzcaps_profile *p, const char *name)
{
    said_name = name;
    if (!p->quiet)
        pin_stderr(); /* a line may be written to stderr: from now on */
    said_to_stderr = !p->quiet;
    said_refused = p->state == VZCAPS_STOCK_REFUSED;
    said_notes = !p->verbose; /* verbose said them at start-up */
    if (p->verbose) {
        static char raw[SAID_RAW], exe[300];
        said_describe(raw, exe);
        vzcaps_log(raw, true);
        if (said_refused)
            return; /* said: nothing more at the first device */
    }
    said_armed = true;
}

/* The writer's half of the preparation, once, by the elected writer. */
static void said_format(void)
{
    static char raw[SAID_RAW], exe[300];
    said_describe(raw, exe);
    said_exe_len = escape_into(exe, strlen(exe), said_exe, sizeof said_exe);
    if (said_refused) {
        said_tail_len = escape_into(raw, strlen(raw), said_tail, sizeof said_tail);
    } else if (said_notes) {
        /* ": NOTES", the part of the start-up line after "configured for EXE" */
        const char *notes = raw + strlen("vzcaps: configured for ") + strlen(exe);
        said_tail_len = escape_into(notes, strlen(notes), said_tail, sizeof said_tail);
    }
}

void vzcaps_said(const char *label, const char *path)
{
    if (!said_armed || atomic_flag_test_and_set_explicit(&said, memory_order_relaxed))
        return;
    said_format();
    size_t n = 0;
    if (said_refused) {
        n = put(said_line, n, said_tail, said_tail_len);
    } else {
        char cls[4 * 160 + 1];
        size_t cl = escape_into(label, strlen(label), cls, sizeof cls);
        n = put(said_line, n, "vzcaps: hooked ", 15);
        n = put(said_line, n, cls, cl);
        n = put(said_line, n, " for ", 5);
        n = put(said_line, n, said_exe, said_exe_len);
        n = put(said_line, n, " via ", 5);
        n = put(said_line, n, path, strlen(path)); /* one of ours: printable */
        n = put(said_line, n, said_tail, said_tail_len);
    }
    said_line[n] = '\n';
    emit(said_line, n, said_to_stderr);
}

