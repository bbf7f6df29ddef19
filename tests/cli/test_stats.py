"""vzcaps stats (issue 33 item 4): which processes the library hooked and which it left stock, and
why, from the usage log (JSON Lines, one record a process; PATH.1 is the log before its last
rotation). The logs here are written by hand in the contract's format. Hostile cases: malformed,
over-long and unknown-version lines, a FIFO, a link and a directory at the path, a huge file,
odd program names (escapes, non-UTF-8 bytes as \\u00XX), --since in every form, no log at all."""
import json
import os
import subprocess
import time

import pytest

from conftest import BUILD, LINUX_ONLY, clean_env

VZ = str(BUILD / "vzcaps")


def vz(*args, env=None, **extra):
    return subprocess.run([VZ, "stats", *args], env=env or clean_env(**extra), capture_output=True, text=True,
                          timeout=60)


def rec(program="llama-server", event="hooked", family=1008, reason="", t=1764619200, pid=100, **over):
    r = {"v": 1, "time": t, "pid": pid, "program": program, "path": f"/usr/local/bin/{program}", "event": event,
         "class": "AGXG14GDevice" if event == "hooked" else "MTLDevice", "family": family, "reason": reason}
    r.update(over)
    return json.dumps(r, separators=(",", ":"))


def unlocked(program="llama-server", pid=100, t=1764619200, image="libggml-metal.dylib", **over):
    """The effect record the library writes after a hooked one: the first raised supportsFamily: answer."""
    return rec(program, "unlocked", 1008, "", t, pid, **dict(dict(image=image, selector="supportsFamily:", stock=0,
                                                                  given=1007), **over))


def ran(program="llama-server", pid=100, **over):
    """A run that got a raised answer, as the library records it: its hooked record, then its effect."""
    return "\n".join([rec(program, pid=pid, **over), unlocked(program, pid, **{k: v for k, v in over.items() if k == "t"})])


def write_log(path, *lines, end="\n"):
    path.write_text("".join(line + "\n" for line in lines[:-1]) + (lines[-1] + end if lines else ""))
    return path


JOB = [rec(pid=1), rec(pid=2), rec("llama-cli", family=1009, pid=3),
       rec("python3", "left_stock", 0, "no config section matches python3", pid=4)]


def stats_json(*args, **kw):
    p = vz("--json", *args, **kw)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p


def test_a_job_of_three_hooked_and_one_left_stock_is_exactly_that(tmp_path):
    log = write_log(tmp_path / "usage.log", *JOB)
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["left_stock"], out["skipped"]) == (3, 1, 0)
    assert isinstance(out["hooked"], int) and isinstance(out["left_stock"], int)
    assert out["log_files"] == [str(log)] and out["configured_by"] == "VZCAPS_LOG_FILE"
    progs = {p["program"]: p for p in out["programs"]}
    assert progs["llama-server"]["hooked"] == 2 and progs["llama-server"]["families"] == [
        {"family": 1008, "name": "Apple8", "processes": 2}]
    assert progs["llama-cli"]["families"][0]["family"] == 1009
    assert progs["python3"] == {"program": "python3", "hooked": 0, "left_stock": 1, "families": []}
    assert out["left_stock_reasons"] == [{"program": "python3", "reason": "no config section matches python3",
                                          "processes": 1}]
    assert p.stderr == ""
    text = vz(VZCAPS_LOG_FILE=log)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert "hooked: 3 processes" in lines and "left stock: 1 process" in lines and "skipped: 0 lines" in lines
    assert any(line.split()[:3] == ["llama-server", "Apple8", "(1008)"] and line.split()[-1] == "2" for line in lines)
    assert any(line.split()[:2] == ["python3", "1"] and line.endswith("no config section matches python3")
               for line in lines)


