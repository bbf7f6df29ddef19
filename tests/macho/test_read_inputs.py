"""inspect and prepare read their inputs through the one read module and Info.plist as a
property list: a Mach-O truncated while it is read is "truncated", exit 1, never a SIGBUS;
a binary or entity-bearing Info.plist names the executable CoreFoundation would run, and the
commands say which Info.plist they read (issue 25, rows 8 and 9)."""
import json
import os
import plistlib
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import machogen as mg  # noqa: E402
import macsim  # noqa: E402
import pytest  # noqa: E402
from conftest import BUILD, CROSS_BUILD, clean_env  # noqa: E402

VZ = str(BUILD / "vzcaps")

# An LD_PRELOAD library that truncates the file named by VZTEST_SHRINK to 1000 bytes at the
# moment the command starts to read it whole (a read(2) of more than 1000 bytes, or an mmap(2)
# of it, as the command did before): the size the command saw is no longer the file's, exactly
# as when another process truncates it during the read.
SHRINK_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>
static int done;
static void shrink(int fd, size_t n)
{
    const char *want = getenv("VZTEST_SHRINK");
    char link[64], path[PATH_MAX + 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, path, sizeof path - 1);
    if (done || !want || k <= 0 || n <= 1000)
        return;
    path[k] = '\0';
    if (strcmp(path, want) == 0) {
        done = 1;
        if (truncate(path, 1000) != 0)
            abort();
    }
}
ssize_t read(int fd, void *buf, size_t n)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    shrink(fd, n);
    return real(fd, buf, n);
}
void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off)
{
    static void *(*real)(void *, size_t, int, int, int, off_t);
    if (!real)
        real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    void *m = real(addr, n, prot, flags, fd, off);
    if (fd >= 0)
        shrink(fd, n);
    return m;
}
"""


# The same on macOS, where dyld ignores LD_PRELOAD: a library for DYLD_INSERT_LIBRARIES that
# interposes read(2) and mmap(2) (the __DATA,__interpose pairs: the replacement, the original)
# and names the descriptor's file with F_GETPATH (there is no /proc).
SHRINK_MAC_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/param.h>
#include <sys/types.h>
#include <unistd.h>
static int done;
static void shrink(int fd, size_t n)
{
    const char *want = getenv("VZTEST_SHRINK");
    char path[MAXPATHLEN];
    if (done || !want || fd < 0 || n <= 1000 || fcntl(fd, F_GETPATH, path) == -1)
        return;
    if (strcmp(path, want) == 0) {
        done = 1;
        if (truncate(path, 1000) != 0)
            abort();
    }
}
static ssize_t shrink_read(int fd, void *buf, size_t n)
{
    shrink(fd, n);
    return read(fd, buf, n); /* the original: an image's own calls are not interposed */
}
static void *shrink_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off)
{
    void *m = mmap(addr, n, prot, flags, fd, off);
    shrink(fd, n);
    return m;
}
__attribute__((used, section("__DATA,__interpose"))) static const struct {
    const void *replacement, *original;
} interposed[] = {
    {(const void *)shrink_read, (const void *)read},
    {(const void *)shrink_mmap, (const void *)mmap},
};
"""


def shrink_env(tmp_path, target):
    """clean_env with the shrinking library loaded into the command, which then truncates target
    (a resolved path) while it is read: LD_PRELOAD on Linux, DYLD_INSERT_LIBRARIES on macOS."""
    if sys.platform == "darwin":
        if macsim.active():
            pytest.skip("needs macOS's dyld (DYLD_INSERT_LIBRARIES): the simulated Mac runs the Linux build")
        src = tmp_path / "shrink.c"
        src.write_text(SHRINK_MAC_C)
        lib = tmp_path / "libshrink.dylib"
        subprocess.run(["cc", "-dynamiclib", "-O1", str(src), "-o", str(lib)], check=True)
        return clean_env(DYLD_INSERT_LIBRARIES=str(lib), VZTEST_SHRINK=str(target))
    src = tmp_path / "shrink.c"
    src.write_text(SHRINK_C)
    lib = tmp_path / "libshrink.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(src), "-o", str(lib), "-ldl"], check=True)
    return clean_env(LD_PRELOAD=str(lib), VZTEST_SHRINK=str(target))


@CROSS_BUILD
def test_the_macos_shrinking_library_compiles_with_its_interpose_section(tmp_path):
    """Off a Mac, at least the macOS interposer compiles for arm64 macOS (zig's macOS headers)
    and carries the section dyld reads."""
    src = tmp_path / "shrink.c"
    src.write_text(SHRINK_MAC_C)
    obj = tmp_path / "shrink.o"
    p = subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-macos.13.0", "-Wall", "-Wextra", "-Werror",
                        "-O1", "-c", str(src), "-o", str(obj)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, ZIG_GLOBAL_CACHE_DIR=str(tmp_path / "zc"), ZIG_LOCAL_CACHE_DIR=str(tmp_path / "zc")))
    assert p.returncode == 0, p.stderr
    assert b"__interpose" in obj.read_bytes()


