"""The source tree shows the architecture (docs/architecture.md): folders by subsystem, and
#include only downwards. These tests fail when a file crosses a folder boundary upwards, when a
folder grows past what a reader can hold, or when main.c stops being a dispatcher."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# A folder may include its own files and those of folders of a lower rank, nothing else.
RANK = {"core": 0, "common": 1, "shim": 2, "macho": 2, "data": 2, "device": 3, "platform": 3, "launch": 4, "cli": 5}
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


# Every folder, a command group's included, holds at most this many .c files: a folder that
# reaches it is split by concern before the next file lands (issue 42).
MAX_C_FILES = 13
# The command room (src/cli): the front (main.c dispatches, commands.c is the table, help.c reads a
# command line against it and words it, options.c checks option values) and one folder a group of subcommands, as `vzcaps help`
# groups them: start (run, launchd, shims, prepare), check (check, doctor, inspect), proof
# (probe and verify, stats, report, bench).
CLI_GROUPS = {"start", "check", "proof"}


def folders():
    return sorted({p.parent for p in SRC.rglob("*.c")})


@pytest.mark.parametrize("folder", [str(f.relative_to(SRC)) for f in folders()])
def test_no_folder_holds_more_than_13_c_files(folder):
    assert len(list((SRC / folder).glob("*.c"))) <= MAX_C_FILES


def test_the_command_room_is_its_front_and_its_groups():
    cli = SRC / "cli"
    assert {d.name for d in cli.iterdir() if d.is_dir()} == CLI_GROUPS
    assert sorted(p.name for p in cli.glob("*.c")) == sorted(CLI_SHARED)
    for group in CLI_GROUPS:
        assert list((cli / group).glob("*.h")) == [], f"src/cli/{group}: a group has no header (cli.h is the contract)"
        assert [d for d in (cli / group).iterdir() if d.is_dir()] == [], f"src/cli/{group}: one level of groups"
    assert not [p for p in SRC.glob("*/*/") if p.parent.name != "cli"], "only src/cli has groups"


MAX_LINES = 800


def over_the_limit(paths, root=None):
    """Each of paths with more than MAX_LINES lines, as 'path: lines' relative to root."""
    root = root or ROOT
    return [f"{p.relative_to(root)}: {n}" for p in paths if (n := len(p.read_text(errors="replace").splitlines())) > MAX_LINES]


def test_no_source_file_is_over_800_lines():
    assert over_the_limit(sources()) == []


# ---- the tests follow the same file-size rule (issue 42) ----
# Every file under tests/ is code held to the rule, whatever its name or extension (a Python
# module, a C or Objective-C test, a header, a stand-in shell script without an extension, a
# make fragment, the folder READMEs), except in the data folders: the fixtures (captured output
# of real tools) and the fuzzers' seed corpora, whose size is the data's. A data folder holds no
# program: no file in it is executable or named as source, so code cannot hide there. Python's
# and pytest's caches are not the tree's.
TESTS = ROOT / "tests"
TEST_DATA = ("fixtures", "fuzz/corpus")
CACHES = {"__pycache__", ".pytest_cache"}
SOURCE_SUFFIXES = {".py", ".c", ".m", ".h", ".sh", ".bash", ".zsh", ".fish", ".mk", ".pl", ".rb", ".js", ".swift", ".cc",
                   ".cpp"}


def files_under_tests(tests=None):
    """(code, data): every file under tests/ outside the caches, split by the data folders."""
    tests = tests or TESTS
    code, data = [], []
    for p in sorted(tests.rglob("*")):
        rel = p.relative_to(tests)
        if not p.is_file() or CACHES & set(rel.parts):
            continue
        in_data = any(rel.as_posix().startswith(d + "/") for d in TEST_DATA)
        (data if in_data else code).append(p)
    return code, data


def programs_among_data(tests=None):
    """The files of the data folders that are programs: executable, or named as source."""
    tests = tests or TESTS
    return [f"{p.relative_to(tests.parent)}" for p in files_under_tests(tests)[1]
            if p.suffix in SOURCE_SUFFIXES or p.stat().st_mode & 0o111]


def test_no_test_file_is_over_800_lines():
    assert over_the_limit(files_under_tests()[0]) == []


def test_the_data_folders_hold_no_program():
    assert programs_among_data() == []


def test_the_test_size_rule_sees_every_code_file_and_skips_only_data(tmp_path):
    tests = tmp_path / "tests"
    long = "x\n" * (MAX_LINES + 1)
    files = {"emu/big.py": long, "unit/core_x.c": long, "cli/standins/tool": "#!/bin/sh\n" + long, "README.md": long,
             "unit/at_the_limit.c": "x\n" * MAX_LINES, "emu/__pycache__/big.cpython-311.pyc": long,
             "fixtures/llama/host.json": long, "fuzz/corpus/fuzz_x/seed": long, "fixturesque/big.txt": long,
             "fixtures/hidden.py": "x\n", "fuzz/corpus/fuzz_x/run": "#!/bin/sh\n"}
    for name, text in files.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text(text)
    (tests / "fuzz/corpus/fuzz_x/run").chmod(0o755)
    assert over_the_limit(files_under_tests(tests)[0], tmp_path) == [
        "tests/README.md: 801", "tests/cli/standins/tool: 802", "tests/emu/big.py: 801", "tests/fixturesque/big.txt: 801",
        "tests/unit/core_x.c: 801"]
    assert programs_among_data(tests) == ["tests/fixtures/hidden.py", "tests/fuzz/corpus/fuzz_x/run"]


def test_main_only_dispatches():
    assert len((SRC / "cli" / "main.c").read_text().splitlines()) <= 200


def test_every_source_file_says_what_it_owns():
    for p in sources():
        head = p.read_text(errors="replace").lstrip()
        assert head.startswith("/*") or head.startswith("//"), f"{p.relative_to(ROOT)} opens without its comment"


# ---- the command's files: no subcommand leans on another's file (issue 31) ----
# main.c dispatches, commands.c is the table, help.c reads a command line against it (cli_parse)
# and words it, options.c checks option values: every subcommand may call those. A subcommand's file calls nothing defined in another
# subcommand's file and includes no header but cli.h (and the table's): what two commands share
# lives in a floor below (src/launch). doctor_bundle.c is doctor's own (doctor --bundle).
CLI_SHARED = ("main.c", "commands.c", "help.c", "options.c")
CLI_OWNER = {"doctor_bundle.c": "doctor.c"}
DISPATCH_ENTRY = re.compile(r"^(cmd_|child_)")  # what the dispatcher and the table may name
C_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINITION = re.compile(r"^(?!static\b)(?!typedef\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?\{", re.M | re.S)
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def c_code(path):
    return C_NOISE.sub(lambda m: "" if m.group(0)[0] in "/" else '""', path.read_text(errors="replace"))


def cli_definitions(cli):
    """Every non-static function defined in each src/cli/*.c: {file name: {function names}}."""
    return {p.name: set(DEFINITION.findall(c_code(p))) for p in sorted(cli.rglob("*.c"))}


def cross_references(cli):
    """Each use (a call or a function pointer) of a function defined in another command file."""
    defs = cli_definitions(cli)
    where = {f: name for name, fs in defs.items() for f in fs}
    bad = []
    for p in sorted(cli.rglob("*.c")):
        a = p.name
        used = set(IDENT.findall(c_code(p)))
        for f in sorted(used & set(where)):
            b = where[f]
            if b == a or CLI_OWNER.get(a) == b or CLI_OWNER.get(b) == a:
                continue
            if a in ("main.c", "commands.c") and b not in CLI_SHARED and DISPATCH_ENTRY.match(f):
                continue  # dispatch: the table names each command's entry point
            if b in ("commands.c", "help.c", "options.c") and not (a in ("commands.c", "help.c") and b == "options.c"):
                continue  # the table, its words and the option readers serve every command (none of options.c for the first two)
            bad.append(f"src/cli/{a}: uses {f} of src/cli/{b}")
        front = p.parent == cli
        for inc in INCLUDE.findall(p.read_text(errors="replace")):
            local = inc.removeprefix("../") if not front else inc
            if "/" not in local and local not in ("cli.h", "commands.h") or (not front and not inc.startswith("../")):
                bad.append(f"src/cli/{a}: includes {inc}")
            if inc == "commands.h" and a not in CLI_SHARED:
                bad.append(f"src/cli/{a}: includes commands.h (the table's, for main.c, commands.c and options.c)")
    return bad


def test_no_command_file_calls_or_includes_another():
    assert cross_references(SRC / "cli") == []


def test_the_cross_reference_check_catches_a_planted_call(tmp_path):
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "probe.c").write_text('#include "cli.h"\n/* verify_gate( in a comment */\nint verify_gate(const struct cfg_opts *o,\n'
                                 '                int n)\n{\n    return n;\n}\nstatic int helper(void) { return 0; }\n')
    (cli / "run.c").write_text('#include "cli.h"\n#include "probe.h"\nint cmd_run(int argc, char **argv)\n{\n'
                               '    const char *s = "helper(";\n    return verify_gate(0, argc) + helper();\n}\n')
    (cli / "doctor.c").write_text('int cmd_doctor(void)\n{\n    int (*f)(int, char **) = cmd_run;\n    return f != 0;\n}\n')
    (cli / "commands.c").write_text('int cmd_help(void) { return opt_take(); }\nconst void *table[] = {cmd_run, cmd_doctor};\n')
    (cli / "options.c").write_text('int opt_take(void)\n{\n    return usage_error();\n}\nint usage_error(void) { return 2; }\n')
    assert cross_references(cli) == [
        "src/cli/commands.c: uses opt_take of src/cli/options.c",
        "src/cli/doctor.c: uses cmd_run of src/cli/run.c",
        "src/cli/run.c: uses verify_gate of src/cli/probe.c",
        "src/cli/run.c: includes probe.h",
    ]


