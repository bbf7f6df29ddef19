/* Stand-in for Metal.framework on the GNU Objective-C runtime: a factory and a device class
 * hierarchy shaped like the paravirtual one (METAL-FACTS: "The problem"), with the stock
 * answers a guest gives. Test rig only. FAKEMETAL_CLASS picks a variant class:
 *   (unset)  AppleParavirtDevice: every method inherited from _MTLDevice
 *   own      OwnParavirtDevice: implements supportsFamily: itself
 *   lacking  LackingDevice: has no maxThreadgroupMemoryLength
 *   plain    PlainDevice: not an _MTLDevice (no -initGPUFamilySupport); only the factory sees it
 *   wrapper  WrapperDevice: not an _MTLDevice; implements the queries by asking the
 *            AppleParavirtDevice it wraps (as debug and capture layers do)
 *   forwarding ForwardingDevice: not an _MTLDevice; hands every message it lacks to the device
 *            it wraps through -forwardingTargetForSelector:
 *   sized    SizedDevice: an _MTLDevice whose recommendedMaxWorkingSetSize is its own, the n-th
 *            device made taking the n-th of FAKEMETAL_WORKING_SETS (comma-separated; the last
 *            repeats): devices of one class that answer differently, each made in the same
 *            memory, as malloc may place a new device at the address of a freed one */
#include <objc/Object.h>
#include <objc/message.h>
#include <objc/runtime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

@interface _MTLDevice : Object {
    int familyReady;
    BOOL apple7AtInit;
}
- (id)init;
- (void)initGPUFamilySupport;
- (BOOL)apple7AtInit;
- (BOOL)supportsFamily:(long)family;
- (unsigned long)maxThreadgroupMemoryLength;
- (unsigned long long)recommendedMaxWorkingSetSize;
- (const char *)name;
@end

@implementation _MTLDevice
- (id)init
{
    [self initGPUFamilySupport]; /* as the real one does when a device is created */
    return self;
}
/* Builds internal state from its own answer, as the real one may: what a hook installed only
 * after this method would miss. */
- (void)initGPUFamilySupport
{
    familyReady = 1;
    apple7AtInit = [self supportsFamily:1007];
}
- (BOOL)apple7AtInit { return apple7AtInit; }
- (BOOL)supportsFamily:(long)family
{
    if (!familyReady)
        return NO;
    return (family >= 1001 && family <= 1005) || family == 2002 || (family >= 3001 && family <= 3003);
}
- (unsigned long)maxThreadgroupMemoryLength { return 32768; }
- (unsigned long long)recommendedMaxWorkingSetSize { return 5010800640ull; }
- (const char *)name { return "Apple Paravirtual device"; }
@end

@interface AppleParavirtDevice : _MTLDevice
@end
@implementation AppleParavirtDevice
@end

@interface OwnParavirtDevice : _MTLDevice
@end
@implementation OwnParavirtDevice
- (BOOL)supportsFamily:(long)family { return family == 1001 || family == 1002 || family == 1003 || family == 1004 || family == 1005 || family == 2002 || family == 3001 || family == 3002 || family == 3003; }
@end

@interface SizedDevice : _MTLDevice {
    unsigned long long workingSet;
}
- (id)initWithWorkingSet:(unsigned long long)ws;
- (unsigned long long)recommendedMaxWorkingSetSize;
@end
@implementation SizedDevice
- (id)initWithWorkingSet:(unsigned long long)ws
{
    workingSet = ws;
    return [self init];
}
- (unsigned long long)recommendedMaxWorkingSetSize { return workingSet; }
@end

/* the n-th value of FAKEMETAL_WORKING_SETS (the last one past its end; 0 without it) */
static unsigned long long nth_working_set(unsigned n)
{
    const char *list = getenv("FAKEMETAL_WORKING_SETS");
    unsigned long long v = 0;
    for (unsigned i = 0; list && *list; i++) {
        char *end;
        v = strtoull(list, &end, 10);
        if (i == n || *end != ',')
            break;
        list = end + 1;
    }
    return v;
}

/* a SizedDevice in the memory the previous one had (it is gone: nothing may use it any more) */
static id sized_in_place(void)
{
    static union {
        long double align;
        unsigned char bytes[256];
    } memory;
    Class cls = objc_getClass("SizedDevice");
    if (class_getInstanceSize(cls) > sizeof memory.bytes)
        abort();
    memset(&memory, 0, sizeof memory);
    id device = (id)(void *)&memory;
    object_setClass(device, cls);
    return device;
}

@interface LackingBase : Object
- (BOOL)supportsFamily:(long)family;
- (unsigned long long)recommendedMaxWorkingSetSize;
@end
@implementation LackingBase
- (BOOL)supportsFamily:(long)family { return family >= 1001 && family <= 1005; }
- (unsigned long long)recommendedMaxWorkingSetSize { return 5010800640ull; }
@end
@interface LackingDevice : LackingBase
@end
@implementation LackingDevice
@end

@interface PlainDevice : Object
- (BOOL)supportsFamily:(long)family;
- (unsigned long)maxThreadgroupMemoryLength;
- (unsigned long long)recommendedMaxWorkingSetSize;
@end
@implementation PlainDevice
- (BOOL)supportsFamily:(long)family { return (family >= 1001 && family <= 1005) || family == 2002 || (family >= 3001 && family <= 3003); }
- (unsigned long)maxThreadgroupMemoryLength { return 32768; }
- (unsigned long long)recommendedMaxWorkingSetSize { return 5010800640ull; }
@end

