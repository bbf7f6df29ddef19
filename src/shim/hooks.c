/* Hook installation on a device class and the replacement methods themselves.
 * Owns: the per-class table of original implementations, install/rollback, the replacements.
 * Never: allocates, locks, logs or reads the environment inside a replacement; changes a
 * class partially (a failed install is rolled back and the class stays stock). */
#define _GNU_SOURCE /* Dl_info and dladdr on glibc */
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { SEL_FAMILY, SEL_THREADGROUP, SEL_WORKING_SET, N_SELS };

static const char *const sel_names[N_SELS] = {
    [SEL_FAMILY] = "supportsFamily:",
    [SEL_THREADGROUP] = "maxThreadgroupMemoryLength",
    [SEL_WORKING_SET] = "recommendedMaxWorkingSetSize",
};
static const enum vzcaps_query sel_queries[N_SELS] = {
    [SEL_FAMILY] = VZCAPS_Q_SUPPORTS_FAMILY,
    [SEL_THREADGROUP] = VZCAPS_Q_MAX_THREADGROUP_MEMORY,
    [SEL_WORKING_SET] = VZCAPS_Q_RECOMMENDED_WORKING_SET,
};

/* The exact method types (MTLGPUFamily is NSInteger; the limits are NSUInteger/uint64_t). */
typedef BOOL (*family_imp)(id, SEL, long);
typedef unsigned long (*ulong_imp)(id, SEL);
typedef void (*void_imp)(id, SEL);

#define MAX_CLASSES 32
enum { ENTRY_INSTALLING, ENTRY_DONE, ENTRY_FAILED };

struct hooked_class {
    Class cls;
    _Atomic(IMP) original[N_SELS]; /* NULL: not replaced on this class (inherited or not needed) */
    /* per limit, a device whose original answer was found below the floor, and one at or
     * above it (0: none); see "a device's limits, remembered" */
    _Atomic uintptr_t below[N_SELS], at_or_above[N_SELS];
    atomic_int state;              /* ENTRY_*: DONE or FAILED only once the install has finished */
};
static struct hooked_class table[MAX_CLASSES];
static atomic_size_t n_table;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- what the replacements answer from, computed once before the first one is installed ----
 * Each class entry k has replacements of its own (below), so a replacement knows its original
 * without looking at self's class: one acquire load, never NULL (an entry's originals are set
 * before its replacements are installed and never cleared after). The answers are the profile's,
 * precomputed: the supportsFamily: table (vzcaps_family_table) and the two floors. */
static unsigned char family_yes[VZCAPS_FAMILY_TABLE_LEN];
static uint64_t floor_of[N_SELS];
static atomic_bool answers_ready;

static void replacements_fill(void);

static void answers_prepare(void)
{
    if (atomic_load_explicit(&answers_ready, memory_order_relaxed))
        return; /* under install_lock: once */
    replacements_fill();
    vzcaps_family_table(vzcaps_effective, family_yes);
    floor_of[SEL_THREADGROUP] = vzcaps_effective->max_threadgroup_memory;
    floor_of[SEL_WORKING_SET] = vzcaps_effective->recommended_working_set_size;
    atomic_store_explicit(&answers_ready, true, memory_order_release);
}

static inline __attribute__((always_inline)) IMP original_of(size_t k, int which)
{
    return atomic_load_explicit(&table[k].original[which], memory_order_acquire);
}

/* The image of a call site, for the caller scope: dladdr, which macOS and glibc both have. */
static void vzcaps_image_of(const void *addr, char *name, size_t len)
{
    Dl_info info;
    name[0] = '\0';
    if (dladdr(addr, &info) && info.dli_fname) {
        const char *base = vzcaps_basename(info.dli_fname);
        if (strlen(base) < len) /* a name that does not fit is unknown, never a cut name */
            memcpy(name, base, strlen(base) + 1);
    }
}

