"""Writes small 64-bit Mach-O files with embedded code signatures from scratch, an
implementation independent of the C reader, to test it: CodeDirectory flags, entitlements,
page hashes and special slots are all under the test's control."""
import hashlib
import struct

CPU_ARM64, CPU_X86_64 = 0x0100000C, 0x01000007
LC_SEGMENT_64, LC_CODE_SIGNATURE, LC_BUILD_VERSION, LC_LOAD_DYLIB = 0x19, 0x1D, 0x32, 0xC
LC_ENCRYPTION_INFO_64 = 0x2C
LC_SYMTAB, SG_READ_ONLY = 0x2, 0x10
CS_ADHOC, CS_RUNTIME, CS_REQUIRE_LV = 0x2, 0x10000, 0x2000
PAGE = 4096


def _pad8(b):
    return b + b"\0" * (-len(b) % 8)


def entitlements_xml(**ents):
    body = "".join(f"<key>{k}</key><{'true' if v else 'false'}/>" for k, v in ents.items())
    return ('<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>' + body + "</dict></plist>").encode()


def build(cputype=CPU_ARM64, cpusubtype=0, flags=CS_ADHOC, entitlements=None, libs=(),
          methnames=(), cstrings=(), minos=(13, 0), signed=True, platform=0, ident=b"demo", restrict=False,
          cryptid=None, sdk=None, data_const=None, imports=(), headerpad=0, filetype=6, text_prot=5,
          linkedit_prot=None):
    """Returns the bytes of a thin MH_DYLIB; its signature hashes are correct. restrict adds a
    __RESTRICT segment with an empty __restrict section; cryptid an LC_ENCRYPTION_INFO_64. sdk:
    (major, minor) in LC_BUILD_VERSION (else 0); data_const: the flags of a __DATA_CONST segment
    (None: no such segment); imports: (name, library ordinal) undefined symbols in an LC_SYMTAB;
    headerpad: zero bytes between the load commands and the first section; filetype: 6 (MH_DYLIB)
    or 2 (MH_EXECUTE, with MH_DYLDLINK); text_prot: __TEXT's initprot; linkedit_prot: the initprot
    of an empty __LINKEDIT segment (None: no such segment)."""
    strings = b"".join(s.encode() + b"\0" for s in methnames)
    cstr = b"".join(s.encode() + b"\0" for s in cstrings)
    cmds = []
    # one __TEXT segment with __objc_methname and __cstring sections; offsets patched below
    nsect = 2
    seg = bytearray(struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 72 + 80 * nsect, b"__TEXT", 0, 0, 0, 0, 5 | text_prot, text_prot, nsect, 0))
    seg += b"\0" * (80 * nsect)  # sections, filled in once the offsets are known
    cmds.append(seg)
    if data_const is not None:
        cmds.append(bytearray(struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 72, b"__DATA_CONST", 0x4000, 0x4000, 0, 0, 3, 3,
                                          0, data_const)))
    if linkedit_prot is not None:
        cmds.append(bytearray(struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 72, b"__LINKEDIT", 0x8000, 0x4000, 0, 0, 7,
                                          linkedit_prot, 0, 0)))
    sdk_v = sdk[0] << 16 | sdk[1] << 8 if sdk else 0
    cmds.append(bytearray(struct.pack("<IIIIII", LC_BUILD_VERSION, 24, 1, minos[0] << 16 | minos[1] << 8, sdk_v, 0)))
    if restrict:
        rseg = struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 72 + 80, b"__RESTRICT", 0, 0, 0, 0, 1, 1, 1, 0)
        rseg += struct.pack("<16s16sQQIIIIIIII", b"__restrict", b"__RESTRICT", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        cmds.append(bytearray(rseg))
    if cryptid is not None:
        cmds.append(bytearray(struct.pack("<IIIIII", LC_ENCRYPTION_INFO_64, 24, 0, 0, cryptid, 0)))
    for lib in libs:
        name = _pad8((lib if isinstance(lib, bytes) else lib.encode()) + b"\0")
        cmds.append(bytearray(struct.pack("<IIIIII", LC_LOAD_DYLIB, 24 + len(name), 24, 2, 0x10000, 0x10000) + name))
    symtab = None
    if imports:
        symtab = bytearray(struct.pack("<IIIIII", LC_SYMTAB, 24, 0, 0, 0, 0))
        cmds.append(symtab)
    if signed:
        cmds.append(bytearray(struct.pack("<IIII", LC_CODE_SIGNATURE, 16, 0, 0)))
    sizeofcmds = sum(len(c) for c in cmds)
    data_off = 32 + sizeofcmds + headerpad
    meth_off, cstr_off = data_off, data_off + len(strings)
    sects = b""
    for name, off, size in ((b"__objc_methname", meth_off, len(strings)), (b"__cstring", cstr_off, len(cstr))):
        sects += struct.pack("<16s16sQQIIIIIIII", name, b"__TEXT", off, size, off, 0, 0, 0, 0, 0, 0, 0)
    seg[72:] = sects
    body = strings + cstr
    if imports:
        body = _pad8(body)
        strtab = b"\0" + b"".join(n.encode() + b"\0" for n, _ in imports)
        nl, at = b"", 1
        for n, ordinal in imports:
            nl += struct.pack("<IBBHQ", at, 0x01, 0, ordinal << 8, 0)  # N_UNDF | N_EXT, two-level ordinal
            at += len(n) + 1
        struct.pack_into("<IIII", symtab, 8, data_off + len(body), len(imports), data_off + len(body) + len(nl), len(strtab))
        body += nl + strtab
    body = b"\0" * headerpad + body
    code = bytearray(struct.pack("<IIIIIIII", 0xFEEDFACF, cputype, cpusubtype, filetype, len(cmds), sizeofcmds,
                                    0x4 if filetype == 2 else 0, 0))
    for c in cmds:
        code += c
    code += body
    code += b"\0" * (-len(code) % 16)
    if not signed:
        return bytes(code)
    code_limit = len(code)
    # LC_CODE_SIGNATURE is last: point it at the end of the code, before hashing
    sig_cmd_at = 32 + sizeofcmds - 16
    blobs = []
    req = struct.pack(">III", 0xFADE0C01, 12, 0)
    blobs.append((2, req))
    ent_blob = None
    if entitlements is not None:
        ent_blob = struct.pack(">II", 0xFADE7171, 8 + len(entitlements)) + entitlements
        blobs.append((5, ent_blob))
    n_special = 5 if ent_blob else 2
    n_code = (code_limit + PAGE - 1) // PAGE
    ident_b = ident + b"\0"
    hdr_len = 88
    ident_off = hdr_len
    hash_off = ident_off + len(ident_b) + 32 * n_special
    cd_len = hash_off + 32 * n_code
    # the signature size must be known before hashing page 0 (it holds LC_CODE_SIGNATURE)
    sb_len = 12 + 8 * (1 + len(blobs)) + cd_len + sum(len(b) for _, b in blobs)
    struct.pack_into("<II", code, sig_cmd_at + 8, code_limit, sb_len)
    special = [b"\0" * 32] * n_special  # slot -1 .. -n_special
    special[2 - 1] = hashlib.sha256(req).digest()
    if ent_blob:
        special[5 - 1] = hashlib.sha256(ent_blob).digest()
    pages = b"".join(hashlib.sha256(bytes(code[i:i + PAGE])).digest() for i in range(0, code_limit, PAGE))
    cd = struct.pack(">IIIIIIIIIBBBBIIIIQQQQ", 0xFADE0C02, cd_len, 0x20400, flags, hash_off, ident_off, n_special,
                     n_code, code_limit, 32, 2, platform, 12, 0, 0, 0, 0, 0, 0, 0, 0)
    cd = cd[:hdr_len] + ident_b + b"".join(reversed(special)) + pages
    assert len(cd) == cd_len
    index, payload = b"", b""
    off = 12 + 8 * (1 + len(blobs))
    for typ, blob in [(0, cd)] + blobs:
        index += struct.pack(">II", typ, off + len(payload))
        payload += blob
    sb = struct.pack(">III", 0xFADE0CC0, sb_len, 1 + len(blobs)) + index + payload
    assert len(sb) == sb_len
    return bytes(code) + sb


def fat(*slices):
    """A universal file from thin slices (4 KiB-aligned)."""
    hdr = struct.pack(">II", 0xCAFEBABE, len(slices))
    off = 4096
    entries, body = b"", b""
    for s in slices:
        cputype, sub = struct.unpack_from("<II", s, 4)
        entries += struct.pack(">IIIII", cputype, sub, off + len(body), len(s), 12)
        body += s + b"\0" * (-len(s) % 4096)
    return hdr + entries + b"\0" * (off - len(hdr) - len(entries)) + body


def find_code_directory(data, slice_off=0):
    """Offset of the CodeDirectory's flags field in a thin slice at slice_off (for patching)."""
    ncmds, = struct.unpack_from("<I", data, slice_off + 16)
    pos = slice_off + 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, pos)
        if cmd == LC_CODE_SIGNATURE:
            dataoff, = struct.unpack_from("<I", data, pos + 8)
            sb = slice_off + dataoff
            count, = struct.unpack_from(">I", data, sb + 8)
            for i in range(count):
                typ, boff = struct.unpack_from(">II", data, sb + 12 + 8 * i)
                if typ == 0:
                    return sb + boff + 12
        pos += size
    raise ValueError("no code directory")


