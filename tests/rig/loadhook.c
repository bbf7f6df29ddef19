/* Another user of the GNU runtime's _objc_load_callback (objc/runtime.h), preloaded beside
 * vzcaps on the rig: counts the classes the runtime loads and calls whatever callback was set
 * before it; prints "loadhook: N classes" at exit. Test rig only. */
#include <objc/runtime.h>
#include <stdio.h>

static void (*earlier)(Class, struct objc_category *);
static int loaded;

static void counted(Class cls, struct objc_category *category)
{
    loaded++;
    if (earlier)
        earlier(cls, category);
}

__attribute__((constructor)) static void set_up(void)
{
    earlier = _objc_load_callback;
    _objc_load_callback = counted;
}

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "loadhook: %d classes\n", loaded);
}
