"""vzcaps probe and verify on Linux: the one-line refusal, and their renderers through
--replay of saved child outputs (the JSON checked by a real parser)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, LINUX_ONLY, clean_env

VZ = str(BUILD / "vzcaps")
FAMS = [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002]
STOCK = {1001, 1002, 1003, 1004, 1005, 2002, 3001, 3002, 3003}


def answers(extra=(), **kw):
    a = {"device": "Apple Paravirtual device", "architecture": "air64_v26",
         "families": {str(f): f in STOCK or f in extra for f in FAMS}, "max_threadgroup_memory": 32768,
         "recommended_working_set_size": 5010800640, "max_buffer_length": 8589934592, "has_unified_memory": True}
    a.update(kw)
    return a


def vz(*args, env=None):
    return subprocess.run([VZ, *args], capture_output=True, text=True, env=env or clean_env(), timeout=60)


@LINUX_ONLY
def test_need_macos_on_linux():
    for cmd in ("probe", "verify"):
        for extra in ([], ["--json"]):
            p = vz(cmd, *extra)
            assert p.returncode == 3
            assert p.stdout == ""
            assert p.stderr.count("\n") == 1 and "needs a macOS Metal device" in p.stderr
    p = vz("run", "--verify", "--", "true", env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 3 and "needs a macOS Metal device" in p.stderr


def test_probe_replay(tmp_path):
    s, u = tmp_path / "s.json", tmp_path / "u.json"
    s.write_text(json.dumps(answers()))
    u.write_text(json.dumps(answers(extra={1006, 1007})))
    env = clean_env(VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)")
    p = vz("probe", "--json", "--replay", str(s), str(u), env=env)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["changed"] == [1006, 1007] and j["unexpected"] == []
    assert j["llama_gates"]["stock"] == {"simdgroup_reduction": False, "simdgroup_matrix_mul": False, "bfloat": False, "tensor": False}
    assert j["llama_gates"]["unlocked"] == {"simdgroup_reduction": True, "simdgroup_matrix_mul": True, "bfloat": True, "tensor": False}
    assert j["unlocked"]["families"]["1007"] is True and j["host_chip"] == "Apple M1 Ultra"
    # MTLDevice's name and architecture.name (issue 26 item 8)
    assert j["device"] == {"name": "Apple Paravirtual device", "architecture": {"name": "air64_v26"}}
    p = vz("probe", "--replay", str(s), str(u), env=env)
    assert "supportsFamily(Apple7 1007)" in p.stdout and "<- changed" in p.stdout and "simdgroup matrix mul." in p.stdout
    # a change beyond what the profile asked for is an error
    u.write_text(json.dumps(answers(extra={1006, 1007, 1008})))
    p = vz("probe", "--json", "--replay", str(s), str(u), env=env)
    assert p.returncode == 1
    assert json.loads(p.stdout)["unexpected"] == ["supportsFamily(Apple8 1008): yes, but the profile implies no"]
    p = vz("probe", "--replay", str(s), str(u), env=env)
    assert "ERROR: unexpected change: supportsFamily(Apple8 1008)" in p.stdout


def test_probe_json_reports_a_device_without_an_architecture_as_null(tmp_path):
    """A device that does not respond to architecture (before macOS 14): null, not a guess."""
    s, u = tmp_path / "s.json", tmp_path / "u.json"
    plain = answers()
    del plain["architecture"]
    s.write_text(json.dumps(plain))
    u.write_text(json.dumps(answers(extra={1006, 1007}, architecture=None)))
    p = vz("probe", "--json", "--replay", str(s), str(u), env=clean_env(VZCAPS_HOST_CHIP="Apple M1 (Virtual)"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["device"] == {"name": "Apple Paravirtual device", "architecture": {"name": None}}


def test_verify_replay(tmp_path):
    res = {"device": "Apple Paravirtual device", "ok": True, "nocopy_guest_fault": False, "checks": [
        {"name": "simd_reduce_96", "path": "SIMD-group reduction/shuffle", "result": "pass", "unlocked": True,
         "max_abs_error": 0, "max_rel_error": 0, "tolerance_abs": 0, "tolerance_rel": 0, "compared": 380, "mismatched": 0, "reason": None},
        {"name": "bfloat", "path": "bfloat storage, conversion, arithmetic", "result": "skipped", "unlocked": False,
         "max_abs_error": None, "max_rel_error": None, "tolerance_abs": 0, "tolerance_rel": 0, "compared": 0, "mismatched": 0,
         "reason": "not unlocked by this profile"}]}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(res))
    p = vz("verify", "--json", "--replay", str(f))
    assert p.returncode == 0
    j = json.loads(p.stdout)
    assert j["ok"] is True and [c["result"] for c in j["checks"]] == ["pass", "skipped"]
    assert j["checks"][1]["reason"] == "not unlocked by this profile" and j["checks"][1]["max_abs_error"] is None
    p = vz("verify", "--replay", str(f))
    assert "simd_reduce_96" in p.stdout and "380/380 elements" in p.stdout and "verdict: no unlocked path failed" in p.stdout
    res["checks"][0].update(result="fail", mismatched=3, max_abs_error=0.5, max_rel_error=0.25)
    f.write_text(json.dumps(res))
    p = vz("verify", "--replay", str(f))
    assert p.returncode == 1
    assert "377/380 elements" in p.stdout and "max abs err 0.5" in p.stdout and "verdict: FAIL" in p.stdout
    f.write_text("{")
    assert vz("verify", "--replay", str(f)).returncode == 1


def cache_key(chip, os_build, lib_sha, family, tg=0, ws=0, extras=()):
    """The cache-key rule of verify_cache_key, written again from its definition."""
    import hashlib
    text = f"vzcaps-verify-1|{chip}|{os_build}|{lib_sha}|{family}|{tg}|{ws}|" + "".join(f"{e}," for e in sorted(extras))
    return hashlib.sha256(text.encode()).hexdigest()


@LINUX_ONLY
def test_run_verify_uses_the_cached_verdict(tmp_path):
    import hashlib
    lib = hashlib.sha256((BUILD / "libvzcaps.so").read_bytes()).hexdigest()
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", XDG_CACHE_HOME=str(tmp_path))
    path = tmp_path / "vzcaps" / f"verify-{cache_key('Apple M2', '', lib, 1008)}.json"
    path.parent.mkdir()
    check = {"name": "simdgroup_mm_f16_13x7x11", "path": "SIMD-group matrix multiply (half)", "result": "fail",
             "unlocked": True, "max_abs_error": 3.5, "max_rel_error": 1.0, "tolerance_abs": 0.001, "tolerance_rel": 0,
             "compared": 143, "mismatched": 20, "reason": None}
    path.write_text(json.dumps({"device": "d", "ok": False, "nocopy_guest_fault": False, "checks": [check]}))
    p = vz("run", "--verify", "--", "sh", "-c", "echo ran", env=env)
    assert p.returncode == 125 and "ran" not in p.stdout
    assert "simdgroup_mm_f16_13x7x11 (SIMD-group matrix multiply (half))" in p.stderr and "--family 1006" in p.stderr
    check.update(result="pass", mismatched=0)
    path.write_text(json.dumps({"device": "d", "ok": True, "nocopy_guest_fault": False, "checks": [check]}))
    p = vz("run", "--verify", "--", "sh", "-c", "echo ran", env=env)
    assert p.returncode == 0 and p.stdout == "ran\n" and "cached verify verdict" in p.stderr
    # another profile has another key: no verdict, and none can be made on Linux
    p = vz("run", "--verify", "--family", "1007", "--", "sh", "-c", "echo ran", env=env)
    assert p.returncode == 3


@LINUX_ONLY
def test_run_verify_finds_a_cached_verdict_under_a_long_cache_home(tmp_path):
    # regression: the cache path was cut at 1200 bytes, so a long cache home never found it
    import hashlib
    lib = hashlib.sha256((BUILD / "libvzcaps.so").read_bytes()).hexdigest()
    home = tmp_path.joinpath(*["c" * 200] * 7)
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", XDG_CACHE_HOME=str(home))
    path = home / "vzcaps" / f"verify-{cache_key('Apple M2', '', lib, 1008)}.json"
    assert len(str(path)) > 1300
    path.parent.mkdir(parents=True)
    check = {"name": "simdgroup_mm_f16_13x7x11", "path": "SIMD-group matrix multiply (half)", "result": "pass",
             "unlocked": True, "max_abs_error": 0, "max_rel_error": 0, "tolerance_abs": 0.001, "tolerance_rel": 0,
             "compared": 143, "mismatched": 0, "reason": None}
    path.write_text(json.dumps({"device": "d", "ok": True, "nocopy_guest_fault": False, "checks": [check]}))
    p = vz("run", "--verify", "--", "sh", "-c", "echo ran", env=env)
    assert p.returncode == 0 and p.stdout == "ran\n" and f"cached verify verdict {path}" in p.stderr


@LINUX_ONLY
def test_without_a_home_no_verdict_is_taken_from_a_shared_directory(tmp_path):
    """regression: with HOME unset the cache was /tmp/.cache/vzcaps, where any user can leave a
    passing verdict, and run --verify took it; a relative XDG_CACHE_HOME was taken from the
    current directory. Without an absolute cache home there is no cache."""
    import hashlib
    lib = hashlib.sha256((BUILD / "libvzcaps.so").read_bytes()).hexdigest()
    name = f"verify-{cache_key('Apple M2', '', lib, 1008)}.json"
    check = {"name": "simdgroup_mm_f16_13x7x11", "path": "SIMD-group matrix multiply (half)", "result": "pass",
             "unlocked": True, "max_abs_error": 0, "max_rel_error": 0, "tolerance_abs": 0.001, "tolerance_rel": 0,
             "compared": 143, "mismatched": 0, "reason": None}
    verdict = json.dumps({"device": "d", "ok": True, "nocopy_guest_fault": False, "checks": [check]})
    shared = Path("/tmp/.cache/vzcaps")
    made = not shared.exists()
    try:
        shared.mkdir(parents=True, exist_ok=True)
    except PermissionError:  # another user's /tmp/.cache: only root can plant a verdict there
        pytest.skip(f"needs root: {shared} cannot be made by uid {os.getuid()} here (another user's /tmp/.cache)")
    (shared / name).write_text(verdict)
    (tmp_path / "relative" / "vzcaps").mkdir(parents=True)
    (tmp_path / "relative" / "vzcaps" / name).write_text(verdict)
    try:
        for xdg in (None, "relative"):
            env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
            env.pop("HOME", None)
            env.pop("XDG_CACHE_HOME", None)
            if xdg:
                env["XDG_CACHE_HOME"] = xdg
            p = subprocess.run([VZ, "run", "--verify", "--", "sh", "-c", "echo ran"], capture_output=True, text=True,
                               env=env, cwd=tmp_path, timeout=60)
            assert p.returncode == 3 and "ran" not in p.stdout and "cached" not in p.stderr, (xdg, p.stderr)
    finally:
        (shared / name).unlink()
        if made:
            shutil.rmtree(shared)


def test_replay_errors_name_the_file(tmp_path):
    missing = tmp_path / "none.json"
    p = vz("verify", "--replay", str(missing))
    assert p.returncode == 1 and p.stderr.startswith(f"vzcaps verify: {missing}: cannot open") and p.stderr.count("\n") == 1
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    p = vz("verify", "--replay", str(bad))
    assert p.stderr == f"vzcaps verify: {bad}: not a saved verify result\n"
    good = tmp_path / "s.json"
    good.write_text(json.dumps(answers()))
    p = vz("probe", "--replay", str(good), str(bad))
    assert p.returncode == 1 and p.stderr.startswith(f"vzcaps probe: {bad}: probe output is not a JSON object")
    p = vz("probe", "--replay", str(good), str(missing))
    assert p.returncode == 1 and p.stderr.startswith(f"vzcaps probe: {missing}: cannot open")
    # an object without the answers is not a result with every answer unknown
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    p = vz("probe", "--replay", str(empty), str(empty))
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == f'vzcaps probe: {empty}: not a saved probe result (no "device" string and "families" object)\n'
    nofam = tmp_path / "nofam.json"
    nofam.write_text(json.dumps({"device": "d"}))
    p = vz("probe", "--replay", str(good), str(nofam))
    assert p.returncode == 1 and "not a saved probe result" in p.stderr


def test_replay_reads_large_files_whole(tmp_path):
    """A saved result larger than any fixed buffer is read whole, not cut short."""
    res = {"device": "d", "ok": True, "nocopy_guest_fault": False, "reason_padding": "x" * 200000, "checks": [
        {"name": "bfloat", "path": "p", "result": "pass", "unlocked": True, "max_abs_error": 0, "max_rel_error": 0,
         "tolerance_abs": 0, "tolerance_rel": 0, "compared": 3, "mismatched": 0, "reason": None}]}
    f = tmp_path / "big.json"
    f.write_text(json.dumps(res))
    p = vz("verify", "--replay", str(f))
    assert p.returncode == 0 and "3/3 elements" in p.stdout
