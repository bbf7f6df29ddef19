"""The Darwin stand-ins a decision of the library's depends on, each held to the rule of the Apple
source it names (a link, a different argv[0], a second thread), and the library's cases that
depend on them (issue 47 items 3-5): no signal from a write in any thread, and the program's
name one rule for a parent's inherit = matching and the child's own section. VZCAPS_EMU_LIB runs
the library cases on another file (the library of an earlier commit fails them)."""
import os
import pathlib
import struct
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import ROOT, require_built  # noqa: E402
from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

if sys.platform.startswith("linux"):
    import darwin_proc  # noqa: E402
    from process import Process, image  # noqa: E402

LIB = pathlib.Path(os.environ.get("VZCAPS_EMU_LIB") or ROOT / "dist" / "libvzcaps.dylib")
HOST = {"brand": None, "memsize": 16 << 30, "translated": None}
M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
MINUS_ONE = 2**64 - 1
ENOENT, EBADF, ENOTDIR, ELOOP, ENAMETOOLONG = 2, 9, 20, 62, 63


@pytest.fixture(scope="module")
def img():
    require_built(LIB, how="make dist")
    return image(LIB)


def libpath():
    return str(LIB.resolve())


def proc(img, env=None, start=True, **kw):
    host = dict(HOST, **kw.pop("host", {}))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "DYLD_INSERT_LIBRARIES": libpath(), **(env or {})}
    p = Process(img, env, lib_path=libpath(), host=host, **kw)
    return p.start() if start else p


def call(p, name, *args):
    return p.m.standins[name](p.m, *args, 0, 0, 0, 0, 0, 0, 0)


def macho(path):
    path.write_bytes(struct.pack("<IiiIIII", 0xFEEDFACF, 0x0100000C, 0, 2, 0, 0, 0) + b"\0" * 64)
    path.chmod(0o755)


# ---------------------------------------------------------------- signals (xnu kern_sig.c)

def test_a_process_signal_goes_to_the_first_thread_that_does_not_block_it(img):
    """get_signalthread (kern_sig.c:1932-1966): the first thread without it in its mask, a
    workqueue thread only when no other will take it; all blocking: held by the first thread,
    seen by sigpending there only (:835-846) and taken by sigwait (:1237-1285)."""
    p = proc(img, start=False, host={"threads": [{"name": "gcd", "workqueue": True}, "worker"]})
    s = p.d.signals
    blocked = p.m.alloc(8)
    p.m.put32(blocked, darwin_proc.bit(darwin_proc.SIGPIPE))
    assert call(p, "_pthread_sigmask", darwin_proc.SIG_BLOCK, blocked, 0) == 0
    s.psignal(darwin_proc.SIGPIPE)
    assert s.sent == [(13, "worker", "default")] and s.killed == (13, "worker")
    s.threads[2].mask = s.threads[0].mask
    s.psignal(darwin_proc.SIGPIPE)
    assert s.sent[-1] == (13, "gcd", "default")  # the workqueue thread, in the second pass
    for t in s.threads:
        t.mask, t.pending = darwin_proc.bit(13), 0
    s.psignal(darwin_proc.SIGPIPE)
    assert s.sent[-1] == (13, "main", "held") and s.threads[0].pending == darwin_proc.bit(13)
    out = p.m.alloc(8)
    s.current = s.threads[1]
    call(p, "_sigpending", out)
    assert p.m.u32(out) == 0  # another thread's pending signal is not this thread's
    s.current = s.threads[0]
    call(p, "_sigpending", out)
    assert p.m.u32(out) == darwin_proc.bit(13)
    assert call(p, "_sigwait", blocked, out) == 0 and p.m.u32(out) == 13 and s.threads[0].pending == 0


def test_a_workqueue_thread_takes_sigpipe_and_not_sigxfsz(img):
    """kern_fork.c:1367-1369: a workqueue (GCD) thread starts with every signal blocked but
    workq_threadmask's (bsd/sys/signal.h:573-579), which has SIGPIPE and not SIGXFSZ."""
    p = proc(img, start=False, host={"threads": [{"name": "gcd", "workqueue": True}]})
    s = p.d.signals
    s.threads[0].mask = darwin_proc.bit(13) | darwin_proc.bit(25)  # the writing thread blocks both
    s.psignal(darwin_proc.SIGPIPE)
    s.psignal(darwin_proc.SIGXFSZ)
    assert s.sent == [(13, "gcd", "default"), (25, "main", "held")]


def test_an_ignored_signal_is_discarded(img):
    p = proc(img, start=False, host={"ignored": [13], "threads": ["worker"]})
    p.d.signals.psignal(13)
    assert p.d.signals.sent == [(13, None, "ignored")] and p.d.signals.killed is None


