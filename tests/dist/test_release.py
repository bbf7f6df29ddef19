"""make release: the archive a guest installs from, install.sh and uninstall.sh round-tripping
into a temporary PREFIX, and the formula with the archive's real checksum (issue: a new
user's path). On Linux the archive holds the cross-built macOS binaries; installing them here
only lays files out, which is what these scripts do."""
import hashlib
import os
import subprocess
import tarfile

import pytest

from conftest import BUILD, ROOT

pytestmark = pytest.mark.skipif(not (ROOT / "dist" / "libvzcaps.dylib").exists(), reason="dist/ not built (make dist)")
INSTALLED = ["bin/vzcaps", "lib/libvzcaps.dylib", "share/man/man1/vzcaps.1", "share/bash-completion/completions/vzcaps",
             "share/zsh/site-functions/_vzcaps", "share/fish/vendor_completions.d/vzcaps.fish"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release")
    p = subprocess.run(["sh", "scripts/release"], cwd=ROOT, env=dict(os.environ, RELEASE_OUT=str(out)), capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    archive = out / "vzcaps-0.1.0-macos.tar.gz"
    return out, archive


def unpack(archive, where):
    with tarfile.open(archive) as t:
        t.extractall(where)
    return where / "vzcaps-0.1.0-macos"


def tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_archive_content_and_formula(release):
    out, archive = release
    with tarfile.open(archive) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n and t.getmember(n).isfile()}
    assert names == set(INSTALLED) | {"LICENSE", "SHA256SUMS", "install.sh", "uninstall.sh"}
    formula = (out / "vzcaps.rb").read_text()
    assert f'sha256 "{hashlib.sha256(archive.read_bytes()).hexdigest()}"' in formula
    assert "example.invalid" not in formula and "0" * 64 not in formula and 'version "0.1.0"' in formula


def test_install_and_uninstall_round_trip(release, tmp_path):
    _, archive = release
    rel = unpack(archive, tmp_path / "x")
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "other-tool").write_text("not ours")
    p = subprocess.run(["sh", str(rel / "install.sh"), "--prefix", str(prefix)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"next: {prefix}/bin/vzcaps doctor" in p.stdout
    assert tree(prefix) == sorted(INSTALLED + ["bin/other-tool"])
    assert os.stat(prefix / "bin" / "vzcaps").st_mode & 0o777 == 0o755
    assert (prefix / "lib" / "libvzcaps.dylib").read_bytes() == (ROOT / "dist" / "libvzcaps.dylib").read_bytes()
    assert (prefix / "share" / "man" / "man1" / "vzcaps.1").read_text() == (BUILD / "vzcaps.1").read_text()
    p = subprocess.run(["sh", str(rel / "uninstall.sh"), "--prefix", str(prefix)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert tree(prefix) == ["bin/other-tool"]  # exactly what was installed is gone, other files stay
    assert sorted(os.listdir(prefix)) == ["bin"]  # and the directories it created, now empty


def test_install_refuses_an_altered_release(release, tmp_path):
    _, archive = release
    rel = unpack(archive, tmp_path / "x")
    with open(rel / "lib" / "libvzcaps.dylib", "ab") as f:
        f.write(b"!")
    prefix = tmp_path / "prefix"
    p = subprocess.run(["sh", str(rel / "install.sh"), "--prefix", str(prefix)], capture_output=True, text=True)
    assert p.returncode == 1 and "do not match SHA256SUMS" in p.stderr and "libvzcaps.dylib" in p.stderr
    assert not prefix.exists()
    p = subprocess.run(["sh", str(rel / "install.sh"), "--bogus"], capture_output=True, text=True)
    assert p.returncode == 2
