"""vzcaps shims (issue 26 item 1): a directory of links to vzcaps named after client programs.
Started as NAME, vzcaps runs the next NAME on PATH after the directory through `vzcaps run`, so
a shell or a Python subprocess that starts NAME gets the injection and nothing else in the tree
does. Hostile cases: the directory as a link, PATH with empty, relative and repeated entries,
the directory spelled differently, link chains, odd names, files vzcaps did not make."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, clean_env, needs_root, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (LD_PRELOAD, /proc)

VZ = str(BUILD / "vzcaps")
CHIP = "Apple M2 Pro"  # auto: Apple8


def vz(*args, env=None, cwd=None):
    return subprocess.run([VZ, *args], env=env or clean_env(), capture_output=True, text=True, timeout=60, cwd=cwd)


def shim_env(*path, **extra):
    return clean_env(PATH=":".join(str(p) for p in path), VZCAPS_HOST_CHIP=CHIP, **extra)


def real_bin(tmp_path):
    """A directory holding the stand-in Metal client as `probe` (a link to build/probe)."""
    d = tmp_path / "real"
    d.mkdir()
    (d / "probe").symlink_to(BUILD / "probe")
    return d


def make_shims(tmp_path, *names, dirname="shims"):
    d = tmp_path / dirname
    p = vz("shims", "--dir", str(d), *names)
    assert p.returncode == 0, p.stderr
    return d


def families(out):
    runs = [r for r in parse_probe(out) if "families" in r]
    assert len(runs) == 1, out
    return runs[0]["families"]


def test_a_shell_and_a_python_subprocess_get_the_unlocked_answers_and_nothing_else_loads(tmp_path):
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    env = shim_env(shims, real, "/usr/bin", "/bin")
    # through sh: the probe is unlocked (Apple8 on an M2 Pro); sh itself, and env started after it, load nothing
    p = subprocess.run(["sh", "-c", "probe; grep -c libvzcaps /proc/$$/maps; echo ENV; env"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert families(p.stdout)[1008] == 1, p.stderr
    assert "\n0\n" in p.stdout  # sh's own maps hold no libvzcaps
    after = p.stdout.split("\nENV\n", 1)[1]  # what env, a later child of sh, was given
    assert "LD_PRELOAD" not in after and "VZCAPS_" not in after.replace(f"VZCAPS_HOST_CHIP={CHIP}", "")
    assert sum(line.startswith("vzcaps: hooked AppleParavirtDevice for probe") for line in p.stderr.splitlines()) == 1
    # through Python's subprocess (execvp on PATH)
    code = ("import subprocess, sys; subprocess.run(['probe'], check=True); "
            "print('py-maps', 'libvzcaps' in open('/proc/self/maps').read())")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert families(p.stdout)[1008] == 1
    assert "py-maps False" in p.stdout


def test_an_unshimmed_program_gets_nothing(tmp_path):
    real = real_bin(tmp_path)
    (real / "other-probe").symlink_to(BUILD / "probe")
    shims = make_shims(tmp_path, "probe")
    p = subprocess.run(["sh", "-c", "other-probe"], env=shim_env(shims, real, "/usr/bin", "/bin"), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0
    assert families(p.stdout)[1008] == 0 and p.stderr == ""  # stock, and not a word from vzcaps


def test_the_real_program_runs_with_its_arguments_and_exit_status(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    tool = real / "tool"
    tool.write_text("#!/bin/sh\necho \"args:$*\"\ngrep -c libvzcaps /proc/$$/maps\nexit 7\n")
    tool.chmod(0o755)
    shims = make_shims(tmp_path, "tool")
    p = subprocess.run(["sh", "-c", "tool 'a b' c"], env=shim_env(shims, real, "/usr/bin", "/bin", VZCAPS_APPLE_FAMILY_MAX="1008"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 7, p.stderr
    assert "args:a b c" in p.stdout
    assert p.stdout.splitlines()[1] != "0"  # exactly as vzcaps run -- tool: its interpreter loaded the library


def test_a_missing_real_program_exits_127_with_one_line(tmp_path):
    shims = make_shims(tmp_path, "probe")
    p = subprocess.run(["sh", "-c", "probe"], env=shim_env(shims, "/usr/bin", "/bin"), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 127
    assert p.stderr.splitlines() == [f"vzcaps: probe: no probe on PATH after the shim directory {shims}"]


@pytest.mark.parametrize("spelling", ["same", "dot", "slash", "link", "relative"])
def test_a_shim_directory_that_finds_itself_is_refused_not_looped(tmp_path, spelling):
    shims = make_shims(tmp_path, "probe")
    (tmp_path / "shims-link").symlink_to(shims)
    again = {"same": shims, "dot": f"{shims}/.", "slash": f"{shims}/", "link": tmp_path / "shims-link",
             "relative": "shims"}[spelling]
    p = subprocess.run(["sh", "-c", "probe"], env=shim_env(shims, again, "/usr/bin", "/bin"), capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 127
    assert len(p.stderr.splitlines()) == 1
    assert "only vzcaps shims: refused, as starting one would loop" in p.stderr


def test_the_directory_twice_and_empty_and_relative_entries(tmp_path):
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    # DIR twice, the real program after it: found, once
    p = subprocess.run(["sh", "-c", "probe"], env=shim_env(shims, shims, real, "/bin"), capture_output=True, text=True,
                       timeout=60)
    assert families(p.stdout)[1008] == 1, p.stderr
    # an empty entry (the current directory) as the shim directory, a relative entry for the real one
    env = clean_env(PATH=":real:/usr/bin:/bin", VZCAPS_HOST_CHIP=CHIP)
    p = subprocess.run(["sh", "-c", "cd shims && PATH=:../real:/usr/bin:/bin probe"], env=env, capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert families(p.stdout)[1008] == 1, p.stderr
    # the shim started by its path: that directory is the shim directory, PATH after it is searched
    p = subprocess.run([str(shims / "probe")], env=shim_env(real, shims, "/bin"), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 127 and "after the shim directory" in p.stderr
    p = subprocess.run([str(shims / "probe")], env=shim_env(shims, real, "/bin"), capture_output=True, text=True,
                       timeout=60)
    assert families(p.stdout)[1008] == 1, p.stderr


def test_a_link_chain_to_vzcaps_is_a_shim_and_never_the_real_program(tmp_path):
    real = real_bin(tmp_path)
    chain = tmp_path / "chain"
    chain.mkdir()
    (chain / "one").symlink_to(VZ)
    (chain / "two").symlink_to(chain / "one")
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "probe").symlink_to(chain / "two")
    other = tmp_path / "other-shims"
    other.mkdir()
    (other / "probe").symlink_to(chain / "two")  # another shim directory later on PATH: skipped, no loop
    p = subprocess.run(["sh", "-c", "probe"], env=shim_env(shims, other, real, "/bin"), capture_output=True, text=True,
                       timeout=60)
    assert families(p.stdout)[1008] == 1, p.stderr
    # a link made by hand works as a shim, but vzcaps did not make it: not listed, not removed
    p = vz("shims", "--dir", str(shims), "--list", env=shim_env(shims, other, real, "/bin"))
    assert p.returncode == 0 and p.stdout == ""
    p = vz("shims", "--dir", str(shims), "--remove", "probe", env=shim_env(shims, other, real, "/bin"))
    assert p.returncode == 1 and "not a shim vzcaps made; left as it is" in p.stderr
    assert (shims / "probe").is_symlink()


def test_a_shim_replaced_by_a_link_of_the_users_is_not_removed(tmp_path):
    """The record of what vzcaps made (safety rule 4) names the link itself: the user's own
    link put in its place, even to the same target, is not vzcaps's."""
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    target = os.readlink(shims / "probe")
    (shims / "probe").unlink()
    (shims / "probe").symlink_to(target)
    env = shim_env(shims, real, "/bin")
    assert vz("shims", "--dir", str(shims), "--list", env=env).stdout == ""
    p = vz("shims", "--dir", str(shims), "--remove", "probe", env=env)
    assert p.returncode == 1 and "not a shim vzcaps made" in p.stderr
    assert os.readlink(shims / "probe") == target


