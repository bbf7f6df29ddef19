"""The command built with ASan and UBSan, over the inputs that exercise its parsers and
renderers (report, inspect, check, launchd, doctor, help): no sanitizer report, same results."""
import subprocess
import sys

from conftest import BUILD, FIXTURES, LINUX_ONLY, ROOT, built, clean_env

sys.path.insert(0, str(ROOT / "tests" / "macho"))
import machogen as mg  # noqa: E402

SAN = BUILD / "san" / "vzcaps"
pytestmark = [LINUX_ONLY, built(SAN, how="the sanitized build")]  # make check builds build/san on Linux


def run(*args, env=None):
    e = env or clean_env()
    e.update(ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    p = subprocess.run([str(SAN), *args], capture_output=True, text=True, env=e, timeout=120)
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr and "LeakSanitizer" not in p.stderr, p.stderr
    return p


def test_report_and_malformed(tmp_path):
    s, u, h = (str(FIXTURES / f) for f in ("stock-guest.json", "unlocked-guest.json", "host.json"))
    p = run("report", "--json", "--stock", s, "--unlocked", u, "--host", h, "--svg", str(tmp_path / "c.svg"),
            "--csv", str(tmp_path / "c.csv"), "--md", str(tmp_path / "c.md"))
    assert p.returncode == 0 and '"speedup":11.08' in p.stdout
    text = open(u).read()
    for cut in (1, 50, len(text) // 3, len(text) - 2):
        (tmp_path / "t.json").write_text(text[:cut])
        assert run("report", "--stock", s, "--unlocked", str(tmp_path / "t.json")).returncode == 1


def test_inspect_generated_truncated_and_dist(tmp_path):
    whole = mg.fat(mg.build(cputype=mg.CPU_X86_64, cpusubtype=3, methnames=["supportsFamily:"]),
                   mg.build(flags=mg.CS_ADHOC | mg.CS_RUNTIME, entitlements=mg.entitlements_xml(x=True)))
    for n in list(range(0, 200, 7)) + list(range(200, len(whole), 211)) + [len(whole)]:
        f = tmp_path / "m"
        f.write_bytes(whole[:n])
        assert run("inspect", "--json", str(f)).returncode in (0, 1)
    for name in ("libvzcaps.dylib", "vzcaps"):
        if (ROOT / "dist" / name).exists():
            assert run("inspect", str(ROOT / "dist" / name)).returncode == 0


def test_check_launchd_doctor_help(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("[a]\nmatch = x*\napple_family_max = auto\nextra_families = metal3\n[b]\nbogus = 1\n")
    assert run("check", "--config", str(conf), "--exe", "xy", "--chip", "Apple M2", "--json").returncode == 1
    conf.write_text("[a]\nmatch = x*\napple_family_max = auto\nextra_families = metal3\n")
    assert run("check", "--config", str(conf), "--exe", "xy", "--chip", "Apple M2").returncode == 0
    env = clean_env(HOME=str(tmp_path))
    assert run("launchd", "--label", "a.b", "--install", "--", "/bin/true", env=env).returncode == 0
    assert run("launchd", "--label", "a.b", "--remove", env=env).returncode == 0
    assert run("doctor", "--json").returncode == 0
    assert run("doctor", "--bundle", str(tmp_path / "bundle")).returncode == 0
    assert run("help", "bench").returncode == 0
    assert run("help").returncode == 0 and run("help", "help").returncode == 0
    assert run("status").returncode == 2 and run("help", "x" * 5000).returncode == 2
    for shell in ("bash", "zsh", "fish"):
        assert run("__completions", shell).returncode == 0
    assert run("__man").returncode == 0
    conf.chmod(0o644)
    assert run("__profiles", "--config", str(conf)).stdout == "a\n"
    conf.chmod(0o664)  # refused: named on the config-file line
    p = run("check", "--config", str(conf))
    assert p.returncode == 1 and f"config file    {conf} (refused: not trusted" in p.stdout
    assert run("check", env=clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME="/" + "x" * 2000)).returncode == 1
    assert run("run", "--bogus").returncode == 2


def test_shims_and_launchd_list_json(tmp_path):
    # regression: qsort(NULL, 0, ...) (undefined behaviour) when there was nothing to list
    p = run("launchd", "--list", "--json", env=clean_env(HOME=str(tmp_path)))
    assert p.returncode == 0 and '"agents":[]' in p.stdout
    d = tmp_path / "shims"
    assert run("shims", "--dir", str(d), "probe", "llama-server").returncode == 0
    assert run("shims", "--dir", str(d), "--list").stdout.count("\n") == 2
    assert run("shims", "--dir", str(d), "--remove", "probe").returncode == 0
    (d / "x").write_text("")
    assert run("shims", "--dir", str(d), "--remove", "x").returncode == 1
    assert run("shims", "--dir", str(tmp_path / "empty"), "--list").returncode == 1  # no such directory
    (tmp_path / "empty").mkdir()
    assert run("shims", "--dir", str(tmp_path / "empty"), "--list").stdout == ""


def test_stats_on_good_bad_and_odd_logs(tmp_path):
    # the usage log reader (issue 33 item 4): every kind of line, the rotated file, --since, --json
    log = tmp_path / "usage.log"
    rec = ('{"v":1,"time":%d,"pid":%d,"program":"%s","path":"/p","event":"%s","class":"C","family":%d,"reason":"%s"}')
    lines = [rec % (100 + i, i, f"p{i % 7}\\u00ff", "hooked" if i % 3 else "left_stock", 1008 if i % 3 else 0,
                    "" if i % 3 else f"why {i % 5}") for i in range(300)]
    lines += ["{", "[]", '{"v":2}', "x" * 3000, rec % (1, 1, "", "hooked", 1008, "")]
    log.write_text("\n".join(lines) + "\n" + lines[0][:40])
    (tmp_path / "usage.log.1").write_text("\n".join(lines[:50]) + "\n")
    for args in ([], ["--json"], ["--since", "200"], ["--since", "2h", "--json"]):
        p = run("stats", "--log-file", str(log), *args)
        assert p.returncode == 0, p.stderr
    assert '"hooked":233' in run("stats", "--log-file", str(log), "--json").stdout
    assert run("stats", "--log-file", str(tmp_path)).returncode == 1
    assert run("stats", "--since", "nonsense", "--log-file", str(log)).returncode == 2


def test_the_launch_floor_over_scripts_shims_and_paths(tmp_path):
    """The job decision and the plan over #! lines (env, a shim by its path, ENOEXEC, CRLF), shims
    and PATH shapes: no sanitizer report (the plan a rewritten script left behind was leaked
    when check --strict went on to the next --exe)."""
    real, shims = tmp_path / "real", tmp_path / "shims"
    real.mkdir()
    (real / "probe2").symlink_to(BUILD / "probe")
    assert run("shims", "--dir", str(shims), "probe2", "env").returncode == 0
    lines = {"envs": "#!/usr/bin/env probe2 # c\n", "viashim": f"#!{shims}/probe2 -x\n", "noline": "#!\n", "crlf": "#!/bin/sh\r\n",
             "nested": f"#!{real}/envs\n", "long": "#!/" + "a" * 600}
    for name, text in lines.items():
        (real / name).write_text(text)
        (real / name).chmod(0o755)
    exes = [a for n in [*lines, "probe2", "nothere"] for a in ("--exe", n)]
    for path in (f"{shims}:{real}:/usr/bin:/bin", f"::{real}::{real}", ""):
        env = clean_env(PATH=path, VZCAPS_HOST_CHIP="Apple M2")
        assert run("check", "--strict", *exes, env=env).returncode in (0, 1)
        for name in lines:
            assert run("run", "--dry-run", "--", str(real / name), "a", env=env).returncode in (0, 126, 127)
    assert run("inspect", "--json", *(str(real / n) for n in lines)).returncode in (0, 1)
