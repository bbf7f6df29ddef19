"""A test that skips because a tool is missing did not run: every tool a test needs is installed
by scripts/install-deps, and a missing one fails the test naming that step (conftest.need_tool).
The skips left are explicit and name why the test does not apply: the platform (Linux-only,
the Linux cross build), root, or an artifact `make check` builds first (conftest.require_built:
a skip only when pytest runs alone; under make check a missing artifact fails)."""
import re

import pytest

from conftest import ROOT

ALLOWED = re.compile(r"Linux|a Mac|macOS|root|not built|has not run")
TESTS = sorted(p for p in (ROOT / "tests").rglob("*.py") if "fuzz" not in p.parts)


def skips(text):
    """(line number, call text) of every skip, skipif and importorskip in a test file."""
    for m in re.finditer(r"(pytest\.skip\(|skipif\(|importorskip\()", text):
        depth, i = 0, m.end() - 1
        while True:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        yield text.count("\n", 0, m.start()) + 1, text[m.start():i + 1]


def test_the_scan_finds_every_kind_of_skip():
    found = [call for _, call in skips('pytest.skip("npm is not installed")\n@pytest.mark.skipif(\n  not shutil.which("x"),'
                                       ' reason="x (y) missing")\nyaml = pytest.importorskip("yaml")\n')]
    assert found == ['pytest.skip("npm is not installed")', 'skipif(\n  not shutil.which("x"), reason="x (y) missing")',
                     'importorskip("yaml")']


@pytest.mark.parametrize("path", TESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_test_skips_for_a_missing_tool(path):
    if path.name == "test_no_tool_skips.py":
        return
    bad = []
    for line, call in skips(path.read_text()):
        reasons = re.findall(r'"([^"]*)"', call)
        if call.startswith("importorskip") or "which(" in call or not any(ALLOWED.search(r) for r in reasons):
            bad.append(f"{line}: {call}")
    assert not bad, f"{path.relative_to(ROOT)}: skips that are not about the platform, root or a build step " \
                    f"(install the tool in scripts/install-deps and use conftest.need_tool):\n" + "\n".join(bad)


def test_a_missing_build_artifact_fails_under_make_check(tmp_path, monkeypatch):
    from conftest import require_built
    missing = tmp_path / "libvzcaps.dylib"
    monkeypatch.setenv("VZTEST_MAKE_CHECK", "1")
    with pytest.raises(pytest.fail.Exception, match="not built by make check"):
        require_built(missing, how="make dist")
    monkeypatch.delenv("VZTEST_MAKE_CHECK")
    with pytest.raises(pytest.skip.Exception):
        require_built(missing, how="make dist")
    missing.write_bytes(b"")
    require_built(missing, how="make dist")  # present: nothing happens
