"""The suite as `make check` runs it on a stock Mac, simulated on Linux: conftest calls simulate()
when VZTEST_SIMULATED_MAC=1 (tests/test_simulated_mac.py runs the Mac's part of the suite so).
What a stock Mac differs in, for the tests:
- sys.platform is "darwin" (set before any test module is imported: their marks read it);
- dyld ignores LD_PRELOAD: every child the suite starts gets none;
- there is no fish, and none of util-linux's setpriv and unshare: PATH, the suite's own and every
  child's, hides them;
- the host's python3 has no ziglang (nothing installs it on a Mac): a child python3 finds none;
- `make` builds no rig (the GNU Objective-C stand-ins: build/probe and friends): the tests run
  from a copy of build/ without them;
- the Command Line Tools' `xcrun --find lipo` names a lipo (LLVM's plays it), as conftest's
  lipo_tool asks a Mac without Homebrew's llvm-lipo in PATH.
The command and library stay the Linux build's: what a test asks of them is what it asks on a Mac,
answered by this platform (so a test of the macOS platform layer is not run by this)."""
import atexit
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ENV = "VZTEST_SIMULATED_MAC"
# what the Makefile's `rig` target builds on Linux only (RIG in the Makefile)
RIG = ("probe", "probe_static", "libfakemetal.so", "bench_calls", "pylauncher", "clients", "callers", "dtable_race")
# make's other trees under build/, never run from
OTHER_TREES = ("dist", "xlink", "fuzz", "fresh", "llama", "client", "release", "test-downloads", "simulated-mac")
# the programs a stock Mac lacks that a Linux PATH may hold
ABSENT = ("fish", "fish_indent", "fish_key_reader", "setpriv", "unshare")
# the Python modules a stock Mac's python3 lacks that this one may have (scripts/install-deps
# installs them on Linux only)
ABSENT_MODULES = ("ziglang",)


def active():
    return os.environ.get(ENV) == "1"


class _Shadows:
    """PATH directories holding an ABSENT program, each replaced by a directory of links to
    everything else in it (made once, removed at exit)."""

    def __init__(self):
        self.top = tempfile.mkdtemp(prefix="vzcaps-macsim.")
        atexit.register(shutil.rmtree, self.top, ignore_errors=True)
        self.made = {}
        self.modules = os.path.join(self.top, "python")
        for name in ABSENT_MODULES:
            os.makedirs(os.path.join(self.modules, name))
            with open(os.path.join(self.modules, name, "__init__.py"), "w") as f:
                f.write(f"raise ImportError('no module named {name} (the simulated Mac has none)')\n")

    def dir_for(self, d):
        if not d or not any(os.path.lexists(os.path.join(d, n)) for n in ABSENT):
            return d
        if d not in self.made:
            shadow = os.path.join(self.top, f"path{len(self.made)}")
            os.mkdir(shadow)
            for name in os.listdir(d):
                if name not in ABSENT:
                    os.symlink(os.path.join(d, name), os.path.join(shadow, name))
            self.made[d] = shadow
        return self.made[d]

    def path(self, value):
        return os.pathsep.join(self.dir_for(d) for d in value.split(os.pathsep))


def _child_env(env, shadows):
    env = dict(os.environ if env is None else env)
    env.pop("LD_PRELOAD", None)
    if "PATH" in env:
        env["PATH"] = shadows.path(env["PATH"])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (shadows.modules, env.get("PYTHONPATH")) if p)
    return env


def _patch_popen(shadows):
    """Every child (subprocess.run, check_output, Popen) starts as dyld and a Mac's PATH would
    start it: without LD_PRELOAD, without fish."""
    real = subprocess.Popen.__init__
    env_at = 9  # env's place among Popen's positional parameters after args

    def init(self, args, *rest, **kw):
        if len(rest) > env_at:
            rest = (*rest[:env_at], _child_env(rest[env_at], shadows), *rest[env_at + 1:])
        else:
            kw["env"] = _child_env(kw.get("env"), shadows)
        real(self, args, *rest, **kw)

    subprocess.Popen.__init__ = init


def _build_without_rig(build):
    """A copy of build (the artifacts a Mac's make builds, and the library the Linux command
    finds beside it) without the rig; the checkout's docs beside it, as beside build/."""
    top = tempfile.mkdtemp(prefix="vzcaps-macsim-build.")
    atexit.register(shutil.rmtree, top, ignore_errors=True)
    out = os.path.join(top, "build")
    os.mkdir(out)
    if os.path.isdir(build):
        for name in os.listdir(build):
            if name in RIG or name in OTHER_TREES:
                continue
            src = os.path.join(build, name)
            if os.path.isdir(src) and not os.path.islink(src):
                shutil.copytree(src, os.path.join(out, name), symlinks=True)
            else:
                shutil.copy2(src, os.path.join(out, name), follow_symlinks=False)
    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
    os.symlink(docs, os.path.join(top, "docs"))
    os.chmod(top, 0o755)
    return pathlib.Path(out)


def simulate(build):
    """Turns this process into the simulated Mac; the build directory the tests use there."""
    import urllib.request  # noqa: F401  it loads its Mac-only part (_scproxy) by sys.platform: first
    sys.platform = "darwin"
    shadows = _Shadows()
    os.environ.pop("LD_PRELOAD", None)
    os.environ["PATH"] = shadows.path(os.environ.get("PATH", ""))
    lipo = shutil.which("llvm-lipo") or shutil.which("llvm-lipo-14")
    if lipo:
        clt = os.path.join(shadows.top, "clt")
        os.mkdir(clt)
        with open(os.path.join(clt, "xcrun"), "w") as f:
            f.write(f'#!/bin/sh\ncase "$*" in "--find lipo"|"-f lipo") echo "{lipo}" ;; '
                    '*) echo "xcrun: error: unable to find utility \\"$*\\" (the simulated Mac)" >&2; exit 1 ;; esac\n')
        os.chmod(os.path.join(clt, "xcrun"), 0o755)
        os.environ["PATH"] = clt + os.pathsep + os.environ["PATH"]
    _patch_popen(shadows)
    return _build_without_rig(str(build))