def test_list_and_remove_only_what_vzcaps_made(tmp_path):
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe", "llama-server")
    (shims / "mine").write_text("#!/bin/sh\n")
    (shims / "alink").symlink_to("/bin/true")
    env = shim_env(shims, real, "/bin")
    p = vz("shims", "--dir", str(shims), "--list", env=env)
    assert p.returncode == 0
    assert p.stdout == f"llama-server\t(not found on PATH after {shims})\nprobe\t{real}/probe\n"
    p = vz("shims", "--dir", str(shims), "--remove", "mine", "alink", "probe", "nothere", env=env)
    assert p.returncode == 1
    assert p.stdout == f"removed {shims}/probe\n"
    assert f"{shims}/mine: not a shim vzcaps made; left as it is" in p.stderr
    assert f"{shims}/alink: not a shim vzcaps made; left as it is" in p.stderr
    assert f"{shims}/nothere: No such file or directory" in p.stderr
    assert sorted(os.listdir(shims)) == [".llama-server.vzcaps-shim", "alink", "llama-server", "mine"]  # probe's record went too
    # made again: idempotent; an existing file of the user's is never replaced
    p = vz("shims", "--dir", str(shims), "llama-server", "mine", env=env)
    assert p.returncode == 1
    assert f"{shims}/llama-server: already a shim" in p.stdout
    assert p.stderr.splitlines() == [f"vzcaps shims: {shims}/mine: exists and vzcaps did not make it; left as it is"]
    assert (shims / "mine").read_text() == "#!/bin/sh\n"


