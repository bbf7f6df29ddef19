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
"""
import struct

import lief
from unicorn import (UC_ARCH_ARM64, UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_MEM_INVALID, UC_MODE_ARM,
                     UC_PROT_ALL, UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE, Uc, UcError)
from unicorn.arm64_const import (UC_ARM64_REG_SP, UC_ARM64_REG_X0, UC_ARM64_REG_X16, UC_ARM64_REG_X30,
                                 UC_CPU_ARM64_MAX)

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
PAGE = 0x4000


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


def _uleb(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def _slice(raw, cputype):
    """The bytes of one slice: the whole file when thin, else the fat_arch entry's range
    (<mach-o/fat.h>: big-endian fat_header, then fat_arch {cputype, cpusubtype, offset, size, align})."""
    if struct.unpack_from(">I", raw, 0)[0] != 0xCAFEBABE:
        return raw
    n = struct.unpack_from(">I", raw, 4)[0]
    for i in range(n):
        ct, _, off, size, _ = struct.unpack_from(">iiIII", raw, 8 + 20 * i)
        if ct == cputype:
            return raw[off:off + size]
    raise ValueError(f"no fat_arch for cpu type {cputype:#x}")


class Image:
    """The arm64 slice of a Mach-O file, as LIEF reads it."""

    def __init__(self, binary, raw, slice_bytes):
        self.bin = binary
        self.raw = raw
        self.slice_bytes = slice_bytes
        import hashlib
        self.key = hashlib.sha256(slice_bytes).hexdigest()

    @classmethod
    def load(cls, src, cpu="ARM64"):
        raw = src if isinstance(src, (bytes, bytearray)) else open(src, "rb").read()
        fat = lief.MachO.parse(list(raw))
        if fat is None:
            raise ValueError(f"{src if isinstance(src, str) else 'input'}: not a Mach-O file LIEF reads")
        want = getattr(lief.MachO.Header.CPU_TYPE, cpu)
        raw = bytes(raw)
        for i in range(fat.size):
            b = fat.at(i)
            if b.header.cpu_type == want:
                img = cls(b, raw, _slice(raw, int(b.header.cpu_type.value)))
                img.fat = fat  # the slice's Binary lives as long as LIEF's FatBinary
                return img
        raise ValueError(f"no {cpu} slice")

    @property
    def segments(self):
        return [s for s in self.bin.segments if s.name != "__PAGEZERO"]

    def section(self, seg, name):
        for s in self.bin.sections:
            if s.segment_name == seg and s.name == name:
                return s
        return None

    def symbols(self):
        """{address: name} of the defined symbols (the slice keeps its local names)."""
        out = {}
        for s in self.bin.symbols:
            if s.value and s.name:
                out.setdefault(s.value, s.name)
        return out

    def function_starts(self):
        fs = self.bin.function_starts
        return list(fs.functions) if fs else []

    def text_range(self):
        t = self.section("__TEXT", "__text")
        return t.virtual_address, t.virtual_address + t.size

    def rebases(self):
        """Addresses (image-relative) that hold an unslid pointer: the opcode rebases, or the
        chained-fixup rebases when the file has chained fixups."""
        if self.bin.has_dyld_chained_fixups:
            return []
        return [r.address for r in self.bin.relocations if str(r.origin).endswith("DYLDINFO")]

    def binds(self):
        """(class, address, symbol, weak_import, addend, lazy offset) for each bind."""
        out = []
        if not self.bin.has_dyld_info:
            return out
        for b in self.bin.dyld_info.bindings:
            cls = str(b.binding_class).rsplit(".", 1)[-1]
            out.append((cls, b.address, b.symbol.name if b.has_symbol else None, bool(b.weak_import), b.addend,
                        b.original_offset))
        return out

    def binds_with_ordinals(self):
        """(class, address, symbol, weak_import, addend, library ordinal) for each bind."""
        if not self.bin.has_dyld_info:
            return []
        return [(str(b.binding_class).rsplit(".", 1)[-1], b.address, b.symbol.name if b.has_symbol else None,
                 bool(b.weak_import), b.addend, b.library_ordinal) for b in self.bin.dyld_info.bindings]

    def dependencies(self):
        """The install names of LC_LOAD_DYLIB, _WEAK_, _REEXPORT_ and _LAZY_ in order: a bind's
        library ordinal n names the n-th (two-level namespace; LC_ID_DYLIB is not one)."""
        return [lib.name for lib in self.bin.libraries if "ID_DYLIB" not in str(lib.command)]

    def install_name(self):
        ids = [lib.name for lib in self.bin.libraries if "ID_DYLIB" in str(lib.command)]
        return ids[0] if ids else None

    def lazy_bind_at(self, off):
        """(address, symbol, weak) of one lazy bind (see lazy_bind_full)."""
        return self.lazy_bind_full(off)[:3]

    def lazy_bind_full(self, off):
        """Decodes one lazy bind's opcodes at offset off of the lazy bind stream (dyld:
        ImageLoaderMachOCompressed::doBindFastLazySymbol reads the same opcodes): (address,
        symbol, weak, library ordinal)."""
        di = self.bin.dyld_info
        b = bytes(di.lazy_bind_opcodes)
        seg = self.bin.segments
        i, name, addr, weak, ordinal = off, None, None, False, 0
        while i < len(b):
            op, imm = b[i] & 0xF0, b[i] & 0x0F
            i += 1
            if op == 0x00:
                break
            elif op == 0x10:
                ordinal = imm  # SET_DYLIB_ORDINAL_IMM
            elif op == 0x20:
                ordinal, i = _uleb(b, i)
            elif op == 0x30:
                ordinal = imm - 16 if imm else 0  # SET_DYLIB_SPECIAL_IMM: 0, -1, -2, -3
            elif op == 0x40:
                weak = bool(imm & 1)
                e = b.index(0, i)
                name = b[i:e].decode()
                i = e + 1
            elif op == 0x70:
                o, i = _uleb(b, i)
                addr = seg[imm].virtual_address + o
            elif op == 0x90:
                return addr, name, weak, ordinal
            else:
                raise ValueError(f"lazy bind opcode {op:#x} at {i - 1}")
        raise ValueError(f"no lazy bind at offset {off}")


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
        """Maps and fixes up img as path (dlopen's first half); initializers run on start_image."""
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


def chained_imports(blob):
    """[(name, weak, library ordinal, addend)] of an LC_DYLD_CHAINED_FIXUPS payload's imports
    (dyld: mach-o/fixup-chains.h): DYLD_CHAINED_IMPORT (1: lib_ordinal 8 bits, weak 1,
    name_offset 23), DYLD_CHAINED_IMPORT_ADDEND (2: the same and an int32 addend) and
    DYLD_CHAINED_IMPORT_ADDEND64 (3: lib_ordinal 16, weak 1, 15 reserved, name_offset 32, a
    uint64 addend). Ordinals are signed (-1 the main executable, -2 flat, -3 weak lookup)."""
    (version, starts_off, imports_off, symbols_off, imports_count, imports_format,
     symbols_format) = struct.unpack_from("<7I", blob, 0)
    if imports_format not in (1, 2, 3):
        raise ValueError(f"chained imports format {imports_format} (DYLD_CHAINED_IMPORT 1, _ADDEND 2, _ADDEND64 3)")
    if symbols_format != 0:
        raise ValueError(f"chained symbols format {symbols_format} (only uncompressed, 0)")
    out = []
    for i in range(imports_count):
        if imports_format == 3:
            v, name_off, addend = struct.unpack_from("<IIQ", blob, imports_off + 16 * i)
            ordinal, weak = v & 0xFFFF, (v >> 16) & 1
            ordinal = ordinal - 0x10000 if ordinal >= 0xFFF0 else ordinal
        else:
            size = 4 if imports_format == 1 else 8
            v = struct.unpack_from("<I", blob, imports_off + size * i)[0]
            addend = struct.unpack_from("<i", blob, imports_off + size * i + 4)[0] if imports_format == 2 else 0
            ordinal, weak, name_off = v & 0xFF, (v >> 8) & 1, v >> 9
            ordinal = ordinal - 0x100 if ordinal >= 0xF0 else ordinal
        e = blob.index(0, symbols_off + name_off)
        out.append((blob[symbols_off + name_off:e].decode(), bool(weak), ordinal, addend))
    return out


def apply_chained(m, blob, li=None):
    """Walks every chain of the payload over the image li (the library when None): each
    pointer holds its own next (stride 4 bytes for formats 2 and 6)."""
    starts_off = struct.unpack_from("<I", blob, 4)[0]
    imports = chained_imports(blob)
    img, base = (li.img, li.base) if li else (m.img, m.base)
    seg_count = struct.unpack_from("<I", blob, starts_off)[0]
    segs = [s for s in img.bin.segments]
    for si in range(seg_count):
        so = struct.unpack_from("<I", blob, starts_off + 4 + 4 * si)[0]
        if not so:
            continue
        at = starts_off + so
        (sz, page_size, fmt, seg_offset, max_valid, page_count) = struct.unpack_from("<IHHQIH", blob, at)
        if fmt not in (2, 6):
            raise ValueError(f"chained pointer format {fmt} (DYLD_CHAINED_PTR_64 is 2, _64_OFFSET is 6)")
        for p in range(page_count):
            start = struct.unpack_from("<H", blob, at + 22 + 2 * p)[0]
            if start == 0xFFFF:
                continue
            a = segs[si].virtual_address + p * page_size + start
            while True:
                raw = m.u64(base + a)
                is_bind, nxt = raw >> 63, (raw >> 51) & 0xFFF
                if is_bind:
                    ordinal, addend = raw & 0xFFFFFF, (raw >> 24) & 0xFF
                    name, weak, lib, addend0 = imports[ordinal]
                    if li:
                        m.bind_in(li, a, name, weak, addend + addend0, lib)
                    else:
                        m.bind(a, name, weak, addend + addend0)
                else:
                    target, high8 = raw & 0xFFFFFFFFF, (raw >> 36) & 0xFF
                    # _64: target is a vmaddr (unslid); _64_OFFSET: an offset from the image's
                    # first segment (the same for an image linked at 0)
                    lo = min(s.virtual_address for s in segs if s.name != "__PAGEZERO")
                    v = (target if fmt == 2 else target + lo) + base
                    m.put64(base + a, v | (high8 << 56))
                m.chained_count = getattr(m, "chained_count", 0) + 1
                if not nxt:
                    break
                a += 4 * nxt


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


def craft_chained(img, fmt):
    """The image's rebases and binds (lazy ones too: chained fixups bind eagerly) as an
    LC_DYLD_CHAINED_FIXUPS payload (dyld: mach-o/fixup-chains.h): dyld_chained_fixups_header,
    dyld_chained_starts_in_image, one dyld_chained_starts_in_segment per segment with fixups
    (16 KB pages), DYLD_CHAINED_IMPORT entries and their names; and the raw 8-byte pointers
    (DYLD_CHAINED_PTR_64 fmt 2: rebase targets as vmaddrs; _64_OFFSET fmt 6: as offsets from the
    image's start, the same for a dylib based at 0)."""
    fix = {}
    for a in img.rebases():
        sec = next(s for s in img.segments if s.virtual_address <= a < s.virtual_address + s.virtual_size)
        target = struct.unpack_from("<Q", img.slice_bytes, sec.file_offset + a - sec.virtual_address)[0]
        fix[a] = ("rebase", target)
    names, ordinals = [], {}
    for cls, a, sym, weak, addend, _ in img.binds():
        if sym not in ordinals:
            ordinals[sym] = len(names)
            names.append((sym, weak))
        fix[a] = ("bind", ordinals[sym], addend)
    segs = list(img.bin.segments)
    pages = {}
    for a in sorted(fix):
        si = next(i for i, s in enumerate(segs) if s.virtual_address <= a < s.virtual_address + max(s.virtual_size, 1))
        pages.setdefault(si, {}).setdefault((a - segs[si].virtual_address) // PAGE, []).append(a)
    raw = {}
    for si, by_page in pages.items():
        for page, addrs in by_page.items():
            for i, a in enumerate(addrs):
                nxt = (addrs[i + 1] - a) // 4 if i + 1 < len(addrs) else 0
                assert nxt < 4096
                f = fix[a]
                if f[0] == "rebase":
                    raw[a] = (f[1] & 0xFFFFFFFFF) | (nxt << 51)
                else:
                    raw[a] = (1 << 63) | f[1] | ((f[2] & 0xFF) << 24) | (nxt << 51)
    # the payload
    seg_infos = []
    for si in range(len(segs)):
        if si not in pages:
            seg_infos.append(None)
            continue
        n_pages = (segs[si].virtual_size + PAGE - 1) // PAGE
        starts = [0xFFFF] * n_pages
        for page, addrs in pages[si].items():
            starts[page] = addrs[0] - segs[si].virtual_address - page * PAGE
        body = struct.pack("<IHHQIH", 22 + 2 * n_pages, PAGE, fmt, segs[si].virtual_address, 0, n_pages) + \
            struct.pack(f"<{n_pages}H", *starts)
        seg_infos.append(body + b"\0" * (-len(body) % 4))
    image_starts = bytearray(struct.pack("<I", len(segs)) + b"\0" * 4 * len(segs))
    for si, body in enumerate(seg_infos):
        if body is not None:
            struct.pack_into("<I", image_starts, 4 + 4 * si, len(image_starts))
            image_starts += body
    symbols = bytearray(b"\0")
    imports = bytearray()
    for sym, weak in names:
        imports += struct.pack("<I", 1 | (int(weak) << 8) | (len(symbols) << 9))
        symbols += sym.encode() + b"\0"
    starts_off = 32
    imports_off = starts_off + len(image_starts)
    symbols_off = imports_off + len(imports)
    header = struct.pack("<7I", 0, starts_off, imports_off, symbols_off, len(names), 1, 0) + b"\0" * 4
    return bytes(header + image_starts + imports + symbols), raw
