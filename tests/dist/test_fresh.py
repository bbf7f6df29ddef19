"""make check-fresh, on a tiny stand-in root instead of Debian's (the real run takes minutes and
is CI's second step): what a container gets from its host is copied in, the set-up commands'
failure or a skipped test fails it, every mount is undone whatever happens, and a second run
works. The stand-in root holds the host's sh and libc and an /usr/bin/env that prints a canned
log; the checkout is cloned into it as in the real run."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="check-fresh builds a Debian root: Linux only"),
    pytest.mark.skipif(os.geteuid() != 0, reason="check-fresh mounts and chroots: root only (CI runs as root)"),
]

SCRIPT = ROOT / "scripts" / "check-fresh"
PREREQS = re.search(r'^PREREQS="([^"]*)"', SCRIPT.read_text(), re.M).group(1)
TARBALL = f"bookworm-minbase-{PREREQS.replace(' ', '+')}.tar"

FAKE_ENV = """#!/bin/sh
printf '%s\\n' "$@" >/env-args.txt
while IFS= read -r line; do printf '%s\\n' "$line"; done </canned.log
read -r rc </canned.rc
exit "$rc"
"""


def libs_of(exe):
    out = subprocess.run(["ldd", exe], capture_output=True, text=True, check=True).stdout
    return re.findall(r"(/\S+) \(0x", out)


@pytest.fixture
def cache(tmp_path):
    """A cache directory whose root tarball is the stand-in, with a canned log to print."""
    root = tmp_path / "tiny"
    for d in ("proc", "sys", "dev", "etc", "usr/bin", "bin", "tmp"):
        (root / d).mkdir(parents=True)
    sh = os.path.realpath("/bin/sh")
    shutil.copy(sh, root / "bin" / "sh")
    for lib in libs_of(sh):
        dst = root / lib.lstrip("/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(lib, dst)
    (root / "usr" / "bin" / "env").write_text(FAKE_ENV)
    (root / "usr" / "bin" / "env").chmod(0o755)
    (root / "etc" / "resolv.conf").write_text("nameserver 192.0.2.1  # debootstrap's\n")
    c = tmp_path / "cache"
    c.mkdir()
    subprocess.run(["tar", "-C", str(root), "-cf", str(c / TARBALL), "."], check=True)
    return c


def run(cache, log, rc=0):
    """Puts the canned log into the tarball's root and runs check-fresh."""
    extra = cache.parent / "extra"
    extra.mkdir(exist_ok=True)
    (extra / "canned.log").write_text(log)
    (extra / "canned.rc").write_text(f"{rc}\n")
    subprocess.run(["tar", "-C", str(extra), "-rf", str(cache / TARBALL), "./canned.log", "./canned.rc"], check=True)
    env = dict(os.environ, VZCAPS_FRESH_CACHE=str(cache), PIP_INDEX_URL="https://pypi.example/simple", CI="true")
    p = subprocess.run(["sh", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    return p


def mounts_under(path):
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(str(path))]


PASSED = "1 passed, 0 failed\n[==========] 40 test(s) run.\n[  PASSED  ] 40 test(s).\n212 passed in 30.00s\n"


def test_passes_copies_in_what_a_container_gets_and_unmounts(cache):
    p = run(cache, PASSED)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "passed on a fresh Debian 12 root: 212 passed in 30.00s" in p.stdout
    assert mounts_under(cache) == []
    root = cache / "root"
    args = (root / "env-args.txt").read_text().splitlines()
    assert args[0] == "-i" and "CI=true" in args and "PIP_INDEX_URL=https://pypi.example/simple" in args
    # cloned under root's home (mode 0700), in a path with a space, as a reader of the README would
    assert args[-5:] == ["/bin/sh", "-c", 'cd "$1" && make demo && make check', "sh", "/root/src/vzcaps checkout"]
    assert (root / "root").stat().st_mode & 0o777 == 0o700
    assert not any(a.startswith(("VZCAPS_FRESH", "PYTEST", "PWD=")) for a in args), args
    with open("/etc/resolv.conf", "rb") as f:
        assert (root / "etc" / "resolv.conf").read_bytes() == f.read()
    for f in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf"):
        if os.path.isfile(f):
            assert (root / f.lstrip("/")).read_bytes() == open(f, "rb").read(), f
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=root / "root" / "src" / "vzcaps checkout", capture_output=True,
                          text=True).stdout == head


def test_a_skipped_test_fails_it(cache):
    p = run(cache, "200 passed, 3 skipped in 30.00s\n")
    assert p.returncode == 1 and "tests were skipped on the fresh root: 200 passed, 3 skipped" in p.stderr
    assert mounts_under(cache) == []


def test_a_skip_in_an_earlier_pytest_run_fails_it(cache):
    """make check runs pytest twice (the suite, then check-emu's tests/emu): a skip in the first
    run fails it although the last closing line is clean."""
    p = run(cache, "200 passed, 3 skipped in 30.00s\ncheck-emu: ...\n229 passed in 20.00s\n")
    assert p.returncode == 1 and "tests were skipped on the fresh root: 200 passed, 3 skipped" in p.stderr


def test_a_cmocka_skip_fails_it(cache):
    p = run(cache, "[  SKIPPED ] test_x\n212 passed in 30.00s\n")
    assert p.returncode == 1 and "cmocka skipped tests" in p.stderr


def test_no_pytest_summary_fails_it(cache):
    p = run(cache, "make: nothing to be done\n")
    assert p.returncode == 1 and "no pytest summary" in p.stderr


def test_a_failing_set_up_command_fails_it_and_unmounts_then_a_second_run_works(cache):
    p = run(cache, "install-deps: missing packages: groff\n", rc=2)
    assert p.returncode == 1 and "the set-up commands failed on the fresh root (exit 2" in p.stderr
    assert "install-deps: missing packages: groff" in p.stdout  # the log's tail is shown
    assert mounts_under(cache) == []
    again = run(cache, PASSED)
    assert again.returncode == 0, again.stderr
    assert mounts_under(cache) == []


def test_mounts_left_by_a_killed_run_are_undone_before_the_root_is_replaced(cache):
    (cache / "root" / "proc").mkdir(parents=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(cache / "root" / "proc")], check=True)
    try:
        p = run(cache, PASSED)
    finally:
        if mounts_under(cache):
            subprocess.run(["umount", "-l", str(cache / "root" / "proc")])
    assert p.returncode == 0, p.stderr
    assert mounts_under(cache) == [] and os.path.exists("/proc/self")
