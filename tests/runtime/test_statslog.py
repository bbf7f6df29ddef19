"""The library's side of `vzcaps stats` (issue 33 row 4, item 4), on the GNU-runtime rig: with
log_file (top level of the config file) or VZCAPS_LOG_FILE, each process appends one JSON line
when its first device is hooked or left stock; off by default (nothing written anywhere); never
through a link, into a FIFO, a directory others can write or a file of someone else's; bounded
(1 MiB, then LOG.1); nothing said and the host unharmed when it cannot be written."""
import json
import os
import stat
import subprocess

import pytest

from conftest import BUILD, clean_env, needs_root, require_built

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

LIB = str(BUILD / "libvzcaps.so")
PROBE = str(BUILD / "probe")
M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
M9 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9")
HOOKED = "vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport"
KEYS = ["v", "time", "pid", "program", "path", "event", "class", "family", "reason"]
MORE = {"hooked": ["no_raise"], "left_stock": [], "unlocked": ["image", "selector", "stock", "given"], "stock_caller": ["image"]}


def probe(conf, *args, cwd=None, executable=None, argv0=None, **kw):
    env = clean_env(LD_PRELOAD=LIB, **conf)
    p = subprocess.run([argv0 or PROBE, *args], executable=executable or PROBE, env=env, capture_output=True,
                       text=True, timeout=30, cwd=cwd, **kw)
    assert p.returncode == 0, p.stderr
    return p


def all_records(path):
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # whole lines only
    out = [json.loads(l) for l in lines[:-1]]
    for r, raw in zip(out, lines):
        assert list(r) == KEYS + MORE[r["event"]] and len(raw) + 1 <= 1024
    return out


def records(path):
    """The one record of each process (hooked or left stock), its effects left out."""
    return [r for r in all_records(path) if r["event"] in ("hooked", "left_stock")]


