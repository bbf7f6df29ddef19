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

if sys.platform.startswith("linux"):  # see shipped.py
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


# ---- issue 47 item 2: #!, PATH and env as xnu and Libc read them, in the shipped command and library ----

def script(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    path.chmod(0o755)
    return path


@pytest.fixture
def bins(tmp_path):
    """A bin directory with python3 (a Mach-O program), and the environment a job runs in."""
    macho(tmp_path / "bin" / "python3")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "VZCAPS_HOST_CHIP": "Apple M2"}
    return tmp_path / "bin" / "python3", env


def run(img, argv, env, exe=None):
    c = Command(img, argv, env, host=HOST, exe=str(exe or CMD.resolve()))
    rc, out, err = c.run(argv)
    return c.execd, rc, out, err


CODING = "#!/usr/bin/env python3 # -*- coding: utf-8 -*-\nprint(1)\n"


def test_a_hash_ends_the_line_under_run_a_shim_and_launchd(imgs, bins, tmp_path):
    """xnu ends the #! line at '#' (kern_exec.c:333): python3 SCRIPT starts, with no comment words."""
    cmd_img, _ = imgs
    py, env = bins
    s = script(tmp_path / "real" / "tool", CODING)
    rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", str(s), "a"], env)
    assert rec and rec["path"] == str(py) and rec["argv"] == [str(py), str(s), "a"], (rc, err)
    shims = tmp_path / "shims"
    link(shims / "tool", CMD.resolve())
    senv = dict(env, PATH=f"{shims}:{tmp_path / 'real'}:{env['PATH']}")
    rec, rc, out, err = run(cmd_img, ["tool", "a"], senv, exe=shims / "tool")
    assert rec and rec["path"] == str(py) and rec["argv"] == [str(py), str(s), "a"], (rc, err)
    rec, rc, out, err = run(cmd_img, ["vzcaps", "launchd", "--label", "org.example.tool", "--", str(s), "a"], env)
    import plistlib
    assert rc == 0 and plistlib.loads(out.encode())["ProgramArguments"] == [str(py), str(s), "a"], err


@pytest.mark.parametrize("text,why", [
    ("#!{inner}\n", "its interpreter {inner}: not a program the kernel runs (a script itself)"),
    ("#!\necho\n", "its #! line names no interpreter"),
    ("#!{py}", "its #! line does not end"),  # no newline: the zero-filled page holds none
    ("#!/" + "a" * 600 + "\n", "its #! line does not end"),
    ("echo plain\n", "no #! line and no executable format"),
    (b"\x7fELF\x02\x01\x01" + b"\0" * 60, "no #! line and no executable format"),  # no activator runs ELF on macOS
    (b"\xbe\xba\xfe\xca" + b"\0" * 60, "no #! line and no executable format"),  # FAT_MAGIC in the wrong order
], ids=["interpreter a script", "no interpreter", "no end of line", "over 512 bytes", "no #!", "ELF", "fat, wrong order"])
def test_what_the_kernel_refuses_runs_with_bin_sh_keeping_argv0(imgs, bins, tmp_path, text, why):
    """ENOEXEC: execvp's /bin/sh with the caller's argv[0] (Libc exec.c:236-263), under run and
    through a shim, which never exits 126 for it; the emulated kernel refuses the file itself."""
    cmd_img, _ = imgs
    py, env = bins
    script(tmp_path / "inner", f"#!{py}\n")
    if isinstance(text, str):
        text = text.format(inner=tmp_path / "inner", py=py)
    s = script(tmp_path / "real" / "job", text)
    rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", str(s), "a"], env)
    assert rec and rec["path"] == "/bin/sh" and rec["argv"] == [str(s), str(s), "a"], (rc, err)
    assert why.format(inner=tmp_path / "inner") in err and "SIP protects" in err
    assert rec["errno"] == 0 and rec["image"] == "/bin/sh"  # and the stand-in kernel runs the file itself no more
    if why.startswith(("its interpreter", "its #! line names")):  # a shim: the same start, never 126
        shims = tmp_path / "shims"
        link(shims / "job", CMD.resolve())
        rec, rc, out, err = run(cmd_img, ["job", "a"], dict(env, PATH=f"{shims}:{tmp_path / 'real'}:{env['PATH']}"), exe=shims / "job")
        assert rec and rec["path"] == "/bin/sh" and rec["argv"][1:] == [str(s), "a"], (rc, err)


def test_path_unset_empty_and_looping_as_libc_searches(imgs, bins, tmp_path):
    """PATH unset: /usr/bin:/bin (paths.h:65); set but empty: the current directory; an entry
    whose candidate is a link loop is passed over (ELOOP goes on, exec.c:232-235)."""
    cmd_img, _ = imgs
    py, env = bins
    unset = {k: v for k, v in env.items() if k != "PATH"}
    rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", "true"], unset)
    assert rec and rec["path"] == "/usr/bin/true", (rc, err)
    cwd = os.getcwd()
    try:
        os.chdir(py.parent)
        rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", "python3"], dict(env, PATH=""))
    finally:
        os.chdir(cwd)
    assert rec and rec["path"] == "./python3", (rc, err)
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "python3").symlink_to(tmp_path / "loop" / "python3")
    rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", "python3"], dict(env, PATH=f"{tmp_path / 'loop'}:{env['PATH']}"))
    assert rec and rec["path"] == str(py), (rc, err)


