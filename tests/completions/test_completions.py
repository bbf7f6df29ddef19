"""The shell completions generated from the command table (`vzcaps __completions SHELL`), tested
by calling each shell's own completion machinery: bash's completion function with COMP_WORDS and
COMP_CWORD, zsh's completion system in a pseudo-terminal (zsh_capture.zsh), fish's `complete -C`."""
import os
import pathlib
import shlex
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, clean_env

COMPLETIONS = BUILD / "completions"
HERE = pathlib.Path(__file__).resolve().parent
COMMANDS = ["run", "check", "launchd", "host", "doctor", "inspect", "report", "bench", "probe", "verify", "prepare", "shims", "stats", "help"]
FAMILIES = [str(n) for n in range(1001, 1011)]
# fish and Debian's bash-completion are the Linux side's (scripts/install-deps installs them
# there): a stock Mac has neither, and its bash is 3.2, whose own behaviour the bash cases test on
# a Mac. The fish script is generated from the same table on every platform, so Linux tests it.
NO_FISH_ON_A_MAC = pytest.mark.skipif(sys.platform == "darwin", reason="needs fish, which a stock Mac lacks (tested on Linux)")
SHELLS = ["bash", "zsh", pytest.param("fish", marks=NO_FISH_ON_A_MAC)]


@pytest.fixture
def cwd(tmp_path):
    """A directory with files (one named with a space), a HOME with a config file, and the built
    vzcaps first on PATH (the completions ask it for the config's sections)."""
    (tmp_path / "my model.gguf").write_text("")
    (tmp_path / "plain.json").write_text("")
    (tmp_path / "subdir").mkdir()
    conf = tmp_path / "home" / ".config" / "vzcaps" / "vzcaps.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("[llama]\nmatch = llama-*\napple_family_max = auto\n[my-ollama]\napple_family_max = auto\n")
    conf.chmod(0o644)
    other = tmp_path / "other.conf"
    other.write_text("[only-here]\napple_family_max = off\n")
    other.chmod(0o644)
    return tmp_path


def shell_env(cwd):
    env = clean_env(HOME=str(cwd / "home"), PATH=f"{BUILD}:{os.environ['PATH']}")
    env.pop("XDG_CONFIG_HOME", None)
    return env


BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"  # Debian's bash-completion (install-deps)


