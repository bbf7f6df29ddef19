"""vzcaps prepare on real Developer-ID-signed, hardened Mach-O files (issue: hardened apps).

The input is the Sentry CLI for macOS, a universal (arm64 + x86_64), notarized binary signed
with the hardened runtime, fetched from its public npm package in the test set-up (over HTTPS, no npm needed) (pinned by
version and SHA-256, cached under build/, never stored in the repository). Its thin slices and
a universal file reassembled with lipo, laid out alone and inside an app bundle, are
prepared; every copy must verify with vzcaps's verifier and with the independent one in
machogen.py, be ad hoc without the hardened runtime, keep its code bytes, and leave the
original untouched."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import machogen as mg  # noqa: E402
from conftest import BUILD, ROOT, ROOT_BUILD, clean_env, lipo_tool  # noqa: E402

VZ = str(BUILD / "vzcaps")
PACKAGE, VERSION = "@sentry/cli-darwin", "3.8.0"
TGZ_SHA256 = "711d8d61e448b2e8a10c217acbfe206db7456e0072f041136e3bf7935fdf5cfa"
CACHE = ROOT_BUILD / "test-downloads"


def fetch_npm_package(package, version, dest):
    """The package's tarball from the npm registry (npm's own URL layout, npm_config_registry
    honoured), through Python's HTTPS client: no npm needed. A failure fails the test."""
    registry = os.environ.get("npm_config_registry", os.environ.get("NPM_CONFIG_REGISTRY", "https://registry.npmjs.org/"))
    url = f"{registry.rstrip('/')}/{package}/-/{package.split('/')[-1]}-{version}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            data = r.read()
    except OSError as e:
        pytest.fail(f"could not fetch {url}: {e} (the hardened test binary comes from the npm registry)", pytrace=False)
    tmp = dest.with_name(dest.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(dest)


@pytest.fixture(scope="session")
def hardened():
    """The real hardened universal binary (bytes of bin/sentry-cli)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tgz = CACHE / f"sentry-cli-darwin-{VERSION}.tgz"
    if not tgz.exists():
        fetch_npm_package(PACKAGE, VERSION, tgz)
    assert hashlib.sha256(tgz.read_bytes()).hexdigest() == TGZ_SHA256, "the fetched package is not the pinned one"
    with tarfile.open(tgz) as t:
        data = t.extractfile("package/bin/sentry-cli").read()
    info = mg.verify(data)
    assert [r["ok"] for r in info] == [True, True] and all(r["flags"] & mg.CS_RUNTIME for r in info)
    return data


@pytest.fixture
def inputs(tmp_path, hardened):
    """universal (as published), thin arm64, thin x86_64, universal reassembled by llvm-lipo."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "universal").write_bytes(hardened)
    lipo = lipo_tool()
    for arch in ("arm64", "x86_64"):
        subprocess.run([lipo, str(d / "universal"), "-thin", arch, "-output", str(d / f"thin-{arch}")], check=True)
    subprocess.run([lipo, "-create", str(d / "thin-x86_64"), str(d / "thin-arm64"), "-output", str(d / "assembled")], check=True)
    for f in d.iterdir():
        f.chmod(0o755)
    return d


def prepare(*args, env=None):
    return subprocess.run([VZ, "prepare", *args], capture_output=True, text=True, timeout=300, env=env or clean_env())


def inspect_json(path):
    p = subprocess.run([VZ, "inspect", "--json", str(path)], capture_output=True, text=True, env=clean_env())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["files"][0]


def assert_prepared(original: bytes, copy_path, external=None):
    copy = copy_path.read_bytes()
    ours = inspect_json(copy_path)
    for s in ours["slices"]:
        assert s["signed"] and s["signature_valid"] and s["adhoc"], s
        assert not s["hardened_runtime"] and not s["library_validation"] and not s["entitlements"]["present"]
        assert s["injection"] == "honoured" and s["hardened_runtime"] is False
    before, after = mg.verify(original), mg.verify(copy, external)
    assert [r["ok"] for r in after] == [True] * len(before), after
    for b, a in zip(before, after):
        assert a["flags"] == mg.CS_ADHOC and a["identifier"] == b["identifier"]
        assert a["exec_seg"] == b["exec_seg"]
        # the code bytes (everything before the signature) are unchanged
        assert copy[a["slice_off"]:a["slice_off"] + a["sig_off"]] == original[b["slice_off"]:b["slice_off"] + b["sig_off"]]


@pytest.mark.parametrize("name", ["universal", "thin-arm64", "thin-x86_64", "assembled"])
def test_prepare_real_hardened_binaries(tmp_path, inputs, name):
    src = inputs / name
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "prepared"
    p = prepare("--yes", "--into", str(out), str(src))
    assert p.returncode == 0, p.stderr
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest  # the original is untouched
    assert_prepared(src.read_bytes(), out / name)
    assert f"vzcaps run --inherit -- {out / name}" in p.stdout
    assert sorted(os.listdir(out)) == [f".{name}.vzcaps-prepared", name]  # the copy and its marker, nothing else
    assert inspect_json(src)["slices"][0]["prepare_helps"] is True


def test_prepare_an_app_bundle_signs_nested_code_first(tmp_path, inputs):
    app = tmp_path / "Demo.app" / "Contents"
    for sub in ("MacOS", "Resources", "Frameworks"):
        (app / sub).mkdir(parents=True)
    (app / "Info.plist").write_text("<plist><dict><key>CFBundleExecutable</key><string>demo</string></dict></plist>")
    shutil.copy(inputs / "thin-arm64", app / "MacOS" / "demo")
    shutil.copy(inputs / "thin-x86_64", app / "Resources" / "helper")
    (app / "Resources" / "notes.txt").write_text("not code")
    os.symlink("helper", app / "Resources" / "helper-link")
    dylib = ROOT / "dist" / "libvzcaps.dylib"
    if dylib.exists():  # an lld-signed library: our signature is larger, so __LINKEDIT grows
        shutil.copy(dylib, app / "Frameworks" / "libvzcaps.dylib")
    out = tmp_path / "prepared"
    p = prepare("--into", str(out), str(tmp_path / "Demo.app"))  # the plan first
    assert p.returncode == 1 and "Nothing was written" in p.stdout and not out.exists()
    described = p.stdout.split("with codesign --verify --strict")[0]  # then the list of what codesign checks
    lines = [l.strip() for l in described.splitlines() if l.startswith("  ")]
    assert lines[-1].startswith("Contents/MacOS/demo (arm64): developer signature -> ad hoc; hardened runtime on -> off")
    p = prepare("--yes", "--into", str(out), str(tmp_path / "Demo.app"))
    assert p.returncode == 0, p.stderr
    copy = out / "Demo.app" / "Contents"
    sealed = {1: (copy / "Info.plist").read_bytes(), 3: (copy / "_CodeSignature" / "CodeResources").read_bytes()}
    assert_prepared((inputs / "thin-arm64").read_bytes(), copy / "MacOS" / "demo", sealed)
    assert_prepared((inputs / "thin-x86_64").read_bytes(), copy / "Resources" / "helper")
    assert (copy / "Resources" / "notes.txt").read_text() == "not code"
    assert os.readlink(copy / "Resources" / "helper-link") == "helper"
    assert os.stat(copy / "MacOS" / "demo").st_mode & 0o777 == 0o755
    if dylib.exists():
        data = (copy / "Frameworks" / "libvzcaps.dylib").read_bytes()
        assert len(data) > dylib.stat().st_size  # grown
        assert all(r["ok"] and r["flags"] == mg.CS_ADHOC for r in mg.verify(data))
        assert all(s["signature_valid"] for s in inspect_json(copy / "Frameworks" / "libvzcaps.dylib")["slices"])
    runs = [l.strip() for l in p.stdout.splitlines() if "vzcaps run --inherit" in l]
    assert runs == [f"vzcaps run --inherit -- {copy / 'MacOS' / 'demo'}", f"vzcaps run --inherit -- {copy / 'Resources' / 'helper'}"]


def test_an_existing_copy_is_replaced_whole(tmp_path, inputs):
    out = tmp_path / "prepared"
    assert prepare("--yes", "--into", str(out), str(inputs / "thin-arm64")).returncode == 0
    first = os.stat(out / "thin-arm64").st_ino
    assert prepare("--yes", "--into", str(out), str(inputs / "thin-arm64")).returncode == 0
    assert os.stat(out / "thin-arm64").st_ino != first
    assert sorted(os.listdir(out)) == [".thin-arm64.vzcaps-prepared", "thin-arm64"]


def corrupt(data, how):
    data = bytearray(data)
    info = mg.verify(bytes(data))[0]
    sb = info["slice_off"] + info["sig_off"]
    if how == "superblob":
        data[sb:sb + 4] = b"\0\0\0\0"
    elif how == "overlap":  # the second blob's offset pointing into the index
        data[sb + 12 + 8 + 4:sb + 12 + 8 + 8] = (8).to_bytes(4, "big")
    elif how == "truncated":
        del data[len(data) // 2:]
    elif how == "past-end":
        del data[sb + 16:]
    return bytes(data)


@pytest.mark.parametrize("how,needle", [("superblob", "cannot be parsed"), ("overlap", "cannot be parsed"),
                                        ("truncated", "truncated"), ("past-end", "truncated")])
def test_corrupted_inputs_get_one_line_and_leave_nothing(tmp_path, inputs, how, needle):
    bad = tmp_path / "bad"
    bad.write_bytes(corrupt((inputs / "thin-arm64").read_bytes(), how))
    out = tmp_path / "prepared"
    out.mkdir()
    p = prepare("--yes", "--into", str(out), str(bad))
    assert p.returncode == 1 and needle in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert os.listdir(out) == []


def test_errors_that_need_no_download(tmp_path):
    out = tmp_path / "prepared"
    out.mkdir()
    (tmp_path / "text").write_text("hello")
    (tmp_path / "dir").mkdir()
    app = tmp_path / "X.app"
    (app / "Contents").mkdir(parents=True)
    unsigned = tmp_path / "unsigned"
    unsigned.write_bytes(mg.build(signed=False))
    cases = [(str(tmp_path / "text"), "not a Mach-O file"), (str(tmp_path / "dir"), "not an .app bundle"),
             (str(tmp_path / "missing"), "No such file"), (str(app), "no Mach-O file in the bundle"),
             (str(unsigned), "not signed")]
    for path, needle in cases:
        p = prepare("--yes", "--into", str(out), path)
        assert p.returncode == 1 and needle in p.stderr and p.stderr.count("\n") == 1, (path, p.stderr)
    (app / "Contents" / "MacOS").mkdir()
    (app / "Contents" / "MacOS" / "X").write_bytes(mg.build(entitlements=mg.entitlements_xml(a=True)))  # room for a bound signature
    p = prepare("--yes", "--into", str(app / "Contents"), str(app))
    assert p.returncode == 1 and "is inside the source" in p.stderr
    assert os.listdir(out) == [] and sorted(os.listdir(app / "Contents")) == ["MacOS"]
    assert prepare().returncode == 2


def test_the_signer_refuses_what_the_reader_refuses(tmp_path):
    """Found by fuzz_sign: a section past the end of the file was signed, and the result did
    not parse. One notion of a well-formed file now serves both."""
    import struct
    data = bytearray(mg.build(methnames=["supportsFamily:"]))
    pos = 32  # the first load command is the __TEXT segment; its first section's offset at +48
    struct.pack_into("<I", data, pos + 72 + 48, 0x7FFFFFF0)
    bad = tmp_path / "bad"
    bad.write_bytes(bytes(data))
    p = prepare("--yes", "--into", str(tmp_path / "o"), str(bad))
    assert p.returncode == 1 and "truncated: section" in p.stderr and not (tmp_path / "o" / "bad").exists()


def test_generated_files_fit_or_say_why(tmp_path):
    """A generated file's signature space takes ours; cut to its exact superblob, it does not,
    and with no __LINKEDIT to grow the error says so."""
    import struct
    data = bytearray(mg.build(ident=b"x"))
    f = tmp_path / "roomy"
    f.write_bytes(bytes(data))
    assert prepare("--yes", "--into", str(tmp_path / "o"), str(f)).returncode == 0
    assert all(r["ok"] and r["flags"] == mg.CS_ADHOC for r in mg.verify((tmp_path / "o" / "roomy").read_bytes()))
    # replace the signature with a minimal valid one (a CodeDirectory alone, no hashes): ours,
    # with its hashes and requirements, is larger
    info = mg.verify(bytes(data))[0]
    cd = struct.pack(">IIIIIIIIIBBBBI", 0xFADE0C02, 46, 0x20001, mg.CS_ADHOC, 46, 44, 0, 0, 0, 32, 2, 0, 12, 0) + b"x\0"
    blob = struct.pack(">III", 0xFADE0CC0, 20 + len(cd), 1) + struct.pack(">II", 0, 20) + cd
    exact = len(blob)
    data[info["sig_off"]:info["sig_off"] + exact] = blob
    ncmds, = struct.unpack_from("<I", data, 16)
    pos = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, pos)
        if cmd == mg.LC_CODE_SIGNATURE:
            struct.pack_into("<I", data, pos + 12, exact)
        pos += size
    tight = tmp_path / "tight"
    tight.write_bytes(bytes(data[:info["sig_off"] + exact]))
    p = prepare("--yes", "--into", str(tmp_path / "o2"), str(tight))
    assert p.returncode == 1 and "does not fit" in p.stderr and "no __LINKEDIT to grow" in p.stderr, p.stderr
    assert not (tmp_path / "o2" / "tight").exists()


def strip_signature(data):
    """A thin slice without its signature: the command removed, the file cut where the
    signature began, __LINKEDIT ending there (what a linker writes without signing)."""
    import struct
    data = bytearray(data)
    ncmds, sizeofcmds = struct.unpack_from("<II", data, 16)
    pos, end = 32, 32 + sizeofcmds
    sig_at = linkedit_at = None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, pos)
        if cmd == mg.LC_CODE_SIGNATURE:
            sig_at = pos
        if cmd == mg.LC_SEGMENT_64 and data[pos + 8:pos + 18] == b"__LINKEDIT":
            linkedit_at = pos
        pos += size
    dataoff, = struct.unpack_from("<I", data, sig_at + 8)
    data[sig_at:end] = data[sig_at + 16:end] + b"\0" * 16
    struct.pack_into("<II", data, 16, ncmds - 1, sizeofcmds - 16)
    if linkedit_at > sig_at:
        linkedit_at -= 16
    fileoff, = struct.unpack_from("<Q", data, linkedit_at + 40)
    struct.pack_into("<Q", data, linkedit_at + 48, dataoff - fileoff)
    return bytes(data[:dataoff])