@interface WrapperDevice : Object {
    id inner;
}
- (id)initWithDevice:(id)device;
- (BOOL)supportsFamily:(long)family;
- (unsigned long)maxThreadgroupMemoryLength;
- (unsigned long long)recommendedMaxWorkingSetSize;
@end
@implementation WrapperDevice
- (id)initWithDevice:(id)device
{
    inner = device;
    return self;
}
- (BOOL)supportsFamily:(long)family { return [inner supportsFamily:family]; }
- (unsigned long)maxThreadgroupMemoryLength { return [inner maxThreadgroupMemoryLength]; }
- (unsigned long long)recommendedMaxWorkingSetSize { return [inner recommendedMaxWorkingSetSize]; }
@end

@interface ForwardingDevice : Object {
    id inner;
}
- (id)initWithDevice:(id)device;
- (id)forwardingTargetForSelector:(SEL)sel;
@end
@implementation ForwardingDevice
- (id)initWithDevice:(id)device
{
    inner = device;
    return self;
}
- (id)forwardingTargetForSelector:(SEL)sel
{
    (void)sel;
    return inner;
}
@end

/* The GNU runtime has no -forwardingTargetForSelector: of its own; like GNUstep, the rig adds
 * it through the runtime's forwarding hook, with one trampoline per query type that sends the
 * message on to the target (as objc_msgSend does on Apple's runtime). */
typedef BOOL (*family_fn)(id, SEL, long);
typedef unsigned long (*ulong_fn)(id, SEL);

static id forward_target(id self, SEL sel)
{
    SEL fwd = sel_registerName("forwardingTargetForSelector:");
    return ((id(*)(id, SEL, SEL))(void (*)(void))objc_msg_lookup(self, fwd))(self, fwd, sel);
}
static BOOL forward_family(id self, SEL sel, long family)
{
    id t = forward_target(self, sel);
    return ((family_fn)(void (*)(void))objc_msg_lookup(t, sel))(t, sel, family);
}
static unsigned long forward_ulong(id self, SEL sel)
{
    id t = forward_target(self, sel);
    return ((ulong_fn)(void (*)(void))objc_msg_lookup(t, sel))(t, sel);
}
static IMP forward_hook(id rcv, SEL sel)
{
    if (!class_getInstanceMethod(object_getClass(rcv), sel_registerName("forwardingTargetForSelector:")))
        return NULL;
    const char *name = sel_getName(sel);
    if (strcmp(name, "supportsFamily:") == 0)
        return (IMP)(void (*)(void))forward_family;
    if (strcmp(name, "maxThreadgroupMemoryLength") == 0 || strcmp(name, "recommendedMaxWorkingSetSize") == 0)
        return (IMP)(void (*)(void))forward_ulong;
    return NULL;
}
__attribute__((constructor)) static void install_forwarding(void)
{
    __objc_msg_forward2 = forward_hook;
}

/* Device creation messages the new device's class (-init, -initGPUFamilySupport), and that is
 * where the library adds its methods to a class that inherits them. The GNU runtime cannot
 * take both at once: class_addMethod rebuilds the class's dispatch table and frees the old
 * one while another thread's objc_msg_lookup may still read it (libobjc sendmsg.c,
 * __objc_update_dispatch_table_for_class; sarray.c, sarray_free; tests/rig/dtable_race.m shows
 * it without vzcaps). Apple's runtime retires method caches only once no thread can still be
 * reading them (docs/safety.md, "The GNU runtime's dispatch tables"), so this stand-in creates
 * one device at a time, as the GNU runtime requires; the library's own install still races
 * every other thread's queries and, for PlainDevice (created without a message), other
 * threads' installs. */
static pthread_mutex_t creating = PTHREAD_MUTEX_INITIALIZER;
static id create_default(void);

id MTLCreateSystemDefaultDevice(void);
id MTLCreateSystemDefaultDevice(void)
{
    pthread_mutex_lock(&creating);
    id device = create_default();
    pthread_mutex_unlock(&creating);
    return device;
}

static id create_default(void)
{
    const char *variant = getenv("FAKEMETAL_CLASS");
    Class cls = objc_getClass("AppleParavirtDevice");
    static unsigned n_sized;
    if (variant && strcmp(variant, "own") == 0)
        cls = objc_getClass("OwnParavirtDevice");
    else if (variant && strcmp(variant, "sized") == 0)
        return [sized_in_place() initWithWorkingSet:nth_working_set(n_sized++)];
    else if (variant && strcmp(variant, "plain") == 0)
        return class_createInstance(objc_getClass("PlainDevice"), 0);
    else if (variant && strcmp(variant, "lacking") == 0)
        return class_createInstance(objc_getClass("LackingDevice"), 0);
    else if (variant && strcmp(variant, "lacking-long") == 0) {
        /* a subclass of LackingDevice with a 307-byte name, made at run time */
        char name[308] = "Lacking";
        memset(name + 7, 'X', 300);
        Class long_cls = objc_getClass(name);
        if (!long_cls) {
            long_cls = objc_allocateClassPair(objc_getClass("LackingDevice"), name, 0);
            objc_registerClassPair(long_cls);
        }
        return class_createInstance(long_cls, 0);
    }
    else if (variant && (strcmp(variant, "wrapper") == 0 || strcmp(variant, "forwarding") == 0)) {
        id inner = [class_createInstance(cls, 0) init];
        Class w = objc_getClass(strcmp(variant, "wrapper") == 0 ? "WrapperDevice" : "ForwardingDevice");
        return [class_createInstance(w, 0) initWithDevice:inner];
    }
    return [class_createInstance(cls, 0) init];
}
