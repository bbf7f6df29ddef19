"""The release archive's install.sh and uninstall.sh, run by dash and bash as a Mac's /bin/sh
would run them, on a release made by scripts/release from stand-in binaries (so these run
without the cross toolchain): relative and ~ prefixes, quoting, a damaged SHA256SUMS, files
and links the scripts did not make, the install manifest, quarantine, a system other than
macOS, and uninstall.sh --all with a temporary HOME and a stand-in launchctl."""
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import tarfile

import pytest

from conftest import BUILD, ROOT

NAME = "vzcaps-0.1.0-macos"
SHELLS = ["dash", "bash", "bash --posix"]  # macOS's /bin/sh is bash in POSIX mode, or dash
INSTALLED = ["bin/vzcaps", "lib/libvzcaps.dylib", "share/man/man1/vzcaps.1", "share/bash-completion/completions/vzcaps",
             "share/zsh/site-functions/_vzcaps", "share/fish/vendor_completions.d/vzcaps.fish",
             "share/doc/vzcaps/README", "share/doc/vzcaps/LICENSE", "share/doc/vzcaps/vzcaps.conf.example",
             "share/vzcaps/uninstall.sh", "share/vzcaps/provision-image.sh"] + [f"share/doc/vzcaps/{page.name}" for page in (ROOT / "docs").glob("*.md")]
MANIFEST = "share/vzcaps/install-manifest"


def standins(where, darwin=True, xattr=None, launchctl=False):
    """A directory put first in PATH: uname answering Darwin, and optionally xattr and launchctl
    stand-ins that log their arguments to where/log."""
    where.mkdir(parents=True, exist_ok=True)
    log = where / "log"
    if darwin:
        (where / "uname").write_text('#!/bin/sh\ncase "$1" in -s) echo Darwin ;; -m) echo arm64 ;; *) echo Darwin ;; esac\n')
    if xattr is not None:  # xattr = "present": every file is quarantined until -d
        (where / "xattr").write_text(f'#!/bin/sh\necho "xattr $*" >>{shlex.quote(str(log))}\n'
                                     f'case "$1" in -p) [ "{xattr}" = present ] && ! grep -Fqx "xattr -d $2 $3" '
                                     f'{shlex.quote(str(log))} && {{ echo 0081; exit 0; }}; exit 1 ;; -d) exit 0 ;; esac\nexit 1\n')
    if launchctl:  # records whether the plist was still there when bootout ran
        (where / "launchctl").write_text(
            f'#!/bin/sh\nlabel=${{2##*/}}\nif [ -f "$HOME/Library/LaunchAgents/$label.plist" ]; then s=present; else s=gone; fi\n'
            f'echo "launchctl $* ($s)" >>{shlex.quote(str(log))}\n[ "$label" = running.job ]\n')
    for f in where.iterdir():
        f.chmod(0o755)
    return where


def env_with(path_dir, **extra):
    env = dict(os.environ, PATH=f"{path_dir}:/usr/bin:/bin", **extra)
    return env


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A release made by scripts/release from stand-in binaries."""
    for f in ("vzcaps.1", "completions/vzcaps.bash", "completions/_vzcaps", "completions/vzcaps.fish"):
        assert (BUILD / f).exists(), f"build/{f} missing: run make"
    fake = tmp_path_factory.mktemp("fakedist")
    (fake / "vzcaps").write_bytes(b"\xcf\xfa\xed\xfe stand-in command\n")
    (fake / "libvzcaps.dylib").write_bytes(b"\xcf\xfa\xed\xfe stand-in library\n")
    out = tmp_path_factory.mktemp("out")
    p = subprocess.run(["sh", "scripts/release"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, DIST_DIR=str(fake), RELEASE_OUT=str(out), SOURCE_DATE_EPOCH="1700000000"))
    assert p.returncode == 0, p.stderr
    return out / f"{NAME}.tar.gz"


def unpack(archive, where):
    with tarfile.open(archive) as t:
        t.extractall(where)
    return where / NAME


def tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def snapshot(root):
    """Every path under root with what it is (so 'nothing changed' can be asserted)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.readlink(p) if os.path.islink(p) else (
                "dir" if os.path.isdir(p) else open(p, "rb").read())
    return out


def sh_word(s):
    """A path as the scripts quote it: as is when plain, else in single quotes, ' as '\\''."""
    if s and all(c.isascii() and (c.isalnum() or c in "_./+:@%,=-") for c in s):
        return s
    return "'" + s.replace("'", "'\\''") + "'"


