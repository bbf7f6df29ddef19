"""tests/client/sources.py, the gate between the pinned sdist and the build of make check-client:
a wrong archive, a changed or replaced extracted file and a link in the archive are refused."""
import hashlib
import io
import os
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = "llama_cpp_python-9.9.9/vendor/llama.cpp/ggml/"


def make_archive(tmp_path, extra=None):
    path = tmp_path / "llama_cpp_python-9.9.9.tar.gz"
    files = {"include/ggml.h": b"// ggml.h\n", "src/ggml.c": b"int x;\n",
             "src/ggml-metal/ggml-metal-device.m": b"// device\n", "src/ggml-cpu/ggml-cpu-impl.h": b"// cpu\n",
             "src/ggml-cpu/ops.cpp": b"// not taken\n", "README.md": b"not taken\n"}
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(ROOT + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra or []:
            tar.addfile(info)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def run(archive, sha, dest):
    return subprocess.run([sys.executable, os.path.join(HERE, "sources.py"), str(archive), sha, str(dest)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def test_extracts_what_the_build_reads_and_checks_it(tmp_path):
    archive, sha = make_archive(tmp_path)
    p = run(archive, sha, tmp_path / "out")
    assert p.returncode == 0, p.stderr
    ggml = p.stdout.strip()
    assert ggml == str(tmp_path / "out" / "ggml")
    assert open(os.path.join(ggml, "src/ggml-metal/ggml-metal-device.m")).read() == "// device\n"
    assert os.path.isfile(os.path.join(ggml, "src/ggml-cpu/ggml-cpu-impl.h"))
    assert not os.path.exists(os.path.join(ggml, "src/ggml-cpu/ops.cpp"))
    assert "4 files of ggml checked" in p.stderr
    assert run(archive, sha, tmp_path / "out").returncode == 0  # the second run checks, extracts nothing


def test_refuses_an_archive_whose_sha256_differs(tmp_path):
    archive, sha = make_archive(tmp_path)
    p = run(archive, "0" * 64, tmp_path / "out")
    assert p.returncode == 1
    assert "SHA-256 %s, expected %s" % (sha, "0" * 64) in p.stderr
    assert not (tmp_path / "out").exists()


def test_refuses_a_changed_extracted_file(tmp_path):
    archive, sha = make_archive(tmp_path)
    assert run(archive, sha, tmp_path / "out").returncode == 0
    device = tmp_path / "out/ggml/src/ggml-metal/ggml-metal-device.m"
    device.write_text("// device, patched\n")
    p = run(archive, sha, tmp_path / "out")
    assert p.returncode == 1
    assert "%s differs from the archive's copy (SHA-256)" % device in p.stderr


def test_refuses_a_link_in_place_of_an_extracted_file(tmp_path):
    archive, sha = make_archive(tmp_path)
    assert run(archive, sha, tmp_path / "out").returncode == 0
    device = tmp_path / "out/ggml/src/ggml-metal/ggml-metal-device.m"
    elsewhere = tmp_path / "elsewhere.m"
    elsewhere.write_text("// device\n")  # same bytes: still not the file the build must read
    device.unlink()
    device.symlink_to(elsewhere)
    p = run(archive, sha, tmp_path / "out")
    assert p.returncode == 1
    assert "%s: not a regular file" % device in p.stderr


def test_refuses_a_link_inside_the_archive(tmp_path):
    link = tarfile.TarInfo(ROOT + "src/ggml-metal/ggml-metal-impl.h")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    archive, sha = make_archive(tmp_path, [link])
    p = run(archive, sha, tmp_path / "out")
    assert p.returncode == 1
    assert "ggml-metal-impl.h: not a regular file in the archive" in p.stderr
    assert not os.path.lexists(tmp_path / "out/ggml/src/ggml-metal/ggml-metal-impl.h")


def test_refuses_an_archive_without_ggml(tmp_path):
    path = tmp_path / "llama_cpp_python-9.9.9.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("llama_cpp_python-9.9.9/README.md")
        tar.addfile(info, io.BytesIO(b""))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    p = run(path, sha, tmp_path / "out")
    assert p.returncode == 1
    assert "holds no %s" % ROOT in p.stderr


def test_refuses_a_member_that_climbs_out(tmp_path):
    climb = tarfile.TarInfo(ROOT + "src/ggml-metal/../../../../../escaped.h")
    archive, sha = make_archive(tmp_path, [climb])
    p = run(archive, sha, tmp_path / "out")
    assert p.returncode == 1
    assert "escaped.h: a path that leaves its directory" in p.stderr
    assert not list(tmp_path.rglob("escaped.h"))
