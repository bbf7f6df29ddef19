"""vzcaps launchd: the program path as given (links not resolved), the label's length, the
marker by which --list, --remove and --install recognise their own plists, --list on a temporary
HOME, and plists written only through safewrite."""
import os
import plistlib
import subprocess

from conftest import BUILD, LINUX_ONLY, clean_env, need_tool

VZ = str(BUILD / "vzcaps")


def launchd(home, *args, cwd=None, env_extra=None, timeout=10):
    env = clean_env(HOME=str(home), **(env_extra or {}))
    return subprocess.run([VZ, "launchd", *args], env=env, capture_output=True, text=True, cwd=cwd, timeout=timeout)


def homebrew(tmp_path):
    """A Homebrew-like tree: bin/tool -> ../Cellar/tool/1.2.3/bin/tool, and opt/tool -> ../Cellar/tool/1.2.3."""
    cellar = tmp_path / "brew" / "Cellar" / "tool" / "1.2.3" / "bin"
    cellar.mkdir(parents=True)
    real = cellar / "tool"
    real.write_text("#!/bin/sh\nexit 0\n")
    real.chmod(0o755)
    (tmp_path / "brew" / "bin").mkdir()
    (tmp_path / "brew" / "bin" / "tool").symlink_to("../Cellar/tool/1.2.3/bin/tool")
    (tmp_path / "brew" / "opt").mkdir()
    (tmp_path / "brew" / "opt" / "tool").symlink_to("../Cellar/tool/1.2.3")
    return tmp_path / "brew"


def program(p):
    assert p.returncode == 0, p.stderr
    return plistlib.loads(p.stdout.encode())["ProgramArguments"]


def test_program_path_is_written_as_given_without_resolving_links(tmp_path):
    # regression: /opt/homebrew/bin/ollama became .../Cellar/ollama/X.Y.Z/bin/ollama, broken at the next upgrade
    brew = homebrew(tmp_path)
    assert program(launchd(tmp_path, "--label", "x", "--family", "1007", "--", str(brew / "bin" / "tool"), "serve")) == \
        [str(brew / "bin" / "tool"), "serve"]
    assert program(launchd(tmp_path, "--label", "x", "--family", "1007", "--", str(brew / "opt" / "tool" / "bin" / "tool"))) == \
        [str(brew / "opt" / "tool" / "bin" / "tool")]
    # found on PATH: the PATH entry as it is
    assert program(launchd(tmp_path, "--label", "x", "--family", "1007", "--", "tool",
                           env_extra={"PATH": f"{brew / 'bin'}:/usr/bin:/bin"})) == [str(brew / "bin" / "tool")]
    # relative: made absolute against the current directory, still not resolved
    assert program(launchd(tmp_path, "--label", "x", "--family", "1007", "--", "./bin/tool", cwd=brew)) == \
        [str(brew / "bin" / "tool")]
    assert program(launchd(tmp_path, "--label", "x", "--family", "1007", "--", "bin/tool", cwd=brew)) == \
        [str(brew / "bin" / "tool")]
    # the issue's own example: /bin/echo stays /bin/echo (on Debian /bin is a link to usr/bin)
    assert program(launchd(tmp_path, "--label", "x", "--family", "1007", "--", "/bin/echo", "hi")) == ["/bin/echo", "hi"]


def test_config_path_is_absolute_but_not_resolved(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "v.conf").write_text("[default]\napple_family_max = 1007\n")
    (tmp_path / "conf-link").symlink_to("real")
    p = launchd(tmp_path, "--label", "x", "--", "/bin/true", cwd=tmp_path, env_extra={"VZCAPS_CONFIG": "conf-link/v.conf"})
    assert p.returncode == 0, p.stderr
    assert plistlib.loads(p.stdout.encode())["EnvironmentVariables"]["VZCAPS_CONFIG"] == f"{tmp_path}/conf-link/v.conf"


def test_a_long_label_is_refused_for_its_length(tmp_path):
    # regression: a 300-letter label was refused as "must be letters, digits, ..."
    p = launchd(tmp_path, "--label", "a" * 300, "--", "/bin/true")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines()[0] == \
        "vzcaps launchd: label is 300 bytes long: at most 199 (it names LABEL.plist and the job's log files)"
    assert launchd(tmp_path, "--label", "a" * 199, "--family", "1007", "--", "/bin/true").returncode == 0


def test_plist_carries_the_marker(tmp_path):
    p = launchd(tmp_path, "--label", "com.example.x", "--family", "1007", "--", "/bin/true")
    assert p.returncode == 0 and p.stdout.splitlines()[2] == "<!-- written by vzcaps launchd -->"


