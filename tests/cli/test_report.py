"""vzcaps report on the real llama-bench fixtures and on malformed inputs."""
import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import pytest
from pathlib import Path

from conftest import BUILD, FIXTURES, LINUX_ONLY, ROOT, as_nobody, need_tool, needs_root

VZ = str(BUILD / "vzcaps")
S, U, H = (str(FIXTURES / f) for f in ("stock-guest.json", "unlocked-guest.json", "host.json"))


def report(*args):
    return subprocess.run([VZ, "report", *args], capture_output=True, text=True, timeout=60)


def test_reproduces_published_table():
    p = report("--json", "--stock", S, "--unlocked", U, "--host", H)
    assert p.returncode == 0, p.stderr
    rows = {r["test"]: r for r in json.loads(p.stdout)["rows"]}
    assert list(rows) == ["pp512", "tg128"]
    pp, tg = rows["pp512"], rows["tg128"]
    assert (round(pp["host"], 2), round(pp["stock"], 2), round(pp["unlocked"], 2)) == (4871.99, 431.86, 4786.70)
    assert (round(tg["host"], 2), round(tg["stock"], 2), round(tg["unlocked"], 2)) == (286.71, 12.63, 206.60)
    assert (round(pp["speedup"], 2), round(pp["percent_of_host"], 2)) == (11.08, 98.25)
    assert (round(tg["speedup"], 2), round(tg["percent_of_host"], 2)) == (16.36, 72.06)
    assert pp["range"]["unlocked"] == [4755.47, 4831.85] and pp["samples"]["stock"] == 10
    # the published CSV, to its four decimals
    published = {l.split(",")[1]: l.split(",") for l in (FIXTURES / "published-results.csv").read_text().splitlines()[1:3]}
    for test, row in rows.items():
        csv = published[test]
        assert round(row["host"], 4) == float(csv[3]) and round(row["stock"], 4) == float(csv[4])
        assert round(row["unlocked"], 4) == float(csv[5]) and round(row["speedup"], 4) == float(csv[6])
        assert round(row["percent_of_host"], 4) == float(csv[7])


def test_text_table():
    p = report("--stock", S, "--unlocked", U, "--host", H)
    assert p.returncode == 0
    assert "11.08x" in p.stdout and "16.36x" in p.stdout and "98.25 %" in p.stdout and "72.06 %" in p.stdout


def test_capabilities_from_stderr():
    caps = json.loads(report("--json", "--stock", S, "--unlocked", U, "--host", H).stdout)["capabilities"]
    assert caps["stock"]["families"] == [1005, 3003] and caps["stock"]["simdgroup_reduction"] is False
    assert caps["stock"]["simdgroup_matrix_mul"] is False and caps["stock"]["bfloat"] is False
    assert caps["unlocked"]["families"] == [1009, 3003] and caps["unlocked"]["simdgroup_matrix_mul"] is True
    assert caps["unlocked"]["gpu_name"] == "Apple Paravirtual device"
    assert caps["host"]["families"] == [1007, 3003, 5002] and caps["host"]["gpu_name"] == "Apple M1 Ultra"
    assert caps["host"]["tensor"] is False and round(caps["host"]["recommended_working_set_mb"], 2) == 115448.73


def test_no_host_gives_nulls():
    rows = json.loads(report("--json", "--stock", S, "--unlocked", U).stdout)["rows"]
    assert all(r["host"] is None and r["percent_of_host"] is None for r in rows)
    assert round(rows[0]["speedup"], 2) == 11.08


def split(tmp_path, src, name):
    runs = json.loads(open(src).read())
    out = []
    for i, run in enumerate(runs):
        f = tmp_path / f"{name}-{i}.json"
        f.write_text(json.dumps([run]))
        out.append(str(f))
    return out


def test_repeated_flags_merge_rows_by_test(tmp_path):
    s, u = split(tmp_path, S, "s"), split(tmp_path, U, "u")
    p = report("--json", "--stock", s[1], "--stock", s[0], "--unlocked", u[0], "--unlocked", u[1])
    assert p.returncode == 0, p.stderr
    rows = {r["test"]: r for r in json.loads(p.stdout)["rows"]}
    assert round(rows["pp512"]["speedup"], 2) == 11.08 and round(rows["tg128"]["speedup"], 2) == 16.36


