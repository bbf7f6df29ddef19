"""Shared fixtures for the end-to-end tests: paths to the built library, rig and command."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# what make writes: caches, dist/, xlink/ and every artifact
ROOT_BUILD = ROOT / "build"


def runnable_build():
    """The directory the tests run the built command, library and rig from: build/ itself, or a
    copy of its artifacts in /tmp when build/ lies where they cannot run as the tests run them
    (scripts/rig-build says why: a path LD_PRELOAD cannot carry, or, as root, one that the tests
    that start the command as another user cannot reach). The copy is removed when the session
    ends; everything in it finds its neighbours relative to itself, so it runs as build/ would."""
    if not ROOT_BUILD.is_dir():
        return ROOT_BUILD
    out = subprocess.run(["sh", str(ROOT / "scripts" / "rig-build"), "--for-others", str(ROOT_BUILD)],
                         capture_output=True, text=True, check=True).stdout.rstrip("\n")
    path = pathlib.Path(out)
    if path != ROOT_BUILD.resolve():
        import atexit
        atexit.register(shutil.rmtree, path.parent, ignore_errors=True)
    return path


BUILD = runnable_build()
# VZTEST_SIMULATED_MAC=1: the suite as a stock Mac runs it (tests/macsim.py says what changes)
import macsim  # noqa: E402
if macsim.active():
    BUILD = macsim.simulate(BUILD)
# real llama-bench output (MIT, see its LICENSE-DATA.md), copied from the project's shared notes
FIXTURES = ROOT / "tests" / "fixtures" / "llama-bench" / "tinyllama-m1-ultra"

# The only skips for a platform, each explicit. A missing tool is never a skip: need_tool fails
# and names the install step.
# Tests that need the Linux test build (GNU Objective-C runtime rig, LD_PRELOAD, /proc).
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs the Linux test build")
# Tests of the cross build (zig, ld64.lld, llvm-lipo on Linux): a Mac builds natively instead.
CROSS_BUILD = pytest.mark.skipif(sys.platform == "darwin", reason="tests the Linux cross build; a Mac builds natively")


def needs_root(why):
    """A mark for a test that only root can set up (a tmpfs mount, a file given away): as
    another user it is skipped with one line saying so (README: the developers' set-up)."""
    return pytest.mark.skipif(os.geteuid() != 0, reason=f"needs root: {why}")


def as_nobody():
    """subprocess keywords that start a child as the unprivileged user nobody (no groups) when the
    suite runs as root, and as the suite's user otherwise: Python's own setuid, on Linux and on a
    Mac alike (util-linux's setpriv is Linux's only)."""
    if os.geteuid() != 0:
        return {}
    import pwd
    who = pwd.getpwnam("nobody")
    return {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}


def require_built(*paths, how):
    """For a test of artifacts that `make check` builds before pytest runs (dist/, build/san/,
    build/xlink/): when one is missing, a skip if pytest runs alone, and a failure under make
    check (VZTEST_MAKE_CHECK=1), where a missing artifact means a build step did not run."""
    missing = [p for p in paths if not os.path.exists(p)]
    if not missing:
        return
    if os.environ.get("VZTEST_MAKE_CHECK") == "1":
        pytest.fail(f"{missing[0]} not built by make check ({how}): a build step did not run", pytrace=False)
    pytest.skip(f"{missing[0]} not built ({how}; make check builds it first)")


def built(*paths, how):
    """require_built as a mark: @built(DIST / "libvzcaps.dylib", how="make dist")."""
    return pytest.mark.vzcaps_built(paths=paths, how=how)


def pytest_collection_modifyitems(items):
    """A test parametrized over a list that is empty on this platform (the real client builds
    exist on Linux only) is not collected there: parametrized away, as on the Mac a case may be
    (tests/test_simulated_mac.py), never a placeholder test of its own."""
    items[:] = [i for i in items if not (hasattr(i, "callspec") and "NOTSET" in i.callspec.id)]


def pytest_runtest_setup(item):
    for m in item.iter_markers("vzcaps_built"):
        require_built(*m.kwargs["paths"], how=m.kwargs["how"])


def need_tool(*names):
    """The path of the first of names found in PATH (with Debian's -14 suffixed LLVM names); a
    failure naming the install step when none is."""
    for name in names:
        for candidate in (name, f"{name}-14"):
            found = shutil.which(candidate)
            if found:
                return found
    pytest.fail(f"{' or '.join(names)} not found in PATH: run sh scripts/install-deps (make check runs it)", pytrace=False)


def lipo_tool():
    """llvm-lipo where it is installed; on a Mac without Homebrew's LLVM in PATH, the Command Line
    Tools' lipo (same options for -thin, -create and -output)."""
    if sys.platform == "darwin" and not shutil.which("llvm-lipo"):
        if os.access("/usr/bin/lipo", os.X_OK):
            return "/usr/bin/lipo"
        p = subprocess.run(["xcrun", "--find", "lipo"], capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip()
    return need_tool("llvm-lipo")

STOCK_FAMILIES = {1001: 1, 1002: 1, 1003: 1, 1004: 1, 1005: 1, 1006: 0, 1007: 0, 1008: 0, 1009: 0, 1010: 0,
                  2001: 0, 2002: 1, 3001: 1, 3002: 1, 3003: 1, 4001: 0, 4002: 0, 5001: 0, 5002: 0}
STOCK_TG = 32768
STOCK_WS = 5010800640


def clean_env(**extra):
    """The environment without any vzcaps or compatible variable, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VZCAPS_", "TART_METAL_", "LUME_METAL_", "LD_PRELOAD", "FAKEMETAL_", "XDG_CONFIG_HOME"))}
    env["HOME"] = "/nonexistent-home"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def parse_probe(text):
    """Reads the probe's output into {'class', 'families', 'tg', 'ws', 'preload', 'threads'} dicts,
    one per process (a --child run prints two)."""
    runs, cur = [], None
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "class":
            cur = {"class": rest, "families": {}}
            runs.append(cur)
        elif key == "threads":
            runs.append({"threads": line})
        elif key == "family":
            f, v = rest.split()
            cur["families"][int(f)] = int(v)
        elif key == "maxThreadgroupMemoryLength":
            cur["tg"] = None if rest == "absent" else int(rest)
        elif key == "recommendedMaxWorkingSetSize":
            cur["ws"] = int(rest)
        elif key == "env":
            cur["preload"] = rest.split("=", 1)[1]
    return runs


@pytest.fixture(scope="session")
def build():
    for name in ("libvzcaps.so", "probe", "libfakemetal.so"):
        assert (BUILD / name).exists(), f"build/{name} missing: run make"
    return BUILD


def framework_python(tmp_path):
    """X/bin/python3.12 (a launcher) and X/Resources/Python.app/Contents/MacOS/Python (the
    stand-in interpreter: the probe), laid out like python.org's and Homebrew's builds."""
    x = tmp_path / "Python.framework" / "Versions" / "3.12"
    (x / "bin").mkdir(parents=True)
    shutil.copy(BUILD / "pylauncher", x / "bin" / "python3.12")
    macos = x / "Resources" / "Python.app" / "Contents" / "MacOS"
    macos.mkdir(parents=True)
    os.symlink(BUILD / "probe", macos / "Python")
    return x / "bin" / "python3.12"


def run_probe(env, *args, exe=None, lib=None, preload=True):
    lib = lib or (BUILD / "libvzcaps.so")
    env = dict(env)
    if preload:
        env["LD_PRELOAD"] = str(lib)
    cmd = [str(exe or (BUILD / "probe")), *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    return p


PROPAGATION_REFUSED = "cannot change root filesystem propagation"


def private_mounts_ran(p):
    """p: a finished `unshare -m ...` (util-linux makes / private first). In a plain chroot, whose
    / is not a mount point, unshare refuses that; the test fails with one line naming the cause
    and the fix (scripts/check-fresh bind-mounts the root onto itself, so the test runs there)."""
    if p.returncode != 0 and PROPAGATION_REFUSED in (p.stderr or ""):
        pytest.fail("this test mounts a tmpfs in a private mount namespace, which needs / to be a mount point "
                    "(a plain chroot's is not: bind-mount the root onto itself first, as scripts/check-fresh does); "
                    f"unshare said: {p.stderr.strip().splitlines()[-1]}", pytrace=False)
    return p


def descendants_named(pid, name):
    """The processes named name (their comm) below pid, at any depth, read from /proc."""
    parent, comm = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        comm[int(d)] = st[st.index("(") + 1:st.rindex(")")]
        parent[int(d)] = int(st[st.rindex(")") + 2:].split()[1])
    def below(q):
        while q in parent and q != pid:
            q = parent[q]
        return q == pid
    return [q for q, c in comm.items() if c == name and q != pid and below(q)]


def term_once_running(cmd, env, child="sleep", timeout=60):
    """cmd, sent SIGTERM once a process named child runs below it: not after a fixed time (a
    loaded machine may not have reached the child by then, and the signal would end the command
    before its handler is installed). The finished process, as subprocess.run gives it."""
    import signal
    import time
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and p.poll() is None and not descendants_named(p.pid, child):
        time.sleep(0.05)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)
