"""Caller-scoped answers on the GNU-runtime rig: one process, one device, three client
libraries (named like ggml's, PyTorch's and another) that each ask from their own code."""
import json
import os
import subprocess

import pytest

from conftest import BUILD, STOCK_FAMILIES, STOCK_WS, clean_env, parse_probe, require_built

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

GGML, TORCH, OTHER = "libggml-metal.so", "libtorch_cpu.so", "libother-client.so"


def callers(env, *args, lib=None, preload_extra=None):
    env = dict(env)
    env["LD_PRELOAD"] = preload_extra or str(lib or BUILD / "libvzcaps.so")
    p = subprocess.run([str(BUILD / "callers"), *args], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got, threads = {}, None
    for line in p.stdout.splitlines():
        w = line.split()
        if w[0] == "caller":
            got[w[1]] = {"family": int(w[3]), "tg": int(w[5]), "ws": int(w[7]), "repeat": w[9]}
        elif w[0] == "threads":
            threads = int(w[3])
    return got, threads, p.stderr


def fam(got):
    return {k: v["family"] for k, v in got.items()}


M1 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M1")


def test_default_scope_keeps_pytorch_stock():
    got, _, err = callers(clean_env(**M1))
    assert fam(got) == {GGML: 1, TORCH: 0, OTHER: 1}
    assert all(v["repeat"] == "same" for v in got.values())
    assert "for calls from images" not in err  # the default scope is not mentioned


def test_no_stock_callers_gives_every_caller_the_profile():
    got, _, err = callers(clean_env(VZCAPS_STOCK_CALLERS="none", **M1))
    assert fam(got) == {GGML: 1, TORCH: 1, OTHER: 1}
    assert "for calls from images *, except none" in err


def test_callers_naming_one_library():
    got, _, err = callers(clean_env(VZCAPS_CALLERS="libggml*", **M1))
    assert fam(got) == {GGML: 1, TORCH: 0, OTHER: 0}
    assert "for calls from images libggml*, except libtorch_cpu.dylib libtorch_cpu.so (stock answers)" in err


def test_stock_callers_win_over_callers():
    got, _, _ = callers(clean_env(VZCAPS_CALLERS="*", VZCAPS_STOCK_CALLERS="libother-* libggml-metal.so", **M1))
    assert fam(got) == {GGML: 0, TORCH: 1, OTHER: 0}


def test_the_same_through_config_keys(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("[rag]\nmatch = callers\napple_family_max = auto\ncallers = libggml-metal.so libother-*\n"
                    "stock_callers = none\n")
    got, _, _ = callers(clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M1"))
    assert fam(got) == {GGML: 1, TORCH: 0, OTHER: 1}


def test_limits_follow_the_scope_too():
    ws = STOCK_WS + (1 << 20)
    got, _, _ = callers(clean_env(VZCAPS_RECOMMENDED_WORKING_SET_SIZE=str(ws), **M1))
    assert got[GGML]["ws"] == ws and got[OTHER]["ws"] == ws
    assert got[TORCH]["ws"] == STOCK_WS


def test_sixteen_threads_keep_per_caller_answers():
    got, threads, _ = callers(clean_env(**M1), "--threads", "16", "--rounds", "300")
    assert fam(got) == {GGML: 1, TORCH: 0, OTHER: 1} and threads == 0


def test_sixteen_threads_under_asan_and_ubsan():
    san = BUILD / "san" / "libvzcaps.so"
    require_built(san, how="the sanitized build")
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    env = clean_env(ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1", **M1)
    got, threads, err = callers(env, "--threads", "16", preload_extra=f"{asan}:{san}")
    assert fam(got) == {GGML: 1, TORCH: 0, OTHER: 1} and threads == 0
    assert "runtime error" not in err and "AddressSanitizer" not in err


@pytest.mark.parametrize("value,needle", [("lib/x.so", "is not a blank-separated list"), ("a,b", "is not a blank-separated"),
                                          ("  ", "empty list"), ("x" * 300, "too long (limit 255 bytes)")])
def test_malformed_globs_refuse(value, needle):
    got, _, err = callers(clean_env(VZCAPS_CALLERS=value, **M1))
    assert fam(got) == {GGML: 0, TORCH: 0, OTHER: 0}  # the whole process stays stock
    assert "left stock" in err and "VZCAPS_CALLERS" in err and needle in err


def test_scope_variables_alone_configure_nothing():
    got, _, err = callers(clean_env(VZCAPS_CALLERS="libggml*"))
    assert fam(got) == {GGML: 0, TORCH: 0, OTHER: 0} and err == ""


def test_probe_from_the_executable_is_in_scope_by_default():
    p = subprocess.run([str(BUILD / "probe")], env={**clean_env(**M1), "LD_PRELOAD": str(BUILD / "libvzcaps.so")},
                       capture_output=True, text=True, timeout=30)
    assert parse_probe(p.stdout)[0]["families"][1007] == 1


def test_check_json_lists_the_scope():
    vz = str(BUILD / "vzcaps")
    p = subprocess.run([vz, "check", "--json", "--chip", "Apple M1"], env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto"),
                       capture_output=True, text=True)
    doc = json.loads(p.stdout)
    assert doc["callers"] == ["*"] and doc["stock_callers"] == ["libtorch_cpu.dylib", "libtorch_cpu.so"]
    p = subprocess.run([vz, "check", "--json"], env=clean_env(VZCAPS_APPLE_FAMILY_MAX="1007", VZCAPS_CALLERS="libggml*  libllama*",
                                                              VZCAPS_STOCK_CALLERS="none"), capture_output=True, text=True)
    doc = json.loads(p.stdout)
    assert doc["callers"] == ["libggml*", "libllama*"] and doc["stock_callers"] == []


# ---- Ollama-like process trees: a server spawns a runner with its environment ----

def ollama_tree(tmp_path):
    for name in ("ollama", "llama-server", "helper"):
        os.symlink(BUILD / "probe", tmp_path / name)
    return [str(tmp_path / "ollama"), "--spawn", str(tmp_path / "llama-server"), "--spawn", str(tmp_path / "helper")]


M2 = {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}


def test_ollama_section_reaches_the_runner_and_stops_there(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("[ollama]\nmatch = ollama llama-server\napple_family_max = auto\ninherit = yes\n")
    env = clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    p = subprocess.run(ollama_tree(tmp_path), env=env, capture_output=True, text=True, timeout=30)
    runs = parse_probe(p.stdout)
    assert [r["families"] for r in runs] == [M2, M2, STOCK_FAMILIES]  # server, runner, the runner's child
    assert [l.split(":")[1].strip() for l in p.stderr.splitlines()] == [
        "hooked AppleParavirtDevice for ollama via initGPUFamilySupport",
        "hooked AppleParavirtDevice for llama-server via initGPUFamilySupport"]


def test_run_inherit_reaches_the_runner(tmp_path):
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    p = subprocess.run([str(BUILD / "vzcaps"), "run", "--inherit", "--", *ollama_tree(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=30)
    runs = parse_probe(p.stdout)
    assert runs[0]["families"] == M2 and runs[1]["families"] == M2
    assert runs[2]["families"] == M2  # --inherit keeps it in every descendant: the README says so
