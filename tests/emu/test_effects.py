"""The proof's records on the shipped arm64 slice (issue 44): dist/libvzcaps.dylib under emulation
writes, beside its hooked record, the record of what its answers did ("unlocked": the first answer
above the device's own, before that answer returns), says in the hooked record when no answer
can be raised ("no_raise"), names the images the caller scope kept stock ("stock_caller", at
most 4), never writes into a file the host opened at its kept descriptor's number, says in the
file a rotation renames what it dropped (never past RLIMIT_FSIZE: getrlimit), and claims
VZCAPS_PROGRAM with its pid and its parent's (getppid). Each compared with the rig's library
where the rig can say the same. Named to run before test_emu_zz_coverage.py, which counts these."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from conftest import BUILD  # noqa: E402
from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401
import cases  # noqa: E402
from shipped import HOST, M2, env_of, img, logdir, proc, stats_records  # noqa: E402,F401  (fixtures)

# the rig's stand-in Metal image and the emulated one (the device's own -initGPUFamilySupport asks Apple7)
METAL = {"libfakemetal.so", "Metal"}


def eproc(img, env, **kw):
    """The emulated probe, its executable the rig's build/probe (so both records name one path)."""
    return proc(img, env, exe=os.path.realpath(BUILD / "probe"), **kw)


def rig_log(env, log, program="probe", **kw):
    renv = dict(cases.base_env({}, ""), **env, VZCAPS_LOG_FILE=str(log), LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    subprocess.run([str(BUILD / program)], env=renv, capture_output=True, timeout=60, check=True, **kw)
    return stats_records(log, effects=True)


def same(r):
    """What the slice and the rig must agree on: all but pid, time and the Metal image's name."""
    return {k: ("Metal" if k == "image" and v in METAL else v) for k, v in r.items() if k not in ("pid", "time")}


def test_the_effect_record_is_on_disk_before_the_raised_answer_returns(img, logdir):
    log = logdir / "emu.jsonl"
    p = eproc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log)))
    dev = p.create_device()  # -initGPUFamilySupport asked Apple7 from Metal: raised, the device's own code, no effect
    assert [r["event"] for r in stats_records(log, effects=True)] == ["hooked"] and p.ask(dev, image="Metal")["apple7"] == 1
    assert [r["event"] for r in stats_records(log, effects=True)] == ["hooked"]  # Metal again: still none
    assert p.d.objc.send(dev, "supportsFamily:", 1007, image="probe", site=3) & 0xFF == 1
    got = stats_records(log, effects=True)  # on disk as the answer returned
    assert [r["event"] for r in got] == ["hooked", "unlocked"] and got[0]["no_raise"] == ""
    assert {k: got[1][k] for k in ("image", "selector", "stock", "given", "family")} == dict(
        image="probe", selector="supportsFamily:", stock=0, given=1007, family=1008)
    assert got[1]["pid"] == p.d.pid and got[1]["class"] == got[0]["class"]
    p.probe()  # later answers write nothing more: once per process and kind
    assert len(stats_records(log, effects=True)) == 2
    kept = [fd for fd, real in p.d.fds.items() if os.readlink(f"/proc/self/fd/{real}") == str(log)]
    assert len(kept) == 1 and kept[0] in p.d.cloexec  # kept open for the effects, close-on-exec
    log = logdir / "whole.jsonl"
    eproc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log))).probe()
    assert [same(r) for r in stats_records(log, effects=True)] == [same(r) for r in rig_log(M2, logdir / "rig.jsonl")]


