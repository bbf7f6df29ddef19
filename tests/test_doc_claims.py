"""Statements in the docs that drifted from the code once (issue 39 row 18) are held to what the
code does: each fact is taken from the code itself (a shim's stock start run on the rig, the
action's own steps read from action.yml), and every sentence of the docs that speaks of it must
say the same."""
import json
import re
import struct
import subprocess
from pathlib import Path

import yaml

from conftest import BUILD, LINUX_ONLY, clean_env, require_built

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
NEGATIONS = ("no record", "no stats record", "writes no", "not counted", "without a record", "gets no record")


def sentences(text):
    """The prose of a page, one sentence at a time (table cells and list items split too)."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    for chunk in re.split(r"\n\s*\n|\n\s*[-|*]\s|\|", text):
        for s in re.split(r"(?<=[.;:])\s+(?=[A-Z`(])", " ".join(chunk.split())):
            if s:
                yield s


def doc_sentences(*words):
    """(page, sentence) for each sentence naming every one of words (case-insensitive)."""
    for page in PAGES:
        for s in sentences(page.read_text()):
            low = s.lower()
            if all(w in low for w in words):
                yield page.name, s


def shim_stock_start_writes_a_record(tmp_path):
    """Runs a shim whose configuration is refused, with the stats log on: True when the log
    holds its record."""
    real, shims = tmp_path / "real", tmp_path / "shims"
    real.mkdir()
    (real / "probe").symlink_to(BUILD / "probe")
    p = subprocess.run([str(BUILD / "vzcaps"), "shims", "--dir", str(shims), "probe"], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    logdir = tmp_path / "log"
    logdir.mkdir(mode=0o700)
    log = logdir / "vzcaps.log"
    env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin", VZCAPS_APPLE_FAMILY_MAX="1099",
                    VZCAPS_HOST_CHIP="Apple M2 Pro", VZCAPS_LOG_FILE=str(log))
    r = subprocess.run(["sh", "-c", "probe"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr.startswith("vzcaps: left stock for probe: "), r.stderr
    return log.exists() and any(json.loads(x).get("event") == "left_stock" for x in log.read_text().splitlines())


@LINUX_ONLY
def test_the_docs_say_what_a_shims_stock_start_records(tmp_path):
    writes = shim_stock_start_writes_a_record(tmp_path)
    assert writes, "the shim's stock start wrote no record: the docs say it does"
    said = [(p, s) for p, s in doc_sentences("shim", "stock", "record")]
    assert len(said) >= 3, said  # commands, config, fleet and troubleshooting speak of it
    wrong = [(p, s) for p, s in said if any(n in s.lower() for n in NEGATIONS)]
    assert not wrong, f"these say a shim's stock start writes no record, but it does: {wrong}"


def action_doctor_runs():
    """Every command line of action.yml's steps that runs vzcaps doctor."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for step in action["runs"]["steps"]:
        for line in step.get("run", "").splitlines():
            if re.search(r"/vzcaps\"?\s+doctor\b", line):  # the installed command, not a message
                yield line.strip()


def test_the_docs_say_whether_the_actions_doctor_run_is_counted():
    runs = list(action_doctor_runs())
    assert runs, "action.yml runs no doctor: this test reads the wrong file"
    log_off = all(re.match(r"VZCAPS_LOG_FILE=\s", line) for line in runs)
    said = [s for p, s in doc_sentences("action", "doctor", "record") if p == "fleet.md"]
    assert said, "docs/fleet.md no longer says whether the action's doctor run is counted"
    for s in said:
        if log_off:
            assert "VZCAPS_LOG_FILE" in s and "writes no record" in s, \
                f"action.yml runs doctor with the log off; docs/fleet.md says: {s}"
        else:
            assert "writes no record" not in s, f"action.yml's doctor run is logged; docs/fleet.md says: {s}"


# ---- issue 45: a new user's walk found these drifted ----

def example_sections(text):
    """{section: {key: value}} of a config file's text (comments and blanks left out)."""
    out, cur = {}, None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            cur = out.setdefault(line[1:-1], {})
        elif "=" in line and cur is not None:
            k, v = (x.strip() for x in line.split("=", 1))
            cur[k] = v
    return out


def test_the_shipped_example_config_is_the_one_the_docs_show():
    """The release's vzcaps.conf.example had [ollama] match = ollama, where every page says
    match = ollama llama-server (the runner of v0.30.0 and later)."""
    example = example_sections((ROOT / "packaging" / "vzcaps.conf.example").read_text())
    config_md = (ROOT / "docs" / "config.md").read_text()
    shown = [b for b in re.findall(r"```\n(.*?)```", config_md, re.S) if "[llama]" in b and "[ollama]" in b]
    assert shown and example_sections(shown[0]) == example, (shown[:1], example)
    wrong = []
    for page in PAGES:
        for block in re.findall(r"```\w*\n(.*?)```", page.read_text(), re.S):
            ollama = example_sections(block).get("ollama", {})
            if "match" in ollama and ollama["match"] != example["ollama"]["match"]:
                wrong.append((page.name, ollama["match"]))
    said = [(p, s) for p, s in doc_sentences("match = ollama") if f"match = {example['ollama']['match']}" not in s]
    assert not wrong and not said, (wrong, said)


