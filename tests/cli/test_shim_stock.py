"""A shim never breaks a job (issue 33 row 2, item 2): when the configuration is refused or
unusable (no host chip to answer as, a malformed config file, no library), the shim starts the
real program stock, says why in the one line the library uses for it, and exits with the
program's own status. Exit 125 stays for an explicit `vzcaps run`, where a person asked."""
import subprocess

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the rig)

VZ = str(BUILD / "vzcaps")


@pytest.fixture
def fleet(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "probe").symlink_to(BUILD / "probe")
    src = tmp_path / "tool.c"  # a program, not a script: exit 7 and its arguments
    src.write_text('#include <stdio.h>\nint main(int c, char **v) { printf("tool"); for (int i = 1; i < c; i++) '
                   'printf(" %s", v[i]); printf("\\n"); return 7; }\n')
    subprocess.run(["gcc", "-o", str(real / "tool"), str(src)], check=True)
    shims = tmp_path / "shims"
    p = subprocess.run([VZ, "shims", "--dir", str(shims), "probe", "tool"], env=clean_env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return tmp_path, real, shims


def refused_env(tmp_path, real, shims, why):
    env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin")
    if why == "malformed config":
        c = tmp_path / "bad.conf"
        c.write_text("[p]\nmatch = *\napple_family_max = auto\nbogus = 1\n")
        env.update(VZCAPS_CONFIG=str(c), VZCAPS_HOST_CHIP="Apple M2 Pro")
    elif why == "bad family":
        env.update(VZCAPS_APPLE_FAMILY_MAX="1099", VZCAPS_HOST_CHIP="Apple M2 Pro")
    # "unknown chip": the rig's CPU brand names no Apple chip, so the implied --family auto is refused
    return env


@pytest.mark.parametrize("why", ["unknown chip", "malformed config", "bad family"])
def test_a_refused_configuration_starts_the_real_program_stock(fleet, why):
    tmp_path, real, shims = fleet
    env = refused_env(tmp_path, real, shims, why)
    p = subprocess.run(["sh", "-c", "probe"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [r for r in parse_probe(p.stdout) if "families" in r][0]["families"] == STOCK_FAMILIES
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vzcaps: left stock for probe: "), p.stderr
    # its exit status and arguments are the program's own
    t = subprocess.run(["sh", "-c", "tool 'a b' c"], env=env, capture_output=True, text=True, timeout=60)
    assert (t.returncode, t.stdout) == (7, "tool a b c\n")
    assert len(t.stderr.splitlines()) == 1 and t.stderr.startswith("vzcaps: left stock for tool: ")
    # an explicit vzcaps run still refuses
    r = subprocess.run([VZ, "run", "--", str(real / "probe")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 125 and "vzcaps run: not starting probe: " in r.stderr


def test_without_the_library_a_shim_starts_the_program_stock(fleet, tmp_path):
    _, real, _ = fleet
    # a copy of vzcaps with no libvzcaps.so beside it (nor in ../lib), and its own shim
    bare = tmp_path / "bare" / "bin"
    bare.mkdir(parents=True)
    (bare / "vzcaps").write_bytes((BUILD / "vzcaps").read_bytes())
    (bare / "vzcaps").chmod(0o755)
    own = tmp_path / "own-shims"
    assert subprocess.run([str(bare / "vzcaps"), "shims", "--dir", str(own), "tool"], env=clean_env(), capture_output=True,
                          timeout=60).returncode == 0
    env = clean_env(PATH=f"{own}:{real}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2 Pro")
    t = subprocess.run(["sh", "-c", "tool x"], env=env, capture_output=True, text=True, timeout=60)
    assert (t.returncode, t.stdout) == (7, "tool x\n")
    assert t.stderr.startswith("vzcaps: left stock for tool: libvzcaps.so not found (looked at ") and \
        len(t.stderr.splitlines()) == 1, t.stderr
    r = subprocess.run([str(bare / "vzcaps"), "run", "--", "tool"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 125


def shims_without_library(tmp_path):
    """A shim directory for tool made by a copy of vzcaps with no libvzcaps.so beside it."""
    bare = tmp_path / "bare" / "bin"
    bare.mkdir(parents=True)
    (bare / "vzcaps").write_bytes((BUILD / "vzcaps").read_bytes())
    (bare / "vzcaps").chmod(0o755)
    shims = tmp_path / "own-shims"
    assert subprocess.run([str(bare / "vzcaps"), "shims", "--dir", str(shims), "tool"], env=clean_env(),
                          capture_output=True, timeout=60).returncode == 0
    return shims


def stats_records(log):
    import json
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("why", ["unknown chip", "malformed config", "bad family", "no library"])
def test_a_shims_stock_start_is_in_the_stats_log(fleet, tmp_path, why):
    """The library records a process it leaves stock; a shim that starts its program stock
    itself (the library never loads) records it the same way, so vzcaps stats counts it."""
    import json
    import os
    _, real, shims = fleet
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "stats.jsonl"
    if why == "no library":
        shims = shims_without_library(tmp_path)
        env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2 Pro")
    else:
        env = refused_env(tmp_path, real, shims, why)
    env["VZCAPS_LOG_FILE"] = str(log)
    t = subprocess.run(["sh", "-c", "tool x"], env=env, capture_output=True, text=True, timeout=60)
    assert (t.returncode, t.stdout) == (7, "tool x\n"), t.stderr
    (r,) = stats_records(log)
    line = t.stderr.splitlines()[0]
    assert r["event"] == "left_stock" and r["program"] == "tool" and r["family"] == 0 and r["class"] == ""
    assert r["path"] == os.path.realpath(real / "tool")
    assert line == f"vzcaps: left stock for tool: {r['reason']}", (line, r["reason"])
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    s = subprocess.run([VZ, "stats", "--json"], env=env, capture_output=True, text=True, timeout=60)
    got = json.loads(s.stdout)
    assert (got["hooked"], got["left_stock"]) == (0, 1), s.stdout
    subprocess.run(["sh", "-c", "tool"], env=env, capture_output=True, timeout=60)  # each start, one record
    assert [x["event"] for x in stats_records(log)] == ["left_stock"] * 2


def test_a_shims_stock_start_writes_no_log_it_was_not_asked_for(fleet, tmp_path):
    tmp_path_, real, shims = fleet
    env = refused_env(tmp_path_, real, shims, "bad family")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    t = subprocess.run(["sh", "-c", "tool"], env=env, capture_output=True, text=True, timeout=60)
    assert t.returncode == 7
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def script_behind_a_shim(tmp_path, name, text):
    """tmp_path/real/NAME, a script of text, and a shim for it in tmp_path/shims."""
    real = tmp_path / "real"
    real.mkdir()
    (real / name).write_text(text)
    (real / name).chmod(0o755)
    shims = tmp_path / "shims"
    assert subprocess.run([VZ, "shims", "--dir", str(shims), name], env=clean_env(), capture_output=True,
                          timeout=60).returncode == 0
    return real, shims


def test_a_script_behind_a_refused_shim_gets_one_line_with_its_own_name(tmp_path):
    """A #!/bin/sh program behind a shim that starts it stock: one line, naming the program the
    job ran (it named sh, the interpreter, after the plan's SIP warning, which is moot for a
    program started without the library)."""
    real, shims = script_behind_a_shim(tmp_path, "myscript", '#!/bin/sh\necho hi "$@"\n')
    env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin")  # the rig names no chip: refused, stock
    t = subprocess.run(["sh", "-c", "myscript a"], env=env, capture_output=True, text=True, timeout=60)
    assert (t.returncode, t.stdout) == (0, "hi a\n")
    assert len(t.stderr.splitlines()) == 1 and t.stderr.startswith("vzcaps: left stock for myscript: "), t.stderr


@pytest.mark.parametrize("why", ["unknown chip", "no library"])
def test_log_quiet_silences_the_stock_line_as_it_silences_the_librarys(fleet, tmp_path, why):
    """VZCAPS_LOG=quiet (log = quiet): no stderr line. The library says none for a process it
    leaves stock; a shim's stock start said its line all the same. The record is still written."""
    import json
    _, real, shims = fleet
    if why == "no library":
        shims = shims_without_library(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "stats.jsonl"
    env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin", VZCAPS_LOG="quiet", VZCAPS_LOG_FILE=str(log))
    t = subprocess.run(["sh", "-c", "tool q"], env=env, capture_output=True, text=True, timeout=60)
    assert (t.returncode, t.stdout, t.stderr) == (7, "tool q\n", "")
    assert [json.loads(x)["event"] for x in log.read_text().splitlines()] == ["left_stock"]
    # the library itself, refusing the same way (auto with no chip known): a line without
    # quiet, none with it (it ran unconfigured before, where it is silent either way)
    lib = dict(LD_PRELOAD=str(BUILD / "libvzcaps.so"), VZCAPS_APPLE_FAMILY_MAX="auto")
    loud = subprocess.run([str(BUILD / "probe")], env=clean_env(**lib), capture_output=True, text=True, timeout=60)
    assert loud.returncode == 0 and loud.stderr.startswith("vzcaps: left stock for probe: ")
    p = subprocess.run([str(BUILD / "probe")], env=clean_env(**lib, VZCAPS_LOG="quiet"), capture_output=True, text=True,
                       timeout=60)
    assert (p.returncode, p.stderr) == (0, "")


def test_the_sigxfsz_of_a_stock_record_is_not_left_to_the_program(tmp_path):
    """RLIMIT_FSIZE under the log's size and SIGXFSZ blocked in the job (its mask is the
    program's): the record's write raised SIGXFSZ, which ignoring it for the write left pending
    across the exec, so the program was killed by it when it unblocked signals. It is taken."""
    import resource
    import signal
    real, shims = script_behind_a_shim(tmp_path, "pend", "#!/bin/sh\ngrep -E '^(SigPnd|ShdPnd)' /proc/$$/status\nexit 5\n")
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "stats.jsonl"
    log.write_bytes(b"x" * 5000 + b"\n")
    log.chmod(0o600)

    def job():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGXFSZ})

    env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin", VZCAPS_LOG_FILE=str(log))
    t = subprocess.run(["pend"], env=env, capture_output=True, text=True, timeout=60, preexec_fn=job)
    assert (t.returncode, t.stdout) == (5, "SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"), t.stderr
    assert len(t.stderr.splitlines()) == 1 and t.stderr.startswith("vzcaps: left stock for pend: ")
    assert log.stat().st_size == 5001


def test_a_shim_started_with_an_empty_argv0_starts_its_program_stock_where_run_would_refuse(fleet, tmp_path):
    # issue 39 row 14, the stock side: execve(shim, {"", ...}) ran vzcaps itself (exit 2, the
    # program never started); where vzcaps run would refuse, the shim's stock start runs it
    _, real, _ = fleet
    shims = shims_without_library(tmp_path)
    env = clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2 Pro")
    t = subprocess.run(["", "x"], executable=str(shims / "tool"), env=env, capture_output=True, text=True, timeout=60)
    assert (t.returncode, t.stdout) == (7, "tool x\n"), t.stderr
    assert t.stderr.startswith("vzcaps: left stock for tool: libvzcaps.so not found"), t.stderr