@pytest.mark.parametrize("kind", ["widowed_pipe", "widowed_socket"])
def test_a_write_to_a_widowed_pipe_or_socket_fails_with_epipe_and_signals_the_process(img, kind):
    """sys_pipe.c:933-936 and sys_generic.c:601-606 (a socket: sys_socket.c:155-158): EPIPE, and
    SIGPIPE to the process; poll (sys_generic.c:1850-1885) says POLLHUP, and no POLLOUT."""
    p = proc(img, start=False, host={"stderr": kind, "threads": ["worker"]})
    buf = p.m.new_cstr("x")
    assert call(p, "_write", 2, buf, 1) == MINUS_ONE and p.m.u32(p.d.errno_addr) == 32
    assert p.d.signals.killed == (13, "main")  # the first thread, which blocks nothing
    fds = p.m.alloc(16)
    p.m.write(fds, struct.pack("<ihhihh", 2, darwin_proc.POLLOUT, 0, 1, darwin_proc.POLLOUT, 0))
    assert call(p, "_poll", fds, 2, 0) == 2
    assert struct.unpack("<ihhihh", p.m.read(fds, 16))[2::3] == (darwin_proc.POLLHUP, darwin_proc.POLLOUT)
    st = p.m.alloc(144)
    assert call(p, "_fstat", 2, st) == 0
    assert struct.unpack_from("<H", p.m.read(st + 4, 2))[0] & 0o170000 == (0o010000 if kind == "widowed_pipe" else 0o140000)


def test_rlimit_fsize_is_checked_at_the_descriptors_offset(img, tmp_path):
    """vn_write (vfs_vnops.c:1312-1397): the write's end past RLIMIT_FSIZE at the descriptor's
    offset: EFBIG and SIGXFSZ when the offset is at or past the limit, cut short before it; a
    new O_APPEND descriptor's offset is 0, so an append to a file already past the limit is
    made (HFS's hfs_vnop_write adds no check; APFS's is not open source)."""
    f = tmp_path / "f"
    f.write_bytes(b"y" * 100)
    p = proc(img, start=False, host={"fsize_limit": 100, "threads": ["worker"]})
    buf = p.m.new_cstr("z" * 50)
    rl = p.m.alloc(16)
    assert call(p, "_getrlimit", darwin_proc.RLIMIT_FSIZE, rl) == 0 and p.m.u64(rl) == 100
    p.d.signals.current.mask = darwin_proc.bit(darwin_proc.SIGXFSZ)  # blocked in the writing thread
    fd = call(p, "_open", p.m.new_cstr(str(f)), 0x1 | 0x8)  # O_WRONLY | O_APPEND
    assert call(p, "_write", fd, buf, 50) == 50 and f.stat().st_size == 150  # offset 0: made
    assert call(p, "_lseek", fd, 0, 1) == 150  # the append moved the offset to the end
    assert call(p, "_write", fd, buf, 50) == MINUS_ONE and p.m.u32(p.d.errno_addr) == 27
    assert p.d.signals.killed == (25, "worker") and f.stat().st_size == 150
    g = call(p, "_open", p.m.new_cstr(str(f)), 0x1)  # O_WRONLY, offset 0
    assert call(p, "_lseek", g, 80, 0) == 80
    assert call(p, "_write", g, buf, 50) == 20  # cut short at the limit, no signal
    assert len(p.d.signals.sent) == 1
    assert call(p, "_lseek", 2, 0, 1) == MINUS_ONE and p.m.u32(p.d.errno_addr) == 29  # ESPIPE: the terminal


# ---------------------------------------------------------------- the program's name (dyld, Libc)

def test_getprogname_is_the_leaf_of_the_path_exec_was_given(img, tmp_path):
    """Libc getprogname.c:14-19 returns dyld's progname: the last component of the kernel's
    executable_path, links kept (DyldProcessConfig.cpp:483-485, :673-698, :2633-2639); never
    argv[0]'s, never "" for an empty argv[0]. _NSGetArgv (crt_externs.c:50-52) is argv as given."""
    (tmp_path / "real").write_bytes(b"")
    os.symlink(tmp_path / "real", tmp_path / "python3")
    for argv, exe, want in [(("alias",), "/x/real", "real"), (("",), "/x/real", "real"),
                            (("python3",), str(tmp_path / "python3"), "python3"), ((), "/x/real", "real")]:
        p = proc(img, start=False, argv=argv, exe=exe)
        assert p.m.cstr(call(p, "_getprogname")).decode() == want
        arr = p.m.u64(call(p, "__NSGetArgv"))
        assert (p.m.str_array(arr) or []) == list(argv)
    assert darwin_proc.dyld_progname("./tool", ["x"], cwd="/w") == "tool"
    assert darwin_proc.dyld_progname(None, ["bin/t"], cwd="/w") == "t"  # no executable_path: argv[0]


