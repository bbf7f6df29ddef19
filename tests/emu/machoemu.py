"""A Mach-O loader and arm64 machine for the release's library, off a Mac.

The file is parsed by LIEF (an independent Mach-O reader: the check does not trust the
project's own src/macho parser), executed by Unicorn with its maximal arm64 CPU model (the
library uses LSE, LRCPC and PAuth instructions every Apple chip has), and Capstone gives
instruction boundaries where they are needed (planted mutants).

API (for other engineers building on it; see tests/emu/README.md):

    img = Image.load(path_or_bytes)       # the arm64 slice of a thin or universal file
    m = Machine(img, lazy=True)           # maps segments, applies rebases and binds
    m.standin("_strlen", fn)              # fn(m, a0, a1, ...) -> int | None (x0)
    m.run_initializers()                  # __mod_init_func with dyld's arguments
    m.call(addr, *args, image="probe")    # a guest call from an image of that name
    m.interposer("_posix_spawn")          # the library's replacement, or None
    m.coverage()                          # {function name: blocks reached}

Imports are bound to stand-in "slots": 16-byte cells of a region outside the library, each
holding `br x16`; a code hook on the cell runs the Python stand-in, puts its result in x0 and
sets x16 to the return address (or to the address it jumps to: objc_msgSend, the binder). An
import without a stand-in fails the run with its name (MissingStandin). Guest calls from a
stand-in nest (Unicorn 2 allows emu_start in a hook): each nesting level returns to its own stop
address inside the calling "image", so the library's caller-scope lookups (dladdr of the return
address) see the image the call came from.

Image (LIEF's view of one slice) is in macho_image.py and chained fixups in chained_fixups.py;
both are re-exported here, so machoemu.Image and machoemu.craft_chained stay the API.
"""
import struct

from unicorn import (UC_ARCH_ARM64, UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_MEM_INVALID, UC_MODE_ARM,
                     UC_PROT_ALL, UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE, Uc, UcError)
from unicorn.arm64_const import (UC_ARM64_REG_SP, UC_ARM64_REG_X0, UC_ARM64_REG_X16, UC_ARM64_REG_X30,
                                 UC_CPU_ARM64_MAX)

from chained_fixups import apply_chained, chained_imports, craft_chained  # noqa: F401  (machoemu's API)
from macho_image import Image  # noqa: F401  (machoemu's API)

X = [UC_ARM64_REG_X0 + i for i in range(29)]
BASE = 0x1_0000_0000          # where the library is mapped (dyld slides it anywhere)
SLOTS = 0x2_0000_0000          # stand-in cells
SLOT_SIZE = 16
HEAP = 0x3_0000_0000           # malloc, mmap, objc objects, strings the harness makes
HEAP_SIZE = 0x0400_0000
STACK = 0x7_0000_0000
STACK_SIZE = 0x0080_0000
IMAGES = 0x5_0000_0000         # one page per calling image (probe, Metal, clients): stop addresses
LOADED = 0x1_4000_0000         # more images (real clients), each at its own base, LOADED_STEP apart
LOADED_STEP = 0x0800_0000
BR_X16 = struct.pack("<I", 0xD61F0200)


# every block start reached, per image (Image.key), over the whole session: the coverage table
REACHED = {}


class MissingStandin(Exception):
    pass


class GuestFault(Exception):
    pass


def _prot(vm):
    p = 0
    if vm & 1:
        p |= UC_PROT_READ
    if vm & 2:
        p |= UC_PROT_WRITE
    if vm & 4:
        p |= UC_PROT_EXEC
    return p


