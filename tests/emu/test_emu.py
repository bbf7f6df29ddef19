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
from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the rig it compares with is the Linux build)

import cases  # noqa: E402

# The emulator's libraries are imported where the module runs (Linux: it is LINUX_ONLY); the
# simulated Mac (tests/test_simulated_mac.py) collects it with sys.platform faked, where
# Unicorn's Linux wheel would look for a .dylib.
if sys.platform.startswith("linux"):
    import machoemu  # noqa: E402
    import mutants  # noqa: E402
    from darwin import EACCES, ENOENT  # noqa: E402
    from process import Process, image  # noqa: E402
MUTANTS = ["chip table byte", "supportsFamily: return", "dropped rebase", "swapped interpose entry"]

LIB = pathlib.Path(os.environ.get("VZCAPS_EMU_LIB") or ROOT / "dist" / "libvzcaps.dylib")
STOCK = {f: int((1001 <= f <= 1005) or f == 2002 or 3001 <= f <= 3003) for f in
         (1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002)}
INTERPOSED = ["_MTLCreateSystemDefaultDevice", "_MTLCopyAllDevices", "_MTLCopyAllDevicesWithObserver", "_execve", "_execv",
              "_execvp", "_execl", "_execle", "_execlp", "_posix_spawn", "_posix_spawnp"]
HOST = {"brand": None, "memsize": 16 << 30, "translated": None}


@pytest.fixture(scope="module")
def img():
    require_built(LIB, how="make dist")
    if SUMMARY_FILE.exists():
        SUMMARY_FILE.unlink()  # this run's figures only
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


@pytest.mark.parametrize("fmt", [2, 6], ids=["DYLD_CHAINED_PTR_64", "DYLD_CHAINED_PTR_64_OFFSET"])
def test_chained_fixups_give_what_the_opcodes_give(img, fmt):
    """A crafted LC_DYLD_CHAINED_FIXUPS form of the slice's own fixups (today's linker writes
    opcodes): the same memory as the opcodes bound eagerly, and the same answers."""
    eager = Process(img, env_of(**M2), lib_path=libpath(), lazy=False, host=dict(HOST))
    chained = Process(img, env_of(**M2), lib_path=libpath(), lazy=False, host=dict(HOST),
                      chained=machoemu.craft_chained(img, fmt))
    # each pointer once (a lazy pointer is rebased and bound in the opcodes; chained, it is bound)
    assert chained.m.chained_count == len(set(img.rebases()) | {b[1] for b in img.binds()})
    def words(m, seg):  # each pointer to a stand-in by the stand-in's name (cells differ in order)
        a = machoemu.BASE + seg.virtual_address
        return [m.slot_fn[v][0] if v in m.slot_fn else v for v in struct.unpack(f"<{seg.file_size // 8}Q", m.read(a, seg.file_size))]
    for seg in img.segments:
        if seg.name in ("__DATA_CONST", "__DATA"):
            assert words(chained.m, seg) == words(eager.m, seg), seg.name
    assert chained.start().probe() == eager.start().probe()
    assert chained.stderr == eager.stderr != ""


def test_chained_fixups_refuse_other_pointer_formats(img):
    blob, raw = machoemu.craft_chained(img, 2)
    bad = bytearray(blob)
    at = blob.index(struct.pack("<HH", 0x4000, 2))
    bad[at + 2:at + 4] = struct.pack("<H", 1)  # DYLD_CHAINED_PTR_ARM64E
    with pytest.raises(ValueError, match="chained pointer format 1"):
        Process(img, env_of(**M2), lib_path=libpath(), lazy=False, host=dict(HOST), chained=(bytes(bad), raw))


def test_one_initializer_run_with_dyld_arguments(img):
    p = Process(img, env_of(**M2), lib_path=libpath(), host=dict(HOST))
    assert len(p.m.initializers()) == 1
    p.start()
    assert p.stderr == ""  # silent until a device exists
    p.probe()
    assert p.stderr.startswith("vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport: ")


def test_the_eleven_interpose_pairs(img):
    check_interpose(img)


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


