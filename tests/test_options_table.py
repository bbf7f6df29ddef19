"""One table drives the options (issue: a new user's path): every option a command's parser
takes is documented in the table (help, man page, completions), and every documented option
is one its parser takes. The sources are read for the options each parser compares against."""
import re
import subprocess

import pytest

from conftest import BUILD, ROOT

# which source files parse each command's options; "VIEW" stands for cfg_opt_take's options
PARSERS = {
    "run": ["run.c"], "check": ["options.c#view_args", "VIEW"], "doctor": ["options.c#view_args", "doctor.c", "VIEW"],
    "inspect": ["inspect.c", "VIEW-NOEXE"], "launchd": ["launchd.c"], "report": ["report.c", "ROLES"], "bench": ["bench.c"],
    "probe": ["probe.c#parse_common"], "verify": ["probe.c#parse_common"], "prepare": ["prepare.c"], "host": [],
}
VIEW = {"--config", "--profile", "--exe", "--chip", "--family", "--bare"}


def parsed_options(cmd):
    found = set()
    for f in PARSERS[cmd]:
        if f == "VIEW":
            found |= VIEW
            continue
        if f == "VIEW-NOEXE":
            found |= VIEW - {"--exe"}
            continue
        if f == "ROLES":
            found |= {"--stock", "--unlocked", "--host"}  # built as "--%s" from the role names
            continue
        name, _, function = f.partition("#")
        text = (ROOT / "src" / "cli" / name).read_text()
        if function:  # only that function's definition
            start = re.search(rf"^\w[^\n]*\b{function}\(", text, re.M).start()
            text = text[start:text.index("\n}\n", start)]
        # the options a parser compares against: opt_take(..., "--x", ...), view_args's extra
        # option and strcmp(argv[i], "--x")
        found |= set(re.findall(r'(?:opt_take|view_args)\([^;]*?"(-[-\w]+)"', text))
        found |= set(re.findall(r'strcmp\(argv\[i\], "(-[-\w]+)"\)', text))
    found.discard("--")
    return found


def documented(cmd):
    out = subprocess.run([str(BUILD / "vzcaps"), "help", cmd], capture_output=True, text=True).stdout
    section = out.split("\noptions:\n", 1)[1].split("\n\n", 1)[0] if "\noptions:\n" in out else ""
    return {line.split()[0] for line in section.splitlines() if line.strip()} - {"--"}


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


def test_bash_completion_completes(tmp_path):
    script = f"source {BUILD / 'completions' / 'vzcaps.bash'}; COMP_WORDS=(vzcaps che); COMP_CWORD=1; _vzcaps; echo ${{COMPREPLY[@]}};" \
             f"COMP_WORDS=(vzcaps launchd --keep); COMP_CWORD=2; _vzcaps; echo ${{COMPREPLY[@]}}"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path).stdout.splitlines()
    assert out == ["check", "--keep-alive"]


@pytest.mark.parametrize("cmd", ["check", "probe", "verify"])  # doctor: -- CMD goes with --bundle (test_bundle.py)
def test_options_only_command_refuses_what_follows_dashdash(cmd):
    # regression: `vzcaps check -- foo` ignored foo and exited 0
    r = subprocess.run([str(BUILD / "vzcaps"), cmd, "--", "foo"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines()[0] == f"vzcaps {cmd}: unexpected argument foo"
