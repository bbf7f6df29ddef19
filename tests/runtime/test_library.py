"""The injected library preloaded into the GNU-runtime stand-in: every rule of the
configuration table, observed through the answers a real Objective-C program gets."""
import os
import shutil
import subprocess

import pytest

from conftest import (BUILD, STOCK_FAMILIES, STOCK_TG, STOCK_WS, clean_env, parse_probe, require_built, run_probe)

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the GNU-runtime rig and LD_PRELOAD)

ALL = sorted(STOCK_FAMILIES)


def expect_families(ceiling=0, extra=()):
    return {f: 1 if STOCK_FAMILIES[f] or (1001 <= f <= ceiling) or f in extra else 0 for f in ALL}


def probe(env, *args, **kw):
    p = run_probe(env, *args, **kw)
    assert p.returncode == 0, p.stderr
    return parse_probe(p.stdout), p.stderr


HOOKED = "vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport"


def log_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("vzcaps:")]


def test_stock_without_library(build):
    runs, err = probe(clean_env(), preload=False)
    assert runs[0]["families"] == STOCK_FAMILIES
    assert (runs[0]["tg"], runs[0]["ws"]) == (STOCK_TG, STOCK_WS)


def test_unconfigured_is_silent_and_stock(build):
    runs, err = probe(clean_env())
    assert runs[0]["families"] == STOCK_FAMILIES
    assert (runs[0]["tg"], runs[0]["ws"]) == (STOCK_TG, STOCK_WS)
    assert err == ""


@pytest.mark.parametrize("brand,family", [
    ("Apple M1", 1007), ("Apple M1 Ultra (Virtual)", 1007), ("Apple M2", 1008), ("Apple M2 Pro (Virtual)", 1008),
    ("Apple M3", 1009), ("Apple M3 Max (Virtual)", 1009), ("Apple M4", 1009), ("Apple M4 Max (Virtual)", 1009),
    ("Apple M5", 1010), ("Apple M5 (Virtual)", 1010)])
def test_auto_follows_host_chip(build, brand, family):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP=brand))
    assert runs[0]["families"] == expect_families(family)
    assert (runs[0]["tg"], runs[0]["ws"]) == (STOCK_TG, STOCK_WS)
    lines = log_lines(err)
    assert len(lines) == 1 and lines[0].startswith(HOOKED + ": Apple families up to %d" % family)


@pytest.mark.parametrize("brand", ["Apple M7 (Virtual)", "Intel Xeon", None])
def test_auto_with_unknown_chip_stays_stock(build, brand):
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto")
    if brand:
        env["VZCAPS_HOST_CHIP"] = brand
    runs, err = probe(env)
    assert runs[0]["families"] == STOCK_FAMILIES
    lines = log_lines(err)
    assert len(lines) == 1 and "left stock" in lines[0] and "VZCAPS_HOST_CHIP" in lines[0]


def test_number_is_clamped_to_host_chip(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="1009", VZCAPS_HOST_CHIP="Apple M1 Ultra (Virtual)"))
    assert runs[0]["families"] == expect_families(1007)
    assert "clamped" in err


def test_number_with_unknown_chip_is_used_unvalidated(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="1009"))
    assert runs[0]["families"] == expect_families(1009)
    assert "not validated" in err


def test_unsafe_override_skips_clamping(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="1010", VZCAPS_HOST_CHIP="Apple M1",
                                VZCAPS_UNSAFE_BEYOND_HARDWARE="1", VZCAPS_MAX_THREADGROUP_MEMORY="65536"))
    assert runs[0]["families"] == expect_families(1010)
    assert runs[0]["tg"] == 65536
    assert "unsafe_beyond_hardware is set" in err and len(log_lines(err)) == 1 and log_lines(err)[0].startswith(HOOKED + ": ")


def test_stock_supported_kept_under_low_ceiling(build):
    runs, _ = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="1002", VZCAPS_HOST_CHIP="Apple M2"))
    assert runs[0]["families"] == STOCK_FAMILIES  # 1003..1005 stay supported