class Loaded:
    """One more image in the process (a client's dylib or bundle), mapped at its own base."""

    def __init__(self, img, path, base):
        self.img, self.path, self.base = img, path, base
        self.name = path.rsplit("/", 1)[-1]
        segs = img.segments
        self.span = (base + min(s.virtual_address for s in segs), base + max(s.virtual_address + s.virtual_size for s in segs))
        self.exports = {s.name: base + s.value for s in img.bin.exported_symbols if s.name}
        self.deps = img.dependencies()
        self.install = img.install_name()
        self.bound, self.missing, self.initialized = {}, [], False

    def section(self, seg, name):
        return self.img.section(seg, name)

    def symbol(self, name):
        """An exported symbol's address, else a local one's from the symbol table (a client that
        exports only its module entry keeps its functions' names there)."""
        if name in self.exports:
            return self.exports[name]
        if not hasattr(self, "_locals"):
            self._locals = {n: self.base + a for a, n in self.img.symbols().items()}
        return self._locals[name]

    def answers_to(self, install_name):
        """Whether a dependency's install name is this image (an @rpath/@loader_path name by its
        last component, as dyld finds it along LC_RPATH)."""
        if install_name in (self.install, self.path):
            return True
        last = install_name.rsplit("/", 1)[-1]
        return install_name.startswith("@") and last in ((self.install or "").rsplit("/", 1)[-1], self.name)


class Unresolved(MissingStandin):
    pass


