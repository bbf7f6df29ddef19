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


def supports_family_return(raw, img):
    """The profile's answer in the first class entry's supportsFamily: inverted: the branch on
    the family table's byte (cbz <-> cbnz), so a claimed family gets the stock answer and an
    unclaimed one YES."""
    names = {v: k for k, v in img.symbols().items()}
    a = names["_family_s0"]
    starts = sorted(img.function_starts())
    e = starts[starts.index(a) + 1]
    t = img.section("__TEXT", "__text")
    off = t.offset + a - t.virtual_address
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    code = list(md.disasm(img.slice_bytes[off:off + e - a], a))
    i = next(c for p, c in zip(code, code[1:]) if p.mnemonic == "ldrb" and c.mnemonic in ("cbz", "cbnz"))
    at = t.offset + i.address - t.virtual_address
    word = struct.unpack_from("<I", img.slice_bytes, at)[0] ^ (1 << 24)  # CBZ <-> CBNZ
    return _patch(raw, _slice_offset(raw, img) + at, struct.pack("<I", word)), f"{i.mnemonic} {i.op_str} at {i.address:#x} inverted"


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
    """Every branch on the family table's byte inverted (cbz <-> cbnz), in the fast and the slow
    path of every class entry: a claimed family gets the stock answer wherever supportsFamily:
    is answered from (the real clients' call sites are many, so they take the slow path)."""
    names = {v: k for k, v in img.symbols().items()}
    t = img.section("__TEXT", "__text")
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    md.detail = True  # the operands of adrp and add
    code = list(md.disasm(img.slice_bytes[t.offset:t.offset + t.size], t.virtual_address))
    def table_of(window):  # adrp + add giving the address the ldrb reads from
        adrp, add, ldrb, br = window
        if (adrp.mnemonic, add.mnemonic, ldrb.mnemonic) != ("adrp", "add", "ldrb") or br.mnemonic not in ("cbz", "cbnz"):
            return None
        return adrp.operands[1].imm + add.operands[2].imm
    a0 = names["_family_a0"]
    at0 = next(i for i, c in enumerate(code) if c.address == a0)
    table = next(x for x in (table_of(code[i:i + 4]) for i in range(at0, at0 + 16)) if x)
    so, hits = _slice_offset(raw, img), 0
    for i in range(len(code) - 3):
        if table_of(code[i:i + 4]) == table:
            at = t.offset + code[i + 3].address - t.virtual_address
            word = struct.unpack_from("<I", img.slice_bytes, at)[0] ^ (1 << 24)  # CBZ <-> CBNZ
            raw, hits = _patch(raw, so + at, struct.pack("<I", word)), hits + 1
    assert hits >= 64, hits  # two replacements (scoped and all) per class entry at least
    return raw, f"{hits} branches on the family table at {table:#x} inverted"


MUTANTS = {"chip table byte": chip_table_byte, "supportsFamily: return": supports_family_return,
           "dropped rebase": dropped_rebase, "swapped interpose entry": swapped_interpose}


# mutants the real clients' cases use (tests/emu/test_clients.py), beside the slice's own four
EXTRA = {"family table branches": family_table_branches, "M1 row denies Apple7": m1_denies_apple7}


def make(name, raw):
    img = Image.load(raw)
    data, what = (MUTANTS.get(name) or EXTRA[name])(raw, img)
    return Image.load(data), what
