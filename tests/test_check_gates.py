"""scripts/check-gates: every capability query of the pinned llama.cpp and whisper.cpp sources
is in the project's table, and a source with a query the table lacks fails. Fetches the two
source archives from PyPI once (cached under ~/.cache/vzcaps/sdists)."""
import shutil
import subprocess
import sys

import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig cross-check runs build/probe)
from conftest import ROOT

SCRIPT = [sys.executable, str(ROOT / "scripts" / "check-gates")]


def gates(*args):
    return subprocess.run([*SCRIPT, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def pinned():
    """{client: extracted ggml-metal directory} of the pinned sdists."""
    p = gates("--where")
    assert p.returncode == 0, p.stderr
    return dict(line.split("\t") for line in p.stdout.splitlines())


def test_pinned_sources_pass_and_name_every_gate(pinned):
    p = gates()
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    for needle in ("supportsFamily: MTLGPUFamilyApple7", "supportsFamily: MTLGPUFamilyApple6",
                   "supportsFamily: MTLGPUFamilyMetal3_GGML", "supportsFamily: MTLGPUFamilyMetal4_GGML",
                   "supportsFamily: MTLGPUFamilyApple21..MTLGPUFamilyApple1 (scan)",
                   "recommendedMaxWorkingSetSize", "GGML_METAL_TENSOR_DISABLE", "whisper.cpp (pywhispercpp 1.5.1)",
                   "llama.cpp (llama-cpp-python 0.3.36)", "the library's answers on the GNU-runtime stand-in match"):
        assert needle in out, needle
    lines = out.splitlines()
    # the answers: Apple7 and Apple6 go from no to yes on an M2 host, Metal3/Metal4 stay no,
    # the device name is never changed, and the scan that picks the tuning rows says Apple8
    row = {line.split()[1] if line.split()[0] == "supportsFamily:" else line.split()[0]: line
           for line in lines if line.startswith("  ") and line.split()}
    assert row["MTLGPUFamilyApple7"].split()[2:4] == ["no", "yes"]
    assert row["MTLGPUFamilyApple6"].split()[2:4] == ["no", "yes"]
    assert row["MTLGPUFamilyMetal3_GGML"].split()[2:4] == ["no", "no"]
    assert row["MTLGPUFamilyMetal4_GGML"].split()[2:4] == ["no", "no"]
    assert "Apple5 (highest yes)" in row["MTLGPUFamilyApple21..MTLGPUFamilyApple1"]
    assert "Apple8 (highest yes)" in row["MTLGPUFamilyApple21..MTLGPUFamilyApple1"]
    assert "Apple Paravirtual device" in row["name"] and "unchanged" in row["name"]


@pytest.mark.parametrize("added,needle", [
    ("dev->props.x = [dev->mtl_device supportsFamily:MTLGPUFamilyApple10];", "supportsFamily: MTLGPUFamilyApple10"),
    ("dev->props.y = dev->mtl_device.maxArgumentBufferSamplerCount;", "property maxArgumentBufferSamplerCount"),
    ("dev->props.z = [dev->mtl_device supportsRaytracing];", "property supportsRaytracing"),
    ('if (getenv("GGML_METAL_SIMDGROUP_FORCE")) {}', "environment GGML_METAL_SIMDGROUP_FORCE"),
    ("for (int i = MTLGPUFamilyApple1 + 30; i >= MTLGPUFamilyApple1; --i) { [dev->mtl_device supportsFamily:i]; }",
     "MTLGPUFamilyApple31..MTLGPUFamilyApple1 (scan)"),
])
def test_a_query_the_table_lacks_fails(pinned, tmp_path, added, needle):
    src = tmp_path / "ggml-metal"
    shutil.copytree(pinned["llama.cpp (llama-cpp-python 0.3.36)"], src)
    dev = src / "ggml-metal-device.m"
    dev.write_text(dev.read_text() + "\nstatic void added(ggml_metal_device_t dev) {\n    " + added + "\n}\n")
    p = gates("--source", f"llama.cpp copy={src}")
    assert p.returncode == 1, p.stdout
    assert needle in p.stderr and "is not in the project's table" in p.stderr, p.stderr
    assert "ggml-metal-device.m:" in p.stderr  # where it was found


def test_the_clients_page_lists_every_query_of_the_table():
    """docs/clients.md prints the table; a query added to the script is added to the page."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("check_gates", str(ROOT / "scripts" / "check-gates"))
    spec = importlib.util.spec_from_loader("check_gates", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    page = (ROOT / "docs" / "clients.md").read_text()
    missing = [key for kind, key in mod.QUERIES if f"`{key}`" not in page and f"`supportsFamily: {key}`" not in page]
    assert missing == []
    assert "UNSLOTH_ALLOW_PARAVIRTUAL_METAL=1" in page and "vzcaps bench -m model.gguf --check-output" in page


def test_queries_in_comments_and_strings_are_not_queries(pinned, tmp_path):
    src = tmp_path / "ggml-metal"
    shutil.copytree(pinned["whisper.cpp (pywhispercpp 1.5.1)"], src)
    dev = src / "ggml-metal-device.m"
    dev.write_text(dev.read_text() + '\n// [dev->mtl_device supportsFamily:MTLGPUFamilyApple10]\n'
                   '/* dev->mtl_device.maxArgumentBufferSamplerCount */\n'
                   'static const char *s = "device.foo [device bar]";\n')
    p = gates("--source", f"whisper copy={src}")
    assert p.returncode == 0, p.stderr


def test_a_directory_without_ggml_metal_sources_fails(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.m").write_text("int x;\n")
    p = gates("--source", f"nothing={tmp_path / 'empty'}")
    assert p.returncode == 1 and "no supportsFamily: query found" in p.stderr
    p = gates("--source", f"missing={tmp_path / 'nope'}")
    assert p.returncode != 0 and "no such file or directory" in p.stderr

