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
    ("a\x01b", "control character"), ("x" * 256, "longer than 224 bytes"),
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
    --force: shims's --force takes over only another copy's shims, never a user's file (the
    shared writer's hint named it for every command)."""
    d = tmp_path / "shims"
    d.mkdir()
    (d / ".probe.vzcaps-shim").write_text("my own notes\n")
    p = vz("shims", "--dir", str(d), "probe")
    assert p.returncode == 1 and "--force" not in p.stderr, p.stderr
    assert "already exists and vzcaps did not write it (not replaced)" in p.stderr
    assert (d / ".probe.vzcaps-shim").read_text() == "my own notes\n" and not os.path.lexists(d / "probe")


def test_a_shim_started_with_an_empty_argv0_starts_the_program_it_stands_for(tmp_path):
    # regression (issue 39 row 14): execve(shim, {"", NULL}, env) ran vzcaps itself (the usage,
    # exit 2): the program never started. The path exec was given names the shim (AT_EXECFN on
    # Linux, _NSGetExecutablePath on macOS), links unresolved.
    real = real_bin(tmp_path)
    shims = make_shims(tmp_path, "probe")
    env = shim_env(shims, real, "/usr/bin", "/bin")
    p = subprocess.run([""], executable=str(shims / "probe"), env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert families(p.stdout)[1008] == 1, p.stderr
    # by a relative path (the shim directory is the one it names), and by a link chain to the shim
    p = subprocess.run([""], executable="shims/probe", env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0 and families(p.stdout)[1008] == 1, p.stderr
    # the real program's exit status and arguments pass through
    tool = real / "tool"
    tool.write_text('#!/bin/sh\necho "args:$*"\nexit 9\n')
    tool.chmod(0o755)
    make_shims(tmp_path, "tool")
    p = subprocess.run(["", "a b", "c"], executable=str(shims / "tool"), env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 9 and "args:a b c" in p.stdout, p.stderr
    # vzcaps itself with an empty argv[0] is still vzcaps (its usage, 2), not a shim of "vzcaps"
    p = subprocess.run([""], executable=VZ, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage: vzcaps COMMAND" in p.stderr, p.stderr


@pytest.mark.parametrize("length", [225, 240])
def test_a_name_that_cannot_fit_is_refused_up_front_with_2(tmp_path, length):
    # regression (issue 39 row 16): a name of about 225+ bytes was accepted, then failed with
    # exit 1 ("File name too long"): its temporary name .NAME.vzcaps-shim-new.PID.N is longer
    # than a file name can be (255 bytes)
    d = tmp_path / "shims"
    name = "n" * length
    p = vz("shims", "--dir", str(d), "probe", name)
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [f'vzcaps shims: NAME "{name}": longer than 224 bytes (a shim is made as '
                                     '.NAME.vzcaps-shim-new.PID.N first, and a file name holds at most 255 bytes)'], p.stderr
    assert not d.exists()
    # the longest name that fits is made, listed and removed
    fits = "n" * 224
    p = vz("shims", "--dir", str(d), fits)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(d)) == [f".{fits}.vzcaps-shim", fits]
    assert vz("shims", "--dir", str(d), "--remove", fits).returncode == 0 and os.listdir(d) == []


def test_a_shim_path_longer_than_a_path_can_be_is_refused_up_front_with_2(tmp_path):
    # the same for DIR/NAME past PATH_MAX (4096 here): no PATH search could start it
    d = tmp_path / ("d" * 200) / ("e" * 200)
    d = str(d) + "/" + "/".join(["f" * 200] * ((4096 - len(str(d))) // 201 + 1))
    p = vz("shims", "--dir", d, "probe")
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith(f"vzcaps shims: {d}/probe: longer than a path can be"), p.stderr
    assert not (tmp_path / ("d" * 200)).exists()


def test_making_a_shim_while_another_run_removes_it_never_fails_the_make(tmp_path):
    # regression (issue 39 row 15): make and --remove in a loop side by side: the make that found
    # the entry as the removal took it said "exists and vzcaps did not make it", exit 1, and left
    # no shim. Runs on one directory are serialized (a lock on the directory), so each finds the
    # shim whole or absent.
    import threading
    d = make_shims(tmp_path, "probe")
    results = {"make": [], "remove": []}

    def loop(kind, args):
        for _ in range(150):
            p = vz("shims", "--dir", str(d), *args)
            results[kind].append((p.returncode, p.stdout, p.stderr))

    threads = [threading.Thread(target=loop, args=(kind, args)) for kind, args in
               [("make", ["probe"]), ("remove", ["--remove", "probe"])] * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads)
    bad = [r for r in results["make"] if r[0] != 0 or "vzcaps did not make it" in r[2]]
    assert not bad, bad[:3]
    for rc, out, err in results["remove"]:  # removed, or already gone: never "not a shim vzcaps made"
        assert (rc, err) == (0, "") or (rc == 1 and err.endswith("No such file or directory\n")), err
    names = sorted(os.listdir(d))
    assert names in ([], [".probe.vzcaps-shim", "probe"]), names  # whole or absent, no temporary left
    if names:
        assert vz("shims", "--dir", str(d), "--list").stdout.startswith("probe\t")


def test_a_directory_lock_held_by_another_process_is_waited_for_5_s_not_for_ever(tmp_path):
    # hostile: anyone who can read DIR can flock it; a make waits its turn a bounded time, then
    # says so in one line and makes nothing; --list takes no turn
    import fcntl
    d = make_shims(tmp_path, "probe")
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = vz("shims", "--dir", str(d), "llama-server")
        assert p.returncode == 1 and p.stderr.splitlines() == [
            f"vzcaps shims: {d}: another process has held the directory's lock for 5 s; nothing was made or removed"], p.stderr
        assert not os.path.lexists(d / "llama-server")
        assert vz("shims", "--dir", str(d), "--list").stdout.startswith("probe\t")
    finally:
        os.close(fd)
    assert vz("shims", "--dir", str(d), "llama-server").returncode == 0


def copy_of_vzcaps(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    shutil.copy2(VZ, d / "vzcaps")
    shutil.copy2(BUILD / "libvzcaps.so", d / "libvzcaps.so")
    return str(d / "vzcaps")


def test_a_shim_made_by_another_copy_is_named_with_that_copy_and_taken_over_with_force(tmp_path):
    # regression (issue 39 row 17): after `make install`, the installed copy said "vzcaps did
    # not make it" of the build's shims, with no next step, and could neither re-make nor remove them
    installed = copy_of_vzcaps(tmp_path, "installed")
    d = make_shims(tmp_path, "probe", "llama-server")  # made by build/vzcaps
    p = subprocess.run([installed, "shims", "--dir", str(d), "probe"], env=clean_env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and p.stderr.splitlines() == [
        f"vzcaps shims: {d}/probe: a shim made by another copy of vzcaps ({VZ}); "
        f"vzcaps shims --dir {d} --force probe makes it this copy's"], p.stderr
    assert os.readlink(d / "probe") == VZ
    p = subprocess.run([installed, "shims", "--dir", str(d), "--force", "probe"], env=clean_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == f"{d}/probe -> {installed} (was a shim of {VZ})\n", p.stdout + p.stderr
    assert os.readlink(d / "probe") == installed and sorted(os.listdir(d)) == [
        ".llama-server.vzcaps-shim", ".probe.vzcaps-shim", "llama-server", "probe"]
    listed = subprocess.run([installed, "shims", "--dir", str(d), "--list"], env=clean_env(), capture_output=True, text=True)
    assert listed.stdout.splitlines()[0] == f"llama-server\t(a shim of another copy of vzcaps: {VZ})"  # issue 45
    assert [l.split("\t")[0] for l in listed.stdout.splitlines()] == ["llama-server", "probe"]  # probe: now this copy's
    assert vz("shims", "--dir", str(d), "probe").returncode == 1  # and to the build's copy, another copy's
    # --remove: named the same way, removed with --force, its record too
    p = subprocess.run([installed, "shims", "--dir", str(d), "--remove", "llama-server"], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stderr.splitlines() == [
        f"vzcaps shims: {d}/llama-server: a shim made by another copy of vzcaps ({VZ}); "
        f"vzcaps shims --dir {d} --remove --force llama-server removes it"], p.stderr
    p = subprocess.run([installed, "shims", "--dir", str(d), "--remove", "--force", "llama-server"], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and sorted(os.listdir(d)) == [".probe.vzcaps-shim", "probe"], p.stderr


def test_force_takes_over_only_a_recorded_shim_of_another_copy(tmp_path):
    # hostile: --force never replaces a user's file, a link of the user's (to any vzcaps), or a
    # shim whose link was changed since its record; a copy that is gone is named as gone
    installed = copy_of_vzcaps(tmp_path, "installed")
    gone = copy_of_vzcaps(tmp_path, "gone")
    d = tmp_path / "shims"
    assert subprocess.run([gone, "shims", "--dir", str(d), "probe"], env=clean_env(), capture_output=True).returncode == 0
    os.unlink(gone)
    (d / "mine").write_text("#!/bin/sh\n")
    (d / "hand").symlink_to(VZ)
    for name in ("mine", "hand"):
        p = subprocess.run([installed, "shims", "--dir", str(d), "--force", name], env=clean_env(), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 1 and "vzcaps did not make it" in p.stderr, p.stderr
    assert (d / "mine").read_text() == "#!/bin/sh\n" and os.readlink(d / "hand") == VZ
    p = subprocess.run([installed, "shims", "--dir", str(d), "probe"], env=clean_env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1 and f"a shim made by another copy of vzcaps ({gone}, now missing)" in p.stderr, p.stderr
    p = subprocess.run([installed, "shims", "--dir", str(d), "--remove", "--force", "probe"], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not os.path.lexists(d / "probe") and not os.path.lexists(d / ".probe.vzcaps-shim")


@needs_root("mounts a 16 KiB tmpfs")
def test_force_on_a_full_disk_says_what_it_left_and_a_rerun_repairs_it(tmp_path):
    """--force over another copy's shim on a full disk: the link is renamed (no space needed), its
    record cannot be written. The line says the link now leads to this copy (it said 'the link is
    left as it was', which it was not), and a rerun with room writes the record."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(disk)], check=True)
    try:
        installed = copy_of_vzcaps(tmp_path, "installed")
        d = make_shims(disk, "probe")  # the build's copy's shim
        filler = disk / "filler"
        with open(filler, "wb") as f:
            try:
                f.write(b"\0" * 65536)
            except OSError:
                pass
        run = lambda: subprocess.run([installed, "shims", "--dir", str(d), "--force", "probe"], env=clean_env(),
                                     capture_output=True, text=True, timeout=60)
        p = run()
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
        assert os.readlink(d / "probe") == installed
        assert "left as it was" not in p.stderr and f"now leads to {installed}" in p.stderr, p.stderr
        filler.unlink()
        p = run()
        assert p.returncode == 0, p.stderr
        listed = subprocess.run([installed, "shims", "--dir", str(d), "--list"], env=clean_env(), capture_output=True,
                                text=True, timeout=60)
        assert [l.split("\t")[0] for l in listed.stdout.splitlines()] == ["probe"]
    finally:
        subprocess.run(["umount", str(disk)])


def test_a_shim_links_to_the_command_as_it_was_started_when_that_is_this_command(tmp_path):
    """Started through a link (Homebrew's bin/vzcaps -> Cellar/vzcaps/VERSION/bin/vzcaps), the shim
    links to that link, which outlives an upgrade; started by a relative path, or by a path that
    is not this command, to the command's own file (issue 47 item 1: self_path is the file itself)."""
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "vzcaps"
    link.symlink_to(VZ)
    p = subprocess.run([str(link), "shims", "--dir", str(tmp_path / "a"), "probe"], env=clean_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and os.readlink(tmp_path / "a" / "probe") == str(link), p.stderr
    p = subprocess.run(["bin/vzcaps", "shims", "--dir", str(tmp_path / "b"), "probe"], env=clean_env(), capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0 and os.readlink(tmp_path / "b" / "probe") == os.path.realpath(VZ), p.stderr


# ---- issue 45: a killed run's temporary link, and another copy's shims in --list ----

def killed_runs_leftovers(tmp_path, *more):
    """A shim directory as killed runs leave it: probe's temporary link with its record (killed
    before the rename), llama-server's without one (killed before the record); and entries that
    only look like temporaries: a user's file, a link to another program, both under that naming."""
    d = make_shims(tmp_path, "probe", "llama-server", *more)
    os.rename(d / "probe", d / ".probe.vzcaps-shim-new.12345.0")  # a rename keeps what the record names
    os.unlink(d / "llama-server")
    os.unlink(d / ".llama-server.vzcaps-shim")
    (d / ".llama-server.vzcaps-shim-new.999.1").symlink_to(VZ)
    (d / ".mine.vzcaps-shim-new.1.0").write_text("a user's file\n")
    (d / ".sh.vzcaps-shim-new.2.0").symlink_to("/bin/sh")
    return d


@pytest.mark.parametrize("how", ["make", "remove"])
def test_a_later_run_removes_the_temporary_links_a_killed_run_left(tmp_path, how):
    d = killed_runs_leftovers(tmp_path, "whisper-cli")
    args = ["probe", "llama-server"] if how == "make" else ["--remove", "whisper-cli"]
    p = vz("shims", "--dir", str(d), *args)
    assert p.returncode == 0, p.stdout + p.stderr
    for gone in (".probe.vzcaps-shim-new.12345.0", ".llama-server.vzcaps-shim-new.999.1"):
        assert f"{d}/{gone}: removed (a temporary link a stopped run left)\n" in p.stdout, p.stdout
    left = sorted(os.listdir(d))
    kept = [".mine.vzcaps-shim-new.1.0", ".sh.vzcaps-shim-new.2.0"]
    if how == "make":
        assert left == [".llama-server.vzcaps-shim", *kept[:1], ".probe.vzcaps-shim", *kept[1:], ".whisper-cli.vzcaps-shim",
                        "llama-server", "probe", "whisper-cli"], left
    else:  # probe's record named only its temporary link: it went with it
        assert left == kept, left
    assert (d / ".mine.vzcaps-shim-new.1.0").read_text() == "a user's file\n" and os.readlink(d / ".sh.vzcaps-shim-new.2.0") == "/bin/sh"


def test_list_shows_another_copys_shims_as_such(tmp_path):
    """issue 45: --list showed nothing of the shims another copy of vzcaps made, though --remove
    then found them (and named that copy)."""
    installed = copy_of_vzcaps(tmp_path, "installed")
    real = real_bin(tmp_path)
    d = make_shims(tmp_path, "probe")  # build/vzcaps's
    assert subprocess.run([installed, "shims", "--dir", str(d), "llama-server"], env=clean_env(), capture_output=True).returncode == 0
    env = shim_env(d, real, "/bin")
    p = subprocess.run([installed, "shims", "--dir", str(d), "--list"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == (f"llama-server\t(not found on PATH after {d})\n"
                                              f"probe\t(a shim of another copy of vzcaps: {VZ})\n"), p.stdout
