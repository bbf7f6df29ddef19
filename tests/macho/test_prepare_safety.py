"""vzcaps prepare writes only where it was told: links given on the command line are read, never
written through; a destination it did not make, one that holds the source or one two inputs
would share is refused before anything is written; modes are made safe; read-only sources are
copied; interrupted and failed runs leave nothing behind, and temporaries of earlier
interrupted runs are removed. Every input here is generated (machogen.py), no download."""
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import machogen as mg  # noqa: E402
from conftest import BUILD, LINUX_ONLY, clean_env, private_mounts_ran  # noqa: E402

VZ = str(BUILD / "vzcaps")


def tool_bytes():
    """A signed file whose signature space takes a bound signature too (its old signature
    carries entitlements and five special slots)."""
    return mg.build(entitlements=mg.entitlements_xml(a=True))


def prepare(*args, umask=None, user=None, timeout=120):
    def pre():
        if umask is not None:
            os.umask(umask)
        if user is not None:
            os.setgid(user)
            os.setuid(user)
    return subprocess.run([VZ, "prepare", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=clean_env(), preexec_fn=pre)


def tree(root):
    """Every path below root with its type, mode and bytes (links by their text)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), f.read())
    return out


def test_a_link_given_is_read_and_the_copy_is_a_real_file(tmp_path):
    """Package managers' bin/ entries are links: the copy was a link and the signer wrote
    through it into the original (with a relative link, into an unrelated file)."""
    cellar = tmp_path / "t" / "cellar"
    cellar.mkdir(parents=True)
    (cellar / "tool").write_bytes(tool_bytes())
    (tmp_path / "t" / "bin").mkdir()
    os.symlink("../cellar/tool", tmp_path / "t" / "bin" / "tool")
    victim = tmp_path / "w" / "cellar" / "tool"  # what the relative link means beside --into
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"unrelated")
    original = (cellar / "tool").read_bytes()
    out = tmp_path / "w" / "out"
    p = prepare("--yes", "--into", out, tmp_path / "t" / "bin" / "tool")
    assert p.returncode == 0, p.stderr
    copy = out / "tool"
    assert not copy.is_symlink() and copy.is_file()
    assert (cellar / "tool").read_bytes() == original and victim.read_bytes() == b"unrelated"
    assert [r["ok"] and r["flags"] == mg.CS_ADHOC for r in mg.verify(copy.read_bytes())] == [True]


def test_an_into_that_is_a_link_is_refused_however_spelled(tmp_path):
    """regression: --into link/ or link/. wrote through the link (only "link" was refused, and
    on Linux as "Not a directory")."""
    (tmp_path / "tool").write_bytes(tool_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    for given in ("link", "link/", "link/.", "link/./", "link//.//"):
        p = prepare("--yes", "--into", f"{tmp_path}/{given}", tmp_path / "tool")
        assert p.returncode == 1, (given, p.stdout)
        assert p.stderr == f"vzcaps prepare: {tmp_path}/link: is a symbolic link (refusing to write through it)\n", p.stderr
    assert list(elsewhere.iterdir()) == []
    p = prepare("--yes", "--into", f"{tmp_path}/new/.", tmp_path / "tool")
    assert p.returncode == 0 and (tmp_path / "new" / "tool").is_file(), p.stderr


def test_a_destination_holding_the_source_is_refused(tmp_path):
    w = tmp_path / "w"
    (w / "tool").mkdir(parents=True)
    (w / "tool" / "tool").write_bytes(tool_bytes())
    (w / "tool" / "NOTES").write_text("notes")
    before = tree(w)
    p = prepare("--into", w, w / "tool" / "tool")  # the plan warns
    assert p.returncode == 1 and "warning:" in p.stdout and "holds the source" in p.stdout, p.stdout
    p = prepare("--yes", "--into", w, w / "tool" / "tool")
    assert p.returncode == 1 and "holds the source" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert tree(w) == before


def test_a_destination_vzcaps_did_not_make_is_refused(tmp_path):
    src = tmp_path / "src" / "tool"
    src.parent.mkdir()
    src.write_bytes(tool_bytes())
    out = tmp_path / "out"
    (out / "tool").mkdir(parents=True)
    (out / "tool" / "mine").write_text("a user's directory")
    for what in ("dir", "file", "link", "forged-marker"):
        if what == "file":
            subprocess.run(["rm", "-rf", str(out / "tool")], check=True)
            (out / "tool").write_text("a user's file")
        elif what == "link":
            (out / "tool").unlink()
            (tmp_path / "elsewhere").write_text("a user's file")
            os.symlink(str(tmp_path / "elsewhere"), out / "tool")
        elif what == "forged-marker":  # a marker that names another file does not count
            (out / "tool").unlink()
            (out / "tool").write_text("a user's file")
            (out / ".tool.vzcaps-prepared").write_text("vzcaps prepare\ncopy 1 2\n")
        before = tree(out)
        p = prepare("--into", out, src)
        assert p.returncode == 1 and "was not made by vzcaps prepare" in p.stdout, (what, p.stdout)
        p = prepare("--yes", "--into", out, src)
        assert p.returncode == 1 and "was not made by vzcaps prepare" in p.stderr, (what, p.stderr)
        assert tree(out) == before, what
    # a marker file of the user's, or a link in its place, is not overwritten either
    subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir()
    for marker in ("text", "link"):
        m = out / ".tool.vzcaps-prepared"
        if marker == "text":
            m.write_text("my notes")
        else:
            m.unlink()
            os.symlink(str(tmp_path / "elsewhere"), m)
        before = tree(out)
        p = prepare("--yes", "--into", out, src)
        assert p.returncode == 1 and ".tool.vzcaps-prepared exists and was not made by vzcaps" in p.stderr, p.stderr
        assert tree(out) == before and (tmp_path / "elsewhere").read_text() == "a user's file"
    # a copy vzcaps made is replaced
    subprocess.run(["rm", "-rf", str(out)], check=True)
    assert prepare("--yes", "--into", out, src).returncode == 0
    assert prepare("--yes", "--into", out, src).returncode == 0
    assert sorted(os.listdir(out)) == [".tool.vzcaps-prepared", "tool"]


def test_a_file_of_the_users_where_a_copy_was_deleted_is_not_replaced(tmp_path):
    """regression: the marker named the copy by device and inode only, and ext4 gives a new
    file the inode of one just deleted: the user's file was replaced, exit 0."""
    src = tmp_path / "src" / "tool"
    src.parent.mkdir()
    src.write_bytes(tool_bytes())
    out = tmp_path / "out"
    assert prepare("--yes", "--into", out, src).returncode == 0
    marker = out / ".tool.vzcaps-prepared"
    os.unlink(out / "tool")
    (out / "tool").write_text("a user's file")
    st = os.stat(out / "tool")
    # the inode given again, as ext4 does (whatever this file system did): the marker names it
    head, copy, rest = marker.read_text().split("\n", 2)
    assert copy.startswith("copy ")
    marker.write_text("\n".join([head, " ".join(["copy", str(st.st_dev), str(st.st_ino), *copy.split()[3:]]), rest]))
    p = prepare("--yes", "--into", out, src)
    assert p.returncode == 1 and "was not made by vzcaps prepare" in p.stderr, p.stderr
    assert (out / "tool").read_text() == "a user's file"


def shell_says_prepare_made(out, name):
    """The scripts' test (the record block of packaging/uninstall.sh) on a copy and its record."""
    text = (Path(__file__).resolve().parents[2] / "packaging" / "uninstall.sh").read_text()
    block = text[text.index("# ---- the record of what vzcaps made"):text.index("# ---- end of the record ----")]
    p = subprocess.run(["dash", "-c", block + '\nmade_by_record "$1" "$2" "vzcaps prepare"', "sh", str(out / name),
                        str(out / f".{name}.vzcaps-prepared")], capture_output=True, text=True, timeout=30)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode == 0


def test_a_copy_changed_in_place_with_its_time_put_back_is_not_replaced(tmp_path):
    """rule 4: the record names a file copy by device, inode, modification time and SHA-256, so
    bytes written over in place, the old time put back (touch -r), are not taken for the copy;
    the scripts' shell test reads the record prepare wrote the same way."""
    import hashlib
    src = tmp_path / "src" / "tool"
    src.parent.mkdir()
    src.write_bytes(tool_bytes())
    out = tmp_path / "out"
    assert prepare("--yes", "--into", out, src).returncode == 0
    st = os.stat(out / "tool")
    digest = hashlib.sha256((out / "tool").read_bytes()).hexdigest()
    assert (out / ".tool.vzcaps-prepared").read_text().splitlines()[:2] == [
        "vzcaps prepare", f"copy {st.st_dev} {st.st_ino} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d} {digest}"]
    assert shell_says_prepare_made(out, "tool")
    assert prepare("--yes", "--into", out, src).returncode == 0  # its own copy: replaced
    os.chmod(out / "tool", 0o755)
    with open(out / "tool", "r+b") as f:
        f.write(b"a user's bytes")
    st = os.stat(out / "tool")
    mine = (out / "tool").read_bytes()
    rec = (out / ".tool.vzcaps-prepared").read_text().splitlines()[1].split()
    sec, ns = rec[3].split(".")
    os.utime(out / "tool", ns=(st.st_atime_ns, int(sec) * 10**9 + int(ns)))  # the copy's time put back
    assert os.stat(out / "tool").st_ino == int(rec[2])
    assert not shell_says_prepare_made(out, "tool")
    p = prepare("--yes", "--into", out, src)
    assert p.returncode == 1 and "was not made by vzcaps prepare" in p.stderr, p.stderr
    assert (out / "tool").read_bytes() == mine


def test_two_inputs_with_one_name_are_refused_before_anything_is_written(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "tool").write_bytes(tool_bytes())
    out = tmp_path / "out"
    p = prepare("--into", out, tmp_path / "a" / "tool", tmp_path / "b" / "tool")
    assert p.returncode == 1 and "would both be prepared as" in p.stdout
    p = prepare("--yes", "--into", out, tmp_path / "a" / "tool", tmp_path / "b" / "tool")
    assert p.returncode == 1 and "prepared" not in p.stdout
    assert f"{tmp_path / 'a' / 'tool'} and {tmp_path / 'b' / 'tool'} would both be prepared as {out / 'tool'}" in p.stderr
    assert not out.exists()


def test_into_is_not_created_when_an_input_is_rejected(tmp_path):
    (tmp_path / "text").write_text("hello")
    out = tmp_path / "new" / "out"
    p = prepare("--yes", "--into", out, tmp_path / "text")
    assert p.returncode == 1 and "not a Mach-O file" in p.stderr
    assert not (tmp_path / "new").exists()


def app_bundle(root, name="Demo", exe=None, mode=None):
    app = root / f"{name}.app" / "Contents"
    (app / "MacOS").mkdir(parents=True)
    (app / "Resources").mkdir()
    (app / "Info.plist").write_text(f"<plist><dict><key>CFBundleExecutable</key><string>{exe or name}</string></dict></plist>")
    (app / "MacOS" / (exe or name)).write_bytes(tool_bytes())
    (app / "Resources" / "notes.txt").write_text("notes")
    if mode is not None:
        for dirpath, dirs, files in os.walk(root / f"{name}.app", topdown=False):
            for f in files:
                os.chmod(os.path.join(dirpath, f), mode)
            os.chmod(dirpath, mode)
    return root / f"{name}.app"


def test_an_into_inside_the_source_that_does_not_exist_yet_is_refused_before_it_is_made(tmp_path):
    """regression: the check needed --into to exist, so prepare first made --into (and its
    parents) inside the source bundle, then refused: the original was changed."""
    app = app_bundle(tmp_path / "src")
    before = tree(app)
    for into in (app / "Contents" / "new" / "sub", app / "new" / ".." / "x", tmp_path / "src" / "x" / ".." / "Demo.app" / "a",
                 str(app / "q") + "/"):
        p = prepare("--yes", "--into", into, app)
        assert p.returncode == 1 and "is inside the source" in p.stderr and p.stderr.count("\n") == 1, (into, p.stderr)
        assert tree(app) == before, into
    assert sorted(os.listdir(tmp_path / "src")) == ["Demo.app"]
    p = prepare("--yes", "--into", tmp_path / "out" / "a" / ".." / "b", app)  # a new --into outside it is fine
    assert p.returncode == 0 and (tmp_path / "out" / "b" / "Demo.app").is_dir(), p.stderr


def test_modes_are_made_safe_and_the_umask_is_respected(tmp_path):
    src = tmp_path / "src"
    app = app_bundle(src, mode=0o4777)
    os.chmod(app, 0o777)
    for dirpath, dirs, files in os.walk(app):
        os.chmod(dirpath, 0o777)
    out = tmp_path / "out"
    p = prepare("--yes", "--into", out, app, umask=0o077)
    assert p.returncode == 0, p.stderr
    for rel, entry in tree(out / "Demo.app").items():
        mode = entry[1]
        assert isinstance(mode, int)
        assert mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX) == 0 and mode & 0o077 == 0, (rel, oct(mode))
    assert stat.S_IMODE(os.stat(out / "Demo.app" / "Contents" / "MacOS" / "Demo").st_mode) == 0o700


