"""A prepared .app is sealed again: every bundle gets a new _CodeSignature/CodeResources
(files2 hash2 of every resource, nested code by cdhash and requirement, the default rules),
and its main executable binds Info.plist (special slot 1) and that file (slot 3); nested
bundles are sealed first. Files that are not signable code (Java classes, object files,
dSYMs, static archives, unsigned Mach-O files) are resources.

The checks here are independent of vzcaps's code: the plists are read with plistlib, digests
taken with hashlib, the CodeDirectories read by machogen.py."""
import hashlib
import os
import plistlib
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import machogen as mg  # noqa: E402
from conftest import BUILD, clean_env  # noqa: E402

VZ = str(BUILD / "vzcaps")


def roomy(ident=b"demo"):
    """Signed, with room for a bound signature (its old one carries entitlements)."""
    return mg.build(entitlements=mg.entitlements_xml(a=True), ident=ident)


def with_filetype(data, filetype):
    data = bytearray(data)
    struct.pack_into("<I", data, 12, filetype)
    return bytes(data)


def universal(*slices):
    """A universal file of arbitrary slices (machogen.fat reads a Mach-O header for the cpu)."""
    hdr = struct.pack(">II", 0xCAFEBABE, len(slices))
    off, entries, body = 4096, b"", b""
    for i, s in enumerate(slices):
        entries += struct.pack(">IIIII", [mg.CPU_ARM64, mg.CPU_X86_64][i % 2], 0, off + len(body), len(s), 12)
        body += s + b"\0" * (-len(s) % 4096)
    return hdr + entries + b"\0" * (off - len(hdr) - len(entries)) + body


def plist(exe, ident="com.example.demo"):
    return plistlib.dumps({"CFBundleExecutable": exe, "CFBundleIdentifier": ident})


def make_app(root):
    app = root / "Demo.app"
    c = app / "Contents"
    files = {
        "Info.plist": plist("Demo"),
        "PkgInfo": b"APPL????",
        "MacOS/Demo": roomy(b"com.example.demo"),
        "MacOS/helper.sh": b"#!/bin/sh\necho hi\n",
        "Resources/notes.txt": b"notes",
        "Resources/Foo.class": b"\xca\xfe\xba\xbe\x00\x00\x00\x37" + b"java" * 10,
        "Resources/thing.o": with_filetype(mg.build(signed=False), 1),
        "Resources/libstatic.a": universal(b"!<arch>\nfoo.o/ " + b"x" * 60, b"!<arch>\nbar.o/ " + b"y" * 60),
        "Resources/noslice.dylib": universal(mg.build(signed=False), mg.build(cputype=mg.CPU_X86_64, signed=False)),
        "Resources/en.lproj/Localizable.strings": b'"a" = "b";',
        "Resources/Demo.dSYM/Contents/Resources/DWARF/Demo": with_filetype(mg.build(signed=False), 0xA),
        "Resources/plugin.so": mg.build(ident=b"plugin"),
        "Frameworks/libx.dylib": mg.build(ident=b"libx"),
        "Frameworks/Inner.framework/Versions/A/Inner": roomy(b"com.example.inner"),
        "Frameworks/Inner.framework/Versions/A/Resources/Info.plist": plist("Inner", "com.example.inner"),
        "Frameworks/Inner.framework/Versions/A/Resources/data.txt": b"inner data",
        "PlugIns/P.bundle/Contents/Info.plist": plist("P", "com.example.p"),
        "PlugIns/P.bundle/Contents/MacOS/P": roomy(b"com.example.p"),
        "_CodeSignature/CodeResources": b"the developer's old seal",
    }
    for rel, data in files.items():
        (c / rel).parent.mkdir(parents=True, exist_ok=True)
        (c / rel).write_bytes(data)
    os.chmod(c / "MacOS" / "Demo", 0o755)
    os.symlink("notes.txt", c / "Resources" / "link")
    fw = c / "Frameworks" / "Inner.framework"
    os.symlink("A", fw / "Versions" / "Current")
    os.symlink("Versions/Current/Inner", fw / "Inner")
    os.symlink("Versions/Current/Resources", fw / "Resources")
    return app


def snapshot(root):
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                out[rel] = ("file", os.stat(p).st_mode, open(p, "rb").read())
            else:
                out[rel] = ("dir", os.stat(p).st_mode)
    return out


def prepare(*args):
    return subprocess.run([VZ, "prepare", *map(str, args)], capture_output=True, text=True, timeout=120, env=clean_env())


def sha256(b):
    return hashlib.sha256(b).digest()