@pytest.mark.parametrize("var,value", [
    ("VZCAPS_APPLE_FAMILY_MAX", "1009x"), ("VZCAPS_APPLE_FAMILY_MAX", "-1007"), ("VZCAPS_APPLE_FAMILY_MAX", "0x3f1"),
    ("VZCAPS_APPLE_FAMILY_MAX", " 1007"), ("VZCAPS_APPLE_FAMILY_MAX", "1011"), ("VZCAPS_APPLE_FAMILY_MAX", "apple12"),
    ("VZCAPS_APPLE_FAMILY_MAX", ""), ("VZCAPS_MAX_THREADGROUP_MEMORY", "32k"),
    ("VZCAPS_MAX_THREADGROUP_MEMORY", "99999999999999999999999"), ("VZCAPS_RECOMMENDED_WORKING_SET_SIZE", "+5"),
    ("VZCAPS_EXTRA_FAMILIES", "metal9"), ("VZCAPS_EXTRA_FAMILIES", "metal3, metal4"), ("VZCAPS_EXTRA_FAMILIES", "apple9"),
    ("VZCAPS_UNSAFE_BEYOND_HARDWARE", "yes please"), ("VZCAPS_INHERIT", "2"), ("VZCAPS_LOG", "loud"),
    ("VZCAPS_APPLE_FAMILY_MAXIMUM", "1007"),
])
def test_malformed_value_leaves_process_stock(build, var, value):
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
    env[var] = value
    runs, err = probe(env)
    assert runs[0]["families"] == STOCK_FAMILIES
    assert (runs[0]["tg"], runs[0]["ws"]) == (STOCK_TG, STOCK_WS)
    lines = log_lines(err)
    assert len(lines) == 1 and "left stock" in lines[0] and var in lines[0], err


@pytest.mark.parametrize("value", ["off", "0"])
def test_off_is_silent(build, value):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX=value, VZCAPS_HOST_CHIP="Apple M2"))
    assert runs[0]["families"] == STOCK_FAMILIES and err == ""


@pytest.mark.parametrize("floor,chip,want", [
    ("16384", "Apple M2", STOCK_TG), ("32768", "Apple M2", 32768), ("65536", "Apple M2", 32768),
    ("65536", "Apple M9", 65536)])
def test_threadgroup_floor(build, floor, chip, want):
    runs, _ = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="1007", VZCAPS_HOST_CHIP=chip, VZCAPS_MAX_THREADGROUP_MEMORY=floor))
    assert runs[0]["tg"] == want


def test_working_set_floor(build):
    mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE")
    runs, _ = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2",
                              VZCAPS_RECOMMENDED_WORKING_SET_SIZE="1000"))
    assert runs[0]["ws"] == STOCK_WS  # below stock: never lowered
    runs, _ = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2",
                              VZCAPS_RECOMMENDED_WORKING_SET_SIZE=str(STOCK_WS + 4096)))
    assert runs[0]["ws"] == max(STOCK_WS, min(STOCK_WS + 4096, mem))
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2",
                                VZCAPS_RECOMMENDED_WORKING_SET_SIZE=str(1 << 49)))
    assert runs[0]["ws"] == max(STOCK_WS, mem)
    assert "clamped to physical memory" in err



@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("sets, want", [
    ("1000,3000", ["2000", "3000"]),  # raised to the floor; then a device at its address, above it: stock
    ("3000,1000", ["3000", "2000"]),  # the other way round: the new device below the floor gets it
])
def test_a_device_at_a_freed_ones_address_is_asked_afresh(build, sets, want, mixed):
    """A limit's answer is remembered per device; a new device made where another was must not
    get what was remembered about the old one (its stock answer lowered to the floor, or the
    floor withheld). mixed: an image the scope keeps stock is loaded (libobjc here, which asks
    nothing), so the callers' pages decide and the device below the floor is remembered apart."""
    env = clean_env(FAKEMETAL_CLASS="sized", FAKEMETAL_WORKING_SETS=sets, VZCAPS_APPLE_FAMILY_MAX="auto",
                    VZCAPS_HOST_CHIP="Apple M2", VZCAPS_RECOMMENDED_WORKING_SET_SIZE="2000",
                    **({"VZCAPS_STOCK_CALLERS": "libobjc*"} if mixed else {}))
    p = run_probe(env, "--reuse")
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("reuse "))
    assert line.endswith(" same-address 1"), line  # the case itself: the second device took the first's place
    assert line.split()[1:3] == want, line


