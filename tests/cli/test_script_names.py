"""The name a #! script goes by, from the gate to the proof (round seven): vzcaps run and a shim
bind the script's name to the process they exec (PID-PPID:NAME), while the line --dry-run prints
hands it unclaimed; check --strict shows, for a script whose #! line starts a shim, the section
the job gets (the shim's program's, by its path or through env) and names the NAME its runs are
recorded under, which is the one stats --require passes. All on the rig."""
import json
import subprocess

from conftest import BUILD, LINUX_ONLY, clean_env, need_tool

VZ = str(BUILD / "vzcaps")
M2 = dict(VZCAPS_HOST_CHIP="Apple M2")


def shimmed(tmp_path, line):
    """bin/probe, shims/probe (a vzcaps shim) and job, whose #! line is line; [job] off, [probe] unlocks."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "probe").symlink_to(BUILD / "probe")
    shims, path = tmp_path / "shims", f"{tmp_path / 'shims'}:{tmp_path / 'bin'}:/usr/bin:/bin"
    subprocess.run([VZ, "shims", "--dir", str(shims), "probe"], env=clean_env(PATH=path), check=True, capture_output=True)
    job = tmp_path / "job"
    job.write_text(line.format(shims=shims) + "\n")
    job.chmod(0o755)
    c = tmp_path / "c.conf"
    c.write_text("[job]\nmatch = job\napple_family_max = off\n[probe]\nmatch = probe\napple_family_max = auto\n")
    c.chmod(0o644)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    return job, dict(VZCAPS_CONFIG=c, PATH=path, VZCAPS_LOG_FILE=logs / "usage.log", **M2)


def vz(*args, env):
    return subprocess.run([VZ, *args], env=clean_env(**env), capture_output=True, text=True, timeout=60)


@LINUX_ONLY
def test_the_gate_shows_the_job_section_and_names_the_proofs_name(tmp_path):
    for name, line in (("by-path", "#!{shims}/probe"), ("through-env", "#!/usr/bin/env probe")):
        (tmp_path / name).mkdir()
        job, env = shimmed(tmp_path / name, line)
        d = json.loads(vz("check", "--strict", "--json", "--exe", str(job), env=env).stdout)
        assert (d["verdict"], d["profile"], d["state"]) == ("unlocked", "probe", "enabled"), (line, d)
        assert d["reason"].endswith("recorded as probe (stats --require probe)"), d["reason"]
        text = vz("check", "--strict", "--exe", str(job), env=env)
        assert text.returncode == 0 and "[probe]" in text.stdout and "effect         enabled" in text.stdout, text.stdout
        ran = subprocess.run([str(job)], env=clean_env(**env), capture_output=True, text=True, timeout=60)
        assert "family 1008 1" in ran.stdout, ran.stderr
        assert vz("stats", "--require", "probe", env=env).returncode == 0  # the NAME the gate named
        assert "never ran" in vz("stats", "--require", "job", env=env).stderr


@LINUX_ONLY
def test_run_binds_the_scripts_name_to_its_process_and_dry_run_leaves_it_unclaimed(tmp_path):
    """A static interpreter (it ignores the library, so nothing claims the name) prints what it got:
    the pid and parent vzcaps run had, which the exec kept."""
    need_tool("cc")
    src = tmp_path / "show.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\nint main(void){const char*v=getenv('
                   '"VZCAPS_PROGRAM");printf("%s %d %d\\n",v?v:"-",(int)getpid(),(int)getppid());return 0;}\n')
    subprocess.run(["cc", "-static", "-o", str(tmp_path / "show"), str(src)], check=True, capture_output=True)
    job = tmp_path / "job"
    job.write_text(f"#!{tmp_path / 'show'}\n")
    job.chmod(0o755)
    env = dict(VZCAPS_APPLE_FAMILY_MAX="auto", **M2)
    got, pid, ppid = vz("run", "--", str(job), env=env).stdout.split()
    assert got == f"{pid}-{ppid}:job"
    assert "VZCAPS_PROGRAM=0000000000:job " in vz("run", "--dry-run", "--", str(job), env=env).stdout
