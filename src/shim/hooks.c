/* Hook installation on a device class and the replacement methods themselves.
 * Owns: the per-class table of original implementations, install/rollback, the replacements,
 * the caller scope's decisions. Never: allocates, locks, logs or reads the environment inside a
 * replacement once its caller is known; changes a class partially (a failed install is rolled
 * back and the class stays stock). */
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
_Static_assert((int)SEL_FAMILY == VZCAPS_EFFECT_FAMILY && (int)SEL_THREADGROUP == VZCAPS_EFFECT_THREADGROUP &&
                   (int)SEL_WORKING_SET == VZCAPS_EFFECT_WORKING_SET, "one effect kind per selector");

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
    _Atomic uintptr_t above[N_SELS], below[N_SELS], paged[N_SELS]; /* "a device's limits, remembered" (0: none) */
    atomic_int state;              /* ENTRY_*: DONE or FAILED only once the install has finished */
};
static struct hooked_class table[MAX_CLASSES];
static atomic_size_t n_table;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- what the replacements answer from, computed once before the first one is installed ----
 * Each class entry k has replacements of its own (below), so a replacement knows its original
 * without looking at self's class: one acquire load, never NULL (an entry's originals are set
 * before its replacements are installed and never cleared after). Per family (the profile's
 * vzcaps_family_table): 0 not claimed; FAST claimed and answered YES in line; PAGED the same
 * once the caller's page of code is found in scope in line (a mixed process: an image whose
 * calls are out of scope is, or may be, loaded: sticky; one class hooked); SLOW claimed and
 * decided out of line (mixed otherwise, or the first raised answer is not on record). */
enum { FAST = 1, SLOW = 2, PAGED = 3 };
static unsigned char family_tables[3][VZCAPS_FAMILY_TABLE_LEN]; /* claimed families SLOW, FAST, PAGED */
static const unsigned char *_Atomic family_state = family_tables[0];
static uint64_t floor_of[N_SELS];
static atomic_bool answers_ready, mixed, recorded[N_SELS]; /* recorded: the first raised answer of a kind */
static atomic_bool differing; /* an image judged otherwise than an unknown caller was loaded (sticky) */

static inline __attribute__((always_inline)) IMP original_of(size_t k, int which)
{
    return atomic_load_explicit(&table[k].original[which], memory_order_acquire);
}

/* After `mixed`, `recorded` or the number of classes changed: the table, and the devices
 * remembered below a floor (answered whoever asks) dropped in a mixed process; again if `mixed`
 * turned meanwhile. */
static void refresh(void)
{
    bool fast;
    do {
        fast = !atomic_load(&mixed);
        bool on_record = atomic_load(&recorded[SEL_FAMILY]), one = atomic_load(&n_table) <= 1;
        atomic_store(&family_state, family_tables[!on_record ? 0 : fast ? 1 : one ? 2 : 0]);
        for (size_t k = 0; !fast && k < MAX_CLASSES; k++)
            for (int w = 0; w < N_SELS; w++)
                atomic_store_explicit(&table[k].below[w], 0, memory_order_relaxed);
    } while (fast && atomic_load(&mixed));
}

/* ---- caller scope: which image sent the message ----
 * A message send reaches the method by a tail jump (objc_msgSend) or a call of the looked-up
 * IMP (GNU runtime), so the replacement's return address lies in the code that asked
 * (METAL-FACTS, "Who asked"). Each image is judged as it loads (vzcaps_hooks_image_added): while
 * none is judged otherwise than an unknown caller, the process is not mixed and the replacements
 * never look at who calls. In a mixed one, the decision is cached per 4 KiB page of code (a page
 * never holds two images) in a fixed table of words "page | STOCK", 0 free: lock-free loads, a
 * new page claimed with one compare-and-swap in a window of PROBES words from its HOME (a
 * multiplicative hash: two images' pages spread apart), a page not seen judged by dladdr and the
 * globs (and each time, when its window is full). A page found in scope in its home word is
 * answered in line (in_scope_here). The table is emptied when an image goes
 * (vzcaps_hooks_images_gone), so a new image at an old address is judged afresh. */