@pytest.mark.parametrize("name,why", [
    ("a/b", "a program name, not a path"), ("..", "not a program name"), (".", "not a program name"),
    ("../probe", "a program name, not a path"), ("-x", "may not start with '-'"), ("vzcaps", "vzcaps itself"),
    ("a\x01b", "control character"), ("x" * 256, "longer than 255 bytes"),
    # regression (issue 32 row 9): .hidden was made but --list never showed it; .x.vzcaps-shim took x's record name
    (".hidden", "a name starting with '.'"), (".x.vzcaps-shim", "a name starting with '.'"),
    ("x.vzcaps-shim", "it ends in .vzcaps-shim, the suffix of the records"),
])
def test_odd_names_are_refused_before_anything_is_made(tmp_path, name, why):
    d = tmp_path / "shims"
    p = vz("shims", "--dir", str(d), "probe", "--", name)
    assert p.returncode == 2
    assert why in p.stderr and "NAME" in p.stderr
    assert not d.exists()


@pytest.mark.parametrize("spelling", ["", "/", "/."])
def test_a_directory_that_is_a_link_is_refused_for_writing(tmp_path, spelling):
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "dirlink").symlink_to(target)
    p = vz("shims", "--dir", f"{tmp_path / 'dirlink'}{spelling}", "probe")
    assert p.returncode == 1
    assert "a link; give the directory it leads to" in p.stderr
    assert os.listdir(target) == []
    p = vz("shims", "--dir", f"{tmp_path / 'dirlink'}{spelling}", "--remove", "probe")
    assert p.returncode == 1 and os.listdir(target) == []


