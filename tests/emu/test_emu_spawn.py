"""The shipped arm64 slice under emulation: spawn and exec, as Libc calls them (posix_spawn[p],
execve, execv[p], execl[e,p], system, popen): every child's environment, with another library
inserted or alone, from the process's environ or a given array, with failing candidates first on
the search path. The cases themselves: shipped.py (the mutants run them too)."""
import pytest

from conftest import LINUX_ONLY as pytestmark  # noqa: F401  (the rig it compares with is the Linux build)
from shipped import CHILDREN, HOWS, M2, OTHER, env_of, img, libpath, proc, progs, spawn_case  # noqa: F401  (fixtures)


# ---------------------------------------------------------------- spawn and exec, as Libc calls them

@pytest.mark.parametrize("envsrc", ["environ", "given"])
@pytest.mark.parametrize("other", [True, False], ids=["other library", "alone"])
@pytest.mark.parametrize("child", list(CHILDREN))
@pytest.mark.parametrize("how", HOWS)
def test_spawn_and_exec_paths(img, progs, how, child, other, envsrc):
    spawn_case(img, progs, how, child, other, False, envsrc)


@pytest.mark.parametrize("envsrc", ["environ", "given"])
@pytest.mark.parametrize("how", ["posix_spawnp", "execvp", "execlp"])
@pytest.mark.parametrize("child", ["matching", "non-matching"])
def test_search_with_failing_candidates_first(img, progs, how, child, envsrc):
    spawn_case(img, progs, how, child, True, True, envsrc)


@pytest.mark.parametrize("how", ["system", "popen"])
def test_system_and_popen_run_the_shell_through_posix_spawn(img, progs, how):
    env = env_of(**M2)
    env["DYLD_INSERT_LIBRARIES"] = OTHER + ":" + libpath()
    p = proc(img, env)
    r = p.run_child(how, "llama-server", ["-x"])
    assert r["ran"]["path"] == "/bin/sh" and r["ran"]["argv"] == ["sh", "-c", "llama-server -x"]
    got = dict(e.split("=", 1) for e in r["ran"]["env"])
    assert got["DYLD_INSERT_LIBRARIES"] == OTHER and not any(k.startswith("VZCAPS_") for k in got)
