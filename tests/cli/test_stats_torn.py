"""Records cut short one after another on one line (issue 44 item 3, round seven): each cut
record is read for what it still holds, not only the first; in a line over 1024 bytes, its start
and its last bytes are read together when nothing between them was dropped, and when bytes were
dropped, every NAME fails (any run may have been among them). Logs written by hand in the
contract's format, as test_stats.py writes them."""
import json

from test_stats import rec, unlocked, vz, write_log


def cut(line, after):
    """line cut right after the text `after` (a write cut short: no newline)"""
    return line[:line.index(after) + len(after)]


def stock_probe(pid):
    return cut(rec("probe", "left_stock", 0, "no chip", pid=pid), '"event":"left_stock","class":')


def hooked_probe(pid):
    return rec("probe", pid=pid) + "\n" + unlocked("probe", pid)


def require(log, *names):
    p = vz("--require", *names, VZCAPS_LOG_FILE=log)
    return p.returncode, p.stdout + p.stderr


def test_a_stock_run_cut_second_in_a_row_fails_the_proof(tmp_path):
    other = cut(rec("callers", pid=1), '"event":"hooked","class":')
    log = write_log(tmp_path / "usage.log", other + stock_probe(2) + hooked_probe(3))
    rc, said = require(log, "probe")
    assert rc == 1 and "left stock in 1 of 2 runs" in said, said
    log = write_log(tmp_path / "usage.log", other + cut(rec("callers", pid=4), '"event":"hooked","class":') + hooked_probe(3))
    rc, said = require(log, "probe")  # two cut runs of another program: probe's proof stands
    assert rc == 0, said


def test_a_stock_run_cut_inside_a_long_line_fails_the_proof(tmp_path):
    """cut(900 bytes), probe's cut stock run, then a whole hooked run: over 1024 bytes, nothing
    dropped between the line's first and last 1024 bytes; before, only the first cut one was read."""
    other = rec("callers", pid=1, **{"class": "C" * 880})[:900]  # cut in its class: a run of callers
    line = other + stock_probe(2) + hooked_probe(3).split("\n")[0]
    assert 1024 < len(line) <= 2048
    log = write_log(tmp_path / "usage.log", line, unlocked("probe", 3))
    rc, said = require(log, "probe")
    assert rc == 1 and "left stock in 1 of 2 runs" in said, said


def test_bytes_dropped_from_a_long_line_fail_every_name(tmp_path):
    """Over 2048 bytes: what lies between the line's first and last 1024 bytes is not kept, and a
    stock run of any program may be there; --require fails (said on stdout too), --json says so."""
    pad = rec("callers", pid=1, **{"class": "C" * 980})[:1000]
    line = pad + stock_probe(2) + pad + hooked_probe(3).split("\n")[0]
    assert len(line) > 2048 and line.index(stock_probe(2)) < len(line) - 1024
    log = write_log(tmp_path / "usage.log", line, unlocked("probe", 3))
    rc, said = require(log, "probe")
    assert rc == 1 and "fails" in said.splitlines()[0], said
    p = vz("--require", "probe", "--json", VZCAPS_LOG_FILE=log)
    assert p.returncode == 1 and json.loads(p.stdout)["required"][0]["unreadable"] >= 1, p.stdout
