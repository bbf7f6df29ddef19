"""End-to-end tests of the vzcaps command on Linux, driving the real binary."""
import json
import os
import plistlib
import subprocess

import pytest

from conftest import BUILD, FIXTURES, ROOT, STOCK_FAMILIES, clean_env, parse_probe

from conftest import LINUX_ONLY as pytestmark  # noqa: E402,F401  (the GNU-runtime rig and LD_PRELOAD)

VZ = str(BUILD / "vzcaps")


def vz(*args, env=None, **kw):
    return subprocess.run([VZ, *args], env=env or clean_env(), capture_output=True, text=True, timeout=60, **kw)


def test_version_and_help():
    p = vz("--version")
    assert p.returncode == 0 and p.stdout.startswith("vzcaps ")
    p = vz("help")
    assert p.returncode == 0 and "\n   run " in p.stdout and "\n   check " in p.stdout
    for cmd in ("run", "check", "launchd", "host", "doctor", "inspect", "report", "bench", "probe", "verify", "help"):
        p = vz("help", cmd)
        assert p.returncode == 0 and p.stdout.startswith(f"usage: vzcaps {cmd}"), cmd
        assert vz(cmd, "--help").stdout == p.stdout


@pytest.mark.parametrize("args,needle", [
    ([], "usage: vzcaps"), (["frobnicate"], 'unknown command "frobnicate"'), (["help", "nope"], 'unknown command "nope"'),
    (["run"], "no command given"), (["run", "--bogus", "--", "x"], "unknown option --bogus"),
    (["run", "--profile"], "--profile needs PROFILE"), (["check", "--exe"], "--exe needs PROGRAM"),
    (["check", "extra"], "unexpected argument extra"), (["launchd", "--", "x"], "--label is required"),
    (["launchd", "--label", "bad label", "--", "x"], "must be letters"),
    (["launchd", "--label", "a", "--install", "--remove"], "exclude each other"),
    (["run", "--family", "1009x", "--", "x"], '--family: "1009x" is not auto, off, 0, or an Apple family'),
    (["launchd", "--label", "a", "--family", "", "--", "x"], "--family: empty value"),
    (["host"], "expected one of"), (["host", "reboot"], 'unknown action "reboot"'),
    (["doctor", "--nope"], "unknown option --nope"), (["check", "--jsn"], "unknown option --jsn (did you mean --json?)"),
    (["check", "--json=yes"], "--json takes no value"),
    # regression: empty arguments reached the commands ("cannot create : No such file ...")
    (["check", ""], "vzcaps check: an empty argument names nothing"), (["doctor", "--bundle", ""], "--bundle: empty value"),
    (["check", "--chip="], "--chip: empty value"), (["probe", "--replay", "a.json", ""], "--replay: empty value"),
    (["inspect", "--", "x", ""], "an empty argument names nothing"), (["run", "--", ""], "an empty argument names nothing"),
    (["report", ""], "an empty argument names nothing"), (["prepare", ""], "an empty argument names nothing"), (["probe", "--replay", "one.json"], "--replay needs STOCK.json UNLOCKED.json"),
])
def test_malformed_command_lines(args, needle):
    p = vz(*args)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr
    assert "usage: vzcaps" in p.stderr or "vzcaps help" in p.stderr


