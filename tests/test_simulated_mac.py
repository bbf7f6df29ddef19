"""The Mac test path, simulated off a Mac (issue: the first Mac run passes). A directory of
stand-ins comes first in PATH: `uname` answers Darwin/arm64; `sw_vers`, `sysctl`, `xcrun`, `brew`
and `pkg-config` answer as on a Mac with the Command Line Tools and Homebrew; `python3` is a venv
with pip 21.2.4 (what Apple's Command Line Tools ship) and neither pytest nor yaml; the rest of
PATH holds only tools a stock Mac has. In it, scripts/install-deps must succeed (twice: the second
run installs nothing), and the whole suite must collect without errors under sys.platform
"darwin", with the Linux-only and cross-build tests skipped by their explicit marks."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, ROOT_BUILD
from macstandins import STOCK, SW_VERS, SYSCTL, UNAME, write  # noqa: F401  (also for other tests)

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="simulates a Mac on Linux; on a Mac the real suite runs")
SIM_CACHE = ROOT_BUILD / "simulated-mac"
PIP_VERSION = "21.2.4"
XCRUN = r"""#!/bin/sh
CLT=/Library/Developer/CommandLineTools
case "${1:-}" in
  --find|-f)
    case "${2:-}" in
      lipo) echo "@SIM@/clt/lipo" ;;
      clang|clang++|ld|ar|strip|codesign_allocate|otool|nm|vtool) echo "$CLT/usr/bin/$2" ;;
      *) echo "xcrun: error: unable to find utility \"${2:-}\", not a developer tool or in PATH" >&2; exit 1 ;;
    esac ;;
  --show-sdk-path) echo "$CLT/SDKs/MacOSX.sdk" ;;
  --show-sdk-version) echo 15.1 ;;
  lipo) shift; exec "@SIM@/clt/lipo" "$@" ;;
  *) echo "xcrun: error: unable to find utility \"${1:-}\" (simulated Mac)" >&2; exit 1 ;;
esac
"""
# the Command Line Tools' lipo, played by LLVM's (same options for -thin, -create, -output)
LIPO = """#!/bin/sh
exec "@LLVM_LIPO@" "$@"
"""
BREW = r"""#!/bin/sh
P="@SIM@/homebrew"
case "${1:-}" in
  --prefix) if [ -n "${2:-}" ]; then echo "$P/opt/$2"; else echo "$P"; fi ;;
  install)
    shift
    echo "install $*" >>"@SIM@/brew.log"
    for f in "$@"; do
      mkdir -p "$P/opt/$f/bin"
      case "$f" in
        groff) printf '#!/bin/sh\necho "groff (simulated)"\n' >"$P/bin/groff"; chmod +x "$P/bin/groff" ;;
        librsvg) printf '#!/bin/sh\necho "rsvg-convert (simulated)"\n' >"$P/bin/rsvg-convert"; chmod +x "$P/bin/rsvg-convert" ;;
        cmocka) mkdir -p "$P/lib/pkgconfig"; : >"$P/lib/pkgconfig/cmocka.pc" ;;
        llvm) printf '#!/bin/sh\nexit 0\n' >"$P/opt/llvm/bin/llvm-objdump"; chmod +x "$P/opt/llvm/bin/llvm-objdump" ;;
        go) cp "@SIM@/go-standin" "$P/bin/go" ;;
      esac
    done ;;
  list) ls "$P/opt" ;;
  *) echo "brew: ${1:-} is not simulated" >&2; exit 1 ;;
esac
"""
# Homebrew's go: `go version`, and `go install` of actionlint into GOBIN (a stand-in that prints
# the version asked for), logged to go.log
GO = r"""#!/bin/sh
case "${1:-}" in
  version) echo "go version go1.25.0 darwin/arm64" ;;
  install)
    echo "GOBIN=$GOBIN GOTOOLCHAIN=$GOTOOLCHAIN install $2" >>"@SIM@/go.log"
    v=${2##*@}
    printf '#!/bin/sh\necho %s\n' "$v" >"$GOBIN/actionlint"; chmod +x "$GOBIN/actionlint" ;;
  *) echo "go: ${1:-} is not simulated" >&2; exit 1 ;;
