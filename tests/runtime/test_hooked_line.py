"""Silent until it acts (issue 26 item 2), on the GNU-runtime rig: a process that never creates a
device writes nothing at all; the one line, "vzcaps: hooked CLASS for NAME via PATH: NOTES", is
written once, when the first device class is hooked; a refused configuration says its
"left stock" line when the first device is created. VZCAPS_LOG=verbose keeps the start-up line
("configured for NAME: NOTES") and then says "hooked CLASS for NAME via PATH" as before."""
import os
import subprocess

import pytest

from conftest import BUILD, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

M2 = dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M2")
NOTES = "Apple families up to 1008 (Apple8): auto, the real family of Apple M2 (from VZCAPS_HOST_CHIP)"
INIT = "vzcaps: hooked AppleParavirtDevice for probe via initGPUFamilySupport"


def probe(env, *args):
    env = dict(env, LD_PRELOAD=str(BUILD / "libvzcaps.so"))
    p = subprocess.run([str(BUILD / "probe"), *args], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p, [l for l in p.stderr.splitlines() if l.startswith("vzcaps:")]


def test_the_one_line_says_the_class_the_path_and_the_notes():
    p, lines = probe(clean_env(**M2))
    assert p.stderr == INIT + ": " + NOTES + "\n"
    assert "enabled" not in p.stderr


def test_no_device_no_line_at_all():
    p, lines = probe(clean_env(**M2), "--no-device")
    assert p.stdout == "no device\n"
    assert p.stderr == ""


@pytest.mark.parametrize("cmd", [["/bin/true"], ["sh", "-c", "echo hi"], ["git", "--version"]])
@pytest.mark.parametrize("conf", [M2, dict(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9"),
                                  dict(VZCAPS_APPLE_FAMILY_MAX="1009", VZCAPS_BOGUS="1")])
def test_processes_without_a_device_write_what_they_write_stock(cmd, conf):
    # enabling, refused and invalid configurations alike: byte for byte what stock writes
    stock = subprocess.run(cmd, env=clean_env(), capture_output=True, timeout=30)
    got = subprocess.run(cmd, env=clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), **conf), capture_output=True,
                         timeout=30)
    assert (got.returncode, got.stdout, got.stderr) == (stock.returncode, stock.stdout, stock.stderr)


def test_verbose_keeps_the_start_up_line():
    p, lines = probe(clean_env(VZCAPS_LOG="verbose", **M2))
    assert lines == ["vzcaps: configured for probe: " + NOTES, INIT]
    p, lines = probe(clean_env(VZCAPS_LOG="verbose", **M2), "--no-device")
    assert lines == ["vzcaps: configured for probe: " + NOTES]


def test_a_refusal_is_said_at_the_first_device_with_its_reason():
    env = clean_env(VZCAPS_APPLE_FAMILY_MAX="auto", VZCAPS_HOST_CHIP="Apple M9")
    p, lines = probe(env, "--no-device")
    assert p.stderr == ""
    p, lines = probe(env, "--threads", "4")
    assert len(lines) == 1 and lines[0].startswith("vzcaps: left stock for probe: VZCAPS_APPLE_FAMILY_MAX=auto needs")
    assert parse_probe(p.stdout)[-1]["families"] == STOCK_FAMILIES
    p, lines = probe(dict(env, VZCAPS_LOG="verbose"))  # said at start-up, and only then
    assert len(lines) == 1 and lines[0].startswith("vzcaps: left stock for probe:")
    p, lines = probe(dict(env, VZCAPS_LOG="quiet"))
    assert p.stderr == ""


def test_once_with_many_devices_from_many_threads():
    p, lines = probe(clean_env(**M2), "--threads", "8")
    assert "threads 8 mismatches 0" in p.stdout
    assert lines == [INIT + ": " + NOTES]


def test_once_with_two_device_classes():
    # the wrapper and the device it wraps: two classes hooked, one line (the first)
    p, lines = probe(clean_env(FAKEMETAL_CLASS="wrapper", **M2))
    assert parse_probe(p.stdout)[0]["class"] == "WrapperDevice"
    assert lines == [INIT + ": " + NOTES]


def test_factory_path_when_the_class_has_no_init_hook():
    p, lines = probe(clean_env(FAKEMETAL_CLASS="plain", **M2))
    run = parse_probe(p.stdout)[0]
    assert run["class"] == "PlainDevice"
    assert run["families"] == {f: 1 if v or 1001 <= f <= 1008 else 0 for f, v in STOCK_FAMILIES.items()}
    assert lines == ["vzcaps: hooked PlainDevice for probe via factory interposer (MTLCreateSystemDefaultDevice): " + NOTES]


def test_class_left_stock_is_never_called_hooked():
    p, lines = probe(clean_env(FAKEMETAL_CLASS="lacking", VZCAPS_MAX_THREADGROUP_MEMORY="32768", **M2))
    assert len(lines) == 1 and "left stock" in lines[0]
    assert not any("hooked" in l for l in lines)


def test_a_hostile_class_name_is_escaped_in_the_one_line():
    p, lines = probe(clean_env(FAKEMETAL_CLASS="lacking-long", **M2))
    assert len(lines) == 1 and "...(307 bytes)" in lines[0]


def test_quiet_silences_the_hooked_line_too():
    p, lines = probe(clean_env(VZCAPS_LOG="quiet", **M2))
    assert p.stderr == ""


def test_stock_process_says_nothing():
    p, lines = probe(clean_env(VZCAPS_APPLE_FAMILY_MAX="off"))
    assert lines == []


FD2_CLIENT = r'''
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
void *MTLCreateSystemDefaultDevice(void);
int main(int argc, char **argv)
{
    (void)argc;
    if (argv[2][0] == 'r') { /* a daemon's way: stderr closed after start, then a data file */
        close(2);
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644); /* stderr closed: this is fd 2 */
    if (write(fd, "user data\n", 10) != 10)
        return 3;
    void *d = MTLCreateSystemDefaultDevice();
    if (write(fd, "more data\n", 10) != 10)
        return 3;
    close(fd);
    printf("fd %d device %s\n", fd, d ? "yes" : "no");
    return 0;
}
'''


@pytest.mark.parametrize("how", ["closed-at-start", "reused-later"])
def test_the_line_never_goes_into_a_file_that_took_fd_2(tmp_path, how):
    # A program started with stderr closed (or that closes it, as daemons do) gets fd 2 for the
    # next file it opens. The line is written at the first device, long after start-up: it went
    # into that file, in the middle of the program's data. fd 2 is written only while it is the
    # file it was when the library started.
    src = tmp_path / "fd2.c"
    src.write_text(FD2_CLIENT)
    exe = tmp_path / "fd2"
    subprocess.run(["gcc", str(src), "-o", str(exe), f"-L{BUILD}", "-lfakemetal", f"-Wl,-rpath,{BUILD}"], check=True)
    data = tmp_path / "data.txt"
    env = clean_env(LD_PRELOAD=str(BUILD / "libvzcaps.so"), **M2)
    stderr = subprocess.DEVNULL if how == "closed-at-start" else subprocess.PIPE
    p = subprocess.run([str(exe), str(data), how[0]], env=env, stdout=subprocess.PIPE, text=True, timeout=30,
                       stderr=stderr, preexec_fn=(lambda: os.close(2)) if how == "closed-at-start" else None)
    assert (p.returncode, p.stdout) == (0, "fd 2 device yes\n")
    assert data.read_text() == "user data\nmore data\n"
