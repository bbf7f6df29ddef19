"""The shipped arm64 slice under emulation: the stats log (log_file, VZCAPS_LOG_FILE), its record
against the rig library's for the same configuration, and where it is written: never a FIFO, a
link or a shared directory, the directory opened and walked, a name byte that is not UTF-8,
rotation at one mebibyte (never over a log.1 that is not ours, nor one another writer holds), and
errno kept when a write fails."""
import os

import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
import cases
from conftest import BUILD
from shipped import HOST, M2, env_of, img, logdir, proc, rig, stats_records, up_to  # noqa: F401  (fixtures)


# ---------------------------------------------------------------- the stats log (log_file, VZCAPS_LOG_FILE)
# The record the shipped slice writes against the rig's library's for the same configuration,
# field for field (each line parsed as JSON). Normalised, and only these: "pid" (each process
# its own) and "time" (the rig's wall clock against the stand-in's virtual one) -> each checked
# to be a positive integer, then dropped. "path" is not normalised: the emulated program's
# executable path is the rig's build/probe, which realpath resolves on this machine for both.

STATS_CASES = {
    "hooked": (M2, None),
    "left stock": (dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9"), None),
    "quiet": (dict(M2, VZCAPS_LOG="quiet"), None),
    "own supportsFamily:": (dict(M2, FAKEMETAL_CLASS="own"), None),
    "explicit 1009 on M3": (dict(VZCAPS_APPLE_FAMILY_MAX="1009", VZCAPS_HOST_CHIP="Apple M3"), None),
    "refused value": (dict(VZCAPS_APPLE_FAMILY_MAX="abc", VZCAPS_HOST_CHIP="Apple M2"), None),
    "log_file in the config": ({"VZCAPS_HOST_CHIP": "Apple M2"}, "log_file = {log}\n[probe]\nmatch = probe\napple_family_max = auto\n"),
    "tilde": (dict(M2, VZCAPS_LOG_FILE="~/{name}"), None),
}


def stats_normalised(rec):
    for k in ("pid", "time"):
        assert isinstance(rec[k], int) and rec[k] > 0, (k, rec[k])
    return {k: v for k, v in rec.items() if k not in ("pid", "time")}


def stats_env(conf_env, conf_text, logdir, name):
    env = {k: v.format(name=name) for k, v in conf_env.items()}
    env["HOME"] = str(logdir)
    if "VZCAPS_LOG_FILE" not in env and conf_text is None:
        env["VZCAPS_LOG_FILE"] = str(logdir / name)
    if conf_text is not None:
        conf = logdir / f"{name}.conf"
        conf.write_text(conf_text.format(log=logdir / name))
        conf.chmod(0o644)
        env["VZCAPS_CONFIG"] = str(conf)
    return env


def probe_path():
    return os.path.realpath(BUILD / "probe")


@pytest.mark.parametrize("case", STATS_CASES)
def test_the_stats_record_is_the_rigs(img, rig, logdir, case):
    import subprocess
    conf_env, conf_text = STATS_CASES[case]
    env = stats_env(conf_env, conf_text, logdir, "rig.jsonl")
    renv = dict(cases.base_env({}, ""), **env, LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    subprocess.run([probe_path()], env=renv, capture_output=True, timeout=60, check=True)
    p = proc(img, env_of(**stats_env(conf_env, conf_text, logdir, "emu.jsonl")), exe=probe_path())
    assert p.probe()["class"]
    want, got = stats_records(logdir / "rig.jsonl"), stats_records(logdir / "emu.jsonl")
    assert len(want) == len(got) == 1
    assert stats_normalised(got[0]) == stats_normalised(want[0])
    assert got[0]["pid"] == p.d.pid  # the stand-in's getpid, as written
    assert oct((logdir / "emu.jsonl").stat().st_mode & 0o777) == "0o600"
    assert p.d.opened_for_writing == [str(logdir / "emu.jsonl")]


def test_without_a_log_file_nothing_is_opened_for_writing(img, tmp_path):
    """No log_file, no VZCAPS_LOG_FILE (or VZCAPS_LOG_FILE= over the config's): the library
    opens nothing to write, hooked or left stock."""
    conf = tmp_path / "c.conf"
    conf.write_text(f"log_file = {tmp_path / 'x.jsonl'}\n[probe]\nmatch = probe\napple_family_max = auto\n")
    conf.chmod(0o644)
    for env in (M2, dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9"),
                dict(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_LOG_FILE="")):
        p = proc(img, env_of(**env))
        p.probe()
        assert p.stderr.startswith(("vzcaps: hooked", "vzcaps: left stock"))
        assert p.d.opened_for_writing == [] and p.d.renames == []
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("where", ["fifo", "link", "shared dir", "missing dir"])
def test_the_log_is_never_a_fifo_a_link_or_in_a_shared_directory(img, tmp_path, logdir, where):
    """As on the rig (test_statslog: never_through_a_link, never_into_a_fifo, ...): nothing
    opened, nothing said beyond the line, errno as the caller left it."""
    target = logdir / "x.jsonl"
    if where == "fifo":
        os.mkfifo(target)
    elif where == "link":
        os.symlink(logdir / "elsewhere", target)
    elif where == "shared dir":
        (tmp_path / "shared").mkdir(mode=0o777)
        (tmp_path / "shared").chmod(0o1777)
        target = tmp_path / "shared" / "x.jsonl"
    else:
        target = logdir / "missing" / "x.jsonl"
    p = proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(target)))
    p.d.set_errno(1234)
    p.probe()
    assert p.m.u32(p.d.errno_addr) == 1234
    assert p.d.opened_for_writing == [] and not (logdir / "elsewhere").exists()
    assert cases.vz_lines(p.stderr) and all(l.startswith("vzcaps: hooked") for l in cases.vz_lines(p.stderr))


