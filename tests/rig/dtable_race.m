/* The GNU Objective-C runtime's dispatch-table update under concurrent messaging, without
 * vzcaps: worker threads message an object of class Leaf while the main thread changes Leaf.
 * Test rig only (docs/safety.md, "The GNU runtime's dispatch tables").
 * dtable_race add: class_addMethod on Leaf (what the library does for an inherited method):
 *          the runtime rebuilds Leaf's dispatch table and frees the old one under the readers;
 *          some runs die in objc_msg_lookup (SIGSEGV)
 * dtable_race set: method_setImplementation of a method Leaf inherits: updated in place,
 *          never freed under a reader; no run dies
 * Prints "ok" and exits 0 when it survives. */
#include <objc/Object.h>
#include <objc/runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

@interface Base : Object
- (long)value;
@end
@implementation Base
- (long)value { return 1; }
@end
@interface Leaf : Base
@end
@implementation Leaf
@end

typedef long (*value_fn)(id, SEL);
static long other_value(id self, SEL cmd)
{
    (void)self, (void)cmd;
    return 1;
}

enum { WORKERS = 8, CHANGES = 256 };
static pthread_barrier_t go;
static volatile int stop;

static void *worker(void *arg)
{
    id obj = arg;
    SEL sel = sel_registerName("value");
    long sum = 0;
    pthread_barrier_wait(&go);
    while (!stop)
        sum += ((value_fn)(void (*)(void))objc_msg_lookup(obj, sel))(obj, sel);
    return sum > 0 ? NULL : arg;
}

int main(int argc, char **argv)
{
    int add = argc == 2 && strcmp(argv[1], "add") == 0;
    if (!add && !(argc == 2 && strcmp(argv[1], "set") == 0)) {
        fprintf(stderr, "usage: dtable_race add|set\n");
        return 2;
    }
    Class leaf = objc_getClass("Leaf");
    id obj = class_createInstance(leaf, 0);
    SEL sel = sel_registerName("value");
    ((value_fn)(void (*)(void))objc_msg_lookup(obj, sel))(obj, sel); /* Leaf's table is installed */
    Method base = class_getInstanceMethod(objc_getClass("Base"), sel);
    const char *types = method_getTypeEncoding(base);
    IMP original = method_getImplementation(base);
    pthread_t t[WORKERS];
    pthread_barrier_init(&go, NULL, WORKERS + 1);
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, obj);
    pthread_barrier_wait(&go);
    for (int i = 0; i < CHANGES; i++) {
        if (add) {
            char name[32];
            snprintf(name, sizeof name, "extra%d", i);
            class_addMethod(leaf, sel_registerName(name), (IMP)(void (*)(void))other_value, types);
        } else {
            method_setImplementation(base, i % 2 ? original : (IMP)(void (*)(void))other_value);
        }
    }
    stop = 1;
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    printf("ok\n");
    return 0;
}
