"""The shipped command (dist/vzcaps) started the way users start it, under the emulated Darwin
(issue 47 items 1 and 2): as a shim through a link in ~/.vzcaps/shims and in provisioning's
PREFIX/libexec/vzcaps/shims, as ~/bin/vzcaps -> the install, through Homebrew's links, with
_NSGetExecutablePath giving the path as exec was given it (dyld: not resolved); and #! files,
PATH and env as xnu's exec_activate_image and Libc's execvp read them (xnu_exec.py)."""
import json
import os
import pathlib
import shutil
import struct
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import ROOT, require_built  # noqa: E402
from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

if sys.platform.startswith("linux"):  # see test_emu.py
    from command import Command  # noqa: E402
    from process import Process, image  # noqa: E402

CMD = pathlib.Path(os.environ.get("VZCAPS_EMU_CMD") or ROOT / "dist" / "vzcaps")
LIB = pathlib.Path(os.environ.get("VZCAPS_EMU_LIB") or ROOT / "dist" / "libvzcaps.dylib")
HOST = {"brand": "Apple M2 (Virtual)", "memsize": 16 << 30, "sysctl": {"kern.hv_vmm_present": 1, "hw.ncpu": 4}}


@pytest.fixture(scope="module")
def imgs():
    require_built(CMD, how="make dist")
    require_built(LIB, how="make dist")
    return image(CMD), image(LIB)


