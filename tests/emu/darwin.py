"""Darwin stand-ins for the library's imports: libSystem (Libc, xnu's libsyscall, libpthread,
dyld's API), libobjc (objc4) and Metal, in Python, with Apple's arm64 calling convention
(docs: "Writing ARM64 code for Apple platforms": variadic arguments are passed on the stack,
each in its own 8-byte slot; a va_list is a plain pointer to those slots).

Each stand-in names the Apple open-source file whose behaviour it models. Files the library
reads (its configuration, a child's first bytes, its own slices) are the real files of this
machine; struct stat is written in Darwin's layout and errno values are Darwin's.

Calls Apple's libraries make internally to interposable functions go through the library's
interpose table as dyld arranges (dyld patches the shared cache for interposed functions):
posix_spawnp calls posix_spawn per PATH candidate, execv/execvp/execl* call execve,
system/popen call posix_spawn. execve and posix_spawn (the kernel) record path, argv and
environment and answer as xnu's exec_activate_image would (xnu_exec.py).
"""
import fcntl as host_fcntl
import os
import re
import struct

import darwin_proc
from machoemu import GuestFault, Jump
from xnu_exec import KernelExec

# xnu bsd/sys/errno.h (numbers that differ from Linux's are mapped)
EPERM, ENOENT, EINTR, EIO, E2BIG, ENOEXEC, EBADF, ENOMEM, EACCES, EFAULT = 1, 2, 4, 5, 7, 8, 9, 12, 13, 14
ENOTDIR, EISDIR, EINVAL, EAGAIN, ELOOP, ENAMETOOLONG, ENOTSUP = 20, 21, 22, 35, 62, 63, 45
LINUX_TO_DARWIN = {11: EAGAIN, 40: ELOOP, 36: ENAMETOOLONG, 95: ENOTSUP}
# xnu bsd/sys/fcntl.h
O_ACCMODE, O_NONBLOCK, O_NOFOLLOW, O_NOCTTY, O_DIRECTORY, O_CLOEXEC = 3, 0x4, 0x100, 0x20000, 0x100000, 0x1000000
O_APPEND, O_CREAT, O_TRUNC, O_EXCL = 0x8, 0x200, 0x400, 0x800
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC = 0, 1, 2, 3, 67
EMFILE, ENOSPC = 24, 28


def darwin_errno(e):
    return LINUX_TO_DARWIN.get(e, e)


class Exec(Exception):
    """A successful execve: the process image is replaced, nothing after it runs."""

    def __init__(self, record):
        super().__init__(record["path"])
        self.record = record


def pack_stat(st):
    """struct stat (64-bit inodes) as xnu bsd/sys/stat.h lays it out on arm64: 144 bytes."""
    def ts(t):
        return struct.pack("<qq", int(t), int((t % 1) * 1e9))
    return (struct.pack("<iHHQIIi4x", st.st_dev & 0x7FFFFFFF, st.st_mode, min(st.st_nlink, 0xFFFF), st.st_ino,
                        st.st_uid, st.st_gid, (getattr(st, "st_rdev", 0) or 0) & 0x7FFFFFFF) +
            ts(st.st_atime) + ts(st.st_mtime) + ts(st.st_ctime) + ts(st.st_ctime) +
            struct.pack("<qqiIIi", st.st_size, getattr(st, "st_blocks", 0) or 0, getattr(st, "st_blksize", 4096) or 4096, 0, 0, 0) + b"\0" * 16)


FMT = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|z|j|t|L|q)?([diouxXcspfFeEgG%])")


def format_c(m, fmt, next_arg):
    """printf's conversions over guest memory (Libc: stdio/FreeBSD/vfprintf.c), for the
    conversions the library uses; an unknown one fails the test with the format."""
    out, i = bytearray(), 0
    for mo in FMT.finditer(fmt):
        out += fmt[i:mo.start()]
        i = mo.end()
        flags, width, prec, length, conv = mo.groups()
        if conv == b"%":
            out += b"%"
            continue
        w = next_arg() if width == b"*" else int(width) if width else None
        if w is not None and w >= 2**63:
            w -= 2**64
        p = None
        if prec is not None:
            p = next_arg() if prec == b"*" else int(prec or b"0")
            if p >= 2**31:
                p = None
        v = next_arg()
        if conv == b"s":
            s = m.cstr(v) if v else b"(null)"
            if p is not None:
                s = s[:p]
        elif conv == b"c":
            s = bytes([v & 0xFF])
        elif conv == b"p":
            s = b"0x%x" % v
        elif conv in b"fFeEgG":
            s = (b"%" + flags + (b"%d" % w if w is not None else b"") + (b".%d" % p if p is not None else b"") + conv) % \
                struct.unpack("<d", struct.pack("<Q", v))[0]
            w = None
        else:
            bits = 64 if length in (b"l", b"ll", b"z", b"j", b"t", b"q") else 8 if length == b"hh" else 16 if length == b"h" else 32
            v &= (1 << bits) - 1
            if conv in b"di" and v >= 1 << (bits - 1):
                v -= 1 << bits
            spec = b"%" + flags + (b".%d" % p if p is not None else b"") + (b"d" if conv in b"diu" else conv)
            s = spec % v
        if w is not None:
            left = b"-" in flags or w < 0
            w = abs(w)
            pad = b"0" if b"0" in flags and not left and conv not in b"sc" else b" "
            if len(s) < w:
                s = s + b" " * (w - len(s)) if left else (pad * (w - len(s)) + s if pad == b" " or s[:1] not in b"-+" else s[:1] + pad * (w - len(s)) + s[1:])
        out += s
    rest = fmt[i:]
    if b"%" in rest:
        raise GuestFault(f"unsupported printf conversion in {fmt!r}")
    out += rest
    return bytes(out)


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


