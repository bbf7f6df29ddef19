"""One launch plan (issue 25 rule 5, rows 10-13): run, run --dry-run, launchd, check, inspect and
doctor take the same decision of what starts: env only as /usr/bin/env by path, the program
started for #!/usr/bin/env NAME, what dyld ignores (signature, __RESTRICT, FairPlay, setuid/setgid),
and a printed line a POSIX shell runs as it is, even for a program whose path holds '='."""
import json
import os
import plistlib
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "macho"))
import machogen as mg  # noqa: E402
from conftest import BUILD, LINUX_ONLY, clean_env, parse_probe  # noqa: E402

VZ = str(BUILD / "vzcaps")


def vz(*args, env=None, cwd=None):
    return subprocess.run([VZ, *args], env=env or clean_env(VZCAPS_HOST_CHIP="Apple M2"), capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def executable(path, data):
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
    path.chmod(0o755)
    return path


# ---- row 10: what dyld ignores besides the signature ----

@pytest.mark.parametrize("kind,needle", [
    ("restrict", "a __RESTRICT,__restrict section"),
    ("fairplay", "FairPlay-encrypted segments (LC_ENCRYPTION_INFO cryptid 1)"),
    ("setuid", "setuid/setgid bits"),
])
def test_run_check_and_inspect_say_what_dyld_ignores(tmp_path, kind, needle):
    data = mg.build(filetype=2, restrict=kind == "restrict", cryptid=1 if kind == "fairplay" else None, methnames=["supportsFamily:"])
    prog = executable(tmp_path / "llama-server", data)
    if kind == "setuid":
        prog.chmod(0o4755)
    p = vz("run", "--dry-run", "--", str(prog))
    assert p.returncode == 0
    assert f"vzcaps run: warning: {prog} will ignore the library: {needle}" in p.stderr
    if kind != "setuid":
        assert "vzcaps prepare cannot change that" in p.stderr  # a re-signed copy keeps both
    info = json.loads(vz("inspect", "--json", str(prog)).stdout)["files"][0]
    assert info["launch"]["injection"] == "ignored"
    assert info["launch"]["setuid_or_setgid"] == (kind == "setuid")
    if kind != "setuid":
        assert info["slices"][0]["injection"] == "ignored" and needle in info["slices"][0]["injection_reason"]
        assert info["slices"][0]["prepare_helps"] is False
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{tmp_path}:/usr/bin:/bin")
    check = json.loads(vz("check", "--exe", "llama-server", "--json", env=env).stdout)
    assert check["launch"]["injection"] == "ignored" and check["launch"]["program"] == str(prog)
    p = vz("check", "--strict", "--exe", "llama-server", env=env)
    assert p.returncode == 1 and "the injection is ignored where the library would load" in p.stderr


def test_an_unencrypted_encryption_command_is_honoured(tmp_path):
    prog = executable(tmp_path / "tool", mg.build(filetype=2, cryptid=0))
    info = json.loads(vz("inspect", "--json", str(prog)).stdout)["files"][0]
    assert info["slices"][0]["injection"] == "honoured" and info["launch"]["injection"] == "honoured"
    assert "will ignore" not in vz("run", "--dry-run", "--", str(prog)).stderr


# ---- row 11: env is /usr/bin/env by path ----

def test_a_users_env_in_a_shebang_is_a_program_not_env(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    shutil.copy("/bin/echo", tools / "env")  # a program (macOS runs one #! level: a script here would be run by /bin/sh)
    script = executable(tmp_path / "job", f"#!{tools}/env sh\necho never\n")
    p = vz("run", "--family", "1007", "--", str(script))
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"sh {script}\n"  # the user's env ran, with its arguments
    assert "through env" not in p.stderr and "SIP protects\n" not in p.stderr
    info = json.loads(vz("inspect", "--json", str(script)).stdout)["files"][0]
    assert info["script"]["env_program"] is None
    assert info["launch"]["starts"] == str(script)
    # the system's env, by path, is still replaced by the program it names
    executable(tmp_path / "python3", "#!/bin/sh\necho py\n")
    sysenv = executable(tmp_path / "job2", "#!/usr/bin/env python3\n")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{tmp_path}:/usr/bin:/bin")
    p = vz("run", "--dry-run", "--family", "1007", "--", str(sysenv), env=env)
    assert p.stdout.rstrip("\n").endswith(f" {tmp_path}/python3 {sysenv}") and "starts python3 through env" in p.stderr


# ---- row 12: the dry-run line runs in a POSIX shell as it is ----

@LINUX_ONLY  # the rig's build/probe shows the injection
@pytest.mark.parametrize("shell", ["sh", "bash", "dash"])
@pytest.mark.parametrize("how", ["dot-slash", "on-path", "plain"])
def test_dry_run_line_starts_a_program_whose_path_holds_an_equals_sign(tmp_path, shell, how):
    if not shutil.which(shell):
        pytest.fail(f"{shell} not found: run sh scripts/install-deps", pytrace=False)
    name = "plain-tool" if how == "plain" else "a=b"
    (tmp_path / name).symlink_to(BUILD / "probe")  # the stand-in Metal client: its answers show the injection
    word = f"./{name}" if how != "on-path" else name
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{tmp_path}:/usr/bin:/bin")
    dry = vz("run", "--dry-run", "--family", "1007", "--", word, env=env, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    replay = subprocess.run([shell, "-c", dry.stdout], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert replay.returncode == 0, (dry.stdout, replay.stderr)
    fams = [r for r in parse_probe(replay.stdout) if "families" in r][0]["families"]
    assert fams[1007] == 1 and fams[1008] == 0, dry.stdout  # unlocked up to Apple7, as asked
    real = subprocess.run([VZ, "run", "--family", "1007", "--", word], env=env, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert real.stdout == replay.stdout
    assert dry.stdout.startswith("env ") == (how == "plain")  # env(1) takes any word with '=' for an assignment


# ---- issue 32 row 10: a word starting with '=' is quoted (zsh expands =NAME to its path) ----

@pytest.mark.parametrize("shell", ["bash", "dash", "zsh"])
def test_dry_run_line_keeps_equals_leading_words_in_every_shell(tmp_path, shell):
    if not shutil.which(shell):
        pytest.fail(f"{shell} not found: run sh scripts/install-deps", pytrace=False)
    words = ["=ls", "=", "==", "=a=b", "a=b", "x=ls"]
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    dry = vz("run", "--dry-run", "--family", "1007", "--", "/bin/echo", *words, env=env)
    assert dry.returncode == 0, dry.stderr
    assert " '=ls' '=' '==' '=a=b' a=b x=ls\n" in dry.stdout, dry.stdout
    replay = subprocess.run([shell, "-c", dry.stdout], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == " ".join(words) + "\n", (shell, dry.stdout, replay.stdout)


# ---- row 13: launchd takes the same plan ----

def test_launchd_starts_the_program_an_env_shebang_names_with_the_note(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    py = executable(bindir / "python3", mg.build(filetype=2))
    script = executable(tmp_path / "serve.py", "#!/usr/bin/env python3\nprint('hi')\n")
    env = clean_env(HOME=str(tmp_path), PATH=f"{bindir}:/usr/bin:/bin")
    p = subprocess.run([VZ, "launchd", "--label", "x.y", "--family", "1008", "--", str(script), "--port", "8080"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert plistlib.loads(p.stdout.encode())["ProgramArguments"] == [str(py), str(script), "--port", "8080"]
    assert f"vzcaps launchd: note: {script} starts python3 through env; starting {py} directly" in p.stderr
    # a user's env stays the program the job starts (a program: macOS runs one #! level only)
    executable(bindir / "env", mg.build(filetype=2))
    own = executable(tmp_path / "own.sh", f"#!{bindir}/env sh\n")
    p = subprocess.run([VZ, "launchd", "--label", "x.z", "--family", "1008", "--", str(own)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert plistlib.loads(p.stdout.encode())["ProgramArguments"] == [str(own)]
    assert "through env" not in p.stderr


def test_check_and_doctor_show_the_same_plan_as_run(tmp_path):
    executable(tmp_path / "python3", "#!/bin/sh\n")
    script = executable(tmp_path / "tool", "#!/usr/bin/env python3\n")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{tmp_path}:/usr/bin:/bin")
    check = json.loads(vz("check", "--exe", "tool", "--json", env=env).stdout)["launch"]
    doctor = json.loads(vz("doctor", "--exe", "tool", "--json", env=env).stdout)["launch"]
    inspect = json.loads(vz("inspect", "--json", str(script), env=env).stdout)["files"][0]["launch"]
    assert check == doctor == inspect
    assert check["starts"] == f"{tmp_path}/python3" and check["script_line"] == "#!/usr/bin/env python3"
    run = vz("run", "--dry-run", "--family", "1007", "--", "tool", env=env)
    assert f" {tmp_path}/python3 {script}\n" in run.stdout
    assert all(f"vzcaps run: {'warning' if 'protects:' in n else 'note'}: {n}" in run.stderr for n in check["notes"])
    text = vz("check", "--exe", "tool", env=env).stdout
    assert f"launch         {script} (a script: #!/usr/bin/env python3)\n  starts       {tmp_path}/python3\n" in text


@LINUX_ONLY  # the rig's build/probe, and this platform's answer (no dyld to terminate a child)
def test_the_plan_carries_the_inheritance_decision_when_children_keep_the_library(tmp_path):
    (tmp_path / "probe").symlink_to(BUILD / "probe")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH=f"{tmp_path}:/usr/bin:/bin")
    assert json.loads(vz("check", "--exe", "probe", "--json", env=env).stdout)["launch"]["inheritance"] is None
    env["VZCAPS_INHERIT"] = "1"
    for cmd in (["check", "--exe", "probe", "--json"], ["doctor", "--exe", "probe", "--json"]):
        inh = json.loads(vz(*cmd, env=env).stdout)["launch"]["inheritance"]
        assert inh == {"decision": "allowed", "reason": None}  # not macOS: nothing for dyld to terminate
    assert "  inheritance  allowed\n" in vz("check", "--exe", "probe", env=env).stdout


@pytest.mark.parametrize("restrict,cryptid", [(True, None), (False, 1)])
def test_prepare_says_its_copy_would_still_ignore_the_library(tmp_path, restrict, cryptid):
    prog = executable(tmp_path / "srv", mg.build(filetype=2, restrict=restrict, cryptid=cryptid, flags=mg.CS_ADHOC | mg.CS_RUNTIME))
    p = vz("prepare", "--into", str(tmp_path / "out"), str(prog))
    assert p.returncode == 1  # without --yes: the plan only
    assert "srv: the copy will still ignore the library: " in p.stdout and "which re-signing does not change" in p.stdout
    plain = executable(tmp_path / "plain", mg.build(filetype=2, flags=mg.CS_ADHOC | mg.CS_RUNTIME))
    assert "will still ignore" not in vz("prepare", "--into", str(tmp_path / "out"), str(plain)).stdout


# ---- issue 31: one plan, printed the same by every command that shows it ----

@pytest.mark.parametrize("how", ["by-name", "by-path"])
@pytest.mark.parametrize("kind", ["program", "restricted"])
def test_every_command_prints_the_same_plan_for_the_same_command_line(tmp_path, how, kind):
    """run --dry-run, check, launchd (its printed plist), inspect and doctor, for a shimmed Mach-O
    program given by name or by the shim's path: the same program, the same start, the same
    verdict and the same notes."""
    real = tmp_path / "real"
    real.mkdir()
    executable(real / "tool", mg.build(filetype=2, restrict=kind == "restricted", methnames=["supportsFamily:"]))
    shims = tmp_path / "shims"
    assert vz("shims", "--dir", str(shims), "tool").returncode == 0
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", HOME=str(tmp_path), PATH=f"{shims}:{real}:/usr/bin:/bin")
    word = "tool" if how == "by-name" else str(shims / "tool")
    plans = {
        "check": json.loads(vz("check", "--exe", word, "--json", env=env).stdout)["launch"],
        "doctor": json.loads(vz("doctor", "--exe", word, "--json", env=env).stdout)["launch"],
    }
    first = plans["check"]
    assert first["program"] == first["starts"] == first["image"] == str(real / "tool")
    assert first["injection"] == ("ignored" if kind == "restricted" else "honoured")
    for name, plan in plans.items():
        assert plan == first, name
    # inspect takes a file (the shim itself is vzcaps, not a Mach-O): the real one, as check sees it
    direct = json.loads(vz("check", "--exe", str(real / "tool"), "--json", env=env).stdout)["launch"]
    inspected = json.loads(vz("inspect", "--json", str(real / "tool"), env=env).stdout)["files"][0]["launch"]
    assert inspected == direct and direct["injection"] == first["injection"]
    dry = vz("run", "--dry-run", "--family", "1008", "--", word, "--port", "1", env=env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.rstrip("\n").endswith(f" {real}/tool --port 1")
    said = [l.split(": ", 2)[2] for l in dry.stderr.splitlines() if l.startswith(("vzcaps run: note: ", "vzcaps run: warning: "))]
    assert said == first["notes"], dry.stderr
    agent = vz("launchd", "--label", "x.y", "--family", "1008", "--", word, "--port", "1", env=env)
    assert agent.returncode == 0, agent.stderr
    assert plistlib.loads(agent.stdout.encode())["ProgramArguments"] == [first["starts"], "--port", "1"]


def test_a_program_sip_protects_is_started_but_loses_the_library(tmp_path):
    """A program under /usr/bin or /bin is Apple's on a Mac: SIP removes DYLD_* there (Apple's
    System Integrity Protection Guide), so the plan says 'removed' and the gate fails it."""
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", PATH="/usr/bin:/bin")
    p = vz("run", "--dry-run", "--family", "1007", "--", "/usr/bin/true", env=env)
    assert p.returncode == 0 and p.stdout.rstrip("\n").endswith(" /usr/bin/true")
    assert p.stderr == "vzcaps run: warning: /usr/bin/true: a program SIP protects: macOS removes DYLD_INSERT_LIBRARIES there, " \
                       "so it and everything it starts run stock\n"
    shims = tmp_path / "shims"
    assert vz("shims", "--dir", str(shims), "true", env=env).returncode == 0
    p = vz("check", "--strict", "--exe", "true", env=dict(env, PATH=f"{shims}:/usr/bin:/bin", VZCAPS_APPLE_FAMILY_MAX="1007"))
    assert p.returncode == 1 and "the injection is removed where the library would load (" in p.stderr, p.stderr
