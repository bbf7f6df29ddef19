"""Writes small 64-bit Mach-O files with embedded code signatures from scratch, an
implementation independent of the C reader, to test it: CodeDirectory flags, entitlements,
page hashes and special slots are all under the test's control."""
import hashlib
import struct

CPU_ARM64, CPU_X86_64 = 0x0100000C, 0x01000007
LC_SEGMENT_64, LC_CODE_SIGNATURE, LC_BUILD_VERSION, LC_LOAD_DYLIB = 0x19, 0x1D, 0x32, 0xC
CS_ADHOC, CS_RUNTIME, CS_REQUIRE_LV = 0x2, 0x10000, 0x2000
PAGE = 4096


def _pad8(b):
    return b + b"\0" * (-len(b) % 8)


def entitlements_xml(**ents):
    body = "".join(f"<key>{k}</key><{'true' if v else 'false'}/>" for k, v in ents.items())
    return ('<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>' + body + "</dict></plist>").encode()


def build(cputype=CPU_ARM64, cpusubtype=0, flags=CS_ADHOC, entitlements=None, libs=(),
          methnames=(), cstrings=(), minos=(13, 0), signed=True, platform=0, ident=b"demo"):
    """Returns the bytes of a thin MH_DYLIB; its signature hashes are correct."""
    strings = b"".join(s.encode() + b"\0" for s in methnames)
    cstr = b"".join(s.encode() + b"\0" for s in cstrings)
    cmds = []
    # one __TEXT segment with __objc_methname and __cstring sections; offsets patched below
    nsect = 2
    seg = bytearray(struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 72 + 80 * nsect, b"__TEXT", 0, 0, 0, 0, 5, 5, nsect, 0))
    seg += b"\0" * (80 * nsect)  # sections, filled in once the offsets are known
    cmds.append(seg)
    cmds.append(bytearray(struct.pack("<IIIIII", LC_BUILD_VERSION, 24, 1, minos[0] << 16 | minos[1] << 8, 0, 0)))
    for lib in libs:
        name = _pad8((lib if isinstance(lib, bytes) else lib.encode()) + b"\0")
        cmds.append(bytearray(struct.pack("<IIIIII", LC_LOAD_DYLIB, 24 + len(name), 24, 2, 0x10000, 0x10000) + name))
    if signed:
        cmds.append(bytearray(struct.pack("<IIII", LC_CODE_SIGNATURE, 16, 0, 0)))
    sizeofcmds = sum(len(c) for c in cmds)
    data_off = 32 + sizeofcmds
    meth_off, cstr_off = data_off, data_off + len(strings)
    sects = b""
    for name, off, size in ((b"__objc_methname", meth_off, len(strings)), (b"__cstring", cstr_off, len(cstr))):
        sects += struct.pack("<16s16sQQIIIIIIII", name, b"__TEXT", off, size, off, 0, 0, 0, 0, 0, 0, 0)
    seg[72:] = sects
    body = strings + cstr
    code = bytearray(struct.pack("<IIIIIIII", 0xFEEDFACF, cputype, cpusubtype, 6, len(cmds), sizeofcmds, 0, 0))
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
