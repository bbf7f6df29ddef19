/* The one way the command runs a child: its own process group, output streamed to sinks as it
 * comes (capped per stream), a timeout, and the command's stop signals (modelled on git's
 * run-command.c and tempfile.c and on GNU timeout).
 * Never: keeps a child's output whole in memory, waits on a pipe a grandchild holds, or ends
 * the command with a child of it still running. */
#define _XOPEN_SOURCE 700
#include "child.h"

#include "safewrite.h"
#include "text.h"
#include "../core/vzcaps_core.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- stop signals ---- */

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t running_group; /* the running child's process group, 0 when none */
static volatile sig_atomic_t deferred, stop_sig;

static void end_with(int sig)
{
    pid_t g = running_group;
    if (g > 0)
        kill(-g, SIGKILL);
    vzcaps_tmp_remove_all();
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void on_stop(int sig)
{
    int saved = errno;
    if (!deferred || stop_sig)
        end_with(sig);
    stop_sig = sig;
    pid_t g = running_group;
    if (g > 0)
        kill(-g, SIGTERM);
    errno = saved;
}

void vzcaps_stop_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction old;
        /* a signal ignored when we were started (nohup) stays ignored, as POSIX shells do */
        if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaddset(&sa.sa_mask, stop_signals[i]);
    }
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(stop_signals[i], &sa, NULL);
    }
}

void vzcaps_stop_defer(void)
{
    deferred = 1;
}

int vzcaps_stop_signal(void)
{
    return stop_sig;
}

void vzcaps_stop_now(void)
{
    if (stop_sig) {
        fflush(NULL);
        end_with(stop_sig);
    }
}

static void block_stops(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        sigaddset(&s, stop_signals[i]);
    sigprocmask(SIG_BLOCK, &s, old);
}

