"""The macOS workflow fails where it should and always reports (issue: first Mac)."""
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
    for p in ("first-run/", "probe.json", "verify.json", "dyld-trace.txt", "doctor.json", "dist/"):
        assert p in paths
