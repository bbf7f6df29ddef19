"""The macOS workflow fails where it should and always reports (issue: first Mac); it and
action.yml pass actionlint (issue 26 items 7 and 8)."""
import json
import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, need_tool

WF = yaml.safe_load((ROOT / ".github" / "workflows" / "macos.yml").read_text())
STEPS = WF["jobs"]["guest"]["steps"]


def step(name_part):
    found = [s for s in STEPS if name_part in s.get("name", "")]
    assert len(found) == 1, name_part
    return found[0]


def test_every_step_runs_with_pipefail():
    # GitHub runs an explicit `shell: bash` as bash -eo pipefail; its implicit default has no pipefail
    assert WF["defaults"]["run"]["shell"] == "bash"
    assert all(s.get("shell", "bash") == "bash" for s in STEPS)


def test_first_run_steps_do_not_depend_on_the_test_suite():
    order = [s.get("name", "") for s in STEPS]
    suite = order.index(step("Test suite")["name"])
    for part in ("First-run bundle", "Probe stock vs unlocked", "Verify the unlocked paths", "traced by dyld"):
        s = step(part)
        assert order.index(s["name"]) < suite, part
        assert s["if"] == "always() && steps.build.outcome == 'success'", part
        assert not s.get("continue-on-error"), part  # they fail the job


def test_probe_step_fails_when_nothing_changed():
    run = step("Probe stock vs unlocked")["run"]
    assert 'd["changed"]' in run and "sys.exit" in run


def test_dyld_trace_and_everything_is_uploaded():
    run = step("traced by dyld")["run"]
    assert "DYLD_PRINT_INTERPOSING=1" in run and "DYLD_PRINT_LIBRARIES=1" in run
    upload = [s for s in STEPS if s.get("uses", "").startswith("actions/upload-artifact")]
    assert len(upload) == 1 and upload[0]["if"] == "always()"
    paths = upload[0]["with"]["path"].split()
    for p in ("first-run/", "probe.json", "verify.json", "dyld-trace.txt", "doctor.json", "dist/", "test-suite.log"):
        assert p in paths


def test_the_test_suite_log_is_kept_and_uploaded():
    assert "| tee test-suite.log" in step("Test suite")["run"]
    upload = [s for s in STEPS if s.get("uses", "").startswith("actions/upload-artifact")][0]
    assert "test-suite.log" in upload["with"]["path"].split()


# The dyld step's check, run on traces in the formats dyld's source prints (not observed on a Mac).
LIB = "/Users/runner/work/vzcaps/vzcaps/build/libvzcaps.dylib"
EXE = "/Users/runner/work/vzcaps/vzcaps/build/vzcaps"
GOOD = [
    f"dyld[4242]: <4C4C4471-5555-3144-A1B2-0123456789AB> {EXE}",
    f"dyld[4242]: <1D2E3F40-1111-3222-B333-444455556666> {LIB}",
    "dyld[4242]: <0A0B0C0D-2222-3333-8444-555566667777> /System/Library/Frameworks/Metal.framework/Versions/A/Metal",
    "dyld[4242]: libvzcaps.dylib has interposed '_MTLCreateSystemDefaultDevice' to replacing binds to 0x1A0001000 with 0x100200000",
    "dyld[4242]: libvzcaps.dylib has interposed '_MTLCopyAllDevices' to replacing binds to 0x1A0002000 with 0x100200100",
    "dyld[4242]: libvzcaps.dylib has interposed '_MTLCopyAllDevicesWithObserver' to replacing binds to 0x1A0003000 with 0x100200200",
    f"dyld[4242]:   interpose replaced 0x1A0001000 with 0x1A0001000 in {LIB}",
    f"dyld[4242]:   interpose replaced 0x1A0001000 with 0x100200000 in {EXE}",
    "vzcaps: enabled (profile auto)",
]


def dyld_check(tmp_path, lines):
    run = step("traced by dyld")["run"]
    code = run[run.index("<<'EOF'\n") + len("<<'EOF'\n"):run.index("\nEOF")]
    trace = tmp_path / "dyld-trace.txt"
    trace.write_text("\n".join(lines) + "\n")
    return subprocess.run([sys.executable, "-", str(trace)], input=code, capture_output=True, text=True)


