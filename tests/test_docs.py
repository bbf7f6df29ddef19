"""The user documentation (README.md and docs/*.md) against what the programs accept: every
`vzcaps ...` command line in a code block or code span passes the command table's own check
(`vzcaps __validate`, the check every command runs first) and names its required options,
every option given to install.sh and uninstall.sh exists, every `make` target exists, every
link between the pages resolves (anchors included), every source path named exists, and every
example config file is one the library accepts. Needs only the built command."""
import json
import os
import pathlib
import re
import shlex
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
VZCAPS = ROOT / "build" / "vzcaps"
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

# Command-line spans that name something other than a command to type: the help's own
# placeholder, unknown commands shown for their suggestions, and the hidden completions printer.
NOT_COMMAND_LINES = {"vzcaps COMMAND --help", "vzcaps status", "vzcaps list", "vzcaps uninstall", "vzcaps __completions bash|zsh|fish"}


def rel(path):
    return path.relative_to(ROOT).as_posix()


def fenced_split(text):
    """(line number, line, inside a fenced block) for every line but the fences."""
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        yield n, line, inside


def command_lines():
    """(page:line, command) for every vzcaps command line: in code blocks the lines that start
    with vzcaps (after an optional `$ `, `sudo ` and VAR=value words), in prose the code spans
    that do."""
    out = []
    for page in PAGES:
        for n, line, inside in fenced_split(page.read_text()):
            found = []
            if inside:
                m = re.match(r"\s*(?:\$ )?(?:sudo )?(?:[A-Z_]+=\S* )*(vzcaps .*)", line)
                if m:
                    found.append(re.sub(r"\s+#\s.*$", "", m.group(1)).strip())
            else:
                found += [m.group(1).strip() for m in re.finditer(r"`(?:[A-Z_]+=\S* )*(vzcaps [^`]*)`", line)]
            # a quoted message ("vzcaps run: cannot run X") names no command line
            out += [(f"{rel(page)}:{n}", c) for c in found
                    if c not in NOT_COMMAND_LINES and not re.match(r"vzcaps [\w-]+:", c)]
    return out


def required_options():
    """Each command's required options, from its help (the table's "(required)")."""
    names = re.findall(r"^   (\w+)  ", subprocess.run([VZCAPS, "help"], capture_output=True, text=True).stdout, re.M)
    req = {}
    for name in names:
        text = subprocess.run([VZCAPS, "help", name], capture_output=True, text=True).stdout
        req[name] = re.findall(r"^  (-\S+).*?(?:\n {27}.*?)*\(required\)", text, re.M)
    return req


def test_the_extraction_finds_the_pages_command_lines():
    lines = command_lines()
    commands = {w for _, c in lines for w in shlex.split(c)[1:2]}
    # every command the help lists is shown somewhere, and the README's recipes are found
    listed = set(re.findall(r"^   (\w+)  ", subprocess.run([VZCAPS, "help"], capture_output=True, text=True).stdout, re.M))
    assert listed and listed <= commands, f"commands no page shows: {sorted(listed - commands)}"
    assert any(c.startswith("vzcaps run --inherit -- ollama serve") for _, c in lines)
    assert len(lines) > 60


