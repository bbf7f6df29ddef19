"""scripts/install-deps (issue 33 item 8): docs/developers.md names every package it installs;
make demo installs only the demo's set and make check the rest, each saying up front what and
roughly how large; a failure ends with one line naming what did not install and the fix; make
install-deps is make deps. The Debian runs use stand-ins for dpkg-query, apt-get and id."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = (ROOT / "scripts" / "install-deps").read_text()
DOC = (ROOT / "docs" / "developers.md").read_text()
SECTION = DOC[DOC.index("## What `scripts/install-deps` installs"):]
SECTION = SECTION[:SECTION.index("\n## ", 3)]


def assignments():
    return dict(re.findall(r"^([A-Z_]+)=\"?([^\"\n]*)\"?$", SCRIPT, re.M))


def script_packages():
    """{kind: {name: version or None}} from the script's own lines (comments left out): the
    Debian sets, Homebrew's, every pip package (pip_install ARGS and NAME==VERSION words), actionlint."""
    code = "\n".join(re.sub(r"\s#\s.*$", "", line) for line in SCRIPT.splitlines() if not line.lstrip().startswith("#"))
    v = assignments()
    code = re.sub(r"\$\{?([A-Z_]+)\}?", lambda m: v.get(m.group(1), m.group(0)), code)
    pip = {}
    for args in re.findall(r"pip_install ([^|&;)\n]+)", code):
        for w in args.split():
            w = w.strip("\"'")
            if re.fullmatch(r"[A-Za-z][\w.-]*(==[\w.]+)?", w):
                name, _, ver = w.partition("==")
                pip[name] = ver or None
    for name, ver in re.findall(r"(?<![\w$-])([A-Za-z][\w.-]*)==([0-9][\w.]*)", code):
        pip[name] = ver
    return {
        "demo": dict.fromkeys(v["DEBS_DEMO"].split()),
        "emu": dict.fromkeys(v["DEBS_EMU"].split()),
        "check": dict.fromkeys(v["DEBS_CHECK"].split()),
        "brew": dict.fromkeys(re.findall(r'brews="\$brews (\S+)"', SCRIPT)),
        "pip": pip,
        "go": {"actionlint": v["ACTIONLINT_VERSION"]},
    }


def spans(text):
    return set(re.findall(r"`([^`]+)`", text))


def bullet(start):
    i = SECTION.index(start)
    j = SECTION.find("\n- ", i + 1)
    return SECTION[i:j if j > 0 else None]


def test_the_parser_finds_the_script_lines():
    got = script_packages()
    assert {"gcc", "gobjc"} <= set(got["demo"]) and {"valgrind", "golang-go", "zsh", "gdb"} <= set(got["check"])
    assert got["pip"]["ziglang"] == assignments()["ZIG_VERSION"] and {"pytest", "pyyaml"} <= set(got["pip"])
    assert {"cmocka", "llvm", "go"} <= set(got["brew"])
    assert not set(got["demo"]) & set(got["check"]) and not set(got["emu"]) & set(got["check"])


def test_the_developers_page_lists_every_package_the_script_installs():
    got = script_packages()
    missing = []
    for kind, where in (("demo", "- **Debian, for `make demo`**"), ("emu", "- **Debian, for `make check-emu`**"),
                        ("check", "- **Debian, for `make check`**"), ("brew", "- **macOS**")):
        text = bullet(where)
        missing += [f"{kind}: {n}" for n in got[kind] if n not in spans(text)]
    # pip and go packages: named with their pin (`NAME` VERSION) when the script pins them
    for kind in ("pip", "go"):
        for name, ver in got[kind].items():
            if f"`{name}`" not in SECTION or (ver and f"`{name}` {ver}" not in SECTION):
                missing.append(f"{kind}: `{name}`" + (f" {ver}" if ver else ""))
    assert not missing, "docs/developers.md does not list what scripts/install-deps installs: " + ", ".join(missing)