def install(home, label, *cmd):
    return launchd(home, "--label", label, "--family", "1007", "--install", "--", *cmd)


def test_list_shows_the_agents_vzcaps_installed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    p = launchd(home, "--list")
    assert p.returncode == 0 and p.stdout == "" and "no LaunchAgent written by vzcaps" in p.stderr
    assert install(home, "com.example.b", "/bin/true", "two words").returncode == 0
    assert install(home, "com.example.a", "/bin/echo", "hi").returncode == 0
    agents = home / "Library" / "LaunchAgents"
    # not ours: a hand-written plist, a link to one of ours, a FIFO, a directory
    (agents / "com.apple.other.plist").write_text("<plist><dict><key>Label</key><string>com.apple.other</string></dict></plist>")
    (agents / "com.example.link.plist").symlink_to(agents / "com.example.a.plist")
    os.mkfifo(agents / "com.example.fifo.plist")
    (agents / "com.example.dir.plist").mkdir()
    # an older vzcaps plist, from before the marker: recognised by the library and the log directory
    legacy = (agents / "com.example.a.plist").read_text().replace("<!-- written by vzcaps launchd -->\n", "")
    legacy = legacy.replace("com.example.a", "com.example.old")
    (agents / "com.example.old.plist").write_text(legacy)
    p = launchd(home, "--list", timeout=20)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"com.example.a\t{agents}/com.example.a.plist\t/bin/echo",
                                     f"com.example.b\t{agents}/com.example.b.plist\t/bin/true",
                                     f"com.example.old\t{agents}/com.example.old.plist\t/bin/echo"]
    assert launchd(home, "--list", "--label", "x").returncode == 2


def test_remove_deletes_only_what_vzcaps_wrote(tmp_path):
    agents = tmp_path / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    theirs = agents / "com.example.t.plist"
    theirs.write_text("<plist>someone else's</plist>")
    p = launchd(tmp_path, "--label", "com.example.t", "--remove")
    assert p.returncode == 1 and "was not written by vzcaps launchd (--force removes it); not removed" in p.stderr
    assert theirs.exists() and "removed" not in p.stdout
    p = launchd(tmp_path, "--label", "com.example.t", "--remove", "--force")
    assert p.returncode == 0 and not theirs.exists()


def test_a_plist_that_merely_mentions_the_marker_is_not_taken_for_ours(tmp_path):
    """regression (issue 25, rule 4): the marker counted anywhere in the first 4096 bytes, so a
    job of the user's that quotes it (in a comment, a string) was removed by --remove and
    replaced by --install without --force. It counts only as the line after the DOCTYPE."""
    agents = tmp_path / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    m = "<!-- written by vzcaps launchd -->"
    head = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
            '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n')
    theirs = {
        "com.example.s": f"{head}<plist version=\"1.0\">\n<dict><key>Label</key><string>{m}</string></dict></plist>\n",
        "com.example.c": f"{head}<plist version=\"1.0\">\n{m}\n<dict><key>Label</key><string>x</string></dict></plist>\n",
        "com.example.n": f"{m}\n{head}<plist version=\"1.0\"><dict/></plist>\n",
    }
    for label, text in theirs.items():
        (agents / f"{label}.plist").write_text(text)
        p = launchd(tmp_path, "--label", label, "--remove")
        assert p.returncode == 1 and "was not written by vzcaps launchd (--force removes it)" in p.stderr, (label, p.stderr)
        p = launchd(tmp_path, "--label", label, "--install", "--", "/bin/true")
        assert p.returncode != 0, (label, p.stdout)
        assert (agents / f"{label}.plist").read_text() == text, label
    p = launchd(tmp_path, "--list")
    assert p.stdout == "", p.stdout
    # where it stands, it is ours
    assert launchd(tmp_path, "--label", "com.example.ours", "--install", "--", "/bin/true").returncode == 0
    assert launchd(tmp_path, "--label", "com.example.ours", "--remove").returncode == 0


def test_install_never_writes_through_a_link(tmp_path):
    agents = tmp_path / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (agents / "com.example.x.plist").symlink_to(victim)
    p = launchd(tmp_path, "--label", "com.example.x", "--family", "1007", "--install", "--force", "--", "/bin/true")
    assert p.returncode == 1 and "is a symbolic link" in p.stderr and "wrote" not in p.stdout
    assert victim.read_text() == "precious\n"
    # a plist vzcaps wrote for another job is still replaced only with --force
    (agents / "com.example.x.plist").unlink()
    assert install(tmp_path, "com.example.x", "/bin/true").returncode == 0
    p = install(tmp_path, "com.example.x", "/bin/echo")
    assert p.returncode == 1 and "exists and differs" in p.stderr