@pytest.fixture
def logdir(tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    return d


def test_three_hooked_and_one_left_stock_give_four_records(tmp_path, logdir):
    log = logdir / "stats.jsonl"
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(f"log_file = {log}\n[probe]\nmatch = probe\napple_family_max = auto\n")
    conf.chmod(0o644)
    pids = []
    p = probe(dict(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2"))  # the config file's key
    assert p.stderr.startswith(HOOKED)  # the one line as before
    pids.append(p)
    pids.append(probe(dict(M2, VZCAPS_LOG_FILE=str(log)), "--threads", "4"))  # the variable; many devices, one record
    pids.append(probe(dict(M2, VZCAPS_LOG_FILE=str(log), VZCAPS_LOG="quiet")))  # quiet: no line, still a record
    p = probe(dict(M9, VZCAPS_LOG_FILE=str(log)))
    assert "left stock" in p.stderr
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)), "--no-device")  # no device: nothing to say, no record
    probe(dict(VZCAPS_LOG_FILE=str(log)))  # nothing configured: no record
    got = records(log)
    assert [r["event"] for r in got] == ["hooked", "hooked", "hooked", "left_stock"]
    assert all(r["program"] == "probe" and r["path"] == os.path.realpath(PROBE) and r["v"] == 1 for r in got)
    assert all(r["class"] == "AppleParavirtDevice" for r in got)
    assert [r["family"] for r in got] == [1008, 1008, 1008, 0]
    assert [r["reason"] for r in got[:3]] == ["", "", ""]
    assert got[3]["reason"].startswith("VZCAPS_APPLE_FAMILY_MAX=auto needs a known host chip")
    assert len({r["pid"] for r in got}) == 4
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    # the variable wins over the file's key; VZCAPS_LOG_FILE= turns it off
    other = logdir / "other.jsonl"
    probe(dict(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_LOG_FILE=str(other)))
    assert len(records(other)) == 1 and len(records(log)) == 4
    probe(dict(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", VZCAPS_LOG_FILE=""))
    assert len(records(log)) == 4


def test_a_class_left_stock_is_a_left_stock_record(logdir):
    log = logdir / "s"
    probe(dict(M2, FAKEMETAL_CLASS="lacking", VZCAPS_MAX_THREADGROUP_MEMORY="32768", VZCAPS_LOG_FILE=str(log)))
    (r,) = records(log)
    assert (r["event"], r["family"]) == ("left_stock", 0)
    assert "left stock" in r["reason"] and r["class"]


def test_tilde_is_the_home_the_library_reads(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    probe(dict(M2, HOME=str(home), VZCAPS_LOG_FILE="~/stats.jsonl"))
    assert len(records(home / "stats.jsonl")) == 1


def tree(*dirs):
    return {str(p): p.stat().st_mtime_ns for d in dirs for p in [d, *d.rglob("*")]}


def test_without_log_file_nothing_is_written_anywhere(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    cfg = home / ".config" / "vzcaps"
    cfg.mkdir(parents=True)
    cwd.mkdir()
    (cfg / "vzcaps.conf").write_text("[probe]\nmatch = probe\napple_family_max = auto\n")
    before = tree(home, cwd)
    for conf in (dict(VZCAPS_HOST_CHIP="Apple M2"), dict(VZCAPS_HOST_CHIP="Apple M9")):
        p = probe(dict(conf, HOME=str(home)), cwd=str(cwd))
        assert p.stderr.startswith(("vzcaps: hooked", "vzcaps: left stock"))
    assert tree(home, cwd) == before


def test_never_through_a_link(logdir):
    target = logdir / "target"
    target.write_text("mine\n")
    target.chmod(0o600)
    link = logdir / "stats.jsonl"
    link.symlink_to(target)
    p = probe(dict(M2, VZCAPS_LOG_FILE=str(link)))
    assert p.stderr.startswith(HOOKED) and p.stderr.count("\n") == 1  # nothing said about the log
    assert target.read_text() == "mine\n" and link.is_symlink()
    # nor a hard link of another file's (two names)
    os.unlink(link)
    os.link(target, link)
    probe(dict(M2, VZCAPS_LOG_FILE=str(link)))
    assert target.read_text() == "mine\n"


def test_never_into_a_fifo(logdir):
    fifo = logdir / "stats.jsonl"
    os.mkfifo(fifo, 0o600)
    probe(dict(M2, VZCAPS_LOG_FILE=str(fifo)))  # no reader: does not block (the timeout would say)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader waiting: still not written
    try:
        probe(dict(M2, VZCAPS_LOG_FILE=str(fifo)))
        assert os.read(r, 100) == b""  # opened and closed by the library, nothing written
    finally:
        os.close(r)


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o702])
def test_never_in_a_directory_others_can_write(tmp_path, mode):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    probe(dict(M2, VZCAPS_LOG_FILE=str(d / "stats.jsonl")))
    assert list(d.iterdir()) == []
    d.chmod(0o755)  # owned by this user, not writable by others: used
    probe(dict(M2, VZCAPS_LOG_FILE=str(d / "stats.jsonl")))
    assert len(records(d / "stats.jsonl")) == 1


def test_never_a_directory_or_a_missing_directory(logdir):
    (logdir / "dir").mkdir()
    probe(dict(M2, VZCAPS_LOG_FILE=str(logdir / "dir")))
    assert list((logdir / "dir").iterdir()) == []
    probe(dict(M2, VZCAPS_LOG_FILE=str(logdir / "missing" / "s")))
    assert not (logdir / "missing").exists()


@needs_root("gives the log file to another user")
def test_never_a_file_of_someone_elses(logdir):
    log = logdir / "s"
    log.write_text("")
    os.chown(log, 65534, 65534)
    log.chmod(0o600)
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)))
    assert log.read_text() == ""
    d = logdir / "theirs"  # a directory of another user's
    d.mkdir(mode=0o755)
    os.chown(d, 65534, 65534)
    probe(dict(M2, VZCAPS_LOG_FILE=str(d / "s")))
    assert list(d.iterdir()) == []