def test_x86_64_slice_loads_with_the_same_imports_and_interpose_table():
    """The x86_64 slice (Rosetta and Intel Macs) is mapped and fixed up by the same loader and
    its stand-ins cover its imports; it is not executed (docs/developers.md, "The emulated
    Darwin": Unicorn would run it, but the stand-ins speak Apple's arm64 calling convention)."""
    require_built(LIB, how="make dist")
    x86 = image(LIB, "X86_64")
    p = Process(x86, env_of(**M2), lib_path=libpath(), lazy=False, host=dict(HOST))
    assert p.m.missing == []
    assert [orig for _, orig in p.m.interpose_table()] == INTERPOSED
    assert len(x86.function_starts()) == len(image(LIB).function_starts())


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


def test_hw_memsize_bounds_the_working_set(img):
    """A working-set floor above the host's memory (sysctl hw.memsize) is clamped to it."""
    env = env_of(**M2, VZCAPS_RECOMMENDED_WORKING_SET_SIZE=str(64 << 30))
    p = proc(img, env, host={"brand": None, "memsize": 8 << 30, "translated": None})
    assert p.probe()["ws"] == 8 << 30
    assert f"clamped to physical memory {8 << 30}" in p.stderr
    assert "hw.memsize" in p.d.sysctl_asked


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


@pytest.mark.parametrize("state", ["stderr_closed", "stderr_full"])
def test_the_line_with_stderr_closed_or_full_goes_to_syslog_only(img, state):
    """fd 2 closed (fstat fails) or never writable (select times out): the line is lost on
    stderr, never blocks or fails the program, and the unified log still has it."""
    host = dict(HOST, **{state: True})
    p = proc(img, env_of(**M2), host=host)
    assert p.probe()["families"] == up_to(1008)
    assert p.stderr == "" and len(p.d.syslog) == 1 and p.d.syslog[0][1].startswith("vzcaps: hooked AppleParavirtDevice")


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


@pytest.mark.parametrize("how", ["system", "popen"])
def test_system_and_popen_run_the_shell_through_posix_spawn(img, progs, how):
    env = env_of(**M2)
    env["DYLD_INSERT_LIBRARIES"] = OTHER + ":" + libpath()
    p = proc(img, env)
    r = p.run_child(how, "llama-server", ["-x"])
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


RIG = {}  # case name -> what the rig answered
RESULTS = []  # the configurations found identical


def rig_answer(c, tmp):
    if c["name"] not in RIG:
        RIG[c["name"]] = cases.on_rig(c, tmp, BUILD)
    return RIG[c["name"]]


@pytest.mark.parametrize("c", cases.CASES, ids=[c["name"] for c in cases.CASES])
def test_rig_and_arm64_slice_agree(img, rig, tmp_path, c):
    want = rig_answer(c, str(tmp_path))
    got = cases.on_emu(c, str(tmp_path), img, libpath(), rig_memsize())
    assert got == want
    RESULTS.append(c["name"])
    write_summary(configurations=len(RESULTS))


def test_table_has_forty_configurations():
    assert len(cases.CASES) >= 40
    names = {c["name"] for c in cases.CASES}
    assert len(names) == len(cases.CASES)
    chips = {c["env"].get("VZCAPS_HOST_CHIP") for c in cases.CASES}
    assert set(cases.CHIPS) <= chips


# ---------------------------------------------------------------- host traces (issue 32 rows 1-3)
# Each case beside the rig's (tests/runtime/test_traces.py) where the rig has it: the same
# errno client, the same configurations, the same kinds of standard error. "pipe" on the rig is
# the terminal here (neither is a regular file: the line is written to fd 2 itself).

