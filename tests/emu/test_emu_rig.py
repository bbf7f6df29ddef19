"""The shipped arm64 slice under emulation against the rig: every configuration of cases.py gives
the same answers on both (the count make check-emu reports), and the host traces (issue 32 rows
1-3): errno at main and around the device, the stderr line's descriptor (a file pinned by one
close-on-exec duplicate, never one that took fd 2), a low descriptor limit, the per-thread
mapping unmapped at a thread's end."""
import os
import sys

import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
import cases
from conftest import BUILD, ROOT
from shipped import (HOST, M2, env_of, img, libpath, proc, progs, rig, rig_answer, rig_memsize, up_to,  # noqa: F401  (fixtures)
                     write_summary)


# ---------------------------------------------------------------- every rig case on both

RESULTS = []  # the configurations found identical


@pytest.mark.parametrize("c", cases.CASES, ids=[c["name"] for c in cases.CASES])
def test_rig_and_arm64_slice_agree(img, rig, tmp_path, c):
    want = rig_answer(c, str(tmp_path))
    got = cases.on_emu(c, str(tmp_path), img, libpath(), rig_memsize())
    assert got == want
    RESULTS.append(c["name"])
    write_summary(configurations=len(RESULTS))


def test_table_has_forty_configurations():
    assert len(cases.CASES) >= 40
    names = {c["name"] for c in cases.CASES}
    assert len(names) == len(cases.CASES)
    chips = {c["env"].get("VZCAPS_HOST_CHIP") for c in cases.CASES}
    assert set(cases.CHIPS) <= chips


# ---------------------------------------------------------------- host traces (issue 32 rows 1-3)
# Each case beside the rig's (tests/runtime/test_traces.py) where the rig has it: the same
# errno client, the same configurations, the same kinds of standard error. "pipe" on the rig is
# the terminal here (neither is a regular file: the line is written to fd 2 itself).

def _traces():
    import importlib.util
    spec = importlib.util.spec_from_file_location("rig_traces", ROOT / "tests" / "runtime" / "test_traces.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TRACES = _traces() if sys.platform.startswith("linux") else None
TRACE_HOWS = ["pipe", "full", "closed-at-start", "closed-after-start", "file"]


@pytest.fixture(scope="module")
def errno_client(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    (d / "errno.c").write_text(TRACES.ERRNO_CLIENT)
    exe = d / "errno"
    import subprocess
    subprocess.run(["gcc", str(d / "errno.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"],
                   check=True)
    return str(exe)


def rig_errno(client, conf, how, tmp):
    """The rig's "main N after M" for one configuration and one standard error."""
    import subprocess
    err = open(os.path.join(tmp, "rig-err"), "w") if how == "file" else None
    stderr = {"pipe": subprocess.PIPE, "full": open("/dev/full", "w"), "file": err}.get(how, subprocess.DEVNULL)
    what = "close-device" if how == "closed-after-start" else "device"
    out = TRACES.run(client, what, TRACES.CONFIGS[conf], stderr=stderr, close_stderr=how == "closed-at-start")
    line = open(os.path.join(tmp, "rig-err")).read() if err else None
    return out, line


def emu_errno(img, conf, how, tmp):
    host = dict(HOST)
    if how == "full":
        host["stderr"] = "full"
    elif how == "closed-at-start":
        host["stderr_closed"] = True
    elif how == "file":
        host["stderr_file"] = os.path.join(tmp, "emu-err")
    p = proc(img, env_of(**TRACES.CONFIGS[conf]), host=host, argv=("errno",), exe="/usr/local/bin/errno")
    at_main = p.m.u32(p.d.errno_addr)
    assert p.d.errno_sets, "the constructor set no errno at all: this case proves nothing"
    if how == "closed-after-start":
        p.d.fd_close(2)
    p.d.set_errno(1234)
    assert p.create_device()
    after = p.m.u32(p.d.errno_addr)
    line = open(host["stderr_file"]).read() if how == "file" else None
    return f"main {at_main} after {after}\n", line, p


@pytest.mark.parametrize("how", TRACE_HOWS)
@pytest.mark.parametrize("conf", ["unconfigured", "configured", "refused", "invalid", "verbose"])
def test_errno_at_main_and_around_the_device_as_on_the_rig(img, errno_client, tmp_path, conf, how):
    """errno 0 when main starts (the constructor's failed lookups leave nothing); a hooked or
    stock MTLCreateSystemDefaultDevice leaves the caller's 1234, whether the line's write
    succeeds, fails with ENOSPC (/dev/full) or EBADF (fd 2 closed), or is not attempted."""
    want, rig_line = rig_errno(errno_client, conf, how, str(tmp_path))
    got, emu_line, p = emu_errno(img, conf, how, str(tmp_path))
    assert got == want == "main 0 after 1234\n"
    if how == "file":  # the line reached the start-up stderr file, on both
        assert [cases.normalise(l, libpath()) for l in cases.vz_lines(emu_line)] == \
            [cases.normalise(l, BUILD / "libvzcaps.so") for l in cases.vz_lines(rig_line)]
    if how == "full" and conf != "unconfigured":
        assert p.d.syslog  # the line was said (and its write failed): the failing path ran


def _pinned(p):
    return [fd for fd in p.d.cloexec if fd > 2 and fd in p.d.fds]


def test_a_stderr_file_is_pinned_by_one_close_on_exec_duplicate(img, tmp_path):
    """As on the rig (test_a_stderr_file_costs_one_close_on_exec_descriptor): one duplicate at
    100 or above, close-on-exec; none when nothing will be said."""
    err = tmp_path / "err"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(err)))
    (dup,) = _pinned(p)
    assert dup >= 100 and os.path.samestat(os.fstat(p.d.fds[dup]), err.stat())
    p.probe()
    assert err.read_text().startswith("vzcaps: hooked AppleParavirtDevice for probe") and err.read_text().count("\n") == 1
    for env in (env_of(), env_of(**M2, VZCAPS_LOG="quiet")):
        q = proc(img, env, host=dict(HOST, stderr_file=str(err)))
        assert _pinned(q) == []


@pytest.mark.parametrize("reused", [False, True], ids=["new inode", "the deleted file's inode"])
def test_the_line_never_goes_into_a_file_that_took_fd_2(img, tmp_path, reused):
    """The rig's REUSE_CLIENT: stderr is a file, deleted; fd 2 closed; the program's next open
    (a data file) takes fd 2. xnu does not hand a held inode to a new file; "reused" makes the
    stand-in's fstat report the deleted file's inode for the data file anyway (what ext4 did
    before the library held the file): the line still never enters the data file."""
    log, data = tmp_path / "log", tmp_path / "data"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(log)))
    ino = log.stat().st_ino
    log.unlink()
    p.d.fd_close(2)
    p.d.take_fd(2, str(data))
    if reused:
        p.d.host["fake_inode"] = {2: ino}
    os.write(p.d.fds[2], b"user data\n")
    p.d.set_errno(1234)
    assert p.probe()["families"] == up_to(1008)
    os.write(p.d.fds[2], b"more data\n")
    assert data.read_text() == "user data\nmore data\n"
    assert p.m.u32(p.d.errno_addr) == 1234 and p.stderr == ""
    (dup,) = _pinned(p)
    held = os.fstat(p.d.fds[dup])
    assert held.st_nlink == 0 and held.st_ino == ino  # the deleted file, still held
    if reused:  # identity matched, so the line went to the held (deleted) file, nowhere else
        with open(f"/proc/self/fd/{p.d.fds[dup]}", "rb") as f:  # the deleted file, through our descriptor
            assert f.read().startswith(b"vzcaps: hooked")
    else:
        assert held.st_size == 0


