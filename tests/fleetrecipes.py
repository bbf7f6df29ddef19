"""What the tests of docs/fleet.md's recipes share (test_fleet_action.py, test_fleet_provision.py,
test_fleet_undo.py): the simulated Mac whose PATH also holds the rig's probe (tests/actionrunner.py,
test_simulated_mac's stand-ins: uname, sw_vers, sysctl and a stock Mac's tools), the shells a
Mac's /bin/sh may be, a release archive made by scripts/release from the Linux build, and
packaging/provision-image.sh run into a temporary prefix and home, and undone."""
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tarfile

import pytest

from conftest import BUILD, ROOT
from actionrunner import simulated_mac


# Each file's pytestmark: the simulated Mac is Linux's; a Mac runs the action itself.
NOT_ON_A_MAC = pytest.mark.skipif(sys.platform == "darwin", reason="simulates a Mac on Linux; on a Mac the workflow runs the action itself")
SHELLS = ["dash", "bash --posix"]
CHIP = "Apple M2 Pro"  # Apple8: the probe's unlocked answers claim up to 1008


@pytest.fixture(scope="module")
def mac(tmp_path_factory):
    """(environment, directory) of a simulated Mac whose PATH also holds the rig's probe (the
    real program a shim finds after itself)."""
    for name in ("vzcaps", "libvzcaps.so", "probe", "libfakemetal.so"):
        assert (BUILD / name).exists(), f"build/{name} missing: run make"
    return simulated_mac(tmp_path_factory.mktemp("fleetmac"), BUILD)


def failed(ran):
    name, p = ran[-1]
    before = "".join(f"step {n!r}: {q.stdout[-600:]}{q.stderr[-600:]}\n" for n, q in ran[-3:-1])
    return f"{before}step {name!r} exit {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"


MADE = []  # the session's release archive, once made


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A release archive made by scripts/release from the Linux build (its library under the Mac
    name, and under its own), once a session: each file of the fleet tests provisions from it."""
    if MADE:
        return MADE[0]
    fake = tmp_path_factory.mktemp("dist")
    shutil.copy(BUILD / "vzcaps", fake / "vzcaps")
    shutil.copy(BUILD / "libvzcaps.so", fake / "libvzcaps.dylib")
    out = tmp_path_factory.mktemp("release")
    p = subprocess.run(["sh", "scripts/release"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, DIST_DIR=str(fake), RELEASE_OUT=str(out), SOURCE_DATE_EPOCH="1700000000"))
    assert p.returncode == 0, p.stderr
    made = next(out.glob("vzcaps-*-macos.tar.gz"))
    # the rig's command looks for its library as libvzcaps.so: the release also holds it under
    # that name, with its SHA256SUMS line (install.sh checks it like every other file)
    stage = tmp_path_factory.mktemp("stage")
    with tarfile.open(made) as t:
        t.extractall(stage)
    top = next(stage.iterdir())
    shutil.copy(BUILD / "libvzcaps.so", top / "lib" / "libvzcaps.so")
    digest = hashlib.sha256((top / "lib" / "libvzcaps.so").read_bytes()).hexdigest()
    with open(top / "SHA256SUMS", "a") as f:
        f.write(f"{digest}  lib/libvzcaps.so\n")
    rig = out / made.name.replace("-macos", "-macos-rig")
    with tarfile.open(rig, "w:gz") as t:
        t.add(top, arcname=top.name)
    MADE.append(rig)
    return MADE[0]


def provision(env, tmp, shell, archive, *extra, server=None):
    home = tmp / "Users" / "runner"
    home.mkdir(parents=True, exist_ok=True)
    args = ["--archive", str(archive), "--user", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
            "--home", str(home), "--prefix", str(tmp / "usr" / "local"), "--etc", str(tmp / "usr" / "local" / "etc"),
            "--programs", "probe llama-server", *extra]
    if server:
        args += ["--server", server[0], "--", *server[1:]]
    return subprocess.run([*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL), home


def login_path(env, home, rc):
    """PATH after sourcing one start-up file the way a shell does."""
    p = subprocess.run(["sh", "-c", '. "$1"; printf %s "$PATH"', "sh", str(home / rc)], env=dict(env, HOME=str(home)),
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def files_of(root):
    """Every entry under root: a file's mode and bytes, a link's target, a directory."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            else:
                out[rel] = (stat.S_IMODE(os.lstat(p).st_mode), open(p, "rb").read())
    return out


def image(tmp_path, sim):
    """A simulated Mac's user with files of their own at the places provisioning writes."""
    home = tmp_path / "Users" / "runner"
    home.mkdir(parents=True)
    (home / ".zshenv").write_text("export EDITOR=vi")  # no newline at its end
    (home / ".zshenv").chmod(0o600)
    (home / ".bash_profile").write_text("# mine\n. ~/.profile\n")
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / ".path").write_text(f"/opt/homebrew/bin:{sim}/real:/usr/bin:/bin\nsecond line\n")
    (tmp_path / "victim").write_text("keep\n")
    return home, runner


def undo(env, shell, tmp_path, how):
    prefix = tmp_path / "usr" / "local"
    if how == "undo":
        cmd = [*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), "--undo", "--prefix", str(prefix)]
    elif how == "installed-undo":  # the copy installed beside the uninstaller: its own PREFIX, no --prefix
        cmd = [*shell.split(), str(prefix / "share" / "vzcaps" / "provision-image.sh"), "--undo"]
    else:  # the installed uninstaller, as a user of the image runs it
        cmd = [*shell.split(), str(prefix / "share" / "vzcaps" / "uninstall.sh"), "--all"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def provision_into(env, tmp, archive, prefix, *extra, shell="dash", stop_at=None):
    home = tmp / "Users" / "runner"
    home.mkdir(parents=True, exist_ok=True)
    args = ["--archive", str(archive), "--user", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
            "--home", str(home), "--prefix", str(prefix), "--etc", str(prefix / "etc"), "--programs", "probe llama-server", *extra]
    e = dict(env, PROVISION_IMAGE_STOP_AT=str(stop_at)) if stop_at else env
    return subprocess.run([*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), *args], env=e,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def undo_prefix(env, prefix, shell="dash"):
    return subprocess.run([*shell.split(), str(ROOT / "packaging" / "provision-image.sh"), "--undo", "--prefix", str(prefix)],
                          env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