def test_a_link_only_root_or_you_could_make_is_followed(tmp_path, logdir):
    """System links (/tmp -> private/tmp on macOS, /var/run -> /run) keep working: a link owned by
    root or this user, with one name, in a directory of theirs that others may not write (or
    that is sticky) is followed, its target walked (a relative one from the link's directory)."""
    sysdir = tmp_path / "sys"
    sysdir.mkdir(mode=0o755)
    (sysdir / "tmp").symlink_to("../logs")  # relative, as /tmp -> private/tmp
    (sysdir / "abs").symlink_to(logdir)
    (sysdir / "chain").symlink_to("abs")  # a link to a link
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / "mine").symlink_to(logdir)  # yours, in a sticky directory: no one else can replace it
    for i, via in enumerate(["tmp", "abs", "chain", "../sticky/mine", "tmp/../logs"]):
        log = sysdir / via / f"s{i}.jsonl"
        probe(dict(M2, VZCAPS_LOG_FILE=str(log)))
        assert len(records(logdir / f"s{i}.jsonl")) == 1, via
    sub = logdir / "sub"
    sub.mkdir(mode=0o700)
    probe(dict(M2, VZCAPS_LOG_FILE=str(sysdir / "abs" / "sub" / "deep.jsonl")))  # a link in the middle
    assert len(records(sub / "deep.jsonl")) == 1


@pytest.mark.parametrize("how", ["world-writable, not sticky", "loop", "to a file", "second name"])
def test_a_link_anyone_could_have_made_or_that_leads_nowhere_is_refused(tmp_path, logdir, how):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777 if how == "world-writable, not sticky" else 0o755)
    link = open_dir / "l"
    if how == "loop":
        (open_dir / "m").symlink_to("l")
        link.symlink_to("m")
    elif how == "to a file":
        (logdir / "f").write_text("")
        link.symlink_to(logdir / "f")
    else:
        link.symlink_to(logdir)
        if how == "second name":
            os.link(link, open_dir / "l2", follow_symlinks=False)
    before = sorted(p.name for p in logdir.iterdir())
    p = probe(dict(M2, VZCAPS_LOG_FILE=str(link / "s.jsonl")))
    assert p.stderr.startswith(HOOKED) and p.stderr.count("\n") == 1
    assert sorted(p.name for p in logdir.iterdir()) == before


@needs_root("a second user plants a link")
@pytest.mark.parametrize("where", ["last", "middle"])
def test_a_link_another_user_planted_in_tmp_does_not_lead_root_into_its_directories(tmp_path, logdir, where):
    """The directory was checked with stat(2), through links: a link another user planted in a
    sticky, world-writable directory (/tmp) sent root's VZCAPS_LOG_FILE into any directory of
    root's, where the log was created and rotated. Now the directory opened is the one checked,
    walked without following a link only another user could have made."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    roots = logdir / "sub"
    roots.mkdir(mode=0o700)
    full = filler()
    (roots / "s.jsonl").write_bytes(full)  # a full log of root's there: would have been rotated
    (roots / "s.jsonl").chmod(0o600)
    (shared / "planted").symlink_to(roots if where == "last" else logdir)
    os.lchown(shared / "planted", 65534, 65534)  # another user's link, as if they had made it
    assert (shared / "planted").lstat().st_uid == 65534
    target = shared / "planted" / ("s.jsonl" if where == "last" else "sub/s.jsonl")
    for _ in range(2):
        p = probe(dict(M2, VZCAPS_LOG_FILE=str(target)))
        assert p.stderr.startswith(HOOKED) and p.stderr.count("\n") == 1
    assert sorted(x.name for x in roots.iterdir()) == ["s.jsonl"] and (roots / "s.jsonl").read_bytes() == full
    # the same link made by root (only root could have put it there): followed
    os.unlink(shared / "planted")
    (shared / "planted").symlink_to(roots if where == "last" else logdir)
    probe(dict(M2, VZCAPS_LOG_FILE=str(target)))
    assert (roots / "s.jsonl.1").read_bytes().startswith(full) and len(records(roots / "s.jsonl")) == 1


@needs_root("a second user's link behind a link of root's")
def test_a_trusted_link_whose_target_goes_through_a_planted_one_is_refused(tmp_path, logdir):
    """A link of root's is walked, not handed to the kernel: a planted link in its target's path
    is refused as it would be in the log's own path."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "planted").symlink_to(logdir)
    os.lchown(shared / "planted", 65534, 65534)
    sysdir = tmp_path / "sys"
    sysdir.mkdir(mode=0o755)
    (sysdir / "root-link").symlink_to(shared / "planted")  # root's link, in root's directory
    probe(dict(M2, VZCAPS_LOG_FILE=str(sysdir / "root-link" / "s.jsonl")))
    assert list(logdir.iterdir()) == []
    os.lchown(shared / "planted", 0, 0)  # the same chain, every link root's: followed
    probe(dict(M2, VZCAPS_LOG_FILE=str(sysdir / "root-link" / "s.jsonl")))
    assert len(records(logdir / "s.jsonl")) == 1


