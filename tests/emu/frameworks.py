"""The rest of Darwin that real Metal clients touch on their way to the device's families, for
tests/emu/clients.py: the blocks runtime, libdispatch, libc++ and libc++abi pieces, more of
Libc, Foundation's classes and the Metal objects a ggml device start-up creates. Installed into a
Darwin (darwin.py) by `install(d)`; each stand-in names the Apple source (or documented
behaviour) it follows. What they do is the smallest honest part: a block runs when libdispatch
would have run it, a string is its bytes, a compile succeeds or fails as the case says; no GPU
work is modelled.
"""
import re

import libcxx
from machoemu import GuestFault

# libclosure: Block_private.h
BLOCK_HAS_COPY_DISPOSE = 1 << 25
# Foundation: NSStringEncoding
NSUTF8StringEncoding, NSASCIIStringEncoding = 4, 1


class Frameworks:
    def __init__(self, d):
        self.d, self.m, self.rt = d, d.m, d.objc
        self.compiles = []          # (source length, {macro: value}) of each newLibraryWithSource:
        self.fail_compile = False   # newLibraryWithSource: answers nil and an NSError
        self.device_name = "Apple Paravirtual device"
        self.atexit, self.sem = [], {}
        self.blocks_run = 0
        self.setenvs, self.never_run = [], []

    # ---- objects ----
    def new(self, cls, **state):
        o = self.rt.new(cls)
        self.rt.objects[o].update(state)
        return o

    def st(self, o):
        return self.rt.objects.setdefault(o, {})

    def nsstring(self, s):
        b = s.encode() if isinstance(s, str) else bytes(s)
        return self.new("NSString", s=b, c=self.m.new_cstr(b))

    def text(self, o):
        """An NSString's bytes: one this module made, or a constant string the compiler laid
        out (CoreFoundation: CFString's __CFConstStr {isa, flags, cstr, length})."""
        if not o:
            return None
        st = self.rt.objects.get(o)
        if st is not None and "s" in st:
            return st["s"]
        return self.m.read(self.m.u64(o + 16), self.m.u64(o + 24))

    def cstr_of(self, o):
        st = self.rt.objects.get(o)
        if st is not None and "c" in st:
            return st["c"]
        if st is None or "s" not in st:
            return self.m.u64(o + 16)  # a constant string's bytes end with NUL
        st["c"] = self.m.new_cstr(st["s"])
        return st["c"]

    def call_block(self, blk, *args):
        """Invokes a block: its invoke pointer at offset 16 with the block first (libclosure:
        Block_layout)."""
        self.blocks_run += 1
        return self.m.call(self.m.u64(blk + 16), blk, *args, image="libdispatch")

    # ---- installation ----
    def install(self):
        self.classes()
        self.objc_entry_points()
        self.blocks_and_dispatch()
        self.cxx()
        self.libc()

    def classes(self):
        rt, d = self.rt, self.d
        for name, sup in (("NSString", "NSObject"), ("__NSCFConstantString", "NSString"), ("NSMutableDictionary", "NSObject"),
                          ("NSMutableArray", "NSObject"), ("NSNumber", "NSObject"), ("NSLock", "NSObject"),
                          ("NSURL", "NSObject"), ("NSError", "NSObject"), ("NSBlock", "NSObject"),
                          ("__NSGlobalBlock__", "NSBlock"), ("__NSStackBlock__", "NSBlock"), ("__NSMallocBlock__", "NSBlock"),
                          ("MTLCompileOptions", "NSObject"), ("MTLFunctionConstantValues", "NSObject"),
                          ("MTLResidencySetDescriptor", "NSObject"), ("MTLCaptureManager", "NSObject"),
                          ("MTLCaptureDescriptor", "NSObject"), ("MTLCommandQueue", "NSObject"), ("MTLLibrary", "NSObject"),
                          ("MTLResidencySet", "NSObject"), ("MTLFunction", "NSObject"), ("MTLBuffer", "NSObject")):
            if name not in rt.classes:
                rt.add_class(name, sup)
        C, S, m = rt.classes, self.st, self.m

        def meth(cls, sel, fn, types="@16@0:8"):
            rt.add_py_method(C[cls], sel, fn, types)

        def cmeth(cls, sel, fn, types="@16@0:8"):
            rt.add_py_method(C[cls].meta, sel, fn, types)
        # NSObject (objc4: NSObject.mm): +alloc, +new, -init, retain counting as identity
        cmeth("NSObject", "alloc", lambda m, c, s, *_: self.alloc(c))
        cmeth("NSObject", "new", lambda m, c, s, *_: rt.send(self.alloc(c), "init", image="libobjc"))
        meth("NSObject", "init", lambda m, o, s, *_: o)
        cmeth("NSObject", "class", lambda m, c, s, *_: c)
        meth("NSObject", "class", lambda m, o, s, *_: m.u64(o))
        for sel in ("retain", "autorelease"):
            meth("NSObject", sel, lambda m, o, s, *_: o)
        meth("NSObject", "release", lambda m, o, s, *_: None, "v16@0:8")
        # NSString (Foundation, documented): UTF-8 bytes in, UTF-8 bytes out
        cmeth("NSString", "stringWithUTF8String:", lambda m, c, s, p, *_: self.nsstring(m.cstr(p)) if p else 0)
        cmeth("NSString", "stringWithCString:encoding:", lambda m, c, s, p, e, *_: self.nsstring(m.cstr(p)) if p else 0)
        meth("NSString", "initWithBytes:length:encoding:",
             lambda m, o, s, p, n, e, *_: (S(o).update(s=m.read(p, n)), o)[1])
        meth("NSString", "UTF8String", lambda m, o, s, *_: self.cstr_of(o))
        meth("NSString", "length", lambda m, o, s, *_: len(self.text(o)), "Q16@0:8")
        meth("NSString", "containsString:", lambda m, o, s, x, *_: int(self.text(x) in self.text(o)), "c24@0:8@16")
        meth("NSString", "description", lambda m, o, s, *_: o)
        # the collections (Foundation, documented): keys compared by their string value
        cmeth("NSMutableDictionary", "dictionary", lambda m, c, s, *_: self.new("NSMutableDictionary", d={}))
        meth("NSMutableDictionary", "init", lambda m, o, s, *_: (S(o).setdefault("d", {}), o)[1])

        def key(k):
            return ("s", self.text(k)) if self.is_string(k) else ("o", k)
        for sel in ("setObject:forKey:", "setObject:forKeyedSubscript:"):
            meth("NSMutableDictionary", sel, lambda m, o, s, v, k, *_: S(o).setdefault("d", {}).__setitem__(key(k), v), "v32@0:8@16@24")
        for sel in ("objectForKey:", "objectForKeyedSubscript:"):
            meth("NSMutableDictionary", sel, lambda m, o, s, k, *_: S(o).setdefault("d", {}).get(key(k), 0))
        meth("NSMutableDictionary", "count", lambda m, o, s, *_: len(S(o).setdefault("d", {})), "Q16@0:8")
        cmeth("NSMutableArray", "array", lambda m, c, s, *_: self.new("NSMutableArray", items=[]))
        meth("NSMutableArray", "init", lambda m, o, s, *_: (S(o).setdefault("items", []), o)[1])
        meth("NSMutableArray", "addObject:", lambda m, o, s, x, *_: S(o).setdefault("items", []).append(x), "v24@0:8@16")
        meth("NSMutableArray", "removeObject:", lambda m, o, s, x, *_: S(o).__setitem__("items", [i for i in S(o).get("items", []) if i != x]), "v24@0:8@16")
        meth("NSMutableArray", "removeAllObjects", lambda m, o, s, *_: S(o).__setitem__("items", []), "v16@0:8")
        meth("NSMutableArray", "containsObject:", lambda m, o, s, x, *_: int(x in S(o).get("items", [])), "c24@0:8@16")
        meth("NSMutableArray", "count", lambda m, o, s, *_: len(S(o).get("items", [])), "Q16@0:8")
        for sel in ("objectAtIndex:", "objectAtIndexedSubscript:"):
            meth("NSMutableArray", sel, lambda m, o, s, i, *_: S(o)["items"][i])
        for cls in ("NSMutableArray", "NSArray"):  # NSArray: MTLCopyAllDevices's answer (darwin.Metal)
            meth(cls, "countByEnumeratingWithState:objects:count:", self.enumerate, "Q40@0:8^v16^@24Q32")
        meth("NSArray", "objectAtIndexedSubscript:", lambda m, o, s, i, *_: S(o)["items"][i])
        cmeth("NSNumber", "numberWithInt:", lambda m, c, s, v, *_: self.new("NSNumber", v=v & 0xFFFFFFFF))
        meth("NSNumber", "intValue", lambda m, o, s, *_: S(o).get("v", 0), "i16@0:8")
        meth("NSLock", "lock", lambda m, o, s, *_: None, "v16@0:8")
        meth("NSLock", "unlock", lambda m, o, s, *_: None, "v16@0:8")
        cmeth("NSURL", "fileURLWithPath:", lambda m, c, s, p, *_: self.new("NSURL", path=self.text(p)))
        for sel in ("localizedDescription", "description"):
            meth("NSError", sel, lambda m, o, s, *_: S(o)["desc"])
        meth("NSBlock", "copy", lambda m, o, s, *_: o)
        rt.add_class("NSBundle", "NSObject")
        cmeth("NSBundle", "bundleForClass:", lambda m, c, s, k, *_: self.new("NSBundle"))
        meth("NSBundle", "pathForResource:ofType:", lambda m, o, s, *_: 0)
        # Metal objects a device start-up makes (Metal's documented API, no GPU behind it)
        meth("MTLCompileOptions", "setPreprocessorMacros:", lambda m, o, s, x, *_: S(o).__setitem__("macros", x), "v24@0:8@16")
        meth("MTLCompileOptions", "setLanguageVersion:", lambda m, o, s, x, *_: S(o).__setitem__("lang", x), "v24@0:8Q16")
        for cls in ("MTLResidencySetDescriptor", "MTLCaptureDescriptor", "MTLCommandQueue", "MTLResidencySet", "MTLLibrary",
                    "MTLFunction", "MTLBuffer"):
            for sel in ("setLabel:", "setInitialCapacity:"):
                meth(cls, sel, lambda m, o, s, x, *_, sel=sel: S(o).__setitem__(sel, x), "v24@0:8@16")
        meth("MTLResidencySet", "requestResidency", lambda m, o, s, *_: None, "v16@0:8")
        meth("MTLResidencySet", "addAllocation:", lambda m, o, s, *_: None, "v24@0:8@16")
        meth("MTLResidencySet", "commit", lambda m, o, s, *_: None, "v16@0:8")
        rt.add_class("MTLComputePipelineState", "NSObject")
        meth("MTLComputePipelineState", "maxTotalThreadsPerThreadgroup", lambda m, o, s, *_: 1024, "Q16@0:8")
        meth("MTLComputePipelineState", "threadExecutionWidth", lambda m, o, s, *_: 32, "Q16@0:8")
        meth("MTLBuffer", "contents", lambda m, o, s, *_: S(o)["contents"], "^v16@0:8")
        meth("MTLBuffer", "length", lambda m, o, s, *_: S(o)["length"], "Q16@0:8")
        # command queues, buffers and encoders: made and ended, nothing executes (no GPU)
        for sel in ("commandBuffer", "commandBufferWithUnretainedReferences", "blitCommandEncoder", "computeCommandEncoder",
                    "computeCommandEncoderWithDispatchType:"):
            meth("MTLCommandQueue", sel, lambda m, o, s, *_: self.new("MTLCommandQueue"))
        for sel in ("commit", "enqueue", "waitUntilCompleted", "endEncoding", "fillBuffer:range:value:", "addCompletedHandler:",
                    "encodeSignalEvent:value:", "encodeWaitForEvent:value:", "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:",
                    "setLabel:", "pushDebugGroup:", "popDebugGroup", "memoryBarrierWithScope:"):
            meth("MTLCommandQueue", sel, lambda m, o, s, *_: None, "v16@0:8")
        meth("MTLCommandQueue", "status", lambda m, o, s, *_: 4, "Q16@0:8")  # MTLCommandBufferStatusCompleted
        meth("MTLCommandQueue", "error", lambda m, o, s, *_: 0)
        meth("MTLLibrary", "functionNames", lambda m, o, s, *_: self.new("NSMutableArray", items=[]))
        meth("MTLLibrary", "newFunctionWithName:", lambda m, o, s, n, *_: self.new("MTLFunction", name=self.text(n)))
        self.device_methods()

    def is_string(self, o):
        c = self.rt.class_of(o)
        while c:
            if c.name == "NSString":
                return True
            c = c.sup
        return False

    def alloc(self, cls_addr):
        """+alloc / objc_alloc: an instance of the class (objc4: _objc_rootAllocWithZone)."""
        c = self.rt.by_addr.get(cls_addr)
        if c is None:
            raise GuestFault(f"objc_alloc of {cls_addr:#x}: not a class")
        return self.new(c.name)

    def enumerate(self, m, o, s, state, objs, count, *_):
        """NSFastEnumeration (Foundation, documented; clang's lowering reads state->itemsPtr,
        state->mutationsPtr): everything in one batch, then 0."""
        items = self.st(o).get("items", [])
        if m.u64(state):  # state->state: the batch was given
            return 0
        buf = m.alloc(8 * max(len(items), 1), 8)
        for i, x in enumerate(items):
            m.put64(buf + 8 * i, x)
        mut = m.alloc(8, 8)
        m.put64(state, 1)
        m.put64(state + 8, buf)
        m.put64(state + 16, mut)
        return len(items)

    def device_methods(self):
        """What ggml reads from the device beyond the rig's methods (Metal: MTLDevice)."""
        rt, S = self.rt, self.st
        dev = rt.classes["_MTLDevice"]

        def meth(sel, fn, types="@16@0:8"):
            rt.add_py_method(dev, sel, fn, types)
        meth("name", lambda m, o, s, *_: S(o).setdefault("name", self.nsstring(self.device_name)))
        meth("hasUnifiedMemory", lambda m, o, s, *_: 1, "c16@0:8")
        meth("isLowPower", lambda m, o, s, *_: 0, "c16@0:8")
        meth("maxBufferLength", lambda m, o, s, *_: 4 << 30, "Q16@0:8")
        meth("location", lambda m, o, s, *_: 0, "Q16@0:8")  # MTLDeviceLocationBuiltIn
        meth("newCommandQueue", lambda m, o, s, *_: self.new("MTLCommandQueue"))
        meth("newResidencySetWithDescriptor:error:", lambda m, o, s, *_: self.new("MTLResidencySet"))
        meth("newLibraryWithSource:options:error:", self.new_library, "@40@0:8@16@24^@32")
        meth("newBufferWithLength:options:", lambda m, o, s, n, opt, *_: self.new("MTLBuffer", length=n, contents=m.alloc(min(n, 1 << 20))))
        meth("newSharedEvent", lambda m, o, s, *_: self.new("NSObject"))
        meth("newComputePipelineStateWithFunction:error:", lambda m, o, s, f, err, *_: self.new("MTLComputePipelineState"))

    def new_library(self, m, dev, sel, src, options, err, *_):
        """-[MTLDevice newLibraryWithSource:options:error:]: records the source's size and the
        options' preprocessor macros; nil and an NSError when the case makes compiles fail."""
        macros = {}
        md = self.st(options).get("macros") if options else None
        if md:
            for (kind, k), v in self.st(md).get("d", {}).items():
                macros[k.decode() if kind == "s" else k] = self.text(v).decode() if self.is_string(v) else self.st(v).get("v")
        self.compiles.append((len(self.text(src) or b""), macros))
        if self.fail_compile:
            if err:
                m.put64(err, self.new("NSError", desc=self.nsstring("program_source: error: the case makes compiles fail")))
            return 0
        return self.new("MTLLibrary")

    def objc_entry_points(self):
        S, rt = self.d.standin, self.rt
        # objc4 NSObject.mm: objc_alloc, objc_alloc_init, objc_opt_new call the class's methods
        # when it overrides them, else the root's; retain/release are identity here
        S("_objc_alloc", lambda m, c, *_: rt.send(c, "alloc", image="libobjc") if c else 0)
        S("_objc_alloc_init", lambda m, c, *_: rt.send(rt.send(c, "alloc", image="libobjc"), "init", image="libobjc") if c else 0)
        S("_objc_opt_new", lambda m, c, *_: rt.send(c, "new", image="libobjc") if c else 0)
        # objc_opt_class: [obj class] (NSObject.mm): a class answers itself, an object its class
        S("_objc_opt_class", lambda m, o, *_: (o if rt.by_addr.get(o) is not None else m.u64(o)) if o else 0)
        S("_objc_retain", lambda m, o, *_: o)
        S("_objc_release", lambda m, o, *_: None)
        S("_objc_autorelease", lambda m, o, *_: o)
        S("_objc_retainAutoreleasedReturnValue", lambda m, o, *_: o)
        S("_objc_autoreleasePoolPush", lambda m, *_: 1)
        S("_objc_autoreleasePoolPop", lambda m, *_: None)

        def mutation(m, o, *_):
            raise GuestFault("objc_enumerationMutation: a collection changed while enumerated")
        S("_objc_enumerationMutation", mutation)

    def blocks_and_dispatch(self):
        S, m = self.d.standin, self.m

        def block_copy(m, b, *_):
            """_Block_copy (libclosure runtime.cpp): a global block is itself; a stack block is
            copied to the heap with its copy helper run."""
            if not b or m.u64(b) != self.rt.classes["__NSStackBlock__"].addr:
                return b
            desc = m.u64(b + 24)
            size = m.u64(desc + 8)
            nb = m.alloc(size, 16)
            m.write(nb, m.read(b, size))
            m.put64(nb, self.rt.classes["__NSMallocBlock__"].addr)
            if m.u32(b + 8) & BLOCK_HAS_COPY_DISPOSE:
                m.call(m.u64(desc + 16), nb, b, image="libsystem_blocks")
            return nb
        S("__Block_copy", block_copy)
        S("__Block_release", lambda m, b, *_: None)

        def object_assign(m, dst, obj, flags, *_):
            """_Block_object_assign (libclosure runtime.cpp): objects and blocks are stored as they are."""
            m.put64(dst, obj)
        S("__Block_object_assign", object_assign)
        S("__Block_object_dispose", lambda m, *_: None)
        # libdispatch (queue.c, semaphore.c, apply.c, once.c, semaphore.c's groups): one
        # thread. A group's blocks are copied when submitted and run, in order, when the group
        # is waited for (a schedule a concurrent queue may choose); a block submitted with
        # dispatch_async never runs (a worker the process never waits for: ggml's
        # residency keep-alive loop is one); dispatch_sync runs it at once
        S("_dispatch_queue_create", lambda m, *_: self.new("NSObject"))
        S("_dispatch_get_global_queue", lambda m, *_: self.new("NSObject"))
        S("_dispatch_group_create", lambda m, *_: self.new("NSObject", pending=[]))
        S("_dispatch_group_async", lambda m, g, q, b, *_: self.st(g)["pending"].append(block_copy(m, b)))
        S("_dispatch_async", lambda m, q, b, *_: self.never_run.append(block_copy(m, b)))
        S("_dispatch_sync", lambda m, q, b, *_: (self.call_block(b), None)[1])

        def group_wait(m, g, timeout, *_):
            pending = self.st(g)["pending"]
            while pending:
                self.call_block(pending.pop(0))
            return 0
        S("_dispatch_group_wait", group_wait)
        S("_dispatch_release", lambda m, *_: None)
        S("_dispatch_retain", lambda m, *_: None)

        def apply(m, n, q, b, *_):
            for i in range(n):
                self.call_block(b, i)
        S("_dispatch_apply", apply)

        def once_f(m, pred, ctx, fn, *_):
            if m.u64(pred) != 2**64 - 1:
                m.call(fn, ctx, image="libdispatch")
                m.put64(pred, 2**64 - 1)
        S("_dispatch_once_f", once_f)
        S("_dispatch_once", lambda m, pred, b, *_: (m.u64(pred) != 2**64 - 1 and (self.call_block(b), m.put64(pred, 2**64 - 1)), None)[1])

        def sem_create(m, v, *_):
            s = self.new("NSObject")
            self.sem[s] = v
            return s
        S("_dispatch_semaphore_create", sem_create)

        def sem_signal(m, s, *_):
            self.sem[s] = self.sem.get(s, 0) + 1
            return 0
        S("_dispatch_semaphore_signal", sem_signal)

        def sem_wait(m, s, t, *_):
            if self.sem.get(s, 0) <= 0:
                raise GuestFault("dispatch_semaphore_wait would block forever: nothing else runs")
            self.sem[s] -= 1
            return 0
        S("_dispatch_semaphore_wait", sem_wait)

    def libm(self):
        """Libm (Apple's libm, IEEE behaviour as C99 Annex F says) for what static initializers
        of client images compute: tables of sines, exponentials, logarithms."""
        import math
        S = self.d.standin

        def safe(f):
            def g(x):
                try:
                    return f(x)
                except (ValueError, OverflowError):
                    return math.nan if x != x or x < 0 else math.inf
            return g
        S("___sincosf_stret", _libm(None, pair=True))
        S("___sincos_stret", _libm(None, single=False, pair=True))
        for name, f in (("exp", math.exp), ("log", math.log), ("log2", math.log2), ("sin", math.sin), ("cos", math.cos),
                        ("sqrt", math.sqrt), ("tanh", math.tanh), ("exp2", lambda x: 2.0 ** x), ("log10", math.log10)):
            S("_" + name, _libm(safe(f), single=False))
            S("_" + name + "f", _libm(safe(f)))

    def cxx(self):
        S = self.d.standin
        # libc++abi: operator new/delete over malloc; static guards (cxa_guard.cpp: the first
        # byte set when initialised); atexit records (cxa_atexit.cpp)
        S("__Znwm", lambda m, n, *_: m.alloc(n))
        S("__Znam", lambda m, n, *_: m.alloc(n))
        S("__ZdlPv", lambda m, *_: None)
        S("__ZdaPv", lambda m, *_: None)
        S("___cxa_guard_acquire", lambda m, g, *_: 0 if m.read(g, 1)[0] else 1)
        S("___cxa_guard_release", lambda m, g, *_: (m.write(g, b"\1"), None)[1])
        S("___cxa_guard_abort", lambda m, *_: None)
        S("___cxa_atexit", lambda m, f, a, dso, *_: (self.atexit.append((f, a)), 0)[1])
        S("_atexit", lambda m, f, *_: (self.atexit.append((f, 0)), 0)[1])  # Libc stdlib/FreeBSD/atexit.c
        # libc++abi cxa_handlers.cpp: the terminate handler is a process-wide pointer
        handler = [0]
        S("__ZSt13get_terminatev", lambda m, *_: handler[0])
        S("__ZSt13set_terminatePFvvE", lambda m, f, *_: (handler[0], handler.__setitem__(0, f))[0])
        # libc++ (src/mutex.cpp): one thread runs, a mutex is always free
        for sym in ("__ZNSt3__15mutex4lockEv", "__ZNSt3__15mutex6unlockEv", "__ZNSt3__15mutexD1Ev"):
            S(sym, lambda m, *_: None)

    def libc(self):
        S, d = self.d.standin, self.d

        def tlv_bootstrap(m, desc, *_):
            """A thread-local variable's address (dyld: threadLocalHelpers.s tlv_get_addr, and
            threadLocalVariables.c): the descriptor {thunk, key, offset}; the one thread's block
            is the image's __thread_data and __thread_bss template, made on first use."""
            li = m.loaded_at(desc)
            if li is None:
                raise GuestFault(f"thread-local descriptor {desc:#x} outside every image")
            if not hasattr(li, "tlv_block"):
                secs = [x for x in (li.section("__DATA", "__thread_data"), li.section("__DATA", "__thread_bss")) if x]
                lo = min(x.virtual_address for x in secs)
                hi = max(x.virtual_address + x.size for x in secs)
                li.tlv_block = m.alloc(hi - lo, 16)
                m.write(li.tlv_block, b"\0" * (hi - lo))
                data = li.section("__DATA", "__thread_data")
                if data:
                    m.write(li.tlv_block + data.virtual_address - lo, m.read(li.base + data.virtual_address, data.size))
            return li.tlv_block + m.u64(desc + 16)
        S("__tlv_bootstrap", tlv_bootstrap)
        # Libc gen/FreeBSD/arc4random.c: bytes from the kernel's generator; fixed here so that
        # a run is repeatable (nothing on the path depends on their values)
        S("_arc4random_buf", lambda m, buf, n, *_: (m.write(buf, bytes((7 * i + 1) & 0xFF for i in range(n))), None)[1])
        S("_arc4random", lambda m, *_: 0x5EED1234)
        # CommonCrypto CommonRandom.c: CCRandomGenerateBytes fills the buffer, kCCSuccess (0)
        self.libm()
        S("_CCRandomGenerateBytes", lambda m, buf, n, *_: (m.write(buf, bytes((5 * i + 3) & 0xFF for i in range(n))), 0)[1])
        small_mmap = self.m.standins["_mmap"]
        far = [0x8_0000_0000]

        def mmap(m, addr, n, prot, flags, fd, off, *_):
            """mmap (xnu bsd/kern/kern_mman.c): anonymous mappings of a megabyte or more (an
            allocator's arenas) get a region of their own, mapped zero-filled as the kernel's
            pages are, so that a reservation costs nothing until touched; smaller ones as before."""
            if not flags & 0x1000 or n < (1 << 20):
                return small_mmap(m, addr, n, prot, flags, fd, off)
            size = (n + 0xFFFF) & ~0xFFFF
            a = far[0]
            m.uc.mem_map(a, size)
            far[0] += size + 0x10000
            return a
        S("_mmap", mmap)
        S("_munmap", lambda m, *_: 0)
        S("_madvise", lambda m, *_: 0)
        S("___chkstk_darwin", lambda m, *_: None)  # Libc: a stack probe; the emulated stack is mapped whole

        def getenv(m, name, *_):
            """getenv (Libc stdlib/FreeBSD/getenv.c): the value's bytes inside environ."""
            key = m.cstr(name).decode("utf-8", "surrogateescape")
            env = m.u64(d.environ_var)
            i = 0
            while True:
                p = m.u64(env + 8 * i) if env else 0
                if not p:
                    return 0
                e = m.cstr(p)
                if e.startswith(key.encode() + b"="):
                    return p + len(key) + 1
                i += 1
        S("_getenv", getenv)

        def setenv(m, name, value, overwrite, *_):
            """setenv (Libc stdlib/FreeBSD/setenv.c): a new environ array with the entry."""
            k, v = m.cstr(name).decode(), m.cstr(value).decode()
            env = d.env_now()
            if any(e.split("=", 1)[0] == k for e in env) and not overwrite:
                return 0
            env = [e for e in env if e.split("=", 1)[0] != k] + [f"{k}={v}"]
            m.put64(d.environ_var, m.new_array(env))
            d.env[k] = v
            self.setenvs.append((k, v))
            return 0
        S("_setenv", setenv)

        def calloc(m, n, k, *_):
            a = m.alloc(n * k)
            m.write(a, b"\0" * (n * k))
            return a
        S("_calloc", calloc)
        S("_free", lambda m, *_: None)

        def realloc(m, p, n, *_):
            a = m.alloc(n)
            if p:
                m.write(a, m.read(p, n))  # the heap only grows: reading past the old block is safe
            return a
        S("_realloc", realloc)
        S("_memset", lambda m, dst, c, n, *_: (m.write(dst, bytes([c & 0xFF]) * n), dst)[1])
        def strncpy(m, dst, src, n, *_):
            """strncpy (Libc string/FreeBSD/strncpy.c): at most n bytes, NUL-padded to n."""
            b = m.cstr(src, n)
            m.write(dst, b + b"\0" * (n - len(b)))
            return dst
        S("_strncpy", strncpy)
        S("_memmove", lambda m, dst, src, n, *_: (m.write(dst, m.read(src, n)), dst)[1])
        def atoi(m, p, *_):
            """atoi (Libc stdlib/FreeBSD/atoi.c, strtol's rules): blanks, a sign, then digits."""
            mo = re.match(rb"\s*([+-]?\d+)", m.cstr(p))
            return int(mo.group(1)) & 0xFFFFFFFF if mo else 0
        S("_atoi", atoi)
        S("_sysconf", lambda m, name, *_: 8 if name == 58 else 16384 if name == 29 else 0)  # _SC_NPROCESSORS_ONLN, _SC_PAGESIZE
        S("_usleep", lambda m, *_: 0)
        S("_clock", lambda m, *_: 0)

        def fputs(m, s, f, *_):
            d.stderr.extend(m.cstr(s))
            return 0
        S("_fputs", fputs)
        S("_fflush", lambda m, *_: 0)

        def availability(m, count, versions, *_):
            """_availability_version_check (libsystem's availability.c, what clang's
            __builtin_available calls): every (platform, version) pair is met on macOS 26."""
            return 1
        S("__availability_version_check", availability)

        def dlsym(m, h, name, *_):
            """dlsym (dyld: dyldAPIs.cpp): a symbol a loaded image exports, else NULL."""
            sym = "_" + m.cstr(name).decode()
            for li in getattr(m, "loaded", []):
                if sym in li.exports:
                    return li.exports[sym]
            return 0
        S("_dlsym", dlsym)


