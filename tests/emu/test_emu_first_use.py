"""The shipped arm64 slice under emulation: the work left to the first device or child (the
constructor decides only what must be known before main): a device made long after start-up, a
child spawned before any device, each class entry answering from its own original, a subclass
whose own methods ask super."""
import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
import cases
from shipped import (CHILDREN, M2, STOCK, env_of, expected_child_env, img, libpath, logdir, proc, progs,  # noqa: F401  (fixtures)
                     stats_records)


# ---------------------------------------------------------------- work left to the first device or child
# The constructor decides only what must be known before main; the hooked line, the stats
# record's preparation and the library's own slices are prepared when first needed.

def test_a_device_created_long_after_start_up_answers_and_says_what_one_made_at_once_does(img, logdir):
    """Started, then a child, errno and the environment changed, and only then the first device:
    the same answers, the same line, and one record, written then and not before."""
    log = logdir / "late.jsonl"
    at_once = proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(logdir / "at-once.jsonl")))
    want = at_once.probe()
    p = proc(img, env_of(**M2, VZCAPS_LOG_FILE=str(log)))
    assert cases.vz_lines(p.stderr) == [] and p.d.opened_for_writing == [] and not log.exists()
    r = p.run_child("posix_spawn", "/usr/bin/true", [])
    assert r["ran"] is not None and not any(e.startswith("VZCAPS_") for e in r["ran"]["env"])
    assert cases.vz_lines(p.stderr) == [] and not log.exists()  # a child is no device
    p.d.set_errno(1234)
    assert p.probe() == want
    assert p.m.u32(p.d.errno_addr) == 1234
    assert cases.vz_lines(p.stderr) == cases.vz_lines(at_once.stderr)
    assert len(cases.vz_lines(p.stderr)) == 1 and cases.vz_lines(p.stderr)[0].startswith("vzcaps: hooked")
    (rec,) = stats_records(log)
    (first,) = stats_records(logdir / "at-once.jsonl")
    assert {k: v for k, v in rec.items() if k not in ("time", "pid")} == \
        {k: v for k, v in first.items() if k not in ("time", "pid")}


@pytest.mark.parametrize("child", ["matching", "non-matching"])
def test_a_spawn_before_any_device(img, progs, child):
    """inherit = matching, a child started before the process has a device: the library's own
    file is read for its slices then (not at start-up), the child gets what it gets when started
    later, and the device made afterwards is hooked and said once."""
    name, sub, keep = CHILDREN[child]
    env = {"PATH": str(progs / sub) + ":/usr/bin", "HOME": "/nonexistent-home", "LANG": "C",
           "VZCAPS_CONFIG": str(progs / "vzcaps.conf"), "VZCAPS_HOST_CHIP": "Apple M2", "DYLD_INSERT_LIBRARIES": libpath()}
    p = proc(img, env)
    assert cases.vz_lines(p.stderr) == []
    r = p.run_child("posix_spawnp", name, [])
    assert r["ran"] is not None
    assert dict(e.split("=", 1) for e in r["ran"]["env"]) == expected_child_env(env, keep)
    again = p.run_child("posix_spawnp", name, [])  # the slices, read once, still decide the same
    assert dict(e.split("=", 1) for e in again["ran"]["env"]) == expected_child_env(env, keep)
    out = p.probe()
    assert out["families"][1008] == 1 and out["families"][1009] == 0
    (line,) = cases.vz_lines(p.stderr)
    assert line.startswith("vzcaps: hooked")