@needs_root("gives a directory on the way to another user")
def test_a_link_in_another_users_directory_is_refused(tmp_path, logdir):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    (theirs / "l").symlink_to(logdir)  # root's link, but in a directory another user may change
    probe(dict(M2, VZCAPS_LOG_FILE=str(theirs / "l" / "s.jsonl")))
    assert list(logdir.iterdir()) == []


@needs_root("mounts a 16 KiB tmpfs")
def test_a_full_disk_loses_the_record_not_the_host(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", str(mnt)], check=True)
    try:
        fd = os.open(mnt / "fill", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"x" * 512):
                pass
        except OSError:
            pass
        os.close(fd)
        log = mnt / "stats.jsonl"
        for _ in range(2):
            p = probe(dict(M2, VZCAPS_LOG_FILE=str(log)))
            assert p.stderr.startswith(HOOKED) and p.stderr.count("\n") == 1
        assert not log.exists() or records(log) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def filler(size=1048576):
    """size bytes of 128-byte records (a rotation replaces a LOG.1 only when it begins with one)."""
    line = b'{"v":1,"time":1,"pid":1,"program":"%s","path":"","event":"hooked","class":"","family":1008,"reason":"","no_raise":""}\n'
    line = line % (b"f" * (128 - len(line % b"")))
    assert len(line) == 128 and size % 128 == 0
    return line * (size // 128)


def test_rotation_at_one_mebibyte(logdir):
    log, old = logdir / "stats.jsonl", logdir / "stats.jsonl.1"
    previous = filler(256)  # the previous rotation: records
    old.write_bytes(previous)
    old.chmod(0o600)
    full = filler()  # exactly 1 MiB
    log.write_bytes(full[:-128])
    log.chmod(0o600)
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)))  # under 1 MiB: appended
    assert log.stat().st_size > 1048576 - 128 and old.read_bytes() == previous
    first = records(log)[-1]["time"]
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)))  # 1 MiB or more: LOG.1 replaced, a new LOG
    assert old.read_bytes().startswith(full[:-128])
    (r,) = records(log)
    assert r["event"] == "hooked"
    log.write_bytes(full)  # exactly 1 MiB counts
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)))
    assert len(records(log)) == 1 and old.read_bytes().startswith(full)
    # its last line says what the LOG.1 it replaced held (no zero mark: every line): 8191 of filler,
    # the first probe's 2 records, and the 2 of filler its own rotation's line said it dropped
    said = json.loads(old.read_bytes()[len(full):])
    assert {k: said[k] for k in ("event", "zeroed", "lost", "until")} == dict(event="rotated", zeroed=0, lost=8195, until=first)


@pytest.mark.parametrize("kind", ["directory", "user's file", "empty file", "link", "fifo", "second name",
                                  "writable by group", "another user's"])
