"""The part of libc++'s string streams a client's static initializer uses, for
tests/emu/clients.py: whisper.cpp's terminal colour strings (examples/common.cpp
set_xterm256_foreground: `std::ostringstream oss; oss << "\\033[38;5;" << x << "m"; oss.str()`),
built before main by @fugood/node-whisper's addon. Modelled from llvm libc++'s source
(llvm-mirror/libcxx at 78d6a776, 2019-10-22: include/ios, src/ios.cpp, include/ostream,
include/streambuf, include/sstream, include/string); the client's own inlined code reads and
writes these objects' fields, so each layout here is the one it was compiled against, and a
part not modelled fails naming itself instead of answering.
"""
from machoemu import GuestFault
from unicorn.arm64_const import UC_ARM64_REG_X8

P = "__ZNSt3__1"
STR = "basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE"
SB = "basic_stringbufIcNS_11char_traitsIcEENS_9allocatorIcEEE"
OSS = "basic_ostringstreamIcNS_11char_traitsIcEENS_9allocatorIcEEEE"
OS = "basic_ostreamIcNS_11char_traitsIcEEE"
# include/ios:368-393, ios_base's members after its vptr; basic_ios adds __tie_ and __fill_
FLAGS, WIDTH, RDSTATE, EXCEPTIONS, RDBUF, LOC, TIE, FILL = 8, 24, 32, 36, 40, 48, 136, 144
GOODBIT, BADBIT, FAILBIT, DEC, SKIPWS, UNITBUF, BASEFIELD, OUT = 0, 1, 4, 2, 0x1000, 0x2000, 0x4A, 0x10
# include/streambuf:295-301 (after the vptr, the locale, then get and put areas); include/sstream:205-207
PBASE, PPTR, EPPTR, SB_STR, SB_HM, SB_MODE = 40, 48, 56, 64, 88, 96
# basic_ostringstream: basic_ostream's vptr, then its basic_stringbuf (64 + 24 + 8 + 4 bytes,
# aligned to 104), then the virtual base basic_ios at 112 (the offset its vtables give)
IOS_IN_OSS = 8 + 104
SHORT_CAP = 22  # include/string:720-732: __min_cap - 1 bytes in place, the size in the 24th byte


def string_get(m, a):
    """A std::string's bytes: the alternate layout Apple arm64 uses (include/__config:382-386;
    include/string:705-732): short when the 24th byte's top bit is clear (its value the size),
    else {data, size, cap | 1 << 63}."""
    last = m.read(a + 23, 1)[0]
    if not last & 0x80:
        return m.read(a, last)
    return m.read(m.u64(a), m.u64(a + 8))


def string_capacity(m, a):
    return SHORT_CAP if not m.read(a + 23, 1)[0] & 0x80 else (m.u64(a + 16) & ~(1 << 63)) - 1


def string_set(m, a, data):
    """Stores data in the string, in place while it fits its capacity (a stringbuf's pointers into
    it stay valid, as resize keeps them), else in a new long buffer (cap rounded as
    __recommend does: to 16 bytes, minus one)."""
    n = len(data)
    if n <= string_capacity(m, a):
        at = a if not m.read(a + 23, 1)[0] & 0x80 else m.u64(a)
        m.write(at, bytes(data) + b"\0")
        if at == a:
            m.write(a + 23, bytes([n]))
        else:
            m.put64(a + 8, n)
        return
    cap = ((n + 16) & ~15) - 1
    buf = m.alloc(cap + 1)
    m.write(buf, bytes(data) + b"\0")
    m.put64(a, buf)
    m.put64(a + 8, n)
    m.put64(a + 16, (cap + 1) | (1 << 63))


def string_data(m, a):
    return a if not m.read(a + 23, 1)[0] & 0x80 else m.u64(a)