@pytest.mark.parametrize("scope", ["default scope", "every caller"])
def test_each_class_entry_answers_from_its_own_original(img, scope):
    """Thirty-two device classes hooked in one process, each through the replacements of its own
    entry of the class table (one set per entry, for a scoped process and for one whose scope is
    every caller): each answers as the profile says, from its own original; a thirty-third is
    left stock, and says why."""
    extra = {} if scope == "default scope" else {"VZCAPS_STOCK_CALLERS": "none"}
    p = proc(img, env_of(**M2, VZCAPS_MAX_THREADGROUP_MEMORY="16384", VZCAPS_RECOMMENDED_WORKING_SET_SIZE="8589934592",
                         **extra))
    rt = p.d.objc
    for i in range(33):
        rt.add_class(f"Dev{i}", "AppleParavirtDevice")
        c = rt.classes[f"Dev{i}"]
        rt.add_py_method(c, "supportsFamily:", lambda m, o, s, f, *_, i=i: 1 if 1001 <= f <= 1005 or (f == 2001 and i % 2) else 0,
                         "c24@0:8q16")
        rt.add_py_method(c, "maxThreadgroupMemoryLength", lambda m, *_, i=i: 20000 + i, "Q16@0:8")
        rt.add_py_method(c, "recommendedMaxWorkingSetSize", lambda m, *_, i=i: 5010800640 + i, "Q16@0:8")
    for i in range(33):
        dev = rt.send(rt.new(f"Dev{i}"), "init", image="Metal")
        got = p.ask(dev)
        hooked = i < 32
        want = {f: int(1001 <= f <= (1008 if hooked else 1005) or (f == 2001 and i % 2 == 1)) for f in STOCK}
        assert (got["families"], got["tg"], got["ws"]) == (want, 20000 + i, 8589934592 if hooked else 5010800640 + i), f"Dev{i}"
    lines = cases.vz_lines(p.stderr)
    assert lines[0].startswith("vzcaps: hooked Dev0 ") and lines[1:] == ["vzcaps: more than 32 device classes; Dev32 left stock"]


def test_a_subclass_whose_own_methods_ask_super(img):
    """DevA hooked first, then its subclass DevB, whose own methods ask super: DevB's replacements
    reach DevB's originals, whose super sends reach DevA's replacements and DevA's originals,
    once each. (A lookup by the receiver's class found DevB's original again from DevA's
    replacement, and recursed without end.)"""
    p = proc(img, env_of(**M2, VZCAPS_MAX_THREADGROUP_MEMORY="16384", VZCAPS_RECOMMENDED_WORKING_SET_SIZE="8589934592"))
    rt = p.d.objc
    rt.add_class("DevA", "AppleParavirtDevice")
    rt.add_class("DevB", "DevA")
    A, B = rt.classes["DevA"], rt.classes["DevB"]
    calls = []

    def own(cls, sel, answer, types):
        def method(m, o, s, *a):
            calls.append(cls.name)
            assert len(calls) < 8, f"-[{cls.name} {sel}] reached again and again: {calls}"  # not a crash of the runner
            return answer(m, o, s, *a)
        rt.add_py_method(cls, sel, method, types)

    def ask_super(m, o, s, *a):
        return m.call(rt.lookup(A, rt.sel_names[s]).imp, o, s, *a[:1 if rt.sel_names[s].endswith(":") else 0], image="probe")
    own(A, "supportsFamily:", lambda m, o, s, f, *_: 1 if 1001 <= f <= 1005 else 0, "c24@0:8q16")
    own(A, "maxThreadgroupMemoryLength", lambda *_: 20000, "Q16@0:8")
    own(B, "supportsFamily:", ask_super, "c24@0:8q16")
    own(B, "maxThreadgroupMemoryLength", ask_super, "Q16@0:8")
    rt.send(rt.new("DevA"), "init", image="Metal")
    calls.clear()  # DevA's creation asked its own supportsFamily: 7 times (Metal's ask, and no_raise's)
    dev = rt.send(rt.new("DevB"), "init", image="Metal")
    assert [l.split(" via ")[0] for l in cases.vz_lines(p.stderr)] == ["vzcaps: hooked DevA for probe"]
    calls.clear()
    assert rt.send(dev, "supportsFamily:", 1009, image="probe") & 0xFF == 0  # not claimed: the originals answer
    assert calls == ["DevB", "DevA"]
    calls.clear()
    assert rt.send(dev, "supportsFamily:", 1003, image="probe") & 0xFF == 1
    assert rt.send(dev, "supportsFamily:", 1008, image="probe") & 0xFF == 1  # claimed: no original asked
    assert calls == []
    assert rt.send(dev, "maxThreadgroupMemoryLength", image="probe", site=1) == 20000
    assert calls == ["DevB", "DevA"]
