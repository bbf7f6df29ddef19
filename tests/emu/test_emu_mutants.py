"""The planted mutants (mutants.py), each caught by the first check of the slice's suite that fails
on it: the interpose pairs, every configuration against the rig, the spawn paths. The count make
check-emu reports."""
import sys

import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
import cases
from shipped import (CHILDREN, CURRENT, HOWS, LIB, check_interpose, img, libpath, progs, rig, rig_answer,  # noqa: F401  (fixtures)
                     rig_memsize, spawn_case, write_summary)

if sys.platform.startswith("linux"):  # see shipped.py
    import mutants


MUTANTS = ["chip table byte", "supportsFamily: return", "dropped rebase", "swapped interpose entry"]


# ---------------------------------------------------------------- planted mutants

def first_failure(img, progs, tmp):
    """The first check of the suite that fails on img (None: every one passed): the interpose
    pairs, every configuration against the rig, the spawn paths."""
    checks = [("interpose pairs", lambda: check_interpose(img))]
    for c in cases.CASES:
        checks.append((c["name"], lambda c=c: _same(cases.on_emu(c, tmp, img, libpath(), rig_memsize()), rig_answer(c, tmp))))
    for how in HOWS:
        for child in CHILDREN:
            checks.append((f"{how} {child}", lambda how=how, child=child: spawn_case(img, progs, how, child, True, False)))
    for name, check in checks:
        try:
            check()
        except Exception as e:  # a failed assertion, a fault, a missing stand-in: caught
            return f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
    return None


def _same(got, want):
    assert got == want


def test_the_mutants_are_the_planted_ones():
    assert list(mutants.MUTANTS) == MUTANTS


@pytest.mark.parametrize("name", MUTANTS)
def test_planted_mutant_is_caught(name, img, rig, progs, tmp_path):
    mutant, what = mutants.make(name, LIB.read_bytes())
    f = tmp_path / "mutant" / "libvzcaps.dylib"
    f.parent.mkdir()
    f.write_bytes(mutant.raw)
    CURRENT[0] = f
    try:
        caught = first_failure(mutant, progs, str(tmp_path))
    finally:
        CURRENT[0] = LIB
    print(f"mutant {name} ({what}): {'caught by ' + caught if caught else 'NOT caught'}")
    assert caught, f"planted mutant not caught: {what}"
    CAUGHT.append(name)
    write_summary(mutants_caught=len(CAUGHT), mutants=len(mutants.MUTANTS))


CAUGHT = []
