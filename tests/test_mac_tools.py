"""Every script and Makefile line that runs on a Mac uses only tools stock macOS has (issue:
first Mac). GitHub's macOS runners, for example, have shasum but not sha256sum, and no nproc."""
import re

import pytest

from conftest import ROOT

# Files a Mac runs (the workflow, make all/check/dist/install, their scripts). Linux-only ones
# (the GNU-runtime rig, fuzzing, the cross build, benchmarks on callgrind) are not listed.
MAC_FILES = ["Makefile", "mk/darwin.mk", ".github/workflows/macos.yml", "scripts/dist", "scripts/install",
             "scripts/install-deps", "scripts/embed-kernels", "scripts/have-cross", "scripts/check-llama",
             "scripts/repro-check", "scripts/release", "packaging/install.sh", "packaging/uninstall.sh", "action.yml",
             "packaging/provision-image.sh"]

# GNU-only tools and options, each with what macOS offers instead.
LINUX_ONLY = [
    (r"\bsha256sum\b", "shasum -a 256"), (r"\bmd5sum\b", "md5 or shasum"), (r"\bnproc\b", "sysctl -n hw.ncpu / getconf"),
    (r"\breadlink -f\b", "realpath in a script, or python3"), (r"\bstat -c\b", "stat -f"), (r"\bdate -d\b", "date -j -f"),
    (r"\bgrep -P\b", "grep -E"), (r"(^|[;&|]\s*)timeout\s", "no timeout(1) on macOS"), (r"\bsed -i\s+['\"]?s", "sed -i '' (BSD)"),
    (r"\bfind\b.*-printf", "find ... -exec"), (r"\bxargs -r\b", "no -r in BSD xargs"), (r"\btac\b", "tail -r"),
    (r"\binstall -D\b", "mkdir -p + cp"), (r"\bcp --", "BSD cp lacks long options"), (r"\bmktemp --", "mktemp -d"),
]

# A line may name a Linux-only tool only as a guarded fallback: it tries the macOS tool first.
GUARDS = {"sha256sum": "command -v shasum", "stat -c": "stat -f"}


def mac_lines(rel):
    text = (ROOT / rel).read_text()
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#"):
            continue
        yield n, line


@pytest.mark.parametrize("rel", MAC_FILES)
def test_no_linux_only_tools(rel):
    bad = []
    for n, line in mac_lines(rel):
        for pat, instead in LINUX_ONLY:
            guarded = any(tool in pat and guard in line for tool, guard in GUARDS.items())
            if re.search(pat, line) and not guarded:
                bad.append(f"{rel}:{n}: {line.strip()}  (use {instead})")
    assert not bad, "\n".join(bad)


def test_the_check_catches_what_it_should(tmp_path):
    """The patterns themselves: each catches its tool in a plain command line."""
    samples = ["sha256sum f", "md5sum f", "make -j$(nproc)", "readlink -f x", "stat -c %s f", "date -d yesterday",
               "grep -P x", "timeout 5 cmd", "sed -i 's/a/b/' f", "find . -printf x", "xargs -r rm", "tac f",
               "install -D a b", "cp --force a b", "mktemp --directory"]
    for sample, (pat, _) in zip(samples, LINUX_ONLY):
        assert re.search(pat, sample), (pat, sample)