def bash(cwd, *words, with_bash_completion=False, wordbreaks=None):
    """COMPREPLY for the command line words (the last one is being completed); wordbreaks: the
    COMP_WORDBREAKS readline completes with (bash's default when None)."""
    line = " ".join(words)
    script = (f"{'source ' + BASH_COMPLETION if with_bash_completion else ''}\n"
              f"{'' if wordbreaks is None else 'COMP_WORDBREAKS=' + shlex.quote(wordbreaks)}\n"
              f"source {shlex.quote(str(COMPLETIONS / 'vzcaps.bash'))}\n"
              f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
              f"COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}\n"
              "_vzcaps; printf '%s\\n' \"${COMPREPLY[@]}\"")
    p = subprocess.run(["bash", "--norc", "-c", script], cwd=cwd, env=shell_env(cwd), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return [w for w in p.stdout.split("\n") if w]


def zsh(cwd, line):
    """The matches zsh's completion system offers at the end of line, as "match -- description"."""
    p = subprocess.run(["zsh", "-f", str(HERE / "zsh_capture.zsh"), str(COMPLETIONS), line], cwd=cwd, env=shell_env(cwd),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [w.split(" -- ")[0] for w in p.stdout.splitlines()]


def fish(cwd, line, descriptions=False):
    script = f"source {shlex.quote(str(COMPLETIONS / 'vzcaps.fish'))}; complete -C{shlex.quote(line)}"
    p = subprocess.run(["fish", "--no-config", "-c", script], cwd=cwd, env=shell_env(cwd), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = p.stdout.splitlines()
    return lines if descriptions else [w.split("\t")[0] for w in lines]


def complete(shell, cwd, line):
    """The candidates shell offers for line (completed at its end)."""
    if shell == "bash":
        words = shlex.split(line) if not line.endswith(" ") else shlex.split(line) + [""]
        if "\\ " in line.split(" ", 3)[-1] and not line.endswith(" "):  # keep an escaped word as typed
            head, _, last = line.rpartition(" --chip ")
            words = shlex.split(head) + ["--chip", last]
        return bash(cwd, *words)
    return zsh(cwd, line) if shell == "zsh" else fish(cwd, line)


def unquoted(shell, words):
    """zsh gives its matches quoted as it inserts them."""
    return [w.replace("\\ ", " ") for w in words] if shell == "zsh" else words


@pytest.mark.parametrize("shell", SHELLS)
def test_subcommand_words(shell, cwd):
    assert sorted(complete(shell, cwd, "vzcaps host ")) == ["disable", "enable", "status"]
    assert complete(shell, cwd, "vzcaps host st") == ["status"]
    assert sorted(complete(shell, cwd, "vzcaps help ")) == sorted(COMMANDS)
    first = complete(shell, cwd, "vzcaps ")
    assert set(COMMANDS) <= set(first) and "plain.json" not in first  # commands, no files


@pytest.mark.parametrize("shell", SHELLS)
def test_option_values(shell, cwd):
    assert sorted(complete(shell, cwd, "vzcaps run --family ")) == sorted(["auto", "off", *FAMILIES])
    assert complete(shell, cwd, "vzcaps check --family a") == ["auto"]
    assert sorted(complete(shell, cwd, "vzcaps bench --mode ")) == ["guest", "host"]
    assert sorted(complete(shell, cwd, "vzcaps launchd --family 100")) == FAMILIES[:9]  # 1001..1009, not 1010
    assert complete(shell, cwd, "vzcaps launchd --label ") == []  # a label is made up, not a file


@pytest.mark.parametrize("shell", SHELLS)
def test_profiles_come_from_the_config_file_when_completing(shell, cwd):
    assert sorted(complete(shell, cwd, "vzcaps run --profile ")) == ["llama", "my-ollama"]
    conf = cwd / "home" / ".config" / "vzcaps" / "vzcaps.conf"
    conf.write_text("[changed]\napple_family_max = auto\n")  # read at completion time
    assert complete(shell, cwd, "vzcaps check --profile ") == ["changed"]
    # --config earlier on the line names the file whose sections count, written with = too
    assert complete(shell, cwd, f"vzcaps check --config {cwd}/other.conf --profile ") == ["only-here"]
    if shell != "bash":  # bash: its 3.2 and 4.0 splits of --config=FILE, in their own tests
        assert complete(shell, cwd, f"vzcaps check --config={cwd}/other.conf --profile ") == ["only-here"]
    spaced = cwd / "my dir" / "x.conf"  # a --config path typed with an escaped space
    spaced.parent.mkdir()
    spaced.write_text("[spaced]\napple_family_max = off\n")
    spaced.chmod(0o644)
    if shell == "bash":
        assert bash(cwd, "vzcaps", "check", "--config", "my\\ dir/x.conf", "--profile", "") == ["spaced"]
        assert bash(cwd, "vzcaps", "check", "--config", '"my dir/x.conf"', "--profile", "") == ["spaced"]
    else:
        assert complete(shell, cwd, "vzcaps check --config my\\ dir/x.conf --profile ") == ["spaced"]
    conf.chmod(0o666)  # a file the library would refuse offers nothing
    assert complete(shell, cwd, "vzcaps check --profile ") == []


@pytest.mark.parametrize("shell", SHELLS)
def test_profiles_when_the_command_was_typed_with_a_tilde(shell, cwd):
    """regression (issue 25 row 17): `~/bin/vzcaps run --profile <TAB>` offered nothing: the
    completion ran the command word as typed, and no program is named "~/bin/vzcaps"."""
    (cwd / "home" / "bin").mkdir()
    (cwd / "home" / "bin" / "vzcaps").symlink_to(BUILD / "vzcaps")
    if shell == "bash":
        assert sorted(bash(cwd, "~/bin/vzcaps", "run", "--profile", "")) == ["llama", "my-ollama"]
        assert bash(cwd, "~/bin/vzcaps", "check", "--config", "~/../other.conf", "--profile", "") == ["only-here"]
    else:
        assert sorted(complete(shell, cwd, "~/bin/vzcaps run --profile ")) == ["llama", "my-ollama"]


@pytest.mark.parametrize("shell", SHELLS)
def test_files_only_where_a_file_is_expected(shell, cwd):
    names = {"my model.gguf", "plain.json", "subdir", "subdir/", "home", "home/", "other.conf"}
    assert set(unquoted(shell, complete(shell, cwd, "vzcaps inspect "))) & names >= {"my model.gguf", "plain.json"}
    assert unquoted(shell, complete(shell, cwd, "vzcaps bench -m my")) == ["my model.gguf"]
    assert unquoted(shell, complete(shell, cwd, "vzcaps probe --replay plain.json pl")) == ["plain.json"]
    assert set(unquoted(shell, complete(shell, cwd, "vzcaps doctor --bundle "))) & names <= {"subdir", "subdir/", "home", "home/"}
    for line in ("vzcaps check ", "vzcaps host ", "vzcaps run --family ", "vzcaps verify "):
        assert not set(unquoted(shell, complete(shell, cwd, line))) & names, line


@pytest.mark.parametrize("shell", SHELLS)
def test_commands_after_double_dash(shell, cwd):
    assert "vzcaps" in complete(shell, cwd, "vzcaps run -- vzcap")
    assert "vzcaps" in complete(shell, cwd, "vzcaps launchd --label a -- vzcap")
    assert "vzcaps" in complete(shell, cwd, "vzcaps doctor --bundle b -- vzcap")  # the bundle's command
    assert unquoted(shell, complete(shell, cwd, "vzcaps bench -m m -- pla")) == ["plain.json"]  # llama-bench's
    # the command's own arguments: a file here
    assert unquoted(shell, complete(shell, cwd, "vzcaps run -- cat pla")) == ["plain.json"]


@pytest.mark.parametrize("shell", SHELLS)
def test_names_with_spaces(shell, cwd):
    got = complete(shell, cwd, "vzcaps check --chip Apple\\ M2\\ P")
    assert unquoted(shell, got) == ["Apple M2 Pro"]
    if shell == "zsh":
        assert got == ["Apple\\ M2\\ Pro"]  # quoted as zsh inserts it
    # the A series the core knows too (what vzcaps_chip_from_brand accepts)
    assert {"Apple A18 Pro", "Apple A19 Pro"} <= set(unquoted(shell, complete(shell, cwd, "vzcaps check --chip Apple\\ A1")))


def test_bash_inserts_names_quoted(cwd):
    """bash quotes what it inserts only under -o filenames: a name with a space stays one word."""
    p = subprocess.run(["bash", "--norc", "-c", f"source {COMPLETIONS / 'vzcaps.bash'}; complete -p vzcaps"],
                       capture_output=True, text=True)
    assert p.stdout.strip() == "complete -o filenames -F _vzcaps vzcaps"
    assert bash(cwd, "vzcaps", "bench", "-m", "my") == ["my model.gguf"]  # one word, not two


def test_acceptance_bash(cwd):
    assert "status" in bash(cwd, "vzcaps", "host", "")
    assert "auto" in bash(cwd, "vzcaps", "run", "--family", "")
    assert bash(cwd, "vzcaps", "run", "--family", "=", "au") == ["auto"]  # --family=au, as bash splits it


def test_bash_3_2_completes_the_value_of_an_option_written_with_equals(cwd):
    """issue 39 row 25: bash 3.2 (a Mac's) does not split COMP_WORDS at = (4.0 does), so
    `run --profile=<TAB>` was one word "--profile=" and offered nothing, and `--config=FILE
    --profile <TAB>` read the default config. Driven with COMP_WORDS as 3.2 gives them; readline
    replaces the text after the = (a word break in COMP_WORDBREAKS), so the values come bare."""
    assert sorted(bash(cwd, "vzcaps", "run", "--profile=")) == ["llama", "my-ollama"]
    assert bash(cwd, "vzcaps", "run", "--profile=my") == ["my-ollama"]
    assert bash(cwd, "vzcaps", "check", f"--config={cwd}/other.conf", "--profile", "") == ["only-here"]
    assert bash(cwd, "vzcaps", "check", "--config=~/../other.conf", "--profile=") == ["only-here"]
    assert bash(cwd, "vzcaps", "check", "--config='other.conf'", "--profile=o") == ["only-here"]  # as typed: quotes undone
    assert bash(cwd, "vzcaps", "check", "--family=a") == ["auto"]
    assert bash(cwd, "vzcaps", "check", "--config=pl") == ["plain.json"]
    assert bash(cwd, "vzcaps", "check", '--config="pl') == ["plain.json"]
    spaced = cwd / "my dir" / "x.conf"  # a --config=FILE typed with quotes or an escaped space
    spaced.parent.mkdir()
    spaced.write_text("[spaced]\napple_family_max = off\n")
    spaced.chmod(0o644)
    assert bash(cwd, "vzcaps", "check", '--config="my dir/x.conf"', "--profile=") == ["spaced"]
    assert bash(cwd, "vzcaps", "check", "--config=my\\ dir/x.conf", "--profile", "") == ["spaced"]
    assert bash(cwd, "vzcaps", "check", "--config=~/nope.conf", "--profile=") == []  # a missing file offers nothing
    odd = cwd / "a=b.conf"  # a value holding = itself: split at the first only
    odd.write_text("[odd]\napple_family_max = off\n")
    odd.chmod(0o644)
    assert bash(cwd, "vzcaps", "check", "--config=a=b.conf", "--profile=") == ["odd"]
    assert bash(cwd, "vzcaps", "check", "--config=a=b") == ["b.conf"]  # readline replaces what follows the last =
    assert bash(cwd, "vzcaps", "check", "--config=a=b", wordbreaks=" \t\n") == ["--config=a=b.conf"]  # or the whole word
    # an option that takes no value, or an unknown one, offers nothing after its =
    assert bash(cwd, "vzcaps", "check", "--json=") == [] and bash(cwd, "vzcaps", "check", "--nope=a") == []
    # a value already given with = is not asked again: the next word is an option or argument
    assert "--profile" in bash(cwd, "vzcaps", "check", "--family=auto", "--")
    # bash 4 splits at = where = is a word break: unchanged
    assert sorted(bash(cwd, "vzcaps", "run", "--profile", "=", "")) == ["llama", "my-ollama"]
    assert bash(cwd, "vzcaps", "check", "--config", "=", f"{cwd}/other.conf", "--profile", "") == ["only-here"]


def test_bash_without_equals_as_a_word_break_inserts_the_option_too(cwd):
    """Where COMP_WORDBREAKS lacks = (a user's setting), readline replaces the whole --opt=VALUE
    word: each candidate carries its --opt=."""
    breaks = " \t\n\"'@><;|&(:"
    assert sorted(bash(cwd, "vzcaps", "run", "--profile=", wordbreaks=breaks)) == ["--profile=llama", "--profile=my-ollama"]
    assert bash(cwd, "vzcaps", "check", "--family=a", wordbreaks=breaks) == ["--family=auto"]
    assert bash(cwd, "vzcaps", "check", "--family=a", wordbreaks=breaks + "=") == ["auto"]


@pytest.mark.skipif(sys.platform == "darwin", reason="needs Debian's bash-completion (Linux): a stock Mac has none")
def test_bash_with_bash_completion_completes_the_commands_own_arguments(cwd):
    """With bash-completion loaded (brew's bash-completion@2 on a Mac), what follows the command
    after -- is completed by that command's own completion."""
    assert "--color" in bash(cwd, "vzcaps", "run", "--", "ls", "--colo", with_bash_completion=True)
    assert bash(cwd, "vzcaps", "run", "--", "vzcap", with_bash_completion=True) == ["vzcaps"]
    assert bash(cwd, "vzcaps", "host", "", with_bash_completion=True) == ["status", "enable", "disable"]
    assert bash(cwd, "vzcaps", "bench", "-m", "my", with_bash_completion=True) == ["my model.gguf"]


@NO_FISH_ON_A_MAC
def test_fish_descriptions_are_whole(cwd):
    lines = fish(cwd, "vzcaps ", descriptions=True)
    help_lines = subprocess.run([str(BUILD / "vzcaps"), "help"], capture_output=True, text=True).stdout.splitlines()
    summaries = {ln.split()[0]: ln.split(None, 1)[1] for ln in help_lines if ln.startswith("   ")}
    got = dict(line.split("\t", 1) for line in lines)
    for cmd, summary in summaries.items():
        assert got[cmd] == summary
    opts = dict(line.split("\t", 1) for line in fish(cwd, "vzcaps run --", descriptions=True))
    assert opts["--dry-run"] == ("print, instead of running it, one line a shell runs as it is: env VAR=value... CMD ARGS "
                                 "(VAR=value... ./CMD ARGS for a CMD with '=', which env would take for a variable)")
    assert opts["--"] == "ends the options; the command follows"
    assert "(required)" in dict(line.split("\t", 1) for line in fish(cwd, "vzcaps launchd --", descriptions=True))["--label"]


def test_generated_scripts_are_up_to_date():
    for shell, name in (("bash", "vzcaps.bash"), ("zsh", "_vzcaps"), ("fish", "vzcaps.fish")):
        p = subprocess.run([str(BUILD / "vzcaps"), "__completions", shell], capture_output=True, text=True)
        assert p.returncode == 0 and p.stdout == (COMPLETIONS / name).read_text(), shell
    assert subprocess.run([str(BUILD / "vzcaps"), "__completions", "tcsh"], capture_output=True).returncode == 2
    assert ROOT  # the scripts are generated at build time from src/cli/commands.c


@pytest.mark.parametrize("shell", SHELLS)
def test_shims_and_strict(shell, cwd):
    assert "--strict" in complete(shell, cwd, "vzcaps check --st")
    assert {"--dir", "--list", "--remove"} <= set(complete(shell, cwd, "vzcaps shims --"))


@pytest.mark.parametrize("shell", SHELLS)
def test_stats(shell, cwd):
    assert {"--json", "--since", "--log-file", "--config"} <= set(complete(shell, cwd, "vzcaps stats --"))
