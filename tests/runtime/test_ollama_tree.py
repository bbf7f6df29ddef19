"""Ollama as it is built today, on the GNU-runtime rig: the server starts llama.cpp's
`llama-server --list-devices` to read GPU memory (again with GGML_METAL_TENSOR_DISABLE=1 after a
Metal failure), then `llama-server` as the runner. Both children must get the injection when
configured (a config section with inherit, or vzcaps run --inherit), and neither without.
With inherit = matching (issue 26 item 4) only the children a section matches keep it."""
import os
import subprocess
import sys

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, framework_python, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

M2 = {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}
SECTION = "[ollama]\nmatch = ollama llama-server\napple_family_max = auto\ninherit = yes\n"


def server_tree(tmp_path, retry=False):
    """ollama serve: a discovery child (optionally through env, adding the retry variable),
    then a runner child; both are llama-server."""
    for name in ("ollama", "llama-server"):
        if not (tmp_path / name).exists():
            os.symlink(BUILD / "probe", tmp_path / name)
    server = str(tmp_path / "llama-server")
    discovery = ["/usr/bin/env", "GGML_METAL_TENSOR_DISABLE=1", server] if retry else [server]
    return [str(tmp_path / "ollama"), "--each", *discovery, "--list-devices", "--and", server, "--model", "m.gguf"]


def roles(text):
    """[(role, families)] per process, the server first."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("class "):
            cur = ["server"]
            out.append(cur)
        elif line.startswith("role "):
            cur[0] = line.split()[1]
    return [(r[0], p["families"]) for r, p in zip(out, parse_probe(text))]


def run(tmp_path, *vzcaps_args, retry=False, conf=None):
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    if conf:
        (tmp_path / "c.conf").write_text(conf)
        env["VZCAPS_CONFIG"] = str(tmp_path / "c.conf")
    p = subprocess.run([str(BUILD / "vzcaps"), "run", *vzcaps_args, "--", *server_tree(tmp_path, retry)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return roles(p.stdout), [line for line in p.stderr.splitlines() if line.startswith("vzcaps:")]


def test_the_section_reaches_the_discovery_child_and_the_runner(tmp_path):
    got, log = run(tmp_path, conf=SECTION)
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]
    # each process says, in its one line, that it really hooked its device
    assert [line.split(" via ")[0] for line in log] == [
        "vzcaps: hooked AppleParavirtDevice for ollama", "vzcaps: hooked AppleParavirtDevice for llama-server",
        "vzcaps: hooked AppleParavirtDevice for llama-server"]


def test_inherit_reaches_the_discovery_child_and_the_runner(tmp_path):
    got, _ = run(tmp_path, "--inherit")
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]


def test_the_discovery_retry_with_the_tensor_variable_keeps_the_injection(tmp_path):
    # Ollama retries discovery with GGML_METAL_TENSOR_DISABLE=1: a variable vzcaps neither reads
    # nor sets; the child started through another program still gets the profile
    got, log = run(tmp_path, conf=SECTION, retry=True)
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]
    assert " for env " not in " ".join(log)  # env is not in the section: it passes the injection on
    got, _ = run(tmp_path, "--inherit", retry=True)
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]


def test_without_inherit_both_children_start_stock(tmp_path):
    got, log = run(tmp_path)
    assert got == [("server", M2), ("list-devices", STOCK_FAMILIES), ("runner", STOCK_FAMILIES)]
    assert len(log) == 1 and log[0].startswith("vzcaps: hooked AppleParavirtDevice for ollama via ")


# ---- inherit = matching (issue 26 item 4): only children a section matches keep the library ----

MATCHING = ("[ollama]\nmatch = ollama llama-server\napple_family_max = auto\ninherit = matching\n"
            "[python]\nmatch = python3*\napple_family_max = auto\ninherit = matching\n"
            "[probe]\nmatch = probe\napple_family_max = auto\n")


def env_lines(text):
    """The lines /usr/bin/env printed: NAME=value entries (the probe's own lines have no '=' first word)."""
    return [l for l in text.splitlines() if "=" in l.split(" ")[0]]


def test_matching_a_python_launchers_probe_child_is_unlocked_and_env_gets_nothing(tmp_path):
    py = framework_python(tmp_path)
    os.symlink(BUILD / "probe", tmp_path / "probe")
    (tmp_path / "c.conf").write_text(MATCHING)
    env = clean_env(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    cmd = [str(py), "--each", str(tmp_path / "probe"), "--and", "/usr/bin/env", "--and", str(tmp_path / "probe"), "--child"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    runs = parse_probe(p.stdout)
    # the interpreter, its probe child, the probe started after env, and that probe's own child
    assert [r["families"] for r in runs] == [M2, M2, M2, STOCK_FAMILIES]
    child_env = env_lines(p.stdout)
    assert child_env and not any(l.startswith(("LD_PRELOAD=", "VZCAPS_", "TART_METAL_", "LUME_METAL_")) for l in child_env)
    assert [l.split(" via ")[0] for l in p.stderr.splitlines()] == [
        "vzcaps: hooked AppleParavirtDevice for python3.12", "vzcaps: hooked AppleParavirtDevice for probe",
        "vzcaps: hooked AppleParavirtDevice for probe"]


def test_matching_through_vzcaps_run_reaches_the_runner_and_not_the_rest(tmp_path):
    got, log = run(tmp_path, "--inherit-matching", conf=SECTION.replace("inherit = yes\n", ""))
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]
    # env is no section's: with matching it gets nothing, so neither does what it starts
    got, log = run(tmp_path, "--inherit-matching", retry=True, conf=SECTION.replace("inherit = yes\n", ""))
    assert got == [("server", M2), ("list-devices", STOCK_FAMILIES), ("runner", M2)]


def test_matching_children_through_every_call_that_starts_a_program(tmp_path):
    # Python starts children through vfork and execve (subprocess), posix_spawn, posix_spawnp and
    # execve again (os.execvp searches PATH itself); the probe stand-in through execv
    os.symlink(BUILD / "probe", tmp_path / "probe")
    (tmp_path / "c.conf").write_text(MATCHING)
    script = tmp_path / "starts.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "p = sys.argv[1]\n"
        "print(subprocess.run([p], capture_output=True, text=True).stdout.count('family 1008 1'))\n"
        "print(subprocess.run(['/usr/bin/env'], capture_output=True, text=True).stdout.count('LD_PRELOAD'))\n"
        "sys.stdout.flush()\n"  # before the children write to the same pipe (no PYTHONUNBUFFERED on a fresh machine)
        "pid = os.posix_spawn(p, [p], dict(os.environ)); os.waitpid(pid, 0)\n"
        "pid = os.posix_spawnp('probe', ['probe'], dict(os.environ)); os.waitpid(pid, 0)\n"
        "sys.stdout.flush()\n"
        "os.execvp('env', ['env'])\n")
    env = clean_env(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                    VZCAPS_INHERIT="matching", LD_PRELOAD=str(BUILD / "libvzcaps.so"), PATH=f"{tmp_path}:/usr/bin:/bin")
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "probe")], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[:2] == ["1", "0"]  # subprocess: the probe unlocked, env without the preload variable
    assert p.stdout.count("family 1008 1") == 2  # posix_spawn and posix_spawnp: both unlocked
    assert not any(l.startswith(("LD_PRELOAD=", "VZCAPS_")) for l in env_lines(p.stdout))  # os.execvp('env')