def test_the_log_is_found_as_the_library_finds_it(tmp_path):
    log = write_log(tmp_path / "from-config.log", *JOB[:1])
    other = write_log(tmp_path / "from-env.log", *JOB)
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(f"# top level\nlog_file = {log}   # the usage log\n\n[default]\napple_family_max = auto\n")
    out, _ = stats_json(VZCAPS_CONFIG=conf)
    assert out["hooked"] == 1 and out["configured_by"] == f"{conf}:2: log_file"
    xdg = tmp_path / "xdg"
    (xdg / "vzcaps").mkdir(parents=True)
    (xdg / "vzcaps" / "vzcaps.conf").write_text(conf.read_text())
    assert stats_json(XDG_CONFIG_HOME=xdg)[0]["hooked"] == 1
    assert stats_json(VZCAPS_CONFIG=conf, VZCAPS_LOG_FILE=other)[0]["hooked"] == 3  # the variable wins
    assert stats_json("--config", str(conf))[0]["hooked"] == 1
    assert stats_json("--log-file", str(other), VZCAPS_CONFIG=conf)[0]["hooked"] == 3  # the option wins
    inside = tmp_path / "inside.conf"  # a log_file inside a section: the file is refused, as the library refuses it
    inside.write_text(f"[default]\napple_family_max = auto\nlog_file = {log}\n")
    p = vz(VZCAPS_CONFIG=inside)
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1
    assert f"the config file {inside} is refused, so it names no log: {inside}:3: log_file inside [default]" in p.stderr
    # VZCAPS_LOG_FILE empty turns the file's log off, as in the library
    p = vz(VZCAPS_CONFIG=conf, VZCAPS_LOG_FILE="")
    assert p.returncode == 1 and "VZCAPS_LOG_FILE is empty: the log is off" in p.stderr
    # ~/ is the HOME of the environment, as the library expands it
    home = tmp_path / "home"
    home.mkdir()
    write_log(home / "vzcaps.log", *JOB)
    out, _ = stats_json(VZCAPS_LOG_FILE="~/vzcaps.log", HOME=home)
    assert out["hooked"] == 3 and out["log_file"] == str(home / "vzcaps.log")
    p = vz(VZCAPS_LOG_FILE="relative.log")
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "VZCAPS_LOG_FILE: not an absolute path or ~/PATH" in p.stderr


def test_no_log_configured_is_one_line_and_exit_1(tmp_path):
    p = vz()
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "no log is configured" in p.stderr and "VZCAPS_LOG_FILE" in p.stderr
    empty = tmp_path / "empty.conf"
    empty.write_text("log_file =\n")
    p = vz(VZCAPS_CONFIG=empty)
    assert p.returncode == 1 and p.stderr.count("\n") == 1
    assert f"the config file {empty} is refused, so it names no log: {empty}:1: log_file: " in p.stderr


def test_a_configured_log_not_written_yet_counts_nothing(tmp_path):
    out, p = stats_json(VZCAPS_LOG_FILE=tmp_path / "never.log")
    assert (out["hooked"], out["left_stock"], out["log_files"]) == (0, 0, [])
    text = vz(VZCAPS_LOG_FILE=tmp_path / "never.log")
    assert text.returncode == 0 and "not written yet" in text.stdout


@pytest.mark.parametrize("where", ["missing", "shared"])
def test_a_log_the_library_would_never_write_there_is_said_not_counted_as_empty(tmp_path, where):
    # the library writes only into an existing directory of this user's (or root's) that neither
    # group nor others may write; stats said "not written yet", exit 0, for ever
    d = tmp_path / "d"
    if where == "shared":
        d.mkdir()
        d.chmod(0o1777)
    p = vz("--json", VZCAPS_LOG_FILE=d / "vzcaps.log")
    assert p.returncode == 1 and p.stdout == "", p.stdout
    assert p.stderr.count("\n") == 1 and "the library will not write it there" in p.stderr, p.stderr
    assert {"missing": "the library makes none", "shared": "not trusted"}[where] in p.stderr
    if where == "shared":  # issue 45: "chmod go-w it" (harmful for /tmp) and mode 0777 for 1777
        private = f"{d}/vzcaps-{os.geteuid()}"
        assert p.stderr.endswith(f": not trusted: {d} may be written by others (mode 1777): log into a private directory "
                                 f"instead: mkdir -m 700 {private}, then VZCAPS_LOG_FILE={private}/vzcaps.log\n"), p.stderr
        os.mkdir(private, 0o700)  # the advice, followed: the library would write there
        assert vz("--json", VZCAPS_LOG_FILE=f"{private}/vzcaps.log").returncode == 0


