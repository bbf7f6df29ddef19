"""A suite that passes however it is started (issue 33 item 7): `nohup make check` starts every
test with SIGHUP ignored, `make check &` from a script with SIGINT and SIGQUIT ignored (POSIX: a
background job of a shell without job control); build/test_child's stop-signal cases set the dispositions they test themselves, and its case
for an ignored stop signal checks that vzcaps keeps it ignored."""
import os
import signal
import subprocess

import pytest

from conftest import BUILD


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
    assert "[  PASSED  ] 12 test(s)." in out and "FAILED" not in out, out[-3000:]