#define PAGE_BITS 10 /* 1,024 pages: 4 MiB of code that asks */
#define PROBES 8
#define HOME(page) (((uint32_t)(page) * 0x9e3779b1u) >> (32 - PAGE_BITS))
#define STOCK (1ull << 63) /* above every user-space address */
static _Atomic uint64_t pages[(1u << PAGE_BITS) + PROBES];

/* The base name of the image holding addr ("": none, or too long to be told) and its load
 * address (NULL: none), errno kept */
static const void *image_of(uint64_t addr, char name[256])
{
    Dl_info info = {0};
    int saved = errno;
    const char *base = dladdr((const void *)(uintptr_t)addr, &info) && info.dli_fname ? vzcaps_basename(info.dli_fname) : "";
    memcpy(name, strlen(base) < 256 ? base : "", strlen(base) < 256 ? strlen(base) + 1 : 1);
    errno = saved;
    return base[0] ? info.dli_fbase : NULL;
}

void vzcaps_hooks_images_gone(void)
{
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        atomic_store_explicit(&pages[i], 0, memory_order_relaxed);
}

/* An image loaded (path; NULL: one not known here, which only counts once the images loaded
 * before are judged: answers_prepare) */
void vzcaps_hooks_image_added(const char *path)
{
    const char *base = path ? vzcaps_basename(path) : NULL;
    if (atomic_load(&differing) || !vzcaps_effective->scoped || (!path && !atomic_load(&answers_ready)) ||
        (base && vzcaps_caller_in_scope(vzcaps_effective, strlen(base) < 256 ? base : "") ==
                     vzcaps_caller_in_scope(vzcaps_effective, "")))
        return;
    atomic_store(&differing, true);
    atomic_store(&mixed, true);
    refresh();
}

/* The images judged, once, after the first install and outside install_lock (dyld and ld.so
 * take locks of their own, which a library's initializer that creates a device may hold while
 * it waits for install_lock); until then a scoped process is taken as mixed. */
static void images_judged(void)
{
    static atomic_flag started = ATOMIC_FLAG_INIT;
    if (!vzcaps_effective->scoped || atomic_flag_test_and_set(&started))
        return;
    vzcaps_platform_watch_images(vzcaps_hooks_image_added, vzcaps_hooks_images_gone);
    if (vzcaps_caller_in_scope(vzcaps_effective, "") && !atomic_load(&differing)) {
        atomic_store(&mixed, false);
        if (atomic_load(&differing)) /* loaded meanwhile */
            atomic_store(&mixed, true);
    }
    refresh();
}

static struct hooked_class *find_entry(Class cls);

/* The original that answers `which` for device: its class's own, or its nearest hooked
 * superclass's. Another than entry k's when k's replacement is reached past one of ours: a super
 * send from a hooked subclass's own method (objc_msgSendSuper2 from its code), answered as the
 * parent's original answers (the subclass's replacement answers its caller). Lock-free. */
static IMP device_original(id device, int which)
{
    for (Class c = object_getClass(device); c; c = class_getSuperclass(c)) {
        struct hooked_class *e = find_entry(c);
        if (e && original_of((size_t)(e - table), which))
            return original_of((size_t)(e - table), which);
    }
    return NULL;
}

/* A page not in the table: its image's decision, cached in room (a word another thread took
 * first, or a full window, leaves the page to be judged again); an image kept stock is recorded */
static __attribute__((noinline)) bool page_judged(uint64_t a, _Atomic uint64_t *room)
{
    char image[256];
    uint64_t free = 0;
    image_of(a, image);
    bool in = vzcaps_caller_in_scope(vzcaps_effective, image);
    if (room)
        atomic_compare_exchange_strong(room, &free, (a >> 12) | (in ? 0 : STOCK));
    if (!in)
        vzcaps_statslog_stock_caller(image);
    return in;
}