def test_rotation_replaces_only_a_log_1_of_ours(logdir, kind):
    """A LOG.1 that is not a regular file of ours (one name, mode not writable by others, first
    bytes a record's) is never replaced: a directory made every rotation fail and every later
    record was dropped; a user's own file was replaced by 1 MiB of log. LOG stays and is
    appended to past the limit: no record is lost."""
    if kind == "another user's" and os.geteuid() != 0:
        pytest.skip("needs root: gives LOG.1 to another user")
    log, old = logdir / "stats.jsonl", logdir / "stats.jsonl.1"
    notes = logdir / "notes"
    notes.write_bytes(filler(256))
    notes.chmod(0o600)
    if kind == "directory":
        old.mkdir()
        (old / "kept").write_text("mine\n")
    elif kind == "user's file":
        old.write_text("my own notes, no record in them\n")
    elif kind == "empty file":
        old.touch()
    elif kind == "link":
        old.symlink_to(notes)
    elif kind == "fifo":
        os.mkfifo(old, 0o600)
    elif kind == "second name":
        os.link(notes, old)
    else:
        old.write_bytes(filler(256))
        if kind == "writable by group":
            old.chmod(0o620)
        else:
            os.chown(old, 65534, 65534)
    if old.is_file() and not old.is_symlink() and kind != "writable by group":
        old.chmod(0o600)
    before = {p.name: (p.lstat().st_ino, p.read_bytes() if p.is_file() and kind != "fifo" else None)
              for p in [old, *logdir.rglob("*")] if p != log}
    full = filler()
    log.write_bytes(full)
    log.chmod(0o600)
    for _ in range(3):
        p = probe(dict(M2, VZCAPS_LOG_FILE=str(log)))
        assert p.stderr.startswith(HOOKED) and p.stderr.count("\n") == 1  # nothing said
    assert log.read_bytes().startswith(full)
    got = records(log)
    assert len(got) == 8192 + 3 and [r["program"] for r in got[-3:]] == ["probe"] * 3
    after = {p.name: (p.lstat().st_ino, p.read_bytes() if p.is_file() and kind != "fifo" else None)
             for p in [old, *logdir.rglob("*")] if p != log}
    assert after == before


def test_a_rotation_another_writer_holds_is_left_to_it(logdir):
    """Two writers that opened the same full LOG: only the one that takes the lock on it renames
    it. Without the lock, the second renamed the first one's new LOG over LOG.1 and the whole
    rotated log was lost. Here the test holds the lock: the library neither waits nor renames,
    and appends its records to the LOG the holder is renaming (issue 44: they were lost)."""
    import fcntl
    log, old = logdir / "stats.jsonl", logdir / "stats.jsonl.1"
    previous = filler(256)
    old.write_bytes(previous)
    old.chmod(0o600)
    full = filler()
    log.write_bytes(full)
    log.chmod(0o600)
    with open(log, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p = probe(dict(M2, VZCAPS_LOG_FILE=str(log)))
        assert p.stderr.startswith(HOOKED)
        assert log.read_bytes().startswith(full) and len(records(log)) == 8192 + 1 and old.read_bytes() == previous
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)))  # the lock released: rotated as usual
    assert old.read_bytes().startswith(full) and len(records(log)) == 1


def test_a_3000_byte_program_name(logdir):
    log = logdir / "s"
    name = "\u00e9" * 1500  # 3000 bytes of two-byte characters
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)), argv0=name)
    raw = log.read_bytes()
    assert all(len(line) < 1024 for line in raw.split(b"\n")) and raw.endswith(b"}\n")  # each record (all_records)
    (r,) = records(log)
    assert r["program"].endswith("...") and set(r["program"][:-3]) == {"\u00e9"}
    assert r["path"] == os.path.realpath(PROBE)  # the short fields stay whole
    # a name that is not UTF-8: \udcXX of each byte (surrogateescape), never the character U+00XX
    bad = os.fsdecode(b"p\xff\xfeq")
    probe(dict(M2, VZCAPS_LOG_FILE=str(log)), argv0=bad)
    assert b'"program":"p\\udcff\\udcfeq"' in log.read_bytes().split(b"\n")[2]  # after the first one's effect
    assert os.fsencode(records(log)[1]["program"]) == b"p\xff\xfeq"