def test_config_given_beside_the_variable_is_named_not_ignored(tmp_path):
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(f"log_file = {tmp_path / 'from-config.log'}\n")
    out, p = stats_json("--config", str(conf), VZCAPS_LOG_FILE=tmp_path / "from-var.log")
    assert out["configured_by"] == "VZCAPS_LOG_FILE"
    assert f"--config {conf}: not read for the log: VZCAPS_LOG_FILE is set" in p.stderr


def test_a_log_file_longer_than_a_path_is_refused_not_cut():
    p = vz("--log-file", "/" + "x" * 5000)
    assert p.returncode == 2 and p.stdout == "" and "--log-file is longer than" in p.stderr


def test_the_rotated_file_is_read_first_then_the_log(tmp_path):
    log = tmp_path / "usage.log"
    write_log(tmp_path / "usage.log.1", *JOB[:2])
    write_log(log, *JOB[2:])
    out, _ = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["left_stock"]) == (3, 1)
    assert out["log_files"] == [str(log) + ".1", str(log)]
    os.unlink(log)  # rotated just now: only PATH.1 is there
    out, _ = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["left_stock"], out["log_files"]) == (2, 0, [str(log) + ".1"])


def test_malformed_lines_are_counted_and_named_never_fatal(tmp_path):
    bad = ["not json", "[1,2]", '{"v":1}', rec(event="exploded"), rec(v=2), rec(family=1008.5), rec(pid=-1),
           rec(program=""), '{"v":1,"v":1}', "x" * 5000, rec()[:-5]]  # the last without its newline: cut
    log = write_log(tmp_path / "usage.log", JOB[0], *bad[:-1], JOB[3], bad[-1], end="")
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    # the last, cut after its event, is still a hooked run (issue 44: what a cut record still holds counts)
    assert (out["hooked"], out["left_stock"], out["skipped"]) == (2, 1, len(bad))
    errs = p.stderr.splitlines()
    assert len(errs) == len(bad) and errs[-1].endswith("(what it still holds is counted)"), errs[-1]
    for line_no, err in zip([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13], errs):
        assert err.startswith(f"vzcaps stats: {log}:{line_no}: skipped: "), err
    assert "unknown version 2" in errs[4] and "longer than 1024 bytes" in errs[9] and "without its newline" in errs[10]
    assert "not JSON" in errs[0] and "not a JSON object" in errs[1] and "unknown event" in errs[3]


def test_many_bad_lines_are_named_up_to_twenty_and_counted_all(tmp_path):
    log = write_log(tmp_path / "usage.log", *(["{"] * 500), JOB[0])
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert out["skipped"] == 500 and out["hooked"] == 1
    errs = p.stderr.splitlines()
    assert len(errs) == 21 and errs[-1] == f"vzcaps stats: {log}: 480 more lines skipped"


def test_a_line_of_exactly_1024_bytes_is_read_and_1025_is_not(tmp_path):
    pad = 1024 - len(rec(path=""))
    exact, over = rec(path="/" * pad), rec(path="/" * (pad + 1))
    assert len(exact) == 1024 and len(over) == 1025
    out, p = stats_json(VZCAPS_LOG_FILE=write_log(tmp_path / "usage.log", exact, over))
    # what the first 1024 bytes still hold is counted: its run (issue 44)
    assert (out["hooked"], out["skipped"]) == (2, 1) and ":2: skipped: longer than 1024 bytes (what it still holds" in p.stderr


@pytest.mark.parametrize("kind", ["fifo", "link", "dir", "dangling"])
def test_what_is_not_a_log_file_at_the_path_is_refused_in_one_line(tmp_path, kind):
    log = tmp_path / "usage.log"
    if kind == "fifo":
        os.mkfifo(log)
    elif kind == "link":
        log.symlink_to(write_log(tmp_path / "real.log", *JOB))
    elif kind == "dangling":
        log.symlink_to(tmp_path / "nowhere")
    else:
        log.mkdir()
    p = vz(VZCAPS_LOG_FILE=log)  # a FIFO never hangs it: the timeout would fail the test
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"vzcaps stats: {log}: ")
    assert {"fifo": "a FIFO", "link": "a symbolic link", "dangling": "a symbolic link", "dir": "a directory"}[kind] in p.stderr
    write_log(tmp_path / "usage.log.1", *JOB) if kind != "dir" else None
    if kind != "dir":  # the rotated file is fine, the log is not: still refused, nothing counted shown
        p = vz("--json", VZCAPS_LOG_FILE=log)
        assert p.returncode == 1 and p.stdout == ""