/* ---- caller scope: which image sent the message ----
 * A message send reaches the method by a tail jump (objc_msgSend) or a call of the looked-up
 * IMP (GNU runtime), so the replacement's return address lies in the code that asked
 * (METAL-FACTS, "Who asked"). Its image is resolved with dladdr once per call site and the
 * core's decision cached in a fixed table of words, each "address | stock bit"; 0 is free.
 * Lookups are lock-free loads; a new site is claimed with one compare-and-swap; when its
 * probe window is full the site is resolved each time, uncached. In front of the table, one
 * word per selector holds the last call site found in scope (0: none): a load and a compare
 * for a client that asks from one place, as most do. The replacements of a process whose
 * scope is every caller never look (scope_all). */
#define SITE_SLOTS 1024
#define SITE_PROBES 8
static _Atomic uint64_t sites[SITE_SLOTS]; /* (address << 1) | stock; 0 is free */
static _Atomic uint64_t last_in_scope[N_SELS];

static inline size_t site_hash(uint64_t a) { return (size_t)((a * 0x9e3779b97f4a7c15ull) >> 54); }

static bool caller_in_scope(uint64_t a)
{
    size_t h = site_hash(a);
    for (size_t i = 0; i < SITE_PROBES; i++) {
        uint64_t e = atomic_load_explicit(&sites[(h + i) & (SITE_SLOTS - 1)], memory_order_relaxed);
        if (e >> 1 == a)
            return !(e & 1);
        if (!e)
            break;
    }
    /* a new site: resolve its image once, then claim a free slot (or stay uncached); dladdr
     * may set errno, which the host's call must not see */
    char image[256];
    int saved = errno;
    vzcaps_image_of((const void *)(uintptr_t)a, image, sizeof image);
    errno = saved;
    bool in = vzcaps_caller_in_scope(vzcaps_effective, image);
    if (!in)
        vzcaps_statslog_stock_caller(image); /* the stats log names the images kept stock */
    uint64_t want = a << 1 | (in ? 0 : 1);
    for (size_t i = 0; i < SITE_PROBES; i++) {
        uint64_t expected = 0;
        _Atomic uint64_t *slot = &sites[(h + i) & (SITE_SLOTS - 1)];
        if (atomic_compare_exchange_strong_explicit(slot, &expected, want, memory_order_relaxed, memory_order_relaxed) ||
            expected >> 1 == a)
            break;
    }
    return in;
}

/* The scope decision for a site the last_in_scope word did not hold; an in-scope site goes there. */
static bool site_in_scope(int which, uint64_t a)
{
    bool in = caller_in_scope(a);
    if (in)
        atomic_store_explicit(&last_in_scope[which], a, memory_order_release);
    return in;
}

static inline __attribute__((always_inline)) bool site_is_last(int which, uint64_t a)
{
    return atomic_load_explicit(&last_in_scope[which], memory_order_acquire) == a;
}

static inline uint64_t site_of(const void *ret)
{
    return (uint64_t)(uintptr_t)vzcaps_platform_strip_return_address(ret);
}

static inline __attribute__((always_inline)) bool family_claimed(long family)
{
    unsigned long i = (unsigned long)family - VZCAPS_FAMILY_TABLE_FIRST;
    return i < VZCAPS_FAMILY_TABLE_LEN && family_yes[i];
}

/* ---- the effect: the first answer of a kind above the device's own, recorded (statslog.c)
 * before it returns; until then a raised family answer asks the original first ---- */
static atomic_bool effect_seen[N_SELS];
_Static_assert((int)SEL_FAMILY == (int)VZCAPS_EFFECT_FAMILY && (int)SEL_WORKING_SET == (int)VZCAPS_EFFECT_WORKING_SET, "kinds are selectors");

static __attribute__((noinline)) void effect_first(int which, uint64_t a, unsigned long long stock, unsigned long long given)
{
    if (atomic_exchange_explicit(&effect_seen[which], true, memory_order_relaxed))
        return;
    char image[256];
    int saved = errno;
    vzcaps_image_of((const void *)(uintptr_t)a, image, sizeof image);
    errno = saved;
    vzcaps_statslog_effect(which, image, stock, given);
}

