"""The shipped arm64 slice of the vzcaps command (dist/vzcaps) under emulation, against the rig's
command (build/vzcaps) on the same inputs: check --strict against a config, run --dry-run of
#! chains, the launchd plist. Normalised only for the platform's preload variable and library
path (cases.normalise). What the command starts runs through the fork/execv stand-ins of
command.py with a Python program in place of the executable: `vzcaps host` with a stand-in
`defaults` (Darwin only: on the rig it says it is not a Mac, checked too) and the launchd
domain choice of `launchd --remove` with a stand-in `launchctl` (compared with the rig's line
where both print one)."""
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import BUILD, ROOT, require_built  # noqa: E402
from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401

import cases  # noqa: E402

if sys.platform.startswith("linux"):  # see shipped.py
    from command import Command  # noqa: E402
    from process import image  # noqa: E402

CMD = pathlib.Path(os.environ.get("VZCAPS_EMU_CMD") or ROOT / "dist" / "vzcaps")


@pytest.fixture(scope="module")
def cmd_img():
    require_built(CMD, how="make dist")
    assert (BUILD / "vzcaps").exists(), "build/vzcaps missing: run make"
    return image(CMD)


def norm(text):
    text = text.replace(str(BUILD / "libvzcaps.so"), "<lib>").replace(str((CMD.parent / "libvzcaps.dylib").resolve()), "<lib>")
    # the dry run quotes the preload entry when the library's path needs it (a space): the two
    # libraries' paths differ, so their quoting may too
    return cases.normalise(text, "<lib>").replace("'<preload>=<lib>'", "<preload>=<lib>")


def both(img, argv, env):
    c = Command(img, ["vzcaps", *argv], env, host={"brand": None}, exe=str(CMD.resolve()))
    assert c.m.missing == [], c.m.missing
    rc, out, err = c.run(["vzcaps", *argv])
    r = subprocess.run([str(BUILD / "vzcaps"), *argv], env=env, capture_output=True, text=True, timeout=60)
    return (rc, norm(out), norm(err)), (r.returncode, norm(r.stdout), norm(r.stderr))


def env_of(**extra):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "LANG": "C"}
    env.update(extra)
    return env


CONF = "[probe]\nmatch = probe\napple_family_max = auto\nhost_chip = Apple M3\n"


