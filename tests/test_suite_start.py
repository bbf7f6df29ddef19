"""A suite that passes however it is started (issue 33 item 7): `nohup make check` starts every
test with SIGHUP ignored, `make check &` from a script with SIGINT and SIGQUIT ignored (POSIX: a
background job of a shell without job control); build/test_child's stop-signal cases set the dispositions they test themselves, and its case
for an ignored stop signal checks that vzcaps keeps it ignored."""
import os
import re
import signal
import subprocess

import pytest

from conftest import BUILD, ROOT

ROOT_TESTS = ROOT / "tests"


def child_test(preexec=None, wrap=()):
    exe = BUILD / "test_child"
    assert exe.exists(), "build/test_child missing: run make build/test_child"
    return subprocess.run([*wrap, str(exe)], capture_output=True, text=True, timeout=300, preexec_fn=preexec,
                          stdin=subprocess.DEVNULL)


def ignore(*sigs):
    def f():
        for s in sigs:
            signal.signal(s, signal.SIG_IGN)
    return f


@pytest.mark.parametrize("how", ["hup-and-int-ignored", "nohup", "background-of-sh"])
def test_test_child_passes_however_it_is_started(how, tmp_path):
    if how == "hup-and-int-ignored":
        p = child_test(ignore(signal.SIGHUP, signal.SIGINT))
    elif how == "nohup":
        p = subprocess.run(["nohup", str(BUILD / "test_child")], capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL, cwd=tmp_path)
    else:  # as `make check &` in a script: SIGINT and SIGQUIT ignored
        p = subprocess.run(["sh", "-c", '"$1" & wait $!', "sh", str(BUILD / "test_child")], capture_output=True,
                           text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout + p.stderr
    n = (ROOT_TESTS / "unit" / "test_child.c").read_text().count("cmocka_unit_test(")  # every test it has
    assert f"[  PASSED  ] {n} test(s)." in out and "FAILED" not in out, out[-3000:]


# ---- the tests that need / as a mount point (unshare -m): one line naming the cause ----

def test_a_refused_private_mount_namespace_fails_with_the_cause():
    from conftest import ROOT, private_mounts_ran
    refused = subprocess.CompletedProcess(["unshare", "-m"], 1, "", "unshare: cannot change root filesystem propagation: Invalid argument\n")
    with pytest.raises(pytest.fail.Exception) as e:
        private_mounts_ran(refused)
    msg = str(e.value)
    assert "\n" not in msg and "needs / to be a mount point" in msg and "scripts/check-fresh" in msg
    assert msg.endswith("unshare said: unshare: cannot change root filesystem propagation: Invalid argument")
    other = subprocess.CompletedProcess(["unshare", "-m"], 1, "", "sh: 1: mount: not found\n")
    assert private_mounts_ran(other) is other  # any other failure is the test's own assertion's to report
    # every test that makes a mount namespace goes through it, and check-fresh makes / a mount point
    users = [p for p in (ROOT / "tests").rglob("test_*.py")  # unshare -m or -rm: a mount namespace
             if re.search(r'"unshare", [^\]]*"-r?m"', p.read_text()) and p.name != "test_suite_start.py"]
    assert len(users) >= 2 and all("private_mounts_ran(subprocess.run(" in p.read_text() for p in users), users
    fresh = (ROOT / "scripts" / "check-fresh").read_text()
    assert 'mount --bind "$ROOTFS" "$ROOTFS"' in fresh and "--make-private" in fresh
