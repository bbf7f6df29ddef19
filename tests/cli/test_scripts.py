"""Scripts as run and inspect see them: a #!/usr/bin/env NAME script is started as NAME
directly (macOS removes the injection at /usr/bin/env, which SIP protects); an interpreter in a
protected location gets one line saying so and how to avoid it; hostile #! lines are named."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, STOCK_FAMILIES, built, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

sys.path.insert(0, str(ROOT / "tests" / "macho"))
import machogen as mg  # noqa: E402

VZ = str(BUILD / "vzcaps")
DIST = ROOT / "dist"
M2 = {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}


def vz(*args, env=None, cwd=None):
    return subprocess.run([VZ, *args], env=env or clean_env(), capture_output=True, text=True, timeout=60, cwd=cwd)


def script(path, text, mode=0o755):
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    path.chmod(mode)
    return path


@pytest.fixture
def fakepy(tmp_path):
    """A bin directory with `fakepy`, the rig's probe under another name (a Metal program that
    accepts the script path as its last argument), and the environment that puts it on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(BUILD / "probe", bin_dir / "fakepy")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir / "fakepy", env


def lib():
    return os.path.realpath(BUILD / "libvzcaps.so")


def test_dry_run_starts_env_name_directly(tmp_path, fakepy):
    prog, env = fakepy
    script(tmp_path / "s.py", "#!/usr/bin/env fakepy --child\nprint(1)\n")
    p = vz("run", "--dry-run", "--", "./s.py", "a b", env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    # the script is configured under its own name, handed to the library (docs/config.md)
    assert p.stdout == f"env VZCAPS_APPLE_FAMILY_MAX=auto VZCAPS_PROGRAM=0000000000:s.py LD_PRELOAD={lib()} {prog} --child ./s.py 'a b'\n"
    assert f"./s.py starts fakepy through env; starting {prog} directly" in p.stderr
    assert "SIP" in p.stderr


def test_env_script_runs_injected(tmp_path, fakepy):
    """The whole way: the script's program gets the library (the configured and hooked lines,
    the unlocked answers), and its own children start stock."""
    _, env = fakepy
    script(tmp_path / "s.py", "#!/usr/bin/env -S fakepy --child\n")
    p = vz("run", "--", "./s.py", env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "script ./s.py" in p.stdout
    runs = parse_probe(p.stdout)
    assert runs[0]["families"] == M2 and runs[1]["families"] == STOCK_FAMILIES
    lines = [l for l in p.stderr.splitlines() if l.startswith("vzcaps:")]
    # named by the script's own name, as its config section and stats record are (docs/config.md)
    assert lines == [l for l in lines if l.startswith("vzcaps: hooked AppleParavirtDevice for s.py via initGPUFamilySupport: ")]
    assert len(lines) == 1


@pytest.mark.parametrize("line,needle", [
    ("#!/bin/sh\n", "its #! line starts /bin/sh, a program SIP protects"),
    ("#!/usr/bin/env -i fakepy\n", "env is given the option -i"),
    ("#!/usr/bin/env PYTHONPATH=/x fakepy\n", "env sets a variable (PYTHONPATH=/x)"),
    ("#!/usr/bin/env -S fakepy '-c'\n", "quotes"),
])
def test_protected_interpreter_gets_one_line(tmp_path, fakepy, line, needle):
    _, env = fakepy
    script(tmp_path / "w", line + "true\n")
    p = vz("run", "--dry-run", "--", "./w", env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    warn = [l for l in p.stderr.splitlines() if "SIP protects" in l]
    assert len(warn) == 1 and needle in warn[0]
    assert "macOS removes DYLD_INSERT_LIBRARIES there" in warn[0]
    assert "vzcaps run -- INTERPRETER SCRIPT" in warn[0] and "/usr/libexec" in warn[0]
    assert p.stdout.rstrip("\n").endswith(" ./w")  # started as it is: not rewritten


def test_env_name_found_in_a_protected_location(tmp_path):
    script(tmp_path / "s", "#!/usr/bin/env sh\n")
    p = vz("run", "--dry-run", "--", "./s", env=clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH="/usr/bin:/bin"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    warn = [l for l in p.stderr.splitlines() if "warning" in l]
    assert len(warn) == 1 and "vzcaps run starts /usr/bin/sh (found on PATH for its #!.../env line) directly, but that is " \
                               "a program SIP protects" in warn[0]
    assert p.stdout.endswith(" /usr/bin/sh ./s\n")


def test_unprotected_interpreter_says_nothing(tmp_path, fakepy):
    prog, env = fakepy
    script(tmp_path / "s", f"#!{prog}\n")
    p = vz("run", "--dry-run", "--", "./s", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.rstrip("\n").endswith(" ./s")


def test_file_without_shebang_is_started_with_bin_sh(tmp_path, fakepy):
    _, env = fakepy
    script(tmp_path / "plain", "echo hi\n")
    p = vz("run", "--", "./plain", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == "hi\n"
    assert "the kernel runs no program for it (no #! line and no executable format the kernel runs), so execvp starts it " \
           "with /bin/sh, which is a program SIP protects" in p.stderr


@pytest.mark.parametrize("text,rc,needle", [
    (b"#!/usr/bin/env no-such-program-xyz\n", 127, "its #! line starts no-such-program-xyz through env, and "
                                                  "no-such-program-xyz is not found on PATH"),
    (b"#!/no/such/interpreter\n", 127, "its interpreter /no/such/interpreter: not found"),
    # a carriage return or a control byte is part of the interpreter's name (kern_exec.c:681-700)
    (b"#!/bin/sh\r\necho\r\n", 127, "its interpreter /bin/sh\\x0d: not found (its name ends in a carriage return"),
    (b"#!/bin/s\x1bh\n", 127, "its interpreter /bin/s\\x1bh: not found"),
    (b"#!/usr/bin/env\n", 126, "env is given no program"),
])
def test_hostile_shebang_lines(tmp_path, fakepy, text, rc, needle):
    _, env = fakepy
    script(tmp_path / "bad", text)
    p = vz("run", "--", "./bad", env=env, cwd=tmp_path)
    assert p.returncode == rc, p.stderr
    assert p.stdout == "" and len(p.stderr.splitlines()) == 1
    assert p.stderr.startswith("vzcaps run: cannot run ./bad: ") and needle in p.stderr
    assert "\x1b" not in p.stderr and "\r" not in p.stderr


@pytest.mark.parametrize("text,why", [
    (b"#!\necho ran\n", "its #! line names no interpreter"),
    (b"#! # comment\necho ran\n", "its #! line names no interpreter"),
    (b"#!/" + b"a" * 600 + b"\necho ran\n", "its #! line does not end (with a newline or '#') within the 512 bytes macOS reads"),
    (b"#!/bin/sh", "its #! line does not end"),  # the end of the file is no end of the line: the page is zero-filled
])
def test_a_line_the_kernel_refuses_runs_with_bin_sh_as_execvp_runs_it(tmp_path, fakepy, text, why):
    """ENOEXEC from the kernel: Libc's execvp runs the file with /bin/sh (exec.c:236-263), with the
    caller's argv[0]; run and a shim start it so, stock under SIP, never exit 126 (issue 47 item 2)."""
    _, env = fakepy
    script(tmp_path / "bad", text)
    p = vz("run", "--dry-run", "--family", "1007", "--", "./bad", "x", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.endswith(" /bin/sh ./bad x\n"), p.stdout + p.stderr
    assert f"the kernel runs no program for it ({why}" in p.stderr and "SIP protects" in p.stderr
    p = vz("run", "--family", "1007", "--", "./bad", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == ("ran\n" if b"echo" in text else ""), p.stderr
    shims = tmp_path / "shims"
    assert vz("shims", "--dir", str(shims), "bad", env=env).returncode == 0
    p = vz("check", "--strict", "--exe", "bad", env=dict(env, PATH=f"{shims}:{tmp_path}:{env['PATH']}", VZCAPS_APPLE_FAMILY_MAX="1007"))
    assert p.returncode == 1 and "would run stock: the injection is removed where the library would load (/bin/sh)" in p.stderr
    p = subprocess.run(["sh", "-c", "bad"], env=dict(env, PATH=f"{shims}:{tmp_path}:{env['PATH']}"), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout == ("ran\n" if b"echo" in text else ""), p.stderr


def test_env_without_newline_and_fifo_and_directory(tmp_path, fakepy):
    prog, env = fakepy
    script(tmp_path / "nonl", "#!/usr/bin/env fakepy")  # no end of the line within the zero-filled page: /bin/sh
    p = vz("run", "--dry-run", "--", "./nonl", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.endswith(" /bin/sh ./nonl\n")
    # the interpreter named by the line is a FIFO or a directory: named, never opened blocking
    os.mkfifo(tmp_path / "fifo")
    script(tmp_path / "f", f"#!{tmp_path / 'fifo'}\n")
    p = vz("run", "--", "./f", env=env, cwd=tmp_path)
    assert p.returncode == 126 and "not a regular file" in p.stderr
    script(tmp_path / "d", f"#!{tmp_path}\n")
    p = vz("run", "--", "./d", env=env, cwd=tmp_path)
    assert p.returncode == 126 and "not a regular file" in p.stderr


def test_interpreter_that_is_a_script(tmp_path, fakepy):
    """A script whose interpreter is a script: macOS runs one #! level (kern_exec.c:636-641), so
    the kernel answers ENOEXEC and execvp runs the script with /bin/sh, which SIP protects (a
    loop too); through env, NAME is started directly and its own one level runs."""
    prog, env = fakepy
    script(tmp_path / "inner", f"#!{prog}\n")
    script(tmp_path / "outer", f"#!{tmp_path / 'inner'} -x\necho by sh\n")
    p = vz("run", "--dry-run", "--", "./outer", "a", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.endswith(" /bin/sh ./outer a\n"), p.stdout
    assert f"its interpreter {tmp_path / 'inner'}: not a program the kernel runs (a script itself), and macOS follows one #! level " \
           "only), so execvp starts it with /bin/sh, which is a program SIP protects" in p.stderr
    p = vz("run", "--family", "1007", "--", "./outer", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == "by sh\n", p.stderr  # the script's text, run by sh: no program of its line
    script(tmp_path / "loop", f"#!{tmp_path / 'loop'}\n")
    p = vz("run", "--family", "1007", "--", "./loop", env=env, cwd=tmp_path)
    assert p.returncode == 0 and "/bin/sh" in p.stderr
    # through env to a NAME that is itself a script
    script(tmp_path / "bin" / "wrapped", f"#!{prog}\n")
    script(tmp_path / "viaenv", "#!/usr/bin/env wrapped\n")
    p = vz("run", "--dry-run", "--", "./viaenv", env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.endswith(f" {tmp_path / 'bin' / 'wrapped'} ./viaenv\n")


@built(DIST / "libvzcaps.dylib", how="make dist")
def test_arm64e_interpreter_is_refused_like_an_arm64e_target(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir / "py", mg.build(filetype=2, cpusubtype=0x80000002, methnames=["supportsFamily:"]))
    script(tmp_path / "s.py", "#!/usr/bin/env py\n")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{bin_dir}:{os.environ['PATH']}")
    p = vz("run", "--library", str(DIST / "libvzcaps.dylib"), "--dry-run", "--", "./s.py", env=env, cwd=tmp_path)
    assert p.returncode == 125 and "runs as arm64e" in p.stderr and p.stdout == ""


# ---- inspect ----

def test_inspect_names_sip_for_a_bin_sh_script(tmp_path):
    script(tmp_path / "w.sh", "#!/bin/sh\nexec ./real \"$@\"\n")
    p = vz("inspect", str(tmp_path / "w.sh"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == f"{tmp_path / 'w.sh'}: script, #!/bin/sh"
    assert "injection   removed: its #! line starts /bin/sh, a program SIP protects" in p.stdout
    assert "Mach-O" not in p.stdout + p.stderr


def test_inspect_json_env_script(tmp_path, fakepy):
    prog, env = fakepy
    script(tmp_path / "s.py", "#!/usr/bin/env fakepy -u\n")
    p = vz("inspect", "--json", str(tmp_path / "s.py"), env=env)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)["files"][0]["script"]
    assert s == {"line": "#!/usr/bin/env fakepy -u", "interpreter": "/usr/bin/env", "env_program": "fakepy",
                 "started": str(prog), "sip_protected": False, "injection": "honoured", "reason": s["reason"]}
    assert "vzcaps run starts fakepy" in s["reason"] and "SIP" in s["reason"]


def test_inspect_a_script_whose_interpreter_cannot_start(tmp_path):
    script(tmp_path / "bad", b"#!/bin/sh\r\n")
    p = vz("inspect", str(tmp_path / "bad"))
    assert p.returncode == 0 and "injection   unknown: cannot tell: its interpreter /bin/sh\\x0d: not found (its name ends in a " \
        "carriage return" in p.stdout and "Mach-O" not in p.stdout + p.stderr


# ---- arm64e ----

def test_inspect_names_an_arm64e_client(tmp_path):
    clt = tmp_path / "Library" / "Developer" / "CommandLineTools" / "usr" / "bin"
    clt.mkdir(parents=True)
    script(clt / "python3", mg.build(cpusubtype=0x80000002))
    p = vz("inspect", str(clt / "python3"))
    assert p.returncode == 0, p.stderr
    line = [l for l in p.stdout.splitlines() if l.strip().startswith("arm64e ")]
    assert len(line) == 1 and "Apple's Command Line Tools Python runs as arm64e" in line[0]
    assert "dyld terminates it" in line[0] and "--inherit" in line[0]
    p = vz("inspect", "--json", str(clt / "python3"))
    assert "Command Line Tools Python" in json.loads(p.stdout)["files"][0]["slices"][0]["arm64e"]
    script(tmp_path / "arm64", mg.build())
    p = vz("inspect", "--json", str(tmp_path / "arm64"))
    assert json.loads(p.stdout)["files"][0]["slices"][0]["arm64e"] is None


def test_doctor_names_an_arm64e_python_on_path(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir / "python3", mg.fat(mg.build(cputype=mg.CPU_X86_64, cpusubtype=3), mg.build(cpusubtype=0x80000002)))
    env = clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}")
    p = vz("doctor", env=env)
    assert p.returncode == 0
    assert f"arm64e client python3 on PATH, {bin_dir / 'python3'}" in p.stdout and "cannot be loaded there" in p.stdout
    d = json.loads(vz("doctor", "--json", env=env).stdout)
    assert d["arm64e_clients"] == [f"python3 on PATH, {bin_dir / 'python3'} (an arm64e program)"]


def test_inherit_is_not_refused_off_macos():
    p = vz("run", "--dry-run", "--inherit", "--", "x", env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0 and "VZCAPS_INHERIT=1" in p.stdout and "SIP" not in p.stderr
    p = vz("run", "--dry-run", "--inherit-anyway", "--", "x", env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0


# ---- doctor records the library's lines ----

def test_doctor_records_the_one_line(tmp_path):
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    p = vz("doctor", "--", str(BUILD / "probe"), env=env)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    i = out.index(next(l for l in out if l.startswith("library run")))
    assert out[i].endswith(f"-- {BUILD / 'probe'} (exit 0)")
    assert out[i + 1].startswith("  vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport: Apple families up to 1008")
    assert not out[i + 2].startswith("  vzcaps:")
    d = json.loads(vz("doctor", "--json", "--", str(BUILD / "probe"), env=env).stdout)["library_run"]
    assert d["ran"] and d["status"] == "exit 0"
    assert d["configured_line"].startswith("vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport: ")
    assert d["hooked_line"] == d["configured_line"]
    # VZCAPS_LOG=verbose: the start-up line, then the hooked line, as before
    d = json.loads(vz("doctor", "--json", "--", str(BUILD / "probe"), env=dict(env, VZCAPS_LOG="verbose")).stdout)["library_run"]
    assert d["configured_line"].startswith("vzcaps: configured for probe: Apple families up to 1008")
    assert d["hooked_line"] == "vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport"


def test_doctor_without_a_device_says_nothing_was_hooked():
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    d = json.loads(vz("doctor", "--json", "--", str(BUILD / "probe"), "--no-device", env=env).stdout)
    assert d["library_run"]["configured_line"] is None and d["library_run"]["hooked_line"] is None
    assert any("the program created no Metal device" in x for x in d["pitfalls"])
    d = json.loads(vz("doctor", "--json", "--", str(BUILD / "probe"), "--no-device", env=dict(env, VZCAPS_LOG="verbose")).stdout)
    assert d["library_run"]["configured_line"] and d["library_run"]["hooked_line"] is None
    assert any("hooked no device class" in x for x in d["pitfalls"])


def test_doctor_run_that_cannot_start(tmp_path):
    d = json.loads(vz("doctor", "--json", "--", str(tmp_path / "missing")).stdout)
    assert d["library_run"]["status"] == "exit 127"
    assert any("did not start the program (exit 127" in x for x in d["pitfalls"])
    assert vz("doctor", "--").returncode == 2


def test_doctor_keeps_a_hostile_program_line_escaped(tmp_path):
    # a program that writes its own "vzcaps:" lines with terminal escapes and a huge line
    script(tmp_path / "noisy", "#!/bin/sh\nprintf 'vzcaps: \\033[2Jforged\\n' >&2\n"
                               "head -c 200000 /dev/zero | tr '\\0' x >&2\nprintf '\\n' >&2\n")
    p = vz("doctor", "--", str(tmp_path / "noisy"), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0 and "\x1b" not in p.stdout and "\\x1b[2Jforged" in p.stdout


def test_doctor_finds_the_hooked_line_after_many_others(tmp_path):
    """regression: doctor kept the first 16 "vzcaps" lines of the run and dropped the rest
    unsaid, so a hooked line after them was taken as never written."""
    script(tmp_path / "chatty", "#!/bin/sh\nfor i in $(seq 30); do echo \"vzcaps: note $i\" >&2; done\n"
                                "echo 'vzcaps: hooked AppleParavirtDevice for chatty via initGPUFamilySupport' >&2\n")
    d = json.loads(vz("doctor", "--json", "--", str(tmp_path / "chatty"), env=clean_env(VZCAPS_HOST_CHIP="Apple M2")).stdout)
    lr = d["library_run"]
    assert lr["hooked_line"] == "vzcaps: hooked AppleParavirtDevice for chatty via initGPUFamilySupport", lr
    assert len(lr["lines"]) == 16 and lr["lines"][-1] == lr["hooked_line"]
    # every line counted: those shown (the hooked one in the last place), and those not
    assert "vzcaps: note 30" not in lr["lines"] and lr["lines_not_shown"] == 31 + sum(
        not l.startswith("vzcaps: note ") for l in lr["lines"][:-1]) - 16
    p = vz("doctor", "--", str(tmp_path / "chatty"), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert f"  ({lr['lines_not_shown']} more lines from vzcaps, not shown)" in p.stdout.splitlines()


def test_doctor_without_a_command_on_linux():
    d = json.loads(vz("doctor", "--json").stdout)
    assert d["library_run"]["ran"] is False and "no Metal device on Linux" in d["library_run"]["skipped"]
    assert d["sip"] == "not macOS" and d["quarantined"] == []


def test_execute_only_target_and_interpreter_still_run():
    """A program with mode 0111 cannot be read but can be run: run does not refuse it, as a
    target or as a script's interpreter (regression: "cannot run: Permission denied")."""
    import shutil
    import tempfile
    d = pathlib.Path(tempfile.mkdtemp(prefix="vzcaps-xo-"))
    try:
        d.chmod(0o755)
        for f in (VZ, BUILD / "libvzcaps.so"):
            shutil.copy(f, d)
        shutil.copy(shutil.which("true"), d / "xo")
        (d / "xo").chmod(0o111)
        script(d / "s", f"#!{d / 'xo'}\n")
        # as another user when this is root (root reads everything)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        env = {"PATH": "/usr/bin:/bin", "HOME": str(d), "VZCAPS_HOST_CHIP": "Apple M2"}
        for target in (d / "xo", d / "s"):
            p = subprocess.run([*prefix, str(d / "vzcaps"), "run", "--", str(target)], env=env, capture_output=True,
                               text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            assert "Permission denied" not in p.stderr
    finally:
        shutil.rmtree(d)


def demo(b):
    return subprocess.run(["sh", "scripts/demo"], cwd=ROOT, env=clean_env(B=str(b)), capture_output=True, text=True,
                          timeout=120)


def test_the_demos_command_line_runs_when_pasted():
    # issue 39 row 20: make demo printed a `$ ...` line that, pasted from a path with a space, was refused
    p = demo("build")
    assert p.returncode == 0, p.stderr
    shown = [x for x in p.stdout.splitlines() if x.startswith("$ ")]
    if " " in str(ROOT.resolve()) or ":" in str(ROOT.resolve()):  # check-fresh's checkout: no line to paste
        assert not shown and "LD_PRELOAD cannot carry" in p.stdout, p.stdout
        return
    assert len(shown) == 1
    pasted = subprocess.run(["sh", "-c", shown[0][2:]], cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                            timeout=60)
    assert pasted.returncode == 0 and "hooked AppleParavirtDevice" in pasted.stderr, pasted.stderr


def test_the_demo_from_a_spaced_path_shows_no_line_that_would_be_refused(tmp_path):
    b = tmp_path / "a b" / "build"
    b.parent.mkdir()
    subprocess.run(["cp", "-pR", str(BUILD), str(b)], check=True)
    p = demo(b)
    assert p.returncode == 0, p.stderr
    assert not [x for x in p.stdout.splitlines() if x.startswith("$ ")], p.stdout
    assert "LD_PRELOAD cannot carry" in p.stdout and "supportsFamily(Apple7 1007)" in p.stdout


def test_the_library_builds_without_the_lto_wrappers_warning(tmp_path):
    """issue 45: make demo showed `lto-wrapper: warning: using serial compilation of 2 LTRANS
    jobs` between its lines (the library's -flto without a job count). The Makefile's own command
    for the library, into a file of the test's: nothing on standard error."""
    p = subprocess.run(["make", "-n", "-B", "--no-print-directory", "build/libvzcaps.so"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    line = next(x for x in p.stdout.splitlines() if x.endswith("-lpthread") and " -o build/libvzcaps.so " in x)
    out = tmp_path / "libvzcaps.so"
    b = subprocess.run(["sh", "-c", line.replace(" -o build/libvzcaps.so ", f" -o {out} ")], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert b.returncode == 0 and out.is_file(), b.stderr
    assert b.stderr == "", b.stderr
