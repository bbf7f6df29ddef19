"""The injected library never harms its host, whatever it is fed (issue: hardening). Each test
is a reproduction of one way the library could hang, kill or mislead the process it runs in,
or leak into a child; they ran against the library before the fix and failed there."""
import ctypes
import os
import select
import subprocess
import time

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, framework_python, parse_probe, require_built

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

LIB = BUILD / "libvzcaps.so"
M2 = {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}
CONTROL = set(range(0x20)) | {0x7F}


def run(env, *args, exe=None, timeout=10, **kw):
    env = dict(env)
    env.setdefault("LD_PRELOAD", str(LIB))
    return subprocess.run([str(exe or BUILD / "probe"), *args], env=env, capture_output=True, timeout=timeout, **kw)


def lines(stderr):
    return [l for l in stderr.decode("utf-8", "replace").splitlines() if l.startswith("vzcaps:")]


def families(p):
    return parse_probe(p.stdout.decode())[0]["families"]


def raw_run(argv, entries, timeout=10):
    """Runs argv with exactly the environment array entries (duplicates and entries without
    '=' included, which no dict-based API can express). Returns (rc, stdout, stderr)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            libc = ctypes.CDLL(None, use_errno=True)
            arr = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() if isinstance(a, str) else a for a in argv], None)
            env = (ctypes.c_char_p * (len(entries) + 1))(*[e.encode() if isinstance(e, str) else e for e in entries], None)
            libc.execve(arr[0], arr, env)
        finally:
            os._exit(127)
    os.close(out_w)
    os.close(err_w)
    chunks = {out_r: [], err_r: []}
    deadline = time.time() + timeout
    open_fds = [out_r, err_r]
    while open_fds and time.time() < deadline:
        ready, _, _ = select.select(open_fds, [], [], 0.5)
        for fd in ready:
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.remove(fd)
                os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def base_entries(**extra):
    env = clean_env(**extra)
    return [f"{k}={v}" for k, v in env.items()]


def env_of(stdout):
    """The environment /usr/bin/env printed after the probe's own lines."""
    return [l for l in stdout.decode("utf-8", "replace").splitlines() if "=" in l and not l.startswith(("family ", "env "))]


# ---- row 1: a FIFO never hangs the process ----

def test_fifo_as_config_file_does_not_hang(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    p = run(clean_env(VZCAPS_CONFIG=str(fifo)), timeout=5)
    assert p.returncode == 0 and families(p) == STOCK_FAMILIES
    assert lines(p.stderr) == [f"vzcaps: left stock for probe: {fifo}: not a regular file (named by VZCAPS_CONFIG)"]


def test_fifo_as_home_config_does_not_hang_an_unconfigured_process(tmp_path):
    (tmp_path / ".config" / "vzcaps").mkdir(parents=True)
    os.mkfifo(tmp_path / ".config" / "vzcaps" / "vzcaps.conf")
    env = clean_env()
    env["HOME"] = str(tmp_path)
    p = run(env, timeout=5)
    assert p.returncode == 0 and families(p) == STOCK_FAMILIES
    assert len(lines(p.stderr)) == 1 and "not a regular file" in lines(p.stderr)[0]


# ---- row 2: one event, one line; nothing a terminal interprets ----

@pytest.mark.parametrize("value", ["x\nvzcaps: configured for probe: forged", "\x1b[31mred\x1b[0m", "bell\x07", "cr\rover",
                                   "del\x7f", "c1\xc2\x9b", "bad\xff\xfeutf8"])
def test_log_line_escapes_control_bytes(value):
    env = clean_env()
    env = {k: v.encode() for k, v in env.items()}
    env[b"VZCAPS_APPLE_FAMILY_MAX"] = value.encode("latin-1") if "\xff" in value else value.encode()
    env[b"LD_PRELOAD"] = str(LIB).encode()
    p = subprocess.run([str(BUILD / "probe")], env=env, capture_output=True, timeout=10)
    assert p.returncode == 0
    assert p.stderr.count(b"\n") == 1 and p.stderr.startswith(b"vzcaps: left stock for probe: VZCAPS_APPLE_FAMILY_MAX")
    assert not (set(p.stderr[:-1]) & CONTROL), p.stderr
    assert b"\xc2\x9b" not in p.stderr and b"\xff" not in p.stderr
    assert b"\\x" in p.stderr


def test_config_file_value_with_escape_is_escaped(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_bytes(b"[default]\napple_family_max = \x1b]0;title\x07\n")
    p = run(clean_env(VZCAPS_CONFIG=str(conf)))
    assert p.stderr.count(b"\n") == 1 and not (set(p.stderr[:-1]) & CONTROL)
    assert b"\\x1b]0;title\\x07" in p.stderr


def test_backslash_is_escaped_so_the_form_is_unambiguous():
    p = run(clean_env(VZCAPS_APPLE_FAMILY_MAX="\\x1b"))
    assert b'"\\\\x1b"' in p.stderr


# ---- row 3: standard error closed, full or slow never harms the host ----

def test_closed_stderr_does_not_raise_sigpipe():
    r, w = os.pipe()
    os.close(r)
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="bogus", LD_PRELOAD=str(LIB))
    p = subprocess.run([str(BUILD / "probe")], env=env, stdout=subprocess.PIPE, stderr=w, timeout=10)
    os.close(w)
    assert p.returncode == 0  # stock exits 0; the library must not turn that into -13


def test_full_stderr_pipe_costs_at_most_a_moment():
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="bogus", LD_PRELOAD=str(LIB))
    start = time.monotonic()
    p = subprocess.run([str(BUILD / "probe")], env=env, stdout=subprocess.PIPE, stderr=w, timeout=10)
    elapsed = time.monotonic() - start
    os.close(w)
    os.close(r)
    assert p.returncode == 0 and elapsed < 5  # the write gives up after 200 ms; 5 s leaves room for a slow machine


