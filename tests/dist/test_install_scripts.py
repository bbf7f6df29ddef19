"""The release archive's install.sh (and uninstall.sh's options), run by dash and bash as a Mac's
/bin/sh would run them, on a release made by scripts/release from stand-in binaries
(install_release.py): relative and ~ prefixes, quoting, a damaged SHA256SUMS, quarantine, a
system other than macOS, the tools a stock Mac has, an upgrade and a second install. What the
manifest records (and a failed or killed run leaves): test_install_manifest.py; uninstall.sh
--all: test_uninstall_all.py."""
import hashlib
import os
import shlex
import shutil
import stat
import subprocess

import pytest

from conftest import ROOT
from install_release import INSTALLED, MANIFEST, SHELLS, env_with, mark_prepared, run, sh_word, snapshot, standins, tree
from install_release import archive, mac, rel  # noqa: F401  (fixtures)


# ---- row 9: where the prefix is, and how it is quoted ----

@pytest.mark.parametrize("shell", SHELLS)
def test_relative_prefix_is_the_callers(shell, rel, mac, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    p = run(shell, rel / "install.sh", "--prefix", "pfx", cwd=work, env=mac)
    assert p.returncode == 0, p.stderr
    assert tree(work / "pfx") == sorted(INSTALLED + [MANIFEST])
    assert not (rel / "pfx").exists()  # not the release directory
    assert f"next: {work}/pfx/bin/vzcaps doctor" in p.stdout
    assert (work / "pfx" / "bin" / "vzcaps").exists()
    p = run(shell, rel / "uninstall.sh", "--prefix", "pfx", cwd=work, env=mac)
    assert p.returncode == 0, p.stderr
    assert f"removed {len(INSTALLED)} files" in p.stdout
    assert not (work / "pfx").exists()  # it made the prefix, so the prefix goes too


def test_dot_and_trailing_slash_prefixes(rel, mac, tmp_path):
    work = tmp_path / "w"
    (work / "a").mkdir(parents=True)
    p = run("dash", rel / "install.sh", "--prefix=./a/./b/", cwd=work, env=mac)
    assert p.returncode == 0, p.stderr
    assert f"next: {work}/a/b/bin/vzcaps doctor" in p.stdout
    assert (work / "a" / "b" / "bin" / "vzcaps").is_file()


def test_tilde_prefix_is_home(rel, mac, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "w"
    work.mkdir()
    p = run("dash", rel / "install.sh", "--prefix=~/x", cwd=work, env=mac)
    assert p.returncode == 0, p.stderr
    assert (home / "x" / "bin" / "vzcaps").is_file() and not (work / "~").exists()
    assert f"next: {home}/x/bin/vzcaps doctor" in p.stdout
    p = run("dash", rel / "uninstall.sh", "--prefix=~/x", cwd=work, env=mac)
    assert p.returncode == 0, p.stderr
    assert not (home / "x").exists()
    for bad, why in (("~someone/x", "~USER is not expanded"), ("", "empty"), ("a\nb", "control character")):
        p = run("dash", rel / "install.sh", f"--prefix={bad}", cwd=work, env=mac)
        assert p.returncode == 2 and why in p.stderr, (bad, p.stderr)
        assert os.listdir(work) == []
    env = dict(mac)
    del env["HOME"]
    p = run("dash", rel / "install.sh", "--prefix=~/x", cwd=work, env=env)
    assert p.returncode == 2 and "HOME is not set" in p.stderr


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("dirname", ["my prefix", "it's here", "a$b`c`;*"])
def test_prefix_with_blanks_and_quotes_is_quoted_in_every_message(shell, dirname, rel, mac, tmp_path):
    prefix = tmp_path / dirname
    p = run(shell, rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    next_line = [ln for ln in p.stdout.splitlines() if ln.startswith("next: ")]
    assert len(next_line) == 1
    words = shlex.split(next_line[0][len("next: "):])  # the line as a shell reads it
    assert words == [f"{prefix}/bin/vzcaps", "doctor"]
    named = 0
    for line in p.stdout.splitlines():  # every message naming the prefix names it as one shell word
        # the zsh fpath note (install.sh, when zsh is there) names the completions' directory
        for path in (f"{prefix}/{MANIFEST}", f"{prefix}/bin/vzcaps", f"{prefix}/bin", f"{prefix}/share/zsh/site-functions",
                     str(prefix)):
            if sh_word(path) in line:
                named += 1
                assert shlex.split(sh_word(path)) == [path]
                line = line.replace(sh_word(path), "")
        assert str(tmp_path) not in line, line
    assert named >= 3
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert sh_word(str(prefix)) in p.stdout
    assert not prefix.exists()


# ---- row 10: SHA256SUMS covers every installed file, and destinations are checked first ----

def edit_sums(rel, fn):
    sums = rel / "SHA256SUMS"
    lines = sums.read_text().splitlines(keepends=True)
    sums.write_text("".join(fn(lines)))


def line_of(lines, path):
    return next(i for i, ln in enumerate(lines) if ln.rstrip("\n").endswith("  " + path))


def damage_digit(lines):
    i = line_of(lines, "bin/vzcaps")
    lines[i] = "g" + lines[i][1:]
    return lines


def drop_line(lines):
    del lines[line_of(lines, "bin/vzcaps")]
    return lines


def duplicate_line(lines):
    return lines + [lines[line_of(lines, "bin/vzcaps")]]


def crlf_line(lines):
    i = line_of(lines, "bin/vzcaps")
    lines[i] = lines[i].rstrip("\n") + "\r\n"
    return lines


def garbage_line(lines):
    return lines + ["not a checksum line\n"]


def one_space(lines):
    i = line_of(lines, "bin/vzcaps")
    lines[i] = lines[i].replace("  ", " ", 1)
    return lines


def path_escape(lines):
    h = hashlib.sha256(b"x").hexdigest()
    return lines + [f"{h}  ../outside\n"]


@pytest.mark.parametrize("damage,tamper", [(damage_digit, True), (drop_line, True), (duplicate_line, False),
                                           (crlf_line, False), (garbage_line, False), (one_space, False),
                                           (path_escape, False)])
def test_a_damaged_sha256sums_installs_nothing(damage, tamper, rel, mac, tmp_path):
    if tamper:  # the file the broken line should have protected is modified too
        with open(rel / "bin" / "vzcaps", "ab") as f:
            f.write(b"tampered")
    edit_sums(rel, damage)
    prefix = tmp_path / "prefix"
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "nothing installed" in p.stderr and "installed" not in p.stdout
    assert not prefix.exists()


def test_a_file_listed_but_missing_installs_nothing(rel, mac, tmp_path):
    (rel / "share" / "man" / "man1" / "vzcaps.1").unlink()
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix"), env=mac)
    assert p.returncode == 1 and "share/man/man1/vzcaps.1: listed in SHA256SUMS but missing" in p.stderr
    assert not (tmp_path / "prefix").exists()


def test_an_extra_file_without_a_line_installs_nothing(rel, mac, tmp_path):
    (rel / "bin" / "extra").write_text("#!/bin/sh\necho not from the release\n")
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix"), env=mac)
    assert p.returncode == 1 and "bin/extra: no line in SHA256SUMS" in p.stderr
    assert not (tmp_path / "prefix").exists()


def test_a_link_or_fifo_in_the_release_installs_nothing(rel, mac, tmp_path):
    target = rel / "bin" / "vzcaps"
    moved = tmp_path / "elsewhere"
    shutil.move(target, moved)
    target.symlink_to(moved)  # same bytes, so the checksum alone would pass
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix"), env=mac)
    assert p.returncode == 1 and "nothing installed" in p.stderr
    target.unlink()
    shutil.move(moved, target)
    os.mkfifo(rel / "share" / "doc" / "vzcaps" / "fifo")
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix"), env=mac)
    assert p.returncode == 1 and "nothing installed" in p.stderr
    assert not (tmp_path / "prefix").exists()


def test_a_directory_where_a_file_goes_fails_before_copying(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin" / "vzcaps").mkdir(parents=True)
    before = snapshot(prefix)
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "is a directory where a file goes" in p.stderr
    assert "installed" not in p.stdout
    assert snapshot(prefix) == before
    p = run("dash", rel / "install.sh", "--force", "--prefix", str(prefix), env=mac)  # not even with --force
    assert p.returncode == 1 and snapshot(prefix) == before


def test_a_file_where_a_directory_goes_fails_before_copying(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (prefix / "share").write_text("a file")
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "is not a directory" in p.stderr
    assert snapshot(prefix) == {"share": b"a file"}


def test_a_damaged_release_binary_dir(rel, mac, tmp_path):
    """bin/vzcaps of the release itself a directory: refused, not installed as a tree."""
    (rel / "bin" / "vzcaps").unlink()
    (rel / "bin" / "vzcaps").mkdir()
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix"), env=mac)
    assert p.returncode == 1 and not (tmp_path / "prefix").exists()


# ---- quarantine, and a system other than macOS ----

def test_quarantine_is_removed_from_what_it_installs(rel, tmp_path):
    d = standins(tmp_path / "standins", xattr="present")
    prefix = tmp_path / "prefix"
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 0, p.stderr
    assert f"quarantine: removed com.apple.quarantine from {len(INSTALLED)} installed files" in p.stdout
    log = (d / "log").read_text().splitlines()
    for f in INSTALLED:
        assert f"xattr -d com.apple.quarantine {prefix}/{f}" in log
    assert not [ln for ln in log if "-d" in ln and str(rel) in ln]  # the release itself is left alone


def test_quarantine_reports(rel, tmp_path):
    d = standins(tmp_path / "standins", xattr="absent")
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix"), env=env_with(d))
    assert p.returncode == 0 and "quarantine: none on the installed files" in p.stdout
    d2 = standins(tmp_path / "standins2")
    p = run("dash", rel / "install.sh", "--prefix", str(tmp_path / "prefix2"), env=env_with(d2))
    assert p.returncode == 0 and "quarantine: no xattr command (not macOS): nothing to remove" in p.stdout


def test_a_system_other_than_macos_is_told_plainly(rel, tmp_path):
    d = standins(tmp_path / "standins", darwin=False)
    prefix = tmp_path / "prefix"
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 1 and "not macOS" in p.stderr and "do not run here" in p.stderr
    assert "nothing installed" in p.stderr and "--force" in p.stderr and not prefix.exists()
    p = run("dash", rel / "install.sh", "--force", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 0 and "not macOS" in p.stdout and "will not run here" in p.stdout
    assert (prefix / "bin" / "vzcaps").is_file()


def test_only_tools_a_stock_mac_has(rel, tmp_path):
    """install.sh and uninstall.sh --all with a PATH of the tools macOS ships (no sha256sum,
    realpath, install; stat and readlink are macOS's own in BSD form, and the record's shell
    functions try GNU's form first, then BSD's), the stand-ins first, with a prepared copy to
    recognise by its record."""
    d = standins(tmp_path / "standins", xattr="absent", launchctl=True)
    mac_bin = tmp_path / "macbin"
    mac_bin.mkdir()
    for tool in ("sh", "awk", "sed", "grep", "find", "sort", "mktemp", "chmod", "mv", "rm", "rmdir", "mkdir", "cat",
                 "cut", "tr", "head", "dirname", "shasum", "perl", "id", "stat", "readlink", "wc"):
        (mac_bin / tool).symlink_to(shutil.which("dash") if tool == "sh" else shutil.which(tool))
    env = dict(os.environ, PATH=f"{d}:{mac_bin}", HOME=str(tmp_path / "home"))
    prefix = tmp_path / "prefix"
    p = run(str(mac_bin / "sh"), rel / "install.sh", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    assert "command not found" not in p.stderr and "not found" not in p.stderr
    (tmp_path / "home" / "Library" / "Logs" / "vzcaps").mkdir(parents=True)
    prepared = tmp_path / "home" / "Library" / "Application Support" / "vzcaps" / "prepared"
    prepared.mkdir(parents=True)
    (prepared / "tool").write_text("a copy\n")
    mark_prepared(prepared, "tool")
    p = run(str(mac_bin / "sh"), rel / "uninstall.sh", "--all", "--yes", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    assert "not found" not in p.stderr and not prefix.exists()
    assert not (tmp_path / "home" / "Library" / "Logs" / "vzcaps").exists()
    assert "removed the prepared copy" in p.stdout and not (prepared / "tool").exists()


def test_the_shared_part_of_both_scripts_is_identical():
    def shared(name):
        text = (ROOT / "packaging" / name).read_text()
        return text[text.index("# ---- shared with uninstall.sh"):text.index("# ---- end of the shared part ----")]
    assert shared("install.sh") == shared("uninstall.sh")


def test_usage_errors(rel, mac):
    for script, args in (("install.sh", ["--bogus"]), ("install.sh", ["--prefix"]), ("uninstall.sh", ["--yes"]),
                         ("uninstall.sh", ["--prefix", ""]), ("uninstall.sh", ["extra"])):
        p = run("dash", rel / script, *args, env=mac)
        assert p.returncode == 2 and "usage: " in p.stderr, (script, args, p.stderr)


def test_a_failed_write_to_standard_output_is_an_error(rel, mac, tmp_path):
    with open("/dev/full", "w") as full:
        p = subprocess.run(["dash", str(rel / "install.sh"), "--prefix", str(tmp_path / "p")], env=mac, stdout=full,
                           stderr=subprocess.PIPE, text=True)
    assert p.returncode != 0


def test_an_upgrade_replaces_the_old_files_and_keeps_the_record_of_the_rest(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    # the next version: another command, and one page fewer
    (rel / "bin" / "vzcaps").write_bytes(b"\xcf\xfa\xed\xfe the next version\n")
    (rel / "share" / "doc" / "vzcaps" / "LICENSE").unlink()
    lines = [ln for ln in (rel / "SHA256SUMS").read_text().splitlines() if not ln.endswith("  share/doc/vzcaps/LICENSE")]
    i = next(i for i, ln in enumerate(lines) if ln.endswith("  bin/vzcaps"))
    lines[i] = hashlib.sha256((rel / "bin" / "vzcaps").read_bytes()).hexdigest() + "  bin/vzcaps"
    (rel / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert (prefix / "bin" / "vzcaps").read_bytes() == b"\xcf\xfa\xed\xfe the next version\n"
    manifest = (prefix / MANIFEST).read_text()
    assert "share/doc/vzcaps/LICENSE" in manifest  # installed by the earlier version: still recorded
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert not prefix.exists()


@pytest.mark.parametrize("shell", SHELLS)
def test_messages_never_carry_control_characters(rel, tmp_path, mac, shell):
    """regression: a release unpacked under a name with an escape sequence (or a prepared entry
    named so) was printed raw in the messages, for the terminal to act on."""
    odd = tmp_path / "rel\x1b[31m\nname"
    shutil.copytree(rel, odd)
    (odd / "SHA256SUMS").unlink()
    p = run(shell, odd / "install.sh", "--prefix", str(tmp_path / "p"), env=mac)
    assert p.returncode == 1 and "is missing (a damaged release)" in p.stderr, p.stderr
    assert "\x1b" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert f"'{tmp_path}/rel?[31m?name/SHA256SUMS'" in p.stderr
    prepared = tmp_path / "home" / "Library" / "Application Support" / "vzcaps" / "prepared"
    prepared.mkdir(parents=True)
    (prepared / "x\x1b]0;title\x07").write_text("a user's file")
    prefix = tmp_path / "prefix"
    assert run(shell, rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    p = run(shell, rel / "uninstall.sh", "--all", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0 and "not a copy vzcaps prepare made" in p.stdout, (p.stdout, p.stderr)
    assert not any(c in p.stdout + p.stderr for c in "\x1b\x07"), p.stdout


def test_a_prefix_outside_zshs_fpath_says_the_line_that_makes_zsh_complete(rel, mac, tmp_path):
    # issue 39 row 20: completions under ~/.local needed an fpath line nobody mentioned
    zsh = shutil.which("zsh")
    assert zsh, "zsh is missing: sh scripts/install-deps installs it (a Mac has it)"
    home = tmp_path / "home"
    p = run("sh", rel / "install.sh", "--prefix", str(home / ".local"), env=mac)
    assert p.returncode == 0, p.stderr
    notes = [ln for ln in p.stdout.splitlines() if ln.startswith("note: zsh completes vzcaps once ~/.zshrc has ")]
    assert len(notes) == 1, p.stdout
    line = notes[0].split(" has ", 1)[1].rsplit(" before compinit", 1)[0]
    assert line == f"fpath=({home}/.local/share/zsh/site-functions $fpath)"
    # the line, as ~/.zshrc would run it, makes zsh find the completion function
    found = subprocess.run([zsh, "-fc", f"{line}; autoload -Uz _vzcaps; whence -v _vzcaps"], capture_output=True,
                           text=True, timeout=60)
    assert found.returncode == 0 and "_vzcaps is an autoload shell function" in found.stdout, found.stdout + found.stderr


def test_a_second_install_writes_nothing(rel, mac, tmp_path):
    """issue 39 row 19: a second provisioning run reinstalled every file ("installed 33 files")."""
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    before = {p: (os.lstat(p).st_ino, os.lstat(p).st_mtime_ns) for p in map(str, prefix.rglob("*"))}
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert f"already installed: the {len(INSTALLED)} files in {prefix} are this release's: nothing written" in p.stdout
    assert {p: (os.lstat(p).st_ino, os.lstat(p).st_mtime_ns) for p in map(str, prefix.rglob("*"))} == before
    (prefix / "share" / "doc" / "vzcaps" / "README").write_text("changed\n")
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "already installed" not in p.stdout  # not what it installed: refused as before


@pytest.mark.parametrize("lost", [0o644, 0o700])
def test_a_second_install_over_a_command_that_lost_its_mode_repairs_it(rel, mac, tmp_path, lost):
    """A second install.sh over the same release, where bin/vzcaps lost its mode (chmod -x, a copy
    that kept no mode, or chmod 700 by root: only root can start it): the bytes are this release's,
    but the install is broken, so it is not "already installed" (it said so, wrote nothing and
    left the command unable to start)."""
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    cmd = prefix / "bin" / "vzcaps"
    mode = stat.S_IMODE(cmd.stat().st_mode)
    cmd.chmod(lost)
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert "already installed" not in p.stdout, p.stdout
    assert stat.S_IMODE(cmd.stat().st_mode) == mode