def check_bound(exe_path, info_path, base):
    """slot 1 is SHA-256 of Info.plist, slot 3 SHA-256 of the CodeResources; the rest of the
    signature verifies; returns the parsed CodeResources."""
    data = exe_path.read_bytes()
    seal = (base / "_CodeSignature" / "CodeResources").read_bytes()
    info = info_path.read_bytes()
    for i in range(len(mg.code_directories(data))):
        assert mg.special_slot(data, 1, i) == sha256(info)
        assert mg.special_slot(data, 3, i) == sha256(seal)
    assert all(r["ok"] and r["flags"] == mg.CS_ADHOC for r in mg.verify(data, {1: info, 3: seal}))
    return plistlib.loads(seal)


def test_a_prepared_app_is_sealed_and_the_slot_hashes_check_out(tmp_path):
    src = tmp_path / "src"
    app = make_app(src)
    before = snapshot(src)
    out = tmp_path / "out"
    p = prepare("--into", out, app)  # the plan: what is code and what is a resource, and the order of the checks
    assert p.returncode == 1, p.stderr
    for rel in ("Resources/Foo.class", "Resources/thing.o", "Resources/libstatic.a", "Resources/noslice.dylib",
                "Resources/Demo.dSYM/Contents/Resources/DWARF/Demo"):
        assert f"Contents/{rel}: " in p.stdout and "sealed as a resource" in p.stdout.split(f"Contents/{rel}: ")[1].split("\n")[0]
    order = p.stdout.split("--verify --strict, in this order:\n")[1].split("What the copy")[0].split()
    assert order[-2:] == ["Contents/MacOS/Demo", "Demo.app"]  # the outermost last
    assert order.index("Contents/Frameworks/Inner.framework/Versions/A/Inner") < order.index(
        "Contents/Frameworks/Inner.framework/Versions/A") < order.index("Contents/MacOS/Demo")

    p = prepare("--yes", "--into", out, app)
    assert p.returncode == 0, p.stderr
    assert "3 bundles sealed" in p.stdout
    assert snapshot(src) == before  # the original is untouched
    c = out / "Demo.app" / "Contents"
    cr = check_bound(c / "MacOS" / "Demo", c / "Info.plist", c)
    files2, files = cr["files2"], cr["files"]

    for rel in ("MacOS/helper.sh", "Resources/notes.txt", "Resources/Foo.class", "Resources/thing.o",
                "Resources/libstatic.a", "Resources/noslice.dylib", "Resources/Demo.dSYM/Contents/Resources/DWARF/Demo",
                "Resources/plugin.so"):
        assert files2[rel] == {"hash2": sha256((c / rel).read_bytes())}, rel
    # resources are copied byte for byte (plugin.so, signed code in Resources, is re-signed and hashed as it is now)
    assert (c / "Resources" / "Foo.class").read_bytes() == (app / "Contents" / "Resources" / "Foo.class").read_bytes()
    assert all(r["ok"] and r["flags"] == mg.CS_ADHOC for r in mg.verify((c / "Resources" / "plugin.so").read_bytes()))
    loc = "Resources/en.lproj/Localizable.strings"
    assert files2[loc] == {"hash2": sha256((c / loc).read_bytes()), "optional": True}
    assert files2["Resources/link"] == {"symlink": "notes.txt"}
    for rel, code in (("Frameworks/libx.dylib", c / "Frameworks" / "libx.dylib"),
                      ("Frameworks/Inner.framework", c / "Frameworks" / "Inner.framework" / "Versions" / "A" / "Inner"),
                      ("PlugIns/P.bundle", c / "PlugIns" / "P.bundle" / "Contents" / "MacOS" / "P")):
        h = mg.cdhash(code.read_bytes())
        assert files2[rel] == {"cdhash": h, "requirement": f'cdhash H"{h.hex()}"'}, rel
    for absent in ("Info.plist", "PkgInfo", "MacOS/Demo", "_CodeSignature/CodeResources"):
        assert absent not in files2 and absent not in files
    assert not any(k.startswith("Frameworks/Inner.framework/") for k in files2)  # sealed by the framework itself
    # the legacy section: SHA-1 of what the rules take (with a Resources directory: Resources/)
    assert files["Resources/notes.txt"] == hashlib.sha1(b"notes").digest()
    assert files[loc] == {"hash": hashlib.sha1((c / loc).read_bytes()).digest(), "optional": True}
    assert "MacOS/helper.sh" not in files
    assert cr["rules2"]["^(Frameworks|SharedFrameworks|PlugIns|Plug-ins|XPCServices|Helpers|MacOS|Library/(Automator|Spotlight|LoginItems))/"] == {"nested": True, "weight": 10.0}
    assert cr["rules2"]["^.*"] is True and cr["rules"]["^Resources/"] is True

    # nested bundles, sealed first, each bound the same way
    inner = c / "Frameworks" / "Inner.framework" / "Versions" / "A"
    icr = check_bound(inner / "Inner", inner / "Resources" / "Info.plist", inner)
    # a framework's Info.plist is in Resources/: bound by slot 1 and, as codesign does, sealed too
    assert icr["files2"] == {"Resources/data.txt": {"hash2": sha256(b"inner data")},
                             "Resources/Info.plist": {"hash2": sha256((inner / "Resources" / "Info.plist").read_bytes())}}
    pb = c / "PlugIns" / "P.bundle" / "Contents"
    pcr = check_bound(pb / "MacOS" / "P", pb / "Info.plist", pb)
    assert pcr["files2"] == {}
    assert os.readlink(c / "Frameworks" / "Inner.framework" / "Versions" / "Current") == "A"


