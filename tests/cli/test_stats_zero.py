"""vzcaps stats --zero (issue 37 item 3), as ccache -z: a fresh count for a job without losing the
old records. It appends a zero mark to the log (PATH.1 when there is no log) and moves the log
to PATH.1 as the library's rotation does (src/common/statsfile.c: under the log's lock, only
while the name is still the file it opened); stats counts from the last mark on. Hostile cases:
no log, a link or a directory or a FIFO at either name, a file vzcaps did not write, a file of
another user's, a hard link, a writable directory, a full file size limit, a writer appending
all the while, a torn record before the mark, a rotation after it."""
import json
import os
import resource
import subprocess
import threading
import time

import pytest

from conftest import BUILD, LINUX_ONLY, built, clean_env, needs_root
from test_stats import rec, ran, write_log

VZ = str(BUILD / "vzcaps")
OLD = [rec("probe", "left_stock", 0, "no host chip", pid=1), rec("tool", pid=2)]


def vz(*args, _preexec=None, **extra):
    return subprocess.run([VZ, "stats", *args], env=clean_env(**extra), capture_output=True, text=True, timeout=60,
                          preexec_fn=_preexec)


def counts(log):
    p = vz("--json", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    return out["hooked"], out["left_stock"], out["before_zero"]


@pytest.fixture
def logdir(tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    return d


def test_zero_moves_the_log_aside_and_the_count_starts_afresh(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    before = log.read_text()
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == f"vzcaps stats: --zero: {log} moved to {log}.1, with the zero mark at its end; counting starts afresh\n"
    assert not log.exists()
    kept = (logdir / "usage.log.1").read_text()
    assert kept.startswith(before)  # the old records, byte for byte, then the mark
    mark = json.loads(kept[len(before):])
    assert mark["event"] == "zeroed" and mark["v"] == 1 and isinstance(mark["time"], int)
    assert counts(log) == (0, 0, 2)
    write_log(log, ran("probe", pid=3))  # the job's process, after the zero
    assert counts(log) == (1, 0, 2)
    assert vz("--require", "probe", VZCAPS_LOG_FILE=log).returncode == 0  # the stock run before the zero is not counted
    text = vz(VZCAPS_LOG_FILE=log).stdout
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(mark["time"]))  # as a person reads it
    assert f"(counted from the zero mark of {when}; 2 earlier records kept, left out)" in text
    assert vz("--require", "probe", "--json", VZCAPS_LOG_FILE=log).stdout.count('"zeroed_at":') == 1


def test_a_second_zero_replaces_the_older_rotated_file_as_rotation_does(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    write_log(logdir / "usage.log.1", rec("older", pid=9))
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and "(replacing the older one, as a rotation does)" in p.stdout
    assert "older" not in (logdir / "usage.log.1").read_text() and counts(log) == (0, 0, 2)


def test_no_log_written_yet_is_nothing_to_zero_and_makes_nothing(logdir):
    log = logdir / "usage.log"
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and p.stdout == f"vzcaps stats: --zero: nothing to zero: {log} not written yet\n"
    assert os.listdir(logdir) == []


def test_only_the_rotated_file_gets_the_mark_and_keeps_its_records(logdir):
    log = logdir / "usage.log"
    old = write_log(logdir / "usage.log.1", *OLD)
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and "the zero mark is at the end of" in p.stdout and "its records kept" in p.stdout
    assert not log.exists() and old.read_text().startswith(OLD[0] + "\n" + OLD[1] + "\n")
    assert counts(log) == (0, 0, 2)


def test_a_rotation_after_the_zero_keeps_the_jobs_records(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    assert vz("--zero", VZCAPS_LOG_FILE=log).returncode == 0
    write_log(log, rec("probe", pid=3), rec("probe", pid=4))
    os.rename(log, logdir / "usage.log.1")  # the library's rotation at 1 MiB: the mark's file replaced
    write_log(log, rec("probe", pid=5))
    assert counts(log) == (3, 0, 0)


def test_a_torn_record_before_the_mark_is_skipped_and_the_mark_read(logdir):
    log = logdir / "usage.log"
    log.write_text(OLD[0] + "\n" + OLD[1][:30])  # a writer killed mid-record: no newline
    log.chmod(0o600)
    assert vz("--zero", VZCAPS_LOG_FILE=log).returncode == 0
    p = vz("--json", VZCAPS_LOG_FILE=log)
    out = json.loads(p.stdout)
    assert (out["hooked"], out["left_stock"], out["skipped"], out["before_zero"]) == (0, 0, 1, 1)
    assert ":2: skipped: a record cut short (no newline), followed by a zero mark (read)" in p.stderr


@pytest.mark.parametrize("where", ["log", "old"])
@pytest.mark.parametrize("kind", ["link", "dir", "fifo", "not ours", "hard link", "group writable"])
def test_what_vzcaps_did_not_write_is_never_moved_or_replaced(logdir, tmp_path, where, kind):
    log = write_log(logdir / "usage.log", *OLD)
    log.chmod(0o600)
    target = log if where == "log" else logdir / "usage.log.1"
    if kind == "link":
        other = write_log(tmp_path / "elsewhere.log", *OLD)
        if target.exists():
            target.unlink()
        target.symlink_to(other)
    elif kind == "dir":
        if target.exists():
            target.unlink()
        target.mkdir()
    elif kind == "fifo":
        if target.exists():
            target.unlink()
        os.mkfifo(target)
    elif kind == "not ours":  # the user's own file at the name: not a log
        target.write_text("my notes\n")
        target.chmod(0o600)
    elif kind == "hard link":
        write_log(target, *OLD).chmod(0o600)
        os.link(target, tmp_path / "second-name")
    else:
        write_log(target, *OLD).chmod(0o620)
    before = {n: (logdir / n).lstat() for n in os.listdir(logdir)}
    contents = {n: (logdir / n).read_bytes() for n in before if (logdir / n).is_file() and not (logdir / n).is_symlink()}
    p = vz("--zero", VZCAPS_LOG_FILE=log)  # a FIFO never hangs it: the timeout would fail the test
    assert p.returncode == 1 and p.stdout == "", p.stdout
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"vzcaps stats: --zero: {target}: "), p.stderr
    assert p.stderr.rstrip().endswith("nothing moved"), p.stderr
    assert sorted(os.listdir(logdir)) == sorted(before)  # nothing moved, nothing made
    for n, st in before.items():
        assert (logdir / n).lstat().st_ino == st.st_ino, n
    for n, data in contents.items():
        assert (logdir / n).read_bytes() == data, n  # no mark written either


def test_an_empty_rotated_file_is_refused_before_the_mark_is_written(logdir):
    """An empty PATH.1 of this user's (`: > PATH.1`, as one clears a log) is no log of ours: the
    rotation never replaces it, so --zero refuses it before it writes (it wrote the mark, then
    failed the move with 'File exists', exit 1)."""
    log = write_log(logdir / "usage.log", *OLD)
    log.chmod(0o600)
    old = logdir / "usage.log.1"
    old.write_text("")
    old.chmod(0o600)
    before = log.read_bytes()
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"vzcaps stats: --zero: {old}: "), p.stderr
    assert "it is empty" in p.stderr and p.stderr.rstrip().endswith("nothing moved"), p.stderr
    assert log.read_bytes() == before and old.read_bytes() == b""  # no mark, nothing moved
    old.unlink()  # the named fix: then --zero moves the log aside
    assert vz("--zero", VZCAPS_LOG_FILE=log).returncode == 0 and counts(log) == (0, 0, 2)


@needs_root("a log file given to another user")
def test_a_log_of_another_users_is_refused(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    os.chown(log, 65534, 65534)
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and "not a file of yours alone: another owner" in p.stderr and log.exists()


def test_a_directory_the_library_would_not_write_in_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    log = write_log(shared / "usage.log", *OLD)
    p = vz("--zero", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "the library does not write there" in p.stderr
    assert log.exists() and not (shared / "usage.log.1").exists()


def test_a_full_file_size_limit_writes_no_mark_and_moves_nothing(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    size = log.stat().st_size

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))  # the mark would grow the file past it
    p = vz("--zero", VZCAPS_LOG_FILE=log, _preexec=limit)
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, (p.returncode, p.stderr)
    assert "the zero mark could not be written" in p.stderr and "nothing moved" in p.stderr
    assert log.stat().st_size == size and not (logdir / "usage.log.1").exists()


def test_a_writer_appending_all_the_while_loses_no_record(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    log.chmod(0o600)
    n = 3000
    writer = subprocess.Popen(["sh", "-c", f"i=0; while [ $i -lt {n} ]; do echo '{rec('w', pid=7)}' >> '{log}'; i=$((i+1)); done"])
    zeros = []

    def zero_now():
        for _ in range(5):
            zeros.append(vz("--zero", VZCAPS_LOG_FILE=log))
    t = threading.Thread(target=zero_now)
    t.start()
    t.join()
    assert writer.wait(timeout=120) == 0
    assert all(z.returncode == 0 for z in zeros), [z.stderr for z in zeros]
    # every record is still in one of the two files, or was in a LOG.1 a later zero replaced:
    # the last zero's LOG.1 ends with its mark and everything after it is in LOG
    lines = []
    for name in ("usage.log.1", "usage.log"):
        if (logdir / name).exists():
            lines += (logdir / name).read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if '"zeroed"' in line]
    assert marks, lines[-3:]
    after = lines[marks[-1] + 1:]
    assert all(json.loads(line)["program"] == "w" for line in after)
    assert counts(log)[0] == len(after)


def test_zero_takes_no_counting_options(logdir):
    log = write_log(logdir / "usage.log", *OLD)
    for extra in (["--json"], ["--since", "2h"], ["--require", "probe"]):
        p = vz("--zero", *extra, VZCAPS_LOG_FILE=log)
        assert p.returncode == 2 and "--zero takes no" in p.stderr and log.exists(), extra
    p = vz("--zero")
    assert p.returncode == 1 and "no log is configured" in p.stderr


@LINUX_ONLY  # the rig: LD_PRELOAD and the GNU-runtime stand-in Metal client
def test_on_the_rig_a_stock_run_before_the_zero_does_not_fail_the_next_job(logdir):
    log = logdir / "usage.log"
    env = dict(VZCAPS_LOG_FILE=log, VZCAPS_APPLE_FAMILY_MAX="auto")

    def probe(chip):
        p = subprocess.run([str(BUILD / "probe")], env=clean_env(LD_PRELOAD=BUILD / "libvzcaps.so", VZCAPS_HOST_CHIP=chip, **env),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    probe("Apple M9")  # a job before: left stock
    assert vz("--require", "probe", **env).returncode == 1
    assert vz("--zero", **env).returncode == 0
    probe("Apple M2"), probe("Apple M2")  # this job: hooked, in a LOG the library makes again
    p = vz("--require", "probe", **env)
    assert p.returncode == 0 and p.stdout.startswith("vzcaps stats: --require: unlocked in every run since the zero mark of ")
    assert p.stdout.endswith(": probe (2)\n") and oct(log.stat().st_mode & 0o777) == "0o600"


SAN = BUILD / "san" / "vzcaps"


@LINUX_ONLY
@built(SAN, how="the sanitized build")
def test_require_and_zero_under_the_sanitizers(logdir):
    """Every path of --require and --zero in the ASan/UBSan build, leaks checked: passing,
    failing, by path, a mark mid-log resetting the counts, a refused file."""
    def run(*args):
        e = clean_env(ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
        p = subprocess.run([str(SAN), "stats", *args], capture_output=True, text=True, env=e, timeout=120)
        assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr and "LeakSanitizer" not in p.stderr, p.stderr
        return p
    log = write_log(logdir / "usage.log", OLD[0], ran("tool", pid=2), rec("probe", "left_stock", 0, "again", pid=5),
                    ran("tool", pid=6))
    for args, rc in ((["--require", "probe", "tool", "x", "/bin/sh", "x", "probe"], 1), (["--require", "tool", "--json"], 0),
                     (["--require", "probe", "--json", "--since", "0"], 1), (["--zero"], 0), (["--zero"], 0),
                     (["--require", "probe"], 1), (["--json"], 0), ([], 0)):
        assert run("--log-file", str(log), *args).returncode == rc, args
    with open(log, "a") as f:  # records, a mark in the middle, a stock run before it
        f.write("\n".join([OLD[0], '{"v":1,"time":5,"pid":1,"event":"zeroed"}', ran("probe", pid=8)]) + "\n")
    assert run("--log-file", str(log), "--require", "probe").returncode == 0
    (logdir / "usage.log.1").write_text("not a log\n")
    assert run("--log-file", str(log), "--zero").returncode == 1


def test_a_relative_log_file_is_zeroed_in_the_current_directory(logdir):
    """--log-file is read as given, a relative path from the current directory: --zero moves that
    log aside (it refused it, blaming a link another user could have made)."""
    write_log(logdir / "usage.log", *OLD).chmod(0o600)
    p = subprocess.run([VZ, "stats", "--zero", "--log-file", "usage.log"], env=clean_env(), cwd=logdir,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "moved to" in p.stdout and sorted(os.listdir(logdir)) == ["usage.log.1"]
    assert counts(logdir / "usage.log") == (0, 0, 2)
