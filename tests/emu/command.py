"""The shipped arm64 slice of the vzcaps command (dist/vzcaps), run under emulation: dyld's
part (the executable stays at its linked address; LC_MAIN's entry is called as
main(argc, argv, envp, apple)) and stdio stand-ins over the Darwin ones of darwin.py."""
from darwin import Darwin, Exec
from darwin_libc import format_c
from machoemu import GuestFault, Jump, Machine
from xnu_defs import EBADF, ENOENT

ECHILD, ESRCH = 10, 3  # xnu bsd/sys/errno.h


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
        self.programs = {}  # absolute path -> fn(argv, env) -> (exit status, stdout bytes, stderr bytes)
        self.children = []  # each child: {"path", "argv", "env", "status"}
        self.forked, self.exited = None, {}
        self.install()
        self.install_children()
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

        def putenv(m, string, *_):
            """putenv(3) (Libc-1725 stdlib/FreeBSD/putenv.c, through __setenv_locked): the string
            itself (not a copy) replaces the entry of its NAME, or is added at the end of a new
            environ; 0."""
            key = m.cstr(string).split(b"=", 1)[0] + b"="
            envp, entries = m.u64(d.environ_var), []
            while (q := m.u64(envp + 8 * len(entries))):
                entries.append(q)
            at = next((i for i, q in enumerate(entries) if m.cstr(q).startswith(key)), None)
            if at is not None:
                m.put64(envp + 8 * at, string)
                return 0
            new = m.alloc(8 * (len(entries) + 2))
            for i, q in enumerate(entries + [string, 0]):
                m.put64(new + 8 * i, q)
            m.put64(d.environ_var, new)
            return 0
        S("_putenv", putenv)
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

    def install_children(self):
        """fork, execv in the child, _exit, waitpid and kill, for the command's children.

        fork (Libc gen/fork.c over xnu's fork in bsd/kern/kern_fork.c) returns twice; here the
        child runs first, in the same machine: the stand-in keeps the parent's registers, its
        writable memory and its descriptor table, and answers 0. The child's code runs (its
        open, dup2, close) until it calls execv: the program given for that path
        (self.programs, a Python callable standing in for the executable) runs with its argv
        and environment, its output goes where the child's fd 1 and fd 2 lead (the command's
        own stdout and stderr, or /dev/null after a dup2), and its exit status is kept for
        waitpid. A path with no program answers ENOENT, as xnu's exec_activate_image would, and
        the child's own _exit then ends it. Either way the parent is put back as it was at the
        fork and resumes with the child's pid in x0."""
        m, d, S = self.m, self.d, self.d.standin
        from unicorn import UC_PROT_WRITE
        from unicorn.arm64_const import (UC_ARM64_REG_NZCV, UC_ARM64_REG_Q0, UC_ARM64_REG_SP, UC_ARM64_REG_X0,
                                         UC_ARM64_REG_X29, UC_ARM64_REG_X30)

        regs = [UC_ARM64_REG_X0 + i for i in range(29)] + [UC_ARM64_REG_X29, UC_ARM64_REG_X30, UC_ARM64_REG_SP,
                                                            UC_ARM64_REG_NZCV] + [UC_ARM64_REG_Q0 + i for i in range(32)]

        def fork(m, *_):
            if self.forked:
                raise GuestFault("fork in a forked child: the stand-in runs one child at a time")
            uc = m.uc
            self.forked = {"regs": uc.reg_read_batch(regs), "lr": uc.reg_read(UC_ARM64_REG_X30),
                           "mem": [(b, bytes(uc.mem_read(b, e - b + 1))) for b, e, perm in uc.mem_regions() if perm & UC_PROT_WRITE],
                           "fds": dict(d.fds), "special": dict(d.special), "cloexec": set(d.cloexec)}
            import os
            d.fds = {fd: os.dup(osfd) for fd, osfd in d.fds.items()}  # the child's own table: its close is not the parent's
            return 0
        S("_fork", fork)

        def child_end(status):
            """The child is gone: its own descriptors closed, the parent restored, fork's pid."""
            f, uc = self.forked, m.uc
            for osfd in set(d.fds.values()):
                import os
                os.close(osfd)
            d.fds, d.special, d.cloexec = f["fds"], f["special"], f["cloexec"]
            for base, data in f["mem"]:
                uc.mem_write(base, data)
            uc.reg_write_batch(list(zip(regs, f["regs"])))
            d.next_pid += 1
            self.exited[d.next_pid] = status
            self.children[-1]["status"] = status
            self.forked = None
            uc.reg_write(UC_ARM64_REG_X0, d.next_pid)
            return Jump(f["lr"])

        def to_fd(fd, data):
            import os
            kind = d.special.get(fd)
            if kind == "tty":
                self.out[fd if fd in (1, 2) else 2] += data
            elif fd in d.fds:
                os.write(d.fds[fd], data)

        def execv(m, path_a, argv_a, *_):
            if not self.forked:
                return d.libc_execve(path_a, argv_a, m.u64(d.environ_var))
            path = m.cstr(path_a).decode("utf-8", "surrogateescape")
            argv, env = m.str_array(argv_a), d.env_now()
            self.children.append({"path": path, "argv": argv, "env": env, "status": None})
            prog = self.programs.get(path)
            if prog is None:
                d.set_errno(ENOENT)
                return 2**64 - 1
            status, out, err = prog(argv, env)
            to_fd(1, out)
            to_fd(2, err)
            return child_end((status & 0xFF) << 8)
        S("_execv", execv)

        def exit_(m, code, *_):
            if self.forked:
                return child_end((code & 0xFF) << 8)
            raise Exit(code & 0xFF)
        S("_exit", exit_)
        S("__exit", exit_)

        def waitpid(m, pid, status_a, options, *_):
            """waitpid (xnu bsd/kern/kern_exit.c: wait4): the exited child's status, reaped once;
            ECHILD for a pid that is no child (or reaped)."""
            pid = pid if pid < 2**31 else pid - 2**32
            if pid not in self.exited:
                d.set_errno(ECHILD)
                return 2**32 - 1
            if status_a:
                m.put32(status_a, self.exited.pop(pid))
            return pid
        S("_waitpid", waitpid)

        def kill(m, pid, sig, *_):
            """kill (xnu bsd/kern/kern_sig.c): the children here are gone by the time the parent
            runs again: ESRCH."""
            d.set_errno(ESRCH)
            return 2**32 - 1
        S("_kill", kill)

        def dup2(m, old, new, *_):
            """dup2 (xnu bsd/kern/kern_descrip.c: dup2): new closed first, then the same file."""
            if not d.fd_open(old):
                d.set_errno(EBADF)
                return 2**32 - 1
            if old != new:
                d.fd_close(new)
                d.fd_dup(old, new)
            return new
        S("_dup2", dup2)
        S("_setpgid", lambda m, *_: 0)  # xnu bsd/kern/kern_prot.c: setpgid (the group is the child's own)

        def pipe(m, fds_a, *_):
            """pipe(2) (xnu bsd/kern/sys_pipe.c): two descriptors, the lowest free ones, over a pipe
            of this machine's."""
            import os
            r, w = os.pipe()
            for k, osfd in enumerate((r, w)):
                fd = d.fd_alloc(0)
                d.fds[fd] = osfd
                m.put32(fds_a + 4 * k, fd)
            return 0
        S("_pipe", pipe)

        def poll(m, fds_a, n, timeout, *_):
            """poll(2) (xnu bsd/kern/sys_generic.c): the revents of each struct pollfd (8 bytes), by
            a poll of this machine's over the same pipes, without waiting (the children here have
            ended by the time the parent runs)."""
            import select
            p, at = select.poll(), {}
            for i in range(n):
                fd, events = m.u32(fds_a + 8 * i), m.read(fds_a + 8 * i + 4, 2)
                m.write(fds_a + 8 * i + 6, b"\0\0")
                if fd in d.fds:
                    p.register(d.fds[fd], int.from_bytes(events, "little"))
                    at[d.fds[fd]] = i
            ready = p.poll(0)
            for osfd, rev in ready:
                m.write(fds_a + 8 * at[osfd] + 6, rev.to_bytes(2, "little"))
            return len(ready)
        S("_poll", poll)

    def fp(self, fd):
        return next(f for f, n in self.files.items() if n == fd)

    def run(self, argv):
        m = self.m
        entry = self.m.base + self.m.img.bin.main_command.entrypoint + min(
            s.virtual_address for s in self.m.img.segments)
        argv_a = m.new_array(argv)
        apple = m.new_array(["executable_path=" + self.d.exe])
        self.execd = None  # the record of the program the command became (execve succeeded)
        try:
            rc = m.call(entry, len(argv), argv_a, m.u64(self.d.environ_var), apple, image="dyld") & 0xFF
        except Exit as e:
            rc = e.code
        except Exec as e:
            rc, self.execd = None, e.record
        return rc, self.out[1].decode("utf-8", "replace"), self.out[2].decode("utf-8", "replace")
