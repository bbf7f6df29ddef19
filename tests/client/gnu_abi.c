/* Lets code compiled by clang for GNUstep runtime 1.5's ABI load into gcc's libobjc, linked
 * into libggml-metal.so only. clang's gcc ABI cannot compile ggml-metal-device.m: on that
 * (fragile) runtime `obj[key]` is pointer arithmetic by the language's rule, so `dict[key]` is
 * an error. GNUstep 1.5's ABI is gcc's module format with two differences, both met here:
 * the module says version 9 (gcc's runtime wants 8), and a message send asks
 * objc_msg_lookup_sender for a slot instead of objc_msg_lookup for the method. Test rig only;
 * never: changes anything but the version word of a module this library itself holds. */
#include <objc/message.h>
#include <objc/runtime.h>

struct gnu_module {
    unsigned long version;
    unsigned long size;
    const char *name;
    void *symtab;
};

/* the GNUstep runtime's slot: three pointers and an int before the method */
struct gnu_slot {
    void *owner, *cached_for;
    const char *types;
    int version;
    IMP method;
};

__attribute__((visibility("hidden"))) struct gnu_slot *objc_msg_lookup_sender(id *receiver, SEL sel, id sender);
struct gnu_slot *objc_msg_lookup_sender(id *receiver, SEL sel, id sender)
{
    static __thread struct gnu_slot slot;
    (void)sender;
    slot.method = objc_msg_lookup(*receiver, sel);
    return &slot;
}

/* -Wl,--wrap=__objc_exec_class sends this library's module registrations here first; the real
 * __objc_exec_class is whatever the process binds (libobjc's, or a preloaded library's). */
void __real___objc_exec_class(struct gnu_module *module);
__attribute__((visibility("hidden"))) void __wrap___objc_exec_class(struct gnu_module *module);
void __wrap___objc_exec_class(struct gnu_module *module)
{
    if (module->version == 9 && module->size == sizeof *module)
        module->version = 8;
    __real___objc_exec_class(module);
}
