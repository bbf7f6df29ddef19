/* Stand-in for Metal.framework on the GNU Objective-C runtime: a factory and a device class
 * hierarchy shaped like the paravirtual one (METAL-FACTS: "The problem"), with the stock
 * answers a guest gives. Test rig only. FAKEMETAL_CLASS picks a variant class:
 *   (unset)  AppleParavirtDevice: every method inherited from _MTLDevice
 *   own      OwnParavirtDevice: implements supportsFamily: itself
 *   lacking  LackingDevice: has no maxThreadgroupMemoryLength */
#include <objc/Object.h>
#include <objc/runtime.h>
#include <stdlib.h>
#include <string.h>

@interface _MTLDevice : Object {
    int familyReady;
}
- (id)init;
- (void)initGPUFamilySupport;
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
- (void)initGPUFamilySupport { familyReady = 1; }
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

id MTLCreateSystemDefaultDevice(void);
id MTLCreateSystemDefaultDevice(void)
{
    const char *variant = getenv("FAKEMETAL_CLASS");
    Class cls = objc_getClass("AppleParavirtDevice");
    if (variant && strcmp(variant, "own") == 0)
        cls = objc_getClass("OwnParavirtDevice");
    else if (variant && strcmp(variant, "lacking") == 0)
        return class_createInstance(objc_getClass("LackingDevice"), 0);
    return [class_createInstance(cls, 0) init];
}