def test_matching_hostile_children(tmp_path):
    # a matching name that is a script (its interpreter runs: slices not known) starts stock;
    # a child with 30,000 variables keeps the library (the environment is built in a mapping)
    os.symlink(BUILD / "probe", tmp_path / "probe")
    (tmp_path / "probe-script").write_text("#!/bin/sh\nexec /usr/bin/env\n")
    (tmp_path / "probe-script").chmod(0o755)
    (tmp_path / "c.conf").write_text(MATCHING.replace("match = probe\n", "match = probe probe-script\n"))
    script = tmp_path / "starts.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "d = sys.argv[1]\n"
        "out = subprocess.run([d + '/probe-script'], capture_output=True, text=True).stdout\n"
        "print('script-preload', 'LD_PRELOAD=' in out)\n"
        "big = dict(os.environ, **{'X%d' % i: 'y' * 20 for i in range(30000)})\n"
        "out = subprocess.run([d + '/probe'], env=big, capture_output=True, text=True).stdout\n"
        "print('big-unlocked', 'family 1008 1' in out)\n")
    env = clean_env(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                    VZCAPS_INHERIT="matching", LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    p = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["script-preload False", "big-unlocked True"]


def test_check_shows_the_decision_for_a_child(tmp_path):
    os.symlink(BUILD / "probe", tmp_path / "probe")
    (tmp_path / "c.conf").write_text(MATCHING)
    env = clean_env(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", PATH=f"{tmp_path}:/usr/bin:/bin",
                    VZCAPS_INHERIT="matching")

    def line(exe):
        p = subprocess.run([str(BUILD / "vzcaps"), "check", "--exe", exe], env=env, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        out = p.stdout.splitlines()
        assert any(l.split() == ["inherit", "matching", "(only", "children", "a", "config", "section", "matches,", "that", "can",
                                 "load", "the", "library,", "keep", "it)"] for l in out), p.stdout
        return next(l for l in out if l.startswith("  as a child (matching)")).split(None, 4)[4]
    assert line("ollama").startswith("starts stock: ollama: its slices are not known")  # not on PATH here
    assert line("probe") == "keeps the library: a config section matches probe, and it has a slice the library loads"
    env["VZCAPS_PROFILE"] = "python"
    assert line("env") == "starts stock: no config section matches env"


def test_run_inherit_matching_is_a_variable_and_excludes_inherit():
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    p = subprocess.run([str(BUILD / "vzcaps"), "run", "--dry-run", "--inherit-matching", "--", "/bin/true"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and " VZCAPS_INHERIT=matching " in p.stdout, p.stderr
    p = subprocess.run([str(BUILD / "vzcaps"), "run", "--inherit", "--inherit-matching", "--", "/bin/true"], env=env,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "--inherit and --inherit-matching exclude each other" in p.stderr
    # a bad value is refused with its one line, at the first device
    p = subprocess.run([str(BUILD / "probe")], env=clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), VZCAPS_HOST_CHIP="Apple M2",
                                                           VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_INHERIT="some"),
                       capture_output=True, text=True, timeout=30)
    assert p.stderr == ('vzcaps: left stock for probe: VZCAPS_INHERIT: "some" is not 1 or 0 (yes/no, true/false) or matching; '
                        'fix or unset it\n')


EXECS = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None)
def run(fn, *args):
    pid = os.fork()
    if pid == 0:
        f = getattr(libc, fn)
        f(*[ctypes.c_char_p(a) if isinstance(a, bytes) or a is None else a for a in args])
        os._exit(99)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)
many = [b"x"] * 300
env = (ctypes.c_char_p * 2)(b"ONLY=1", None)
print(run("execl", b"/bin/echo", b"echo", *many, None))
print(run("execlp", b"echo", b"echo", *many, None))
print(run("execle", b"/usr/bin/env", b"env", None, env))
print(run("execvp", b"noshebang", (ctypes.c_char_p * 2)(b"noshebang", None)))
'''


@pytest.mark.parametrize("mode", ["stock", "matching"])
def test_the_exec_family_keeps_its_semantics(tmp_path, mode):
    # in a process the library does not configure (it passes everything through) and under
    # inherit = matching: any number of execl arguments, execlp's search, execle's environment,
    # and execvp running a file without #! through /bin/sh, as glibc does
    (tmp_path / "noshebang").write_text("echo from-sh\n")
    (tmp_path / "noshebang").chmod(0o755)
    (tmp_path / "x.py").write_text(EXECS)
    extra = dict(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                 VZCAPS_INHERIT="matching") if mode == "matching" else {}
    (tmp_path / "c.conf").write_text(MATCHING)
    env = clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), PATH=f"{tmp_path}:/usr/bin:/bin", **extra)
    p = subprocess.run([sys.executable, str(tmp_path / "x.py")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines.count(" ".join(["x"] * 300)) == 2 and "ONLY=1" in lines and "from-sh" in lines
    assert [l for l in lines if l in ("0", "99")] == ["0", "0", "0", "0"]


EXEC_EDGES = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None)
def run(fn, *args):
    pid = os.fork()
    if pid == 0:
        getattr(libc, fn)(*[ctypes.c_char_p(a) if isinstance(a, bytes) else a for a in args])
        os._exit(99)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)
print(run("execvp", sys.argv[1].encode(), (ctypes.c_char_p * 1)(None)))
'''


@pytest.mark.parametrize("mode", ["stock", "matching"])
def test_execvp_finds_a_program_in_a_long_path_entry_as_libc_does(tmp_path, mode):
    # a PATH entry of 1,200 bytes (the kernel takes 4,096): with the library loaded, execvp found
    # nothing there (its buffer was 1,024 bytes), so the host process could not start its program
    deep = tmp_path.joinpath(*["d" * 200] * 6)
    deep.mkdir(parents=True)
    (deep / "exit7").write_text("#!/bin/sh\nexit 7\n")
    (deep / "exit7").chmod(0o755)
    (tmp_path / "x.py").write_text(EXEC_EDGES)
    (tmp_path / "c.conf").write_text(MATCHING)
    extra = dict(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                 VZCAPS_INHERIT="matching") if mode == "matching" else {}
    env = clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), PATH=f"{deep}:/usr/bin:/bin", **extra)
    p = subprocess.run([sys.executable, str(tmp_path / "x.py"), "exit7"], env=env, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "7\n"), p.stderr
    # an element longer than the kernel takes (PATH_MAX) is skipped, as glibc skips it
    too_long = "/" + "/".join(["t" * 200] * 21)
    env["PATH"] = f"{too_long}:{deep}:/usr/bin:/bin"
    p = subprocess.run([sys.executable, str(tmp_path / "x.py"), "exit7"], env=env, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "7\n"), p.stderr