@pytest.mark.parametrize("argv,extra,conf", [
    (["check", "--strict"], {}, CONF),
    (["check", "--strict", "--exe", "probe"], {}, CONF),
    (["check", "--strict", "--exe", "probe"], {}, "[probe]\nmatch = probe\napple_family_max = apple12\n"),
    (["check", "--strict"], {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M2"}, None),
    (["check", "--strict"], {"VZCAPS_APPLE_FAMILY_MAX": "auto", "VZCAPS_HOST_CHIP": "Apple M7"}, None),
    (["check", "--strict", "--json"], {"VZCAPS_APPLE_FAMILY_MAX": "1009", "VZCAPS_HOST_CHIP": "Apple M1"}, None),
], ids=["refused", "section", "bad family", "env", "unknown chip", "json clamped"])
def test_check_strict(cmd_img, tmp_path, argv, extra, conf):
    env = env_of(**extra)
    if conf is not None:
        (tmp_path / "c.conf").write_text(conf)
        env["VZCAPS_CONFIG"] = str(tmp_path / "c.conf")
    emu, rig = both(cmd_img, argv, env)
    assert emu == rig


def test_run_dry_run_of_shebang_chains(cmd_img, tmp_path):
    interp = tmp_path / "bin" / "python3"
    interp.parent.mkdir()
    interp.write_bytes(b"\xcf\xfa\xed\xfe\x0c\0\0\x01\0\0\0\0\x02\0\0\0")  # MH_MAGIC_64, arm64, MH_EXECUTE
    interp.chmod(0o755)
    scripts = {"env.py": "#!/usr/bin/env python3\n", "direct.py": f"#!{interp} -u\n", "chain.sh": f"#!{tmp_path}/direct.py\n",
               "sip.sh": "#!/bin/sh\n"}
    for name, text in scripts.items():
        (tmp_path / name).write_text(text + "print(1)\n")
        (tmp_path / name).chmod(0o755)
    for name in scripts:
        env = env_of(PATH=f"{interp.parent}:/usr/bin:/bin", VZCAPS_HOST_CHIP="Apple M2")
        emu, rig = both(cmd_img, ["run", "--dry-run", "--family", "auto", "--", str(tmp_path / name), "a b"], env)
        assert emu == rig, name
        assert emu[0] == 0 and "<preload>=<lib>" in emu[1], emu


@pytest.mark.parametrize("extra", [[], ["--keep-alive"], ["--family", "apple8"]])
def test_launchd_plist(cmd_img, tmp_path, extra):
    server = tmp_path / "llama-server"
    server.write_bytes(b"\xcf\xfa\xed\xfe")
    server.chmod(0o755)
    emu, rig = both(cmd_img, ["launchd", "--label", "org.example.llama", *extra, "--", str(server), "-m", "a b.gguf"],
                    env_of(VZCAPS_HOST_CHIP="Apple M2"))
    assert emu == rig
    assert emu[1].startswith("<?xml") and "<key><preload></key>" in emu[1]


def test_launchd_inherit_is_refused_on_the_mac_when_sip_is_unknown(cmd_img, tmp_path):
    """Darwin only: with --inherit the command asks `csrutil status` for SIP's state; with no
    /usr/bin/csrutil (this machine) the state is unknown and the job is refused, where the rig's
    command writes it (Linux has no SIP)."""
    server = tmp_path / "llama-server"
    server.write_bytes(b"\xcf\xfa\xed\xfe")
    server.chmod(0o755)
    emu, rig = both(cmd_img, ["launchd", "--label", "org.example.llama", "--inherit", "--", str(server)],
                    env_of(VZCAPS_HOST_CHIP="Apple M2"))
    assert rig[0] == 0 and rig[1].startswith("<?xml")
    assert emu[0] == 1 and emu[1] == "" and "SIP is in an unknown state" in emu[2]


# ---- what the command starts: fork + execv of a stand-in program (command.py install_children)

def mac(img, argv, env, programs, host=None):
    c = Command(img, ["vzcaps", *argv], env, exe=str(CMD.resolve()),
                host=host or {"brand": "Apple M2 Pro", "memsize": 32 << 30,
                              "sysctl": {"kern.hv_vmm_present": 0, "hw.ncpu": 10, "kern.osproductversion": "15.5"}})
    c.programs.update(programs)
    rc, out, err = c.run(["vzcaps", *argv])
    return rc, out, err, c.children


PREF = "com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel"


@pytest.mark.parametrize("verb,answer,want_rc,want_out", [
    ("status", (0, b"1\n", b""), 0, f"{PREF}: 1\n"),
    ("status", (1, b"", b"The domain/default pair does not exist\n"), 0, f"{PREF}: not set\n"),
    ("enable", (0, b"", b""), 0, None),
    ("disable", (0, b"", b""), 0, None),
    ("disable", (1, b"", b"does not exist\n"), 0, None),
    ("enable", (1, b"", b"cannot write\n"), 1, None),
], ids=["status set", "status not set", "enable", "disable", "disable when absent", "enable fails"])
def test_host_on_a_mac_host(cmd_img, verb, answer, want_rc, want_out):
    """`vzcaps host` on a Mac host (kern.hv_vmm_present 0): the one `defaults` child with its
    argv exactly, its output passed through, its status read by waitpid. Darwin only (the rig
    says it is not a Mac and exits 3: compared below)."""
    rc, out, err, kids = mac(cmd_img, ["host", verb], env_of(), {"/usr/bin/defaults": lambda argv, env: answer})
    args = {"status": ["read"], "enable": ["write"], "disable": ["delete"]}[verb]
    want_argv = ["defaults", *args, *PREF.split()] + (["-bool", "true"] if verb == "enable" else [])
    assert [k["argv"] for k in kids] == [want_argv] and kids[0]["path"] == "/usr/bin/defaults"
    assert kids[0]["status"] == answer[0] << 8
    assert rc == want_rc, (out, err)
    if want_out is not None:
        assert out == want_out
    if verb == "status":
        assert answer[2].decode() in err  # the child's stderr is the command's
    r = subprocess.run([str(BUILD / "vzcaps"), "host", verb], env=env_of(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and "this is Linux" in r.stderr  # the rig: the same command, no Mac


def test_host_in_a_guest_starts_nothing(cmd_img):
    rc, out, err, kids = mac(cmd_img, ["host", "status"], env_of(), {"/usr/bin/defaults": lambda a, e: (0, b"1\n", b"")},
                             host={"brand": "Apple M2 Pro (Virtual)", "sysctl": {"kern.hv_vmm_present": 1}})
    assert rc == 3 and kids == [] and "this is a guest (kern.hv_vmm_present=1)" in err


def test_host_without_defaults(cmd_img):
    """/usr/bin/defaults missing: execv fails (ENOENT) in the child, which _exits 127; status
    says not set, enable fails."""
    rc, out, err, kids = mac(cmd_img, ["host", "status"], env_of(), {})
    assert rc == 0 and out == f"{PREF}: not set\n" and kids[0]["status"] == 127 << 8
    assert mac(cmd_img, ["host", "enable"], env_of(), {})[0] == 1


def launchctl(gui, loaded):
    """A stand-in /bin/launchctl: `print gui/UID` succeeds in a GUI login session only; `print
    DOMAIN/LABEL` when the label is loaded there; bootout succeeds."""
    uid = os.getuid()

    def run(argv, env):
        if argv[1] == "print":
            t = argv[2]
            return (0 if (t == f"gui/{uid}" and gui) or t in {f"{d}/{uid}/org.example.llama" for d in loaded} else 113,
                    b"", b"")
        return (0, b"", b"") if argv[1] == "bootout" else (5, b"", b"unexpected\n")
    return run


@pytest.mark.parametrize("gui,loaded", [(True, ["gui"]), (True, []), (False, ["user"]), (False, ["gui"]), (False, [])],
                         ids=["gui, loaded", "gui, not loaded", "headless, loaded", "headless, loaded in gui", "headless"])
def test_launchd_remove_chooses_the_domain_with_a_standin_launchctl(cmd_img, tmp_path, gui, loaded):
    """`launchd --remove`: the domain is gui/UID when `launchctl print gui/UID` succeeds, else
    user/UID (no GUI login, as over SSH); a label loaded in either domain is booted out there.
    The rig has no launchctl and prints the gui/ bootout it would run: the same line as here
    for a label loaded in gui/, with the domain line only on the Mac."""
    uid = os.getuid()
    home = tmp_path / "home"
    agents = home / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    server = tmp_path / "llama-server"
    server.write_bytes(b"\xcf\xfa\xed\xfe")
    server.chmod(0o755)
    env = env_of(HOME=str(home), VZCAPS_HOST_CHIP="Apple M2")
    plist = subprocess.run([str(BUILD / "vzcaps"), "launchd", "--label", "org.example.llama", "--", str(server)], env=env,
                           capture_output=True, timeout=60, check=True).stdout
    (agents / "org.example.llama.plist").write_bytes(plist)
    rc, out, err, kids = mac(cmd_img, ["launchd", "--remove", "--label", "org.example.llama"], env,
                             {"/bin/launchctl": launchctl(gui, loaded)})
    assert rc == 0, err
    assert not (agents / "org.example.llama.plist").exists()
    domain = "gui" if gui else "user"
    other = "user" if gui else "gui"
    lines = out.splitlines()
    assert lines[0] == (f"launchd domain gui/{uid} (a GUI login session)" if gui else
                        f"launchd domain user/{uid} (no GUI login session: launchctl print gui/UID failed, as over SSH)")
    booted = [f"launchctl bootout {d}/{uid}/org.example.llama" for d in (domain, other) if d in loaded]
    removed = f"removed {agents / 'org.example.llama.plist'}"
    assert lines[1:] == (booted or ["org.example.llama was not loaded"]) + [removed]
    asked = [k["argv"][1:] for k in kids]
    assert asked[:3] == [["print", f"gui/{uid}"], ["print", f"{domain}/{uid}/org.example.llama"],
                         ["print", f"{other}/{uid}/org.example.llama"]] or \
        asked[:2] == [["print", f"gui/{uid}"], ["print", f"{domain}/{uid}/org.example.llama"]]
    assert [a for a in asked if a[0] == "bootout"] == [["bootout", f"{d}/{uid}/org.example.llama"] for d in (domain, other)
                                                        if d in loaded]
    if gui and loaded == ["gui"]:  # the rig's line for the same removal
        (agents / "org.example.llama.plist").write_bytes(plist)
        r = subprocess.run([str(BUILD / "vzcaps"), "launchd", "--remove", "--label", "org.example.llama"], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.splitlines() == lines[1:]


# ---- issue 39 item 7: doctor names the macOS 14 guest hazard (the facts a Mac's sysctl gives) ----

# the command as if installed without its library (the emulated Darwin spawns no child: with the
# library beside it, doctor would run its device probe in one)
NOLIB_EXE = "/nonexistent-prefix/bin/vzcaps"


def doctor_json(img, version, guest, cache_home=None):
    env = env_of(VZCAPS_HOST_CHIP="Apple M2")
    if cache_home:
        env["XDG_CACHE_HOME"] = str(cache_home)
    c = Command(img, ["vzcaps", "doctor", "--json"], env, exe=NOLIB_EXE,
                host={"brand": "Apple M2 (Virtual)", "memsize": 16 << 30,
                      "sysctl": {"kern.hv_vmm_present": guest, "hw.ncpu": 4, "kern.osproductversion": version}})
    rc, out, err = c.run(["vzcaps", "doctor", "--json"])
    assert rc == 0, err
    import json
    return json.loads(out)


def hazard(doc):
    return [p for p in doc["pitfalls"] if "newBufferWithBytesNoCopy" in p]


def test_doctor_names_the_nocopy_hazard_on_a_macos_14_guest_only(cmd_img):
    [line] = hazard(doctor_json(cmd_img, "14.6", 1))
    assert line.startswith("macOS 14.6 guest: newBufferWithBytesNoCopy over a file-backed mmap is known to return stale data")
    assert "vzcaps verify" in line and "--no-mmap" in line and "GGML_METAL_SHARED_BUFFERS_DISABLE=1" in line
    assert hazard(doctor_json(cmd_img, "15.1", 1)) == [] and hazard(doctor_json(cmd_img, "26.0", 1)) == []
    assert hazard(doctor_json(cmd_img, "14.6", 0)) == []  # a host


def test_doctor_takes_the_cached_verify_verdict_on_a_macos_14_guest(cmd_img, tmp_path):
    """The verdict `vzcaps verify` cached for this chip, build, library and profile (the key of
    verify_cache_key, written again; Apple M2: family 1008)."""
    import hashlib
    import json
    lib_sha = ""  # no library beside NOLIB_EXE
    key = hashlib.sha256(f"vzcaps-verify-1|Apple M2||{lib_sha}|1008|0|0|".encode()).hexdigest()
    f = tmp_path / "vzcaps" / f"verify-{key}.json"
    f.parent.mkdir()
    nocopy = {"name": "nocopy_mmap", "path": "newBufferWithBytesNoCopy over mmap", "result": "fail", "unlocked": False}
    f.write_text(json.dumps({"device": "d", "ok": True, "nocopy_guest_fault": True, "checks": [nocopy]}))
    doc = doctor_json(cmd_img, "14.6", 1, tmp_path)
    assert doc["nocopy_mmap"] == {"verdict": "fail_stock", "verify_cache": str(f)}
    [line] = hazard(doc)
    assert f"returning stale data here, stock too (nocopy_mmap, the verdict cached in {f})" in line and "--no-mmap" in line
    nocopy.update(result="pass")
    f.write_text(json.dumps({"device": "d", "ok": True, "nocopy_guest_fault": False, "checks": [nocopy]}))
    doc = doctor_json(cmd_img, "14.6", 1, tmp_path)
    assert doc["nocopy_mmap"]["verdict"] == "pass" and hazard(doc) == []  # checked here: not seen
