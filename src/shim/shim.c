/* The injected library's constructor: reads the configuration once, decides, prepares the one
 * line it says when it acts, keeps children stock unless asked, and arms the platform trigger.
 * Never: exits, aborts or changes anything when the configuration is in doubt; blocks on a
 * file or on standard error; raises SIGPIPE; prints a byte a terminal would interpret. */
#define _GNU_SOURCE /* Dl_info and dladdr on glibc */
#include "quiet.h"

#include <dlfcn.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const struct vzcaps_profile not_yet; /* zero: VZCAPS_STOCK_UNCONFIGURED */
VZCAPS_HIDDEN const struct vzcaps_profile *vzcaps_effective = &not_yet;

__attribute__((visibility("default"))) const char vzcaps_library_version[] = VZCAPS_VERSION;
__attribute__((used)) static const char *const self_marker = VZCAPS_SELF_MARKER " library " VZCAPS_VERSION;

static char file_buf[VZCAPS_CONFIG_MAX_SIZE + 1];
static struct vzcaps_config_result result;

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

static void note_stderr(void)
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
 * F_SETNOSIGPIPE: they would change it for the host process too). Instead: SIGPIPE is blocked
 * in this thread for the write and a SIGPIPE the write raised is taken back; each chunk waits
 * until the file is writable, within 200 ms for the whole line, and is no larger than PIPE_BUF
 * on macOS (512), so a writable pipe takes it without blocking. A reader that never reads costs
 * the host at most 200 ms, once. errno is as it was. */
VZCAPS_HIDDEN void vzcaps_write_stderr_line(const char *line, size_t n)
{
    int saved = errno;
    int fd = stderr_target();
    if (fd < 0) {
        errno = saved;
        return; /* the line is lost, the program's file is not touched */
    }
    struct vzcaps_quiet q;
    vzcaps_quiet_begin(&q);
    long long deadline = now_us() + 200000;
    for (size_t off = 0; off < n;) {
        if (!fd_writable(fd, deadline))
            break;
        size_t chunk = n - off < 512 ? n - off : 512;
        ssize_t w = write(fd, line + off, chunk);
        if (w < 0)
            vzcaps_quiet_wrote(&q, errno);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* closed, full or gone: the line is lost, the host is not */
        off += (size_t)w;
    }
    vzcaps_quiet_end(&q);
    errno = saved;
}

static const int quiet_signals[2] = {SIGPIPE, SIGXFSZ};

void vzcaps_quiet_begin(struct vzcaps_quiet *q)
{
    sigset_t set, pending;
    sigemptyset(&set);
    for (int i = 0; i < 2; i++)
        sigaddset(&set, quiet_signals[i]);
    q->blocked = pthread_sigmask(SIG_BLOCK, &set, &q->old) == 0;
    bool known = q->blocked && sigpending(&pending) == 0;
    for (int i = 0; i < 2; i++)
        q->was_pending[i] = !known || sigismember(&pending, quiet_signals[i]), q->raised[i] = false;
}

void vzcaps_quiet_wrote(struct vzcaps_quiet *q, int write_errno)
{
    q->raised[0] |= write_errno == EPIPE;
    q->raised[1] |= write_errno == EFBIG;
}

void vzcaps_quiet_end(struct vzcaps_quiet *q)
{
    sigset_t pending;
    if (!q->blocked)
        return;
    for (int i = 0; i < 2; i++)
        if (q->raised[i] && !q->was_pending[i] && sigpending(&pending) == 0 && sigismember(&pending, quiet_signals[i])) {
            sigset_t one;
            int sig;
            sigemptyset(&one);
            sigaddset(&one, quiet_signals[i]);
            sigwait(&one, &sig); /* pending, so this returns at once */
        }
    pthread_sigmask(SIG_SETMASK, &q->old, NULL);
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
    vzcaps_platform_log(line, n, to_stderr);
    pthread_mutex_unlock(&lock);
}