class Darwin(KernelExec):  # the kernel's exec and Libc's execvp, posix_spawnp: xnu_exec.py
    """One emulated process: its environment, files, kernel records and output."""

    def __init__(self, m, env, argv=("probe",), exe="/usr/local/bin/probe", host=None, metal=True):
        self.m, self.env_in, self.argv, self.exe = m, dict(env), list(argv), exe
        self.env = dict(env)
        self.host = host or {}
        self.stderr, self.syslog, self.execs, self.spawns, self.objc_log = bytearray(), [], [], [], []
        self.fail_add_method = False
        self.sysctl_asked = []
        self.clock_ns = 1_000 * 10**9
        self.fds = {}  # descriptor -> this machine's descriptor of a real file
        self.special = {}  # descriptor -> "tty" (the terminal) or "full" (/dev/full)
        self.cloexec, self.opened_for_writing, self.renames, self.unmapped = set(), [], [], []
        self.flocks = []  # (descriptor, operation) of every flock(2) that succeeded
        self.errno_sets = 0
        self.pid, self.wall_s = 4242, 1_800_000_000
        self.init_stdio(self.host)
        self.tsd, self.next_key, self.dtors = {}, 1, {}
        self.errno_addr = m.alloc(8, 8)
        m.put32(self.errno_addr, 0)  # zero when main starts (C11 7.5p3): the thread's errno slot starts cleared
        self.guard = m.alloc(8, 8)
        m.put64(self.guard, 0x5AFE_C0DE_1234_5678)
        m.data_imports["___stack_chk_guard"] = self.guard
        self.environ_var = m.alloc(8, 8)
        m.put64(self.environ_var, m.new_array([f"{k}={v}" for k, v in env.items()]))
        self.objc = Objc(m)
        self.metal = Metal(self) if metal else None
        self.strings = {}
        self.next_pid = 1000
        self.install()

    # ---- descriptors (xnu bsd/kern/kern_descrip.c) ----
    TTY = os.stat_result((0o20620, 99, 7, 1, 0, 0, 0, 0, 0, 0))  # a terminal: rdev 0 in this tuple

    def init_stdio(self, host):
        """0 and 1 the terminal; 2 the terminal, closed (stderr_closed), /dev/full
        (stderr="full"), a pipe or socket whose reader is gone (stderr="widowed_pipe" or
        "widowed_socket": darwin_proc) or a file of this machine's (stderr_file=PATH, opened for
        appending)."""
        self.special.update({0: "tty", 1: "tty"})
        if host.get("stderr_closed"):
            return
        if host.get("stderr") in ("full",) + darwin_proc.WIDOWED:
            self.special[2] = host["stderr"]
        elif host.get("stderr_file"):
            self.fds[2] = os.open(host["stderr_file"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        else:
            self.special[2] = "tty"

    def fd_limit(self):
        return self.host.get("fd_limit", 256)  # RLIMIT_NOFILE's soft default on macOS

    def fd_open(self, fd):
        return fd in self.fds or fd in self.special

    def fd_alloc(self, low):
        """fdalloc: the lowest free descriptor >= low below the limit, or -1."""
        for g in range(low, self.fd_limit()):
            if not self.fd_open(g):
                return g
        return -1

    def fd_dup(self, fd, g):
        if fd in self.special:
            self.special[g] = self.special[fd]
        else:
            self.fds[g] = os.dup(self.fds[fd])

    def fd_close(self, fd):
        self.cloexec.discard(fd)
        if fd in self.special:
            del self.special[fd]
            return True
        if fd in self.fds:
            os.close(self.fds.pop(fd))
            return True
        return False

    def fd_stat(self, fd):
        kind = self.special.get(fd)
        if kind == "tty":
            return self.TTY
        if kind == "full":
            return os.stat_result((0o20666, 7, 3, 1, 0, 0, 0, 0, 0, 0))
        if kind in darwin_proc.WIDOWED:  # a pipe (S_IFIFO) or socket (S_IFSOCK) of the case's
            return os.stat_result((0o10600 if kind == "widowed_pipe" else 0o140777, 4321, 0, 1, 0, 0, 0, 0, 0, 0))
        if fd in self.fds:
            st = os.fstat(self.fds[fd])
            fake = self.host.get("fake_inode", {}).get(fd)  # a case's stand-in for inode reuse
            return os.stat_result((st.st_mode, fake, st.st_dev) + tuple(st)[3:10]) if fake else st
        return None

    def take_fd(self, fd, path, flags=os.O_RDWR | os.O_CREAT):
        """The host program's own open(2) that lands at fd (the lowest free one)."""
        assert self.fd_alloc(0) == fd, f"the lowest free descriptor is {self.fd_alloc(0)}, not {fd}"
        self.fds[fd] = os.open(path, flags | os.O_CLOEXEC, 0o644)

    def fd_set_first(self, m, n, w):
        """The descriptor a one-descriptor fd_set names (the library waits on one)."""
        bits = int.from_bytes(m.read(w, (n + 7) // 8), "little") if w else 0
        return bits.bit_length() - 1 if bits else -1

    def thread_exit(self):
        """A thread's end (libpthread src/pthread_tsd.c: _pthread_tsd_cleanup): each key with a
        value and a destructor has its value cleared and the destructor called with it, for up
        to PTHREAD_DESTRUCTOR_ITERATIONS (4) rounds."""
        for _ in range(4):
            live = [(k, v) for k, v in self.tsd.items() if v and self.dtors.get(k)]
            if not live:
                return
            for k, v in live:
                self.tsd[k] = 0
                self.m.call(self.dtors[k], v, image="libsystem_c")

    def env_now(self):
        return self.m.str_array(self.m.u64(self.environ_var)) or []

    def getenv(self, name):
        for e in self.env_now():
            k, _, v = e.partition("=")
            if k == name:
                return v
        return None

    def set_errno(self, e):
        self.errno_sets += 1
        self.m.put32(self.errno_addr, e)

    def standin(self, sym, fn):
        self.m.standin(sym, fn)

    def intern(self, s):
        if s not in self.strings:
            self.strings[s] = self.m.new_cstr(s)
        return self.strings[s]

    def install(self):
        m, S = self.m, self.standin
        # ---- Libc string and memory (Libc: string/FreeBSD/*.c) ----
        S("_strlen", lambda m, s, *_: len(m.cstr(s)))

        def cmp(a, b):
            return (a > b) - (a < b)
        S("_strcmp", lambda m, a, b, *_: cmp(m.cstr(a), m.cstr(b)) & 0xFFFFFFFF)

        def strncmp(m, a, b, n, *_):
            return cmp(m.cstr(a, n + 1)[:n] if n else b"", m.cstr(b, n + 1)[:n] if n else b"") & 0xFFFFFFFF
        S("_strncmp", strncmp)

        def strchr(m, s, c, *_):
            b, c = m.cstr(s), c & 0xFF
            if c == 0:
                return s + len(b)
            i = b.find(bytes([c]))
            return s + i if i >= 0 else 0
        S("_strchr", strchr)

        def strrchr(m, s, c, *_):
            b, c = m.cstr(s), c & 0xFF
            if c == 0:
                return s + len(b)
            i = b.rfind(bytes([c]))
            return s + i if i >= 0 else 0
        S("_strrchr", strrchr)

        def span(m, s, set_, accept):
            b, chars = m.cstr(s), set(m.cstr(set_))
            n = 0
            while n < len(b) and ((b[n] in chars) == accept):
                n += 1
            return n
        S("_strcspn", lambda m, s, r, *_: span(m, s, r, False))
        S("_strspn", lambda m, s, r, *_: span(m, s, r, True))

        def memcpy(m, d, s, n, *_):
            if n:
                m.write(d, m.read(s, n))
            return d
        S("_memcpy", memcpy)
        S("_memmove", memcpy)

        def memcpy_chk(m, d, s, n, dn, *_):
            if n > dn:
                raise GuestFault(f"__memcpy_chk: {n} bytes into {dn} (Libc secure/memcpy_chk.c aborts)")
            return memcpy(m, d, s, n)
        S("___memcpy_chk", memcpy_chk)

        def memmove_chk(m, d, s, n, dn, *_):
            """__memmove_chk (Libc secure/memmove_chk.c): memmove, aborting past the destination's size."""
            if n > dn:
                raise GuestFault(f"__memmove_chk: {n} bytes into {dn} (Libc secure/memmove_chk.c aborts)")
            return memcpy(m, d, s, n)
        S("___memmove_chk", memmove_chk)

        def strcpy(m, d, s, *_):
            m.write(d, m.cstr(s) + b"\0")
            return d
        S("_strcpy", strcpy)

        def strcpy_chk(m, d, s, dn, *_):
            if len(m.cstr(s)) + 1 > dn:
                raise GuestFault("__strcpy_chk overflow (Libc secure/strcpy_chk.c aborts)")
            return strcpy(m, d, s)
        S("___strcpy_chk", strcpy_chk)
        S("_bzero", lambda m, d, n, *_: (m.write(d, b"\0" * n), None)[1])

        def memchr(m, s, c, n, *_):
            i = m.read(s, n).find(bytes([c & 0xFF])) if n else -1
            return s + i if i >= 0 else 0
        S("_memchr", memchr)

        def memcmp(m, a, b, n, *_):
            x, y = m.read(a, n), m.read(b, n)
            for p, q in zip(x, y):
                if p != q:
                    return (p - q) & 0xFFFFFFFF
            return 0
        S("_memcmp", memcmp)
        S("___tolower", lambda m, c, *_: ord(chr(c).lower()) if 65 <= c <= 90 else c)

        # ---- stdio formatting (Libc stdio/FreeBSD/snprintf.c, vsnprintf.c) ----
        def out_fmt(m, buf, n, text):
            if n:
                k = min(len(text), n - 1)
                m.write(buf, text[:k] + b"\0")
            return len(text)

        def va_reader(m, at):
            box = [at]

            def nxt():
                v = m.u64(box[0])
                box[0] += 8
                return v
            return nxt

        def snprintf(m, buf, n, fmt, *_):
            return out_fmt(m, buf, n, format_c(m, m.cstr(fmt), va_reader(m, m.uc.reg_read(SP))))
        S("_snprintf", snprintf)
        S("_vsnprintf", lambda m, buf, n, fmt, ap, *_: out_fmt(m, buf, n, format_c(m, m.cstr(fmt), va_reader(m, ap))))

        def syslog(m, pri, fmt, *_):
            """syslog(3) (Libc gen/syslog.c, to os_log since 10.12): the message is recorded."""
            self.syslog.append((pri, format_c(m, m.cstr(fmt), va_reader(m, m.uc.reg_read(SP))).decode("utf-8", "replace")))
        S("_syslog$DARWIN_EXTSN", syslog)
        S("_strerror", lambda m, e, *_: self.intern(os.strerror(e) if e < 35 else f"Unknown error: {e}"))
        S("___error", lambda m, *_: self.errno_addr)
        S("___stack_chk_fail", lambda m, *_: (_ for _ in ()).throw(GuestFault("__stack_chk_fail: stack protector tripped")))

        # ---- memory (libmalloc; xnu mmap) ----
        S("_malloc", lambda m, n, *_: m.alloc(n))

        def mmap(m, addr, n, prot, flags, fd, off, *_):
            if not flags & 0x1000:  # MAP_ANON (xnu bsd/sys/mman.h)
                self.set_errno(EINVAL)
                return 2**64 - 1
            a = m.alloc((n + 0x3FFF) & ~0x3FFF, 0x4000)
            m.write(a, b"\0" * n)
            self.mapped = getattr(self, "mapped", 0) + 1
            return a
        S("_mmap", mmap)
        S("_munmap", lambda m, a, n, *_: (self.unmapped.append((a, n)), 0)[1])  # xnu bsd/kern/kern_mman.c: munmap

        # ---- files: this machine's, through Darwin's flags and layouts ----
        def path_of(a):
            return m.cstr(a).decode("utf-8", "surrogateescape")

        def sys_fail(e):
            self.set_errno(darwin_errno(e.errno))
            return 2**64 - 1

        fd_paths = {}  # the path each descriptor was opened at (for the *at calls' records)

        def open_(m, p, flags, *_, at=None):
            """open(2) (xnu bsd/vfs/vfs_syscalls.c: open1; the lowest free descriptor, as
            bsd/kern/kern_descrip.c fdalloc gives). The mode, the one variadic argument, is on the
            stack (Apple's arm64 convention). Darwin's flag bits are translated to this machine's.
            at: openat's directory (host descriptor, its path), relative names resolved from it."""
            acc = flags & O_ACCMODE
            lf = {0: os.O_RDONLY, 1: os.O_WRONLY, 2: os.O_RDWR}.get(acc, os.O_RDONLY)
            for dbit, lbit in ((O_NONBLOCK, os.O_NONBLOCK), (O_NOFOLLOW, os.O_NOFOLLOW), (O_DIRECTORY, os.O_DIRECTORY),
                               (O_APPEND, os.O_APPEND), (O_CREAT, os.O_CREAT), (O_TRUNC, os.O_TRUNC), (O_EXCL, os.O_EXCL)):
                if flags & dbit:
                    lf |= lbit
            mode = m.stack_arg(0) & 0o7777 if flags & O_CREAT else 0
            path = path_of(p)
            full = os.path.normpath(os.path.join(at[1], path)) if at else path
            if acc:
                self.opened_for_writing.append(full)
            try:
                fd = os.open(path, lf | os.O_CLOEXEC | os.O_NOCTTY, mode, dir_fd=at[0] if at else None)
            except OSError as e:
                return sys_fail(e)
            g = self.fd_alloc(0)
            if g < 0:
                os.close(fd)
                self.set_errno(EMFILE)
                return 2**64 - 1
            self.fds[g] = fd
            fd_paths[g] = full
            if flags & O_CLOEXEC:
                self.cloexec.add(g)
            return g
        S("_open", open_)

        def at_dir(d, p):
            """An *at call's directory for path p (xnu bsd/vfs/vfs_syscalls.c:4127-4168, nameiat):
            AT_FDCWD (-2, bsd/sys/fcntl.h) and an absolute path ignore d (it is not even looked
            up); else an open descriptor, as (host descriptor, path); None: EBADF (ENOTDIR for a
            descriptor that is no directory comes from this machine's own *at call)."""
            d &= 0xFFFFFFFF
            if d == 0xFFFFFFFE or m.cstr(p).startswith(b"/"):
                return (None, os.getcwd())
            return (self.fds[d], fd_paths.get(d, "?")) if d in self.fds else None

        def with_dir(d, p, call):
            at = at_dir(d, p)
            if at is None:
                self.set_errno(EBADF)
                return 2**64 - 1
            try:
                return call(at)
            except OSError as e:
                return sys_fail(e)

        def openat(m, d, p, flags, *_):
            """openat(2) (xnu bsd/vfs/vfs_syscalls.c:5247, openat_internal :5191): open relative to d."""
            at = at_dir(d, p)
            return open_(m, p, flags, at=at) if at else (self.set_errno(EBADF), 2**64 - 1)[1]
        S("_openat", openat)

        def fstatat(m, d, p, st_a, flag, *_):
            """fstatat(2) (xnu bsd/vfs/vfs_syscalls.c:7418, fstatat_internal :7103): the link itself
            with AT_SYMLINK_NOFOLLOW (0x20, bsd/sys/fcntl.h:208)."""
            st = with_dir(d, p, lambda at: os.stat(path_of(p), dir_fd=at[0], follow_symlinks=not flag & 0x20))
            return st if isinstance(st, int) else (m.write(st_a, pack_stat(st)), 0)[1]
        S("_fstatat", fstatat)

        def readlinkat(m, d, p, buf, n, *_):
            """readlinkat(2) (xnu bsd/vfs/vfs_syscalls.c:7579, readlinkat_internal :7482-7535): the
            target's bytes, no NUL, cut to n, their count returned."""
            t = with_dir(d, p, lambda at: os.fsencode(os.readlink(path_of(p), dir_fd=at[0]))[:n])
            return t if isinstance(t, int) else (m.write(buf, t), len(t))[1]
        S("_readlinkat", readlinkat)

        def renameat(m, fd_a, a, fd_b, b, *_):
            """renameat(2) (xnu bsd/vfs/vfs_syscalls.c:9949, renameat_internal :9164): atomic,
            replacing the target."""
            at_a, at_b = at_dir(fd_a, a), at_dir(fd_b, b)
            if at_a is None or at_b is None:
                self.set_errno(EBADF)
                return 2**64 - 1
            try:
                os.rename(path_of(a), path_of(b), src_dir_fd=at_a[0], dst_dir_fd=at_b[0])
            except OSError as e:
                return sys_fail(e)
            self.renames.append((os.path.join(at_a[1], path_of(a)), os.path.join(at_b[1], path_of(b))))
            return 0
        S("_renameat", renameat)

        def read(m, fd, buf, n, *_):
            if fd not in self.fds:
                self.set_errno(EBADF)
                return 2**64 - 1
            data = os.read(self.fds[fd], n)
            m.write(buf, data)
            return len(data)
        S("_read", read)

        def close(m, fd, *_):
            """close(2) (xnu bsd/kern/kern_descrip.c: close_nocancel): the descriptor is freed; the
            file itself stays while another descriptor refers to it."""
            return 0 if self.fd_close(fd) else (self.set_errno(EBADF), 2**64 - 1)[1]
        S("_close", close)

        def fstat(m, fd, st_a, *_):
            """fstat(2) (xnu bsd/kern/kern_descrip.c: fstat1): the open file's own identity; a
            character device (the terminal, /dev/full) as the stand-in's fixed device numbers."""
            st = self.fd_stat(fd)
            if st is None:
                self.set_errno(EBADF)
                return 2**64 - 1
            m.write(st_a, pack_stat(st))
            return 0
        S("_fstat", fstat)

        def stat_(m, p, st_a, *_):
            try:
                st = os.stat(path_of(p))
            except OSError as e:
                return sys_fail(e)
            m.write(st_a, pack_stat(st))
            return 0
        S("_stat", stat_)

        def getxattr(m, p, name, *_):
            """getxattr(2): no file here carries an extended attribute (ENOATTR, xnu's 93), as on a
            file nothing marked; a missing file is ENOENT."""
            if not os.path.lexists(path_of(p)):
                self.set_errno(ENOENT)
            else:
                self.set_errno(93)
            return 2**64 - 1
        S("_getxattr", getxattr)

        def lstat(m, p, st_a, *_):
            """lstat(2) (xnu bsd/vfs/vfs_syscalls.c: lstat64): the link itself, not its target."""
            try:
                st = os.lstat(path_of(p))
            except OSError as e:
                return sys_fail(e)
            m.write(st_a, pack_stat(st))
            return 0
        S("_lstat", lstat)

        def rename(m, a, b, *_):
            """rename(2) (xnu bsd/vfs/vfs_syscalls.c: renameat_internal): atomic, replacing the
            target; this machine's file system does it."""
            try:
                os.rename(path_of(a), path_of(b))
            except OSError as e:
                return sys_fail(e)
            self.renames.append((path_of(a), path_of(b)))
            return 0
        S("_rename", rename)

        def unlink(m, p, *_):
            """unlink(2) (xnu bsd/vfs/vfs_syscalls.c: unlink1): this machine's file system does it."""
            try:
                os.unlink(path_of(p))
            except OSError as e:
                return sys_fail(e)
            return 0
        S("_unlink", unlink)

        def flock_(m, fd, op, *_):
            """flock(2) (xnu bsd/kern/kern_descrip.c: sys_flock): a lock on the open file, here
            this machine's own flock on the real file, so a lock another open of it holds
            conflicts; LOCK_SH 1, LOCK_EX 2, LOCK_NB 4, LOCK_UN 8 as in bsd/sys/fcntl.h."""
            if fd not in self.fds:
                self.set_errno(EBADF)
                return 2**64 - 1
            how = {1: host_fcntl.LOCK_SH, 2: host_fcntl.LOCK_EX, 8: host_fcntl.LOCK_UN}.get(op & ~4)
            if how is None:
                self.set_errno(EINVAL)
                return 2**64 - 1
            try:
                host_fcntl.flock(self.fds[fd], how | (host_fcntl.LOCK_NB if op & 4 else 0))
            except OSError as e:
                return sys_fail(e)
            self.flocks.append((fd, op))
            return 0
        S("_flock", flock_)

        def fcntl(m, fd, cmd, *_):
            """fcntl (xnu libsyscall/wrappers/cancelable/fcntl-base.c: the third argument is
            variadic, read from the stack on arm64; bsd/kern/kern_descrip.c: sys_fcntl_nocancel).
            F_DUPFD/F_DUPFD_CLOEXEC: the lowest free descriptor >= arg, EINVAL when arg is at or
            over the descriptor limit, EMFILE when none is free; F_GETFD/F_SETFD: FD_CLOEXEC."""
            arg = m.stack_arg(0)
            if not self.fd_open(fd):
                self.set_errno(EBADF)
                return 2**64 - 1
            if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
                if arg >= self.fd_limit():
                    self.set_errno(EINVAL)
                    return 2**64 - 1
                g = self.fd_alloc(arg)
                if g < 0:
                    self.set_errno(EMFILE)
                    return 2**64 - 1
                self.fd_dup(fd, g)
                if cmd == F_DUPFD_CLOEXEC:
                    self.cloexec.add(g)
                return g
            if cmd == F_GETFD:
                return 1 if fd in self.cloexec else 0
            if cmd == F_SETFD:
                (self.cloexec.add if arg & 1 else self.cloexec.discard)(fd)
                return 0
            if cmd == F_GETFL:
                return 1 if fd in (1, 2) else 0
            raise GuestFault(f"fcntl command {cmd} has no stand-in")
        S("_fcntl", fcntl)

        def access(m, p, mode, *_):
            try:
                ok = os.access(path_of(p), mode)
                if not os.path.lexists(path_of(p)):
                    self.set_errno(ENOENT)
                    return 2**64 - 1
            except OSError as e:
                return sys_fail(e)
            if not ok:
                self.set_errno(EACCES)
                return 2**64 - 1
            return 0
        S("_access", access)
        S("_getuid", lambda m, *_: os.getuid())
        S("_geteuid", lambda m, *_: os.geteuid())  # xnu bsd/kern/kern_prot.c: geteuid
        S("_getpid", lambda m, *_: self.pid)  # xnu bsd/kern/kern_prot.c: getpid
        S("_getppid", lambda m, *_: self.host.get("ppid", 1))  # xnu bsd/kern/kern_prot.c: getppid (p_ppid)


        def time_(m, t, *_):
            """time(3) (Libc gen/FreeBSD/time.c: gettimeofday's seconds): the virtual clock."""
            secs = self.wall_s + self.clock_ns // 10**9
            if t:
                m.put64(t, secs)
            return secs
        S("_time", time_)

        def write(m, fd, buf, n, *_):
            """write(2) (xnu bsd/kern/sys_generic.c: write_nocancel): EBADF on a closed descriptor,
            ENOSPC on /dev/full, the terminal's bytes recorded, a file's written to this machine's."""
            kind = self.special.get(fd)
            data = m.read(buf, n)
            if kind == "tty":
                self.stderr += data
                return n
            if kind == "full":
                self.set_errno(ENOSPC)
                return 2**64 - 1
            if fd not in self.fds:
                self.set_errno(EBADF)
                return 2**64 - 1
            if any(os.path.exists(f) and os.path.samestat(os.fstat(self.fds[fd]), os.stat(f))
                   for f in self.host.get("full_disk", ())):  # a file on a full disk (the case names it)
                self.set_errno(ENOSPC)
                return 2**64 - 1
            try:
                return os.write(self.fds[fd], data)
            except OSError as e:
                return sys_fail(e)
        S("_write", write)

        # ---- time, signals, select (xnu libsyscall; Libc gen/clock_gettime.c) ----
        def clock_gettime(m, clk, ts, *_):
            """A virtual clock, 1 µs further at each call: the library's 200 ms budget for its
            stderr line never runs out because the host machine is busy (tests stay deterministic)."""
            self.clock_ns += 1000
            m.write(ts, struct.pack("<qq", self.clock_ns // 10**9, self.clock_ns % 10**9))
            return 0
        S("_clock_gettime", clock_gettime)
        S("___darwin_check_fd_set_overflow", lambda m, *_: 1)  # Libc: sys/_types/_fd_def.h inline check

        def select(m, n, r, w, e, tv, *_):
            """select(2): fd 2 is writable (a terminal or a pipe with room) unless the case says not."""
            if self.host.get("stderr_full"):
                return 0
            return 1 if self.fd_open(self.fd_set_first(m, n, w)) else (self.set_errno(EBADF), 2**64 - 1)[1]
        S("_select", select)

        S("_pthread_mutex_lock", lambda m, *_: 0)
        S("_pthread_mutex_unlock", lambda m, *_: 0)
        S("_sched_yield", lambda m, *_: 0)  # one thread here: the watch's wait never spins

        # ---- thread-specific data (libpthread: src/pthread_tsd.c) ----
        def key_create(m, key_a, dtor, *_):
            k = self.next_key
            self.next_key += 1
            self.dtors[k] = dtor
            m.put64(key_a, k)
            return 0
        S("_pthread_key_create", key_create)
        S("_pthread_getspecific", lambda m, k, *_: self.tsd.get(k, 0))
        S("_pthread_setspecific", lambda m, k, v, *_: (self.tsd.__setitem__(k, v), 0)[1])

        # ---- the process (dyld: dyldAPIs; Libc: gen/getprogname.c, crt_externs.c) ----
        S("__NSGetEnviron", lambda m, *_: self.environ_var)

        def exe_path(m, buf, size_a, *_):
            """_NSGetExecutablePath (dyld-1378 DyldAPIs.cpp:786-800): on macOS the "unreal" path,
            "not real-path. It may be a symlink": the kernel's executable_path as exec was given it
            (xnu kern_exec.c:536-574, exec_save_path), made absolute against the current directory
            with a leading "./" dropped (DyldProcessConfig.cpp:673-698), links never resolved; -1
            and the size needed when buf is too small."""
            exe = self.exe if self.exe.startswith("/") else os.getcwd() + "/" + self.exe.removeprefix("./")
            b = exe.encode()
            if m.u32(size_a) < len(b) + 1:
                m.put32(size_a, len(b) + 1)
                return 2**32 - 1
            m.write(buf, b + b"\0")
            return 0
        S("__NSGetExecutablePath", exe_path)

        def realpath(m, p, out, *_):
            """realpath(3) (Libc stdlib/FreeBSD/realpath.c, $DARWIN_EXTSN, __DARWIN_UNIX03): ENOENT
            for "" (:103-108) and for any missing component, the last too (:247-253); every link
            followed (:301-345), ELOOP past a loop, ENOTDIR through a file; ENAMETOOLONG at
            PATH_MAX (1024) bytes or more (:228-231)."""
            path = path_of(p)
            try:
                r = os.path.realpath(path, strict=True).encode() if path else None
            except OSError as e:
                self.set_errno(darwin_errno(e.errno or ELOOP))
                return 0
            if r is None:
                self.set_errno(ENOENT)
                return 0
            if len(r) >= 1024:
                self.set_errno(ENAMETOOLONG)
                return 0
            out = out or m.alloc(1024)
            m.write(out, r + b"\0")
            return out
        S("_realpath$DARWIN_EXTSN", realpath)

        def dladdr(m, addr, info, *_):
            """dladdr (dyld: dyldAPIs.cpp): the image holding addr; 0 outside every image."""
            path, base = m.image_at(addr)
            if not path:
                return 0
            m.put64(info, self.intern(path))
            m.put64(info + 8, base)
            m.put64(info + 16, 0)
            m.put64(info + 24, 0)
            return 1
        S("_dladdr", dladdr)

        # ---- dyld's list of images and its notices (dyld: DyldAPIs.cpp, DyldRuntimeState.cpp) ----
        def image_list(m):
            """The images dyld lists, in load order: the library, those mapped since
            (Machine.add_image) and the stand-in images that call (Machine.image); "dyld" (where
            its notices come from) is none of them."""
            return [(m.path, m.span[0])] + [(li.path, li.span[0]) for li in getattr(m, "loaded", [])] + \
                [(p, a) for name, (a, p) in m.images.items() if name != "dyld"]
        S("__dyld_image_count", lambda m, *_: len(image_list(m)))
        S("__dyld_get_image_name", lambda m, i, *_: self.intern(image_list(m)[i][0]) if i < len(image_list(m)) else 0)
        self.add_image_fns, self.remove_image_fns = [], []

        def notify(fns, base):
            for fn in list(fns):
                m.call(fn, base, 0, image="dyld")

        def register_add(m, fn, *_):
            """_dyld_register_func_for_add_image (DyldAPIs.cpp:802-832): fn(mh, slide) at once for
            each image loaded, then for each new one (Machine.image_added_hooks)."""
            for _, base in image_list(m):
                m.call(fn, base, 0, image="dyld")
            self.add_image_fns.append(fn)
        S("__dyld_register_func_for_add_image", register_add)
        S("__dyld_register_func_for_remove_image", lambda m, fn, *_: self.remove_image_fns.append(fn))
        m.image_added_hooks = [lambda base: notify(self.add_image_fns, base) if base != m.images.get("dyld", (0,))[0] else None]

        def replace_image(old, new, path):
            """dlclose of image `old` and dlopen of `new` (path) mapped at the same address: dyld's
            remove notices before the unmap (DyldRuntimeState.cpp:1630, :1901-1925, :2117), then
            its add notices."""
            base, _ = m.images[old]
            notify(self.remove_image_fns, base)
            del m.images[old]
            m.images[new] = (base, path)
            notify(self.add_image_fns, base)
        self.replace_image = replace_image

        def sysctlbyname(m, name, old, oldlen_a, new, newlen, *_):
            """sysctlbyname (Libc gen/sysctlbyname.c; the values xnu publishes): the brand string,
            hw.memsize and sysctl.proc_translated, from the case's host, and any name in its "sysctl"
            (an int is 4 bytes, as xnu's CTLTYPE_INT: kern.hv_vmm_present, hw.ncpu); ENOENT for what it lacks."""
            key = m.cstr(name).decode()
            self.sysctl_asked.append(key)
            val = {"machdep.cpu.brand_string": self.host.get("brand"), "hw.memsize": self.host.get("memsize"),
                   "sysctl.proc_translated": self.host.get("translated"), **self.host.get("sysctl", {})}.get(key)
            if val is None:
                self.set_errno(ENOENT)
                return 2**32 - 1
            data = val.encode() + b"\0" if isinstance(val, str) else struct.pack("<Q" if key == "hw.memsize" else "<i", val)
            cap = m.u64(oldlen_a)
            if old:
                if cap < len(data):
                    self.set_errno(12)
                    return 2**32 - 1
                m.write(old, data)
            m.put64(oldlen_a, len(data))
            return 0
        S("_sysctlbyname", sysctlbyname)

        # ---- programs (xnu kern_exec.c; Libc gen/FreeBSD/exec.c; Libc sys/posix_spawn.c) ----
        S("_execve", lambda m, p, argv, envp, *_: self.kernel_execve(path_of(p), argv, envp))
        S("_posix_spawn", lambda m, pid, p, fa, attr, argv, envp, *_: self.kernel_spawn(pid, path_of(p), argv, envp))
        S("_posix_spawnp", lambda m, pid, f, fa, attr, argv, envp, *_: self.libc_posix_spawnp(pid, path_of(f), fa, attr, argv, envp))
        S("_execv", lambda m, p, argv, *_: self.libc_execve(p, argv, m.u64(self.environ_var)))
        S("_execvp", lambda m, f, argv, *_: self.libc_execvp(path_of(f), argv, m.u64(self.environ_var)))
        S("_execl", lambda m, p, a0, *_: self.libc_execl(p, a0, m.uc.reg_read(SP), "path"))
        S("_execle", lambda m, p, a0, *_: self.libc_execl(p, a0, m.uc.reg_read(SP), "env"))
        S("_execlp", lambda m, p, a0, *_: self.libc_execl(p, a0, m.uc.reg_read(SP), "search"))
        # the x86_64 slice's names for the same functions (Libc's symbol variants, <sys/cdefs.h>:
        # $INODE64 for the 64-bit-inode struct stat, $1050 for select's 10.5 semantics; ___bzero)
        for alias, base in (("_fstat$INODE64", "_fstat"), ("_stat$INODE64", "_stat"), ("_lstat$INODE64", "_lstat"), ("_fstatat$INODE64", "_fstatat"), ("_select$1050", "_select"),
                            ("___bzero", "_bzero")):
            S(alias, m.standins[base])
        darwin_proc.install(self)  # threads and signals, poll, getrlimit, lseek, the program's name
        self.objc.install(self)
        if self.metal:
            self.metal.install(self)


from unicorn.arm64_const import UC_ARM64_REG_SP as SP  # noqa: E402
