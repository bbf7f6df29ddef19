"""The command under hostile and careless input (issue: hardening): files that are not files,
bytes a terminal would interpret, environments no dict can express, argument lists longer
than any buffer, JSON that readers disagree on, and plists that must read back exactly."""
import ctypes
import json
import os
import plistlib
import resource
import shutil
import struct
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "macho"))
import machogen as mg  # noqa: E402

from conftest import BUILD, FIXTURES, clean_env  # noqa: E402

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

VZ = str(BUILD / "vzcaps")
TRUE = os.path.realpath("/bin/true")  # an absolute path with no link in it: launchd writes it as given
CONTROL = set(range(0x20)) - {0x0A} | {0x7F}


def vz(*args, env=None, timeout=10, **kw):
    return subprocess.run([VZ, *args], env=env or clean_env(), capture_output=True, timeout=timeout, **kw)


def no_control(b):
    return not (set(b) & CONTROL) and b"\xc2\x9b" not in b


# ---- rule 1: every file is opened without blocking and must be a regular file ----

@pytest.fixture
def fifo(tmp_path):
    f = tmp_path / "fifo"
    os.mkfifo(f)
    return f


def test_check_config_fifo(fifo):
    p = vz("check", "--config", str(fifo))
    assert p.returncode == 1 and f"{fifo}: not a regular file".encode() in p.stderr


def test_run_with_config_fifo(fifo):
    p = vz("run", "--", "true", env=clean_env(VZCAPS_CONFIG=str(fifo)))
    assert p.returncode == 125 and b"not a regular file" in p.stderr


def test_doctor_with_home_config_fifo(tmp_path):
    (tmp_path / ".config" / "vzcaps").mkdir(parents=True)
    os.mkfifo(tmp_path / ".config" / "vzcaps" / "vzcaps.conf")
    env = clean_env()
    env["HOME"] = str(tmp_path)
    p = vz("doctor", env=env)
    assert b"not a regular file" in p.stdout + p.stderr


def test_report_fifo(fifo):
    p = vz("report", "--stock", str(fifo), "--unlocked", str(FIXTURES / "unlocked-guest.json"))
    assert p.returncode == 1 and p.stderr == f"vzcaps report: {fifo}: not a regular file (a FIFO)\n".encode()


def test_inspect_fifo_and_app_with_fifo_plist(tmp_path, fifo):
    p = vz("inspect", str(fifo))
    assert p.returncode == 1 and b"not a regular file" in p.stderr
    app = tmp_path / "X.app" / "Contents"
    (app / "MacOS").mkdir(parents=True)
    os.mkfifo(app / "Info.plist")
    p = vz("inspect", str(tmp_path / "X.app"))
    assert p.returncode == 1 and b"Info.plist: not a regular file" in p.stderr


@pytest.mark.parametrize("kind", ["fifo", "dir", "noexec"])
def test_run_target_that_is_not_a_regular_executable_exits_126(tmp_path, kind):
    t = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(t)
        t.chmod(0o755)  # executable, so only reading it first could hang
    elif kind == "dir":
        t.mkdir()
    else:
        t.write_text("#!/bin/sh\necho hi\n")
        t.chmod(0o644)
    p = vz("run", "--family", "1007", "--", str(t), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 126, p.stderr
    assert p.stderr.count(b"\n") == 1 and b"cannot run" in p.stderr


# ---- rule 3: human-readable output escapes; --json is valid UTF-8 ----

def test_check_text_escapes_values():
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="\x1b[2J\x07")
    p = vz("check", env=env)
    assert p.returncode == 1 and no_control(p.stdout) and no_control(p.stderr)
    assert b"\\x1b[2J\\x07" in p.stderr
    p = vz("check", "--chip", "Apple \x1b]0;x\x07 M9", "--json")
    json.loads(p.stdout.decode("utf-8"))


