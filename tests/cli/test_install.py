"""make install / make uninstall with DESTDIR and PREFIX."""
import subprocess

from conftest import ROOT

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the GNU-runtime rig and LD_PRELOAD)

FILES = ["bin/vzcaps", "lib/libvzcaps.so", "share/doc/vzcaps/LICENSE", "share/man/man1/vzcaps.1",
         "share/bash-completion/completions/vzcaps", "share/zsh/site-functions/_vzcaps",
         "share/fish/vendor_completions.d/vzcaps.fish", "share/doc/vzcaps/README.md"] + \
        [f"share/doc/vzcaps/{p.name}" for p in (ROOT / "docs").glob("*.md")]  # the manual


def test_install_and_uninstall(tmp_path):
    dest = tmp_path / "stage"
    p = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}", "PREFIX=/opt/vz"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    root = dest / "opt" / "vz"
    got = sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file())
    assert got == sorted(FILES)
    assert (root / "bin" / "vzcaps").stat().st_mode & 0o111
    # the installed README's links to the pages resolve where they are installed, beside it
    import re
    doc = root / "share" / "doc" / "vzcaps"
    links = re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", (doc / "README.md").read_text())
    assert links and all((doc / l).is_file() for l in links), [l for l in links if not (doc / l).is_file()]
    # the installed command finds the installed library in ../lib
    out = subprocess.run([str(root / "bin" / "vzcaps"), "doctor", "--json"], capture_output=True, text=True).stdout
    assert f'"library":"{root}/lib/libvzcaps.so"' in out  # ../lib, resolved
    p = subprocess.run(["make", "-s", "uninstall", f"DESTDIR={dest}", "PREFIX=/opt/vz"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert [f for f in root.rglob("*") if f.is_file()] == []
