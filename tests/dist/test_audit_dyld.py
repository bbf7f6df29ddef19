"""The audit's own reading of Mach-O files against what dyld checks (issue 27, rows 8-10), on
files crafted by tests/macho/machogen.py: imports against the SDK's .tbd stubs (the cross
toolchain's by default, crafted ones with --stubs), dyld's SDK-26 rule for __DATA_CONST, and
header padding. Needs no make dist."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "macho"))
import machogen as mg  # noqa: E402
from conftest import ROOT  # noqa: E402

LIBSYSTEM = "/usr/lib/libSystem.B.dylib"
LIBOBJC = "/usr/lib/libobjc.A.dylib"
METAL = "/System/Library/Frameworks/Metal.framework/Versions/A/Metal"


def lib(tmp_path, name="lib.dylib", libs=(LIBSYSTEM,), imports=(("_malloc", 1),), sdk=(15, 1), data_const=0,
        headerpad=0x100, cputype=mg.CPU_ARM64, minos=(13, 0), **more):
    """A signed dylib that passes every check below unless a parameter says otherwise (more:
    machogen's filetype, text_prot, linkedit_prot)."""
    f = tmp_path / name
    f.write_bytes(mg.build(cputype=cputype, cpusubtype=3 if cputype == mg.CPU_X86_64 else 0, libs=libs, imports=imports,
                           sdk=sdk, data_const=data_const, headerpad=headerpad, cstrings=("x",), minos=minos, **more))
    return f


def audit(*files, stubs=(), command=False):
    args = ["python3", str(ROOT / "scripts" / "audit")]
    for s in stubs:
        args += ["--stubs", str(s)]
    for f in files:
        args += ["--file", str(f)]
    if command:
        args.append("--command")
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_a_clean_crafted_library_passes(tmp_path):
    p = audit(lib(tmp_path))
    assert p.returncode == 0, p.stdout
    assert "passed" in p.stdout


def test_an_import_the_sdk_stubs_do_not_export_fails(tmp_path):
    """What an Apple-clang build importing a name libSystem lacks would look like to dyld."""
    p = audit(lib(tmp_path, imports=(("_malloc", 1), ("_vzcaps_no_such_function", 1))))
    assert p.returncode == 1
    assert ("lib.dylib [arm64]: imports _vzcaps_no_such_function from /usr/lib/libSystem.B.dylib, which does not "
            "export it for arm64-macos at macOS 13.0") in p.stdout, p.stdout
    assert "_malloc" not in p.stdout


def test_apple_clangs_fortified_calls_pass_when_the_stubs_export_them(tmp_path):
    """The names Apple clang and ld64 import that the zig build does not (issue 27, row 8)."""
    p = audit(lib(tmp_path, imports=(("___snprintf_chk", 1), ("___memset_chk", 1), ("___strlcpy_chk", 1))))
    assert p.returncode == 0, p.stdout


def test_exports_are_per_architecture(tmp_path):
    """fstat$INODE64 exists for x86_64 only: the stub's targets are read, not its text searched."""
    arm = audit(lib(tmp_path, imports=(("_fstat$INODE64", 1),)))
    x86 = audit(lib(tmp_path, name="x.dylib", imports=(("_fstat$INODE64", 1),), cputype=mg.CPU_X86_64))
    assert arm.returncode == 1 and "imports _fstat$INODE64 from /usr/lib/libSystem.B.dylib" in arm.stdout
    assert x86.returncode == 0, x86.stdout


def test_the_stack_probe_is_refused_although_libsystem_exports_it(tmp_path):
    p = audit(lib(tmp_path, imports=(("___chkstk_darwin", 1),)))
    assert p.returncode == 1
    assert "imports ___chkstk_darwin, which is Apple clang's stack probe" in p.stdout


def test_the_command_may_have_the_stack_probe(tmp_path):
    assert audit(lib(tmp_path, imports=(("___chkstk_darwin", 1),)), command=True).returncode == 0


def test_a_library_outside_the_allowed_ones_fails(tmp_path):
    p = audit(lib(tmp_path, libs=(LIBSYSTEM, "/usr/lib/libz.1.dylib"), imports=(("_zlibVersion", 2),)))
    assert p.returncode == 1
    assert "links /usr/lib/libz.1.dylib, which is not allowed" in p.stdout


def test_metal_linked_strongly_fails(tmp_path):
    p = audit(lib(tmp_path, libs=(LIBSYSTEM, METAL), imports=(("_MTLCreateSystemDefaultDevice", 2),)))
    assert p.returncode == 1
    assert f"links {METAL} strongly; it must be weak" in p.stdout


def test_flat_lookup_and_a_bad_ordinal_fail(tmp_path):
    p = audit(lib(tmp_path, imports=(("_malloc", 0xFF), ("_free", 7))))
    assert p.returncode == 1
    assert "imports _malloc by flat lookup" in p.stdout
    assert "imports _free from library ordinal 7, which names no library this file links" in p.stdout


def test_the_import_is_checked_against_the_library_it_binds_to(tmp_path):
    """_objc_msgSend is libobjc's: bound to libSystem (ordinal 1) dyld would not find it."""
    ok = audit(lib(tmp_path, libs=(LIBSYSTEM, LIBOBJC), imports=(("_objc_msgSend", 2),)))
    bad = audit(lib(tmp_path, name="b.dylib", libs=(LIBSYSTEM, LIBOBJC), imports=(("_objc_msgSend", 1),)))
    assert ok.returncode == 0, ok.stdout
    assert bad.returncode == 1 and "imports _objc_msgSend from /usr/lib/libSystem.B.dylib" in bad.stdout


# ---- dyld's segment rule for SDK 26 and later (mach_o/UnsafeHeader.cpp, Policy.cpp) ----------

def test_sdk_26_without_sg_read_only_fails(tmp_path):
    p = audit(lib(tmp_path, sdk=(26, 0), data_const=0))
    assert p.returncode == 1
    assert ("lib.dylib [arm64]: __DATA_CONST lacks SG_READ_ONLY (0x10), which dyld requires of a file built against "
            "SDK 26.0 or later (SDK 26.0)") in p.stdout, p.stdout


@pytest.mark.parametrize("sdk,flags", [((26, 0), mg.SG_READ_ONLY), ((27, 1), mg.SG_READ_ONLY), ((15, 1), 0), ((25, 9), 0)])
def test_sg_read_only_is_required_from_sdk_26_only(tmp_path, sdk, flags):
    p = audit(lib(tmp_path, sdk=sdk, data_const=flags))
    assert p.returncode == 0, p.stdout


# ---- __TEXT r-x and an executable's __LINKEDIT r-- (issue 32 row 14) ----------------------------
# dyld's mach_o/Header.cpp validSegment applies Policy::enforceTextSegmentPermissions (SDK
# epoch fall 2019, macOS 10.15) and Policy::enforceReadOnlyLinkedit (fall 2015, macOS 10.11):
# both hold for every file built against SDK 26.

@pytest.mark.parametrize("filetype,name", [(6, "lib.dylib"), (2, "vzcaps")])
def test_sdk_26_with_text_rwx_fails(tmp_path, filetype, name):
    p = audit(lib(tmp_path, name=name, sdk=(26, 0), data_const=mg.SG_READ_ONLY, filetype=filetype, text_prot=7,
                  linkedit_prot=1), command=filetype == 2)
    assert p.returncode == 1
    assert (f"{name} [arm64]: __TEXT is not r-x (rwx; dyld refuses it when built against SDK 10.15 or later; "
            "SDK 26.0)") in p.stdout, p.stdout


def test_sdk_26_executable_with_linkedit_rw_fails(tmp_path):
    p = audit(lib(tmp_path, name="vzcaps", sdk=(26, 0), data_const=mg.SG_READ_ONLY, filetype=2, linkedit_prot=3),
              command=True)
    assert p.returncode == 1
    assert ("vzcaps [arm64]: __LINKEDIT is not r-- (rw-; dyld refuses it when built against SDK 10.11 or later; "
            "SDK 26.0)") in p.stdout, p.stdout


@pytest.mark.parametrize("sdk,text,linkedit,ok", [
    ((26, 0), 5, 1, True),       # what a linker writes
    ((10, 14), 7, 1, True),      # before the __TEXT rule's epoch
    ((10, 15), 7, 1, False),
    ((10, 10), 5, 3, True),      # before the __LINKEDIT rule's epoch
    ((10, 11), 5, 3, False),
    ((26, 0), 1, 1, False),      # r-- is not r-x either
])
def test_segment_permission_rules_follow_the_sdk_epochs(tmp_path, sdk, text, linkedit, ok):
    p = audit(lib(tmp_path, name="vzcaps", sdk=sdk, data_const=mg.SG_READ_ONLY if sdk >= (26, 0) else 0, filetype=2,
                  text_prot=text, linkedit_prot=linkedit), command=True)
    assert (p.returncode == 0) == ok, p.stdout


# ---- header padding for install_name_tool (Homebrew) -------------------------------------------

@pytest.mark.parametrize("pad,ok", [(0x20, False), (0xF8, False), (0x100, True), (0x1000, True)])
def test_header_padding(tmp_path, pad, ok):
    p = audit(lib(tmp_path, headerpad=pad))
    assert (p.returncode == 0) == ok, p.stdout
    if not ok:
        assert f"{pad:#x} bytes of header padding after the load commands, fewer than 0x100" in p.stdout


# ---- the .tbd reader ---------------------------------------------------------------------------

def write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return f


V4_SYSTEM = """--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-macos, x86_64-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'   # a comment, and one with a '#' in quotes below
reexported-libraries:
  - targets:         [ arm64-macos, x86_64-macos ]
    libraries:       [ '/usr/lib/system/libsub.dylib' ]
exports:
  - targets:         [ arm64-macos ]
    symbols:         [ _only_arm, '_quoted#name', '$ld$hide$os13.0$_hidden_at_13',
                       _hidden_at_13, '$ld$add$os13.0$_added_at_13' ]
...
--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-macos, x86_64-macos ]
install-name:    '/usr/lib/system/libsub.dylib'
parent-umbrella:
  - targets:         [ arm64-macos, x86_64-macos ]
    umbrella:        System
exports:
  - targets:         [ arm64-macos, x86_64-macos ]
    symbols:         [ _from_sub ]
    objc-classes:    [ VZThing ]
...
"""


@pytest.mark.parametrize("sym,minos,ok", [("_only_arm", (13, 0), True), ("_quoted#name", (13, 0), True),
                                          ("_from_sub", (13, 0), True), ("_OBJC_CLASS_$_VZThing", (13, 0), True),
                                          ("_OBJC_METACLASS_$_VZThing", (13, 0), True), ("VZThing", (13, 0), False),
                                          ("_hidden_at_13", (13, 0), False), ("_hidden_at_13", (14, 0), True),
                                          ("_added_at_13", (13, 0), True), ("_added_at_13", (14, 0), False),
                                          ("_umbrella", (13, 0), False), ("System", (13, 0), False)])
def test_tbd_v4_exports_reexports_and_ld_directives(tmp_path, sym, minos, ok):
    stub = write(tmp_path, "libSystem.tbd", V4_SYSTEM)
    p = audit(lib(tmp_path, imports=((sym, 1),), minos=minos), stubs=[stub])
    assert (p.returncode == 0) == ok, p.stdout


def test_tbd_v5_json(tmp_path):
    doc = {"tapi_tbd_version": 5, "main_library": {
        "target_info": [{"target": "arm64-macos", "min_deployment": "11"}],
        "install_names": [{"name": LIBSYSTEM}],
        "exported_symbols": [{"text": {"global": ["_v5_text"]}, "data": {"global": ["_v5_data"], "objc_class": ["K"]}}],
        "reexported_libraries": [{"names": ["/usr/lib/system/libv5sub.dylib"]}]},
        "libraries": [{"target_info": [{"target": "arm64-macos"}], "install_names": [{"name": "/usr/lib/system/libv5sub.dylib"}],
                       "exported_symbols": [{"targets": ["arm64-macos"], "text": {"weak": ["_v5_weak_in_sub"]}}]}]}
    stub = write(tmp_path, "libSystem.tbd", json.dumps(doc))
    good = audit(lib(tmp_path, imports=(("_v5_text", 1), ("_v5_data", 1), ("_OBJC_CLASS_$_K", 1), ("_v5_weak_in_sub", 1))),
                 stubs=[stub])
    assert good.returncode == 0, good.stdout
    bad = audit(lib(tmp_path, name="b.dylib", imports=(("_v5_missing", 1),)), stubs=[stub])
    assert bad.returncode == 1 and "imports _v5_missing" in bad.stdout


def test_tbd_v5_stub_newer_than_the_minimum_fails(tmp_path):
    doc = {"tapi_tbd_version": 5, "main_library": {"target_info": [{"target": "arm64-macos", "min_deployment": "14.0"}],
                                                   "install_names": [{"name": LIBSYSTEM}],
                                                   "exported_symbols": [{"text": {"global": ["_malloc"]}}]}}
    p = audit(lib(tmp_path), stubs=[write(tmp_path, "s.tbd", json.dumps(doc))])
    assert p.returncode == 1
    assert "whose stub starts at macOS 14.0, after the minimum 13.0" in p.stdout


def test_tbd_v3_archs_and_platform(tmp_path):
    stub = write(tmp_path, "s.tbd", "--- !tapi-tbd-v3\narchs: [ arm64 ]\nplatform: macosx\n"
                 f"install-name: {LIBSYSTEM}\nexports:\n  - archs: [ arm64 ]\n    symbols: [ _v3 ]\n"
                 "    objc-classes: [ _Old ]\n...\n")
    assert audit(lib(tmp_path, imports=(("_v3", 1), ("_OBJC_CLASS_$_Old", 1))), stubs=[stub]).returncode == 0
    assert audit(lib(tmp_path, name="x.dylib", imports=(("_v3", 1),), cputype=mg.CPU_X86_64), stubs=[stub]).returncode == 1


@pytest.mark.parametrize("text,why", [
    ("--- !tapi-tbd\ntbd-version: 4\ntargets: [ arm64-macos\ninstall-name: x\n...\n", "unclosed flow collection"),
    ("--- !tapi-tbd\ntbd-version: 4\ninstall-name: a\ninstall-name: b\n...\n", "key 'install-name' given twice"),
    ("--- !tapi-tbd\ntbd-version: 9\ninstall-name: a\n...\n", "tbd-version 9"),
    ("--- !tapi-tbd\ntbd-version: 4\ntargets: [ arm64-macos ]\n...\n", "no install-name"),
    ("{\"tapi_tbd_version\": 5, ", "not valid JSON"),
    ("--- !tapi-tbd\ntbd-version: 4\n\tinstall-name: a\n...\n", "a tab in the indentation"),
    ("", "no document"),
    ("--- !tapi-tbd\ntbd-version: 4\ninstall-name: a\nexports:\n  - targets: [ arm64-macos ]\n    symbols: _not_a_list\n...\n",
     "'symbols' is not a list of names"),
])
def test_a_malformed_stub_is_one_line_naming_it(tmp_path, text, why):
    stub = write(tmp_path, "bad.tbd", text)
    p = audit(lib(tmp_path), stubs=[stub])
    assert p.returncode == 1
    assert f"audit: FAIL: stub {stub}: {why}" in p.stdout, p.stdout


def test_an_unknown_sdk_stub_path_is_named(tmp_path):
    p = audit(lib(tmp_path), stubs=[tmp_path / "nosuch.tbd"])
    assert p.returncode == 1 and f"stub {tmp_path / 'nosuch.tbd'}:" in p.stdout


def test_sdk_root_layout_is_found(tmp_path):
    """On a Mac the stubs come from xcrun's SDK: /usr/lib/libX.dylib as usr/lib/libX.tbd."""
    sdk = tmp_path / "MacOSX.sdk"
    (sdk / "usr" / "lib").mkdir(parents=True)
    (sdk / "usr" / "lib" / "libSystem.B.tbd").write_text(V4_SYSTEM.split("...\n")[0] + "...\n")
    f = lib(tmp_path, imports=(("_only_arm", 1),))
    p = subprocess.run(["python3", str(ROOT / "scripts" / "audit"), "--sdk", str(sdk), "--file", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout
    p = subprocess.run(["python3", str(ROOT / "scripts" / "audit"), "--sdk", str(sdk), "--file",
                        str(lib(tmp_path, name="y.dylib", imports=(("_from_sub", 1),)))], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and "imports _from_sub" in p.stdout  # libsub.tbd is not in this SDK


@pytest.mark.parametrize("cut", [8, 40, 200])
def test_a_truncated_file_is_one_line(tmp_path, cut):
    f = tmp_path / "t.dylib"
    f.write_bytes(lib(tmp_path).read_bytes()[:cut])
    p = audit(f)
    assert p.returncode == 1
    assert "t.dylib [?]: unreadable:" in p.stdout or "t.dylib: " in p.stdout, p.stdout
    assert "Traceback" not in p.stderr


def audit_module():
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("vzcaps_audit", str(ROOT / "scripts" / "audit"))
    spec = importlib.util.spec_from_loader("vzcaps_audit", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_hostile_stub_text_gives_a_reason_never_a_crash():
    """Every prefix and many one-byte changes of a real-looking stub: parsed, or TbdError."""
    a = audit_module()
    text = V4_SYSTEM
    import random
    rnd = random.Random(27)
    cases = [text[:n] for n in range(0, len(text), 7)]
    cases.append("--- !tapi-tbd\n" + "".join(f"{' ' * k}k{k}:\n" for k in range(3000)))  # deeper than Python recurses
    cases.append("{" + '"a": [' * 5000)
    for _ in range(3000):
        i = rnd.randrange(len(text))
        cases.append(text[:i] + rnd.choice("[]{}:,'\"#-\n\t x") + text[i + 1:])
    for case in cases:
        try:
            a.parse_tbd(case)
        except a.TbdError:
            pass


def test_hostile_macho_bytes_give_a_reason_never_a_crash(tmp_path):
    a = audit_module()
    good = lib(tmp_path).read_bytes()
    import random
    rnd = random.Random(9)
    cases = [good[:n] for n in range(0, 400, 3)]
    for _ in range(400):
        b = bytearray(good)
        for _ in range(4):
            b[rnd.randrange(32, 400)] = rnd.randrange(256)
        cases.append(bytes(b))
    for case in cases:
        try:
            for part in a.slices(case):
                a.dyld_problems(a.read_slice(part))
        except a.MachOError:
            pass
