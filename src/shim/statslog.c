/* The stats log (log_file, VZCAPS_LOG_FILE; `vzcaps stats` reads it): one record per process,
 * appended when the first device is hooked or left stock (where the one line is decided), then
 * one per effect kind (the first answer above the device's own that an image in scope got) and
 * per image the caller scope kept stock (at most VZCAPS_STOCK_CALLERS).
 * The constructor only notes whether there is a log and the program's name as it started;
 * the rest (the path and LOG.1, the directory's check, the executable's path, the refusal) is
 * prepared by the one writer at the first device, so a process without a device pays nothing.
 * The hooked record's descriptor is kept (close-on-exec), so an effect is one write(2) of a
 * record formatted in a buffer of its own, before the raised answer returns; an effect asked
 * before the hooked record is written is written right after it. Each record: one write(2) of the
 * whole (at most 1024 bytes, O_APPEND); no malloc, no lock that waits (a rotation takes
 * one that never does), no blocking open (nothing but a regular file is opened; O_NONBLOCK
 * besides), never through a link (O_NOFOLLOW), never a file of someone else's (nor the host's
 * own file at a kept descriptor's number), errno as it was, no signal the host receives
 * (vzcaps_quiet_write), and nothing said when anything fails (the record is lost, the host is not touched). */
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
static const char *program;                      /* the program's name as init.c named it (never empty) */
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
    refusal[0] = '\0';
    for (size_t i = 0; p->state == VZCAPS_STOCK_REFUSED && i < p->n_notes; i++)
        vzcaps_appendf(refusal, sizeof refusal, "%s%s", i ? "; " : "", p->notes[i]);
    return true;
}

/* ---- the records after the first: effects and images kept stock ----
 * Slot k < 3 is effect kind k (VZCAPS_EFFECT_*), the rest an image kept stock each. A slot is
 * claimed once (FREE -> FILLING), filled, made PENDING, and written by whoever first sees it
 * PENDING with the kept descriptor published (PENDING -> DONE): the caller, or the hooked
 * record's writer right after its own record. */
enum { SLOT_FREE, SLOT_FILLING, SLOT_PENDING, SLOT_DONE };
#define N_SLOTS (3 + VZCAPS_STOCK_CALLERS)
static struct slot {
    atomic_int state;
    char image[256];
    unsigned long long stock, given;
    char line[VZCAPS_STATSLOG_MAX];
} slots[N_SLOTS];
static atomic_uint n_stock;
static atomic_int kept = -1; /* the hooked record's descriptor, from then on */
static struct stat kept_st;  /* its file, set before kept is published */
static const char *device_class;

/* Slot k written now, when it is pending and the log is kept open: to the kept descriptor while
 * it is still the log's file with a name (a host that closed it and opened a file of its own at
 * its number never gets a record), else to the log opened again. */
static void slot_write(size_t k)
{
    static const char *const selectors[3] = {"supportsFamily:", "maxThreadgroupMemoryLength", "recommendedMaxWorkingSetSize"};
    int fd = atomic_load(&kept), pending = SLOT_PENDING;
    if (fd < 0 || !atomic_compare_exchange_strong(&slots[k].state, &pending, SLOT_DONE))
        return;
    struct slot *s = &slots[k];
    struct vzcaps_statslog_record rec = {(long long)time(NULL), (long long)getpid(), vzcaps_effective->apple_family_max,
                                         true, program, exe_path, device_class, ""};
    struct vzcaps_statslog_more more = {k < 3 ? VZCAPS_EVENT_UNLOCKED : VZCAPS_EVENT_STOCK_CALLER, NULL, s->image,
                                        k < 3 ? selectors[k] : NULL, s->stock, s->given};
    size_t n = vzcaps_statslog_format_more(&rec, &more, s->line);
    struct stat st;
    bool ours = fstat(fd, &st) == 0 && st.st_dev == kept_st.st_dev && st.st_ino == kept_st.st_ino && st.st_nlink;
    int w = ours ? fd : vzcaps_statsfile_open(log_path, log_old); /* rotated away twice meanwhile, or closed */
    if (w >= 0)
        (void)vzcaps_quiet_write(w, s->line, n); /* one write: O_APPEND keeps records whole; a failed one is lost */
    if (w >= 0 && !ours)
        close(w);
}

/* Slot k (claimed) filled and made pending, then written if the log is kept open already. */
static void slot_fill(size_t k, const char *image, unsigned long long stock, unsigned long long given)
{
    vzcaps_copy(slots[k].image, sizeof slots[k].image, image ? image : "");
    slots[k].stock = stock, slots[k].given = given;
    atomic_store(&slots[k].state, SLOT_PENDING);
    slot_write(k);
}

void vzcaps_statslog_effect(int kind, const char *image, unsigned long long stock, unsigned long long given)
{
    int free_ = SLOT_FREE, saved = errno;
    if (armed && kind >= 0 && kind < 3 && atomic_compare_exchange_strong(&slots[kind].state, &free_, SLOT_FILLING))
        slot_fill((size_t)kind, image, stock, given);
    errno = saved;
}

void vzcaps_statslog_stock_caller(const char *image)
{
    int saved = errno;
    const char *name = image ? image : "";
    unsigned n = atomic_load(&n_stock);
    bool seen = false;
    for (unsigned i = 0; i < n && i < VZCAPS_STOCK_CALLERS; i++)
        seen |= atomic_load(&slots[3 + i].state) >= SLOT_PENDING && strcmp(slots[3 + i].image, name) == 0;
    if (armed && !seen && n < VZCAPS_STOCK_CALLERS && (n = atomic_fetch_add(&n_stock, 1)) < VZCAPS_STOCK_CALLERS) {
        atomic_store(&slots[3 + n].state, SLOT_FILLING);
        slot_fill(3 + n, name, 0, 0);
    }
    errno = saved;
}

/* The process's record; a hooked one keeps the log open for its effects, and writes those asked
 * before it. */
static void record(bool hooked, const char *cls, const char *reason, const char *no_raise)
{
    static char line[VZCAPS_STATSLOG_MAX];
    struct vzcaps_statslog_record rec = {(long long)time(NULL), (long long)getpid(),
                                         hooked ? vzcaps_effective->apple_family_max : 0, hooked, program, exe_path, cls,
                                         hooked ? "" : reason};
    struct vzcaps_statslog_more more = {0, no_raise, NULL, NULL, 0, 0};
    size_t n = vzcaps_statslog_format_more(&rec, &more, line);
    int fd = vzcaps_statsfile_open(log_path, log_old);
    if (fd < 0)
        return;
    (void)vzcaps_quiet_write(fd, line, n);
    if (!hooked || fstat(fd, &kept_st) != 0) {
        close(fd);
        return;
    }
    device_class = cls;
    atomic_store(&kept, fd); /* close-on-exec (statsfile.c opens it so), open for the process's life */
    for (size_t k = 0; k < N_SLOTS; k++)
        slot_write(k);
}

void vzcaps_statslog_event(bool hooked, const char *cls, const char *reason, const char *no_raise)
{
    if (!armed || atomic_flag_test_and_set_explicit(&written, memory_order_relaxed))
        return;
    int saved = errno;
    if (prepare_now(armed))
        record(hooked, cls, reason && reason[0] ? reason : refusal, no_raise ? no_raise : "");
    errno = saved;
}
