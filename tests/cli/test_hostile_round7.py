"""Hostile cases of round seven's proof, gate and launch (issues 44, 45, 47), each failing on the
integration head 03ee5c8 (branch hostile): a job whose every client got stock answers passes the
proof through Metal's own query; a script's child takes the script's name and section when the
script's process never loaded the library; the gate prints and reports the script's section for
a script whose interpreter is a shim while it judges the job under the interpreter's; a
LaunchAgent for a script runs it under the interpreter's name, not the script's as `run` does; a
link to the library preloaded by a bare name keeps the injection in children that must start
stock. All on the rig."""
import json
import os
import plistlib
import subprocess

from conftest import BUILD, LINUX_ONLY, clean_env, need_tool

VZ = str(BUILD / "vzcaps")
M2 = dict(VZCAPS_HOST_CHIP="Apple M2")


def conf(path, text):
    path.write_text(text)
    path.chmod(0o644)
    return path


def logs_dir(tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    return d / "usage.log"


def require(log, *names):
    return subprocess.run([VZ, "stats", "--require", *names], env=clean_env(VZCAPS_LOG_FILE=log), capture_output=True,
                          text=True, timeout=60)


@LINUX_ONLY
def test_a_job_whose_clients_all_got_stock_answers_fails_the_proof(tmp_path):
    """Every client image of build/callers is kept stock (stock_callers), so each reads Apple7 = NO;
    the only raised answer went to the Metal stand-in's own -initGPUFamilySupport at device
    creation. The library writes "unlocked" for that (image libfakemetal.so), and --require
    passes a job none of whose code got a raised answer: with the default scope (callers = *,
    stock_callers = libtorch_cpu*), a PyTorch-only job that read Apple7 = NO passes the same way."""
    log = logs_dir(tmp_path)
    c = conf(tmp_path / "c.conf", "[callers]\nmatch = callers\napple_family_max = auto\n"
                                  "stock_callers = libggml-metal* libtorch_cpu* libother-client*\n")
    p = subprocess.run([str(BUILD / "callers")], env=clean_env(LD_PRELOAD=BUILD / "libvzcaps.so", VZCAPS_LOG_FILE=log,
                                                             VZCAPS_CONFIG=c, **M2), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [line.split()[3] for line in p.stdout.splitlines() if line.startswith("caller ")] == ["0", "0", "0"], p.stdout
    r = require(log, "callers")
    assert r.returncode == 1, (r.stdout, log.read_text())


@LINUX_ONLY
def test_a_child_of_a_script_whose_process_ignored_the_library_takes_no_name(tmp_path):
    """vzcaps run -- ./job, job's #! interpreter a statically linked program (run warns that it
    ignores the library) that starts build/probe. The unclaimed VZCAPS_PROGRAM=0000000000:job
    reaches the child, whose library claims it: probe, which no section matches, is hooked under
    [job] and recorded as job, and --require job passes though job's own process never loaded
    the library."""
    need_tool("cc")
    src = tmp_path / "interp.c"
    src.write_text('#include <unistd.h>\n#include <sys/wait.h>\nint main(void){pid_t p=fork();'
                   'if(!p){char*a[]={"probe",0};execv("%s",a);_exit(127);}int s;waitpid(p,&s,0);return 0;}\n'
                   % (BUILD / "probe"))
    interp = tmp_path / "interp"
    subprocess.run(["cc", "-static", "-o", str(interp), str(src)], check=True, capture_output=True)
    job = tmp_path / "job"
    job.write_text(f"#!{interp}\n")
    job.chmod(0o755)
    c = conf(tmp_path / "c.conf", "[job]\nmatch = job\napple_family_max = auto\n")
    log = logs_dir(tmp_path)
    p = subprocess.run([VZ, "run", "--", str(job)], env=clean_env(VZCAPS_CONFIG=c, VZCAPS_LOG_FILE=log, **M2),
                       capture_output=True, text=True, timeout=60)
    assert "will ignore the library" in p.stderr, p.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    assert not any(r["program"] == "job" for r in records), records  # the child is probe, not job
    assert "family 1007 0" in p.stdout, p.stdout  # probe has no section: stock, as every child of job
    assert require(log, "job").returncode == 1


def shim_as_interpreter(tmp_path):
    """bin/probe (the real one), shims/probe (a vzcaps shim), and job, whose #! names the shim by
    its path; a config whose [job] is off and whose [probe] unlocks."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "probe").symlink_to(BUILD / "probe")
    shims = tmp_path / "shims"
    subprocess.run([VZ, "shims", "--dir", str(shims), "probe"], env=clean_env(PATH=f"{shims}:{tmp_path / 'bin'}:/usr/bin:/bin"),
                   check=True, capture_output=True)
    job = tmp_path / "job"
    job.write_text(f"#!{shims / 'probe'}\n")
    job.chmod(0o755)
    c = conf(tmp_path / "c.conf", "[job]\nmatch = job\napple_family_max = off\n[probe]\nmatch = probe\napple_family_max = auto\n")
    return job, dict(VZCAPS_CONFIG=c, PATH=f"{shims}:{tmp_path / 'bin'}:/usr/bin:/bin", **M2)


@LINUX_ONLY
def test_the_gate_reports_the_section_it_judged_for_a_script_whose_interpreter_is_a_shim(tmp_path):
    """check --strict --json passes (verdict "unlocked": the shim starts probe under [probe], as
    the job does: Apple8) yet reports the script's section: profile "job", state "off",
    apple_family_max null; the text form says "effect stock (off)" above an exit status of 0."""
    job, env = shim_as_interpreter(tmp_path)
    log = logs_dir(tmp_path)
    ran = subprocess.run([str(job)], env=clean_env(VZCAPS_LOG_FILE=log, **env), capture_output=True, text=True, timeout=60)
    assert "family 1008 1" in ran.stdout and "profile [probe]" in ran.stderr, ran.stderr  # the job: [probe], Apple8
    g = subprocess.run([VZ, "check", "--strict", "--json", "--exe", str(job)], env=clean_env(**env), capture_output=True,
                       text=True, timeout=60)
    d = json.loads(g.stdout)
    assert (g.returncode, d["verdict"]) == (0, "unlocked"), g.stderr
    assert (d["profile"], d["state"], d["apple_family_max"]) == ("probe", "enabled", 1008), d


@LINUX_ONLY
def test_a_launch_agent_runs_a_script_under_the_section_run_gives_it(tmp_path):
    """vzcaps run -- ./s hands the script's name to the library (VZCAPS_PROGRAM), so its process is
    configured under [s] and hooked; vzcaps launchd -- ./s writes a plist without it, so the agent's
    process (the interpreter, probe) finds no section and runs stock, with no word said."""
    s = tmp_path / "s"
    s.write_text(f"#!{BUILD / 'probe'}\n")
    s.chmod(0o755)
    c = conf(tmp_path / "c.conf", "[s]\nmatch = s\napple_family_max = 1007\n")
    env = clean_env(HOME=str(tmp_path), VZCAPS_CONFIG=c)
    by_run = subprocess.run([VZ, "run", "--", str(s)], env=env, capture_output=True, text=True, timeout=60)
    assert "family 1007 1" in by_run.stdout, by_run.stderr
    p = subprocess.run([VZ, "launchd", "--label", "a.b", "--", str(s)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    plist = plistlib.loads(p.stdout.encode())
    agent = subprocess.run(plist["ProgramArguments"], env=dict(plist["EnvironmentVariables"], HOME=str(tmp_path)),
                           capture_output=True, text=True, timeout=60)
    assert "family 1007 1" in agent.stdout, (plist["EnvironmentVariables"], agent.stdout, agent.stderr)


@LINUX_ONLY
def test_a_link_to_the_library_preloaded_by_a_bare_name_leaves_children_stock(tmp_path):
    """LD_PRELOAD=vz.so (a link to libvzcaps.so, found through LD_LIBRARY_PATH): the child of a
    hooked probe keeps the preload entry and, from the config file its HOME holds, is hooked too,
    where with LD_PRELOAD naming the same link by its path it starts stock, as children do by
    default (issue 45: the library known by what it is, everywhere)."""
    home = tmp_path / "home"
    (home / ".config" / "vzcaps").mkdir(parents=True)
    conf(home / ".config" / "vzcaps" / "vzcaps.conf", "[probe]\nmatch = probe\napple_family_max = 1008\n")
    (tmp_path / "vz.so").symlink_to(BUILD / "libvzcaps.so")
    for preload in (str(tmp_path / "vz.so"), "vz.so"):
        p = subprocess.run([str(BUILD / "probe"), "--spawn", str(BUILD / "probe")],
                           env=clean_env(HOME=str(home), LD_LIBRARY_PATH=str(tmp_path), LD_PRELOAD=preload),
                           capture_output=True, text=True, timeout=60)
        assert [line for line in p.stdout.splitlines() if line.startswith("family 1007")] == ["family 1007 1", "family 1007 0"], \
            (preload, p.stdout)


@LINUX_ONLY
def test_a_torn_stock_run_after_another_torn_record_still_fails(tmp_path):
    """Two records torn by RLIMIT_FSIZE in a row, then a whole one, all on one line: callers'
    hooked record cut after its event, then probe's left_stock record cut after its event, then a
    hooked probe run (with its unlocked record on the next line). stats reads the whole one, and
    of the cut part before it only the first record (callers'): probe's stock run is never seen,
    and --require probe passes "unlocked in every run: probe (1)". One torn record alone is
    caught (tests/cli/test_stats_proof.py); two in a row are not."""
    import resource
    log = logs_dir(tmp_path)
    log.write_text("")
    log.chmod(0o600)

    def head(program, event):
        path = os.path.realpath(BUILD / program)
        return len(f'{{"v":1,"time":1800000000,"pid":12345,"program":"{program}","path":"{path}","event":"{event}",') + 5

    def run(program, limit=None, **env):
        def cap():
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        p = subprocess.run([str(BUILD / program)], env=clean_env(LD_PRELOAD=BUILD / "libvzcaps.so", VZCAPS_LOG_FILE=log, **env),
                           capture_output=True, text=True, timeout=60, preexec_fn=cap)
        assert p.returncode == 0, p.stderr

    a = head("callers", "hooked")
    run("callers", limit=a, VZCAPS_APPLE_FAMILY_MAX="auto", **M2)
    b = a + head("probe", "left_stock")
    run("probe", limit=b, VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9")  # no chip the table knows: left stock
    run("probe", VZCAPS_APPLE_FAMILY_MAX="auto", **M2)
    first = log.read_bytes().split(b"\n")[0]
    assert first.count(b'{"v":1') == 3 and b'"event":"left_stock"' in first, first  # cut, cut, whole
    r = require(log, "probe")
    assert r.returncode == 1, (r.stdout, r.stderr)


ROTATE_WHILE_READ = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
/* Another writer's rotation (LOG renamed to LOG.1, a new LOG begun with its own record), made
 * while vzcaps stats reads LOG.1: at its first read of the LOG.1 it opened to read. */
static int old_fd = -1, dir_fd = -1;
int openat(int dirfd, const char *name, int flags, ...)
{
    static int (*real)(int, const char *, int, ...);
    static int n_old;
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    if (!real)
        real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    int fd = real(dirfd, name, flags, mode);
    if (fd >= 0 && strcmp(name, "usage.log.1") == 0 && ++n_old == 2)
        old_fd = fd, dir_fd = dirfd;
    return fd;
}
ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (fd == old_fd) {
        old_fd = -1;
        renameat(dir_fd, "usage.log", dir_fd, "usage.log.1");
        int w = openat(dir_fd, "usage.log", O_WRONLY | O_CREAT | O_EXCL, 0600);
        const char *r = "{\"v\":1,\"time\":1800000100,\"pid\":77,\"program\":\"other\",\"path\":\"/x/other\","
                        "\"event\":\"hooked\",\"class\":\"C\",\"family\":1008,\"reason\":\"\",\"no_raise\":\"\"}\n";
        if (w >= 0 && write(w, r, strlen(r)) >= 0)
            close(w);
    }
    return real(fd, buf, n);
}
'''


@LINUX_ONLY
def test_a_rotation_while_the_proof_reads_never_lets_a_stock_run_pass(tmp_path):
    """LOG.1 holds the zero mark and a run of probe with raised answers, LOG a later run of probe
    left stock. Another writer rotates (LOG to LOG.1, a new LOG) while stats reads LOG.1: stats
    then reads the new LOG, never the file that holds the stock run, and --require probe passes
    "unlocked in every run: probe (1)". Without the rotation it fails, as it must."""
    need_tool("cc")
    (tmp_path / "rot.c").write_text(ROTATE_WHILE_READ)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "rot.so"), str(tmp_path / "rot.c"), "-ldl"], check=True,
                   capture_output=True)
    log = logs_dir(tmp_path)

    def rec(pid, event, **kw):
        d = dict(v=1, time=1800000000 + pid, pid=pid, program="probe", path="/x/probe", event=event, **{"class": "C"},
                 family=0 if event == "left_stock" else 1008, reason="r" if event == "left_stock" else "", **kw)
        return json.dumps(d, separators=(",", ":")) + "\n"
    old = ('{"v":1,"time":1800000000,"pid":5,"event":"zeroed"}\n' + rec(1, "hooked", no_raise="") +
           rec(1, "unlocked", image="libggml-metal.so", selector="supportsFamily:", stock=0, given=1007))
    for stolen in (False, True):
        (log.parent / "usage.log.1").write_text(old)
        log.write_text(rec(2, "left_stock"))
        for f in (log, log.parent / "usage.log.1"):
            f.chmod(0o600)
        env = clean_env(VZCAPS_LOG_FILE=log, **({"LD_PRELOAD": tmp_path / "rot.so"} if stolen else {}))
        r = subprocess.run([VZ, "stats", "--require", "probe"], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, (stolen, r.stdout, r.stderr)