def test_a_huge_file_is_refused_from_its_size_and_a_big_one_is_streamed(tmp_path):
    huge = tmp_path / "huge.log"
    with open(huge, "wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)  # sparse: no time spent writing it
    p = vz(VZCAPS_LOG_FILE=huge)
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1
    assert "larger than 16 MiB" in p.stderr and str(huge) in p.stderr
    big = tmp_path / "big.log"  # two full rotations' worth, 2 MiB: every record counted
    line = rec()
    n = (2 * 1024 * 1024) // (len(line) + 1) + 1
    with open(big, "w") as f:
        for i in range(n):
            f.write(rec(program=f"prog{i % 5000}", pid=i) + "\n")
    out, _ = stats_json(VZCAPS_LOG_FILE=big)
    assert out["hooked"] == n and len(out["programs"]) == 5000  # no fixed table: every program kept


def test_odd_program_names_and_reasons(tmp_path):
    names = ["sp ace", "tab\there", "esc\x1b[31mred", "quote\"back\\slash", "\u00ffbyte", "new\nline", "日本語"]
    lines = [rec(program=n, pid=i) for i, n in enumerate(names)]
    lines.append(rec("weird", "left_stock", 0, "reason with \x07 bell and \u00e9", pid=99))
    log = write_log(tmp_path / "usage.log", *lines)
    out, _ = stats_json(VZCAPS_LOG_FILE=log)
    assert sorted(p["program"] for p in out["programs"]) == sorted(names + ["weird"])
    assert out["left_stock_reasons"][0]["reason"] == "reason with \x07 bell and \u00e9"
    p = vz(VZCAPS_LOG_FILE=log)
    assert p.returncode == 0
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout and "esc\\x1b[31mred" in p.stdout
    assert "new\\nline" in p.stdout or "new\\x0aline" in p.stdout
    assert len(p.stdout.splitlines()) == 2 + len(names) + 2 + 1  # one line each: no name breaks a line


def test_since_in_every_form(tmp_path):
    now = int(time.time())
    lines = [rec(t=1764619200 - 60, pid=1), rec(t=1764619200, pid=2), rec(t=now - 3 * 3600, pid=3),
             rec(t=now - 60, pid=4), rec("py", "left_stock", 0, "r", t=now - 10, pid=5)]
    log = write_log(tmp_path / "usage.log", *lines)
    cases = {"1764619200": 4, "2025-12-01T20:00:00Z": 4, "2025-12-01T20:00Z": 4, "2025-12-01": 5,
             "2h": 2, "30m": 2, "120s": 2, "5s": 0, "1d": 3, "0": 5}
    for since, want in cases.items():
        out, _ = stats_json("--since", since, VZCAPS_LOG_FILE=log)
        assert out["hooked"] + out["left_stock"] == want, since
        assert out["before_since"] == 5 - want and isinstance(out["since"], int), since
    out, _ = stats_json("--since", "2025-12-01T20:00:00Z", VZCAPS_LOG_FILE=log)
    assert out["since"] == 1764619200
    text = vz("--since", "1764619200", VZCAPS_LOG_FILE=log)
    # issue 39 row 20: the time as a person reads it, not Unix seconds
    assert "(since 2025-12-01 20:00:00 UTC; 1 earlier record left out)" in text.stdout


@pytest.mark.parametrize("bad", ["yesterday", "2h30m", "-5", "2026-13-01", "2026-02-30", "2026-12-01T25:00:00Z",
                                 "2026-12-01T20:00:00", "2026-12-01 20:00:00Z", "h", "99999999999999999d"])
def test_a_bad_since_is_one_line(tmp_path, bad):
    p = vz("--since", bad, VZCAPS_LOG_FILE=write_log(tmp_path / "usage.log", *JOB))
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert "--since" in p.stderr


def test_the_log_is_read_while_it_is_appended_to(tmp_path):
    log = write_log(tmp_path / "usage.log", *JOB)
    writer = subprocess.Popen(["sh", "-c", f"i=0; while [ $i -lt 5000 ]; do echo '{rec(pid=7)}' >> '{log}'; i=$((i+1)); done"])
    try:
        for _ in range(20):
            out, p = stats_json(VZCAPS_LOG_FILE=log)
            assert out["hooked"] >= 3 and out["left_stock"] == 1
    finally:
        writer.kill()
        writer.wait()


@LINUX_ONLY  # the rig: LD_PRELOAD and the GNU-runtime stand-in Metal client
def test_a_job_on_the_rig_three_hooked_and_one_left_stock_is_exactly_that(tmp_path):
    # the acceptance of issue 33: the library writes the log, vzcaps stats reads it
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "usage.log"
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(f"log_file = {log}\n[probe]\nmatch = probe\napple_family_max = auto\n")
    conf.chmod(0o644)
    lib, probe = str(BUILD / "libvzcaps.so"), str(BUILD / "probe")
    for chip in ("Apple M2", "Apple M2", "Apple M2", "Apple M9"):  # M9: a chip the table lacks, left stock
        p = subprocess.run([probe], env=clean_env(LD_PRELOAD=lib, VZCAPS_CONFIG=conf, VZCAPS_HOST_CHIP=chip),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    out, p = stats_json(VZCAPS_CONFIG=conf)
    assert (out["hooked"], out["left_stock"], out["skipped"]) == (3, 1, 0), p.stderr
    assert out["programs"] == [{"program": "probe", "hooked": 3, "left_stock": 1,
                                "families": [{"family": 1008, "name": "Apple8", "processes": 3}]}]
    assert out["left_stock_reasons"][0]["processes"] == 1 and "host chip" in out["left_stock_reasons"][0]["reason"]
    assert out["configured_by"] == f"{conf}:1: log_file" and out["log_files"] == [str(log)]


def test_a_record_appended_to_a_cut_one_is_still_counted(tmp_path):
    # hostile: a short write (a full disk) or a writer killed mid-write leaves a record without its
    # newline; the next process's record is appended to it, and the whole line was skipped, so
    # the cut record lost the next one too
    log = tmp_path / "usage.log"
    log.write_text(rec(pid=1) + "\n" + rec(pid=2)[:40] + rec("llama-cli", family=1009, pid=3) + "\n" + rec(pid=4) + "\n")
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["skipped"]) == (3, 1), p.stderr
    assert [x["program"] for x in out["programs"]] == ["llama-cli", "llama-server"]
    assert p.stderr.count("\n") == 1 and f"{log}:2: skipped: " in p.stderr and "cut short" in p.stderr, p.stderr


@pytest.mark.parametrize("kind", ["directory", "user's file", "link"])
def test_a_log_1_the_library_never_replaces_is_said_in_one_line_and_not_read(tmp_path, kind):
    # the library rotates LOG only over a LOG.1 of its own (a regular file of the log's owner's,
    # first bytes a record's); anything else stays, and LOG grows past 1 MiB. stats refused the
    # whole log for a directory there, and read a user's file as a log of skipped lines.
    log = write_log(tmp_path / "usage.log", *JOB)
    old = tmp_path / "usage.log.1"
    if kind == "directory":
        old.mkdir()
    elif kind == "user's file":
        write_log(old, "my notes", "no record in them")
    else:
        old.symlink_to(write_log(tmp_path / "real.log", *JOB))
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["left_stock"], out["skipped"], out["log_files"]) == (3, 1, 0, [str(log)])
    assert p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"vzcaps stats: {old}: not read: ") and f"mv {old} " in p.stderr
    assert f"keeps appending to {log} past 1 MiB" in p.stderr
    assert {"directory": "a directory", "user's file": "not a vzcaps record", "link": "a symbolic link"}[kind] in p.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: gives a link to another user")