def test_the_validator_rejects_what_the_table_rejects():
    """The check below can fail: a wrong option, a value missing, a stray operand, a typo'd command."""
    for bad in (["run", "--famly", "auto", "--", "x"], ["check", "--exe"], ["probe", "extra"], ["stauts"]):
        r = subprocess.run([VZCAPS, "__validate", *bad], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr, bad
    assert subprocess.run([VZCAPS, "__validate", "run", "--family", "auto", "--", "x"]).returncode == 0


def test_every_documented_command_line_is_one_vzcaps_accepts():
    required = required_options()
    assert required["bench"] == ["-m"] and required["launchd"] == ["--label"]
    bad = []
    for where, line in command_lines():
        words = shlex.split(line)
        r = subprocess.run([VZCAPS, "__validate", *words[1:]], capture_output=True, text=True)
        if r.returncode != 0:
            bad.append(f"{where}: {line}\n    {r.stderr.splitlines()[0] if r.stderr else r.returncode}")
            continue
        # a bare `vzcaps NAME` names the command, and `...` elides; other lines must be complete
        ours = words[:words.index("--")] if "--" in words else words
        if len(words) > 2 and "..." not in ours and not (words[1] == "launchd" and "--list" in ours):
            for opt in required.get(words[1], []):
                if opt not in ours:
                    bad.append(f"{where}: {line}\n    {opt} is required")
    assert not bad, "documented command lines vzcaps refuses:\n" + "\n".join(bad)


def test_install_and_uninstall_options_in_the_docs_exist():
    taken = {name: set(re.findall(r"^\s*(--[a-z-]+)\)", (ROOT / "packaging" / name).read_text(), re.M))
             for name in ("install.sh", "uninstall.sh")}
    assert taken["install.sh"] >= {"--prefix", "--force"} and "--all" in taken["uninstall.sh"]
    bad = []
    for page in PAGES + [ROOT / "packaging" / "README"]:
        for n, line, _ in fenced_split(page.read_text()):
            for m in re.finditer(r"\b((?:un)?install\.sh)((?:\s+--?[a-z][a-z-]*(?:[ =][^\s#`-][^\s#`]*)?)+)", line):
                for opt in re.findall(r"(--[a-z][a-z-]*)", m.group(2)):
                    if opt not in taken[m.group(1)]:
                        bad.append(f"{rel(page)}:{n}: {m.group(1)} {opt}")
    assert not bad, "options the scripts do not take:\n" + "\n".join(bad)


def test_every_make_target_named_exists():
    bad = []
    # a make of its own: not the jobserver of a make check this test may run under
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    for page in PAGES:
        for target in sorted(set(re.findall(r"`make ([a-z][a-z-]*)", page.read_text()))):
            r = subprocess.run(["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True, env=env)
            if r.returncode != 0 or "No rule to make target" in r.stderr:
                bad.append(f"{rel(page)}: make {target}")
    assert not bad, "\n".join(bad)


def slug(heading):
    """GitHub's anchor for a heading."""
    h = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return h.replace(" ", "-")


def test_every_link_between_pages_resolves():
    bad = []
    count = 0
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            count += 1
            path, _, frag = target.partition("#")
            dest = (page.parent / path) if path else page
            if not dest.exists():
                bad.append(f"{rel(page)}: {target} (no such file)")
            elif page.parent.name == "docs" and dest.resolve().parent != page.parent.resolve():
                bad.append(f"{rel(page)}: {target} (outside docs/: the pages are installed on their own)")
            elif frag and dest.suffix == ".md":
                anchors = {slug(h) for h in re.findall(r"^#+\s+(.*)$", dest.read_text(), re.M)}
                if frag not in anchors:
                    bad.append(f"{rel(page)}: {target} (no such heading)")
    assert count > 30 and not bad, "\n".join(bad)
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", (ROOT / "README.md").read_text()))
    assert linked == {p.name for p in (ROOT / "docs").glob("*.md")}, "the README's table lists every docs page"


# Source paths that stand for a family of files, or name someone else's tree.
PATH_PLACEHOLDERS = re.compile(r"NAME|ATen/|ggml-metal/|^src/vzcaps$|^bench/results\.md$")


def test_every_source_path_named_exists():
    bad = []
    for page in PAGES:
        for p in sorted(set(re.findall(r"\b(?:src|tests|scripts|docs|packaging|stubs|kernels|mk)/[\w./*-]+", page.read_text()))):
            p = p.rstrip(".,)")
            if PATH_PLACEHOLDERS.search(p):
                continue
            if not list(ROOT.glob(p)):
                bad.append(f"{rel(page)}: {p}")
    assert not bad, "paths that are not in the tree:\n" + "\n".join(bad)


def test_example_config_files_are_accepted(tmp_path):
    """Every config-file block in the docs, and the shipped example, is a file the library takes."""
    blocks = [(rel(ROOT / "packaging" / "vzcaps.conf.example"), (ROOT / "packaging" / "vzcaps.conf.example").read_text())]
    for page in PAGES:
        for i, block in enumerate(re.findall(r"```[a-z]*\n(.*?)```", page.read_text(), re.S)):
            if re.search(r"^\[[\w-]+\]$", block, re.M) and re.search(r"^match = ", block, re.M):
                blocks.append((f"{rel(page)} block {i}", block))
    assert len(blocks) >= 2
    for where, text in blocks:
        conf = tmp_path / "vzcaps.conf"
        conf.write_text(text)
        os.chmod(conf, 0o600)
        r = subprocess.run([VZCAPS, "check", "--config", str(conf), "--chip", "Apple M2"], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
        assert r.returncode == 0, f"{where}: {r.stdout}{r.stderr}"


@pytest.mark.parametrize("exe,section", [("python3", "python"), ("llama-server", "llama"), ("ollama", "ollama")])
def test_the_shipped_example_config_serves_the_recipes(exe, section):
    """The README's recipes (python3, llama-server, ollama) get an enabled section, not a stock one."""
    r = subprocess.run([VZCAPS, "check", "--config", str(ROOT / "packaging" / "vzcaps.conf.example"), "--exe", exe,
                        "--chip", "Apple M2", "--json"], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "HOME": "/nonexistent-home"})
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert (got["profile"], got["enabled"], got["apple_family_max"], got["family_implied"]) == (section, True, 1008, False)


def test_the_readme_stays_a_short_manual_for_a_user_first():
    """At most 250 lines. In its first 60: what it is, how to install it on the Mac, the one
    command for llama-server, the line that proves it worked, and the status said once. Its
    developers' section runs exactly two make commands, make demo and make check, after the
    install; no other code block runs a make target but the install's own."""
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 250
    head = "\n".join(lines[:60])
    for must in ("Metal capability answers for macOS guests", "make && sudo make install", "make install PREFIX=~/.local",
                 "vzcaps run -- llama-server -m model.gguf", "vzcaps: hooked ",
                 "ggml_metal_device_init: simdgroup reduction   = true", "Status: built and audited, not run on macOS"):
        assert must in head, must
    flat = " ".join(text.split())  # phrases across line breaks
    assert flat.count("not run on macOS") == 1 and flat.count("another shim") == 1
    assert "7x to 16x" not in text and "11.08x" in head and "16.36x" in head
    makes = [(n, line.split("#")[0].strip()) for n, line, inside in fenced_split(text) if inside and line.startswith("make")]
    dev = next(n for n, line, _ in fenced_split(text) if line.startswith("## For developers"))
    install = next(n for n, line, _ in fenced_split(text) if line.startswith("## Install"))
    assert [m for n, m in makes if n > dev] == ["make demo", "make check"], makes
    assert [m for n, m in makes if n < dev] == ["make && sudo make install", "make install PREFIX=~/.local"], makes
    assert install < dev
    # the troubleshooting table lives on its own page, installed with the others; the README points to it
    assert "| line starts / contains |" not in text and "](docs/troubleshooting.md)" in text
