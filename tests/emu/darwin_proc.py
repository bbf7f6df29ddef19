"""Darwin stand-ins for the process itself, installed by darwin.Darwin after the rest; each names
the Apple source and line it follows, and test_darwin_rules.py tests it against that rule:

- threads and the signals a write raises (xnu bsd/kern/kern_sig.c): process-directed (psignal),
  given to the first thread that does not block the signal, workqueue (GCD) threads after the
  others (get_signalthread, :1932-1966), to the first thread when every thread blocks it
  (get_signalact), and held there; otherwise its default action ends the process (SA_KILL); a
  workqueue thread starts with SIGPIPE unblocked and SIGXFSZ blocked (kern_fork.c:1367-1369);
  pthread_sigmask (this thread's mask), sigpending (this thread's pending set only, :835-846),
  sigwait (the first thread that has one pending, :1237-1246 and :1284-1285);
- the writes that raise them: a pipe or socket whose reader is gone fails with EPIPE and raises
  SIGPIPE (bsd/kern/sys_pipe.c:933-936, sys_generic.c:601-606; sockets sys_socket.c:155-158); a
  regular file's write that would end past RLIMIT_FSIZE, at the descriptor's offset, fails with
  EFBIG and raises SIGXFSZ when that offset is at or past the limit, and is cut short otherwise
  (bsd/vfs/vfs_vnops.c:1312-1397; an append then lands at the end of the file, as HFS's
  hfs_vnop_write does with no check of its own; APFS's is not open source);
- poll (sys_generic.c:1735-1790 and :1850-1885: a pipe or socket whose reader is gone reports
  EV_EOF, POLLHUP, and then not POLLOUT: sys_pipe.c:1403-1413, uipc_socket.c:6773-6782),
  getrlimit (RLIMIT_FSIZE, bsd/sys/resource.h), lseek;
- the program's name: _NSGetArgv (Libc sys/crt_externs.c:50-52: NXArgv, which dyld sets to the
  argv exec was given, dyldMain.cpp:890) and getprogname (Libc gen/FreeBSD/getprogname.c:14-19:
  dyld's progname, the last component of the kernel's executable_path, the path exec was given
  with its links kept: dyld DyldProcessConfig.cpp:483-485, :673-698, :2633-2639; dyldMain.cpp:887).

Host keys (Process(host=...)): threads (other threads: names, or dicts with "name",
"workqueue", "blocked"), stderr="widowed_pipe"/"widowed_socket" (darwin.py's init_stdio),
fsize_limit (RLIMIT_FSIZE's soft limit in bytes), ignored (signals set to SIG_IGN)."""
import os
import stat
import struct

SIGPIPE, SIGXFSZ = 13, 25  # xnu bsd/sys/signal.h
SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK = 1, 2, 3
EPIPE, EFBIG, ESPIPE, EBADF, EINVAL = 32, 27, 29, 9, 22
POLLOUT, POLLERR, POLLHUP, POLLNVAL = 0x4, 0x8, 0x10, 0x20  # bsd/sys/poll.h
RLIMIT_FSIZE, RLIM_INFINITY = 1, (1 << 63) - 1  # bsd/sys/resource.h
WIDOWED = ("widowed_pipe", "widowed_socket")  # a pipe or socket whose reader is gone
MINUS_ONE = 2**64 - 1


def bit(sig):
    return 1 << (sig - 1)  # kern_sig.c: sigmask(signum)


# the signals a workqueue (GCD) thread starts with unblocked: workq_threadmask (bsd/sys/signal.h:
# 573-579: threadmask, which has SIGPIPE, and sigcantmask and SIGPROF, less SIGABRT); it starts
# with every other one blocked (bsd/kern/kern_fork.c:1367-1369), SIGXFSZ among them
WORKQ_UNBLOCKED = sum(bit(s) for s in (4, 5, 7, 8, 9, 10, 11, 12, 13, 17, 27))


class Thread:
    def __init__(self, name, workqueue=False, blocked=None):
        self.name, self.workqueue = name, workqueue
        # uu_sigmask: a pthread's as its creator's (none here), a workqueue thread's as xnu sets it
        self.mask = sum(bit(s) for s in blocked) if blocked is not None else \
            0xFFFFFFFF & ~WORKQ_UNBLOCKED if workqueue else 0
        self.pending = 0  # uu_siglist


class Signals:
    """The process's threads as kern_sig.c sees them; the library runs on the first (main)."""

    def __init__(self, d):
        self.d = d
        extra = [t if isinstance(t, dict) else {"name": t} for t in d.host.get("threads", ())]
        self.threads = [Thread("main")] + [Thread(**t) for t in extra]
        self.current = self.threads[0]
        self.ignored = set(d.host.get("ignored", ()))
        self.sent = []  # (signal, thread name, "held", "ignored" or "default") of each psignal
        self.killed = None  # (signal, thread name) when a default action ended the process

    def signal_thread(self, sig):
        """get_signalthread (kern_sig.c:1932-1966), then get_signalact's first thread."""
        for skip_wq in (True, False):
            for t in self.threads:
                if not t.mask & bit(sig) and not (skip_wq and t.workqueue):
                    return t
        return self.threads[0]

    def psignal(self, sig):
        """psignal_internal (kern_sig.c:2042-2240) for a process-directed signal."""
        if sig in self.ignored:  # p_sigignore: discarded (:2124-2128)
            self.sent.append((sig, None, "ignored"))
            return
        t = self.signal_thread(sig)
        t.pending |= bit(sig)  # :2239
        if t.mask & bit(sig):
            self.sent.append((sig, t.name, "held"))  # KERN_SIG_HOLD (:2245-2247)
            return
        self.sent.append((sig, t.name, "default"))
        if self.killed is None:
            self.killed = (sig, t.name)  # SIGPIPE and SIGXFSZ: SA_KILL (bsd/sys/signalvar.h:143, :155)


