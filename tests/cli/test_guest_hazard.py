"""The macOS 14 guest hazard (issue 39 item 7): newBufferWithBytesNoCopy over a file-backed mmap
returns stale data in macOS 14 guests, stock too. doctor reads the nocopy_mmap verdict `vzcaps
verify` cached (doctor --json: nocopy_mmap), and names the hazard on a macOS 14 guest (the text
and the macOS-version rule: tests/unit/cli_commands.c, test_nocopy_guest_hazard); run --verify's
refusal says which workaround applies. Here on the rig: the cache and the refusal, whose key is
the rig build's (libvzcaps.so, no macOS build)."""
import hashlib
import json
import os
import subprocess

from conftest import BUILD, LINUX_ONLY, clean_env

pytestmark = LINUX_ONLY  # the verdict's key is the rig build's: its libvzcaps.so, no macOS build
VZ = str(BUILD / "vzcaps")


def cache_file(cache_home, family=1008):
    """Where `vzcaps verify` caches its verdict for Apple M2 with no profile (the rule of
    verify_cache_key, written again: tests/cli/test_probe_verify.py)."""
    lib = hashlib.sha256((BUILD / "libvzcaps.so").read_bytes()).hexdigest()
    key = hashlib.sha256(f"vzcaps-verify-1|Apple M2||{lib}|{family}|0|0|".encode()).hexdigest()
    path = cache_home / "vzcaps" / f"verify-{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def check(name, result, unlocked=True, reason=None):
    return {"name": name, "path": name.replace("_", " "), "result": result, "unlocked": unlocked, "max_abs_error": 0,
            "max_rel_error": 0, "tolerance_abs": 0, "tolerance_rel": 0, "compared": 64, "mismatched": 64 if result == "fail" else 0,
            "reason": reason}


def verdict(*checks, guest_fault=False):
    ok = not any(c["result"] == "fail" and c["unlocked"] for c in checks)
    return json.dumps({"device": "Apple Paravirtual device", "ok": ok, "nocopy_guest_fault": guest_fault, "checks": list(checks)})


def env_for(tmp_path):
    return clean_env(VZCAPS_HOST_CHIP="Apple M2", XDG_CACHE_HOME=str(tmp_path / "cache"))


def vz(*args, env):
    return subprocess.run([VZ, *args], env=env, capture_output=True, text=True, timeout=60)


def run_verify(env):
    return vz("run", "--verify", "--", "sh", "-c", "echo ran", env=env)


def test_run_verify_says_the_nocopy_workaround_when_nocopy_mmap_failed(tmp_path):
    """The refusal named only the GPU paths' fix (a lower claim), which does nothing for a
    NoCopy buffer over a mapped file."""
    env = env_for(tmp_path)
    f = cache_file(tmp_path / "cache")
    f.write_text(verdict(check("simd_reduce", "pass"), check("nocopy_mmap", "fail", reason="stale data")))
    p = run_verify(env)
    assert p.returncode == 125 and p.stdout == "", p.stderr
    assert "  nocopy_mmap (nocopy mmap): stale data\n" in p.stderr
    last = p.stderr.splitlines()[-1]
    assert last.startswith("vzcaps run: for nocopy_mmap run the client with --no-mmap (llama.cpp: the model is read, not mapped), "
                           "or set GGML_METAL_SHARED_BUFFERS_DISABLE=1 for ggml clients"), last
    assert "--family 1006" not in last and "or run without --verify to accept the risk" in last and str(f) in last
    # a GPU path failed as well: both workarounds
    f.write_text(verdict(check("simdgroup_mm", "fail"), check("nocopy_mmap", "fail")))
    last = run_verify(env).stderr.splitlines()[-1]
    assert "--family 1006" in last and "--no-mmap" in last and "GGML_METAL_SHARED_BUFFERS_DISABLE=1" in last
    # a GPU path only: the lower claim, not the mmap workaround
    f.write_text(verdict(check("simdgroup_mm", "fail"), check("nocopy_mmap", "pass")))
    last = run_verify(env).stderr.splitlines()[-1]
    assert "--family 1006" in last and "--no-mmap" not in last
    # failing stock too is the guest's fault: not counted against the unlocked paths, the program starts
    f.write_text(verdict(check("nocopy_mmap", "fail", unlocked=False), guest_fault=True))
    p = run_verify(env)
    assert p.returncode == 0 and p.stdout == "ran\n", p.stderr


