"""Where the config file is looked for (vzcaps_config_search): XDG_CONFIG_HOME, ~/.config, then
Homebrew's etc on Apple silicon and /usr/local/etc; the library and `vzcaps check` agree, and
check names the file it used, or the one it refused, on its "config file" line."""
import json
import os
import shlex
import subprocess

from conftest import BUILD, clean_env, parse_probe, private_mounts_ran

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (LD_PRELOAD, unshare)

VZ = str(BUILD / "vzcaps")


def write_conf(path, family, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[default]\napple_family_max = {family}\n")
    path.chmod(mode)
    return path


def check(env, *args):
    return subprocess.run([VZ, "check", "--bare", "--chip", "Apple M2 Pro", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def config_line(stdout):
    return next(line for line in stdout.splitlines() if line.startswith("config file"))


def test_xdg_config_home_comes_before_dot_config(tmp_path):
    home = tmp_path / "home"
    write_conf(home / ".config" / "vzcaps" / "vzcaps.conf", 1007)
    xdg = write_conf(tmp_path / "xdg" / "vzcaps" / "vzcaps.conf", 1008)
    env = clean_env(HOME=str(home), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    p = check(env)
    assert p.returncode == 0, p.stderr
    assert config_line(p.stdout) == f"config file    {xdg} [default]"
    data = json.loads(check(env, "--json").stdout)
    assert data["config_file"] == str(xdg) and data["apple_family_max"] == 1008 and data["config_error"] is None
    assert data["config_search"][:1] == [str(xdg)]
    # a relative XDG_CONFIG_HOME is ignored (the XDG rule): ~/.config
    env["XDG_CONFIG_HOME"] = "relative/dir"
    assert config_line(check(env).stdout) == f"config file    {home}/.config/vzcaps/vzcaps.conf [default]"


def test_library_honours_xdg_config_home(tmp_path):
    xdg = write_conf(tmp_path / "xdg" / "vzcaps" / "vzcaps.conf", "auto")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", XDG_CONFIG_HOME=str(tmp_path / "xdg"), LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    p = subprocess.run([str(BUILD / "probe")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert parse_probe(p.stdout)[0]["families"][1008] == 1  # Apple8: the M2's own family, from the XDG file
    assert f"profile [default] of {xdg}" in p.stderr


def test_untrusted_file_is_named_on_the_config_line(tmp_path):
    conf = write_conf(tmp_path / ".config" / "vzcaps" / "vzcaps.conf", "auto", mode=0o664)
    p = check(clean_env(HOME=str(tmp_path)))
    assert p.returncode == 1
    # regression: the line said "(none found)" while the why line named this file
    assert config_line(p.stdout) == f"config file    {conf} (refused: not trusted: writable by others (mode 0664): chmod go-w it)"
    data = json.loads(check(clean_env(HOME=str(tmp_path)), "--json").stdout)
    assert data["config_file"] == str(conf) and data["config_error"].startswith("not trusted")
    doctor = json.loads(subprocess.run([VZ, "doctor", "--json"], env=clean_env(HOME=str(tmp_path)), capture_output=True,
                                       text=True, timeout=60).stdout)
    assert doctor["config_file"] == str(conf) and doctor["config_error"].startswith("not trusted")


def test_a_refused_file_is_named_by_where_the_user_named_it(tmp_path):
    # issue 39 row 20: check --config FILE said "(named by VZCAPS_CONFIG)", which the user never set
    conf = write_conf(tmp_path / "c.conf", "auto", mode=0o666)
    by_option = check(clean_env(), "--config", str(conf))
    assert by_option.returncode == 1
    assert f"{conf}: not trusted: writable by others (mode 0666): chmod go-w it (named by --config)" in by_option.stderr
    assert "VZCAPS_CONFIG" not in by_option.stdout + by_option.stderr
    by_variable = check(clean_env(VZCAPS_CONFIG=str(conf)))
    assert "chmod go-w it (named by VZCAPS_CONFIG)" in by_variable.stderr


def test_none_found_lists_where_it_looked(tmp_path):
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "x"))
    line = config_line(check(env).stdout)
    assert line.startswith(f"config file    (none found; looked at {tmp_path}/x/vzcaps/vzcaps.conf, ")
    if not os.path.exists("/opt/homebrew/etc/vzcaps.conf") and not os.path.exists("/usr/local/etc/vzcaps.conf"):
        assert line.endswith("/opt/homebrew/etc/vzcaps.conf, /usr/local/etc/vzcaps.conf)")


def test_homebrew_etc_comes_before_usr_local_etc(tmp_path):
    """The real system paths, in a private mount namespace: tmpfs over /opt and /usr/local/etc
    (nothing outside the namespace sees them), then the library and check both read
    /opt/homebrew/etc/vzcaps.conf first and fall back to /usr/local/etc/vzcaps.conf."""
    env = clean_env(HOME=str(tmp_path), VZCAPS_HOST_CHIP="Apple M2")
    q = shlex.quote
    probe = f"LD_PRELOAD={q(str(BUILD / 'libvzcaps.so'))} {q(str(BUILD / 'probe'))}"
    script = f"""set -e
mount -t tmpfs vzcaps-test /opt
mount -t tmpfs vzcaps-test /usr/local/etc
mkdir -p /opt/homebrew/etc
printf '[default]\\napple_family_max = 1007\\n' >/opt/homebrew/etc/vzcaps.conf
printf '[default]\\napple_family_max = 1006\\n' >/usr/local/etc/vzcaps.conf
chmod 644 /opt/homebrew/etc/vzcaps.conf /usr/local/etc/vzcaps.conf
{q(VZ)} check --bare --json
{probe} 2>&1 | grep -E '^vzcaps:|^family 1007 '
rm /opt/homebrew/etc/vzcaps.conf
echo ---
{q(VZ)} check --bare --json
{probe} 2>&1 | grep -E '^vzcaps:|^family 1007 '
"""
    # root needs no user namespace (and gets none in a chroot, where the kernel refuses one)
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    p = private_mounts_ran(subprocess.run([*unshare, "sh", "-c", script], env=env, capture_output=True, text=True, timeout=60))
    assert p.returncode == 0, p.stderr
    first, second = p.stdout.split("---\n")
    brew, local = json.loads(first.splitlines()[0]), json.loads(second.splitlines()[0])
    assert brew["config_file"] == "/opt/homebrew/etc/vzcaps.conf" and brew["apple_family_max"] == 1007
    assert local["config_file"] == "/usr/local/etc/vzcaps.conf" and local["apple_family_max"] == 1006
    assert "profile [default] of /opt/homebrew/etc/vzcaps.conf" in first and "family 1007 1" in first
    assert "profile [default] of /usr/local/etc/vzcaps.conf" in second and "family 1007 0" in second


def test_hostile_xdg_config_home(tmp_path):
    """A FIFO where the file should be never blocks (check, the library and the completions'
    section list); a control byte in the path is shown escaped; a path too long is refused."""
    fifo = tmp_path / "xdg" / "vzcaps" / "vzcaps.conf"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    p = check(env)
    assert p.returncode == 1 and config_line(p.stdout) == f"config file    {fifo} (refused: not a regular file)"
    assert subprocess.run([VZ, "__profiles"], env=env, capture_output=True, text=True, timeout=10).returncode == 1
    lib = dict(env, LD_PRELOAD=str(BUILD / "libvzcaps.so"), VZCAPS_HOST_CHIP="Apple M2")
    p = subprocess.run([str(BUILD / "probe")], env=lib, capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and f"{fifo}: not a regular file" in p.stderr
    odd = tmp_path / "a\x1bb"
    write_conf(odd / "vzcaps" / "vzcaps.conf", 1007)
    p = check(clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(odd)))
    assert "\x1b" not in p.stdout and config_line(p.stdout) == f"config file    {tmp_path}/a\\x1bb/vzcaps/vzcaps.conf [default]"
    p = check(clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME="/" + "x" * 1100))
    assert p.returncode == 1 and "XDG_CONFIG_HOME /xxx" in p.stdout and "too long for the user config file path" in p.stdout
    assert config_line(p.stdout) == "config file    (not looked for: the configuration was refused first)"