static inline __attribute__((always_inline)) bool caller_in_scope(size_t k, int which, id self, uint64_t a)
{
    if (!atomic_load_explicit(&mixed, memory_order_relaxed))
        return true;
    if (atomic_load_explicit(&n_table, memory_order_relaxed) > 1 && device_original(self, which) != original_of(k, which))
        return false; /* a super send (with one class hooked, none can come past ours) */
    uint64_t page = a >> 12;
    _Atomic uint64_t *w = pages + HOME(page), *room = NULL;
    for (size_t i = 0; i < PROBES && !room; i++) {
        uint64_t e = atomic_load_explicit(&w[i], memory_order_relaxed);
        if (e == page || e == (page | STOCK))
            return e == page;
        room = e ? NULL : &w[i];
    }
    return page_judged(a, room);
}

static inline uint64_t site_of(const void *ret)
{
    return (uint64_t)(uintptr_t)vzcaps_platform_strip_return_address(ret);
}

/* Whether the caller's page is in the table, in scope, in its home word: one load, in line */
static inline __attribute__((always_inline)) bool in_scope_here(const void *ret)
{
    uint64_t page = site_of(ret) >> 12;
    return atomic_load_explicit(&pages[HOME(page)], memory_order_relaxed) == page;
}

static _Atomic(IMP) original_init_family; /* the watch's (below) */

/* The first raised answer of a kind, recorded (by the caller's image) before it returns; not one
 * the device's own code asks itself, an image that holds the original of the method asked on its
 * class chain or the original -initGPUFamilySupport (Metal's, which asks as it creates a device):
 * no effect on the job, the record waits for another image. Such a site is remembered, so the
 * few asks of a device's creation pay dladdr once each. */
static __attribute__((noinline)) void raised(int which, id self, const void *ret, unsigned long long stock,
                                             unsigned long long given)
{
    static _Atomic uint64_t own_site;
    char image[256], name[256];
    uint64_t a = site_of(ret);
    if (a == atomic_load(&own_site) || atomic_load(&recorded[which]))
        return;
    const void *base = image_of(a, image); /* NULL: in no image, so in none of the device's */
    IMP own[2] = {device_original(self, which), atomic_load(&original_init_family)};
    bool mine = false;
    for (int i = 0; base && i < 2 && !mine; i++)
        mine = own[i] && image_of(site_of((const void *)own[i]), name) == base;
    if (mine)
        atomic_store(&own_site, a);
    else if (!atomic_exchange(&recorded[which], true))
        vzcaps_statslog_effect(which, image, stock, given), refresh(); /* errno kept */
}

static inline __attribute__((always_inline)) unsigned char family_state_of(long family)
{
    unsigned long i = (unsigned long)family - VZCAPS_FAMILY_TABLE_FIRST;
    return i < VZCAPS_FAMILY_TABLE_LEN ? atomic_load_explicit(&family_state, memory_order_relaxed)[i] : 0;
}

/* ---- the replacements ----
 * supportsFamily: YES when the call is in scope and the profile claims the family (whatever
 * the stock answer: a supported answer stays supported, vzcaps_answer's first rule); otherwise
 * the original's answer. Only a FAST family is answered in line; until the first raised answer
 * is on record, a claimed family asks the original and records a NO it overrides. */
static __attribute__((noinline)) BOOL family_slow(size_t k, id self, SEL cmd, long family, const void *ret)
{
    family_imp orig = (family_imp)(void (*)(void))original_of(k, SEL_FAMILY);
    if (!family_state_of(family) || !caller_in_scope(k, SEL_FAMILY, self, site_of(ret)))
        return orig(self, cmd, family);
    if (!atomic_load_explicit(&recorded[SEL_FAMILY], memory_order_relaxed) && !orig(self, cmd, family))
        raised(SEL_FAMILY, self, ret, 0, (unsigned long long)family);
    return YES;
}

static inline __attribute__((always_inline)) BOOL family_answer(size_t k, id self, SEL cmd, long family, const void *ret)
{
    unsigned char state = family_state_of(family);
    if (state == FAST || (state == PAGED && in_scope_here(ret)))
        return YES;
    return family_slow(k, self, cmd, family, ret);
}