def test_the_same_input_gives_the_same_bytes(tmp_path):
    app = make_app(tmp_path / "src")
    assert prepare("--yes", "--into", tmp_path / "one", app).returncode == 0
    assert prepare("--yes", "--into", tmp_path / "two", app).returncode == 0
    assert snapshot(tmp_path / "one" / "Demo.app") == snapshot(tmp_path / "two" / "Demo.app")


def test_a_non_bundle_directory_in_a_code_location_is_refused(tmp_path):
    app = make_app(tmp_path / "src")
    (app / "Contents" / "Frameworks" / "odd.d").mkdir()
    (app / "Contents" / "Frameworks" / "odd.d" / "x.txt").write_text("x")
    p = prepare("--yes", "--into", tmp_path / "out", app)
    assert p.returncode == 1 and "odd.d" in p.stderr and "nested bundle" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "out").exists()


def test_an_app_without_contents_resources_keeps_nested_code_rules(tmp_path):
    """codesign takes the resources path from the layout (CFBundle: a Contents bundle's is
    Contents/Resources, present or not), so the rules with Resources/ and nested code apply and
    a framework in Contents/Frameworks is sealed as code, by cdhash (bundlediskrep.cpp)."""
    app = make_app(tmp_path / "src")
    c = app / "Contents"
    for rel in sorted((c / "Resources").rglob("*"), key=lambda p: -len(p.parts)):
        rel.unlink() if rel.is_file() or rel.is_symlink() else rel.rmdir()
    (c / "Resources").rmdir()
    p = prepare("--yes", "--into", tmp_path / "out", app)
    assert p.returncode == 0, p.stderr
    oc = tmp_path / "out" / "Demo.app" / "Contents"
    cr = check_bound(oc / "MacOS" / "Demo", oc / "Info.plist", oc)
    h = mg.cdhash((oc / "Frameworks" / "Inner.framework" / "Versions" / "A" / "Inner").read_bytes())
    assert cr["files2"]["Frameworks/Inner.framework"] == {"cdhash": h, "requirement": f'cdhash H"{h.hex()}"'}
    assert not any(k.startswith("Frameworks/Inner.framework/") for k in cr["files2"])
    assert cr["rules"]["^Resources/"] is True and "^.*" not in cr["rules"]
    assert cr["rules2"]["^[^/]+$"] == {"nested": True, "weight": 10.0}


def test_a_framework_version_without_resources_takes_the_flat_rules(tmp_path):
    """A version directory with no Resources is a flat bundle to CFBundle: its resources path
    is its top, so the flat rules (no nested code) seal it."""
    app = make_app(tmp_path / "src")
    v = app / "Contents" / "Frameworks" / "Inner.framework" / "Versions" / "A"
    (v / "Resources" / "data.txt").unlink()
    (v / "Resources" / "Info.plist").rename(v / "Info.plist")
    (v / "Resources").rmdir()
    (v / "notes.txt").write_bytes(b"top")
    os.unlink(app / "Contents" / "Frameworks" / "Inner.framework" / "Resources")
    p = prepare("--yes", "--into", tmp_path / "out", app)
    assert p.returncode == 0, p.stderr
    ov = tmp_path / "out" / "Demo.app" / "Contents" / "Frameworks" / "Inner.framework" / "Versions" / "A"
    cr = plistlib.loads((ov / "_CodeSignature" / "CodeResources").read_bytes())
    assert cr["rules"]["^.*"] is True and "^Resources/" not in cr["rules"]
    assert "^[^/]+$" not in cr["rules2"]
    assert cr["files2"]["notes.txt"] == {"hash2": sha256(b"top")}
