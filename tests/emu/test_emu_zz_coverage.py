"""Coverage of the shipped arm64 slice: every function the tests of tests/emu reached, block by
block, written to build/emu-coverage.txt. Named to be collected after every other test of the
slice (pytest collects a folder's files in name order; only test_icount.py follows it): it reads
what every test before it reached."""
import pathlib
import sys

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
from conftest import ROOT
from shipped import img, write_summary  # noqa: F401  (img: a fixture)

if sys.platform.startswith("linux"):  # see shipped.py
    import machoemu


# ---------------------------------------------------------------- coverage of the shipped code
# (last of the slice's tests: it reads what every test before it reached)

HERE = pathlib.Path(__file__).resolve().parent


def collected_after(name, names):
    """The test files pytest collects after name in its folder (it collects them in name order)."""
    return sorted(n for n in names if n > name)


def test_only_the_instruction_count_is_collected_after_the_coverage_test():
    """A test file of the slice named to sort after this one would run after the coverage table
    is written, and what it reaches would go uncounted; test_icount.py only counts instructions."""
    names = [p.name for p in HERE.glob("test_*.py")]
    here = pathlib.Path(__file__).name
    assert collected_after(here, names) == ["test_icount.py"]
    assert collected_after(here, names + ["test_emu_zzz_more.py"]) == ["test_emu_zzz_more.py", "test_icount.py"]


COVERAGE_FILE = ROOT / "build" / "emu-coverage.txt"
# functions no test can reach, each with its reason (docs/emulation.md, "What stays unreached")
UNREACHABLE = {}


def coverage_rows(img):
    return machoemu.coverage_table(img, machoemu.REACHED.get(img.key, set()))


def write_table(rows, path):
    lines = [f"{'function':48} {'bytes':>6} {'blocks':>6} {'reached':>7}"]
    for name, start, size, n_blocks, n_reached in sorted(rows, key=lambda r: (r[4] > 0, r[0])):
        lines.append(f"{name:48} {size:6} {n_blocks:6} {n_reached:7}{'' if n_reached else '  NEVER'}")
    reached = sum(1 for r in rows if r[4])
    lines.append(f"{reached} of {len(rows)} functions ({100 * reached / len(rows):.1f} %) reached; "
                 f"{sum(r[4] for r in rows)} of {sum(r[3] for r in rows)} blocks")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return reached, lines


def test_zz_coverage_of_the_library(img):
    rows = coverage_rows(img)
    assert len(rows) == len(img.function_starts()) > 50
    reached, lines = write_table(rows, COVERAGE_FILE)
    never = [r[0] for r in rows if not r[4]]
    print("\n".join(lines))
    unexplained = [n for n in never if n not in UNREACHABLE]
    write_summary(reached=reached, functions=len(rows))
    assert reached * 100 >= 95 * len(rows), f"{reached} of {len(rows)} reached; never: {', '.join(never)}"
    assert not unexplained, f"never reached and not explained in UNREACHABLE: {', '.join(unexplained)}"
