"""Planted mutants: copies of the shipped universal file with one defect each in its arm64
slice, found by what LIEF and Capstone say about the slice (never by fixed offsets), so that the
suite can show it fails on each. Each returns (bytes of the mutated file, what was changed)."""
import struct

import capstone

from machoemu import Image


def _slice_offset(raw, img):
    """Where the slice starts in the file (<mach-o/fat.h> fat_arch.offset); 0 when thin."""
    if struct.unpack_from(">I", raw, 0)[0] != 0xCAFEBABE:
        return 0
    for i in range(struct.unpack_from(">I", raw, 4)[0]):
        ct, _, off, _, _ = struct.unpack_from(">iiIII", raw, 8 + 20 * i)
        if ct == int(img.bin.header.cpu_type.value):
            return off
    raise ValueError("slice not in the fat header")


def _patch(raw, at, new):
    b = bytearray(raw)
    b[at:at + len(new)] = new
    return bytes(b)


def _chip_rows(img, generation):
    """(offset in the slice of its family field, family) of each M<generation> row of the chip
    table (_chip_rows: {char series; int generation; const char *variant; int family; const
    char *source}, 32 bytes a row)."""
    base = {v: k for k, v in img.symbols().items()}["_chip_rows"]
    sec = next(s for s in img.bin.sections if s.virtual_address <= base < s.virtual_address + s.size)
    off = sec.offset + (base - sec.virtual_address)
    for row in range(32):
        series, gen = struct.unpack_from("<Bxxxi", img.slice_bytes, off + 32 * row)
        if chr(series) not in "MA":
            return  # past the table's last row
        if chr(series) == "M" and gen == generation:
            yield off + 32 * row + 16, struct.unpack_from("<i", img.slice_bytes, off + 32 * row + 16)[0]


def chip_table_byte(raw, img):
    """The family of the M2 row of the chip table one higher."""
    for fam_at, fam in _chip_rows(img, 2):
        return (_patch(raw, _slice_offset(raw, img) + fam_at, struct.pack("<i", fam + 1)),
                f"chip row M2: family {fam} -> {fam + 1}")
    raise ValueError("no M2 row in _chip_rows")


def m1_denies_apple7(raw, img):
    """Every M1 row of the chip table answers Apple6 at most (family 1006 for 1007): what a
    wrong row would cost, the SIMD-group paths of every ggml client on an M1 host."""
    rows = list(_chip_rows(img, 1))
    if not rows:
        raise ValueError("no M1 row in _chip_rows")
    for fam_at, fam in rows:
        raw = _patch(raw, _slice_offset(raw, img) + fam_at, struct.pack("<i", min(fam, 1006)))
    return raw, f"{len(rows)} chip rows M1: family {rows[0][1]} -> 1006"


def _flip(code, i):
    """The word that inverts branch code[i]: cbz <-> cbnz, b.ne <-> b.eq."""
    c = code[i]
    return struct.pack("<I", int.from_bytes(c.bytes, "little") ^ (1 << 24 if c.mnemonic in ("cbz", "cbnz") else 1))


def _table_branches(code, table=None):
    """Indexes of the branches on a byte of the family table: adrp + add giving its address (or
    adrp + ldr, the word that points to it), an ldrb, then cbz/cbnz (the slow path) or cmp #1 and
    b.ne/b.eq (the inline one); and that address."""
    out = []
    for i in range(len(code) - 4):
        adrp, add, ldrb = code[i:i + 3]
        if (adrp.mnemonic, ldrb.mnemonic) != ("adrp", "ldrb") or add.mnemonic not in ("add", "ldr"):
            continue
        at = adrp.operands[1].imm + (add.operands[2].imm if add.mnemonic == "add" else add.operands[1].mem.disp)
        if table not in (None, at):
            continue
        if code[i + 3].mnemonic in ("cbz", "cbnz"):
            out.append((i + 3, at))
        elif code[i + 3].mnemonic == "cmp" and code[i + 3].op_str.endswith("#1") and code[i + 4].mnemonic in ("b.ne", "b.eq"):
            out.append((i + 4, at))
    return out


