"""Darwin stand-ins for the library's imports: libSystem (Libc, xnu's libsyscall, libpthread,
dyld's API), libobjc (objc4) and Metal, in Python, with Apple's arm64 calling convention
(docs: "Writing ARM64 code for Apple platforms": variadic arguments are passed on the stack,
each in its own 8-byte slot; a va_list is a plain pointer to those slots).

Each stand-in names the Apple open-source file whose behaviour it models. Files the library
reads (its configuration, a child's first bytes, its own slices) are the real files of this
machine; struct stat is written in Darwin's layout and errno values are Darwin's.

Calls Apple's libraries make internally to interposable functions go through the library's
interpose table as dyld arranges (dyld patches the shared cache for interposed functions):
posix_spawnp calls posix_spawn per PATH candidate, execv/execvp/execl* call execve,
system/popen call posix_spawn. execve and posix_spawn (the kernel) record path, argv and
environment and answer as xnu's exec_activate_image would (xnu_exec.py).

Darwin here is the process (its environment, descriptors and records); its stand-ins are in
files by concern, each a mixin or an install(d) of its own: darwin_libc.py (strings, memory,
stdio formatting), darwin_files.py (files and descriptors), darwin_dyld.py (the clock,
libpthread, dyld's API, sysctl, the exec family's entry points), darwin_proc.py (threads,
signals, poll, the program's name), darwin_objc.py (objc4), darwin_metal.py (the device
classes); xnu's numbers and layouts: xnu_defs.py.
"""
import os

import darwin_proc
from darwin_dyld import DyldStandins
from darwin_files import FileStandins
from darwin_libc import LibcStandins
from darwin_metal import Metal
from darwin_objc import Objc
from xnu_exec import KernelExec


class Exec(Exception):
    """A successful execve: the process image is replaced, nothing after it runs."""

    def __init__(self, record):
        super().__init__(record["path"])
        self.record = record


