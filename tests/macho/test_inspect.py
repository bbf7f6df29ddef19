"""vzcaps inspect and run's target check on Mach-O files: generated ones with known
signatures, the cross-built artifacts, and truncated, corrupted and patched variants."""
import json
import os
import struct
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import machogen as mg  # noqa: E402
from conftest import BUILD, ROOT, built, clean_env  # noqa: E402

VZ = str(BUILD / "vzcaps")
DIST = ROOT / "dist"
SELECTORS = ["supportsFamily:", "maxThreadgroupMemoryLength", "recommendedMaxWorkingSetSize", "name"]
ALLOW = "com.apple.security.cs.allow-dyld-environment-variables"
DISABLE_LV = "com.apple.security.cs.disable-library-validation"


def inspect(path, *extra, env=None):
    p = subprocess.run([VZ, "inspect", "--json", *extra, str(path)], capture_output=True, text=True,
                       env=env or clean_env(), timeout=60)
    return p, (json.loads(p.stdout)["files"][0] if p.stdout else None)


def write(tmp_path, name, data):
    f = tmp_path / name
    f.write_bytes(data)
    return f


def test_signed_dylib_with_capability_selectors(tmp_path):
    f = write(tmp_path, "llama-server", mg.build(methnames=SELECTORS + ["init"], cstrings=["ggml_metal_device_init"],
                                                 libs=["/System/Library/Frameworks/Metal.framework/Versions/A/Metal"]))
    p, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 0, p.stderr
    s = info["slices"][0]
    assert s["arch"] == "arm64" and s["minos"] == "13.0"
    assert s["selectors"] == SELECTORS
    assert s["signed"] and s["signature_valid"] and s["adhoc"] and s["identifier"] == "demo"
    assert s["hardened_runtime"] is False and s["injection"] == "honoured"
    assert s["clients"] == ["ggml"]
    assert any("SIMD-group" in e for e in s["effects"])
    assert s["libraries"] == ["/System/Library/Frameworks/Metal.framework/Versions/A/Metal"]


def test_universal_file(tmp_path):
    f = write(tmp_path, "uni", mg.fat(mg.build(cputype=mg.CPU_X86_64, cpusubtype=3), mg.build()))
    p, info = inspect(f)
    assert p.returncode == 0 and info["universal"] is True
    assert [s["arch"] for s in info["slices"]] == ["x86_64", "arm64"]
    assert all(s["signature_valid"] for s in info["slices"])


def test_arm64e_subtype(tmp_path):
    f = write(tmp_path, "e", mg.build(cpusubtype=0x80000002))
    _, info = inspect(f)
    assert info["slices"][0]["arch"] == "arm64e"


@pytest.mark.parametrize("flags,ents,verdict,needle", [
    (mg.CS_ADHOC | mg.CS_RUNTIME, None, "ignored", "allow-dyld-environment-variables"),
    (mg.CS_ADHOC | mg.CS_RUNTIME, {ALLOW: True}, "ignored", "disable-library-validation"),
    (mg.CS_ADHOC | mg.CS_RUNTIME, {ALLOW: False, DISABLE_LV: True}, "ignored", "allow-dyld-environment-variables"),
    (mg.CS_ADHOC | mg.CS_RUNTIME, {ALLOW: True, DISABLE_LV: True}, "honoured", "entitled"),
    (mg.CS_ADHOC | mg.CS_REQUIRE_LV, None, "ignored", "library validation"),
    (mg.CS_ADHOC, {ALLOW: True}, "honoured", "no hardened runtime"),
])
def test_hardened_runtime_and_entitlements(tmp_path, flags, ents, verdict, needle):
    xml = mg.entitlements_xml(**ents) if ents is not None else None
    f = write(tmp_path, "app", mg.build(flags=flags, entitlements=xml))
    _, info = inspect(f)
    s = info["slices"][0]
    assert s["signature_valid"], s["signature_problem"]
    assert s["entitlements"]["present"] is (ents is not None)
    assert s["entitlements"][ALLOW] is bool(ents and ents.get(ALLOW))
    assert s["entitlements"][DISABLE_LV] is bool(ents and ents.get(DISABLE_LV))
    assert s["injection"] == verdict and needle in s["injection_reason"]


