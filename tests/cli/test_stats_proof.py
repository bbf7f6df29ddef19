"""vzcaps stats --require proves the effect (issue 44): a run passes only when its process got a
raised answer (the library's "unlocked" record), and the proof says why a hooked run raised
nothing; NAME=COUNT counts the runs (a run past its shim writes nothing); a record torn by
RLIMIT_FSIZE or a full disk, records a rotation dropped after the zero mark, and a log directory
another user swaps between the check and the read never let a stock job pass. The rig's cases
start build/probe (and build/callers) through the library, as a job does."""
import json
import os
import resource
import shutil
import subprocess
import tempfile

import pytest

from conftest import BUILD, LINUX_ONLY, clean_env, needs_root
from test_stats import ran, rec, write_log

VZ = str(BUILD / "vzcaps")
M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")


def vz(*args, **env):
    return subprocess.run([VZ, "stats", *args], env=clean_env(**env), capture_output=True, text=True, timeout=60)


def run(log, program="probe", preexec=None, **env):
    p = subprocess.run([str(BUILD / program)], env=clean_env(LD_PRELOAD=BUILD / "libvzcaps.so", VZCAPS_LOG_FILE=log, **env),
                       capture_output=True, text=True, timeout=60, preexec_fn=preexec)
    assert p.returncode == 0, p.stderr
    return p