/* ---- the child ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* In the child, after fork: never returns. */
static void exec_child(const struct vzcaps_child_opts *o, int out_w, int err_w, const sigset_t *old)
{
    setpgid(0, 0);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction cur;
        if (sigaction(stop_signals[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
            signal(stop_signals[i], SIG_DFL);
    }
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, old, NULL);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0 && in != 0)
        dup2(in, 0), close(in);
    dup2(out_w, 1), dup2(err_w, 2);
    if (out_w > 2)
        close(out_w);
    if (err_w > 2 && err_w != out_w)
        close(err_w);
    if (o->env_keep) {
        size_t w = 0;
        for (size_t r = 0; environ[r]; r++)
            if (o->env_keep(environ[r]))
                environ[w++] = environ[r];
        environ[w] = NULL;
    }
    for (char *const *x = o->env_add; x && *x; x++)
        putenv(*x);
    if (o->search)
        execvp(o->argv[0], o->argv);
    else
        execv(o->argv[0], o->argv);
    dprintf(2, "vzcaps: cannot run %s: %s\n", o->argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

struct stream {
    int fd;
    const struct vzcaps_sink *sink;
    size_t cap;
    int k;
};

/* Reads what is there now: 1 after reading, 0 when nothing is there yet, -1 at the end. */
static int drain(struct stream *s, struct vzcaps_child_result *r)
{
    char chunk[65536];
    ssize_t n = read(s->fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n <= 0)
        return -1;
    unsigned long long before = r->bytes[s->k];
    r->bytes[s->k] += (unsigned long long)n;
    size_t pass = before >= s->cap ? 0 : (unsigned long long)n < s->cap - before ? (size_t)n : (size_t)(s->cap - before);
    if (pass < (size_t)n)
        r->capped[s->k] = true;
    if (pass && s->sink->write && !r->sink_failed[s->k] && s->sink->write(s->sink->ctx, chunk, pass) != 0)
        r->sink_failed[s->k] = true;
    return 1;
}

static void close_stream(struct stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* Whether the child has exited; reaps it into *status. */
static bool has_exited(pid_t pid, int *status)
{
    pid_t w;
    while ((w = waitpid(pid, status, WNOHANG)) < 0 && errno == EINTR)
        ;
    return w == pid;
}

/* The deadlines of one run, in seconds of the monotonic clock (0: none). */
struct deadlines {
    double term, kill, close;
};

/* Reads both streams until they end and the child has exited, stopping the group when a
 * deadline passes. */
static void supervise(pid_t pid, const struct vzcaps_child_opts *o, struct stream st[2], struct vzcaps_child_result *r)
{
    int status = 0;
    double start = now_s();
    struct deadlines d = {o->timeout ? start + o->timeout : 0, 0, 0};
    bool exited = false, termed = false, killed = false;
    for (;;) {
        struct pollfd fds[2];
        nfds_t nf = 0;
        int which[2];
        for (int k = 0; k < 2; k++)
            if (st[k].fd >= 0)
                fds[nf] = (struct pollfd){st[k].fd, POLLIN, 0}, which[nf++] = k;
        if (nf == 0 && exited && (killed || kill(-pid, 0) != 0)) { /* nothing of its group is left */
            r->status = status;
            return;
        }
        /* the output is read as it comes; the timeout wakes us often enough to see the
         * child's end and the deadlines */
        int rc = poll(fds, nf, nf ? 100 : 20);
        for (nfds_t i = 0; rc > 0 && i < nf; i++)
            if (fds[i].revents && drain(&st[which[i]], r) < 0)
                close_stream(&st[which[i]]);
        double t = now_s();
        int sig = vzcaps_stop_signal();
        if (sig && !r->stopped_by) {
            /* the handler signalled the group; one that came before the group was known (between
             * fork and running_group, or before this run) is passed on here */
            r->stopped_by = sig;
            if (!exited)
                kill(-pid, SIGTERM);
            termed = true;
            d.kill = t + VZCAPS_CHILD_KILL_AFTER;
        }
        if (!exited && !termed && d.term && t >= d.term) {
            r->timed_out = termed = true;
            kill(-pid, SIGTERM);
            d.kill = t + VZCAPS_CHILD_KILL_AFTER;
        }
        if (!exited && has_exited(pid, &status)) {
            exited = true;
            /* what is left of its group (a background grandchild holding a pipe) is stopped;
             * the group's id is not reused while any of it is left */
            if (kill(-pid, 0) == 0) {
                if (!termed) { /* after a timeout or a stop the group is going already */
                    r->group_left = true;
                    kill(-pid, SIGTERM);
                }
                if (!d.kill || d.kill > t + 1)
                    d.kill = t + 1;
            } else {
                running_group = 0;
                d.close = t + 2; /* a writer outside the group (setsid) is not waited for */
            }
        }
        if (!killed && d.kill && t >= d.kill) {
            kill(-pid, SIGKILL);
            killed = true;
        }
        if (exited && killed && !d.close)
            d.close = t + 1;
        if (exited && d.close && t >= d.close)
            for (int k = 0; k < 2; k++) {
                while (st[k].fd >= 0 && drain(&st[k], r) > 0)
                    ;
                close_stream(&st[k]);
            }
    }
}

int vzcaps_child_run(const struct vzcaps_child_opts *o, struct vzcaps_child_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    int po[2], pe[2];
    if (pipe(po) != 0) {
        r->start_errno = errno;
        return -1;
    }
    if (pipe(pe) != 0) {
        r->start_errno = errno;
        close(po[0]), close(po[1]);
        return -1;
    }
    fcntl(po[0], F_SETFD, FD_CLOEXEC), fcntl(pe[0], F_SETFD, FD_CLOEXEC);
    fcntl(po[0], F_SETFL, O_NONBLOCK), fcntl(pe[0], F_SETFL, O_NONBLOCK);
    fflush(NULL);
    /* SIGCHLD inherited as ignored would reap the child behind our back: default while it runs */
    struct sigaction chld_default = {.sa_handler = SIG_DFL}, chld_old;
    sigemptyset(&chld_default.sa_mask);
    sigaction(SIGCHLD, &chld_default, &chld_old);
    sigset_t old;
    block_stops(&old); /* no stop signal between fork and exec runs our handler in the child */
    pid_t pid = fork();
    if (pid == 0) {
        close(po[0]), close(pe[0]);
        sigaction(SIGCHLD, &chld_old, NULL); /* the child gets what we were given */
        exec_child(o, po[1], pe[1], &old);
    }
    int fork_errno = errno;
    close(po[1]), close(pe[1]);
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        sigaction(SIGCHLD, &chld_old, NULL);
        close(po[0]), close(pe[0]);
        r->start_errno = fork_errno;
        return -1;
    }
    setpgid(pid, pid); /* as the child does: whichever runs first, the group exists before a kill */
    running_group = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    size_t cap = o->cap ? o->cap : VZCAPS_CHILD_CAP;
    struct stream st[2] = {{po[0], &o->out, cap, 0}, {pe[0], &o->err, cap, 1}};
    supervise(pid, o, st, r);
    running_group = 0;
    sigaction(SIGCHLD, &chld_old, NULL);
    return 0;
}

char *vzcaps_child_describe(const struct vzcaps_child_result *r, unsigned timeout, size_t cap)
{
    char buf[600];
    int st = r->status;
    if (st == -1)
        snprintf(buf, sizeof buf, "could not be started: %s", strerror(r->start_errno ? r->start_errno : EAGAIN));
    else if (WIFEXITED(st))
        snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(buf, sizeof buf, "status %d", st);
    if (r->timed_out)
        vzcaps_appendf(buf, sizeof buf, ", timed out after %u s (--timeout)", timeout);
    if (r->stopped_by)
        vzcaps_appendf(buf, sizeof buf, ", stopped: vzcaps got signal %d", r->stopped_by);
    if (r->group_left)
        vzcaps_appendf(buf, sizeof buf, ", processes it left running were stopped");
    static const char *const names[2] = {"standard output", "standard error"};
    cap = cap ? cap : VZCAPS_CHILD_CAP;
    for (int k = 0; k < 2; k++)
        if (r->capped[k])
            vzcaps_appendf(buf, sizeof buf, ", %s capped: the first %zu MiB of %llu bytes kept", names[k], cap >> 20, r->bytes[k]);
    return xformat("%s", buf);
}

/* ---- lines ---- */

int vzcaps_lines_write(void *ctx, const char *data, size_t len)
{
    struct vzcaps_lines *l = ctx;
    if (l->next.write)
        l->next.write(l->next.ctx, data, len); /* the next sink keeps its own failure */
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c == '\n') {
            if (!l->skipping)
                l->line(l->ctx, l->buf, l->have);
            l->have = 0;
            l->skipping = false;
            continue;
        }
        if (l->skipping)
            continue;
        l->buf[l->have++] = c;
        if (l->have == sizeof l->buf) { /* clipped: passed once, the rest of the line dropped */
            l->line(l->ctx, l->buf, l->have);
            l->have = 0;
            l->skipping = true;
        }
    }
    return 0;
}