def test_extra_families(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2",
                                VZCAPS_EXTRA_FAMILIES="metal3,mac1"))
    assert runs[0]["families"] == expect_families(1008, extra=(5001, 2001))
    assert "MLX" in err


def test_compatibility_variables(build):
    env = clean_env(TART_METAL_APPLE_FAMILY_MAX="1009", TART_METAL_MAX_THREADGROUP_MEMORY="65536",
                    LUME_METAL_APPLE_FAMILY_MAX="1006")
    runs, err = probe(env)  # unknown chip: used as given, not validated
    assert runs[0]["families"] == expect_families(1009)
    assert runs[0]["tg"] == 65536
    assert "LUME_METAL_* ignored: TART_METAL_* is set and comes first" in err
    env["VZCAPS_HOST_CHIP"] = "Apple M1"  # combines: the chip the compatible claims are checked against
    runs, err = probe(env)
    assert runs[0]["families"] == expect_families(1007) and runs[0]["tg"] == 32768  # clamped to the M1
    env["VZCAPS_MAX_THREADGROUP_MEMORY"] = "32768"  # a VZCAPS_ claim silences them, and says so...
    runs, err = probe(env)
    assert runs[0]["families"] == STOCK_FAMILIES
    assert "apple_family_max is not" in err  # ...and a claim without the switch is an error
    runs, err = probe(clean_env(TART_METAL_APPLE_FAMILY_MAX="1009", VZCAPS_APPLE_FAMILY_MAX="1006", VZCAPS_HOST_CHIP="Apple M3"))
    assert runs[0]["families"] == expect_families(1006)
    assert "TART_METAL_* ignored: VZCAPS_APPLE_FAMILY_MAX is set" in err
    runs, _ = probe(clean_env(LUME_METAL_APPLE_FAMILY_MAX="1006"))
    assert runs[0]["families"] == expect_families(1006)


def test_method_implemented_on_the_class_itself(build):
    runs, _ = probe(clean_env(FAKEMETAL_CLASS="own", VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M3"))
    assert runs[0]["class"] == "OwnParavirtDevice"
    assert runs[0]["families"] == expect_families(1009)


def test_methods_only_on_superclass(build):
    runs, _ = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M3",
                              VZCAPS_MAX_THREADGROUP_MEMORY="32768"))
    assert runs[0]["class"] == "AppleParavirtDevice"
    assert runs[0]["families"] == expect_families(1009)


@pytest.mark.parametrize("variant", ["", "own", "lacking"])
def test_stand_in_compiled_into_the_executable(build, variant):
    """No factory to preempt and classes registered after the library's constructor: the
    -[_MTLDevice initGPUFamilySupport] hook must still find them (LackingDevice is not an
    _MTLDevice, so it stays stock)."""
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", FAKEMETAL_CLASS=variant)
    runs, err = probe(env, exe=BUILD / "probe_static")
    if variant == "lacking":
        assert runs[0]["families"] == {f: 1 if 1001 <= f <= 1005 else 0 for f in ALL}
    else:
        assert runs[0]["families"] == expect_families(1008)
    # lacking: its class is left stock (one line saying why) and nothing is hooked
    cls = {"": "AppleParavirtDevice", "own": "OwnParavirtDevice"}.get(variant)
    assert [l.split(": ")[1] for l in log_lines(err) if " hooked " in l] == (
        [f"hooked {cls} for probe_static via initGPUFamilySupport"] if cls else [])


