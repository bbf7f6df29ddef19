"""What the tests of the release archive's install.sh and uninstall.sh share (test_install_scripts.py,
test_install_manifest.py, test_uninstall_all.py): a release made by scripts/release from stand-in
binaries (so these run without the cross toolchain), unpacked for each test, the stand-ins a Mac's
PATH would hold (uname, xattr, launchctl), and the shells a Mac's /bin/sh may be."""
import hashlib
import os
import shlex
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


MADE = []  # the session's release archive, once made


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A release made by scripts/release from stand-in binaries, once a session: each file of the
    install tests unpacks the same archive into its own tests' directories."""
    if MADE:
        return MADE[0]
    for f in ("vzcaps.1", "completions/vzcaps.bash", "completions/_vzcaps", "completions/vzcaps.fish"):
        assert (BUILD / f).exists(), f"build/{f} missing: run make"
    fake = tmp_path_factory.mktemp("fakedist")
    (fake / "vzcaps").write_bytes(b"\xcf\xfa\xed\xfe stand-in command\n")
    (fake / "libvzcaps.dylib").write_bytes(b"\xcf\xfa\xed\xfe stand-in library\n")
    out = tmp_path_factory.mktemp("out")
    p = subprocess.run(["sh", "scripts/release"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, DIST_DIR=str(fake), RELEASE_OUT=str(out), SOURCE_DATE_EPOCH="1700000000"))
    assert p.returncode == 0, p.stderr
    MADE.append(out / f"{NAME}.tar.gz")
    return MADE[0]


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


def mark_prepared(prepared, name, ino=None):
    """The record vzcaps prepare leaves beside a copy (src/common/record.c): its device, inode,
    modification time to the nanosecond and, for a file, the SHA-256 of its bytes."""
    st = os.stat(prepared / name)
    digest = hashlib.sha256((prepared / name).read_bytes()).hexdigest() if (prepared / name).is_file() else "-"
    (prepared / f".{name}.vzcaps-prepared").write_text(
        f"vzcaps prepare\ncopy {st.st_dev} {ino or st.st_ino} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d} "
        f"{digest}\nsource /x/{name}\n")