/* ---- the one line: decided here, said once when the library acts ----
 * A process that never creates a device writes nothing, and formats nothing: the constructor
 * keeps the program's name as it started (a program may rewrite its argv[0] later) and
 * whether and where the line goes; the one writer, elected by one atomic flag at the first
 * device, describes the profile (the constructor's result, unchanged since), escapes it and
 * adds the class. No lock, no allocation. */
#define SAID_RAW (16 + 300 + VZCAPS_MAX_NOTES * (VZCAPS_NOTE_LEN + 2))
static char said_name[4096]; /* the program's name at start-up, whole */
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
static void said_prepare(const struct vzcaps_profile *p)
{
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
    vzcaps_platform_log(said_line, n, said_to_stderr);
}

/* The image of a call site, for the caller scope: dladdr, which macOS and glibc both have. */
VZCAPS_HIDDEN void vzcaps_image_of(const void *addr, char *name, size_t len)
{
    Dl_info info;
    name[0] = '\0';
    if (dladdr(addr, &info) && info.dli_fname) {
        const char *base = vzcaps_basename(info.dli_fname);
        if (strlen(base) < len) /* a name that does not fit is unknown, never a cut name */
            memcpy(name, base, strlen(base) + 1);
    }
}

/* vzcaps_read_file, keeping the length of the file read last (the one configure used) */
static size_t file_len;
static int read_and_keep(void *ctx, const char *path, char *buf, size_t cap, size_t *len, bool *missing, char *err,
                         size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        /* absent, as open would find it: said without formatting a reason nobody reads (the
         * search skips a missing file unless VZCAPS_CONFIG named it; then this is its reason) */
        *missing = true, *len = 0, file_len = 0;
        vzcaps_copy(err, errlen, "cannot open: No such file or directory");
        return -1;
    }
    int rc = vzcaps_read_file(ctx, path, buf, cap, len, missing, err, errlen);
    file_len = rc == 0 ? *len : 0;
    return rc;
}

static void *heap(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}

/* A launcher re-executes the real program with this same environment: it is not the
 * process the configuration is for, so it passes everything on unchanged. */