def test_platform_binary_ignores_injection(tmp_path):
    f = write(tmp_path, "sys", mg.build(platform=1))
    _, info = inspect(f)
    assert info["slices"][0]["injection"] == "ignored" and "platform" in info["slices"][0]["injection_reason"]


def test_patched_code_directory_flags(tmp_path):
    data = bytearray(mg.build())
    at = mg.find_code_directory(data)
    struct.pack_into(">I", data, at, struct.unpack_from(">I", data, at)[0] | mg.CS_RUNTIME)
    f = write(tmp_path, "patched", bytes(data))
    _, info = inspect(f)
    s = info["slices"][0]
    assert s["hardened_runtime"] and s["signature_valid"]  # flags are not covered by page hashes
    assert s["injection"] == "ignored"


def test_corrupted_code_and_entitlements(tmp_path):
    data = bytearray(mg.build(methnames=SELECTORS))
    data[40] ^= 0xFF  # inside the load commands: page 0
    _, info = inspect(write(tmp_path, "code", bytes(data)))
    s = info["slices"][0]
    assert s["signature_valid"] is False and "page 0" in s["signature_problem"]
    xml = mg.entitlements_xml(**{ALLOW: True})
    data = bytearray(mg.build(entitlements=xml))
    i = bytes(data).rfind(b"<true/>")
    data[i + 1] = ord("T")
    _, info = inspect(write(tmp_path, "ent", bytes(data)))
    assert "entitlements do not match" in info["slices"][0]["signature_problem"]


def test_unsigned_arm64(tmp_path):
    _, info = inspect(write(tmp_path, "u", mg.build(signed=False)))
    s = info["slices"][0]
    assert s["signed"] is False and s["signature_valid"] is None and s["injection"] == "unknown"


def test_truncated_and_garbage_inputs(tmp_path):
    whole = mg.fat(mg.build(cputype=mg.CPU_X86_64, cpusubtype=3, methnames=SELECTORS), mg.build(entitlements=b"<x/>"))
    cuts = sorted(set(list(range(0, 64)) + list(range(64, len(whole), 97)) + [len(whole) - 1]))
    for n in cuts:
        f = write(tmp_path, "cut", whole[:n])
        p, _ = inspect(f)
        assert p.returncode in (0, 1), (n, p.stderr)  # never a crash
        if p.returncode == 1:
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"vzcaps inspect: {f}: "), (n, p.stderr)
    for name, data, needle in [
        ("garbage", b"\x7fELF" + b"\0" * 60, "not a Mach-O file"),
        ("tiny", b"\xcf\xfa", "too short"),
        ("m32", struct.pack("<I", 0xFEEDFACE) + b"\0" * 40, "32-bit"),
        ("fat0", struct.pack(">II", 0xCAFEBABE, 0) + b"\0" * 8, "0 slices"),
        ("fatbig", struct.pack(">II", 0xCAFEBABE, 1) + struct.pack(">iiIII", 0x0100000C, 0, 4096, 1 << 30, 12), "extends past"),
    ]:
        p, _ = inspect(write(tmp_path, name, data))
        assert p.returncode == 1 and needle in p.stderr, (name, p.stderr)
    p, _ = inspect(tmp_path / "missing")
    assert p.returncode == 1 and "cannot open" in p.stderr


def test_app_bundle_main_executable(tmp_path):
    app = tmp_path / "Demo.app" / "Contents"
    (app / "MacOS").mkdir(parents=True)
    (app / "Info.plist").write_text("<plist><dict><key>CFBundleExecutable</key><string>demo-bin</string></dict></plist>")
    (app / "MacOS" / "demo-bin").write_bytes(mg.build(methnames=["supportsFamily:"]))
    p, info = inspect(tmp_path / "Demo.app")
    assert p.returncode == 0 and info["slices"][0]["selectors"] == ["supportsFamily:"]


