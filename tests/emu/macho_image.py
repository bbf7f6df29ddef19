"""One slice of a Mach-O file as LIEF reads it (an independent reader: the check does not trust the
project's own src/macho parser): the arm64 (or x86_64) slice of a thin or universal file, its
segments, sections, symbols, function starts, rebases, binds and lazy binds. The Machine of
machoemu.py maps and runs it; machoemu re-exports Image."""
import struct

import lief


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