esac
"""
PKG_CONFIG = r"""#!/bin/sh
P="@SIM@/homebrew"
exists=0
for a in "$@"; do case "$a" in --exists) exists=1 ;; esac; done
for a in "$@"; do
  case "$a" in
    -*) ;;
    *) [ -f "$P/lib/pkgconfig/$a.pc" ] || { [ $exists = 1 ] || echo "Package $a was not found in the pkg-config search path." >&2; exit 1; }
       [ $exists = 1 ] || echo "-I$P/opt/$a/include -L$P/opt/$a/lib -l$a" ;;
  esac
done
"""
PYTHON3 = """#!/bin/sh
exec "@VENV@/bin/python3" "$@"
"""


def pip21_venv_template():
    """A venv with pip 21.2.4 and nothing else, made once (pip from PyPI) and kept under build/."""
    tmpl = SIM_CACHE / f"venv-pip-{PIP_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}"
    if (tmpl / "ok").exists():
        return tmpl
    if sys.version_info >= (3, 12):
        pytest.fail("pip 21.2.4 needs Python 3.11 or older; run the suite with such a python3", pytrace=False)
    shutil.rmtree(tmpl, ignore_errors=True)
    SIM_CACHE.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([sys.executable, "-m", "venv", str(tmpl)], capture_output=True, text=True)
    assert p.returncode == 0, f"python3 -m venv failed (Debian: python3-venv, installed by scripts/install-deps): {p.stderr}"
    p = subprocess.run([str(tmpl / "bin" / "python3"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"pip=={PIP_VERSION}"], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PIP_CACHE_DIR=str(SIM_CACHE / "pip-cache")))
    assert p.returncode == 0, f"could not install pip {PIP_VERSION} from PyPI: {p.stderr[-500:]}"
    (tmpl / "ok").write_text("")
    return tmpl


@pytest.fixture(scope="module")
def mac(tmp_path_factory):
    """The simulated Mac: (environment, its directory)."""
    sim = tmp_path_factory.mktemp("mac")
    venv = sim / "venv"
    subprocess.run(["cp", "-a", str(pip21_venv_template()), str(venv)], check=True)
    for d in ("bin", "clt", "homebrew/bin", "homebrew/opt", "system"):
        (sim / d).mkdir(parents=True)
    llvm_lipo = shutil.which("llvm-lipo") or shutil.which("llvm-lipo-14")
    assert llvm_lipo, "llvm-lipo missing: run sh scripts/install-deps"
    write(sim / "bin" / "uname", UNAME)
    write(sim / "bin" / "sw_vers", SW_VERS)
    write(sim / "bin" / "sysctl", SYSCTL)
    write(sim / "bin" / "xcrun", XCRUN, SIM=sim)
    write(sim / "clt" / "lipo", LIPO, LLVM_LIPO=llvm_lipo)
    write(sim / "bin" / "brew", BREW, SIM=sim)
    write(sim / "go-standin", GO, SIM=sim)
    write(sim / "bin" / "pkg-config", PKG_CONFIG, SIM=sim)
    write(sim / "bin" / "python3", PYTHON3, VENV=venv)
    for name in STOCK:
        found = shutil.which(name)
        if found:
            os.symlink(found, sim / "system" / name)
    env = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "SSL_", "REQUESTS_CA", "LANG", "LC_"))
           or k.lower() in ("http_proxy", "https_proxy", "no_proxy")}
    env.update(PATH=f"{sim}/bin:{sim}/homebrew/bin:{sim}/system", HOME=str(sim / "home"), TMPDIR=str(sim),
               PIP_CACHE_DIR=str(SIM_CACHE / "pip-cache"), PYTHONDONTWRITEBYTECODE="1")
    (sim / "home").mkdir()
    return env, sim


def run(env, *cmd, timeout=600):
    return subprocess.run(list(cmd), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


# sys.platform as on a Mac; the standard modules that load Mac-only parts by sys.platform at
# import (urllib.request: _scproxy) are imported first, as the real thing works on a Mac
DARWIN = "import sys, urllib.request; sys.platform = 'darwin'; sys.path.insert(0, 'tests'); "


def test_the_stand_ins_look_like_a_mac(mac):
    env, sim = mac
    assert run(env, "uname", "-s").stdout == "Darwin\n" and run(env, "uname", "-m").stdout == "arm64\n"
    assert run(env, "sh", "-c", "uname -sm").stdout == "Darwin arm64\n"
    assert run(env, "sw_vers", "-productVersion").stdout == "15.1\n"
    assert run(env, "sysctl", "-n", "hw.ncpu").stdout == "8\n"
    assert run(env, "xcrun", "--find", "clang").returncode == 0
    assert run(env, "pkg-config", "--exists", "cmocka").returncode == 1
    p = run(env, "python3", "-m", "pip", "--version")
    assert p.stdout.startswith(f"pip {PIP_VERSION} ") and str(sim / "venv") in p.stdout
    assert "--break-system-packages" not in run(env, "python3", "-m", "pip", "help", "install").stdout
    assert run(env, "python3", "-c", "import pytest").returncode == 1
    assert run(env, "python3", "-c", "import yaml").returncode == 1
    for tool in ("groff", "rsvg-convert", "llvm-lipo", "llvm-objdump", "zig", "gcc", "go", "actionlint"):
        assert run(env, "sh", "-c", f"command -v {tool}").returncode != 0, tool


def test_install_deps_succeeds_on_a_stock_mac_and_twice(mac):
    env, sim = mac
    p = run(env, "sh", "scripts/install-deps")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no such option" not in p.stderr
    # Homebrew brought what a stock Mac lacks, in one call
    assert (sim / "brew.log").read_text().split() == ["install", "cmocka", "llvm", "groff", "librsvg", "go"]
    # actionlint, pinned, built by that go into Homebrew's bin (on PATH)
    version = re.search(r"^ACTIONLINT_VERSION=(\S+)$", (ROOT / "scripts" / "install-deps").read_text(), re.M).group(1)
    assert (sim / "go.log").read_text().split() == [f"GOBIN={sim}/homebrew/bin", "GOTOOLCHAIN=go1.25.0+auto", "install",
                                                   f"github.com/rhysd/actionlint/cmd/actionlint@v{version}"]
    assert run(env, "actionlint", "-version").stdout == f"v{version}\n"
    assert "installing pytest" in p.stdout and "installing pyyaml" in p.stdout
    assert "--break-system-packages" not in p.stdout  # pip 21.2.4 has no such option
    assert run(env, "python3", "-c", "import pytest, yaml").returncode == 0
    # the second run finds everything and installs nothing
    again = run(env, "sh", "scripts/install-deps")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "" and (sim / "brew.log").read_text().count("install") == 1
    assert (sim / "go.log").read_text().count("install") == 1


def test_install_deps_names_the_missing_command_line_tools(mac, tmp_path):
    env, sim = mac
    bare = tmp_path / "bin"
    bare.mkdir()
    for name in os.listdir(sim / "bin"):
        if name != "xcrun":
            os.symlink(sim / "bin" / name, bare / name)
    p = run(dict(env, PATH=f"{bare}:{sim}/system"), "sh", "scripts/install-deps")
    assert p.returncode == 1 and "xcode-select --install" in p.stderr


def collect(env, *args):
    code = DARWIN + f"import pytest; sys.exit(pytest.main({list(args)!r}))"
    return run(env, "python3", "-c", code)


def with_deps(env):
    """The simulated Mac after scripts/install-deps (each test can run alone)."""
    if run(env, "python3", "-c", "import pytest, yaml").returncode != 0:
        p = run(env, "sh", "scripts/install-deps")
        assert p.returncode == 0, p.stderr
    return env


def test_the_whole_suite_collects_on_the_mac(mac):
    env = with_deps(mac[0])
    p = collect(env, "--collect-only", "-q", "-p", "no:cacheprovider", "tests")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "error" not in p.stdout.splitlines()[-1].lower(), p.stdout[-2000:]
    # every module that collects on Linux collects on the Mac (none fails to import); a test may
    # only be parametrized away there (a Linux-only case), never added
    here = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    mac_ids = {line for line in p.stdout.splitlines() if "::" in line}
    linux_ids = {line for line in here.stdout.splitlines() if "::" in line}
    assert mac_ids and mac_ids <= linux_ids, sorted(mac_ids - linux_ids)[:10]
    files = lambda ids: {i.split("::")[0] for i in ids}  # noqa: E731
    assert files(mac_ids) == files(linux_ids), sorted(files(linux_ids) - files(mac_ids))


def test_linux_and_cross_build_tests_are_marked_not_run_on_the_mac(mac):
    env = with_deps(mac[0])
    p = collect(env, "-q", "-rs", "-p", "no:cacheprovider", "tests/dist/test_crosslink.py", "tests/dist/test_audit.py",
                "tests/runtime/test_library.py")
    assert p.returncode == 0, p.stdout[-3000:]
    last = p.stdout.splitlines()[-1]
    assert "skipped" in last and "passed" not in last and "failed" not in last and "error" not in last, last
    reasons = "\n".join(line for line in p.stdout.splitlines() if line.startswith("SKIPPED"))
    assert "tests the Linux cross build; a Mac builds natively" in reasons and "needs the Linux test build" in reasons, reasons


def test_lipo_on_a_mac_without_llvm_is_the_command_line_tools_one(mac):
    env, sim = mac
    with_deps(env)
    p = run(env, "python3", "-c", DARWIN + "from conftest import lipo_tool; print(lipo_tool())")
    # /usr/bin/lipo on a real Mac; here /usr/bin has none, so xcrun's answer
    expected = "/usr/bin/lipo" if os.access("/usr/bin/lipo", os.X_OK) else str(sim / "clt" / "lipo")
    assert p.returncode == 0 and p.stdout.strip() == expected, p.stderr
    assert run(env, expected, "-version").returncode == 0


# ---- the Mac's part of the suite, run here as a Mac runs it (VZTEST_SIMULATED_MAC, tests/macsim.py) ----

# the files a stock Mac's make check failed in (issue 39, rows 21-24)
MAC_FAILED = ["tests/completions", "tests/cli/test_launch_plan.py", "tests/test_readme_client_lines.py",
              "tests/macho/test_read_inputs.py", "tests/macho/test_prepare_safety.py", "tests/test_install_deps.py",
              "tests/cli/test_report.py"]
SEEN = r"""
import os, shutil, subprocess, sys
sys.path.insert(0, "tests")
from conftest import BUILD, LINUX_ONLY
from macsim import ABSENT
print("platform", sys.platform)
print("absent", " ".join(str(shutil.which(name)) for name in ABSENT))
env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": "/x.so"}
print(subprocess.run(["sh", "-c", "echo child preload=$LD_PRELOAD fish=$(command -v fish)"], env=env,
                     capture_output=True, text=True).stdout.strip())