def test_report_escapes_build_commit_and_json_stays_valid(tmp_path):
    runs = json.loads((FIXTURES / "stock-guest.json").read_text())
    runs[0]["build_commit"] = "\u001b[31mred\u0007"
    runs[0]["model_type"] = "m\u009bodel"
    f = tmp_path / "s.json"
    f.write_text(json.dumps(runs))
    p = vz("report", "--stock", str(f), "--unlocked", str(FIXTURES / "unlocked-guest.json"))
    assert p.returncode == 0 and no_control(p.stdout), p.stdout
    assert b"\\x1b[31mred\\x07" in p.stdout
    p = vz("report", "--json", "--stock", str(f), "--unlocked", str(FIXTURES / "unlocked-guest.json"))
    assert json.loads(p.stdout.decode("utf-8"))["build_commit"] == "\u001b[31mred\u0007"


def test_inspect_escapes_library_names_and_json_is_utf8(tmp_path):
    data = mg.build(libs=[b"/usr/lib/libggml\x1b[2J\xff.dylib"])
    f = tmp_path / "weird\x1bname"
    f.write_bytes(data)
    p = vz("inspect", str(f))
    assert p.returncode == 0 and no_control(p.stdout), p.stdout
    p = vz("inspect", "--json", str(f))
    doc = json.loads(p.stdout.decode("utf-8"))
    assert doc["files"][0]["path"].endswith("weird\x1bname")
    assert any("\\xff" in lib for lib in doc["files"][0]["slices"][0]["libraries"])


def test_error_messages_are_one_escaped_line():
    p = vz("run", "--bogus\nvzcaps: forged", "--", "x")
    assert p.returncode == 2 and p.stderr.splitlines()[0] == b"vzcaps run: unknown option --bogus\\x0avzcaps: forged"


# ---- row 8 and rule 9: run never runs a workload silently stock ----

def run_env(extra=None, args=("--family", "1007", "--inherit"), target="/usr/bin/env", entries=None):
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    if extra:
        env.update(extra)
    return vz("run", *args, "--", target, env=env)


def test_long_existing_preload_value_is_kept_and_ours_added_once(tmp_path):
    other = str(BUILD / "libfakemetal.so")
    p = run_env({"LD_PRELOAD": ":".join([other] * 600)})
    assert p.returncode == 0, p.stderr
    pre = [l for l in p.stdout.decode().splitlines() if l.startswith("LD_PRELOAD=")]
    assert len(pre) == 1 and pre[0].count("libvzcaps.so") == 1 and pre[0].count("libfakemetal.so") == 600


def test_our_library_already_in_the_preload_list_is_not_loaded_twice():
    p = run_env({"LD_PRELOAD": f"{BUILD / 'libvzcaps.so'}:{BUILD / 'libfakemetal.so'}"})
    pre = [l for l in p.stdout.decode().splitlines() if l.startswith("LD_PRELOAD=")]
    assert pre == [f"LD_PRELOAD={BUILD / 'libfakemetal.so'}:{BUILD / 'libvzcaps.so'}"]


def test_every_variable_passes_through():
    extra = {f"MANY_{i}": str(i) for i in range(5000)}
    p = run_env(extra)
    assert p.returncode == 0
    out = p.stdout.decode().splitlines()
    assert sum(1 for l in out if l.startswith("MANY_")) == 5000


def test_duplicate_preload_entries_become_one():
    entries = [f"{k}={v}" for k, v in clean_env(VZCAPS_HOST_CHIP="Apple M2").items()]
    entries += [f"LD_PRELOAD={BUILD / 'libfakemetal.so'}", "LD_PRELOAD=/nonexistent/other.so"]
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        argv = [VZ, "run", "--family", "1007", "--inherit", "--", "/usr/bin/env"]
        arr = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
        env = (ctypes.c_char_p * (len(entries) + 1))(*[e.encode() for e in entries], None)
        ctypes.CDLL(None).execve(arr[0], arr, env)
        os._exit(127)
    os.close(out_w)
    os.close(err_w)
    out = os.fdopen(out_r, "rb").read()
    err = os.fdopen(err_r, "rb").read()
    os.waitpid(pid, 0)
    pre = [l for l in out.decode().splitlines() if l.startswith("LD_PRELOAD=")]
    assert pre == [f"LD_PRELOAD={BUILD / 'libfakemetal.so'}:{BUILD / 'libvzcaps.so'}"], err
    assert b"LD_PRELOAD was set 1 more time" in err


