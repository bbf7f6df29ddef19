"""The macOS workflow fails where it should and always reports (issue: first Mac)."""
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

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
