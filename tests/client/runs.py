#!/usr/bin/env python3
"""The three runs of make check-client and their predictions.

usage: runs.py VZCAPS CLIENT
Runs CLIENT (llama.cpp's Metal device code on the stand-in device) stock, through
`vzcaps run --family auto` on an M2, and the same with libggml-metal.so in stock_callers. For
each run it predicts ggml's start-up lines from the stand-in's stock answers, vzcaps's own
account of the run (`vzcaps check --json`) and ggml's gates, as the clients table states them,
then compares them with the lines ggml printed. Exits 1 on any difference or missing line.
Never: reads a capability from the client's output to build a prediction.
"""
import fnmatch
import json
import os
import subprocess
import sys
import tempfile

CHIP = "Apple M2 (Virtual)"
IMAGE = "libggml-metal.so"  # the image that asks: ggml-metal-device.m is compiled into it

# The stand-in's stock answers: a paravirtual guest device (tests/client/metal.m).
STOCK_FAMILIES = set(range(1001, 1006)) | {2002, 3001, 3002, 3003}
STOCK_NAME = "Apple Paravirtual device"
STOCK_WORKING_SET = 5010800640


def answers(view):
    """supportsFamily: and the working set as the device answers ggml under this view of vzcaps."""
    fams = set(STOCK_FAMILIES)
    ws = STOCK_WORKING_SET
    if view and view["enabled"]:
        in_scope = any(fnmatch.fnmatchcase(IMAGE, g) for g in view["callers"]) and not any(
            fnmatch.fnmatchcase(IMAGE, g) for g in view["stock_callers"])
        if in_scope:
            fams |= set(range(1001, view["apple_family_max"] + 1)) | set(view["extra_families"])
            ws = view["recommended_working_set_size"] or ws
    return fams, ws


def predict(view):
    """ggml's lines, from its gates in ggml_metal_device_init (see docs: the clients table)."""
    fams, ws = answers(view)
    yes = lambda b: "true" if b else "false"
    apple = max(f for f in range(1001, 1022) if f in fams)
    tensor = 5002 in fams and any(s in STOCK_NAME for s in ("M5", "M6", "A19", "A20"))
    return {
        "GPU family": "MTLGPUFamilyApple%d  (%d)" % (apple - 1000, apple),
        "simdgroup reduction": yes(1007 in fams or 5001 in fams),
        "simdgroup matrix mul.": yes(1007 in fams),
        "has bfloat": yes(5001 in fams or 1006 in fams),
        "has tensor": yes(tensor),
        "recommendedMaxWorkingSetSize": "%8.2f MB" % (ws / 1e6),
    }


def parse(text):
    got = {}
    for line in text.splitlines():
        if not line.startswith("ggml_metal_device_init: "):
            continue
        body = line[len("ggml_metal_device_init: "):]
        if body.startswith("GPU family: MTLGPUFamilyApple"):
            got["GPU family"] = body[len("GPU family: "):]
            continue
        key, sep, value = body.partition(" = ")
        if not sep:
            key, sep, value = body.partition("  = ")
        if sep:
            got[key.strip()] = value
    return got


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    vzcaps, client = (os.path.abspath(p) for p in sys.argv[1:])
    home = tempfile.mkdtemp(prefix="check-client-")  # no user config file reaches the runs
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("VZCAPS_", "TART_METAL_", "LUME_METAL_", "GGML_")) and k != "LD_PRELOAD"}
    base["HOME"] = home
    runs = [
        ("stock", {}, None),
        ("vzcaps on an M2", {"VZCAPS_HOST_CHIP": CHIP}, ["--family", "auto"]),
        ("ggml in stock_callers", {"VZCAPS_HOST_CHIP": CHIP, "VZCAPS_STOCK_CALLERS": IMAGE}, ["--family", "auto"]),
    ]
    # ggml's own lines of each run, as printed, beside the client: the README's quote is checked
    # against the unlocked run's (tests/test_readme_client_lines.py, run next by check-client)
    lines_dir = os.path.join(os.path.dirname(client), "ggml-lines")
    os.makedirs(lines_dir, exist_ok=True)
    failed = 0
    for title, extra, run_opts in runs:
        env = dict(base, **extra)
        view = None
        cmd = [client]
        if run_opts is not None:
            c = subprocess.run([vzcaps, "check", "--exe", os.path.basename(client), "--json"] + run_opts,
                               env=env, stdout=subprocess.PIPE)
            try:
                view = json.loads(c.stdout)
            except ValueError:
                view = None
            if c.returncode != 0 or not isinstance(view, dict) or not view.get("valid"):
                print("check-client: %s: vzcaps check refused the run's configuration (exit %d)" % (title, c.returncode))
                failed += 1
                continue
            cmd = [vzcaps, "run"] + run_opts + ["--", client]
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        text = p.stdout.decode("utf-8", "replace")
        got = parse(text)
        want = predict(view)
        with open(os.path.join(lines_dir, title.replace(" ", "-") + ".txt"), "w") as f:
            f.write("".join(l + "\n" for l in text.splitlines() if l.startswith("ggml_metal_device_init: ")))
        print("check-client: %s%s" % (title, "" if p.returncode == 0 else " (exit %d)" % p.returncode))
        bad = p.returncode != 0
        for key, value in want.items():
            ok = got.get(key) == value
            bad |= not ok
            line = "  %-3s %-29s %-26s%s" % ("ok" if ok else "BAD", key, got.get(key, "(missing)"),
                                           "" if ok else "  predicted: " + value)
            print(line.rstrip())
        if bad:
            failed += 1
            sys.stdout.write("  ggml's output:\n" + "".join("    " + l + "\n" for l in text.splitlines()
                                                            if "compile_all: compiled" not in l))
    os.rmdir(home)
    if failed:
        print("check-client: FAIL: %d of %d runs differ from the prediction" % (failed, len(runs)))
        return 1
    print("check-client: ggml's own lines match the prediction in all %d runs" % len(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
