"""Ollama as it is built today, on the GNU-runtime rig: the server starts llama.cpp's
`llama-server --list-devices` to read GPU memory (again with GGML_METAL_TENSOR_DISABLE=1 after a
Metal failure), then `llama-server` as the runner. Both children must get the injection when
configured (a config section with inherit, or vzcaps run --inherit), and neither without."""
import os
import subprocess

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

M2 = {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}
SECTION = "[ollama]\nmatch = ollama llama-server\napple_family_max = auto\ninherit = yes\n"


def server_tree(tmp_path, retry=False):
    """ollama serve: a discovery child (optionally through env, adding the retry variable),
    then a runner child; both are llama-server."""
    for name in ("ollama", "llama-server"):
        if not (tmp_path / name).exists():
            os.symlink(BUILD / "probe", tmp_path / name)
    server = str(tmp_path / "llama-server")
    discovery = ["/usr/bin/env", "GGML_METAL_TENSOR_DISABLE=1", server] if retry else [server]
    return [str(tmp_path / "ollama"), "--each", *discovery, "--list-devices", "--and", server, "--model", "m.gguf"]


def roles(text):
    """[(role, families)] per process, the server first."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("class "):
            cur = ["server"]
            out.append(cur)
        elif line.startswith("role "):
            cur[0] = line.split()[1]
    return [(r[0], p["families"]) for r, p in zip(out, parse_probe(text))]


def run(tmp_path, *vzcaps_args, retry=False, conf=None):
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    if conf:
        (tmp_path / "c.conf").write_text(conf)
        env["VZCAPS_CONFIG"] = str(tmp_path / "c.conf")
    p = subprocess.run([str(BUILD / "vzcaps"), "run", *vzcaps_args, "--", *server_tree(tmp_path, retry)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return roles(p.stdout), [line for line in p.stderr.splitlines() if line.startswith("vzcaps:")]


def test_the_section_reaches_the_discovery_child_and_the_runner(tmp_path):
    got, log = run(tmp_path, conf=SECTION)
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]
    # each process says, in its one line, that it really hooked its device
    assert [line.split(" via ")[0] for line in log] == [
        "vzcaps: hooked AppleParavirtDevice for ollama", "vzcaps: hooked AppleParavirtDevice for llama-server",
        "vzcaps: hooked AppleParavirtDevice for llama-server"]


def test_inherit_reaches_the_discovery_child_and_the_runner(tmp_path):
    got, _ = run(tmp_path, "--inherit")
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]


def test_the_discovery_retry_with_the_tensor_variable_keeps_the_injection(tmp_path):
    # Ollama retries discovery with GGML_METAL_TENSOR_DISABLE=1: a variable vzcaps neither reads
    # nor sets; the child started through another program still gets the profile
    got, log = run(tmp_path, conf=SECTION, retry=True)
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]
    assert " for env " not in " ".join(log)  # env is not in the section: it passes the injection on
    got, _ = run(tmp_path, "--inherit", retry=True)
    assert got == [("server", M2), ("list-devices", M2), ("runner", M2)]


def test_without_inherit_both_children_start_stock(tmp_path):
    got, log = run(tmp_path)
    assert got == [("server", M2), ("list-devices", STOCK_FAMILIES), ("runner", STOCK_FAMILIES)]
    assert len(log) == 1 and log[0].startswith("vzcaps: hooked AppleParavirtDevice for ollama via ")