def _thin_signature(data, off, size, external):
    """Independent reading of one thin slice's embedded signature."""
    out = {"signed": False, "ok": False, "problems": []}
    ncmds, sizeofcmds = struct.unpack_from("<II", data, off + 16)
    pos, end = off + 32, off + 32 + sizeofcmds
    sig = None
    for _ in range(ncmds):
        cmd, csize = struct.unpack_from("<II", data, pos)
        if cmd == LC_CODE_SIGNATURE:
            sig = struct.unpack_from("<II", data, pos + 8)
        pos += csize
    assert pos <= end
    if not sig:
        return out
    out["signed"] = True
    dataoff, datasize = sig
    if dataoff + datasize > size:
        out["problems"].append("signature past the end")
        return out
    sb = off + dataoff
    magic, length, count = struct.unpack_from(">III", data, sb)
    if magic != 0xFADE0CC0:
        out["problems"].append("bad superblob magic")
        return out
    blobs = {}
    for i in range(count):
        typ, boff = struct.unpack_from(">II", data, sb + 12 + 8 * i)
        blen, = struct.unpack_from(">I", data, sb + boff + 4)
        blobs[typ] = data[sb + boff: sb + boff + blen]
    cd = blobs[0]
    (cmagic, clen, version, flags, hash_off, ident_off, n_special, n_code, code_limit, hash_size, hash_type, platform,
     page_log) = struct.unpack_from(">IIIIIIIIIBBBB", cd, 0)
    assert cmagic == 0xFADE0C02
    if version >= 0x20300 and clen >= 64:
        limit64, = struct.unpack_from(">Q", cd, 56)
        code_limit = limit64 or code_limit
    out.update(flags=flags, version=version, identifier=cd[ident_off:cd.index(b"\0", ident_off)].decode(),
               code_limit=code_limit, sig_off=dataoff, n_special=n_special)
    if version >= 0x20400:
        out["exec_seg"] = struct.unpack_from(">QQQ", cd, 64)
    if hash_type != 2 or hash_size != 32:
        out["problems"].append("not SHA-256")
        return out
    page = 1 << page_log
    if n_code != (code_limit + page - 1) // page:
        out["problems"].append("code slot count")
    for i in range(n_code):
        chunk = data[off + i * page: off + min((i + 1) * page, code_limit)]
        if hashlib.sha256(chunk).digest() != cd[hash_off + 32 * i: hash_off + 32 * (i + 1)]:
            out["problems"].append(f"page {i}")
            break
    for slot in range(1, n_special + 1):
        want = cd[hash_off - 32 * slot: hash_off - 32 * (slot - 1)]
        blob = blobs.get(slot, external.get(slot))
        got = hashlib.sha256(blob).digest() if blob is not None else b"\0" * 32
        if want != got:
            out["problems"].append(f"special slot {slot}")
    out["ok"] = not out["problems"]
    return out


