"""vzcaps bench orchestration with stand-in llama-bench and llama-perplexity that replay the
real fixture output: arguments, environment, files, hashes, the output check."""
import csv
import hashlib
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import BUILD, ROOT, clean_env

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the GNU-runtime rig and LD_PRELOAD)

VZ = str(BUILD / "vzcaps")
STANDINS = ROOT / "tests" / "cli" / "standins"
SVG = "{http://www.w3.org/2000/svg}"


def bench(tmp_path, *extra, env_extra=None, perplexity=True):
    """perplexity=False: llama-bench alone in its directory, so no llama-perplexity is found."""
    lb = STANDINS / "llama-bench"
    if not perplexity:
        (tmp_path / "bin").mkdir(exist_ok=True)
        lb = tmp_path / "bin" / "llama-bench"
        if not lb.exists():
            lb.symlink_to(STANDINS / "llama-bench")
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    log = tmp_path / "calls.log"
    env = clean_env(VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)", FAKE_LOG=str(log), **(env_extra or {}))
    env["PATH"] = "/usr/bin:/bin"  # no llama-perplexity unless asked for
    args = [VZ, "bench", "-m", str(model), "--llama-bench", str(lb), "-r", "10"]
    if perplexity:
        args += ["--llama-perplexity", str(STANDINS / "llama-perplexity")]
    args += extra  # last: everything after a "--" in it goes to llama-bench
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    return p, model, log