def test_a_name_with_a_byte_that_is_not_utf8_is_not_merged_with_the_character(logdir):
    # p\xff was written as "p\u00ff", which reads back as the valid name "p\u00ff" (pÿ): stats
    # showed it as another name and counted it with a real pÿ
    log = logdir / "s"
    for name in (os.fsdecode(b"p\xff"), "p\u00ff", "p\u00ff"):
        probe(dict(M2, VZCAPS_LOG_FILE=str(log)), argv0=name)
    vz = [str(BUILD / "vzcaps"), "stats", "--log-file", str(log)]
    st = subprocess.run([*vz, "--json"], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert st.returncode == 0 and st.stderr == "", st.stderr
    progs = {p["program"]: p["hooked"] for p in json.loads(st.stdout)["programs"]}
    assert progs == {"p\\xff": 1, "p\u00ff": 2}  # the byte as the command's JSON escapes it: \xff as text
    text = subprocess.run(vz, env=clean_env(), capture_output=True, text=True, timeout=60).stdout
    rows = [line.split() for line in text.splitlines() if line.startswith("  ")]
    assert sorted((r[0], r[-1]) for r in rows) == [("p\\xff", "1"), ("p\u00ff", "2")]


def test_an_empty_argv0_is_named_by_its_executable_and_counted_by_stats(logdir):
    # execve(path, {"", NULL}, env): the record said "program":"", which vzcaps stats rejects
    log = logdir / "s"
    for chip in ("Apple M2", "Apple M9"):
        p = subprocess.run([""], executable=PROBE, env=clean_env(LD_PRELOAD=LIB, VZCAPS_LOG_FILE=str(log),
                                                                  VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP=chip),
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
    got = records(log)
    assert [(r["program"], r["event"]) for r in got] == [("probe", "hooked"), ("probe", "left_stock")]
    assert all(r["path"] == os.path.realpath(PROBE) for r in got)
    st = subprocess.run([str(BUILD / "vzcaps"), "stats", "--json", "--log-file", str(log)], env=clean_env(),
                        capture_output=True, text=True, timeout=60)
    assert st.returncode == 0 and st.stderr == "", st.stderr
    out = json.loads(st.stdout)
    assert (out["hooked"], out["left_stock"], out["skipped"]) == (1, 1, 0)



def test_an_empty_argv0_picks_the_section_of_its_executable(logdir, tmp_path):
    """execve(path, {"", NULL}, env) under a config section that matches the executable: the
    library picks that section by the executable's base name, as its record and a parent's
    inherit = matching decision name it (it matched no section: stock, silently, no record, so
    --require said "never ran")."""
    log = logdir / "s"
    conf = tmp_path / "vzcaps.conf"
    conf.write_text(f"log_file = {log}\n[probe]\nmatch = probe\napple_family_max = auto\n")
    conf.chmod(0o644)
    p = subprocess.run([""], executable=PROBE, env=clean_env(LD_PRELOAD=LIB, VZCAPS_CONFIG=str(conf),
                                                              VZCAPS_HOST_CHIP="Apple M2"),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "family 1008 1" in p.stdout and "profile [probe]" in p.stderr, p.stdout + p.stderr
    assert [(r["program"], r["event"]) for r in records(log)] == [("probe", "hooked")]
    st = subprocess.run([str(BUILD / "vzcaps"), "stats", "--require", "probe", "--log-file", str(log)], env=clean_env(),
                        capture_output=True, text=True, timeout=60)
    assert st.returncode == 0, st.stderr


ERRNO_CLIENT = r'''
#include <errno.h>
#include <stdio.h>
void *MTLCreateSystemDefaultDevice(void);
int main(void)
{
    int at_main = errno;
    errno = 1234;
    void *d = MTLCreateSystemDefaultDevice();
    printf("main %d after %d device %s\n", at_main, errno, d ? "yes" : "no");
    return 0;
}
'''


def test_errno_is_kept_whether_the_log_is_written_or_not(tmp_path, logdir):
    (tmp_path / "e.c").write_text(ERRNO_CLIENT)
    exe = tmp_path / "e"
    subprocess.run(["gcc", str(tmp_path / "e.c"), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"],
                   check=True)
    fifo = logdir / "fifo"
    os.mkfifo(fifo)
    for where in (logdir / "ok", fifo, logdir / "missing" / "x", tmp_path / "ro" / "x"):
        (tmp_path / "ro").mkdir(exist_ok=True, mode=0o500)
        for conf in (M2, M9):
            p = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=LIB, VZCAPS_LOG_FILE=str(where), **conf),
                               capture_output=True, text=True, timeout=30)
            assert p.stdout == "main 0 after 1234 device yes\n"
    assert [r["event"] for r in records(logdir / "ok")] == ["hooked", "left_stock"]


def test_records_from_many_processes_at_once_stay_whole(logdir):
    log = logdir / "s"
    env = clean_env(LD_PRELOAD=LIB, VZCAPS_LOG_FILE=str(log), **M2)
    procs = [subprocess.Popen([PROBE], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(24)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 24
    assert len(records(log)) == 24


def test_the_sanitized_library_writes_the_same(logdir):
    san = BUILD / "san" / "libvzcaps.so"
    require_built(san, how="the sanitized build")
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    log = logdir / "s"
    env = clean_env(LD_PRELOAD=f"{asan} {san}", VZCAPS_LOG_FILE=str(log), ASAN_OPTIONS="detect_leaks=0", **M2)
    p = subprocess.run([PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    name = "x" * 3000
    p = subprocess.run([name], executable=PROBE, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [r["event"] for r in records(log)] == ["hooked", "hooked"]


def test_a_fifo_with_a_waiting_reader_is_never_opened(logdir):
    # opening a FIFO for writing wakes a reader blocked in open() (and a device acts when
    # opened): the library opened whatever was at the name, then saw it was not a regular file
    fifo = logdir / "stats.jsonl"
    os.mkfifo(fifo, 0o600)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        probe(dict(M2, VZCAPS_LOG_FILE=str(fifo)))
        with pytest.raises(subprocess.TimeoutExpired):
            reader.wait(timeout=0.5)  # still waiting for a writer
    finally:
        try:  # wake the reader if it still waits (never block here if it does not)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        reader.wait(timeout=10)
    assert reader.stdout.read() == b""


def test_a_log_over_the_size_limit_does_not_kill_the_host(logdir):
    # RLIMIT_FSIZE below the log's size: the append fails with EFBIG and raises SIGXFSZ, which
    # is taken back (its default action kills the process)
    import resource
    log = logdir / "s"
    log.write_bytes(b"{}\n" * 2000)
    log.chmod(0o600)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    p = probe(dict(M2, VZCAPS_LOG_FILE=str(log)), preexec_fn=limit)
    assert p.stderr.startswith(HOOKED)
    assert log.stat().st_size == 6000


# ---- the records of effect (issue 44): what the answers did, on disk before the answer returns ----

CLIENT = r'''#include <objc/runtime.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
id MTLCreateSystemDefaultDevice(void);
int main(int argc, char **argv)
{
    id dev = MTLCreateSystemDefaultDevice();
    SEL sel = sel_registerName("supportsFamily:");
    BOOL (*ask)(id, SEL, long) = (BOOL (*)(id, SEL, long))class_getMethodImplementation(object_getClass(dev), sel);
    if (argc > 2 && strcmp(argv[1], "closefrom") == 0) { /* a daemon's start: every descriptor closed, its own opened */
        for (int fd = 3; fd < 256; fd++)
            close(fd);
        if (open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0600) != 3)
            return 3;
    }
    int yes = ask(dev, sel, 1008);
    if (argc > 1 && strcmp(argv[1], "kill") == 0)
        raise(SIGKILL); /* a job that kills its server right after its first answer */
    return yes ? 0 : 2;
}
'''


@pytest.fixture
def client(tmp_path):
    """build/client: asks supportsFamily: Apple8 from its own code ("kill": then SIGKILL;
    "closefrom FILE": first closes every descriptor and opens FILE at 3), in scope alone (callers =
    client), so the device's own ask at its creation raises nothing."""
    src, exe = tmp_path / "client.c", tmp_path / "client"
    src.write_text(CLIENT)
    subprocess.run(["gcc", "-std=gnu11", "-fgnu-runtime", str(src), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", "-lobjc",
                    f"-Wl,-rpath,{BUILD}"], check=True)
    conf = tmp_path / "client.conf"
    conf.write_text("[client]\nmatch = client\napple_family_max = auto\ncallers = client\n")
    conf.chmod(0o644)

    def run(log, *args):
        return subprocess.run([str(exe), *args], env=clean_env(LD_PRELOAD=LIB, VZCAPS_CONFIG=conf, VZCAPS_HOST_CHIP="Apple M2",
                                                              VZCAPS_LOG_FILE=log), capture_output=True, timeout=30)
    return run


def test_the_effect_record_survives_a_kill_right_after_the_raised_answer(logdir, client):
    log = logdir / "s"
    assert client(log, "kill").returncode == -9
    got = all_records(log)
    assert [(r["event"], r.get("image")) for r in got] == [("hooked", None), ("stock_caller", "libfakemetal.so"),
                                                             ("unlocked", "client")]
    assert (got[2]["selector"], got[2]["stock"], got[2]["given"], got[2]["pid"]) == ("supportsFamily:", 0, 1008, got[0]["pid"])


def test_a_descriptor_the_host_took_over_never_gets_a_record(logdir, client, tmp_path):
    """The hooked record's descriptor is kept for the effects; a host that closes every descriptor
    and opens a file of its own at that number never gets a record in it: the effect is written
    to the log, opened again."""
    log, mine = logdir / "s", tmp_path / "daemon.state"
    assert client(log, "closefrom", str(mine)).returncode == 0
    assert mine.read_bytes() == b"" and [r["event"] for r in all_records(log)][-1] == "unlocked"


@pytest.mark.parametrize("how", ["unshare"])
def test_a_later_process_with_the_scripts_pid_takes_no_name(tmp_path, how):
    """VZCAPS_PROGRAM=PID-PPID+NAME (a script's, under inherit) stays in its descendants; one that
    gets the script's pid after it exited has another parent and takes neither its name nor its
    section (it took both when the claim was the pid alone). In a new pid namespace the pids are
    known: the shell is 1, the probe it starts 2."""
    conf = tmp_path / "c.conf"
    conf.write_text("[tool]\nmatch = tool\napple_family_max = 1007\n[probe]\nmatch = probe\napple_family_max = 1008\n")
    conf.chmod(0o644)
    env = clean_env(LD_PRELOAD=LIB, VZCAPS_CONFIG=conf, VZCAPS_HOST_CHIP="Apple M2", VZCAPS_INHERIT="1")
    unshare = ["unshare", "-pf"] if os.geteuid() == 0 else ["unshare", "-rpf"]
    for value, name in (("2-1+tool", "tool"), ("2-77+tool", "probe"), ("2+tool", "probe")):
        p = subprocess.run([*unshare, "sh", "-c", f"VZCAPS_PROGRAM={value} {PROBE}; true"], env=env, capture_output=True,
                           text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        assert f"vzcaps: hooked AppleParavirtDevice for {name} via" in p.stderr, (value, p.stderr)
