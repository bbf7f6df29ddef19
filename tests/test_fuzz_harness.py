"""The environment fuzz target computes the refusal rule on its own, from a list of the
VZCAPS_ names the library knows. That list must be the documented one: a name missing from
it makes the target trap on a valid input (CI found VZCAPS_LOG_FILE=... that way), a name
too many hides a refusal."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def documented_names():
    rows = (ROOT / "docs" / "variables.md").read_text().splitlines()
    return {m.group(1) for r in rows if (m := re.match(r"^\| `(VZCAPS_[A-Z_]+)` \|", r))}


def harness_names():
    src = (ROOT / "tests" / "fuzz" / "fuzz_environ.c").read_text()
    m = re.search(r"static const char \*const known\[\] = \{(.*?)\};", src, re.S)
    assert m, "fuzz_environ.c: no known[] table"
    return set(re.findall(r'"(VZCAPS_[A-Z_]+)"', m.group(1)))


def test_harness_knows_every_documented_variable():
    doc = documented_names()
    assert len(doc) >= 13, doc
    assert harness_names() == doc


def test_a_seed_names_every_documented_variable():
    """The seeds run first on every fuzz run, so each accepted name is tried every time."""
    seed = (ROOT / "tests" / "fuzz" / "corpus" / "fuzz_environ" / "every-variable").read_text()
    given = {line.split("=", 1)[0] for line in seed.splitlines()}
    assert documented_names() <= given