def install(d):
    m, S = d.m, d.standin
    sig = d.signals = Signals(d)
    fail = lambda e: (d.set_errno(e), MINUS_ONE)[1]

    def sigmask(m, how, new, old, *_):
        """pthread_sigmask (libpthread src/pthread.c -> __pthread_sigmask, kern_sig.c
        sigprocmask's per-thread mask): SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK of a 32-bit set."""
        t = sig.current
        if old:
            m.put32(old, t.mask)
        if new:
            s = m.u32(new)
            if how not in (SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK):
                return EINVAL
            t.mask = t.mask | s if how == SIG_BLOCK else t.mask & ~s if how == SIG_UNBLOCK else s
        return 0
    S("_pthread_sigmask", sigmask)

    def sigpending(m, s, *_):
        """sigpending (kern_sig.c:835-846): the calling thread's pending set only."""
        m.put32(s, sig.current.pending)
        return 0
    S("_sigpending", sigpending)

    def sigwait(m, s, out, *_):
        """sigwait (kern_sig.c:1207-1290): the lowest signal of the set pending on the first
        thread that has one, cleared there; it would block when none is pending."""
        want = m.u32(s)
        for t in sig.threads:
            if t.pending & want:
                n = (t.pending & want & -(t.pending & want)).bit_length()
                t.pending &= ~bit(n)
                m.put32(out, n)
                return 0
        raise AssertionError("sigwait with nothing pending: it would block the host's thread")
    S("_sigwait", sigwait)

    orig_write = m.standins["_write"]

    def write(m, fd, buf, n, *_):
        """write(2): a pipe or socket whose reader is gone: EPIPE and SIGPIPE to the process;
        a regular file: RLIMIT_FSIZE checked at the descriptor's offset (vn_write); else darwin.py's."""
        if d.special.get(fd) in WIDOWED:
            sig.psignal(SIGPIPE)
            return fail(EPIPE)
        lim = d.host.get("fsize_limit", RLIM_INFINITY)
        if fd in d.fds and lim != RLIM_INFINITY and stat.S_ISREG(os.fstat(d.fds[fd]).st_mode):
            at = os.lseek(d.fds[fd], 0, os.SEEK_CUR)  # fg_offset, also for O_APPEND
            if at + n > lim:
                if at >= lim:
                    sig.psignal(SIGXFSZ)
                    return fail(EFBIG)
                n = lim - at  # cut short: a short write, no signal
        return orig_write(m, fd, buf, n)
    S("_write", write)

    def poll(m, fds, nfds, timeout, *_):
        """poll(2) on descriptors the library owns or fd 2 (no waiting: each is ready or not)."""
        ready = 0
        for i in range(nfds):
            at = fds + 8 * i
            fd, events = struct.unpack("<ih", m.read(at, 6))
            if fd < 0:
                rev = 0
            elif not d.fd_open(fd):
                rev = POLLNVAL
            elif d.special.get(fd) in WIDOWED:
                rev = POLLHUP  # EV_EOF: POLLHUP, and no POLLOUT with it
            elif d.host.get("stderr_full") and fd == 2:
                rev = 0
            else:
                rev = events & POLLOUT
            m.write(at + 6, struct.pack("<h", rev))
            ready += rev != 0
        return ready
    S("_poll", poll)

    def getrlimit(m, res, out, *_):
        """getrlimit(2) (kern_resource.c: getrlimit copies out the process's p_limit entry):
        RLIMIT_FSIZE from the case, RLIMIT_NOFILE (8) the descriptor limit, every other one unlimited."""
        cur = {RLIMIT_FSIZE: d.host.get("fsize_limit", RLIM_INFINITY), 8: d.fd_limit()}.get(res, RLIM_INFINITY)
        m.write(out, struct.pack("<QQ", cur, RLIM_INFINITY))
        return 0
    S("_getrlimit", getrlimit)

    def lseek(m, fd, off, whence, *_):
        """lseek(2) (vfs_syscalls.c): a file's offset; ESPIPE for a pipe, socket or terminal."""
        if fd in d.fds:
            return os.lseek(d.fds[fd], off - (1 << 64) if off >> 63 else off, whence) & MINUS_ONE
        return fail(ESPIPE if d.fd_open(fd) else EBADF)
    S("_lseek", lseek)

    argv_var = m.alloc(8, 8)
    m.put64(argv_var, m.new_array(d.argv))
    S("__NSGetArgv", lambda m, *_: argv_var)
    S("_getprogname", lambda m, *_: d.intern(dyld_progname(d.exe, d.argv)))


def dyld_progname(exe, argv, cwd="/"):
    """dyld's progname: the last component of getMainUnrealPath (DyldProcessConfig.cpp:673-698:
    the kernel's executable_path, else argv[0]; a relative one after the cwd, "./" dropped)."""
    path = exe if exe is not None else (argv[0] if argv else "")
    if not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + (path[2:] if path.startswith("./") else path)
    return path[path.rfind("/") + 1:]