def _libm(fn, single=True, pair=False):
    """A libm function of one float (s0) or double (d0) (Apple's calling convention: floating
    arguments and results in v registers): fn's result written to s0/d0, or (sin, cos) to s0
    and s1 for __sincosf_stret (Libm: sincos returns both in registers)."""
    import math
    import struct as st
    from unicorn.arm64_const import UC_ARM64_REG_D0, UC_ARM64_REG_D1, UC_ARM64_REG_S0, UC_ARM64_REG_S1
    r0, r1 = (UC_ARM64_REG_S0, UC_ARM64_REG_S1) if single else (UC_ARM64_REG_D0, UC_ARM64_REG_D1)
    fmt, mask = ("<f", 0xFFFFFFFF) if single else ("<d", 2**64 - 1)

    def get(uc, r):
        raw = uc.reg_read(r) & mask
        return st.unpack(fmt, st.pack("<I" if single else "<Q", raw))[0]

    def put(uc, r, v):
        try:
            raw = st.unpack("<I" if single else "<Q", st.pack(fmt, v))[0]
        except OverflowError:
            raw = st.unpack("<I" if single else "<Q", st.pack(fmt, math.inf))[0]
        uc.reg_write(r, raw)

    def standin(m, *_):
        x = get(m.uc, r0)
        if pair:
            put(m.uc, r0, math.sin(x))
            put(m.uc, r1, math.cos(x))
        else:
            put(m.uc, r0, fn(x))
        return None
    return standin