# ---- row 4 and rule 6: children see nothing of vzcaps whenever the library strips ----

def spawn_env(extra_entries, preload=None):
    entries = base_entries() + extra_entries
    entries.append(f"LD_PRELOAD={preload or LIB}")
    return raw_run([str(BUILD / "probe"), "--spawn", "/usr/bin/env"], entries)


def assert_child_clean(child_env):
    ours = [e for e in child_env if e.startswith(("VZCAPS_", "TART_METAL_", "LUME_METAL_"))]
    assert ours == [], ours
    assert not any("libvzcaps" in e for e in child_env if e.startswith("LD_PRELOAD=")), child_env


def test_eighty_unknown_variables_refuse_and_all_are_stripped():
    extra = [f"VZCAPS_U{i}=1" for i in range(80)] + ["VZCAPS_HOST_CHIP=Apple M2", "VZCAPS_APPLE_FAMILY_MAX=auto"]
    rc, out, err = spawn_env(extra)
    assert rc == 0 and lines(err) and "unknown variable VZCAPS_U0" in lines(err)[0]
    assert_child_clean(env_of(out))


def test_enabled_process_strips_every_entry_of_ours():
    extra = [f"TART_METAL_X{i}=1" for i in range(70)] + ["LUME_METAL_APPLE_FAMILY_MAX=1006",
                                                          "VZCAPS_HOST_CHIP=Apple M2", "VZCAPS_APPLE_FAMILY_MAX=auto"]
    rc, out, err = spawn_env(extra)
    assert rc == 0 and lines(err)[0].startswith("vzcaps: hooked AppleParavirtDevice for probe via ")
    assert_child_clean(env_of(out))


def test_both_compatible_families_are_stripped():
    rc, out, err = spawn_env(["TART_METAL_APPLE_FAMILY_MAX=1007", "LUME_METAL_APPLE_FAMILY_MAX=1006"])
    assert rc == 0 and lines(err)[0].startswith("vzcaps: hooked AppleParavirtDevice for probe via ")
    assert_child_clean(env_of(out))


def test_preload_list_longer_than_8_kib_is_stripped():
    other = str(BUILD / "libfakemetal.so")
    long_list = ":".join([other] * 400) + f":{LIB}"
    assert len(long_list) > 8192
    rc, out, err = spawn_env(["VZCAPS_HOST_CHIP=Apple M2", "VZCAPS_APPLE_FAMILY_MAX=auto"], preload=long_list)
    assert rc == 0 and lines(err)[0].startswith("vzcaps: hooked AppleParavirtDevice for probe via ")
    child = env_of(out)
    assert_child_clean(child)
    assert [e for e in child if e.startswith("LD_PRELOAD=")] == ["LD_PRELOAD=" + ":".join([other] * 400)]


