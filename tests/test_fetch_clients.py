"""scripts/fetch-clients against hostile archives and caches: a served file:// registry with
archives whose SHA-256 the test pins (links, paths leaving the directory, a wrong hash, a cache
that is a link)."""
import hashlib
import importlib.machinery
import importlib.util
import io
import os
import tarfile

import pytest

from conftest import ROOT


def load():
    loader = importlib.machinery.SourceFileLoader("fetch_clients", str(ROOT / "scripts" / "fetch-clients"))
    spec = importlib.util.spec_from_loader("fetch_clients", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def tgz(path, members):
    """members: (name, bytes) for a regular file, (name, "->target") for a symbolic link."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if isinstance(data, str):
                info.type, info.linkname = tarfile.SYMTYPE, data[2:]
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def registry(tmp_path, monkeypatch):
    reg = tmp_path / "registry" / "@x" / "pkg" / "-"
    reg.mkdir(parents=True)
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", (tmp_path / "registry").as_uri())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mod = load()

    def pin(members):
        sha = tgz(reg / "pkg-1.0.0.tgz", members)
        mod.PINS = [("x-pkg-1.0.0", "npm", "@x/pkg", "1.0.0", "pkg-1.0.0.tgz", sha)]
        return mod
    return pin


def cache(tmp_path):
    return tmp_path / "cache" / "vzcaps" / "clients"


def test_a_pinned_archive_is_fetched_checked_and_extracted(registry, tmp_path):
    mod = registry([("package/lib/libx.dylib", b"\xcf\xfa\xed\xfe"), ("package/README.md", b"not kept")])
    assert mod.main([]) == 0
    d = cache(tmp_path) / "x-pkg-1.0.0"
    assert (d / "package" / "lib" / "libx.dylib").read_bytes() == b"\xcf\xfa\xed\xfe"
    assert not (d / "package" / "README.md").exists()
    assert mod.main(["--check"]) == 0
    assert not [p for p in cache(tmp_path).iterdir() if p.name.endswith(".part")]


def test_a_wrong_hash_is_refused_and_leaves_nothing(registry, tmp_path):
    mod = registry([("package/libx.dylib", b"x")])
    mod.PINS = [mod.PINS[0][:5] + ("0" * 64,)]
    with pytest.raises(SystemExit) as e:
        mod.main([])
    assert "SHA-256" in str(e.value) and "pinned " + "0" * 64 in str(e.value)
    assert sorted(p.name for p in cache(tmp_path).iterdir()) == []


@pytest.mark.parametrize("member,why", [(("package/libx.dylib", "->/etc/passwd"), "is not a regular file"),
                                        (("package/../../evil.dylib", b"x"), "leaves the directory"),
                                        (("/abs/evil.dylib", b"x"), "leaves the directory")])
def test_links_and_escaping_paths_are_refused_by_name(registry, tmp_path, member, why):
    mod = registry([member])
    with pytest.raises(SystemExit) as e:
        mod.main([])
    assert why in str(e.value) and member[0].lstrip("/").split("/")[-1] in str(e.value)
    assert not (cache(tmp_path) / "x-pkg-1.0.0").exists()
    assert not (tmp_path / "evil.dylib").exists()


def test_a_cache_that_is_a_link_is_refused(registry, tmp_path):
    mod = registry([("package/libx.dylib", b"x")])
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cache" / "vzcaps").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", cache(tmp_path))
    with pytest.raises(SystemExit) as e:
        mod.main([])
    assert "a link" in str(e.value)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_entry_that_is_a_link_is_not_replaced(registry, tmp_path):
    mod = registry([("package/libx.dylib", b"x")])
    cache(tmp_path).mkdir(parents=True)
    (tmp_path / "target").mkdir()
    os.symlink(tmp_path / "target", cache(tmp_path) / "x-pkg-1.0.0")
    with pytest.raises(SystemExit) as e:
        mod.main([])
    assert "a link; not replaced" in str(e.value)
    assert list((tmp_path / "target").iterdir()) == []


def test_usage():
    with pytest.raises(SystemExit) as e:
        load().main(["--bogus"])
    assert "usage: fetch-clients" in str(e.value)


def whl(path, members):
    """members: (name, bytes) for a regular file, (name, "->target") for a symbolic link."""
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members:
            info = zipfile.ZipInfo(name)
            if isinstance(data, str):
                info.external_attr = (0o120777 << 16)
                z.writestr(info, data[2:])
            else:
                info.external_attr = (0o100644 << 16)
                z.writestr(info, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("member,why", [(None, None), (("pkg/libx.dylib", "->/etc/passwd"), "is a link"),
                                        (("../evil.dylib", b"x"), "leaves the directory")])
def test_a_wheel_is_extracted_with_the_same_refusals(tmp_path, monkeypatch, member, why):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mod = load()
    wheel = tmp_path / "pkg-1.0-py3-none-macosx_11_0_arm64.whl"
    sha = whl(wheel, [("pkg/.dylibs/libggml.dylib", b"\xcf\xfa\xed\xfe")] + ([member] if member else []))
    mod.PINS = [("pkg-1.0", "pypi", "pkg", "1.0", wheel.name, sha)]
    monkeypatch.setattr(mod, "url_of", lambda *a: wheel.as_uri())
    if why is None:
        assert mod.main([]) == 0
        assert (cache(tmp_path) / "pkg-1.0" / "pkg" / ".dylibs" / "libggml.dylib").read_bytes() == b"\xcf\xfa\xed\xfe"
        return
    with pytest.raises(SystemExit) as e:
        mod.main([])
    assert why in str(e.value) and member[0] in str(e.value)
    assert not (cache(tmp_path) / "pkg-1.0").exists()
    assert not (tmp_path / "cache" / "vzcaps" / "evil.dylib").exists()


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_an_entry_that_is_not_a_directory_is_not_replaced(registry, tmp_path, kind):
    mod = registry([("package/libx.dylib", b"x")])
    cache(tmp_path).mkdir(parents=True)
    entry = cache(tmp_path) / "x-pkg-1.0.0"
    os.mkfifo(entry) if kind == "fifo" else entry.write_text("someone's")
    with pytest.raises(SystemExit) as e:
        mod.main([])
    assert "not a directory" in str(e.value) and "not replaced" in str(e.value)
    assert entry.exists() and (kind == "fifo" or entry.read_text() == "someone's")
    assert not [p for p in cache(tmp_path).iterdir() if ".part" in p.name]


def on_demand(tmp_path, monkeypatch, members):
    """A module with one ordinary npm pin and one wheel pin fetched only when named, keeping
    exactly torch/lib/libtorch_cpu.dylib (as the torch pin keeps its two images)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mod = load()
    wheel = tmp_path / "big-1.0-py3-none-macosx_14_0_arm64.whl"
    sha = whl(wheel, members)
    mod.PINS = [("big-1.0", "pypi", "big", "1.0", wheel.name, sha)]
    mod.ON_DEMAND = {"big-1.0"}
    mod.ONLY = {"big-1.0": ("torch/lib/libtorch_cpu.dylib",)}
    monkeypatch.setattr(mod, "url_of", lambda *a: wheel.as_uri())
    return mod


def test_a_pin_on_demand_is_fetched_only_when_named_and_keeps_only_its_members(tmp_path, monkeypatch):
    mod = on_demand(tmp_path, monkeypatch, [("torch/lib/libtorch_cpu.dylib", b"\xcf\xfa\xed\xfe"),
                                            ("torch/lib/libtorch_python.dylib", b"not kept"), ("torch/version.json", b"{}")])
    assert mod.main([]) == 0 and not (cache(tmp_path) / "big-1.0").exists()  # install-deps' call leaves it
    assert mod.main(["--check"]) == 0 and mod.main(["--check", "big-1.0"]) == 1
    assert mod.main(["big-1.0"]) == 0 and mod.main(["--check", "big-1.0"]) == 0
    kept = sorted(str(p.relative_to(cache(tmp_path) / "big-1.0")) for p in (cache(tmp_path) / "big-1.0").rglob("*") if p.is_file())
    assert kept == [".sha256", "torch/lib/libtorch_cpu.dylib"]


@pytest.mark.parametrize("argv,says", [(["nosuch-1.0"], "nosuch-1.0: no such pin"), (["--list", "big-1.0"], "usage: fetch-clients"),
                                       (["--check", "--list"], "usage: fetch-clients")])
def test_names_are_checked_before_anything_is_fetched(tmp_path, monkeypatch, argv, says):
    mod = on_demand(tmp_path, monkeypatch, [("torch/lib/libtorch_cpu.dylib", b"x")])
    with pytest.raises(SystemExit) as e:
        mod.main(argv)
    assert says in str(e.value)
    assert not (cache(tmp_path) / "big-1.0").exists()


def test_a_member_kept_by_name_that_is_a_link_is_refused(tmp_path, monkeypatch):
    mod = on_demand(tmp_path, monkeypatch, [("torch/lib/libtorch_cpu.dylib", "->/etc/passwd")])
    with pytest.raises(SystemExit) as e:
        mod.main(["big-1.0"])
    assert "torch/lib/libtorch_cpu.dylib is a link" in str(e.value)
    assert not (cache(tmp_path) / "big-1.0").exists()