def test_bundle_directory(tmp_path):
    b = tmp_path / "bundle"
    b.mkdir()
    for role, f in (("stock", "stock-guest"), ("unlocked", "unlocked-guest"), ("host", "host")):
        shutil.copy(FIXTURES / f"{f}.json", b / f"{role}.json")
        shutil.copy(FIXTURES / f"{f}.stderr", b / f"{role}.stderr")
    j = json.loads(report("--json", str(b)).stdout)
    assert round(j["rows"][1]["percent_of_host"], 2) == 72.06 and j["capabilities"]["host"]["families"][0] == 1007
    p = report(str(tmp_path))
    assert p.returncode == 1 and p.stderr == (f"vzcaps report: {tmp_path}: no llama-bench files: expected stock*.json, "
                                              "unlocked*.json or host*.json (plain llama-bench -o json output, or a bundle of vzcaps bench)\n")


def test_bundle_under_a_long_path_is_read_whole(tmp_path):
    # regression: paths inside a bundle were cut at 1100 bytes ("not a bundle", or another file)
    b = tmp_path.joinpath(*["b" * 200] * 6)
    b.mkdir(parents=True)
    for role, f in (("stock", "stock-guest"), ("unlocked", "unlocked-guest"), ("host", "host")):
        shutil.copy(FIXTURES / f"{f}.json", b / f"{role}.json")
        shutil.copy(FIXTURES / f"{f}.stderr", b / f"{role}.stderr")
    assert len(str(b / "unlocked.stderr")) > 1220
    p = report("--json", str(b))
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert round(j["rows"][1]["percent_of_host"], 2) == 72.06 and j["capabilities"]["host"]["families"][0] == 1007
    p = report("--json", "--stock", str(b / "stock.json"), "--unlocked", str(b / "unlocked.json"))
    assert json.loads(p.stdout)["capabilities"]["unlocked"]["families"]  # read from the companion .stderr


