"""vzcaps launchd: the program path as given (links not resolved), the label's length, the
marker by which --list, --remove and --install recognise their own plists, --list on a temporary
HOME, and plists written only through safewrite."""
import os
import plistlib
import subprocess

from conftest import BUILD, clean_env

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