def test_the_first_run_bundle_says_what_of_the_environment_it_holds(tmp_path):
    """The bundle's summary said it holds no environment, and its table showed PATH; so did
    docs/first-mac-run.md. A variable of the user's is never in it; PATH is, and both say so."""
    env = clean_env(VZTEST_SECRET_MARKER="not-for-the-bundle-7f3a", VZCAPS_HOST_CHIP="Apple M2 Pro")
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--bundle", str(tmp_path / "b"), "--", "true"], env=env,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    files = [f for f in (tmp_path / "b").rglob("*") if f.is_file()]
    assert files and not [f.name for f in files if b"not-for-the-bundle-7f3a" in f.read_bytes()], p.stderr
    summary = (tmp_path / "b" / "summary.md").read_text()
    assert re.search(r"^\| PATH \| `", summary, re.M), summary  # the fact: PATH is there
    claims = [s for s in sentences(summary) if "environment" in s.lower()]
    claims += [s for page, s in doc_sentences("environment", "recorded") if page == "first-mac-run.md"]
    assert len(claims) >= 2 and all("PATH" in s for s in claims), claims


def exit_statements():
    """{command: its statement} of docs/commands.md's exit statuses."""
    doc = (ROOT / "docs" / "commands.md").read_text()
    sec = doc[doc.index("## Exit statuses of the command"):]
    sec = sec[:sec.index("\n## ", 5)] if "\n## " in sec[5:] else sec
    text = " ".join(sec.split("\n", 1)[1].split())
    parts = re.split(r"(?:(?<=\. )|^)((?:`[a-z]+`(?:, )?)+): ", text)
    return {c: parts[i + 1] for i in range(1, len(parts) - 1, 2) for c in re.findall(r"`([a-z]+)`", parts[i])}


def test_help_names_every_option_the_docs_give_an_exit_status():
    """vzcaps help stats left out --zero's exit 1, which docs/commands.md lists (and help check
    the 2 of a repeated --exe): each option the docs name in a command's exit statuses is in its
    help's "exit status" too."""
    statements = exit_statements()
    assert {"run", "check", "shims", "stats", "doctor"} <= set(statements), sorted(statements)
    missing = {}
    for cmd, said in statements.items():
        h = subprocess.run([str(BUILD / "vzcaps"), "help", cmd], capture_output=True, text=True, timeout=30).stdout
        ex = h[h.index("exit status:"):]
        ex = ex[:ex.index("\n\n")]
        gap = set(re.findall(r"--[a-z][a-z-]*", said)) - set(re.findall(r"--[a-z][a-z-]*", ex))
        if gap:
            missing[cmd] = sorted(gap)
    assert not missing, f"help's exit status leaves out what docs/commands.md says of: {missing}"


def function_starts(path, cputype=0x0100000C):
    """How many functions LC_FUNCTION_STARTS lists in the arm64 slice of a (fat) Mach-O file."""
    data = path.read_bytes()
    base = 0
    if struct.unpack(">I", data[:4])[0] == 0xCAFEBABE:
        for k in range(struct.unpack(">I", data[4:8])[0]):
            cpu, _, off, _, _ = struct.unpack(">iiIII", data[8 + 20 * k:28 + 20 * k])
            if cpu == cputype:
                base = off
    ncmds = struct.unpack("<I", data[base + 16:base + 20])[0]
    at = base + 32
    for _ in range(ncmds):
        cmd, size = struct.unpack("<II", data[at:at + 8])
        if cmd == 0x26:  # LC_FUNCTION_STARTS: ULEB128 deltas, ended by 0
            off, n = struct.unpack("<II", data[at + 8:at + 16])
            blob, count, i = data[base + off:base + off + n], 0, 0
            while i < len(blob):
                value, shift = 0, 0
                while True:
                    b = blob[i]
                    i += 1
                    value |= (b & 0x7F) << shift
                    shift += 7
                    if not b & 0x80:
                        break
                if value == 0:
                    break
                count += 1
            return count
        at += size
    raise AssertionError(f"{path}: no LC_FUNCTION_STARTS")


def test_the_docs_count_of_the_slices_functions_is_the_slices():
    """docs/developers.md said every one of the 108 functions is reached; the run said 309 of 309.
    A count the docs give of the functions reached is the arm64 slice's own."""
    lib = ROOT / "dist" / "libvzcaps.dylib"
    require_built(lib, how="make dist")
    n = function_starts(lib)
    assert n > 50, n
    wrong = []
    for page, s in doc_sentences("functions", "reached"):
        for m in re.finditer(r"every one of (?:the |its )?(\d+) functions|(\d+) of (\d+) functions", s):
            if {int(g) for g in m.groups() if g} != {n}:
                wrong.append((page, m.group(0)))
    assert not wrong, f"the arm64 slice has {n} functions; the docs say: {wrong}"