@pytest.mark.parametrize("case", ["nothing above the device's own", "no caller in scope", "a limit raised"])
def test_what_the_records_say_matches_the_rig(img, logdir, tmp_path, case):
    conf = tmp_path / "c.conf"
    conf.write_text("[probe]\nmatch = probe\napple_family_max = auto\ncallers = libggml*\n")
    conf.chmod(0o644)
    env = {"nothing above the device's own": dict(VZCAPS_APPLE_FAMILY_MAX="1005", VZCAPS_HOST_CHIP="Apple M2"),
           "no caller in scope": dict(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2"),
           "a limit raised": dict(M2, VZCAPS_RECOMMENDED_WORKING_SET_SIZE="6000000000")}[case]
    log = logdir / "emu.jsonl"
    eproc(img, env_of(**env, VZCAPS_LOG_FILE=str(log))).probe()
    got, want = stats_records(log, effects=True), rig_log(env, logdir / "rig.jsonl")
    assert [same(r) for r in got] == [same(r) for r in want]
    events = [(r["event"], r.get("image"), r.get("selector")) for r in got]
    if case == "nothing above the device's own":
        assert events == [("hooked", None, None)] and got[0]["no_raise"].startswith("nothing above the device's own")
    elif case == "no caller in scope":
        assert events == [("hooked", None, None), ("stock_caller", "Metal", None), ("stock_caller", "probe", None)]
    else:
        assert events[-1] == ("unlocked", "probe", "recommendedMaxWorkingSetSize")
        assert (got[-1]["stock"], got[-1]["given"]) == (5010800640, 6000000000)


def test_a_file_the_host_opened_at_the_kept_descriptor_never_gets_a_record(img, logdir, tmp_path):
    """A host that closes every descriptor it did not open (closefrom) and opens a file of its own at
    the kept one's number: the effect goes to the log, opened again; the host's file is untouched."""
    conf = tmp_path / "c.conf"
    conf.write_text("[probe]\nmatch = probe\napple_family_max = auto\ncallers = probe\n")
    conf.chmod(0o644)
    log, mine = logdir / "emu.jsonl", tmp_path / "host-data"
    p = eproc(img, env_of(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_LOG_FILE=str(log)))
    dev = p.create_device()  # the device's own ask is Metal's: out of scope, nothing raised yet
    assert [r["event"] for r in stats_records(log, effects=True)] == ["hooked", "stock_caller"]
    (kept,) = [fd for fd, real in p.d.fds.items() if os.readlink(f"/proc/self/fd/{real}") == str(log)]
    p.d.fd_close(kept)
    p.d.take_fd(kept, str(mine))
    p.d.set_errno(1234)
    assert p.ask(dev)["families"][1008] == 1
    assert mine.read_bytes() == b"" and p.m.u32(p.d.errno_addr) == 1234
    got = stats_records(log, effects=True)
    assert [(r["event"], r.get("image")) for r in got][-1] == ("unlocked", "probe")


def test_a_rotation_says_what_it_drops_as_the_rigs_does(img, logdir):
    """LOG at 1 MiB over a LOG.1 that holds a zero mark and two records after it: the slice
    appends the rotation's line (zeroed: the mark's time, lost: 2) to the LOG it renames, as the
    rig's library does; under an RLIMIT_FSIZE the line would pass, it rotates nothing."""
    mark = b'{"v":1,"time":1700000000,"pid":9,"event":"zeroed"}\n'
    after = b'{"v":1,"time":1700000005,"pid":8,"program":"x","path":"","event":"hooked","class":"","family":1008,"reason":"","no_raise":""}\n'
    said = {}
    for who in ("rig", "emu"):
        d = logdir / who
        d.mkdir(mode=0o700)
        log, old = d / "s.jsonl", d / "s.jsonl.1"
        old.write_bytes(after + mark + after + after)
        log.write_bytes(after * (1048576 // len(after) + 1))
        for f in (log, old):
            f.chmod(0o600)
        if who == "rig":
            rig_log(M2, log)
        else:
            eproc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log))).probe()
        said[who] = json.loads(old.read_bytes().split(b"\n")[-2])
        assert stats_records(log)[0]["program"] == "probe"
    assert [{k: s[k] for k in ("event", "zeroed", "lost", "until")} for s in said.values()] == \
        [dict(event="rotated", zeroed=1700000000, lost=2, until=1700000005)] * 2
    d = logdir / "limited"
    d.mkdir(mode=0o700)
    log = d / "s.jsonl"
    log.write_bytes(after * (1048576 // len(after) + 1))
    log.chmod(0o600)
    size = log.stat().st_size
    p = eproc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log)), host=dict(HOST, fsize_limit=size + 10))
    p.d.set_errno(1234)
    p.probe()
    assert p.d.renames == [] and p.m.u32(p.d.errno_addr) == 1234 and not (d / "s.jsonl.1").exists()


def test_the_script_name_is_claimed_with_the_pid_and_its_parent(img, tmp_path):
    """VZCAPS_PROGRAM=0000000000:tool is claimed as PID-PPID:tool (getppid); a later process with
    the script's pid and another parent takes nothing of it and is configured by its own name."""
    conf = tmp_path / "c.conf"
    conf.write_text("[tool]\nmatch = tool\napple_family_max = 1007\n[probe]\nmatch = probe\napple_family_max = 1008\n")
    conf.chmod(0o644)
    env = dict(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_INHERIT="1")
    p = eproc(img, env_of(**env, VZCAPS_PROGRAM="0000000000:tool"), host=dict(HOST, ppid=77))
    assert max(f for f, yes in p.probe()["families"].items() if yes and f < 2000) == 1007
    r = p.run_child("execve", "/usr/bin/true", [])
    assert "VZCAPS_PROGRAM=4242-77+tool" in r["ran"]["env"]  # inherit: its children by their own names
    reuser = eproc(img, env_of(**env, VZCAPS_PROGRAM="4242-77+tool"), host=dict(HOST, ppid=5000))
    assert max(f for f, yes in reuser.probe()["families"].items() if yes and f < 2000) == 1008
