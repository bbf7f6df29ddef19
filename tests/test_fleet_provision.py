"""docs/fleet.md's image recipe, run in the simulated Mac (issue 26 item 7):
packaging/provision-image.sh into a temporary prefix and home from a release archive made by
scripts/release (fleetrecipes.py), under dash and bash in POSIX mode: what it bakes in (install,
config, shims, PATH, runner, agent), a second run, what it refuses to replace, usage, the Packer
snippet against the archive, and make try-provision. Its undo: test_fleet_undo.py."""
import os
import re
import stat
import subprocess
import tarfile

import pytest

from conftest import BUILD, ROOT, parse_probe
from fleetrecipes import (CHIP, NOT_ON_A_MAC, SHELLS, archive, files_of, image, login_path, mac,  # noqa: F401  (fixtures)
                          provision, provision_into)

pytestmark = NOT_ON_A_MAC


# ---- the image: packaging/provision-image.sh from a release archive ----

@pytest.mark.parametrize("shell", SHELLS)
def test_provisioning_bakes_install_config_shims_path_runner_and_agent(mac, tmp_path, archive, shell):
    env, sim = mac
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / ".path").write_text(f"/opt/homebrew/bin:{sim}/real:/usr/bin:/bin\n")
    p, home = provision(env, tmp_path, shell, archive, "--runner-dir", str(runner),
                        server=["com.example.llama", "probe", "--port", "8080"])
    assert p.returncode == 0, p.stdout + p.stderr
    prefix = tmp_path / "usr" / "local"
    shims = prefix / "libexec" / "vzcaps" / "shims"
    # installed by the release's install.sh, with its manifest
    assert (prefix / "share" / "vzcaps" / "install-manifest").is_file() and os.access(prefix / "bin" / "vzcaps", os.X_OK)
    # the system config: the release's example, with per-program sections, trusted
    conf = prefix / "etc" / "vzcaps.conf"
    assert conf.read_text() == (ROOT / "packaging" / "vzcaps.conf.example").read_text()
    assert conf.stat().st_mode & 0o022 == 0 and re.findall(r"^\[(\w+)\]$", conf.read_text(), re.M) == ["llama", "ollama", "python"]
    assert sorted(n for n in os.listdir(shims) if not n.startswith(".")) == ["llama-server", "probe"]  # and their records
    # every shell the user starts has the shims first
    for rc in (".zshenv", ".zprofile", ".profile"):
        assert login_path(env, home, rc).split(":")[0] == str(shims), rc
    assert not (home / ".bash_profile").exists()  # made, it would hide .profile from bash
    # the runner service's .path: the shims first, the rest kept, once
    assert (runner / ".path").read_text() == f"{shims}:/opt/homebrew/bin:{sim}/real:/usr/bin:/bin\n"
    # the LaunchAgent names the real program (resolved without the shims), not a shim
    plist = (home / "Library" / "LaunchAgents" / "com.example.llama.plist").read_text()
    assert f"<string>{sim}/real/probe</string>" in plist and str(shims) not in plist
    assert "<key>KeepAlive</key>" in plist
    # a job of that user: probe through the shim, with the system config, unlocked
    job = dict(env, HOME=str(home), PATH=login_path(env, home, ".profile"), VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP=CHIP)
    conf.write_text(conf.read_text() + "[probe]\nmatch = probe\napple_family_max = auto\n")
    q = subprocess.run(["sh", "-c", "probe"], env=job, capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    assert parse_probe(q.stdout)[0]["families"][1008] == 1


def test_provisioning_twice_changes_nothing_and_keeps_the_users_lines(mac, tmp_path, archive):
    env, _ = mac
    home = tmp_path / "Users" / "runner"
    home.mkdir(parents=True)
    (home / ".zshenv").write_text("export EDITOR=vi\n")
    (home / ".bash_profile").write_text("# mine\n")
    p, _ = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stderr
    first = {f: (home / f).read_text() for f in (".zshenv", ".zprofile", ".profile", ".bash_profile")}
    assert first[".zshenv"].startswith("export EDITOR=vi\n# >>> vzcaps shims")
    assert first[".bash_profile"].startswith("# mine\n# >>> vzcaps shims")
    p, _ = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stderr
    assert {f: (home / f).read_text() for f in first} == first
    assert "PATH:" not in p.stdout and "already this config" in p.stdout


@pytest.mark.parametrize("case", ["config-differs", "rc-is-link", "path-is-link", "rc-is-fifo", "path-is-fifo", "bad-config",
                                  "unsafe-dir"])
def test_provisioning_refuses_what_it_did_not_make(mac, tmp_path, archive, case):
    env, _ = mac
    etc = tmp_path / "usr" / "local" / "etc"
    etc.mkdir(parents=True)
    home = tmp_path / "Users" / "runner"
    home.mkdir(parents=True)
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    extra = []
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    if case == "config-differs":
        (etc / "vzcaps.conf").write_text("[mine]\nmatch = x\n")
        needle = "exists and differs"
    elif case == "rc-is-link":
        (home / ".zshenv").symlink_to(victim)
        needle = "is a symbolic link"
    elif case == "path-is-link":
        (runner / ".path").symlink_to(victim)
        extra = ["--runner-dir", str(runner)]
        needle = "is a symbolic link"
    elif case == "rc-is-fifo":  # read, it would hang the provisioning
        os.mkfifo(home / ".zshenv")
        needle = "is not a regular file"
    elif case == "path-is-fifo":
        os.mkfifo(runner / ".path")
        extra = ["--runner-dir", str(runner)]
        needle = "is not a regular file"
    elif case == "bad-config":
        bad = tmp_path / "bad.conf"
        bad.write_text("[llama]\nmatch = llama-server\napple_family_mx = auto\n")
        bad.chmod(0o644)
        extra = ["--config", str(bad)]
        needle = f"vzcaps check refused {bad} for probe (above): no config written"
    else:
        extra = ["--shim-dir", str(tmp_path / "my shims")]
        needle = "cannot carry plainly"
    p, _ = provision(env, tmp_path, "dash", archive, *extra)
    assert p.returncode != 0 and needle in p.stderr, p.stdout + p.stderr
    assert victim.read_text() == "keep\n"
    if case == "bad-config":
        assert not (etc / "vzcaps.conf").exists() and "apple_family_mx" in p.stderr and "vzcaps-provision." not in p.stderr
    if case.endswith("fifo"):
        assert stat.S_ISFIFO(os.lstat(home / ".zshenv" if case == "rc-is-fifo" else runner / ".path").st_mode)
    if case == "config-differs":  # issue 45: it stopped at the config, with the image half-provisioned
        assert (etc / "vzcaps.conf").read_text() == "[mine]\nmatch = x\n"
        assert p.stderr.endswith(": not replaced (pass --force): nothing installed or written\n"), p.stderr
        assert sorted(os.listdir(tmp_path / "usr" / "local")) == ["etc"] and not p.stdout, p.stdout
        p, _ = provision(env, tmp_path, "dash", archive, "--force")
        assert p.returncode == 0 and "replaced" in p.stdout, p.stderr


def test_provisioning_usage_errors(mac, tmp_path, archive):
    env, _ = mac
    script = str(ROOT / "packaging" / "provision-image.sh")
    for args, needle in ((["--user", "x"], "--archive is required"), (["--archive", str(archive)], "--user is required"),
                         (["--archive", str(archive), "--user", "root", "--", "x"], "needs --server"),
                         (["--archive", str(archive), "--user", "root", "--bogus"], "unknown argument")):
        p = subprocess.run(["dash", script, *args], env=env, capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr, (args, p.stderr)
    p = subprocess.run(["dash", script, "--archive", str(tmp_path / "none.tar.gz"), "--user", "root"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 1 and "is not a file" in p.stderr


def test_the_packer_snippet_matches_the_archive(archive):
    """docs/fleet.md's Packer provisioners, read as HCL: the file provisioner copies the release
    archive; the shell provisioner unpacks it where it was copied and runs the provision-image.sh
    the archive holds (checked against the archive's own layout), with --archive that copy."""
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    hcl = re.search(r"```hcl\n(.*?)```", fleet, re.S).group(1)
    blocks = re.findall(r'provisioner "(\w+)" \{(.*?)\n\}', hcl, re.S)
    assert [k for k, _ in blocks] == ["file", "shell"]
    f = dict(re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', blocks[0][1], re.M))
    with tarfile.open(archive) as t:
        names = t.getnames()
    top = names[0].split("/")[0]
    assert re.fullmatch(r"vzcaps-[\d.]+-macos\.tar\.gz", f["source"]) and f["source"] == top + ".tar.gz"
    inline = re.findall(r'"((?:[^"\\]|\\.)*)",?\s*$', blocks[1][1].split("inline", 1)[1], re.M)
    dest = f["destination"]
    words = [w for cmd in inline for w in cmd.split()]
    assert inline[0].split() == ["tar", "-xzf", dest, "-C", os.path.dirname(dest)], inline
    script = next(w for w in words if w.endswith("provision-image.sh"))
    assert script == f"{os.path.dirname(dest)}/{top}/provision-image.sh"
    assert f"{top}/provision-image.sh" in names and f"{top}/share/vzcaps/provision-image.sh" in names
    assert words[words.index("--archive") + 1] == dest
    with tarfile.open(archive) as t:
        shipped = t.extractfile(f"{top}/provision-image.sh").read()
    assert shipped == (ROOT / "packaging" / "provision-image.sh").read_bytes()


@pytest.mark.parametrize("programs", ["probe --remove", "probe --list", "-h probe"])
def test_a_program_name_that_reads_as_an_option_is_refused_before_anything_is_written(mac, tmp_path, archive, programs):
    # hostile: the names went to `vzcaps shims --dir D $names` unguarded: "probe --remove" removed
    # the shim just made (its record left naming nothing), "-h" printed shims's help, and the
    # failure read "cannot record .../--remove (a full disk?)"
    env, _ = mac
    p, home = provision(env, tmp_path, "dash", archive)
    assert p.returncode == 0, p.stderr
    prefix = tmp_path / "usr" / "local"
    before = files_of(tmp_path)
    args = ["--archive", str(archive), "--user", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip(),
            "--home", str(home), "--prefix", str(prefix), "--etc", str(prefix / "etc"), "--programs", programs]
    q = subprocess.run(["dash", str(ROOT / "packaging" / "provision-image.sh"), *args], env=env, capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    bad = next(w for w in programs.split() if w.startswith("-"))
    assert q.returncode == 2, q.stdout + q.stderr
    assert q.stderr.splitlines()[0] == (f"provision-image.sh: --programs: \"{bad}\" starts with '-': "
                                        "a program name, not an option"), q.stderr
    assert files_of(tmp_path) == before  # nothing installed, written or removed


# ---- issue 39: a journal, prefixes undone independently, the agent, a second run ----

def stamps(root):
    """Every entry under root with its inode and modification time: a rewrite shows."""
    return {os.path.relpath(os.path.join(d, n), root): (os.lstat(os.path.join(d, n)).st_ino, os.lstat(os.path.join(d, n)).st_mtime_ns)
            for d, dirs, files in os.walk(root) for n in dirs + files}


def test_a_second_provisioning_run_changes_nothing_and_says_so(mac, tmp_path, archive):
    # issue 39 row 19: a second run rewrote every installed file and said "installed 33 files" again
    env, sim = mac
    home, runner = image(tmp_path, sim)
    prefix = tmp_path / "usr" / "local"
    server = ["--server", "com.example.probe", "--", "probe"]
    p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner), *server)
    assert p.returncode == 0 and "already provisioned" not in p.stdout, p.stdout + p.stderr
    first = stamps(tmp_path)
    p = provision_into(env, tmp_path, archive, prefix, "--runner-dir", str(runner), *server)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "provision-image.sh: already provisioned: nothing changed" in p.stdout, p.stdout
    assert "installed " not in p.stdout and "already installed" in p.stdout and "PATH:" not in p.stdout
    assert stamps(tmp_path) == first, sorted(set(stamps(tmp_path).items()) ^ set(first.items()))[:6]


# ---- make try-provision: the documented Linux route ----

def test_make_try_provision_is_the_documented_linux_route(tmp_path):
    """issue 39 row 19: docs/fleet.md's way to try provisioning on Linux, scripts/try-provision
    (make try-provision), into a directory of its own; the undo it prints puts every file back,
    and a second run over the first starts again from a clean directory."""
    fleet = (ROOT / "docs" / "fleet.md").read_text()
    assert "make try-provision" in fleet and "build/try-provision" in fleet
    assert "try-provision:" in (ROOT / "Makefile").read_text()
    try_dir = tmp_path / "try"
    env = dict(os.environ, TRY_DIR=str(try_dir), B=str(BUILD))
    for _ in range(2):
        p = subprocess.run(["sh", "scripts/try-provision"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
    home, prefix = try_dir / "home", try_dir / "usr" / "local"
    assert f"PATH={prefix}/libexec/vzcaps/shims:$PATH" in (home / ".zshenv").read_text()
    undo_line = next(line.strip() for line in p.stdout.splitlines() if "--undo" in line)
    u = subprocess.run(undo_line.split("#")[0].split(), env=env, capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert os.listdir(home) == [] and (try_dir / "actions-runner" / ".path").read_text() == "/usr/bin:/bin\n"
    assert not prefix.exists()
    (tmp_path / "mine").mkdir()
    p = subprocess.run(["sh", "scripts/try-provision"], cwd=ROOT, env=dict(env, TRY_DIR=str(tmp_path / "mine")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "is not a directory this script made: left alone" in p.stderr


def test_make_try_provision_from_a_path_with_a_space(tmp_path):
    """issue 45: from a clone whose path has a space (which the README supports), make
    try-provision failed (exit 2: the shim directory cannot go into a start-up file plainly),
    without naming TRY_DIR, and left a half-made build/try-provision. Now it tries in
    ~/.cache/vzcaps/try-provision (and says so), whose undo puts every file back; a TRY_DIR with a
    space is refused in one line naming it, before anything is made."""
    clone = tmp_path / "my clone"
    clone.symlink_to(ROOT)  # the shell's pwd is the path as reached, with its space
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TRY_DIR", "XDG_CACHE_HOME")}
    env.update(PWD=str(clone), HOME=str(home), B="build")
    bad = tmp_path / "a b"
    p = subprocess.run(["sh", "scripts/try-provision"], cwd=clone, env=dict(env, TRY_DIR=str(bad)), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and f"TRY_DIR {bad} has a character" in p.stderr, p.stderr
    assert not bad.exists() and os.listdir(home) == []
    p = subprocess.run(["sh", "scripts/try-provision"], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    try_dir = home / ".cache" / "vzcaps" / "try-provision"
    assert p.stdout.startswith(f"try-provision: this checkout's path has a character a PATH entry in a start-up file cannot "
                               f"carry plainly (a blank?): trying in {try_dir} (TRY_DIR for another)\n"), p.stdout
    assert not (ROOT / "build" / "try-provision").exists() or (ROOT / "build" / "try-provision" / ".made-by-try-provision").exists()
    undo_line = next(line.strip() for line in p.stdout.splitlines() if "--undo" in line)
    u = subprocess.run(undo_line.split("#")[0].split(), env=env, capture_output=True, text=True, timeout=300)
    assert u.returncode == 0 and not u.stderr, u.stdout + u.stderr
    assert os.listdir(try_dir / "home") == [] and not (try_dir / "usr" / "local").exists()
