"""objc4's runtime as the library uses it (objc4: runtime/objc-runtime-new.mm, objc-class.mm;
message dispatch: runtime/Messengers.subproj/objc-msg-arm64.s): classes and metaclasses realized
from an image's class list, methods, selectors, message sends, and its stand-ins, installed by
darwin.Darwin after libSystem's."""
from machoemu import GuestFault, Jump

class ObjcClass:
    is_meta = False

    def __init__(self, rt, name, sup):
        self.name, self.sup, self.methods = name, sup, {}
        self.addr = rt.m.alloc(64, 16)
        self.name_addr = rt.m.new_cstr(name)
        rt.m.put64(self.addr, 0)


class Method:
    def __init__(self, rt, sel, imp, types):
        self.sel, self.imp, self.types = sel, imp, types
        self.addr = rt.m.alloc(24, 8)
        self.types_addr = rt.m.new_cstr(types)


class Objc:
    """objc4's runtime semantics for what the library uses (objc4: runtime/objc-runtime-new.mm,
    objc-class.mm; message dispatch: runtime/Messengers.subproj/objc-msg-arm64.s)."""

    def __init__(self, m):
        self.m = m
        self.classes, self.by_addr, self.methods, self.sels, self.sel_names = {}, {}, {}, {}, {}
        self.objects = {}

    def sel(self, name):
        if name not in self.sels:
            a = self.m.new_cstr(name)
            self.sels[name], self.sel_names[a] = a, name
        return self.sels[name]

    def add_class(self, name, sup=None):
        """A class and its metaclass (objc4: objc_allocateClassPair): the class's isa is its
        metaclass, whose superclass is the superclass's metaclass, or for a root class the
        class itself; every metaclass's isa is the root's metaclass."""
        c = ObjcClass(self, name, self.classes[sup] if sup else None)
        meta = ObjcClass(self, name, c.sup.meta if c.sup else c)
        meta.is_meta, c.meta = True, meta
        root = c
        while root.sup:
            root = root.sup
        self.m.put64(c.addr, meta.addr)
        self.m.put64(meta.addr, root.meta.addr)
        self.classes[name], self.by_addr[c.addr], self.by_addr[meta.addr] = c, c, meta
        return c

    def realize_classes(self, li):
        """The image's own classes (__objc_classlist: pointers to objc_class {isa, superclass,
        cache, vtable, bits}; bits & ~7 is the class_ro_t, whose name is at offset 24;
        objc-runtime-new.mm: realizeClassWithoutSwift): each becomes a class of this runtime at
        its own address, with the superclass its binding names, so that messages to it dispatch."""
        sec = li.section("__DATA_CONST", "__objc_classlist") or li.section("__DATA", "__objc_classlist")
        for i in range(sec.size // 8 if sec else 0):
            at = self.m.u64(li.base + sec.virtual_address + 8 * i)
            ro = self.m.u64(at + 32) & ~7
            name = self.m.cstr(self.m.u64(ro + 24)).decode()
            sup = self.by_addr.get(self.m.u64(at + 8))
            c = ObjcClass(self, name, sup)
            c.addr = at
            meta = ObjcClass(self, name, sup.meta if sup else c)
            meta.is_meta, c.meta = True, meta
            self.classes[name], self.by_addr[at], self.by_addr[meta.addr] = c, c, meta
            root = c
            while root.sup:
                root = root.sup
            self.m.put64(meta.addr, root.meta.addr)
            self.m.put64(at, meta.addr)

    def map_images(self, li):
        """objc4's map_images for a loaded image (objc-runtime-new.mm: _read_images): each
        __objc_selrefs entry becomes the process's one selector for its name, the image's own
        string when the name is new (sel_registerNameNoLock without copying)."""
        self.realize_classes(li)
        sec = li.section("__DATA", "__objc_selrefs") or li.section("__DATA_CONST", "__objc_selrefs")
        if not sec:
            return 0
        for i in range(sec.size // 8):
            at = li.base + sec.virtual_address + 8 * i
            p = self.m.u64(at)
            name = self.m.cstr(p).decode()
            if name not in self.sels:
                self.sels[name], self.sel_names[p] = p, name
            self.m.put64(at, self.sels[name])
        return sec.size // 8

    def add_py_method(self, cls, sel, fn, types):
        imp = self.m.slot(f"-[{cls.name} {sel}]", fn)
        self._method(cls, sel, imp, types)

    def _method(self, cls, sel, imp, types):
        meth = Method(self, sel, imp, types)
        cls.methods[sel] = meth
        self.methods[meth.addr] = meth
        return meth

    def new(self, cls_name):
        a = self.m.alloc(32, 16)
        self.m.put64(a, self.classes[cls_name].addr)
        self.objects[a] = {}
        return a

    def class_of(self, obj):
        return self.by_addr.get(self.m.u64(obj)) if obj else None

    def lookup(self, cls, sel):
        """class_getInstanceMethod: the class, then each superclass (objc-runtime-new.mm:
        getMethodNoSuper_nolock up the superclass chain)."""
        while cls:
            if sel in cls.methods:
                return cls.methods[sel]
            cls = cls.sup
        return None

    def send(self, obj, sel, *args, image, site=0):
        meth = self.lookup(self.class_of(obj), sel)
        if not meth:
            raise GuestFault(f"-[{self.class_of(obj).name} {sel}]: unrecognized selector")
        return self.m.call(meth.imp, obj, self.sel(sel), *args, image=image, site=site)

    def install(self, d):
        m, S = self.m, d.standin

        def cls_arg(a):
            return self.by_addr.get(a)

        S("_objc_getClass", lambda m, name, *_: self.classes[n].addr if (n := m.cstr(name).decode()) in self.classes else 0)
        S("_object_getClass", lambda m, obj, *_: m.u64(obj) if obj else 0)
        S("_class_getSuperclass", lambda m, c, *_: cls_arg(c).sup.addr if cls_arg(c) and cls_arg(c).sup else 0)
        S("_class_getName", lambda m, c, *_: cls_arg(c).name_addr if cls_arg(c) else m.new_cstr("nil"))
        S("_sel_registerName", lambda m, name, *_: self.sel(m.cstr(name).decode()))

        def get_method(m, c, sel, *_):
            meth = self.lookup(cls_arg(c), self.sel_names[sel])
            return meth.addr if meth else 0
        S("_class_getInstanceMethod", get_method)
        S("_method_getImplementation", lambda m, meth, *_: self.methods[meth].imp if meth else 0)
        S("_method_getTypeEncoding", lambda m, meth, *_: self.methods[meth].types_addr if meth else 0)

        def set_imp(m, meth, imp, *_):
            """method_setImplementation returns the previous IMP (objc-runtime-new.mm: _method_setImplementation)."""
            if not meth:
                return 0
            rec = self.methods[meth]
            old, rec.imp = rec.imp, imp
            d.objc_log.append(("set", rec.sel, imp))
            return old
        S("_method_setImplementation", set_imp)

        def add_method(m, c, sel, imp, types, *_):
            """class_addMethod fails (NO) when the class itself has the selector, not when only a
            superclass does (objc-runtime-new.mm: addMethod with replace=NO)."""
            cls, name = cls_arg(c), self.sel_names[sel]
            if d.fail_add_method or name in cls.methods:
                return 0
            self._method(cls, name, imp, m.cstr(types).decode() if types else "")
            d.objc_log.append(("add", cls.name, name))
            return 1
        S("_class_addMethod", add_method)

        def replace_method(m, c, sel, imp, types, *_):
            """class_replaceMethod: the class's own method gets imp and its old IMP is returned;
            one only inherited is added to the class, and nil returned (objc-runtime-new.mm:
            addMethod with replace=YES, getMethodNoSuper_nolock)."""
            cls, name = cls_arg(c), self.sel_names[sel]
            if name not in cls.methods:
                self._method(cls, name, imp, m.cstr(types).decode() if types else "")
                d.objc_log.append(("add", cls.name, name))
                return 0
            return set_imp(m, cls.methods[name].addr, imp)
        S("_class_replaceMethod", replace_method)

        def msg_send(m, obj, sel, *_):
            """objc_msgSend: nil receivers answer 0; otherwise the IMP of the receiver's class
            (its isa), found up the superclass chain, is jumped to with every argument register
            as it was (objc-msg-arm64.s: _objc_msgSend, CacheLookup, __objc_msgSend_uncached)."""
            if not obj:
                return 0
            cls = self.class_of(obj)
            name = self.sel_names.get(sel)
            meth = self.lookup(cls, name)
            if not meth:
                raise GuestFault(f"-[{cls.name if cls else '?'} {name}]: unrecognized selector")
            return Jump(meth.imp)
        S("_objc_msgSend", msg_send)
