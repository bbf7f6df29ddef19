"""What the tests of the shipped arm64 slice share (test_emu.py and test_emu_*.py, test_caller_scope.py,
test_effects.py): the slice of dist/libvzcaps.dylib (VZCAPS_EMU_LIB: another file, a mutant or
the library of an earlier commit) as a fixture, a process started with it, the spawn cases, the
rig's answers, the stats log's records and the summary make check-emu reports
(build/emu-summary.json, cleared once a session)."""
import os
import pathlib
import struct
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import BUILD, ROOT, require_built  # noqa: E402
import cases  # noqa: E402

# The emulator's libraries are imported where the module runs (Linux: it is LINUX_ONLY); the
# simulated Mac (tests/test_simulated_mac.py) collects it with sys.platform faked, where
# Unicorn's Linux wheel would look for a .dylib.
if sys.platform.startswith("linux"):
    import machoemu  # noqa: E402
    from process import Process, image  # noqa: E402
    from xnu_defs import EACCES, ENOENT  # noqa: E402


LIB = pathlib.Path(os.environ.get("VZCAPS_EMU_LIB") or ROOT / "dist" / "libvzcaps.dylib")
STOCK = {f: int((1001 <= f <= 1005) or f == 2002 or 3001 <= f <= 3003) for f in
         (1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002)}
INTERPOSED = ["_MTLCreateSystemDefaultDevice", "_MTLCopyAllDevices", "_MTLCopyAllDevicesWithObserver", "_execve", "_execv",
              "_execvp", "_execl", "_execle", "_execlp", "_posix_spawn", "_posix_spawnp"]
HOST = {"brand": None, "memsize": 16 << 30, "translated": None}


@pytest.fixture(scope="module")
def img():
    require_built(LIB, how="make dist")
    if not CLEARED:  # this run's figures only: cleared at the session's first slice, before any file writes them
        CLEARED.append(SUMMARY_FILE)
        if SUMMARY_FILE.exists():
            SUMMARY_FILE.unlink()
    return image(LIB)


CURRENT = [LIB]  # the library file the checks run (a planted mutant's, for the mutant test)


def libpath():
    return str(CURRENT[0].resolve())


def env_of(**extra):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "DYLD_INSERT_LIBRARIES": libpath()}
    env.update(extra)
    return env


def proc(img, env, **kw):
    kw.setdefault("host", dict(HOST))
    return Process(img, env, lib_path=libpath(), **kw).start()


M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")


def up_to(ceiling):
    return {f: 1 if STOCK[f] or 1001 <= f <= ceiling else 0 for f in STOCK}


# ---- the interpose table, as test_emu.py checks it and the mutants must break it

def check_interpose(img):
    p = proc(img, env_of(**M2))
    table = p.m.interpose_table()
    assert [orig for _, orig in table] == INTERPOSED
    starts = set(img.function_starts())
    names = img.symbols()
    for rep, orig in table:
        assert rep - machoemu.BASE in starts, orig
        assert names[rep - machoemu.BASE] == "_vz_" + {"_MTLCreateSystemDefaultDevice": "create_default",
                                                     "_MTLCopyAllDevices": "copy_all",
                                                     "_MTLCopyAllDevicesWithObserver": "copy_all_observed"}.get(orig, orig[1:])


# ---- spawn and exec, as Libc calls them (test_emu_spawn.py, test_emu_first_use.py, the mutants)

MATCHING = ("[probe]\nmatch = probe\napple_family_max = auto\nhost_chip = Apple M2\ninherit = matching\n"
            "[server]\nmatch = llama-server\napple_family_max = auto\n")
OTHER = "/usr/local/lib/libother.dylib"


def macho(path, subtype=0, cpu=0x0100000C):
    path.write_bytes(struct.pack("<IiiIIII", 0xFEEDFACF, cpu, subtype, 2, 0, 0, 0) + b"\0" * 64)
    path.chmod(0o755)


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    t = tmp_path_factory.mktemp("spawn dir")  # a path with a space
    (t / "bin").mkdir()
    macho(t / "bin" / "llama-server")
    macho(t / "bin" / "python3")
    (t / "e").mkdir()
    macho(t / "e" / "llama-server", subtype=2)  # arm64e only: the library (arm64, x86_64) cannot load
    (t / "noexec").mkdir()
    for name in ("llama-server", "python3"):
        (t / "fail" / name).mkdir(parents=True)  # a directory of that name: EACCES, skipped
        (t / "noexec" / name).write_bytes(b"\xcf\xfa\xed\xfe")  # not executable: EACCES
    (t / "vzcaps.conf").write_text(MATCHING)
    return t


CHILDREN = {"matching": ("llama-server", "bin", True), "non-matching": ("python3", "bin", False),
            "arm64e-only": ("llama-server", "e", False), "missing": ("nosuch", "bin", None)}