def data_symbols(d):
    """The data a client binds to: classes (objc4: a class object's address), the block classes
    (libclosure: _NSConcreteGlobalBlock, _NSConcreteStackBlock), CoreFoundation's constant
    string class, and libsystem's mach_task_self_, __stderrp/__stdoutp, the default rune locale
    and libdispatch's concurrent queue attribute."""
    rt, m = d.objc, d.m
    cells = {}

    def cell(sym, size=8, value=0):
        if sym not in cells:
            a = m.alloc(size, 16)
            m.write(a, b"\0" * size)
            if value:
                m.put64(a, value)
            cells[sym] = a
        return cells[sym]
    blocks = {"__NSConcreteGlobalBlock": "__NSGlobalBlock__", "__NSConcreteStackBlock": "__NSStackBlock__",
              "__NSConcreteMallocBlock": "__NSMallocBlock__", "___CFConstantStringClassReference": "__NSCFConstantString"}

    def provide(sym):
        if sym in blocks:
            return rt.classes[blocks[sym]].addr
        for prefix, meta in (("_OBJC_CLASS_$_", False), ("_OBJC_METACLASS_$_", True)):
            if sym.startswith(prefix):
                name = sym[len(prefix):]
                if name not in rt.classes:
                    rt.add_class(name, "NSObject")
                c = rt.classes[name]
                return c.meta.addr if meta else c.addr
        if sym == "_mach_task_self_":
            return cell(sym, 4, 0x103)
        if sym in ("___stderrp", "___stdoutp"):
            return cell(sym, 8, cell(sym + ".FILE", 152))
        if sym == "__DefaultRuneLocale":
            return cell(sym, 4096)
        if sym == "__dispatch_queue_attr_concurrent":
            return cell(sym, 64)
        return None
    return provide


def thread_area(d):
    """The thread's TSD array, where TPIDRRO_EL0 points on Darwin arm64 (libpthread:
    pthread_internals.h, tsd_private.h): slot 0 the thread itself; allocators such as mimalloc
    read it for the thread's identity."""
    from unicorn.arm64_const import UC_ARM64_REG_TPIDRRO_EL0
    tsd = d.m.alloc(0x1000, 0x1000)
    d.m.write(tsd, b"\0" * 0x1000)
    d.m.put64(tsd, tsd)
    d.m.uc.reg_write(UC_ARM64_REG_TPIDRRO_EL0, tsd)


def install(d):
    thread_area(d)
    f = Frameworks(d)
    f.install()
    d.m.data_provider = data_symbols(d)
    libcxx.install(d)
    d.m.image_hooks = getattr(d.m, "image_hooks", []) + [d.objc.map_images]
    d.frameworks = f
    return f