def test_read_only_sources_are_copied_by_a_normal_user(request):
    """A 0555 tree (as in package managers' cellars) failed for a non-root user and left
    .NAME.vzcaps-new.PID behind. Run as an unprivileged user when the tests run as root."""
    base = Path(tempfile.mkdtemp(prefix="vzcaps-ro-", dir="/tmp"))  # reachable for that user
    os.chmod(base, 0o777)
    request.addfinalizer(lambda: subprocess.run(["rm", "-rf", str(base)]))
    user = 65534 if os.geteuid() == 0 else None
    src = base / "cellar"
    src.mkdir()
    app = app_bundle(src, mode=0o555)
    os.chmod(src, 0o555)
    out = base / "out"
    for attempt in range(2):  # the second run replaces the read-only copy of the first
        p = prepare("--yes", "--into", out, app, user=user, umask=0o022)
        assert p.returncode == 0, (attempt, p.stderr)
        assert sorted(os.listdir(out)) == [".Demo.app.vzcaps-prepared", "Demo.app"], os.listdir(out)
    assert stat.S_IMODE(os.stat(out / "Demo.app" / "Contents").st_mode) == 0o555
    assert stat.S_IMODE(os.stat(out / "Demo.app" / "Contents" / "Resources" / "notes.txt").st_mode) == 0o555


