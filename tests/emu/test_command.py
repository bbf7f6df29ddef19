"""The shipped arm64 slice of the vzcaps command (dist/vzcaps) under emulation, against the rig's
command (build/vzcaps) on the same inputs: check --strict against a config, run --dry-run of
#! chains, the launchd plist (printed; the launchctl domain choice of --install is not run). Normalised only for the platform's preload variable and library
path (cases.normalise). `vzcaps host` is not compared: on Linux it says it is not a Mac host,
and on a Mac it starts `defaults`, which has no stand-in yet."""
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

if sys.platform.startswith("linux"):  # see test_emu.py
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
    interp.write_bytes(b"\xcf\xfa\xed\xfe")
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
