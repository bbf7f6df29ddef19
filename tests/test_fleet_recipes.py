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
import pathlib
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

import pytest
import yaml

from conftest import BUILD, LINUX_ONLY, ROOT, STOCK_FAMILIES, parse_probe
from actionrunner import ACTION, ACTION_REF, run_action, simulated_mac
from macstandins import SW_VERS, UNAME, write

pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="simulates a Mac on Linux; on a Mac the workflow runs the action itself")
SHELLS = ["dash", "bash --posix"]
CHIP = "Apple M2 Pro"  # Apple8: the probe's unlocked answers claim up to 1008


@pytest.fixture(scope="module")
def mac(tmp_path_factory):
    """(environment, directory) of a simulated Mac whose PATH also holds the rig's probe (the
    real program a shim finds after itself)."""
    for name in ("vzcaps", "libvzcaps.so", "probe", "libfakemetal.so"):
        assert (BUILD / name).exists(), f"build/{name} missing: run make"
    return simulated_mac(tmp_path_factory.mktemp("fleetmac"), BUILD)


# ---- the composite action, run as GitHub's runner runs it (tests/actionrunner.py) ----

def failed(ran):
    name, p = ran[-1]
    before = "".join(f"step {n!r}: {q.stdout[-600:]}{q.stderr[-600:]}\n" for n, q in ran[-3:-1])
    return f"{before}step {name!r} exit {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_action_unlocks_the_shimmed_program_and_nothing_else(mac, tmp_path, shell):
    env, sim = mac
    outputs, job, ran = run_action(env, tmp_path, shell, programs="probe", host_chip=CHIP, doctor_program=str(BUILD / "probe"))
    assert outputs is not None, failed(ran)
    assert "vzcaps action:" not in ran[-1][1].stderr  # strict (the default) passed: unlocked, probe through its shim
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
    JSON says apple_family_max null and no hooked line, and the outputs say so; with strict
    false the action only reports."""
    env, _ = mac
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe llama-server", strict="false")
    assert outputs is not None, failed(ran)
    assert (outputs["family"], outputs["unlocked"]) == ("", "false")
    assert "nothing is unlocked" in ran[-1][1].stderr and "strict is false: the job goes on" in ran[-1][1].stdout
    gate = subprocess.run(["sh", "-c", "vzcaps check --strict --exe probe"], env=job, capture_output=True, text=True)
    assert gate.returncode == 1 and gate.stderr, gate.stdout + gate.stderr
    shims = sorted(n for n in os.listdir(tmp_path / "runner-temp" / "vzcaps" / "shims") if not n.startswith("."))
    assert shims == ["llama-server", "probe"]


# ---- strict (issue 33 item 1): the step fails, with the reason, when the job would run stock ----

@pytest.mark.parametrize("shell", SHELLS)
def test_strict_fails_the_step_when_nothing_is_unlocked(mac, tmp_path, shell):
    env, _ = mac
    outputs, set_so_far, ran = run_action(env, tmp_path, shell, programs="probe")  # strict: the default
    assert outputs is None and ran[-1][0] == "vzcaps strict gate", failed(ran)
    err = ran[-1][1].stderr
    assert "nothing is unlocked: vzcaps claims no Apple family here" in err and "strict: failing the step" in err
    assert (set_so_far["family"], set_so_far["unlocked"]) == ("", "false")  # the outputs stay
    assert os.path.isfile(set_so_far["doctor-json"])


def test_strict_fails_when_the_family_is_claimed_but_the_device_was_not_hooked(mac, tmp_path):
    env, _ = mac
    outputs, set_so_far, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP)
    assert outputs is None and ran[-1][0] == "vzcaps strict gate", failed(ran)
    assert "the library claims up to 1008 but did not hook the device" in ran[-1][1].stderr
    assert (set_so_far["family"], set_so_far["unlocked"]) == ("1008", "false")
    outputs, _, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP, strict="false")
    assert outputs is not None and (outputs["family"], outputs["unlocked"]) == ("1008", "false"), failed(ran)


def test_strict_fails_when_a_listed_program_resolves_past_its_shim(mac, tmp_path):
    """Unlocked (doctor hooked the device), but a directory ahead of the shims on the job's PATH
    holds probe: a later step's `probe` would run stock, so the step fails naming it."""
    env, sim = mac
    ahead = tmp_path / "ahead"
    ahead.mkdir()
    os.symlink(sim / "real" / "probe", ahead / "probe")
    outputs, set_so_far, ran = run_action(env, tmp_path, "dash", path_first=ahead, programs="probe llama-server",
                                          host_chip=CHIP, doctor_program=str(BUILD / "probe"))
    assert outputs is None and ran[-1][0] == "vzcaps strict gate", failed(ran)
    err = ran[-1][1].stderr
    shim = tmp_path / "runner-temp" / "vzcaps" / "shims" / "probe"
    assert f"probe resolves to {ahead}/probe on the job's PATH, not its shim {shim}: it would run stock" in err, err
    assert "llama-server resolves" not in err and "nothing is unlocked" not in err  # only what is wrong
    assert set_so_far["unlocked"] == "true"
    # the same job without the directory ahead passes
    outputs, _, ran = run_action(env, tmp_path, "dash", programs="probe llama-server", host_chip=CHIP,
                                 doctor_program=str(BUILD / "probe"))
    assert outputs is not None and outputs["unlocked"] == "true", failed(ran)


def test_strict_fails_when_a_program_name_is_a_shell_builtin(mac, tmp_path):
    """`test` has a shim, but every sh runs its builtin: it never reaches the shim."""
    env, _ = mac
    outputs, _, ran = run_action(env, tmp_path, "dash", programs="probe test", host_chip=CHIP, doctor_program=str(BUILD / "probe"))
    assert outputs is None and ran[-1][0] == "vzcaps strict gate", failed(ran)
    assert "test resolves to test on the job's PATH, not its shim" in ran[-1][1].stderr


def test_the_docs_examples_set_strict_true():
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    examples = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", fleet, re.S)]
    uses = [s for ex in examples for s in ex if "vzcaps@" in str(s.get("uses", ""))]
    assert uses and all(s["with"]["strict"] is True for s in uses), uses
    assert ACTION["inputs"]["strict"]["default"] == "true"


# ---- the cache (issue 33 item 6): the built tool restored, built only on a miss ----