static __attribute__((noinline)) BOOL family_first(size_t k, id self, SEL cmd, long family, uint64_t a)
{
    if (!((family_imp)(void (*)(void))original_of(k, SEL_FAMILY))(self, cmd, family))
        effect_first(SEL_FAMILY, a, 0, (unsigned long long)family);
    return YES;
}
#define FAMILY_YES(k, self, cmd, family, a)                                                                   \
    (atomic_load_explicit(&effect_seen[SEL_FAMILY], memory_order_relaxed) ? YES : family_first(k, self, cmd, family, a))

/* ---- the replacements ----
 * supportsFamily: YES when the call is in scope and the profile claims the family (whatever
 * the stock answer: a supported answer stays supported, vzcaps_answer's first rule); otherwise
 * the original's answer, as a tail call. A limit: the original's answer, raised to the floor
 * when the call is in scope. Everything but a call from the last in-scope site is kept out
 * of line. */
static __attribute__((noinline)) BOOL family_slow(size_t k, id self, SEL cmd, long family, uint64_t a)
{
    if (family_claimed(family) && site_in_scope(SEL_FAMILY, a))
        return FAMILY_YES(k, self, cmd, family, a);
    return ((family_imp)(void (*)(void))original_of(k, SEL_FAMILY))(self, cmd, family);
}

static inline __attribute__((always_inline)) BOOL family_scoped(size_t k, id self, SEL cmd, long family, const void *ret)
{
    uint64_t a = site_of(ret);
    if (!site_is_last(SEL_FAMILY, a))
        return family_slow(k, self, cmd, family, a);
    if (family_claimed(family))
        return FAMILY_YES(k, self, cmd, family, a);
    return ((family_imp)(void (*)(void))original_of(k, SEL_FAMILY))(self, cmd, family);
}

static inline __attribute__((always_inline)) BOOL family_all(size_t k, id self, SEL cmd, long family, const void *ret)
{
    if (family_claimed(family))
        return FAMILY_YES(k, self, cmd, family, site_of(ret));
    return ((family_imp)(void (*)(void))original_of(k, SEL_FAMILY))(self, cmd, family);
}

/* ---- a device's limits, remembered ----
 * A limit's original answer is a read-only property of the device, fixed when it is created
 * (Metal's maxThreadgroupMemoryLength and recommendedMaxWorkingSetSize have no setter, and
 * the replacement never changes what the original answers). So each entry remembers, per
 * limit, one device found below the floor and one at or above it: a later call on that device
 * skips the original when it is below (the floor for a caller in scope) and tail-calls it when
 * it is at or above (its answer, whoever asks). Each word holds a fact about one device and is
 * read and written whole (relaxed: it publishes nothing else), so racing threads can only
 * replace one true fact by another; two devices asked in turn simply take the slow path. A
 * device created later at the address of a freed one is forgotten (vzcaps_hooks_forget) on its
 * way to its first caller, where every device passes: initGPUFamilySupport or a factory. */
static __attribute__((noinline)) unsigned long limit_asked(size_t k, int which, id self, SEL cmd, uint64_t a)
{
    unsigned long stock = ((ulong_imp)(void (*)(void))original_of(k, which))(self, cmd);
    bool below = stock < floor_of[which];
    atomic_store_explicit(below ? &table[k].below[which] : &table[k].at_or_above[which], (uintptr_t)self,
                          memory_order_relaxed);
    if (!below || !site_in_scope(which, a))
        return stock;
    if (!atomic_load_explicit(&effect_seen[which], memory_order_relaxed))
        effect_first(which, a, stock, floor_of[which]);
    return (unsigned long)floor_of[which];
}

/* A limit at or above the floor is the answer whoever asks; below it, the floor for a caller
 * in scope. A device not remembered is asked first, so the caller is looked at only when it
 * matters. */