HOWS = ["posix_spawnp", "posix_spawn", "execve", "execv", "execvp", "execl", "execle", "execlp"]


def expected_child_env(env, keep):
    """What a child gets: every other variable unchanged; DYLD_INSERT_LIBRARIES with the other
    libraries in order and, when it keeps the library, vzcaps's once, last; VZCAPS_* only then."""
    out = {}
    for k, v in env.items():
        if k.startswith("VZCAPS_") and not keep:
            continue
        if k == "DYLD_INSERT_LIBRARIES":
            others = [e for e in v.split(":") if not e.endswith("/libvzcaps.dylib")]
            v = ":".join(others + ([libpath()] if keep else []))
            if not v:
                continue
        out[k] = v
    return out


def spawn_case(img, progs, how, child, other, failing_first, envsrc="environ"):
    name, sub, keep = CHILDREN[child]
    dirs = ([str(progs / "fail"), str(progs / "noexec")] if failing_first else []) + [str(progs / sub), "/usr/bin"]
    env = {"PATH": ":".join(dirs), "HOME": "/nonexistent-home", "LANG": "C", "VZCAPS_CONFIG": str(progs / "vzcaps.conf"),
           "VZCAPS_HOST_CHIP": "Apple M2", "DYLD_INSERT_LIBRARIES": (OTHER + ":" if other else "") + libpath()}
    p = proc(img, env)
    searches = how in ("posix_spawnp", "execvp", "execlp")
    prog = name if searches else str(progs / sub / name)
    # the process's own environ (the constructor has taken vzcaps's variables out of it), or
    # the array the caller was given at start-up
    r = p.run_child(how, prog, ["--flag", "two words"], envp=None if envsrc == "environ" else [f"{k}={v}" for k, v in env.items()])
    for rec in r["records"]:
        got = dict(e.split("=", 1) for e in rec["env"])
        pre = got.get("DYLD_INSERT_LIBRARIES", "")
        elems = pre.split(":") if pre else []
        assert all(e.startswith("/") for e in elems), f"{how}: a relative element in {pre!r}"
        assert elems.count(libpath()) <= 1 and (not other or elems[0] == OTHER), f"{how}: {pre!r}"
        if rec["path"] != "/bin/sh":
            assert rec["argv"] == [prog, "--flag", "two words"], rec["argv"]
    if keep is None:
        assert r["ran"] is None
        assert (r["rc"] & 0xFFFFFFFF if how.startswith("posix") else p.m.u32(p.d.errno_addr)) == ENOENT
        return
    assert r["ran"] is not None and r["ran"]["path"] == str(progs / sub / name), r["records"]
    got = dict(e.split("=", 1) for e in r["ran"]["env"])
    assert got == expected_child_env(env, keep)
    if failing_first and searches:
        assert [rec["errno"] for rec in r["records"][:2]] == [EACCES, EACCES]


# ---- the rig's answers, once a case (test_emu_rig.py, test_emu_stats.py, the mutants)

@pytest.fixture(scope="module")
def rig():
    for name in ("libvzcaps.so", "probe", "callers"):
        assert (BUILD / name).exists(), f"build/{name} missing: run make"
    return BUILD


def rig_memsize():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE")


RIG = {}  # case name -> what the rig answered


def rig_answer(c, tmp):
    if c["name"] not in RIG:
        RIG[c["name"]] = cases.on_rig(c, tmp, BUILD)
    return RIG[c["name"]]


# ---- the stats log's records, each checked whole (test_emu_stats.py, test_effects.py)

STATS_KEYS = ["v", "time", "pid", "program", "path", "event", "class", "family", "reason"]
STATS_MORE = {"hooked": ["no_raise"], "left_stock": [], "unlocked": ["image", "selector", "stock", "given"],
              "stock_caller": ["image"]}


def stats_records(path, effects=False):
    """The process records (hooked or left stock; with effects, every record), each checked whole."""
    import json
    raw = path.read_bytes().split(b"\n")
    assert raw[-1] == b""  # whole lines only
    out = [json.loads(l) for l in raw[:-1]]
    for r, l in zip(out, raw):
        assert list(r) == STATS_KEYS + STATS_MORE[r["event"]] and len(l) + 1 <= 1024
    return [r for r in out if effects or r["event"] in ("hooked", "left_stock")]


@pytest.fixture
def logdir(tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    return d


# ---- what make check-emu's closing line reports (scripts/check-emu)

SUMMARY_FILE = ROOT / "build" / "emu-summary.json"
CLEARED = []  # whether this session cleared it yet


def write_summary(**kw):
    """build/emu-summary.json: what make check-emu's closing line reports (scripts/check-emu)."""
    import json
    d = json.loads(SUMMARY_FILE.read_text()) if SUMMARY_FILE.exists() and kw.get("fresh") is None else {}
    d.update(kw)
    SUMMARY_FILE.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY_FILE.write_text(json.dumps(d) + "\n")