@pytest.mark.parametrize("where", ["own link", "link anyone could replace", "another user's link"])
def test_the_log_directory_is_the_one_opened_walked_by_the_standin_openat(img, tmp_path, logdir, where):
    """The rig's link cases on the slice (openat, fstatat, readlinkat stand-ins): a link only root or
    this user could have made is followed (as /tmp -> private/tmp); one in a directory others may
    write and that is not sticky, or another user's in a sticky one, is not, and nothing is opened."""
    if where == "another user's link" and os.geteuid() != 0:
        pytest.skip("needs root: gives a link to another user")
    d = tmp_path / "d"
    d.mkdir()
    d.chmod({"own link": 0o755, "link anyone could replace": 0o777, "another user's link": 0o1777}[where])
    (d / "l").symlink_to("../logs")
    if where == "another user's link":
        os.lchown(d / "l", 65534, 65534)
    p = proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(d / "l" / "x.jsonl")))
    p.d.set_errno(1234)
    p.probe()
    assert p.m.u32(p.d.errno_addr) == 1234
    if where == "own link":
        assert p.d.opened_for_writing == [str(logdir / "x.jsonl")] and len(stats_records(logdir / "x.jsonl")) == 1
    else:
        assert p.d.opened_for_writing == [] and list(logdir.iterdir()) == []


def test_a_name_byte_that_is_not_utf8_is_written_as_its_surrogate_escape(img, logdir):
    """The rig's test_a_name_with_a_byte_that_is_not_utf8_is_not_merged_with_the_character on the
    slice: getprogname's p\\xff is written \\udcff, not \\u00ff (the character U+00FF)."""
    log = logdir / "s.jsonl"
    for name in (b"p\xff", "p\u00ff"):
        proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log)), argv=(name,)).probe()
    raw = [line for line in log.read_bytes().split(b"\n") if b'"event":"hooked"' in line]
    assert b'"program":"p\\udcff"' in raw[0] and '"program":"p\u00ff"'.encode() in raw[1]
    assert [os.fsencode(r["program"]) for r in stats_records(log)] == [b"p\xff", "p\u00ff".encode()]