def test_nsgetexecutablepath_is_the_path_exec_was_given(img, tmp_path):
    """dyld DyldAPIs.cpp:786-800: mainUnrealPath on macOS, "not real-path. It may be a symlink";
    -1 and the size needed when the buffer is too small."""
    (tmp_path / "real").write_bytes(b"")
    os.symlink(tmp_path / "real", tmp_path / "link")
    p = proc(img, start=False, exe=str(tmp_path / "link"))
    buf, size = p.m.alloc(1024), p.m.alloc(8)
    p.m.put32(size, 1024)
    assert call(p, "__NSGetExecutablePath", buf, size) & 0xFFFFFFFF == 0
    assert p.m.cstr(buf).decode() == str(tmp_path / "link")
    p.m.put32(size, 4)
    assert call(p, "__NSGetExecutablePath", buf, size) & 0xFFFFFFFF == 0xFFFFFFFF
    assert p.m.u32(size) == len(str(tmp_path / "link")) + 1


def test_realpath_follows_libcs_rules(img, tmp_path):
    """Libc stdlib/FreeBSD/realpath.c ($DARWIN_EXTSN): links resolved; ENOENT for "" and for a
    missing last component; ENOTDIR through a file; ELOOP; ENAMETOOLONG at 1024 bytes."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"")
    os.symlink("d/f", tmp_path / "l")
    os.symlink("loop", tmp_path / "loop")
    deep = tmp_path.joinpath(*["n" * 200] * 5)
    deep.mkdir(parents=True)
    p = proc(img, start=False)
    out = p.m.alloc(1024)
    rp = lambda s: call(p, "_realpath$DARWIN_EXTSN", p.m.new_cstr(str(s)), out)
    assert rp(tmp_path / "l") == out and p.m.cstr(out).decode() == str((tmp_path / "d" / "f").resolve())
    for path, err in [("", ENOENT), (tmp_path / "missing", ENOENT), (tmp_path / "d" / "f" / "x", ENOTDIR),
                      (tmp_path / "loop", ELOOP), (deep, ENAMETOOLONG)]:
        assert rp(path) == 0 and p.m.u32(p.d.errno_addr) == err, path


def test_the_at_calls_follow_nameiat(img, tmp_path):
    """vfs_syscalls.c:4127-4168: an absolute path ignores the descriptor (even a closed one);
    a relative one needs AT_FDCWD or an open directory (EBADF, ENOTDIR); fstatat with
    AT_SYMLINK_NOFOLLOW is the link's; readlinkat cuts to the buffer and gives the count."""
    (tmp_path / "f").write_bytes(b"data")
    os.symlink("f", tmp_path / "l")
    p = proc(img, start=False)
    s = lambda x: p.m.new_cstr(str(x))
    st = p.m.alloc(144)
    assert call(p, "_fstatat", 77, s(tmp_path / "f"), st, 0) == 0  # 77: no such descriptor
    assert call(p, "_fstatat", 77, s("f"), st, 0) == MINUS_ONE and p.m.u32(p.d.errno_addr) == EBADF
    dfd = call(p, "_open", s(tmp_path), 0x100000)  # O_DIRECTORY
    ffd = call(p, "_open", s(tmp_path / "f"), 0)
    assert call(p, "_fstatat", ffd, s("f"), st, 0) == MINUS_ONE and p.m.u32(p.d.errno_addr) == ENOTDIR
    assert call(p, "_fstatat", dfd, s("l"), st, 0x20) == 0
    assert struct.unpack_from("<H", p.m.read(st + 4, 2))[0] & 0o170000 == 0o120000  # the link itself
    buf = p.m.alloc(8)
    assert call(p, "_readlinkat", dfd, s("l"), buf, 1) == 1 and p.m.read(buf, 1) == b"f"
    assert call(p, "_renameat", dfd, s("f"), 0xFFFFFFFE, s(tmp_path / "g")) == 0
    assert (tmp_path / "g").read_bytes() == b"data" and not (tmp_path / "f").exists()


# ---------------------------------------------------------------- the library under these rules

def said(p):
    return p.d.syslog


