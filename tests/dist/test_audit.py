"""make audit on the cross-built artifacts, and on deliberately broken copies: each defect
must fail the audit with a message naming it."""
import hashlib
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, CROSS_BUILD, ROOT, ROOT_BUILD, built, need_tool

DIST = ROOT / "dist"
WORK = ROOT_BUILD / "dist"
pytestmark = [CROSS_BUILD,  # relinks the cross-built objects with ld64.lld
              built(DIST / "libvzcaps.dylib", WORK / "arm64" / "obj-lib", how="make dist")]


def tool(name):
    return need_tool(name)


def audit(d):
    return subprocess.run(["python3", str(ROOT / "scripts" / "audit"), str(d), str(BUILD / "vzcaps")],
                          capture_output=True, text=True, timeout=120)


def sums(d):
    with open(d / "SHA256SUMS", "w") as out:
        for f in sorted(os.listdir(d)):
            if f != "SHA256SUMS":
                out.write(f"{hashlib.sha256((d / f).read_bytes()).hexdigest()}  {f}\n")


def copy_dist(tmp_path):
    d = tmp_path / "dist"
    shutil.copytree(DIST, d)
    return d


def relink_library(tmp_path, extra_c=None, extra_inputs=(), sdk="15.1", headerpad=("-headerpad_max_install_names",)):
    """The arm64 library linked as make dist links it, plus the given defect."""
    import ziglang
    zlib = os.path.join(os.path.dirname(ziglang.__file__), "lib")
    objs = sorted(str(p) for p in (WORK / "arm64" / "obj-lib").glob("*.o"))
    if extra_c:
        src = tmp_path / "extra.c"
        src.write_text(extra_c)
        subprocess.run(["python3", "-m", "ziglang", "cc", "-target", "aarch64-macos.13.0", "-O2", "-c", str(src),
                        "-o", str(tmp_path / "extra.o")], check=True)
        objs.append(str(tmp_path / "extra.o"))
    out = tmp_path / "arm64.dylib"
    subprocess.run([tool("ld64.lld"), "-dylib", "-install_name", "@rpath/libvzcaps.dylib", "-o", str(out), *objs,
                    "-arch", "arm64", "-platform_version", "macos", "13.0", sdk, "-adhoc_codesign", *headerpad,
                    "-F", str(ROOT / "stubs"), "-weak_framework", "Metal", str(ROOT / "stubs" / "libobjc.tbd"),
                    f"{zlib}/libc/darwin/libSystem.tbd", *extra_inputs], check=True)
    d = copy_dist(tmp_path)
    subprocess.run([tool("llvm-lipo"), "-create", str(out), str(WORK / "x86_64" / "libvzcaps.dylib"),
                    "-output", str(d / "libvzcaps.dylib")], check=True)
    sums(d)
    return d


def test_dist_passes():
    p = audit(DIST)
    assert p.returncode == 0, p.stdout
    assert "passed" in p.stdout


def test_relinked_library_unchanged_passes(tmp_path):
    p = audit(relink_library(tmp_path))
    assert p.returncode == 0, p.stdout  # the negative cases below differ only by their defect


def test_extra_exported_symbol(tmp_path):
    p = audit(relink_library(tmp_path, extra_c="int vzcaps_leak = 1;\n"))
    assert p.returncode == 1
    assert "libvzcaps.dylib [arm64]: unexpected exported symbols ['_vzcaps_leak']" in p.stdout


def test_extra_linked_library(tmp_path):
    tbd = tmp_path / "libz.tbd"
    tbd.write_text("--- !tapi-tbd\ntbd-version: 4\ntargets: [ arm64-macos ]\ninstall-name: '/usr/lib/libz.1.dylib'\n"
                   "exports:\n  - targets: [ arm64-macos ]\n    symbols: [ _zlibVersion ]\n...\n")
    p = audit(relink_library(tmp_path, extra_c="const char *zlibVersion(void);\n"
                                              "__attribute__((visibility(\"hidden\"))) const char *v(void) { return zlibVersion(); }\n",
                             extra_inputs=[str(tbd)]))
    assert p.returncode == 1
    assert "libvzcaps.dylib [arm64]: links /usr/lib/libz.1.dylib, which is not allowed" in p.stdout


@pytest.mark.parametrize("call,why", [("dlopen(\"x\", 0)", "loads other code"), ("fopen(\"x\", \"w\")", "writes files"),
                                      ("system(\"x\")", "executes programs"), ("socket(1, 1, 0)", "opens sockets")])
def test_forbidden_import(tmp_path, call, why):
    code = ("#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <sys/socket.h>\n"
            f"__attribute__((visibility(\"hidden\"))) long bad(void) {{ return (long){call}; }}\n")
    p = audit(relink_library(tmp_path, extra_c=code))
    assert p.returncode == 1
    assert f", which {why}" in p.stdout, p.stdout


def test_corrupted_signature_byte(tmp_path):
    d = copy_dist(tmp_path)
    data = bytearray((d / "libvzcaps.dylib").read_bytes())
    arm = subprocess.run([tool("llvm-lipo"), "-info", str(d / "libvzcaps.dylib")], capture_output=True, text=True)
    # flip one byte inside the arm64 slice's code (the second slice starts at its fat offset)
    out = subprocess.run([tool("llvm-objdump"), "--macho", "--universal-headers", str(d / "libvzcaps.dylib")],
                         capture_output=True, text=True).stdout
    offsets = [int(l.split()[1]) for l in out.splitlines() if l.strip().startswith("offset ")]
    cputypes = [l.split()[1] for l in out.splitlines() if l.strip().startswith("cputype ")]
    arm_off = offsets[cputypes.index("CPU_TYPE_ARM64")]
    data[arm_off + 0x1000 + 17] ^= 0x01
    (d / "libvzcaps.dylib").write_bytes(bytes(data))
    sums(d)
    p = audit(d)
    assert p.returncode == 1 and arm.returncode == 0
    assert "libvzcaps.dylib [arm64]: code signature does not verify: page 1" in p.stdout


