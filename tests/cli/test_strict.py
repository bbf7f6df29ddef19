"""vzcaps check --strict (issue 26 item 5): a CI gate that exits 1, with the reason on standard
error, when the program would run stock (refused, off, out of scope, nothing to change), and 0
when the library would change its answers."""
import json
import subprocess

import pytest

from conftest import BUILD, LINUX_ONLY, clean_env

VZ = str(BUILD / "vzcaps")


def check(*args, **env):
    return subprocess.run([VZ, "check", *args], env=clean_env(**env), capture_output=True, text=True, timeout=30)


def test_strict_passes_for_a_program_that_unlocks():
    p = check("--strict", "--exe", "llama-server", VZCAPS_HOST_CHIP="Apple M2 Pro")
    assert p.returncode == 0 and p.stderr == ""
    assert check("--exe", "llama-server", "--strict", "--json", VZCAPS_HOST_CHIP="Apple M2 Pro").returncode == 0


@pytest.mark.parametrize("args,env,reason", [
    (["--exe", "llama-server"], {}, "refused: vzcaps run's implied --family=auto needs the host chip"),
    (["--exe", "llama-server", "--family", "off"], {"VZCAPS_HOST_CHIP": "Apple M2 Pro"}, "off: "),
    (["--exe", "llama-server", "--bare"], {"VZCAPS_HOST_CHIP": "Apple M2 Pro"}, "out of scope: nothing configures vzcaps"),
    (["--exe", "llama-server"], {"VZCAPS_HOST_CHIP": "Apple M2 Pro", "VZCAPS_CALLERS": "none"}, "out of scope: callers is empty"),
])
def test_strict_fails_for_a_program_that_would_run_stock(args, env, reason):
    p = check("--strict", *args, **env)
    assert p.returncode == 1
    assert p.stderr.splitlines()[-1].startswith("vzcaps check: --strict: llama-server would run stock: " + reason), p.stderr
    # without --strict the same view is only explained: exit 0
    assert check(*args, **env).returncode == 0


def test_strict_is_in_help_man_and_completions():
    assert "--strict" in subprocess.run([VZ, "help", "check"], capture_output=True, text=True).stdout
    assert "\\-\\-strict" in subprocess.run([VZ, "__man"], capture_output=True, text=True).stdout
    for shell in ("bash", "zsh", "fish"):
        assert "strict" in subprocess.run([VZ, "__completions", shell], capture_output=True, text=True).stdout


@LINUX_ONLY  # the rig's PATH and links
def test_strict_fails_for_a_shim_whose_real_program_is_missing(tmp_path):
    # check said "it exits 127" for the shimmed name and --strict still exited 0: the gate passed
    # a job whose llama-server cannot start
    shims = tmp_path / "shims"
    assert subprocess.run([VZ, "shims", "--dir", str(shims), "llama-server"], env=clean_env(), capture_output=True,
                          timeout=30).returncode == 0
    p = check("--strict", "--exe", "llama-server", VZCAPS_HOST_CHIP="Apple M2 Pro", PATH=f"{shims}:/usr/bin:/bin")
    assert p.returncode == 1, p.stderr
    assert p.stderr == (f"vzcaps check: --strict: llama-server would not start: llama-server on PATH is a vzcaps shim "
                        f"({shims}/llama-server), and no llama-server on PATH after the shim directory {shims}: it exits "
                        "127\n")


def test_the_gates_line_and_json_reason_carry_the_cause_and_the_fix(tmp_path):
    """issue 45: a config section left a program stock, and --strict's one line on standard error
    (all action.yml shows; it discards standard output) said only "refused: profile [llama] of
    FILE", as did --json's reason; the cause and the fix were on standard output alone."""
    conf = tmp_path / "vzcaps.conf"
    conf.write_text("[llama]\nmatch = llama-server\napple_family_max = auto\n")
    conf.chmod(0o644)
    p = check("--strict", "--config", str(conf), "--exe", "llama-server")
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1, p.stderr
    reason = (f"refused: profile [llama] of {conf}; {conf}:3: apple_family_max=auto needs the host chip, which could not be "
              'detected: set VZCAPS_HOST_CHIP, e.g. "Apple M2 Pro"')
    assert p.stderr == f"vzcaps check: --strict: llama-server would run stock: {reason}\n", p.stderr
    j = check("--strict", "--json", "--config", str(conf), "--exe", "llama-server")
    assert j.returncode == 1 and json.loads(j.stdout)["reason"] == reason, j.stdout
