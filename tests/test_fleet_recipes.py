"""The fleet recipes of docs/fleet.md, run in the simulated Mac (issue 26 item 7): the composite
action's steps from action.yml, as GitHub's runner runs a composite action (each `run:` with its
`shell:` as `sh -e FILE`, its `env:` and `working-directory:`, the GITHUB_PATH, GITHUB_ENV and
GITHUB_OUTPUT files read between steps), and packaging/provision-image.sh into a temporary
prefix and home from a release archive made by scripts/release. Both under dash and bash in
POSIX mode (a Mac's /bin/sh). The simulated Mac is test_simulated_mac's stand-ins (uname,
sw_vers, sysctl) and a stock Mac's tools; its `make` is the rig's make building the Linux test
build (there is no Apple toolchain here), so the installed command and library are the Linux
ones and the Metal program is the rig's probe."""
import ast
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile

import pytest
import yaml

from conftest import BUILD, ROOT, STOCK_FAMILIES, parse_probe
from test_simulated_mac import STOCK, SW_VERS, SYSCTL, UNAME, write

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="simulates a Mac on Linux; on a Mac the workflow runs the action itself")
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
SHELLS = ["dash", "bash --posix"]
CHIP = "Apple M2 Pro"  # Apple8: the probe's unlocked answers claim up to 1008

# the Command Line Tools' make, played by the rig's: the Linux test build, with the host's
# tools (and real uname) for its recipes
MAKE = """#!/bin/sh
PATH="@HOSTPATH@" exec make "$@"
"""
PYTHON3 = """#!/bin/sh
exec "@PY@" "$@"
"""


@pytest.fixture(scope="module")
def mac(tmp_path_factory):
    """(environment, directory) of a simulated Mac whose PATH also holds the rig's probe (the
    real program a shim finds after itself)."""
    for name in ("vzcaps", "libvzcaps.so", "probe", "libfakemetal.so"):
        assert (BUILD / name).exists(), f"build/{name} missing: run make"
    sim = tmp_path_factory.mktemp("fleetmac")
    for d in ("bin", "system", "real"):
        (sim / d).mkdir()
    write(sim / "bin" / "uname", UNAME)
    write(sim / "bin" / "sw_vers", SW_VERS)
    write(sim / "bin" / "sysctl", SYSCTL)
    write(sim / "bin" / "make", MAKE, HOSTPATH=os.environ["PATH"])
    write(sim / "bin" / "python3", PYTHON3, PY=sys.executable)
    for name in STOCK + ["dash", "paste", "chown", "sudo"]:
        found = shutil.which(name)
        if found and not (sim / "system" / name).exists():
            os.symlink(found, sim / "system" / name)
    for name in ("probe", "libfakemetal.so"):  # the real program, in a directory of its own
        os.symlink(BUILD / name, sim / "real" / name)
    env = {k: v for k, v in os.environ.items() if k.startswith(("LANG", "LC_"))}
    env.update(PATH=f"{sim}/bin:{sim}/system:{sim}/real", HOME=str(sim / "home"), TMPDIR=str(sim))
    (sim / "home").mkdir()
    return env, sim


# ---- the composite action, run as GitHub's runner runs it ----

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def expand(text, inputs, steps=None):
    """The expressions action.yml may use: inputs.NAME, github.action_path, and (in outputs)
    steps.ID.outputs.NAME; any other is a failure, so this runner knows all it runs."""
    def one(m):
        e = m.group(1)
        if e == "github.action_path":
            return str(ROOT)
        if e.startswith("inputs."):
            assert e[7:] in ACTION["inputs"], f"action.yml uses undeclared input {e}"
            return inputs[e[7:]]
        parts = e.split(".")
        if steps is not None and len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
            return steps.get(parts[1], {}).get(parts[3], "")
        pytest.fail(f"action.yml uses an expression this runner does not know: {e}")
    return EXPR.sub(one, str(text))


def read_commands(path):
    """name=value lines and name<<DELIMITER blocks, as the runner reads GITHUB_ENV/GITHUB_OUTPUT."""
    out, lines = {}, path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        name, _, value = line.partition("=")
        out[name] = value
        i += 1
    return out