def test_mlx_warning_with_metal3(tmp_path):
    f = write(tmp_path, "python3", mg.build(libs=["@rpath/libmlx.dylib"]))
    _, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2", VZCAPS_EXTRA_FAMILIES="metal3"))
    eff = info["slices"][0]["effects"]
    assert [e for e in eff if "MLX" in e] == ['! MLX: extra family metal3 makes it fail with "Unable to construct residency set"; drop metal3']
    _, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"))
    assert info["slices"][0]["effects"] == ["MLX: gains nothing: it ignores Apple families"]


def test_one_verdict_per_client_never_contradicting(tmp_path):
    """A llama-server whose Metal code lives in libggml-metal: ggml gains, and nothing says it
    gains nothing (the contradiction the first review found)."""
    f = write(tmp_path, "llama-server", mg.build(libs=["@rpath/libggml-metal.dylib", "@rpath/libllama.dylib"]))
    _, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"))
    eff = info["slices"][0]["effects"]
    assert eff == ["ggml/llama.cpp: gains: Apple8 turns on SIMD-group reduction, matrix multiply and bfloat"]
    _, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="1006", VZCAPS_HOST_CHIP="Apple M2"))
    assert info["slices"][0]["effects"] == ["ggml/llama.cpp: gains nothing: Apple6 is below Apple7, which its fast paths need"]
    both = write(tmp_path, "python3.12", mg.build(libs=["@rpath/libggml-metal.dylib", "@rpath/libtorch_cpu.dylib"]))
    _, info = inspect(both, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"))
    assert info["slices"][0]["effects"] == ["ggml/llama.cpp: gains: Apple8 turns on SIMD-group reduction, matrix multiply and bfloat",
                                            "PyTorch MPS: keeps the stock answers (caller scope: stock_callers)"]
    plain = write(tmp_path, "tool", mg.build())
    _, info = inspect(plain, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"))
    assert info["slices"][0]["effects"] == [
        "no client recognised, and it references none of the queries this profile changes (a library it loads may)"]


def test_plugins_depend_on_the_executable_that_loads_them(tmp_path):
    addon = write(tmp_path, "binding.node", mg.build(libs=["@rpath/libggml-metal.dylib"]))
    _, info = inspect(addon)
    s = info["slices"][0]
    assert s["injection"] == "unknown" and "depends on the executable that loads it" in s["injection_reason"]
    bundle = bytearray(mg.build())
    struct.pack_into("<I", bundle, 12, 8)  # MH_BUNDLE
    _, info = inspect(write(tmp_path, "plugin.bundle", bytes(bundle)))
    assert "depends on the executable that loads it" in info["slices"][0]["injection_reason"]


def test_text_output(tmp_path):
    f = write(tmp_path, "t", mg.fat(mg.build(cputype=mg.CPU_X86_64, cpusubtype=3), mg.build(flags=mg.CS_ADHOC | mg.CS_RUNTIME)))
    p = subprocess.run([VZ, "inspect", str(f)], capture_output=True, text=True, env=clean_env())
    assert p.returncode == 0
    assert "universal Mach-O, 2 slices" in p.stdout and "injection   ignored" in p.stdout


needs_dist = built(DIST / "libvzcaps.dylib", how="make dist")
needs_no_arm64e = pytest.mark.skipif(sys.platform == "darwin", reason="a native macOS build has an arm64e slice")


@needs_dist
def test_cross_built_artifacts_verify():
    for name in ("libvzcaps.dylib", "vzcaps"):
        _, info = inspect(DIST / name)
        assert info["universal"] is True
        assert {"arm64", "x86_64"} <= {s["arch"] for s in info["slices"]}
        for s in info["slices"]:
            assert s["signature_valid"] and s["adhoc"], s
            assert s["minos"] == "13.0"
    _, info = inspect(DIST / "libvzcaps.dylib")
    assert set(SELECTORS[:3]) <= set(info["slices"][0]["selectors"])


@needs_dist
@needs_no_arm64e
def test_run_refuses_arm64e_target_and_warns_on_hardened(tmp_path):
    target = tmp_path / "llama-cli"
    target.write_bytes(mg.build(filetype=2, cpusubtype=0x80000002, methnames=["supportsFamily:"]))
    target.chmod(0o755)
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    p = subprocess.run([VZ, "run", "--library", str(DIST / "libvzcaps.dylib"), "--dry-run", "--", str(target)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 125
    assert "runs as arm64e and the library has only x86_64 arm64" in p.stderr
    assert p.stdout == ""
    hard = tmp_path / "hardened"
    hard.write_bytes(mg.build(filetype=2, flags=mg.CS_ADHOC | mg.CS_RUNTIME, methnames=["supportsFamily:"]))
    hard.chmod(0o755)
    p = subprocess.run([VZ, "run", "--library", str(DIST / "libvzcaps.dylib"), "--dry-run", "--", str(hard)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "will ignore the library" in p.stderr
    assert "allow-dyld-environment-variables" in p.stderr


def slice_offsets(data):
    """(cputype, offset) of each slice of a universal file."""
    n, = struct.unpack_from(">I", data, 4)
    return [struct.unpack_from(">II", data, 8 + 20 * i)[0:1] + struct.unpack_from(">I", data, 8 + 20 * i + 8)
            for i in range(n)]


@needs_dist
def test_patched_cross_built_slices(tmp_path):
    """The cross-built library with its arm64 slice patched: the header's CPU subtype set to
    arm64e (in the universal header too), and the CodeDirectory's hardened-runtime bit set."""
    data = bytearray((DIST / "libvzcaps.dylib").read_bytes())
    arm = [off for cpu, off in slice_offsets(data) if cpu == mg.CPU_ARM64][0]
    hard = bytearray(data)
    at = mg.find_code_directory(hard, arm)
    struct.pack_into(">I", hard, at, struct.unpack_from(">I", hard, at)[0] | mg.CS_RUNTIME)
    _, info = inspect(write(tmp_path, "hard.dylib", bytes(hard)))
    s = [x for x in info["slices"] if x["arch"] == "arm64"][0]
    assert s["hardened_runtime"] and s["signature_valid"] and s["injection"] == "ignored"
    e = bytearray(data)
    struct.pack_into("<I", e, arm + 8, 0x80000002)
    for i in range(struct.unpack_from(">I", e, 4)[0]):
        if struct.unpack_from(">I", e, 8 + 20 * i)[0] == mg.CPU_ARM64:
            struct.pack_into(">I", e, 8 + 20 * i + 4, 0x80000002)
    _, info = inspect(write(tmp_path, "e.dylib", bytes(e)))
    s = [x for x in info["slices"] if x["arch"] == "arm64e"][0]
    assert s["signature_valid"] is False and "page 0" in s["signature_problem"]  # the header is hashed
    # the universal header and the slice disagree: a one-line error, not a crash
    mism = bytearray(data)
    struct.pack_into("<I", mism, arm + 8, 0x80000002)
    p, _ = inspect(write(tmp_path, "m.dylib", bytes(mism)))
    assert p.returncode == 1 and "universal header says" in p.stderr


@needs_dist
def test_truncated_cross_built_artifact(tmp_path):
    data = (DIST / "libvzcaps.dylib").read_bytes()
    for n in (16, 4096, 4100, len(data) // 2, len(data) - 100):
        p, _ = inspect(write(tmp_path, "t.dylib", data[:n]))
        assert p.returncode == 1 and ("extends past the end" in p.stderr or "truncated" in p.stderr), (n, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1


def test_inspect_names_the_images_the_caller_scope_answers_stock(tmp_path):
    f = write(tmp_path, "python3.12", mg.build(libs=["@rpath/libtorch_cpu.dylib", "@rpath/libggml-metal.dylib",
                                                     "/usr/lib/libSystem.B.dylib"]))
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M1")
    p, info = inspect(f, env=env)
    assert p.returncode == 0
    assert info["slices"][0]["stock_images"] == [{"image": "libtorch_cpu.dylib", "answers": "stock",
                                                  "why": "PyTorch MPS, stock_callers"}]
    p = subprocess.run([VZ, "inspect", str(f)], capture_output=True, text=True, env=env)
    assert "scope       libtorch_cpu.dylib: stock (PyTorch MPS, stock_callers)" in p.stdout
    _, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M1", VZCAPS_CALLERS="libggml*"))
    assert [i["image"] for i in info["slices"][0]["stock_images"]] == ["python3.12", "libtorch_cpu.dylib", "libSystem.B.dylib"]
    _, info = inspect(f, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M1", VZCAPS_STOCK_CALLERS="none"))
    assert info["slices"][0]["stock_images"] == []


@needs_dist
def test_run_notes_a_target_that_loads_a_stock_caller(tmp_path):
    target = tmp_path / "python3.12"
    target.write_bytes(mg.build(filetype=2, libs=["@rpath/libtorch_cpu.dylib"]))
    target.chmod(0o755)
    p = subprocess.run([VZ, "run", "--library", str(DIST / "libvzcaps.dylib"), "--dry-run", "--", str(target)],
                       capture_output=True, text=True, env=clean_env(VZCAPS_HOST_CHIP="Apple M1"))
    assert p.returncode == 0
    notes = [l for l in p.stderr.splitlines() if "whose calls get stock answers" in l]
    assert notes == [f"vzcaps run: note: {target} loads libtorch_cpu.dylib, whose calls get stock answers "
                     "(caller scope: stock_callers libtorch_cpu.dylib libtorch_cpu.so)"]


@needs_dist
def test_vzcaps_own_binaries_are_not_clients():
    for name in ("vzcaps", "libvzcaps.dylib"):
        _, info = inspect(DIST / name, env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2"))
        for s in info["slices"]:
            assert s["clients"] == [] and s["effects"] == ["vzcaps's own binary: not a Metal client"], (name, s["effects"])


def test_ollama_needs_inherit_for_its_llama_server_children(tmp_path):
    """Ollama's server does no Metal work itself: it starts llama-server --list-devices and
    then llama-server as the runner; inspect says whether the profile reaches them."""
    f = write(tmp_path, "ollama", mg.build())
    _, info = inspect(f, env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    s = info["slices"][0]
    assert s["clients"] == ["ollama"]
    assert s["effects"] == ["! Ollama: its llama-server children (--list-devices discovery, then the runner) do the GPU work and "
                            "start stock: use vzcaps run --inherit, or inherit = yes in a section matching ollama llama-server"]
    conf = tmp_path / "c.conf"
    conf.write_text("[ollama]\nmatch = ollama llama-server\napple_family_max = auto\ninherit = yes\n")
    _, info = inspect(f, "--config", str(conf), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert info["profile"] == "ollama"
    assert info["slices"][0]["effects"] == [
        "Ollama: inherit is on: its llama-server children (--list-devices discovery, then the runner) get the profile"]
    # the runner itself is a llama.cpp client, named by the same section
    runner = write(tmp_path, "llama-server", mg.build(cstrings=["ggml_metal_device_init"]))
    _, info = inspect(runner, "--config", str(conf), env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert info["profile"] == "ollama" and info["slices"][0]["clients"] == ["ggml"]
    # a file merely containing the word is not Ollama
    other = write(tmp_path, "ollama-helper", mg.build())
    _, info = inspect(other, env=clean_env(VZCAPS_HOST_CHIP="Apple M2"))
    assert "ollama" not in info["slices"][0]["clients"]
