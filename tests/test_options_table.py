"""One table drives the options (issue: a new user's path): every option a command's parser
takes is documented in the table (help, man page, completions), and every documented option
is one its parser takes. The sources are read for the options each command binds for cli_parse."""
import re
import subprocess

import pytest

from conftest import BUILD, ROOT

# which source files bind each command's options for cli_parse (a file#function: only there)
PARSERS = {
    "run": ["run.c"], "check": ["check.c"], "doctor": ["doctor.c#doctor_args"], "inspect": ["inspect.c"],
    "launchd": ["launchd.c"], "report": ["report.c"], "bench": ["bench.c"], "probe": ["probe.c#parse_common"],
    "verify": ["probe.c#parse_common"], "prepare": ["prepare.c"], "host": [], "shims": ["shims.c"], "stats": ["stats.c"], "help": [],
}
VIEW = {"--config", "--profile", "--chip", "--family", "--bare"}  # OPT_VIEW (cli.h)


def parsed_options(cmd):
    found = set()
    for f in PARSERS[cmd]:
        name, _, function = f.partition("#")
        text = next((ROOT / "src" / "cli").rglob(name)).read_text()  # the front or a command group's folder
        if function:  # only that function's definition
            start = re.search(rf"^\w[^\n]*\b{function}\(", text, re.M).start()
            text = text[start:text.index("\n}\n", start)]
        # the options a parser binds: OPT_VALUE("--x", ...), OPT_FLAG, OPT_LIST, OPT_WHICH, and OPT_VIEW's
        found |= set(re.findall(r'OPT_(?:VALUE|FLAG|LIST|WHICH)\("(-[-\w]+)"', text))
        if "OPT_VIEW(" in text:
            found |= VIEW
    return found


def documented(cmd):
    out = subprocess.run([str(BUILD / "vzcaps"), "help", cmd], capture_output=True, text=True).stdout
    section = out.split("\noptions:\n", 1)[1].split("\n\n", 1)[0] if "\noptions:\n" in out else ""
    # an option's line starts "  -"; wrapped help continues on lines indented further
    return {line.split()[0] for line in section.splitlines() if line.startswith("  -")} - {"--"}


@pytest.mark.parametrize("cmd", sorted(PARSERS))
def test_parsed_and_documented_options_are_the_same(cmd):
    assert parsed_options(cmd) == documented(cmd), cmd


def test_man_page_and_completions_come_from_the_table():
    man = (BUILD / "vzcaps.1").read_text()
    bash = (BUILD / "completions" / "vzcaps.bash").read_text()
    fish = (BUILD / "completions" / "vzcaps.fish").read_text()
    zsh = (BUILD / "completions" / "_vzcaps").read_text()
    for section in (".SH SYNOPSIS", ".SH OPTIONS", ".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH EXAMPLES"):
        assert section in man
    for cmd in PARSERS:
        assert f".SS vzcaps {cmd}" in man and f".B vzcaps {cmd}" in man
        for opt in documented(cmd):
            assert opt.replace("-", "\\-") in man, (cmd, opt)
            assert opt in bash and opt in zsh, (cmd, opt)
            assert (f"-l {opt[2:]}" if opt.startswith("--") else f"-o {opt[1:]}") in fish, (cmd, opt)
    warnings = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(BUILD / "vzcaps.1")], capture_output=True, text=True)
    assert warnings.returncode == 0 and warnings.stderr == ""


