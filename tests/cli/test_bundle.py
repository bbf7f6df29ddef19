"""vzcaps doctor --bundle DIR: the first-run bundle a person attaches from a Mac (issue: first
Mac). On Linux: the same layout, the Mac-only parts marked, verdict NOT ON MACOS."""
import hashlib
import json
import subprocess

from conftest import BUILD, clean_env

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

EXPECTED = {"summary.md", "SHA256SUMS", "sw_vers.txt", "doctor.json", "check.json", "version.txt",
            "inspect-command.json", "inspect-library.json", "probe.json", "verify.json", "dyld-trace.txt",
            "unified-log.txt"}


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
    for mac_only in ("sw_vers.txt", "dyld-trace.txt", "unified-log.txt"):
        assert (out / mac_only).read_text().startswith("not available on Linux")
    for js in ("doctor.json", "check.json", "inspect-command.json", "probe.json", "verify.json"):
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


def test_bundle_refuses_a_directory_it_cannot_create(tmp_path):
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--bundle", str(tmp_path / "no" / "such" / "dir")],
                       env=clean_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "cannot create" in p.stderr and p.stderr.count("\n") == 1


def test_a_file_that_cannot_be_written_makes_the_bundle_fail(tmp_path):
    # regression: a write that failed was printed, and the command still said "wrote" and exited 0
    out = tmp_path / "bundle"
    (out / "version.txt").mkdir(parents=True)  # a directory where a file must go
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--bundle", str(out)], env=clean_env(), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1 and "wrote" not in p.stdout
    assert f"vzcaps doctor: cannot write {out}/version.txt: Is a directory" in p.stderr
    assert p.stderr.splitlines()[-1] == f"vzcaps doctor: the bundle in {out} is incomplete: 1 of its files could not be written (above)"