class LoaderMixin:
    """dyld's part for more images: map, fix up (opcodes or chained fixups), bind by two-level
    namespace across the images (interposing applies to every image but the interposing one,
    dyld: Loader::applyInterposingToDyldCache and the interposing tuples), the objc4 hook
    (map_images: selector uniquing) and the initializers (__mod_init_func pointers and
    __TEXT,__init_offsets 32-bit offsets, dyld: Loader::findAndRunAllInitializers)."""

    def add_image(self, img, path):
        """Maps and fixes up img as path (dlopen's first half) and gives dyld's add-image notice;
        initializers run on start_image."""
        self.loaded = getattr(self, "loaded", [])
        base = LOADED
        if self.loaded:  # after the last image, on a LOADED_STEP boundary
            base = (self.loaded[-1].span[1] + LOADED_STEP - 1) & ~(LOADED_STEP - 1)
        li = Loaded(img, path, base)
        if li.span[1] > SLOTS:
            raise ValueError(f"{path}: {li.span[1] - li.base:#x} bytes do not fit below the stand-in cells at {SLOTS:#x}")
        self.loaded.append(li)
        protect = []
        for s in img.segments:
            if s.name == "__LINKEDIT" or s.virtual_size == 0:
                continue
            size = (s.virtual_size + 0xFFF) & ~0xFFF
            self.uc.mem_map(li.base + s.virtual_address, size, UC_PROT_ALL)
            self.write(li.base + s.virtual_address, img.slice_bytes[s.file_offset:s.file_offset + s.file_size])
            prot = _prot(s.init_protection)
            if s.name == "__DATA_CONST" or int(s.flags) & 0x10:
                prot = UC_PROT_READ
            protect.append((li.base + s.virtual_address, size, prot))
        if img.bin.has_dyld_chained_fixups:
            cf = img.bin.dyld_chained_fixups
            apply_chained(self, img.slice_bytes[cf.data_offset:cf.data_offset + cf.data_size], li)
        else:
            for a in img.rebases():
                self.put64(li.base + a, self.u64(li.base + a) + li.base)
            for cls, a, sym, weak, addend, ordinal in img.binds_with_ordinals():
                if cls != "LAZY":  # __la_symbol_ptr keeps its __stub_helper entry: the binder resolves it
                    self.bind_in(li, a, sym, weak, addend, ordinal)
        for hook in getattr(self, "image_hooks", []):
            hook(li)  # objc4's map_images, while __DATA_CONST is still writable
        for a, size, prot in protect:
            self.uc.mem_protect(a, size, prot)
        for hook in getattr(self, "image_added_hooks", []):
            hook(li.base)  # dyld's add-image notice, after the fix-ups, before the initializers (DyldAPIs.cpp:1681-1697)
        return li

    def loaded_at(self, addr):
        for li in getattr(self, "loaded", []):
            if li.span[0] <= addr < li.span[1]:
                return li
        return None

    def bind_in(self, li, a, sym, weak, addend, ordinal):
        value = self.resolve(li, sym, weak, ordinal)
        self.put64(li.base + a, value + addend if value else 0)
        li.bound[a] = sym

    def resolve(self, li, sym, weak, ordinal):
        """The address a bind of li gets: the inserted library's interposer for sym; else the
        image the ordinal names (two-level namespace), or any loaded image for a flat lookup
        (-2, -3) or the main executable (-1); else a stand-in (a function cell or a data
        object); else 0 for a weak import; else a cell that fails naming the image and symbol."""
        if sym == "dyld_stub_binder":
            return self.slot("dyld_stub_binder", self._binder)
        if not hasattr(self, "_interposers"):
            self._interposers = {orig: rep for rep, orig in self.interpose_table() if orig} if self.img.section("__DATA", "__interpose") else {}
        if sym in self._interposers:
            return self._interposers[sym]
        if ordinal > 0 and ordinal <= len(li.deps):
            targets = [x for x in self.loaded if x.answers_to(li.deps[ordinal - 1])]
        else:
            targets = list(self.loaded)
        for t in targets:
            if sym in t.exports:
                return t.exports[sym]
        if sym in self.data_imports:
            return self.data_imports[sym]
        provider = getattr(self, "data_provider", None)
        if provider and provider(sym):
            return self.data_imports.setdefault(sym, provider(sym))
        if sym in self.standins:
            return self.slot(sym, self.standins[sym])
        if weak:
            return 0
        li.missing.append(sym)
        where = li.deps[ordinal - 1] if 0 < ordinal <= len(li.deps) else "a flat lookup"
        msg = f"{li.path}: import {sym} (from {where}) has no stand-in (tests/emu/darwin.py) and no loaded image exports it"

        def fail(m, *a):
            raise Unresolved(msg)
        return self.slot(f"{li.name}:{sym}", fail)

    def start_image(self, li, argv=("node",), envp=0, apple=()):
        """The image's initializers, as dyld calls them: __mod_init_func's pointers and
        __TEXT,__init_offsets' offsets, each with (argc, argv, envp, apple, &vars)."""
        if li.initialized:
            return
        li.initialized = True
        funcs = []
        for seg in ("__DATA_CONST", "__DATA"):
            sec = li.section(seg, "__mod_init_func")
            if sec:
                funcs += [self.u64(li.base + sec.virtual_address + 8 * i) for i in range(sec.size // 8)]
        sec = li.section("__TEXT", "__init_offsets")
        if sec:
            funcs += [li.base + self.u32(li.base + sec.virtual_address + 4 * i) for i in range(sec.size // 4)]
        argv_a, apple_a, vars_a = self.new_array(list(argv)), self.new_array(list(apple)), self.alloc(40, 8)
        for f in funcs:
            self.call(f, len(argv), argv_a, envp, apple_a, vars_a, image="dyld")
        return funcs


class Machine(LoaderMixin):
    def __init__(self, img, lazy=True, path="/opt/homebrew/lib/libvzcaps.dylib"):
        self.img, self.lazy, self.path = img, lazy, path
        self.uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
        self.uc.ctl_set_cpu_model(UC_CPU_ARM64_MAX)
        # a dylib (linked at 0) is slid to BASE; an executable stays where it was linked
        self.base = BASE if min(s.virtual_address for s in img.segments) == 0 else 0
        self.span = (self.base + min(s.virtual_address for s in img.segments),
                     self.base + max(s.virtual_address + s.virtual_size for s in img.segments))
        self.standins = {}          # symbol -> python function
        self.data_imports = {}      # symbol -> address (data, e.g. ___stack_chk_guard)
        self.slot_of, self.slot_fn = {}, {}
        self.heap_next = HEAP
        self.depth = 0
        self.images = {}            # name -> (page base, path)
        self.slot_image = {}        # stand-in cell -> the name of the image its code belongs to (dladdr)
        self.blocks = set()
        self.bound = {}             # got/lazy address -> symbol
        self.missing = []
        self.lazy_resolved = []
        self.imports_called = set()
        self.uc.mem_map(SLOTS, 0x10_0000, UC_PROT_READ | UC_PROT_EXEC)
        self.uc.mem_map(HEAP, HEAP_SIZE, UC_PROT_READ | UC_PROT_WRITE)
        self.uc.mem_map(STACK, STACK_SIZE, UC_PROT_READ | UC_PROT_WRITE)
        self.uc.mem_map(IMAGES, 0x10_0000, UC_PROT_READ | UC_PROT_EXEC)
        self.n_slots = 0
        self.uc.hook_add(UC_HOOK_CODE, self._on_slot, begin=SLOTS, end=SLOTS + 0x10_0000 - 1)
        self.uc.hook_add(UC_HOOK_MEM_INVALID, self._on_fault)
        lo, hi = img.text_range()
        self.uc.hook_add(UC_HOOK_BLOCK, self._on_block, begin=BASE + lo, end=BASE + hi - 1)
        self.fault = None

    # ---- memory ----
    def alloc(self, n, align=16):
        a = (self.heap_next + align - 1) & ~(align - 1)
        self.heap_next = a + max(n, 1)
        if self.heap_next > HEAP + HEAP_SIZE:
            raise MemoryError("emulated heap exhausted")
        return a

    def read(self, a, n):
        return bytes(self.uc.mem_read(a, n))

    def write(self, a, data):
        self.uc.mem_write(a, bytes(data))

    def u64(self, a):
        return struct.unpack("<Q", self.read(a, 8))[0]

    def put64(self, a, v):
        self.write(a, struct.pack("<Q", v & (2**64 - 1)))

    def u32(self, a):
        return struct.unpack("<I", self.read(a, 4))[0]

    def put32(self, a, v):
        self.write(a, struct.pack("<I", v & 0xFFFFFFFF))

    def cstr(self, a, limit=None):
        """The string at a; with limit, at most limit bytes of it (strncmp's view)."""
        out = bytearray()
        cap = limit if limit is not None else 1 << 20
        while len(out) < cap:
            chunk = self.read(a + len(out), 64 - ((a + len(out)) & 63))
            z = chunk.find(0)
            if z >= 0:
                out += chunk[:z]
                return bytes(out)
            out += chunk
        if limit is not None:
            return bytes(out[:limit])
        raise GuestFault(f"unterminated string at {a:#x}")

    def new_cstr(self, s):
        b = s.encode() if isinstance(s, str) else bytes(s)
        a = self.alloc(len(b) + 1)
        self.write(a, b + b"\0")
        return a

    def new_array(self, items):
        """A NULL-terminated char * array of new strings."""
        a = self.alloc(8 * (len(items) + 1), 8)
        for i, s in enumerate(items):
            self.put64(a + 8 * i, self.new_cstr(s))
        self.put64(a + 8 * len(items), 0)
        return a

    def str_array(self, a):
        out = []
        if not a:
            return None
        while True:
            p = self.u64(a + 8 * len(out))
            if not p:
                return [s.decode("utf-8", "surrogateescape") for s in out]
            out.append(self.cstr(p))

    # ---- stand-ins ----
    def slot(self, key, fn):
        """A cell that runs fn when branched to; key names it (an import or a method)."""
        if key in self.slot_of:
            self.slot_fn[self.slot_of[key]] = (key, fn)
            return self.slot_of[key]
        a = SLOTS + SLOT_SIZE * self.n_slots
        self.n_slots += 1
        self.uc.mem_write(a, BR_X16)
        self.slot_of[key] = a
        self.slot_fn[a] = (key, fn)
        return a

    def standin(self, sym, fn):
        self.standins[sym] = fn

    def _missing(self, sym):
        def fail(m, *a):
            raise MissingStandin(f"import {sym} has no stand-in (tests/emu/darwin.py)")
        return fail

    def address_of_import(self, sym):
        if sym in self.data_imports:
            return self.data_imports[sym]
        fn = self.standins.get(sym)
        if fn is None:
            self.missing.append(sym)
        return self.slot(sym, fn or self._missing(sym))

    def bound_address(self, sym):
        return self.slot_of[sym]

    def arg(self, i):
        return self.uc.reg_read(X[i])

    def stack_arg(self, i, sp=None):
        """The i-th 8-byte stack slot at the call (Apple arm64: variadic arguments there)."""
        return self.u64((sp if sp is not None else self.uc.reg_read(UC_ARM64_REG_SP)) + 8 * i)

    def _on_slot(self, uc, addr, size, _):
        key, fn = self.slot_fn.get(addr, (None, None))
        if fn is None:
            raise GuestFault(f"branch into the stand-in region at {addr:#x}, no cell there")
        self.imports_called.add(key)
        args = uc.reg_read_batch(X[:8])
        ret = uc.reg_read(UC_ARM64_REG_X30)
        r = fn(self, *args)
        if isinstance(r, Jump):
            uc.reg_write(UC_ARM64_REG_X16, r.target)
            return
        if r is not None:
            uc.reg_write(UC_ARM64_REG_X0, r & (2**64 - 1))
        uc.reg_write(UC_ARM64_REG_X16, ret)

    def _on_fault(self, uc, access, addr, size, value, _):
        from unicorn.arm64_const import UC_ARM64_REG_PC
        self.fault = f"invalid memory access (type {access}) at {addr:#x}, pc {uc.reg_read(UC_ARM64_REG_PC):#x}"
        return False

    def _on_block(self, uc, addr, size, _):
        self.blocks.add(addr - self.base)
        REACHED.setdefault(self.img.key, set()).add(addr - self.base)

    # ---- images that call (their pages hold the stop addresses) ----
    def image(self, name, path):
        if name not in self.images:
            self.images[name] = (IMAGES + 0x1000 * len(self.images), path)
            self.uc.mem_write(self.images[name][0], BR_X16 * (0x1000 // 4))
            for hook in getattr(self, "image_added_hooks", []):
                hook(self.images[name][0])  # dyld's add-image notice, as the image appears
        return self.images[name][0]

    def image_at(self, addr):
        if self.span[0] <= addr < self.span[1]:
            return self.path, self.span[0]
        li = self.loaded_at(addr)
        if li:
            return li.path, li.span[0]
        for name, (a, path) in self.images.items():
            if a <= addr < a + 0x1000 or self.slot_image.get(addr) == name:
                return path, a
        return None, 0

    # ---- calls ----
    def call(self, fn, *args, image="probe", sp_args=(), site=0):
        """Calls guest code at fn with integer args; returns x0. Nests when called from a
        stand-in; the return address lies in the calling image's page."""
        uc = self.uc
        # the return address: one per nesting level, and per call site the caller names (site)
        stop = self.image(image, self.images.get(image, (0, f"/usr/local/bin/{image}"))[1]) + 4 * self.depth + 0x100 * site
        saved = uc.context_save() if self.depth else None
        sp = uc.reg_read(UC_ARM64_REG_SP) if self.depth else STACK + STACK_SIZE - 0x100
        sp = (sp - 0x400) & ~0xF
        if sp_args:
            sp -= 8 * len(sp_args) + (8 * len(sp_args)) % 16
            for i, v in enumerate(sp_args):
                self.put64(sp + 8 * i, v)
        for i, v in enumerate(args):
            uc.reg_write(X[i], v & (2**64 - 1))
        uc.reg_write(UC_ARM64_REG_SP, sp)
        uc.reg_write(UC_ARM64_REG_X30, stop)
        if not self.depth:
            self.fault = None
        self.depth += 1
        try:
            uc.emu_start(fn, stop)
        except Exception as e:
            if self.fault:
                raise GuestFault(self.fault) from e
            raise
        finally:
            self.depth -= 1
        result = uc.reg_read(UC_ARM64_REG_X0)
        if saved is not None:
            uc.context_restore(saved)
        return result

    # ---- loading ----
    def map(self):
        img = self.img
        self.protect_later = []
        for s in img.segments:
            if s.name == "__LINKEDIT" or s.virtual_size == 0:
                continue
            size = (s.virtual_size + 0xFFF) & ~0xFFF  # Unicorn maps 4 KB pages; arm64 segments are 16 KB aligned
            self.uc.mem_map(self.base + s.virtual_address, size, UC_PROT_ALL)
            data = img.slice_bytes[s.file_offset:s.file_offset + s.file_size]
            self.write(self.base + s.virtual_address, data)
            prot = _prot(s.init_protection)
            # dyld: __DATA_CONST (SG_READ_ONLY, 0x10) is writable while fixups are applied,
            # read-only after (dyld: Loader::makeSegmentsReadOnly)
            if s.name == "__DATA_CONST" or int(s.flags) & 0x10:
                prot = UC_PROT_READ
            self.protect_later.append((self.base + s.virtual_address, size, prot, s.name))
        self.segment_prots = {name: prot for _, _, prot, name in self.protect_later}

    def fixups(self):
        img = self.img
        for a in img.rebases():
            self.put64(self.base + a, self.u64(self.base + a) + self.base)
        if img.bin.has_dyld_chained_fixups:
            self.chained_fixups()
        for cls, a, sym, weak, addend, off in img.binds():
            if cls == "LAZY" and self.lazy:
                continue  # __la_symbol_ptr keeps its rebased __stub_helper entry
            self.bind(a, sym, weak, addend)
        # the lazy binder: __stub_helper's header loads it from the GOT (dyld_stub_binder)
        for p_addr, size, prot, name in self.protect_later:
            self.uc.mem_protect(p_addr, size, prot)

    def bind(self, a, sym, weak, addend=0):
        if weak and sym in self.absent:
            value = 0
        elif sym == "dyld_stub_binder":
            value = self.slot("dyld_stub_binder", self._binder)
        else:
            value = self.address_of_import(sym) + addend
        self.put64(self.base + a, value)
        self.bound[a] = sym

    def _binder(self, m, *_):
        """A stand-in for dyld_stub_binder (dyld: dyld_stub_binder.s). __stub_helper pushed the
        lazy bind offset and &dyld_private (stp x16, x17, [sp, #-16]!); the binder resolves the
        symbol, stores it in __la_symbol_ptr, pops both words and jumps to it with the caller's
        arguments untouched."""
        sp = self.uc.reg_read(UC_ARM64_REG_SP)
        off = self.u64(sp) & 0xFFFFFFFF
        li = self.loaded_at(self.u64(sp + 8))  # &dyld_private of the image whose stub called
        if li:
            addr, sym, weak, ordinal = li.img.lazy_bind_full(off)
            self.bind_in(li, addr, sym, weak, 0, ordinal)
            self.lazy_resolved.append(sym)
            self.uc.reg_write(UC_ARM64_REG_SP, sp + 16)
            target = self.u64(li.base + addr)
            if not target:
                raise GuestFault(f"{li.path}: call of the absent weak import {sym}")
            return Jump(target)
        addr, sym, weak = self.img.lazy_bind_at(off)
        target = 0 if weak and sym in self.absent else self.address_of_import(sym)
        self.put64(self.base + addr, target)
        self.lazy_resolved.append(sym)
        self.uc.reg_write(UC_ARM64_REG_SP, sp + 16)
        if not target:
            raise GuestFault(f"call of the absent weak import {sym}")
        return Jump(target)

    def chained_fixups(self):
        """DYLD_CHAINED_PTR_64 and DYLD_CHAINED_PTR_64_OFFSET (dyld: mach-o/fixup-chains.h,
        dyld_chained_ptr_64_rebase / _bind): each pointer holds its own next, so a chain is
        walked from each page's start."""
        cf = self.img.bin.dyld_chained_fixups
        apply_chained(self, self.img.slice_bytes[cf.data_offset:cf.data_offset + cf.data_size])

    def load(self, absent=(), chained=None):
        """Maps and fixes up the image. chained: (blob, {address: raw pointer}) of
        craft_chained, applied instead of the file's opcodes (the same fixups, in the
        LC_DYLD_CHAINED_FIXUPS form that newer linkers write)."""
        self.absent = set(absent)
        self.map()
        if chained:
            blob, raw = chained
            for a, v in raw.items():
                self.put64(self.base + a, v)
            apply_chained(self, blob)
            for p_addr, size, prot, name in self.protect_later:
                self.uc.mem_protect(p_addr, size, prot)
        else:
            self.fixups()
        return self

    def initializers(self):
        sec = self.img.section("__DATA_CONST", "__mod_init_func") or self.img.section("__DATA", "__mod_init_func")
        if not sec:
            return []
        return [self.u64(self.base + sec.virtual_address + 8 * i) for i in range(sec.size // 8)]

    def run_initializers(self, argv, envp_addr, apple):
        """dyld calls each initializer as (argc, argv, envp, apple, &programVars)
        (dyld: ImageLoaderMachO::doModInitFunctions)."""
        argv_a = self.new_array(argv)
        apple_a = self.new_array(apple)
        vars_a = self.alloc(40, 8)
        for f in self.initializers():
            self.call(f, len(argv), argv_a, envp_addr, apple_a, vars_a, image="dyld")

    def interpose_table(self):
        """[(replacement, original symbol or None)] from __DATA,__interpose: each entry is two
        pointers, the replacement (rebased) and the original (bound)."""
        sec = self.img.section("__DATA", "__interpose")
        out = []
        for i in range(sec.size // 16):
            a = sec.virtual_address + 16 * i
            out.append((self.u64(self.base + a), self.bound.get(a + 8)))
        return out

    def interposer(self, sym):
        for rep, orig in self.interpose_table():
            if orig == sym:
                return rep
        return None

    def coverage(self):
        return coverage_table(self.img, self.blocks)


class Jump:
    def __init__(self, target):
        self.target = target


def static_blocks(img, start, end):
    """The basic-block leaders of [start, end) by Capstone: the start, each branch target inside
    and each instruction after a branch, call or return."""
    import capstone
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    md.detail = True
    text = img.section("__TEXT", "__text")
    off = text.offset + (start - text.virtual_address)
    code = img.slice_bytes[off:off + (end - start)]
    leaders = {start}
    for ins in md.disasm(code, start):
        g = set(ins.groups)
        if g & {capstone.CS_GRP_JUMP, capstone.CS_GRP_CALL, capstone.CS_GRP_RET, capstone.CS_GRP_BRANCH_RELATIVE}:
            leaders.add(ins.address + ins.size)
            for op in ins.operands:
                if op.type == capstone.arm64.ARM64_OP_IMM and start <= op.imm < end and g & {capstone.CS_GRP_JUMP}:
                    leaders.add(op.imm)
    return {a for a in leaders if a < end}


def coverage_table(img, blocks):
    """[(name, start, size, static blocks, blocks reached)] per function of LC_FUNCTION_STARTS,
    named by the slice's symbols."""
    starts = sorted(img.function_starts())
    names = img.symbols()
    _, hi = img.text_range()
    rows = []
    for s, e in zip(starts, starts[1:] + [hi]):
        reached = {b for b in blocks if s <= b < e}
        leaders = static_blocks(img, s, e)
        rows.append((names.get(s, f"func_{s:#x}"), s, e - s, len(leaders), len(reached & leaders) or (1 if reached else 0)))
    return rows
