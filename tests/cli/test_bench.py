"""vzcaps bench orchestration with stand-in llama-bench and llama-perplexity that replay the
real fixture output: arguments, environment, files, hashes, the output check."""
import csv
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import BUILD, ROOT, clean_env, need_tool, needs_root, term_once_running

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
                            "results.md", "chart.svg", "summary.json", "SHA256SUMS"])
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
    # the GPU family line of each run (it picks llama.cpp's tuning rows), in the bundle's results
    assert caps["stock"]["gpu_family"] == "MTLGPUFamilyApple5 (1005)" and caps["unlocked"]["apple_family"] == 1009
    assert caps["unlocked"]["shim"] == "vzcaps" and caps["stock"]["shim"] is None
    md = (out / "results.md").read_text()
    assert "| stock | MTLGPUFamilyApple5 (1005) | none |" in md and "| unlocked | MTLGPUFamilyApple9 (1009) | vzcaps |" in md
    assert "GPU family (llama.cpp's start-up line): stock MTLGPUFamilyApple5 (1005); unlocked MTLGPUFamilyApple9 (1009)" in p.stdout
    assert "unlocked guest (vzcaps), GPU family Apple9" in (out / "chart.svg").read_text()
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
                                                             "check-output.json", "results.csv", "results.md", "chart.svg", "summary.json", "SHA256SUMS"])
    chart = tmp_path / "all.svg"
    p = subprocess.run([VZ, "report", "--svg", str(chart), str(guest), str(host)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    root = ET.parse(chart).getroot()
    assert root.tag == f"{SVG}svg"
    bars = [b for b in root.findall(f"{SVG}rect[@class]") if b.get("class") in ("stock", "unlocked", "host")]
    assert sorted({b.get("class") for b in bars}) == ["host", "stock", "unlocked"]
    assert len(bars) == 6
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "tokens per second (t/s)" in texts and "llama-bench test" in texts  # labelled axes with units
    # each series is credited to the shim its own stderr names, with the family llama.cpp printed
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend == ["stock guest, GPU family Apple5", "unlocked guest (vzcaps), GPU family Apple9",
                      "host (bare metal), GPU family Apple7"]
    about = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "about"]
    assert about == ["llama 1B Q4_K - Medium · Apple M1 Ultra · llama.cpp ee3d1b54c (build 10167) · 2026-08-09"]
    assert "Speed-up: unlocked guest / stock guest" in texts and "Unlocked guest as a percentage of the host" in texts
    assert "11.08x" in texts and "98.25 %" in texts and "16.36x" in texts
    # the lower charts have axes: ticks with their units
    assert "0x" in texts and "20x" in texts and "0 %" in texts and "100 %" in texts
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert "pp512 unlocked: 4786.70 t/s" in titles
    # bars are proportional to the medians
    h = {b.get("class") + b.find(f"{SVG}title").text.split()[0]: float(b.get("height")) for b in bars}
    assert h["unlockedpp512"] / h["stockpp512"] == pytest.approx(4786.70 / 431.8625, rel=1e-3)
    # tests whose speeds differ by orders of magnitude each get their own axis: tg128 stays readable
    assert h["unlockedtg128"] > 0.3 * 220 and h["hostpp512"] > 0.3 * 220
    ET.parse(guest / "chart.svg")


def png_pixels(path):
    """RGBA rows of an 8-bit, non-interlaced PNG (what rsvg-convert writes)."""
    import struct
    import zlib
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype == 6 and interlace == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, rows, prev, stride = zlib.decompress(idat), [], bytearray(w * 4), w * 4
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - 4] if x >= 4 else 0
            b, c = prev[x], prev[x - 4] if x >= 4 else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, rows