def test_the_action_builds_only_on_a_cache_miss(mac, tmp_path):
    env, _ = mac
    env = dict(env, FLEET_MAKE_LOG=str(tmp_path / "make.log"))
    cache = {}
    args = dict(programs="probe", host_chip=CHIP, doctor_program=str(BUILD / "probe"))
    outputs, _, ran = run_action(env, tmp_path, "dash", cache=cache, **args)
    assert outputs is not None, failed(ran)
    made = (tmp_path / "make.log").read_text().splitlines()
    assert made[0] == "make" and made[1].startswith("make install PREFIX=")
    [key] = cache
    assert key.startswith(f"vzcaps-{ACTION_REF}-") and key.endswith("-macos-15.1-arm64")  # the simulated Mac's sw_vers and uname -m
    assert sorted(os.path.basename(p) for p in cache[key]) == ["bin", "lib", "share"]  # not the shims, not doctor.json

    def fresh_runner():
        shutil.rmtree(tmp_path / "runner-temp")
        for f in ("github_path", "github_env", "github_output"):
            (tmp_path / f).unlink(missing_ok=True)
        (tmp_path / "make.log").unlink(missing_ok=True)

    # a second job on a fresh runner: restored, not built, and it unlocks as before
    fresh_runner()
    outputs, job, ran = run_action(env, tmp_path, "dash", cache=cache, **args)
    assert outputs is not None and outputs["unlocked"] == "true", failed(ran)
    assert not (tmp_path / "make.log").exists()
    assert "restored from the cache" in dict(ran)["Build and install vzcaps into the runner's temporary directory (on a cache miss)"].stdout
    got = parse_probe(subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, text=True, timeout=60).stdout)[0]
    assert got["families"][1008] == 1
    # a restored command that does not run is built again
    fresh_runner()
    (cache[key][str(tmp_path / "runner-temp" / "vzcaps" / "bin")] / "vzcaps").write_text("#!/bin/sh\nexit 1\n")
    outputs, _, ran = run_action(env, tmp_path, "dash", cache=cache, **args)
    assert outputs is not None, failed(ran)
    assert (tmp_path / "make.log").read_text().splitlines()[0] == "make"
    # another macOS version is another key
    fresh_runner()
    sim_other = tmp_path / "other-mac"
    sim_other.mkdir()
    write(sim_other / "sw_vers", SW_VERS.replace("15.1", "26.0"))
    outputs, _, ran = run_action(dict(env, PATH=f"{sim_other}:{env['PATH']}"), tmp_path, "dash", cache=cache, **args)
    assert outputs is not None, failed(ran)
    assert len(cache) == 2 and any(k.endswith("-macos-26.0-" + key.rsplit("-", 1)[1]) for k in cache)


# ---- the job's closing step (issue 33 item 4, issue 37 item 4): vzcaps stats --require, as
# docs/fleet.md shows it; the action gates before with check --strict and starts the count afresh ----

def documented_closing_step():
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    example = yaml.safe_load(re.findall(r"```yaml\n(.*?)```", fleet, re.S)[0])
    action = next(s for s in example if "vzcaps@" in str(s.get("uses", "")))
    return example[-1], action["with"]["programs"].split()


def test_the_documented_closing_step_requires_the_listed_programs_and_always_runs():
    last, programs = documented_closing_step()
    assert last["if"] == "always()" and last["run"] == "vzcaps stats --require " + " ".join(programs), last
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    assert "predicts" in fleet and "observes" in fleet  # which gate can be wrong, and when


def test_the_closing_step_passes_a_job_whose_program_was_hooked_in_every_run(mac, tmp_path):
    env, _ = mac
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP, doctor_program=str(BUILD / "probe"),
                                   log="true")
    log = tmp_path / "runner-temp" / "vzcaps" / "log"
    assert outputs is not None, failed(ran)
    assert job["VZCAPS_LOG_FILE"] == str(log / "vzcaps.log") and stat.S_IMODE(log.stat().st_mode) == 0o700
    gate = ran[-1][1].stdout
    assert "vzcaps action: probe: vzcaps check --strict passed" in gate
    assert 'close the job with a step "if: always()" running "vzcaps stats --require probe"' in gate
    for _ in range(3):
        subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, timeout=60, check=True)
    p = subprocess.run(["sh", "-c", "vzcaps stats --require probe"], env=job, capture_output=True, text=True, timeout=60)
    # exactly the job's three: doctor's own run of the program is not counted
    assert p.returncode == 0 and p.stdout.endswith(": probe (3)\n"), p.stdout + p.stderr
    j = subprocess.run(["sh", "-c", "vzcaps stats --json"], env=job, capture_output=True, text=True, timeout=60)
    assert j.returncode == 0, j.stdout + j.stderr
    assert (json.loads(j.stdout)["hooked"], json.loads(j.stdout)["left_stock"]) == (3, 0), j.stdout


def test_the_closing_step_fails_a_job_whose_program_ran_stock_or_never_ran(mac, tmp_path):
    env, _ = mac
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe llama-server", host_chip=CHIP,
                                   doctor_program=str(BUILD / "probe"))
    assert outputs is not None, failed(ran)
    assert "vzcaps action: llama-server is not installed yet (nothing on PATH after its shim): not gated" in ran[-1][1].stdout
    subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, timeout=60, check=True)
    # a step that sets a family the library refuses: the shim starts probe stock, after the gate passed
    subprocess.run(["sh", "-c", "VZCAPS_APPLE_FAMILY_MAX=1099 probe"], env=job, capture_output=True, timeout=60, check=True)
    p = subprocess.run(["sh", "-c", "vzcaps stats --require probe llama-server"], env=job, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and p.stdout == "", p.stdout
    lines = p.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("vzcaps stats: --require probe: left stock in 1 of 2 runs: "), lines
    assert lines[1] == "vzcaps stats: --require llama-server: never ran: no record of llama-server in the log"


def test_the_gate_runs_check_strict_for_each_listed_program(mac, tmp_path):
    """A configuration that leaves probe stock (off): check --strict says so in its own line, and
    strict fails the step."""
    env, _ = mac
    (tmp_path / "workspace").mkdir()
    conf = tmp_path / "workspace" / "off.conf"
    conf.write_text("[probe]\nmatch = probe\napple_family_max = off\n")
    conf.chmod(0o600)
    outputs, _, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP, config="off.conf")
    assert outputs is None and ran[-1][0] == "vzcaps strict gate", failed(ran)
    assert "vzcaps check: --strict: probe would run stock" in ran[-1][1].stderr, ran[-1][1].stderr


