"""The program's name on the GNU-runtime rig (issue 47 item 4): one rule for the section a child's
own library picks and the one its parent's inherit = matching judged it by, for a child whose
argv[0] and file differ (exec -a, Node's argv0, execv("/x/real", {"alias", ...})): the base name
of argv[0]; for an empty argv[0], the leaf of the path exec was given, links kept (AT_EXECFN
here; macOS's getprogname())."""
import os
import subprocess
import sys

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

NAMED = ("[python]\nmatch = python3*\napple_family_max = auto\ninherit = matching\n"
         "[alias]\nmatch = alias\napple_family_max = auto\n[linked]\nmatch = linked\napple_family_max = auto\n")
START = "import subprocess, sys\nsubprocess.run([sys.argv[1]], executable=sys.argv[2], check=True)\n"


@pytest.mark.parametrize("argv0,file,name", [("alias", "real", "alias"), ("", "linked", "linked"), ("other", "alias", None)],
                         ids=["alias", "empty argv0 through a link", "a file named after a section"])
def test_a_child_gets_the_section_its_parent_judged_it_by(tmp_path, argv0, file, name):
    # the parent (python3, inherit = matching) keeps the library for a child by argv[0]'s base
    # name, or the path it starts when argv[0] is empty; the child configured itself by its
    # executable's real name for an empty argv[0] ("probe": no section, stock, silently)
    for link in ("real", "linked", "alias"):
        os.symlink(BUILD / "probe", tmp_path / link)
    (tmp_path / "c.conf").write_text(NAMED)
    (tmp_path / "start.py").write_text(START)
    env = clean_env(VZCAPS_CONFIG=str(tmp_path / "c.conf"), VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    p = subprocess.run([sys.executable, str(tmp_path / "start.py"), argv0, str(tmp_path / file)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    [run] = parse_probe(p.stdout)
    lines = [line.split(" via ")[0] for line in p.stderr.splitlines()]
    if name is None:
        assert run["families"] == STOCK_FAMILIES and lines == []
    else:
        assert run["families"][1008] == 1 and lines == [f"vzcaps: hooked AppleParavirtDevice for {name}"]