def test_guest_bundle(tmp_path):
    out = tmp_path / "evidence"
    p, model, log = bench(tmp_path, "--out", str(out))
    assert p.returncode == 0, p.stderr
    files = sorted(f.name for f in out.iterdir())
    assert files == sorted(["stock.json", "stock.stderr", "unlocked.json", "unlocked.stderr", "environment.json",
                            "capabilities.json", "check-output.json", "check-text.txt", "check-reference.log",
                            "check-reference.stderr", "check-unlocked.log", "check-unlocked.stderr", "results.csv",
                            "results.md", "chart.svg", "SHA256SUMS"])
    # identical llama-bench arguments for both runs, one stock and one through the library
    calls = log.read_text().splitlines()
    bench_calls = [c for c in calls if " -o json" in c]
    assert [c.split()[0] for c in bench_calls] == ["stock", "unlocked"]
    assert bench_calls[0].split(" ", 1)[1] == bench_calls[1].split(" ", 1)[1] == f"-m {model} -p 512 -n 128 -r 10 -o json"
    ppl = [c for c in calls if "-f" in c]
    assert ppl[0].startswith("reference") and "-ngl 0" in ppl[0] and ppl[1].startswith("unlocked") and "-ngl 99" in ppl[1]
    # progress was shown
    assert "[1/4] stock" in p.stderr and "[2/4] unlocked" in p.stderr and "done in" in p.stderr
    env = json.loads((out / "environment.json").read_text())
    assert env["model_sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert env["llama_bench_sha256"] == hashlib.sha256((STANDINS / "llama-bench").read_bytes()).hexdigest()
    assert env["library_sha256"] == hashlib.sha256((BUILD / "libvzcaps.so").read_bytes()).hexdigest()
    assert env["llama_build_commit"] == "ee3d1b54c" and env["llama_build_number"] == 10167
    assert env["vzcaps_version"] and env["effective_profile"]["apple_family_max"] == 1007
    assert env["mode"] == "guest" and env["vcpus"] >= 1 and env["memory_bytes"] > 0
    caps = json.loads((out / "capabilities.json").read_text())
    assert caps["stock"]["families"] == [1005, 3003] and caps["unlocked"]["simdgroup_matrix_mul"] is True
    check = json.loads((out / "check-output.json").read_text())
    assert check["verdict"] == "pass" and check["perplexity_reference"] == 10.0 and check["perplexity_unlocked"] == 10.05
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert len((out / "SHA256SUMS").read_text().splitlines()) == len(files) - 1
    # the bundle reproduces the published speed-ups
    j = json.loads(subprocess.run([VZ, "report", "--json", str(out)], capture_output=True, text=True).stdout)
    assert [round(r["speedup"], 2) for r in j["rows"]] == [11.08, 16.36]


def test_markdown_matches_csv(tmp_path):
    out = tmp_path / "e"
    bench(tmp_path, "--out", str(out))
    rows = list(csv.DictReader(open(out / "results.csv")))
    md = [l for l in (out / "results.md").read_text().splitlines() if l.startswith("| pp") or l.startswith("| tg")]
    assert len(md) == len(rows) == 2
    for line, row in zip(md, rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == row["test"]
        assert float(cells[1]) == pytest.approx(float(row["stock_tps"]), abs=1e-4)
        assert float(cells[2]) == pytest.approx(float(row["unlocked_tps"]), abs=1e-4)
        assert cells[3] == "—" and row["host_tps"] == ""
        assert float(cells[4].rstrip("x")) == pytest.approx(float(row["speedup"]), abs=1e-4)


def test_chart_is_valid_svg_with_three_series(tmp_path):
    guest = tmp_path / "g"
    bench(tmp_path, "--out", str(guest))
    host = tmp_path / "h"
    p, _, _ = bench(tmp_path, "--out", str(host), "--mode", "host", env_extra={"FAKE_ROLE": "host"})
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in host.iterdir()) == sorted(["host.json", "host.stderr", "environment.json", "capabilities.json",
                                                             "check-output.json", "results.csv", "results.md", "chart.svg", "SHA256SUMS"])
    chart = tmp_path / "all.svg"
    p = subprocess.run([VZ, "report", "--svg", str(chart), str(guest), str(host)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    root = ET.parse(chart).getroot()
    assert root.tag == f"{SVG}svg"
    bars = root.findall(f"{SVG}rect[@class]")
    assert sorted({b.get("class") for b in bars}) == ["host", "stock", "unlocked"]
    assert len(bars) == 6
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "tokens per second (t/s)" in texts and "llama-bench test" in texts  # labelled axes with units
    assert "stock guest" in texts and "unlocked guest (vzcaps)" in texts and "host (bare metal)" in texts
    assert "pp512 (11.08x)" in texts
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert "pp512 unlocked: 4786.70 t/s" in titles
    # bars are proportional to the medians
    h = {b.get("class") + b.find(f"{SVG}title").text.split()[0]: float(b.get("height")) for b in bars}
    assert h["unlockedpp512"] / h["stockpp512"] == pytest.approx(4786.70 / 431.8625, rel=1e-3)
    ET.parse(guest / "chart.svg")


def test_wrong_output_fails(tmp_path):
    out = tmp_path / "e"
    p, _, _ = bench(tmp_path, "--out", str(out), env_extra={"FAKE_PPL_UNLOCKED": "31.7"})
    assert p.returncode == 1
    check = json.loads((out / "check-output.json").read_text())
    assert check["verdict"] == "fail" and "WRONG" in check["reason"]
    assert "**fail**" in (out / "results.md").read_text()
    assert "output check: fail" in p.stdout


def test_check_skipped_without_perplexity_tool(tmp_path):
    out = tmp_path / "e"
    p, _, _ = bench(tmp_path, "--out", str(out), perplexity=False)
    assert p.returncode == 0
    assert json.loads((out / "check-output.json").read_text())["verdict"] == "skipped"
    assert "[2/2] unlocked" in p.stderr
    p, _, _ = bench(tmp_path, "--out", str(tmp_path / "f"), "--check-output", perplexity=False)
    assert p.returncode == 1 and "needs llama-perplexity" in p.stderr


def test_failures_and_bad_arguments(tmp_path):
    p, _, _ = bench(tmp_path, "--out", str(tmp_path / "x"), env_extra={"FAKE_FAIL": "unlocked"})
    assert p.returncode == 1 and "the unlocked run failed (exit 3)" in p.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep").write_text("x")
    p, _, _ = bench(tmp_path, "--out", str(tmp_path / "full"))
    assert p.returncode == 1 and "exists and is not empty" in p.stderr
    p = subprocess.run([VZ, "bench"], capture_output=True, text=True)
    assert p.returncode == 2 and "-m MODEL is required" in p.stderr
    p = subprocess.run([VZ, "bench", "-m", "x", "--mode", "vm"], capture_output=True, text=True)
    assert p.returncode == 2
    for args, needle in ((["-p", "0", "-n", "0"], "nothing to measure"), (["-r", "0"], "-r must be at least 1"),
                         (["-p", "5k"], "plain decimal counts")):
        p = subprocess.run([VZ, "bench", "-m", "x", *args], capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr, args
    p = subprocess.run([VZ, "bench", "-m", str(tmp_path / "none.gguf")], capture_output=True, text=True)
    assert p.returncode == 1 and "cannot read the model" in p.stderr


def test_extra_arguments_reach_every_run_and_are_recorded(tmp_path):
    out = tmp_path / "evidence"
    p, model, log = bench(tmp_path, "--out", str(out), "--", "-t", "8", "-fa", "1", "-ngl", "99")
    assert p.returncode == 0, p.stderr
    bench_calls = [c for c in log.read_text().splitlines() if " -o json" in c]
    assert [c.split()[0] for c in bench_calls] == ["stock", "unlocked"]
    for c in bench_calls:  # the extras first; the measured counts and the JSON output after them win
        assert c.split(" ", 1)[1] == f"-t 8 -fa 1 -ngl 99 -m {model} -p 512 -n 128 -r 10 -o json"
    env = json.loads((out / "environment.json").read_text())
    assert env["llama_bench_extra_args"] == ["-t", "8", "-fa", "1", "-ngl", "99"]
    assert "Extra llama-bench arguments, the same in every run: `-t` `8` `-fa` `1` `-ngl` `99`" in (out / "results.md").read_text()
    p, _, _ = bench(tmp_path, "--out", str(tmp_path / "e2"))
    assert json.loads((tmp_path / "e2" / "environment.json").read_text())["llama_bench_extra_args"] == []
