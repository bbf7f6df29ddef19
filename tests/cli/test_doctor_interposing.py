"""`vzcaps doctor` says when dyld loaded the library but applied none of its interposers (issue 47
item 6): its library run asks dyld for its trace (DYLD_PRINT_LIBRARIES, DYLD_PRINT_INTERPOSING)
and reads the lines in the formats dyld's source prints ("dyld[PID]: <UUID> PATH",
DyldRuntimeState.cpp's "LEAF has interposed 'SYM' ..."); AMFI may allow the insertion and ban
the interposing (dyld DyldProcessConfig.cpp:900, DyldRuntimeState.cpp:1159-1163, :1298-1302).
On the rig the trace is a program's own lines in those formats (no dyld here; not run on a Mac)."""
import json
import subprocess

import pytest

from conftest import BUILD, clean_env

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

LIB = "libvzcaps.so"  # the platform's library_file
LOADED = f"dyld[4242]: <1D2E3F40-1111-3222-B333-444455556666> /opt/vz/lib/{LIB}"
INTERPOSED = f"dyld[4242]: {LIB} has interposed '_MTLCreateSystemDefaultDevice' to replacing binds to 0x1A0001000 with 0x100200000"
PITFALL = "dyld loaded the library in"


@pytest.mark.parametrize("trace,said", [([LOADED, INTERPOSED], False), ([LOADED], True), ([], False),
                                        ([f"dyld[1]: <UUID> /opt/vz/lib/not{LIB}"], False)],
                         ids=["loaded and interposed", "loaded, not interposed", "no trace", "another library"])
def test_doctor_says_when_the_interposers_were_not_applied(tmp_path, trace, said):
    prog = tmp_path / "prog"
    lines = "".join(f"echo \"{line}\" >&2\n" for line in trace)
    # the trace is asked for: the program sees both variables
    prog.write_text(f"#!/bin/sh\n[ \"$DYLD_PRINT_LIBRARIES$DYLD_PRINT_INTERPOSING\" = 11 ] || exit 3\n{lines}")
    prog.chmod(0o755)
    p = subprocess.run([str(BUILD / "vzcaps"), "doctor", "--json", "--", str(prog)], env=clean_env(VZCAPS_HOST_CHIP="Apple M2"),
                       capture_output=True, text=True, timeout=60)
    d = json.loads(p.stdout)
    assert d["library_run"]["status"] == "exit 0"
    got = [x for x in d["pitfalls"] if x.startswith(PITFALL)]
    assert bool(got) is said, d["pitfalls"]
    if said:
        assert f'"{LIB} has interposed"' in got[0] and "with inherit = matching every child starts stock" in got[0]
    assert not any(l.startswith("dyld[") for l in d["library_run"]["lines"])  # read, not shown
