/* The one way the command runs a child (child.c): bench, doctor, probe and verify.
 * Owns: starting a child in its own process group, streaming its output to sinks as it
 * comes (capped per stream), its timeout, stopping its group, and the command's
 * SIGINT/SIGTERM/SIGHUP handling. Never: keeps a child's output whole in memory, waits for
 * grandchildren that keep a pipe open, or leaves a child running when the command ends. */
#ifndef VZCAPS_CHILD_H
#define VZCAPS_CHILD_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of each stream passed to its sink; the rest is read and counted, never kept. */
#define VZCAPS_CHILD_CAP (16u << 20)
/* After a timeout or a stop: SIGTERM to the group, then SIGKILL this many seconds later. */
#define VZCAPS_CHILD_KILL_AFTER 5

/* Where a stream goes, piece by piece as it arrives. write returns 0, or -1 to give up: the
 * stream is then still read (the child never stalls) but no longer passed on. */
struct vzcaps_sink {
    int (*write)(void *ctx, const char *data, size_t len);
    void *ctx;
};

struct vzcaps_child_opts {
    char *const *argv;
    bool search;                          /* argv[0] is looked up on PATH (execvp) */
    bool (*env_keep)(const char *entry);  /* when set: only the entries it keeps reach the child */
    char *const *env_add;                 /* NAME=value entries set in the child */
    struct vzcaps_sink out, err;          /* write NULL: discarded; both may be one sink */
    size_t cap;                           /* per stream; 0: VZCAPS_CHILD_CAP */
    unsigned timeout;                     /* seconds; 0: none */
};

struct vzcaps_child_result {
    int status;                   /* as from waitpid; -1 when it could not be started */
    int start_errno;              /* why it could not be started (fork, pipe) */
    bool timed_out;               /* ran longer than the timeout: its group was stopped */
    int stopped_by;               /* SIGINT, SIGTERM or SIGHUP the command got while it ran, or 0 */
    bool group_left;              /* processes of its group outlived it and were stopped */
    unsigned long long bytes[2];  /* read from standard output and standard error */
    bool capped[2];               /* the stream passed its cap: only the first cap bytes went on */
    bool sink_failed[2];          /* its sink gave up */
};

/* Runs a child with standard input from /dev/null: 0 when it ran to its end (whatever its
 * status), -1 when it could not be started (r->status -1). Time and memory are linear in
 * the output and bounded by the sinks. */
int vzcaps_child_run(const struct vzcaps_child_opts *o, struct vzcaps_child_result *r);

/* "exit 0", "killed by signal 9", with ", timed out after N s", ", stopped by SIGTERM",
 * ", processes it left were stopped" and ", standard error capped at 16 MiB of N bytes" as they
 * apply; on the heap (NULL when out of memory). */
char *vzcaps_child_describe(const struct vzcaps_child_result *r, unsigned timeout, size_t cap);

/* ---- the command's stop signals (SIGINT, SIGTERM, SIGHUP) ---- */

/* Installed once at start: a stop signal stops the running child's group, removes every
 * temporary file safewrite has open, and ends the command with that signal. */
void vzcaps_stop_install(void);
/* From now on the command ends itself: a stop signal stops the running child's group and is
 * remembered (vzcaps_stop_signal), so the command can finish what it writes; a second one
 * ends the command at once, as above. */
void vzcaps_stop_defer(void);
/* The stop signal received since vzcaps_stop_defer, or 0. */
int vzcaps_stop_signal(void);
/* Ends the command with the remembered stop signal (after the caller finished its files). */
void vzcaps_stop_now(void);

/* ---- lines ---- */

/* A sink that splits a stream into lines (without the '\n') and calls line for each; a line
 * longer than VZCAPS_LINE_MAX is passed clipped to it, once. Call vzcaps_lines_end at the end. */
#define VZCAPS_LINE_MAX 4096
struct vzcaps_lines {
    void (*line)(void *ctx, const char *line, size_t len);
    void *ctx;
    struct vzcaps_sink next; /* the bytes also go on here, unchanged, when set */
    char buf[VZCAPS_LINE_MAX];
    size_t have;
    bool skipping;
};
int vzcaps_lines_write(void *lines, const char *data, size_t len);
void vzcaps_lines_end(struct vzcaps_lines *l);

/* The lines that start with prefix (after blanks), each once, as they come: at most
 * VZCAPS_KEEP_LINES different ones, each clipped visibly to 600 bytes; the rest only counted. */
#define VZCAPS_KEEP_LINES 32
struct vzcaps_line_keep {
    const char *prefix;
    char *lines[VZCAPS_KEEP_LINES];
    size_t n, more;
};
void vzcaps_keep_line(void *line_keep, const char *line, size_t len); /* a vzcaps_lines callback */
/* The kept lines, one a line, and "(and N more different lines: see FILE)" (heap); frees them. */
char *vzcaps_kept_text(struct vzcaps_line_keep *k, const char *file);

/* The first limit bytes of a stream, NUL-terminated; total counts all of it, so len < total says
 * the head is not the whole stream (past limit, or an allocation that failed). */
struct vzcaps_head {
    char *data;
    size_t len, limit;
    unsigned long long total;
};
void vzcaps_head_add(struct vzcaps_head *h, const char *data, size_t len);
void vzcaps_head_free(struct vzcaps_head *h);

#endif