def test_the_definitions_the_check_reads_are_the_real_ones():
    # the scan must see the functions a subcommand exports (else it could never fail)
    defs = cli_definitions(SRC / "cli")
    assert "cmd_run" in defs["run.c"] and "cmd_shims" in defs["shims.c"] and "usage_error" in defs["help.c"]
    assert "timeout_opt" in defs["options.c"] and "cli_parse" in defs["help.c"]


# ---- no circle between files: calls and includes run one way (issue 42) ----
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
# A file built for one platform only never meets the other's.
PLATFORM_OF = re.compile(r"[/_](darwin|linux|gnu)\.c$")


def platform_of(p):
    m = PLATFORM_OF.search(str(p))
    return None if not m else "darwin" if m.group(1) == "darwin" else "linux"


def file_graph(src=None):
    """Each src file to the files whose functions it calls by name, or whose headers it includes
    (a header stands for the .c file of its name)."""
    src = src or SRC
    files = sorted(src.rglob("*.c"))
    defined = {}
    for p in files:
        for f in DEFINITION.findall(c_code(p)):
            defined.setdefault(f, set()).add(p)
    edges = {p: set() for p in files}
    for p in files:
        for f in set(CALL.findall(c_code(p))):
            edges[p] |= {q for q in defined.get(f, ()) if q != p}
        for inc in INCLUDE.findall(p.read_text(errors="replace")):
            q = (p.parent / inc).resolve().with_suffix(".c")
            if q in edges and q != p:
                edges[p].add(q)
    for p in files:  # the other platform's file is never linked beside this one
        edges[p] = {q for q in edges[p] if not (platform_of(p) and platform_of(q) and platform_of(p) != platform_of(q))}
    return edges


