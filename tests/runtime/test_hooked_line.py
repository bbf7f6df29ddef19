"""The library's two lines on the GNU-runtime rig: the start line says what is configured; one
more line, once per process, says which device class was hooked and by which path. A process
that never creates a device never says it was hooked."""
import subprocess

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
INIT = "vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport"


def probe(env, *args):
    env = dict(env, LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    p = subprocess.run([str(BUILD / "probe"), *args], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p, [l for l in p.stderr.splitlines() if l.startswith("vzcaps:")]


def test_start_line_says_configured_then_hooked_names_the_class_and_path():
    p, lines = probe(clean_env(**M2))
    assert lines[0].startswith("vzcaps: configured for probe: Apple families up to 1008")
    assert lines[1:] == [INIT]
    assert "enabled" not in p.stderr


def test_no_device_no_hooked_line():
    p, lines = probe(clean_env(**M2), "--no-device")
    assert p.stdout == "no device\n"
    assert len(lines) == 1 and lines[0].startswith("vzcaps: configured for probe")


def test_once_with_many_devices_from_many_threads():
    p, lines = probe(clean_env(**M2), "--threads", "8")
    assert "threads 8 mismatches 0" in p.stdout
    assert lines[1:] == [INIT]


def test_once_with_two_device_classes():
    # the wrapper and the device it wraps: two classes hooked, one line (the first)
    p, lines = probe(clean_env(FAKEMETAL_CLASS="wrapper", **M2))
    assert parse_probe(p.stdout)[0]["class"] == "WrapperDevice"
    assert lines[1:] == [INIT]


def test_factory_path_when_the_class_has_no_init_hook():
    p, lines = probe(clean_env(FAKEMETAL_CLASS="plain", **M2))
    run = parse_probe(p.stdout)[0]
    assert run["class"] == "PlainDevice"
    assert run["families"] == {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}
    assert lines[1:] == ["vzcaps: hooked PlainDevice for probe via factory interposer (MTLCreateSystemDefaultDevice)"]


def test_class_left_stock_is_never_called_hooked():
    p, lines = probe(clean_env(FAKEMETAL_CLASS="lacking", VZCAPS_MAX_THREADGROUP_MEMORY="32768", **M2))
    assert len(lines) == 2 and "left stock" in lines[1]
    assert not any("hooked" in l for l in lines)


def test_quiet_silences_the_hooked_line_too():
    p, lines = probe(clean_env(VZCAPS_LOG="quiet", **M2))
    assert p.stderr == ""


def test_stock_process_says_nothing():
    p, lines = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="off"))
    assert lines == []