def record_filler(size=1048576):
    """size bytes of 128-byte records (a rotation replaces a LOG.1 only when it begins with one)."""
    line = b'{"v":1,"time":1,"pid":1,"program":"%s","path":"","event":"hooked","class":"","family":1008,"reason":"","no_raise":""}\n'
    line = line % (b"f" * (128 - len(line % b"")))
    return line * (size // 128)


@pytest.mark.parametrize("kind", ["directory", "user's file"])
def test_rotation_never_replaces_a_log_1_that_is_not_ours(img, logdir, kind):
    """The rig's test_rotation_replaces_only_a_log_1_of_ours on the slice: a directory or a
    user's own file at LOG.1 is left alone, no rename is made, and LOG is appended to past 1 MiB."""
    log, old = logdir / "stats.jsonl", logdir / "stats.jsonl.1"
    if kind == "directory":
        old.mkdir()
    else:
        old.write_text("my own notes\n")
        old.chmod(0o600)
    filler = record_filler()
    log.write_bytes(filler)
    log.chmod(0o600)
    for _ in range(2):
        p = proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log)))
        p.d.set_errno(1234)
        assert p.probe()["families"] == up_to(1008)
        assert p.d.renames == [] and p.m.u32(p.d.errno_addr) == 1234
    assert log.read_bytes().startswith(filler) and [r["program"] for r in stats_records(log)[-2:]] == ["probe"] * 2
    assert old.is_dir() if kind == "directory" else old.read_text() == "my own notes\n"


def test_rotation_at_one_mebibyte_by_the_standin_rename(img, logdir):
    """The rig's test_rotation_at_one_mebibyte on the slice: under 1 MiB appended; at 1 MiB or
    more LOG becomes LOG.1 (rename(2), replacing it) and the record starts a new LOG."""
    log, old = logdir / "stats.jsonl", logdir / "stats.jsonl.1"
    old.write_bytes(record_filler(256))  # the previous rotation: records (a LOG.1 of ours)
    old.chmod(0o600)
    filler = record_filler()
    log.write_bytes(filler[:-128])
    log.chmod(0o600)
    env = env_of(**M2, VZCAPS_LOG_FILE=str(log))
    p = proc(img, env)
    p.probe()
    assert log.stat().st_size > 1048576 - 128 and old.read_bytes() == record_filler(256) and p.d.renames == []
    p = proc(img, env)
    p.d.set_errno(1234)
    p.probe()
    assert p.d.renames == [(str(log), str(old))] and p.m.u32(p.d.errno_addr) == 1234
    assert old.read_bytes().startswith(filler[:64])
    (r,) = stats_records(log)
    assert r["event"] == "hooked" and r["family"] == 1008
    log.write_bytes(filler)  # exactly 1 MiB counts
    proc(img, env).probe()
    assert len(stats_records(log)) == 1 and old.read_bytes().startswith(filler)  # then the rotation's line


def test_a_rotation_another_writer_holds_is_left_to_it(img, logdir):
    """The rig's case on the slice: the test holds flock(2) on the full LOG; the library's lock
    does not wait, it renames nothing and appends its records to that LOG; released, it rotates."""
    import fcntl
    log, old = logdir / "stats.jsonl", logdir / "stats.jsonl.1"
    old.write_bytes(record_filler(256))
    old.chmod(0o600)
    filler = record_filler()
    log.write_bytes(filler)
    log.chmod(0o600)
    env = env_of(**M2, VZCAPS_LOG_FILE=str(log))
    with open(log, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = proc(img, env)
        p.d.set_errno(1234)
        assert p.probe()["families"] == up_to(1008)
        assert p.d.renames == [] and p.d.flocks == [] and p.m.u32(p.d.errno_addr) == 1234
        assert log.read_bytes().startswith(filler) and old.read_bytes() == record_filler(256)
        assert [r["program"] for r in stats_records(log)[-1:]] == ["probe"]
    p = proc(img, env)
    p.probe()
    assert p.d.renames == [(str(log), str(old))] and [op for _, op in p.d.flocks] == [6]  # LOCK_EX | LOCK_NB
    assert old.read_bytes().startswith(filler) and len(stats_records(log)) == 1


def test_a_failing_log_write_keeps_errno(img, logdir):
    """A write(2) of the record that fails (a full disk: ENOSPC from the stand-in kernel): the
    record is lost, errno is the caller's, the host goes on."""
    log = logdir / "full.jsonl"
    log.touch(mode=0o600)
    p = proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log)), host=dict(HOST, full_disk=[str(log)]))
    p.d.set_errno(1234)
    assert p.probe()["families"] == up_to(1008)
    assert p.m.u32(p.d.errno_addr) == 1234
    assert p.d.opened_for_writing == [str(log)] and log.read_bytes() == b""