static inline __attribute__((always_inline)) unsigned long limit_scoped(size_t k, int which, id self, SEL cmd, const void *ret)
{
    uintptr_t me = (uintptr_t)self;
    if (atomic_load_explicit(&table[k].below[which], memory_order_relaxed) == me) {
        uint64_t a = site_of(ret);
        if (site_is_last(which, a))
            return (unsigned long)floor_of[which];
        return limit_asked(k, which, self, cmd, a);
    }
    if (atomic_load_explicit(&table[k].at_or_above[which], memory_order_relaxed) == me)
        return ((ulong_imp)(void (*)(void))original_of(k, which))(self, cmd);
    return limit_asked(k, which, self, cmd, site_of(ret));
}

static inline __attribute__((always_inline)) unsigned long limit_all(size_t k, int which, id self, SEL cmd, const void *ret)
{
    unsigned long stock = ((ulong_imp)(void (*)(void))original_of(k, which))(self, cmd);
    if (stock < floor_of[which] && !atomic_load_explicit(&effect_seen[which], memory_order_relaxed))
        effect_first(which, site_of(ret), stock, floor_of[which]);
    return stock < floor_of[which] ? (unsigned long)floor_of[which] : stock;
}

/* One set per class entry k: scoped (the caller is looked at) and all (scope is every caller).
 * ret: the replacement's own return address, taken there (an inlined helper has none). */
#define DEFINE_SLOT(k)                                                                                             \
    static BOOL family_s##k(id self, SEL cmd, long f) { return family_scoped(k, self, cmd, f, __builtin_return_address(0)); } \
    static BOOL family_a##k(id self, SEL cmd, long f) { return family_all(k, self, cmd, f, __builtin_return_address(0)); } \
    static unsigned long group_s##k(id self, SEL cmd)                                                             \
    {                                                                                                             \
        return limit_scoped(k, SEL_THREADGROUP, self, cmd, __builtin_return_address(0));                         \
    }                                                                                                             \
    static unsigned long group_a##k(id self, SEL cmd) { return limit_all(k, SEL_THREADGROUP, self, cmd, __builtin_return_address(0)); } \
    static unsigned long set_s##k(id self, SEL cmd)                                                               \
    {                                                                                                             \
        return limit_scoped(k, SEL_WORKING_SET, self, cmd, __builtin_return_address(0));                         \
    }                                                                                                             \
    static unsigned long set_a##k(id self, SEL cmd) { return limit_all(k, SEL_WORKING_SET, self, cmd, __builtin_return_address(0)); }
#define SLOTS(X)                                                                                                   \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) \
    X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
SLOTS(DEFINE_SLOT)
_Static_assert(MAX_CLASSES == 32, "one set of replacements per class entry");

#define AS_IMP(f) (IMP)(void (*)(void))f
/* Filled at the first install (answers_prepare), not initialised: 192 addresses in a const
 * table are as many relocations ld.so applies in every process the library starts in. */
