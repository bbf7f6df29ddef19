"""docs/fleet.md's first recipe, run in the simulated Mac (issue 26 item 7): the composite action's
steps from action.yml, as GitHub's runner runs a composite action (each `run:` with its `shell:`
as `sh -e FILE`, its `env:` and `working-directory:`, the GITHUB_PATH, GITHUB_ENV and
GITHUB_OUTPUT files read between steps; tests/actionrunner.py), under dash and bash in POSIX mode
(a Mac's /bin/sh): what it unlocks, strict, the cache, the job's closing step, bad inputs, and
make try-action. The simulated Mac's `make` is the rig's make building the Linux test build
(there is no Apple toolchain here), so the installed command and library are the Linux ones and
the Metal program is the rig's probe (fleetrecipes.py)."""
import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

from conftest import BUILD, ROOT, STOCK_FAMILIES, parse_probe
from actionrunner import ACTION, ACTION_REF, run_action
from macstandins import SW_VERS, write
from fleetrecipes import CHIP, NOT_ON_A_MAC, SHELLS, failed, mac  # noqa: F401  (mac: a fixture)

pytestmark = NOT_ON_A_MAC


# ---- the composite action, run as GitHub's runner runs it (tests/actionrunner.py) ----

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


# ---- make try-action: the action's steps, each said ----

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