def test_a_directory_that_is_a_file_and_malformed_lines(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    p = vz("shims", "--dir", str(f), "probe")
    assert p.returncode == 1 and "not a directory" in p.stderr
    assert vz("shims", "probe").returncode == 2
    assert vz("shims", "--dir", str(tmp_path / "d")).returncode == 2
    assert vz("shims", "--dir", str(tmp_path / "d"), "--list", "probe").returncode == 2


def test_check_and_doctor_name_a_shimmed_program_and_its_real_one(tmp_path):
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    env = shim_env(shims, real, "/bin")
    want = f"probe on PATH is a vzcaps shim ({shims}/probe), which runs {real}/probe through vzcaps run"
    p = vz("check", "--exe", "probe", env=env)
    assert f"shim           {want}\n" in p.stdout
    import json
    assert json.loads(vz("check", "--exe", "probe", "--json", env=env).stdout)["shim"] == want
    assert json.loads(vz("check", "--exe", "other", "--json", env=env).stdout)["shim"] is None
    p = vz("doctor", "--exe", "probe", env=env)
    assert f"shim           {want}\n" in p.stdout
    assert json.loads(vz("doctor", "--exe", "probe", "--json", env=env).stdout)["shim"] == want
    p = vz("check", "--exe", "probe", env=shim_env(shims, "/bin"))
    assert f"({shims}/probe), and no probe on PATH after the shim directory {shims}: it exits 127" in p.stdout


def test_run_and_launchd_given_a_shimmed_name_start_the_real_program(tmp_path):
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    env = shim_env(shims, real, "/usr/bin", "/bin", HOME=str(tmp_path))
    p = vz("run", "--dry-run", "--", "probe", env=env)
    assert p.returncode == 0
    assert p.stdout.rstrip("\n").endswith(f" {real}/probe")  # the real program, not the shim (no second vzcaps)
    assert f"probe on PATH is a vzcaps shim ({shims}/probe); starting the real one, {real}/probe" in p.stderr
    p = subprocess.run([VZ, "run", "--", "probe"], env=env, capture_output=True, text=True, timeout=60)
    assert families(p.stdout)[1008] == 1
    import plistlib
    p = vz("launchd", "--label", "a.b", "--", "probe", env=env)
    assert plistlib.loads(p.stdout.encode())["ProgramArguments"] == [f"{real}/probe"]
    p = vz("run", "--", "probe", env=shim_env(shims, "/bin"))
    assert p.returncode == 127 and "is a vzcaps shim" in p.stderr and len(p.stderr.splitlines()) == 1


def test_doctor_with_a_command_names_the_shim_and_the_real_program(tmp_path):
    import json
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    env = shim_env(shims, real, "/usr/bin", "/bin")
    p = vz("doctor", "--", "probe", env=env)
    assert f"shim           probe on PATH is a vzcaps shim ({shims}/probe), which runs {real}/probe" in p.stdout
    assert f"launch         {real}/probe\n" in p.stdout
    d = json.loads(vz("doctor", "--json", "--", "probe", env=env).stdout)
    assert d["launch"]["program"] == f"{real}/probe" and d["shim"].startswith("probe on PATH is a vzcaps shim")


@pytest.mark.parametrize("spelling", ["/.", "/", "//"])
def test_the_directory_spelled_differently_is_one_directory(tmp_path, spelling):
    real = real_bin(tmp_path)
    d = tmp_path / "shims"
    assert vz("shims", "--dir", f"{d}{spelling}", "probe").returncode == 0
    assert vz("shims", "--dir", str(d), "probe").stdout == f"{d}/probe: already a shim\n"
    assert vz("shims", "--dir", f"{d}{spelling}", "--list", env=shim_env(d, real, "/bin")).stdout == f"probe\t{real}/probe\n"
    # on PATH as a link to it, with an empty entry before: found, and the real program after it runs
    (tmp_path / "link").symlink_to(d)
    p = subprocess.run(["sh", "-c", "probe"], env=shim_env("", tmp_path / "link", real, "/bin"), capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert families(p.stdout)[1008] == 1, p.stderr


def test_an_env_shebang_naming_a_shimmed_program_starts_the_real_one(tmp_path):
    # a shimmed script whose #!/usr/bin/env names another shimmed program: one vzcaps run, no
    # vzcaps process with the library loaded in between, the real interpreter started directly
    real = real_bin(tmp_path)
    (real / "python3").symlink_to(BUILD / "probe")  # stands in for an interpreter that uses Metal
    executable = real / "serve"
    executable.write_text("#!/usr/bin/env python3\n")
    executable.chmod(0o755)
    shims = make_shims(tmp_path, "serve", "python3")
    env = shim_env(shims, real, "/usr/bin", "/bin")
    p = vz("run", "--dry-run", "--", f"{real}/serve", env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.rstrip("\n").endswith(f" {real}/python3 {real}/serve")
    assert f"python3 on PATH is a vzcaps shim ({shims}/python3); starting the real one, {real}/python3" in p.stderr
    p = subprocess.run(["sh", "-c", "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert families(p.stdout)[1008] == 1, p.stderr
    assert sum(line.startswith("vzcaps: hooked ") for line in p.stderr.splitlines()) == 1  # loaded once


def test_a_shim_another_run_made_meanwhile_is_already_a_shim_not_a_failure(tmp_path):
    # two provisioning jobs make the same shims at once: the one whose link comes second found
    # EEXIST and failed (exit 1), although the entry is the shim it was asked for. gdb makes the
    # link between the check and symlinkat, deterministically.
    d = tmp_path / "shims"
    d.mkdir()
    p = subprocess.run(["gdb", "-q", "-batch", "-ex", "set breakpoint pending on", "-ex", "break symlinkat", "-ex", "run",
                        "-ex", f"shell ln -s {VZ} {d}/llama-server", "-ex", "delete", "-ex", "continue",
                        "--args", VZ, "shims", "--dir", str(d), "llama-server"],
                       env=clean_env(), capture_output=True, text=True, timeout=120)
    assert "Breakpoint 1," in p.stdout, p.stdout + p.stderr
    assert "exited normally" in p.stdout and f"{d}/llama-server: already a shim" in p.stdout, p.stdout + p.stderr
    # a link vzcaps did not make, made meanwhile, is still refused and left as it is
    (d / "llama-server").unlink()
    p = subprocess.run(["gdb", "-q", "-batch", "-ex", "set breakpoint pending on", "-ex", "break symlinkat", "-ex", "run",
                        "-ex", f"shell ln -s /bin/true {d}/llama-server", "-ex", "delete", "-ex", "continue",
                        "--args", VZ, "shims", "--dir", str(d), "llama-server"],
                       env=clean_env(), capture_output=True, text=True, timeout=120)
    assert "exited with code 01" in p.stdout and os.readlink(d / "llama-server") == "/bin/true", p.stdout + p.stderr


def test_shims_of_two_vzcaps_installations_on_a_path_that_repeats_never_loop(tmp_path):
    # A's shim skipped only links to its own command, so with PATH=A:B:A (B: the shims of another
    # vzcaps installation, say the image's under the CI job's) A started B's shim as the real
    # program, B started A's (the A after it), and so on, exec after exec, for ever
    for v in ("v1", "v2"):
        (tmp_path / v).mkdir()
        shutil.copy(BUILD / "vzcaps", tmp_path / v / "vzcaps")
        shutil.copy(BUILD / "libvzcaps.so", tmp_path / v / "libvzcaps.so")
    a, b = tmp_path / "A", tmp_path / "B"
    for v, d in (("v1", a), ("v2", b)):
        p = subprocess.run([str(tmp_path / v / "vzcaps"), "shims", "--dir", str(d), "probe"], env=clean_env(),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    real = real_bin(tmp_path)
    home = tmp_path / "home"  # the chip from a config file: the library strips VZCAPS_HOST_CHIP on the way
    (home / ".config" / "vzcaps").mkdir(parents=True)
    (home / ".config" / "vzcaps" / "vzcaps.conf").write_text(f"[default]\nhost_chip = {CHIP}\n")
    env = clean_env(HOME=str(home), PATH=f"{a}:{b}:{a}:/usr/bin:/bin")
    p = subprocess.run(["sh", "-c", "probe"], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 127 and p.stderr == (f"vzcaps: probe: no probe on PATH after the shim directory {a} (only vzcaps "
                                                "shims: refused, as starting one would loop)\n"), p.stderr
    env["PATH"] = f"{a}:{b}:{a}:{real}:/usr/bin:/bin"
    p = subprocess.run(["sh", "-c", "probe"], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and families(p.stdout)[1008] == 1, p.stderr


@needs_root("mounts a 64 KiB tmpfs")
def test_a_full_disk_leaves_no_shim_and_a_rerun_makes_it_whole(tmp_path):
    # regression (issue 32 row 8): on a full disk the link was made and its record was not (exit 1);
    # after space was freed the same command exited 0 without the record, --list omitted the
    # shim and --remove refused it as not ours
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        shims = disk / "shims"
        shims.mkdir()
        filler = disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"x" * 512):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        env = shim_env(shims, real_bin(tmp_path), "/bin")
        p = vz("shims", "--dir", str(shims), "probe", env=env)
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr.startswith(f"vzcaps shims: {shims}/probe: ") and "(nothing was made)" in p.stderr, p.stderr
        assert os.listdir(shims) == []  # no link, no record, no temporary
        filler.unlink()
        p = vz("shims", "--dir", str(shims), "probe", env=env)
        assert p.returncode == 0, p.stderr
        assert sorted(os.listdir(shims)) == [".probe.vzcaps-shim", "probe"]
        assert vz("shims", "--dir", str(shims), "--list", env=env).stdout.startswith("probe\t")
        p = vz("shims", "--dir", str(shims), "--remove", "probe", env=env)
        assert p.returncode == 0 and os.listdir(shims) == []
    finally:
        subprocess.run(["umount", str(disk)])


def test_a_link_to_vzcaps_without_its_record_is_repaired_by_a_rerun(tmp_path):
    # regression (issue 32 row 8): a link to this vzcaps left without a record (an earlier run
    # that failed between the two) stayed outside --list and --remove whatever was run again
    real = real_bin(tmp_path)
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "probe").symlink_to(VZ)
    env = shim_env(shims, real, "/bin")
    p = vz("shims", "--dir", str(shims), "probe", env=env)
    assert p.returncode == 0 and p.stdout == f"{shims}/probe: already a shim (its record was missing: written)\n"
    assert vz("shims", "--dir", str(shims), "--list", env=env).stdout == f"probe\t{real}/probe\n"
    assert vz("shims", "--dir", str(shims), "probe", env=env).stdout == f"{shims}/probe: already a shim\n"
    p = vz("shims", "--dir", str(shims), "--remove", "probe", env=env)
    assert p.returncode == 0 and os.listdir(shims) == []
    # a link elsewhere (not this vzcaps) is still not taken
    (shims / "probe").symlink_to("/bin/true")
    p = vz("shims", "--dir", str(shims), "probe", env=env)
    assert p.returncode == 1 and os.listdir(shims) == ["probe"]


def test_a_made_shim_leaves_only_the_link_and_its_record(tmp_path):
    shims = make_shims(tmp_path, "probe", "llama-server")
    assert sorted(os.listdir(shims)) == [".llama-server.vzcaps-shim", ".probe.vzcaps-shim", "llama-server", "probe"]
    assert os.readlink(shims / "probe") == VZ


def test_a_directory_with_a_colon_is_refused_as_it_can_never_be_on_path(tmp_path):
    # hostile: --dir "a:b" made the shims and exited 0, though no PATH can name that directory
    # (':' separates the entries, with no escape): the shims could never run
    d = tmp_path / "a:b"
    p = vz("shims", "--dir", str(d), "probe")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.splitlines()[0] == (f"vzcaps shims: --dir {d}: it holds ':', which separates PATH's entries, so no "
                                        "PATH can name it")
    assert not d.exists()


def test_a_signal_while_a_shim_is_made_leaves_it_whole_or_absent(tmp_path):
    # hostile: SIGTERM between the record and the rename left .probe.vzcaps-shim-new.PID.0 (a
    # link to vzcaps that no rerun, --remove or undo ever removed: the directory could never be
    # removed empty) and a record naming it
    src = tmp_path / "term.c"
    src.write_text('#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <signal.h>\n#include <unistd.h>\n'
                   'int renameat2(int a, const char *b, int c, const char *d, unsigned e) {\n'
                   '    kill(getpid(), SIGTERM);\n'
                   '    int (*real)(int, const char *, int, const char *, unsigned) = '
                   '(int (*)(int, const char *, int, const char *, unsigned))dlsym(RTLD_NEXT, "renameat2");\n'
                   '    return real(a, b, c, d, e);\n}\n')
    lib = tmp_path / "libterm.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src), "-ldl"], check=True)
    d = tmp_path / "shims"
    p = subprocess.run([VZ, "shims", "--dir", str(d), "probe"], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == -15, p.stderr
    assert sorted(os.listdir(d)) in ([], [".probe.vzcaps-shim", "probe"]), os.listdir(d)
    ok = vz("shims", "--dir", str(d), "--remove", "probe")
    assert ok.returncode == 0, ok.stderr
    assert os.listdir(d) == []


def test_a_record_name_of_someone_elses_names_no_option_shims_lacks(tmp_path):
    """A user's file where a shim's record goes is left alone, and the line does not advise
    --force: shims has no such option (the shared writer's hint named it for every command)."""
    d = tmp_path / "shims"
    d.mkdir()
    (d / ".probe.vzcaps-shim").write_text("my own notes\n")
    p = vz("shims", "--dir", str(d), "probe")
    assert p.returncode == 1 and "--force" not in p.stderr, p.stderr
    assert "already exists and vzcaps did not write it (not replaced)" in p.stderr
    assert (d / ".probe.vzcaps-shim").read_text() == "my own notes\n" and not os.path.lexists(d / "probe")