/* ---- a device's limits, remembered ----
 * A limit's original answer is a read-only property of the device, fixed when it is created
 * (Metal's maxThreadgroupMemoryLength and recommendedMaxWorkingSetSize have no setter, and
 * the replacement never changes what the original answers). So each entry remembers, per
 * limit, the last device found at or above the floor (its answer, whoever asks: a tail call of
 * the original) and, once the first raised answer of the kind is on record, the last one found
 * below it: in a process not mixed (below: the floor, without the original), and in any (paged:
 * the floor for a caller in_scope_here, also without the original). Each word holds a fact
 * about one device and is read and written whole (relaxed: it publishes nothing else), so
 * racing threads can only replace one true fact by another; two devices asked in turn simply
 * take the slow path. A device created later at the address of a freed one is forgotten
 * (forget) on its way to its first caller, where every device passes: initGPUFamilySupport or
 * a factory. */
static __attribute__((noinline)) unsigned long limit_asked(size_t k, int which, id self, SEL cmd, const void *ret)
{
    unsigned long stock = ((ulong_imp)(void (*)(void))original_of(k, which))(self, cmd);
    uintptr_t me = (uintptr_t)self;
    if (stock >= floor_of[which])
        atomic_store_explicit(&table[k].above[which], me, memory_order_relaxed);
    if (stock >= floor_of[which] || !caller_in_scope(k, which, self, site_of(ret)))
        return stock;
    if (!atomic_load_explicit(&recorded[which], memory_order_relaxed))
        raised(which, self, ret, stock, floor_of[which]);
    else if (atomic_store_explicit(&table[k].paged[which], me, memory_order_relaxed), atomic_store(&table[k].below[which], me),
             atomic_load(&mixed)) /* mixed meanwhile: dropped */
        atomic_compare_exchange_strong(&table[k].below[which], &me, 0);
    return (unsigned long)floor_of[which];
}

static inline __attribute__((always_inline)) unsigned long limit_answer(size_t k, int which, id self, SEL cmd,
                                                                        const void *ret)
{
    uintptr_t me = (uintptr_t)self;
    if (atomic_load_explicit(&table[k].above[which], memory_order_relaxed) == me)
        return ((ulong_imp)(void (*)(void))original_of(k, which))(self, cmd);
    if (atomic_load_explicit(&table[k].below[which], memory_order_relaxed) == me ||
        (atomic_load_explicit(&table[k].paged[which], memory_order_relaxed) == me &&
         atomic_load_explicit(&n_table, memory_order_relaxed) <= 1 && in_scope_here(ret))) /* no super sends */
        return (unsigned long)floor_of[which];
    return limit_asked(k, which, self, cmd, ret);
}

/* One set per class entry k. ret: the replacement's own return address, taken there (an
 * inlined helper has none). */
#define DEFINE_SLOT(k)                                                                                             \
    static BOOL family_##k(id self, SEL cmd, long f) { return family_answer(k, self, cmd, f, __builtin_return_address(0)); } \
    static unsigned long group_##k(id self, SEL cmd) { return limit_answer(k, SEL_THREADGROUP, self, cmd, __builtin_return_address(0)); } \
    static unsigned long set_##k(id self, SEL cmd) { return limit_answer(k, SEL_WORKING_SET, self, cmd, __builtin_return_address(0)); }
#define SLOTS(X)                                                                                                   \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) \
    X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
SLOTS(DEFINE_SLOT)
_Static_assert(MAX_CLASSES == 32, "one set of replacements per class entry");

#define AS_IMP(f) (IMP)(void (*)(void))f
/* Filled at the first install (answers_prepare), not initialised: 96 addresses in a const
 * table are as many relocations ld.so applies in every process the library starts in. */