def circles(src=None):
    """The strongly connected sets of files (Tarjan), each as sorted paths relative to src/."""
    src = src or SRC
    edges = file_graph(src)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w), group.append(str(w.relative_to(src)))
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_file_calls_back_into_a_file_that_calls_it():
    assert circles() == []


def test_the_circle_check_finds_a_planted_circle(tmp_path):
    src = tmp_path / "src"
    (src / "shim").mkdir(parents=True)
    (src / "shim" / "a.c").write_text("/* a */\nint a_one(void)\n{\n    return b_one();\n}\n")
    (src / "shim" / "b.c").write_text("/* b */\nint b_one(void)\n{\n    return 1;\n}\nint b_two(void)\n{\n    return c_one();\n}\n")
    (src / "shim" / "c.c").write_text('/* c */\n#include "a.h"\nint c_one(void)\n{\n    return 0;\n}\n')
    (src / "shim" / "a.h").write_text("/* a */\n")
    (src / "shim" / "x_darwin.c").write_text("/* x */\nint x_one(void)\n{\n    return y_one();\n}\n")
    (src / "shim" / "y_linux.c").write_text("/* y */\nint y_one(void)\n{\n    return x_one();\n}\n")
    assert circles(src) == [["shim/a.c", "shim/b.c", "shim/c.c"]]
