"""report --md carries what the chart shows it measured (model, chip, llama.cpp build, date),
and the chart's value labels never sit on a reference line (issue 27, item 8)."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET

from conftest import BUILD, FIXTURES

VZ = str(BUILD / "vzcaps")
SVG = "{http://www.w3.org/2000/svg}"


def report(*args):
    return subprocess.run([VZ, "report", *args], capture_output=True, text=True, timeout=60)


def measured(md):
    lines = [l for l in md.splitlines() if l.startswith("Measured: ")]
    assert len(lines) == 1, md
    return re.sub(r"\\(.)", r"\1", lines[0][len("Measured: "):-1])


def test_md_says_what_the_chart_says_was_measured():
    md = report("--md", "-", str(FIXTURES)).stdout
    svg = ET.fromstring(report("--svg", "-", str(FIXTURES)).stdout.encode())
    about = [t.text for t in svg.iter(SVG + "text") if t.get("class") == "about"]
    assert about == ["llama 1B Q4_K - Medium · Apple M1 Ultra · llama.cpp ee3d1b54c (build 10167) · 2026-08-09"]
    assert measured(md) == about[0]
    assert md.startswith("| test |")  # the table still comes first


def test_md_escapes_what_it_quotes(tmp_path):
    """A model name from the JSON is data: Markdown punctuation and control bytes are shown, not obeyed."""
    for name in ("stock-guest", "unlocked-guest"):
        rows = json.loads((FIXTURES / f"{name}.json").read_text())
        for r in rows:
            r["model_type"] = "<b>x</b> | `y` [z](u) \x1b[31m"
        (tmp_path / f"{name}.json").write_text(json.dumps(rows))
    p = report("--md", "-", "--stock", str(tmp_path / "stock-guest.json"), "--unlocked", str(tmp_path / "unlocked-guest.json"))
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("Measured: "))
    assert line.startswith(r"Measured: \<b\>x\</b\> \| \`y\` \[z\](u) ")
    assert "\x1b" not in line and r"\\x1b" in line


def test_no_value_label_sits_on_a_reference_line():
    svg = ET.fromstring(report("--svg", "-", str(FIXTURES)).stdout.encode())
    width = float(svg.get("width"))
    refs = [float(l.get("x1")) for l in svg.iter(SVG + "line") if l.get("class") == "reference"]
    values = [(float(t.get("x")), t.text) for t in svg.iter(SVG + "text") if t.get("class") == "value"]
    assert len(refs) == 2 and {v for _, v in values} >= {"98.25 %", "72.06 %", "11.08x", "16.36x"}
    for x, text in values:
        end = x + len(text) * 12 * 0.62 + 4  # the chart's own width estimate (benchchart.c, text_w)
        assert end <= width, text
        for ref in refs:
            assert not (x - 3 <= ref <= end + 3), f"{text} at {x}..{end} crosses the reference line at {ref}"
