"""vzcaps stats --require NAME... (issue 37 item 3, issue 44 item 2): the proof after a job, from the
records the library wrote inside each process. It passes only when every NAME ran and every run
of it (since --since) got a raised answer (an "unlocked" record after its "hooked" one); a NAME
that ran stock in any run, through the library or a shim's own stock start, that was hooked and
raised nothing, or never ran, fails, named in one line. The rig's cases start build/probe through
the library (LD_PRELOAD) with the log on, as a job does; the rest write the log by hand."""
import json
import subprocess

import pytest

from conftest import BUILD, LINUX_ONLY, clean_env
from test_stats import rec, ran, unlocked, write_log

VZ = str(BUILD / "vzcaps")


def vz(*args, **env):
    return subprocess.run([VZ, "stats", *args], env=clean_env(**env), capture_output=True, text=True, timeout=60)


def required(p):
    """The --json object's per-NAME entries, by NAME."""
    return {x["program"]: x for x in json.loads(p.stdout)["required"]}


# ---- on the rig: the library writes the log from inside each process ----

@pytest.fixture
def rig(tmp_path):
    """(run, env): run(chip) starts build/probe through the library with the log on."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(f"log_file = {logs / 'usage.log'}\n[probe]\nmatch = probe\napple_family_max = auto\n")
    conf.chmod(0o644)
    env = dict(VZCAPS_CONFIG=conf)

    def run(chip="Apple M2"):  # Apple M9: a chip the table lacks, so the library leaves probe stock
        p = subprocess.run([str(BUILD / "probe")], env=clean_env(LD_PRELOAD=BUILD / "libvzcaps.so", VZCAPS_HOST_CHIP=chip, **env),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    return run, env


@LINUX_ONLY  # the rig: LD_PRELOAD and the GNU-runtime stand-in Metal client
def test_a_job_whose_program_was_hooked_in_every_run_passes(rig):
    run, env = rig
    run(), run(), run()
    p = vz("--require", "probe", **env)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "vzcaps stats: --require: unlocked in every run: probe (3)\n" and p.stderr == ""
    j = vz("--require", "probe", "--json", **env)
    assert j.returncode == 0 and j.stderr == ""
    out = json.loads(j.stdout)
    assert out["verdict"] == "pass" and out["skipped"] == 0 and out["since"] is None and out["lost"] == 0
    (got,) = out["required"]
    runs = got.pop("runs")
    assert got == {"program": "probe", "matched": "program", "match": "probe", "ran": 3, "hooked": 3, "left_stock": 0,
                   "verdict": "unlocked", "reason": "unlocked in all 3 runs", "unlocked": 3, "unreadable": 0, "count": None}
    assert [(r["verdict"], r["reason"]) for r in runs] == [("unlocked", "")] * 3 and all(r["pid"] > 0 for r in runs)
    # by the executable's path: build/probe's real path is what the library records
    assert vz("--require", str(BUILD / "probe"), **env).returncode == 0


@LINUX_ONLY
def test_a_job_whose_program_ran_stock_once_fails_naming_it(rig):
    run, env = rig
    run(), run("Apple M9"), run()
    p = vz("--require", "probe", **env)
    assert p.returncode == 1 and p.stdout == ""
    (line,) = p.stderr.splitlines()
    assert line.startswith("vzcaps stats: --require probe: left stock in 1 of 3 runs: ") and "host chip" in line, line
    e = required(vz("--require", "probe", "--json", **env))["probe"]
    assert (e["ran"], e["hooked"], e["left_stock"], e["verdict"]) == (3, 2, 1, "stock")
    assert isinstance(e["ran"], int) and "host chip" in e["reason"]


@LINUX_ONLY
def test_a_program_that_never_ran_fails_and_so_does_the_job_with_it(rig):
    run, env = rig
    run()
    p = vz("--require", "probe", "llama-server", **env)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == ["vzcaps stats: --require llama-server: never ran: no record of llama-server in the log"]
    j = vz("--json", "--require", "probe", "llama-server", **env)
    assert j.returncode == 1
    out = json.loads(j.stdout)
    assert out["verdict"] == "fail"
    assert [(x["program"], x["ran"], x["verdict"]) for x in out["required"]] == [("probe", 1, "unlocked"),
                                                                                ("llama-server", 0, "not_run")]


@LINUX_ONLY
def test_a_shims_own_stock_start_counts_as_stock(tmp_path):
    """A shim that cannot load the library starts its program stock and writes the left_stock
    record itself: the proof fails for that program, as the gate's prediction could not."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "probe").symlink_to(BUILD / "probe")
    bare = tmp_path / "bare"  # a copy of the command with no library beside it
    bare.mkdir()
    (bare / "vzcaps").write_bytes((BUILD / "vzcaps").read_bytes())
    (bare / "vzcaps").chmod(0o755)
    shims = tmp_path / "shims"
    assert subprocess.run([str(bare / "vzcaps"), "shims", "--dir", str(shims), "probe"], env=clean_env(),
                          capture_output=True, timeout=60).returncode == 0
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    env = dict(VZCAPS_LOG_FILE=logs / "usage.log", VZCAPS_HOST_CHIP="Apple M2 Pro")
    p = subprocess.run(["sh", "-c", "probe"], env=clean_env(PATH=f"{shims}:{real}:/usr/bin:/bin", **env),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "vzcaps: left stock for probe: " in p.stderr, p.stderr
    r = vz("--require", "probe", **env)
    assert r.returncode == 1 and r.stderr.startswith("vzcaps stats: --require probe: left stock in 1 of 1 run: "), r.stderr
    assert "libvzcaps.so not found" in r.stderr


# ---- the log written by hand: the window, names, what is refused ----

JOB = [ran("probe", pid=1, t=1000), ran("probe", pid=2, t=2000), rec("tool", "left_stock", 0, "no host chip", pid=3, t=1500)]


def test_since_decides_which_runs_count(tmp_path):
    log = write_log(tmp_path / "usage.log", *JOB)
    assert vz("--require", "tool", "--since", "1600", VZCAPS_LOG_FILE=log).stderr == \
        "vzcaps stats: --require tool: never ran since 1970-01-01 00:26:40 UTC: no record of tool in the log\n"
    p = vz("--require", "probe", "--since", "1600", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and p.stdout == "vzcaps stats: --require: unlocked in every run since 1970-01-01 00:26:40 UTC: probe (1)\n"
    assert required(vz("--require", "probe", "--since", "1600", "--json", VZCAPS_LOG_FILE=log))["probe"]["ran"] == 1


def test_every_failing_name_is_one_line_and_a_passing_one_none(tmp_path):
    log = write_log(tmp_path / "usage.log", *JOB)
    p = vz("--require", "tool", "probe", "nothing", "tool", VZCAPS_LOG_FILE=log)  # a NAME twice is one NAME
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == ["vzcaps stats: --require tool: left stock in 1 of 1 run: no host chip",
                                     "vzcaps stats: --require nothing: never ran: no record of nothing in the log"]
    assert list(required(vz("--json", "--require", "tool", "probe", "tool", VZCAPS_LOG_FILE=log))) == ["tool", "probe"]


def test_a_name_with_a_slash_is_matched_by_the_real_path(tmp_path):
    exe = tmp_path / "opt" / "llama-server"
    exe.parent.mkdir()
    exe.write_text("")
    link = tmp_path / "bin-llama-server"
    link.symlink_to(exe)
    log = write_log(tmp_path / "usage.log", rec("llama-server", path=str(exe), pid=1),
                    unlocked("llama-server", 1, path=str(exe)),
                    rec("llama-server", "left_stock", 0, "off", path="/elsewhere/llama-server", pid=2))
    for name in (str(exe), str(link)):  # a link given leads to the file the record names
        p = vz("--require", name, VZCAPS_LOG_FILE=log)
        assert p.returncode == 0 and p.stdout.endswith(f": {name} (1)\n"), p.stdout + p.stderr
    e = required(vz("--json", "--require", str(link), VZCAPS_LOG_FILE=log))[str(link)]
    assert (e["matched"], e["match"]) == ("path", str(exe))
    assert vz("--require", "llama-server", VZCAPS_LOG_FILE=log).returncode == 1  # by name: both processes
    p = vz("--require", "/elsewhere/llama-server", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and "left stock in 1 of 1 run: off" in p.stderr
    p = vz("--require", "./nowhere/x", VZCAPS_LOG_FILE=log)
    assert p.stderr == "vzcaps stats: --require ./nowhere/x: never ran: no record of a process whose executable is " \
                       "./nowhere/x in the log\n"


def test_odd_names_are_escaped_in_the_lines(tmp_path):
    name = "esc\x1b[31mred"
    log = write_log(tmp_path / "usage.log", rec(name, "left_stock", 0, "bell \x07 here"))
    p = vz("--require", name, VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and "\x1b" not in p.stderr and "\x07" not in p.stderr and "esc\\x1b[31mred" in p.stderr
    assert p.stderr.count("\n") == 1
    log = write_log(tmp_path / "usage.log", ran(name))
    p = vz("--require", name, VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and "\x1b" not in p.stdout and p.stdout.count("\n") == 1


def test_a_torn_record_is_skipped_and_said(tmp_path):
    """A line that is no record (not one the library writes) is skipped and said, and proves nothing
    either way; the job still passes."""
    log = tmp_path / "usage.log"
    log.write_text(ran("probe", pid=1) + "\nnot a record\n" + ran("probe", pid=3) + "\n")
    p = vz("--require", "probe", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "vzcaps stats: --require: unlocked in every run: probe (2) (1 line skipped, named on standard error)\n"
    assert f"{log}:3: skipped: " in p.stderr


def test_no_log_or_no_record_fails(tmp_path):
    p = vz("--require", "probe")
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1 and "no log is configured" in p.stderr
    p = vz("--require", "probe", VZCAPS_LOG_FILE=tmp_path / "never.log")  # configured, not written yet
    assert p.returncode == 1 and p.stderr == "vzcaps stats: --require probe: never ran: no record of probe in the log\n"
    j = vz("--require", "probe", "--json", VZCAPS_LOG_FILE=tmp_path / "never.log")
    assert j.returncode == 1 and json.loads(j.stdout)["log_files"] == []
    link = tmp_path / "link.log"  # a log that cannot be read proves nothing: refused, nothing shown
    link.symlink_to(write_log(tmp_path / "real.log", *JOB))
    p = vz("--require", "probe", "--json", VZCAPS_LOG_FILE=link)
    assert p.returncode == 1 and p.stdout == "" and "a symbolic link" in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize("args,needle", [
    (["--require"], "--require needs at least one NAME"),
    (["probe"], "probe: a NAME is for --require"),
    (["--require", ""], "an empty argument names nothing"),
    (["--require", "probe", "--bogus"], "unknown option --bogus"),
])
def test_a_malformed_require_is_a_usage_error(tmp_path, args, needle):
    p = vz(*args, VZCAPS_LOG_FILE=write_log(tmp_path / "usage.log", *JOB))
    assert p.returncode == 2 and p.stdout == "" and needle in p.stderr, p.stderr


def test_a_name_after_the_end_of_options_is_a_name(tmp_path):
    log = write_log(tmp_path / "usage.log", ran("--json", pid=1))
    p = vz("--require", "--", "--json", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and p.stdout.endswith(": --json (1)\n"), p.stdout + p.stderr


def test_every_name_is_kept_past_any_table_size(tmp_path):
    names = [f"prog{i}" for i in range(3000)]
    log = tmp_path / "usage.log"
    with open(log, "w") as f:
        for i, n in enumerate(names):
            f.write(ran(n, pid=i) + "\n")
    p = vz("--require", *names, "--json", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0, p.stderr[:500]
    assert [x["hooked"] for x in json.loads(p.stdout)["required"]] == [1] * 3000


def test_a_log_where_the_library_does_not_write_proves_nothing(tmp_path):
    """A second user: a log in a directory others may write (/tmp-like) can hold anyone's
    records, all "hooked"; the library never writes there, so --require refuses it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    log = write_log(shared / "usage.log", rec("probe", pid=1))
    p = vz("--require", "probe", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert "the library does not write there, so its records there prove nothing" in p.stderr
    assert vz(VZCAPS_LOG_FILE=log).returncode == 0  # the table still shows what is there


def test_a_relative_log_file_is_read_from_the_current_directory(tmp_path):
    """--log-file is read as given, a relative path from the current directory (docs/commands.md):
    --require proves from it as from its absolute path (it refused it, blaming 'a link on the way
    to it that another user could have made')."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    write_log(logs / "usage.log", ran("probe", pid=1))
    p = subprocess.run([VZ, "stats", "--require", "probe", "--log-file", "usage.log"], env=clean_env(), cwd=logs,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == "vzcaps stats: --require: unlocked in every run: probe (1)\n"


def test_as_many_names_as_a_command_line_holds_take_no_time_and_each_counts_once(tmp_path):
    """100,000 NAMEs (each given twice, a job's list joined with itself) over 50,000 records: every
    NAME is counted and said once, in the order given. Each NAME was compared with every one
    before it and every record with every NAME: about 40 s of work (this test's timeout)."""
    names = [f"p{i}" for i in range(50000)]
    log = tmp_path / "usage.log"
    with open(log, "w") as f:
        for i, n in enumerate(reversed(names)):  # short records: 100,000 lines under the 16 MiB a log may be
            f.write(rec(n, pid=i, t=1, path=f"/b/{n}", **{"class": ""}) + "\n" +
                    unlocked(n, i, t=1, path=f"/b/{n}", image="", **{"class": ""}) + "\n")
    args = names + names[::-1]
    p = subprocess.run([VZ, "stats", "--require", *args, "--json"], env=clean_env(VZCAPS_LOG_FILE=log),
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr[:500]
    got = json.loads(p.stdout)["required"]
    assert [x["program"] for x in got] == names and all(x["hooked"] == 1 for x in got)
    p = subprocess.run([VZ, "stats", "--require", *args, "missing", "/b/p7"], env=clean_env(VZCAPS_LOG_FILE=log),
                       capture_output=True, text=True, timeout=20)  # a path NAME: by the record's path
    assert p.returncode == 1 and p.stderr.splitlines() == ["vzcaps stats: --require missing: never ran: no record of missing in the log"]


@pytest.mark.parametrize("mode", ["--require", "--zero"])
def test_a_log_file_that_names_a_directory_is_said_so(tmp_path, mode):
    """--log-file DIR/ (or /): one line saying it names a directory (it blamed a link another
    user could have made)."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    for given in (f"{logs}/", "/"):
        args = ["--require", "probe"] if mode == "--require" else ["--zero"]
        p = vz(*args, "--log-file", given)
        assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
        assert "ends in '/': a directory, not a log file" in p.stderr and "link" not in p.stderr, p.stderr
