"""The one record of what vzcaps made (docs/safety.md rule 4): the C test (src/common/record.c)
and the scripts' shell functions (the record block of packaging/uninstall.sh, kept identical in
scripts/release) run through one table of cases, under dash, bash and bash --posix, and must
agree on every case: records that name an entry as it is now, entries changed or replaced at a
reused inode, malformed and hostile records, and markers in and out of their place."""
import hashlib
import os
import subprocess

import pytest

from conftest import ROOT

SHELLS = ["dash", "bash", "bash --posix"]
MAKER = "vzcaps prepare"
M = "<!-- written by vzcaps report -->"
P = "<!-- written by vzcaps launchd -->"


def block(path):
    text = (ROOT / path).read_text()
    start = text.index("# ---- the record of what vzcaps made")
    return text[start:text.index("# ---- end of the record ----", start)]


def test_the_record_block_is_identical_in_every_script():
    assert block("packaging/install.sh") == block("packaging/uninstall.sh") == block("scripts/release")


@pytest.fixture(scope="module")
def record_check(tmp_path_factory):
    """tests/unit/record_check.c: the C functions as a command."""
    out = tmp_path_factory.mktemp("rc") / "record_check"
    srcs = ["tests/unit/record_check.c", "src/common/record.c", "src/common/sha256.c", "src/common/readfile.c", "src/common/input.c",
            *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src" / "core").glob("*.c"))]
    p = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-format-truncation", *srcs, "-o", str(out)],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return str(out)


def fields(path, hashed=True):
    st = os.lstat(path)
    f = f"{st.st_dev} {st.st_ino} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d}"
    if not hashed:
        return f
    if os.path.islink(path):
        return f + " " + hashlib.sha256(os.fsencode(os.readlink(path)) + b"\n").hexdigest()
    if os.path.isfile(path):
        return f + " " + hashlib.sha256(open(path, "rb").read()).hexdigest()
    return f + " -"


def record_cases(d):
    """(name, entry, record file): a table the two tests must agree on; the expected verdict is
    in the name (ours-/not-)."""
    cases = []

    def rec(name, entry, text, mode="w"):
        r = d / f".{name}.rec"
        (r.write_bytes if mode == "wb" else r.write_text)(text)
        cases.append((name, str(entry), str(r)))

    f = d / "file"
    f.write_text("a prepared copy\n")
    rec("ours-file", f, f"{MAKER}\ncopy {fields(f)}\nsource /x/file\n")
    rec("ours-file-without-hash", f, f"{MAKER}\ncopy {fields(f, False)}\n")
    rec("ours-file-dash-hash", f, f"{MAKER}\ncopy {fields(f, False)} -\n")
    rec("ours-file-no-newline", f, f"{MAKER}\ncopy {fields(f)}")
    rec("not-wrong-maker", f, f"vzcaps report\ncopy {fields(f)}\n")
    rec("not-maker-with-cr", f, f"{MAKER}\r\ncopy {fields(f)}\n")
    rec("not-maker-second", f, f"\n{MAKER}\ncopy {fields(f)}\n")
    rec("not-no-copy-line", f, f"{MAKER}\n")
    rec("not-empty-record", f, "")
    rec("not-copy-word", f, f"{MAKER}\nCopy {fields(f)}\n")
    rec("not-two-spaces", f, f"{MAKER}\ncopy  {fields(f)}\n")
    rec("not-trailing-space", f, f"{MAKER}\ncopy {fields(f, False)} \n")
    rec("not-five-fields", f, f"{MAKER}\ncopy {fields(f)} x\n")
    rec("not-upper-hash", f, f"{MAKER}\ncopy {fields(f).upper()}\n")
    rec("not-short-hash", f, f"{MAKER}\ncopy {fields(f)[:-1]}\n")
    rec("not-tab", f, f"{MAKER}\ncopy {fields(f).replace(' ', chr(9), 1)}\n")
    dev, ino, t, h = fields(f).split()
    rec("not-leading-zero-inode", f, f"{MAKER}\ncopy {dev} 0{ino} {t} {h}\n")
    rec("not-short-nanoseconds", f, f"{MAKER}\ncopy {dev} {ino} {t[:-1]} {h}\n")
    rec("not-other-device", f, f"{MAKER}\ncopy {int(dev) + 1} {ino} {t} {h}\n")
    rec("not-whole-seconds-only", f, f"{MAKER}\ncopy {dev} {ino} {t.split('.')[0]}.000000000\n")
    rec("not-nul-in-record", f, f"{MAKER}\ncopy {fields(f)}\n\0".encode(), "wb")
    rec("not-huge-record", f, f"{MAKER}\ncopy {fields(f)}\n" + "#" * 70000)
    # the user's file at the copy's inode: rewritten in place (same inode, new time) ...
    g = d / "reused"
    g.write_text("the copy\n")
    old, old_ns = fields(g), os.lstat(g).st_mtime_ns
    with open(g, "w") as w:
        w.write("the user's own notes\n")
    os.utime(g, ns=(old_ns + 1000, old_ns + 1000))
    rec("not-same-inode-new-time", g, f"{MAKER}\ncopy {old}\n")
    # ... or even with the old time put back: the content differs
    os.utime(g, ns=(old_ns, old_ns))
    rec("not-same-inode-same-time-other-content", g, f"{MAKER}\ncopy {old}\n")
    rec("ours-same-inode-same-time-no-hash-recorded", g, f"{MAKER}\ncopy {old.rsplit(' ', 1)[0]}\n")
    # deleted and made again
    h2 = d / "again"
    h2.write_text("copy\n")
    old = fields(h2)
    h2.unlink()
    h2.write_text("mine\n")
    rec("not-made-again", h2, f"{MAKER}\ncopy {old}\n")
    rec("not-missing", d / "missing", f"{MAKER}\ncopy {old}\n")
    # a directory (an .app copy): no hash
    app = d / "Demo.app"
    (app / "Contents").mkdir(parents=True)
    rec("ours-dir", app, f"{MAKER}\ncopy {fields(app)}\n")
    rec("not-dir-with-a-hash", app, f"{MAKER}\ncopy {fields(app, False)} {'0' * 64}\n")
    # a link: its target is its content
    ln = d / "link"
    ln.symlink_to("some/where\nodd")
    rec("ours-link", ln, f"{MAKER}\ncopy {fields(ln)}\n")
    rec("not-link-other-target", ln, f"{MAKER}\ncopy {fields(ln, False)} {hashlib.sha256(b'other').hexdigest()}\n")
    fifo = d / "fifo"
    os.mkfifo(fifo)
    rec("ours-fifo-not-hashed", fifo, f"{MAKER}\ncopy {fields(fifo, False)} -\n")
    rec("not-fifo-with-a-hash", fifo, f"{MAKER}\ncopy {fields(fifo, False)} {'0' * 64}\n")
    # the record itself a link, a directory, a FIFO
    (d / ".reclink").symlink_to(d / ".ours-file.rec")
    cases.append(("not-record-is-a-link", str(f), str(d / ".reclink")))
    (d / ".recdir").mkdir()
    cases.append(("not-record-is-a-directory", str(f), str(d / ".recdir")))
    os.mkfifo(d / ".recfifo")
    cases.append(("not-record-is-a-fifo", str(f), str(d / ".recfifo")))
    return cases


def shell_verdict(shell, fn, *args):
    script = block("packaging/uninstall.sh") + f'\n{fn} "$@"\n'
    p = subprocess.run([*shell.split(), "-c", script, "sh", *args], capture_output=True, text=True, timeout=30)
    assert p.returncode in (0, 1), (shell, fn, args, p.stderr)
    return p.returncode == 0


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shell_check_and_the_c_one_agree_on_every_record(shell, record_check, tmp_path):
    cases = record_cases(tmp_path)
    for name, entry, rec in cases:
        c = subprocess.run([record_check, "record", entry, rec, MAKER], timeout=30).returncode
        assert c in (0, 1), name
        sh = shell_verdict(shell, "made_by_record", entry, rec, MAKER)
        want = name.startswith("ours-")
        assert (c == 0) == want, f"C: {name}"
        assert sh == want, f"{shell}: {name}"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_record_written_is_the_same(shell, record_check, tmp_path):
    (tmp_path / "f").write_bytes(b"bytes\0and more\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to("target with blanks")
    for n in ("f", "d", "l"):
        c = subprocess.run([record_check, "write", str(tmp_path / n), MAKER], capture_output=True, text=True).stdout
        script = block("packaging/uninstall.sh") + '\nmade_record "$@"\n'
        sh = subprocess.run([*shell.split(), "-c", script, "sh", str(tmp_path / n), MAKER], capture_output=True,
                            text=True).stdout
        assert c == sh == f"{MAKER}\ncopy {fields(tmp_path / n)}\n", n


def marked_cases(d):
    xml, doctype = '<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "x">'
    table = [
        ("ours-md", f"{M}\n# table\n", M, "line1"),
        ("ours-md-only-line", f"{M}\n", M, "line1"),
        ("not-md-third-line", f"# notes\n\nreport writes `{M}`\n", M, "line1"),
        ("not-md-second-line", f"# notes\n{M}\n", M, "line1"),
        ("not-md-indented", f" {M}\n", M, "line1"),
        ("not-md-more-on-the-line", f"{M} quoted\n", M, "line1"),
        ("not-md-no-newline", M, M, "line1"),
        ("not-md-crlf", f"{M}\r\n", M, "line1"),
        ("not-md-nul", f"{M}\n\0", M, "line1"),
        ("not-empty", "", M, "line1"),
        ("ours-svg", f"{xml}\n{M}\n<svg/>\n", M, "after-xml"),
        ("ours-svg-without-declaration", f"{M}\n<svg/>\n", M, "after-xml"),
        ("not-svg-in-text", f"{xml}\n<svg><text>{M}</text></svg>\n", M, "after-xml"),
        ("not-svg-line3", f"{xml}\n<svg>\n{M}\n", M, "after-xml"),
        ("ours-svg-marker-first-line", f"{M}\n{xml}\n<svg/>\n", M, "after-xml"),
        ("ours-plist", f"{xml}\n{doctype}\n{P}\n<plist/>\n", P, "after-doctype"),
        ("not-plist-no-doctype", f"{xml}\n{P}\n<plist/>\n", P, "after-doctype"),
        ("not-plist-line4", f"{xml}\n{doctype}\n<plist>\n{P}\n", P, "after-doctype"),
        ("not-plist-in-a-string", f"{xml}\n{doctype}\n<plist><string>{P}</string></plist>\n", P, "after-doctype"),
        ("not-late", "x" * 5000 + f"\n{M}\n", M, "line1"),
        ("not-marker-past-4096", f"{xml}{' ' * 4090}\n{M}\n", M, "after-xml"),
    ]
    cases = []
    for name, text, marker, where in table:
        (d / name).write_text(text)
        cases.append((name, str(d / name), marker, where))
    (d / "link").symlink_to(d / "ours-md")
    cases.append(("not-link-to-ours", str(d / "link"), M, "line1"))
    os.mkfifo(d / "fifo")
    cases.append(("not-fifo", str(d / "fifo"), M, "line1"))
    (d / "dir").mkdir()
    cases.append(("not-dir", str(d / "dir"), M, "line1"))
    return cases


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shell_check_and_the_c_one_agree_on_every_marker(shell, record_check, tmp_path):
    for name, path, marker, where in marked_cases(tmp_path):
        c = subprocess.run([record_check, "marked", path, marker, where], timeout=30).returncode
        assert c in (0, 1), name
        want = name.startswith("ours-")
        assert (c == 0) == want, f"C: {name}"
        assert shell_verdict(shell, "made_marked", path, marker, where) == want, f"{shell}: {name}"


# ---- issue 32 row 13: a device number with bit 31 set (macOS's dev_t is int32_t) ----

BIT31_DEV = 0x80000005  # 2147483653: what BSD `stat -f %d` prints for such a device


@pytest.mark.parametrize("dev,want", [(BIT31_DEV - 2**32, BIT31_DEV), (-1, 2**32 - 1), (5, 5), (2**31 - 1, 2**31 - 1)])
def test_a_32_bit_device_number_is_kept_unsigned_as_bsd_stat_prints_it(record_check, dev, want):
    """file_cmds stat.c: st_dev prints FMTF_UNSIGNED, a 4-byte field cast to u_int32_t; the
    record keeps it so (it kept it sign-extended: 18446744071562067973)."""
    p = subprocess.run([record_check, "dev32", str(dev)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == f"{want}\n", p.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shell_compares_such_a_device_as_the_record_keeps_it(shell, record_check, tmp_path):
    """The scripts' made_this under a BSD stat (a stand-in printing what macOS's prints for a file
    on a device with bit 31 set) accepts the record's unsigned field and refuses the
    sign-extended one."""
    f = tmp_path / "entry"
    f.write_text("x\n")
    st = os.lstat(f)
    t = f"{st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d}"
    bindir = tmp_path / "bsd"
    bindir.mkdir()
    (bindir / "stat").write_text(
        "#!/bin/sh\n"
        f"[ \"$1\" = -f ] && [ \"$2\" = '%d %i %Fm' ] && [ \"$4\" = '{f}' ] && "
        f"{{ echo '{BIT31_DEV} {st.st_ino} {t}'; exit 0; }}\nexit 1\n")
    (bindir / "stat").chmod(0o755)
    kept = subprocess.run([record_check, "dev32", str(BIT31_DEV - 2**32)], capture_output=True, text=True).stdout.strip()
    script = block("packaging/uninstall.sh") + '\nmade_this "$@"\n'
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")

    def verdict(fields):
        p = subprocess.run([*shell.split(), "-c", script, "sh", str(f), fields], env=env, capture_output=True,
                           text=True, timeout=30)
        assert p.returncode in (0, 1), p.stderr
        return p.returncode == 0

    assert verdict(f"{kept} {st.st_ino} {t}")
    assert not verdict(f"{BIT31_DEV - 2**32 + 2**64} {st.st_ino} {t}")