def make_n(*targets):
    p = subprocess.run(["make", "-n", "--no-print-directory", *targets], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_make_install_deps_is_make_deps_and_demo_installs_only_its_set():
    assert make_n("install-deps") == make_n("deps") == ["sh scripts/install-deps check"]
    assert make_n("demo")[0] == "sh scripts/install-deps demo"
    assert make_n("check")[0] == "sh scripts/install-deps check"


# ---- a Debian root, played by stand-ins ----

STANDINS = {
    "uname": "#!/bin/sh\necho Linux\n",
    "id": '#!/bin/sh\ncase "$1" in -u) echo "${FAKE_UID:-0}" ;; -un) echo root ;; *) echo "uid=0(root)" ;; esac\n',
    # installed unless named in MISSING
    "dpkg-query": '#!/bin/sh\ncase " $MISSING " in *" $3 "*) exit 1 ;; esac\necho "install ok installed"\n',
    # APT_PACKAGES: what -s simulates (Inst lines) and install downloads and sets up (Get: and Setting up lines)
    "apt-get": '#!/bin/sh\necho "apt-get $*" >>"$LOG"\ncase "$1" in update) exit "${APT_UPDATE_RC:-0}" ;; esac\n'
               'if [ "$1" = -s ]; then for p in ${APT_PACKAGES:-}; do echo "Inst $p (1 Debian)"; done; exit 0; fi\n'
               'i=0; for p in ${APT_PACKAGES:-}; do i=$((i + 1)); echo "Get:$i http://deb $p"; done\n'
               'for p in ${APT_PACKAGES:-}; do echo "Unpacking $p ..."; echo "Setting up $p ..."; done\n'
               'echo "debconf: delaying package configuration, since apt-utils is not installed" >&2\n'
               'echo "W: a warning of apt" >&2\n'
               '[ -n "${APT_INSTALL_OK:-}" ] && exit 0\necho "E: Unable to locate package x" >&2\nexit 100\n',
    # the real python3, except that ziglang is the pinned one (whatever the host's python3 has: a
    # Mac's has none), or absent when NO_ZIG is set, and pip install fails
    "python3": '#!/bin/sh\ncase "$*" in *"import ziglang"*) [ -z "${NO_ZIG:-}" ] || exit 1; echo "@ZIG@"; exit 0 ;; esac\n'
               'if [ "$1 $2 $3" = "-m pip install" ]; then echo "ERROR: No matching distribution" >&2; exit 1; fi\n'
               'exec "@PY@" "$@"\n',
}


@pytest.fixture
def debian(tmp_path):
    d = tmp_path / "standins"
    d.mkdir()
    for name, text in STANDINS.items():
        (d / name).write_text(text.replace("@PY@", sys.executable).replace("@ZIG@", assignments()["ZIG_VERSION"]))
        (d / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG")}
    env.update(PATH=f"{d}:/usr/local/bin:/usr/bin:/bin", LOG=str(tmp_path / "log"), MISSING="")
    return env


def install_deps(env, *args, **extra):
    return subprocess.run(["sh", "scripts/install-deps", *args], cwd=ROOT, env=dict(env, **extra), capture_output=True,
                          text=True, timeout=300)


def test_the_demo_set_says_what_it_installs_and_a_failure_names_the_package(debian):
    p = install_deps(debian, "demo", MISSING="gcc valgrind")
    assert p.returncode == 100, p.stdout + p.stderr
    assert p.stdout.splitlines()[0] == "install-deps: for make demo: Debian packages gcc (roughly 250 MB when none is installed)"
    assert p.stderr.splitlines()[-1] == ("install-deps: the Debian packages gcc did not install (exit 100): run apt-get "
                                         "install gcc to see apt's reason, then run sh scripts/install-deps again")


def test_apt_says_only_what_matters(debian):
    # debconf's note on every minbase root buried make demo's table; apt's other lines stay, and
    # a failure shows apt's standard error whole before the verdict
    ok = install_deps(debian, "demo", MISSING="gobjc", APT_INSTALL_OK="1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == "W: a warning of apt\n"
    bad = install_deps(debian, "demo", MISSING="gobjc")
    assert bad.returncode == 100
    assert bad.stderr.splitlines()[:3] == ["debconf: delaying package configuration, since apt-utils is not installed",
                                           "W: a warning of apt", "E: Unable to locate package x"]


def test_the_check_set_says_what_it_installs_and_how_large(debian):
    p = install_deps(debian, MISSING="gcc valgrind")
    first = p.stdout.splitlines()[0]
    assert first.startswith("install-deps: for make check: Debian packages gcc valgrind, and what is missing of actionlint")
    assert "roughly 2 GB" in first


def test_a_failed_package_list_update_is_named(debian):
    p = install_deps(debian, "demo", MISSING="gobjc", APT_UPDATE_RC="1")
    assert p.returncode == 1
    assert p.stderr.splitlines()[-1].startswith("install-deps: the Debian package lists (apt-get update) did not install (exit 1): "
                                                "check the network")


def test_not_root_names_the_missing_packages_in_one_line(debian):
    p = install_deps(debian, "demo", MISSING="gobjc", FAKE_UID="1000")
    assert p.returncode == 1 and p.stderr == "install-deps: missing packages: gobjc (install them, or run this as root on Debian)\n"


def test_a_failing_pip_ends_with_the_package_and_the_fix(debian):
    p = install_deps(debian, NO_ZIG="1")
    assert p.returncode == 1, p.stdout + p.stderr
    zig = re.search(r"^ZIG_VERSION=(\S+)$", SCRIPT, re.M).group(1)
    assert p.stdout.splitlines()[0].startswith(f"install-deps: for make check: ziglang {zig} (pip), and what is missing")
    last = p.stderr.splitlines()[-1]
    assert last.startswith(f"install-deps: ziglang=={zig} (pip) did not install (exit 1): check the network"), p.stderr
    assert f"python3 -m pip install" in last and f"ziglang=={zig}" in last


def test_the_demo_set_installs_nothing_of_the_checks(debian):
    p = install_deps(debian, "demo", NO_ZIG="1")
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stdout + p.stderr
    assert not os.path.exists(debian["LOG"])  # apt-get never ran
    p = install_deps(debian, "bogus")
    assert p.returncode == 2 and '"bogus" is not a set' in p.stderr


# ---- issue 45: make check-emu installs only what it needs; apt says how far it got; pip as root ----

def test_make_check_emu_installs_only_its_set(debian):
    """make check-emu installed the whole check set (Go, valgrind, ruby, fish, gdb...: about 2 GB)
    though it needs the rig's compiler, the cross toolchain and the emulator's Python packages."""
    assert make_n("check-emu")[0] == "sh scripts/install-deps emu"
    assert make_n("try-action")[0] == "sh scripts/install-deps action"  # the demo's and PyYAML
    got = script_packages()
    assert {"lld", "llvm"} <= set(got["emu"]) and not set(got["emu"]) & (set(got["check"]) | set(got["demo"]))
    p = install_deps(debian, "emu", MISSING="gcc valgrind lld golang-go")
    assert p.returncode == 100, p.stdout + p.stderr
    assert p.stdout.splitlines()[0] == ("install-deps: for make check-emu: Debian packages gcc lld, and what is missing of "
                                        "pytest, unicorn, lief, capstone and the client builds (roughly 800 MB when none is "
                                        "installed: the Debian packages 500 MB, zig 300 MB)"), p.stdout
    installs = [ln for ln in open(debian["LOG"]).read().splitlines() if " install " in f" {ln} " and " -s " not in ln]
    assert installs == ["apt-get install -y -q --no-install-recommends gcc lld"], installs


def test_the_apt_phase_says_how_far_it_got(debian):
    """The apt phase printed nothing for minutes on a fresh root."""
    pkgs = " ".join(f"p{i}" for i in range(60))
    p = install_deps(debian, "demo", MISSING="gcc", APT_INSTALL_OK="1", APT_PACKAGES=pkgs)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[1:] == [
        "install-deps: installing gcc", "install-deps: apt-get install: 60 packages with what they need",
        "install-deps: apt: 25 of 60 packages downloaded", "install-deps: apt: 50 of 60 packages downloaded",
        "install-deps: apt: 25 of 60 packages set up", "install-deps: apt: 50 of 60 packages set up",
        "install-deps: apt: 60 of 60 packages set up"], p.stdout


@pytest.mark.skipif(sys.platform == "darwin" or os.geteuid() != 0, reason="pip warns about root only as root (a Linux root)")
def test_pip_as_root_says_nothing_about_root(debian, tmp_path):
    """check-emu on a fresh root printed pip's "Running pip as the 'root' user" warning five times."""
    py = tmp_path / "standins" / "python3"
    py.write_text(f'#!/bin/sh\ncase "$*" in *"import pytest"*) exit 1 ;; *"import ziglang"*) echo "{assignments()["ZIG_VERSION"]}"; '
                  f'exit 0 ;; esac\nexec "{sys.executable}" "$@"\n')
    p = install_deps(dict(debian, HOME=os.environ["HOME"]), "emu")  # pytest is there: pip finds it installed
    assert p.returncode == 0, p.stdout + p.stderr
    assert "install-deps: installing pytest (python3 -m pip install" in p.stdout
    assert "WARNING" not in p.stderr and "root" not in p.stderr, p.stderr
