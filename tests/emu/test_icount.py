"""The instruction count of tests/emu/icount.py (issue 46): its block-size sum is the count a code
hook gives one instruction at a time, its parts add up, and a configured start-up is told from an
unconfigured one. The last test writes build/emu-icount.txt, the table make check-emu prints (the
targets are printed, never asserted: make bench says met or NOT met)."""
import os
import sys

from conftest import ROOT
from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the archives are fetched by install-deps on Linux)

import pytest

if sys.platform.startswith("linux"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__)))
    import clients  # noqa: E402
    import icount  # noqa: E402
    BUILD = clients.BUILDS[0]


def need():
    if not BUILD.available():
        pytest.fail(f"{BUILD.extracted()}: missing; run scripts/install-deps (it fetches {BUILD.package}@{BUILD.version})")


@pytest.mark.parametrize("case", ["not configured", "unlocked"])
def test_the_block_sizes_add_up_to_the_instructions_a_code_hook_counts(case):
    need()
    env = icount.UNLOCKED if case == "unlocked" else {}
    blocks, _ = icount.count(BUILD, env)
    one, _ = icount.count(BUILD, env, one_by_one=True)
    assert blocks.n == one.n
    assert blocks.n["client"] > 1000 and blocks.library > 1000


def test_the_parts_are_where_the_library_runs():
    need()
    on, r = icount.count(BUILD, icount.UNLOCKED)
    off, _ = icount.count(BUILD, {})
    assert on.n["first device"] > 0 and on.n["calls"] > 0 and on.n["constructor"] > 0
    assert off.n["first device"] < 100 < on.n["first device"]  # nothing configures it: the install returns at once
    assert off.library < on.library
    assert on.n["client"] > 0 and r.family() == 1008


def test_zz_the_table_for_make_check_emu():
    need()
    lines, targets = icount.table()
    assert len(lines) == 1 + len(clients.BUILDS) and len(targets) == sum(b.available() for b in clients.BUILDS)
    out = ROOT / "build" / "emu-icount.txt"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(["check-emu: instructions inside the library per real client's start-up (tests/emu/icount.py)"]
                             + lines + targets) + "\n")
