"""The tests themselves: a comparison of two structs byte for byte reads their padding, which
nothing initialises, so equal values can compare unequal (tests/rig/callers.m printed
`repeat DIFFERENT` for identical answers in one fresh-root run in three). Compare the fields."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
# memcmp(&a, ...) or memcmp(a, b, sizeof(struct ...)) / sizeof a where a is a struct
STRUCT_MEMCMP = re.compile(r"memcmp\s*\(\s*&")


def struct_memcmps(root):
    bad = []
    for p in sorted(root.rglob("*")):
        if p.suffix not in (".c", ".m", ".h") or not p.is_file():
            continue
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if STRUCT_MEMCMP.search(line):
                bad.append(f"{p.relative_to(root)}:{n}: {line.strip()}")
    return bad


def test_no_test_compares_structs_byte_for_byte():
    assert struct_memcmps(ROOT / "tests") == []


def test_the_check_finds_a_struct_memcmp(tmp_path):
    (tmp_path / "t.c").write_text("struct a x, y;\nint same = memcmp(&x, &y, sizeof x) == 0;\n")
    assert struct_memcmps(tmp_path) == ["t.c:2: int same = memcmp(&x, &y, sizeof x) == 0;"]