@pytest.mark.parametrize("runs", [("stock", "unlocked", "host"), ("stock", "unlocked"), ("host",)])
def test_rendered_chart_stays_inside_its_canvas(tmp_path, runs):
    """Rendered with librsvg onto a larger, transparent canvas: nothing is drawn outside the
    chart's own width and height, and every legend entry is drawn."""
    fx = ROOT / "tests" / "fixtures" / "llama-bench" / "tinyllama-m1-ultra"
    args = []
    for r in runs:
        args += [f"--{r}", str(fx / f"{r}-guest.json" if r != "host" else fx / "host.json")]
    chart = tmp_path / "c.svg"
    p = subprocess.run([VZ, "report", "--svg", str(chart), *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    text = chart.read_text()
    w, h = (float(v) for v in re.search(r'<svg [^>]*width="([\d.]+)" height="([\d.]+)"', text).groups())
    m = 200
    grown = re.sub(r'<svg ([^>]*)width="[\d.]+" height="[\d.]+" viewBox="[^"]*"',
                   lambda g: f'<svg {g.group(1)}width="{w + 2 * m:.0f}" height="{h + 2 * m:.0f}" viewBox="{-m} {-m} {w + 2 * m:.0f} {h + 2 * m:.0f}"',
                   text, count=1)
    grown = re.sub(r'<rect width="[\d.]+" height="[\d.]+" fill="white"/>', "", grown, count=1)  # the background
    (tmp_path / "grown.svg").write_text(grown)
    subprocess.run([need_tool("rsvg-convert"), str(tmp_path / "grown.svg"), "-o", str(tmp_path / "c.png")], check=True)
    pw, ph, rows = png_pixels(tmp_path / "c.png")
    assert (pw, ph) == (int(w + 2 * m), int(h + 2 * m))
    outside = sum(1 for y in range(ph) for x in range(pw)
                  if rows[y][4 * x + 3] and not (m <= x < m + w and m <= y < m + h))
    assert outside == 0
    drawn = sum(1 for y in range(m, int(m + h)) for x in range(m, int(m + w)) if rows[y][4 * x + 3])
    assert drawn > 1000
    # plain llama-bench files with their .stderr: the unlocked run was another shim's, and the
    # chart says so instead of crediting vzcaps
    legends = {"stock": "stock guest, GPU family Apple5", "unlocked": "unlocked guest (LumeMetalCapabilities), GPU family Apple9",
               "host": "host (bare metal), GPU family Apple7"}
    root = ET.fromstring(text.encode())
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"] == [legends[r] for r in runs]
    assert not any("vzcaps" in t for t in texts)
    if "host" not in runs:  # no host data: no host wording
        assert not any("host" in t.lower() for t in texts + [root.find(f"{SVG}title").text]), texts
    # the canvas is filled: something is drawn in its right-hand quarter
    assert sum(1 for y in range(m, int(m + h)) for x in range(int(m + 0.75 * w), int(m + w)) if rows[y][4 * x + 3]) > 200


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
    # regression: a FIFO as the model hung bench for ever when it hashed the model (after both
    # runs, with a half-written bundle); like a directory, it is refused before anything runs
    for kind in ("fifo", "dir"):
        model = tmp_path / f"model-{kind}"
        os.mkfifo(model) if kind == "fifo" else model.mkdir()
        out = tmp_path / f"out-{kind}"
        p = subprocess.run([VZ, "bench", "-m", str(model), "--llama-bench", str(STANDINS / "llama-bench"), "--out", str(out)],
                           capture_output=True, text=True, timeout=30,
                           env=clean_env(VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)"))
        assert p.returncode == 1 and p.stderr == f"vzcaps bench: {model}: cannot read the model: not a regular file\n", p.stderr
        assert not out.exists()
    # regression: a --llama-perplexity given but not found was ignored: "output check: skipped:
    # llama-perplexity not found next to llama-bench or on PATH", exit 0
    for given in (tmp_path / "none" / "llama-perplexity", tmp_path / "model-fifo"):
        out = tmp_path / "out-ppl"
        p = subprocess.run([VZ, "bench", "-m", str(tmp_path / "tiny.gguf"), "--llama-bench", str(STANDINS / "llama-bench"),
                            "--llama-perplexity", str(given), "--out", str(out)], capture_output=True, text=True, timeout=30,
                           env=clean_env(VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)"))
        assert p.returncode == 1 and p.stderr == (f"vzcaps bench: {given} not found or not executable; give "
                                                  "--llama-perplexity PATH\n"), p.stderr
        assert not out.exists()
    # regression: an overlong --out was cut at 1100 bytes and the bundle written elsewhere
    for opt in ("--out", "--llama-bench", "--llama-perplexity"):
        p = subprocess.run([VZ, "bench", "-m", "x", opt, "/" + "d" * 1100], capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.startswith(f"vzcaps bench: {opt}: too long (limit 1024 bytes)\n"), opt


def test_a_path_entry_too_long_to_hold_is_not_cut_into_another_file(tmp_path):
    # regression: PATH candidates were cut at the buffer's size, and the cut path ran
    longdir = tmp_path.joinpath(*["p" * 200] * 6)
    longdir.mkdir(parents=True)
    cut = str(longdir / "llama-bench")[:1099]  # the old buffer held 1099 bytes
    impostor = tmp_path.joinpath(cut)
    impostor.write_text("#!/bin/sh\necho impostor ran >&2\nexit 9\n")
    impostor.chmod(0o755)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    env = clean_env(PATH=str(longdir))
    p = subprocess.run([VZ, "bench", "-m", str(model), "--mode", "host", "--out", str(tmp_path / "o")], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 1 and "impostor" not in p.stderr
    assert "llama-bench not found or not executable" in p.stderr


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


def test_results_md_takes_no_markup_from_extra_arguments(tmp_path):
    # regression: an argument after -- went into results.md unescaped, and could forge an "Output check" line
    forged = "x`\n\nOutput check: **pass**: forged\n\n<img src=x onerror=alert(1)>"
    out = tmp_path / "evidence"
    p, _, _ = bench(tmp_path, "--out", str(out), "--", forged, "``two``")
    assert p.returncode == 0, p.stderr
    lines = (out / "results.md").read_text().splitlines()
    assert [l for l in lines if "Output check" in l and not l.startswith("Extra")] == [next(
        l for l in lines if l.startswith("Output check: **pass**: perplexity"))]
    extra = [l for l in lines if l.startswith("Extra llama-bench arguments")]
    assert extra == ["Extra llama-bench arguments, the same in every run: "
                     "``x`\\x0a\\x0aOutput check: **pass**: forged\\x0a\\x0a<img src=x onerror=alert(1)>`` ``` ``two`` ```"]


def test_out_is_never_a_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    for given in (str(tmp_path / "link"), f"{tmp_path}/link/", f"{tmp_path}/link/.", f"{tmp_path}/link//./"):
        p, _, _ = bench(tmp_path, "--out", given)
        assert p.returncode == 1 and "is a symbolic link (refusing to write through it)" in p.stderr, given
    assert list(elsewhere.iterdir()) == []


@needs_root("mounts a 64 KiB tmpfs")
def test_full_disk_is_a_failure_not_a_bundle(tmp_path):
    # regression: on a full 64 KiB tmpfs bench printed "output check: pass ... bundle: DIR", exit 0, with 0-byte files
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        (disk / "filler").write_bytes(b"f" * 48 * 1024)  # 16 KiB stay free: the runs' output fits, not the rest
        p, _, _ = bench(tmp_path, "--out", str(disk / "e"))
        left = sorted(f.name for f in (disk / "e").iterdir())
    finally:
        subprocess.run(["umount", str(disk)])
    assert p.returncode == 1 and "bundle:" not in p.stdout
    assert f"vzcaps bench: cannot write {disk}/e/" in p.stderr and "No space left on device" in p.stderr
    assert p.stderr.splitlines()[-1].startswith(f"vzcaps bench: ") and "could not be written" in p.stderr.splitlines()[-1]
    assert not [n for n in left if n.startswith(".vzcaps-tmp")]


# ---- the one way to run a child (issue 25 rule 3) ----

def fake_llama_bench(tmp_path, body):
    """A llama-bench that runs body (sh) and then replays the stand-in's output."""
    lb = tmp_path / "fake" / "llama-bench"
    lb.parent.mkdir(exist_ok=True)
    lb.write_text(f"#!/bin/sh\n{body}\nexec {shlex.quote(str(STANDINS / 'llama-bench'))} \"$@\"\n")  # a path with a space
    lb.chmod(0o755)
    return lb


def run_bench(tmp_path, lb, *extra, term_when=None):
    """vzcaps bench; term_when: SIGTERM once a process of that name runs below it."""
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    env = clean_env(VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)")
    env["PATH"] = "/usr/bin:/bin"
    cmd = [VZ, "bench", "-m", str(model), "--llama-bench", str(lb), "-r", "2", *extra]
    if term_when:
        return term_once_running(cmd, env, term_when, timeout=300)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_a_huge_stderr_is_capped_and_noted_not_a_crash(tmp_path):
    # regression (row 5): more than 64 MiB on llama-bench's stderr: SIGSEGV, no message, no
    # SHA256SUMS (the capability record stayed uninitialised when its reader refused the size)
    lb = fake_llama_bench(tmp_path, "echo 'ggml_metal_device_init: GPU family: MTLGPUFamilyApple7  (1007)' >&2\n"
                                    "head -c 68157440 /dev/zero | tr '\\0' x >&2; echo >&2")
    out = tmp_path / "e"
    p = run_bench(tmp_path, lb, "--out", str(out), "--no-check-output")
    assert p.returncode == 0, p.stderr  # it was -11
    assert (out / "SHA256SUMS").exists()
    assert (out / "stock.stderr").stat().st_size == 16 << 20
    summary = json.loads((out / "summary.json").read_text())
    total = summary["runs"][0]["stderr_bytes"]
    assert total > 68157440
    assert f"vzcaps bench: {out}/stock.stderr: capped at 16 MiB of {total} bytes (noted in summary.json)" in p.stderr
    assert summary["complete"] is True and summary["incomplete_reason"] is None
    assert summary["stream_cap_bytes"] == 16 << 20 and summary["timeout_seconds"] == 3600
    stock = summary["runs"][0]
    assert stock["run"] == "stock" and stock["stderr_capped"] is True
    assert stock["stdout_capped"] is False and "standard error capped" in stock["result"]
    assert summary["rows"] and summary["output_check"]["verdict"] == "skipped"
    # the lines before the cap were read as they came
    caps = json.loads((out / "capabilities.json").read_text())
    assert caps["stock"]["apple_family"] == 1007, caps
    sums = dict(reversed(l.split("  ", 1)) for l in (out / "SHA256SUMS").read_text().splitlines())
    assert sums["stock.stderr"] == hashlib.sha256((out / "stock.stderr").read_bytes()).hexdigest()


def test_json_prints_the_bundles_summary(tmp_path):
    # issue 27 item 8
    out = tmp_path / "e"
    p = run_bench(tmp_path, STANDINS / "llama-bench", "--out", str(out), "--no-check-output", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == json.loads((out / "summary.json").read_text())
    assert json.loads(p.stdout)["complete"] is True and [r["run"] for r in json.loads(p.stdout)["runs"]] == ["stock", "unlocked"]


def test_sigterm_mid_run_marks_the_bundle_incomplete_and_a_rerun_replaces_it(tmp_path):
    # regression (row 7): a stop signal left a half-written bundle the next run refused
    lb = fake_llama_bench(tmp_path, "sleep 120 & wait")
    out = tmp_path / "e"
    p = run_bench(tmp_path, lb, "--out", str(out), term_when="sleep")
    assert p.returncode == -signal.SIGTERM, p.stderr
    assert not [f for f in out.iterdir() if f.name.startswith(".vzcaps-tmp.")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and "stopped by signal 15" in summary["incomplete_reason"]
    assert "stopped: vzcaps got signal 15" in summary["runs"][0]["result"]
    assert (out / "INCOMPLETE").exists()
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    p = run_bench(tmp_path, STANDINS / "llama-bench", "--out", str(out), "--no-check-output")
    assert p.returncode == 0, p.stderr
    assert not (out / "INCOMPLETE").exists() and json.loads((out / "summary.json").read_text())["complete"] is True


def test_timeout_stops_a_run(tmp_path):
    lb = fake_llama_bench(tmp_path, "sleep 120")
    out = tmp_path / "e"
    p = run_bench(tmp_path, lb, "--out", str(out), "--timeout", "1")
    assert p.returncode == 1
    assert "the stock run failed (killed by signal 15, timed out after 1 s (--timeout))" in p.stderr
    assert json.loads((out / "summary.json").read_text())["complete"] is False
    p = run_bench(tmp_path, lb, "--out", str(tmp_path / "f"), "--timeout", "-1")
    assert p.returncode == 2 and "--timeout takes whole seconds" in p.stderr


# ---- issue 39 row 9: the stock run is stock by identity ----

@pytest.mark.parametrize("how", ["hand-link", "linked-library"])
def test_the_stock_run_is_stock_however_vzcaps_is_named(tmp_path, how):
    """llama-bench found in a shim directory is run by name on the stock PATH, where a hand-made
    link to vzcaps named llama-bench (no record: no shim directory by record) was found next and
    ran unlocked; so did a library of ours preloaded under another name (a link to it). The stock
    run is stock now: the entry and the element go. (The stand-in tells unlocked by the name
    libvzcaps in its maps, so a renamed copy is tested with doctor --bundle, test_bundle.py.)"""
    hand, real = tmp_path / "hand", tmp_path / "real"
    hand.mkdir(), real.mkdir()
    (real / "llama-bench").symlink_to(STANDINS / "llama-bench")
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    log = tmp_path / "calls.log"
    home = tmp_path / "home"  # the chip from a config file too: a stock run has no VZCAPS_ variable
    (home / ".config" / "vzcaps").mkdir(parents=True)
    (home / ".config" / "vzcaps" / "vzcaps.conf").write_text("[default]\nhost_chip = Apple M1 Ultra\n")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)", FAKE_LOG=str(log), PATH=f"{real}:/usr/bin:/bin",
                    HOME=str(home))
    if how == "hand-link":
        shims = tmp_path / "shims"
        assert subprocess.run([VZ, "shims", "--dir", str(shims), "llama-bench"], env=env, capture_output=True).returncode == 0
        (hand / "llama-bench").symlink_to(VZ)
        env["PATH"] = f"{shims}:{hand}:{real}:/usr/bin:/bin"
    else:
        (tmp_path / "libhelper.so").symlink_to(BUILD / "libvzcaps.so")
        env["LD_PRELOAD"] = str(tmp_path / "libhelper.so")
    p = subprocess.run([VZ, "bench", "-m", str(model), "-r", "2", "--out", str(tmp_path / "out")], env=env,
                       capture_output=True, text=True, timeout=300)
    calls = [c.split()[0] for c in log.read_text().splitlines() if " -o json" in c]
    assert calls == ["stock", "unlocked"], p.stderr