@pytest.mark.parametrize("cmd", ["check", "probe", "verify"])  # doctor takes -- CMD (test_scripts.py, test_bundle.py)
def test_options_only_command_refuses_what_follows_dashdash(cmd):
    # regression: `vzcaps check -- foo` ignored foo and exited 0
    r = subprocess.run([str(BUILD / "vzcaps"), cmd, "--", "foo"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines()[0] == f"vzcaps {cmd}: unexpected argument foo"


def vz(*args):
    return subprocess.run([str(BUILD / "vzcaps"), *args], capture_output=True, text=True, timeout=60)


GROUPS = {"use it": ["run", "launchd", "prepare"], "check it": ["check", "doctor", "inspect"], "prove it": ["probe", "verify", "stats"],
          "measure it": ["report", "bench"], "set up": ["shims", "host"]}


def test_overview_is_one_summary_line_per_command_grouped():
    out = vz("help").stdout
    seen, group = {}, None
    for line in out.splitlines():
        if line in GROUPS:
            group = line
        elif line.startswith("   ") and group:
            name, summary = line.split(None, 1)
            assert name not in seen and len(summary) > 10, line
            seen[name] = group
        elif not line:
            group = None
    assert {g: [c for c in seen if seen[c] == g] for g in GROUPS} == GROUPS
    assert "vzcaps help COMMAND" in out and "[--" not in out  # summaries, not option lists
    assert vz("--help").stdout == out and vz("-h").stdout == out


@pytest.mark.parametrize("args", [["help"], *[["help", c] for c in PARSERS], ["run", "--bogus"], ["launchd", "--nope"]])
def test_help_lines_fit_100_columns(args):
    p = vz(*args)
    for line in (p.stdout + p.stderr).splitlines():
        assert len(line) <= 100, line


def test_required_options_are_shown_required():
    launchd, bench = vz("help", "launchd").stdout, vz("help", "bench").stdout
    assert launchd.startswith("usage: vzcaps launchd --label LABEL [--profile PROFILE]")
    assert "[--label" not in launchd and "[-m MODEL]" not in bench and " -m MODEL " in bench.split("\n\n")[0]
    assert re.search(r"^  --label LABEL +[^\n]*(\n {27}[^\n]*)*\(required\)$", launchd, re.M)
    assert re.search(r"^  -m MODEL +the GGUF model \(required\)$", bench, re.M)
    man = (BUILD / "vzcaps.1").read_text()
    assert "\\-\\-label LABEL [\\-\\-profile PROFILE]" in man and "(required)" in man


def test_help_help_and_unknown_commands():
    p = vz("help", "help")
    assert p.returncode == 0 and p.stdout.startswith("usage: vzcaps help [COMMAND]\n")
    assert vz("help", "--help").stdout == p.stdout
    p = vz("status")
    assert p.returncode == 2
    assert p.stderr.splitlines()[0] == 'vzcaps: unknown command "status" (did you mean doctor, or host status?)'
    p = vz("help", "status")
    assert p.returncode == 2
    assert p.stderr.splitlines()[0] == 'vzcaps help: unknown command "status" (did you mean doctor, or host status?)'
    assert vz("benchmark").stderr.startswith('vzcaps: unknown command "benchmark" (did you mean bench?)')
    assert vz("help", "run", "check").returncode == 2


def test_man_page_lists_the_commands_by_group():
    man = (BUILD / "vzcaps.1").read_text()
    commands = man.split(".SH COMMANDS\n", 1)[1].split(".SH ", 1)[0]
    for group, names in GROUPS.items():
        assert f".SS {group}\n" in commands
        for name in names:
            assert f".TP 10\n.B {name}\n" in commands
    assert ".B vzcaps help\n[COMMAND]" in man or ".B vzcaps help\n" in man


CONFIG_ORDER = ["$XDG_CONFIG_HOME/vzcaps/vzcaps.conf", "~/.config/vzcaps/vzcaps.conf", "/opt/homebrew/etc/vzcaps.conf",
                "/usr/local/etc/vzcaps.conf"]


def in_order(text, items):
    at = [text.find(i) for i in items]
    return all(a >= 0 for a in at) and at == sorted(at)


def test_config_search_order_is_said_the_same_everywhere():
    """The library, the command, the man page and the docs say one order (vzcaps_config_search)."""
    man = (BUILD / "vzcaps.1").read_text().replace("\\-", "-")
    files = man.split(".SH FILES\n", 1)[1].split(".SH ", 1)[0].replace("\n", " ")
    assert in_order(files, ["$VZCAPS_CONFIG", *CONFIG_ORDER]), files
    header = (ROOT / "src" / "core" / "vzcaps_core.h").read_text()
    assert in_order(header.split("#define VZCAPS_CONFIG_ORDER_TEXT", 1)[1], CONFIG_ORDER)
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] if (ROOT / "docs").is_dir() else [ROOT / "README.md"]
    mentions = [d for d in docs if "/usr/local/etc/vzcaps.conf" in d.read_text()]
    assert mentions
    for d in mentions:
        text = " ".join(d.read_text().replace("`", "").split())
        assert in_order(text, CONFIG_ORDER), d