class Streams:
    """The stand-ins and the data (vtables, the VTT, the ctype<char> facet and its id)."""

    def __init__(self, d):
        self.d, self.m = d, d.m
        self.data = {}
        self.made = []  # each string str() returned, in order (what the client built)
        self.locale_imp = self.cell(16)

    def cell(self, n, words=()):
        a = self.m.alloc(max(n, 8 * len(words)), 16)
        self.m.write(a, b"\0" * max(n, 8 * len(words)))
        for i, w in enumerate(words):
            self.m.put64(a + 8 * i, w & (2**64 - 1))
        return a

    def fn(self, name, f=None):
        """A function cell; without f, one that fails naming the libc++ member it stands for."""
        def unmodelled(m, *_):
            raise GuestFault(f"libc++ {name}: not modelled (tests/emu/libcxx.py)")
        return self.m.slot("libc++ " + name, f or unmodelled)

    def vtable(self, cls, prefix, names, funcs):
        """prefix words (vbase and vcall offsets, offset to top, type info), then one cell per
        virtual function of cls; returns the table's address (Itanium C++ ABI 2.5.2)."""
        return self.cell(0, list(prefix) + [self.fn(f"{cls}::{n}", funcs.get(n)) for n in names])

    def install(self):
        m, S = self.m, self.d.standin
        # include/streambuf's virtual functions in declaration order, after the two destructors
        virt = ["~D1", "~D0", "imbue", "setbuf", "seekoff", "seekpos", "sync", "showmanyc",
                "xsgetn", "underflow", "uflow", "pbackfail", "xsputn", "overflow"]
        funcs = {"xsputn": self.xsputn, "overflow": self.overflow}
        self.data[f"__ZTVNSt3__115{SB}E"] = self.vtable("basic_stringbuf", [0, 0], virt, funcs)
        self.data["__ZTVNSt3__115basic_streambufIcNS_11char_traitsIcEEEE"] = self.vtable("basic_streambuf", [0, 0], virt, {})
        # the complete object's table: its vptr at +24 with the virtual base's offset at -24,
        # basic_ios's vptr at +64 (after its vcall offset, offset to top and type info)
        oss = self.cell(0, [IOS_IN_OSS, 0, 0, self.fn("basic_ostringstream::~D1"), self.fn("basic_ostringstream::~D0"),
                            -IOS_IN_OSS, -IOS_IN_OSS, 0, self.fn("basic_ostringstream::~D1 thunk"),
                            self.fn("basic_ostringstream::~D0 thunk")])
        self.data[f"__ZTVNSt3__119{OSS}"] = oss
        # its VTT: the complete object's vptrs, and the basic_ostream-in-basic_ostringstream
        # construction table's (the same offsets), in the order the constructor reads them
        self.data[f"__ZTTNSt3__119{OSS}"] = self.cell(0, [oss + 24, oss + 24, oss + 64, oss + 64])
        # locale::facet (a __shared_count: two destructors, __on_zero_shared), then ctype<char>'s
        # do_toupper, do_tolower, do_widen, do_narrow pairs (include/__locale)
        ctype_virt = ["~D1", "~D0", "__on_zero_shared", "do_toupper", "do_toupper range", "do_tolower",
                      "do_tolower range", "do_widen", "do_widen range", "do_narrow", "do_narrow range"]
        ct = self.vtable("ctype<char>", [0, 0], ctype_virt, {"do_widen": lambda m, this, c, *_: c & 0xFF})  # src/locale.cpp: do_widen returns c
        self.ctype = self.cell(16, [ct + 16])
        self.data[f"{P}5ctypeIcE2idE"] = self.ctype_id = self.cell(16)
        S(f"{P}8ios_base4initEPv", self.ios_init)
        S(f"{P}6localeC1Ev", lambda m, this, *_: (m.put64(this, self.locale_imp), this)[1])
        S(f"{P}6localeD1Ev", lambda m, *_: None)
        S("__ZNKSt3__18ios_base6getlocEv", lambda m, this, *_: m.put64(m.uc.reg_read(UC_ARM64_REG_X8), m.u64(this + LOC)))
        S("__ZNKSt3__16locale9use_facetERNS0_2idE", self.use_facet)
        S(f"{P}13{OS}6sentryC1ERS3_", self.sentry)
        S(f"{P}13{OS}6sentryD1Ev", self.sentry_end)
        S(f"{P}13{OS}lsEi", self.put_int)
        S(f"__ZNKSt3__115{SB}3strEv", self.str)
        S(f"{P}12{STR}6resizeEmc", lambda m, this, n, c, *_: string_set(m, this, string_get(m, this)[:n].ljust(n, bytes([c & 0xFF]))))
        for dtor in (f"{P}13{OS}D2Ev", f"{P}9basic_iosIcNS_11char_traitsIcEEED2Ev", f"{P}12{STR}D1Ev"):
            S(dtor, lambda m, *_: None)  # nothing to release: the emulated heap only grows

    def ios(self, os):
        """The basic_ios of a basic_ostream: its virtual base, at the offset its vtable gives."""
        return os + self.m.u64(self.m.u64(os) - 24)

    def ios_init(self, m, ios, sb, *_):
        """ios_base::init (src/ios.cpp:277-296)."""
        m.write(ios + 8, b"\0" * 128)
        m.put32(ios + FLAGS, SKIPWS | DEC)
        m.put64(ios + 16, 6)
        m.put64(ios + RDBUF, sb)
        m.put32(ios + RDSTATE, GOODBIT if sb else BADBIT)
        m.put64(ios + LOC, self.locale_imp)

    def use_facet(self, m, loc, ident, *_):
        if ident != self.ctype_id:
            raise GuestFault(f"libc++ locale::use_facet: the facet with id {ident:#x} is not modelled (only ctype<char>)")
        return self.ctype

    def sentry(self, m, this, os, *_):
        """basic_ostream::sentry::sentry (include/ostream:263-273): ok when the stream is good;
        a tied stream would be flushed first (none is tied here)."""
        ios = self.ios(os)
        if m.u64(ios + TIE):
            raise GuestFault("libc++ ostream::sentry: a tied stream's flush is not modelled")
        m.write(this, bytes([m.u32(ios + RDSTATE) == GOODBIT]))
        m.put64(this + 8, os)

    def sentry_end(self, m, this, *_):
        """~sentry (include/ostream:276-294): syncs only under unitbuf, which is not modelled."""
        if m.u32(self.ios(m.u64(this + 8)) + FLAGS) & UNITBUF:
            raise GuestFault("libc++ ostream::~sentry: unitbuf's pubsync is not modelled")

    def put_int(self, m, os, n, *_):
        """operator<<(int) (include/ostream:455-481) with num_put's decimal form and no padding:
        other bases, showpos and a width are not modelled and fail."""
        ios = self.ios(os)
        flags = m.u32(ios + FLAGS)
        if flags & BASEFIELD != DEC or flags & 0x800 or m.u64(ios + WIDTH):
            raise GuestFault(f"libc++ ostream::operator<<(int): flags {flags:#x} width {m.u64(ios + WIDTH)} not modelled")
        if m.u32(ios + RDSTATE) == GOODBIT:
            text = str(n - (1 << 32) if n & 0x80000000 else n & 0xFFFFFFFF).encode()
            buf = m.alloc(len(text))
            m.write(buf, text)
            sb = m.u64(ios + RDBUF)
            if m.call(m.u64(m.u64(sb) + 8 * 12), sb, buf, len(text), image="libc++") != len(text):  # sputn: xsputn, virtual
                m.put32(ios + RDSTATE, m.u32(ios + RDSTATE) | BADBIT | FAILBIT)
        return os

    def xsputn(self, m, sb, s, n, *_):
        """basic_streambuf::xsputn (include/streambuf:456-479): copies into the put area, calls
        overflow (virtual) for each character that does not fit."""
        i = 0
        while i < n:
            nout, eout = m.u64(sb + PPTR), m.u64(sb + EPPTR)
            if nout >= eout:
                if m.call(m.u64(m.u64(sb) + 8 * 13), sb, m.read(s + i, 1)[0], image="libc++") == 0xFFFFFFFF:
                    break
                i += 1
                continue
            k = min(eout - nout, n - i)
            m.write(nout, m.read(s + i, k))
            m.put64(sb + PPTR, nout + k)
            i += k
        return i

    def overflow(self, m, sb, c, *_):
        """basic_stringbuf::overflow (include/sstream:526-564), for an output-only buffer: the
        string grows to its capacity, the put area moves onto it, then the character is put."""
        c &= 0xFFFFFFFF
        if c == 0xFFFFFFFF:
            return 0
        if not m.u32(sb + SB_MODE) & OUT:
            raise GuestFault("libc++ stringbuf::overflow: an input buffer is not modelled")
        pbase, pptr, epptr, s = m.u64(sb + PBASE), m.u64(sb + PPTR), m.u64(sb + EPPTR), sb + SB_STR
        if pptr == epptr:
            nout, hm = pptr - pbase, m.u64(sb + SB_HM) - pbase
            string_set(m, s, string_get(m, s) + b"\0")
            string_set(m, s, string_get(m, s).ljust(string_capacity(m, s), b"\0"))
            p = string_data(m, s)
            m.put64(sb + PBASE, p)
            m.put64(sb + EPPTR, p + len(string_get(m, s)))
            m.put64(sb + SB_HM, p + hm)
            pptr = p + nout
        m.put64(sb + SB_HM, max(pptr + 1, m.u64(sb + SB_HM)))
        m.write(pptr, bytes([c & 0xFF]))
        m.put64(sb + PPTR, pptr + 1)
        return c

    def str(self, m, sb, *_):
        """basic_stringbuf::str() const (include/sstream:438-449): the put area up to the high
        mark, as a new string returned through x8."""
        if not m.u32(sb + SB_MODE) & OUT:
            raise GuestFault("libc++ stringbuf::str: an input buffer is not modelled")
        hm = max(m.u64(sb + SB_HM), m.u64(sb + PPTR))
        m.put64(sb + SB_HM, hm)
        out = m.uc.reg_read(UC_ARM64_REG_X8)
        m.write(out, b"\0" * 24)
        self.made.append(m.read(m.u64(sb + PBASE), hm - m.u64(sb + PBASE)))
        string_set(m, out, self.made[-1])


def install(d):
    """Adds the stand-ins to d and a data provider for the tables in front of d.m's own."""
    s = d.libcxx = Streams(d)
    s.install()
    inner = getattr(d.m, "data_provider", None)
    d.m.data_provider = lambda sym: s.data.get(sym) or (inner(sym) if inner else None)
    return s
