"""The rig's trigger learns of classes compiled into the executable from the GNU runtime's
_objc_load_callback, a single global hook another library may use too: whichever of the two
sets it first, both still see every class (the library keeps the callback it found, and
build/libloadhook.so keeps the library's), and the device is hooked."""
import subprocess

import pytest

from conftest import BUILD, clean_env, require_built

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401


@pytest.mark.parametrize("order", ["vzcaps first", "loadhook first"])
def test_another_load_callback_and_the_watch_both_see_the_classes(order):
    require_built(BUILD / "libloadhook.so", how="make rig")
    libs = [str(BUILD / "libvzcaps.so"), str(BUILD / "libloadhook.so")]
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
    # the first entry's constructor runs last (ld.so initialises the preloaded objects in reverse)
    env["LD_PRELOAD"] = ":".join(libs if order == "vzcaps first" else libs[::-1])
    p = subprocess.run([str(BUILD / "probe_static")], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "vzcaps: hooked AppleParavirtDevice for probe_static via initGPUFamilySupport" in p.stderr
    counts = [int(l.split()[1]) for l in p.stderr.splitlines() if l.startswith("loadhook: ")]
    assert len(counts) == 1 and counts[0] > 0, p.stderr  # the classes the executable registers