def run(shell, script, *args, cwd=None, env=None):
    return subprocess.run([*shell.split(), str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def mac(tmp_path):
    return env_with(standins(tmp_path / "standins"), HOME=str(tmp_path / "home"))


@pytest.fixture
def rel(archive, tmp_path):
    return unpack(archive, tmp_path / "x")


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


# ---- row 11 and the manifest: only what install.sh made is replaced or removed ----

def test_install_does_not_replace_files_it_did_not_make(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "vzcaps").write_text("the user's own vzcaps\n")
    cellar = tmp_path / "cellar" / "lib"
    cellar.mkdir(parents=True)
    (cellar / "libvzcaps.dylib").write_text("another package's library\n")
    (prefix / "lib").mkdir()
    (prefix / "lib" / "libvzcaps.dylib").symlink_to(cellar / "libvzcaps.dylib")
    before = snapshot(prefix)
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "nothing installed" in p.stderr
    assert "bin/vzcaps: exists and is not what install.sh installed" in p.stderr
    assert "lib/libvzcaps.dylib: is a symbolic link" in p.stderr
    assert snapshot(prefix) == before
    p = run("dash", rel / "install.sh", "--force", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert not (prefix / "lib" / "libvzcaps.dylib").is_symlink()  # the link replaced, not written through
    assert (cellar / "libvzcaps.dylib").read_text() == "another package's library\n"
    assert (prefix / "bin" / "vzcaps").read_bytes() == (rel / "bin" / "vzcaps").read_bytes()


def test_the_manifest_is_not_written_through_a_link(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "share" / "vzcaps").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (prefix / MANIFEST).symlink_to(victim)
    for args in ([], ["--force"]):
        p = run("dash", rel / "install.sh", *args, "--prefix", str(prefix), env=mac)
        assert p.returncode == 1 and "nothing installed" in p.stderr
        assert victim.read_text() == "precious\n" and not (prefix / "bin").exists()
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and victim.read_text() == "precious\n"


def test_a_foreign_manifest_is_refused(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "share" / "vzcaps").mkdir(parents=True)
    (prefix / MANIFEST).write_text("someone else's notes\n")
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "was not written by install.sh" in p.stderr and not (prefix / "bin").exists()
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "nothing removed" in p.stderr
    assert (prefix / MANIFEST).read_text() == "someone else's notes\n"


def test_the_manifest_records_files_with_checksums_and_created_directories(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "share" / "man").mkdir(parents=True)  # existed before: not recorded
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    lines = (prefix / MANIFEST).read_text().splitlines()
    assert lines[0] == "# vzcaps install-manifest 1"
    files = {ln.split()[2]: ln.split()[1] for ln in lines if ln.startswith("file ")}
    assert sorted(files) == sorted(INSTALLED)
    for f, h in files.items():
        assert hashlib.sha256((prefix / f).read_bytes()).hexdigest() == h
    dirs = [ln.split()[1] for ln in lines if ln.startswith("dir ")]
    assert "share/man/man1" in dirs and "share/man" not in dirs and "share" not in dirs and "." not in dirs
    assert os.stat(prefix / MANIFEST).st_mode & 0o777 == 0o644
    assert os.stat(prefix / "bin" / "vzcaps").st_mode & 0o777 == 0o755
    assert os.stat(prefix / "share" / "vzcaps" / "uninstall.sh").st_mode & 0o777 == 0o755
    assert os.stat(prefix / "lib" / "libvzcaps.dylib").st_mode & 0o777 == 0o644
    assert not [n for n in tree(prefix) if ".vzcaps-install" in n or "install-manifest." in n]


@pytest.mark.parametrize("shell", SHELLS)
def test_directories_made_above_the_prefix_are_recorded_and_removed(shell, rel, mac, tmp_path):
    """regression (issue 25 row 17): install.sh made the missing parents of the prefix with
    mkdir -p (mode 0700 under umask 077) and recorded none of them, so uninstall.sh left them."""
    top = tmp_path / "top"
    top.mkdir()
    prefix = top / "a b" / "c" / "prefix"
    def umask077(script):
        return subprocess.run([*shell.split(), str(rel / script), "--prefix", str(prefix)], env=mac, capture_output=True,
                              text=True, timeout=60, umask=0o077)
    p = umask077("install.sh")
    assert p.returncode == 0, p.stderr
    for d in (top / "a b", top / "a b" / "c", prefix, prefix / "bin"):
        assert os.stat(d).st_mode & 0o777 == 0o755, d
    assert os.stat(prefix / "bin" / "vzcaps").st_mode & 0o777 == 0o755
    parents = [ln.split() for ln in (prefix / MANIFEST).read_text().splitlines() if ln.startswith("parent ")]
    st1, st2 = os.stat(top / "a b" / "c"), os.stat(top / "a b")
    assert sorted(parents) == [["parent", "1", str(st1.st_dev), str(st1.st_ino)], ["parent", "2", str(st2.st_dev), str(st2.st_ino)]]
    p = umask077("uninstall.sh")
    assert p.returncode == 0, p.stderr
    assert os.listdir(top) == [], p.stdout
    # a directory of the user's made at a parent's place since is not the one install.sh made
    assert run(shell, rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    (top / "a b" / "c").rename(top / "moved")
    (top / "a b" / "c").mkdir()
    (top / "moved" / "prefix").rename(top / "a b" / "c" / "prefix")
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert f"kept {shlex.quote(str(top / 'a b' / 'c'))}: not the directory install.sh made there" in p.stdout
    assert sorted(os.listdir(top)) == ["a b", "moved"] and os.listdir(top / "a b") == ["c"]


def test_reinstall_replaces_its_own_files_and_keeps_the_record(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    first = (prefix / MANIFEST).read_text()
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert (prefix / MANIFEST).read_text() == first  # the same directories, created by the first run
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0 and not prefix.exists()


@pytest.mark.parametrize("shell", SHELLS)
def test_uninstall_removes_only_unchanged_files_of_the_manifest(shell, rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "other-tool").write_text("not ours")
    (prefix / "share" / "man" / "man1").mkdir(parents=True)  # existed, empty: stays
    p = run(shell, rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    (prefix / "share" / "doc" / "vzcaps" / "README").write_text("edited by the user\n")
    cellar = tmp_path / "cellar"
    cellar.mkdir()
    (cellar / "vzcaps").write_bytes((rel / "bin" / "vzcaps").read_bytes())  # even with the same bytes
    (prefix / "bin" / "vzcaps").unlink()
    (prefix / "bin" / "vzcaps").symlink_to(cellar / "vzcaps")
    (prefix / "share" / "zsh" / "site-functions" / "_other").write_text("another package's completion")
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 0, p.stderr
    assert f"kept {prefix}/share/doc/vzcaps/README: changed since install.sh installed it" in p.stdout
    assert f"kept {prefix}/bin/vzcaps: a link now" in p.stdout
    assert tree(prefix) == sorted(["bin/other-tool", "bin/vzcaps", "share/doc/vzcaps/README",
                                   "share/zsh/site-functions/_other"])
    assert (prefix / "bin" / "vzcaps").is_symlink() and (cellar / "vzcaps").exists()
    assert (prefix / "share" / "man" / "man1").is_dir()  # not made by install.sh: kept though empty
    assert not (prefix / "lib").exists() and not (prefix / "share" / "fish").exists()


def test_uninstall_without_a_manifest_removes_nothing(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "vzcaps").write_text("the user's own vzcaps\n")
    (prefix / "share" / "man").mkdir(parents=True)
    before = snapshot(prefix)
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "no install manifest" in p.stderr and "removed" not in p.stdout
    assert snapshot(prefix) == before


def test_a_malformed_manifest_removes_nothing(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    with open(prefix / MANIFEST, "a") as f:
        f.write(f"file {'0' * 64} ../../etc/passwd\n")
    before = snapshot(prefix)
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and "malformed" in p.stderr and snapshot(prefix) == before


def test_the_installed_uninstaller_knows_its_prefix(rel, mac, tmp_path):
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac).returncode == 0
    p = run("dash", prefix / "share" / "vzcaps" / "uninstall.sh", cwd=tmp_path, env=mac)
    assert p.returncode == 0, p.stderr
    assert not prefix.exists()


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


# ---- uninstall.sh --all: what vzcaps made for the user (temporary HOME, stand-in launchctl) ----

def launchd_plist(home, label, *cmd):
    """A LaunchAgent as `vzcaps launchd --install` writes it."""
    env = dict(os.environ, HOME=str(home))
    env.pop("VZCAPS_CONFIG", None)
    p = subprocess.run([str(BUILD / "vzcaps"), "launchd", "--label", label, "--install", "--", *cmd], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return home / "Library" / "LaunchAgents" / f"{label}.plist"


def mark_prepared(prepared, name, ino=None):
    """The record vzcaps prepare leaves beside a copy (src/common/record.c): its device, inode,
    modification time to the nanosecond and, for a file, the SHA-256 of its bytes."""
    st = os.stat(prepared / name)
    digest = hashlib.sha256((prepared / name).read_bytes()).hexdigest() if (prepared / name).is_file() else "-"
    (prepared / f".{name}.vzcaps-prepared").write_text(
        f"vzcaps prepare\ncopy {st.st_dev} {ino or st.st_ino} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d} "
        f"{digest}\nsource /x/{name}\n")


def test_uninstall_all_removes_only_the_copies_prepare_made(rel, tmp_path):
    """regression: --all listed every entry of the prepared directory as a copy (markers too)
    and --all --yes removed them all, a user's own directory there included."""
    home = tmp_path / "home"
    d = standins(tmp_path / "standins", launchctl=True)
    env = env_with(d, HOME=str(home))
    prepared = home / "Library" / "Application Support" / "vzcaps" / "prepared"
    (prepared / "Demo.app" / "Contents").mkdir(parents=True)
    mark_prepared(prepared, "Demo.app")
    (prepared / "My Notes").mkdir()
    (prepared / "My Notes" / "n.txt").write_text("mine")
    (prepared / "tool").write_text("a user's file where a copy was")
    mark_prepared(prepared, "tool", ino=os.stat(prepared / "My Notes").st_ino)  # names another inode
    (prepared / "forged").write_text("mine too")
    (prepared / ".forged.vzcaps-prepared").write_text("my notes\n")
    (prepared / "link").symlink_to(prepared / "My Notes")
    mark_prepared(prepared, "link")
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    p = run("dash", rel / "uninstall.sh", "--all", "--yes", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("removed the prepared copy") == 1 and "prepared/Demo.app" in p.stdout
    for kept in ("My Notes", "tool", "forged", "link"):
        assert f"kept {shlex.quote(str(prepared / kept))}: not a copy vzcaps prepare made" in p.stdout, (kept, p.stdout)
    assert sorted(os.listdir(prepared)) == [".forged.vzcaps-prepared", ".link.vzcaps-prepared", ".tool.vzcaps-prepared",
                                            "My Notes", "forged", "link", "tool"]
    assert (prepared / "My Notes" / "n.txt").read_text() == "mine"


def test_uninstall_all_keeps_a_users_file_at_a_freed_copys_inode(rel, tmp_path):
    """regression (issue 25 row 1): --all --yes recognised a prepared copy by its inode alone, so
    a file of the user's that got a deleted copy's inode (ext4 reuses them at once) was removed
    as the copy. The record names device, inode, modification time and content, and the script
    tests them as prepare does (src/common/record.c)."""
    home = tmp_path / "home"
    env = env_with(standins(tmp_path / "standins", launchctl=True), HOME=str(home))
    prepared = home / "Library" / "Application Support" / "vzcaps" / "prepared"
    prepared.mkdir(parents=True)
    kept = {}
    # deleted, and a file of the user's made at its name: the same inode when the file system
    # reuses it at once (ext4 does), another otherwise; kept either way
    (prepared / "llama-server").write_text("the prepared copy\n")
    mark_prepared(prepared, "llama-server")
    (prepared / "llama-server").unlink()
    (prepared / "llama-server").write_text("the user's own llama-server\n")
    kept["llama-server"] = "the user's own llama-server\n"
    # the inode certainly the copy's: written over in place, a second later
    (prepared / "ollama").write_text("the prepared copy\n")
    mark_prepared(prepared, "ollama")
    t = os.stat(prepared / "ollama").st_mtime_ns
    with open(prepared / "ollama", "w") as f:
        f.write("the user's notes\n")
    os.utime(prepared / "ollama", ns=(t + 10**9, t + 10**9))
    kept["ollama"] = "the user's notes\n"
    # ... and with the old time put back: the content tells
    (prepared / "tool").write_text("the prepared copy\n")
    mark_prepared(prepared, "tool")
    t = os.stat(prepared / "tool").st_mtime_ns
    with open(prepared / "tool", "w") as f:
        f.write("the user's own \n")
    os.utime(prepared / "tool", ns=(t, t))
    kept["tool"] = "the user's own \n"
    (prepared / "ours").write_text("a copy\n")
    mark_prepared(prepared, "ours")
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    p = run("dash", rel / "uninstall.sh", "--all", "--yes", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    for name, text in kept.items():
        assert (prepared / name).read_text() == text, name
        assert f"kept {shlex.quote(str(prepared / name))}: not a copy vzcaps prepare made" in p.stdout, p.stdout
    assert not (prepared / "ours").exists() and "removed the prepared copy" in p.stdout


def test_uninstall_all_removes_agents_logs_caches_and_lists_prepared_copies(rel, tmp_path):
    home = tmp_path / "home"
    d = standins(tmp_path / "standins", launchctl=True)
    env = env_with(d, HOME=str(home))
    ours = [launchd_plist(home, "com.me.llama-server", "/bin/echo", "hi"), launchd_plist(home, "running.job", "/bin/echo")]
    agents = home / "Library" / "LaunchAgents"
    (agents / "com.apple.other.plist").write_text("<plist><dict><key>Label</key><string>com.apple.other</string></dict></plist>")
    (agents / "half.plist").write_text("<string>half</string> <string>/x/Library/Logs/vzcaps/half.err.log</string>")
    (agents / "linked.plist").symlink_to(ours[0])
    os.mkfifo(agents / "fifo.plist")  # never opened (it would hang a reader)
    (agents / "odd name.plist").write_bytes(ours[1].read_bytes())  # not a label vzcaps accepts
    logs, caches = home / "Library" / "Logs" / "vzcaps", home / "Library" / "Caches" / "vzcaps"
    (logs).mkdir(parents=True, exist_ok=True)
    (logs / "com.me.llama-server.err.log").write_text("log")
    caches.mkdir(parents=True)
    (caches / "verify-x.json").write_text("{}")
    prepared = home / "Library" / "Application Support" / "vzcaps" / "prepared"
    (prepared / "Ollama.app" / "Contents").mkdir(parents=True)
    (prepared / "llama-server").write_text("copy")
    for copy in ("Ollama.app", "llama-server"):
        mark_prepared(prepared, copy)
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0

    p = run("dash", rel / "uninstall.sh", "--all", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    assert not prefix.exists()
    log = (d / "log").read_text().splitlines()
    uid = os.getuid()
    # stopped before its file went, in the GUI domain and then the one a headless guest has
    assert f"launchctl bootout gui/{uid}/com.me.llama-server (present)" in log
    assert f"launchctl bootout user/{uid}/com.me.llama-server (present)" in log
    assert f"launchctl bootout gui/{uid}/running.job (present)" in log and len(log) == 3
    assert f"stopped running.job (launchctl bootout gui/{uid})" in p.stdout
    assert not any(f.exists() for f in ours)
    assert sorted(os.listdir(agents)) == ["com.apple.other.plist", "fifo.plist", "half.plist", "linked.plist",
                                          "odd name.plist"]
    assert not logs.exists() and not caches.exists()
    assert (home / "Library" / "Logs").is_dir() and (home / "Library" / "Caches").is_dir()
    assert f"prepared copy: {shlex.quote(str(prepared / 'Ollama.app'))} (kept" in p.stdout
    assert f"prepared copy: {shlex.quote(str(prepared / 'llama-server'))} (kept" in p.stdout
    assert (prepared / "Ollama.app" / "Contents").is_dir() and (prepared / "llama-server").exists()

    p = run("dash", rel / "uninstall.sh", "--all", "--yes", "--prefix", str(prefix), env=env)
    assert "no install manifest" in p.stderr and p.returncode == 1  # the files were already removed
    assert "removed the prepared copy" in p.stdout
    assert not (home / "Library" / "Application Support" / "vzcaps").exists()
    assert "no LaunchAgent of vzcaps" in p.stdout


def user_env(tmp_path, **extra):
    """HOME in tmp_path, the stand-ins first, no VZCAPS_CONFIG or XDG_CONFIG_HOME of the caller's."""
    env = env_with(standins(tmp_path / "standins", launchctl=True), HOME=str(tmp_path / "home"))
    for k in ("VZCAPS_CONFIG", "XDG_CONFIG_HOME"):
        env.pop(k, None)
    env.update(extra)
    return env


@pytest.mark.parametrize("shell", SHELLS)
def test_uninstall_all_lists_config_files_and_removes_them_only_with_yes_config(shell, rel, tmp_path):
    """issue 27 item 5: --all never mentioned the config files; it lists those the library would
    read (docs/config.md's search) and removes them only with --yes --config."""
    home = tmp_path / "home"
    conf = home / ".config" / "vzcaps" / "vzcaps.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("[llama]\napple_family_max = auto\n")
    prefix = tmp_path / "prefix"
    env = user_env(tmp_path)
    assert run(shell, rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    for args in (["--all"], ["--all", "--yes"]):
        p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), *args, env=env)
        assert f"config file: {shlex.quote(str(conf))} (kept; uninstall.sh --all --yes --config removes it)" in p.stdout, p.stdout
        assert conf.exists()
    # VZCAPS_CONFIG names the one file the library reads: only it is listed
    named = tmp_path / "my named.conf"
    named.write_text("[x]\n")
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=user_env(tmp_path, VZCAPS_CONFIG=str(named)))
    assert f"config file: {shlex.quote(str(named))} (kept" in p.stdout and str(conf) not in p.stdout, p.stdout
    # an absolute XDG_CONFIG_HOME replaces ~/.config; a relative one is ignored
    xdg = tmp_path / "xdg" / "vzcaps" / "vzcaps.conf"
    xdg.parent.mkdir(parents=True)
    xdg.write_text("[y]\n")
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=user_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "xdg")))
    assert f"config file: {shlex.quote(str(xdg))} (kept" in p.stdout and str(conf) not in p.stdout, p.stdout
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=user_env(tmp_path, XDG_CONFIG_HOME="xdg"))
    assert f"config file: {shlex.quote(str(conf))} (kept" in p.stdout, p.stdout
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", "--yes", "--config", env=env)
    assert f"removed the config file {shlex.quote(str(conf))}" in p.stdout, p.stdout
    assert not conf.exists() and not conf.parent.exists() and (home / ".config").is_dir()
    assert named.exists() and xdg.exists()  # not the files this environment names
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=env)
    assert "no config files" in p.stdout
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--config", env=env)
    assert p.returncode == 2 and "--config goes with --all" in p.stderr



@pytest.mark.parametrize("shell", SHELLS)
def test_uninstall_all_yes_config_removes_only_a_regular_file(shell, rel, tmp_path):
    """VZCAPS_CONFIG=/dev/null (the usual spelling of "no config file") made --all --yes --config
    remove the device: rm -f took any entry there for a config file, although the library reads a
    regular file only. A device or FIFO is kept, with a message; the run fails, as for a directory."""
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers (the tests run as root)
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)
    prefix = tmp_path / "prefix"
    assert run(shell, rel / "install.sh", "--prefix", str(prefix), env=user_env(tmp_path)).returncode == 0
    for f in (dev, fifo):
        p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", "--yes", "--config",
                env=user_env(tmp_path, VZCAPS_CONFIG=str(f)))
        assert os.path.lexists(f), p.stdout
        assert p.returncode == 1 and f"{shlex.quote(str(f))} is not a regular file, not a config file: kept" in p.stderr, p.stderr

def test_uninstall_all_never_acts_on_part_of_a_name_with_a_newline(rel, tmp_path):
    """--all reads what it found one path a line: a name with a newline must never be taken
    apart into names of other files (a file in the current directory, a config file, a copy)."""
    home = tmp_path / "home"
    prepared = home / "Library" / "Application Support" / "vzcaps" / "prepared"
    prepared.mkdir(parents=True)
    work = tmp_path / "work"
    work.mkdir()
    (work / "b").mkdir()  # the part after the newline, in the current directory
    (prepared / "b").mkdir()
    mark_prepared(prepared, "b")  # a copy of ours named b ...
    (prepared / "a\nb").write_text("mine\n")  # ... and a file of the user's named a<LF>b
    (tmp_path / "conf").write_text("[x]\n")
    env = user_env(tmp_path, VZCAPS_CONFIG=f"{tmp_path / 'conf'}\n{tmp_path / 'conf'}")
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), "--all", "--yes", "--config", cwd=work, env=env)
    assert p.returncode == 0, p.stderr
    assert (work / "b").is_dir() and (prepared / "a\nb").read_text() == "mine\n"
    assert not (prepared / "b").exists() and "removed the prepared copy" in p.stdout
    assert "control character in its name" in p.stdout
    assert (tmp_path / "conf").exists() and "VZCAPS_CONFIG has a control character: not looked at" in p.stderr
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=user_env(tmp_path, HOME=f"{home}\n/x"))
    assert p.returncode == 1 and "HOME is not an absolute path (without control characters)" in p.stderr