print("ziglang", subprocess.run(["python3", "-c", "import ziglang"], capture_output=True).returncode)
print("build", " ".join(sorted(os.listdir(BUILD))))
print("linux-only", LINUX_ONLY.args[0])
"""


def simulated(**extra):
    return dict(os.environ, VZTEST_SIMULATED_MAC="1", **extra)


def test_the_simulated_mac_switch_changes_what_a_mac_lacks():
    from macsim import ABSENT
    assert all(shutil.which(name) for name in ABSENT), "this test compares with a Linux that has them all"
    p = subprocess.run([sys.executable, "-c", SEEN], cwd=ROOT, env=simulated(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    seen = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert seen["platform"] == "darwin" and seen["absent"] == " ".join(["None"] * len(ABSENT))
    assert seen["child"] == "preload= fish="  # dyld ignores LD_PRELOAD; no fish on any PATH a child gets
    assert seen["ziglang"] != "0"
    built = seen["build"].split()
    assert "vzcaps" in built and "completions" in built and not {"probe", "libfakemetal.so", "pylauncher"} & set(built)
    assert seen["linux-only"] == "True"  # the mark skips
    # without the switch: this Linux, as it is
    p = subprocess.run([sys.executable, "-c", SEEN], cwd=ROOT, env=dict(os.environ, VZTEST_SIMULATED_MAC="0"),
                       capture_output=True, text=True, timeout=120)
    assert "platform linux" in p.stdout and "build " in p.stdout and " probe " in p.stdout, p.stdout


def test_the_tests_a_stock_mac_failed_pass_as_a_mac_runs_them(tmp_path):
    """Issue 39 rows 21-24: run with sys.platform darwin, no LD_PRELOAD in any child, no fish,
    setpriv or unshare, no ziglang and no rig, these files have no failure; what they skip names
    what it needs."""
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"),
                        *MAC_FAILED], cwd=ROOT, env=simulated(), capture_output=True, text=True, timeout=900)
    last = p.stdout.splitlines()[-1] if p.stdout else ""
    assert p.returncode == 0 and "failed" not in last and "error" not in last, p.stdout[-4000:] + p.stderr[-2000:]
    skipped = [line for line in p.stdout.splitlines() if line.startswith("SKIPPED")]
    for needs in ("needs fish", "needs Debian's bash-completion", "needs the Linux test build", "needs macOS's dyld"):
        assert any(needs in line for line in skipped), (needs, skipped)
