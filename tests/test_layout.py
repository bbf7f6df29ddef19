"""The source tree shows the architecture (docs/architecture.md): folders by subsystem, and
#include only downwards. These tests fail when a file crosses a folder boundary upwards, when a
folder grows past what a reader can hold, or when main.c stops being a dispatcher."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# A folder may include its own files and those of folders of a lower rank, nothing else.
RANK = {"core": 0, "common": 1, "shim": 2, "macho": 2, "data": 2, "device": 3, "platform": 3, "cli": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h", ".m"))


def folder_includes(path):
    """The src/ folders that path's quoted includes land in (generated headers excluded)."""
    out = []
    for inc in INCLUDE.findall(path.read_text(errors="replace")):
        target = (path.parent / inc).resolve()
        try:
            rel = target.relative_to(SRC)
        except ValueError:
            continue  # build/kernels.h and the like
        out.append((inc, rel.parts[0]))
    return out


def violations(rank=RANK):
    bad = []
    for p in sources():
        here = p.relative_to(SRC).parts[0]
        for inc, there in folder_includes(p):
            if there not in rank or here not in rank:
                bad.append(f"{p.relative_to(ROOT)}: {inc}: folder {there} is not in the layout")
            elif there != here and rank[there] >= rank[here]:
                bad.append(f"{p.relative_to(ROOT)}: {inc}: {here} may not include {there}")
    return bad


def test_every_folder_is_in_the_layout():
    assert sorted(d.name for d in SRC.iterdir() if d.is_dir()) == sorted(RANK)


def test_includes_only_go_down():
    assert violations() == []


def test_the_check_catches_an_include_that_goes_up(tmp_path, monkeypatch):
    # the same check on a tree where core includes the command: it must complain
    fake = tmp_path / "src"
    (fake / "core").mkdir(parents=True)
    (fake / "cli").mkdir()
    (fake / "cli" / "cli.h").write_text("")
    (fake / "core" / "x.c").write_text('#include "../cli/cli.h"\n')
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert violations() == ["src/core/x.c: ../cli/cli.h: core may not include cli"]


def test_core_includes_nothing_outside_itself_and_the_library_nothing_of_the_command():
    for p in sources():
        here = p.relative_to(SRC).parts[0]
        for inc, there in folder_includes(p):
            if here == "core":
                assert there == "core", f"{p}: {inc}"
            if here == "shim":
                assert there in ("core", "common", "shim"), f"{p}: {inc}"


def test_the_folder_graph_has_no_cycle():
    edges = {}
    for p in sources():
        here = p.relative_to(SRC).parts[0]
        for _, there in folder_includes(p):
            if there != here:
                edges.setdefault(here, set()).add(there)
    seen, done = set(), set()

    def visit(n, path):
        assert n not in seen or n in done, f"cycle: {' -> '.join(path + [n])}"
        if n in done:
            return
        seen.add(n)
        for m in edges.get(n, ()):
            visit(m, path + [n])
        done.add(n)

    for n in list(edges):
        visit(n, [])


@pytest.mark.parametrize("folder", sorted(RANK))
def test_no_folder_holds_more_than_15_c_files(folder):
    assert len(list((SRC / folder).glob("*.c"))) <= 15


def test_no_source_file_is_over_800_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sources() if (n := len(p.read_text(errors="replace").splitlines())) > 800]
    assert long == []


def test_main_only_dispatches():
    assert len((SRC / "cli" / "main.c").read_text().splitlines()) <= 200


def test_every_source_file_says_what_it_owns():
    for p in sources():
        head = p.read_text(errors="replace").lstrip()
        assert head.startswith("/*") or head.startswith("//"), f"{p.relative_to(ROOT)} opens without its comment"