def test_the_action_starts_the_count_afresh_for_the_job(mac, tmp_path):
    """A runner that keeps its temporary directory: the stock run of an earlier job is moved
    aside by the next job's action, not counted against it."""
    env, _ = mac
    args = dict(programs="probe", host_chip=CHIP, doctor_program=str(BUILD / "probe"), cache={})
    outputs, job, ran = run_action(env, tmp_path, "dash", **args)
    assert outputs is not None, failed(ran)
    subprocess.run(["sh", "-c", "VZCAPS_APPLE_FAMILY_MAX=1099 probe"], env=job, capture_output=True, timeout=60, check=True)
    assert subprocess.run(["sh", "-c", "vzcaps stats --require probe"], env=job, capture_output=True).returncode == 1
    for f in ("github_path", "github_env", "github_output"):
        (tmp_path / f).unlink(missing_ok=True)
    outputs, job, ran = run_action(env, tmp_path, "dash", **args)
    assert outputs is not None, failed(ran)
    log = tmp_path / "runner-temp" / "vzcaps" / "log" / "vzcaps.log"
    assert f"vzcaps stats: --zero: {log} moved to {log}.1" in dict(ran)["Shims first on PATH"].stdout
    subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, timeout=60, check=True)
    p = subprocess.run(["sh", "-c", "vzcaps stats --require probe"], env=job, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.endswith(": probe (1)\n"), p.stdout + p.stderr
    assert "left_stock" in (log.parent / "vzcaps.log.1").read_text()  # the earlier job's record, kept


def test_the_action_without_the_log_sets_no_log_file(mac, tmp_path):
    env, _ = mac
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe", strict="false", log="false")
    assert outputs is not None, failed(ran)
    assert "VZCAPS_LOG_FILE" not in job and not (tmp_path / "runner-temp" / "vzcaps" / "log").exists()


def test_the_action_with_the_family_claimed_but_no_program_run_is_not_unlocked(mac, tmp_path):
    env, _ = mac
    outputs, _, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP, strict="false")
    assert outputs is not None, failed(ran)
    assert (outputs["family"], outputs["unlocked"]) == ("1008", "false")


def test_the_action_takes_a_config_relative_to_the_workspace(mac, tmp_path):
    env, _ = mac
    (tmp_path / "workspace").mkdir()
    conf = tmp_path / "workspace" / "vz.conf"
    conf.write_text("[probe]\nmatch = probe\napple_family_max = 1007\n")
    conf.chmod(0o600)
    outputs, job, ran = run_action(env, tmp_path, "dash", programs="probe", host_chip=CHIP, config="vz.conf", strict="false")
    assert outputs is not None, failed(ran)
    assert job["VZCAPS_CONFIG"] == str(conf)
    got = parse_probe(subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, text=True).stdout)[0]["families"]
    assert got[1007] == 1 and got[1008] == 0