def test_install_respects_the_umask(tmp_path):
    env = clean_env(HOME=str(tmp_path))
    p = subprocess.run([VZ, "launchd", "--label", "com.example.x", "--family", "1007", "--install", "--", "/bin/true"],
                       env=env, capture_output=True, text=True, preexec_fn=lambda: os.umask(0o077))
    assert p.returncode == 0, p.stderr
    assert os.stat(tmp_path / "Library" / "LaunchAgents" / "com.example.x.plist").st_mode & 0o777 == 0o600


def test_a_relative_home_is_refused(tmp_path):
    """regression: HOME=rel wrote rel/Library/LaunchAgents/LABEL.plist with relative log paths,
    which launchd takes from /, exit 0."""
    for args in ((), ("--install",)):
        p = launchd("rel", "--label", "com.example.x", "--family", "1007", *args, "--", "/bin/true", cwd=tmp_path)
        assert p.returncode == 1 and p.stdout == "", (args, p.stdout)
        assert p.stderr == "vzcaps launchd: HOME rel is not an absolute path\n", p.stderr
    assert list(tmp_path.iterdir()) == []


def test_list_json_is_valid_json_with_every_agent(tmp_path):
    import json
    p = launchd(tmp_path, "--list", "--json")  # no LaunchAgents directory yet: an empty list, still JSON
    assert p.returncode == 0 and json.loads(p.stdout) == {"dir": f"{tmp_path}/Library/LaunchAgents", "agents": []}
    odd = 'a"b\\c\tä'
    for label in ("one.job", "two.job"):
        assert launchd(tmp_path, "--label", label, "--family", "1008", "--install", "--", "/bin/echo", odd).returncode == 0
    (tmp_path / "Library" / "LaunchAgents" / "users.plist").write_text("<plist/>")  # not ours: not listed
    p = launchd(tmp_path, "--list", "--json")
    assert p.returncode == 0, p.stderr
    agents = json.loads(p.stdout)["agents"]
    assert [a["label"] for a in agents] == ["one.job", "two.job"]
    assert agents[0] == {"label": "one.job", "plist": f"{tmp_path}/Library/LaunchAgents/one.job.plist", "program": "/bin/echo"}
    assert launchd(tmp_path, "--json").returncode == 2  # --json goes with --list


def test_install_says_the_domain_on_another_system(tmp_path):
    # on Linux nothing runs; the commands for the Mac name gui/UID and the headless alternative
    p = launchd(tmp_path, "--label", "x.y", "--family", "1008", "--install", "--", "/bin/true")
    assert p.returncode == 0, p.stderr
    assert f"the domain is user/{os.getuid()} instead" in p.stdout
    assert f"launchctl bootstrap gui/{os.getuid()} " in p.stdout


@LINUX_ONLY  # gdb on the Linux test build
def test_sigterm_while_installing_leaves_no_temporary(tmp_path):
    # regression (issue 25 row 7): SIGTERM during launchd --install left .vzcaps-tmp.PID.N behind
    gdb = need_tool("gdb")
    home = tmp_path / "home"
    (home / "Library" / "LaunchAgents").mkdir(parents=True)
    p = subprocess.run([gdb, "-q", "-batch", "-ex", "set breakpoint pending on", "-ex", "break linkat", "-ex", "run",
                        "-ex", "handle SIGTERM nostop noprint pass", "-ex", "signal SIGTERM", "--args", str(BUILD / "vzcaps"),
                        "launchd", "--label", "a.b", "--install", "--", "/bin/true"],
                       env=clean_env(HOME=str(home)), capture_output=True, text=True, timeout=120)
    assert "Breakpoint 1," in p.stdout and "terminated with signal SIGTERM" in p.stdout, p.stdout + p.stderr
    assert sorted(f.name for f in (home / "Library" / "LaunchAgents").iterdir()) == []


def test_list_reads_the_plist_as_a_property_list(tmp_path):
    """--list read Label and ProgramArguments by substring: a comment quoting a key was taken for it."""
    home = tmp_path / "home"
    home.mkdir()
    assert install(home, "com.example.c", "/bin/echo", "hi").returncode == 0
    plist = home / "Library" / "LaunchAgents" / "com.example.c.plist"
    text = plist.read_text().replace("<dict>", "<dict>\n<!-- <key>Label</key><string>decoy</string> "
                                     "<key>ProgramArguments</key><array><string>/decoy</string></array> -->", 1)
    plist.write_text(text)
    p = launchd(home, "--list", timeout=20)
    assert p.returncode == 0 and p.stdout == f"com.example.c\t{plist}\t/bin/echo\n", (p.stdout, p.stderr)
