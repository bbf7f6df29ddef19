"""vzcaps doctor --bundle DIR: the first-run bundle a person attaches from a Mac (issue: first
Mac). On Linux: the same layout, the Mac-only parts marked, verdict NOT ON MACOS."""
import hashlib
import json
import os
import re
import pwd
import resource
import shutil
import signal
import subprocess

import pytest

from conftest import BUILD, clean_env, needs_root, term_once_running

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

EXPECTED = {"summary.md", "SHA256SUMS", "sw_vers.txt", "doctor.json", "check.json", "version.txt",
            "inspect-command.json", "inspect-library.json", "probe.json", "verify.json", "dyld-trace.txt",
            "unified-log.txt", "library-log.txt", "device-class.json", "csrutil.txt", "quarantine.txt",
            "codesign-command.txt", "codesign-verify-command.txt", "codesign-library.txt", "codesign-verify-library.txt",
            "system-profiler-displays.txt", "crash-reports.txt"}
MAC_ONLY = ["sw_vers.txt", "dyld-trace.txt", "unified-log.txt", "library-log.txt", "csrutil.txt", "quarantine.txt",
            "codesign-command.txt", "codesign-verify-command.txt", "codesign-library.txt", "codesign-verify-library.txt",
            "system-profiler-displays.txt"]


def test_bundle_on_linux(tmp_path):
    home = tmp_path / "home-of-someone-specific"
    (home / ".config" / "vzcaps").mkdir(parents=True)
    (home / ".config" / "vzcaps" / "vzcaps.conf").write_text("[default]\napple_family_max = 1007\n")
    env = clean_env(SECRET_TOKEN="do-not-leak-this-value-8431")
    env["HOME"] = str(home)
    out = tmp_path / "bundle"
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--bundle", str(out)], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    names = {f.name for f in out.iterdir()}
    assert EXPECTED <= names, EXPECTED - names
    summary = (out / "summary.md").read_text().splitlines()
    assert summary[0].startswith("NOT ON MACOS: ") and summary[0].endswith(".")
    assert "Device (MTLDevice name and architecture.name, from probe.json): not reported (no probe result with a device name)." in summary
    for mac_only in MAC_ONLY:
        assert (out / mac_only).read_text().startswith("not available on this system"), mac_only
    # each macOS-only step is recorded as skipped, not failed
    text = (out / "summary.md").read_text()
    assert "Steps: 3 ran, 0 failed, 16 skipped (not available on this system). Files: 0 could not be written." in text
    assert "| dyld-trace.txt | an injected child under DYLD_PRINT_* | not available on this system |" in text
    assert "FAILED" not in text
    assert "16 skipped: not available on this system" in p.stdout
    for js in ("doctor.json", "check.json", "inspect-command.json", "probe.json", "verify.json", "device-class.json"):
        json.loads((out / js).read_text())
    # SHA256SUMS lists every other file and verifies
    listed = {}
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    assert set(listed) == names - {"SHA256SUMS"}
    for name, digest in listed.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    # no personal data: the home directory's path and the environment never appear
    for f in out.iterdir():
        data = f.read_bytes()
        assert str(home).encode() not in data and b"home-of-someone-specific" not in data, f.name
        assert b"do-not-leak-this-value-8431" not in data, f.name
    assert "~/.config/vzcaps/vzcaps.conf" in (out / "check.json").read_text()


def doctor_bundle(out, *extra, env=None, preexec=None, timeout=60):
    return subprocess.run([str(BUILD / "vzcaps"), "doctor", "--bundle", str(out), *extra], env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout, preexec_fn=preexec)


def test_bundle_refuses_a_directory_it_cannot_create(tmp_path):
    (tmp_path / "file").write_text("x")
    p = doctor_bundle(tmp_path / "file" / "such" / "dir")
    assert p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1
    assert p.stderr == f"vzcaps doctor: {tmp_path}/file/such/dir: Not a directory\n"
    # missing parents are made, as mkdir -p does
    p = doctor_bundle(tmp_path / "new" / "parents" / "bundle")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "new" / "parents" / "bundle" / "summary.md").is_file()