@pytest.mark.parametrize("library,needle", [("/etc/passwd", "not a shared library"), ("WRONGNAME", "its file name must be libvzcaps.so"), ("DIR", "not a regular file"),
                                            ("NOTLIB", "not a shared library"), ("EXE", "an ELF executable")])
def test_run_refuses_a_library_that_is_not_one(tmp_path, library, needle):
    if library == "DIR":
        library = str(tmp_path / "libvzcaps.so")
        os.mkdir(library)
    elif library == "NOTLIB":
        library = str(tmp_path / "libvzcaps.so")
        open(library, "w").write("hello")
    elif library == "WRONGNAME":
        library = str(tmp_path / "libother.so")
        shutil.copy(BUILD / "libvzcaps.so", library)
    elif library == "EXE":
        library = str(tmp_path / "libvzcaps.so")
        shutil.copy("/bin/true", library)
    p = vz("run", "--library", library, "--family", "1007", "--", "/bin/true", env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 125 and needle.encode() in p.stderr, p.stderr


@pytest.mark.parametrize("where,what", [("vz caps", "space"), ("vz:caps", "colon")])
def test_run_refuses_a_library_path_the_preload_variable_cannot_carry(tmp_path, where, what):
    """regression: from a checkout under a path with a space, run preloaded "/x/vz" and
    "caps/build/libvzcaps.so" (glibc splits LD_PRELOAD at spaces and colons), ld.so printed an
    error and the program ran stock, exit 0."""
    d = tmp_path / where
    d.mkdir()
    shutil.copy(BUILD / "libvzcaps.so", d / "libvzcaps.so")
    p = vz("run", "--library", str(d / "libvzcaps.so"), "--family", "1007", "--", str(BUILD / "probe"),
           env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 125 and p.stdout == b"", p.stderr
    assert f"its path holds a {what}, which LD_PRELOAD cannot carry".encode() in p.stderr, p.stderr
    assert len(p.stderr.splitlines()) == 1
    # the command beside such a library (a clone in that path) refuses its own library the same way
    shutil.copy(BUILD / "vzcaps", d / "vzcaps")
    p = subprocess.run([str(d / "vzcaps"), "run", "--family", "1007", "--", "/bin/true"], capture_output=True,
                       env=clean_env(VZCAPS_HOST_CHIP="Apple M2"), timeout=60)
    assert p.returncode == 125 and b"LD_PRELOAD cannot carry" in p.stderr, p.stderr


# ---- row 9 and rule 10: launchd writes plists that read back exactly ----

def launchd(tmp_path, *args, home=None, umask=None):
    env = clean_env()
    env["HOME"] = home or str(tmp_path)
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([VZ, "launchd", *args], env=env, capture_output=True, timeout=10, preexec_fn=pre)


def test_plist_round_trips_every_argument(tmp_path):
    args = [TRUE, "a\rb", "c\r\nd", "tab\there", "<&>\"'", "ünïcødé", "\U0001f600"]
    p = launchd(tmp_path, "--label", "com.example.x", "--family", "1007", "--", *args)
    assert p.returncode == 0, p.stderr
    assert plistlib.loads(p.stdout)["ProgramArguments"] == args


@pytest.mark.parametrize("arg,why", [(b"bad\xff", "invalid UTF-8"), ("\ufffe".encode(), "U+FFFE or U+FFFF"),
                                     (b"bell\x07", "a control character")])
def test_plist_refuses_what_xml_cannot_carry(tmp_path, arg, why):
    p = subprocess.run([VZ.encode(), b"launchd", b"--label", b"x", b"--", b"/bin/x", arg],
                       env={**clean_env(), "HOME": str(tmp_path)}, capture_output=True, timeout=10)
    assert p.returncode == 2 and why.encode() in p.stderr and p.stdout == b""


def test_home_xml_cannot_carry_is_refused(tmp_path):
    p = subprocess.run([VZ, "launchd", "--label", "x", "--", "/bin/x"], capture_output=True, timeout=10,
                       env={**{k.encode(): v.encode() for k, v in clean_env().items()}, b"HOME": b"/h\xffome"})
    assert p.returncode == 2 and b"HOME" in p.stderr


def test_install_does_not_overwrite_a_different_plist_and_writes_0644(tmp_path):
    agents = tmp_path / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    mine = agents / "com.example.x.plist"
    mine.write_text("hand-written")
    p = launchd(tmp_path, "--label", "com.example.x", "--install", "--family", "1007", "--", TRUE)
    assert p.returncode == 1 and b"exists and differs" in p.stderr and mine.read_text() == "hand-written"
    p = launchd(tmp_path, "--label", "com.example.x", "--install", "--force", "--family", "1007", "--", TRUE, umask=0)
    assert p.returncode == 0, p.stderr
    assert stat_mode(mine) == 0o644 and plistlib.loads(mine.read_bytes())["ProgramArguments"] == [TRUE]
    p = launchd(tmp_path, "--label", "com.example.x", "--install", "--family", "1007", "--", TRUE)
    assert p.returncode == 0  # the same job again: nothing to protect


def stat_mode(path):
    return os.stat(path).st_mode & 0o777


def test_long_home_is_used_whole(tmp_path):
    home = tmp_path
    while len(str(home)) < 1500:
        home = home / ("h" * 200)
    home.mkdir(parents=True)
    conf = tmp_path / "c.conf"
    conf.write_text("[default]\napple_family_max = 1007\n")
    env = clean_env(VZCAPS_CONFIG=str(conf))
    env["HOME"] = str(home)
    p = subprocess.run([VZ, "launchd", "--label", "com.example.x", "--install", "--", TRUE], env=env,
                       capture_output=True, timeout=10)
    assert p.returncode == 0, p.stderr
    plist = home / "Library" / "LaunchAgents" / "com.example.x.plist"
    assert plistlib.loads(plist.read_bytes())["StandardErrorPath"] == f"{home}/Library/Logs/vzcaps/com.example.x.err.log"


def test_remove_of_a_job_that_is_not_installed_fails(tmp_path):
    p = launchd(tmp_path, "--label", "com.example.none", "--remove")
    assert p.returncode == 1 and b"is not installed" in p.stderr and b"removed" not in p.stdout


# ---- row 10 and rule 11: report computes from what every reader agrees on ----

def fixture_text(name):
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("mutate,needle", [
    (lambda t: t.replace('"samples_ts": [', '"samples_ts": [1], "samples_ts": [', 1), 'duplicate key "samples_ts"'),
    (lambda t: t.replace("4786,", "1.7e308,", 1), "not a number of tokens per second"),
    (lambda t: t.replace("4786,", "1e999,", 1), "number out of range"),
    (lambda t: t.replace('"build_number": ', '"build_number": 1e300, "x": ', 1), "build_number is not a whole number"),
    (lambda t: t.replace('"build_commit": "', '"build_commit": "\udcff', 1), "invalid UTF-8 in string"),
])
def test_report_refuses_what_readers_disagree_on(tmp_path, mutate, needle):
    f = tmp_path / "u.json"
    f.write_bytes(mutate(fixture_text("unlocked-guest.json")).encode("utf-8", "surrogateescape"))
    p = vz("report", "--stock", str(FIXTURES / "stock-guest.json"), "--unlocked", str(f))
    assert p.returncode == 1 and needle.encode() in p.stderr and str(f).encode() in p.stderr, p.stderr
    assert p.stderr.count(b"\n") == 1


def test_report_memory_stays_bounded_on_a_huge_file(tmp_path):
    f = tmp_path / "big.json"
    with open(f, "w") as out:
        out.write("[" + ",".join(["1"] * 10_000_000) + "]")
    assert f.stat().st_size > 19_000_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = vz("report", "--stock", str(f), "--unlocked", str(f), timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert p.returncode == 1 and b"more than 1000000 values" in p.stderr
    assert max(after, before) < 400_000  # KiB: the file is 20 MB; the values budget caps the tree


# ---- row 11: no argument is ever dropped ----

def test_inspect_300_files_and_a_missing_one(tmp_path):
    f = tmp_path / "ok"
    f.write_bytes(mg.build())
    p = vz("inspect", *([str(f)] * 300), str(tmp_path / "missing"))
    assert p.returncode == 1 and b"missing" in p.stderr


def test_report_64_bundles_and_a_missing_one(tmp_path):
    run = json.loads(fixture_text("stock-guest.json"))[0]
    dirs = []
    for i in range(64):  # one distinct test each: 64 is the table's limit
        d = tmp_path / f"b{i}"
        d.mkdir()
        for role in ("stock", "unlocked"):
            (d / f"{role}.json").write_text(json.dumps([dict(run, n_prompt=100 + i, n_gen=0)]))
        dirs.append(str(d))
    assert vz("report", *dirs).returncode == 0
    p = vz("report", *dirs, str(tmp_path / "missing"))
    assert p.returncode == 1 and b"missing: cannot read the directory: No such file or directory" in p.stderr


def test_long_home_without_a_config_file_is_refused_not_cut(tmp_path):
    home = "/h" + "o" * 1500
    p = launchd(tmp_path, "--label", "com.example.x", "--install", "--", TRUE, home=home)
    assert p.returncode == 1 and b"too long" in p.stderr


# ---- row 12 and rule 12: inspect refuses by size and reports truncation ----

def test_inspect_refuses_a_huge_sparse_file_from_its_size(tmp_path):
    f = tmp_path / "sparse"
    with open(f, "wb") as out:
        out.truncate(4 << 30)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = vz("inspect", str(f), timeout=10)
    assert p.returncode == 1 and b"larger than 1024 MiB" in p.stderr
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss - before < 100_000


def test_every_cut_of_a_thin_mach_o_is_truncated(tmp_path):
    whole = mg.build(methnames=["supportsFamily:"], libs=["/usr/lib/libSystem.B.dylib"])
    f = tmp_path / "cut"
    for n in sorted(set(range(32, len(whole), 37)) | {len(whole) - 1, len(whole) // 2}):
        f.write_bytes(whole[:n])
        p = vz("inspect", str(f))
        assert p.returncode == 1 and p.stderr.count(b"\n") == 1, (n, p.stderr)
        assert b"truncated" in p.stderr or b"too short" in p.stderr, (n, p.stderr)
    f.write_bytes(whole)
    assert vz("inspect", str(f)).returncode == 0


def test_truncation_message_escapes_a_segment_name(tmp_path):
    """Found by fuzz_macho: a segment name with a newline, quoted raw in the reader's error."""
    data = bytearray(mg.build())
    struct.pack_into("<16s", data, 32 + 8, b"_\nINFO\x1b")  # the first load command: the __TEXT segment
    struct.pack_into("<QQ", data, 32 + 40, 1 << 40, 1 << 20)  # fileoff, filesize: past the end
    f = tmp_path / "weird"
    f.write_bytes(bytes(data))
    p = vz("inspect", str(f))
    assert p.returncode == 1 and p.stderr.count(b"\n") == 1 and b"truncated: segment _\\x0aINFO\\x1b" in p.stderr, p.stderr


def test_command_installed_under_a_long_path_never_cuts_its_own_path(tmp_path):
    # regression: readlink cut the command's own path at 1023 bytes, and the library was then
    # looked for in the directory the cut path named
    home = tmp_path.joinpath(*["i" * 200] * 5)
    home.mkdir(parents=True)
    cmd = home / ("v" * 60) / "vzcaps"
    cmd.parent.mkdir()
    shutil.copy(VZ, cmd)
    assert len(str(cmd)) > 1023
    cut_dir = str(cmd)[:1023].rsplit("/", 1)[0]
    decoy = tmp_path.joinpath(cut_dir) / "libvzcaps.so"
    shutil.copy(BUILD / "libvzcaps.so", decoy)
    p = subprocess.run([str(cmd), "doctor", "--json"], env=clean_env(), capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["library"] != str(decoy)
