"""Typos where a user types them (issue 27, item 4): config keys, VZCAPS_* names, chip and
family names get the same did-you-mean as commands, from the one suggestion function in the
core (src/core/suggest.c), in the command and in the injected library; messages name the option
the user gave; `vzcaps list` and `vzcaps uninstall` point somewhere useful."""
import os
import shutil
import subprocess

from conftest import BUILD, ROOT, clean_env

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (LD_PRELOAD and the rig's probe)

VZ = str(BUILD / "vzcaps")


def vz(*args, env=None, vzcaps=VZ):
    return subprocess.run([vzcaps, *args], env=env or clean_env(), capture_output=True, text=True, timeout=60)


def test_a_config_key_typo_gets_the_key(tmp_path):
    conf = tmp_path / "vzcaps.conf"
    conf.write_text("[llama]\nmatch = llama-server\napple_family_maxx = auto\n")
    conf.chmod(0o600)
    p = vz("check", "--config", str(conf), "--exe", "llama-server", "--chip", "Apple M2")
    assert p.returncode == 1
    assert f"{conf}:3: unknown key apple_family_maxx (did you mean apple_family_max?)" in p.stderr


def test_a_variable_typo_gets_the_variable_in_the_command_and_in_the_library():
    p = vz("check", "--bare", env=clean_env(VZCAPS_APPLE_FAMLY_MAX="auto"))
    assert p.returncode == 1
    assert "unknown variable VZCAPS_APPLE_FAMLY_MAX (did you mean VZCAPS_APPLE_FAMILY_MAX?)" in p.stderr
    # the library computes the same suggestion in its constructor and says it in its one line
    lib = subprocess.run([str(BUILD / "probe")], capture_output=True, text=True, timeout=60,
                         env=clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), VZCAPS_APPLE_FAMLY_MAX="auto"))
    said = [line for line in lib.stderr.splitlines() if line.startswith("vzcaps:")]
    assert len(said) == 1 and "(did you mean VZCAPS_APPLE_FAMILY_MAX?)" in said[0], lib.stderr


def test_a_chip_without_apple_gets_its_brand_and_the_option_is_named():
    p = vz("check", "--exe", "llama-server", "--chip", "M2 Pro")
    assert '"M2 Pro" (from --chip) is not one (did you mean "Apple M2 Pro"?): fix --chip' in p.stdout
    assert "VZCAPS_HOST_CHIP" not in p.stdout.split("why", 1)[1]
    # a typo of a brand, and a generation the table lacks (no suggestion of another one)
    assert '(did you mean "Apple M4 Max"?)' in vz("check", "--exe", "x", "--chip", "Apple M4 Mxa").stdout
    m6 = vz("check", "--exe", "x", "--chip", "Apple M6").stdout
    assert "did you mean" not in m6 and "fix --chip" in m6
    # through the variable the line names the variable
    lib = vz("check", "--bare", env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="m3 max"))
    assert '(did you mean "Apple M3 Max"?): fix VZCAPS_HOST_CHIP' in lib.stdout
    # doctor's pitfall names the option too
    doc = vz("doctor", "--chip", "M2 Pro").stdout
    assert '  ! host chip unknown: --chip "M2 Pro" is not a chip vzcaps knows (did you mean "Apple M2 Pro"?)' in doc.splitlines()


def test_family_names_get_the_family():
    p = vz("run", "--family", "aple8", "--", "true")
    assert p.returncode == 2 and '--family: "aple8" is not auto, off, 0, or an Apple family 1001..1010 (did you mean apple8?)' in p.stderr
    p = vz("check", "--bare", "--chip", "Apple M2",
           env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_EXTRA_FAMILIES="metl3"))
    assert p.returncode == 1 and 'unknown family "metl3" (did you mean Metal3?)' in p.stderr
    assert "did you mean" not in vz("run", "--family", "apple11", "--", "true").stderr  # a number is no typo


def test_run_profile_without_a_config_names_the_option(tmp_path):
    p = vz("run", "--profile", "nosuch", "--", "true")
    assert p.returncode == 125
    assert "--profile is set but no config file was found: create one with a [nosuch] section, or drop --profile" in p.stderr
    assert "VZCAPS_PROFILE" not in p.stderr
    conf = tmp_path / "vzcaps.conf"
    conf.write_text("[llama]\nmatch = llama-server\napple_family_max = auto\n")
    conf.chmod(0o600)
    p = vz("run", "--profile", "lama", "--", "true", env=clean_env(VZCAPS_CONFIG=str(conf)))
    assert "no section [lama] (asked for by the profile; did you mean [llama]?)" in p.stderr


def test_list_points_to_the_commands_that_list():
    p = vz("list")
    assert p.returncode == 2
    want = "launchd --list, or shims --dir DIR --list" if vz("help", "shims").returncode == 0 else "launchd --list"
    assert p.stderr.splitlines()[0] == f'vzcaps: unknown command "list" (did you mean {want}?)'