static IMP replacements[N_SELS][MAX_CLASSES];
#define FILL_SLOT(k)                                                                                               \
    replacements[SEL_FAMILY][k] = AS_IMP(family_##k), replacements[SEL_THREADGROUP][k] = AS_IMP(group_##k),     \
    replacements[SEL_WORKING_SET][k] = AS_IMP(set_##k);

static void answers_prepare(void)
{
    if (atomic_load_explicit(&answers_ready, memory_order_relaxed))
        return; /* under install_lock: once */
    SLOTS(FILL_SLOT)
    vzcaps_family_table(vzcaps_effective, family_tables[1]); /* 1: claimed */
    for (size_t i = 0; i < VZCAPS_FAMILY_TABLE_LEN; i++)
        family_tables[0][i] = (unsigned char)(family_tables[1][i] * SLOW), family_tables[2][i] = (unsigned char)(family_tables[1][i] * PAGED);
    floor_of[SEL_THREADGROUP] = vzcaps_effective->max_threadgroup_memory;
    floor_of[SEL_WORKING_SET] = vzcaps_effective->recommended_working_set_size;
    atomic_store(&mixed, vzcaps_effective->scoped); /* until the images are judged (images_judged) */
    refresh();
    atomic_store_explicit(&answers_ready, true, memory_order_release);
}

/* whether imp is one of ours for this selector (inherited from a hooked superclass) */
static bool is_replacement(IMP imp, int which)
{
    for (size_t k = 0; k < MAX_CLASSES; k++)
        if (replacements[which][k] == imp)
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
            SEL sel = sel_registerName(sel_names[w]);
            Method m = class_getInstanceMethod(cls, sel);
            if (m)
                class_replaceMethod(cls, sel, e->original[w], method_getTypeEncoding(m));
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
    /* publish the originals before any replacement can run; a second class: no PAGED answers */
    atomic_store_explicit(&n_table, n + 1, memory_order_release);
    refresh();
    for (int w = 0; w < N_SELS && rc == 0; w++) {
        if (!mine->original[w])
            continue;
        SEL sel = sel_registerName(sel_names[w]);
        Class super = class_getSuperclass(cls);
        int inherited = super && class_getInstanceMethod(super, sel) == methods[w];
        IMP mine_w = replacements[w][n], prev = NULL;
        const char *types = method_getTypeEncoding(methods[w]); /* class_replaceMethod: see the watch */
        int ok = inherited ? (int)class_addMethod(cls, sel, mine_w, types) : (prev = class_replaceMethod(cls, sel, mine_w, types)) != NULL;
        /* the implementation the swap replaced: someone else's swizzle since the read is kept */
        if (prev && !is_replacement(prev, w))
            atomic_store_explicit(&mine->original[w], prev, memory_order_release);
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
            atomic_compare_exchange_strong(&table[k].above[w], &was, 0);
            was = (uintptr_t)device;
            atomic_compare_exchange_strong(&table[k].below[w], &was, 0);
            was = (uintptr_t)device;
            atomic_compare_exchange_strong(&table[k].paged[w], &was, 0);
        }
}

/* Why no answer of the profile can differ from device's own (the originals asked once, when the
 * device is ready), or NULL when one can: a claimed family it denies, a floor above its limit. */
static const char *no_raise(id device, char *why, size_t len)
{
    family_imp fam = (family_imp)(void (*)(void))device_original(device, SEL_FAMILY);
    SEL sel = sel_registerName(sel_names[SEL_FAMILY]);
    long own = 0;
    if (!fam && vzcaps_query_needed(vzcaps_effective, VZCAPS_Q_SUPPORTS_FAMILY))
        return NULL; /* answered by a device it wraps: not to be told from here */
    const unsigned char *t = family_tables[1], *at = t; /* the claimed families (FAST in this table) */
    while (fam && (at = memchr(at, FAST, VZCAPS_FAMILY_TABLE_LEN - (size_t)(at - t))) != NULL)
        if (!fam(device, sel, VZCAPS_FAMILY_TABLE_FIRST + (at++ - t)))
            return NULL;
    for (long f = 1001; fam && f <= 1010; f++) /* Apple1 .. Apple10 */
        own = fam(device, sel, f) ? f : own;
    for (int w = SEL_THREADGROUP; w < N_SELS; w++) {
        ulong_imp limit = (ulong_imp)(void (*)(void))device_original(device, w);
        if (floor_of[w] && (!limit || limit(device, sel_registerName(sel_names[w])) < floor_of[w]))
            return NULL;
    }
    char mine[24] = "no Apple family", claims[32] = "no Apple family";
    if (own)
        snprintf(mine, sizeof mine, "Apple%ld", own - 1000);
    if (vzcaps_effective->apple_family_max)
        snprintf(claims, sizeof claims, "up to Apple%lld", (long long)vzcaps_effective->apple_family_max - 1000);
    snprintf(why, len, "nothing above the device's own family: it answers %s and the profile claims %s; no floor above "
             "its limits", mine, claims);
    return why;
}

/* The process's "hooked" record, once, for a device that is ready (its own answers are final) */
static void hooked_record(id device)
{
    static atomic_flag done = ATOMIC_FLAG_INIT;
    struct hooked_class *e = device ? find_entry(object_getClass(device)) : NULL;
    if (!e || atomic_load_explicit(&e->state, memory_order_acquire) != ENTRY_DONE || atomic_flag_test_and_set(&done))
        return;
    char why[300];
    vzcaps_statslog_event(true, class_getName(e->cls), NULL, no_raise(device, why, sizeof why));
}

static void on_device(id device, const char *path)
{
    if (device && vzcaps_effective->state == VZCAPS_STOCK_REFUSED) {
        vzcaps_said(NULL, path); /* the first device, left stock: the refusal is said now */
        vzcaps_statslog_event(false, class_getName(object_getClass(device)), NULL, NULL);
    }
    if (!device || vzcaps_effective->state != VZCAPS_ENABLED)
        return;
    forget(device);
    Class cls = object_getClass(device);
    struct hooked_class *e = find_entry(cls);
    /* Fast path only once the install is complete: an entry is published (for the
     * replacements' lookups) before its methods are swapped, and a device must not be handed
     * out before then. Otherwise wait on the lock, which the installing thread holds. */
    if (e && atomic_load_explicit(&e->state, memory_order_acquire) != ENTRY_INSTALLING)
        return;
    char why[256];
    if (vzcaps_hooks_install_on_class(cls, why, sizeof why) != 0) {
        char line[300];
        snprintf(line, sizeof line, "vzcaps: %s", why);
        vzcaps_log(line, !vzcaps_effective->quiet);
        vzcaps_statslog_event(false, class_getName(cls), why, NULL);
    } else {
        char label[160];
        vzcaps_said(class_label(cls, label), path); /* once per process */
        images_judged();
        if (strcmp(path, VZCAPS_PATH_INIT_FAMILY) != 0)
            hooked_record(device); /* -initGPUFamilySupport's replacement records once the original ran */
    }
}

/* errno is as the caller had it: installing, logging and the one line may all set it */
void vzcaps_hooks_on_device(id device, const char *path)
{
    int saved = errno;
    on_device(device, path);
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
    vzcaps_hooks_on_device(self, VZCAPS_PATH_INIT_FAMILY);
    IMP orig = atomic_load_explicit(&original_init_family, memory_order_acquire);
    if (orig)
        ((void_imp)(void (*)(void))orig)(self, cmd);
    int saved = errno;
    hooked_record(self); /* the device's own answers are final now */
    errno = saved;
}

void vzcaps_hooks_watch_base_class(void)
{
    if (atomic_load_explicit(&watch_state, memory_order_acquire) == WATCH_ON)
        return; /* watching already (a class registration on the rig asks again) */
    Class base = objc_getClass("_MTLDevice");
    SEL sel = sel_registerName("initGPUFamilySupport");
    Method m = base ? class_getInstanceMethod(base, sel) : NULL;
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
     * implementation the one atomic swap actually replaced. class_replaceMethod: objc4 empties
     * the caches of this class and its subclasses (objc-runtime-new.mm: addMethod ->
     * flushCaches(cls)), method_setImplementation every realized class's (flushCaches(nil));
     * the GNU runtime walks every class either way (libobjc/sendmsg.c). */
    atomic_store_explicit(&original_init_family, method_getImplementation(m), memory_order_release);
    IMP prev = class_replaceMethod(base, sel, (IMP)(void (*)(void))replaced_init_family, "v@:");
    if (prev)
        atomic_store_explicit(&original_init_family, prev, memory_order_release);
    atomic_store_explicit(&watch_state, WATCH_ON, memory_order_release);
}