def macho(path):
    """A Mach-O executable header (MH_MAGIC_64, arm64, MH_EXECUTE) the emulated kernel runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<IiiIIII", 0xFEEDFACF, 0x0100000C, 0, 2, 0, 0, 0) + b"\0" * 64)
    path.chmod(0o755)


def install(prefix):
    """A copy of the release as install.sh lays it out: PREFIX/bin/vzcaps, PREFIX/lib/libvzcaps.dylib."""
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    shutil.copy(CMD, prefix / "bin" / "vzcaps")
    shutil.copy(LIB, prefix / "lib" / "libvzcaps.dylib")
    (prefix / "share" / "vzcaps").mkdir(parents=True)
    (prefix / "share" / "vzcaps" / "uninstall.sh").write_text("#!/bin/sh\n")
    return prefix / "bin" / "vzcaps", (prefix / "lib" / "libvzcaps.dylib").resolve()


def link(at, to):
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)
    return at


@pytest.fixture
def layouts(tmp_path):
    """Each way users reach the command, as (the path exec is given, the library it must find)."""
    home, real = tmp_path / "home", tmp_path / "real"
    macho(real / "llama-server")
    vz, lib = install(tmp_path / "usr-local")
    brew = tmp_path / "opt" / "homebrew"
    cellar_vz, cellar_lib = install(brew / "Cellar" / "vzcaps" / "1.0")
    link(brew / "bin" / "vzcaps", "../Cellar/vzcaps/1.0/bin/vzcaps")
    link(brew / "lib" / "libvzcaps.dylib", "../Cellar/vzcaps/1.0/lib/libvzcaps.dylib")  # brew link: a link per file
    link(brew / "share" / "vzcaps", "../Cellar/vzcaps/1.0/share/vzcaps")  # ... or per directory it alone owns
    return home, real, {
        "fleet shims": (link(home / ".vzcaps" / "shims" / "llama-server", vz), lib),
        "provisioned shims": (link(tmp_path / "usr-local" / "libexec" / "vzcaps" / "shims" / "llama-server", vz), lib),
        "Homebrew shims": (link(home / "brew-shims" / "llama-server", brew / "bin" / "vzcaps"), cellar_lib),
        "~/bin/vzcaps": (link(home / "bin" / "vzcaps", vz), lib),
        "Homebrew bin": (brew / "bin" / "vzcaps", cellar_lib),
    }


def command(img, argv, exe, env):
    c = Command(img, argv, env, host=HOST, exe=str(exe))
    rc, out, err = c.run(argv)
    return c, rc, out, err


def hooked(lib_img, rec):
    """The program the command became, started by the emulated dyld with the environment it was
    given: its answers (Apple M2 under the default profile: Apple8, 1008)."""
    env = dict(e.split("=", 1) for e in rec["env"])
    p = Process(lib_img, env, argv=rec["argv"], exe=rec["path"], lib_path=env["DYLD_INSERT_LIBRARIES"], host=HOST).start()
    return p.probe()["families"][1008] == 1


@pytest.mark.parametrize("way", ["fleet shims", "provisioned shims", "Homebrew shims"])
def test_a_shim_in_each_documented_directory_finds_the_library(imgs, layouts, way):
    cmd_img, lib_img = imgs
    home, real, ways = layouts
    shim, lib = ways[way]
    env = {"PATH": f"{shim.parent}:{real}:/usr/bin:/bin", "HOME": str(home), "VZCAPS_HOST_CHIP": "Apple M2"}
    c, rc, out, err = command(cmd_img, ["llama-server", "-m", "x.gguf"], shim, env)
    assert c.execd is not None, (rc, err)
    rec = c.execd
    assert rec["path"] == str(real / "llama-server") and rec["argv"][1:] == ["-m", "x.gguf"], rec
    assert "not found" not in err and "left stock" not in err, err
    assert dict(e.split("=", 1) for e in rec["env"]).get("DYLD_INSERT_LIBRARIES") == str(lib), err
    assert hooked(lib_img, rec)


@pytest.mark.parametrize("way", ["~/bin/vzcaps", "Homebrew bin"])
def test_a_link_to_the_command_runs_and_doctors_with_the_library(imgs, layouts, way):
    cmd_img, lib_img = imgs
    home, real, ways = layouts
    vz, lib = ways[way]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "VZCAPS_HOST_CHIP": "Apple M2"}
    c, rc, out, err = command(cmd_img, ["vzcaps", "run", "--", str(real / "llama-server")], vz, env)
    assert c.execd is not None, (rc, err)
    assert dict(e.split("=", 1) for e in c.execd["env"]).get("DYLD_INSERT_LIBRARIES") == str(lib), err
    assert hooked(lib_img, c.execd)
    c, rc, out, err = command(cmd_img, ["vzcaps", "doctor", "--json"], vz, env)
    assert rc == 0, err
    assert json.loads(out)["library"] == str(lib)
    c, rc, out, err = command(cmd_img, ["vzcaps", "uninstall"], vz, env)  # an installed file: share/vzcaps/uninstall.sh
    assert rc == 2 and f"run {lib.parent.parent / 'share' / 'vzcaps' / 'uninstall.sh'} (add --all" in err, err


def test_the_executable_path_is_the_path_exec_was_given(imgs, layouts, tmp_path):
    """The stand-in itself, against dyld's rule: a link is not resolved, a relative path is made
    absolute against the current directory (dyld DyldProcessConfig.cpp:673-698)."""
    cmd_img, _ = imgs
    home, real, ways = layouts
    shim = ways["fleet shims"][0]
    c = Command(cmd_img, ["llama-server"], {}, host=HOST, exe=str(shim))
    m = c.m
    buf, size = m.alloc(4096), m.alloc(4, 4)
    m.put32(size, 4096)
    fn = m.standins["__NSGetExecutablePath"]
    assert fn(m, buf, size) == 0 and m.cstr(buf).decode() == str(shim)
    m.put32(size, 4)
    assert fn(m, buf, size) == 2**32 - 1 and m.u32(size) == len(str(shim)) + 1
    cwd = os.getcwd()
    try:
        os.chdir(shim.parent)
        c.d.exe = "./llama-server"
        m.put32(size, 4096)
        assert fn(m, buf, size) == 0 and m.cstr(buf).decode() == os.getcwd() + "/llama-server"
    finally:
        os.chdir(cwd)