@pytest.mark.parametrize("hostile", ["symlink", "file", "fifo", "directory"])
def test_bundle_writes_only_into_a_new_or_empty_directory(tmp_path, hostile):
    # regression: summary.md -> /tmp/victim overwrote the victim; existing files were overwritten; a FIFO hung it
    # forever; directories named like its files gave "wrote" and exit 0
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "b"
    out.mkdir()
    name = out / "summary.md"
    if hostile == "symlink":
        name.symlink_to(victim)
    elif hostile == "file":
        name.write_text("the user's notes\n")
    elif hostile == "fifo":
        os.mkfifo(name)
    else:
        name.mkdir()
    p = doctor_bundle(out, timeout=20)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == f"vzcaps doctor: {out}: exists and is not empty (choose a new or empty directory)\n"
    assert victim.read_text() == "precious\n"
    assert sorted(f.name for f in out.iterdir()) == ["summary.md"]
    if hostile == "file":
        assert name.read_text() == "the user's notes\n"


def test_bundle_directory_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    for given in (tmp_path / "link", f"{tmp_path}/link/", f"{tmp_path}/link/.", f"{tmp_path}/link/./"):  # each spelling of it
        p = doctor_bundle(given)
        assert p.returncode == 1 and "is a symbolic link (refusing to write through it)" in p.stderr, given
    assert list(elsewhere.iterdir()) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert doctor_bundle(empty).returncode == 0


def small_filesystem(path):
    """A 16 KiB tmpfs at path (make check runs as root on Linux)."""
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(path)], check=True)


@needs_root("mounts a 16 KiB tmpfs")
def test_full_disk_counts_every_file_not_written(tmp_path):
    # regression: failed writes were not all counted and the summary said nothing of them
    disk = tmp_path / "disk"
    small_filesystem(disk)
    try:
        p = doctor_bundle(disk / "b")
    finally:
        subprocess.run(["umount", str(disk)])
    assert p.returncode == 1 and "wrote" not in p.stdout
    lost = [l for l in p.stderr.splitlines() if l.startswith(f"vzcaps doctor: cannot write {disk}/b/")]
    assert lost and all(l.endswith(": No space left on device") for l in lost), p.stderr
    # regression: "(see summary.md)" although summary.md was among the files not written
    assert f"vzcaps doctor: cannot write {disk}/b/summary.md: No space left on device" in lost
    assert p.stderr.splitlines()[-1] == (f"vzcaps doctor: the bundle in {disk}/b is incomplete: {len(lost)} of its files "
                                         "could not be written (above) (summary.md could not be written either)")


def test_a_file_size_limit_counts_as_a_failed_write(tmp_path):
    # the same on any machine: writes over a file-size limit fail as on a full disk
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
    out = tmp_path / "b"
    p = doctor_bundle(out, preexec=limit)
    assert p.returncode == 1 and "wrote" not in p.stdout
    lost = [l for l in p.stderr.splitlines() if "cannot write" in l]
    assert lost and all(l.endswith(": File too large") for l in lost), p.stderr
    assert f"incomplete: {len(lost)} of its files could not be written" in p.stderr
    assert not [f for f in out.iterdir() if f.name.startswith(".vzcaps-tmp")]