def test_the_table_reads_every_command_line_alike(tmp_path):
    """cli_parse: options before or after operands, NAME=VALUE or two words, and what follows --
    is never an option."""
    fx = FIXTURES
    p = vz("report", str(tmp_path / "none"), "--json", "--unlocked=" + str(fx / "unlocked-guest.json"), "--stock",
           str(fx / "stock-guest.json"))
    assert p.returncode == 1 and "none" in p.stderr and p.stdout == ""  # the operand is a directory to read
    p = vz("report", "--unlocked=" + str(fx / "unlocked-guest.json"), "--stock", str(fx / "stock-guest.json"), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["rows"], p.stderr
    p = vz("prepare", "--", "--yes")
    assert p.returncode == 1 and "--yes" in p.stderr and "Nothing was written" not in p.stdout  # a file named --yes
    p = vz("inspect", str(BUILD / "vzcaps"), "--json", "--bare")  # not Mach-O (1), said in JSON
    assert p.returncode == 1 and json.loads(p.stdout)["files"][0]["path"] == str(BUILD / "vzcaps")


def test_unknown_command_suggests_the_closest():
    p = vz("chek")
    assert p.returncode == 2 and p.stderr.splitlines()[0] == 'vzcaps: unknown command "chek" (did you mean check?)'
    assert len(p.stderr.splitlines()) == 2  # not the whole usage
    p = vz("help", "inspekt")
    assert 'did you mean inspect?' in p.stderr


def test_double_dash_ends_options_everywhere(tmp_path):
    (tmp_path / "-weird").write_bytes(b"not mach-o" * 10)
    p = subprocess.run([VZ, "inspect", "--", "-weird"], cwd=tmp_path, capture_output=True, text=True, env=clean_env())
    assert p.returncode == 1 and "-weird: not a Mach-O file" in p.stderr  # read as a file, not an option
    p = vz("check", "--json", "--")
    assert p.returncode == 0


def test_run_dry_run_prints_exact_environment_and_command():
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2 Pro (Virtual)")
    p = vz("run", "--dry-run", "--inherit", "--", "llama-bench", "-m", "my model.gguf", env=env)
    assert p.returncode == 0, p.stderr
    lib = os.path.realpath(BUILD / "libvzcaps.so")
    assert p.stdout.splitlines() == [
        f"env VZCAPS_APPLE_FAMILY_MAX=auto VZCAPS_INHERIT=1 LD_PRELOAD={lib} llama-bench -m 'my model.gguf'"]


def test_run_appends_to_existing_preload():
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2", LD_PRELOAD="/opt/other.so")
    p = vz("run", "--dry-run", "--family", "1007", "--", "x", env=env)
    lib = os.path.realpath(BUILD / "libvzcaps.so")
    words = p.stdout.split()
    assert f"LD_PRELOAD=/opt/other.so:{lib}" in words and "VZCAPS_APPLE_FAMILY_MAX=1007" in words


@pytest.mark.parametrize("arg", ["plain", "with space", "it's", "$HOME and `cmd`", "tab\there", "new\nline", "esc\x1b[0m",
                                 "ünï", "back\\slash"])
def test_dry_run_line_executed_reproduces_the_run(tmp_path, arg):
    """The printed line, run by a shell, gives the program the same arguments and the same
    vzcaps variables as vzcaps run itself (bash reads the $'...' form used for control bytes;
    macOS's /bin/sh is bash)."""
    conf = tmp_path / "my config.conf"
    conf.write_text("[default]\napple_family_max = 1007\n")
    env = clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2")
    prog = ["python3", "-c", "import os, sys, json; print(json.dumps([sys.argv[1:], "
            "{k: v for k, v in os.environ.items() if k.startswith(('VZCAPS_', 'LD_PRELOAD'))}]))", arg]
    dry = vz("run", "--dry-run", "--inherit", "--", *prog, env=env)
    assert dry.returncode == 0 and dry.stdout.count("\n") == 1 and dry.stdout.startswith("env ")
    assert not (set(dry.stdout.encode()[:-1]) & set(range(0x20)) - {0x20}), dry.stdout  # nothing raw
    shell = "bash" if "$'" in dry.stdout else "sh"  # plain values: POSIX sh (dash) runs the line too
    replay = subprocess.run([shell, "-c", dry.stdout], env=env, capture_output=True, text=True, timeout=60)
    real = vz("run", "--inherit", "--", *prog, env=env)
    assert replay.returncode == 0 and real.returncode == 0, (replay.stderr, real.stderr)
    assert json.loads(replay.stdout) == json.loads(real.stdout)
    assert json.loads(real.stdout)[0] == [arg]


@pytest.mark.parametrize("extra", [
    {"VZCAPS_APPLE_FAMILY_MAX": "auto"},
    {"VZCAPS_APPLE_FAMILY_MAX": "1009", "VZCAPS_MAX_THREADGROUP_MEMORY": "65536", "VZCAPS_EXTRA_FAMILIES": "metal3"},
    {"VZCAPS_APPLE_FAMILY_MAX": "1006", "VZCAPS_RECOMMENDED_WORKING_SET_SIZE": "9000000000"},
])
@pytest.mark.parametrize("chip", ["Apple M1 Ultra (Virtual)", "Apple M2", "Apple M5 (Virtual)"])
def test_run_changes_answers_exactly_as_check_predicted(chip, extra):
    env = clean_env(VZCAPS_HOST_CHIP=chip, **extra)
    c = vz("check", "--exe", "probe", "--json", env=env)
    assert c.returncode == 0
    want = json.loads(c.stdout)
    assert want["enabled"] is True
    r = vz("run", "--", str(BUILD / "probe"), env=env)
    assert r.returncode == 0, r.stderr
    got = parse_probe(r.stdout)[0]
    for f, stock in STOCK_FAMILIES.items():
        expected = stock or (1001 <= f <= want["apple_family_max"]) or f in want["extra_families"]
        assert got["families"][f] == int(bool(expected)), f
    assert got["tg"] == max(32768, want["max_threadgroup_memory"] or 0)
    assert got["ws"] == max(5010800640, want["recommended_working_set_size"] or 0)


def test_run_exit_status_and_signal_are_the_childs():
    env = clean_env(VZCAPS_HOST_CHIP="Apple M2")
    assert vz("run", "--", "sh", "-c", "exit 7", env=env).returncode == 7
    p = vz("run", "--", "sh", "-c", "kill -TERM $$", env=env)
    assert p.returncode == -15
    assert vz("run", "--", "/nonexistent/cmd", env=env).returncode == 127


def test_run_refuses_bad_configuration(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("[a]\nmatch = *\napple_family_max = auto\nbogus = 1\n")
    p = vz("run", "--", "sh", "-c", "echo ran", env=clean_env(VZCAPS_CONFIG=str(conf), VZCAPS_HOST_CHIP="Apple M2"))
    assert p.returncode == 125
    assert "ran" not in p.stdout
    assert f"{conf}:4: unknown key bogus" in p.stderr
    p = vz("run", "--", "sh", "-c", "echo ran")  # auto with no chip known on Linux
    assert p.returncode == 125 and "VZCAPS_HOST_CHIP" in p.stderr
    p = vz("run", "--family", "off", "--", "sh", "-c", "echo ran")
    assert p.returncode == 0 and p.stdout == "ran\n"


def test_check_valid_and_invalid_files(tmp_path):
    good = tmp_path / "good.conf"
    good.write_text("# demo\n[llama]\nmatch = llama-*\napple_family_max = auto\nmax_threadgroup_memory = 65536\n"
                    "[ollama]\nmatch = ollama\napple_family_max = 1009\ninherit = yes\nextra_families = metal3\n")
    p = vz("check", "--config", str(good), "--exe", "llama-server", "--chip", "Apple M2 Pro (Virtual)", "--json")
    assert p.returncode == 0
    j = json.loads(p.stdout)
    assert j["enabled"] is True and j["apple_family_max"] == 1008 and j["max_threadgroup_memory"] == 32768
    assert j["profile"] == "llama" and j["host_chip"] == "Apple M2 Pro" and j["extra_families"] == []
    assert j["recommended_working_set_size"] is None
    assert any("clamped to 32768" in n for n in j["notes"])
    p = vz("check", "--config", str(good), "--exe", "ollama", "--chip", "Apple M1", "--json")
    j = json.loads(p.stdout)
    assert j["apple_family_max"] == 1007 and j["extra_families"] == [5001] and j["profile"] == "ollama"
    p = vz("check", "--config", str(good), "--exe", "ollama", "--chip", "Apple M1")
    assert p.returncode == 0 and "1007 (Apple7)" in p.stdout and "clamped" in p.stdout
    p = vz("check", "--config", str(good), "--exe", "vim", "--json")
    j = json.loads(p.stdout)
    assert j["enabled"] is False and j["profile"] is None and j["apple_family_max"] is None

    bad = tmp_path / "bad.conf"
    bad.write_text("[llama]\napple_family_max = auto\napple_family_max = off\n")
    p = vz("check", "--config", str(bad))
    assert p.returncode == 1
    assert p.stderr.strip() == f"vzcaps check: {bad}:3: duplicate key apple_family_max in [llama]"
    p = vz("check", "--config", str(bad), "--json")
    j = json.loads(p.stdout)
    assert p.returncode == 1 and j["valid"] is False and j["enabled"] is False
    assert j["notes"] == [f"{bad}:3: duplicate key apple_family_max in [llama]"]
    p = vz("check", "--config", str(tmp_path / "none.conf"), "--json")
    assert p.returncode == 1 and "none.conf: cannot open" in json.loads(p.stdout)["notes"][0]


def test_check_unknown_chip_is_valid_but_not_enabled():
    p = vz("check", "--json", env=clean_env(VZCAPS_APPLE_FAMILY_MAX="auto"))
    j = json.loads(p.stdout)
    assert p.returncode == 0 and j["valid"] is True and j["enabled"] is False
    assert "VZCAPS_HOST_CHIP" in j["notes"][0]



@pytest.mark.parametrize("brand,family", [
    ("Apple A18 Pro", 1009), ("Apple A18 Pro (Virtual)", 1009), ("Apple A18", 1009),
    ("Apple A19 Pro (Virtual)", 1010), ("Apple M5 Pro (Virtual)", 1010), ("Apple M1 Ultra (Virtual)", 1007),
])
def test_check_auto_names_the_chip_family(brand, family):
    j = json.loads(vz("check", "--chip", brand, "--family", "auto", "--json").stdout)
    assert j["enabled"] is True and j["apple_family_max"] == family, j


@pytest.mark.parametrize("brand", ["Apple A20 Pro", "Apple M6 (Virtual)", "Apple A18 Max", "Apple A17 Pro"])
def test_check_auto_refuses_an_unknown_chip_naming_it(brand):
    p = vz("check", "--chip", brand, "--family", "auto", "--json")
    j = json.loads(p.stdout)
    assert p.returncode == 0 and j["enabled"] is False and j["apple_family_max"] is None
    assert f'"{brand}"' in j["notes"][0] and "is not one" in j["notes"][0]

def fake_program(tmp_path, name):
    (tmp_path / "bin").mkdir(exist_ok=True)
    prog = tmp_path / "bin" / name
    prog.write_text("#!/bin/sh\nexit 0\n")
    prog.chmod(0o755)
    return prog


def test_launchd_plist(tmp_path):
    server = fake_program(tmp_path, "llama-server")
    env = clean_env(HOME=str(tmp_path), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    p = vz("launchd", "--label", "com.example.llama", "--profile", "llama", "--", "llama-server", "-m", "a&b <c>.gguf", env=env)
    assert p.returncode == 1  # profile named but no config file
    conf = tmp_path / ".config" / "vzcaps" / "vzcaps.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("[llama]\nmatch = llama-server\napple_family_max = auto\n")
    p = vz("launchd", "--label", "com.example.llama", "--profile", "llama", "--", "llama-server", "-m", "a&b <c>.gguf", env=env)
    assert p.returncode == 0, p.stderr
    pl = plistlib.loads(p.stdout.encode())
    assert pl["Label"] == "com.example.llama"
    assert pl["ProgramArguments"] == [str(server), "-m", "a&b <c>.gguf"]  # found on PATH now: launchd searches none
    assert pl["RunAtLoad"] is True
    # the fake llama-server is a #! script: its name is handed to the library, as run hands it
    assert pl["EnvironmentVariables"] == {"LD_PRELOAD": os.path.realpath(BUILD / "libvzcaps.so"),
                                          "VZCAPS_CONFIG": str(conf), "VZCAPS_PROFILE": "llama",
                                          "VZCAPS_PROGRAM": "0000000000:llama-server"}
    assert pl["StandardOutPath"] == f"{tmp_path}/Library/Logs/vzcaps/com.example.llama.out.log"
    assert pl["StandardErrorPath"] == f"{tmp_path}/Library/Logs/vzcaps/com.example.llama.err.log"
    assert "setenv" not in p.stdout


def test_launchd_install_and_remove(tmp_path):
    env = clean_env(HOME=str(tmp_path))
    ollama = fake_program(tmp_path, "ollama")
    p = vz("launchd", "--label", "com.example.x", "--family", "1008", "--install", "--", str(ollama), "serve", env=env)
    assert p.returncode == 0, p.stderr
    plist = tmp_path / "Library" / "LaunchAgents" / "com.example.x.plist"
    pl = plistlib.loads(plist.read_bytes())
    assert pl["EnvironmentVariables"]["VZCAPS_APPLE_FAMILY_MAX"] == "1008"
    assert f"launchctl bootstrap gui/{os.getuid()} {plist}" in p.stdout
    assert (tmp_path / "Library" / "Logs" / "vzcaps").is_dir()
    assert [f.name for f in plist.parent.iterdir()] == ["com.example.x.plist"]  # no temp file left
    assert "KeepAlive" not in pl and "VZCAPS_INHERIT" not in pl["EnvironmentVariables"]
    p = vz("launchd", "--label", "com.example.x", "--remove", env=env)
    assert p.returncode == 0
    assert f"launchctl bootout gui/{os.getuid()}/com.example.x" in p.stdout
    assert not plist.exists()


def test_launchd_inherit_keep_alive_and_absolute_paths(tmp_path):
    ollama = fake_program(tmp_path, "ollama")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "rel.conf").write_text("[ollama]\nmatch = ollama\napple_family_max = 1007\n")
    env = clean_env(HOME=str(tmp_path), VZCAPS_CONFIG="rel.conf", PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    p = subprocess.run([VZ, "launchd", "--label", "com.example.o", "--inherit", "--keep-alive", "--", "ollama", "serve"],
                       env=env, capture_output=True, text=True, cwd=tmp_path / "work")
    assert p.returncode == 0, p.stderr
    pl = plistlib.loads(p.stdout.encode())
    assert pl["KeepAlive"] is True and pl["RunAtLoad"] is True
    assert pl["ProgramArguments"] == [str(ollama), "serve"]
    assert pl["EnvironmentVariables"]["VZCAPS_CONFIG"] == str(tmp_path / "work" / "rel.conf")  # absolute
    assert pl["EnvironmentVariables"]["VZCAPS_INHERIT"] == "1"
    assert all(os.path.isabs(pl["EnvironmentVariables"][k]) for k in ("LD_PRELOAD", "VZCAPS_CONFIG"))
    p = vz("launchd", "--label", "com.example.o", "--", "no-such-program-anywhere", env=env)
    assert p.returncode == 1 and "no-such-program-anywhere: not found" in p.stderr


def test_host_refuses_on_linux():
    for verb in ("status", "enable", "disable"):
        p = vz("host", verb)
        assert p.returncode == 3
        assert "only on a macOS host" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_doctor_on_linux():
    p = vz("doctor", "--exe", "llama-bench", env=clean_env(VZCAPS_HOST_CHIP="Apple M2", VZCAPS_APPLE_FAMILY_MAX="auto",
                                                          VZCAPS_EXTRA_FAMILIES="metal3"))
    assert p.returncode == 0
    assert "not macOS" in p.stdout and "MLX" in p.stdout and "enabled" in p.stdout
    p = vz("doctor", "--json")
    j = json.loads(p.stdout)
    assert j["os"] == "Linux" and j["library"] == os.path.realpath(BUILD / "libvzcaps.so")
    assert j["host_chip"] is None and any("host chip unknown" in x for x in j["pitfalls"])


AGREE = [  # (environment, options, executable name)
    ({"VZCAPS_HOST_CHIP": "Apple M2"}, [], "llama-bench"),                     # nothing configured: auto implied
    ({}, ["--chip", "Apple M3 Max"], "whisper-cli"),
    ({"VZCAPS_HOST_CHIP": "Apple M2"}, ["--family", "1007"], "llama-bench"),
    ({"VZCAPS_HOST_CHIP": "Apple M2", "VZCAPS_APPLE_FAMILY_MAX": "off"}, [], "llama-bench"),
    ({"VZCAPS_HOST_CHIP": "Apple M4"}, ["--config", "CONF"], "llama-server"),  # the [llama] section
    ({"VZCAPS_HOST_CHIP": "Apple M4"}, ["--config", "CONF"], "python3.12"),    # [mlx]: off
    ({"VZCAPS_HOST_CHIP": "Apple M4"}, ["--config", "CONF", "--profile", "llama"], "other"),
]


@pytest.mark.parametrize("env_extra,opts,name", AGREE)
def test_check_doctor_inspect_agree_with_run(tmp_path, env_extra, opts, name):
    """What check, doctor and inspect say vzcaps run would do is what the run --dry-run line
    does when a shell executes it (the probe, named like the workload, reports its answers)."""
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "macho"))
    import machogen as mg
    conf = tmp_path / "c.conf"
    conf.write_text("[llama]\nmatch = llama-*\napple_family_max = 1007\n[mlx]\nmatch = python3*\napple_family_max = off\n")
    opts = [str(conf) if o == "CONF" else o for o in opts]
    env = clean_env(**env_extra)
    (tmp_path / "bin").mkdir()
    os.symlink(BUILD / "probe", tmp_path / "bin" / name)
    (tmp_path / "mach").mkdir()
    (tmp_path / "mach" / name).write_bytes(mg.build(methnames=["supportsFamily:"]))

    def said(args):
        p = vz(*args, env=env)
        d = json.loads(p.stdout)
        return d["enabled"], d["apple_family_max"]

    check = said(["check", "--json", "--exe", name, *opts])
    doctor = said(["doctor", "--json", "--exe", name, *opts])
    ins = json.loads(vz("inspect", "--json", *opts, str(tmp_path / "mach" / name), env=env).stdout)["files"][0]
    run_opts = [o for o in opts]  # run takes --profile and --family; --config and --chip travel as variables
    run_env = dict(env)
    if "--config" in run_opts:
        i = run_opts.index("--config")
        run_env["VZCAPS_CONFIG"] = run_opts[i + 1]
        del run_opts[i:i + 2]
    if "--chip" in run_opts:
        i = run_opts.index("--chip")
        run_env["VZCAPS_HOST_CHIP"] = run_opts[i + 1]
        del run_opts[i:i + 2]
    dry = vz("run", "--dry-run", *run_opts, "--", str(tmp_path / "bin" / name), env=run_env)
    if dry.returncode == 125:  # run refuses: nothing would be enabled
        got = (False, None)
    else:
        assert dry.returncode == 0, dry.stderr
        p = subprocess.run(["sh", "-c", dry.stdout], env=run_env, capture_output=True, text=True, timeout=30)
        fams = parse_probe(p.stdout)[0]["families"]
        top = max(f for f in range(1001, 1011) if fams[f])
        got = (top > 1005, top if top > 1005 else None)
    assert check == doctor == (ins["enabled"], ins["apple_family_max"]) == got, (check, doctor, ins, got)


def test_views_say_which_they_are_and_label_the_options():
    env = clean_env()
    run_view = json.loads(vz("check", "--json", "--chip", "Apple M2", env=env).stdout)
    assert run_view["view"] == "run" and run_view["family_implied"] is True and run_view["apple_family_max"] == 1008
    assert run_view["host_chip_source"] == "--chip"
    bare = json.loads(vz("check", "--json", "--bare", "--chip", "Apple M2", env=env).stdout)
    assert bare["view"] == "library" and bare["enabled"] is False and bare["family_implied"] is False
    text = vz("check", "--family", "auto", "--chip", "Apple M2", env=env).stdout
    assert "Apple M2 (from --chip)" in text and "what vzcaps run would do" in text
    p = vz("check", "--family", "99", env=env)
    assert p.returncode == 2 and "--family" in p.stderr
    p = vz("inspect", "--profile", "nope", "/bin/true", env=env)
    assert p.returncode == 1 and "configuration invalid" in p.stderr
    refused = vz("check", "--config", "/nonexistent.conf", env=env).stdout
    assert "not evaluated: the configuration was refused first" in refused and "(from )" not in refused