def test_a_universal_file_with_an_unsigned_slice_is_signed_as_a_whole(tmp_path, inputs):
    d = tmp_path / "mixed"
    d.mkdir()
    (d / "x86_64").write_bytes(strip_signature((inputs / "thin-x86_64").read_bytes()))
    assert mg.verify((d / "x86_64").read_bytes())[0]["signed"] is False
    subprocess.run([lipo_tool(), "-create", str(inputs / "thin-arm64"), str(d / "x86_64"), "-output", str(d / "tool")],
                   check=True)
    out = tmp_path / "prepared"
    p = prepare("--into", str(out), str(d / "tool"))
    assert p.returncode == 1 and "unsigned slices signed too -> ad hoc" in p.stdout, p.stdout
    p = prepare("--yes", "--into", str(out), str(d / "tool"))
    assert p.returncode == 0, p.stderr
    after = mg.verify((out / "tool").read_bytes())
    assert [r["ok"] and r["flags"] == mg.CS_ADHOC for r in after] == [True, True], after
    # with no signed slice at all it is not code vzcaps re-signs
    subprocess.run([lipo_tool(), "-create", str(d / "x86_64"), "-output", str(d / "unsigned")], check=True)
    p = prepare("--yes", "--into", str(tmp_path / "o2"), str(d / "unsigned"))
    assert p.returncode == 1 and "not signed" in p.stderr