@pytest.mark.parametrize("threads", [[], ["worker"], [{"name": "gcd", "workqueue": True}]], ids=["alone", "worker", "gcd"])
@pytest.mark.parametrize("kind", ["widowed_pipe", "widowed_socket"])
def test_the_line_to_a_widowed_stderr_raises_no_signal_in_any_thread(img, kind, threads):
    """Issue 47 item 3: the line's write raised SIGPIPE for the process; blocked in the writing
    thread, it went to a thread that did not block it and ended the host."""
    p = proc(img, M2, host={"stderr": kind, "threads": threads})
    p.d.set_errno(1234)
    assert p.create_device()
    assert p.m.u32(p.d.errno_addr) == 1234
    assert p.d.signals.sent == [] and p.d.signals.killed is None
    assert said(p) and p.stderr == ""  # said to the system log; nothing reached the pipe


def stats_log(tmp_path, size):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    log = d / "s.jsonl"
    if size is not None:
        log.write_bytes(b'{"v":1}\n' * (size // 8))
        log.chmod(0o600)
    return log


@pytest.mark.parametrize("limit,size", [(0, None), (4096, 4096), (100, None)], ids=["zero", "at the log's size", "below a record"])
def test_the_record_at_rlimit_fsize_is_not_written_and_raises_nothing(img, tmp_path, limit, size):
    """RLIMIT_FSIZE 0: the record's write raised SIGXFSZ for the process; at the log's size xnu
    appends past the limit (its check is at the new descriptor's offset, 0); below a record's
    length it cuts the record short (a torn line). Neither: a record that would end past the
    limit is not written, and nothing is signalled."""
    log = stats_log(tmp_path, size)
    p = proc(img, dict(M2, VZCAPS_LOG_FILE=str(log)), host={"fsize_limit": limit, "threads": ["worker"]})
    p.d.set_errno(1234)
    assert p.create_device()
    assert p.m.u32(p.d.errno_addr) == 1234
    assert p.d.signals.sent == [] and p.d.signals.killed is None
    assert log.stat().st_size == (size or 0)


def test_the_line_to_a_stderr_file_past_rlimit_fsize_raises_no_signal(img, tmp_path):
    """A stderr file the host has written past RLIMIT_FSIZE (its offset at the end): the line's
    write raised SIGXFSZ for the process, which a worker thread took."""
    err = tmp_path / "err"
    err.write_bytes(b"e" * 5000)
    p = proc(img, M2, host={"stderr_file": str(err), "fsize_limit": 4096, "threads": ["worker"]})
    os.lseek(p.d.fds[2], 0, os.SEEK_END)  # the host's own writes left the offset there
    p.d.set_errno(1234)
    assert p.create_device()
    assert p.m.u32(p.d.errno_addr) == 1234
    assert p.d.signals.sent == [] and p.d.signals.killed is None and err.stat().st_size == 5000
    assert said(p)


NAMED = ("[parent]\nmatch = parent\napple_family_max = auto\ninherit = matching\n"
         "[alias]\nmatch = alias\napple_family_max = auto\n[linked]\nmatch = linked\napple_family_max = auto\n")


@pytest.mark.parametrize("how", ["execv", "posix_spawn"])
@pytest.mark.parametrize("argv0,file,keep", [("alias", "real", True), ("other", "alias", False), ("", "linked", True)],
                         ids=["alias", "named-file", "empty"])
def test_a_child_gets_the_section_its_parent_judged_it_by(img, tmp_path, how, argv0, file, keep):
    """Issue 47 item 4: a child whose argv[0] and file differ. The parent keeps the library for
    it by argv[0]'s base name (for an empty argv[0], the path it starts); the child picks its
    section by the same name, where getprogname() (dyld: the file's leaf) would have named
    another, or none."""
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(NAMED)
    conf.chmod(0o644)
    macho(tmp_path / "real")
    os.symlink(tmp_path / "real", tmp_path / "linked")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    env = {"VZCAPS_CONFIG": str(conf), "VZCAPS_HOST_CHIP": "Apple M2"}
    parent = proc(img, env, argv=("parent",), exe="/usr/local/bin/parent")
    r = parent.run_child(how, str(tmp_path / file), [], argv0=argv0)
    assert r["ran"]["argv"] == [argv0]
    child_env = dict(e.split("=", 1) for e in r["ran"]["env"])
    assert (libpath() in child_env.get("DYLD_INSERT_LIBRARIES", "")) is keep
    if not keep:
        return
    child = proc(img, child_env, argv=(argv0,), exe=str(tmp_path / file))
    assert child.probe()["families"][1008] == 1
    want = argv0 or file
    assert [l.split(" via ")[0] for l in child.stderr.splitlines()] == [f"vzcaps: hooked AppleParavirtDevice for {want}"]
