"""The shipped arm64 slice of dist/libvzcaps.dylib, executed under emulation (tests/emu/README.md):
loading as dyld does, the Darwin-only code paths, every configuration of cases.py against the
rig, coverage of its functions and planted mutants. VZCAPS_EMU_LIB runs it on another file (a
mutant, or the library of an earlier commit)."""
import os
import pathlib
import struct
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import BUILD, ROOT, require_built  # noqa: E402

import cases  # noqa: E402
import machoemu  # noqa: E402
from darwin import EACCES, ENOENT  # noqa: E402
from process import Process, image  # noqa: E402

LIB = pathlib.Path(os.environ.get("VZCAPS_EMU_LIB") or ROOT / "dist" / "libvzcaps.dylib")
STOCK = {f: int((1001 <= f <= 1005) or f == 2002 or 3001 <= f <= 3003) for f in
         (1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002)}
INTERPOSED = ["_MTLCreateSystemDefaultDevice", "_MTLCopyAllDevices", "_MTLCopyAllDevicesWithObserver", "_execve", "_execv",
              "_execvp", "_execl", "_execle", "_execlp", "_posix_spawn", "_posix_spawnp"]
HOST = {"brand": None, "memsize": 16 << 30, "translated": None}


@pytest.fixture(scope="module")
def img():
    require_built(LIB, how="make dist")
    return image(LIB)


def libpath():
    return str(LIB.resolve())


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


# ---------------------------------------------------------------- the loader, as dyld does it

def test_segments_are_mapped_with_their_protections(img):
    p = proc(img, env_of(**M2))
    regions = {start: perms for start, end, perms in p.m.uc.mem_regions()}
    for seg in img.segments:
        if seg.name == "__LINKEDIT":
            continue
        want = machoemu._prot(seg.init_protection)
        if seg.name == "__DATA_CONST":
            want = machoemu.UC_PROT_READ  # read-only once fixups are applied, as dyld leaves it
        assert regions[machoemu.BASE + seg.virtual_address] == want, seg.name
    text = img.section("__TEXT", "__text").virtual_address
    const = img.section("__DATA_CONST", "__const").virtual_address
    poke = machoemu.IMAGES + 0xF000  # guest code: str xzr, [x0]; ret
    p.m.write(poke, struct.pack("<II", 0xF900001F, 0xD65F03C0))
    data = img.section("__DATA", "__data").virtual_address
    p.m.call(poke, machoemu.BASE + data)  # __DATA stays writable
    for a in (text, const):
        with pytest.raises(machoemu.GuestFault, match="invalid memory access"):
            p.m.call(poke, machoemu.BASE + a)


def test_fixups_rebases_and_binds(img):
    p = Process(img, env_of(**M2), lib_path=libpath(), host=dict(HOST))  # loaded, nothing run yet
    rebases = img.rebases()
    assert len(rebases) > 100
    lo, hi = machoemu.BASE, machoemu.BASE + max(s.virtual_address + s.virtual_size for s in img.segments)
    for a in rebases:
        assert lo <= p.m.u64(machoemu.BASE + a) < hi, f"rebase at {a:#x} points outside the image"
    binds = img.binds()
    lazy = [b for b in binds if b[0] == "LAZY"]
    assert lazy and all(b[2].startswith("_") for b in lazy)
    # every lazy pointer starts at the library's own __stub_helper
    helper = img.section("__TEXT", "__stub_helper")
    for b in lazy:
        v = p.m.u64(machoemu.BASE + b[1])
        assert v in p.m.slot_fn or helper.virtual_address <= v - machoemu.BASE < helper.virtual_address + helper.size


def test_every_import_has_a_standin(img):
    p = Process(img, env_of(**M2), lib_path=libpath(), lazy=False, host=dict(HOST))
    assert p.m.missing == [], f"imports without a stand-in: {p.m.missing}"


def test_an_import_without_a_standin_fails_with_its_name(img):
    p = Process(img, env_of(**M2), lib_path=libpath(), lazy=False, host=dict(HOST))
    p.m.standins.pop("_strlen")
    m = machoemu.Machine(img, lazy=False, path=libpath())
    m.standins = dict(p.m.standins)
    m.data_imports = dict(p.m.data_imports)
    m.load()
    assert "_strlen" in m.missing
    with pytest.raises(machoemu.MissingStandin, match="_strlen"):
        m.call(m.bound_address("_strlen"), 0)