static bool is_launcher(void)
{
    static char self[VZCAPS_PATH_MAX + 1], target[VZCAPS_PATH_MAX + 1], why[64];
    if (vzcaps_platform_exe_path(self, sizeof self) != 0 || !vzcaps_launcher_target(self, target, sizeof target))
        return false;
    struct stat st;
    int fd = vzcaps_open_regular(target, &st, why, sizeof why);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* The name the launcher handed for a #! script (VZCAPS_PROGRAM=PID:NAME, docs/config.md): 1 in
 * the script's own process (the interpreter, and what it execs), with name; -1 in a child of it,
 * whose environment is then made stock (as every child's); 0 without one. */
static int handed_name(char **env, char *name, size_t len)
{
    int h = vzcaps_program_handed(vzcaps_env_get((const char *const *)env, "VZCAPS_PROGRAM"), (long long)getpid(), name, len);
    for (size_t r = 0; h == 2 && env[r]; r++) /* unclaimed: this is the script's process; write its pid in place */
        if (strncmp(env[r], "VZCAPS_PROGRAM=", 15) == 0) {
            char *d = env[r] + 15;
            for (long long pid = (long long)getpid(), i = VZCAPS_PROGRAM_CLAIM - 1; i >= 0; i--, pid /= 10)
                d[i] = (char)('0' + pid % 10);
            h = 1;
            break;
        }
    if (h < 0)
        vzcaps_env_strip(env, vzcaps_platform_preload_var, vzcaps_platform_preload_seps, vzcaps_platform_library_name, heap,
                         NULL);
    return h;
}

/* The script's process keeps the injection in its children (inherit): VZCAPS_PROGRAM's
 * PID:NAME becomes PID+NAME in place (same length, no allocation), so its exec still takes NAME
 * and its children are configured by their own names instead of starting stock. */
static void handed_to_children(char **env)
{
    for (size_t r = 0; env[r]; r++)
        if (strncmp(env[r], "VZCAPS_PROGRAM=", 15) == 0) {
            char *sep = strchr(env[r] + 15, ':');
            if (sep)
                *sep = '+';
        }
}

static void init(void)
{
    static char brand[256], handed[256], exe_path[VZCAPS_PATH_MAX + 1];
    char **env = *vzcaps_platform_environ();
    note_stderr();
    if (is_launcher())
        return;
    int h = handed_name(env, handed, sizeof handed);
    if (h < 0)
        return; /* a child of a script's process: stock */
    const char *name = h > 0 ? handed : vzcaps_platform_exe_name();
    /* an empty argv[0] (execve(path, {"", NULL}, env)) names nothing: the executable's base name
     * picks the section, as the record names it and a parent's inherit decision judged it */
    if (!*name && vzcaps_platform_exe_path(exe_path, sizeof exe_path) == 0)
        name = vzcaps_basename(exe_path);
    struct vzcaps_inputs in = {0};
    in.envp = (const char *const *)env;
    in.exe = name;
    in.preload_var = vzcaps_platform_preload_var;
    in.read_file = read_and_keep;
    vzcaps_platform_host(&in.host, brand, sizeof brand);
    vzcaps_configure(&in, file_buf, sizeof file_buf, &result);
    struct vzcaps_profile *p = &result.profile;

    /* Nothing here applies to this process (nothing set, or no config section fits it): pass
     * the injection on unchanged, so the process it is meant for still gets it. */
    if (p->state == VZCAPS_STOCK_UNCONFIGURED)
        return;
    vzcaps_copy(said_name, sizeof said_name, in.exe);
    /* inherit = matching: what a child a section matches gets back (spawn.c); unless that is
     * set up, nothing is passed on */
    if (p->state == VZCAPS_ENABLED && p->inherit_matching &&
        vzcaps_spawn_setup(env, result.config_path[0] && !result.config_error[0] ? file_buf : NULL, file_len) != 0) {
        p->inherit_matching = false;
        if (p->n_notes < VZCAPS_MAX_NOTES)
            snprintf(p->notes[p->n_notes++], VZCAPS_NOTE_LEN, "inherit = matching could not be set up (out of memory, "
                     "or %s does not name %s): children start stock", vzcaps_platform_preload_var, vzcaps_platform_library_name);
    }
    /* Children start stock (the rule and its cases: vzcaps_env_strip); with inherit = matching
     * too, so that a child started any other way (system(3) on glibc) gets nothing of ours */
    /* a script's process keeps it for the program it execs (a wrapper's exec: the same pid, the
     * same name); its other children see another pid and start stock; with inherit, children are
     * configured under their own names */
    if (h > 0 && p->state == VZCAPS_ENABLED && p->inherit)
        handed_to_children(env);
    if (h <= 0 && !(p->state == VZCAPS_ENABLED && p->inherit) &&
        vzcaps_env_strip(env, vzcaps_platform_preload_var, vzcaps_platform_preload_seps, vzcaps_platform_library_name, heap,
                         NULL) != 0 &&
        p->state == VZCAPS_ENABLED) {
        p->n_notes = 0; /* the claims it would have made are not what the line is about */
        vzcaps_profile_refuse(p, "cannot remove vzcaps from the environment of child processes (out of memory)");
        p->invalid = false;
    }
    vzcaps_effective = p; /* result is static: no copy; final from here on */
    if (p->state == VZCAPS_ENABLED || p->state == VZCAPS_STOCK_REFUSED) {
        if (!p->quiet)
            pin_stderr(); /* a line may be written to stderr: from now on */
        said_prepare(p); /* nothing is written before a device exists (but verbose) */
        vzcaps_statslog_prepare(&result, said_name);
    }
    if (p->state == VZCAPS_STOCK_REFUSED)
        vzcaps_platform_trigger_install(); /* the factories say the refusal at the first device */
    if (p->state != VZCAPS_ENABLED)
        return;
    vzcaps_hooks_watch_base_class();
    vzcaps_platform_trigger_install();
}

/* errno is as the process had it (zero at start-up, C11 7.5p3), whatever the constructor did */
__attribute__((constructor)) static void vzcaps_init(void)
{
    int saved = errno;
    init();
    errno = saved;
}