def test_a_copy_with_an_unreadable_directory_is_replaced_and_what_stays_is_said(request):
    """regression: a previous copy with a directory made unreadable (mode 0) was moved aside and
    never removed, exit 0; the next run said "removed ..., left by an interrupted run" while it
    stayed. Run as an unprivileged user when the tests run as root."""
    base = Path(tempfile.mkdtemp(prefix="vzcaps-unreadable-", dir="/tmp"))
    os.chmod(base, 0o777)
    request.addfinalizer(lambda: subprocess.run(["rm", "-rf", str(base)]))
    user = 65534 if os.geteuid() == 0 else None
    app = app_bundle(base / "src")
    subprocess.run(["chmod", "-R", "a+rX", str(base / "src")], check=True)
    out = base / "out"
    out.mkdir()
    if user is not None:
        os.chown(out, user, user)
    assert prepare("--yes", "--into", out, app, user=user).returncode == 0
    os.chmod(out / "Demo.app" / "Contents" / "Resources", 0)
    p = prepare("--yes", "--into", out, app, user=user)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == [".Demo.app.vzcaps-prepared", "Demo.app"], os.listdir(out)
    if user is None:
        return
    # what cannot be removed is said, not reported removed: a directory of root's in a leftover
    dead = 4194304 + 23
    stale = out / f".Demo.app.vzcaps-old.{dead}"
    (stale / "Contents").mkdir(parents=True)
    (stale / "Contents" / "f").write_text("x")
    os.chown(stale, user, user)
    p = prepare("--yes", "--into", out, app, user=user)
    assert p.returncode == 0 and "left by an interrupted run" not in p.stdout, p.stdout
    assert p.stderr == (f"vzcaps prepare: warning: cannot remove {out}/{stale.name}, left by an interrupted run: "
                        "Directory not empty\n"), p.stderr
    assert stale.exists()