def test_the_installed_uninstaller_stays_while_only_all_can_finish(rel, tmp_path):
    """issue 27 item 5: the installed share/vzcaps/uninstall.sh removed itself, so a later --all
    needed the archive. While vzcaps made anything for the user, a plain uninstall keeps it (and a
    manifest naming it), says so and how to finish; that --all removes it and the rest."""
    home = tmp_path / "home"
    env = user_env(tmp_path)
    plist = launchd_plist(home, "com.me.llama-server", "/bin/echo", "hi")
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    kept = prefix / "share" / "vzcaps" / "uninstall.sh"
    assert tree(prefix) == ["share/vzcaps/install-manifest", "share/vzcaps/uninstall.sh"]
    assert f"kept {shlex.quote(str(kept))} to finish later" in p.stdout and f"  {shlex.quote(str(plist))}" in p.stdout
    assert f"run: sh {shlex.quote(str(kept))} --all" in p.stdout
    assert plist.exists()
    p = run("dash", kept, "--all", "--yes", cwd=tmp_path, env=env)  # it knows its prefix
    assert p.returncode == 0, p.stderr
    assert not prefix.exists() and not plist.exists()
    assert "removed 1 files from" in p.stdout


def test_uninstall_all_leaves_links_in_place_of_logs(rel, tmp_path):
    home = tmp_path / "home"
    d = standins(tmp_path / "standins", launchctl=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("keep")
    (home / "Library" / "Logs").mkdir(parents=True)
    (home / "Library" / "Logs" / "vzcaps").symlink_to(elsewhere)
    prefix = tmp_path / "prefix"
    env = env_with(d, HOME=str(home))
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    p = run("dash", rel / "uninstall.sh", "--all", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stderr
    assert (elsewhere / "keep").read_text() == "keep"  # the link went, not what it points at
    assert not os.path.lexists(home / "Library" / "Logs" / "vzcaps")


# ---- a write that fails, and an interrupted run: no temporary file stays, nothing half-placed ----

def failing_cat(where, name, action):
    """A cat that, for the file NAME, runs ACTION (shell) instead of copying it."""
    (where / "cat").write_text(f'#!/bin/sh\ncase "$1" in */{name}) {action} ;; esac\nexec /bin/cat "$@"\n')
    (where / "cat").chmod(0o755)


def test_a_failed_copy_places_nothing_and_leaves_no_temporary_file(rel, tmp_path):
    d = standins(tmp_path / "standins")
    failing_cat(d, "vzcaps.1", "echo 'cat: write error: No space left on device' >&2; exit 1")
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 1 and "cannot write" in p.stderr and "vzcaps.1" in p.stderr and "stopped" in p.stderr
    assert "installed" not in p.stdout
    assert [f for f in tree(prefix) if f != MANIFEST] == []  # no file placed, no temporary file left
    # the directories it made are recorded, so uninstall.sh takes them away again
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 0, p.stderr
    assert os.listdir(prefix) == []


def test_a_failed_copy_under_missing_parents_records_them_too(rel, tmp_path):
    """The directories made above the prefix are in the manifest a failed run leaves, so
    uninstall.sh takes them away too; a run that fails before anything is recorded removes them
    itself."""
    d = standins(tmp_path / "standins")
    failing_cat(d, "vzcaps.1", "echo 'cat: write error: No space left on device' >&2; exit 1")
    top = tmp_path / "top"
    top.mkdir()
    prefix = top / "a" / "b" / "prefix"
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 1 and "stopped" in p.stderr
    assert sum(ln.startswith("parent ") for ln in (prefix / MANIFEST).read_text().splitlines()) == 2
    p = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 0, p.stderr
    assert os.listdir(top) == []
    # the prefix cannot be made (a file named like it is in the way of share/): nothing is left
    (d / "mkdir").write_text('#!/bin/sh\nfor a; do case $a in */prefix) exit 1 ;; esac; done\nexec /bin/mkdir "$@"\n')
    (d / "mkdir").chmod(0o755)
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
    assert p.returncode == 1 and "cannot create" in p.stderr, p.stderr
    assert os.listdir(top) == []


def test_an_interrupted_install_cleans_up(rel, tmp_path):
    import signal
    import time as _time
    d = standins(tmp_path / "standins")
    marker = tmp_path / "copying"
    failing_cat(d, "vzcaps.1", f"touch {shlex.quote(str(marker))}; sleep 30")
    prefix = tmp_path / "prefix"
    proc = subprocess.Popen(["dash", str(rel / "install.sh"), "--prefix", str(prefix)], env=env_with(d),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    for _ in range(600):
        if marker.exists():
            break
        _time.sleep(0.05)
    assert marker.exists()
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "interrupted" in err and "installed" not in out
    assert not [f for f in tree(prefix) if ".vzcaps-install." in f or "install-manifest." in f]
    assert [f for f in tree(prefix) if not f.startswith("share/vzcaps/")] == []


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


# ---- issue 33 item 11: a typo gets a suggestion; --all names the installed config page ----

@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("typo,near", [("--al", "--all"), ("-all", "--all"), ("--prefx", "--prefix"), ("--y", "--yes"),
                                       ("--conf", "--config"), ("--bogus", None), ("extra", None), ("--a\nll", None)])
def test_uninstall_suggests_the_option_meant(shell, typo, near, rel, mac):
    p = run(shell, rel / "uninstall.sh", typo, env=mac)
    assert p.returncode == 2 and "usage: " in p.stderr, p.stderr
    if near:
        assert f'unknown argument "{typo}" (did you mean {near}?)' in p.stderr, p.stderr
    else:
        assert "did you mean" not in p.stderr, p.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_uninstall_all_names_the_installed_config_page(shell, rel, tmp_path):
    prefix = tmp_path / "prefix"
    env = user_env(tmp_path)
    (tmp_path / "home").mkdir(exist_ok=True)
    assert run(shell, rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    page = prefix / "share" / "doc" / "vzcaps" / "config.md"
    assert page.read_text() == (ROOT / "docs" / "config.md").read_text()  # the page it names is that one, installed
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=env)
    assert p.returncode == 0, p.stderr
    # issue 45: it pointed at the installed page it had just removed; now at the release archive's
    assert not page.exists() and (rel / "share" / "doc" / "vzcaps" / "config.md").is_file()
    assert p.stdout.endswith("no config files (looked where the library looks: the config page, "
                             "share/doc/vzcaps/config.md in the release archive)\n"), p.stdout
    assert "docs/config.md" not in p.stdout + p.stderr and str(page) not in p.stdout
    # a page still there (an install of it that stayed): that one is named
    (page.parent).mkdir(parents=True, exist_ok=True)
    page.write_text("the page\n")
    p = run(shell, rel / "uninstall.sh", "--prefix", str(prefix), "--all", env=env)
    assert f"the config page, installed as {page}, also in the release archive)" in p.stdout, p.stdout


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


def test_uninstall_all_removes_only_the_logs_vzcaps_made(rel, tmp_path):
    """issue 39 row 4: --all (without --yes) deleted the user's own files in ~/Library/Logs/vzcaps
    (notes, evidence). Now only the logs of vzcaps's agents and the library's stats logs go; the
    rest is kept and named, and the directory with it."""
    home = tmp_path / "home"
    d = standins(tmp_path / "standins", launchctl=True)
    env = env_with(d, HOME=str(home))
    launchd_plist(home, "com.me.llama-server", "/bin/echo", "hi")
    logs = home / "Library" / "Logs" / "vzcaps"
    logs.mkdir(parents=True, exist_ok=True)
    record = ('{"v":1,"time":1796000000,"pid":42,"program":"llama-server","path":"/opt/homebrew/bin/llama-server",'
              '"event":"hooked","class":"AGXG14GDevice","family":1008,"reason":""}\n')
    stock = '{"v":1,"time":1796000001,"pid":43,"program":"a\\"b","path":"","event":"left_stock","class":"","family":0,"reason":"no host chip"}\n'
    made = {"com.me.llama-server.err.log": "error\n", "com.me.llama-server.out.log": "",
            "stats.jsonl": record + stock + '{"v":1,"time":17960', "stats.jsonl.1": record}
    mine = {"notes.txt": "what I saw\n", "evidence.jsonl": record + "my own line\n", "other.err.log": "not an agent of vzcaps\n",
            "empty.log": "", ".hidden": "mine\n"}
    for name, text in {**made, **mine}.items():
        (logs / name).write_text(text)
    (logs / "dir").mkdir()
    (logs / "link.log").symlink_to(tmp_path / "nowhere")
    prefix = tmp_path / "prefix"
    assert run("dash", rel / "install.sh", "--prefix", str(prefix), env=env).returncode == 0
    p = run("dash", rel / "uninstall.sh", "--all", "--prefix", str(prefix), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(os.listdir(logs)) == sorted([*mine, "dir", "link.log"])
    for name, text in mine.items():
        assert (logs / name).read_text() == text
        assert f"kept {shlex.quote(str(logs / name))}: not a log vzcaps made" in p.stdout, p.stdout
    for name in made:
        assert f"removed {shlex.quote(str(logs / name))}" in p.stdout
    assert f"kept {shlex.quote(str(logs))}: not empty" in p.stdout


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


# ---- issue 45 item 2: an install killed anywhere leaves nothing an uninstall does not remove ----

def test_an_install_killed_while_copying_is_removed_by_uninstall(rel, tmp_path):
    """issue 45: install.sh killed (SIGKILL: no trap runs) after it made its directories and
    temporary copies, before its manifest: uninstall.sh removed nothing; a rerun completed and the
    later uninstall said "removed 33 files" and left the directories and the stale copies."""
    d = standins(tmp_path / "standins")
    failing_cat(d, "vzcaps.1", "kill -KILL $PPID; exit 1")  # the copy of the man page: install.sh dies
    top = tmp_path / "top"
    top.mkdir()
    prefix = top / "usr" / "local"
    for rerun in (False, True):
        p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
        assert p.returncode == -9, p.stdout + p.stderr
        assert prefix.is_dir()
        if rerun:
            p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(standins(tmp_path / "plain")))
            assert p.returncode == 0, p.stderr
        u = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=env_with(d))
        assert u.returncode == 0, u.stdout + u.stderr
        assert os.listdir(top) == [], (rerun, tree(top), u.stdout)
        if not rerun:  # what it says: no "already gone" of files that were never placed
            assert u.stdout == (f"removed 0 files from {prefix} and what an install stopped part way had made (its "
                                "temporary copies, its directories)\n"), u.stdout
        u = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=env_with(d))
        assert u.returncode == 1 and "no install manifest" in u.stderr, u.stdout + u.stderr


def test_an_install_killed_at_every_step_then_run_again_leaves_nothing_behind(rel, tmp_path):
    """install.sh killed (SIGKILL) at each point between two of its writes (INSTALL_SH_STOP_AT):
    the journal outside share/vzcaps, the directory above the prefix, the prefix, share/vzcaps,
    the manifest, the other directories, the temporary copies, the renames; then run again to its
    end, then uninstall.sh: exit 0, nothing left (a kill then uninstall.sh alone: the provisioning
    test of every step, tests/test_fleet_recipes.py)."""
    d = standins(tmp_path / "standins")
    top = tmp_path / "top"
    top.mkdir()
    prefix = top / "usr" / "local"
    n = 0
    while True:
        n += 1
        assert n < 40, "install.sh never finished"
        p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d, INSTALL_SH_STOP_AT=str(n)))
        if p.returncode == -9:
            q = run("dash", rel / "install.sh", "--prefix", str(prefix), env=env_with(d))
            assert q.returncode == 0 and "installed " in q.stdout, (n, q.stdout + q.stderr)
            assert not [f for f in tree(top) if ".vzcaps-install" in f or "install-manifest." in f], (n, tree(top))
        u = run("dash", rel / "uninstall.sh", "--prefix", str(prefix), env=env_with(d))
        assert u.returncode == 0 and not u.stderr and "kept" not in u.stdout, (n, u.stdout + u.stderr)
        assert os.listdir(top) == [], (n, tree(top))
        if p.returncode == 0:
            break
        assert p.returncode == -9, (n, p.stdout + p.stderr)
    assert n > 12, n


def test_a_file_at_a_temporary_copys_name_that_no_record_names_is_left_alone(rel, mac, tmp_path):
    """hostile: install.sh's temporary copies have fixed names (.vzcaps-install.NAME, recorded in
    its journal before they are made); a file of someone else's at such a name, which no record
    names, is never removed or written: nothing is installed, and it is named."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / ".vzcaps-install.vzcaps").write_text("mine\n")
    before = snapshot(prefix)
    p = run("dash", rel / "install.sh", "--prefix", str(prefix), env=mac)
    assert p.returncode == 1 and f"{prefix}/bin/.vzcaps-install.vzcaps: exists and is not a temporary copy" in p.stderr, p.stderr
    assert snapshot(prefix) == before