def _text(img, start=None, end=None):
    t = img.section("__TEXT", "__text")
    a, e = start or t.virtual_address, end or t.virtual_address + t.size
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    md.detail = True  # the operands of adrp and add
    return t, list(md.disasm(img.slice_bytes[t.offset + a - t.virtual_address:t.offset + e - t.virtual_address], a))


def supports_family_return(raw, img):
    """The profile's answer in the first class entry's supportsFamily: inverted: the in-line
    branch on the family table's byte (b.ne <-> b.eq), so a family not claimed gets YES."""
    a = {v: k for k, v in img.symbols().items()}["_family_0"]
    starts = sorted(img.function_starts())
    t, code = _text(img, a, starts[starts.index(a) + 1])
    i, _ = _table_branches(code)[0]
    at = t.offset + code[i].address - t.virtual_address
    return _patch(raw, _slice_offset(raw, img) + at, _flip(code, i)), f"{code[i].mnemonic} {code[i].op_str} at {code[i].address:#x} inverted"


def dropped_rebase(raw, img):
    """One rebase fewer: the first REBASE_OPCODE_DO_REBASE_IMM_TIMES(1) (0x51) becomes
    REBASE_OPCODE_ADD_ADDR_IMM_SCALED(1) (0x41), which moves on by one pointer as the rebase
    would, so exactly that pointer keeps its unslid value (<mach-o/loader.h> rebase opcodes)."""
    di = img.bin.dyld_info
    ops = bytes(di.rebase_opcodes)
    start = di.rebase[0]
    i = 0
    while i < len(ops):
        op, imm = ops[i] & 0xF0, ops[i] & 0x0F
        if op == 0x50 and imm == 1:
            return (_patch(raw, _slice_offset(raw, img) + start + i, b"\x41"),
                    f"rebase opcode {i}: DO_REBASE_IMM_TIMES 1 -> ADD_ADDR_IMM_SCALED 1")
        nxt = i + 1
        for _ in range({0x20: 1, 0x30: 1, 0x60: 1, 0x70: 1, 0x80: 2}.get(op, 0)):  # ULEB operands
            while ops[nxt] & 0x80:
                nxt += 1
            nxt += 1
        i = nxt
    raise ValueError("no single rebase to drop")


def swapped_interpose(raw, img):
    """The replacements of two __DATA,__interpose entries (execv and execvp) swapped."""
    sec = img.section("__DATA", "__interpose")
    at = sec.offset
    b = img.slice_bytes
    e4, e5 = b[at + 16 * 4:at + 16 * 4 + 8], b[at + 16 * 5:at + 16 * 5 + 8]
    so = _slice_offset(raw, img)
    raw = _patch(raw, so + at + 16 * 4, e5)
    return _patch(raw, so + at + 16 * 5, e4), "interpose entries 4 (execv) and 5 (execvp): replacements swapped"


def family_table_branches(raw, img):
    """Every branch on the family table's byte inverted (cbz <-> cbnz, b.ne <-> b.eq), in line in
    every class entry's supportsFamily: and out of line: a claimed family gets the stock answer
    wherever supportsFamily: is answered from, one not claimed YES."""
    a0 = {v: k for k, v in img.symbols().items()}["_family_0"]
    starts = sorted(img.function_starts())
    _, first = _text(img, a0, starts[starts.index(a0) + 1])
    table = _table_branches(first)[0][1]
    t, code = _text(img)
    so, hits = _slice_offset(raw, img), 0
    for i, _ in _table_branches(code, table):
        raw, hits = _patch(raw, so + t.offset + code[i].address - t.virtual_address, _flip(code, i)), hits + 1
    assert hits >= 33, hits  # one in line per class entry, and the out-of-line path
    return raw, f"{hits} branches on the family table at {table:#x} inverted"


MUTANTS = {"chip table byte": chip_table_byte, "supportsFamily: return": supports_family_return,
           "dropped rebase": dropped_rebase, "swapped interpose entry": swapped_interpose}


# mutants the real clients' cases use (tests/emu/test_clients.py), beside the slice's own four
EXTRA = {"family table branches": family_table_branches, "M1 row denies Apple7": m1_denies_apple7}


def make(name, raw):
    img = Image.load(raw)
    data, what = (MUTANTS.get(name) or EXTRA[name])(raw, img)
    return Image.load(data), what