static IMP replacements[2][N_SELS][MAX_CLASSES];
#define FILL_SLOT(k)                                                                                               \
    replacements[0][SEL_FAMILY][k] = AS_IMP(family_s##k), replacements[1][SEL_FAMILY][k] = AS_IMP(family_a##k), \
    replacements[0][SEL_THREADGROUP][k] = AS_IMP(group_s##k), replacements[1][SEL_THREADGROUP][k] = AS_IMP(group_a##k), \
    replacements[0][SEL_WORKING_SET][k] = AS_IMP(set_s##k), replacements[1][SEL_WORKING_SET][k] = AS_IMP(set_a##k);
static void replacements_fill(void)
{
    SLOTS(FILL_SLOT)
}

/* entry k's replacement for a selector (scope_all: the process's scope is every caller) */
static IMP replacement(size_t k, int which)
{
    return replacements[!vzcaps_effective->scoped][which][k];
}

/* whether imp is one of ours for this selector (inherited from a hooked superclass) */
static bool is_replacement(IMP imp, int which)
{
    for (size_t v = 0; v < 2; v++)
        for (size_t k = 0; k < MAX_CLASSES; k++)
            if (replacements[v][which][k] == imp)
                return true;
    return false;
}

static struct hooked_class *find_entry(Class cls)
{
    size_t n = atomic_load_explicit(&n_table, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (table[i].cls == cls)
            return &table[i];
    return NULL;
}

static void clear_originals(struct hooked_class *e)
{
    for (int w = 0; w < N_SELS; w++)
        atomic_store_explicit(&e->original[w], NULL, memory_order_relaxed);
}

/* Restores the replacements made so far; the originals stay in the table, since a
 * replacement already running may still need them. */
static void rollback(Class cls, struct hooked_class *e, int done)
{
    for (int w = 0; w < done; w++)
        if (e->original[w]) {
            Method m = class_getInstanceMethod(cls, sel_registerName(sel_names[w]));
            if (m)
                method_setImplementation(m, e->original[w]);
        }
}

/* Whether cls hands messages it lacks to another object (-forwardingTargetForSelector: or
 * -forwardInvocation: implemented below its root class, whose own versions only fail): a
 * wrapper such as a debug or capture layer, whose answers come from the device it wraps. */
static bool forwards(Class cls)
{
    Class root = cls;
    while (class_getSuperclass(root))
        root = class_getSuperclass(root);
    static const char *const sels[] = {"forwardingTargetForSelector:", "forwardInvocation:"};
    for (size_t i = 0; i < sizeof sels / sizeof sels[0]; i++) {
        SEL sel = sel_registerName(sels[i]);
        Method mine = class_getInstanceMethod(cls, sel), base = class_getInstanceMethod(root, sel);
        if (mine && (!base || method_getImplementation(mine) != method_getImplementation(base)))
            return true;
    }
    return false;
}

/* cls's name for a reason line: clipped, and saying so, where it is long */
static const char *class_label(Class cls, char out[160])
{
    return vzcaps_clip(class_getName(cls), 120, out, 160);
}

/* Installs the replacements the profile needs on cls: all of them, or none (rolled back).
 * Returns 0 when the class is hooked (now or before), -1 with a reason otherwise. */
int vzcaps_hooks_install_on_class(Class cls, char *why, size_t len)
{
    int rc = 0;
    struct hooked_class *mine = NULL; /* the entry this call creates */
    char label[160];
    pthread_mutex_lock(&install_lock);
    struct hooked_class *e = find_entry(cls);
    if (e) {
        rc = atomic_load_explicit(&e->state, memory_order_relaxed) == ENTRY_FAILED ? -1 : 0; /* final: we hold the lock */
        if (rc)
            snprintf(why, len, "class %s was left stock earlier", class_label(cls, label));
        goto out;
    }
    size_t n = atomic_load_explicit(&n_table, memory_order_relaxed);
    if (n == MAX_CLASSES) {
        snprintf(why, len, "more than %d device classes; %s left stock", MAX_CLASSES, class_label(cls, label));
        rc = -1;
        goto out;
    }
    answers_prepare(); /* before any replacement can run */
    mine = &table[n];
    clear_originals(mine);
    atomic_store_explicit(&mine->state, ENTRY_INSTALLING, memory_order_relaxed);
    mine->cls = cls;
    Method methods[N_SELS] = {0};
    for (int w = 0; w < N_SELS && rc == 0; w++) {
        if (!vzcaps_query_needed(vzcaps_effective, sel_queries[w]))
            continue;
        methods[w] = class_getInstanceMethod(cls, sel_registerName(sel_names[w]));
        if (!methods[w] && forwards(cls)) {
            /* a wrapper forwards this query: the device it wraps answers, and is hooked when
             * it is created; nothing to replace here, and nothing to say (it is not stock) */
            continue;
        } else if (!methods[w]) {
            snprintf(why, len, "device class %s has no -%s; left stock", class_label(cls, label), sel_names[w]);
            rc = -1;
        } else if (!is_replacement(method_getImplementation(methods[w]), w)) {
            atomic_store_explicit(&mine->original[w], method_getImplementation(methods[w]), memory_order_relaxed);
        } /* else: inherited from a hooked superclass, already covered */
    }
    if (rc)
        clear_originals(mine); /* nothing was replaced */
    /* publish the originals before any replacement can run */
    atomic_store_explicit(&n_table, n + 1, memory_order_release);
    for (int w = 0; w < N_SELS && rc == 0; w++) {
        if (!mine->original[w])
            continue;
        SEL sel = sel_registerName(sel_names[w]);
        Class super = class_getSuperclass(cls);
        int inherited = super && class_getInstanceMethod(super, sel) == methods[w];
        IMP mine_w = replacement(n, w);
        int ok = inherited ? (int)class_addMethod(cls, sel, mine_w, method_getTypeEncoding(methods[w]))
                           : (method_setImplementation(methods[w], mine_w), 1);
        if (!ok) {
            rollback(cls, mine, w);
            snprintf(why, len, "could not replace -%s on %s; left stock", sel_names[w], class_label(cls, label));
            rc = -1;
        }
    }
out:
    if (mine) /* only now may other threads take the fast path for this class */
        atomic_store_explicit(&mine->state, rc ? ENTRY_FAILED : ENTRY_DONE, memory_order_release);
    pthread_mutex_unlock(&install_lock);
    return rc;
}

/* A device on its way to its first caller: what was remembered about an earlier device at its
 * address (freed since) is not about this one. */
static void forget(id device)
{
    size_t n = atomic_load_explicit(&n_table, memory_order_acquire);
    for (size_t k = 0; k < n; k++)
        for (int w = 0; w < N_SELS; w++) {
            uintptr_t was = (uintptr_t)device;
            atomic_compare_exchange_strong_explicit(&table[k].below[w], &was, 0, memory_order_relaxed, memory_order_relaxed);
            was = (uintptr_t)device;
            atomic_compare_exchange_strong_explicit(&table[k].at_or_above[w], &was, 0, memory_order_relaxed,
                                                    memory_order_relaxed);
        }
}

/* The original of which on cls, hooked now (NULL: not replaced there, so nothing to ask). */
static IMP stock_imp(Class cls, int which)
{
    struct hooked_class *e = find_entry(cls);
    return e ? original_of((size_t)(e - table), which) : NULL;
}

/* Why no answer of the profile's can differ from device's own (asked of the originals, on a
 * device whose creation is complete), or NULL when one can: a family claimed that it denies, or
 * a limit below its floor. */
static const char *no_raise(id device, char *why, size_t len)
{
    Class cls = object_getClass(device);
    IMP fam = stock_imp(cls, SEL_FAMILY);
    size_t n;
    const int64_t *all = vzcaps_family_all(&n);
    for (size_t i = n; fam && i-- > 0;) /* the highest first: one ask, when it is denied */
        if (family_claimed((long)all[i]) && !((family_imp)(void (*)(void))fam)(device, sel_registerName(sel_names[SEL_FAMILY]), (long)all[i]))
            return NULL;
    for (int w = SEL_THREADGROUP; w < N_SELS; w++) {
        IMP lim = stock_imp(cls, w);
        if (lim && ((ulong_imp)(void (*)(void))lim)(device, sel_registerName(sel_names[w])) < floor_of[w])
            return NULL;
    }
    const char *name = vzcaps_family_name(vzcaps_effective->apple_family_max);
    snprintf(why, len, "nothing above the device's own: it supports every family claimed (up to %s) and its limits "
             "are at or above the floors", name ? name : "none");
    return why;
}

/* The process's hooked record, for its first class hooked, once device's creation is done. */
static void hooked_record(id device)
{
    static atomic_flag recorded = ATOMIC_FLAG_INIT;
    char why[200];
    int saved = errno;
    if (!atomic_flag_test_and_set(&recorded))
        vzcaps_statslog_event(true, class_getName(object_getClass(device)), NULL, no_raise(device, why, sizeof why));
    errno = saved;
}

/* true: device's class was hooked now (its hooked record is due once the device is created) */
static bool on_device(id device, const char *path)
{
    if (device && vzcaps_effective->state == VZCAPS_STOCK_REFUSED) {
        vzcaps_said(NULL, path); /* the first device, left stock: the refusal is said now */
        vzcaps_statslog_event(false, class_getName(object_getClass(device)), NULL, NULL);
    }
    if (!device || vzcaps_effective->state != VZCAPS_ENABLED)
        return false;
    forget(device);
    Class cls = object_getClass(device);
    struct hooked_class *e = find_entry(cls);
    /* Fast path only once the install is complete: an entry is published (for the
     * replacements' lookups) before its methods are swapped, and a device must not be handed
     * out before then. Otherwise wait on the lock, which the installing thread holds. */
    if (e && atomic_load_explicit(&e->state, memory_order_acquire) != ENTRY_INSTALLING)
        return false;
    char why[256];
    if (vzcaps_hooks_install_on_class(cls, why, sizeof why) != 0) {
        char line[300];
        snprintf(line, sizeof line, "vzcaps: %s", why);
        vzcaps_log(line, !vzcaps_effective->quiet);
        vzcaps_statslog_event(false, class_getName(cls), why, NULL);
        return false;
    }
    char label[160];
    vzcaps_said(class_label(cls, label), path); /* once per process */
    return true;
}

/* errno is as the caller had it: installing, logging and the one line may all set it */
void vzcaps_hooks_on_device(id device, const char *path)
{
    int saved = errno;
    if (on_device(device, path)) /* a factory's device: created */
        hooked_record(device);
    errno = saved;
}

/* The private -[_MTLDevice initGPUFamilySupport] runs when any device is created. The hooks
 * go on the device's class before the original runs, so whatever the original builds from
 * its own supportsFamily: answers already sees the profile's (the order of the shim measured
 * working in guests). */
static _Atomic(IMP) original_init_family;
/* WATCH_*: one thread swaps; a caller that finds the swap under way waits for it (it returns
 * only once the watch is in place, as it did under a lock). No mutex: its first lock and unlock
 * are two libc symbols ld.so looks up in every process the library starts in. */
enum { WATCH_NONE, WATCH_SWAPPING, WATCH_ON };
static atomic_int watch_state;

static void replaced_init_family(id self, SEL cmd)
{
    int saved = errno;
    bool hooked = on_device(self, VZCAPS_PATH_INIT_FAMILY);
    errno = saved;
    IMP orig = atomic_load_explicit(&original_init_family, memory_order_acquire);
    if (orig)
        ((void_imp)(void (*)(void))orig)(self, cmd);
    if (hooked) /* after the original: the device's own answers are built now */
        hooked_record(self);
}

void vzcaps_hooks_watch_base_class(void)
{
    if (atomic_load_explicit(&watch_state, memory_order_acquire) == WATCH_ON)
        return; /* watching already (a class registration on the rig asks again) */
    Class base = objc_getClass("_MTLDevice");
    Method m = base ? class_getInstanceMethod(base, sel_registerName("initGPUFamilySupport")) : NULL;
    if (!m)
        return; /* missing private pieces are not an error */
    int expected = WATCH_NONE;
    if (!atomic_compare_exchange_strong_explicit(&watch_state, &expected, WATCH_SWAPPING, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        while (atomic_load_explicit(&watch_state, memory_order_acquire) != WATCH_ON)
            sched_yield(); /* another thread is swapping: a few instructions away */
        return;
    }
    /* provisional, so a device created during the swap still reaches the original; then the
     * implementation the one atomic swap actually replaced */
    atomic_store_explicit(&original_init_family, method_getImplementation(m), memory_order_release);
    IMP prev = method_setImplementation(m, (IMP)(void (*)(void))replaced_init_family);
    if (prev)
        atomic_store_explicit(&original_init_family, prev, memory_order_release);
    atomic_store_explicit(&watch_state, WATCH_ON, memory_order_release);
}
