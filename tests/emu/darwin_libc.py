"""Libc's string, memory and stdio formatting stand-ins (Libc string/FreeBSD/*.c, secure/*_chk.c,
stdio/FreeBSD/vfprintf.c; libmalloc and xnu's mmap), with syslog, strerror and errno: a mixin of
darwin.Darwin, installed first by Darwin.install. format_c is printf's conversions over guest
memory, which the command's stdio stand-ins (command.py) use too."""
import os
import re
import struct

from machoemu import GuestFault
from xnu_defs import EINVAL

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


class LibcStandins:
    def install_libc(self):
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


from unicorn.arm64_const import UC_ARM64_REG_SP as SP  # noqa: E402