def test_class_lacking_a_needed_method_stays_stock(build):
    runs, err = probe(clean_env(FAKEMETAL_CLASS="lacking", VZCAPS_APPLE_FAMILY_MAX="auto",
                                VZCAPS_HOST_CHIP="Apple M3", VZCAPS_MAX_THREADGROUP_MEMORY="32768"))
    assert runs[0]["class"] == "LackingDevice"
    assert runs[0]["families"] == {f: 1 if 1001 <= f <= 1005 else 0 for f in ALL}  # the class's own stock
    assert runs[0]["tg"] is None
    assert "has no -maxThreadgroupMemoryLength; left stock" in err
    # the same class is fine when the profile does not need that method
    runs, err = probe(clean_env(FAKEMETAL_CLASS="lacking", VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M3"))
    assert runs[0]["families"][1009] == 1


def test_long_class_name_is_clipped_visibly(build):
    # regression: the reason line cut a long class name silently at 256 bytes
    runs, err = probe(clean_env(FAKEMETAL_CLASS="lacking-long", VZCAPS_APPLE_FAMILY_MAX="auto",
                                VZCAPS_HOST_CHIP="Apple M3", VZCAPS_MAX_THREADGROUP_MEMORY="32768"))
    assert runs[0]["class"] == "Lacking" + "X" * 300
    assert "vzcaps: device class Lacking" + "X" * 113 + "...(307 bytes) has no -maxThreadgroupMemoryLength; left stock\n" in err


def test_sixteen_threads(build):
    runs, _ = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"), "--threads", "16")
    assert runs[0]["threads"] == "threads 16 mismatches 0"
    assert runs[1]["families"] == expect_families(1008)


def test_children_start_stock(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"), "--child")
    assert runs[0]["families"] == expect_families(1008)
    assert runs[0]["preload"] == "(unset)"
    assert runs[1]["families"] == STOCK_FAMILIES
    assert [l.split(": ")[1] for l in log_lines(err)] == [HOOKED[8:]]


def test_children_keep_injection_with_inherit(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", VZCAPS_INHERIT="1"), "--child")
    assert runs[0]["families"] == expect_families(1008)
    assert runs[1]["families"] == expect_families(1008)
    assert [l.split(": ")[1] for l in log_lines(err)] == [HOOKED[8:], HOOKED[8:]]  # one line per process


def test_other_preloads_survive_stripping(build):
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
    env["LD_PRELOAD"] = f"{BUILD / 'libvzcaps.so'}:{BUILD / 'libfakemetal.so'}"
    p = subprocess.run([str(BUILD / "probe")], env=env, capture_output=True, text=True, timeout=60)
    runs = parse_probe(p.stdout)
    assert runs[0]["preload"] == str(BUILD / "libfakemetal.so")
    assert runs[0]["families"] == expect_families(1008)


@pytest.mark.parametrize("inherit", ["", "matching"])
@pytest.mark.parametrize("how", ["link", "copy"])
def test_the_library_by_another_name_leaves_the_children_too(build, tmp_path, how, inherit):
    # issue 45 item 3: LD_PRELOAD names the library through a link or a copy called vz.so; the
    # process and its children lose it as when it is named libvzcaps.so (by what the file is,
    # as the stock runs of the command judge it); another library beside it stays. With inherit
    # = matching (a child no section matches), the same, and inheritance is set up (no note).
    vz = tmp_path / "vz.so"
    os.symlink(BUILD / "libvzcaps.so", vz) if how == "link" else shutil.copy(BUILD / "libvzcaps.so", vz)
    other = str(BUILD / "libfakemetal.so")
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", **({"VZCAPS_INHERIT": inherit} if inherit else {}))
    for preload, left in ((f"{vz}", "(unset)"), (f"{other}:{vz}", other)):
        runs, err = probe(env, "--child", lib=preload)
        assert runs[0]["families"] == expect_families(1008)  # the library loaded as vz.so is configured
        assert [runs[0]["preload"], runs[1]["preload"]] == [left, left], preload
        assert runs[1]["families"] == STOCK_FAMILIES
        assert [l.split(": ")[1] for l in log_lines(err)] == [HOOKED[8:]]  # one process hooked, not the child
        assert "could not be set up" not in err
    # a file of the library's size without its marker is not the library: it stays
    fake = tmp_path / "fake.so"
    fake.write_bytes(bytes((BUILD / "libvzcaps.so").stat().st_size))
    runs, err = probe(env, "--child", lib=f"{BUILD / 'libvzcaps.so'}:{fake}")
    assert [runs[0]["preload"], runs[1]["preload"]] == [str(fake), str(fake)]


def test_quiet_log(build):
    runs, err = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", VZCAPS_LOG="quiet"))
    assert runs[0]["families"] == expect_families(1008) and err == ""


def test_config_file_sections_by_executable_name(build, tmp_path):
    conf = tmp_path / "vzcaps.conf"
    conf.write_text("[llama]\nmatch = llama-* whisper-?li\napple_family_max = auto\n"
                    "[mlx]\nmatch = python3*\napple_family_max = off\n"
                    "[default]\napple_family_max = 1006\n")
    for name in ("llama-bench", "whisper-cli", "python3.12", "other"):
        os.symlink(BUILD / "probe", tmp_path / name)
    env = clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M4 Max (Virtual)")
    want = {"llama-bench": expect_families(1009), "whisper-cli": expect_families(1009),
            "python3.12": STOCK_FAMILIES, "other": expect_families(1006)}
    for name, fams in want.items():
        runs, err = probe(env, exe=tmp_path / name)
        assert runs[0]["families"] == fams, name
    runs, err = probe(dict(env, VZCAPS_PROFILE="mlx"), exe=tmp_path / "llama-bench")
    assert runs[0]["families"] == STOCK_FAMILIES


def test_bad_config_file_rejected_whole(build, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("[llama]\nmatch = probe\napple_family_max = auto\nmax_threadgroup_memory = lots\n")
    runs, err = probe(clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2"))
    assert runs[0]["families"] == STOCK_FAMILIES
    assert f"{conf}:4: max_threadgroup_memory:" in err
    runs, err = probe(clean_env(VZCAPS_CONFIG=str(tmp_path / "missing.conf"), VZCAPS_HOST_CHIP="Apple M2"))
    assert runs[0]["families"] == STOCK_FAMILIES and "missing.conf: cannot open" in err


def test_home_config_is_found(build, tmp_path):
    (tmp_path / ".config" / "vzcaps").mkdir(parents=True)
    (tmp_path / ".config" / "vzcaps" / "vzcaps.conf").write_text("[default]\napple_family_max = auto\n")
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    env["HOME"] = str(tmp_path)
    runs, err = probe(env)
    assert runs[0]["families"] == expect_families(1008)


def test_sanitized_library(build):
    """The library built with ASan and UBSan, preloaded after the ASan runtime."""
    san = BUILD / "san" / "libvzcaps.so"
    require_built(san, how="the sanitized build")
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", VZCAPS_MAX_THREADGROUP_MEMORY="65536",
                    VZCAPS_EXTRA_FAMILIES="metal3", ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")
    env["LD_PRELOAD"] = f"{asan}:{san}"
    p = subprocess.run([str(BUILD / "probe"), "--threads", "16"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    runs = parse_probe(p.stdout)
    assert runs[0]["threads"] == "threads 16 mismatches 0"
    assert runs[1]["families"] == expect_families(1008, extra=(5001,))
    assert "runtime error" not in p.stderr and "AddressSanitizer" not in p.stderr


def test_a_relative_home_is_ignored_like_a_relative_xdg_config_home(build, tmp_path):
    # issue 25 row 15: HOME=. with .config/vzcaps/vzcaps.conf here must not configure the
    # library (it would depend on the current directory); an absolute HOME to the same place does
    conf = tmp_path / ".config" / "vzcaps"
    conf.mkdir(parents=True)
    (conf / "vzcaps.conf").write_text("[default]\napple_family_max = 1008\n")
    (conf / "vzcaps.conf").chmod(0o644)
    for home, want in ((".", STOCK_FAMILIES), ("./", STOCK_FAMILIES), (str(tmp_path), expect_families(1008))):
        p = subprocess.run([str(BUILD / "probe")], env=clean_env(HOME=home, LD_PRELOAD=str(BUILD / "libvzcaps.so")),
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert parse_probe(p.stdout)[0]["families"] == want, home