def test_lazy_binding_and_eager_binding_give_the_same_answers(img):
    lazy, eager = proc(img, env_of(**M2)), proc(img, env_of(**M2), lazy=False)
    assert lazy.probe() == eager.probe() and lazy.probe()["families"] == up_to(1008)
    assert lazy.stderr == eager.stderr and lazy.stderr
    # the lazy run went through the library's __stub_helper and the stand-in binder
    assert lazy.m.lazy_resolved and not eager.m.lazy_resolved
    table = {b[1]: b[2] for b in img.binds() if b[0] == "LAZY"}
    for sym in lazy.m.lazy_resolved:
        assert sym in table.values()


def test_one_initializer_run_with_dyld_arguments(img):
    p = Process(img, env_of(**M2), lib_path=libpath(), host=dict(HOST))
    assert len(p.m.initializers()) == 1
    p.start()
    assert p.stderr == ""  # silent until a device exists
    p.probe()
    assert p.stderr.startswith("vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport: ")


def test_the_eleven_interpose_pairs(img):
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


def test_weak_metal_absent(img):
    """No Metal: the weak originals bind to 0, the constructor still runs, nothing is said."""
    p = proc(img, env_of(**M2), metal=False)
    sec = img.section("__DATA", "__interpose")
    for i in range(3):
        assert p.m.u64(machoemu.BASE + sec.virtual_address + 16 * i + 8) == 0
    assert p.stderr == "" and p.d.syslog == []
    r = p.run_child("execv", "/usr/bin/env", [])
    assert r["ran"]["path"] == "/usr/bin/env"