def test_dyld_check_passes_when_the_library_is_loaded_and_bound(tmp_path):
    p = dyld_check(tmp_path, GOOD)
    assert p.returncode == 0, p.stderr
    assert f"loaded from {LIB}" in p.stdout and f"binds rerouted in {EXE}" in p.stdout


@pytest.mark.parametrize("drop,needle", [
    ("<1D2E3F40", "did not load libvzcaps.dylib"),  # only the executable's own path names vzcaps
    ("'_MTLCopyAllDevices'", "did not interpose MTLCopyAllDevices"),
    (f"with 0x100200000 in {EXE}", "no image's binds were rerouted"),
])
def test_dyld_check_fails_without_each_piece_of_evidence(tmp_path, drop, needle):
    p = dyld_check(tmp_path, [line for line in GOOD if drop not in line])
    assert p.returncode == 1 and needle in p.stderr, (p.returncode, p.stderr)


def test_dyld_check_fails_on_a_trace_the_old_grep_accepted(tmp_path):
    lines = [f"dyld[1]: <4C4C4471-5555-3144-A1B2-0123456789AB> {EXE}", "vzcaps: enabled"]
    assert dyld_check(tmp_path, lines).returncode == 1


# ---- actionlint: the workflow, and action.yml's steps as a workflow of their own ----

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())


def action_as_workflow(action):
    """A composite action's steps are workflow steps; its inputs are a reusable workflow's."""
    inputs = {k: {"type": "string", "required": False, "default": v.get("default", "")} for k, v in action["inputs"].items()}
    return {"name": "action.yml", "on": {"workflow_call": {"inputs": inputs}},
            "jobs": {"action": {"runs-on": "macos-15", "steps": action["runs"]["steps"]}}}


