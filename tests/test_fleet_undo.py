"""The undo of docs/fleet.md's image recipe, in the simulated Mac (issue 33 item 5, issue 39):
provision-image.sh --undo and uninstall.sh --all leave the files as they were and keep what a
user made or changed; provisioning stopped or killed at every step (its journal) is undone; two
prefixes are undone independently; the agent and its logs go; a second user is told in one line.
Provisioned from the release archive of fleetrecipes.py, under dash and bash in POSIX mode."""
import os
import pathlib
import shlex
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import LINUX_ONLY, ROOT
from macstandins import UNAME, write
from fleetrecipes import (NOT_ON_A_MAC, SHELLS, archive, files_of, image, login_path, mac,  # noqa: F401  (fixtures)
                          provision, provision_into, undo, undo_prefix)

pytestmark = NOT_ON_A_MAC


# ---- the undo (issue 33 item 5): provision-image.sh --undo and uninstall.sh --all ----

@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("how", ["undo", "installed-undo", "uninstall-all"])
def test_provision_then_undo_leaves_the_files_as_they_were(mac, tmp_path, archive, shell, how):
    env, sim = mac
    home, runner = image(tmp_path, sim)
    before = files_of(tmp_path)
    p, _ = provision(env, tmp_path, shell, archive, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    prefix = tmp_path / "usr" / "local"
    shims = prefix / "libexec" / "vzcaps" / "shims"
    assert (prefix / "share" / "vzcaps" / "provision-image.sh").is_file()  # installed beside the uninstaller
    assert (prefix / "share" / "vzcaps" / "uninstall.sh").is_file()
    # every write recorded: shim links, start-up files, .path, the config, the directories made
    recs = prefix / "share" / "vzcaps" / "provision"
    kinds = sorted((r.read_text().splitlines()[2], r.read_text().splitlines()[3]) for r in recs.glob("entry.*")
                   if not r.name.endswith(".orig"))
    paths = {k: sorted(pp[5:] for kk, pp in kinds if kk == k) for k in {kk for kk, _ in kinds}}
    assert paths["kind shim"] == [str(shims / "llama-server"), str(shims / "probe")]
    assert paths["kind rc"] == sorted(str(home / f) for f in (".zshenv", ".zprofile", ".profile", ".bash_profile"))
    assert paths["kind path"] == [str(runner / ".path")] and paths["kind conf"] == [str(prefix / "etc" / "vzcaps.conf")]
    assert str(shims) in paths["kind dir"] and str(prefix / "etc") in paths["kind dir"]
    assert files_of(tmp_path) != before
    # a second run changes nothing the undo must know about
    p, _ = provision(env, tmp_path, shell, archive, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    u = undo(env, shell, tmp_path, how)
    assert u.returncode == 0, u.stdout + u.stderr
    assert "restored" in u.stdout and "removed the shim" in u.stdout
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:10]


@pytest.mark.parametrize("how", ["undo", "uninstall-all"])
def test_the_undo_keeps_what_a_user_made_or_changed(mac, tmp_path, archive, how):
    env, sim = mac
    home, runner = image(tmp_path, sim)
    etc = tmp_path / "usr" / "local" / "etc"
    # the user's own config, the same bytes as the example: never written, never removed
    etc.mkdir(parents=True)
    (etc / "vzcaps.conf").write_text((ROOT / "packaging" / "vzcaps.conf.example").read_text())
    (etc / "vzcaps.conf").chmod(0o644)
    p, _ = provision(env, tmp_path, "dash", archive, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "already this config" in p.stdout
    shims = tmp_path / "usr" / "local" / "libexec" / "vzcaps" / "shims"
    # after provisioning: the user edits inside the block of .zshenv, appends a line to .profile,
    # removes .zprofile, makes .bash_profile a link, puts a file of their own at a shim's name
    # and rewrites .path
    z = (home / ".zshenv").read_text().replace("export PATH ;; esac", "export PATH ;; esac # mine")
    (home / ".zshenv").write_text(z)
    (home / ".profile").write_text((home / ".profile").read_text() + "export MINE=1\n")
    (home / ".zprofile").unlink()
    (home / ".bash_profile").unlink()
    (home / ".bash_profile").symlink_to(tmp_path / "victim")
    os.unlink(shims / "llama-server")
    (shims / "llama-server").write_text("#!/bin/sh\necho mine\n")
    (runner / ".path").write_text(f"{shims}:/usr/bin:/bin:/mine\n")
    u = undo(env, "dash", tmp_path, how)
    assert u.returncode == 0, u.stdout + u.stderr
    out = u.stdout
    assert (etc / "vzcaps.conf").read_text() == (ROOT / "packaging" / "vzcaps.conf.example").read_text()
    assert (home / ".zshenv").read_text() == z and "the block between the vzcaps markers was edited" in out
    assert (home / ".profile").read_text() == "export MINE=1\n"  # only provisioning's block taken out
    assert not (home / ".zprofile").exists() and f"{home}/.zprofile: already gone" in out
    assert os.readlink(home / ".bash_profile") == str(tmp_path / "victim") and (tmp_path / "victim").read_text() == "keep\n"
    assert (shims / "llama-server").read_text() == "#!/bin/sh\necho mine\n" and f"kept {shims}/llama-server" in out
    assert not (shims / "probe").exists()
    assert (runner / ".path").read_text() == "/usr/bin:/bin:/mine\n"


def test_undo_with_nothing_provisioned_and_usage(mac, tmp_path):
    env, _ = mac
    script = str(ROOT / "packaging" / "provision-image.sh")
    p = subprocess.run(["dash", script, "--undo", "--prefix", str(tmp_path / "none")], env=env, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == f"nothing to undo under {tmp_path / 'none'}: nothing provisioned or installed there\n", p.stdout + p.stderr
    p = subprocess.run(["dash", script, "--undo", "--user", "x"], env=env, capture_output=True, text=True)
    assert p.returncode == 2 and "--undo takes only --prefix" in p.stderr
    recs = tmp_path / "p" / "share" / "vzcaps"
    recs.mkdir(parents=True)
    (recs / "provision").symlink_to(tmp_path)
    p = subprocess.run(["dash", script, "--undo", "--prefix", str(tmp_path / "p")], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "is a link or not a directory: nothing undone" in p.stderr


def test_undo_puts_back_a_config_that_force_replaced(mac, tmp_path, archive):
    env, sim = mac
    etc = tmp_path / "usr" / "local" / "etc"
    etc.mkdir(parents=True)
    (etc / "vzcaps.conf").write_text("[mine]\nmatch = x\n")
    (etc / "vzcaps.conf").chmod(0o640)
    before = files_of(tmp_path)
    p, _ = provision(env, tmp_path, "dash", archive, "--force")
    assert p.returncode == 0 and "replaced" in p.stdout, p.stdout + p.stderr
    u = undo(env, "dash", tmp_path, "undo")
    assert u.returncode == 0, u.stdout + u.stderr
    assert f"restored {etc}/vzcaps.conf as it was before" in u.stdout
    home = tmp_path / "Users" / "runner"
    assert files_of(tmp_path) == dict(before, **{os.path.relpath(home, tmp_path): ("dir",),
                                                 os.path.relpath(home.parent, tmp_path): ("dir",)})
    assert (etc / "vzcaps.conf").read_text() == "[mine]\nmatch = x\n" and stat.S_IMODE((etc / "vzcaps.conf").stat().st_mode) == 0o640


def test_uninstall_without_all_on_a_provisioned_image_removes_nothing(mac, tmp_path, archive):
    env, sim = mac
    p, _ = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stdout + p.stderr
    made = files_of(tmp_path)
    prefix = tmp_path / "usr" / "local"
    u = subprocess.run(["dash", str(prefix / "share" / "vzcaps" / "uninstall.sh")], env=env, capture_output=True, text=True)
    assert u.returncode == 1 and "was provisioned by provision-image.sh" in u.stderr and "--all" in u.stderr, u.stderr
    assert files_of(tmp_path) == made


# ---- issue 39: a journal, prefixes undone independently, the agent, a second run ----

def test_provisioning_stopped_at_every_step_is_undone(mac, tmp_path, archive):
    """issue 39 row 5: killed (SIGKILL: no trap runs) between a start-up file's write and its record,
    --undo exited 1, kept the PATH block and asked to be run again; issue 45: killed between a saved
    original's rename (entry.N.orig) and its record, --undo left the original, so the records
    directory was not empty: exit 1, and uninstall.sh refused for ever. Stopped at each point
    between two writes in turn (PROVISION_IMAGE_STOP_AT; the first: install.sh done, nothing
    provisioned yet), then undone: exit 0, every file as it was; a second undo has nothing to do."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    args = ["--runner-dir", str(runner), "--server", "com.example.probe", "--", "probe"]
    n = 0
    while True:
        n += 1
        assert n < 60, "provisioning never finished"
        p = provision_into(env, tmp_path, archive, prefix, *args, stop_at=n)
        u = undo_prefix(env, prefix)
        assert u.returncode == 0 and not u.stderr, (n, u.stdout + u.stderr)
        assert "again" not in u.stdout and "kept" not in u.stdout, (n, u.stdout)
        after = files_of(tmp_path)
        assert after == before, (n, sorted(set(after.items()) ^ set(before.items()))[:6])
        u = undo_prefix(env, prefix)  # a second undo: nothing to do, and it says so
        assert u.returncode == 0 and u.stdout == f"nothing to undo under {prefix}: nothing provisioned or installed there\n", (n, u.stdout)
        if p.returncode == 0:
            break
        assert p.returncode == -9, (n, p.stdout + p.stderr)
    # every directory, the config, the saved originals, the shims, four start-up files, .path and the agent
    assert n > 20, n


def test_provisioning_killed_at_every_step_of_its_install_is_undone(mac, tmp_path, archive):
    """issue 45: the run killed at moments spread over it (wall clock) found, by chance, undos that
    left the interrupted install's files (docs, .vzcaps-install.* copies, the manifest). Now the
    release's install.sh is killed at each point between two of its writes (INSTALL_SH_STOP_AT);
    the run stops, saying in one line what is left and the command that removes it; that command:
    exit 0, every file as it was; run again, it has nothing to undo."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    n = 0
    while True:
        n += 1
        assert n < 40, "install.sh never finished"
        p = provision_into(dict(env, INSTALL_SH_STOP_AT=str(n)), tmp_path, archive, prefix, "--runner-dir", str(runner))
        if p.returncode == 0:
            break
        assert p.returncode == 1, (n, p.stdout + p.stderr)
        last = p.stderr.splitlines()[-1]
        assert last.startswith("provision-image.sh: stopped part way: install.sh was killed; what it made goes with: sh "), (n, p.stderr)
        u = subprocess.run(shlex.split(last.split(" goes with: ", 1)[1]), env=env, capture_output=True, text=True, timeout=300)
        assert u.returncode == 0 and not u.stderr and "kept" not in u.stdout, (n, u.stdout + u.stderr)
        after = files_of(tmp_path)
        assert after == before, (n, sorted(set(after.items()) ^ set(before.items()))[:6])
        u = undo_prefix(env, prefix)
        assert u.returncode == 0 and u.stdout == f"nothing to undo under {prefix}: nothing provisioned or installed there\n", (n, u.stdout + u.stderr)
    assert n > 12, n  # every step of install.sh (tests/dist/test_install_manifest.py)
    assert undo_prefix(env, prefix).returncode == 0 and files_of(tmp_path) == before


def test_a_failing_chown_is_undone(mac, tmp_path, archive):
    """As root, a chown that fails after the write (row 5's other case): exit 1, then --undo
    finishes: exit 0, every file as it was. id answers 0 and chown fails (stand-ins)."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    stand = tmp_path.parent / (tmp_path.name + "-standins")
    stand.mkdir()
    write(stand / "chown", "#!/bin/sh\necho \"chown: $2: Operation not permitted\" >&2\nexit 1\n")
    write(stand / "id", "#!/bin/sh\n[ \"$*\" = -u ] && { echo 0; exit 0; }\nexec @ID@ \"$@\"\n", ID=shutil.which("id"))
    p = provision_into(dict(env, PATH=f"{stand}:{env['PATH']}"), tmp_path, archive, prefix, "--runner-dir", str(runner))
    assert p.returncode == 1 and "cannot give" in p.stderr, p.stdout + p.stderr
    # issue 45: a run that stops early says in one line what is left and the command that removes it
    last = p.stderr.splitlines()[-1]
    assert last.startswith(f"provision-image.sh: stopped part way: what this run installed and wrote is left in {prefix} (recorded); sh "), p.stderr
    u = subprocess.run(shlex.split(last.split("; ", 1)[1].rsplit(" removes it", 1)[0]), env=env, capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert files_of(tmp_path) == before


@pytest.mark.parametrize("order", ["a-then-b", "b-then-a"])
def test_two_prefixes_are_undone_independently(mac, tmp_path, archive, order):
    # issue 39 row 6: provision A, provision B, undo A, undo B (each exit 0) left A's PATH block
    env, sim = mac
    home, runner = image(tmp_path, sim)
    before = files_of(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    for prefix in (a, b):
        p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner))
        assert p.returncode == 0, p.stdout + p.stderr
    zshenv = (home / ".zshenv").read_text()
    assert f"{a}/libexec/vzcaps/shims" in zshenv and f"{b}/libexec/vzcaps/shims" in zshenv
    first, second = (a, b) if order == "a-then-b" else (b, a)
    u = undo_prefix(env, first)
    assert u.returncode == 0, u.stdout + u.stderr
    for rc in (".zshenv", ".zprofile", ".profile", ".bash_profile"):
        text = (home / rc).read_text()
        assert f"{first}/libexec" not in text and f"{second}/libexec/vzcaps/shims" in text, (rc, text)
        assert login_path(env, home, rc).split(":")[0] == f"{second}/libexec/vzcaps/shims", rc
    assert (runner / ".path").read_text().split(":")[0] == f"{second}/libexec/vzcaps/shims"
    u = undo_prefix(env, second)
    assert u.returncode == 0, u.stdout + u.stderr
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]


def test_a_file_without_a_final_newline_is_restored_without_one(mac, tmp_path, archive):
    """issue 39 row 8: the undo kept the newline provisioning added to a file that had none. Here
    the files are edited since (a line put first), so the undo takes out only provisioning's part."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    (runner / ".path").write_text("/usr/bin:/bin")  # none at its end either
    prefix = tmp_path / "usr" / "local"
    p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner))
    assert p.returncode == 0, p.stdout + p.stderr
    assert login_path(env, home, ".zshenv").split(":")[0] == f"{prefix}/libexec/vzcaps/shims"
    assert (runner / ".path").read_bytes() == f"{prefix}/libexec/vzcaps/shims:/usr/bin:/bin".encode()
    for f in (home / ".zshenv", home / ".profile"):
        f.write_bytes(b"# mine\n" + f.read_bytes())
    (runner / ".path").write_bytes((runner / ".path").read_bytes() + b"\n# mine")
    u = undo_prefix(env, prefix)
    assert u.returncode == 0, u.stdout + u.stderr
    assert u.stdout.count("took out what provision-image.sh wrote") == 3, u.stdout
    assert (home / ".zshenv").read_bytes() == b"# mine\nexport EDITOR=vi"
    assert stat.S_IMODE((home / ".zshenv").stat().st_mode) == 0o600  # its mode kept throughout
    assert (runner / ".path").read_bytes() == b"/usr/bin:/bin\n# mine"
    assert (home / ".profile").read_bytes() == b"# mine\n"


@pytest.mark.parametrize("how", ["undo", "uninstall-all"])
def test_server_then_undo_leaves_no_agent_log_or_tool(mac, tmp_path, archive, how):
    """issue 39 row 7: as root, the undo left the KeepAlive agent (naming the removed library) and
    ~/Library/Logs/vzcaps, and removed uninstall.sh, the tool named for removing the agent."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    before = files_of(tmp_path)
    prefix = tmp_path / "usr" / "local"
    p = provision_into(env, tmp_path, archive, prefix, "--server", "com.example.probe", "--", "probe", "--port", "1")
    assert p.returncode == 0, p.stdout + p.stderr
    logs = home / "Library" / "Logs" / "vzcaps"
    assert (home / "Library" / "LaunchAgents" / "com.example.probe.plist").is_file() and logs.is_dir()
    (logs / "com.example.probe.err.log").write_text("the job's own log\n")  # as launchd would make it
    (logs / "com.example.probe.out.log").write_text("")
    u = undo(env, "dash", tmp_path, how)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert "removed the LaunchAgent com.example.probe" in u.stdout
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to provision as root and undo as a second user (nobody)")
def test_undo_by_a_user_who_did_not_provision_says_so_in_one_line(mac, archive):
    """issue 39 row 7, the other order: provisioned as root, --undo (and uninstall.sh --all) as
    another user printed about 70 "Permission denied" lines and a raw cd error, then exit 1. Now
    one line naming whose it is, nothing changed, and root's --undo afterwards still finishes."""
    env, sim = mac
    top = tempfile.mkdtemp(prefix="vzcaps-second-user.")  # a directory the second user can reach
    try:
        os.chmod(top, 0o755)
        tmp = pathlib.Path(top)
        home, runner = image(tmp, sim)
        prefix = tmp / "usr" / "local"
        before = files_of(tmp)
        p = provision_into(env, tmp, archive, prefix, "--server", "com.example.probe", "--", "probe")
        assert p.returncode == 0, p.stdout + p.stderr
        made = files_of(tmp)
        plain = dict(PATH="/usr/bin:/bin", HOME="/nonexistent")
        for cmd in (["sh", str(prefix / "share" / "vzcaps" / "provision-image.sh"), "--undo"],
                    ["sh", str(prefix / "share" / "vzcaps" / "uninstall.sh"), "--all"]):
            q = subprocess.run(cmd, env=plain, capture_output=True, text=True, timeout=120, preexec_fn=as_nobody,
                               cwd="/", stdin=subprocess.DEVNULL)
            assert q.returncode == 1, (cmd, q.stdout, q.stderr)
            assert "Permission denied" not in q.stderr and "can't cd" not in q.stderr and "cd:" not in q.stderr, q.stderr
            assert "is not yours to change (provisioned as root)" in q.stderr.splitlines()[0], q.stderr
            assert len(q.stderr.splitlines()) <= 2 and not q.stdout, (q.stdout, q.stderr)
            assert files_of(tmp) == made
        u = undo_prefix(env, prefix)
        assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
        assert files_of(tmp) == before
    finally:
        shutil.rmtree(top)


@LINUX_ONLY  # setpriv plays sudo
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to provision as a second user (nobody) and undo as root")
def test_provisioned_as_the_user_then_undone_as_root(archive):
    """issue 39 row 7, as the user: nobody provisions its own prefix and home with --server; root's
    --undo removes the agent as nobody (sudo -u, a stand-in over setpriv), its logs and the
    directories made for them: exit 0, no error, every file as it was."""
    top = tempfile.mkdtemp(prefix="vzcaps-as-user.")
    try:
        tmp = pathlib.Path(top)
        stand = tmp / "standins"
        stand.mkdir()
        write(stand / "uname", UNAME)
        write(stand / "sudo", '#!/bin/sh\n[ "$1" = -u ] || exit 1\nu=$2\nshift 2\n'
                              'exec setpriv --reuid "$u" --regid "$(id -g "$u")" --clear-groups "$@"\n')
        shutil.copy(archive, tmp / "release.tar.gz")
        # the script from where nobody can read it (a checkout under /root, mode 0700, cannot be)
        shutil.copy(ROOT / "packaging" / "provision-image.sh", tmp / "provision-image.sh")
        home = tmp / "home"
        home.mkdir()
        (home / ".zshenv").write_text("export EDITOR=vi")
        for d, _, files in os.walk(top):
            for n in [d, *(os.path.join(d, f) for f in files)]:
                os.chown(n, 65534, 65534)
        os.chmod(top, 0o755)
        before = files_of(tmp)
        env = dict(PATH=f"{stand}:/usr/bin:/bin", HOME=str(home))
        prefix = tmp / "prefix"
        p = subprocess.run(["sh", str(tmp / "provision-image.sh"), "--archive", str(tmp / "release.tar.gz"),
                            "--user", "nobody", "--home", str(home), "--prefix", str(prefix), "--etc", str(prefix / "etc"),
                            "--programs", "probe", "--server", "com.example.sleep", "--", "sleep", "1000"],
                           env=env, capture_output=True, text=True, timeout=300, preexec_fn=as_nobody, cwd="/",
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stdout + p.stderr
        plist = home / "Library" / "LaunchAgents" / "com.example.sleep.plist"
        assert plist.is_file() and os.stat(plist).st_uid == 65534
        (home / "Library" / "Logs" / "vzcaps" / "com.example.sleep.err.log").write_text("launchd's\n")
        u = subprocess.run(["sh", str(prefix / "share" / "vzcaps" / "provision-image.sh"), "--undo"], env=env,
                           capture_output=True, text=True, timeout=300, cwd="/", stdin=subprocess.DEVNULL)
        assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
        assert "removed the LaunchAgent com.example.sleep" in u.stdout
        after = files_of(tmp)
        assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]
    finally:
        shutil.rmtree(top)


def test_an_undo_after_a_kill_inside_vzcaps_shims_removes_its_temporary_link(mac, tmp_path, archive):
    """issue 45: the whole run killed while vzcaps shims made a shim (between its record and its
    rename) leaves the temporary link .NAME.vzcaps-shim-new.PID.N and the record naming it, and no
    shim at NAME: the undo said "already gone", left both, so the shim directory was not empty and
    the undo exited 1. The undo's vzcaps shims --remove removes them (a later run's sweep)."""
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    p = provision_into(env, tmp_path, archive, prefix, "--programs", "probe")  # the one shim: no other --remove sweeps
    assert p.returncode == 0, p.stdout + p.stderr
    shims = prefix / "libexec" / "vzcaps" / "shims"
    os.rename(shims / "probe", shims / ".probe.vzcaps-shim-new.4242.0")  # as the kill left it: its record names it
    u = undo_prefix(env, prefix)
    assert u.returncode == 0 and not u.stderr and "kept" not in u.stdout, u.stdout + u.stderr
    assert f"{shims}/probe: already gone" in u.stdout
    after = files_of(tmp_path)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:6]