def test_env_has_no_long_options(imgs, bins, tmp_path):
    """BSD env (shell_cmds env.c:88, getopt "-0C:iP:S:u:v"): --split-string is a usage error, so
    the script is started as written (its env runs, stock), never as python3 directly."""
    cmd_img, _ = imgs
    py, env = bins
    s = script(tmp_path / "job", "#!/usr/bin/env --split-string python3 -u\n")
    rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", str(s)], env)
    assert rec and rec["path"] == str(s) and rec["image"] == "/usr/bin/env", (rc, err)
    assert "env has no long options on macOS" in err
    s = script(tmp_path / "job2", "#!/usr/bin/env -S python3 -u\n")
    rec, rc, out, err = run(cmd_img, ["vzcaps", "run", "--", str(s)], env)
    assert rec and rec["argv"] == [str(py), "-u", str(s)], (rc, err)


def test_the_librarys_execvp_searches_as_libc_does(imgs, tmp_path):
    """The library's execvp replacement (src/shim/spawn.c) on Darwin: ELOOP goes on, PATH unset is
    /usr/bin:/bin, and a file the kernel runs no image for goes to /bin/sh with argv[0] kept."""
    _, lib_img = imgs
    macho(tmp_path / "bin" / "llama-server")
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "llama-server").symlink_to(tmp_path / "loop" / "llama-server")
    script(tmp_path / "bin" / "plain", "echo hi\n")
    lib = str(LIB.resolve())
    env = {"PATH": f"{tmp_path / 'loop'}:{tmp_path / 'bin'}", "HOME": str(tmp_path), "DYLD_INSERT_LIBRARIES": lib}
    for how in ("execvp", "execlp", "posix_spawnp"):
        p = Process(lib_img, env, lib_path=lib, host=HOST).start()
        r = p.run_child(how, "llama-server", ["-x"])
        assert r["ran"] and r["ran"]["path"] == str(tmp_path / "bin" / "llama-server"), (how, r["records"])
        p = Process(lib_img, env, lib_path=lib, host=HOST).start()
        r = p.run_child(how, "plain", ["-x"])
        assert r["ran"]["path"] == "/bin/sh" and r["ran"]["argv"] == ["plain", str(tmp_path / "bin" / "plain"), "-x"], how
    p = Process(lib_img, {k: v for k, v in env.items() if k != "PATH"}, lib_path=lib, host=HOST).start()
    r = p.run_child("execvp", "true", [])
    assert r["ran"]["path"] == "/usr/bin/true", r["records"]


def test_the_standin_kernel_reads_the_line_as_xnu(imgs, tmp_path):
    cmd_img, _ = imgs
    import xnu_exec
    assert xnu_exec.shell_line(b"#!/usr/bin/env python3 # c\n") == [b"/usr/bin/env", b"python3"]
    assert xnu_exec.shell_line(b"#! \t/bin/sh -x\t\n") == [b"/bin/sh", b"-x"]
    assert xnu_exec.shell_line(b"#!/bin/sh") is None and xnu_exec.shell_line(b"#!\n") is None
    assert xnu_exec.shell_line(b"#!/bin/sh \0x\n") == [b"/bin/sh", b""]
    assert xnu_exec.shell_line(b"#!/" + b"a" * 508 + b"\n") == [b"/" + b"a" * 508]
    assert xnu_exec.shell_line(b"#!/" + b"a" * 509 + b"\n") is None
    d = Command(cmd_img, ["x"], {}, host=HOST).d
    macho(tmp_path / "prog")
    script(tmp_path / "s", f"#!{tmp_path / 'prog'} -a\n")
    script(tmp_path / "gone", "#!/no/such\n")
    script(tmp_path / "crlf", f"#!{tmp_path / 'prog'}\r\n")
    assert d.activate(str(tmp_path / "s"), ["s", "x"]) == (0, str(tmp_path / "prog"), [str(tmp_path / "prog"), "-a", str(tmp_path / "s"), "x"])
    assert d.activate(str(tmp_path / "gone"), ["g"])[0] == 2 and d.activate(str(tmp_path / "crlf"), ["c"])[0] == 2  # ENOENT
    assert d.activate(str(tmp_path / "nope"), ["n"])[0] == 2 and d.activate(str(tmp_path), ["d"])[0] == 13  # EACCES
    script(tmp_path / "elf", b"\x7fELF\x02\x01\x01" + b"\0" * 60)
    script(tmp_path / "fat", b"\xbe\xba\xfe\xca" + b"\0" * 60)  # FAT_MAGIC in the host's order: no activator claims it
    script(tmp_path / "nested", f"#!{tmp_path / 's'}\n")  # its interpreter is a script: one level (kern_exec.c:636-641)
    assert [d.activate(str(tmp_path / n), [n])[0] for n in ("elf", "fat", "nested")] == [8, 8, 8]  # ENOEXEC
