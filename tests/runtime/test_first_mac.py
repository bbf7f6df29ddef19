"""Behaviours the first Mac run depends on, proven on the GNU-runtime rig (issue: first Mac):
hooks installed before the original -initGPUFamilySupport, and wrapper devices."""
import subprocess

import pytest

from conftest import BUILD, STOCK_FAMILIES, STOCK_WS, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

M1 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M1")


def probe(env, exe="probe", preload=True):
    env = dict(env)
    if preload:
        env["LD_PRELOAD"] = str(BUILD / "libvzcaps.so")
    p = subprocess.run([str(BUILD / exe)], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p


def at_init(p):
    return [l for l in p.stdout.splitlines() if l.startswith("apple7AtInit ")]


@pytest.mark.parametrize("exe", ["probe", "probe_static"])
@pytest.mark.parametrize("variant", ["", "own"])
def test_state_built_during_init_sees_the_profile(exe, variant):
    """_MTLDevice's -initGPUFamilySupport stores [self supportsFamily:1007] (the rig's stand-in
    for internal state the real one may build): the hooks must be on the class by then."""
    assert at_init(probe(clean_env(FAKEMETAL_CLASS=variant), exe, preload=False)) == ["apple7AtInit 0"]
    assert at_init(probe(clean_env(FAKEMETAL_CLASS=variant, **M1), exe)) == ["apple7AtInit 1"]


@pytest.mark.parametrize("variant", ["wrapper", "forwarding"])
def test_wrapper_devices_answer_with_the_profile(variant):
    ws = STOCK_WS + (1 << 20)
    p = probe(clean_env(FAKEMETAL_CLASS=variant, VZCAPS_RECOMMENDED_WORKING_SET_SIZE=str(ws), **M1))
    run = parse_probe(p.stdout)[0]
    assert run["class"] == {"wrapper": "WrapperDevice", "forwarding": "ForwardingDevice"}[variant]
    assert run["families"] == {f: 1 if v or 1001 <= f <= 1007 else 0 for f, v in STOCK_FAMILIES.items()}
    assert run["ws"] == ws
    lines = [l for l in p.stderr.splitlines() if l.startswith("vzcaps:")]
    # never "left stock" for a device that is not; the wrapped device's class is the one hooked
    assert len(lines) == 1
    assert lines[0].startswith("vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport: Apple families up to")


def test_wrapper_devices_are_stock_without_the_library():
    for variant in ("wrapper", "forwarding"):
        run = parse_probe(probe(clean_env(FAKEMETAL_CLASS=variant), preload=False).stdout)[0]
        assert run["families"] == STOCK_FAMILIES