def run_action(env, tmp, shell, **given):
    """Runs every step; returns (outputs, job environment after the action, [(step name, process)])."""
    inputs = {k: v.get("default", "") for k, v in ACTION["inputs"].items()}
    inputs.update({k.replace("_", "-"): v for k, v in given.items()})
    temp, workspace = tmp / "runner-temp", tmp / "workspace"
    temp.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    files = {k: tmp / k.lower() for k in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT")}
    job_env, added_paths, steps, ran = {}, [], {}, []
    for i, step in enumerate(ACTION["runs"]["steps"]):
        assert step["shell"] == "sh", step["name"]
        assert "${{" not in step["run"], f"{step['name']}: inputs reach a script through env, never spliced into it"
        script = tmp / f"step{i}.sh"
        script.write_text(step["run"])
        files["GITHUB_OUTPUT"].write_text("")
        e = dict(env, **job_env, RUNNER_TEMP=str(temp), GITHUB_WORKSPACE=str(workspace), GITHUB_ACTIONS="true",
                 **{k: str(v) for k, v in files.items()})
        e.update({k: expand(v, inputs) for k, v in step.get("env", {}).items()})
        e["PATH"] = ":".join(added_paths + [env["PATH"]])
        cwd = expand(step.get("working-directory", str(workspace)), inputs)
        p = subprocess.run([*shell.split(), "-e", str(script)], cwd=cwd, env=e, capture_output=True, text=True,
                           timeout=900, stdin=subprocess.DEVNULL)
        ran.append((step["name"], p))
        if p.returncode != 0:
            return None, None, ran
        if "id" in step:
            steps[step["id"]] = read_commands(files["GITHUB_OUTPUT"])
        job_env.update(read_commands(files["GITHUB_ENV"]))
        lines = files["GITHUB_PATH"].read_text().splitlines() if files["GITHUB_PATH"].exists() else []
        added_paths = list(reversed(lines))  # each line written goes before the ones before it
    outputs = {k: expand(v["value"], inputs, steps) for k, v in ACTION["outputs"].items()}
    after = dict(env, **job_env)
    after["PATH"] = ":".join(added_paths + [env["PATH"]])
    return outputs, after, ran


def failed(ran):
    name, p = ran[-1]
    return f"step {name!r} exit {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_action_unlocks_the_shimmed_program_and_nothing_else(mac, tmp_path, shell):
    env, sim = mac
    outputs, job, ran = run_action(env, tmp_path, shell, programs="probe", host_chip=CHIP, doctor_program=str(BUILD / "probe"))
    assert outputs is not None, failed(ran)
    prefix = tmp_path / "runner-temp" / "vzcaps"
    assert outputs["prefix"] == str(prefix) and outputs["shim-dir"] == str(prefix / "shims")
    assert (outputs["family"], outputs["unlocked"]) == ("1008", "true")
    doctor = json.loads((prefix / "doctor.json").read_text())
    assert doctor["apple_family_max"] == 1008 and doctor["library_run"]["hooked_line"]
    # installed into the runner's temporary directory by make install, shims first on PATH
    assert os.access(prefix / "bin" / "vzcaps", os.X_OK) and (prefix / "lib" / "libvzcaps.so").is_file()
    assert job["PATH"].split(":")[:2] == [str(prefix / "shims"), str(prefix / "bin")]
    assert os.path.islink(prefix / "shims" / "probe")
    assert job["VZCAPS_HOST_CHIP"] == CHIP and not any(k.startswith(("LD_PRELOAD", "DYLD_")) for k in job)
    # the documented gate, from the job's PATH (bin/ behind the shims)
    gate = subprocess.run(["sh", "-c", "vzcaps check --strict --exe probe"], env=job, capture_output=True, text=True)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    # a later step's shell, and a Python subprocess, start `probe` by name: unlocked
    for cmd in (["sh", "-c", "probe"], ["python3", "-c", "import subprocess; subprocess.run(['probe'], check=True)"]):
        p = subprocess.run(cmd, env=job, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        got = parse_probe(p.stdout)[0]["families"]
        assert got[1008] == 1 and got[1009] == 0 and got != STOCK_FAMILIES, (cmd, p.stdout)
        assert "vzcaps:" in p.stderr
    # the real probe by its path, and every unshimmed program of the job: no library
    p = subprocess.run([str(sim / "real" / "probe")], env=job, capture_output=True, text=True, timeout=60)
    assert parse_probe(p.stdout)[0]["families"] == STOCK_FAMILIES
    p = subprocess.run(["sh", "-c", "env"], env=job, capture_output=True, text=True)
    assert "LD_PRELOAD=" not in p.stdout and "DYLD_INSERT_LIBRARIES=" not in p.stdout


def test_the_action_reports_stock_when_nothing_unlocks(mac, tmp_path):
    """No host chip known (the rig's CPU brand names none) and no Metal program run: doctor's
    JSON says apple_family_max null and no hooked line, and the outputs say so."""
    env, _ = mac
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe llama-server")
    assert outputs is not None, failed(ran)
    assert (outputs["family"], outputs["unlocked"]) == ("", "false")
    gate = subprocess.run(["sh", "-c", "vzcaps check --strict --exe probe"], env=job, capture_output=True, text=True)
    assert gate.returncode == 1 and gate.stderr, gate.stdout + gate.stderr
    shims = sorted(n for n in os.listdir(tmp_path / "runner-temp" / "vzcaps" / "shims") if not n.startswith("."))
    assert shims == ["llama-server", "probe"]


def test_the_action_with_the_family_claimed_but_no_program_run_is_not_unlocked(mac, tmp_path):
    env, _ = mac
    outputs, _, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP)
    assert outputs is not None, failed(ran)
    assert (outputs["family"], outputs["unlocked"]) == ("1008", "false")


def test_the_action_takes_a_config_relative_to_the_workspace(mac, tmp_path):
    env, _ = mac
    (tmp_path / "workspace").mkdir()
    conf = tmp_path / "workspace" / "vz.conf"
    conf.write_text("[probe]\nmatch = probe\napple_family_max = 1007\n")
    conf.chmod(0o600)
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP, config="vz.conf")
    assert outputs is not None, failed(ran)
    assert job["VZCAPS_CONFIG"] == str(conf)
    got = parse_probe(subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, text=True).stdout)[0]["families"]
    assert got[1007] == 1 and got[1008] == 0


