"""check --strict as a gate a CI job trusts (issue 32 rows 4-7, item 2): it exits 0 only when the
run would change at least one answer. The verdict follows what the job actually starts: the
effective caller scope (empty or all-stock is stock), what PATH resolves the program to here (the
shim or not, and which real program the shim starts), and whether the loader injects at all (a
static executable). The table test compares every verdict with `run`'s real outcome on the rig:
the stand-in Metal client started by name through its shim, its answers against stock."""
import json
import os
import subprocess

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the rig: LD_PRELOAD, ELF)

VZ = str(BUILD / "vzcaps")
CHIP = "Apple M2 Pro"  # auto: Apple8


def vz(*args, env):
    return subprocess.run([VZ, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def fleet(tmp_path):
    """real/probe (the stand-in client) and shims/probe, shims/llama-server (links to vzcaps)."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "probe").symlink_to(BUILD / "probe")
    shims = tmp_path / "shims"
    p = subprocess.run([VZ, "shims", "--dir", str(shims), "probe", "llama-server"], env=clean_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return tmp_path, real, shims


def env_for(path, config=None, **extra):
    env = clean_env(PATH=":".join(str(p) for p in path), VZCAPS_HOST_CHIP=CHIP, **extra)
    if config:
        env["VZCAPS_CONFIG"] = str(config)
    return env


def conf(tmp_path, text):
    c = tmp_path / "vzcaps.conf"
    c.write_text(text)
    return c


def answers_through_the_shim(env):
    """`probe` started by name from a shell, as a job's step starts it: its families."""
    p = subprocess.run(["sh", "-c", "probe"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    runs = [r for r in parse_probe(p.stdout) if "families" in r]
    assert len(runs) == 1, p.stdout + p.stderr
    return runs[0]["families"]


# The gate's table: (name, PATH order, config text or None, extra environment).
TABLE = [
    ("auto on a known chip", "shims-first", None, {}),
    ("a config section", "shims-first", "[p]\nmatch = probe\napple_family_max = 1007\n", {}),
    ("family off", "shims-first", None, {"VZCAPS_APPLE_FAMILY_MAX": "off"}),
    ("callers none", "shims-first", None, {"VZCAPS_CALLERS": "none"}),
    ("stock_callers = *", "shims-first", "[p]\nmatch = probe\napple_family_max = auto\nstock_callers = *\n", {}),
    ("every caller listed stock", "shims-first",
     "[p]\nmatch = probe\napple_family_max = auto\ncallers = probe\nstock_callers = probe\n", {}),
    ("shims behind the real program", "real-first", None, {}),
    ("shims not on PATH", "no-shims", None, {}),
]


@pytest.mark.parametrize("name,order,config,extra", TABLE, ids=[t[0] for t in TABLE])
def test_the_gate_passes_exactly_when_the_run_changes_an_answer(fleet, name, order, config, extra):
    tmp_path, real, shims = fleet
    path = {"shims-first": [shims, real], "real-first": [real, shims], "no-shims": [real]}[order] + ["/usr/bin", "/bin"]
    env = env_for(path, conf(tmp_path, config) if config else None, **extra)
    gate = vz("check", "--strict", "--exe", "probe", env=env)
    changed = answers_through_the_shim(env) != STOCK_FAMILIES
    assert (gate.returncode == 0) == changed, (name, gate.stderr)
    if gate.returncode:
        assert gate.stderr.startswith("vzcaps check: --strict: probe would run stock: "), gate.stderr
    # the same verdict by the program's path as by its name (row 7)
    if order == "shims-first":
        by_path = vz("check", "--strict", "--exe", str(shims / "probe"), env=env)
        assert by_path.returncode == gate.returncode, by_path.stderr


def test_an_all_stock_caller_scope_is_stock(fleet):
    # row 4: callers = none was caught; stock_callers = * (every caller stock) exited 0
    tmp_path, real, shims = fleet
    c = conf(tmp_path, "[l]\nmatch = llama-server\napple_family_max = auto\nstock_callers = *\n")
    p = vz("check", "--strict", "--exe", "llama-server", env=env_for([shims, real, "/usr/bin", "/bin"], c))
    assert p.returncode == 1
    assert p.stderr == ("vzcaps check: --strict: llama-server would run stock: out of scope: stock_callers * leaves every "
                        "caller stock (callers *)\n")


@pytest.mark.parametrize("order", ["real-first", "no-shims"])
def test_a_program_path_resolves_past_its_shim_is_stock(fleet, order):
    # row 5: the shim directory behind the real program on PATH, or not on PATH at all
    tmp_path, real, shims = fleet
    path = ([real, shims] if order == "real-first" else [real]) + ["/usr/bin", "/bin"]
    p = vz("check", "--strict", "--exe", "probe", env=env_for(path))
    assert p.returncode == 1
    assert p.stderr == (f"vzcaps check: --strict: probe would run stock: probe on PATH resolves to {real}/probe, which is "
                        "not a vzcaps shim: a job that starts it runs it without the library (put the shim directory first "
                        "on PATH, or start it with vzcaps run)\n")
    assert vz("check", "--strict", "--exe", "probe", env=env_for([shims, real, "/usr/bin", "/bin"])).returncode == 0


def test_a_static_executable_is_stock(fleet):
    # row 6: check said "honoured" for a static ELF, which no dynamic loader (and no preload) reaches
    tmp_path, real, shims = fleet
    src = tmp_path / "s.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-static", "-o", str(real / "llama-server"), str(src)], check=True)
    env = env_for([shims, real, "/usr/bin", "/bin"])
    p = vz("check", "--strict", "--exe", "llama-server", env=env)
    assert p.returncode == 1
    assert "would run stock: the injection is ignored where the library would load" in p.stderr
    assert "a statically linked executable" in p.stderr
    plan = vz("check", "--exe", "llama-server", "--json", env=env)
    assert json.loads(plan.stdout)["launch"]["injection"] == "ignored"
    dry = vz("run", "--dry-run", "--", "llama-server", env=env)
    assert f"vzcaps run: warning: {real}/llama-server will ignore the library: a statically linked executable" in dry.stderr


def test_a_shim_given_by_path_runs_the_real_program_with_the_settings(fleet):
    # row 7: by path, run exec'd the shim with the library loaded; the library stripped VZCAPS_*
    # before the shim's own run read them (exit 125 on the rig, --family lost on a Mac)
    tmp_path, real, shims = fleet
    env = env_for([shims, real, "/usr/bin", "/bin"])
    for cmd in ("probe", str(shims / "probe")):
        p = vz("run", "--family", "1007", "--", cmd, env=env)
        assert p.returncode == 0, (cmd, p.stderr)
        fam = [r for r in parse_probe(p.stdout) if "families" in r][0]["families"]
        assert fam[1007] == 1 and fam[1008] == 0, (cmd, p.stdout)
        dry = vz("run", "--dry-run", "--family", "1007", "--", cmd, env=env)
        assert dry.stdout.rstrip("\n").endswith(f" {real}/probe"), (cmd, dry.stdout)


@pytest.mark.parametrize("kind", ["fifo", "directory", "not executable", "link loop"])
def test_a_program_exec_would_not_start_fails_the_gate(fleet, kind):
    # hostile: what PATH finds by that name is no program; the gate passed it (judged by the config alone)
    tmp_path, real, shims = fleet
    odd = tmp_path / "odd"
    odd.mkdir()
    target = odd / "llama-server"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "not executable":
        target.write_text("#!/bin/sh\n")
    else:
        target.symlink_to(target)
    p = vz("check", "--strict", "--exe", "llama-server", env=env_for([odd, "/usr/bin", "/bin"]))
    assert p.returncode == 1, p.stderr
    assert p.stderr.startswith("vzcaps check: --strict: llama-server would not start: llama-server: "), p.stderr
    assert len(p.stderr.splitlines()) == 1


def test_a_shim_whose_path_loops_through_shims_fails_the_gate(fleet):
    # hostile: the only llama-server after the shim directory is another vzcaps shim
    tmp_path, real, shims = fleet
    other = tmp_path / "other"
    assert subprocess.run([VZ, "shims", "--dir", str(other), "llama-server"], env=clean_env(), capture_output=True,
                          timeout=60).returncode == 0
    p = vz("check", "--strict", "--exe", "llama-server", env=env_for([shims, other, "/usr/bin", "/bin"]))
    assert p.returncode == 1 and "would not start: " in p.stderr and "refused, as starting one would loop" in p.stderr


@pytest.mark.parametrize("spelling", ["leading", "middle", "trailing"])
def test_an_empty_path_entry_is_the_current_directory_as_exec_reads_it(fleet, spelling):
    # hostile: an empty PATH entry is the current directory for execvp and every shell; check and
    # the shim read it as "/" ("%.*s" of "." with precision 0), so with PATH=:SHIMS:REAL and a
    # probe in the job's directory the shell ran ./probe stock and check --strict exited 0
    tmp_path, real, shims = fleet
    work = tmp_path / "work dir"
    work.mkdir()
    (work / "probe").symlink_to(BUILD / "probe")
    path = {"leading": f":{shims}:{real}:/usr/bin:/bin", "middle": f"{shims}::{real}:/usr/bin:/bin",
            "trailing": f"{shims}:/usr/bin:/bin:"}[spelling]
    env = clean_env(PATH=path, VZCAPS_HOST_CHIP=CHIP)
    gate = subprocess.run([VZ, "check", "--strict", "--exe", "probe"], env=env, cwd=work, capture_output=True,
                          text=True, timeout=60)
    run = subprocess.run(["sh", "-c", "probe"], env=env, cwd=work, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    changed = [r for r in parse_probe(run.stdout) if "families" in r][0]["families"] != STOCK_FAMILIES
    assert changed == (spelling != "leading"), (spelling, run.stderr)
    assert (gate.returncode == 0) == changed, (spelling, gate.stderr)
    if spelling == "leading":
        assert gate.stderr == ("vzcaps check: --strict: probe would run stock: probe on PATH resolves to ./probe, which is "
                               "not a vzcaps shim: a job that starts it runs it without the library (put the shim "
                               "directory first on PATH, or start it with vzcaps run)\n")
    else:  # the shim's real program is the next probe after the shim directory: ./probe for both
        plan = subprocess.run([VZ, "check", "--exe", "probe", "--json"], env=env, cwd=work, capture_output=True,
                              text=True, timeout=60)
        assert json.loads(plan.stdout)["launch"]["program"] in ("./probe", str(work / "probe")), plan.stdout