def big_macho():
    """A signed file of about 300 KB: its signature lies far beyond the first page."""
    return mg.build(cstrings=["x" * 300000], entitlements=mg.entitlements_xml(a=True))


def test_a_mach_o_truncated_while_inspect_reads_it_is_truncated_not_a_signal(tmp_path):
    f = tmp_path / "tool"
    f.write_bytes(big_macho())
    env = shrink_env(tmp_path, f.resolve())
    p = subprocess.run([VZ, "inspect", str(f)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1, (p.returncode, p.stderr)  # not 135 (SIGBUS)
    assert p.stderr == f"vzcaps inspect: {f}: truncated while read (1000 of {len(big_macho())} bytes)\n"
    assert os.path.getsize(f) == 1000  # the file did shrink under the command


def test_a_mach_o_truncated_while_prepare_reads_it_is_truncated_not_a_signal(tmp_path):
    app = tmp_path / "Big.app" / "Contents"
    (app / "MacOS").mkdir(parents=True)
    exe = app / "MacOS" / "Big"
    exe.write_bytes(big_macho())
    env = shrink_env(tmp_path, exe.resolve())
    p = subprocess.run([VZ, "prepare", "--yes", "--into", str(tmp_path / "out"), str(tmp_path / "Big.app")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "truncated while read (1000 of" in p.stderr and str(exe.resolve()) in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


def app(tmp_path, info: bytes, exes=("Demo", "Real"), hardened=("Real",)):
    """Demo.app whose executables are plain files named exes; those in hardened have the
    hardened runtime (injection ignored)."""
    c = tmp_path / "Demo.app" / "Contents"
    (c / "MacOS").mkdir(parents=True)
    for name in exes:
        flags = mg.CS_ADHOC | (mg.CS_RUNTIME if name in hardened else 0)
        (c / "MacOS" / name).write_bytes(mg.build(flags=flags, entitlements=mg.entitlements_xml(a=True)))
    (c / "Info.plist").write_bytes(info)
    return tmp_path / "Demo.app"


def inspect_json(path):
    p = subprocess.run([VZ, "inspect", "--json", str(path)], capture_output=True, text=True, env=clean_env(), timeout=60)
    return p, (json.loads(p.stdout)["files"][0] if p.stdout else None)


def test_a_binary_info_plist_names_the_executable_inspect_reads(tmp_path):
    """Row 9: the substring scan missed a binary plist and inspected Demo (the bundle's name),
    unhardened: "honoured" for an app whose real executable is hardened."""
    a = app(tmp_path, plistlib.dumps({"CFBundleName": "Demo", "CFBundleExecutable": "Real"}, fmt=plistlib.FMT_BINARY))
    p, info = inspect_json(a)
    assert p.returncode == 0, p.stderr
    assert info["slices"][0]["injection"] == "ignored"  # Real's hardened runtime, not Demo's "honoured"
    assert info["executable"] == f"{a}/Contents/MacOS/Real"
    assert info["info_plist"] == f"{a}/Contents/Info.plist"
    p = subprocess.run([VZ, "inspect", str(a)], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert f"  main executable: {a}/Contents/MacOS/Real (CFBundleExecutable of {a}/Contents/Info.plist)\n" in p.stdout


def test_entities_are_decoded_and_comments_are_not_read(tmp_path):
    xml = (b'<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0">\n<dict>\n'
           b"  <!-- <key>CFBundleExecutable</key><string>Demo</string> -->\n"
           b"  <key>CFBundleExecutable</key>\n  <string>A&amp;B</string>\n</dict>\n</plist>\n")
    a = app(tmp_path, xml, exes=("Demo", "A&B"), hardened=("A&B",))
    p, info = inspect_json(a)
    assert p.returncode == 0, p.stderr  # "A&amp;B" as a name is missing
    assert info["slices"][0]["injection"] == "ignored" and info["executable"] == f"{a}/Contents/MacOS/A&B"


def test_an_info_plist_that_is_not_a_property_list_fails_naming_it(tmp_path):
    a = app(tmp_path, b"CFBundleExecutable = Real;\n")
    p, _ = inspect_json(a)
    assert p.returncode == 1
    assert f"{a}/Contents/Info.plist: not a property list vzcaps reads" in p.stderr, p.stderr
    p = subprocess.run([VZ, "prepare", "--into", str(tmp_path / "out"), str(a)], capture_output=True, text=True,
                       env=clean_env(), timeout=60)
    assert p.returncode == 1 and f"{a}/Contents/Info.plist: not a property list vzcaps reads" in p.stderr, p.stderr
    # an Info.plist that is a FIFO is refused at once, never waited on
    (a / "Contents" / "Info.plist").unlink()
    os.mkfifo(a / "Contents" / "Info.plist")
    p, _ = inspect_json(a)
    assert p.returncode == 1 and "Info.plist: not a regular file (a FIFO)" in p.stderr, p.stderr
    # one over its limit is refused from its size
    (a / "Contents" / "Info.plist").unlink()
    with open(a / "Contents" / "Info.plist", "wb") as f:
        f.truncate((8 << 20) + 1)
    p, _ = inspect_json(a)
    assert p.returncode == 1 and p.stderr == f"vzcaps inspect: {a}/Contents/Info.plist: larger than 8 MiB (8388609 bytes)\n", p.stderr


def test_prepare_seals_the_executable_a_binary_info_plist_names(tmp_path):
    a = app(tmp_path, plistlib.dumps({"CFBundleExecutable": "Real"}, fmt=plistlib.FMT_BINARY), exes=("Real",))
    p = subprocess.run([VZ, "prepare", "--into", str(tmp_path / "out"), str(a)], capture_output=True, text=True,
                       env=clean_env(), timeout=60)
    assert "  Demo.app: main executable Contents/MacOS/Real (CFBundleExecutable of Contents/Info.plist)\n" in p.stdout, \
        (p.stdout, p.stderr)
    p = subprocess.run([VZ, "prepare", "--yes", "--into", str(tmp_path / "out"), str(a)], capture_output=True, text=True,
                       env=clean_env(), timeout=60)
    assert p.returncode == 0, p.stderr
    copy = tmp_path / "out" / "Demo.app" / "Contents"
    # the copy's main executable is bound to Info.plist (special slot 1) byte for byte
    import hashlib
    assert mg.special_slot((copy / "MacOS" / "Real").read_bytes(), 1) == hashlib.sha256((copy / "Info.plist").read_bytes()).digest()


def test_a_file_linking_more_libraries_than_the_table_is_refused_not_cut(tmp_path):
    """The libraries decide which images stay stock: a list cut at 48 silently dropped the rest."""
    libs = [f"/usr/lib/lib{i}.dylib" for i in range(100)]
    f = tmp_path / "many"
    f.write_bytes(mg.build(libs=libs))
    p, info = inspect_json(f)
    assert p.returncode == 0 and info["slices"][0]["libraries"] == libs, p.stderr
    f.write_bytes(mg.build(libs=[f"/usr/lib/lib{i}.dylib" for i in range(257)]))
    p, _ = inspect_json(f)
    assert p.returncode == 1 and p.stderr == f"vzcaps inspect: {f}: more than 256 linked libraries (vzcaps reads at most 256)\n"
    f.write_bytes(mg.build(libs=["/usr/lib/" + "x" * 600 + ".dylib"]))
    p, _ = inspect_json(f)
    assert p.returncode == 1 and "a library path longer than 511 bytes" in p.stderr, p.stderr


def test_a_config_truncated_while_read_is_refused(tmp_path):
    """The config reader (shared with the library) says "truncated" too: the first 1000 bytes
    of a file that was longer are not the configuration."""
    conf = tmp_path / "c.conf"
    text = "# padding\n" * 200 + "[x]\nmatch = foo\napple_family_max = 1007\n"
    conf.write_text(text)
    env = shrink_env(tmp_path, conf.resolve())
    p = subprocess.run([VZ, "check", "--config", str(conf), "--exe", "foo"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert f"{conf}: truncated while read (1000 of {len(text)} bytes)" in p.stderr, p.stderr


def test_a_resource_truncated_while_prepare_copies_it_fails_and_leaves_nothing(tmp_path):
    a = app(tmp_path, plistlib.dumps({"CFBundleExecutable": "Real"}), exes=("Real",))
    res = a / "Contents" / "Resources"
    res.mkdir()
    (res / "model.bin").write_bytes(b"m" * 50000)
    env = shrink_env(tmp_path, (res / "model.bin").resolve())
    p = subprocess.run([VZ, "prepare", "--yes", "--into", str(tmp_path / "out"), str(a)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert f"{res.resolve() / 'model.bin'}: truncated while read (1000 of 50000 bytes)" in p.stderr, p.stderr
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def limited(mb):
    """preexec_fn: at most mb MiB of address space, so a file read whole where its first bytes
    suffice fails with "out of memory" (memory, not time, is asserted)."""
    import resource

    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return pre


def test_a_large_file_that_is_not_mach_o_is_told_from_its_first_bytes(tmp_path):
    """Reading replaced mapping: a model given to inspect, or a model among a bundle's resources,
    is not read into memory to learn that it is not code."""
    big = tmp_path / "model.gguf"
    with open(big, "wb") as f:
        f.write(b"GGUF")
        f.truncate(900 << 20)
    p = subprocess.run([VZ, "inspect", str(big)], capture_output=True, text=True, env=clean_env(), timeout=60,
                       preexec_fn=limited(300))
    assert p.returncode == 1 and p.stderr == f"vzcaps inspect: {big}: not a Mach-O file (magic 0x46554747)\n", p.stderr
    a = app(tmp_path, plistlib.dumps({"CFBundleExecutable": "Real"}), exes=("Real",))
    (a / "Contents" / "Resources").mkdir()
    os.rename(big, a / "Contents" / "Resources" / "model.gguf")
    p = subprocess.run([VZ, "prepare", "--into", str(tmp_path / "out"), str(a)], capture_output=True, text=True,
                       env=clean_env(), timeout=60, preexec_fn=limited(300))
    assert "main executable Contents/MacOS/Real" in p.stdout, (p.stdout, p.stderr)
    assert "out of memory" not in p.stderr