def test_the_duplicate_closed_by_the_host_is_never_taken_for_stderr(img, tmp_path):
    """The rig's CLOSEFROM_CLIENT: every descriptor above 2 closed, a data file at the
    duplicate's number (and its neighbours): no line in the data file nor in stderr's."""
    err, data = tmp_path / "err", tmp_path / "data"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(err)))
    for fd in [f for f in list(p.d.fds) + list(p.d.special) if f > 2]:
        p.d.fd_close(fd)
    p.d.take_fd(3, str(data), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    for n in range(100, 110):
        p.d.fds[n] = os.dup(p.d.fds[3])
    assert p.probe()["class"] == "AppleParavirtDevice"
    assert data.read_text() == "" and err.read_text() == ""


@pytest.mark.parametrize("limit", [4, 20, 101])
def test_a_low_descriptor_limit(img, tmp_path, limit):
    """The rig's test_a_low_descriptor_limit: F_DUPFD_CLOEXEC at 100 is EINVAL under a limit of
    101 or less (xnu's fcntl), so the duplicate takes the lowest free one; the line is written."""
    err = tmp_path / "err"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(err), fd_limit=limit))
    (dup,) = _pinned(p)
    assert dup == (100 if limit > 100 else 3)
    assert p.probe()["class"] == "AppleParavirtDevice"
    assert err.read_text().startswith("vzcaps: hooked")


def test_the_per_thread_mapping_is_unmapped_at_thread_exit(img, progs):
    """inherit = matching builds the child's environment in a per-thread mapping; the key's
    destructor (run by libpthread at thread exit) unmaps it, errno untouched."""
    env = env_of(VZCAPS_CONFIG=str(progs / "vzcaps.conf"))
    p = proc(img, env)
    r = p.run_child("posix_spawn", str(progs / "bin" / "llama-server"), [])
    assert any(e.startswith("VZCAPS_") for e in r["ran"]["env"])  # a matching child: its environment was built
    live = [v for v in p.d.tsd.values() if v]
    assert len(live) == 1 and not p.d.unmapped
    p.d.set_errno(1234)
    p.d.thread_exit()
    assert p.d.unmapped == [(live[0], p.m.u64(live[0]))] and p.m.u32(p.d.errno_addr) == 1234
    assert not any(p.d.tsd.values())