def actionlint(where, workflow, action):
    """actionlint on workflow (which uses ./, read from where/action.yml) and on action's steps."""
    (where / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    (where / ".github" / "workflows" / "macos.yml").write_text(workflow)
    (where / "action.yml").write_text(yaml.safe_dump(action, sort_keys=False))
    (where / ".github" / "workflows" / "action-steps.yml").write_text(json.dumps(action_as_workflow(action)))
    tool = need_tool("actionlint")
    subprocess.run(["git", "init", "-q", str(where)], check=True)  # actionlint finds ./ from the repository's root
    return subprocess.run([tool, "-no-color", ".github/workflows/macos.yml", ".github/workflows/action-steps.yml"],
                          cwd=where, capture_output=True, text=True, timeout=120)


def test_actionlint_passes_the_workflow_and_the_action(tmp_path):
    version = re.search(r"^ACTIONLINT_VERSION=(\S+)$", (ROOT / "scripts" / "install-deps").read_text(), re.M).group(1)
    assert subprocess.run([need_tool("actionlint"), "-version"], capture_output=True, text=True).stdout.split()[0] == f"v{version}"
    p = subprocess.run([need_tool("actionlint"), "-no-color", ".github/workflows/macos.yml"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    p = actionlint(tmp_path, (ROOT / ".github" / "workflows" / "macos.yml").read_text(), ACTION)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("break_it,needle", [
    (lambda wf, a: (wf.replace("          programs: llama-bench", "          programz: llama-bench"), a), 'input "programz" is not defined'),
    (lambda wf, a: (wf.replace("steps.vzcaps.outputs.shim-dir", "steps.vzcaps.outputs.shimdir"), a), 'property "shimdir" is not defined'),
    (lambda wf, a: (wf, {**a, "runs": {**a["runs"], "steps": [dict(a["runs"]["steps"][2], env={"X": "${{ inputs.program }}"})]}}),
     'property "program" is not defined'),
])
def test_actionlint_fails_a_broken_workflow_or_action(tmp_path, break_it, needle):
    wf, action = break_it((ROOT / ".github" / "workflows" / "macos.yml").read_text(), ACTION)
    p = actionlint(tmp_path, wf, action)
    assert p.returncode == 1 and needle in p.stdout, p.stdout + p.stderr


# ---- issue 26 item 8: macos-26, a small real model through the action's shims ----

def test_the_matrix_has_the_macos_26_runner():
    assert WF["jobs"]["guest"]["strategy"]["matrix"]["os"] == ["macos-15", "macos-26"]


# ---- issue 32 row 15: supported runner labels only ----

# GitHub's runner images list macos-14 as deprecated and unsupported from November 2026; the
# arm64 guests are macos-15 and macos-26, the one Intel image macos-15-intel.
SUPPORTED_RUNNERS = {"macos-15", "macos-26", "macos-15-intel"}


def runner_labels(workflow):
    """Every label a workflow's jobs ask for, a matrix expression expanded over its values."""
    out = []
    for name, job in workflow["jobs"].items():
        want = job.get("runs-on")
        wants = want if isinstance(want, list) else [want]
        for w in wants:
            m = re.fullmatch(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", str(w))
            if m:
                values = job["strategy"]["matrix"][m.group(1)]
                out += [(name, v) for v in values]
            else:
                out.append((name, w))
    return out


def test_every_workflow_asks_only_for_supported_runner_labels():
    files = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
    assert files
    for f in files:
        labels = runner_labels(yaml.safe_load(f.read_text()))
        assert labels, f
        bad = [(job, label) for job, label in labels if label not in SUPPORTED_RUNNERS]
        assert not bad, f"{f.name}: unsupported runner labels {bad}"


def test_the_runner_check_expands_a_matrix():
    wf = {"jobs": {"a": {"runs-on": "${{ matrix.os }}", "strategy": {"matrix": {"os": ["macos-14", "macos-26"]}}},
                   "b": {"runs-on": "ubuntu-latest"}}}
    assert runner_labels(wf) == [("a", "macos-14"), ("a", "macos-26"), ("b", "ubuntu-latest")]


def test_the_action_runs_in_the_workflow_with_llama_cpps_programs():
    s = step("vzcaps action")
    assert s["uses"] == "./" and s["id"] == "vzcaps" and s["if"] == "always() && steps.build.outcome == 'success'"
    assert {"llama-bench", "llama-server"} <= set(s["with"]["programs"].split())
    order = [x.get("name", "") for x in STEPS]
    assert order.index(step("llama.cpp through vzcaps run")["name"]) < order.index(s["name"])  # brew installed it


def test_the_model_is_pinned_checked_before_use_and_only_downloaded_on_github():
    s = step("Small real model through the shims")
    assert "github.server_url == 'https://github.com'" in s["if"] and "steps.vzcaps.outcome == 'success'" in s["if"]
    assert re.fullmatch(r"https://huggingface\.co/[\w.-]+/[\w.-]+/resolve/\w+/[\w.-]+\.gguf", s["env"]["MODEL_URL"])
    assert re.fullmatch(r"[0-9a-f]{64}", s["env"]["MODEL_SHA256"])
    run = s["run"].splitlines()
    fetch = next(i for i, line in enumerate(run) if "curl" in line)
    check = next(i for i, line in enumerate(run) if 'shasum -a 256 -c' in line and "$MODEL_SHA256" in line)
    first_use = next(i for i, line in enumerate(run) if "-m small-model.gguf" in line)
    assert fetch < check < first_use
    # the only step that downloads anything, and the pin is the one docs/fleet.md names
    assert [x.get("name") for x in STEPS if "curl" in x.get("run", "") or "huggingface" in str(x.get("env", ""))] == [s["name"]]
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    assert s["env"]["MODEL_URL"] in fleet and s["env"]["MODEL_SHA256"] in fleet


def test_the_model_runs_stock_by_the_real_path_and_unlocked_through_the_shim():
    run = step("Small real model through the shims")["run"]
    assert '[ "$shim" = "$SHIM_DIR/llama-bench" ]' in run  # PATH leads to the shim, or the step fails
    stock = next(line for line in run.splitlines() if "stock.json" in line and "-m small-model.gguf" in line)
    unlocked = next(line for line in run.splitlines() if "unlocked.json" in line and "-m small-model.gguf" in line)
    assert stock.startswith('"$real" ') and unlocked.startswith("llama-bench ")
    assert "--svg model-bench/chart.svg" in run and "--md model-bench/report.md" in run
    upload = [x for x in STEPS if x.get("uses", "").startswith("actions/upload-artifact")][0]
    assert {"model-bench/", "action-doctor.json"} <= set(upload["with"]["path"].split())


# ---- issue 39 item 6: the action's cache key hashes the build's sources, never the job's outputs ----

KEY_STEP = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "key")
# what neither make nor make install reads on a Mac (the tests, the rig's and the cross build's
# inputs, the release's packaging, CI files): the key leaves them out
NOT_BUILT_FROM = {".ci", ".github", ".gitignore", "action.yml", "bench", "packaging", "pytest.ini", "stubs", "tests"}


def cache_key(tmp_path, workspace):
    """The key step's run, as the runner runs it with ./ as the action (working-directory: the
    workspace), on a Mac played by a sw_vers stand-in: the key it writes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "sw_vers").write_text("#!/bin/sh\necho 15.1\n")
    (bin_dir / "sw_vers").chmod(0o755)
    out = tmp_path / "github_output"
    out.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GITHUB_OUTPUT": str(out), "RUNNER_TEMP": str(tmp_path / "temp"),
           "ACTION_REF": "main", "LC_ALL": "C"}
    p = subprocess.run(["sh", "-e", "-c", KEY_STEP["run"]], cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return re.search(r"^key=(.*)$", out.read_text(), re.M).group(1)


def test_the_cache_key_ignores_the_jobs_outputs_and_follows_the_sources(tmp_path):
    """In the project's workflow the action's directory is the workspace: the key hashed it
    whole, with that run's outputs (the build, the evidence, doctor.json), so no job ever hit."""
    import shutil
    ws = tmp_path / "ws"
    shutil.copytree(ROOT, ws, ignore=shutil.ignore_patterns("build", "dist", ".git", "tests", "fuzz-out", "__pycache__"))
    key = cache_key(tmp_path, ws)
    assert re.fullmatch(r"vzcaps-main-[0-9a-f]{16}-macos-15\.1-\w+", key), key
    # what a job writes into its workspace: the build, outputs, evidence, a report
    (ws / "build").mkdir()
    (ws / "build" / "vzcaps").write_text("built")
    (ws / "model-bench").mkdir()
    (ws / "model-bench" / "summary.json").write_text("{}")
    (ws / "action-doctor.json").write_text("{}")
    (ws / "test-suite.log").write_text("ok")
    (ws / "packaging" / "new.txt").write_text("x")
    assert cache_key(tmp_path, ws) == key
    # every source of the build changes it
    for source in ("src/cli/main.c", "Makefile", "mk/darwin.mk", "scripts/install", "kernels", "docs/commands.md",
                   "README.md", "LICENSE"):
        path = ws / source
        if path.is_dir():
            path = sorted(path.iterdir())[0]
        before = path.read_bytes()
        path.write_bytes(before + b"\n")
        assert cache_key(tmp_path, ws) != key, source
        path.write_bytes(before)
    (ws / "src" / "cli" / "new file.c").write_text("")  # a new source, a name with a space
    assert cache_key(tmp_path, ws) != key
    (ws / "src" / "cli" / "new file.c").unlink()
    assert cache_key(tmp_path, ws) == key


def test_every_top_level_entry_is_in_the_cache_key_or_named_as_not_built_from():
    """A new top-level folder must be decided: hashed by the key (make or make install reads it)
    or named here as not read."""
    hashed = set(re.search(r"find (.*?) -type f", KEY_STEP["run"]).group(1).split())
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode == 0 and tracked.stdout:
        entries = {line.split("/")[0] for line in tracked.stdout.splitlines()}
    else:  # a copy without .git: what is there, less make's and pytest's outputs
        entries = {p.name for p in ROOT.iterdir() if p.name not in ("build", "dist", ".git", "fuzz-out", ".pytest_cache")}
    assert entries - hashed - NOT_BUILT_FROM == set()
    assert not hashed & NOT_BUILT_FROM
