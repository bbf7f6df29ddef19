"""The shipped arm64 slice of dist/libvzcaps.dylib, executed under emulation (tests/emu/README.md):
loading as dyld does (segments, rebases and binds, lazy and chained fixups, the initializer, the
interpose table, the x86_64 slice) and the Darwin-only facts (the executable path, sysctl, Rosetta,
syslog). The other files of the slice's tests: test_emu_*.py (each named for its concern; the
coverage test, last, in test_emu_zz_coverage.py). VZCAPS_EMU_LIB runs them on another file (a
mutant, or the library of an earlier commit)."""
import struct
import sys

import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
from conftest import require_built
from shipped import (HOST, INTERPOSED, LIB, M2, STOCK, check_interpose, env_of, img, libpath, proc,  # noqa: F401  (img: a fixture)
                     up_to)

if sys.platform.startswith("linux"):  # see shipped.py
    import machoemu
    from process import Process, image


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
