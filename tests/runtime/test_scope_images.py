"""The caller scope follows images, not addresses, on the GNU-runtime rig (issue 44 item 6): a
client library unloaded (dlclose) and another loaded in the memory it left asks from the same
addresses and gets its own image's answers; and a library loaded after the first device (dlopen)
is judged too."""
import subprocess

import pytest

from conftest import BUILD, clean_env, require_built

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", VZCAPS_RECOMMENDED_WORKING_SET_SIZE="8000000000")
GGML, TORCH = "libggml-metal.so", "libtorch_cpu.so"


def reload(first, then, lib=None, **env):
    require_built(BUILD / "reload", how="make rig")
    e = clean_env(**M2, **env)
    e["LD_PRELOAD"] = str(lib or BUILD / "libvzcaps.so")
    p = subprocess.run([str(BUILD / "reload"), str(BUILD / "clients" / first), str(BUILD / "clients" / then)],
                       env=e, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines()]
    return [(w[0], w[2], int(w[4]), int(w[6])) for w in rows]


@pytest.mark.parametrize("first,then", [(GGML, TORCH), (TORCH, GGML)])
def test_a_library_loaded_where_another_was_gets_its_own_answers(first, then):
    got = reload(first, then)
    assert got[0][1] == got[1][1], f"ld.so did not reuse the memory, the case is not made: {got}"
    want = {GGML: (1, 8000000000), TORCH: (0, 5010800640)}
    assert [(name, fam, ws) for name, _, fam, ws in got] == [(first, *want[first]), (then, *want[then])]


def test_every_caller_in_scope_stays_so_across_reloads():
    got = reload(GGML, TORCH, VZCAPS_STOCK_CALLERS="none")
    assert [(fam, ws) for _, _, fam, ws in got] == [(1, 8000000000), (1, 8000000000)]


def test_reloads_under_asan_and_ubsan():
    san = BUILD / "san" / "libvzcaps.so"
    require_built(san, how="the sanitized build")
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    got = reload(TORCH, GGML, lib=f"{asan}:{san}", ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")
    assert [(fam, ws) for _, _, fam, ws in got] == [(0, 5010800640), (1, 8000000000)]
