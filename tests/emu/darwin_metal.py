"""The Metal stand-in: the rig's device classes (tests/rig/fakemetal.m) on objc4's model
(darwin_objc.py), their stock answers, and MTLCreateSystemDefaultDevice and MTLCopyAllDevices;
installed by darwin.Darwin last."""
STOCK = {f: (1001 <= f <= 1005) or f == 2002 or 3001 <= f <= 3003 for f in
         (1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002)}


class Metal:
    """The Metal stand-in, the rig's device classes (tests/rig/fakemetal.m) on objc4's model:
    _MTLDevice's -init runs -initGPUFamilySupport, which builds apple7AtInit from its own
    supportsFamily: answer; AppleParavirtDevice inherits everything; OwnParavirtDevice
    implements supportsFamily: itself; LackingDevice has no maxThreadgroupMemoryLength;
    PlainDevice is no _MTLDevice; WrapperDevice asks the AppleParavirtDevice it wraps; a subclass of AppleParavirtDevice made at run time
    (FAKEMETAL_CLASS=sub, a client's own device subclass)."""

    def __init__(self, d):
        self.d = d
        rt = d.objc
        rt.add_class("NSObject")
        rt.add_class("_MTLDevice", "NSObject")
        for name, sup in (("AppleParavirtDevice", "_MTLDevice"), ("OwnParavirtDevice", "_MTLDevice"),
                          ("LackingBase", "NSObject"), ("LackingDevice", "LackingBase"), ("PlainDevice", "NSObject"),
                          ("SubParavirtDevice", "AppleParavirtDevice")):
            rt.add_class(name, sup)
        C = rt.classes

        def state(obj):
            return rt.objects.setdefault(obj, {})

        def init(m, obj, sel, *_):
            rt.send(obj, "initGPUFamilySupport", image="Metal")
            return obj

        def init_family(m, obj, sel, *_):
            state(obj)["ready"] = True
            state(obj)["apple7"] = rt.send(obj, "supportsFamily:", 1007, image="Metal") & 0xFF
            return None

        def supports(m, obj, sel, fam, *_):
            return 1 if state(obj).get("ready") and STOCK.get(fam if fam < 2**63 else fam - 2**64, False) else 0

        def supports_always(m, obj, sel, fam, *_):
            return 1 if STOCK.get(fam, False) else 0
        rt.add_py_method(C["_MTLDevice"], "init", init, "@16@0:8")
        rt.add_py_method(C["_MTLDevice"], "initGPUFamilySupport", init_family, "v16@0:8")
        rt.add_py_method(C["_MTLDevice"], "apple7AtInit", lambda m, o, s, *_: state(o).get("apple7", 0), "c16@0:8")
        rt.add_py_method(C["_MTLDevice"], "supportsFamily:", supports, "c24@0:8q16")
        rt.add_py_method(C["_MTLDevice"], "maxThreadgroupMemoryLength", lambda m, *_: 32768, "Q16@0:8")
        rt.add_py_method(C["_MTLDevice"], "recommendedMaxWorkingSetSize", lambda m, *_: 5010800640, "Q16@0:8")
        rt.add_py_method(C["OwnParavirtDevice"], "supportsFamily:", supports_always, "c24@0:8q16")
        rt.add_py_method(C["LackingBase"], "supportsFamily:", lambda m, o, s, f, *_: 1 if 1001 <= f <= 1005 else 0, "c24@0:8q16")
        rt.add_py_method(C["LackingBase"], "recommendedMaxWorkingSetSize", lambda m, *_: 5010800640, "Q16@0:8")
        rt.add_py_method(C["PlainDevice"], "supportsFamily:", supports_always, "c24@0:8q16")
        rt.add_py_method(C["PlainDevice"], "maxThreadgroupMemoryLength", lambda m, *_: 32768, "Q16@0:8")
        rt.add_py_method(C["PlainDevice"], "recommendedMaxWorkingSetSize", lambda m, *_: 5010800640, "Q16@0:8")
        # WrapperDevice: no _MTLDevice; answers by asking the device it wraps, from its own image
        # (as debug and capture layers do)
        rt.add_class("WrapperDevice", "NSObject")
        for sel, types in (("supportsFamily:", "c24@0:8q16"), ("maxThreadgroupMemoryLength", "Q16@0:8"),
                           ("recommendedMaxWorkingSetSize", "Q16@0:8")):
            rt.add_py_method(C["WrapperDevice"], sel,
                             lambda m, o, s, *a, sel=sel: rt.send(state(o)["inner"], sel, *a[:1 if sel.endswith(":") else 0],
                                                                  image="Metal"), types)
        # NSArray, for MTLCopyAllDevices (Foundation: -count, -objectAtIndex:)
        rt.add_class("NSArray", "NSObject")
        rt.add_py_method(C["NSArray"], "count", lambda m, o, s, *_: len(state(o)["items"]), "Q16@0:8")
        rt.add_py_method(C["NSArray"], "objectAtIndex:", lambda m, o, s, i, *_: state(o)["items"][i], "@24@0:8Q16")
        for c in C.values():  # the device classes' code lies in Metal's image (dladdr), as the rig's in libfakemetal.so
            rt.m.slot_image.update((meth.imp, "Metal") for meth in c.methods.values())

    def create(self):
        """MTLCreateSystemDefaultDevice: a new device of the FAKEMETAL_CLASS variant, as the rig's."""
        rt, variant = self.d.objc, self.d.env.get("FAKEMETAL_CLASS")
        cls = {"own": "OwnParavirtDevice", "plain": "PlainDevice", "lacking": "LackingDevice",
               "sub": "SubParavirtDevice"}.get(variant, "AppleParavirtDevice")
        if variant == "wrapper":
            inner = rt.send(rt.new("AppleParavirtDevice"), "init", image="Metal")
            w = rt.new("WrapperDevice")
            rt.objects[w]["inner"] = inner
            return w
        obj = rt.new(cls)
        if cls in ("PlainDevice", "LackingDevice"):
            return obj  # created without a message, as the rig's class_createInstance
        return rt.send(obj, "init", image="Metal")

    def install(self, d):
        d.standin("_MTLCreateSystemDefaultDevice", lambda m, *_: self.create())

        def copy_all(m, *_):
            arr = d.objc.new("NSArray")
            d.objc.objects[arr]["items"] = [self.create()]
            return arr
        d.standin("_MTLCopyAllDevices", copy_all)
        d.standin("_MTLCopyAllDevicesWithObserver", copy_all)