def test_a_failed_step_is_counted_and_named(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("[s]\nbogus = 1\n")
    out = tmp_path / "b"
    p = doctor_bundle(out, env=clean_env(VZCAPS_CONFIG=str(bad)))
    assert p.returncode == 1 and "wrote" not in p.stdout
    # issue 33 row 11: it said "0 of its files could not be written (above)" with nothing above
    assert p.stderr.splitlines()[-1] == f"vzcaps doctor: the bundle in {out} is incomplete: 1 of its steps failed (see summary.md)"
    assert "cannot write" not in p.stderr and "could not be written" not in p.stderr
    summary = (out / "summary.md").read_text()
    assert "Steps: 3 ran, 1 failed, 16 skipped" in summary
    assert "| check.json | vzcaps check --json | **FAILED**: exit 1 |" in summary


def test_no_resolved_or_escaped_home_path_leaks(tmp_path):
    # regression: with HOME a link, the resolved path stayed; with " or \ in HOME, its JSON form stayed
    real = tmp_path / 'real"home\\-secret-9137'
    (real / ".config" / "vzcaps").mkdir(parents=True)
    (real / ".config" / "vzcaps" / "vzcaps.conf").write_text("[default]\napple_family_max = 1007\n")
    (real / "bin").mkdir()
    for f in ("vzcaps", "libvzcaps.so"):
        shutil.copy2(BUILD / f, real / "bin" / f)
    link = tmp_path / "home-link"
    link.symlink_to(real)
    out = tmp_path / "bundle"
    env = clean_env(HOME=str(link))
    p = subprocess.run([str(real / "bin" / "vzcaps"), "doctor", "--bundle", str(out)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "command ~/bin/vzcaps sha256" in (out / "version.txt").read_text()
    assert "~/.config/vzcaps/vzcaps.conf" in (out / "check.json").read_text()
    for f in out.iterdir():
        assert b"secret-9137" not in f.read_bytes() and b"home-link" not in f.read_bytes(), f.name


def as_the_bundle_shows(path):
    """path as the bundle writes it: the user's home directory (and its real path), where it
    is a leading run of whole components, becomes ~ (the bundle's personal-data scrub)."""
    s = str(path)
    homes = {pwd.getpwuid(os.getuid()).pw_dir}
    homes |= {os.path.realpath(h) for h in homes}
    for h in sorted((h.rstrip("/") for h in homes if h and h != "/"), key=len, reverse=True):
        if s.startswith(h + "/"):
            return "~" + s[len(h):]
    return s


def both_runs(summary, heading):
    """The stock and the through-vzcaps text of one section of summary.md, as its fenced blocks
    hold them ("(none)" when a run printed none)."""
    part = summary.split(f"\n### {heading}\n", 1)[1].split("\n### ", 1)[0].split("\nThe whole outputs", 1)[0]
    stock, unlocked = part.split("\nThrough vzcaps run:\n", 1)
    def text(chunk):
        chunk = chunk.replace("Stock:\n", "", 1).strip()
        if chunk == "(none)":
            return chunk
        fence = re.match(r"(`{3,})text\n", chunk).group(1)
        assert chunk.endswith(fence) or chunk.endswith(f"\n{fence}\n(cut at 400 bytes)"), chunk
        return chunk[len(fence) + 5:].split(f"\n{fence}", 1)[0] + "\n"
    return text(stock), text(unlocked)


def test_workload_stock_and_through_vzcaps_side_by_side(tmp_path):
    """doctor --bundle DIR -- CMD: the rig's probe, stock and through vzcaps run."""
    out = tmp_path / "b"
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=str(BUILD / "libvzcaps.so"))  # the stock run drops it
    p = doctor_bundle(out, "--", str(BUILD / "probe"), env=env)
    assert p.returncode == 0, p.stderr
    stock, injected = (out / "workload-stock.txt").read_text(), (out / "workload-vzcaps.txt").read_text()
    assert "class AppleParavirtDevice" in stock and "family 1008 0" in stock and "env LD_PRELOAD=(unset)" in stock
    assert "family 1008 1" in injected and "family 1009 0" in injected
    summary = (out / "summary.md").read_text()
    shown = as_the_bundle_shows(BUILD / "probe")  # a clone under the home directory reads ~/...
    assert f"``{shown}``" in summary or f"`{shown}`" in summary
    assert "| exit status | exit 0 | exit 0 |" in summary
    stock_lines, unlocked_lines = both_runs(summary, "The `vzcaps:` lines")
    assert stock_lines == "(none)"
    assert "vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport: Apple families up to 1008" in unlocked_lines
    assert "Steps: 5 ran, 0 failed, 16 skipped" in summary
    # ggml_metal_device_init: lines side by side, and a command that fails is a failed step
    script = tmp_path / "client.sh"
    script.write_text('#!/bin/sh\necho "ggml_metal_device_init: GPU name:   Apple M2 | x" >&2\nexit 4\n')
    script.chmod(0o755)
    p = doctor_bundle(tmp_path / "c", "--", str(script), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 1 and "2 of its steps failed" in p.stderr
    summary = (tmp_path / "c" / "summary.md").read_text()
    # issue 39 row 20: the lines are shown as they are, in a block each (they were one table cell
    # joined with <br>, with `_` and `|` as entities)
    line = "ggml_metal_device_init: GPU name:   Apple M2 | x\n"
    assert both_runs(summary, "The `ggml_metal_device_init:` lines") == (line, line)
    assert "&#" not in summary and "<br>" not in summary
    # sh creates no device: the library says nothing there
    assert both_runs(summary, "The `vzcaps:` lines") == ("(none)", "(none)")
    assert "| exit status | exit 4 | exit 4 |" in summary
    assert "| workload-stock.txt | the command, stock | **FAILED**: exit 4 |" in summary


def test_doctor_without_bundle_runs_the_command_for_its_lines(tmp_path):
    # without --bundle, -- CMD is the run whose vzcaps lines doctor records (test_scripts.py)
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--json", "--", "true"], env=clean_env(), capture_output=True,
                       text=True)
    assert p.returncode == 0 and json.loads(p.stdout)["library_run"]["ran"]
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--"], env=clean_env(), capture_output=True, text=True)
    assert p.returncode == 2 and "no command after --" in p.stderr


def test_newest_crash_report_of_the_workload_and_of_vzcaps(tmp_path):
    home = tmp_path / "home"
    reports = home / "Library" / "Logs" / "DiagnosticReports"
    reports.mkdir(parents=True)
    def report(name, text, age):
        f = reports / name
        f.write_text(text)
        os.utime(f, (1_700_000_000 - age, 1_700_000_000 - age))
    report("probe-2025-01-01-000000.ips", "old probe crash", 100)
    report("probe_2025-01-02-000000_secret-hostname.crash", f"new probe crash in {home}/x", 10)
    report("probe-helper-2025-01-03-000000.ips", "another program", 0)
    report("vzcaps-2025-01-01-000000.ips", "vzcaps crash", 50)
    (reports / "probe-2030-01-01-000000.ips").symlink_to(reports / "vzcaps-2025-01-01-000000.ips")  # links are not reports
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", str(BUILD / "probe"), env=clean_env(HOME=str(home), VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0, p.stderr
    text = (out / "crash-reports.txt").read_text()
    assert "newest crash report of probe (modified 2023-11-14T22:13:10Z):\n\nnew probe crash in ~/x" in text
    assert "newest crash report of vzcaps (modified 2023-11-14T22:12:30Z):\n\nvzcaps crash" in text
    assert "old probe crash" not in text and "another program" not in text and "secret-hostname" not in text
    assert "| crash-reports.txt | the newest crash report of the workload and of vzcaps | read |" in (out / "summary.md").read_text()


def test_workload_with_many_arguments_gets_every_one(tmp_path):
    # a fixed array held 252 arguments and dropped the rest without a word
    script = tmp_path / "count.sh"
    script.write_text('#!/bin/sh\necho "$# arguments, last $(eval echo \\${$#})"\n')
    script.chmod(0o755)
    args = [str(i) for i in range(400)]
    p = doctor_bundle(tmp_path / "b", "--", str(script), *args, env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0, p.stderr
    for name in ("workload-stock.txt", "workload-vzcaps.txt"):
        assert (tmp_path / "b" / name).read_text() == "400 arguments, last 399\n", name


# ---- the one way to run a child (issue 25 rule 3) and the archive to attach (issue 27 item 3) ----

def sums_verify(bundle):
    """Every line of SHA256SUMS matches its file, and every file but SHA256SUMS is listed."""
    listed = {}
    for line in (bundle / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    for name, digest in listed.items():
        assert hashlib.sha256((bundle / name).read_bytes()).hexdigest() == digest, name
    assert set(listed) | {"SHA256SUMS"} == {f.name for f in bundle.iterdir()}


def no_temporaries(*dirs):
    for d in dirs:
        left = [f.name for f in d.iterdir() if f.name.startswith(".vzcaps-tmp.")]
        assert not left, left


def test_forty_thousand_lines_are_matched_in_one_pass(tmp_path):
    # regression (row 6): matching lines was quadratic (40,000 lines: over 5 minutes); the lines
    # are now scanned once as they stream to the file, and the same line is kept once
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", "sh", "-c", "yes 'ggml_metal_device_init: GPU family: x' | head -n 40000 >&2",
                      env=clean_env(VZCAPS_HOST_CHIP="Apple M2"), timeout=120)
    assert p.returncode == 0, p.stderr
    assert (out / "workload-stock.txt.stderr").read_text().count("\n") == 40000
    summary = (out / "summary.md").read_text()
    assert both_runs(summary, "The `ggml_metal_device_init:` lines")[0] == "ggml_metal_device_init: GPU family: x\n"


def test_a_huge_output_is_capped_on_disk_not_held_in_memory(tmp_path):
    # regression (row 6): 500 MB of output was held whole (1.5 GB resident, a 1 GB bundle, exit 0).
    # Under a 300 MB address-space limit the old code failed; now 200 MB stream through, the file
    # holds the first 16 MiB and the summary says so.
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", "sh", "-c", "head -c 200000000 /dev/zero", env=clean_env(VZCAPS_HOST_CHIP="Apple M2"),
                      preexec=limit, timeout=300)
    assert p.returncode == 0, p.stderr
    assert (out / "workload-stock.txt").stat().st_size == 16 << 20
    summary = (out / "summary.md").read_text()
    assert "| workload-stock.txt | the command, stock | exit 0, standard output capped: the first 16 MiB of 200000000 " \
           "bytes kept |" in summary
    sums_verify(out)


def test_a_grandchild_holding_the_pipe_neither_hangs_nor_outlives_the_bundle(tmp_path):
    # regression (row 6): doctor waited for a background grandchild that kept the pipe open
    out, pids = tmp_path / "b", tmp_path / "pids"
    p = doctor_bundle(out, "--", "sh", "-c", f"sleep 120 & echo $! >>{pids}; echo started",
                      env=clean_env(VZCAPS_HOST_CHIP="Apple M2"), timeout=60)
    assert p.returncode == 0, p.stderr
    summary = (out / "summary.md").read_text()
    assert "| exit status | exit 0, processes it left running were stopped | exit 0, processes it left running were " \
           "stopped |" in summary
    assert both_runs(summary, "Standard output") == ("started\n", "started\n")
    for pid in pids.read_text().split():
        stat = f"/proc/{pid}/stat"
        assert not os.path.exists(stat) or open(stat).read().rsplit(")", 1)[1].split()[0] == "Z", pid


def test_timeout_stops_the_workload_and_is_recorded(tmp_path):
    out = tmp_path / "b"
    p = doctor_bundle(out, "--timeout", "1", "--", "sleep", "120", env=clean_env(VZCAPS_HOST_CHIP="Apple M2"), timeout=60)
    assert p.returncode == 1 and "2 of its steps failed" in p.stderr
    summary = (out / "summary.md").read_text()
    assert "| workload-stock.txt | the command, stock | **FAILED**: killed by signal 15, timed out after 1 s " \
           "(--timeout) |" in summary
    p = doctor_bundle(tmp_path / "c", "--timeout", "soon", "--", "true")
    assert p.returncode == 2 and "--timeout takes whole seconds" in p.stderr and not (tmp_path / "c").exists()
    help_text = subprocess.run([str(BUILD / "vzcaps"), "help", "doctor"], capture_output=True, text=True).stdout
    assert "--timeout SECONDS" in help_text and "600" in help_text


def test_sigterm_mid_run_leaves_a_marked_bundle_that_a_rerun_replaces(tmp_path):
    # regression (row 7): SIGTERM during doctor --bundle -- sleep left 19 files, no summary, no
    # SHA256SUMS, and the next run refused the directory
    out = tmp_path / "b"
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    p = term_once_running([str(BUILD / "vzcaps"), "doctor", "--bundle", str(out), "--", "sleep", "120"], env)
    assert p.returncode == -signal.SIGTERM, p.stderr  # the command ended by the signal, as it was sent
    assert "vzcaps doctor: stopped by signal 15: the bundle in" in p.stderr
    no_temporaries(out, tmp_path)
    summary = (out / "summary.md").read_text()
    assert summary.startswith("INCOMPLETE: vzcaps doctor was stopped by signal 15")
    assert (out / "INCOMPLETE").read_text().startswith("vzcaps doctor: this bundle is incomplete: stopped by signal 15")
    sums_verify(out)
    assert not (tmp_path / "b.tar.gz").exists()  # only a whole bundle is archived
    p = doctor_bundle(out, "--", "true", env=env)
    assert p.returncode == 0, p.stderr
    assert not (out / "INCOMPLETE").exists() and (out / "summary.md").read_text().startswith("NOT ON MACOS")
    sums_verify(out)
    # an incomplete bundle with a file of someone else's in it is not replaced
    p = term_once_running([str(BUILD / "vzcaps"), "doctor", "--bundle", str(tmp_path / "c"), "--", "sleep", "120"], env)
    (tmp_path / "c" / "notes.txt").write_text("mine\n")
    p = doctor_bundle(tmp_path / "c", "--", "true", env=env)
    assert p.returncode == 1 and "holds an incomplete bundle that cannot be replaced: it holds files that are not part " \
                                 "of the bundle" in p.stderr
    assert (tmp_path / "c" / "notes.txt").read_text() == "mine\n" and (tmp_path / "c" / "INCOMPLETE").exists()
    # nor one whose files changed after it was written
    (tmp_path / "c" / "notes.txt").unlink()
    with open(tmp_path / "c" / "check.json", "a") as f:
        f.write(" ")
    p = doctor_bundle(tmp_path / "c", "--", "true", env=env)
    assert p.returncode == 1 and "a file SHA256SUMS lists is missing or changed" in p.stderr


def test_the_archive_to_attach(tmp_path):
    import tarfile
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    archives = []
    for parent in ("one", "two"):
        (tmp_path / parent).mkdir()
        out = tmp_path / parent / "first-run"
        p = doctor_bundle(out, "--", "true", env=env)
        assert p.returncode == 0, p.stderr
        archive = tmp_path / parent / "first-run.tar.gz"
        assert p.stdout.splitlines()[-1] == f"attach {archive} to an issue in the repository you got vzcaps from"
        archives.append(archive.read_bytes())
        with tarfile.open(archive) as t:
            members = t.getmembers()
            assert members[0].name == "first-run" and members[0].isdir()
            assert [m.name for m in members[1:]] == sorted(m.name for m in members[1:])
            assert all(m.uid == 0 and m.gid == 0 and m.mtime == 0 and m.uname == "" and m.gname == "" for m in members)
            # the "data" filter where this Python has it (3.11.4 and later; Debian 12 has 3.11.2)
            t.extractall(tmp_path / parent / "x", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        got = tmp_path / parent / "x" / "first-run"
        assert {f.name for f in got.iterdir()} == {f.name for f in out.iterdir()}
        for f in out.iterdir():
            assert (got / f.name).read_bytes() == f.read_bytes(), f.name
        sums_verify(got)
        assert str(tmp_path).encode() not in archive.read_bytes()
    assert archives[0] == archives[1]  # reproducible: the same bundle gives the same bytes
    # the archive is never written over something that is there
    (tmp_path / "three").mkdir()
    (tmp_path / "three" / "b.tar.gz").symlink_to(tmp_path / "victim")
    p = doctor_bundle(tmp_path / "three" / "b", "--", "true", env=env)
    assert p.returncode == 1 and "b.tar.gz: exists and is a symbolic link" in p.stderr and not (tmp_path / "victim").exists()


def test_the_archive_of_odd_directory_names(tmp_path):
    import tarfile
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    # "." names no file beside it: the archive goes next to the directory it is, never into it
    here = tmp_path / "here"
    here.mkdir()
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--bundle", ".", "--", "true"], cwd=here, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "here.tar.gz").is_file() and not [f for f in here.iterdir() if f.name.endswith(".tar.gz")]
    # a name with a blank and a newline, given with a trailing slash
    odd = tmp_path / "first run\nx"
    p = doctor_bundle(str(odd) + "/", "--", "true", env=env)
    assert p.returncode == 0, p.stderr
    with tarfile.open(tmp_path / "first run\nx.tar.gz") as t:
        assert t.getnames()[0] == "first run\nx" and "first run\nx/SHA256SUMS" in t.getnames()


# ---- issue 33 item 3: stock means stock ----

def test_the_stock_run_of_a_workload_skips_the_shims_on_path(tmp_path):
    """doctor --bundle DIR -- probe with a vzcaps shim directory first on PATH (on the rig,
    `vzcaps shims --dir` and build/probe): the stock run starts the real probe with the stock
    family, without our library in LD_PRELOAD (another library stays); through vzcaps run it is
    unlocked; the bundle records the PATH each run used."""
    shims, real = tmp_path / "shims", tmp_path / "real"
    real.mkdir()
    (real / "probe").symlink_to(BUILD / "probe")
    p = subprocess.run([str(BUILD / "vzcaps"), "shims", "--dir", str(shims), "probe"], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # a library that is not ours, preloaded in both runs: the C library's libm
    other = subprocess.run(["gcc", "-print-file-name=libm.so.6"], capture_output=True, text=True).stdout.strip()
    assert os.path.isabs(other), other
    path = f"{shims}:{real}:/usr/bin:/bin"
    env = clean_env(PATH=path, VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=f"{other} {BUILD / 'libvzcaps.so'}")
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", "probe", env=env)
    assert p.returncode == 0, p.stderr
    stock, injected = (out / "workload-stock.txt").read_text(), (out / "workload-vzcaps.txt").read_text()
    assert "family 1008 0" in stock and f"env LD_PRELOAD={other}\n" in stock, stock
    assert "family 1008 1" in injected and "family 1009 0" in injected, injected
    stock_err = out / "workload-stock.txt.stderr"
    assert not stock_err.exists() or "vzcaps:" not in stock_err.read_text()
    row = next(l for l in (out / "summary.md").read_text().splitlines() if l.startswith("| PATH |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"`{as_the_bundle_shows(real)}:/usr/bin:/bin`", row
    assert cells[2] == f"`{as_the_bundle_shows(shims)}:{as_the_bundle_shows(real)}:/usr/bin:/bin`", row


def test_a_directory_is_a_shim_directory_only_by_a_record_of_ours(tmp_path):
    """A look-alike (a link to vzcaps without a record, a record file that names nothing) is not
    taken for a shim directory: its PATH entry stays in the stock run."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "probe").symlink_to(BUILD / "probe")
    (fake / ".probe.vzcaps-shim").write_text("vzcaps shims\ncopy 1 2 3.000000000 -\n")
    (fake / ".x.vzcaps-shim").symlink_to("/etc/passwd")
    env = clean_env(PATH=f"{fake}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2")
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", "probe", env=env)
    assert p.returncode == 0, p.stderr
    row = next(l for l in (out / "summary.md").read_text().splitlines() if l.startswith("| PATH |"))
    assert row.split(" | ")[1] == f"`{as_the_bundle_shows(fake)}:/usr/bin:/bin`", row
    assert "family 1008 0" in (out / "workload-stock.txt").read_text()


def test_the_workloads_text_cannot_break_out_of_its_block(tmp_path):
    # a line with backticks, a control character and more than 400 bytes stays inside its block
    script = tmp_path / "w.sh"
    script.write_text("#!/bin/sh\nprintf 'a ```` b\\033[31m\\n'\nhead -c 600 /dev/zero | tr '\\0' x\n")
    script.chmod(0o755)
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", str(script), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0, p.stderr
    summary = (out / "summary.md").read_text()
    assert "\n`````text\na ```` b [31m\nxxx" in summary and "\x1b" not in summary
    assert summary.count("\n`````\n(cut at 400 bytes)\n") == 2
    stock, unlocked = both_runs(summary, "Standard output")
    assert stock == unlocked and stock.startswith("a ```` b [31m\nxxx")


def test_the_cut_at_400_bytes_never_splits_a_character_and_del_is_a_control_character(tmp_path):
    """summary.md stays UTF-8 where the workload's output was: a character across byte 400 is left
    out whole (the cut left its first byte, so the file no longer decoded), and DEL shows as a
    space like the other control characters (it was kept)."""
    script = tmp_path / "w.sh"
    script.write_text("#!/bin/sh\nprintf 'del\\177.\\n'\nhead -c 393 /dev/zero | tr '\\0' x\nprintf '\\303\\251\\303\\251'\n")
    script.chmod(0o755)
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", str(script), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0, p.stderr
    assert (out / "workload-stock.txt").read_bytes().endswith(b"x\xc3\xa9\xc3\xa9")  # 6 + 393 + 4 bytes: byte 400 is inside the first é
    summary = (out / "summary.md").read_bytes().decode("utf-8")  # strict: a split character fails here
    assert "\x7f" not in summary and "\ndel .\n" in summary
    stock, unlocked = both_runs(summary, "Standard output")
    assert stock == unlocked == "del .\n" + "x" * 393 + "\n"
    assert summary.count("\n```\n(cut at 400 bytes)\n") == 2


# ---- issue 39 row 9: stock is stock by identity, not by name or record ----

def stock_path_and_run(out):
    row = next(l for l in (out / "summary.md").read_text().splitlines() if l.startswith("| PATH |"))
    return row.split(" | ")[1], (out / "workload-stock.txt").read_text()


@pytest.mark.parametrize("how", ["link", "chain", "hard", "copy", "to-a-shim", "other-install"])
def test_a_path_entry_that_starts_vzcaps_under_another_name_is_not_stock(tmp_path, how):
    """`ln -s .../vzcaps bin/probe` (no record), a chain of links, a hard link or a copy of the
    command, a program that links to a shim, a link to another installation's vzcaps: the stock
    run started vzcaps as probe, which ran it unlocked. Now the entry goes from the stock PATH
    (the bundle's PATH row says so) and the stock run starts the real probe."""
    inst = tmp_path / "inst"  # a copy of the command, so that a hard link lies on its file system
    inst.mkdir()
    for f in ("vzcaps", "libvzcaps.so"):
        shutil.copy2(BUILD / f, inst / f)
    vz = inst / "vzcaps"
    hand, real = tmp_path / "hand", tmp_path / "real"
    hand.mkdir(), real.mkdir()
    (real / "probe").symlink_to(BUILD / "probe")
    (hand / "other-tool").symlink_to("/bin/true")  # the directory holds more than the one entry
    os.mkfifo(hand / "a-fifo")  # looked at, never opened: nothing blocks
    if how == "link":
        (hand / "probe").symlink_to(vz)
    elif how == "chain":
        (tmp_path / "one").symlink_to(vz)
        (hand / "probe").symlink_to(tmp_path / "one")
    elif how == "hard":
        os.link(vz, hand / "probe")
    elif how == "copy":
        shutil.copy2(vz, hand / "probe")
    elif how == "to-a-shim":
        shims = tmp_path / "shims"
        p = subprocess.run([str(vz), "shims", "--dir", str(shims), "probe"], env=clean_env(), capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        (hand / "probe").symlink_to(shims / "probe")
    else:  # another installation's command, not this one's file
        other = tmp_path / "other"
        other.mkdir()
        shutil.copy2(BUILD / "vzcaps", other / "vzcaps")
        shutil.copy2(BUILD / "libvzcaps.so", other / "libvzcaps.so")
        (hand / "probe").symlink_to(other / "vzcaps")
    env = clean_env(PATH=f"{hand}:{real}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2")
    out = tmp_path / "b"
    p = subprocess.run([str(vz), "doctor", "--bundle", str(out), "--", "probe"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    path, stock = stock_path_and_run(out)
    assert path == f"`{as_the_bundle_shows(real)}:/usr/bin:/bin`", path
    assert "family 1008 0" in stock and "family 1009 0" in stock, stock
    if how not in ("copy", "other-install"):  # through vzcaps run, a shim of this command starts the real probe
        assert "family 1008 1" in (out / "workload-vzcaps.txt").read_text()


def test_a_directory_holding_only_vzcaps_itself_stays_on_the_stock_path(tmp_path):
    """The command's own directory (vzcaps, its library, a vzcaps-named link: never started as a
    program) is not taken for a shim directory: a client installed beside vzcaps stays found."""
    inst = tmp_path / "inst"
    inst.mkdir()
    for f in ("vzcaps", "libvzcaps.so"):
        shutil.copy2(BUILD / f, inst / f)
    (inst / "vzcaps-old").symlink_to(inst / "vzcaps")
    (inst / "probe").symlink_to(BUILD / "probe")
    env = clean_env(PATH=f"{inst}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2")
    out = tmp_path / "b"
    p = subprocess.run([str(inst / "vzcaps"), "doctor", "--bundle", str(out), "--", "probe"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    path, stock = stock_path_and_run(out)
    assert path == f"`{as_the_bundle_shows(inst)}:/usr/bin:/bin`" and "family 1008 0" in stock, (path, stock)


def test_the_library_preloaded_under_another_name_is_not_stock(tmp_path):
    """A renamed copy of the library, a link to it, the library under its own name: each is our
    library by what the file is (its marker, or its device and inode) and goes from the stock
    run's preload entry; another library stays, and so do an unreadable file, a directory and a
    missing file (the loader skips those), in a list of 1,500 elements."""
    other = subprocess.run(["gcc", "-print-file-name=libm.so.6"], capture_output=True, text=True).stdout.strip()
    assert os.path.isabs(other), other
    renamed, link = tmp_path / "libmetalhelper.so", tmp_path / "libz-link.so"
    shutil.copy2(BUILD / "libvzcaps.so", renamed)
    link.symlink_to(BUILD / "libvzcaps.so")
    locked = tmp_path / "liblocked.so"
    shutil.copy2(other, locked)
    locked.chmod(0)
    (tmp_path / "libdir.so").mkdir()
    keep = [other, str(locked), str(tmp_path / "libdir.so"), str(tmp_path / "missing.so")]
    elements = [str(renamed), other, str(link), str(BUILD / "libvzcaps.so")] + [other] * 1490 + keep
    env = clean_env(PATH=f"{BUILD}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=":".join(elements))
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", "probe", env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    stock = (out / "workload-stock.txt").read_text()
    line = next(l for l in stock.splitlines() if l.startswith("env LD_PRELOAD="))
    assert line == "env LD_PRELOAD=" + ":".join([other] * 1491 + keep), line[:300]
    assert "family 1008 0" in stock, stock


def test_a_nul_in_the_workloads_output_shows_as_a_space_and_hides_nothing(tmp_path):
    """A NUL byte is a control character like the others: a space, and what follows it is shown
    (the block ended at the NUL, without a word of what it left out)."""
    script = tmp_path / "w.sh"
    script.write_text("#!/bin/sh\nprintf 'first\\000after the nul\\n'\n")
    script.chmod(0o755)
    out = tmp_path / "b"
    p = doctor_bundle(out, "--", str(script), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0, p.stderr
    stock, unlocked = both_runs((out / "summary.md").read_text(), "Standard output")
    assert stock == unlocked == "first after the nul\n"
