"""make cross-link: every Darwin target of the Makefile (library, command, both test programs)
compiled and linked for arm64 and x86_64 with the link lines of mk/darwin.mk, so that a link
line that would fail on a Mac fails here (issue: first Mac)."""
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, CROSS_BUILD, ROOT, ROOT_BUILD, built, need_tool

XLINK = ROOT_BUILD / "xlink"
pytestmark = CROSS_BUILD


@pytest.fixture
def needs_cross():
    """The cross toolchain is part of the Linux test set-up: its absence is a failure."""
    if subprocess.run(["sh", "scripts/have-cross"], cwd=ROOT).returncode != 0:
        pytest.fail("the cross toolchain (ziglang, llvm-lipo) is missing: run sh scripts/install-deps", pytrace=False)


@built(XLINK / "arm64" / "test_cli_units", how="make cross-link")
@pytest.mark.parametrize("arch", ["arm64", "x86_64"])
@pytest.mark.parametrize("name,kind", [("libvzcaps.dylib", "DYLIB"), ("vzcaps", "EXECUTE"), ("test_core", "EXECUTE"),
                                       ("test_cli_units", "EXECUTE")])
def test_every_darwin_target_is_linked(arch, name, kind):
    objdump = need_tool("llvm-objdump")
    h = subprocess.run([objdump, "--macho", "--private-header", str(XLINK / arch / name)], capture_output=True, text=True).stdout
    assert kind in h
    libs = subprocess.run([objdump, "--macho", "--dylibs-used", str(XLINK / arch / name)], capture_output=True, text=True).stdout
    if name.startswith("test_"):
        assert "libcmocka" in libs
    if name in ("vzcaps", "test_cli_units"):
        assert "Foundation.framework" in libs and "CoreGraphics.framework" in libs


def cross_link(env_extra, *targets, cwd=ROOT, work):
    env = dict(os.environ, WORK=str(work), **env_extra)
    return subprocess.run(["sh", "scripts/cross-link", *targets], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_darwin_test_link_without_objc_fails(tmp_path, needs_cross):
    before = set(os.listdir(ROOT))
    p = cross_link({"DARWIN_TEST_CLI_LINK": "-weak_framework Metal -framework Foundation -framework CoreGraphics -lcmocka"},
                   "test_cli_units", work=tmp_path / "x")
    assert p.returncode != 0
    assert "undefined symbol: _objc_msgSend" in p.stderr or "undefined symbol: _sel_registerName" in p.stderr, p.stderr
    # an absolute WORK keeps every file there (zig's cache once landed inside the checkout)
    assert set(os.listdir(ROOT)) == before


def test_library_frame_over_4_kib_fails_the_cross_build(tmp_path, needs_cross):
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, tree / f)
    (tree / "build").mkdir()
    shutil.copy(BUILD / "kernels.h", tree / "build" / "kernels.h")
    with open(tree / "src" / "core" / "util.c", "a") as f:
        f.write("\nint vzcaps_big_frame(const char *s);\nint vzcaps_big_frame(const char *s)\n"
                "{\n    char buf[8192];\n    strcpy(buf, s);\n    return buf[100];\n}\n")
    p = cross_link({}, "lib", cwd=tree, work=tree / "build" / "x")
    assert p.returncode != 0
    assert "exceeds limit (4000)" in p.stderr, p.stderr