@pytest.fixture
def logs(tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    return d


# ---- the effect: a job whose every answer stayed stock fails, naming why ----

@LINUX_ONLY
def test_a_job_that_got_raised_answers_passes_and_one_that_got_none_fails_naming_why(logs, tmp_path):
    log = logs / "usage.log"
    run(log, **M2)
    assert vz("--require", "probe", VZCAPS_LOG_FILE=log).returncode == 0
    run(log, VZCAPS_APPLE_FAMILY_MAX="1005", VZCAPS_HOST_CHIP="Apple M2")  # nothing above what the guest has
    p = vz("--require", "probe", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and p.stderr.startswith("vzcaps stats: --require probe: no answer raised in 1 of 2 runs: "
                                                     "nothing above the device's own family: it answers Apple5 and the "
                                                     "profile claims up to Apple5; no floor above its limits"), p.stderr
    runs = json.loads(vz("--require", "probe", "--json", VZCAPS_LOG_FILE=log).stdout)["required"][0]["runs"]
    assert [r["verdict"] for r in runs] == ["unlocked", "no_effect"] and runs[1]["reason"].startswith("nothing above")
    # no caller in scope: callers = libggml* for a program that asks from no such image
    conf = tmp_path / "c.conf"
    conf.write_text("[callers]\nmatch = callers\napple_family_max = auto\ncallers = libggml-cuda*\n")
    conf.chmod(0o644)
    run(log, "callers", VZCAPS_CONFIG=conf, VZCAPS_HOST_CHIP="Apple M2")
    p = vz("--require", "callers", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and "no answer raised in 1 of 1 run: no caller in scope: the images that asked were kept " \
                                 "stock (" in p.stderr, p.stderr
    images = p.stderr.split("kept stock (")[1].rstrip(")\n").split(", ")
    assert len(images) == 4 and "libggml-metal.so" in images and "libtorch_cpu.so" in images  # at most 4 a process


# ---- NAME=COUNT: the runs a job knows it made, each with its effect ----

def test_the_counted_form_catches_a_run_the_log_never_saw(tmp_path):
    """Three runs of llama-server, one of them by its path past the shim (no library, no record):
    the log holds two; --require llama-server passes on them, llama-server=3 does not."""
    log = write_log(tmp_path / "usage.log", ran("llama-server", pid=1), ran("llama-server", pid=2))
    assert vz("--require", "llama-server", VZCAPS_LOG_FILE=log).returncode == 0
    p = vz("--require", "llama-server=3", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and p.stderr == "vzcaps stats: --require llama-server: ran 2 times, not 3\n"
    assert json.loads(vz("--require", "llama-server=3", "--json", VZCAPS_LOG_FILE=log).stdout)["required"][0]["count"] == 3
    p = vz("--require", "llama-server=2", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and p.stdout == "vzcaps stats: --require: unlocked in every run: llama-server (2)\n"
    assert vz("--require", "llama-server=0", "never=0", VZCAPS_LOG_FILE=log).returncode == 1
    assert vz("--require", "never=0", VZCAPS_LOG_FILE=log).returncode == 0  # asked not to run: it did not


def test_names_with_an_equals_sign(tmp_path):
    """The text after the last '=' is COUNT when it is digits; "NAME=" is NAME (a name that ends in
    "=DIGITS" is given with one '=' more); anything else is the NAME as it is."""
    log = write_log(tmp_path / "usage.log", ran("a=1", pid=1), ran("x=y", pid=2), ran("b=", pid=3))
    assert vz("--require", "x=y", VZCAPS_LOG_FILE=log).returncode == 0
    assert vz("--require", "a=1=", VZCAPS_LOG_FILE=log).returncode == 0
    assert vz("--require", "a=1=1", VZCAPS_LOG_FILE=log).returncode == 0
    assert vz("--require", "a=1", VZCAPS_LOG_FILE=log).stderr == "vzcaps stats: --require a: ran 0 times, not 1\n"
    assert vz("--require", "b==", VZCAPS_LOG_FILE=log).returncode == 0 and vz("--require", "b==1", VZCAPS_LOG_FILE=log).returncode == 0
    assert vz("--require", "=3", VZCAPS_LOG_FILE=log).stderr.startswith("vzcaps stats: --require =3: never ran")
    p = vz("--require", "a=1=1", "a=1=2", VZCAPS_LOG_FILE=log)
    assert p.returncode == 2 and "--require a=1=2: the same NAME is given with another COUNT" in p.stderr


# ---- a torn record never lets a stock run pass ----

def torn_left_stock(log, cut_with):
    """probe left stock (no host chip the table knows) with its record cut short by cut_with(k):
    k bytes of it written, past its event, then two hooked runs appended to the same line."""
    probe_path = os.path.realpath(BUILD / "probe")
    head = f'{{"v":1,"time":1800000000,"pid":1234567,"program":"probe","path":"{probe_path}","event":"left_stock",'
    cut_with(len(head) + 12, lambda **kw: run(log, VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9", **kw))
    run(log, **M2), run(log, **M2)
    (torn,) = [line for line in log.read_bytes().split(b"\n") if b'"left_stock"' in line]
    assert b'"event":"left_stock","' in torn and torn.count(b'{"v":1') == 2, torn  # cut, then a whole one


def assert_the_torn_stock_run_fails(log):
    p = vz("--require", "probe", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and p.stderr.splitlines()[-1] == "vzcaps stats: --require probe: left stock in 1 of 3 runs: " \
                                                              "(no reason given)", p.stderr
    assert p.stdout == "vzcaps stats: --require: fails (1 line skipped, named on standard error)\n"  # said on stdout too


def records_of(size):
    """Whole records of another program, size bytes together (each under 1024 bytes)."""
    base, out = len(rec("filler", pid=9, path="") + "\n"), ""
    while len(out) < size:
        n = size - len(out) if size - len(out) <= 1000 else 500
        out += rec("filler", pid=9, path="p" * (n - base)) + "\n"
    assert len(out) == size
    return out.encode()


@LINUX_ONLY
def test_a_record_torn_by_the_file_size_limit(logs):
    log = logs / "usage.log"
    log.write_bytes(b"")
    log.chmod(0o600)

    def cut(k, start):
        start(preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (k, k)))
    torn_left_stock(log, cut)
    assert_the_torn_stock_run_fails(log)


@LINUX_ONLY
@needs_root("mounts a 16 KiB tmpfs")
def test_a_record_torn_by_a_full_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", str(mnt)], check=True)
    try:
        log, fill = mnt / "usage.log", mnt / "fill"

        def cut(k, start):
            log.write_bytes(records_of(4096 - k))  # the record's first k bytes end its page
            log.chmod(0o600)
            with open(fill, "wb", buffering=0) as f:  # every page left taken: the record's write stops at its page's end
                try:
                    while f.write(b"y" * 512):
                        f.flush()
                except OSError:
                    pass
            start()
            fill.unlink()
        torn_left_stock(log, cut)
        assert_the_torn_stock_run_fails(log)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


# ---- nothing lost to rotation unseen: two writers across rotations, after the zero mark ----

@LINUX_ONLY
def test_writers_across_rotations_lose_no_record_since_the_mark_unsaid(logs):
    log = logs / "usage.log"
    filler = rec("filler", pid=9) + "\n"
    log.write_text(filler)
    log.chmod(0o600)
    assert vz("--zero", VZCAPS_LOG_FILE=log).returncode == 0
    env = clean_env(LD_PRELOAD=BUILD / "libvzcaps.so", VZCAPS_LOG_FILE=log, **M2)

    def job(n):  # n processes at once, the log one record short of its rotation
        with open(log, "a") as f:
            f.write(filler * ((1 << 20) // len(filler) - (log.stat().st_size // len(filler) if log.exists() else 0)))
        procs = [subprocess.Popen([str(BUILD / "probe")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(n)]
        assert [p.wait(timeout=60) for p in procs] == [0] * n
    job(12)  # one rotation after the mark: every record kept (PATH.1 and PATH)
    p = vz("--require", "probe=12", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0, p.stderr
    job(12)  # a second: the first file after the mark is gone, and the proof says so
    p = vz("--require", "probe=24", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and " records written since the zero mark of " in p.stderr, p.stderr
    lost = json.loads(vz("--require", "probe", "--json", VZCAPS_LOG_FILE=log).stdout)["lost"]
    assert lost > 1000, lost  # the first file's filler and the runs with it
    assert f"({lost} records written since the zero mark of " in p.stdout


# ---- the files read are the ones whose directory was checked ----

RACE = r'''#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
static int fired;
static void race(const char *p)
{
    const char *b = strrchr(p, '/');
    if (!fired && strncmp(b ? b + 1 : p, "usage.log", 9) == 0 && (fired = 1))
        system(getenv("RACE_CMD"));
}
#define OPEN(name) int name(const char *p, int f, ...) { va_list a; va_start(a, f); int m = va_arg(a, int); va_end(a); \
    race(p); return ((int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name))(p, f, m); }
#define OPENAT(name) int name(int d, const char *p, int f, ...) { va_list a; va_start(a, f); int m = va_arg(a, int); \
    va_end(a); race(p); return ((int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name))(d, p, f, m); }
OPEN(open) OPEN(open64) OPENAT(openat) OPENAT(openat64)
'''


@LINUX_ONLY
@needs_root("a second user swaps a directory of root's")
def test_a_log_directory_swapped_between_the_check_and_the_read_is_not_read(tmp_path):
    """root's log directory in a directory of another user's: right after --require checked it, that
    user moves it aside and puts a directory of their own there, with a forged record of a run that
    got raised answers (a race hook in the command starts them at its first open of PATH.1 or PATH). The
    records read are still root's: the job's only run was stock, and it fails."""
    src, lib = tmp_path / "race.c", tmp_path / "librace.so"
    src.write_text(RACE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src), "-ldl"], check=True)
    base = pathlib_mkdtemp()
    try:
        theirs = base / "theirs"
        theirs.mkdir(mode=0o755)
        os.chown(theirs, 65534, 65534)
        logs = theirs / "logs"
        logs.mkdir(mode=0o700)
        log = write_log(logs / "usage.log", rec("probe", "left_stock", 0, "no host chip", pid=1))
        log.chmod(0o600)
        write_log(base / "forged", ran("probe", pid=2)).chmod(0o644)
        cmd = (f"env -u LD_PRELOAD setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cd {theirs} && mv logs logs.real && "
               f"mkdir -m 755 logs && cp {base}/forged logs/usage.log'")
        p = vz("--require", "probe", VZCAPS_LOG_FILE=log, LD_PRELOAD=lib, RACE_CMD=cmd)
        assert (theirs / "logs.real").is_dir() and (theirs / "logs" / "usage.log").stat().st_uid == 65534  # swapped
        assert p.returncode == 1 and p.stderr.endswith("--require probe: left stock in 1 of 1 run: no host chip\n"), p.stderr
    finally:
        shutil.rmtree(base)


def pathlib_mkdtemp():
    import pathlib
    d = pathlib.Path(tempfile.mkdtemp(prefix="vzcaps-race-"))
    d.chmod(0o755)  # the second user reaches their directory through it
    return d