def test_duplicate_preload_entries_refuse_and_strip_both():
    entries = base_entries(VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto")
    entries += [f"LD_PRELOAD={BUILD / 'libfakemetal.so'}", f"LD_PRELOAD={LIB}"]
    rc, out, err = raw_run([str(BUILD / "probe"), "--spawn", "/usr/bin/env"], entries)
    assert rc == 0
    assert len(lines(err)) == 1 and "LD_PRELOAD is set twice" in lines(err)[0]
    assert_child_clean(env_of(out))


@pytest.mark.parametrize("dup", ["VZCAPS_APPLE_FAMILY_MAX=1009", "TART_METAL_APPLE_FAMILY_MAX=1009"])
def test_duplicate_variables_are_ambiguous_and_refused(dup):
    name = dup.split("=")[0]
    entries = base_entries(VZCAPS_HOST_CHIP="Apple M2") if name.startswith("VZCAPS") else base_entries()
    entries += [f"{name}=1007", dup, f"LD_PRELOAD={LIB}"]
    rc, out, err = raw_run([str(BUILD / "probe")], entries)
    assert rc == 0 and families_of(out) == STOCK_FAMILIES
    assert len(lines(err)) == 1 and f"{name} is set twice" in lines(err)[0]


def families_of(stdout):
    return parse_probe(stdout.decode())[0]["families"]


def test_entry_of_ours_without_equals_is_refused():
    entries = base_entries(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2") + ["VZCAPS_BROKEN", f"LD_PRELOAD={LIB}"]
    rc, out, err = raw_run([str(BUILD / "probe")], entries)
    assert rc == 0 and families_of(out) == STOCK_FAMILIES
    assert "VZCAPS_BROKEN has no '='" in lines(err)[0]


# ---- row 5: every VZCAPS_ name is ours, whatever its length ----

def test_long_unknown_name_refuses():
    name = "VZCAPS_" + "X" * 200
    p = run(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", **{name: "1"}))
    assert families(p) == STOCK_FAMILIES
    assert len(lines(p.stderr)) == 1 and "unknown variable VZCAPS_XXX" in lines(p.stderr)[0] and "(207 bytes)" in lines(p.stderr)[0]


def test_long_unknown_name_of_ours_refuses_beside_compatible_variables():
    p = run(clean_env(TART_METAL_APPLE_FAMILY_MAX="1009", **{"VZCAPS_" + "X" * 200: "1"}))
    assert families(p) == STOCK_FAMILIES and "unknown variable" in lines(p.stderr)[0]


# ---- row 6: paths are read whole or refused, never cut ----

def long_dir(root, total):
    """A directory under root whose path is total bytes long."""
    d = str(root)
    while len(d) < total - 120:
        d = os.path.join(d, "d" * min(100, total - 120 - len(d) - 1 if total - 120 - len(d) > 1 else 1))
    os.makedirs(d, exist_ok=True)
    return d


def test_config_path_of_521_bytes_is_read_whole(tmp_path):
    d = long_dir(tmp_path, 521)
    name = "c" * (521 - len(d) - 1)
    path = os.path.join(d, name)
    assert len(path) == 521
    with open(path, "w") as f:
        f.write("[default]\napple_family_max = 1007\n")
    with open(path[:511], "w") as f:  # what a cut at 511 bytes would have read
        f.write("[default]\napple_family_max = 1010\nunsafe_beyond_hardware = 1\n")
    p = run(clean_env(VZCAPS_CONFIG=path, VZCAPS_HOST_CHIP="Apple M2"))
    assert families(p) == {f: 1 if v or 1001 <= f <= 1007 else 0 for f, v in STOCK_FAMILIES.items()}


def test_config_path_over_the_limit_is_refused(tmp_path):
    path = "/tmp/" + "x" * 1100
    p = run(clean_env(VZCAPS_CONFIG=path, VZCAPS_HOST_CHIP="Apple M2"))
    assert families(p) == STOCK_FAMILIES
    assert "too long (limit 1024 bytes)" in lines(p.stderr)[0]


def test_long_home_is_refused_not_cut():
    env = clean_env()
    env["HOME"] = "/h" + "o" * 1100
    p = run(env)
    assert families(p) == STOCK_FAMILIES and "HOME" in lines(p.stderr)[0] and "too long" in lines(p.stderr)[0]


# ---- row 7 and rule 8: config files others can write are not trusted ----

@pytest.mark.parametrize("mode,owner,why", [(0o666, 0, "not trusted: writable by others (mode 0666): chmod go-w it"),
                                            (0o620, 0, "not trusted: writable by others (mode 0620): chmod go-w it"),
                                            (0o644, 1234, "not trusted: owned by uid 1234 (only you or root may own it)")])
def test_untrusted_config_file_is_refused(tmp_path, mode, owner, why):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    conf = tmp_path / "c.conf"
    conf.write_text("[default]\napple_family_max = 1010\nunsafe_beyond_hardware = 1\nmax_threadgroup_memory = 1048576\n")
    conf.chmod(mode)
    os.chown(conf, owner, 0)
    p = run(clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M1"))
    assert families(p) == STOCK_FAMILIES
    assert lines(p.stderr) == [f"vzcaps: left stock for probe: {conf}: {why} (named by VZCAPS_CONFIG)"]


# ---- rows 13 and 14, rule 7: the injection stops at the process it applies to ----

def test_non_matching_process_in_between_passes_the_injection_on(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("[llama]\nmatch = llama-*\napple_family_max = auto\n")
    os.symlink(BUILD / "probe", tmp_path / "llama-bench")
    env = clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=str(LIB))
    p = subprocess.run(["sh", "-c", f"{tmp_path / 'llama-bench'} --child; true"], env=env, capture_output=True, timeout=10)
    runs = parse_probe(p.stdout.decode())
    assert runs[0]["families"] == M2  # the shell in between passed it on
    assert runs[1]["families"] == STOCK_FAMILIES  # the llama-bench's own children start stock
    assert lines(p.stderr) == ["vzcaps: hooked AppleParavirtDevice for llama-bench via initGPUFamilySupport: profile [llama] "
                               "of %s; Apple families up to 1008 (Apple8): auto, the real family of Apple M2 (from "
                               "VZCAPS_HOST_CHIP)" % conf]


def test_framework_launcher_passes_the_injection_to_the_interpreter(tmp_path):
    py = framework_python(tmp_path)
    conf = tmp_path / "c.conf"
    conf.write_text("[python]\nmatch = python3*\napple_family_max = auto\n")
    env = clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=str(LIB))
    p = subprocess.run([str(py), "--child"], env=env, capture_output=True, timeout=10)
    runs = parse_probe(p.stdout.decode())
    assert runs[0]["families"] == M2, p.stderr  # the interpreter behind the launcher
    assert runs[1]["families"] == STOCK_FAMILIES  # its children start stock
    assert len(lines(p.stderr)) == 1
    assert lines(p.stderr)[0].startswith("vzcaps: hooked AppleParavirtDevice for python3.12 via initGPUFamilySupport: profile [python]")


def test_vzcaps_run_reaches_the_interpreter_behind_a_framework_launcher(tmp_path):
    py = framework_python(tmp_path)
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    p = subprocess.run([str(BUILD / "vzcaps"), "run", "--", str(py), "--child"], env=env, capture_output=True, timeout=10)
    runs = parse_probe(p.stdout.decode())
    assert runs[0]["families"] == M2, p.stderr
    assert runs[1]["families"] == STOCK_FAMILIES


def test_launcher_shape_without_the_interpreter_is_an_ordinary_program(tmp_path):
    (tmp_path / "bin").mkdir()
    os.symlink(BUILD / "probe", tmp_path / "bin" / "python3.12")  # bin/python3.12, but no Python.app next to it
    p = run(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"), "--child", exe=tmp_path / "bin" / "python3.12")
    runs = parse_probe(p.stdout.decode())
    assert runs[0]["families"] == M2 and runs[1]["families"] == STOCK_FAMILIES


def test_refused_configuration_strips_too():
    rc, out, err = spawn_env(["VZCAPS_APPLE_FAMILY_MAX=bogus"])
    assert "left stock" in lines(err)[0]
    assert_child_clean(env_of(out))


def test_unconfigured_process_passes_everything_on_unchanged():
    rc, out, err = spawn_env(["VZCAPS_HOST_CHIP=Apple M2"])
    assert err == b""
    child = env_of(out)
    assert "VZCAPS_HOST_CHIP=Apple M2" in child and f"LD_PRELOAD={LIB}" in child


def test_sanitized_library_on_hostile_environment():
    """The ASan/UBSan build of the library through the hostile cases above."""
    san = BUILD / "san" / "libvzcaps.so"
    require_built(san, how="the sanitized build")
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    extra = [f"VZCAPS_U{i}=1" for i in range(80)] + ["VZCAPS_" + "Y" * 300 + "=1", "VZCAPS_NOEQ",
                                                      "TART_METAL_APPLE_FAMILY_MAX=1009", "TART_METAL_APPLE_FAMILY_MAX=1",
                                                      "ASAN_OPTIONS=detect_leaks=0", "UBSAN_OPTIONS=halt_on_error=1"]
    # glibc's loader reads the last LD_PRELOAD entry; the library must still strip both
    entries = base_entries() + extra + [f"LD_PRELOAD={san}:" + "/x" * 5000, f"LD_PRELOAD={asan}:{san}"]
    rc, out, err = raw_run([str(BUILD / "probe"), "--spawn", "/usr/bin/env"], entries)
    assert rc == 0 and b"AddressSanitizer" not in err and b"runtime error" not in err, err[-2000:]
    assert_child_clean(env_of(out))