@pytest.mark.parametrize("given,message", [
    ({"programs": " \n "}, "the programs input names no program"),
    ({"programs": "probe", "config": "missing.conf"}, "is not a file"),
    ({"programs": "probe", "host_chip": "Apple M2\nLD_PRELOAD=/tmp/x.so"}, "must be one line each"),
    ({"programs": "../probe"}, "../probe"),
])
def test_the_action_fails_its_step_on_bad_inputs(mac, tmp_path, given, message):
    env, _ = mac
    outputs, _, ran = run_action(env, tmp_path, "dash", **given)
    assert outputs is None and ran[-1][0] == "Shims first on PATH", failed(ran)
    assert message in ran[-1][1].stderr
    assert not (tmp_path / "github_env").exists() or "LD_PRELOAD" not in (tmp_path / "github_env").read_text()
    assert not (tmp_path / "github_path").exists()  # the job's PATH is untouched
    if "host_chip" in given:  # refused before anything was made
        assert not (tmp_path / "runner-temp" / "vzcaps" / "shims").exists()


def python_snippets(text):
    return re.findall(r"python3 -c '\n(.*?)'", text, re.S)


def test_the_action_reads_doctor_json_with_a_parser_and_python_3_9():
    doctor = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "doctor")["run"]
    snippets = python_snippets(doctor)
    assert len(snippets) == 2 and "grep" not in doctor
    for code in snippets:
        ast.parse(code, feature_version=(3, 9))  # a stock Mac's python3 (Command Line Tools) is 3.9
        assert "json.load(" in code
    # the fields it reads are ones doctor writes
    fields = set(re.findall(r'd\["(\w+)"\]', "".join(snippets))) | set(re.findall(r'lr\["(\w+)"\]', "".join(snippets)))
    d = json.loads(subprocess.run([BUILD / "vzcaps", "doctor", "--json"], capture_output=True, text=True).stdout)
    assert fields <= set(d) | set(d["library_run"]), fields - set(d) - set(d["library_run"])


# ---- the image: packaging/provision-image.sh from a release archive ----

