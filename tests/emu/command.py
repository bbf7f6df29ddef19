"""The shipped arm64 slice of the vzcaps command (dist/vzcaps), run under emulation: dyld's
part (the executable stays at its linked address; LC_MAIN's entry is called as
main(argc, argv, envp, apple)) and stdio stand-ins over the Darwin ones of darwin.py."""
from darwin import Darwin, EBADF, format_c
from machoemu import GuestFault, Machine


class Exit(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


class Command:
    def __init__(self, img, argv, env, host=None, exe="/usr/local/bin/vzcaps"):
        self.m = Machine(img, lazy=True, path=exe)
        self.out = {1: bytearray(), 2: bytearray()}
        self.files = {}
        m = self.m
        for fd in (1, 2):
            f = m.alloc(152, 8)  # a FILE (Libc stdio/FreeBSD/local.h: struct __sFILE, 152 bytes)
            self.files[f] = fd
            holder = m.alloc(8, 8)
            m.put64(holder, f)
            m.data_imports["___stdoutp" if fd == 1 else "___stderrp"] = holder
        self.d = Darwin(m, env, argv=argv, exe=exe, host=host or {}, metal=False)
        m.data_imports["_environ"] = self.d.environ_var
        self.install()
        m.load(absent=("_MTLCreateSystemDefaultDevice",))

    def emit(self, f, data):
        fd = self.files.get(f)
        if fd is None:
            raise GuestFault(f"stdio on a FILE the stand-ins did not make ({f:#x})")
        self.out[fd] += data
        return len(data)

    def install(self):
        m, d, S = self.m, self.d, self.d.standin

        def va(sp):
            box = [sp]

            def nxt():
                v = m.u64(box[0])
                box[0] += 8
                return v
            return nxt
        from unicorn.arm64_const import UC_ARM64_REG_SP as SP
        # Libc stdio (stdio/FreeBSD/printf.c, fprintf.c, fputs.c, puts.c, fwrite.c, putchar.c)
        S("_printf", lambda m, fmt, *_: self.emit(self.fp(1), format_c(m, m.cstr(fmt), va(m.uc.reg_read(SP)))))
        S("_fprintf", lambda m, f, fmt, *_: self.emit(f, format_c(m, m.cstr(fmt), va(m.uc.reg_read(SP)))))
        S("_dprintf", lambda m, fd, fmt, *_: self.emit(self.fp(fd), format_c(m, m.cstr(fmt), va(m.uc.reg_read(SP)))))
        S("_fputs", lambda m, s, f, *_: (self.emit(f, m.cstr(s)), 0)[1])
        S("_puts", lambda m, s, *_: (self.emit(self.fp(1), m.cstr(s) + b"\n"), 0)[1])
        S("_putchar", lambda m, c, *_: (self.emit(self.fp(1), bytes([c & 0xFF])), c & 0xFF)[1])
        S("_fputc", lambda m, c, f, *_: (self.emit(f, bytes([c & 0xFF])), c & 0xFF)[1])
        S("_fwrite", lambda m, p, size, n, f, *_: (self.emit(f, m.read(p, size * n)) if size * n else 0, n)[1])
        S("_fflush", lambda m, *_: 0)

        def sprintf(m, buf, fmt, *_):
            text = format_c(m, m.cstr(fmt), va(m.uc.reg_read(SP)))
            m.write(buf, text + b"\0")
            return len(text)
        S("_sprintf", sprintf)
        S("_ferror", lambda m, *_: 0)
        S("_fclose", lambda m, f, *_: 0 if f in self.files else (_ for _ in ()).throw(GuestFault("fclose of an unknown FILE")))
        S("_clearerr", lambda m, *_: None)

        def write(m, fd, buf, n, *_):
            if fd in (1, 2):
                self.out[fd] += m.read(buf, n)
                return n
            d.set_errno(EBADF)
            return 2**64 - 1
        S("_write", write)
        S("_exit", lambda m, code, *_: (_ for _ in ()).throw(Exit(code & 0xFF)))
        S("__exit", lambda m, code, *_: (_ for _ in ()).throw(Exit(code & 0xFF)))

        def getenv(m, name, *_):
            key = m.cstr(name)
            envp = m.u64(d.environ_var)
            i = 0
            while (p := m.u64(envp + 8 * i)):
                s = m.cstr(p)
                if s.startswith(key + b"="):
                    return p + len(key) + 1
                i += 1
            return 0
        S("_getenv", getenv)
        S("_calloc", lambda m, n, k, *_: m.alloc(n * k))
        S("_free", lambda m, *_: None)

        def realloc(m, p, n, *_):
            a = m.alloc(n)
            if p:
                m.write(a, m.read(p, n))  # the emulated heap is contiguous: reading past the old block is harmless
            return a
        S("_realloc", realloc)
        S("_strdup", lambda m, s, *_: m.new_cstr(m.cstr(s)))
        def strstr(m, h, n, *_):
            hb, nb = m.cstr(h), m.cstr(n)
            i = hb.find(nb)
            return h + i if i >= 0 else 0
        S("_strstr", strstr)  # Libc string/FreeBSD/strstr.c

        def strpbrk(m, s, chars, *_):
            b, cs = m.cstr(s), set(m.cstr(chars))
            return next((s + i for i, ch in enumerate(b) if ch in cs), 0)
        S("_strpbrk", strpbrk)
        S("_strnlen", lambda m, s, n, *_: len(m.cstr(s, n)))  # Libc string/FreeBSD/strnlen.c
        S("_realpath", m.standins["_realpath$DARWIN_EXTSN"])  # the legacy name: the same function for a path that exists
        S("_getpid", lambda m, *_: 4242)
        S("_geteuid", lambda m, *_: 501)
        S("_getpagesize", lambda m, *_: 16384)
        S("_umask", lambda m, *_: 0o022)

        def fcntl(m, fd, cmd, *_):
            """fcntl (xnu bsd/kern/kern_descrip.c): F_GETFD/F_GETFL/F_SETFD answer for the standard
            descriptors and the files the stand-ins opened; EBADF for the rest."""
            if fd in (0, 1, 2) or fd in d.fds:
                return 1 if cmd == 3 and fd in (1, 2) else 0
            d.set_errno(EBADF)
            return 2**64 - 1
        S("_fcntl", fcntl)

        def pread(m, fd, buf, n, off, *_):
            """pread(2) on a file the stand-ins opened (this machine's)."""
            import os
            if fd not in d.fds:
                d.set_errno(EBADF)
                return 2**64 - 1
            data = os.pread(d.fds[fd], n, off)
            m.write(buf, data)
            return len(data)
        S("_pread", pread)

        def sigaction(m, sig, new, old, *_):
            """sigaction (xnu libsyscall): the old action is SIG_DFL (struct sigaction, 16 bytes)."""
            if old:
                m.write(old, b"\0" * 16)
            return 0
        S("_sigaction", sigaction)
        S("_signal", lambda m, *_: 0)
        S("_sigprocmask", lambda m, how, new, old, *_: (m.put32(old, 0) if old else None, 0)[1])

    def fp(self, fd):
        return next(f for f, n in self.files.items() if n == fd)

    def run(self, argv):
        m = self.m
        entry = self.m.base + self.m.img.bin.main_command.entrypoint + min(
            s.virtual_address for s in self.m.img.segments)
        argv_a = m.new_array(argv)
        apple = m.new_array(["executable_path=" + self.d.exe])
        try:
            rc = m.call(entry, len(argv), argv_a, m.u64(self.d.environ_var), apple, image="dyld") & 0xFF
        except Exit as e:
            rc = e.code
        return rc, self.out[1].decode("utf-8", "replace"), self.out[2].decode("utf-8", "replace")
