"""docs/troubleshooting.md is installed with the other pages and named by vzcaps doctor when it
finds a pitfall (issue 27, item 2): from a checkout the page beside build/, from an install the
installed copy, so inside a VM the page is on disk."""
import json
import subprocess

from conftest import BUILD, ROOT, clean_env

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the Linux test build)


def doctor(vzcaps, *args):
    return subprocess.run([str(vzcaps), "doctor", *args], capture_output=True, text=True, timeout=60, env=clean_env())


def test_doctor_names_the_page_beside_the_checkout():
    p = doctor(BUILD / "vzcaps")
    assert p.returncode == 0 and "  ! not macOS" in p.stdout  # on Linux there is always a pitfall
    # the checkout's page, found beside build/ (or linked beside its copy by scripts/rig-build)
    page = (BUILD.parent / "docs" / "troubleshooting.md").resolve()
    assert page == (ROOT / "docs" / "troubleshooting.md").resolve()
    assert p.stdout.splitlines()[-1] == f"  causes and fixes: {page}"
    got = json.loads(doctor(BUILD / "vzcaps", "--json").stdout)
    assert got["pitfalls"] and got["troubleshooting"] == str(page)


def test_the_page_is_installed_and_doctor_names_the_installed_copy(tmp_path):
    prefix = tmp_path / "pre fix"
    subprocess.run(["sh", "scripts/install", "install", "", str(prefix), "build"], cwd=ROOT, check=True,
                   capture_output=True)
    page = prefix / "share" / "doc" / "vzcaps" / "troubleshooting.md"
    assert page.read_text() == (ROOT / "docs" / "troubleshooting.md").read_text()
    p = doctor(prefix / "bin" / "vzcaps")
    assert p.stdout.splitlines()[-1] == f"  causes and fixes: {page}"
    # a page that is not a regular file is not named as the page
    page.unlink()
    page.mkdir()
    assert doctor(prefix / "bin" / "vzcaps").stdout.splitlines()[-1] == \
        "  causes and fixes: troubleshooting.md in vzcaps's documentation (share/doc/vzcaps/ under its prefix)"


def test_the_man_page_names_the_page():
    page = subprocess.run([str(BUILD / "vzcaps"), "__man"], capture_output=True, text=True).stdout
    see_also = page[page.index(".SH SEE ALSO"):]
    assert "troubleshooting.md there lists every line vzcaps prints that needs an action" in see_also


def test_the_preload_pitfall_reads_the_list_element_by_element(tmp_path):
    """doctor's "already names the library" pitfall tested the preload variable by substring,
    so a library merely named like ours (a backup, another project's) raised it."""
    def pitfall(value):
        env = clean_env()
        env["LD_PRELOAD"] = value
        p = subprocess.run([str(BUILD / "vzcaps"), "doctor"], capture_output=True, text=True, timeout=60, env=env)
        return "LD_PRELOAD in this shell already names the library" in p.stdout + p.stderr

    for name in ("libvzcaps.so.bak", "notlibvzcaps.so"):
        (tmp_path / name).write_bytes(b"")
    assert not pitfall(f"{tmp_path}/libvzcaps.so.bak:{tmp_path}/notlibvzcaps.so")
    assert pitfall(f"{tmp_path}/notlibvzcaps.so {BUILD}/libvzcaps.so")