@pytest.mark.parametrize("mutate,needle", [
    (lambda t: t[: len(t) // 2], "not valid JSON: line "),
    (lambda t: t.replace('"samples_ts"', '"samples_xx"', 1), "run 0: no samples_ts"),
    (lambda t: t.replace('"n_prompt": 512', '"n_prompt": "512"', 1), "n_prompt, n_gen or n_depth"),
    (lambda t: "{}", "expected a non-empty array"),
    (lambda t: t.replace("4786,", "-4786,", 1), "samples_ts[0] is not a number of tokens per second"),
    (lambda t: t + "x", "trailing characters"),
])
def test_malformed_inputs(tmp_path, mutate, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(mutate(open(U).read()))
    p = report("--stock", S, "--unlocked", str(bad))
    assert p.returncode == 1
    assert p.stderr.startswith(f"vzcaps report: {bad}: ") and needle in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_truncated_json_names_position(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('[\n  {"n_prompt": 512,\n   "samples_ts": [1, 2')
    p = report("--stock", str(bad))
    assert p.stderr.strip() == f"vzcaps report: {bad}: not valid JSON: line 3, column 23: unexpected end of input"


def test_mismatched_tests_between_runs(tmp_path):
    u = split(tmp_path, U, "u")
    p = report("--stock", S, "--unlocked", u[0])
    assert p.returncode == 1 and "test tg128 has no unlocked run" in p.stderr
    p = report("--stock", S, "--unlocked", U, "--unlocked", u[0])
    assert p.returncode == 1 and "test pp512 appears twice for the unlocked role" in p.stderr


def test_usage():
    assert report().returncode == 2
    assert report("--stock").returncode == 2


def test_dash_is_standard_output_and_a_missing_directory_is_refused_first(tmp_path):
    args = ["--stock", str(FIXTURES / "stock-guest.json"), "--unlocked", str(FIXTURES / "unlocked-guest.json")]
    p = subprocess.run([VZ, "report", "--md", "-", *args], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("|") and "11.08" in p.stdout
    assert not (ROOT / "-").exists()
    p = subprocess.run([VZ, "report", "--csv", "-", *args], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.splitlines()[0].startswith("test,")
    p = subprocess.run([VZ, "report", "--svg", "-", *args], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("<?xml")
    p = subprocess.run([VZ, "report", "--svg", str(tmp_path / "out" / "chart.svg"), *args], capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""  # nothing printed before the error
    assert p.stderr == f"vzcaps report: cannot write {tmp_path / 'out' / 'chart.svg'}: its directory does not exist\n"
    p = subprocess.run([VZ, "report", "--md", "-", "--csv", "-", *args], capture_output=True, text=True)
    assert p.returncode == 2


def test_incomplete_bundle_names_what_is_missing(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    (b / "stock.json").write_text((FIXTURES / "stock-guest.json").read_text())
    p = subprocess.run([VZ, "report", str(b)], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr == (f"vzcaps report: {b}: incomplete: unlocked*.json is missing (the stock and "
                                              "unlocked runs of a guest come in pairs)\n")


def test_families_above_the_host_chip_are_noted():
    p = subprocess.run([VZ, "report", "--stock", str(FIXTURES / "stock-guest.json"), "--unlocked",
                        str(FIXTURES / "unlocked-guest.json"), "--host", str(FIXTURES / "host.json")], capture_output=True, text=True)
    assert "! the unlocked run reported Apple9 (1009), above the host chip's real Apple7 (1007, from the host run)" in p.stdout
    j = json.loads(subprocess.run([VZ, "report", "--json", "--stock", str(FIXTURES / "stock-guest.json"), "--unlocked",
                                   str(FIXTURES / "unlocked-guest.json"), "--host", str(FIXTURES / "host.json")],
                                  capture_output=True, text=True).stdout)
    assert j["host_apple_family"] == 1007 and j["above_host_family"] == ["unlocked"]


def test_a_directory_of_plain_files_named_by_role_gives_the_headline_numbers():
    # the README's recompute command for its headline numbers
    p = report(str(FIXTURES))
    assert p.returncode == 0, p.stderr
    for needle in ("11.08x", "16.36x", "98.25 %", "72.06 %", "llama.cpp ee3d1b54c (build 10167), Apple M1 Ultra, 2026-08-09"):
        assert needle in p.stdout, needle
    j = json.loads(report("--json", str(FIXTURES)).stdout)
    assert [round(r["speedup"], 2) for r in j["rows"]] == [11.08, 16.36]
    assert [round(r["percent_of_host"], 2) for r in j["rows"]] == [98.25, 72.06]
    assert j["chip"] == "Apple M1 Ultra" and j["date"] == "2026-08-09"


def test_the_gpu_family_line_of_each_run_and_the_shim_that_changed_it():
    j = json.loads(report("--json", str(FIXTURES)).stdout)
    caps = j["capabilities"]
    assert [caps[r]["gpu_family"] for r in ("stock", "unlocked", "host")] == [
        "MTLGPUFamilyApple5 (1005)", "MTLGPUFamilyApple9 (1009)", "MTLGPUFamilyApple7 (1007)"]
    assert [caps[r]["apple_family"] for r in ("stock", "unlocked", "host")] == [1005, 1009, 1007]
    assert [caps[r]["shim"] for r in ("stock", "unlocked", "host")] == [None, "LumeMetalCapabilities", None]
    assert j["unlocked_family_vs_host"] == "above"
    text = report(str(FIXTURES)).stdout
    assert "GPU family (llama.cpp's start-up line): stock MTLGPUFamilyApple5 (1005); unlocked MTLGPUFamilyApple9 (1009); " \
           "host MTLGPUFamilyApple7 (1007)" in text
    assert "llama.cpp chose tuning rows for another GPU generation" in text


def role_dir(tmp_path, unlocked_stderr=None, host_stderr=None):
    d = tmp_path / "runs"
    d.mkdir()
    for f in ("stock-guest", "unlocked-guest", "host"):
        shutil.copy(FIXTURES / f"{f}.json", d / f"{f}.json")
        shutil.copy(FIXTURES / f"{f}.stderr", d / f"{f}.stderr")
    if unlocked_stderr is not None:
        (d / "unlocked-guest.stderr").write_text(unlocked_stderr)
    if host_stderr is not None:
        (d / "host.stderr").write_text(host_stderr)
    return d


def test_an_unlocked_family_below_the_hosts_is_warned_about(tmp_path):
    fam = lambda n: f"ggml_metal_device_init: GPU family: MTLGPUFamilyApple{n}  ({1000 + n})\n"
    d = role_dir(tmp_path, unlocked_stderr="vzcaps: enabled for llama-bench: Apple families up to 1007\n" + fam(7),
                 host_stderr=fam(9))
    p = report(str(d))
    assert ("! the unlocked run reported Apple7 (1007), below the host chip's Apple9 (1009, from the host run): llama.cpp "
            "chose tuning rows for an older GPU generation") in p.stdout
    j = json.loads(report("--json", str(d)).stdout)
    assert j["unlocked_family_vs_host"] == "below" and j["capabilities"]["unlocked"]["shim"] == "vzcaps"
    # the same family: nothing to warn about
    d2 = role_dir(tmp_path / "x", unlocked_stderr=fam(7), host_stderr=fam(7)) if (tmp_path / "x").mkdir() is None else None
    p = report(str(d2))
    assert "!" not in p.stdout and json.loads(report("--json", str(d2)).stdout)["unlocked_family_vs_host"] == "same"


@pytest.mark.parametrize("stderr,shim,label", [
    ("vzcaps: configured for llama-bench: Apple families up to 1007 (Apple7)\n"
     "vzcaps: hooked AppleParavirtDevice for llama-bench via initGPUFamilySupport\n", "vzcaps", "unlocked guest (vzcaps)"),
    ("vzcaps: enabled for llama-bench: Apple families up to 1007 (Apple7)\n", "vzcaps", "unlocked guest (vzcaps)"),
    ("vzcaps: hooked AppleParavirtDevice for llama-bench via initGPUFamilySupport: Apple families up to 1007 (Apple7)\n",
     "vzcaps", "unlocked guest (vzcaps)"),
    ("2026-01-01 x[1:2] [OtherShim] Enabled for llama-bench\n", "OtherShim", "unlocked guest (OtherShim)"),
    ("vzcaps: left stock for llama-bench: the host chip is unknown\n", None, "unlocked guest (no shim's log line in its stderr)"),
    ("", None, "unlocked guest (no shim's log line in its stderr)"),
    ("x [Bad\x1b[31mTag] Enabled for y\n", None, "unlocked guest (no shim's log line in its stderr)"),
])
def test_the_chart_credits_the_shim_the_runs_stderr_names(tmp_path, stderr, shim, label):
    d = role_dir(tmp_path, unlocked_stderr=stderr)
    assert json.loads(report("--json", str(d)).stdout)["capabilities"]["unlocked"]["shim"] == shim
    chart = tmp_path / "c.svg"
    assert report("--svg", str(chart), str(d)).returncode == 0
    import xml.etree.ElementTree as ET
    legend = [t.text for t in ET.parse(chart).getroot().iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "legend"]
    assert legend[1].split(",")[0] == label


def test_without_stderr_a_series_credits_no_one(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    shutil.copy(S, d / "stock.json")
    shutil.copy(U, d / "unlocked.json")
    chart = tmp_path / "c.svg"
    assert report("--svg", str(chart), str(d)).returncode == 0
    import xml.etree.ElementTree as ET
    texts = [t.text for t in ET.parse(chart).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert "unlocked guest" in texts and not any("vzcaps" in t for t in texts)


def test_several_files_of_one_role_merge_and_other_files_are_ignored(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    s, u = split(tmp_path, S, "s"), split(tmp_path, U, "u")
    for i in range(2):
        shutil.copy(s[i], d / f"stock-{i}.json")
        shutil.copy(u[i], d / f"unlocked-{i}.json")
    (d / "notes.json").write_text("not read")
    (d / "README.md").write_text("x")
    j = json.loads(report("--json", str(d)).stdout)
    assert [round(r["speedup"], 2) for r in j["rows"]] == [11.08, 16.36]


def test_hostile_directories(tmp_path):
    import os
    d = tmp_path / "fifo"
    d.mkdir()
    shutil.copy(U, d / "unlocked.json")
    os.mkfifo(d / "stock.json")
    p = report(str(d))  # never blocks on the FIFO
    assert p.returncode == 1 and "stock.json" in p.stderr and "not a regular file" in p.stderr
    d = tmp_path / "dirs"
    d.mkdir()
    (d / "stock.json").mkdir()
    shutil.copy(U, d / "unlocked.json")
    p = report(str(d))
    assert p.returncode == 1 and "stock.json" in p.stderr and len(p.stderr.splitlines()) == 1
    p = report(str(tmp_path / "missing"))
    assert p.returncode == 1 and p.stderr.startswith(f"vzcaps report: {tmp_path / 'missing'}: ")
    p = report(S)  # a file where a directory is expected
    assert p.returncode == 1 and p.stderr.startswith(f"vzcaps report: {S}: ") and p.stdout == ""
    d = tmp_path / "stockonly"
    d.mkdir()
    shutil.copy(S, d / "stock-guest.json")
    p = report(str(d))
    assert p.returncode == 1 and "incomplete: unlocked*.json is missing" in p.stderr and p.stdout == ""


def fixture_args():
    return ["--stock", str(FIXTURES / "stock-guest.json"), "--unlocked", str(FIXTURES / "unlocked-guest.json")]


@pytest.mark.parametrize("opt", ["--csv", "--md", "--svg"])
def test_an_output_that_is_an_input_is_refused(tmp_path, opt):
    # regression: report --csv s.json overwrote its own input
    s, u = tmp_path / "s.json", tmp_path / "u.json"
    shutil.copy(FIXTURES / "stock-guest.json", s)
    shutil.copy(FIXTURES / "unlocked-guest.json", u)
    before = s.read_bytes()
    for target in (s, tmp_path / "." / "s.json"):  # any spelling of it: compared by device and inode
        p = report("--stock", str(s), "--unlocked", str(u), opt, str(target), "--force")
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr == f"vzcaps report: cannot write {target}: it is one of the inputs (refusing to overwrite it)\n"
    hard = tmp_path / "hard.json"
    os.link(s, hard)
    p = report("--stock", str(s), "--unlocked", str(u), opt, str(hard), "--force")
    assert p.returncode == 1 and "one of the inputs" in p.stderr
    # the companion .stderr and a bundle's files are inputs too
    shutil.copy(FIXTURES / "stock-guest.stderr", tmp_path / "s.stderr")
    p = report("--stock", str(s), "--unlocked", str(u), opt, str(tmp_path / "s.stderr"), "--force")
    assert p.returncode == 1 and "one of the inputs" in p.stderr
    assert s.read_bytes() == before


def test_one_file_given_as_two_outputs_is_refused_however_spelled(tmp_path):
    """regression: --md o.md --svg ./o.md wrote both into one file, kept the last, exit 0."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to("sub")
    spellings = [("o.md", "./o.md"), ("o.md", "sub/../o.md"), ("sub/o.md", "link/o.md")]
    for a, b in spellings:
        for existing in (False, True):
            (tmp_path / a).unlink(missing_ok=True)
            if existing:
                (tmp_path / a).write_text("<!-- written by vzcaps report -->\n")
            p = subprocess.run([VZ, "report", *fixture_args(), "--md", a, "--svg", b], capture_output=True, text=True,
                               cwd=tmp_path)
            assert p.returncode == 2 and p.stdout == "", (a, b, p.stdout)
            assert p.stderr.startswith(f"vzcaps report: {b} and {a} are one file, given as two outputs\n"), p.stderr
            assert existing == (tmp_path / a).exists(), (a, b)
    os.link(tmp_path / "o.md", tmp_path / "hard.md")
    p = subprocess.run([VZ, "report", *fixture_args(), "--md", "o.md", "--svg", "hard.md"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 2 and "are one file" in p.stderr
    p = subprocess.run([VZ, "report", *fixture_args(), "--md", "o.md", "--svg", "sub/o.md", "--csv", "-", "--force"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr  # same name, other directory: two files


def test_a_directory_as_output_is_refused_before_anything_is_printed(tmp_path):
    # regression: --md DIR failed only after the table was printed
    for opt in ("--md", "--csv", "--svg"):
        p = report(*fixture_args(), opt, str(tmp_path))
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr == f"vzcaps report: cannot write {tmp_path}: it is a directory (give a file name)\n"


def test_existing_outputs_are_replaced_only_when_vzcaps_wrote_them_or_with_force(tmp_path):
    notes = {"--md": tmp_path / "notes.md", "--csv": tmp_path / "data.csv", "--svg": tmp_path / "pic.svg"}
    for opt, path in notes.items():
        path.write_text("the user's own file\n")
        p = report(*fixture_args(), opt, str(path))
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr == f"vzcaps report: cannot write {path}: it exists and vzcaps report did not write it (--force replaces it)\n"
        assert path.read_text() == "the user's own file\n"
    # a file vzcaps report wrote carries its marker (Markdown, SVG) and is replaced without --force
    for opt in ("--md", "--svg"):
        path = tmp_path / f"out{opt[2:]}"
        assert report(*fixture_args(), opt, str(path)).returncode == 0
        assert "<!-- written by vzcaps report -->" in path.read_text()[:4096]
        p = report(*fixture_args(), opt, str(path))
        assert p.returncode == 0, p.stderr
    svg = (tmp_path / "outsvg").read_text()
    assert svg.startswith("<?xml") and svg.splitlines()[1] == "<!-- written by vzcaps report -->"
    ET.fromstring(svg.encode())
    # CSV has no comment syntax: its record beside it says vzcaps report wrote it (issue 39 row 20:
    # a second run said "did not write it"); a CSV changed since, or without its record, is not ours
    csv = tmp_path / "out.csv"
    assert report(*fixture_args(), "--csv", str(csv)).returncode == 0
    rec = tmp_path / ".out.csv.vzcaps-report"
    assert rec.read_text().splitlines()[0] == "vzcaps report" and rec.read_text().splitlines()[1].startswith("copy ")
    p = report(*fixture_args(), "--csv", str(csv))
    assert p.returncode == 0 and p.stderr == "" and csv.read_text().startswith("test,")
    with csv.open("a") as f:
        f.write("the user's own row\n")
    p = report(*fixture_args(), "--csv", str(csv))
    assert p.returncode == 1 and "did not write it (--force replaces it)" in p.stderr
    assert csv.read_text().endswith("the user's own row\n")
    p = report(*fixture_args(), "--csv", str(csv), "--force")
    assert p.returncode == 0 and csv.read_text().startswith("test,")
    assert report(*fixture_args(), "--csv", str(csv)).returncode == 0  # recorded again by the forced run
    # a record that is not ours (a user's file, a link) is never replaced: the CSV is written, and
    # the line says its record was not, so a later run needs --force
    other = tmp_path / "other.csv"
    (tmp_path / ".other.csv.vzcaps-report").write_text("the user's own notes\n")
    p = report(*fixture_args(), "--csv", str(other))
    assert p.returncode == 1 and "its record .other.csv.vzcaps-report was not" in p.stderr
    assert (tmp_path / ".other.csv.vzcaps-report").read_text() == "the user's own notes\n"
    p = report(*fixture_args(), "--md", str(notes["--md"]), "--force")
    assert p.returncode == 0 and "11.08" in notes["--md"].read_text()


def test_a_file_that_merely_mentions_the_marker_is_not_replaced(tmp_path):
    """regression (issue 25 row 2): report took any .md or .svg that quoted its marker anywhere in
    the first 4 KiB for its own and replaced it; the marker counts only where docs/safety.md says
    it stands (the first line; in SVG the line after the XML declaration)."""
    m = "<!-- written by vzcaps report -->"
    users = {
        "notes.md": f"# My notes\n\nreport marks its files with `{m}`\n",
        "indented.md": f"  {m}\n# mine\n",
        "trailing.md": f"{m} (quoted by me)\n",
        "no-newline.md": m,
        "late.svg": f'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg">\n{m}\n</svg>\n',
        "text.svg": f'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><text>{m}</text></svg>\n',
    }
    for name, text in users.items():
        path = tmp_path / name
        path.write_text(text)
        p = report(*fixture_args(), "--md" if name.endswith(".md") else "--svg", str(path))
        assert p.returncode == 1 and p.stdout == "", (name, p.stdout)
        assert p.stderr == f"vzcaps report: cannot write {path}: it exists and vzcaps report did not write it (--force replaces it)\n"
        assert path.read_text() == text, name
    # where the marker stands, the file is ours: replaced
    for name, text in (("ours.md", f"{m}\n# old table\n"), ("ours.svg", f'<?xml version="1.0"?>\n{m}\n<svg/>\n')):
        (tmp_path / name).write_text(text)
        p = report(*fixture_args(), "--md" if name.endswith(".md") else "--svg", str(tmp_path / name))
        assert p.returncode == 0, (name, p.stderr)
        assert (tmp_path / name).read_text() != text


def test_outputs_never_go_through_links_or_special_files(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "link.md").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo.md")
    for name, why in (("link.md", "it is a symbolic link (refusing to write through it)"),
                      ("fifo.md", "it exists and is not a regular file")):
        p = subprocess.run([VZ, "report", *fixture_args(), "--md", str(tmp_path / name), "--force"], capture_output=True,
                           text=True, timeout=20)
        assert p.returncode == 1 and p.stdout == "" and p.stderr == f"vzcaps report: cannot write {tmp_path / name}: {why}\n"
    assert victim.read_text() == "precious\n"


@needs_root("mounts a 4 KiB tmpfs")
@LINUX_ONLY  # /dev/full and a tmpfs (make check runs as root on Linux)
def test_a_full_disk_fails_before_the_table_is_printed(tmp_path):
    p = subprocess.run([VZ, "report", *fixture_args(), "--md", "/dev/full"], capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""  # a special file is refused
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(disk)], check=True)
    try:
        (disk / "filler").write_bytes(b"f" * 4096)
        p = report(*fixture_args(), "--svg", str(disk / "chart.svg"))
        left = sorted(f.name for f in disk.iterdir())
    finally:
        subprocess.run(["umount", str(disk)])
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == f"vzcaps report: cannot write {disk}/chart.svg: No space left on device\n"
    assert left == ["filler"]


def stopped_at_placement(args, cwd, env=None):
    """Runs the command under gdb, stops it where safewrite places a written temporary (linkat:
    the temporary exists, full), and delivers SIGTERM there. What the directory holds then."""
    gdb = need_tool("gdb")
    p = subprocess.run([gdb, "-q", "-batch", "-ex", "set breakpoint pending on", "-ex", "break linkat", "-ex", "run",
                        "-ex", "handle SIGTERM nostop noprint pass", "-ex", "signal SIGTERM", "--args", *args],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert "Breakpoint 1," in p.stdout, p.stdout + p.stderr
    assert "terminated with signal SIGTERM" in p.stdout, p.stdout + p.stderr
    return p


@LINUX_ONLY  # gdb on the Linux test build
def test_sigterm_while_writing_leaves_no_temporary(tmp_path):
    # regression (issue 25 row 7): SIGTERM during report --svg left .vzcaps-tmp.PID.N behind
    stopped_at_placement([str(BUILD / "vzcaps"), "report", "--svg", "c.svg", str(FIXTURES)],
                         cwd=tmp_path)
    assert sorted(f.name for f in tmp_path.iterdir()) == []


# ---- issue 25: every input protected, every companion used or the run fails, logs escaped ----

def many_inputs(d, n):
    """n stock and n unlocked llama-bench files, one distinct test each."""
    d.mkdir()
    for i in range(n):
        for role, ts in (("stock", 10.0), ("unlocked", 20.0)):
            run = [{"n_prompt": 100 + i, "n_gen": 0, "samples_ts": [ts, ts + 1]}]
            (d / f"{role}-{i:02d}.json").write_text(json.dumps(run))
    return d


def test_every_input_is_protected_past_the_sixty_fourth(tmp_path):
    """row 3: only the first 64 inputs were remembered; --force --csv onto input 70 overwrote it."""
    d = many_inputs(tmp_path / "runs", 40)
    target = d / "unlocked-29.json"  # the 70th input in name order
    before = target.read_bytes()
    p = report("--force", "--csv", str(target), str(d))
    assert p.returncode == 1, p.stderr
    assert p.stderr == f"vzcaps report: cannot write {target}: it is one of the inputs (refusing to overwrite it)\n"
    assert target.read_bytes() == before
    # and a companion .stderr past the 64th is an input too
    (d / "unlocked-39.stderr").write_text("ggml_metal_device_init: GPU family: MTLGPUFamilyApple7  (1007)\n")
    p = report("--force", "--md", str(d / "unlocked-39.stderr"), str(d))
    assert p.returncode == 1 and "it is one of the inputs" in p.stderr, p.stderr


@pytest.mark.parametrize("make,why", [
    (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
    (lambda p: p.mkdir(), "a directory, not a file"),
    (lambda p: os.truncate(p.open("w").name, (64 << 20) + 1), "larger than 64 MiB (67108865 bytes)"),
    (lambda p: p.symlink_to(p.parent / "gone.stderr"), "a symbolic link to a file that does not exist"),
])
def test_a_companion_stderr_that_cannot_be_used_fails_the_run(tmp_path, make, why):
    """row 14: a FIFO, a directory, an oversized or dangling .stderr was dropped silently (exit 0,
    and the unlocked row's family and its "above the host" warning vanished)."""
    d = role_dir(tmp_path)
    bad = d / "unlocked-guest.stderr"
    bad.unlink()
    make(bad)
    for args in ([str(d)], ["--stock", str(d / "stock-guest.json"), "--unlocked", str(d / "unlocked-guest.json")]):
        p = report(*args)
        assert p.returncode == 1, (args, p.stdout)
        assert p.stderr == f"vzcaps report: {bad}: {why}\n", p.stderr
        assert p.stdout == ""


def test_a_companion_stderr_unreadable_for_the_user_fails_the_run(request):
    base = Path(tempfile.mkdtemp(prefix="vzcaps-report-", dir="/tmp"))  # reachable for that user
    os.chmod(base, 0o755)
    request.addfinalizer(lambda: subprocess.run(["rm", "-rf", str(base)]))
    d = role_dir(base)
    bad = d / "unlocked-guest.stderr"
    os.chmod(bad, 0)
    p = subprocess.run([VZ, "report", str(d)], capture_output=True, text=True, timeout=60, **as_nobody())
    assert p.returncode == 1 and p.stderr == f"vzcaps report: {bad}: cannot open: Permission denied\n", p.stderr


def test_an_environment_json_that_cannot_be_used_fails_the_run(tmp_path):
    d = role_dir(tmp_path)
    (d / "environment.json").write_text("{not json")
    p = report(str(d))
    assert p.returncode == 1 and p.stderr.startswith(f"vzcaps report: {d / 'environment.json'}: not valid JSON: "), p.stderr
    (d / "environment.json").unlink()
    os.mkfifo(d / "environment.json")
    p = report(str(d))
    assert p.returncode == 1 and p.stderr == f"vzcaps report: {d / 'environment.json'}: not a regular file (a FIFO)\n"


def test_log_text_is_escaped_in_text_and_markdown(tmp_path):
    """row 16: a family line holding a C1 CSI (\\xc2\\x9b) and invalid UTF-8 was printed raw."""
    line = b"ggml_metal_device_init: GPU family: MTLGPUFamilyApple7\xc2\x9b31m\xff|x  (1007)\n"
    d = role_dir(tmp_path)
    (d / "unlocked-guest.stderr").write_bytes(line)
    p = subprocess.run([VZ, "report", str(d)], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert b"\xc2\x9b" not in p.stdout and b"\xff" not in p.stdout
    assert b"unlocked MTLGPUFamilyApple7\\xc2\\x9b31m\\xff|x (1007)" in p.stdout, p.stdout
    p = subprocess.run([VZ, "report", "--md", "-", str(d)], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert b"\xc2\x9b" not in p.stdout and b"\xff" not in p.stdout
    assert b"| unlocked | MTLGPUFamilyApple7\\xc2\\x9b31m\\xff\\|x (1007) |" in p.stdout, p.stdout


def test_a_log_with_more_family_lines_than_the_table_fails_naming_it(tmp_path):
    """No fixed table drops entries: the 17th "GPU family:" line is refused, not dropped."""
    d = role_dir(tmp_path)
    bad = d / "unlocked-guest.stderr"
    bad.write_text("".join(f"ggml_metal_device_init: GPU family: MTLGPUFamilyCommon{n}  ({3000 + n})\n" for n in range(17)))
    p = report(str(d))
    assert p.returncode == 1 and p.stderr == f"vzcaps report: {bad}: more than 16 \"GPU family:\" lines (17)\n", p.stderr
    bad.write_text("".join(f"ggml_metal_device_init: GPU family: MTLGPUFamilyCommon{n}  ({3000 + n})\n" for n in range(16)))
    p = report("--json", str(d))
    assert p.returncode == 0 and len(json.loads(p.stdout)["capabilities"]["unlocked"]["families"]) == 16


def test_a_csv_name_too_long_for_its_record_is_refused_before_anything_is_written(tmp_path):
    """A CSV's record is .NAME.vzcaps-report beside it, so NAME holds at most 240 bytes: a longer
    one (still a valid file name) is refused with nothing written (the CSV was written, then its
    record failed with 'File name too long', exit 1, and every later run refused the CSV)."""
    longest, too_long = tmp_path / ("c" * 236 + ".csv"), tmp_path / ("c" * 237 + ".csv")
    p = report(*fixture_args(), "--csv", str(too_long))
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert f"cannot write {too_long}: " in p.stderr and "240 bytes" in p.stderr
    assert os.listdir(tmp_path) == []
    for _ in range(2):  # written and recorded, then replaced as its own
        p = report(*fixture_args(), "--csv", str(longest))
        assert p.returncode == 0 and p.stderr == "", p.stderr


def test_a_record_that_cannot_be_written_is_named_where_it_is(tmp_path):
    """The line names the record beside the CSV (it said CSV/.CSV.vzcaps-report, a path under the CSV)."""
    csv = tmp_path / "out.csv"
    (tmp_path / ".out.csv.vzcaps-report").mkdir()
    p = report(*fixture_args(), "--csv", str(csv))
    assert p.returncode == 1 and f"({tmp_path}/.out.csv.vzcaps-report: " in p.stderr, p.stderr
    assert f"{csv}/" not in p.stderr
