"""install.sh's manifest, the record of what it made: only what install.sh made is replaced or
removed (row 11), and a write that fails, an interrupted run or an install killed at any step
(issue 45) leaves no temporary file, nothing half-placed and nothing an uninstall does not
remove. On a release made from stand-in binaries (install_release.py), run by dash and bash."""
import hashlib
import os
import shlex
import subprocess

import pytest

from install_release import INSTALLED, MANIFEST, SHELLS, env_with, run, snapshot, standins, tree
from install_release import archive, mac, rel  # noqa: F401  (fixtures)


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
    test of every step, tests/test_fleet_undo.py)."""
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