def test_wrong_checksum(tmp_path):
    d = copy_dist(tmp_path)
    text = (d / "SHA256SUMS").read_text().splitlines()
    text[0] = "0" * 64 + text[0][64:]
    (d / "SHA256SUMS").write_text("\n".join(text) + "\n")
    p = audit(d)
    assert p.returncode == 1
    assert "SHA256SUMS: checksum of LICENSE does not match" in p.stdout


def test_missing_and_unlisted_files(tmp_path):
    d = copy_dist(tmp_path)
    (d / "extra.txt").write_text("x")
    os.remove(d / "vzcaps")
    p = audit(d)
    assert p.returncode == 1
    assert "vzcaps missing from" in p.stdout and "SHA256SUMS names vzcaps, which is missing" in p.stdout
    assert "does not cover ['extra.txt']" in p.stdout


def test_kernel_sources_are_in_the_command():
    data = (DIST / "vzcaps").read_bytes()
    for k in sorted((ROOT / "kernels").glob("*.metal")):
        text = k.read_text()
        fn = text.split("kernel void ", 1)[1].split("(", 1)[0]
        assert data.count(f"kernel void {fn}(".encode()) >= 2, (k.name, fn)  # in both slices


def test_stack_probe_import_is_refused(tmp_path):
    """What a native build of a library frame over 4 KiB imports (Apple clang's default)."""
    code = "void __chkstk_darwin(void);\n__attribute__((visibility(\"hidden\"))) void probe(void) { __chkstk_darwin(); }\n"
    p = audit(relink_library(tmp_path, extra_c=code))
    assert p.returncode == 1
    assert "imports ___chkstk_darwin, which is Apple clang's stack probe: a frame over 4 KiB" in p.stdout, p.stdout


def test_cross_built_library_has_apple_clangs_stack_protector():
    out = subprocess.run([tool("llvm-nm"), "-u", "--arch=arm64", str(DIST / "libvzcaps.dylib")], capture_output=True,
                         text=True).stdout.split()
    assert "___stack_chk_guard" in out and "___stack_chk_fail" in out


def test_ld64_lld_output_against_sdk_26_fails_for_sg_read_only(tmp_path):
    """ld64.lld 14 writes no SG_READ_ONLY: harmless at SDK 15.1, refused by dyld from SDK 26."""
    p = audit(relink_library(tmp_path, sdk="26.0"))
    assert p.returncode == 1
    assert ("libvzcaps.dylib [arm64]: __DATA_CONST lacks SG_READ_ONLY (0x10), which dyld requires of a file built "
            "against SDK 26.0 or later (SDK 26.0)") in p.stdout, p.stdout


def test_link_without_headerpad_fails(tmp_path):
    p = audit(relink_library(tmp_path, headerpad=()))
    assert p.returncode == 1
    assert "libvzcaps.dylib [arm64]: 0x20 bytes of header padding after the load commands, fewer than 0x100" in p.stdout, p.stdout


@pytest.mark.parametrize("name", ["libvzcaps.dylib", "vzcaps"])
@pytest.mark.parametrize("arch", ["arm64", "x86_64"])
def test_dist_has_room_for_homebrews_install_name(name, arch):
    """install_name_tool can give the library a Homebrew opt path of MAXPATHLEN (1024), read with
    llvm-objdump, independently of the audit's own reading."""
    out = subprocess.run([tool("llvm-objdump"), "--macho", f"--arch={arch}", "--private-headers", str(DIST / name)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    head = next(i for i, line in enumerate(out) if line.startswith("MH_MAGIC_64"))
    sizeofcmds = int(out[head].split()[6])
    offsets, size = [], None
    for line in out:
        f = line.split()
        if f[:1] == ["size"]:
            size = int(f[1], 16)
        elif f[:1] == ["offset"] and size:
            offsets.append(int(f[1]))
    assert min(o for o in offsets if o) - (32 + sizeofcmds) >= 1024


def test_an_arm64e_slice_fails(tmp_path):
    """dyld would give every arm64 process the arm64e slice first (docs/artifacts.md)."""
    d = copy_dist(tmp_path)
    data = bytearray((WORK / "arm64" / "libvzcaps.dylib").read_bytes())
    data[8:12] = (0x80000002).to_bytes(4, "little")  # CPU_SUBTYPE_ARM64E with the ABI flag
    (tmp_path / "e.dylib").write_bytes(bytes(data))
    subprocess.run([tool("llvm-lipo"), "-create", str(WORK / "arm64" / "libvzcaps.dylib"), str(tmp_path / "e.dylib"),
                    str(WORK / "x86_64" / "libvzcaps.dylib"), "-output", str(d / "libvzcaps.dylib")], check=True)
    sums(d)
    p = audit(d)
    assert p.returncode == 1
    assert ("libvzcaps.dylib: slices ['arm64', 'arm64e', 'x86_64'], expected ['arm64', 'x86_64'] (an arm64e slice would "
            "be what every arm64 process loads)") in p.stdout, p.stdout
