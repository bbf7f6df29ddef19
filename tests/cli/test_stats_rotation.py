"""The proof and the library's rotation at once (issue 44 item 4, round seven): stats --require
holds LOG, opened first, under a shared lock while it reads LOG.1 and LOG, so a writer that finds
LOG full while the proof reads leaves the rotation to later (its lock never waits) and appends;
a stock run in the full LOG is read, never moved away unread. On the rig, with the real library
as the writer, started from inside stats's read of LOG.1."""
import json
import os
import subprocess

from conftest import BUILD, LINUX_ONLY, clean_env, need_tool
from test_hostile_round7 import ROTATE_WHILE_READ
from test_stats import ran, rec

# the second open of usage.log.1 in the process (the first looks at its first bytes; the second
# reads it: stats's read, or a rotation's count) caught as test_hostile_round7's hook catches it
SECOND_OPEN_OF_LOG1 = ROTATE_WHILE_READ[:ROTATE_WHILE_READ.index("ssize_t read")] + r'''
#include <errno.h>
#include <stdlib.h>
ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (fd == old_fd)
        ON_READ;
    return real(fd, buf, n);
}
'''
# stats's first read of LOG.1: the command in WRITER runs, once
WRITER_DURING_READ = "#define ON_READ { old_fd = -1; if (system(getenv(\"WRITER\")) != 0) _exit(99); }\n" + SECOND_OPEN_OF_LOG1


@LINUX_ONLY
def test_a_writer_during_the_proofs_read_appends_and_never_rotates(tmp_path):
    need_tool("cc")
    (tmp_path / "w.c").write_text(WRITER_DURING_READ)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "w.so"), str(tmp_path / "w.c"), "-ldl"], check=True,
                   capture_output=True)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log, old = logs / "usage.log", logs / "usage.log.1"
    old.write_text('{"v":1,"time":1764619000,"pid":5,"event":"zeroed"}\n' + ran("probe", pid=1) + "\n")
    filler = rec("filler", pid=9, path="/" + "p" * 400) + "\n"
    stock = rec("probe", "left_stock", 0, "no chip", pid=2) + "\n"
    log.write_text(filler * (1048576 // len(filler) + 1) + stock)  # full: the next writer would rotate it
    for f in (log, old):
        f.chmod(0o600)
    before = old.read_bytes()
    probe = os.path.realpath(BUILD / "probe")
    writer = (f"env -i LD_PRELOAD={BUILD / 'libvzcaps.so'} VZCAPS_LOG_FILE={log} VZCAPS_APPLE_FAMILY_MAX=auto "
              f"VZCAPS_HOST_CHIP='Apple M2' {probe} >/dev/null 2>&1")
    p = subprocess.run([str(BUILD / "vzcaps"), "stats", "--require", "probe", "--json"], capture_output=True, text=True,
                       timeout=60, env=clean_env(VZCAPS_LOG_FILE=log, LD_PRELOAD=tmp_path / "w.so", WRITER=writer))
    assert old.read_bytes() == before  # not rotated: the writer found LOG held
    assert b'"event":"unlocked"' in log.read_bytes()[-2048:]  # it appended its records to the full LOG instead
    req = json.loads(p.stdout)["required"][0]
    assert p.returncode == 1 and (req["ran"], req["unlocked"], req["verdict"]) == (3, 2, "stock"), (p.stdout, p.stderr)


# the rotation's read of the LOG.1 it replaces fails (EIO)
LOG1_UNREADABLE = "#define ON_READ return errno = EIO, -1\n" + SECOND_OPEN_OF_LOG1


def full_log_and_old(tmp_path, old_text):
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log, old = logs / "usage.log", logs / "usage.log.1"
    old.write_text(old_text)
    filler = rec("filler", pid=9, path="/" + "p" * 400) + "\n"
    log.write_text(filler * (1048576 // len(filler) + 1))  # full: the next writer rotates it
    for f in (log, old):
        f.chmod(0o600)
    return log, old


def write_with_library(log, preload=()):
    env = clean_env(LD_PRELOAD=":".join([*map(str, preload), str(BUILD / "libvzcaps.so")]), VZCAPS_LOG_FILE=log,
                    VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
    subprocess.run([str(BUILD / "probe")], env=env, capture_output=True, timeout=60, check=True)


def require_probe(log):
    return subprocess.run([str(BUILD / "vzcaps"), "stats", "--require", "probe"], capture_output=True, text=True, timeout=60,
                          env=clean_env(VZCAPS_LOG_FILE=log))


@LINUX_ONLY
def test_a_rotation_that_cannot_read_what_it_drops_says_the_count_is_unknown(tmp_path):
    """LOG.1 holds the zero mark and a stock run of probe; the rotation's read of it fails: its line
    said "lost":0, as if nothing were dropped, and --require passed probe on its later run alone."""
    need_tool("cc")
    (tmp_path / "bad.c").write_text(LOG1_UNREADABLE)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "bad.so"), str(tmp_path / "bad.c"), "-ldl"], check=True,
                   capture_output=True)
    log, old = full_log_and_old(tmp_path, '{"v":1,"time":1764619000,"pid":5,"event":"zeroed"}\n' +
                                rec("probe", "left_stock", 0, "no chip", pid=2) + "\n")
    write_with_library(log, [tmp_path / "bad.so"])
    said = json.loads(old.read_text().splitlines()[-1])
    assert (said["event"], said["lost"]) == ("rotated", -1), said
    p = require_probe(log)
    assert p.returncode == 1 and "an unknown number of records written were lost to the log's rotation" in p.stderr, p.stderr


@LINUX_ONLY
def test_a_rotation_reads_no_more_than_2_mib_of_what_it_drops(tmp_path):
    """A LOG.1 over 2 MiB (the log kept appending past 1 MiB while LOG.1 was not one of ours): the
    host's thread does not read it all; the count is unknown, and --require fails."""
    filler = rec("filler", pid=8, path="/" + "q" * 400) + "\n"
    log, old = full_log_and_old(tmp_path, '{"v":1,"time":1764619000,"pid":5,"event":"zeroed"}\n' +
                                filler * (2 * 1048576 // len(filler) + 1))
    write_with_library(log)
    said = json.loads(old.read_text().splitlines()[-1])
    assert (said["event"], said["lost"]) == ("rotated", -1), said
    assert require_probe(log).returncode == 1


@LINUX_ONLY
def test_an_unknown_count_stays_unknown_through_the_next_rotation(tmp_path):
    unknown = '{"v":1,"time":1764619100,"pid":6,"event":"rotated","zeroed":0,"lost":-1,"until":0}\n'
    log, old = full_log_and_old(tmp_path, rec("probe", pid=3) + "\n" + unknown + rec("probe", pid=4) + "\n")
    write_with_library(log)
    said = json.loads(old.read_text().splitlines()[-1])
    assert (said["event"], said["lost"]) == ("rotated", -1), said
    assert require_probe(log).returncode == 1