def test_stale_temporaries_of_interrupted_runs_are_removed(tmp_path):
    src = tmp_path / "src" / "tool"
    src.parent.mkdir()
    src.write_bytes(tool_bytes())
    out = tmp_path / "out"
    dead = 4194304 + 17  # above any pid_max: no such process
    stale_new = out / f".Demo.app.vzcaps-new.{dead}"
    (stale_new / "Contents").mkdir(parents=True)
    (stale_new / "Contents" / "big").write_bytes(b"x" * 1000)
    os.chmod(stale_new / "Contents", 0o555)
    (out / f".tool.vzcaps-old.{dead}").write_bytes(b"old")
    (out / f".vzcaps-tmp.{dead}.3").write_bytes(b"half a file")
    alive = out / f".other.vzcaps-new.{os.getpid()}"  # a run still going
    alive.mkdir()
    users = out / ".notes.vzcaps-new.txt"
    users.write_text("not ours")
    p = prepare("--yes", "--into", out, src)
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == sorted([".tool.vzcaps-prepared", "tool", alive.name, users.name])
    assert p.stdout.count("left by an interrupted run") == 3


def test_an_interrupted_run_removes_its_temporary_tree(tmp_path):
    src = tmp_path / "src"
    app = app_bundle(src)
    with open(app / "Contents" / "Resources" / "big.bin", "wb") as f:  # sparse: quick to make, slow to hash and copy
        f.truncate(1 << 30)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([VZ, "prepare", "--yes", "--into", str(out), str(app)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    deadline = time.time() + 60
    while time.time() < deadline and not any(n.startswith(".Demo.app.vzcaps-new.") for n in os.listdir(out)):
        if proc.poll() is not None:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    assert os.listdir(out) == []


@LINUX_ONLY  # unshare (util-linux) and a tmpfs in a private mount namespace
def test_a_full_disk_leaves_nothing_behind(tmp_path):
    """Writes that fail (a 256 KiB tmpfs) are an error naming the path; the temporary tree is
    removed and nothing is placed."""
    src = tmp_path / "src"
    app = app_bundle(src)
    (app / "Contents" / "Resources" / "big.bin").write_bytes(os.urandom(1 << 20))
    out = tmp_path / "out"
    out.mkdir()
    userns = [] if os.geteuid() == 0 else ["-r"]
    script = (f'mount -t tmpfs -o size=256k tmpfs "$1" && "$2" prepare --yes --into "$1" "$3"; rc=$?; '
              f'ls -A "$1"; exit $rc')
    p = private_mounts_ran(subprocess.run(["unshare", *userns, "-m", "--propagation", "private", "sh", "-c", script, "sh",
                                          str(out), VZ, str(app)], capture_output=True, text=True, timeout=120, env=clean_env()))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "No space left on device" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert p.stdout == "", p.stdout  # the listing of the full file system: empty


def test_inspect_and_prepare_refuse_an_executable_name_that_leads_out(tmp_path):
    app = app_bundle(tmp_path, exe="Demo")
    (app / "Contents" / "Info.plist").write_text(
        "<plist><dict><key>CFBundleExecutable</key><string>../../..</string></dict></plist>")
    p = subprocess.run([VZ, "inspect", str(app)], capture_output=True, text=True, env=clean_env())
    assert p.returncode != 0 and "is not a file name" in p.stderr, (p.stdout, p.stderr)
    p = prepare("--yes", "--into", tmp_path / "out", app)
    assert p.returncode == 1 and "is not a file name" in p.stderr and not (tmp_path / "out").exists()


def test_a_nul_in_a_binary_plists_executable_name_is_shown_whole_with_its_reason(tmp_path):
    """Issue 32 row 11: the name was cut at the NUL ("re") and refused as leading out of the
    bundle."""
    import json
    import plistlib
    app = app_bundle(tmp_path, exe="re")
    (app / "Contents" / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": "re\0al"},
                                                                 fmt=plistlib.FMT_BINARY))
    want = f'{app}/Contents/Info.plist: CFBundleExecutable "re\\x00al" holds a NUL byte, which no file name can'
    p = subprocess.run([VZ, "inspect", "--json", str(app)], capture_output=True, text=True, env=clean_env())
    assert p.returncode != 0
    assert json.loads(p.stdout)["files"][0]["error"] == want, p.stdout
    p = subprocess.run([VZ, "inspect", str(app)], capture_output=True, text=True, env=clean_env())
    assert p.returncode != 0 and "holds a NUL byte" in p.stderr and "lead out" not in p.stderr, p.stderr
    p = prepare("--yes", "--into", tmp_path / "out", app)
    assert p.returncode == 1 and not (tmp_path / "out").exists(), p.stderr


def test_a_nul_in_an_executable_name_is_escaped_once_on_the_plain_line(tmp_path):
    """The plain line showed the name escaped twice (re\\\\x00al): the printer escaped what the
    reader had escaped. Each byte is escaped once: a backslash as two, the NUL as \\x00, a
    control character as \\xNN, in the NUL's reason and in the leading-out one alike."""
    import plistlib
    for i, (name, shown, reason) in enumerate((("re\0al", "re\\x00al", "holds a NUL byte"),
                                             ("r\\e\0al\x1b", "r\\\\e\\x00al\\x1b", "holds a NUL byte"),
                                             ("../x\x1b", "../x\\x1b", "is not a file name"))):
        root = tmp_path / str(i)
        app = app_bundle(root, exe="re")
        (app / "Contents" / "Info.plist").write_bytes(plistlib.dumps({"CFBundleExecutable": name},
                                                                     fmt=plistlib.FMT_BINARY))
        p = subprocess.run([VZ, "inspect", str(app)], capture_output=True, text=True, env=clean_env())
        assert p.returncode != 0 and p.stdout == "", (p.stdout, p.stderr)
        assert p.stderr == f'vzcaps inspect: {app}/Contents/Info.plist: CFBundleExecutable "{shown}" {reason}' + (
            ", which no file name can\n" if "NUL" in reason else " (it would lead out of the bundle)\n"), p.stderr


def test_hostile_entries_in_a_bundle_are_refused_without_writing(tmp_path):
    """A FIFO (never opened, never hangs), a name a property list cannot carry; links inside a
    bundle are copied as links, whatever they point to."""
    for case in ("fifo", "name", "fifo-input"):
        src = tmp_path / case
        app = app_bundle(src)
        target = app
        if case == "fifo":
            os.mkfifo(app / "Contents" / "Resources" / "pipe")
            needle = "not a regular file, directory or link"
        elif case == "name":
            (app / "Contents" / "Resources" / "bad\nname").write_text("x")
            needle = "Resources/bad\\x0aname: a name with control characters or invalid UTF-8"  # escaped once
        else:
            target = src / "pipe"
            os.mkfifo(target)
            needle = "not a regular file"
        out = tmp_path / f"out-{case}"
        p = prepare("--yes", "--into", out, target, timeout=20)
        assert p.returncode == 1 and needle in p.stderr and p.stderr.count("\n") == 1, (case, p.stderr)
        assert "\n" not in p.stderr[:-1] and not out.exists(), case
    app = app_bundle(tmp_path / "links")
    os.symlink("/etc/passwd", app / "Contents" / "Resources" / "abs")
    os.symlink("missing", app / "Contents" / "Resources" / "dangling")
    out = tmp_path / "out-links"
    p = prepare("--yes", "--into", out, app)
    assert p.returncode == 0, p.stderr
    res = out / "Demo.app" / "Contents" / "Resources"
    assert os.readlink(res / "abs") == "/etc/passwd" and os.readlink(res / "dangling") == "missing"


def test_the_plan_covers_only_accepted_inputs(tmp_path):
    (tmp_path / "text").write_text("hello")
    (tmp_path / "tool").write_bytes(tool_bytes())
    p = prepare("--into", tmp_path / "out", tmp_path / "text", tmp_path / "tool")
    assert p.returncode == 1 and "not a Mach-O file" in p.stderr
    assert f"would copy {tmp_path / 'tool'}" in p.stdout and f"would copy {tmp_path / 'text'}" not in p.stdout
    assert not (tmp_path / "out").exists()


def test_the_run_line_is_offered_only_for_an_executable(tmp_path):
    """regression: a library alone printed "run it through vzcaps with:" and nothing under it."""
    (tmp_path / "lib.dylib").write_bytes(tool_bytes())
    exe = bytearray(tool_bytes())
    exe[12] = 2  # MH_EXECUTE (the signer signs it again)
    (tmp_path / "tool").write_bytes(bytes(exe))
    p = prepare("--yes", "--into", tmp_path / "out", tmp_path / "lib.dylib")
    assert p.returncode == 0 and p.stdout == (f"prepared {tmp_path}/out/lib.dylib: 1 Mach-O file re-signed ad hoc, "
                                              "no hardened runtime\n"), p.stdout
    p = prepare("--yes", "--into", tmp_path / "out", tmp_path / "tool")
    assert p.returncode == 0 and p.stdout.endswith(f"\nrun it through vzcaps with:\n  vzcaps run --inherit -- "
                                                   f"{tmp_path}/out/tool\n"), p.stdout