def _traces():
    import importlib.util
    spec = importlib.util.spec_from_file_location("rig_traces", ROOT / "tests" / "runtime" / "test_traces.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TRACES = _traces() if sys.platform.startswith("linux") else None
TRACE_HOWS = ["pipe", "full", "closed-at-start", "closed-after-start", "file"]


@pytest.fixture(scope="module")
def errno_client(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    (d / "errno.c").write_text(TRACES.ERRNO_CLIENT)
    exe = d / "errno"
    import subprocess
    subprocess.run(["gcc", str(d / "errno.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"],
                   check=True)
    return str(exe)


def rig_errno(client, conf, how, tmp):
    """The rig's "main N after M" for one configuration and one standard error."""
    import subprocess
    err = open(os.path.join(tmp, "rig-err"), "w") if how == "file" else None
    stderr = {"pipe": subprocess.PIPE, "full": open("/dev/full", "w"), "file": err}.get(how, subprocess.DEVNULL)
    what = "close-device" if how == "closed-after-start" else "device"
    out = TRACES.run(client, what, TRACES.CONFIGS[conf], stderr=stderr, close_stderr=how == "closed-at-start")
    line = open(os.path.join(tmp, "rig-err")).read() if err else None
    return out, line


def emu_errno(img, conf, how, tmp):
    host = dict(HOST)
    if how == "full":
        host["stderr"] = "full"
    elif how == "closed-at-start":
        host["stderr_closed"] = True
    elif how == "file":
        host["stderr_file"] = os.path.join(tmp, "emu-err")
    p = proc(img, env_of(**TRACES.CONFIGS[conf]), host=host, argv=("errno",), exe="/usr/local/bin/errno")
    at_main = p.m.u32(p.d.errno_addr)
    assert p.d.errno_sets, "the constructor set no errno at all: this case proves nothing"
    if how == "closed-after-start":
        p.d.fd_close(2)
    p.d.set_errno(1234)
    assert p.create_device()
    after = p.m.u32(p.d.errno_addr)
    line = open(host["stderr_file"]).read() if how == "file" else None
    return f"main {at_main} after {after}\n", line, p


@pytest.mark.parametrize("how", TRACE_HOWS)
@pytest.mark.parametrize("conf", ["unconfigured", "configured", "refused", "invalid", "verbose"])
def test_errno_at_main_and_around_the_device_as_on_the_rig(img, errno_client, tmp_path, conf, how):
    """errno 0 when main starts (the constructor's failed lookups leave nothing); a hooked or
    stock MTLCreateSystemDefaultDevice leaves the caller's 1234, whether the line's write
    succeeds, fails with ENOSPC (/dev/full) or EBADF (fd 2 closed), or is not attempted."""
    want, rig_line = rig_errno(errno_client, conf, how, str(tmp_path))
    got, emu_line, p = emu_errno(img, conf, how, str(tmp_path))
    assert got == want == "main 0 after 1234\n"
    if how == "file":  # the line reached the start-up stderr file, on both
        assert [cases.normalise(l, libpath()) for l in cases.vz_lines(emu_line)] == \
            [cases.normalise(l, BUILD / "libvzcaps.so") for l in cases.vz_lines(rig_line)]
    if how == "full" and conf != "unconfigured":
        assert p.d.syslog  # the line was said (and its write failed): the failing path ran


def _pinned(p):
    return [fd for fd in p.d.cloexec if fd > 2 and fd in p.d.fds]


def test_a_stderr_file_is_pinned_by_one_close_on_exec_duplicate(img, tmp_path):
    """As on the rig (test_a_stderr_file_costs_one_close_on_exec_descriptor): one duplicate at
    100 or above, close-on-exec; none when nothing will be said."""
    err = tmp_path / "err"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(err)))
    (dup,) = _pinned(p)
    assert dup >= 100 and os.path.samestat(os.fstat(p.d.fds[dup]), err.stat())
    p.probe()
    assert err.read_text().startswith("vzcaps: hooked AppleParavirtDevice for probe") and err.read_text().count("\n") == 1
    for env in (env_of(), env_of(**M2, VZCAPS_LOG="quiet")):
        q = proc(img, env, host=dict(HOST, stderr_file=str(err)))
        assert _pinned(q) == []


@pytest.mark.parametrize("reused", [False, True], ids=["new inode", "the deleted file's inode"])
def test_the_line_never_goes_into_a_file_that_took_fd_2(img, tmp_path, reused):
    """The rig's REUSE_CLIENT: stderr is a file, deleted; fd 2 closed; the program's next open
    (a data file) takes fd 2. xnu does not hand a held inode to a new file; "reused" makes the
    stand-in's fstat report the deleted file's inode for the data file anyway (what ext4 did
    before the library held the file): the line still never enters the data file."""
    log, data = tmp_path / "log", tmp_path / "data"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(log)))
    ino = log.stat().st_ino
    log.unlink()
    p.d.fd_close(2)
    p.d.take_fd(2, str(data))
    if reused:
        p.d.host["fake_inode"] = {2: ino}
    os.write(p.d.fds[2], b"user data\n")
    p.d.set_errno(1234)
    assert p.probe()["families"] == up_to(1008)
    os.write(p.d.fds[2], b"more data\n")
    assert data.read_text() == "user data\nmore data\n"
    assert p.m.u32(p.d.errno_addr) == 1234 and p.stderr == ""
    (dup,) = _pinned(p)
    held = os.fstat(p.d.fds[dup])
    assert held.st_nlink == 0 and held.st_ino == ino  # the deleted file, still held
    if reused:  # identity matched, so the line went to the held (deleted) file, nowhere else
        with open(f"/proc/self/fd/{p.d.fds[dup]}", "rb") as f:  # the deleted file, through our descriptor
            assert f.read().startswith(b"vzcaps: hooked")
    else:
        assert held.st_size == 0


