"""Standard output is a file too: every command that prints exits non-zero, with one line on
standard error, when its standard output is full (/dev/full) or closed (>&-)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, FIXTURES, LINUX_ONLY, ROOT, clean_env

sys.path.insert(0, str(ROOT / "tests" / "macho"))
import machogen as mg  # noqa: E402

VZ = str(BUILD / "vzcaps")
S, U = str(FIXTURES / "stock-guest.json"), str(FIXTURES / "unlocked-guest.json")
FAMS = [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002]
STOCK = {1001, 1002, 1003, 1004, 1005, 2002, 3001, 3002, 3003}

COMMANDS = {
    "help": ["help"],
    "help-run": ["help", "run"],
    "--help": ["run", "--help"],
    "--version": ["--version"],
    "check": ["check", "--chip", "Apple M2"],
    "check-json": ["check", "--chip", "Apple M2", "--json"],
    "doctor": ["doctor"],
    "doctor-json": ["doctor", "--json"],
    "doctor-bundle": ["doctor", "--bundle", "{tmp}/bundle"],
    "inspect": ["inspect", "{macho}"],
    "inspect-json": ["inspect", "--json", "{macho}"],
    "report": ["report", "--stock", S, "--unlocked", U],
    "report-json": ["report", "--json", "--stock", S, "--unlocked", U],
    "report-svg": ["report", "--svg", "-", "--stock", S, "--unlocked", U],
    "report-csv": ["report", "--csv", "-", "--stock", S, "--unlocked", U],
    "report-md": ["report", "--md", "-", "--stock", S, "--unlocked", U],
    "launchd": ["launchd", "--label", "com.example.x", "--family", "1007", "--", "/bin/true"],
    "run-dry-run": ["run", "--dry-run", "--family", "1007", "--", "/bin/true"],
    "probe-replay": ["probe", "--replay", "{answers}", "{unlocked}"],
    "verify-replay": ["verify", "--replay", "{verify}"],
    "stats": ["stats", "--log-file", "{tmp}/usage.log"],
    "stats-json": ["stats", "--json", "--log-file", "{tmp}/usage.log"],
    "completions": ["__completions", "bash"],
    "man": ["__man"],
}

if sys.platform.startswith("linux"):  # the stand-in llama-bench runs through the Linux test build's LD_PRELOAD
    SI = ROOT / "tests" / "cli" / "standins"
    COMMANDS["bench"] = ["bench", "-m", "{model}", "--llama-bench", str(SI / "llama-bench"), "--llama-perplexity",
                         str(SI / "llama-perplexity"), "--out", "{tmp}/evidence"]


def args_for(name, tmp_path):
    macho = tmp_path / "lib.dylib"
    macho.write_bytes(mg.build())
    answers, unlocked = tmp_path / "answers.json", tmp_path / "unlocked.json"
    for path, fams in ((answers, STOCK), (unlocked, STOCK | {1006, 1007, 1008})):
        path.write_text(json.dumps({"device": "d", "architecture": "a", "families": {str(f): f in fams for f in FAMS},
                                    "max_threadgroup_memory": 32768, "recommended_working_set_size": 5010800640,
                                    "max_buffer_length": 8589934592, "has_unified_memory": True}))
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(256))
    verify = tmp_path / "verify.json"
    verify.write_text(json.dumps({"device": "d", "ok": True, "nocopy_guest_fault": False, "checks": []}))
    return [a.format(tmp=tmp_path, macho=macho, answers=answers, unlocked=unlocked, verify=verify, model=model) for a in COMMANDS[name]]


def run(args, stdout, preexec=None):
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    return subprocess.run([VZ, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, timeout=60,
                          preexec_fn=preexec)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_that_succeeds_with_a_working_standard_output(tmp_path, name):
    p = run(args_for(name, tmp_path), subprocess.PIPE)
    assert p.returncode == 0, p.stderr
    assert p.stdout


@LINUX_ONLY  # /dev/full
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_full_standard_output_is_an_error(tmp_path, name):
    # regression: with >/dev/full every command exited 0 and said nothing
    with open("/dev/full", "w") as full:
        p = run(args_for(name, tmp_path), full)
    assert p.returncode == 1, p.stderr
    # the reason, or, when the output outgrew stdio's buffer and an earlier write failed, the
    # plain statement (stdio does not keep the reason; none is made up)
    assert p.stderr.splitlines()[-1] in ("vzcaps: cannot write standard output: No space left on device",
                                         "vzcaps: cannot write standard output: a write failed (stdio does not keep the reason)")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_closed_standard_output_is_an_error(tmp_path, name):
    # regression: with >&- every command exited 0 and said nothing
    p = run(args_for(name, tmp_path), None, preexec=lambda: os.close(1))
    assert p.returncode == 1, p.stderr
    assert p.stderr.splitlines()[-1] == "vzcaps: cannot write standard output: Bad file descriptor"
