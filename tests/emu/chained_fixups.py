"""Chained fixups (dyld: mach-o/fixup-chains.h), the form of rebases and binds of images linked for
macOS 12 and later: the imports table of an LC_DYLD_CHAINED_FIXUPS payload, the walk of every
chain over an image (DYLD_CHAINED_PTR_64 and _64_OFFSET), and a payload crafted from an image's
opcodes, so both forms load the same library. machoemu.py applies them and re-exports them."""
import struct

PAGE = 0x4000  # the crafted payload's page size (16 KB, Apple silicon's)


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