def test_the_duplicate_closed_by_the_host_is_never_taken_for_stderr(img, tmp_path):
    """The rig's CLOSEFROM_CLIENT: every descriptor above 2 closed, a data file at the
    duplicate's number (and its neighbours): no line in the data file nor in stderr's."""
    err, data = tmp_path / "err", tmp_path / "data"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(err)))
    for fd in [f for f in list(p.d.fds) + list(p.d.special) if f > 2]:
        p.d.fd_close(fd)
    p.d.take_fd(3, str(data), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    for n in range(100, 110):
        p.d.fds[n] = os.dup(p.d.fds[3])
    assert p.probe()["class"] == "AppleParavirtDevice"
    assert data.read_text() == "" and err.read_text() == ""


@pytest.mark.parametrize("limit", [4, 20, 101])
def test_a_low_descriptor_limit(img, tmp_path, limit):
    """The rig's test_a_low_descriptor_limit: F_DUPFD_CLOEXEC at 100 is EINVAL under a limit of
    101 or less (xnu's fcntl), so the duplicate takes the lowest free one; the line is written."""
    err = tmp_path / "err"
    p = proc(img, env_of(**M2), host=dict(HOST, stderr_file=str(err), fd_limit=limit))
    (dup,) = _pinned(p)
    assert dup == (100 if limit > 100 else 3)
    assert p.probe()["class"] == "AppleParavirtDevice"
    assert err.read_text().startswith("vzcaps: hooked")


def test_the_per_thread_mapping_is_unmapped_at_thread_exit(img, progs):
    """inherit = matching builds the child's environment in a per-thread mapping; the key's
    destructor (run by libpthread at thread exit) unmaps it, errno untouched."""
    env = env_of(VZCAPS_CONFIG=str(progs / "vzcaps.conf"))
    p = proc(img, env)
    r = p.run_child("posix_spawn", str(progs / "bin" / "llama-server"), [])
    assert any(e.startswith("VZCAPS_") for e in r["ran"]["env"])  # a matching child: its environment was built
    live = [v for v in p.d.tsd.values() if v]
    assert len(live) == 1 and not p.d.unmapped
    p.d.set_errno(1234)
    p.d.thread_exit()
    assert p.d.unmapped == [(live[0], p.m.u64(live[0]))] and p.m.u32(p.d.errno_addr) == 1234
    assert not any(p.d.tsd.values())


# ---------------------------------------------------------------- the stats log (log_file, VZCAPS_LOG_FILE)
# The record the shipped slice writes against the rig's library's for the same configuration,
# field for field (each line parsed as JSON). Normalised, and only these: "pid" (each process
# its own) and "time" (the rig's wall clock against the stand-in's virtual one) -> each checked
# to be a positive integer, then dropped. "path" is not normalised: the emulated program's
# executable path is the rig's build/probe, which realpath resolves on this machine for both.

STATS_KEYS = ["v", "time", "pid", "program", "path", "event", "class", "family", "reason"]
STATS_MORE = {"hooked": ["no_raise"], "left_stock": [], "unlocked": ["image", "selector", "stock", "given"],
              "stock_caller": ["image"]}
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


def stats_records(path, effects=False):
    """The process records (hooked or left stock; with effects, every record), each checked whole."""
    import json
    raw = path.read_bytes().split(b"\n")
    assert raw[-1] == b""  # whole lines only
    out = [json.loads(l) for l in raw[:-1]]
    for r, l in zip(out, raw):
        assert list(r) == STATS_KEYS + STATS_MORE[r["event"]] and len(l) + 1 <= 1024
    return [r for r in out if effects or r["event"] in ("hooked", "left_stock")]


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


@pytest.fixture
def logdir(tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    return d


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


# ---------------------------------------------------------------- planted mutants

def first_failure(img, progs, tmp):
    """The first check of the suite that fails on img (None: every one passed): the interpose
    pairs, every configuration against the rig, the spawn paths."""
    checks = [("interpose pairs", lambda: check_interpose(img))]
    for c in cases.CASES:
        checks.append((c["name"], lambda c=c: _same(cases.on_emu(c, tmp, img, libpath(), rig_memsize()), rig_answer(c, tmp))))
    for how in HOWS:
        for child in CHILDREN:
            checks.append((f"{how} {child}", lambda how=how, child=child: spawn_case(img, progs, how, child, True, False)))
    for name, check in checks:
        try:
            check()
        except Exception as e:  # a failed assertion, a fault, a missing stand-in: caught
            return f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
    return None


def _same(got, want):
    assert got == want


def test_the_mutants_are_the_planted_ones():
    assert list(mutants.MUTANTS) == MUTANTS


@pytest.mark.parametrize("name", MUTANTS)
def test_planted_mutant_is_caught(name, img, rig, progs, tmp_path):
    mutant, what = mutants.make(name, LIB.read_bytes())
    f = tmp_path / "mutant" / "libvzcaps.dylib"
    f.parent.mkdir()
    f.write_bytes(mutant.raw)
    CURRENT[0] = f
    try:
        caught = first_failure(mutant, progs, str(tmp_path))
    finally:
        CURRENT[0] = LIB
    print(f"mutant {name} ({what}): {'caught by ' + caught if caught else 'NOT caught'}")
    assert caught, f"planted mutant not caught: {what}"
    CAUGHT.append(name)
    write_summary(mutants_caught=len(CAUGHT), mutants=len(mutants.MUTANTS))


CAUGHT = []
SUMMARY_FILE = ROOT / "build" / "emu-summary.json"


def write_summary(**kw):
    """build/emu-summary.json: what make check-emu's closing line reports (scripts/check-emu)."""
    import json
    d = json.loads(SUMMARY_FILE.read_text()) if SUMMARY_FILE.exists() and kw.get("fresh") is None else {}
    d.update(kw)
    SUMMARY_FILE.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY_FILE.write_text(json.dumps(d) + "\n")


# ---------------------------------------------------------------- coverage of the shipped code
# (last in the file: it reads what every test above reached)

COVERAGE_FILE = ROOT / "build" / "emu-coverage.txt"
# functions no test can reach, each with its reason (docs/emulation.md, "What stays unreached")
UNREACHABLE = {}


def coverage_rows(img):
    return machoemu.coverage_table(img, machoemu.REACHED.get(img.key, set()))


def write_table(rows, path):
    lines = [f"{'function':48} {'bytes':>6} {'blocks':>6} {'reached':>7}"]
    for name, start, size, n_blocks, n_reached in sorted(rows, key=lambda r: (r[4] > 0, r[0])):
        lines.append(f"{name:48} {size:6} {n_blocks:6} {n_reached:7}{'' if n_reached else '  NEVER'}")
    reached = sum(1 for r in rows if r[4])
    lines.append(f"{reached} of {len(rows)} functions ({100 * reached / len(rows):.1f} %) reached; "
                 f"{sum(r[4] for r in rows)} of {sum(r[3] for r in rows)} blocks")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return reached, lines


def test_zz_coverage_of_the_library(img):
    rows = coverage_rows(img)
    assert len(rows) == len(img.function_starts()) > 50
    reached, lines = write_table(rows, COVERAGE_FILE)
    never = [r[0] for r in rows if not r[4]]
    print("\n".join(lines))
    unexplained = [n for n in never if n not in UNREACHABLE]
    write_summary(reached=reached, functions=len(rows))
    assert reached * 100 >= 95 * len(rows), f"{reached} of {len(rows)} reached; never: {', '.join(never)}"
    assert not unexplained, f"never reached and not explained in UNREACHABLE: {', '.join(unexplained)}"
