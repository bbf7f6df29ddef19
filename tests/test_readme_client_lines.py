"""The ggml lines the README and the troubleshooting page quote, against what llama.cpp's own
Metal device code really prints (issue 27, item 1), so that a user's grep finds them.

What cannot drift, and how:
- the quote against the record: `make check` (this file) compares every quoted
  `ggml_metal_device_init:` line, every quoted `MTLGPUFamily...` value and every suggested grep
  with tests/fixtures/client/, the lines of make check-client's stock and unlocked runs;
- the record against the real client: make check-client writes the lines of each run
  (tests/client/runs.py, build/client/ggml-lines/) and then runs this file as a script, which
  fails when they differ from the record (naming the copy that refreshes it) or when the quote
  does not match the fresh lines; the negative test below shows that comparison fails;
- the format against a Mac's: the record's lines also stand, byte for byte, in the real llama-bench
  stderr of a macOS guest in tests/fixtures/llama-bench (an older llama.cpp, the same format).
usage (check-client): test_readme_client_lines.py DIR"""
import difflib
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "fixtures" / "client"
RUNS = ("stock.txt", "vzcaps-on-an-M2.txt")  # tests/client/runs.py: the run titles, blanks as -
PAGES = (ROOT / "README.md", ROOT / "docs" / "troubleshooting.md", ROOT / "packaging" / "README")  # the archive's
MAC_STDERR = ROOT / "tests" / "fixtures" / "llama-bench" / "tinyllama-m1-ultra" / "unlocked-guest.stderr"
PREFIX = "ggml_metal_device_init: "


def quotes(pages=PAGES):
    """(page, quoted ggml lines, quoted family values, grep commands) over the pages."""
    out = []
    for page in pages:
        text = page.read_text()
        spans = re.findall(r"`([^`\n]+)`", text)
        # whole lines in blocks and spans, and spans quoting a line's tail ("simdgroup reduction = true")
        lines = [l.strip() for l in text.splitlines() if l.strip().startswith(PREFIX)]
        lines += [s if s.startswith(PREFIX) else PREFIX + s for s in spans
                  if re.match(r"(ggml_metal_device_init: )?(simdgroup|has \w+|use \w+|GPU \w+:)", s) and ("=" in s or ":" in s)]
        families = [s for s in spans if s.startswith("MTLGPUFamily")]
        greps = [s for s in spans if s.startswith("grep ")]
        out.append((page, lines, families, greps))
    return out


def mismatches(record_dir, pages=PAGES):
    """What the pages quote that the recorded lines in record_dir do not hold, one text each."""
    runs = {name: (record_dir / name).read_text() for name in RUNS}
    unlocked = runs["vzcaps-on-an-M2.txt"]
    every = {l for text in runs.values() for l in text.splitlines()}
    bad = []
    for page, lines, families, greps in quotes(pages):
        name = page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name
        bad += [f"{name}: quotes {l!r}, which no run printed" for l in lines if l not in every]
        bad += [f"{name}: quotes family {f!r}, which no run printed" for f in families
                if not any(l.startswith(PREFIX + "GPU family: " + f) and l.endswith(f) for l in every)]
        for g in greps:
            words = shlex.split(g)
            r = subprocess.run(words, input=unlocked, capture_output=True, text=True)
            if r.returncode != 0:
                bad.append(f"{name}: `{g}` finds nothing in the unlocked run's lines (exit {r.returncode}) {r.stderr.strip()}")
    return bad


def test_the_pages_quote_the_real_clients_lines():
    q = dict((p.name, (lines, fams, greps)) for p, lines, fams, greps in quotes())
    lines, fams, greps = q["README.md"]
    # the README quotes the three lines that prove the fast paths, and a grep for them
    for key in ("simdgroup reduction   = true", "simdgroup matrix mul. = true", "has bfloat            = true"):
        assert PREFIX + key in lines, key
    assert fams and greps
    assert q["troubleshooting.md"][0] and q["README"][0], "the troubleshooting page and the archive's README quote them too"
    assert mismatches(RECORD) == []


def test_the_hooked_line_the_readme_quotes_is_the_one_the_library_prints():
    """The README's proof line is a template (CLASS, PATH, NOTES): the library's real line on the rig fits it."""
    import pytest  # not at the top: check-client runs this file as a script, without pytest
    if not sys.platform.startswith("linux"):  # conftest's LINUX_ONLY, which a script cannot import
        pytest.skip("needs the Linux test build: the rig's build/probe under LD_PRELOAD")
    readme = (ROOT / "README.md").read_text()
    quoted = [l for l in readme.splitlines() if l.startswith("vzcaps: hooked ")]
    assert len(quoted) == 1
    pattern = re.escape(quoted[0]).replace("CLASS", r"\S+").replace("PATH", r"\S+").replace("NOTES", ".+").replace("llama\\-server", "probe")
    from conftest import BUILD  # build/, or its copy where LD_PRELOAD cannot carry the checkout's path
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LD_PRELOAD": str(BUILD / "libvzcaps.so"),
           "VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2"}
    p = subprocess.run([str(BUILD / "probe")], env=env, capture_output=True, text=True, timeout=60)
    hooked = [l for l in p.stderr.splitlines() if l.startswith("vzcaps: hooked ")]
    assert len(hooked) == 1 and re.fullmatch(pattern, hooked[0]), (pattern, p.stderr)


def test_the_record_is_in_the_format_a_mac_prints():
    mac = set(MAC_STDERR.read_text().splitlines())
    unlocked = (RECORD / "vzcaps-on-an-M2.txt").read_text().splitlines()
    same = [l for l in unlocked if l in mac]
    # all but the family (Apple9 there: that shim claimed 9) and the working set (another machine)
    assert {l for l in unlocked if l not in same} <= {l for l in unlocked if "GPU family" in l or "WorkingSetSize" in l}
    assert len(same) >= 8


def test_a_quote_that_differs_fails(tmp_path):
    """The comparison can fail: one space less in a quoted line, a grep that finds nothing, a
    changed record (check-client's refresh check)."""
    page = tmp_path / "README.md"
    page.write_text("```\nggml_metal_device_init: simdgroup reduction  = true\n```\n"
                    "`MTLGPUFamilyApple8 (1008)` and `grep 'simdgroup reduction = true'`\n"
                    "llama.cpp then prints `has bfloat = true`\n")  # the spacing the old README had
    bad = mismatches(RECORD, pages=(page,))
    assert len(bad) == 4, bad
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in RUNS:
        (fresh / name).write_text((RECORD / name).read_text())
    assert main([str(fresh)]) == 0
    (fresh / RUNS[1]).write_text((RECORD / RUNS[1]).read_text().replace("matrix mul. = true", "matrix mul. = false"))
    assert main([str(fresh)]) == 1


def main(argv):
    """check-client's step: the fresh lines equal the record, and the pages match them."""
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    fresh = pathlib.Path(argv[0])
    status = 0
    for name in RUNS:
        if not (fresh / name).is_file():
            print(f"check-client: {fresh / name}: missing (tests/client/runs.py writes it)")
            return 1
        want, got = (RECORD / name).read_text(), (fresh / name).read_text()
        if want != got:
            status = 1
            print(f"check-client: ggml's lines of the {name[:-4]} run differ from tests/fixtures/client/{name}:")
            sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "record", "this run"))
            print(f"  refresh the record: cp {fresh / name} tests/fixtures/client/{name}; then make the README's quote match")
    for line in mismatches(fresh):
        status = 1
        print("check-client: " + line)
    if status == 0:
        print("check-client: the README's quoted ggml lines match the real client's")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