class Darwin(LibcStandins, FileStandins, DyldStandins, KernelExec):  # the kernel's exec, Libc's execvp: xnu_exec.py
    """One emulated process: its environment, files, kernel records and output."""

    def __init__(self, m, env, argv=("probe",), exe="/usr/local/bin/probe", host=None, metal=True):
        self.m, self.env_in, self.argv, self.exe = m, dict(env), list(argv), exe
        self.env = dict(env)
        self.host = host or {}
        self.stderr, self.syslog, self.execs, self.spawns, self.objc_log = bytearray(), [], [], [], []
        self.fail_add_method = False
        self.sysctl_asked = []
        self.clock_ns = 1_000 * 10**9
        self.fds = {}  # descriptor -> this machine's descriptor of a real file
        self.special = {}  # descriptor -> "tty" (the terminal) or "full" (/dev/full)
        self.cloexec, self.opened_for_writing, self.renames, self.unmapped = set(), [], [], []
        self.flocks = []  # (descriptor, operation) of every flock(2) that succeeded
        self.errno_sets = 0
        self.pid, self.wall_s = 4242, 1_800_000_000
        self.init_stdio(self.host)
        self.tsd, self.next_key, self.dtors = {}, 1, {}
        self.errno_addr = m.alloc(8, 8)
        m.put32(self.errno_addr, 0)  # zero when main starts (C11 7.5p3): the thread's errno slot starts cleared
        self.guard = m.alloc(8, 8)
        m.put64(self.guard, 0x5AFE_C0DE_1234_5678)
        m.data_imports["___stack_chk_guard"] = self.guard
        self.environ_var = m.alloc(8, 8)
        m.put64(self.environ_var, m.new_array([f"{k}={v}" for k, v in env.items()]))
        self.objc = Objc(m)
        self.metal = Metal(self) if metal else None
        self.strings = {}
        self.next_pid = 1000
        self.install()

    # ---- descriptors (xnu bsd/kern/kern_descrip.c) ----
    TTY = os.stat_result((0o20620, 99, 7, 1, 0, 0, 0, 0, 0, 0))  # a terminal: rdev 0 in this tuple

    def init_stdio(self, host):
        """0 and 1 the terminal; 2 the terminal, closed (stderr_closed), /dev/full
        (stderr="full"), a pipe or socket whose reader is gone (stderr="widowed_pipe" or
        "widowed_socket": darwin_proc) or a file of this machine's (stderr_file=PATH, opened for
        appending)."""
        self.special.update({0: "tty", 1: "tty"})
        if host.get("stderr_closed"):
            return
        if host.get("stderr") in ("full",) + darwin_proc.WIDOWED:
            self.special[2] = host["stderr"]
        elif host.get("stderr_file"):
            self.fds[2] = os.open(host["stderr_file"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        else:
            self.special[2] = "tty"

    def fd_limit(self):
        return self.host.get("fd_limit", 256)  # RLIMIT_NOFILE's soft default on macOS

    def fd_open(self, fd):
        return fd in self.fds or fd in self.special

    def fd_alloc(self, low):
        """fdalloc: the lowest free descriptor >= low below the limit, or -1."""
        for g in range(low, self.fd_limit()):
            if not self.fd_open(g):
                return g
        return -1

    def fd_dup(self, fd, g):
        if fd in self.special:
            self.special[g] = self.special[fd]
        else:
            self.fds[g] = os.dup(self.fds[fd])

    def fd_close(self, fd):
        self.cloexec.discard(fd)
        if fd in self.special:
            del self.special[fd]
            return True
        if fd in self.fds:
            os.close(self.fds.pop(fd))
            return True
        return False

    def fd_stat(self, fd):
        kind = self.special.get(fd)
        if kind == "tty":
            return self.TTY
        if kind == "full":
            return os.stat_result((0o20666, 7, 3, 1, 0, 0, 0, 0, 0, 0))
        if kind in darwin_proc.WIDOWED:  # a pipe (S_IFIFO) or socket (S_IFSOCK) of the case's
            return os.stat_result((0o10600 if kind == "widowed_pipe" else 0o140777, 4321, 0, 1, 0, 0, 0, 0, 0, 0))
        if fd in self.fds:
            st = os.fstat(self.fds[fd])
            fake = self.host.get("fake_inode", {}).get(fd)  # a case's stand-in for inode reuse
            return os.stat_result((st.st_mode, fake, st.st_dev) + tuple(st)[3:10]) if fake else st
        return None

    def take_fd(self, fd, path, flags=os.O_RDWR | os.O_CREAT):
        """The host program's own open(2) that lands at fd (the lowest free one)."""
        assert self.fd_alloc(0) == fd, f"the lowest free descriptor is {self.fd_alloc(0)}, not {fd}"
        self.fds[fd] = os.open(path, flags | os.O_CLOEXEC, 0o644)

    def fd_set_first(self, m, n, w):
        """The descriptor a one-descriptor fd_set names (the library waits on one)."""
        bits = int.from_bytes(m.read(w, (n + 7) // 8), "little") if w else 0
        return bits.bit_length() - 1 if bits else -1

    def thread_exit(self):
        """A thread's end (libpthread src/pthread_tsd.c: _pthread_tsd_cleanup): each key with a
        value and a destructor has its value cleared and the destructor called with it, for up
        to PTHREAD_DESTRUCTOR_ITERATIONS (4) rounds."""
        for _ in range(4):
            live = [(k, v) for k, v in self.tsd.items() if v and self.dtors.get(k)]
            if not live:
                return
            for k, v in live:
                self.tsd[k] = 0
                self.m.call(self.dtors[k], v, image="libsystem_c")

    def env_now(self):
        return self.m.str_array(self.m.u64(self.environ_var)) or []

    def getenv(self, name):
        for e in self.env_now():
            k, _, v = e.partition("=")
            if k == name:
                return v
        return None

    def set_errno(self, e):
        self.errno_sets += 1
        self.m.put32(self.errno_addr, e)

    def standin(self, sym, fn):
        self.m.standin(sym, fn)

    def intern(self, s):
        if s not in self.strings:
            self.strings[s] = self.m.new_cstr(s)
        return self.strings[s]

    def install(self):
        """Every stand-in, in this order (a later one may take a name an earlier one gave)."""
        self.install_libc()  # darwin_libc.py
        self.install_files()  # darwin_files.py
        self.install_runtime()  # darwin_dyld.py
        darwin_proc.install(self)  # threads and signals, poll, getrlimit, lseek, the program's name
        self.objc.install(self)
        if self.metal:
            self.metal.install(self)