def verify(data, external=None):
    """Every slice's signature, checked by this independent implementation: a list of dicts
    with signed, ok, flags, identifier, code_limit, sig_off, problems (and the slice offset).
    external: the bytes a special slot binds that are not in the signature (1: Info.plist, 3:
    CodeResources); such a slot must hash them, any other unbound slot must be zero."""
    external = external or {}
    magic, = struct.unpack_from(">I", data, 0)
    if magic in (0xCAFEBABE, 0xCAFEBABF):
        n, = struct.unpack_from(">I", data, 4)
        res = []
        for i in range(n):
            if magic == 0xCAFEBABE:
                _, _, off, size, _ = struct.unpack_from(">IIIII", data, 8 + 20 * i)
            else:
                _, _, off, size, _, _ = struct.unpack_from(">IIQQII", data, 8 + 32 * i)
            r = _thin_signature(data, off, size, external)
            r["slice_off"] = off
            res.append(r)
        return res
    r = _thin_signature(data, 0, len(data), external)
    r["slice_off"] = 0
    return [r]


def code_directories(data):
    """The CodeDirectory blob of every slice (the first one of each superblob), in slice order."""
    magic, = struct.unpack_from(">I", data, 0)
    slices = []
    if magic in (0xCAFEBABE, 0xCAFEBABF):
        n, = struct.unpack_from(">I", data, 4)
        for i in range(n):
            if magic == 0xCAFEBABE:
                cpu, sub, off, size, _ = struct.unpack_from(">IIIII", data, 8 + 20 * i)
            else:
                cpu, sub, off, size, _, _ = struct.unpack_from(">IIQQII", data, 8 + 32 * i)
            slices.append((cpu, sub, off))
    else:
        cpu, sub = struct.unpack_from("<II", data, 4)
        slices.append((cpu, sub, 0))
    out = []
    for cpu, sub, off in slices:
        ncmds, = struct.unpack_from("<I", data, off + 16)
        pos = off + 32
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<II", data, pos)
            if cmd == LC_CODE_SIGNATURE:
                dataoff, = struct.unpack_from("<I", data, pos + 8)
                sb = off + dataoff
                count, = struct.unpack_from(">I", data, sb + 8)
                for k in range(count):
                    typ, boff = struct.unpack_from(">II", data, sb + 12 + 8 * k)
                    if typ == 0:
                        blen, = struct.unpack_from(">I", data, sb + boff + 4)
                        out.append((cpu, sub, bytes(data[sb + boff: sb + boff + blen])))
                        break
            pos += size
    return out


def cdhash(data):
    """The cdhash a Mac on Apple silicon records for this file: SHA-256 of the CodeDirectory of
    the arm64e slice, else the arm64 one, else the first, cut to 20 bytes."""
    cds = code_directories(data)
    best = max(cds, key=lambda c: (2 if c[0] == CPU_ARM64 and c[1] & 0xFFFFFF == 2 else 1 if c[0] == CPU_ARM64 else 0))
    return hashlib.sha256(best[2]).digest()[:20]


def special_slot(data, slot, slice_index=0):
    """The hash in special slot `slot` of a slice's CodeDirectory (b"" when the slot is absent)."""
    cd = code_directories(data)[slice_index][2]
    hash_off, = struct.unpack_from(">I", cd, 16)
    n_special, = struct.unpack_from(">I", cd, 24)
    hash_size = cd[36]
    if slot > n_special:
        return b""
    return cd[hash_off - hash_size * slot: hash_off - hash_size * (slot - 1)]
