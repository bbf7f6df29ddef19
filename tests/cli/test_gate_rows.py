"""check --strict is the run's own decision (issue 37, rows 1-7): for each class where the gate and
the job drifted apart, the job is started as a CI step starts it (`sh -c NAME` through the shim on
PATH), the stand-in Metal client's answers are read, and the gate must say what happened."""
import json
import shutil
import subprocess

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the rig: LD_PRELOAD, ELF, build/probe)

VZ = str(BUILD / "vzcaps")
CHIP = "Apple M2 Pro"  # auto: Apple8


def vz(*args, env, vzcaps=VZ):
    return subprocess.run([str(vzcaps), *args], env=env, capture_output=True, text=True, timeout=60)


def shims_of(vzcaps, d, *names):
    p = subprocess.run([str(vzcaps), "shims", "--dir", str(d), *names], env=clean_env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return d


def env_for(*path, config=None, **extra):
    env = clean_env(PATH=":".join(str(p) for p in [*path, "/usr/bin", "/bin"]), VZCAPS_HOST_CHIP=CHIP, **extra)
    if config is not None:
        env["VZCAPS_CONFIG"] = str(config)
    return env


def job(name, env):
    """NAME started from a shell as a job's step starts it: the families it saw."""
    p = subprocess.run(["sh", "-c", name], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    runs = [r for r in parse_probe(p.stdout) if "families" in r]
    assert len(runs) == 1, p.stdout + p.stderr
    return runs[0]["families"]


def gate(env, *names, vzcaps=VZ):
    args = ["check", "--strict"]
    for n in names:
        args += ["--exe", n]
    return vz(*args, env=env, vzcaps=vzcaps)


@pytest.fixture
def real(tmp_path):
    d = tmp_path / "real"
    d.mkdir()
    (d / "probe").symlink_to(BUILD / "probe")
    return d


def installation(root, with_library=True):
    """A copy of vzcaps (and its library) at root/bin: another installation."""
    b = root / "bin"
    b.mkdir(parents=True)
    shutil.copy(BUILD / "vzcaps", b / "vzcaps")
    if with_library:
        shutil.copy(BUILD / "libvzcaps.so", b / "libvzcaps.so")
    return b / "vzcaps"


# ---- row 1: a shimmed #! script is configured under the script's own name, everywhere ----

@pytest.fixture
def script(tmp_path, real):
    (real / "probe2").symlink_to(BUILD / "probe")
    s = real / "tool"
    s.write_text("#!/usr/bin/env probe2\n")
    s.chmod(0o755)
    return shims_of(VZ, tmp_path / "shims", "tool")


@pytest.mark.parametrize("family", ["off", "1007"])
def test_a_shimmed_script_is_configured_under_its_own_name(tmp_path, real, script, family):
    c = tmp_path / "vzcaps.conf"
    c.write_text(f"[t]\nmatch = tool\napple_family_max = {family}\n")
    env = env_for(script, real, config=c)
    fam = job("tool", env)
    g = gate(env, "tool")
    if family == "off":  # the user turned it off for the script: the job is stock, and the gate says so
        assert fam == STOCK_FAMILIES
        assert g.returncode == 1, g.stderr
    else:  # the script's section applies in the job: Apple7, not the implied auto (Apple8)
        assert (fam[1007], fam[1008]) == (1, 0), fam
        assert g.returncode == 0, g.stderr


@pytest.mark.parametrize("default", ["", "[default]\napple_family_max = 1004\n"])
def test_without_a_section_for_the_script_its_interpreters_applies(tmp_path, real, script, default):
    c = tmp_path / "vzcaps.conf"
    c.write_text(f"{default}[i]\nmatch = probe2\napple_family_max = 1007\n")
    env = env_for(script, real, config=c)
    fam = job("tool", env)
    assert (fam[1007], fam[1008]) == (1, 0), fam
    assert gate(env, "tool").returncode == 0


def test_a_shimmed_scripts_stats_record_names_the_script(tmp_path, real, script):
    # issue 39 row 12: hooked, the record named the interpreter (probe2); left stock, the script
    log = tmp_path / "stats.log"
    c = tmp_path / "vzcaps.conf"
    c.write_text(f"log_file = {log}\n[t]\nmatch = tool\napple_family_max = 1007\n")
    job("tool", env_for(script, real, config=c))
    c.write_text(f"log_file = {log}\n[t]\nmatch = tool\napple_family_max = auto\n")
    env = env_for(script, real, config=c)
    del env["VZCAPS_HOST_CHIP"]  # auto without a host chip: refused, and the shim starts it stock
    assert job("tool", env) == STOCK_FAMILIES
    names = [r["program"] for r in map(json.loads, log.read_text().splitlines()) if r["event"] in ("hooked", "left_stock")]
    assert names == ["tool", "tool"], log.read_text()


# ---- row 2: a wrapper in a shell outside the SIP paths that execs the real program ----

def test_a_wrapper_outside_the_sip_paths_hands_the_library_on(tmp_path, real):
    sh = tmp_path / "nix" / "bin"
    sh.mkdir(parents=True)
    shutil.copy("/bin/bash", sh / "bash")
    w = real / "wrapped"
    w.write_text(f"#!{sh}/bash\nexec {BUILD}/probe \"$@\"\n")
    w.chmod(0o755)
    shims = shims_of(VZ, tmp_path / "shims", "wrapped")
    env = env_for(shims, real)
    assert job("wrapped", env) != STOCK_FAMILIES
    g = gate(env, "wrapped")
    assert g.returncode == 0, g.stderr


# ---- row 3: another installation's shim first on PATH ----

def test_another_installations_shim_is_a_shim(tmp_path, real):
    other = installation(tmp_path / "other")
    shims = shims_of(other, tmp_path / "other-shims", "probe")
    env = env_for(shims, real)
    assert job("probe", env) != STOCK_FAMILIES
    g = gate(env, "probe")
    assert g.returncode == 0, g.stderr


# ---- row 4: a ceiling the guest already answers changes nothing ----

@pytest.mark.parametrize("family", ["1005", "1003"])
def test_a_family_the_guest_already_answers_is_stock(tmp_path, real, family):
    shims = shims_of(VZ, tmp_path / "shims", "probe")
    env = env_for(shims, real, VZCAPS_APPLE_FAMILY_MAX=family)
    assert job("probe", env) == STOCK_FAMILIES
    g = gate(env, "probe")
    assert g.returncode == 1, g.stderr
    assert g.stderr.startswith("vzcaps check: --strict: probe would run stock: nothing to change: "), g.stderr


# ---- row 5: a caller scope that leaves out the program's own image ----

@pytest.mark.parametrize("scope", ["callers = libggml*", "stock_callers = probe"])
def test_a_scope_without_the_programs_own_image_is_stock(tmp_path, real, scope):
    shims = shims_of(VZ, tmp_path / "shims", "probe")
    c = tmp_path / "vzcaps.conf"
    c.write_text(f"[p]\nmatch = probe\napple_family_max = auto\n{scope}\n")
    env = env_for(shims, real, config=c)
    assert job("probe", env) == STOCK_FAMILIES
    g = gate(env, "probe")
    assert g.returncode == 1, g.stderr
    assert "would run stock: out of scope: " in g.stderr, g.stderr


# ---- row 6: the shim cannot load the library ----

@pytest.mark.parametrize("how", ["no library", "a space in its path"])
def test_a_library_the_shim_cannot_load_is_stock(tmp_path, real, how):
    copy = installation(tmp_path / ("with space" if how == "a space in its path" else "bare"), how != "no library")
    shims = shims_of(copy, tmp_path / "shims", "probe")
    env = env_for(shims, real)
    assert job("probe", env) == STOCK_FAMILIES
    assert vz("run", "--", "probe", env=env, vzcaps=copy).returncode == 125
    g = gate(env, "probe", vzcaps=copy)
    assert g.returncode == 1, g.stderr
    assert "probe would run stock: " in g.stderr


# ---- row 7: every --exe is checked ----

@pytest.mark.parametrize("order", ["stock first", "stock last"])
def test_every_program_named_is_checked(tmp_path, real, order):
    (real / "other").symlink_to(BUILD / "probe")
    shims = shims_of(VZ, tmp_path / "shims", "probe")
    env = env_for(shims, real)
    assert job("probe", env) != STOCK_FAMILIES and job("other", env) == STOCK_FAMILIES
    names = ["other", "probe"] if order == "stock first" else ["probe", "other"]
    g = gate(env, *names)
    assert g.returncode == 1, g.stderr
    assert "vzcaps check: --strict: other would run stock: " in g.stderr, g.stderr


# ---- hostile: the handed name reaches only the script's own process ----

def test_a_wrappers_child_starts_stock_and_a_stale_name_is_dropped(tmp_path, real):
    w = real / "wrapped"
    w.write_text(f"#!/bin/sh\n{BUILD}/probe \"$@\"\n")  # a child, not an exec: stock, as every child
    w.chmod(0o755)
    shims = shims_of(VZ, tmp_path / "shims", "wrapped", "probe")
    env = env_for(shims, real)
    assert job("wrapped", env) == STOCK_FAMILIES
    # a VZCAPS_PROGRAM naming another process, left in the environment, never reaches the program
    env["VZCAPS_PROGRAM"] = "1:other"
    assert job("probe", env) != STOCK_FAMILIES


# ---- words: the verdict in --json, a typo of a known client, a repeated --exe ----

def test_strict_json_carries_the_verdict_and_its_reason(tmp_path, real):
    shims = shims_of(VZ, tmp_path / "shims", "probe")
    for env, verdict in ((env_for(shims, real), "unlocked"), (env_for(real), "stock"),
                         (env_for(shims, real, VZCAPS_APPLE_FAMILY_MAX="1005"), "stock")):
        p = vz("check", "--strict", "--json", "--exe", "probe", env=env)
        doc = json.loads(p.stdout)
        assert doc["verdict"] == verdict and p.returncode == (verdict == "stock"), (verdict, p.stdout)
        if verdict == "stock":
            assert p.stderr == f"vzcaps check: --strict: probe would run stock: {doc['reason']}\n"
        else:
            assert doc["reason"].startswith("probe starts ") and p.stderr == ""
    assert "verdict" not in json.loads(vz("check", "--json", "--exe", "probe", env=env_for(shims, real)).stdout)


@pytest.mark.parametrize("name", ["lama-server", "llama-sever", "olama"])
def test_strict_names_the_known_client_a_typo_meant(tmp_path, real, name):
    p = gate(env_for(real), name)
    assert p.returncode == 1
    near = {"lama-server": "llama-server", "llama-sever": "llama-server", "olama": "ollama"}[name]
    assert p.stderr == (f"vzcaps check: --strict: --exe \"{name}\" is not on PATH and is no client vzcaps knows: "
                        f"did you mean {near}?\n"), p.stderr
    # the same name on PATH is a program of its own: no suggestion
    (real / name).symlink_to(BUILD / "probe")
    assert "did you mean" not in gate(env_for(real), name).stderr


def test_a_repeated_exe_is_refused_without_strict_and_with_json(tmp_path, real):
    env = env_for(real)
    for args in (["check", "--exe", "a", "--exe", "b"], ["check", "--strict", "--json", "--exe", "a", "--exe=b"]):
        p = vz(*args, env=env)
        assert p.returncode == 2 and "--exe is given 2 times" in p.stderr, p.stderr


def test_the_dry_run_line_of_a_script_runs_under_the_scripts_name(tmp_path, real, script):
    # the line a shell runs as it is: the pid is not known then, so the name is left for the
    # first process that reads it (VZCAPS_PROGRAM=0000000000:tool), which claims it
    c = tmp_path / "vzcaps.conf"
    c.write_text("[t]\nmatch = tool\napple_family_max = 1007\n")
    env = env_for(script, real, config=c)
    dry = vz("run", "--dry-run", "--", "tool", env=env)
    assert dry.returncode == 0 and "VZCAPS_PROGRAM=0000000000:tool " in dry.stdout, dry.stdout
    p = subprocess.run(["sh", "-c", dry.stdout], env=env, capture_output=True, text=True, timeout=60)
    fam = [r for r in parse_probe(p.stdout) if "families" in r][0]["families"]
    assert (fam[1007], fam[1008]) == (1, 0), p.stdout + p.stderr


# ---- issue 44 item 8: a #! line that reaches a shim (the interpreter by its path, env's NAME) ----

@pytest.mark.parametrize("line", ["#!{shims}/probe2\n", "#!/usr/bin/env probe2\n"], ids=["interpreter by path", "env NAME"])
@pytest.mark.parametrize("section", ["probe2", "viashim"])
@pytest.mark.parametrize("shimmed", [True, False], ids=["script shimmed", "script not shimmed"])
def test_a_script_whose_line_reaches_a_shim_is_judged_as_its_job(tmp_path, real, line, section, shimmed):
    """A script no shim stands for runs through the interpreter's shim (the kernel, or env's
    execvp, starts it): configured under the interpreter's name. A shimmed one is started by run,
    which starts the real interpreter directly under the script's own section (else the
    interpreter's). The gate must say what the job got, in all four cases."""
    (real / "probe2").symlink_to(BUILD / "probe")
    shims = shims_of(VZ, tmp_path / "shims", "probe2", *(["viashim"] if shimmed else []))
    s = real / "viashim"
    s.write_text(line.format(shims=shims))
    s.chmod(0o755)
    c = tmp_path / "vzcaps.conf"
    c.write_text(f"[default]\napple_family_max = off\n[s]\nmatch = {section}\napple_family_max = 1007\n")  # only [s] turns it on
    env = env_for(shims, real, config=c)
    fam = job("viashim", env)
    unlocked = fam[1007] == 1
    assert unlocked == (section == "probe2" or shimmed), fam  # what the job got: the section its starter reads
    g = gate(env, "viashim")
    assert (g.returncode == 0) == unlocked, g.stderr