def test_a_log_behind_a_link_another_user_planted_is_one_the_library_will_not_write(tmp_path):
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (shared / "planted").symlink_to(mine)
    os.lchown(shared / "planted", 65534, 65534)
    p = vz(VZCAPS_LOG_FILE=shared / "planted" / "vzcaps.log")
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1, p.stderr
    assert "the library will not write it there: a link on the way to it that another user could have made" in p.stderr
    os.lchown(shared / "planted", 0, 0)  # root's own link: followed, as the library follows it
    p = vz(VZCAPS_LOG_FILE=shared / "planted" / "vzcaps.log")
    assert p.returncode == 0 and "not written yet" in p.stdout, p.stderr


@pytest.mark.parametrize("cut", [100, 600, 1023])
def test_a_cut_record_and_a_whole_one_over_1024_bytes_together_count_the_whole_one(tmp_path, cut):
    # a torn record (no newline) and the next process's record on one line, longer than 1024
    # bytes together: the line was skipped whole as too long, and the whole record lost with it
    long = rec("llama-cli", family=1009, pid=3, path="/opt/" + "p" * 800)
    torn = rec(pid=2, path="/" * 2000)[:cut]
    assert len(long) < 1024 < len(torn) + len(long)
    log = tmp_path / "usage.log"
    log.write_text(rec(pid=1) + "\n" + torn + long + "\n" + rec(pid=4) + "\n")
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["skipped"]) == (3, 1), p.stderr
    assert [x["program"] for x in out["programs"]] == ["llama-cli", "llama-server"]
    assert p.stderr.count("\n") == 1 and f"{log}:2: skipped: a record cut short" in p.stderr, p.stderr
    # a line over 1024 bytes with no whole record at its end is still skipped as too long; what each
    # record cut short in it still holds is counted: llama-cli's, cut before its closing brace, is a run
    log.write_text(rec(pid=1) + "\n" + torn + long[:-1] + "\n")
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert (out["hooked"], out["skipped"]) == (2, 1) and ":2: skipped: longer than 1024 bytes" in p.stderr
    assert [x["program"] for x in out["programs"]] == ["llama-cli", "llama-server"]