void vzcaps_lines_end(struct vzcaps_lines *l)
{
    if (l->have && !l->skipping)
        l->line(l->ctx, l->buf, l->have);
    l->have = 0;
    l->skipping = false;
}

/* ---- what a command keeps of a stream ---- */

void vzcaps_keep_line(void *ctx, const char *line, size_t len)
{
    struct vzcaps_line_keep *k = ctx;
    const char *q = line, *end = line + len;
    while (q < end && (*q == ' ' || *q == '\t'))
        q++;
    size_t pl = strlen(k->prefix);
    if ((size_t)(end - q) < pl || strncmp(q, k->prefix, pl) != 0)
        return;
    char clipped[700];
    vzcaps_clipn(line, len, 600, clipped, sizeof clipped);
    for (size_t i = 0; i < k->n; i++) /* at most VZCAPS_KEEP_LINES: linear in the stream */
        if (strcmp(k->lines[i], clipped) == 0)
            return;
    if (k->n == VZCAPS_KEEP_LINES) {
        k->more++;
        return;
    }
    k->lines[k->n++] = xformat("%s", clipped);
}

char *vzcaps_kept_text(struct vzcaps_line_keep *k, const char *file)
{
    size_t total = 1;
    for (size_t i = 0; i < k->n; i++)
        total += strlen(k->lines[i]) + 1;
    char *acc = malloc(total), *w = acc;
    if (!acc) {
        eprintf("vzcaps: out of memory");
        exit(1);
    }
    for (size_t i = 0; i < k->n; i++) {
        size_t n = strlen(k->lines[i]);
        memcpy(w, k->lines[i], n), w += n, *w++ = '\n';
        free(k->lines[i]);
    }
    *w = '\0';
    if (k->more) {
        char *more = xformat("%s(and %zu more different lines: see %s)\n", acc, k->more, file);
        free(acc);
        acc = more;
    }
    k->n = k->more = 0;
    return acc;
}

void vzcaps_head_add(struct vzcaps_head *h, const char *data, size_t len)
{
    h->total += len;
    size_t room = h->len < h->limit ? h->limit - h->len : 0, n = len < room ? len : room;
    if (!n)
        return;
    char *d = realloc(h->data, h->len + n + 1);
    if (!d)
        return;
    memcpy(d + h->len, data, n);
    h->data = d, h->len += n;
    d[h->len] = '\0';
}

void vzcaps_head_free(struct vzcaps_head *h)
{
    free(h->data);
    h->data = NULL, h->len = 0, h->total = 0;
}