def test_uninstall_points_to_the_installed_script(tmp_path):
    p = vz("uninstall")
    assert p.returncode == 2 and "uninstall.sh of the release archive" in p.stderr and "make uninstall" in p.stderr
    # an installed layout: PREFIX/bin/vzcaps and the uninstall script the archive installs
    prefix = tmp_path / "pre fix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share" / "vzcaps").mkdir(parents=True)
    shutil.copy(VZ, prefix / "bin" / "vzcaps")
    script = prefix / "share" / "vzcaps" / "uninstall.sh"
    shutil.copy(ROOT / "packaging" / "uninstall.sh", script)
    p = vz("uninstall", vzcaps=str(prefix / "bin" / "vzcaps"))
    assert p.returncode == 2 and f"to remove vzcaps, run {script} " in p.stderr, p.stderr
    # a directory in its place is no script
    os.remove(script)
    script.mkdir()
    assert "uninstall.sh of the release archive" in vz("uninstall", vzcaps=str(prefix / "bin" / "vzcaps")).stderr


def test_a_top_level_option_typo_gets_the_option():
    # regression (issue 33 row 11): `vzcaps --verison` said only 'unknown command "--verison"'
    p = vz("--verison")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines()[0] == 'vzcaps: unknown option "--verison" (did you mean --version?)'
    assert 'unknown option "--hlep" (did you mean --help?)' in vz("--hlep").stderr
    assert "did you mean" not in vz("--frobnicate").stderr
    assert 'unknown command "stauts" (did you mean stats?)' in vz("stauts").stderr


def test_a_family_with_a_leading_zero_gets_the_family():
    # regression (issue 33 row 11): `--family apple08` got no suggestion (its digits "08" were not "8")
    p = vz("run", "--family", "apple08", "--", "true")
    assert p.returncode == 2 and '"apple08" is not auto, off, 0, or an Apple family 1001..1010 (did you mean apple8?)' in p.stderr
    assert "(did you mean apple10?)" in vz("run", "--family", "apple010", "--", "true").stderr
    assert "(did you mean apple8?)" in vz("check", "--family", "Apple08").stderr
    for far in ("apple80", "apple18", "apple011"):  # another number is still no typo
        assert "did you mean" not in vz("run", "--family", far, "--", "true").stderr, far


def test_a_shim_name_that_is_a_typo_of_a_client_is_refused(tmp_path):
    # regression (issue 33 row 11): `vzcaps shims --dir D lama-server` made the shim, exit 0
    d = tmp_path / "shims"
    env = clean_env(PATH="/usr/bin:/bin")
    p = vz("shims", "--dir", str(d), "llama-server", "lama-server", "ollam", env=env)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [
        'vzcaps shims: NAME "lama-server" is not on PATH and is no client vzcaps knows: did you mean llama-server? '
        "(nothing was made)",
        'vzcaps shims: NAME "ollam" is not on PATH and is no client vzcaps knows: did you mean ollama? (nothing was made)']
    assert not d.exists()
    # a program of that name on PATH is what the user meant: made; so is a client not installed yet
    real = tmp_path / "bin"
    real.mkdir()
    (real / "lama-server").symlink_to("/bin/true")
    p = vz("shims", "--dir", str(d), "lama-server", "llama-server", "my-tool", env=clean_env(PATH=f"/usr/bin:/bin:{real}"))
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(d)) == [".lama-server.vzcaps-shim", ".llama-server.vzcaps-shim", ".my-tool.vzcaps-shim",
                                     "lama-server", "llama-server", "my-tool"]
    # removing is not making: --remove of a typo says it is not there
    p = vz("shims", "--dir", str(d), "--remove", "ollam", env=env)
    assert p.returncode == 1 and "No such file or directory" in p.stderr


def test_every_bad_key_of_a_config_file_is_reported(tmp_path):
    # regression (issue 33 row 11): only the first bad key was reported; fixing it showed the next
    conf = tmp_path / "vzcaps.conf"
    conf.write_text("[llama]\nmatch = llama-server\napple_family_maxx = auto\nlog = loud\nbogus = 1\n")
    p = vz("check", "--config", str(conf), "--exe", "llama-server", "--chip", "Apple M2")
    assert p.returncode == 1
    want = (f"{conf}:3: unknown key apple_family_maxx (did you mean apple_family_max?); "
            f"{conf}:4: log: \"loud\" is not quiet, normal or verbose; {conf}:5: unknown key bogus")
    assert want in p.stdout and p.stderr.count("\n") == 1 and want in p.stderr
    lib = subprocess.run([str(BUILD / "probe")], env=clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), VZCAPS_CONFIG=str(conf),
                                                               VZCAPS_HOST_CHIP="Apple M2"), capture_output=True, text=True, timeout=60)
    refused = [line for line in lib.stderr.splitlines() if line.startswith("vzcaps:")]
    assert len(refused) == 1 and want in refused[0], lib.stderr  # the library's one line names them all