def test_a_byte_that_is_not_utf8_is_read_back_as_that_byte_never_as_the_character(tmp_path):
    # the library writes such a byte \udcXX (surrogateescape); \u00ff is the character U+00FF
    lines = [rec(program="p\udcff", pid=1), rec(program="p\u00ff", pid=2), rec(program="p\udcff", pid=3),
             rec(program="q\udc41", pid=4), rec(program="r\ud800", pid=5)]  # not a byte escape; a lone high one
    log = write_log(tmp_path / "usage.log", *lines)
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert {x["program"]: x["hooked"] for x in out["programs"]} == {"p\\xff": 2, "p\u00ff": 1}
    assert out["skipped"] == 2 and p.stderr.count("unpaired surrogate") == 2, p.stderr
    text = vz(VZCAPS_LOG_FILE=log).stdout
    assert "p\\xff " in text and "p\u00ff " in text


def test_a_log_kept_past_the_limit_by_a_path1_the_library_never_replaces_is_read_whole(tmp_path):
    """With a directory at PATH.1 the library never rotates and keeps appending to PATH past
    1 MiB (docs/config.md), so PATH outgrows 16 MiB in time: it is still the library's log, counted
    as usual (it was refused as 'larger than 16 MiB: not a log the library wrote (it starts a new
    one at 1 MiB)', and --require failed the job)."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    log = logs / "usage.log"
    line = ran("probe", pid=1) + "\n"
    n = (17 * 1024 * 1024) // len(line) + 1
    log.write_text(line * n)
    log.chmod(0o600)
    (logs / "usage.log.1").mkdir()
    out, p = stats_json(VZCAPS_LOG_FILE=log)
    assert out["hooked"] == n and "larger than" not in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and "keeps appending to" in p.stderr  # the one line on PATH.1
    p = vz("--require", "probe", VZCAPS_LOG_FILE=log)
    assert p.returncode == 0 and p.stdout == f"vzcaps stats: --require: unlocked in every run: probe ({n})\n", p.stderr
