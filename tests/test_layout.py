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


# ---- the command's files: no subcommand leans on another's file (issue 31) ----
# main.c dispatches, commands.c is the table (with help and usage errors), options.c reads option
# values: every subcommand may call those. A subcommand's file calls nothing defined in another
# subcommand's file and includes no header but cli.h (and the table's): what two commands share
# lives in a floor below (src/launch). doctor_bundle.c is doctor's own (doctor --bundle).
CLI_SHARED = ("main.c", "commands.c", "options.c")
CLI_OWNER = {"doctor_bundle.c": "doctor.c"}
DISPATCH_ENTRY = re.compile(r"^(cmd_|child_)")  # what the dispatcher and the table may name
C_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINITION = re.compile(r"^(?!static\b)(?!typedef\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?\{", re.M | re.S)
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def c_code(path):
    return C_NOISE.sub(lambda m: "" if m.group(0)[0] in "/" else '""', path.read_text(errors="replace"))


def cli_definitions(cli):
    """Every non-static function defined in each src/cli/*.c: {file name: {function names}}."""
    return {p.name: set(DEFINITION.findall(c_code(p))) for p in sorted(cli.glob("*.c"))}


def cross_references(cli):
    """Each use (a call or a function pointer) of a function defined in another command file."""
    defs = cli_definitions(cli)
    where = {f: name for name, fs in defs.items() for f in fs}
    bad = []
    for p in sorted(cli.glob("*.c")):
        a = p.name
        used = set(IDENT.findall(c_code(p)))
        for f in sorted(used & set(where)):
            b = where[f]
            if b == a or CLI_OWNER.get(a) == b or CLI_OWNER.get(b) == a:
                continue
            if a in ("main.c", "commands.c") and b not in CLI_SHARED and DISPATCH_ENTRY.match(f):
                continue  # dispatch: the table names each command's entry point
            if b in ("commands.c", "options.c") and not (a == "commands.c" and b == "options.c"):
                continue  # the table and the option readers serve every command (commands.c calls none of options.c)
            bad.append(f"src/cli/{a}: uses {f} of src/cli/{b}")
        for inc in INCLUDE.findall(p.read_text(errors="replace")):
            if "/" not in inc and inc not in ("cli.h", "commands.h"):
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
    assert "cmd_run" in defs["run.c"] and "cmd_shims" in defs["shims.c"] and "usage_error" in defs["commands.c"]
    assert "opt_take" in defs["options.c"] and "cfg_opt_take" in defs["options.c"]