def test_factories_copy_all_devices(img):
    for f in ("_MTLCopyAllDevices", "_MTLCopyAllDevicesWithObserver"):
        p = proc(img, env_of(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M3", FAKEMETAL_CLASS="plain"))
        assert p.probe(f)["families"] == up_to(1009)
        assert f"via factory interposer ({f[1:]})" in p.stderr


def test_subclassed_device_class(img):
    p = proc(img, env_of(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M4", FAKEMETAL_CLASS="sub"))
    assert p.probe()["families"] == up_to(1009)
    assert "hooked SubParavirtDevice" in p.stderr
    # a second device of another class after the first
    dev = p.d.objc.new("AppleParavirtDevice")
    p.d.objc.send(dev, "init", image="Metal")
    assert p.ask(dev)["families"] == up_to(1009)


def test_a_failing_hook_install_leaves_the_device_stock(img):
    p = proc(img, env_of(**M2, FAKEMETAL_CLASS="sub"), fail_add_method=True)
    got = p.probe()
    assert got["families"] == STOCK
    assert "could not replace -supportsFamily: on SubParavirtDevice; left stock" in p.stderr


def test_objc_semantics_the_library_relies_on(img):
    p = proc(img, env_of(**M2))
    rt = p.d.objc
    C = rt.classes
    m = p.m
    sel = rt.sel("supportsFamily:")
    get = m.standins["_class_getInstanceMethod"]
    add = m.standins["_class_addMethod"]
    setimp = m.standins["_method_setImplementation"]
    inherited = get(m, C["AppleParavirtDevice"].addr, sel)
    assert inherited and inherited == get(m, C["_MTLDevice"].addr, sel)   # found up the superclass chain
    assert add(m, C["_MTLDevice"].addr, sel, 1234, 0) == 0                # the class has it itself
    assert add(m, C["AppleParavirtDevice"].addr, sel, 1234, m.new_cstr("c24@0:8q16")) == 1
    own = get(m, C["AppleParavirtDevice"].addr, sel)
    assert own != inherited and setimp(m, own, 99) == 1234              # the old IMP back


# ---------------------------------------------------------------- Darwin-only facts

def test_launcher_check_uses_the_executable_path(img, tmp_path):
    x = tmp_path / "Python.framework" / "Versions" / "3.12"
    (x / "bin").mkdir(parents=True)
    (x / "bin" / "python3.12").write_bytes(b"\xcf\xfa\xed\xfe")
    macos = x / "Resources" / "Python.app" / "Contents" / "MacOS"
    macos.mkdir(parents=True)
    (macos / "Python").write_bytes(b"\xcf\xfa\xed\xfe")
    env = env_of(**M2)
    launcher = proc(img, env, argv=("python3.12",), exe=str(x / "bin" / "python3.12"))
    assert launcher.probe()["families"] == STOCK and launcher.stderr == ""
    assert launcher.d.env_now() == [f"{k}={v}" for k, v in env.items()]  # passed on unchanged
    real = proc(img, env, argv=("Python",), exe=str(macos / "Python"))
    assert real.probe()["families"] == up_to(1008)


@pytest.mark.parametrize("brand,translated,want", [
    ("Apple M2 Pro (Virtual)", 0, 1008), ("Apple M3 Max", None, 1009), ("Apple M5 (Virtual)", 0, 1010)])
def test_sysctl_brand_names_the_chip(img, brand, translated, want):
    p = proc(img, env_of(VZCAPS_APPLE_FAMILY_MAX="auto"), host={"brand": brand, "memsize": 32 << 30, "translated": translated})
    assert p.probe()["families"] == up_to(want)
    assert "(from machdep.cpu.brand_string)" in p.stderr


def test_rosetta_is_refused_with_its_reason(img):
    p = proc(img, env_of(VZCAPS_APPLE_FAMILY_MAX="auto"),
             host={"brand": "VirtualApple @ 2.50GHz processor", "memsize": 32 << 30, "translated": 1})
    assert p.probe()["families"] == STOCK
    assert "runs under Rosetta" in p.stderr


def test_syslog_gets_the_line_stderr_gets_it_unless_quiet(img):
    p = proc(img, env_of(**M2))
    p.probe()
    assert p.d.syslog == [(5, p.stderr.rstrip("\n"))]  # LOG_NOTICE, the same line
    q = proc(img, env_of(**M2, VZCAPS_LOG="quiet"))
    q.probe()
    assert q.stderr == "" and len(q.d.syslog) == 1 and q.d.syslog[0][1].startswith("vzcaps: hooked")


# ---------------------------------------------------------------- spawn and exec, as Libc calls them

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


@pytest.mark.parametrize("envsrc", ["environ", "given"])
@pytest.mark.parametrize("other", [True, False], ids=["other library", "alone"])
@pytest.mark.parametrize("child", list(CHILDREN))
@pytest.mark.parametrize("how", HOWS)
def test_spawn_and_exec_paths(img, progs, how, child, other, envsrc):
    spawn_case(img, progs, how, child, other, False, envsrc)


@pytest.mark.parametrize("envsrc", ["environ", "given"])
@pytest.mark.parametrize("how", ["posix_spawnp", "execvp", "execlp"])
@pytest.mark.parametrize("child", ["matching", "non-matching"])
def test_search_with_failing_candidates_first(img, progs, how, child, envsrc):
    spawn_case(img, progs, how, child, True, True, envsrc)


def test_system_runs_the_shell_through_posix_spawn(img, progs):
    env = env_of(**M2)
    env["DYLD_INSERT_LIBRARIES"] = OTHER + ":" + libpath()
    p = proc(img, env)
    r = p.run_child("system", "llama-server", ["-x"])
    assert r["ran"]["path"] == "/bin/sh" and r["ran"]["argv"] == ["sh", "-c", "llama-server -x"]
    got = dict(e.split("=", 1) for e in r["ran"]["env"])
    assert got["DYLD_INSERT_LIBRARIES"] == OTHER and not any(k.startswith("VZCAPS_") for k in got)


# ---------------------------------------------------------------- every rig case on both

@pytest.fixture(scope="module")
def rig():
    for name in ("libvzcaps.so", "probe", "callers"):
        assert (BUILD / name).exists(), f"build/{name} missing: run make"
    return BUILD


def rig_memsize():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE")


@pytest.mark.parametrize("c", cases.CASES, ids=[c["name"] for c in cases.CASES])
def test_rig_and_arm64_slice_agree(img, rig, tmp_path, c):
    want = cases.on_rig(c, str(tmp_path), rig)
    got = cases.on_emu(c, str(tmp_path), img, libpath(), rig_memsize())
    assert got == want
    RESULTS.append(c["name"])


RESULTS = []


def test_table_has_forty_configurations():
    assert len(cases.CASES) >= 40
    names = {c["name"] for c in cases.CASES}
    assert len(names) == len(cases.CASES)
    chips = {c["env"].get("VZCAPS_HOST_CHIP") for c in cases.CASES}
    assert set(cases.CHIPS) <= chips