@pytest.mark.parametrize("mode", ["stock", "matching"])
def test_execvp_of_a_file_without_shebang_and_an_empty_argv_runs_sh_with_a_terminated_argv(tmp_path, mode):
    # execvp(file, {NULL}) of a file the kernel will not run: /bin/sh FILE, with a NULL after it;
    # the library left the third slot of the shell's argv unset (garbage from the stack: EFAULT,
    # or arguments nobody gave). A long first PATH entry leaves that stack non-zero.
    long_dir = tmp_path.joinpath(*["y" * 200] * 4)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "noshebang").write_text('echo "args:$#"\n')
    (tmp_path / "bin" / "noshebang").chmod(0o755)
    (tmp_path / "x.py").write_text(EXEC_EDGES)
    (tmp_path / "c.conf").write_text(MATCHING)
    extra = dict(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                 VZCAPS_INHERIT="matching") if mode == "matching" else {}
    env = clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), PATH=f"{long_dir}:{tmp_path / 'bin'}:/usr/bin:/bin", **extra)
    p = subprocess.run([sys.executable, str(tmp_path / "x.py"), "noshebang"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert (p.returncode, p.stdout) == (0, "args:0\n0\n"), p.stderr


NULL_ENV = r'''
import ctypes, os
libc = ctypes.CDLL(None)
def run(how):
    pid = os.fork()
    if pid == 0:
        argv = (ctypes.c_char_p * 2)(b"true", None)
        if how == "execve":
            libc.execve(b"/bin/true", argv, None)  # Linux takes a NULL environment as an empty one
        else:
            libc.clearenv()  # glibc's clearenv sets environ to NULL
            getattr(libc, how)(b"/bin/true" if how == "execv" else b"true", argv)
        os._exit(99)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)
print(run("execve"), run("execv"), run("execvp"))
'''


@pytest.mark.parametrize("mode", ["stock", "matching"])
def test_exec_with_a_null_environment_starts_the_program(tmp_path, mode):
    # execve(path, argv, NULL), and execv or execvp after clearenv(): the library took the NULL
    # it passed on for its own "refused" and returned -1, so the program never started
    (tmp_path / "x.py").write_text(NULL_ENV)
    (tmp_path / "c.conf").write_text(MATCHING)
    extra = dict(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                 VZCAPS_INHERIT="matching") if mode == "matching" else {}
    env = clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), **extra)
    p = subprocess.run([sys.executable, str(tmp_path / "x.py")], env=env, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (0, "0 0 0\n"), p.stderr


def test_matching_decides_for_the_file_posix_spawnp_runs_not_a_directory_of_that_name(tmp_path):
    # a directory named probe earlier on PATH: posix_spawnp skips it (execve: EACCES) and runs
    # the probe after it, but the decision was made for the directory (slices not known: stock)
    (tmp_path / "dirs" / "probe").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    os.symlink(BUILD / "probe", tmp_path / "bin" / "probe")
    (tmp_path / "c.conf").write_text(MATCHING)
    env = clean_env(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                    VZCAPS_INHERIT="matching", LD_PRELOAD=str(BUILD / "libvzcaps.so"),
                    PATH=f"{tmp_path / 'dirs'}:{tmp_path / 'bin'}:/usr/bin:/bin")
    code = "import os; pid = os.posix_spawnp('probe', ['probe'], dict(os.environ)); os.waitpid(pid, 0)"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "family 1008 1" in p.stdout, p.stdout