@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A release archive made by scripts/release from the Linux build (its library under the Mac
    name, and under its own)."""
    fake = tmp_path_factory.mktemp("dist")
    shutil.copy(BUILD / "vzcaps", fake / "vzcaps")
    shutil.copy(BUILD / "libvzcaps.so", fake / "libvzcaps.dylib")
    out = tmp_path_factory.mktemp("release")
    p = subprocess.run(["sh", "scripts/release"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, DIST_DIR=str(fake), RELEASE_OUT=str(out), SOURCE_DATE_EPOCH="1700000000"))
    assert p.returncode == 0, p.stderr
    made = next(out.glob("vzcaps-*-macos.tar.gz"))
    # the rig's command looks for its library as libvzcaps.so: the release also holds it under
    # that name, with its SHA256SUMS line (install.sh checks it like every other file)
    stage = tmp_path_factory.mktemp("stage")
    with tarfile.open(made) as t:
        t.extractall(stage)
    top = next(stage.iterdir())
    shutil.copy(BUILD / "libvzcaps.so", top / "lib" / "libvzcaps.so")
    digest = hashlib.sha256((top / "lib" / "libvzcaps.so").read_bytes()).hexdigest()
    with open(top / "SHA256SUMS", "a") as f:
        f.write(f"{digest}  lib/libvzcaps.so\n")
    rig = out / made.name.replace("-macos", "-macos-rig")
    with tarfile.open(rig, "w:gz") as t:
        t.add(top, arcname=top.name)
    return rig


def provision(env, tmp, shell, archive, *extra, server=None):
    home = tmp / "Users" / "runner"
    home.mkdir(parents=True, exist_ok=True)
    args = ["--archive", str(archive), "--user", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
            "--home", str(home), "--prefix", str(tmp / "usr" / "local"), "--etc", str(tmp / "usr" / "local" / "etc"),
            "--programs", "probe llama-server", *extra]
    if server:
        args += ["--server", server[0], "--", *server[1:]]
    return subprocess.run([*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL), home


def login_path(env, home, rc):
    """PATH after sourcing one start-up file the way a shell does."""
    p = subprocess.run(["sh", "-c", '. "$1"; printf %s "$PATH"', "sh", str(home / rc)], env=dict(env, HOME=str(home)),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_provisioning_bakes_install_config_shims_path_runner_and_agent(mac, tmp_path, archive, shell):
    env, sim = mac
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / ".path").write_text(f"/opt/homebrew/bin:{sim}/real:/usr/bin:/bin\n")
    p, home = provision(env, tmp_path, shell, archive, "--runner-dir", str(runner),
                        server=["com.example.llama", "probe", "--port", "8080"])
    assert p.returncode == 0, p.stdout + p.stderr
    prefix = tmp_path / "usr" / "local"
    shims = prefix / "libexec" / "vzcaps" / "shims"
    # installed by the release's install.sh, with its manifest
    assert (prefix / "share" / "vzcaps" / "install-manifest").is_file() and os.access(prefix / "bin" / "vzcaps", os.X_OK)
    # the system config: the release's example, with per-program sections, trusted
    conf = prefix / "etc" / "vzcaps.conf"
    assert conf.read_text() == (ROOT / "packaging" / "vzcaps.conf.example").read_text()
    assert conf.stat().st_mode & 0o022 == 0 and re.findall(r"^\[(\w+)\]$", conf.read_text(), re.M) == ["llama", "ollama", "python"]
    assert sorted(n for n in os.listdir(shims) if not n.startswith(".")) == ["llama-server", "probe"]  # and their records
    # every shell the user starts has the shims first
    for rc in (".zshenv", ".zprofile", ".profile"):
        assert login_path(env, home, rc).split(":")[0] == str(shims), rc
    assert not (home / ".bash_profile").exists()  # made, it would hide .profile from bash
    # the runner service's .path: the shims first, the rest kept, once
    assert (runner / ".path").read_text() == f"{shims}:/opt/homebrew/bin:{sim}/real:/usr/bin:/bin\n"
    # the LaunchAgent names the real program (resolved without the shims), not a shim
    plist = (home / "Library" / "LaunchAgents" / "com.example.llama.plist").read_text()
    assert f"<string>{sim}/real/probe</string>" in plist and str(shims) not in plist
    assert "<key>KeepAlive</key>" in plist
    # a job of that user: probe through the shim, with the system config, unlocked
    job = dict(env, HOME=str(home), PATH=login_path(env, home, ".profile"), VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP=CHIP)
    conf.write_text(conf.read_text() + "[probe]\nmatch = probe\napple_family_max = auto\n")
    q = subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    assert parse_probe(q.stdout)[0]["families"][1008] == 1


def test_provisioning_twice_changes_nothing_and_keeps_the_users_lines(mac, tmp_path, archive):
    env, _ = mac
    home = tmp_path / "Users" / "runner"
    home.mkdir(parents=True)
    (home / ".zshenv").write_text("export EDITOR=vi\n")
    (home / ".bash_profile").write_text("# mine\n")
    p, _ = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stderr
    first = {f: (home / f).read_text() for f in (".zshenv", ".zprofile", ".profile", ".bash_profile")}
    assert first[".zshenv"].startswith("export EDITOR=vi\n# >>> vzcaps shims")
    assert first[".bash_profile"].startswith("# mine\n# >>> vzcaps shims")
    p, _ = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stderr
    assert {f: (home / f).read_text() for f in first} == first
    assert "PATH:" not in p.stdout and "already this config" in p.stdout


@pytest.mark.parametrize("case", ["config-differs", "rc-is-link", "path-is-link", "rc-is-fifo", "path-is-fifo", "bad-config",
                                  "unsafe-dir"])
def test_provisioning_refuses_what_it_did_not_make(mac, tmp_path, archive, case):
    env, _ = mac
    etc = tmp_path / "usr" / "local" / "etc"
    etc.mkdir(parents=True)
    home = tmp_path / "Users" / "runner"
    home.mkdir(parents=True)
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    extra = []
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    if case == "config-differs":
        (etc / "vzcaps.conf").write_text("[mine]\nmatch = x\n")
        needle = "exists and differs"
    elif case == "rc-is-link":
        (home / ".zshenv").symlink_to(victim)
        needle = "is a symbolic link"
    elif case == "path-is-link":
        (runner / ".path").symlink_to(victim)
        extra = ["--runner-dir", str(runner)]
        needle = "is a symbolic link"
    elif case == "rc-is-fifo":  # read, it would hang the provisioning
        os.mkfifo(home / ".zshenv")
        needle = "is not a regular file"
    elif case == "path-is-fifo":
        os.mkfifo(runner / ".path")
        extra = ["--runner-dir", str(runner)]
        needle = "is not a regular file"
    elif case == "bad-config":
        bad = tmp_path / "bad.conf"
        bad.write_text("[llama]\nmatch = llama-server\napple_family_mx = auto\n")
        bad.chmod(0o644)
        extra = ["--config", str(bad)]
        needle = f"vzcaps check refused {bad} for probe (above): nothing written"
    else:
        extra = ["--shim-dir", str(tmp_path / "my shims")]
        needle = "cannot carry plainly"
    p, _ = provision(env, tmp_path, "dash", archive, *extra)
    assert p.returncode != 0 and needle in p.stderr, p.stdout + p.stderr
    assert victim.read_text() == "keep\n"
    if case == "bad-config":
        assert not (etc / "vzcaps.conf").exists() and "apple_family_mx" in p.stderr and "vzcaps-provision." not in p.stderr
    if case.endswith("fifo"):
        assert stat.S_ISFIFO(os.lstat(home / ".zshenv" if case == "rc-is-fifo" else runner / ".path").st_mode)
    if case == "config-differs":
        assert (etc / "vzcaps.conf").read_text() == "[mine]\nmatch = x\n"
        p, _ = provision(env, tmp_path, "dash", archive, "--force")
        assert p.returncode == 0 and "replaced" in p.stdout, p.stderr


def test_provisioning_usage_errors(mac, tmp_path, archive):
    env, _ = mac
    script = str(ROOT / "packaging" / "provision-image.sh")
    for args, needle in ((["--user", "x"], "--archive is required"), (["--archive", str(archive)], "--user is required"),
                         (["--archive", str(archive), "--user", "root", "--", "x"], "needs --server"),
                         (["--archive", str(archive), "--user", "root", "--bogus"], "unknown argument")):
        p = subprocess.run(["dash", script, *args], env=env, capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr, (args, p.stderr)
    p = subprocess.run(["dash", script, "--archive", str(tmp_path / "none.tar.gz"), "--user", "root"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 1 and "is not a file" in p.stderr
