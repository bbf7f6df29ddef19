/* A Metal client library for the caller-scope tests: asks the device from its own code, so
 * the call site lies in this image. Built three times under different names
 * (libggml-metal.so, libtorch_cpu.so, libother-client.so), with ASK naming the function.
 * Test rig only. */
#include <objc/Object.h>
#include <objc/runtime.h>

typedef BOOL (*family_fn)(id, SEL, long);
typedef unsigned long (*ulong_fn)(id, SEL);

/* supportsFamily: f, then maxThreadgroupMemoryLength and recommendedMaxWorkingSetSize */
void ASK(id dev, long f, int *family, unsigned long *tg, unsigned long *ws);
void ASK(id dev, long f, int *family, unsigned long *tg, unsigned long *ws)
{
    SEL sf = sel_registerName("supportsFamily:");
    SEL st = sel_registerName("maxThreadgroupMemoryLength");
    SEL sw = sel_registerName("recommendedMaxWorkingSetSize");
    *family = ((family_fn)(void (*)(void))objc_msg_lookup(dev, sf))(dev, sf, f) ? 1 : 0;
    *tg = ((ulong_fn)(void (*)(void))objc_msg_lookup(dev, st))(dev, st);
    *ws = ((ulong_fn)(void (*)(void))objc_msg_lookup(dev, sw))(dev, sw);
}
