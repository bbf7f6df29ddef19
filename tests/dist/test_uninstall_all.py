"""uninstall.sh --all: what vzcaps made for the user, with a temporary HOME and a stand-in
launchctl (the copies prepare made, agents, logs, caches, config files only with --yes-config),
and uninstall.sh's suggestion for a mistyped option. On a release made from stand-in binaries
(install_release.py), run by dash and bash."""
import os
import shlex
import stat
import subprocess

import pytest

from conftest import BUILD, ROOT
from install_release import SHELLS, env_with, mark_prepared, run, standins, tree
from install_release import archive, mac, rel  # noqa: F401  (fixtures)


# ---- uninstall.sh --all: what vzcaps made for the user (temporary HOME, stand-in launchctl) ----

def launchd_plist(home, label, *cmd):
    """A LaunchAgent as `vzcaps launchd --install` writes it."""
    env = dict(os.environ, HOME=str(home))
    env.pop("VZCAPS_CONFIG", None)
    p = subprocess.run([str(BUILD / "vzcaps"), "launchd", "--label", label, "--install", "--", *cmd], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return home / "Library" / "LaunchAgents" / f"{label}.plist"


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