@pytest.mark.parametrize("given,message", [
    ({"programs": " \n "}, "the programs input names no program"),
    ({"programs": "probe", "config": "missing.conf"}, "is not a file"),
    ({"programs": "probe", "host_chip": "Apple M2\nLD_PRELOAD=/tmp/x.so"}, "must be one line each"),
    ({"programs": "../probe"}, "../probe"),
    ({"programs": "probe", "strict": "yes"}, 'strict is "yes": it takes true or false'),
    ({"programs": "probe", "log": "1"}, 'log is "1": it takes true or false'),
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
        needle = f"vzcaps check refused {bad} for probe (above): no config written"
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
    if case == "config-differs":  # issue 45: it stopped at the config, with the image half-provisioned
        assert (etc / "vzcaps.conf").read_text() == "[mine]\nmatch = x\n"
        assert p.stderr.endswith(": not replaced (pass --force): nothing installed or written\n"), p.stderr
        assert sorted(os.listdir(tmp_path / "usr" / "local")) == ["etc"] and not p.stdout, p.stdout
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


# ---- the undo (issue 33 item 5): provision-image.sh --undo and uninstall.sh --all ----

def files_of(root):
    """Every entry under root: a file's mode and bytes, a link's target, a directory."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            else:
                out[rel] = (stat.S_IMODE(os.lstat(p).st_mode), open(p, "rb").read())
    return out


def image(tmp_path, sim):
    """A simulated Mac's user with files of their own at the places provisioning writes."""
    home = tmp_path / "Users" / "runner"
    home.mkdir(parents=True)
    (home / ".zshenv").write_text("export EDITOR=vi")  # no newline at its end
    (home / ".zshenv").chmod(0o600)
    (home / ".bash_profile").write_text("# mine\n. ~/.profile\n")
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / ".path").write_text(f"/opt/homebrew/bin:{sim}/real:/usr/bin:/bin\nsecond line\n")
    (tmp_path / "victim").write_text("keep\n")
    return home, runner


def undo(env, shell, tmp_path, how):
    prefix = tmp_path / "usr" / "local"
    if how == "undo":
        cmd = [*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), "--undo", "--prefix", str(prefix)]
    elif how == "installed-undo":  # the copy installed beside the uninstaller: its own PREFIX, no --prefix
        cmd = [*shell.split(), str(prefix / "share" / "vzcaps" / "provision-image.sh"), "--undo"]
    else:  # the installed uninstaller, as a user of the image runs it
        cmd = [*shell.split(), str(prefix / "share" / "vzcaps" / "uninstall.sh"), "--all"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("how", ["undo", "installed-undo", "uninstall-all"])
def test_provision_then_undo_leaves_the_files_as_they_were(mac, tmp_path, archive, shell, how):
    env, sim = mac
    home, runner = image(tmp_path, sim)
    before = files_of(tmp_path)
    p, _ = provision(env, tmp_path, shell, archive, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    prefix = tmp_path / "usr" / "local"
    shims = prefix / "libexec" / "vzcaps" / "shims"
    assert (prefix / "share" / "vzcaps" / "provision-image.sh").is_file()  # installed beside the uninstaller
    assert (prefix / "share" / "vzcaps" / "uninstall.sh").is_file()
    # every write recorded: shim links, start-up files, .path, the config, the directories made
    recs = prefix / "share" / "vzcaps" / "provision"
    kinds = sorted((r.read_text().splitlines()[2], r.read_text().splitlines()[3]) for r in recs.glob("entry.*")
                   if not r.name.endswith(".orig"))
    paths = {k: sorted(pp[5:] for kk, pp in kinds if kk == k) for k in {kk for kk, _ in kinds}}
    assert paths["kind shim"] == [str(shims / "llama-server"), str(shims / "probe")]
    assert paths["kind rc"] == sorted(str(home / f) for f in (".zshenv", ".zprofile", ".profile", ".bash_profile"))
    assert paths["kind path"] == [str(runner / ".path")] and paths["kind conf"] == [str(prefix / "etc" / "vzcaps.conf")]
    assert str(shims) in paths["kind dir"] and str(prefix / "etc") in paths["kind dir"]
    assert files_of(tmp_path) != before
    # a second run changes nothing the undo must know about
    p, _ = provision(env, tmp_path, shell, archive, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    u = undo(env, shell, tmp_path, how)
    assert u.returncode == 0, u.stdout + u.stderr
    assert "restored" in u.stdout and "removed the shim" in u.stdout
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:10]


@pytest.mark.parametrize("how", ["undo", "uninstall-all"])
def test_the_undo_keeps_what_a_user_made_or_changed(mac, tmp_path, archive, how):
    env, sim = mac
    home, runner = image(tmp_path, sim)
    etc = tmp_path / "usr" / "local" / "etc"
    # the user's own config, the same bytes as the example: never written, never removed
    etc.mkdir(parents=True)
    (etc / "vzcaps.conf").write_text((ROOT / "packaging" / "vzcaps.conf.example").read_text())
    (etc / "vzcaps.conf").chmod(0o644)
    p, _ = provision(env, tmp_path, "dash", archive, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "already this config" in p.stdout
    shims = tmp_path / "usr" / "local" / "libexec" / "vzcaps" / "shims"
    # after provisioning: the user edits inside the block of .zshenv, appends a line to .profile,
    # removes .zprofile, makes .bash_profile a link, puts a file of their own at a shim's name
    # and rewrites .path
    z = (home / ".zshenv").read_text().replace("export PATH ;; esac", "export PATH ;; esac # mine")
    (home / ".zshenv").write_text(z)
    (home / ".profile").write_text((home / ".profile").read_text() + "export MINE=1\n")
    (home / ".zprofile").unlink()
    (home / ".bash_profile").unlink()
    (home / ".bash_profile").symlink_to(tmp_path / "victim")
    os.unlink(shims / "llama-server")
    (shims / "llama-server").write_text("#!/bin/sh\necho mine\n")
    (runner / ".path").write_text(f"{shims}:/usr/bin:/bin:/mine\n")
    u = undo(env, "dash", tmp_path, how)
    assert u.returncode == 0, u.stdout + u.stderr
    out = u.stdout
    assert (etc / "vzcaps.conf").read_text() == (ROOT / "packaging" / "vzcaps.conf.example").read_text()
    assert (home / ".zshenv").read_text() == z and "the block between the vzcaps markers was edited" in out
    assert (home / ".profile").read_text() == "export MINE=1\n"  # only provisioning's block taken out
    assert not (home / ".zprofile").exists() and f"{home}/.zprofile: already gone" in out
    assert os.readlink(home / ".bash_profile") == str(tmp_path / "victim") and (tmp_path / "victim").read_text() == "keep\n"
    assert (shims / "llama-server").read_text() == "#!/bin/sh\necho mine\n" and f"kept {shims}/llama-server" in out
    assert not (shims / "probe").exists()
    assert (runner / ".path").read_text() == "/usr/bin:/bin:/mine\n"


def test_undo_with_nothing_provisioned_and_usage(mac, tmp_path):
    env, _ = mac
    script = str(ROOT / "packaging" / "provision-image.sh")
    p = subprocess.run(["dash", script, "--undo", "--prefix", str(tmp_path / "none")], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == f"nothing to undo under {tmp_path / 'none'}: nothing provisioned or installed there\n", p.stdout + p.stderr
    p = subprocess.run(["dash", script, "--undo", "--user", "x"], env=env, capture_output=True, text=True)
    assert p.returncode == 2 and "--undo takes only --prefix" in p.stderr
    recs = tmp_path / "p" / "share" / "vzcaps"
    recs.mkdir(parents=True)
    (recs / "provision").symlink_to(tmp_path)
    p = subprocess.run(["dash", script, "--undo", "--prefix", str(tmp_path / "p")], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "is a link or not a directory: nothing undone" in p.stderr


def test_the_packer_snippet_matches_the_archive(archive):
    """docs/fleet.md's Packer provisioners, read as HCL: the file provisioner copies the release
    archive; the shell provisioner unpacks it where it was copied and runs the provision-image.sh
    the archive holds (checked against the archive's own layout), with --archive that copy."""
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    hcl = re.search(r"```hcl\n(.*?)```", fleet, re.S).group(1)
    blocks = re.findall(r'provisioner "(\w+)" \{(.*?)\n\}', hcl, re.S)
    assert [k for k, _ in blocks] == ["file", "shell"]
    f = dict(re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', blocks[0][1], re.M))
    with tarfile.open(archive) as t:
        names = t.getnames()
    top = names[0].split("/")[0]
    assert re.fullmatch(r"vzcaps-[\d.]+-macos\.tar\.gz", f["source"]) and f["source"] == top + ".tar.gz"
    inline = re.findall(r'"((?:[^"\\]|\\.)*)",?\s*$', blocks[1][1].split("inline", 1)[1], re.M)
    dest = f["destination"]
    words = [w for cmd in inline for w in cmd.split()]
    assert inline[0].split() == ["tar", "-xzf", dest, "-C", os.path.dirname(dest)], inline
    script = next(w for w in words if w.endswith("provision-image.sh"))
    assert script == f"{os.path.dirname(dest)}/{top}/provision-image.sh"
    assert f"{top}/provision-image.sh" in names and f"{top}/share/vzcaps/provision-image.sh" in names
    assert words[words.index("--archive") + 1] == dest
    with tarfile.open(archive) as t:
        shipped = t.extractfile(f"{top}/provision-image.sh").read()
    assert shipped == (ROOT / "packaging" / "provision-image.sh").read_bytes()


def test_undo_puts_back_a_config_that_force_replaced(mac, tmp_path, archive):
    env, sim = mac
    etc = tmp_path / "usr" / "local" / "etc"
    etc.mkdir(parents=True)
    (etc / "vzcaps.conf").write_text("[mine]\nmatch = x\n")
    (etc / "vzcaps.conf").chmod(0o640)
    before = files_of(tmp_path)
    p, _ = provision(env, tmp_path, "dash", archive, "--force")
    assert p.returncode == 0 and "replaced" in p.stdout, p.stdout + p.stderr
    u = undo(env, "dash", tmp_path, "undo")
    assert u.returncode == 0, u.stdout + u.stderr
    assert f"restored {etc}/vzcaps.conf as it was before" in u.stdout
    home = tmp_path / "Users" / "runner"
    assert files_of(tmp_path) == dict(before, **{os.path.relpath(home, tmp_path): ("dir",),
                                                 os.path.relpath(home.parent, tmp_path): ("dir",)})
    assert (etc / "vzcaps.conf").read_text() == "[mine]\nmatch = x\n" and stat.S_IMODE((etc / "vzcaps.conf").stat().st_mode) == 0o640


def test_uninstall_without_all_on_a_provisioned_image_removes_nothing(mac, tmp_path, archive):
    env, sim = mac
    p, _ = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stdout + p.stderr
    made = files_of(tmp_path)
    prefix = tmp_path / "usr" / "local"
    u = subprocess.run(["dash", str(prefix / "share" / "vzcaps" / "uninstall.sh")], env=env, capture_output=True, text=True)
    assert u.returncode == 1 and "was provisioned by provision-image.sh" in u.stderr and "--all" in u.stderr, u.stderr
    assert files_of(tmp_path) == made


@pytest.mark.parametrize("programs", ["probe --remove", "probe --list", "-h probe"])
def test_a_program_name_that_reads_as_an_option_is_refused_before_anything_is_written(mac, tmp_path, archive, programs):
    # hostile: the names went to `vzcaps shims --dir D $names` unguarded: "probe --remove" removed
    # the shim just made (its record left naming nothing), "-h" printed shims's help, and the
    # failure read "cannot record .../--remove (a full disk?)"
    env, _ = mac
    p, home = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stderr
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    args = ["--archive", str(archive), "--user", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
            "--home", str(home), "--prefix", str(prefix), "--etc", str(prefix / "etc"), "--programs", programs]
    q = subprocess.run(["dash", str(ROOT / "packaging" / "provision-image.sh"), *args], env=env, capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    bad = next(w for w in programs.split() if w.startswith("-"))
    assert q.returncode == 2, q.stdout + q.stderr
    assert q.stderr.splitlines()[0] == (f"provision-image.sh: --programs: \"{bad}\" starts with '-': "
                                        "a program name, not an option"), q.stderr
    assert files_of(tmp_path) == before  # nothing installed, written or removed


# ---- issue 39: a journal, prefixes undone independently, the agent, a second run ----

def provision_into(env, tmp, archive, prefix, *extra, shell="dash", stop_at=None):
    home = tmp / "Users" / "runner"
    home.mkdir(parents=True, exist_ok=True)
    args = ["--archive", str(archive), "--user", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
            "--home", str(home), "--prefix", str(prefix), "--etc", str(prefix / "etc"), "--programs", "probe llama-server", *extra]
    e = dict(env, PROVISION_IMAGE_STOP_AT=str(stop_at)) if stop_at else env
    return subprocess.run([*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), *args], env=e,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def undo_prefix(env, prefix, shell="dash"):
    return subprocess.run([*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), "--undo", "--prefix", str(prefix)],
                          env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def stamps(root):
    """Every entry under root with its inode and modification time: a rewrite shows."""
    return {os.path.relpath(os.path.join(d, n), root): (os.lstat(os.path.join(d, n)).st_ino, os.lstat(os.path.join(d, n)).st_mtime_ns)
            for d, dirs, files in os.walk(root) for n in dirs + files}


def test_a_second_provisioning_run_changes_nothing_and_says_so(mac, tmp_path, archive):
    # issue 39 row 19: a second run rewrote every installed file and said "installed 33 files" again
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    server = ["--server", "com.example.probe", "--", "probe"]
    p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner), *server)
    assert p.returncode == 0 and "already provisioned" not in p.stdout, p.stdout + p.stderr
    first = stamps(tmp_path)
    p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner), *server)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "provision-image.sh: already provisioned: nothing changed" in p.stdout, p.stdout
    assert "installed " not in p.stdout and "already installed" in p.stdout and "PATH:" not in p.stdout
    assert stamps(tmp_path) == first, sorted(set(stamps(tmp_path).items()) ^ set(first.items()))[:6]


def test_provisioning_stopped_at_every_step_is_undone(mac, tmp_path, archive):
    """issue 39 row 5: killed (SIGKILL: no trap runs) between a start-up file's write and its record,
    --undo exited 1, kept the PATH block and asked to be run again; issue 45: killed between a saved
    original's rename (entry.N.orig) and its record, --undo left the original, so the records
    directory was not empty: exit 1, and uninstall.sh refused for ever. Stopped at each point
    between two writes in turn (PROVISION_IMAGE_STOP_AT; the first: install.sh done, nothing
    provisioned yet), then undone: exit 0, every file as it was; a second undo has nothing to do."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    args = ["--runner-dir", str(runner), "--server", "com.example.probe", "--", "probe"]
    n = 0
    while True:
        n += 1
        assert n < 60, "provisioning never finished"
        p = provision_into(env, tmp_path, archive, prefix, *args, stop_at=n)
        u = undo_prefix(env, prefix)
        assert u.returncode == 0 and not u.stderr, (n, u.stdout + u.stderr)
        assert "again" not in u.stdout and "kept" not in u.stdout, (n, u.stdout)
        after = files_of(tmp_path)
        assert after == before, (n, sorted(set(after.items()) ^ set(before.items()))[:6])
        u = undo_prefix(env, prefix)  # a second undo: nothing to do, and it says so
        assert u.returncode == 0 and u.stdout == f"nothing to undo under {prefix}: nothing provisioned or installed there\n", (n, u.stdout)
        if p.returncode == 0:
            break
        assert p.returncode == -9, (n, p.stdout + p.stderr)
    # every directory, the config, the saved originals, the shims, four start-up files, .path and the agent
    assert n > 20, n


def test_provisioning_killed_at_every_step_of_its_install_is_undone(mac, tmp_path, archive):
    """issue 45: the run killed at moments spread over it (wall clock) found, by chance, undos that
    left the interrupted install's files (docs, .vzcaps-install.* copies, the manifest). Now the
    release's install.sh is killed at each point between two of its writes (INSTALL_SH_STOP_AT);
    the run stops, saying in one line what is left and the command that removes it; that command:
    exit 0, every file as it was; run again, it has nothing to undo."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    n = 0
    while True:
        n += 1
        assert n < 40, "install.sh never finished"
        p = provision_into(dict(env, INSTALL_SH_STOP_AT=str(n)), tmp_path, archive, prefix, "--runner-dir", str(runner))
        if p.returncode == 0:
            break
        assert p.returncode == 1, (n, p.stdout + p.stderr)
        last = p.stderr.splitlines()[-1]
        assert last.startswith("provision-image.sh: stopped part way: install.sh was killed; what it made goes with: sh "), (n, p.stderr)
        u = subprocess.run(shlex.split(last.split(" goes with: ", 1)[1]), env=env, capture_output=True, text=True, timeout=300)
        assert u.returncode == 0 and not u.stderr and "kept" not in u.stdout, (n, u.stdout + u.stderr)
        after = files_of(tmp_path)
        assert after == before, (n, sorted(set(after.items()) ^ set(before.items()))[:6])
        u = undo_prefix(env, prefix)
        assert u.returncode == 0 and u.stdout == f"nothing to undo under {prefix}: nothing provisioned or installed there\n", (n, u.stdout + u.stderr)
    assert n > 12, n  # every step of install.sh (tests/dist/test_install_scripts.py)
    assert undo_prefix(env, prefix).returncode == 0 and files_of(tmp_path) == before


def test_a_failing_chown_is_undone(mac, tmp_path, archive):
    """As root, a chown that fails after the write (row 5's other case): exit 1, then --undo
    finishes: exit 0, every file as it was. id answers 0 and chown fails (stand-ins)."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    stand = tmp_path.parent / (tmp_path.name + "-standins")
    stand.mkdir()
    write(stand / "chown", "#!/bin/sh\necho \"chown: $2: Operation not permitted\" >&2\nexit 1\n")
    write(stand / "id", "#!/bin/sh\n[ \"$*\" = -u ] && { echo 0; exit 0; }\nexec @ID@ \"$@\"\n", ID=shutil.which("id"))
    p = provision_into(dict(env, PATH=f"{stand}:{env['PATH']}"), tmp_path, archive, prefix, "--runner-dir", str(runner))
    assert p.returncode == 1 and "cannot give" in p.stderr, p.stdout + p.stderr
    # issue 45: a run that stops early says in one line what is left and the command that removes it
    last = p.stderr.splitlines()[-1]
    assert last.startswith(f"provision-image.sh: stopped part way: what this run installed and wrote is left in {prefix} (recorded); sh "), p.stderr
    u = subprocess.run(shlex.split(last.split("; ", 1)[1].rsplit(" removes it", 1)[0]), env=env, capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert files_of(tmp_path) == before


@pytest.mark.parametrize("order", ["a-then-b", "b-then-a"])
def test_two_prefixes_are_undone_independently(mac, tmp_path, archive, order):
    # issue 39 row 6: provision A, provision B, undo A, undo B (each exit 0) left A's PATH block
    env, sim = mac
    home, runner = image(tmp_path, sim)
    before = files_of(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    for prefix in (a, b):
        p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner))
        assert p.returncode == 0, p.stdout + p.stderr
    zshenv = (home / ".zshenv").read_text()
    assert f"{a}/libexec/vzcaps/shims" in zshenv and f"{b}/libexec/vzcaps/shims" in zshenv
    first, second = (a, b) if order == "a-then-b" else (b, a)
    u = undo_prefix(env, first)
    assert u.returncode == 0, u.stdout + u.stderr
    for rc in (".zshenv", ".zprofile", ".profile", ".bash_profile"):
        text = (home / rc).read_text()
        assert f"{first}/libexec" not in text and f"{second}/libexec/vzcaps/shims" in text, (rc, text)
        assert login_path(env, home, rc).split(":")[0] == f"{second}/libexec/vzcaps/shims", rc
    assert (runner / ".path").read_text().split(":")[0] == f"{second}/libexec/vzcaps/shims"
    u = undo_prefix(env, second)
    assert u.returncode == 0, u.stdout + u.stderr
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]


def test_a_file_without_a_final_newline_is_restored_without_one(mac, tmp_path, archive):
    """issue 39 row 8: the undo kept the newline provisioning added to a file that had none. Here
    the files are edited since (a line put first), so the undo takes out only provisioning's part."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    (runner / ".path").write_text("/usr/bin:/bin")  # none at its end either
    prefix = tmp_path / "usr" / "local"
    p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    assert login_path(env, home, ".zshenv").split(":")[0] == f"{prefix}/libexec/vzcaps/shims"
    assert (runner / ".path").read_bytes() == f"{prefix}/libexec/vzcaps/shims:/usr/bin:/bin".encode()
    for f in (home / ".zshenv", home / ".profile"):
        f.write_bytes(b"# mine\n" + f.read_bytes())
    (runner / ".path").write_bytes((runner / ".path").read_bytes() + b"\n# mine")
    u = undo_prefix(env, prefix)
    assert u.returncode == 0, u.stdout + u.stderr
    assert u.stdout.count("took out what provision-image.sh wrote") == 3, u.stdout
    assert (home / ".zshenv").read_bytes() == b"# mine\nexport EDITOR=vi"
    assert stat.S_IMODE((home / ".zshenv").stat().st_mode) == 0o600  # its mode kept throughout
    assert (runner / ".path").read_bytes() == b"/usr/bin:/bin\n# mine"
    assert (home / ".profile").read_bytes() == b"# mine\n"


@pytest.mark.parametrize("how", ["undo", "uninstall-all"])
def test_server_then_undo_leaves_no_agent_log_or_tool(mac, tmp_path, archive, how):
    """issue 39 row 7: as root, the undo left the KeepAlive agent (naming the removed library) and
    ~/Library/Logs/vzcaps, and removed uninstall.sh, the tool named for removing the agent."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    before = files_of(tmp_path)
    prefix = tmp_path / "usr" / "local"
    p = provision_into(env, tmp_path, archive, prefix, "--server", "com.example.probe", "--", "probe", "--port", "1")
    assert p.returncode == 0, p.stdout + p.stderr
    logs = home / "Library" / "Logs" / "vzcaps"
    assert (home / "Library" / "LaunchAgents" / "com.example.probe.plist").is_file() and logs.is_dir()
    (logs / "com.example.probe.err.log").write_text("the job's own log\n")  # as launchd would make it
    (logs / "com.example.probe.out.log").write_text("")
    u = undo(env, "dash", tmp_path, how)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert "removed the LaunchAgent com.example.probe" in u.stdout
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to provision as root and undo as a second user (nobody)")
def test_undo_by_a_user_who_did_not_provision_says_so_in_one_line(mac, archive):
    """issue 39 row 7, the other order: provisioned as root, --undo (and uninstall.sh --all) as
    another user printed about 70 "Permission denied" lines and a raw cd error, then exit 1. Now
    one line naming whose it is, nothing changed, and root's --undo afterwards still finishes."""
    env, sim = mac
    top = tempfile.mkdtemp(prefix="vzcaps-second-user.")  # a directory the second user can reach
    try:
        os.chmod(top, 0o755)
        tmp = pathlib.Path(top)
        home, runner = image(tmp, sim)
        prefix = tmp / "usr" / "local"
        before = files_of(tmp)
        p = provision_into(env, tmp, archive, prefix, "--server", "com.example.probe", "--", "probe")
        assert p.returncode == 0, p.stdout + p.stderr
        made = files_of(tmp)
        plain = dict(PATH="/usr/bin:/bin", HOME="/nonexistent")
        for cmd in (["sh", str(prefix / "share" / "vzcaps" / "provision-image.sh"), "--undo"],
                    ["sh", str(prefix / "share" / "vzcaps" / "uninstall.sh"), "--all"]):
            q = subprocess.run(cmd, env=plain, capture_output=True, text=True, timeout=120, preexec_fn=as_nobody,
                               cwd="/", stdin=subprocess.DEVNULL)
            assert q.returncode == 1, (cmd, q.stdout, q.stderr)
            assert "Permission denied" not in q.stderr and "can't cd" not in q.stderr and "cd:" not in q.stderr, q.stderr
            assert "is not yours to change (provisioned as root)" in q.stderr.splitlines()[0], q.stderr
            assert len(q.stderr.splitlines()) <= 2 and not q.stdout, (q.stdout, q.stderr)
            assert files_of(tmp) == made
        u = undo_prefix(env, prefix)
        assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
        assert files_of(tmp) == before
    finally:
        shutil.rmtree(top)


def test_make_try_provision_is_the_documented_linux_route(tmp_path):
    """issue 39 row 19: docs/fleet.md's way to try provisioning on Linux, scripts/try-provision
    (make try-provision), into a directory of its own; the undo it prints puts every file back,
    and a second run over the first starts again from a clean directory."""
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    assert "make try-provision" in fleet and "build/try-provision" in fleet
    assert "try-provision:" in (ROOT / "Makefile").read_text()
    try_dir = tmp_path / "try"
    env = dict(os.environ, TRY_DIR=str(try_dir), B=str(BUILD))
    for _ in range(2):
        p = subprocess.run(["sh", "scripts/try-provision"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
    home, prefix = try_dir / "home", try_dir / "usr" / "local"
    assert f"PATH={prefix}/libexec/vzcaps/shims:$PATH" in (home / ".zshenv").read_text()
    undo_line = next(line.strip() for line in p.stdout.splitlines() if "--undo" in line)
    u = subprocess.run(undo_line.split("#")[0].split(), env=env, capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert os.listdir(home) == [] and (try_dir / "actions-runner" / ".path").read_text() == "/usr/bin:/bin\n"
    assert not prefix.exists()
    (tmp_path / "mine").mkdir()
    p = subprocess.run(["sh", "scripts/try-provision"], cwd=ROOT, env=dict(env, TRY_DIR=str(tmp_path / "mine")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "is not a directory this script made: left alone" in p.stderr


@LINUX_ONLY  # setpriv plays sudo
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to provision as a second user (nobody) and undo as root")
def test_provisioned_as_the_user_then_undone_as_root(archive):
    """issue 39 row 7, as the user: nobody provisions its own prefix and home with --server; root's
    --undo removes the agent as nobody (sudo -u, a stand-in over setpriv), its logs and the
    directories made for them: exit 0, no error, every file as it was."""
    top = tempfile.mkdtemp(prefix="vzcaps-as-user.")
    try:
        tmp = pathlib.Path(top)
        stand = tmp / "standins"
        stand.mkdir()
        write(stand / "uname", UNAME)
        write(stand / "sudo", '#!/bin/sh\n[ "$1" = -u ] || exit 1\nu=$2\nshift 2\n'
                              'exec setpriv --reuid "$u" --regid "$(id -g "$u")" --clear-groups "$@"\n')
        shutil.copy(archive, tmp / "release.tar.gz")
        # the script from where nobody can read it (a checkout under /root, mode 0700, cannot be)
        shutil.copy(ROOT / "packaging" / "provision-image.sh", tmp / "provision-image.sh")
        home = tmp / "home"
        home.mkdir()
        (home / ".zshenv").write_text("export EDITOR=vi")
        for d, _, files in os.walk(top):
            for n in [d, *(os.path.join(d, f) for f in files)]:
                os.chown(n, 65534, 65534)
        os.chmod(top, 0o755)
        before = files_of(tmp)
        env = dict(PATH=f"{stand}:/usr/bin:/bin", HOME=str(home))
        prefix = tmp / "prefix"
        p = subprocess.run(["sh", str(tmp / "provision-image.sh"), "--archive", str(tmp / "release.tar.gz"),
                            "--user", "nobody", "--home", str(home), "--prefix", str(prefix), "--etc", str(prefix / "etc"),
                            "--programs", "probe", "--server", "com.example.sleep", "--", "sleep", "1000"],
                           env=env, capture_output=True, text=True, timeout=300, preexec_fn=as_nobody, cwd="/",
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stdout + p.stderr
        plist = home / "Library" / "LaunchAgents" / "com.example.sleep.plist"
        assert plist.is_file() and os.stat(plist).st_uid == 65534
        (home / "Library" / "Logs" / "vzcaps" / "com.example.sleep.err.log").write_text("launchd's\n")
        u = subprocess.run(["sh", str(prefix / "share" / "vzcaps" / "provision-image.sh"), "--undo"], env=env,
                           capture_output=True, text=True, timeout=300, cwd="/", stdin=subprocess.DEVNULL)
        assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
        assert "removed the LaunchAgent com.example.sleep" in u.stdout
        after = files_of(tmp)
        assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]
    finally:
        shutil.rmtree(top)


def test_make_try_provision_from_a_path_with_a_space(tmp_path):
    """issue 45: from a clone whose path has a space (which the README supports), make
    try-provision failed (exit 2: the shim directory cannot go into a start-up file plainly),
    without naming TRY_DIR, and left a half-made build/try-provision. Now it tries in
    ~/.cache/vzcaps/try-provision (and says so), whose undo puts every file back; a TRY_DIR with a
    space is refused in one line naming it, before anything is made."""
    clone = tmp_path / "my clone"
    clone.symlink_to(ROOT)  # the shell's pwd is the path as reached, with its space
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TRY_DIR", "XDG_CACHE_HOME")}
    env.update(PWD=str(clone), HOME=str(home), B="build")
    bad = tmp_path / "a b"
    p = subprocess.run(["sh", "scripts/try-provision"], cwd=clone, env=dict(env, TRY_DIR=str(bad)), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and f"TRY_DIR {bad} has a character" in p.stderr, p.stderr
    assert not bad.exists() and os.listdir(home) == []
    p = subprocess.run(["sh", "scripts/try-provision"], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    try_dir = home / ".cache" / "vzcaps" / "try-provision"
    assert p.stdout.startswith(f"try-provision: this checkout's path has a character a PATH entry in a start-up file cannot "
                               f"carry plainly (a blank?): trying in {try_dir} (TRY_DIR for another)\n"), p.stdout
    assert not (ROOT / "build" / "try-provision").exists() or (ROOT / "build" / "try-provision" / ".made-by-try-provision").exists()
    undo_line = next(line.strip() for line in p.stdout.splitlines() if "--undo" in line)
    u = subprocess.run(undo_line.split("#")[0].split(), env=env, capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert os.listdir(try_dir / "home") == [] and not (try_dir / "usr" / "local").exists()


def test_make_try_action_runs_the_actions_steps_and_says_what_each_did(tmp_path):
    """issue 45: there was no Linux way to try action.yml; a CI engineer wrote a runner emulation
    (sw_vers, shasum, GITHUB_ENV, GITHUB_PATH, GITHUB_OUTPUT) to see its steps. make try-action
    runs them with the tests' own runner and stand-ins (tests/actionrunner.py), and says of each
    step its exit status and what it wrote; a failing step is named. From a build directory whose
    path has a blank (which LD_PRELOAD cannot carry) it tries in ~/.cache/vzcaps/try-action; a
    TRY_DIR with one is refused in one line, nothing made."""
    assert "make try-action" in (ROOT / "docs" / "fleet.md").read_text()
    make = subprocess.run(["make", "-n", "--no-print-directory", "try-action"], cwd=ROOT, capture_output=True, text=True)
    assert "python3 scripts/try-action" in make.stdout, make.stdout + make.stderr
    build = tmp_path / "my build"
    build.symlink_to(BUILD)
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("TRY_DIR", "XDG_CACHE_HOME")}
    p = subprocess.run([sys.executable, "scripts/try-action"], cwd=ROOT, env=dict(env, B=str(build), TRY_DIR=str(tmp_path / "a b")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and f"TRY_DIR {tmp_path / 'a b'} holds a blank" in p.stderr, p.stderr
    assert not (tmp_path / "a b").exists()
    env.update(B=str(build), HOME=str(home))
    p = subprocess.run([sys.executable, "scripts/try-action"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("try-action: the build directory's path holds a blank or ':', which LD_PRELOAD cannot carry: "
                               f"trying in {home}/.cache/vzcaps/try-action (TRY_DIR for another)\n"), p.stdout
    steps = ACTION["runs"]["steps"]
    for n, step in enumerate(steps, 1):
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith(f"step {n} of {len(steps)}, ")), "")
        assert step["name"] in line and ("exit 0" in line or "cache-hit=false" in line), (n, p.stdout)
    shims = home / ".cache" / "vzcaps" / "try-action" / "runner-temp" / "vzcaps" / "shims"
    for said in ("GITHUB_ENV: VZCAPS_HOST_CHIP=Apple M2 Pro", f"GITHUB_PATH: {shims}", "GITHUB_OUTPUT: unlocked=true",
                 "GITHUB_OUTPUT: family=1008", "vzcaps action: probe: vzcaps check --strict passed",
                 "try-action: a job step after it, vzcaps stats --require probe: exit 0"):
        assert said in p.stdout, (said, p.stdout)
    p = subprocess.run([sys.executable, "scripts/try-action", "host-chip="], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 1 and p.stdout.endswith("try-action: step 'vzcaps strict gate' failed (exit 1): the action stops "
                                                   "there\n"), p.stdout
    assert "vzcaps action: nothing is unlocked" in p.stdout


def test_an_undo_after_a_kill_inside_vzcaps_shims_removes_its_temporary_link(mac, tmp_path, archive):
    """issue 45: the whole run killed while vzcaps shims made a shim (between its record and its
    rename) leaves the temporary link .NAME.vzcaps-shim-new.PID.N and the record naming it, and no
    shim at NAME: the undo said "already gone", left both, so the shim directory was not empty and
    the undo exited 1. The undo's vzcaps shims --remove removes them (a later run's sweep)."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    p = provision_into(env, tmp_path, archive, prefix, "--programs", "probe")  # the one shim: no other --remove sweeps
    assert p.returncode == 0, p.stdout + p.stderr
    shims = prefix / "libexec" / "vzcaps" / "shims"
    os.rename(shims / "probe", shims / ".probe.vzcaps-shim-new.4242.0")  # as the kill left it: its record names it
    u = undo_prefix(env, prefix)
    assert u.returncode == 0 and not u.stderr and "kept" not in u.stdout, u.stdout + u.stderr
    assert f"{shims}/probe: already gone" in u.stdout
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]
