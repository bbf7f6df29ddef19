"""`make install PREFIX=~/.local`, as the README says it, from zsh (macOS's shell), where `~`
after `=` reaches make unexpanded: the prefix is $HOME/.local, not a directory named `~`."""
import os
import subprocess

from conftest import ROOT

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the Linux test build)


def test_a_literal_tilde_prefix_means_home(tmp_path):
    home = tmp_path / "home dir"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    p = subprocess.run(["sh", "scripts/install", "install", "", "~/.local", "build"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (home / ".local" / "bin" / "vzcaps").is_file()
    assert (home / ".local" / "share" / "doc" / "vzcaps" / "troubleshooting.md").is_file()
    assert not (ROOT / "~").exists()
    p = subprocess.run(["sh", "scripts/install", "uninstall", "", "~/.local", "build"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0 and not (home / ".local" / "bin" / "vzcaps").exists()
