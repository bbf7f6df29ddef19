"""Statements in the docs that drifted from the code once (issue 39 row 18) are held to what the
code does: each fact is taken from the code itself (a shim's stock start run on the rig, the
action's own steps read from action.yml), and every sentence of the docs that speaks of it must
say the same."""
import json
import re
import subprocess
from pathlib import Path

import yaml

from conftest import BUILD, LINUX_ONLY, clean_env

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