def doctor_nocopy(env):
    p = vz("doctor", "--json", env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_doctor_reads_the_cached_nocopy_verdict(tmp_path):
    env = env_for(tmp_path)
    d = doctor_nocopy(env)
    assert d["nocopy_mmap"] == {"verdict": "unchecked", "verify_cache": None}
    f = cache_file(tmp_path / "cache")
    for checks, fault, want in [((check("nocopy_mmap", "pass"),), False, "pass"),
                                ((check("nocopy_mmap", "fail", unlocked=False),), True, "fail_stock"),
                                ((check("nocopy_mmap", "fail"),), False, "fail"),
                                ((check("nocopy_mmap", "skipped", unlocked=False),), False, "skipped"),
                                ((check("simd_reduce", "pass"),), False, "unchecked")]:
        f.write_text(verdict(*checks, guest_fault=fault))
        d = doctor_nocopy(env)
        assert d["nocopy_mmap"] == {"verdict": want, "verify_cache": str(f)}, want
        # not macOS: the hazard is never a pitfall here, whatever the verdict
        assert not any("newBufferWithBytesNoCopy" in p for p in d["pitfalls"])
    # the verdict of another profile is not this view's
    d = json.loads(vz("doctor", "--json", "--family", "1007", env=env).stdout)
    assert d["nocopy_mmap"]["verdict"] == "unchecked" and d["nocopy_mmap"]["verify_cache"] is None
    cache_file(tmp_path / "cache", family=1007).write_text(verdict(check("nocopy_mmap", "fail")))
    d = json.loads(vz("doctor", "--json", "--family", "1007", env=env).stdout)
    assert d["nocopy_mmap"]["verdict"] == "fail"


def test_doctor_takes_no_verdict_from_what_is_not_one(tmp_path):
    """A cached file that is garbage, a directory, a FIFO (never waited on) or a link to another
    user's file in a shared place is no verdict: unchecked, and doctor still answers."""
    env = env_for(tmp_path)
    f = cache_file(tmp_path / "cache")
    f.write_text("{not json")
    assert doctor_nocopy(env)["nocopy_mmap"] == {"verdict": "unchecked", "verify_cache": None}
    f.unlink()
    f.mkdir()
    assert doctor_nocopy(env)["nocopy_mmap"]["verdict"] == "unchecked"
    f.rmdir()
    os.mkfifo(f)
    p = subprocess.run([VZ, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=20)  # never waits on it
    assert json.loads(p.stdout)["nocopy_mmap"]["verdict"] == "unchecked"
    f.unlink()
    # a link in the user's own cache is read, as run --verify reads it
    other = tmp_path / "elsewhere.json"
    other.write_text(verdict(check("nocopy_mmap", "fail")))
    f.symlink_to(other)
    assert doctor_nocopy(env)["nocopy_mmap"]["verdict"] == "fail"
    f.unlink()
    # no absolute cache home: no cache at all (never a verdict from a relative or shared directory)
    f.write_text(verdict(check("nocopy_mmap", "fail")))  # where a relative "cache" would lead from tmp_path
    env2 = clean_env(VZCAPS_HOST_CHIP="Apple M2", HOME="relative", XDG_CACHE_HOME="cache")
    p = subprocess.run([VZ, "doctor", "--json"], env=env2, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert json.loads(p.stdout)["nocopy_mmap"] == {"verdict": "unchecked", "verify_cache": None}


def test_doctor_names_a_verdict_under_a_long_cache_home_whole(tmp_path):
    home = tmp_path
    for i in range(8):
        home = home / (str(i) * 200)
    f = cache_file(home)
    f.write_text(verdict(check("nocopy_mmap", "fail")))
    d = doctor_nocopy(clean_env(VZCAPS_HOST_CHIP="Apple M2", XDG_CACHE_HOME=str(home)))
    assert len(str(f)) > 1600 and d["nocopy_mmap"] == {"verdict": "fail", "verify_cache": str(f)}
